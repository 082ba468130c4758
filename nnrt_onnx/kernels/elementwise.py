"""Element-wise kernels: broadcasting binary arithmetic, unary math, comparisons, logic, selection, and CAST.

Conventions shared by the arithmetic kernels here (the activation kernels, activation.py, follow them too):

* Binary ops broadcast numpy-style. Two inputs of different dtypes are combined in the dtype "with the higher
  precision" (the header's wording): a float beats an integer, a wider float beats a narrower one, BOOL yields to
  any number, two integers use numpy's integer promotion.
* float16 in, float16 out. Plain arithmetic runs in float16; transcendental functions are evaluated in float32
  and rounded back to float16 once.
* Integer arithmetic wraps like C. Integer DIV truncates toward zero and integer MOD is C's ``%`` (the sign of the
  dividend), as in MindSpore Lite (nnacl) and ONNX ``Div`` / ``Mod(fmod=1)``; an integer division by zero is an error.
* Float-only math (exp, log, sigmoid, ...) on an integer or BOOL tensor raises ``OH_NN_UNSUPPORTED``.
* Fused activations (``activation_type``) are applied by the executor, never here.
"""
from __future__ import annotations

import numpy as np

from ..errors import invalid, unsupported
from . import kernel, shape_rule
from ._common import (
    _ERF_P,
    _ERF_Q,
    _FI,
    _agree,
    _broadcast_dims,
    _check,
    _declared,
    _dtype_name,
    _erf_float32,
    _first_input_shape,
    _kind,
    _known,
    _one_int,
    _out,
    _output_quantized,
    _product,
    _remembered,
    _type_code,
    _unary_float,
)

# More kinds of dtypes an op accepts (_F and _FI: _common).
_FS = frozenset({"float", "int"})  # floats and signed integers
_ANY = frozenset({"float", "int", "uint", "bool"})


def _common_dtype(op: str, da: np.dtype, db: np.dtype) -> np.dtype:
    """The dtype "with the higher precision" of two operands."""
    da, db = np.dtype(da), np.dtype(db)
    if da == db:
        return da
    if da == np.bool_:
        return db
    if db == np.bool_:
        return da
    fa, fb = _kind(da) == "float", _kind(db) == "float"
    if fa and fb:
        return da if da.itemsize >= db.itemsize else db
    if fa or fb:
        return da if fa else db
    common = np.promote_types(da, db)
    if _kind(common) not in ("int", "uint"):
        raise unsupported(f"OH_NN_OPS_{op}: no common integer type for {_dtype_name(da)} and {_dtype_name(db)}")
    return common


def _broadcast(op: str, *shapes):
    """The broadcast shape of the inputs (unknown dims allowed); shapes that cannot broadcast are invalid."""
    try:
        return _broadcast_dims(*shapes)
    except ValueError:
        listed = " and ".join(str(list(s)) for s in shapes)
        raise invalid(f"OH_NN_OPS_{op}: input shapes {listed} are not broadcastable") from None


def _broadcast_shape(op: str, *arrays: np.ndarray) -> tuple[int, ...]:
    """The broadcast shape of the arrays (remembered per shapes: ~2 us of a small op), or the op's error."""
    return _broadcast_known(op, *(a.shape for a in arrays))


