"""Reductions, arg-max/top-k, normalisations and products: ONNX ops onto NNRt's REDUCE_*, ARG_MAX, TOP_K,
LAYER_NORM, INSTANCE_NORM, L2_NORMALIZE, MATMUL, ONE_HOT ... and small decompositions of them.

Decisions (also stated where they are made):
* Reduce axes are always given explicitly as an int32 constant (``reduce all`` lists every axis); COEFF=1.0 is
  always set, since the real builder's default coefficient is 0.0.
* ``noop_with_empty_axes`` with no axes applies the element-wise part of the reduction only (ReduceL1 -> |x|,
  ReduceSumSquare -> x^2, ReduceLogSum -> log x ...), as onnxruntime and the reference implementation do.
* An order-reversing map turns a "smallest" into a "largest" question (ArgMin, TopK largest=0): -x for floats,
  -1 - x (= ~x, no overflow) for signed and MAX - x for unsigned integers. Ties keep the lowest index first.
* select_last_index reverses the axis with a constant GATHER and maps the index back (n - 1 - i).
"""
from __future__ import annotations

import re
from math import prod
from typing import Sequence

import numpy as np

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from ..context import NodeContext
from . import converts
from .tensor import axes_from

# float32 smallest normal: a norm floor that only differs from "no floor" for denormal norms
_TINY = float(np.finfo(np.float32).tiny)


# ---------------------------------------------------------------------------------------------------------------
# small emit helpers
# ---------------------------------------------------------------------------------------------------------------





def _transpose(ctx: NodeContext, x: str, perm: Sequence[int], output: str | None = None) -> str:
    shape = ctx.value(x).shape
    if output is not None:
        ctx.settle(output, None if shape is None else [shape[p] for p in perm], ctx.value(x).dtype)
    return ctx.transpose(x, perm, output=output)


def _reshape(ctx: NodeContext, x: str, shape: Sequence[int], output: str | None = None) -> str:
    if output is not None:
        ctx.settle(output, shape, ctx.value(x).dtype)
    return ctx.reshape(x, shape, output=output)


def _scalar(ctx: NodeContext, value, dtype, hint: str = "scalar") -> str:
    return ctx.constant(np.asarray(value, dtype=dtype), f"{ctx.name}.{hint}")


def _norm_axis(ctx: NodeContext, axis: int, rank: int, what: str = "axis") -> int:
    axis = int(axis)
    if not -rank <= axis < max(rank, 1):
        raise ConversionIssue(INVALID_MODEL, f"{what}={axis} is out of range for an input of rank {rank}")
    return axis + rank if axis < 0 else axis


def _norm_axes(ctx: NodeContext, axes, rank: int) -> list[int]:
    out = []
    for a in axes:
        n = _norm_axis(ctx, a, rank, "axes")
        if n in out:
            raise ConversionIssue(INVALID_MODEL, f"axis {a} is repeated in axes {list(axes)}")
        out.append(n)
    return sorted(out)


def _shape(ctx: NodeContext, name: str) -> tuple[int, ...]:
    shape = ctx.value(name).shape
    if shape is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {name!r} is unknown")
    return tuple(shape)


def _reduced_shape(shape, axes, keep: bool) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)


def _float_only(ctx: NodeContext, name: str) -> None:
    dtype = ctx.value(name).dtype
    if dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} on {dtype} input is not supported "
                                                 "(float16/float32/float64 only)", tensor=name)


def _cast(ctx: NodeContext, name: str, dtype, hint: str | None = None) -> str:
    value = ctx.value(name)
    dtype = np.dtype(dtype)
    if value.dtype == dtype:
        return name
    code = ctx.constant(np.asarray(int(from_numpy(dtype)), np.int32), f"{name}.to")
    return ctx.emit_to(OP.OH_NN_OPS_CAST, [name, code], dtype, value.shape, hint or f"{name}.{dtype}")


def _binary(ctx: NodeContext, op: OP, a: str, b: str, hint: str, output: str | None = None) -> str:
    va, vb = ctx.value(a), ctx.value(b)
    if va.shape is None or vb.shape is None:
        shape = None
    else:
        rank = max(len(va.shape), len(vb.shape))
        sa = (1,) * (rank - len(va.shape)) + tuple(va.shape)
        sb = (1,) * (rank - len(vb.shape)) + tuple(vb.shape)
        shape = tuple(x if y == 1 else y if x == 1 else (x if x >= 0 else y) for x, y in zip(sa, sb))
    dtype = va.dtype if va.dtype.kind == "f" or vb.dtype.kind != "f" else vb.dtype
    return ctx.emit_to(op, [a, b], dtype, shape, hint, output=output)


def _unary(ctx: NodeContext, op: OP, x: str, hint: str, output: str | None = None) -> str:
    value = ctx.value(x)
    return ctx.emit_to(op, [x], value.dtype, value.shape, hint, output=output)


def _reduce(ctx: NodeContext, kind: str, x: str, axes: Sequence[int], keep: bool, hint: str,
            output: str | None = None) -> str:
    """REDUCE_<kind> over explicit (normalised) axes."""
    value = ctx.value(x)
    shape = _reduced_shape(_shape(ctx, x), axes, keep)
    params = {f"OH_NN_REDUCE_{kind}_KEEP_DIMS": bool(keep), f"OH_NN_REDUCE_{kind}_COEFF": 1.0}
    axis = ctx.constant(np.asarray(list(axes), np.int32), f"{ctx.name}.axes")
    return ctx.emit_to(OP[f"OH_NN_OPS_REDUCE_{kind}"], [x, axis], value.dtype, shape, hint, params, output)


def _reverse_order(ctx: NodeContext, x: str, hint: str, output: str | None = None) -> str:
    """An order-reversing bijection of x's values (an involution): -x, -1 - x or MAX - x."""
    dtype = ctx.value(x).dtype
    if dtype.kind == "f":
        return _unary(ctx, OP.OH_NN_OPS_NEG, x, hint, output)
    if dtype.kind == "i":
        return _binary(ctx, OP.OH_NN_OPS_SUB, _scalar(ctx, -1, dtype, "minus_one"), x, hint, output)
    if dtype.kind == "u":
        return _binary(ctx, OP.OH_NN_OPS_SUB, _scalar(ctx, np.iinfo(dtype).max, dtype, "max"), x, hint, output)
    raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} on {dtype} input is not supported")


