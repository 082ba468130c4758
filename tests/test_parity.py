"""nnrt_onnx.workflows.parity: the native conversion against onnxruntime, output by output and layer by layer; repro
extraction; the sample models; and the onnxruntime device running the same compiled models."""
from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import ort_session

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.errors import UserError
from nnrt_onnx.kernels import kernels
from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.workflows.inference import random_inputs
from nnrt_onnx.workflows.parity import check_model, compare, tolerances_for

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())
ONNX_SAMPLES = [m["file"] for m in MANIFEST["models"] if m["file"].endswith(".onnx")]


# -- compare -------------------------------------------------------------------------------------------------------

def test_float32_tolerance_is_relative_to_the_output_scale():
    ref = np.array([1000.0, 1.0, 0.0], np.float32)
    assert tolerances_for(np.float32) == (1e-4, 1e-5)
    assert compare(ref + np.float32(0.009), ref).within  # 0.009 <= 1e-5 * 1000 (+ rtol share)
    c = compare(ref + np.array([0, 0, 0.02], np.float32), ref)
    assert not c.within and c.mismatched == 1 and c.max_abs == pytest.approx(0.02)
    small = np.array([1e-3, -2e-3], np.float32)
    assert not compare(small + np.float32(1e-5), small).within  # absolute 1e-5 would hide a 1% error here


def test_dtype_aware_tolerances():
    half = np.array([1.0, 2.0], np.float16)
    assert compare(half + np.float16(0.004), half).within
    ints = np.array([1, 2, 3], np.int32)
    c = compare(ints + np.array([0, 0, 1], np.int32), ints)
    assert not c.within and c.mismatched == 1 and c.atol == 0 and c.rtol == 0
    assert compare(np.array([True, False]), np.array([True, False])).within
    assert not compare(np.array([True, True]), np.array([True, False])).within
    assert compare(ints, ints, rtol=1, atol=1).rtol == 0  # overrides apply to floats only


# The documented rule (module doc of nnrt_onnx.workflows.parity, docs/onnx_import.md): an element is within when
# |native - reference| <= atol * max|reference| + rtol * |reference|, with float32 rtol 1e-4 / atol 1e-5, float16
# 1e-2 / 1e-2, float64 1e-7 / 1e-9, integers and bools exact. Each bound is computed here by hand from those numbers
# and probed 1% inside and 1% outside (3% in float16, whose spacing near 100 is 0.0625), on the largest element
# (where the rtol share is largest) and on a zero (atol alone).
DOCUMENTED = {np.float32: (1e-4, 1e-5), np.float16: (1e-2, 1e-2), np.float64: (1e-7, 1e-9)}


@pytest.mark.parametrize("dtype", list(DOCUMENTED), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("where", ["largest", "zero"])
def test_float_tolerance_boundaries(dtype, where):
    rtol, atol = DOCUMENTED[dtype]
    scale = 100.0 if dtype == np.float16 else 1000.0
    ref = np.array([scale, -scale / 4, 0.0], dtype)
    position = 0 if where == "largest" else 2
    bound = atol * scale + rtol * abs(float(ref[position]))
    margin = 0.03 if dtype == np.float16 else 0.01
    for factor, within in ((1 - margin, True), (1 + margin, False)):
        actual = ref.astype(np.float64)
        actual[position] += factor * bound
        actual = actual.astype(dtype)
        error = abs(float(actual[position]) - float(ref[position]))
        assert (error <= bound) == within, "the probe must land on its side of the bound in this dtype"
        c = compare(actual, ref)
        assert c.within == within, (factor, bound, error)
        assert c.mismatched == (0 if within else 1)
        assert c.rtol == rtol and c.atol == pytest.approx(atol * scale)


def test_tolerance_overrides_move_the_boundary():
    ref = np.array([1000.0, 0.0], np.float64)
    bound = 1e-3 * 1000.0 + 1e-2 * 1000.0  # atol 1e-3 x scale 1000, rtol 1e-2 x 1000
    assert compare(ref + [0.99 * bound, 0.0], ref, rtol=1e-2, atol=1e-3).within
    assert not compare(ref + [1.01 * bound, 0.0], ref, rtol=1e-2, atol=1e-3).within
    assert not compare(ref + [0.99 * bound, 0.0], ref).within  # the defaults are far tighter


def test_rtol_is_relative_to_the_reference_not_to_the_native_value():
    ref = np.array([1.0], np.float64)
    assert compare(np.array([0.6]), ref, rtol=0.5, atol=0.0).within  # |0.4| <= 0.5 * |1.0|
    assert not compare(np.array([1.9]), ref, rtol=0.5, atol=0.0).within  # |0.9| > 0.5 * |1.0| (0.5 * 1.9 would pass)
    c = compare(np.array([1.9]), ref, rtol=0.5, atol=0.0)
    assert c.max_rel == pytest.approx(0.9) and c.max_abs == pytest.approx(0.9)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.bool_], ids=lambda d: np.dtype(d).name)
def test_integers_and_bools_are_exact(dtype):
    ref = np.array([0, 1, 1, 0], dtype)
    assert compare(ref.copy(), ref).within
    off = ref.copy()
    off[0] = 1  # one unit (True for bools) on one element
    c = compare(off, ref)
    assert not c.within and c.mismatched == 1 and c.max_abs == 1.0
    assert not compare(off, ref, rtol=0.5, atol=0.5).within  # float overrides do not loosen integers


def test_special_values_shapes_and_cosine():
    ref = np.array([np.nan, np.inf, 1.0], np.float32)
    assert compare(ref.copy(), ref).within
    c = compare(np.array([0.0, np.inf, 1.0], np.float32), ref)
    assert not c.within and "NaN/inf" in c.note
    c = compare(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
    assert not c.within and "shape" in c.note
    assert compare(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32), strict_shape=False).within
    c = compare(-np.ones(4, np.float32), np.ones(4, np.float32))
    assert c.cosine == pytest.approx(-1.0) and c.max_rel == pytest.approx(2.0)
    assert "dtype" in compare(np.ones(2, np.float64), np.ones(2, np.float32)).note


# -- the sample models ----------------------------------------------------------------------------------------------

def test_manifest_lists_small_generated_samples():
    assert len(ONNX_SAMPLES) >= 2
    for entry in MANIFEST["models"]:
        path = MODELS / entry["file"]
        assert path.is_file() and path.stat().st_size < 1 << 20
        if path.suffix == ".onnx":
            model = onnx.load(str(path))
            onnx.checker.check_model(model, full_check=True)
            assert [i.name for i in model.graph.input] == [i["name"] for i in entry["inputs"]]
            assert entry["tolerances"]["float32"] == {"rtol": 1e-4, "atol": 1e-5}


@pytest.mark.parametrize("file", ONNX_SAMPLES)
def test_samples_agree_with_onnxruntime_output_and_per_layer(file):
    report = check_model(MODELS / file, per_layer=True)
    assert report.ok, report.to_dict()
    assert report.first_divergence is None
    compared = [layer for layer in report.layers if layer.status != "not compared"]
    assert compared and all(layer.status == "within" for layer in compared)
    assert all(c.cosine > 0.999999 for c in report.outputs)
    json.dumps(report.to_dict())  # serialisable


