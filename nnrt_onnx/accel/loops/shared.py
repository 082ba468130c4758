"""Inline pieces the numba loops share: the fused activation (``clamp``), erf's float64 rational evaluation
(``erf_value``) and one row's finish (``finish_row``)."""
from __future__ import annotations

from ...kernels.elementwise import ERF_COEFFICIENTS
from ..numba_cache import cache_ok as _cache_ok


def build_clamp(numba):
    """The fused activation both depthwise loops apply: 0 none, 1 ReLU (NaN stays NaN), 2 ReLU6."""
    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, error_model="numpy", inline="always")
    def clamp(v, activation, zero, six):  # pragma: no cover (compiled)
        if activation == 1:
            return v if v > zero else (zero if v <= zero else v)
        if activation == 2:
            if v < zero:
                return zero
            if v > six:
                return six
        return v

    return clamp


def build_erf_value(numba):
    """The float64 rational evaluation of erf on [-4, 4] (outside: clamped) that every compiled loop shares: the
    numpy path's operations in the same order (bit-identical)."""
    p0, p1, p2, p3, p4, p5, p6 = ERF_COEFFICIENTS[0]
    q1, q2, q3, q4, q5 = ERF_COEFFICIENTS[1][1:]

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, error_model="numpy", inline="always")
    def erf_value(v):  # pragma: no cover (compiled)
        if v < -4.0:
            v = -4.0
        elif v > 4.0:
            v = 4.0
        t = v * v
        p = t * p6
        p = (p + p5) * t
        p = (p + p4) * t
        p = (p + p3) * t
        p = (p + p2) * t
        p = (p + p1) * t
        p = p + p0
        q = t * q5
        q = (q + q4) * t
        q = (q + q3) * t
        q = (q + q2) * t
        q = (q + q1) * t
        q = q + 1.0
        return (p * v) / q

    return erf_value


def build_finish_row(numba):
    """The in-place tail both per-row loops share: each post operation (kind 0 multiply by its vector, 1 add its
    vector, 2 add ``addend_row``: a residual tensor's row), then the activation (its branch outside the channel
    loops, so they vectorise)."""
    clamp = build_clamp(numba)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, error_model="numpy", inline="always")
    def finish_row(row, vectors, kinds, activation, addend_row):  # pragma: no cover (compiled)
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

    return finish_row

