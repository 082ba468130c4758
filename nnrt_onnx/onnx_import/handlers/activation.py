"""Converters of the activation family: PRelu (opsets 1-6 and 7+), HardSigmoid, Elu, Selu, Celu, Softplus,
Softsign, Mish, Gelu (and the transforms of its ``approximate`` attribute), Swish, ThresholdedRelu, Shrink, Clip and
SwiGLU; its rows without a converter (Relu, Sigmoid, Tanh, LeakyRelu, HardSwish) go through the generic converter.
onnxruntime's contrib activations (com.microsoft): Gelu, BiasGelu, FastGelu (GELU with the tanh approximation) and
QuickGelu.

Decisions (the dtype checks, constant dtypes, ``expm1``/``log1p`` forms and output shapes of the decompositions: see
``_common``): PRelu-1/6's slope has one element (shared) or one per channel (axis 1); it is aligned, then converted
as PRelu-7.
"""
from __future__ import annotations

import math

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...ir.issues import INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, ConversionIssue
from ...ir.passes import NCHW_TO_NHWC, NHWC_TO_NCHW
from ...ir.transforms import transform
from ..context import NodeContext
from ..generic import check_dtype, check_op_dtype, emit_row
from . import converts
from ._common import (
    FLOAT,
    NUMERIC,
    UNSIGNED,
    _align,
    _binary,
    _Builder,
    _const,
    _delegate,
    _float_input,
    _read_consumed_inputs,
    _unary,
)


def _float_attr(ctx: NodeContext, name: str, default: float) -> float:
    return float(ctx.attr(name, default))


# -- Gelu's approximate attribute --------------------------------------------------------------------------------------

@transform("gelu_approximate_to_bool", inverse="bool_to_gelu_approximate")
def gelu_approximate_to_bool(value):
    """ONNX Gelu ``approximate`` ("none" | "tanh") -> OH_NN_GELU_APPROXIMATE."""
    if value not in ("none", "tanh"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"approximate={value!r} (supported: 'none', 'tanh')")
    return value == "tanh"


@transform("bool_to_gelu_approximate", inverse="gelu_approximate_to_bool")
def bool_to_gelu_approximate(value):
    return "tanh" if bool(value) else "none"


# -- PRelu -------------------------------------------------------------------------------------------------------------

@converts("PRelu", since=7)
def prelu(ctx: NodeContext) -> None:
    """PRELU when the slope varies along one axis only and that axis is the last (or, rank 4, the channel axis 1:
    NHWC region); otherwise (x < 0 ? x * slope : x) with numpy broadcasting."""
    x, slope = ctx.input(0), ctx.input(1)
    dt = check_dtype(ctx, x, FLOAT + ("int32", "int64", "uint32", "uint64"))
    b = _Builder(ctx)
    x_shape, s_shape = ctx.value(x).shape, ctx.value(slope).shape
    if dt.name in FLOAT and x_shape is not None and s_shape is not None and all(d > 0 for d in s_shape) \
            and len(s_shape) <= len(x_shape) and len(x_shape) >= 2:
        rank = len(x_shape)
        aligned = (1,) * (rank - len(s_shape)) + tuple(s_shape)
        varying = [i for i, d in enumerate(aligned) if d != 1]
        size = int(np.prod(s_shape)) if s_shape else 1
        if not varying or (len(varying) == 1 and varying[0] in (rank - 1, 1 if rank == 4 else -1)):
            weight = slope if (len(s_shape) == 1 and (size == 1 or varying)) else ctx.reshape(slope, [size])
            if not varying or varying[0] == rank - 1:
                b.op(OP.OH_NN_OPS_PRELU, [x, weight], out=b.out)
                return
            x_nhwc = ctx.transpose(x, NCHW_TO_NHWC)
            out_shape = ctx.value(b.out).shape
            shape = None if out_shape is None else tuple(out_shape[p] for p in NCHW_TO_NHWC)
            y_nhwc = ctx.new_value(ctx.value(b.out).dtype, shape, f"{b.out}.nhwc")
            ctx.emit(OP.OH_NN_OPS_PRELU, [x_nhwc, weight], [y_nhwc])
            ctx.transpose(y_nhwc, NHWC_TO_NCHW, output=b.out)
            return
    negative = b.op(OP.OH_NN_OPS_LESS, [x, b.const(0, dt)], dtype=np.bool_)
    scaled = b.op(OP.OH_NN_OPS_MUL, [x, slope])
    b.op(OP.OH_NN_OPS_WHERE, [negative, scaled, x], out=b.out)


