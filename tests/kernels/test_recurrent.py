"""Recurrent family: LSTM, run end to end through ``nnrt_onnx.testing.run_op``.

Oracles, all independent of the kernel: onnxruntime's ONNX LSTM node (stacked nodes for several layers); a plain
per-timestep reference loop written here (checked against onnxruntime first) for zoneout and projection, which ONNX
has no counterpart for.
"""
from __future__ import annotations

import numpy as np
import pytest
from kernels.kernel_support import (
    INVALID,
    TOL,
    UNSUPPORTED,
    assert_within,
    dequantize_ref,
    quantize_ref,
    rng_for,
    run,
    run_declared,
)
from onnx import TensorProto, helper, numpy_helper
from support import ort_session

from nnrt_onnx.errors import NNRtError
from nnrt_onnx.kernels.recurrent import lstm_forward
from nnrt_onnx.tensor import QuantParam

LSTM = "OH_NN_OPS_LSTM"

# The kernel's gate order along the 4*hidden axis (documented decision) and ONNX's; the tests reorder between them.
KERNEL_GATES = "iofg"
ONNX_GATES = "iofg"  # ONNX names them i, o, f, c


# =================================================================================================================
# LSTM
# =================================================================================================================
def to_onnx_gates(w: np.ndarray, axis: int) -> np.ndarray:
    blocks = np.split(w, 4, axis=axis)
    return np.concatenate([blocks[KERNEL_GATES.index(g)] for g in ONNX_GATES], axis=axis)


def lstm_params(*, bidirectional=False, has_bias=True, **extra):
    params = {"OH_NN_LSTM_BIDIRECTIONAL": bidirectional, "OH_NN_LSTM_HAS_BIAS": has_bias}
    names = {"input_size": "OH_NN_LSTM_INPUT_SIZE", "hidden_size": "OH_NN_LSTM_HIDDEN_SIZE",
             "num_layers": "OH_NN_LSTM_NUM_LAYERS", "num_directions": "OH_NN_LSTM_NUM_DIRECTIONS",
             "dropout": "OH_NN_LSTM_DROPOUT", "zoneout_cell": "OH_NN_LSTM_ZONEOUT_CELL",
             "zoneout_hidden": "OH_NN_LSTM_ZONEOUT_HIDDEN", "proj_size": "OH_NN_LSTM_PROJ_SIZE"}
    params.update({names[k]: v for k, v in extra.items()})
    return params


def lstm_inputs(rng, T, B, I, H, D, L, dtype=np.float32, scale=0.5):
    def r(*shape):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    return [r(T, B, I), r(D * L, 4 * H, I), r(D * L, 4 * H, H), r(D * L, 8 * H), r(D * L, B, H), r(D * L, B, H)]


