"""Kernels of the reduce_norm family, run end to end through ``nnrt_onnx.testing.run_op``.

Oracles: onnxruntime on a single-node ONNX model built here (NHWC <-> NCHW transposes done in the test), or
hand computations for NNRt-only behaviour (coeff, reduce_to_end, out_max_value, ALL, REDUCE_ALL, the
L2Normalize epsilon clamp, TopK sorted=false). Ids start with the op's short name (``pytest -k matmul``).
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator
from onnxruntime.capi.onnxruntime_pybind11_state import (
    NotImplemented as OrtNotImplemented,
)
from support import ort_session

from nnrt_onnx.dtypes import quantize
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as T
from nnrt_onnx.errors import NNRtError
from nnrt_onnx.kernels import normalization
from nnrt_onnx.tensor import QuantParam
from nnrt_onnx.testing.single_op import run_op

# Tolerances per dtype (computed dtype of the kernel's output vs a float32/float64 oracle).
TOL: dict[Any, dict[str, float]] = {
    np.dtype(np.float64): dict(rtol=1e-10, atol=1e-10),
    np.dtype(np.float32): dict(rtol=1e-5, atol=1e-5),
    np.dtype(np.float16): dict(rtol=1e-2, atol=1e-2),
}
QUANT_ATOL = 1  # quantized outputs: at most one step from the quantized float oracle (rounding at a boundary)

F32, F16, F64 = np.float32, np.float16, np.float64
I32, I64 = np.int32, np.int64


def rng_for(case_id: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(case_id.encode()))


def run(op: str, inputs, params=None, **kw) -> list[np.ndarray]:
    """The one place that calls the kernels (through the full Model -> Compilation -> Executor path)."""
    return run_op(f"OH_NN_OPS_{op}", [np.asarray(a) for a in inputs], params or {}, **kw)


def ort_run(op: str, inputs, attrs=None, out_dtypes=None, opset: int = 18) -> list[np.ndarray]:
    """Run a single ONNX node on onnxruntime (CPU), or onnx.reference where onnxruntime has no kernel."""
    inputs = [np.asarray(a) for a in inputs]
    names = [f"x{i}" for i in range(len(inputs))]
    out_dtypes = out_dtypes or [inputs[0].dtype]
    graph = helper.make_graph(
        [helper.make_node(op, names, [f"y{i}" for i in range(len(out_dtypes))], **(attrs or {}))], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info(f"y{i}", helper.np_dtype_to_tensor_dtype(np.dtype(d)), None)
         for i, d in enumerate(out_dtypes)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    try:
        session = ort_session(model)
    except OrtNotImplemented:  # e.g. float64 InstanceNormalization: onnx's reference implementation instead
        return list(ReferenceEvaluator(model).run(None, dict(zip(names, inputs))))
    return session.run(None, dict(zip(names, inputs)))


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype=None) -> None:
    dtype = np.dtype(dtype or actual.dtype)
    assert actual.dtype == dtype, f"dtype {actual.dtype}, expected {dtype}"
    assert actual.shape == np.shape(expected), f"shape {actual.shape}, expected {np.shape(expected)}"
    if dtype.kind == "f":
        np.testing.assert_allclose(actual.astype(np.float64), np.asarray(expected, np.float64), **TOL[dtype])
    else:
        np.testing.assert_array_equal(actual, expected)


def expect_error(code: RC, op: str, inputs, params=None, **kw) -> None:
    with pytest.raises(NNRtError) as info:
        run(op, inputs, params, **kw)
    assert info.value.code == code, info.value


def rand(rng, shape, dtype=F32, lo=-2.0, hi=2.0) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def qparam(scale: float, zero: int) -> QuantParam:
    return QuantParam(scales=[scale], zero_points=[zero], num_bits=[8])


def ref_in(x: np.ndarray) -> np.ndarray:
    """The oracle's input: float16 data is evaluated in float32 (exactly representable)."""
    return x.astype(F32) if x.dtype == F16 else x


