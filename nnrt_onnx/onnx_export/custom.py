"""NNRt ops with no single ONNX node: a node of the NNRt domain whose definition travels in the model as an ONNX
function built from standard ops (onnxruntime inlines it; the importer restores the exact NNRt op)."""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..ir.metadata import METADATA_OP, NNRT_DOMAIN
from .context import ExportContext, params_metadata
from .opset_forms import lower


class FunctionBody:
    """Builds a function body: inputs are ``x0, x1, ...``, outputs ``y0, y1, ...``."""

    def __init__(self, n_inputs: int, n_outputs: int):
        self.inputs = [f"x{i}" for i in range(n_inputs)]
        self.outputs = [f"y{i}" for i in range(n_outputs)]
        self.nodes: list[onnx.NodeProto] = []
        self._counter = 0

    def fresh(self, hint: str = "t") -> str:
        self._counter += 1
        return f"{hint}{self._counter}"

    def add(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str] | None = None, **attrs: Any) -> list[str]:
        outputs = list(outputs) if outputs is not None else [self.fresh()]
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, **{k: v for k, v in attrs.items()
                                                                               if v is not None}))
        return outputs

    def one(self, op_type: str, inputs: Sequence[str], output: str | None = None, **attrs: Any) -> str:
        return self.add(op_type, inputs, None if output is None else [output], **attrs)[0]

    def constant(self, array) -> str:
        return self.one("Constant", [], value=numpy_helper.from_array(np.asarray(array)))


def emit_custom(ctx: ExportContext, build: Callable[[FunctionBody], None]) -> None:
    """Emit the node as an NNRt-domain call of a function whose body ``build`` writes (outputs already final:
    the fused activation, if any, is applied by the exporter after the node)."""
    body = FunctionBody(len(ctx.node.inputs), len(ctx.node.outputs))
    build(body)
    body.nodes = lower(body.nodes, ctx.opset, lambda name: None, body.fresh)
    op_name = ctx.node.op.name[len("OH_NN_OPS_"):]
    signature = params_metadata(ctx.node) + "|" + "".join(n.SerializeToString().hex() for n in body.nodes)
    name = f"{op_name}_{hashlib.sha1(signature.encode()).hexdigest()[:10]}"
    builder = ctx.builder
    if name not in builder.functions:
        builder.functions[name] = helper.make_function(
            NNRT_DOMAIN, name, body.inputs, body.outputs, body.nodes,
            opset_imports=[helper.make_opsetid("", ctx.opset)])
    outputs = [ctx.result(0)] + ctx.node.outputs[1:]
    node = ctx.add(name, list(ctx.node.inputs), outputs, domain=NNRT_DOMAIN, main=True)
    entry = node.metadata_props.add()
    entry.key, entry.value = METADATA_OP, ctx.node.op.name
