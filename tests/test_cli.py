"""The nnrt-onnx command line through click's CliRunner: every command, and every user error ends in one line
on stderr with a non-zero exit (2 for a malformed command line) and no traceback unless --debug."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import one_line_error
from test_parity import patch_kernel

from nnrt_onnx.enums import OH_NN_OperationType as OP

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
SMALL_CNN = str(MODELS / "small_cnn.onnx")
TINY_MLP = str(MODELS / "tiny_mlp.onnx")
TINY_NNRT = str(MODELS / "tiny_cnn.nnrt")


@pytest.fixture
def unsupported_onnx(tmp_path):
    nodes = [helper.make_node("Relu", ["boxes"], ["r"], name="relu"),
             helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["selected"], name="nms")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 4, 4]),
                                           helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 4])],
                              [helper.make_tensor_value_info("selected", TensorProto.INT64, None),
                               helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 4, 4])])
    path = tmp_path / "nms.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.fixture
def corrupt(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(b"\x08garbage, not a protobuf")
    (tmp_path / "bad.nnrt").write_bytes(b"garbage")
    return tmp_path


# -- check ------------------------------------------------------------------------------------------------------------

def test_check_prints_a_table_and_exits_0(invoke):
    result = invoke("check", SMALL_CNN)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "13 ONNX nodes -> 10 NNRt operations" in out and "image float32 [1, 3, 32, 32] (random)" in out
    for header in ("max abs", "max rel", "outside", "cosine", "tolerance"):
        assert header in out
    assert out.count("  within") == 2 and "OK: all 2 output(s) within tolerance" in out
    assert result.stderr == ""


def test_check_json_seed_and_inputs(invoke, tmp_path):
    first = json.loads(invoke("check", TINY_MLP, "--json", "--seed", 3).stdout)
    assert first["ok"] and first["seed"] == 3 and first["outputs"][0]["name"] == "scores"
    x = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "x.npz", features=x)
    (tmp_path / "x.pb").write_bytes(numpy_helper.from_array(x).SerializeToString())
    for spec in (f"features={tmp_path / 'x.npy'}", str(tmp_path / "x.npz"), f"features={tmp_path / 'x.pb'}"):
        result = invoke("check", TINY_MLP, "--input", spec, "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["inputs"]["features"] == {"dtype": "float32", "shape": [2, 64], "source": "given"}
        assert data["outputs"][0]["shape"] == [2, 4]


def test_check_per_layer_is_quiet_without_a_tty(invoke):
    result = invoke("check", SMALL_CNN, "--per-layer")
    assert result.exit_code == 0
    assert ("per layer: 8 of 13 ONNX nodes compared (5 fused away in NNRt, 0 constant-folded), 0 outside tolerance"
            in result.stdout)
    assert "comparing layers" not in result.output  # no progress bar when stderr is not a terminal
    data = json.loads(invoke("check", SMALL_CNN, "--per-layer", "--json").stdout)
    assert data["per_layer"]["first_divergence"] is None and len(data["per_layer"]["layers"]) == 13


def test_check_tolerance_options(invoke):
    exact = invoke("check", SMALL_CNN, "--rtol", 0, "--atol", 0)  # not bit-exact, within float32 noise of float64
    assert "2 output(s) pass (2 outside tolerance, cleared by the float64 referee)" in exact.stdout
    strict = invoke("check", SMALL_CNN, "--rtol", 0, "--atol", 0, "--strict")  # ... its warnings fail --strict
    assert strict.exit_code == 1 and "FAIL" in strict.stdout
    assert invoke("check", SMALL_CNN, "--rtol", 1e-3, "--atol", 1e-4).exit_code == 0
    one_line_error(invoke("check", SMALL_CNN, "--rtol", -1), 2, "--rtol")


def test_check_names_the_planted_node_and_extracts_a_repro(invoke, monkeypatch, tmp_path):
    patch_kernel(monkeypatch, OP.OH_NN_OPS_LRN, lambda args: True)
    repro = tmp_path / "repro"
    result = invoke("check", SMALL_CNN, "--extract-repro", repro)  # implies --per-layer
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "first divergence: ONNX node #8 'lrn' (LRN)" in out and "OUTSIDE" in out and "FAIL" in out
    assert f"repro written to {repro}" in out
    assert (repro / "repro.onnx").is_file() and (repro / "dw.relu6.npy").is_file()
    command = json.loads((repro / "repro.json").read_text())["command"]
    assert command == f"nnrt-onnx check {repro.as_posix()}/repro.onnx --input {repro.as_posix()}/inputs.npz"
    again = invoke("check", repro / "repro.onnx", "--input", repro / "inputs.npz")
    assert again.exit_code == 1 and "OUTSIDE" in again.stdout  # the repro alone diverges ...
    monkeypatch.undo()
    assert invoke("check", repro / "repro.onnx", "--input", f"dw.relu6={repro / 'dw.relu6.npy'}").exit_code == 0


def test_check_json_reports_the_repro(invoke, monkeypatch, tmp_path):
    patch_kernel(monkeypatch, OP.OH_NN_OPS_SIGMOID, lambda args: True, delta=0.1)
    result = invoke("check", TINY_MLP, "--per-layer", "--json", "--extract-repro", tmp_path / "r")
    data = json.loads(result.stdout)
    assert result.exit_code == 1 and not data["ok"] and data["repro"] == str(tmp_path / "r")
    assert data["per_layer"]["first_divergence"]["node"] == "scores"


def test_check_with_nothing_to_extract(invoke, tmp_path):
    result = invoke("check", TINY_MLP, "--extract-repro", tmp_path / "r")
    assert result.exit_code == 0 and "nothing to extract" in result.stderr
    assert not (tmp_path / "r").exists()


def test_check_user_errors(invoke, tmp_path, unsupported_onnx, corrupt):
    np.save(tmp_path / "small.npy", np.zeros((1, 3, 8, 8), np.float32))
    one_line_error(invoke("check", tmp_path / "missing.onnx"), 2, "no such file")
    one_line_error(invoke("check", SMALL_CNN, "--input", f"nope={tmp_path / 'small.npy'}"), 2, "unknown input name")
    one_line_error(invoke("check", SMALL_CNN, "--input", f"image={tmp_path / 'small.npy'}"), 1, "has shape [1, 3, 8, 8]")
    one_line_error(invoke("check", SMALL_CNN, "--input", f"image={tmp_path / 'none.npy'}"), 2, "no such file")
    one_line_error(invoke("check", SMALL_CNN, "--input", "image"), 2, "--input image: no such file image")
    one_line_error(invoke("check", TINY_NNRT), 1, "check takes an .onnx model")
    one_line_error(invoke("check", TINY_MLP, "--input-shape", "features=a,b"), 2, "integer dims")
    one_line_error(invoke("check", TINY_MLP, "--input-shape", "features"), 2, "NAME=D1,D2")
    one_line_error(invoke("check"), 2, "Missing argument")
    one_line_error(invoke("check", SMALL_CNN, "--frobnicate"), 2, "No such option")
    one_line_error(invoke("check", unsupported_onnx), 1,
                   "cannot convert the model: nms (NonMaxSuppression, opset 17): [unsupported_op]")
    one_line_error(invoke("check", corrupt / "bad.onnx"), 1, "not a readable ONNX model")


def test_debug_shows_the_traceback(invoke, tmp_path):
    result = invoke("--debug", "check", SMALL_CNN, "--input", f"image={tmp_path / 'none.npy'}")
    assert result.exit_code == 2 and "Traceback" in result.stderr
    for args in (["check", "--debug", SMALL_CNN, "--input", f"image={tmp_path / 'none.npy'}"],
                 ["check", SMALL_CNN, "--input", f"image={tmp_path / 'none.npy'}", "--debug"]):  # anywhere
        result = invoke(*args)
        assert result.exit_code == 2 and "Traceback" in result.stderr, result.output
    result = invoke("check", SMALL_CNN, "--input", f"image={tmp_path / 'none.npy'}")
    assert result.exit_code == 2 and "Traceback" not in result.stderr


# -- run, convert ---------------------------------------------------------------------------------------------------

def test_run_on_both_devices(invoke, tmp_path):
    outputs = {}
    for device in ("cpu", "onnxruntime", "onnxruntime.cpu", "2"):
        result = invoke("run", TINY_NNRT, "--device", device, "--output-dir", tmp_path / device)
        assert result.exit_code == 0, result.output
        assert "probs: float32 [1, 10]" in result.stdout
        outputs[device] = np.load(tmp_path / device / "probs.npy")
    for device in ("onnxruntime", "onnxruntime.cpu", "2"):
        np.testing.assert_allclose(outputs[device], outputs["cpu"], rtol=1e-5, atol=1e-7)
    assert invoke("run", SMALL_CNN, "--device", "onnxruntime").exit_code == 0


def test_run_errors(invoke, corrupt, tmp_path):
    line = one_line_error(invoke("run", TINY_NNRT, "--device", "gpu"), 2, "'--device': unknown device")
    assert "cpu or onnxruntime" in line
    line = one_line_error(invoke("run", TINY_NNRT, "--device", "onnxruntime", "--float16"), 1, "float16")
    assert "OH_NN_" not in line
    one_line_error(invoke("run", corrupt / "bad.nnrt"), 1, "a 7-byte text file ('garbage'), not an NNRt model file")
    one_line_error(invoke("run", tmp_path / "missing.nnrt"), 2, "no such file")
    one_line_error(invoke("run", tmp_path / "model.txt"), 2, "no such file")
    one_line_error(invoke("run", tmp_path), 2, "is a directory")  # the same code as a missing file


def _runtime_transpose(tmp_path):
    """A TRANSPOSE whose permutation is a model input: native runs it, ONNX has no form for it."""
    from nnrt_onnx.serialization import save_model
    from nnrt_onnx.testing.single_op import single_op_model

    model = single_op_model(OP.OH_NN_OPS_TRANSPOSE, [np.ones((2, 3), np.float32), np.array([1, 0], np.int64)], {},
                            [(np.dtype(np.float32), (3, 2))], {}, {})
    save_model(model, tmp_path / "transpose.nnrt")
    np.save(tmp_path / "perm.npy", np.array([1, 0], np.int64))
    return tmp_path / "transpose.nnrt", f"input1={tmp_path / 'perm.npy'}"


def test_run_reports_what_the_onnxruntime_device_cannot_run(invoke, tmp_path):
    model, perm = _runtime_transpose(tmp_path)
    one_line_error(invoke("run", model, "--input", perm, "--device", "onnxruntime"), 1, "runtime permutation")
    assert invoke("run", model, "--input", perm).exit_code == 0


def test_convert_then_run_and_bad_input_shape(invoke, tmp_path):
    out = tmp_path / "mlp.nnrt"
    result = invoke("convert", TINY_MLP, "-o", out, "--input-shape", "features=4,64")
    assert result.exit_code == 0, result.output
    assert "converted tiny_mlp.onnx" in result.stdout
    result = invoke("run", out, "--device", "onnxruntime")
    assert result.exit_code == 0 and "scores: float32 [4, 4]" in result.stdout
    one_line_error(invoke("convert", TINY_MLP, "-o", out, "--input-shape", "features=4,x"), 2, "integer dims")
    one_line_error(invoke("convert", TINY_MLP, "-o", out, "--input-shape", "features=0,64"), 2, "positive")
    one_line_error(invoke("convert", TINY_MLP, "-o", out, "--input-shape", "nope=4,64"), 2, "unknown input 'nope'")


def test_convert_exports_nnrt_to_onnx_and_back(invoke, tmp_path):
    nnrt = tmp_path / "mlp.nnrt"
    assert invoke("convert", TINY_MLP, "-o", nnrt, "--input-shape", "features=4,64").exit_code == 0
    exported = tmp_path / "mlp.onnx"
    result = invoke("convert", nnrt, "-o", exported, "--opset", "17")
    assert result.exit_code == 0, result.output
    assert "exported mlp.nnrt" in result.stdout and "opset 17" in result.stdout
    model = onnx.load(str(exported))
    onnx.checker.check_model(model, full_check=True)
    result = invoke("check", exported)
    assert result.exit_code == 0 and "within" in result.stdout
    one_line_error(invoke("convert", nnrt, "-o", tmp_path / "x.txt"), 2, "MODEL.onnx -o FILE.nnrt")


@pytest.mark.parametrize("opset", [13, 17, 23])
def test_convert_exports_the_global_pool_at_every_opset(invoke, tmp_path, opset):
    """``convert X.nnrt -o Y.onnx --opset 13`` failed on any model with a global pool ("1 operation(s) cannot be
    exported:;"): tiny_cnn's now exports at every opset, its global average pool a GlobalAveragePool."""
    exported = tmp_path / "tiny.onnx"
    result = invoke("convert", TINY_NNRT, "-o", exported, "--opset", opset)
    assert result.exit_code == 0, result.output
    assert "0 NNRt-domain functions" in result.stdout
    model = onnx.load(str(exported))
    assert model.opset_import[0].version == opset
    assert "GlobalAveragePool" in [n.op_type for n in model.graph.node]


# -- inspect, bench, ops --------------------------------------------------------------------------------------------

def test_inspect_onnx_support_report_then_the_converted_model(invoke):
    result = invoke("inspect", SMALL_CNN)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith(f"{SMALL_CNN} (graph 'small_cnn'): an ONNX model, opset 17, 13 nodes, 13 convertible\n"
                          f"  input  image: float32 [1, 3, 32, 32]\n")
    # counted by hand from tools/make_models.py's small_cnn (BN folded into the stem conv, dw as depthwise)
    assert ("ONNX op counts: Conv 3, Relu 2, BatchNormalization 1, MaxPool 1, Clip 1, LRN 1, GlobalAveragePool 1, "
            "Flatten 1, Gemm 1, Softmax 1") in out
    assert "CONV2D 2," in out and "DEPTHWISE_CONV2D_NATIVE 1" in out and "converted to NNRt: 10 operations" in out
    assert len(out.splitlines()) < 12 and "stem.bn" not in out  # a summary: the nodes with --verbose
    out = invoke("inspect", SMALL_CNN, "--verbose").stdout
    report, _, converted = out.partition("converted to NNRt:")
    assert "stem.bn     BatchNormalization  -> BATCH_NORM  (fused/folded into a neighbour)" in report
    assert "dw          Conv                -> CONV2D  (emitted: DEPTHWISE_CONV2D_NATIVE)" in report
    assert "lrn         LRN                 -> LRN" in report
    assert "in:  image float32 [1, 3, 32, 32], stem.weight float32 [16, 3, 3, 3]" in report
    assert "out: stem.conv float32 [1, 16, 32, 32]" in report  # a 3x3 conv, pads 1: the size kept
    assert "SOFTMAX(logits [1, 10]) -> probs [1, 10]" in converted
    data = json.loads(invoke("inspect", SMALL_CNN, "--json").stdout)
    assert data["convertible"] and data["nodes"][6]["emitted"] == ["OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE"]
    assert data["nnrt"]["op_counts"]["OH_NN_OPS_CONV2D"] == 2


def test_inspect_reports_nodes_that_cannot_convert(invoke, unsupported_onnx):
    result = invoke("inspect", unsupported_onnx)
    assert result.exit_code == 1
    assert ": an ONNX model, opset 17, 2 nodes, 1 convertible" in result.stdout
    assert "#1 nms (NonMaxSuppression) cannot convert: [unsupported_op] no NNRt mapping" in result.stdout
    verbose = invoke("inspect", unsupported_onnx, "--verbose").stdout
    assert "relu  Relu               -> RELU" in verbose
    assert "nms   NonMaxSuppression  cannot convert: [unsupported_op] no NNRt mapping" in verbose
    one_line_error(result, 1, "cannot be converted: 1 problem(s)")
    data = json.loads(invoke("inspect", unsupported_onnx, "--json").stdout)
    assert not data["convertible"] and data["nodes"][1]["status"] == "cannot convert"


def test_inspect_nnrt_and_errors(invoke, corrupt, tmp_path):
    result = invoke("inspect", TINY_NNRT)
    assert result.exit_code == 0 and "6 operations" in result.stdout and "1 x CONV2D" in result.stdout
    assert result.stdout.index("input  image: float32 [1, 16, 16, 3]") < result.stdout.index("NNRt op counts")
    assert "#5 SOFTMAX" not in result.stdout  # the operations with --verbose only
    verbose = invoke("inspect", TINY_NNRT, "--verbose").stdout
    assert "#5 SOFTMAX(logits [1, 10]) -> probs [1, 10]  axis=-1" in verbose
    one_line_error(invoke("inspect", corrupt / "bad.nnrt"), 1, "not an NNRt model file")
    one_line_error(invoke("inspect", tmp_path / "none.onnx"), 2, "no such file")
    one_line_error(invoke("inspect", corrupt / "bad.onnx"), 1, "not a readable ONNX model")
    one_line_error(invoke("inspect", TINY_MLP, "--input-shape", "x"), 2, "NAME=D1,D2")


def test_bench(invoke, tmp_path):
    result = invoke("bench", SMALL_CNN, "-n", 2, "--warmup", 1)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "2 run(s) after 1 warm-up (median = p50)" in out
    for header in ("mean ms", "std ms", "p50 ms", "p90 ms", "p99 ms"):
        assert header in out
    for name in ("nnrt_onnx.cpu", "onnxruntime.cpu", "onnxruntime (original .onnx)"):
        assert name in out
    assert "1.00x" in out
    data = json.loads(invoke("bench", TINY_NNRT, "-n", 1, "--warmup", 0, "--json").stdout)
    assert [r["name"] for r in data["results"]] == ["nnrt_onnx.cpu", "onnxruntime.cpu"]
    assert all(r["median_ms"] > 0 and r["error"] is None for r in data["results"])
    one_line_error(invoke("bench", SMALL_CNN, "-n", 0), 2, "--runs")
    one_line_error(invoke("bench", tmp_path / "none.onnx"), 2, "no such file")


def test_bench_profile_tables_native_and_onnxruntime(invoke, tmp_path):
    import onnx

    data = json.loads(invoke("bench", SMALL_CNN, "-n", 2, "--warmup", 1, "--profile", "--json").stdout)
    onnx_ops = [node.op_type for node in onnx.load(str(SMALL_CNN)).graph.node]
    native = {row["op"]: row for row in data["profile"]["ops"]}
    convolutions = sum(native[op]["count"] for op in ("CONV2D", "DEPTHWISE_CONV2D_NATIVE") if op in native)
    assert convolutions == onnx_ops.count("Conv")
    ort_ops = {row["op"]: row for row in data["onnxruntime_profile"]["ops"]}
    assert ort_ops["Conv"]["count"] == onnx_ops.count("Conv")  # onnxruntime's own profiler, one row per op type
    assert all(row["ms"] > 0 for row in ort_ops.values())
    assert sum(row["share"] for row in ort_ops.values()) == pytest.approx(1.0)
    text = invoke("bench", SMALL_CNN, "-n", 1, "--warmup", 0, "--profile").stdout
    assert "native time by operation type" in text and "onnxruntime (original .onnx, its profiler" in text
    unloadable = tmp_path / "unloadable.onnx"
    unloadable.write_bytes(b"not a model")
    from nnrt_onnx.workflows.inference import profile_onnxruntime

    with pytest.raises(RuntimeError):
        profile_onnxruntime(unloadable, {}, runs=1, warmup=0)


def test_bench_shows_a_device_that_cannot_run_the_model(invoke, tmp_path):
    model, perm = _runtime_transpose(tmp_path)
    result = invoke("bench", model, "--input", perm, "-n", 1)
    assert result.exit_code == 0 and "unavailable: " in result.stdout and "OH_NN_" not in result.stdout


def test_ops_lists_every_op_with_the_headers_value_and_the_references_input_counts(invoke):
    import re

    from support import shared_file

    header = shared_file("spec", "neural_network_runtime_type.h").read_text()
    values = {name: int(v) for name, v in re.findall(r"(OH_NN_OPS_\w+) = (\d+)", header)}
    reference = {o["name"]: o for o in json.loads(shared_file("reference", "nnrt_ops_spec.json").read_text())}
    result = invoke("ops")
    assert result.exit_code == 0, result.output
    listed = re.findall(r"^\s*(\d+) (OH_NN_OPS_\w+)\s+in (\d+)-(\d+)", result.stdout, re.MULTILINE)
    assert len(listed) == len(values)  # every op of the header, whatever their number
    for value, name, lo, hi in listed:
        assert values[name] == int(value), name
        assert (reference[name]["inputs_min"], reference[name]["inputs_max"]) == (int(lo), int(hi)), name


def test_unknown_command(invoke):
    one_line_error(invoke("frobnicate"), 2, "No such command")


def test_progress_bars_only_on_a_terminal(cli_main, monkeypatch):
    import inspect
    import io
    import sys

    progress = inspect.unwrap(cli_main.callback).__globals__["_progress"]

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, shown in ((io.StringIO(), False), (Terminal(), True)):
        monkeypatch.setattr(sys, "stderr", stream)
        with progress([1, 2, 3], "comparing layers") as items:
            assert list(items) == [1, 2, 3]
        assert ("comparing layers" in stream.getvalue()) == shown


def test_phase_lines_only_on_a_terminal(cli_main, monkeypatch):
    import inspect
    import io
    import sys

    from nnrt_onnx.workflows.phases import StatusLine

    phases = inspect.unwrap(cli_main.callback).__globals__["_phases"]

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert phases() is None
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    line = phases()
    assert isinstance(line, StatusLine) and line.stream is terminal and line.delay == 2.0


def test_check_says_when_and_why_the_referee_was_not_asked(invoke):
    result = invoke("check", SMALL_CNN)
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("float64 referee")]
    assert line.startswith("float64 referee not asked: every floating output agrees within tolerance (the closest "
                           "to it: ")
    assert result.stderr == ""  # no status line off a terminal
    asked = invoke("check", SMALL_CNN, "--float64", "--json")
    data = json.loads(asked.stdout)
    assert data["float64"]["asked_because"] == ["it was asked for"] and data["float64_not_asked"] is None
    assert {o["float64"]["verdict"] for o in data["outputs"]} == {None}
    off = invoke("check", SMALL_CNN, "--no-float64")
    assert "float64 referee not asked: turned off" in off.stdout
    many = invoke("check", SMALL_CNN, TINY_MLP, "--float64", "--json")
    rows = json.loads(many.stdout)["models"]
    assert len(rows) == 2 and all(m["report"]["float64"]["asked_because"] == ["it was asked for"] for m in rows)


