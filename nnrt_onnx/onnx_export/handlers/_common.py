"""Helpers the export functions of several families share: the registering decorators that read quantized constant
inputs through DequantizeLinear, readers of an op's dtypes, shapes and parameters, small builders of function bodies
(int64 and typed constants, casts, float16 widening), the element-wise machinery that emits one standard node or an
NNRt-domain function computing in a dtype onnxruntime has a kernel for, and the layout helpers of the NHWC ops.

Decisions:

* An export function either emits ONE standard ONNX node (``main=True``) -- only where the importer's handler for
  that ONNX op gives back exactly this NNRt op and parameter set -- or an NNRt-domain function (``emit_custom``)
  whose body computes exactly what the native kernel computes.
* The importer always writes some parameters (CONCAT's axis, REDUCE_*'s keep_dims and coeff ...); the exact
  parameters travel as metadata only when the model gave some, so an op given *no* parameters whose importer adds
  them is exported as a function (the round trip would otherwise gain parameters): ``_has_params``.
* float16 operands of accumulating ops (reductions, products, softmax, normalisations) are widened to float32 in
  the function body and the result narrowed back, as the native kernels do (``_work``, ``_widen``); max/min/arg-max/
  top-k are exact in any width.
* Quantized constant inputs are read through a DequantizeLinear (``_export``; ``exporter`` for the element-wise and
  activation ops).
* Element-wise and activation ops (``emit_node``, ``emit_function``, ``emit_body``): an op is ONE standard ONNX node
  (``main``) when importing that node gives back exactly this NNRt op and the node computes what the native kernel
  computes: every input already in the dtype the op computes in (the output's: the kernels promote mixed dtypes;
  numpy's for comparisons), and onnxruntime's CPU provider has a kernel for it (``_ORT``: what every onnxruntime
  from 1.20 to 1.32 has). Otherwise it becomes an NNRt-domain function (exact round trip by construction) whose
  body casts the inputs to that dtype, widened where onnxruntime has no kernel (``_WIDER``: a wider type in which
  the result, cast back, is the same; integers wrap like C both ways), runs the standard node(s) and casts the
  result to the NNRt output dtype. With no exact wider type (uint64 Div or comparisons, float64 Cos) the node stays
  in its dtype: onnxruntime 1.32 runs those, older versions do not.
* A fused activation that onnxruntime has no Relu / Clip kernel for on the output dtype (int16, unsigned) is
  applied inside the op's function instead of by the exporter's node after it.
* Opsets: the type constraints of each node's schema at the export opset count as well (``_supported``);
  checked against onnxruntime at opsets 13 to 24.
* NHWC ops: one standard ONNX node when importing it gives back exactly this op: the NHWC op then runs as the ONNX
  NCHW op between transposes (the registration's ``nchw`` predicate says so per node). Otherwise -- non-constant
  weights, dtypes onnxruntime has no kernel for, a layout transpose that only moves unit dims (it becomes a
  Reshape, which imports as RESHAPE), parameter combinations the importer maps to another op -- the op becomes
  an NNRt-domain function of standard ops working on the NHWC tensors, exact on round trip by construction.
* Pads are explicit (static shapes): SAME (NNAPI/TF: ``out = ceil(in/stride)``, the odd unit at the end) and
  VALID are computed like the kernels do; pad lists ``[top, bottom, left, right]`` become
  ``pads = [top, left, bottom, right]``. (onnxruntime rejects ``auto_pad`` SAME with dilations.)
* Not exported (ExportIssue): quantized tensors of the NHWC ops (``_no_quant``); shapes that are not static.
"""
from __future__ import annotations

