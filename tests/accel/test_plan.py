"""The fast paths in the execution plan (``nnrt_onnx.accel``): its fusion passes (MUL/ADD by per-channel constants,
residual ADDs and a linear layer's bias into the convolution, BATCH_NORM or MATMUL before them; the exported GELU;
the NCHW image's transpose; concatenations assembled in place) and steps bound to runners -- each against a plain
numpy (float64) formula written here and against the same model's reference plan; moved here from
tests/test_execution_plan.py. Skipped with ``NNRT_ONNX_NUMBA=0`` (no fast paths)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from accel_support import requires_fast_paths, unbound_executor, unfused_run
from test_execution_plan import executor

from nnrt_onnx import Model, TensorDesc
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_TensorType as TT
from nnrt_onnx.runtime.threads import THREADS_EXTENSION

pytestmark = requires_fast_paths

# ---------------------------------------------------------------------------------------------------------------
# a convolution's following MUL/ADD by per-channel constants run inside the convolution step


def add_same_conv(m, depthwise, x, w, b, out):
    """A SAME-padded CONV2D (or DEPTHWISE_CONV2D_NATIVE) of x with constant weights and bias into out."""
    if depthwise:
        m.add_operation(OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE,
                        [m.add_param(TT.OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD_MODE, 0)],
                        [x, m.add_constant(w), m.add_constant(b)], [out])
    else:
        m.add_operation(OP.OH_NN_OPS_CONV2D, [m.add_param(TT.OH_NN_CONV2D_PAD_MODE, 0)],
                        [x, m.add_constant(w), m.add_constant(b)], [out])


def conv_scale_shift(kind, k, channels, seed=0, scale_shape=None, expose_scaled=False):
    """x [1, 9, 9, C] -> CONV2D (k x k, SAME; kind "conv") or DEPTHWISE_CONV2D_NATIVE (3x3, kind "depthwise")
    -> MUL by a constant -> ADD of a [1, 1, 1, C] constant with fused RELU6 -> y (also the scaled tensor as an
    output when ``expose_scaled``). Returns the model and the float64 oracle of y."""
    rng = np.random.default_rng(seed)
    m = Model()
    cin = channels if kind == "depthwise" or channels >= 64 else 5  # 64 in and out: the Winograd path
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 9, 9, cin]))
    w = rng.standard_normal((channels, k, k, 1 if kind == "depthwise" else cin)).astype(np.float32)
    b = rng.standard_normal(channels).astype(np.float32)
    scale = rng.standard_normal(scale_shape or (channels,)).astype(np.float32)
    shift = (rng.standard_normal((1, 1, 1, channels)) * 2).astype(np.float32)
    conv_out, scaled, y = (m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 9, 9, channels])) for _ in range(3))
    add_same_conv(m, kind == "depthwise", x, w, b, conv_out)
    m.add_operation(OP.OH_NN_OPS_MUL, [m.add_param(TT.OH_NN_MUL_ACTIVATION_TYPE, 0)],
                    [m.add_constant(scale), conv_out], [scaled])
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 2)],
                    [scaled, m.add_constant(shift)], [y])
    m.specify_inputs_and_outputs([x], [y, scaled] if expose_scaled else [y])
    m.finish()

    def reference(xv):
        x64 = np.pad(xv.astype(np.float64), ((0, 0), (k // 2, k // 2), (k // 2, k // 2), (0, 0)))
        acc = np.zeros((1, 9, 9, channels))
        for i in range(k):
            for j in range(k):
                tap = x64[:, i:i + 9, j:j + 9]
                acc += tap * w[:, i, j, 0] if kind == "depthwise" else tap @ w[:, i, j, :].T.astype(np.float64)
        return np.clip((acc + b) * scale.astype(np.float64) + shift, 0, 6)

    return m, reference


@pytest.mark.parametrize("kind, k, channels", [("conv", 3, 6), ("conv", 1, 6), ("conv", 3, 64),
                                               ("depthwise", 3, 6)])
def test_mul_add_by_channel_constants_fuse_into_the_convolution(kind, k, channels):
    """The fused step (one instead of three) gives exactly the unfused steps' values (the plan without fusions)
    and the float64 oracle's within float32 rounding; 64 channels take the Winograd path."""
    model, reference = conv_scale_shift(kind, k, channels)
    ex = executor(model)
    assert len(ex.prepared.steps) == 1 and len(ex.prepared._plain_steps) == 3
    x = np.random.default_rng(1).standard_normal(model.tensors[0].dims).astype(np.float32)
    (fused,) = ex.run_arrays([x])
    (plain,) = unfused_run(ex, [x])
    assert np.array_equal(fused, plain)
    np.testing.assert_allclose(fused, reference(x), rtol=1e-4, atol=1e-4)
    assert fused.min() == 0 and fused.max() == 6  # the ADD's RELU6 applied


