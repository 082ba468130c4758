"""Import of the reduce family (ReduceXxx, ArgMax/ArgMin, TopK, CumSum), compared with onnxruntime on small
one-node models: what the node suite misses (older opsets, other dtypes, ties, noop_with_empty_axes, decomposition
edge cases) and the clear rejections.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from onnx_import.import_support import (
    F16,
    F32,
    I64,
    check_n,
    dynamic_model,
    randint,
    randn,
    rejects_n,
    rng_for,
    run_ours,
    runs_like_onnxruntime,
)


def axes(*values):
    return np.asarray(values, I64)


# -- reductions --------------------------------------------------------------------------------------------------------

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


def _positive(op):
    return op in ("ReduceLogSum",)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("opset", [11, 13, 18])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_attribute_or_input(op, opset, keepdims):
    case = f"{op}-{opset}-{keepdims}"
    rng = rng_for(case)
    x = randn(rng, (2, 3, 4), scale=1.0)
    if _positive(op):
        x = np.abs(x) + 0.1
    input_since = 13 if op == "ReduceSum" else 18
    if opset < input_since:
        check_n(op, {"x": x}, opset, {"axes": [0, -1], "keepdims": keepdims})
    else:
        check_n(op, {"x": x, "axes": axes(0, -1)}, opset, {"keepdims": keepdims}, constants=("axes",))


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_no_axes_reduces_everything(op):
    x = randn(rng_for(op), (3, 4), scale=1.0)
    if _positive(op):
        x = np.abs(x) + 0.1
    check_n(op, {"x": x}, 18, {"keepdims": 0})


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_noop_with_empty_axes(op):
    x = randn(rng_for(f"noop-{op}"), (3, 4), scale=1.0)
    if _positive(op):
        x = np.abs(x) + 0.1
    check_n(op, {"x": x, "axes": np.zeros((0,), I64)}, 18, {"noop_with_empty_axes": 1}, constants=("axes",))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                "ReduceSumSquare"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reduce_integers(op, dtype):
    x = randint(rng_for(f"{op}-{dtype.__name__}"), (3, 5), dtype)
    if op == "ReduceSum":
        check_n(op, {"x": x, "axes": axes(1)}, 13, {"keepdims": 0}, constants=("axes",))
    else:
        check_n(op, {"x": x}, 13, {"axes": [1], "keepdims": 0})


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceL2", "ReduceLogSumExp"])
def test_reduce_float16(op):
    x = randn(rng_for(f"{op}-f16"), (4, 6), F16, scale=1.0)
    check_n(op, {"x": x}, 13, {"axes": [1]} if op != "ReduceSum" else {})


def test_reduce_scalar_input():
    check_n("ReduceSumSquare", {"x": np.asarray(-3.0, F32)}, 18, {"keepdims": 0})


def test_reduce_log_sum_exp_large_values_stay_finite():
    x = np.asarray([[1000.0, 999.0, -5.0], [-1000.0, -1001.0, -999.5]], F32)
    check_n("ReduceLogSumExp", {"x": x}, 13, {"axes": [1]})


def test_reduce_rejects_float_only_op_on_integers():
    rejects_n("ReduceL2", {"x": np.ones((2, 3), np.int32)}, "unsupported_dtype", 13, {"axes": [1]}, match="float")


def test_reduce_needs_constant_axes():
    rejects_n("ReduceMean", {"x": np.ones((2, 3), F32), "axes": axes(1)}, "needs_constant_input", 18)


def test_reduce_empty_axes_input_without_noop_reduces_everything():
    x = randn(rng_for("reduce-empty-axes"), (3, 4))
    check_n("ReduceSum", {"x": x, "axes": np.zeros((0,), I64)}, 13, {"keepdims": 1}, constants=("axes",))


def test_reduce_output_shape_when_inference_cannot_tell():
    """The axes come from a computation shape inference cannot follow: the handler gives the output its shape."""
    x = randn(rng_for("reduce-computed-axes"), (2, 3, 4))
    nodes = [helper.make_node("Constant", [], ["start"], value=numpy_helper.from_array(np.asarray(1, I64))),
             helper.make_node("Constant", [], ["limit"], value=numpy_helper.from_array(np.asarray(3, I64))),
             helper.make_node("Constant", [], ["delta"], value=numpy_helper.from_array(np.asarray(1, I64))),
             helper.make_node("Range", ["start", "limit", "delta"], ["axes"]),
             helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=1),
             helper.make_node("Sub", ["x", "y"], ["z"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    got = run_ours(model, {"x": x})[0]
    np.testing.assert_allclose(got, x - x.mean(axis=(1, 2), keepdims=True), rtol=1e-5, atol=1e-6)


# -- ArgMax / ArgMin ---------------------------------------------------------------------------------------------------

ARG_CASES = [
    ("argmax-opset11-negative-axis", "ArgMax", 11, {"axis": -1, "keepdims": 0}, F32),
    ("argmax-opset1-axis0", "ArgMax", 1, {"axis": 0}, F32),
    ("argmax-last-index-ties-int32", "ArgMax", 13, {"axis": 1, "select_last_index": 1}, np.int32),
    ("argmax-first-index-ties-int32", "ArgMax", 13, {"axis": 1}, np.int32),
    ("argmin-last-index-ties-f32", "ArgMin", 12, {"axis": 0, "select_last_index": 1, "keepdims": 0}, F32),
    ("argmin-int32-extremes", "ArgMin", 13, {"axis": 1}, np.int32),
    ("argmin-uint8", "ArgMin", 13, {"axis": 1, "keepdims": 0}, np.uint8),
    ("argmin-int64-last", "ArgMin", 13, {"axis": -1, "select_last_index": 1}, np.int64),
]


@pytest.mark.parametrize("case,op,opset,attrs,dtype", ARG_CASES, ids=[c[0] for c in ARG_CASES])
def test_arg_max_min(case, op, opset, attrs, dtype):
    rng = rng_for(case)
    if np.dtype(dtype).kind == "f":
        x = rng.integers(-2, 3, (4, 5)).astype(dtype)  # ties
    else:
        x = rng.integers(-2, 3, (4, 5)).astype(np.int64)
        info = np.iinfo(dtype)
        x = np.where(x == 2, info.max, np.where(x == -2, info.min, x)).astype(dtype)
    check_n(op, {"x": x}, opset, attrs)


# -- TopK --------------------------------------------------------------------------------------------------------------

def test_top_k_opset1_k_attribute():
    x = randn(rng_for("topk-1"), (3, 6))
    check_n("TopK", {"x": x}, 1, {"k": 2, "axis": 1}, n_outputs=2)


def test_top_k_opset10_axis0():
    x = randn(rng_for("topk-10"), (5, 3))
    check_n("TopK", {"x": x, "k": np.asarray([3], I64)}, 10, {"axis": 0}, constants=("k",), n_outputs=2)


@pytest.mark.parametrize("dtype", [F32, np.int32, np.int64, np.uint8])
def test_top_k_smallest_with_ties(dtype):
    rng = rng_for(f"topk-smallest-{np.dtype(dtype).name}")
    x = rng.integers(0, 4, (3, 7)).astype(dtype)
    if np.dtype(dtype).kind == "i":
        x[0, 0] = np.iinfo(dtype).min
    check_n("TopK", {"x": x, "k": np.asarray([4], I64)}, 11, {"largest": 0, "axis": -1}, constants=("k",),
          n_outputs=2)


def test_top_k_unsorted_same_set():
    x = randn(rng_for("topk-unsorted"), (2, 8))
    check_n("TopK", {"x": x, "k": np.asarray([3], I64)}, 11, {"sorted": 0}, constants=("k",), n_outputs=2,
          unordered=True)


def test_top_k_middle_axis():
    x = randn(rng_for("topk-mid"), (2, 5, 3))
    check_n("TopK", {"x": x, "k": np.asarray([2], I64)}, 11, {"axis": 1, "largest": 0}, constants=("k",), n_outputs=2)


def test_top_k_rejects_k_beyond_axis():
    rejects_n("TopK", {"x": np.ones((2, 3), F32), "k": np.asarray([4], I64)}, "invalid_model", 11, constants=("k",),
            match="k=4", n_outputs=2)


def test_top_k_non_constant_k():
    x = randn(rng_for("topk-dynamic-k"), (3, 6))
    check_n("TopK", {"x": x, "k": np.asarray([2], I64)}, 11, {}, n_outputs=2)


# -- CumSum ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("attrs", [{}, {"exclusive": 1}, {"reverse": 1}, {"exclusive": 1, "reverse": 1}],
                         ids=["plain", "exclusive", "reverse", "exclusive-reverse"])
@pytest.mark.parametrize("dtype", [F32, np.int64])
def test_cum_sum_middle_axis(attrs, dtype):
    x = randint(rng_for(f"cumsum-{attrs}-{dtype}"), (2, 4, 3), dtype)
    check_n("CumSum", {"x": x, "axis": np.asarray(1, np.int32)}, 14, attrs, constants=("axis",))


def test_cum_sum_needs_constant_axis():
    rejects_n("CumSum", {"x": np.ones((2, 3), F32), "axis": np.asarray(1, np.int32)}, "needs_constant_input", 14)


# -- dynamic axes (issue 26): converted with no shape pinned, run at several sizes -------------------------------------

@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("elem_type,dtype", [(onnx.TensorProto.FLOAT, F32), (onnx.TensorProto.INT64, I64)])
def test_cumsum_along_a_dynamic_axis(exclusive, reverse, elem_type, dtype):
    # the triangle of the product compares the positions along the axis, read at run time
    model = dynamic_model([helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
                          [("x", elem_type, [2, "T"])], [("y", elem_type, [2, "T"])], [("axis", np.asarray(1, I64))])
    rng = rng_for(f"cumsum{exclusive}{reverse}{dtype}")
    runs_like_onnxruntime(model, [{"x": randint(rng, (2, n), dtype) if dtype == I64 else randn(rng, (2, n))}
                                  for n in (1, 2, 3, 6)])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_select_last_index_along_a_dynamic_axis(op, keepdims):
    # ties everywhere (values from {-1, 0, 1}): the last index of the extreme value, along an axis of run-time size
    model = dynamic_model([helper.make_node(op, ["x"], ["y"], axis=0, keepdims=keepdims, select_last_index=1)],
                          [("x", onnx.TensorProto.FLOAT, ["N", 3])],
                          [("y", onnx.TensorProto.INT64, [1, 3] if keepdims else [3])])
    rng = rng_for(f"{op}{keepdims}")
    runs_like_onnxruntime(model, [{"x": rng.integers(-1, 2, (n, 3)).astype(F32)} for n in (1, 2, 3, 5)])


@pytest.mark.parametrize("length", [6, "L"])
@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_carries_nan_and_infinities_only_to_the_sums_after_them(length, exclusive, reverse):
    # a product with the 0/1 triangle spread NaN * 0 = NaN to every sum of the row (a differential fuzzer's find)
    x = np.random.default_rng(4).standard_normal((3, 6)).astype(np.float32)
    x[0, 2], x[1, 1], x[1, 4], x[2, 3] = np.nan, np.inf, -np.inf, np.inf
    model = dynamic_model([helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
                          [("x", onnx.TensorProto.FLOAT, [3, length])], [("y", onnx.TensorProto.FLOAT, [3, length])],
                          [("axis", np.array(1, np.int64))])
    runs_like_onnxruntime(model, [{"x": x}])
