"""The fast paths of issue 27 held to the reference plan (``accel.contract``), each shown to run where it should:
the activation fusion (any elementwise activation applied in place after the step before it), the lean runners of
small static steps (activations, comparisons, integer arithmetic, WHERE, GATHER, TRANSPOSE, UNSTACK, STACK, small
linear layers, softmax, layer norm), the LSTM compiled over time and the unrolled GRU recognised and compiled over
time. Expected values come from the reference plan (every operation its own step, its plain numpy kernel); the
models are random, seeded by the test id; EXACT paths get NaN, +-inf and -0.0 in their inputs."""
from __future__ import annotations

import numpy as np
import pytest
from accel_support import requires_fast_paths
from onnx import TensorProto, helper, numpy_helper
from test_contract import Net, _special_values, add_conv, assert_contract

from nnrt_onnx import TensorDesc
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_TensorType as TT
from nnrt_onnx.onnx_import import from_onnx

pytestmark = requires_fast_paths
F32 = np.float32

# activation op -> its parameters (op table names)
ACTIVATIONS = {
    OP.OH_NN_OPS_RELU: {}, OP.OH_NN_OPS_RELU6: {}, OP.OH_NN_OPS_SIGMOID: {}, OP.OH_NN_OPS_TANH: {},
    OP.OH_NN_OPS_LEAKY_RELU: {"OH_NN_LEAKY_RELU_NEGATIVE_SLOPE": np.float32(0.1)}, OP.OH_NN_OPS_HSWISH: {},
    OP.OH_NN_OPS_HARD_SIGMOID: {}, OP.OH_NN_OPS_SWISH: {},
    OP.OH_NN_OPS_CLIP: {"OH_NN_CLIP_MIN": np.float32(-0.5), "OH_NN_CLIP_MAX": np.float32(0.75)},
    OP.OH_NN_OPS_ABS: {}, OP.OH_NN_OPS_NEG: {},
}


def _activation(net, op, x, dims):
    return net.op(op, [x], dims, **ACTIVATIONS[op])


@pytest.mark.parametrize("op", list(ACTIVATIONS), ids=[o.name[10:] for o in ACTIVATIONS])
def test_every_activation_fused_into_the_step_before_keeps_the_contract(op, rng):
    # ADD -> activation (fused, in place on the ADD's new array), MUL (fused RELU) -> activation -> activation (two
    # appended), and the activation as a step of its own (its input read twice): EXACT, NaN/inf/-0.0 included
    dims = (2, 5, 17)
    net = Net(rng)
    x = net.input(dims)
    added = net.op(OP.OH_NN_OPS_ADD, [x, net.weight(17, scale=1)], dims)
    first = _activation(net, op, added, dims)
    scaled = net.op(OP.OH_NN_OPS_MUL, [first, net.weight(17, scale=2)], dims, OH_NN_MUL_ACTIVATION_TYPE=1)
    second = _activation(net, OP.OH_NN_OPS_TANH, _activation(net, op, scaled, dims), dims)
    alone = _activation(net, op, x, dims)
    model = net.finish([second, alone, net.op(OP.OH_NN_OPS_SUB, [x, alone], dims)])
    feeds = [[(rng.standard_normal(dims) * 4).astype(F32)] for _ in range(2)]
    for f in feeds:
        _special_values(f[0], rng)
    fast = assert_contract(model, feeds)
    thens = [len(s.then) for s in fast.prepared.steps]
    assert sorted(thens)[-2:] == [1, 2], thens  # the ADD took one activation, the MUL two
    assert fast.prepared.hidden_by(added) is not None and fast.prepared.hidden_by(alone) is None


def test_activation_fusion_respects_outputs_and_other_readers(rng):
    # a step whose output is a model output, or is read by another operation too, keeps its activation a step
    dims = (3, 8)
    net = Net(rng)
    x = net.input(dims)
    out = net.op(OP.OH_NN_OPS_ADD, [x, x], dims)
    shared = net.op(OP.OH_NN_OPS_MUL, [x, x], dims)
    model = net.finish([out, _activation(net, OP.OH_NN_OPS_SIGMOID, out, dims),
                        _activation(net, OP.OH_NN_OPS_TANH, shared, dims), net.op(OP.OH_NN_OPS_ADD, [shared, x], dims)])
    fast = assert_contract(model, [[rng.standard_normal(dims).astype(F32)]])
    assert not any(s.then for s in fast.prepared.steps)