@pytest.mark.parametrize("scale_shape, expose", [((1, 9, 9, 6), False), ((6,), True)], ids=["spatial", "output"])
def test_mul_add_not_fused_when_the_constant_is_not_per_channel_or_the_tensor_is_an_output(scale_shape, expose):
    model, _ = conv_scale_shift("conv", 3, 6, scale_shape=scale_shape, expose_scaled=expose)
    ex = executor(model)
    assert len(ex.prepared.steps) == 3 - (1 if expose else 0)  # exposed: the MUL still fuses, the ADD not
    x = np.random.default_rng(2).standard_normal((1, 9, 9, 5)).astype(np.float32)
    got = ex.run_arrays([x])
    want = unfused_run(ex, [x])
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_mul_add_by_channel_constants_fuse_into_batch_norm():
    """BATCH_NORM -> MUL -> ADD (RELU): one step, exactly the unfused steps' values, the float64 oracle's within
    float32 rounding; the kernel's row blocks (128 KiB) cut this input into several."""
    rng = np.random.default_rng(4)
    c = 48
    shape = [1, 30, 30, c]
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, shape))
    normed, scaled, y = (m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, shape)) for _ in range(3))
    scale, offset, mean = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
    variance = rng.uniform(0.5, 2, c).astype(np.float32)
    mul, add = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    m.add_operation(OP.OH_NN_OPS_BATCH_NORM, [m.add_param(TT.OH_NN_BATCH_NORM_EPSILON, np.float32(1e-3))],
                    [x] + [m.add_constant(a) for a in (scale, offset, mean, variance)], [normed])
    m.add_operation(OP.OH_NN_OPS_MUL, [m.add_param(TT.OH_NN_MUL_ACTIVATION_TYPE, 0)], [normed, m.add_constant(mul)],
                    [scaled])
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 1)], [m.add_constant(add), scaled],
                    [y])
    m.specify_inputs_and_outputs([x], [y])
    m.finish()
    ex = executor(m)
    assert len(ex.prepared.steps) == 1 and len(ex.prepared._plain_steps) == 3
    xv = rng.standard_normal(shape).astype(np.float32)
    (fused,) = ex.run_arrays([xv])
    (plain,) = unfused_run(ex, [xv])
    assert np.array_equal(fused, plain)
    f64 = np.float64
    want = np.maximum(((xv - f64(mean)) / np.sqrt(f64(variance) + 1e-3) * scale + offset) * mul + add, 0)
    np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-5)
    assert (fused == 0).any()


# ---------------------------------------------------------------------------------------------------------------
# the exported exact GELU (DIV, ERF, ADD, MUL, MUL) as one step


def erf_gelu_model(expose_erf=False):
    """x [2, 3, 50] -> y = (x * (erf(x / sqrt(2)) + 1)) * 0.5 as BERT's export writes it (also erf's output as a
    model output when ``expose_erf``)."""
    m = Model()
    shape = [2, 3, 50]
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, shape))
    scaled, erf_out, plus, prod, y = (m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, shape)) for _ in range(5))
    m.add_operation(OP.OH_NN_OPS_DIV, [m.add_param(TT.OH_NN_DIV_ACTIVATIONTYPE, 0)],
                    [x, m.add_constant(np.array([np.sqrt(2)], np.float32))], [scaled])
    m.add_operation(OP.OH_NN_OPS_ERF, [], [scaled], [erf_out])
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 0)],
                    [erf_out, m.add_constant(np.array(1, np.float32))], [plus])
    m.add_operation(OP.OH_NN_OPS_MUL, [m.add_param(TT.OH_NN_MUL_ACTIVATION_TYPE, 0)], [x, plus], [prod])
    m.add_operation(OP.OH_NN_OPS_MUL, [m.add_param(TT.OH_NN_MUL_ACTIVATION_TYPE, 0)],
                    [prod, m.add_constant(np.array([0.5], np.float32))], [y])
    m.specify_inputs_and_outputs([x], [y, erf_out] if expose_erf else [y])
    m.finish()
    return m


@pytest.mark.parametrize("numba_env", [None, "0"], ids=["compiled", "numpy"])
def test_erf_gelu_steps_fuse_into_one(numba_env, monkeypatch):
    """One step instead of five, exactly the unfused steps' values on both paths (signed zeros, NaN, inf and
    values past the erf clamp included), and math.erf's GELU in float64 within float32 rounding."""
    import math

    if numba_env is not None:  # the fused step's numpy path (the compiled loop declining)
        from nnrt_onnx.accel import numba_loops

        monkeypatch.setattr(numba_loops, "erf_gelu", lambda *_: None)
    ex = executor(erf_gelu_model())
    assert len(ex.prepared.steps) == 1 and len(ex.prepared._plain_steps) == 5
    x = (np.random.default_rng(6).standard_normal((2, 3, 50)) * 4).astype(np.float32)
    x.flat[:7] = [-0.0, 0.0, np.nan, np.inf, -np.inf, 40.0, -1e-30]
    with np.errstate(all="ignore"):
        (fused,) = ex.run_arrays([x])
        (plain,) = unfused_run(ex, [x])
    assert fused.tobytes() == plain.tobytes()
    finite = np.isfinite(x)
    want = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x[finite].astype(np.float64)])
    np.testing.assert_allclose(fused[finite], want, rtol=1e-6, atol=1e-6)


def test_erf_gelu_not_fused_when_an_intermediate_is_an_output():
    ex = executor(erf_gelu_model(expose_erf=True))
    assert len(ex.prepared.steps) == 5


# ---------------------------------------------------------------------------------------------------------------
# a residual ADD (a convolution's output plus another tensor of its shape) runs inside the convolution step