@converts("PRelu", since=1)
def legacy_prelu(ctx: NodeContext) -> None:
    """PRelu-1/6: a slope of one element is shared; a 1-D slope with X.shape[1] elements is per channel (axis 1,
    also for X of rank 3 or 5, where numpy broadcasting would align it with the last axis); any other slope must
    broadcast numpy-style to X (e.g. X's own shape) and then means the same in both readings."""
    _read_consumed_inputs(ctx)
    x, slope = ctx.input(0), ctx.input(1)
    x_shape, s_shape = ctx.value(x).shape, ctx.value(slope).shape
    if x_shape is None or s_shape is None:
        ctx.rank(x), ctx.rank(slope)
    if len(s_shape) == 1 and len(x_shape) >= 2 and s_shape[0] > 1 and s_shape[0] == x_shape[1]:
        per_channel = (s_shape[0],) + (1,) * (len(x_shape) - 2)
        _delegate(ctx, {1: _align(ctx, slope, per_channel)})
        return
    size = int(np.prod(s_shape)) if all(d >= 0 for d in s_shape) else -1
    if size == 1:
        _delegate(ctx, {})
        return
    fits = len(s_shape) <= len(x_shape) and all(
        s in (1, d) or s < 0 or d < 0 for s, d in zip(s_shape[::-1], x_shape[::-1]))
    if not fits:
        raise ConversionIssue(INVALID_MODEL, f"PRelu (opset {ctx.opset}): slope {list(s_shape)} is neither one "
                                             f"element, nor one per channel of X {list(x_shape)}, nor broadcastable "
                                             f"to X")
    _delegate(ctx, {})


# -- decomposed activations --------------------------------------------------------------------------------------------

@converts("HardSigmoid")
def hard_sigmoid(ctx: NodeContext) -> None:
    """max(0, min(1, alpha * x + beta)): NNRt HARD_SIGMOID when alpha = 1/6 and beta = 1/2, else MUL, ADD, CLIP."""
    x = ctx.input(0)
    dt = check_op_dtype(ctx, x, OP.OH_NN_OPS_HARD_SIGMOID)
    alpha, beta = _float_attr(ctx, "alpha", 0.2), _float_attr(ctx, "beta", 0.5)
    b = _Builder(ctx)
    if np.float32(alpha) == np.float32(1 / 6) and np.float32(beta) == np.float32(0.5):
        b.op(OP.OH_NN_OPS_HARD_SIGMOID, [x], out=b.out)
        return
    y = b.op(OP.OH_NN_OPS_MUL, [x, b.const(alpha, dt)])
    y = b.op(OP.OH_NN_OPS_ADD, [y, b.const(beta, dt)])
    b.op(OP.OH_NN_OPS_CLIP, [y], params={"OH_NN_CLIP_MIN": 0.0, "OH_NN_CLIP_MAX": 1.0}, out=b.out)


@converts("Elu")
def elu(ctx: NodeContext) -> None:
    """x < 0 ? alpha * expm1(x) : x."""
    x = ctx.input(0)
    dt = check_op_dtype(ctx, x, OP.OH_NN_OPS_EXP)
    alpha = _float_attr(ctx, "alpha", 1.0)
    b = _Builder(ctx)
    negative = b.op(OP.OH_NN_OPS_LESS, [x, b.const(0, dt)], dtype=np.bool_)
    scaled = b.op(OP.OH_NN_OPS_MUL, [b.expm1(x), b.const(alpha, dt)])
    b.op(OP.OH_NN_OPS_WHERE, [negative, scaled, x], out=b.out)


@converts("Selu")
def selu(ctx: NodeContext) -> None:
    """x > 0 ? gamma * x : gamma * alpha * expm1(x)."""
    x = ctx.input(0)
    dt = check_op_dtype(ctx, x, OP.OH_NN_OPS_EXP)
    alpha = _float_attr(ctx, "alpha", 1.67326319217681884765625)
    gamma = _float_attr(ctx, "gamma", 1.05070102214813232421875)
    b = _Builder(ctx)
    positive = b.op(OP.OH_NN_OPS_GREATER, [x, b.const(0, dt)], dtype=np.bool_)
    linear = b.op(OP.OH_NN_OPS_MUL, [x, b.const(gamma, dt)])
    exponential = b.op(OP.OH_NN_OPS_MUL, [b.expm1(x), b.const(np.asarray(alpha, dt) * np.asarray(gamma, dt), dt)])
    b.op(OP.OH_NN_OPS_WHERE, [positive, linear, exponential], out=b.out)


