"""Hostile and broken ONNX models shared by the tests of issue 12 (importable as ``hostile_models``): the cases of
the issue, each with the reason, node and words its ConversionError must carry, and the memory bombs."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from nnrt_onnx.onnx_import import ConversionError, from_onnx


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = h.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


def X(name="x", shape=(1, 3, 8, 8), elem=T.FLOAT):
    return h.make_tensor_value_info(name, elem, shape)


def Y(name="y", shape=None, elem=T.FLOAT):
    return h.make_tensor_value_info(name, elem, shape)


def i64(value, name):
    return nh.from_array(np.asarray(value, np.int64), name)


def f32(value, name):
    return nh.from_array(np.asarray(value, np.float32), name)


def _short_tensor() -> onnx.TensorProto:
    """An initializer whose dims announce 2**40 floats while it holds one."""
    tensor = f32([1.0], "w")
    tensor.dims[:] = [1 << 40]
    return tensor


def onnxruntime_refuses(m: onnx.ModelProto, feed=None) -> bool:
    """Whether onnxruntime refuses to load ``m`` (or, given ``feed``, to run it)."""
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
        if feed is not None:
            session.run(None, feed)
    except Exception:
        return True
    return False


def problem(m, **options):
    with pytest.raises(ConversionError) as info:
        from_onnx(m, **options)
    return info.value.issues


# -- the cases of issue 12: (model, reason, node, words in the message, feed for onnxruntime or None) ------------------

X4 = np.zeros((1, 3, 8, 8), np.float32)
CASES = {
    "transpose_perm_out_of_rank": (
        model([h.make_node("Transpose", ["x"], ["y"], perm=[5, 9], name="t")], [X()], [Y()]),
        "invalid_model", "t", "perm=[5, 9] is not a permutation"),
    "transpose_perm_wrong_length": (
        model([h.make_node("Transpose", ["x"], ["y"], perm=[1, 0], name="t")], [X()], [Y()]),
        "invalid_model", "t", "the input has rank 4"),
    "maxpool_zero_strides": (
        model([h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[0, 0], name="p")], [X()], [Y()]),
        "invalid_model", "p", "strides=[0, 0] must be >= 1"),
    "conv_zero_strides": (
        model([h.make_node("Conv", ["x", "w"], ["y"], strides=[0, 0], name="c")], [X()], [Y()],
              [f32(np.ones((2, 3, 3, 3)), "w")]),
        "invalid_model", "c", "strides=[0, 0] must be >= 1"),
    "conv_zero_dilations": (
        model([h.make_node("Conv", ["x", "w"], ["y"], dilations=[1, 0], name="c")], [X()], [Y()],
              [f32(np.ones((2, 3, 3, 3)), "w")]),
        "invalid_model", "c", "dilations=[1, 0] must be >= 1"),
    "lrn_size_zero": (
        model([h.make_node("LRN", ["x"], ["y"], size=0, name="n")], [X()], [Y()]),
        "invalid_model", "n", "size=0 must be >= 1"),
    "softmax_axis_is_a_list": (
        model([h.make_node("Softmax", ["x"], ["y"], axis=[0, 1], name="s")], [X()], [Y()]),
        "invalid_model", "s", "'axis' of Softmax must be INT"),
    "softmax_axis_out_of_range": (
        model([h.make_node("Softmax", ["x"], ["y"], axis=7, name="s")], [X()], [Y()]),
        "invalid_model", "s", "axis=7 is out of range for rank 4"),
    "concat_without_axis": (
        model([h.make_node("Concat", ["x", "x"], ["y"], name="cat")], [X()], [Y()]),
        "invalid_model", "cat", "needs attribute(s) ['axis']"),
    "resize_mode_not_utf8": (
        model([h.make_node("Resize", ["x", "", "s"], ["y"], mode=b"\xff", name="r")], [X()], [Y()],
              [f32([1, 1, 2, 2], "s")]),
        "invalid_model", "r", "'mode' is not a UTF-8 string"),
    "graph_output_no_node_writes": (
        model([h.make_node("Relu", ["x"], ["y"], name="relu")], [X()], [Y(), Y("z")]),
        "invalid_model", "z", "graph output 'z' is not computed by any node"),
    "constant_of_shape_negative": (
        model([h.make_node("ConstantOfShape", ["s"], ["c"], name="cos"), h.make_node("Add", ["x", "c"], ["y"])],
              [X()], [Y()], [i64([-1, 4], "s")]),
        "invalid_model", "cos", "negative dim"),
    "gemm_bias_wrong_length": (
        model([h.make_node("Gemm", ["a", "b", "c"], ["y"], name="gemm")], [X("a", (2, 3))], [Y()],
              [f32(np.ones((3, 4)), "b"), f32(np.ones(3), "c")]),
        "invalid_model", "gemm", "does not broadcast"),
    "two_nodes_write_one_tensor": (
        model([h.make_node("Relu", ["x"], ["y"], name="a"), h.make_node("Sigmoid", ["x"], ["y"], name="b")],
              [X()], [Y()]),
        "invalid_model", "b", "tensor 'y' is written by node #1 'b' and also by node #0 'a'"),
    "reshape_element_count": (
        model([h.make_node("Reshape", ["x", "s"], ["y"], name="r")], [X("x", (1, 4))], [Y()], [i64([3, 7], "s")]),
        "invalid_model", "r", "cannot reshape [1, 4] (4 elements) to [3, 7] (21 elements)"),
    "input_nothing_defines": (
        model([h.make_node("Relu", ["ghost"], ["y"], name="relu")], [X()], [Y()]),
        "invalid_model", "relu", "input 'ghost' is not a graph input"),
    "initializer_short_of_its_dims": (
        model([h.make_node("Add", ["x", "w"], ["y"], name="add")], [X("x", (4,))], [Y()],
              [_short_tensor()]),
        "invalid_model", "w", "holds 4 bytes of raw data, [1099511627776] needs"),
    "opset_unknown": (
        model([h.make_node("Relu", ["x"], ["y"], name="relu")], [X()], [Y()], opset=99),
        "invalid_model", "-", "opset 99 is not an ONNX opset"),
    "range_delta_zero": (
        model([h.make_node("Range", ["a", "b", "d"], ["y"], name="range")], [X()], [Y("y", None, T.INT64)],
              [i64(0, "a"), i64(5, "b"), i64(0, "d")]),
        "invalid_model", "range", "delta must not be 0"),
    "range_not_finite": (
        model([h.make_node("Range", ["a", "b", "d"], ["y"], name="range")], [X()], [Y()],
              [f32(0, "a"), f32(np.inf, "b"), f32(1, "d")]),
        "invalid_model", "range", "must be finite"),
}



def bombs() -> dict[str, onnx.ModelProto]:
    one = [X("x", (1,))]
    out = [Y()]
    return {
        "constant_of_shape": model([h.make_node("ConstantOfShape", ["s"], ["c"]),
                                    h.make_node("Add", ["x", "c"], ["y"])], one, out, [i64([1 << 29], "s")]),
        "range": model([h.make_node("Range", ["a", "b", "d"], ["c"]), h.make_node("Cast", ["c"], ["cf"], to=1),
                        h.make_node("Add", ["x", "cf"], ["y"])], one, out,
                       [i64(0, "a"), i64(1 << 28, "b"), i64(1, "d")]),
        "tile": model([h.make_node("Tile", ["k", "r"], ["c"]), h.make_node("Add", ["x", "c"], ["y"])], one, out,
                      [f32(np.ones(4), "k"), i64([1 << 27], "r")]),
        "expand": model([h.make_node("Expand", ["k", "r"], ["c"]), h.make_node("Add", ["x", "c"], ["y"])], one, out,
                        [f32(np.ones(1), "k"), i64([1 << 29], "r")]),
        "data_propagation": model([h.make_node("ConstantOfShape", ["s"], ["c"], value=i64([1], "v")),
                                   h.make_node("Cast", ["c"], ["cf"], to=1), h.make_node("Add", ["x", "cf"], ["y"])],
                                  one, out, [i64([1 << 26], "s")]),
        "eye_like_of_a_huge_input": model([h.make_node("EyeLike", ["big"], ["e"]),
                                           h.make_node("Add", ["x", "e"], ["y"])],
                                          [X("x", (1,)), X("big", (1 << 20, 1 << 20))], out),
        "tile_chain": model([h.make_node("ConstantOfShape", ["s"], ["c0"])] +
                            [h.make_node("Tile", [f"c{i}", "r"], [f"c{i + 1}"]) for i in range(6)] +
                            [h.make_node("Add", ["x", "c6"], ["y"])], one, out, [i64([1 << 16], "s"), i64([4], "r")]),
    }


