"""Indexing kernels: SLICE, STRIDED_SLICE, GATHER, GATHER_ND, SCATTER_ND, SPARSE_TO_DENSE and ONE_HOT.

They move data without arithmetic on it, so they keep the input dtype (float16 included); ONE_HOT outputs onValue's
type (or the declared one). Inputs that hold shapes, axes or indices must be integer tensors; parameters arrive as
python ints/lists. ``strided_slice_index`` is also used by the ONNX exporter.

Each kernel's shape rule is next to it and runs the kernel's own window and index-shape helpers on shapes (and on
the begin/size/end/strides, axis, depth or shape inputs when their values are known).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import invalid, unsupported
from ..geometry import UNKNOWN
from . import kernel, shape_rule
from ._common import (
    _check_dims,
    _declared,
    _int_values,
    _known,
    _length,
    _norm_axis,
    _np_dtype_name,
    _one_int,
    _output_quantized,
    _product,
    _value_ints,
)


def _int_array(arr: Any, op: str, what: str) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise unsupported(f"{op}: {what} must be an integer tensor, got {_np_dtype_name(arr.dtype)}")
    return arr.astype(np.int64, copy=False)


def _check_index_range(idx: np.ndarray, limit, op: str, what: str) -> None:
    if not idx.size:
        return
    if isinstance(limit, int):  # one bound: the extremes (as python ints for a few indices: ~1 us per reduction)
        values = idx.reshape(-1).tolist() if idx.size <= 64 else None
        outside = (min(values) < 0 or max(values) >= limit) if values is not None else \
            (idx.min() < 0 or idx.max() >= limit)
    else:
        outside = idx.min() < 0 or (idx >= limit).any()
    if outside:
        bad = idx[(idx < 0) | (idx >= limit)].reshape(-1)[0]
        raise invalid(f"{op}: {what} value {int(bad)} is out of range [0, {limit if np.isscalar(limit) else list(np.ravel(limit))})")


# ----------------------------------------------------------------------------------------------------------- slicing

@kernel("OH_NN_OPS_SLICE")
def slice_(x, begin, size, *, axes):
    """begin >= 0 and size >= 0 (size -1: to the end of the dim), on ``axes`` or, when omitted, on dims 0..len-1."""
    op = "SLICE"
    x = np.asarray(x)
    starts = _int_values(begin, op, "begin")
    sizes = _int_values(size, op, "size")
    index = [slice(None)] * x.ndim
    for d, b, length in _slice_windows(op, x.shape, starts, sizes, axes):
        index[d] = slice(b, b + length)
    return x[tuple(index)].copy()


def _slice_dims(op: str, rank: int, count: int, axes) -> list[int]:
    """The dims a SLICE spec of ``count`` begin/size entries addresses (``axes``, or dims 0..count-1)."""
    if axes:
        dims = [_norm_axis(a, rank, op, "axes entry") for a in axes]
        if _known(count) and len(dims) != count:
            raise invalid(f"{op}: axes {list(axes)} must have one entry per begin/size value ({count})")
        if len(set(dims)) != len(dims):
            raise invalid(f"{op}: axes {list(axes)} repeats a dim")
        return dims
    if _known(count) and count > rank:
        raise invalid(f"{op}: begin/size have {count} entries for a rank-{rank} input")
    return list(range(count))


def _slice_windows(op: str, shape, starts: list[int], sizes: list[int], axes) -> list[tuple[int, int, int]]:
    """(dim, begin, length) per sliced dim: size -1 runs to the end of the dim; windows must fit (UNKNOWN lengths
    where a dim is unknown)."""
    if len(starts) != len(sizes):
        raise invalid(f"{op}: begin {starts} and size {sizes} must have the same length")
    dims = _slice_dims(op, len(shape), len(starts), axes)
    windows = []
    for d, b, s in zip(dims, starts, sizes):
        n = shape[d]
        if s == -1:
            s = n - b if _known(n) else UNKNOWN
        if b < 0 or s < 0 and s != UNKNOWN or _known(n) and (b > n or b + s > n):
            raise invalid(f"{op}: begin {b} / size {sizes[dims.index(d)]} do not fit dim {d} of length {n} "
                          f"(input dims {list(shape)})")
        windows.append((d, b, s))
    return windows


@shape_rule("OH_NN_OPS_SLICE")
def _slice_shape(op, shapes, values, *, axes, **_):
    """The input's shape with each sliced dim cut to its window (-1 while begin/size are unknown)."""
    x_shape = shapes[0]
    if x_shape is None:
        return (None,)
    starts, sizes = _value_ints(values[1]), _value_ints(values[2])
    out = list(x_shape)
    if starts is not None and sizes is not None:
        for d, _, length in _slice_windows(op, x_shape, starts, sizes, axes):
            out[d] = length
        return (tuple(out),)
    count = len(sizes) if sizes is not None else len(starts) if starts is not None else _length(shapes[1])
    if not _known(count) and not axes:
        return ((UNKNOWN,) * len(x_shape),)
    for i, d in enumerate(_slice_dims(op, len(x_shape), count, axes)):
        out[d] = sizes[i] if sizes is not None and sizes[i] >= 0 else UNKNOWN
    return (tuple(out),)


