"""Export of shape/movement, indexing, generator, conversion, reduction, arg-max/top-k, matrix-product and
normalisation ops.

Every function either emits ONE standard ONNX node (``main=True``) -- only where the importer's handler for that
ONNX op gives back exactly this NNRt op and parameter set -- or an NNRt-domain function (``emit_custom``) whose body
computes exactly what the native kernel computes. Decisions:

* The importer always writes some parameters (CONCAT's axis, REDUCE_*'s keep_dims and coeff ...); the exact
  parameters travel as metadata only when the model gave some, so an op given *no* parameters whose importer adds
  them is exported as a function (the round trip would otherwise gain parameters).
* The importer wraps runtime indices of Gather/GatherND in a negative-index fix-up (LESS/ADD/WHERE): with runtime
  indices GATHER and GATHER_ND are functions; constant int64 indices give the plain ONNX node.
* float16 operands of accumulating ops (reductions, products, softmax, normalisations) are widened to float32 in
  the function body and the result narrowed back, as the native kernels do; max/min/arg-max/top-k are exact in
  any width.
* Integer reductions run in int64 (uint64 for unsigned means) and are cast back: wrapping is the same modulo 2^n.
* Channel-last BATCH_NORM / INSTANCE_NORM become the ONNX channel-first node between two Transposes (the
  importer's layout pass cancels them on the way back); not with ``nchw=True``: the function fallback (float16,
  no parameters ...) must receive the NHWC tensor itself.
* ASSERT's function fails at run time (a Gather whose indices are shifted out of range) when the condition is not
  all true, like the native op; the message is onnxruntime's, not the summarized data.
* Quantized constant inputs are read through a DequantizeLinear (``_export``); a quantized FULL_CONNECTION weight
  keeps the function form (the importer's Gemm rebuilds the weight without its quant params), its int32 bias
  scaled by input_scale * weight_scale inside the body.
"""
from __future__ import annotations

import functools
from math import prod

import numpy as np
from onnx import helper

from ...dtypes import dequantize
from ...ir.graph import Value
from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter

INT64_MAX = int(np.iinfo(np.int64).max)
INT64_MIN = int(np.iinfo(np.int64).min)
_F16 = np.dtype(np.float16)


# ----------------------------------------------------------------------------------------------------------- helpers

def _export(op_name: str, nchw=False):
    """``@exporter`` for an op computing in float: its quantized *constant* inputs (the exporter dequantizes the
    runtime ones and requantizes the outputs) are read through a DequantizeLinear first; the function then sees
    a float32 constant."""
    def register(fn):
        @functools.wraps(fn)
        def wrapped(ctx: ExportContext) -> None:
            for position, name in enumerate(ctx.node.inputs):
                value = ctx.value(name)
                if value.quant is None or value.data is None:
                    continue
                axis = (value.quant.axis or 0) if value.quant.count > 1 else None
                stored = ctx.constant(value.data, f"{name}.q")
                ctx.builder.quant_dtype[stored] = value.dtype  # (zero points take the integer type)
                real = ctx.builder.dequantize(stored, value.quant, axis)
                data = dequantize(value.data, value.quant.scales, value.quant.zero_points, axis)
                ctx.graph.values[real] = Value(real, np.dtype(np.float32), value.shape, data)
                ctx.node.inputs[position] = real
                ctx.graph.values[real].source_quant = value.quant  # (read by _source_quant)
            fn(ctx)
        return exporter(op_name, nchw=nchw)(wrapped)
    return register


def _source_quant(ctx: ExportContext, position: int):
    """The quant params of input ``position`` before it was dequantized for this op (None: it was not)."""
    name = ctx.input(position)
    quant = getattr(ctx.value(name), "source_quant", None)
    if quant is not None:
        return quant
    original = next((k for k, v in ctx.builder.dequantized.items() if v == name), None)
    return None if original is None else ctx.value(original).quant


