"""The .nnrt model file: round trips, zero-copy loading, atomic writes and a hostile-file battery."""
from __future__ import annotations

import errno
import json
import math
import mmap
import os
import struct

import numpy as np
import pytest
import support
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnrt_onnx import serialization as ser
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_Format as FMT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as TT
from nnrt_onnx.errors import NNRtError
from nnrt_onnx.model import Model
from nnrt_onnx.serialization import FORMAT_VERSION, load_model, model_from_bytes, model_to_bytes, save_model
from nnrt_onnx.tensor import QuantParam, TensorDesc


# -- models ----------------------------------------------------------------------------------------------------
def conv_model() -> Model:
    return support.conv_model(np.arange(54, dtype=np.float32).reshape(3, 3, 3, 2), np.array([0.5, -1.0, 2.0], np.float32))


def rich_model() -> Model:
    """Quantized full connection (per-channel weights, per-tensor activations), BOOL/INT64/INT8 scalar params,
    an ADD on dynamic dims, constants of every dtype, names (non-ASCII too), a non-default format."""
    m = Model()
    x = m.add_tensor_legacy(DT.OH_NN_INT8, [2, 4], QuantParam.per_tensor(0.5, 3), name="入力 x")
    w = m.add_constant(np.arange(-12, 12, dtype=np.int8).reshape(6, 4), name="fc.weight",
                       quant=QuantParam([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0, 1, -1, 2, -2, 0], [8] * 6, axis=0))
    bias = m.add_constant(np.arange(6, dtype=np.int32), name="fc.bias")
    act = m.add_param(TT.OH_NN_FULL_CONNECTION_ACTIVATIONTYPE, 1)
    has_bias = m.add_param(TT.OH_NN_FULL_CONNECTION_HAS_BIAS, True)
    axis = m.add_param(TT.OH_NN_FULL_CONNECTION_AXIS, 1)
    y = m.add_tensor_legacy(DT.OH_NN_INT8, [2, 6], QuantParam([0.25], [-4], [8]), name="fc.out")
    m.add_operation(OP.OH_NN_OPS_FULL_CONNECTION, [act, has_bias, axis], [x, w, bias], [y])

    a = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [-1, 3]), name="dyn.a")
    c = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [-1, -1]), name="dyn.c")
    z = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [-1, 3]), name="dyn.z")
    add_act = m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 2)
    m.add_operation(OP.OH_NN_OPS_ADD, [add_act], [a, c], [z])

    for dtype in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                  np.float16, np.float32, np.float64):
        m.add_constant((np.arange(6).reshape(2, 3) * 37 % 101 - 3).astype(dtype) if dtype != np.bool_ else
                       np.array([[True, False, True], [False, False, True]]), name=f"const.{np.dtype(dtype).name}")
    m.add_constant(np.float32(7.25), name="scalar")  # dims ()
    odd = m.add_tensor_legacy(DT.OH_NN_UNKNOWN, [5])  # unknown dtype, empty name
    m.set_tensor_name(odd, "")
    m.tensors[odd].format = FMT.OH_NN_FORMAT_NCHW
    special = m.add_tensor_legacy(DT.OH_NN_UINT8, [4], QuantParam([math.nan, math.inf, -0.0, 1e-300], [0, 255, 7, -9], [8] * 4))
    m.set_tensor_name(special, "special\udc80")  # a lone surrogate survives too
    m.specify_inputs_and_outputs([x, a, c], [y, z])
    m.finish()
    return m


def assert_same_model(a: Model, b: Model) -> None:
    assert b.finished
    assert len(a.tensors) == len(b.tensors)
    for i, (s, t) in enumerate(zip(a.tensors, b.tensors)):
        assert (s.dtype, s.dims, s.tensor_type, s.name, s.format) == (t.dtype, t.dims, t.tensor_type, t.name,
                                                                       t.format), i
        if s.quant is None:
            assert t.quant is None, i
        else:
            assert t.quant is not None, i
            assert (s.quant.zero_points, s.quant.num_bits, s.quant.axis) == (t.quant.zero_points, t.quant.num_bits,
                                                                             t.quant.axis), i
            assert [struct.pack("<d", v) for v in s.quant.scales] == [struct.pack("<d", v) for v in t.quant.scales]
        if s.data is None:
            assert t.data is None, i
        else:
            assert t.data.dtype == s.data.dtype and t.data.shape == s.data.shape, i
            assert t.data.tobytes() == s.data.tobytes(), i
            assert not t.data.flags.writeable
    assert [(o.op, o.params, o.inputs, o.outputs) for o in a.operations] == \
           [(o.op, o.params, o.inputs, o.outputs) for o in b.operations]
    assert [o.values for o in a.operations] == [o.values for o in b.operations]
    assert (a.inputs, a.outputs) == (b.inputs, b.outputs)


