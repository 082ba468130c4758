"""The ``.nnrt`` model file: a finished :class:`Model` on disk, loadable by memory-mapping (docs/nnrt_format.md).

Layout (little-endian)::

    0   4 bytes  magic b"NNRT"
    4   u32      format version (FORMAT_VERSION)
    8   u64      header length H in bytes
    16  H bytes  header: UTF-8 JSON object (tensors, operations, inputs, outputs, data_size)
    D   ...      data section, D = 16 + H rounded up to a multiple of 64 (absent when data_size is 0);
                 each tensor's bytes at a 64-byte aligned offset relative to D

Reading never trusts the file: every structural check fails with ``NNRtError(OH_NN_INVALID_FILE, ...)`` and the
model is rebuilt by replaying the public :class:`Model` API, so a file can never hold a model the API rejects.
Weights are zero-copy numpy views into the buffer (an ``mmap`` for :func:`load_model`). No pickle anywhere.
"""
from __future__ import annotations

import json
import math
import mmap
import os
import struct
import sys
import tempfile
from typing import Any, Iterable, Iterator

import numpy as np

from . import cleanup
from .dtypes import element_size, to_numpy
from .enums import OH_NN_DataType, OH_NN_Format, OH_NN_OperationType, OH_NN_ReturnCode, OH_NN_TensorType
from .errors import NNRtError, cannot, invalid
from .model import Model
from .tensor import MAX_TENSOR_RANK, UINT32_MAX, QuantParam, check_dims

__all__ = ["FORMAT_VERSION", "MAGIC", "model_to_bytes", "model_from_bytes", "save_model", "load_model"]

MAGIC = b"NNRT"
FORMAT_VERSION = 1
ALIGNMENT = 64
PREFIX = struct.Struct("<4sIQ")  # magic, format version, header length
# The writer refuses a model whose header would be longer (so every file written can be read back); ~400 bytes per
# operation: about 600,000 operations. A reader parses at most this much JSON, whatever a file's length field says.
MAX_HEADER_LENGTH = 256 * 1024 * 1024
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _align(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


def _bad(message: str) -> NNRtError:
    return NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_FILE, message)


# -- writing -------------------------------------------------------------------------------------------------
def _encode_float(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _little_endian_bytes(array: np.ndarray) -> memoryview:
    array = np.ascontiguousarray(array)
    if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and sys.byteorder == "big"):
        array = array.astype(array.dtype.newbyteorder("<"))
    return memoryview(array).cast("B")


