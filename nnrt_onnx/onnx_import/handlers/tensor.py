"""Structural ONNX ops: constants, shapes, reshapes, axes given as attributes or inputs, no-ops."""
from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.graph import Value
from ...ir.issues import (
    DYNAMIC_SHAPE,
    NEEDS_CONSTANT,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from ..context import NodeContext
from . import converts
from .movement import fold_constant_node


def axes_from(ctx: NodeContext, attr: str = "axes", position: int = 1, since_input: int = 13) -> list[int] | None:
    """Axes given as an attribute (older opsets) or as a constant input (newer); None when absent."""
    if ctx.opset < since_input:
        value = ctx.attr(attr)
        return None if value is None else [int(a) for a in value]
    if not ctx.has_input(position):
        return None
    return [int(a) for a in ctx.constant_input(position, attr).reshape(-1)]


def normalize_axes(axes, rank: int) -> list[int]:
    return [a + rank if a < 0 else a for a in axes]


@converts("Constant")
def constant(ctx: NodeContext) -> None:
    attrs = {k: ctx.attr(k) for k in list(ctx.attrs)}
    if "value" in attrs:
        array = numpy_helper.to_array(next(a.t for a in ctx.node.attribute if a.name == "value"))
    elif "sparse_value" in attrs:
        sparse = next(a.sparse_tensor for a in ctx.node.attribute if a.name == "sparse_value")
        values = numpy_helper.to_array(sparse.values)
        indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
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
        if shape is None or any(d < 0 for d in shape):
            raise ConversionIssue(DYNAMIC_SHAPE, "Dropout's mask output needs a static shape")
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


def _target_shape(ctx: NodeContext, x: str, requested) -> list[int]:
    """ONNX Reshape semantics (0 copies a dim unless allowzero, one -1) resolved against the input shape."""
    allowzero = int(ctx.attr("allowzero", 0))
    in_shape = ctx.value(x).shape
    target = [int(d) for d in requested]
    if not allowzero and 0 in target:
        if in_shape is None:
            raise ConversionIssue(DYNAMIC_SHAPE, "Reshape with 0 needs the input rank")
        target = [in_shape[i] if d == 0 else d for i, d in enumerate(target)]
    if allowzero and 0 in target:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "allowzero=1 with a 0 dim (empty tensors) is not supported")
    if -1 in target and in_shape is not None and all(d >= 0 for d in in_shape) and all(d >= 0 for d in target if d != -1):
        known = int(np.prod([d for d in target if d != -1]))
        target[target.index(-1)] = int(np.prod(in_shape)) // max(known, 1)
    return target


@converts("Reshape")
def reshape(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x = ctx.input(0)
    if ctx.opset < 5:
        requested = ctx.attr("shape")
    else:
        requested = ctx.constant_input(1, "the target shape").reshape(-1)
    target = _target_shape(ctx, x, requested)
    out = ctx.value(ctx.output(0))
    if out.shape is None or any(d < 0 for d in out.shape):
        out.shape = tuple(target)
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


@converts("Gather")
def gather(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x, indices = ctx.input(0), ctx.input(1)
    rank = ctx.rank(x)
    axis = int(ctx.attr("axis", 0))
    axis = axis + rank if axis < 0 else axis
    index_value = ctx.value(indices)
    dim = ctx.value(x).shape[axis]
    if index_value.data is not None and (index_value.data < 0).any():
        dim = ctx.static_shape(x)[axis]
        fixed = np.where(index_value.data < 0, index_value.data + dim, index_value.data).astype(index_value.data.dtype)
        indices = ctx.constant(fixed, f"{indices}.positive")
    elif index_value.data is None and ctx.opset >= 11 and dim >= 0:
        from .movement import (
            _wrap_negative,  # indices + dim where indices < 0 (negative indices since opset 11)
        )

        indices = _wrap_negative(ctx, indices, dim)
    index_shape = ctx.value(indices).shape
    if index_shape is not None:
        shape = ctx.value(x).shape
        ctx.settle(ctx.output(0), [*shape[:axis], *index_shape, *shape[axis + 1:]])
    ctx.emit(OP.OH_NN_OPS_GATHER, [x, indices, ctx.constant(np.asarray([axis], np.int64))], [ctx.output(0)])


@converts("ConstantOfShape")
def constant_of_shape(ctx: NodeContext) -> None:
    from onnx import helper

    value_attr = next((a for a in ctx.node.attribute if a.name == "value"), None)
    ctx.attr("value")
    fill = numpy_helper.to_array(value_attr.t).reshape(-1) if value_attr is not None else np.zeros(1, np.float32)
    shape_value = ctx.value(ctx.input(0))
    if shape_value.data is not None:
        dims = [int(d) for d in shape_value.data.reshape(-1)]
        array = np.full(dims, fill[0], dtype=fill.dtype)
        ctx.graph.add_value(Value(ctx.output(0), array.dtype, tuple(dims), array))
        return
    from ...dtypes import from_numpy

    ctx.emit(OP.OH_NN_OPS_CONSTANT_OF_SHAPE, [ctx.input(0)], [ctx.output(0)],
             {"OH_NN_CONSTANT_OF_SHAPE_DATA_TYPE": int(from_numpy(fill.dtype)),
              "OH_NN_CONSTANT_OF_SHAPE_VALUE": [float(fill[0])]})
    _ = helper


@converts("Sum")
def sum_(ctx: NodeContext) -> None:
    """Sum of n inputs: a chain of ADDs."""
    inputs = [ctx.input(i) for i in range(len(ctx.node.input))]
    out = ctx.output(0)
    if len(inputs) == 1:
        ctx.alias(inputs[0], out)
        return
    acc = inputs[0]
    out_value = ctx.value(out)
    for position, other in enumerate(inputs[1:], start=1):
        target = out if position == len(inputs) - 1 else ctx.new_value(out_value.dtype, out_value.shape, f"{out}.partial")
        ctx.emit(OP.OH_NN_OPS_ADD, [acc, other], [target])
        acc = target


@converts("LogSoftmax", "Softmax")
def softmax(ctx: NodeContext) -> None:
    """Softmax/LogSoftmax: opset >= 13 normalises one axis; older opsets flatten from ``axis`` on."""
    op = OP.OH_NN_OPS_SOFTMAX if ctx.node.op_type == "Softmax" else OP.OH_NN_OPS_LOG_SOFTMAX
    key = "OH_NN_SOFTMAX_AXIS" if op == OP.OH_NN_OPS_SOFTMAX else "OH_NN_LOG_SOFTMAX_AXIS"
    x = ctx.input(0)
    rank = ctx.rank(x)
    axis = int(ctx.attr("axis", -1 if ctx.opset >= 13 else 1))
    axis = axis + rank if axis < 0 else axis
    if ctx.opset >= 13 or axis == rank - 1:
        ctx.emit(op, [x], [ctx.output(0)], {key: axis})
        return
    shape = ctx.static_shape(x)
    flat = ctx.reshape(x, [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])
    out_value = ctx.value(ctx.output(0))
    flat_out = ctx.new_value(out_value.dtype, ctx.value(flat).shape, f"{ctx.output(0)}.flat")
    ctx.emit(op, [flat], [flat_out], {key: 1})
    ctx.reshape(flat_out, shape, output=ctx.output(0))


@converts("Concat")
def concat(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    inputs = [ctx.input(i) for i in range(len(ctx.node.input)) if ctx.has_input(i)]
    rank = ctx.rank(inputs[0])
    axis = int(ctx.attr("axis"))
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