@converts("Celu")
def celu(ctx: NodeContext) -> None:
    """max(0, x) + min(0, alpha * expm1(x / alpha))."""
    x = ctx.input(0)
    dt = check_op_dtype(ctx, x, OP.OH_NN_OPS_EXP)
    alpha = _float_attr(ctx, "alpha", 1.0)
    if alpha == 0:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "alpha=0 (Celu divides by alpha)")
    b = _Builder(ctx)
    scaled_x = b.op(OP.OH_NN_OPS_DIV, [x, b.const(alpha, dt)])
    negative_part = b.op(OP.OH_NN_OPS_MINIMUM, [b.op(OP.OH_NN_OPS_MUL, [b.expm1(scaled_x), b.const(alpha, dt)]),
                                                b.const(0, dt)])
    b.op(OP.OH_NN_OPS_ADD, [b.op(OP.OH_NN_OPS_RELU, [x]), negative_part], out=b.out)


@converts("Softplus")
def softplus(ctx: NodeContext) -> None:
    x = ctx.input(0)
    check_op_dtype(ctx, x, OP.OH_NN_OPS_EXP)
    b = _Builder(ctx)
    b.softplus(x, out=b.out)


@converts("Softsign")
def softsign(ctx: NodeContext) -> None:
    """x / (1 + |x|)."""
    x = ctx.input(0)
    dt = check_dtype(ctx, x, FLOAT)
    b = _Builder(ctx)
    denominator = b.op(OP.OH_NN_OPS_ADD, [b.op(OP.OH_NN_OPS_ABS, [x]), b.const(1, dt)])
    b.op(OP.OH_NN_OPS_DIV, [x, denominator], out=b.out)


@converts("Mish")
def mish(ctx: NodeContext) -> None:
    """x * tanh(softplus(x))."""
    x = ctx.input(0)
    check_op_dtype(ctx, x, OP.OH_NN_OPS_EXP)
    b = _Builder(ctx)
    b.op(OP.OH_NN_OPS_MUL, [x, b.op(OP.OH_NN_OPS_TANH, [b.softplus(x)])], out=b.out)


@converts("Gelu")
def gelu(ctx: NodeContext) -> None:
    check_op_dtype(ctx, ctx.input(0), OP.OH_NN_OPS_GELU)
    emit_row(ctx)


@converts("Swish")
def swish(ctx: NodeContext) -> None:
    """x * sigmoid(alpha * x): NNRt SWISH when alpha = 1."""
    x = ctx.input(0)
    dt = check_op_dtype(ctx, x, OP.OH_NN_OPS_SWISH)
    alpha = _float_attr(ctx, "alpha", 1.0)
    b = _Builder(ctx)
    if alpha == 1.0:
        b.op(OP.OH_NN_OPS_SWISH, [x], out=b.out)
        return
    gate = b.op(OP.OH_NN_OPS_SIGMOID, [b.op(OP.OH_NN_OPS_MUL, [x, b.const(alpha, dt)])])
    b.op(OP.OH_NN_OPS_MUL, [x, gate], out=b.out)


@converts("ThresholdedRelu")
def thresholded_relu(ctx: NodeContext) -> None:
    """x > alpha ? x : 0."""
    x = ctx.input(0)
    dt = check_dtype(ctx, x, FLOAT)
    alpha = _float_attr(ctx, "alpha", 1.0)
    b = _Builder(ctx)
    above = b.op(OP.OH_NN_OPS_GREATER, [x, b.const(alpha, dt)], dtype=np.bool_)
    b.op(OP.OH_NN_OPS_WHERE, [above, x, b.const(0, dt)], out=b.out)


