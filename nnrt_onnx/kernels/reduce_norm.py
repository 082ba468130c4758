"""Kernels of the matmul / normalisation / reduction family.

MATMUL, FULL_CONNECTION, SOFTMAX, LOG_SOFTMAX, BATCH_NORM, LAYER_NORM, INSTANCE_NORM, L2_NORMALIZE,
REDUCE_{MEAN,PROD,ALL,MAX,MIN,SUM,L2}, ALL, ARG_MAX, TOP_K.

Conventions shared by every kernel here:
* float16 inputs are accumulated in float32 (as fp16 hardware does with fp32 accumulators) and the result is
  returned as float16; float32 stays float32 and float64 stays float64 (never a silent float64 result).
* Matrix products go through ``np.matmul`` (BLAS for float32/float64; float16 is widened to float32 first,
  numpy has no BLAS half-precision path).
* Axis values are normalised against the input rank; out-of-range or duplicated axes raise INVALID_PARAMETER.
* Semantics that the header leaves open follow MindSpore Lite, the engine behind the real NNRt HDI
  primitives (``MatMulFusion``, ``FullConnection``, ``ReduceFusion``, ``ArgMaxFusion``, ``TopKFusion``,
  ``L2NormalizeFusion`` ...); every place where we deliberately differ from it is stated in a docstring.
"""
from __future__ import annotations

from math import prod
from typing import Any, Sequence

import numpy as np

from ..errors import invalid, unsupported
from . import OpContext, kernel

_FLOAT_KINDS = "f"
_INT_KINDS = "iu"
# Integer dtypes a matrix product accepts without quantization (ONNX MatMul's integer set); narrower integers are
# only meaningful as quantized tensors, which the executor dequantizes before calling the kernel.
_MATMUL_INTS = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint32), np.dtype(np.uint64))


# ----------------------------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------------------------

def _work_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a float computation runs in: float16 is widened to float32."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _require_float(op: str, x: np.ndarray, what: str = "input") -> None:
    if x.dtype.kind not in _FLOAT_KINDS:
        raise unsupported(f"{op}: {what} dtype {x.dtype} is not supported (float16, float32 or float64 only)")


def _norm_axis(op: str, axis: Any, rank: int, what: str = "axis", allow_end: bool = False) -> int:
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
        n = _norm_axis(op, a, rank)
        if n in out:
            raise invalid(f"{op}: axis {a} is given twice in {list(axes)}")
        out.append(n)
    return out


def _axis_tensor(op: str, axis: np.ndarray, rank: int) -> list[int]:
    """Axes from an axis *input* tensor (scalar or 1-D, integer dtype)."""
    axis = np.asarray(axis)
    if axis.dtype.kind not in _INT_KINDS:
        raise invalid(f"{op}: the axis input must hold integers, got {axis.dtype}")
    if axis.ndim > 1:
        raise invalid(f"{op}: the axis input must be a scalar or 1-D, got shape {list(axis.shape)}")
    return _axes_list(op, axis.reshape(-1).tolist(), rank)


def _descending_order(x: np.ndarray, axis: int) -> np.ndarray:
    """Indices that sort ``x`` along ``axis`` by descending value; equal values keep ascending index order."""
    n = x.shape[axis]
    # A stable ascending sort of the reversed array, read backwards, is a descending sort in which ties keep
    # their original (ascending) index order -- no negation, so it is safe for unsigned ints.
    order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(order, axis)


def _index_dtype(op: str, ctx: OpContext, index: int) -> np.dtype:
    dt = np.dtype(ctx.output_dtypes[index])
    if dt.kind not in _INT_KINDS:
        raise invalid(f"{op}: output {index} holds indices and must be declared with an integer type, not {dt}")
    return dt


# ----------------------------------------------------------------------------------------------------------------
# matrix products
# ----------------------------------------------------------------------------------------------------------------

def _check_product_dtypes(op: str, a: np.ndarray, b: np.ndarray) -> np.dtype:
    if a.dtype != b.dtype:
        raise invalid(f"{op}: input dtypes differ ({a.dtype} and {b.dtype})")
    if a.dtype.kind not in _FLOAT_KINDS and a.dtype not in _MATMUL_INTS:
        raise unsupported(f"{op}: input dtype {a.dtype} is not supported "
                          "(float16/32/64, int32/64, uint32/64; 8/16-bit integers only as quantized tensors)")
    return a.dtype


