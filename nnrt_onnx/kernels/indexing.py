"""Indexing kernels: SLICE, STRIDED_SLICE, GATHER, GATHER_ND, SCATTER_ND, SPARSE_TO_DENSE and ONE_HOT.

They move data without arithmetic on it, so they keep the input dtype (float16 included); ONE_HOT outputs onValue's
type (or the declared one). Inputs that hold shapes, axes or indices must be integer tensors; parameters arrive as
python ints/lists. ``strided_slice_index`` is also used by the ONNX exporter.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import invalid, unsupported
from . import kernel
from ._common import (
    _check_dims,
    _declared,
    _int_values,
    _norm_axis,
    _np_dtype_name,
    _one_int,
    _output_quantized,
)


def _int_array(arr: Any, op: str, what: str) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise unsupported(f"{op}: {what} must be an integer tensor, got {_np_dtype_name(arr.dtype)}")
    return arr.astype(np.int64, copy=False)


def _check_index_range(idx: np.ndarray, limit, op: str, what: str) -> None:
    if idx.size and (idx.min() < 0 or np.any(idx >= limit)):
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
    if len(starts) != len(sizes):
        raise invalid(f"{op}: begin {starts} and size {sizes} must have the same length")
    if axes:
        dims = [_norm_axis(a, x.ndim, op, "axes entry") for a in axes]
        if len(dims) != len(starts):
            raise invalid(f"{op}: axes {list(axes)} must have one entry per begin/size value ({len(starts)})")
        if len(set(dims)) != len(dims):
            raise invalid(f"{op}: axes {list(axes)} repeats a dim")
    else:
        if len(starts) > x.ndim:
            raise invalid(f"{op}: begin/size have {len(starts)} entries for a rank-{x.ndim} input")
        dims = list(range(len(starts)))
    index = [slice(None)] * x.ndim
    for d, b, s in zip(dims, starts, sizes):
        n = x.shape[d]
        if s == -1:
            s = n - b
        if not 0 <= b <= n or s < 0 or b + s > n:
            raise invalid(f"{op}: begin {b} / size {sizes[dims.index(d)]} do not fit dim {d} of length {n} "
                          f"(input dims {list(x.shape)})")
        index[d] = slice(b, b + s)
    return x[tuple(index)].copy()


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
    (shared by the kernel and the ONNX exporter)."""
    op = "STRIDED_SLICE"
    k = len(b)
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
        stride = s[i]
        if stride == 0:
            raise invalid(f"{op}: strides[{i}] is 0")
        if bit(shrink_axis_mask, i):
            pos = b[i] + n if b[i] < 0 else b[i]
            if not 0 <= pos < n:
                raise invalid(f"{op}: shrink index begin[{i}]={b[i]} is out of bounds for dim {d} of length {n}")
            index.append(pos)
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


# ---------------------------------------------------------------------------------------------- gathers & scatters

@kernel("OH_NN_OPS_GATHER")
def gather(x, indices, axis):
    """output = input.shape[:axis] + indices.shape + input.shape[axis+1:]; indices in [0, input.shape[axis])."""
    op = "GATHER"
    x = np.asarray(x)
    if x.ndim == 0:
        raise invalid(f"{op}: cannot gather from a scalar")
    ax = _norm_axis(_one_int(axis, op, "axis"), x.ndim, op)
    idx = _int_array(indices, op, "inputIndices")
    _check_index_range(idx, x.shape[ax], op, "inputIndices")
    return np.take(x, idx, axis=ax)


@kernel("OH_NN_OPS_GATHER_ND")
def gather_nd(x, indices):
    """TF GatherNd (batch_dims 0): output = indices.shape[:-1] + input.shape[indices.shape[-1]:]."""
    op = "GATHER_ND"
    x = np.asarray(x)
    idx = _int_array(indices, op, "indices")
    if idx.ndim == 0:
        raise invalid(f"{op}: indices must have rank >= 1")
    k = idx.shape[-1]
    if k > x.ndim:
        raise invalid(f"{op}: indices last dim {k} exceeds the input rank {x.ndim}")
    if k == 0:  # every index selects the whole input
        return np.broadcast_to(x, idx.shape[:-1] + x.shape).copy()
    _check_index_range(idx, np.array(x.shape[:k], dtype=np.int64), op, "indices")
    return np.ascontiguousarray(x[tuple(idx[..., i] for i in range(k))])


@kernel("OH_NN_OPS_SCATTER_ND")
def scatter_nd(indices, updates, shape):
    """TF ScatterNd: zeros of ``shape`` with ``updates`` added at ``indices`` (duplicate indices accumulate)."""
    op = "SCATTER_ND"
    idx = _int_array(indices, op, "indices")
    updates = np.asarray(updates)
    out_shape = _check_dims(_int_values(shape, op, "shape"), op, "shape")
    if idx.ndim < 2:
        raise invalid(f"{op}: indices must have rank >= 2, got dims {list(idx.shape)}")
    k = idx.shape[-1]
    if k > len(out_shape):
        raise invalid(f"{op}: indices last dim {k} exceeds the rank of shape {list(out_shape)}")
    expected = idx.shape[:-1] + out_shape[k:]
    if updates.shape != expected:
        raise invalid(f"{op}: updates dims {list(updates.shape)} must be indices.shape[:-1] + shape[{k}:] = "
                      f"{list(expected)}")
    _check_index_range(idx, np.array(out_shape[:k], dtype=np.int64), op, "indices")
    out = np.zeros(out_shape, dtype=updates.dtype)
    np.add.at(out, tuple(idx[..., i] for i in range(k)), updates)
    return out


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
    if idx.ndim != 2 or idx.shape[1] != rank:
        raise invalid(f"{op}: indices dims {list(np.shape(indices))} must be (N, {rank}) for sparseShape "
                      f"{list(out_shape)}")
    n = idx.shape[0]
    if values.size == 1:
        values = np.broadcast_to(values.reshape(()), (n,))
    elif values.shape != (n,):
        raise invalid(f"{op}: values dims {list(values.shape)} must be ({n},) to match indices")
    _check_index_range(idx, np.array(out_shape, dtype=np.int64), op, "indices")
    if n > 1 and len(np.unique(idx, axis=0)) != n:
        raise invalid(f"{op}: indices contain a repeated position")
    out = np.zeros(out_shape, dtype=values.dtype)
    out[tuple(idx[:, i] for i in range(rank))] = values
    return out


@kernel("OH_NN_OPS_ONE_HOT")
def one_hot(indices, depth, on_value, off_value, *, axis, ctx):
    """TF OneHot: an index outside [0, depth) (negative included) gives an all-off vector; output dtype is
    onValue's (or the declared output's)."""
    op = "ONE_HOT"
    idx = _int_array(indices, op, "indices")
    depth = _one_int(depth, op, "depth")
    if depth <= 0:
        raise invalid(f"{op}: depth {depth} must be > 0")
    on, off = np.asarray(on_value), np.asarray(off_value)
    if on.size != 1 or off.size != 1:
        raise invalid(f"{op}: onValue and offValue must be scalars, got dims {list(on.shape)}, {list(off.shape)}")
    out_dtype = _declared(ctx) or on.dtype
    if _output_quantized(ctx):
        out_dtype = np.dtype(np.float32)  # the executor quantizes real values
    ax = _norm_axis(axis, idx.ndim + 1, op)
    hot = np.expand_dims(idx, ax) == np.arange(depth).reshape([depth if i == ax else 1 for i in range(idx.ndim + 1)])
    return np.where(hot, on.reshape(()).astype(out_dtype), off.reshape(()).astype(out_dtype))