@converts("Shrink")
def shrink(ctx: NodeContext) -> None:
    """x < -lambd ? x + bias : (x > lambd ? x - bias : 0)."""
    x = ctx.input(0)
    dt = check_dtype(ctx, x, NUMERIC)
    bias, lambd = _float_attr(ctx, "bias", 0.0), _float_attr(ctx, "lambd", 0.5)
    b = _Builder(ctx)
    if dt.name in FLOAT:
        low, high = -lambd, lambd
    else:
        info = np.iinfo(dt)
        if not (np.isfinite(bias) and np.isfinite(lambd)) or bias != int(bias) or not info.min <= bias <= info.max:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"bias={bias}, lambd={lambd} on an integer input "
                                                         f"({dt.name}): only a finite lambd and an integral bias "
                                                         f"within {dt.name}'s range keep the result an integer")
        # integers: x < -lambd <=> x < ceil(-lambd); x > lambd <=> x > floor(lambd)
        low = min(max(math.ceil(-lambd), info.min), info.max)  # exact integers (float clipping rounds past int64)
        high = min(max(math.floor(lambd), info.min), info.max)
    zero = b.const(0, dt)
    lower_possible = not (dt.name in UNSIGNED and low <= 0)  # x < low never holds for an unsigned x then
    above = b.op(OP.OH_NN_OPS_GREATER, [x, b.const(high, dt)], dtype=np.bool_)
    upper = b.op(OP.OH_NN_OPS_WHERE, [above, b.op(OP.OH_NN_OPS_SUB, [x, b.const(bias, dt)]), zero],
                 out=None if lower_possible else b.out)
    if lower_possible:
        below = b.op(OP.OH_NN_OPS_LESS, [x, b.const(low, dt)], dtype=np.bool_)
        b.op(OP.OH_NN_OPS_WHERE, [below, b.op(OP.OH_NN_OPS_ADD, [x, b.const(bias, dt)]), upper], out=b.out)


@converts("Clip")
def clip(ctx: NodeContext) -> None:
    """CLIP for float16/float32 with constant bounds; MAXIMUM/MINIMUM otherwise (exact for 64-bit and integer
    bounds, and for bounds computed at run time). min > max gives max everywhere in both."""
    x = ctx.input(0)
    dt = check_op_dtype(ctx, x, OP.OH_NN_OPS_CLIP)
    b = _Builder(ctx)
    bounds: list[str | float | None] = []
    if ctx.opset < 11:
        info = np.finfo(np.float32)
        lo, hi = ctx.attr("min"), ctx.attr("max")
        bounds = [None if lo is None or float(lo) <= float(info.min) else float(lo),
                  None if hi is None or float(hi) >= float(info.max) else float(hi)]
    else:
        for position in (1, 2):
            if not ctx.has_input(position):
                bounds.append(None)
                continue
            name = ctx.input(position)
            value = ctx.value(name)
            if value.dtype != dt:
                raise ConversionIssue(INVALID_MODEL, f"Clip bound {name!r} has dtype {np.dtype(value.dtype).name}, "
                                                     f"the input {dt.name}")
            if value.data is not None:
                if value.data.size == 0:
                    bounds.append(None)
                    continue
                if value.data.size != 1:
                    raise ConversionIssue(INVALID_MODEL, f"Clip bound {name!r} must be a scalar, has shape "
                                                         f"{list(value.data.shape)}")
                bounds.append(float(value.data.reshape(-1)[0]) if dt.name in ("float16", "float32") else name)
            else:
                bounds.append(name)
    lo, hi = bounds
    if lo is None and hi is None:
        ctx.alias(x, b.out)
        return
    if dt.name in ("float16", "float32") and not isinstance(lo, str) and not isinstance(hi, str):
        params = {}
        if lo is not None:
            params["OH_NN_CLIP_MIN"] = lo
        if hi is not None:
            params["OH_NN_CLIP_MAX"] = hi
        b.op(OP.OH_NN_OPS_CLIP, [x], params=params, out=b.out)
        return

    def bound(v, rounding):
        if isinstance(v, str):
            return v
        if dt.kind in "iu":  # attribute bounds (opset < 11) on integers: the integers within [lo, hi]
            info = np.iinfo(dt)
            v = np.clip(rounding(v), info.min, info.max)
        return b.const(v, dt)

    y = x
    if lo is not None:
        y = b.op(OP.OH_NN_OPS_MAXIMUM, [y, bound(lo, np.ceil)], out=b.out if hi is None else None)
    if hi is not None:
        b.op(OP.OH_NN_OPS_MINIMUM, [y, bound(hi, np.floor)], out=b.out)


# -- SwiGLU ------------------------------------------------------------------------------------------------------------

