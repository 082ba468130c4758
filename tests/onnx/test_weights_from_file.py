"""Weights read straight from the model file (``onnx_import.weights``): the large initializers of a model converted
from a path are never parsed into a protobuf; the result does not depend on the file afterwards; a damaged file is a
clean ConversionError. Expected values: onnxruntime on the same file, and onnx's own parse of it."""
from __future__ import annotations

import gc
import mmap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import ort_session

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.ir.mapped import mapping_of
from nnrt_onnx.onnx_import import ConversionError, from_onnx
from nnrt_onnx.onnx_import.weights import SPLIT_ELEMENTS, WireError, load_light


def conv_dense_model(rng) -> onnx.ModelProto:
    """Conv (large weight) -> BatchNorm -> Relu -> Flatten -> Gemm (large weight): weights the converter permutes,
    scales (batch norm folding) and passes through unchanged."""
    tensors = {
        "w": rng.standard_normal((32, 8, 3, 3)).astype(np.float32) * 0.2,
        "scale": rng.uniform(0.5, 1.5, 32).astype(np.float32), "shift": rng.normal(0, 0.1, 32).astype(np.float32),
        "mean": rng.normal(0, 0.1, 32).astype(np.float32), "var": rng.uniform(0.5, 1.5, 32).astype(np.float32),
        "fc": rng.standard_normal((32 * 6 * 6, 10)).astype(np.float32) * 0.05,
        "fc_bias": rng.standard_normal(10).astype(np.float32),
        "shape": np.asarray([1, -1], np.int64),
    }
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fc_bias"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              [numpy_helper.from_array(v, k) for k, v in tensors.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run(model, x):
    compilation = Compilation(model)
    compilation.build()
    return Executor(compilation).run_arrays([x])[0]


@pytest.fixture
def saved(rng, tmp_path):
    model = conv_dense_model(rng)
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path))
    return model, path


def test_large_initializers_stay_in_the_file(saved):
    model, path = saved
    light, weight_file = load_light(path)
    external = {t.name for t in light.graph.initializer if t.data_location == TensorProto.EXTERNAL}
    assert external == {"w", "fc"}  # more than SPLIT_ELEMENTS elements; the small ones are parsed as usual
    assert all(np.prod(t.dims) > SPLIT_ELEMENTS for t in model.graph.initializer if t.name in external)
    assert light.ByteSize() < 2000 < path.stat().st_size // 10  # the parsed message holds no weights
    for tensor in light.graph.initializer:  # every tensor reads back exactly as onnx parses it
        original = next(t for t in model.graph.initializer if t.name == tensor.name)
        got = weight_file.array(tensor) if tensor.name in external else numpy_helper.to_array(tensor)
        np.testing.assert_array_equal(got, numpy_helper.to_array(original))
    # everything but the weights' bytes is the same message
    stripped = onnx.ModelProto()
    stripped.CopyFrom(light)
    for tensor in stripped.graph.initializer:
        if tensor.name in external:
            original = next(t for t in model.graph.initializer if t.name == tensor.name)
            del tensor.external_data[:]
            tensor.ClearField("data_location")
            tensor.raw_data = original.raw_data
    assert stripped == model


def test_converted_from_a_file_matches_onnxruntime_and_outlives_the_file(saved, rng):
    model, path = saved
    x = rng.standard_normal((1, 8, 8, 8)).astype(np.float32)
    want = ort_session(model).run(None, {"x": x})[0]
    result = from_onnx(str(path))
    gc.collect()
    views = [t.data for t in result.model.tensors if t.data is not None and mapping_of(t.data) is not None]
    views += [v.data for v in result.graph.values.values() if v.data is not None and mapping_of(v.data) is not None]
    assert not views  # nothing of the result points into the file
    with open(path, "r+b") as handle:  # overwrite the weights in place: a view of the file would now read zeros
        handle.write(b"\0" * path.stat().st_size)
    np.testing.assert_allclose(run(result.model, x), want, rtol=1e-4, atol=1e-4)
    assert result.stats["folded_batchnorms"] == 1  # (the permuted and the scaled weight both came from the file)


