"""Export of the indexing NNRt ops: SLICE, STRIDED_SLICE, GATHER, GATHER_ND, SCATTER_ND, SPARSE_TO_DENSE and ONE_HOT.

Decisions:

* The importer wraps runtime indices of Gather/GatherND in a negative-index fix-up (LESS/ADD/WHERE): with runtime
  indices GATHER and GATHER_ND are functions; constant int64 indices give the plain ONNX node.
"""
from __future__ import annotations

from math import prod

import numpy as np
from onnx import helper

from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from ._common import (
    F16,
    _cast_to,
    _data,
    _dtype,
    _elem,
    _export,
    _i64,
    _in_shape,
    _index64,
    _index_vector,
    _into,
    _norm,
    _out_shape,
    _rank,
    _shape,
)

INT64_MAX = int(np.iinfo(np.int64).max)
INT64_MIN = int(np.iinfo(np.int64).min)


# -- slicing ------------------------------------------------------------------------------------------------------

@_export("OH_NN_OPS_SLICE")
def slice_(ctx: ExportContext) -> None:
    """begin/size (size -1: to the end) on ``axes`` or dims 0..len-1; begin/size may be runtime tensors."""
    rank = _rank(ctx, ctx.input(0))
    count = _shape(ctx, ctx.input(1), "begin")
    n = int(prod(count))
    axes = [_norm(a, rank) for a in ctx.args.get("axes") or []] or list(range(n))
    def build(f: FunctionBody) -> None:
        x = f.inputs[0]
        b, s = _index_vector(ctx, f, 1), _index_vector(ctx, f, 2)
        to_end = f.one("Equal", [s, _i64(f, -1)])
        end = f.one("Where", [to_end, _i64(f, INT64_MAX), f.one("Add", [b, s])])
        f.one("Slice", [x, b, end, _i64(f, axes)], "y0")

    emit_custom(ctx, build)


def _strided_plan(shape, b, e, s, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask):
    """The kernel's TF StridedSlice reading as one ONNX Slice per input dim: (starts, ends, steps)."""
    from ...errors import NNRtError
    from ...kernels.indexing import strided_slice_index

    try:
        index = strided_slice_index(shape, b, e, s, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                                    shrink_axis_mask)
    except NNRtError as exc:
        raise ExportIssue(exc.message) from None
    starts, ends, steps = [], [], []
    for item in index:
        if item is None:  # a new axis: the Reshape after the Slice inserts it
            continue
        if isinstance(item, int):  # a shrunk dim: one element, dropped by the Reshape
            starts.append(item), ends.append(item + 1), steps.append(1)
            continue
        step = 1 if item.step is None else item.step
        start = (0 if step > 0 else INT64_MAX) if item.start is None else item.start
        stop = (INT64_MAX if step > 0 else INT64_MIN) if item.stop is None else item.stop
        starts.append(start), ends.append(stop), steps.append(step)
    return starts, ends, steps


@_export("OH_NN_OPS_STRIDED_SLICE")
def strided_slice(ctx: ExportContext) -> None:
    """Constant begin/end/strides: one Slice over every input dim (the masks resolved here), then a Reshape that
    inserts the new axes and drops the shrunk ones."""
    shape = _in_shape(ctx)
    b, e, s = ([int(v) for v in ctx.constant_input(i, what).reshape(-1)]
               for i, what in ((1, "begin"), (2, "end"), (3, "strides")))
    if not len(b) == len(e) == len(s):
        raise ExportIssue(f"STRIDED_SLICE: begin {b}, end {e} and strides {s} differ in length")
    a = ctx.args
    starts, ends, steps = _strided_plan(shape, b, e, s, a["begin_mask"], a["end_mask"], a["ellipsis_mask"],
                                        a["new_axis_mask"], a["shrink_axis_mask"])
    out_shape = _out_shape(ctx)
    sliced = [len(range(*slice(st, None if en in (INT64_MAX, INT64_MIN) else en, sp).indices(n)))
              for st, en, sp, n in zip(starts, ends, steps, shape)]

    def build(f: FunctionBody) -> None:
        x = f.inputs[0]
        whole = all(st == 0 and en == INT64_MAX and sp == 1 for st, en, sp in zip(starts, ends, steps))
        if not whole:
            x = f.one("Slice", [x, _i64(f, starts), _i64(f, ends), _i64(f, list(range(len(shape)))),
                                _i64(f, steps)])
        if list(sliced) != list(out_shape):
            f.one("Reshape", [x, _i64(f, list(out_shape))], "y0")
        else:
            _into(f, x, "y0")

    emit_custom(ctx, build)


# -- gathers & scatters -------------------------------------------------------------------------------------------

@_export("OH_NN_OPS_GATHER")
def gather(ctx: ExportContext) -> None:
    axis = int(ctx.constant_input(2, "the axis").reshape(-1)[0])
    indices = _data(ctx, 1)
    if indices is not None and indices.dtype in (np.int32, np.int64) and not (indices < 0).any():
        ctx.add("Gather", [ctx.input(0), ctx.input(1)], [ctx.result(0)], main=True, axis=axis)
        return
    index_dtype = _dtype(ctx, ctx.input(1))
    emit_custom(ctx, lambda f: f.one("Gather", [f.inputs[0], _index64(f, f.inputs[1], index_dtype)], "y0",
                                     axis=axis))


