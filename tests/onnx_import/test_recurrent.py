"""Import of the recurrent family (RNN, GRU, LSTM): cases the node suite does not cover (directions, layouts,
runtime weights, activations, clip, sequence_lens), each converted, run natively and compared with onnxruntime (the
ONNX reference for layout 1, which onnxruntime has not).
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from support import onnx_model, ort_run

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


@pytest.mark.parametrize("op", ["RNN", "GRU"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_sequence_lens_known_at_run_time(op, direction):
    # the masks built from sequence_lens at run time, over a dynamic batch; an entry of length 0 is 0 everywhere,
    # its Y_h too (onnxruntime), whatever its initial state
    model = _dynamic_recurrent_model(op, direction, [4, "N", 3], with_h0=True, with_lengths=True)
    dirs = 2 if direction == "bidirectional" else 1
    lengths = {1: [2], 2: [4, 0], 3: [1, 3, 4]}
    runs_like_onnxruntime(model, [{"x": rand_normal(60 + n, 4, n, 3), "h0": rand_normal(70 + n, dirs, n, 4),
                                   "lens": np.asarray(lengths[n], np.int32)} for n in (1, 2, 3)])


@pytest.mark.parametrize("op", ["RNN", "GRU"])
def test_recurrent_constant_sequence_lens_with_an_empty_sequence(rng, op):
    model, feeds = _recurrent_model(rng, op, batch=3, direction="bidirectional", h0=True, extra_inputs=["L"])
    model.graph.initializer.append(const_tensor("L", np.int32([4, 0, 2])))
    check_graph(model, feeds)


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
        "w": rand_normal(seed + 1, dirs, 4 * hidden, features) * 0.4,
        "r": rand_normal(seed + 2, dirs, 4 * hidden, hidden) * 0.4,
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


def _dynamic_recurrent_model(op, direction, x_dims, with_h0, layout=0, with_lengths=False, **attrs):
    dirs = 2 if direction == "bidirectional" else 1
    g, hidden = GATES[op], 4
    inputs = ["x", "w", "r", "b", "lens" if with_lengths else "", "h0" if with_h0 else ""]
    batch = x_dims[0] if layout else x_dims[1]
    outputs = [("y", FLOAT, [batch, x_dims[1 - layout], dirs, hidden] if layout else [x_dims[0], dirs, batch, hidden]),
               ("y_h", FLOAT, [batch, dirs, hidden] if layout else [dirs, batch, hidden])]
    graph_inputs = [("x", FLOAT, x_dims)] + ([("h0", FLOAT, [batch, dirs, hidden] if layout else [dirs, batch, hidden])]
                                             if with_h0 else []) + ([("lens", INT32, [batch])] if with_lengths else [])
    weights = [("w", rand_normal(1, dirs, g * hidden, 3)), ("r", rand_normal(2, dirs, g * hidden, hidden)),
               ("b", rand_normal(3, dirs, 2 * g * hidden))]
    return dynamic_model([helper.make_node(op, inputs, ["y", "y_h"], hidden_size=hidden, direction=direction,
                                           layout=layout, **attrs)], graph_inputs, outputs, weights)


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


UNROLLED_ONLY = {  # over a dynamic sequence: (op, attributes, runtime weights, words of the refusal)
    "gru": ("GRU", {}, False, None),
    "rnn_relu": ("RNN", dict(activations=["Relu"]), False, "activation relu"),
    "rnn_clip": ("RNN", dict(clip=2.0), False, "clip=2.0"),
    "rnn_runtime_weights": ("RNN", {}, True, "W known only at run time"),
    "rnn_scaledtanh_alpha_0": ("RNN", dict(activations=["ScaledTanh"], activation_alpha=[0.0]), False,
                               "activation scaledtanh"),
}


@pytest.mark.parametrize("case", sorted(UNROLLED_ONLY))
def test_unrolled_recurrence_over_a_dynamic_sequence_names_the_time_dim(case):
    op, attrs, runtime_weights, words = UNROLLED_ONLY[case]
    model = _dynamic_recurrent_model(op, "forward", ["T", "N", 3], with_h0=False, **attrs)
    if runtime_weights:
        (w,) = [i for i in model.graph.initializer if i.name == "w"]
        model.graph.initializer.remove(w)
        model.graph.input.append(V("w", FLOAT, list(w.dims)))
    with pytest.raises(ConversionError) as caught:
        from_onnx(model)
    (issue,) = caught.value.issues
    assert issue.reason == "dynamic_shape" and "unrolled over its time steps" in issue.message
    assert "pin input 'x' dim 0 (T): --input-shape x=<T>,<N>,3" in issue.message
    if words is None:
        assert "NNRt's LSTM" not in issue.message
    else:
        assert "NNRt's LSTM computes an RNN only with" in issue.message and words in issue.message


# -- RNN on NNRt's LSTM: a sequence it cannot unroll (issue 26) --------------------------------------------------------

def _op_types(model):
    return {op.op.name for op in from_onnx(model).model.operations}


@pytest.mark.parametrize("with_lengths", [False, True], ids=["", "lengths"])
@pytest.mark.parametrize("with_h0", [False, True], ids=["zero_h0", "h0"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_rnn_over_a_dynamic_sequence_on_nnrt_lstm(direction, with_h0, with_lengths):
    # steps and batch known at run time; lengths 0, partial and full
    model = _dynamic_recurrent_model("RNN", direction, ["T", "N", 3], with_h0=with_h0, with_lengths=with_lengths)
    assert "OH_NN_OPS_LSTM" in _op_types(model)
    dirs = 2 if direction == "bidirectional" else 1
    feeds = []
    for n, steps, lengths in ((1, 1, [1]), (3, 5, [0, 5, 2]), (2, 4, [3, 1])):
        feed = {"x": rand_normal(60 + n, steps, n, 3) * 2}
        if with_h0:
            feed["h0"] = rand_normal(70 + n, dirs, n, 4)
        if with_lengths:
            feed["lens"] = np.asarray(lengths, np.int32)
        feeds.append(feed)
    runs_like_onnxruntime(model, feeds)


RNN_ON_LSTM_ACTIVATIONS = {
    "sigmoid": ("forward", dict(activations=["Sigmoid"])),
    "scaledtanh": ("reverse", dict(activations=["ScaledTanh"], activation_alpha=[1.5], activation_beta=[0.7])),
    "one_per_direction": ("bidirectional", dict(activations=["ScaledTanh", "Sigmoid"], activation_alpha=[-0.8],
                                                activation_beta=[1.3])),
}


@pytest.mark.parametrize("case", sorted(RNN_ON_LSTM_ACTIVATIONS))
def test_rnn_on_nnrt_lstm_activations(case):
    direction, attrs = RNN_ON_LSTM_ACTIVATIONS[case]
    model = _dynamic_recurrent_model("RNN", direction, ["T", "N", 3], with_h0=True, with_lengths=True, **attrs)
    dirs = 2 if direction == "bidirectional" else 1
    runs_like_onnxruntime(model, [{"x": rand_normal(60 + n, 4, n, 3), "h0": rand_normal(70 + n, dirs, n, 4),
                                   "lens": np.asarray([4, 2, 0][:n], np.int32)} for n in (1, 3)])


@pytest.mark.parametrize("with_lengths", [False, True], ids=["", "lengths"])
def test_rnn_on_nnrt_lstm_batch_first(with_lengths):
    # layout=1 (which onnxruntime does not run): the layout-0 model on the transposed input is the oracle
    feeds = {"x": rand_normal(5, 4, 3, 3), "h0": rand_normal(6, 2, 3, 4), "lens": np.asarray([4, 0, 2], np.int32)}
    if not with_lengths:
        del feeds["lens"]
    want = ort_run(_dynamic_recurrent_model("RNN", "bidirectional", ["T", "N", 3], True, 0, with_lengths), feeds)
    batch_first = dict(feeds, x=feeds["x"].transpose(1, 0, 2), h0=feeds["h0"].transpose(1, 0, 2))
    y, y_h = run_ours(_dynamic_recurrent_model("RNN", "bidirectional", ["N", "T", 3], True, 1, with_lengths),
                      batch_first)
    np.testing.assert_allclose(y, want[0].transpose(2, 0, 1, 3), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_h, want[1].transpose(1, 0, 2), rtol=1e-5, atol=1e-5)


def test_rnn_too_long_to_unroll_runs_on_nnrt_lstm(monkeypatch):
    from nnrt_onnx.onnx_import.handlers import recurrent

    monkeypatch.setattr(recurrent, "MAX_OPERATIONS_PER_NODE", 15)  # (10 steps x 2 operations each > 15)
    model = _dynamic_recurrent_model("RNN", "bidirectional", [10, "N", 3], with_h0=True)
    assert "OH_NN_OPS_LSTM" in _op_types(model)
    runs_like_onnxruntime(model, [{"x": rand_normal(8, 10, 2, 3), "h0": rand_normal(9, 2, 2, 4)}])
    clipped = _dynamic_recurrent_model("RNN", "forward", [10, "N", 3], with_h0=False, clip=1.0)
    with pytest.raises(ConversionError) as caught:
        from_onnx(clipped)
    (issue,) = caught.value.issues
    assert issue.reason == "too_large" and "clip=1.0" in issue.message


# -- LSTM: sequence_lens, clip and what NNRt's LSTM does not compute (issue 26) ----------------------------------------

def _lstm_model(direction, x_dims, outputs=("y", "y_h", "y_c"), lengths=None, states=True, peepholes=False,
                layout=0, **attrs):
    """An LSTM of hidden size 4 over x [steps, batch, 3] (dims may be names; layout=1: the model's x is
    [batch, steps, 3], its states and outputs batch first); ``lengths``: "input" (a model input 'lens') or a
    constant list."""
    dirs = 2 if direction == "bidirectional" else 1
    steps, batch = x_dims[0], x_dims[1]
    weights = [("w", rand_normal(1, dirs, 16, 3) * 0.6), ("r", rand_normal(2, dirs, 16, 4) * 0.6),
               ("b", rand_normal(3, dirs, 32) * 0.4)]
    graph_inputs = [("x", FLOAT, [batch, steps, 3] if layout else x_dims)]
    inputs = ["x", "w", "r", "b", "", "", "", ""]
    if lengths == "input":
        graph_inputs.append(("lens", INT32, [batch]))
        inputs[4] = "lens"
    elif lengths is not None:
        weights.append(("lens", np.asarray(lengths, np.int32)))
        inputs[4] = "lens"
    state = [batch, dirs, 4] if layout else [dirs, batch, 4]
    if states:
        graph_inputs += [("h0", FLOAT, state), ("c0", FLOAT, state)]
        inputs[5:7] = ["h0", "c0"]
    if peepholes:
        weights.append(("p", rand_normal(4, dirs, 12) * 0.5))
        inputs[7] = "p"
    while inputs[-1] == "":
        inputs.pop()
    shapes = {"y": [batch, steps, dirs, 4] if layout else [steps, dirs, batch, 4], "y_h": state, "y_c": state}
    return dynamic_model([helper.make_node("LSTM", inputs, [o if o in outputs else "" for o in ("y", "y_h", "y_c")],
                                           hidden_size=4, direction=direction, layout=layout, **attrs)],
                         graph_inputs, [(o, FLOAT, shapes[o]) for o in outputs], weights, opset=14)


def _lstm_feeds(direction, shapes, lengths=None, states=True):
    dirs = 2 if direction == "bidirectional" else 1
    feeds = []
    for k, (steps, batch) in enumerate(shapes):
        feed = {"x": rand_normal(80 + k, steps, batch, 3)}
        if states:
            feed["h0"], feed["c0"] = rand_normal(90 + k, dirs, batch, 4), rand_normal(95 + k, dirs, batch, 4)
        if lengths is not None:
            feed["lens"] = np.asarray(lengths[k], np.int32)
        feeds.append(feed)
    return feeds


LSTM_OUTPUTS = {"all": ("y", "y_h", "y_c"), "y": ("y",), "states": ("y_h", "y_c"), "y_h": ("y_h",)}


@pytest.mark.parametrize("outputs", sorted(LSTM_OUTPUTS))
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_sequence_lens_known_at_run_time(direction, outputs):
    # one NNRt LSTM per direction over each entry's own sequence; steps and batch dynamic; lengths 0 and full too
    model = _lstm_model(direction, ["T", "N", 3], LSTM_OUTPUTS[outputs], lengths="input")
    shapes, lengths = [(5, 3), (1, 1), (4, 2)], [[2, 5, 0], [1], [3, 1]]
    runs_like_onnxruntime(model, _lstm_feeds(direction, shapes, lengths))


@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_lstm_sequence_lens_never_reads_the_padding(direction):
    # huge and NaN inputs past each entry's length change nothing (onnxruntime never reads them); the final cell
    # state is held there by weights a huge input could outweigh
    model = _lstm_model(direction, ["T", "N", 3], lengths="input")
    feeds = _lstm_feeds(direction, [(5, 3)], [[2, 5, 1]])
    feeds[0]["x"][2:, 0] = 1e6
    feeds[0]["x"][1:, 2] = np.nan
    runs_like_onnxruntime(model, feeds)


@pytest.mark.parametrize("unrolled", [False, True], ids=["nnrt_lstm", "unrolled"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_batch_first_with_sequence_lens(direction, unrolled):
    # layout=1 (which onnxruntime does not run): the layout-0 model on the transposed input is the oracle
    attrs = dict(clip=2.0) if unrolled else {}
    dims, lengths = [4, "N", 3], [[4, 0, 2]]
    feeds = _lstm_feeds(direction, [(4, 3)], lengths)[0]
    want = ort_run(_lstm_model(direction, dims, lengths="input", **attrs), feeds)
    batch_first = {"x": feeds["x"].transpose(1, 0, 2), "h0": feeds["h0"].transpose(1, 0, 2),
                   "c0": feeds["c0"].transpose(1, 0, 2), "lens": feeds["lens"]}
    y, y_h, y_c = run_ours(_lstm_model(direction, dims, lengths="input", layout=1, **attrs), batch_first)
    np.testing.assert_allclose(y, want[0].transpose(2, 0, 1, 3), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_h, want[1].transpose(1, 0, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_c, want[2].transpose(1, 0, 2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_constant_sequence_lens_shorter_than_the_sequence(direction):
    model = _lstm_model(direction, [5, 3, 3], lengths=[5, 2, 4], states=False)
    runs_like_onnxruntime(model, _lstm_feeds(direction, [(5, 3)], states=False))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_clip_on_the_gates_inputs(direction):
    # clip bounds the gates' pre-activations (i, o, f, c~), not the cell state h's activation reads; unrolled
    model = _lstm_model(direction, [4, "N", 3], clip=0.5)
    runs_like_onnxruntime(model, _lstm_feeds(direction, [(4, 1), (4, 3)]))


@pytest.mark.parametrize("direction", ["reverse", "bidirectional"])
def test_lstm_clip_with_sequence_lens(direction):
    model = _lstm_model(direction, [4, "N", 3], lengths="input", clip=0.7)
    runs_like_onnxruntime(model, _lstm_feeds(direction, [(4, 3), (4, 2)], [[4, 0, 2], [1, 3]]))


LSTM_UNROLLED = {
    "peepholes": dict(peepholes=True),
    "input_forget": dict(input_forget=1),
    "activations": dict(activations=["HardSigmoid", "LeakyRelu", "Tanh"], activation_alpha=[0.3, 0.05],
                        activation_beta=[0.4]),
    "peepholes_clip_zero_states": dict(peepholes=True, clip=1.5, states=False),
}


@pytest.mark.parametrize("case", sorted(LSTM_UNROLLED))
def test_lstm_what_nnrt_lstm_does_not_compute_is_unrolled(case):
    attrs = dict(LSTM_UNROLLED[case])
    states = attrs.pop("states", True)
    model = _lstm_model("forward", [3, "N", 3], states=states, **attrs)
    runs_like_onnxruntime(model, _lstm_feeds("forward", [(3, 1), (3, 2)], states=states))


def test_lstm_unrolled_over_a_dynamic_sequence_names_the_time_dim():
    model = _lstm_model("forward", ["T", "N", 3], clip=1.0)
    with pytest.raises(ConversionError) as caught:
        from_onnx(model)
    (issue,) = caught.value.issues
    assert issue.reason == "dynamic_shape" and "clip" in issue.message and "pin input 'x' dim 0 (T)" in issue.message