# -- what users say about inputs: data pins shapes, --input-shape, --constant-input ---------------------------------

@pytest.fixture
def reshape_by_input(tmp_path):
    """y = Reshape(x, shape): x has a dynamic batch; ``shape`` is a model input, a constant only when bound."""
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6]),
                                            helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "reshape.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_constant_input_binds_a_literal_and_the_data_pins_the_batch(invoke, tmp_path, reshape_by_input):
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.save(tmp_path / "x.npy", x)
    result = invoke("check", reshape_by_input, "--input", f"x={tmp_path / 'x.npy'}", "--constant-input",
                    "shape=3,4", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] and report["inputs"]["x"]["shape"] == [2, 6]
    assert report["outputs"][0]["shape"] == [3, 4]
    result = invoke("run", reshape_by_input, "--input", f"x={tmp_path / 'x.npy'}", "--constant-input", "shape=4,3",
                    "--output-dir", tmp_path / "out")
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), x.reshape(4, 3))
    # without the binding the shape is a runtime input: a clear conversion error naming the node
    one_line_error(invoke("run", reshape_by_input, "--input", f"x={tmp_path / 'x.npy'}"), 1, "reshape (Reshape")


def test_input_shape_on_run_and_bench(invoke, reshape_by_input):
    result = invoke("run", reshape_by_input, "--input-shape", "x=4,6", "--constant-input", "shape=2,12")
    assert result.exit_code == 0, result.output
    assert "y: float32 [2, 12]" in result.stdout
    result = invoke("bench", reshape_by_input, "--input-shape", "x=4,6", "--constant-input", "shape=12,2", "-n", "2",
                    "--warmup", "0", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["error"] is None


def test_input_options_errors(invoke, tmp_path, reshape_by_input):
    np.save(tmp_path / "x3.npy", np.zeros((2, 6, 1), np.float32))
    np.save(tmp_path / "wide.npy", np.zeros((2, 7), np.float32))
    one_line_error(invoke("run", reshape_by_input, "--input", f"x={tmp_path / 'x3.npy'}"), 1, "rank")
    one_line_error(invoke("check", reshape_by_input, "--input", f"x={tmp_path / 'wide.npy'}", "--constant-input",
                          "shape=2,7"), 1, "static shape [?, 6]")
    one_line_error(invoke("check", reshape_by_input, "--input-shape", "x=2,5", "--constant-input", "shape=10"), 2,
                   "dim 1: 6 vs 5")
    one_line_error(invoke("check", reshape_by_input, "--constant-input", "shape=a,b"), 2, "not numbers")
    one_line_error(invoke("check", reshape_by_input, "--constant-input", "nope=3"), 2, "unknown input 'nope'")
    one_line_error(invoke("check", reshape_by_input, "--constant-input", "shape"), 2, "NAME=FILE or NAME=VALUE")
    one_line_error(invoke("run", TINY_NNRT, "--input-shape", "x=1,2"), 2, "unknown input name(s) ['x']")
    one_line_error(invoke("run", TINY_NNRT, "--constant-input", "image=1"), 2, "applies to .onnx models")
    one_line_error(invoke("run", SMALL_CNN, "--seed", "-5"), 2, "-5")


# -- check: who is right, output validation, data in and out, reports, many models ---------------------------------

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


@pytest.fixture
def ill_onnx(tmp_path):
    from test_float64 import ill_conditioned_model

    path = tmp_path / "ill.onnx"
    onnx.save(ill_conditioned_model(), str(path))
    return path


def test_check_ill_conditioned_passes_with_a_warning_naming_the_softmax(invoke, ill_onnx, monkeypatch):
    from test_parity import one_ulp_up

    one_ulp_up(monkeypatch)
    result = invoke("check", ill_onnx)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "OUTSIDE" in out and "ill-conditioned at #3 (Softmax)" in out
    assert "warning: output 'y': ill-conditioned: one-ulp rounding noise moves it by up to max rel" in out
    assert "amplified at ONNX node #3 'softmax' (Softmax" in out
    assert "OK: all 1 output(s) pass (1 outside tolerance, cleared by the float64 referee), 2 warning(s)" in out
    # the referee cleared a disagreement, so every layer was compared: summed up, not tabled (not asked for)
    assert "per layer: 3 of 4 ONNX nodes compared (1 fused away in NNRt, 0 constant-folded)" in out
    assert "  #  node" not in out and "every layer was compared too" in out
    strict = invoke("check", ill_onnx, "--strict")
    assert strict.exit_code == 1 and "FAIL (--strict): 2 warning(s)" in strict.stdout


def test_check_says_native_is_wrong_at_the_broken_node(invoke, monkeypatch):
    from test_parity import off_by_one_pad

    off_by_one_pad(monkeypatch, lambda args: args[1].shape[0] == 24)
    result = invoke("check", SMALL_CNN, "--per-layer")
    assert result.exit_code == 1
    out = result.stdout
    assert "float64 says native is wrong first at ONNX node #5 'conv2.relu' (Relu): native is wrong" in out
    assert "5   conv2.relu  Relu     CONV2D" in out and "native is wrong (onnxruntime" in out
    assert "FAIL: 2 of 2 output(s) outside tolerance" in out
    data = json.loads(invoke("check", SMALL_CNN, "--json").stdout)
    assert {o["float64"]["verdict"] for o in data["outputs"]} == {"native is wrong"}


def test_check_nan_fails_and_max_rel_is_not_nan(invoke, tmp_path):
    node = helper.make_node("Sqrt", ["x"], ["y"], name="sqrt")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "sqrt.onnx"))
    np.save(tmp_path / "x.npy", np.array([-1.0, 4.0, np.nan, 1.0], np.float32))
    result = invoke("check", tmp_path / "sqrt.onnx", "--input", f"x={tmp_path / 'x.npy'}")
    assert result.exit_code == 1
    assert "NaN (native 2, onnxruntime 2)" in result.stdout
    assert "FAIL: 1 of 1 output(s) outside tolerance (1 with NaN)" in result.stdout
    row = [line for line in result.stdout.splitlines() if line.startswith("  y ")][0]  # the comparison row
    assert row.split()[3:5] == ["0", "0"] and "nan" not in row.lower().replace("nan (native", "")  # max abs/rel
    data = json.loads(invoke("check", tmp_path / "sqrt.onnx", "--input", f"x={tmp_path / 'x.npy'}", "--json").stdout)
    assert data["outputs"][0]["native_stats"]["nan"] == 2 and data["outputs"][0]["passed"] is False