@kernel("OH_NN_OPS_STRIDED_SLICE")
def strided_slice(x, begin, end, strides, *, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask):
    """TensorFlow StridedSlice semantics (tensorflow/core/util/strided_slice_op.cc), all five masks."""
    op = "STRIDED_SLICE"
    x = np.asarray(x)
    b = _int_values(begin, op, "begin")
    e = _int_values(end, op, "end")
    s = _int_values(strides, op, "strides")
    if not len(b) == len(e) == len(s):
        raise invalid(f"{op}: begin {b}, end {e} and strides {s} must have the same length")
    index = strided_slice_index(x.shape, b, e, s, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                                shrink_axis_mask)
    return np.array(x[tuple(index)], copy=True)


def strided_slice_index(shape, b, e, s, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                        shrink_axis_mask) -> list[Any]:
    """The numpy index (slices, ints for shrunk dims, None for new axes) a StridedSlice spec means for ``shape``
    (shared by the kernel, its shape rule and the ONNX exporter)."""
    return _strided_slice_items(shape, len(b), b, e, s, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                                shrink_axis_mask)


# An index item whose extent is not known before run time (begin/end/strides are not constants).
_UNKNOWN_EXTENT = slice(UNKNOWN, UNKNOWN, UNKNOWN)


def _strided_slice_items(shape, k, b, e, s, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                         shrink_axis_mask) -> list[Any]:
    """:func:`strided_slice_index` for a spec of ``k`` entries whose begin/end/strides (``b``, ``e``, ``s``) may be
    None (unknown values) and a shape whose dims may be UNKNOWN: the items of unknown extent are
    ``_UNKNOWN_EXTENT`` (a shrunk dim stays an int, 0 when its position is unknown)."""
    op = "STRIDED_SLICE"
    keep = (1 << k) - 1  # mask bits past the spec's length address nothing
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask = (
        int(m) & keep for m in (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask))
    if ellipsis_mask & (ellipsis_mask - 1):
        raise invalid(f"{op}: ellipsisMask {ellipsis_mask:#b} has more than one bit set")
    bit = lambda mask, i: (mask >> i) & 1  # noqa: E731
    # Classify sparse entries; an ellipsis bit wins over new-axis, a new-axis bit over shrink.
    kinds = []
    for i in range(k):
        kinds.append("ellipsis" if bit(ellipsis_mask, i) else "new" if bit(new_axis_mask, i) else "dim")
    if "ellipsis" not in kinds:
        kinds.append("ellipsis")  # TF: an implicit ellipsis at the end covers the remaining dims
    consuming = kinds.count("dim")
    if consuming > len(shape):
        raise invalid(f"{op}: the spec indexes {consuming} dims of a rank-{len(shape)} input")
    index: list[Any] = []
    d = 0
    for i, kind in enumerate(kinds):
        if kind == "ellipsis":
            for _ in range(len(shape) - consuming):
                index.append(slice(None))
                d += 1
            continue
        if kind == "new":
            index.append(None)
            continue
        n = shape[d]
        stride = None if s is None else s[i]
        if stride == 0:
            raise invalid(f"{op}: strides[{i}] is 0")
        if bit(shrink_axis_mask, i):
            if b is None or not _known(n):
                index.append(0)
            else:
                pos = b[i] + n if b[i] < 0 else b[i]
                if not 0 <= pos < n:
                    raise invalid(f"{op}: shrink index begin[{i}]={b[i]} is out of bounds for dim {d} of length {n}")
                index.append(pos)
        elif b is None or e is None or stride is None or not _known(n):
            index.append(_UNKNOWN_EXTENT)
        else:
            lo, hi = (0, n) if stride > 0 else (-1, n - 1)

            def canonical(v, masked, c):
                if masked:
                    return (lo, hi)[c] if stride > 0 else (lo, hi)[1 - c]
                v = v + n if v < 0 else v
                return min(max(v, lo), hi)

            start = canonical(b[i], bit(begin_mask, i), 0)
            stop = canonical(e[i], bit(end_mask, i), 1)
            if stride < 0 and start == -1:
                index.append(slice(0, 0))  # empty: nothing lies at or before index -1
            elif stride < 0 and stop == -1:
                index.append(slice(start, None, stride))
            else:
                index.append(slice(start, stop, stride))
        d += 1
    return index


