"""Inline pieces the numba loops share: the fused activation (``clamp``), erf's float64 rational evaluation
(``erf_value``) and one row's finish (``finish_row``)."""
from __future__ import annotations

from ...kernels.elementwise import ERF_COEFFICIENTS
from ..numba_cache import jit

# erf's rational coefficients, frozen into the compiled code (the cache key covers the file they come from)
P0, P1, P2, P3, P4, P5, P6 = ERF_COEFFICIENTS[0]
Q1, Q2, Q3, Q4, Q5 = ERF_COEFFICIENTS[1][1:]


@jit(nogil=True, fastmath=False, error_model="numpy", inline="always")
def clamp(v, activation, zero, six):  # pragma: no cover (compiled)
    """The fused activation both depthwise loops apply: 0 none, 1 ReLU (NaN stays NaN), 2 ReLU6."""
    if activation == 1:
        return v if v > zero else (zero if v <= zero else v)
    if activation == 2:
        if v < zero:
            return zero
        if v > six:
            return six
    return v


@jit(nogil=True, fastmath=False, error_model="numpy", inline="always")
def erf_value(v):  # pragma: no cover (compiled)
    """The float64 rational evaluation of erf on [-4, 4] (outside: clamped) that every compiled loop shares: the
    numpy path's operations in the same order (bit-identical)."""
    if v < -4.0:
        v = -4.0
    elif v > 4.0:
        v = 4.0
    t = v * v
    p = t * P6
    p = (p + P5) * t
    p = (p + P4) * t
    p = (p + P3) * t
    p = (p + P2) * t
    p = (p + P1) * t
    p = p + P0
    q = t * Q5
    q = (q + Q4) * t
    q = (q + Q3) * t
    q = (q + Q2) * t
    q = (q + Q1) * t
    q = q + 1.0
    return (p * v) / q


@jit(nogil=True, fastmath=False, error_model="numpy", inline="always")
def finish_row(row, vectors, kinds, activation, addend_row):  # pragma: no cover (compiled)
    """The in-place tail both per-row loops share: each post operation (kind 0 multiply by its vector, 1 add its
    vector, 2 add ``addend_row``: a residual tensor's row), then the activation (its branch outside the channel
    loops, so they vectorise)."""
    c = row.shape[0]
    zero, six = row.dtype.type(0), row.dtype.type(6)
    for p in range(kinds.shape[0]):
        vector = vectors[p]
        if kinds[p] == 0:
            for ch in range(c):
                row[ch] = row[ch] * vector[ch]
        elif kinds[p] == 1:
            for ch in range(c):
                row[ch] = row[ch] + vector[ch]
        else:
            for ch in range(c):
                row[ch] = row[ch] + addend_row[ch]
    if activation == 1:
        for ch in range(c):
            row[ch] = clamp(row[ch], 1, zero, six)
    elif activation == 2:
        for ch in range(c):
            row[ch] = clamp(row[ch], 2, zero, six)