# ---------------------------------------------------------------------------------------------------------------
# ReduceXxx
# ---------------------------------------------------------------------------------------------------------------

# op type -> (NNRt reduce kind, element-wise op before, element-wise op after, float only)
_REDUCTIONS = {
    "ReduceSum": ("SUM", None, None, False),
    "ReduceMean": ("MEAN", None, None, False),
    "ReduceMax": ("MAX", None, None, False),
    "ReduceMin": ("MIN", None, None, False),
    "ReduceProd": ("PROD", None, None, False),
    "ReduceL1": ("SUM", OP.OH_NN_OPS_ABS, None, False),
    "ReduceL2": ("L2", None, None, True),
    "ReduceSumSquare": ("SUM", OP.OH_NN_OPS_SQUARE, None, False),
    "ReduceLogSum": ("SUM", None, OP.OH_NN_OPS_LOG, True),
    "ReduceLogSumExp": ("LSE", None, None, True),
}


@converts(
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
    "ReduceSum", "ReduceSumSquare")
def reduce(ctx: NodeContext) -> None:
    """ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp, axes as attribute (before opset 13 for
    ReduceSum, 18 for the others) or as a constant input."""
    op_type = ctx.node.op_type
    kind, pre, post, float_only = _REDUCTIONS[op_type]
    x = ctx.input(0)
    value = ctx.value(x)
    out = ctx.output(0)
    keep = bool(int(ctx.attr("keepdims", 1)))
    noop = bool(int(ctx.attr("noop_with_empty_axes", 0)))
    if float_only:
        _float_only(ctx, x)
    if value.dtype == np.bool_ and op_type not in ("ReduceMax", "ReduceMin"):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{op_type} on bool input is not supported")
    rank = ctx.rank(x)
    axes = axes_from(ctx, since_input=13 if op_type == "ReduceSum" else 18)
    if not axes:
        if noop or rank == 0:  # nothing to reduce: the element-wise part only
            _elementwise_only(ctx, op_type, x, out)
            return
        axes = list(range(rank))
    axes = _norm_axes(ctx, axes, rank)
    if kind == "LSE":
        _log_sum_exp(ctx, x, axes, keep, out)
        return
    if pre is not None:
        x = _unary(ctx, pre, x, f"{out}.pre")
    if post is None:
        _reduce(ctx, kind, x, axes, keep, out, output=out)
    else:
        reduced = _reduce(ctx, kind, x, axes, keep, f"{out}.reduced")
        _unary(ctx, post, reduced, out, output=out)


def _elementwise_only(ctx: NodeContext, op_type: str, x: str, out: str) -> None:
    if op_type in ("ReduceL1", "ReduceL2"):
        _unary(ctx, OP.OH_NN_OPS_ABS, x, out, output=out)
    elif op_type == "ReduceSumSquare":
        _unary(ctx, OP.OH_NN_OPS_SQUARE, x, out, output=out)
    elif op_type == "ReduceLogSum":
        _unary(ctx, OP.OH_NN_OPS_LOG, x, out, output=out)
    else:  # sum/mean/max/min/prod of one value, log(exp(x)): the input itself
        ctx.alias(x, out)


def _log_sum_exp(ctx: NodeContext, x: str, axes, keep: bool, out: str) -> None:
    """log(sum(exp(x - m))) + m with m = max(x) over the axes (the stable form the reference uses)."""
    m = _reduce(ctx, "MAX", x, axes, True, f"{out}.max")
    shifted = _binary(ctx, OP.OH_NN_OPS_SUB, x, m, f"{out}.shifted")
    e = _unary(ctx, OP.OH_NN_OPS_EXP, shifted, f"{out}.exp")
    s = _reduce(ctx, "SUM", e, axes, keep, f"{out}.sum")
    log = _unary(ctx, OP.OH_NN_OPS_LOG, s, f"{out}.log")
    m_out = m if keep else _reduce(ctx, "MAX", x, axes, False, f"{out}.max_out")
    _binary(ctx, OP.OH_NN_OPS_ADD, log, m_out, out, output=out)


# ---------------------------------------------------------------------------------------------------------------
# ArgMax / ArgMin / TopK / Hardmax
# ---------------------------------------------------------------------------------------------------------------

def _arg_max(ctx: NodeContext, x: str, axis: int, keep: bool, index_dtype, hint: str,
             output: str | None = None) -> str:
    shape = _reduced_shape(_shape(ctx, x), [axis], keep)
    params = {"OH_NN_ARG_MAX_AXIS": axis, "OH_NN_ARG_MAX_KEEPDIMS": bool(keep), "OH_NN_ARG_MAX_TOP_K": 1,
              "OH_NN_ARG_MAX_OUT_MAX_VALUE": False}
    return ctx.emit_to(OP.OH_NN_OPS_ARG_MAX, [x], index_dtype, shape, hint, params, output)