def ort_lstm(x, w_ih, w_hh, bias, hx, cx, *, D, L, has_bias=True):
    """ONNX LSTM node per layer; between layers Y [T, D, B, H] -> [T, B, D*H]."""
    T, B, _ = x.shape
    H = w_ih.shape[1] // 4
    f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    inits, nodes, hs, cs = [], [], [], []
    inits.append(numpy_helper.from_array(np.array([T, B, D * H], np.int64), "shape_tbdh"))
    current = "X"
    for layer in range(L):
        sl = slice(layer * D, (layer + 1) * D)
        names = [f"W{layer}", f"R{layer}", f"B{layer}", f"h{layer}", f"c{layer}"]
        inits.append(numpy_helper.from_array(f32(to_onnx_gates(w_ih[sl], 1)), names[0]))
        inits.append(numpy_helper.from_array(f32(to_onnx_gates(w_hh[sl], 1)), names[1]))
        if has_bias:
            b = bias[sl]
            b = np.concatenate([to_onnx_gates(b[:, : 4 * H], 1), to_onnx_gates(b[:, 4 * H:], 1)], axis=1)
            inits.append(numpy_helper.from_array(f32(b), names[2]))
        inits.append(numpy_helper.from_array(f32(hx[sl]), names[3]))
        inits.append(numpy_helper.from_array(f32(cx[sl]), names[4]))
        nodes.append(helper.make_node(
            "LSTM", [current, names[0], names[1], names[2] if has_bias else "", "", names[3], names[4]],
            [f"Y{layer}", f"Yh{layer}", f"Yc{layer}"], hidden_size=H,
            direction="bidirectional" if D == 2 else "forward"))
        nodes.append(helper.make_node("Transpose", [f"Y{layer}"], [f"Yt{layer}"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [f"Yt{layer}", "shape_tbdh"], [f"O{layer}"]))
        current = f"O{layer}"
        hs.append(f"Yh{layer}")
        cs.append(f"Yc{layer}")
    nodes.append(helper.make_node("Concat", hs, ["HY"], axis=0))
    nodes.append(helper.make_node("Concat", cs, ["CY"], axis=0))
    nodes.append(helper.make_node("Identity", [current], ["OUT"]))
    graph = helper.make_graph(
        nodes, "lstm", [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("OUT", "HY", "CY")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = ort_session(model)
    return session.run(None, {"X": f32(x)})


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def reference_lstm(x, w_ih, w_hh, bias, hx, cx, *, D, L, has_bias=True, zoneout_cell=0.0, zoneout_hidden=0.0,
                   w_proj=None):
    """Readable float64 reference: one direction, one time step, one gate at a time."""
    x = np.asarray(x, np.float64)
    T, B, _ = x.shape
    H = w_ih.shape[1] // 4

    def gate(w, name):
        k = KERNEL_GATES.index(name)
        return np.asarray(w, np.float64)[k * H:(k + 1) * H]

    layer_in = x
    hy, cy = [], []
    for layer in range(L):
        outs = []
        for d in range(D):
            n = layer * D + d
            Wx, Wh = w_ih[n], w_hh[n]
            bx = bias[n][: 4 * H] if has_bias else np.zeros(4 * H)
            bh = bias[n][4 * H:] if has_bias else np.zeros(4 * H)
            h = np.asarray(hx[n], np.float64)
            c = np.asarray(cx[n], np.float64)
            y = [None] * T
            for t in (range(T) if d == 0 else reversed(range(T))):
                xt = layer_in[t]

                def pre(name):
                    return xt @ gate(Wx, name).T + h @ gate(Wh, name).T + gate(bx, name) + gate(bh, name)

                i, f, o = sigmoid(pre("i")), sigmoid(pre("f")), sigmoid(pre("o"))
                g = np.tanh(pre("g"))
                c_new = f * c + i * g
                h_new = o * np.tanh(c_new)
                if w_proj is not None:
                    h_new = h_new @ np.asarray(w_proj[n], np.float64).T
                y[t] = h_new  # the step's output is the cell output before zoneout
                c = zoneout_cell * c + (1 - zoneout_cell) * c_new
                h = zoneout_hidden * h + (1 - zoneout_hidden) * h_new
            outs.append(np.stack(y))
            hy.append(h)
            cy.append(c)
        layer_in = np.concatenate(outs, axis=-1)
    return layer_in, np.stack(hy), np.stack(cy)


# (id, T, B, I, H, D, L, has_bias, extra params)
LSTM_ORT_CASES = [
    ("lstm-uni", 5, 3, 4, 6, 1, 1, True, {}),
    ("lstm-uni-nobias", 4, 2, 3, 5, 1, 1, False, {}),
    ("lstm-uni-seq1-batch1", 1, 1, 2, 3, 1, 1, True, {}),
    ("lstm-bidir", 6, 2, 5, 4, 2, 1, True, {}),
    ("lstm-bidir-nobias", 3, 4, 3, 2, 2, 1, False, {}),
    ("lstm-explicit-sizes", 4, 2, 3, 5, 2, 1, True,
     dict(input_size=3, hidden_size=5, num_layers=1, num_directions=2)),
    ("lstm-2layer-uni", 5, 2, 4, 4, 1, 2, True, {}),
    ("lstm-2layer-bidir", 4, 3, 6, 3, 2, 2, True, dict(num_layers=2)),
    ("lstm-3layer-bidir-nobias", 3, 2, 4, 2, 2, 3, False, {}),
    ("lstm-2layer-dropout-inference", 4, 2, 3, 3, 1, 2, True, dict(dropout=0.5)),
]


@pytest.mark.parametrize("case", LSTM_ORT_CASES, ids=[c[0] for c in LSTM_ORT_CASES])
def test_lstm_matches_onnxruntime(case):
    test_id, T, B, I, H, D, L, has_bias, extra = case
    rng = rng_for(test_id)
    inputs = lstm_inputs(rng, T, B, I, H, D, L)
    if not has_bias:
        inputs[3] = np.full_like(inputs[3], 100.0)  # must be ignored
    params = lstm_params(bidirectional=D == 2, has_bias=has_bias, **extra)
    out, hy, cy = run(LSTM, inputs, params)
    expected = ort_lstm(*inputs, D=D, L=L, has_bias=has_bias)
    assert out.shape == (T, B, D * H) and hy.shape == (D * L, B, H) and cy.shape == (D * L, B, H)
    for got, want in zip((out, hy, cy), expected):
        assert got.dtype == np.float32
        assert_within(got, want, TOL["float32"])


def _random_lstm_cases(count=18):
    """Seeded random configurations: (id, T, B, I, H, D, L, has_bias, constant weights, zero initial states)."""
    rng = rng_for("lstm-random-cases")
    cases = []
    for k in range(count):
        T, B, H = int(rng.integers(1, 7)), [1, 2, 3][k % 3], int(rng.choice([1, 2, 5, 8, 17]))
        D, L = int(rng.integers(1, 3)), int(rng.integers(1, 4))
        I = D * H if L > 1 else int(rng.integers(1, 9))
        cases.append((f"lstm-random-{k}", T, B, I, H, D, L, bool(k % 4 != 3), bool(k % 2), bool(k % 5 == 0)))
    return cases


@pytest.mark.parametrize("case", _random_lstm_cases(), ids=lambda c: c[0])
def test_lstm_random_shapes_match_onnxruntime(case):
    """Random shapes (batch 1, 2, 3; one or two directions; 1-3 layers; with and without bias; zero initial states,
    ONNX's "not given"), with the weights as the model's constants (the kernel's packed forms cached per constant)
    or as runtime inputs."""
    test_id, T, B, I, H, D, L, has_bias, constant, zero_states = case
    inputs = lstm_inputs(rng_for(test_id), T, B, I, H, D, L)
    if zero_states:
        inputs[4], inputs[5] = np.zeros_like(inputs[4]), np.zeros_like(inputs[5])
    got = run(LSTM, inputs, lstm_params(bidirectional=D == 2, has_bias=has_bias),
              constant_inputs=(1, 2, 3) if constant else ())
    want = ort_lstm(*inputs, D=D, L=L, has_bias=has_bias)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert_within(g, w, TOL["float32"])


def test_lstm_packed_weights_are_per_constant():
    """The kernel caches re-laid-out weights and the summed bias per registered constant: a second call gives the
    same values, a weight that serves as both wIh and wHh gets each packed form, and another bias array of the
    same shape is not served the first one's packs; the inputs are never written."""
    from nnrt_onnx.kernels import register_constant
    from nnrt_onnx.kernels.recurrent import lstm

    rng = rng_for("lstm-packed-constants")
    T, B, H, D = 4, 2, 3, 2
    x, w, _, bias, hx, cx = lstm_inputs(rng, T, B, H, H, D, 1)
    other_bias = bias + 0.5
    for array in (w, bias, other_bias):
        array.flags.writeable = False
        register_constant(array)
    hx.flags.writeable = cx.flags.writeable = x.flags.writeable = False
    params = dict(bidirectional=True, has_bias=True, input_size=0, hidden_size=0, num_layers=0, num_directions=0,
                  dropout=0.0, zoneout_cell=0.0, zoneout_hidden=0.0, proj_size=0)
    for b in (bias, bias, other_bias, bias):
        got = lstm(x, w, w, b, hx, cx, **params)
        for g, want in zip(got, ort_lstm(x, w, w, b, hx, cx, D=D, L=1)):
            assert_within(g, want, TOL["float32"])


def test_lstm_checks_hold_on_every_call_and_take_array_parameters():
    """The kernel's remembered checks raise on every call, and parameters that cannot be hashed (0-d arrays from a
    direct caller) are checked and used like python numbers."""
    from nnrt_onnx.kernels.recurrent import lstm

    inputs = lstm_inputs(rng_for("lstm-array-params"), 3, 2, 3, 4, 1, 1)
    params = dict(bidirectional=False, has_bias=True, input_size=3, hidden_size=4, num_layers=1, num_directions=1,
                  dropout=0.0, zoneout_cell=0.0, zoneout_hidden=0.0, proj_size=0)
    for _ in range(2):
        with pytest.raises(NNRtError) as err:
            lstm(*inputs, **{**params, "hidden_size": 5})
        assert err.value.code == INVALID
    as_arrays = {k: np.array(v) for k, v in params.items()}
    for got, want in zip(lstm(*inputs, **as_arrays), ort_lstm(*inputs, D=1, L=1)):
        assert_within(got, want, TOL["float32"])


def test_lstm_reference_matches_onnxruntime():
    """The hand reference used for zoneout/projection agrees with onnxruntime where both apply."""
    rng = rng_for("lstm-reference")
    inputs = lstm_inputs(rng, 4, 2, 8, 4, 2, 2)
    for got, want in zip(reference_lstm(*inputs, D=2, L=2), ort_lstm(*inputs, D=2, L=2)):
        assert_within(got, want, TOL["float32"])


ZONEOUT_CASES = [
    ("lstm-zoneout-cell", 5, 2, 3, 4, 1, 1, dict(zoneout_cell=0.3)),
    ("lstm-zoneout-hidden", 5, 2, 3, 4, 1, 1, dict(zoneout_hidden=0.6)),
    ("lstm-zoneout-both-bidir", 4, 3, 2, 3, 2, 1, dict(zoneout_cell=0.25, zoneout_hidden=0.75)),
    ("lstm-zoneout-both-2layer", 4, 2, 6, 3, 2, 2, dict(zoneout_cell=0.5, zoneout_hidden=0.5)),
    ("lstm-zoneout-one", 3, 2, 3, 3, 1, 1, dict(zoneout_cell=1.0, zoneout_hidden=1.0)),
]


@pytest.mark.parametrize("case", ZONEOUT_CASES, ids=[c[0] for c in ZONEOUT_CASES])
def test_lstm_zoneout_inference(case):
    test_id, T, B, I, H, D, L, zone = case
    rng = rng_for(test_id)
    inputs = lstm_inputs(rng, T, B, I, H, D, L)
    got = run(LSTM, inputs, lstm_params(bidirectional=D == 2, **zone))
    want = reference_lstm(*inputs, D=D, L=L, **zone)
    for g, w in zip(got, want):
        assert_within(g, w, TOL["float32"])
    if zone.get("zoneout_cell") == 1.0:  # the carried states never move
        np.testing.assert_array_equal(got[1], inputs[4])
        np.testing.assert_array_equal(got[2], inputs[5])


PROJ_CASES = [("lstm-proj-uni", 1, 1, 4), ("lstm-proj-bidir", 2, 1, 4), ("lstm-proj-bidir-2layer", 2, 2, 6)]


@pytest.mark.parametrize("case", PROJ_CASES, ids=[c[0] for c in PROJ_CASES])
def test_lstm_projection_math(case):
    """Projection (proj_size > 0) has no weight input in the six-input op; its math is tested on lstm_forward."""
    test_id, D, L, I = case
    rng = rng_for(test_id)
    T, B, H, P = 4, 2, 5, 3
    I = D * P if L > 1 else I
    r = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    x, w_ih, w_hh, bias = r(T, B, I), r(D * L, 4 * H, I), r(D * L, 4 * H, P), r(D * L, 8 * H)
    hx, cx, w_proj = r(D * L, B, P), r(D * L, B, H), r(D * L, P, H)
    got = lstm_forward(x, w_ih, w_hh, bias[:, : 4 * H] + bias[:, 4 * H:], hx, cx, directions=D, layers=L,
                       zoneout_cell=0.2, zoneout_hidden=0.4, w_proj=w_proj)
    want = reference_lstm(x, w_ih, w_hh, bias, hx, cx, D=D, L=L, zoneout_cell=0.2, zoneout_hidden=0.4,
                          w_proj=w_proj)
    assert got[0].shape == (T, B, D * P) and got[1].shape == (D * L, B, P) and got[2].shape == (D * L, B, H)
    for g, w in zip(got, want):
        assert_within(g, w, TOL["float32"])


@pytest.mark.parametrize("zoneout", [0.0, 0.1], ids=["plain", "zoneout"])
@pytest.mark.parametrize("mode", ["enable-float16", "float16-tensors"], ids=["lstm-f16-enable", "lstm-f16-tensors"])
def test_lstm_float16(mode, zoneout):
    test_id = f"lstm-bidir-f16-{mode}"
    rng = rng_for(test_id)
    T, B, H, D, L = 5, 2, 4, 2, 2
    inputs = lstm_inputs(rng, T, B, D * H, H, D, L)  # layer 1 needs inputSize == D*H
    params = lstm_params(bidirectional=True, zoneout_cell=zoneout)
    want = reference_lstm(*inputs, D=D, L=L, zoneout_cell=zoneout)
    if mode == "enable-float16":
        got = run(LSTM, inputs, params, float16=True)
        assert all(g.dtype == np.float32 for g in got)  # model IO stays float32
    else:
        got = run(LSTM, [a.astype(np.float16) for a in inputs], params)
        assert all(g.dtype == np.float16 for g in got)
    for g, w in zip(got, want):
        assert_within(g, w, TOL["float16"])


def test_lstm_quantized():
    rng = rng_for("lstm-quant-int8")
    T, B, I, H, D = 4, 2, 3, 4, 2
    floats = lstm_inputs(rng, T, B, I, H, D, 1)
    in_q = {k: QuantParam.per_tensor(0.02, 0) for k in range(6)}
    q_inputs = [quantize_ref(a, np.int8, [0.02], [0]) for a in floats]
    out_q = {0: QuantParam.per_tensor(1 / 128, 0), 1: QuantParam.per_tensor(1 / 128, 0),
             2: QuantParam.per_tensor(1 / 64, 3)}
    got = run(LSTM, q_inputs, lstm_params(bidirectional=True), input_quant=in_q, output_quant=out_q,
              output_dtypes=[np.int8] * 3)
    deq = [dequantize_ref(q, [0.02], [0]) for q in q_inputs]
    want = ort_lstm(*deq, D=D, L=1)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == np.int8
        expected = quantize_ref(w, np.int8, out_q[k].scales, out_q[k].zero_points)
        assert_within(g, expected, TOL["quant"])


LSTM_ERROR_CASES = [
    ("lstm-int32-input", UNSUPPORTED, dict(dtype=np.int32), {}),
    ("lstm-directions-contradict", INVALID, {}, dict(num_directions=2)),
    ("lstm-hidden-size-mismatch", INVALID, {}, dict(hidden_size=7)),
    ("lstm-input-size-mismatch", INVALID, {}, dict(input_size=9)),
    ("lstm-layers-mismatch", INVALID, {}, dict(num_layers=2)),
    ("lstm-dropout-out-of-range", INVALID, {}, dict(dropout=1.5)),
    ("lstm-zoneout-negative", INVALID, {}, dict(zoneout_cell=-0.1)),
    ("lstm-proj-size", UNSUPPORTED, {}, dict(proj_size=2)),
    ("lstm-proj-size-negative", INVALID, {}, dict(proj_size=-1)),
]


@pytest.mark.parametrize("case", LSTM_ERROR_CASES, ids=[c[0] for c in LSTM_ERROR_CASES])
def test_lstm_errors(case):
    test_id, code, make, extra = case
    inputs = lstm_inputs(rng_for(test_id), 3, 2, 3, 4, 1, 1, **make)
    with pytest.raises(NNRtError) as err:
        run_declared(LSTM, inputs, lstm_params(**extra), [3, 3, 3])
    assert err.value.code == code
    assert "LSTM" in err.value.message


def test_lstm_error_shapes():
    rng = rng_for("lstm-bad-shapes")
    good = lstm_inputs(rng, 3, 2, 3, 4, 1, 1)
    bad_states = list(good)
    bad_states[4] = good[4][:, :1]  # hx batch 1 vs input batch 2
    bad_multilayer = lstm_inputs(rng, 3, 2, 3, 4, 1, 2)  # 2 layers but inputSize 3 != dirs*hidden 4
    bad_bias = list(good)
    bad_bias[3] = good[3][:, :8]
    for inputs in (bad_states, bad_multilayer, bad_bias):
        with pytest.raises(NNRtError) as err:
            run(LSTM, inputs, lstm_params())
        assert err.value.code == INVALID
