"""Private helpers shared by the kernels of several families (a helper used by one family lives in its module).

Grouped by their users: the dtype kinds and checks, OH_NN dtype names, float16 work dtype and erf of the elementwise
and activation kernels (the float check and names also serve recurrent and detection); the axis and parameter helpers
of the linear, normalization and reduce kernels; the integer-tensor, axis and data-type-code helpers of the shape,
indexing and quantization kernels and CAST; the NHWC checks of the conv and pool kernels (whose float check also
serves resize, LRN and PAD); the shape arithmetic of the shape rules (unknown dims, broadcasting, the rule of the
ops whose output has their input's shape). The window geometry itself is in ``nnrt_onnx.geometry``.
"""
from __future__ import annotations

import functools
import math
import weakref
from typing import Any, Sequence

import numpy as np

from ..dtypes import from_numpy, to_numpy
from ..enums import OH_NN_DataType
from ..errors import invalid, unsupported
from ..geometry import UNKNOWN

# A shape as the shape rules see it: -1 for an unknown dim; None for an unknown rank.
Shape = tuple[int, ...]

# ---------------------------------------------------------------------------------------------------------------
# dtype kinds and names, float work dtype, erf (elementwise, activation; recurrent, detection)

# Kinds of dtypes an op accepts.
_F = frozenset({"float"})
_FI = frozenset({"float", "int", "uint"})
_FLOATS_16_32 = (np.dtype(np.float16), np.dtype(np.float32))


_KIND_NAMES = {"b": "bool", "f": "float", "i": "int", "u": "uint"}


def _kind(dtype: np.dtype) -> str:
    """"bool", "float", "int", "uint" or "other" (numpy's kind letter: np.issubdtype cost ~1 us a test)."""
    return _KIND_NAMES.get(np.dtype(dtype).kind, "other")


def _dtype_name(dtype: np.dtype) -> str:
    try:
        return from_numpy(dtype).name
    except ValueError:
        return str(dtype)


def _check(op: str, dtype: np.dtype, kinds: frozenset[str], what: str = "input") -> None:
    if _kind(np.dtype(dtype)) not in kinds:
        accepted = ", ".join(k for k in ("float", "int", "uint", "bool") if k in kinds)
        raise unsupported(f"OH_NN_OPS_{op}: {what} dtype {_dtype_name(dtype)} is not supported (accepts {accepted})")


def _out(value, dtype) -> np.ndarray:
    """Always an ndarray of exactly ``dtype`` (ufuncs on 0-d arrays return numpy scalars)."""
    return np.asarray(value).astype(dtype, copy=False)


def _work_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a float computation runs in: float16 is widened to float32."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _float_mean(a: np.ndarray, axes: tuple[int, ...], keepdims: bool = True) -> np.ndarray:
    """The mean over ``axes`` of a float array, always an ndarray of ``a``'s dtype. float32 is summed in float64 and
    the quotient rounded once, as onnxruntime's layer norm and ReduceMean accumulate: the mean of equal values is then
    that value exactly, so a constant row normalises to exactly 0 (a float32 sum of three equal values can round,
    and an ulp over sqrt(epsilon) is 2e-5 of output). Other dtypes: the sum in their own dtype divided by the count
    (a float division by a count exact in that dtype is np.mean's correctly rounded quotient, without np.mean's
    Python-level overhead)."""
    count = math.prod(a.shape[axis] for axis in axes)
    if a.dtype == np.float32:
        s = np.asarray(np.add.reduce(a, axis=axes, keepdims=keepdims, dtype=np.float64))
        return np.true_divide(s, count).astype(np.float32)
    s = np.asarray(np.add.reduce(a, axis=axes, keepdims=keepdims))
    exact = s.dtype.type(count)
    if exact == count:
        return np.true_divide(s, exact)
    return np.true_divide(s, np.intp(count), casting="unsafe").astype(s.dtype)


def _unary_float(op: str, x, fn) -> np.ndarray:
    """``fn`` on a float tensor: float16 is evaluated in float32 (the work dtype), then rounded back once."""
    x = np.asarray(x)
    _check(op, x.dtype, _F)
    with np.errstate(all="ignore"):
        y = fn(x.astype(_work_dtype(x.dtype), copy=False))
    return _out(y, x.dtype)


def _need_float(op: str, what: str, array: np.ndarray) -> None:
    if array.dtype not in _FLOATS_16_32:
        raise unsupported(f"{op}: {what} dtype {_dtype_name(array.dtype)} is not supported "
                          f"(FLOAT32 or FLOAT16; quantized tensors are dequantized by the executor)")


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


