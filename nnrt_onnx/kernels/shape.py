"""Shape kernels: reshaping, transposition, concatenation and splitting, stacking, squeezing, tiling, broadcasting,
padding, the generators (FILL, SHAPE, RANK, RANGE, CONSTANT_OF_SHAPE) and ASSERT.

Every kernel here moves data without arithmetic on it, so it keeps the input dtype (float16 included) unless the
op's output type is documented otherwise (Shape, Rank, Range, ConstantOfShape). Inputs that hold shapes or axes must
be integer tensors; parameters arrive as python ints/lists.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..enums import OH_NN_ReturnCode
from ..errors import NNRtError, invalid, unsupported
from . import kernel
from ._common import (
    _FLOATS,
    _agree,
    _check_dims,
    _declared,
    _int_values,
    _norm_axis,
    _np_dtype_name,
    _one_int,
    _output_quantized,
    _type_code,
)


def _output_count(ctx) -> int | None:
    return None if ctx is None else len(ctx.output_dtypes)


def _shape_dtype(ctx, op: str) -> np.dtype:
    """Declared output dtype of a shape-producing op: int32 or int64 (int32 when nothing is declared)."""
    dtype = _declared(ctx)
    if dtype is None:
        return np.dtype(np.int32)
    if dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise unsupported(f"{op}: output must be declared INT32 or INT64, got {_np_dtype_name(dtype)}")
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
        raise invalid(f"{op}: inputs must share one data type, got {sorted(_np_dtype_name(d) for d in dtypes)}")
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
        raise invalid(f"{op}: inputs must share one data type, got {[_np_dtype_name(a.dtype) for a in arrays]}")
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


# ----------------------------------------------------------------------------------------------------------- padding

def _fill_value(op: str, value, dtype: np.dtype):
    if dtype in _FLOATS:
        return dtype.type(value)
    v = float(value)
    if dtype == np.bool_:
        if v not in (0.0, 1.0):
            raise invalid(f"{op}: constant value {value} is not representable as bool")
        return bool(v)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        if not v.is_integer() or not info.min <= v <= info.max:
            raise invalid(f"{op}: constant value {value} is not representable as {dtype}")
        return dtype.type(int(v))
    raise unsupported(f"{op}: data type {dtype} is not supported")


@kernel("OH_NN_OPS_PAD")
def pad(x, paddings, *, constant_value, padding_mode):
    op = "PAD"
    paddings = np.asarray(paddings)
    if not np.issubdtype(paddings.dtype, np.integer):
        raise invalid(f"{op}: paddings must be an integer tensor, got {paddings.dtype}")
    if paddings.size != 2 * x.ndim:
        raise invalid(f"{op}: paddings must have shape [{x.ndim}, 2] for a rank-{x.ndim} input, "
                      f"got {list(paddings.shape)}")
    pads = paddings.reshape(x.ndim, 2).astype(np.int64)
    if (pads < 0).any():
        raise invalid(f"{op}: paddings must be >= 0, got {pads.tolist()}")
    pads_t = [tuple(int(v) for v in row) for row in pads]
    mode = int(padding_mode)
    if mode == 0:
        return np.pad(x, pads_t, mode="constant", constant_values=_fill_value(op, constant_value, x.dtype))
    if mode in (1, 2):
        limit_extra = 0 if mode == 1 else 1  # REFLECT: pad <= dim-1 (edge not repeated); SYMMETRIC: pad <= dim
        for axis, (p0, p1) in enumerate(pads_t):
            if max(p0, p1) > x.shape[axis] - 1 + limit_extra:
                raise invalid(f"{op}: {'REFLECT' if mode == 1 else 'SYMMETRIC'} paddings {[p0, p1]} are too large "
                              f"for dimension {axis} of size {x.shape[axis]}")
        return np.pad(x, pads_t, mode="reflect" if mode == 1 else "symmetric")
    if mode == 3:
        raise unsupported(f"{op}: padding mode 3 (RESERVED) has no defined meaning")
    raise invalid(f"{op}: padding mode {mode} is not 0..3")


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
        raise unsupported(f"{op}: output data type {_np_dtype_name(dtype)} is not numeric")
    count = max(-(-(limit - start) // delta), 0)
    out = start + np.arange(count, dtype=np.int64) * delta
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if count and (min(out[0], out[-1]) < info.min or max(out[0], out[-1]) > info.max):
            raise invalid(f"{op}: values from {start} to {limit} do not fit {_np_dtype_name(dtype)}")
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
                        f"{op}: condition is false; data (dims {list(data.shape)}, {_np_dtype_name(data.dtype)}): "
                        f"{shown.tolist()}{more}")
    dtype = _declared(ctx) or cond.dtype
    return cond.astype(dtype)
