"""What an export function sees: one NNRt node (inputs, outputs, parameter values) and ways to add ONNX nodes."""
from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..ir.graph import Graph, Node
from ..ir.metadata import METADATA_FUSED, METADATA_OP, METADATA_PARAMS, METADATA_QUANT, NNRT_DOMAIN  # noqa: F401
from ..optable import op_spec


class ExportIssue(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def params_metadata(node: Node) -> str:
    """The node's parameter tensors exactly (type name, dtype, shape, values) as JSON."""
    return json.dumps({t.name: {"dtype": str(a.dtype), "shape": list(a.shape), "values": a.reshape(-1).tolist()}
                       for t, a in node.params.items()}, separators=(",", ":"))


class ExportContext:
    def __init__(self, graph: Graph, node: Node, builder):
        self.graph = graph
        self.node = node
        self.builder = builder
        self.args = node.kernel_arguments()  # every keyword, defaults filled
        self.given = node.values()  # only what the model gave
        self.spec = op_spec(node.op)
        self.opset = builder.opset

    # -- reading ---------------------------------------------------------------------------------------------
    def input(self, position: int) -> str:
        return self.node.inputs[position]

    def output(self, position: int = 0) -> str:
        return self.node.outputs[position]

    def value(self, name: str):
        return self.graph.values[name]

    def constant_input(self, position: int, what: str) -> np.ndarray:
        data = self.value(self.input(position)).data
        if data is None:
            raise ExportIssue(f"{self.node.op.name}: {what} (input #{position}) must be a constant to export")
        return data

    # -- writing ---------------------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        return self.builder.fresh(hint)

    def constant(self, array, hint: str = "const") -> str:
        return self.builder.initializer(np.asarray(array), self.fresh(hint))

    def weight(self, position: int, transform=None, axis_map=None, hint: str | None = None) -> str:
        """A constant input rearranged by ``transform`` (e.g. a transpose) as an ONNX tensor: a float initializer,
        or for a quantized constant its integers plus a DequantizeLinear (per-channel ``axis`` mapped by ``axis_map``)."""
        value = self.value(self.input(position))
        if value.data is None:
            raise ExportIssue(f"{self.node.op.name}: input #{position} must be a constant to export")
        data = value.data if transform is None else transform(value.data)
        name = self.constant(np.ascontiguousarray(data), hint or f"{self.input(position)}.w")
        if value.quant is None:
            return name
        self.builder.quant_dtype[name] = value.dtype
        axis = None
        if value.quant.count > 1:
            axis = value.quant.axis or 0
            axis = axis_map(axis) if axis_map else axis
        return self.builder.dequantize(name, value.quant, axis)

    def add(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "", main: bool = False,
            **attrs: Any) -> onnx.NodeProto:
        """Add an ONNX node; ``main`` marks the node the NNRt op became (it carries the exact parameters)."""
        attrs = {k: v for k, v in attrs.items() if v is not None}
        node = helper.make_node(op_type, list(inputs), list(outputs), name=self.fresh(f"{self.node.origin or op_type}"),
                                domain=domain or None, **attrs)
        if main:  # the exact parameters (possibly none) and the op, restored on re-import
            entry = node.metadata_props.add()
            entry.key, entry.value = METADATA_PARAMS, params_metadata(self.node)
            if domain != NNRT_DOMAIN:
                entry = node.metadata_props.add()
                entry.key, entry.value = METADATA_OP, self.node.op.name
        self.builder.nodes.append(node)
        return node

    def result(self, position: int = 0) -> str:
        """Where the op's main computation writes output ``position``: the output itself, or a temporary when the
        fused activation still has to run after it."""
        if position == 0 and self.spec.fuse and self.args.get(self.spec.fuse, 0):
            name = self.fresh(f"{self.output(0)}.preact")
            self.builder.pending_activation = (name, self.output(0), int(self.args[self.spec.fuse]))
            return name
        return self.output(position)

    def tensor_attr(self, array) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(array))