@_export("OH_NN_OPS_GATHER_ND")
def gather_nd(ctx: ExportContext) -> None:
    indices = _data(ctx, 1)
    if _in_shape(ctx, 1)[-1] == 0:
        raise ExportIssue("GATHER_ND with empty index tuples (indices.shape[-1] == 0) has no ONNX form")
    if indices is not None and indices.dtype == np.int64 and not (indices < 0).any():
        ctx.add("GatherND", [ctx.input(0), ctx.input(1)], [ctx.result(0)], main=True)
        return
    index_dtype = _dtype(ctx, ctx.input(1))
    emit_custom(ctx, lambda f: f.one("GatherND", [f.inputs[0], _index64(f, f.inputs[1], index_dtype)], "y0"))


def _zeros_of_shape(f: FunctionBody, shape: str, shape_dtype, dtype) -> str:
    return f.one("ConstantOfShape", [_index64(f, shape, shape_dtype)],
                 value=helper.make_tensor("value", _elem(dtype), [1], np.zeros(1, dtype).tolist()))


@_export("OH_NN_OPS_SCATTER_ND")
def scatter_nd(ctx: ExportContext) -> None:
    """Zeros of ``shape`` with the updates added (ScatterND reduction="add": duplicates accumulate). onnxruntime
    adds neither float16 (summed in float32 here) nor bool (an OR: summed as int32, then != 0)."""
    index_dtype, shape_dtype = _dtype(ctx, ctx.input(0)), _dtype(ctx, ctx.input(2))
    dtype = _dtype(ctx, ctx.input(1))
    work = {F16: np.dtype(np.float32), np.dtype(np.bool_): np.dtype(np.int32)}.get(dtype, dtype)

    def build(f: FunctionBody) -> None:
        indices, updates, shape = f.inputs
        zeros = _zeros_of_shape(f, shape, shape_dtype, work)
        summed = f.one("ScatterND", [zeros, _index64(f, indices, index_dtype), _cast_to(f, updates, dtype, work)],
                       reduction="add")
        _cast_to(f, summed, work, dtype, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_SPARSE_TO_DENSE")
def sparse_to_dense(ctx: ExportContext) -> None:
    """Zeros of ``sparseShape`` with ``values`` written at ``indices`` (no duplicates: ScatterND without reduction)."""
    index_shape = _in_shape(ctx, 0)
    rank = int(prod(_shape(ctx, ctx.input(2), "sparseShape")))
    n = index_shape[0] if index_shape else 1
    value_count = int(prod(_in_shape(ctx, 1)))
    index_dtype, shape_dtype = _dtype(ctx, ctx.input(0)), _dtype(ctx, ctx.input(2))
    dtype = _dtype(ctx, ctx.input(1))

    def build(f: FunctionBody) -> None:
        indices, values, shape = f.inputs
        indices = f.one("Reshape", [_index64(f, indices, index_dtype), _i64(f, [n, rank])])
        if value_count == 1:
            values = f.one("Expand", [f.one("Reshape", [values, _i64(f, [])]), _i64(f, [n])])
        else:
            values = f.one("Reshape", [values, _i64(f, [n])])
        zeros = _zeros_of_shape(f, shape, shape_dtype, dtype)
        f.one("ScatterND", [zeros, indices, values], "y0")

    emit_custom(ctx, build)


# onnxruntime's Where lacks these types: select in a wider one, then cast back (exact)
_WHERE_TYPE = {np.dtype(np.bool_): np.int32, np.dtype(np.int16): np.int32, np.dtype(np.uint16): np.int32,
               np.dtype(np.uint64): np.int64}


@_export("OH_NN_OPS_ONE_HOT")
def one_hot(ctx: ExportContext) -> None:
    """Where(Unsqueeze(indices, axis) == range(depth), on, off): an index outside [0, depth) matches nothing (all
    off), unlike ONNX OneHot, whose negative indices count from the end."""
    rank = _rank(ctx, ctx.input(0))
    axis = _norm(ctx.args["axis"], rank + 1)
    out = _dtype(ctx, ctx.output(0))
    select = np.dtype(_WHERE_TYPE.get(out, out))
    index_dtype, depth_dtype = _dtype(ctx, ctx.input(0)), _dtype(ctx, ctx.input(1))
    on_dtype, off_dtype = _dtype(ctx, ctx.input(2)), _dtype(ctx, ctx.input(3))

    def build(f: FunctionBody) -> None:
        indices, depth, on, off = f.inputs
        scalar = _i64(f, [])
        hot_at = f.one("Unsqueeze", [_index64(f, indices, index_dtype), _i64(f, [axis])])
        depth = f.one("Reshape", [_index64(f, depth, depth_dtype), scalar])
        positions = f.one("Range", [_i64(f, 0), depth, _i64(f, 1)])
        positions = f.one("Reshape", [positions, _i64(f, [-1] + [1] * (rank - axis))])
        hot = f.one("Equal", [hot_at, positions])
        on = _cast_to(f, _cast_to(f, f.one("Reshape", [on, scalar]), on_dtype, out), out, select)
        off = _cast_to(f, _cast_to(f, f.one("Reshape", [off, scalar]), off_dtype, out), out, select)
        _cast_to(f, f.one("Where", [hot, on, off]), select, out, "y0")

    emit_custom(ctx, build)
