"""Export of the linear NNRt ops: MATMUL and FULL_CONNECTION.

Decisions:

* A quantized FULL_CONNECTION weight keeps the function form (the importer's Gemm rebuilds the weight without its
  quant params), its int32 bias scaled by input_scale * weight_scale inside the body.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from ._common import (
    _cast_to,
    _data,
    _dtype,
    _export,
    _has_params,
    _i64,
    _in_shape,
    _into,
    _rank,
    _scalar,
    _widen,
    _work,
)


def _source_quant(ctx: ExportContext, position: int):
    """The quant params of input ``position`` before it was dequantized for this op (None: it was not)."""
    name = ctx.input(position)
    quant = getattr(ctx.value(name), "source_quant", None)
    if quant is not None:
        return quant
    original = next((k for k, v in ctx.builder.dequantized.items() if v == name), None)
    return None if original is None else ctx.value(original).quant


_MATMUL_NATIVE = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64)}


@_export("OH_NN_OPS_MATMUL")
def matmul(ctx: ExportContext) -> None:
    a, b = ctx.input(0), ctx.input(1)
    dtype = _dtype(ctx, a)
    ranks = [_rank(ctx, ctx.input(0)), _rank(ctx, ctx.input(1))]
    flags = [bool(_scalar(ctx.args["transpose_a"])) and ranks[0] >= 2,
             bool(_scalar(ctx.args["transpose_b"])) and ranks[1] >= 2]
    if not any(flags) and dtype in _MATMUL_NATIVE:
        ctx.add("MatMul", [a, b], [ctx.result(0)], main=True)
        return

    def build(f: FunctionBody) -> None:
        operands = []
        for name, flag, rank in zip(f.inputs, flags, ranks):
            name = _widen(f, name, dtype)
            if flag:
                name = f.one("Transpose", [name], perm=list(range(rank - 2)) + [rank - 1, rank - 2])
            operands.append(name)
        _cast_to(f, f.one("MatMul", operands), _work(dtype), dtype, "y0")

    emit_custom(ctx, build)


def _bias_scale(ctx: ExportContext) -> np.ndarray | None:
    """A quantized layer's integer bias without quant params is read with the scale input_scale * weight_scale
    (the kernel's reading); None when the bias is not such a bias."""
    bias = ctx.value(ctx.input(2))
    q_in, q_w = _source_quant(ctx, 0), _source_quant(ctx, 1)
    if bias.dtype.kind not in "iu" or bias.quant is not None or q_in is None or q_w is None:
        return None
    s_in = np.asarray(q_in.scales, np.float64).reshape(-1)
    s_w = np.asarray(q_w.scales, np.float64).reshape(-1)
    if s_in.size != 1:
        raise ExportIssue("FULL_CONNECTION: a per-channel quantized input gives no bias scale")
    return s_in[0] * s_w


@_export("OH_NN_OPS_FULL_CONNECTION")
def full_connection(ctx: ExportContext) -> None:
    """Gemm(transB) for a 2-D input with constant float weight (and bias); otherwise a function: the input as rows
    of in_channels values (or flattened from ``axis`` with use_axis), times weight^T, plus bias (an integer bias of
    a quantized layer times input_scale * weight_scale). A quantized weight always takes the function (the
    importer's Gemm rebuilds the weight and would drop its quant params)."""
    x = ctx.input(0)
    shape = ctx.value(x).shape or ()  # leading dims may be dynamic (a batch)
    dtype = _dtype(ctx, x)
    has_bias = len(ctx.node.inputs) > 2
    bias_scale = _bias_scale(ctx) if has_bias else None
    n_out, k = _in_shape(ctx, 1)
    weight_ok = _data(ctx, 1) is not None and _source_quant(ctx, 1) is None
    bias_ok = not has_bias or (_data(ctx, 2) is not None and _rank(ctx, ctx.input(2)) <= 1
                               and _dtype(ctx, ctx.input(2)) == dtype)
    if (len(shape) == 2 and shape[1] == k and not ctx.args.get("use_axis") and weight_ok and bias_ok
            and _has_params(ctx) and dtype in (np.float32, np.float64)):
        ctx.add("Gemm", list(ctx.node.inputs), [ctx.result(0)], main=True, transB=1)
        return
    out_shape = list(ctx.value(ctx.output(0)).shape)
    if sum(d < 0 for d in out_shape) > 1:
        raise ExportIssue(f"{ctx.node.op.name}: output dims {out_shape} have more than one dynamic dim")
    work = _work(dtype)

    def build(f: FunctionBody) -> None:
        rows = f.one("Reshape", [_widen(f, f.inputs[0], dtype), _i64(f, [-1, k])])
        weight = f.one("Transpose", [_widen(f, f.inputs[1], dtype)], perm=[1, 0])
        y = f.one("MatMul", [rows, weight])
        if has_bias:
            bias = f.one("Reshape", [_cast_to(f, f.inputs[2], _dtype(ctx, ctx.input(2)), work), _i64(f, [n_out])])
            if bias_scale is not None:
                bias = f.one("Mul", [bias, f.constant(np.asarray(bias_scale, work).reshape(-1))])
            y = f.one("Add", [y, bias])
        y = _cast_to(f, y, work, dtype)
        if out_shape != [int(prod(out_shape[:-1])), n_out] or len(out_shape) != 2:
            f.one("Reshape", [y, _i64(f, out_shape)], "y0")
        else:
            _into(f, y, "y0")

    emit_custom(ctx, build)
