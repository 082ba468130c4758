"""LSTM accelerated: float32 layers as one compiled loop over time (``loops.recurrence.lstm_layer``: the recurrent
product and the gates per step without Python; issue 27), within float32 rounding of
``kernels.recurrent.lstm_forward`` (``accel.contract``). Without zoneout only; else, for float16, and without numba,
the reference kernel."""
from __future__ import annotations

import functools

import numpy as np

from ..kernels import packed, specialiser
from ..kernels.recurrent import GATE_ROWS, lstm_operands, transposed_stack
from . import numba_loops


def lstm(general, *inputs, **params):
    """The LSTM kernel's operands checked by the reference (``lstm_operands``), then :func:`lstm_sequence` (float32:
    one compiled loop over time per layer) where it runs, else ``general`` (the reference kernel with its
    keywords)."""
    (x, w_ih, w_hh, b, h0, c0), (directions, layers, zc, zh) = lstm_operands(*inputs, **params)
    loops = recurrence_loops() if x.dtype == np.float32 else None
    if zc or zh or not x.size or loops is None:
        return general(*inputs)
    return lstm_sequence(loops.lstm_layer, x, w_ih, w_hh, b, h0, c0, directions, layers)


def recurrence_loops():
    """The module of the compiled recurrences (``loops.recurrence``, imported on first use), or None without numba
    or with ``NNRT_ONNX_NUMBA=0``."""
    if not numba_loops.enabled():
        return None
    from .loops import recurrence

    return recurrence