@converts("ArgMax", "ArgMin")
def arg_max(ctx: NodeContext) -> None:
    """ArgMax, and ArgMin as the ArgMax of an order-reversed input; select_last_index reverses the axis."""
    x = ctx.input(0)
    out = ctx.output(0)
    rank = ctx.rank(x)
    if rank == 0:
        raise ConversionIssue(INVALID_MODEL, f"{ctx.node.op_type} of a scalar")
    axis = _norm_axis(ctx, ctx.attr("axis", 0), rank)
    keep = bool(int(ctx.attr("keepdims", 1)))
    last = bool(int(ctx.attr("select_last_index", 0)))
    if ctx.value(x).dtype.kind not in "fiu":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} on {ctx.value(x).dtype} is not supported")
    if ctx.node.op_type == "ArgMin":
        x = _reverse_order(ctx, x, f"{out}.reversed_order")
    index_dtype = ctx.value(out).dtype if ctx.value(out).dtype.kind in "iu" else np.dtype(np.int64)
    if not last:
        _arg_max(ctx, x, axis, keep, index_dtype, out, output=out)
        return
    n = _shape(ctx, x)[axis]
    if n < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"select_last_index=1 needs a static size of axis {axis}")
    flipped_shape = _shape(ctx, x)
    backwards = ctx.constant(np.arange(n - 1, -1, -1, dtype=np.int32), f"{ctx.name}.backwards")
    flipped = ctx.emit_to(OP.OH_NN_OPS_GATHER, [x, backwards, ctx.constant(np.asarray([axis], np.int64))],
                    ctx.value(x).dtype, flipped_shape, f"{out}.flipped")
    idx = _arg_max(ctx, flipped, axis, keep, index_dtype, f"{out}.flipped_index")
    _binary(ctx, OP.OH_NN_OPS_SUB, _scalar(ctx, n - 1, index_dtype, "last"), idx, out, output=out)


@converts("TopK")
def top_k(ctx: NodeContext) -> None:
    """TopK: k as attribute (opset < 10) or input; largest=0 via an order-reversed input; always sorted (ONNX
    leaves the order of sorted=0 unspecified)."""
    x = ctx.input(0)
    rank = ctx.rank(x)
    if rank == 0:
        raise ConversionIssue(INVALID_MODEL, "TopK of a scalar")
    axis = _norm_axis(ctx, ctx.attr("axis", -1), rank)
    largest = bool(int(ctx.attr("largest", 1)))
    ctx.attr("sorted", 1)  # sorted=0: any order is valid, NNRt's sorted order is one
    dtype = ctx.value(x).dtype
    if dtype.kind not in "fiu":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"TopK on {dtype} input is not supported")
    if ctx.opset < 10:
        if ctx.attr("k") is None:
            raise ConversionIssue(INVALID_MODEL, "TopK before opset 10 needs the k attribute")
        k = ctx.constant(np.asarray(int(ctx.attr("k")), np.int32), f"{ctx.name}.k")
    else:
        k = ctx.input(1)
        k_value = ctx.value(k)
        if k_value.data is not None:
            if k_value.data.size != 1:
                raise ConversionIssue(INVALID_MODEL, f"K must hold one value, got shape {list(k_value.data.shape)}")
            k = ctx.constant(np.asarray(int(k_value.data.reshape(-1)[0]), np.int32), f"{ctx.name}.k")
    k_data = ctx.value(k).data
    if k_data is not None and int(k_data) <= 0:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"k={int(k_data)}: an empty result is not supported")
    n = _shape(ctx, x)[axis]
    if k_data is not None and n >= 0 and int(k_data) > n:
        raise ConversionIssue(INVALID_MODEL, f"k={int(k_data)} exceeds the size {n} of axis {axis}")
    values_out = ctx.output(0)
    indices_out = ctx.output(1) if len(ctx.node.output) > 1 and ctx.node.output[1] else None
    values_value = ctx.value(values_out)
    shape = list(_shape(ctx, x))
    shape[axis] = int(k_data) if k_data is not None else -1
    if values_value.shape is not None and len(values_value.shape) == rank:
        shape = [s if s >= 0 else d for s, d in zip(values_value.shape, shape)]
    source = x if largest else _reverse_order(ctx, x, f"{values_out}.reversed_order")
    values = values_out if largest else ctx.new_value(dtype, shape, f"{values_out}.reversed")
    indices = indices_out or ctx.new_value(np.int64, shape, f"{values_out}.indices")
    ctx.settle(values, shape, dtype)
    ctx.settle(indices, shape, np.int64)
    if ctx.value(indices).dtype.kind not in "iu":
        raise ConversionIssue(INVALID_MODEL, "TopK indices must be an integer tensor")
    ctx.emit(OP.OH_NN_OPS_TOP_K, [source, k], [values, indices],
             {"OH_NN_TOP_K_SORTED": True, "OH_NN_TOP_K_AXIS": axis})
    if not largest:
        _reverse_order(ctx, values, values_out, output=values_out)


@converts("Hardmax")
def hardmax(ctx: NodeContext) -> None:
    """1 at the first maximum along the axis, 0 elsewhere: ARG_MAX + ONE_HOT. Before opset 13 the input is
    flattened to 2-D at ``axis`` (default 1) first."""
    x = ctx.input(0)
    out = ctx.output(0)
    dtype = ctx.value(x).dtype
    _float_only(ctx, x)
    rank = ctx.rank(x)
    if rank == 0:
        raise ConversionIssue(INVALID_MODEL, "Hardmax of a scalar")
    axis = _norm_axis(ctx, ctx.attr("axis", -1 if ctx.opset >= 13 else 1), rank)
    shape = _shape(ctx, x)
    source, target = x, out
    if ctx.opset < 13 and axis != rank - 1:
        shape = ctx.static_shape(x, "Hardmax input (flattened before opset 13)")
        flat = [int(prod(shape[:axis])), int(prod(shape[axis:]))]
        source = ctx.reshape(x, flat)
        target = ctx.new_value(dtype, flat, f"{out}.flat")
        axis = 1
    n = _shape(ctx, source)[axis]
    if n < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"Hardmax needs a static size of axis {axis}")
    idx = _arg_max(ctx, source, axis, False, np.int32, f"{out}.index")
    ctx.settle(target, _shape(ctx, source), dtype)
    ctx.emit(OP.OH_NN_OPS_ONE_HOT, [idx, _scalar(ctx, n, np.int32, "depth"), _scalar(ctx, 1, dtype, "on"),
                                    _scalar(ctx, 0, dtype, "off")], [target], {"OH_NN_ONE_HOT_AXIS": axis})
    if target != out:
        _reshape(ctx, target, shape, output=out)


# ---------------------------------------------------------------------------------------------------------------
# normalisations
# ---------------------------------------------------------------------------------------------------------------

