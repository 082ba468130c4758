"""Converters of the shape family: constants (Constant, ConstantOfShape, Range, EyeLike), shapes (Shape, Size), no-ops
(Identity, Dropout), reshapes (Reshape, Flatten, Squeeze, Unsqueeze), Transpose, Concat, Split, Pad, Tile and
Expand; with the folding of all-constant nodes and the empty results of ``_common``.
"""
from __future__ import annotations

import math

import numpy as np
from onnx import helper

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.graph import Value
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    NEEDS_CONSTANT,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from .. import limits
from ..context import NodeContext
from ..generic import check_op_dtype
from ..symbolic import reshape_target
from ..weights import to_array
from . import converts
from ._common import (
    _axis,
    _constant_value,
    _empty_result,
    _ints,
    _scalar,
    axes_from,
    fold_constant_node,
    normalize_axes,
)

# -- constants, shapes, no-ops -----------------------------------------------------------------------------------------

@converts("Constant")
def constant(ctx: NodeContext) -> None:
    attrs = {k: ctx.attr(k) for k in list(ctx.attrs)}
    if "value" in attrs:
        array = to_array(next(a.t for a in ctx.node.attribute if a.name == "value"))
    elif "sparse_value" in attrs:
        sparse = next(a.sparse_tensor for a in ctx.node.attribute if a.name == "sparse_value")
        values = to_array(sparse.values)
        indices = to_array(sparse.indices).astype(np.int64)
        limits.require_shape(limits.check_dims(sparse.dims, "sparse_value"), values.dtype, "the sparse constant")
        array = np.zeros(tuple(sparse.dims), values.dtype)
        if indices.ndim == 1:  # linear positions
            array.reshape(-1)[indices] = values
        elif indices.size:
            array[tuple(indices.T)] = values
    elif "value_string" in attrs or "value_strings" in attrs:
        raise ConversionIssue(UNSUPPORTED_DTYPE, "string constants have no NNRt data type")
    elif "value_float" in attrs:
        array = np.asarray(attrs["value_float"], np.float32)
    elif "value_floats" in attrs:
        array = np.asarray(attrs["value_floats"], np.float32)
    elif "value_int" in attrs:
        array = np.asarray(attrs["value_int"], np.int64)
    elif "value_ints" in attrs:
        array = np.asarray(attrs["value_ints"], np.int64)
    else:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"Constant with {sorted(attrs)} is not supported")
    try:
        from_numpy(array.dtype)
    except ValueError as exc:
        raise ConversionIssue(UNSUPPORTED_DTYPE, str(exc)) from None
    out = ctx.output(0)
    ctx.graph.add_value(Value(out, array.dtype, tuple(array.shape), np.ascontiguousarray(array).reshape(array.shape)))


@converts("Dropout", "Identity")
def identity(ctx: NodeContext) -> None:
    """Identity, and Dropout at inference: the output is the input (no op)."""
    ctx.attr("ratio")
    ctx.attr("seed")
    if ctx.node.op_type == "Dropout" and ctx.has_input(2):
        training = ctx.constant_input(2, "training_mode")
        if bool(training.reshape(-1)[0]):
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "training_mode=true is not supported")
    if len([o for o in ctx.node.output if o]) > 1:
        mask = ctx.node.output[1]
        shape = ctx.value(ctx.input(0)).shape
        if shape is None:
            raise ConversionIssue(DYNAMIC_SHAPE, f"Dropout's mask output needs the rank of {ctx.input(0)!r}")
        if any(d < 0 for d in shape):  # all true, of the input's run-time shape
            dims = ctx.new_value(np.int64, (len(shape),), f"{mask}.shape")
            ctx.emit(OP.OH_NN_OPS_SHAPE, [ctx.input(0)], [dims])
            ctx.settle(mask, shape, np.bool_)
            ctx.emit(OP.OH_NN_OPS_CONSTANT_OF_SHAPE, [dims], [mask],
                     {"OH_NN_CONSTANT_OF_SHAPE_DATA_TYPE": int(from_numpy(np.dtype(np.bool_))),
                      "OH_NN_CONSTANT_OF_SHAPE_VALUE": [1.0]})
        else:
            limits.require_shape(shape, np.bool_, "Dropout's mask")
            ctx.graph.add_value(Value(mask, np.dtype(np.bool_), shape, np.ones(shape, np.bool_)))
    ctx.alias(ctx.input(0), ctx.output(0))