def lstm_sequence(layer_loop, x, w_ih, w_hh, b, h0, c0, directions: int, layers: int):
    """``kernels.recurrent.lstm_forward`` without zoneout or projection: per layer the input part of every step as
    one GEMM (numpy), then the whole sequence in one compiled loop (``loops.recurrence.lstm_layer``): no Python per
    time step. Within float32 rounding of the reference (``accel.contract``)."""
    return _run_layers(layer_loop, _layer_operands(w_ih, w_hh, b, directions, layers), x, h0, c0, directions,
                       w_ih.shape[1] // 4)


def _layer_operands(w_ih, w_hh, b, directions: int, layers: int):
    """Per layer: (its directions' indices, W_ih^T [D, in, 4H], W_hh^T [D, H, 4H] contiguous, bias [D, 1, 4H] or
    None)."""
    w_ih_t = packed(w_ih, "lstm_t", transposed_stack)
    w_hh_t = packed(w_hh, "lstm_t", transposed_stack)
    result = []
    for layer in range(layers):
        idx = layer * directions + np.arange(directions)
        here = slice(layer * directions, (layer + 1) * directions)
        result.append((idx, w_ih_t[here], np.ascontiguousarray(w_hh_t[here]),
                       None if b is None else np.ascontiguousarray(b[idx][:, None, :])))
    return result


def _run_layers(layer_loop, operands, x, h0, c0, directions: int, hidden: int):
    dtype = x.dtype
    steps, batch = x.shape[0], x.shape[1]
    gi, go, gf, gg = (GATE_ROWS[g] * hidden for g in "iofg")
    layers = len(operands)
    hy = np.empty((directions * layers, batch, hidden), dtype)
    cy = np.empty((directions * layers, batch, hidden), dtype)
    gates = np.empty(4 * hidden, dtype)
    seq = x
    for idx, w_ih_t, w_hh_t, bias in operands:
        pre = np.matmul(seq.reshape(steps * batch, -1), w_ih_t)  # every step's input part: [D, T*B, 4H]
        if bias is not None:
            pre += bias
        pre = pre.reshape(directions, steps, batch, 4 * hidden)
        h = np.ascontiguousarray(h0[idx], dtype)  # (indexing by an array copies: the caller's state stays)
        c = np.ascontiguousarray(c0[idx], dtype)
        out = np.empty((steps, batch, directions, hidden), dtype)
        layer_loop(pre, w_hh_t, h, c, out, gates, gi, go, gf, gg)
        hy[idx] = h
        cy[idx] = c
        seq = out.reshape(steps, batch, directions * hidden)
    return seq, hy, cy


def _bound_lstm(general, planned, operands, directions, hidden, layer_loop, x, w_ih, w_hh, bias, hx, cx):
    """An LSTM step of static float32 shapes with constant weights and biases: the compiled layers with their
    operands made once (the checks, the transposed weights and the summed biases were ~40 us of a small LSTM's
    ~80); :func:`lstm` (``general``) for anything not as planned."""
    if (x.shape, hx.shape, cx.shape) != planned or x.dtype != np.float32 or hx.dtype != np.float32 \
            or cx.dtype != np.float32 or w_ih is not operands[0] or w_hh is not operands[1] or bias is not operands[2]:
        return general(x, w_ih, w_hh, bias, hx, cx)
    return _run_layers(layer_loop, operands[3], x, hx, cx, directions, hidden)


def gru_cell(xz, xr, xh, h, *, rz, rr, rh, bh, linear_before_reset):
    """One GRU time step of the importer's unrolled form (the kernel of ``fusions.gru_cells``' fused step): float32
    [B, H] gate inputs and state, [H, H] recurrent matrices (transposed: ``h @ R``), [H] bias of the candidate's
    product; the new state in one compiled call (``loops.recurrence.gru_step``)."""
    loops = recurrence_loops()
    args = [np.ascontiguousarray(a, np.float32) for a in (xz, xr, xh, h)]
    out = np.empty(args[3].shape, np.float32)
    loops.gru_step(*args, rz, rr, rh, bh, bool(linear_before_reset), out, np.empty((4, out.shape[1]), np.float32))
    return out


def gru_chain(h0, *gate_inputs, rz, rr, rh, bh, linear_before_reset):
    """A chain of GRU time steps with the same weights, each step's state the next one's (the kernel of
    ``fusions.gru_cells``' chained step): ``gate_inputs`` the steps' (xz, xr, xh) in order; returns the state after
    each step, one compiled call for the whole chain (``loops.recurrence.gru_sequence``)."""
    loops = recurrence_loops()
    xz, xr, xh = (np.stack(gate_inputs[k::3]).astype(np.float32, copy=False) for k in range(3))
    out = np.empty(xz.shape, np.float32)
    loops.gru_sequence(xz, xr, xh, np.ascontiguousarray(h0, np.float32), rz, rr, rh, bh, bool(linear_before_reset),
                       out, np.empty((4, out.shape[2]), np.float32))
    return tuple(out)


def gru_chain_rows(h0, pz, pr, ph, *, start, stride, count, rz, rr, rh, bh, linear_before_reset):
    """:func:`gru_chain` where the steps' gate inputs are rows of the input projections ``pz``, ``pr``, ``ph``
    [T', B, H] (the UNSTACK the importer splits them with; ``loops.recurrence.gru_sequence_rows``): row
    ``start + t * stride`` for time step t of ``count``."""
    loops = recurrence_loops()
    pz, pr, ph = (np.ascontiguousarray(p, np.float32) for p in (pz, pr, ph))
    h = np.ascontiguousarray(h0, np.float32)
    out = np.empty((count,) + h.shape, np.float32)
    loops.gru_sequence_rows(pz, pr, ph, start, stride, h, rz, rr, rh, bh, bool(linear_before_reset), out,
                            np.empty((4, h.shape[1]), np.float32))
    return tuple(out)


@specialiser("OH_NN_OPS_LSTM")
def specialise_lstm(op, general, inputs, arguments, addends):
    """:func:`_bound_lstm` for static float32 shapes, constant weights and biases and no zoneout (checked once by the
    reference's own ``lstm_operands``); :func:`lstm` otherwise."""
    per_call = functools.partial(lstm, general, **arguments)
    loops = recurrence_loops()
    if loops is None or len(inputs) != 6 or any(i.shape is None or i.dtype != np.float32 for i in inputs) \
            or any(i.value is None for i in inputs[1:4]):
        return per_call
    try:
        stand_ins = [np.zeros(i.shape, np.float32) if i.value is None else i.value for i in inputs]
        (_, w_ih, w_hh, b, _, _), (directions, layers, zc, zh) = lstm_operands(*stand_ins, **arguments)
    except Exception:  # the reference raises its error in the run
        return per_call
    if zc or zh or not np.prod(inputs[0].shape):
        return per_call
    operands = (inputs[1].value, inputs[2].value, inputs[3].value, _layer_operands(w_ih, w_hh, b, directions, layers))
    planned = (tuple(inputs[0].shape), tuple(inputs[4].shape), tuple(inputs[5].shape))
    return functools.partial(_bound_lstm, per_call, planned, operands, directions, w_ih.shape[1] // 4,
                             loops.lstm_layer)


__all__ = ["gru_chain", "gru_chain_rows", "gru_cell", "lstm", "lstm_sequence", "recurrence_loops"]