# erf(x) ~ x * P(x^2) / Q(x^2) on [-4, 4] (beyond, erf rounds to +-1 in float32): a rational least-squares fit,
# reweighted towards minimax, of math.erf on [0, 4]; relative error < 2.1e-9, so the float64 evaluation rounded to
# float32 is within 0.54 ulp of the exact value (docs/performance.md; tests/kernels/test_elementwise.py checks it
# against math.erf on a dense grid).
_ERF_P = (1.1283791693758818, 0.18520288602183224, 0.054316794428063996, 0.003849587632241287,
          0.00037960539511302865, 4.684696895469496e-06, -1.3201803352556525e-08)
_ERF_Q = (1.0, 0.497465198043966, 0.11395821335420948, 0.015462030701651683, 0.001307560208600933,
          6.310979677108343e-05)
_ERF_BLOCK = 8192  # elements per pass: the float64 work arrays stay in L1/L2


def _erf_float32(x: np.ndarray) -> np.ndarray:
    """erf for float32 results (float16/float32 input): the rational approximation above, evaluated in float64
    block by block and rounded once to float32 (max error 0.54 ulp; NaN stays NaN, +-inf gives +-1, -0.0 gives
    -0.0)."""
    x = np.asarray(x)
    flat = x.reshape(-1)
    out = np.empty(flat.shape, np.float32)
    size = min(flat.size, _ERF_BLOCK)
    v, t, p, q = (np.empty(size) for _ in range(4))
    for start in range(0, flat.size, _ERF_BLOCK):
        stop = min(flat.size, start + _ERF_BLOCK)
        n = stop - start
        xv, tv, pv, qv = v[:n], t[:n], p[:n], q[:n]
        np.clip(flat[start:stop], -4.0, 4.0, out=xv)
        np.multiply(xv, xv, out=tv)
        np.multiply(tv, _ERF_P[-1], out=pv)
        for a in _ERF_P[-2:0:-1]:
            pv += a
            pv *= tv
        pv += _ERF_P[0]
        np.multiply(tv, _ERF_Q[-1], out=qv)
        for a in _ERF_Q[-2:0:-1]:
            qv += a
            qv *= tv
        qv += 1.0
        pv *= xv
        np.divide(pv, qv, out=out[start:stop], casting="same_kind")
    return out.reshape(x.shape)


# ----------------------------------------------------------------------------------------------------------------
# pre-packed weights (conv, linear, recurrent)

_PACKS: dict[int, tuple[Any, dict]] = {}  # id of a constant -> (weak reference to it, its packs by key)


def _register_constant(array: np.ndarray) -> None:
    """Mark ``array`` as a constant that never changes (a compiled model's weight; the engine makes it read-only),
    so kernels may cache re-laid-out copies of it (:func:`_packed`) while it lives."""
    if array.flags.writeable:
        raise ValueError("only a read-only array can be registered as a constant")
    key = id(array)
    entry = _PACKS.get(key)
    if entry is not None and entry[0]() is array:
        return
    _PACKS[key] = (weakref.ref(array, lambda _, key=key: _PACKS.pop(key, None)), {})


def _packed(array: np.ndarray, key: Any, make) -> np.ndarray:
    """``make(array)`` (a re-laid-out weight: transposed, contiguous, cast), made once per registered constant
    ``array`` and ``key`` and cached while it lives (:func:`_register_constant`); computed afresh for any other
    array."""
    entry = _PACKS.get(id(array))
    if entry is None or entry[0]() is not array:
        return make(array)
    packs = entry[1]
    if key not in packs:
        packs[key] = make(array)
    return packs[key]


def _remembered(fn):
    """``fn`` -- a kernel's checks: a pure function of shapes, dtypes and parameters, returning what it derived or
    raising the kernel's error -- with its results remembered per arguments (``functools.lru_cache``; errors are
    not remembered), for the runs of a compiled model, which repeat the same arguments. Arguments that cannot be
    hashed (a parameter given as a list by a direct caller) skip the cache."""
    cached = functools.lru_cache(maxsize=256)(fn)

    @functools.wraps(fn)
    def checked(*args):
        try:
            hash(args)
        except TypeError:
            return fn(*args)
        return cached(*args)
    return checked


def _packed_constant(array: np.ndarray, key: Any, make) -> np.ndarray:
    """:func:`_packed`, the cached result itself read-only and registered as a constant (a form computed from a
    weight -- an LSTM's two biases summed -- that a kernel packs further with :func:`_packed`)."""
    entry = _PACKS.get(id(array))
    if entry is None or entry[0]() is not array:
        return make(array)
    packs = entry[1]
    if key not in packs:
        made = make(array)
        made.flags.writeable = False
        _register_constant(made)
        packs[key] = made
    return packs[key]


