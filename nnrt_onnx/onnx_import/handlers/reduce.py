"""Converters of the reduce family: ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp onto NNRt's
REDUCE_* (and small decompositions of them), ArgMax, ArgMin, TopK and CumSum.

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

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...ir.issues import INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE, ConversionIssue
from ..context import NodeContext
from . import converts
from ._common import (
    _arg_max,
    _binary,
    _cast,
    _compare,
    _const,
    _float_only,
    _norm_axes,
    _norm_axis,
    _ranked_shape,
    _reduce,
    _transpose,
    _unary,
    _where,
    axes_from,
)
from ._dims import axis_iota, dims_tensor


def _reverse_order(ctx: NodeContext, x: str, hint: str, output: str | None = None) -> str:
    """An order-reversing bijection of x's values (an involution): -x, -1 - x or MAX - x."""
    dtype = ctx.value(x).dtype
    if dtype.kind == "f":
        return _unary(ctx, OP.OH_NN_OPS_NEG, x, hint, output)
    if dtype.kind == "i":
        return _binary(ctx, OP.OH_NN_OPS_SUB, _const(ctx, -1, dtype, "minus_one"), x, hint, output)
    if dtype.kind == "u":
        return _binary(ctx, OP.OH_NN_OPS_SUB, _const(ctx, np.iinfo(dtype).max, dtype, "max"), x, hint, output)
    raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} on {dtype} input is not supported")


# -- ReduceXxx ---------------------------------------------------------------------------------------------------------

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


# -- ArgMax / ArgMin / TopK --------------------------------------------------------------------------------------------

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
    n = _ranked_shape(ctx, x)[axis]
    flipped_shape = _ranked_shape(ctx, x)
    if n >= 0:
        backwards = ctx.constant(np.arange(n - 1, -1, -1, dtype=np.int32), f"{ctx.name}.backwards")
        flipped = ctx.emit_to(OP.OH_NN_OPS_GATHER, [x, backwards, ctx.constant(np.asarray([axis], np.int64))],
                              ctx.value(x).dtype, flipped_shape, f"{out}.flipped")
        last_index = _const(ctx, n - 1, index_dtype, "last")
    else:  # a dynamic axis: reversed by a stride -1 over its whole length, n - 1 read at run time
        every = (1 << rank) - 1
        flipped = ctx.emit_to(OP.OH_NN_OPS_STRIDED_SLICE,
                              [x, ctx.constant(np.zeros(rank, np.int64)), ctx.constant(np.zeros(rank, np.int64)),
                               ctx.constant(np.asarray([-1 if d == axis else 1 for d in range(rank)], np.int64))],
                              ctx.value(x).dtype, flipped_shape, f"{out}.flipped",
                              {"OH_NN_STRIDED_SLICE_BEGIN_MASK": every, "OH_NN_STRIDED_SLICE_END_MASK": every})
        dim = _cast(ctx, dims_tensor(ctx, x, [axis]), index_dtype)
        top = _binary(ctx, OP.OH_NN_OPS_SUB, dim, _const(ctx, 1, index_dtype, "one"), f"{out}.top")
        last_index = ctx.emit_to(OP.OH_NN_OPS_SQUEEZE, [top], index_dtype, (), f"{out}.last")
    idx = _arg_max(ctx, flipped, axis, keep, index_dtype, f"{out}.flipped_index")
    _binary(ctx, OP.OH_NN_OPS_SUB, last_index, idx, out, output=out)


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
        count = int(ctx.attr("k"))
        if count > np.iinfo(np.int32).max:
            raise ConversionIssue(INVALID_MODEL, f"k={count} is larger than any axis")
        k = ctx.constant(np.asarray(max(count, 0), np.int32), f"{ctx.name}.k")
    else:
        k = ctx.input(1)
        k_value = ctx.value(k)
        if k_value.data is not None:
            if k_value.data.size != 1:
                raise ConversionIssue(INVALID_MODEL, f"K must hold one value, got shape {list(k_value.data.shape)}")
            count = int(k_value.data.reshape(-1)[0])
            if count > np.iinfo(np.int32).max:
                raise ConversionIssue(INVALID_MODEL, f"K={count} is larger than any axis")
            k = ctx.constant(np.asarray(max(count, 0), np.int32), f"{ctx.name}.k")
    k_data = ctx.value(k).data
    if k_data is not None and int(k_data) <= 0:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"k={int(k_data)}: an empty result is not supported")
    n = _ranked_shape(ctx, x)[axis]
    if k_data is not None and n >= 0 and int(k_data) > n:
        raise ConversionIssue(INVALID_MODEL, f"k={int(k_data)} exceeds the size {n} of axis {axis}")
    values_out = ctx.output(0)
    indices_out = ctx.output(1) if len(ctx.node.output) > 1 and ctx.node.output[1] else None
    values_value = ctx.value(values_out)
    shape = list(_ranked_shape(ctx, x))
    shape[axis] = int(k_data) if k_data is not None else -1
    if values_value.shape is not None and len(values_value.shape) == rank:
        shape = [s if s >= 0 else d for s, d in zip(values_value.shape, shape)]
    if not largest and dtype.kind == "f":
        _smallest_floats(ctx, x, k, values_out, indices_out, shape, axis, rank)
        return
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


