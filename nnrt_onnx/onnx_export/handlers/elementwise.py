"""Export of the element-wise NNRt ops: arithmetic, unary math, activations, comparisons, logic, selection.

Decisions:

* An op is ONE standard ONNX node (``main``) when importing that node gives back exactly this NNRt op and the node
  computes what the native kernel computes: every input already in the dtype the op computes in (the output's:
  the kernels promote mixed dtypes; numpy's for comparisons), and onnxruntime's CPU provider has a kernel for it
  (``_ORT``: what every onnxruntime from 1.20 to 1.32 has). Otherwise it becomes an NNRt-domain function (exact
  round trip by construction) whose body casts the inputs to that dtype, widened where onnxruntime has no kernel
  (``_WIDER``: a wider type in which the result, cast back, is the same; integers wrap like C both ways), runs
  the standard node(s) and casts the result to the NNRt output dtype. With no exact wider type (uint64 Div or
  comparisons, float64 Cos) the node stays in its dtype: onnxruntime 1.32 runs those, older versions do not.
* Integer DIV truncates toward zero like ONNX Div on integers, so DIV stays Div. MOD is ``Mod(fmod=1)`` (C
  remainder), which the importer maps back to MOD.
* Integer POW is computed in int64 (onnxruntime evaluates integer Pow through double: exact while the true power
  stays below 2^53); an int64 power beyond that can differ from the native (wrapping) kernel.
* NNRt-only ops become functions: RELU6 (a standalone Clip would import as CLIP), SQUARED_DIFFERENCE, RSQRT,
  SQUARE, BIAS_ADD, ELTWISE, SWISH below opset 24, GELU below opset 20, POW / EXP with scale or shift, NOT_EQUAL
  on numbers (Xor is NOT_EQUAL only on BOOL), SELECT (a rank-1 condition picks whole rows: Unsqueeze then Where),
  CLIP on float64 / integers (the importer would give MAXIMUM / MINIMUM), LEAKY_RELU left to its default slope
  (the importer always sets one), and HSWISH / HARD_SIGMOID on float64 (onnxruntime's 1/6 is a float32).
* A fused activation that onnxruntime has no Relu / Clip kernel for on the output dtype (int16, unsigned) is
  applied inside the op's function instead of by the exporter's node after it.
* Opsets: the type constraints of each node's schema at the export opset count as well (``_supported``);
  checked against onnxruntime at opsets 13 to 24.
* GELU on float64 needs erf in float64, which onnxruntime has no kernel for: the body evaluates the Cephes
  rational approximations of erf / erfc (relative error ~1e-16) with standard ops.
"""
from __future__ import annotations

import math
from functools import cache
from typing import Callable, Sequence

import numpy as np
import onnx
from onnx import helper

from ...ir.graph import Value
from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter as _register

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BOOL = np.dtype(np.bool_)
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


def exporter(op_name: str):
    """Register an export function, which finds quantized constant operands already read through
    DequantizeLinear (as the exporter does for the inputs of ops without an export function)."""
    def register(fn):
        def export(ctx: ExportContext) -> None:
            _dequantize_constants(ctx)
            fn(ctx)
        export.__name__, export.__doc__ = fn.__name__, fn.__doc__
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
    bounds = [const(f, 0, run)] + ([const(f, 6, run)] if fuse == 2 else [])
    return cast(f, f.one("Clip", [cast(f, y, dt, run)] + bounds), run, dt)


def _dtype(ctx: ExportContext, name: str) -> np.dtype:
    return np.dtype(ctx.value(name).dtype)


def _in_dtypes(ctx: ExportContext) -> list[np.dtype]:
    return [_dtype(ctx, n) for n in ctx.node.inputs]


def _out_dtype(ctx: ExportContext, position: int = 0) -> np.dtype:
    return _dtype(ctx, ctx.output(position))


_TENSOR_TYPES = {f"tensor({'float' if n == 'float32' else 'double' if n == 'float64' else n})": n
                 for n in FLOATS + SIGNED + UNSIGNED + ("bool",)}


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


