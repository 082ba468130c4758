"""Normalization family: SOFTMAX, LOG_SOFTMAX, BATCH_NORM, LAYER_NORM, INSTANCE_NORM, L2_NORMALIZE and LRN, run end
to end through ``nnrt_onnx.testing.run_op``.

Oracles: onnxruntime on a single-node ONNX model built here (NHWC <-> NCHW transposes done in the test), or
hand computations for NNRt-only behaviour (the L2Normalize epsilon clamp, LAYER_NORM's begin_param_axis, LRN's
defaults). Ids start with the op's short name (``pytest -k softmax``).
"""
from __future__ import annotations

import numpy as np
import pytest
from kernels.kernel_support import (
    DTYPE_F16,
    DTYPE_F32,
    F16,
    F32,
    F64,
    I32,
    I64,
    QUANT_ATOL,
    TOL,
    assert_close,
    check_tol,
    expect_error,
    f32,
    nchw,
    nhwc,
    ort_node,
    ort_run,
    qparam,
    quantize_ref,
    rand_uniform,
    ref_in,
    rng_for,
    rng_for_request,
    run,
)

from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as T
from nnrt_onnx.errors import NNRtError
from nnrt_onnx.kernels import normalization

# ================================================================================================================
# SOFTMAX / LOG_SOFTMAX
# ================================================================================================================
SOFTMAX_CASES = {
    "softmax-default-last-axis": dict(shape=(2, 3, 5), axis=None, ref_axis=-1),
    "softmax-axis1": dict(shape=(2, 3, 5), axis=1),
    "softmax-axis-neg3": dict(shape=(2, 3, 5), axis=-3),
    "softmax-axis0-1d": dict(shape=(7,), axis=0),
    "softmax-large-values": dict(shape=(2, 6), axis=1, scale=80.0),
    "softmax-f16": dict(shape=(4, 9), axis=-1, dtype=F16),
    "softmax-f64": dict(shape=(3, 4), axis=0, dtype=F64),
    "softmax-enable_float16": dict(shape=(3, 8), axis=1, float16=True),
}


@pytest.mark.parametrize("case_id", SOFTMAX_CASES)
def test_softmax(case_id):
    _softmax_case("SOFTMAX", "Softmax", SOFTMAX_CASES[case_id], case_id, T.OH_NN_SOFTMAX_AXIS)


LOG_SOFTMAX_CASES = {
    "log_softmax-default-axis0": dict(shape=(4, 3), axis=None, ref_axis=0),  # the builder's default is axis 0
    "log_softmax-axis-last": dict(shape=(2, 3, 5), axis=-1),
    "log_softmax-axis1": dict(shape=(2, 3, 5), axis=1),
    "log_softmax-large-values": dict(shape=(2, 6), axis=1, scale=80.0),
    "log_softmax-f16": dict(shape=(4, 9), axis=-1, dtype=F16),
    "log_softmax-f64": dict(shape=(3, 4), axis=1, dtype=F64),
}


@pytest.mark.parametrize("case_id", LOG_SOFTMAX_CASES)
def test_log_softmax(case_id):
    _softmax_case("LOG_SOFTMAX", "LogSoftmax", LOG_SOFTMAX_CASES[case_id], case_id, T.OH_NN_LOG_SOFTMAX_AXIS)


def _softmax_case(op, onnx_op, c, case_id, axis_type):
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    s = c.get("scale", 3.0)
    x = rand_uniform(rng, c["shape"], dtype, -s, s)
    params = {} if c["axis"] is None else {axis_type: c["axis"]}
    (out,) = run(op, [x], params, float16=c.get("float16", False))
    ref_axis = c.get("ref_axis", c["axis"])
    (expected,) = ort_run(onnx_op, [ref_in(x)], dict(axis=ref_axis))
    if c.get("float16"):
        assert out.dtype == F32
        np.testing.assert_allclose(out, expected, **TOL[np.dtype(F16)])
    else:
        assert_close(out, expected, dtype)


