"""Converters of the recurrent family: RNN and GRU unrolled, LSTM onto NNRt's LSTM, onnxruntime's contrib
DynamicQuantizeLSTM (com.microsoft) unrolled with its dynamically quantized products.

Decisions (also in the mapping rows' notes):

* RNN and GRU are unrolled over the static sequence length: the input projections of every time step are one
  MATMUL per gate (``X @ W_g^T + biases``) and one UNSTACK; each step adds ``H @ R_g^T`` (MATMUL), applies the
  activations, and the outputs are STACKed. W, R, B and initial_h may be runtime tensors (then SLICEd per
  direction and gate) or constants. The zero initial state skips the first recurrent product. Activations
  Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid, Affine and ScaledTanh (alpha/beta taken from activation_alpha /
  activation_beta in order, for the functions that use them, else the ONNX defaults) and ``clip`` (CLIP on every
  activation's input) are converted; other activations are rejected. ``sequence_lens`` (a constant, or known at
  run time; values in [0, seq]) masks the steps past an entry's length with WHERE (``_sequences``): the state is
  kept (a reverse pass starts at the entry's last step) and Y is 0 there, and an entry of length 0 has Y_h 0, as
  onnxruntime. GRU: ``h~ = g(xh + (r*H) Rh^T + Rbh + Wbh)`` or, with linear_before_reset,
  ``g(xh + Wbh + r*(H Rh^T + Rbh))``; ``H' = h~ + z*(H - h~)``.
* An RNN whose sequence cannot be unrolled (its length dynamic, or too long) runs on NNRt's LSTM when its
  activations are Tanh, Sigmoid or ScaledTanh, without clip, over constant weights (:func:`_rnn_on_lstm`: the cell
  state held where tanh is 1, so h is the output gate's sigmoid; tanh(z) = 2 sigmoid(2z) - 1 read back affinely).
  Otherwise, and for a GRU (which NNRt's LSTM cannot compute), the sequence length must be static.
* LSTM: NNRt's six-input LSTM uses ONNX's gate order (iofc) and bias layout; reverse runs forward on the
  time-reversed sequence (GATHER). With ``sequence_lens``, one LSTM per direction over each entry's sequence
  (reversed within its length for a reverse pass), Y masked, Y_h gathered at each entry's last step, Y_c held
  there by an extra input feature that shuts the input gate and opens the forget gate (:func:`_lstm_with_lengths`).
  clip, input_forget, peepholes and other activations unroll the node over its static steps
  (:func:`_lstm_recurrence`, shared with DynamicQuantizeLSTM).
"""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...ir.budget import MAX_OPERATIONS_PER_NODE
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    TOO_LARGE,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from ..context import NodeContext
from . import converts
from ._common import (
    _binary,
    _cast,
    _dynamic_quantize,
    _float_dtype,
    _integer_product,
    _matmul,
    _reshape,
    _set_shape,
    _transpose,
    _unsupported,
)
from ._dims import dims_tensor, reshape_to, shape_of_parts
from ._sequences import sequence_lengths

MAX_IO = 200  # AddOperation caps an input/output index list at 200


def _stack(ctx: NodeContext, names, axis: int, output: str | None = None, hint: str = "stack") -> str:
    """STACK along ``axis`` (a RESHAPE for one tensor; chunks of STACKs joined by CONCAT beyond 200 inputs)."""
    first = ctx.value(names[0])
    shape = list(first.shape)
    out_shape = shape[:axis] + [len(names)] + shape[axis:]
    if len(names) == 1:
        if output is not None:
            return _reshape(ctx, names[0], out_shape, output=output)
        return _reshape(ctx, names[0], out_shape)
    if len(names) <= MAX_IO:
        return ctx.emit_to(OP.OH_NN_OPS_STACK, names, first.dtype, out_shape, hint, {"OH_NN_STACK_AXIS": axis},
                     output=output)
    parts = [_stack(ctx, names[i:i + MAX_IO], axis, hint=hint) for i in range(0, len(names), MAX_IO)]
    return _concat(ctx, parts, axis, output=output, hint=hint)


def _concat(ctx: NodeContext, names, axis: int, output: str | None = None, hint: str = "concat") -> str:
    if len(names) > MAX_IO:
        names = [_concat(ctx, names[i:i + MAX_IO], axis, hint=hint) for i in range(0, len(names), MAX_IO)]
    first = ctx.value(names[0])
    shape = list(first.shape)
    shape[axis] = sum(ctx.value(n).shape[axis] for n in names)
    if len(names) == 1:
        return _reshape(ctx, names[0], shape, output=output) if output else names[0]
    return ctx.emit_to(OP.OH_NN_OPS_CONCAT, names, first.dtype, shape, hint, {"OH_NN_CONCAT_AXIS": axis},
                 output=output)


def _unstack(ctx: NodeContext, name: str, axis: int) -> list[str]:
    """The slices of ``name`` along ``axis`` (that axis dropped): UNSTACK (SPLIT first beyond 200 slices)."""
    value = ctx.value(name)
    shape = list(value.shape)
    count = shape[axis]
    if count > MAX_IO:
        pieces = []
        sizes = [min(MAX_IO, count - i) for i in range(0, count, MAX_IO)]
        outs = [ctx.new_value(value.dtype, shape[:axis] + [s] + shape[axis + 1:], f"{name}.part") for s in sizes]
        ctx.emit(OP.OH_NN_OPS_SPLIT, [name], outs, {"OH_NN_SPLIT_AXIS": axis, "OH_NN_SPLIT_SIZE_SPLITS": sizes})
        for out in outs:
            pieces += _unstack(ctx, out, axis)
        return pieces
    piece_shape = shape[:axis] + shape[axis + 1:]
    outs = [ctx.new_value(value.dtype, piece_shape, f"{name}.{i}") for i in range(count)]
    ctx.emit(OP.OH_NN_OPS_UNSTACK, [name], outs, {"OH_NN_UNSTACK_AXIS": axis})
    return outs


def _slice_rows(ctx: NodeContext, name: str, index: int, start: int, stop: int, hint: str) -> str:
    """``name[index, start:stop]`` (a constant when ``name`` is one, else SLICE + RESHAPE)."""
    value = ctx.value(name)
    if value.data is not None:
        return ctx.constant(np.ascontiguousarray(value.data[index, start:stop]), hint)
    shape = list(value.shape)
    size = [1, stop - start] + [-1] * (len(shape) - 2)
    begin = [index, start] + [0] * (len(shape) - 2)
    sliced = ctx.emit_to(OP.OH_NN_OPS_SLICE, [name, ctx.constant(np.asarray(begin, np.int64)),
                                              ctx.constant(np.asarray(size, np.int64))],
                   value.dtype, [1, stop - start] + shape[2:], f"{hint}.slice")
    return _reshape(ctx, sliced, [stop - start] + shape[2:])


def _is_zero(ctx: NodeContext, name: str | None) -> bool:
    if name is None:
        return True
    data = ctx.value(name).data
    return data is not None and not np.any(data)


# -- RNN / GRU ---------------------------------------------------------------------------------------------------------

_ACTIVATIONS = {  # name -> (alpha default, beta default); None: the function takes no such value
    "relu": (None, None), "tanh": (None, None), "sigmoid": (None, None), "leakyrelu": (0.01, None),
    "hardsigmoid": (0.2, 0.5), "affine": (1.0, 0.0), "scaledtanh": (1.0, 1.0),
}


def _activation_specs(ctx: NodeContext, defaults: list[str], directions: int) -> list[tuple[str, float, float]]:
    per_direction = len(defaults)
    names = ctx.attr("activations")
    alphas = list(ctx.attr("activation_alpha", []) or [])
    betas = list(ctx.attr("activation_beta", []) or [])
    if names is None:
        names = defaults * directions
    names = [str(n) for n in names]
    if len(names) != per_direction * directions:
        raise ConversionIssue(INVALID_MODEL, f"activations={names}: {ctx.node.op_type} with {directions} "
                                             f"direction(s) needs {per_direction * directions} activation(s)")
    specs = []
    for name in names:
        key = name.lower()
        if key not in _ACTIVATIONS:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"activations: {name!r} is not supported (supported: Relu, "
                                                         "Tanh, Sigmoid, LeakyRelu, HardSigmoid, Affine, ScaledTanh)")
        alpha_default, beta_default = _ACTIVATIONS[key]
        alpha = beta = 0.0
        if alpha_default is not None:
            alpha = float(alphas.pop(0)) if alphas else alpha_default
        if beta_default is not None:
            beta = float(betas.pop(0)) if betas else beta_default
        specs.append((key, alpha, beta))
    return specs