def _elem(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _shape(ctx: ExportContext, name: str, what: str = "tensor") -> tuple[int, ...]:
    shape = ctx.value(name).shape
    if shape is None or any(d < 0 for d in shape):
        raise ExportIssue(f"{ctx.node.op.name}: {what} {name!r} needs a static shape to export (got {shape})")
    return tuple(int(d) for d in shape)


def _rank(ctx: ExportContext, name: str) -> int:
    shape = ctx.value(name).shape
    if shape is None:
        raise ExportIssue(f"{ctx.node.op.name}: the rank of {name!r} is unknown")
    return len(shape)


def _in_shape(ctx: ExportContext, position: int = 0) -> tuple[int, ...]:
    return _shape(ctx, ctx.input(position), f"input #{position}")


def _out_shape(ctx: ExportContext, position: int = 0) -> tuple[int, ...]:
    return _shape(ctx, ctx.output(position), f"output #{position}")


def _dtype(ctx: ExportContext, name: str) -> np.dtype:
    return np.dtype(ctx.value(name).dtype)


def _data(ctx: ExportContext, position: int):
    return ctx.value(ctx.input(position)).data


def _norm(axis, rank: int) -> int:
    axis = int(np.asarray(axis).reshape(-1)[0]) if not isinstance(axis, (int, np.integer)) else int(axis)
    return axis + rank if axis < 0 else axis


def _scalar(value):
    if isinstance(value, (list, tuple, np.ndarray)):
        flat = np.asarray(value).reshape(-1)
        return None if flat.size == 0 else flat[0].item()
    return value


def _i64(f: FunctionBody, values) -> str:
    return f.constant(np.asarray(values, np.int64))


def _cast(f: FunctionBody, name: str, dtype) -> str:
    return f.one("Cast", [name], to=_elem(dtype))


def _cast_to(f: FunctionBody, name: str, source, target, output: str | None = None) -> str:
    """``name`` (of dtype ``source``) as ``target``, written to ``output`` if given (when the types agree, the
    node computing ``name`` writes ``output`` directly; an Identity only for a function input)."""
    if np.dtype(source) != np.dtype(target):
        return f.one("Cast", [name], output, to=_elem(target))
    if output is None:
        return name
    if name in f.inputs or not any(name in node.output for node in f.nodes):
        return f.one("Identity", [name], output)
    for node in f.nodes:  # rename the intermediate everywhere (an output may be read inside the body too)
        for names in (node.input, node.output):
            for i, other in enumerate(names):
                if other == name:
                    names[i] = output
    return output


def _into(f: FunctionBody, name: str, output: str) -> str:
    """``name`` written to ``output`` (see _cast_to)."""
    return _cast_to(f, name, np.int8, np.int8, output)


def _index64(f: FunctionBody, name: str, dtype) -> str:
    return name if np.dtype(dtype) == np.int64 else _cast(f, name, np.int64)


def _index_vector(ctx: ExportContext, f: FunctionBody, position: int) -> str:
    """Input ``position`` (an integer tensor of shapes, axes or counts) as a 1-D int64 tensor. (No Reshape: a
    Reshape feeding the shape input of another Reshape or an Unsqueeze trips onnxruntime's reshape fusion.)"""
    name = _index64(f, f.inputs[position], _dtype(ctx, ctx.input(position)))
    rank = _rank(ctx, ctx.input(position))
    if rank == 1:
        return name
    if rank == 0:
        return f.one("Unsqueeze", [name, _i64(f, [0])])
    return f.one("Squeeze", [f.one("Flatten", [name], axis=0), _i64(f, [0])])


def _work(dtype) -> np.dtype:
    return np.dtype(np.float32) if np.dtype(dtype) == _F16 else np.dtype(dtype)


def _widen(f: FunctionBody, name: str, dtype) -> str:
    """float16 -> float32 (the native kernels' accumulation type); anything else as it is."""
    return _cast(f, name, np.float32) if np.dtype(dtype) == _F16 else name


def _has_params(ctx: ExportContext) -> bool:
    """The node carries parameters, so their metadata restores them exactly on re-import."""
    return bool(ctx.node.params)


# -------------------------------------------------------------------------------------------- reshape and friends

@_export("OH_NN_OPS_RESHAPE")
def reshape(ctx: ExportContext) -> None:
    target = _data(ctx, 1)
    if target is not None and target.size and all(d >= 0 for d in _out_shape(ctx)):
        shape = ctx.input(1) if target.dtype == np.int64 and target.ndim == 1 else \
            ctx.constant(np.asarray(target, np.int64).reshape(-1), f"{ctx.input(1)}.i64")
        ctx.add("Reshape", [ctx.input(0), shape], [ctx.result(0)], main=True)
        return
    def build(f: FunctionBody) -> None:
        f.one("Reshape", [f.inputs[0], _index_vector(ctx, f, 1)], "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_CONCAT")
def concat(ctx: ExportContext) -> None:
    axis = int(ctx.args["axis"])
    if _has_params(ctx):
        ctx.add("Concat", list(ctx.node.inputs), [ctx.result(0)], main=True, axis=axis)
        return
    emit_custom(ctx, lambda f: f.one("Concat", f.inputs, "y0", axis=axis))


@_export("OH_NN_OPS_SPLIT")
def split(ctx: ExportContext) -> None:
    rank = _rank(ctx, ctx.input(0))
    axis = _norm(ctx.args["axis"], rank)
    sizes = [_out_shape(ctx, i)[axis] for i in range(len(ctx.node.outputs))]
    if len(sizes) > 1 and _has_params(ctx):
        ctx.add("Split", [ctx.input(0), ctx.constant(np.asarray(sizes, np.int64), "split")], ctx.node.outputs,
                main=True, axis=axis)
        return

    def build(f: FunctionBody) -> None:
        if len(sizes) == 1:
            f.one("Identity", f.inputs, "y0")
        else:
            f.add("Split", [f.inputs[0], _i64(f, sizes)], f.outputs, axis=axis)

    emit_custom(ctx, build)


@_export("OH_NN_OPS_STACK")
def stack(ctx: ExportContext) -> None:
    axis = _norm(ctx.args["axis"], _rank(ctx, ctx.input(0)) + 1)

    def build(f: FunctionBody) -> None:
        axes = _i64(f, [axis])
        f.one("Concat", [f.one("Unsqueeze", [x, axes]) for x in f.inputs], "y0", axis=axis)

    emit_custom(ctx, build)


@_export("OH_NN_OPS_UNSTACK")
def unstack(ctx: ExportContext) -> None:
    axis = _norm(ctx.args["axis"], _rank(ctx, ctx.input(0)))

    def build(f: FunctionBody) -> None:
        for i, y in enumerate(f.outputs):
            f.one("Gather", [f.inputs[0], f.constant(np.asarray(i, np.int64))], y, axis=axis)

    emit_custom(ctx, build)


@_export("OH_NN_OPS_SQUEEZE")
def squeeze(ctx: ExportContext) -> None:
    """Only the listed (or, with none listed, all) axes of length 1 go: a listed axis of another length stays."""
    shape = _in_shape(ctx)
    listed = ctx.args.get("axis") or []
    candidates = [_norm(a, len(shape)) for a in listed] if listed else range(len(shape))
    drop = sorted({a for a in candidates if shape[a] == 1})

    def build(f: FunctionBody) -> None:
        if drop:
            f.one("Squeeze", [f.inputs[0], _i64(f, drop)], "y0")
        else:
            f.one("Identity", f.inputs, "y0")

    emit_custom(ctx, build)


def _unsqueeze_body(axes):
    def build(f: FunctionBody) -> None:
        if axes:
            f.one("Unsqueeze", [f.inputs[0], _i64(f, axes)], "y0")
        else:
            f.one("Identity", f.inputs[:1], "y0")
    return build


@_export("OH_NN_OPS_UNSQUEEZE")
def unsqueeze(ctx: ExportContext) -> None:
    axis = ctx.args.get("axis")
    axes = [int(axis)] if isinstance(axis, (int, np.integer)) else [int(a) for a in (axis or [])]
    emit_custom(ctx, _unsqueeze_body(axes))


@_export("OH_NN_OPS_EXPAND_DIMS")
def expand_dims(ctx: ExportContext) -> None:
    def build(f: FunctionBody) -> None:
        f.one("Unsqueeze", [f.inputs[0], _index_vector(ctx, f, 1)], "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_FLATTEN")
def flatten(ctx: ExportContext) -> None:
    axis = int(ctx.args["axis"])
    emit_custom(ctx, lambda f: f.one("Flatten", f.inputs, "y0", axis=axis))


@exporter("OH_NN_OPS_TRANSPOSE")
def transpose(ctx: ExportContext) -> None:
    """Only reached with a runtime permutation (the exporter emits a constant one itself)."""
    raise ExportIssue("TRANSPOSE with a runtime permutation has no ONNX form (Transpose's perm is an attribute)")


# ------------------------------------------------------------------------------------------------------- slicing

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


# ------------------------------------------------------------------------------------------- tiling/broadcasting

@_export("OH_NN_OPS_TILE")
def tile(ctx: ExportContext) -> None:
    shape = _in_shape(ctx)
    reps = _data(ctx, 1)
    if reps is not None and reps.size == len(shape) and any(int(r) != 1 for r in reps.reshape(-1)):
        ctx.add("Tile", [ctx.input(0), ctx.constant(np.asarray(reps, np.int64).reshape(-1), "repeats")],
                [ctx.result(0)], main=True)
        return
    m = int(prod(_shape(ctx, ctx.input(1), "multiples")))
    padded = [1] * (m - len(shape)) + list(shape)

    def build(f: FunctionBody) -> None:
        x = f.inputs[0]
        if len(padded) != len(shape):
            x = f.one("Reshape", [x, _i64(f, padded)])
        f.one("Tile", [x, _index_vector(ctx, f, 1)], "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_BROADCAST_TO")
def broadcast_to(ctx: ExportContext) -> None:
    shape, out_shape = _in_shape(ctx), _out_shape(ctx)
    if _has_params(ctx) and tuple(shape) != tuple(out_shape) and out_shape:
        ctx.add("Expand", [ctx.input(0), ctx.constant(np.asarray(out_shape, np.int64), "shape")], [ctx.result(0)],
                main=True)
        return
    emit_custom(ctx, lambda f: f.one("Expand", [f.inputs[0], _i64(f, list(out_shape))], "y0"))


# ---------------------------------------------------------------------------------------------- gathers & scatters

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
    work = {_F16: np.dtype(np.float32), np.dtype(np.bool_): np.dtype(np.int32)}.get(dtype, dtype)

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


# ---------------------------------------------------------------------------------------------------- generators

@_export("OH_NN_OPS_FILL")
def fill(ctx: ExportContext) -> None:
    def build(f: FunctionBody) -> None:
        f.one("Expand", [f.one("Reshape", [f.inputs[0], _i64(f, [])]), _index_vector(ctx, f, 1)], "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_SHAPE")
def shape(ctx: ExportContext) -> None:
    out = _dtype(ctx, ctx.output(0))
    emit_custom(ctx, lambda f: _cast_to(f, f.one("Shape", f.inputs), np.int64, out, "y0"))


@_export("OH_NN_OPS_RANK")
def rank(ctx: ExportContext) -> None:
    out = _dtype(ctx, ctx.output(0))
    out_shape = _out_shape(ctx)

    def build(f: FunctionBody) -> None:
        r = _cast_to(f, f.one("Size", [f.one("Shape", f.inputs)]), np.int64, out)
        if out_shape:
            f.one("Reshape", [r, _i64(f, list(out_shape))], "y0")
        else:
            _into(f, r, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_RANGE")
def range_(ctx: ExportContext) -> None:
    """[start, limit) by delta computed in int64, then cast to the output type (the input's values are unused)."""
    start, limit, delta = (int(ctx.args[k]) for k in ("start", "limit", "delta"))
    out = _dtype(ctx, ctx.output(0))

    def build(f: FunctionBody) -> None:
        values = f.one("Range", [_i64(f, start), _i64(f, limit), _i64(f, delta)])
        _cast_to(f, values, np.int64, out, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_CONSTANT_OF_SHAPE")
def constant_of_shape(ctx: ExportContext) -> None:
    out = _dtype(ctx, ctx.output(0))
    values = list(ctx.args.get("value") or [])
    fill_value = np.asarray([values[0] if values else 0.0], np.float64).astype(out)
    value = helper.make_tensor("value", _elem(out), [1], fill_value.tolist())
    shape_dtype = _dtype(ctx, ctx.input(0))
    if shape_dtype == np.int64 and _data(ctx, 0) is None and _has_params(ctx):
        ctx.add("ConstantOfShape", [ctx.input(0)], [ctx.result(0)], main=True, value=value)
        return
    emit_custom(ctx, lambda f: f.one("ConstantOfShape", [_index64(f, f.inputs[0], shape_dtype)], "y0", value=value))


# ------------------------------------------------------------------------------------------------------ conversion

@_export("OH_NN_OPS_CAST")
def cast(ctx: ExportContext) -> None:
    """C conversion to the output's type (float -> int truncates, -> bool is != 0: ONNX Cast does the same)."""
    source, target = _dtype(ctx, ctx.input(0)), _dtype(ctx, ctx.output(0))
    if ctx.value(ctx.output(0)).quant is not None:
        raise ExportIssue("CAST to a quantized output is not exported yet")
    if source != target:
        ctx.add("Cast", [ctx.input(0)], [ctx.result(0)], main=True, to=_elem(target))
        return
    emit_custom(ctx, lambda f: f.one("Identity", f.inputs[:1], "y0"))


@exporter("OH_NN_OPS_QUANT_DTYPE_CAST")
def quant_dtype_cast(ctx: ExportContext) -> None:
    """A quantized input is read through the exporter's DequantizeLinear, a quantized output written through its
    QuantizeLinear (round half to even, saturating: the kernel's rint + clamp for 8 bits), both carrying the quant
    params for the re-import; the function in between only converts float types. Per-channel params run along the
    op's ``axis``."""
    x_name, y_name = ctx.input(0), ctx.output(0)
    x, y = ctx.value(x_name), ctx.value(y_name)
    rank = _rank(ctx, ctx.input(0))
    axis = _norm(_scalar(ctx.args["axis"]), rank) if rank else 0
    src = np.dtype(x.dtype)
    dst = np.dtype(y.dtype)
    for value, dtype, what in ((x, src, "input"), (y, dst, "output")):
        if dtype.kind not in "iu":
            continue
        if value.quant is None:
            raise ExportIssue(f"QUANT_DTYPE_CAST: the {dtype.name} {what} has no quant params")
        if dtype not in (np.int8, np.uint8) or any(int(b) != 8 for b in value.quant.num_bits or [8]):
            raise ExportIssue(f"QUANT_DTYPE_CAST: a {dtype.name} {what} (Quantize/DequantizeLinear: 8-bit int8/uint8)")
    per_channel = lambda quant: axis if quant.count > 1 else None  # noqa: E731
    builder = ctx.builder
    real = src
    if src.kind in "iu":
        ctx.node.inputs[0] = builder.dequantize(x_name, x.quant, per_channel(x.quant))
        real = np.dtype(np.float32)
    target = dst
    if dst.kind in "iu":
        ctx.node.outputs[0] = builder.fresh(f"{y_name}.f")
        target = np.dtype(np.float32)
    emit_custom(ctx, lambda f: _cast_to(f, f.inputs[0], real, target, "y0"))
    if dst.kind in "iu":
        builder.quant_dtype[ctx.node.outputs[0]] = dst  # (zero points take the integer type)
        builder.quantize(ctx.node.outputs[0], y_name, y.quant, per_channel(y.quant))


# ---------------------------------------------------------------------------------------------------------- assert

@_export("OH_NN_OPS_ASSERT")
def assert_(ctx: ExportContext) -> None:
    """Output: the condition in the output type, read through a Gather whose indices are shifted out of range
    (so the run fails) unless every element is non-zero."""
    cond = _dtype(ctx, ctx.input(0))
    out = _dtype(ctx, ctx.output(0))
    n = int(prod(_in_shape(ctx)))
    out_shape = list(_out_shape(ctx))

    def build(f: FunctionBody) -> None:
        c = f.inputs[0]
        truth = f.one("Cast", [_cast_to(f, c, cond, np.bool_)], to=_elem(np.int64))
        every = f.one("ReduceMin", [truth], keepdims=0)  # 1 when all true, else 0
        shift = f.one("Mul", [f.one("Sub", [_i64(f, 1), every]), _i64(f, n)])
        positions = f.one("Add", [f.constant(np.arange(n, dtype=np.int64)), shift])
        flat = f.one("Reshape", [_cast_to(f, c, cond, out), _i64(f, [-1])])
        f.one("Reshape", [f.one("Gather", [flat, positions]), _i64(f, out_shape)], "y0")

    emit_custom(ctx, build)


# ------------------------------------------------------------------------------------------------------ reductions

_ONNX_REDUCE = {"mean": "ReduceMean", "sum": "ReduceSum", "prod": "ReduceProd", "max": "ReduceMax",
                "min": "ReduceMin", "l2": "ReduceL2"}
# dtypes onnxruntime reduces natively exactly like the kernel (float16 accumulation differs; int means truncate
# differently; max/min are exact in any width it supports)
_NATIVE_REDUCE = {
    "mean": {np.dtype(np.float32), np.dtype(np.float64)},
    "sum": {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64)},
    "prod": {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64)},
    "max": {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64)},
    "min": {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64)},
    "l2": {np.dtype(np.float32), np.dtype(np.float64)},
}


