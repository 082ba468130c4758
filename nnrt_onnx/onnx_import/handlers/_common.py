"""Helpers the converters of several families share (a helper used by one family lives in that family's module).

They are: the dtype groups and ``_Builder``, which emits small element-wise graphs; the alignment of opset 1-6
operands before the opset-7 conversion they delegate to; constant folding of all-constant nodes and empty results;
attribute and axis readers; small emit helpers that give every new tensor its dtype and shape (reshape, transpose,
broadcasting binary ops, reductions, casts, ...); the NCHW <-> NHWC plumbing and padding of the spatial ops; and the
integer arithmetic of the quantization and recurrent families (onnxruntime's dynamic uint8 quantization, the exact
int32 product of (de-zero-pointed) integer operands).

Decisions (also stated where they are made):

* Every element-wise handler checks its input dtypes against the NNRt op's ``dtypes`` (or what the decomposition
  can compute) and reports ``unsupported_dtype`` at import, never a run-time failure.
* Constants are created in the dtype of the tensor they meet (the kernels promote mixed dtypes, and the declared
  output dtype must then match).
* ``expm1(x)`` is evaluated as ``tanh(x/2) * (exp(x) + 1)`` (no cancellation near 0): Elu, Selu, Celu; Sinh is
  ``tanh(x/2) * (1 + cosh(x))`` for the same reason. Softplus is ``relu(x) + log1p(exp(-|x|))`` (no overflow),
  with log1p as Goldberg's ``log(w) * u / (w - 1)``, ``w = 1 + u``.
* An output ONNX shape inference left without a (full) shape gets the broadcast of the inputs' shapes.
* Opsets 1-6 (Add, Sub, Mul, Div, Pow, PRelu): the handler aligns B (reshaping it to A's rank:
  ``[1]*axis + B.shape + [1]*rest``, so numpy broadcasting then means the same), then delegates to the opset-7
  row's conversion with B replaced. ``consumed_inputs`` (opset 1-5: marks in-place use) has no effect on the
  result and is ignored.
* A node whose inputs are all constants is evaluated at conversion time by the ONNX reference implementation
  (``fold_constant_node``), so shape arithmetic of exported graphs folds, empty intermediate tensors included.
* NNRt tensors cannot have a 0 dim: an output that would be empty becomes an empty constant (it holds nothing,
  whatever the inputs). Concat drops such pieces; anywhere else the importer reports the empty tensor.
* Layout: NCHW ONNX tensors meet NHWC NNRt ops between transposes (the layout pass cancels the transposes between
  consecutive NHWC ops). 1-D ops ([N, C, L]) run as 2-D ops on [N, 1, L, C]; 3-D convolutions have no NNRt op and
  are rejected.
* Pads are computed explicitly (ONNX ``auto_pad`` included) whenever the spatial dims are static; otherwise
  SAME_UPPER/VALID use the NNRt pad modes (identical semantics) and SAME_LOWER is padded at run time (PAD with
  paddings computed from the run-time dims, then VALID: ``_same_lower_pad``).
"""
from __future__ import annotations

import copy
from typing import Sequence

import numpy as np
from onnx import helper

from ... import geometry
from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...geometry import NCHW_TO_NHWC, NHWC_TO_NCHW
from ...ir import budget
from ...ir.issues import DYNAMIC_SHAPE, INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE, ConversionIssue
from ...ir.rows import find_row
from ..context import NodeContext
from ..generic import bshape
from ..limits import check_dims, reference_output_bytes, schema_accepts
from . import handler_for

