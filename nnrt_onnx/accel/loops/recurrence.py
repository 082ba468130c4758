"""Recurrences as one compiled loop over time (numba), no Python per time step: the LSTM layer's and the GRU's.

Module-level functions (numba's disk cache keys on them; a closure would be compiled again in every process),
imported on first use (``accel.recurrent``). Each step's recurrent product is a loop over the state's entries
adding ``h[k] * R[k, :]`` into the gates (the columns vectorise), then the gate arithmetic element by element with
libm's tanh/exp: within float32 rounding of the reference kernels (numpy's BLAS sums the product in another order,
numpy's SIMD tanh/exp round differently in the last bit), not bit-identical (``accel.contract``). No fast-math."""
from __future__ import annotations

import math

import numba

from ..numba_cache import cache_ok

_JIT = dict(cache=cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")


@numba.njit(**_JIT)
def _product(gates, pre, h, recur):  # pragma: no cover (compiled): gates = pre + h @ recur
    width = gates.shape[0]
    for j in range(width):
        gates[j] = pre[j]
    for k in range(h.shape[0]):
        hk = h[k]
        row = recur[k]
        for j in range(width):
            gates[j] += hk * row[j]


@numba.njit(**_JIT)
def lstm_layer(pre, recur, h, c, out, gates, gi, go, gf, gg):  # pragma: no cover (compiled)
    """One LSTM layer over its whole sequence, every direction: ``pre`` [D, T, B, 4H] (the input part of every
    step with both biases), ``recur`` [D, H, 4H] (R transposed), the state ``h``, ``c`` [D, B, H] updated in
    place, ``out`` [T, B, D, H] (direction 1 runs backwards), ``gates`` a [4H] scratch row; the gate blocks at
    offsets gi, go, gf, gg. ``sigmoid(v) = 0.5 * tanh(0.5 * v) + 0.5`` (the reference's form)."""
    directions, steps, batch, _ = pre.shape
    hidden = h.shape[2]
    half = pre.dtype.type(0.5)
    for d in range(directions):
        for s in range(steps):
            t = s if d == 0 else steps - 1 - s
            for b in range(batch):
                hb = h[d, b]
                cb = c[d, b]
                _product(gates, pre[d, t, b], hb, recur[d])
                for k in range(hidden):
                    i = math.tanh(gates[gi + k] * half) * half + half
                    o = math.tanh(gates[go + k] * half) * half + half
                    f = math.tanh(gates[gf + k] * half) * half + half
                    cell = f * cb[k] + i * math.tanh(gates[gg + k])
                    cb[k] = cell
                    gates[gg + k] = o * math.tanh(cell)  # (the new h, kept apart until every k is done)
                for k in range(hidden):
                    hb[k] = gates[gg + k]
                    out[t, b, d, k] = gates[gg + k]


@numba.njit(**_JIT)
def _sigmoid(v):  # pragma: no cover (compiled): the reference's where(v >= 0, 1 / (1 + e), e / (1 + e))
    e = math.exp(-abs(v))
    return 1 / (1 + e) if v >= 0 else e / (1 + e)


@numba.njit(**_JIT)
def gru_step(xz, xr, xh, h, rz, rr, rh, bh, linear_before_reset, out, scratch):  # pragma: no cover (compiled)
    """One GRU time step of an unrolled ONNX GRU (``onnx_import.handlers.recurrent``), batch rows ``h`` [B, H] ->
    ``out`` [B, H]: ``z = sigmoid(xz + h Rz)``, ``r = sigmoid(xr + h Rr)``, with ``linear_before_reset``
    ``c = tanh(xh + r * (h Rh + bh))`` else ``c = tanh(xh + (r * h) Rh)``, ``out = c + z * (h - c)``; ``bh``: [H]
    (zeros where the step has none), ``scratch`` [4, H]."""
    batch, hidden = h.shape
    z, r, hh, rhv = scratch[0], scratch[1], scratch[2], scratch[3]
    for b in range(batch):
        hb = h[b]
        _product(z, xz[b], hb, rz)
        _product(r, xr[b], hb, rr)
        for k in range(hidden):
            z[k] = _sigmoid(z[k])
            r[k] = _sigmoid(r[k])
        if linear_before_reset:
            for k in range(hidden):
                rhv[k] = 0
            _product(hh, rhv, hb, rh)
            for k in range(hidden):
                hh[k] = xh[b, k] + r[k] * (hh[k] + bh[k])
        else:
            for k in range(hidden):
                rhv[k] = r[k] * hb[k]
            _product(hh, xh[b], rhv, rh)
        ob = out[b]
        for k in range(hidden):
            cand = math.tanh(hh[k])
            ob[k] = cand + z[k] * (hb[k] - cand)