def test_softmax_quant_uint8():
    case_id = "softmax-quant-uint8"
    rng = rng_for(case_id)
    x = rng.integers(0, 256, size=(3, 10)).astype(np.uint8)
    qx, qo = qparam(0.05, 128), qparam(1 / 256, 0)
    (out,) = run("SOFTMAX", [x], {T.OH_NN_SOFTMAX_AXIS: 1}, input_quant={0: qx}, output_quant={0: qo},
                 output_dtypes=[np.uint8])
    (real,) = ort_run("Softmax", [(x.astype(F32) - 128) * F32(0.05)], dict(axis=1))
    expected = quantize_ref(real, np.uint8, [1 / 256], [0])
    assert np.max(np.abs(out.astype(int) - expected.astype(int))) <= QUANT_ATOL


SOFTMAX_ERRORS = {
    "softmax-err-int32": ("SOFTMAX", RC.OH_NN_UNSUPPORTED, np.ones((2, 3), I32), {}),
    "softmax-err-axis-range": ("SOFTMAX", RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), {T.OH_NN_SOFTMAX_AXIS: 2}),
    "log_softmax-err-int32": ("LOG_SOFTMAX", RC.OH_NN_UNSUPPORTED, np.ones((2, 3), I32), {}),
    "log_softmax-err-axis-range": ("LOG_SOFTMAX", RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32),
                                   {T.OH_NN_LOG_SOFTMAX_AXIS: -3}),
}


@pytest.mark.parametrize("case_id", SOFTMAX_ERRORS)
def test_softmax_errors(case_id):
    op, code, x, params = SOFTMAX_ERRORS[case_id]
    expect_error(code, op, [x], params, output_dtypes=[x.dtype], output_shapes=[x.shape])


# ================================================================================================================
# BATCH_NORM (channel last, inference)
# ================================================================================================================
BN_CASES = {
    "batch_norm-nhwc": dict(shape=(2, 4, 5, 3)),
    "batch_norm-2d": dict(shape=(6, 4)),
    "batch_norm-3d": dict(shape=(2, 7, 5)),
    "batch_norm-epsilon": dict(shape=(2, 3, 3, 4), eps=0.5),
    "batch_norm-f16": dict(shape=(2, 4, 4, 3), dtype=F16),
    "batch_norm-f64": dict(shape=(2, 4, 3), dtype=F64, eps=1e-3),
}


@pytest.mark.parametrize("case_id", BN_CASES)
def test_batch_norm(case_id):
    c = BN_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    x = rand_uniform(rng, c["shape"], dtype, -3, 3)
    ch = c["shape"][-1]
    scale, offset, mean = rand_uniform(rng, ch, dtype), rand_uniform(rng, ch, dtype), rand_uniform(rng, ch, dtype)
    var = rand_uniform(rng, ch, dtype, 0.05, 2.0)
    params = {T.OH_NN_BATCH_NORM_EPSILON: c["eps"]} if "eps" in c else {}
    (out,) = run("BATCH_NORM", [x, scale, offset, mean, var], params)
    eps = c.get("eps", 1e-4)  # the builder's default
    nchw = np.ascontiguousarray(np.moveaxis(ref_in(x), -1, 1))
    (expected,) = ort_run("BatchNormalization", [nchw] + [ref_in(t) for t in (scale, offset, mean, var)],
                          dict(epsilon=float(eps)), opset=15)
    assert_close(out, np.moveaxis(expected, 1, -1), dtype)


BN_ERRORS = {
    "batch_norm-err-int32": (RC.OH_NN_UNSUPPORTED, np.ones((2, 3), I32), 3),
    "batch_norm-err-channels": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), 4),
}


@pytest.mark.parametrize("case_id", BN_ERRORS)
def test_batch_norm_errors(case_id):
    code, x, ch = BN_ERRORS[case_id]
    p = np.ones(ch, F32)
    expect_error(code, "BATCH_NORM", [x, p, p, p, p], output_dtypes=[x.dtype], output_shapes=[x.shape])


