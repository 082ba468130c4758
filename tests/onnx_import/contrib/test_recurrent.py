"""onnxruntime's contrib DynamicQuantizeLSTM (com.microsoft) against an LSTM written here from the contrib
documentation: ONNX's LSTM equations (gates iofc, Wb + Rb, peepholes, clip, input_forget, activations) whose products
X W and H R are dynamically quantized products: the float operand quantized to uint8 with DynamicQuantizeLinear's
formulas (X over all steps at once, H per step over the batch), the exact integer product with the weights minus
their zero points (``integer_oracle``), scaled by a_scale * w_scale. onnxruntime is a second opinion for uint8 weights
only (its u8u8 kernels are exact on every CPU; u8s8 saturates int16 pair sums on AVX2 CPUs without VNNI)."""
from __future__ import annotations

import numpy as np
import pytest
from integer_oracle import dynamic_quantize_linear, matmul_accumulate

from nnrt_onnx.ir.issues import INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE

from .contrib_support import F32, against_ort, contrib_model, ms_node, ours, rejected

T, BATCH, INPUT, HIDDEN = 5, 3, 6, 4


def _sigmoid(x):
    return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(F32)


ACTIVATIONS = {"sigmoid": lambda x, a, b: _sigmoid(x), "tanh": lambda x, a, b: np.tanh(x),
               "relu": lambda x, a, b: np.maximum(x, 0), "leakyrelu": lambda x, a, b: np.where(x >= 0, x, a * x),
               "hardsigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1)}


def _product(a, w, scale, zero):
    """a (float32, rows x K) @ (w - zero) * scale, a quantized to uint8 with DynamicQuantizeLinear's formulas."""
    q, a_scale, a_zero = dynamic_quantize_linear(a)
    acc = matmul_accumulate(q, w, a_zero, np.asarray(zero).reshape(-1))
    return acc.astype(F32) * (np.float32(a_scale) * np.asarray(scale, F32).reshape(-1))


def _reference(x, w, r, w_scale, w_zero, r_scale, r_zero, bias=None, h0=None, c0=None, peepholes=None,
               direction="forward", clip=None, input_forget=False, activations=None):
    dirs = w.shape[0]
    acts = activations or [("sigmoid", 0, 0), ("tanh", 0, 0), ("tanh", 0, 0)] * dirs
    seq, batch, _ = x.shape
    hidden = r.shape[1]
    ys, hs, cs = [], [], []
    for d in range(dirs):
        (f, fa, fb), (g, ga, gb), (hh, ha, hb) = acts[3 * d:3 * d + 3]

        def act(name, v, a, b, clipped=True):
            v = np.clip(v, -clip, clip) if clip is not None and clipped else v
            return ACTIVATIONS[name](v, a, b).astype(F32)

        xw = _product(x.reshape(seq * batch, -1), w[d], w_scale[d], w_zero[d]).reshape(seq, batch, -1)
        bias_d = np.zeros(4 * hidden, F32) if bias is None else bias[d, :4 * hidden] + bias[d, 4 * hidden:]
        p = np.zeros(3 * hidden, F32) if peepholes is None else peepholes[d]
        h = np.zeros((batch, hidden), F32) if h0 is None else h0[d]
        c = np.zeros((batch, hidden), F32) if c0 is None else c0[d]
        y = [None] * seq
        for t in (range(seq - 1, -1, -1) if direction == "reverse" or d == 1 else range(seq)):
            pre = xw[t] + _product(h, r[d], r_scale[d], r_zero[d]) + bias_d
            gi, go, gf, gc = np.split(pre, 4, axis=1)
            i = act(f, gi + p[:hidden] * c, fa, fb)
            fg = 1 - i if input_forget else act(f, gf + p[2 * hidden:] * c, fa, fb)
            c = fg * c + i * act(g, gc, ga, gb)
            o = act(f, go + p[hidden:2 * hidden] * c, fa, fb)
            h = (o * act(hh, c, ha, hb, clipped=False)).astype(F32)
            y[t] = h
        ys.append(np.stack(y))
        hs.append(h)
        cs.append(c)
    return np.stack(ys, 1), np.stack(hs), np.stack(cs)


def _quantized_weights(rng, dtype, dirs, per_channel):
    info = np.iinfo(dtype)
    w = rng.integers(info.min, info.max + 1, (dirs, INPUT, 4 * HIDDEN)).astype(dtype)
    r = rng.integers(info.min, info.max + 1, (dirs, HIDDEN, 4 * HIDDEN)).astype(dtype)
    shape = (dirs, 4 * HIDDEN) if per_channel else (dirs,)
    scales = [rng.uniform(0.002, 0.02, shape).astype(F32) for _ in range(2)]
    if dtype == np.uint8:  # onnxruntime takes one zero point per tensor (its per-channel ones must all be equal)
        zeros = [np.full(shape, rng.integers(100, 156), np.uint8) for _ in range(2)]
    else:  # and zero for int8 weights
        zeros = [np.zeros(shape, np.int8) for _ in range(2)]
    return {"W": w, "R": r, "W_scale": scales[0], "W_zero_point": zeros[0], "R_scale": scales[1],
            "R_zero_point": zeros[1]}


def _node(inputs, outputs=("Y", "Y_h", "Y_c"), **attrs):
    names = ["x", "W", "R", "B", "", "h0", "c0", "P", "W_scale", "W_zero_point", "R_scale", "R_zero_point"]
    return ms_node("DynamicQuantizeLSTM", [n if n in inputs or n in ("x", "W", "R") or n.endswith(("scale", "point"))
                                           else "" for n in names], list(outputs), hidden_size=HIDDEN, **attrs)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamic_quantize_lstm(rng, direction, dtype, per_channel):
    dirs = 2 if direction == "bidirectional" else 1
    weights = _quantized_weights(rng, dtype, dirs, per_channel)
    x = rng.standard_normal((T, BATCH, INPUT)).astype(F32)
    states = {"h0": rng.standard_normal((dirs, BATCH, HIDDEN)).astype(F32),
              "c0": rng.standard_normal((dirs, BATCH, HIDDEN)).astype(F32)}
    bias = rng.standard_normal((dirs, 8 * HIDDEN)).astype(F32)
    model = contrib_model(_node(["B", "h0", "c0"], direction=direction), {"x": x, **states}, ["Y", "Y_h", "Y_c"],
                          {**weights, "B": bias})
    feeds = {"x": x, **states}
    y, y_h, y_c = ours(model, feeds)
    want = _reference(x, weights["W"], weights["R"], weights["W_scale"], weights["W_zero_point"], weights["R_scale"],
                      weights["R_zero_point"], bias, states["h0"], states["c0"], direction=direction)
    assert y.shape == (T, dirs, BATCH, HIDDEN) and y_h.shape == y_c.shape == (dirs, BATCH, HIDDEN)
    for got, expected in zip((y, y_h, y_c), want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    if dtype == np.uint8:
        against_ort(model, feeds, rtol=1e-5, atol=1e-5)


def test_dynamic_quantize_lstm_peepholes_clip_input_forget(rng):
    weights = _quantized_weights(rng, np.uint8, 1, False)
    x = rng.standard_normal((T, BATCH, INPUT)).astype(F32)
    peepholes = rng.standard_normal((1, 3 * HIDDEN)).astype(F32)
    model = contrib_model(_node(["P"], clip=0.7, input_forget=1), {"x": x}, ["Y", "Y_h", "Y_c"],
                          {**weights, "P": peepholes})
    got = against_ort(model, {"x": x}, rtol=1e-5, atol=1e-5)
    want = _reference(x, weights["W"], weights["R"], weights["W_scale"], weights["W_zero_point"], weights["R_scale"],
                      weights["R_zero_point"], peepholes=peepholes, clip=0.7, input_forget=True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_dynamic_quantize_lstm_activations(rng):
    weights = _quantized_weights(rng, np.int8, 1, True)
    x = rng.standard_normal((T, BATCH, INPUT)).astype(F32)
    node = _node([], outputs=("Y",), activations=["HardSigmoid", "LeakyRelu", "Tanh"], activation_alpha=[0.3, 0.1],
                 activation_beta=[0.4])
    (y,) = ours(contrib_model(node, {"x": x}, ["Y"], weights), {"x": x})
    want = _reference(x, weights["W"], weights["R"], weights["W_scale"], weights["W_zero_point"], weights["R_scale"],
                      weights["R_zero_point"], activations=[("hardsigmoid", 0.3, 0.4), ("leakyrelu", 0.1, 0),
                                                            ("tanh", 0, 0)])[0]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_dynamic_quantize_lstm_with_constant_full_sequence_lens(rng):
    weights = _quantized_weights(rng, np.uint8, 1, False)
    x = rng.standard_normal((T, BATCH, INPUT)).astype(F32)
    node = ms_node("DynamicQuantizeLSTM", ["x", "W", "R", "", "lens", "", "", "", "W_scale", "W_zero_point", "R_scale",
                                           "R_zero_point"], ["", "Y_h"], hidden_size=HIDDEN)
    model = contrib_model(node, {"x": x}, ["Y_h"], {**weights, "lens": np.full(BATCH, T, np.int32)})
    against_ort(model, {"x": x}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("change,reason,message", [
    ({"lens": np.array([5, 3, 5], np.int32)}, UNSUPPORTED_ATTRIBUTE, "sequence_lens [5, 3, 5]"),
    ({"W_scale": np.full((1, 3), 0.01, F32)}, INVALID_MODEL, "W_scale of shape [1, 3]"),
    ({"R_zero_point": np.zeros(1, np.int8)}, INVALID_MODEL, "R_zero_point has dtype int8"),
    ({"W": np.zeros((1, INPUT, 4 * HIDDEN), np.int32)}, UNSUPPORTED_DTYPE, "W has dtype int32"),
])
def test_dynamic_quantize_lstm_rejections(rng, change, reason, message):
    weights = {**_quantized_weights(rng, np.uint8, 1, False), **change}
    x = rng.standard_normal((T, BATCH, INPUT)).astype(F32)
    inputs = ["x", "W", "R", "", "lens" if "lens" in change else "", "", "", "", "W_scale", "W_zero_point", "R_scale",
              "R_zero_point"]
    rejected(contrib_model(ms_node("DynamicQuantizeLSTM", inputs, ["Y"], hidden_size=HIDDEN), {"x": x}, ["Y"],
                           weights), reason, message)
