"""Normalization kernels: SOFTMAX, LOG_SOFTMAX, BATCH_NORM, LAYER_NORM, INSTANCE_NORM, L2_NORMALIZE and LRN.

Conventions (shared with the linear and reduce kernels):
* float16 inputs are accumulated in float32 and the result is returned as float16; float32 stays float32 and
  float64 stays float64 (never a silent float64 result).
* Axis values are normalised against the input rank; out-of-range or duplicated axes raise INVALID_PARAMETER.
* Semantics that the header leaves open follow MindSpore Lite, the engine behind the real NNRt HDI
  primitives (``L2NormalizeFusion``, ``LayerNormFusion`` ...); every place where we deliberately differ from it is
  stated in a docstring. LRN follows TF/NNAPI across the last (channel) axis of an NHWC tensor.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import invalid, unsupported
from . import kernel, shape_rule
from ._common import (
    _FLOAT_KINDS,
    _axes_list,
    _axis_index,
    _compute_dtype,
    _float_mean,
    _known,
    _packed,
    _product,
    _remembered,
    _scalar,
    _work_dtype,
)


def _require_float(op: str, x: np.ndarray, what: str = "input") -> None:
    if x.dtype.kind not in _FLOAT_KINDS:
        raise unsupported(f"{op}: {what} dtype {x.dtype} is not supported (float16, float32 or float64 only)")


# ----------------------------------------------------------------------------------------------------------------
# softmax family
# ----------------------------------------------------------------------------------------------------------------

def _softmax_axis(op: str, axis: Any, rank: int) -> int:
    if rank == 0:
        raise invalid(f"{op}: input must have rank >= 1")
    a = _scalar(axis)
    if a is None:  # the builder's "omitted" value is an empty list: the last axis (ONNX/NNAPI/TFLite default)
        a = -1
    return _axis_index(op, a, rank)


@shape_rule("OH_NN_OPS_SOFTMAX", "OH_NN_OPS_LOG_SOFTMAX")
def _softmax_shape(op, shapes, values, *, axis, **_):
    """The input's shape, after the kernel's axis check."""
    if shapes[0] is not None:
        _softmax_axis(op, axis, len(shapes[0]))
    return (shapes[0],)


@kernel("OH_NN_OPS_SOFTMAX")
def softmax(input: np.ndarray, *, axis: int) -> np.ndarray:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (in ``[-n, n)``)."""
    op = "SOFTMAX"
    x = np.asarray(input)
    _require_float(op, x)
    ax = _softmax_axis(op, axis, x.ndim)
    xw = x.astype(_work_dtype(x.dtype), copy=False)
    # one work buffer, updated in place: subtract the max, exp, divide by the sum (no further temporaries; the
    # reductions as the ufuncs' own: np.max and np.sum are these, behind ~1.5 us of Python each)
    e = np.subtract(xw, np.maximum.reduce(xw, axis=ax, keepdims=True), out=xw if xw is not x else None)
    np.exp(e, out=e)
    np.divide(e, np.add.reduce(e, axis=ax, keepdims=True), out=e)
    return e.astype(x.dtype, copy=False)


@kernel("OH_NN_OPS_LOG_SOFTMAX")
def log_softmax(input: np.ndarray, *, axis: int) -> np.ndarray:
    """``x - max - log(sum(exp(x - max)))`` along ``axis`` (-1 = last)."""
    op = "LOG_SOFTMAX"
    x = np.asarray(input)
    _require_float(op, x)
    ax = _softmax_axis(op, axis, x.ndim)
    xw = x.astype(_work_dtype(x.dtype), copy=False)
    shifted = np.subtract(xw, np.max(xw, axis=ax, keepdims=True), out=xw if xw is not x else None)
    lse = np.sum(np.exp(shifted), axis=ax, keepdims=True)
    np.log(lse, out=lse)
    np.subtract(shifted, lse, out=shifted)
    return shifted.astype(x.dtype, copy=False)


# ----------------------------------------------------------------------------------------------------------------
# normalisations
# ----------------------------------------------------------------------------------------------------------------

