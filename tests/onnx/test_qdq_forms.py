"""Valid ONNX Q/DQ forms a quantized group may use (issue 15): opsets 10 to 21, scalar zero points with one-element
scales and the reverse, no zero point, int8 / uint8 (folded: the convolution reads quantized tensors), int16 /
uint16 (NNRt quantizes 8 bits: exact float arithmetic), per-channel weights, blocked weights (dequantized at
conversion; the convolution is then a reported float fallback). The oracle is onnx.reference."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.workflows.inference import run_model
from nnrt_onnx.workflows.quant_compare import reference_evaluator


def _build(opset, act_dtype=np.uint8, zp_shape=(), scale_shape=(), with_zp=True, block=False, w_axis=None):
    rng = np.random.default_rng(3)
    w = rng.integers(-100, 100, (3, 2, 3, 3)).astype(np.int8)
    b = rng.integers(-500, 500, 3).astype(np.int32)
    zx = np.array(128 if act_dtype==np.uint8 else (0 if act_dtype in (np.int8,np.int16) else 30000), act_dtype).reshape(zp_shape)
    sx = np.array(0.02, np.float32).reshape(scale_shape)
    sy = np.array(0.05, np.float32).reshape(scale_shape)
    inits = {"sx": sx, "w": w, "b": b, "sb": np.array(0.0002, np.float32), "sy": sy}
    if with_zp: inits["zx"] = zx
    if block:
        inits["sw"] = np.full((3, 1, 3, 3), 0.01, np.float32)  # blocks of 2 along axis 1
        wdq = helper.make_node("DequantizeLinear", ["w", "sw"], ["wf"], axis=1, block_size=2)
    elif w_axis is not None:
        inits["sw"] = np.array([0.01, 0.02, 0.015], np.float32)
        wdq = helper.make_node("DequantizeLinear", ["w", "sw"], ["wf"], axis=0)
    else:
        inits["sw"] = np.array(0.01, np.float32)
        wdq = helper.make_node("DequantizeLinear", ["w", "sw"], ["wf"])
    zin = ["zx"] if with_zp else []
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx"] + zin, ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx"] + zin, ["xf"]),
             wdq,
             helper.make_node("DequantizeLinear", ["b", "sb"], ["bf"]),
             helper.make_node("Conv", ["xf", "wf", "bf"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "sy"] + zin, ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "sy"] + zin, ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 5, 5])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


CASES = {
    "opset10": (dict(opset=10), True), "opset13": (dict(opset=13), True), "opset19": (dict(opset=19), True),
    "opset21": (dict(opset=21), True),
    "zero_point_shape_1": (dict(opset=13, zp_shape=(1,)), True),
    "scale_shape_1": (dict(opset=13, scale_shape=(1,)), True),
    "both_shape_1": (dict(opset=13, zp_shape=(1,), scale_shape=(1,)), True),
    "no_zero_point": (dict(opset=13, with_zp=False), True),
    "int8": (dict(opset=13, act_dtype=np.int8), True),
    "int16": (dict(opset=21, act_dtype=np.int16), False),
    "uint16": (dict(opset=21, act_dtype=np.uint16), False),
    "per_channel_weight": (dict(opset=13, w_axis=0), True),
    "blocked_weight": (dict(opset=21, block=True), False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_valid_qdq_form_converts_and_matches_onnx_reference(case):
    options, folded = CASES[case]
    model = _build(**options)
    x = np.random.default_rng(1).uniform(-2, 2, (1, 2, 5, 5)).astype(np.float32)
    expected = reference_evaluator(model).run(None, {"x": x})[0]
    result = from_onnx(model)
    actual = run_model(result.model, [x]).outputs[0]
    assert np.abs(actual.astype(np.float64) - expected).max() / 0.05 <= 1 + 1e-4
    summary = result.stats["quantization"]
    assert (summary["quantized_ops"] == 1) is folded
    if case == "blocked_weight":
        assert summary["float_fallbacks"] == {"CONV2D": 1}
