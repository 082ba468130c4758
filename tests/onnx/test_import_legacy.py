"""Import of the opset 1-6 broadcasting ops (Add/Sub/Mul/Div/Pow with broadcast/axis, PRelu, Gemm's broadcast).

Neither onnxruntime (no kernels before opset 7) nor onnx.reference (numpy broadcasting only) implements the axis-
aligned broadcast, so the oracle is numpy on B reshaped by hand to the aligned shape each case states; the
suffix-aligned cases are also checked against onnx.reference."""
from __future__ import annotations

import numpy as np
import pytest
import support
from onnx import helper

from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import.importer import from_onnx

F = np.float32
NUMPY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power}


def _rand(seed, shape, dtype=F, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(low), int(high), size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def _model(nodes, inputs: dict, initializers: dict | None = None, opset: int = 6, outputs=("y",)):
    return support.onnx_model(nodes, inputs, initializers, opset, outputs)


_run = support.run_imported


def _compare(actual, expected):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(actual, expected)


# ----------------------------------------------------------------------------------------------------------------
# Add / Sub / Mul / Div / Pow

# op, A shape, B shape, attrs, B aligned by hand (None: B as is), B constant?, dtype, opset
BINARY_CASES = {
    "add_axis1_const": ("Add", (2, 3, 4, 5), (3, 4), dict(broadcast=1, axis=1), (1, 3, 4, 1), True, F, 6),
    "add_scalar": ("Add", (2, 3), (), dict(broadcast=1), None, True, F, 6),
    "add_one_element_rank2": ("Add", (2, 3, 4), (1, 1), dict(broadcast=1), None, False, F, 6),
    "add_int32_axis0_runtime": ("Add", (3, 2, 2), (3,), dict(broadcast=1, axis=0), (3, 1, 1), False, np.int32, 6),
    "sub_axis0_runtime": ("Sub", (2, 3, 4), (2,), dict(broadcast=1, axis=0), (2, 1, 1), False, F, 6),
    "sub_suffix": ("Sub", (2, 3, 4), (4,), dict(broadcast=1), None, True, F, 6),
    "mul_suffix_rank2": ("Mul", (2, 3, 4), (3, 4), dict(broadcast=1), None, False, F, 6),
    "mul_equal_shapes": ("Mul", (2, 3), (2, 3), {}, None, False, F, 6),
    "mul_opset1_consumed_inputs": ("Mul", (2, 3), (2, 3), dict(consumed_inputs=[0, 0]), None, False, F, 5),
    "div_size1_dim_axis0": ("Div", (2, 3), (2, 1), dict(broadcast=1, axis=0), (2, 1), True, F, 6),
    "div_axis_middle_runtime": ("Div", (2, 3, 4, 2), (3, 4), dict(broadcast=1, axis=1), (1, 3, 4, 1), False, F, 6),
    "div_opset1_broadcast": ("Div", (2, 4), (4,), dict(broadcast=1, consumed_inputs=[0, 0]), None, True, F, 1),
    "pow_axis1": ("Pow", (2, 3, 4), (3,), dict(broadcast=1, axis=1), (1, 3, 1), True, F, 6),
    "pow_equal_shapes_opset1": ("Pow", (2, 3), (2, 3), {}, None, False, F, 1),
}


@pytest.mark.parametrize("case", sorted(BINARY_CASES))
def test_binary(case):
    op, a_shape, b_shape, attrs, aligned, constant, dtype, opset = BINARY_CASES[case]
    low = 0.5 if op in ("Pow", "Div") else -2.0
    a = _rand(1, a_shape, dtype, low, 3.0 if dtype == F else 9)
    b = _rand(2, b_shape, dtype, low if dtype == F else 1, 2.0 if dtype == F else 5)
    node = helper.make_node(op, ["a", "b"], ["y"], **attrs)
    inputs, inits = ({"a": a}, {"b": b}) if constant else ({"a": a, "b": b}, {})
    model = _model(node, inputs, inits, opset=opset)
    (actual,), result = _run(model, inputs)
    expected = NUMPY[op](a, b if aligned is None else b.reshape(aligned)).astype(dtype)
    _compare(actual, expected)
    if aligned is None:  # numpy broadcasting means the same: onnx.reference agrees
        from onnx.reference import ReferenceEvaluator

        _compare(actual, ReferenceEvaluator(model).run(None, {"a": a, "b": b})[0])
    assert result.stats["opset"] == opset


BINARY_REJECTED = {
    "add_unequal_without_broadcast": ("Add", (2, 3), (3,), {}, 6, "needs equal shapes"),
    "sub_axis_without_broadcast": ("Sub", (2, 3), (2, 3), dict(axis=0), 6, "axis=0 needs broadcast=1"),
    "mul_mismatch_at_axis": ("Mul", (2, 3, 4), (3,), dict(broadcast=1, axis=2), 6, "does not match"),
    "div_does_not_fit": ("Div", (2, 3), (3, 2), dict(broadcast=1, axis=1), 6, "does not fit"),
    "add_consumed_inputs_at_opset6": ("Add", (2, 3), (2, 3), dict(consumed_inputs=[0, 0]), 6,
                                      "consumed_inputs is not an attribute"),
    "pow_broadcast_2": ("Pow", (2, 3), (3,), dict(broadcast=2), 6, "broadcast=2"),
    "add_broadcast_at_opset7": ("Add", (2, 3), (3,), dict(broadcast=1), 7, "['broadcast']"),
}


@pytest.mark.parametrize("case", sorted(BINARY_REJECTED))
def test_binary_rejected(case):
    op, a_shape, b_shape, attrs, opset, words = BINARY_REJECTED[case]
    a, b = _rand(3, a_shape), _rand(4, b_shape)
    model = _model(helper.make_node(op, ["a", "b"], ["y"], **attrs), {"a": a, "b": b}, opset=opset)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    assert words in str(info.value)


# ----------------------------------------------------------------------------------------------------------------
# PRelu

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
def test_prelu(case):
    x_shape, s_shape, aligned, constant, opset, attrs = PRELU_CASES[case]
    x, slope = _rand(5, x_shape), _rand(6, s_shape, low=0.0, high=0.5)
    inputs, inits = ({"x": x}, {"s": slope}) if constant else ({"x": x, "s": slope}, {})
    model = _model(helper.make_node("PRelu", ["x", "s"], ["y"], **attrs), inputs, inits, opset=opset)
    (actual,), result = _run(model, inputs)
    s = slope if aligned is None else slope.reshape(aligned)
    _compare(actual, np.where(x < 0, x * s, x).astype(F))
    if case == "prelu_rank4_per_channel":
        assert OP.OH_NN_OPS_PRELU in {op.op for op in result.model.operations}


def test_prelu_slope_not_per_channel_rejected():
    x, slope = _rand(7, (2, 3, 4)), _rand(8, (5,))
    model = _model(helper.make_node("PRelu", ["x", "s"], ["y"]), {"x": x}, {"s": slope}, opset=6)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    assert "slope [5] is neither one element, nor one per channel" in str(info.value)


# ----------------------------------------------------------------------------------------------------------------
# Gemm's broadcast (opset < 7)

# C shape, C constant?, attrs
GEMM_CASES = {
    "gemm_broadcast_bias_const": ((4,), True, dict(broadcast=1, transB=1)),
    "gemm_broadcast_one_element_beta0": ((1,), True, dict(broadcast=1, beta=0.0, transB=1)),
    "gemm_broadcast_runtime_c": ((4,), False, dict(broadcast=1, alpha=0.5, beta=2.0, transB=1)),
    "gemm_no_broadcast_full_c": ((2, 4), False, dict(transB=1)),
    "gemm_no_broadcast_full_c_const": ((2, 4), True, dict(broadcast=0, beta=0.5, transB=1)),
}


@pytest.mark.parametrize("case", sorted(GEMM_CASES))
def test_gemm(case):
    """numpy oracle: onnx.reference's broadcast=0 path adds C without beta."""
    c_shape, constant, attrs = GEMM_CASES[case]
    a, w, c = _rand(9, (2, 3)), _rand(10, (4, 3)), _rand(11, c_shape)
    inputs, inits = ({"a": a}, {"w": w, "c": c}) if constant else ({"a": a, "c": c}, {"w": w})
    model = _model(helper.make_node("Gemm", ["a", "w", "c"], ["y"], **attrs), inputs, inits, opset=6)
    (actual,), _ = _run(model, inputs)
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    _compare(actual, (alpha * (a @ w.T) + beta * c).astype(F))


@pytest.mark.parametrize("opset, attrs, words", [
    (6, dict(transB=1), "without broadcast=1 needs C of the output shape [2, 4], got [4]"),
    (11, dict(transB=1, broadcast=1), "['broadcast']"),
], ids=["gemm_c_needs_broadcast", "gemm_broadcast_at_opset11"])
def test_gemm_rejected(opset, attrs, words):
    a, w, c = _rand(12, (2, 3)), _rand(13, (4, 3)), _rand(14, (4,))
    model = _model(helper.make_node("Gemm", ["a", "w", "c"], ["y"], **attrs), {"a": a}, {"w": w, "c": c}, opset=opset)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    assert words in str(info.value)