def _reduce_axes(ctx: ExportContext, rank: int, reduce_to_end: bool) -> list[int] | None:
    """The reduced axes (constant axis input), None for a runtime axis input."""
    data = _data(ctx, 1)
    if data is None:
        return None
    axes = [_norm(a, rank) for a in np.asarray(data).reshape(-1)]
    if reduce_to_end:
        axes = list(range(axes[0], rank))
    return axes or list(range(rank))


def _reduction_body(f: FunctionBody, mode: str, x: str, dtype: np.dtype, axes: str, keep: bool, count: int | None,
                    coeff: float, out: np.dtype, output: str) -> None:
    """reduce(x) * coeff in the kernel's arithmetic, written to ``output`` as ``out``."""
    kind = dtype.kind
    if mode == "all":  # 1/0 in the input type (float, or int64 for integers), then scaled like the others
        truth = f.one("Cast", [_cast_to(f, x, dtype, np.bool_)], to=_elem(np.int32))
        result = f.one("ReduceMin", [truth, axes], keepdims=int(keep))
        if coeff == 1.0 or kind == "b":
            _cast_to(f, result, np.int32, out, output)
            return
        work = _work(dtype) if kind == "f" else np.dtype(np.int64)
        scale = np.asarray(coeff if kind == "f" else int(coeff), work)
        _cast_to(f, f.one("Mul", [_cast(f, result, work), f.constant(scale)]), work, out, output)
        return
    if kind == "f":
        work = _work(dtype)
        result = f.one(_ONNX_REDUCE[mode], [_widen(f, x, dtype), axes], keepdims=int(keep))
        if coeff != 1.0:
            result = f.one("Mul", [result, f.constant(np.asarray(coeff, work))])
        _cast_to(f, result, work, out, output)
        return
    if kind == "b":  # max/min of bools
        result = f.one(_ONNX_REDUCE[mode], [_cast(f, x, np.int32), axes], keepdims=int(keep))
        _cast_to(f, result, np.int32, out, output)
        return
    work = np.dtype(np.int64)
    wide = _cast_to(f, x, dtype, work)
    if mode == "mean":  # truncating integer mean: an int64 (uint64 for unsigned inputs) Div truncates toward zero
        result = f.one("ReduceSum", [wide, axes], keepdims=int(keep))
        if kind == "u":
            work = np.dtype(np.uint64)
            result = _cast(f, result, work)
        result = f.one("Div", [result, f.constant(np.asarray(count, work))])
    else:
        result = f.one(_ONNX_REDUCE[mode], [wide, axes], keepdims=int(keep))
    if coeff != 1.0:
        result = f.one("Mul", [result, f.constant(np.asarray(int(coeff), work))])
    _cast_to(f, result, work, out, output)