# ================================================================================================================
# LAYER_NORM
# ================================================================================================================
LN_CASES = {
    "layer_norm-default-axis1": dict(shape=(2, 3, 4)),
    "layer_norm-axis2": dict(shape=(2, 3, 4), bna=2, bpa=2),
    "layer_norm-axis3-epsilon": dict(shape=(2, 3, 4, 5), bna=3, bpa=3, eps=0.1),
    "layer_norm-2d": dict(shape=(5, 8), bna=1, bpa=1, eps=1e-5),
    "layer_norm-f16": dict(shape=(3, 16), bna=1, bpa=1, dtype=F16),
    "layer_norm-f64": dict(shape=(2, 3, 4), bna=2, bpa=2, dtype=F64),
}


@pytest.mark.parametrize("case_id", LN_CASES)
def test_layer_norm(case_id):
    c = LN_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    bna = c.get("bna", 1)
    x = rand_uniform(rng, c["shape"], dtype, -3, 3)
    gamma, beta = rand_uniform(rng, c["shape"][bna:], dtype), rand_uniform(rng, c["shape"][bna:], dtype)
    params = {}
    if "bna" in c:
        params[T.OH_NN_LAYER_NORM_BEGIN_NORM_AXIS] = np.array(c["bna"], I64)  # rank 0 (the builder demands it)
    if "bpa" in c:
        params[T.OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS] = np.array(c["bpa"], I64)
    if "eps" in c:
        params[T.OH_NN_LAYER_NORM_EPSILON] = np.array(c["eps"], F32)
    (out,) = run("LAYER_NORM", [x, gamma, beta], params)
    eps = c.get("eps", 1e-7)  # the builder's default
    (expected,) = ort_run("LayerNormalization", [ref_in(x), ref_in(gamma), ref_in(beta)],
                          dict(axis=bna, epsilon=float(eps)), out_dtypes=[ref_in(x).dtype])
    assert_close(out, expected, dtype)


def test_layer_norm_param_axis_broadcast():
    """begin_param_axis > begin_norm_axis: gamma/beta [D_last] broadcast over the normalised block (hand formula).

    Not reachable through OH_NNModel_AddOperation (its check forces gamma dims == input.shape[beginNormAxis:]),
    so the kernel function is called directly to pin its meaning.
    """
    rng = rng_for("layer_norm-param_axis-broadcast")
    x = rand_uniform(rng, (2, 3, 4), F32)
    gamma, beta = rand_uniform(rng, (4,), F32), rand_uniform(rng, (4,), F32)
    out = normalization.layer_norm(x, gamma, beta, begin_norm_axis=1, epsilon=1e-5, begin_param_axis=2)
    xd = x.astype(F64)
    mu = xd.mean(axis=(1, 2), keepdims=True)
    var = ((xd - mu) ** 2).mean(axis=(1, 2), keepdims=True)
    assert_close(out, (xd - mu) / np.sqrt(var + 1e-5) * gamma + beta, F32)


@pytest.mark.parametrize("shape", [(2, 3, 4), (3, 7), (1, 16, 64), (2, 5, 1000), (4, 3, 5, 7)])
def test_layer_norm_is_the_np_mean_formula_bit_for_bit(shape):
    """The kernel's means are float32's np.mean summed in float64 (dtype=np.float64), rounded once to float32, bit
    for bit: the formula written with np.mean gives the very same float32 values."""
    rng = rng_for(f"layer_norm-np-mean-{shape}")
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4)).astype(F32)
    gamma, beta = rand_uniform(rng, shape[1:], F32), rand_uniform(rng, shape[1:], F32)
    axes = tuple(range(1, len(shape)))
    mean = np.mean(x, axis=axes, keepdims=True, dtype=np.float64).astype(F32)
    centred = x - mean
    spread = np.sqrt(np.mean(np.square(centred), axis=axes, keepdims=True, dtype=np.float64).astype(F32) + F32(1e-5))
    want = centred / spread * gamma + beta
    got = normalization.layer_norm(x, gamma, beta, begin_norm_axis=1, epsilon=1e-5, begin_param_axis=1)
    assert got.dtype == F32 and got.tobytes() == want.tobytes()