def test_inputs_given_random_and_checked():
    x = np.random.default_rng(5).standard_normal((3, 64)).astype(np.float32)
    report = check_model(MODELS / "tiny_mlp.onnx", {"features": x}, input_shapes={"features": [3, 64]})
    assert report.ok and report.inputs["features"] == {"dtype": "float32", "shape": [3, 64], "source": "given"}
    assert check_model(MODELS / "tiny_mlp.onnx", {"features": x}).ok  # a dynamic batch takes any size
    with pytest.raises(UserError, match="unknown input"):
        check_model(MODELS / "tiny_mlp.onnx", {"nope": x})
    with pytest.raises(UserError, match="shape"):
        check_model(MODELS / "small_cnn.onnx", {"image": np.zeros((1, 3, 8, 8), np.float32)})
    with pytest.raises(UserError, match="dtype"):
        check_model(MODELS / "small_cnn.onnx", {"image": np.zeros((1, 3, 32, 32), np.float64)})
    with pytest.raises(UserError, match="no such file"):
        check_model(MODELS / "missing.onnx")


def test_flatten_reordered_for_the_dense_layer_is_not_compared_as_the_onnx_tensor(tmp_path):
    """The importer flattens NHWC and permutes the dense weights instead: that flat tensor is no ONNX tensor."""
    rng = np.random.default_rng(3)
    init = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
            for n, s in (("w", (4, 2, 3, 3)), ("b", (4,)), ("fc", (5, 36)), ("fb", (5,)))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Flatten", ["c"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], name="dense", transB=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    report = check_model(model, per_layer=True)
    assert report.ok and report.first_divergence is None
    assert {layer.node: layer.status for layer in report.layers}["flatten"] == "not compared"


# -- planted bugs ---------------------------------------------------------------------------------------------------

@pytest.fixture
def perturbed_weight(monkeypatch):
    """A converter bug: one constant weight of the converted model is wrong (the dense layer 'logits')."""
    import nnrt_onnx.onnx_import as importer

    real = importer.from_onnx

    def converting_wrongly(*args, **kwargs):
        result = real(*args, **kwargs)
        model = result.model
        (fc,) = [op for op in model.operations if op.op == OP.OH_NN_OPS_FULL_CONNECTION]
        weight = model.tensors[fc.inputs[1]]
        wrong = weight.data.copy()
        wrong[3, 5] += 1.0
        weight.data = wrong
        return result

    monkeypatch.setattr(importer, "from_onnx", converting_wrongly)


def test_per_layer_names_the_node_with_the_wrong_weight(perturbed_weight):
    report = check_model(MODELS / "small_cnn.onnx", per_layer=True)
    assert not report.ok
    first = report.first_divergence
    assert (first.node, first.op_type, first.fused_with) == ("logits", "Gemm", [])
    statuses = {layer.node: layer.status for layer in report.layers}
    assert all(statuses[n] == "within" for n in ("stem.relu", "pool1", "conv2.relu", "dw.relu6", "lrn", "flat"))
    assert statuses["probs"] == "diverged"


def patch_kernel(monkeypatch, op, condition, delta=0.5):
    """A kernel bug in exactly the nodes where ``condition(inputs)`` holds: adds ``delta`` to channel 3."""
    real = kernels()[op]

    def wrong(*args, **kwargs):
        out = real(*args, **kwargs)
        if condition(args):
            out = out.copy()
            out[..., 3] += out.dtype.type(delta)
        return out

    wrong.__signature__ = inspect.signature(real)  # keeps the kernel's keyword contract (ctx or not)
    monkeypatch.setitem(kernels(), op, wrong)


def test_per_layer_names_a_patched_kernel_node_and_the_repro_reproduces(monkeypatch, tmp_path):
    patch_kernel(monkeypatch, OP.OH_NN_OPS_LRN, lambda args: True)
    report = check_model(MODELS / "small_cnn.onnx", per_layer=True)
    assert not report.ok
    first = report.first_divergence
    assert (first.node, first.op_type, first.fused_with) == ("lrn", "LRN", [])
    assert first.outputs[0].mismatched > 0

    repro = report.extract_repro(tmp_path / "repro")
    files = sorted(os.listdir(repro))
    assert files == ["dw.relu6.npy", "inputs.npz", "repro.json", "repro.onnx"]
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # no staging left behind
    model = onnx.load(str(repro / "repro.onnx"))
    assert [n.op_type for n in model.graph.node] == ["LRN"]
    assert [i.name for i in model.graph.input] == ["dw.relu6"]
    manifest = json.loads((repro / "repro.json").read_text())
    assert manifest["node"] == "lrn" and manifest["inputs"] == {"dw.relu6": "dw.relu6.npy"}
    given = {"dw.relu6": np.load(repro / "dw.relu6.npy")}
    np.testing.assert_array_equal(given["dw.relu6"], np.load(repro / "inputs.npz")["dw.relu6"])

    # run both ways: native (still patched) vs onnxruntime differ on the repro alone ...
    again = check_model(repro / "repro.onnx", given, per_layer=True)
    assert not again.ok and again.first_divergence.node == "lrn"
    # ... onnxruntime's side of the repro computes exactly the original model's intermediate ...

    from nnrt_onnx.workflows.parity import _with_all_outputs

    (repro_out,) = ort_session(repro / "repro.onnx").run(None, given)
    original = _with_all_outputs(onnx.load(str(MODELS / "small_cnn.onnx")), ["lrn"])
    image = random_inputs(from_onnx(str(MODELS / "small_cnn.onnx")).model, 0)[0]  # what check_model fed (seed 0)
    session = ort_session(original)
    (lrn,) = session.run(["lrn"], {"image": image})
    np.testing.assert_allclose(repro_out, lrn, rtol=1e-5, atol=1e-5)
    # ... and without the bug the repro agrees
    monkeypatch.undo()
    assert check_model(repro / "repro.onnx", given).ok


def test_a_bug_in_a_fused_conv_is_found_at_its_activation_and_the_repro_keeps_both(monkeypatch, tmp_path):
    # only the second convolution (24 output channels) is wrong; its ReLU is fused into it in NNRt
    patch_kernel(monkeypatch, OP.OH_NN_OPS_CONV2D, lambda args: args[1].shape[0] == 24)
    report = check_model(MODELS / "small_cnn.onnx", per_layer=True)
    first = report.first_divergence
    assert (first.node, first.op_type, first.fused_with) == ("conv2.relu", "Relu", ["conv2"])
    repro = report.extract_repro(tmp_path / "out")
    model = onnx.load(str(repro / "repro.onnx"))
    assert [n.name for n in model.graph.node] == ["conv2", "conv2.relu"]
    assert {t.name for t in model.graph.initializer} == {"conv2.weight", "conv2.bias"}
    given = dict(np.load(repro / "inputs.npz"))
    assert not check_model(repro / "repro.onnx", given).ok
    monkeypatch.undo()
    assert check_model(repro / "repro.onnx", given).ok


