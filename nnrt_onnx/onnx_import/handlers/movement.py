"""Data movement ONNX ops: split, slice, pad, tile, gathers and scatters, one-hot, depth/space rearrangement,
triangular masks, and ops whose output only exists when their input is a constant (Range, EyeLike, NonZero).

Decisions (also in the mapping rows' notes):

* A node whose inputs are all constants is evaluated at conversion time by the ONNX reference implementation
  (``fold_constant_node``), so shape arithmetic of exported graphs folds, empty intermediate tensors included.
* NNRt tensors cannot have a 0 dim: an output that would be empty becomes an empty constant (it holds nothing,
  whatever the inputs). Concat drops such pieces; anywhere else the importer reports the empty tensor.
* Negative indices (Gather >= 11, GatherND, GatherElements, ScatterND/Elements, OneHot) are wrapped at conversion
  time when the indices are constant, else by ``WHERE(indices < 0, indices + dim, indices)``; NNRt's gathers
  and scatters take indices >= 0 only.
* GatherElements and ScatterElements become GATHER_ND / SCATTER_ND with full coordinate tuples: the coordinates
  of the other axes are constant index grids (the indices' shape must be static), the indexed axis is the input.
* ScatterND (reduction none) is ``WHERE(written, SCATTER_ND(indices, updates), data)`` where ``written`` marks
  the addressed elements; reduction add is ``data + SCATTER_ND(...)`` (NNRt's SCATTER_ND accumulates).
"""
from __future__ import annotations

import math

import numpy as np
from onnx import helper

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from ...ir.passes import NCHW_TO_NHWC, NHWC_TO_NCHW
from ..context import NodeContext
from . import converts

# -- helpers -------------------------------------------------------------------------------------------------------

MAX_FOLDED_ELEMENTS = 1 << 22


