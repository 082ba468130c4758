"""The generic converter: a row without a registered converter maps inputs and attributes 1:1 onto one NNRt op,
after checking every input's dtype against the op's dtypes; and the helpers converters share for that."""
from __future__ import annotations

import numpy as np

from ..enums import OH_NN_OperationType as OP
from ..ir import transforms
from ..ir.issues import UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE, ConversionIssue
from ..optable import op_spec
from .context import NodeContext


def row_params(ctx: NodeContext) -> dict:
    """Parameters from the row's attribute rules; raises for values the rules cannot take."""
    params = {}
    for name, rule in ctx.row.attrs.items():
        present = name in ctx.attrs
        value = ctx.attr(name, rule.default)
        if rule.ignore is not None:
            continue
        if rule.require is not None:
            if present and value != rule.require:
                raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"{name}={value!r} is not supported (only {rule.require!r})")
            continue
        if value is None or rule.param is None:
            continue
        if rule.transform:
            value = transforms.apply(rule.transform, value)
        params[rule.param] = value
    return params


def emit_row(ctx: NodeContext) -> None:
    """One NNRt op (the row's), its inputs and parameters mapped by the row's input positions and attribute rules."""
    positions = ctx.row.inputs if ctx.row.inputs is not None else range(len(ctx.node.input))
    inputs = [ctx.input(p) for p in positions if ctx.has_input(p)]
    ctx.emit(ctx.row.nnrt_op, inputs, list(ctx.node.output), row_params(ctx))


def check_dtype(ctx: NodeContext, name: str, allowed, what: str | None = None, by: str | None = None) -> np.dtype:
    """The dtype of ``name``; raises UNSUPPORTED_DTYPE unless it is one of ``allowed`` (numpy names)."""
    dtype = np.dtype(ctx.value(name).dtype)
    if dtype.name not in allowed:
        what = what or f"input {name!r}"
        by = by or f"{ctx.node.op_type} on NNRt"
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{what} has dtype {dtype.name}: {by} supports "
                                                 f"{', '.join(allowed)}", tensor=name)
    return dtype


def check_op_dtype(ctx: NodeContext, name: str, op: OP, what: str | None = None) -> np.dtype:
    """Check ``name`` against the dtypes the NNRt op ``op`` computes in (its entry's ``dtypes``)."""
    allowed = op_spec(op).raw.get("dtypes")
    if allowed is None:
        return np.dtype(ctx.value(name).dtype)
    return check_dtype(ctx, name, allowed, what, by=op.name)


def bshape(*shapes):
    """Numpy broadcast of shapes with -1 for unknown dims; None when a rank is unknown."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = [s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0]
        known = [d for d in dims if d > 1]
        if known:
            out.append(known[0])
        elif any(d < 0 for d in dims):
            out.append(-1)
        else:
            out.append(min(dims) if dims else 1)
    return tuple(out)


def convert_generic(ctx: NodeContext) -> None:
    """The converter of rows without a registered one: dtype checks, the broadcast output shape, one NNRt op."""
    op = ctx.row.nnrt_op
    positions = ctx.row.inputs if ctx.row.inputs is not None else range(len(ctx.node.input))
    for position in positions:
        if ctx.has_input(position):
            check_op_dtype(ctx, ctx.input(position), op, f"input #{position} {ctx.input(position)!r}")
    ctx.settle(ctx.output(0), bshape(*(ctx.value(ctx.input(p)).shape for p in positions if ctx.has_input(p))))
    emit_row(ctx)