def test_save_inputs_on_check_run_and_bench_feed_back_as_input(invoke, tmp_path):
    from nnrt_onnx.onnx_import import from_onnx
    from nnrt_onnx.workflows.inference import random_inputs

    expected = random_inputs(from_onnx(SMALL_CNN).model, 4)[0]  # what seed 4 makes, independently of the CLI
    for command in ("check", "run", "bench"):
        extra = ["-n", 1, "--warmup", 0] if command == "bench" else []
        result = invoke(command, SMALL_CNN, "--seed", 4, "--save-inputs", tmp_path / f"{command}.npz", *extra)
        assert result.exit_code == 0, result.output
        with np.load(tmp_path / f"{command}.npz", allow_pickle=False) as saved:
            assert saved.files == ["image"]
            np.testing.assert_array_equal(saved["image"], expected)
    again = invoke("run", SMALL_CNN, "--input", tmp_path / "check.npz", "--output-npz", tmp_path / "a.npz")
    first = invoke("run", SMALL_CNN, "--seed", 4, "--output-npz", tmp_path / "b.npz")
    assert again.exit_code == 0 and first.exit_code == 0
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        np.testing.assert_array_equal(a["probs"], b["probs"])
    one_line_error(invoke("run", SMALL_CNN, "--save-inputs", tmp_path / "x.txt"), 1, "must end in .npz")
    one_line_error(invoke("run", SMALL_CNN, "--save-inputs", tmp_path / "no" / "x.npz"), 2, "no such directory")