def _affine_operand(ctx: NodeContext, position: int, norm_shape: tuple[int, ...], fill: float, dtype,
                    what: str) -> tuple[str, str | None]:
    """gamma/beta for LAYER_NORM (exact shape ``norm_shape``) and, when the ONNX operand cannot be that (a
    non-constant tensor of another shape), the tensor to apply afterwards with MUL/ADD."""
    if not ctx.has_input(position):
        return ctx.constant(np.full(norm_shape, fill, dtype), f"{ctx.name}.{what}"), None
    name = ctx.input(position)
    value = ctx.value(name)
    if value.data is not None:
        try:
            data = np.broadcast_to(value.data.astype(dtype), norm_shape)
        except ValueError:
            raise ConversionIssue(INVALID_MODEL, f"{what} of shape {list(value.data.shape)} does not broadcast to "
                                                 f"the normalised shape {list(norm_shape)}") from None
        return ctx.constant(np.ascontiguousarray(data), f"{name}.{what}"), None
    if value.shape is not None and tuple(value.shape) == tuple(norm_shape) and value.dtype == dtype:
        return name, None
    return ctx.constant(np.full(norm_shape, fill, dtype), f"{ctx.name}.{what}"), name


def _layer_norm_core(ctx: NodeContext, x: str, axis: int, eps: float, out: str) -> None:
    """LAYER_NORM over axes ``axis..``; axis 0 runs on a [1, ...] view (NNRt wants begin_norm_axis >= 1)."""
    value = ctx.value(x)
    shape = _shape(ctx, x)
    norm_shape = tuple(shape[axis:])
    if any(d < 0 for d in norm_shape):
        raise ConversionIssue(DYNAMIC_SHAPE, f"the normalised dims {list(norm_shape)} of {x!r} must be static")
    gamma, late_scale = _affine_operand(ctx, 1, norm_shape, 1.0, value.dtype, "scale")
    beta, late_bias = _affine_operand(ctx, 2, norm_shape, 0.0, value.dtype, "bias")
    source, begin = x, axis
    if axis == 0:
        if sum(d < 0 for d in shape) > 0:
            raise ConversionIssue(DYNAMIC_SHAPE, "LayerNormalization over every axis needs a static shape")
        source, begin = ctx.reshape(x, (1, *shape)), 1
    last = late_scale is None and late_bias is None and axis != 0
    y = out if last else ctx.new_value(value.dtype, _shape(ctx, source), f"{out}.normalized")
    ctx.settle(y, shape, value.dtype)
    ctx.emit(OP.OH_NN_OPS_LAYER_NORM, [source, gamma, beta], [y],
             {"OH_NN_LAYER_NORM_BEGIN_NORM_AXIS": begin, "OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS": begin,
              "OH_NN_LAYER_NORM_EPSILON": float(eps)})
    if axis == 0:
        y = _reshape(ctx, y, shape, output=out if late_scale is None and late_bias is None else None)
    if late_scale is not None:
        y = _binary(ctx, OP.OH_NN_OPS_MUL, y, late_scale, f"{out}.scaled", output=None if late_bias else out)
    if late_bias is not None:
        _binary(ctx, OP.OH_NN_OPS_ADD, y, late_bias, out, output=out)


@converts("LayerNormalization")
def layer_normalization(ctx: NodeContext) -> None:
    """LAYER_NORM (gamma/beta broadcast to the normalised shape); the optional Mean and InvStdDev outputs are
    computed with REDUCE_MEAN / RSQRT in the stash type."""
    x = ctx.input(0)
    rank = ctx.rank(x)
    _float_only(ctx, x)
    axis = _norm_axis(ctx, ctx.attr("axis", -1), rank)
    eps = float(ctx.attr("epsilon", 1e-5))
    stash = int(ctx.attr("stash_type", 1))
    _layer_norm_core(ctx, x, axis, eps, ctx.output(0))
    mean_out = ctx.output(1) if len(ctx.node.output) > 1 and ctx.node.output[1] else None
    inv_out = ctx.output(2) if len(ctx.node.output) > 2 and ctx.node.output[2] else None
    if mean_out is None and inv_out is None:
        return
    from onnx import helper

    try:
        stash_dtype = np.dtype(helper.tensor_dtype_to_np_dtype(stash))
    except (KeyError, TypeError, ValueError):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"stash_type={stash} is not a known element type") from None
    if stash_dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"stash_type={stash} ({stash_dtype}) is not a float type")
    xs = _cast(ctx, x, stash_dtype, f"{x}.stash")
    axes = list(range(axis, rank))
    mean = _reduce(ctx, "MEAN", xs, axes, True, f"{ctx.name}.mean", output=mean_out)
    if inv_out is None:
        return
    centred = _binary(ctx, OP.OH_NN_OPS_SUB, xs, mean, f"{ctx.name}.centred")
    var = _reduce(ctx, "MEAN", _binary(ctx, OP.OH_NN_OPS_MUL, centred, centred, f"{ctx.name}.sq"), axes, True,
                  f"{ctx.name}.var")
    shifted = _binary(ctx, OP.OH_NN_OPS_ADD, var, _scalar(ctx, eps, stash_dtype, "eps"), f"{ctx.name}.var_eps")
    _unary(ctx, OP.OH_NN_OPS_RSQRT, shifted, inv_out, output=inv_out)


def _channel_last_region(ctx: NodeContext, op: OP, x: str, extra, params, out: str) -> None:
    rank = ctx.rank(x)
    to_last = (0, *range(2, rank), 1)
    back = (0, rank - 1, *range(1, rank - 1))
    x_last = ctx.transpose(x, to_last)
    out_value = ctx.value(out)
    shape = ctx.value(x_last).shape
    y_last = ctx.new_value(out_value.dtype, shape, f"{out}.nhwc")
    ctx.emit(op, [x_last, *extra], [y_last], params)
    _transpose(ctx, y_last, back, output=out)


