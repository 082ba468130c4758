"""Export of the shape NNRt ops: reshaping, concatenation and splitting, squeezing, transposition, tiling and
broadcasting, generators (FILL, SHAPE, RANK, RANGE, CONSTANT_OF_SHAPE), ASSERT and PAD.

Decisions:

* ASSERT's function fails at run time (a Gather whose indices are shifted out of range) when the condition is not
  all true, like the native op; the message is onnxruntime's, not the summarized data.
* PAD: not exported with SYMMETRIC padding and run-time paddings (ONNX Pad has no symmetric mode).
"""
from __future__ import annotations

from math import prod

import numpy as np
from onnx import TensorProto, helper

from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter
from ._common import (
    _ORT_PAD,
    _cast_to,
    _data,
    _dtype,
    _elem,
    _export,
    _has_params,
    _i64,
    _in_shape,
    _index64,
    _index_vector,
    _input_dtype,
    _into,
    _no_quant,
    _norm,
    _out_shape,
    _pad_constant,
    _rank,
    _shape,
)

# -- reshape and friends ------------------------------------------------------------------------------------------

@_export("OH_NN_OPS_RESHAPE")
def reshape(ctx: ExportContext) -> None:
    target = _data(ctx, 1)
    out = ctx.value(ctx.output(0)).shape  # (a dynamic one: the function below, as a runtime target)
    if target is not None and target.size and out is not None and all(d >= 0 for d in out):
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


# -- tiling/broadcasting ------------------------------------------------------------------------------------------

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


# -- generators ---------------------------------------------------------------------------------------------------

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


# -- assert -------------------------------------------------------------------------------------------------------

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


# -- PAD ----------------------------------------------------------------------------------------------------------

def _fill_value(value: float, dtype: np.dtype):
    if dtype.kind == "f":
        return dtype.type(value)
    if dtype == np.bool_:
        return bool(value)
    return dtype.type(int(value))


def _gather_pad(f: FunctionBody, x: str, shape, pads, mode: str) -> str:
    """Reflect/symmetric padding as one Gather per padded axis with constant source positions (any dtype)."""
    for axis, (p0, p1) in enumerate(pads):
        if p0 or p1:
            source = np.pad(np.arange(shape[axis]), (p0, p1), mode=mode)
            x = f.one("Gather", [x, _i64(f, source)], axis=axis)
    return x


@exporter("OH_NN_OPS_PAD")
def pad(ctx: ExportContext) -> None:
    _no_quant(ctx)
    dtype = _input_dtype(ctx)
    shape = _shape(ctx, ctx.input(0), "the input")
    rank = len(shape)
    mode = int(ctx.args.get("padding_mode", 0))
    if mode not in (0, 1, 2):
        raise ExportIssue(f"PAD padding mode {mode}")
    # the fill value only matters (and must fit the dtype) in constant mode
    fill = _fill_value(float(ctx.args.get("constant_value", 0.0)), dtype) if mode == 0 else None
    paddings = ctx.value(ctx.input(1)).data
    if paddings is not None:
        pairs = [(int(a), int(b)) for a, b in np.asarray(paddings).reshape(rank, 2)]
        onnx_pads = [a for a, _ in pairs] + [b for _, b in pairs]
        # (the importer turns a Pad that pads nothing into a copy)
        if mode in (0, 1) and dtype in _ORT_PAD and any(onnx_pads):
            inputs = [ctx.input(0), ctx.constant(np.asarray(onnx_pads, np.int64), "pads")]
            attrs = {"mode": "constant" if mode == 0 else "reflect"}
            if mode == 0:
                inputs.append(ctx.constant(np.asarray(fill, dtype), "pad_value"))
            ctx.add("Pad", inputs, [ctx.result(0)], main=True, **attrs)
            return

        def build(f: FunctionBody) -> None:
            if mode == 0:
                y = _pad_constant(f, f.inputs[0], dtype, _i64(f, onnx_pads), fill)
            else:
                y = _gather_pad(f, f.inputs[0], shape, pairs, "reflect" if mode == 1 else "symmetric")
            f.one("Identity", [y], "y0")

        emit_custom(ctx, build)
        return
    if mode == 2:
        raise ExportIssue("PAD: SYMMETRIC padding needs constant paddings (ONNX Pad has no symmetric mode)")

    def build_dynamic(f: FunctionBody) -> None:
        x, p = f.inputs
        p = f.one("Cast", [p], to=TensorProto.INT64)
        p = f.one("Reshape", [f.one("Transpose", [f.one("Reshape", [p, _i64(f, [rank, 2])])], perm=[1, 0]),
                              _i64(f, [-1])])
        f.one("Identity", [_pad_constant(f, x, dtype, p, fill, "reflect" if mode == 1 else "constant")], "y0")

    emit_custom(ctx, build_dynamic)
