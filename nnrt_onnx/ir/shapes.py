"""Output shapes of an IR node from its kernel's shape rule, merged with what is already known about them.

The importer calls :func:`refine_output_shapes` on every node it emits: a dim ONNX shape inference left unknown
(-1, or a whole unknown rank) is filled in from the rule; a known dim the rule contradicts is an error naming
both shapes. Shapes are plain tuples: -1 for an unknown dim, None for an unknown rank.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import NNRtError
from ..kernels import infer_output_shapes
from .graph import Graph, Node
from .issues import INVALID_MODEL, ConversionIssue

Shape = "tuple[int, ...] | None"


def require_known(graph: Graph, names) -> None:
    """invalid_model when a tensor ``node`` reads or writes was never declared (e.g. an input whose own declaration
    failed and was reported)."""
    missing = [name for name in names if name not in graph.values]
    if missing:
        raise ConversionIssue(INVALID_MODEL, f"tensor {missing[0]!r} is not known at this point", tensor=missing[0])


def rule_shapes(graph: Graph, node: Node) -> tuple[tuple[int, ...] | None, ...]:
    """The shapes the kernel of ``node`` produces, from its inputs' shapes and constant values."""
    require_known(graph, (*node.inputs, *node.outputs))
    inputs = [graph.values[name] for name in node.inputs]
    try:
        return infer_output_shapes(node.op, [v.shape for v in inputs], [v.data for v in inputs], node.values(),
                                   output_count=len(node.outputs))
    except NNRtError as exc:
        op = node.op.name[len("OH_NN_OPS_"):]
        message = exc.message if exc.message.startswith(f"{op}:") else f"{op}: {exc.message}"
        raise ConversionIssue(INVALID_MODEL, message) from None


def merge_shapes(known: Sequence[int] | None, inferred: Sequence[int] | None) -> tuple[int, ...] | None:
    """Two descriptions of one shape combined (each dim known in either); ValueError when they contradict."""
    if inferred is None:
        return None if known is None else tuple(known)
    if known is None:
        return tuple(inferred)
    if len(known) != len(inferred):
        raise ValueError("ranks differ")
    merged = []
    for a, b in zip(known, inferred):
        if a >= 0 and b >= 0 and a != b:
            raise ValueError("dims differ")
        merged.append(a if a >= 0 else b)
    return tuple(merged)


def _shown(shape) -> str:
    return "unknown rank" if shape is None else "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def refine_output_shapes(graph: Graph, node: Node) -> None:
    """Give the outputs of ``node`` the shapes its kernel's rule computes (merged with the known ones)."""
    for name, inferred in zip(node.outputs, rule_shapes(graph, node)):
        value = graph.values[name]
        if value.data is not None:
            continue
        try:
            value.shape = merge_shapes(value.shape, inferred)
        except ValueError:
            op = node.op.name[len("OH_NN_OPS_"):]
            raise ConversionIssue(INVALID_MODEL, f"the model says {name!r} has shape {_shown(value.shape)}, but "
                                                 f"{op} computes {_shown(inferred)} from its inputs "
                                                 f"({', '.join(_shown(graph.values[i].shape) for i in node.inputs)})",
                                  tensor=name) from None


def static_bytes(shape: Sequence[int] | None, itemsize: int) -> int | None:
    """The bytes a tensor of ``shape`` holds; None when a dim (or the rank) is unknown."""
    if shape is None or any(d < 0 for d in shape):
        return None
    total = itemsize
    for d in shape:
        total *= int(d)
    return total