def test_layer_norm_of_a_row_of_equal_values_is_exactly_beta():
    """Three equal float32 values: their float32 sum rounds, its quotient is an ulp off the value, and an ulp over
    sqrt(epsilon) is 2e-5 of output (fuzzer seed 2027: onnxruntime and float64 give exactly beta)."""
    x = np.full((4, 3), F32(0.7731157), F32)
    x[1], x[2], x[3] = F32(-0.66587025), F32(2.7790055), F32(-1.2686288)
    gamma, beta = np.asarray([1.5, -2.0, 0.25], F32), np.asarray([0.1, 0.2, 0.3], F32)
    got = normalization.layer_norm(x, gamma, beta, begin_norm_axis=1, epsilon=1e-5, begin_param_axis=1)
    assert got.tobytes() == np.broadcast_to(beta, x.shape).tobytes()


def test_layer_norm_checks_hold_on_every_call():
    """The remembered checks raise the same error on every call; parameters given as arrays (a direct caller's)
    are still checked and used."""
    x, g = np.ones((2, 3, 4), F32), np.ones((3, 4), F32)
    for _ in range(2):
        with pytest.raises(NNRtError) as err:
            normalization.layer_norm(x, g, g, begin_norm_axis=2, epsilon=1e-5, begin_param_axis=2)
        assert err.value.code == RC.OH_NN_INVALID_PARAMETER
    axis = np.array(1)
    out = normalization.layer_norm(x, g, g, begin_norm_axis=axis, epsilon=1e-5, begin_param_axis=axis)
    assert np.array_equal(out, np.ones_like(x))  # constant rows: (x - mean) = 0, times gamma, plus beta 1


LN_ERRORS = {
    "layer_norm-err-param-axis-mismatch": (RC.OH_NN_INVALID_PARAMETER, F32, {T.OH_NN_LAYER_NORM_BEGIN_NORM_AXIS: 2}),
    "layer_norm-err-int32": (RC.OH_NN_UNSUPPORTED, I32, {}),
}


@pytest.mark.parametrize("case_id", LN_ERRORS)
def test_layer_norm_errors(case_id):
    code, dtype, params = LN_ERRORS[case_id]
    x = np.ones((2, 3, 4), dtype)
    bna = params.get(T.OH_NN_LAYER_NORM_BEGIN_NORM_AXIS, 1)
    g = np.ones((2, 3, 4)[bna:], dtype)
    params = {k: np.array(v, I64) for k, v in params.items()}
    expect_error(code, "LAYER_NORM", [x, g, g], params, output_dtypes=[dtype], output_shapes=[x.shape])


# ================================================================================================================
# INSTANCE_NORM (NHWC)
# ================================================================================================================
IN_CASES = {
    "instance_norm-nhwc": dict(shape=(2, 4, 5, 3), eps=1e-5),
    "instance_norm-default-eps0": dict(shape=(2, 3, 3, 4)),
    "instance_norm-3d": dict(shape=(3, 7, 2), eps=1e-3),
    "instance_norm-5d": dict(shape=(1, 2, 3, 4, 2), eps=1e-5),
    "instance_norm-f16": dict(shape=(2, 6, 6, 3), eps=1e-3, dtype=F16),
    "instance_norm-f64": dict(shape=(2, 4, 4, 3), eps=1e-5, dtype=F64),
}


@pytest.mark.parametrize("case_id", IN_CASES)
def test_instance_norm(case_id):
    c = IN_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    x = rand_uniform(rng, c["shape"], dtype, -3, 3)
    ch = c["shape"][-1]
    scale, bias = rand_uniform(rng, ch, dtype), rand_uniform(rng, ch, dtype)
    params = {T.OH_NN_INSTANCE_NORM_EPSILON: c["eps"]} if "eps" in c else {}
    (out,) = run("INSTANCE_NORM", [x, scale, bias], params)
    nchw = np.ascontiguousarray(np.moveaxis(ref_in(x), -1, 1))
    (expected,) = ort_run("InstanceNormalization", [nchw, ref_in(scale), ref_in(bias)],
                          dict(epsilon=float(c.get("eps", 0.0))))
    assert_close(out, np.moveaxis(expected, 1, -1), dtype)


