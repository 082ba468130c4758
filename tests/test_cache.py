"""The compile cache behind OH_NNCompilation_SetCache: every documented case, corruption and atomic stores."""
from __future__ import annotations

import errno
import hashlib
import mmap
import os
import struct

import numpy as np
import pytest
import support

from nnrt_onnx import cache as cache_module
from nnrt_onnx.cache import CACHE_FILE_NAME, CACHE_FORMAT_VERSION, CACHE_MAGIC, CompilationCache
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as TT
from nnrt_onnx.errors import NNRtError
from nnrt_onnx.model import Model
from nnrt_onnx.serialization import model_to_bytes
from nnrt_onnx.tensor import QuantParam, TensorDesc

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def conv_model(fill: float = 1.0) -> Model:
    return support.conv_model(np.full((3, 3, 3, 2), fill, np.float32))


def quant_model() -> Model:
    m = Model()
    a = m.add_tensor_legacy(DT.OH_NN_INT8, [-1, 4], QuantParam.per_tensor(0.5, 1), name="a")
    b = m.add_constant(np.arange(4, dtype=np.int8), name="b", quant=QuantParam([0.1] * 4, [0, 1, 2, 3], [8] * 4, 0))
    out = m.add_tensor_legacy(DT.OH_NN_INT8, [-1, 4], QuantParam.per_tensor(1.0), name="out")
    act = m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 1)
    m.add_operation(OP.OH_NN_OPS_ADD, [act], [a, b], [out])
    m.specify_inputs_and_outputs([a], [out])
    m.finish()
    return m


def expect(code, call, *args, contains: str | None = None) -> NNRtError:
    with pytest.raises(NNRtError) as info:
        call(*args)
    assert info.value.code == code, info.value
    if contains is not None:
        assert contains in info.value.message, info.value.message
    return info.value


def weight_of(model: Model) -> np.ndarray:
    return model.tensors[1].data


@pytest.fixture
def cache(tmp_path) -> CompilationCache:
    return CompilationCache(tmp_path, "CPU")


# -- the documented SetCache cases -----------------------------------------------------------------------------
def test_missing_cache_dir_is_invalid_path(tmp_path):
    missing = CompilationCache(tmp_path / "nope", "CPU")
    expect(RC.OH_NN_INVALID_PATH, missing.lookup, 1)
    expect(RC.OH_NN_INVALID_PATH, missing.store, 1, conv_model())
    assert not (tmp_path / "nope").exists()


def test_cache_dir_that_is_a_file_is_invalid_path(tmp_path):
    (tmp_path / "file").write_bytes(b"x")
    not_dir = CompilationCache(tmp_path / "file", "CPU")
    expect(RC.OH_NN_INVALID_PATH, not_dir.lookup, 1)
    expect(RC.OH_NN_INVALID_PATH, not_dir.store, 1, conv_model())


@pytest.mark.skipif(IS_ROOT, reason="root ignores directory permissions")
def test_inaccessible_cache_dir_is_invalid_path(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        expect(RC.OH_NN_INVALID_PATH, CompilationCache(locked, "CPU").lookup, 1)
    finally:
        locked.chmod(0o700)


def test_no_cache_file_returns_none(cache, tmp_path):
    assert cache.lookup(1) is None
    assert list(tmp_path.iterdir()) == []  # lookup creates nothing


def test_same_version_returns_the_cached_model(cache, tmp_path):
    model = quant_model()
    cache.store(3, model)
    assert (tmp_path / "CPU" / CACHE_FILE_NAME).is_file()
    cached = cache.lookup(3)
    assert cached is not None and cached.finished
    assert model_to_bytes(cached) == model_to_bytes(model)
    assert cached.operations[0].values == {"activation_type": 1}
    assert cached.tensors[1].quant == model.tensors[1].quant
    assert cached.tensors[0].dims == (-1, 4)


def test_cached_weights_are_memory_mapped(cache):
    cache.store(1, conv_model(2.0))
    weight = weight_of(cache.lookup(1))
    base = weight
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)
    np.testing.assert_array_equal(weight, np.full((3, 3, 3, 2), 2.0, np.float32))
    assert not weight.flags.writeable


def test_older_cached_version_returns_none_and_store_overwrites(cache):
    cache.store(1, conv_model(1.0))
    assert cache.lookup(2) is None  # caller rebuilds ...
    cache.store(2, conv_model(5.0))  # ... and overwrites
    np.testing.assert_array_equal(weight_of(cache.lookup(2)), np.full((3, 3, 3, 2), 5.0, np.float32))