def _per_channel(op: str, name: str, t: np.ndarray, c: int, work: np.dtype) -> np.ndarray:
    t = np.asarray(t)
    if t.dtype.kind not in _FLOAT_KINDS:
        raise unsupported(f"{op}: {name} dtype {t.dtype} is not supported (float only)")
    _check_channel_count(op, name, t.shape, c)
    return t.reshape(c).astype(work)


def _check_channel_count(op: str, name: str, t_shape, c: int) -> None:
    """A per-channel operand holds ``c`` values (unknown sizes pass)."""
    size = -1 if t_shape is None else _product(t_shape)
    if _known(size, c) and size != c:
        raise invalid(f"{op}: {name} has shape {list(t_shape)}, expected [{c}] (one value per channel)")


def _channel_norm_shape(op: str, shapes, names: Sequence[str], min_rank: int):
    """The rule of the per-channel (last axis) normalizations: the input's shape, after the kernel's checks of
    rank and per-channel operand sizes."""
    x_shape = shapes[0]
    if x_shape is not None:
        _check_min_rank(op, x_shape, min_rank)
        for name, t_shape in zip(names, shapes[1:]):
            _check_channel_count(op, name, t_shape, x_shape[-1])
    return (x_shape,)


def _check_min_rank(op: str, x_shape, min_rank: int) -> None:
    if len(x_shape) >= min_rank:
        return
    if min_rank == 3:
        raise invalid(f"{op}: input must be [N, spatial..., C] with rank >= 3, got shape {list(x_shape)}")
    raise invalid(f"{op}: input must have rank >= 1 ([N, ..., C])")


@shape_rule("OH_NN_OPS_BATCH_NORM")
def _batch_norm_shape(op, shapes, values, **_):
    return _channel_norm_shape(op, shapes, ("scale", "offset", "mean", "variance"), 1)


@shape_rule("OH_NN_OPS_INSTANCE_NORM")
def _instance_norm_shape(op, shapes, values, **_):
    return _channel_norm_shape(op, shapes, ("scale", "bias"), 3)


def batch_norm_affine(op, scale, offset, mean, variance, c: int, work: np.dtype, epsilon):
    """(inv, shift) of a batch norm, checked: x * inv + shift. Made once for a compiled model's constants (the
    same arrays in every run: ~10-25 us of small numpy operations a call, 1-2% of DenseNet)."""
    others = (offset, mean, variance)

    def make(_scale):
        s, o, m, v = (_per_channel(op, n, t, c, work) for n, t in
                      (("scale", scale), ("offset", offset), ("mean", mean), ("variance", variance)))
        inv = s / np.sqrt(v + work.type(epsilon))
        return inv, o - m * inv, others

    made = _packed(scale, ("batch_norm", c, work.str, float(epsilon)) + tuple(id(a) for a in others), make)
    if any(a is not b for a, b in zip(made[2], others)):  # (another array where an earlier one lived)
        made = make(scale)
    return made[0], made[1]


@kernel("OH_NN_OPS_BATCH_NORM")
def batch_norm(input: np.ndarray, scale: np.ndarray, offset: np.ndarray, mean: np.ndarray, variance: np.ndarray, *,
               epsilon: float, out=None) -> np.ndarray:
    """Inference batch norm, channel last: ``(x - mean) / sqrt(variance + epsilon) * scale + offset``, computed as
    ``x * inv + (offset - mean * inv)``. ``out``: the plan's array for the result (memory planning), filled where
    it fits."""
    op = "BATCH_NORM"
    x = np.asarray(input)
    _require_float(op, x)
    _check_min_rank(op, x.shape, 1)
    work = _work_dtype(x.dtype)
    inv, shift = batch_norm_affine(op, scale, offset, mean, variance, x.shape[-1], work, epsilon)
    result = x.astype(work, copy=False) * inv
    result += shift
    result = result.astype(x.dtype, copy=False)
    if out is not None and out.shape == result.shape and out.dtype == result.dtype:
        np.copyto(out, result)
        return out
    return result


