"""Recurrent layers unrolled (RNN, GRU), spectral ops (DFT, STFT, windows, MelWeightMatrix), BitShift,
ReverseSequence, CenterCropPad and AffineGrid: ONNX ops without an NNRt counterpart, decomposed.

Decisions (also in the mapping rows' notes):

* RNN and GRU are unrolled over the static sequence length: the input projections of every time step are one
  MATMUL per gate (``X @ W_g^T + biases``) and one UNSTACK; each step adds ``H @ R_g^T`` (MATMUL), applies the
  activations, and the outputs are STACKed. W, R, B and initial_h may be runtime tensors (then SLICEd per
  direction and gate) or constants. The zero initial state skips the first recurrent product. Activations
  Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid, Affine and ScaledTanh (alpha/beta taken from activation_alpha /
  activation_beta in order, for the functions that use them, else the ONNX defaults) and ``clip`` (CLIP on every
  activation's input) are converted; other activations are rejected. A constant ``sequence_lens`` (values in
  [1, seq]) masks the steps past an entry's length with constant WHERE masks: the state is kept (a reverse pass
  starts at the entry's last step) and Y is 0 there, as onnxruntime; a runtime sequence_lens needs binding.
  GRU: ``h~ = g(xh + (r*H) Rh^T + Rbh + Wbh)`` or, with linear_before_reset, ``g(xh + Wbh + r*(H Rh^T + Rbh))``;
  ``H' = h~ + z*(H - h~)``.
* Accuracy: float32 tensors are computed in float32 (the kernels' MATMUL accumulates in float32), like the other
  decompositions; the only node-suite cases that fail (test_dft_inverse, _opset19) expect float32 FFT round-off
  (1.9e-7 where the exact inverse is 0) beyond the suite's atol 1e-7: a float64 evaluation misses them too.
* DFT is one MATMUL with a constant real matrix: the transformed axis and the real/imaginary pair are flattened
  into the contraction dim (TRANSPOSE around it unless the axis is the last signal axis). The matrix holds
  dft_length zero-padding/truncation, onesided (RFFT), inverse (1/n) and IRFFT (one-sided Hermitian input,
  the imaginary parts of the DC and Nyquist bins ignored, as numpy's irfft). Angles are reduced exactly
  (``k*n mod n_fft``) and the matrix is built in float64, rounded once to the input dtype; the product
  accumulates in float32 (float16 inputs too). Needs a static input shape and constant dft_length/axis.
* STFT: the frames are one GATHER with constant positions, the window (a constant: folded into the DFT matrix;
  else a MUL) and the DFT are one MATMUL.
* HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix need constant inputs and become constants
  (windows computed in float64 with the reference formulas, then rounded to output_datatype; the mel matrix
  with the reference algorithm, on the inputs' own dtypes, so the integer bin edges match it exactly).
* BitShift needs constant shift amounts: LEFT is a MUL by 2^y (wrapping, so a signed shift into or past the sign
  bit matches); RIGHT is an integer DIV by 2^y (truncation = floor for unsigned; for signed X the arithmetic
  shift is ``~((~x) / 2^y)`` for negative x, via LESS/SUB/WHERE). Shift amounts < 0 or >= the bit width give 0
  (-1 for a negative x shifted right), as opset 28 specifies.
* ReverseSequence needs constant sequence_lens: one GATHER_ND with constant (time, batch) coordinates.
* CenterCropPad needs a constant target shape and static dims on the cropped/padded axes: SLICE, then PAD
  (the extra unit of an odd difference goes to the end, as the reference).
* AffineGrid needs a constant size: a constant homogeneous base grid times theta^T (one MATMUL), reshaped.
"""
from __future__ import annotations

import numpy as np
from onnx import helper

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.graph import Value
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from ..context import NodeContext
from . import converts

FLOAT = ("float16", "float32", "float64")
MAX_IO = 200  # AddOperation caps an input/output index list at 200


# -- helpers -------------------------------------------------------------------------------------------------------