def _activate(ctx: NodeContext, x: str, spec, clip: float | None, hint: str) -> str:
    value = ctx.value(x)
    dtype, shape = value.dtype, value.shape
    if clip is not None:
        x = ctx.emit_to(OP.OH_NN_OPS_CLIP, [x], dtype, shape, f"{hint}.clip",
                  {"OH_NN_CLIP_MIN": -clip, "OH_NN_CLIP_MAX": clip})
    name, alpha, beta = spec

    def const(v):
        return ctx.constant(np.asarray(v, dtype))

    simple = {"relu": OP.OH_NN_OPS_RELU, "tanh": OP.OH_NN_OPS_TANH, "sigmoid": OP.OH_NN_OPS_SIGMOID}
    if name in simple:
        return ctx.emit_to(simple[name], [x], dtype, shape, hint)
    if name == "leakyrelu":
        return ctx.emit_to(OP.OH_NN_OPS_LEAKY_RELU, [x], dtype, shape, hint, {"OH_NN_LEAKY_RELU_NEGATIVE_SLOPE": alpha})
    if name == "scaledtanh":
        scaled = ctx.emit_to(OP.OH_NN_OPS_MUL, [x, const(beta)], dtype, shape, f"{hint}.in")
        t = ctx.emit_to(OP.OH_NN_OPS_TANH, [scaled], dtype, shape, f"{hint}.tanh")
        return ctx.emit_to(OP.OH_NN_OPS_MUL, [t, const(alpha)], dtype, shape, hint)
    affine = ctx.emit_to(OP.OH_NN_OPS_MUL, [x, const(alpha)], dtype, shape, f"{hint}.scaled")
    affine = ctx.emit_to(OP.OH_NN_OPS_ADD, [affine, const(beta)], dtype, shape, f"{hint}.affine")
    if name == "affine":
        return affine
    return ctx.emit_to(OP.OH_NN_OPS_CLIP, [affine], dtype, shape, hint, {"OH_NN_CLIP_MIN": 0.0, "OH_NN_CLIP_MAX": 1.0})


