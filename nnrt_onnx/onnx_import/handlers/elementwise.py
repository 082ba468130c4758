"""Element-wise ONNX ops: unary math, activations, comparisons, logic, selection, casts, n-ary min/max/mean.

Most map 1:1 onto an NNRt op (the ``elementwise`` handler: the generic converter after a dtype check); the others
are decomposed into a few element-wise NNRt ops. Decisions:

* Every handler checks its input dtypes against the NNRt op's ``dtypes`` (or what the decomposition can compute)
  and reports ``unsupported_dtype`` at import, never a run-time failure.
* Constants are created in the dtype of the tensor they meet (the kernels promote mixed dtypes, and the declared
  output dtype must then match).
* ``expm1(x)`` is evaluated as ``tanh(x/2) * (exp(x) + 1)`` (no cancellation near 0): Elu, Selu, Celu; Sinh is
  ``tanh(x/2) * (1 + cosh(x))`` for the same reason. Softplus is ``relu(x) + log1p(exp(-|x|))`` (no overflow),
  with log1p as Goldberg's ``log(w) * u / (w - 1)``, ``w = 1 + u``.
* An output ONNX shape inference left without a (full) shape gets the broadcast of the inputs' shapes.
"""
from __future__ import annotations

import numpy as np
import onnx

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from ...ir.passes import NCHW_TO_NHWC, NHWC_TO_NCHW
from ...ir.transforms import transform
from ..context import NodeContext
from ..generic import bshape, check_dtype, check_op_dtype, emit_row
from . import converts

FLOAT = ("float16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
NUMERIC = FLOAT + SIGNED + UNSIGNED


# -- helpers ------------------------------------------------------------------------------------------------------

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


def _float_attr(ctx: NodeContext, name: str, default: float) -> float:
    return float(ctx.attr(name, default))


# -- 1:1 ------------------------------------------------------------------------------------------------------------

@transform("gelu_approximate_to_bool", inverse="bool_to_gelu_approximate")
def gelu_approximate_to_bool(value):
    """ONNX Gelu ``approximate`` ("none" | "tanh") -> OH_NN_GELU_APPROXIMATE."""
    if value not in ("none", "tanh"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"approximate={value!r} (supported: 'none', 'tanh')")
    return value == "tanh"


@transform("bool_to_gelu_approximate", inverse="gelu_approximate_to_bool")
def bool_to_gelu_approximate(value):
    return "tanh" if bool(value) else "none"


# -- unary math ---------------------------------------------------------------------------------------------------

@converts("Tan")
def tan(ctx: NodeContext) -> None:
    """tan(x) = sin(x) / cos(x)."""
    x = ctx.input(0)
    check_op_dtype(ctx, x, OP.OH_NN_OPS_SIN)
    b = _Builder(ctx)
    b.op(OP.OH_NN_OPS_DIV, [b.op(OP.OH_NN_OPS_SIN, [x]), b.op(OP.OH_NN_OPS_COS, [x])], out=b.out)


def _cosh(b: _Builder, x: str, out=None) -> str:
    """(exp(x) + exp(-x)) / 2."""
    dt = b.ctx.value(x).dtype
    ep = b.op(OP.OH_NN_OPS_EXP, [x])
    en = b.op(OP.OH_NN_OPS_EXP, [x], params={"OH_NN_EXP_SCALE": -1.0})
    s = b.op(OP.OH_NN_OPS_ADD, [ep, en])
    return b.op(OP.OH_NN_OPS_MUL, [s, b.const(0.5, dt)], out=out)


@converts("Cosh")
def cosh(ctx: NodeContext) -> None:
    x = ctx.input(0)
    check_op_dtype(ctx, x, OP.OH_NN_OPS_EXP)
    b = _Builder(ctx)
    _cosh(b, x, out=b.out)


@converts("Sinh")
def sinh(ctx: NodeContext) -> None:
    """sinh(x) = tanh(x / 2) * (1 + cosh(x)): exact near 0, unlike (exp(x) - exp(-x)) / 2."""
    x = ctx.input(0)
    check_op_dtype(ctx, x, OP.OH_NN_OPS_EXP)
    b = _Builder(ctx)
    dt = ctx.value(x).dtype
    t = b.op(OP.OH_NN_OPS_TANH, [b.op(OP.OH_NN_OPS_MUL, [x, b.const(0.5, dt)])])
    c1 = b.op(OP.OH_NN_OPS_ADD, [_cosh(b, x), b.const(1, dt)])
    b.op(OP.OH_NN_OPS_MUL, [t, c1], out=b.out)


@converts("Sign")
def sign(ctx: NodeContext) -> None:
    """sign(x) = (x > 0) - (x < 0) (as x's dtype); NaN stays NaN."""
    x = ctx.input(0)
    dt = check_dtype(ctx, x, NUMERIC)
    b = _Builder(ctx)
    zero = b.const(0, dt)
    above = b.op(OP.OH_NN_OPS_GREATER, [x, zero], dtype=np.bool_)
    if dt.name in UNSIGNED:
        b.cast(above, dt, out=b.out)
        return
    positive = b.cast(above, dt)
    negative = b.cast(b.op(OP.OH_NN_OPS_LESS, [x, zero], dtype=np.bool_), dt)
    if dt.name in FLOAT:
        diff = b.op(OP.OH_NN_OPS_SUB, [positive, negative])
        nan = b.op(OP.OH_NN_OPS_NOT_EQUAL, [x, x], dtype=np.bool_)
        b.op(OP.OH_NN_OPS_WHERE, [nan, x, diff], out=b.out)
    else:
        b.op(OP.OH_NN_OPS_SUB, [positive, negative], out=b.out)


@converts("IsNaN")
def is_nan(ctx: NodeContext) -> None:
    """IsNaN(x) = x != x."""
    x = ctx.input(0)
    check_dtype(ctx, x, FLOAT)
    _Builder(ctx).op(OP.OH_NN_OPS_NOT_EQUAL, [x, x], out=ctx.output(0))


@converts("IsInf")
def is_inf(ctx: NodeContext) -> None:
    """|x| == inf, x == +inf or x == -inf as detect_positive / detect_negative ask (neither: x > +inf, all false)."""
    x = ctx.input(0)
    dt = check_dtype(ctx, x, FLOAT)
    positive, negative = int(ctx.attr("detect_positive", 1)), int(ctx.attr("detect_negative", 1))
    b = _Builder(ctx)
    inf = b.const(np.inf, dt)
    if positive and negative:
        b.op(OP.OH_NN_OPS_EQUAL, [b.op(OP.OH_NN_OPS_ABS, [x]), inf], out=b.out)
    elif positive:
        b.op(OP.OH_NN_OPS_EQUAL, [x, inf], out=b.out)
    elif negative:
        b.op(OP.OH_NN_OPS_EQUAL, [x, b.const(-np.inf, dt)], out=b.out)
    else:
        b.op(OP.OH_NN_OPS_GREATER, [x, inf], out=b.out)


@converts("BitwiseNot")
def bitwise_not(ctx: NodeContext) -> None:
    """~x in two's complement: -1 - x for signed integers, MAX - x for unsigned ones (one SUB, never overflowing)."""
    x = ctx.input(0)
    dt = check_dtype(ctx, x, SIGNED + UNSIGNED)
    b = _Builder(ctx)
    ones = np.iinfo(dt).max if dt.name in UNSIGNED else -1
    b.op(OP.OH_NN_OPS_SUB, [b.const(ones, dt), x], out=b.out)


# -- activations ---------------------------------------------------------------------------------------------------

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
        if bias != int(bias):
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"bias={bias} on an integer input ({dt.name}): only an "
                                                         f"integral bias keeps the result an integer")
        # integers: x < -lambd <=> x < ceil(-lambd); x > lambd <=> x > floor(lambd)
        info = np.iinfo(dt)
        low = int(np.clip(np.ceil(-lambd), info.min, info.max))
        high = int(np.clip(np.floor(lambd), info.min, info.max))
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


