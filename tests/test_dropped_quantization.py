"""``check`` on dynamically quantized models converted in the float form (issue 28): the conversion drops the
activations' run-time quantization, and ``check`` knows it -- an output is judged against what that rounding does to
it (``workflows/dropped_quantization.py``), and the report says so. The reference is onnxruntime on the quantized
model, as ``check`` runs it; the spread is checked against the rounding's worst case computed by hand."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnrt_onnx.onnx_import import dynamic
from nnrt_onnx.workflows import dropped_quantization
from nnrt_onnx.workflows.parity import check_model

quantization = pytest.importorskip("onnxruntime.quantization")

T, B, I, H = 12, 2, 16, 32


def _crnn_tail(tmp_path) -> onnx.ModelProto:
    """An LSTM (which quantize_dynamic makes a DynamicQuantizeLSTM, converted exactly) and a dense layer on its
    output (DynamicQuantizeLinear + MatMulInteger, converted in the float form): the tail of a CRNN."""
    rng = np.random.default_rng(0)
    inits = {"W": (rng.standard_normal((1, 4 * H, I)) * 0.2).astype(np.float32),
             "R": (rng.standard_normal((1, 4 * H, H)) * 0.2).astype(np.float32),
             "B": (rng.standard_normal((1, 8 * H)) * 0.1).astype(np.float32),
             "Wd": (rng.standard_normal((H, 10)) * 0.2).astype(np.float32), "axis": np.array([1], np.int64)}
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["y", "", ""], hidden_size=H),
             helper.make_node("Squeeze", ["y", "axis"], ["ys"]),
             helper.make_node("MatMul", ["ys", "Wd"], ["z"])]
    graph = helper.make_graph(nodes, "crnn_tail", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, B, I])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [T, B, 10])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "float.onnx"))
    quantization.quantize_dynamic(str(tmp_path / "float.onnx"), str(tmp_path / "dynamic.onnx"),
                                  weight_type=quantization.QuantType.QInt8)
    quantized = onnx.load(str(tmp_path / "dynamic.onnx"))
    ops = {n.op_type for n in quantized.graph.node}
    assert {"DynamicQuantizeLSTM", "DynamicQuantizeLinear", "MatMulInteger"} <= ops, ops
    return quantized


@pytest.mark.parametrize("seed", [0, 1])
def test_check_judges_a_float_form_conversion_against_the_dropped_rounding(tmp_path, seed):
    """Native is far beyond float32's tolerance of onnxruntime (the activation's rounding to 1/255 of its range
    is not done), and within what that rounding does: the output passes, the note says why."""
    model = _crnn_tail(tmp_path)
    report = check_model(model, seed=seed)
    (c,) = report.outputs
    assert c.mismatched > c.size // 2  # (by float32's tolerance alone: a failure)
    assert c.within and report.ok
    assert "dynamic_quantization='float'" in c.note and "1 activation(s)" in c.note


def test_without_the_dropped_rounding_the_same_output_fails(tmp_path, monkeypatch):
    """The tolerance is what lets it pass: with no allowance (FACTOR 0) the same comparison fails."""
    monkeypatch.setattr(dropped_quantization, "FACTOR", 0.0)
    report = check_model(_crnn_tail(tmp_path), seed=0)
    assert not report.outputs[0].within and not report.ok


def test_a_conversion_bug_larger_than_the_rounding_still_fails(tmp_path, monkeypatch):
    """A planted bug: the dense layer's dequantized weights 5 % too large in the converted model (not in the float
    form the spread is measured on). check fails and names the rounding it allowed for."""
    model = _crnn_tail(tmp_path)
    original = dynamic._dequantized_weight

    def wrong(*args, **kwargs):
        weight = original(*args, **kwargs)
        return None if weight is None else weight * np.float32(1.05)

    calls = []
    real_float_form = dynamic.float_form

    def conversion_only(m):
        calls.append(1)
        if len(calls) == 1:  # the conversion's rewrite: the buggy one; the spread's: the true one
            monkeypatch.setattr(dynamic, "_dequantized_weight", wrong)
            try:
                return real_float_form(m)
            finally:
                monkeypatch.setattr(dynamic, "_dequantized_weight", original)
        return real_float_form(m)

    monkeypatch.setattr(dynamic, "float_form", conversion_only)
    report = check_model(model, seed=0)
    (c,) = report.outputs
    assert len(calls) == 2
    assert not c.within and "beyond" in c.note


def test_the_spread_is_the_rounding_bound_of_a_single_product(tmp_path):
    """One dense layer: the rounding moves y_j = sum_k x_k W_kj by at most s/2 * sum_k |W_kj| (s = the activation's
    step, computed here by hand from the input as DynamicQuantizeLinear does): the measured spread is within that
    bound and not far below it (uniform errors over 64 terms: about a third of the worst case at most)."""
    rng = np.random.default_rng(5)
    weight = (rng.standard_normal((64, 8)) * 0.3).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "dense",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                              [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "f.onnx"))
    quantization.quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "d.onnx"),
                                  weight_type=quantization.QuantType.QInt8)
    quantized = onnx.load(str(tmp_path / "d.onnx"))
    x = rng.uniform(-1, 3, (4, 64)).astype(np.float32)
    step = (max(0.0, float(x.max())) - min(0.0, float(x.min()))) / 255
    from nnrt_onnx.workflows.parity import _session

    (spreads, count) = dropped_quantization.output_spreads(quantized, {"x": x}, _session)
    assert count == 1
    bound = step / 2 * np.abs(weight).sum(axis=0).max()
    assert bound / 10 < spreads["y"] <= bound * 1.01
