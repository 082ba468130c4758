"""Exact round trips: an ONNX model exported by nnrt_onnx carries each op's NNRt parameters as node metadata
(and NNRt-only ops as nodes of a custom domain); the importer restores them instead of re-deriving them."""
from __future__ import annotations

import json

import numpy as np

from ..enums import OH_NN_OperationType, OH_NN_TensorType
from ..optable import op_table
from .ir import Graph, Node

NNRT_DOMAIN = "org.openharmony.nnrt"
METADATA_PARAMS = "nnrt.params"  # exact NNRt parameters, JSON, on the node an op became
METADATA_FUSED = "nnrt.fused_activation"  # marks the Relu/Clip a fused activation became
METADATA_OP = "nnrt.op"  # the NNRt op an NNRt-domain node stands for


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


def restore_exact_params(emitted: list[Node], text: str) -> None:
    """Give the node of the right op among those just emitted exactly the exported parameters."""
    params = decode_params(text)
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
    from .fold import try_fold

    if not try_fold(graph, node):
        graph.nodes.append(node)
