"""Reduce kernels: REDUCE_{MEAN,PROD,ALL,MAX,MIN,SUM,L2}, ALL, ARG_MAX and TOP_K.

Conventions (shared with the linear and normalization kernels):
* float16 inputs are accumulated in float32 and the result is returned as float16; float32 stays float32 and
  float64 stays float64 (never a silent float64 result).
* Axis values are normalised against the input rank; out-of-range axes raise INVALID_PARAMETER. The reductions
  (REDUCE_*, ALL) take an axis given more than once -- repeated, or negative and positive for the same dim
  (``[1, 0, -3, -3]``) -- once, as NNAPI and TFLite do (docs/deviations.md).
* Semantics that the header leaves open follow MindSpore Lite, the engine behind the real NNRt HDI
  primitives (``ReduceFusion``, ``ArgMaxFusion``, ``TopKFusion`` ...); every place where we deliberately differ
  from it is stated in a docstring.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..errors import invalid, unsupported
from . import OpContext, kernel, shape_rule
from ._common import _FLOAT_KINDS, _INT_KINDS, _axis_index, _float_mean, _known, _length, _scalar, _work_dtype


def _axis_tensor(op: str, axis: np.ndarray, rank: int) -> list[int]:
    """The distinct axes of a reduction's axis *input* tensor (scalar or 1-D, integer dtype), in first-seen order:
    an axis repeated, or named both negative and positive, is reduced once (NNAPI, TFLite)."""
    axis = np.asarray(axis)
    if axis.dtype.kind not in _INT_KINDS:
        raise invalid(f"{op}: the axis input must hold integers, got {axis.dtype}")
    if axis.ndim > 1:
        raise invalid(f"{op}: the axis input must be a scalar or 1-D, got shape {list(axis.shape)}")
    return list(dict.fromkeys(_axis_index(op, a, rank) for a in axis.reshape(-1).tolist()))


def _descending_order(x: np.ndarray, axis: int) -> np.ndarray:
    """Indices that sort ``x`` along ``axis`` by descending value; equal values keep ascending index order."""
    n = x.shape[axis]
    # A stable ascending sort of the reversed array, read backwards, is a descending sort in which ties keep
    # their original (ascending) index order -- no negation, so it is safe for unsigned ints.
    order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(order, axis)


def _index_dtype(op: str, ctx: OpContext, index: int) -> np.dtype:
    dt = np.dtype(ctx.output_dtypes[index])
    if dt.kind not in _INT_KINDS:
        raise invalid(f"{op}: output {index} holds indices and must be declared with an integer type, not {dt}")
    return dt


# ----------------------------------------------------------------------------------------------------------------
# reductions
# ----------------------------------------------------------------------------------------------------------------

def _apply_coeff(op: str, out: np.ndarray, coeff: float, dtype: np.dtype) -> np.ndarray:
    """Scale the reduced result by ``coeff`` (header: "scale factor of the output")."""
    coeff = float(coeff)
    if coeff == 1.0:
        return out
    if dtype.kind in _FLOAT_KINDS:
        return out * _work_dtype(dtype).type(coeff)
    if dtype.kind in _INT_KINDS and coeff.is_integer():
        return out * dtype.type(int(coeff))
    raise unsupported(f"{op}: coeff {coeff} cannot scale a {dtype} output exactly "
                      "(integer outputs accept integral coeff only, bool outputs only 1.0)")


def _reduce_axes(op: str, rank: int, axis: np.ndarray, reduce_to_end: bool) -> tuple[int, ...]:
    axes = _axis_tensor(op, axis, rank)
    if reduce_to_end:
        _check_reduce_to_end(op, len(axes))
        axes = list(range(axes[0], rank))
    return tuple(axes) if axes else tuple(range(rank))  # no axis at all: reduce everything


def _check_reduce_to_end(op: str, axis_count: int) -> None:
    if axis_count != 1:
        raise invalid(f"{op}: reduce_to_end needs exactly one axis (the first reduced one), got {axis_count}")


def _reduced_dims(shape, axes, keep: bool):
    """``shape`` with ``axes`` reduced: kept as 1 (``keep``) or dropped."""
    return tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduction_shape(op: str, x_shape, axis_shape, axis_value, keep: bool, reduce_to_end: bool = False):
    """The rule of the reductions over the axes of input #1: exact when those axes are known; else the rank when
    the axis count tells it (every dim then unknown), or None."""
    if x_shape is None:
        return None
    if axis_value is not None:
        return _reduced_dims(x_shape, _reduce_axes(op, len(x_shape), axis_value, reduce_to_end), keep)
    count = _length(axis_shape)
    if reduce_to_end and _known(count):
        _check_reduce_to_end(op, count)
    if count == 0:  # no axis at all: reduce everything
        return _reduced_dims(x_shape, range(len(x_shape)), keep)
    if keep:
        return (-1,) * len(x_shape)
    known_rank = _known(count) and count <= len(x_shape) and not reduce_to_end  # (more axes: the kernel raises)
    return (-1,) * (len(x_shape) - count) if known_rank else None


def _reduce(op: str, mode: str, input: np.ndarray, axis: np.ndarray, keep_dims: bool, reduce_to_end: bool,
            coeff: float) -> np.ndarray:
    x = np.asarray(input)
    dtype = x.dtype
    axes = _reduce_axes(op, x.ndim, axis, bool(reduce_to_end))
    keep = bool(keep_dims)
    kind = dtype.kind
    if mode in ("mean", "l2") and kind not in _FLOAT_KINDS + (_INT_KINDS if mode == "mean" else ""):
        raise unsupported(f"{op}: input dtype {dtype} is not supported")
    if mode in ("sum", "prod") and kind not in _FLOAT_KINDS + _INT_KINDS:
        raise unsupported(f"{op}: input dtype {dtype} is not supported (numeric types only)")
    if mode in ("max", "min") and kind not in _FLOAT_KINDS + _INT_KINDS + "b":
        raise unsupported(f"{op}: input dtype {dtype} is not supported")
    if mode == "all" and kind not in _FLOAT_KINDS + _INT_KINDS + "b":
        raise unsupported(f"{op}: input dtype {dtype} is not supported")

    if kind in _FLOAT_KINDS:
        xw = x.astype(_work_dtype(dtype), copy=False)
        if mode == "mean":
            out = _float_mean(xw, axes, keep)
        elif mode == "sum":
            out = np.sum(xw, axis=axes, keepdims=keep)
        elif mode == "prod":
            out = _float_product(xw, axes, keep)
        elif mode == "l2":
            out = np.sqrt(np.sum(np.square(xw), axis=axes, keepdims=keep))
        elif mode == "max":
            out = np.max(xw, axis=axes, keepdims=keep)
        elif mode == "min":
            out = np.min(xw, axis=axes, keepdims=keep)
        else:  # all
            out = np.all(xw != 0, axis=axes, keepdims=keep).astype(xw.dtype)
    else:
        if mode == "mean":  # integer mean truncates toward zero (C division, MindSpore IntReduceMean)
            n = prod(x.shape[a] for a in axes)
            acc = np.sum(x, axis=axes, keepdims=keep, dtype=np.uint64 if kind == "u" else np.int64)
            out = (np.sign(acc) * (np.abs(acc) // n)) if kind == "i" else acc // n
        elif mode == "sum":
            out = np.sum(x, axis=axes, keepdims=keep, dtype=dtype)
        elif mode == "prod":
            out = np.prod(x, axis=axes, keepdims=keep, dtype=dtype)
        elif mode == "max":
            out = np.max(x, axis=axes, keepdims=keep)
        elif mode == "min":
            out = np.min(x, axis=axes, keepdims=keep)
        else:  # all
            out = np.all(x != 0, axis=axes, keepdims=keep)
    out = _apply_coeff(op, np.asarray(out), coeff, dtype)
    return np.asarray(out).astype(dtype, copy=False)


def _float_product(x: np.ndarray, axes, keep: bool) -> np.ndarray:
    """The product of the floats over ``axes``. Where the values are all finite, partial products may overflow to inf
    before smaller factors (or a zero) bring the product back: narrower floats are multiplied again in float64 and
    rounded (inf only where the product itself overflows); where one is zero, zero (with the product's sign), as
    inf * 0 is NaN. Likewise where the product of narrower floats underflows (subnormal or 0): partial products lose
    their digits in the subnormal range, the float64 product rounded once does not (fuzzer seed 8191: a product of
    1.4e-45, native 25% off where onnxruntime's order was 0.1%)."""
    out = np.prod(x, axis=axes, keepdims=keep)
    if x.dtype.itemsize < 8 and out.size:
        underflowed = np.abs(out) < np.finfo(out.dtype).tiny
        if underflowed.any():
            with np.errstate(over="ignore", invalid="ignore", under="ignore"):
                wide = np.prod(x.astype(np.float64), axis=axes, keepdims=keep).astype(out.dtype)
            out = np.where(underflowed, wide, out)
    if not out.size or np.isfinite(out).all():
        return out
    finite = np.all(np.isfinite(x), axis=axes, keepdims=keep)
    if x.dtype.itemsize < 8:  # finite values whose partial products overflowed: again in float64, then rounded
        with np.errstate(over="ignore", invalid="ignore"):
            wide = np.prod(x.astype(np.float64), axis=axes, keepdims=keep).astype(out.dtype)
        out = np.where(finite & ~np.isfinite(out), wide, out)
        if np.isfinite(out).all():
            return out
    zero = np.any(x == 0, axis=axes, keepdims=keep) & finite
    if not zero.any():
        return out
    negative = np.sum(np.signbit(x), axis=axes, keepdims=keep) % 2 == 1
    return np.where(zero, np.where(negative, -0.0, 0.0).astype(out.dtype), out)


_REDUCE_DOC = """Reduce over the axes of the ``axis`` input ({what}).

    * ``reduce_to_end``: ``axis`` holds one axis ``a``; the reduced axes are ``a..rank-1``.
    * ``keep_dims`` keeps reduced axes as size 1 (honoured together with reduce_to_end; MindSpore's shape
      inference forces keep_dims=false there).
    * ``coeff`` multiplies the result (header meaning; MindSpore applies it only with reduce_to_end and
      |coeff| > 1e-5, which is why the builder's 0.0 default means "no scaling" there: our default is 1.0).
    * An empty axis list reduces every axis.
    """


def _reduce_kernel(op_name: str, mode: str, what: str):
    short = op_name[len("OH_NN_OPS_"):]

    def fn(input: np.ndarray, axis: np.ndarray, *, keep_dims: bool, reduce_to_end: bool, coeff: float) -> np.ndarray:
        return _reduce(short, mode, input, axis, keep_dims, reduce_to_end, coeff)

    fn.__name__ = fn.__qualname__ = short.lower()
    fn.__doc__ = _REDUCE_DOC.format(what=what)
    return kernel(op_name)(fn)


@shape_rule("OH_NN_OPS_REDUCE_MEAN", "OH_NN_OPS_REDUCE_PROD", "OH_NN_OPS_REDUCE_ALL", "OH_NN_OPS_REDUCE_MAX",
            "OH_NN_OPS_REDUCE_MIN", "OH_NN_OPS_REDUCE_SUM", "OH_NN_OPS_REDUCE_L2")
def _reduce_shape(op, shapes, values, *, keep_dims, reduce_to_end, **_):
    return (_reduction_shape(op, shapes[0], shapes[1], values[1], bool(keep_dims), bool(reduce_to_end)),)


reduce_mean = _reduce_kernel("OH_NN_OPS_REDUCE_MEAN", "mean", "mean; integer inputs truncate toward zero")
reduce_prod = _reduce_kernel("OH_NN_OPS_REDUCE_PROD", "prod", "product; integers wrap like C")
reduce_all = _reduce_kernel("OH_NN_OPS_REDUCE_ALL", "all",
                            "logical AND of x != 0, returned in the input dtype (true = 1)")
reduce_max = _reduce_kernel("OH_NN_OPS_REDUCE_MAX", "max", "maximum")
reduce_min = _reduce_kernel("OH_NN_OPS_REDUCE_MIN", "min", "minimum")
reduce_sum = _reduce_kernel("OH_NN_OPS_REDUCE_SUM", "sum", "sum; integers wrap like C")
reduce_l2 = _reduce_kernel("OH_NN_OPS_REDUCE_L2", "l2", "sqrt(sum(x^2)); float only")


@shape_rule("OH_NN_OPS_ALL")
def _all_shape(op, shapes, values, *, keep_dims, **_):
    return (_reduction_shape(op, shapes[0], shapes[1], values[1], bool(_scalar(keep_dims))),)


@kernel("OH_NN_OPS_ALL")
def all_(input: np.ndarray, axis: np.ndarray, *, keep_dims: int, ctx: OpContext) -> np.ndarray:
    """``all(x != 0)`` over the axes of the ``axis`` input (scalar or 1-D; empty = every axis);
    ``keep_dims`` is an INT64 flag (non-zero = keep). Output: the declared dtype (BOOL)."""
    op = "ALL"
    x = np.asarray(input)
    if x.dtype.kind not in _FLOAT_KINDS + _INT_KINDS + "b":
        raise unsupported(f"{op}: input dtype {x.dtype} is not supported")
    axes = _axis_tensor(op, axis, x.ndim)
    out = np.all(x != 0, axis=tuple(axes) if axes else None, keepdims=bool(_scalar(keep_dims)))
    return np.asarray(out).astype(ctx.output_dtypes[0], copy=False)


# ----------------------------------------------------------------------------------------------------------------
# arg max / top k
# ----------------------------------------------------------------------------------------------------------------

def _require_sortable(op: str, x: np.ndarray) -> None:
    if x.dtype.kind not in _FLOAT_KINDS + _INT_KINDS:
        raise unsupported(f"{op}: input dtype {x.dtype} is not supported (numeric types only)")


@kernel("OH_NN_OPS_ARG_MAX")
def arg_max(input: np.ndarray, *, axis: int, keep_dims: bool, top_k: int, out_max_value: bool,
            ctx: OpContext) -> np.ndarray:
    """Index (or, with ``out_max_value``, value) of the maximum along ``axis``.

    ``top_k > 1`` returns the ``top_k`` largest, in descending order (ties: lower index first), and the axis
    keeps size ``top_k`` whatever ``keep_dims`` says; with ``top_k == 1`` the axis is dropped unless
    ``keep_dims`` (MindSpore ArgMaxFusion shape rule). Indices take the declared output dtype.
    """
    op = "ARG_MAX"
    x = np.asarray(input)
    _require_sortable(op, x)
    ax, k = _arg_max_axis(op, x.shape, axis, top_k)
    if k == 1:
        idx = np.argmax(x, axis=ax, keepdims=True)  # first occurrence on ties
    else:
        idx = np.take(_descending_order(x, ax), np.arange(k), axis=ax)
    out = np.take_along_axis(x, idx, axis=ax) if out_max_value else idx.astype(_index_dtype(op, ctx, 0))
    if k == 1 and not keep_dims:
        out = np.squeeze(out, axis=ax)
    return out


def _check_ranked(op: str, shape) -> None:
    if len(shape) == 0:
        raise invalid(f"{op}: input must have rank >= 1")


def _arg_max_axis(op: str, shape, axis, top_k) -> tuple[int, int]:
    """The normalised axis and the checked top_k (in [1, size of the axis]; unknown sizes pass)."""
    _check_ranked(op, shape)
    ax = _axis_index(op, _scalar(axis), len(shape))
    k = int(_scalar(top_k))
    n = shape[ax]
    if not 1 <= k or _known(n) and k > n:
        raise invalid(f"{op}: top_k {k} is out of range [1, {n}] (size of axis {ax})")
    return ax, k


@shape_rule("OH_NN_OPS_ARG_MAX")
def _arg_max_shape(op, shapes, values, *, axis, keep_dims, top_k, **_):
    """The axis keeps top_k entries when top_k > 1; with top_k 1 it is dropped unless keep_dims."""
    if shapes[0] is None:
        return (None,)
    ax, k = _arg_max_axis(op, shapes[0], axis, top_k)
    if k == 1 and not keep_dims:
        return (_reduced_dims(shapes[0], (ax,), keep=False),)
    return (tuple(k if i == ax else d for i, d in enumerate(shapes[0])),)


def _top_k_count(op: str, k) -> int:
    kt = np.asarray(k)
    if kt.dtype.kind not in _INT_KINDS or kt.size != 1:
        raise invalid(f"{op}: k must be a single integer, got dtype {kt.dtype} shape {list(kt.shape)}")
    return int(kt.reshape(-1)[0])


def _top_k_axis(op: str, shape, axis, kv: int | None) -> int:
    """The normalised axis after checking k against its size (an unknown k, None, or size passes)."""
    ax = _axis_index(op, _scalar(axis), len(shape))
    n = shape[ax]
    if kv is not None and (kv < 0 or _known(n) and kv > n):
        raise invalid(f"{op}: k {kv} is out of range [0, {n}] (size of axis {ax})")
    return ax


@shape_rule("OH_NN_OPS_TOP_K")
def _top_k_shape(op, shapes, values, *, axis, **_):
    """Values and indices: the input's shape with k entries along the axis (-1 while k is unknown)."""
    if shapes[0] is None:
        return (None, None)
    _check_ranked(op, shapes[0])
    kv = None if values[1] is None else _top_k_count(op, values[1])
    ax = _top_k_axis(op, shapes[0], axis, kv)
    out = tuple((-1 if kv is None else kv) if i == ax else d for i, d in enumerate(shapes[0]))
    return (out, out)


@kernel("OH_NN_OPS_TOP_K")
def top_k(input: np.ndarray, k: np.ndarray, *, sorted: bool, axis: int,
          ctx: OpContext) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest entries along ``axis`` (default -1, the last axis) and their indices.

    ``sorted=true``: descending values; ``sorted=false``: the same k entries in ascending value order (header
    meaning; MindSpore instead returns them in input-index order). Ties: lower index first.
    """
    op = "TOP_K"
    x = np.asarray(input)
    _require_sortable(op, x)
    _check_ranked(op, x.shape)
    kv = _top_k_count(op, k)
    ax = _top_k_axis(op, x.shape, axis, kv)
    idx = np.take(_descending_order(x, ax), np.arange(kv), axis=ax)
    values = np.take_along_axis(x, idx, axis=ax)
    if not sorted:
        # the k largest, ascending; a stable sort keeps equal values in ascending index order
        order = np.argsort(values, axis=ax, kind="stable")
        idx = np.take_along_axis(idx, order, axis=ax)
        values = np.take_along_axis(values, order, axis=ax)
    return values, idx.astype(_index_dtype(op, ctx, 1))