def conv_residual(kind, residual_first=True, h=9):
    """x [1, h, h, C] -> CONV2D (kind: "im2col" 3x3 5 -> 6, "1x1", "winograd" 3x3 64 -> 64, "kn2row" 3x3
    128 -> 32) or DEPTHWISE_CONV2D_NATIVE 3x3 -> + r (a second model input of the output's shape; also as the
    ADD's first operand) with fused RELU -> y. Returns the model and the float64 oracle of y(x, r)."""
    cin, cout, k, depthwise = {"im2col": (5, 6, 3, False), "1x1": (16, 24, 1, False), "winograd": (64, 64, 3, False),
                               "kn2row": (128, 32, 3, False), "depthwise": (8, 8, 3, True)}[kind]
    rng = np.random.default_rng(5)
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, h, h, cin]))
    r = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, h, h, cout]))
    w = (rng.standard_normal((cout, k, k, 1 if depthwise else cin)) / np.sqrt(k * k * cin)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    conv_out, y = (m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, h, h, cout])) for _ in range(2))
    add_same_conv(m, depthwise, x, w, b, conv_out)
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 1)],
                    [r, conv_out] if residual_first else [conv_out, r], [y])
    m.specify_inputs_and_outputs([x, r], [y])
    m.finish()

    def reference(xv, rv):
        x64 = np.pad(xv.astype(np.float64), ((0, 0), (k // 2, k // 2), (k // 2, k // 2), (0, 0)))
        acc = np.zeros((1, h, h, cout))
        for i in range(k):
            for j in range(k):
                tap = x64[:, i:i + h, j:j + h]
                acc += tap * w[:, i, j, 0] if depthwise else tap @ w[:, i, j, :].T.astype(np.float64)
        return np.maximum(acc + b + rv, 0)

    return m, reference


@pytest.mark.parametrize("kind", ["im2col", "1x1", "winograd", "kn2row", "depthwise"])
def test_residual_add_fuses_into_the_convolution(kind, monkeypatch):
    """One step instead of two; exactly the unfused steps' values (a run with capture takes them) and the float64
    oracle's within float32 rounding, on every convolution path, in blocks of one row (each block adds its own
    rows of the residual); NaN and signed zeros in the residual too."""
    from nnrt_onnx.accel import conv, depthwise, kn2row, winograd

    for module, name in ((conv, "_IM2COL_BLOCK_BYTES"), (winograd, "_WINO_BLOCK_BYTES"),
                         (kn2row, "_KN2ROW_BLOCK_BYTES"), (depthwise, "_DEPTHWISE_BLOCK_BYTES")):
        monkeypatch.setattr(module, name, 1)
    for module, name in ((conv, "_IM2COL_WEIGHT_MULTIPLE"), (winograd, "_WINO_WEIGHT_MULTIPLE")):
        monkeypatch.setattr(module, name, 0)  # (blocks of one row, whatever the weights)
    model, reference = conv_residual(kind, residual_first=kind != "1x1")
    ex = executor(model)
    assert len(ex.prepared.steps) == 1 and len(ex.prepared._plain_steps) == 2
    rng = np.random.default_rng(2)
    x = rng.standard_normal(model.tensors[0].dims).astype(np.float32)
    r = rng.standard_normal(model.tensors[1].dims).astype(np.float32)
    for _ in range(2):  # the second run: arena slots reused
        (fused,) = ex.run_arrays([x, r])
    (plain,) = unfused_run(ex, [x, r])
    assert np.array_equal(fused, plain)
    np.testing.assert_allclose(fused, reference(x, r), rtol=1e-4, atol=1e-4)
    r[0, 0, 0, :2] = [np.nan, -0.0]
    (fused,) = ex.run_arrays([x, r])
    (plain,) = unfused_run(ex, [x, r])
    np.testing.assert_array_equal(fused, plain)
    np.testing.assert_array_equal(np.signbit(fused), np.signbit(plain))
    assert np.isnan(fused[0, 0, 0, 0])


def test_residual_add_not_fused_when_the_residual_comes_after_the_convolution():
    # ResNet's downsampling block: ADD(c2(...), down(x)) with down computed after c2 -- c2 cannot add a tensor
    # that does not exist yet; the down convolution (computed last) takes the ADD instead
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 6, 6, 4]))
    w1, w2 = (np.random.default_rng(i).standard_normal((4, 1, 1, 4)).astype(np.float32) for i in (1, 2))
    a, b, y = (m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 6, 6, 4])) for _ in range(3))
    for w, out in ((w1, a), (w2, b)):
        m.add_operation(OP.OH_NN_OPS_CONV2D, [m.add_param(TT.OH_NN_CONV2D_PAD_MODE, 0)],
                        [x, m.add_constant(w), m.add_constant(np.zeros(4, np.float32))], [out])
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 0)], [a, b], [y])
    m.specify_inputs_and_outputs([x], [y])
    m.finish()
    ex = executor(m)
    steps = ex.prepared.steps
    assert len(steps) == 2 and steps[0].addends == 0 and steps[1].addends == 1
    xv = np.random.default_rng(3).standard_normal((1, 6, 6, 4)).astype(np.float32)
    (y_value,) = ex.run_arrays([xv])
    want = xv.astype(np.float64) @ w1[:, 0, 0, :].T.astype(np.float64) + xv @ w2[:, 0, 0, :].T.astype(np.float64)
    np.testing.assert_allclose(y_value, want, rtol=1e-5, atol=1e-5)


# concatenations assembled in place (runtime/assembly.py)

CONCAT_BRANCHES = {  # name: (kernel, out channels, dilation, depthwise); every branch of x [1, 11, 11, 64], SAME
    "1x1": (1, 24, 1, False),  # one GEMM (register tiles or BLAS), the finish in the tiles
    "winograd": (3, 64, 1, False),  # 121 pixels, 64 -> 64: Winograd, its rows finished in transform_out
    "kn2row": (3, 16, 1, False),  # 64 -> 16: kn2row's gather
    "depthwise": (3, 64, 1, True),
    "dilated": (3, 16, 2, False),  # im2col, or read straight from the input in register tiles
}


