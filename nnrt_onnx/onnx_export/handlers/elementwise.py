"""Export of the element-wise NNRt ops: arithmetic, unary math, comparisons, logic, selection, CAST and SCALE --
each one standard ONNX node, or an NNRt-domain function, through the element-wise machinery of ``_common``.

Decisions:

* Integer DIV truncates toward zero like ONNX Div on integers, so DIV stays Div. MOD is ``Mod(fmod=1)`` (C
  remainder), which the importer maps back to MOD.
* Integer POW is computed in int64 (onnxruntime evaluates integer Pow through double: exact while the true power
  stays below 2^53); an int64 power beyond that can differ from the native (wrapping) kernel.
* NNRt-only ops become functions: SQUARED_DIFFERENCE, RSQRT, SQUARE, BIAS_ADD, ELTWISE, POW / EXP with scale or
  shift, NOT_EQUAL on numbers (Xor is NOT_EQUAL only on BOOL), SELECT (a rank-1 condition picks whole rows:
  Unsqueeze then Where), SCALE.
"""
from __future__ import annotations

import numpy as np

from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter as _register
from ._common import (
    _cast_to,
    _const,
    _dtype,
    _elem,
    _export,
    _in_dtypes,
    _out_dtype,
    _runs_in,
    _work,
    emit_body,
    emit_function,
    emit_node,
    exporter,
)

BOOL = np.dtype(np.bool_)


# -- binary arithmetic --------------------------------------------------------------------------------------------

def _arithmetic(op_type: str):
    def export(ctx: ExportContext) -> None:
        emit_node(ctx, op_type, _out_dtype(ctx))
    return export


for _op, _op_type in (("ADD", "Add"), ("SUB", "Sub"), ("MUL", "Mul"), ("DIV", "Div"), ("MAXIMUM", "Max"),
                      ("MINIMUM", "Min")):
    exporter(f"OH_NN_OPS_{_op}")(_arithmetic(_op_type))


@exporter("OH_NN_OPS_MOD")
def mod(ctx: ExportContext) -> None:
    """C remainder (sign of the dividend) = ONNX Mod(fmod=1), which the importer maps back to MOD."""
    emit_node(ctx, "Mod", _out_dtype(ctx), fmod=1)


@exporter("OH_NN_OPS_BIAS_ADD")
def bias_add(ctx: ExportContext) -> None:
    """input + bias (1-D, the last axis): numpy broadcasting already aligns it with the last axis."""
    emit_node(ctx, "Add", _out_dtype(ctx), standalone=False)


_ELTWISE_MODES = {0: "Mul", 1: "Add", 2: "Max"}


@exporter("OH_NN_OPS_ELTWISE")
def eltwise(ctx: ExportContext) -> None:
    mode = int(ctx.args["mode"])
    if mode not in _ELTWISE_MODES:
        raise ExportIssue(f"ELTWISE mode {mode} names no operation (0 PROD, 1 SUM, 2 MAXIMUM)")
    emit_node(ctx, _ELTWISE_MODES[mode], _out_dtype(ctx), standalone=False)


@exporter("OH_NN_OPS_SQUARED_DIFFERENCE")
def squared_difference(ctx: ExportContext) -> None:
    """(a - b)^2; on BOOL (0/1 values) a != b, i.e. Xor."""
    compute = _out_dtype(ctx)
    if compute == BOOL:
        emit_node(ctx, "Xor", BOOL, standalone=False)
        return

    def body(f: FunctionBody, xs: list[str], dt: np.dtype) -> str:
        d = f.one("Sub", xs)
        return f.one("Mul", [d, d])

    emit_body(ctx, _runs_in("Mul", _runs_in("Sub", compute, ctx.opset), ctx.opset), body)


def _pow_dtype(dtype: np.dtype) -> np.dtype:
    """Integer powers are taken in int64 (see the module notes); floats as they are."""
    return dtype if dtype.kind == "f" else np.dtype(np.int64)


