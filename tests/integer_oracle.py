"""Exact integer arithmetic for the expected values of quantized ONNX ops, written from the ONNX spec.

Why not onnxruntime: its u8s8/s8s8 integer GEMM and convolution kernels multiply-add byte pairs into int16 on AVX2
CPUs without VNNI, which saturates (255 * 127 * 2 > 32767); the result depends on the CPU that runs the test.
Everything here accumulates in int64 (and checks the int32 range the ONNX ops declare), then requantizes by the
rule the NNRt header and ``onnx.reference`` use: ``q = saturate(round_half_even(acc * M + zero_point))`` with
``M = x_scale * w_scale / y_scale`` formed in float32, as the ONNX scales are float32 tensors.

No import of onnxruntime or of nnrt_onnx here (a test checks it): this module is an oracle, not a copy.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

INT32 = np.iinfo(np.int32)


def _as_int64(array, zero_point=None, axis: int | None = None) -> np.ndarray:
    value = np.asarray(array).astype(np.int64)
    if zero_point is None:
        return value
    zp = np.asarray(zero_point).astype(np.int64)
    if zp.ndim == 1 and zp.size > 1:
        shape = [1] * value.ndim
        shape[0 if axis is None else axis] = zp.size
        zp = zp.reshape(shape)
    return value - zp


def _checked_int32(acc: np.ndarray) -> np.ndarray:
    if acc.size and (acc.min() < INT32.min or acc.max() > INT32.max):
        raise OverflowError("the exact accumulation leaves int32 (the ONNX op's output type)")
    return acc.astype(np.int32)


def conv_accumulate(x, w, x_zero_point=None, w_zero_point=None, strides: Sequence[int] = (1, 1),
                    pads: Sequence[int] = (0, 0, 0, 0), dilations: Sequence[int] = (1, 1), group: int = 1,
                    bias=None) -> np.ndarray:
    """ConvInteger / the int32 accumulator of QLinearConv: NCHW ``x`` [N, C, H, W], ``w`` [M, C/group, kH, kW];
    ``pads`` = [top, left, bottom, right] (ONNX order); per-output-channel ``w_zero_point`` allowed. Zero padding
    is applied to ``x - x_zero_point`` (the ONNX definition: padded positions contribute nothing)."""
    xs = _as_int64(x, x_zero_point)
    ws = _as_int64(w, w_zero_point, axis=0)
    n, c, h, width = xs.shape
    m, c_per_group, kh, kw = ws.shape
    top, left, bottom, right = pads
    padded = np.zeros((n, c, h + top + bottom, width + left + right), np.int64)
    padded[:, :, top:top + h, left:left + width] = xs
    sh, sw = strides
    dh, dw = dilations
    out_h = (padded.shape[2] - (dh * (kh - 1) + 1)) // sh + 1
    out_w = (padded.shape[3] - (dw * (kw - 1) + 1)) // sw + 1
    out = np.zeros((n, m, out_h, out_w), np.int64)
    m_per_group = m // group
    for g in range(group):
        xg = padded[:, g * c_per_group:(g + 1) * c_per_group]
        wg = ws[g * m_per_group:(g + 1) * m_per_group]
        for i in range(kh):  # one exact int64 product per kernel tap
            for j in range(kw):
                window = xg[:, :, i * dh:i * dh + sh * (out_h - 1) + 1:sh, j * dw:j * dw + sw * (out_w - 1) + 1:sw]
                out[:, g * m_per_group:(g + 1) * m_per_group] += np.einsum("nchw,mc->nmhw", window, wg[:, :, i, j])
    if bias is not None:
        out += np.asarray(bias).astype(np.int64).reshape(1, -1, 1, 1)
    return _checked_int32(out)


def matmul_accumulate(a, b, a_zero_point=None, b_zero_point=None) -> np.ndarray:
    """MatMulInteger / the int32 accumulator of QLinearMatMul (scalar zero points, or per-row of ``a`` [M] /
    per-column of ``b`` [N] as the MatMulInteger spec allows)."""
    a64 = np.asarray(a).astype(np.int64)
    b64 = np.asarray(b).astype(np.int64)
    if a_zero_point is not None:
        azp = np.asarray(a_zero_point).astype(np.int64)
        a64 = a64 - (azp.reshape(-1, 1) if azp.ndim == 1 and azp.size > 1 else azp)
    if b_zero_point is not None:
        b64 = b64 - np.asarray(b_zero_point).astype(np.int64)
    return _checked_int32(np.matmul(a64, b64))


def requantize(acc, x_scale, w_scale, y_scale, y_zero_point, channel_axis: int = 1) -> np.ndarray:
    """``saturate(round_half_even(acc * (x_scale * w_scale / y_scale) + y_zero_point))`` in y_zero_point's type;
    a 1-D ``w_scale`` applies per output channel along ``channel_axis``."""
    multiplier = np.float32(x_scale) * np.asarray(w_scale, np.float32) / np.float32(y_scale)
    acc64 = np.asarray(acc).astype(np.float64)
    if multiplier.ndim == 1 and multiplier.size > 1:
        shape = [1] * acc64.ndim
        shape[channel_axis] = multiplier.size
        multiplier = multiplier.reshape(shape)
    zp = np.asarray(y_zero_point)
    info = np.iinfo(zp.dtype)
    real = acc64 * multiplier.astype(np.float64) + float(zp)
    return np.clip(np.rint(real), info.min, info.max).astype(zp.dtype)


def quantize_linear(x, scale, zero_point, axis: int = 1) -> np.ndarray:
    """ONNX QuantizeLinear: ``saturate(round_half_even(x / scale) + zero_point)`` (the division in float32)."""
    x32 = np.asarray(x, np.float32)
    scale32 = np.asarray(scale, np.float32)
    zp = np.asarray(zero_point)
    if scale32.ndim == 1 and scale32.size > 1:
        shape = [1] * x32.ndim
        shape[axis] = scale32.size
        scale32, zp_b = scale32.reshape(shape), zp.reshape(shape)
    else:
        zp_b = zp
    info = np.iinfo(zp.dtype)
    q = np.rint(x32 / scale32).astype(np.int64) + zp_b.astype(np.int64)
    return np.clip(q, info.min, info.max).astype(zp.dtype)


def dynamic_quantize_linear(x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX DynamicQuantizeLinear (uint8): (y, y_scale, y_zero_point), from the formulas of its spec."""
    x32 = np.asarray(x, np.float32)
    low = min(float(x32.min()), 0.0) if x32.size else 0.0
    high = max(float(x32.max()), 0.0) if x32.size else 0.0
    scale = np.float32((np.float32(high) - np.float32(low)) / np.float32(255))
    zero = np.uint8(np.rint(np.clip(np.float32(0) - np.float32(low) / scale, 0, 255))) if scale else np.uint8(0)
    if not scale:  # all zeros: the spec's formula divides 0 by 0; onnxruntime's kernel takes scale 1.0 (the
        # reference evaluator 1/255): the data quantizes to the zero point 0 either way
        return np.zeros(x32.shape, np.uint8), np.float32(1.0), np.uint8(0)
    return quantize_linear(x32, scale, zero), scale, zero