def concat_of_convolutions(copied_input=True, expose=None):
    """x [1, 11, 11, 64] -> each CONCAT_BRANCHES convolution (bias, fused RELU) -> CONCAT on the channels (with x
    itself last when ``copied_input``) -> RELU6 -> y. ``expose``: a branch whose output is also a model output.
    Returns the model and the float64 oracle of y."""
    rng = np.random.default_rng(11)
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 11, 11, 64]))
    parts, references, exposed = [], [], []
    for name, (k, cout, dilation, depthwise) in CONCAT_BRANCHES.items():
        w = (rng.standard_normal((cout, k, k, 1 if depthwise else 64)) / np.sqrt(k * k * 8)).astype(np.float32)
        b = rng.standard_normal(cout).astype(np.float32)
        out = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 11, 11, cout]))
        prefix = "DEPTHWISE_CONV2D_NATIVE" if depthwise else "CONV2D"
        params = [m.add_param(TT[f"OH_NN_{prefix}_PAD_MODE"], 0), m.add_param(TT[f"OH_NN_{prefix}_ACTIVATION_TYPE"], 1)]
        if dilation > 1:
            params.append(m.add_param(TT[f"OH_NN_{prefix}_DILATION"], [dilation, dilation]))
        m.add_operation(OP[f"OH_NN_OPS_{prefix}"], params, [x, m.add_constant(w), m.add_constant(b)], [out])
        parts.append(out)
        references.append((k, dilation, depthwise, w.astype(np.float64), b))
        if name == expose:
            exposed.append(out)
    if copied_input:
        parts.append(x)
    total = sum(c for _, c, _, _ in CONCAT_BRANCHES.values()) + (64 if copied_input else 0)
    joined, y = (m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 11, 11, total])) for _ in range(2))
    m.add_operation(OP.OH_NN_OPS_CONCAT, [m.add_param(TT.OH_NN_CONCAT_AXIS, 3)], parts, [joined])
    m.add_operation(OP.OH_NN_OPS_RELU6, [], [joined], [y])
    m.specify_inputs_and_outputs([x], [y] + exposed)
    m.finish()

    def reference(xv):
        branches = []
        for k, dilation, depthwise, w, b in references:
            pad = dilation * (k // 2)
            x64 = np.pad(xv.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
            acc = np.zeros((1, 11, 11, w.shape[0]))
            for i in range(k):
                for j in range(k):
                    tap = x64[:, i * dilation:i * dilation + 11, j * dilation:j * dilation + 11]
                    acc += tap * w[:, i, j, 0] if depthwise else tap @ w[:, i, j, :].T
            branches.append(np.maximum(acc + b, 0))
        if copied_input:
            branches.append(xv.astype(np.float64))
        return np.clip(np.concatenate(branches, axis=3), 0, 6)

    return m, reference


def test_concatenation_assembled_in_place_by_every_convolution_path():
    """Each branch's convolution writes its slice of the concatenation (one path each: tiles, Winograd, kn2row,
    depthwise, dilated), the CONCAT copies only the model input; exactly the unassembled steps' values (a run with
    capture takes those), the float64 oracle's within float32 rounding, run after run (arena reused), and outputs
    the caller holds are never overwritten."""
    model, reference = concat_of_convolutions()
    ex = executor(model)
    assembled = [s for s in ex.prepared.steps if s.out_view is not None]
    assert len(assembled) == len(CONCAT_BRANCHES) + 1  # the producers and the CONCAT itself
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((1, 11, 11, 64)).astype(np.float32) for _ in range(3)]
    kept = [ex.run_arrays([x])[0] for x in xs]
    for x, y in zip(xs, kept):
        (plain,) = unfused_run(ex, [x])
        np.testing.assert_array_equal(y, plain)
        np.testing.assert_allclose(y, reference(x), rtol=1e-4, atol=1e-4)


def test_assembled_concatenation_copies_what_a_kernel_wrote_elsewhere(monkeypatch):
    # a convolution path that declines the strided slice (here: every one) returns its own array: the engine
    # copies it into the slice, and the values stay right
    from nnrt_onnx.accel import numba_loops as _accel

    model, reference = concat_of_convolutions()
    ex = executor(model)
    monkeypatch.setattr(_accel, "evenly_strided", lambda out: out.flags.c_contiguous)
    x = np.random.default_rng(5).standard_normal((1, 11, 11, 64)).astype(np.float32)
    (y,) = ex.run_arrays([x])
    np.testing.assert_allclose(y, reference(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("expose, copied_input, assembled", [
    (None, True, 5),  # (the reference case)
    ("dilated", True, 4),  # a branch that is also a model output keeps its own array
    (None, False, 5),
])
def test_what_is_assembled(expose, copied_input, assembled):
    model, reference = concat_of_convolutions(copied_input, expose)
    ex = executor(model)
    producers = [s for s in ex.prepared.steps if s.out_view is not None and s.op != OP.OH_NN_OPS_CONCAT]
    assert len(producers) == assembled
    x = np.random.default_rng(6).standard_normal((1, 11, 11, 64)).astype(np.float32)
    np.testing.assert_allclose(ex.run_arrays([x])[0], reference(x), rtol=1e-4, atol=1e-4)


def test_concatenation_mostly_copied_is_not_assembled():
    # one 16-channel convolution beside a 64-channel model input: under half the concatenation in place (DenseNet's
    # pattern, where holding the array from the convolution on cost more than the copy it saved)
    rng = np.random.default_rng(7)
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 11, 11, 64]))
    out, joined, y = (m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 11, 11, c])) for c in (16, 80, 80))
    add_same_conv(m, False, x, rng.standard_normal((16, 1, 1, 64)).astype(np.float32),
                  rng.standard_normal(16).astype(np.float32), out)
    m.add_operation(OP.OH_NN_OPS_CONCAT, [m.add_param(TT.OH_NN_CONCAT_AXIS, 3)], [x, out], [joined])
    m.add_operation(OP.OH_NN_OPS_RELU, [], [joined], [y])
    m.specify_inputs_and_outputs([x], [y])
    m.finish()
    assert all(s.out_view is None for s in executor(m).prepared.steps)


# ---------------------------------------------------------------------------------------------------------------
# convolution steps bound to runners (kernels/_runners.py): the compiled call alone, bit-identical to the
# general kernel, which they call for inputs that are not as planned