FLOAT = ("float16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
NUMERIC = FLOAT + SIGNED + UNSIGNED
_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_ONNX_FLOAT_TYPES = {1: np.float32, 10: np.float16, 11: np.float64}  # TensorProto codes with an NNRt dtype


# -- element-wise graphs -----------------------------------------------------------------------------------------------

_BOOL_RESULT = {OP.OH_NN_OPS_EQUAL, OP.OH_NN_OPS_NOT_EQUAL, OP.OH_NN_OPS_LESS, OP.OH_NN_OPS_LESS_EQUAL,
                OP.OH_NN_OPS_GREATER, OP.OH_NN_OPS_GREATER_EQUAL, OP.OH_NN_OPS_LOGICAL_AND, OP.OH_NN_OPS_LOGICAL_OR,
                OP.OH_NN_OPS_LOGICAL_NOT}


class _Builder:
    """Emits a small element-wise graph for one ONNX node; every new tensor gets a dtype and a shape."""

    def __init__(self, ctx: NodeContext):
        self.ctx = ctx
        self.out = ctx.output(0)

    def shape(self, *names):
        return bshape(*(self.ctx.value(n).shape for n in names))

    def const(self, value, dtype) -> str:
        return self.ctx.constant(np.asarray(value, dtype=dtype), f"{self.ctx.name}.const")

    def op(self, op: OP, inputs, dtype=None, params=None, out=None, shape=None) -> str:
        ctx = self.ctx
        if out is None:
            if dtype is None and op in _BOOL_RESULT:
                dtype = np.bool_
            elif dtype is None:
                dtype = ctx.value(inputs[1 if op == OP.OH_NN_OPS_WHERE else 0]).dtype
            if shape is None:
                shape = self.shape(*inputs) if op not in (OP.OH_NN_OPS_CAST,) else ctx.value(inputs[0]).shape
            out = ctx.new_value(dtype, shape, f"{self.out}.{op.name[len('OH_NN_OPS_'):].lower()}")
        else:
            ctx.settle(out, shape if shape is not None else
                         ctx.value(inputs[0]).shape if op == OP.OH_NN_OPS_CAST else self.shape(*inputs))
        ctx.emit(op, inputs, [out], params)
        return out

    def cast(self, name: str, dtype, out=None) -> str:
        dtype = np.dtype(dtype)
        if out is None and self.ctx.value(name).dtype == dtype:
            return name
        code = self.const(np.int32(int(from_numpy(dtype))), np.int32)
        return self.op(OP.OH_NN_OPS_CAST, [name, code], dtype=dtype, out=out)

    def expm1(self, x: str) -> str:
        """exp(x) - 1 without cancellation near 0: tanh(x / 2) * (exp(x) + 1)."""
        dt = self.ctx.value(x).dtype
        half = self.op(OP.OH_NN_OPS_MUL, [x, self.const(0.5, dt)])
        t = self.op(OP.OH_NN_OPS_TANH, [half])
        e = self.op(OP.OH_NN_OPS_EXP, [x])
        e1 = self.op(OP.OH_NN_OPS_ADD, [e, self.const(1, dt)])
        return self.op(OP.OH_NN_OPS_MUL, [t, e1])

    def log1p(self, u: str) -> str:
        """log(1 + u) without losing a small u: log(w) * u / (w - 1) with w = 1 + u, and u itself where w == 1."""
        dt = self.ctx.value(u).dtype
        one = self.const(1, dt)
        w = self.op(OP.OH_NN_OPS_ADD, [u, one])
        d = self.op(OP.OH_NN_OPS_SUB, [w, one])
        product = self.op(OP.OH_NN_OPS_MUL, [self.op(OP.OH_NN_OPS_LOG, [w]), u])
        scaled = self.op(OP.OH_NN_OPS_DIV, [product, d])  # 0 / 0 where w == 1: replaced below
        exact = self.op(OP.OH_NN_OPS_EQUAL, [d, self.const(0, dt)])
        return self.op(OP.OH_NN_OPS_WHERE, [exact, u, scaled])

    def softplus(self, x: str, out=None) -> str:
        """log(1 + exp(x)) = relu(x) + log1p(exp(-|x|)) (no overflow for large x, no loss for very negative x)."""
        a = self.op(OP.OH_NN_OPS_ABS, [x])
        e = self.op(OP.OH_NN_OPS_EXP, [a], params={"OH_NN_EXP_SCALE": -1.0})
        r = self.op(OP.OH_NN_OPS_RELU, [x])
        return self.op(OP.OH_NN_OPS_ADD, [r, self.log1p(e)], out=out)


# -- opsets 1-6: align B, then the opset-7 conversion ------------------------------------------------------------------

MODERN = 7  # the first opset with numpy broadcasting


def _read_consumed_inputs(ctx: NodeContext) -> None:
    """``consumed_inputs`` exists in the version-1 schemas only (opsets 1-5); it marks in-place use: ignored."""
    if "consumed_inputs" in ctx.attrs and ctx.opset >= 6:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"consumed_inputs is not an attribute of "
                                                     f"{ctx.node.op_type} at opset {ctx.opset} (only opsets 1-5)")
    ctx.attr("consumed_inputs")


def _delegate(ctx: NodeContext, replaced: dict[int, str]) -> None:
    """Run the opset-7 conversion of this node with some inputs replaced by (aligned) IR values."""
    row = find_row(ctx.node.op_type, MODERN)
    if row is None:
        raise ConversionIssue(INVALID_MODEL, f"no opset-{MODERN} row for {ctx.node.op_type} to delegate to")
    proxy = copy.copy(ctx)  # shares attrs / used_attrs with ctx, so attribute bookkeeping stays in one place
    proxy.row = row
    original_input = ctx.input
    proxy.input = lambda position: replaced[position] if position in replaced else original_input(position)
    handler_for(row)(proxy)


def _align(ctx: NodeContext, name: str, shape: tuple[int, ...]) -> str:
    """``name`` reshaped to ``shape`` (a constant is reshaped offline)."""
    value = ctx.value(name)
    if tuple(value.shape) == tuple(shape):
        return name
    if value.data is not None:
        return ctx.constant(np.ascontiguousarray(value.data.reshape(shape)), f"{name}.aligned")
    ctx.static_shape(name, "B (broadcast along an axis)")
    return ctx.reshape(name, shape)


# -- constant nodes, empty results, attributes and axes ----------------------------------------------------------------

_SHAPE_LIKE_BYTES = 1 << 16  # inputs this small go to shape inference with their values (shapes, axes, repeats)


