"""Export of the reduce NNRt ops: REDUCE_MEAN / SUM / PROD / MAX / MIN / L2 / ALL, ALL, ARG_MAX and TOP_K.

Decisions:

* Integer reductions run in int64 (uint64 for unsigned means) and are cast back: wrapping is the same modulo 2^n.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from ._common import (
    _cast,
    _cast_to,
    _data,
    _dtype,
    _elem,
    _export,
    _has_params,
    _i64,
    _in_shape,
    _index_vector,
    _norm,
    _rank,
    _scalar,
    _widen,
    _work,
)

# -- reductions ---------------------------------------------------------------------------------------------------

_ONNX_REDUCE = {"mean": "ReduceMean", "sum": "ReduceSum", "prod": "ReduceProd", "max": "ReduceMax",
                "min": "ReduceMin", "l2": "ReduceL2"}
# dtypes onnxruntime reduces natively exactly like the kernel (float16 accumulation differs; int means truncate
# differently; max/min are exact in any width it supports)
_NATIVE_REDUCE = {
    "mean": {np.dtype(np.float32), np.dtype(np.float64)},
    "sum": {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64)},
    "prod": {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64)},
    "max": {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64)},
    "min": {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64)},
    "l2": {np.dtype(np.float32), np.dtype(np.float64)},
}


def _reduce_axes(ctx: ExportContext, rank: int, reduce_to_end: bool) -> list[int] | None:
    """The reduced axes (constant axis input), None for a runtime axis input."""
    data = _data(ctx, 1)
    if data is None:
        return None
    axes = list(dict.fromkeys(_norm(a, rank) for a in np.asarray(data).reshape(-1)))  # each dim once (ONNX asks)
    if reduce_to_end:
        axes = list(range(axes[0], rank))
    return axes or list(range(rank))


def _reduction_body(f: FunctionBody, mode: str, x: str, dtype: np.dtype, axes: str, keep: bool, count: int | None,
                    coeff: float, out: np.dtype, output: str) -> None:
    """reduce(x) * coeff in the kernel's arithmetic, written to ``output`` as ``out``."""
    kind = dtype.kind
    if mode == "all":  # 1/0 in the input type (float, or int64 for integers), then scaled like the others
        truth = f.one("Cast", [_cast_to(f, x, dtype, np.bool_)], to=_elem(np.int32))
        result = f.one("ReduceMin", [truth, axes], keepdims=int(keep))
        if coeff == 1.0 or kind == "b":
            _cast_to(f, result, np.int32, out, output)
            return
        work = _work(dtype) if kind == "f" else np.dtype(np.int64)
        scale = np.asarray(coeff if kind == "f" else int(coeff), work)
        _cast_to(f, f.one("Mul", [_cast(f, result, work), f.constant(scale)]), work, out, output)
        return
    if kind == "f":
        work = _work(dtype)
        result = f.one(_ONNX_REDUCE[mode], [_widen(f, x, dtype), axes], keepdims=int(keep))
        if coeff != 1.0:
            result = f.one("Mul", [result, f.constant(np.asarray(coeff, work))])
        _cast_to(f, result, work, out, output)
        return
    if kind == "b":  # max/min of bools
        result = f.one(_ONNX_REDUCE[mode], [_cast(f, x, np.int32), axes], keepdims=int(keep))
        _cast_to(f, result, np.int32, out, output)
        return
    work = np.dtype(np.int64)
    wide = _cast_to(f, x, dtype, work)
    if mode == "mean":  # truncating integer mean: an int64 (uint64 for unsigned inputs) Div truncates toward zero
        result = f.one("ReduceSum", [wide, axes], keepdims=int(keep))
        if kind == "u":
            work = np.dtype(np.uint64)
            result = _cast(f, result, work)
        result = f.one("Div", [result, f.constant(np.asarray(count, work))])
    else:
        result = f.one(_ONNX_REDUCE[mode], [wide, axes], keepdims=int(keep))
    if coeff != 1.0:
        result = f.one("Mul", [result, f.constant(np.asarray(int(coeff), work))])
    _cast_to(f, result, work, out, output)


