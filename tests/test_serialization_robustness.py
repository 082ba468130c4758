"""What we write, we can read; what we read never crashes (issue 12): .nnrt files at any size, cache entries, the
input readers (.npy, .npz, .pb) under hostile bytes, and the temp files of atomic writes under signals."""
from __future__ import annotations

import io
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import numpy_helper

from nnrt_onnx import Compilation, Model, NNRtError, TensorDesc
from nnrt_onnx import serialization as ser
from nnrt_onnx.cache import CompilationCache
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.errors import UserError
from nnrt_onnx.workflows.model_inputs import read_array

ROOT = Path(__file__).resolve().parent.parent


def relu_chain(n: int) -> Model:
    m = Model()
    x = first = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 4]))
    for _ in range(n):
        y = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 4]))
        m.add_operation(OP.OH_NN_OPS_RELU, [], [x], [y])
        x = y
    m.specify_inputs_and_outputs([first], [x])
    m.finish()
    return m


def small_model() -> Model:
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 4]), name="x")
    w = m.add_constant(np.arange(4, dtype=np.float32).reshape(1, 4), name="w")
    y = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 4]), name="y")
    act = m.add_param(__import__("nnrt_onnx").enums.OH_NN_TensorType.OH_NN_ADD_ACTIVATIONTYPE, 0)
    m.add_operation(OP.OH_NN_OPS_ADD, [act], [x, w], [y])
    m.specify_inputs_and_outputs([x], [y])
    m.finish()
    return m


# -- what we write, we can read ----------------------------------------------------------------------------------------

def test_a_100k_operation_model_saves_and_loads(tmp_path):
    """At ~70k operations the header outgrew the old 16 MiB read limit: convert succeeded, every load failed."""
    model = relu_chain(100_000)
    path = tmp_path / "big.nnrt"
    ser.save_model(model, path)
    magic, version, header_length = ser.PREFIX.unpack_from(path.read_bytes()[:16])
    assert header_length > 16 * 1024 * 1024  # past the old limit
    loaded = ser.load_model(path)
    assert len(loaded.operations) == 100_000 and loaded.outputs == model.outputs
    assert [op.inputs for op in loaded.operations[-3:]] == [op.inputs for op in model.operations[-3:]]


def test_the_writer_refuses_what_the_reader_would(tmp_path, monkeypatch):
    """A model whose header passes the limit is refused when written -- no file, no cache entry -- not at every
    later load."""
    model = relu_chain(50)
    header = len(ser._encode(model)[0]) - ser.PREFIX.size
    monkeypatch.setattr(ser, "MAX_HEADER_LENGTH", header - 1)
    with pytest.raises(NNRtError) as info:
        ser.save_model(model, tmp_path / "m.nnrt")
    assert info.value.code == RC.OH_NN_INVALID_PARAMETER and "too large for the .nnrt format" in info.value.message
    assert list(tmp_path.iterdir()) == []
    cache = CompilationCache(tmp_path, "cpu")
    with pytest.raises(NNRtError) as info:
        cache.store(1, model)
    assert info.value.code == RC.OH_NN_SAVE_CACHE_EXCEPTION
    assert not Path(cache.path).exists()
    compilation = Compilation(model)
    compilation.set_cache(str(tmp_path), 1)
    with pytest.raises(NNRtError) as info:
        compilation.build()
    assert info.value.code == RC.OH_NN_SAVE_CACHE_EXCEPTION and not Path(cache.path).exists()
    monkeypatch.setattr(ser, "MAX_HEADER_LENGTH", header)
    ser.save_model(model, tmp_path / "m.nnrt")
    assert len(ser.load_model(tmp_path / "m.nnrt").operations) == 50


def unknown_input_file(directory: Path) -> Path:
    """A .nnrt whose model input has data type OH_NN_UNKNOWN (the API accepts such a tensor)."""
    blob = ser.model_to_bytes(relu_chain(1))
    _, version, length = ser.PREFIX.unpack_from(blob)
    header = json.loads(blob[16:16 + length])
    header["tensors"][0]["dtype"] = "OH_NN_UNKNOWN"
    text = json.dumps(header, separators=(",", ":")).encode()
    path = directory / "unknown.nnrt"
    path.write_bytes(ser.PREFIX.pack(b"NNRT", version, len(text)) + text)
    return path


def test_an_unknown_dtype_operand_fails_the_build():
    model = ser.load_model(unknown_input_file(Path(__import__("tempfile").mkdtemp())))
    with pytest.raises(NNRtError) as info:
        Compilation(model).build()
    assert info.value.code == RC.OH_NN_FAILED and "OH_NN_UNKNOWN" in info.value.message