def _reduce(ctx: ExportContext, mode: str) -> None:
    x = ctx.input(0)
    shape = _in_shape(ctx)
    rank = len(shape)
    dtype = _dtype(ctx, x)
    out = _dtype(ctx, ctx.output(0))
    keep = bool(ctx.args["keep_dims"])
    to_end = bool(ctx.args.get("reduce_to_end", False))
    coeff = float(_scalar(ctx.args.get("coeff", 1.0)))
    axes = _reduce_axes(ctx, rank, to_end)
    if (mode != "all" and axes is not None and not to_end and coeff == 1.0 and _has_params(ctx)
            and dtype in _NATIVE_REDUCE[mode]):
        ctx.add(_ONNX_REDUCE[mode], [x, ctx.constant(np.asarray(axes, np.int64), "axes")], [ctx.result(0)],
                main=True, keepdims=int(keep))
        return
    if axes is None and (to_end or (mode == "mean" and dtype.kind in "iu")):
        raise ExportIssue(f"{ctx.node.op.name}: reduce_to_end or an integer mean needs a constant axis input")
    if dtype.kind in "iub" and coeff != 1.0 and not float(coeff).is_integer():
        raise ExportIssue(f"{ctx.node.op.name}: coeff {coeff} on {dtype.name} (the kernel rejects it too)")
    count = None if axes is None else int(prod(shape[a] for a in axes))

    def build(f: FunctionBody) -> None:
        if axes is not None:
            axis_input = _i64(f, axes)
        else:
            axis_input = _index_vector(ctx, f, 1)
        _reduction_body(f, mode, f.inputs[0], dtype, axis_input, keep, count, coeff, out, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_REDUCE_MEAN")
def reduce_mean(ctx: ExportContext) -> None:
    _reduce(ctx, "mean")


@_export("OH_NN_OPS_REDUCE_SUM")
def reduce_sum(ctx: ExportContext) -> None:
    _reduce(ctx, "sum")


@_export("OH_NN_OPS_REDUCE_PROD")
def reduce_prod(ctx: ExportContext) -> None:
    _reduce(ctx, "prod")


@_export("OH_NN_OPS_REDUCE_MAX")
def reduce_max(ctx: ExportContext) -> None:
    _reduce(ctx, "max")


@_export("OH_NN_OPS_REDUCE_MIN")
def reduce_min(ctx: ExportContext) -> None:
    _reduce(ctx, "min")


@_export("OH_NN_OPS_REDUCE_L2")
def reduce_l2(ctx: ExportContext) -> None:
    _reduce(ctx, "l2")


@_export("OH_NN_OPS_REDUCE_ALL")
def reduce_all(ctx: ExportContext) -> None:
    _reduce(ctx, "all")


@_export("OH_NN_OPS_ALL")
def all_(ctx: ExportContext) -> None:
    """all(x != 0) over the axis input (runtime axes allowed; empty = every axis), in the declared output type."""
    dtype = _dtype(ctx, ctx.input(0))
    out = _dtype(ctx, ctx.output(0))
    keep = bool(_scalar(ctx.args["keep_dims"]))
    def build(f: FunctionBody) -> None:
        _reduction_body(f, "all", f.inputs[0], dtype, _index_vector(ctx, f, 1), keep, None, 1.0, out, "y0")

    emit_custom(ctx, build)


# -------------------------------------------------------------------------------------------- arg max and top k

_ARGMAX_NATIVE = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64)}
_TOPK_NATIVE = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.int16, np.uint8, np.int32,
                                      np.int64)}


