"""The channel shuffle's transpose loop (numba)."""
from __future__ import annotations

from ..numba_cache import jit


@jit(nogil=True, boundscheck=False)
def swap(x, out):  # pragma: no cover (compiled): out[r, k, j] = x[r, j, k], reading x in order
    rows, a, b = x.shape
    for r in range(rows):
        src, dst = x[r], out[r]
        for j in range(a):
            for k in range(b):
                dst[k, j] = src[j, k]
    return out