@converts("Shape")
def shape(ctx: NodeContext) -> None:
    """A constant when the shape is static (or the sliced dims are); else SHAPE (+ SLICE for start/end)."""
    x = ctx.input(0)
    dims = ctx.value(x).shape
    start, end = int(ctx.attr("start", 0)), ctx.attr("end")
    out = ctx.output(0)
    if dims is None:
        if start != 0 or end is not None:
            raise ConversionIssue(DYNAMIC_SHAPE, f"Shape with start/end needs the rank of {x!r}")
        ctx.emit(OP.OH_NN_OPS_SHAPE, [x], [out])
        return
    first, stop, _ = slice(start, None if end is None else int(end)).indices(len(dims))
    sliced = list(dims)[first:stop]
    if all(d >= 0 for d in sliced):  # (empty: an empty constant, for its consumers to drop)
        ctx.graph.add_value(Value(out, np.dtype(np.int64), (len(sliced),), np.asarray(sliced, np.int64)))
        return
    if len(sliced) == len(dims):
        ctx.emit(OP.OH_NN_OPS_SHAPE, [x], [out])
        return
    full = ctx.new_value(np.int64, (len(dims),), f"{out}.full")
    ctx.emit(OP.OH_NN_OPS_SHAPE, [x], [full])
    ctx.value(out).shape = (len(sliced),)
    ctx.emit(OP.OH_NN_OPS_SLICE, [full, ctx.constant(np.asarray([first], np.int64)),
                                  ctx.constant(np.asarray([len(sliced)], np.int64))], [out])


@converts("Size")
def size(ctx: NodeContext) -> None:
    dims = ctx.static_shape(ctx.input(0))
    ctx.graph.add_value(Value(ctx.output(0), np.dtype(np.int64), (), np.asarray(int(np.prod(dims)), np.int64)))


@converts("ConstantOfShape")
def constant_of_shape(ctx: NodeContext) -> None:
    from onnx import helper

    value_attr = next((a for a in ctx.node.attribute if a.name == "value"), None)
    ctx.attr("value")
    fill = to_array(value_attr.t).reshape(-1) if value_attr is not None else np.zeros(1, np.float32)
    shape_value = ctx.value(ctx.input(0))
    limits.check_constant_of_shape(shape_value, fill)
    if shape_value.data is not None:
        dims = limits.check_dims(shape_value.data.reshape(-1), "ConstantOfShape's shape")
        if limits.admit_shape(dims, fill.dtype, "ConstantOfShape's shape"):
            array = np.full(dims, fill[0], dtype=fill.dtype)
            ctx.graph.add_value(Value(ctx.output(0), array.dtype, tuple(dims), array))
            return
        ctx.settle(ctx.output(0), dims, fill.dtype)  # above the import's budget: built at run time
    ctx.emit(OP.OH_NN_OPS_CONSTANT_OF_SHAPE, [ctx.input(0)], [ctx.output(0)],
             {"OH_NN_CONSTANT_OF_SHAPE_DATA_TYPE": int(from_numpy(fill.dtype)),
              "OH_NN_CONSTANT_OF_SHAPE_VALUE": [float(fill[0])]})
    _ = helper