def _smallest_floats(ctx: NodeContext, x: str, k: str, values_out: str, indices_out: str | None, shape, axis: int,
                     rank: int) -> None:
    """TopK largest=0 of floats: NaN counts as larger than every number (onnxruntime and onnx.reference, both
    orders), so the k smallest are the numbers ascending, then the NaNs. They are TOP_K's largest of a key: -x, with
    NaN as -inf; float16/float32 go through float64, where +inf's key is -2**1000, between -inf and every other key
    (a float64 +inf shares -inf with NaN: lower index first, docs/deviations.md). The values come back as -key except
    in the last places, one per NaN in the row, which are NaN."""
    dtype = ctx.value(x).dtype
    wide = dtype != np.float64
    source = _cast(ctx, x, np.float64, f"{values_out}.float64") if wide else x
    negated = _unary(ctx, OP.OH_NN_OPS_NEG, source, f"{values_out}.negated")
    below_numbers = 2.0 ** 1000
    if wide:  # (NaN stays NaN through MAXIMUM)
        negated = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, negated, _const(ctx, -below_numbers, np.float64, "below"),
                          f"{values_out}.negated_inf_above_nan")
    is_nan = _compare(ctx, OP.OH_NN_OPS_NOT_EQUAL, x, x, f"{values_out}.is_nan")
    minus_inf = _const(ctx, -np.inf, ctx.value(source).dtype, "minus_inf")
    key = _where(ctx, is_nan, minus_inf, negated, f"{values_out}.reversed_order")
    key_values = ctx.new_value(ctx.value(source).dtype, shape, f"{values_out}.reversed")
    indices = indices_out or ctx.new_value(np.int64, shape, f"{values_out}.indices")
    ctx.settle(key_values, shape, ctx.value(source).dtype)
    ctx.settle(indices, shape, np.int64)
    if ctx.value(indices).dtype.kind not in "iu":
        raise ConversionIssue(INVALID_MODEL, "TopK indices must be an integer tensor")
    ctx.emit(OP.OH_NN_OPS_TOP_K, [key, k], [key_values, indices],
             {"OH_NN_TOP_K_SORTED": True, "OH_NN_TOP_K_AXIS": axis})
    is_number = _compare(ctx, OP.OH_NN_OPS_EQUAL, x, x, f"{values_out}.is_number")
    numbers = _reduce(ctx, "SUM", _cast(ctx, is_number, np.int64), [axis], True, f"{values_out}.numbers")
    places = axis_iota(ctx, key_values, axis, rank, np.int64)
    past_numbers = _compare(ctx, OP.OH_NN_OPS_GREATER_EQUAL, places, numbers, f"{values_out}.past_numbers")
    values = _unary(ctx, OP.OH_NN_OPS_NEG, key_values, f"{values_out}.ascending")
    nan = _const(ctx, np.nan, ctx.value(source).dtype, "nan")
    if not wide:
        _where(ctx, past_numbers, nan, values, values_out, output=values_out)
        return
    values = _where(ctx, past_numbers, nan, values, f"{values_out}.with_nan")
    is_inf = _compare(ctx, OP.OH_NN_OPS_EQUAL, values, _const(ctx, below_numbers, np.float64, "above"),
                      f"{values_out}.is_inf")
    values = _where(ctx, is_inf, _const(ctx, np.inf, np.float64, "inf"), values, f"{values_out}.with_inf")
    _cast(ctx, values, dtype, output=values_out)


# -- CumSum ------------------------------------------------------------------------------------------------------------

_CUMSUM_MAX = 4096  # the triangle has n * n elements