# ----------------------------------------------------------------------------------------------------------------
# axes and parameters (linear, normalization, reduce)

_FLOAT_KINDS = "f"
_INT_KINDS = "iu"


def _axis_index(op: str, axis: Any, rank: int, what: str = "axis", allow_end: bool = False) -> int:
    try:
        a = int(axis)
    except (TypeError, ValueError):
        raise invalid(f"{op}: {what} {axis!r} is not an integer") from None
    hi = rank + 1 if allow_end else rank
    if not -rank <= a < hi:
        raise invalid(f"{op}: {what} {a} is out of range [{-rank}, {hi}) for an input of rank {rank}")
    return a + rank if a < 0 else a


def _scalar(value: Any) -> Any:
    """A parameter declared scalar may still reach a direct caller as a one-element list/array."""
    if isinstance(value, (list, tuple, np.ndarray)):
        flat = np.asarray(value).reshape(-1)
        return None if flat.size == 0 else flat[0].item()
    return value


def _axes_list(op: str, axes: Sequence[int], rank: int) -> list[int]:
    out: list[int] = []
    for a in axes:
        n = _axis_index(op, a, rank)
        if n in out:
            raise invalid(f"{op}: axis {a} is given twice in {list(axes)}")
        out.append(n)
    return out


# ----------------------------------------------------------------------------------------------------------------
# integer tensors, axes, data type codes (shape, indexing, quantization, CAST)

# MindIR TypeId codes (the HDI's data type numbering) accepted as aliases of OH_NN_DataType codes wherever a
# parameter carries a data type code the runtime forwards to the HDI untranslated (ConstantOfShape, QuantDTypeCast).
_MINDIR_TYPES = {30: np.bool_, 32: np.int8, 33: np.int16, 34: np.int32, 35: np.int64, 37: np.uint8, 38: np.uint16,
                 39: np.uint32, 40: np.uint64, 42: np.float16, 43: np.float32, 44: np.float64}


def _np_dtype_name(dtype) -> str:
    return np.dtype(dtype).name


def _int_values(arr: Any, op: str, what: str) -> list[int]:
    """The elements of an integer shape/axis/index tensor as python ints (any integer dtype)."""
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise unsupported(f"{op}: {what} must be an integer tensor, got {_np_dtype_name(arr.dtype)}")
    return [int(v) for v in arr.reshape(-1).tolist()]


def _one_int(arr: Any, op: str, what: str) -> int:
    values = _int_values(arr, op, what)
    if len(values) != 1:
        raise invalid(f"{op}: {what} must hold exactly one value, got {len(values)}")
    return values[0]


def _norm_axis(axis: int, rank: int, op: str, what: str = "axis") -> int:
    """axis in [-rank, rank) -> [0, rank)."""
    if not -rank <= axis < rank:
        raise invalid(f"{op}: {what} {axis} is out of range [{-rank}, {rank}) for a rank-{rank} input")
    return axis + rank if axis < 0 else axis


def _check_dims(dims: Sequence[int], op: str, what: str) -> tuple[int, ...]:
    for d in dims:
        if d < 0:
            raise invalid(f"{op}: {what} {list(dims)} has a negative dimension")
    return tuple(dims)


def _declared(ctx, index: int = 0) -> np.dtype | None:
    if ctx is None or index >= len(ctx.output_dtypes) or ctx.output_dtypes[index] is None:
        return None
    return np.dtype(ctx.output_dtypes[index])


def _output_quantized(ctx, index: int = 0) -> bool:
    return ctx is not None and index < len(ctx.output_quant) and ctx.output_quant[index] is not None


def _type_code(code: int, op: str, what: str, mindir: bool = False) -> np.dtype | None:
    """OH_NN_DataType code (or, with ``mindir``, an HDI/MindIR TypeId) -> numpy dtype; None for OH_NN_UNKNOWN."""
    if code == OH_NN_DataType.OH_NN_UNKNOWN:
        return None
    if 0 < code <= OH_NN_DataType.OH_NN_FLOAT64:
        return to_numpy(code)
    if mindir and code in _MINDIR_TYPES:
        return np.dtype(_MINDIR_TYPES[code])
    accepted = "an OH_NN_DataType (1..12)" + (" or a MindIR TypeId (30..44)" if mindir else "")
    raise invalid(f"{op}: {what} {code} is not {accepted}")