def _dynamic_batch_conv():
    weight = np.random.default_rng(3).standard_normal((4, 1, 3, 3)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 10, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])],
                              [numpy_helper.from_array(weight, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_check_runs_the_model_convert_makes_not_one_pinned_to_the_data(monkeypatch):
    # a fault only in the conversion users run (batch left dynamic, as exporters write it): check pinned the batch
    # from the data before converting, so it certified another model and said OK
    real = kernels()[OP.OH_NN_OPS_CONV2D]

    def wrong_when_the_batch_is_dynamic(*args, ctx, **kwargs):
        out = real(*args, ctx=ctx, **kwargs)
        return out + np.float32(0.5) if ctx.output_shapes[0][0] == -1 else out

    wrong_when_the_batch_is_dynamic.__signature__ = inspect.signature(real)
    monkeypatch.setitem(kernels(), OP.OH_NN_OPS_CONV2D, wrong_when_the_batch_is_dynamic)
    x = np.random.default_rng(0).standard_normal((2, 1, 10, 10)).astype(np.float32)
    report = check_model(_dynamic_batch_conv(), {"x": x})
    assert not report.ok
    assert not report.notes  # converted as convert converts it: nothing specialised


def test_check_specialises_only_a_model_that_needs_it_and_says_so(monkeypatch):
    import nnrt_onnx.onnx_import as importer
    from nnrt_onnx.ir.issues import DYNAMIC_SHAPE, ConversionError, Issue

    real = importer.from_onnx
    calls = []

    def refusing_dynamic(model, **options):
        calls.append(dict(options.get("input_shapes") or {}))
        if not options.get("input_shapes"):
            raise ConversionError([Issue("y", "Conv", 17, DYNAMIC_SHAPE, "needs a static batch")])
        return real(model, **options)

    monkeypatch.setattr(importer, "from_onnx", refusing_dynamic)
    x = np.random.default_rng(0).standard_normal((3, 1, 10, 10)).astype(np.float32)
    report = check_model(_dynamic_batch_conv(), {"x": x})
    assert report.ok
    assert calls == [{}, {"x": [3, 1, 10, 10]}]
    (note,) = report.notes
    assert "x=3x1x10x10" in note and "needs a static batch" in note


def test_extract_repro_needs_a_divergence_and_replaces_files_in_an_existing_directory(monkeypatch, tmp_path):
    clean = check_model(MODELS / "tiny_mlp.onnx", per_layer=True)
    with pytest.raises(UserError, match="no divergence"):
        clean.extract_repro(tmp_path / "r")
    with pytest.raises(UserError, match="per-layer"):
        check_model(MODELS / "tiny_mlp.onnx").extract_repro(tmp_path / "r")
    patch_kernel(monkeypatch, OP.OH_NN_OPS_TANH, lambda args: True, delta=0.25)
    report = check_model(MODELS / "tiny_mlp.onnx", per_layer=True)
    assert report.first_divergence.node == "fc2.tanh"
    target = tmp_path / "existing"
    target.mkdir()
    (target / "repro.onnx").write_bytes(b"old")
    (target / "keep.txt").write_text("unrelated")
    report.extract_repro(target)
    assert onnx.load(str(target / "repro.onnx")).graph.node[0].op_type == "Tanh"
    assert (target / "keep.txt").read_text() == "unrelated"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="not a directory"):
        report.extract_repro(tmp_path / "file")


# -- the native capture and the onnxruntime device on real models ---------------------------------------------------

def test_native_run_captures_requested_tensors():
    result = from_onnx(str(MODELS / "tiny_mlp.onnx"))
    model = result.model
    compilation = Compilation(model)
    compilation.build()
    x = random_inputs(model, 0)
    names = {t.name: i for i, t in enumerate(model.tensors)}
    wanted = {names["fc2"]: None, names["features"]: None, names["fc1.weight"]: None}
    outputs = compilation.prepared.run(x, wanted)
    np.testing.assert_array_equal(outputs[0], compilation.prepared.run(x)[0])
    assert wanted[names["features"]] is not None and np.array_equal(wanted[names["features"]], x[0])
    assert wanted[names["fc2"]].shape == (1, 16)
    assert wanted[names["fc1.weight"]].shape == (64, 32)
    fc2 = np.tanh(wanted[names["fc2"]])  # the next layer consumes exactly what was captured
    assert np.all(np.abs(fc2) <= 1)


@pytest.mark.parametrize("file,batch", [("small_cnn.onnx", 1), ("tiny_mlp.onnx", 3), ("residual_block.onnx", 1)])
def test_ort_device_runs_the_same_compiled_model(file, batch):
    model = from_onnx(str(MODELS / file)).model
    rng = np.random.default_rng(1)
    tensor = model.tensors[model.inputs[0]]
    x = rng.standard_normal([batch if d == -1 else d for d in tensor.dims]).astype(np.float32)
    results = []
    for device in (1, 2):
        compilation = Compilation(model)
        compilation.set_device(device)
        compilation.build()
        executor = Executor(compilation)
        results.append(executor.run_arrays([x]))
        assert executor.output_shape(0) == list(results[-1][0].shape)
    for native, ort_out in zip(*results):
        np.testing.assert_allclose(ort_out, native, rtol=1e-4, atol=1e-5)


def test_ort_device_through_the_c_api():
    from nnrt_onnx import capi as C
    from nnrt_onnx.serialization import load_model

    model = load_model(MODELS / "tiny_cnn.nnrt")
    assert C.OH_NNDevice_GetName(2) == (C.OH_NN_SUCCESS, "onnxruntime.cpu")
    assert C.OH_NNDevice_GetType(2) == (C.OH_NN_SUCCESS, C.OH_NN_CPU)
    compilation = C.OH_NNCompilation_Construct(C.OH_NNModel(model))
    assert C.OH_NNCompilation_SetDevice(compilation, 2) == C.OH_NN_SUCCESS
    assert C.OH_NNCompilation_EnableFloat16(compilation, True) == C.OH_NN_SUCCESS
    assert C.OH_NNCompilation_Build(compilation) == C.OH_NN_OPERATION_FORBIDDEN  # no float16 on this device
    compilation = C.OH_NNCompilation_Construct(C.OH_NNModel(model))
    assert C.OH_NNCompilation_SetDevice(compilation, 2) == C.OH_NN_SUCCESS
    assert C.OH_NNCompilation_Build(compilation) == C.OH_NN_SUCCESS
    executor = C.OH_NNExecutor_Construct(compilation)
    x = random_inputs(model, 0)[0]
    out = np.zeros((1, 10), np.float32)
    tensor = C.OH_NN_Tensor(C.OH_NN_FLOAT32, 4, [1, 16, 16, 3], None, C.OH_NN_TENSOR)
    assert C.OH_NNExecutor_SetInput(executor, 0, tensor, x, x.nbytes) == C.OH_NN_SUCCESS
    assert C.OH_NNExecutor_SetOutput(executor, 0, out, out.nbytes) == C.OH_NN_SUCCESS
    assert C.OH_NNExecutor_Run(executor) == C.OH_NN_SUCCESS
    native_compilation = Compilation(model)
    native_compilation.build()
    (native,) = Executor(native_compilation).run_arrays([x])
    np.testing.assert_allclose(out, native, rtol=1e-5, atol=1e-7)


# -- integer outputs: onnx.reference referees ----------------------------------------------------------------------

def _qlinear_conv_model():
    rng = np.random.default_rng(11)
    w = rng.integers(-128, 128, (3, 2, 3, 3)).astype(np.int8)
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in {
        "xs": np.float32(0.02), "xz": np.uint8(3), "w": w, "ws": np.asarray([0.004, 0.002, 0.003], np.float32),
        "wz": np.zeros(3, np.int8), "ys": np.float32(0.25), "yz": np.uint8(120)}.items()]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qconv",
                            pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "q", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 2, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 3, 5, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    # x < 128: byte-pair sums stay below 2 * 127 * 128 < 32768, so onnxruntime's u8s8 kernels are exact on every
    # CPU here (with x up to 255 they saturate on AVX2 without VNNI, and the referee would rightly say "neither")
    x = np.random.default_rng(12).integers(0, 128, (1, 2, 5, 5)).astype(np.uint8)
    return model, x


