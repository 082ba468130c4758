"""The command line as a new user meets it (issue 29): usage errors exit 2 naming the flag, conflicting and
irrelevant flags refused, --debug anywhere, Ctrl-C 130, one name for the model argument and one meaning per short
flag, grouped help with examples, messages in user terms, ops --onnx, --iterations, per-output tolerances, the
static-dim override, the simplified ONNX; a few through a real process."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import one_line_error, ort_run

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
SMALL_CNN = str(MODELS / "small_cnn.onnx")
TINY_MLP = str(MODELS / "tiny_mlp.onnx")
TINY_NNRT = str(MODELS / "tiny_cnn.nnrt")
COMMANDS = ("check", "convert", "run", "inspect", "bench", "ops")


def _save(model, path) -> str:
    onnx.save(model, str(path))
    return str(path)


def _image(tmp_path, shape=(1, 3, 32, 32), name="image.npy", seed=0) -> Path:
    np.save(tmp_path / name, np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    return tmp_path / name


# -- exit codes: 2 for the command line, naming the flag ----------------------------------------------------------

def test_malformed_specs_exit_2_naming_the_flag(invoke, tmp_path):
    one_line_error(invoke("run", SMALL_CNN, "--input", "foo"), 2, "--input foo: no such file foo")
    one_line_error(invoke("run", SMALL_CNN, "--val-range", "foo"), 2, "--val-range foo: expected")
    one_line_error(invoke("run", TINY_MLP, "--expected", "foo"), 2, "--expected foo: no such file foo")
    one_line_error(invoke("run", SMALL_CNN, "--device", "gpu"), 2, "'--device': unknown device")
    one_line_error(invoke("check", SMALL_CNN, "--rtol", "x=y"), 2, "'--rtol'")
    (tmp_path / "dir.npy").mkdir()
    one_line_error(invoke("run", SMALL_CNN, "--input", tmp_path / "dir.npy"), 2, "is a directory")
    (tmp_path / "x.txt").write_text("1")
    one_line_error(invoke("run", SMALL_CNN, "--input", tmp_path / "x.txt"), 2, "not an array file")


@pytest.mark.parametrize("command", ["check", "run", "inspect", "bench", "convert"])
def test_a_missing_model_and_a_directory_exit_alike(invoke, tmp_path, command):
    extra = ["-o", tmp_path / "out.nnrt"] if command == "convert" else []
    one_line_error(invoke(command, tmp_path / "missing.onnx", *extra), 2, "no such file")
    if command != "check":  # (check takes a directory of models)
        one_line_error(invoke(command, tmp_path, *extra), 2, "is a directory")


def test_conflicting_and_irrelevant_flags_are_usage_errors(invoke, tmp_path):
    image = _image(tmp_path)
    np.savez(tmp_path / "a.npz", image=np.load(image))
    nnrt = tmp_path / "m.nnrt"
    assert invoke("convert", SMALL_CNN, "-o", nnrt).exit_code == 0
    one_line_error(invoke("ops", "--json", "--markdown"), 2, "--json and --markdown")
    one_line_error(invoke("convert", SMALL_CNN, "-o", tmp_path / "y.nnrt", "--opset", "13"), 2, "--opset")
    for flag in (["--nhwc-io"], ["--no-fold-batchnorm"], ["--input-shape", "image=1,3,32,32"]):
        one_line_error(invoke("convert", nnrt, "-o", tmp_path / "y.onnx", *flag), 2, flag[0])
    assert not (tmp_path / "y.nnrt").exists() and not (tmp_path / "y.onnx").exists()
    one_line_error(invoke("bench", SMALL_CNN, "--top", "3"), 2, "--top applies only with --profile")
    one_line_error(invoke("check", SMALL_CNN, "-i", f"image={image}", "--val-range", "0,1"), 2,
                   "every input is given")
    one_line_error(invoke("check", SMALL_CNN, "-i", f"image={image}", "--val-range", "image=0,1"), 2,
                   "given with --input")
    one_line_error(invoke("run", SMALL_CNN, "--input", tmp_path / "a.npz", "--input", f"image={image}"), 2,
                   "input 'image' is given already")
    one_line_error(invoke("run", SMALL_CNN, "--rtol", "1e-3"), 2, "--rtol applies only with --expected")
    one_line_error(invoke("run", SMALL_CNN, "--val-range", "0,1", "--val-range", "-1,1"), 2, "has a range already")
    one_line_error(invoke("check", SMALL_CNN, "--atol", "1e-3", "--atol", "1e-4"), 2, "has a value already")


def test_check_json_errors_are_json(invoke, tmp_path):
    for args, code in (([tmp_path / "missing.onnx"], 2), ([SMALL_CNN, "--input", "nope.npy"], 2),
                       ([SMALL_CNN, "--rtol", "-1"], 2)):
        result = invoke("check", *args, "--json")
        assert result.exit_code == code, result.output
        data = json.loads(result.stdout)
        assert data["ok"] is False and data["exit_code"] == code and data["error"]
        assert result.stderr.startswith("error: ")


def test_ctrl_c_exits_130(invoke, monkeypatch):
    from nnrt_onnx.workflows import parity

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(parity, "check_model", interrupted)
    one_line_error(invoke("check", SMALL_CNN), 130, "interrupted")


# -- names, help ---------------------------------------------------------------------------------------------------

def test_every_command_names_its_model_MODEL_and_has_grouped_help_with_examples(invoke):
    for command in COMMANDS:
        result = invoke(command, "--help")
        assert result.exit_code == 0, result.output
        text = result.stdout
        assert "Examples:\n  nnrt-onnx " + command in text, command
        assert "Other options:" in text  # (--help at least)
        if command != "ops":
            usage = text.splitlines()[0]
            assert usage.endswith("MODEL") or usage.endswith("MODEL..."), usage
            assert text.count(":\n  -") + text.count(":\n  --") >= 3, f"{command}: options not in groups"


def test_every_option_shows_once_in_help(invoke, cli_main):
    import click

    for command in COMMANDS:
        text = invoke(command, "--help").stdout
        for param in cli_main.commands[command].params:
            if isinstance(param, click.Option):
                flag = max(param.opts, key=len)
                assert text.count(flag + " ") + text.count(flag + "\n") >= 1, (command, param.opts)


def test_one_meaning_per_short_flag(cli_main):
    import click

    meaning: dict[str, set[str]] = {}
    for command in cli_main.commands.values():
        for param in command.params:
            if isinstance(param, click.Option):
                for short in (o for o in param.opts if not o.startswith("--")):
                    meaning.setdefault(short, set()).add(max(param.opts, key=len))
    assert meaning and all(len(longs) == 1 for longs in meaning.values()), meaning


def test_debug_is_global_and_the_error_says_where(invoke):
    result = invoke("run", "--debug", SMALL_CNN, "--device", "gpu")
    assert result.exit_code == 2
    result = invoke("check", SMALL_CNN, "--rtol", "x=")  # click's own usage errors keep the help hint
    assert result.exit_code == 2 and "check --help'" in result.stderr


# -- messages in user terms --------------------------------------------------------------------------------------

def test_files_that_are_not_what_their_suffix_says(invoke, tmp_path):
    (tmp_path / "empty.onnx").write_bytes(b"")
    one_line_error(invoke("check", tmp_path / "empty.onnx"), 1, "the file is empty (0 bytes), not an ONNX model")
    (tmp_path / "hello.nnrt").write_text("hello")
    line = one_line_error(invoke("run", tmp_path / "hello.nnrt"), 1, "a 5-byte text file ('hello')")
    assert "not an NNRt model file" in line and "truncated" not in line
    (tmp_path / "model.nnrt").write_bytes(Path(SMALL_CNN).read_bytes())
    for command in ("run", "inspect", "bench"):
        one_line_error(invoke(command, tmp_path / "model.nnrt"), 1, "this looks like an ONNX model")
    one_line_error(invoke("convert", tmp_path / "model.nnrt", "-o", tmp_path / "x.onnx"), 1,
                   "this looks like an ONNX model")
    (tmp_path / "model.onnx").write_bytes(Path(TINY_NNRT).read_bytes())
    one_line_error(invoke("check", tmp_path / "model.onnx"), 1, "this looks like an NNRt model file")


def test_the_onnx_sniffer_against_real_files():
    """Every ONNX file the onnx package ships is recognised from its first 4 KiB, and no .nnrt file or text is."""
    from nnrt_onnx.workflows.files import looks_like_onnx

    data = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
    files = sorted(data.glob("test_*/model.onnx"))[:300] + [Path(SMALL_CNN), Path(TINY_MLP)]
    for path in files:
        blob = path.read_bytes()
        assert looks_like_onnx(blob[:4096], len(blob)), path
    blob = Path(TINY_NNRT).read_bytes()
    assert not looks_like_onnx(blob[:4096], len(blob))
    for text in (b"hello", b"\x08", b"", b"{\"a\": 1}"):
        assert not looks_like_onnx(text, len(text))


def test_io_errors_name_the_path_never_a_temp_file(invoke, tmp_path, monkeypatch):
    from nnrt_onnx import serialization

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(serialization.os, "fsync", full)
    target = tmp_path / "m.nnrt"
    line = one_line_error(invoke("convert", SMALL_CNN, "-o", target), 1, f"cannot write {target}: no space left")
    assert "Errno" not in line and ".tmp" not in line and "OH_NN_" not in line
    assert list(tmp_path.iterdir()) == []
    line = one_line_error(invoke("run", SMALL_CNN, "--output-npz", tmp_path / "o.npz"), 1, "no space left on device")
    assert str(tmp_path / "o.npz") in line


def test_an_unwritable_output_fails_before_the_model_runs(invoke, tmp_path, monkeypatch):
    from nnrt_onnx.workflows import inference

    def must_not_run(*args, **kwargs):
        raise AssertionError("the model ran")

    monkeypatch.setattr(inference, "run_model", must_not_run)
    one_line_error(invoke("run", SMALL_CNN, "--output-npz", tmp_path / "no" / "o.npz"), 2, "no such directory")
    one_line_error(invoke("run", SMALL_CNN, "--output-npz", "/proc/o.npz"), 1, "cannot write /proc/o.npz")
    one_line_error(invoke("run", SMALL_CNN, "--output-npz", tmp_path), 2, "is a directory")
    (tmp_path / "file").write_text("")
    one_line_error(invoke("run", SMALL_CNN, "--output-dir", tmp_path / "file"), 2, "is a file")


def _dynamic_hw(tmp_path) -> str:
    """Conv 3x3 then a 2x2 max pool over an image of dynamic height and width."""
    weight = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3],
                                np.random.default_rng(1).standard_normal(108).astype(np.float32))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    graph = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, None, None])], [weight])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "dyn.onnx")


def test_dynamic_height_and_width_ask_for_the_shape(invoke, tmp_path):
    model = _dynamic_hw(tmp_path)
    for command in ("run", "check"):
        line = one_line_error(invoke(command, model), 2, "input 'x' has dynamic dims [1, 3, ?, ?] (axis 2, 3)")
        assert "--input-shape x=1,3,224,224" in line and "kernel" not in line
    result = invoke("run", model, "--input-shape", "x=1,3,8,6", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["outputs"][0]["shape"] == [1, 4, 4, 3]  # 8x6, padded conv, pooled by 2
    assert invoke("check", model, "--input-shape", "x=1,3,8,6").exit_code == 0


def test_a_dynamic_batch_alone_is_still_1(invoke):
    result = invoke("run", TINY_MLP, "--json")  # features: [batch, 64]
    assert result.exit_code == 0 and json.loads(result.stdout)["inputs"]["features"]["shape"] == [1, 64]


def test_an_unsupported_op_shows_its_documented_reason(invoke, tmp_path):
    graph = helper.make_graph([helper.make_node("Acos", ["x"], ["y"], name="acos")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "acos.onnx")
    reason = "no inverse trigonometric operation"  # mappings/onnx_unsupported.toml's words
    one_line_error(invoke("check", model), 1, reason)
    assert reason in invoke("inspect", model).stdout


# -- answers: ops --onnx, --iterations, per-output tolerances, re-batching, simplified ONNX -------------------------

def test_ops_onnx_answers_per_operator(invoke):
    result = invoke("ops", "--onnx", "Conv")
    assert result.exit_code == 0 and result.stdout.startswith("Conv (ai.onnx; versions 1, 11, 22): converts")
    assert "-> CONV2D" in result.stdout and "mappings/ops/conv2d.toml" in result.stdout
    result = invoke("ops", "--onnx", "GridSample")
    assert result.exit_code == 1 and "does not convert" in result.stdout
    assert "interpolation at data-dependent coordinates" in result.stdout
    one_line_error(invoke("ops", "--onnx", "Cnov"), 1, "did you mean Conv")
    one_line_error(invoke("ops", "Conv"), 2, "add --onnx")
    data = json.loads(invoke("ops", "--onnx", "Relu", "--json").stdout)
    assert data["op"] == "Relu" and data["converts"] == "yes" and all(s["converts"] for s in data["spans"])
    table = invoke("ops", "--onnx")
    assert table.exit_code == 0
    rows = {line.split()[0]: line for line in table.stdout.splitlines()[1:-1]}
    assert "RELU" in rows["Relu"] and "no inverse trigonometric" in rows["Acos"]
    assert set(rows) >= {s.name for s in onnx.defs.get_all_schemas() if s.domain in ("", "ai.onnx")}


def test_iterations_run_several_input_sets(invoke):
    result = invoke("run", TINY_MLP, "--iterations", "3", "--json")
    assert result.exit_code == 0, result.output
    sets = json.loads(result.stdout)["iterations"]
    assert [s["seed"] for s in sets] == [0, 1, 2]
    for entry in sets:  # each set is what a run of that seed gives
        alone = json.loads(invoke("run", TINY_MLP, "--seed", entry["seed"], "--json").stdout)
        assert entry["outputs"][0]["stats"] == alone["outputs"][0]["stats"]
    assert sets[0]["outputs"][0]["stats"] != sets[1]["outputs"][0]["stats"]
    result = invoke("check", TINY_MLP, "--iterations", "2")
    assert result.exit_code == 0 and "seed 0: OK" in result.stdout and "seed 1: OK" in result.stdout
    assert "OK: 2 of 2 input sets pass" in result.stdout
    data = json.loads(invoke("check", TINY_MLP, "--iterations", "2", "--seed", "5", "--json").stdout)
    assert [s["seed"] for s in data["iterations"]] == [5, 6] and data["ok"]


def test_iterations_fail_when_one_set_fails(invoke, monkeypatch):
    from test_parity import patch_kernel

    from nnrt_onnx.enums import OH_NN_OperationType as OP

    seen = []

    def second_set(args):  # a kernel bug that shows only on the second input set the check runs
        seen.append(1)
        return len(seen) > 1

    patch_kernel(monkeypatch, OP.OH_NN_OPS_SIGMOID, second_set, delta=0.1)
    result = invoke("check", TINY_MLP, "--iterations", "2", "--no-float64")
    assert result.exit_code == 1, result.output
    assert "seed 0: OK" in result.stdout and "seed 1: FAIL" in result.stdout
    assert "FAIL: 1 of 2 input sets pass" in result.stdout


def test_per_output_tolerances(invoke, tmp_path, monkeypatch):
    x = np.random.default_rng(9).standard_normal((2, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    (golden,) = ort_run(onnx.load(TINY_MLP), {"features": x})
    wrong = golden.copy()
    wrong[0, 0] += 0.05 * np.abs(golden).max()  # 5% of the output's scale: outside atol 1e-5, inside 0.1
    np.save(tmp_path / "wrong.npy", wrong)
    given = ["-i", tmp_path / "x.npy", "--expected", f"scores={tmp_path / 'wrong.npy'}"]
    assert invoke("run", TINY_MLP, *given).exit_code == 1
    assert invoke("run", TINY_MLP, *given, "--atol", "scores=0.1").exit_code == 0
    assert invoke("run", TINY_MLP, *given, "--atol", "scores=0.01").exit_code == 1
    assert invoke("check", TINY_MLP, *given, "--atol", "scores=0.1").exit_code == 0
    one_line_error(invoke("check", TINY_MLP, "--atol", "nope=0.1"), 2, "unknown output name(s) ['nope']")
    one_line_error(invoke("check", SMALL_CNN, TINY_MLP, "--atol", "scores=0.1"), 2, "NAME= appl")


def test_a_static_batch_overridden(invoke, tmp_path):
    """small_cnn is declared [1, 3, 32, 32]; --override-static runs it on a batch of 2, and each row is what the
    model gives that image alone."""
    images = np.random.default_rng(3).standard_normal((2, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "two.npy", images)
    one_line_error(invoke("run", SMALL_CNN, "--input-shape", "image=2,3,32,32"), 2, "--override-static")
    result = invoke("run", SMALL_CNN, "--input-shape", "image=2,3,32,32", "--override-static", "-i",
                    tmp_path / "two.npy", "--output-npz", tmp_path / "out.npz")
    assert result.exit_code == 0, result.output
    with np.load(tmp_path / "out.npz") as out:
        batched = out["probs"]
    assert batched.shape == (2, 10)
    for row in range(2):
        (alone, _) = ort_run(onnx.load(SMALL_CNN), {"image": images[row:row + 1]})
        np.testing.assert_allclose(batched[row:row + 1], alone, rtol=1e-4, atol=1e-6)
    result = invoke("check", SMALL_CNN, "--input-shape", "image=3,3,32,32", "--override-static", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["inputs"]["image"]["shape"] == [3, 3, 32, 32]
    one_line_error(invoke("run", SMALL_CNN, "--override-static"), 2, "needs --input-shape")
    result = invoke("bench", SMALL_CNN, "--input-shape", "image=2,3,32,32", "--override-static", "-n", 1,
                    "--warmup", 0, "--json")  # onnxruntime times the re-declared model too
    assert result.exit_code == 0, result.output
    assert [r["error"] for r in json.loads(result.stdout)["results"]] == [None, None, None]


def test_an_overridden_batch_the_graph_hard_codes_names_the_node(invoke, tmp_path):
    from onnx import numpy_helper

    shape = numpy_helper.from_array(np.array([1, 2, 2], np.int64), "shape")
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2])], [shape])
    model = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "rs.onnx")
    one_line_error(invoke("run", model, "--input-shape", "x=2,4", "--override-static"), 1,
                   "rs (Reshape, opset 17): [invalid_model] cannot reshape [2, 4] (8 elements) to [1, 2, 2]")


def test_convert_onnx_to_the_onnx_the_importer_sees(invoke, tmp_path):
    out = tmp_path / "simplified.onnx"
    result = invoke("convert", SMALL_CNN, "-o", out)
    assert result.exit_code == 0, result.output
    simplified = onnx.load(str(out))
    onnx.checker.check_model(simplified, full_check=True)
    source = onnx.load(SMALL_CNN)
    assert simplified.graph.name == source.graph.name == "small_cnn"
    ops = [n.op_type for n in simplified.graph.node]
    assert "BatchNormalization" not in ops and len(ops) < len(source.graph.node)  # folded into the conv
    image = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype(np.float32)
    expected = dict(zip([o.name for o in source.graph.output], ort_run(source, {"image": image})))
    got = dict(zip([o.name for o in simplified.graph.output], ort_run(simplified, {"image": image})))
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-6)
    one_line_error(invoke("convert", SMALL_CNN, "-o", tmp_path / "x.onnx", "--nhwc-io"), 2, "--nhwc-io")


def test_convert_nnrt_to_onnx_keeps_the_graph_name(invoke, tmp_path):
    assert invoke("convert", SMALL_CNN, "-o", tmp_path / "m.nnrt").exit_code == 0
    result = invoke("convert", tmp_path / "m.nnrt", "-o", tmp_path / "m.onnx")
    assert result.exit_code == 0 and "graph 'small_cnn'" in result.stdout
    assert onnx.load(str(tmp_path / "m.onnx")).graph.name == "small_cnn"


def test_a_one_input_model_takes_a_bare_file(invoke, tmp_path):
    image = _image(tmp_path)
    bare = json.loads(invoke("run", SMALL_CNN, "-i", image, "--json").stdout)
    named = json.loads(invoke("run", SMALL_CNN, "-i", f"image={image}", "--json").stdout)
    assert bare["inputs"]["image"]["source"] == "given" and bare["outputs"] == named["outputs"]


# -- a real process --------------------------------------------------------------------------------------------------

def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_real_process_exit_codes_and_messages(tmp_path):
    done = _cli("run", SMALL_CNN, "--device", "gpu")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--device" in done.stderr
    done = _cli("check", tmp_path / "missing.onnx", "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["ok"] is False
    done = _cli("check", SMALL_CNN, "--input", tmp_path / "none.npy", "--debug")
    assert done.returncode == 2 and "Traceback" in done.stderr
    (tmp_path / "hello.nnrt").write_text("hello")
    done = _cli("inspect", tmp_path / "hello.nnrt")
    assert done.returncode == 1 and "a 5-byte text file" in done.stderr and "Traceback" not in done.stderr


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _ctrl_c_as_at_a_terminal():
    """In the child before exec: SIGINT to its default, as at a terminal (a shell starting a job in the background
    without job control makes it ignored, and Python then installs no handler of its own: the command ran on)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see the process working")