# ================================================================================================================
# MATMUL
# ================================================================================================================
MATMUL_CASES = {
    "matmul-2d": dict(a=(3, 4), b=(4, 5)),
    "matmul-transpose_a": dict(a=(4, 3), b=(4, 5), ta=True),
    "matmul-transpose_b": dict(a=(3, 4), b=(5, 4), tb=True),
    "matmul-transpose_ab": dict(a=(2, 4, 3), b=(2, 5, 4), ta=True, tb=True),
    "matmul-batched-broadcast": dict(a=(2, 1, 3, 4), b=(5, 4, 6)),
    "matmul-vector": dict(a=(4,), b=(2, 4, 3)),
    "matmul-relu": dict(a=(3, 4), b=(4, 5), fuse=1),
    "matmul-relu6": dict(a=(3, 4), b=(4, 5), fuse=2, scale=4.0),
    "matmul-f16": dict(a=(2, 3, 8), b=(8, 5), dtype=F16),
    "matmul-f64": dict(a=(3, 4), b=(5, 4), tb=True, dtype=F64),
    "matmul-int32": dict(a=(3, 4), b=(4, 2), dtype=I32),
    "matmul-enable_float16": dict(a=(3, 16), b=(16, 4), float16=True),
}


@pytest.mark.parametrize("case_id", MATMUL_CASES)
def test_matmul(case_id):
    c = MATMUL_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    s = c.get("scale", 1.0)
    a, b = rand(rng, c["a"], dtype, -3 * s, 3 * s), rand(rng, c["b"], dtype, -3, 3)
    params = {}
    if "ta" in c:
        params[T.OH_NN_MATMUL_TRANSPOSE_A] = c["ta"]
    if "tb" in c:
        params[T.OH_NN_MATMUL_TRANSPOSE_B] = c["tb"]
    if "fuse" in c:
        params[T.OH_NN_MATMUL_ACTIVATION_TYPE] = c["fuse"]
    (out,) = run("MATMUL", [a, b], params, float16=c.get("float16", False))
    ra = np.swapaxes(ref_in(a), -1, -2) if c.get("ta") else ref_in(a)
    rb = np.swapaxes(ref_in(b), -1, -2) if c.get("tb") else ref_in(b)
    (expected,) = ort_run("MatMul", [np.ascontiguousarray(ra), np.ascontiguousarray(rb)])
    if c.get("fuse") == 1:
        expected = np.maximum(expected, 0)
    elif c.get("fuse") == 2:
        expected = np.clip(expected, 0, 6)
    if c.get("float16"):  # EnableFloat16: model IO stays float32, the work runs in float16
        assert out.dtype == F32
        np.testing.assert_allclose(out, expected, **TOL[np.dtype(F16)])
    else:
        assert_close(out, expected, dtype)


def test_matmul_quant_int8():
    case_id = "matmul-quant-int8"
    rng = rng_for(case_id)
    a = rng.integers(-128, 128, size=(3, 6)).astype(np.int8)
    b = rng.integers(-128, 128, size=(6, 4)).astype(np.int8)
    qa, qb, qo = qparam(0.02, 3), qparam(0.01, -5), qparam(0.05, 2)
    (out,) = run("MATMUL", [a, b], {}, input_quant={0: qa, 1: qb}, output_quant={0: qo},
                 output_dtypes=[np.int8])
    ra = (a.astype(F32) - 3) * F32(0.02)
    rb = (b.astype(F32) + 5) * F32(0.01)
    (real,) = ort_run("MatMul", [ra, rb])
    expected = quantize(real, np.int8, [0.05], [2])
    assert out.dtype == np.int8
    assert np.max(np.abs(out.astype(int) - expected.astype(int))) <= QUANT_ATOL


MATMUL_ERRORS = {
    "matmul-err-int8-unquantized": (RC.OH_NN_UNSUPPORTED, dict(a=np.ones((2, 2), np.int8), b=np.ones((2, 2), np.int8))),
    "matmul-err-bool": (RC.OH_NN_UNSUPPORTED, dict(a=np.ones((2, 2), bool), b=np.ones((2, 2), bool))),
    "matmul-err-dtype-mismatch": (RC.OH_NN_INVALID_PARAMETER, dict(a=np.ones((2, 2), F32), b=np.ones((2, 2), F16))),
    "matmul-err-inner-dims": (RC.OH_NN_INVALID_PARAMETER, dict(a=np.ones((2, 3), F32), b=np.ones((2, 3), F32))),
    "matmul-err-batch": (RC.OH_NN_INVALID_PARAMETER, dict(a=np.ones((2, 2, 3), F32), b=np.ones((3, 3, 2), F32))),
}


@pytest.mark.parametrize("case_id", MATMUL_ERRORS)
def test_matmul_errors(case_id):
    code, c = MATMUL_ERRORS[case_id]
    expect_error(code, "MATMUL", [c["a"], c["b"]], output_dtypes=[c["a"].dtype], output_shapes=[(-1, -1)])


