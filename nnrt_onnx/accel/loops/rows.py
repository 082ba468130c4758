"""Softmax's and layer norm's row loops (numba): float64 partial sums, running maxima."""
from __future__ import annotations

import numpy as np

from ..numba_cache import cache_ok as _cache_ok

_SOFTMAX_LANES = 16  # running maxima and float64 partial sums per row: one vector's worth, so the loops vectorise


def build_softmax(numba):
    lanes_count = _SOFTMAX_LANES

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def shift_rows(x, out, lanes):  # pragma: no cover (compiled): out = x - max(x) per row (NaN wins, as np.max)
        rows, n = x.shape
        for r in range(rows):
            xr = x[r]
            # 16 running maxima, each a select that keeps a NaN (the loop over them vectorises), then their max
            if n >= lanes_count:
                for j in range(lanes_count):
                    lanes[j] = xr[j]
                k = lanes_count
                while k + lanes_count <= n:
                    for j in range(lanes_count):
                        v, a = xr[k + j], lanes[j]
                        lanes[j] = v if (v > a or v != v) else a
                    k += lanes_count
                m = lanes[0]
                for j in range(1, lanes_count):
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

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def normalise_rows(e, sums):  # pragma: no cover (compiled): e /= sum(e) per row (the sum in float64)
        rows, n = e.shape
        for r in range(rows):
            er = e[r]
            # 16 float64 partial sums (no serial chain of dependent adds; the loop over them vectorises)
            for j in range(lanes_count):
                sums[j] = 0.0
            k = 0
            while k + lanes_count <= n:
                for j in range(lanes_count):
                    sums[j] += er[k + j]
                k += lanes_count
            total = 0.0
            while k < n:
                total += er[k]
                k += 1
            for j in range(lanes_count):
                total += sums[j]
            inv = e.dtype.type(total)
            for k in range(n):
                er[k] = er[k] / inv
        return e

    def softmax_rows(x, out):
        shift_rows(x, out, np.empty(lanes_count, x.dtype))
        np.exp(out, out=out)  # numpy's SIMD exp: faster than a compiled scalar loop calling libm
        return normalise_rows(out, np.empty(lanes_count, np.float64))

    return softmax_rows


def build_layer_norm(numba):
    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
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
            t0 = t1 = t2 = t3 = 0.0
            k = 0
            while k + 4 <= n:
                d0, d1, d2, d3 = np.float64(o[k]), np.float64(o[k + 1]), np.float64(o[k + 2]), np.float64(o[k + 3])
                t0 += d0 * d0
                t1 += d1 * d1
                t2 += d2 * d2
                t3 += d3 * d3
                k += 4
            while k < n:
                d0 = np.float64(o[k])
                t0 += d0 * d0
                k += 1
            squares = (t0 + t1) + (t2 + t3)
            std = out.dtype.type(np.sqrt(out.dtype.type(squares / n) + eps))
            for k in range(n):
                out[r, k] = out[r, k] / std * gamma[k] + beta[k]
        return out

    return layer_norm_rows

