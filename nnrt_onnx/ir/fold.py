"""Constant folding: an NNRt node whose inputs are all constants is evaluated now, by its native kernel."""
from __future__ import annotations

import numpy as np

from ..errors import NNRtError
from ..kernels import OpContext, get_kernel, wants_context
from ..optable import op_spec
from ..runtime.invoke import apply_fused_activation
from .graph import Graph, Node
from .issues import INVALID_MODEL, ConversionIssue

# Folding bigger results than this would bloat the model with computed data a kernel can rebuild.
MAX_FOLDED_ELEMENTS = 1 << 26


def try_fold(graph: Graph, node: Node) -> bool:
    """Evaluate ``node`` if every input is a constant; store its outputs as constants. Returns whether it did."""
    inputs = [graph.values[name] for name in node.inputs]
    if not inputs or any(v.data is None for v in inputs) or any(v.quant is not None for v in inputs):
        return False
    fn = get_kernel(node.op)
    if fn is None:
        return False
    entry = op_spec(node.op)
    arguments = node.kernel_arguments()
    fuse = int(arguments.pop(entry.fuse, 0)) if entry.fuse else 0
    outputs = [graph.values[name] for name in node.outputs]
    if any(o.quant is not None for o in outputs):
        return False
    if wants_context(fn):
        arguments["ctx"] = OpContext(node.op, tuple(v.dtype for v in inputs), tuple(o.dtype for o in outputs),
                                     tuple(o.shape or () for o in outputs), tuple(None for _ in inputs),
                                     tuple(None for _ in outputs))
    try:
        with np.errstate(all="ignore"):
            result = fn(*[v.data for v in inputs], **arguments)
    except NNRtError as exc:
        raise ConversionIssue(INVALID_MODEL, f"evaluating constant {node.op.name}: {exc.message}") from None
    results = result if isinstance(result, tuple) else (result,)
    if sum(np.size(r) for r in results) > MAX_FOLDED_ELEMENTS:
        return False
    for position, (value, array) in enumerate(zip(outputs, results)):
        array = np.asarray(array)
        if fuse and position == 0:
            array = apply_fused_activation(array, fuse)
        value.data = np.ascontiguousarray(array.astype(value.dtype, copy=False)).reshape(array.shape)  # (keeps 0-d)
        value.shape = tuple(array.shape)
    return True
