"""Converters of the indexing family: gathers (Gather, GatherND, GatherElements), scatters (Scatter, ScatterElements,
ScatterND, TensorScatter), Slice, OneHot, Compress, NonZero, Trilu and ReverseSequence.

Decisions (also in the mapping rows' notes):

* Negative indices (Gather >= 11, GatherND, GatherElements, ScatterND/Elements, OneHot) are wrapped at conversion
  time when the indices are constant, else by ``WHERE(indices < 0, indices + dim, indices)``; NNRt's gathers
  and scatters take indices >= 0 only.
* GatherElements and ScatterElements become GATHER_ND / SCATTER_ND with full coordinate tuples: the coordinates
  of the other axes are index grids (constants, or positions read at run time along dynamic dims), the indexed
  axis is the input. Negative indices against a dynamic dim are wrapped with that dim read at run time.
* ScatterND (reduction none) is ``WHERE(written, SCATTER_ND(indices, updates), data)`` where ``written`` marks
  the addressed elements; reduction add is ``data + SCATTER_ND(...)`` (NNRt's SCATTER_ND accumulates).
* TensorScatter writes the update with SCATTER_ND into zeros and picks it with WHERE over a mask of the written
  cache positions; indices and mask come from ``write_indices`` (folded to constants when that is constant).
* ReverseSequence needs constant sequence_lens: one GATHER_ND with constant (time, batch) coordinates.
"""
from __future__ import annotations

import math

import numpy as np

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.issues import DYNAMIC_SHAPE, INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE, ConversionIssue
from .. import limits
from ..context import NodeContext
from . import converts
from ._common import (
    _axis,
    _binary,
    _cast,
    _compare,
    _concat,
    _const,
    _constant_value,
    _empty_result,
    _ints,
    _norm_axis,
    _reshape,
    _scalar,
    _shape,
    _where,
    fold_constant_node,
)
from ._dims import axis_iota, dims_tensor, known, shape_tensor

# -- helpers -----------------------------------------------------------------------------------------------------------

def _wrap_negative(ctx: NodeContext, indices: str, dims) -> str:
    """indices + dims where indices < 0 (``dims`` a scalar or a vector over the last axis of the indices; or the name
    of a tensor holding them, computed at run time: a dynamic dim)."""
    value = ctx.value(indices)
    if value.dtype.kind == "u":
        return indices
    if isinstance(dims, str):
        if value.data is not None and not (value.data < 0).any():
            return indices
        dims = _cast(ctx, dims, value.dtype)
    else:
        dims = np.asarray(dims, value.dtype)
        if value.data is not None:
            if not (value.data < 0).any():
                return indices
            return ctx.constant(np.where(value.data < 0, value.data + dims, value.data).astype(value.dtype),
                                f"{indices}.wrapped")
        dims = ctx.constant(dims, f"{indices}.dims")
    negative = ctx.emit_to(OP.OH_NN_OPS_LESS, [indices, ctx.constant(np.zeros((), value.dtype))], np.bool_,
                      value.shape, f"{indices}.negative")
    shifted = ctx.emit_to(OP.OH_NN_OPS_ADD, [indices, dims], value.dtype, value.shape, f"{indices}.shifted")
    return ctx.emit_to(OP.OH_NN_OPS_WHERE, [negative, shifted, indices], value.dtype, value.shape,
                  f"{indices}.wrapped")


def _shape_of(ctx: NodeContext, name: str, what: str) -> tuple[int, ...]:
    """The shape of ``name``, -1 for a dynamic dim (its rank must be known)."""
    shape = ctx.value(name).shape
    if shape is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {what} {name!r} is unknown", tensor=name)
    return tuple(shape)


def _wrap_negative_of(ctx: NodeContext, indices: str, data: str, axes) -> str:
    """``_wrap_negative`` against dims ``axes`` of ``data`` (one axis: a scalar dim), read at run time when dynamic."""
    value = ctx.value(indices)
    if value.dtype.kind == "u" or value.data is not None and not (value.data < 0).any():
        return indices
    dims = _data_dims(ctx, data, axes)
    return _wrap_negative(ctx, indices, dims if isinstance(dims, str) or len(axes) > 1 else dims[0])


def _data_dims(ctx: NodeContext, data: str, axes) -> list[int] | str:
    """The dims ``axes`` of ``data``: a list when known, else a tensor computed at run time (a scalar for one axis)."""
    shape = ctx.value(data).shape
    if known(shape, axes):
        return [shape[a] for a in axes]
    dims = dims_tensor(ctx, data, axes)
    return ctx.emit_to(OP.OH_NN_OPS_SQUEEZE, [dims], np.int64, (), f"{data}.dim") if len(axes) == 1 else dims