IN_ERRORS = {
    "instance_norm-err-rank2": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), 3),
    "instance_norm-err-channels": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3, 3), F32), 2),
    "instance_norm-err-int32": (RC.OH_NN_UNSUPPORTED, np.ones((2, 3, 3), I32), 3),
}


@pytest.mark.parametrize("case_id", IN_ERRORS)
def test_instance_norm_errors(case_id):
    code, x, ch = IN_ERRORS[case_id]
    p = np.ones(ch, F32)
    expect_error(code, "INSTANCE_NORM", [x, p, p], output_dtypes=[x.dtype], output_shapes=[x.shape])


# ================================================================================================================
# L2_NORMALIZE  x / sqrt(max(sum(x^2), eps))
# ================================================================================================================
L2N_CASES = {
    "l2_normalize-default-axis0": dict(shape=(4, 3), axis=None),
    "l2_normalize-axis-last": dict(shape=(2, 3, 5), axis=[-1]),
    "l2_normalize-axis1": dict(shape=(2, 3, 5), axis=[1]),
    "l2_normalize-multi-axis": dict(shape=(2, 3, 4), axis=[1, 2], hand=True),
    "l2_normalize-epsilon-clamp": dict(shape=(3, 4), axis=[1], eps=0.5, small=True, hand=True),
    "l2_normalize-relu": dict(shape=(3, 5), axis=[-1], fuse=1),
    "l2_normalize-f16": dict(shape=(3, 8), axis=[1], dtype=F16),
    "l2_normalize-f64": dict(shape=(3, 4), axis=[0], dtype=F64),
}


@pytest.mark.parametrize("case_id", L2N_CASES)
def test_l2_normalize(case_id):
    c = L2N_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    x = rand_uniform(rng, c["shape"], dtype, -0.3, 0.3) if c.get("small") else rand_uniform(rng, c["shape"], dtype, -3, 3)
    if c.get("small"):
        x[0] = 0  # an all-zero slice: the clamp gives 0, not NaN
    params = {}
    if c["axis"] is not None:
        params[T.OH_NN_L2_NORMALIZE_AXIS] = c["axis"]
    if "eps" in c:
        params[T.OH_NN_L2_NORMALIZE_EPSILON] = c["eps"]
    if "fuse" in c:
        params[T.OH_NN_L2_NORMALIZE_ACTIVATION_TYPE] = c["fuse"]
    (out,) = run("L2_NORMALIZE", [x], params)
    axes = tuple(c["axis"] or [0])  # header default: axis 0
    if c.get("hand"):
        xd = x.astype(F64)
        expected = xd / np.sqrt(np.maximum((xd ** 2).sum(axis=axes, keepdims=True), c.get("eps", 1e-6)))
    else:
        (expected,) = ort_run("LpNormalization", [ref_in(x)], dict(axis=axes[0], p=2))
    if c.get("fuse") == 1:
        expected = np.maximum(expected, 0)
    assert_close(out, expected, dtype)


L2N_ERRORS = {
    "l2_normalize-err-int32": (RC.OH_NN_UNSUPPORTED, np.ones((2, 3), I32), {}),
    "l2_normalize-err-axis-range": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), {T.OH_NN_L2_NORMALIZE_AXIS: [2]}),
    "l2_normalize-err-axis-twice": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32),
                                    {T.OH_NN_L2_NORMALIZE_AXIS: [1, -1]}),
}


@pytest.mark.parametrize("case_id", L2N_ERRORS)
def test_l2_normalize_errors(case_id):
    code, x, params = L2N_ERRORS[case_id]
    expect_error(code, "L2_NORMALIZE", [x], params, output_dtypes=[x.dtype], output_shapes=[x.shape])


# ---------------------------------------------------------------------------------------------------------------
# LRN: out = x / (bias + alpha * sum_{|d|<=r} x[c+d]^2) ** beta (TF/NNAPI); ONNX divides alpha by size = 2r+1