# ================================================================================================================
# FULL_CONNECTION (weight [out_channels, in_channels])
# ================================================================================================================
FC_CASES = {
    "full_connection-bias": dict(x=(4, 6), w=(5, 6), bias=True),
    "full_connection-nobias": dict(x=(4, 6), w=(5, 6)),
    "full_connection-flatten-rows": dict(x=(2, 3, 4), w=(5, 12), bias=True, out=(2, 5)),
    "full_connection-flatten-batch": dict(x=(4, 6), w=(2, 3), out=(8, 2)),  # NNAPI: batch = size / in_channels
    "full_connection-axis2": dict(x=(2, 3, 4, 5), w=(7, 20), bias=True, axis=2, out=(2, 3, 7)),
    "full_connection-axis-neg": dict(x=(2, 3, 4), w=(6, 4), axis=-1, out=(2, 3, 6)),
    "full_connection-use_axis-default0": dict(x=(2, 3), w=(4, 6), use_axis=True, out=(4,)),
    "full_connection-use_axis-axis1": dict(x=(3, 2, 2), w=(4, 4), use_axis=True, axis=1, bias=True, out=(3, 4)),
    "full_connection-relu": dict(x=(4, 6), w=(5, 6), bias=True, fuse=1),
    "full_connection-relu6": dict(x=(4, 6), w=(5, 6), bias=True, fuse=2, scale=3.0),
    "full_connection-f16": dict(x=(4, 16), w=(5, 16), bias=True, dtype=F16),
    "full_connection-f64": dict(x=(4, 6), w=(5, 6), bias=True, dtype=F64),
}


@pytest.mark.parametrize("case_id", FC_CASES)
def test_full_connection(case_id):
    c = FC_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    s = c.get("scale", 1.0)
    x, w = rand(rng, c["x"], dtype, -2 * s, 2 * s), rand(rng, c["w"], dtype, -2 * s, 2 * s)
    inputs = [x, w]
    params: dict = {}
    b = None
    if c.get("bias"):
        b = rand(rng, (c["w"][0],), dtype)
        inputs.append(b)
        params[T.OH_NN_FULL_CONNECTION_HAS_BIAS] = True
    if "use_axis" in c:
        params[T.OH_NN_FULL_CONNECTION_USE_AXIS] = c["use_axis"]
    if "axis" in c:
        params[T.OH_NN_FULL_CONNECTION_AXIS] = c["axis"]
    if "fuse" in c:
        params[T.OH_NN_FULL_CONNECTION_ACTIVATIONTYPE] = c["fuse"]
    out_shape = c.get("out", (c["x"][0], c["w"][0]))
    # declared shapes: the harness's probe does not apply the AXIS-forces-useAxis rule of AddOperation
    (out,) = run("FULL_CONNECTION", inputs, params, output_dtypes=[dtype], output_shapes=[out_shape])
    rows = ref_in(x).reshape(-1, c["w"][1])
    gemm_in = [rows, ref_in(w)] + ([ref_in(b)] if b is not None else [])
    (expected,) = ort_run("Gemm", gemm_in, dict(transB=1))
    expected = expected.reshape(out_shape)
    if c.get("fuse") == 1:
        expected = np.maximum(expected, 0)
    elif c.get("fuse") == 2:
        expected = np.clip(expected, 0, 6)
    assert_close(out, expected, dtype)


def test_full_connection_quant_int8():
    """int8 input/weight with quant params, int32 bias without: bias scale = input scale * weight scale."""
    case_id = "full_connection-quant-int8"
    rng = rng_for(case_id)
    x = rng.integers(-128, 128, size=(3, 8)).astype(np.int8)
    w = rng.integers(-128, 128, size=(4, 8)).astype(np.int8)
    b = rng.integers(-2000, 2000, size=(4,)).astype(np.int32)
    qx, qw, qo = qparam(0.03, -2), qparam(0.01, 0), qparam(0.1, 4)
    (out,) = run("FULL_CONNECTION", [x, w, b], {T.OH_NN_FULL_CONNECTION_HAS_BIAS: True},
                 input_quant={0: qx, 1: qw}, output_quant={0: qo}, output_dtypes=[np.int8], output_shapes=[(3, 4)])
    rx = (x.astype(F32) + 2) * F32(0.03)
    rw = w.astype(F32) * F32(0.01)
    rb = (b.astype(np.float64) * 0.03 * 0.01).astype(F32)
    (real,) = ort_run("Gemm", [rx, rw, rb], dict(transB=1))
    expected = quantize(real, np.int8, [0.1], [4])
    assert out.dtype == np.int8
    assert np.max(np.abs(out.astype(int) - expected.astype(int))) <= QUANT_ATOL