def test_expected_outputs_on_check_and_run(invoke, tmp_path):
    from support import ort_run

    x = np.random.default_rng(9).standard_normal((2, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    (golden,) = ort_run(onnx.load(TINY_MLP), {"features": x})
    np.save(tmp_path / "scores.npy", golden)
    np.savez(tmp_path / "golden.npz", scores=golden)
    wrong = golden.copy()
    wrong[0, 0] += 0.05
    np.save(tmp_path / "wrong.npy", wrong)
    given = ["--input", f"features={tmp_path / 'x.npy'}"]
    for spec in (f"scores={tmp_path / 'scores.npy'}", str(tmp_path / "golden.npz"), str(tmp_path / "scores.npy")):
        result = invoke("check", TINY_MLP, *given, "--expected", spec)
        assert result.exit_code == 0, result.output
        assert "against the expected outputs (native, then onnxruntime):" in result.stdout
        assert invoke("run", TINY_MLP, *given, "--expected", spec).exit_code == 0
    bad = invoke("check", TINY_MLP, *given, "--expected", f"scores={tmp_path / 'wrong.npy'}")
    assert bad.exit_code == 1 and "outside tolerance of the expected values" in bad.stdout
    one_line_error(invoke("run", TINY_MLP, *given, "--expected", f"scores={tmp_path / 'wrong.npy'}"), 1,
                   "1 of 1 output(s) outside tolerance of the expected values: scores")
    one_line_error(invoke("check", TINY_MLP, "--expected", f"nope={tmp_path / 'scores.npy'}"), 2, "unknown output")


def test_expected_from_the_onnx_packages_golden_output(invoke):
    """light_squeezenet ships its expected output (a TensorProto without a name: the model's only output)."""
    result = invoke("check", LIGHT / "light_squeezenet.onnx", "--no-float64", "--expected",
                    LIGHT / "light_squeezenet_output_0.pb")
    assert result.exit_code == 0, result.output
    assert "against the expected outputs" in result.stdout
    assert result.stdout.count("softmaxout_1  float32  [1, 1000, 1, 1]") == 3  # the check, then both sides
    assert "warning: output 'softmaxout_1' is constant" in result.stdout


def test_val_range(invoke, tmp_path):
    for spec in ("5,6", "features=5,6"):
        result = invoke("run", TINY_MLP, "--val-range", spec, "--save-inputs", tmp_path / "in.npz")
        assert result.exit_code == 0, result.output
        with np.load(tmp_path / "in.npz") as saved:
            assert saved["features"].min() >= 5 and saved["features"].max() < 6
    result = invoke("check", TINY_MLP, "--val-range", "-1,1", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["inputs"]["features"]["range"] == [-1.0, 1.0]
    one_line_error(invoke("run", TINY_MLP, "--val-range", "1"), 2, "expected NAME=LO,HI or LO,HI")
    one_line_error(invoke("run", TINY_MLP, "--val-range", "2,1"), 2, "LO must be below HI")
    one_line_error(invoke("run", TINY_MLP, "--val-range", "nope=0,1"), 2, "unknown input name(s) ['nope']")


def test_run_json_output_npz_and_statistics(invoke, tmp_path):
    result = invoke("run", SMALL_CNN, "--json", "--output-npz", tmp_path / "out.npz", "--output-dir", tmp_path / "d")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [o["name"] for o in data["outputs"]] == ["probs", "logits"]
    with np.load(tmp_path / "out.npz") as saved:
        probs = saved["probs"]
        np.testing.assert_array_equal(probs, np.load(tmp_path / "d" / "probs.npy"))
    stats = data["outputs"][0]["stats"]
    assert stats["min"] == pytest.approx(float(probs.min())) and stats["std"] == pytest.approx(float(probs.std()))
    assert stats["nan"] == 0 and data["inputs"]["image"]["source"] == "random" and data["run_ms"] > 0
    text = invoke("run", SMALL_CNN).stdout
    assert "  min " in text and "NaN 0  Inf 0" in text


def test_run_float16_overflow_exits_1(invoke, tmp_path):
    k = numpy_helper.from_array(np.float32(300), "k")
    nodes = [helper.make_node("Mul", ["x", "k"], ["m"]), helper.make_node("Mul", ["m", "k"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])], [k])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "big.onnx"))
    assert invoke("run", tmp_path / "big.onnx").exit_code == 0  # 90000 |x| fits in float32 ...
    result = invoke("run", tmp_path / "big.onnx", "--float16")  # ... not in float16 (65504)
    line = one_line_error(result, 1, "the float16 run produced NaN/Inf in 1 of 1 output(s) (y: 0 NaN, ")
    assert "run without --float16" in line and "y: float32 [64]" in result.stdout


