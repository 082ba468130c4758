"""ERF accelerated (the reference's float64 rational evaluation in one compiled loop: bit-identical), the kernel
of the fused exact GELU step (``fusions.erf_gelu``), and small steps of static shapes -- comparisons, integer
ADD/SUB/MUL, WHERE, GATHER -- as the reference's one numpy call without its checks per call (the index arithmetic
in front of an embedding took 40 us of a 16-token BERT's run): exact."""
from __future__ import annotations

import functools

import numpy as np

from ..kernels import specialiser
from ..kernels.elementwise import erf as reference_erf
from . import numba_loops
from .activation import activation_runner


def erf(general, x):
    """ERF of a float16/float32 array in the compiled loop; ``general`` (the reference kernel) otherwise."""
    x = np.asarray(x)
    fast = numba_loops.erf(x) if x.dtype in (np.float16, np.float32) else None
    return general(x) if fast is None else fast.astype(x.dtype, copy=False)


def erf_gelu(x, *, divisor, addend, factor):
    """``(x * (erf(x / divisor) + addend)) * factor`` on float32 with float32 scalars: the exported exact GELU (DIV,
    ERF, ADD, MUL, MUL) that ``fusions.erf_gelu`` makes one step. The compiled loop, or those steps' own operations
    in order (ERF by the reference kernel): bit-identical to the five steps either way."""
    fast = numba_loops.erf_gelu(x, divisor, addend, factor)
    if fast is not None:
        return fast
    return np.multiply(np.multiply(x, np.add(reference_erf(np.divide(x, divisor)), addend)), factor)


@specialiser("OH_NN_OPS_ERF")
def specialise_erf(op, general, inputs, arguments, addends):
    """:func:`erf` for float16/float32 data; None otherwise."""
    return functools.partial(erf, general) if inputs[0].dtype in (np.float16, np.float32) else None


__all__ = ["IN_PLACE", "erf", "erf_gelu"]


# -- ABS and NEG as in-place activations (``fusions.activations``) and as float32 steps of their own --------------

def _abs(x):
    return np.abs(x, out=x)


def _neg(x):
    return np.negative(x, out=x)


IN_PLACE = {"ABS": _abs, "NEG": _neg}


@specialiser(*(f"OH_NN_OPS_{name}" for name in IN_PLACE))
def specialise_sign_ops(op, general, inputs, arguments, addends):
    """A float32 ABS/NEG step: the bare ufunc (the reference's one call on float32)."""
    return activation_runner(op, inputs, arguments, IN_PLACE, {"ABS": np.abs, "NEG": np.negative})


# -- small steps of static shapes: the reference's one numpy call without its checks per call ------------------------

_COMPARISONS = {"EQUAL": np.equal, "NOT_EQUAL": np.not_equal, "LESS": np.less, "LESS_EQUAL": np.less_equal,
                "GREATER": np.greater, "GREATER_EQUAL": np.greater_equal}
_INTEGER_ARITHMETIC = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}


def _planned(inputs) -> bool:
    """Every input has a static shape and a dtype, and they broadcast."""
    if any(i.shape is None or i.dtype is None for i in inputs):
        return False
    try:
        np.broadcast_shapes(*(tuple(i.shape) for i in inputs))
    except ValueError:
        return False
    return True


def _bare(general, planned, fn, *arrays):
    """``fn(*arrays)`` where the arrays are as ``planned`` ((shape, dtype) each), ``general`` otherwise."""
    if len(arrays) != len(planned) or any(type(a) is not np.ndarray or a.shape != s or a.dtype != d
                                          for a, (s, d) in zip(arrays, planned)):
        return general(*arrays)
    return fn(*arrays)


def _signature(inputs):
    return tuple((tuple(i.shape), i.dtype) for i in inputs)


@specialiser(*(f"OH_NN_OPS_{name}" for name in _COMPARISONS))
def specialise_comparison(op, general, inputs, arguments, addends):
    """A comparison of two static inputs of one dtype: the reference's ufunc alone (its result is its output)."""
    if len(inputs) != 2 or not _planned(inputs) or inputs[0].dtype != inputs[1].dtype or arguments:
        return None
    return functools.partial(_bare, general, _signature(inputs), _COMPARISONS[op])


@specialiser(*(f"OH_NN_OPS_{name}" for name in _INTEGER_ARITHMETIC))
def specialise_integer_arithmetic(op, general, inputs, arguments, addends):
    """Integer ADD/SUB/MUL of two static inputs of one dtype: the reference's ufunc alone (wrapping as it does);
    None for floats (the plan calls their ufunc already) and everything else."""
    if (len(inputs) != 2 or not _planned(inputs) or inputs[0].dtype != inputs[1].dtype
            or inputs[0].dtype.kind not in "iu" or arguments):
        return None
    return functools.partial(_bare, general, _signature(inputs), _INTEGER_ARITHMETIC[op])


@specialiser("OH_NN_OPS_WHERE")
def specialise_where(op, general, inputs, arguments, addends):
    """WHERE of a static BOOL condition and two static inputs of one dtype: ``np.where`` alone."""
    if (len(inputs) != 3 or not _planned(inputs) or inputs[0].dtype != np.bool_
            or inputs[1].dtype != inputs[2].dtype or arguments):
        return None
    return functools.partial(_bare, general, _signature(inputs), np.where)


def _gathered(general, x_shape, idx_dtype, axis, x, indices, *rest):
    """GATHER of a static input along ``axis`` with indices of a planned dtype: the reference's range check and
    ``np.take``; ``general`` for anything else (and for an index out of range: its error)."""
    if (type(x) is not np.ndarray or x.shape != x_shape or type(indices) is not np.ndarray
            or indices.dtype != idx_dtype):  # (``rest``: the constant axis tensor, already read)
        return general(x, indices, *rest)
    if indices.size and (indices.min() < 0 or indices.max() >= x_shape[axis]):
        return general(x, indices, *rest)
    return np.take(x, indices, axis=axis)


@specialiser("OH_NN_OPS_GATHER")
def specialise_gather(op, general, inputs, arguments, addends):
    """GATHER of a static input with integer indices and a constant axis: :func:`_gathered`."""
    if len(inputs) != 3 or inputs[0].shape is None or not inputs[0].shape or inputs[1].dtype is None \
            or inputs[1].dtype.kind not in "iu" or inputs[2].value is None or inputs[2].value.size != 1:
        return None
    axis = int(np.asarray(inputs[2].value).reshape(-1)[0])
    rank = len(inputs[0].shape)
    if not -rank <= axis < rank:
        return None
    return functools.partial(_gathered, general, tuple(inputs[0].shape), inputs[1].dtype, axis % rank)