FC_ERRORS = {
    "full_connection-err-has_bias-without-input": (
        RC.OH_NN_INVALID_PARAMETER, [np.ones((2, 3), F32), np.ones((4, 3), F32)],
        {T.OH_NN_FULL_CONNECTION_HAS_BIAS: True}),
    "full_connection-err-bias-without-has_bias": (
        RC.OH_NN_INVALID_PARAMETER, [np.ones((2, 3), F32), np.ones((4, 3), F32), np.ones(4, F32)], {}),
    "full_connection-err-4-inputs": (
        RC.OH_NN_INVALID_PARAMETER, [np.ones((2, 3), F32), np.ones((4, 3), F32), np.ones(4, F32), np.ones(4, F32)],
        {T.OH_NN_FULL_CONNECTION_HAS_BIAS: True}),
    "full_connection-err-in-channels": (
        RC.OH_NN_INVALID_PARAMETER, [np.ones((2, 3, 4), F32), np.ones((4, 5), F32)], {T.OH_NN_FULL_CONNECTION_AXIS: 1}),
    "full_connection-err-rows": (RC.OH_NN_INVALID_PARAMETER, [np.ones((2, 5), F32), np.ones((4, 3), F32)], {}),
    "full_connection-err-weight-rank": (RC.OH_NN_INVALID_PARAMETER, [np.ones((2, 3), F32), np.ones((4, 3, 1), F32)], {}),
    "full_connection-err-bias-size": (
        RC.OH_NN_INVALID_PARAMETER, [np.ones((2, 3), F32), np.ones((4, 3), F32), np.ones(3, F32)],
        {T.OH_NN_FULL_CONNECTION_HAS_BIAS: True}),
    "full_connection-err-int8-unquantized": (
        RC.OH_NN_UNSUPPORTED, [np.ones((2, 3), np.int8), np.ones((4, 3), np.int8)], {}),
}


@pytest.mark.parametrize("case_id", FC_ERRORS)
def test_full_connection_errors(case_id):
    code, inputs, params = FC_ERRORS[case_id]
    expect_error(code, "FULL_CONNECTION", inputs, params, output_dtypes=[inputs[0].dtype], output_shapes=[(-1, -1)])


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
    x = rand(rng, c["shape"], dtype, -s, s)
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
    expected = quantize(real, np.uint8, [1 / 256], [0])
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
    x = rand(rng, c["shape"], dtype, -3, 3)
    ch = c["shape"][-1]
    scale, offset, mean = rand(rng, ch, dtype), rand(rng, ch, dtype), rand(rng, ch, dtype)
    var = rand(rng, ch, dtype, 0.05, 2.0)
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
    x = rand(rng, c["shape"], dtype, -3, 3)
    gamma, beta = rand(rng, c["shape"][bna:], dtype), rand(rng, c["shape"][bna:], dtype)
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
    x = rand(rng, (2, 3, 4), F32)
    gamma, beta = rand(rng, (4,), F32), rand(rng, (4,), F32)
    out = normalization.layer_norm(x, gamma, beta, begin_norm_axis=1, epsilon=1e-5, begin_param_axis=2)
    xd = x.astype(F64)
    mu = xd.mean(axis=(1, 2), keepdims=True)
    var = ((xd - mu) ** 2).mean(axis=(1, 2), keepdims=True)
    assert_close(out, (xd - mu) / np.sqrt(var + 1e-5) * gamma + beta, F32)


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
    x = rand(rng, c["shape"], dtype, -3, 3)
    ch = c["shape"][-1]
    scale, bias = rand(rng, ch, dtype), rand(rng, ch, dtype)
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
    x = rand(rng, c["shape"], dtype, -0.3, 0.3) if c.get("small") else rand(rng, c["shape"], dtype, -3, 3)
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


# ================================================================================================================
# REDUCE_{MEAN,PROD,MAX,MIN,SUM,L2}: onnxruntime Reduce* (opset 18, axes input); coeff and reduce_to_end by hand
# ================================================================================================================
REDUCE_OPS = {"REDUCE_MEAN": "ReduceMean", "REDUCE_PROD": "ReduceProd", "REDUCE_MAX": "ReduceMax",
              "REDUCE_MIN": "ReduceMin", "REDUCE_SUM": "ReduceSum", "REDUCE_L2": "ReduceL2"}