def test_newer_cached_version_is_invalid_parameter_without_reading_the_model(cache, monkeypatch):
    cache.store(7, conv_model())
    with open(cache.path, "r+b") as stream:  # corrupt the payload: the lookup must not notice
        stream.seek(200)
        byte = stream.read(1)
        stream.seek(200)
        stream.write(bytes([byte[0] ^ 0xFF]))

    def must_not_be_called(*args, **kwargs):
        raise AssertionError("the cached model was read")

    monkeypatch.setattr(cache_module, "model_from_bytes", must_not_be_called)
    monkeypatch.setattr(cache_module.mmap, "mmap", must_not_be_called)
    expect(RC.OH_NN_INVALID_PARAMETER, cache.lookup, 6, contains="newer")
    expect(RC.OH_NN_INVALID_PARAMETER, cache.lookup, 0)


def test_devices_have_separate_directories(tmp_path):
    cpu, gpu = CompilationCache(tmp_path, "CPU"), CompilationCache(tmp_path, "GPU")
    cpu.store(1, conv_model(1.0))
    assert gpu.lookup(1) is None
    gpu.store(1, conv_model(3.0))
    assert float(weight_of(cpu.lookup(1)).flat[0]) == 1.0
    assert float(weight_of(gpu.lookup(1)).flat[0]) == 3.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CPU", "GPU"]


@pytest.mark.parametrize("name", ["../escape", "/abs/path", "..", ".", "dev:0 (npu)", "ü"])
def test_device_names_stay_inside_the_cache_dir(tmp_path, name):
    root = tmp_path / "cache"
    root.mkdir()
    cache = CompilationCache(root, name)
    cache.store(1, conv_model())
    assert os.path.dirname(os.path.dirname(os.path.abspath(cache.path))) == str(root)
    assert cache.lookup(1) is not None
    assert [p.name for p in root.iterdir()] == [os.path.basename(cache.device_dir)]


def test_file_layout(cache):
    model = conv_model()
    cache.store(0xFFFFFFFF, model)
    raw = open(cache.path, "rb").read()
    payload = model_to_bytes(model)
    magic, fmt, version, reserved, length, digest, tail = struct.unpack_from("<4sIIIQ32s8s", raw)
    assert (magic, fmt, version, reserved, tail) == (CACHE_MAGIC, CACHE_FORMAT_VERSION, 0xFFFFFFFF, 0, bytes(8))
    assert length == len(payload) and raw[64:] == payload
    assert digest == hashlib.sha256(payload).digest()


# -- incomplete / corrupt / unreadable cache files -------------------------------------------------------------
def _rewrite(cache: CompilationCache, raw: bytes) -> None:
    with open(cache.path, "wb") as stream:
        stream.write(raw)


def test_truncated_cache_files_are_invalid_file(cache):
    cache.store(1, conv_model())
    raw = open(cache.path, "rb").read()
    for length in list(range(0, 80)) + list(range(80, len(raw), 13)) + [len(raw) - 1]:
        _rewrite(cache, raw[:length])
        expect(RC.OH_NN_INVALID_FILE, cache.lookup, 1)
        if length >= 64:  # an incomplete older cache is reported too, not silently rebuilt
            expect(RC.OH_NN_INVALID_FILE, cache.lookup, 2)
            expect(RC.OH_NN_INVALID_PARAMETER, cache.lookup, 0)


def test_trailing_bytes_are_invalid_file(cache):
    cache.store(1, conv_model())
    _rewrite(cache, open(cache.path, "rb").read() + b"\0")
    expect(RC.OH_NN_INVALID_FILE, cache.lookup, 1, contains="incomplete")


def test_every_payload_byte_flip_is_detected(cache):
    cache.store(1, conv_model())
    raw = open(cache.path, "rb").read()
    for position in range(64, len(raw), 3):
        corrupt = bytearray(raw)
        corrupt[position] ^= 0x01
        _rewrite(cache, bytes(corrupt))
        expect(RC.OH_NN_INVALID_FILE, cache.lookup, 1, contains="SHA-256")


@pytest.mark.parametrize("field, value, message", [
    (slice(0, 4), b"NNRT", "magic"),
    (slice(4, 8), struct.pack("<I", 2), "format"),
    (slice(4, 8), struct.pack("<I", 0), "format"),
    (slice(12, 16), struct.pack("<I", 1), "reserved"),
    (slice(56, 64), b"\1" * 8, "reserved"),
    (slice(16, 24), struct.pack("<Q", 2**63), "incomplete"),
    (slice(24, 56), bytes(32), "SHA-256"),
])
def test_corrupt_cache_header(cache, field, value, message):
    cache.store(1, conv_model())
    raw = bytearray(open(cache.path, "rb").read())
    raw[field] = value
    _rewrite(cache, bytes(raw))
    expect(RC.OH_NN_INVALID_FILE, cache.lookup, 1, contains=message)