def _reduce(ctx: ExportContext, mode: str) -> None:
    x = ctx.input(0)
    shape = _in_shape(ctx)
    rank = len(shape)
    dtype = _dtype(ctx, x)
    out = _dtype(ctx, ctx.output(0))
    keep = bool(ctx.args["keep_dims"])
    to_end = bool(ctx.args.get("reduce_to_end", False))
    coeff = float(_scalar(ctx.args.get("coeff", 1.0)))
    axes = _reduce_axes(ctx, rank, to_end)
    if (mode != "all" and axes is not None and not to_end and coeff == 1.0 and _has_params(ctx)
            and dtype in _NATIVE_REDUCE[mode]):
        ctx.add(_ONNX_REDUCE[mode], [x, ctx.constant(np.asarray(axes, np.int64), "axes")], [ctx.result(0)],
                main=True, keepdims=int(keep))
        return
    if axes is None and (to_end or (mode == "mean" and dtype.kind in "iu")):
        raise ExportIssue(f"{ctx.node.op.name}: reduce_to_end or an integer mean needs a constant axis input")
    if dtype.kind in "iub" and coeff != 1.0 and not float(coeff).is_integer():
        raise ExportIssue(f"{ctx.node.op.name}: coeff {coeff} on {dtype.name} (the kernel rejects it too)")
    count = None if axes is None else int(prod(shape[a] for a in axes))

    def build(f: FunctionBody) -> None:
        if axes is not None:
            axis_input = _i64(f, axes)
        else:
            axis_input = _index_vector(ctx, f, 1)
        _reduction_body(f, mode, f.inputs[0], dtype, axis_input, keep, count, coeff, out, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_REDUCE_MEAN")
def reduce_mean(ctx: ExportContext) -> None:
    _reduce(ctx, "mean")


@_export("OH_NN_OPS_REDUCE_SUM")
def reduce_sum(ctx: ExportContext) -> None:
    _reduce(ctx, "sum")


@_export("OH_NN_OPS_REDUCE_PROD")
def reduce_prod(ctx: ExportContext) -> None:
    _reduce(ctx, "prod")


@_export("OH_NN_OPS_REDUCE_MAX")
def reduce_max(ctx: ExportContext) -> None:
    _reduce(ctx, "max")


@_export("OH_NN_OPS_REDUCE_MIN")
def reduce_min(ctx: ExportContext) -> None:
    _reduce(ctx, "min")


@_export("OH_NN_OPS_REDUCE_L2")
def reduce_l2(ctx: ExportContext) -> None:
    _reduce(ctx, "l2")


@_export("OH_NN_OPS_REDUCE_ALL")
def reduce_all(ctx: ExportContext) -> None:
    _reduce(ctx, "all")


@_export("OH_NN_OPS_ALL")
def all_(ctx: ExportContext) -> None:
    """all(x != 0) over the axis input (runtime axes allowed; empty = every axis), in the declared output type."""
    dtype = _dtype(ctx, ctx.input(0))
    out = _dtype(ctx, ctx.output(0))
    keep = bool(_scalar(ctx.args["keep_dims"]))
    def build(f: FunctionBody) -> None:
        _reduction_body(f, "all", f.inputs[0], dtype, _index_vector(ctx, f, 1), keep, None, 1.0, out, "y0")

    emit_custom(ctx, build)


# -- arg max and top k --------------------------------------------------------------------------------------------

_ARGMAX_NATIVE = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64)}
_TOPK_NATIVE = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.int16, np.uint8, np.int32,
                                      np.int64)}