def buffer_owner(array: np.ndarray):
    """The object at the end of an array's base chain (memoryviews resolved to what they view)."""
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    while isinstance(base, memoryview):
        base = base.obj
    return base


# -- helpers for hand-made files -------------------------------------------------------------------------------
def split(blob: bytes) -> tuple[dict, bytes]:
    magic, version, length = struct.unpack_from("<4sIQ", blob)
    header = json.loads(blob[16:16 + length])
    start = -(-(16 + length) // 64) * 64 if header["data_size"] else 16 + length
    return header, blob[start:]


def pack(header, data: bytes = b"", *, version: int = FORMAT_VERSION, magic: bytes = b"NNRT") -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    blob = struct.pack("<4sIQ", magic, version, len(text)) + text
    if data:
        blob += bytes(-len(blob) % 64) + data
    return blob


def edited(blob: bytes, edit) -> bytes:
    header, data = split(blob)
    edit(header)  # edits mutate the header in place
    return pack(header, data)


def expect_invalid_file(blob, contains: str | None = None) -> NNRtError:
    with pytest.raises(NNRtError) as info:
        model_from_bytes(blob)
    assert info.value.code == RC.OH_NN_INVALID_FILE, info.value
    if contains is not None:
        assert contains in info.value.message, info.value.message
    return info.value


def load_or_invalid(blob) -> None:
    """Hostile input may only ever produce a finished model or OH_NN_INVALID_FILE."""
    try:
        model = model_from_bytes(blob)
    except NNRtError as error:
        assert error.code == RC.OH_NN_INVALID_FILE, error
    else:
        assert model.finished


@pytest.fixture(scope="module")
def conv_blob() -> bytes:
    return model_to_bytes(conv_model())


# -- round trips -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [conv_model, rich_model])
def test_round_trip(build):
    model = build()
    blob = model_to_bytes(model)
    loaded = model_from_bytes(blob)
    assert_same_model(model, loaded)
    assert model_to_bytes(loaded) == blob  # deterministic and lossless


def test_round_trip_values_and_scalars():
    loaded = model_from_bytes(model_to_bytes(rich_model()))
    fc, add = loaded.operations
    assert fc.values == {"activation_type": 1, "has_bias": True, "axis": 1, "use_axis": True}
    assert add.values == {"activation_type": 2}
    scalar = next(t for t in loaded.tensors if t.name == "scalar")
    assert scalar.dims == () and scalar.data.shape == () and float(scalar.data) == 7.25
    dyn = next(t for t in loaded.tensors if t.name == "dyn.c")
    assert dyn.dims == (-1, -1) and dyn.is_dynamic and dyn.data is None
    weight = next(t for t in loaded.tensors if t.name == "fc.weight")
    assert weight.quant.count == 6 and weight.quant.axis == 0 and weight.quant.zero_points == [0, 1, -1, 2, -2, 0]
    assert next(t for t in loaded.tensors if t.name == "").format == FMT.OH_NN_FORMAT_NCHW


def test_layout(conv_blob):
    assert conv_blob[:4] == b"NNRT"
    magic, version, length = struct.unpack_from("<4sIQ", conv_blob)
    assert version == FORMAT_VERSION == 1
    header = json.loads(conv_blob[16:16 + length])
    assert isinstance(header, dict)
    data_start = -(-(16 + length) // 64) * 64
    with_data = [t for t in header["tensors"] if t["data"] is not None]
    assert len(with_data) == 3
    for entry in with_data:
        assert (data_start + entry["data"]["offset"]) % 64 == 0
    assert len(conv_blob) == data_start + header["data_size"]
    assert header["operations"] == [{"op": "OH_NN_OPS_CONV2D", "params": [3], "inputs": [0, 1, 2], "outputs": [4]}]
    assert header["tensors"][3]["tensor_type"] == "OH_NN_CONV2D_PAD_MODE"


def test_unfinished_model_is_refused(tmp_path):
    m = Model()
    m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1]))
    with pytest.raises(NNRtError) as info:
        model_to_bytes(m)
    assert info.value.code == RC.OH_NN_INVALID_PARAMETER
    with pytest.raises(NNRtError) as info:
        save_model(m, tmp_path / "m.nnrt")
    assert info.value.code == RC.OH_NN_INVALID_PARAMETER
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, lambda b: np.frombuffer(b, np.uint8)])
def test_bytes_like_inputs_are_zero_copy(conv_blob, wrap):
    buffer = wrap(conv_blob)
    loaded = model_from_bytes(buffer)
    assert_same_model(conv_model(), loaded)
    weight = loaded.tensors[1].data
    assert np.shares_memory(weight, np.frombuffer(buffer, np.uint8))


