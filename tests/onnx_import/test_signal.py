"""Import of the signal family (DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix): cases the
node suite does not cover, each converted, run natively and compared with onnxruntime or, where onnxruntime does not
implement the op version, the ONNX reference implementation.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

from onnx_import.import_support import (
    DOUBLE,
    FLOAT,
    INT64,
    V,
    check_graph,
    const_tensor,
    dynamic_model,
    graph_model,
    native,
    rejects_graph,
    runs_like_onnxruntime,
)

# -- DFT / STFT --------------------------------------------------------------------------------------------------------

def _dft_model(shape, opset, length=None, axis=None, **attrs):
    names, inits = ["x"], []
    if length is not None:
        names.append("n")
        inits.append(const_tensor("n", np.asarray(length, np.int64)))
    if opset >= 20 and axis is not None:
        names += [""] * (2 - len(names)) + ["a"]
        inits.append(const_tensor("a", np.asarray(axis, np.int64)))
    elif axis is not None:
        attrs["axis"] = axis
    node = helper.make_node("DFT", names, ["y"], **attrs)
    return graph_model([node], [V("x", FLOAT, list(shape))], [V("y", FLOAT, None)], opset, inits)


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
    check_graph(_dft_model(shape, opset, length, axis, **attrs), {"x": x}, rtol=1e-4, atol=1e-5, reference=True)


def test_dft_float64_matches_numpy(rng):
    x = rng.standard_normal((3, 12, 2))
    node = helper.make_node("DFT", ["x"], ["y"], axis=1)
    model = graph_model([node], [V("x", DOUBLE, [3, 12, 2])], [V("y", DOUBLE, None)], 19)
    y = native(model, {"x": x})[0]
    want = np.fft.fft(x[..., 0] + 1j * x[..., 1], axis=1)
    np.testing.assert_allclose(y[..., 0] + 1j * y[..., 1], want, rtol=1e-12, atol=1e-12)


def test_dft_needs_constant_length():
    node = helper.make_node("DFT", ["x", "n"], ["y"], axis=1)
    model = graph_model([node], [V("x", FLOAT, [1, 4, 1]), V("n", INT64, [])], [V("y", FLOAT, None)], 19)
    rejects_graph(model, "needs_constant_input", "dft_length")


@pytest.mark.parametrize("case", ["runtime_window", "two_sided", "complex", "frame_length_only", "single_frame"])
def test_stft(rng, case):
    signal_shape = (2, 40, 2 if case == "complex" else 1)
    names, inputs, inits, feeds, attrs = ["s", "step"], [V("s", FLOAT, list(signal_shape))], [const_tensor(
        "step", np.asarray(5, np.int64))], {"s": rng.standard_normal(signal_shape).astype(np.float32)}, {}
    window = (0.5 + rng.random(12)).astype(np.float32)
    if case == "runtime_window":
        names.append("w")
        inputs.append(V("w", FLOAT, [12]))
        feeds["w"] = window
    elif case in ("two_sided", "complex"):
        names.append("w")
        inits.append(const_tensor("w", window))
        attrs["onesided"] = 0
    elif case == "frame_length_only":
        names += ["", "fl"]
        inits.append(const_tensor("fl", np.asarray(16, np.int64)))
    else:
        names += ["", "fl"]
        inits.append(const_tensor("fl", np.asarray(40, np.int64)))
    node = helper.make_node("STFT", names, ["y"], **attrs)
    model = graph_model([node], inputs, [V("y", FLOAT, None)], 17, inits)
    check_graph(model, feeds, rtol=1e-4, atol=1e-5, reference=True)


# -- windows, MelWeightMatrix ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("size,periodic,dtype", [(7, 1, TP.DOUBLE), (16, 0, TP.FLOAT), (2, 1, TP.FLOAT)])
def test_window(op, size, periodic, dtype):
    node = helper.make_node(op, ["n"], ["y"], periodic=periodic, output_datatype=dtype)
    model = graph_model([node, helper.make_node("Identity", ["x"], ["x_out"])], [V("x", FLOAT, [1])],
                   [V("y", dtype, None), V("x_out", FLOAT, None)], 17, [const_tensor("n", np.asarray(size, np.int64))])
    check_graph(model, {"x": np.ones(1, np.float32)}, rtol=1e-6, atol=1e-7)


def test_window_needs_constant_size():
    node = helper.make_node("HannWindow", ["n"], ["y"])
    rejects_graph(graph_model([node], [V("n", INT64, [])], [V("y", FLOAT, None)], 17), "needs_constant_input", "window size")


@pytest.mark.parametrize("args,dtype", [((10, 32, 16000, 20.0, 7000.0), TP.FLOAT),
                                        ((5, 64, 8000, 100.0, 3900.0), TP.DOUBLE)])
def test_mel_weight_matrix(args, dtype):
    names = ["bins", "length", "rate", "low", "high"]
    inits = [const_tensor(n, np.asarray(v, np.int64 if i < 3 else np.float32)) for i, (n, v) in enumerate(zip(names, args))]
    node = helper.make_node("MelWeightMatrix", names, ["y"], output_datatype=dtype)
    model = graph_model([node, helper.make_node("Identity", ["x"], ["x_out"])], [V("x", FLOAT, [1])],
                   [V("y", dtype, None), V("x_out", FLOAT, None)], 17, inits)
    check_graph(model, {"x": np.ones(1, np.float32)}, rtol=1e-6, atol=1e-7, reference=True)


# -- dynamic dims (issue 26): the transformed axis stays static, the others may not ------------------------------------

def test_dft_and_stft_over_dynamic_batches():
    rng = np.random.default_rng(26)
    nodes = [helper.make_node("DFT", ["x", "", "axis"], ["spectrum"], onesided=1),
             helper.make_node("DFT", ["z", "", "one"], ["inverse"], inverse=1),
             helper.make_node("STFT", ["s", "step", "window"], ["stft"])]
    model = dynamic_model(nodes, [("x", TP.FLOAT, ["N", "T", 8, 1]), ("z", TP.FLOAT, ["N", 6, "T", 2]),
                                  ("s", TP.FLOAT, ["N", 16, 1])],
                          [("spectrum", TP.FLOAT, ["N", "T", 5, 2]), ("inverse", TP.FLOAT, ["N", 6, "T", 2]),
                           ("stft", TP.FLOAT, ["N", None, None, 2])],
                          [("axis", np.asarray(-2, np.int64)), ("one", np.asarray(1, np.int64)),
                           ("step", np.asarray(4, np.int64)), ("window", np.hanning(8).astype(np.float32))], opset=20)
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((n, n + 1, 8, 1)).astype(np.float32),
                                   "z": rng.standard_normal((n, 6, n + 1, 2)).astype(np.float32),
                                   "s": rng.standard_normal((n, 16, 1)).astype(np.float32)} for n in (1, 2, 3)],
                          rtol=1e-4, atol=1e-4)