def _index_dtype(ctx: NodeContext, name: str, what: str) -> np.dtype:
    dtype = ctx.value(name).dtype
    if dtype.kind not in "iu":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{what} {name!r} must be an integer tensor, got {dtype}")
    return dtype


def _coordinates(ctx: NodeContext, indices: str, axis: int, rank: int) -> str:
    """GatherElements/ScatterElements indices (shape S) as GATHER_ND/SCATTER_ND coordinates (shape S + [rank]):
    the index grid of S on every axis but ``axis``, where the indices themselves stand."""
    value = ctx.value(indices)
    shape = ctx.value(indices).shape
    if shape is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of the indices {indices!r} is unknown")
    if len(shape) != rank:
        raise ConversionIssue(INVALID_MODEL, f"indices rank {len(shape)} differs from the data rank {rank}")
    if not known(shape):
        return _runtime_coordinates(ctx, indices, axis, rank)
    limits.require_shape([rank, *shape], value.dtype, "the coordinates of the indices")
    grids = np.indices(shape, dtype=value.dtype)  # [rank] + S
    if value.data is not None:
        grids[axis] = value.data
        return ctx.constant(np.ascontiguousarray(np.moveaxis(grids, 0, -1)), f"{indices}.coords")
    column = ctx.reshape(indices, [*shape, 1])
    parts = []
    if axis > 0:
        parts.append(ctx.constant(np.ascontiguousarray(np.moveaxis(grids[:axis], 0, -1)), f"{indices}.before"))
    parts.append(column)
    if axis < rank - 1:
        parts.append(ctx.constant(np.ascontiguousarray(np.moveaxis(grids[axis + 1:], 0, -1)), f"{indices}.after"))
    if len(parts) == 1:
        return column
    return ctx.emit_to(OP.OH_NN_OPS_CONCAT, parts, value.dtype, [*shape, rank], f"{indices}.coords",
                  {"OH_NN_CONCAT_AXIS": len(shape)})


def _runtime_coordinates(ctx: NodeContext, indices: str, axis: int, rank: int) -> str:
    """``_coordinates`` for indices of a dynamic shape S: the grid of each other axis is its positions (read at run
    time along a dynamic dim) broadcast over S."""
    value = ctx.value(indices)
    shape = tuple(value.shape)
    column_shape = (*shape, 1)
    zeros = ctx.emit_to(OP.OH_NN_OPS_MUL, [indices, ctx.constant(np.zeros((), value.dtype))], value.dtype, shape,
                        f"{indices}.zeros")
    parts = []
    for d in range(rank):
        grid = indices if d == axis else ctx.emit_to(
            OP.OH_NN_OPS_ADD, [axis_iota(ctx, indices, d, rank, value.dtype), zeros], value.dtype, shape,
            f"{indices}.grid{d}")
        parts.append(ctx.emit_to(OP.OH_NN_OPS_UNSQUEEZE, [grid], value.dtype, column_shape, f"{indices}.column{d}",
                                 {"OH_NN_UNSQUEEZE_AXIS": rank}))
    if len(parts) == 1:
        return parts[0]
    return ctx.emit_to(OP.OH_NN_OPS_CONCAT, parts, value.dtype, [*shape, rank], f"{indices}.coords",
                       {"OH_NN_CONCAT_AXIS": rank})


# -- Gathers -----------------------------------------------------------------------------------------------------------

@converts("Gather")
def gather(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x, indices = ctx.input(0), ctx.input(1)
    rank = ctx.rank(x)
    axis = int(ctx.attr("axis", 0))
    axis = axis + rank if axis < 0 else axis
    index_value = ctx.value(indices)
    if ctx.opset >= 11 or index_value.data is not None and (index_value.data < 0).any():
        # indices + dim where indices < 0 (negative indices since opset 11); a dynamic dim is read at run time
        indices = _wrap_negative_of(ctx, indices, x, [axis])
    index_shape = ctx.value(indices).shape
    if index_shape is not None:
        shape = ctx.value(x).shape
        ctx.settle(ctx.output(0), [*shape[:axis], *index_shape, *shape[axis + 1:]])
    ctx.emit(OP.OH_NN_OPS_GATHER, [x, indices, ctx.constant(np.asarray([axis], np.int64))], [ctx.output(0)])


@converts("GatherND")
def gather_nd(ctx: NodeContext) -> None:
    """batch_dims b > 0: the batch coordinates (a constant grid) are prepended to every index tuple."""
    if fold_constant_node(ctx):
        return
    data, indices = ctx.input(0), ctx.input(1)
    data_shape = ctx.value(data).shape
    rank = ctx.rank(data)
    index_shape = ctx.value(indices).shape
    if index_shape is None or not index_shape or index_shape[-1] < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"GatherND needs the last dim of the indices, got {index_shape}")
    dtype = _index_dtype(ctx, indices, "GatherND indices")
    b = int(ctx.attr("batch_dims", 0))
    k = index_shape[-1]
    if b < 0 or b + k > rank or b >= len(index_shape):
        raise ConversionIssue(INVALID_MODEL, f"batch_dims={b} with {k}-tuples does not fit data rank {rank}")
    indices = _wrap_negative_of(ctx, indices, data, list(range(b, b + k)))
    if b:
        batch = index_shape[:-1]
        if known(batch):
            grid = ctx.constant(np.ascontiguousarray(np.moveaxis(np.indices(batch, dtype=dtype)[:b], 0, -1)),
                                f"{indices}.batch")
        else:  # the positions along each batch dim (read at run time), broadcast over the indices' leading dims
            grid = _batch_positions(ctx, indices, b)
        indices = ctx.emit_to(OP.OH_NN_OPS_CONCAT, [grid, indices], dtype, [*batch, b + k], f"{indices}.full",
                              {"OH_NN_CONCAT_AXIS": len(batch)})
    out_shape = [*index_shape[:-1], *data_shape[b + k:]]
    out = ctx.output(0)
    if _empty_result(ctx, out, out_shape, ctx.value(data).dtype):
        return
    ctx.settle(out, out_shape)
    ctx.emit(OP.OH_NN_OPS_GATHER_ND, [data, indices], [out])