def _folded_sizes_fit(ctx: NodeContext, values: dict[str, np.ndarray]) -> bool:
    """Whether every output of the node, evaluated on ``values``, fits the folding budget: its shape comes from the
    importer's knowledge or from ONNX shape inference of the lone node (with the values of its small inputs), never
    from evaluating it. An output whose shape cannot be told does not fit."""
    budget = ctx.options.max_constant_bytes
    outputs = [n for n in ctx.node.output if n]
    known = {n: ctx.graph.values[n] for n in outputs if n in ctx.graph.values}
    if all(v.shape is not None and all(d >= 0 for d in v.shape) for v in known.values()) and len(known) == len(outputs):
        return all(int(np.prod(v.shape)) * v.dtype.itemsize <= budget for v in known.values())
    from onnx import TypeProto, numpy_helper, shape_inference

    node = helper.make_node(ctx.node.op_type, list(ctx.node.input), outputs)
    node.attribute.extend(ctx.node.attribute)
    small = {n: a for n, a in values.items() if a.nbytes <= _SHAPE_LIKE_BYTES}
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
              for n, a in values.items() if n not in small]
    graph = helper.make_graph([node], "size", inputs, [helper.make_value_info(n, TypeProto()) for n in outputs],
                              initializer=[numpy_helper.from_array(a, n) for n, a in small.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ctx.opset)])
    try:
        inferred = shape_inference.infer_shapes(model, data_prop=True).graph.output
    except Exception:  # inference rejects it: then it is not folded here
        return False
    for info in inferred:
        tensor_type = info.type.tensor_type
        if not tensor_type.HasField("shape") or any(not d.HasField("dim_value") for d in tensor_type.shape.dim):
            return False
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)).itemsize
        except (KeyError, TypeError, ValueError):
            return False
        if int(np.prod([d.dim_value for d in tensor_type.shape.dim])) * itemsize > budget:
            return False
    return True