def _onnx_type(dtype: np.dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def cast(f: FunctionBody, name: str, source: np.dtype, target: np.dtype, output: str | None = None) -> str:
    """``name`` as ``target`` (a Cast when the dtypes differ; an Identity when ``output`` must be written)."""
    if np.dtype(source) == np.dtype(target):
        return name if output is None else f.one("Identity", [name], output)
    return f.one("Cast", [name], output, to=_onnx_type(target))


def const(f: FunctionBody, value, dtype: np.dtype) -> str:
    return f.constant(np.asarray(value, dtype=np.dtype(dtype)))


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
    emit_function(ctx, lambda f, xs: cast(f, f.one(op_type, [x if i in keep else cast(f, x, d, run)
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
    emit_function(ctx, lambda f, xs: cast(f, body(f, [cast(f, x, d, compute) for x, d in zip(xs, in_dtypes)],
                                                  compute), compute, out_dtype))


# -- binary arithmetic -------------------------------------------------------------------------------------------

def _arithmetic(op_type: str):
    def export(ctx: ExportContext) -> None:
        emit_node(ctx, op_type, _out_dtype(ctx))
    return export


for _op, _op_type in (("ADD", "Add"), ("SUB", "Sub"), ("MUL", "Mul"), ("DIV", "Div"), ("MAXIMUM", "Max"),
                      ("MINIMUM", "Min")):
    exporter(f"OH_NN_OPS_{_op}")(_arithmetic(_op_type))


@exporter("OH_NN_OPS_MOD")
def mod(ctx: ExportContext) -> None:
    """C remainder (sign of the dividend) = ONNX Mod(fmod=1), which the importer maps back to MOD."""
    emit_node(ctx, "Mod", _out_dtype(ctx), fmod=1)


@exporter("OH_NN_OPS_BIAS_ADD")
def bias_add(ctx: ExportContext) -> None:
    """input + bias (1-D, the last axis): numpy broadcasting already aligns it with the last axis."""
    emit_node(ctx, "Add", _out_dtype(ctx), standalone=False)


_ELTWISE_MODES = {0: "Mul", 1: "Add", 2: "Max"}


@exporter("OH_NN_OPS_ELTWISE")
def eltwise(ctx: ExportContext) -> None:
    mode = int(ctx.args["mode"])
    if mode not in _ELTWISE_MODES:
        raise ExportIssue(f"ELTWISE mode {mode} names no operation (0 PROD, 1 SUM, 2 MAXIMUM)")
    emit_node(ctx, _ELTWISE_MODES[mode], _out_dtype(ctx), standalone=False)


@exporter("OH_NN_OPS_SQUARED_DIFFERENCE")
def squared_difference(ctx: ExportContext) -> None:
    """(a - b)^2; on BOOL (0/1 values) a != b, i.e. Xor."""
    compute = _out_dtype(ctx)
    if compute == BOOL:
        emit_node(ctx, "Xor", BOOL, standalone=False)
        return

    def body(f: FunctionBody, xs: list[str], dt: np.dtype) -> str:
        d = f.one("Sub", xs)
        return f.one("Mul", [d, d])

    emit_body(ctx, _runs_in("Mul", _runs_in("Sub", compute, ctx.opset), ctx.opset), body)


def _pow_dtype(dtype: np.dtype) -> np.dtype:
    """Integer powers are taken in int64 (see the module notes); floats as they are."""
    return dtype if dtype.kind == "f" else np.dtype(np.int64)


@exporter("OH_NN_OPS_POW")
def pow_(ctx: ExportContext) -> None:
    """(scale * input + shift) ^ y: Pow alone when scale = 1 and shift = 0, both operands of one float (or int64)
    dtype; else a function (the scaled base computed in the operands' dtype, as the kernel does)."""
    compute = _out_dtype(ctx)
    scale, shift = float(ctx.args["scale"]), float(ctx.args["shift"])
    identity = scale == 1.0 and shift == 0.0
    if identity:
        emit_node(ctx, "Pow", _pow_dtype(compute))
        return
    if compute.kind != "f":
        raise ExportIssue(f"POW scale/shift on {compute.name} (the native kernel rejects them too)")

    def body(f: FunctionBody, xs: list[str], dt: np.dtype) -> str:
        base = f.one("Add", [f.one("Mul", [xs[0], const(f, scale, dt)]), const(f, shift, dt)])
        return f.one("Pow", [base, xs[1]])

    emit_body(ctx, compute, body)


# -- unary math and activations ---------------------------------------------------------------------------------

_UNARY = {"ABS": "Abs", "NEG": "Neg", "LOG": "Log", "SQRT": "Sqrt", "RECIPROCAL": "Reciprocal", "SIN": "Sin",
          "COS": "Cos", "ERF": "Erf", "CEIL": "Ceil", "FLOOR": "Floor", "ROUND": "Round", "SIGMOID": "Sigmoid",
          "TANH": "Tanh"}


def _unary(op_type: str):
    def export(ctx: ExportContext) -> None:
        emit_node(ctx, op_type, _dtype(ctx, ctx.input(0)))
    return export


for _op, _op_type in _UNARY.items():
    exporter(f"OH_NN_OPS_{_op}")(_unary(_op_type))


def _relu6_over_6(f: FunctionBody, x: str, d: np.dtype) -> str:
    """clip(x + 3, 0, 6) / 6, the kernel's order of operations."""
    return f.one("Div", [f.one("Clip", [f.one("Add", [x, const(f, 3, d)]), const(f, 0, d), const(f, 6, d)]),
                         const(f, 6, d)])


@exporter("OH_NN_OPS_HSWISH")
def hswish(ctx: ExportContext) -> None:
    """x * relu6(x + 3) / 6: ONNX HardSwish (alpha 1/6 as a float32 inside onnxruntime, exact enough below
    float64); float64 as a function in the kernel's order of operations."""
    dt = _dtype(ctx, ctx.input(0))
    if dt != F64 and _supported("HardSwish", ctx.opset):
        emit_node(ctx, "HardSwish", dt)
        return
    emit_body(ctx, dt, lambda f, xs, d: f.one("Div", [f.one("Mul", [xs[0], f.one(
        "Clip", [f.one("Add", [xs[0], const(f, 3, d)]), const(f, 0, d), const(f, 6, d)])]), const(f, 6, d)]))


@exporter("OH_NN_OPS_HARD_SIGMOID")
def hard_sigmoid(ctx: ExportContext) -> None:
    """relu6(x + 3) / 6 = HardSigmoid(alpha = 1/6, beta = 1/2), which the importer maps back to HARD_SIGMOID
    (float64: a function, as HSWISH)."""
    dt = _dtype(ctx, ctx.input(0))
    if dt != F64:
        emit_node(ctx, "HardSigmoid", dt, alpha=1 / 6, beta=0.5)
        return
    emit_body(ctx, dt, lambda f, xs, d: _relu6_over_6(f, xs[0], d))


@exporter("OH_NN_OPS_LEAKY_RELU")
def leaky_relu(ctx: ExportContext) -> None:
    """LeakyRelu(alpha = the slope). The importer always sets the slope, so a model that left it to its default
    (0) goes through a function, which restores no parameter."""
    dt, slope = _dtype(ctx, ctx.input(0)), float(ctx.args["negative_slope"])
    if dt.name in _supported("LeakyRelu", ctx.opset):
        emit_node(ctx, "LeakyRelu", dt, standalone="negative_slope" in ctx.given, alpha=slope)
        return

    def body(f: FunctionBody, xs: list[str], d: np.dtype) -> str:  # float64: x >= 0 ? x : x * slope
        x = xs[0]
        return f.one("Where", [f.one("GreaterOrEqual", [x, const(f, 0, d)]), x, f.one("Mul", [x, const(f, slope, d)])])

    emit_body(ctx, dt, body)


@exporter("OH_NN_OPS_RELU")
def relu(ctx: ExportContext) -> None:
    dt = _dtype(ctx, ctx.input(0))
    if dt.name in UNSIGNED:  # max(x, 0) of an unsigned x is x
        emit_body(ctx, dt, lambda f, xs, _: xs[0])
        return
    relu_types = _supported("Relu", ctx.opset)
    if dt.name not in relu_types and not set(_WIDER.get(dt.name, ())) & relu_types:
        emit_body(ctx, _runs_in("Max", dt, ctx.opset), lambda f, xs, d: f.one("Max", [xs[0], const(f, 0, d)]))
        return
    emit_node(ctx, "Relu", dt)


@exporter("OH_NN_OPS_RELU6")
def relu6(ctx: ExportContext) -> None:
    """min(max(x, 0), 6) = Clip(x, 0, 6) in a function (a standalone Clip would import as CLIP)."""
    dt = _dtype(ctx, ctx.input(0))
    run = _runs_in("Clip", dt, ctx.opset)
    emit_body(ctx, run, lambda f, xs, d: f.one("Clip", [xs[0], const(f, 0, d), const(f, 6, d)]))


@exporter("OH_NN_OPS_RSQRT")
def rsqrt(ctx: ExportContext) -> None:
    """1 / sqrt(x); float16 is evaluated in float32 and rounded once, as the kernel does."""
    dt = _dtype(ctx, ctx.input(0))
    emit_body(ctx, F32 if dt == F16 else dt, lambda f, xs, d: f.one("Reciprocal", [f.one("Sqrt", xs)]))


@exporter("OH_NN_OPS_SQUARE")
def square(ctx: ExportContext) -> None:
    dt = _dtype(ctx, ctx.input(0))
    emit_body(ctx, _runs_in("Mul", dt, ctx.opset), lambda f, xs, d: f.one("Mul", [xs[0], xs[0]]))


@exporter("OH_NN_OPS_EXP")
def exp(ctx: ExportContext) -> None:
    """base ^ (shift + scale * x), base -1 meaning e: Exp alone for the defaults; else a function evaluating it as
    the kernel does (float16 in float32, rounded once)."""
    base, scale, shift = float(ctx.args["base"]), float(ctx.args["scale"]), float(ctx.args["shift"])
    dt = _dtype(ctx, ctx.input(0))
    if base == -1.0 and scale == 1.0 and shift == 0.0:
        emit_node(ctx, "Exp", dt)
        return
    if not (base > 0 or base == -1.0):
        raise ExportIssue(f"EXP base {base} must be > 0 or -1 (meaning e)")

    def body(f: FunctionBody, xs: list[str], d: np.dtype) -> str:
        t = xs[0]
        if scale != 1.0 or shift != 0.0:
            t = f.one("Add", [f.one("Mul", [t, const(f, scale, d)]), const(f, shift, d)])
        return f.one("Exp", [t]) if base == -1.0 else f.one("Pow", [const(f, base, d), t])

    emit_body(ctx, F32 if dt == F16 else dt, body)


@exporter("OH_NN_OPS_SWISH")
def swish(ctx: ExportContext) -> None:
    """x * sigmoid(x): ONNX Swish (opset 24+, alpha 1) alone, else a function; float16 evaluated in float32."""
    dt = _dtype(ctx, ctx.input(0))
    if ctx.opset >= 24:
        emit_node(ctx, "Swish", dt)
        return
    emit_body(ctx, F32 if dt == F16 else dt, lambda f, xs, d: f.one("Mul", [xs[0], f.one("Sigmoid", xs)]))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@exporter("OH_NN_OPS_GELU")
def gelu(ctx: ExportContext) -> None:
    """0.5 x (1 + erf(x / sqrt 2)), or with ``approximate`` 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))):
    ONNX Gelu (opset 20+) alone for float16/float32, else a function in the kernel's order of operations."""
    approximate = bool(ctx.args["approximate"])
    dt = _dtype(ctx, ctx.input(0))
    if ctx.opset >= 20 and dt != F64:
        emit_node(ctx, "Gelu", dt, approximate="tanh" if approximate else "none")
        return

    def body(f: FunctionBody, xs: list[str], d: np.dtype) -> str:
        x = xs[0]
        if approximate:
            cube = f.one("Mul", [f.one("Mul", [f.one("Mul", [const(f, 0.044715, d), x]), x]), x])
            inner = f.one("Mul", [const(f, _SQRT_2_OVER_PI, d), f.one("Add", [x, cube])])
            gate = f.one("Add", [const(f, 1, d), f.one("Tanh", [inner])])
        else:
            scaled = f.one("Div", [x, const(f, math.sqrt(2.0), d)])
            gate = f.one("Add", [const(f, 1, d), erf_float64(f, scaled) if d == F64 else f.one("Erf", [scaled])])
        return f.one("Mul", [f.one("Mul", [const(f, 0.5, d), x]), gate])

    emit_body(ctx, F32 if dt == F16 else dt, body)


# Cephes ndtr.c: erf(x) = x T(x^2) / U(x^2) for |x| <= 1; erfc(x) = exp(-x^2) P(x) / Q(x) for x < 8, else
# exp(-x^2) R(x) / S(x) (monic U, Q, S: the leading 1 is listed here).
_ERF_T = [9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3, 7.00332514112805075473e3,
          5.55923013010394962768e4]
_ERF_U = [1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
          2.26290000613890934246e4, 4.92673942608635921086e4]
_ERFC_P = [2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2, 9.34528527171957607540e2,
           1.02755188689515710272e3, 5.57535335369399327526e2]
_ERFC_Q = [1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3, 1.65666309194161350182e3,
           5.57535340817727675546e2]
_ERFC_R = [5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0, 6.16021097993053585195e0,
           7.40974269950448939160e0, 2.97886665372100240670e0]
_ERFC_S = [1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
           1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0]


def _polynomial(f: FunctionBody, x: str, coefficients: Sequence[float], dt: np.dtype) -> str:
    """Horner: coefficients from the highest power down."""
    acc = const(f, coefficients[0], dt)
    for c in coefficients[1:]:
        acc = f.one("Add", [f.one("Mul", [acc, x]), const(f, c, dt)])
    return acc


def erf_float64(f: FunctionBody, x: str) -> str:
    """erf of a float64 tensor from standard ops (onnxruntime has no float64 Erf)."""
    dt = F64
    one = const(f, 1.0, dt)
    a = f.one("Abs", [x])
    z = f.one("Mul", [x, x])
    small = f.one("Div", [f.one("Mul", [x, _polynomial(f, z, _ERF_T, dt)]), _polynomial(f, z, _ERF_U, dt)])
    bounded = f.one("Min", [a, const(f, 30.0, dt)])  # exp(-x^2) is 0 beyond: keeps inf / inf out of the ratios
    mid = f.one("Div", [_polynomial(f, bounded, _ERFC_P, dt), _polynomial(f, bounded, _ERFC_Q, dt)])
    far = f.one("Div", [_polynomial(f, bounded, _ERFC_R, dt), _polynomial(f, bounded, _ERFC_S, dt)])
    ratio = f.one("Where", [f.one("Less", [a, const(f, 8.0, dt)]), mid, far])
    erfc = f.one("Mul", [f.one("Exp", [f.one("Neg", [z])]), ratio])
    sign = f.one("Where", [f.one("Less", [x, const(f, 0.0, dt)]), const(f, -1.0, dt), one])
    large = f.one("Mul", [sign, f.one("Sub", [one, erfc])])
    return f.one("Where", [f.one("LessOrEqual", [a, one]), small, large])


@exporter("OH_NN_OPS_PRELU")
def prelu(ctx: ExportContext) -> None:
    """x >= 0 ? x : weight * x, weight on the last axis: ONNX PRelu broadcasts a 1-D slope onto the last axis too,
    so PRelu alone (rank >= 2, a 1-D weight of the input's dtype: what the importer maps back to PRELU); else a
    function (weight cast to the input's dtype, a 1-element weight made a scalar)."""
    x, w = ctx.input(0), ctx.input(1)
    dt, wt = _dtype(ctx, x), _dtype(ctx, w)
    x_shape, w_shape = ctx.value(x).shape, ctx.value(w).shape
    if x_shape is not None and len(x_shape) >= 2 and w_shape is not None and len(w_shape) == 1 and w_shape[0] > 0 \
            and wt == dt and _out_dtype(ctx) == dt:
        emit_node(ctx, "PRelu", dt)
        return
    scalar = w_shape is not None and int(np.prod(w_shape)) == 1 and len(w_shape) != 0
    out_dtype = _out_dtype(ctx)

    def body(f: FunctionBody, xs: list[str]) -> str:
        slope = cast(f, xs[1], wt, dt)
        if scalar:
            slope = f.one("Reshape", [slope, f.constant(np.zeros(0, np.int64))])
        return cast(f, f.one("PRelu", [xs[0], slope]), dt, out_dtype)

    emit_function(ctx, body)


@exporter("OH_NN_OPS_CLIP")
def clip(ctx: ExportContext) -> None:
    """min(max(x, lo), hi). float16/float32: Clip with the given bounds as inputs of the input's dtype (an absent
    bound stays absent), which the importer maps back to CLIP. Other dtypes (the importer would give
    MAXIMUM/MINIMUM) and no bound at all: a function with the bounds the kernel uses (integers: ceil(lo) and
    floor(hi) within the dtype's range)."""
    x = ctx.input(0)
    dt = _dtype(ctx, x)
    lo_given = "min" in ctx.given
    hi_given = "max" in ctx.given
    lo, hi = float(ctx.args["min"]), float(ctx.args["max"])
    if dt.name in ("float16", "float32") and (lo_given or hi_given) and _out_dtype(ctx) == dt:
        inputs = [x, ctx.constant(np.asarray(lo, dt), "clip_min") if lo_given else "",
                  ctx.constant(np.asarray(hi, dt), "clip_max") if hi_given else ""]
        while inputs[-1] == "":
            inputs.pop()
        _single(ctx, "Clip", inputs)
        return
    if dt.kind == "f":
        lo_t, hi_t = np.asarray(lo, dt), np.asarray(hi, dt)
    else:
        info = np.iinfo(dt)

        def bound(v: float, rounding, infinite_low: bool) -> int:
            if not math.isfinite(v):
                return info.min if infinite_low else info.max
            return int(np.clip(rounding(v), info.min, info.max))

        lo_t = bound(lo, math.ceil, lo < 0)
        hi_t = bound(hi, math.floor, not hi > 0)
    run = _runs_in("Clip", dt, ctx.opset)
    emit_body(ctx, run, lambda f, xs, d: f.one("Clip", [xs[0], const(f, lo_t, d), const(f, hi_t, d)]))


# -- comparisons and logic ----------------------------------------------------------------------------------------

def _compare_dtype(ctx: ExportContext) -> np.dtype:
    """numpy's comparison dtype (the kernels compare with numpy): BOOL with BOOL stays BOOL."""
    a, b = _in_dtypes(ctx)[:2]
    return np.promote_types(a, b)


def _comparison(op_type: str):
    def export(ctx: ExportContext) -> None:
        emit_node(ctx, op_type, _compare_dtype(ctx), result_dtype=BOOL)
    return export


for _op, _op_type in (("EQUAL", "Equal"), ("LESS", "Less"), ("LESS_EQUAL", "LessOrEqual"), ("GREATER", "Greater"),
                      ("GREATER_EQUAL", "GreaterOrEqual")):
    exporter(f"OH_NN_OPS_{_op}")(_comparison(_op_type))


@exporter("OH_NN_OPS_NOT_EQUAL")
def not_equal(ctx: ExportContext) -> None:
    """Xor on two BOOL tensors (what the importer maps back to NOT_EQUAL); otherwise Not(Equal) in a function."""
    compute = _compare_dtype(ctx)
    if compute == BOOL:
        emit_node(ctx, "Xor", BOOL)
        return
    run = _runs_in("Equal", compute, ctx.opset)
    in_dtypes = _in_dtypes(ctx)
    emit_function(ctx, lambda f, xs: f.one("Not", [f.one("Equal", [cast(f, x, d, run)
                                                                  for x, d in zip(xs, in_dtypes)])]))


def _logical(op_type: str):
    def export(ctx: ExportContext) -> None:
        """Non-BOOL operands are read as booleans (non-zero is true): cast to BOOL first, in a function."""
        emit_node(ctx, op_type, BOOL)
    return export


for _op, _op_type in (("LOGICAL_AND", "And"), ("LOGICAL_OR", "Or"), ("LOGICAL_NOT", "Not")):
    exporter(f"OH_NN_OPS_{_op}")(_logical(_op_type))


# -- selection ----------------------------------------------------------------------------------------------------

@exporter("OH_NN_OPS_WHERE")
def where(ctx: ExportContext) -> None:
    if _dtype(ctx, ctx.input(0)) != BOOL:
        raise ExportIssue("WHERE: the condition must be BOOL")
    emit_node(ctx, "Where", _out_dtype(ctx), keep=(0,))


@exporter("OH_NN_OPS_SELECT")
def select(ctx: ExportContext) -> None:
    """Where in a function (a standalone Where would import as WHERE); a rank-1 condition under higher-rank inputs
    picks whole rows: it is unsqueezed to [n, 1, ..., 1] first."""
    c, a, b = ctx.node.inputs
    if _dtype(ctx, c) != BOOL:
        raise ExportIssue("SELECT: the condition must be BOOL")
    shapes = [ctx.value(n).shape for n in (c, a, b)]
    if any(s is None for s in shapes):
        raise ExportIssue("SELECT: the ranks of the operands must be known")
    rank = max(len(shapes[1]), len(shapes[2]))
    rows = len(shapes[0]) == 1 and rank > 1
    compute = _out_dtype(ctx)
    run = _runs_in("Where", compute, ctx.opset)
    in_dtypes = _in_dtypes(ctx)

    def body(f: FunctionBody, xs: list[str]) -> str:
        cond = xs[0]
        if rows:
            cond = f.one("Unsqueeze", [cond, f.constant(np.arange(1, rank, dtype=np.int64))])
        values = [cast(f, x, d, run) for x, d in zip(xs[1:], in_dtypes[1:])]
        return cast(f, f.one("Where", [cond] + values), run, compute)

    emit_function(ctx, body)