@pytest.mark.parametrize("bad", [None, "NNRT", 12, 1.5, object()])
def test_not_a_buffer(bad):
    with pytest.raises(NNRtError) as info:
        model_from_bytes(bad)
    assert info.value.code == RC.OH_NN_INVALID_PARAMETER


# -- files: mmap and atomic writes -----------------------------------------------------------------------------
def test_save_and_load_is_zero_copy(tmp_path):
    path = tmp_path / "conv.nnrt"
    model = conv_model()
    save_model(model, path)
    assert path.read_bytes() == model_to_bytes(model)
    loaded = load_model(path)
    assert_same_model(model, loaded)
    for index in (1, 2, 3):
        owner = buffer_owner(loaded.tensors[index].data)
        assert isinstance(owner, mmap.mmap), type(owner)
    assert buffer_owner(loaded.tensors[1].data) is buffer_owner(loaded.tensors[2].data)
    assert not loaded.tensors[1].data.flags.writeable


def test_loaded_weights_survive_replacing_the_file(tmp_path):
    path = tmp_path / "m.nnrt"
    save_model(conv_model(), path)
    loaded = load_model(path)
    save_model(rich_model(), path)  # os.replace: the mapping keeps the old inode
    np.testing.assert_array_equal(loaded.tensors[1].data, np.arange(54, dtype=np.float32).reshape(3, 3, 3, 2))
    assert len(load_model(path).tensors) == len(rich_model().tensors)


def test_load_errors(tmp_path):
    with pytest.raises(NNRtError) as info:
        load_model(tmp_path / "missing.nnrt")
    assert info.value.code == RC.OH_NN_INVALID_PATH
    with pytest.raises(NNRtError) as info:
        load_model(tmp_path)
    assert info.value.code == RC.OH_NN_INVALID_PATH
    (tmp_path / "empty.nnrt").write_bytes(b"")
    with pytest.raises(NNRtError) as info:
        load_model(tmp_path / "empty.nnrt")
    assert info.value.code == RC.OH_NN_INVALID_FILE
    (tmp_path / "junk.nnrt").write_bytes(b"NNRT" + bytes(100))
    with pytest.raises(NNRtError) as info:
        load_model(tmp_path / "junk.nnrt")
    assert info.value.code == RC.OH_NN_INVALID_FILE


def test_save_into_missing_directory(tmp_path):
    with pytest.raises(NNRtError) as info:
        save_model(conv_model(), tmp_path / "nope" / "m.nnrt")
    assert info.value.code == RC.OH_NN_INVALID_PATH


def test_failed_fsync_leaves_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "m.nnrt"
    save_model(conv_model(), path)
    before = path.read_bytes()

    def broken_fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(NNRtError) as info:
        save_model(rich_model(), path)
    assert info.value.code == RC.OH_NN_FAILED
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.nnrt"]  # no temp file left behind


def test_failure_mid_write_leaves_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "m.nnrt"
    save_model(conv_model(), path)
    before = path.read_bytes()
    real = ser.encode_chunks

    def failing_chunks(model):
        chunks = real(model)

        def generate():
            yield chunks[0]
            yield chunks[1]
            raise OSError(errno.EIO, "I/O error")

        return generate()

    monkeypatch.setattr(ser, "encode_chunks", failing_chunks)
    with pytest.raises(NNRtError) as info:
        save_model(rich_model(), path)
    assert info.value.code == RC.OH_NN_FAILED
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.nnrt"]
    assert_same_model(conv_model(), load_model(path))