def _batch_positions(ctx: NodeContext, indices: str, b: int) -> str:
    """[*S, b] for indices of shape [*S, k]: at every index tuple, its position along each of the first b dims."""
    value = ctx.value(indices)
    shape = tuple(value.shape)
    rank = len(shape)
    zeros = ctx.emit_to(OP.OH_NN_OPS_MUL, [indices, ctx.constant(np.zeros((), value.dtype))], value.dtype, shape,
                        f"{indices}.zeros")
    first = ctx.emit_to(OP.OH_NN_OPS_SLICE, [zeros, ctx.constant(np.asarray([0], np.int64)),
                                             ctx.constant(np.asarray([1], np.int64))], value.dtype, (*shape[:-1], 1),
                        f"{indices}.zero_column", {"OH_NN_SLICE_AXES": [rank - 1]})
    columns = [ctx.emit_to(OP.OH_NN_OPS_ADD, [axis_iota(ctx, indices, d, rank, value.dtype), first], value.dtype,
                           (*shape[:-1], 1), f"{indices}.batch{d}") for d in range(b)]
    if len(columns) == 1:
        return columns[0]
    return ctx.emit_to(OP.OH_NN_OPS_CONCAT, columns, value.dtype, (*shape[:-1], b), f"{indices}.batch",
                       {"OH_NN_CONCAT_AXIS": rank - 1})


@converts("GatherElements")
def gather_elements(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    data, indices = ctx.input(0), ctx.input(1)
    rank = ctx.rank(data)
    axis = _axis(ctx, int(ctx.attr("axis", 0)), rank)
    _index_dtype(ctx, indices, "GatherElements indices")
    indices = _wrap_negative_of(ctx, indices, data, [axis])
    coords = _coordinates(ctx, indices, axis, rank)
    out = ctx.output(0)
    ctx.settle(out, ctx.value(indices).shape)
    ctx.emit(OP.OH_NN_OPS_GATHER_ND, [data, coords], [out])


# -- Scatters ----------------------------------------------------------------------------------------------------------

def _scatter(ctx: NodeContext, data: str, coords: str, updates: str, reduction: str) -> None:
    """data with ``updates`` written (none) or added (add) at the coordinate tuples ``coords``."""
    value = ctx.value(data)
    shape = _shape_of(ctx, data, "the scatter data")
    out = ctx.output(0)
    ctx.settle(out, shape)
    if reduction not in ("none", "add"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"reduction={reduction!r} is not supported (none, add): NNRt's "
                                                     f"SCATTER_ND only sums")
    if reduction == "add" and value.dtype == np.bool_:
        raise ConversionIssue(UNSUPPORTED_DTYPE, "reduction='add' on a bool tensor is not supported")
    shape_const = shape_tensor(ctx, data)  # (SHAPE at run time when a dim is dynamic)
    scattered = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [coords, updates, shape_const], value.dtype, shape,
                       f"{out}.scattered")
    if reduction == "add":
        ctx.emit(OP.OH_NN_OPS_ADD, [data, scattered], [out])
        return
    coord_value = ctx.value(coords)
    k = coord_value.shape[-1]
    if coord_value.data is not None and known(shape):
        tuples = coord_value.data.reshape(-1, k)
        if len({tuple(t) for t in tuples.tolist()}) != len(tuples):
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "reduction='none' with repeated indices (ONNX leaves the "
                                                         "result undefined) is not supported")
        limits.check_indices(coord_value.data, shape, "ScatterND's indices")
        limits.require_shape(shape, np.bool_, "ScatterND's mask of written elements")
        written = np.zeros(shape, np.bool_)
        written[tuple(coord_value.data[..., i] for i in range(k))] = True
        mask = ctx.constant(written, f"{out}.written")
    else:
        update_shape = ctx.value(updates).shape
        ones = ctx.constant(np.ones(update_shape, np.float32)) if known(update_shape) else ctx.emit_to(
            OP.OH_NN_OPS_FILL, [ctx.constant(np.asarray(1, np.float32)), shape_tensor(ctx, updates)], np.float32,
            update_shape, f"{out}.ones")
        counts = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [coords, ones, shape_const], np.float32, shape, f"{out}.counts")
        mask = ctx.emit_to(OP.OH_NN_OPS_GREATER, [counts, ctx.constant(np.zeros((), np.float32))], np.bool_, shape,
                      f"{out}.written")
    ctx.emit(OP.OH_NN_OPS_WHERE, [mask, scattered, data], [out])