import functools
import sys
from functools import cache
from typing import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from ...dtypes import dequantize
from ...geometry import NCHW_TO_NHWC, NHWC_TO_NCHW, permute
from ...ir.graph import Value
from ...ir.passes import only_moves_unit_dims
from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter as _register

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
FLOATS = ("float16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
_NUMBERS = frozenset(FLOATS + SIGNED + UNSIGNED)
_FLOAT_ONLY = frozenset(FLOATS)

# The dtypes onnxruntime's CPU provider has kernels for, in every version from 1.20 to 1.32 (opset 18; newer
# versions add e.g. int8 / int16 / unsigned Add, Sub, Mul, Div and comparisons, float64 Cos, int8 Where).
_LEGACY_INTS = frozenset({"int32", "int64"})
_ORT: dict[str, frozenset[str]] = {
    **{op: _FLOAT_ONLY | _LEGACY_INTS for op in ("Add", "Sub", "Mul", "Div", "Pow", "Less", "LessOrEqual",
                                                "Greater", "GreaterOrEqual")},
    "Equal": _FLOAT_ONLY | _LEGACY_INTS | {"bool"},
    **{op: _FLOAT_ONLY | _LEGACY_INTS | {"uint32", "uint64"} for op in ("Max", "Min")},
    "Clip": _NUMBERS - {"int16", "uint16"},
    **{op: _NUMBERS for op in ("Mod", "Abs")},
    "Neg": _FLOAT_ONLY | {"int8", "int32", "int64"},
    "Relu": _FLOAT_ONLY | {"int8", "int32", "int64"},
    "Where": _FLOAT_ONLY | _LEGACY_INTS | {"uint8"},
    "PRelu": _FLOAT_ONLY,
    "LeakyRelu": frozenset({"float16", "float32"}),  # float64 only at opset 18 (through the function body)
    "Erf": frozenset({"float16", "float32"}),
    **{op: frozenset({"bool"}) for op in ("And", "Or", "Xor", "Not")},
}

# Wider dtypes an op can run in instead, giving the same result once cast back: order and (integers wrap like C
# both ways) the low bits of sums, differences and products are kept. uint64 <-> int64 is a bit-exact
# reinterpretation: right for the ops that only add, subtract, multiply or move values (_BIT_EXACT).
_WIDER = {"int8": ("int32", "int64"), "int16": ("int32", "int64"), "uint8": ("int32", "int64"),
          "uint16": ("int32", "int64"), "uint32": ("int64",), "bool": ("uint8", "int32")}
_BIT_EXACT = frozenset({"Add", "Sub", "Mul", "Where"})

_TENSOR_TYPES = {f"tensor({'float' if n == 'float32' else 'double' if n == 'float64' else n})": n
                 for n in FLOATS + SIGNED + UNSIGNED + ("bool",)}

# dtypes of onnxruntime's CPU kernels
_ORT_FLOAT = (F16, F32)  # Conv, ConvTranspose, AveragePool, LRN, Resize, LSTM
_ORT_PAD = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.uint32,
                                       np.int64, np.uint64, np.bool_))

_TO_NHWC, _TO_NCHW = list(NCHW_TO_NHWC), list(NHWC_TO_NCHW)


# -- registering --------------------------------------------------------------------------------------------------

def exporter(op_name: str):
    """Register an export function, which finds quantized constant operands already read through
    DequantizeLinear (as the exporter does for the inputs of ops without an export function)."""
    module = sys._getframe(1).f_globals["__name__"]  # the registering family module (also of a made function)

    def register(fn):
        def export(ctx: ExportContext) -> None:
            _dequantize_constants(ctx)
            fn(ctx)
        export.__name__, export.__doc__, export.__module__ = fn.__name__, fn.__doc__, module
        _register(op_name)(export)
        return fn
    return register


def _dequantize_constants(ctx: ExportContext) -> None:
    for position, name in enumerate(ctx.node.inputs):
        value = ctx.value(name)
        if value.quant is not None and value.data is not None:
            float_name = ctx.weight(position)
            ctx.graph.values.setdefault(float_name, Value(float_name, F32, value.shape))
            ctx.node.inputs[position] = float_name


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
        return _register(op_name, nchw=nchw)(wrapped)
    return register


# -- reading the op -----------------------------------------------------------------------------------------------

def _dtype(ctx: ExportContext, name: str) -> np.dtype:
    return np.dtype(ctx.value(name).dtype)


def _input_dtype(ctx: ExportContext, position: int = 0) -> np.dtype:
    return _dtype(ctx, ctx.input(position))


def _in_dtypes(ctx: ExportContext) -> list[np.dtype]:
    return [_dtype(ctx, n) for n in ctx.node.inputs]


def _out_dtype(ctx: ExportContext, position: int = 0) -> np.dtype:
    return _dtype(ctx, ctx.output(position))


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


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1).tolist()]


def _pair(values, what: str) -> list[int]:
    values = _ints(values)
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise ExportIssue(f"{what} {values} must have 2 values")
    return values


def _pad_list(args) -> list[int]:
    values = _ints(args.get("pad_list", [])) or [0, 0, 0, 0]
    if len(values) != 4:
        raise ExportIssue(f"pad list {values} must have 4 values")
    return values


def _has_params(ctx: ExportContext) -> bool:
    """The node carries parameters, so their metadata restores them exactly on re-import."""
    return bool(ctx.node.params)


# -- function bodies ----------------------------------------------------------------------------------------------