# -- binary / n-ary -------------------------------------------------------------------------------------------------

@converts("Pow", since=7)
def pow_(ctx: NodeContext) -> None:
    """POW. A float base takes the exponent cast to its dtype; an integer base with a float exponent is computed in
    float64 and truncated back (ONNX's ``pow(x, y)`` cast to x's type); two integer types take x's."""
    x, y = ctx.input(0), ctx.input(1)
    dx = check_op_dtype(ctx, x, OP.OH_NN_OPS_POW)
    dy = check_op_dtype(ctx, y, OP.OH_NN_OPS_POW)
    b = _Builder(ctx)
    if dx == dy:
        b.op(OP.OH_NN_OPS_POW, [x, y], out=b.out)
    elif dx.kind == "f" or dy.kind in "iu":
        b.op(OP.OH_NN_OPS_POW, [x, b.cast(y, dx)], out=b.out)
    else:
        wide = np.dtype(np.float64)
        result = b.op(OP.OH_NN_OPS_POW, [b.cast(x, wide), b.cast(y, wide)], dtype=wide)
        b.cast(result, dx, out=b.out)


def _nary(ctx: NodeContext, op: OP) -> str | None:
    """A chain of ``op`` over the inputs; returns the last partial result (or aliases a single input)."""
    inputs = [ctx.input(i) for i in range(len(ctx.node.input)) if ctx.has_input(i)]
    if not inputs:
        raise ConversionIssue(INVALID_MODEL, f"{ctx.node.op_type} needs at least one input")
    for name in inputs:
        check_op_dtype(ctx, name, op)
    return inputs


@converts("Max", "Min")
def max_min(ctx: NodeContext) -> None:
    """Max / Min of n inputs: a chain of MAXIMUM / MINIMUM."""
    op = OP.OH_NN_OPS_MAXIMUM if ctx.node.op_type == "Max" else OP.OH_NN_OPS_MINIMUM
    inputs = _nary(ctx, op)
    b = _Builder(ctx)
    if len(inputs) == 1:
        ctx.alias(inputs[0], b.out)
        return
    acc = inputs[0]
    for position, other in enumerate(inputs[1:], start=1):
        acc = b.op(op, [acc, other], out=b.out if position == len(inputs) - 1 else None)


