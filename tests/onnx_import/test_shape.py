"""Import of the shape family (Constant, Shape, Reshape/Squeeze/Unsqueeze, Concat, Split, Pad, Tile, Expand,
EyeLike ...): cases the node suite does not cover, each converted, run natively and compared with onnxruntime on the
same small model, and the rejections.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from onnx_import.import_support import (
    F32,
    FLOAT,
    INT32,
    INT64,
    V,
    check,
    check_graph_ort,
    const_tensor,
    graph_model,
    rejects,
    rejects_graph,
    x_of,
)

# -- Split -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split_sizes(rng, opset):
    x = x_of(rng, 2, 7)
    if opset < 13:
        node, inits = helper.make_node("Split", ["x"], ["a", "b", "c"], axis=-1, split=[2, 4, 1]), []
    else:
        node = helper.make_node("Split", ["x", "s"], ["a", "b", "c"], axis=-1)
        inits = [const_tensor("s", np.int64([2, 4, 1]))]
    outs = [V(n, FLOAT, None) for n in "abc"]
    check_graph_ort(graph_model([node], [V("x", FLOAT, [2, 7])], outs, opset, inits), {"x": x})


def test_split_num_outputs_uneven(rng):
    x = x_of(rng, 7, 3)
    node = helper.make_node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3)
    check_graph_ort(graph_model([node], [V("x", FLOAT, [7, 3])], [V(n, FLOAT, None) for n in "abc"], 18), {"x": x})


def test_split_dynamic_dim_equal_pieces(rng):
    x = x_of(rng, 4, 6)
    node = helper.make_node("Split", ["x"], ["a", "b"], axis=1)
    check_graph_ort(graph_model([node], [V("x", FLOAT, ["n", "m"])], [V("a", FLOAT, None), V("b", FLOAT, None)], 13), {"x": x})


def test_split_zero_piece_dropped_by_concat(rng):
    """A zero-size piece is an empty constant: the Concat consuming it drops it (rotary embedding pattern)."""
    x = x_of(rng, 2, 8)
    nodes = [helper.make_node("Split", ["x", "s"], ["a", "b"], axis=1),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Concat", ["r", "b"], ["y"], axis=1)]
    check_graph_ort(graph_model(nodes, [V("x", FLOAT, [2, 8])], [V("y", FLOAT, None)], 13, [const_tensor("s", np.int64([8, 0]))]),
          {"x": x})


# -- Pad ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_attributes_opset2(rng, mode):
    x = x_of(rng, 1, 2, 4, 5)
    node = helper.make_node("Pad", ["x"], ["y"], mode=mode, pads=[0, 0, 1, 2, 0, 0, 3, 1], value=1.5)
    check_graph_ort(graph_model([node], [V("x", FLOAT, [1, 2, 4, 5])], [V("y", FLOAT, None)], 10), {"x": x})


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_negative_pads_crop(rng, mode):
    x = x_of(rng, 5, 6)
    node = helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)
    check_graph_ort(graph_model([node], [V("x", FLOAT, [5, 6])], [V("y", FLOAT, None)], 19, [const_tensor("p", np.int64([-1, 2, 2, -3]))]),
          {"x": x})


def test_pad_axes_int_constant_value(rng):
    x = rng.integers(-9, 9, (2, 3, 4)).astype(np.int32)
    node = helper.make_node("Pad", ["x", "p", "v", "a"], ["y"])
    inits = [const_tensor("p", np.int64([1, 0, 2, 3])), const_tensor("v", np.int32(7)), const_tensor("a", np.int64([-1, 0]))]
    check_graph_ort(graph_model([node], [V("x", INT32, [2, 3, 4])], [V("y", INT32, None)], 18, inits), {"x": x})


def test_pad_reflect_dynamic_dims(rng):
    x = x_of(rng, 3, 5)
    node = helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")
    check_graph_ort(graph_model([node], [V("x", FLOAT, ["n", "m"])], [V("y", FLOAT, None)], 13, [const_tensor("p", np.int64([1, 2, 1, 2]))]),
          {"x": x})


def test_pad_value_not_exact_in_float32_rejected():
    node = helper.make_node("Pad", ["x", "p", "v"], ["y"])
    inits = [const_tensor("p", np.int64([1, 1])), const_tensor("v", np.int64(2 ** 40 + 1))]
    rejects_graph(graph_model([node], [V("x", INT64, [3])], [V("y", INT64, None)], 13, inits), "unsupported_attribute",
            "constant_value")


# -- Tile, Expand ------------------------------------------------------------------------------------------------------

def test_tile_with_unit_repeats(rng):
    x = x_of(rng, 2, 1, 3)
    node = helper.make_node("Tile", ["x", "r"], ["y"])
    check_graph_ort(graph_model([node], [V("x", FLOAT, [2, 1, 3])], [V("y", FLOAT, None)], 13, [const_tensor("r", np.int64([1, 4, 2]))]),
          {"x": x})


EXPAND = [((3, 1), (2, 1, 6)), ((3, 1), (3, 4)), ((1, 4), (3, 1)), ((2, 3), (3,)), ((2, 3), (1, 2, 1)), ((4,), (4,))]


@pytest.mark.parametrize("dtype", [F32, np.int64, np.bool_])
@pytest.mark.parametrize("x_shape,shape", EXPAND, ids=[f"{a}->{b}" for a, b in EXPAND])
def test_expand(rng, x_shape, shape, dtype):
    x = rng.integers(0, 5, x_shape).astype(dtype)
    check("Expand", {"x": x, "shape": np.asarray(shape, np.int64)}, 13, constants=("shape",))


def test_expand_needs_a_constant_shape():
    rejects("Expand", {"x": np.zeros((3, 1), F32), "shape": np.asarray([3, 4], np.int64)}, "needs_constant_input", 13)


# -- EyeLike, Shape, Constant ------------------------------------------------------------------------------------------

def test_eyelike_feeds_an_op(rng):
    x = x_of(rng, 3, 4)
    nodes = [helper.make_node("EyeLike", ["x"], ["e"], k=-1), helper.make_node("Add", ["x", "e"], ["y"])]
    check_graph_ort(graph_model(nodes, [V("x", FLOAT, [3, 4])], [V("y", FLOAT, None)], 13), {"x": x})


def test_shape_start_end_of_dynamic_tensor(rng):
    x = x_of(rng, 2, 3, 4)
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=1, end=-1),
             helper.make_node("Cast", ["s"], ["y"], to=FLOAT)]
    check_graph_ort(graph_model(nodes, [V("x", FLOAT, [2, "n", "m"])], [V("y", FLOAT, None)], 15), {"x": x})


def test_sparse_constant(rng):
    x = x_of(rng, 2, 3)
    sparse = helper.make_sparse_tensor(helper.make_tensor("v", FLOAT, [2], [5.0, -1.0]),
                                       helper.make_tensor("i", INT64, [2], [1, 5]), [2, 3])
    nodes = [helper.make_node("Constant", [], ["c"], sparse_value=sparse), helper.make_node("Add", ["x", "c"], ["y"])]
    check_graph_ort(graph_model(nodes, [V("x", FLOAT, [2, 3])], [V("y", FLOAT, None)], 13), {"x": x})