@kernel("OH_NN_OPS_LAYER_NORM")
def layer_norm(input: np.ndarray, gamma: np.ndarray, beta: np.ndarray, *, begin_norm_axis: int, epsilon: float,
               begin_param_axis: int) -> np.ndarray:
    """Normalise over axes ``begin_norm_axis..`` (in ``[1, rank)``), then ``* gamma + beta``.

    gamma/beta have shape ``input.shape[begin_param_axis:]`` and broadcast over the leading axes
    (MindSpore LayerNormFusion). The builder only accepts gamma/beta shaped ``input.shape[begin_norm_axis:]``,
    so the two axes must in practice agree (or select equal shapes).
    """
    op = "LAYER_NORM"
    x = np.asarray(input)
    _require_float(op, x)
    g, b = np.asarray(gamma), np.asarray(beta)
    axes = _layer_norm_checked(x.shape, g.shape, g.dtype, b.shape, b.dtype, _scalar(begin_norm_axis),
                               _scalar(begin_param_axis))
    work = _work_dtype(x.dtype)
    xw = x.astype(work, copy=False)
    # two work buffers (centred values, squares), then scale and shift in place: no further temporaries
    centred = np.subtract(xw, _float_mean(xw, axes), out=xw if xw is not x else None)
    var = _float_mean(np.square(centred), axes)
    np.add(var, work.type(epsilon), out=var)
    np.sqrt(var, out=var)
    np.divide(centred, var, out=centred)
    np.multiply(centred, g.astype(work, copy=False), out=centred)
    np.add(centred, b.astype(work, copy=False), out=centred)
    return centred.astype(x.dtype, copy=False)


@_remembered
def _layer_norm_checked(x_shape, g_shape, g_dtype, b_shape, b_dtype, begin_norm_axis, begin_param_axis):
    """The layer norm's checks of its parameters and of gamma/beta, remembered (a pure function of the shapes,
    dtypes and parameters; they were ~8 us of a small layer norm's ~18); returns the normalised axes."""
    op = "LAYER_NORM"
    rank = len(x_shape)
    bna, bpa = _layer_norm_axes(op, rank, begin_norm_axis, begin_param_axis)
    for name, shape, dtype in (("gamma", g_shape, g_dtype), ("beta", b_shape, b_dtype)):
        if dtype.kind not in _FLOAT_KINDS:
            raise unsupported(f"{op}: {name} dtype {dtype} is not supported (float only)")
        _check_layer_norm_param(op, name, shape, x_shape, bna, bpa)
    return tuple(range(bna, rank))


def _layer_norm_axes(op: str, rank: int, begin_norm_axis, begin_param_axis) -> tuple[int, int]:
    """begin_norm_axis (in [1, rank)) and begin_param_axis (normalised)."""
    bna = int(_scalar(begin_norm_axis))
    if not 1 <= bna < rank:
        raise invalid(f"{op}: begin_norm_axis {bna} is out of range [1, {rank}) for an input of rank {rank}")
    return bna, _axis_index(op, _scalar(begin_param_axis), rank, what="begin_param_axis")


def _check_layer_norm_param(op: str, name: str, t_shape, x_shape, bna: int, bpa: int) -> None:
    """gamma/beta have shape ``input.shape[begin_param_axis:]`` (unknown dims pass)."""
    want = tuple(x_shape[bpa:])
    if len(t_shape) == len(want) and all(not _known(a, b) or a == b for a, b in zip(t_shape, want)):
        return
    hint = (f" (begin_param_axis {bpa} differs from begin_norm_axis {bna}: AddOperation requires gamma/beta "
            "dims == input.shape[begin_norm_axis:], so set OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS to match)"
            if bpa != bna else "")
    raise invalid(f"{op}: {name} has shape {list(t_shape)}, expected input.shape[{bpa}:] = {list(want)}{hint}")


@shape_rule("OH_NN_OPS_LAYER_NORM")
def _layer_norm_shape(op, shapes, values, *, begin_norm_axis, begin_param_axis, **_):
    x_shape = shapes[0]
    if x_shape is not None:
        bna, bpa = _layer_norm_axes(op, len(x_shape), begin_norm_axis, begin_param_axis)
        for name, t_shape in (("gamma", shapes[1]), ("beta", shapes[2])):
            if t_shape is not None:
                _check_layer_norm_param(op, name, t_shape, x_shape, bna, bpa)
    return (x_shape,)


