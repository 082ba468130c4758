"""The ERF loop and the fused exact GELU's loop (numba), both with erf's float64 evaluation verbatim."""
from __future__ import annotations

import numpy as np

from ..numba_cache import jit
from .shared import erf_value


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def erf_loop(x, out):  # pragma: no cover (compiled)
    for k in range(x.size):
        out[k] = np.float32(erf_value(np.float64(x[k])))
    return out


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def gelu_loop(x, out, d, a, m):  # pragma: no cover (compiled): (x * (erf(x / d) + a)) * m
    for k in range(x.size):
        xk = x[k]
        e = np.float32(erf_value(np.float64(xk / d)))  # the DIV in float32, then the ERF loop's evaluation
        out[k] = (xk * (e + a)) * m
    return out