@converts("ScatterND")
def scatter_nd(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    shape = _shape_of(ctx, data, "the ScatterND data")
    reduction = ctx.attr("reduction", "none") if ctx.opset >= 16 else "none"
    index_shape = ctx.value(indices).shape
    if index_shape is None or not index_shape or index_shape[-1] < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"ScatterND needs the last dim of the indices, got {index_shape}")
    _index_dtype(ctx, indices, "ScatterND indices")
    k = index_shape[-1]
    if not 1 <= k <= len(shape):
        raise ConversionIssue(INVALID_MODEL, f"ScatterND indices are {k}-tuples, the data has rank {len(shape)}")
    if len(index_shape) == 1:  # one tuple: SCATTER_ND wants rank >= 2 indices
        indices = ctx.reshape(indices, [1, k])
        update_shape = ctx.value(updates).shape
        if update_shape is None:
            raise ConversionIssue(DYNAMIC_SHAPE, "ScatterND needs the rank of the updates")
        updates = ctx.emit_to(OP.OH_NN_OPS_UNSQUEEZE, [updates], ctx.value(updates).dtype, [1, *update_shape],
                              f"{updates}.one", {"OH_NN_UNSQUEEZE_AXIS": 0})
    indices = _wrap_negative_of(ctx, indices, data, list(range(k)))
    _scatter(ctx, data, indices, updates, reduction)


@converts("Scatter", "ScatterElements")
def scatter_elements(ctx: NodeContext) -> None:
    """ScatterElements, and Scatter (opsets 9-10, the same op without reduction)."""
    if fold_constant_node(ctx):
        return
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    shape = _shape_of(ctx, data, "the scatter data")
    rank = len(shape)
    axis = _axis(ctx, int(ctx.attr("axis", 0)), rank)
    reduction = ctx.attr("reduction", "none") if ctx.node.op_type == "ScatterElements" and ctx.opset >= 16 else "none"
    _index_dtype(ctx, indices, f"{ctx.node.op_type} indices")
    indices = _wrap_negative_of(ctx, indices, data, [axis])
    coords = _coordinates(ctx, indices, axis, rank)
    _scatter(ctx, data, coords, updates, reduction)