def test_interrupted_write_leaves_old_file_intact(tmp_path):
    path = tmp_path / "m.nnrt"
    path.write_bytes(b"old")

    def chunks():
        yield b"new partial data"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ser.atomic_write(path, chunks())
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.nnrt"]


# -- hostile files ---------------------------------------------------------------------------------------------
def test_empty():
    expect_invalid_file(b"", "empty")
    expect_invalid_file(bytearray())


def test_wrong_magic(conv_blob):
    expect_invalid_file(b"ONNX" + conv_blob[4:], "magic")
    expect_invalid_file(b"\x08\x07\x12\x00" + bytes(100), "magic")


def test_versions(conv_blob):
    error = expect_invalid_file(conv_blob[:4] + struct.pack("<I", FORMAT_VERSION + 1) + conv_blob[8:], "newer")
    assert "upgrade" in error.message
    expect_invalid_file(conv_blob[:4] + struct.pack("<I", 0xFFFFFFFF) + conv_blob[8:], "newer")
    expect_invalid_file(conv_blob[:4] + struct.pack("<I", 0) + conv_blob[8:], "version 0")


def test_every_truncation(conv_blob):
    for length in range(len(conv_blob)):
        expect_invalid_file(conv_blob[:length])


def test_every_truncation_rich():
    blob = model_to_bytes(rich_model())
    for length in range(0, len(blob), 7):
        expect_invalid_file(blob[:length])
    expect_invalid_file(blob[:-1])


def test_trailing_bytes(conv_blob):
    expect_invalid_file(conv_blob + b"\0", "trailing")
    expect_invalid_file(conv_blob + bytes(64), "trailing")


def test_every_prefix_byte_flipped(conv_blob):
    for position in range(16):
        for mask in (0x01, 0x80, 0xFF):
            blob = bytearray(conv_blob)
            blob[position] ^= mask
            expect_invalid_file(bytes(blob))


def test_every_header_byte_flipped_to_non_ascii(conv_blob):
    length = struct.unpack_from("<Q", conv_blob, 8)[0]
    for position in range(16, 16 + length):
        blob = bytearray(conv_blob)
        blob[position] ^= 0xFF  # an isolated byte >= 0x80 is never valid UTF-8
        expect_invalid_file(bytes(blob))


def test_header_bit_flips_never_crash(conv_blob):
    length = struct.unpack_from("<Q", conv_blob, 8)[0]
    for position in range(16, 16 + length):
        for mask in (0x01, 0x02, 0x04, 0x10, 0x20):
            blob = bytearray(conv_blob)
            blob[position] ^= mask
            load_or_invalid(bytes(blob))


@pytest.mark.parametrize("length", [2**63, 2**64 - 1, 2**40, ser.MAX_HEADER_LENGTH + 1, 10**6])
def test_huge_header_length(conv_blob, length):
    expect_invalid_file(conv_blob[:8] + struct.pack("<Q", length) + conv_blob[16:])


def test_header_length_past_end():
    expect_invalid_file(struct.pack("<4sIQ", b"NNRT", 1, 50) + b"{}", "truncated")


@pytest.mark.parametrize("header", [b"[]", b"1", b'"x"', b"null", b"true", b"{", b"", b"{}", b"\xff\xfe{}",
                                    b'{"tensors": NaN}', b"[" * 100000 + b"]" * 100000,
                                    b'{"data_size": ' + b"9" * 5000 + b"}", b"\x00" * 8])
def test_header_not_a_valid_object(header):
    expect_invalid_file(pack(header))


def _tensor(header, index, **changes):
    header["tensors"][index].update(changes)