@converts("InstanceNormalization")
def instance_normalization(ctx: NodeContext) -> None:
    """INSTANCE_NORM (channel last) between transposes."""
    x = ctx.input(0)
    _float_only(ctx, x)
    rank = ctx.rank(x)
    if rank < 3:
        raise ConversionIssue(INVALID_MODEL, f"InstanceNormalization needs an (N, C, D1, ...) input, got rank {rank}")
    eps = float(ctx.attr("epsilon", 1e-5))
    _channel_last_region(ctx, OP.OH_NN_OPS_INSTANCE_NORM, x, [ctx.input(1), ctx.input(2)],
                         {"OH_NN_INSTANCE_NORM_EPSILON": eps}, ctx.output(0))


@converts("GroupNormalization")
def group_normalization(ctx: NodeContext) -> None:
    """(N, C, ...) -> (N, G, C/G * spatial), LAYER_NORM over the last axis, back, then per-channel (opset 21) or
    per-group (opset 18) scale and bias."""
    x = ctx.input(0)
    out = ctx.output(0)
    _float_only(ctx, x)
    value = ctx.value(x)
    groups = ctx.attr("num_groups")
    if groups is None:
        raise ConversionIssue(INVALID_MODEL, "GroupNormalization needs num_groups")
    groups = int(groups)
    eps = float(ctx.attr("epsilon", 1e-5))
    ctx.attr("stash_type", 1)  # the normalisation is computed in float32 (float64 for float64) anyway
    shape = _shape(ctx, x)
    if len(shape) < 2:
        raise ConversionIssue(INVALID_MODEL, f"GroupNormalization needs an (N, C, ...) input, got rank {len(shape)}")
    if any(d < 0 for d in shape[1:]):
        raise ConversionIssue(DYNAMIC_SHAPE, f"GroupNormalization needs static C and spatial dims, got {list(shape)}")
    n, c = shape[0], shape[1]
    if groups <= 0 or c % groups:
        raise ConversionIssue(INVALID_MODEL, f"num_groups={groups} does not divide the {c} channels")
    m = c // groups * int(prod(shape[2:]))
    grouped = ctx.reshape(x, (n, groups, m))
    normalized = ctx.new_value(value.dtype, (n, groups, m), f"{out}.grouped")
    ctx.emit(OP.OH_NN_OPS_LAYER_NORM, [grouped, ctx.constant(np.ones((m,), value.dtype), f"{ctx.name}.ones"),
                                       ctx.constant(np.zeros((m,), value.dtype), f"{ctx.name}.zeros")],
             [normalized], {"OH_NN_LAYER_NORM_BEGIN_NORM_AXIS": 2, "OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS": 2,
                            "OH_NN_LAYER_NORM_EPSILON": eps})
    scale, bias = ctx.input(1), ctx.input(2)
    per_channel = ctx.opset >= 21
    if not per_channel:
        scale_data, bias_data = ctx.value(scale).data, ctx.value(bias).data
        if scale_data is not None and bias_data is not None:  # per-group constants: expand to channels
            scale = ctx.constant(np.repeat(scale_data.reshape(-1), c // groups), f"{scale}.channels")
            bias = ctx.constant(np.repeat(bias_data.reshape(-1), c // groups), f"{bias}.channels")
            per_channel = True
    if per_channel:
        y = ctx.reshape(normalized, shape)
        affine_shape = (c, *([1] * (len(shape) - 2)))
    else:
        y = normalized
        affine_shape = (groups, 1)
    scaled = _binary(ctx, OP.OH_NN_OPS_MUL, y, ctx.reshape(scale, affine_shape), f"{out}.scaled")
    if per_channel:
        _binary(ctx, OP.OH_NN_OPS_ADD, scaled, ctx.reshape(bias, affine_shape), out, output=out)
    else:
        shifted = _binary(ctx, OP.OH_NN_OPS_ADD, scaled, ctx.reshape(bias, affine_shape), f"{out}.shifted")
        _reshape(ctx, shifted, shape, output=out)


@converts("LpNormalization")
def lp_normalization(ctx: NodeContext) -> None:
    """p=2: L2_NORMALIZE; p=1: x / max(sum|x|, tiny). A zero vector stays zero (as in onnxruntime)."""
    x = ctx.input(0)
    out = ctx.output(0)
    _float_only(ctx, x)
    rank = ctx.rank(x)
    axis = _norm_axis(ctx, ctx.attr("axis", -1), rank)
    p = int(ctx.attr("p", 2))
    if p == 2:
        ctx.settle(out, ctx.value(x).shape, ctx.value(x).dtype)
        ctx.emit(OP.OH_NN_OPS_L2_NORMALIZE, [x], [out],
                 {"OH_NN_L2_NORMALIZE_AXIS": [axis], "OH_NN_L2_NORMALIZE_EPSILON": _TINY})
        return
    if p != 1:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"p={p} is not supported (1 or 2)")
    dtype = ctx.value(x).dtype
    norm = _reduce(ctx, "SUM", _unary(ctx, OP.OH_NN_OPS_ABS, x, f"{out}.abs"), [axis], True, f"{out}.norm")
    floor = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, norm, _scalar(ctx, _TINY if dtype != np.float16 else 6e-8, dtype,
                                                                  "tiny"), f"{out}.floored")
    _binary(ctx, OP.OH_NN_OPS_DIV, x, floor, out, output=out)


@converts("MeanVarianceNormalization")
def mean_variance_normalization(ctx: NodeContext) -> None:
    """(x - mean) / (sqrt(var) + 1e-9) over ``axes`` (default [0, 2, 3]); var is the centred mean square."""
    x = ctx.input(0)
    out = ctx.output(0)
    _float_only(ctx, x)
    rank = ctx.rank(x)
    axes = _norm_axes(ctx, ctx.attr("axes", [0, 2, 3]), rank)
    dtype = ctx.value(x).dtype
    mean = _reduce(ctx, "MEAN", x, axes, True, f"{out}.mean")
    centred = _binary(ctx, OP.OH_NN_OPS_SUB, x, mean, f"{out}.centred")
    var = _reduce(ctx, "MEAN", _binary(ctx, OP.OH_NN_OPS_MUL, centred, centred, f"{out}.sq"), axes, True,
                  f"{out}.var")
    std = _unary(ctx, OP.OH_NN_OPS_SQRT, var, f"{out}.std")
    denominator = _binary(ctx, OP.OH_NN_OPS_ADD, std, _scalar(ctx, 1e-9, dtype, "eps"), f"{out}.std_eps")
    _binary(ctx, OP.OH_NN_OPS_DIV, centred, denominator, out, output=out)


# ---------------------------------------------------------------------------------------------------------------
# Einsum
# ---------------------------------------------------------------------------------------------------------------

def _einsum_terms(ctx: NodeContext, equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """Input and output label lists, "..." expanded into one label per broadcast dim (right-aligned)."""
    equation = equation.replace(" ", "")
    if not re.fullmatch(r"[A-Za-z.,]*(->[A-Za-z.]*)?", equation):
        raise ConversionIssue(INVALID_MODEL, f"equation {equation!r} is not a valid einsum equation")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ConversionIssue(INVALID_MODEL, f"equation {equation!r} names {len(terms)} operands, the node has "
                                             f"{len(ranks)}")
    ellipsis_rank = 0
    labels: list[list[str]] = []
    for term, rank in zip(terms, ranks):
        if term.count("...") > 1 or term.replace("...", "").count("."):
            raise ConversionIssue(INVALID_MODEL, f"term {term!r} of {equation!r} is malformed")
        letters = term.replace("...", "")
        if "..." in term:
            e = rank - len(letters)
            if e < 0:
                raise ConversionIssue(INVALID_MODEL, f"term {term!r} has more labels than its operand's rank {rank}")
            ellipsis_rank = max(ellipsis_rank, e)
            before, _, after = term.partition("...")
            labels.append(list(before) + [f"...{i}" for i in range(e - 1, -1, -1)] + list(after))
        else:
            if len(letters) != rank:
                raise ConversionIssue(INVALID_MODEL, f"term {term!r} does not match its operand's rank {rank}")
            labels.append(list(term))
    ellipsis = [f"...{i}" for i in range(ellipsis_rank - 1, -1, -1)]
    if arrow:
        if rhs.count("...") > 1 or rhs.replace("...", "").count("."):
            raise ConversionIssue(INVALID_MODEL, f"output term {rhs!r} is malformed")
        before, dots, after = rhs.partition("...")
        output = list(before) + (ellipsis if dots else []) + list(after)
    else:
        counts: dict[str, int] = {}
        for term in labels:
            for label in term:
                if not label.startswith("..."):
                    counts[label] = counts.get(label, 0) + 1
        output = ellipsis + sorted(label for label, n in counts.items() if n == 1)
    if len(set(output)) != len(output):
        raise ConversionIssue(INVALID_MODEL, f"output of {equation!r} repeats a label")
    every = {label for term in labels for label in term}
    missing = [label for label in output if label not in every]
    if missing:
        raise ConversionIssue(INVALID_MODEL, f"output labels {missing} of {equation!r} appear in no input")
    return labels, output


def _take_diagonals(ctx: NodeContext, name: str, labels: list[str], sizes: dict[str, int],
                    hint: str) -> tuple[str, list[str]]:
    """A label repeated within one term selects a diagonal: move its axes to the front and GATHER_ND the
    (i, i, ...) coordinates (exact for every value, unlike a multiplication by an identity mask)."""
    while len(set(labels)) != len(labels):
        label = next(label for label in labels if labels.count(label) > 1)
        positions = [i for i, other in enumerate(labels) if other == label]
        rest = [i for i in range(len(labels)) if i not in positions]
        moved = name if positions + rest == list(range(len(labels))) else ctx.transpose(name, positions + rest)
        n = sizes[label]
        coordinates = ctx.constant(np.repeat(np.arange(n, dtype=np.int32)[:, None], len(positions), axis=1),
                                   f"{hint}.diagonal")
        rest_labels = [labels[i] for i in rest]
        name = ctx.emit_to(OP.OH_NN_OPS_GATHER_ND, [moved, coordinates], ctx.value(name).dtype,
                     [n, *(sizes[other] for other in rest_labels)], f"{hint}.diagonal")
        labels = [label, *rest_labels]
    return name, labels


def _transpose_to(ctx: NodeContext, name: str, labels: list[str], order: list[str]) -> str:
    perm = [labels.index(label) for label in order]
    return name if perm == list(range(len(perm))) else ctx.transpose(name, perm)


def _reshape_to(ctx: NodeContext, name: str, shape: Sequence[int], output: str | None = None) -> str:
    if tuple(_shape(ctx, name)) == tuple(shape) and output is None:
        return name
    if not shape:  # a shape tensor cannot be empty in NNRt: SQUEEZE without axes drops every (size-1) dim
        return ctx.emit_to(OP.OH_NN_OPS_SQUEEZE, [name], ctx.value(name).dtype, (), f"{name}.scalar", output=output)
    return _reshape(ctx, name, list(shape), output=output)


def _sum_out(ctx: NodeContext, name: str, labels: list[str], keep: set[str], hint: str) -> tuple[str, list[str]]:
    axes = [i for i, label in enumerate(labels) if label not in keep]
    if not axes:
        return name, labels
    reduced = _reduce(ctx, "SUM", name, axes, False, hint)
    return reduced, [label for label in labels if label in keep]


def _contract(ctx: NodeContext, a: tuple[str, list[str]], b: tuple[str, list[str]], keep: set[str],
              sizes: dict[str, int], order: list[str], hint: str) -> tuple[str, list[str]]:
    """One MATMUL: [batch, a-free, contracted] x [batch, contracted, b-free]."""
    (a_name, a_labels), (b_name, b_labels) = a, b
    a_name, a_labels = _sum_out(ctx, a_name, a_labels, keep | set(b_labels), f"{hint}.a_summed")
    b_name, b_labels = _sum_out(ctx, b_name, b_labels, keep | set(a_labels), f"{hint}.b_summed")
    rank_of = {label: i for i, label in enumerate(order)}
    shared = [label for label in a_labels if label in b_labels]
    batch = sorted((label for label in shared if label in keep), key=rank_of.get)
    contracted = [label for label in shared if label not in keep]
    a_free = sorted((label for label in a_labels if label not in b_labels), key=rank_of.get)
    b_free = sorted((label for label in b_labels if label not in a_labels), key=rank_of.get)
    dims = [sizes[label] for label in batch]
    m = int(prod(sizes[label] for label in a_free))
    k = int(prod(sizes[label] for label in contracted))
    n = int(prod(sizes[label] for label in b_free))
    lead = [int(prod(dims))] if batch else []
    a_mat = _reshape_to(ctx, _transpose_to(ctx, a_name, a_labels, batch + a_free + contracted), lead + [m, k])
    b_mat = _reshape_to(ctx, _transpose_to(ctx, b_name, b_labels, batch + contracted + b_free), lead + [k, n])
    dtype = ctx.value(a_name).dtype
    if ctx.value(b_name).dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"Einsum operands differ in dtype ({dtype}, {ctx.value(b_name).dtype})")
    product = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [a_mat, b_mat], dtype, lead + [m, n], f"{hint}.matmul")
    labels = batch + a_free + b_free
    return _reshape_to(ctx, product, [sizes[label] for label in labels]), labels


@converts("Einsum")
def einsum(ctx: NodeContext) -> None:
    """Einsum without diagonals: operands summed over private labels, multiplied pairwise with MATMUL
    (batch labels first), then summed and transposed to the output order."""
    operands = [ctx.input(i) for i in range(len(ctx.node.input))]
    out = ctx.output(0)
    equation = ctx.attr("equation")
    if equation is None:
        raise ConversionIssue(INVALID_MODEL, "Einsum needs an equation")
    shapes = [tuple(ctx.static_shape(o, "Einsum operand")) for o in operands]
    labels, output = _einsum_terms(ctx, equation, [len(s) for s in shapes])
    sizes: dict[str, int] = {}
    for name, term, shape in zip(operands, labels, shapes):
        for label, size in zip(term, shape):
            if sizes.setdefault(label, size) != size:
                raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"equation {equation!r}: label {label!r} has sizes "
                                                             f"{sizes[label]} and {size} (broadcasting a size-1 "
                                                             "dim is not supported)")
    terms = [_take_diagonals(ctx, name, term, sizes, f"{out}.{position}")
             for position, (name, term) in enumerate(zip(operands, labels))]
    current = terms[0]
    for position in range(1, len(operands)):
        later = {label for term in labels[position + 1:] for label in term}
        current = _contract(ctx, current, terms[position], set(output) | later, sizes,
                            output, f"{out}.{position}")
    name, term = _sum_out(ctx, *current, set(output), f"{out}.summed")
    perm = [term.index(label) for label in output]
    if perm != list(range(len(perm))):
        _transpose(ctx, name, perm, output=out)
    elif name in operands or ctx.value(name).data is not None:
        ctx.alias(name, out)
    else:
        _reshape_to(ctx, name, [sizes[label] for label in output], output=out)