# -- the .nnrt and cache readers under structure-aware mutations -------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) |
                    st.text(max_size=8), lambda inner: st.lists(inner, max_size=3) |
                    st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


def _leaves(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, path + (i,))
    yield path


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_header_mutations_load_or_are_invalid_files(data):
    """Any JSON value at any place of a valid header (the file re-packed consistently): the model loads, or the
    error is OH_NN_INVALID_FILE."""
    blob = ser.model_to_bytes(small_model())
    _, version, length = ser.PREFIX.unpack_from(blob)
    header = json.loads(blob[16:16 + length])
    data_section = blob[ser._align(16 + length):]
    paths = list(_leaves(header))
    path = data.draw(st.sampled_from(paths))
    value = data.draw(JSON)
    if path:
        target = header
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    else:
        header = value
    text = json.dumps(header, separators=(",", ":")).encode()
    prefix = ser.PREFIX.pack(b"NNRT", version, len(text)) + text
    mutated = prefix + bytes(ser._align(len(prefix)) - len(prefix)) + data_section if data_section else prefix
    try:
        ser.model_from_bytes(mutated)
    except NNRtError as exc:
        assert exc.code == RC.OH_NN_INVALID_FILE, exc


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200), st.integers(0, 400))
def test_cache_files_with_hostile_bytes(tmp_path_factory, garbage, cut):
    directory = tmp_path_factory.mktemp("cache")
    cache = CompilationCache(directory, "cpu")
    cache.store(3, small_model())
    blob = Path(cache.path).read_bytes()
    Path(cache.path).write_bytes(blob[:cut] + garbage + blob[cut + len(garbage):])
    try:
        result = cache.lookup(3)
    except NNRtError as exc:
        assert exc.code in (RC.OH_NN_INVALID_FILE, RC.OH_NN_INVALID_PARAMETER), exc
    else:
        assert result is None or len(result.operations) == 1


# -- the input readers -------------------------------------------------------------------------------------------------

def npy_bytes(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def npz_bytes(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def pb_bytes(array) -> bytes:
    return numpy_helper.from_array(array).SerializeToString()


VALID = {".npy": npy_bytes(np.arange(6, dtype=np.float32).reshape(2, 3)),
         ".npz": npz_bytes(a=np.arange(4, dtype=np.int64), b=np.ones((2, 2), np.float16)),
         ".pb": pb_bytes(np.arange(5, dtype=np.int32))}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(VALID)), st.integers(0, 4096), st.binary(max_size=64), st.integers(0, 300))
def test_input_files_with_hostile_bytes(tmp_path_factory, suffix, position, garbage, cut):
    """A valid input file with bytes overwritten and/or cut: an array within the limit, or a UserError."""
    blob = VALID[suffix]
    position %= len(blob) + 1
    mutated = (blob[:position] + garbage + blob[position + len(garbage):])[:max(len(blob) - cut, 0) or None]
    path = tmp_path_factory.mktemp("in") / f"x{suffix}"
    path.write_bytes(mutated)
    try:
        result = read_array(path, max_bytes=1 << 20)
    except UserError:
        return
    arrays = result.values() if isinstance(result, dict) else [result]
    assert sum(a.nbytes for a in arrays) <= 1 << 20
    assert all(a.dtype != object for a in arrays)


def test_reading_matches_numpy_and_onnx(tmp_path):
    """The oracle of a successful read: numpy's and onnx's own readers."""
    for suffix, blob in VALID.items():
        path = tmp_path / f"x{suffix}"
        path.write_bytes(blob)
        got = read_array(path)
        if suffix == ".npz":
            with np.load(path) as expected:
                assert set(got) == set(expected.files)
                for key in got:
                    np.testing.assert_array_equal(got[key], expected[key])
        elif suffix == ".npy":
            np.testing.assert_array_equal(got, np.load(path))
        else:
            tensor = onnx.TensorProto()
            tensor.ParseFromString(blob)
            np.testing.assert_array_equal(got, numpy_helper.to_array(tensor))