def _sortable(f: FunctionBody, x: str, dtype: np.dtype, native) -> tuple[str, np.dtype]:
    """x in a type onnxruntime sorts (int64 for the other integers: order-preserving below 2^63)."""
    if dtype in native:
        return x, dtype
    return _cast(f, x, np.int64), np.dtype(np.int64)


@_export("OH_NN_OPS_ARG_MAX")
def arg_max(ctx: ExportContext) -> None:
    """top_k 1: ArgMax (first maximum) or ReduceMax (out_max_value); top_k > 1: TopK (ties: lower index first),
    the axis kept with size top_k."""
    shape = _in_shape(ctx)
    axis = _norm(_scalar(ctx.args["axis"]), len(shape))
    keep = bool(_scalar(ctx.args["keep_dims"]))
    k = int(_scalar(ctx.args["top_k"]))
    values = bool(_scalar(ctx.args["out_max_value"]))
    dtype = _dtype(ctx, ctx.input(0))
    out = _dtype(ctx, ctx.output(0))
    if k == 1 and not values and out == np.int64 and dtype in _ARGMAX_NATIVE and _has_params(ctx):
        ctx.add("ArgMax", [ctx.input(0)], [ctx.result(0)], main=True, axis=axis, keepdims=int(keep))
        return

    def build(f: FunctionBody) -> None:
        x = f.inputs[0]
        if k == 1 and values:
            sortable, kind = _sortable(f, x, dtype, _NATIVE_REDUCE["max"])
            result = f.one("ReduceMax", [sortable, _i64(f, [axis])], keepdims=int(keep))
            _cast_to(f, result, kind, out, "y0")
        elif k == 1:
            sortable, _ = _sortable(f, x, dtype, _ARGMAX_NATIVE)
            _cast_to(f, f.one("ArgMax", [sortable], axis=axis, keepdims=int(keep)), np.int64, out, "y0")
        else:
            sortable, kind = _sortable(f, x, dtype, _TOPK_NATIVE)
            top, index = f.add("TopK", [sortable, _i64(f, [k])], [f.fresh(), f.fresh()], axis=axis)
            if values:
                _cast_to(f, top, kind, out, "y0")
            else:
                _cast_to(f, index, np.int64, out, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_TOP_K")
def top_k(ctx: ExportContext) -> None:
    """TopK largest, sorted; ``sorted=false`` gives the same k in ascending order (a second TopK, smallest first,
    over the k values keeps equal values in ascending index order)."""
    shape = _in_shape(ctx)
    axis = _norm(_scalar(ctx.args["axis"]), len(shape))
    ordered = bool(_scalar(ctx.args["sorted"]))
    dtype = _dtype(ctx, ctx.input(0))
    index_out = _dtype(ctx, ctx.output(1))
    k = _data(ctx, 1)
    if k is not None and ordered and index_out == np.int64 and dtype in _TOPK_NATIVE and _has_params(ctx) \
            and int(k.reshape(-1)[0]) > 0:
        k_input = ctx.constant(np.asarray(k, np.int64).reshape(1), "k")
        ctx.add("TopK", [ctx.input(0), k_input], ctx.node.outputs, main=True, axis=axis, largest=1, sorted=1)
        return
    def build(f: FunctionBody) -> None:
        x, kk = f.inputs[0], _index_vector(ctx, f, 1)
        sortable, kind = _sortable(f, x, dtype, _TOPK_NATIVE)
        top, index = f.add("TopK", [sortable, kk], [f.fresh(), f.fresh()], axis=axis)
        if not ordered:
            top, order = f.add("TopK", [top, kk], [f.fresh(), f.fresh()], axis=axis, largest=0)
            index = f.one("GatherElements", [index, order], axis=axis)
        _cast_to(f, top, kind, dtype, "y0")
        _cast_to(f, index, np.int64, index_out, "y1")

    emit_custom(ctx, build)


# ------------------------------------------------------------------------------------------------ matrix products

_MATMUL_NATIVE = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64)}