REDUCE_VARIANTS = {
    "axis1": dict(shape=(2, 3, 4), axis=[1]),
    "keep_dims": dict(shape=(2, 3, 4), axis=[1], keep=True),
    "multi-axis": dict(shape=(2, 3, 4), axis=[0, 2]),
    "neg-axis": dict(shape=(2, 3, 4), axis=[-1]),
    "scalar-axis": dict(shape=(3, 5), axis=np.array(0, I32)),
    "all-axes-keep": dict(shape=(2, 3, 2), axis=[0, 1, 2], keep=True),
    "reduce_to_end": dict(shape=(2, 3, 4, 2), axis=[1], to_end=True),
    "reduce_to_end-keep-coeff": dict(shape=(2, 3, 4), axis=[-2], to_end=True, keep=True, coeff=0.5),
    "coeff": dict(shape=(2, 3, 4), axis=[2], coeff=2.5),
    "f16": dict(shape=(3, 4, 5), axis=[2], dtype=F16),
    "f64": dict(shape=(3, 4), axis=[1], dtype=F64),
    "int32": dict(shape=(3, 4), axis=[1], dtype=I32, skip=("REDUCE_L2",)),
    "int64-coeff": dict(shape=(3, 4), axis=[0], dtype=I64, coeff=3.0, skip=("REDUCE_L2",)),
}
REDUCE_CASES = {f"{op.lower()}-{v}": (op, v) for op in REDUCE_OPS for v, c in REDUCE_VARIANTS.items()
                if op not in c.get("skip", ())}


def _reduce_input(op: str, rng, shape, dtype) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        lo, hi = (-3, 3) if op == "REDUCE_PROD" else (-50, 50)
        return rand(rng, shape, dtype, lo, hi)
    if op == "REDUCE_PROD":  # keep products in a comfortable range
        return (rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1, 1], size=shape)).astype(dtype)
    return rand(rng, shape, dtype, -3, 3)


@pytest.mark.parametrize("case_id", REDUCE_CASES)
def test_reduce(case_id):
    op, variant = REDUCE_CASES[case_id]
    c = REDUCE_VARIANTS[variant]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    x = _reduce_input(op, rng, c["shape"], dtype)
    axis = np.asarray(c["axis"], I64) if isinstance(c["axis"], list) else c["axis"]
    params = {}
    if "keep" in c:
        params[T[f"OH_NN_{op}_KEEP_DIMS"]] = c["keep"]
    if "to_end" in c:
        params[T[f"OH_NN_{op}_REDUCE_TO_END"]] = c["to_end"]
    if "coeff" in c:
        params[T[f"OH_NN_{op}_COEFF"]] = c["coeff"]
    (out,) = run(op, [x, axis], params)
    rank = len(c["shape"])
    axes = [a % rank for a in np.asarray(axis).reshape(-1).tolist()]
    if c.get("to_end"):
        axes = list(range(axes[0], rank))
    (expected,) = ort_run(REDUCE_OPS[op], [ref_in(x), np.asarray(axes, I64)], dict(keepdims=int(c.get("keep", False))))
    expected = expected * c.get("coeff", 1.0) if dtype not in (I32, I64) else expected * int(c.get("coeff", 1))
    assert_close(out, expected, dtype)


def test_reduce_mean_int_truncates():
    """Integer mean truncates toward zero (C division; onnxruntime agrees)."""
    x = np.array([[-7, -1, 1], [5, 6, -9], [4, 4, 4]], I32)
    (out,) = run("REDUCE_MEAN", [x, np.array([1], I64)])
    (expected,) = ort_run("ReduceMean", [x, np.array([1], I64)], dict(keepdims=0))
    assert_close(out, expected, I32)
    np.testing.assert_array_equal(out, [-2, 0, 4])


def test_reduce_mean_quant_uint8():
    case_id = "reduce_mean-quant-uint8"
    rng = rng_for(case_id)
    x = rng.integers(0, 256, size=(2, 6, 3)).astype(np.uint8)
    qx, qo = qparam(0.1, 100), qparam(0.05, 120)
    (out,) = run("REDUCE_MEAN", [x, np.array([1], I64)], {T.OH_NN_REDUCE_MEAN_KEEP_DIMS: True},
                 input_quant={0: qx}, output_quant={0: qo}, output_dtypes=[np.uint8])
    (real,) = ort_run("ReduceMean", [(x.astype(F32) - 100) * F32(0.1), np.array([1], I64)], dict(keepdims=1))
    expected = quantize(real, np.uint8, [0.05], [120])
    assert out.shape == (2, 1, 3)
    assert np.max(np.abs(out.astype(int) - expected.astype(int))) <= QUANT_ATOL


