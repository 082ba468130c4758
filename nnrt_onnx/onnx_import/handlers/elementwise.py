"""Converters of the elementwise family: unary math decomposed (Tan, Cosh, Sinh, Sign, IsNaN, IsInf, BitwiseNot),
binary and n-ary arithmetic (Pow, Max, Min, Mean, Sum, Mod, BitShift, and Add/Sub/Mul/Div/Pow of opsets 1-6) and
casts (Cast, CastLike); its rows without a converter (Abs, Add, Equal, Where, ...) go through the generic converter.

Decisions (the dtype checks, constant dtypes and output shapes of the decompositions: see ``_common``):

* Before opset 7 the binary arithmetic ops did not broadcast numpy-style. With ``broadcast=1`` B's shape is a
  contiguous subsequence of A's starting at ``axis`` (default: suffix-aligned); B may also have a single element,
  and a B dim of 1 stretches to A's dim (the pytorch exporter writes e.g. A [2, 3], B [2, 1], axis=0). Without
  ``broadcast`` the shapes must be equal.
* BitShift needs constant shift amounts: LEFT is a MUL by 2^y (wrapping, so a signed shift into or past the sign
  bit matches); RIGHT is an integer DIV by 2^y (truncation = floor for unsigned; for signed X the arithmetic
  shift is ``~((~x) / 2^y)`` for negative x, via LESS/SUB/WHERE). Shift amounts < 0 or >= the bit width give 0
  (-1 for a negative x shifted right), as opset 28 specifies.
"""
from __future__ import annotations

import numpy as np
import onnx

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.issues import INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE, ConversionIssue
from ..context import NodeContext
from ..generic import bshape, check_dtype, check_op_dtype
from . import converts
from ._common import FLOAT, NUMERIC, SIGNED, UNSIGNED, _align, _binary, _Builder, _delegate, _read_consumed_inputs

# -- unary math --------------------------------------------------------------------------------------------------------

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


# -- binary / n-ary ----------------------------------------------------------------------------------------------------

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
        # a partial sum has the broadcast shape of what it added so far, not the final one (mixed ranks)
        partial = bshape(ctx.value(acc).shape, ctx.value(other).shape)
        target = out if position == len(inputs) - 1 else ctx.new_value(out_value.dtype, partial, f"{out}.partial")
        ctx.emit(OP.OH_NN_OPS_ADD, [acc, other], [target])
        acc = target


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


# -- BitShift ----------------------------------------------------------------------------------------------------------

@converts("BitShift")
def bit_shift(ctx: NodeContext) -> None:
    x = ctx.input(0)
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ConversionIssue(INVALID_MODEL, f"direction={direction!r} must be 'LEFT' or 'RIGHT'")
    value = ctx.value(x)
    dtype = np.dtype(value.dtype)
    if dtype.kind not in "iu":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"BitShift on {dtype.name} (integers only)", tensor=x)
    raw = np.asarray(ctx.constant_input(1, "the shift amounts Y"))
    amounts = raw.astype(np.int64)
    if raw.dtype == np.uint64:
        amounts = np.where(raw > np.uint64(1 << 62), np.int64(-1), amounts)  # huge amounts are out of range too
    bits = dtype.itemsize * 8
    unsigned = np.dtype(f"u{dtype.itemsize}")
    if value.shape is not None:
        ctx.settle(ctx.output(0), np.broadcast_shapes(tuple(max(d, 1) for d in value.shape), amounts.shape))

    def powers(valid):
        exponent = np.where(valid, amounts, 0).astype(np.uint64)
        return np.where(valid, np.left_shift(np.uint64(1), exponent), np.uint64(0)).astype(unsigned).view(dtype)

    out = ctx.output(0)
    if direction == "LEFT":
        factors = powers((amounts >= 0) & (amounts < bits))
        if np.all(factors == 1):
            ctx.alias(x, out)
            return
        ctx.emit(OP.OH_NN_OPS_MUL, [x, ctx.constant(factors, f"{ctx.name}.factors")], [out])
        return
    # RIGHT: a signed divisor must stay representable, so a signed x >> (bits - 1) is the sign fill (mask 0)
    valid = (amounts >= 0) & (amounts < (bits - 1 if dtype.kind == "i" else bits))
    divisors = np.where(valid, powers(valid), np.ones((), dtype)).astype(dtype)
    if np.all(amounts == 0):
        ctx.alias(x, out)
        return

    def shift(source: str, output: str | None) -> str:
        quotient = _binary(ctx, OP.OH_NN_OPS_DIV, source, ctx.constant(divisors, f"{ctx.name}.divisors"),
                           f"{ctx.name}.quotient", output=output if valid.all() else None)
        if valid.all():
            return quotient
        return _binary(ctx, OP.OH_NN_OPS_MUL, quotient, ctx.constant(valid.astype(dtype), f"{ctx.name}.mask"),
                       f"{ctx.name}.masked", output=output)

    if dtype.kind == "u":
        shift(x, out)
        return
    minus_one = ctx.constant(np.asarray(-1, dtype), f"{ctx.name}.minus_one")
    negative = ctx.emit_to(OP.OH_NN_OPS_LESS, [x, ctx.constant(np.asarray(0, dtype))], np.bool_, value.shape,
                     f"{ctx.name}.negative")
    flipped = _binary(ctx, OP.OH_NN_OPS_SUB, minus_one, x, f"{ctx.name}.not")  # ~x = -1 - x (no overflow)
    source = ctx.emit_to(OP.OH_NN_OPS_WHERE, [negative, flipped, x], dtype, value.shape, f"{ctx.name}.magnitude")
    shifted = shift(source, None)
    back = _binary(ctx, OP.OH_NN_OPS_SUB, minus_one, shifted, f"{ctx.name}.back")
    ctx.emit_to(OP.OH_NN_OPS_WHERE, [negative, back, shifted], dtype, ctx.value(shifted).shape, "", output=out)


