"""Importer options and inputs: external-data files, pinned input shapes, NHWC IO, BatchNorm folding switched off,
and every problem of a model reported in one pass (text and JSON)."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import ort_session

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.onnx_import import ConversionError, from_onnx


def conv_bn_model(rng, batch="N") -> onnx.ModelProto:
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    stats = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in
             (("s", rng.uniform(0.5, 1.5, 4)), ("b", rng.normal(0, 0.1, 4)), ("m", rng.normal(0, 0.1, 4)),
              ("v", rng.uniform(0.5, 1.5, 4)))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, 8, 8])], [w, *stats])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run(model, x):
    compilation = Compilation(model)
    compilation.build()
    return Executor(compilation).run_arrays([x])[0]


def reference(model, x):
    return ort_session(model).run(None, {"x": x})[0]


def test_external_data_file_loads(rng, tmp_path):
    model = conv_bn_model(rng, batch=1)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = reference(model, x)
    path = tmp_path / "ext.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").stat().st_size > 400  # the weights really live outside the model file
    np.testing.assert_allclose(run(from_onnx(str(path)).model, x), want, rtol=1e-4, atol=1e-5)


def test_dynamic_batch_stays_dynamic_or_is_pinned(rng):
    model = conv_bn_model(rng)
    dynamic = from_onnx(model).model
    assert dynamic.tensors[dynamic.inputs[0]].dims == (-1, 3, 8, 8)
    x = rng.standard_normal((3, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(run(dynamic, x), reference(model, x), rtol=1e-4, atol=1e-5)
    pinned = from_onnx(model, input_shapes={"x": [2, 3, 8, 8]}).model
    assert pinned.tensors[pinned.inputs[0]].dims == (2, 3, 8, 8)


def test_fold_batchnorm_option_and_nhwc_io(rng):
    model = conv_bn_model(rng, batch=1)
    folded = from_onnx(model)
    kept = from_onnx(model, fold_batchnorm=False)
    assert folded.stats["folded_batchnorms"] == 1 and kept.stats["folded_batchnorms"] == 0
    assert OP.OH_NN_OPS_BATCH_NORM in {op.op for op in kept.model.operations}
    assert OP.OH_NN_OPS_BATCH_NORM not in {op.op for op in folded.model.operations}
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = reference(model, x)
    np.testing.assert_allclose(run(kept.model, x), want, rtol=1e-4, atol=1e-5)
    nhwc = from_onnx(model, nhwc_io=True)
    assert not any(op.op == OP.OH_NN_OPS_TRANSPOSE for op in nhwc.model.operations)
    got = run(nhwc.model, np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-5)


def test_every_problem_is_reported_in_one_pass():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("Acos", ["a"], ["b"], name="no_acos"),
             helper.make_node("Reshape", ["a", "shape"], ["c"], name="dynamic_reshape"),
             helper.make_node("Add", ["b", "c"], ["y"], name="sum")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                           helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    issues = {i.node: i for i in info.value.issues}
    assert set(issues) == {"no_acos", "dynamic_reshape"}
    assert issues["no_acos"].reason == "unsupported_op" and issues["no_acos"].opset == 17
    assert issues["dynamic_reshape"].reason == "needs_constant_input"
    report = json.loads(info.value.to_json())
    assert {r["node"] for r in report} == {"no_acos", "dynamic_reshape"}
    assert "2 problem(s)" in info.value.text()


@pytest.mark.parametrize("axes, keepdims, softmax_axis", [([1], 0, 1), ([2], 1, 3), ([1, 3], 0, 1), ([3], 0, 2)])
def test_axes_are_rewritten_not_guessed_on_a_square_tensor(rng, axes, keepdims, softmax_axis):
    """C == H == W: a layout pass that guessed axes from sizes would pick the wrong one and still run."""
    w = numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("ReduceMean", ["r"], ["m"], axes=axes, keepdims=keepdims),
             helper.make_node("Softmax", ["m"], ["y"], axis=softmax_axis if keepdims or softmax_axis < 4 - len(axes)
                              else 1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = rng.standard_normal((1, 4, 4, 4)).astype(np.float32)
    result = from_onnx(model)
    np.testing.assert_allclose(run(result.model, x), reference(model, x), rtol=1e-4, atol=1e-6)
    inner = [op for op in result.model.operations[1:] if op.op == OP.OH_NN_OPS_TRANSPOSE]
    assert len(inner) <= 1  # at most one transpose where the reduced result must return to the ONNX order


@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_a_pad_between_convolutions_keeps_the_network_transpose_free(rng, mode):
    w1 = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w2")
    pads = numpy_helper.from_array(np.array([0, 0, 1, 2, 0, 0, 3, 1], np.int64), "pads")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"]), helper.make_node("Pad", ["c", "pads"], ["p"], mode=mode),
             helper.make_node("Conv", ["p", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w1, w2, pads])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    result = from_onnx(model, nhwc_io=True)
    assert not any(op.op == OP.OH_NN_OPS_TRANSPOSE for op in result.model.operations)
    x = rng.standard_normal((1, 3, 9, 9)).astype(np.float32)
    got = run(result.model, np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
    want = reference(model, x).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_split_gather_and_slice_between_convolutions_stay_transpose_free(rng):
    w = numpy_helper.from_array(rng.standard_normal((6, 3, 3, 3)).astype(np.float32), "w")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 3, 1, 1)).astype(np.float32), "w2")
    consts = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
              (("idx", [2, 0, 1]), ("st", [1, 0]), ("en", [6, 5]), ("ax", [2, 3]))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Split", ["c"], ["a", "b"], axis=1),
             helper.make_node("Gather", ["a", "idx"], ["g"], axis=1),
             helper.make_node("Slice", ["b", "st", "en", "ax"], ["s"]),
             helper.make_node("Conv", ["g", "w2"], ["y1"]), helper.make_node("Conv", ["s", "w2"], ["y2"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 7, 7])],
                              [helper.make_tensor_value_info("y1", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("y2", TensorProto.FLOAT, None)], [w, w2, *consts])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    result = from_onnx(model, nhwc_io=True)
    assert not any(op.op == OP.OH_NN_OPS_TRANSPOSE for op in result.model.operations)
    x = rng.standard_normal((1, 3, 7, 7)).astype(np.float32)
    compilation = Compilation(result.model)
    compilation.build()
    got = Executor(compilation).run_arrays([np.ascontiguousarray(x.transpose(0, 2, 3, 1))])
    want = ort_session(model).run(None, {"x": x})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-5 * float(np.abs(b).max()))
