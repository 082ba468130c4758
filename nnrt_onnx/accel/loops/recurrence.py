"""Recurrences as one compiled loop over time (numba), no Python per time step: the LSTM layer's and the GRU's.

Module-level functions (numba's disk cache keys on them; a closure would be compiled again in every process),
imported on first use (``accel.recurrent``); float32 only. Each step's recurrent product is a loop over the
state's entries adding ``h[k] * R[k, :]`` into the gates (the columns vectorise), then the gate arithmetic in
loops over the hidden units with :func:`tanh`, a rational approximation (Eigen's and onnxruntime's MLAS form:
max 3.4e-7 relative error against float64 on [-12, 12], NaN and +-inf kept) that vectorises: libm's tanhf is a
scalar call of ~19 ns, 60x the loop's 0.3 ns per value, and it was 90% of a small LSTM's time. Within float32
rounding of the reference kernels, not bit-identical (``accel.contract``). No fast-math."""
from __future__ import annotations

import numpy as np

from ..numba_cache import jit

_JIT = dict(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
_INLINE = dict(_JIT, inline="always")  # (helpers compiled into their callers: no kernels of their own)
_F32 = np.float32
_CLAMP = _F32(7.90531110763549805)  # tanh is 1 - 2e-7 there: float32's 1 beyond
_P = tuple(_F32(v) for v in (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
                             5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03))
_Q = tuple(_F32(v) for v in (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03))
_HALF = _F32(0.5)


@jit(**_INLINE)
def tanh(x):  # pragma: no cover (compiled): the module doc's rational tanh of a float32
    v = _CLAMP if x > _CLAMP else x  # (comparisons are false for NaN: it goes through as NaN)
    v = -_CLAMP if v < -_CLAMP else v
    x2 = v * v
    p = x2 * _P[0] + _P[1]
    p = x2 * p + _P[2]
    p = x2 * p + _P[3]
    p = x2 * p + _P[4]
    p = x2 * p + _P[5]
    p = x2 * p + _P[6]
    q = x2 * _Q[0] + _Q[1]
    q = x2 * q + _Q[2]
    q = x2 * q + _Q[3]
    return v * p / q


@jit(**_INLINE)
def sigmoid(x):  # pragma: no cover (compiled): 0.5 * tanh(0.5 * x) + 0.5
    return tanh(x * _HALF) * _HALF + _HALF


@jit(**_INLINE)
def _product(gates, pre, h, recur):  # pragma: no cover (compiled): gates = pre + h @ recur
    width = gates.shape[0]
    count = h.shape[0]
    for j in range(width):
        gates[j] = pre[j]
    quads = count - count % 4
    for k in range(0, quads, 4):  # four rows per pass over the gates: a quarter of their loads and stores
        h0, h1, h2, h3 = h[k], h[k + 1], h[k + 2], h[k + 3]
        r0, r1, r2, r3 = recur[k], recur[k + 1], recur[k + 2], recur[k + 3]
        for j in range(width):
            gates[j] += (h0 * r0[j] + h1 * r1[j]) + (h2 * r2[j] + h3 * r3[j])
    for k in range(quads, count):
        hk = h[k]
        row = recur[k]
        for j in range(width):
            gates[j] += hk * row[j]


@jit(**_JIT)
def lstm_layer(pre, recur, h, c, out, gates, gi, go, gf, gg):  # pragma: no cover (compiled)
    """One LSTM layer over its whole sequence, every direction: ``pre`` [D, T, B, 4H] (the input part of every
    step with both biases), ``recur`` [D, H, 4H] (R transposed), the state ``h``, ``c`` [D, B, H] updated in
    place, ``out`` [T, B, D, H] (direction 1 runs backwards), ``gates`` a [4H] scratch row; the gate blocks at
    offsets gi, go, gf, gg."""
    directions, steps, batch, _ = pre.shape
    hidden = h.shape[2]
    for d in range(directions):
        for s in range(steps):
            t = s if d == 0 else steps - 1 - s
            for b in range(batch):
                hb = h[d, b]
                cb = c[d, b]
                _product(gates, pre[d, t, b], hb, recur[d])
                i_, o_, f_, g_ = gates[gi:gi + hidden], gates[go:go + hidden], gates[gf:gf + hidden], \
                    gates[gg:gg + hidden]
                for k in range(hidden):
                    cell = sigmoid(f_[k]) * cb[k] + sigmoid(i_[k]) * tanh(g_[k])
                    cb[k] = cell
                    hb[k] = sigmoid(o_[k]) * tanh(cell)
                ob = out[t, b, d]
                for k in range(hidden):
                    ob[k] = hb[k]


@jit(**_JIT)
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
            z[k] = sigmoid(z[k])
            r[k] = sigmoid(r[k])
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
            cand = tanh(hh[k])
            ob[k] = cand + z[k] * (hb[k] - cand)


@jit(**_JIT)
def gru_sequence(xz, xr, xh, h0, rz, rr, rh, bh, linear_before_reset, out, scratch):  # pragma: no cover (compiled)
    """:func:`gru_step` over a chain of time steps: ``xz``, ``xr``, ``xh`` [T, B, H] the steps' gate inputs in the
    chain's order, ``h0`` [B, H] the state before it, ``out`` [T, B, H] the states after each step."""
    for t in range(xz.shape[0]):
        gru_step(xz[t], xr[t], xh[t], h0 if t == 0 else out[t - 1], rz, rr, rh, bh, linear_before_reset, out[t],
                 scratch)


@jit(**_JIT)
def gru_sequence_rows(pz, pr, ph, start, stride, h0, rz, rr, rh, bh, linear_before_reset, out,
                      scratch):  # pragma: no cover (compiled)
    """:func:`gru_sequence` reading the steps' gate inputs straight from the input projections ``pz``, ``pr``,
    ``ph`` [T', B, H]: time step t of the chain reads their row ``start + t * stride`` (a reverse recurrence runs
    its rows backwards), so nothing is stacked per run."""
    for t in range(out.shape[0]):
        row = start + t * stride
        gru_step(pz[row], pr[row], ph[row], h0 if t == 0 else out[t - 1], rz, rr, rh, bh, linear_before_reset,
                 out[t], scratch)