@pytest.mark.parametrize("edit, message", [
    (lambda h: _tensor(h, 0, dims=[2**31, 2**31, 2**31]), "dims"),
    (lambda h: _tensor(h, 0, dims=[10**30]), "dims"),
    (lambda h: _tensor(h, 0, dims=[1] * 201), "rank"),
    (lambda h: _tensor(h, 0, dims=[1, 0, 4, 2]), "dims"),
    (lambda h: _tensor(h, 0, dims=[1, -2, 4, 2]), "dims"),
    (lambda h: _tensor(h, 0, dims=[True, 4, 4, 2]), "integer"),
    (lambda h: _tensor(h, 0, dims=[1.0, 4, 4, 2]), "integer"),
    (lambda h: _tensor(h, 0, dims="1,4,4,2"), "list"),
    (lambda h: _tensor(h, 1, dims=[3, 3, 3, 3]), "length"),
    (lambda h: _tensor(h, 1, data={"offset": 2**40, "length": 216}), "past"),
    (lambda h: _tensor(h, 1, data={"offset": -64, "length": 216}), "offset"),
    (lambda h: _tensor(h, 1, data={"offset": 4, "length": 216}), "aligned"),
    (lambda h: _tensor(h, 1, data={"offset": 0, "length": 215}), "length"),
    (lambda h: _tensor(h, 1, data={"offset": 0, "length": 2**64}), "past"),
    (lambda h: _tensor(h, 1, data={"offset": "0", "length": 216}), "integer"),
    (lambda h: _tensor(h, 1, data={"offset": 0}), "lacks"),
    (lambda h: _tensor(h, 1, data=[0, 216]), "object"),
    (lambda h: _tensor(h, 2, data={"offset": 0, "length": 12}), "overlap"),
    (lambda h: _tensor(h, 3, data={"offset": h["tensors"][2]["data"]["offset"],
                                   "length": h["tensors"][3]["data"]["length"]}), "overlap"),
    (lambda h: (_tensor(h, 0, dims=[-1, 4, 4, 2]), _tensor(h, 1, dims=[-1, 3, 3, 2])), "dynamic"),
    (lambda h: (_tensor(h, 1, dtype="OH_NN_UNKNOWN")), "cannot hold data"),
    (lambda h: h.update(data_size=h["data_size"] + 64), "truncated"),
    (lambda h: h.update(data_size=-1), "data_size"),
    (lambda h: h.update(data_size=None), "data_size"),
    (lambda h: _tensor(h, 0, dtype="OH_NN_FLOAT33"), "OH_NN_DataType"),
    (lambda h: _tensor(h, 0, dtype=11), "OH_NN_DataType"),
    (lambda h: _tensor(h, 0, dtype="float32"), "OH_NN_DataType"),
    (lambda h: _tensor(h, 0, tensor_type="OH_NN_NOT_A_TYPE"), "OH_NN_TensorType"),
    (lambda h: _tensor(h, 0, format="NHWC"), "OH_NN_Format"),
    (lambda h: _tensor(h, 0, name=7), "name"),
    (lambda h: h["tensors"][0].pop("name"), "lacks name"),
    (lambda h: _tensor(h, 0, quant={"scales": [1.0], "zero_points": [0], "num_bits": [8]}), "axis"),
    (lambda h: _tensor(h, 0, quant={"scales": ["1"], "zero_points": [0], "num_bits": [8], "axis": None}), "scales"),
    (lambda h: _tensor(h, 0, quant={"scales": [1.0], "zero_points": [0.5], "num_bits": [8], "axis": None}),
     "zero_points"),
    (lambda h: _tensor(h, 0, quant={"scales": [1.0], "zero_points": [0], "num_bits": [4], "axis": None}),
     "numBits must be 8"),
    (lambda h: _tensor(h, 0, quant={"scales": [1.0, 2.0], "zero_points": [0], "num_bits": [8], "axis": None}),
     "equally many"),
    (lambda h: _tensor(h, 0, quant=[1.0, 0, 8]), "object"),
    (lambda h: h["operations"][0].update(op="OH_NN_OPS_NOPE"), "OH_NN_OperationType"),
    (lambda h: h["operations"][0].update(op="OH_NN_OPS_ADD"), "rejected by the model API"),
    (lambda h: h["operations"][0].update(inputs=[0, 1, 99]), "out of range"),
    (lambda h: h["operations"][0].update(inputs=[0, 1, -2]), "operations[0].inputs[2]"),
    (lambda h: h["operations"][0].update(params=[0]), "rejected by the model API"),
    (lambda h: h["operations"][0].update(outputs=[0]), "rejected by the model API"),
    (lambda h: h["operations"][0].update(outputs=4), "list"),
    (lambda h: h["operations"][0].pop("params"), "lacks params"),
    (lambda h: h.update(operations=[]), "finish"),
    (lambda h: h.update(operations={}), "list"),
    (lambda h: h.update(inputs=[3]), "inputs/outputs"),
    (lambda h: h.update(outputs=[]), "inputs/outputs"),
    (lambda h: h.update(tensors=None), "list"),
    (lambda h: h.update(tensors=[1, 2]), "object"),
    (lambda h: h.pop("outputs"), "lacks outputs"),
    (lambda h: _tensor(h, 3, tensor_type="OH_NN_TENSOR"), "rejected by the model API"),
])
def test_hostile_headers(conv_blob, edit, message):
    expect_invalid_file(edited(conv_blob, edit), message)


