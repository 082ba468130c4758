"""Data-movement ONNX ops (split, slice, pad, tile, gathers, scatters, one-hot, depth/space, trilu, ...): cases the
node suite does not cover, each converted, run natively and compared with onnxruntime on the same small model."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper
from support import ort_session

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx

V = helper.make_tensor_value_info
FLOAT, INT64, INT32, BOOL = TP.FLOAT, TP.INT64, TP.INT32, TP.BOOL


def _model(nodes, inputs, outputs, opset, inits=()):
    graph = helper.make_graph(nodes, "movement", inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _const(name, array):
    array = np.asarray(array)
    dtype = helper.np_dtype_to_tensor_dtype(array.dtype)
    return helper.make_tensor(name, dtype, array.shape, array.reshape(-1).tolist())


def check(model, feeds, **options):
    """Convert, run natively, compare every output with onnxruntime (exact for non-floats)."""
    want = ort_session(model).run(None, feeds)
    result = from_onnx(model, **options)
    compilation = Compilation(result.model)
    compilation.build()
    arrays = [np.asarray(feeds[result.model.tensors[i].name]) for i in result.model.inputs]
    got = Executor(compilation).run_arrays(arrays)
    assert len(got) == len(want)
    for actual, expected in zip(got, want):
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(actual, expected)
    return result


def rejects(model, reason, text, **options):
    with pytest.raises(ConversionError) as info:
        from_onnx(model, **options)
    issue = info.value.issues[0]
    assert issue.reason == reason and text in issue.message, str(issue)


def x_of(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# -- Split --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split_sizes(rng, opset):
    x = x_of(rng, 2, 7)
    if opset < 13:
        node, inits = helper.make_node("Split", ["x"], ["a", "b", "c"], axis=-1, split=[2, 4, 1]), []
    else:
        node = helper.make_node("Split", ["x", "s"], ["a", "b", "c"], axis=-1)
        inits = [_const("s", np.int64([2, 4, 1]))]
    outs = [V(n, FLOAT, None) for n in "abc"]
    check(_model([node], [V("x", FLOAT, [2, 7])], outs, opset, inits), {"x": x})


def test_split_num_outputs_uneven(rng):
    x = x_of(rng, 7, 3)
    node = helper.make_node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3)
    check(_model([node], [V("x", FLOAT, [7, 3])], [V(n, FLOAT, None) for n in "abc"], 18), {"x": x})


def test_split_dynamic_dim_equal_pieces(rng):
    x = x_of(rng, 4, 6)
    node = helper.make_node("Split", ["x"], ["a", "b"], axis=1)
    check(_model([node], [V("x", FLOAT, ["n", "m"])], [V("a", FLOAT, None), V("b", FLOAT, None)], 13), {"x": x})


def test_split_zero_piece_dropped_by_concat(rng):
    """A zero-size piece is an empty constant: the Concat consuming it drops it (rotary embedding pattern)."""
    x = x_of(rng, 2, 8)
    nodes = [helper.make_node("Split", ["x", "s"], ["a", "b"], axis=1),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Concat", ["r", "b"], ["y"], axis=1)]
    check(_model(nodes, [V("x", FLOAT, [2, 8])], [V("y", FLOAT, None)], 13, [_const("s", np.int64([8, 0]))]),
          {"x": x})


# -- Slice --------------------------------------------------------------------------------------------------------

def test_slice_attributes_opset9(rng):
    x = x_of(rng, 5, 6, 3)
    node = helper.make_node("Slice", ["x"], ["y"], starts=[1, -4], ends=[1000, -1], axes=[0, -2])
    check(_model([node], [V("x", FLOAT, [5, 6, 3])], [V("y", FLOAT, None)], 9), {"x": x})


@pytest.mark.parametrize("starts,ends,steps", [
    ([-1], [-(2 ** 63)], [-1]),  # reverse through index 0 (INT64_MIN end)
    ([2 ** 63 - 1], [0], [-2]),  # start clamped to the last index
    ([1], [2 ** 63 - 1], [3]),
    ([-100], [100], [2]),
], ids=["reverse_all", "neg_step_clamped_start", "step3", "out_of_range_both"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_slice_steps(rng, starts, ends, steps, dynamic):
    x = x_of(rng, 4, 7)
    inits = [_const("s", np.int64(starts)), _const("e", np.int64(ends)), _const("a", np.int64([1])),
             _const("t", np.int64(steps))]
    node = helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])
    check(_model([node], [V("x", FLOAT, [4, "m"] if dynamic else [4, 7])], [V("y", FLOAT, None)], 13, inits),
          {"x": x})


def test_slice_constant_inputs_bound(rng):
    x = x_of(rng, 6, 4)
    node = helper.make_node("Slice", ["x", "s", "e"], ["y"])
    model = _model([node], [V("x", FLOAT, [6, 4]), V("s", INT64, [2]), V("e", INT64, [2])], [V("y", FLOAT, None)], 13)
    rejects(model, "needs_constant_input", "Slice starts")
    bound = {"s": np.int64([1, 1]), "e": np.int64([5, 3])}
    want = x[1:5, 1:3]
    result = from_onnx(model, constant_inputs=bound)
    compilation = Compilation(result.model)
    compilation.build()
    np.testing.assert_array_equal(Executor(compilation).run_arrays([x])[0], want)


# -- Pad ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_attributes_opset2(rng, mode):
    x = x_of(rng, 1, 2, 4, 5)
    node = helper.make_node("Pad", ["x"], ["y"], mode=mode, pads=[0, 0, 1, 2, 0, 0, 3, 1], value=1.5)
    check(_model([node], [V("x", FLOAT, [1, 2, 4, 5])], [V("y", FLOAT, None)], 10), {"x": x})


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_negative_pads_crop(rng, mode):
    x = x_of(rng, 5, 6)
    node = helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)
    check(_model([node], [V("x", FLOAT, [5, 6])], [V("y", FLOAT, None)], 19, [_const("p", np.int64([-1, 2, 2, -3]))]),
          {"x": x})


def test_pad_axes_int_constant_value(rng):
    x = rng.integers(-9, 9, (2, 3, 4)).astype(np.int32)
    node = helper.make_node("Pad", ["x", "p", "v", "a"], ["y"])
    inits = [_const("p", np.int64([1, 0, 2, 3])), _const("v", np.int32(7)), _const("a", np.int64([-1, 0]))]
    check(_model([node], [V("x", INT32, [2, 3, 4])], [V("y", INT32, None)], 18, inits), {"x": x})


def test_pad_reflect_dynamic_dims(rng):
    x = x_of(rng, 3, 5)
    node = helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")
    check(_model([node], [V("x", FLOAT, ["n", "m"])], [V("y", FLOAT, None)], 13, [_const("p", np.int64([1, 2, 1, 2]))]),
          {"x": x})


def test_pad_value_not_exact_in_float32_rejected():
    node = helper.make_node("Pad", ["x", "p", "v"], ["y"])
    inits = [_const("p", np.int64([1, 1])), _const("v", np.int64(2 ** 40 + 1))]
    rejects(_model([node], [V("x", INT64, [3])], [V("y", INT64, None)], 13, inits), "unsupported_attribute",
            "constant_value")


# -- Tile, Gather, GatherND, GatherElements -------------------------------------------------------------------------

def test_tile_with_unit_repeats(rng):
    x = x_of(rng, 2, 1, 3)
    node = helper.make_node("Tile", ["x", "r"], ["y"])
    check(_model([node], [V("x", FLOAT, [2, 1, 3])], [V("y", FLOAT, None)], 13, [_const("r", np.int64([1, 4, 2]))]),
          {"x": x})


def test_gather_dynamic_negative_indices(rng):
    x = x_of(rng, 3, 5)
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=1)
    check(_model([node], [V("x", FLOAT, [3, 5]), V("i", INT64, [2, 2])], [V("y", FLOAT, None)], 13),
          {"x": x, "i": np.int64([[-1, 0], [4, -5]])})


def test_gathernd_batch_dims_dynamic_negative(rng):
    x = x_of(rng, 2, 3, 4, 5)
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=2)
    idx = np.int64([[[[-1], [2]], [[0], [-4]], [[3], [1]]], [[[1], [1]], [[-2], [0]], [[2], [-1]]]])
    check(_model([node], [V("x", FLOAT, [2, 3, 4, 5]), V("i", INT64, [2, 3, 2, 1])], [V("y", FLOAT, None)], 13),
          {"x": x, "i": idx})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_dynamic_indices(rng, axis):
    x = x_of(rng, 3, 4, 2)
    idx = rng.integers(-x.shape[axis], x.shape[axis], (2, 4, 2)).astype(np.int32)
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)
    check(_model([node], [V("x", FLOAT, [3, 4, 2]), V("i", INT32, [2, 4, 2])], [V("y", FLOAT, None)], 13),
          {"x": x, "i": idx})


# -- Scatters -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatternd_dynamic_indices(rng, reduction):
    x = x_of(rng, 4, 3, 2)
    updates = x_of(rng, 2, 2)
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)
    model = _model([node], [V("x", FLOAT, [4, 3, 2]), V("i", INT64, [2, 2]), V("u", FLOAT, [2, 2])],
                   [V("y", FLOAT, None)], 16)
    check(model, {"x": x, "i": np.int64([[-1, 0], [1, 2]]), "u": updates})


def test_scatternd_constant_duplicate_indices_rejected():
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"])
    model = _model([node], [V("x", FLOAT, [4]), V("u", FLOAT, [2])], [V("y", FLOAT, None)], 13,
                   [_const("i", np.int64([[1], [1]]))])
    rejects(model, "unsupported_attribute", "repeated indices")


def test_scatter_elements_axis0_constant_indices(rng):
    x = x_of(rng, 3, 4)
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=0)
    model = _model([node], [V("x", FLOAT, [3, 4]), V("u", FLOAT, [1, 4])], [V("y", FLOAT, None)], 13,
                   [_const("i", np.int64([[2, -3, 1, 0]]))])
    check(model, {"x": x, "u": x_of(rng, 1, 4)})


def test_scatter_opset10(rng):
    x = x_of(rng, 3, 3)
    node = helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1)
    model = _model([node], [V("x", FLOAT, [3, 3]), V("i", INT64, [3, 1]), V("u", FLOAT, [3, 1])],
                   [V("y", FLOAT, None)], 10)
    check(model, {"x": x, "i": np.int64([[2], [0], [1]]), "u": x_of(rng, 3, 1)})


# -- OneHot -------------------------------------------------------------------------------------------------------

def test_onehot_dynamic_values_negative_indices(rng):
    node = helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=0)
    model = _model([node], [V("i", INT32, [2, 3]), V("v", FLOAT, [2])], [V("y", FLOAT, None)], 11,
                   [_const("d", np.float32(5.0))])
    check(model, {"i": np.int32([[0, -1, 4], [-5, 7, -6]]), "v": np.float32([-1.0, 2.5])})


# -- DepthToSpace / SpaceToDepth ------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset,mode", [(1, None), (11, "DCR"), (13, "CRD")])
def test_depth_to_space(rng, opset, mode):
    x = x_of(rng, 2, 12, 2, 3)
    attrs = {"blocksize": 2} if mode is None else {"blocksize": 2, "mode": mode}
    node = helper.make_node("DepthToSpace", ["x"], ["y"], **attrs)
    check(_model([node], [V("x", FLOAT, [2, 12, 2, 3])], [V("y", FLOAT, None)], max(opset, 7)), {"x": x})


def test_space_to_depth_then_depth_to_space_cancels_transposes(rng):
    x = x_of(rng, 1, 3, 4, 6)
    nodes = [helper.make_node("SpaceToDepth", ["x"], ["s"], blocksize=2),
             helper.make_node("DepthToSpace", ["s"], ["y"], blocksize=2)]
    result = check(_model(nodes, [V("x", FLOAT, [1, 3, 4, 6])], [V("y", FLOAT, None)], 13), {"x": x})
    assert result.stats["transposes"] == 2


# -- Trilu, EyeLike, Compress, NonZero, Range ---------------------------------------------------------------------

@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-2, 0, 3])
def test_trilu(rng, upper, k):
    x = x_of(rng, 2, 4, 5)
    x[0, 0, 0] = np.inf  # a mask multiply would turn the masked inf into nan
    node = helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)
    check(_model([node], [V("x", FLOAT, [2, 4, 5])], [V("y", FLOAT, None)], 14, [_const("k", np.int64(k))]),
          {"x": x})


def test_eyelike_feeds_an_op(rng):
    x = x_of(rng, 3, 4)
    nodes = [helper.make_node("EyeLike", ["x"], ["e"], k=-1), helper.make_node("Add", ["x", "e"], ["y"])]
    check(_model(nodes, [V("x", FLOAT, [3, 4])], [V("y", FLOAT, None)], 13), {"x": x})


@pytest.mark.parametrize("axis", [None, 1])
def test_compress_constant_condition(rng, axis):
    x = x_of(rng, 3, 4)
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node("Compress", ["x", "c"], ["y"], **attrs)
    model = _model([node], [V("x", FLOAT, [3, 4])], [V("y", FLOAT, None)], 11,
                   [_const("c", np.array([True, False, True], np.bool_))])
    check(model, {"x": x})


def test_compress_dynamic_condition_rejected():
    node = helper.make_node("Compress", ["x", "c"], ["y"], axis=0)
    model = _model([node], [V("x", FLOAT, [3]), V("c", BOOL, [3])], [V("y", FLOAT, None)], 11)
    rejects(model, "needs_constant_input", "condition")


def test_nonzero_constant_and_range_from_shape(rng):
    """Constant-only ops fold: NonZero of an initializer, Range up to a static Size."""
    x = x_of(rng, 2, 2)
    nodes = [helper.make_node("NonZero", ["m"], ["nz"]),
             helper.make_node("Cast", ["nz"], ["nzf"], to=FLOAT),
             helper.make_node("Size", ["x"], ["n"]),
             helper.make_node("Range", ["zero", "n", "one"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=FLOAT),
             helper.make_node("Reshape", ["rf", "shape"], ["rs"]),
             helper.make_node("Add", ["x", "rs"], ["y"]),
             helper.make_node("Add", ["y", "nzf"], ["z"])]
    inits = [_const("m", np.array([[0, 3], [1, 0]], np.int32)), _const("zero", np.int64(0)),
             _const("one", np.int64(1)), _const("shape", np.int64([2, 2]))]
    check(_model(nodes, [V("x", FLOAT, [2, 2])], [V("z", FLOAT, None)], 13, inits), {"x": x})


def test_nonzero_dynamic_rejected():
    node = helper.make_node("NonZero", ["x"], ["y"])
    rejects(_model([node], [V("x", FLOAT, [3])], [V("y", INT64, None)], 13), "needs_constant_input", "NonZero")


# -- structural ops: Shape, Squeeze/Unsqueeze/Reshape to and from scalars, Constant ----------------------------------

def test_shape_start_end_of_dynamic_tensor(rng):
    x = x_of(rng, 2, 3, 4)
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=1, end=-1),
             helper.make_node("Cast", ["s"], ["y"], to=FLOAT)]
    check(_model(nodes, [V("x", FLOAT, [2, "n", "m"])], [V("y", FLOAT, None)], 15), {"x": x})


def test_scalar_round_trip(rng):
    x = x_of(rng, 1, 1)
    nodes = [helper.make_node("Squeeze", ["x"], ["s"]),
             helper.make_node("Unsqueeze", ["s"], ["u"], axes=[0]),
             helper.make_node("Reshape", ["u", "empty"], ["r"]),
             helper.make_node("Gather", ["g", "idx"], ["y"], axis=0),
             helper.make_node("Add", ["r", "y"], ["z"])]
    inits = [_const("empty", np.zeros(0, np.int64)), _const("g", np.float32([1.0, 2.0, 3.0])),
             _const("idx", np.int64(-1))]
    check(_model(nodes, [V("x", FLOAT, [1, 1])], [V("z", FLOAT, None)], 11, inits), {"x": x})


def test_sparse_constant(rng):
    x = x_of(rng, 2, 3)
    sparse = helper.make_sparse_tensor(helper.make_tensor("v", FLOAT, [2], [5.0, -1.0]),
                                       helper.make_tensor("i", INT64, [2], [1, 5]), [2, 3])
    nodes = [helper.make_node("Constant", [], ["c"], sparse_value=sparse), helper.make_node("Add", ["x", "c"], ["y"])]
    check(_model(nodes, [V("x", FLOAT, [2, 3])], [V("y", FLOAT, None)], 13), {"x": x})
