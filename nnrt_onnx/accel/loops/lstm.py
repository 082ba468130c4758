"""The LSTM step's two compiled parts (numba)."""
from __future__ import annotations

from ..numba_cache import jit


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def gates_in(gates, pre, s, scale):  # pragma: no cover (compiled): (recurrent + input part) * scale
    d_count, batch, width = gates.shape
    steps = pre.shape[1]
    for d in range(d_count):
        t = s if d == 0 else steps - 1 - s  # the backward direction reads the sequence from its end
        for b in range(batch):
            g = gates[d, b]
            p = pre[d, t, b]
            for k in range(width):
                g[k] = (g[k] + p[k]) * scale[k]

@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def cell(gates, c, gi, go, gf, gg):  # pragma: no cover (compiled): sigmoids from tanh, c = f * c + i * g
    d_count, batch, hidden = c.shape
    half = c.dtype.type(0.5)
    for d in range(d_count):
        for b in range(batch):
            g = gates[d, b]
            cc = c[d, b]
            for k in range(hidden):
                i = g[gi + k] * half + half
                f = g[gf + k] * half + half
                cc[k] = f * cc[k] + i * g[gg + k]
                g[go + k] = g[go + k] * half + half