@converts("TensorScatter")
def tensor_scatter(ctx: NodeContext) -> None:
    """present = past with update written at write_indices[b] + s (mod max_sequence_length when circular) along
    ``axis``: SCATTER_ND of the update into zeros, WHERE over the mask of written positions."""
    past, update = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"mode={mode!r} is not supported (linear, circular)")
    dtype = ctx.value(past).dtype
    if ctx.value(update).dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"update dtype {ctx.value(update).dtype} differs from the cache's {dtype}")
    shape = _shape(ctx, past, "past_cache")
    u_shape = _shape(ctx, update, "update")
    rank = len(shape)
    if rank < 2 or len(u_shape) != rank:
        raise ConversionIssue(INVALID_MODEL, f"past_cache {list(shape)} and update {list(u_shape)} need one rank >= 2")
    axis = _norm_axis(ctx, ctx.attr("axis", -2), rank)
    if axis == 0:
        raise ConversionIssue(INVALID_MODEL, "axis must not be the batch dimension 0")
    if any(a != b for i, (a, b) in enumerate(zip(shape, u_shape)) if i != axis) or u_shape[axis] > shape[axis]:
        raise ConversionIssue(INVALID_MODEL, f"update {list(u_shape)} does not fit past_cache {list(shape)} along "
                                             f"axis {axis}")
    batch, max_len, seq = shape[0], shape[axis], u_shape[axis]
    if ctx.has_input(2):
        writes = ctx.input(2)
        if ctx.value(writes).dtype != np.int64 or _shape(ctx, writes, "write_indices") != (batch,):
            raise ConversionIssue(INVALID_MODEL, f"write_indices must be int64 of shape ({batch},)")
        data = ctx.value(writes).data
        if data is not None:
            if (data < 0).any():
                raise ConversionIssue(INVALID_MODEL, f"write_indices {data.tolist()} must be >= 0")
            if mode == "linear" and (data + seq > max_len).any():
                raise ConversionIssue(INVALID_MODEL, f"write_indices {data.tolist()} + {seq} updates run past the "
                                                     f"{max_len} cache positions (mode linear)")
    else:
        writes = ctx.constant(np.zeros(batch, np.int64), f"{ctx.name}.write_indices")
    start = _reshape(ctx, writes, (batch, 1))
    if mode == "circular":
        start = _binary(ctx, OP.OH_NN_OPS_MOD, start, _const(ctx, max_len, np.int64, "max_len"), f"{out}.start")
    # cache position of update row s of batch b: start[b] + s (mod max_len)
    steps = ctx.constant(np.arange(seq, dtype=np.int64).reshape(1, seq), f"{ctx.name}.steps")
    position = _binary(ctx, OP.OH_NN_OPS_ADD, start, steps, f"{out}.positions")  # (B, S)
    if mode == "circular":
        position = _binary(ctx, OP.OH_NN_OPS_MOD, position, _const(ctx, max_len, np.int64, "max_len"),
                           f"{out}.positions_wrapped")
    prefix = shape[:axis]
    # SCATTER_ND indices (*prefix, S, axis + 1): the prefix coordinates, then the cache position
    position_b = _reshape(ctx, position, (batch, *([1] * (axis - 1)), seq, 1))
    if axis > 1:
        position_b = ctx.emit_to(OP.OH_NN_OPS_BROADCAST_TO, [position_b], np.int64, (*prefix, seq, 1),
                           f"{out}.positions_full", {"OH_NN_BROADCAST_TO_SHAPE": [*prefix, seq, 1]})
    grid = np.stack(np.meshgrid(*[np.arange(d) for d in prefix], np.arange(seq), indexing="ij")[:-1], axis=-1)
    indices = _concat(ctx, [ctx.constant(grid.astype(np.int64), f"{ctx.name}.prefix_grid"), position_b], axis + 1,
                      f"{out}.indices")
    scattered = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [indices, update, ctx.constant(np.asarray(shape, np.int64),
                                                                                   f"{ctx.name}.shape")],
                      dtype, shape, f"{out}.scattered")
    # written[b, p]: (p - start[b]) mod max_len < S (linear: 0 <= p - start[b] < S)
    cache_positions = ctx.constant(np.arange(max_len, dtype=np.int64).reshape(1, max_len), f"{ctx.name}.cache_pos")
    offset = _binary(ctx, OP.OH_NN_OPS_SUB, cache_positions, start, f"{out}.offset")  # (B, M)
    if mode == "circular":
        offset = _binary(ctx, OP.OH_NN_OPS_MOD, _binary(ctx, OP.OH_NN_OPS_ADD, offset, _const(
            ctx, max_len, np.int64, "max_len"), f"{out}.offset_pos"), _const(ctx, max_len, np.int64, "max_len"),
            f"{out}.offset_wrapped")
        written = _compare(ctx, OP.OH_NN_OPS_LESS, offset, _const(ctx, seq, np.int64, "seq"), f"{out}.written")
    else:
        written = _compare(ctx, OP.OH_NN_OPS_LOGICAL_AND,
                           _compare(ctx, OP.OH_NN_OPS_GREATER_EQUAL, offset, _const(ctx, 0, np.int64, "zero"),
                                    f"{out}.after_start"),
                           _compare(ctx, OP.OH_NN_OPS_LESS, offset, _const(ctx, seq, np.int64, "seq"),
                                    f"{out}.before_end"), f"{out}.written")
    mask_shape = [1] * rank
    mask_shape[0], mask_shape[axis] = batch, max_len
    written = _reshape(ctx, written, mask_shape)
    _where(ctx, written, scattered, past, out, output=out)


# -- Slice -------------------------------------------------------------------------------------------------------------

def _onnx_slice_bounds(start: int, end: int, step: int, dim: int) -> tuple[int, int]:
    """ONNX Slice clamping: negative values count from the end; starts in [0, dim] ([0, dim-1] for a negative
    step), ends in [0, dim] ([-1, dim-1] for a negative step)."""
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim)
    return min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)


