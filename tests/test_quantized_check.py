"""``check`` on quantized models: dequantized outputs compared in quantization steps, onnx.reference (never
onnxruntime's CPU-dependent integer kernels) judging a disagreement."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnrt_onnx.workflows.parity import _compare_in_steps, check_model, compare
from nnrt_onnx.workflows.quant_compare import quantized_outputs, reference_evaluator

SCALE_X, SCALE_Y = 0.02, 0.05


def _qdq_conv(zero=128, dtype=np.uint8):
    """x -> Q -> DQ -> Conv (weight and bias through DQ) -> Q -> DQ -> y: the QDQ form quantize_static writes."""
    rng = np.random.default_rng(3)
    w = rng.integers(-100, 100, (3, 2, 3, 3)).astype(np.int8)
    b = rng.integers(-500, 500, 3).astype(np.int32)
    zp = np.array(zero, dtype)
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("sx", np.array(SCALE_X, np.float32)), ("zx", zp), ("w", w), ("sw", np.array(0.01, np.float32)),
        ("zw", np.array(0, np.int8)), ("b", b), ("sb", np.array(SCALE_X * 0.01, np.float32)),
        ("zb", np.array(0, np.int32)), ("sy", np.array(SCALE_Y, np.float32)), ("zy", zp)]]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wf"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bf"]),
             helper.make_node("Conv", ["xf", "wf", "bf"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "sy", "zy"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 5, 5])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_dequantized_output_is_compared_in_steps_of_its_scale():
    model = _qdq_conv()
    assert quantized_outputs(model) == {"y": pytest.approx(SCALE_Y)}
    report = check_model(model, seed=1)
    (c,) = report.outputs
    assert c.steps is not None and c.steps <= 1 and c.within
    assert "quantization step" in c.note


def _truth(model, x):
    return dict(zip(["y"], reference_evaluator(model).run(None, {"x": x})))


@pytest.mark.parametrize("native_off,ort_off,within,referee", [
    (0, 3, True, "native"),  # onnxruntime 3 steps off onnx.reference, native exact: native passes (a warning)
    (3, 0, False, "onnxruntime"),  # native 3 steps off: fails, onnx.reference sides with onnxruntime
    (3, -3, False, "neither"),
    (1, 0, True, None),  # one step: within the default tolerance without asking onnx.reference
])
def test_onnx_reference_judges_a_disagreement_in_steps(native_off, ort_off, within, referee):
    model = _qdq_conv()
    x = np.random.default_rng(0).uniform(-2, 2, (1, 2, 5, 5)).astype(np.float32)
    truth = _truth(model, x)["y"]
    native = truth + np.float32(native_off * SCALE_Y)
    ort = {"y": truth + np.float32(ort_off * SCALE_Y)}
    comparisons = [compare(native, ort["y"], "y")]
    _compare_in_steps(model, comparisons, [native], ort, {"x": x}, None)
    c = comparisons[0]
    assert c.steps == pytest.approx(abs(native_off - ort_off), abs=1e-3)
    assert c.within is within and c.referee == referee


def test_the_step_tolerance_is_an_option():
    model = _qdq_conv()
    x = np.random.default_rng(0).uniform(-2, 2, (1, 2, 5, 5)).astype(np.float32)
    truth = _truth(model, x)["y"]
    native = truth + np.float32(2 * SCALE_Y)
    comparisons = [compare(native, truth, "y")]
    _compare_in_steps(model, comparisons, [native], {"y": truth}, {"x": x}, 2.5)
    assert comparisons[0].within and comparisons[0].referee is None


# -- the conversion summary and inspect name the float fallbacks ----------------------------------------------------

def _with_erf(path):
    """The QDQ conv, then DQ -> Erf -> Q: NNRt quantizes no ERF (its builder does not), so it stays in float."""
    import onnx

    model = _qdq_conv()
    graph = model.graph
    graph.output[0].name = "t"
    graph.node[-1].output[0] = "t"
    graph.node.extend([helper.make_node("Erf", ["t"], ["e"]),
                       helper.make_node("QuantizeLinear", ["e", "sy", "zy"], ["eq"]),
                       helper.make_node("DequantizeLinear", ["eq", "sy", "zy"], ["y"])])
    graph.output[0].name = "y"
    onnx.save(model, str(path))
    return path


def test_convert_and_inspect_report_the_quantized_share_and_the_float_fallbacks(tmp_path, cli_main):
    import json

    from click.testing import CliRunner

    main = cli_main

    source = _with_erf(tmp_path / "erf.onnx")
    out = CliRunner().invoke(main, ["convert", str(source), "-o", str(tmp_path / "erf.nnrt")])
    assert out.exit_code == 0, out.output
    assert "quantized: 1 of 2 compute ops read quantized tensors; float fallbacks: ERF 1" in out.output
    out = CliRunner().invoke(main, ["inspect", str(source)])
    assert out.exit_code == 0 and "float fallbacks: ERF 1" in out.output
    data = json.loads(CliRunner().invoke(main, ["inspect", str(source), "--json"]).stdout)
    assert data["quantization"]["float_fallbacks"] == {"ERF": 1}
    assert data["quantization"]["quantized_ops"] == 1


def test_inspect_of_a_quantized_nnrt_model_says_which_operations_read_quantized_tensors(tmp_path, cli_main):
    from click.testing import CliRunner

    source = tmp_path / "conv.onnx"
    import onnx

    onnx.save(_qdq_conv(), str(source))
    nnrt = tmp_path / "conv.nnrt"
    assert CliRunner().invoke(cli_main, ["convert", str(source), "-o", str(nnrt)]).exit_code == 0
    out = CliRunner().invoke(cli_main, ["inspect", str(nnrt)])
    assert out.exit_code == 0, out.output
    # x's integers: the boundary transpose to NHWC moves them, CONV2D reads them (and its int8 weight) and writes
    # the output's, the transpose back moves them, the final DQ reads them
    assert "read by 4 operations: TRANSPOSE 2, CONV2D 1, QUANT_DTYPE_CAST 1" in out.output
