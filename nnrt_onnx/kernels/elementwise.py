"""Element-wise kernels: broadcasting binary arithmetic, unary math, activations, comparisons, logic, selection.

Conventions shared by every kernel here:

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

import math

import numpy as np

from ..dtypes import from_numpy
from ..errors import invalid, unsupported
from . import kernel

# Kinds of dtypes an op accepts.
_F = frozenset({"float"})
_FI = frozenset({"float", "int", "uint"})
_FS = frozenset({"float", "int"})  # floats and signed integers
_ANY = frozenset({"float", "int", "uint", "bool"})


def _kind(dtype: np.dtype) -> str:
    if dtype == np.bool_:
        return "bool"
    if np.issubdtype(dtype, np.floating):
        return "float"
    if np.issubdtype(dtype, np.signedinteger):
        return "int"
    if np.issubdtype(dtype, np.unsignedinteger):
        return "uint"
    return "other"


def _dtype_name(dtype: np.dtype) -> str:
    try:
        return from_numpy(dtype).name
    except ValueError:
        return str(dtype)


def _check(op: str, dtype: np.dtype, kinds: frozenset[str], what: str = "input") -> None:
    if _kind(np.dtype(dtype)) not in kinds:
        accepted = ", ".join(k for k in ("float", "int", "uint", "bool") if k in kinds)
        raise unsupported(f"OH_NN_OPS_{op}: {what} dtype {_dtype_name(dtype)} is not supported (accepts {accepted})")


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


def _broadcast_shape(op: str, *arrays: np.ndarray) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = " and ".join(str(list(a.shape)) for a in arrays)
        raise invalid(f"OH_NN_OPS_{op}: input shapes {shapes} are not broadcastable") from None


def _out(value, dtype) -> np.ndarray:
    """Always an ndarray of exactly ``dtype`` (ufuncs on 0-d arrays return numpy scalars)."""
    return np.asarray(value).astype(dtype, copy=False)


def _binary(op: str, a, b, kinds: frozenset[str]) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    a, b = np.asarray(a), np.asarray(b)
    dtype = _common_dtype(op, a.dtype, b.dtype)
    _check(op, dtype, kinds)
    _broadcast_shape(op, a, b)
    return a.astype(dtype, copy=False), b.astype(dtype, copy=False), dtype


def _not_both_bool(op: str, a, b) -> None:
    if np.asarray(a).dtype == np.bool_ and np.asarray(b).dtype == np.bool_:
        raise unsupported(f"OH_NN_OPS_{op}: the two inputs cannot both be OH_NN_BOOL")


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """float16 is evaluated in float32 for transcendental functions, then rounded back once."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def _unary_float(op: str, x, fn) -> np.ndarray:
    x = np.asarray(x)
    _check(op, x.dtype, _F)
    with np.errstate(all="ignore"):
        y = fn(x.astype(_compute_dtype(x.dtype), copy=False))
    return _out(y, x.dtype)


def _no_int_zero_divisor(op: str, b: np.ndarray) -> None:
    if _kind(b.dtype) in ("int", "uint") and np.any(b == 0):
        raise invalid(f"OH_NN_OPS_{op}: integer division by zero")