@converts("Range")
def range_(ctx: NodeContext) -> None:
    """A constant: the output length depends on the values, so start/limit/delta must be constants."""
    start, limit, delta = (_scalar(ctx.constant_input(i, what), what)
                           for i, what in enumerate(("Range start", "Range limit", "Range delta")))
    dtype = np.asarray(start).dtype
    stash = int(ctx.attr("stash_type", 1)) if ctx.opset >= 27 else 0
    if delta == 0:
        raise ConversionIssue(INVALID_MODEL, "Range delta must not be 0")
    count = limits.range_length(start, limit, delta)
    if not limits.admit_shape([count], dtype, "Range's output"):  # above the import's budget
        if dtype.kind not in "iu":
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"a {dtype} Range of {count} values is larger than the folding "
                                                         f"budget (max_constant_bytes) and NNRt's RANGE is integer only")
        ctx.settle(ctx.output(0), [count], dtype)
        ctx.emit(OP.OH_NN_OPS_RANGE, [ctx.input(0)], [ctx.output(0)], {"OH_NN_RANGE_START": int(start),
                                                                       "OH_NN_RANGE_LIMIT": int(limit),
                                                                       "OH_NN_RANGE_DELTA": int(delta)})
        return
    if dtype.kind in "iu":
        values = np.arange(int(start), int(limit), int(delta), dtype=np.int64).astype(dtype)
    else:
        compute = np.float32 if (stash and dtype == np.float16) else dtype
        s, lim, d = (np.asarray(v, compute) for v in (start, limit, delta))
        count = max(int(np.ceil((lim - s) / d)), 0)
        values = (s + np.arange(count, dtype=compute) * d).astype(dtype)
    ctx.graph.add_value(_constant_value(ctx.output(0), values))


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
    limits.require_shape(shape, dtype, "EyeLike's output")
    ctx.graph.add_value(_constant_value(ctx.output(0), np.eye(shape[0], shape[1], k, dtype=dtype)))


# -- reshapes and transposes -------------------------------------------------------------------------------------------

def _target_shape(ctx: NodeContext, x: str, requested) -> list[int]:
    """ONNX Reshape semantics (0 copies a dim unless allowzero, one -1) resolved against the input shape."""
    allowzero = int(ctx.attr("allowzero", 0))
    in_shape = ctx.value(x).shape
    target = [int(d) for d in requested]
    if not allowzero and 0 in target:
        if in_shape is None:
            raise ConversionIssue(DYNAMIC_SHAPE, "Reshape with 0 needs the input rank")
        if any(d == 0 and i >= len(in_shape) for i, d in enumerate(target)):
            raise ConversionIssue(INVALID_MODEL, f"Reshape target {target[:8]} copies (0) a dim the rank-"
                                                 f"{len(in_shape)} input does not have")
        target = [in_shape[i] if d == 0 else d for i, d in enumerate(target)]
    if allowzero and 0 in target:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "allowzero=1 with a 0 dim (empty tensors) is not supported")
    if -1 in target and in_shape is not None and all(d >= 0 for d in in_shape) and all(d >= 0 for d in target if d != -1):
        known = int(np.prod([d for d in target if d != -1]))
        target[target.index(-1)] = int(np.prod(in_shape)) // max(known, 1)
    limits.check_reshape(in_shape, requested, target)  # element counts, one -1 at most
    return target


def _runtime_target(ctx: NodeContext) -> list[int] | None:
    """A target shape computed at run time (``x.view(x.size(0), -1)``: Shape -> Gather -> Concat of a dynamic
    batch) read symbolically: RESHAPE's target when at most one output dim stays unknown (symbolic.py)."""
    values = ctx.shape_values()
    if values is None:
        return None
    requested, dims = values.value(ctx.node.input[1]), values.dims(ctx.node.input[0])
    if requested is None or dims is None:
        return None
    return reshape_target(dims, requested, bool(ctx.attr("allowzero", 0)))