@converts("Mean")
def mean(ctx: NodeContext) -> None:
    """Mean of n inputs: a chain of ADDs, then DIV by n."""
    inputs = _nary(ctx, OP.OH_NN_OPS_ADD)
    dt = check_dtype(ctx, inputs[0], FLOAT)
    b = _Builder(ctx)
    if len(inputs) == 1:
        ctx.alias(inputs[0], b.out)
        return
    acc = inputs[0]
    for other in inputs[1:]:
        acc = b.op(OP.OH_NN_OPS_ADD, [acc, other])
    b.op(OP.OH_NN_OPS_DIV, [acc, b.const(len(inputs), dt)], out=b.out)


@converts("Mod")
def mod(ctx: NodeContext) -> None:
    """fmod=1: MOD (C remainder). fmod=0 (floor modulo, the sign of the divisor): r = MOD(a, b), plus b where r is
    non-zero and its sign differs from b's; a zero result takes b's sign (floats); unsigned: MOD as is."""
    a, d = ctx.input(0), ctx.input(1)
    dt = check_op_dtype(ctx, a, OP.OH_NN_OPS_MOD)
    if np.dtype(ctx.value(d).dtype) != dt:
        raise ConversionIssue(INVALID_MODEL, f"Mod inputs have different dtypes ({dt.name}, "
                                             f"{np.dtype(ctx.value(d).dtype).name})")
    fmod = int(ctx.attr("fmod", 0))
    if fmod not in (0, 1):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"fmod={fmod} (must be 0 or 1)")
    b = _Builder(ctx)
    if fmod == 1 or dt.name in UNSIGNED:
        b.op(OP.OH_NN_OPS_MOD, [a, d], out=b.out)
        return
    zero = b.const(0, dt)
    r = b.op(OP.OH_NN_OPS_MOD, [a, d])
    r_negative = b.op(OP.OH_NN_OPS_LESS, [r, zero], dtype=np.bool_)
    d_negative = b.op(OP.OH_NN_OPS_LESS, [d, zero], dtype=np.bool_)
    signs_differ = b.op(OP.OH_NN_OPS_NOT_EQUAL, [r_negative, d_negative], dtype=np.bool_)
    nonzero = b.op(OP.OH_NN_OPS_NOT_EQUAL, [r, zero], dtype=np.bool_)
    adjust = b.op(OP.OH_NN_OPS_LOGICAL_AND, [nonzero, signs_differ], dtype=np.bool_)
    shifted = b.op(OP.OH_NN_OPS_ADD, [r, d])
    if dt.kind in "iu":
        b.op(OP.OH_NN_OPS_WHERE, [adjust, shifted, r], out=b.out)
        return
    floor_mod = b.op(OP.OH_NN_OPS_WHERE, [adjust, shifted, r])
    signed_zero = b.op(OP.OH_NN_OPS_WHERE, [d_negative, b.const(-0.0, dt), zero])
    is_zero = b.op(OP.OH_NN_OPS_EQUAL, [floor_mod, zero], dtype=np.bool_)
    b.op(OP.OH_NN_OPS_WHERE, [is_zero, signed_zero, floor_mod], out=b.out)


# -- casts and shapes ---------------------------------------------------------------------------------------------

def _target_dtype(elem_type: int) -> np.dtype:
    try:
        name = onnx.TensorProto.DataType.Name(int(elem_type))
    except ValueError:
        name = str(elem_type)
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(int(elem_type)))
        from_numpy(dtype)
    except (KeyError, TypeError, ValueError):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"target type {name} has no NNRt data type") from None
    return dtype


@converts("Cast", "CastLike")
def cast(ctx: NodeContext) -> None:
    """Cast / CastLike -> CAST (C conversion: float -> int truncates, -> bool is != 0). ``saturate`` and
    ``round_mode`` only concern float8 targets, which NNRt has not."""
    x = ctx.input(0)
    ctx.attr("saturate", 1)
    ctx.attr("round_mode", "up")
    if ctx.node.op_type == "CastLike":
        target = np.dtype(ctx.value(ctx.input(1)).dtype)
        try:
            from_numpy(target)
        except ValueError:
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"target type {target.name} (of {ctx.input(1)!r}) has no NNRt "
                                                     f"data type") from None
    else:
        to = ctx.attr("to")
        if to is None:
            raise ConversionIssue(INVALID_MODEL, "Cast without the 'to' attribute")
        target = _target_dtype(to)
    check_op_dtype(ctx, x, OP.OH_NN_OPS_CAST)
    b = _Builder(ctx)
    if np.dtype(ctx.value(x).dtype) == target:
        ctx.alias(x, b.out)
        return
    b.cast(x, target, out=b.out)


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