def _perturbed_onnxruntime(monkeypatch, delta: int):
    """onnxruntime's integer results off by ``delta`` on one element, as its u8s8 kernels are on CPUs without VNNI."""
    import nnrt_onnx.workflows.parity as parity

    real = parity._session

    class Session:
        def __init__(self, model, what):
            self.inner = real(model, what)

        def get_outputs(self):
            return self.inner.get_outputs()

        def run(self, names, feed):
            results = self.inner.run(names, feed)
            for i, name in enumerate(names):
                if name == "y":
                    results[i] = results[i].copy()
                    results[i].reshape(-1)[4] += np.uint8(delta)
            return results

    monkeypatch.setattr(parity, "_session", Session)


@pytest.mark.parametrize("per_layer", [False, True], ids=["outputs", "per-layer"])
def test_integer_mismatch_where_onnx_reference_agrees_with_native_passes_with_a_hint(monkeypatch, per_layer):
    model, x = _qlinear_conv_model()
    _perturbed_onnxruntime(monkeypatch, 9)
    report = check_model(model, {"x": x}, per_layer=per_layer)
    (c,) = report.outputs
    assert report.ok and c.referee == "native" and c.within
    assert "onnx.reference agrees with native (exactly)" in c.note and "onnxruntime is 9 off" in c.note
    assert "VNNI" in c.note


def test_integer_mismatch_where_onnx_reference_agrees_with_onnxruntime_fails(monkeypatch):
    import nnrt_onnx.workflows.parity as parity

    model, x = _qlinear_conv_model()
    real = parity._run_native

    def wrong_native(nnrt, arrays, capture, device, hidden=None):
        outputs = real(nnrt, arrays, capture, device, hidden)
        outputs[0] = outputs[0].copy()
        outputs[0].reshape(-1)[7] += np.uint8(5)
        return outputs

    monkeypatch.setattr(parity, "_run_native", wrong_native)
    report = check_model(model, {"x": x})
    (c,) = report.outputs
    assert not report.ok and c.referee == "onnxruntime" and "native is wrong by up to 5" in c.note


def test_integer_hint_in_the_cli(monkeypatch, cli_main, tmp_path):
    from click.testing import CliRunner

    model, x = _qlinear_conv_model()
    onnx.save(model, tmp_path / "q.onnx")
    np.save(tmp_path / "x.npy", x)
    _perturbed_onnxruntime(monkeypatch, 9)
    result = CliRunner().invoke(cli_main, ["check", str(tmp_path / "q.onnx"), "--input", f"x={tmp_path / 'x.npy'}"])
    assert result.exit_code == 0, result.output
    assert "onnx.reference agrees with native" in result.output


# -- the float64 referee: who is right ------------------------------------------------------------------------------

def off_by_one_pad(monkeypatch, condition):
    """A convolution whose top padding is one row too many where ``condition(args)`` holds: its input is shifted
    down by one row (NHWC) before the real kernel runs."""
    real = kernels()[OP.OH_NN_OPS_CONV2D]

    def wrong(*args, **kwargs):
        if condition(args):
            x = np.asarray(args[0])
            shifted = np.zeros_like(x)
            shifted[:, 1:] = x[:, :-1]
            args = (shifted,) + tuple(args[1:])
        return real(*args, **kwargs)

    wrong.__signature__ = inspect.signature(real)
    monkeypatch.setitem(kernels(), OP.OH_NN_OPS_CONV2D, wrong)


def one_ulp_up(monkeypatch, channel=3):
    """Native's convolutions round channel 3 one ulp up: a different (legal) rounding order, nothing wrong."""
    real = kernels()[OP.OH_NN_OPS_CONV2D]

    def rounding(*args, **kwargs):
        out = real(*args, **kwargs).copy()
        out[..., channel] = np.nextafter(out[..., channel], np.float32(np.inf))
        return out

    rounding.__signature__ = inspect.signature(real)
    monkeypatch.setitem(kernels(), OP.OH_NN_OPS_CONV2D, rounding)


def test_an_off_by_one_pad_is_native_is_wrong_at_its_node(monkeypatch):
    from nnrt_onnx.workflows import float64 as f64

    off_by_one_pad(monkeypatch, lambda args: args[1].shape[0] == 24)  # conv2 only (24 output channels)
    report = check_model(MODELS / "small_cnn.onnx", per_layer=True)
    assert not report.ok
    culprit = report.culprit
    assert (culprit.node, culprit.op_type, culprit.fused_with, culprit.nnrt_ops) == ("conv2.relu", "Relu", ["conv2"],
                                                                                     ["CONV2D"])
    (c,) = culprit.outputs
    assert c.float64.verdict == f64.NATIVE_WRONG and c.float64.closer == "onnxruntime"
    assert c.float64.native_error > c.float64.expected_error >= c.float64.onnxruntime_error
    statuses = {layer.node: layer.verdict for layer in report.layers}
    assert statuses["stem.relu"] is None and statuses["pool1"] is None  # upstream: nothing to say
    assert report.first_divergence is culprit
    for output in report.outputs:  # the outputs say the same without the layers
        assert output.float64.verdict == f64.NATIVE_WRONG and not output.passed()
    plain = check_model(MODELS / "small_cnn.onnx")
    assert not plain.ok and all(c.float64.verdict == f64.NATIVE_WRONG for c in plain.outputs)
    assert plain.layers is None  # nothing was cleared: no per-layer comparison was added


def test_ill_conditioned_model_passes_with_a_warning_and_fails_strict(monkeypatch):
    """The same disagreement in size as a broken kernel's, but both sides are within float32's error of float64."""
    from test_float64 import ill_conditioned_model

    from nnrt_onnx.workflows import float64 as f64

    model = ill_conditioned_model()
    clean = check_model(model)
    assert clean.ok and clean.outputs[0].within  # here both sides round alike ...
    # ... on a constant output: a warning whatever the referee says, which it is therefore not asked
    assert clean.outputs[0].constant and clean.float64 is None and clean.outputs[0].float64 is None
    assert clean.float64_not_asked.endswith("'y' constant: a warning either way")
    asked = check_model(model, float64_always=True)
    assert asked.outputs[0].float64.verdict == f64.ILL_CONDITIONED  # ... by luck: the referee says so, when asked
    assert asked.float64["asked_because"] == ["it was asked for"] and asked.float64_not_asked is None
    assert not check_model(model, strict=True).ok

    one_ulp_up(monkeypatch)
    report = check_model(model)
    (c,) = report.outputs
    assert not c.within and c.max_rel > 1  # one ulp apart in the logits: the softmax outputs differ completely
    assert c.float64.verdict == f64.ILL_CONDITIONED and c.passed() and not c.passed(strict=True)
    assert c.float64.amplifier["node"] == "softmax" and c.float64.amplifier["op_type"] == "Softmax"
    assert report.ok and any("ill-conditioned" in w and "(Softmax" in w for w in report.warnings)
    assert report.layers is not None and report.culprit is None  # the layers were compared: no bug behind it
    assert any("every layer was compared too" in n for n in report.notes)
    assert not check_model(model, strict=True).ok


def test_a_broken_kernel_in_an_ill_conditioned_model_is_still_found(monkeypatch):
    from test_float64 import ill_conditioned_model

    from nnrt_onnx.workflows import float64 as f64

    real = kernels()[OP.OH_NN_OPS_CONV2D]

    def wrong(*args, **kwargs):
        out = real(*args, **kwargs).copy()
        out[..., 3] += np.float32(1e6)  # 0.1% of the 1e9 logits: a bug, not a rounding
        return out

    wrong.__signature__ = inspect.signature(real)
    monkeypatch.setitem(kernels(), OP.OH_NN_OPS_CONV2D, wrong)
    report = check_model(ill_conditioned_model())
    assert report.outputs[0].float64.verdict == f64.ILL_CONDITIONED  # the saturated softmax alone cannot tell ...
    assert not report.ok and report.culprit.node == "relu"  # ... the layers can: different verdicts
    assert report.culprit.outputs[0].float64.verdict == f64.NATIVE_WRONG