def _indexed_dims(shape, index: list[Any]) -> tuple[int, ...]:
    """The dims numpy gives ``x[tuple(index)]`` for an index of slices, ints and None covering every dim
    (UNKNOWN for an item of unknown extent or over an unknown dim)."""
    out = []
    d = 0
    for item in index:
        if item is None:
            out.append(1)
            continue
        if isinstance(item, slice):
            n = shape[d]
            out.append(len(range(n)[item]) if _known(n) and item is not _UNKNOWN_EXTENT else UNKNOWN)
        d += 1
    return tuple(out)


@shape_rule("OH_NN_OPS_STRIDED_SLICE")
def _strided_slice_shape(op, shapes, values, *, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                         shrink_axis_mask, **_):
    """The dims of the kernel's own index (new axes, shrunk dims and the ellipsis are known from the masks alone;
    sliced extents need begin/end/strides)."""
    b, e, s = (_value_ints(v) for v in values[1:4])
    if b is not None and e is not None and s is not None and not len(b) == len(e) == len(s):
        raise invalid(f"{op}: begin {b}, end {e} and strides {s} must have the same length")
    k = next((len(v) for v in (b, e, s) if v is not None), None)
    k = _length(shapes[1]) if k is None else k
    if shapes[0] is None or not _known(k):
        return (None,)
    index = _strided_slice_items(shapes[0], k, b, e, s, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                                 shrink_axis_mask)
    return (_indexed_dims(shapes[0], index),)


# ---------------------------------------------------------------------------------------------- gathers & scatters

@kernel("OH_NN_OPS_GATHER")
def gather(x, indices, axis):
    """output = input.shape[:axis] + indices.shape + input.shape[axis+1:]; indices in [0, input.shape[axis])."""
    op = "GATHER"
    x = np.asarray(x)
    ax = _gather_axis(op, x.ndim, axis)
    idx = _int_array(indices, op, "inputIndices")
    _check_index_range(idx, x.shape[ax], op, "inputIndices")
    return np.take(x, idx, axis=ax)


def _gather_axis(op: str, rank: int, axis) -> int:
    if rank == 0:
        raise invalid(f"{op}: cannot gather from a scalar")
    return _norm_axis(_one_int(axis, op, "axis"), rank, op)


@shape_rule("OH_NN_OPS_GATHER")
def _gather_shape(op, shapes, values, **_):
    """input.shape[:axis] + indices.shape + input.shape[axis+1:] (-1s of that rank while the axis is unknown)."""
    x_shape, idx_shape = shapes[0], shapes[1]
    if x_shape is None or idx_shape is None:
        return (None,)
    if values[2] is None:
        if len(x_shape) == 0:
            raise invalid(f"{op}: cannot gather from a scalar")
        return ((UNKNOWN,) * (len(x_shape) - 1 + len(idx_shape)),)
    ax = _gather_axis(op, len(x_shape), values[2])
    return (tuple(x_shape[:ax]) + tuple(idx_shape) + tuple(x_shape[ax + 1:]),)


@kernel("OH_NN_OPS_GATHER_ND")
def gather_nd(x, indices):
    """TF GatherNd (batch_dims 0): output = indices.shape[:-1] + input.shape[indices.shape[-1]:]."""
    op = "GATHER_ND"
    x = np.asarray(x)
    idx = _int_array(indices, op, "indices")
    _gather_nd_dims(op, x.shape, idx.shape)
    k = idx.shape[-1]
    if k == 0:  # every index selects the whole input
        return np.broadcast_to(x, idx.shape[:-1] + x.shape).copy()
    _check_index_range(idx, np.array(x.shape[:k], dtype=np.int64), op, "indices")
    return np.ascontiguousarray(x[tuple(idx[..., i] for i in range(k))])


