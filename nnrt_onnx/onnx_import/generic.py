"""The generic converter: a row without a handler maps inputs and attributes 1:1 onto one NNRt op."""
from __future__ import annotations

from ..ir import transforms
from ..ir.issues import UNSUPPORTED_ATTRIBUTE, ConversionIssue
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


def convert_generic(ctx: NodeContext) -> None:
    positions = ctx.row.inputs if ctx.row.inputs is not None else range(len(ctx.node.input))
    inputs = [ctx.input(p) for p in positions if ctx.has_input(p)]
    ctx.emit(ctx.row.nnrt_op, inputs, list(ctx.node.output), row_params(ctx))
