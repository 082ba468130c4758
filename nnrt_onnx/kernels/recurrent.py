"""Recurrent kernels: LSTM (stacked, uni- or bidirectional), with the math in :func:`lstm_forward`.

LSTM
  Inputs (header order): ``input`` [seqLen, batch, inputSize], ``wIh`` [dirs*layers, 4*hidden, inputSize],
  ``wHh`` [dirs*layers, 4*hidden, hidden], ``bias`` [dirs*layers, 8*hidden], ``hx`` and ``cx``
  [dirs*layers, batch, hidden]. The first axis of the weights and states is ``layer * dirs + direction``
  (direction 0 = forward, 1 = backward), as in MindSpore / PyTorch.

  * Gate order of the 4*hidden rows: ``i, o, f, g`` (input, output, forget, cell candidate). The header does
    not say; this is what the real runtime's six-input LSTM kernel uses (MindSpore Lite ``LstmNonMindir``,
    "order IOFG") and ONNX's ``iofc``. ``bias`` is ``[input bias (4H) | hidden bias (4H)]`` in the same order.
  * ``output`` is [seqLen, batch, dirs*hidden] (header), forward half first; ``hy``/``cy`` the final states.
  * Several layers: layer k > 0 reads the previous layer's output, so its ``wIh`` slice needs
    ``inputSize == dirs*hidden`` (the header gives every layer the same ``inputSize`` columns).
  * ``dropout`` acts only in training: at inference it is the identity (any value in [0, 1] accepted).
  * ``zoneout_cell`` / ``zoneout_hidden`` at inference use the expectation of the zoneout mask (Krueger et al.
    2016): the carried states are ``c = zc*c_prev + (1-zc)*c_new`` and ``h = zh*h_prev + (1-zh)*h_new``; ``h_new``
    is computed from the un-mixed ``c_new`` and the ``output`` sequence holds ``h_new`` (the cell's output before
    zoneout), as in MindSpore Lite's kernel and the widely used ZoneoutLSTMCell.
  * ``proj_size > 0`` (LSTM with projections) needs a projection weight [dirs*layers, proj, hidden], and the
    six-input signature has no input for it: OH_NN_UNSUPPORTED. (The real runtime also reads the INT64 value
    as a float32, so any ordinary proj_size reaches its primitive as 0.) The math is implemented in
    :func:`lstm_forward` (``w_proj``) for a future seven-input form.
"""
from __future__ import annotations

import functools

import numpy as np

from ..errors import invalid, unsupported
from ..geometry import UNKNOWN
from . import kernel, shape_rule
from ._common import _known, _need_float, _packed, _packed_constant, _remembered

_LSTM = "OH_NN_OPS_LSTM"

# Position of each gate's block of `hidden` rows inside the 4*hidden axis (i, o, f, g = ONNX iofc / MindSpore Lite IOFG).
GATE_ROWS = {"i": 0, "o": 1, "f": 2, "g": 3}


def _rate(name: str, value) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise invalid(f"{_LSTM}: {name} {value} must be a probability in [0, 1]")
    return value


# ---------------------------------------------------------------------------------------------------------------
# LSTM
# ---------------------------------------------------------------------------------------------------------------
def transposed_stack(w: np.ndarray) -> np.ndarray:
    """[D*L, 4H, in] -> contiguous [D*L, in, 4H]: OpenBLAS is up to 3.6x faster on a contiguous right operand
    than on a transposed view at an LSTM step's small M."""
    return np.ascontiguousarray(np.swapaxes(w, 1, 2))


