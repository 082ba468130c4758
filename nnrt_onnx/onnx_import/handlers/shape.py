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
    raw_quantized,
    through_real_values,
)
from ._dims import axis_iota, dim_product, dims_tensor, iota, known

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
    """A constant when the shape is static; else the product of SHAPE (a rank-0 int64)."""
    x = ctx.input(0)
    dims = ctx.value(x).shape
    if known(dims):
        ctx.graph.add_value(Value(ctx.output(0), np.dtype(np.int64), (), np.asarray(int(np.prod(dims)), np.int64)))
        return
    if dims is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {x!r} is unknown")
    product = dim_product(ctx, x, range(len(dims)))
    ctx.settle(ctx.output(0), (), np.int64)
    ctx.emit(OP.OH_NN_OPS_SQUEEZE, [product], [ctx.output(0)])


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
    """A constant when start/limit/delta are; else computed at run time: max(ceil((limit - start) / delta), 0)
    positions (``_dims.iota``) times delta plus start. Its length is then dynamic."""
    if any(ctx.input_value(i).data is None for i in range(3)):
        _range_at_run_time(ctx)
        return
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


def _range_at_run_time(ctx: NodeContext) -> None:
    start, limit, delta = (ctx.input(i) for i in range(3))
    dtype = ctx.value(start).dtype
    stash = ctx.opset >= 27 and int(ctx.attr("stash_type", 1)) and dtype == np.float16
    compute = np.dtype(np.float32) if stash else dtype  # (float16 values computed in float32, then rounded)
    f64, i64 = np.dtype(np.float64), np.dtype(np.int64)

    def as_(name, target):
        return name if ctx.value(name).dtype == target else ctx.emit_to(
            OP.OH_NN_OPS_CAST, [name, ctx.constant(np.asarray(int(from_numpy(target)), np.int32))], target,
            ctx.value(name).shape, f"{name}.{target.name}")

    span = ctx.emit_to(OP.OH_NN_OPS_SUB, [as_(limit, f64), as_(start, f64)], f64, (), f"{ctx.name}.span")
    steps = ctx.emit_to(OP.OH_NN_OPS_CEIL, [ctx.emit_to(OP.OH_NN_OPS_DIV, [span, as_(delta, f64)], f64, (),
                                                        f"{ctx.name}.steps")], f64, (), f"{ctx.name}.ceil")
    count = ctx.emit_to(OP.OH_NN_OPS_MAXIMUM, [steps, ctx.constant(np.asarray(0, f64))], f64, (), f"{ctx.name}.count")
    length = ctx.reshape(as_(count, i64), [1])
    positions = as_(iota(ctx, length, i64, "positions"), compute)
    scaled = ctx.emit_to(OP.OH_NN_OPS_MUL, [positions, as_(delta, compute)], compute, (-1,), f"{ctx.name}.scaled")
    ctx.settle(ctx.output(0), (-1,), dtype)
    if compute == dtype:
        ctx.emit(OP.OH_NN_OPS_ADD, [scaled, start], [ctx.output(0)])
        return
    values = ctx.emit_to(OP.OH_NN_OPS_ADD, [scaled, as_(start, compute)], compute, (-1,), f"{ctx.name}.values")
    ctx.emit(OP.OH_NN_OPS_CAST, [values, ctx.constant(np.asarray(int(from_numpy(dtype)), np.int32))], [ctx.output(0)])


@converts("EyeLike")
def eye_like(ctx: NodeContext) -> None:
    x = ctx.input(0)
    shape = ctx.value(x).shape
    if shape is None or len(shape) != 2:
        raise ConversionIssue(INVALID_MODEL, f"EyeLike needs a 2-D input, got shape {shape}")
    dtype_code = ctx.attr("dtype")
    dtype = ctx.value(x).dtype
    if dtype_code is not None:
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(dtype_code)))
            from_numpy(dtype)
        except (KeyError, TypeError, ValueError):
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"dtype={dtype_code} has no NNRt data type") from None
    k = int(ctx.attr("k", 0))
    if not known(shape):  # ones where column - row == k, from the positions along both dims (read at run time)
        diagonal = ctx.emit_to(OP.OH_NN_OPS_SUB, [axis_iota(ctx, x, 1, 2), axis_iota(ctx, x, 0, 2)], np.int64, shape,
                               f"{ctx.name}.diagonal")
        on = ctx.emit_to(OP.OH_NN_OPS_EQUAL, [diagonal, ctx.constant(np.asarray(k, np.int64))], np.bool_, shape,
                         f"{ctx.name}.on")
        ctx.settle(ctx.output(0), shape, dtype)
        ctx.emit(OP.OH_NN_OPS_CAST, [on, ctx.constant(np.asarray(int(from_numpy(dtype)), np.int32))], [ctx.output(0)])
        return
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