# ---------------------------------------------------------------------------------------------------------------
# CumSum, MatMulInteger, QLinearMatMul
# ---------------------------------------------------------------------------------------------------------------

_CUMSUM_MAX = 4096  # the triangle has n * n elements


@converts("CumSum")
def cum_sum(ctx: NodeContext) -> None:
    """Cumulative sum along a constant axis as a MATMUL with a constant 0/1 triangle (exact for integers;
    exclusive/reverse pick the triangle)."""
    x = ctx.input(0)
    out = ctx.output(0)
    dtype = ctx.value(x).dtype
    if dtype.kind not in "f" and dtype not in (np.int32, np.int64, np.uint32, np.uint64):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"CumSum on {dtype} is not supported")
    axis_data = ctx.constant_input(1, "the CumSum axis")
    if axis_data.size != 1:
        raise ConversionIssue(INVALID_MODEL, f"the CumSum axis must be a scalar, got shape {list(axis_data.shape)}")
    shape = _shape(ctx, x)
    rank = len(shape)
    if rank == 0:
        raise ConversionIssue(INVALID_MODEL, "CumSum of a scalar")
    axis = _norm_axis(ctx, int(axis_data.reshape(-1)[0]), rank)
    exclusive = bool(int(ctx.attr("exclusive", 0)))
    reverse = bool(int(ctx.attr("reverse", 0)))
    n = shape[axis]
    if n < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"CumSum needs a static size of axis {axis}")
    if n > _CUMSUM_MAX:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"CumSum along an axis of {n} > {_CUMSUM_MAX} elements is not "
                                                     "supported (it runs as a product with an n x n triangle)")
    j, i = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")  # y[i] = sum_j x[j] * T[j, i]
    if reverse:
        triangle = j > i if exclusive else j >= i
    else:
        triangle = j < i if exclusive else j <= i
    weights = ctx.constant(triangle.astype(dtype), f"{ctx.name}.triangle")
    last = list(range(rank))
    last.append(last.pop(axis))
    moved = x if axis == rank - 1 else ctx.transpose(x, last)
    moved_shape = _shape(ctx, moved)
    if axis == rank - 1:
        ctx.emit_to(OP.OH_NN_OPS_MATMUL, [moved, weights], dtype, moved_shape, out, output=out)
        return
    product = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [moved, weights], dtype, moved_shape, f"{out}.moved")
    back = [last.index(d) for d in range(rank)]
    _transpose(ctx, product, back, output=out)