def _gather_nd_dims(op: str, x_shape, idx_shape):
    """indices.shape[:-1] + input.shape[k:], k = indices.shape[-1] (None while k or a rank is unknown)."""
    if idx_shape is None:
        return None
    if len(idx_shape) == 0:
        raise invalid(f"{op}: indices must have rank >= 1")
    k = idx_shape[-1]
    if x_shape is None or not _known(k):
        return None
    if k > len(x_shape):
        raise invalid(f"{op}: indices last dim {k} exceeds the input rank {len(x_shape)}")
    return tuple(idx_shape[:-1]) + tuple(x_shape[k:])


@shape_rule("OH_NN_OPS_GATHER_ND")
def _gather_nd_shape(op, shapes, values, **_):
    return (_gather_nd_dims(op, shapes[0], shapes[1]),)


@kernel("OH_NN_OPS_SCATTER_ND")
def scatter_nd(indices, updates, shape):
    """TF ScatterNd: zeros of ``shape`` with ``updates`` added at ``indices`` (duplicate indices accumulate)."""
    op = "SCATTER_ND"
    idx = _int_array(indices, op, "indices")
    updates = np.asarray(updates)
    out_shape = _check_dims(_int_values(shape, op, "shape"), op, "shape")
    _check_scatter_nd(op, idx.shape, updates.shape, out_shape)
    k = idx.shape[-1]
    _check_index_range(idx, np.array(out_shape[:k], dtype=np.int64), op, "indices")
    out = np.zeros(out_shape, dtype=updates.dtype)
    np.add.at(out, tuple(idx[..., i] for i in range(k)), updates)
    return out


def _check_scatter_nd(op: str, idx_shape, upd_shape, out_shape) -> None:
    """indices of rank >= 2 whose last dim k fits the output rank; updates of indices.shape[:-1] + shape[k:]
    (unknown dims pass)."""
    if len(idx_shape) < 2:
        raise invalid(f"{op}: indices must have rank >= 2, got dims {list(idx_shape)}")
    k = idx_shape[-1]
    if not _known(k) or upd_shape is None:
        return
    if k > len(out_shape):
        raise invalid(f"{op}: indices last dim {k} exceeds the rank of shape {list(out_shape)}")
    expected = tuple(idx_shape[:-1]) + tuple(out_shape[k:])
    if len(upd_shape) != len(expected) or any(_known(a, b) and a != b for a, b in zip(upd_shape, expected)):
        raise invalid(f"{op}: updates dims {list(upd_shape)} must be indices.shape[:-1] + shape[{k}:] = "
                      f"{list(expected)}")


@shape_rule("OH_NN_OPS_SCATTER_ND")
def _scatter_nd_shape(op, shapes, values, **_):
    """The shape input's value; while it is unknown, its length gives the rank and the updates give the dims
    after the indexed ones."""
    idx_shape, upd_shape = shapes[0], shapes[1]
    if values[2] is not None:
        out = _check_dims(_int_values(values[2], op, "shape"), op, "shape")
        if idx_shape is not None:
            _check_scatter_nd(op, idx_shape, upd_shape, out)
        return (out,)
    rank = _length(shapes[2])
    if not _known(rank):
        return (None,)
    out = [UNKNOWN] * rank
    if idx_shape is not None and upd_shape is not None and len(idx_shape) >= 2 and _known(idx_shape[-1]):
        tail = upd_shape[len(idx_shape) - 1:]
        if len(tail) == rank - idx_shape[-1]:
            out[idx_shape[-1]:] = tail
    return (tuple(out),)


@kernel("OH_NN_OPS_SPARSE_TO_DENSE")
def sparse_to_dense(indices, values, sparse_shape):
    """Zeros of ``sparseShape`` with ``values`` (one per index row, or one value for all) at ``indices``
    ((N, rank) rows, or (N,) for a rank-1 output); repeated indices are rejected (TF SparseToDense)."""
    op = "SPARSE_TO_DENSE"
    idx = _int_array(indices, op, "indices")
    values = np.asarray(values)
    out_shape = _check_dims(_int_values(sparse_shape, op, "sparseShape"), op, "sparseShape")
    rank = len(out_shape)
    if idx.ndim <= 1 and rank == 1:
        idx = idx.reshape(-1, 1)
    n = _check_sparse_operands(op, np.shape(indices), idx.shape, values.shape, out_shape)
    if values.size == 1:
        values = np.broadcast_to(values.reshape(()), (n,))
    _check_index_range(idx, np.array(out_shape, dtype=np.int64), op, "indices")
    if n > 1 and len(np.unique(idx, axis=0)) != n:
        raise invalid(f"{op}: indices contain a repeated position")
    out = np.zeros(out_shape, dtype=values.dtype)
    out[tuple(idx[:, i] for i in range(rank))] = values
    return out