# -- opsets 1-6: Add, Sub, Mul, Div, Pow with broadcast / axis ---------------------------------------------------------

@converts("Add", "Div", "Mul", "Pow", "Sub", since=1)
def legacy_binary(ctx: NodeContext) -> None:
    """Add/Sub/Mul/Div/Pow before opset 7: ``broadcast``/``axis`` alignment of B, then the opset-7 conversion."""
    _read_consumed_inputs(ctx)
    broadcast = int(ctx.attr("broadcast", 0))
    axis = ctx.attr("axis")
    a, b = ctx.input(0), ctx.input(1)
    a_shape, b_shape = ctx.value(a).shape, ctx.value(b).shape
    if a_shape is None or b_shape is None:
        ctx.rank(a), ctx.rank(b)  # raises DYNAMIC_SHAPE naming the tensor
    op = ctx.node.op_type
    if broadcast not in (0, 1):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"broadcast={broadcast} is not supported (0 or 1)")
    if not broadcast:
        if axis is not None:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"axis={axis} needs broadcast=1 ({op} opset {ctx.opset})")
        same_rank = len(a_shape) == len(b_shape)
        if not same_rank or any(x >= 0 and y >= 0 and x != y for x, y in zip(a_shape, b_shape)):
            raise ConversionIssue(INVALID_MODEL, f"{op} (opset {ctx.opset}) without broadcast=1 needs equal shapes, "
                                                 f"got A {list(a_shape)} and B {list(b_shape)}")
        _delegate(ctx, {})
        return
    rank_a, rank_b = len(a_shape), len(b_shape)
    b_size = int(np.prod(b_shape)) if all(d >= 0 for d in b_shape) else -1
    if b_size == 1 and axis is None:  # a single element (any rank <= A's): broadcasts everywhere
        if rank_b > rank_a:
            raise ConversionIssue(INVALID_MODEL, f"{op}: B {list(b_shape)} has a higher rank than A {list(a_shape)}")
        _delegate(ctx, {})
        return
    start = rank_a - rank_b if axis is None else int(axis)
    if start < 0 and axis is not None:
        start += rank_a
    if start < 0 or start + rank_b > rank_a:
        raise ConversionIssue(INVALID_MODEL, f"{op}: B {list(b_shape)} does not fit A {list(a_shape)} at axis="
                                             f"{axis if axis is not None else 'suffix'}")
    for i, d in enumerate(b_shape):
        ad = a_shape[start + i]
        if d >= 0 and ad >= 0 and d != ad and d != 1:
            raise ConversionIssue(INVALID_MODEL, f"{op}: B {list(b_shape)} does not match A {list(a_shape)} at axis "
                                                 f"{start} (dim {i}: {d} vs {ad})")
    aligned = (1,) * start + tuple(b_shape) + (1,) * (rank_a - start - rank_b)
    _delegate(ctx, {1: _align(ctx, b, aligned)})


# -- casts -------------------------------------------------------------------------------------------------------------

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
