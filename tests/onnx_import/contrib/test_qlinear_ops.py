"""onnxruntime's QOperator contrib ops (com.microsoft QLinearAdd ... QLinearWhere, QGemm) become quantized NNRt
ops: each alone, uint8 and int8, against its documented formula in onnx.reference (dequantize, the ONNX float op,
quantize: ``quant_compare.contrib_reference_ops``), within one quantization step; every compute op reads
quantized tensors, except those NNRt cannot quantize (LeakyRelu, Where: reported float fallbacks)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.workflows.inference import run_model
from nnrt_onnx.workflows.quant_compare import reference_evaluator

MS = "com.microsoft"


def _params(dtype, prefix, scale, zero):
    return {f"{prefix}_s": np.array(scale, np.float32), f"{prefix}_z": np.array(zero, dtype)}


def _case(op, dtype, rng):
    """(inputs: name -> array, initializers, input names of the node, attributes)."""
    z = 128 if dtype == np.uint8 else 0
    info = np.iinfo(dtype)

    def q(*shape):
        return rng.integers(info.min, info.max + 1, shape).astype(dtype)

    x = {"x": q(1, 4, 4, 4)}
    inits = {**_params(dtype, "x", 0.05, z + 3), **_params(dtype, "y", 0.04, z - 2)}
    unary = ["x", "x_s", "x_z", "y_s", "y_z"]
    if op in ("QLinearAdd", "QLinearMul"):
        inits.update(_params(dtype, "b", 0.03, z + 1))
        scale = 0.1 if op == "QLinearAdd" else 0.3
        inits.update(_params(dtype, "y", scale, z))
        return {**x, "b": q(1, 4, 4, 4)}, inits, ["x", "x_s", "x_z", "b", "b_s", "b_z", "y_s", "y_z"], {}
    if op == "QLinearConcat":
        inits.update(_params(dtype, "b", 0.03, z + 1))
        return {**x, "b": q(1, 2, 4, 4)}, inits, ["y_s", "y_z", "x", "x_s", "x_z", "b", "b_s", "b_z"], {"axis": 1}
    if op == "QGemm":
        inits.update(_params(np.int8, "w", 0.02, 0))
        inits["w"] = rng.integers(-127, 128, (6, 8)).astype(np.int8)
        inits["c"] = rng.integers(-2000, 2000, 6).astype(np.int32)
        inits.update(_params(dtype, "y", 0.2, z))
        return {"x": q(3, 8)}, inits, ["x", "x_s", "x_z", "w", "w_s", "w_z", "c", "y_s", "y_z"], {"transB": 1}
    if op == "QLinearGlobalAveragePool":
        return x, inits, unary, {"channels_last": 0}
    if op == "QLinearAveragePool":
        return x, inits, unary, {"kernel_shape": [2, 2], "strides": [2, 2]}
    if op == "QLinearSigmoid":
        inits.update(_params(dtype, "y", 1 / 256, z if dtype == np.int8 else 0))
        return x, inits, unary, {}
    if op == "QLinearLeakyRelu":
        return x, inits, unary, {"alpha": 0.1}
    if op == "QLinearSoftmax":
        inits.update(_params(dtype, "y", 1 / 256, -128 if dtype == np.int8 else 0))
        return x, inits, unary, {"axis": -1, "opset": 13}
    if op == "QLinearWhere":
        inits.update(_params(dtype, "b", 0.03, z + 1))
        cond = rng.integers(0, 2, (1, 4, 4, 4)).astype(bool)
        return ({"cond": cond, **x, "b": q(1, 4, 4, 4)}, inits,
                ["cond", "x", "x_s", "x_z", "b", "b_s", "b_z", "y_s", "y_z"], {})
    raise AssertionError(op)


# quantType NONE in NNRt's builders (the header's list): these stay in float between a DQ and a Q
FALLBACKS = {"QLinearLeakyRelu": "LEAKY_RELU", "QLinearWhere": "WHERE"}
OPS = ["QLinearAdd", "QLinearMul", "QLinearConcat", "QGemm", "QLinearGlobalAveragePool", "QLinearAveragePool",
       "QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "QLinearWhere"]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "s8"])
@pytest.mark.parametrize("op", OPS)
def test_a_qoperator_contrib_op_is_a_quantized_nnrt_op(op, dtype):
    """As in a model quantize_static writes: float inputs quantized by QuantizeLinear, the output dequantized."""
    rng = np.random.default_rng(OPS.index(op) * 2 + (dtype == np.int8))
    inputs, inits, names, attrs = _case(op, dtype, rng)
    nodes, feeds = [], {}
    for name, array in inputs.items():
        if array.dtype == bool:
            feeds[name] = array
            continue
        scale, zero = inits[f"{name}_s"], inits[f"{name}_z"]  # real values whose quantization is ``array``
        feeds[f"{name}_f"] = ((array.astype(np.float32) - zero.astype(np.float32)) * scale).astype(np.float32)
        nodes.append(helper.make_node("QuantizeLinear", [f"{name}_f", f"{name}_s", f"{name}_z"], [name]))
    nodes.append(helper.make_node(op, names, ["yq"], domain=MS, **attrs))
    nodes.append(helper.make_node("DequantizeLinear", ["yq", "y_s", "y_z"], ["y"]))
    graph = helper.make_graph(
        nodes, op, [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    expected = reference_evaluator(model).run(None, feeds)[0]
    result = from_onnx(model)
    summary = result.stats["quantization"]
    if op in FALLBACKS:  # NNRt's builders quantize no such op: it computes in float, and the summary says so
        assert summary["float_fallbacks"] == {FALLBACKS[op]: 1}
    else:
        assert summary["float_fallbacks"] == {} and summary["quantized_ops"] == summary["compute_ops"], summary
        moving = [n for n in result.graph.nodes if n.op.name in ("OH_NN_OPS_CONCAT",)]
        assert summary["compute_ops"] >= 1 or moving  # (CONCAT only moves integers: not a compute op)
        for n in moving:
            assert all(result.graph.values[i].quant is not None for i in n.inputs)
    arrays = [feeds[result.model.tensors[i].name] for i in result.model.inputs]
    actual = np.asarray(run_model(result.model, arrays).outputs[0])
    assert actual.shape == expected.shape
    assert np.abs(actual.astype(np.float64) - expected).max() / float(inits["y_s"]) <= 1 + 1e-4