@pytest.mark.parametrize("kind", ["im2col", "1x1-tiles", "winograd", "depthwise-3x3"])
def test_leaky_relu_after_a_convolution_is_fused(kind, rng):
    from test_contract import draw_conv

    p = draw_conv(kind, rng)
    k = p["k"]
    net = Net(rng)
    x = net.input((1, p["h"], p["w"], p["c"]))
    conv, (oh, ow, o) = add_conv(net, x, 1, p["h"], p["w"], p["c"], p["o"], k, pads=(k // 2,) * 4,
                                 depthwise=p.get("depthwise", False))
    y = _activation(net, OP.OH_NN_OPS_LEAKY_RELU, conv, (1, oh, ow, o))
    model = net.finish([_activation(net, OP.OH_NN_OPS_HSWISH, y, (1, oh, ow, o))])
    fast = assert_contract(model, [[rng.standard_normal((1, p["h"], p["w"], p["c"])).astype(F32)]])
    assert len(fast.prepared.steps) == 1 and len(fast.prepared.steps[0].then) == 2


def test_small_static_steps_keep_the_contract(rng):
    # the index arithmetic in front of an embedding (LESS, ADD, WHERE on int64, GATHER), a transformer block's
    # TRANSPOSE, UNSTACK and STACK, softmax, layer norm, a small linear layer with its bias, residual and RELU
    net = Net(rng)
    ids = net.m.add_tensor(TensorDesc(DT.OH_NN_INT64, [1, 6]))
    net.inputs.append(ids)
    x = net.input((1, 6, 16))
    i64 = lambda v: net.const(np.array(v, np.int64))  # noqa: E731
    negative = net.op(OP.OH_NN_OPS_LESS, [ids, i64(0)], (1, 6), dtype=DT.OH_NN_BOOL)
    wrapped = net.op(OP.OH_NN_OPS_ADD, [ids, i64(50)], (1, 6), dtype=DT.OH_NN_INT64)
    index = net.op(OP.OH_NN_OPS_WHERE, [negative, wrapped, ids], (1, 6), dtype=DT.OH_NN_INT64)
    emb = net.op(OP.OH_NN_OPS_GATHER, [net.weight(50, 16), index, net.const(np.array([0], np.int32))], (1, 6, 16))
    h = net.op(OP.OH_NN_OPS_ADD, [emb, x], (1, 6, 16))
    normed = net.op(OP.OH_NN_OPS_LAYER_NORM, [h, net.weight(16, scale=1), net.weight(16, scale=1)], (1, 6, 16),
                    OH_NN_LAYER_NORM_BEGIN_NORM_AXIS=2, OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS=2,
                    OH_NN_LAYER_NORM_EPSILON=np.float32(1e-5))
    product = net.op(OP.OH_NN_OPS_MATMUL, [normed, net.weight(16, 16)], (1, 6, 16))
    linear = net.op(OP.OH_NN_OPS_ADD, [net.op(OP.OH_NN_OPS_ADD, [product, net.weight(16, scale=1)], (1, 6, 16)), h],
                    (1, 6, 16), OH_NN_ADD_ACTIVATIONTYPE=1)
    heads = net.op(OP.OH_NN_OPS_TRANSPOSE, [net.op(OP.OH_NN_OPS_RESHAPE, [linear, net.const(np.array(
        [1, 6, 4, 4], np.int64))], (1, 6, 4, 4)), net.const(np.array([0, 2, 3, 1], np.int32))], (1, 4, 4, 6))
    soft = net.op(OP.OH_NN_OPS_SOFTMAX, [heads], (1, 4, 4, 6), OH_NN_SOFTMAX_AXIS=[-1])
    parts = [net.m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 4, 6])) for _ in range(4)]
    net.m.add_operation(OP.OH_NN_OPS_UNSTACK, [net.m.add_param(TT.OH_NN_UNSTACK_AXIS, 2)], [soft], parts)
    stacked = net.op(OP.OH_NN_OPS_STACK, [parts[3], parts[0], parts[1]], (1, 4, 6, 3), OH_NN_STACK_AXIS=3)
    model = net.finish([stacked, index])
    feeds = []
    for _ in range(2):
        feeds.append([rng.integers(-50, 50, (1, 6)).astype(np.int64), rng.standard_normal((1, 6, 16)).astype(F32)])
    feeds.append([np.array([[0, 1, 2, 3, 4, 77]], np.int64), feeds[0][1]])  # an index out of range: the error
    fast = assert_contract(model, feeds)
    runners = {s.op.name[10:]: getattr(s.fn, "func", s.fn).__name__ for s in fast.prepared.steps}
    assert runners["GATHER"] == "_gathered" and runners["WHERE"] == "_bare" and runners["LESS"] == "_bare"
    assert runners["UNSTACK"] == "_unstacked" and runners["STACK"] == "_stacked"
    assert runners["TRANSPOSE"] == "_permuted" and runners["LAYER_NORM"] == "_planned_layer_norm"
    assert runners["MATMUL"] == "_small_rows_product"