def _perturbed_float_onnxruntime(monkeypatch, name, delta):
    import nnrt_onnx.workflows.parity as parity

    real = parity._session

    class Session:
        def __init__(self, model, what):
            self.inner = real(model, what)

        def get_outputs(self):
            return self.inner.get_outputs()

        def run(self, names, feed):
            results = self.inner.run(names, feed)
            for i, n in enumerate(names):
                if n == name:
                    results[i] = results[i].copy()
                    results[i].reshape(-1)[2] += results[i].dtype.type(delta)
            return results

    monkeypatch.setattr(parity, "_session", Session)


def test_onnxruntime_is_wrong_passes_with_a_warning(monkeypatch):
    from nnrt_onnx.workflows import float64 as f64

    _perturbed_float_onnxruntime(monkeypatch, "logits", 0.5)
    report = check_model(MODELS / "small_cnn.onnx")
    c = {c.name: c for c in report.outputs}["logits"]
    assert not c.within and c.float64.verdict == f64.ORT_WRONG and c.float64.closer == "native"
    assert report.ok and any("onnxruntime is wrong" in w for w in report.warnings)
    assert not check_model(MODELS / "small_cnn.onnx", strict=True).ok


def test_without_a_float64_opinion_a_disagreement_just_fails(monkeypatch):
    from test_float64 import ill_conditioned_model

    one_ulp_up(monkeypatch)
    report = check_model(ill_conditioned_model(), float64_opinion=False)
    assert not report.ok and report.outputs[0].float64 is None and report.float64 is None


def test_a_model_onnx_reference_cannot_run_gets_a_note_not_a_verdict(monkeypatch):
    import nnrt_onnx.workflows.float64 as f64

    def failing(*args, **kwargs):
        raise RuntimeError("no implementation for that")

    monkeypatch.setattr(f64, "float64_reference", failing)
    patch_kernel(monkeypatch, OP.OH_NN_OPS_LRN, lambda args: True)
    report = check_model(MODELS / "small_cnn.onnx")
    assert not report.ok and report.float64["error"] == "no implementation for that"
    assert report.notes == ["no float64 opinion: onnx.reference cannot evaluate the model (no implementation for that)"]


# -- when the float64 referee is asked: where it can change the result ---------------------------------------------

def _native_scaled(monkeypatch, factor):
    """native's outputs times ``factor``: a relative error of ``factor - 1`` on every element of every output."""
    import nnrt_onnx.workflows.parity as parity

    real = parity._run_native

    def scaled(*args, **kwargs):
        return [np.asarray(o * o.dtype.type(factor)) for o in real(*args, **kwargs)]

    monkeypatch.setattr(parity, "_run_native", scaled)


def _referee_forbidden(monkeypatch):
    import nnrt_onnx.workflows.float64 as f64

    def forbidden(*args, **kwargs):
        raise AssertionError("the float64 referee was asked")

    monkeypatch.setattr(f64, "float64_reference", forbidden)


def test_where_the_sides_agree_the_referee_is_not_asked_and_the_report_says_why(monkeypatch):
    _referee_forbidden(monkeypatch)
    report = check_model(MODELS / "tiny_mlp.onnx")
    assert report.ok and report.float64 is None and report.outputs[0].float64 is None
    assert report.float64_not_asked.startswith("every floating output agrees within tolerance (the closest to it: "
                                               "'scores', max rel ")
    assert report.float64_not_asked.endswith(" x rtol): an agreement passes whatever the referee finds")
    assert report.to_dict()["float64_not_asked"] == report.float64_not_asked
    layered = check_model(MODELS / "small_cnn.onnx", per_layer=True)
    assert layered.float64 is None and layered.float64_not_asked.endswith("; every compared layer agrees too")
    off = check_model(MODELS / "tiny_mlp.onnx", float64_opinion=False)
    assert off.float64_not_asked == "turned off"


def test_under_strict_an_agreement_near_the_tolerance_is_judged(monkeypatch):
    """Under strict an ill-conditioned output fails even where the sides agree; ill-conditioning shows as agreement
    only just within tolerance: beyond a tenth of it, the referee is asked (here: well-conditioned, it passes)."""
    _native_scaled(monkeypatch, 1 + 5e-5)  # max rel 5e-5: half the float32 rtol
    plain = check_model(MODELS / "tiny_mlp.onnx")
    assert plain.outputs[0].within and plain.outputs[0].max_rel == pytest.approx(5e-5, rel=0.05)
    assert plain.float64 is None  # an agreement passes whatever the referee finds
    strict = check_model(MODELS / "tiny_mlp.onnx", strict=True)
    assert strict.float64["asked_because"] == ["an output agrees only just (max rel beyond 0.1 x rtol) under --strict"]
    verdict = strict.outputs[0].float64
    assert verdict.verdict is None and verdict.spread < 1e-6 and verdict.native_error == pytest.approx(5e-5, rel=0.1)
    assert strict.ok  # judged well-conditioned: no warning
    monkeypatch.undo()
    _native_scaled(monkeypatch, 1 + 5e-6)  # max rel 5e-6: a twentieth of the rtol
    _referee_forbidden(monkeypatch)
    far = check_model(MODELS / "tiny_mlp.onnx", strict=True)
    assert far.ok and far.float64_not_asked.endswith(" x rtol), none beyond 0.1 x rtol")


def test_the_referee_asked_for_judges_every_floating_output():
    report = check_model(MODELS / "small_cnn.onnx", float64_always=True)
    assert report.float64["asked_because"] == ["it was asked for"] and report.float64_not_asked is None
    assert all(c.float64 is not None and c.float64.verdict is None for c in report.outputs)


def test_check_tells_its_phases_as_they_go():
    import contextlib

    seen = []

    @contextlib.contextmanager
    def phases(label, total=None, unit=""):
        updates = []
        yield updates.append
        seen.append((label, total, unit, updates[-1] if updates else None))

    check_model(MODELS / "small_cnn.onnx", per_layer=True, float64_always=True, phases=phases)
    assert seen == [("converting", None, "", None), ("running natively", None, "", None),
                    ("running onnxruntime", None, "", None), ("float64 referee", 13, "nodes", 13),
                    ("comparing layers", 13, "nodes", 13)]


# -- output validation ------------------------------------------------------------------------------------------------