@converts("Slice")
def slice_(ctx: NodeContext) -> None:
    """Static dims: exact bounds, SLICE for unit steps, else STRIDED_SLICE. Dynamic dims: STRIDED_SLICE with
    the ONNX values (its TF clamping agrees with ONNX's)."""
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    shape = ctx.value(x).shape
    rank = ctx.rank(x)
    if ctx.opset < 10:
        starts = ctx.attr("starts")
        ends = ctx.attr("ends")
        if starts is None or ends is None:
            raise ConversionIssue(INVALID_MODEL, "Slice needs the starts and ends attributes")
        starts, ends = [int(v) for v in starts], [int(v) for v in ends]
        axes = ctx.attr("axes")
        axes = None if axes is None else [int(a) for a in axes]
        steps = None
    else:
        starts = _ints(ctx.constant_input(1, "Slice starts"))
        ends = _ints(ctx.constant_input(2, "Slice ends"))
        axes = _ints(ctx.constant_input(3, "Slice axes")) if ctx.has_input(3) else None
        steps = _ints(ctx.constant_input(4, "Slice steps")) if ctx.has_input(4) else None
    if axes is None:
        axes = list(range(len(starts)))
    if steps is None:
        steps = [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ConversionIssue(INVALID_MODEL, f"starts {starts}, ends {ends}, axes {axes} and steps {steps} "
                                             f"differ in length")
    axes = [_axis(ctx, a, rank, "axes entry") for a in axes]
    if len(set(axes)) != len(axes):
        raise ConversionIssue(INVALID_MODEL, f"axes {axes} repeat an axis")
    if 0 in steps:
        raise ConversionIssue(INVALID_MODEL, "Slice steps must not be 0")
    spec = {a: (s, e, st) for a, s, e, st in zip(axes, starts, ends, steps)}
    out_shape = list(shape)
    begin, end, stride = [0] * rank, [0] * rank, [1] * rank
    begin_mask = end_mask = 0
    exact = True  # every sliced dim is static
    for a in range(rank):
        if a not in spec:
            begin_mask |= 1 << a
            end_mask |= 1 << a
            continue
        s, e, st = spec[a]
        dim = shape[a]
        stride[a] = st
        if dim < 0:
            exact = False
            begin[a], end[a] = s, e
            out_shape[a] = -1
            continue
        lo, hi = _onnx_slice_bounds(s, e, st, dim)
        out_shape[a] = len(range(lo, hi, st))
        begin[a] = lo
        if st < 0 and hi == -1:
            end_mask |= 1 << a  # through index 0
        else:
            end[a] = hi
    out = ctx.output(0)
    if _empty_result(ctx, out, out_shape, ctx.value(x).dtype):
        return
    ctx.settle(out, out_shape)
    if exact and all(spec[a][2] == 1 for a in spec):
        if list(out_shape) == list(shape):
            ctx.alias(x, out)
            return
        sliced = sorted(spec)
        ctx.emit(OP.OH_NN_OPS_SLICE, [x, ctx.constant(np.asarray([begin[a] for a in sliced], np.int64)),
                                      ctx.constant(np.asarray([out_shape[a] for a in sliced], np.int64))],
                 [out], {"OH_NN_SLICE_AXES": sliced})
        return
    clamp = lambda v: min(max(v, -(1 << 62)), 1 << 62)  # noqa: E731 - INT64_MIN/MAX sentinels stay in range
    inputs = [x] + [ctx.constant(np.asarray([clamp(v) for v in values], np.int64)) for values in (begin, end, stride)]
    params = {}
    if begin_mask:
        params["OH_NN_STRIDED_SLICE_BEGIN_MASK"] = begin_mask
    if end_mask:
        params["OH_NN_STRIDED_SLICE_END_MASK"] = end_mask
    ctx.emit(OP.OH_NN_OPS_STRIDED_SLICE, inputs, [out], params)


# -- OneHot ------------------------------------------------------------------------------------------------------------

@converts("OneHot")
def one_hot(ctx: NodeContext) -> None:
    """Float indices are truncated to int64; negative indices count from depth (ONNX), NNRt's ONE_HOT gives an
    all-off vector for anything outside [0, depth)."""
    if fold_constant_node(ctx):
        return
    indices = ctx.input(0)
    index_value = ctx.value(indices)
    rank = ctx.rank(indices)
    depth = int(_scalar(ctx.constant_input(1, "the OneHot depth"), "depth"))  # a float depth is truncated (ONNX)
    if depth <= 0:
        raise ConversionIssue(INVALID_MODEL, f"depth={depth} must be > 0")
    axis = _axis(ctx, int(ctx.attr("axis", -1)), rank + 1)
    values_name = ctx.input(2)
    values = ctx.value(values_name)
    if values.data is not None:
        if values.data.size != 2:
            raise ConversionIssue(INVALID_MODEL, f"values must hold [off, on], got shape {list(values.data.shape)}")
        flat = values.data.reshape(-1)
        off, on = ctx.constant(flat[0:1], "off"), ctx.constant(flat[1:2], "on")
    else:  # one-element pieces (ONE_HOT takes any one-element on/off tensors)
        flat = ctx.reshape(values_name, [2]) if values.shape != (2,) else values_name
        off, on = (ctx.emit_to(OP.OH_NN_OPS_GATHER, [flat, ctx.constant(np.asarray([position], np.int64)),
                                                     ctx.constant(np.asarray([0], np.int64))],
                          values.dtype, (1,), f"{values_name}.{'on' if position else 'off'}") for position in (0, 1))
    if index_value.dtype.kind == "f":
        cast = ctx.new_value(np.int64, index_value.shape, f"{indices}.int64")
        ctx.emit(OP.OH_NN_OPS_CAST, [indices, ctx.constant(np.asarray(int(from_numpy(np.int64)), np.int32))], [cast])
        indices = cast
    elif index_value.dtype.kind not in "iu":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"OneHot indices of type {index_value.dtype} are not supported")
    indices = _wrap_negative(ctx, indices, depth)
    out = ctx.output(0)
    if index_value.shape is not None:
        out_shape = list(index_value.shape)
        out_shape.insert(axis, depth)
        ctx.settle(out, out_shape)
    ctx.emit(OP.OH_NN_OPS_ONE_HOT, [indices, ctx.constant(np.asarray(depth, np.int64), "depth"), on, off], [out],
             {"OH_NN_ONE_HOT_AXIS": axis})


