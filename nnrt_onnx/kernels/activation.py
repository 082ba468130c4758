"""Activation kernels: RELU, RELU6, SIGMOID, TANH, HSWISH, HARD_SIGMOID, SWISH, GELU, LEAKY_RELU, PRELU, CLIP.

They follow the element-wise conventions (elementwise.py): float16 in, float16 out, with transcendental functions
evaluated in float32 and rounded back once; float-only activations on an integer or BOOL tensor raise
``OH_NN_UNSUPPORTED``. A fused activation (``activation_type`` of another op) is applied by the executor, not here.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import invalid
from . import kernel, shape_rule
from ._common import _F, _FI, _check, _erf, _first_input_shape, _kind, _known, _out, _product, _unary_float


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + e)`` where x >= 0, else ``e / (1 + e)``, with ``e = exp(-|x|)`` (no overflow): the numerator
    selected, then one division (seven numpy calls on one work array; at small sizes the calls are the cost)."""
    e = np.abs(x, out=np.empty_like(x))  # (out=: an array also for a 0-d x)
    np.exp(np.negative(e, out=e), out=e)
    numerator = np.where(np.greater_equal(x, 0), 1, e)
    return np.divide(numerator, np.add(1, e, out=e), out=numerator)


@kernel("OH_NN_OPS_RELU", shape=_first_input_shape)
def relu(input):
    x = np.asarray(input)
    _check("RELU", x.dtype, _FI)
    return _out(np.maximum(x, x.dtype.type(0)), x.dtype)


@kernel("OH_NN_OPS_RELU6", shape=_first_input_shape)
def relu6(input):
    x = np.asarray(input)
    _check("RELU6", x.dtype, _FI)
    return _out(np.minimum(np.maximum(x, x.dtype.type(0)), x.dtype.type(6)), x.dtype)


@kernel("OH_NN_OPS_SIGMOID", shape=_first_input_shape)
def sigmoid(input):
    return _unary_float("SIGMOID", input, _sigmoid)


@kernel("OH_NN_OPS_TANH", shape=_first_input_shape)
def tanh(input):
    return _unary_float("TANH", input, np.tanh)


@kernel("OH_NN_OPS_HSWISH", shape=_first_input_shape)
def hswish(input):
    """x * relu6(x + 3) / 6 (nnacl HSwish, ONNX HardSwish), as x * (relu6(x + 3) / 6): exactly x for x >= 3, as
    onnxruntime's x * HardSigmoid(x) (x * 6 / 6 is not always x in floating point)."""
    return _unary_float("HSWISH", input, lambda x: x * (np.clip(x + 3, 0, 6) / 6))


@kernel("OH_NN_OPS_HARD_SIGMOID", shape=_first_input_shape)
def hard_sigmoid(input):
    """relu6(x + 3) / 6 = max(0, min(1, x/6 + 1/2)) (nnacl HSigmoid; ONNX HardSigmoid alpha=1/6, beta=0.5)."""
    return _unary_float("HARD_SIGMOID", input, lambda x: np.clip(x + 3, 0, 6) / 6)


@kernel("OH_NN_OPS_SWISH", shape=_first_input_shape)
def swish(input):
    """x * sigmoid(x) (nnacl Swish)."""
    return _unary_float("SWISH", input, lambda x: x * _sigmoid(x))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@kernel("OH_NN_OPS_GELU", shape=_first_input_shape)
def gelu(input, *, approximate):
    """approximate=False: 0.5x(1 + erf(x/sqrt 2)); True: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))."""
    if approximate:
        fn = lambda x: 0.5 * x * (1 + np.tanh(x.dtype.type(_SQRT_2_OVER_PI) * (x + x.dtype.type(0.044715) * x * x * x)))
    else:
        fn = lambda x: (0.5 * x * (1 + _erf(x.astype(np.float64) / math.sqrt(2.0)))).astype(x.dtype)
    return _unary_float("GELU", input, fn)


@kernel("OH_NN_OPS_LEAKY_RELU", shape=_first_input_shape)
def leaky_relu(input, *, negative_slope):
    return _unary_float("LEAKY_RELU", input, lambda x: np.where(x >= 0, x, x * x.dtype.type(negative_slope)))


@kernel("OH_NN_OPS_PRELU")
def prelu(input, weight):
    """f(x) = x for x >= 0, weight[c] * x for x < 0; the channel c is the last (NHWC) axis."""
    x, w = np.asarray(input), np.asarray(weight)
    _check("PRELU", x.dtype, _F)
    _check("PRELU", w.dtype, _F, what="weight")
    _check_prelu_weight(x.shape, w.shape)
    if w.size == 1:
        w = w.reshape(())
    w = w.astype(x.dtype, copy=False)
    return _out(np.where(x >= 0, x, x * w), x.dtype)


def _check_prelu_weight(x_shape, w_shape) -> None:
    """One slope, or one per channel (the last input dim, rank >= 2); unknown dims and ranks pass."""
    if x_shape is None or w_shape is None or _product(w_shape) == 1:
        return
    channels = x_shape[-1] if len(x_shape) >= 2 else None
    if channels is not None and len(w_shape) == 1 and (not _known(channels, w_shape[0]) or w_shape[0] == channels):
        return
    if not _known(*w_shape):  # the weight may still hold one element
        return
    raise invalid(f"OH_NN_OPS_PRELU: weight shape {list(w_shape)} must have 1 element or be 1-D with the "
                  f"channel count (last input dim"
                  f"{' ' + str(channels) if channels is not None else '; input rank < 2 allows only 1'})")


@shape_rule("OH_NN_OPS_PRELU")
def _prelu_shape(op, shapes, values, **_):
    _check_prelu_weight(shapes[0], shapes[1])
    return (shapes[0],)


@kernel("OH_NN_OPS_CLIP", shape=_first_input_shape)
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
