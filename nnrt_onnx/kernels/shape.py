"""Shape manipulation, indexing, data movement and type conversion kernels.

Every kernel here moves or converts data without arithmetic on it, so it keeps the input dtype (float16 included)
unless the op's output type is documented otherwise (Cast, QuantDTypeCast, Shape, Rank, Range, ConstantOfShape, OneHot).
Inputs that hold shapes, axes or indices must be integer tensors; parameters arrive as python ints/lists.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..dtypes import quant_range, to_numpy
from ..enums import OH_NN_DataType, OH_NN_ReturnCode
from ..errors import NNRtError, invalid, unsupported
from . import kernel

# MindIR TypeId codes (the HDI's data type numbering) accepted as aliases of OH_NN_DataType codes wherever a
# parameter carries a data type code the runtime forwards to the HDI untranslated (ConstantOfShape, QuantDTypeCast).
_MINDIR_TYPES = {30: np.bool_, 32: np.int8, 33: np.int16, 34: np.int32, 35: np.int64, 37: np.uint8, 38: np.uint16,
                 39: np.uint32, 40: np.uint64, 42: np.float16, 43: np.float32, 44: np.float64}


# ----------------------------------------------------------------------------------------------------------- helpers

def _dtype_name(dtype) -> str:
    return np.dtype(dtype).name


def _int_values(arr: Any, op: str, what: str) -> list[int]:
    """The elements of an integer shape/axis/index tensor as python ints (any integer dtype)."""
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise unsupported(f"{op}: {what} must be an integer tensor, got {_dtype_name(arr.dtype)}")
    return [int(v) for v in arr.reshape(-1).tolist()]


def _int_array(arr: Any, op: str, what: str) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise unsupported(f"{op}: {what} must be an integer tensor, got {_dtype_name(arr.dtype)}")
    return arr.astype(np.int64, copy=False)


def _one_int(arr: Any, op: str, what: str) -> int:
    values = _int_values(arr, op, what)
    if len(values) != 1:
        raise invalid(f"{op}: {what} must hold exactly one value, got {len(values)}")
    return values[0]


def _norm_axis(axis: int, rank: int, op: str, what: str = "axis") -> int:
    """axis in [-rank, rank) -> [0, rank)."""
    if not -rank <= axis < rank:
        raise invalid(f"{op}: {what} {axis} is out of range [{-rank}, {rank}) for a rank-{rank} input")
    return axis + rank if axis < 0 else axis


def _check_dims(dims: Sequence[int], op: str, what: str) -> tuple[int, ...]:
    for d in dims:
        if d < 0:
            raise invalid(f"{op}: {what} {list(dims)} has a negative dimension")
    return tuple(dims)


def _declared(ctx, index: int = 0) -> np.dtype | None:
    if ctx is None or index >= len(ctx.output_dtypes) or ctx.output_dtypes[index] is None:
        return None
    return np.dtype(ctx.output_dtypes[index])


def _output_count(ctx) -> int | None:
    return None if ctx is None else len(ctx.output_dtypes)


def _output_quantized(ctx, index: int = 0) -> bool:
    return ctx is not None and index < len(ctx.output_quant) and ctx.output_quant[index] is not None


def _type_code(code: int, op: str, what: str, mindir: bool = False) -> np.dtype | None:
    """OH_NN_DataType code (or, with ``mindir``, an HDI/MindIR TypeId) -> numpy dtype; None for OH_NN_UNKNOWN."""
    if code == OH_NN_DataType.OH_NN_UNKNOWN:
        return None
    if 0 < code <= OH_NN_DataType.OH_NN_FLOAT64:
        return to_numpy(code)
    if mindir and code in _MINDIR_TYPES:
        return np.dtype(_MINDIR_TYPES[code])
    accepted = "an OH_NN_DataType (1..12)" + (" or a MindIR TypeId (30..44)" if mindir else "")
    raise invalid(f"{op}: {what} {code} is not {accepted}")


def _shape_dtype(ctx, op: str) -> np.dtype:
    """Declared output dtype of a shape-producing op: int32 or int64 (int32 when nothing is declared)."""
    dtype = _declared(ctx)
    if dtype is None:
        return np.dtype(np.int32)
    if dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise unsupported(f"{op}: output must be declared INT32 or INT64, got {_dtype_name(dtype)}")
    return dtype


# ----------------------------------------------------------------------------------------------- reshape & friends

@kernel("OH_NN_OPS_RESHAPE")
def reshape(x, shape):
    """Target shape: at most one -1 (inferred); 0 copies the input's dim at that position (ONNX allowzero=0)."""
    op = "RESHAPE"
    x = np.asarray(x)
    target = _int_values(shape, op, "shape")
    if np.ndim(shape) > 1:
        raise invalid(f"{op}: shape must be a 1-D tensor, got dims {list(np.shape(shape))}")
    out, infer = [], None
    for i, d in enumerate(target):
        if d == -1:
            if infer is not None:
                raise invalid(f"{op}: shape {target} has more than one -1")
            infer = i
            out.append(1)
        elif d == 0:
            if i >= x.ndim:
                raise invalid(f"{op}: shape {target} copies dim {i} (0) but the input has rank {x.ndim}")
            out.append(x.shape[i])
        elif d < -1:
            raise invalid(f"{op}: shape {target} has an invalid dimension {d}")
        else:
            out.append(d)
    known = math.prod(out)
    if infer is not None:
        if known == 0 or x.size % known:
            raise invalid(f"{op}: cannot infer the -1 of shape {target} for an input of {x.size} elements "
                          f"(dims {list(x.shape)})")
        out[infer] = x.size // known
    elif known != x.size:
        raise invalid(f"{op}: shape {target} holds {known} elements, the input {list(x.shape)} holds {x.size}")
    return x.reshape(out).copy()


