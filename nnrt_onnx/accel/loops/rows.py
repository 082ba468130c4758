"""Softmax's and layer norm's row loops (numba): float64 partial sums, running maxima."""
from __future__ import annotations

import numpy as np

from ..numba_cache import jit

LANES = 16  # running maxima and float64 partial sums per row: one vector's worth, so the loops vectorise


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def shift_rows(x, out, lanes):  # pragma: no cover (compiled): out = x - max(x) per row (NaN wins, as np.max)
    rows, n = x.shape
    for r in range(rows):
        xr = x[r]
        # 16 running maxima, each a select that keeps a NaN (the loop over them vectorises), then their max
        if n >= LANES:
            for j in range(LANES):
                lanes[j] = xr[j]
            k = LANES
            while k + LANES <= n:
                for j in range(LANES):
                    v, a = xr[k + j], lanes[j]
                    lanes[j] = v if (v > a or v != v) else a
                k += LANES
            m = lanes[0]
            for j in range(1, LANES):
                v = lanes[j]
                m = v if (v > m or v != v) else m
        else:
            m, k = xr[0], 1
        while k < n:
            v = xr[k]
            m = v if (v > m or v != v) else m
            k += 1
        o = out[r]
        for k in range(n):
            o[k] = xr[k] - m
    return out

@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def normalise_rows(e, sums):  # pragma: no cover (compiled): e /= sum(e) per row (the sum in float64)
    rows, n = e.shape
    for r in range(rows):
        er = e[r]
        # 16 float64 partial sums (no serial chain of dependent adds; the loop over them vectorises)
        for j in range(LANES):
            sums[j] = 0.0
        k = 0
        while k + LANES <= n:
            for j in range(LANES):
                sums[j] += er[k + j]
            k += LANES
        total = 0.0
        while k < n:
            total += er[k]
            k += 1
        for j in range(LANES):
            total += sums[j]
        inv = e.dtype.type(total)
        for k in range(n):
            er[k] = er[k] / inv
    return e

def softmax_rows(x, out):
    """Softmax of each row of ``x`` into ``out`` (both [R, N], C-contiguous)."""
    shift_rows(x, out, np.empty(LANES, x.dtype))
    np.exp(out, out=out)  # numpy's SIMD exp: faster than a compiled scalar loop calling libm
    return normalise_rows(out, np.empty(LANES, np.float64))


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def layer_norm_rows(x, gamma, beta, eps, out):  # pragma: no cover (compiled)
    rows, n = x.shape
    for r in range(rows):
        xr = x[r]
        o = out[r]
        # four float64 partial sums per pass: no serial chain of dependent adds
        t0 = t1 = t2 = t3 = 0.0
        k = 0
        while k + 4 <= n:
            t0 += xr[k]
            t1 += xr[k + 1]
            t2 += xr[k + 2]
            t3 += xr[k + 3]
            k += 4
        while k < n:
            t0 += xr[k]
            k += 1
        mean = out.dtype.type(((t0 + t1) + (t2 + t3)) / n)
        for k in range(n):
            o[k] = xr[k] - mean
        # the squares in the input's dtype, summed in float64 -- the reference's np.square then float64 sum: a
        # float32 square of a deviation past 1.8e19 overflows there too (the spec's float32 stash, onnxruntime)
        t0 = t1 = t2 = t3 = 0.0
        k = 0
        while k + 4 <= n:
            d0, d1, d2, d3 = o[k], o[k + 1], o[k + 2], o[k + 3]
            t0 += np.float64(d0 * d0)
            t1 += np.float64(d1 * d1)
            t2 += np.float64(d2 * d2)
            t3 += np.float64(d3 * d3)
            k += 4
        while k < n:
            d0 = o[k]
            t0 += np.float64(d0 * d0)
            k += 1
        squares = (t0 + t1) + (t2 + t3)
        std = out.dtype.type(np.sqrt(out.dtype.type(squares / n) + eps))
        for k in range(n):
            out[r, k] = out[r, k] / std * gamma[k] + beta[k]
    return out