@kernel("OH_NN_OPS_MATMUL")
def matmul(input1: np.ndarray, input2: np.ndarray, *, transpose_a: bool, transpose_b: bool) -> np.ndarray:
    """``input1 @ input2`` with optional transposition of the last two axes of each operand.

    Leading (batch) dimensions broadcast like numpy/ONNX MatMul; a 1-D operand is a vector (transposing it is
    the identity).
    """
    op = "MATMUL"
    a, b = np.asarray(input1), np.asarray(input2)
    dtype = _check_product_dtypes(op, a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise invalid(f"{op}: inputs must have rank >= 1, got shapes {list(a.shape)} and {list(b.shape)}")
    if transpose_a and a.ndim >= 2:
        a = np.swapaxes(a, -1, -2)
    if transpose_b and b.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    k_a = a.shape[-1]
    k_b = b.shape[-2] if b.ndim >= 2 else b.shape[0]
    if k_a != k_b:
        raise invalid(f"{op}: inner dimensions differ ({k_a} vs {k_b}) for shapes {list(input1.shape)} x "
                      f"{list(input2.shape)} (transpose_a={bool(transpose_a)}, transpose_b={bool(transpose_b)})")
    work = _work_dtype(dtype) if dtype.kind in _FLOAT_KINDS else dtype
    try:
        out = np.matmul(a.astype(work, copy=False), b.astype(work, copy=False))
    except ValueError as exc:
        raise invalid(f"{op}: batch dimensions of {list(a.shape)} and {list(b.shape)} do not broadcast") from exc
    return out.astype(dtype, copy=False)


def _dequantized_bias(op: str, bias: np.ndarray, ctx: OpContext, n_out: int, work: np.dtype) -> np.ndarray | None:
    """The int32 bias of a quantized layer carries no quant params: its scale is input scale x weight scale."""
    if bias.dtype.kind not in _INT_KINDS or len(ctx.input_quant) < 3:
        return None
    q_in, q_w, q_b = ctx.input_quant[0], ctx.input_quant[1], ctx.input_quant[2]
    if q_in is None or q_w is None or q_b is not None:
        return None
    s_in = np.asarray(q_in.scales, dtype=np.float64).reshape(-1)
    s_w = np.asarray(q_w.scales, dtype=np.float64).reshape(-1)
    if s_in.size != 1 or s_w.size not in (1, n_out):
        raise invalid(f"{op}: cannot derive the bias scale from {s_in.size} input and {s_w.size} weight scales")
    return (bias.astype(np.float64) * (s_in[0] * s_w)).astype(work)


@kernel("OH_NN_OPS_FULL_CONNECTION")
def full_connection(input: np.ndarray, weight: np.ndarray, *bias: np.ndarray, has_bias: bool, use_axis: bool,
                    axis: int, ctx: OpContext) -> np.ndarray:
    """``flatten(input) @ weight.T (+ bias)``; weight is ``[out_channels, in_channels]`` (MindSpore FullConnection,
    NNAPI FULLY_CONNECTED, TFLite), bias is ``[out_channels]``.

    * ``use_axis=False``: the whole input is read as rows of ``in_channels`` values -> output ``[total/in, out]``.
    * ``use_axis=True``: dims ``axis..`` are flattened into one feature vector -> output
      ``input.shape[:axis] + [out]`` (axis in ``[-rank, rank]``; 0 flattens everything into one vector).
    * ``has_bias`` must agree with the presence of the third input (MindSpore's shape inference rejects a
      mismatch in either direction; the builder never derives has_bias from the input count).
    * A quantized layer's int32 bias without quant params is dequantized with ``input_scale * weight_scale``.
    """
    op = "FULL_CONNECTION"
    if len(bias) > 1:
        raise invalid(f"{op}: expects 2 or 3 inputs (input, weight[, bias]), got {2 + len(bias)}")
    b = np.asarray(bias[0]) if bias else None
    if has_bias and b is None:
        raise invalid(f"{op}: has_bias is true but no bias input (input #2) was given")
    if not has_bias and b is not None:
        raise invalid(f"{op}: a bias input (#2) was given but has_bias is false; set OH_NN_FULL_CONNECTION_HAS_BIAS")
    x, w = np.asarray(input), np.asarray(weight)
    dtype = _check_product_dtypes(op, x, w)
    if w.ndim != 2:
        raise invalid(f"{op}: weight must be 2-D [out_channels, in_channels], got shape {list(w.shape)}")
    n_out, k = w.shape
    if use_axis:
        ax = _norm_axis(op, axis, x.ndim, allow_end=True)
        lead = x.shape[:ax]
        if prod(x.shape[ax:]) != k:
            raise invalid(f"{op}: dims {list(x.shape[ax:])} from axis {ax} hold {prod(x.shape[ax:])} values, "
                          f"weight expects {k}")
        out_shape = (*lead, n_out)
        rows = x.reshape(prod(lead), k)
    else:
        if x.size % k:
            raise invalid(f"{op}: input of {x.size} elements is not a whole number of rows of {k} (weight {list(w.shape)})")
        out_shape = (x.size // k, n_out)
        rows = x.reshape(-1, k)
    work = _work_dtype(dtype) if dtype.kind in _FLOAT_KINDS else dtype
    out = np.matmul(rows.astype(work, copy=False), w.astype(work, copy=False).T)
    if b is not None:
        if b.size != n_out:
            raise invalid(f"{op}: bias has {b.size} elements, expected {n_out} (weight {list(w.shape)})")
        deq = _dequantized_bias(op, b, ctx, n_out, work)
        if deq is None:
            if (b.dtype.kind in _FLOAT_KINDS) != (dtype.kind in _FLOAT_KINDS):
                raise invalid(f"{op}: bias dtype {b.dtype} does not match input dtype {dtype}")
            deq = b.astype(work)
        out = out + deq.reshape(n_out)
    return out.reshape(out_shape).astype(dtype, copy=False)


# ----------------------------------------------------------------------------------------------------------------
# softmax family
# ----------------------------------------------------------------------------------------------------------------

def _softmax_axis(op: str, axis: Any, rank: int) -> int:
    if rank == 0:
        raise invalid(f"{op}: input must have rank >= 1")
    a = _scalar(axis)
    if a is None:  # the builder's "omitted" value is an empty list: the last axis (ONNX/NNAPI/TFLite default)
        a = -1
    return _norm_axis(op, a, rank)


@kernel("OH_NN_OPS_SOFTMAX")
def softmax(input: np.ndarray, *, axis: int) -> np.ndarray:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (in ``[-n, n)``)."""
    op = "SOFTMAX"
    x = np.asarray(input)
    _require_float(op, x)
    ax = _softmax_axis(op, axis, x.ndim)
    xw = x.astype(_work_dtype(x.dtype), copy=False)
    # one work buffer, updated in place: subtract the max, exp, divide by the sum (no further temporaries)
    e = np.subtract(xw, np.max(xw, axis=ax, keepdims=True), out=xw if xw is not x else None)
    np.exp(e, out=e)
    np.divide(e, np.sum(e, axis=ax, keepdims=True), out=e)
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
    if t.size != c:
        raise invalid(f"{op}: {name} has shape {list(t.shape)}, expected [{c}] (one value per channel)")
    return t.reshape(c).astype(work)


@kernel("OH_NN_OPS_BATCH_NORM")
def batch_norm(input: np.ndarray, scale: np.ndarray, offset: np.ndarray, mean: np.ndarray, variance: np.ndarray, *,
               epsilon: float) -> np.ndarray:
    """Inference batch norm, channel last: ``(x - mean) / sqrt(variance + epsilon) * scale + offset``."""
    op = "BATCH_NORM"
    x = np.asarray(input)
    _require_float(op, x)
    if x.ndim == 0:
        raise invalid(f"{op}: input must have rank >= 1 ([N, ..., C])")
    work = _work_dtype(x.dtype)
    c = x.shape[-1]
    s, o, m, v = (_per_channel(op, n, t, c, work) for n, t in
                  (("scale", scale), ("offset", offset), ("mean", mean), ("variance", variance)))
    inv = s / np.sqrt(v + work.type(epsilon))
    return (x.astype(work, copy=False) * inv + (o - m * inv)).astype(x.dtype, copy=False)


def _mean(a: np.ndarray, axes: tuple[int, ...], count: np.intp) -> np.ndarray:
    """``np.mean(a, axis=axes, keepdims=True)`` for a float array, without its Python-level overhead: the same
    sum, then the same division by the intp element count (so the same result, bit for bit)."""
    s = np.add.reduce(a, axis=axes, keepdims=True)
    return np.true_divide(s, count, out=s, casting="unsafe")


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
    rank = x.ndim
    bna = int(_scalar(begin_norm_axis))
    if not 1 <= bna < rank:
        raise invalid(f"{op}: begin_norm_axis {bna} is out of range [1, {rank}) for an input of rank {rank}")
    bpa = _norm_axis(op, _scalar(begin_param_axis), rank, what="begin_param_axis")
    g, b = np.asarray(gamma), np.asarray(beta)
    want = x.shape[bpa:]
    for name, t in (("gamma", g), ("beta", b)):
        if t.dtype.kind not in _FLOAT_KINDS:
            raise unsupported(f"{op}: {name} dtype {t.dtype} is not supported (float only)")
        if t.shape != want:
            hint = (f" (begin_param_axis {bpa} differs from begin_norm_axis {bna}: AddOperation requires gamma/beta "
                    "dims == input.shape[begin_norm_axis:], so set OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS to match)"
                    if bpa != bna else "")
            raise invalid(f"{op}: {name} has shape {list(t.shape)}, expected input.shape[{bpa}:] = {list(want)}{hint}")
    work = _work_dtype(x.dtype)
    xw = x.astype(work, copy=False)
    axes = tuple(range(bna, rank))
    count = np.intp(prod(x.shape[bna:]))
    # two work buffers (centred values, squares), then scale and shift in place: no further temporaries
    centred = np.subtract(xw, _mean(xw, axes, count), out=xw if xw is not x else None)
    var = _mean(np.square(centred), axes, count)
    np.add(var, work.type(epsilon), out=var)
    np.sqrt(var, out=var)
    np.divide(centred, var, out=centred)
    np.multiply(centred, g.astype(work, copy=False), out=centred)
    np.add(centred, b.astype(work, copy=False), out=centred)
    return centred.astype(x.dtype, copy=False)


@kernel("OH_NN_OPS_INSTANCE_NORM")
def instance_norm(input: np.ndarray, scale: np.ndarray, bias: np.ndarray, *, epsilon: float) -> np.ndarray:
    """NHWC instance norm: per sample and channel, normalise over the spatial axes ``1..rank-2``, then
    ``* scale[c] + bias[c]``. Input rank must be >= 3 (``[N, D1, ..., C]``)."""
    op = "INSTANCE_NORM"
    x = np.asarray(input)
    _require_float(op, x)
    if x.ndim < 3:
        raise invalid(f"{op}: input must be [N, spatial..., C] with rank >= 3, got shape {list(x.shape)}")
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
    axes_in = [axis] if np.isscalar(axis) else list(np.asarray(axis).reshape(-1).tolist())
    axes = tuple(_axes_list(op, axes_in, x.ndim)) if axes_in else tuple(range(x.ndim))
    work = _work_dtype(x.dtype)
    xw = x.astype(work, copy=False)
    sq = np.sum(np.square(xw), axis=axes, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = xw / np.sqrt(np.maximum(sq, work.type(epsilon)))
    return out.astype(x.dtype, copy=False)


# ----------------------------------------------------------------------------------------------------------------
# reductions
# ----------------------------------------------------------------------------------------------------------------

def _apply_coeff(op: str, out: np.ndarray, coeff: float, dtype: np.dtype) -> np.ndarray:
    """Scale the reduced result by ``coeff`` (header: "scale factor of the output")."""
    coeff = float(coeff)
    if coeff == 1.0:
        return out
    if dtype.kind in _FLOAT_KINDS:
        return out * _work_dtype(dtype).type(coeff)
    if dtype.kind in _INT_KINDS and coeff.is_integer():
        return out * dtype.type(int(coeff))
    raise unsupported(f"{op}: coeff {coeff} cannot scale a {dtype} output exactly "
                      "(integer outputs accept integral coeff only, bool outputs only 1.0)")


def _reduce_axes(op: str, x: np.ndarray, axis: np.ndarray, reduce_to_end: bool) -> tuple[int, ...]:
    axes = _axis_tensor(op, axis, x.ndim)
    if reduce_to_end:
        if len(axes) != 1:
            raise invalid(f"{op}: reduce_to_end needs exactly one axis (the first reduced one), got {len(axes)}")
        axes = list(range(axes[0], x.ndim))
    return tuple(axes) if axes else tuple(range(x.ndim))  # no axis at all: reduce everything


def _reduce(op: str, mode: str, input: np.ndarray, axis: np.ndarray, keep_dims: bool, reduce_to_end: bool,
            coeff: float) -> np.ndarray:
    x = np.asarray(input)
    dtype = x.dtype
    axes = _reduce_axes(op, x, axis, bool(reduce_to_end))
    keep = bool(keep_dims)
    kind = dtype.kind
    if mode in ("mean", "l2") and kind not in _FLOAT_KINDS + (_INT_KINDS if mode == "mean" else ""):
        raise unsupported(f"{op}: input dtype {dtype} is not supported")
    if mode in ("sum", "prod") and kind not in _FLOAT_KINDS + _INT_KINDS:
        raise unsupported(f"{op}: input dtype {dtype} is not supported (numeric types only)")
    if mode in ("max", "min") and kind not in _FLOAT_KINDS + _INT_KINDS + "b":
        raise unsupported(f"{op}: input dtype {dtype} is not supported")
    if mode == "all" and kind not in _FLOAT_KINDS + _INT_KINDS + "b":
        raise unsupported(f"{op}: input dtype {dtype} is not supported")

    if kind in _FLOAT_KINDS:
        xw = x.astype(_work_dtype(dtype), copy=False)
        if mode == "mean":
            out = np.mean(xw, axis=axes, keepdims=keep)
        elif mode == "sum":
            out = np.sum(xw, axis=axes, keepdims=keep)
        elif mode == "prod":
            out = np.prod(xw, axis=axes, keepdims=keep)
        elif mode == "l2":
            out = np.sqrt(np.sum(np.square(xw), axis=axes, keepdims=keep))
        elif mode == "max":
            out = np.max(xw, axis=axes, keepdims=keep)
        elif mode == "min":
            out = np.min(xw, axis=axes, keepdims=keep)
        else:  # all
            out = np.all(xw != 0, axis=axes, keepdims=keep).astype(xw.dtype)
    else:
        if mode == "mean":  # integer mean truncates toward zero (C division, MindSpore IntReduceMean)
            n = prod(x.shape[a] for a in axes)
            acc = np.sum(x, axis=axes, keepdims=keep, dtype=np.uint64 if kind == "u" else np.int64)
            out = (np.sign(acc) * (np.abs(acc) // n)) if kind == "i" else acc // n
        elif mode == "sum":
            out = np.sum(x, axis=axes, keepdims=keep, dtype=dtype)
        elif mode == "prod":
            out = np.prod(x, axis=axes, keepdims=keep, dtype=dtype)
        elif mode == "max":
            out = np.max(x, axis=axes, keepdims=keep)
        elif mode == "min":
            out = np.min(x, axis=axes, keepdims=keep)
        else:  # all
            out = np.all(x != 0, axis=axes, keepdims=keep)
    out = _apply_coeff(op, np.asarray(out), coeff, dtype)
    return np.asarray(out).astype(dtype, copy=False)


_REDUCE_DOC = """Reduce over the axes of the ``axis`` input ({what}).

    * ``reduce_to_end``: ``axis`` holds one axis ``a``; the reduced axes are ``a..rank-1``.
    * ``keep_dims`` keeps reduced axes as size 1 (honoured together with reduce_to_end; MindSpore's shape
      inference forces keep_dims=false there).
    * ``coeff`` multiplies the result (header meaning; MindSpore applies it only with reduce_to_end and
      |coeff| > 1e-5, which is why the builder's 0.0 default means "no scaling" there: our default is 1.0).
    * An empty axis list reduces every axis.
    """


def _reduce_kernel(op_name: str, mode: str, what: str):
    short = op_name[len("OH_NN_OPS_"):]

    def fn(input: np.ndarray, axis: np.ndarray, *, keep_dims: bool, reduce_to_end: bool, coeff: float) -> np.ndarray:
        return _reduce(short, mode, input, axis, keep_dims, reduce_to_end, coeff)

    fn.__name__ = fn.__qualname__ = short.lower()
    fn.__doc__ = _REDUCE_DOC.format(what=what)
    return kernel(op_name)(fn)


reduce_mean = _reduce_kernel("OH_NN_OPS_REDUCE_MEAN", "mean", "mean; integer inputs truncate toward zero")
reduce_prod = _reduce_kernel("OH_NN_OPS_REDUCE_PROD", "prod", "product; integers wrap like C")
reduce_all = _reduce_kernel("OH_NN_OPS_REDUCE_ALL", "all",
                            "logical AND of x != 0, returned in the input dtype (true = 1)")
reduce_max = _reduce_kernel("OH_NN_OPS_REDUCE_MAX", "max", "maximum")
reduce_min = _reduce_kernel("OH_NN_OPS_REDUCE_MIN", "min", "minimum")
reduce_sum = _reduce_kernel("OH_NN_OPS_REDUCE_SUM", "sum", "sum; integers wrap like C")
reduce_l2 = _reduce_kernel("OH_NN_OPS_REDUCE_L2", "l2", "sqrt(sum(x^2)); float only")


@kernel("OH_NN_OPS_ALL")
def all_(input: np.ndarray, axis: np.ndarray, *, keep_dims: int, ctx: OpContext) -> np.ndarray:
    """``all(x != 0)`` over the axes of the ``axis`` input (scalar or 1-D; empty = every axis);
    ``keep_dims`` is an INT64 flag (non-zero = keep). Output: the declared dtype (BOOL)."""
    op = "ALL"
    x = np.asarray(input)
    if x.dtype.kind not in _FLOAT_KINDS + _INT_KINDS + "b":
        raise unsupported(f"{op}: input dtype {x.dtype} is not supported")
    axes = _axis_tensor(op, axis, x.ndim)
    out = np.all(x != 0, axis=tuple(axes) if axes else None, keepdims=bool(_scalar(keep_dims)))
    return np.asarray(out).astype(ctx.output_dtypes[0], copy=False)


# ----------------------------------------------------------------------------------------------------------------
# arg max / top k
# ----------------------------------------------------------------------------------------------------------------

def _require_sortable(op: str, x: np.ndarray) -> None:
    if x.dtype.kind not in _FLOAT_KINDS + _INT_KINDS:
        raise unsupported(f"{op}: input dtype {x.dtype} is not supported (numeric types only)")


@kernel("OH_NN_OPS_ARG_MAX")
def arg_max(input: np.ndarray, *, axis: int, keep_dims: bool, top_k: int, out_max_value: bool,
            ctx: OpContext) -> np.ndarray:
    """Index (or, with ``out_max_value``, value) of the maximum along ``axis``.

    ``top_k > 1`` returns the ``top_k`` largest, in descending order (ties: lower index first), and the axis
    keeps size ``top_k`` whatever ``keep_dims`` says; with ``top_k == 1`` the axis is dropped unless
    ``keep_dims`` (MindSpore ArgMaxFusion shape rule). Indices take the declared output dtype.
    """
    op = "ARG_MAX"
    x = np.asarray(input)
    _require_sortable(op, x)
    if x.ndim == 0:
        raise invalid(f"{op}: input must have rank >= 1")
    ax = _norm_axis(op, _scalar(axis), x.ndim)
    k = int(_scalar(top_k))
    n = x.shape[ax]
    if not 1 <= k <= n:
        raise invalid(f"{op}: top_k {k} is out of range [1, {n}] (size of axis {ax})")
    if k == 1:
        idx = np.argmax(x, axis=ax, keepdims=True)  # first occurrence on ties
    else:
        idx = np.take(_descending_order(x, ax), np.arange(k), axis=ax)
    out = np.take_along_axis(x, idx, axis=ax) if out_max_value else idx.astype(_index_dtype(op, ctx, 0))
    if k == 1 and not keep_dims:
        out = np.squeeze(out, axis=ax)
    return out


@kernel("OH_NN_OPS_TOP_K")
def top_k(input: np.ndarray, k: np.ndarray, *, sorted: bool, axis: int,
          ctx: OpContext) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest entries along ``axis`` (default -1, the last axis) and their indices.

    ``sorted=true``: descending values; ``sorted=false``: the same k entries in ascending value order (header
    meaning; MindSpore instead returns them in input-index order). Ties: lower index first.
    """
    op = "TOP_K"
    x = np.asarray(input)
    _require_sortable(op, x)
    if x.ndim == 0:
        raise invalid(f"{op}: input must have rank >= 1")
    kt = np.asarray(k)
    if kt.dtype.kind not in _INT_KINDS or kt.size != 1:
        raise invalid(f"{op}: k must be a single integer, got dtype {kt.dtype} shape {list(kt.shape)}")
    kv = int(kt.reshape(-1)[0])
    ax = _norm_axis(op, _scalar(axis), x.ndim)
    n = x.shape[ax]
    if not 0 <= kv <= n:
        raise invalid(f"{op}: k {kv} is out of range [0, {n}] (size of axis {ax})")
    idx = np.take(_descending_order(x, ax), np.arange(kv), axis=ax)
    values = np.take_along_axis(x, idx, axis=ax)
    if not sorted:
        # the k largest, ascending; a stable sort keeps equal values in ascending index order
        order = np.argsort(values, axis=ax, kind="stable")
        idx = np.take_along_axis(idx, order, axis=ax)
        values = np.take_along_axis(values, order, axis=ax)
    return values, idx.astype(_index_dtype(op, ctx, 1))