@converts("CumSum")
def cum_sum(ctx: NodeContext) -> None:
    """Cumulative sum along a constant axis as a MATMUL with a 0/1 triangle (exact for integers; exclusive/reverse
    pick the triangle; floats: NaN and infinities reach only the sums after them, :func:`_running_sums_of_floats`)."""
    x = ctx.input(0)
    out = ctx.output(0)
    dtype = ctx.value(x).dtype
    if dtype.kind not in "f" and dtype not in (np.int32, np.int64, np.uint32, np.uint64):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"CumSum on {dtype} is not supported")
    axis_data = ctx.constant_input(1, "the CumSum axis")
    if axis_data.size != 1:
        raise ConversionIssue(INVALID_MODEL, f"the CumSum axis must be a scalar, got shape {list(axis_data.shape)}")
    shape = _ranked_shape(ctx, x)
    rank = len(shape)
    if rank == 0:
        raise ConversionIssue(INVALID_MODEL, "CumSum of a scalar")
    axis = _norm_axis(ctx, int(axis_data.reshape(-1)[0]), rank)
    exclusive = bool(int(ctx.attr("exclusive", 0)))
    reverse = bool(int(ctx.attr("reverse", 0)))
    n = shape[axis]
    if n > _CUMSUM_MAX:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"CumSum along an axis of {n} > {_CUMSUM_MAX} elements is not "
                                                     "supported (it runs as a product with an n x n triangle)")
    compare = (OP.OH_NN_OPS_GREATER if exclusive else OP.OH_NN_OPS_GREATER_EQUAL) if reverse else \
        (OP.OH_NN_OPS_LESS if exclusive else OP.OH_NN_OPS_LESS_EQUAL)
    if n >= 0:
        j, i = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")  # y[i] = sum_j x[j] * T[j, i]
        triangle = {OP.OH_NN_OPS_GREATER: j > i, OP.OH_NN_OPS_GREATER_EQUAL: j >= i, OP.OH_NN_OPS_LESS: j < i,
                    OP.OH_NN_OPS_LESS_EQUAL: j <= i}[compare]
        weights = ctx.constant(triangle.astype(dtype), f"{ctx.name}.triangle")
    else:  # a dynamic axis: the triangle compares the positions along it, read at run time
        rows = axis_iota(ctx, x, axis, 2, position=0)
        columns = axis_iota(ctx, x, axis, 2, position=1)
        mask = ctx.emit_to(compare, [rows, columns], np.bool_, (-1, -1), f"{ctx.name}.triangle_mask")
        weights = _cast(ctx, mask, dtype, f"{ctx.name}.triangle")
    last = list(range(rank))
    last.append(last.pop(axis))
    moved = x if axis == rank - 1 else ctx.transpose(x, last)
    moved_shape = _ranked_shape(ctx, moved)
    target = out if axis == rank - 1 else None
    if dtype.kind == "f":
        product = _running_sums_of_floats(ctx, moved, weights, dtype, moved_shape, target)
    else:
        product = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [moved, weights], dtype, moved_shape, f"{out}.moved",
                              output=target)
    if target is None:
        _transpose(ctx, product, [last.index(d) for d in range(rank)], output=out)


def _running_sums_of_floats(ctx: NodeContext, x: str, triangle: str, dtype, shape, output: str | None) -> str:
    """The running sums of ``x`` along its last axis as a product with ``triangle`` -- of its finite values only, so
    that a NaN or an infinity reaches only the sums after it, as in a running sum (a product spreads NaN * 0 = NaN
    to every sum): each sum then becomes NaN after a NaN (or after both infinities), +-inf after one of them."""
    def counts(mask: str, hint: str) -> str:  # how many of the masked elements each sum has seen
        return ctx.emit_to(OP.OH_NN_OPS_MATMUL, [_cast(ctx, mask, dtype, f"{x}.{hint}"), triangle], dtype, shape,
                           f"{x}.{hint}_seen")

    def positive(name: str) -> str:
        return _compare(ctx, OP.OH_NN_OPS_GREATER, name, _const(ctx, 0, dtype, "zero"), f"{name}.any")

    def where(condition: str, value: str, otherwise: str, hint: str, target: str | None = None) -> str:
        return ctx.emit_to(OP.OH_NN_OPS_WHERE, [condition, value, otherwise], dtype, shape, hint, output=target)

    zero = _const(ctx, 0, dtype, "zero")
    finite = _compare(ctx, OP.OH_NN_OPS_EQUAL, _binary(ctx, OP.OH_NN_OPS_SUB, x, x, f"{x}.minus_itself"), zero,
                      f"{x}.finite")  # x - x is 0 unless x is NaN or +-inf
    sums = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [where(finite, x, zero, f"{x}.finite_values"), triangle], dtype, shape,
                       f"{x}.finite_sums")
    nan = counts(_compare(ctx, OP.OH_NN_OPS_NOT_EQUAL, x, x, f"{x}.nan"), "nan")
    up = counts(_compare(ctx, OP.OH_NN_OPS_EQUAL, x, _const(ctx, np.inf, dtype, "inf"), f"{x}.up"), "up")
    down = counts(_compare(ctx, OP.OH_NN_OPS_EQUAL, x, _const(ctx, -np.inf, dtype, "minus_inf"), f"{x}.down"), "down")
    sums = where(positive(up), _const(ctx, np.inf, dtype, "inf"), sums, f"{x}.with_up")
    sums = where(positive(down), _const(ctx, -np.inf, dtype, "minus_inf"), sums, f"{x}.with_down")
    undefined = _binary(ctx, OP.OH_NN_OPS_LOGICAL_OR, positive(nan), _binary(
        ctx, OP.OH_NN_OPS_LOGICAL_AND, positive(up), positive(down), f"{x}.both", dtype=np.bool_),
        f"{x}.undefined", dtype=np.bool_)
    return where(undefined, _const(ctx, np.nan, dtype, "nan"), sums, f"{x}.running_sums", output)
