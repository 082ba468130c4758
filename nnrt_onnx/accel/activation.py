"""Elementwise activations on float32 without the reference kernels' per-call overhead, and written in place: the
reference kernel's float operations in its order, so bit-identical (``accel.contract``: EXACT).

* :data:`IN_PLACE` -- per activation op (and ``accel.elementwise.IN_PLACE``: ABS, NEG), ``fn(x, **params)`` writing the activation of ``x`` (a float32 array the caller owns)
  into ``x`` itself: what the activation fusion (``fusions.activations``) applies to the output of the step before.
* specialisers for those ops as steps of their own: a float32 step runs ``fn(x.copy())`` or the bare ufunc (no dtype
  checks, no errstate per call: the plan checked the dtype, the engine sets errstate once per run)."""
from __future__ import annotations

import functools

import numpy as np

from ..kernels import specialiser

FLOAT32 = np.dtype(np.float32)
_ZERO, _SIX = np.float32(0), np.float32(6)


def _relu(x):
    return np.maximum(x, _ZERO, out=x)


def _relu6(x):
    np.maximum(x, _ZERO, out=x)
    return np.minimum(x, _SIX, out=x)


def _sigmoid(x):
    """The reference's ``where(x >= 0, 1 / (1 + e), e / (1 + e))`` with ``e = exp(-|x|)`` (a select, not a masked
    ufunc: ``where=`` with a random mask runs element by element, 30x slower)."""
    positive = np.greater_equal(x, 0)
    e = np.exp(np.negative(np.abs(x, out=x), out=x), out=x)
    d = np.add(1, e)
    np.divide(e, d, out=x)
    return np.where(positive, np.divide(1, d, out=d), x)


def _tanh(x):
    return np.tanh(x, out=x)


def _leaky_relu(x, *, negative_slope):
    """``where(x >= 0, x, x * slope)``. For 0 <= slope <= 1 that is ``max(x, x * slope)`` for every x (x * slope is
    at most x for x >= 0 and at least x below, rounding included; NaN, infinities and signed zeros come out as the
    select's), for slope > 1 ``min``: two plain passes instead of a masked ufunc, which runs element by element on a
    random mask (1.4 ms on a 128x128x16 output against 0.1 ms)."""
    slope = np.float32(negative_slope)
    scaled = np.multiply(x, slope)
    if 0 <= slope <= 1:
        return np.maximum(x, scaled, out=x)
    if slope > 1:
        return np.minimum(x, scaled, out=x)
    return np.where(np.greater_equal(x, 0), x, scaled)  # (a negative or NaN slope: the select itself)


def _hswish(x):
    """``x * (clip(x + 3, 0, 6) / 6)``."""
    t = np.add(x, 3)
    np.clip(t, 0, 6, out=t)
    np.divide(t, 6, out=t)
    return np.multiply(x, t, out=x)


def _hard_sigmoid(x):
    """``clip(x + 3, 0, 6) / 6``."""
    np.add(x, 3, out=x)
    np.clip(x, 0, 6, out=x)
    return np.divide(x, 6, out=x)


def _swish(x):
    """``x * sigmoid(x)``."""
    return np.multiply(x, _sigmoid(x.copy()), out=x)


def _clip(x, *, max, min):  # noqa: A002 - the op table's keywords
    np.maximum(x, np.float32(float(min)), out=x)
    return np.minimum(x, np.float32(float(max)), out=x)


# op short name -> in-place activation of a float32 array (keywords: the op's kernel keywords)
IN_PLACE = {"RELU": _relu, "RELU6": _relu6, "SIGMOID": _sigmoid, "TANH": _tanh, "LEAKY_RELU": _leaky_relu,
            "HSWISH": _hswish, "HARD_SIGMOID": _hard_sigmoid, "SWISH": _swish, "CLIP": _clip}
# the ops whose reference kernel on float32 is exactly this ufunc of their one input
_UFUNCS = {"TANH": np.tanh}


def in_place(op: str, arguments: dict, table=None):
    """The in-place activation of ``op`` (in ``table``, default :data:`IN_PLACE`) with its keywords bound
    (``fn(x) -> x``), or None."""
    fn = (IN_PLACE if table is None else table).get(op)
    if fn is None:
        return None
    return functools.partial(fn, **arguments) if arguments else fn


def _copied(fn, x):
    copy = np.array(x, copy=True)
    if copy.ndim == 0:  # (a ufunc of 0-d arrays gives numpy scalars, which out= cannot take: a 1-element view)
        return np.asarray(fn(copy.reshape(1))).reshape(())
    return fn(copy)


def activation_runner(op, inputs, arguments, table, ufuncs):
    """A float32 step of the in-place activation ``op`` of ``table``: its bare ufunc (``ufuncs``), or the in-place
    activation of a copy; None otherwise."""
    if len(inputs) != 1 or inputs[0].dtype != FLOAT32 or "activation" in arguments:
        return None
    if op in ufuncs and not arguments:
        return ufuncs[op]
    return functools.partial(_copied, in_place(op, arguments, table))


@specialiser(*(f"OH_NN_OPS_{name}" for name in IN_PLACE))
def specialise_activation(op, general, inputs, arguments, addends):
    """A float32 activation step (:func:`activation_runner`)."""
    return activation_runner(op, inputs, arguments, IN_PLACE, _UFUNCS)


__all__ = ["IN_PLACE", "activation_runner", "in_place"]