def fold_constant_node(ctx: NodeContext) -> bool:
    """A node whose inputs are all constants becomes constant outputs, evaluated by the ONNX reference
    implementation (shape arithmetic in exported graphs, empty tensors included), when every output fits the
    folding budget (checked from the shapes first). Returns whether it did."""
    names = [n for n in ctx.node.input if n]
    if not names:
        return False
    values = {}
    for name in names:
        value = ctx.graph.values.get(ctx.graph.resolve(name))
        if value is None or value.data is None or value.shape is not None and any(d < 0 for d in value.shape):
            return False  # (not a constant, or an empty placeholder of dynamic dims: _empty_result)
        values[name] = value.data
    if not _folded_sizes_fit(ctx, values) or not schema_accepts(ctx.node, values, ctx.opset):
        return False
    from onnx import TypeProto
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node(ctx.node.op_type, list(ctx.node.input), list(ctx.node.output), name=ctx.name)
    node.attribute.extend(ctx.node.attribute)
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
              for n, a in values.items()]
    outputs = [helper.make_value_info(n, TypeProto()) for n in ctx.node.output if n]
    model = helper.make_model(helper.make_graph([node], "fold", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", ctx.opset)])
    size = reference_output_bytes(node, values, ctx.opset)  # from the shapes, before anything is computed
    if size is None or not budget.current().admit(size):
        return False  # unknown or over the import's budget: converted normally (an op computed at run time)
    try:
        results = [np.asarray(r) for r in ReferenceEvaluator(model).run(None, values)]
        for r in results:
            from_numpy(r.dtype)
    except Exception:  # the reference rejects it: convert normally, which reports the problem
        return False
    for attribute in ctx.node.attribute:
        ctx.attr(attribute.name)
    for name, array in zip((n for n in ctx.node.output if n), results):
        ctx.graph.add_value(_constant_value(name, np.asarray(array)))
    return True


def _constant_value(name: str, array: np.ndarray):
    from ...ir.graph import Value

    array = np.ascontiguousarray(array).reshape(np.shape(array))
    return Value(name, array.dtype, tuple(array.shape), array)


def _empty_result(ctx: NodeContext, name: str, shape, dtype) -> bool:
    """An output with a 0 dim holds nothing, whatever the inputs: it becomes an empty constant (consumers drop it
    or report it; NNRt itself has no empty tensors). Returns whether it did."""
    if shape is None or not any(d == 0 for d in shape):
        return False
    dims = [max(int(d), 0) for d in shape]
    check_dims(dims, f"the empty result {name!r}")  # (numpy refuses absurd dims)
    if any(d < 0 for d in shape):
        from ...ir.graph import Value

        # empty at every size of its dynamic dims: an empty placeholder that keeps them dynamic (-1), which nothing
        # folds (fold_constant_node) -- folding it as one size of them gave
        # constants of that size, and errors about a 0 batch (fuzzer seed 8191: Conv after an uneven Split)
        ctx.graph.add_value(Value(name, np.dtype(dtype), tuple(int(d) for d in shape), np.zeros(dims, dtype)))
        return True
    ctx.graph.add_value(_constant_value(name, np.zeros(dims, dtype)))
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


def _ints_attr(ctx: NodeContext, name: str, nd: int, default: int) -> list[int]:
    """An int-list attribute with ``nd`` values (``default`` each when absent)."""
    value = ctx.attr(name)
    if value is None:
        return [default] * nd
    value = [int(v) for v in value]
    if len(value) != nd:
        raise ConversionIssue(INVALID_MODEL, f"{name}={value} needs {nd} values")
    return value


def _norm_axis(ctx: NodeContext, axis: int, rank: int, what: str = "axis") -> int:
    axis = int(axis)
    if not -rank <= axis < max(rank, 1):
        raise ConversionIssue(INVALID_MODEL, f"{what}={axis} is out of range for an input of rank {rank}")
    return axis + rank if axis < 0 else axis


def _norm_axes(ctx: NodeContext, axes, rank: int) -> list[int]:
    out = []
    for a in axes:
        n = _norm_axis(ctx, a, rank, "axes")
        if n in out:
            raise ConversionIssue(INVALID_MODEL, f"axis {a} is repeated in axes {list(axes)}")
        out.append(n)
    return sorted(out)


# -- small emit helpers: every new tensor gets a dtype and a shape -----------------------------------------------------

def _shape(ctx: NodeContext, name: str, what: str = "tensor") -> tuple[int, ...]:
    """The static shape of ``name`` (DYNAMIC_SHAPE unless every dim is known)."""
    return tuple(ctx.static_shape(name, what))


def _ranked_shape(ctx: NodeContext, name: str) -> tuple[int, ...]:
    """The shape of ``name``, unknown dims -1 (DYNAMIC_SHAPE when the rank is unknown)."""
    shape = ctx.value(name).shape
    if shape is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {name!r} is unknown")
    return tuple(shape)


def _broadcast(*shapes) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ConversionIssue(INVALID_MODEL, f"shapes {[list(s) for s in shapes]} do not broadcast together") \
            from None


def _reduced_shape(shape, axes, keep: bool) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)


def _reshape(ctx: NodeContext, name: str, shape: Sequence[int], output: str | None = None) -> str:
    """``name`` reshaped to ``shape`` (NodeContext.reshape) into ``output``, settled to that shape and ``name``'s dtype,
    or into a new tensor; ``name`` itself when it has that shape already and no output is asked for. To a scalar:
    SQUEEZE without axes (a shape tensor cannot be empty). More than one unknown dim: DYNAMIC_SHAPE."""
    shape = [int(d) for d in shape]
    if sum(d < 0 for d in shape) > 1:
        raise ConversionIssue(DYNAMIC_SHAPE, f"reshaping {name!r} to {list(shape)} needs static dims")
    if output is None and ctx.value(name).shape is not None and tuple(ctx.value(name).shape) == tuple(shape):
        return name
    if output is not None:
        ctx.settle(output, shape, ctx.value(name).dtype)
    if not shape:  # to a scalar: SQUEEZE without axes (a shape tensor cannot be empty)
        out = output or ctx.new_value(ctx.value(name).dtype, (), f"{name}.scalar")
        ctx.emit(OP.OH_NN_OPS_SQUEEZE, [name], [out])
        return out
    return ctx.reshape(name, shape, output=output)


def _transpose(ctx: NodeContext, name: str, perm: Sequence[int], output: str | None = None) -> str:
    """TRANSPOSE (NodeContext.transpose) into ``output``, settled to the permuted shape and ``name``'s dtype, or into
    a new tensor; ``name`` itself for the identity permutation when no output is asked for."""
    if output is None and list(perm) == list(range(len(perm))):
        return name
    shape = ctx.value(name).shape
    if output is not None:
        ctx.settle(output, None if shape is None else [shape[p] for p in perm], ctx.value(name).dtype)
    return ctx.transpose(name, list(perm), output=output)


def _binary(ctx: NodeContext, op: OP, a: str, b: str, hint: str, output: str | None = None, dtype=None) -> str:
    """``op(a, b)`` into ``output`` or a new tensor of the broadcast shape (an unknown dim takes the other operand's;
    None when a rank is unknown) and ``dtype``: by default a's, unless only b is a float."""
    va, vb = ctx.value(a), ctx.value(b)
    if va.shape is None or vb.shape is None:
        shape = None
    else:
        rank = max(len(va.shape), len(vb.shape))
        sa = (1,) * (rank - len(va.shape)) + tuple(va.shape)
        sb = (1,) * (rank - len(vb.shape)) + tuple(vb.shape)
        shape = tuple(x if y == 1 else y if x == 1 else (x if x >= 0 else y) for x, y in zip(sa, sb))
    if dtype is None:
        dtype = va.dtype if va.dtype.kind == "f" or vb.dtype.kind != "f" else vb.dtype
    return ctx.emit_to(op, [a, b], dtype, shape, hint, output=output)


def _compare(ctx: NodeContext, op: OP, a: str, b: str, hint: str) -> str:
    return _binary(ctx, op, a, b, hint, dtype=np.bool_)


def _unary(ctx: NodeContext, op: OP, x: str, hint: str, output: str | None = None, params=None) -> str:
    value = ctx.value(x)
    return ctx.emit_to(op, [x], value.dtype, value.shape, hint, params, output)


def _const(ctx: NodeContext, value, dtype, hint: str) -> str:
    return ctx.constant(np.asarray(value, dtype=dtype), f"{ctx.name}.{hint}")


def _cast(ctx: NodeContext, name: str, dtype, hint: str | None = None, output: str | None = None) -> str:
    value = ctx.value(name)
    dtype = np.dtype(dtype)
    if value.dtype == dtype and output is None:
        return name
    code = ctx.constant(np.asarray(int(from_numpy(dtype)), np.int32), f"{name}.to")
    return ctx.emit_to(OP.OH_NN_OPS_CAST, [name, code], dtype, value.shape, hint or f"{name}.{dtype}", output=output)


def _concat(ctx: NodeContext, parts: Sequence[str], axis: int, hint: str, output: str | None = None) -> str:
    shapes = [_ranked_shape(ctx, p) for p in parts]
    shape = [max(s[d] for s in shapes) for d in range(len(shapes[0]))]  # (a known dim wins over -1)
    shape[axis] = -1 if any(s[axis] < 0 for s in shapes) else sum(s[axis] for s in shapes)
    return ctx.emit_to(OP.OH_NN_OPS_CONCAT, list(parts), ctx.value(parts[0]).dtype, shape, hint,
                 {"OH_NN_CONCAT_AXIS": axis}, output)


def _reduce(ctx: NodeContext, kind: str, x: str, axes: Sequence[int], keep: bool, hint: str,
            output: str | None = None) -> str:
    """REDUCE_<kind> over explicit (normalised) axes."""
    value = ctx.value(x)
    shape = _reduced_shape(_ranked_shape(ctx, x), axes, keep)
    params = {f"OH_NN_REDUCE_{kind}_KEEP_DIMS": bool(keep), f"OH_NN_REDUCE_{kind}_COEFF": 1.0}
    axis = ctx.constant(np.asarray(list(axes), np.int32), f"{ctx.name}.axes")
    return ctx.emit_to(OP[f"OH_NN_OPS_REDUCE_{kind}"], [x, axis], value.dtype, shape, hint, params, output)


def _where(ctx: NodeContext, cond: str, a: str, b: str, hint: str, output: str | None = None) -> str:
    shapes = [ctx.value(n).shape for n in (cond, a, b)]
    known = all(s is not None and all(d >= 0 for d in s) for s in shapes)
    shape = _broadcast(*shapes) if known else bshape(*shapes)  # (-1 for a dynamic dim)
    dtype = ctx.value(a).dtype
    return ctx.emit_to(OP.OH_NN_OPS_WHERE, [cond, a, b], dtype, shape, hint, output=output)


def _matmul(ctx: NodeContext, a: str, b: str, hint: str, transpose_b: bool = False) -> str:
    va, vb = ctx.value(a), ctx.value(b)
    bs = list(vb.shape)
    n = bs[-2] if transpose_b else bs[-1]
    batch = bshape(tuple(va.shape[:-2]), tuple(bs[:-2]))  # (-1 for a dynamic dim)
    shape = (*batch, va.shape[-2], n) if len(va.shape) >= 2 else (*batch, n)
    params = {"OH_NN_MATMUL_TRANSPOSE_B": True} if transpose_b else {}
    return ctx.emit_to(OP.OH_NN_OPS_MATMUL, [a, b], va.dtype, shape, hint, params)


def _arg_max(ctx: NodeContext, x: str, axis: int, keep: bool, index_dtype, hint: str,
             output: str | None = None) -> str:
    shape = _reduced_shape(_ranked_shape(ctx, x), [axis], keep)
    params = {"OH_NN_ARG_MAX_AXIS": axis, "OH_NN_ARG_MAX_KEEPDIMS": bool(keep), "OH_NN_ARG_MAX_TOP_K": 1,
              "OH_NN_ARG_MAX_OUT_MAX_VALUE": False}
    return ctx.emit_to(OP.OH_NN_OPS_ARG_MAX, [x], index_dtype, shape, hint, params, output)


def _float_input(ctx: NodeContext, name: str) -> np.dtype:
    dtype = ctx.value(name).dtype
    if dtype not in _FLOATS:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} on {dtype} input {name!r} is not supported "
                                                 "(float16/float32/float64 only)", tensor=name)
    return dtype