def _float_dtype(ctx: NodeContext, name: str, what: str) -> np.dtype:
    dtype = np.dtype(ctx.value(name).dtype)
    if dtype.name not in FLOAT:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{what} {name!r} has dtype {dtype.name}: {ctx.node.op_type} on NNRt "
                                                 f"supports {', '.join(FLOAT)}", tensor=name)
    return dtype


def _scalar_int(ctx: NodeContext, position: int, what: str) -> int:
    array = np.asarray(ctx.constant_input(position, what))
    if array.size != 1:
        raise ConversionIssue(INVALID_MODEL, f"{what} must be a scalar, got shape {list(array.shape)}")
    return int(array.reshape(-1)[0])


def _onnx_dtype(ctx: NodeContext, code: int) -> np.dtype:
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(code)))
        from_numpy(dtype)
    except (KeyError, TypeError, ValueError):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"output_datatype={code} has no NNRt data type") from None
    return dtype


def _set_constant(ctx: NodeContext, name: str, array: np.ndarray) -> None:
    array = np.ascontiguousarray(array).reshape(np.shape(array))
    if 0 in array.shape:
        raise ConversionIssue(INVALID_MODEL, f"{name!r} would be empty (shape {list(array.shape)}): NNRt tensors "
                                             "cannot have a 0 dim")
    ctx.graph.add_value(Value(name, array.dtype, tuple(array.shape), array))


def _reshape(ctx: NodeContext, name: str, shape, output: str | None = None) -> str:
    value = ctx.value(name)
    if output is None and value.shape is not None and tuple(value.shape) == tuple(shape):
        return name
    return ctx.emit_to(OP.OH_NN_OPS_RESHAPE, [name, ctx.constant(np.asarray(shape, np.int64))], value.dtype, shape,
                 f"{name}.reshaped", output=output)


def _transpose(ctx: NodeContext, name: str, perm) -> str:
    if list(perm) == list(range(len(perm))):
        return name
    return ctx.transpose(name, list(perm))


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


def _binary(ctx: NodeContext, op: OP, a: str, b: str, hint: str, output: str | None = None) -> str:
    va, vb = ctx.value(a), ctx.value(b)
    shape = tuple(np.broadcast_shapes(tuple(max(d, 1) for d in va.shape), tuple(max(d, 1) for d in vb.shape)))
    dtype = np.dtype(np.bool_) if op in (OP.OH_NN_OPS_LESS,) else va.dtype
    return ctx.emit_to(op, [a, b], dtype, shape, hint, output=output)


def _matmul(ctx: NodeContext, a: str, b: str, hint: str, transpose_b: bool = False) -> str:
    va, vb = ctx.value(a), ctx.value(b)
    bs = list(vb.shape)
    n = bs[-2] if transpose_b else bs[-1]
    batch = tuple(np.broadcast_shapes(tuple(va.shape[:-2]), tuple(bs[:-2])))
    shape = (*batch, va.shape[-2], n) if len(va.shape) >= 2 else (*batch, n)
    params = {"OH_NN_MATMUL_TRANSPOSE_B": True} if transpose_b else {}
    return ctx.emit_to(OP.OH_NN_OPS_MATMUL, [a, b], va.dtype, shape, hint, params)


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