# ---------------------------------------------------------------------------------------------------------------
# Special functions

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI = math.sqrt(math.pi)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (relative error < 2e-15): Maclaurin series for |x| < 2, erfc continued fraction beyond."""
    x64 = np.asarray(x, dtype=np.float64)
    ax = np.abs(x64)
    out = np.empty_like(ax)
    small = ax < 2.0
    xs = ax[small]
    x2 = xs * xs
    term = xs.copy()
    acc = xs.copy()
    for n in range(1, 60):
        term = term * (-x2) / n
        acc = acc + term / (2 * n + 1)
    out[small] = acc * _TWO_OVER_SQRT_PI
    xl = ax[~small]
    with np.errstate(all="ignore"):
        cf = xl.copy()
        for k in range(80, 0, -1):
            cf = xl + (k / 2.0) / cf
        out[~small] = 1.0 - np.exp(-xl * xl) / (_SQRT_PI * cf)
    return np.copysign(out, x64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


# ---------------------------------------------------------------------------------------------------------------
# Binary arithmetic


@kernel("OH_NN_OPS_ADD")
def add(input1, input2):
    a, b, dt = _binary("ADD", input1, input2, _FI)
    return _out(np.add(a, b), dt)


@kernel("OH_NN_OPS_SUB")
def sub(input1, input2):
    a, b, dt = _binary("SUB", input1, input2, _FI)
    return _out(np.subtract(a, b), dt)


@kernel("OH_NN_OPS_MUL")
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


@kernel("OH_NN_OPS_DIV")
def div(input1, input2):
    a, b, dt = _binary("DIV", input1, input2, _FI)
    if _kind(dt) == "float":
        with np.errstate(all="ignore"):
            return _out(np.true_divide(a, b), dt)
    _no_int_zero_divisor("DIV", b)
    return _out(_int_trunc_div(a, b), dt)


_ELTWISE = {0: np.multiply, 1: np.add, 2: np.maximum}  # ELTWISE_MODE_PROD / SUM / MAXIMUM


@kernel("OH_NN_OPS_ELTWISE")
def eltwise(input1, input2, *, mode):
    fn = _ELTWISE.get(int(mode))
    if fn is None:
        what = "ELTWISE_MODE_UNKNOWN (3) names no operation" if int(mode) == 3 else "is not 0 (PROD), 1 (SUM) or 2 (MAXIMUM)"
        raise invalid(f"OH_NN_OPS_ELTWISE: mode {int(mode)}: {what}")
    a, b, dt = _binary("ELTWISE", input1, input2, _FI)
    return _out(fn(a, b), dt)


@kernel("OH_NN_OPS_MAXIMUM")
def maximum(input1, input2):
    _not_both_bool("MAXIMUM", input1, input2)
    a, b, dt = _binary("MAXIMUM", input1, input2, _FI)
    return _out(np.maximum(a, b), dt)


@kernel("OH_NN_OPS_MINIMUM")
def minimum(input1, input2):
    _not_both_bool("MINIMUM", input1, input2)
    a, b, dt = _binary("MINIMUM", input1, input2, _FI)
    return _out(np.minimum(a, b), dt)


@kernel("OH_NN_OPS_POW")
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


@kernel("OH_NN_OPS_SQUARED_DIFFERENCE")
def squared_difference(input1, input2):
    a, b, dt = _binary("SQUARED_DIFFERENCE", input1, input2, _ANY)
    if dt == np.bool_:
        return _out(np.not_equal(a, b), dt)  # (a - b)^2 of 0/1 values
    d = np.subtract(a, b)
    return _out(np.multiply(d, d), dt)


@kernel("OH_NN_OPS_MOD")
def mod(input1, input2):
    """C-style remainder: input1 - trunc(input1 / input2) * input2, sign of the dividend (nnacl ``fmod``)."""
    _not_both_bool("MOD", input1, input2)
    a, b, dt = _binary("MOD", input1, input2, _FI)
    if _kind(dt) != "float":
        _no_int_zero_divisor("MOD", b)
    with np.errstate(all="ignore"):
        return _out(np.fmod(a, b), dt)


@kernel("OH_NN_OPS_BIAS_ADD")
def bias_add(input, bias):
    x, b = np.asarray(input), np.asarray(bias)
    if x.ndim < 1 or b.ndim != 1 or b.shape[0] != x.shape[-1]:
        raise invalid(f"OH_NN_OPS_BIAS_ADD: bias must be 1-D with the input's last dimension "
                      f"({x.shape[-1] if x.ndim else 'none'}); got bias shape {list(b.shape)}")
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
    ax = int(axis)
    if not -x.ndim <= ax < max(x.ndim, 1):
        raise invalid(f"OH_NN_OPS_SCALE: axis {ax} out of range for a rank-{x.ndim} input")
    ax %= max(x.ndim, 1)

    def place(t: np.ndarray, name: str) -> np.ndarray:
        if t.size == 1:
            return t.reshape(())
        span = x.shape[ax:ax + t.ndim]
        if tuple(span) != t.shape:
            raise invalid(f"OH_NN_OPS_SCALE: {name} shape {list(t.shape)} does not match input dims "
                          f"{list(x.shape[ax:ax + t.ndim])} from axis {ax}")
        return t.reshape(t.shape + (1,) * (x.ndim - ax - t.ndim))

    return _out(x * place(s, "scale") + place(b, "bias"), x.dtype)


# ---------------------------------------------------------------------------------------------------------------
# Unary math


@kernel("OH_NN_OPS_ABS")
def abs_(input):
    x = np.asarray(input)
    _check("ABS", x.dtype, _FI)
    return _out(np.abs(x), x.dtype)


@kernel("OH_NN_OPS_NEG")
def neg(input):
    x = np.asarray(input)
    _check("NEG", x.dtype, _FS)
    return _out(np.negative(x), x.dtype)


@kernel("OH_NN_OPS_EXP")
def exp(input, *, base, scale, shift):
    """output = base ^ (shift + scale * input); base -1 means e (ExpFusion)."""
    base = float(base)
    if not (base > 0 or base == -1.0):
        raise invalid(f"OH_NN_OPS_EXP: base {base} must be > 0 or -1 (meaning e)")

    def fn(x):
        t = x if float(scale) == 1.0 and float(shift) == 0.0 else x * x.dtype.type(scale) + x.dtype.type(shift)
        return np.exp(t) if base == -1.0 else np.power(x.dtype.type(base), t)

    return _unary_float("EXP", input, fn)


@kernel("OH_NN_OPS_LOG")
def log(input):
    return _unary_float("LOG", input, np.log)


@kernel("OH_NN_OPS_SQRT")
def sqrt(input):
    return _unary_float("SQRT", input, np.sqrt)


@kernel("OH_NN_OPS_RSQRT")
def rsqrt(input):
    return _unary_float("RSQRT", input, lambda x: 1 / np.sqrt(x))


@kernel("OH_NN_OPS_SQUARE")
def square(input):
    x = np.asarray(input)
    _check("SQUARE", x.dtype, _FI)
    return _out(np.multiply(x, x), x.dtype)


@kernel("OH_NN_OPS_RECIPROCAL")
def reciprocal(input):
    return _unary_float("RECIPROCAL", input, lambda x: 1 / x)


@kernel("OH_NN_OPS_SIN")
def sin(input):
    return _unary_float("SIN", input, np.sin)


@kernel("OH_NN_OPS_COS")
def cos(input):
    return _unary_float("COS", input, np.cos)


@kernel("OH_NN_OPS_ERF")
def erf(input):
    x = np.asarray(input)
    if x.dtype == np.float64:  # the header: "the data type only support OH_NN_FLOAT32 and OH_NN_FLOAT16"
        raise unsupported("OH_NN_OPS_ERF: input dtype OH_NN_FLOAT64 is not supported (FLOAT32 or FLOAT16 only)")
    return _unary_float("ERF", x, _erf)


@kernel("OH_NN_OPS_CEIL")
def ceil(input):
    return _unary_float("CEIL", input, np.ceil)


@kernel("OH_NN_OPS_FLOOR")
def floor(input):
    return _unary_float("FLOOR", input, np.floor)


@kernel("OH_NN_OPS_ROUND")
def round_(input):
    """Round half to even (the header's "half to even", ONNX Round)."""
    return _unary_float("ROUND", input, np.rint)


# ---------------------------------------------------------------------------------------------------------------
# Activations


@kernel("OH_NN_OPS_RELU")
def relu(input):
    x = np.asarray(input)
    _check("RELU", x.dtype, _FI)
    return _out(np.maximum(x, x.dtype.type(0)), x.dtype)


@kernel("OH_NN_OPS_RELU6")
def relu6(input):
    x = np.asarray(input)
    _check("RELU6", x.dtype, _FI)
    return _out(np.minimum(np.maximum(x, x.dtype.type(0)), x.dtype.type(6)), x.dtype)


@kernel("OH_NN_OPS_SIGMOID")
def sigmoid(input):
    return _unary_float("SIGMOID", input, _sigmoid)


@kernel("OH_NN_OPS_TANH")
def tanh(input):
    return _unary_float("TANH", input, np.tanh)


@kernel("OH_NN_OPS_HSWISH")
def hswish(input):
    """x * relu6(x + 3) / 6 (nnacl HSwish, ONNX HardSwish)."""
    return _unary_float("HSWISH", input, lambda x: x * np.clip(x + 3, 0, 6) / 6)


@kernel("OH_NN_OPS_HARD_SIGMOID")
def hard_sigmoid(input):
    """relu6(x + 3) / 6 = max(0, min(1, x/6 + 1/2)) (nnacl HSigmoid; ONNX HardSigmoid alpha=1/6, beta=0.5)."""
    return _unary_float("HARD_SIGMOID", input, lambda x: np.clip(x + 3, 0, 6) / 6)


@kernel("OH_NN_OPS_SWISH")
def swish(input):
    """x * sigmoid(x) (nnacl Swish)."""
    return _unary_float("SWISH", input, lambda x: x * _sigmoid(x))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@kernel("OH_NN_OPS_GELU")
def gelu(input, *, approximate):
    """approximate=False: 0.5x(1 + erf(x/sqrt 2)); True: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))."""
    if approximate:
        fn = lambda x: 0.5 * x * (1 + np.tanh(x.dtype.type(_SQRT_2_OVER_PI) * (x + x.dtype.type(0.044715) * x * x * x)))
    else:
        fn = lambda x: (0.5 * x * (1 + _erf(x.astype(np.float64) / math.sqrt(2.0)))).astype(x.dtype)
    return _unary_float("GELU", input, fn)


@kernel("OH_NN_OPS_LEAKY_RELU")
def leaky_relu(input, *, negative_slope):
    return _unary_float("LEAKY_RELU", input, lambda x: np.where(x >= 0, x, x * x.dtype.type(negative_slope)))


@kernel("OH_NN_OPS_PRELU")
def prelu(input, weight):
    """f(x) = x for x >= 0, weight[c] * x for x < 0; the channel c is the last (NHWC) axis."""
    x, w = np.asarray(input), np.asarray(weight)
    _check("PRELU", x.dtype, _F)
    _check("PRELU", w.dtype, _F, what="weight")
    channels = x.shape[-1] if x.ndim >= 2 else None
    if w.size == 1:
        w = w.reshape(())
    elif channels is not None and w.ndim == 1 and w.shape[0] == channels:
        pass
    else:
        raise invalid(f"OH_NN_OPS_PRELU: weight shape {list(w.shape)} must have 1 element or be 1-D with the "
                      f"channel count (last input dim"
                      f"{' ' + str(channels) if channels is not None else '; input rank < 2 allows only 1'})")
    w = w.astype(x.dtype, copy=False)
    return _out(np.where(x >= 0, x, x * w), x.dtype)


@kernel("OH_NN_OPS_CLIP")
def clip(input, *, max, min):  # noqa: A002 - the op table's keywords
    """min(max_bound, max(input, min_bound)); min > max gives max everywhere (ONNX Clip)."""
    x = np.asarray(input)
    _check("CLIP", x.dtype, _FI)
    lo, hi = float(min), float(max)
    if _kind(x.dtype) == "float":
        lo_t, hi_t = x.dtype.type(lo), x.dtype.type(hi)
    else:
        info = np.iinfo(x.dtype)
        # the integers within [lo, hi] are exactly those within [ceil(lo), floor(hi)]
        lo_i = int(np.clip(math.ceil(lo) if math.isfinite(lo) else (info.min if lo < 0 else info.max), info.min, info.max))
        hi_i = int(np.clip(math.floor(hi) if math.isfinite(hi) else (info.max if hi > 0 else info.min), info.min, info.max))
        lo_t, hi_t = x.dtype.type(lo_i), x.dtype.type(hi_i)
    return _out(np.minimum(np.maximum(x, lo_t), hi_t), x.dtype)


# ---------------------------------------------------------------------------------------------------------------
# Comparisons (numbers and BOOL in, BOOL out)


def _compare(op: str, a, b, fn) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    _check(op, a.dtype, _ANY, what="input1")
    _check(op, b.dtype, _ANY, what="input2")
    _broadcast_shape(op, a, b)
    return _out(fn(a, b), np.bool_)


@kernel("OH_NN_OPS_EQUAL")
def equal(input1, input2):
    return _compare("EQUAL", input1, input2, np.equal)


@kernel("OH_NN_OPS_NOT_EQUAL")
def not_equal(input1, input2):
    return _compare("NOT_EQUAL", input1, input2, np.not_equal)


@kernel("OH_NN_OPS_LESS")
def less(input1, input2):
    return _compare("LESS", input1, input2, np.less)


@kernel("OH_NN_OPS_LESS_EQUAL")
def less_equal(input1, input2):
    return _compare("LESS_EQUAL", input1, input2, np.less_equal)


@kernel("OH_NN_OPS_GREATER")
def greater(input1, input2):
    return _compare("GREATER", input1, input2, np.greater)


@kernel("OH_NN_OPS_GREATER_EQUAL")
def greater_equal(input1, input2):
    return _compare("GREATER_EQUAL", input1, input2, np.greater_equal)


# ---------------------------------------------------------------------------------------------------------------
# Logic (BOOL, or numbers "converted to boolean implicitly": non-zero is true)


def _as_bool(op: str, x, what: str) -> np.ndarray:
    x = np.asarray(x)
    _check(op, x.dtype, _ANY, what=what)
    return x.astype(np.bool_, copy=False)


@kernel("OH_NN_OPS_LOGICAL_AND")
def logical_and(input1, input2):
    a, b = _as_bool("LOGICAL_AND", input1, "input1"), _as_bool("LOGICAL_AND", input2, "input2")
    _broadcast_shape("LOGICAL_AND", a, b)
    return _out(np.logical_and(a, b), np.bool_)


@kernel("OH_NN_OPS_LOGICAL_OR")
def logical_or(input1, input2):
    a, b = _as_bool("LOGICAL_OR", input1, "input1"), _as_bool("LOGICAL_OR", input2, "input2")
    _broadcast_shape("LOGICAL_OR", a, b)
    return _out(np.logical_or(a, b), np.bool_)


@kernel("OH_NN_OPS_LOGICAL_NOT")
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
    if rank1_rows and c.ndim == 1 and max(a.ndim, b.ndim) > 1:
        # "If condition is rank 1, input1 may have higher rank, but its first dimension must match the size of
        # condition": condition picks whole rows (TF Select semantics).
        rank = max(a.ndim, b.ndim)
        first = a.shape[0] if a.ndim == rank else b.shape[0]
        if c.shape[0] != first:
            raise invalid(f"OH_NN_OPS_{op}: rank-1 condition of length {c.shape[0]} must match the inputs' first "
                          f"dimension {first}")
        c = c.reshape(c.shape + (1,) * (rank - 1))
    _broadcast_shape(op, c, a, b)
    return _out(np.where(c, a.astype(dt, copy=False), b.astype(dt, copy=False)), dt)


@kernel("OH_NN_OPS_SELECT")
def select(condition, input1, input2):
    return _select("SELECT", condition, input1, input2, rank1_rows=True)


@kernel("OH_NN_OPS_WHERE")
def where(condition, input1, input2):
    return _select("WHERE", condition, input1, input2, rank1_rows=False)