def test_per_layer_table_in_text(invoke):
    out = invoke("check", SMALL_CNN, "--per-layer").stdout
    assert "  #   node        op       NNRt op                  max abs   max rel   cosine    float64" in out
    assert "  8   lrn         LRN      LRN  " in out and "  11  logits      Gemm     FULL_CONNECTION  " in out


def test_html_report_has_one_point_per_compared_layer(invoke, monkeypatch, tmp_path):
    import html.parser

    from test_parity import off_by_one_pad

    off_by_one_pad(monkeypatch, lambda args: args[1].shape[0] == 24)
    result = invoke("check", SMALL_CNN, "--report", tmp_path / "r.html", "--json")  # implies --per-layer
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    compared = [layer["index"] for layer in data["per_layer"]["layers"] if layer["status"] != "not compared"]

    class Page(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.points, self.lines, self.tags, self.links = [], {}, [], []

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            self.tags.append(tag)
            self.links += [v for k, v in attrs.items() if k in ("src", "href")]
            classes = (attrs.get("class") or "").split()
            if tag == "circle" and "native-ort" in classes:
                self.points.append((int(attrs["data-index"]), "diverged" in classes))
            if tag == "line" and classes and classes[0] in ("divergence", "culprit"):
                self.lines[classes[0]] = int(attrs["data-index"])

    page = Page()
    page.feed((tmp_path / "r.html").read_text())
    assert [i for i, _ in page.points] == compared  # one point per compared layer, in graph order
    assert {i for i, diverged in page.points if diverged} == {5, 7, 8, 10, 11, 12}
    assert page.lines == {"divergence": 5, "culprit": 5}
    assert "script" not in page.tags and page.links == []  # self-contained
    assert "svg" in page.tags and "table" in page.tags  # the chart, the legend's symbols, the pictures of the outputs
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # written atomically, nothing left over


def test_check_many_models_one_summary(invoke, tmp_path, corrupt):
    result = invoke("check", MODELS)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("check 3 model(s), native vs onnxruntime, seed 0")
    for name in ("residual_block.onnx", "small_cnn.onnx", "tiny_mlp.onnx"):
        assert name in out
    assert "3 model(s): 3 OK, 0 FAIL, 0 error(s)" in out
    result = invoke("check", corrupt / "bad.onnx", SMALL_CNN, tmp_path / "missing.onnx", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    rows = {Path(row["model"]).name: row for row in data["models"]}
    assert rows["small_cnn.onnx"]["ok"] and rows["small_cnn.onnx"]["verdict"] == "OK"
    assert rows["small_cnn.onnx"]["report"]["outputs"][0]["name"] == "probs"
    assert rows["bad.onnx"]["verdict"] == "ERROR" and "not a readable ONNX model" in rows["bad.onnx"]["error"]
    assert "no such file" in rows["missing.onnx"]["error"] and not data["ok"]
    text = invoke("check", corrupt / "bad.onnx", SMALL_CNN).stdout
    assert "ERROR: " in text and "2 model(s): 1 OK, 0 FAIL, 1 error(s)" in text
    one_line_error(invoke("check", SMALL_CNN, TINY_MLP, "--input", "x.npy"), 2, "--input applies to one model")
    one_line_error(invoke("check", tmp_path / "empty_dir_is_not_a_model"), 2, "no such file")
    (tmp_path / "empty").mkdir()
    one_line_error(invoke("check", tmp_path / "empty"), 1, "no .onnx model in this directory")


def test_bench_json_statistics_and_threads(invoke):
    result = invoke("bench", TINY_NNRT, "-n", 5, "--warmup", 0, "--json", "--threads", 1)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["threads"] == 1
    for r in data["results"]:
        times = np.array(r["times_ms"])
        assert len(times) == 5
        assert r["mean_ms"] == pytest.approx(times.mean()) and r["std_ms"] == pytest.approx(times.std())
        assert r["p50_ms"] == pytest.approx(np.median(times)) == pytest.approx(r["median_ms"])
        assert r["p90_ms"] == pytest.approx(np.percentile(times, 90)) and r["p99_ms"] <= times.max() + 1e-9
        assert r["min_ms"] == pytest.approx(times.min())
    one_line_error(invoke("bench", TINY_NNRT, "--threads", 0), 2, "--threads")
