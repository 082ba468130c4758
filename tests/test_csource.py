"""C source through the NNRt C API (docs/c_source.md): each model of tests/csource_cases.py is emitted as C, built
with the system C compiler at -std=c99 -Wall -Wextra -Werror -pedantic and linked with the recording shim; its
example program runs with no arguments; the trace it records is replayed into a Model through the Python API, and
that model must equal the converted one (tensors, parameters, data bit for bit, operations, inputs and outputs --
compared by test_serialization's assert_same_model, not by the code under test) and give the same outputs.

The cases are built together, once per module, in parallel (only those the session selected): one compiler
invocation per model, the shim compiled once."""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from csource_cases import Case, all_cases, covered_param_types, jobs, table_param_types
from test_serialization import assert_same_model

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.csource.emit import EmittedC, c_identifier, emit_c
from nnrt_onnx.csource.program import ProgramRun, build_emitted, build_shim, run_recorded
from nnrt_onnx.csource.toolchain import aarch64_toolchain, host_toolchain, qemu_aarch64
from nnrt_onnx.errors import UserError
from nnrt_onnx.model import Model

pytestmark = pytest.mark.skipif(host_toolchain() is None, reason="no system C compiler (cc, gcc or clang)")
CASES = {case.id: case for case in all_cases()}


@dataclass
class Built:
    model: Model | None = None
    inputs: list | None = None
    emitted: EmittedC | None = None
    run: ProgramRun | None = None
    refused: str | None = None  # emit_c's refusal
    error: str | None = None  # anything else that went wrong
    cross_error: str | None = None  # the aarch64-linux-musl build's or run's failure
    cross_built: bool = False
    same_trace_on_aarch64: bool | None = None  # None: not run (no qemu-user)


def _selected(request) -> tuple[list[str], bool]:
    """The cases the session's tests of this module ask for, and whether any of them is an aarch64 test."""
    ids, cross = set(), False
    for item in request.session.items:
        match = re.search(r"\[(.+)\]$", item.nodeid)
        if item.module.__name__ == __name__ and match and match.group(1) in CASES:
            ids.add(match.group(1))
            cross |= "aarch64" in item.name
    return sorted(ids), cross


def _build_one(built: Built, toolchain, shim, cross, cross_shim) -> None:
    directory = built.emitted.directory
    try:
        executable = build_emitted(built.emitted, toolchain, shim_object=shim)
        built.run = run_recorded(executable, cwd=directory, toolchain=toolchain, trace=directory / "host.trace")
        if cross is not None:
            try:
                arm = build_emitted(built.emitted, cross, output=directory / "main.aarch64", shim_object=cross_shim)
                built.cross_built = True
                if cross.runner:
                    run_recorded(arm, cwd=directory, toolchain=cross, trace=directory / "aarch64.trace")
                    built.same_trace_on_aarch64 = ((directory / "aarch64.trace").read_bytes()
                                                   == (directory / "host.trace").read_bytes())
            except UserError as error:
                built.cross_error = str(error)
    except UserError as error:
        built.error = str(error)
    finally:  # the weights and traces are big; the replay keeps its own copy
        for path in (built.emitted.weights, directory / "host.trace", directory / "aarch64.trace"):
            if path is not None and path.exists():
                path.unlink()


@pytest.fixture(scope="module")
def built(request, tmp_path_factory) -> dict[str, Built]:
    """Every selected case emitted, built and run: the Python part in turn, the compilers and programs in
    parallel."""
    root = tmp_path_factory.mktemp("csource")
    toolchain = host_toolchain()
    shim = build_shim(root / "nnrt_recorder.o", toolchain)
    selected, cross_wanted = _selected(request)
    cross = aarch64_toolchain() if cross_wanted else None
    cross_shim = build_shim(root / "nnrt_recorder.aarch64.o", cross) if cross is not None else None
    started = time.perf_counter()
    results: dict[str, Built] = {}
    with ThreadPoolExecutor(max_workers=jobs()) as pool:
        pending = []
        for case_id in selected:
            result = results[case_id] = Built()
            try:
                result.model, result.inputs = CASES[case_id].make()
                result.emitted = emit_c(result.model, root / case_id, case_id, source=case_id)
            except UserError as error:
                result.refused = str(error)
                continue
            pending.append(pool.submit(_build_one, result, toolchain, shim, cross, cross_shim))
        for future in pending:
            future.result()
    print(f"\ncsource: {len(results)} models emitted, built and run{' (and for aarch64)' if cross else ''} in "
          f"{time.perf_counter() - started:.1f} s")
    return results


