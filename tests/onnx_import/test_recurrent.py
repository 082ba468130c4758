"""Import of the recurrent family (RNN, GRU, LSTM): cases the node suite does not cover (directions, layouts,
runtime weights, activations, clip, sequence_lens), each converted, run natively and compared with onnxruntime (the
ONNX reference for layout 1, which onnxruntime has not).
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from support import onnx_model

from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx
from onnx_import.import_support import (
    FLOAT,
    INT32,
    V,
    check_graph,
    check_model,
    const_tensor,
    dynamic_model,
    graph_model,
    onnx_node,
    rand_normal,
    rejects_graph,
    run_ours,
    runs_like_onnxruntime,
)

# -- RNN / GRU ---------------------------------------------------------------------------------------------------------

def _recurrent_model(rng, op, seq=4, batch=2, size=3, hidden=5, direction="forward", layout=0, bias=True, h0=False,
                     constant=True, extra_inputs=(), opset=14, **attrs):
    gates = 3 if op == "GRU" else 1
    dirs = 2 if direction == "bidirectional" else 1
    arrays = {"W": rng.standard_normal((dirs, gates * hidden, size)).astype(np.float32) * 0.5,
              "R": rng.standard_normal((dirs, gates * hidden, hidden)).astype(np.float32) * 0.5}
    if bias:
        arrays["B"] = rng.standard_normal((dirs, 2 * gates * hidden)).astype(np.float32) * 0.5
    if h0:
        arrays["H0"] = rng.standard_normal((batch, dirs, hidden) if layout else (dirs, batch, hidden)).astype(
            np.float32)
    x_shape = (batch, seq, size) if layout else (seq, batch, size)
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    names = ["X", "W", "R", "B" if bias else "", *extra_inputs, *([""] if h0 and not extra_inputs else []),
             *(["H0"] if h0 else [])]
    while names and names[-1] == "":
        names.pop()
    if layout:
        attrs["layout"] = 1
    node = helper.make_node(op, names, ["Y", "Y_h"], hidden_size=hidden, direction=direction, **attrs)
    inputs = [V("X", FLOAT, list(x_shape))]
    inits = []
    for name, array in arrays.items():
        if constant:
            inits.append(const_tensor(name, array))
        else:
            inputs.append(V(name, FLOAT, list(array.shape)))
            feeds[name] = array
    return graph_model([node], inputs, [V("Y", FLOAT, None), V("Y_h", FLOAT, None)], opset, inits), feeds


@pytest.mark.parametrize("op", ["RNN", "GRU"])
@pytest.mark.parametrize("case", ["forward_h0", "reverse_bias", "bidirectional_h0", "layout1_h0", "runtime_weights",
                                  "bidirectional_layout1_runtime"])
def test_recurrent(rng, op, case):
    kwargs = {"forward_h0": dict(h0=True), "reverse_bias": dict(direction="reverse"),
              "bidirectional_h0": dict(direction="bidirectional", h0=True), "layout1_h0": dict(layout=1, h0=True),
              "runtime_weights": dict(constant=False, h0=True),
              "bidirectional_layout1_runtime": dict(direction="bidirectional", layout=1, h0=True, constant=False)}[case]
    model, feeds = _recurrent_model(rng, op, **kwargs)
    check_graph(model, feeds, reference="layout1" in case)  # onnxruntime has no batchwise (layout 1) recurrences


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("h0", [False, True])
def test_gru_linear_before_reset(rng, linear_before_reset, h0):
    model, feeds = _recurrent_model(rng, "GRU", direction="bidirectional", h0=h0,
                                    linear_before_reset=linear_before_reset)
    check_graph(model, feeds)


@pytest.mark.parametrize("op,activations,alpha,beta", [
    ("RNN", ["Relu"], None, None),
    ("RNN", ["LeakyRelu", "ScaledTanh"], [0.2, 0.7], [1.3]),
    ("RNN", ["Affine"], [0.5], [0.1]),
    ("GRU", ["HardSigmoid", "Tanh"], [0.3], [0.4]),
    ("GRU", ["Sigmoid", "Relu", "HardSigmoid", "LeakyRelu"], None, None),
])
def test_recurrent_activations(rng, op, activations, alpha, beta):
    attrs = {"activations": activations}
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    direction = "bidirectional" if len(activations) == (4 if op == "GRU" else 2) else "forward"
    model, feeds = _recurrent_model(rng, op, direction=direction, h0=True, **attrs)
    check_graph(model, feeds)


@pytest.mark.parametrize("op", ["RNN", "GRU"])
def test_recurrent_clip(rng, op):
    model, feeds = _recurrent_model(rng, op, h0=True, clip=0.6)
    check_graph(model, feeds)


@pytest.mark.parametrize("op", ["RNN", "GRU"])
def test_recurrent_opset7_full_sequence_lens(rng, op):
    model, feeds = _recurrent_model(rng, op, opset=7, h0=True, extra_inputs=["L"])
    model.graph.initializer.append(const_tensor("L", np.full(2, 4, np.int32)))
    check_graph(model, feeds)


@pytest.mark.parametrize("op", ["RNN", "GRU"])
@pytest.mark.parametrize("h0", [False, True])
def test_recurrent_sequence_lens(rng, op, h0):
    model, feeds = _recurrent_model(rng, op, batch=3, direction="bidirectional", h0=h0, extra_inputs=["L"])
    model.graph.initializer.append(const_tensor("L", np.int32([4, 1, 3])))
    check_graph(model, feeds)


def test_recurrent_runtime_sequence_lens_needs_constant(rng):
    model, _ = _recurrent_model(rng, "GRU", extra_inputs=["L"])
    model.graph.input.append(V("L", INT32, [2]))
    rejects_graph(model, "needs_constant_input", "sequence_lens")


def test_recurrent_rejects_activation(rng):
    model, _ = _recurrent_model(rng, "RNN", activations=["Softsign"])
    rejects_graph(model, "unsupported_attribute", "'Softsign'")


def test_recurrent_only_y(rng):
    model, feeds = _recurrent_model(rng, "GRU", h0=True)
    model.graph.node[0].output[1] = ""
    del model.graph.output[1]
    check_graph(model, feeds)


# -- LSTM --------------------------------------------------------------------------------------------------------------

def _lstm_inputs(seed, dirs, steps, batch, features, hidden, layout=0):
    x_shape = (batch, steps, features) if layout else (steps, batch, features)
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    return {"x": rand_normal(seed, *x_shape) * 0.5}, {
        "w": rand_normal(seed + 1, dirs, 4 * hidden, features) * 0.4, "r": rand_normal(seed + 2, dirs, 4 * hidden, hidden) * 0.4,
        "b": rand_normal(seed + 3, dirs, 8 * hidden) * 0.2, "h0": rand_normal(seed + 4, *state) * 0.3,
        "c0": rand_normal(seed + 5, *state) * 0.3}


LSTM_CASES = {
    "lstm_bidirectional_layout1_states": ("bidirectional", 1, ["x", "w", "r", "b", "", "h0", "c0"], ("y", "yh", "yc")),
    "lstm_reverse_all_outputs": ("reverse", 0, ["x", "w", "r", "b", "", "h0", "c0"], ("y", "yh", "yc")),
    "lstm_forward_only_yc_no_bias": ("forward", 0, ["x", "w", "r"], ("", "", "yc")),
    "lstm_bidirectional_y_only": ("bidirectional", 0, ["x", "w", "r", "b"], ("y",)),
}


@pytest.mark.parametrize("case", sorted(LSTM_CASES))
def test_lstm(case):
    direction, layout, inputs, outputs = LSTM_CASES[case]
    dirs = 2 if direction == "bidirectional" else 1
    feeds, weights = _lstm_inputs(19, dirs, 5, 2, 3, 4, layout)
    weights = {k: v for k, v in weights.items() if k in inputs}
    node = onnx_node("LSTM", inputs, outputs, hidden_size=4, direction=direction, layout=layout)
    oracle = "reference" if layout else "ort"  # onnxruntime has no layout=1
    check_model(onnx_model(node, feeds, weights, opset=14, outputs=[o for o in outputs if o]), feeds, oracle=oracle)


# -- dynamic sequence and batch (issue 26) -----------------------------------------------------------------------------

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _dynamic_recurrent_model(op, direction, x_dims, with_h0, layout=0):
    dirs = 2 if direction == "bidirectional" else 1
    g, hidden = GATES[op], 4
    inputs = ["x", "w", "r", "b", "", "h0" if with_h0 else ""]
    batch = x_dims[0] if layout else x_dims[1]
    outputs = [("y", FLOAT, [batch, x_dims[1 - layout], dirs, hidden] if layout else [x_dims[0], dirs, batch, hidden]),
               ("y_h", FLOAT, [batch, dirs, hidden] if layout else [dirs, batch, hidden])]
    graph_inputs = [("x", FLOAT, x_dims)] + ([("h0", FLOAT, [batch, dirs, hidden] if layout else [dirs, batch, hidden])]
                                             if with_h0 else [])
    weights = [("w", rand_normal(1, dirs, g * hidden, 3)), ("r", rand_normal(2, dirs, g * hidden, hidden)),
               ("b", rand_normal(3, dirs, 2 * g * hidden))]
    return dynamic_model([helper.make_node(op, inputs, ["y", "y_h"], hidden_size=hidden, direction=direction,
                                           layout=layout)], graph_inputs, outputs, weights)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("with_h0", [False, True])
def test_lstm_over_a_dynamic_sequence_and_batch(direction, with_h0):
    # NNRt's LSTM takes any sequence length and batch; the zero initial states are FILLed to the run-time batch
    model = _dynamic_recurrent_model("LSTM", direction, ["T", "N", 3], with_h0)
    dirs = 2 if direction == "bidirectional" else 1
    feeds = []
    for n in (1, 2, 3):
        feed = {"x": rand_normal(10 + n, n + 2, n, 3)}
        if with_h0:
            feed["h0"] = rand_normal(20 + n, dirs, n, 4)
        feeds.append(feed)
    runs_like_onnxruntime(model, feeds)


@pytest.mark.parametrize("op", ["GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_unrolled_recurrences_over_a_dynamic_batch(op, direction):
    model = _dynamic_recurrent_model(op, direction, [5, "N", 3], with_h0=True)
    dirs = 2 if direction == "bidirectional" else 1
    runs_like_onnxruntime(model, [{"x": rand_normal(30 + n, 5, n, 3), "h0": rand_normal(40 + n, dirs, n, 4)}
                                  for n in (1, 2, 3)])


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_batch_first_layout_over_a_dynamic_batch(op):
    # onnxruntime's CPU kernels refuse layout=1: the reference evaluator is the oracle
    from onnx.reference import ReferenceEvaluator

    model = _dynamic_recurrent_model(op, "bidirectional", ["N", 5, 3], with_h0=False, layout=1)
    result = from_onnx(model)
    for n in (1, 2, 3):
        x = rand_normal(50 + n, n, 5, 3)
        ours = run_ours(model, {"x": x})
        for got, want in zip(ours, ReferenceEvaluator(model).run(None, {"x": x})):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert result.model.tensors[result.model.inputs[0]].dims[0] == -1


@pytest.mark.parametrize("op", ["GRU", "RNN"])
def test_unrolled_recurrence_over_a_dynamic_sequence_names_the_time_dim(op):
    model = _dynamic_recurrent_model(op, "forward", ["T", "N", 3], with_h0=False)
    with pytest.raises(ConversionError) as caught:
        from_onnx(model)
    (issue,) = caught.value.issues
    assert issue.reason == "dynamic_shape" and "unrolled over its time steps" in issue.message
    assert "pin input 'x' dim 0 (T): --input-shape x=<T>,<N>,3" in issue.message