REDUCE_ALL_CASES = {
    "reduce_all-axis1": dict(shape=(3, 4, 2), axis=[1]),
    "reduce_all-keep_dims": dict(shape=(3, 4, 2), axis=[0, 2], keep=True),
    "reduce_all-reduce_to_end": dict(shape=(2, 3, 2, 2), axis=[1], to_end=True),
    "reduce_all-float-nonzero": dict(shape=(3, 4), axis=[1], dtype=F32),
    "reduce_all-float-coeff": dict(shape=(3, 4), axis=[0], dtype=F32, coeff=2.0),
    "reduce_all-int32": dict(shape=(4, 3), axis=[0], dtype=I32),
}


@pytest.mark.parametrize("case_id", REDUCE_ALL_CASES)
def test_reduce_all(case_id):
    c = REDUCE_ALL_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", np.bool_)
    x = (rng.random(c["shape"]) > 0.2)
    if dtype is not np.bool_:
        x = (x * rng.integers(1, 5, size=c["shape"])).astype(dtype)
    x.reshape(-1)[0] = 0  # make sure at least one slice is false
    params = {}
    if "keep" in c:
        params[T.OH_NN_REDUCE_ALL_KEEP_DIMS] = c["keep"]
    if "to_end" in c:
        params[T.OH_NN_REDUCE_ALL_REDUCE_TO_END] = c["to_end"]
    if "coeff" in c:
        params[T.OH_NN_REDUCE_ALL_COEFF] = c["coeff"]
    (out,) = run("REDUCE_ALL", [x, np.asarray(c["axis"], I64)], params)
    axes = c["axis"] if not c.get("to_end") else list(range(c["axis"][0], len(c["shape"])))
    expected = np.all(x != 0, axis=tuple(axes), keepdims=c.get("keep", False)).astype(dtype) * c.get("coeff", 1)
    assert_close(out, expected.astype(dtype), dtype)


REDUCE_ERRORS = {
    "reduce_l2-err-int32": ("REDUCE_L2", RC.OH_NN_UNSUPPORTED, np.ones((2, 3), I32), [1], {}),
    "reduce_sum-err-bool": ("REDUCE_SUM", RC.OH_NN_UNSUPPORTED, np.ones((2, 3), bool), [1], {}),
    "reduce_mean-err-axis-range": ("REDUCE_MEAN", RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), [2], {}),
    "reduce_max-err-axis-twice": ("REDUCE_MAX", RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), [1, -1], {}),
    "reduce_min-err-float-axis": ("REDUCE_MIN", RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32),
                                  np.array([1.0], F32), {}),
    "reduce_prod-err-to_end-two-axes": ("REDUCE_PROD", RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3, 4), F32), [0, 1],
                                        {T.OH_NN_REDUCE_PROD_REDUCE_TO_END: True}),
    "reduce_sum-err-int-fractional-coeff": ("REDUCE_SUM", RC.OH_NN_UNSUPPORTED, np.ones((2, 3), I32), [1],
                                            {T.OH_NN_REDUCE_SUM_COEFF: 0.5}),
    "reduce_all-err-bool-coeff": ("REDUCE_ALL", RC.OH_NN_UNSUPPORTED, np.ones((2, 3), bool), [1],
                                  {T.OH_NN_REDUCE_ALL_COEFF: 2.0}),
}


@pytest.mark.parametrize("case_id", REDUCE_ERRORS)
def test_reduce_errors(case_id):
    op, code, x, axis, params = REDUCE_ERRORS[case_id]
    axis = axis if isinstance(axis, np.ndarray) else np.asarray(axis, I64)
    expect_error(code, op, [x, axis], params, output_dtypes=[x.dtype], output_shapes=[(-1,)])


# ================================================================================================================
# ALL (INT64 keep_dims flag, BOOL output)
# ================================================================================================================
ALL_CASES = {
    "all-axis-scalar": dict(shape=(3, 4), axis=np.array(1, I64)),
    "all-axis-list-keep": dict(shape=(2, 3, 4), axis=np.array([0, 2], I64), keep=1),
    "all-neg-axis-int32-axis": dict(shape=(2, 3, 4), axis=np.array([-1], I32)),
    "all-int-input": dict(shape=(4, 3), axis=np.array([0], I64), dtype=I32),
    "all-float-input": dict(shape=(4, 3), axis=np.array([1], I64), dtype=F32),
}


@pytest.mark.parametrize("case_id", ALL_CASES)
def test_all(case_id):
    c = ALL_CASES[case_id]
    rng = rng_for(case_id)
    x = rng.random(c["shape"]) > 0.15
    if "dtype" in c:
        x = (x * rng.integers(-3, 4, size=c["shape"])).astype(c["dtype"])
    x.reshape(-1)[-1] = 0
    params = {T.OH_NN_ALL_KEEP_DIMS: c["keep"]} if "keep" in c else {}
    (out,) = run("ALL", [x, c["axis"]], params, output_dtypes=[np.bool_])
    axes = tuple(int(a) for a in np.asarray(c["axis"]).reshape(-1))
    expected = np.all(x != 0, axis=axes, keepdims=bool(c.get("keep", 0)))  # hand: logical AND of x != 0
    assert_close(out, expected, np.bool_)