def _gru_model(rng, *, steps, batch, features, hidden, direction, linear_before_reset, initial, bias, layout=0):
    directions = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array((rng.standard_normal((directions, 3 * hidden, features)) * 0.4).astype(F32),
                                     "W"),
             numpy_helper.from_array((rng.standard_normal((directions, 3 * hidden, hidden)) * 0.4).astype(F32), "R")]
    names = ["x", "W", "R", "B" if bias else "", "", "h0" if initial else ""]
    if bias:
        inits.append(numpy_helper.from_array((rng.standard_normal((directions, 6 * hidden)) * 0.3).astype(F32), "B"))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, steps, features] if layout else
                                            [steps, batch, features])]
    if initial:
        inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, [directions, batch, hidden]))
    node = helper.make_node("GRU", names, ["y", "y_h"], hidden_size=hidden, direction=direction,
                            linear_before_reset=linear_before_reset)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                                    helper.make_tensor_value_info("y_h", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


@pytest.mark.parametrize("linear_before_reset", [1, 0])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_an_unrolled_gru_runs_as_one_compiled_loop_and_keeps_the_contract(direction, linear_before_reset, rng):
    for initial, bias, batch in ((False, True, 1), (True, False, 3), (True, True, 2)):
        proto = _gru_model(rng, steps=7, batch=batch, features=5, hidden=6, direction=direction,
                           linear_before_reset=linear_before_reset, initial=initial, bias=bias)
        model = from_onnx(proto).model
        feeds = [[rng.standard_normal(model.tensors[t].dims).astype(F32) for t in model.inputs] for _ in range(2)]
        fast = assert_contract(model, feeds)
        names = [getattr(s.fn, "__name__", "") for s in fast.prepared.steps]
        directions = 2 if direction == "bidirectional" else 1
        # every time step of each direction in one chain (but the first without an initial state: left as it is),
        # reading its gate inputs as rows of the input projections (the importer's UNSTACK)
        assert names.count("gru_chain_rows") == directions, names
        chains = [s for s in fast.prepared.steps if getattr(s.fn, "__name__", "") == "gru_chain_rows"]
        assert all(len(s.outputs) == (7 if initial else 6) for s in chains)
        assert all(s.kwargs["stride"] == (-1 if k == 1 else 1) for k, s in enumerate(chains))
        # onnxruntime's own GRU as a second, independent oracle of the outputs
        import onnxruntime as ort

        session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        names_in = [i.name for i in session.get_inputs()]
        want = session.run(None, dict(zip(names_in, feeds[0])))
        got = fast.run_arrays(feeds[0])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(w).reshape(g.shape), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("slope", [0.01, 1.0, 2.5, -0.3])
def test_leaky_relu_of_any_slope_fused_keeps_the_contract(slope, rng):
    # (the in-place form is max(x, x * slope) for slopes in [0, 1], min above, the select itself below)
    dims = (4, 33)
    net = Net(rng)
    x = net.input(dims)
    added = net.op(OP.OH_NN_OPS_ADD, [x, net.weight(33, scale=1)], dims)
    model = net.finish([net.op(OP.OH_NN_OPS_LEAKY_RELU, [added], dims, OH_NN_LEAKY_RELU_NEGATIVE_SLOPE=np.float32(
        slope))])
    feeds = [[(rng.standard_normal(dims) * 3).astype(F32)]]
    _special_values(feeds[0][0], rng)
    fast = assert_contract(model, feeds)
    assert len(fast.prepared.steps) == 1 and fast.prepared.steps[0].then


def test_full_connection_with_constant_weights_keeps_the_contract(rng):
    # rows of the whole input (use_axis false) and the dims from an axis flattened (use_axis true), with and without
    # bias, a fused RELU: the bound runner against the reference plan
    for use_axis, shape, bias in ((False, (6, 8), True), (True, (2, 3, 8), True), (False, (4, 8), False)):
        net = Net(rng)
        x = net.input(shape)
        inputs = [x, net.weight(5, 8)] + ([net.weight(5, scale=1)] if bias else [])
        out_shape = shape[:-1] + (5,) if use_axis else (int(np.prod(shape)) // 8, 5)
        params = {"OH_NN_FULL_CONNECTION_ACTIVATIONTYPE": 1, "OH_NN_FULL_CONNECTION_HAS_BIAS": bias}
        if use_axis:
            params.update(OH_NN_FULL_CONNECTION_USE_AXIS=True, OH_NN_FULL_CONNECTION_AXIS=len(shape) - 1)
        model = net.finish([net.op(OP.OH_NN_OPS_FULL_CONNECTION, inputs, out_shape, **params)])
        fast = assert_contract(model, [[rng.standard_normal(shape).astype(F32)]])
        assert getattr(fast.prepared.steps[0].fn, "func", None).__name__ == "_bound_full_connection"


def test_gru_chains_that_cannot_read_rows_stack_their_gate_inputs(rng, monkeypatch):
    # the chain's other form (gate inputs that are not one UNSTACK's consecutive rows): stacked per run
    from nnrt_onnx.accel.fusions import gru_cells

    monkeypatch.setattr(gru_cells, "_projection_rows", lambda *_: None)
    proto = _gru_model(rng, steps=5, batch=2, features=3, hidden=4, direction="bidirectional",
                       linear_before_reset=0, initial=True, bias=True)
    model = from_onnx(proto).model
    feeds = [[rng.standard_normal(model.tensors[t].dims).astype(F32) for t in model.inputs]]
    fast = assert_contract(model, feeds)
    assert [getattr(s.fn, "__name__", "") for s in fast.prepared.steps].count("gru_chain") == 2