@_export("OH_NN_OPS_MATMUL")
def matmul(ctx: ExportContext) -> None:
    a, b = ctx.input(0), ctx.input(1)
    dtype = _dtype(ctx, a)
    ranks = [_rank(ctx, ctx.input(0)), _rank(ctx, ctx.input(1))]
    flags = [bool(_scalar(ctx.args["transpose_a"])) and ranks[0] >= 2,
             bool(_scalar(ctx.args["transpose_b"])) and ranks[1] >= 2]
    if not any(flags) and dtype in _MATMUL_NATIVE:
        ctx.add("MatMul", [a, b], [ctx.result(0)], main=True)
        return

    def build(f: FunctionBody) -> None:
        operands = []
        for name, flag, rank in zip(f.inputs, flags, ranks):
            name = _widen(f, name, dtype)
            if flag:
                name = f.one("Transpose", [name], perm=list(range(rank - 2)) + [rank - 1, rank - 2])
            operands.append(name)
        _cast_to(f, f.one("MatMul", operands), _work(dtype), dtype, "y0")

    emit_custom(ctx, build)


def _bias_scale(ctx: ExportContext) -> np.ndarray | None:
    """A quantized layer's integer bias without quant params is read with the scale input_scale * weight_scale
    (the kernel's reading); None when the bias is not such a bias."""
    bias = ctx.value(ctx.input(2))
    q_in, q_w = _source_quant(ctx, 0), _source_quant(ctx, 1)
    if bias.dtype.kind not in "iu" or bias.quant is not None or q_in is None or q_w is None:
        return None
    s_in = np.asarray(q_in.scales, np.float64).reshape(-1)
    s_w = np.asarray(q_w.scales, np.float64).reshape(-1)
    if s_in.size != 1:
        raise ExportIssue("FULL_CONNECTION: a per-channel quantized input gives no bias scale")
    return s_in[0] * s_w