ALL_ERRORS = {
    "all-err-axis-range": (np.ones((2, 3), bool), np.array([2], I64)),
    "all-err-float-axis": (np.ones((2, 3), bool), np.array([1.0], F32)),
}


@pytest.mark.parametrize("case_id", ALL_ERRORS)
def test_all_errors(case_id):
    x, axis = ALL_ERRORS[case_id]
    expect_error(RC.OH_NN_INVALID_PARAMETER, "ALL", [x, axis], output_dtypes=[np.bool_], output_shapes=[(-1,)])


# ================================================================================================================
# ARG_MAX
# ================================================================================================================
ARGMAX_CASES = {
    "arg_max-default-last-axis": dict(shape=(3, 4, 5)),
    "arg_max-axis0-keep_dims": dict(shape=(3, 4, 5), axis=0, keep=True),
    "arg_max-axis1": dict(shape=(3, 4, 5), axis=1),
    "arg_max-top_k3": dict(shape=(2, 6, 3), axis=1, top_k=3),
    "arg_max-top_k2-keep": dict(shape=(4, 5), axis=-1, top_k=2, keep=True),
    "arg_max-out_max_value": dict(shape=(3, 4, 5), axis=2, out_value=True),
    "arg_max-out_max_value-top_k2": dict(shape=(3, 5), axis=0, out_value=True, top_k=2),
    "arg_max-int32": dict(shape=(4, 6), axis=1, dtype=I32),
    "arg_max-f16": dict(shape=(4, 6), axis=0, dtype=F16),
    "arg_max-index-int64": dict(shape=(4, 6), axis=1, index=I64),
    "arg_max-ties-first": dict(values=np.array([[1, 3, 3, 2], [5, 5, 5, 5]], F32), axis=1),
}


@pytest.mark.parametrize("case_id", ARGMAX_CASES)
def test_arg_max(case_id):
    c = ARGMAX_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    x = c["values"] if "values" in c else (rng.permutation(np.prod(c["shape"])).reshape(c["shape"]) - 10).astype(dtype)
    params = {}
    if "axis" in c:
        params[T.OH_NN_ARG_MAX_AXIS] = c["axis"]
    if "keep" in c:
        params[T.OH_NN_ARG_MAX_KEEPDIMS] = c["keep"]
    if "top_k" in c:
        params[T.OH_NN_ARG_MAX_TOP_K] = c["top_k"]
    if "out_value" in c:
        params[T.OH_NN_ARG_MAX_OUT_MAX_VALUE] = c["out_value"]
    out_dtype = x.dtype if c.get("out_value") else c.get("index", I32)
    (out,) = run("ARG_MAX", [x], params, output_dtypes=[out_dtype])
    axis, k, keep = c.get("axis", -1), c.get("top_k", 1), c.get("keep", False)
    if k == 1:
        (index,) = ort_run("ArgMax", [ref_in(x)], dict(axis=axis, keepdims=1), out_dtypes=[I64])
        (value,) = ort_run("ReduceMax", [ref_in(x), np.array([axis], I64)], dict(keepdims=1))
        if not keep:
            index, value = np.squeeze(index, axis), np.squeeze(value, axis)
    else:  # the top_k largest along the axis, descending; the axis keeps size top_k
        value, index = ort_run("TopK", [ref_in(x), np.array([k], I64)], dict(axis=axis), out_dtypes=[ref_in(x).dtype, I64])
    expected = value if c.get("out_value") else index
    assert_close(out, np.asarray(expected).astype(out_dtype), out_dtype)


ARGMAX_ERRORS = {
    "arg_max-err-top_k-too-big": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), {T.OH_NN_ARG_MAX_TOP_K: 4}, I32),
    "arg_max-err-axis-range": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), {T.OH_NN_ARG_MAX_AXIS: 2}, I32),
    "arg_max-err-bool": (RC.OH_NN_UNSUPPORTED, np.ones((2, 3), bool), {}, I32),
    "arg_max-err-float-index": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), {}, F32),
}


@pytest.mark.parametrize("case_id", ARGMAX_ERRORS)
def test_arg_max_errors(case_id):
    code, x, params, out_dtype = ARGMAX_ERRORS[case_id]
    expect_error(code, "ARG_MAX", [x], params, output_dtypes=[out_dtype], output_shapes=[(-1,)])