def _symbolic_target(ctx: NodeContext, x: str, requested) -> list[int] | None:
    """A constant target whose 0s copy dynamic dims (``[0, -1]`` of ``[N, 3, 4]``): the copied dims cancel against the
    input's (symbol.py), leaving RESHAPE one -1; else the 0s themselves, which RESHAPE copies at run time too."""
    allowzero = bool(ctx.attr("allowzero", 0))
    values = ctx.shape_values()
    dims = values.dims(ctx.node.input[0]) if values is not None else None
    if dims is None or allowzero:
        return None
    resolved = reshape_target(dims, [int(d) for d in requested], allowzero)
    if resolved is not None:
        return resolved
    kept = [0 if d == 0 and i < len(dims) and isinstance(dims[i], str) else t
            for i, (d, t) in enumerate(zip(requested, _target_shape(ctx, x, requested)))]
    return kept if sum(d < 0 for d in kept) <= 1 else None


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
        requested = ctx.constant_input(1, "the target shape").reshape(-1)
        target = _target_shape(ctx, x, requested)
        if sum(d < 0 for d in target) > 1:
            target = _symbolic_target(ctx, x, requested) or target
    if sum(d < 0 for d in target) > 1:
        raise ConversionIssue(DYNAMIC_SHAPE, f"Reshape of {x!r} (shape {list(ctx.value(x).shape or [])}) to {target}: "
                                             f"more than one dim is unknown (RESHAPE takes one -1)", tensor=x)
    ctx.settle(ctx.output(0), [-1 if d == 0 else d for d in target])  # (a 0 copies a dynamic dim)
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
        if any(d < 0 for d in shape):  # (a dim of 1 at run time would be removed: the rank would depend on it)
            raise ConversionIssue(DYNAMIC_SHAPE, f"Squeeze without axes removes every dim of size 1: whether the "
                                                 f"dynamic dims {[i for i, d in enumerate(shape) if d < 0]} of {x!r} "
                                                 f"are 1 decides the output's rank, which an NNRt tensor fixes",
                                  tensor=x)
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
    if sizes is None and num_outputs is not None:
        _split_uneven(ctx, x, axis, outputs)
        return
    params = {"OH_NN_SPLIT_AXIS": axis, "OH_NN_SPLIT_OUTPUT_NUM": n}
    if sizes is not None:
        params["OH_NN_SPLIT_SIZE_SPLITS"] = sizes
    # (dynamic dim without sizes: equal pieces at run time; an indivisible dim is an error there, as in ONNX < 18)
    ctx.emit(OP.OH_NN_OPS_SPLIT, [x], outputs, params)


def _split_uneven(ctx: NodeContext, x: str, axis: int, outputs: list[str]) -> None:
    """num_outputs pieces of a dynamic dim d: ceil(d / n) each, the last what is left (ONNX Split-18); SPLIT takes
    equal pieces only, so each piece is a SLICE whose begin and size are computed at run time."""
    n = len(outputs)
    dtype = ctx.value(x).dtype
    i64 = np.int64
    dim = dims_tensor(ctx, x, [axis])
    chunk = ctx.emit_to(OP.OH_NN_OPS_DIV, [ctx.emit_to(OP.OH_NN_OPS_ADD, [dim, ctx.constant(np.asarray([n - 1], i64))],
                                                       i64, (1,), f"{ctx.name}.dim_up"),
                                           ctx.constant(np.asarray([n], i64))], i64, (1,), f"{ctx.name}.chunk")
    shape = list(ctx.value(x).shape)
    shape[axis] = -1
    for i, output in enumerate(outputs):
        begin = ctx.emit_to(OP.OH_NN_OPS_MUL, [chunk, ctx.constant(np.asarray([i], i64))], i64, (1,),
                            f"{output}.begin") if i else ctx.constant(np.asarray([0], i64))
        if i == n - 1:
            size = ctx.constant(np.asarray([-1], i64))  # to the end
        else:  # min(chunk, d - begin): a small d leaves the later pieces short
            left = ctx.emit_to(OP.OH_NN_OPS_SUB, [dim, begin], i64, (1,), f"{output}.left")
            size = ctx.emit_to(OP.OH_NN_OPS_MINIMUM, [chunk, left], i64, (1,), f"{output}.size")
        ctx.settle(output, shape, dtype)
        ctx.emit(OP.OH_NN_OPS_SLICE, [x, begin, size], [output], {"OH_NN_SLICE_AXES": [axis]})