@_remembered
def _broadcast_known(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    return _broadcast(op, *shapes)




def _broadcast_binary_shape(op, shapes, values, **_):
    """The shape rule of the broadcasting binary ops: the broadcast of their two input shapes."""
    return (_broadcast(op, shapes[0], shapes[1]),)




def _binary(op: str, a, b, kinds: frozenset[str]) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    a, b = np.asarray(a), np.asarray(b)
    dtype = _common_dtype(op, a.dtype, b.dtype)
    _check(op, dtype, kinds)
    _broadcast_shape(op, a, b)
    return a.astype(dtype, copy=False), b.astype(dtype, copy=False), dtype


def _not_both_bool(op: str, a, b) -> None:
    if np.asarray(a).dtype == np.bool_ and np.asarray(b).dtype == np.bool_:
        raise unsupported(f"OH_NN_OPS_{op}: the two inputs cannot both be OH_NN_BOOL")


def _no_int_zero_divisor(op: str, b: np.ndarray) -> None:
    if _kind(b.dtype) in ("int", "uint") and np.any(b == 0):
        raise invalid(f"OH_NN_OPS_{op}: integer division by zero")


# ---------------------------------------------------------------------------------------------------------------
# Binary arithmetic


@kernel("OH_NN_OPS_ADD", shape=_broadcast_binary_shape)
def add(input1, input2):
    a, b, dt = _binary("ADD", input1, input2, _FI)
    return _out(np.add(a, b), dt)


@kernel("OH_NN_OPS_SUB", shape=_broadcast_binary_shape)
def sub(input1, input2):
    a, b, dt = _binary("SUB", input1, input2, _FI)
    return _out(np.subtract(a, b), dt)


@kernel("OH_NN_OPS_MUL", shape=_broadcast_binary_shape)
def mul(input1, input2):
    a, b, dt = _binary("MUL", input1, input2, _FI)
    return _out(np.multiply(a, b), dt)


def _int_trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        if _kind(a.dtype) == "int":
            r = a - q * b
            q = q + ((r != 0) & ((a < 0) != (b < 0))).astype(a.dtype)
    return q


@kernel("OH_NN_OPS_DIV", shape=_broadcast_binary_shape)
def div(input1, input2):
    a, b, dt = _binary("DIV", input1, input2, _FI)
    if _kind(dt) == "float":
        with np.errstate(all="ignore"):
            return _out(np.true_divide(a, b), dt)
    _no_int_zero_divisor("DIV", b)
    return _out(_int_trunc_div(a, b), dt)


_ELTWISE = {0: np.multiply, 1: np.add, 2: np.maximum}  # ELTWISE_MODE_PROD / SUM / MAXIMUM


@kernel("OH_NN_OPS_ELTWISE", shape=_broadcast_binary_shape)
def eltwise(input1, input2, *, mode):
    fn = _ELTWISE.get(int(mode))
    if fn is None:
        what = "ELTWISE_MODE_UNKNOWN (3) names no operation" if int(mode) == 3 else "is not 0 (PROD), 1 (SUM) or 2 (MAXIMUM)"
        raise invalid(f"OH_NN_OPS_ELTWISE: mode {int(mode)}: {what}")
    a, b, dt = _binary("ELTWISE", input1, input2, _FI)
    return _out(fn(a, b), dt)


@kernel("OH_NN_OPS_MAXIMUM", shape=_broadcast_binary_shape)
def maximum(input1, input2):
    _not_both_bool("MAXIMUM", input1, input2)
    a, b, dt = _binary("MAXIMUM", input1, input2, _FI)
    return _out(np.maximum(a, b), dt)


@kernel("OH_NN_OPS_MINIMUM", shape=_broadcast_binary_shape)
def minimum(input1, input2):
    _not_both_bool("MINIMUM", input1, input2)
    a, b, dt = _binary("MINIMUM", input1, input2, _FI)
    return _out(np.minimum(a, b), dt)


@kernel("OH_NN_OPS_POW", shape=_broadcast_binary_shape)
def pow_(input, y, *, scale, shift):
    """output = (scale * input + shift) ^ y  (MindSpore PowFusion, nnacl ``Power``)."""
    _not_both_bool("POW", input, y)
    a, e, dt = _binary("POW", input, y, _FI)
    identity = float(scale) == 1.0 and float(shift) == 0.0
    if _kind(dt) != "float":
        if not identity:
            raise unsupported(f"OH_NN_OPS_POW: scale {scale} / shift {shift} other than 1 / 0 on integer dtype "
                              f"{_dtype_name(dt)} (the scaled base is not an integer)")
        if _kind(dt) == "int" and np.any(e < 0):
            raise invalid("OH_NN_OPS_POW: negative integer exponent on an integer tensor")
        return _out(np.power(a, e), dt)
    with np.errstate(all="ignore"):
        base = a if identity else a * dt.type(scale) + dt.type(shift)
        return _out(np.power(base, e), dt)


@kernel("OH_NN_OPS_SQUARED_DIFFERENCE", shape=_broadcast_binary_shape)
def squared_difference(input1, input2):
    a, b, dt = _binary("SQUARED_DIFFERENCE", input1, input2, _ANY)
    if dt == np.bool_:
        return _out(np.not_equal(a, b), dt)  # (a - b)^2 of 0/1 values
    d = np.subtract(a, b)
    return _out(np.multiply(d, d), dt)


@kernel("OH_NN_OPS_MOD", shape=_broadcast_binary_shape)
def mod(input1, input2):
    """C-style remainder: input1 - trunc(input1 / input2) * input2, sign of the dividend (nnacl ``fmod``)."""
    _not_both_bool("MOD", input1, input2)
    a, b, dt = _binary("MOD", input1, input2, _FI)
    if _kind(dt) != "float":
        _no_int_zero_divisor("MOD", b)
    with np.errstate(all="ignore"):
        return _out(np.fmod(a, b), dt)


def _check_bias_add(x_shape, b_shape) -> None:
    """The bias must be 1-D with the input's last dim (unknown dims and ranks pass)."""
    if x_shape is None or b_shape is None:
        return
    last = x_shape[-1] if x_shape else None
    if not x_shape or len(b_shape) != 1 or _known(b_shape[0], last) and b_shape[0] != last:
        raise invalid(f"OH_NN_OPS_BIAS_ADD: bias must be 1-D with the input's last dimension "
                      f"({last if x_shape else 'none'}); got bias shape {list(b_shape)}")


@shape_rule("OH_NN_OPS_BIAS_ADD")
def _bias_add_shape(op, shapes, values, **_):
    _check_bias_add(shapes[0], shapes[1])
    return (_broadcast(op, shapes[0], shapes[1]),)


@kernel("OH_NN_OPS_BIAS_ADD")
def bias_add(input, bias):
    x, b = np.asarray(input), np.asarray(bias)
    _check_bias_add(x.shape, b.shape)
    a, b, dt = _binary("BIAS_ADD", x, b, _FI)
    return _out(np.add(a, b), dt)


@kernel("OH_NN_OPS_SCALE")
def scale(input, scale, bias, *, axis):
    """output = input * scale + bias, scale/bias covering input dims [axis, axis + scale.ndim) (ScaleFusion)."""
    x, s, b = np.asarray(input), np.asarray(scale), np.asarray(bias)
    _check("SCALE", x.dtype, _FI)
    for name, t in (("scale", s), ("bias", b)):
        if t.dtype != x.dtype:
            raise unsupported(f"OH_NN_OPS_SCALE: {name} dtype {_dtype_name(t.dtype)} differs from the input's "
                              f"{_dtype_name(x.dtype)}")
    ax = _scale_axis(x.ndim, axis)

    def place(t: np.ndarray, name: str) -> np.ndarray:
        if _scale_operand_is_scalar(x.shape, t.shape, ax, name):
            return t.reshape(())
        return t.reshape(t.shape + (1,) * (x.ndim - ax - t.ndim))

    return _out(x * place(s, "scale") + place(b, "bias"), x.dtype)


def _scale_axis(rank: int, axis) -> int:
    ax = int(axis)
    if not -rank <= ax < max(rank, 1):
        raise invalid(f"OH_NN_OPS_SCALE: axis {ax} out of range for a rank-{rank} input")
    return ax % max(rank, 1)


def _scale_operand_is_scalar(x_shape, t_shape, ax: int, name: str) -> bool:
    """True for a one-element scale/bias; otherwise its shape must be the input dims from ``axis`` on (unknown
    dims pass)."""
    size = _product(t_shape)
    if size == 1:
        return True
    span = tuple(x_shape[ax:ax + len(t_shape)])
    if len(span) != len(t_shape) or any(_known(a, b) and a != b for a, b in zip(span, t_shape)):
        raise invalid(f"OH_NN_OPS_SCALE: {name} shape {list(t_shape)} does not match input dims "
                      f"{list(span)} from axis {ax}")
    return False


@shape_rule("OH_NN_OPS_SCALE")
def _scale_shape(op, shapes, values, *, axis, **_):
    """The input's shape, after the kernel's checks of axis and of the scale and bias shapes."""
    x_shape = shapes[0]
    if x_shape is not None:
        ax = _scale_axis(len(x_shape), axis)
        for name, t_shape in (("scale", shapes[1]), ("bias", shapes[2])):
            if t_shape is not None and _known(_product(t_shape)):
                _scale_operand_is_scalar(x_shape, t_shape, ax, name)
    return (x_shape,)


# ---------------------------------------------------------------------------------------------------------------
# Unary math


@kernel("OH_NN_OPS_ABS", shape=_first_input_shape)
def abs_(input):
    x = np.asarray(input)
    _check("ABS", x.dtype, _FI)
    return _out(np.abs(x), x.dtype)


@kernel("OH_NN_OPS_NEG", shape=_first_input_shape)
def neg(input):
    x = np.asarray(input)
    _check("NEG", x.dtype, _FS)
    return _out(np.negative(x), x.dtype)


@kernel("OH_NN_OPS_EXP", shape=_first_input_shape)
def exp(input, *, base, scale, shift):
    """output = base ^ (shift + scale * input); base -1 means e (ExpFusion)."""
    base = float(base)
    if not (base > 0 or base == -1.0):
        raise invalid(f"OH_NN_OPS_EXP: base {base} must be > 0 or -1 (meaning e)")

    def fn(x):
        t = x if float(scale) == 1.0 and float(shift) == 0.0 else x * x.dtype.type(scale) + x.dtype.type(shift)
        return np.exp(t) if base == -1.0 else np.power(x.dtype.type(base), t)

    return _unary_float("EXP", input, fn)


@kernel("OH_NN_OPS_LOG", shape=_first_input_shape)
def log(input):
    return _unary_float("LOG", input, np.log)


@kernel("OH_NN_OPS_SQRT", shape=_first_input_shape)
def sqrt(input):
    return _unary_float("SQRT", input, np.sqrt)


@kernel("OH_NN_OPS_RSQRT", shape=_first_input_shape)
def rsqrt(input):
    return _unary_float("RSQRT", input, lambda x: 1 / np.sqrt(x))


@kernel("OH_NN_OPS_SQUARE", shape=_first_input_shape)
def square(input):
    x = np.asarray(input)
    _check("SQUARE", x.dtype, _FI)
    return _out(np.multiply(x, x), x.dtype)


@kernel("OH_NN_OPS_RECIPROCAL", shape=_first_input_shape)
def reciprocal(input):
    return _unary_float("RECIPROCAL", input, lambda x: 1 / x)


@kernel("OH_NN_OPS_SIN", shape=_first_input_shape)
def sin(input):
    return _unary_float("SIN", input, np.sin)


@kernel("OH_NN_OPS_COS", shape=_first_input_shape)
def cos(input):
    return _unary_float("COS", input, np.cos)


# erf's float32 rational approximation (numerator, denominator coefficients; evaluated in float64): a compiled
# evaluation must use these, in this order, to give the kernel's values
ERF_COEFFICIENTS = (_ERF_P, _ERF_Q)


@kernel("OH_NN_OPS_ERF", shape=_first_input_shape)
def erf(input):
    x = np.asarray(input)
    if x.dtype == np.float64:  # the header: "the data type only support OH_NN_FLOAT32 and OH_NN_FLOAT16"
        raise unsupported("OH_NN_OPS_ERF: input dtype OH_NN_FLOAT64 is not supported (FLOAT32 or FLOAT16 only)")
    return _unary_float("ERF", x, _erf_float32)


@kernel("OH_NN_OPS_CEIL", shape=_first_input_shape)
def ceil(input):
    return _unary_float("CEIL", input, np.ceil)


@kernel("OH_NN_OPS_FLOOR", shape=_first_input_shape)
def floor(input):
    return _unary_float("FLOOR", input, np.floor)


@kernel("OH_NN_OPS_ROUND", shape=_first_input_shape)
def round_(input):
    """Round half to even (the header's "half to even", ONNX Round)."""
    return _unary_float("ROUND", input, np.rint)


# ---------------------------------------------------------------------------------------------------------------
# Comparisons (numbers and BOOL in, BOOL out)


def _compare(op: str, a, b, fn) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    _check(op, a.dtype, _ANY, what="input1")
    _check(op, b.dtype, _ANY, what="input2")
    _broadcast_shape(op, a, b)
    return _out(fn(a, b), np.bool_)


@kernel("OH_NN_OPS_EQUAL", shape=_broadcast_binary_shape)
def equal(input1, input2):
    return _compare("EQUAL", input1, input2, np.equal)


@kernel("OH_NN_OPS_NOT_EQUAL", shape=_broadcast_binary_shape)
def not_equal(input1, input2):
    return _compare("NOT_EQUAL", input1, input2, np.not_equal)


@kernel("OH_NN_OPS_LESS", shape=_broadcast_binary_shape)
def less(input1, input2):
    return _compare("LESS", input1, input2, np.less)


@kernel("OH_NN_OPS_LESS_EQUAL", shape=_broadcast_binary_shape)
def less_equal(input1, input2):
    return _compare("LESS_EQUAL", input1, input2, np.less_equal)


@kernel("OH_NN_OPS_GREATER", shape=_broadcast_binary_shape)
def greater(input1, input2):
    return _compare("GREATER", input1, input2, np.greater)


@kernel("OH_NN_OPS_GREATER_EQUAL", shape=_broadcast_binary_shape)
def greater_equal(input1, input2):
    return _compare("GREATER_EQUAL", input1, input2, np.greater_equal)


# ---------------------------------------------------------------------------------------------------------------
# Logic (BOOL, or numbers "converted to boolean implicitly": non-zero is true)


def _as_bool(op: str, x, what: str) -> np.ndarray:
    x = np.asarray(x)
    _check(op, x.dtype, _ANY, what=what)
    return x.astype(np.bool_, copy=False)


@kernel("OH_NN_OPS_LOGICAL_AND", shape=_broadcast_binary_shape)
def logical_and(input1, input2):
    a, b = _as_bool("LOGICAL_AND", input1, "input1"), _as_bool("LOGICAL_AND", input2, "input2")
    _broadcast_shape("LOGICAL_AND", a, b)
    return _out(np.logical_and(a, b), np.bool_)


@kernel("OH_NN_OPS_LOGICAL_OR", shape=_broadcast_binary_shape)
def logical_or(input1, input2):
    a, b = _as_bool("LOGICAL_OR", input1, "input1"), _as_bool("LOGICAL_OR", input2, "input2")
    _broadcast_shape("LOGICAL_OR", a, b)
    return _out(np.logical_or(a, b), np.bool_)


@kernel("OH_NN_OPS_LOGICAL_NOT", shape=_first_input_shape)
def logical_not(input):
    return _out(np.logical_not(_as_bool("LOGICAL_NOT", input, "input")), np.bool_)


# ---------------------------------------------------------------------------------------------------------------
# Selection


def _select(op: str, condition, input1, input2, rank1_rows: bool) -> np.ndarray:
    c = np.asarray(condition)
    if c.dtype != np.bool_:
        raise unsupported(f"OH_NN_OPS_{op}: condition dtype {_dtype_name(c.dtype)} is not supported (OH_NN_BOOL only)")
    a, b = np.asarray(input1), np.asarray(input2)
    dt = _common_dtype(op, a.dtype, b.dtype)
    c_shape = _selecting_condition_shape(op, c.shape, a.shape, b.shape, rank1_rows)
    if c_shape != c.shape:
        c = c.reshape(c_shape)
    _broadcast_shape(op, c, a, b)
    return _out(np.where(c, a.astype(dt, copy=False), b.astype(dt, copy=False)), dt)


def _selecting_condition_shape(op: str, c_shape, a_shape, b_shape, rank1_rows: bool):
    """The shape the condition broadcasts as: with ``rank1_rows`` (SELECT), a rank-1 condition against inputs of
    higher rank picks whole rows ("If condition is rank 1, input1 may have higher rank, but its first dimension
    must match the size of condition", TF Select) and becomes [n, 1, ...]; None if a rank is unknown."""
    if not rank1_rows or c_shape is None or len(c_shape) != 1:
        return c_shape
    if a_shape is None or b_shape is None:
        return None
    rank = max(len(a_shape), len(b_shape))
    if rank <= 1:
        return c_shape
    first = a_shape[0] if len(a_shape) == rank else b_shape[0]
    if _known(c_shape[0], first) and c_shape[0] != first:
        raise invalid(f"OH_NN_OPS_{op}: rank-1 condition of length {c_shape[0]} must match the inputs' first "
                      f"dimension {first}")
    return tuple(c_shape) + (1,) * (rank - 1)


@shape_rule("OH_NN_OPS_SELECT", "OH_NN_OPS_WHERE")
def _select_shape(op, shapes, values, **_):
    """The broadcast of condition and inputs (SELECT: a rank-1 condition picks rows)."""
    c_shape = _selecting_condition_shape(op, shapes[0], shapes[1], shapes[2], rank1_rows=op == "SELECT")
    return (_broadcast(op, c_shape, shapes[1], shapes[2]),)


@kernel("OH_NN_OPS_SELECT")
def select(condition, input1, input2):
    return _select("SELECT", condition, input1, input2, rank1_rows=True)


@kernel("OH_NN_OPS_WHERE")
def where(condition, input1, input2):
    return _select("WHERE", condition, input1, input2, rank1_rows=False)


# ---------------------------------------------------------------------------------------------------------------
# Conversion


@kernel("OH_NN_OPS_CAST", shape=_first_input_shape)
def cast(x, target, *, ctx):
    """C conversion to the OH_NN_DataType held by input #1 (float -> int truncates toward zero, anything -> bool is
    "!= 0"); OH_NN_UNKNOWN means the declared output type. A quantized output receives the real values (the executor
    quantizes them)."""
    op = "CAST"
    x = np.asarray(x)
    wanted = _type_code(_one_int(target, op, "type (input #1)"), op, "target data type")
    if wanted is None and _declared(ctx) is None:
        raise invalid(f"{op}: target data type is OH_NN_UNKNOWN and no output type is declared")
    dtype = _agree(op, "target data type", wanted, _declared(ctx))
    if _output_quantized(ctx):
        return x.astype(np.float32)
    if x.dtype.kind == "f" and dtype.kind in "iu":
        with np.errstate(invalid="ignore"):
            return np.trunc(x).astype(dtype)
    return x.astype(dtype)