@_export("OH_NN_OPS_FULL_CONNECTION")
def full_connection(ctx: ExportContext) -> None:
    """Gemm(transB) for a 2-D input with constant float weight (and bias); otherwise a function: the input as rows
    of in_channels values (or flattened from ``axis`` with use_axis), times weight^T, plus bias (an integer bias of
    a quantized layer times input_scale * weight_scale). A quantized weight always takes the function (the
    importer's Gemm rebuilds the weight and would drop its quant params)."""
    x = ctx.input(0)
    shape = ctx.value(x).shape or ()  # leading dims may be dynamic (a batch)
    dtype = _dtype(ctx, x)
    has_bias = len(ctx.node.inputs) > 2
    bias_scale = _bias_scale(ctx) if has_bias else None
    n_out, k = _in_shape(ctx, 1)
    weight_ok = _data(ctx, 1) is not None and _source_quant(ctx, 1) is None
    bias_ok = not has_bias or (_data(ctx, 2) is not None and _rank(ctx, ctx.input(2)) <= 1
                               and _dtype(ctx, ctx.input(2)) == dtype)
    if (len(shape) == 2 and shape[1] == k and not ctx.args.get("use_axis") and weight_ok and bias_ok
            and _has_params(ctx) and dtype in (np.float32, np.float64)):
        ctx.add("Gemm", list(ctx.node.inputs), [ctx.result(0)], main=True, transB=1)
        return
    out_shape = list(ctx.value(ctx.output(0)).shape)
    if sum(d < 0 for d in out_shape) > 1:
        raise ExportIssue(f"{ctx.node.op.name}: output dims {out_shape} have more than one dynamic dim")
    work = _work(dtype)

    def build(f: FunctionBody) -> None:
        rows = f.one("Reshape", [_widen(f, f.inputs[0], dtype), _i64(f, [-1, k])])
        weight = f.one("Transpose", [_widen(f, f.inputs[1], dtype)], perm=[1, 0])
        y = f.one("MatMul", [rows, weight])
        if has_bias:
            bias = f.one("Reshape", [_cast_to(f, f.inputs[2], _dtype(ctx, ctx.input(2)), work), _i64(f, [n_out])])
            if bias_scale is not None:
                bias = f.one("Mul", [bias, f.constant(np.asarray(bias_scale, work).reshape(-1))])
            y = f.one("Add", [y, bias])
        y = _cast_to(f, y, work, dtype)
        if out_shape != [int(prod(out_shape[:-1])), n_out] or len(out_shape) != 2:
            f.one("Reshape", [y, _i64(f, out_shape)], "y0")
        else:
            _into(f, y, "y0")

    emit_custom(ctx, build)


# ---------------------------------------------------------------------------------------------------- softmax