def _zero_point(ctx: NodeContext, position: int, operand: str, per: str) -> str | None:
    """An (optional) zero point as int32, shaped to broadcast per row of A ([M, 1]) or per column of B ([N])."""
    if not ctx.has_input(position):
        return None
    zp = ctx.input(position)
    zp_value = ctx.value(zp)
    if zp_value.dtype != ctx.value(operand).dtype:
        raise ConversionIssue(INVALID_MODEL, f"zero point {zp!r} has dtype {zp_value.dtype}, its operand "
                                             f"{ctx.value(operand).dtype}")
    zp32 = _cast(ctx, zp, np.int32, f"{zp}.i32")
    shape = _shape(ctx, zp)
    if per == "row" and len(shape) == 1 and shape[0] > 1:
        zp32 = ctx.reshape(zp32, [shape[0], 1])
    return zp32


def _integer_product(ctx: NodeContext, a: str, a_zp: str | None, b: str, b_zp: str | None, hint: str,
                     output: str | None = None) -> str:
    """(int32(A) - a_zp) @ (int32(B) - b_zp), an exact int32 MATMUL."""
    for name in (a, b):
        if ctx.value(name).dtype not in (np.int8, np.uint8):
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"{name!r} has dtype {ctx.value(name).dtype} (int8/uint8 only)")
    a32 = _cast(ctx, a, np.int32, f"{a}.i32")
    b32 = _cast(ctx, b, np.int32, f"{b}.i32")
    if a_zp is not None:
        a32 = _binary(ctx, OP.OH_NN_OPS_SUB, a32, a_zp, f"{a}.centred")
    if b_zp is not None:
        b32 = _binary(ctx, OP.OH_NN_OPS_SUB, b32, b_zp, f"{b}.centred")
    sa, sb = _shape(ctx, a32), _shape(ctx, b32)
    if len(sa) < 1 or len(sb) < 1:
        raise ConversionIssue(INVALID_MODEL, "matrix product operands must have rank >= 1")
    out_shape = _matmul_shape(sa, sb)
    return ctx.emit_to(OP.OH_NN_OPS_MATMUL, [a32, b32], np.int32, out_shape, hint, output=output)