def _float_dtype(ctx: NodeContext, name: str, what: str) -> np.dtype:
    dtype = np.dtype(ctx.value(name).dtype)
    if dtype.name not in FLOAT:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{what} {name!r} has dtype {dtype.name}: {ctx.node.op_type} on NNRt "
                                                 f"supports {', '.join(FLOAT)}", tensor=name)
    return dtype


def _float_only(ctx: NodeContext, name: str) -> None:
    dtype = ctx.value(name).dtype
    if dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} on {dtype} input is not supported "
                                                 "(float16/float32/float64 only)", tensor=name)


def _wanted(ctx: NodeContext, position: int) -> bool:
    return position < len(ctx.node.output) and ctx.node.output[position] != ""


# -- spatial ops: NCHW <-> NHWC, pads ----------------------------------------------------------------------------------

def _unsupported(message: str) -> ConversionIssue:
    return ConversionIssue(UNSUPPORTED_ATTRIBUTE, message)


def _known(shape) -> bool:
    return shape is not None and all(d >= 0 for d in shape)


def _set_shape(ctx: NodeContext, name: str, shape: Sequence[int]) -> None:
    """Record a shape we computed on an output whose inferred shape is missing or partly unknown."""
    value = ctx.value(name)
    if value.shape is None or len(value.shape) != len(shape) or any(d < 0 for d in value.shape):
        value.shape = tuple(int(d) for d in shape)


