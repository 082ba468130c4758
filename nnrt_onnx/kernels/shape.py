"""Shape kernels: reshaping, transposition, concatenation and splitting, stacking, squeezing, tiling, broadcasting,
padding, the generators (FILL, SHAPE, RANK, RANGE, CONSTANT_OF_SHAPE) and ASSERT.

Every kernel here moves data without arithmetic on it, so it keeps the input dtype (float16 included) unless the
op's output type is documented otherwise (Shape, Rank, Range, ConstantOfShape). Inputs that hold shapes or axes must
be integer tensors; parameters arrive as python ints/lists.

Each kernel's shape rule is next to it; where a kernel resolves an output size itself (reshape's -1, split sizes,
squeeze, tiling, broadcasting, padding, range length) kernel and rule call the same helper.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..enums import OH_NN_ReturnCode
from ..errors import NNRtError, invalid, unsupported
from ..geometry import UNKNOWN, permute
from . import kernel, shape_rule
from ._common import (
    _FLOATS,
    _agree,
    _check_dims,
    _declared,
    _first_input_shape,
    _int_values,
    _known,
    _length,
    _merge_dims,
    _norm_axis,
    _np_dtype_name,
    _one_int,
    _output_quantized,
    _product,
    _remembered,
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
    return x.reshape(_reshape_dims(op, x.shape, _reshape_target(op, shape))).copy()


def _reshape_target(op: str, shape) -> list[int]:
    target = _int_values(shape, op, "shape")
    if np.ndim(shape) > 1:
        raise invalid(f"{op}: shape must be a 1-D tensor, got dims {list(np.shape(shape))}")
    return target


def _reshape_dims(op: str, in_shape, target: list[int]) -> tuple[int, ...]:
    """The output dims of a reshape to ``target``: 0 copies the input's dim, one -1 is inferred from the element
    count (UNKNOWN while an input dim is; None input shape: unknown rank)."""
    out, infer = [], None
    for i, d in enumerate(target):
        if d == -1:
            if infer is not None:
                raise invalid(f"{op}: shape {target} has more than one -1")
            infer = i
            out.append(1)
        elif d == 0:
            if in_shape is None:
                out.append(UNKNOWN)
                continue
            if i >= len(in_shape):
                raise invalid(f"{op}: shape {target} copies dim {i} (0) but the input has rank {len(in_shape)}")
            out.append(in_shape[i])
        elif d < -1:
            raise invalid(f"{op}: shape {target} has an invalid dimension {d}")
        else:
            out.append(d)
    known = _product(out)
    size = UNKNOWN if in_shape is None else _product(in_shape)
    shown = "?" if in_shape is None else list(in_shape)
    if infer is not None:
        if known == 0 or _known(known, size) and size % known:
            raise invalid(f"{op}: cannot infer the -1 of shape {target} for an input of {size} elements "
                          f"(dims {shown})")
        out[infer] = size // known if _known(known, size) else _inferred_with_copies(in_shape, target, out, infer)
    elif _known(known, size) and known != size:
        raise invalid(f"{op}: shape {target} holds {known} elements, the input {shown} holds {size}")
    return tuple(out)


def _inferred_with_copies(in_shape, target, out, infer: int) -> int:
    """The -1 of a target whose unknown dims are all copies (0) of the input's unknown dims: they cancel out of
    both element counts (e.g. [batch, 4, 4] -> [0, -1] is [batch, 16]); UNKNOWN otherwise."""
    if in_shape is None:
        return UNKNOWN
    copied = {i for i, d in enumerate(target) if d == 0 and not _known(in_shape[i])}
    size = _product([d for i, d in enumerate(in_shape) if i not in copied])
    known = _product([d for i, d in enumerate(out) if i not in copied and i != infer])
    return size // known if _known(size, known) and known and size % known == 0 else UNKNOWN


@shape_rule("OH_NN_OPS_RESHAPE")
def _reshape_shape(op, shapes, values, **_):
    """Exact with a known target shape; else its length gives the rank (one dim: the element count)."""
    if values[1] is not None:
        return (_reshape_dims(op, shapes[0], _reshape_target(op, values[1])),)
    rank = _length(shapes[1])
    if not _known(rank):
        return (None,)
    size = UNKNOWN if shapes[0] is None else _product(shapes[0])
    return ((size,) if rank == 1 else (UNKNOWN,) * rank,)


@kernel("OH_NN_OPS_TRANSPOSE")
def transpose(x, perm, out=None):
    """``out``: the plan's array for the result (memory planning), used where it fits: a new ~0.4 MB array per
    channel shuffle cost ShuffleNet more than the shuffle itself."""
    op = "TRANSPOSE"
    x = np.asarray(x)
    axes = _permutation(op, perm, x.ndim)
    view = np.transpose(x, axes)
    fits = out is not None and out.shape == view.shape and out.dtype == view.dtype and out.flags.c_contiguous
    if view.ndim >= 2 and view.shape[-1] <= _NARROW_LAST and view.size >= 4096 and not view.flags.c_contiguous:
        # a short last axis read across the input (NCHW -> NHWC of an image): numpy's copy would run inner loops
        # of that length; writing one output slice per index of it runs long inner loops instead (2.4x faster
        # for [1, 3, 224, 224] -> [1, 224, 224, 3]; into the plan's array too: 240 -> 65 us)
        out = out if fits else np.empty(view.shape, x.dtype)
        for i in range(view.shape[-1]):
            out[..., i] = view[..., i]
        return out
    if fits:
        np.copyto(out, view)
        return out
    return np.ascontiguousarray(view)


_NARROW_LAST = 8


def _permutation(op: str, perm, rank: int) -> list[int]:
    """The permutation input, checked against the rank and normalised."""
    return list(_checked_permutation(op, tuple(_int_values(perm, op, "permutation")), rank))


@_remembered
def _checked_permutation(op: str, axes: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """:func:`_permutation` of the values, remembered (the permutation of a model is a constant)."""
    axes = list(axes)
    if len(axes) != rank:
        raise invalid(f"{op}: permutation {axes} must have one entry per input dim (rank {rank})")
    norm = [_norm_axis(a, rank, op, "permutation entry") for a in axes]
    if sorted(norm) != list(range(rank)):
        raise invalid(f"{op}: {axes} is not a permutation of the {rank} input dims")
    return tuple(norm)


@shape_rule("OH_NN_OPS_TRANSPOSE")
def _transpose_shape(op, shapes, values, **_):
    x_shape = shapes[0]
    if values[1] is not None and x_shape is not None:
        return (permute(x_shape, _permutation(op, values[1], len(x_shape))),)
    rank = len(x_shape) if x_shape is not None else _length(shapes[1])
    return ((UNKNOWN,) * rank if _known(rank) else None,)


@kernel("OH_NN_OPS_CONCAT")
def concat(*inputs, axis):
    op = "CONCAT"
    arrays = [np.asarray(a) for a in inputs]
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) != 1:
        raise invalid(f"{op}: inputs must share one data type, got {sorted(_np_dtype_name(d) for d in dtypes)}")
    _, ax = _concat_dims(op, [a.shape for a in arrays], axis)
    return np.concatenate(arrays, axis=ax)


def _concat_dims(op: str, shapes, axis):
    """(output dims, normalised axis) of a concatenation after the checks of ranks and of the dims outside the
    axis (unknown dims pass; (None, None) while every rank is unknown)."""
    known = [tuple(s) for s in shapes if s is not None]
    if not known:
        return None, None
    rank = len(known[0])
    if rank == 0 or any(len(s) != rank for s in known):
        raise invalid(f"{op}: inputs must have the same rank >= 1, got dims {[list(s) for s in known]}")
    ax = _norm_axis(axis, rank, op)
    try:
        merged = _merge_dims([s[:ax] + s[ax + 1:] for s in known])
    except ValueError:
        raise invalid(f"{op}: input dims {[list(s) for s in known]} differ outside axis {axis}") from None
    along = [s[ax] for s in known]
    total = sum(along) if len(known) == len(shapes) and _known(*along) else UNKNOWN
    return merged[:ax] + (total,) + merged[ax:], ax


@shape_rule("OH_NN_OPS_CONCAT")
def _concat_shape(op, shapes, values, *, axis, **_):
    return (_concat_dims(op, shapes, axis)[0],)


@kernel("OH_NN_OPS_SPLIT")
def split(x, *, axis, output_num, size_splits, ctx):
    """sizeSplits (one -1 may be inferred) wins; otherwise an even split into outputNum (or the node's output count)."""
    op = "SPLIT"
    x = np.asarray(x)
    if x.ndim == 0:
        raise invalid(f"{op}: cannot split a scalar")
    ax = _norm_axis(axis, x.ndim, op)
    sizes = _split_sizes(op, x.shape, ax, axis, output_num, size_splits, _output_count(ctx))
    bounds = np.cumsum(sizes)[:-1]
    return tuple(np.ascontiguousarray(p) for p in np.split(x, bounds, axis=ax))


def _split_sizes(op: str, shape, ax: int | None, axis, output_num, size_splits, n_outputs) -> list[int]:
    """The size of each piece along the axis: sizeSplits (one -1 inferred), else an even split into outputNum
    (or the node's output count); UNKNOWN where the split dim (or ``shape``, None) is unknown."""
    dim = UNKNOWN if shape is None else shape[ax]
    if output_num < 0:
        raise invalid(f"{op}: outputNum {output_num} must be >= 0")
    if size_splits:
        sizes = [int(s) for s in size_splits]
        if output_num and output_num != len(sizes):
            raise invalid(f"{op}: outputNum {output_num} disagrees with sizeSplits {sizes}")
        unknown = [i for i, s in enumerate(sizes) if s == -1]
        if len(unknown) > 1 or any(s < -1 for s in sizes):
            raise invalid(f"{op}: sizeSplits {sizes} may hold at most one -1 and no other negative value")
        if unknown and _known(dim):
            rest = dim - sum(s for s in sizes if s != -1)
            if rest < 0:
                raise invalid(f"{op}: sizeSplits {sizes} exceed dim {dim} of axis {axis}")
            sizes[unknown[0]] = rest
        if _known(dim) and sum(sizes) != dim:
            raise invalid(f"{op}: sizeSplits {size_splits} must add up to dim {dim} of axis {axis} "
                          f"(input dims {list(shape)})")
    else:
        pieces = output_num or n_outputs
        if not pieces:
            raise invalid(f"{op}: neither outputNum nor sizeSplits is given")
        if _known(dim) and dim % pieces:
            raise invalid(f"{op}: dim {dim} of axis {axis} (input dims {list(shape)}) is not divisible "
                          f"into {pieces} equal pieces")
        sizes = [dim // pieces if _known(dim) else UNKNOWN] * pieces
    if n_outputs is not None and n_outputs != len(sizes):
        raise invalid(f"{op}: the split makes {len(sizes)} pieces but the operation has {n_outputs} outputs")
    return sizes


@shape_rule("OH_NN_OPS_SPLIT")
def _split_shape(op, shapes, values, *, axis, output_num, size_splits, output_count=None, **_):
    """One shape per piece: the input's with the axis cut to that piece's size."""
    x_shape = shapes[0]
    if x_shape is not None and len(x_shape) == 0:
        raise invalid(f"{op}: cannot split a scalar")
    ax = None if x_shape is None else _norm_axis(axis, len(x_shape), op)
    sizes = _split_sizes(op, x_shape, ax, axis, output_num, size_splits, output_count)
    if x_shape is None:
        return tuple(None for _ in sizes)
    return tuple(x_shape[:ax] + (size,) + x_shape[ax + 1:] for size in sizes)


@kernel("OH_NN_OPS_STACK")
def stack(*inputs, axis):
    op = "STACK"
    arrays = [np.asarray(a) for a in inputs]
    if len({a.dtype for a in arrays}) != 1:
        raise invalid(f"{op}: inputs must share one data type, got {[_np_dtype_name(a.dtype) for a in arrays]}")
    _, ax = _stack_dims_known(op, tuple(a.shape for a in arrays), axis)
    return np.stack(arrays, axis=ax)


@_remembered
def _stack_dims_known(op: str, shapes: tuple[tuple[int, ...], ...], axis):
    """:func:`_stack_dims` of the kernel's inputs, remembered."""
    return _stack_dims(op, shapes, axis)


def _stack_dims(op: str, shapes, axis):
    """(output dims, normalised axis) of stacking tensors of one shape (unknown dims pass; (None, None) while
    every rank is unknown)."""
    known = [tuple(s) for s in shapes if s is not None]
    if not known:
        return None, None
    try:
        if len({len(s) for s in known}) != 1:
            raise ValueError("ranks differ")
        merged = _merge_dims(known)
    except ValueError:
        raise invalid(f"{op}: inputs must have the same shape, got {[list(s) for s in known]}") from None
    ax = _norm_axis(axis, len(merged) + 1, op)
    return merged[:ax] + (len(shapes),) + merged[ax:], ax


@shape_rule("OH_NN_OPS_STACK")
def _stack_shape(op, shapes, values, *, axis, **_):
    return (_stack_dims(op, shapes, axis)[0],)


@kernel("OH_NN_OPS_UNSTACK")
def unstack(x, *, axis, ctx):
    op = "UNSTACK"
    x = np.asarray(x)
    ax, count = _unstack_axis(op, x.shape, axis, _output_count(ctx))
    along = np.moveaxis(x, ax, 0)  # (a view; [i, ...] is a view too, 0-d for a 1-d input, and one copy each)
    return tuple(along[i, ...].copy() for i in range(count))


def _unstack_axis(op: str, shape, axis, n_outputs) -> tuple[int, int]:
    """The normalised axis and the number of tensors along it (the node's output count while the dim is
    unknown; neither known: invalid)."""
    if len(shape) == 0:
        raise invalid(f"{op}: cannot unstack a scalar")
    ax = _norm_axis(axis, len(shape), op)
    count = shape[ax]
    if n_outputs is not None and _known(count) and n_outputs != count:
        raise invalid(f"{op}: axis {axis} of input dims {list(shape)} gives {count} tensors but the "
                      f"operation has {n_outputs} outputs")
    if not _known(count):
        if n_outputs is None:
            raise invalid(f"{op}: axis {axis} of input dims {list(shape)} is unknown, and so is the output count")
        count = n_outputs
    return ax, count


@shape_rule("OH_NN_OPS_UNSTACK")
def _unstack_shape(op, shapes, values, *, axis, output_count=None, **_):
    """One tensor per entry along the axis, each the input's shape without it."""
    if shapes[0] is None:
        if output_count is None:
            raise invalid(f"{op}: the input rank is unknown, and so is the output count")
        return (None,) * output_count
    ax, count = _unstack_axis(op, shapes[0], axis, output_count)
    return (shapes[0][:ax] + shapes[0][ax + 1:],) * count


@kernel("OH_NN_OPS_SQUEEZE")
def squeeze(x, *, axis):
    """No axis: drop every dim of length 1. Listed axes: drop those of length 1; a listed axis whose length is not 1
    is kept (the header's own example: [2, 1, 1, 2, 2] with axis [0, 1] gives [2, 1, 2, 2])."""
    op = "SQUEEZE"
    x = np.asarray(x)
    return x.reshape(_squeezed_dims(op, x.shape, axis)).copy()


def _squeezed_dims(op: str, shape, axis):
    """``shape`` without its dims of length 1 (all, or those listed in ``axis``); None when an unknown dim might
    be such a 1."""
    if shape is None:
        return None
    candidates = range(len(shape)) if not axis else {_norm_axis(a, len(shape), op) for a in axis}
    if any(not _known(shape[i]) for i in candidates):
        return None
    return tuple(d for i, d in enumerate(shape) if not (i in candidates and d == 1))


@shape_rule("OH_NN_OPS_SQUEEZE")
def _squeeze_shape(op, shapes, values, *, axis, **_):
    return (_squeezed_dims(op, shapes[0], axis),)


def _inserted_positions(op: str, rank: int, axes: Sequence[int]) -> tuple[int, ...]:
    """The output positions of the new axes (each in [-(rank+n), rank+n)), which must differ."""
    out_rank = rank + len(axes)
    norm = [_norm_axis(a, out_rank, op) for a in axes]
    if len(set(norm)) != len(norm):
        raise invalid(f"{op}: axis {list(axes)} repeats a position")
    return tuple(norm)


def _insert_axes(x: np.ndarray, axes: Sequence[int], op: str) -> np.ndarray:
    norm = _inserted_positions(op, x.ndim, axes)
    return np.expand_dims(x, norm).copy() if norm else x.copy()


def _with_inserted_axes(op: str, shape, axes: Sequence[int] | None):
    """``shape`` with dims of length 1 at the output positions ``axes`` (None: unknown positions, -1 dims)."""
    if shape is None:
        return None
    if axes is None:
        return (UNKNOWN,) * (len(shape) + 1)
    positions = _inserted_positions(op, len(shape), axes)
    rest = iter(shape)
    return tuple(1 if i in positions else next(rest) for i in range(len(shape) + len(positions)))


def _unsqueeze_axes(axis) -> list[int]:
    return [axis] if isinstance(axis, (int, np.integer)) else list(axis)


@shape_rule("OH_NN_OPS_UNSQUEEZE")
def _unsqueeze_shape(op, shapes, values, *, axis, **_):
    return (_with_inserted_axes(op, shapes[0], _unsqueeze_axes(axis)),)


@shape_rule("OH_NN_OPS_EXPAND_DIMS")
def _expand_dims_shape(op, shapes, values, **_):
    axes = None if values[1] is None else [_one_int(values[1], op, "axis")]
    return (_with_inserted_axes(op, shapes[0], axes),)


@kernel("OH_NN_OPS_UNSQUEEZE")
def unsqueeze(x, *, axis):
    """axis (an int or a list, positions in the output as in ONNX Unsqueeze, each in [-(n+1), n]);
    an omitted axis inserts nothing (output = input)."""
    return _insert_axes(np.asarray(x), _unsqueeze_axes(axis), "UNSQUEEZE")


@kernel("OH_NN_OPS_EXPAND_DIMS")
def expand_dims(x, axis):
    op = "EXPAND_DIMS"
    return _insert_axes(np.asarray(x), [_one_int(axis, op, "axis")], op)


@kernel("OH_NN_OPS_FLATTEN")
def flatten(x, *, axis):
    x = np.asarray(x)
    return x.reshape(_flattened_dims("FLATTEN", x.shape, axis)).copy()


def _flattened_dims(op: str, shape, axis) -> tuple[int, int]:
    """[product of the dims before axis, product of the rest] (axis in [-rank, rank])."""
    r = len(shape)
    if not -r <= axis <= r:
        raise invalid(f"{op}: axis {axis} is out of range [{-r}, {r}] for a rank-{r} input")
    ax = axis + r if axis < 0 else axis
    return _product(shape[:ax]), _product(shape[ax:])


@shape_rule("OH_NN_OPS_FLATTEN")
def _flatten_shape(op, shapes, values, *, axis, **_):
    return ((UNKNOWN, UNKNOWN) if shapes[0] is None else _flattened_dims(op, shapes[0], axis),)


# ---------------------------------------------------------------------------------------------- tiling/broadcasting

@kernel("OH_NN_OPS_TILE")
def tile(x, multiples, *, dims):
    """multiples has m >= n entries (the input gets m - n leading dims of 1). The header documents ``dims`` as the
    same per-dimension copy counts: it must be the builder default [0] (not given), equal ``multiples``, or be the
    identity axis list [0..m-1] that MindSpore's TileFusion.dims (axes the multiples apply to) reduces to."""
    op = "TILE"
    x = np.asarray(x)
    reps = _tile_multiples(op, multiples, dims, x.ndim)
    return np.tile(x.reshape((1,) * (len(reps) - x.ndim) + x.shape), reps)


def _tile_multiples(op: str, multiples, dims, rank: int | None) -> list[int]:
    """The checked multiples (one per output dim, at least the input rank of them, >= 0)."""
    reps = _int_values(multiples, op, "multiples")
    dims = [int(v) for v in dims]
    if dims not in ([0], reps, list(range(len(reps)))):
        raise invalid(f"{op}: dims {dims} conflicts with multiples {reps} (dims must repeat the multiples, "
                      f"or be omitted)")
    if rank is not None and len(reps) < rank:
        raise invalid(f"{op}: multiples {reps} has fewer entries than the input rank {rank}")
    if any(r < 0 for r in reps):
        raise invalid(f"{op}: multiples {reps} must be >= 0")
    return reps


@shape_rule("OH_NN_OPS_TILE")
def _tile_shape(op, shapes, values, *, dims, **_):
    """Each dim (the input's, with leading 1s up to the multiples' length) times its multiple."""
    x_shape = shapes[0]
    if values[1] is None:
        rank = _length(shapes[1])
        return ((UNKNOWN,) * rank if _known(rank) else None,)
    reps = _tile_multiples(op, values[1], dims, None if x_shape is None else len(x_shape))
    if x_shape is None:
        return (tuple(0 if r == 0 else UNKNOWN for r in reps),)
    padded = (1,) * (len(reps) - len(x_shape)) + tuple(x_shape)
    return (tuple(_product((d, r)) for d, r in zip(padded, reps)),)


@kernel("OH_NN_OPS_BROADCAST_TO")
def broadcast_to(x, *, shape):
    """NumPy/TF broadcasting of the input to exactly ``shape``; a -1 in shape keeps the input's dim there."""
    x = np.asarray(x)
    return np.broadcast_to(x, _broadcast_to_dims("BROADCAST_TO", x.shape, shape)).copy()


def _broadcast_to_dims(op: str, in_shape, shape) -> tuple[int, ...]:
    """The dims ``shape`` names for an input of ``in_shape``: numpy/TF broadcasting, a -1 keeping the input's dim
    (unknown input dims pass the checks)."""
    target = [int(v) for v in shape]
    if in_shape is None:
        for t in target:
            if t < -1:
                raise invalid(f"{op}: shape {target} has an invalid dimension {t}")
        return tuple(target)
    if len(target) < len(in_shape):
        raise invalid(f"{op}: shape {target} has fewer dims than the input {list(in_shape)}")
    offset = len(target) - len(in_shape)
    out = []
    for i, t in enumerate(target):
        src = in_shape[i - offset] if i >= offset else 1
        if t == -1:
            t = src
        elif t < 0:
            raise invalid(f"{op}: shape {target} has an invalid dimension {t}")
        if _known(src, t) and src != t and src != 1:
            raise invalid(f"{op}: input dims {list(in_shape)} cannot be broadcast to {target}")
        out.append(t)
    return tuple(out)


@shape_rule("OH_NN_OPS_BROADCAST_TO")
def _broadcast_to_shape(op, shapes, values, *, shape, **_):
    return (_broadcast_to_dims(op, shapes[0], shape),)


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
    pads_t = _pad_rows(op, paddings, x.ndim)
    mode = _checked_padding_mode(op, padding_mode, pads_t, x.shape)
    if mode == 0:
        return np.pad(x, pads_t, mode="constant", constant_values=_fill_value(op, constant_value, x.dtype))
    return np.pad(x, pads_t, mode="reflect" if mode == 1 else "symmetric")


def _pad_rows(op: str, paddings, rank: int) -> list[tuple[int, int]]:
    """The [rank, 2] paddings input as (before, after) per dim, each >= 0."""
    paddings = np.asarray(paddings)
    if not np.issubdtype(paddings.dtype, np.integer):
        raise invalid(f"{op}: paddings must be an integer tensor, got {paddings.dtype}")
    if paddings.size != 2 * rank:
        raise invalid(f"{op}: paddings must have shape [{rank}, 2] for a rank-{rank} input, "
                      f"got {list(paddings.shape)}")
    pads = paddings.reshape(rank, 2).astype(np.int64)
    if (pads < 0).any():
        raise invalid(f"{op}: paddings must be >= 0, got {pads.tolist()}")
    return [tuple(int(v) for v in row) for row in pads]


def _checked_padding_mode(op: str, padding_mode, pads_t, shape) -> int:
    """0 (CONSTANT), or 1 (REFLECT) / 2 (SYMMETRIC) with paddings the dims allow (unknown dims and pads, None,
    pass)."""
    mode = int(padding_mode)
    if mode == 0:
        return mode
    if mode in (1, 2):
        limit_extra = 0 if mode == 1 else 1  # REFLECT: pad <= dim-1 (edge not repeated); SYMMETRIC: pad <= dim
        for axis, (p0, p1) in enumerate(pads_t or ()):
            if _known(shape[axis]) and max(p0, p1) > shape[axis] - 1 + limit_extra:
                raise invalid(f"{op}: {'REFLECT' if mode == 1 else 'SYMMETRIC'} paddings {[p0, p1]} are too large "
                              f"for dimension {axis} of size {shape[axis]}")
        return mode
    if mode == 3:
        raise unsupported(f"{op}: padding mode 3 (RESERVED) has no defined meaning")
    raise invalid(f"{op}: padding mode {mode} is not 0..3")


@shape_rule("OH_NN_OPS_PAD")
def _pad_shape(op, shapes, values, *, padding_mode, **_):
    """Each dim grown by its two paddings (UNKNOWN while the paddings are)."""
    x_shape = shapes[0]
    if x_shape is None:
        _checked_padding_mode(op, padding_mode, None, None)
        return (None,)
    pads_t = None if values[1] is None else _pad_rows(op, values[1], len(x_shape))
    _checked_padding_mode(op, padding_mode, pads_t, x_shape)
    if pads_t is None:
        return ((UNKNOWN,) * len(x_shape),)
    return (tuple(d + p0 + p1 if _known(d) else UNKNOWN for d, (p0, p1) in zip(x_shape, pads_t)),)


# ---------------------------------------------------------------------------------------------------- generators

@kernel("OH_NN_OPS_FILL")
def fill(value, shape):
    op = "FILL"
    value = np.asarray(value)
    _check_fill_value(op, value.shape)
    dims = _check_dims(_int_values(shape, op, "shape"), op, "shape")
    return np.full(dims, value.reshape(()), dtype=value.dtype)


def _check_fill_value(op: str, value_shape) -> None:
    if value_shape is not None and _known(_product(value_shape)) and _product(value_shape) != 1:
        raise invalid(f"{op}: value must be a scalar, got dims {list(value_shape)}")


def _generated_dims(op: str, shape_shape, shape_value, what: str):
    """The dims a shape input names (its value), or -1 per entry while the value is unknown."""
    if shape_value is not None:
        return _check_dims(_int_values(shape_value, op, what), op, what)
    count = _length(shape_shape)
    return (UNKNOWN,) * count if _known(count) else None


@shape_rule("OH_NN_OPS_FILL")
def _fill_shape(op, shapes, values, **_):
    _check_fill_value(op, shapes[0])
    return (_generated_dims(op, shapes[1], values[1], "shape"),)


@shape_rule("OH_NN_OPS_SHAPE")
def _shape_shape(op, shapes, values, **_):
    """One entry per input dim."""
    return ((UNKNOWN if shapes[0] is None else len(shapes[0]),),)


@shape_rule("OH_NN_OPS_RANK")
def _rank_shape(op, shapes, values, **_):
    """A scalar (the kernel reshapes it to a declared [1]: the declared dims win there)."""
    return ((),)


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
    _check_delta(op, delta)
    dtype = _declared(ctx) or np.dtype(np.int32)
    if dtype.kind not in "iuf":
        raise unsupported(f"{op}: output data type {_np_dtype_name(dtype)} is not numeric")
    count = _range_count(start, limit, delta)
    out = start + np.arange(count, dtype=np.int64) * delta
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if count and (min(out[0], out[-1]) < info.min or max(out[0], out[-1]) > info.max):
            raise invalid(f"{op}: values from {start} to {limit} do not fit {_np_dtype_name(dtype)}")
    return out.astype(dtype)


def _check_delta(op: str, delta) -> None:
    if delta == 0:
        raise invalid(f"{op}: delta must not be 0")


def _range_count(start, limit, delta):
    """How many values [start, limit) holds by delta: ceil((limit - start) / delta), at least 0."""
    return max(-(-(limit - start) // delta), 0)


@shape_rule("OH_NN_OPS_RANGE")
def _range_shape(op, shapes, values, *, start, limit, delta, **_):
    """[count]: start, limit and delta are parameters, always known."""
    _check_delta(op, delta)
    return ((int(_range_count(start, limit, delta)),),)


@kernel("OH_NN_OPS_CONSTANT_OF_SHAPE")
def constant_of_shape(shape_in, *, data_type, value, ctx):
    """dataType: OH_NN_DataType code (a MindIR TypeId is accepted too); 0 = the declared output dtype.
    value: one fill value (none: 0)."""
    op = "CONSTANT_OF_SHAPE"
    dims = _generated_dims(op, None, shape_in, "input shape")
    _check_one_dim_shape(op, np.shape(shape_in))
    wanted = _type_code(int(data_type), op, "dataType", mindir=True)
    declared = _declared(ctx)
    dtype = _agree(op, "dataType", wanted, declared)
    values = list(value)
    if len(values) > 1:
        raise invalid(f"{op}: value must hold one element, got {len(values)}")
    fill_value = values[0] if values else 0.0
    if _output_quantized(ctx):
        dtype = np.dtype(np.float32)
    # the value cast once, then filled in the output dtype (a float64 fill cast afterwards wrote and faulted twice
    # the output's bytes: 1.15 GB for the onnx light VGG-19's 575 MB of weights)
    return np.full(dims, np.asarray(fill_value, np.float64).astype(dtype), dtype=dtype)


def _check_one_dim_shape(op: str, shape_shape) -> None:
    if shape_shape is not None and len(shape_shape) > 1:
        raise invalid(f"{op}: input must be a 1-D shape, got dims {list(shape_shape)}")


@shape_rule("OH_NN_OPS_CONSTANT_OF_SHAPE")
def _constant_of_shape_shape(op, shapes, values, **_):
    dims = _generated_dims(op, shapes[0], values[0], "input shape")
    _check_one_dim_shape(op, shapes[0])
    return (dims,)


# ---------------------------------------------------------------------------------------------------------- assert

# The output is the condition.

@kernel("OH_NN_OPS_ASSERT", shape=_first_input_shape)
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