# ================================================================================================================
# TOP_K
# ================================================================================================================
TOPK_CASES = {
    "top_k-default-last-axis": dict(shape=(3, 4, 6), k=3),
    "top_k-axis0": dict(shape=(5, 4), k=2, axis=0),
    "top_k-axis1-k-int32": dict(shape=(2, 7, 3), k=np.array(4, I32), axis=1),
    "top_k-unsorted-ascending": dict(shape=(3, 8), k=3, sorted=False),
    "top_k-k-all": dict(shape=(2, 5), k=5),
    "top_k-int32": dict(shape=(3, 6), k=2, dtype=I32),
    "top_k-f16": dict(shape=(3, 6), k=3, dtype=F16),
    "top_k-index-int64": dict(shape=(3, 6), k=2, index=I64),
}


@pytest.mark.parametrize("case_id", TOPK_CASES)
def test_top_k(case_id):
    c = TOPK_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    x = (rng.permutation(np.prod(c["shape"])).reshape(c["shape"]) - 7).astype(dtype)  # distinct values: no ties
    k = c["k"] if isinstance(c["k"], np.ndarray) else np.array([c["k"]], I64)
    params = {}
    if "sorted" in c:
        params[T.OH_NN_TOP_K_SORTED] = c["sorted"]
    if "axis" in c:
        params[T.OH_NN_TOP_K_AXIS] = c["axis"]
    index_dtype = c.get("index", I32)
    values, indices = run("TOP_K", [x, k], params, output_dtypes=[dtype, index_dtype])
    axis = c.get("axis", -1)  # header default: the last axis
    ev, ei = ort_run("TopK", [ref_in(x), np.array([int(k.reshape(-1)[0])], I64)], dict(axis=axis),
                     out_dtypes=[ref_in(x).dtype, I64])
    if c.get("sorted") is False:  # header: false = ascending order (of the same k largest)
        ev, ei = np.flip(ev, axis), np.flip(ei, axis)
    assert_close(values, ev.astype(dtype), dtype)
    assert_close(indices, ei.astype(index_dtype), index_dtype)


def test_top_k_ties_and_unsorted_by_hand():
    """Equal values: the lower index first, in both orders (hand-computed)."""
    x = np.array([[1, 3, 3, 2, 3]], F32)
    values, indices = run("TOP_K", [x, np.array([3], I64)], {}, output_dtypes=[F32, I32])
    np.testing.assert_array_equal(values, [[3, 3, 3]])
    np.testing.assert_array_equal(indices, [[1, 2, 4]])
    x = np.array([[1, 3, 3, 2, 0]], F32)
    values, indices = run("TOP_K", [x, np.array([3], I64)], {T.OH_NN_TOP_K_SORTED: False}, output_dtypes=[F32, I32])
    np.testing.assert_array_equal(values, [[2, 3, 3]])
    np.testing.assert_array_equal(indices, [[3, 1, 2]])


def test_top_k_quant_int8():
    case_id = "top_k-quant-int8"
    rng = rng_for(case_id)
    x = rng.permutation(np.arange(-60, 60)).reshape(4, 30).astype(np.int8)
    q = qparam(0.1, -3)
    values, indices = run("TOP_K", [x, np.array([5], I64)], {}, input_quant={0: q}, output_quant={0: q},
                          output_dtypes=[np.int8, I32])
    ev, ei = ort_run("TopK", [x.astype(F32), np.array([5], I64)], dict(axis=-1), out_dtypes=[F32, I64])
    np.testing.assert_array_equal(values, ev.astype(np.int8))
    np.testing.assert_array_equal(indices, ei.astype(I32))


TOPK_ERRORS = {
    "top_k-err-k-too-big": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), np.array([4], I64), {}),
    "top_k-err-k-negative": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), np.array([-1], I64), {}),
    "top_k-err-k-float": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), np.array([1.0], F32), {}),
    "top_k-err-axis-range": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), np.array([1], I64),
                             {T.OH_NN_TOP_K_AXIS: 2}),
    "top_k-err-bool": (RC.OH_NN_UNSUPPORTED, np.ones((2, 3), bool), np.array([1], I64), {}),
}


@pytest.mark.parametrize("case_id", TOPK_ERRORS)
def test_top_k_errors(case_id):
    code, x, k, params = TOPK_ERRORS[case_id]
    expect_error(code, "TOP_K", [x, k], params, output_dtypes=[x.dtype, I32], output_shapes=[(-1, -1), (-1, -1)])