@kernel("OH_NN_OPS_TRANSPOSE")
def transpose(x, perm):
    op = "TRANSPOSE"
    x = np.asarray(x)
    axes = _int_values(perm, op, "permutation")
    if len(axes) != x.ndim:
        raise invalid(f"{op}: permutation {axes} must have one entry per input dim (rank {x.ndim})")
    norm = [_norm_axis(a, x.ndim, op, "permutation entry") for a in axes]
    if sorted(norm) != list(range(x.ndim)):
        raise invalid(f"{op}: {axes} is not a permutation of the {x.ndim} input dims")
    return np.ascontiguousarray(np.transpose(x, norm))


@kernel("OH_NN_OPS_CONCAT")
def concat(*inputs, axis):
    op = "CONCAT"
    arrays = [np.asarray(a) for a in inputs]
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) != 1:
        raise invalid(f"{op}: inputs must share one data type, got {sorted(_dtype_name(d) for d in dtypes)}")
    rank = arrays[0].ndim
    if rank == 0 or any(a.ndim != rank for a in arrays):
        raise invalid(f"{op}: inputs must have the same rank >= 1, got dims {[list(a.shape) for a in arrays]}")
    ax = _norm_axis(axis, rank, op)
    for a in arrays[1:]:
        if a.shape[:ax] + a.shape[ax + 1:] != arrays[0].shape[:ax] + arrays[0].shape[ax + 1:]:
            raise invalid(f"{op}: input dims {[list(b.shape) for b in arrays]} differ outside axis {axis}")
    return np.concatenate(arrays, axis=ax)


