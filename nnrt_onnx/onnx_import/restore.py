"""Exact round trips: an ONNX model exported by nnrt_onnx carries each op's NNRt parameters as node metadata
(and NNRt-only ops as nodes of a custom domain); the importer restores them instead of re-deriving them."""
from __future__ import annotations

import json

import numpy as np

from ..enums import OH_NN_OperationType, OH_NN_TensorType
from ..ir.graph import Graph, Node, Value
from ..ir.metadata import METADATA_OP, METADATA_PARAMS
from ..optable import op_table


def restore_quantized_tensor(graph: Graph, onnx_node, text: str) -> None:
    """An exported DequantizeLinear reads a quantized tensor (its quant params go onto that tensor); an exported
    QuantizeLinear writes one (the producing op then writes the quantized tensor, under the ONNX name)."""
    from ..tensor import QuantParam

    info = json.loads(text)
    quant = QuantParam(info["scales"], info["zero_points"], info["num_bits"], axis=info["axis"])
    source = graph.resolve(onnx_node.input[0])
    if info.get("role") == "dequantize":
        graph.values[source].quant = quant
        graph.aliases[onnx_node.output[0]] = source
        return
    zero_dtype = graph.values[onnx_node.input[2]].data.dtype
    target = onnx_node.output[0]
    value = graph.values[source]
    graph.values.pop(target, None)
    graph.values[target] = Value(target, zero_dtype, value.shape, None, quant)
    for node in graph.nodes:
        node.outputs = [target if o == source else o for o in node.outputs]
        node.inputs = [target if i == source else i for i in node.inputs]
    graph.values.pop(source, None)
    graph.aliases = {k: (target if v == source else v) for k, v in graph.aliases.items()}
    graph.aliases[source] = target


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
