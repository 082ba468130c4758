"""Exact round trips: an ONNX model exported by nnrt_onnx carries each op's NNRt parameters as node metadata
(and NNRt-only ops as nodes of a custom domain); the importer restores them instead of re-deriving them."""
from __future__ import annotations

import json

import numpy as np

from ..enums import OH_NN_OperationType, OH_NN_TensorType
from ..ir.graph import Graph, Node, Value
from ..ir.metadata import METADATA_OP, METADATA_PARAMS
from ..optable import op_table, param_array


def restore_quantized_tensor(graph: Graph, onnx_node, text: str) -> None:
    """An exported DequantizeLinear reads a quantized tensor, an exported QuantizeLinear writes one: they become a
    QUANT_DTYPE_CAST from / to that tensor (carrying the exact params), marked restored, so the converters see the
    float ONNX graph; ``ir.passes.qdq.absorb_restored`` then makes the ops read and write the quantized tensors
    again, as in the exported model. A dequantized constant becomes a float constant keeping its integers (role
    "bias": an INT32 bias, which NNRt reads without params)."""
    from ..dtypes import from_numpy
    from ..ir.graph import IntegerForm
    from ..tensor import QuantParam

    info = json.loads(text)
    quant = QuantParam(info["scales"], info["zero_points"], info["num_bits"], axis=info["axis"])
    role = info.get("role")
    source = graph.resolve(onnx_node.input[0])
    target = onnx_node.output[0]
    value = graph.values[source]
    if role in ("dequantize", "bias") and value.data is not None:
        # the constant as written: per-channel params along the DequantizeLinear's axis (the weight may be laid out
        # for ONNX, e.g. a transposed convolution's [C, O, kH, kW]); the converters move its integers to NNRt's layout
        axis = next((a.i for a in onnx_node.attribute if a.name == "axis"), quant.axis)
        quant = QuantParam(quant.scales, quant.zero_points, quant.num_bits, axis if quant.count > 1 else None)
        scales = np.asarray(quant.scales, np.float64)
        zeros = np.asarray(quant.zero_points, np.float64)
        if quant.count > 1:
            line = [1] * value.data.ndim
            line[(quant.axis or 0) % value.data.ndim] = quant.count
            scales, zeros = scales.reshape(line), zeros.reshape(line)
        else:
            scales, zeros = scales.reshape(()), zeros.reshape(())
        real = ((value.data.astype(np.float64) - zeros) * scales).astype(np.float32)
        graph.add_value(Value(target, np.dtype(np.float32), tuple(real.shape), real,
                              integer=IntegerForm(value.data, quant, "bias" if role == "bias" else "quantized")))
        return
    if role in ("dequantize", "bias"):
        value.quant = quant
        out = Value(target, np.dtype(np.float32), value.shape)
    else:
        out = Value(target, graph.values[onnx_node.input[2]].data.dtype, graph.values[source].shape, None, quant)
    graph.add_value(out)
    src_dtype, dst_dtype = graph.values[source].dtype, out.dtype
    tt = OH_NN_TensorType
    params = {tt.OH_NN_QUANT_DTYPE_CAST_SRC_T: param_array(tt.OH_NN_QUANT_DTYPE_CAST_SRC_T, int(from_numpy(src_dtype))),
              tt.OH_NN_QUANT_DTYPE_CAST_DST_T: param_array(tt.OH_NN_QUANT_DTYPE_CAST_DST_T, int(from_numpy(dst_dtype)))}
    if quant.count > 1:
        params[tt.OH_NN_QUANT_DTYPE_CAST_AXIS] = param_array(tt.OH_NN_QUANT_DTYPE_CAST_AXIS, quant.axis or 0)
    graph.nodes.append(Node(OH_NN_OperationType.OH_NN_OPS_QUANT_DTYPE_CAST, [source], [target], params,
                            onnx_node.name or target))
    graph.quantization.restored.add(target)


def decode_params(text: str) -> dict[OH_NN_TensorType, np.ndarray]:
    params = {}
    for type_name, entry in json.loads(text).items():
        array = np.asarray(entry["values"], dtype=np.dtype(entry["dtype"])).reshape(entry["shape"])
        params[OH_NN_TensorType[type_name]] = array
    return params


def _owner(tensor_type: OH_NN_TensorType) -> OH_NN_OperationType | None:
    for entry in op_table().values():
        spec = entry.params.get(tensor_type)
        if spec is not None and not spec.alias:
            return entry.op
    return None


def restore_exact_params(emitted: list[Node], text: str, op_name: str | None = None) -> None:
    """Give the node of the right op among those just emitted exactly the exported parameters."""
    params = decode_params(text)
    if op_name is not None:
        op = OH_NN_OperationType[op_name]
        for node in emitted:
            if node.op == op:
                node.params = params
                return
        return
    if not params:
        return
    owners = {_owner(t) for t in params}
    for node in emitted:
        if node.op in owners or any(t in op_table()[node.op].params for t in params):
            if all(t in op_table()[node.op].params for t in params):
                node.params = params
                return


def restore_nnrt_node(graph: Graph, onnx_node, metadata: dict[str, str]) -> None:
    """A node of the NNRt domain is the NNRt op of that name, with its exact parameters."""
    op = OH_NN_OperationType[metadata[METADATA_OP]] if METADATA_OP in metadata else \
        OH_NN_OperationType["OH_NN_OPS_" + onnx_node.op_type]
    params = decode_params(metadata.get(METADATA_PARAMS, "{}"))
    inputs = [graph.resolve(i) for i in onnx_node.input]
    node = Node(op, inputs, list(onnx_node.output), params, onnx_node.name)
    from ..ir.fold import try_fold
    from ..ir.shapes import refine_output_shapes

    refine_output_shapes(graph, node)
    if not try_fold(graph, node):
        graph.nodes.append(node)
