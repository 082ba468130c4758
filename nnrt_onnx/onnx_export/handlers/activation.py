"""Export of the activation NNRt ops: SIGMOID, TANH, RELU, RELU6, LEAKY_RELU, PRELU, CLIP, HSWISH, HARD_SIGMOID,
SWISH and GELU -- each one standard ONNX node, or an NNRt-domain function, through the element-wise machinery of
``_common``.

Decisions:

* NNRt-only ops become functions: RELU6 (a standalone Clip would import as CLIP), SWISH below opset 24, GELU below
  opset 20, CLIP on float64 / integers (the importer would give MAXIMUM / MINIMUM), LEAKY_RELU left to its default
  slope (the importer always sets one), and HSWISH / HARD_SIGMOID on float64 (onnxruntime's 1/6 is a float32).
* GELU on float64 needs erf in float64, which onnxruntime has no kernel for: the body evaluates the Cephes
  rational approximations of erf / erfc (relative error ~1e-16) with standard ops.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..context import ExportContext
from ..custom import FunctionBody
from ._common import (
    _WIDER,
    F64,
    UNSIGNED,
    _cast_to,
    _const,
    _dtype,
    _out_dtype,
    _runs_in,
    _single,
    _supported,
    _work,
    emit_body,
    emit_function,
    emit_node,
    exporter,
)


def _relu6_over_6(f: FunctionBody, x: str, d: np.dtype) -> str:
    """clip(x + 3, 0, 6) / 6, the kernel's order of operations."""
    return f.one("Div", [f.one("Clip", [f.one("Add", [x, _const(f, 3, d)]), _const(f, 0, d), _const(f, 6, d)]),
                         _const(f, 6, d)])


@exporter("OH_NN_OPS_HSWISH")
def hswish(ctx: ExportContext) -> None:
    """x * relu6(x + 3) / 6: ONNX HardSwish (alpha 1/6 as a float32 inside onnxruntime, exact enough below
    float64); float64 as a function in the kernel's order of operations."""
    dt = _dtype(ctx, ctx.input(0))
    if dt != F64 and _supported("HardSwish", ctx.opset):
        emit_node(ctx, "HardSwish", dt)
        return
    emit_body(ctx, dt, lambda f, xs, d: f.one("Div", [f.one("Mul", [xs[0], f.one(
        "Clip", [f.one("Add", [xs[0], _const(f, 3, d)]), _const(f, 0, d), _const(f, 6, d)])]), _const(f, 6, d)]))


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
        return f.one("Where", [f.one("GreaterOrEqual", [x, _const(f, 0, d)]), x,
                               f.one("Mul", [x, _const(f, slope, d)])])

    emit_body(ctx, dt, body)


@exporter("OH_NN_OPS_RELU")
def relu(ctx: ExportContext) -> None:
    dt = _dtype(ctx, ctx.input(0))
    if dt.name in UNSIGNED:  # max(x, 0) of an unsigned x is x
        emit_body(ctx, dt, lambda f, xs, _: xs[0])
        return
    relu_types = _supported("Relu", ctx.opset)
    if dt.name not in relu_types and not set(_WIDER.get(dt.name, ())) & relu_types:
        emit_body(ctx, _runs_in("Max", dt, ctx.opset), lambda f, xs, d: f.one("Max", [xs[0], _const(f, 0, d)]))
        return
    emit_node(ctx, "Relu", dt)


@exporter("OH_NN_OPS_RELU6")
def relu6(ctx: ExportContext) -> None:
    """min(max(x, 0), 6) = Clip(x, 0, 6) in a function (a standalone Clip would import as CLIP)."""
    dt = _dtype(ctx, ctx.input(0))
    run = _runs_in("Clip", dt, ctx.opset)
    emit_body(ctx, run, lambda f, xs, d: f.one("Clip", [xs[0], _const(f, 0, d), _const(f, 6, d)]))


@exporter("OH_NN_OPS_SWISH")
def swish(ctx: ExportContext) -> None:
    """x * sigmoid(x): ONNX Swish (opset 24+, alpha 1) alone, else a function; float16 evaluated in float32."""
    dt = _dtype(ctx, ctx.input(0))
    if ctx.opset >= 24:
        emit_node(ctx, "Swish", dt)
        return
    emit_body(ctx, _work(dt), lambda f, xs, d: f.one("Mul", [xs[0], f.one("Sigmoid", xs)]))


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
            cube = f.one("Mul", [f.one("Mul", [f.one("Mul", [_const(f, 0.044715, d), x]), x]), x])
            inner = f.one("Mul", [_const(f, _SQRT_2_OVER_PI, d), f.one("Add", [x, cube])])
            gate = f.one("Add", [_const(f, 1, d), f.one("Tanh", [inner])])
        else:
            scaled = f.one("Div", [x, _const(f, math.sqrt(2.0), d)])
            gate = f.one("Add", [_const(f, 1, d), erf_float64(f, scaled) if d == F64 else f.one("Erf", [scaled])])
        return f.one("Mul", [f.one("Mul", [_const(f, 0.5, d), x]), gate])

    emit_body(ctx, _work(dt), body)


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
    acc = _const(f, coefficients[0], dt)
    for c in coefficients[1:]:
        acc = f.one("Add", [f.one("Mul", [acc, x]), _const(f, c, dt)])
    return acc


def erf_float64(f: FunctionBody, x: str) -> str:
    """erf of a float64 tensor from standard ops (onnxruntime has no float64 Erf)."""
    dt = F64
    one = _const(f, 1.0, dt)
    a = f.one("Abs", [x])
    z = f.one("Mul", [x, x])
    small = f.one("Div", [f.one("Mul", [x, _polynomial(f, z, _ERF_T, dt)]), _polynomial(f, z, _ERF_U, dt)])
    bounded = f.one("Min", [a, _const(f, 30.0, dt)])  # exp(-x^2) is 0 beyond: keeps inf / inf out of the ratios
    mid = f.one("Div", [_polynomial(f, bounded, _ERFC_P, dt), _polynomial(f, bounded, _ERFC_Q, dt)])
    far = f.one("Div", [_polynomial(f, bounded, _ERFC_R, dt), _polynomial(f, bounded, _ERFC_S, dt)])
    ratio = f.one("Where", [f.one("Less", [a, _const(f, 8.0, dt)]), mid, far])
    erfc = f.one("Mul", [f.one("Exp", [f.one("Neg", [z])]), ratio])
    sign = f.one("Where", [f.one("Less", [x, _const(f, 0.0, dt)]), _const(f, -1.0, dt), one])
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
        slope = _cast_to(f, xs[1], wt, dt)
        if scalar:
            slope = f.one("Reshape", [slope, f.constant(np.zeros(0, np.int64))])
        return _cast_to(f, f.one("PRelu", [xs[0], slope]), dt, out_dtype)

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
    emit_body(ctx, run, lambda f, xs, d: f.one("Clip", [xs[0], _const(f, lo_t, d), _const(f, hi_t, d)]))