# -- RNN / GRU -------------------------------------------------------------------------------------------------------

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
    x_shape = ctx.static_shape(x, "input X")
    if len(x_shape) != 3:
        raise ConversionIssue(INVALID_MODEL, f"X must have rank 3, got shape {list(x_shape)}")
    seq, batch = (x_shape[1], x_shape[0]) if layout else (x_shape[0], x_shape[1])
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
    masks = None  # per step: which batch entries are still within their sequence (None: all, always)
    if ctx.has_input(4):
        lens = np.asarray(ctx.constant_input(4, "sequence_lens")).astype(np.int64).reshape(-1)
        if lens.size != batch or np.any(lens < 1) or np.any(lens > seq):
            raise ConversionIssue(INVALID_MODEL, f"sequence_lens {lens.tolist()} must hold {batch} values in "
                                                 f"[1, {seq}]")
        if np.any(lens < seq):
            masks = [(t < lens)[:, None] for t in range(seq)]
    b = ctx.input(3) if ctx.has_input(3) else None
    if b is not None and ctx.static_shape(b, "B") != (directions, 2 * gates * hidden):
        raise ConversionIssue(INVALID_MODEL, f"B has shape {list(ctx.value(b).shape)}, expected "
                                             f"{[directions, 2 * gates * hidden]}")
    h0 = ctx.input(5) if ctx.has_input(5) else None
    if h0 is not None:
        expected = (batch, directions, hidden) if layout else (directions, batch, hidden)
        if ctx.static_shape(h0, "initial_h") != expected:
            raise ConversionIssue(INVALID_MODEL, f"initial_h has shape {list(ctx.value(h0).shape)}, expected "
                                                 f"{list(expected)}")
        if _is_zero(ctx, h0):
            h0 = None
        elif layout:
            h0 = _transpose(ctx, h0, (1, 0, 2))
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

        h = None if h0 is None else _slice_rows(ctx, h0, d, 0, batch, f"{hint}.h0")
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
            if masks is not None and not masks[t].all():
                # past its length an entry keeps its state (a reverse pass has not started yet) and outputs 0
                zeros = ctx.constant(np.zeros((batch, hidden), dtype), f"{hint}.zeros")
                if not masks[t].any():
                    h, outputs[t] = h_prev, zeros
                else:
                    mask = ctx.constant(masks[t], f"{hint}.{tag}.mask")
                    h = ctx.emit_to(OP.OH_NN_OPS_WHERE, [mask, h, h_prev or zeros], dtype, (batch, hidden),
                              f"{hint}.{tag}.kept")
                    outputs[t] = ctx.emit_to(OP.OH_NN_OPS_WHERE, [mask, h, zeros], dtype, (batch, hidden),
                                       f"{hint}.{tag}.y")
        finals.append(h)
        sequences.append(outputs)

    y = ctx.output(0) if len(ctx.node.output) > 0 and ctx.node.output[0] else None
    y_h = ctx.output(1) if len(ctx.node.output) > 1 and ctx.node.output[1] else None
    if len(ctx.node.output) > 2 and any(ctx.node.output[2:]):
        raise ConversionIssue(INVALID_MODEL, f"{kind} has at most 2 outputs")
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


@converts("RNN")
def rnn(ctx: NodeContext) -> None:
    _recurrent(ctx, 1)


@converts("GRU")
def gru(ctx: NodeContext) -> None:
    _recurrent(ctx, 3)


# -- DFT / STFT ------------------------------------------------------------------------------------------------------