def _encode(model: Model) -> tuple[bytes, list[tuple[int, memoryview]]]:
    """The prefix + header (+ padding) and the (offset relative to the data section, bytes) of each weight."""
    if not isinstance(model, Model):
        raise invalid(f"expected a Model, got {type(model).__name__}")
    if not model.finished:
        raise invalid("only a finished model can be serialized (call finish() first)")
    tensors, chunks, offset = [], [], 0
    for tensor in model.tensors:
        entry: dict[str, Any] = {
            "dtype": tensor.dtype.name,
            "dims": list(tensor.dims),
            "tensor_type": tensor.tensor_type.name,
            "format": OH_NN_Format(tensor.format).name,
            "name": tensor.name,
            "quant": None,
            "data": None,
        }
        if tensor.quant is not None:
            q = tensor.quant
            entry["quant"] = {"scales": [_encode_float(s) for s in q.scales], "zero_points": list(q.zero_points),
                              "num_bits": list(q.num_bits), "axis": q.axis}
        if tensor.data is not None:
            raw = _little_endian_bytes(tensor.data)
            offset = _align(offset)
            entry["data"] = {"offset": offset, "length": raw.nbytes}
            chunks.append((offset, raw))
            offset += raw.nbytes
        tensors.append(entry)
    header = {
        "tensors": tensors,
        "operations": [{"op": o.op.name, "params": list(o.params), "inputs": list(o.inputs),
                        "outputs": list(o.outputs)} for o in model.operations],
        "inputs": list(model.inputs),
        "outputs": list(model.outputs),
        "data_size": offset,
    }
    if model.name:  # optional (readers ignore unknown keys): the source graph's name, kept by an export
        header["name"] = model.name
    text = json.dumps(header, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("utf-8")
    if len(text) > MAX_HEADER_LENGTH:  # what we write, we can read: refused here rather than by every later load
        raise invalid(f"the model is too large for the .nnrt format: its header would be {len(text)} bytes "
                      f"({len(model.tensors)} tensors, {len(model.operations)} operations), the limit is "
                      f"{MAX_HEADER_LENGTH}")
    prefix = PREFIX.pack(MAGIC, FORMAT_VERSION, len(text)) + text
    if chunks:
        prefix += bytes(_align(len(prefix)) - len(prefix))
    return prefix, chunks


def _chunks(prefix: bytes, data: list[tuple[int, memoryview]]) -> Iterator[bytes | memoryview]:
    yield prefix
    position = 0
    for offset, raw in data:
        if offset > position:
            yield bytes(offset - position)
        yield raw
        position = offset + raw.nbytes


def encode_chunks(model: Model) -> list[bytes | memoryview]:
    """The file's bytes as a list of pieces (weights are views, not copies); used by save_model and the cache."""
    return list(_chunks(*_encode(model)))


def model_to_bytes(model: Model) -> bytes:
    """Serialize a finished model to the ``.nnrt`` format."""
    return b"".join(encode_chunks(model))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, chunks: Iterable[bytes | memoryview]) -> None:
    """Write ``chunks`` to ``path`` via a temp file in the same directory, fsync and os.replace.

    Raises the underlying OSError, naming ``path`` (never the temp file: a message shows what the user asked to
    write); on any failure -- an exception, KeyboardInterrupt, SIGTERM or SIGHUP -- the
    temp file is removed and ``path`` is untouched (nnrt_onnx/cleanup.py; after a kill -9 the next write of the same
    file removes the orphan).
    A reader that memory-mapped the old file keeps its (old, unlinked) inode, so its views stay valid.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    target = os.path.basename(path)
    cleanup.sweep_stale(directory, target)  # what a killed (-9) writer of the same file left behind
    try:
        fd, temp = tempfile.mkstemp(prefix=cleanup.temp_prefix(target), suffix=".tmp", dir=directory)
    except OSError as error:
        raise OSError(error.errno, error.strerror, path) from None
    cleanup.register(temp)  # removed on SIGTERM/SIGHUP too (cleanup.py); SIGINT is a KeyboardInterrupt below
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a saved file gets the usual permissions
        with os.fdopen(fd, "wb") as stream:
            for chunk in chunks:
                stream.write(chunk)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException as error:
        try:
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(error, OSError) and error.errno is not None:
            raise OSError(error.errno, error.strerror, path) from None
        raise
    finally:
        cleanup.unregister(temp)
    try:  # make the rename durable; best effort (not every platform can open a directory)
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def save_model(model: Model, path: str | os.PathLike) -> None:
    """Write a finished model to ``path`` atomically.

    Errors: model not finished -> OH_NN_INVALID_PARAMETER; the directory does not exist -> OH_NN_INVALID_PATH;
    any other I/O failure (permissions, disk full) -> OH_NN_FAILED. The old file at ``path`` is never damaged.
    """
    chunks = encode_chunks(model)
    directory = os.path.dirname(os.path.abspath(os.fspath(path)))
    if not os.path.isdir(directory):
        raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PATH, f"directory {directory!r} does not exist")
    try:
        atomic_write(path, chunks)
    except OSError as error:
        raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED, cannot("write", os.fspath(path), error)) from None


# -- reading -------------------------------------------------------------------------------------------------
def _int(value: Any, where: str, lo: int | None = None, hi: int | None = None) -> int:
    if type(value) is not int:
        raise _bad(f"{where} must be an integer, got {type(value).__name__}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise _bad(f"{where} = {value} is outside {lo}..{hi}")
    return value


def _list(value: Any, where: str) -> list:
    if type(value) is not list:
        raise _bad(f"{where} must be a list, got {type(value).__name__}")
    return value


def _dict(value: Any, where: str, keys: tuple[str, ...]) -> dict:
    if type(value) is not dict:
        raise _bad(f"{where} must be a JSON object, got {type(value).__name__}")
    missing = [k for k in keys if k not in value]
    if missing:
        raise _bad(f"{where} lacks {', '.join(missing)}")
    return value


def _enum(enum, value: Any, where: str):
    if type(value) is not str:
        raise _bad(f"{where} must be an {enum.__name__} name, got {type(value).__name__}")
    member = enum.__members__.get(value)
    if member is None:
        raise _bad(f"{where} = {value[:80]!r} is not an {enum.__name__} name")
    return member


def _indices(value: Any, where: str) -> list[int]:
    return [_int(v, f"{where}[{i}]", 0, UINT32_MAX) for i, v in enumerate(_list(value, where))]


def _scale(value: Any, where: str) -> float:
    if type(value) in (int, float):
        try:
            return float(value)
        except OverflowError:
            raise _bad(f"{where} is too large for a float") from None
    if type(value) is str and value in _NONFINITE:
        return _NONFINITE[value]
    raise _bad(f"{where} must be a number (or \"nan\", \"inf\", \"-inf\"), got {type(value).__name__}")


def _quant(value: Any, where: str) -> QuantParam | None:
    if value is None:
        return None
    value = _dict(value, where, ("scales", "zero_points", "num_bits", "axis"))
    scales = [_scale(s, f"{where}.scales[{i}]") for i, s in enumerate(_list(value["scales"], f"{where}.scales"))]
    zeros = [_int(z, f"{where}.zero_points[{i}]", -(1 << 63), (1 << 64) - 1)
             for i, z in enumerate(_list(value["zero_points"], f"{where}.zero_points"))]
    bits = [_int(b, f"{where}.num_bits[{i}]", 0, UINT32_MAX)
            for i, b in enumerate(_list(value["num_bits"], f"{where}.num_bits"))]
    axis = None if value["axis"] is None else _int(value["axis"], f"{where}.axis", -MAX_TENSOR_RANK, MAX_TENSOR_RANK)
    return QuantParam(scales, zeros, bits, axis)


def _parse_header(text: bytes) -> dict:
    def reject_constant(name: str):
        raise ValueError(f"non-standard JSON constant {name}")

    try:
        header = json.loads(text.decode("utf-8"), parse_constant=reject_constant)
    except UnicodeDecodeError as error:
        raise _bad(f"header is not valid UTF-8: {error}") from None
    except RecursionError:
        raise _bad("header JSON is nested too deeply") from None
    except ValueError as error:  # json.JSONDecodeError, int digit limit, NaN/Infinity
        raise _bad(f"header is not valid JSON: {error}") from None
    return _dict(header, "header", ("tensors", "operations", "inputs", "outputs", "data_size"))


def _buffer(buffer) -> tuple[Any, memoryview]:
    """(object numpy views are taken from, byte memoryview over it)."""
    if isinstance(buffer, (str, int, float)) or buffer is None:
        raise invalid(f"expected a bytes-like object or mmap, got {type(buffer).__name__}")
    try:
        view = memoryview(buffer)
    except (TypeError, ValueError):
        raise invalid(f"expected a bytes-like object or mmap, got {type(buffer).__name__}") from None
    if not view.c_contiguous:
        raise invalid("the buffer must be C-contiguous")
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    source = buffer if isinstance(buffer, (bytes, bytearray, mmap.mmap)) else view
    return source, view


def model_from_bytes(buffer, *, _start: int = 0, _end: int | None = None) -> Model:
    """Rebuild a FINISHED model from ``.nnrt`` bytes (bytes, bytearray, memoryview, mmap, ...).

    Weights are read-only numpy views into ``buffer`` (zero-copy; they keep it alive). Do not mutate a mutable
    buffer afterwards. Any defect of the bytes -> ``NNRtError(OH_NN_INVALID_FILE, what is wrong)``.
    ``_start``/``_end`` select a window of the buffer (the compile cache embeds a model file after its header).
    """
    source, view = _buffer(buffer)
    end = len(view) if _end is None else _end
    size = end - _start
    if size <= 0:
        raise _bad("file is empty")
    if size < PREFIX.size:
        raise _bad(f"file is truncated: {size} bytes, the fixed prefix alone is {PREFIX.size}")
    magic, version, header_length = PREFIX.unpack_from(view, _start)
    if magic != MAGIC:
        raise _bad(f"not an .nnrt model file (magic {bytes(magic)!r}, expected {MAGIC!r})")
    if version == 0:
        raise _bad("format version 0 is invalid")
    if version > FORMAT_VERSION:
        raise _bad(f"file format version {version} is newer than this reader supports (<= {FORMAT_VERSION}); "
                   f"upgrade nnrt_onnx to load it")
    if header_length > MAX_HEADER_LENGTH:
        raise _bad(f"header length {header_length} exceeds the limit of {MAX_HEADER_LENGTH} bytes")
    if PREFIX.size + header_length > size:
        raise _bad(f"file is truncated: header of {header_length} bytes needs {PREFIX.size + header_length} "
                   f"bytes, file has {size}")
    header = _parse_header(bytes(view[_start + PREFIX.size:_start + PREFIX.size + header_length]))

    data_size = _int(header["data_size"], "data_size", 0)
    data_start = _align(PREFIX.size + header_length) if data_size else PREFIX.size + header_length
    expected = data_start + data_size
    if size < expected:
        raise _bad(f"file is truncated: {size} bytes, header and data section need {expected}")
    if size > expected:
        raise _bad(f"{size - expected} unexpected trailing bytes after the data section")

    tensors = _list(header["tensors"], "tensors")
    decoded = []
    ranges = []
    for i, entry in enumerate(tensors):
        where = f"tensors[{i}]"
        entry = _dict(entry, where, ("dtype", "dims", "tensor_type", "format", "name", "quant", "data"))
        dtype = _enum(OH_NN_DataType, entry["dtype"], f"{where}.dtype")
        dims = _list(entry["dims"], f"{where}.dims")
        if len(dims) > MAX_TENSOR_RANK:
            raise _bad(f"{where}.dims has rank {len(dims)}, the limit is {MAX_TENSOR_RANK}")
        dims = [_int(d, f"{where}.dims[{k}]", -1, UINT32_MAX) for k, d in enumerate(dims)]
        try:
            dims = check_dims(dims, dtype)
        except NNRtError as error:
            raise _bad(f"{where}.dims: {error.message}") from None
        ttype = _enum(OH_NN_TensorType, entry["tensor_type"], f"{where}.tensor_type")
        fmt = _enum(OH_NN_Format, entry["format"], f"{where}.format")
        if type(entry["name"]) is not str:
            raise _bad(f"{where}.name must be a string, got {type(entry['name']).__name__}")
        quant = _quant(entry["quant"], f"{where}.quant")
        array = None
        if entry["data"] is not None:
            data = _dict(entry["data"], f"{where}.data", ("offset", "length"))
            offset = _int(data["offset"], f"{where}.data.offset", 0)
            length = _int(data["length"], f"{where}.data.length", 1)
            if offset % ALIGNMENT:
                raise _bad(f"{where}.data.offset {offset} is not {ALIGNMENT}-byte aligned")
            if offset + length > data_size:
                raise _bad(f"{where}.data [{offset}, {offset + length}) extends past the data section "
                           f"({data_size} bytes)")
            if -1 in dims:
                raise _bad(f"{where} has dynamic dims {list(dims)} and cannot hold data")
            if element_size(dtype) == 0:
                raise _bad(f"{where} of type {dtype.name} cannot hold data")
            count = math.prod(dims)
            if length != count * element_size(dtype):
                raise _bad(f"{where}.data.length is {length}, {dtype.name} {list(dims)} needs "
                           f"{count * element_size(dtype)} bytes")
            ranges.append((offset, length, i))
            np_dtype = to_numpy(dtype).newbyteorder("<")
            array = np.frombuffer(source, dtype=np_dtype, count=count, offset=_start + data_start + offset)
            if np_dtype != to_numpy(dtype):  # big-endian host: one copy into native order
                array = array.astype(to_numpy(dtype))
            if dtype == OH_NN_DataType.OH_NN_BOOL and np.any(array.view(np.uint8) > 1):
                raise _bad(f"{where} is BOOL but holds bytes other than 0 and 1")
        decoded.append((dtype, dims, ttype, fmt, entry["name"], quant, array))
    ranges.sort()
    for (a_off, a_len, a), (b_off, _, b) in zip(ranges, ranges[1:]):
        if b_off < a_off + a_len:
            raise _bad(f"data of tensors[{a}] and tensors[{b}] overlap")
    if data_size and (not ranges or max(o + n for o, n, _ in ranges) != data_size):
        raise _bad(f"data_size {data_size} does not end at the last tensor's data")

    operations = []
    for i, entry in enumerate(_list(header["operations"], "operations")):
        where = f"operations[{i}]"
        entry = _dict(entry, where, ("op", "params", "inputs", "outputs"))
        op = _enum(OH_NN_OperationType, entry["op"], f"{where}.op")
        operations.append((where, op, *(_indices(entry[k], f"{where}.{k}") for k in ("params", "inputs", "outputs"))))
    inputs = _indices(header["inputs"], "inputs")
    outputs = _indices(header["outputs"], "outputs")
    model = _replay(decoded, operations, inputs, outputs)
    name = header.get("name", "")
    if not isinstance(name, str):
        raise _bad(f"name must be a string, got {type(name).__name__}")
    model.name = name
    return model


def _replay(tensors, operations, inputs, outputs) -> Model:
    """Rebuild through the public Model API; its refusals become OH_NN_INVALID_FILE with the original message."""
    model = Model()
    step = "building the model"
    try:
        for i, (dtype, dims, ttype, fmt, name, quant, array) in enumerate(tensors):
            step = f"tensors[{i}]"
            index = model.add_tensor_legacy(dtype, dims)
            model.set_tensor_type(index, ttype)
            if quant is not None:
                model.set_tensor_quant_params(index, quant)
            if array is not None:
                model.attach_tensor_data(index, array)
            model.set_tensor_name(index, name)
            model.tensors[index].format = fmt  # no API call sets a model tensor's format; keep the recorded one
        for where, op, params, op_inputs, op_outputs in operations:
            step = f"{where} ({op.name})"
            model.add_operation(op, params, op_inputs, op_outputs)
        step = "inputs/outputs"
        model.specify_inputs_and_outputs(inputs, outputs)
        step = "finish"
        model.finish()
    except NNRtError as error:
        raise _bad(f"{step} is rejected by the model API ({error.code.name}): {error.message}") from None
    except (ValueError, TypeError, KeyError, IndexError, ArithmeticError, RecursionError) as error:
        raise _bad(f"{step} is rejected by the model API: {type(error).__name__}: {error}") from None
    return model


def load_model(path: str | os.PathLike) -> Model:
    """Memory-map ``path`` and rebuild its model; weights are views into the mapping (not copied).

    The mapping stays alive as long as any weight array does. Errors: missing file or directory ->
    OH_NN_INVALID_PATH; unreadable (permissions, I/O) or malformed -> OH_NN_INVALID_FILE.
    """
    mapped = map_file(path)
    if mapped is None:
        raise _bad(f"{os.fspath(path)!r} is empty")
    model = model_from_bytes(mapped)
    if not any(t.data is not None for t in model.tensors):
        mapped.close()
    return model


def map_file(path: str | os.PathLike) -> mmap.mmap | None:
    """A read-only mmap of ``path`` (None for an empty file), with OSErrors mapped to NNRt return codes."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as stream:
            if os.fstat(stream.fileno()).st_size == 0:
                return None
            return mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as error:
        raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PATH, f"cannot open {name!r}: {error.strerror}") from None
    except (OSError, ValueError) as error:
        raise _bad(f"cannot read {name!r}: {error}") from None