def lstm_forward(x, w_ih, w_hh, b, h0, c0, *, directions: int, layers: int, zoneout_cell: float = 0.0,
                 zoneout_hidden: float = 0.0, w_proj=None):
    """Stacked (bi)directional LSTM on validated arrays, all of one float dtype.

    x [T, B, I]; w_ih [D*L, 4H, I]; w_hh [D*L, 4H, R]; b [D*L, 4H] (input + hidden bias, or None);
    h0 [D*L, B, R]; c0 [D*L, B, H]; w_proj [D*L, R, H] or None (then R = H). Returns (output [T, B, D*R], hy, cy).

    Each value is computed by the textbook form's operations in its order (``c = f * c + i * g``,
    ``h = o * tanh(c)``, ``sigmoid(v) = 0.5 * tanh(0.5 * v) + 0.5``). At small sizes a numpy call costs ~0.25 us
    whatever it computes, so the layout is chosen to make a time step nine calls on contiguous arrays, with nothing
    allocated, sliced or copied per step (issue 27: the step was ~9 us in ~15 calls):

    * one direction at a time, the states as columns: ``h`` [R, B], the gates ``W_hh @ h`` [4H, B], so that each
      gate is a block of whole rows (contiguous for any batch);
    * the weights' gate rows re-ordered o, i, f, g (:func:`_oifg`, cached per constant): the sigmoid gates are one
      block, and in the step's work array [o | i | f | g | c] the pairs [i | f] and [g | c] are adjacent, so
      ``[i*g | f*c]`` is one multiply;
    * the rows of the sigmoid gates halved in the weights and biases (exact: a power of two), so one tanh over all
      four gates gives ``tanh(0.5 * v)`` for o, i, f and ``tanh(v)`` for g;
    * the input part of every time step one GEMM ahead of the loop, the backward direction's in reverse time, so
      step s reads row s of it and writes its ``h`` into slot s + 1 of one array (the next step's operand).
    """
    dtype = x.dtype
    steps, batch = x.shape[0], x.shape[1]
    hidden = w_ih.shape[1] // 4
    real = w_hh.shape[2]
    dirs = directions
    w_in = _packed(w_ih, "lstm_oifg_t", _oifg_transposed)  # [D*L, I, 4H]
    w_rec = _packed(w_hh, "lstm_oifg", _oifg)  # [D*L, 4H, R]
    bias = None if b is None else _packed(b, "lstm_oifg", _oifg)  # [D*L, 4H]
    hy = np.empty((dirs * layers, batch, real), dtype)
    cy = np.empty((dirs * layers, batch, hidden), dtype)
    # the work arrays of one step, reused across steps, directions and layers; their views made once
    work = np.empty((5 * hidden, batch), dtype)  # rows o, i, f, g, then the cell state c
    gates, sig, gate_o = work[: 4 * hidden], work[: 3 * hidden], work[:hidden]
    i_f, g_c, c = work[hidden: 3 * hidden], work[3 * hidden:], work[4 * hidden:]
    half = _halves(sig.shape, dtype)  # (an array operand: a numpy call with a scalar costs ~2x more)
    products = np.empty((2 * hidden, batch), dtype)
    i_g, f_c = products[:hidden], products[hidden:]
    tanh_c = np.empty((hidden, batch), dtype)
    plain = not zoneout_cell and not zoneout_hidden and w_proj is None
    if not plain:
        zc, zh, one = dtype.type(zoneout_cell), dtype.type(zoneout_hidden), dtype.type(1)
        c_new = c if not zc else np.empty_like(tanh_c)
        h_new = None if w_proj is None else np.empty_like(tanh_c)
        mix = None if not zh else np.empty((real, batch), dtype)
    dot, add, multiply, tanh = np.dot, np.add, np.multiply, np.tanh
    seq = x
    for layer in range(layers):
        rows = seq.reshape(steps * batch, seq.shape[2])
        # h of every step per direction, slot 0 the initial state: [D, T + 1, R, B] (backward: in reverse time)
        hs = np.empty((dirs, steps + 1, real, batch), dtype)
        for d in range(dirs):
            n = layer * dirs + d
            # every step's input part, bias included, in the order the steps read it: [T, 4H, B]
            pre = dot(rows, w_in[n])
            if bias is not None:
                pre += bias[n]
            pre = pre.reshape(steps, batch, 4 * hidden).transpose(0, 2, 1)
            if d == 1:
                pre = pre[::-1]  # the backward direction reads the sequence from its end
            if batch > 1:  # (one copy here, instead of a strided add in every step)
                pre = np.ascontiguousarray(pre)
            recur = w_rec[n]
            slots = hs[d]
            slots[0] = h0[n].T
            c[...] = c0[n].T
            h = slots[0]
            if plain:  # (the common case without the per-step tests of the general loop below)
                for pre_s, h_out in zip(pre, slots[1:]):
                    dot(recur, h, gates)
                    add(gates, pre_s, gates)
                    tanh(gates, gates)  # tanh(0.5 v) for o, i, f (their rows are halved); tanh(v) for g
                    multiply(sig, half, sig)  # sigmoid = 0.5 * tanh(0.5 v) + 0.5
                    add(sig, half, sig)
                    multiply(i_f, g_c, products)  # [i * g | f * c]
                    add(f_c, i_g, c)  # c = f * c + i * g
                    tanh(c, tanh_c)
                    multiply(gate_o, tanh_c, h_out)  # h = o * tanh(c), straight into its slot
                    h = h_out
            else:  # zoneout or a projection: the carried states are not the step's outputs
                proj = None if w_proj is None else w_proj[n]
                h = h.copy()
                for pre_s, h_out in zip(pre, slots[1:]):
                    dot(recur, h, gates)
                    add(gates, pre_s, gates)
                    tanh(gates, gates)
                    multiply(sig, half, sig)
                    add(sig, half, sig)
                    multiply(i_f, g_c, products)
                    add(f_c, i_g, c_new)
                    tanh(c_new, tanh_c)
                    if proj is None:
                        multiply(gate_o, tanh_c, h_out)  # the output holds the cell's output before zoneout
                    else:
                        multiply(gate_o, tanh_c, h_new)
                        dot(proj, h_new, h_out)
                    if zc:  # c = zc * c + (1 - zc) * c_new
                        multiply(c, zc, c)
                        multiply(c_new, one - zc, c_new)
                        add(c, c_new, c)
                    if zh:  # h = zh * h + (1 - zh) * h_out
                        multiply(h, zh, h)
                        multiply(h_out, one - zh, mix)
                        add(h, mix, h)
                    else:
                        h = h_out
            hy[n] = h.T
            cy[n] = c.T
        # back to [T, B, D * R], the backward direction's slots in time order again
        if dirs == 1:
            seq = np.ascontiguousarray(hs[0, 1:].transpose(0, 2, 1))
        else:
            seq = np.empty((steps, batch, dirs, real), dtype)
            seq[:, :, 0] = hs[0, 1:].transpose(0, 2, 1)
            seq[:, :, 1] = hs[1, :0:-1].transpose(0, 2, 1)
            seq = seq.reshape(steps, batch, dirs * real)
    return seq, hy, cy