@converts("Reshape")
def reshape(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    out = ctx.value(ctx.output(0))
    inferred = out.shape
    if ctx.opset < 5:
        requested = ctx.attr("shape")
        if requested is None:  # (an attribute before opset 5; the schema does not mark it required)
            raise ConversionIssue(INVALID_MODEL, "Reshape (opset < 5) needs its shape attribute")
        target = _target_shape(ctx, x, requested)
    elif ctx.input_value(1).data is None and _runtime_target(ctx) is not None:
        target = _runtime_target(ctx)
    elif ctx.input_value(1).data is None and inferred is not None and sum(d < 0 for d in inferred) <= 1:
        # the output shape ONNX inference knows, with its one unknown dim as RESHAPE's -1, reshapes the same
        ctx.attr("allowzero")
        target = list(inferred)
    else:
        target = _target_shape(ctx, x, ctx.constant_input(1, "the target shape").reshape(-1))
    if sum(d < 0 for d in target) > 1:
        raise ConversionIssue(DYNAMIC_SHAPE, f"Reshape of {x!r} (shape {list(ctx.value(x).shape or [])}) to {target}: "
                                             f"more than one dim is unknown (RESHAPE takes one -1)", tensor=x)
    ctx.settle(ctx.output(0), target)
    if not target:  # to a scalar: SQUEEZE without axes (NNRt has no empty shape tensor for RESHAPE)
        ctx.emit(OP.OH_NN_OPS_SQUEEZE, [x], [ctx.output(0)])
        return
    ctx.emit(OP.OH_NN_OPS_RESHAPE, [x, ctx.constant(np.asarray(target, np.int64))], [ctx.output(0)])


@converts("Flatten")
def flatten(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    rank = ctx.rank(x)
    axis = int(ctx.attr("axis", 1))
    axis = axis + rank if axis < 0 else axis
    shape = ctx.value(x).shape
    ctx.settle(ctx.output(0), [int(np.prod(part)) if all(d >= 0 for d in part) else -1
                                      for part in (shape[:axis], shape[axis:])])
    if all(d >= 0 for d in shape):
        target = [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))]
        ctx.emit(OP.OH_NN_OPS_RESHAPE, [x, ctx.constant(np.asarray(target, np.int64))], [ctx.output(0)])
    else:
        ctx.emit(OP.OH_NN_OPS_FLATTEN, [x], [ctx.output(0)], {"OH_NN_FLATTEN_AXIS": axis})