LRN_CASES = {
    "lrn-r2": ((2, 3, 4, 7), 2, 1.0, 1e-1, 0.75),
    "lrn-r1-bias2": ((1, 5, 5, 4), 1, 2.0, 1e-2, 0.5),
    "lrn-r0": ((1, 2, 3, 5), 0, 1.5, 0.3, 1.0),
    "lrn-radius-exceeds-channels": ((1, 2, 2, 3), 5, 1.0, 0.5, 0.6),
}


@pytest.mark.parametrize("dtype", [DTYPE_F32, DTYPE_F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(LRN_CASES))
def test_lrn(request, case, dtype):
    shape, r, bias, alpha, beta = LRN_CASES[case]
    rng = rng_for_request(request)
    x = rng.standard_normal(shape).astype(dtype)
    size = 2 * r + 1
    expected = nhwc(ort_node("LRN", [nchw(f32(x))], size=size, alpha=alpha * size, beta=beta, bias=bias))
    (y,) = run("OH_NN_OPS_LRN", [x], {T.OH_NN_LRN_DEPTH_RADIUS: r, T.OH_NN_LRN_BIAS: bias, T.OH_NN_LRN_ALPHA: alpha,
                                      T.OH_NN_LRN_BETA: beta, T.OH_NN_LRN_NORM_REGION: 0})
    assert y.dtype == dtype
    check_tol(y, expected, dtype)


def test_lrn_rank2_and_defaults():
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], np.float32)
    (y,) = run("OH_NN_OPS_LRN", [x], {T.OH_NN_LRN_DEPTH_RADIUS: 1, T.OH_NN_LRN_BIAS: 1.0, T.OH_NN_LRN_ALPHA: 0.5,
                                      T.OH_NN_LRN_BETA: 1.0})
    # row 0: sums of squares over windows: [1+4, 1+4+9, 4+9] = [5, 14, 13]
    expected0 = np.array([1 / (1 + 2.5), 2 / (1 + 7), 3 / (1 + 6.5)])
    np.testing.assert_allclose(y[0], expected0, rtol=1e-6)
    (z,) = run("OH_NN_OPS_LRN", [x])  # runtime defaults radius 0, bias 0, alpha 0, beta 0: x / 0**0 = x
    np.testing.assert_array_equal(z, x)


def test_lrn_errors():
    expect_error(RC.OH_NN_UNSUPPORTED, "OH_NN_OPS_LRN", [np.zeros((1, 2, 2, 3), np.int32)],
                 output_dtypes=[np.int32], output_shapes=[(1, 2, 2, 3)])
    expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_LRN", [np.zeros((1, 2, 2, 3), np.float32)],
                 {T.OH_NN_LRN_DEPTH_RADIUS: -1}, output_dtypes=[np.float32], output_shapes=[(1, 2, 2, 3)])


# ---------------------------------------------------------------------------------------------------------------
# the compiled row loops (numba, optional) of SOFTMAX and LAYER_NORM against the numpy path they replace


def test_batch_norm_of_constants_makes_its_affine_once_and_follows_every_operand():
    # a compiled model's batch norm: (inv, shift) made once per constant scale and its other operands; another
    # offset, mean or variance array (even with the same scale) gives its own values
    from nnrt_onnx.kernels import register_constant
    from nnrt_onnx.kernels.normalization import batch_norm

    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 5, 6)).astype(np.float32)
    scale, offset, mean = (rng.standard_normal(6).astype(np.float32) for _ in range(3))
    variance = (rng.random(6) + 0.5).astype(np.float32)
    other_offset = offset + 1
    for a in (scale, offset, mean, variance, other_offset):
        a.flags.writeable = False
        register_constant(a)

    def want(off):
        x64 = x.astype(np.float64)
        return (x64 - mean) / np.sqrt(variance.astype(np.float64) + 1e-5) * scale + off

    for _ in range(2):  # the second call from the cache
        np.testing.assert_allclose(batch_norm(x, scale, offset, mean, variance, epsilon=1e-5), want(offset),
                                   rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(batch_norm(x, scale, other_offset, mean, variance, epsilon=1e-5), want(other_offset),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(batch_norm(x, scale, offset, mean, variance, epsilon=1e-3),
                               (x - mean) / np.sqrt(variance + 1e-3) * scale + offset, rtol=1e-5, atol=1e-5)