@functools.lru_cache(maxsize=64)
def _halves(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A read-only array of 0.5s (shared by the calls: np.full was ~1 us of a small LSTM's call)."""
    halves = np.full(shape, 0.5, dtype)
    halves.flags.writeable = False
    return halves


# The packed weights' gate order: the sigmoid gates first (o, i, f), then g; i and f adjacent for the step's one
# multiply [i | f] * [g | c].
PACKED_GATES = "oifg"


def _oifg(w: np.ndarray) -> np.ndarray:
    """[D*L, 4H, ...] in the kernel's gate order -> a new contiguous array, the gate rows in PACKED_GATES order and
    those of the sigmoid gates (o, i, f) halved: ``sigmoid(v) = 0.5 * tanh(0.5 * v) + 0.5`` with the 0.5 inside the
    product (halving is exact, so ``W' @ h == 0.5 * (W @ h)`` bit for bit, short of subnormals)."""
    hidden = w.shape[1] // 4
    out = np.concatenate([w[:, GATE_ROWS[g] * hidden:(GATE_ROWS[g] + 1) * hidden] for g in PACKED_GATES], axis=1)
    out[:, : 3 * hidden] *= out.dtype.type(0.5)
    return out


def _oifg_transposed(w: np.ndarray) -> np.ndarray:
    """:func:`_oifg` transposed to a contiguous [D*L, in, 4H]: the right operand of the input GEMM (OpenBLAS is up to
    2x faster on a contiguous right operand than on a transposed view at small M)."""
    return np.ascontiguousarray(np.swapaxes(_oifg(w), 1, 2))


@kernel(_LSTM)
def lstm(x, w_ih, w_hh, bias, hx, cx, *, bidirectional, has_bias, input_size, hidden_size, num_layers,
         num_directions, dropout, zoneout_cell, zoneout_hidden, proj_size):
    (x, w_ih, w_hh, b, hx, cx), (directions, layers, zc, zh) = lstm_operands(
        x, w_ih, w_hh, bias, hx, cx, bidirectional=bidirectional, has_bias=has_bias, input_size=input_size,
        hidden_size=hidden_size, num_layers=num_layers, num_directions=num_directions, dropout=dropout,
        zoneout_cell=zoneout_cell, zoneout_hidden=zoneout_hidden, proj_size=proj_size)
    return lstm_forward(x, w_ih, w_hh, b, hx, cx, directions=directions, layers=layers, zoneout_cell=zc,
                        zoneout_hidden=zh)


def lstm_operands(x, w_ih, w_hh, bias, hx, cx, *, bidirectional, has_bias, input_size, hidden_size, num_layers,
                  num_directions, dropout, zoneout_cell, zoneout_hidden, proj_size):
    """The LSTM kernel's operands checked and in the input's dtype, the input and hidden biases summed:
    ((x, w_ih, w_hh, b or None, h0, c0), (directions, layers, zoneout cell, zoneout hidden))."""
    for what, array in (("input", x), ("wIh", w_ih), ("wHh", w_hh), ("hx", hx), ("cx", cx)) + (
            (("bias", bias),) if has_bias else ()):
        _need_float(_LSTM, what, array)
    zc, zh = _checked_lstm_rates(bidirectional, num_directions, dropout, zoneout_cell, zoneout_hidden, proj_size)
    steps, batch, features, hidden, layers, directions = _checked_lstm_dims(
        x.shape, w_ih.shape, w_hh.shape, bias.shape if has_bias else None, hx.shape, cx.shape,
        bidirectional, has_bias, input_size, hidden_size, num_layers)
    dtype = x.dtype
    b = None
    if has_bias:  # (summed once per constant bias)
        b = _packed_constant(bias.astype(dtype, copy=False), ("lstm_sum", hidden),
                             lambda bias: bias[:, : 4 * hidden] + bias[:, 4 * hidden:])
    return ((x, w_ih.astype(dtype, copy=False), w_hh.astype(dtype, copy=False), b, hx.astype(dtype, copy=False),
             cx.astype(dtype, copy=False)), (directions, layers, zc, zh))


def _lstm_rates(bidirectional, num_directions, dropout, zoneout_cell, zoneout_hidden, proj_size) -> tuple[float, float]:
    """The parameter checks that need no shape; returns the zoneout rates (cell, hidden)."""
    directions = 2 if bidirectional else 1
    if num_directions not in (0, directions):
        raise invalid(f"{_LSTM}: num_directions {num_directions} contradicts bidirectional={bool(bidirectional)} "
                      f"(needs {directions})")
    _rate("dropout", dropout)  # training-only: identity at inference
    zc, zh = _rate("zoneout_cell", zoneout_cell), _rate("zoneout_hidden", zoneout_hidden)
    if proj_size < 0:
        raise invalid(f"{_LSTM}: proj_size {proj_size} must be >= 0")
    if proj_size > 0:
        raise unsupported(f"{_LSTM}: proj_size {proj_size} > 0 (LSTM with projection) needs a projection weight, "
                          f"and the six-input LSTM has no input for it")
    return zc, zh


# The kernel's checks of its parameters, remembered (~3 us a call).
_checked_lstm_rates = _remembered(_lstm_rates)


@_remembered
def _checked_lstm_dims(x_shape, w_ih_shape, w_hh_shape, bias_shape, hx_shape, cx_shape, bidirectional, has_bias,
                       input_size, hidden_size, num_layers):
    """:func:`_lstm_dims` of a kernel call, remembered per shapes and parameters (a pure function of them; it was
    ~11 us of a small LSTM's call)."""
    return _lstm_dims(x_shape, w_ih_shape, w_hh_shape, bias_shape, hx_shape, cx_shape, bidirectional=bidirectional,
                      has_bias=has_bias, input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)


def _lstm_dims(x_shape, w_ih_shape, w_hh_shape, bias_shape, hx_shape, cx_shape, *, bidirectional, has_bias,
               input_size, hidden_size, num_layers):
    """(seqLen, batch, inputSize, hidden, layers, directions) after checking every operand's shape against them
    (unknown dims, and shapes given as None, pass; a size that no operand shows is UNKNOWN)."""
    directions = 2 if bidirectional else 1
    if x_shape is not None and len(x_shape) != 3:
        raise invalid(f"{_LSTM}: input must be [seqLen, batch, inputSize], got shape {list(x_shape)}")
    steps, batch, features = x_shape if x_shape is not None else (UNKNOWN,) * 3
    if _known(features) and input_size not in (0, features):
        raise invalid(f"{_LSTM}: input_size {input_size} does not match the input's last dim {features}")
    stacked, rows = (w_ih_shape[0], w_ih_shape[1]) if w_ih_shape is not None and len(w_ih_shape) == 3 else \
        (UNKNOWN, UNKNOWN)
    if w_ih_shape is not None and (len(w_ih_shape) != 3 or _known(rows) and rows % 4 or
                                   _known(stacked) and stacked % directions):
        raise invalid(f"{_LSTM}: wIh must be [dirs*layers, 4*hidden, inputSize], got shape {list(w_ih_shape)}")
    hidden = rows // 4 if _known(rows) else hidden_size or _first_known(2, w_hh_shape, hx_shape, cx_shape)
    if _known(rows) and hidden_size not in (0, hidden):
        raise invalid(f"{_LSTM}: hidden_size {hidden_size} does not match wIh {list(w_ih_shape)} (4*hidden rows)")
    if not _known(stacked):
        stacked = _first_known(0, w_hh_shape, hx_shape, cx_shape, bias_shape if has_bias else None)
    if not _known(batch):
        batch = _first_known(1, hx_shape, cx_shape)
    layers = num_layers or (stacked // directions if _known(stacked) else UNKNOWN)
    if num_layers < 0 or _known(layers) and layers < 1:
        raise invalid(f"{_LSTM}: num_layers {num_layers} must be >= 1")
    stack = directions * layers if _known(layers) else UNKNOWN
    four, eight = (4 * hidden, 8 * hidden) if _known(hidden) else (UNKNOWN, UNKNOWN)
    expected = {
        "wIh": (w_ih_shape, (stack, four, features)),
        "wHh": (w_hh_shape, (stack, four, hidden)),
        "hx": (hx_shape, (stack, batch, hidden)),
        "cx": (cx_shape, (stack, batch, hidden)),
    }
    if has_bias:
        expected["bias"] = (bias_shape, (stack, eight))
    for what, (shape, want) in expected.items():
        if shape is None:
            continue
        if len(shape) != len(want) or any(_known(a, b) and a != b for a, b in zip(shape, want)):
            raise invalid(f"{_LSTM}: {what} has shape {list(shape)}, expected {list(want)} "
                          f"(seqLen={steps}, batch={batch}, inputSize={features}, hidden={hidden}, "
                          f"layers={layers}, directions={directions})")
    if _known(layers, features, hidden) and layers > 1 and features != directions * hidden:
        raise invalid(f"{_LSTM}: with {layers} layers every wIh slice has inputSize={features} columns, but layers "
                      f"after the first read dirs*hidden={directions * hidden} features; they must be equal")
    return steps, batch, features, hidden, layers, directions


def _first_known(position: int, *shapes) -> int:
    """Dim ``position`` of the first shape that knows it (the sizes the LSTM operands share), else UNKNOWN."""
    for shape in shapes:
        if shape is not None and len(shape) > position and _known(shape[position]):
            return shape[position]
    return UNKNOWN


@shape_rule(_LSTM)
def _lstm_shape(op, shapes, values, *, bidirectional, has_bias, input_size, hidden_size, num_layers,
                num_directions, dropout, zoneout_cell, zoneout_hidden, proj_size, **_):
    """output [seqLen, batch, dirs*hidden]; hy and cy [dirs*layers, batch, hidden]."""
    _lstm_rates(bidirectional, num_directions, dropout, zoneout_cell, zoneout_hidden, proj_size)
    steps, batch, _, hidden, layers, directions = _lstm_dims(
        *shapes[:6], bidirectional=bidirectional, has_bias=has_bias, input_size=input_size,
        hidden_size=hidden_size, num_layers=num_layers)
    width = directions * hidden if _known(hidden) else UNKNOWN
    stack = directions * layers if _known(layers) else UNKNOWN
    state = (stack, batch, hidden)
    return ((steps, batch, width), state, state)