def _spatial_rank(ctx: NodeContext, x: str, what: str, allow_3d: bool = False) -> int:
    rank = ctx.rank(x)
    nd = rank - 2
    if nd < 1:
        raise ConversionIssue(INVALID_MODEL, f"{what} needs an [N, C, spatial...] input, {x!r} has rank {rank}")
    if nd > 2 and not allow_3d:
        raise _unsupported(f"{nd}-D {what} is not supported: NNRt has only 2-D {what} ops (input rank {rank})")
    return nd


def _onnx_pads(ctx: NodeContext, nd: int, kernel, strides, dilations, in_sizes, allow_modes=True):
    """(begin, end) per spatial dim, or ("mode", 0|1) when auto_pad needs the NNRt pad mode (dynamic dims)."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    pads_attr = ctx.attr("pads")
    if auto_pad in ("NOTSET", ""):
        pads = [int(p) for p in pads_attr] if pads_attr is not None else [0] * (2 * nd)
        if len(pads) != 2 * nd:
            raise ConversionIssue(INVALID_MODEL, f"pads={pads} needs {2 * nd} values")
        if any(p < 0 for p in pads):
            raise _unsupported(f"negative pads {pads} are not supported")
        return geometry.onnx_pads_to_axes(pads)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        raise _unsupported(f"auto_pad={auto_pad!r} is not supported")
    if auto_pad != "VALID" and not _known(in_sizes):
        if auto_pad == "SAME_UPPER" and allow_modes:
            return ("mode", geometry.AUTO_PAD_PAD_MODES[auto_pad])
        if allow_modes:  # SAME_LOWER: NNRt's SAME puts the odd unit at the end; padded at run time (_same_lower_pad)
            return ("lower", None)
        raise ConversionIssue(DYNAMIC_SHAPE, f"auto_pad={auto_pad} needs static spatial dims, got {list(in_sizes)}")
    return [geometry.auto_pad_padding(auto_pad, size, geometry.effective_extent(k, d), s)
            for size, k, s, d in zip(in_sizes, kernel, strides, dilations)]


def _same_lower_pad(ctx: NodeContext, x: str, kernel, strides, dilations, fill: float) -> str:
    """``x`` padded for auto_pad=SAME_LOWER over dynamic spatial dims, the padding computed at run time per axis:
    total = max((ceil(in / stride) - 1) * stride + extent - in, 0), the odd unit at the beginning; the operation
    then runs VALID."""
    from ._dims import dims_tensor

    i64 = np.int64
    rank = ctx.rank(x)
    shape = list(ctx.value(x).shape)
    pieces = [ctx.constant(np.zeros(4, i64), f"{x}.no_pad")]
    for i, (k, s, d) in enumerate(zip(kernel, strides, dilations)):
        axis = 2 + i
        size = dims_tensor(ctx, x, [axis])
        extent = geometry.effective_extent(k, d)

        def const(v):
            return ctx.constant(np.asarray([v], i64))

        out = _binary(ctx, OP.OH_NN_OPS_DIV, _binary(ctx, OP.OH_NN_OPS_ADD, size, const(s - 1), f"{x}.up{axis}"),
                      const(s), f"{x}.windows{axis}")
        span = _binary(ctx, OP.OH_NN_OPS_MUL, _binary(ctx, OP.OH_NN_OPS_SUB, out, const(1), f"{x}.last{axis}"),
                       const(s), f"{x}.span{axis}")
        total = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, _binary(ctx, OP.OH_NN_OPS_SUB, _binary(
            ctx, OP.OH_NN_OPS_ADD, span, const(extent), f"{x}.reach{axis}"), size, f"{x}.missing{axis}"), const(0),
            f"{x}.total{axis}")
        begin = _binary(ctx, OP.OH_NN_OPS_DIV, _binary(ctx, OP.OH_NN_OPS_ADD, total, const(1), f"{x}.odd{axis}"),
                        const(2), f"{x}.begin{axis}")
        pieces += [begin, _binary(ctx, OP.OH_NN_OPS_SUB, total, begin, f"{x}.end{axis}")]
        shape[axis] = -1
    flat = ctx.emit_to(OP.OH_NN_OPS_CONCAT, pieces, i64, (2 * rank,), f"{x}.same_lower", {"OH_NN_CONCAT_AXIS": 0})
    paddings = ctx.reshape(flat, [rank, 2])
    return ctx.emit_to(OP.OH_NN_OPS_PAD, [x, paddings], ctx.value(x).dtype, shape, f"{x}.same_lower_padded",
                       {"OH_NN_PAD_CONSTANT_VALUE": float(fill)})


def _into_nhwc(ctx: NodeContext, x: str, nd: int) -> str:
    """NC(H)W -> NHWC (1-D [N, C, L] becomes [N, 1, L, C])."""
    if nd == 2:
        return ctx.transpose(x, NCHW_TO_NHWC)
    n, c, length = ctx.value(x).shape
    moved = ctx.transpose(x, (0, 2, 1))
    if sum(d < 0 for d in (n, c, length)) <= 1:
        return _reshape(ctx, moved, [n, 1, length, c])
    return ctx.emit_to(OP.OH_NN_OPS_UNSQUEEZE, [moved], ctx.value(x).dtype, [n, 1, length, c], f"{x}.nhwc",
                       {"OH_NN_UNSQUEEZE_AXIS": 1})  # (several dynamic dims: RESHAPE takes one -1)


def _nhwc_shape(nd: int, out_shape) -> tuple[int, ...] | None:
    if out_shape is None:
        return None
    if nd == 2:
        return geometry.permute(out_shape, NCHW_TO_NHWC)
    return (out_shape[0], 1, out_shape[2], out_shape[1])


def _out_of_nhwc(ctx: NodeContext, y: str, nd: int, out: str) -> None:
    if nd == 2:
        ctx.transpose(y, NHWC_TO_NCHW, output=out)
        return
    n, _, length, c = ctx.value(y).shape
    if sum(d < 0 for d in (n, c, length)) <= 1:
        squeezed = _reshape(ctx, y, [n, length, c])
    else:
        squeezed = ctx.emit_to(OP.OH_NN_OPS_SQUEEZE, [y], ctx.value(y).dtype, [n, length, c], f"{y}.1d",
                               {"OH_NN_SQUEEZE_AXIS": [1]})
    ctx.transpose(squeezed, (0, 2, 1), output=out)


# -- integer arithmetic shared by the quantization and recurrent families ----------------------------------------------

def _clip(ctx: NodeContext, x: str, lo: float, hi: float, hint: str) -> str:
    return _unary(ctx, OP.OH_NN_OPS_CLIP, x, hint, params={"OH_NN_CLIP_MIN": float(lo), "OH_NN_CLIP_MAX": float(hi)})


def _dynamic_quantize(ctx: NodeContext, x: str, hint: str, output: str | None = None) -> tuple[str, str, str]:
    """uint8 quantization of the float32 ``x`` with computed parameters, step by step as the ONNX reference and
    onnxruntime's dynamic quantization (DynamicQuantizeLinear, and the A side of DynamicQuantizeMatMul and of
    DynamicQuantizeLSTM's products): scale = (max(0, max x) - min(0, min x)) / 255 (1 for an all-zero range, as
    onnxruntime), zero point = round(clip(-min / scale, 0, 255)), q = clip(round(x / scale) + zero point, 0, 255).

    Returns (q as uint8 into ``output`` or a new tensor, scale (1,) float32, zero point (1,) float32)."""
    shape = _ranked_shape(ctx, x)
    f32 = np.float32
    flat = _reshape(ctx, x, (int(np.prod(shape)) if _known(shape) else -1,)) if len(shape) != 1 else x
    high = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, _reduce(ctx, "MAX", flat, [0], True, f"{hint}.max"),
                   _const(ctx, 0, f32, "zero"), f"{hint}.max0")
    low = _binary(ctx, OP.OH_NN_OPS_MINIMUM, _reduce(ctx, "MIN", flat, [0], True, f"{hint}.min"),
                  _const(ctx, 0, f32, "zero"), f"{hint}.min0")
    spread = _binary(ctx, OP.OH_NN_OPS_SUB, high, low, f"{hint}.range")
    scale = _binary(ctx, OP.OH_NN_OPS_DIV, spread, _const(ctx, 255, f32, "qrange"), f"{hint}.scale_of_range")
    scale = _where(ctx, _compare(ctx, OP.OH_NN_OPS_EQUAL, spread, _const(ctx, 0, f32, "zero"), f"{hint}.flat_range"),
                   _const(ctx, 1, f32, "one"), scale, f"{hint}.scale")
    initial = _binary(ctx, OP.OH_NN_OPS_SUB, _const(ctx, 0, f32, "zero"),
                      _binary(ctx, OP.OH_NN_OPS_DIV, low, scale, f"{hint}.min_over_scale"), f"{hint}.initial_zero_point")
    zero_point = _unary(ctx, OP.OH_NN_OPS_ROUND, _clip(ctx, initial, 0, 255, f"{hint}.zp_clipped"), f"{hint}.zp")
    quotient = _binary(ctx, OP.OH_NN_OPS_DIV, x, scale if len(shape) else _reshape(ctx, scale, ()), f"{hint}.scaled")
    shifted = _binary(ctx, OP.OH_NN_OPS_ADD, _unary(ctx, OP.OH_NN_OPS_ROUND, quotient, f"{hint}.rounded"),
                      zero_point if len(shape) else _reshape(ctx, zero_point, ()), f"{hint}.shifted")
    q = _cast(ctx, _clip(ctx, shifted, 0, 255, f"{hint}.clipped"), np.uint8, f"{hint}.quantized", output=output)
    return q, scale, zero_point


def _integer_product(ctx: NodeContext, a: str, a_zp: str | None, b: str, b_zp: str | None, hint: str,
                     output: str | None = None) -> str:
    """(int32(A) - a_zp) @ (int32(B) - b_zp), an exact int32 MATMUL."""
    for name in (a, b):
        if ctx.value(name).dtype not in (np.int8, np.uint8):
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"{name!r} has dtype {ctx.value(name).dtype} (int8/uint8 only)")
    a32 = _cast(ctx, a, np.int32, f"{a}.i32")
    b32 = _cast(ctx, b, np.int32, f"{b}.i32")
    if a_zp is not None:
        a32 = _binary(ctx, OP.OH_NN_OPS_SUB, a32, a_zp, f"{a}.centred")
    if b_zp is not None:
        b32 = _binary(ctx, OP.OH_NN_OPS_SUB, b32, b_zp, f"{b}.centred")
    sa, sb = _ranked_shape(ctx, a32), _ranked_shape(ctx, b32)
    if len(sa) < 1 or len(sb) < 1:
        raise ConversionIssue(INVALID_MODEL, "matrix product operands must have rank >= 1")
    out_shape = _matmul_shape(sa, sb)
    return ctx.emit_to(OP.OH_NN_OPS_MATMUL, [a32, b32], np.int32, out_shape, hint, output=output)


def _matmul_shape(sa, sb) -> tuple[int, ...]:
    a1, b1 = len(sa) == 1, len(sb) == 1
    sa = (1, *sa) if a1 else tuple(sa)
    sb = (*sb, 1) if b1 else tuple(sb)
    batch_a, batch_b = sa[:-2], sb[:-2]
    rank = max(len(batch_a), len(batch_b))
    batch_a = (1,) * (rank - len(batch_a)) + batch_a
    batch_b = (1,) * (rank - len(batch_b)) + batch_b
    batch = tuple(x if y == 1 else y for x, y in zip(batch_a, batch_b))
    shape = (*batch, sa[-2], sb[-1])
    if a1:
        shape = shape[:-2] + shape[-1:]
    if b1:
        shape = shape[:-1]
    return shape


# -- ops on the integers of a quantized tensor ------------------------------------------------------------------------

def raw_quantized(ctx: NodeContext, name: str) -> bool:
    """``name`` is an int8/uint8 tensor carrying per-tensor quant params that the ONNX graph reads as integers (a
    QuantizeLinear or QOperator output, ir.quantized): what onnxruntime's QOperator quantizer leaves ops such as
    Pad and Resize on."""
    value = ctx.value(name)
    return (value.data is None and value.quant is not None and value.quant.count == 1
            and value.dtype in (np.dtype(np.int8), np.dtype(np.uint8)))


def through_real_values(ctx: NodeContext, x: str, out: str, build) -> None:
    """An op the ONNX graph applies to the integers of the quantized tensor ``x`` whose result is that op on the real
    values, quantized with x's parameters (a resize interpolates with weights summing to 1, a pad fills with a
    value): x dequantized (QUANT_DTYPE_CAST), ``build(real, real_out)`` converting the float op, the result
    quantized with x's parameters into ``out`` (read as integers too when x is). The qdq pass then folds the group
    into the quantized op where NNRt quantizes it, or reports it as a float fallback."""
    from ...tensor import QuantParam

    value = ctx.value(x)
    quant = value.quant
    real = ctx.new_value(_F32, value.shape, f"{x}.real")
    ctx.emit(OP.OH_NN_OPS_QUANT_DTYPE_CAST, [x], [real], _quant_cast_params(value.dtype, _F32))
    real_out = ctx.new_value(_F32, None, f"{out}.real")
    build(real, real_out)
    ctx.settle(out, ctx.value(real_out).shape, value.dtype, force=True)
    ctx.value(out).quant = QuantParam(quant.scales, quant.zero_points, quant.num_bits)
    if x in ctx.graph.quantization.raw:
        ctx.graph.quantization.raw.add(out)
    ctx.emit(OP.OH_NN_OPS_QUANT_DTYPE_CAST, [real_out], [out], _quant_cast_params(_F32, value.dtype))


_F32 = np.dtype(np.float32)


def _quant_cast_params(src, dst) -> dict:
    return {"OH_NN_QUANT_DTYPE_CAST_SRC_T": int(from_numpy(src)), "OH_NN_QUANT_DTYPE_CAST_DST_T": int(from_numpy(dst))}