# -- NonZero, Compress -------------------------------------------------------------------------------------------------

@converts("NonZero")
def non_zero(ctx: NodeContext) -> None:
    data = ctx.constant_input(0, "NonZero's input (its output shape depends on the values)")
    result = np.asarray(np.nonzero(data), np.int64) if data.ndim else np.zeros((0, int(bool(data))), np.int64)
    ctx.graph.add_value(_constant_value(ctx.output(0), result))


@converts("Compress")
def compress(ctx: NodeContext) -> None:
    """A constant condition becomes a GATHER of the selected positions (the output shape depends on it)."""
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    condition = ctx.constant_input(1, "Compress's condition (the output shape depends on it)").reshape(-1)
    shape = ctx.value(x).shape
    rank = ctx.rank(x)
    axis = ctx.attr("axis")
    selected = np.nonzero(condition.astype(np.bool_))[0].astype(np.int64)
    if axis is None:
        source = x
        if rank != 1:
            source = ctx.reshape(x, [math.prod(shape) if known(shape) else -1])
        axis = 0
        limit = ctx.value(source).shape[0]
    else:
        axis = _axis(ctx, int(axis), rank)
        source = x
        limit = shape[axis]
    if limit >= 0 and len(selected) and selected[-1] >= limit:
        raise ConversionIssue(INVALID_MODEL, f"the condition selects position {selected[-1]} of a dim of {limit}")
    out = ctx.output(0)
    out_shape = list(ctx.value(source).shape)
    out_shape[axis] = len(selected)
    if _empty_result(ctx, out, out_shape, ctx.value(x).dtype):
        return
    ctx.settle(out, out_shape)
    ctx.emit(OP.OH_NN_OPS_GATHER, [source, ctx.constant(selected), ctx.constant(np.asarray([axis], np.int64))], [out])


# -- Trilu -------------------------------------------------------------------------------------------------------------

@converts("Trilu")
def trilu(ctx: NodeContext) -> None:
    """WHERE(constant triangle mask, x, 0) over the last two dims (their sizes must be static)."""
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    value = ctx.value(x)
    shape = value.shape
    if ctx.rank(x) < 2:
        raise ConversionIssue(INVALID_MODEL, f"Trilu needs rank >= 2, {x!r} has shape {list(shape)}")
    rows, cols = shape[-2:]
    k = int(_scalar(ctx.constant_input(1, "the Trilu k"), "k")) if ctx.has_input(1) else 0
    upper = int(ctx.attr("upper", 1))
    if rows < 0 or cols < 0:  # the mask from the positions along the two dims, read at run time
        rank = len(shape)
        columns, rows_at = axis_iota(ctx, x, rank - 1, 2, position=1), axis_iota(ctx, x, rank - 2, 2, position=0)
        diagonal = ctx.emit_to(OP.OH_NN_OPS_SUB, [columns, rows_at], np.int64, (rows, cols), f"{ctx.name}.diagonal")
        mask = ctx.emit_to(OP.OH_NN_OPS_GREATER_EQUAL if upper else OP.OH_NN_OPS_LESS_EQUAL,
                           [diagonal, ctx.constant(np.asarray(k, np.int64))], np.bool_, (rows, cols),
                           f"{ctx.name}.mask")
        ctx.settle(ctx.output(0), shape)
        ctx.emit(OP.OH_NN_OPS_WHERE, [mask, x, ctx.constant(np.zeros((), value.dtype))], [ctx.output(0)])
        return
    k = min(max(k, -rows), cols)  # a diagonal beyond the matrix selects what the edge one does
    ones = np.ones((rows, cols), np.bool_)
    mask = np.triu(ones, k) if upper else np.tril(ones, k)
    out = ctx.output(0)
    ctx.settle(out, shape)
    if mask.all():
        ctx.alias(x, out)
        return
    ctx.emit(OP.OH_NN_OPS_WHERE, [ctx.constant(mask, f"{out}.mask"), x, ctx.constant(np.zeros((), value.dtype))],
             [out])