@pytest.mark.parametrize("payload", [b"", b"garbage", b"NNRT" + bytes(60), model_to_bytes(conv_model())[:-1]])
def test_valid_checksum_but_invalid_model(cache, payload):
    os.makedirs(cache.device_dir)
    head = struct.pack("<4sIIIQ32s8s", CACHE_MAGIC, CACHE_FORMAT_VERSION, 1, 0, len(payload),
                       hashlib.sha256(payload).digest(), bytes(8))
    _rewrite(cache, head + payload)
    expect(RC.OH_NN_INVALID_FILE, cache.lookup, 1)


def test_cache_file_that_is_a_directory_is_invalid_file(cache):
    os.makedirs(cache.path)
    expect(RC.OH_NN_INVALID_FILE, cache.lookup, 1)


@pytest.mark.skipif(IS_ROOT, reason="root can read any file")
def test_unreadable_cache_file_is_invalid_file(cache):
    cache.store(1, conv_model())
    os.chmod(cache.path, 0)
    try:
        expect(RC.OH_NN_INVALID_FILE, cache.lookup, 1)
    finally:
        os.chmod(cache.path, 0o600)


# -- store -----------------------------------------------------------------------------------------------------
def test_store_failure_is_save_cache_exception_and_keeps_the_old_cache(cache, monkeypatch, tmp_path):
    cache.store(1, conv_model(1.0))
    before = open(cache.path, "rb").read()

    def broken_fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    expect(RC.OH_NN_SAVE_CACHE_EXCEPTION, cache.store, 2, conv_model(9.0))
    monkeypatch.undo()
    assert open(cache.path, "rb").read() == before
    assert os.listdir(cache.device_dir) == [CACHE_FILE_NAME]  # no temp file left
    assert float(weight_of(cache.lookup(1)).flat[0]) == 1.0


def test_store_failure_mid_write(cache, monkeypatch):
    cache.store(1, conv_model(1.0))
    before = open(cache.path, "rb").read()
    real_write = cache_module.atomic_write

    def failing_write(path, chunks):
        def generate():
            it = iter(chunks)
            yield next(it)
            yield next(it)
            raise OSError(errno.EIO, "I/O error")

        real_write(path, generate())

    monkeypatch.setattr(cache_module, "atomic_write", failing_write)
    expect(RC.OH_NN_SAVE_CACHE_EXCEPTION, cache.store, 2, conv_model(9.0))
    assert open(cache.path, "rb").read() == before
    assert os.listdir(cache.device_dir) == [CACHE_FILE_NAME]


def test_store_when_device_dir_cannot_be_created(tmp_path):
    (tmp_path / "CPU").write_bytes(b"a file where the device directory should be")
    expect(RC.OH_NN_SAVE_CACHE_EXCEPTION, CompilationCache(tmp_path, "CPU").store, 1, conv_model())


@pytest.mark.skipif(IS_ROOT, reason="root ignores directory permissions")
def test_store_into_read_only_dir(tmp_path):
    tmp_path.chmod(0o500)
    try:
        expect(RC.OH_NN_SAVE_CACHE_EXCEPTION, CompilationCache(tmp_path, "CPU").store, 1, conv_model())
    finally:
        tmp_path.chmod(0o700)


def test_cached_model_survives_overwrite(cache):
    cache.store(1, conv_model(1.0))
    old = cache.lookup(1)
    cache.store(2, conv_model(4.0))  # atomic replace: the old mapping stays valid
    np.testing.assert_array_equal(weight_of(old), np.full((3, 3, 3, 2), 1.0, np.float32))
    assert float(weight_of(cache.lookup(2)).flat[0]) == 4.0


def test_store_unfinished_model(cache):
    m = Model()
    m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1]))
    expect(RC.OH_NN_INVALID_PARAMETER, cache.store, 1, m)
    expect(RC.OH_NN_INVALID_PARAMETER, cache.store, 1, None)
    assert cache.lookup(1) is None


@pytest.mark.parametrize("version", [-1, 2**32, True, "1", 1.0, None])
def test_bad_versions(cache, version):
    expect(RC.OH_NN_INVALID_PARAMETER, cache.lookup, version)
    expect(RC.OH_NN_INVALID_PARAMETER, cache.store, version, conv_model())


@pytest.mark.parametrize("name", ["", None, 3])
def test_bad_device_names(tmp_path, name):
    expect(RC.OH_NN_INVALID_PARAMETER, CompilationCache, tmp_path, name)