def _unary_model(op, shape=(2, 3), **attrs):
    node = helper.make_node(op, ["x"], ["y"], name=op.lower(), **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_nan_on_both_sides_is_not_agreement():
    x = np.array([[-1.0, 4.0, 9.0], [-4.0, 1.0, 0.0]], np.float32)
    report = check_model(_unary_model("Sqrt"), {"x": x})
    (c,) = report.outputs
    assert c.within  # element by element the sides agree (NaN where NaN) ...
    assert c.native_stats.nan == 2 and c.reference_stats.nan == 2 and c.nan == 4
    assert not c.passed() and not report.ok  # ... but NaN is no result
    assert c.max_rel == 0.0 and c.native_stats.min == 0.0 and c.native_stats.max == 3.0  # finite elements only


def test_max_rel_is_never_nan():
    ref = np.array([np.nan, 1.0, np.inf], np.float32)
    c = compare(np.array([np.nan, 1.5, np.inf], np.float32), ref)
    assert c.max_rel == pytest.approx(0.5) and not c.within
    assert compare(ref.copy(), ref).max_rel == 0.0


def test_statistics_of_each_side_by_hand():
    x = np.array([[-1.0, 0.0, 2.0, 4.0]], np.float32)
    report = check_model(_unary_model("Relu", (1, 4)), {"x": x})
    stats = report.outputs[0].native_stats
    # relu: [0, 0, 2, 4]; mean 1.5; deviations -1.5, -1.5, 0.5, 2.5: variance 11 / 4
    assert (stats.min, stats.max, stats.mean, stats.nan, stats.inf) == (0.0, 4.0, 1.5, 0, 0)
    assert stats.std == pytest.approx(np.sqrt(11 / 4))
    assert report.to_dict()["outputs"][0]["reference_stats"]["std"] == pytest.approx(np.sqrt(11 / 4))


def test_a_constant_output_is_a_warning(monkeypatch):
    nodes = [helper.make_node("Mul", ["x", "zero"], ["m"]), helper.make_node("Add", ["m", "three"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                              [numpy_helper.from_array(np.float32(0), "zero"),
                               numpy_helper.from_array(np.float32(3), "three")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    report = check_model(model)
    assert report.ok and report.outputs[0].constant
    assert report.warnings == ["output 'y' is constant (3 to 3 over 4 elements): agreement on it says little about "
                               "the conversion"]
    # not asked: it could only say something about an agreement, and a constant one is a warning anyway
    assert report.float64 is None and report.outputs[0].float64 is None
    assert report.float64_not_asked == ("every floating output agrees within tolerance (the closest to it: 'y', max "
                                        "rel 0 x rtol): an agreement passes whatever the referee finds; 'y' constant: "
                                        "a warning either way")
    asked = check_model(model, float64_always=True)
    assert asked.outputs[0].float64.verdict is None  # asked, and a constant is perfectly conditioned
    assert not check_model(model, strict=True).ok
    # under strict a constant output fails whatever the referee says: not asked even near the tolerance
    _native_scaled(monkeypatch, 1 + 5e-5)
    _referee_forbidden(monkeypatch)
    near = check_model(model, strict=True)
    assert near.outputs[0].max_rel > 1e-5 and not near.ok and near.float64 is None
    assert "none beyond 0.1 x rtol but constant ones; 'y' constant: a warning either way" in near.float64_not_asked


# -- golden outputs, value ranges, per-layer accounting ----------------------------------------------------------------

def test_expected_outputs_are_compared_with_the_same_tolerances():
    model = onnx.load(str(MODELS / "tiny_mlp.onnx"))
    x = np.random.default_rng(8).standard_normal((2, 64)).astype(np.float32)
    (golden,) = ort_session(model).run(None, {"features": x})  # the oracle: onnxruntime, independently
    report = check_model(model, {"features": x}, expected={"scores": golden})
    assert report.ok and report.expected[0].within and report.expected_reference[0].within
    wrong = golden.copy()
    wrong[1, 2] += 0.01
    report = check_model(model, {"features": x}, expected={"scores": wrong})
    assert not report.ok and report.expected[0].mismatched == 1
    assert report.outputs[0].within  # native and onnxruntime still agree with each other
    assert report.expected[0].rtol == 1e-4  # float32 tolerances even for a float64 golden file
    assert check_model(model, {"features": x}, expected={"scores": golden.astype(np.float64)}).expected[0].rtol == 1e-4
    with pytest.raises(UserError, match="unknown output"):
        check_model(model, {"features": x}, expected={"nope": golden})


def test_value_ranges_shape_the_random_inputs():
    report = check_model(MODELS / "tiny_mlp.onnx", value_ranges={None: (2.0, 3.0)})
    x = report.input_arrays["features"]
    assert x.min() >= 2.0 and x.max() < 3.0 and report.inputs["features"]["range"] == [2.0, 3.0]
    model = from_onnx(str(MODELS / "tiny_mlp.onnx")).model
    np.testing.assert_array_equal(x, random_inputs(model, 0, value_ranges={"features": (2.0, 3.0)})[0])
    with pytest.raises(UserError, match="unknown input"):
        check_model(MODELS / "tiny_mlp.onnx", value_ranges={"nope": (0.0, 1.0)})


def test_integer_value_ranges_are_inclusive_and_clipped():
    from nnrt_onnx import Model, TensorDesc
    from nnrt_onnx.enums import OH_NN_DataType as DT

    m = Model()
    a = m.add_tensor(TensorDesc(DT.OH_NN_INT8, [1000]))
    b = m.add_tensor(TensorDesc(DT.OH_NN_INT8, [1000]))
    m.add_operation(OP.OH_NN_OPS_ABS, [], [a], [b])
    m.specify_inputs_and_outputs([a], [b])
    m.finish()
    (x,) = random_inputs(m, 1, value_ranges={None: (-2.5, 200.0)})
    assert x.dtype == np.int8 and x.min() == -2 and x.max() == 127  # ceil(-2.5) .. the dtype's max
    with pytest.raises(UserError, match="holds no int8"):
        random_inputs(m, 1, value_ranges={None: (0.2, 0.8)})


def test_not_compared_layers_are_fused_away_or_constant_folded():
    nodes = [helper.make_node("ConstantOfShape", ["wshape"], ["w"], name="weights",
                              value=numpy_helper.from_array(np.array([0.25], np.float32))),
             helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [numpy_helper.from_array(np.array([3, 2, 3, 3], np.int64), "wshape")])
    report = check_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), per_layer=True)
    reasons = {layer.node: (layer.status, layer.reason) for layer in report.layers}
    assert reasons == {"weights": ("not compared", "constant-folded"), "conv": ("not compared", "fused away"),
                       "relu": ("within", None)}
    per_layer = report.to_dict()["per_layer"]
    assert (per_layer["fused_away"], per_layer["constant_folded"], per_layer["compared"]) == (1, 1, 1)


# -- a repro that reproduces -------------------------------------------------------------------------------------------

def test_a_repro_that_passes_alone_grows_upstream_until_it_fails(monkeypatch, tmp_path):
    from test_float64 import ill_conditioned_model

    one_ulp_up(monkeypatch)  # native rounds one conv channel differently; the softmax shows it
    report = check_model(ill_conditioned_model(), per_layer=True)
    assert report.first_divergence.node == "softmax" and report.culprit is None
    repro = report.extract_repro(tmp_path / "r")
    manifest = json.loads((repro / "repro.json").read_text())
    assert manifest["reproduces"] is True and report.repro["reproduces"] is True
    # the softmax alone, fed with onnxruntime's own logits, agrees: the repro had to take in the convolution
    assert manifest["sizes_tried"][0] == 1 and manifest["nodes"] == ["conv", "relu", "gap", "softmax"]
    assert manifest["verdict"] == "ill-conditioned" and manifest["command"].endswith(" --strict")
    model = onnx.load(str(repro / "repro.onnx"))
    assert [i.name for i in model.graph.input] == ["x"]
    given = dict(np.load(repro / "inputs.npz"))
    assert not all(c.within for c in check_model(model, given).outputs)  # it fails on its own
    from nnrt_onnx.workflows.parity import _repro_plan, _reproduces

    single = _repro_plan(report._source.model, [3], report._source.feed, report._source.reference)
    assert not _reproduces(report, single)  # the one-node plan does not


def test_a_repro_that_never_fails_alone_says_so(monkeypatch, tmp_path):
    import nnrt_onnx.workflows.parity as parity

    patch_kernel(monkeypatch, OP.OH_NN_OPS_TANH, lambda args: True, delta=0.25)
    report = check_model(MODELS / "tiny_mlp.onnx", per_layer=True)
    monkeypatch.setattr(parity, "_reproduces", lambda report, plan: False)
    repro = report.extract_repro(tmp_path / "r")
    manifest = json.loads((repro / "repro.json").read_text())
    assert manifest["reproduces"] is False and manifest["nodes"] == ["fc2.tanh"]  # the original plan is kept
    assert manifest["sizes_tried"][0] == 1 and len(manifest["sizes_tried"]) > 1  # it grew to the inputs, in vain


# -- many models, threads -------------------------------------------------------------------------------------

def test_check_one_is_a_pure_function_of_model_and_options(tmp_path):
    import pickle

    from nnrt_onnx.workflows.sweep import CheckOptions, check_one, find_models

    options = CheckOptions(seed=2, value_ranges=((None, -1.0, 1.0),))
    assert pickle.loads(pickle.dumps(options)) == options and hash(options) == hash(pickle.loads(pickle.dumps(options)))
    first, second = (check_one(str(MODELS / "tiny_mlp.onnx"), options) for _ in range(2))
    for row in (first, second):  # time and the process's memory peak are the only fields that may differ
        row.pop("seconds"), row.pop("peak_rss"), row.pop("peak_rss_this_model")
        row["report"].pop("seconds"), row["report"].pop("phases")
    assert first == second and first["ok"] and first["verdict"] == "OK"
    assert first["report"]["inputs"]["features"]["range"] == [-1.0, 1.0]
    missing = check_one(str(tmp_path / "none.onnx"), options)  # never raises: the row says what went wrong
    assert missing["verdict"] == "ERROR" and "no such file" in missing["error"] and not missing["ok"]
    assert find_models([str(MODELS)]) == sorted(str(MODELS / f) for f in ONNX_SAMPLES)


def test_a_bug_on_one_model_does_not_end_the_sweep(monkeypatch):
    import nnrt_onnx.workflows.parity as parity
    from nnrt_onnx.workflows.sweep import CheckOptions, sweep

    real = parity.check_model

    def flaky(path, **kwargs):
        if str(path).endswith("small_cnn.onnx"):
            raise ZeroDivisionError("a bug")
        return real(path, **kwargs)

    monkeypatch.setattr(parity, "check_model", flaky)
    rows = sweep([str(MODELS / "small_cnn.onnx"), str(MODELS / "tiny_mlp.onnx")], CheckOptions())
    assert [row["verdict"] for row in rows] == ["ERROR", "OK"]
    assert rows[0]["error"] == "internal error: ZeroDivisionError: a bug"


PEAK_SCRIPT = """
import json, sys
from pathlib import Path
import numpy as np
import nnrt_onnx.workflows.parity as parity
from nnrt_onnx.workflows.sweep import CheckOptions, sweep

real, hog_bytes = parity.check_model, int(sys.argv[4])

def hungry(path, **kwargs):
    if str(path).endswith("small_cnn.onnx"):  # touches every page: resident, not just reserved
        hog = np.ones(hog_bytes // 8)
        del hog
    return real(path, **kwargs)

def kernel(key):  # the kernel's account of this process (Linux), in bytes
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith(key + ":"))) * 1024

parity.check_model = hungry
rss = kernel("VmRSS")
seen = []
rows = sweep(sys.argv[1:4], CheckOptions(), on_row=lambda position, row: seen.append((position, row["model"])))
print(json.dumps({"rss": rss, "seen": seen,
                  "rows": [{k: row[k] for k in ("model", "peak_rss", "peak_rss_this_model")} for row in rows]}))
"""


def test_each_row_says_the_peak_memory_of_its_own_model():
    import subprocess
    import sys

    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("the per-model peak needs Linux's /proc/self/clear_refs")
    hog_bytes = 512 << 20
    models = [str(MODELS / "tiny_mlp.onnx"), str(MODELS / "small_cnn.onnx"), str(MODELS / "tiny_mlp.onnx")]
    parent_peak = np.ones((1 << 30) // 8)  # this process's peak, which a child's getrusage would report as its own
    del parent_peak
    done = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, *models, str(hog_bytes)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["seen"] == [[i, m] for i, m in enumerate(models)]  # on_row hears of each row as it is done
    before, hungry_row, after = found["rows"]
    assert all(row["peak_rss_this_model"] for row in found["rows"]), found
    assert hungry_row["peak_rss"] >= hog_bytes, found  # bytes: the hog is in it
    for light in (before, after):  # neither the parent's peak nor the hog before it counts for a light model
        assert found["rss"] // 2 <= light["peak_rss"] < hog_bytes // 2, found
    assert isinstance(hungry_row["peak_rss"], int)


def test_onnxruntime_threads_come_from_an_extension_config():
    from nnrt_onnx.errors import NNRtError
    from nnrt_onnx.ort_device import THREADS_EXTENSION as ORT_THREADS_EXTENSION
    from nnrt_onnx.serialization import load_model

    model = load_model(MODELS / "tiny_cnn.nnrt")
    compilation = Compilation(model)
    compilation.set_device(2)
    compilation.add_extension_config(ORT_THREADS_EXTENSION, b"3")
    compilation.build()
    assert compilation.prepared.session.get_session_options().intra_op_num_threads == 3
    bad = Compilation(model)
    bad.set_device(2)
    bad.add_extension_config(ORT_THREADS_EXTENSION, b"three")
    with pytest.raises(NNRtError, match="non-negative integer"):
        bad.build()


def test_bench_threads_reach_the_native_thread_policy(monkeypatch):
    # --threads goes through the native device's own policy (runtime/threads.py), which sets BLAS for every run:
    # the count numpy's BLAS actually has while the native model runs must be the one asked for
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers:
        pytest.skip("numpy's BLAS is not one threadpoolctl controls")

    from nnrt_onnx.runtime import cpu
    from nnrt_onnx.runtime.threads import current_blas_threads, enter_run
    from nnrt_onnx.serialization import load_model
    from nnrt_onnx.workflows.inference import benchmark, random_inputs

    seen = []

    def spy(count):
        enter_run(count)
        seen.append(current_blas_threads()[0])  # what BLAS really has during the run

    monkeypatch.setattr(cpu, "enter_run", spy)
    model = load_model(MODELS / "tiny_cnn.nnrt")
    arrays = random_inputs(model, 0)
    before = current_blas_threads()
    benchmark(model, arrays, (1,), runs=2, warmup=0, threads=2)
    assert seen == [2, 2]
    seen.clear()
    benchmark(model, arrays, (1,), runs=1, warmup=0)
    assert seen == [1]  # the policy's default
    assert current_blas_threads() == before  # given back after the timing (release_blas_threads)


def test_a_layer_verdict_is_its_worst_outputs():
    from nnrt_onnx.workflows import float64 as f64
    from nnrt_onnx.workflows.parity import LayerResult

    def comparison(verdict):
        c = compare(np.ones(2, np.float32), np.ones(2, np.float32))
        c.float64 = f64.Verdict(verdict, 0.0, 0.0, 0.0, 1e-4, 1e-4)
        return c

    layer = LayerResult(0, "n", "Op", "within", [comparison(f64.SUSPECT), comparison(f64.NATIVE_WRONG)])
    assert layer.verdict == f64.NATIVE_WRONG
    assert LayerResult(0, "n", "Op", "within", [comparison(f64.SUSPECT), comparison(None)]).verdict == f64.SUSPECT
    assert LayerResult(0, "n", "Op", "within", [comparison(None)]).verdict is None


def test_the_shipped_light_squeezenet_is_ill_conditioned_at_its_softmax():
    """Issue 14: its 1000 logits are equal in exact arithmetic and about 6.8e9 (one float32 ulp: 512); whether the
    two sides round them alike depends on the CPU (on AVX2 they do not). Either way: a pass with a warning naming the
    Softmax, and a failure under strict."""
    from nnrt_onnx.workflows import float64 as f64

    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_squeezenet.onnx"
    report = check_model(path, float64_always=True)
    (c,) = report.outputs
    assert c.float64.verdict == f64.ILL_CONDITIONED and c.float64.amplifier["op_type"] == "Softmax"
    assert report.ok and report.culprit is None
    assert any("ill-conditioned" in w and "(Softmax" in w for w in report.warnings)
    report.strict = True
    assert not report.ok
    # unasked, the referee runs only where the sides disagree (AVX2): a pass with a warning either way
    default = check_model(path)
    assert default.ok and default.warnings and (default.float64 is None) == default.outputs[0].within


def test_a_grown_repro_of_an_ir3_model_with_computed_weights_is_valid(monkeypatch, tmp_path):
    """Like light_squeezenet: IR version 3 (initializers are graph inputs too) and weights made by ConstantOfShape.
    The repro grows to take in the convolution; its computed weight becomes an initializer, valid from IR 4 on."""
    nodes = [helper.make_node("ConstantOfShape", ["wshape"], ["w"], name="weights",
                              value=numpy_helper.from_array(np.array([0.5], np.float32))),
             helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
             helper.make_node("Softmax", ["g"], ["y"], name="softmax")]
    inits = [numpy_helper.from_array(np.array([16, 4, 1, 1], np.int64), "wshape"),
             numpy_helper.from_array(np.full(16, 1e9, np.float32), "b")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6]),
              helper.make_tensor_value_info("wshape", TensorProto.INT64, [4]),
              helper.make_tensor_value_info("b", TensorProto.FLOAT, [16])]
    graph = helper.make_graph(nodes, "ir3", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                                   [1, 16, 1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 3
    onnx.checker.check_model(model)
    one_ulp_up(monkeypatch)
    report = check_model(model, per_layer=True)
    assert report.first_divergence.node == "softmax" and report.ok  # ill-conditioned
    repro = report.extract_repro(tmp_path / "r")
    manifest = json.loads((repro / "repro.json").read_text())
    assert manifest["reproduces"] is True and manifest["nodes"] == ["conv", "relu", "gap", "softmax"]
    grown = onnx.load(str(repro / "repro.onnx"))
    onnx.checker.check_model(grown)
    assert grown.ir_version >= 4 and "w" in {t.name for t in grown.graph.initializer}


def test_a_compared_constant_is_labelled_as_one():
    """A constant a node computes (ConstantOfShape) may survive conversion as an NNRt constant: compared, no op."""
    nodes = [helper.make_node("ConstantOfShape", ["bshape"], ["b"], name="bias",
                              value=numpy_helper.from_array(np.array([0.5], np.float32))),
             helper.make_node("Add", ["x", "b"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              [numpy_helper.from_array(np.array([3], np.int64), "bshape")])
    report = check_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), per_layer=True)
    ops = {layer.node: (layer.status, layer.nnrt_ops) for layer in report.layers}
    assert ops["add"] == ("within", ["ADD"])
    assert ops["bias"] == ("within", ["(constant)"])  # folded, kept under its name: compared, written by no op


def test_run_of_an_onnx_file_converts_it_as_convert_does(tmp_path):
    from nnrt_onnx.workflows.inference import load_any
    from nnrt_onnx.workflows.model_inputs import ModelInputs

    path = tmp_path / "conv.onnx"
    onnx.save(_dynamic_batch_conv(), str(path))
    data = {"x": np.zeros((2, 1, 10, 10), np.float32)}
    for source in (path, onnx.load(str(path))):
        model = load_any(source, ModelInputs(data))
        assert [model.tensors[i].dims for i in model.inputs] == [(-1, 1, 10, 10)]
        pinned = load_any(source, ModelInputs(data, {"x": [2, 1, 10, 10]}))  # an explicit --input-shape pins
        assert [pinned.tensors[i].dims for i in pinned.inputs] == [(2, 1, 10, 10)]


def test_check_names_the_documented_reading_behind_a_mismatch():
    # scale 0.7 on a length of 10: floor of the exact product is 6 (the spec, onnx.reference, us); onnxruntime
    # multiplies in float32 and gets 7 -- the two sides part, and the report says which rule is why
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 1, 0.7, 0.7], np.float32), "scales")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    report = check_model(model, float64_opinion=False)
    assert not report.ok
    assert [d["rule"] for d in report.deviations] == ["resize-output-size"] * len(report.deviations)
    assert any("'resize-output-size'" in note and "docs/deviations.md" in note for note in report.notes)
    assert report.to_dict()["deviations"] == report.deviations


def test_no_rule_is_named_where_the_sides_agree():
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    report = check_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]))
    assert report.ok and not any("docs/deviations.md" in note for note in report.notes)