def _as_the_c_api_says_it(model: Model) -> Model:
    """NN_QuantParam has no axis: per-channel parameters along axis 0 come back with the axis unset, which means
    axis 0 everywhere (the runtime's reading, nnrt_onnx/runtime/cpu.py)."""
    for tensor in model.tensors:
        if tensor.quant is not None and tensor.quant.count > 1 and tensor.quant.axis == 0:
            tensor.quant = dataclasses.replace(tensor.quant, axis=None)
    return model


def _outputs(model: Model, inputs) -> list[np.ndarray]:
    compilation = Compilation(model)
    compilation.build()
    return Executor(compilation).run_arrays(inputs)


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_emitted_c_builds_the_converted_model(built, case_id):
    case: Case = CASES[case_id]
    result = built[case_id]
    if case.per_channel_axis not in (None, 0):  # NN_QuantParam has no axis: the emitter must say so
        assert result.refused is not None and f"axis {case.per_channel_axis}" in result.refused
        return
    assert result.refused is None and result.error is None, result.refused or result.error
    run = result.run
    assert run.returncode == 0, run.stderr
    assert len(run.replay.models) == 1 and run.replay.finished == [0]
    rebuilt = run.replay.models[0]
    assert_same_model(_as_the_c_api_says_it(result.model), rebuilt)
    # the program ran the model once, on zeros (dynamic dims 1) of the inputs' types
    assert len(run.replay.runs) == 1
    fed = run.replay.runs[0].inputs
    assert [a.dtype for a in fed] == [result.model.tensors[i].np_dtype for i in result.model.inputs]
    assert all(not a.any() for a in fed)
    expected = _outputs(result.model, result.inputs)
    got = _outputs(rebuilt, result.inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        assert g.tobytes() == e.tobytes()


@pytest.mark.skipif(aarch64_toolchain() is None, reason="the ziglang package (the aarch64-linux-musl cross compiler, "
                    "zig cc) is not installed: pip install -e '.[test,cross]'")
@pytest.mark.parametrize("case_id", sorted(CASES))
def test_emitted_c_cross_compiles_for_aarch64_musl_and_records_the_same_calls(built, case_id):
    """Built with zig cc -target aarch64-linux-musl (OpenHarmony's libc) at the strict flags, with the shim; run
    under qemu-user where installed, its trace is byte for byte the host build's (same calls, arguments, data)."""
    result = built[case_id]
    if result.refused is not None:
        return  # (the host test checks the refusal)
    assert result.error is None and result.cross_error is None, result.error or result.cross_error
    assert result.cross_built
    if qemu_aarch64() is None:
        pytest.skip("qemu-aarch64 (qemu-user) is not installed: the aarch64 build is not run")
    assert result.same_trace_on_aarch64


def test_the_cases_cover_every_parameter_tensor_type_of_the_op_table():
    assert covered_param_types() == table_param_types()
    ids = set(CASES)
    assert any(i.startswith("op-") and CASES[i].per_channel_axis == 0 for i in ids)  # quantized per channel
    assert {"realworld-torch_cnn_dynamo", "onnx-light_resnet50", "models-tiny_cnn"} <= ids


# -- the example program: inputs from .npy files, outputs to .npy files ---------------------------------------------

def _emit_and_build(tmp_path, model: Model, name: str, **options):
    emitted = emit_c(model, tmp_path / name, name, **options)
    return emitted, build_emitted(emitted)


def _dynamic_model() -> Model:
    from nnrt_onnx.enums import OH_NN_DataType as DT
    from nnrt_onnx.enums import OH_NN_OperationType as OP
    from nnrt_onnx.enums import OH_NN_TensorType as TT

    model = Model()
    x = model.add_tensor_legacy(DT.OH_NN_FLOAT32, [-1, 3], name="x")
    b = model.add_tensor_legacy(DT.OH_NN_FLOAT32, [3], name="b")
    model.set_tensor_data(b, np.array([1.5, -2.0, 0.25], np.float32))
    act = model.add_tensor_legacy(DT.OH_NN_INT8, [], tensor_type=TT.OH_NN_ADD_ACTIVATIONTYPE, name="act")
    model.set_tensor_data(act, np.array([0], np.int8))
    y = model.add_tensor_legacy(DT.OH_NN_FLOAT32, [-1, 3], name="y")
    model.add_operation(OP.OH_NN_OPS_ADD, [act], [x, b], [y])
    model.specify_inputs_and_outputs([x], [y])
    model.finish()
    return model


def test_the_example_program_reads_npy_inputs_and_writes_npy_outputs(tmp_path):
    model = _dynamic_model()
    emitted, executable = _emit_and_build(tmp_path, model, "dyn")
    x = np.arange(15, dtype=np.float32).reshape(5, 3) - 7
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    out.mkdir()
    expected = x + np.array([1.5, -2.0, 0.25], np.float32)  # by hand: the model adds b
    assert _outputs(model, [x])[0].tobytes() == expected.tobytes()
    run = run_recorded(executable, ["-o", str(out), str(tmp_path / "x.npy")], cwd=emitted.directory,
                       outputs=[expected])  # what the shim's run gives the program
    assert run.returncode == 0, run.stderr
    fed = run.replay.runs[0].inputs
    assert len(fed) == 1 and fed[0].shape == (5, 3) and fed[0].tobytes() == x.tobytes()
    written = np.load(out / "output0.npy")
    assert written.dtype == np.float32 and written.shape == (5, 3) and written.tobytes() == expected.tobytes()


def test_the_example_program_names_a_wrong_input(tmp_path):
    emitted, executable = _emit_and_build(tmp_path, _dynamic_model(), "dyn")

    def run(array):  # refused before any NNRt call: no trace to replay
        np.save(tmp_path / "x.npy", array)
        return subprocess.run([str(executable), str(tmp_path / "x.npy")], cwd=emitted.directory, capture_output=True,
                              text=True, env={**os.environ, "NNRT_TRACE": str(tmp_path / "trace.bin")})

    done = run(np.zeros((5, 4), np.float32))
    assert done.returncode == 2 and "shape is not its input's" in done.stderr
    done = run(np.zeros((5, 3), np.float64))
    assert done.returncode == 2 and "data type or rank" in done.stderr


def test_embedded_weights_rebuild_the_same_model(tmp_path):
    model = _dynamic_model()
    emitted, executable = _emit_and_build(tmp_path, model, "embedded", embed_weights=True)
    assert emitted.weights is None and (emitted.directory / "embedded_weights.c").is_file()
    run = run_recorded(executable, cwd=tmp_path)  # no weights file anywhere
    assert run.returncode == 0, run.stderr
    assert_same_model(model, run.replay.models[0])


def test_a_wrong_weights_file_is_named_and_nothing_is_built(tmp_path):
    emitted, executable = _emit_and_build(tmp_path, _dynamic_model(), "dyn")
    emitted.weights.write_bytes(emitted.weights.read_bytes() + b"\0")
    run = run_recorded(executable, cwd=emitted.directory)
    assert run.returncode == 2 and "the weights file is not DYN_WEIGHTS_SIZE bytes" in run.stderr
    assert not run.replay.finished


def test_a_failing_call_is_named_with_its_operation(tmp_path):
    """The build checks every return code: AddOperation refused (a NULL parameter array, as the shim and the runtime
    refuse it) stops the build, the call and the operation named."""
    model = _dynamic_model()
    emitted = emit_c(model, tmp_path / "dyn", "dyn")
    source = emitted.directory / "dyn.c"
    text = source.read_text()
    broken = text.replace("CHECK(OH_NNModel_AddOperation(model, row->type, &row->params,",
                          "CHECK(OH_NNModel_AddOperation(model, row->type, NULL,")
    assert broken != text
    source.write_text(broken)
    run = run_recorded(build_emitted(emitted), cwd=emitted.directory)
    assert run.returncode == 1
    assert "OH_NNModel_AddOperation failed for operation 0 (ADD): code 2"  # INVALID_PARAMETER in run.stderr


def test_c_identifier_makes_names_usable_as_prefixes():
    assert c_identifier("2-model.v1") == "m_2_model_v1"
    assert c_identifier("int") == "m_int"
    assert c_identifier("OH_thing") == "m_OH_thing"


def test_a_model_the_c_api_cannot_express_is_refused_with_every_reason(tmp_path):
    from nnrt_onnx.enums import OH_NN_DataType as DT
    from nnrt_onnx.enums import OH_NN_OperationType as OP
    from nnrt_onnx.enums import OH_NN_TensorType as TT

    model = Model()
    x = model.add_tensor_legacy(DT.OH_NN_FLOAT32, [1] * 11, name="x")
    b = model.add_tensor_legacy(DT.OH_NN_FLOAT32, [1] * 11, name="b")
    act = model.add_tensor_legacy(DT.OH_NN_INT8, [], tensor_type=TT.OH_NN_ADD_ACTIVATIONTYPE, name="act")
    model.set_tensor_data(act, np.array([0], np.int8))
    y = model.add_tensor_legacy(DT.OH_NN_FLOAT32, [1] * 11, name="y")
    with pytest.raises(UserError, match="only a finished model"):
        emit_c(model, tmp_path / "m", "m")
    model.add_operation(OP.OH_NN_OPS_ADD, [act], [x, b], [y])
    model.specify_inputs_and_outputs([x, b], [y])
    model.finish()
    with pytest.raises(UserError, match=r"3 problem\(s\)") as refused:
        emit_c(model, tmp_path / "m", "m")
    for name in ("'x'", "'b'", "'y'"):
        assert f"{name}: rank 11: OH_NNTensorDesc_SetShape takes at most 10 dims" in str(refused.value)
    assert not (tmp_path / "m").exists()


# -- aarch64-linux-musl ---------------------------------------------------------------------------------------------

def test_capture_example_round_trips_through_export_and_check(invoke, tmp_path):
    """C (hand-written) -> trace -> .nnrt -> ONNX, checked against onnxruntime; and the values of the model are
    the ones the C source gives (bias, the no-activation parameter), by a hand computation."""
    example = Path(__file__).resolve().parent.parent / "examples" / "capture" / "add_relu.c"
    nnrt = tmp_path / "add_relu.nnrt"
    flags = [f"--cflag={flag}" for flag in ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic")]
    result = invoke("capture", str(example), *flags, "-o", str(nnrt))
    assert result.exit_code == 0, result.stderr
    assert "captured 2 operations, 5 tensors" in result.stdout
    from nnrt_onnx.serialization import load_model

    model = load_model(nnrt)
    x = np.array([[1.0, 2.0, -3.0, 4.0]], np.float32)
    assert _outputs(model, [x])[0].tolist() == [[1.5, 1.0, 0.0, 1.0]]  # relu(x + [0.5, -1, 2, -3])
    onnx_path = tmp_path / "add_relu.onnx"
    assert invoke("convert", str(nnrt), "-o", str(onnx_path)).exit_code == 0
    checked = invoke("check", str(onnx_path))
    assert checked.exit_code == 0 and "OK: all 1 output(s)" in checked.stdout, checked.stdout + checked.stderr
    direct = invoke("capture", str(example), "-o", str(tmp_path / "direct.onnx"))
    assert direct.exit_code == 0, direct.stderr
    import onnx

    graphs = [onnx.load(str(path)).graph for path in (tmp_path / "direct.onnx", onnx_path)]
    assert [[(n.op_type, list(n.input), list(n.output)) for n in g.node] for g in graphs] == \
           [[("Add", ["x", "bias"], ["sum"]), ("Relu", ["sum"], ["y"])]] * 2


def test_capture_names_what_the_program_did_wrong(invoke, tmp_path):
    source = tmp_path / "bad.c"
    source.write_text('#include "neural_network_runtime/neural_network_runtime.h"\n'
                      "int main(void) {\n"
                      "    OH_NNModel *model = OH_NNModel_Construct();\n"
                      "    uint32_t in[1] = {7}, out[1] = {0};\n"
                      "    OH_NN_UInt32Array inputs = {in, 1}, outputs = {out, 1};\n"
                      "    OH_NNModel_SpecifyInputsAndOutputs(model, &inputs, &outputs);\n"
                      "    return 0;\n}\n")
    result = invoke("capture", str(source), "-o", str(tmp_path / "bad.nnrt"))
    assert result.exit_code == 1
    assert "OH_NNModel_SpecifyInputsAndOutputs is refused by the NNRt API" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "bad.nnrt").exists()
    source.write_text("int main(void) { return 0; }\n")
    result = invoke("capture", str(source), "-o", str(tmp_path / "bad.nnrt"))
    assert result.exit_code == 1 and "made no NNRt call" in result.stderr
    source.write_text("int main(void) { return undeclared; }\n")
    result = invoke("capture", str(source), "-o", str(tmp_path / "bad.nnrt"))
    assert result.exit_code == 1 and "cannot build" in result.stderr and "undeclared" in result.stderr


def test_convert_emit_c_writes_the_directory(invoke, tmp_path):
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "c"
    result = invoke("convert", str(root / "models" / "tiny_mlp.onnx"), "--emit", "c", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == ["neural_network_runtime", "tiny_mlp.c", "tiny_mlp.h", "tiny_mlp.weights", "tiny_mlp_main.c"]
    result = invoke("convert", str(root / "models" / "tiny_cnn.nnrt"), "--emit", "c", "--embed-weights", "--name",
                    "cnn", "-o", str(out))
    assert result.exit_code == 0 and (out / "cnn_weights.c").is_file()
    result = invoke("convert", str(root / "models" / "tiny_cnn.nnrt"), "--embed-weights", "-o", str(tmp_path / "a.onnx"))
    assert result.exit_code == 2 and "go with --emit c" in result.stderr
    result = invoke("convert", str(root / "models" / "tiny_cnn.nnrt"), "--emit", "c", "--opset", "17", "-o", str(out))
    assert result.exit_code == 2 and "--opset" in result.stderr


def test_capture_usage_errors_exit_2(invoke, tmp_path):
    source = Path(__file__).resolve().parent.parent / "examples" / "capture" / "add_relu.c"
    result = invoke("capture", str(source), "-o", str(tmp_path / "model.txt"))
    assert result.exit_code == 2 and "FILE.nnrt or FILE.onnx" in result.stderr
    result = invoke("capture", str(tmp_path / "missing.c"), "-o", str(tmp_path / "m.nnrt"))
    assert result.exit_code == 2 and "Traceback" not in result.stderr


# -- traces ---------------------------------------------------------------------------------------------------------

def _record(name: str, args: list[tuple[str, bytes]], result: int) -> bytes:
    out = len(name).to_bytes(2, "little") + name.encode() + len(args).to_bytes(2, "little")
    for kind, data in args:
        out += kind.encode() + len(data).to_bytes(8, "little") + data
    return out + (result % (1 << 64)).to_bytes(8, "little")


def test_a_malformed_trace_is_named():
    from nnrt_onnx.csource.trace import TraceError, read_trace, replay

    with pytest.raises(TraceError, match="no NNRTTRC1 magic"):
        read_trace(b"NOTATRCE")
    whole = b"NNRTTRC1" + _record("OH_NNModel_Construct", [], 1)
    assert [(c.name, c.result) for c in read_trace(whole)] == [("OH_NNModel_Construct", 1)]
    with pytest.raises(TraceError, match="truncated"):
        read_trace(whole[:-3])
    with pytest.raises(TraceError, match="unknown argument kind 'z'"):
        read_trace(b"NNRTTRC1" + _record("OH_NNModel_Finish", [("z", b"")], 0))
    finish = _record("OH_NNModel_Finish", [("q", (7).to_bytes(8, "little"))], 0)
    with pytest.raises(TraceError, match="call #1 OH_NNModel_Finish names a model the trace never constructed"):
        replay(read_trace(whole + finish))
    with pytest.raises(TraceError, match=r"call #1 OH_NNModel_Finish is refused by the NNRt API"):
        replay(read_trace(whole + _record("OH_NNModel_Finish", [("q", (1).to_bytes(8, "little"))], 0)))


def test_capture_chooses_among_several_finished_models(invoke, tmp_path):
    example = Path(__file__).resolve().parent.parent / "examples" / "capture" / "add_relu.c"
    text = example.read_text().replace("int main(void) {", "static int run_once(void) {")
    (tmp_path / "twice.c").write_text(text + "\nint main(void) { return run_once() | run_once(); }\n")
    result = invoke("capture", str(tmp_path / "twice.c"), "-o", str(tmp_path / "m.nnrt"))
    assert result.exit_code == 1 and "finished 2 models: choose one with --model-index 0..1" in result.stderr
    result = invoke("capture", str(tmp_path / "twice.c"), "--model-index", "1", "-o", str(tmp_path / "m.nnrt"))
    assert result.exit_code == 0 and (tmp_path / "m.nnrt").is_file(), result.stderr
    result = invoke("capture", str(tmp_path / "twice.c"), "--model-index", "2", "-o", str(tmp_path / "m.nnrt"))
    assert result.exit_code == 1 and "--model-index 2: the program finished 2 model(s)" in result.stderr
