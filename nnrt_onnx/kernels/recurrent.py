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

import numpy as np

from ..errors import invalid, unsupported
from ..geometry import UNKNOWN
from . import kernel, shape_rule
from ._common import _known, _need_float, _packed

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
    The input projection of every time step is one GEMM outside the loop; per time step: one batched matmul over
    the directions for the recurrence (plus one for the projection), then the gates in place in reused arrays
    (one sigmoid over the i, o, f blocks together), each value computed by the same operations in the same order
    as the textbook form (``c = f * c + i * g``, ``h = o * tanh(c)``, ``sigmoid(v) = 0.5 * tanh(0.5 * v) + 0.5``).
    """
    dtype = x.dtype
    steps, batch = x.shape[0], x.shape[1]
    hidden = w_ih.shape[1] // 4
    real = w_hh.shape[2]
    one, half = dtype.type(1), dtype.type(0.5)  # sigmoid in tanh form: no overflow in exp, also in float16
    zc, zh = dtype.type(zoneout_cell), dtype.type(zoneout_hidden)
    gi, go, gf, gg = (slice(GATE_ROWS[g] * hidden, (GATE_ROWS[g] + 1) * hidden) for g in "iofg")
    sigmoid_rows = slice(0, 3 * hidden)  # i, o, f are the first three blocks: one sigmoid over all three
    assert (GATE_ROWS["g"], max(GATE_ROWS["i"], GATE_ROWS["o"], GATE_ROWS["f"])) == (3, 2)
    hy = np.empty((directions * layers, batch, real), dtype)
    cy = np.empty((directions * layers, batch, hidden), dtype)
    dirs = np.arange(directions)
    # work arrays of one step, reused across steps and layers
    gates = np.empty((directions, batch, 4 * hidden), dtype)
    fc = np.empty((directions, batch, hidden), dtype)
    ig = np.empty_like(fc)
    tanh_c = np.empty_like(fc)
    seq = x
    # the weights transposed to contiguous [D*L, in, 4H] (cached for a model's constants: kernels._packed)
    w_ih_t = _packed(w_ih, "lstm_t", transposed_stack)
    w_hh_t = _packed(w_hh, "lstm_t", transposed_stack)
    for layer in range(layers):
        idx = layer * directions + dirs
        here = slice(layer * directions, (layer + 1) * directions)
        # Input contributions of every time step at once, outside the loop: [D, T*B, 4H].
        pre = np.matmul(seq.reshape(steps * batch, -1), w_ih_t[here])
        if b is not None:
            pre += b[idx][:, None, :]
        pre = pre.reshape(directions, steps, batch, 4 * hidden)
        recur = w_hh_t[here]  # [D, R, 4H]
        proj = None if w_proj is None else np.swapaxes(w_proj[idx], 1, 2)  # [D, H, R]
        h = h0[idx].copy()
        c = c0[idx].copy()
        c_new = np.empty_like(c)
        out = np.empty((steps, batch, directions, real), dtype)
        h_new = np.empty((directions, batch, hidden), dtype)
        for s in range(steps):
            # the recurrent product, then the step's input part (forward reads t = s, backward t = T-1-s)
            np.matmul(h, recur, out=gates)
            gates[0] += pre[0, s]
            if directions == 2:
                gates[1] += pre[1, steps - 1 - s]
            sig = gates[..., sigmoid_rows]  # sigmoid(v) = 0.5 * tanh(0.5 * v) + 0.5, in place
            sig *= half
            np.tanh(sig, out=sig)
            sig *= half
            sig += half
            g = gates[..., gg]
            np.tanh(g, out=g)
            np.multiply(gates[..., gf], c, out=fc)  # c_new = f * c + i * g
            np.multiply(gates[..., gi], g, out=ig)
            np.add(fc, ig, out=c_new)
            np.tanh(c_new, out=tanh_c)
            np.multiply(gates[..., go], tanh_c, out=h_new)  # h_new = o * tanh(c_new)
            h_step = h_new if proj is None else np.matmul(h_new, proj)
            out[s, :, 0, :] = h_step[0]
            if directions == 2:
                out[steps - 1 - s, :, 1, :] = h_step[1]
            if zc == 0:
                c, c_new = c_new, c
            else:
                c = zc * c + (one - zc) * c_new
            if zh == 0:
                if h_step is h_new:
                    h, h_new = h_new, h
                else:
                    h = h_step
            else:
                h = zh * h + (one - zh) * h_step
        hy[idx] = h
        cy[idx] = c
        seq = out.reshape(steps, batch, directions * real)
    return seq, hy, cy


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
    zc, zh = _lstm_rates(bidirectional, num_directions, dropout, zoneout_cell, zoneout_hidden, proj_size)
    steps, batch, features, hidden, layers, directions = _lstm_dims(
        x.shape, w_ih.shape, w_hh.shape, bias.shape if has_bias else None, hx.shape, cx.shape,
        bidirectional=bidirectional, has_bias=has_bias, input_size=input_size, hidden_size=hidden_size,
        num_layers=num_layers)
    dtype = x.dtype
    b = None
    if has_bias:
        bias = bias.astype(dtype, copy=False)
        b = bias[:, : 4 * hidden] + bias[:, 4 * hidden:]
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
