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
from . import OpContext, kernel
from ._common import _FLOAT_KINDS, _INT_KINDS, _axis_index, _work_dtype

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
        ax = _axis_index(op, axis, x.ndim, allow_end=True)
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
