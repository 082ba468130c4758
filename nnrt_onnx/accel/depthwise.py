"""Depthwise convolution, accelerated: the compiled 3x3 loop without a pad copy (AVX-512 vectors or numba), the
compiled general loop over a padded copy, else numpy's tap loop in cache-sized blocks of output rows; bias, the
plan's fused operations and the activation while a block is in cache."""
from __future__ import annotations

import numpy as np

from ..kernels import packed
from . import numba_loops
from .finish import Finish
from .workspace import padded, scratch

_DEPTHWISE_BLOCK_BYTES = 1 << 18  # output rows a depthwise tap loop keeps in cache


def depthwise_core(x, w, strides, dilation, pads, out_size, bias=None, activation=0, out=None, post=()):
    """Depthwise convolution (weight [C * mult, kH, kW, 1]) in blocks of output rows that stay in cache: for each
    block, the kernel taps in row-major order (``acc = x_tap0 * w_tap0; acc += x_tap * w_tap``), then the bias and
    the fused activation while the block is still in cache. The input is zero-padded once into a reused scratch
    array (0 * w adds nothing for a finite weight; a non-finite weight makes the padded outputs NaN, as a padded
    convolution does). Each tap's weights are tiled along the output width, so every multiply/add runs over whole
    (W, C) rows. A channel multiplier repeats the input channels once (output channel k reads input channel
    k // mult)."""
    o, kh, kw, _ = w.shape
    if o != x.shape[3]:
        x = np.repeat(x, o // x.shape[3], axis=3)
    n, _, _, c = x.shape
    s_h, s_w = strides
    d_h, d_w = dilation
    oh, ow = out_size
    if out is None:
        out = np.empty((n, oh, ow, c), dtype=x.dtype)
    taps = depthwise_taps(w)
    if numba_loops.depthwise_3x3(x, taps, bias, out, strides, dilation, pads, 0 if post else activation):  # no pad copy
        if post:
            Finish(None, post, activation)(out)
        return out
    xp = padded(x, pads, "dw_pad")
    if numba_loops.depthwise(xp, taps, bias, out, strides, dilation, 0 if post else activation):  # (numba)
        if post:
            Finish(None, post, activation)(out)
        return out
    wt = _tiled_taps(w, ow)  # [kH, kW, OW, C]
    finish = Finish(bias, post, activation)
    rows = max(1, _DEPTHWISE_BLOCK_BYTES // max(1, n * ow * c * x.dtype.itemsize))
    tmp_full = scratch("dw_tmp", (n, min(rows, oh), ow, c), x.dtype)
    for r0 in range(0, oh, rows):
        r1 = min(oh, r0 + rows)
        acc = out[:, r0:r1]
        tmp = tmp_full[:, : r1 - r0]
        first = True
        for i in range(kh):
            top = r0 * s_h + i * d_h
            band = xp[:, top: top + (r1 - r0 - 1) * s_h + 1: s_h]
            for j in range(kw):
                src = band[:, :, j * d_w: j * d_w + (ow - 1) * s_w + 1: s_w]
                if first:
                    np.multiply(src, wt[i, j], out=acc)
                    first = False
                else:
                    np.multiply(src, wt[i, j], out=tmp)
                    np.add(acc, tmp, out=acc)
        finish(acc, (slice(None), slice(r0, r1)))
    return out


def _tiled_taps(w, ow):
    """Depthwise weights [C, kH, kW, 1] as [kH, kW, OW, C]: each tap's channel weights repeated along the width."""
    o, kh, kw, _ = w.shape
    return np.ascontiguousarray(np.broadcast_to(w[:, :, :, 0].transpose(1, 2, 0)[:, :, None], (kh, kw, ow, o)))


# Winograd F(2x2, 3x3) (Lavin & Gray 2015): a 2x2 output tile from a 4x4 input tile with 16 multiplies per


def depthwise_taps(w: np.ndarray) -> np.ndarray:
    """Depthwise weights [C, kH, kW, 1] as [kH, kW, C] (made once per constant weight)."""
    return packed(w, "depthwise_taps", lambda a: np.ascontiguousarray(a[:, :, :, 0].transpose(1, 2, 0)))


__all__ = ["depthwise_core", "depthwise_taps"]