def _recurrent(ctx: NodeContext, gates: int) -> None:
    """Shared frame of RNN (1 gate) and GRU (3 gates: z, r, h)."""
    kind = ctx.node.op_type
    x, w, r = ctx.input(0), ctx.input(1), ctx.input(2)
    dtype = _float_dtype(ctx, x, "input X")
    for name in (w, r):
        if ctx.value(name).dtype != dtype:
            raise ConversionIssue(INVALID_MODEL, f"{name!r} has dtype {ctx.value(name).dtype}, X has {dtype}")
    layout = int(ctx.attr("layout", 0))
    if layout not in (0, 1):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"layout={layout} is not supported (0 or 1)")
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"direction={direction!r} is not supported")
    directions = 2 if direction == "bidirectional" else 1
    ctx.attr("output_sequence")  # (RNN-1/GRU-1) whether Y is required: Y is produced whenever the node lists it
    x_shape = ctx.value(x).shape
    if x_shape is None or len(x_shape) != 3:
        raise ConversionIssue(INVALID_MODEL, f"X must have rank 3, got shape {x_shape}")
    seq, batch = (x_shape[1], x_shape[0]) if layout else (x_shape[0], x_shape[1])
    if x_shape[2] < 0:  # (the batch may stay dynamic; the sequence too where an RNN runs on NNRt's LSTM)
        raise ConversionIssue(DYNAMIC_SHAPE, f"the input size of {kind}'s X (shape {list(x_shape)}) must be static",
                              tensor=x, axes=(2,))
    if len(ctx.node.output) > 2 and any(ctx.node.output[2:]):
        raise ConversionIssue(INVALID_MODEL, f"{kind} has at most 2 outputs")
    w_shape, r_shape = ctx.static_shape(w, "W"), ctx.static_shape(r, "R")
    hidden = ctx.attr("hidden_size")
    hidden = int(hidden) if hidden is not None else int(r_shape[-1])
    if tuple(w_shape) != (directions, gates * hidden, x_shape[2]) or tuple(r_shape) != (directions, gates * hidden,
                                                                                         hidden):
        raise ConversionIssue(INVALID_MODEL, f"W {list(w_shape)} / R {list(r_shape)} do not fit direction="
                                             f"{direction!r}, hidden_size={hidden}, input size {x_shape[2]}")
    clip = ctx.attr("clip")
    clip = None if clip is None else float(clip)
    specs = _activation_specs(ctx, ["Tanh"] if gates == 1 else ["Sigmoid", "Tanh"], directions)
    linear_before_reset = int(ctx.attr("linear_before_reset", 0)) if gates == 3 else 0
    lengths = sequence_lengths(ctx, 4, seq, batch)
    b = ctx.input(3) if ctx.has_input(3) else None
    if b is not None and ctx.static_shape(b, "B") != (directions, 2 * gates * hidden):
        raise ConversionIssue(INVALID_MODEL, f"B has shape {list(ctx.value(b).shape)}, expected "
                                             f"{[directions, 2 * gates * hidden]}")
    h0 = ctx.input(5) if ctx.has_input(5) else None
    if h0 is not None:
        expected = (batch, directions, hidden) if layout else (directions, batch, hidden)
        h0_shape = ctx.value(h0).shape
        if h0_shape is None or len(h0_shape) != 3 or any(a != b and a >= 0 and b >= 0 for a, b in zip(h0_shape,
                                                                                                       expected)):
            raise ConversionIssue(INVALID_MODEL, f"initial_h has shape {h0_shape}, expected {list(expected)}")
        if _is_zero(ctx, h0):
            h0 = None
        elif layout:
            h0 = _transpose(ctx, h0, (1, 0, 2))
    if seq < 0 or seq * directions * 2 > MAX_OPERATIONS_PER_NODE:  # each unrolled step emits at least 2 operations
        why_not = _why_not_on_lstm(ctx, gates, specs, clip, (w, r, b))
        if why_not is None:
            _rnn_on_lstm(ctx, x, (w, r, b), h0, specs, lengths, direction, layout,
                         (seq, batch, x_shape[2], hidden))
            return
        if seq < 0:
            raise ConversionIssue(DYNAMIC_SHAPE, f"{kind} is unrolled over its time steps (NNRt has no loops and no "
                                                 f"{kind} operation{why_not}): the sequence length of X (shape "
                                                 f"{list(x_shape)}) must be static", tensor=x,
                                  axes=(1 if layout else 0,))
        raise ConversionIssue(TOO_LARGE, f"{kind} over {seq} time steps would unroll into more than "
                                         f"{MAX_OPERATIONS_PER_NODE} NNRt operations{why_not}")
    # per step: which batch entries are still within their sequence ([batch, 1]; None: all of them)
    masks = None if lengths is None else [lengths.step_mask(t) for t in range(seq)]
    time_axis = 1 if layout else 0

    finals, sequences = [], []
    for d in range(directions):
        reverse = direction == "reverse" or d == 1
        hint = f"{ctx.name}.d{d}"
        # input projections of every step, per gate: X @ W_g^T + Wb_g (+ Rb_g where it adds outside the reset)
        steps_per_gate = []
        rh_bias = None
        for g in range(gates):
            w_g = _slice_rows(ctx, w, d, g * hidden, (g + 1) * hidden, f"{hint}.W{g}")
            if ctx.value(w_g).data is not None:
                projected = _matmul(ctx, x, ctx.constant(np.ascontiguousarray(ctx.value(w_g).data.T), f"{hint}.WT{g}"),
                                    f"{hint}.xw{g}")
            else:
                projected = _matmul(ctx, x, w_g, f"{hint}.xw{g}", transpose_b=True)
            if b is not None:
                wb = _slice_rows(ctx, b, d, g * hidden, (g + 1) * hidden, f"{hint}.Wb{g}")
                rb = _slice_rows(ctx, b, d, (gates + g) * hidden, (gates + g + 1) * hidden, f"{hint}.Rb{g}")
                if g == 2 and linear_before_reset:
                    rh_bias = None if _is_zero(ctx, rb) else rb
                    bias = wb
                elif ctx.value(wb).data is not None and ctx.value(rb).data is not None:
                    bias = ctx.constant(ctx.value(wb).data + ctx.value(rb).data, f"{hint}.b{g}")
                else:
                    bias = _binary(ctx, OP.OH_NN_OPS_ADD, wb, rb, f"{hint}.b{g}")
                if not _is_zero(ctx, bias):
                    projected = _binary(ctx, OP.OH_NN_OPS_ADD, projected, bias, f"{hint}.xwb{g}")
            steps_per_gate.append(_unstack(ctx, projected, time_axis))
        r_gates = []
        for g in range(gates):
            r_g = _slice_rows(ctx, r, d, g * hidden, (g + 1) * hidden, f"{hint}.R{g}")
            if ctx.value(r_g).data is not None:
                r_gates.append((ctx.constant(np.ascontiguousarray(ctx.value(r_g).data.T), f"{hint}.RT{g}"), False))
            else:
                r_gates.append((r_g, True))
        f_spec = specs[d * len(specs) // directions]
        g_spec = specs[d * len(specs) // directions + (1 if gates == 3 else 0)]

        def recurrent(h_prev, g, tag):
            weight, transposed = r_gates[g]
            return _matmul(ctx, h_prev, weight, f"{hint}.{tag}", transpose_b=transposed)

        h = None if h0 is None else _slice_rows(ctx, h0, d, 0, ctx.value(h0).shape[1], f"{hint}.h0")
        outputs = [None] * seq
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            tag = f"t{t}"
            h_prev = h
            if gates == 1:
                pre = steps_per_gate[0][t]
                if h is not None:
                    pre = _binary(ctx, OP.OH_NN_OPS_ADD, pre, recurrent(h, 0, f"{tag}.hr"), f"{hint}.{tag}.pre")
                h = _activate(ctx, pre, f_spec, clip, f"{hint}.{tag}.h")
            else:
                z_pre, r_pre, h_pre = (steps_per_gate[g][t] for g in range(3))
                if h is not None:
                    z_pre = _binary(ctx, OP.OH_NN_OPS_ADD, z_pre, recurrent(h, 0, f"{tag}.hz"), f"{hint}.{tag}.zpre")
                    r_pre = _binary(ctx, OP.OH_NN_OPS_ADD, r_pre, recurrent(h, 1, f"{tag}.hr"), f"{hint}.{tag}.rpre")
                z = _activate(ctx, z_pre, f_spec, clip, f"{hint}.{tag}.z")
                reset = _activate(ctx, r_pre, f_spec, clip, f"{hint}.{tag}.r")
                if linear_before_reset:
                    hh = None if h is None else recurrent(h, 2, f"{tag}.hh")
                    if rh_bias is not None:
                        hh = rh_bias if hh is None else _binary(ctx, OP.OH_NN_OPS_ADD, hh, rh_bias, f"{hint}.{tag}.hhb")
                    if hh is not None:
                        gated = _binary(ctx, OP.OH_NN_OPS_MUL, reset, hh, f"{hint}.{tag}.rhh")
                        h_pre = _binary(ctx, OP.OH_NN_OPS_ADD, h_pre, gated, f"{hint}.{tag}.hpre")
                elif h is not None:
                    reset_h = _binary(ctx, OP.OH_NN_OPS_MUL, reset, h, f"{hint}.{tag}.rh")
                    h_pre = _binary(ctx, OP.OH_NN_OPS_ADD, h_pre, recurrent(reset_h, 2, f"{tag}.rhh"),
                                    f"{hint}.{tag}.hpre")
                candidate = _activate(ctx, h_pre, g_spec, clip, f"{hint}.{tag}.cand")
                if h is None:  # H' = (1 - z) * h~
                    kept = _binary(ctx, OP.OH_NN_OPS_MUL, z, candidate, f"{hint}.{tag}.zc")
                    h = _binary(ctx, OP.OH_NN_OPS_SUB, candidate, kept, f"{hint}.{tag}.H")
                else:  # H' = h~ + z * (H - h~)
                    delta = _binary(ctx, OP.OH_NN_OPS_SUB, h, candidate, f"{hint}.{tag}.delta")
                    moved = _binary(ctx, OP.OH_NN_OPS_MUL, z, delta, f"{hint}.{tag}.zd")
                    h = _binary(ctx, OP.OH_NN_OPS_ADD, candidate, moved, f"{hint}.{tag}.H")
            outputs[t] = h
            if masks is not None and masks[t] is not None:
                # past its length an entry keeps its state (a reverse pass has not started yet) and outputs 0
                h, outputs[t] = _masked_step(ctx, masks[t], h, h_prev, f"{hint}.{tag}")
        finals.append(h if lengths is None else lengths.zero_where_empty(h))
        sequences.append(outputs)

    y = ctx.output(0) if len(ctx.node.output) > 0 and ctx.node.output[0] else None
    y_h = ctx.output(1) if len(ctx.node.output) > 1 and ctx.node.output[1] else None
    if y is not None:
        if directions == 1:
            stacked = _stack(ctx, sequences[0], time_axis, hint=f"{ctx.name}.Y")
            shape = [batch, seq, 1, hidden] if layout else [seq, 1, batch, hidden]
            _reshape(ctx, stacked, shape, output=y)
        else:
            per_step = [_stack(ctx, [sequences[0][t], sequences[1][t]], 1 if layout else 0, hint=f"{ctx.name}.Y{t}")
                        for t in range(seq)]
            _stack(ctx, per_step, time_axis, output=y, hint=f"{ctx.name}.Y")
    if y_h is not None:
        _stack(ctx, finals, 1 if layout else 0, output=y_h, hint=f"{ctx.name}.Y_h")


def _masked_step(ctx: NodeContext, mask: str, new: str, previous: str | None, hint: str) -> tuple[str, str]:
    """(the state carried on, the step's output) where ``mask`` ([batch, 1]) says which entries are still inside
    their sequences: the new state and output there; elsewhere the previous state (zeros for a zero initial one)
    and 0."""
    value = ctx.value(new)
    zero = ctx.constant(np.asarray(0, value.dtype), f"{hint}.zero")
    kept = ctx.emit_to(OP.OH_NN_OPS_WHERE, [mask, new, previous or zero], value.dtype, value.shape, f"{hint}.kept")
    out = ctx.emit_to(OP.OH_NN_OPS_WHERE, [mask, new, zero], value.dtype, value.shape, f"{hint}.y")
    return kept, out


# -- RNN on NNRt's LSTM (a sequence that cannot be unrolled) ----------------------------------------------------------

def _as_sigmoid(spec) -> tuple[float, float, float] | None:
    """An RNN activation f as ``f(z) = scale * sigmoid(k * z) + shift``: (k, scale, shift), or None. tanh(z) is
    2 sigmoid(2z) - 1; ScaledTanh alpha * tanh(beta * z) (alpha != 0, else the state could not be read back)."""
    name, alpha, beta = spec
    if name == "sigmoid":
        return 1.0, 1.0, 0.0
    if name == "tanh":
        return 2.0, 2.0, -1.0
    if name == "scaledtanh" and alpha != 0:
        return 2.0 * beta, 2.0 * alpha, -alpha
    return None


def _why_not_on_lstm(ctx: NodeContext, gates: int, specs, clip: float | None, weights) -> str | None:
    """None where an RNN runs on NNRt's LSTM (:func:`_rnn_on_lstm`), else why not (a clause for the problem)."""
    if gates != 1:
        return ""
    reasons = sorted({name for name, alpha, beta in specs if _as_sigmoid((name, alpha, beta)) is None})
    reasons = [f"activation {', '.join(reasons)}"] if reasons else []
    if clip is not None:
        reasons.append(f"clip={clip}")
    reasons += [f"{what} known only at run time" for what, name in zip("WRB", weights)
                if name is not None and ctx.value(name).data is None]
    if not reasons:
        return None
    return (f"; NNRt's LSTM computes an RNN only with Tanh, Sigmoid or ScaledTanh activations, no clip and constant "
            f"W, R, B -- here {', '.join(reasons)}")


# the RNN's cell state on NNRt's LSTM: held (input gate shut, forget gate open) where tanh is exactly 1, in float16,
# float32 and float64
_HELD_CELL = 20.0


def _rnn_on_lstm(ctx: NodeContext, x: str, weights, h0: str | None, specs, lengths, direction: str, layout: int,
                 dims) -> None:
    """RNN over a sequence it cannot unroll (dynamic, or too long) as one NNRt LSTM per direction whose cell state
    is held at 20 (input gate shut and forget gate open by biases of -/+1e4, cell state initial 20: tanh(c) = 1
    exactly), so that its h is its output gate, sigmoid(W_o x + R_o h + b_o). With the activation written as
    ``f(z) = scale * sigmoid(k z) + shift`` (:func:`_as_sigmoid`) and the state as ``H = scale * h + shift``:
    W_o = k W, R_o = k scale R, b_o = k (Wb + Rb + shift R 1), h0 = (H0 - shift) / scale; Y and Y_h are read back
    as scale * h + shift before ``lengths`` zero Y past each entry's length and pick each entry's last step (a
    reverse pass over each entry's steps reversed within its length, as :func:`_lstm_with_lengths`)."""
    steps, batch, features, hidden = dims
    dtype = ctx.value(x).dtype
    dirs = 2 if direction == "bidirectional" else 1
    w, r, b = (None if name is None else np.asarray(ctx.value(name).data, np.float64) for name in weights)
    if layout:
        x = ctx.transpose(x, (1, 0, 2))
    ys, hs = [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        hint = f"{ctx.name}.d{d}"
        k, scale, shift = _as_sigmoid(specs[d])
        w4, r4, b4 = np.zeros((1, 4 * hidden, features)), np.zeros((1, 4 * hidden, hidden)), np.zeros((1, 8 * hidden))
        bias = np.zeros(hidden) if b is None else b[d, :hidden] + b[d, hidden:]
        w4[0, hidden:2 * hidden] = k * w[d]  # gates i, o, f, c: only o reads the input and the state
        r4[0, hidden:2 * hidden] = k * scale * r[d]
        b4[0, :hidden] = -_FREEZE
        b4[0, hidden:2 * hidden] = k * (bias + shift * r[d].sum(axis=1))
        b4[0, 2 * hidden:3 * hidden] = _FREEZE
        state_shape = (1, batch, hidden)
        if h0 is None:
            h0_d = _state_zeros(ctx, x, 1, state_shape, dtype, f"d{d}.initial_h", value=-shift / scale)
        else:
            h0_d = _binary(ctx, OP.OH_NN_OPS_SUB, _direction_slice(ctx, h0, d, dirs, f"{hint}.H0"),
                           ctx.constant(np.asarray(shift, dtype)), f"{hint}.H0_shifted")
            h0_d = _binary(ctx, OP.OH_NN_OPS_MUL, h0_d, ctx.constant(np.asarray(1 / scale, dtype)), f"{hint}.h0")
        c0_d = _state_zeros(ctx, x, 1, state_shape, dtype, f"d{d}.initial_c", value=_HELD_CELL)
        if reverse:
            x_d = lengths.reversed_within(x) if lengths is not None else _time_reverse(ctx, x, steps)
        else:
            x_d = x
        y = ctx.new_value(dtype, (steps, batch, hidden), f"{hint}.y")
        hy = ctx.new_value(dtype, state_shape, f"{hint}.hy")
        cy = ctx.new_value(dtype, state_shape, f"{hint}.cy")
        params = {"OH_NN_LSTM_BIDIRECTIONAL": False, "OH_NN_LSTM_HAS_BIAS": True, "OH_NN_LSTM_INPUT_SIZE": features,
                  "OH_NN_LSTM_HIDDEN_SIZE": hidden, "OH_NN_LSTM_NUM_LAYERS": 1, "OH_NN_LSTM_NUM_DIRECTIONS": 1}
        ctx.emit(OP.OH_NN_OPS_LSTM, [x_d, *(ctx.constant(a.astype(dtype), f"{hint}.{what}")
                                            for a, what in ((w4, "W4"), (r4, "R4"), (b4, "B4"))), h0_d, c0_d],
                 [y, hy, cy], params)

        def read_back(h, tag, scale=scale, shift=shift, hint=hint):  # H = scale * h + shift
            if scale != 1:
                h = _binary(ctx, OP.OH_NN_OPS_MUL, h, ctx.constant(np.asarray(scale, dtype)), f"{hint}.{tag}.scaled")
            if shift != 0:
                h = _binary(ctx, OP.OH_NN_OPS_ADD, h, ctx.constant(np.asarray(shift, dtype)), f"{hint}.{tag}.H")
            return h

        y = read_back(y, "Y")
        if lengths is not None:
            hs.append(lengths.last_steps(y))
            ys.append(lengths.zero_outside(lengths.reversed_within(y) if reverse else y))
        else:
            hs.append(read_back(_reshape(ctx, hy, (-1, hidden)), "Y_h"))
            ys.append(_time_reverse(ctx, y, steps) if reverse else y)
    y_seq = ys[0] if dirs == 1 else _concat(ctx, ys, 2, hint=f"{ctx.name}.y")
    _lstm_results(ctx, y_seq, [_stack(ctx, hs, 0, hint=f"{ctx.name}.hy")], steps, batch, dirs, hidden, layout)


@converts("RNN")
def rnn(ctx: NodeContext) -> None:
    _recurrent(ctx, 1)


@converts("GRU")
def gru(ctx: NodeContext) -> None:
    _recurrent(ctx, 3)


# -- LSTM --------------------------------------------------------------------------------------------------------------

def _zeros_or_input(ctx: NodeContext, position: int, shape, dtype, hint: str) -> str:
    if ctx.has_input(position):
        return ctx.input(position)
    return ctx.constant(np.zeros(shape, dtype), f"{ctx.name}.{hint}")


def _time_reverse(ctx: NodeContext, name: str, steps: int) -> str:
    """``name`` reversed along axis 0 (a stride -1 over the whole axis when its length is dynamic)."""
    value = ctx.value(name)
    out = ctx.new_value(value.dtype, value.shape, f"{name}.reversed")
    if steps >= 0:
        ctx.emit(OP.OH_NN_OPS_GATHER, [name, ctx.constant(np.arange(steps - 1, -1, -1, dtype=np.int32)),
                                       ctx.constant(np.asarray([0], np.int64))], [out])
        return out
    rank = len(value.shape)
    every = (1 << rank) - 1
    ctx.emit(OP.OH_NN_OPS_STRIDED_SLICE, [name, ctx.constant(np.zeros(rank, np.int64)),
                                          ctx.constant(np.zeros(rank, np.int64)),
                                          ctx.constant(np.asarray([-1] + [1] * (rank - 1), np.int64))], [out],
             {"OH_NN_STRIDED_SLICE_BEGIN_MASK": every, "OH_NN_STRIDED_SLICE_END_MASK": every})
    return out


def _state_zeros(ctx: NodeContext, x: str, batch_axis: int, state_shape, dtype, hint: str, value: float = 0) -> str:
    """Zeros (or ``value``) of the state shape [dirs, batch, hidden] (a FILL of the batch read at run time when
    dynamic)."""
    if state_shape[1] >= 0:
        return ctx.constant(np.full(state_shape, value, dtype), f"{ctx.name}.{hint}")
    shape = shape_of_parts(ctx, [state_shape[0], dims_tensor(ctx, x, [batch_axis]), state_shape[2]],
                           f"{ctx.name}.{hint}")
    return ctx.emit_to(OP.OH_NN_OPS_FILL, [ctx.constant(np.asarray(value, dtype)), shape], dtype, state_shape,
                       f"{ctx.name}.{hint}")


@converts("LSTM")
def lstm(ctx: NodeContext) -> None:
    """ONNX LSTM onto NNRt's LSTM (one layer; gates iofc and bias [Wb | Rb] are the same in both) wherever it
    computes the node, any sequence length and batch:

    * layout=1 is transposed to layout 0; direction=reverse runs forward over the time-reversed sequence;
    * sequence_lens (constant, or known at run time): one LSTM per direction over each entry's own sequence
      (:func:`_lstm_with_lengths`).

    clip, input_forget, other activations and peepholes, which NNRt's LSTM does not compute, unroll the node over
    its (static) steps with the same gate arithmetic as DynamicQuantizeLSTM (:func:`_lstm_recurrence`)."""
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise _unsupported(f"direction={direction!r} is not supported")
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(ctx.attr("layout", 0))
    if layout not in (0, 1):
        raise _unsupported(f"layout={layout} is not supported")
    x = ctx.input(0)
    x_shape = ctx.value(x).shape
    if x_shape is None or len(x_shape) != 3:
        raise ConversionIssue(INVALID_MODEL, f"the LSTM input must be 3-D, got {x_shape}")
    steps, batch, features = (x_shape[1], x_shape[0], x_shape[2]) if layout else x_shape
    if features < 0:  # (steps and batch may stay dynamic: NNRt's LSTM takes any)
        raise ConversionIssue(DYNAMIC_SHAPE, f"the input size of the LSTM input {x!r} (shape {list(x_shape)}) must be "
                                             f"static (it is the NNRt LSTM's input_size)", tensor=x, axes=(2,))
    w_shape = ctx.static_shape(ctx.input(1), "W")
    hidden = w_shape[1] // 4
    hidden_attr = ctx.attr("hidden_size")
    if hidden_attr is not None and int(hidden_attr) != hidden:
        raise ConversionIssue(INVALID_MODEL, f"hidden_size={hidden_attr} disagrees with W {list(w_shape)}")
    if w_shape[0] != dirs:
        raise ConversionIssue(INVALID_MODEL, f"W {list(w_shape)} does not have {dirs} direction(s)")
    if len(ctx.node.output) > 3:
        raise ConversionIssue(INVALID_MODEL, "LSTM has at most 3 outputs")
    dtype = ctx.value(x).dtype
    clip = ctx.attr("clip")
    clip = None if clip is None else float(clip)
    if clip is not None and not clip > 0:
        raise ConversionIssue(INVALID_MODEL, f"clip={clip} must be > 0")
    input_forget = bool(int(ctx.attr("input_forget", 0)))
    specs = _activation_specs(ctx, ["Sigmoid", "Tanh", "Tanh"], dirs)
    peepholes = ctx.input(7) if ctx.has_input(7) else None
    if peepholes is not None:
        if ctx.static_shape(peepholes, "P") != (dirs, 3 * hidden):
            raise ConversionIssue(INVALID_MODEL, f"P must be [{dirs}, {3 * hidden}]")
        if _is_zero(ctx, peepholes):
            peepholes = None
    lengths = sequence_lengths(ctx, 4, steps, batch)
    if layout:
        x = ctx.transpose(x, (1, 0, 2))
    w, r = ctx.input(1), ctx.input(2)
    state_shape = (dirs, batch, hidden)
    states = []
    for position, what in ((5, "initial_h"), (6, "initial_c")):
        state = ctx.input(position) if ctx.has_input(position) else None
        if state is not None and layout:
            state = ctx.transpose(state, (1, 0, 2))
        states.append(state)
    plain = [("sigmoid", 0.0, 0.0), ("tanh", 0.0, 0.0), ("tanh", 0.0, 0.0)] * dirs
    if clip is not None or input_forget or specs != plain or peepholes is not None:
        _lstm_unrolled(ctx, x, w, r, peepholes, states, lengths, specs, clip, input_forget, direction, layout,
                       (steps, batch, features, hidden))
        return
    for name in ("activation_alpha", "activation_beta"):
        if ctx.attr(name):
            raise _unsupported(f"{name}={list(ctx.attr(name))} is not supported (Sigmoid, Tanh, Tanh take none)")
    b = _zeros_or_input(ctx, 3, (dirs, 8 * hidden), dtype, "B")
    h0 = states[0] if states[0] is not None else _state_zeros(ctx, x, 1, state_shape, dtype, "initial_h")
    c0 = states[1] if states[1] is not None else _state_zeros(ctx, x, 1, state_shape, dtype, "initial_c")
    if lengths is not None:
        _lstm_with_lengths(ctx, x, w, r, b, h0, c0, lengths, direction, layout, (steps, batch, features, hidden))
        return
    if direction == "reverse":
        x = _time_reverse(ctx, x, steps)
    outputs = list(ctx.node.output) + [""] * (3 - len(ctx.node.output))
    y_seq = ctx.new_value(dtype, (steps, batch, dirs * hidden), f"{ctx.name}.y")
    direct = [bool(name) and not layout for name in outputs[1:3]]  # states written straight to the ONNX outputs
    hy = outputs[1] if direct[0] else ctx.new_value(dtype, state_shape, f"{ctx.name}.hy")
    cy = outputs[2] if direct[1] else ctx.new_value(dtype, state_shape, f"{ctx.name}.cy")
    for name, is_direct in zip((hy, cy), direct):
        if is_direct:
            _set_shape(ctx, name, state_shape)
    params = {"OH_NN_LSTM_BIDIRECTIONAL": dirs == 2, "OH_NN_LSTM_HAS_BIAS": True,
              "OH_NN_LSTM_INPUT_SIZE": features, "OH_NN_LSTM_HIDDEN_SIZE": hidden,
              "OH_NN_LSTM_NUM_LAYERS": 1, "OH_NN_LSTM_NUM_DIRECTIONS": dirs}
    ctx.emit(OP.OH_NN_OPS_LSTM, [x, w, r, b, h0, c0], [y_seq, hy, cy], params)
    if outputs[0] and direction == "reverse":
        y_seq = _time_reverse(ctx, y_seq, steps)
    _lstm_results(ctx, y_seq, (hy, cy), steps, batch, dirs, hidden, layout)


def _lstm_results(ctx: NodeContext, y_seq: str, states, steps: int, batch: int, dirs: int, hidden: int,
                  layout: int) -> None:
    """The LSTM's outputs Y (from ``y_seq`` [steps, batch, dirs * hidden], forward in time, each direction's hidden
    units after the previous one's), Y_h and Y_c (from ``states``: [dirs, batch, hidden] each), as ``layout``
    lays them out."""
    outputs = list(ctx.node.output) + [""] * (3 - len(ctx.node.output))
    if outputs[0]:
        y = y_seq
        # (dims read at run time where the steps and the batch are both dynamic)
        lead = [steps if steps >= 0 else dims_tensor(ctx, y, [0]), batch if batch >= 0 else dims_tensor(ctx, y, [1])]
        y4 = reshape_to(ctx, y, [*lead, dirs, hidden], f"{ctx.name}.y4")
        if layout:  # [batch, seq, dirs, hidden]
            ctx.transpose(y4, (1, 0, 2, 3), output=outputs[0])
        elif dirs == 1:
            reshape_to(ctx, y, [lead[0], 1, lead[1], hidden], f"{ctx.name}.y", output=outputs[0])
        else:
            ctx.transpose(y4, (0, 2, 1, 3), output=outputs[0])
        _set_shape(ctx, outputs[0], [batch, steps, dirs, hidden] if layout else [steps, dirs, batch, hidden])
    for state, name in zip(states, outputs[1:3]):
        if not name or state == name:
            continue
        if layout:
            _set_shape(ctx, name, [batch, dirs, hidden])
            ctx.transpose(state, (1, 0, 2), output=name)
        else:
            ctx.alias(state, name)


def _direction_slice(ctx: NodeContext, name: str, d: int, dirs: int, hint: str) -> str:
    """``name[d:d + 1]`` (its first axis: the directions), a constant when ``name`` is one."""
    value = ctx.value(name)
    if dirs == 1:
        return name
    if value.data is not None:
        return ctx.constant(np.ascontiguousarray(value.data[d:d + 1]), hint)
    rank = len(value.shape)
    return ctx.emit_to(OP.OH_NN_OPS_SLICE, [name, ctx.constant(np.asarray([d] + [0] * (rank - 1), np.int64)),
                                            ctx.constant(np.asarray([1] + [-1] * (rank - 1), np.int64))],
                       value.dtype, (1, *value.shape[1:]), hint)


# the weight that holds an entry's cell state past its length: sigmoid(-FREEZE + ...) is exactly 0 (input gate) and
# sigmoid(FREEZE + ...) exactly 1 (forget gate) in float16/32/64 for any gate input below ~FREEZE - 20 in size
_FREEZE = 1.0e4


def _lstm_with_lengths(ctx: NodeContext, x: str, w: str, r: str, b: str, h0: str, c0: str, lengths,
                       direction: str, layout: int, dims) -> None:
    """LSTM over each entry's own sequence (``lengths``, _sequences.SequenceLengths): one NNRt LSTM per direction
    -- a reverse pass over each entry's steps reversed within its length, so that every entry's steps come first
    and its padding last -- then Y zeroed past each length, Y_h each entry's output at its last step, Y_c the
    final cell state, held from the entry's last step on by an extra input feature (1 past the length) whose
    weights shut the input gate and open the forget gate there (c = 1 * c + 0 * g: exact). An entry of length 0
    has 0 everywhere (onnxruntime)."""
    steps, batch, features, hidden = dims
    dtype = ctx.value(x).dtype
    dirs = 2 if direction == "bidirectional" else 1
    outputs = list(ctx.node.output) + [""] * (3 - len(ctx.node.output))
    hold = bool(outputs[2])  # the cell state is read only for Y_c
    if hold:
        # the padding past each length zeroed, so that no input there can outweigh the flag's weights (a huge or
        # NaN pad would open the input gate); onnxruntime never reads it
        x = lengths.zero_outside(x)
        outside = _binary(ctx, OP.OH_NN_OPS_SUB, ctx.constant(np.asarray(1, dtype)),
                          _cast(ctx, lengths.inside(x), dtype, f"{ctx.name}.inside"), f"{ctx.name}.outside")
        flag = reshape_to(ctx, outside, [dims_tensor(ctx, outside, [0, 1]), 1], f"{ctx.name}.outside")
        column = np.zeros((1, 4 * hidden, 1), dtype)
        column[0, :hidden] = -_FREEZE  # gates i, o, f, c
        column[0, 2 * hidden:3 * hidden] = _FREEZE
    ys, hs, cs = [], [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        hint = f"{ctx.name}.d{d}"
        x_d = lengths.reversed_within(x) if reverse else x
        w_d = _direction_slice(ctx, w, d, dirs, f"{hint}.W")
        size = features
        if hold:
            x_d = _concat(ctx, [x_d, flag], 2, hint=f"{hint}.x_held")
            w_d = _concat(ctx, [w_d, ctx.constant(column, f"{ctx.name}.hold")], 2, hint=f"{hint}.W_held")
            size += 1
        y = ctx.new_value(dtype, (steps, batch, hidden), f"{hint}.y")
        hy = ctx.new_value(dtype, (1, batch, hidden), f"{hint}.hy")
        cy = ctx.new_value(dtype, (1, batch, hidden), f"{hint}.cy")
        params = {"OH_NN_LSTM_BIDIRECTIONAL": False, "OH_NN_LSTM_HAS_BIAS": True, "OH_NN_LSTM_INPUT_SIZE": size,
                  "OH_NN_LSTM_HIDDEN_SIZE": hidden, "OH_NN_LSTM_NUM_LAYERS": 1, "OH_NN_LSTM_NUM_DIRECTIONS": 1}
        ctx.emit(OP.OH_NN_OPS_LSTM, [x_d, w_d, *(_direction_slice(ctx, t, d, dirs, f"{hint}.{k}")
                                                 for t, k in ((r, "R"), (b, "B"), (h0, "h0"), (c0, "c0")))],
                 [y, hy, cy], params)
        hs.append(lengths.last_steps(y))
        if hold:
            cs.append(lengths.zero_where_empty(_reshape(ctx, cy, (batch, hidden))))
        ys.append(lengths.zero_outside(lengths.reversed_within(y) if reverse else y))
    y_seq = _concat(ctx, ys, 2, hint=f"{ctx.name}.y")
    finals = [_stack(ctx, hs, 0, hint=f"{ctx.name}.hy"), _stack(ctx, cs, 0, hint=f"{ctx.name}.cy") if hold else None]
    _lstm_results(ctx, y_seq, finals, steps, batch, dirs, hidden, layout)


def _lstm_unrolled(ctx: NodeContext, x: str, w: str, r: str, peepholes: str | None, states, lengths, specs, clip,
                   input_forget: bool, direction: str, layout: int, dims) -> None:
    """LSTM unrolled over its static steps (for clip, input_forget, other activations and peepholes, which NNRt's
    LSTM does not compute): per direction X @ W^T for all steps at once, then per step :func:`_lstm_recurrence`;
    ``lengths`` hold each entry's state past its length and zero its outputs (as RNN / GRU)."""
    steps, batch, features, hidden = dims
    dtype = ctx.value(x).dtype
    dirs = 2 if direction == "bidirectional" else 1
    if steps < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"an LSTM with clip, input_forget, peepholes or other activations is "
                                             f"unrolled over its time steps (NNRt's LSTM computes none of them): the "
                                             f"sequence length of X (shape {list(ctx.value(ctx.input(0)).shape)}) "
                                             f"must be static", tensor=ctx.input(0), axes=(1 if layout else 0,))
    if steps * dirs * 2 > MAX_OPERATIONS_PER_NODE:
        raise ConversionIssue(TOO_LARGE, f"LSTM over {steps} time steps would unroll into more than "
                                         f"{MAX_OPERATIONS_PER_NODE} NNRt operations")
    b = ctx.input(3) if ctx.has_input(3) else None
    if b is not None and ctx.static_shape(b, "B") != (dirs, 8 * hidden):
        raise ConversionIssue(INVALID_MODEL, f"B must be [{dirs}, {8 * hidden}]")
    masks = None if lengths is None else [lengths.step_mask(t) for t in range(steps)]
    columns = 4 * hidden
    finals_h, finals_c, sequences = [], [], []
    for d in range(dirs):
        hint = f"{ctx.name}.d{d}"
        w_d = _slice_rows(ctx, w, d, 0, columns, f"{hint}.W")  # [4H, F]
        r_d = _slice_rows(ctx, r, d, 0, columns, f"{hint}.R")  # [4H, H]
        if ctx.value(w_d).data is not None:
            xw = _matmul(ctx, x, ctx.constant(np.ascontiguousarray(ctx.value(w_d).data.T), f"{hint}.WT"), f"{hint}.xw")
        else:
            xw = _matmul(ctx, x, w_d, f"{hint}.xw", transpose_b=True)
        if ctx.value(r_d).data is not None:
            r_t, transposed = ctx.constant(np.ascontiguousarray(ctx.value(r_d).data.T), f"{hint}.RT"), False
        else:
            r_t, transposed = r_d, True

        def recurrent(h, tag, r_t=r_t, transposed=transposed):
            return _matmul(ctx, h, r_t, f"{tag}.hr", transpose_b=transposed)

        bias = None
        if b is not None:
            wb = _slice_rows(ctx, b, d, 0, columns, f"{hint}.Wb")
            rb = _slice_rows(ctx, b, d, columns, 2 * columns, f"{hint}.Rb")
            if ctx.value(wb).data is not None and ctx.value(rb).data is not None:
                bias = ctx.constant(ctx.value(wb).data + ctx.value(rb).data, f"{hint}.bias")
            else:
                bias = _binary(ctx, OP.OH_NN_OPS_ADD, wb, rb, f"{hint}.bias")
            if _is_zero(ctx, bias):
                bias = None
        peep = None if peepholes is None else \
            [_slice_rows(ctx, peepholes, d, g * hidden, (g + 1) * hidden, f"{hint}.P{g}") for g in range(3)]
        h, c = (None if s is None or _is_zero(ctx, s) else _slice_rows(ctx, s, d, 0, ctx.value(s).shape[1],
                                                                       f"{hint}.{k}")
                for s, k in zip(states, ("h0", "c0")))
        outputs, h, c = _lstm_recurrence(ctx, _unstack(ctx, xw, 0), recurrent, bias, peep, h, c,
                                         specs[3 * d:3 * d + 3], clip, input_forget,
                                         direction == "reverse" or d == 1, masks, hint)
        for finals, state in ((finals_h, h), (finals_c, c)):
            finals.append(state if lengths is None else lengths.zero_where_empty(state))
        sequences.append(outputs)
    per_step = [sequences[0][t] if dirs == 1 else _concat(ctx, [sequences[0][t], sequences[1][t]], 1,
                                                          hint=f"{ctx.name}.Y{t}") for t in range(steps)]
    y_seq = _stack(ctx, per_step, 0, hint=f"{ctx.name}.Y")
    _lstm_results(ctx, y_seq, [_stack(ctx, finals_h, 0, hint=f"{ctx.name}.hy"),
                               _stack(ctx, finals_c, 0, hint=f"{ctx.name}.cy")], steps, batch, dirs, hidden, layout)


def _lstm_recurrence(ctx: NodeContext, steps: list[str], recurrent, bias: str | None, peep, h: str | None,
                     c: str | None, specs, clip: float | None, input_forget: bool, reverse: bool, masks,
                     hint: str) -> tuple[list[str], str | None, str | None]:
    """The ONNX LSTM step over the input projections ``steps`` ([batch, 4 * hidden] each, gates iofc): plus
    ``recurrent(h)`` (H @ R^T) and ``bias`` (Wb + Rb); peepholes ``peep`` (P_i, P_o, P_f: i and f on the previous
    cell state, o on the new one); ``clip`` on the gates' inputs (not on the cell state h's activation reads);
    activations ``specs`` (f, g, h); input_forget (f = 1 - i); ``masks`` ([batch, 1] per step, None: every entry)
    hold the states past an entry's length and zero its outputs. ``h``/``c``: the initial states (None: zeros).
    Returns (the output of every step, the final h, the final c)."""
    f_spec, g_spec, h_spec = specs
    outputs: list[str] = [None] * len(steps)  # type: ignore[list-item]
    for t in (range(len(steps) - 1, -1, -1) if reverse else range(len(steps))):
        tag = f"{hint}.t{t}"
        pre = steps[t]
        if h is not None:
            pre = _binary(ctx, OP.OH_NN_OPS_ADD, pre, recurrent(h, tag), f"{tag}.pre")
        if bias is not None:
            pre = _binary(ctx, OP.OH_NN_OPS_ADD, pre, bias, f"{tag}.biased")
        value = ctx.value(pre)
        hidden = value.shape[1] // 4
        gates = [ctx.new_value(value.dtype, (value.shape[0], hidden), f"{tag}.{gate}") for gate in "iofc"]
        ctx.emit(OP.OH_NN_OPS_SPLIT, [pre], gates, {"OH_NN_SPLIT_AXIS": 1, "OH_NN_SPLIT_OUTPUT_NUM": 4})
        gi, go, gf, gc = gates
        if peep is not None and c is not None:
            gi = _binary(ctx, OP.OH_NN_OPS_ADD, gi, _binary(ctx, OP.OH_NN_OPS_MUL, c, peep[0], f"{tag}.pi"),
                         f"{tag}.i_peep")
            gf = _binary(ctx, OP.OH_NN_OPS_ADD, gf, _binary(ctx, OP.OH_NN_OPS_MUL, c, peep[2], f"{tag}.pf"),
                         f"{tag}.f_peep")
        i = _activate(ctx, gi, f_spec, clip, f"{tag}.i_act")
        if input_forget:
            f = _binary(ctx, OP.OH_NN_OPS_SUB, ctx.constant(np.ones((), value.dtype), f"{hint}.one"), i,
                        f"{tag}.f_act")
        else:
            f = _activate(ctx, gf, f_spec, clip, f"{tag}.f_act")
        candidate = _activate(ctx, gc, g_spec, clip, f"{tag}.c_act")
        c_new = _binary(ctx, OP.OH_NN_OPS_MUL, i, candidate, f"{tag}.ic")
        if c is not None:
            c_new = _binary(ctx, OP.OH_NN_OPS_ADD, _binary(ctx, OP.OH_NN_OPS_MUL, c, f, f"{tag}.cf"), c_new,
                            f"{tag}.C")
        if peep is not None:
            go = _binary(ctx, OP.OH_NN_OPS_ADD, go, _binary(ctx, OP.OH_NN_OPS_MUL, c_new, peep[1], f"{tag}.po"),
                         f"{tag}.o_peep")
        o = _activate(ctx, go, f_spec, clip, f"{tag}.o_act")
        h_new = _binary(ctx, OP.OH_NN_OPS_MUL, _activate(ctx, c_new, h_spec, None, f"{tag}.h_act"), o, f"{tag}.H")
        if masks is not None and masks[t] is not None:
            # past its length an entry keeps its states (a reverse pass has not started yet) and outputs 0
            c, _ = _masked_step(ctx, masks[t], c_new, c, f"{tag}.c")
            h, outputs[t] = _masked_step(ctx, masks[t], h_new, h, f"{tag}.h")
        else:
            c, h, outputs[t] = c_new, h_new, h_new
    return outputs, h, c


# -- onnxruntime's contrib DynamicQuantizeLSTM (com.microsoft) ---------------------------------------------------------

def _direction_param(ctx: NodeContext, name: str, d: int, columns: int, what: str) -> str:
    """Direction ``d`` of a per-tensor ([dirs]) or per-channel ([dirs, columns]) scale / zero point: a scalar or a
    (columns,) tensor."""
    value = ctx.value(name)
    shape = ctx.static_shape(name, what)
    if len(shape) == 2:
        if shape[1] != columns:
            raise ConversionIssue(INVALID_MODEL, f"{what} {name!r} of shape {list(shape)} has not {columns} columns")
        return _slice_rows(ctx, name, d, 0, columns, f"{ctx.name}.{what}{d}")  # name[d, :]
    if value.data is not None:
        return ctx.constant(np.asarray(value.data[d]), f"{ctx.name}.{what}{d}")
    one = _slice_rows(ctx, _reshape(ctx, name, (shape[0], 1)), d, 0, 1, f"{ctx.name}.{what}{d}")
    return _reshape(ctx, one, ())


def _dequantized_product(ctx: NodeContext, a: str, weight: str, w_scale: str, w_zero: str, hint: str) -> str:
    """a @ (weight - w_zero) * w_scale as onnxruntime's quantized RNN GEMM computes it: ``a`` (float32) quantized
    to uint8 over the whole tensor (DynamicQuantizeLinear's formulas), the exact int32 product, then
    float(acc) * (a_scale * w_scale) (one scale, or one per column)."""
    a_q, a_scale, a_zero = _dynamic_quantize(ctx, a, f"{hint}.a")
    a_zero32 = _cast(ctx, _reshape(ctx, a_zero, ()), np.int32, f"{hint}.a_zp_i32")
    w_zero32 = _cast(ctx, w_zero, np.int32, f"{hint}.w_zp_i32")
    acc = _integer_product(ctx, a_q, a_zero32, weight, w_zero32, f"{hint}.acc")
    scale = _binary(ctx, OP.OH_NN_OPS_MUL, _reshape(ctx, a_scale, ()), w_scale, f"{hint}.scale")
    return _binary(ctx, OP.OH_NN_OPS_MUL, _cast(ctx, acc, np.float32, f"{hint}.acc_float"), scale, f"{hint}.real")


@converts("com.microsoft.DynamicQuantizeLSTM")
def dynamic_quantize_lstm(ctx: NodeContext) -> None:
    """An LSTM with int8/uint8 weights W [dirs, input, 4H] and R [dirs, H, 4H] (gates iofc, columns), each with a
    scale and zero point per direction or per column, unrolled over the static sequence as onnxruntime computes it:
    X (all steps at once) and each step's H are quantized to uint8 with computed parameters (DynamicQuantizeLinear's
    formulas), multiplied exactly in int32 and scaled back (float(acc) * (a_scale * w_scale)); then the ONNX LSTM
    gates: bias Wb + Rb, peepholes, clip (on the gates' inputs), input_forget, the activations f, g, h
    (Sigmoid, Tanh, Tanh by default; Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid, Affine, ScaledTanh with
    activation_alpha/beta), forward / reverse / bidirectional. A per-step H quantization over the whole batch is
    onnxruntime's single-threaded order (with several threads it may quantize batch chunks separately).
    sequence_lens must be a constant equal to the sequence length everywhere: with shorter ones onnxruntime
    quantizes H over entries in a way not reproduced here (zeros for the finished ones agree for two steps, then
    differ by ~4e-4)."""
    x, w, r = ctx.input(0), ctx.input(1), ctx.input(2)
    if ctx.value(x).dtype != np.float32:
        raise ConversionIssue(INVALID_MODEL, f"X has dtype {ctx.value(x).dtype} (float32 only)")
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise _unsupported(f"direction={direction!r} is not supported")
    dirs = 2 if direction == "bidirectional" else 1
    x_shape = ctx.static_shape(x, "X")
    if len(x_shape) != 3:
        raise ConversionIssue(INVALID_MODEL, f"X must be [seq_length, batch_size, input_size], got {list(x_shape)}")
    seq, batch, features = x_shape
    w_shape, r_shape = ctx.static_shape(w, "W"), ctx.static_shape(r, "R")
    hidden = r_shape[1] if len(r_shape) == 3 else -1
    hidden_attr = ctx.attr("hidden_size")
    if hidden_attr is not None and int(hidden_attr) != hidden:
        raise ConversionIssue(INVALID_MODEL, f"hidden_size={hidden_attr} disagrees with R {list(r_shape)}")
    if tuple(w_shape) != (dirs, features, 4 * hidden) or tuple(r_shape) != (dirs, hidden, 4 * hidden):
        raise ConversionIssue(INVALID_MODEL, f"W {list(w_shape)} / R {list(r_shape)} are not [{dirs}, {features}, "
                                             f"4 * hidden] / [{dirs}, hidden, 4 * hidden]")
    for name, what in ((w, "W"), (r, "R")):
        if ctx.value(name).dtype not in (np.int8, np.uint8):
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"{what} has dtype {ctx.value(name).dtype} (int8/uint8)")
    for position, what in ((8, "W_scale"), (9, "W_zero_point"), (10, "R_scale"), (11, "R_zero_point")):
        if not ctx.has_input(position):
            raise ConversionIssue(INVALID_MODEL, f"{what} (input #{position}) is required")
        shape = ctx.static_shape(ctx.input(position), what)
        if tuple(shape) not in ((dirs,), (dirs, 4 * hidden)):
            raise ConversionIssue(INVALID_MODEL, f"{what} of shape {list(shape)} is neither [{dirs}] (per tensor) nor "
                                                 f"[{dirs}, {4 * hidden}] (per channel)")
        operand = w if position < 10 else r
        expected = np.float32 if what.endswith("scale") else ctx.value(operand).dtype
        if ctx.value(ctx.input(position)).dtype != expected:
            raise ConversionIssue(INVALID_MODEL, f"{what} has dtype {ctx.value(ctx.input(position)).dtype}, expected "
                                                 f"{np.dtype(expected).name}")
    clip = ctx.attr("clip")
    clip = None if clip is None else float(clip)
    if clip is not None and clip <= 0:
        raise ConversionIssue(INVALID_MODEL, f"clip={clip} must be > 0")
    input_forget = bool(int(ctx.attr("input_forget", 0)))
    specs = _activation_specs(ctx, ["Sigmoid", "Tanh", "Tanh"], dirs)
    if ctx.has_input(4):  # (shorter ones: onnxruntime's quantization of H over the finished entries is not known)
        lens = np.asarray(ctx.constant_input(4, "sequence_lens")).reshape(-1)
        if lens.size != batch or np.any(lens != seq):
            raise _unsupported(f"sequence_lens {lens.tolist()} other than the sequence length ({seq}) everywhere are "
                               "not supported")
    b = ctx.input(3) if ctx.has_input(3) else None
    if b is not None and (ctx.static_shape(b, "B") != (dirs, 8 * hidden) or ctx.value(b).dtype != np.float32):
        raise ConversionIssue(INVALID_MODEL, f"B must be float32 [{dirs}, {8 * hidden}]")
    states = []
    for position, what in ((5, "initial_h"), (6, "initial_c")):
        state = ctx.input(position) if ctx.has_input(position) else None
        if state is not None and (ctx.static_shape(state, what) != (dirs, batch, hidden)
                                  or ctx.value(state).dtype != np.float32):
            raise ConversionIssue(INVALID_MODEL, f"{what} must be float32 [{dirs}, {batch}, {hidden}]")
        states.append(None if _is_zero(ctx, state) else state)
    peepholes = ctx.input(7) if ctx.has_input(7) else None
    if peepholes is not None:
        if ctx.static_shape(peepholes, "P") != (dirs, 3 * hidden):
            raise ConversionIssue(INVALID_MODEL, f"P must be [{dirs}, {3 * hidden}]")
        if _is_zero(ctx, peepholes):
            peepholes = None

    out = ctx.name
    columns = 4 * hidden
    finals_h, finals_c, sequences = [], [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        hint = f"{out}.d{d}"
        params = {what: _direction_param(ctx, ctx.input(position), d, columns, what)
                  for position, what in ((8, "W_scale"), (9, "W_zero_point"), (10, "R_scale"), (11, "R_zero_point"))}
        w_d = _slice_rows(ctx, w, d, 0, features, f"{hint}.W")
        r_d = _slice_rows(ctx, r, d, 0, hidden, f"{hint}.R")
        xw = _dequantized_product(ctx, x, w_d, params["W_scale"], params["W_zero_point"], f"{hint}.xw")
        steps = _unstack(ctx, xw, 0)
        bias = None
        if b is not None:
            wb = _slice_rows(ctx, b, d, 0, columns, f"{hint}.Wb")
            rb = _slice_rows(ctx, b, d, columns, 2 * columns, f"{hint}.Rb")
            if ctx.value(wb).data is not None and ctx.value(rb).data is not None:
                bias = ctx.constant(ctx.value(wb).data + ctx.value(rb).data, f"{hint}.bias")
            else:
                bias = _binary(ctx, OP.OH_NN_OPS_ADD, wb, rb, f"{hint}.bias")
            if _is_zero(ctx, bias):
                bias = None
        peep = None if peepholes is None else \
            [_slice_rows(ctx, peepholes, d, g * hidden, (g + 1) * hidden, f"{hint}.P{g}") for g in range(3)]
        h = None if states[0] is None else _slice_rows(ctx, states[0], d, 0, batch, f"{hint}.h0")
        c = None if states[1] is None else _slice_rows(ctx, states[1], d, 0, batch, f"{hint}.c0")

        def recurrent(h, tag, r_d=r_d, params=params):
            return _dequantized_product(ctx, h, r_d, params["R_scale"], params["R_zero_point"], f"{tag}.hr")

        outputs, h, c = _lstm_recurrence(ctx, steps, recurrent, bias, peep, h, c, specs[3 * d:3 * d + 3], clip,
                                         input_forget, reverse, None, hint)
        finals_h.append(h)
        finals_c.append(c)
        sequences.append(outputs)

    names = list(ctx.node.output) + [""] * (3 - len(ctx.node.output))
    if len(ctx.node.output) > 3:
        raise ConversionIssue(INVALID_MODEL, "DynamicQuantizeLSTM has at most 3 outputs")
    if names[0]:
        per_step = [sequences[0][t] if dirs == 1 else
                    _stack(ctx, [sequences[0][t], sequences[1][t]], 0, hint=f"{out}.Y{t}") for t in range(seq)]
        stacked = _stack(ctx, per_step, 0, hint=f"{out}.Y")
        _reshape(ctx, stacked, (seq, dirs, batch, hidden), output=names[0])
    for name, finals in ((names[1], finals_h), (names[2], finals_c)):
        if name:
            _stack(ctx, finals, 0, output=name, hint=name)