def _npy_header(shape, dtype="<f4") -> bytes:
    header = repr({"descr": dtype, "fortran_order": False, "shape": tuple(shape)}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header


def test_an_npz_that_inflates_to_a_gibibyte_is_refused_from_its_header(tmp_path):
    """1 GiB of zeros deflates to ~1 MB: the size is read from the member's header, nothing is inflated."""
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("x.npy", "w", force_zip64=True) as member:
            member.write(_npy_header([1 << 28]))
            zeros = bytes(1 << 24)
            for _ in range(64):
                member.write(zeros)
    assert path.stat().st_size < 8 << 20
    with pytest.raises(UserError, match=r"holds 1 GiB, over the limit of 256 MiB"):
        read_array(path)
    with pytest.raises(UserError, match="holds 1 GiB"):
        read_array(path, max_bytes=512 << 20)


def test_an_npy_header_that_lies_about_its_size(tmp_path):
    path = tmp_path / "liar.npy"
    path.write_bytes(_npy_header([1 << 20]) + bytes(100))
    with pytest.raises(UserError, match="truncated"):
        read_array(path)
    path.write_bytes(_npy_header([1 << 40]) + bytes(100))
    with pytest.raises(UserError, match="over the limit"):
        read_array(path)
    path.write_bytes(_npy_header([2], "|O") + bytes(16))
    with pytest.raises(UserError, match="never unpickled"):
        read_array(path)


def test_a_pb_whose_dims_outgrow_its_data(tmp_path):
    tensor = numpy_helper.from_array(np.ones(2, np.float32))
    tensor.dims[:] = [1 << 40]
    path = tmp_path / "x.pb"
    path.write_bytes(tensor.SerializeToString())
    with pytest.raises(UserError, match="needs"):
        read_array(path)
    tensor = numpy_helper.from_array(np.ones(2, np.float32))
    tensor.data_location = onnx.TensorProto.EXTERNAL
    tensor.ClearField("raw_data")
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "/etc/passwd"
    path.write_bytes(tensor.SerializeToString())
    with pytest.raises(UserError, match="external data"):
        read_array(path)


# -- temp files and signals --------------------------------------------------------------------------------------------

_WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from nnrt_onnx.serialization import atomic_write

    def chunks():
        yield b"x" * 1000
        print("writing", flush=True)
        time.sleep(60)
        yield b"y"

    atomic_write(sys.argv[2], chunks())
""")


def _default_signals() -> None:
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)


def _writer(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    target = tmp_path / "out" / "model.nnrt"
    target.parent.mkdir()
    # the writer starts with the default actions (under nohup the test runner itself ignores SIGHUP, and a process
    # that ignores a signal is left to ignore it: no handler is installed then)
    process = subprocess.Popen([sys.executable, str(script), str(ROOT), str(target)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals)
    assert process.stdout.readline().strip() == "writing", process.stderr.read()
    assert len(list(target.parent.iterdir())) == 1  # the temp file, mid-write
    return process, target


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_mid_write_leaves_no_temp_file(tmp_path, signum):
    process, target = _writer(tmp_path)
    process.send_signal(signum)
    code = process.wait(30)
    assert code != 0
    if signum != signal.SIGINT:
        assert code == -signum  # the signal's default course, after the cleanup
    assert list(target.parent.iterdir()) == []


def test_the_next_write_sweeps_what_kill_9_left(tmp_path):
    process, target = _writer(tmp_path)
    process.kill()
    process.wait(30)
    (orphan,) = target.parent.iterdir()
    assert orphan.name.startswith(f".{target.name}.{process.pid}.")
    ser.atomic_write(target, [b"fresh"])  # too recent: kept (its writer might be in another pid namespace)
    assert orphan.exists()
    old = time.time() - 3600
    os.utime(orphan, (old, old))
    unrelated = target.parent / ".other.nnrt.1.abc.tmp"
    unrelated.write_bytes(b"")
    os.utime(unrelated, (old, old))
    ser.atomic_write(target, [b"fresher"])
    assert not orphan.exists() and unrelated.exists() and target.read_bytes() == b"fresher"


def test_sigterm_during_convert_leaves_nothing(tmp_path):
    """`nnrt-onnx convert` of a model that takes seconds, terminated: no output, no temp file."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu" if i % 2 else "Neg", [f"t{i}" if i else "x"], [f"t{i + 1}"]) for i in range(3000)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("t3000", TensorProto.FLOAT, [2])])
    source = tmp_path / "long.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(source))
    out = tmp_path / "out"
    out.mkdir()
    process = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "convert", str(source), "-o",
                                str(out / "m.nnrt")],
                               env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    time.sleep(1.5)
    process.send_signal(signal.SIGTERM)
    process.wait(60)
    assert list(out.iterdir()) in ([], [out / "m.nnrt"])  # (a fast machine may have finished: then a whole file)
    if process.returncode != 0:
        assert process.returncode == -signal.SIGTERM and list(out.iterdir()) == []