@pytest.mark.parametrize("kernel_cache", ["as installed", "empty"])
def test_real_process_ctrl_c_exits_130(tmp_path, kernel_cache):
    """SIGINT while the command works (past its imports: 3 s of CPU into a long bench): exit 130, one line, no
    traceback. With an empty kernel cache the SIGINT comes while kernels compile, where llvmlite's callbacks used to
    swallow it (the bench ran on)."""
    import signal
    import time

    env = {**os.environ, **({"NNRT_ONNX_CACHE_DIR": str(tmp_path)} if kernel_cache == "empty" else {})}
    process = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "bench", SMALL_CNN, "-n", "1000000",
                                "--warmup", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env=env, preexec_fn=_ctrl_c_as_at_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while _cpu_seconds(process.pid) < 3 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted" and "Traceback" not in err


def test_a_ctrl_c_that_a_c_callback_swallowed_is_raised_again(cli_main):
    # llvmlite's ctypes callbacks print and drop a KeyboardInterrupt raised in them ("Exception ignored on calling
    # ctypes callback function"); the CLI's unraisable hook raises it again in the main thread
    import time
    from types import SimpleNamespace

    passed_on = []
    hook = type(cli_main).invoke.__globals__["_interrupts_kept"](passed_on.append)  # (the CLI's module)
    other = SimpleNamespace(exc_type=ValueError)
    hook(other)
    assert passed_on == [other]
    import signal

    # (interrupt_main does nothing where SIGINT is ignored, as in a job a shell starts in the background)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            hook(SimpleNamespace(exc_type=KeyboardInterrupt))
            time.sleep(5)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert passed_on == [other]