@converts("SwiGLU")
def swiglu(ctx: NodeContext) -> None:
    """Y = A * sigmoid(alpha * A) * B: SWISH (alpha = 1) or MUL, SIGMOID, MUL; then MUL by B."""
    a, b = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    dtype = _float_input(ctx, a)
    if ctx.value(b).dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"SwiGLU inputs have different dtypes ({dtype}, {ctx.value(b).dtype})")
    sa, sb = ctx.value(a).shape, ctx.value(b).shape
    if sa is not None and sb is not None and all(d >= 0 for d in (*sa, *sb)) and tuple(sa) != tuple(sb):
        raise ConversionIssue(INVALID_MODEL, f"SwiGLU inputs must have identical shapes, got {list(sa)} and "
                                             f"{list(sb)} (no broadcasting)")
    alpha = float(ctx.attr("alpha", 1.0))
    if alpha == 1.0:
        gate = _unary(ctx, OP.OH_NN_OPS_SWISH, a, f"{out}.swish")
    else:
        scaled = _binary(ctx, OP.OH_NN_OPS_MUL, a, _const(ctx, alpha, dtype, "alpha"), f"{out}.alpha_a")
        gate = _binary(ctx, OP.OH_NN_OPS_MUL, a, _unary(ctx, OP.OH_NN_OPS_SIGMOID, scaled, f"{out}.sigmoid"),
                       f"{out}.swish")
    _binary(ctx, OP.OH_NN_OPS_MUL, gate, b, out, output=out)


# -- onnxruntime's contrib activations (com.microsoft): Gelu, FastGelu, BiasGelu, QuickGelu -----------------------------

def _bias_added(ctx: NodeContext, x: str, position: int, dtype) -> str:
    """x + the 1-D bias of input ``position`` (its length: x's last dim), or x itself when the input is absent."""
    if not ctx.has_input(position):
        return x
    bias = ctx.input(position)
    value = ctx.value(bias)
    last = (ctx.value(x).shape or (None,))[-1]
    if value.dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"bias {bias!r} has dtype {value.dtype}, the input {dtype}")
    if value.shape is None or len(value.shape) != 1 or (last is not None and last >= 0 and value.shape[0] != last):
        raise ConversionIssue(INVALID_MODEL, f"bias {bias!r} of shape {value.shape} must be 1-D with the input's last "
                              f"dim ({last})")
    return _binary(ctx, OP.OH_NN_OPS_ADD, x, bias, f"{ctx.output(0)}.biased")


def _contrib_gelu(ctx: NodeContext, approximate: bool) -> None:
    x = ctx.input(0)
    dtype = check_op_dtype(ctx, x, OP.OH_NN_OPS_GELU)
    biased = _bias_added(ctx, x, 1, dtype)
    _unary(ctx, OP.OH_NN_OPS_GELU, biased, ctx.output(0), output=ctx.output(0),
           params={"OH_NN_GELU_APPROXIMATE": approximate})


@converts("com.microsoft.Gelu")
def contrib_gelu(ctx: NodeContext) -> None:
    """0.5 x (1 + erf(x / sqrt 2)): GELU."""
    if len([name for name in ctx.node.input if name]) != 1:
        raise ConversionIssue(INVALID_MODEL, "com.microsoft Gelu takes one input")
    _contrib_gelu(ctx, False)


@converts("com.microsoft.BiasGelu")
def bias_gelu(ctx: NodeContext) -> None:
    """Gelu(A + B), B 1-D along A's last dim: ADD, GELU."""
    if not ctx.has_input(1):
        raise ConversionIssue(INVALID_MODEL, "BiasGelu needs its bias input B")
    _contrib_gelu(ctx, False)


@converts("com.microsoft.FastGelu")
def fast_gelu(ctx: NodeContext) -> None:
    """0.5 x (1 + tanh(0.797885 x + 0.035677 x^3)) of x (+ the optional 1-D bias): [ADD], GELU with the tanh
    approximation (sqrt(2 / pi) = 0.797885, 0.044715 sqrt(2 / pi) = 0.035677)."""
    _contrib_gelu(ctx, True)


@converts("com.microsoft.QuickGelu")
def quick_gelu(ctx: NodeContext) -> None:
    """x * sigmoid(alpha x) (alpha 1.702 by default): SWISH when alpha = 1, else MUL, SIGMOID, MUL."""
    x = ctx.input(0)
    out = ctx.output(0)
    dtype = check_op_dtype(ctx, x, OP.OH_NN_OPS_SIGMOID)
    alpha = _float_attr(ctx, "alpha", 1.702)
    if alpha == 1.0:
        _unary(ctx, OP.OH_NN_OPS_SWISH, x, out, output=out)
        return
    scaled = _binary(ctx, OP.OH_NN_OPS_MUL, x, _const(ctx, alpha, dtype, "alpha"), f"{out}.alpha_x")
    _binary(ctx, OP.OH_NN_OPS_MUL, x, _unary(ctx, OP.OH_NN_OPS_SIGMOID, scaled, f"{out}.sigmoid"), out, output=out)