def conv64(x, w, b, stride=1, group=1, depthwise=False):
    """A float64 NHWC convolution with SAME padding (NNAPI's: the odd unit at the bottom/right), by hand."""
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    oh, ow = -(-h // stride), -(-wd // stride)
    ph, pw = max((oh - 1) * stride + kh - h, 0), max((ow - 1) * stride + kw - wd, 0)
    xp = np.pad(x.astype(np.float64), ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    acc = np.zeros((n, oh, ow, o))
    og = o // group
    for i in range(kh):
        for j in range(kw):
            tap = xp[:, i:i + (oh - 1) * stride + 1:stride, j:j + (ow - 1) * stride + 1:stride]
            if depthwise:
                acc += tap * w[:, i, j, 0]
                continue
            for g in range(group):
                acc[..., g * og:(g + 1) * og] += tap[..., g * cg:(g + 1) * cg] @ w[g * og:(g + 1) * og, i, j].T
    return acc + b


def runner_model():
    """x [1, 42, 40, 16], r [1, 42, 40, 32] -> a 3x3 CONV2D (direct) -> a 1x1 with the residual r fused -> a grouped
    1x1 (4 groups) -> a 1x1 of stride 2, concatenated (in place) with a 3x3 stride-2 CONV2D of x -> RELU6 -> a 3x3
    64 -> 64 (Winograd) with that as its residual -> 3x3 depthwise of stride 2 (padding: 1 row above, no column
    left) -> a 3x3 64 -> 32 (kn2row) -> 3x3 depthwise -> y: each runner kind, the products big enough for the
    register tiles. Returns the model and the float64 oracle."""
    rng = np.random.default_rng(21)

    def weights(o, k, c):
        return ((rng.standard_normal((o, k, k, c)) / np.sqrt(k * k * c)).astype(np.float32),
                rng.standard_normal(o).astype(np.float32))

    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 42, 40, 16]))
    r = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 42, 40, 32]))
    layers = {"direct": weights(32, 3, 16), "residual": weights(32, 1, 32), "grouped": weights(128, 1, 8),
              "strided": weights(32, 1, 128), "stem": weights(32, 3, 16), "winograd": weights(64, 3, 64),
              "dw1": weights(64, 3, 1), "kn2row": weights(32, 3, 64), "dw2": weights(32, 3, 1)}

    def conv(source, name, dims, activation=0, stride=1, group=None, depthwise=False):
        prefix = "DEPTHWISE_CONV2D_NATIVE" if depthwise else "CONV2D"
        out = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, dims))
        params = [m.add_param(TT[f"OH_NN_{prefix}_PAD_MODE"], 0),
                  m.add_param(TT[f"OH_NN_{prefix}_ACTIVATION_TYPE"], activation),
                  m.add_param(TT[f"OH_NN_{prefix}_STRIDES"], [stride, stride])]
        if group:
            params.append(m.add_param(TT.OH_NN_CONV2D_GROUP, group))
        w, b = layers[name]
        m.add_operation(OP[f"OH_NN_OPS_{prefix}"], params, [source, m.add_constant(w), m.add_constant(b)], [out])
        return out

    d1 = conv(x, "direct", [1, 42, 40, 32], activation=2)
    p1 = conv(d1, "residual", [1, 42, 40, 32])
    q1 = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 42, 40, 32]))
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 1)], [p1, r], [q1])
    g1 = conv(q1, "grouped", [1, 42, 40, 128], activation=1, group=4)
    s1 = conv(g1, "strided", [1, 21, 20, 32], stride=2)
    st = conv(x, "stem", [1, 21, 20, 32], stride=2)
    joined, y1 = (m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 21, 20, 64])) for _ in range(2))
    m.add_operation(OP.OH_NN_OPS_CONCAT, [m.add_param(TT.OH_NN_CONCAT_AXIS, 3)], [s1, st], [joined])
    m.add_operation(OP.OH_NN_OPS_RELU6, [], [joined], [y1])
    z = conv(y1, "winograd", [1, 21, 20, 64])
    z1 = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 21, 20, 64]))
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 1)], [y1, z], [z1])
    dw1 = conv(z1, "dw1", [1, 11, 10, 64], activation=2, stride=2, depthwise=True)
    k1 = conv(dw1, "kn2row", [1, 11, 10, 32], activation=1)
    y = conv(k1, "dw2", [1, 11, 10, 32], activation=1, depthwise=True)
    m.specify_inputs_and_outputs([x, r], [y])
    m.finish()

    def reference(xv, rv):
        f = {name: (w.astype(np.float64), b) for name, (w, b) in layers.items()}
        d = np.clip(conv64(xv, *f["direct"]), 0, 6)
        q = np.maximum(conv64(d, *f["residual"]) + rv, 0)
        g = np.maximum(conv64(q, *f["grouped"], group=4), 0)
        joined = np.concatenate([conv64(g, *f["strided"], stride=2), conv64(xv, *f["stem"], stride=2)], axis=3)
        y1 = np.clip(joined, 0, 6)
        z1 = np.maximum(conv64(y1, *f["winograd"]) + y1, 0)
        z = np.clip(conv64(z1, *f["dw1"], stride=2, depthwise=True), 0, 6)
        return np.maximum(conv64(np.maximum(conv64(z, *f["kn2row"]), 0), *f["dw2"], depthwise=True), 0)

    return m, reference


def _runner_kinds(ex):
    return sorted(s.fn.__qualname__.split(".")[0] for s in ex.prepared.steps
                  if getattr(s.fn, "__module__", "").endswith(".runners"))


def _unspecialised(model, monkeypatch, **extensions):
    return unbound_executor(model, **extensions)