@converts("Squeeze")
def squeeze(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    rank = ctx.rank(x)
    axes = axes_from(ctx)
    shape = ctx.value(x).shape
    if axes is None:
        if any(d < 0 for d in shape):
            raise ConversionIssue(DYNAMIC_SHAPE, "Squeeze without axes needs a static shape")
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = normalize_axes(axes, rank)
    target = [d for i, d in enumerate(shape) if i not in axes]
    _reshape_or(ctx, x, target, OP.OH_NN_OPS_SQUEEZE, {"OH_NN_SQUEEZE_AXIS": axes})


@converts("Unsqueeze")
def unsqueeze(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    axes = axes_from(ctx)
    if axes is None:
        raise ConversionIssue(NEEDS_CONSTANT, "Unsqueeze needs axes")
    ctx.rank(x)
    shape = list(ctx.value(x).shape)
    out_rank = len(shape) + len(axes)
    axes = sorted(normalize_axes(axes, out_rank))
    target = list(shape)
    for a in axes:
        target.insert(a, 1)
    if len(axes) == 1:
        _reshape_or(ctx, x, target, OP.OH_NN_OPS_UNSQUEEZE, {"OH_NN_UNSQUEEZE_AXIS": axes[0]})
    else:
        _reshape_or(ctx, x, target, None, {})


def _reshape_or(ctx: NodeContext, x: str, target, op, params) -> None:
    """A reshape when the target is static (at most one dynamic dim), else the dedicated op."""
    ctx.settle(ctx.output(0), target)
    if not target:  # to a scalar: SQUEEZE without axes (NNRt has no empty shape tensor for RESHAPE)
        ctx.emit(OP.OH_NN_OPS_SQUEEZE, [x], [ctx.output(0)])
    elif sum(d < 0 for d in target) <= 1:
        ctx.emit(OP.OH_NN_OPS_RESHAPE, [x, ctx.constant(np.asarray(target, np.int64))], [ctx.output(0)])
    elif op is not None:
        ctx.emit(op, [x], [ctx.output(0)], params)
    else:
        raise ConversionIssue(DYNAMIC_SHAPE, f"target shape {target} has several dynamic dims")


@converts("Transpose")
def transpose(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    perm = ctx.attr("perm")
    if perm is None:
        perm = list(reversed(range(ctx.rank(x))))
    perm = [int(p) for p in perm]
    shape = ctx.value(x).shape
    if shape is not None and len(shape) == len(perm):
        ctx.settle(ctx.output(0), [shape[p] for p in perm])
    ctx.transpose(x, perm, output=ctx.output(0))


# -- Concat, Split -----------------------------------------------------------------------------------------------------

@converts("Concat")
def concat(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    inputs = [ctx.input(i) for i in range(len(ctx.node.input)) if ctx.has_input(i)]
    rank = ctx.rank(inputs[0])
    axis = int(ctx.attr("axis", 1))  # (required since opset 4, where the schema check enforces it; 1 before)
    axis = axis + rank if axis < 0 else axis
    non_empty = [n for n in inputs if ctx.value(n).data is None or ctx.value(n).data.size]
    if non_empty and len(non_empty) < len(inputs):  # empty pieces (constants) add nothing
        inputs = non_empty
    if len(inputs) == 1:
        ctx.alias(inputs[0], ctx.output(0))
        return
    shapes = [ctx.value(n).shape for n in inputs]
    if all(s is not None and len(s) == rank for s in shapes):
        joined = [-1 if any(s[axis] < 0 for s in shapes) else sum(s[axis] for s in shapes)]
        others = [max(s[d] for s in shapes) for d in range(rank)]  # a known dim wins over -1
        ctx.settle(ctx.output(0), [joined[0] if d == axis else others[d] for d in range(rank)])
    ctx.emit(OP.OH_NN_OPS_CONCAT, inputs, [ctx.output(0)], {"OH_NN_CONCAT_AXIS": axis})


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


# -- Pad ---------------------------------------------------------------------------------------------------------------

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
        limits.require_shape([dim + positive[a][0] + positive[a][1]], np.int64, f"the index table of padded axis {a}")
        kept = np.arange(crop[a][0], dim - crop[a][1])
        source = np.pad(kept, positive[a], mode=mode)  # numpy's reflect/edge/wrap are ONNX's
        current_shape[a] = len(source)
        last = position == len(padded_axes) - 1
        current = ctx.emit_to(OP.OH_NN_OPS_GATHER, [current, ctx.constant(source.astype(np.int64), f"{out}.src{a}"),
                                                    ctx.constant(np.asarray([a], np.int64))],
                         value.dtype, list(current_shape), f"{out}.axis{a}", output=out if last else None)


# -- Tile, Expand ------------------------------------------------------------------------------------------------------

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


@converts("Expand")
def expand(ctx: NodeContext) -> None:
    """Expand -> BROADCAST_TO with the (bidirectional) broadcast of the input shape and the constant shape."""
    x = ctx.input(0)
    check_op_dtype(ctx, x, OP.OH_NN_OPS_BROADCAST_TO)
    requested = [int(d) for d in ctx.constant_input(1, "the target shape").reshape(-1)]
    x_shape = ctx.value(x).shape
    if x_shape is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {x!r} is unknown")
    if any(d < 0 for d in requested) or 0 in requested or 0 in x_shape:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"shape {requested}: negative or zero dims (empty tensors) are "
                                                     f"not supported")
    rank = max(len(requested), len(x_shape))
    target = []
    for i in range(rank):
        s = x_shape[i - rank + len(x_shape)] if i - rank + len(x_shape) >= 0 else 1
        r = requested[i - rank + len(requested)] if i - rank + len(requested) >= 0 else 1
        if s == -1:
            target.append(r if r != 1 else -1)
        elif s == r or r == 1:
            target.append(s)
        elif s == 1:
            target.append(r)
        else:
            raise ConversionIssue(INVALID_MODEL, f"input shape {list(x_shape)} cannot be expanded to {requested}")
    out = ctx.output(0)
    out_value = ctx.value(out)
    if out_value.shape is None or any(d < 0 for d in out_value.shape):
        out_value.shape = tuple(target)
    if tuple(target) == tuple(x_shape) and all(d >= 0 for d in x_shape):
        ctx.alias(x, out)
        return
    ctx.emit(OP.OH_NN_OPS_BROADCAST_TO, [x], [out], {"OH_NN_BROADCAST_TO_SHAPE": np.asarray(target, np.int64)})