def _elem(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _i64(f: FunctionBody, values) -> str:
    return f.constant(np.asarray(values, np.int64))


def _const(f: FunctionBody, values, dtype) -> str:
    return f.constant(np.asarray(values, dtype=dtype))


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
    return np.dtype(np.float32) if np.dtype(dtype) == F16 else np.dtype(dtype)


def _widen(f: FunctionBody, name: str, dtype) -> str:
    """float16 -> float32 (the native kernels' accumulation type); anything else as it is."""
    return _cast(f, name, np.float32) if np.dtype(dtype) == F16 else name


# -- element-wise ops: one node, or a function computing in a dtype onnxruntime has a kernel for ------------------

def _activation_inline(ctx: ExportContext) -> int:
    """The fused activation a function body has to apply itself: one whose node (Relu / Clip, emitted by the
    exporter after the op) onnxruntime has no kernel for on the output's dtype (RELU on unsigned and int16
    outputs, RELU6 on int16 / uint16 ones); 0 when there is none."""
    fuse = int(ctx.args.get(ctx.spec.fuse, 0)) if ctx.spec.fuse else 0
    if not fuse:
        return 0
    return 0 if _out_dtype(ctx).name in _supported("Relu" if fuse == 1 else "Clip", ctx.opset) else fuse


def _apply_activation(f: FunctionBody, y: str, dt: np.dtype, fuse: int, opset: int) -> str:
    run = _runs_in("Clip", dt, opset)
    bounds = [_const(f, 0, run)] + ([_const(f, 6, run)] if fuse == 2 else [])
    return _cast_to(f, f.one("Clip", [_cast_to(f, y, dt, run)] + bounds), run, dt)


@cache
def _supported(op_type: str, opset: int, schema_only: bool = False) -> frozenset[str]:
    """The dtypes ``op_type`` takes (its data operand: the second input of Where) at ``opset`` and onnxruntime
    has a kernel for (``schema_only``: the schema's types)."""
    try:
        schema = onnx.defs.get_schema(op_type, opset)
    except onnx.defs.SchemaError:
        return frozenset()
    operand = schema.inputs[1 if op_type == "Where" else 0].type_str
    allowed = next((c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == operand), [])
    types = frozenset(_TENSOR_TYPES[t] for t in allowed if t in _TENSOR_TYPES)
    return types & _ORT[op_type] if op_type in _ORT and not schema_only else types


def _runs_in(op_type: str, dtype: np.dtype, opset: int) -> np.dtype:
    """``dtype``, or a wider dtype ``op_type`` runs in where onnxruntime has no kernel for ``dtype``; ``dtype``
    itself when there is none but the schema takes it (newer onnxruntime versions run it)."""
    dtype = np.dtype(dtype)
    supported = _supported(op_type, opset)
    if dtype.name in supported:
        return dtype
    candidates = _WIDER.get(dtype.name, ())
    if dtype.name == "uint64" and op_type in _BIT_EXACT:
        candidates = ("int64",)
    for wider in candidates:
        if wider in supported:
            return np.dtype(wider)
    if dtype.name in _supported(op_type, opset, schema_only=True):
        return dtype
    raise ExportIssue(f"{op_type} on {dtype.name} at opset {opset}: not in the operator's types, and no exact "
                      f"wider type is")


def _single(ctx: ExportContext, op_type: str, inputs: Sequence[str] | None = None, **attrs) -> None:
    ctx.add(op_type, list(ctx.node.inputs if inputs is None else inputs), [ctx.result(0)], main=True, **attrs)


def emit_node(ctx: ExportContext, op_type: str, compute: np.dtype, *, standalone: bool = True,
              keep: Sequence[int] = (), result_dtype: np.dtype | None = None, **attrs) -> None:
    """The op as the standard node ``op_type`` over its inputs, computed in ``compute``: the node alone when
    ``standalone`` (its import gives back this NNRt op) and no cast is needed, else an NNRt-domain function that
    casts the inputs (but those at ``keep``) to the dtype the node runs in and the result to the output dtype.
    ``result_dtype``: what the node yields (default: the dtype it runs in)."""
    compute = np.dtype(compute)
    run = _runs_in(op_type, compute, ctx.opset)
    produced = np.dtype(result_dtype) if result_dtype is not None else run
    in_dtypes, out_dtype = _in_dtypes(ctx), _out_dtype(ctx)
    casts_needed = any(d != run for i, d in enumerate(in_dtypes) if i not in keep) or produced != out_dtype
    if standalone and not casts_needed and not _activation_inline(ctx):
        _single(ctx, op_type, **attrs)
        return
    emit_function(ctx, lambda f, xs: _cast_to(f, f.one(op_type, [x if i in keep else _cast_to(f, x, d, run)
                                                                   for i, (x, d) in enumerate(zip(xs, in_dtypes))],
                                                       **attrs), produced, out_dtype))


def emit_function(ctx: ExportContext, body: Callable[[FunctionBody, list[str]], str]) -> None:
    """An NNRt-domain function whose result (in the output dtype) is ``body(f, inputs)``; a fused activation
    that the exporter's node cannot run on that dtype is applied inside."""
    inline, out_dtype = _activation_inline(ctx), _out_dtype(ctx)

    def build(f: FunctionBody) -> None:
        y = body(f, list(f.inputs))
        if inline:
            y = _apply_activation(f, y, out_dtype, inline, ctx.opset)
        last = f.nodes[-1] if f.nodes else None
        if last is not None and list(last.output) == [y] and y not in f.inputs:
            last.output[0] = "y0"
        else:
            f.one("Identity", [y], "y0")

    emit_custom(ctx, build)
    if inline:  # applied in the body: the node writes the output itself
        preact, target = ctx.builder.pending_activation[:2]
        node = ctx.builder.nodes[-1]
        node.output[:] = [target if o == preact else o for o in node.output]
        ctx.builder.pending_activation = None


def emit_body(ctx: ExportContext, compute: np.dtype, body: Callable[[FunctionBody, list[str], np.dtype], str]) -> None:
    """An NNRt-domain function: inputs cast to ``compute``, ``body(f, inputs, compute)`` returns the result (in
    ``compute``), cast to the output dtype."""
    compute = np.dtype(compute)
    in_dtypes, out_dtype = _in_dtypes(ctx), _out_dtype(ctx)
    emit_function(ctx, lambda f, xs: _cast_to(f, body(f, [_cast_to(f, x, d, compute) for x, d in zip(xs, in_dtypes)],
                                                      compute), compute, out_dtype))


# -- NHWC ops -----------------------------------------------------------------------------------------------------

def _wrapped(ctx: ExportContext) -> bool:
    """The exporter put the op between transposes: input 0 / output 0 are NCHW."""
    return ctx.node.layout == "NCHW"


def _nhwc(ctx: ExportContext, name: str, what: str) -> tuple[int, ...]:
    """The NHWC shape of the op's input 0 / output 0 (NCHW in the graph when the op was wrapped)."""
    shape = _shape(ctx, name, what)
    if _wrapped(ctx) and name in (ctx.input(0), ctx.output(0)):
        return permute(shape, NCHW_TO_NHWC)
    return shape


def _layout_ok(node, graph, allow_quant: bool = False) -> bool:
    """4-D NHWC input and output whose NCHW transposes are true transposes (not reshapes of unit dims); no quantized
    tensors unless ``allow_quant`` (an export function that dequantizes them itself)."""
    shapes = [graph.values[node.inputs[0]].shape, graph.values[node.outputs[0]].shape]
    if any(s is None or len(s) != 4 or any(d < 0 for d in s) for s in shapes):
        return False
    return not any(only_moves_unit_dims(s, NHWC_TO_NCHW) for s in shapes) and (allow_quant or not any(
        v.quant is not None for v in (graph.values[n] for n in list(node.inputs) + list(node.outputs) if n)))


def _in_dtype(node, graph, position: int = 0) -> np.dtype:
    return np.dtype(graph.values[node.inputs[position]].dtype)


def _no_quant(ctx: ExportContext) -> None:
    for name in list(ctx.node.inputs) + list(ctx.node.outputs):
        if name and ctx.value(name).quant is not None:
            raise ExportIssue(f"{ctx.node.op.name}: quantized tensors are not exported yet")


def _to_nchw(f: FunctionBody, x: str) -> str:
    return f.one("Transpose", [x], perm=_TO_NCHW)


def _pad_constant(f: FunctionBody, x: str, dtype: np.dtype, pads_onnx: str, value, mode: str = "constant") -> str:
    """Constant (or reflect) padding of any dtype (16-bit ints, which onnxruntime's Pad lacks, go through int32)."""
    wide = dtype not in _ORT_PAD
    source = f.one("Cast", [x], to=TensorProto.INT32) if wide else x
    inputs = [source, pads_onnx] + ([_const(f, value, np.int32 if wide else dtype)] if mode == "constant" else [])
    padded = f.one("Pad", inputs, mode=mode)
    return f.one("Cast", [padded], to=_elem(dtype)) if wide else padded
