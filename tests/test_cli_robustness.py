"""The CLI under hostile input (issue 12): every failure is one line on stderr and a non-zero exit (2 for a malformed
command line), never a traceback (unless --debug), never a silent loss of an output, never a file left half-written.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import one_line_error

from nnrt_onnx import NNRtError
from nnrt_onnx.enums import OH_NN_ReturnCode as RC

ROOT = Path(__file__).resolve().parent.parent
SMALL_CNN = str(ROOT / "models" / "small_cnn.onnx")
TINY_MLP = str(ROOT / "models" / "tiny_mlp.onnx")
TINY_NNRT = str(ROOT / "models" / "tiny_cnn.nnrt")


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def relu_model(path: Path) -> Path:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


# -- unexpected exceptions and MemoryError: one line, exit 1; --debug shows the traceback ------------------------------

def test_memory_error_is_one_line(invoke, tmp_path, monkeypatch):
    import nnrt_onnx.onnx_import as importer

    def exhausted(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(importer, "from_onnx", exhausted)
    one_line_error(invoke("convert", SMALL_CNN, "-o", tmp_path / "m.nnrt"), 1, "out of memory")
    result = invoke("--debug", "convert", SMALL_CNN, "-o", tmp_path / "m.nnrt")
    assert result.exit_code == 1 and "Traceback" in result.stderr and "MemoryError" in result.stderr


def test_an_unexpected_exception_is_one_line_naming_where(invoke, tmp_path, monkeypatch):
    import nnrt_onnx.serialization as serialization

    def broken(model, path):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(serialization, "save_model", broken)
    line = one_line_error(invoke("convert", SMALL_CNN, "-o", tmp_path / "m.nnrt"), 1,
                          "internal error: RuntimeError: boom")
    assert "test_cli_robustness.py" in line or "(at " in line
    result = invoke("--debug", "convert", SMALL_CNN, "-o", tmp_path / "m.nnrt")
    assert result.exit_code == 1 and "Traceback" in result.stderr


def test_debug_shows_a_converters_own_traceback(invoke, tmp_path, monkeypatch):
    """An internal_error of a node: one line normally; with --debug the converter's traceback too."""
    from nnrt_onnx.ir.rows import find_row
    from nnrt_onnx.onnx_import import handlers

    def broken(ctx):
        return {}["nope"]

    row = find_row("Relu", 17)
    monkeypatch.setitem(handlers.registered(), (row.op_type, None), broken)
    model = relu_model(tmp_path / "relu.onnx")
    one_line_error(invoke("convert", model, "-o", tmp_path / "r.nnrt"), 1, "[internal_error]")
    result = invoke("--debug", "convert", model, "-o", tmp_path / "r.nnrt")
    assert "KeyError" in result.stderr and "in broken" in result.stderr
    assert not (tmp_path / "r.nnrt").exists()


# -- arguments ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (("check", SMALL_CNN, "--rtol", "nan"), "--rtol"),
    (("check", SMALL_CNN, "--rtol", "inf"), "--rtol"),
    (("check", SMALL_CNN, "--atol", "nan"), "--atol"),
    (("check", SMALL_CNN, "--atol", "-1"), "--atol"),
    (("convert", TINY_NNRT, "-o", "x.onnx", "--opset", "99"), "--opset"),
    (("convert", TINY_NNRT, "-o", "x.onnx", "--opset", "12"), "--opset"),
    (("run", SMALL_CNN, "--seed", "-5"), "--seed"),
    (("run", SMALL_CNN, "--max-constant-bytes", "lots"), "--max-constant-bytes"),
    (("run", SMALL_CNN, "--max-constant-bytes", "-1"), "--max-constant-bytes"),
    (("convert", SMALL_CNN, "-o", "x.nnrt", "--max-constant-bytes", "1E"), "--max-constant-bytes"),
    (("inspect", SMALL_CNN, "--input-shape", "image=1,0,3"), "--input-shape"),
])
def test_malformed_arguments_exit_2(invoke, args, words):
    one_line_error(invoke(*args), 2, words)


