"""Constant folding: an NNRt node whose inputs are all constants is evaluated now, by its native kernel.

The size of what folding would produce is computed from the kernel's shape rule *before* anything is evaluated:
an output above the budget (``max_bytes``, 256 MiB by default) is not folded, the node stays an operation. (The
ONNX importer turns Shape and Size of a tensor whose shape is known into constants itself.)
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import NNRtError
from ..runtime.invoke import call
from .budget import DEFAULT_MAX_CONSTANT_BYTES  # bigger results would bloat the model with data a kernel rebuilds
from .graph import Graph, Node
from .issues import INVALID_MODEL, ConversionIssue
from .quantized import carry_through
from .shapes import require_known, rule_shapes, static_bytes


def fits_budget(shapes, dtypes, max_bytes: int) -> bool:
    """Whether tensors of these (rule-computed) shapes and dtypes hold at most ``max_bytes`` each; an unknown
    shape never fits (nothing is evaluated to find out)."""
    for shape, dtype in zip(shapes, dtypes):
        size = static_bytes(shape, np.dtype(dtype).itemsize)
        if size is None or size > max_bytes:
            return False
    return True


def try_fold(graph: Graph, node: Node, max_bytes: int = DEFAULT_MAX_CONSTANT_BYTES,
             admit: Callable[[int], bool] | None = None) -> bool:
    """Evaluate ``node`` if every input is a constant and each output fits ``max_bytes`` (and ``admit`` accepts
    their total bytes: the import's cumulative budget); store its outputs as constants. Returns whether it did."""
    require_known(graph, (*node.inputs, *node.outputs))
    inputs = [graph.values[name] for name in node.inputs]
    outputs = [graph.values[name] for name in node.outputs]
    if any(o.quant is not None for o in outputs) or any(v.quant is not None for v in inputs):
        return False
    if not inputs or any(v.data is None for v in inputs):
        return False
    try:
        shapes = rule_shapes(graph, node)
    except (ValueError, TypeError, IndexError, KeyError, ArithmeticError):
        return False  # the rule cannot tell: not folded (the kernel reports the problem at run time)
    dtypes = [o.dtype for o in outputs]
    if not fits_budget(shapes, dtypes, max_bytes):
        return False
    if admit is not None and not admit(sum(static_bytes(s, np.dtype(d).itemsize) for s, d in zip(shapes, dtypes))):
        return False
    values = node.values()
    try:
        results = call(node.op, values, [v.data for v in inputs], [v.dtype for v in inputs],
                       [o.dtype for o in outputs], [o.shape or () for o in outputs])
    except NNRtError as exc:
        raise ConversionIssue(INVALID_MODEL, f"evaluating constant {node.op.name}: {exc.message}") from None
    except (ValueError, IndexError, TypeError, KeyError, ArithmeticError) as exc:  # as OH_NN_FAILED at run time
        text = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ConversionIssue(INVALID_MODEL, f"evaluating constant {node.op.name}: {text}") from None
    if results is None:  # no kernel for it
        return False
    for value, array in zip(outputs, results):
        value.data = np.ascontiguousarray(array.astype(value.dtype, copy=False)).reshape(array.shape)  # (keeps 0-d)
        value.shape = tuple(array.shape)
    if inputs[0].integer is not None:  # a dequantized constant moved: its integers move alike
        carry_through(node, inputs, outputs, lambda arrays: call(
            node.op, values, arrays, [a.dtype for a in arrays], [arrays[0].dtype], [o.shape for o in outputs]))
    return True


def fold_within_budget(graph: Graph, node: Node) -> bool:
    """``try_fold`` within what is left of the import's memory budget (``ir/budget.py``), judged from the output
    shapes (the op's shape rule on the constant inputs, never what the model declares) before the kernel runs; the
    node also counts against the import's operation limits."""
    from . import budget

    active = budget.active_budget()
    if active is not None:
        active.count_operation(node.origin)
    limits = budget.current()
    return try_fold(graph, node, limits.limit, admit=limits.admit)