def _angles(rows: np.ndarray, cols: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2*pi*(r*c mod length)/length (exact reduction; exact zeros where they belong)."""
    m = np.outer(rows.astype(np.int64), cols.astype(np.int64)) % length
    theta = 2 * np.pi * m / length
    cos, sin = np.cos(theta), np.sin(theta)
    cos[np.abs(cos) < 1e-12] = 0.0
    sin[np.abs(sin) < 1e-12] = 0.0
    return cos, sin


def dft_matrix(n_in: int, c_in: int, length: int, inverse: bool, onesided: bool) -> tuple[np.ndarray, int, int]:
    """The float64 matrix M with ``y.reshape(..., k_out * c_out) = x.reshape(..., n_in * c_in) @ M`` for the ONNX DFT
    of ``n_in`` values (c_in = 1 real, 2 complex) with dft_length ``length``; returns (M, k_out, c_out)."""
    if not inverse:
        k_out, c_out, used = (length // 2 + 1 if onesided else length), 2, min(n_in, length)
        matrix = np.zeros((n_in, c_in, k_out, c_out))
        cos, sin = _angles(np.arange(used), np.arange(k_out), length)
        matrix[:used, 0, :, 0], matrix[:used, 0, :, 1] = cos, -sin
        if c_in == 2:
            matrix[:used, 1, :, 0], matrix[:used, 1, :, 1] = sin, cos
    elif not onesided:
        k_out, c_out, used = length, 2, min(n_in, length)
        matrix = np.zeros((n_in, c_in, k_out, c_out))
        cos, sin = _angles(np.arange(used), np.arange(k_out), length)
        matrix[:used, 0, :, 0], matrix[:used, 0, :, 1] = cos / length, sin / length
        if c_in == 2:
            matrix[:used, 1, :, 0], matrix[:used, 1, :, 1] = -sin / length, cos / length
    else:  # IRFFT: bins 0..length//2 of a Hermitian spectrum -> a real signal (numpy's irfft)
        k_out, c_out, used = length, 1, min(n_in, length // 2 + 1)
        weights = np.full(used, 2.0)
        weights[0] = 1.0
        if length % 2 == 0 and used > length // 2:
            weights[length // 2] = 1.0
        matrix = np.zeros((n_in, c_in, k_out, c_out))
        cos, sin = _angles(np.arange(used), np.arange(k_out), length)
        matrix[:used, 0, :, 0] = weights[:, None] * cos / length
        if c_in == 2:
            matrix[:used, 1, :, 0] = -weights[:, None] * sin / length
    return matrix.reshape(n_in * c_in, k_out * c_out), k_out, c_out


def _spectral_product(ctx: NodeContext, x: str, axis: int, matrix: np.ndarray, k_out: int, c_out: int,
                      output: str) -> None:
    """``output`` = x with (axis, last) transformed by ``matrix``: TRANSPOSE, RESHAPE, MATMUL, RESHAPE, TRANSPOSE."""
    value = ctx.value(x)
    shape = list(value.shape)
    rank = len(shape)
    perm = [i for i in range(rank - 1) if i != axis] + [axis, rank - 1]
    moved = _transpose(ctx, x, perm)
    lead = [shape[p] for p in perm[:-2]]
    flat = _reshape(ctx, moved, (lead or [1]) + [shape[axis] * shape[-1]])
    product = _matmul(ctx, flat, ctx.constant(matrix.astype(value.dtype), f"{ctx.name}.dft"), f"{ctx.name}.product")
    result_shape = lead + [k_out, c_out]
    inverse = list(np.argsort(perm))
    out_shape = [result_shape[p] for p in inverse]
    ctx.settle(output, out_shape, force=True)
    if inverse == list(range(rank)):
        _reshape(ctx, product, result_shape, output=output)
        return
    spectrum = _reshape(ctx, product, result_shape)
    ctx.settle(output, out_shape)
    ctx.transpose(spectrum, inverse, output=output)


@converts("DFT")
def dft(ctx: NodeContext) -> None:
    x = ctx.input(0)
    _float_dtype(ctx, x, "input")
    shape = ctx.static_shape(x, "input")
    rank = len(shape)
    inverse, onesided = int(ctx.attr("inverse", 0)), int(ctx.attr("onesided", 0))
    if ctx.opset >= 20:
        axis = _scalar_int(ctx, 2, "axis") if ctx.has_input(2) else -2
    else:
        axis = int(ctx.attr("axis", 1))
    if rank < 2 or not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise ConversionIssue(INVALID_MODEL, f"axis={axis} is out of range for an input of rank {rank} (the last dim "
                                             "holds the real/imaginary parts)")
    axis %= rank
    if shape[-1] not in (1, 2):
        raise ConversionIssue(INVALID_MODEL, f"the last dim of the input must be 1 (real) or 2 (complex), got "
                                             f"{shape[-1]}")
    n_in = shape[axis]
    if ctx.has_input(1):
        length = _scalar_int(ctx, 1, "dft_length")
    else:
        length = 2 * (n_in - 1) if inverse and onesided else n_in
    if length < 1:
        raise ConversionIssue(INVALID_MODEL, f"dft_length={length} must be >= 1")
    matrix, k_out, c_out = dft_matrix(n_in, shape[-1], length, bool(inverse), bool(onesided))
    _spectral_product(ctx, x, axis, matrix, k_out, c_out, ctx.output(0))


@converts("STFT")
def stft(ctx: NodeContext) -> None:
    x = ctx.input(0)
    dtype = _float_dtype(ctx, x, "signal")
    shape = ctx.static_shape(x, "signal")
    if len(shape) != 3 or shape[-1] not in (1, 2):
        raise ConversionIssue(INVALID_MODEL, f"the signal must be [batch, length, 1 or 2], got {list(shape)}")
    batch, length, parts = shape
    step = _scalar_int(ctx, 1, "frame_step")
    window = ctx.input(2) if ctx.has_input(2) else None
    if ctx.has_input(3):
        frame = _scalar_int(ctx, 3, "frame_length")
    elif window is not None:
        frame = ctx.static_shape(window, "window")[0]
    else:
        frame = length
    if window is not None and tuple(ctx.static_shape(window, "window")) != (frame,):
        raise ConversionIssue(INVALID_MODEL, f"the window has shape {list(ctx.value(window).shape)}, frame_length is "
                                             f"{frame}")
    onesided = int(ctx.attr("onesided", 1))
    if step < 1 or not 1 <= frame <= length:
        raise ConversionIssue(INVALID_MODEL, f"frame_step={step} / frame_length={frame} do not fit a signal of length "
                                             f"{length}")
    frames = (length - frame) // step + 1
    if frames == 1 and frame == length:
        framed = _reshape(ctx, x, [batch, 1, frame, parts])
    else:
        positions = np.arange(frames)[:, None] * step + np.arange(frame)[None, :]
        framed = ctx.emit_to(OP.OH_NN_OPS_GATHER, [x, ctx.constant(positions.astype(np.int64), f"{ctx.name}.frames"),
                                                  ctx.constant(np.asarray([1], np.int64))],
                       dtype, [batch, frames, frame, parts], f"{ctx.name}.framed")
    matrix, k_out, c_out = dft_matrix(frame, parts, frame, False, bool(onesided))
    window_data = None if window is None else ctx.value(window).data
    if window_data is not None:
        matrix = (matrix.reshape(frame, parts, -1) * window_data.astype(np.float64).reshape(frame, 1, 1)).reshape(
            frame * parts, -1)
    elif window is not None:
        _float_dtype(ctx, window, "window")
        column = _reshape(ctx, window, [frame, 1])
        framed = _binary(ctx, OP.OH_NN_OPS_MUL, framed, column, f"{ctx.name}.windowed")
    flat = _reshape(ctx, framed, [batch, frames, frame * parts])
    product = _matmul(ctx, flat, ctx.constant(matrix.astype(dtype), f"{ctx.name}.dft"), f"{ctx.name}.product")
    ctx.settle(ctx.output(0), [batch, frames, k_out, c_out], force=True)
    _reshape(ctx, product, [batch, frames, k_out, c_out], output=ctx.output(0))


# -- windows, mel weights --------------------------------------------------------------------------------------------

def window_values(kind: str, size: int, periodic: bool) -> np.ndarray:
    """HannWindow / HammingWindow / BlackmanWindow in float64 (the ONNX reference formulas)."""
    n = np.arange(size, dtype=np.float64)
    span = size if periodic else size - 1
    with np.errstate(all="ignore"):
        if kind == "HannWindow":
            return np.sin(np.pi * n / span) ** 2
        if kind == "HammingWindow":
            return 25.0 / 46.0 - 21.0 / 46.0 * np.cos(2 * np.pi * n / span)
        return 0.42 - 0.5 * np.cos(2 * np.pi * n / span) + 0.08 * np.cos(4 * np.pi * n / span)


@converts("BlackmanWindow", "HammingWindow", "HannWindow")
def window(ctx: NodeContext) -> None:
    size = _scalar_int(ctx, 0, "the window size")
    periodic = int(ctx.attr("periodic", 1))
    dtype = _onnx_dtype(ctx, ctx.attr("output_datatype", 1))
    if size < 1:
        raise ConversionIssue(INVALID_MODEL, f"window size {size}: NNRt tensors cannot be empty")
    values = window_values(ctx.node.op_type, size, bool(periodic))
    _set_constant(ctx, ctx.output(0), values.astype(dtype))


def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz) -> np.ndarray:
    """The ONNX reference algorithm verbatim (float64 result), on the inputs' own dtypes: the integer bin edges
    depend on the precision of each step."""
    num_spectrogram_bins = dft_length // 2 + 1
    frequency_bins = np.arange(0, num_mel_bins + 2)
    low_frequency_mel = 2595 * np.log1p(lower_edge_hertz / 700) / np.log(10)
    high_frequency_mel = 2595 * np.log1p(upper_edge_hertz / 700) / np.log(10)
    mel_step = (high_frequency_mel - low_frequency_mel) / frequency_bins.shape[0]
    frequency_bins = frequency_bins * mel_step + low_frequency_mel
    frequency_bins = 700 * np.expm1(frequency_bins / 2595 * np.log(10))
    frequency_bins = ((dft_length + 1) * frequency_bins) // sample_rate
    frequency_bins = frequency_bins.astype(int)
    output = np.zeros((int(num_spectrogram_bins), int(num_mel_bins)))
    for i in range(int(num_mel_bins)):
        lower, center, higher = frequency_bins[i], frequency_bins[i + 1], frequency_bins[i + 2]
        low_to_center = center - lower
        if low_to_center == 0:
            output[center, i] = 1
        else:
            for j in range(lower, center + 1):
                output[j, i] = float(j - lower) / float(low_to_center)
        center_to_high = higher - center
        if center_to_high > 0:
            for j in range(center, higher):
                output[j, i] = float(higher - j) / float(center_to_high)
    return output


@converts("MelWeightMatrix")
def mel_weights(ctx: NodeContext) -> None:
    names = ["num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"]
    args = []
    for position, what in enumerate(names):
        array = np.asarray(ctx.constant_input(position, what))
        if array.size != 1:
            raise ConversionIssue(INVALID_MODEL, f"{what} must be a scalar, got shape {list(array.shape)}")
        args.append(array.reshape(()))
    dtype = _onnx_dtype(ctx, ctx.attr("output_datatype", 1))
    bins, dft_length, rate = (int(a) for a in args[:3])
    if bins < 1 or dft_length < 1 or rate < 1:
        raise ConversionIssue(INVALID_MODEL, f"num_mel_bins={bins}, dft_length={dft_length}, sample_rate={rate} "
                                             "must be >= 1")
    try:
        with np.errstate(all="ignore"):
            values = mel_weight_matrix(*args)
    except IndexError:
        raise ConversionIssue(INVALID_MODEL, "the mel bands fall outside the spectrogram bins (upper_edge_hertz "
                                             "beyond sample_rate / 2?)") from None
    _set_constant(ctx, ctx.output(0), values.astype(dtype))


# -- BitShift --------------------------------------------------------------------------------------------------------

@converts("BitShift")
def bit_shift(ctx: NodeContext) -> None:
    x = ctx.input(0)
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ConversionIssue(INVALID_MODEL, f"direction={direction!r} must be 'LEFT' or 'RIGHT'")
    value = ctx.value(x)
    dtype = np.dtype(value.dtype)
    if dtype.kind not in "iu":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"BitShift on {dtype.name} (integers only)", tensor=x)
    raw = np.asarray(ctx.constant_input(1, "the shift amounts Y"))
    amounts = raw.astype(np.int64)
    if raw.dtype == np.uint64:
        amounts = np.where(raw > np.uint64(1 << 62), np.int64(-1), amounts)  # huge amounts are out of range too
    bits = dtype.itemsize * 8
    unsigned = np.dtype(f"u{dtype.itemsize}")
    if value.shape is not None:
        ctx.settle(ctx.output(0), np.broadcast_shapes(tuple(max(d, 1) for d in value.shape), amounts.shape))

    def powers(valid):
        exponent = np.where(valid, amounts, 0).astype(np.uint64)
        return np.where(valid, np.left_shift(np.uint64(1), exponent), np.uint64(0)).astype(unsigned).view(dtype)

    out = ctx.output(0)
    if direction == "LEFT":
        factors = powers((amounts >= 0) & (amounts < bits))
        if np.all(factors == 1):
            ctx.alias(x, out)
            return
        ctx.emit(OP.OH_NN_OPS_MUL, [x, ctx.constant(factors, f"{ctx.name}.factors")], [out])
        return
    # RIGHT: a signed divisor must stay representable, so a signed x >> (bits - 1) is the sign fill (mask 0)
    valid = (amounts >= 0) & (amounts < (bits - 1 if dtype.kind == "i" else bits))
    divisors = np.where(valid, powers(valid), np.ones((), dtype)).astype(dtype)
    if np.all(amounts == 0):
        ctx.alias(x, out)
        return

    def shift(source: str, output: str | None) -> str:
        quotient = _binary(ctx, OP.OH_NN_OPS_DIV, source, ctx.constant(divisors, f"{ctx.name}.divisors"),
                           f"{ctx.name}.quotient", output=output if valid.all() else None)
        if valid.all():
            return quotient
        return _binary(ctx, OP.OH_NN_OPS_MUL, quotient, ctx.constant(valid.astype(dtype), f"{ctx.name}.mask"),
                       f"{ctx.name}.masked", output=output)

    if dtype.kind == "u":
        shift(x, out)
        return
    minus_one = ctx.constant(np.asarray(-1, dtype), f"{ctx.name}.minus_one")
    negative = ctx.emit_to(OP.OH_NN_OPS_LESS, [x, ctx.constant(np.asarray(0, dtype))], np.bool_, value.shape,
                     f"{ctx.name}.negative")
    flipped = _binary(ctx, OP.OH_NN_OPS_SUB, minus_one, x, f"{ctx.name}.not")  # ~x = -1 - x (no overflow)
    source = ctx.emit_to(OP.OH_NN_OPS_WHERE, [negative, flipped, x], dtype, value.shape, f"{ctx.name}.magnitude")
    shifted = shift(source, None)
    back = _binary(ctx, OP.OH_NN_OPS_SUB, minus_one, shifted, f"{ctx.name}.back")
    ctx.emit_to(OP.OH_NN_OPS_WHERE, [negative, back, shifted], dtype, ctx.value(shifted).shape, "", output=out)


# -- ReverseSequence, CenterCropPad, AffineGrid ---------------------------------------------------------------------

@converts("ReverseSequence")
def reverse_sequence(ctx: NodeContext) -> None:
    x = ctx.input(0)
    rank = ctx.rank(x)
    batch_axis, time_axis = int(ctx.attr("batch_axis", 1)), int(ctx.attr("time_axis", 0))
    if rank < 2 or {batch_axis, time_axis} != {0, 1}:
        raise ConversionIssue(INVALID_MODEL, f"batch_axis={batch_axis} / time_axis={time_axis} must be 0 and 1 (in "
                                             f"either order) of an input of rank >= 2 (rank {rank})")
    shape = ctx.value(x).shape
    if shape[0] < 0 or shape[1] < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"ReverseSequence needs static batch and time dims, got {list(shape)}")
    lens = np.asarray(ctx.constant_input(1, "sequence_lens")).astype(np.int64).reshape(-1)
    batch, time = shape[batch_axis], shape[time_axis]
    if lens.size != batch or np.any(lens < 0) or np.any(lens > time):
        raise ConversionIssue(INVALID_MODEL, f"sequence_lens {lens.tolist()} must hold {batch} values in [0, {time}]")
    ctx.settle(ctx.output(0), shape)
    if np.all(lens <= 1):
        ctx.alias(x, ctx.output(0))
        return
    source = np.tile(np.arange(time), (batch, 1))
    for b, length in enumerate(lens):
        source[b, :length] = np.arange(length)[::-1]
    batches = np.broadcast_to(np.arange(batch)[:, None], (batch, time))
    coords = np.stack([batches, source], -1) if batch_axis == 0 else np.stack([source, batches], -1).transpose(1, 0, 2)
    ctx.emit(OP.OH_NN_OPS_GATHER_ND, [x, ctx.constant(np.ascontiguousarray(coords), f"{ctx.name}.coords")],
             [ctx.output(0)])


@converts("CenterCropPad")
def center_crop_pad(ctx: NodeContext) -> None:
    x = ctx.input(0)
    rank = ctx.rank(x)
    shape = list(ctx.value(x).shape)
    target = [int(v) for v in np.asarray(ctx.constant_input(1, "the target shape")).reshape(-1)]
    axes = ctx.attr("axes")
    axes = list(range(rank)) if axes is None else [int(a) for a in axes]
    if any(not -rank <= a < rank for a in axes) or len({a % rank for a in axes}) != len(axes):
        raise ConversionIssue(INVALID_MODEL, f"axes={axes} are out of range or repeated for rank {rank}")
    axes = [a % rank for a in axes]
    if len(axes) != len(target):
        raise ConversionIssue(INVALID_MODEL, f"the target shape {target} needs one value per axis {axes}")
    begin, size, pads, out_shape = [], [], [[0, 0] for _ in range(rank)], list(shape)
    crop_axes = []
    for axis, wanted in zip(axes, target):
        dim = shape[axis]
        if wanted < 1:
            raise ConversionIssue(INVALID_MODEL, f"target size {wanted} on axis {axis}: NNRt tensors cannot be empty")
        if dim < 0:
            raise ConversionIssue(DYNAMIC_SHAPE, f"axis {axis} of {x!r} needs a static size to crop or pad it")
        if wanted < dim:
            crop_axes.append(axis)
            begin.append((dim - wanted) // 2)
            size.append(wanted)
        elif wanted > dim:
            extra = wanted - dim
            pads[axis] = [extra // 2, extra - extra // 2]
        out_shape[axis] = wanted
    out = ctx.output(0)
    padded = any(p != [0, 0] for p in pads)
    current = x
    if crop_axes:
        shape_after = list(shape)
        for axis, s in zip(crop_axes, size):
            shape_after[axis] = s
        current = ctx.emit_to(OP.OH_NN_OPS_SLICE, [x, ctx.constant(np.asarray(begin, np.int64)),
                                                  ctx.constant(np.asarray(size, np.int64))],
                        ctx.value(x).dtype, shape_after, f"{ctx.name}.crop", {"OH_NN_SLICE_AXES": crop_axes},
                        output=None if padded else out)
    if padded:
        ctx.emit_to(OP.OH_NN_OPS_PAD, [current, ctx.constant(np.asarray(pads, np.int64))], ctx.value(x).dtype,
              out_shape, "", output=out)
    elif not crop_axes:
        ctx.alias(x, out)


def _grid_axis(n: int, align_corners: bool) -> np.ndarray:
    if align_corners:
        return -1.0 + 2.0 * np.arange(n) / (n - 1)
    return (2.0 * np.arange(n) + 1.0) / n - 1.0


@converts("AffineGrid")
def affine_grid(ctx: NodeContext) -> None:
    theta = ctx.input(0)
    dtype = _float_dtype(ctx, theta, "theta")
    theta_shape = ctx.static_shape(theta, "theta")
    size = [int(v) for v in np.asarray(ctx.constant_input(1, "size")).reshape(-1)]
    align = int(ctx.attr("align_corners", 0))
    spatial = size[2:]
    k = len(spatial)
    if k not in (2, 3) or tuple(theta_shape) != (size[0], k, k + 1) or min(size) < 1:
        raise ConversionIssue(INVALID_MODEL, f"size {size} and theta {list(theta_shape)} must be [N, C, H, W] with "
                                             "[N, 2, 3] or [N, C, D, H, W] with [N, 3, 4]")
    if align and 1 in spatial:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"align_corners=1 with a spatial size of 1 (size {size}) has no "
                                                     "agreed meaning (ONNX reference -1, onnxruntime 1, PyTorch 0)")
    axes = [_grid_axis(n, bool(align)) for n in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # D, H, W order; the grid lists x (W) first
    base = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(mesh[0].size)], -1)
    base_name = ctx.constant(base.reshape(1, -1, k + 1).astype(dtype), f"{ctx.name}.base")
    product = _matmul(ctx, base_name, theta, f"{ctx.name}.grid", transpose_b=True)
    _reshape(ctx, product, [size[0], *spatial, k], output=ctx.output(0))