def test_convolution_steps_run_through_runners_bit_identical_to_the_general_kernels(monkeypatch):
    from nnrt_onnx.accel import conv
    from nnrt_onnx.accel import tiles as _tiles

    if not _tiles.available():
        pytest.skip("the register tiles need numba and an AVX-512 CPU")
    model, reference = runner_model()
    general = _unspecialised(model, monkeypatch, **{THREADS_EXTENSION: b"1"})
    ex = executor(model, **{THREADS_EXTENSION: b"1"})
    assert _runner_kinds(ex) == ["depthwise_3x3"] * 2 + ["direct"] * 2 + ["kn2row"] + ["tiled_1x1"] * 3 + [
        "winograd"]
    assert _runner_kinds(general) == []
    assert sum(s.out_view is not None for s in ex.prepared.steps) == 3  # the strided 1x1 and the stem: in place
    rng = np.random.default_rng(3)
    inputs = [[rng.standard_normal((1, 42, 40, 16)).astype(np.float32),
               rng.standard_normal((1, 42, 40, 32)).astype(np.float32)] for _ in range(3)]
    inputs[2][1][0, 5, 7, :3] = [np.nan, -0.0, np.inf]
    expected = [general.run_arrays(pair)[0] for pair in inputs]

    def general_kernel(*_args, **_kwargs):
        raise AssertionError("a runner fell back to the general kernel")

    from nnrt_onnx.kernels import conv as reference_conv

    monkeypatch.setattr(conv, "_conv_common", general_kernel)
    monkeypatch.setattr(reference_conv, "_conv_common", general_kernel)
    kept = [ex.run_arrays(pair)[0] for pair in inputs]  # (again and again: per-thread buffers reused)
    for pair, want, got in zip(inputs, expected, kept):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_allclose(kept[0], reference(*inputs[0]), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(kept[1], reference(*inputs[1]), rtol=1e-4, atol=1e-4)


def test_runners_call_the_general_kernel_for_inputs_not_as_planned(monkeypatch):
    from nnrt_onnx.accel import tiles as _tiles

    if not _tiles.available():
        pytest.skip("the register tiles need numba and an AVX-512 CPU")
    model, _ = runner_model()
    general = _unspecialised(model, monkeypatch, **{THREADS_EXTENSION: b"1"})
    ex = executor(model, **{THREADS_EXTENSION: b"1"})
    rng = np.random.default_rng(8)
    for step, plain in zip(ex.prepared.steps, general.prepared.steps):
        if not step.fn.__module__.endswith(".runners"):
            continue
        shapes = [ex.prepared.dims[i] for i in step.inputs]
        args = [ex.prepared.constants.get(i) for i in step.inputs]
        args = [rng.standard_normal(s).astype(np.float32) if a is None else a for s, a in zip(shapes, args)]
        out_shape = ex.prepared.dims[step.outputs[0]]
        want = plain.fn(*args, **plain.kwargs)
        np.testing.assert_array_equal(step.fn(*args), want)  # no out: the general kernel allocates
        fortran = np.asfortranarray(args[0])  # the planned shape, other strides
        np.testing.assert_array_equal(step.fn(fortran, *args[1:], out=np.empty(out_shape, np.float32)), want)
        sliced = np.empty(out_shape[:-1] + (out_shape[-1] + 1,), np.float32)[..., 1:]  # a concatenation's slice
        assert step.fn(*args, out=sliced) is sliced
        np.testing.assert_array_equal(sliced, want)
        uneven = np.empty(out_shape[:2] + (out_shape[2] + 1, out_shape[3]), np.float32)[:, :, 1:]  # rows: not one
        np.testing.assert_array_equal(step.fn(*args, out=uneven), want)  # stride apart (the kernel's own array)
        doubled = np.empty(out_shape, np.float64)
        np.testing.assert_array_equal(step.fn(*args, out=doubled), want)  # (the general kernel: its own array)


def test_no_tile_runners_when_the_plan_runs_blas_on_two_threads(monkeypatch):
    from nnrt_onnx.accel import tiles as _tiles

    if not _tiles.available():
        pytest.skip("the register tiles need numba and an AVX-512 CPU")
    model, reference = runner_model()
    ex = executor(model, **{THREADS_EXTENSION: b"2"})
    # the tiles run one thread: the products stay with BLAS (Winograd's and kn2row's inside their runners, the 1x1
    # of stride 1 in its own; the others take the general kernels)
    assert _runner_kinds(ex) == ["blas_1x1"] + ["depthwise_3x3"] * 2 + ["kn2row", "winograd"]
    general = _unspecialised(model, monkeypatch, **{THREADS_EXTENSION: b"2"})
    rng = np.random.default_rng(4)
    x, r = (rng.standard_normal(shape).astype(np.float32) for shape in ((1, 42, 40, 16), (1, 42, 40, 32)))
    (y,) = ex.run_arrays([x, r])
    np.testing.assert_array_equal(y, general.run_arrays([x, r])[0])
    np.testing.assert_allclose(y, reference(x, r), rtol=1e-4, atol=1e-4)


def test_runners_keep_their_buffers_per_thread():
    # two threads run one compiled model at once: the padded images and strided rows of the runners are per thread
    model, _ = runner_model()
    ex = executor(model, **{THREADS_EXTENSION: b"1"})
    rng = np.random.default_rng(6)
    inputs = [[rng.standard_normal((1, 42, 40, 16)).astype(np.float32),
               rng.standard_normal((1, 42, 40, 32)).astype(np.float32)] for _ in range(2)]
    expected = [ex.run_arrays(pair)[0] for pair in inputs]
    failures = []

    def work(k):
        for _ in range(15):
            (got,) = ex.run_arrays(inputs[k])
            if not np.array_equal(got, expected[k]):
                failures.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def linear_layer(constant_weight=True, bias_shape=(96,), transpose_b=False):
    """x [1, 128, 64], r [1, 128, 96] -> MATMUL by W [64, 96] (a model input when not ``constant_weight``) -> ADD
    of a bias constant -> MUL by a per-column scale -> ADD of r with fused RELU -> y: a transformer's linear layer
    and residual. Returns the model and the float64 oracle of y(x, r[, w])."""
    rng = np.random.default_rng(12)
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 128, 64]))
    r = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 128, 96]))
    w = (rng.standard_normal((96, 64) if transpose_b else (64, 96)) / 8).astype(np.float32)
    b = rng.standard_normal(bias_shape).astype(np.float32)
    scale = rng.standard_normal(96).astype(np.float32)
    weight = m.add_constant(w) if constant_weight else m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, list(w.shape)))
    product, biased, scaled, y = (m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 128, 96])) for _ in range(4))
    params = [m.add_param(TT.OH_NN_MATMUL_TRANSPOSE_B, True)] if transpose_b else []
    m.add_operation(OP.OH_NN_OPS_MATMUL, params, [x, weight], [product])
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 0)], [m.add_constant(b), product],
                    [biased])
    m.add_operation(OP.OH_NN_OPS_MUL, [m.add_param(TT.OH_NN_MUL_ACTIVATION_TYPE, 0)], [biased, m.add_constant(scale)],
                    [scaled])
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 1)], [scaled, r], [y])
    m.specify_inputs_and_outputs([x, r] if constant_weight else [x, r, weight], [y])
    m.finish()

    def reference(xv, rv):
        w64 = w.T.astype(np.float64) if transpose_b else w.astype(np.float64)
        return np.maximum((xv.astype(np.float64) @ w64 + b) * scale + rv, 0)

    return m, reference, w