def test_api_message_is_kept(conv_blob):
    error = expect_invalid_file(edited(conv_blob, lambda h: h["operations"][0].update(op="OH_NN_OPS_ADD")))
    assert "OH_NN_OPS_ADD takes 2 inputs, got 3" in error.message


def test_param_value_rejected_by_api():
    m = Model()
    a = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2]))
    b = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2]))
    out = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2]))
    act = m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 1)
    m.add_operation(OP.OH_NN_OPS_ADD, [act], [a, b], [out])
    m.specify_inputs_and_outputs([a, b], [out])
    m.finish()
    header, data = split(model_to_bytes(m))
    assert data == b"\x01"
    assert model_from_bytes(pack(header, b"\x02")).operations[0].values == {"activation_type": 2}
    expect_invalid_file(pack(header, b"\x05"), "outside 0..2")


def test_bool_data_must_be_0_or_1():
    header, data = split(model_to_bytes(rich_model()))
    index = next(i for i, t in enumerate(header["tensors"]) if t["name"] == "const.bool")
    offset = header["tensors"][index]["data"]["offset"]
    bad = bytearray(data)
    bad[offset] = 2
    expect_invalid_file(pack(header, bytes(bad)), "BOOL")


def test_missing_required_parameter_fails_at_finish():
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2, 3]))
    scale = m.add_constant(np.ones(3, np.float32))
    bias = m.add_constant(np.zeros(3, np.float32))
    axis = m.add_param(TT.OH_NN_SCALE_AXIS, 1)
    y = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2, 3]))
    m.add_operation(OP.OH_NN_OPS_SCALE, [axis], [x, scale, bias], [y])
    m.specify_inputs_and_outputs([x], [y])
    m.finish()
    blob = model_to_bytes(m)
    assert model_from_bytes(blob).operations[0].values == {"axis": 1}
    error = expect_invalid_file(edited(blob, lambda h: h["operations"][0].update(params=[])), "finish")
    assert "OH_NN_SCALE_AXIS" in error.message


def test_unknown_keys_are_ignored(conv_blob):
    def add_keys(header):
        header["future_field"] = {"anything": [1, 2]}
        header["tensors"][0]["future"] = True

    assert_same_model(conv_model(), model_from_bytes(edited(conv_blob, add_keys)))


def test_no_data_model_has_no_data_section():
    m = Model()
    a = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2]))
    b = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2]))
    out = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2]))
    m.add_operation(OP.OH_NN_OPS_ADD, [], [a, b], [out])
    m.specify_inputs_and_outputs([a, b], [out])
    m.finish()
    blob = model_to_bytes(m)
    assert len(blob) == 16 + struct.unpack_from("<Q", blob, 8)[0]
    assert_same_model(m, model_from_bytes(blob))
    expect_invalid_file(blob + bytes(-len(blob) % 64), "trailing")
    for length in range(len(blob)):
        expect_invalid_file(blob[:length])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutations(data):
    blob = bytearray(model_to_bytes(conv_model()))
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["set", "insert", "delete", "truncate"]))
        position = data.draw(st.integers(0, max(len(blob) - 1, 0)))
        if kind == "set" and blob:
            blob[position] = data.draw(st.integers(0, 255))
        elif kind == "insert":
            blob[position:position] = data.draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del blob[position:position + data.draw(st.integers(1, 8))]
        else:
            del blob[position:]
    load_or_invalid(bytes(blob))


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_garbage_after_valid_prefix(tail):
    load_or_invalid(b"NNRT\x01\x00\x00\x00" + tail)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=10)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, prefix + (index,))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_header_values(data):
    """Replace any node of a valid rich header with an arbitrary JSON value."""
    header, blob_data = split(model_to_bytes(rich_model()))
    paths = list(_paths(header))
    path = data.draw(st.sampled_from(paths[1:]))
    parent = header
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = data.draw(_json_values)
    load_or_invalid(pack(header, blob_data))
