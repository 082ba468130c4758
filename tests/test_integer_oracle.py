"""The integer oracle of the quantized tests is independent of onnxruntime and of the code under test, agrees with
hand computation and with onnx.reference, and is exact where onnxruntime's u8s8 kernels saturate."""
from __future__ import annotations

import importlib
import sys

import integer_oracle
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


def test_the_oracle_imports_neither_onnxruntime_nor_the_code_under_test(monkeypatch):
    for name in list(sys.modules):
        if name.split(".")[0] in ("onnxruntime", "nnrt_onnx", "integer_oracle"):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # any import of it now raises ImportError
    monkeypatch.setitem(sys.modules, "nnrt_onnx", None)
    fresh = importlib.import_module("integer_oracle")
    acc = fresh.conv_accumulate(np.full((1, 1, 2, 2), 3, np.uint8), np.full((1, 1, 2, 2), -2, np.int8))
    assert acc.tolist() == [[[[-24]]]]
    assert "onnxruntime" not in {m.split(".")[0] for m in sys.modules if sys.modules[m] is not None}


def test_conv_by_hand():
    # x - 1 = [[0, 1], [2, 3]], w - 0 = [[1, -1], [2, 0]]: 0 - 1 + 4 + 0 = 3, plus bias 10
    x = np.asarray([[[[1, 2], [3, 4]]]], np.uint8)
    w = np.asarray([[[[1, -1], [2, 0]]]], np.int8)
    assert integer_oracle.conv_accumulate(x, w, np.uint8(1), np.int8(0), bias=np.asarray([10], np.int32)).item() == 13
    # one pixel of zero padding around x - 1: the corner output sees only the top-left element (0) times w[1][1] (0)
    padded = integer_oracle.conv_accumulate(x, w, np.uint8(1), None, pads=[1, 1, 1, 1])
    assert padded.shape == (1, 1, 3, 3) and padded[0, 0, 0, 0] == 0 and padded[0, 0, 2, 2] == 3 * 1


def test_conv_is_exact_where_int16_pair_sums_saturate():
    # u8 255 * s8 127, summed in pairs = 64,770 > 32,767: onnxruntime's AVX2 (no VNNI) u8s8 path saturates here
    x = np.full((1, 8, 3, 3), 255, np.uint8)
    w = np.full((2, 8, 3, 3), 127, np.int8)
    acc = integer_oracle.conv_accumulate(x, w, np.uint8(0), np.int8(0))
    assert acc.tolist() == [[[[255 * 127 * 72]], [[255 * 127 * 72]]]]


def test_requantize_rounds_half_to_even_after_the_zero_point():
    # acc * M = 2.5 exactly; + zero point 1 = 3.5 -> 4 (rounding first would give 2 + 1 = 3)
    assert integer_oracle.requantize(np.asarray([5]), 0.5, 1.0, 1.0, np.uint8(1)).tolist() == [4]
    assert integer_oracle.requantize(np.asarray([5]), 0.5, 1.0, 1.0, np.uint8(2)).tolist() == [4]  # 4.5 -> 4
    assert integer_oracle.requantize(np.asarray([-1000, 1000]), 1.0, 1.0, 1.0, np.int8(0)).tolist() == [-128, 127]


def test_quantize_linear_by_hand():
    # x / s = [0.5, 1.5, 2.5, -0.5] -> half to even [0, 2, 2, -0], then + zero point 3
    q = integer_oracle.quantize_linear(np.asarray([0.5, 1.5, 2.5, -0.5], np.float32), np.float32(1.0), np.int8(3))
    assert q.tolist() == [3, 5, 5, 3]


def _node_model(op, inputs, initializers, attrs=None, opset=13):
    node = helper.make_node(op, list(inputs) + list(initializers), ["y"], **(attrs or {}))
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("seed", range(4))
def test_qlinear_conv_agrees_with_onnx_reference(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (1, 3, 5, 6)).astype(np.uint8)
    w = rng.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    params = {"x_scale": np.float32(0.02), "x_zp": np.uint8(rng.integers(0, 256)), "w": w,
              "w_scale": rng.uniform(0.001, 0.01, 4).astype(np.float32), "w_zp": np.zeros(4, np.int8),
              "y_scale": np.float32(0.3), "y_zp": np.uint8(rng.integers(0, 256)),
              "B": rng.integers(-3000, 3000, 4).astype(np.int32)}
    model = _node_model("QLinearConv", {"x": x}, params, {"pads": [1, 0, 1, 2], "strides": [2, 1]}, opset=10)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    acc = integer_oracle.conv_accumulate(x, w, params["x_zp"], params["w_zp"], strides=[2, 1], pads=[1, 0, 1, 2],
                                         bias=params["B"])
    got = integer_oracle.requantize(acc, params["x_scale"], params["w_scale"], params["y_scale"], params["y_zp"])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", range(4))
def test_qlinear_matmul_agrees_with_onnx_reference(seed):
    rng = np.random.default_rng(100 + seed)
    a = rng.integers(-128, 128, (2, 3, 7)).astype(np.int8)
    b = rng.integers(-128, 128, (7, 5)).astype(np.int8)
    params = {"a_scale": np.float32(0.05), "a_zp": np.int8(3), "b": b, "b_scale": np.float32(0.02),
              "b_zp": np.int8(-1), "y_scale": np.float32(0.4), "y_zp": np.int8(-5)}
    model = _node_model("QLinearMatMul", {"a": a}, params, opset=10)
    want = ReferenceEvaluator(model).run(None, {"a": a})[0]
    acc = integer_oracle.matmul_accumulate(a, b, params["a_zp"], params["b_zp"])
    got = integer_oracle.requantize(acc, params["a_scale"], params["b_scale"], params["y_scale"], params["y_zp"])
    np.testing.assert_array_equal(got, want)


def test_dynamic_quantize_linear_agrees_with_onnx_reference():
    x = np.random.default_rng(5).standard_normal((4, 9)).astype(np.float32) * 3
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in "ysz"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    want = ReferenceEvaluator(model).run(None, {"x": x})
    got = integer_oracle.dynamic_quantize_linear(x)
    np.testing.assert_array_equal(got[0], want[0])
    assert np.float32(got[1]) == np.float32(want[1]) and int(got[2]) == int(want[2])