def fold_constant_node(ctx: NodeContext) -> bool:
    """A node whose inputs are all constants becomes constant outputs, evaluated by the ONNX reference
    implementation (shape arithmetic in exported graphs, empty tensors included). Returns whether it did."""
    names = [n for n in ctx.node.input if n]
    if not names:
        return False
    values = {}
    for name in names:
        value = ctx.graph.values.get(ctx.graph.resolve(name))
        if value is None or value.data is None:
            return False
        values[name] = value.data
    from onnx import TypeProto
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node(ctx.node.op_type, list(ctx.node.input), list(ctx.node.output), name=ctx.name)
    node.attribute.extend(ctx.node.attribute)
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
              for n, a in values.items()]
    outputs = [helper.make_value_info(n, TypeProto()) for n in ctx.node.output if n]
    model = helper.make_model(helper.make_graph([node], "fold", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", ctx.opset)])
    try:
        results = [np.asarray(r) for r in ReferenceEvaluator(model).run(None, values)]
        for r in results:
            from_numpy(r.dtype)
    except Exception:  # the reference rejects it: convert normally, which reports the problem
        return False
    if sum(r.size for r in results) > MAX_FOLDED_ELEMENTS:
        return False
    for attribute in ctx.node.attribute:
        ctx.attr(attribute.name)
    for name, array in zip((n for n in ctx.node.output if n), results):
        ctx.graph.add_value(_constant_value(name, np.asarray(array)))
    return True


def _axis(ctx: NodeContext, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ConversionIssue(INVALID_MODEL, f"{what}={axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _ints(array) -> list[int]:
    return [int(v) for v in np.asarray(array).reshape(-1)]


def _scalar(array, what: str):
    array = np.asarray(array)
    if array.size != 1:
        raise ConversionIssue(INVALID_MODEL, f"{what} must hold one value, got shape {list(array.shape)}")
    return array.reshape(-1)[0]


def _empty_result(ctx: NodeContext, name: str, shape, dtype) -> bool:
    """An output with a 0 dim holds nothing, whatever the inputs: it becomes an empty constant (consumers drop it
    or report it; NNRt itself has no empty tensors). Returns whether it did."""
    if shape is None or not any(d == 0 for d in shape):
        return False
    ctx.graph.add_value(_constant_value(name, np.zeros([max(int(d), 0) for d in shape], dtype)))
    return True






def _wrap_negative(ctx: NodeContext, indices: str, dims) -> str:
    """indices + dims where indices < 0 (``dims`` a scalar or a vector over the last axis of the indices)."""
    value = ctx.value(indices)
    if value.dtype.kind == "u":
        return indices
    dims = np.asarray(dims, value.dtype)
    if value.data is not None:
        if not (value.data < 0).any():
            return indices
        return ctx.constant(np.where(value.data < 0, value.data + dims, value.data).astype(value.dtype),
                            f"{indices}.wrapped")
    negative = ctx.emit_to(OP.OH_NN_OPS_LESS, [indices, ctx.constant(np.zeros((), value.dtype))], np.bool_,
                      value.shape, f"{indices}.negative")
    shifted = ctx.emit_to(OP.OH_NN_OPS_ADD, [indices, ctx.constant(dims, f"{indices}.dims")], value.dtype,
                     value.shape, f"{indices}.shifted")
    return ctx.emit_to(OP.OH_NN_OPS_WHERE, [negative, shifted, indices], value.dtype, value.shape,
                  f"{indices}.wrapped")


def _index_dtype(ctx: NodeContext, name: str, what: str) -> np.dtype:
    dtype = ctx.value(name).dtype
    if dtype.kind not in "iu":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{what} {name!r} must be an integer tensor, got {dtype}")
    return dtype


def _coordinates(ctx: NodeContext, indices: str, axis: int, rank: int) -> str:
    """GatherElements/ScatterElements indices (shape S) as GATHER_ND/SCATTER_ND coordinates (shape S + [rank]):
    the index grid of S on every axis but ``axis``, where the indices themselves stand."""
    value = ctx.value(indices)
    shape = ctx.static_shape(indices, "the indices")
    if len(shape) != rank:
        raise ConversionIssue(INVALID_MODEL, f"indices rank {len(shape)} differs from the data rank {rank}")
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


# -- Split ---------------------------------------------------------------------------------------------------------

@converts("Split")
def split(ctx: NodeContext) -> None:
    """Sizes from the ``split`` input (>= 13) or attribute (< 13), else num_outputs (>= 18, the last piece may be
    smaller) or the output count (equal pieces)."""
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    shape = ctx.value(x).shape
    rank = ctx.rank(x)
    axis = _axis(ctx, int(ctx.attr("axis", 0)), rank)
    outputs = list(ctx.node.output)
    if any(not o for o in outputs):
        raise ConversionIssue(INVALID_MODEL, "Split has an unnamed output")
    n = len(outputs)
    num_outputs = ctx.attr("num_outputs") if ctx.opset >= 18 else None
    sizes = None
    if ctx.has_input(1):
        sizes = _ints(ctx.constant_input(1, "the split sizes"))
    elif ctx.opset < 13 and ctx.attr("split") is not None:
        sizes = [int(s) for s in ctx.attr("split")]
    dim = shape[axis]
    if sizes is not None:
        if num_outputs is not None:
            raise ConversionIssue(INVALID_MODEL, "Split has both split sizes and num_outputs")
        if len(sizes) != n:
            raise ConversionIssue(INVALID_MODEL, f"split sizes {sizes} do not match the {n} outputs")
        if dim >= 0 and sum(sizes) != dim:
            raise ConversionIssue(INVALID_MODEL, f"split sizes {sizes} do not add up to dim {dim} of axis {axis}")
        if any(s < 0 for s in sizes):
            raise ConversionIssue(INVALID_MODEL, f"split sizes {sizes} must be >= 0")
    elif num_outputs is not None:
        if int(num_outputs) != n:
            raise ConversionIssue(INVALID_MODEL, f"num_outputs={num_outputs} but the node has {n} outputs")
        if dim >= 0:
            chunk = -(-dim // n)
            sizes = [min(chunk, max(dim - chunk * i, 0)) for i in range(n)]
    elif dim >= 0:
        if dim % n:
            raise ConversionIssue(INVALID_MODEL, f"dim {dim} of axis {axis} does not split into {n} equal pieces")
        sizes = [dim // n] * n
    if sizes is not None:
        kept = []
        for output, size in zip(outputs, sizes):
            piece = [size if i == axis else d for i, d in enumerate(shape)]
            if not _empty_result(ctx, output, piece, ctx.value(x).dtype):
                ctx.settle(output, piece)
                kept.append((output, size))
        if not kept:
            return
        outputs, sizes = [o for o, _ in kept], [s for _, s in kept]
        n = len(outputs)
    if n == 1:
        ctx.alias(x, outputs[0])
        return
    params = {"OH_NN_SPLIT_AXIS": axis, "OH_NN_SPLIT_OUTPUT_NUM": n}
    if sizes is not None:
        params["OH_NN_SPLIT_SIZE_SPLITS"] = sizes
    # (dynamic dim without sizes: equal pieces at run time; an indivisible dim is an error there, as in ONNX < 18)
    ctx.emit(OP.OH_NN_OPS_SPLIT, [x], outputs, params)


# -- Slice ---------------------------------------------------------------------------------------------------------

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


# -- Pad -----------------------------------------------------------------------------------------------------------

def _pad_value(ctx: NodeContext, dtype: np.dtype) -> float:
    if ctx.opset < 11:
        value = ctx.attr("value", 0.0)
    elif ctx.has_input(2):
        data = ctx.constant_input(2, "the Pad constant_value")
        value = _scalar(data, "constant_value") if data.size else 0
    else:
        value = 0
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    as_f32 = float(np.float32(value))
    if dtype.kind in "iu":
        if not float(value).is_integer() or as_f32 != float(int(value)):
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"constant_value={value} is not exactly representable in "
                                                         f"NNRt's float32 pad value")
    elif dtype == np.float64 and not (math.isnan(value) or as_f32 == float(value)):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"constant_value={value} for a float64 tensor is not exactly "
                                                     f"representable in NNRt's float32 pad value")
    return as_f32


@converts("Pad")
def pad(ctx: NodeContext) -> None:
    """constant / reflect: PAD (then a crop for negative pads). edge / wrap (and reflect pads too large for PAD):
    one GATHER per padded axis with the numpy-computed source index of every output position."""
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    value = ctx.value(x)
    shape = value.shape
    rank = ctx.rank(x)
    mode = ctx.attr("mode", "constant")
    if ctx.opset < 11:
        pads = ctx.attr("pads")
        if pads is None:
            raise ConversionIssue(INVALID_MODEL, "Pad needs the pads attribute")
        pads = [int(p) for p in pads]
        axes = list(range(rank))
    else:
        pads = _ints(ctx.constant_input(1, "the pads"))
        axes = _ints(ctx.constant_input(3, "the Pad axes")) if ctx.has_input(3) else list(range(rank))
    axes = [_axis(ctx, a, rank, "axes entry") for a in axes]
    if len(pads) != 2 * len(axes):
        raise ConversionIssue(INVALID_MODEL, f"pads {pads} must hold 2 values per padded axis ({len(axes)} axes)")
    before, after = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        before[a], after[a] = pads[i], pads[i + len(axes)]
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"mode={mode!r} is not supported (constant, reflect, edge, wrap)")
    out = ctx.output(0)
    out_shape = [d + b + e if d >= 0 else -1 for d, b, e in zip(shape, before, after)]
    if any(d < 0 for d, dim in zip(out_shape, shape) if dim >= 0):
        raise ConversionIssue(INVALID_MODEL, f"pads {pads} crop more than the input {list(shape)} holds")
    fill = _pad_value(ctx, value.dtype) if mode == "constant" else ctx.attr("value") and 0.0  # (no fill value)
    if _empty_result(ctx, out, out_shape, value.dtype):
        return
    ctx.settle(out, out_shape)
    if not any(before) and not any(after):
        ctx.alias(x, out)
        return
    # Negative pads crop first, then the positive ones pad what is left (onnxruntime's order; it matters for
    # reflect and wrap, whose padding reads the far side).
    positive = [(max(b, 0), max(e, 0)) for b, e in zip(before, after)]
    crop = [(max(-b, 0), max(-e, 0)) for b, e in zip(before, after)]
    cropped = [d - b - e if d >= 0 else -1 for d, (b, e) in zip(shape, crop)]
    # (an unknown dim is left to PAD's own run-time check that reflect pads stay below the dim)
    fits_reflect = all(cropped[a] < 0 or max(positive[a]) <= cropped[a] - 1 for a in range(rank) if any(positive[a]))
    if mode == "constant" or (mode == "reflect" and fits_reflect):
        padding = any(any(p) for p in positive)
        current = x
        if any(any(c) for c in crop):
            end_mask = sum(1 << a for a in range(rank) if not crop[a][1])
            current = ctx.emit_to(OP.OH_NN_OPS_STRIDED_SLICE,
                             [x, ctx.constant(np.asarray([b for b, _ in crop], np.int64)),
                              ctx.constant(np.asarray([-e for _, e in crop], np.int64)),
                              ctx.constant(np.ones(rank, np.int64))], value.dtype, cropped, f"{out}.cropped",
                             {"OH_NN_STRIDED_SLICE_END_MASK": end_mask} if end_mask else {},
                             output=None if padding else out)
        if padding:
            ctx.emit(OP.OH_NN_OPS_PAD, [current, ctx.constant(np.asarray(positive, np.int64))], [out],
                     {"OH_NN_PAD_CONSTANT_VALUE": fill, "OH_NN_PAD_PADDING_MODE": 0 if mode == "constant" else 1})
        return
    current = x
    padded_axes = [a for a in range(rank) if before[a] or after[a]]
    current_shape = list(shape)
    for position, a in enumerate(padded_axes):
        dim = shape[a]
        if dim < 0:
            raise ConversionIssue(DYNAMIC_SHAPE, f"mode={mode!r} needs the static size of padded axis {a} "
                                                 f"(input shape {list(shape)})")
        kept = np.arange(crop[a][0], dim - crop[a][1])
        source = np.pad(kept, positive[a], mode=mode)  # numpy's reflect/edge/wrap are ONNX's
        current_shape[a] = len(source)
        last = position == len(padded_axes) - 1
        current = ctx.emit_to(OP.OH_NN_OPS_GATHER, [current, ctx.constant(source.astype(np.int64), f"{out}.src{a}"),
                                                    ctx.constant(np.asarray([a], np.int64))],
                         value.dtype, list(current_shape), f"{out}.axis{a}", output=out if last else None)


# -- Tile ----------------------------------------------------------------------------------------------------------

@converts("Tile")
def tile(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    shape = ctx.value(x).shape
    rank = ctx.rank(x)
    repeats = _ints(ctx.constant_input(1, "the Tile repeats"))
    if len(repeats) != rank:
        raise ConversionIssue(INVALID_MODEL, f"repeats {repeats} must have one value per input dim (rank {rank})")
    if any(r < 0 for r in repeats):
        raise ConversionIssue(INVALID_MODEL, f"repeats {repeats} must be >= 0")
    out = ctx.output(0)
    out_shape = [0 if r == 0 else d * r if d >= 0 else -1 for d, r in zip(shape, repeats)]
    if _empty_result(ctx, out, out_shape, ctx.value(x).dtype):
        return
    ctx.settle(out, out_shape)
    if all(r == 1 for r in repeats):
        ctx.alias(x, out)
        return
    ctx.emit(OP.OH_NN_OPS_TILE, [x, ctx.constant(np.asarray(repeats, np.int64))], [out])


# -- Gathers -------------------------------------------------------------------------------------------------------

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
    dims = data_shape[b:b + k]
    if all(d >= 0 for d in dims):
        indices = _wrap_negative(ctx, indices, list(dims))
    # (else negative indices cannot be wrapped: GATHER_ND rejects them at run time)
    if b:
        batch = index_shape[:-1]
        if any(d < 0 for d in batch):
            raise ConversionIssue(DYNAMIC_SHAPE, f"batch_dims={b} needs the static shape of the indices, "
                                                 f"got {list(index_shape)}")
        grid = np.moveaxis(np.indices(batch, dtype=dtype)[:b], 0, -1)
        indices = ctx.emit_to(OP.OH_NN_OPS_CONCAT, [ctx.constant(np.ascontiguousarray(grid), f"{indices}.batch"),
                                                    indices], dtype, [*batch, b + k], f"{indices}.full",
                         {"OH_NN_CONCAT_AXIS": len(batch)})
    out_shape = [*index_shape[:-1], *data_shape[b + k:]]
    out = ctx.output(0)
    if _empty_result(ctx, out, out_shape, ctx.value(data).dtype):
        return
    ctx.settle(out, out_shape)
    ctx.emit(OP.OH_NN_OPS_GATHER_ND, [data, indices], [out])


@converts("GatherElements")
def gather_elements(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    data, indices = ctx.input(0), ctx.input(1)
    data_shape = ctx.value(data).shape
    rank = ctx.rank(data)
    axis = _axis(ctx, int(ctx.attr("axis", 0)), rank)
    _index_dtype(ctx, indices, "GatherElements indices")
    if data_shape[axis] >= 0:
        indices = _wrap_negative(ctx, indices, data_shape[axis])
    coords = _coordinates(ctx, indices, axis, rank)
    out = ctx.output(0)
    ctx.settle(out, ctx.value(indices).shape)
    ctx.emit(OP.OH_NN_OPS_GATHER_ND, [data, coords], [out])


# -- Scatters ------------------------------------------------------------------------------------------------------

def _scatter(ctx: NodeContext, data: str, coords: str, updates: str, reduction: str) -> None:
    """data with ``updates`` written (none) or added (add) at the coordinate tuples ``coords``."""
    value = ctx.value(data)
    shape = ctx.static_shape(data, "the scatter data")
    out = ctx.output(0)
    ctx.settle(out, shape)
    if reduction not in ("none", "add"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"reduction={reduction!r} is not supported (none, add): NNRt's "
                                                     f"SCATTER_ND only sums")
    if reduction == "add" and value.dtype == np.bool_:
        raise ConversionIssue(UNSUPPORTED_DTYPE, "reduction='add' on a bool tensor is not supported")
    shape_const = ctx.constant(np.asarray(shape, np.int64), f"{out}.shape")
    scattered = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [coords, updates, shape_const], value.dtype, shape,
                       f"{out}.scattered")
    if reduction == "add":
        ctx.emit(OP.OH_NN_OPS_ADD, [data, scattered], [out])
        return
    coord_value = ctx.value(coords)
    k = coord_value.shape[-1]
    if coord_value.data is not None:
        tuples = coord_value.data.reshape(-1, k)
        if len({tuple(t) for t in tuples.tolist()}) != len(tuples):
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "reduction='none' with repeated indices (ONNX leaves the "
                                                         "result undefined) is not supported")
        written = np.zeros(shape, np.bool_)
        written[tuple(coord_value.data[..., i] for i in range(k))] = True
        mask = ctx.constant(written, f"{out}.written")
    else:
        update_shape = ctx.static_shape(updates, "the scatter updates")
        counts = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [coords, ctx.constant(np.ones(update_shape, np.float32)),
                                                       shape_const], np.float32, shape, f"{out}.counts")
        mask = ctx.emit_to(OP.OH_NN_OPS_GREATER, [counts, ctx.constant(np.zeros((), np.float32))], np.bool_, shape,
                      f"{out}.written")
    ctx.emit(OP.OH_NN_OPS_WHERE, [mask, scattered, data], [out])


@converts("ScatterND")
def scatter_nd(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    shape = ctx.static_shape(data, "the ScatterND data")
    reduction = ctx.attr("reduction", "none") if ctx.opset >= 16 else "none"
    index_shape = ctx.value(indices).shape
    if index_shape is None or not index_shape or index_shape[-1] < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"ScatterND needs the last dim of the indices, got {index_shape}")
    _index_dtype(ctx, indices, "ScatterND indices")
    k = index_shape[-1]
    if len(index_shape) == 1:  # one tuple: SCATTER_ND wants rank >= 2 indices
        indices = ctx.reshape(indices, [1, k])
        update_shape = ctx.value(updates).shape
        if update_shape is None:
            raise ConversionIssue(DYNAMIC_SHAPE, "ScatterND needs the rank of the updates")
        updates = ctx.reshape(updates, [1, *update_shape])
    indices = _wrap_negative(ctx, indices, list(shape[:k]))
    _scatter(ctx, data, indices, updates, reduction)


@converts("Scatter", "ScatterElements")
def scatter_elements(ctx: NodeContext) -> None:
    """ScatterElements, and Scatter (opsets 9-10, the same op without reduction)."""
    if fold_constant_node(ctx):
        return
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    shape = ctx.static_shape(data, "the scatter data")
    rank = len(shape)
    axis = _axis(ctx, int(ctx.attr("axis", 0)), rank)
    reduction = ctx.attr("reduction", "none") if ctx.node.op_type == "ScatterElements" and ctx.opset >= 16 else "none"
    _index_dtype(ctx, indices, f"{ctx.node.op_type} indices")
    indices = _wrap_negative(ctx, indices, shape[axis])
    coords = _coordinates(ctx, indices, axis, rank)
    _scatter(ctx, data, coords, updates, reduction)


# -- OneHot --------------------------------------------------------------------------------------------------------

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


# -- Values that only exist as constants -----------------------------------------------------------------------------

@converts("Range")
def range_(ctx: NodeContext) -> None:
    """A constant: the output length depends on the values, so start/limit/delta must be constants."""
    start, limit, delta = (_scalar(ctx.constant_input(i, what), what)
                           for i, what in enumerate(("Range start", "Range limit", "Range delta")))
    dtype = np.asarray(start).dtype
    stash = int(ctx.attr("stash_type", 1)) if ctx.opset >= 27 else 0
    if delta == 0:
        raise ConversionIssue(INVALID_MODEL, "Range delta must not be 0")
    if dtype.kind in "iu":
        values = np.arange(int(start), int(limit), int(delta), dtype=np.int64).astype(dtype)
    else:
        compute = np.float32 if (stash and dtype == np.float16) else dtype
        s, lim, d = (np.asarray(v, compute) for v in (start, limit, delta))
        count = max(int(np.ceil((lim - s) / d)), 0)
        values = (s + np.arange(count, dtype=compute) * d).astype(dtype)
    ctx.graph.add_value(_constant_value(ctx.output(0), values))


def _constant_value(name: str, array: np.ndarray):
    from ...ir.graph import Value

    array = np.ascontiguousarray(array).reshape(np.shape(array))
    return Value(name, array.dtype, tuple(array.shape), array)


@converts("EyeLike")
def eye_like(ctx: NodeContext) -> None:
    x = ctx.input(0)
    shape = ctx.static_shape(x, "EyeLike's input")
    if len(shape) != 2:
        raise ConversionIssue(INVALID_MODEL, f"EyeLike needs a 2-D input, got shape {list(shape)}")
    dtype_code = ctx.attr("dtype")
    dtype = ctx.value(x).dtype
    if dtype_code is not None:
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(dtype_code)))
            from_numpy(dtype)
        except (KeyError, TypeError, ValueError):
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"dtype={dtype_code} has no NNRt data type") from None
    k = int(ctx.attr("k", 0))
    ctx.graph.add_value(_constant_value(ctx.output(0), np.eye(shape[0], shape[1], k, dtype=dtype)))


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
            total = math.prod(ctx.static_shape(x, "Compress's input (no axis: flattened)"))
            source = ctx.reshape(x, [total])
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


