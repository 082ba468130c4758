"""Import of the indexing family (Slice, gathers, scatters, TensorScatter, OneHot, Trilu, Compress, NonZero,
ReverseSequence): cases the node suite does not cover, each converted, run natively and compared with onnxruntime on
the same small model, and the rejections.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.onnx_import import from_onnx
from onnx_import.import_support import (
    BOOL,
    F32,
    FLOAT,
    I64,
    INT32,
    INT64,
    V,
    check_graph,
    check_graph_ort,
    check_named,
    const_tensor,
    dynamic_model,
    graph_model,
    randn1,
    rejects_graph,
    rejects_named,
    rng_for,
    runs_like_onnxruntime,
    x_of,
)

# -- Slice -------------------------------------------------------------------------------------------------------------

def test_slice_attributes_opset9(rng):
    x = x_of(rng, 5, 6, 3)
    node = helper.make_node("Slice", ["x"], ["y"], starts=[1, -4], ends=[1000, -1], axes=[0, -2])
    check_graph_ort(graph_model([node], [V("x", FLOAT, [5, 6, 3])], [V("y", FLOAT, None)], 9), {"x": x})


@pytest.mark.parametrize("starts,ends,steps", [
    ([-1], [-(2 ** 63)], [-1]),  # reverse through index 0 (INT64_MIN end)
    ([2 ** 63 - 1], [0], [-2]),  # start clamped to the last index
    ([1], [2 ** 63 - 1], [3]),
    ([-100], [100], [2]),
], ids=["reverse_all", "neg_step_clamped_start", "step3", "out_of_range_both"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_slice_steps(rng, starts, ends, steps, dynamic):
    x = x_of(rng, 4, 7)
    inits = [const_tensor("s", np.int64(starts)), const_tensor("e", np.int64(ends)), const_tensor("a", np.int64([1])),
             const_tensor("t", np.int64(steps))]
    node = helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])
    check_graph_ort(graph_model([node], [V("x", FLOAT, [4, "m"] if dynamic else [4, 7])], [V("y", FLOAT, None)], 13, inits),
          {"x": x})


def test_slice_constant_inputs_bound(rng):
    x = x_of(rng, 6, 4)
    node = helper.make_node("Slice", ["x", "s", "e"], ["y"])
    model = graph_model([node], [V("x", FLOAT, [6, 4]), V("s", INT64, [2]), V("e", INT64, [2])], [V("y", FLOAT, None)], 13)
    rejects_graph(model, "needs_constant_input", "Slice starts")
    bound = {"s": np.int64([1, 1]), "e": np.int64([5, 3])}
    want = x[1:5, 1:3]
    result = from_onnx(model, constant_inputs=bound)
    compilation = Compilation(result.model)
    compilation.build()
    np.testing.assert_array_equal(Executor(compilation).run_arrays([x])[0], want)


# -- Gather, GatherND, GatherElements ----------------------------------------------------------------------------------

def test_gather_dynamic_negative_indices(rng):
    x = x_of(rng, 3, 5)
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=1)
    check_graph_ort(graph_model([node], [V("x", FLOAT, [3, 5]), V("i", INT64, [2, 2])], [V("y", FLOAT, None)], 13),
          {"x": x, "i": np.int64([[-1, 0], [4, -5]])})


def test_gathernd_batch_dims_dynamic_negative(rng):
    x = x_of(rng, 2, 3, 4, 5)
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=2)
    idx = np.int64([[[[-1], [2]], [[0], [-4]], [[3], [1]]], [[[1], [1]], [[-2], [0]], [[2], [-1]]]])
    check_graph_ort(graph_model([node], [V("x", FLOAT, [2, 3, 4, 5]), V("i", INT64, [2, 3, 2, 1])], [V("y", FLOAT, None)], 13),
          {"x": x, "i": idx})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_dynamic_indices(rng, axis):
    x = x_of(rng, 3, 4, 2)
    idx = rng.integers(-x.shape[axis], x.shape[axis], (2, 4, 2)).astype(np.int32)
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)
    check_graph_ort(graph_model([node], [V("x", FLOAT, [3, 4, 2]), V("i", INT32, [2, 4, 2])], [V("y", FLOAT, None)], 13),
          {"x": x, "i": idx})


# -- Scatters ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatternd_dynamic_indices(rng, reduction):
    x = x_of(rng, 4, 3, 2)
    updates = x_of(rng, 2, 2)
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)
    model = graph_model([node], [V("x", FLOAT, [4, 3, 2]), V("i", INT64, [2, 2]), V("u", FLOAT, [2, 2])],
                   [V("y", FLOAT, None)], 16)
    check_graph_ort(model, {"x": x, "i": np.int64([[-1, 0], [1, 2]]), "u": updates})


def test_scatternd_constant_duplicate_indices_rejected():
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"])
    model = graph_model([node], [V("x", FLOAT, [4]), V("u", FLOAT, [2])], [V("y", FLOAT, None)], 13,
                   [const_tensor("i", np.int64([[1], [1]]))])
    rejects_graph(model, "unsupported_attribute", "repeated indices")


def test_scatter_elements_axis0_constant_indices(rng):
    x = x_of(rng, 3, 4)
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=0)
    model = graph_model([node], [V("x", FLOAT, [3, 4]), V("u", FLOAT, [1, 4])], [V("y", FLOAT, None)], 13,
                   [const_tensor("i", np.int64([[2, -3, 1, 0]]))])
    check_graph_ort(model, {"x": x, "u": x_of(rng, 1, 4)})


def test_scatter_opset10(rng):
    x = x_of(rng, 3, 3)
    node = helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1)
    model = graph_model([node], [V("x", FLOAT, [3, 3]), V("i", INT64, [3, 1]), V("u", FLOAT, [3, 1])],
                   [V("y", FLOAT, None)], 10)
    check_graph_ort(model, {"x": x, "i": np.int64([[2], [0], [1]]), "u": x_of(rng, 3, 1)})


# -- TensorScatter -----------------------------------------------------------------------------------------------------

SCATTER_CASES = [  # case, cache shape, update length, axis, mode, write indices (None: absent), constant
    ("ts-linear-runtime", (2, 3, 6, 4), 2, -2, "linear", [1, 4], False),
    ("ts-circular-wraps", (2, 2, 5, 3), 3, 2, "circular", [4, 7], False),
    ("ts-linear-constant-axis1", (3, 5, 2), 2, 1, "linear", [0, 3, 2], True),
    ("ts-no-indices", (2, 4, 3), 3, 1, "linear", None, False),
]


@pytest.mark.parametrize("case,shape,seq,axis,mode,writes,constant", SCATTER_CASES, ids=[c[0] for c in SCATTER_CASES])
def test_tensor_scatter(case, shape, seq, axis, mode, writes, constant):
    rng = rng_for(case)
    u_shape = list(shape)
    u_shape[axis] = seq
    inputs = {"past": randn1(rng, shape), "update": randn1(rng, u_shape)}
    if writes is not None:
        inputs["writes"] = np.asarray(writes, I64)
    check_named("TensorScatter", inputs, 24, {"axis": axis, "mode": mode}, constants=("writes",) if constant else ())


def test_tensor_scatter_rejects_constant_overflowing_linear_write():
    inputs = {"past": np.zeros((1, 4, 2), F32), "update": np.zeros((1, 2, 2), F32), "writes": np.asarray([3], I64)}
    rejects_named("TensorScatter", inputs, "invalid_model", 24, {"axis": 1}, constants=("writes",), match="run past")


# -- OneHot, Trilu, Compress, NonZero ----------------------------------------------------------------------------------

def test_onehot_dynamic_values_negative_indices(rng):
    node = helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=0)
    model = graph_model([node], [V("i", INT32, [2, 3]), V("v", FLOAT, [2])], [V("y", FLOAT, None)], 11,
                   [const_tensor("d", np.float32(5.0))])
    check_graph_ort(model, {"i": np.int32([[0, -1, 4], [-5, 7, -6]]), "v": np.float32([-1.0, 2.5])})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-2, 0, 3])
def test_trilu(rng, upper, k):
    x = x_of(rng, 2, 4, 5)
    x[0, 0, 0] = np.inf  # a mask multiply would turn the masked inf into nan
    node = helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)
    check_graph_ort(graph_model([node], [V("x", FLOAT, [2, 4, 5])], [V("y", FLOAT, None)], 14, [const_tensor("k", np.int64(k))]),
          {"x": x})


@pytest.mark.parametrize("axis", [None, 1])
def test_compress_constant_condition(rng, axis):
    x = x_of(rng, 3, 4)
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node("Compress", ["x", "c"], ["y"], **attrs)
    model = graph_model([node], [V("x", FLOAT, [3, 4])], [V("y", FLOAT, None)], 11,
                   [const_tensor("c", np.array([True, False, True], np.bool_))])
    check_graph_ort(model, {"x": x})


def test_compress_dynamic_condition_rejected():
    node = helper.make_node("Compress", ["x", "c"], ["y"], axis=0)
    model = graph_model([node], [V("x", FLOAT, [3]), V("c", BOOL, [3])], [V("y", FLOAT, None)], 11)
    rejects_graph(model, "needs_constant_input", "condition")


def test_nonzero_dynamic_rejected():
    node = helper.make_node("NonZero", ["x"], ["y"])
    rejects_graph(graph_model([node], [V("x", FLOAT, [3])], [V("y", INT64, None)], 13), "needs_constant_input", "NonZero")


# -- ReverseSequence ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("time_axis,batch_axis,lens", [(0, 1, [5, 0, 3]), (1, 0, [1, 5, 2])])
def test_reverse_sequence_rank3(rng, time_axis, batch_axis, lens):
    shape = [5, 3, 2] if time_axis == 0 else [3, 5, 2]
    x = rng.standard_normal(shape).astype(np.float32)
    node = helper.make_node("ReverseSequence", ["x", "L"], ["y"], time_axis=time_axis, batch_axis=batch_axis)
    model = graph_model([node], [V("x", FLOAT, shape)], [V("y", FLOAT, None)], 10, [const_tensor("L", np.int64(lens))])
    check_graph(model, {"x": x})


def test_reverse_sequence_int32(rng):
    x = rng.integers(-50, 50, (4, 3), dtype=np.int32)
    node = helper.make_node("ReverseSequence", ["x", "L"], ["y"])
    model = graph_model([node], [V("x", INT32, [4, 3])], [V("y", INT32, None)], 10, [const_tensor("L", np.int64([4, 2, 3]))])
    check_graph(model, {"x": x})


# -- dynamic dims kept dynamic (issue 26): each model converted with no shape pinned, run at several sizes ------------

def _ints(rng, low, high, shape):
    return rng.integers(low, high, shape).astype(np.int64)


def test_gather_wraps_negative_constant_indices_against_a_dynamic_dim():
    model = dynamic_model([helper.make_node("Gather", ["x", "i"], ["y"], axis=0)], [("x", FLOAT, ["N", 3])],
                          [("y", FLOAT, [2, 3])], [("i", np.asarray([-1, 0], np.int64))])
    rng = rng_for("gather-negative")
    runs_like_onnxruntime(model, [{"x": x_of(rng, n, 3)} for n in (1, 2, 3)])


def test_gather_wraps_negative_runtime_indices_against_a_dynamic_dim():
    # the dim was dynamic, so the negative runtime indices went unwrapped and GATHER failed at run time
    model = dynamic_model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
                          [("x", FLOAT, [2, "N"]), ("i", INT64, [4])], [("y", FLOAT, [2, 4])])
    rng = rng_for("gather-runtime-negative")
    runs_like_onnxruntime(model, [{"x": x_of(rng, 2, n), "i": _ints(rng, -n, n, 4)} for n in (1, 2, 3)])


@pytest.mark.parametrize("axis", [0, 1])
def test_gather_elements_with_negative_indices_on_a_dynamic_batch(axis):
    model = dynamic_model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)],
                          [("x", FLOAT, ["N", 3]), ("i", INT64, ["N", 2])], [("y", FLOAT, ["N", 2])])
    rng = rng_for(f"gather-elements-{axis}")
    bound = {0: lambda n: n, 1: lambda n: 3}[axis]  # the size of the gathered axis
    runs_like_onnxruntime(model, [{"x": x_of(rng, n, 3), "i": _ints(rng, -bound(n), bound(n), (n, 2))}
                                  for n in (1, 2, 3)])


def test_gather_nd_wraps_negative_indices_and_takes_dynamic_batch_dims():
    nodes = [helper.make_node("GatherND", ["x", "i"], ["plain"]), helper.make_node("GatherND", ["x", "j"], ["batched"],
                                                                                    batch_dims=1)]
    model = dynamic_model(nodes, [("x", FLOAT, ["N", 3, 4]), ("j", INT64, ["N", 2, 1])],
                          [("plain", FLOAT, [2, 4]), ("batched", FLOAT, ["N", 2, 4])],
                          [("i", np.asarray([[0, -1], [-1, 2]], np.int64))])
    rng = rng_for("gather-nd")
    runs_like_onnxruntime(model, [{"x": x_of(rng, n, 3, 4), "j": _ints(rng, -3, 3, (n, 2, 1))} for n in (1, 2, 3)])


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatters_into_data_with_a_dynamic_batch(reduction):
    nodes = [helper.make_node("ScatterND", ["x", "i", "u"], ["nd"], reduction=reduction),
             helper.make_node("ScatterElements", ["x", "k", "v"], ["el"], axis=1, reduction=reduction)]
    model = dynamic_model(nodes, [("x", FLOAT, ["N", 3]), ("u", FLOAT, [1, 3]), ("k", INT64, ["N", 1]),
                                  ("v", FLOAT, ["N", 1])],
                          [("nd", FLOAT, ["N", 3]), ("el", FLOAT, ["N", 3])], [("i", np.asarray([[-1]], np.int64))],
                          opset=16)
    rng = rng_for(f"scatter-{reduction}")
    runs_like_onnxruntime(model, [{"x": x_of(rng, n, 3), "u": x_of(rng, 1, 3), "k": _ints(rng, -3, 3, (n, 1)),
                                   "v": x_of(rng, n, 1)} for n in (1, 2, 3)])


def test_compress_without_axis_flattens_a_dynamic_input():
    model = dynamic_model([helper.make_node("Compress", ["x", "c"], ["y"])], [("x", FLOAT, ["N", 3])],
                          [("y", FLOAT, [2])], [("c", np.asarray([0, 1, 1], np.bool_))])
    rng = rng_for("compress")
    runs_like_onnxruntime(model, [{"x": x_of(rng, n, 3)} for n in (1, 2, 3)])


@pytest.mark.parametrize("upper,k", [(1, 0), (1, -1), (0, 1), (0, -2)])
def test_trilu_over_dynamic_matrix_dims(upper, k):
    model = dynamic_model([helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)], [("x", FLOAT, [2, "R", "C"])],
                          [("y", FLOAT, [2, "R", "C"])], [("k", np.asarray(k, np.int64))])
    rng = rng_for(f"trilu-{upper}{k}")
    runs_like_onnxruntime(model, [{"x": x_of(rng, 2, n, 4 - n)} for n in (1, 2, 3)])


@pytest.mark.parametrize("batch_axis,dims", [(1, ["T", 3, 2]), (0, [3, "T"]), (1, ["T", "B"])])
def test_reverse_sequence_over_a_dynamic_time_axis(batch_axis, dims):
    # each entry's source positions from the run-time positions along time (the constant lengths give the batch)
    model = dynamic_model([helper.make_node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=batch_axis,
                                            time_axis=1 - batch_axis)],
                          [("x", FLOAT, dims)], [("y", FLOAT, dims)], [("lens", np.asarray([2, 1, 2], np.int64))])
    rng = rng_for(f"revseq{batch_axis}{dims}")
    runs_like_onnxruntime(model, [{"x": x_of(rng, *[{"T": n, "B": 3}.get(d, d) for d in dims])} for n in (2, 3, 4)])
