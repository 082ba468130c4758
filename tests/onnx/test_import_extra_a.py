"""RNN, GRU, DFT, STFT, windows, MelWeightMatrix, BitShift, ReverseSequence, CenterCropPad, AffineGrid: cases the
node suite does not cover, each converted, run natively and compared with onnxruntime (or, where onnxruntime does
not implement the op version, the ONNX reference implementation) on the same small model."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper
from onnx.reference import ReferenceEvaluator
from support import ort_session

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx

V = helper.make_tensor_value_info
FLOAT, DOUBLE, INT64, INT32 = TP.FLOAT, TP.DOUBLE, TP.INT64, TP.INT32


def _model(nodes, inputs, outputs, opset, inits=()):
    graph = helper.make_graph(nodes, "extra_a", inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _const(name, array):
    array = np.asarray(array)
    return helper.make_tensor(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape,
                              array.reshape(-1).tolist())


def _native(model, feeds, **options):
    result = from_onnx(model, **options)
    compilation = Compilation(result.model)
    compilation.build()
    bound = options.get("constant_inputs", {})
    arrays = []
    for i in result.model.inputs:
        name = result.model.tensors[i].name
        arrays.append(np.asarray(feeds[name] if name in feeds else bound[name.removesuffix(".bound")]))
    return Executor(compilation).run_arrays(arrays)


def check(model, feeds, rtol=1e-5, atol=1e-5, reference=False, **options):
    """Convert, run natively, compare every output with onnxruntime / the reference (exact for integers)."""
    everything = {**feeds, **options.get("constant_inputs", {})}
    if reference:
        want = ReferenceEvaluator(model).run(None, everything)
    else:
        session = ort_session(model)
        want = session.run(None, everything)
    got = _native(model, feeds, **options)
    assert len(got) == len(want)
    for actual, expected in zip(got, want):
        expected = np.asarray(expected)
        assert actual.shape == expected.shape and actual.dtype == expected.dtype, (actual.shape, expected.shape)
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(actual, expected)


def rejects(model, reason, text, **options):
    with pytest.raises(ConversionError) as info:
        from_onnx(model, **options)
    issue = info.value.issues[0]
    assert issue.reason == reason and text in issue.message, str(issue)


# -- RNN / GRU -------------------------------------------------------------------------------------------------------

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
            inits.append(_const(name, array))
        else:
            inputs.append(V(name, FLOAT, list(array.shape)))
            feeds[name] = array
    return _model([node], inputs, [V("Y", FLOAT, None), V("Y_h", FLOAT, None)], opset, inits), feeds


@pytest.mark.parametrize("op", ["RNN", "GRU"])
@pytest.mark.parametrize("case", ["forward_h0", "reverse_bias", "bidirectional_h0", "layout1_h0", "runtime_weights",
                                  "bidirectional_layout1_runtime"])
def test_recurrent(rng, op, case):
    kwargs = {"forward_h0": dict(h0=True), "reverse_bias": dict(direction="reverse"),
              "bidirectional_h0": dict(direction="bidirectional", h0=True), "layout1_h0": dict(layout=1, h0=True),
              "runtime_weights": dict(constant=False, h0=True),
              "bidirectional_layout1_runtime": dict(direction="bidirectional", layout=1, h0=True, constant=False)}[case]
    model, feeds = _recurrent_model(rng, op, **kwargs)
    check(model, feeds, reference="layout1" in case)  # onnxruntime has no batchwise (layout 1) recurrences


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("h0", [False, True])
def test_gru_linear_before_reset(rng, linear_before_reset, h0):
    model, feeds = _recurrent_model(rng, "GRU", direction="bidirectional", h0=h0,
                                    linear_before_reset=linear_before_reset)
    check(model, feeds)


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
    check(model, feeds)


@pytest.mark.parametrize("op", ["RNN", "GRU"])
def test_recurrent_clip(rng, op):
    model, feeds = _recurrent_model(rng, op, h0=True, clip=0.6)
    check(model, feeds)


@pytest.mark.parametrize("op", ["RNN", "GRU"])
def test_recurrent_opset7_full_sequence_lens(rng, op):
    model, feeds = _recurrent_model(rng, op, opset=7, h0=True, extra_inputs=["L"])
    model.graph.initializer.append(_const("L", np.full(2, 4, np.int32)))
    check(model, feeds)


@pytest.mark.parametrize("op", ["RNN", "GRU"])
@pytest.mark.parametrize("h0", [False, True])
def test_recurrent_sequence_lens(rng, op, h0):
    model, feeds = _recurrent_model(rng, op, batch=3, direction="bidirectional", h0=h0, extra_inputs=["L"])
    model.graph.initializer.append(_const("L", np.int32([4, 1, 3])))
    check(model, feeds)


def test_recurrent_runtime_sequence_lens_needs_constant(rng):
    model, _ = _recurrent_model(rng, "GRU", extra_inputs=["L"])
    model.graph.input.append(V("L", INT32, [2]))
    rejects(model, "needs_constant_input", "sequence_lens")


def test_recurrent_rejects_activation(rng):
    model, _ = _recurrent_model(rng, "RNN", activations=["Softsign"])
    rejects(model, "unsupported_attribute", "'Softsign'")


def test_recurrent_only_y(rng):
    model, feeds = _recurrent_model(rng, "GRU", h0=True)
    model.graph.node[0].output[1] = ""
    del model.graph.output[1]
    check(model, feeds)


# -- DFT / STFT --------------------------------------------------------------------------------------------------------

def _dft_model(shape, opset, length=None, axis=None, **attrs):
    names, inits = ["x"], []
    if length is not None:
        names.append("n")
        inits.append(_const("n", np.asarray(length, np.int64)))
    if opset >= 20 and axis is not None:
        names += [""] * (2 - len(names)) + ["a"]
        inits.append(_const("a", np.asarray(axis, np.int64)))
    elif axis is not None:
        attrs["axis"] = axis
    node = helper.make_node("DFT", names, ["y"], **attrs)
    return _model([node], [V("x", FLOAT, list(shape))], [V("y", FLOAT, None)], opset, inits)


@pytest.mark.parametrize("case,shape,opset,length,axis,attrs", [
    ("pad", (2, 6, 1), 20, 9, 1, {}),
    ("truncate_complex", (2, 8, 2), 20, 5, 1, {}),
    ("rfft_odd", (3, 7, 1), 20, 7, -2, {"onesided": 1}),
    ("rfft_axis0", (8, 3, 1), 20, None, 0, {"onesided": 1}),
    ("inverse_real", (2, 6, 1), 20, None, 1, {"inverse": 1}),
    ("irfft_odd_length", (2, 4, 4, 2), 20, 7, 1, {"inverse": 1, "onesided": 1}),
    ("irfft_truncating", (2, 9, 2), 20, 8, 1, {"inverse": 1, "onesided": 1}),
    ("opset17_rank3", (2, 5, 2), 17, None, None, {}),
    ("opset17_inverse_axis2", (1, 3, 6, 2), 17, 6, 2, {"inverse": 1}),
])
def test_dft(rng, case, shape, opset, length, axis, attrs):
    x = rng.standard_normal(shape).astype(np.float32)
    check(_dft_model(shape, opset, length, axis, **attrs), {"x": x}, rtol=1e-4, atol=1e-5, reference=True)


def test_dft_float64_matches_numpy(rng):
    x = rng.standard_normal((3, 12, 2))
    node = helper.make_node("DFT", ["x"], ["y"], axis=1)
    model = _model([node], [V("x", DOUBLE, [3, 12, 2])], [V("y", DOUBLE, None)], 19)
    y = _native(model, {"x": x})[0]
    want = np.fft.fft(x[..., 0] + 1j * x[..., 1], axis=1)
    np.testing.assert_allclose(y[..., 0] + 1j * y[..., 1], want, rtol=1e-12, atol=1e-12)


def test_dft_needs_constant_length():
    node = helper.make_node("DFT", ["x", "n"], ["y"], axis=1)
    model = _model([node], [V("x", FLOAT, [1, 4, 1]), V("n", INT64, [])], [V("y", FLOAT, None)], 19)
    rejects(model, "needs_constant_input", "dft_length")


@pytest.mark.parametrize("case", ["runtime_window", "two_sided", "complex", "frame_length_only", "single_frame"])
def test_stft(rng, case):
    signal_shape = (2, 40, 2 if case == "complex" else 1)
    names, inputs, inits, feeds, attrs = ["s", "step"], [V("s", FLOAT, list(signal_shape))], [_const(
        "step", np.asarray(5, np.int64))], {"s": rng.standard_normal(signal_shape).astype(np.float32)}, {}
    window = (0.5 + rng.random(12)).astype(np.float32)
    if case == "runtime_window":
        names.append("w")
        inputs.append(V("w", FLOAT, [12]))
        feeds["w"] = window
    elif case in ("two_sided", "complex"):
        names.append("w")
        inits.append(_const("w", window))
        attrs["onesided"] = 0
    elif case == "frame_length_only":
        names += ["", "fl"]
        inits.append(_const("fl", np.asarray(16, np.int64)))
    else:
        names += ["", "fl"]
        inits.append(_const("fl", np.asarray(40, np.int64)))
    node = helper.make_node("STFT", names, ["y"], **attrs)
    model = _model([node], inputs, [V("y", FLOAT, None)], 17, inits)
    check(model, feeds, rtol=1e-4, atol=1e-5, reference=True)


# -- windows, MelWeightMatrix ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("size,periodic,dtype", [(7, 1, TP.DOUBLE), (16, 0, TP.FLOAT), (2, 1, TP.FLOAT)])
def test_window(op, size, periodic, dtype):
    node = helper.make_node(op, ["n"], ["y"], periodic=periodic, output_datatype=dtype)
    model = _model([node, helper.make_node("Identity", ["x"], ["x_out"])], [V("x", FLOAT, [1])],
                   [V("y", dtype, None), V("x_out", FLOAT, None)], 17, [_const("n", np.asarray(size, np.int64))])
    check(model, {"x": np.ones(1, np.float32)}, rtol=1e-6, atol=1e-7)


def test_window_needs_constant_size():
    node = helper.make_node("HannWindow", ["n"], ["y"])
    rejects(_model([node], [V("n", INT64, [])], [V("y", FLOAT, None)], 17), "needs_constant_input", "window size")


@pytest.mark.parametrize("args,dtype", [((10, 32, 16000, 20.0, 7000.0), TP.FLOAT),
                                        ((5, 64, 8000, 100.0, 3900.0), TP.DOUBLE)])
def test_mel_weight_matrix(args, dtype):
    names = ["bins", "length", "rate", "low", "high"]
    inits = [_const(n, np.asarray(v, np.int64 if i < 3 else np.float32)) for i, (n, v) in enumerate(zip(names, args))]
    node = helper.make_node("MelWeightMatrix", names, ["y"], output_datatype=dtype)
    model = _model([node, helper.make_node("Identity", ["x"], ["x_out"])], [V("x", FLOAT, [1])],
                   [V("y", dtype, None), V("x_out", FLOAT, None)], 17, inits)
    check(model, {"x": np.ones(1, np.float32)}, rtol=1e-6, atol=1e-7, reference=True)


# -- BitShift ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_bitshift_unsigned_broadcast(rng, direction, dtype):
    bits = np.dtype(dtype).itemsize * 8
    x = rng.integers(0, np.iinfo(dtype).max, (3, 4), dtype=dtype, endpoint=True)
    y = np.asarray([0, 1, bits // 2, bits - 1], dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)
    model = _model([node], [V("x", elem, [3, 4])], [V("z", elem, None)], 11, [_const("y", y)])
    check(model, {"x": x})


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_bitshift_opset28_out_of_range(rng, direction, dtype):
    bits = np.dtype(dtype).itemsize * 8
    info = np.iinfo(dtype)
    x = np.concatenate([rng.integers(info.min, info.max, 6, dtype=dtype, endpoint=True),
                        np.asarray([info.min, info.max, 0, 1, -1 if info.min else 2, 7], dtype)]).reshape(2, 6)
    y = np.asarray([0, 1, bits - 2, bits - 1, bits, -1 if info.min else bits + 3], dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)
    model = _model([node], [V("x", elem, [2, 6])], [V("z", elem, None)], 28, [_const("y", y)])
    check(model, {"x": x}, reference=True)


def test_bitshift_needs_constant_amounts():
    node = helper.make_node("BitShift", ["x", "y"], ["z"], direction="LEFT")
    model = _model([node], [V("x", TP.UINT8, [2]), V("y", TP.UINT8, [2])], [V("z", TP.UINT8, None)], 11)
    rejects(model, "needs_constant_input", "shift amounts")


# -- ReverseSequence, CenterCropPad, AffineGrid ----------------------------------------------------------------------

@pytest.mark.parametrize("time_axis,batch_axis,lens", [(0, 1, [5, 0, 3]), (1, 0, [1, 5, 2])])
def test_reverse_sequence_rank3(rng, time_axis, batch_axis, lens):
    shape = [5, 3, 2] if time_axis == 0 else [3, 5, 2]
    x = rng.standard_normal(shape).astype(np.float32)
    node = helper.make_node("ReverseSequence", ["x", "L"], ["y"], time_axis=time_axis, batch_axis=batch_axis)
    model = _model([node], [V("x", FLOAT, shape)], [V("y", FLOAT, None)], 10, [_const("L", np.int64(lens))])
    check(model, {"x": x})


def test_reverse_sequence_int32(rng):
    x = rng.integers(-50, 50, (4, 3), dtype=np.int32)
    node = helper.make_node("ReverseSequence", ["x", "L"], ["y"])
    model = _model([node], [V("x", INT32, [4, 3])], [V("y", INT32, None)], 10, [_const("L", np.int64([4, 2, 3]))])
    check(model, {"x": x})


@pytest.mark.parametrize("shape,target,axes", [([7, 6, 3], [4, 9], [0, 1]), ([5, 6], [5, 3], None),
                                               ([2, 9, 4], [3, 4], [-1, 1])])
def test_center_crop_pad(rng, shape, target, axes):
    x = rng.standard_normal(shape).astype(np.float32)
    attrs = {} if axes is None else {"axes": axes}
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"], **attrs)
    model = _model([node], [V("x", FLOAT, shape)], [V("y", FLOAT, None)], 18, [_const("s", np.int64(target))])
    check(model, {"x": x})


def test_center_crop_pad_int64(rng):
    x = rng.integers(-9, 9, (3, 5), dtype=np.int64)
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"])
    model = _model([node], [V("x", INT64, [3, 5])], [V("y", INT64, None)], 18, [_const("s", np.int64([6, 2]))])
    check(model, {"x": x})


@pytest.mark.parametrize("size,align", [([2, 3, 4, 7], 0), ([1, 1, 1, 5], 0), ([2, 1, 3, 2, 4], 1),
                                        ([1, 2, 2, 3, 1], 0)])
def test_affine_grid(rng, size, align):
    k = len(size) - 2
    theta = rng.standard_normal((size[0], k, k + 1)).astype(np.float32)
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)
    model = _model([node], [V("theta", FLOAT, list(theta.shape))], [V("grid", FLOAT, None)], 20,
                   [_const("size", np.int64(size))])
    check(model, {"theta": theta})


def test_affine_grid_rejects_ambiguous_unit_size():
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=1)
    model = _model([node], [V("theta", FLOAT, [1, 2, 3])], [V("grid", FLOAT, None)], 20,
                   [_const("size", np.int64([1, 1, 1, 5]))])
    rejects(model, "unsupported_attribute", "align_corners=1 with a spatial size of 1")