def _agree(op: str, what: str, wanted: np.dtype | None, declared: np.dtype | None) -> np.dtype:
    """Reconcile a requested output type with the declared one (float16 under EnableFloat16 replaces float32)."""
    if wanted is None and declared is None:
        return np.dtype(np.float32)
    if wanted is None or declared is None:
        return wanted if declared is None else declared
    if wanted == declared or (declared == np.float16 and wanted.kind == "f"):
        return declared
    raise invalid(f"{op}: {what} {_np_dtype_name(wanted)} disagrees with the declared output type {_np_dtype_name(declared)}")


# ----------------------------------------------------------------------------------------------------------------
# NHWC checks (conv, pool; the float check also for resize, LRN, PAD)

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _compute_dtype(op: str, *arrays: np.ndarray) -> np.dtype:
    """float32 for float16/float32 data, float64 for float64; anything else is unsupported."""
    for a in arrays:
        if a.dtype not in _FLOATS:
            raise unsupported(f"{op}: data type {a.dtype} is not supported (float16/float32/float64, or quantized "
                              f"int8/uint8 with quant params)")
    return np.dtype(np.float64) if any(a.dtype == np.float64 for a in arrays) else np.dtype(np.float32)


def _check_rank(op: str, x: np.ndarray, rank: int = 4, what: str = "input") -> None:
    _check_rank_dims(op, x.shape, rank, what)


def _check_rank_dims(op: str, shape: Shape | None, rank: int = 4, what: str = "input") -> Shape:
    """``shape`` checked to be of ``rank`` (NHWC); an unknown rank (None) is taken to be it, with unknown dims."""
    if shape is None:
        return (UNKNOWN,) * rank
    if len(shape) != rank:
        raise invalid(f"{op}: {what} must be a {rank}-D NHWC tensor, got shape {list(shape)}")
    return tuple(shape)


def _tap_range(out_size: int, size: int, stride: int, offset: int) -> tuple[int, int, int]:
    """Output positions [r0, r1) whose kernel tap at input position r * stride + offset lies inside [0, size),
    and the input position of r0 (the other taps read padding)."""
    r0 = max(0, -(offset // stride))
    r1 = min(out_size, (size - 1 - offset) // stride + 1) if size - 1 - offset >= 0 else 0
    return r0, max(r0, r1), r0 * stride + offset


# ----------------------------------------------------------------------------------------------------------------
# shape arithmetic (the shape rules of every family, and the kernels that compute output sizes themselves)


def _known(*dims: int) -> bool:
    """Every dim is known (>= 0)."""
    return all(d >= 0 for d in dims)


def _product(dims: Sequence[int]) -> int:
    """The element count of ``dims``, or UNKNOWN if a dim is (0 wins: an empty tensor is empty)."""
    if 0 in dims:
        return 0
    return math.prod(dims) if _known(*dims) else UNKNOWN


def _broadcast_dims(*shapes: Shape | None) -> Shape | None:
    """NumPy broadcasting of shapes with unknown dims: a column takes its one known dim other than 1 (two
    different ones raise ValueError), else -1 if a dim is unknown, else 1. None if a rank is unknown. Equal to
    ``np.broadcast_shapes`` for known shapes."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        column = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        sizes = {d for d in column if d >= 0 and d != 1}
        if len(sizes) > 1:
            raise ValueError(f"dims {sorted(sizes)} do not broadcast")
        out.append(sizes.pop() if sizes else UNKNOWN if any(d < 0 for d in column) else 1)
    return tuple(out)


def _merge_dims(shapes: Sequence[Shape]) -> Shape:
    """Shapes that must be equal (of equal rank), merged: a known dim wins over an unknown one; two different
    known dims raise ValueError."""
    out = list(shapes[0])
    for shape in shapes[1:]:
        for i, d in enumerate(shape):
            if d >= 0 and out[i] >= 0 and d != out[i]:
                raise ValueError(f"dims {out[i]} and {d} differ")
            if out[i] < 0:
                out[i] = d
    return tuple(out)


def _value_ints(value: Any) -> list[int] | None:
    """The elements of a known (constant) integer input as python ints; None when the value is not known."""
    if value is None:
        return None
    return [int(v) for v in np.asarray(value).reshape(-1).tolist()]


def _length(shape: Shape | None) -> int:
    """The element count of a 1-D (or scalar) shape/axes input, UNKNOWN if its shape is."""
    return UNKNOWN if shape is None else _product(shape)


def _first_input_shape(op, shapes, values, **_) -> tuple[Shape | None]:
    """The shape rule of the ops whose only output has the shape of their first input (element-wise unary ops,
    activations, casts, normalizations)."""
    return (shapes[0],)