@kernel("OH_NN_OPS_INSTANCE_NORM")
def instance_norm(input: np.ndarray, scale: np.ndarray, bias: np.ndarray, *, epsilon: float) -> np.ndarray:
    """NHWC instance norm: per sample and channel, normalise over the spatial axes ``1..rank-2``, then
    ``* scale[c] + bias[c]``. Input rank must be >= 3 (``[N, D1, ..., C]``)."""
    op = "INSTANCE_NORM"
    x = np.asarray(input)
    _require_float(op, x)
    _check_min_rank(op, x.shape, 3)
    work = _work_dtype(x.dtype)
    c = x.shape[-1]
    s = _per_channel(op, "scale", scale, c, work)
    b = _per_channel(op, "bias", bias, c, work)
    xw = x.astype(work, copy=False)
    axes = tuple(range(1, x.ndim - 1))
    mu = np.mean(xw, axis=axes, keepdims=True)
    centred = xw - mu
    var = np.mean(np.square(centred), axis=axes, keepdims=True)
    return (centred / np.sqrt(var + work.type(epsilon)) * s + b).astype(x.dtype, copy=False)


@kernel("OH_NN_OPS_L2_NORMALIZE")
def l2_normalize(input: np.ndarray, *, axis: Sequence[int], epsilon: float) -> np.ndarray:
    """``x / sqrt(max(sum(x^2 over axis), epsilon))`` (MindSpore L2NormalizeFusion / TFLite formula).

    ``axis`` is a list of axes; an empty list means every axis (MindSpore). The fused activation is applied by
    the executor.
    """
    op = "L2_NORMALIZE"
    x = np.asarray(input)
    _require_float(op, x)
    axes = _l2_axes(op, axis, x.ndim)
    work = _work_dtype(x.dtype)
    xw = x.astype(work, copy=False)
    sq = np.sum(np.square(xw), axis=axes, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = xw / np.sqrt(np.maximum(sq, work.type(epsilon)))
    return out.astype(x.dtype, copy=False)


# ----------------------------------------------------------------------------------------------------------------
# LRN


def _l2_axes(op: str, axis, rank: int) -> tuple[int, ...]:
    """The normalised axes of L2_NORMALIZE (an empty list: every axis)."""
    axes_in = [axis] if np.isscalar(axis) else list(np.asarray(axis).reshape(-1).tolist())
    return tuple(_axes_list(op, axes_in, rank)) if axes_in else tuple(range(rank))


@shape_rule("OH_NN_OPS_L2_NORMALIZE")
def _l2_normalize_shape(op, shapes, values, *, axis, **_):
    if shapes[0] is not None:
        _l2_axes(op, axis, len(shapes[0]))
    return (shapes[0],)


@shape_rule("OH_NN_OPS_LRN")
def _lrn_shape(op, shapes, values, **_):
    if shapes[0] is not None and len(shapes[0]) < 1:
        raise invalid(f"{op}: input must have rank >= 1")
    return (shapes[0],)


@kernel("OH_NN_OPS_LRN")
def lrn(x, *, depth_radius, bias, alpha, beta, norm_region):
    """TF/NNAPI LRN across the last (channel) axis:
    out = x / (bias + alpha * sum(x[c-r .. c+r]^2)) ** beta   (alpha is NOT divided by the window size)."""
    op = "LRN"
    if x.ndim < 1:
        raise invalid(f"{op}: input must have rank >= 1")
    cdtype = _compute_dtype(op, x)
    if int(norm_region) != 0:
        raise invalid(f"{op}: norm region {norm_region} is not 0 (ACROSS_CHANNELS)")
    r = int(depth_radius)
    if r < 0:
        raise invalid(f"{op}: depth radius must be >= 0, got {r}")
    xc = x.astype(cdtype, copy=False)
    sq = np.square(xc)
    pad = [(0, 0)] * (x.ndim - 1) + [(r, r)]
    sqr_sum = sliding_window_view(np.pad(sq, pad), 2 * r + 1, axis=-1).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = xc / np.power(cdtype.type(bias) + cdtype.type(alpha) * sqr_sum, cdtype.type(beta))
    return out.astype(x.dtype, copy=False)