def test_per_layer_runs_the_production_plan_and_names_the_fused_step_that_wrote_a_divergence(monkeypatch):
    # a fault in a fusion's fast path only (the reference kernels are right): the unfused plan per-layer used to run
    # said "every layer matches"; the production plan's capture sees it and the report names the fused step
    pytest.importorskip("nnrt_onnx.accel")
    if os.environ.get("NNRT_ONNX_NUMBA", "").strip() == "0":
        pytest.skip("the fast paths are off (NNRT_ONNX_NUMBA=0): no fused step to be wrong")
    from nnrt_onnx.accel.fusions import conv_post_ops

    real = conv_post_ops.KERNELS[OP.OH_NN_OPS_CONV2D]

    def wrong_when_fused(*args, post=(), **kwargs):
        out = real(*args, post=post, **kwargs)
        if post:
            out[..., 0] += np.float32(1.0)
        return out

    monkeypatch.setitem(conv_post_ops.KERNELS, OP.OH_NN_OPS_CONV2D, wrong_when_fused)
    rng = np.random.default_rng(2)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (4, 4, 3, 3)), ("b1", (4,)), ("w2", (4, 4, 3, 3)), ("b2", (4,)))]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="stem"),
         helper.make_node("Relu", ["c1"], ["r1"], name="stem.relu"),
         helper.make_node("Conv", ["r1", "w2", "b2"], ["conv"], pads=[1, 1, 1, 1], name="conv"),
         helper.make_node("Add", ["conv", "r1"], ["sum"], name="residual"),
         helper.make_node("Sin", ["sum"], ["y"], name="head")], "g",  # (no activation: not fused into the ADD)
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    report = check_model(model, per_layer=True, float64_opinion=False)
    assert not report.ok
    statuses = {layer.node: layer.status for layer in report.layers if layer.status != "not compared"}
    assert statuses == {"stem.relu": "within", "residual": "diverged", "head": "diverged"}
    first = report.first_divergence
    assert first.node == "residual" and "written by" in first.inside_fused_step
    assert "CONV2D" in first.inside_fused_step and "ADD" in first.inside_fused_step
    assert any(note.startswith("layer 'residual' (Add): written by") for note in report.notes)
