"""nnrt_onnx.workflows.float64: the float64 referee of ``check`` -- its error measure and verdict rule (hand
computations), the model in double (against onnxruntime in float32, and the ONNX spec's old Softmax), the Monte
Carlo spread (zero where nothing rounds, large where a Softmax amplifies one ulp)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import ort_run

from nnrt_onnx.workflows import float64 as f64
from nnrt_onnx.workflows.parity import tolerances_for

MODELS = Path(__file__).resolve().parent.parent / "models"


def tolerance(dtype):
    return tolerances_for(dtype)


def ill_conditioned_model(opset: int = 17):
    """Softmax over 16 logits of about 1e9 that exact arithmetic makes equal (one float32 ulp there is 64): the
    output is 1/16 everywhere, and one ulp of difference between two logits makes it one-hot."""
    inits = [numpy_helper.from_array(np.full((16, 4, 1, 1), 0.5, np.float32), "w"),
             numpy_helper.from_array(np.full(16, 1e9, np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
             helper.make_node("Softmax", ["g"], ["y"], name="softmax", axis=1)]
    graph = helper.make_graph(nodes, "ill", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 1, 1])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


# -- the error measure and the rule ---------------------------------------------------------------------------------

def test_relative_error_is_max_rel_against_the_truth():
    truth = np.array([100.0, 1.0, 0.0])
    # denominators max(|t|, atol * scale / rtol) with the floor 1e-5 * 100 / 1e-4 = 10: element 0: 0.5 / 100;
    # element 1: 0.02 / 10; element 2: 1e-4 / 10
    x = np.array([100.5, 1.02, 1e-4])
    assert f64.relative_error(x, truth, 1e-4, 1e-5) == pytest.approx(0.005)
    assert f64.relative_error(np.array([0.0, 0.0, 5.0]), truth, 1e-4, 1e-5) == pytest.approx(1.0)  # 100 / 100
    assert f64.relative_error(np.array([100.0, 1.0, 5.0]), truth, 1e-4, 1e-5) == pytest.approx(0.5)  # 5 / 10
    assert f64.relative_error(truth, truth, 1e-4, 1e-5) == 0.0
    assert f64.relative_error(np.array([np.nan, 1.0, 0.0]), truth, 1e-4, 1e-5) == math.inf
    assert f64.relative_error(np.array([np.nan]), np.array([np.nan]), 1e-4, 1e-5) == 0.0  # the same special value
    assert f64.relative_error(np.zeros(2), np.zeros(3), 1e-4, 1e-5) == math.inf


@pytest.mark.parametrize("native,ort,spread,agree,verdict", [
    (0.0, 0.0, 1e-7, True, None),  # agree, well-conditioned: nothing to say
    (0.0, 0.0, 15.0, True, f64.ILL_CONDITIONED),  # agree, but one ulp moves it beyond tolerance
    (15.0, 0.0, 15.0, False, f64.ILL_CONDITIONED),  # disagree, both within 4 x spread
    (0.2, 1e-7, 1e-7, False, f64.NATIVE_WRONG),  # only native beyond E = max(4 spread, rtol) = 1e-4
    (1e-7, 0.2, 1e-7, False, f64.ORT_WRONG),
    (0.2, 0.3, 1e-7, False, f64.NEITHER),
    (9e-5, 8e-5, 1e-7, False, f64.BOTH_CLOSE),  # both within rtol of float64; disagree by the sum
])
def test_the_verdict_rule(native, ort, spread, agree, verdict):
    v = f64.judge(native, ort, spread, 1e-4, agree)
    assert v.verdict == verdict
    assert v.expected_error == max(4 * spread, 1e-4)
    assert v.accepted == (verdict in (f64.ILL_CONDITIONED, f64.ORT_WRONG, f64.BOTH_CLOSE))


def test_closer_side_and_ratio_in_the_text():
    v = f64.judge(0.2, 1e-7, 1e-7, 1e-4, agree=False)
    assert v.closer == "onnxruntime" and v.ratio == pytest.approx(2e6)
    assert v.text().startswith("native is wrong (max rel vs float64: native 0.2, onnxruntime 1e-07")
    assert "onnxruntime is 2e+06x closer" in v.text()
    assert f64.judge(0.2, 0.0, 0.0, 1e-4, agree=False).ratio == math.inf


# -- the model in double ----------------------------------------------------------------------------------------------

def test_double_model_retypes_every_float_and_computes_what_onnxruntime_computes():
    model = onnx.load(str(MODELS / "small_cnn.onnx"))
    double = f64.double_model(model)
    assert all(t.data_type != TensorProto.FLOAT for t in double.graph.initializer)
    assert {i.type.tensor_type.elem_type for i in double.graph.input} == {TensorProto.DOUBLE}
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = f64.float64_reference(model, {"image": x}, tolerance, trials=1)
    expected = dict(zip([o.name for o in model.graph.output], ort_run(model, {"image": x})))
    for name, value in expected.items():
        assert ref.truth[name].dtype == np.float64
        np.testing.assert_allclose(ref.truth[name], value, rtol=1e-4, atol=1e-5)
    assert model.graph.initializer[0].data_type == TensorProto.FLOAT  # the original is untouched


def test_constants_and_casts_become_double():
    nodes = [helper.make_node("Constant", [], ["k"], value_float=0.1),
             helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xf", "k"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT32, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    ref = f64.float64_reference(model, {"x": np.array([1, 2, 3], np.int32)}, tolerance, trials=0)
    assert ref.truth["y"].dtype == np.float64
    # the constant is the model's float32 0.1 (an attribute holds a float), multiplied in double
    np.testing.assert_array_equal(ref.truth["y"], np.array([1.0, 2.0, 3.0]) * np.float64(np.float32(0.1)))
    assert ref.truth["y"][2] != np.float32(3) * np.float32(0.1)  # not a float32 product


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_old_opset_softmax_coerces_to_2d_as_the_spec_says(op):
    """onnx.reference implements only opset 13's form (softmax along one axis); opset 11 flattens from ``axis``."""
    node = helper.make_node(op, ["x"], ["y"], axis=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    x = np.random.default_rng(1).standard_normal((2, 3, 2, 2)).astype(np.float32)
    (expected,) = ort_run(model, {"x": x})
    ref = f64.float64_reference(model, {"x": x}, tolerance, trials=0)
    np.testing.assert_allclose(ref.truth["y"], expected, rtol=1e-5, atol=1e-6)
    # opset 13 keeps the per-axis form
    model13 = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    (expected13,) = ort_run(model13, {"x": x})
    np.testing.assert_allclose(f64.float64_reference(model13, {"x": x}, tolerance, trials=0).truth["y"], expected13,
                               rtol=1e-5, atol=1e-6)


# -- the Monte Carlo spread -------------------------------------------------------------------------------------------

def test_nothing_that_only_moves_values_is_perturbed():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0]),
             helper.make_node("Add", ["t", "t"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    ref = f64.float64_reference(model, {"x": x}, tolerance, trials=3)
    assert ref.spread["r"] == 0.0 and ref.spread["t"] == 0.0
    assert 0 < ref.spread["y"] <= 2.0 ** -23  # one relative ulp at most
    np.testing.assert_array_equal(ref.truth["y"], 2 * np.maximum(x, 0).T.astype(np.float64))


def test_a_well_conditioned_model_has_a_tiny_spread():
    model = onnx.load(str(MODELS / "small_cnn.onnx"))
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = f64.float64_reference(model, {"image": x}, tolerance)
    assert all(0 < ref.spread[o.name] < 1e-5 for o in model.graph.output)
    assert ref.amplifier("probs") is None


def test_the_softmax_of_equal_huge_logits_is_ill_conditioned_and_named():
    model = ill_conditioned_model()
    x = np.random.default_rng(3).standard_normal((1, 4, 6, 6)).astype(np.float32)
    ref = f64.float64_reference(model, {"x": x}, tolerance)
    np.testing.assert_allclose(ref.truth["y"], np.full((1, 16, 1, 1), 1 / 16), rtol=1e-12)  # exact arithmetic
    assert ref.spread["g"] < 1e-6 and ref.spread["y"] > 1.0
    amplifier = ref.amplifier("y")
    assert (amplifier["index"], amplifier["node"], amplifier["op_type"]) == (3, "softmax", "Softmax")
    v = ref.verdict("y", ref.truth["y"], ref.truth["y"], agree=True)
    assert v.verdict == f64.ILL_CONDITIONED and "amplified at ONNX node #3 'softmax' (Softmax" in v.text()


def test_onnx_reference_failures_propagate():
    node = helper.make_node("NoSuchOp", ["x"], ["y"], domain="com.example")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    with pytest.raises(Exception):  # noqa: B017 - whatever onnx.reference raises; check_model turns it into a note
        f64.float64_reference(model, {"x": np.zeros(2, np.float32)}, tolerance)


def test_lrn_sums_over_channels_as_onnxruntime_does():
    """onnx.reference's LRN loops over the batch instead of the channels; the referee's own follows the spec."""
    node = helper.make_node("LRN", ["x"], ["y"], size=3, alpha=0.5, beta=0.75, bias=2.0)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 3, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(4).standard_normal((2, 5, 3, 3)).astype(np.float32)
    (expected,) = ort_run(model, {"x": x})
    np.testing.assert_allclose(f64.float64_reference(model, {"x": x}, tolerance, trials=0).truth["y"], expected,
                               rtol=1e-5, atol=1e-6)


def test_agreeing_sides_against_float64_make_the_referee_the_suspect():
    v = f64.judge(0.3, 0.3, 1e-7, 1e-4, agree=True)
    assert v.verdict == f64.SUSPECT and v.accepted


@pytest.mark.parametrize("opset", [9, 15])
def test_batch_normalization_uses_the_running_statistics(opset):
    """onnx.reference's opset-9 BatchNormalization mixes in the batch's statistics (its momentum default); inference
    uses the running ones, as onnxruntime does."""
    rng = np.random.default_rng(5)
    inits = {"s": rng.random(3) + 0.5, "b": rng.standard_normal(3), "m": rng.standard_normal(3),
             "v": rng.random(3) + 0.1}
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4, 4])],
                              [numpy_helper.from_array(v.astype(np.float32), n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    (expected,) = ort_run(model, {"x": x})
    np.testing.assert_allclose(f64.float64_reference(model, {"x": x}, tolerance, trials=0).truth["y"], expected,
                               rtol=1e-5, atol=1e-5)
