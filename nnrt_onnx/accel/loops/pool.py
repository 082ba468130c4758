"""The max and average pooling loop (numba), one pass over the output."""
from __future__ import annotations

from ..numba_cache import jit


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy", inline="always")
def _max_row(x, out_row, top, i0, i1, s_w, pl, k_w, fill, nan_skips):  # pragma: no cover (compiled)
    # One output row, kernel rows outermost: the input row a kernel row reads stays in L1 while every window
    # of the row takes it (0.77-1.06x the time of window by window, interleaved on a noisy machine: no slower,
    # sometimes faster; docs/performance.md fifth round). Per window the cells still come in row-major
    # order: the first copied, then a select per later cell, which the channel loop vectorises: a greater cell
    # wins (a tie keeps the earlier cell, a NaN cell never wins), and a NaN maximum gives way to any cell where
    # ``nan_skips`` (both strides 1) -- the reference kernel's rule (kernels.pool): NaN only for a window of NaN
    # only; else a NaN first cell stays.
    w, c = x.shape[1], x.shape[2]
    ow = out_row.shape[0]
    for q in range(ow):
        left = q * s_w - pl
        j0, j1 = max(0, -left), min(k_w, w - left)
        acc = out_row[q]
        if i1 <= i0 or j1 <= j0:  # no cell inside
            for ch in range(c):
                acc[ch] = fill
            continue
        src = x[top + i0, left + j0]
        for ch in range(c):
            acc[ch] = src[ch]
    for i in range(i0, i1):
        row = x[top + i]
        for q in range(ow):
            left = q * s_w - pl
            j0, j1 = max(0, -left), min(k_w, w - left)
            acc = out_row[q]
            for j in range(j0, j1):
                if i == i0 and j == j0:
                    continue
                src = row[left + j]
                for ch in range(c):
                    v = src[ch]
                    a = acc[ch]
                    acc[ch] = v if (v > a) | (nan_skips & (a != a)) else a

@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def pool_loop(x, out, k_h, k_w, s_h, s_w, pt, pl, is_max, start_at_zero, fill):  # pragma: no cover
    n, h, w, c = x.shape
    _, oh, ow, _ = out.shape
    for b in range(n):
        for r in range(oh):
            top = r * s_h - pt
            i0, i1 = max(0, -top), min(k_h, h - top)
            if is_max:
                _max_row(x[b], out[b, r], top, i0, i1, s_w, pl, k_w, fill, s_h == 1 and s_w == 1)
                continue
            for q in range(ow):
                left = q * s_w - pl
                j0, j1 = max(0, -left), min(k_w, w - left)
                acc = out[b, r, q]
                if i1 <= i0 or j1 <= j0:  # no cell inside: an average of nothing (0 / 0)
                    for ch in range(c):
                        acc[ch] = fill
                    continue
                first = True
                for i in range(i0, i1):
                    for j in range(j0, j1):
                        src = x[b, top + i, left + j]
                        if first:
                            if not start_at_zero:
                                for ch in range(c):
                                    acc[ch] = src[ch]
                            else:
                                for ch in range(c):
                                    acc[ch] = out.dtype.type(0) + src[ch]
                            first = False
                        else:
                            for ch in range(c):
                                acc[ch] = acc[ch] + src[ch]
                count = out.dtype.type((i1 - i0) * (j1 - j0))
                for ch in range(c):
                    acc[ch] = acc[ch] / count
    return out