def test_linear_layer_fuses_its_bias_scale_and_residual_into_the_matmul(monkeypatch):
    """MATMUL by a constant matrix and the ADD/MUL by per-column constants, the residual ADD and its activation
    after it: one step (the rows' product finished as it is stored), within float32 rounding of the unfused steps
    (a run with capture takes them) and of the float64 oracle; where the register tiles run, through a runner
    bit-identical to the general kernel."""
    from nnrt_onnx.accel import tiles as _tiles

    model, reference, _ = linear_layer()
    ex = executor(model, **{THREADS_EXTENSION: b"1"})
    assert [s.op for s in ex.prepared.steps] == [OP.OH_NN_OPS_MATMUL]
    assert len(ex.prepared._plain_steps) == 4
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 128, 64)).astype(np.float32)
    r = rng.standard_normal((1, 128, 96)).astype(np.float32)
    (fused,) = ex.run_arrays([x, r])
    (plain,) = unfused_run(ex, [x, r])
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fused, reference(x, r), rtol=1e-4, atol=1e-4)
    if _tiles.available():
        assert _runner_kinds(ex) == ["rows_product"]
        general = _unspecialised(model, monkeypatch, **{THREADS_EXTENSION: b"1"})
        assert _runner_kinds(general) == []
        np.testing.assert_array_equal(general.run_arrays([x, r])[0], fused)


@pytest.mark.parametrize("variant", [dict(constant_weight=False), dict(transpose_b=True),
                                     dict(bias_shape=(128, 96))])
def test_linear_layer_not_fused_without_a_constant_matrix_or_column_vectors(variant):
    model, reference, w = linear_layer(**variant)
    ex = executor(model)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 128, 64)).astype(np.float32)
    r = rng.standard_normal((1, 128, 96)).astype(np.float32)
    inputs = [x, r] if variant.get("constant_weight", True) else [x, r, w]
    assert len(ex.prepared.steps) == 4  # (a bias of another shape stops the chain: the MUL and residual stay too)
    np.testing.assert_allclose(ex.run_arrays(inputs)[0], reference(x, r), rtol=1e-4, atol=1e-4)


def nchw_image_model(reader="conv", expose=False, perm=(0, 2, 3, 1)):
    """x [1, 3, 96, 96] (NCHW) -> TRANSPOSE ``perm`` -> a 3x3/2 SAME CONV2D 3 -> 32 with RELU (or, ``reader`` =
    "depthwise", a 3x3 depthwise one) -> y [1, 48, 48, C]; the transposed image also an output when ``expose``.
    Returns the model and the float64 oracle."""
    rng = np.random.default_rng(13)
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 3, 96, 96]))
    shape = [[1, 3, 96, 96][p] for p in perm]
    image = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, shape))
    m.add_operation(OP.OH_NN_OPS_TRANSPOSE, [], [x, m.add_constant(np.array(perm, np.int64))], [image])
    depthwise = reader == "depthwise"
    w = rng.standard_normal((3 if depthwise else 32, 3, 3, 1 if depthwise else 3)).astype(np.float32)
    b = rng.standard_normal(w.shape[0]).astype(np.float32)
    y = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 48, 48, w.shape[0]]))
    prefix = "DEPTHWISE_CONV2D_NATIVE" if depthwise else "CONV2D"
    m.add_operation(OP[f"OH_NN_OPS_{prefix}"], [m.add_param(TT[f"OH_NN_{prefix}_PAD_MODE"], 0),
                                                m.add_param(TT[f"OH_NN_{prefix}_STRIDES"], [2, 2]),
                                                m.add_param(TT[f"OH_NN_{prefix}_ACTIVATION_TYPE"], 1)],
                    [image, m.add_constant(w), m.add_constant(b)], [y])
    m.specify_inputs_and_outputs([x], [y, image] if expose else [y])
    m.finish()

    def reference(xv):
        return np.maximum(conv64(xv.transpose(0, 2, 3, 1), w.astype(np.float64), b, stride=2, depthwise=depthwise),
                          0)

    return m, reference