def _softmax(ctx: ExportContext, op_type: str) -> None:
    if ctx.opset < 13:
        raise ExportIssue(f"{op_type} on one axis needs opset >= 13")
    rank = _rank(ctx, ctx.input(0))
    axis = _scalar(ctx.args["axis"])
    axis = _norm(-1 if axis is None else axis, rank)
    dtype = _dtype(ctx, ctx.input(0))
    if _has_params(ctx) and dtype != _F16:
        ctx.add(op_type, [ctx.input(0)], [ctx.result(0)], main=True, axis=axis)
        return

    def build(f: FunctionBody) -> None:
        _cast_to(f, f.one(op_type, [_widen(f, f.inputs[0], dtype)], axis=axis), _work(dtype), dtype, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_SOFTMAX")
def softmax(ctx: ExportContext) -> None:
    _softmax(ctx, "Softmax")


@_export("OH_NN_OPS_LOG_SOFTMAX")
def log_softmax(ctx: ExportContext) -> None:
    _softmax(ctx, "LogSoftmax")


# ------------------------------------------------------------------------------------------------ normalisations

def _channel_first(ctx: ExportContext, op_type: str, stats: list[str], **attrs) -> None:
    """The ONNX channel-first node between Transposes (NHWC -> NCHW before, back after); rank 2 needs none."""
    rank = _rank(ctx, ctx.input(0))
    x = ctx.input(0)
    if rank == 2:
        ctx.add(op_type, [x, *stats], [ctx.result(0)], main=True, **attrs)
        return
    to_first = [0, rank - 1, *range(1, rank - 1)]
    back = [0, *range(2, rank), 1]
    moved = ctx.fresh(f"{x}.nchw")
    ctx.add("Transpose", [x], [moved], perm=to_first)
    normalized = ctx.fresh(f"{ctx.output(0)}.nchw")
    ctx.add(op_type, [moved, *stats], [normalized], main=True, **attrs)
    ctx.add("Transpose", [normalized], [ctx.result(0)], perm=back)


def _per_channel(f: FunctionBody, name: str, dtype, work, c: int) -> str:
    return f.one("Reshape", [_cast_to(f, name, dtype, work), _i64(f, [c])])


def _batch_norm_is_standard(node, graph) -> bool:
    """A 4-D float batch norm with per-channel statistics of its dtype and explicit parameters exports as the ONNX
    node on the NCHW tensor: the exporter wraps it in transposes the layout pass cancels against its neighbours."""
    values = [graph.values[n] for n in node.inputs]
    x = values[0]
    if x.shape is None or len(x.shape) != 4 or x.dtype not in (np.float32, np.float64) or not node.params:
        return False
    return all(v.shape == (x.shape[-1],) and v.dtype == x.dtype and v.quant is None for v in values[1:])


@_export("OH_NN_OPS_BATCH_NORM", nchw=_batch_norm_is_standard)
def batch_norm(ctx: ExportContext) -> None:
    """Channel-last inference batch norm: BatchNormalization (on the NCHW tensor for 4-D inputs, else between
    transposes), or a function computing the kernel's x * inv + (offset - mean * inv), inv = scale / sqrt(var + eps)."""
    if ctx.node.layout == "NCHW":
        ctx.add("BatchNormalization", list(ctx.node.inputs), [ctx.result(0)], main=True,
                epsilon=float(_scalar(ctx.args["epsilon"])))
        return
    shape = _in_shape(ctx)
    dtype = _dtype(ctx, ctx.input(0))
    eps = float(_scalar(ctx.args["epsilon"]))
    c = shape[-1] if shape else 0
    stat_dtypes = [_dtype(ctx, ctx.input(i)) for i in range(1, 5)]
    stats_ok = all(_in_shape(ctx, i) == (c,) for i in range(1, 5)) and all(d == dtype for d in stat_dtypes)
    if len(shape) >= 2 and stats_ok and _has_params(ctx) and dtype in (np.float32, np.float64):
        _channel_first(ctx, "BatchNormalization", list(ctx.node.inputs[1:]), epsilon=eps)
        return
    work = _work(dtype)

    def build(f: FunctionBody) -> None:
        x, scale, offset, mean, var = f.inputs
        scale, offset, mean, var = (_per_channel(f, t, d, work, c)
                                    for t, d in zip((scale, offset, mean, var), stat_dtypes))
        inv = f.one("Div", [scale, f.one("Sqrt", [f.one("Add", [var, f.constant(np.asarray(eps, work))])])])
        shift = f.one("Sub", [offset, f.one("Mul", [mean, inv])])
        y = f.one("Add", [f.one("Mul", [_widen(f, x, dtype), inv]), shift])
        _cast_to(f, y, work, dtype, "y0")

    emit_custom(ctx, build)


def _normalize(f: FunctionBody, x: str, axes: list[int], eps: float, work) -> str:
    """(x - mean) / sqrt(var + eps) over ``axes`` (two-pass variance, as the kernels compute it)."""
    axes_input = _i64(f, axes)
    centred = f.one("Sub", [x, f.one("ReduceMean", [x, axes_input], keepdims=1)])
    var = f.one("ReduceMean", [f.one("Mul", [centred, centred]), axes_input], keepdims=1)
    return f.one("Div", [centred, f.one("Sqrt", [f.one("Add", [var, f.constant(np.asarray(eps, work))])])])


@_export("OH_NN_OPS_LAYER_NORM")
def layer_norm(ctx: ExportContext) -> None:
    shape = _in_shape(ctx)
    rank = len(shape)
    dtype = _dtype(ctx, ctx.input(0))
    begin = int(_scalar(ctx.args["begin_norm_axis"]))
    param = _norm(_scalar(ctx.args["begin_param_axis"]), rank)
    eps = float(_scalar(ctx.args["epsilon"]))
    affine = [_dtype(ctx, ctx.input(i)) for i in (1, 2)]
    if (begin == param and _has_params(ctx) and dtype in (np.float32, np.float64) and all(d == dtype for d in affine)
            and all(_in_shape(ctx, i) == shape[begin:] for i in (1, 2))):
        ctx.add("LayerNormalization", list(ctx.node.inputs), [ctx.result(0)], main=True, axis=begin, epsilon=eps)
        return
    work = _work(dtype)

    def build(f: FunctionBody) -> None:
        x, gamma, beta = f.inputs
        y = _normalize(f, _widen(f, x, dtype), list(range(begin, rank)), eps, work)
        y = f.one("Add", [f.one("Mul", [y, _cast_to(f, gamma, affine[0], work)]), _cast_to(f, beta, affine[1], work)])
        _cast_to(f, y, work, dtype, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_INSTANCE_NORM")
def instance_norm(ctx: ExportContext) -> None:
    """NHWC instance norm: InstanceNormalization between transposes, or a function normalising over the spatial
    axes 1..rank-2 per sample and channel."""
    shape = _in_shape(ctx)
    rank = len(shape)
    dtype = _dtype(ctx, ctx.input(0))
    eps = float(_scalar(ctx.args["epsilon"]))
    c = shape[-1]
    affine = [_dtype(ctx, ctx.input(i)) for i in (1, 2)]
    if (rank >= 3 and _has_params(ctx) and dtype == np.float32 and all(d == dtype for d in affine)
            and all(_in_shape(ctx, i) == (c,) for i in (1, 2))):
        _channel_first(ctx, "InstanceNormalization", list(ctx.node.inputs[1:]), epsilon=eps)
        return
    work = _work(dtype)

    def build(f: FunctionBody) -> None:
        x, scale, bias = f.inputs
        y = _normalize(f, _widen(f, x, dtype), list(range(1, rank - 1)), eps, work)
        y = f.one("Add", [f.one("Mul", [y, _per_channel(f, scale, affine[0], work, c)]),
                          _per_channel(f, bias, affine[1], work, c)])
        _cast_to(f, y, work, dtype, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_L2_NORMALIZE")
def l2_normalize(ctx: ExportContext) -> None:
    """x / sqrt(max(sum(x^2 over axis), epsilon)); an empty axis list means every axis."""
    rank = _rank(ctx, ctx.input(0))
    axis = ctx.args.get("axis")
    listed = [axis] if isinstance(axis, (int, np.integer)) else list(np.asarray(axis if axis is not None else [])
                                                                     .reshape(-1).tolist())
    axes = [_norm(a, rank) for a in listed] or list(range(rank))
    eps = float(_scalar(ctx.args["epsilon"]))
    dtype = _dtype(ctx, ctx.input(0))
    work = _work(dtype)

    def build(f: FunctionBody) -> None:
        x = _widen(f, f.inputs[0], dtype)
        squares = f.one("ReduceSum", [f.one("Mul", [x, x]), _i64(f, axes)], keepdims=1)
        norm = f.one("Sqrt", [f.one("Max", [squares, f.constant(np.asarray(eps, work))])])
        _cast_to(f, f.one("Div", [x, norm]), work, dtype, "y0")

    emit_custom(ctx, build)