def _check_sparse_operands(op: str, given_idx_shape, idx_shape, val_shape, out_shape) -> int:
    """(N, rank) index rows (``idx_shape``: rank-1 output indices already as (N, 1)) and N values or one value;
    N (unknown dims pass)."""
    rank = len(out_shape)
    if len(idx_shape) != 2 or _known(idx_shape[1]) and idx_shape[1] != rank:
        raise invalid(f"{op}: indices dims {list(given_idx_shape)} must be (N, {rank}) for sparseShape "
                      f"{list(out_shape)}")
    n = idx_shape[0]
    if val_shape is None or _product(val_shape) == 1:
        return n
    if len(val_shape) == 1:
        fits = not _known(n, val_shape[0]) or val_shape[0] == n
    else:
        fits = not _known(_product(val_shape))  # unknown dims may still hold one value
    if not fits:
        raise invalid(f"{op}: values dims {list(val_shape)} must be ({n},) to match indices")
    return n


@shape_rule("OH_NN_OPS_SPARSE_TO_DENSE")
def _sparse_to_dense_shape(op, shapes, values, **_):
    """sparseShape's value (-1s of its length while unknown)."""
    if values[2] is None:
        rank = _length(shapes[2])
        return ((UNKNOWN,) * rank if _known(rank) else None,)
    out = _check_dims(_int_values(values[2], op, "sparseShape"), op, "sparseShape")
    idx_shape = shapes[0]
    if idx_shape is not None:
        given = idx_shape
        if len(idx_shape) <= 1 and len(out) == 1:
            idx_shape = (_product(idx_shape), 1)
        _check_sparse_operands(op, given, idx_shape, shapes[1], out)
    return (out,)


@kernel("OH_NN_OPS_ONE_HOT")
def one_hot(indices, depth, on_value, off_value, *, axis, ctx):
    """TF OneHot: an index outside [0, depth) (negative included) gives an all-off vector; output dtype is
    onValue's (or the declared output's)."""
    op = "ONE_HOT"
    idx = _int_array(indices, op, "indices")
    depth = _one_hot_depth(op, depth)
    on, off = np.asarray(on_value), np.asarray(off_value)
    _check_on_off(op, on.shape, off.shape)
    out_dtype = _declared(ctx) or on.dtype
    if _output_quantized(ctx):
        out_dtype = np.dtype(np.float32)  # the executor quantizes real values
    ax = _norm_axis(axis, idx.ndim + 1, op)
    hot = np.expand_dims(idx, ax) == np.arange(depth).reshape([depth if i == ax else 1 for i in range(idx.ndim + 1)])
    return np.where(hot, on.reshape(()).astype(out_dtype), off.reshape(()).astype(out_dtype))


def _one_hot_depth(op: str, depth) -> int:
    depth = _one_int(depth, op, "depth")
    if depth <= 0:
        raise invalid(f"{op}: depth {depth} must be > 0")
    return depth


def _check_on_off(op: str, on_shape, off_shape) -> None:
    sizes = [_product(s) for s in (on_shape, off_shape) if s is not None]
    if any(_known(n) and n != 1 for n in sizes):
        shown = ["?" if s is None else str(list(s)) for s in (on_shape, off_shape)]
        raise invalid(f"{op}: onValue and offValue must be scalars, got dims {shown[0]}, {shown[1]}")


@shape_rule("OH_NN_OPS_ONE_HOT")
def _one_hot_shape(op, shapes, values, *, axis, **_):
    """The indices' shape with depth entries inserted at the axis (-1 while depth is unknown)."""
    depth = UNKNOWN if values[1] is None else _one_hot_depth(op, values[1])
    _check_on_off(op, shapes[2], shapes[3])
    idx_shape = shapes[0]
    if idx_shape is None:
        return (None,)
    ax = _norm_axis(axis, len(idx_shape) + 1, op)
    return (tuple(idx_shape[:ax]) + (depth,) + tuple(idx_shape[ax:]),)