def test_byte_sizes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("cli_module", ROOT / "cli.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    size = cli.ByteSize()
    assert [size.convert(v, None, None) for v in ("0", "4096", "256M", "256MiB", "1g", "2 KB", 7)] == [
        0, 4096, 256 << 20, 256 << 20, 1 << 30, 2048, 7]


def _range_sum_model(tmp_path, dtype):
    """y = x + sum(Range(0, 2**20)): the Range is 8 MiB as int64, 4 MiB as float32."""
    graph = helper.make_graph(
        [helper.make_node("Range", ["a", "b", "d"], ["r"], name="range"), helper.make_node("Cast", ["r"], ["rf"], to=1),
         helper.make_node("ReduceSum", ["rf"], ["s"], keepdims=0), helper.make_node("Add", ["x", "s"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [numpy_helper.from_array(np.asarray(v, dtype), n) for n, v in (("a", 0), ("b", 1 << 20), ("d", 1))])
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / f"range_{dtype}.onnx")


def test_max_constant_bytes_reaches_the_conversion(invoke, tmp_path):
    """Within the default budget the Range and everything after it folds (one ADD left); over --max-constant-bytes
    1M an integer Range is not folded but computed at run time (NNRt's RANGE), and a float one, which NNRt's integer
    RANGE cannot compute, is a clear error."""
    model = _range_sum_model(tmp_path, np.int64)
    folded = invoke("convert", model, "-o", tmp_path / "folded.nnrt")
    assert folded.exit_code == 0 and "1 NNRt operations" in folded.output, folded.output
    kept = invoke("convert", model, "-o", tmp_path / "kept.nnrt", "--max-constant-bytes", "1M")
    assert kept.exit_code == 0 and "4 NNRt operations" in kept.output, kept.output
    assert invoke("run", model, "--max-constant-bytes", "1M").exit_code == 0
    floats = _range_sum_model(tmp_path, np.float32)
    one_line_error(invoke("convert", floats, "-o", tmp_path / "no.nnrt", "--max-constant-bytes", "1M"), 1,
                   "larger than the folding budget")
    assert not (tmp_path / "no.nnrt").exists()
    one_line_error(invoke("inspect", floats, "--max-constant-bytes", "1M"), 1)


def test_convert_builds_before_writing(invoke, tmp_path, monkeypatch):
    from nnrt_onnx import compilation

    def refuse(self):
        raise NNRtError(RC.OH_NN_FAILED, "cannot prepare this model")

    monkeypatch.setattr(compilation.Compilation, "build", refuse)
    line = one_line_error(invoke("convert", SMALL_CNN, "-o", tmp_path / "m.nnrt"), 1,
                          "does not compile: cannot prepare this model")
    assert "OH_NN_" not in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("case", ["two_nodes_write_one_tensor", "reshape_element_count", "graph_output_no_node_writes"])
def test_convert_refuses_models_that_cannot_run(invoke, tmp_path, case):
    """These converted (exit 0) before and only failed at run time."""
    from hostile_models import CASES

    model = save(CASES[case][0], tmp_path / "m.onnx")
    one_line_error(invoke("convert", model, "-o", tmp_path / "m.nnrt"), 1, "invalid_model")
    assert not (tmp_path / "m.nnrt").exists()


def test_random_inputs_of_a_huge_declared_input_are_refused(invoke, tmp_path):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 14, 1 << 14])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 14, 1 << 14])])
    model = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "big.onnx")
    one_line_error(invoke("run", model), 1, "random data for input 'x'")


def test_a_model_input_of_unknown_dtype_fails_the_build_not_the_run(invoke, tmp_path):
    from test_serialization_robustness import unknown_input_file

    path = unknown_input_file(tmp_path)
    one_line_error(invoke("run", path), 1, "error: tensor 0")
    one_line_error(invoke("run", path, "--device", "onnxruntime"), 1, "OH_NN_UNKNOWN")


# -- output files ------------------------------------------------------------------------------------------------------

def colliding_outputs_model(path: Path) -> Path:
    """Outputs whose names map to one file under a naive scheme: a/b, a_b, A_B, '.', '..' and a long one."""
    long_name = "n" * 300
    names = ["a/b", "a_b", "A_B", ".", "..", "x%2Fy", long_name]
    nodes = [helper.make_node("Mul", ["x", f"k{i}"], [name]) for i, name in enumerate(names)]
    inits = [numpy_helper.from_array(np.float32(i + 1), f"k{i}") for i in range(len(names))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in names], inits)
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_outputs_never_overwrite_each_other(invoke, tmp_path):
    from nnrt_onnx.workflows.inference import decode_file_stem

    model = colliding_outputs_model(tmp_path / "m.onnx")
    x = np.asarray([1.0, -2.0, 3.5], np.float32)
    np.save(tmp_path / "x.npy", x)
    result = invoke("run", model, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())["outputs"]
    files = [entry["file"] for entry in manifest]
    assert len(set(f.casefold() for f in files)) == len(files) == 7
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(files + ["manifest.json"])
    reference = ort.InferenceSession(onnx.load(str(model)).SerializeToString(),
                                     providers=["CPUExecutionProvider"]).run(None, {"x": x})
    names = [o.name for o in onnx.load(str(model)).graph.output]
    for entry, expected in zip(manifest, reference):
        assert entry["name"] == names[manifest.index(entry)]
        np.testing.assert_array_equal(np.load(tmp_path / "out" / entry["file"]), expected)
        if "~" not in entry["file"]:
            assert decode_file_stem(entry["file"][:-4]) == entry["name"]
    lines = result.stdout.splitlines()
    assert result.stdout.count("wrote ") == 8 and len(set(lines)) == len(lines)


@pytest.mark.parametrize("name", ["", "a/b", "a_b", ".hidden", "..", "%", "~x", "naïve/ünïcödé", "tab\tand\nnewline",
                                  "con", "\udc80"])
def test_file_stems_round_trip(name):
    from nnrt_onnx.workflows.inference import decode_file_stem, encode_file_stem

    stem = encode_file_stem(name)
    assert decode_file_stem(stem) == name
    assert "/" not in stem and "~" not in stem and stem and not stem.startswith(".")
    assert all(c.isascii() and (c.isalnum() or c in "_-.%") for c in stem)