# -- ReverseSequence ---------------------------------------------------------------------------------------------------

def _reverse_sequence_at_run_time(ctx: NodeContext, x: str, lens: np.ndarray, batch_axis: int) -> None:
    """GATHER_ND coordinates (batch, source time) of every (batch, time) position: the source is len - 1 - t within
    the entry's length, t past it."""
    i64 = np.int64
    t = axis_iota(ctx, x, 1 - batch_axis, 2, position=1)  # [1, T]
    lengths = ctx.constant(lens.reshape(-1, 1).astype(i64), f"{ctx.name}.lengths")  # [B, 1]
    within = ctx.emit_to(OP.OH_NN_OPS_LESS, [t, lengths], np.bool_, (len(lens), -1), f"{ctx.name}.within")
    mirrored = ctx.emit_to(OP.OH_NN_OPS_SUB, [ctx.constant((lens.reshape(-1, 1) - 1).astype(i64)), t], i64,
                           (len(lens), -1), f"{ctx.name}.mirrored")
    source = ctx.emit_to(OP.OH_NN_OPS_WHERE, [within, mirrored, t], i64, (len(lens), -1), f"{ctx.name}.source")
    zeros = ctx.emit_to(OP.OH_NN_OPS_MUL, [source, ctx.constant(np.zeros((), i64))], i64, (len(lens), -1),
                        f"{ctx.name}.zeros")
    batches = ctx.emit_to(OP.OH_NN_OPS_ADD, [ctx.constant(np.arange(len(lens), dtype=i64).reshape(-1, 1)), zeros],
                          i64, (len(lens), -1), f"{ctx.name}.batches")
    coords = ctx.emit_to(OP.OH_NN_OPS_STACK, [batches, source] if batch_axis == 0 else [source, batches], i64,
                         (len(lens), -1, 2), f"{ctx.name}.coords", {"OH_NN_STACK_AXIS": 2})
    if batch_axis == 1:  # (time, batch) positions
        coords = ctx.transpose(coords, (1, 0, 2))
    ctx.emit(OP.OH_NN_OPS_GATHER_ND, [x, coords], [ctx.output(0)])


@converts("ReverseSequence")
def reverse_sequence(ctx: NodeContext) -> None:
    x = ctx.input(0)
    rank = ctx.rank(x)
    batch_axis, time_axis = int(ctx.attr("batch_axis", 1)), int(ctx.attr("time_axis", 0))
    if rank < 2 or {batch_axis, time_axis} != {0, 1}:
        raise ConversionIssue(INVALID_MODEL, f"batch_axis={batch_axis} / time_axis={time_axis} must be 0 and 1 (in "
                                             f"either order) of an input of rank >= 2 (rank {rank})")
    shape = ctx.value(x).shape
    lens = np.asarray(ctx.constant_input(1, "sequence_lens")).astype(np.int64).reshape(-1)
    batch, time = shape[batch_axis], shape[time_axis]
    batch = lens.size if batch < 0 else batch  # (the constant lengths give the batch)
    if lens.size != batch or np.any(lens < 0) or time >= 0 and np.any(lens > time):
        raise ConversionIssue(INVALID_MODEL, f"sequence_lens {lens.tolist()} must hold {batch} values in [0, {time}]")
    ctx.settle(ctx.output(0), shape)
    if np.all(lens <= 1):
        ctx.alias(x, ctx.output(0))
        return
    if time < 0:  # a dynamic time axis: each entry's source positions from the run-time positions along it
        _reverse_sequence_at_run_time(ctx, x, lens, batch_axis)
        return
    source = np.tile(np.arange(time), (batch, 1))
    for b, length in enumerate(lens):
        source[b, :length] = np.arange(length)[::-1]
    batches = np.broadcast_to(np.arange(batch)[:, None], (batch, time))
    coords = np.stack([batches, source], -1) if batch_axis == 0 else np.stack([source, batches], -1).transpose(1, 0, 2)
    ctx.emit(OP.OH_NN_OPS_GATHER_ND, [x, ctx.constant(np.ascontiguousarray(coords), f"{ctx.name}.coords")],
             [ctx.output(0)])