def test_file_and_message_give_the_same_model(saved):
    model, path = saved
    from_file, from_message = from_onnx(str(path)).model, from_onnx(model).model
    assert [(t.dims, t.tensor_type) for t in from_file.tensors] == [(t.dims, t.tensor_type) for t in from_message.tensors]
    for a, b in zip(from_file.tensors, from_message.tensors):
        assert (a.data is None) == (b.data is None)
        if a.data is not None:
            np.testing.assert_array_equal(a.data, b.data)


def _truncate(path, size):
    data = path.read_bytes()
    path.write_bytes(data[:size])


def test_a_truncated_file_is_a_clean_error(saved):
    _, path = saved
    data = path.read_bytes()
    for size in (len(data) - 1, len(data) // 2, 7, 1):
        path.write_bytes(data[:size])
        with pytest.raises(ConversionError) as error:
            from_onnx(str(path))
        assert error.value.issues and all(i.reason == "invalid_model" for i in error.value.issues)


def test_raw_data_shorter_than_its_dims_is_named(rng, tmp_path):
    model = conv_dense_model(rng)
    fc = next(t for t in model.graph.initializer if t.name == "fc")
    fc.dims[0] += 1  # dims say more than the raw data holds
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path))
    light, _ = load_light(path)
    assert any(t.name == "fc" and t.data_location == TensorProto.EXTERNAL for t in light.graph.initializer)
    with pytest.raises(ConversionError) as error:
        from_onnx(str(path))
    assert any("'fc'" in i.message and "needs" in i.message for i in error.value.issues)


def test_wire_damage_the_scanner_cannot_follow_falls_back_to_onnx(saved):
    _, path = saved
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes([0x3B]) + data)  # field 7 with wire type 3 (a group): not onnx.proto
    with pytest.raises(WireError):
        load_light(path)
    with pytest.raises(ConversionError, match="not a readable ONNX model"):
        from_onnx(str(path))


def test_pages_read_from_the_file_are_dropped(saved):
    """A view's pages are advised away after use; the view still reads the same values (the file backs it)."""
    _, path = saved
    light, weight_file = load_light(path)
    tensor = next(t for t in light.graph.initializer if t.name == "fc")
    view = weight_file.array(tensor)
    assert isinstance(mapping_of(view), mmap.mmap)
    before = view.copy()
    weight_file.release(["fc"])
    np.testing.assert_array_equal(view, before)


def test_a_file_of_too_many_fields_is_left_to_onnx(saved, monkeypatch, rng):
    """The scanner stops after MAX_FIELDS fields (a file of millions of tiny fields would be slow in Python);
    onnx.load then reads the file, and the conversion is the same."""
    from nnrt_onnx.onnx_import import weights

    model, path = saved
    monkeypatch.setattr(weights, "MAX_FIELDS", 5)
    with pytest.raises(WireError, match="too many fields"):
        load_light(path)
    x = rng.standard_normal((1, 8, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(run(from_onnx(str(path)).model, x), ort_session(model).run(None, {"x": x})[0],
                               rtol=1e-4, atol=1e-4)


def test_the_cli_converts_and_runs_a_model_whose_weights_stay_in_the_file(saved, invoke, rng, tmp_path):
    """`convert` and `run` read the model from its path (weights from the file): the saved .nnrt runs like
    onnxruntime on the .onnx."""
    from nnrt_onnx.serialization import load_model

    model, path = saved
    x = rng.standard_normal((1, 8, 8, 8)).astype(np.float32)
    want = ort_session(model).run(None, {"x": x})[0]
    out = tmp_path / "model.nnrt"
    result = invoke("convert", path, "-o", out)
    assert result.exit_code == 0, result.stderr
    np.testing.assert_allclose(run(load_model(out), x), want, rtol=1e-4, atol=1e-4)
    np.save(tmp_path / "x.npy", x)
    result = invoke("run", path, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "outputs")
    assert result.exit_code == 0, result.stderr
    np.testing.assert_allclose(np.load(tmp_path / "outputs" / "y.npy"), want, rtol=1e-4, atol=1e-4)
