"""Linear kernels: MATMUL and FULL_CONNECTION (matrix products).

Conventions (shared with the normalization and reduce kernels):
* float16 inputs are accumulated in float32 (as fp16 hardware does with fp32 accumulators) and the result is
  returned as float16; float32 stays float32 and float64 stays float64 (never a silent float64 result).
* Matrix products go through ``np.matmul`` (BLAS for float32/float64; float16 is widened to float32 first,
  numpy has no BLAS half-precision path).
* Axis values are normalised against the input rank; out-of-range axes raise INVALID_PARAMETER.
* Semantics that the header leaves open follow MindSpore Lite, the engine behind the real NNRt HDI
  primitives (``MatMulFusion``, ``FullConnection``); every place where we deliberately differ from it is stated
  in a docstring.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..errors import invalid, unsupported
from . import OpContext, kernel, shape_rule
from ._common import (
    _FLOAT_KINDS,
    _INT_KINDS,
    _axis_index,
    _broadcast_dims,
    _known,
    _packed,
    _product,
    _remembered,
    _work_dtype,
)

# Integer dtypes a matrix product accepts without quantization (ONNX MatMul's integer set); narrower integers are
# only meaningful as quantized tensors, which the executor dequantizes before calling the kernel.
_MATMUL_INTS = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint32), np.dtype(np.uint64))


def _check_product_dtypes(op: str, a: np.ndarray, b: np.ndarray) -> np.dtype:
    if a.dtype != b.dtype:
        raise invalid(f"{op}: input dtypes differ ({a.dtype} and {b.dtype})")
    if a.dtype.kind not in _FLOAT_KINDS and a.dtype not in _MATMUL_INTS:
        raise unsupported(f"{op}: input dtype {a.dtype} is not supported "
                          "(float16/32/64, int32/64, uint32/64; 8/16-bit integers only as quantized tensors)")
    return a.dtype


@kernel("OH_NN_OPS_MATMUL")
def matmul(input1: np.ndarray, input2: np.ndarray, *, transpose_a: bool, transpose_b: bool, activation: int = 0,
           out: np.ndarray | None = None) -> np.ndarray:
    """``input1 @ input2`` with optional transposition of the last two axes of each operand, then the fused
    activation (``activation``: 0, 1 RELU, 2 RELU6).

    Leading (batch) dimensions broadcast like numpy/ONNX MatMul; a 1-D operand is a vector (transposing it is
    the identity). ``out``: the plan's array for the result (memory planning), filled where it fits.
    """
    op = "MATMUL"
    a, b = np.asarray(input1), np.asarray(input2)
    dtype = _check_product_dtypes(op, a, b)
    matmul_dims(op, a.shape, b.shape, transpose_a, transpose_b)
    if activation not in (0, 1, 2):
        raise invalid(f"{op}: fused activation {activation} is not an OH_NN_FuseType (0..2)")
    if transpose_a and a.ndim >= 2:
        a = np.swapaxes(a, -1, -2)
    if transpose_b and b.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    work = _work_dtype(dtype) if dtype.kind in _FLOAT_KINDS else dtype
    result = np.matmul(a.astype(work, copy=False), b.astype(work, copy=False))
    if activation == 1:
        np.maximum(result, result.dtype.type(0), out=result)
    elif activation == 2:
        np.clip(result, result.dtype.type(0), result.dtype.type(6), out=result)
    result = result.astype(dtype, copy=False)
    if out is not None and out.shape == result.shape and out.dtype == result.dtype:
        np.copyto(out, result)
        return out
    return result


def matmul_dims(op: str, a_shape, b_shape, transpose_a, transpose_b):
    """The output shape of ``input1 @ input2`` (np.matmul's: broadcast batch dims, a 1-D operand is a vector),
    after the checks of rank, inner dimensions and batch dimensions; None if a rank is unknown."""
    if any(shape is not None and len(shape) == 0 for shape in (a_shape, b_shape)):
        shown = ["?" if shape is None else str(list(shape)) for shape in (a_shape, b_shape)]
        raise invalid(f"{op}: inputs must have rank >= 1, got shapes {shown[0]} and {shown[1]}")
    if a_shape is None or b_shape is None:
        return None
    a_t = tuple(a_shape[:-2]) + (a_shape[-1], a_shape[-2]) if transpose_a and len(a_shape) >= 2 else tuple(a_shape)
    b_t = tuple(b_shape[:-2]) + (b_shape[-1], b_shape[-2]) if transpose_b and len(b_shape) >= 2 else tuple(b_shape)
    k_a = a_t[-1]
    k_b = b_t[-2] if len(b_t) >= 2 else b_t[0]
    if _known(k_a, k_b) and k_a != k_b:
        raise invalid(f"{op}: inner dimensions differ ({k_a} vs {k_b}) for shapes {list(a_shape)} x "
                      f"{list(b_shape)} (transpose_a={bool(transpose_a)}, transpose_b={bool(transpose_b)})")
    try:
        batch = _broadcast_dims(a_t[:-2], b_t[:-2])
    except ValueError:
        raise invalid(f"{op}: batch dimensions of {list(a_t)} and {list(b_t)} do not broadcast") from None
    return batch + a_t[-2:-1] + (b_t[-1:] if len(b_t) >= 2 else ())


@shape_rule("OH_NN_OPS_MATMUL")
def _matmul_shape(op, shapes, values, *, transpose_a, transpose_b, **_):
    return (matmul_dims(op, shapes[0], shapes[1], transpose_a, transpose_b),)


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
    _check_bias_presence(op, 2 + len(bias), has_bias)
    b = np.asarray(bias[0]) if bias else None
    x, w = np.asarray(input), np.asarray(weight)
    dtype = _check_product_dtypes(op, x, w)
    out_shape = _checked_full_connection(x.shape, w.shape, b.shape if b is not None else None, use_axis, axis)
    n_out, k = w.shape
    rows = x.reshape(prod(out_shape[:-1]), k) if use_axis else x.reshape(-1, k)
    work = _work_dtype(dtype) if dtype.kind in _FLOAT_KINDS else dtype
    matrix = _packed(w, ("transposed", work.str), lambda a: np.ascontiguousarray(a.T.astype(work, copy=False)))
    out = np.matmul(rows.astype(work, copy=False), matrix)
    if b is not None:
        deq = _dequantized_bias(op, b, ctx, n_out, work)
        if deq is None:
            if (b.dtype.kind in _FLOAT_KINDS) != (dtype.kind in _FLOAT_KINDS):
                raise invalid(f"{op}: bias dtype {b.dtype} does not match input dtype {dtype}")
            deq = b.astype(work, copy=False)
        out += deq.reshape(n_out)  # (in place: the product is a new array)
    return out.reshape(out_shape).astype(dtype, copy=False)


@_remembered
def _checked_full_connection(x_shape, w_shape, b_shape, use_axis, axis):
    """The kernel's shape checks (output shape, bias size), remembered per shapes and parameters (~5 us a call of a
    small layer); returns the output shape."""
    op = "FULL_CONNECTION"
    out_shape = _full_connection_dims(op, x_shape, w_shape, use_axis, axis)
    if b_shape is not None:
        _check_full_connection_bias(op, b_shape, w_shape)
    return out_shape


def _check_bias_presence(op: str, input_count: int, has_bias) -> None:
    if input_count > 3:
        raise invalid(f"{op}: expects 2 or 3 inputs (input, weight[, bias]), got {input_count}")
    if has_bias and input_count < 3:
        raise invalid(f"{op}: has_bias is true but no bias input (input #2) was given")
    if not has_bias and input_count == 3:
        raise invalid(f"{op}: a bias input (#2) was given but has_bias is false; set OH_NN_FULL_CONNECTION_HAS_BIAS")


def _full_connection_dims(op: str, x_shape, w_shape, use_axis, axis):
    """The output shape: ``input.shape[:axis] + [out]`` with ``use_axis``, else ``[total / in, out]``, after the
    checks of the weight and of the input's element count (unknown dims pass); None if the input rank is unknown
    and use_axis needs it."""
    if w_shape is not None and len(w_shape) != 2:
        raise invalid(f"{op}: weight must be 2-D [out_channels, in_channels], got shape {list(w_shape)}")
    n_out, k = w_shape if w_shape is not None else (-1, -1)
    if use_axis:
        if x_shape is None:
            return None
        ax = _axis_index(op, axis, len(x_shape), allow_end=True)
        features = _product(x_shape[ax:])
        if _known(features, k) and features != k:
            raise invalid(f"{op}: dims {list(x_shape[ax:])} from axis {ax} hold {features} values, "
                          f"weight expects {k}")
        return (*x_shape[:ax], n_out)
    size = -1 if x_shape is None else _product(x_shape)
    if not _known(size, k):
        return (-1, n_out)
    if size % k:
        raise invalid(f"{op}: input of {size} elements is not a whole number of rows of {k} (weight {list(w_shape)})")
    return (size // k, n_out)


def _check_full_connection_bias(op: str, b_shape, w_shape) -> None:
    size, n_out = _product(b_shape), w_shape[0]
    if _known(size, n_out) and size != n_out:
        raise invalid(f"{op}: bias has {size} elements, expected {n_out} (weight {list(w_shape)})")


@shape_rule("OH_NN_OPS_FULL_CONNECTION")
def _full_connection_shape(op, shapes, values, *, has_bias, use_axis, axis, **_):
    _check_bias_presence(op, len(shapes), has_bias)
    out_shape = _full_connection_dims(op, shapes[0], shapes[1], use_axis, axis)
    if has_bias and shapes[1] is not None and shapes[2] is not None:
        _check_full_connection_bias(op, shapes[2], shapes[1])
    return (out_shape,)