def test_an_nchw_images_transpose_folds_into_the_first_convolution(monkeypatch):
    """The TRANSPOSE step disappears: the convolution reads the NCHW image (the direct convolution's runner lays it
    out as it pads it); exactly the unfused steps' values (a run with capture takes them), the float64 oracle's
    within float32 rounding, run after run."""
    from nnrt_onnx.accel import tiles as _tiles

    model, reference = nchw_image_model()
    ex = executor(model, **{THREADS_EXTENSION: b"1"})
    assert [s.op for s in ex.prepared.steps] == [OP.OH_NN_OPS_CONV2D]
    if _tiles.available():
        assert _runner_kinds(ex) == ["direct"]
    general = _unspecialised(model, monkeypatch, **{THREADS_EXTENSION: b"1"})
    assert [s.kwargs.get("nchw") for s in general.prepared.steps] == [True]
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = rng.standard_normal((1, 3, 96, 96)).astype(np.float32)
        (y,) = ex.run_arrays([x])
        (plain,) = unfused_run(ex, [x])
        np.testing.assert_array_equal(y, plain)
        np.testing.assert_array_equal(general.run_arrays([x])[0], y)
        np.testing.assert_allclose(y, reference(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("variant", [dict(reader="depthwise"), dict(expose=True), dict(perm=(0, 3, 2, 1))])
def test_an_nchw_images_transpose_stays_for_other_readers_and_permutations(variant):
    model, reference = nchw_image_model(**variant)
    ex = executor(model)
    assert OP.OH_NN_OPS_TRANSPOSE in [s.op for s in ex.prepared.steps]
    if variant.get("perm") is None:
        x = np.random.default_rng(4).standard_normal((1, 3, 96, 96)).astype(np.float32)
        np.testing.assert_allclose(ex.run_arrays([x])[0], reference(x), rtol=1e-4, atol=1e-4)


def pool64(x, k, stride, pads, kind):
    """A float64 NHWC pooling by hand: padded cells neither win a max nor count in an average."""
    pt, pb, pl, pr = pads
    n, h, w, c = x.shape
    oh, ow = (h + pt + pb - k) // stride + 1, (w + pl + pr - k) // stride + 1
    out = np.empty((n, oh, ow, c))
    for y in range(oh):
        for z in range(ow):
            window = x[:, max(0, y * stride - pt):y * stride - pt + k, max(0, z * stride - pl):z * stride - pl + k]
            out[:, y, z] = window.max(axis=(1, 2)) if kind == "max" else window.mean(axis=(1, 2))
    return out


def test_pooling_steps_run_through_runners_bit_identical_to_the_general_kernels(monkeypatch):
    """x [1, 30, 28, 32] -> 3x3/2 MAX_POOL (padded at the top and right) -> 3x3/1 AVG_POOL (padded all round)
    -> 2x2/2 MAX_POOL -> y: each a runner making the one AVX-512 call, bit-identical to the general kernels
    (NaN and -inf inputs too) and the float64 oracle's within float32 rounding."""
    from nnrt_onnx.accel import avx512 as _avx512

    if _avx512.compiled("pool_vectors", "pool") is None:
        pytest.skip("needs numba and an AVX-512 CPU")
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 30, 28, 32]))
    layers = [("MAX", 3, 2, [1, 0, 0, 1], [1, 15, 14, 32]), ("AVG", 3, 1, [1, 1, 1, 1], [1, 15, 14, 32]),
              ("MAX", 2, 2, [0, 0, 0, 0], [1, 7, 7, 32])]
    current = x
    for kind, k, stride, pads, dims in layers:
        out = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, dims))
        m.add_operation(OP[f"OH_NN_OPS_{kind}_POOL"], [m.add_param(TT[f"OH_NN_{kind}_POOL_KERNEL_SIZE"], [k, k]),
                                                       m.add_param(TT[f"OH_NN_{kind}_POOL_STRIDE"], [stride, stride]),
                                                       m.add_param(TT[f"OH_NN_{kind}_POOL_PAD"], pads)],
                        [current], [out])
        current = out
    m.specify_inputs_and_outputs([x], [current])
    m.finish()
    ex = executor(m, **{THREADS_EXTENSION: b"1"})
    assert _runner_kinds(ex) == ["pooling"] * 3
    general = _unspecialised(m, monkeypatch, **{THREADS_EXTENSION: b"1"})
    rng = np.random.default_rng(9)
    xv = rng.standard_normal((1, 30, 28, 32)).astype(np.float32)
    want = xv.astype(np.float64)
    for kind, k, stride, pads, _ in layers:
        want = pool64(want, k, stride, pads, kind.lower())
    (y,) = ex.run_arrays([xv])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(y, general.run_arrays([xv])[0])
    xv[0, :3, :3, :2] = [[np.nan, -np.inf]] * 3
    (y,) = ex.run_arrays([xv])
    np.testing.assert_array_equal(y, general.run_arrays([xv])[0])
    assert np.isnan(y[0, 0, 0, 0])


def test_capture_sees_what_the_production_plan_computes():
    # a Winograd convolution (in its last bits not the reference's values) read by a RELU: a run with capture
    # returns the production plan's values for the convolution's output and the model's, bit for bit -- not a
    # re-run of the reference kernels (which the check shows to differ here). (The convolution's output is a model
    # output too, so the RELU stays a step of its own: the activation fusion would hide it.)
    from accel_support import reference_executor

    rng = np.random.default_rng(21)
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 12, 12, 64]))
    conv_out, y = (m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 12, 12, 64])) for _ in range(2))
    add_same_conv(m, False, x, (rng.standard_normal((64, 3, 3, 64)) / 24).astype(np.float32),
                  rng.standard_normal(64).astype(np.float32), conv_out)
    m.add_operation(OP.OH_NN_OPS_RELU, [], [conv_out], [y])
    m.specify_inputs_and_outputs([x], [y, conv_out])
    m.finish()
    ex = executor(m)
    xv = rng.standard_normal((1, 12, 12, 64)).astype(np.float32)
    (plain, _) = ex.run_arrays([xv])
    capture = {conv_out: None, y: None}
    (got, _) = ex.run_arrays([xv], capture=capture)
    assert got.tobytes() == plain.tobytes() == capture[y].tobytes()
    assert np.maximum(capture[conv_out], 0).tobytes() == plain.tobytes()
    (reference, _) = reference_executor(m).run_arrays([xv])
    assert reference.tobytes() != plain.tobytes()  # (the two plans do differ in their last bits here)
    np.testing.assert_allclose(plain, reference, rtol=1e-4, atol=1e-4)


def test_the_plans_fusion_passes_report_what_they_did():
    # the pass manager on the execution plan (nnrt_onnx.passes with plan.plan_structure): each pass's name, whether
    # it modified the plan (observed), the step counts before and after, and its own count
    from nnrt_onnx.passes import PassResult

    ex = executor(erf_gelu_model())
    results = {r.name: r for r in ex.prepared.pass_results}
    assert list(results) == ["fuse_gru_cells", "fuse_conv_post_ops", "fuse_erf_gelu", "fuse_input_transpose",
                             "fuse_activations", "assemble_concats"]
    assert results["fuse_erf_gelu"] == PassResult("fuse_erf_gelu", True, 5, 1, {"fused_gelus": 1})
    assert results["fuse_conv_post_ops"] == PassResult("fuse_conv_post_ops", False, 5, 5, {"fused_steps": 0})
    assert not results["assemble_concats"].modified and results["assemble_concats"].nodes_after == 1
    model, _ = conv_scale_shift("conv", 3, 6)
    (_, first, *rest) = executor(model).prepared.pass_results
    assert first == PassResult("fuse_conv_post_ops", True, 3, 1, {"fused_steps": 1})
    assert not any(r.modified for r in rest)
