"""The depthwise convolution loops (numba): the general loop over a padded input and the 3x3 loop reading the
unpadded one."""
from __future__ import annotations

import numpy as np

from ..numba_cache import jit
from .shared import clamp


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def depthwise_loop(xp, wt, bias, out, s_h, s_w, d_h, d_w, activation, has_bias):  # pragma: no cover (compiled)
    n, oh, ow, c = out.shape
    kh, kw = wt.shape[0], wt.shape[1]
    zero = out.dtype.type(0)
    six = out.dtype.type(6)
    for b in range(n):
        for r in range(oh):
            for q in range(ow):
                acc = out[b, r, q]
                row, col = r * s_h, q * s_w
                for ch in range(c):
                    acc[ch] = xp[b, row, col, ch] * wt[0, 0, ch]
                for i in range(kh):
                    for j in range(kw):
                        if i == 0 and j == 0:
                            continue
                        src = xp[b, row + i * d_h, col + j * d_w]
                        wij = wt[i, j]
                        for ch in range(c):
                            acc[ch] = acc[ch] + src[ch] * wij[ch]
                if has_bias:
                    for ch in range(c):
                        acc[ch] = acc[ch] + bias[ch]
                if activation:
                    for ch in range(c):
                        acc[ch] = clamp(acc[ch], activation, zero, six)
    return out


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def depthwise_3x3(x, wt, bias, out, s_h, s_w, d_h, d_w, pt, pl, activation, has_bias):  # pragma: no cover
    # the general loop's operations in the same order (nine taps row-major from the first product, then the
    # bias, then the activation), but one channel at a time through all nine taps: the sum stays in a
    # register and the channel loop vectorises; taps in the padding read a vector of +0.0 (what the padded
    # copy holds), so the input is never copied
    n, oh, ow, c = out.shape
    h, w = x.shape[1], x.shape[2]
    zero = out.dtype.type(0)
    six = out.dtype.type(6)
    zc = np.zeros(c, out.dtype)
    w00, w01, w02 = wt[0, 0], wt[0, 1], wt[0, 2]
    w10, w11, w12 = wt[1, 0], wt[1, 1], wt[1, 2]
    w20, w21, w22 = wt[2, 0], wt[2, 1], wt[2, 2]
    for b in range(n):
        for r in range(oh):
            r0 = r * s_h - pt
            r1, r2 = r0 + d_h, r0 + 2 * d_h
            v0, v1, v2 = 0 <= r0 < h, 0 <= r1 < h, 0 <= r2 < h
            x0, x1, x2 = x[b, r0 if v0 else 0], x[b, r1 if v1 else 0], x[b, r2 if v2 else 0]
            for q in range(ow):
                c0 = q * s_w - pl
                c1, c2 = c0 + d_w, c0 + 2 * d_w
                u0, u1, u2 = 0 <= c0 < w, 0 <= c1 < w, 0 <= c2 < w
                a00 = x0[c0] if v0 and u0 else zc
                a01 = x0[c1] if v0 and u1 else zc
                a02 = x0[c2] if v0 and u2 else zc
                a10 = x1[c0] if v1 and u0 else zc
                a11 = x1[c1] if v1 and u1 else zc
                a12 = x1[c2] if v1 and u2 else zc
                a20 = x2[c0] if v2 and u0 else zc
                a21 = x2[c1] if v2 and u1 else zc
                a22 = x2[c2] if v2 and u2 else zc
                acc = out[b, r, q]
                for ch in range(c):
                    v = a00[ch] * w00[ch] + a01[ch] * w01[ch] + a02[ch] * w02[ch]
                    v = v + a10[ch] * w10[ch] + a11[ch] * w11[ch] + a12[ch] * w12[ch]
                    v = v + a20[ch] * w20[ch] + a21[ch] * w21[ch] + a22[ch] * w22[ch]
                    if has_bias:
                        v = v + bias[ch]
                    acc[ch] = clamp(v, activation, zero, six)
    return out
