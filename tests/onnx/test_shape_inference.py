"""Shape inference without re-serialising the weights (nnrt_onnx.onnx_import.shapes): the same inferred types as
onnx.shape_inference.infer_shapes on the whole model (the oracle), the caller's model untouched unless in place."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnrt_onnx.onnx_import.shapes import infer_shapes_without_weights, light_copy

MODELS = Path(__file__).resolve().parent.parent.parent / "models"
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _types(model: onnx.ModelProto) -> dict[str, str]:
    infos = list(model.graph.value_info) + list(model.graph.output)
    return {i.name: i.type.SerializeToString() for i in infos}


def _weighted_model() -> onnx.ModelProto:
    """Conv (a large weight) -> Shape -> Gather -> Concat -> Reshape: data propagation through small constants."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Shape", ["c"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Concat", ["n", "minus_one"], ["target"], axis=0),
             helper.make_node("Reshape", ["c", "target"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [w, numpy_helper.from_array(np.array([0], np.int64), "zero"),
                               numpy_helper.from_array(np.array([-1], np.int64), "minus_one")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("name", ["weighted", "small_cnn", "residual_block", "light_squeezenet", "light_inception_v1"])
def test_same_types_as_onnx_shape_inference(name):
    if name == "weighted":
        model = _weighted_model()
    elif name.startswith("light_"):
        model = onnx.load(str(LIGHT / f"{name}.onnx"))
    else:
        model = onnx.load(str(MODELS / f"{name}.onnx"))
    before = model.SerializeToString()
    expected = _types(onnx.shape_inference.infer_shapes(model, data_prop=True))
    got = infer_shapes_without_weights(model)
    assert _types(got) == expected
    assert model.SerializeToString() == before  # not in place: the caller's model is untouched
    assert got.graph.initializer[0].SerializeToString() == model.graph.initializer[0].SerializeToString()
    if name == "weighted":
        (y,) = [o for o in got.graph.output if o.name == "y"]
        assert [d.dim_value for d in y.type.tensor_type.shape.dim] == [2, 64 * 8 * 8]  # needs data propagation


def test_light_copy_leaves_the_large_weights_out_and_in_place_fills_the_model():
    model = _weighted_model()
    light = light_copy(model)
    assert [t.name for t in light.graph.initializer] == ["zero", "minus_one"]
    assert "w" in {i.name for i in light.graph.input}
    assert len(light.SerializeToString()) < len(model.SerializeToString()) / 2
    result = infer_shapes_without_weights(model, in_place=True)
    assert result is model and {v.name for v in model.graph.value_info} >= {"c", "s", "n", "target"}


def test_import_converts_the_same_with_it():
    """The importer calls it: a light model with shape-dependent reshapes still converts and runs."""
    from nnrt_onnx import Compilation, Executor, from_onnx

    model = _weighted_model()
    result = from_onnx(model)
    compilation = Compilation(result.model)
    compilation.build()
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    (y,) = Executor(compilation).run_arrays([x])
    assert y.shape == (2, 4096)


def test_if_branches_get_their_inferred_shapes():
    # the converter unrolls If/Loop/Scan with the shapes inference wrote into their bodies (lost once: the affine
    # grid node cases failed to convert); oracle: the bodies infer_shapes annotates on the whole model
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "w")
    branch = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["r"])],
                               "then", [], [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["n"])], "else", [],
                              [helper.make_tensor_value_info("n", TensorProto.FLOAT, None)])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=other)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64]),
                               helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    expected = onnx.shape_inference.infer_shapes(model, data_prop=True)
    got = infer_shapes_without_weights(model)

    def bodies(m):
        return [a.g.SerializeToString() for a in m.graph.node[0].attribute]

    then_branch = next(a.g for a in expected.graph.node[0].attribute if a.name == "then_branch")
    assert any(v.name == "m" for v in then_branch.value_info)
    assert bodies(got) == bodies(expected)


def test_a_callers_model_is_left_as_it_was_and_a_loaded_file_is_not_copied(tmp_path, monkeypatch):
    # the guard loads a path itself and hands the importer a ModelProto: that one is the importer's to annotate (a
    # copy would hold every weight twice); a ModelProto from the caller must come back unchanged
    from nnrt_onnx import from_onnx
    from nnrt_onnx.onnx_import import shapes

    model = _weighted_model()
    before = model.SerializeToString()
    from_onnx(model, input_shapes={"x": [2, 3, 8, 8]})
    assert model.SerializeToString() == before
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    calls = []
    real = shapes.infer_shapes_without_weights

    def spy(m, *, in_place=False):
        calls.append(in_place)
        return real(m, in_place=in_place)

    monkeypatch.setattr("nnrt_onnx.onnx_import.importer.infer_shapes_without_weights", spy)
    from_onnx(str(path))
    from_onnx(model)
    assert calls == [True, False]
    assert model.SerializeToString() == before