@exporter("OH_NN_OPS_POW")
def pow_(ctx: ExportContext) -> None:
    """(scale * input + shift) ^ y: Pow alone when scale = 1 and shift = 0, both operands of one float (or int64)
    dtype; else a function (the scaled base computed in the operands' dtype, as the kernel does)."""
    compute = _out_dtype(ctx)
    scale, shift = float(ctx.args["scale"]), float(ctx.args["shift"])
    identity = scale == 1.0 and shift == 0.0
    if identity:
        emit_node(ctx, "Pow", _pow_dtype(compute))
        return
    if compute.kind != "f":
        raise ExportIssue(f"POW scale/shift on {compute.name} (the native kernel rejects them too)")

    def body(f: FunctionBody, xs: list[str], dt: np.dtype) -> str:
        base = f.one("Add", [f.one("Mul", [xs[0], _const(f, scale, dt)]), _const(f, shift, dt)])
        return f.one("Pow", [base, xs[1]])

    emit_body(ctx, compute, body)


# -- unary math ---------------------------------------------------------------------------------------------------

@exporter("OH_NN_OPS_RSQRT")
def rsqrt(ctx: ExportContext) -> None:
    """1 / sqrt(x); float16 is evaluated in float32 and rounded once, as the kernel does."""
    dt = _dtype(ctx, ctx.input(0))
    emit_body(ctx, _work(dt), lambda f, xs, d: f.one("Reciprocal", [f.one("Sqrt", xs)]))


@exporter("OH_NN_OPS_SQUARE")
def square(ctx: ExportContext) -> None:
    dt = _dtype(ctx, ctx.input(0))
    emit_body(ctx, _runs_in("Mul", dt, ctx.opset), lambda f, xs, d: f.one("Mul", [xs[0], xs[0]]))


@exporter("OH_NN_OPS_EXP")
def exp(ctx: ExportContext) -> None:
    """base ^ (shift + scale * x), base -1 meaning e: Exp alone for the defaults; else a function evaluating it as
    the kernel does (float16 in float32, rounded once)."""
    base, scale, shift = float(ctx.args["base"]), float(ctx.args["scale"]), float(ctx.args["shift"])
    dt = _dtype(ctx, ctx.input(0))
    if base == -1.0 and scale == 1.0 and shift == 0.0:
        emit_node(ctx, "Exp", dt)
        return
    if not (base > 0 or base == -1.0):
        raise ExportIssue(f"EXP base {base} must be > 0 or -1 (meaning e)")

    def body(f: FunctionBody, xs: list[str], d: np.dtype) -> str:
        t = xs[0]
        if scale != 1.0 or shift != 0.0:
            t = f.one("Add", [f.one("Mul", [t, _const(f, scale, d)]), _const(f, shift, d)])
        return f.one("Exp", [t]) if base == -1.0 else f.one("Pow", [_const(f, base, d), t])

    emit_body(ctx, _work(dt), body)


# -- comparisons and logic ----------------------------------------------------------------------------------------

def _compare_dtype(ctx: ExportContext) -> np.dtype:
    """numpy's comparison dtype (the kernels compare with numpy): BOOL with BOOL stays BOOL."""
    a, b = _in_dtypes(ctx)[:2]
    return np.promote_types(a, b)


def _comparison(op_type: str):
    def export(ctx: ExportContext) -> None:
        emit_node(ctx, op_type, _compare_dtype(ctx), result_dtype=BOOL)
    return export


for _op, _op_type in (("EQUAL", "Equal"), ("LESS", "Less"), ("LESS_EQUAL", "LessOrEqual"), ("GREATER", "Greater"),
                      ("GREATER_EQUAL", "GreaterOrEqual")):
    exporter(f"OH_NN_OPS_{_op}")(_comparison(_op_type))


@exporter("OH_NN_OPS_NOT_EQUAL")
def not_equal(ctx: ExportContext) -> None:
    """Xor on two BOOL tensors (what the importer maps back to NOT_EQUAL); otherwise Not(Equal) in a function."""
    compute = _compare_dtype(ctx)
    if compute == BOOL:
        emit_node(ctx, "Xor", BOOL)
        return
    run = _runs_in("Equal", compute, ctx.opset)
    in_dtypes = _in_dtypes(ctx)
    emit_function(ctx, lambda f, xs: f.one("Not", [f.one("Equal", [_cast_to(f, x, d, run)
                                                                  for x, d in zip(xs, in_dtypes)])]))


