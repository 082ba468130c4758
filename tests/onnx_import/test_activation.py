"""Import of the activation family (PRelu of every opset, Clip, Softplus, Shrink, Gelu, Swish, SwiGLU ...): small
models converted, run natively and compared with onnxruntime (onnx.reference where onnxruntime has no kernel, numpy
for the opset 1-6 broadcast): other dtypes, opsets, attribute values, decomposition edge cases and the rejections.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper
from support import onnx_model, run_imported

from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx
from onnx_import.import_support import (
    F16,
    F32,
    F64,
    F,
    check,
    check_named,
    compare,
    node_model,
    rand_uniform,
    randn,
    randn1,
    reference,
    rejects,
    rng_for,
    run_ours,
)

# -- decomposed activations --------------------------------------------------------------------------------------------

def test_softplus_keeps_tiny_values_and_does_not_overflow():
    x = np.array([-80.0, -20.0, -1e-3, 0.0, 20.0, 100.0, 1000.0], F32)
    (y,) = run_ours(node_model("Softplus", {"x": x}, 1, {}), {"x": x})
    np.testing.assert_allclose(y, np.logaddexp(0, x.astype(F64)), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, F32])
def test_shrink_integers(rng, dtype):
    x = rng.integers(0 if np.dtype(dtype).kind == "u" else -6, 7, (4, 6)).astype(dtype)
    check("Shrink", {"x": x}, 9, {"lambd": 1.5, "bias": 2.0})


def test_shrink_rejects_fractional_bias_on_integers():
    rejects("Shrink", {"x": np.arange(4, dtype=np.int32)}, "unsupported_attribute", 9, {"bias": 0.5}, match="bias")


def test_gelu_rejects_unknown_approximation():
    rejects("Gelu", {"x": np.zeros(3, F32)}, "unsupported_attribute", 20, {"approximate": "erf"}, match="approximate")


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_swish(rng, alpha):
    x = randn(rng, (3, 4))
    (y,) = run_ours(node_model("Swish", {"x": x}, 24, {"alpha": alpha}), {"x": x})
    x64 = x.astype(F64)
    np.testing.assert_allclose(y, x64 / (1 + np.exp(-alpha * x64)), rtol=1e-5, atol=1e-6)


# -- PRelu: NNRt PRELU (channel-last) where the slope allows, else WHERE(x < 0, x * slope, x) --------------------------

PRELU = [("nchw-channel", (2, 3, 4, 5), (3, 1, 1)), ("last-axis", (2, 4, 5), (5,)), ("scalar", (2, 3), (1,)),
         ("rank0", (2, 3), ()), ("same-shape", (2, 3, 4), (2, 3, 4)), ("middle-axis", (2, 3, 4), (3, 1)),
         ("rank1", (5,), (5,)), ("broadcast-2d", (2, 3, 4), (1, 4))]


@pytest.mark.parametrize("constant", [True, False], ids=["const-slope", "input-slope"])
@pytest.mark.parametrize("name,x_shape,slope_shape", PRELU, ids=[c[0] for c in PRELU])
def test_prelu(rng, name, x_shape, slope_shape, constant):
    inputs = {"x": randn(rng, x_shape), "slope": np.asarray(rng.random(slope_shape) + 0.1, F32)}
    check("PRelu", inputs, 16, constants=("slope",) if constant else ())


@pytest.mark.parametrize("dtype", [np.int32, np.int64, F64, F16])
def test_prelu_dtypes(rng, dtype):
    x = rng.integers(-9, 9, (2, 3, 4)).astype(dtype)
    slope = rng.integers(1, 4, (3, 1)).astype(dtype)
    check("PRelu", {"x": x, "slope": slope}, 16, constants=("slope",))


def test_prelu_channel_region_uses_nnrt_prelu(rng):
    model = node_model("PRelu", {"x": randn(rng, (1, 3, 4, 4)), "s": np.ones((3, 1, 1), F32)}, 16, {}, constants=("s",))
    ops = {op.op.name for op in from_onnx(model).model.operations}
    assert "OH_NN_OPS_PRELU" in ops and "OH_NN_OPS_WHERE" not in ops


# -- PRelu of opsets 1-6 -----------------------------------------------------------------------------------------------

# Opsets 1-6: neither onnxruntime (no kernels before opset 7) nor onnx.reference (numpy broadcasting only)
# implements the axis-aligned broadcast, so the oracle is numpy on B reshaped by hand to the aligned shape each case
# states; the suffix-aligned cases are also checked against onnx.reference.


# X shape, slope shape, slope aligned by hand (None: as is), slope constant?, opset, attrs
PRELU_CASES = {
    "prelu_rank3_per_channel": ((2, 3, 4), (3,), (3, 1), True, 6, {}),
    "prelu_rank4_per_channel": ((2, 3, 4, 5), (3,), (3, 1, 1), True, 6, {}),
    "prelu_rank5_per_channel_runtime": ((1, 3, 2, 2, 2), (3,), (3, 1, 1, 1), False, 6, {}),
    "prelu_shared": ((2, 3, 4), (1,), None, True, 6, {}),
    "prelu_same_shape": ((2, 3), (2, 3), None, False, 6, {}),
    "prelu_opset1_consumed_inputs": ((2, 4, 3), (4,), (4, 1), True, 1, dict(consumed_inputs=[0])),
}


@pytest.mark.parametrize("case", sorted(PRELU_CASES))
def test_legacy_prelu(case):
    x_shape, s_shape, aligned, constant, opset, attrs = PRELU_CASES[case]
    x, slope = rand_uniform(5, x_shape), rand_uniform(6, s_shape, low=0.0, high=0.5)
    inputs, inits = ({"x": x}, {"s": slope}) if constant else ({"x": x, "s": slope}, {})
    model = onnx_model(helper.make_node("PRelu", ["x", "s"], ["y"], **attrs), inputs, inits, opset=opset)
    (actual,), result = run_imported(model, inputs)
    s = slope if aligned is None else slope.reshape(aligned)
    compare(actual, np.where(x < 0, x * s, x).astype(F))
    if case == "prelu_rank4_per_channel":
        assert OP.OH_NN_OPS_PRELU in {op.op for op in result.model.operations}


def test_prelu_slope_not_per_channel_rejected():
    x, slope = rand_uniform(7, (2, 3, 4)), rand_uniform(8, (5,))
    model = onnx_model(helper.make_node("PRelu", ["x", "s"], ["y"]), {"x": x}, {"s": slope}, opset=6)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    assert "slope [5] is neither one element, nor one per channel" in str(info.value)


# -- Clip across opsets ------------------------------------------------------------------------------------------------

def test_clip_attributes_opset6(rng):
    check("Clip", {"x": randn(rng, (3, 4))}, 6, {"min": -0.5, "max": 1.2})
    check("Clip", {"x": randn(rng, (3, 4))}, 6, {"max": 0.3})


@pytest.mark.parametrize("dtype", [F32, F16, F64, np.int8, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("bounds", ["both", "min", "max", "none", "inverted"])
@pytest.mark.parametrize("constant", [True, False], ids=["const", "input"])
def test_clip_inputs(rng, dtype, bounds, constant):
    unsigned = np.dtype(dtype).kind == "u"
    x = rng.integers(0, 255, (3, 5)).astype(dtype) if unsigned else randn(rng, (3, 5), F64, 50).astype(dtype)
    lo, hi = (10, 5 if unsigned else -3) if bounds == "inverted" else (3 if unsigned else -7, 20)
    names = ["x", "lo" if bounds in ("both", "min", "inverted") else "", "hi" if bounds in ("both", "max", "inverted")
             else ""]
    while names[-1] == "":
        names.pop()
    arrays = {"x": x, "lo": np.array(lo, dtype), "hi": np.array(hi, dtype)}
    consts = [n for n in names[1:] if n] if constant else []
    node = helper.make_node("Clip", names, ["y"])
    graph = helper.make_graph(
        [node], "clip",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), arrays[n].shape)
         for n in names if n and n not in consts],
        [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None)],
        initializer=[numpy_helper.from_array(arrays[n], n) for n in consts])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    feeds = {n: arrays[n] for n in names if n and n not in consts}
    (want,) = reference(model, feeds)
    (got,) = run_ours(model, feeds)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# -- SwiGLU (no onnxruntime kernel: the ONNX reference) ----------------------------------------------------------------

@pytest.mark.parametrize("alpha,dtype", [(1.702, F32), (0.5, F64)], ids=["swiglu-alpha-f32", "swiglu-alpha-f64"])
def test_swiglu(alpha, dtype):
    rng = rng_for(f"swiglu-{alpha}")
    check_named("SwiGLU", {"a": randn1(rng, (3, 4), dtype, 3.0), "b": randn1(rng, (3, 4), dtype)}, 28, {"alpha": alpha},
          against="reference")
