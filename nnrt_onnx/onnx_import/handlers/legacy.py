"""ONNX opsets 1-6 of the binary arithmetic ops (Add, Sub, Mul, Div, Pow) and PRelu.

Before opset 7 these ops did not broadcast numpy-style. With ``broadcast=1`` B's shape is a contiguous
subsequence of A's starting at ``axis`` (default: suffix-aligned); B may also have a single element, and a B dim
of 1 stretches to A's dim (the pytorch exporter writes e.g. A [2, 3], B [2, 1], axis=0). Without ``broadcast``
the shapes must be equal. PRelu-1/6's slope has one element (shared) or one per channel (axis 1).

Each handler aligns B (reshaping it to A's rank: ``[1]*axis + B.shape + [1]*rest``, so numpy broadcasting then
means the same), then delegates to the opset-7 row's conversion with B replaced. ``consumed_inputs`` (opset 1-5:
marks in-place use) has no effect on the result and is ignored.
"""
from __future__ import annotations

import copy

import numpy as np

from ...ir.issues import INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, ConversionIssue
from ...ir.rows import find_row
from ..context import NodeContext
from . import converts, handler_for

MODERN = 7  # the first opset with numpy broadcasting


def _read_consumed_inputs(ctx: NodeContext) -> None:
    """``consumed_inputs`` exists in the version-1 schemas only (opsets 1-5); it marks in-place use: ignored."""
    if "consumed_inputs" in ctx.attrs and ctx.opset >= 6:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"consumed_inputs is not an attribute of "
                                                     f"{ctx.node.op_type} at opset {ctx.opset} (only opsets 1-5)")
    ctx.attr("consumed_inputs")


def _delegate(ctx: NodeContext, replaced: dict[int, str]) -> None:
    """Run the opset-7 conversion of this node with some inputs replaced by (aligned) IR values."""
    row = find_row(ctx.node.op_type, MODERN)
    if row is None:
        raise ConversionIssue(INVALID_MODEL, f"no opset-{MODERN} row for {ctx.node.op_type} to delegate to")
    proxy = copy.copy(ctx)  # shares attrs / used_attrs with ctx, so attribute bookkeeping stays in one place
    proxy.row = row
    original_input = ctx.input
    proxy.input = lambda position: replaced[position] if position in replaced else original_input(position)
    handler_for(row)(proxy)


def _align(ctx: NodeContext, name: str, shape: tuple[int, ...]) -> str:
    """``name`` reshaped to ``shape`` (a constant is reshaped offline)."""
    value = ctx.value(name)
    if tuple(value.shape) == tuple(shape):
        return name
    if value.data is not None:
        return ctx.constant(np.ascontiguousarray(value.data.reshape(shape)), f"{name}.aligned")
    ctx.static_shape(name, "B (broadcast along an axis)")
    return ctx.reshape(name, shape)


@converts("Add", "Div", "Mul", "Pow", "Sub", since=1)
def legacy_binary(ctx: NodeContext) -> None:
    """Add/Sub/Mul/Div/Pow before opset 7: ``broadcast``/``axis`` alignment of B, then the opset-7 conversion."""
    _read_consumed_inputs(ctx)
    broadcast = int(ctx.attr("broadcast", 0))
    axis = ctx.attr("axis")
    a, b = ctx.input(0), ctx.input(1)
    a_shape, b_shape = ctx.value(a).shape, ctx.value(b).shape
    if a_shape is None or b_shape is None:
        ctx.rank(a), ctx.rank(b)  # raises DYNAMIC_SHAPE naming the tensor
    op = ctx.node.op_type
    if broadcast not in (0, 1):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"broadcast={broadcast} is not supported (0 or 1)")
    if not broadcast:
        if axis is not None:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"axis={axis} needs broadcast=1 ({op} opset {ctx.opset})")
        same_rank = len(a_shape) == len(b_shape)
        if not same_rank or any(x >= 0 and y >= 0 and x != y for x, y in zip(a_shape, b_shape)):
            raise ConversionIssue(INVALID_MODEL, f"{op} (opset {ctx.opset}) without broadcast=1 needs equal shapes, "
                                                 f"got A {list(a_shape)} and B {list(b_shape)}")
        _delegate(ctx, {})
        return
    rank_a, rank_b = len(a_shape), len(b_shape)
    b_size = int(np.prod(b_shape)) if all(d >= 0 for d in b_shape) else -1
    if b_size == 1 and axis is None:  # a single element (any rank <= A's): broadcasts everywhere
        if rank_b > rank_a:
            raise ConversionIssue(INVALID_MODEL, f"{op}: B {list(b_shape)} has a higher rank than A {list(a_shape)}")
        _delegate(ctx, {})
        return
    start = rank_a - rank_b if axis is None else int(axis)
    if start < 0 and axis is not None:
        start += rank_a
    if start < 0 or start + rank_b > rank_a:
        raise ConversionIssue(INVALID_MODEL, f"{op}: B {list(b_shape)} does not fit A {list(a_shape)} at axis="
                                             f"{axis if axis is not None else 'suffix'}")
    for i, d in enumerate(b_shape):
        ad = a_shape[start + i]
        if d >= 0 and ad >= 0 and d != ad and d != 1:
            raise ConversionIssue(INVALID_MODEL, f"{op}: B {list(b_shape)} does not match A {list(a_shape)} at axis "
                                                 f"{start} (dim {i}: {d} vs {ad})")
    aligned = (1,) * start + tuple(b_shape) + (1,) * (rank_a - start - rank_b)
    _delegate(ctx, {1: _align(ctx, b, aligned)})


@converts("PRelu", since=1)
def legacy_prelu(ctx: NodeContext) -> None:
    """PRelu-1/6: a slope of one element is shared; a 1-D slope with X.shape[1] elements is per channel (axis 1,
    also for X of rank 3 or 5, where numpy broadcasting would align it with the last axis); any other slope must
    broadcast numpy-style to X (e.g. X's own shape) and then means the same in both readings."""
    _read_consumed_inputs(ctx)
    x, slope = ctx.input(0), ctx.input(1)
    x_shape, s_shape = ctx.value(x).shape, ctx.value(slope).shape
    if x_shape is None or s_shape is None:
        ctx.rank(x), ctx.rank(slope)
    if len(s_shape) == 1 and len(x_shape) >= 2 and s_shape[0] > 1 and s_shape[0] == x_shape[1]:
        per_channel = (s_shape[0],) + (1,) * (len(x_shape) - 2)
        _delegate(ctx, {1: _align(ctx, slope, per_channel)})
        return
    size = int(np.prod(s_shape)) if all(d >= 0 for d in s_shape) else -1
    if size == 1:
        _delegate(ctx, {})
        return
    fits = len(s_shape) <= len(x_shape) and all(
        s in (1, d) or s < 0 or d < 0 for s, d in zip(s_shape[::-1], x_shape[::-1]))
    if not fits:
        raise ConversionIssue(INVALID_MODEL, f"PRelu (opset {ctx.opset}): slope {list(s_shape)} is neither one "
                                             f"element, nor one per channel of X {list(x_shape)}, nor broadcastable "
                                             f"to X")
    _delegate(ctx, {})
