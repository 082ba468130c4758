"""Constant folding: an NNRt node whose inputs are all constants is evaluated now, by its native kernel."""
from __future__ import annotations

import numpy as np

from ..errors import NNRtError
from ..runtime.invoke import call
from .graph import Graph, Node
from .issues import INVALID_MODEL, ConversionIssue
from .quantized import carry_through

# Folding bigger results than this would bloat the model with computed data a kernel can rebuild.
MAX_FOLDED_ELEMENTS = 1 << 26


def try_fold(graph: Graph, node: Node) -> bool:
    """Evaluate ``node`` if every input is a constant; store its outputs as constants. Returns whether it did."""
    inputs = [graph.values[name] for name in node.inputs]
    if not inputs or any(v.data is None for v in inputs) or any(v.quant is not None for v in inputs):
        return False
    outputs = [graph.values[name] for name in node.outputs]
    if any(o.quant is not None for o in outputs):
        return False
    values = node.values()
    try:
        results = call(node.op, values, [v.data for v in inputs], [v.dtype for v in inputs],
                       [o.dtype for o in outputs], [o.shape or () for o in outputs])
    except NNRtError as exc:
        raise ConversionIssue(INVALID_MODEL, f"evaluating constant {node.op.name}: {exc.message}") from None
    if results is None:  # no kernel for it
        return False
    if sum(np.size(r) for r in results) > MAX_FOLDED_ELEMENTS:
        return False
    for value, array in zip(outputs, results):
        value.data = np.ascontiguousarray(array.astype(value.dtype, copy=False)).reshape(array.shape)  # (keeps 0-d)
        value.shape = tuple(array.shape)
    if inputs[0].integer is not None:  # a dequantized constant moved: its integers move alike
        carry_through(node, inputs, outputs, lambda arrays: call(
            node.op, values, arrays, [a.dtype for a in arrays], [arrays[0].dtype], [o.shape for o in outputs]))
    return True