# -- Depth / space -------------------------------------------------------------------------------------------------

def _nhwc(ctx: NodeContext, what: str) -> tuple[str, tuple[int, ...]]:
    x = ctx.input(0)
    if ctx.rank(x) != 4:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"{what} needs a 4-D NCHW input, {x!r} has rank {ctx.rank(x)}")
    return x, ctx.value(x).shape


def _blocksize(ctx: NodeContext) -> int:
    block = ctx.attr("blocksize")
    if block is None or int(block) < 1:
        raise ConversionIssue(INVALID_MODEL, f"blocksize={block} must be given and >= 1")
    return int(block)


def _mode(ctx: NodeContext) -> str:
    mode = ctx.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"mode={mode!r} is not supported (DCR, CRD)")
    return mode


@converts("DepthToSpace")
def depth_to_space(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x, (n, c, h, w) = _nhwc(ctx, "DepthToSpace")
    block = _blocksize(ctx)
    mode = _mode(ctx)
    if c >= 0 and c % (block * block):
        raise ConversionIssue(INVALID_MODEL, f"channels {c} are not divisible by blocksize^2 = {block * block}")
    out = ctx.output(0)
    out_nchw = [n, c // (block * block) if c >= 0 else -1, h * block if h >= 0 else -1, w * block if w >= 0 else -1]
    ctx.settle(out, out_nchw)
    x_nhwc = ctx.transpose(x, NCHW_TO_NHWC)
    y = ctx.emit_to(OP.OH_NN_OPS_DEPTH_TO_SPACE, [x_nhwc], ctx.value(x).dtype, [out_nchw[p] for p in NCHW_TO_NHWC],
               f"{out}.nhwc", {"OH_NN_DEPTH_TO_SPACE_BLOCK_SIZE": block,
                               "OH_NN_DEPTH_TO_SPACE_MODE": 0 if mode == "DCR" else 1})
    ctx.transpose(y, NHWC_TO_NCHW, output=out)


@converts("SpaceToDepth")
def space_to_depth(ctx: NodeContext) -> None:
    """SPACE_TO_DEPTH orders the new channels DCR; CRD (opset 28) re-orders them with a constant channel GATHER."""
    if fold_constant_node(ctx):
        return
    x, (n, c, h, w) = _nhwc(ctx, "SpaceToDepth")
    block = _blocksize(ctx)
    mode = _mode(ctx)
    if block < 2:
        ctx.alias(x, ctx.output(0))
        return
    if (h >= 0 and h % block) or (w >= 0 and w % block):
        raise ConversionIssue(INVALID_MODEL, f"height/width {h}x{w} are not divisible by blocksize {block}")
    if mode == "CRD" and c < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, "mode='CRD' needs the static channel count")
    out = ctx.output(0)
    out_nchw = [n, c * block * block if c >= 0 else -1, h // block if h >= 0 else -1, w // block if w >= 0 else -1]
    ctx.settle(out, out_nchw)
    dtype = ctx.value(x).dtype
    nhwc_shape = [out_nchw[p] for p in NCHW_TO_NHWC]
    x_nhwc = ctx.transpose(x, NCHW_TO_NHWC)
    y = ctx.emit_to(OP.OH_NN_OPS_SPACE_TO_DEPTH, [x_nhwc], dtype, nhwc_shape, f"{out}.nhwc",
               {"OH_NN_SPACE_TO_DEPTH_BLOCK_SIZE": block})
    if mode == "CRD":  # CRD channel k = c * b*b + (i*b + j) is DCR channel (i*b + j) * C + c
        k = np.arange(c * block * block)
        order = (k % (block * block)) * c + k // (block * block)
        y = ctx.emit_to(OP.OH_NN_OPS_GATHER, [y, ctx.constant(order.astype(np.int64), f"{out}.crd"),
                                              ctx.constant(np.asarray([3], np.int64))], dtype, nhwc_shape,
                   f"{out}.crd_nhwc")
    ctx.transpose(y, NHWC_TO_NCHW, output=out)


# -- Trilu ---------------------------------------------------------------------------------------------------------

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
    if rows < 0 or cols < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"Trilu needs the static sizes of the last two dims, got {list(shape)} "
                                             f"(-1: unknown or 0)")
    k = int(_scalar(ctx.constant_input(1, "the Trilu k"), "k")) if ctx.has_input(1) else 0
    upper = int(ctx.attr("upper", 1))
    ones = np.ones((rows, cols), np.bool_)
    mask = np.triu(ones, k) if upper else np.tril(ones, k)
    out = ctx.output(0)
    ctx.settle(out, shape)
    if mask.all():
        ctx.alias(x, out)
        return
    ctx.emit(OP.OH_NN_OPS_WHERE, [ctx.constant(mask, f"{out}.mask"), x, ctx.constant(np.zeros((), value.dtype))],
             [out])