def _matmul_shape(sa, sb) -> tuple[int, ...]:
    a1, b1 = len(sa) == 1, len(sb) == 1
    sa = (1, *sa) if a1 else tuple(sa)
    sb = (*sb, 1) if b1 else tuple(sb)
    batch_a, batch_b = sa[:-2], sb[:-2]
    rank = max(len(batch_a), len(batch_b))
    batch_a = (1,) * (rank - len(batch_a)) + batch_a
    batch_b = (1,) * (rank - len(batch_b)) + batch_b
    batch = tuple(x if y == 1 else y for x, y in zip(batch_a, batch_b))
    shape = (*batch, sa[-2], sb[-1])
    if a1:
        shape = shape[:-2] + shape[-1:]
    if b1:
        shape = shape[:-1]
    return shape


@converts("MatMulInteger")
def matmul_integer(ctx: NodeContext) -> None:
    """MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) in int32 (CAST, SUB, int32 MATMUL: exact)."""
    a, b = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    _integer_product(ctx, a, _zero_point(ctx, 2, a, "row"), b, _zero_point(ctx, 3, b, "column"), out, output=out)


@converts("QLinearMatMul")
def qlinear_matmul(ctx: NodeContext) -> None:
    """QLinearMatMul: exact int32 product, then round(acc * a_scale * b_scale / y_scale) + y_zero_point,
    saturated to the output type (CAST, ROUND half to even, CLIP)."""
    a, b = ctx.input(0), ctx.input(3)
    out = ctx.output(0)
    out_dtype = ctx.value(ctx.input(7)).dtype if ctx.has_input(7) else ctx.value(a).dtype
    acc = _integer_product(ctx, a, _zero_point(ctx, 2, a, "row"), b, _zero_point(ctx, 5, b, "column"),
                           f"{out}.acc")
    a_scale, b_scale, y_scale = ctx.input(1), ctx.input(4), ctx.input(6)
    scale_dtype = ctx.value(a_scale).dtype
    if scale_dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"scale dtype {scale_dtype} is not supported")
    scales = [ctx.value(s).data for s in (a_scale, b_scale, y_scale)]
    a_rows = _shape(ctx, a_scale)
    if all(s is not None for s in scales):
        sa = scales[0].reshape(-1, 1) if scales[0].size > 1 else scales[0].reshape(())
        combined = (sa * scales[1].reshape(-1) / scales[2].reshape(-1)) if scales[1].size > 1 else \
            (sa * scales[1].reshape(()) / scales[2].reshape(()))
        factor = ctx.constant(np.asarray(combined, np.float64).astype(np.float32), f"{ctx.name}.scale")
    else:
        sa = ctx.reshape(a_scale, [a_rows[0], 1]) if len(a_rows) == 1 and a_rows[0] > 1 else a_scale
        ab = _binary(ctx, OP.OH_NN_OPS_MUL, sa, b_scale, f"{ctx.name}.ab_scale")
        factor = _cast(ctx, _binary(ctx, OP.OH_NN_OPS_DIV, ab, y_scale, f"{ctx.name}.scale"), np.float32)
    real = _binary(ctx, OP.OH_NN_OPS_MUL, _cast(ctx, acc, np.float32), factor, f"{out}.real")
    rounded = _unary(ctx, OP.OH_NN_OPS_ROUND, real, f"{out}.rounded")
    if ctx.has_input(7):
        rounded = _binary(ctx, OP.OH_NN_OPS_ADD, rounded, _cast(ctx, ctx.input(7), np.float32), f"{out}.shifted")
    info = np.iinfo(out_dtype)
    clipped = ctx.emit_to(OP.OH_NN_OPS_CLIP, [rounded], np.float32, _shape(ctx, rounded), f"{out}.clipped",
                    {"OH_NN_CLIP_MIN": float(info.min), "OH_NN_CLIP_MAX": float(info.max)})
    code = ctx.constant(np.asarray(int(from_numpy(out_dtype)), np.int32), f"{out}.to")
    ctx.settle(out, _shape(ctx, clipped), out_dtype)
    ctx.emit(OP.OH_NN_OPS_CAST, [clipped, code], [out])
