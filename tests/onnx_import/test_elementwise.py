"""Import of the elementwise family (unary math, Pow, Max/Min/Mean/Sum, Mod, comparisons, logic, Where, Cast,
CastLike, BitwiseNot, BitShift, and Add/Sub/Mul/Div/Pow of opsets 1-6): small models converted, run natively and
compared with onnxruntime (or onnx.reference, or numpy where neither implements the case): what the node suite
misses (other dtypes, opsets, attribute values, decomposition edge cases) and the rejections at import.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx import TensorProto as TP
from support import onnx_model, run_imported

from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx
from onnx_import.import_support import (
    F16,
    F32,
    F64,
    F,
    V,
    check,
    check_graph,
    compare,
    const_tensor,
    dynamic_model,
    graph_model,
    node_model,
    rand_uniform,
    randn,
    rejects,
    rejects_graph,
    run_ours,
    runs_like_onnxruntime,
)

# -- unary math --------------------------------------------------------------------------------------------------------

def test_neg_rejects_unsigned():
    rejects("Neg", {"x": np.arange(6, dtype=np.uint8)}, "unsupported_dtype", 13, match="uint8")


def test_sinh_is_exact_near_zero():
    x = np.array([1e-7, -3e-6, 1e-4, 1e-3, 0.1], F32)
    (y,) = run_ours(node_model("Sinh", {"x": x}, 9, {}), {"x": x})
    np.testing.assert_allclose(y, np.sinh(x.astype(F64)), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64])
def test_bitwise_not(rng, dtype):
    info = np.iinfo(dtype)
    x = np.concatenate([rng.integers(info.min, info.max, 10, dtype=dtype, endpoint=True),
                        np.array([info.min, info.max, 0], dtype)])
    (got,) = run_ours(node_model("BitwiseNot", {"x": x}, 18, {}), {"x": x})
    np.testing.assert_array_equal(got, np.invert(x))


def test_bitwise_not_rejects_bool():
    rejects("BitwiseNot", {"x": np.zeros(3, np.bool_)}, "unsupported_dtype", 18)


# -- binary / n-ary ----------------------------------------------------------------------------------------------------

POW = [(F32, F32), (F32, np.int64), (F32, np.int32), (F16, F32), (F64, F64), (np.int32, F32), (np.int64, F32),
       (np.int32, np.int32), (np.int64, np.int64), (np.int32, np.int64), (np.int64, np.int32)]


@pytest.mark.parametrize("tx,ty", POW, ids=[f"{np.dtype(a).name}^{np.dtype(b).name}" for a, b in POW])
def test_pow_types(rng, tx, ty):
    x = (rng.integers(1, 6, (3, 4)) if np.dtype(tx).kind in "iu" else rng.random((3, 4)) * 3 + 0.1).astype(tx)
    y = (rng.integers(0, 4, (4,)) if np.dtype(ty).kind in "iu" else rng.random((4,)) * 3).astype(ty)
    check("Pow", {"x": x, "y": y}, 15, rtol=2e-3 if F16 in (tx, ty) else 1e-5)


@pytest.mark.parametrize("dtype", [F32, F16, F64, np.int8, np.int32, np.int64, np.uint16, np.uint64])
@pytest.mark.parametrize("op", ["Max", "Min"])
def test_max_min_three_inputs_broadcast(rng, op, dtype):
    make = (lambda s: rng.integers(0, 100, s).astype(dtype)) if np.dtype(dtype).kind in "iu" else \
        (lambda s: randn(rng, s, dtype))
    check(op, {"a": make((2, 1, 4)), "b": make((3, 1)), "c": make((4,))}, 13)


def test_mean_three_inputs(rng):
    check("Mean", {"a": randn(rng, (2, 3, 4)), "b": randn(rng, (3, 1)), "c": randn(rng, (4,))}, 13)
    check("Mean", {"a": randn(rng, (2, 3), F64), "b": randn(rng, (2, 3), F64)}, 13)


def test_mean_rejects_integers():
    rejects("Mean", {"a": np.ones(3, np.int32), "b": np.ones(3, np.int32)}, "unsupported_dtype", 13)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32, F32, F64, F16])
def test_mod(rng, dtype, fmod):
    if np.dtype(dtype).kind == "f" and fmod == 0:
        x = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 4.0, -4.0, 3.0, -7.25], dtype)
        y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, -3.0, -2.0, 2.0, 7.0, 0.5], dtype)
        (got,) = run_ours(node_model("Mod", {"x": x, "y": y}, 13, {"fmod": 0}), {"x": x, "y": y})
        np.testing.assert_array_equal(got, np.mod(x, y))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(np.mod(x, y)))
        return
    if np.dtype(dtype).kind == "u":
        x, y = rng.integers(0, 100, (3, 4)).astype(dtype), rng.integers(1, 9, (4,)).astype(dtype)
    elif np.dtype(dtype).kind == "i":
        x = rng.integers(-100, 100, (3, 4)).astype(dtype)
        y = (rng.integers(1, 9, (4,)) * rng.choice([-1, 1], (4,))).astype(dtype)
    else:
        x, y = randn(rng, (3, 4), dtype, 10), (randn(rng, (4,), dtype) + 0.5).astype(dtype)
    check("Mod", {"x": x, "y": y}, 13, {"fmod": fmod}, rtol=1e-3 if dtype == F16 else 1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.int64])
@pytest.mark.parametrize("op", ["Div", "Add", "Sub", "Mul"])
def test_integer_arithmetic_broadcast(rng, op, dtype):
    kind = np.dtype(dtype).kind
    x = rng.integers(0 if kind == "u" else -50, 50, (2, 3, 4)).astype(dtype)
    y = rng.integers(1, 7, (3, 1)).astype(dtype)
    if kind == "i":
        y = (y * rng.choice([-1, 1], y.shape)).astype(dtype)
    check(op, {"x": x, "y": y}, 14)


# bool is an ONNX type of Equal only
_COMPARISONS = [(op, dtype) for op in ["Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"]
                for dtype in [F32, np.int32, np.uint8, np.int64, F16, np.bool_] if dtype != np.bool_ or op == "Equal"]


@pytest.mark.parametrize("op,dtype", _COMPARISONS, ids=[f"{op}-{np.dtype(d).name}" for op, d in _COMPARISONS])
def test_comparisons(rng, op, dtype):
    x = rng.integers(0, 3, (2, 3, 4)).astype(dtype)
    y = rng.integers(0, 3, (3, 1)).astype(dtype)
    check(op, {"x": x, "y": y}, 16)


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(rng, op):
    check(op, {"x": rng.random((2, 3, 4)) > 0.5, "y": rng.random((4,)) > 0.5}, 7)


def test_not(rng):
    check("Not", {"x": rng.random((2, 3)) > 0.5}, 1)


@pytest.mark.parametrize("dtype", [F32, np.int64, np.bool_, F16, np.uint8])
def test_where_broadcast(rng, dtype):
    c = rng.random((2, 1, 4)) > 0.5
    check("Where", {"c": c, "x": rng.integers(0, 9, (3, 1)).astype(dtype), "y": rng.integers(0, 9, (4,)).astype(dtype)},
          16)


def test_sum_is_checked_and_one_input_is_identity(rng):
    check("Sum", {"a": randn(rng, (2, 3)), "b": randn(rng, (3,)), "c": randn(rng, (2, 1))}, 13)
    check("Max", {"a": randn(rng, (2, 3))}, 13)


# -- casts -------------------------------------------------------------------------------------------------------------

CASTS = [(F32, TensorProto.INT32), (F32, TensorProto.INT8), (F32, TensorProto.BOOL), (F32, TensorProto.FLOAT16),
         (F64, TensorProto.FLOAT), (np.int64, TensorProto.INT8), (np.int32, TensorProto.FLOAT),
         (np.bool_, TensorProto.FLOAT), (np.int32, TensorProto.UINT8), (F32, TensorProto.FLOAT),
         (np.uint8, TensorProto.INT64), (F16, TensorProto.INT32)]


@pytest.mark.parametrize("opset", [6, 13, 21])
@pytest.mark.parametrize("src,to", CASTS, ids=[f"{np.dtype(s).name}->{TensorProto.DataType.Name(t)}" for s, t in CASTS])
def test_cast(rng, src, to, opset):
    if src == np.bool_:
        x = rng.random((3, 4)) > 0.5
    elif np.dtype(src).kind == "f":
        x = randn(rng, (3, 4), src, 40)
        if to == TensorProto.UINT8 or to == TensorProto.INT8:
            x = np.abs(x)
    else:
        x = rng.integers(0, 300, (3, 4)).astype(src) if np.dtype(src).kind == "u" else \
            rng.integers(-300, 300, (3, 4)).astype(src)
    check("Cast", {"x": x}, opset, {"to": to})


@pytest.mark.parametrize("to", [TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.STRING])
def test_cast_rejects_types_nnrt_has_not(to):
    rejects("Cast", {"x": np.zeros(3, F32)}, "unsupported_dtype", 21, {"to": to},
            match=TensorProto.DataType.Name(to))


def test_castlike(rng):
    check("CastLike", {"x": randn(rng, (3, 4), F32, 20), "like": np.zeros((2,), np.int16)}, 15, constants=("like",))
    check("CastLike", {"x": rng.integers(0, 9, (3,)).astype(np.int64), "like": np.zeros((1,), F16)}, 19,
          constants=("like",))


# -- BitShift ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_bitshift_unsigned_broadcast(rng, direction, dtype):
    bits = np.dtype(dtype).itemsize * 8
    x = rng.integers(0, np.iinfo(dtype).max, (3, 4), dtype=dtype, endpoint=True)
    y = np.asarray([0, 1, bits // 2, bits - 1], dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)
    model = graph_model([node], [V("x", elem, [3, 4])], [V("z", elem, None)], 11, [const_tensor("y", y)])
    check_graph(model, {"x": x})


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_bitshift_opset28_out_of_range(rng, direction, dtype):
    bits = np.dtype(dtype).itemsize * 8
    info = np.iinfo(dtype)
    x = np.concatenate([rng.integers(info.min, info.max, 6, dtype=dtype, endpoint=True),
                        np.asarray([info.min, info.max, 0, 1, -1 if info.min else 2, 7], dtype)]).reshape(2, 6)
    y = np.asarray([0, 1, bits - 2, bits - 1, bits, -1 if info.min else bits + 3], dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)
    model = graph_model([node], [V("x", elem, [2, 6])], [V("z", elem, None)], 28, [const_tensor("y", y)])
    check_graph(model, {"x": x}, reference=True)


def test_bitshift_needs_constant_amounts():
    node = helper.make_node("BitShift", ["x", "y"], ["z"], direction="LEFT")
    model = graph_model([node], [V("x", TP.UINT8, [2]), V("y", TP.UINT8, [2])], [V("z", TP.UINT8, None)], 11)
    rejects_graph(model, "needs_constant_input", "shift amounts")


# -- opsets 1-6: Add / Sub / Mul / Div / Pow with broadcast and axis ---------------------------------------------------

# Opsets 1-6: neither onnxruntime (no kernels before opset 7) nor onnx.reference (numpy broadcasting only)
# implements the axis-aligned broadcast, so the oracle is numpy on B reshaped by hand to the aligned shape each case
# states; the suffix-aligned cases are also checked against onnx.reference.


NUMPY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power}


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
    a = rand_uniform(1, a_shape, dtype, low, 3.0 if dtype == F else 9)
    b = rand_uniform(2, b_shape, dtype, low if dtype == F else 1, 2.0 if dtype == F else 5)
    node = helper.make_node(op, ["a", "b"], ["y"], **attrs)
    inputs, inits = ({"a": a}, {"b": b}) if constant else ({"a": a, "b": b}, {})
    model = onnx_model(node, inputs, inits, opset=opset)
    (actual,), result = run_imported(model, inputs)
    expected = NUMPY[op](a, b if aligned is None else b.reshape(aligned)).astype(dtype)
    compare(actual, expected)
    if aligned is None:  # numpy broadcasting means the same: onnx.reference agrees
        from onnx.reference import ReferenceEvaluator

        compare(actual, ReferenceEvaluator(model).run(None, {"a": a, "b": b})[0])
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
    a, b = rand_uniform(3, a_shape), rand_uniform(4, b_shape)
    model = onnx_model(helper.make_node(op, ["a", "b"], ["y"], **attrs), {"a": a, "b": b}, opset=opset)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    assert words in str(info.value)


# -- n-ary ops over inputs of mixed ranks (issue 26) -------------------------------------------------------------------

@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_nary_ops_of_three_mixed_rank_inputs_with_a_dynamic_dim(op, rng):
    # a partial result has the broadcast shape of the inputs added so far: Sum gave it the final shape ([4, N, 3]
    # for [3] + [N, 1]) and refused the valid model as invalid; the Relu makes ONNX inference state the Sum's shape
    model = dynamic_model([helper.make_node(op, ["a", "b", "c"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
                          [("a", TP.FLOAT, [3]), ("b", TP.FLOAT, ["N", 1]), ("c", TP.FLOAT, [4, 1, 1])],
                          [("y", TP.FLOAT, [4, "N", 3])])
    runs_like_onnxruntime(model, [{"a": randn(rng, (3,)), "b": randn(rng, (n, 1)), "c": randn(rng, (4, 1, 1))}
                                  for n in (1, 2, 3)])