@kernel("OH_NN_OPS_SPLIT")
def split(x, *, axis, output_num, size_splits, ctx):
    """sizeSplits (one -1 may be inferred) wins; otherwise an even split into outputNum (or the node's output count)."""
    op = "SPLIT"
    x = np.asarray(x)
    if x.ndim == 0:
        raise invalid(f"{op}: cannot split a scalar")
    ax = _norm_axis(axis, x.ndim, op)
    dim = x.shape[ax]
    n_outputs = _output_count(ctx)
    if output_num < 0:
        raise invalid(f"{op}: outputNum {output_num} must be >= 0")
    if size_splits:
        sizes = [int(s) for s in size_splits]
        if output_num and output_num != len(sizes):
            raise invalid(f"{op}: outputNum {output_num} disagrees with sizeSplits {sizes}")
        unknown = [i for i, s in enumerate(sizes) if s == -1]
        if len(unknown) > 1 or any(s < -1 for s in sizes):
            raise invalid(f"{op}: sizeSplits {sizes} may hold at most one -1 and no other negative value")
        if unknown:
            rest = dim - sum(s for s in sizes if s != -1)
            if rest < 0:
                raise invalid(f"{op}: sizeSplits {sizes} exceed dim {dim} of axis {axis}")
            sizes[unknown[0]] = rest
        if sum(sizes) != dim:
            raise invalid(f"{op}: sizeSplits {size_splits} must add up to dim {dim} of axis {axis} "
                          f"(input dims {list(x.shape)})")
    else:
        pieces = output_num or n_outputs
        if not pieces:
            raise invalid(f"{op}: neither outputNum nor sizeSplits is given")
        if dim % pieces:
            raise invalid(f"{op}: dim {dim} of axis {axis} (input dims {list(x.shape)}) is not divisible "
                          f"into {pieces} equal pieces")
        sizes = [dim // pieces] * pieces
    if n_outputs is not None and n_outputs != len(sizes):
        raise invalid(f"{op}: the split makes {len(sizes)} pieces but the operation has {n_outputs} outputs")
    bounds = np.cumsum(sizes)[:-1]
    return tuple(np.ascontiguousarray(p) for p in np.split(x, bounds, axis=ax))


@kernel("OH_NN_OPS_STACK")
def stack(*inputs, axis):
    op = "STACK"
    arrays = [np.asarray(a) for a in inputs]
    if len({a.dtype for a in arrays}) != 1:
        raise invalid(f"{op}: inputs must share one data type, got {[_dtype_name(a.dtype) for a in arrays]}")
    if len({a.shape for a in arrays}) != 1:
        raise invalid(f"{op}: inputs must have the same shape, got {[list(a.shape) for a in arrays]}")
    ax = _norm_axis(axis, arrays[0].ndim + 1, op)
    return np.stack(arrays, axis=ax)


@kernel("OH_NN_OPS_UNSTACK")
def unstack(x, *, axis, ctx):
    op = "UNSTACK"
    x = np.asarray(x)
    if x.ndim == 0:
        raise invalid(f"{op}: cannot unstack a scalar")
    ax = _norm_axis(axis, x.ndim, op)
    n_outputs = _output_count(ctx)
    if n_outputs is not None and n_outputs != x.shape[ax]:
        raise invalid(f"{op}: axis {axis} of input dims {list(x.shape)} gives {x.shape[ax]} tensors but the "
                      f"operation has {n_outputs} outputs")
    return tuple(np.ascontiguousarray(np.take(x, i, axis=ax)) for i in range(x.shape[ax]))


@kernel("OH_NN_OPS_SQUEEZE")
def squeeze(x, *, axis):
    """No axis: drop every dim of length 1. Listed axes: drop those of length 1; a listed axis whose length is not 1
    is kept (the header's own example: [2, 1, 1, 2, 2] with axis [0, 1] gives [2, 1, 2, 2])."""
    op = "SQUEEZE"
    x = np.asarray(x)
    if not axis:
        drop = {i for i, d in enumerate(x.shape) if d == 1}
    else:
        drop = {i for i in (_norm_axis(a, x.ndim, op) for a in axis) if x.shape[i] == 1}
    return x.reshape([d for i, d in enumerate(x.shape) if i not in drop]).copy()


def _insert_axes(x: np.ndarray, axes: Sequence[int], op: str) -> np.ndarray:
    out_rank = x.ndim + len(axes)
    norm = [_norm_axis(a, out_rank, op) for a in axes]
    if len(set(norm)) != len(norm):
        raise invalid(f"{op}: axis {list(axes)} repeats a position")
    return np.expand_dims(x, tuple(norm)).copy() if norm else x.copy()


@kernel("OH_NN_OPS_UNSQUEEZE")
def unsqueeze(x, *, axis):
    """axis (an int or a list, positions in the output as in ONNX Unsqueeze, each in [-(n+1), n]);
    an omitted axis inserts nothing (output = input)."""
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    return _insert_axes(np.asarray(x), axes, "UNSQUEEZE")


@kernel("OH_NN_OPS_EXPAND_DIMS")
def expand_dims(x, axis):
    op = "EXPAND_DIMS"
    return _insert_axes(np.asarray(x), [_one_int(axis, op, "axis")], op)


@kernel("OH_NN_OPS_FLATTEN")
def flatten(x, *, axis):
    op = "FLATTEN"
    x = np.asarray(x)
    r = x.ndim
    if not -r <= axis <= r:
        raise invalid(f"{op}: axis {axis} is out of range [{-r}, {r}] for a rank-{r} input")
    ax = axis + r if axis < 0 else axis
    return x.reshape(math.prod(x.shape[:ax]), math.prod(x.shape[ax:])).copy()


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


# ---------------------------------------------------------------------------------------------- tiling/broadcasting

@kernel("OH_NN_OPS_TILE")
def tile(x, multiples, *, dims):
    """multiples has m >= n entries (the input gets m - n leading dims of 1). The header documents ``dims`` as the
    same per-dimension copy counts: it must be the builder default [0] (not given), equal ``multiples``, or be the
    identity axis list [0..m-1] that MindSpore's TileFusion.dims (axes the multiples apply to) reduces to."""
    op = "TILE"
    x = np.asarray(x)
    reps = _int_values(multiples, op, "multiples")
    dims = [int(v) for v in dims]
    if dims not in ([0], reps, list(range(len(reps)))):
        raise invalid(f"{op}: dims {dims} conflicts with multiples {reps} (dims must repeat the multiples, "
                      f"or be omitted)")
    if len(reps) < x.ndim:
        raise invalid(f"{op}: multiples {reps} has fewer entries than the input rank {x.ndim}")
    if any(r < 0 for r in reps):
        raise invalid(f"{op}: multiples {reps} must be >= 0")
    return np.tile(x.reshape((1,) * (len(reps) - x.ndim) + x.shape), reps)


@kernel("OH_NN_OPS_BROADCAST_TO")
def broadcast_to(x, *, shape):
    """NumPy/TF broadcasting of the input to exactly ``shape``; a -1 in shape keeps the input's dim there."""
    op = "BROADCAST_TO"
    x = np.asarray(x)
    target = [int(v) for v in shape]
    if len(target) < x.ndim:
        raise invalid(f"{op}: shape {target} has fewer dims than the input {list(x.shape)}")
    offset = len(target) - x.ndim
    out = []
    for i, t in enumerate(target):
        src = x.shape[i - offset] if i >= offset else 1
        if t == -1:
            t = src
        elif t < 0:
            raise invalid(f"{op}: shape {target} has an invalid dimension {t}")
        if src != t and src != 1:
            raise invalid(f"{op}: input dims {list(x.shape)} cannot be broadcast to {target}")
        out.append(t)
    return np.broadcast_to(x, out).copy()


# ---------------------------------------------------------------------------------------------- gathers & scatters

def _check_index_range(idx: np.ndarray, limit, op: str, what: str) -> None:
    if idx.size and (idx.min() < 0 or np.any(idx >= limit)):
        bad = idx[(idx < 0) | (idx >= limit)].reshape(-1)[0]
        raise invalid(f"{op}: {what} value {int(bad)} is out of range [0, {limit if np.isscalar(limit) else list(np.ravel(limit))})")


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


# ---------------------------------------------------------------------------------------------------- generators

@kernel("OH_NN_OPS_FILL")
def fill(value, shape):
    op = "FILL"
    value = np.asarray(value)
    if value.size != 1:
        raise invalid(f"{op}: value must be a scalar, got dims {list(value.shape)}")
    dims = _check_dims(_int_values(shape, op, "shape"), op, "shape")
    return np.full(dims, value.reshape(()), dtype=value.dtype)


@kernel("OH_NN_OPS_SHAPE")
def shape(x, *, ctx):
    return np.array(np.shape(x), dtype=_shape_dtype(ctx, "SHAPE"))


@kernel("OH_NN_OPS_RANK")
def rank(x, *, ctx):
    out = np.array(np.ndim(x), dtype=_shape_dtype(ctx, "RANK"))
    if ctx is not None and ctx.output_shapes and ctx.output_shapes[0] is not None:
        dims = tuple(ctx.output_shapes[0])
        if dims and all(d == 1 for d in dims):
            out = out.reshape(dims)  # declared as [1] instead of a 0-D scalar
    return out


@kernel("OH_NN_OPS_RANGE")
def range_(x, *, start, limit, delta, ctx):
    """[start, limit) by delta in the declared output dtype (int32 when undeclared). The input tensor has no
    documented role; its values are not read."""
    op = "RANGE"
    if delta == 0:
        raise invalid(f"{op}: delta must not be 0")
    dtype = _declared(ctx) or np.dtype(np.int32)
    if dtype.kind not in "iuf":
        raise unsupported(f"{op}: output data type {_dtype_name(dtype)} is not numeric")
    count = max(-(-(limit - start) // delta), 0)
    out = start + np.arange(count, dtype=np.int64) * delta
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if count and (min(out[0], out[-1]) < info.min or max(out[0], out[-1]) > info.max):
            raise invalid(f"{op}: values from {start} to {limit} do not fit {_dtype_name(dtype)}")
    return out.astype(dtype)


@kernel("OH_NN_OPS_CONSTANT_OF_SHAPE")
def constant_of_shape(shape_in, *, data_type, value, ctx):
    """dataType: OH_NN_DataType code (a MindIR TypeId is accepted too); 0 = the declared output dtype.
    value: one fill value (none: 0)."""
    op = "CONSTANT_OF_SHAPE"
    dims = _check_dims(_int_values(shape_in, op, "input shape"), op, "input shape")
    if np.ndim(shape_in) > 1:
        raise invalid(f"{op}: input must be a 1-D shape, got dims {list(np.shape(shape_in))}")
    wanted = _type_code(int(data_type), op, "dataType", mindir=True)
    declared = _declared(ctx)
    dtype = _agree(op, "dataType", wanted, declared)
    values = list(value)
    if len(values) > 1:
        raise invalid(f"{op}: value must hold one element, got {len(values)}")
    fill_value = values[0] if values else 0.0
    if _output_quantized(ctx):
        dtype = np.dtype(np.float32)
    return np.full(dims, fill_value, dtype=np.float64).astype(dtype)


def _agree(op: str, what: str, wanted: np.dtype | None, declared: np.dtype | None) -> np.dtype:
    """Reconcile a requested output type with the declared one (float16 under EnableFloat16 replaces float32)."""
    if wanted is None and declared is None:
        return np.dtype(np.float32)
    if wanted is None or declared is None:
        return wanted if declared is None else declared
    if wanted == declared or (declared == np.float16 and wanted.kind == "f"):
        return declared
    raise invalid(f"{op}: {what} {_dtype_name(wanted)} disagrees with the declared output type {_dtype_name(declared)}")


# ------------------------------------------------------------------------------------------------------ conversion

@kernel("OH_NN_OPS_CAST")
def cast(x, target, *, ctx):
    """C conversion to the OH_NN_DataType held by input #1 (float -> int truncates toward zero, anything -> bool is
    "!= 0"); OH_NN_UNKNOWN means the declared output type. A quantized output receives the real values (the executor
    quantizes them)."""
    op = "CAST"
    x = np.asarray(x)
    wanted = _type_code(_one_int(target, op, "type (input #1)"), op, "target data type")
    if wanted is None and _declared(ctx) is None:
        raise invalid(f"{op}: target data type is OH_NN_UNKNOWN and no output type is declared")
    dtype = _agree(op, "target data type", wanted, _declared(ctx))
    if _output_quantized(ctx):
        return x.astype(np.float32)
    if x.dtype.kind == "f" and dtype.kind in "iu":
        with np.errstate(invalid="ignore"):
            return np.trunc(x).astype(dtype)
    return x.astype(dtype)


@kernel("OH_NN_OPS_QUANT_DTYPE_CAST")
def quant_dtype_cast(x, *, src_t, dst_t, axis, ctx):
    """Quantized <-> float with the input's / output's quant params (per tensor, or per channel along ``axis`` when a
    tensor has several): int -> float r = (q - z) * s; float -> int q = clamp(round(r / s + z)); int -> int
    requantizes; float -> float converts. srcT/dstT: OH_NN_DataType codes (MindIR TypeIds accepted too)."""
    op = "QUANT_DTYPE_CAST"
    x = np.asarray(x)
    src = _type_code(int(src_t), op, "srcT", mindir=True)
    dst = _type_code(int(dst_t), op, "dstT", mindir=True)
    if src is None or dst is None:
        raise invalid(f"{op}: srcT and dstT must name data types, got {src_t} and {dst_t}")
    in_dtype = np.dtype(ctx.input_dtypes[0]) if ctx is not None and ctx.input_dtypes else x.dtype
    if src != in_dtype and not (in_dtype == np.float16 and src.kind == "f"):
        raise invalid(f"{op}: srcT {_dtype_name(src)} disagrees with the input type {_dtype_name(in_dtype)}")
    dst = _agree(op, "dstT", dst, _declared(ctx))
    for dtype in (src, dst):
        if dtype.kind not in "iuf":
            raise unsupported(f"{op}: {_dtype_name(dtype)} is neither a quantized integer nor a float type")
    in_q = ctx.input_quant[0] if ctx is not None and ctx.input_quant else None
    out_q = ctx.output_quant[0] if ctx is not None and ctx.output_quant else None
    real = x
    if src.kind in "iu":
        if in_q is None:
            raise invalid(f"{op}: the {_dtype_name(src)} input has no quant params")
        scale, zero = _quant_arrays(in_q, x, axis, op, "input")
        real = (x.astype(np.float64) - zero) * scale
    if dst.kind == "f":
        return np.asarray(real).astype(dst)
    if out_q is None:
        raise invalid(f"{op}: the {_dtype_name(dst)} output has no quant params")
    scale, zero = _quant_arrays(out_q, x, axis, op, "output")
    bits = min(out_q.num_bits) if getattr(out_q, "num_bits", None) else 8
    qmin, qmax = quant_range(dst, bits)
    q = np.rint(np.asarray(real, dtype=np.float64) / scale + zero)
    return np.clip(q, qmin, qmax).astype(dst)


def _quant_arrays(qp, x: np.ndarray, axis: int, op: str, which: str) -> tuple[np.ndarray, np.ndarray]:
    scale = np.asarray(qp.scales, dtype=np.float64)
    zero = np.asarray(qp.zero_points, dtype=np.float64)
    if scale.size == 1:
        return scale.reshape(()), zero.reshape(())
    ax = _norm_axis(int(axis), x.ndim, op)
    if scale.size != x.shape[ax]:
        raise invalid(f"{op}: the {which} has {scale.size} per-channel quant params but axis {axis} of dims "
                      f"{list(x.shape)} has {x.shape[ax]} channels")
    shape = [1] * x.ndim
    shape[ax] = scale.size
    return scale.reshape(shape), zero.reshape(shape)


# ---------------------------------------------------------------------------------------------------------- assert

@kernel("OH_NN_OPS_ASSERT")
def assert_(condition, data, *, summarize, ctx):
    """Every element of ``condition`` must be true (non-zero); otherwise the run fails with OH_NN_FAILED and the
    message shows the first ``summarize`` entries of ``data`` (summarize <= 0: all of them). Output: the condition."""
    op = "ASSERT"
    cond = np.asarray(condition)
    if not np.all(cond):
        data = np.asarray(data)
        flat = data.reshape(-1)
        shown = flat if summarize <= 0 else flat[:summarize]
        more = "" if shown.size == flat.size else f" ... ({flat.size - shown.size} more)"
        raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED,
                        f"{op}: condition is false; data (dims {list(data.shape)}, {_dtype_name(data.dtype)}): "
                        f"{shown.tolist()}{more}")
    dtype = _declared(ctx) or cond.dtype
    return cond.astype(dtype)