def _logical(op_type: str):
    def export(ctx: ExportContext) -> None:
        """Non-BOOL operands are read as booleans (non-zero is true): cast to BOOL first, in a function."""
        emit_node(ctx, op_type, BOOL)
    return export


for _op, _op_type in (("LOGICAL_AND", "And"), ("LOGICAL_OR", "Or"), ("LOGICAL_NOT", "Not")):
    exporter(f"OH_NN_OPS_{_op}")(_logical(_op_type))


# -- selection ----------------------------------------------------------------------------------------------------

@exporter("OH_NN_OPS_WHERE")
def where(ctx: ExportContext) -> None:
    if _dtype(ctx, ctx.input(0)) != BOOL:
        raise ExportIssue("WHERE: the condition must be BOOL")
    emit_node(ctx, "Where", _out_dtype(ctx), keep=(0,))


@exporter("OH_NN_OPS_SELECT")
def select(ctx: ExportContext) -> None:
    """Where in a function (a standalone Where would import as WHERE); a rank-1 condition under higher-rank inputs
    picks whole rows: it is unsqueezed to [n, 1, ..., 1] first."""
    c, a, b = ctx.node.inputs
    if _dtype(ctx, c) != BOOL:
        raise ExportIssue("SELECT: the condition must be BOOL")
    shapes = [ctx.value(n).shape for n in (c, a, b)]
    if any(s is None for s in shapes):
        raise ExportIssue("SELECT: the ranks of the operands must be known")
    rank = max(len(shapes[1]), len(shapes[2]))
    rows = len(shapes[0]) == 1 and rank > 1
    compute = _out_dtype(ctx)
    run = _runs_in("Where", compute, ctx.opset)
    in_dtypes = _in_dtypes(ctx)

    def body(f: FunctionBody, xs: list[str]) -> str:
        cond = xs[0]
        if rows:
            cond = f.one("Unsqueeze", [cond, f.constant(np.arange(1, rank, dtype=np.int64))])
        values = [_cast_to(f, x, d, run) for x, d in zip(xs[1:], in_dtypes[1:])]
        return _cast_to(f, f.one("Where", [cond] + values), run, compute)

    emit_function(ctx, body)


# -- conversion ---------------------------------------------------------------------------------------------------

@_export("OH_NN_OPS_CAST")
def cast(ctx: ExportContext) -> None:
    """C conversion to the output's type (float -> int truncates, -> bool is != 0: ONNX Cast does the same)."""
    source, target = _dtype(ctx, ctx.input(0)), _dtype(ctx, ctx.output(0))
    if ctx.value(ctx.output(0)).quant is not None:
        raise ExportIssue("CAST to a quantized output is not exported yet")
    if source != target:
        ctx.add("Cast", [ctx.input(0)], [ctx.result(0)], main=True, to=_elem(target))
        return
    emit_custom(ctx, lambda f: f.one("Identity", f.inputs[:1], "y0"))


# -- NNRt-only ops exported as NNRt-domain functions of standard ONNX ops -----------------------------------------

@_register("OH_NN_OPS_SCALE")
def scale(ctx: ExportContext) -> None:
    """y = x * scale + bias, scale/bias covering input dims [axis, axis + scale.ndim)."""
    rank = len(ctx.value(ctx.input(0)).shape)
    axis = int(ctx.args["axis"]) % rank
    scale_rank = len(ctx.value(ctx.input(1)).shape)

    def build(f: FunctionBody) -> None:
        x, s, b = f.inputs
        trailing = rank - axis - scale_rank
        if trailing > 0:
            axes = f.constant(np.arange(scale_rank, scale_rank + trailing, dtype=np.int64))
            s = f.one("Unsqueeze", [s, axes])
            b = f.one("Unsqueeze", [b, axes])
        f.one("Add", [f.one("Mul", [x, s]), b], "y0")

    emit_custom(ctx, build)