def _sortable(f: FunctionBody, x: str, dtype: np.dtype, native) -> tuple[str, np.dtype]:
    """x in a type onnxruntime sorts (int64 for the other integers: order-preserving below 2^63)."""
    if dtype in native:
        return x, dtype
    return _cast(f, x, np.int64), np.dtype(np.int64)


@_export("OH_NN_OPS_ARG_MAX")
def arg_max(ctx: ExportContext) -> None:
    """top_k 1: ArgMax (first maximum) or ReduceMax (out_max_value); top_k > 1: TopK (ties: lower index first),
    the axis kept with size top_k."""
    shape = _in_shape(ctx)
    axis = _norm(_scalar(ctx.args["axis"]), len(shape))
    keep = bool(_scalar(ctx.args["keep_dims"]))
    k = int(_scalar(ctx.args["top_k"]))
    values = bool(_scalar(ctx.args["out_max_value"]))
    dtype = _dtype(ctx, ctx.input(0))
    out = _dtype(ctx, ctx.output(0))
    if k == 1 and not values and out == np.int64 and dtype in _ARGMAX_NATIVE and _has_params(ctx):
        ctx.add("ArgMax", [ctx.input(0)], [ctx.result(0)], main=True, axis=axis, keepdims=int(keep))
        return

    def build(f: FunctionBody) -> None:
        x = f.inputs[0]
        if k == 1 and values:
            sortable, kind = _sortable(f, x, dtype, _NATIVE_REDUCE["max"])
            result = f.one("ReduceMax", [sortable, _i64(f, [axis])], keepdims=int(keep))
            _cast_to(f, result, kind, out, "y0")
        elif k == 1:
            sortable, _ = _sortable(f, x, dtype, _ARGMAX_NATIVE)
            _cast_to(f, f.one("ArgMax", [sortable], axis=axis, keepdims=int(keep)), np.int64, out, "y0")
        else:
            sortable, kind = _sortable(f, x, dtype, _TOPK_NATIVE)
            top, index = f.add("TopK", [sortable, _i64(f, [k])], [f.fresh(), f.fresh()], axis=axis)
            if values:
                _cast_to(f, top, kind, out, "y0")
            else:
                _cast_to(f, index, np.int64, out, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_TOP_K")
def top_k(ctx: ExportContext) -> None:
    """TopK largest, sorted; ``sorted=false`` gives the same k in ascending order (a second TopK, smallest first,
    over the k values keeps equal values in ascending index order). The input may have dynamic dims (the positions
    0..n-1 of a run-time n that the importer computes with TOP_K)."""
    axis = _norm(_scalar(ctx.args["axis"]), _rank(ctx, ctx.input(0)))
    ordered = bool(_scalar(ctx.args["sorted"]))
    dtype = _dtype(ctx, ctx.input(0))
    index_out = _dtype(ctx, ctx.output(1))
    k = _data(ctx, 1)
    if k is not None and ordered and index_out == np.int64 and dtype in _TOPK_NATIVE and _has_params(ctx) \
            and int(k.reshape(-1)[0]) > 0:
        k_input = ctx.constant(np.asarray(k, np.int64).reshape(1), "k")
        ctx.add("TopK", [ctx.input(0), k_input], ctx.node.outputs, main=True, axis=axis, largest=1, sorted=1)
        return
    def build(f: FunctionBody) -> None:
        x, kk = f.inputs[0], _index_vector(ctx, f, 1)
        sortable, kind = _sortable(f, x, dtype, _TOPK_NATIVE)
        top, index = f.add("TopK", [sortable, kk], [f.fresh(), f.fresh()], axis=axis)
        if not ordered:
            top, order = f.add("TopK", [top, kk], [f.fresh(), f.fresh()], axis=axis, largest=0)
            index = f.one("GatherElements", [index, order], axis=axis)
        _cast_to(f, top, kind, dtype, "y0")
        _cast_to(f, index, np.int64, index_out, "y1")

    emit_custom(ctx, build)