def _expand_at_run_time(ctx: NodeContext, x: str, x_shape) -> None:
    """Expand to a shape computed at run time (``Shape`` of a dynamic tensor): WHERE(FILL(true, shape), x, x), whose
    numpy broadcasting is Expand's; the target's length must be known."""
    target = ctx.input(1)
    length = ctx.value(target).shape
    if length is None or len(length) != 1 or length[0] < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the length of the target shape {ctx.node.input[1]!r} is unknown "
                                             f"(it gives the output's rank)", tensor=ctx.node.input[1])
    reader = ctx.shape_values()
    requested = reader.value(ctx.node.input[1]) if reader is not None else None
    rank = max(length[0], len(x_shape))
    requested = [-1] * length[0] if requested is None else [d if isinstance(d, int) and d > 0 else -1
                                                            for d in requested]
    padded_x = [1] * (rank - len(x_shape)) + list(x_shape)
    padded_r = [1] * (rank - len(requested)) + requested
    ctx.settle(ctx.output(0), [r if s == 1 else s if s >= 0 and r in (1, -1, s) else -1
                               for s, r in zip(padded_x, padded_r)])
    shape = target if ctx.value(target).dtype == np.int64 else ctx.emit_to(
        OP.OH_NN_OPS_CAST, [target, ctx.constant(np.asarray(int(from_numpy(np.dtype(np.int64))), np.int32))],
        np.int64, length, f"{target}.i64")
    everywhere = ctx.emit_to(OP.OH_NN_OPS_FILL, [ctx.constant(np.asarray(True)), shape], np.bool_, padded_r,
                             f"{ctx.name}.everywhere")
    ctx.emit(OP.OH_NN_OPS_WHERE, [everywhere, x, x], [ctx.output(0)])


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
    one GATHER per padded axis with the numpy-computed source index of every output position. A Pad of a quantized
    tensor's integers (onnxruntime's QOperator quantizer pads with the zero point) pads its real values, the fill
    dequantized: ``through_real_values``, folded into a quantized PAD."""
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    if raw_quantized(ctx, x):
        quant = ctx.value(x).quant
        raw_fill = _pad_value(ctx, ctx.value(x).dtype) if ctx.attr("mode", "constant") == "constant" else None
        fill = None if raw_fill is None else (raw_fill - float(quant.zero_points[0])) * float(quant.scales[0])
        through_real_values(ctx, x, ctx.output(0), lambda real, real_out: _pad(ctx, real, real_out, fill))
        return
    _pad(ctx, x, ctx.output(0), None)


def _pad(ctx: NodeContext, x: str, out: str, fill: float | None) -> None:
    """Pad ``x`` into ``out`` as the node says (``fill``: the constant value to use instead of the node's)."""
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
    out_shape = [d + b + e if d >= 0 else -1 for d, b, e in zip(shape, before, after)]
    if any(d < 0 for d, dim in zip(out_shape, shape) if dim >= 0):
        raise ConversionIssue(INVALID_MODEL, f"pads {pads} crop more than the input {list(shape)} holds")
    if fill is None:
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
    # (reflect pads beyond the dim reflect again, which PAD refuses: a dynamic dim goes the GATHER way)
    fits_reflect = all(0 <= max(positive[a]) <= cropped[a] - 1 for a in range(rank) if any(positive[a]))
    padded_axes = [a for a in range(rank) if before[a] or after[a]]
    by_pad = mode == "constant" or (mode == "reflect" and fits_reflect)
    dynamic = any(shape[a] < 0 for a in padded_axes) and not by_pad
    if by_pad or dynamic:
        padding = any(any(p) for p in positive) and not dynamic
        current = x
        if any(any(c) for c in crop):
            end_mask = sum(1 << a for a in range(rank) if not crop[a][1])
            current = ctx.emit_to(OP.OH_NN_OPS_STRIDED_SLICE,
                             [x, ctx.constant(np.asarray([b for b, _ in crop], np.int64)),
                              ctx.constant(np.asarray([-e for _, e in crop], np.int64)),
                              ctx.constant(np.ones(rank, np.int64))], value.dtype, cropped, f"{out}.cropped",
                             {"OH_NN_STRIDED_SLICE_END_MASK": end_mask} if end_mask else {},
                             output=None if padding or dynamic else out)
        if padding:
            ctx.emit(OP.OH_NN_OPS_PAD, [current, ctx.constant(np.asarray(positive, np.int64))], [out],
                     {"OH_NN_PAD_CONSTANT_VALUE": fill, "OH_NN_PAD_PADDING_MODE": 0 if mode == "constant" else 1})
        if not dynamic:
            return
        # edge / wrap / reflect over a dynamic dim: the source positions computed at run time, after the crop
        _gather_padding(ctx, current, out, mode, [a for a in padded_axes if any(positive[a])], positive)
        return
    current = x
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


def _gather_padding(ctx: NodeContext, x: str, out: str, mode: str, axes, pads) -> None:
    """edge / wrap / reflect padding of ``axes`` of ``x`` (pads (begin, end) >= 0 per dim) as one GATHER per axis,
    the source positions computed at run time where the dim is dynamic: for output position i of a dim d,
    edge clip(i - b, 0, d - 1), wrap (i - b) mod d, reflect the mirror of i - b in [0, d - 1]."""
    value = ctx.value(x)
    shape = list(value.shape)
    i64 = np.int64
    current = x
    for position, a in enumerate(axes):
        b, e = pads[a]
        last = position == len(axes) - 1
        grown = shape[a] + b + e if shape[a] >= 0 else -1
        if shape[a] >= 0:
            source = ctx.constant(np.pad(np.arange(shape[a]), (b, e), mode=mode).astype(i64), f"{out}.src{a}")
        else:
            dim = dims_tensor(ctx, current, [a])
            length = ctx.emit_to(OP.OH_NN_OPS_ADD, [dim, ctx.constant(np.asarray([b + e], i64))], i64, (1,),
                                 f"{out}.length{a}")
            shifted = ctx.emit_to(OP.OH_NN_OPS_SUB, [iota(ctx, length, i64, f"positions{a}"),
                                                     ctx.constant(np.asarray(b, i64))], i64, (-1,), f"{out}.shifted{a}")
            source = _padding_source(ctx, shifted, dim, mode, f"{out}.src{a}")
        shape[a] = grown
        current = ctx.emit_to(OP.OH_NN_OPS_GATHER, [current, source, ctx.constant(np.asarray([a], i64))], value.dtype,
                              list(shape), f"{out}.axis{a}", output=out if last else None)


def _padding_source(ctx: NodeContext, shifted: str, dim: str, mode: str, hint: str) -> str:
    """The source position of every output position i - b (``shifted``) of a padded dim of run-time size ``dim``."""
    i64 = np.int64
    one = ctx.constant(np.asarray([1], i64))
    top = ctx.emit_to(OP.OH_NN_OPS_SUB, [dim, one], i64, (1,), f"{hint}.top")
    zero = ctx.constant(np.asarray(0, i64))
    if mode == "edge":
        low = ctx.emit_to(OP.OH_NN_OPS_MAXIMUM, [shifted, zero], i64, (-1,), f"{hint}.low")
        return ctx.emit_to(OP.OH_NN_OPS_MINIMUM, [low, top], i64, (-1,), hint)
    if mode == "wrap":  # floor modulo from MOD's truncated one
        rest = ctx.emit_to(OP.OH_NN_OPS_MOD, [shifted, dim], i64, (-1,), f"{hint}.rest")
        return ctx.emit_to(OP.OH_NN_OPS_MOD, [ctx.emit_to(OP.OH_NN_OPS_ADD, [rest, dim], i64, (-1,), f"{hint}.up"),
                                              dim], i64, (-1,), hint)
    # reflect: period 2(d - 1); t = (i - b) mod period (floor), then t or period - t
    period = ctx.emit_to(OP.OH_NN_OPS_MUL, [top, ctx.constant(np.asarray([2], i64))], i64, (1,), f"{hint}.period")
    rest = ctx.emit_to(OP.OH_NN_OPS_MOD, [shifted, period], i64, (-1,), f"{hint}.rest")
    t = ctx.emit_to(OP.OH_NN_OPS_MOD, [ctx.emit_to(OP.OH_NN_OPS_ADD, [rest, period], i64, (-1,), f"{hint}.up"),
                                       period], i64, (-1,), f"{hint}.t")
    mirrored = ctx.emit_to(OP.OH_NN_OPS_SUB, [period, t], i64, (-1,), f"{hint}.mirrored")
    return ctx.emit_to(OP.OH_NN_OPS_MINIMUM, [t, mirrored], i64, (-1,), hint)


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
    x_shape = ctx.value(x).shape
    if x_shape is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {x!r} is unknown")
    if ctx.input_value(1).data is None:
        _expand_at_run_time(ctx, x, x_shape)
        return
    requested = [int(d) for d in ctx.constant_input(1, "the target shape").reshape(-1)]
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
