"""Weights read straight from the model file: the converter never holds them in a protobuf.

``onnx.load`` reads the whole file into memory and parses it, so for a moment the file's bytes and the parsed
message sit side by side (2x the weights), and the parsed message then stays alive next to the numpy arrays the
converter makes from it. :func:`load_light` instead scans the file's protobuf wire format itself: every large
initializer of the main graph (more than ``SPLIT_ELEMENTS`` elements, a plain numeric type, in ``raw_data``)
becomes an ONNX *external data* reference to its own bytes in the model file, and only the rest is parsed. A
:class:`WeightFile` maps the file read-only; :func:`to_array` turns an external reference into a zero-copy view of
the mapping, and :meth:`WeightFile.release` drops pages already read from this process's memory (the kernel reads
them again if they are needed: the mapping is backed by the unchanged file). A model with external data files of
its own, or bytes the scanner cannot follow, is left to ``onnx.load`` (``importer.load_for_conversion``); each
reference is still checked (its file inside the model's directory, its range inside the file, its length against
its dims) before anything reads it.

The converted model never points into a mapping: ``ir.mapped.detached`` copies a view when the model takes it, so the
file can change or go away afterwards. (During the conversion itself the file must not be truncated.)
"""
from __future__ import annotations

import math
import mmap
import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import onnx
from onnx import numpy_helper

from ..ir.mapped import drop_pages
from .subgraph import subgraphs

__all__ = ["WeightFile", "WireError", "active", "external_problem", "load_light", "release", "to_array"]

_T = onnx.TensorProto
# element types whose raw data numpy reads as is (sub-byte, string and 8-bit float types take onnx's own reader)
_PLAIN = {_T.FLOAT: np.float32, _T.DOUBLE: np.float64, _T.FLOAT16: np.float16, _T.INT8: np.int8, _T.UINT8: np.uint8,
          _T.INT16: np.int16, _T.UINT16: np.uint16, _T.INT32: np.int32, _T.UINT32: np.uint32, _T.INT64: np.int64,
          _T.UINT64: np.uint64, _T.BOOL: np.bool_}
SPLIT_ELEMENTS = 1024  # initializers with more elements stay in the file (shape and axes tensors are far smaller)
MAX_FIELDS = 2_000_000  # fields the scanner reads before it leaves the file to onnx.load
_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9  # field numbers in onnx.proto
_TENSOR_EXTERNAL_DATA, _TENSOR_DATA_LOCATION = 13, 14


class WireError(ValueError):
    """The file is not protobuf wire format this scanner follows (onnx.load then decides what it is)."""


# -- the weights of one conversion ------------------------------------------------------------------------------------

class WeightFile:
    """The model file (and its external data files) mapped read-only, for the duration of one conversion."""

    def __init__(self, model_path: str | Path):
        self.model_path = Path(model_path)
        self.base_dir = self.model_path.resolve().parent
        self._maps: dict[Path, mmap.mmap] = {}
        self._views: dict[str, np.ndarray] = {}  # tensor name -> its view of the mapped file
        self._files: dict[str, tuple[Path, int]] = {}  # external data location -> (resolved path, size)

    def map_of(self, path: Path) -> mmap.mmap:
        if path not in self._maps:
            with open(path, "rb") as handle:
                self._maps[path] = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        return self._maps[path]

    def _file(self, location: str) -> tuple[Path, int]:
        """(the resolved path, its size) of an external data location, checked to lie in the model's directory."""
        if location not in self._files:
            if not location or os.path.isabs(location) or Path(location).drive:
                raise ValueError(f"its external data location {location!r} is not a path relative to the model")
            path = (self.base_dir / location).resolve()
            if self.base_dir not in path.parents:
                raise ValueError(f"its external data location {location!r} lies outside the model's directory")
            if not path.is_file():
                raise ValueError(f"its external data file {location!r} does not exist")
            self._files[location] = (path, path.stat().st_size)
        return self._files[location]

    def _locate(self, tensor: onnx.TensorProto) -> tuple[Path, int, int, int | None]:
        """(file, its size, offset, length or None) of an external tensor's data."""
        entries = {e.key: e.value for e in tensor.external_data}
        path, size = self._file(entries.get("location", ""))
        try:
            offset = int(entries.get("offset", 0))
            length = int(entries["length"]) if "length" in entries else None
        except ValueError:
            raise ValueError("its external data offset or length is not an integer") from None
        if offset < 0 or (length is not None and length < 0):
            raise ValueError(f"its external data has offset {offset}, length {length}")
        return path, size, offset, length

    def problem(self, tensor: onnx.TensorProto, what: str) -> str | None:
        """Why the external tensor cannot be read (None: it can)."""
        try:
            path, size, offset, length = self._locate(tensor)
        except ValueError as exc:
            return f"{what}: {exc}"
        dtype = _PLAIN.get(tensor.data_type)
        if dtype is None:  # (the scanner leaves only plain numeric types in the file)
            return f"{what} has external data of element type {tensor.data_type}, which is read only from raw data"
        needed = math.prod(tensor.dims) * np.dtype(dtype).itemsize
        if length is not None and length != needed:
            return f"{what} holds {length} bytes of external data, {list(tensor.dims)} needs {needed}"
        if offset + needed > size:
            return f"{what} needs bytes {offset}..{offset + needed} of its external data file, which has {size}"
        return None

    def array(self, tensor: onnx.TensorProto) -> np.ndarray:
        problem = self.problem(tensor, f"tensor {tensor.name!r}")
        if problem:
            raise ValueError(problem)
        path, _, offset, _ = self._locate(tensor)
        dtype = _PLAIN[tensor.data_type]
        count = math.prod(tensor.dims)
        mapped = self.map_of(path)
        little = np.dtype(dtype).newbyteorder("<")
        array = np.frombuffer(mapped, little, count, offset).reshape(tuple(tensor.dims))
        self._views[tensor.name] = array
        return array if little.isnative else array.astype(little.newbyteorder("="))

    def release(self, names: Iterable[str]) -> None:
        """Drop the pages of these tensors from memory (they stay readable: the kernel maps them again on use)."""
        for name in names:
            drop_pages(self._views.get(name))


_active: ContextVar[WeightFile | None] = ContextVar("nnrt_onnx_weight_file", default=None)


@contextmanager
def active(weight_file: WeightFile | None) -> Iterator[WeightFile | None]:
    """Make ``weight_file`` the one external tensors are read from (None: they cannot be read)."""
    token = _active.set(weight_file)
    try:
        yield weight_file
    finally:
        _active.reset(token)


def to_array(tensor: onnx.TensorProto) -> np.ndarray:
    """``numpy_helper.to_array``, with external data read from the active :class:`WeightFile` (a mapped view), and
    booleans made 0/1 (raw data may hold any byte; numpy would keep it inside a bool array)."""
    weight_file = _active.get()
    if tensor.data_location == _T.EXTERNAL and not tensor.HasField("raw_data") and weight_file is not None:
        array = weight_file.array(tensor)
    else:
        array = numpy_helper.to_array(tensor)
    if array.dtype == np.bool_:
        array = array.view(np.uint8) != 0
    return array


def external_problem(tensor: onnx.TensorProto, what: str) -> str | None:
    """Why an external tensor cannot be read in this conversion (None: it can)."""
    weight_file = _active.get()
    if weight_file is None:
        # (onnx.load of a file loads external data next to it; a reference left is data nothing loaded)
        return f"{what} refers to external data that was not loaded with the model"
    return weight_file.problem(tensor, what)


def release(names: Iterable[str]) -> None:
    weight_file = _active.get()
    if weight_file is not None:
        weight_file.release(names)


# -- the light load ---------------------------------------------------------------------------------------------------

def load_light(path: str | Path) -> tuple[onnx.ModelProto, WeightFile]:
    """The model at ``path`` with its large main-graph initializers left in the file (external references to their
    own bytes), and the :class:`WeightFile` that reads them. Raises :class:`WireError` when the file is not wire
    format this scanner follows, OSError when it cannot be read."""
    weight_file = WeightFile(path)
    if Path(path).stat().st_size == 0:
        raise WireError("empty file")
    data = weight_file.map_of(weight_file.model_path.resolve())
    location = weight_file.model_path.name
    budget = [MAX_FIELDS]
    parts = []
    for field, wire_type, start, end, key_start in _fields(data, 0, len(data), budget):
        if field == _MODEL_GRAPH and wire_type == 2:
            graph = b"".join(_light_graph(data, start, end, location, budget))
            parts.append(_key(_MODEL_GRAPH, 2) + _varint(len(graph)) + graph)
        else:
            parts.append(data[key_start:end])
    model = onnx.ModelProto()
    try:
        model.ParseFromString(b"".join(parts))
    except Exception as exc:  # (protobuf's decode error has no stable type)
        raise WireError(str(exc)) from None
    ours = sum(t.data_location == _T.EXTERNAL for t in model.graph.initializer)
    if sum(t.data_location == _T.EXTERNAL for t in _all_tensors(model.graph)) != ours:
        raise WireError("the model has external data files of its own")  # (onnx.load reads those)
    return model, weight_file


def _all_tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    """Every tensor of a graph: initializers, sparse ones, tensor attributes, and those of subgraphs."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield from (sparse.values, sparse.indices)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.HasField("sparse_tensor"):
                yield from (attribute.sparse_tensor.values, attribute.sparse_tensor.indices)
        for subgraph in subgraphs(node):
            yield from _all_tensors(subgraph)


def _light_graph(data: mmap.mmap, start: int, end: int, location: str, budget: list[int]) -> Iterator[bytes]:
    for field, wire_type, begin, stop, key_start in _fields(data, start, end, budget):
        if field == _GRAPH_INITIALIZER and wire_type == 2:
            light = _light_tensor(data, begin, stop, location, budget)
            if light is not None:
                yield _key(_GRAPH_INITIALIZER, 2) + _varint(len(light)) + light
                continue
        yield data[key_start:stop]


def _light_tensor(data: mmap.mmap, start: int, end: int, location: str, budget: list[int]) -> bytes | None:
    """The tensor's bytes with its raw data replaced by a reference into the file; None: keep it whole."""
    rest, raw = [], []
    for field, wire_type, begin, stop, key_start in _fields(data, start, end, budget):
        if field in (_TENSOR_EXTERNAL_DATA, _TENSOR_DATA_LOCATION):
            raise WireError("the model has external data files of its own")  # (onnx.load reads those)
        if field == _TENSOR_RAW_DATA and wire_type == 2:
            raw.append((begin, stop))
        else:
            rest.append(data[key_start:stop])
    if len(raw) != 1:
        return None
    tensor = onnx.TensorProto()
    try:
        tensor.ParseFromString(b"".join(rest))
    except Exception:
        return None
    count = math.prod(tensor.dims)
    dtype = _PLAIN.get(tensor.data_type)
    begin, stop = raw[0]
    if dtype is None or count <= SPLIT_ELEMENTS or any(d < 0 for d in tensor.dims):
        return None
    tensor.data_location = _T.EXTERNAL
    for key, value in (("location", location), ("offset", str(begin)), ("length", str(stop - begin))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor.SerializeToString()


def _fields(data: mmap.mmap, start: int, end: int, budget: list[int]) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, payload start, field end, key start) of each field in data[start:end]; ``budget``
    (a one-element list) counts the fields left to scan, over the whole file."""
    position = start
    while position < end:
        budget[0] -= 1
        if budget[0] < 0:  # (a file of millions of tiny fields: protobuf's own parser is far faster at it)
            raise WireError("too many fields for the scanner")
        key_start = position
        key, position = _read_varint(data, position, end)
        field, wire_type = key >> 3, key & 7
        if field == 0:
            raise WireError(f"field number 0 at byte {key_start}")
        if wire_type == 0:
            _, stop = _read_varint(data, position, end)
            payload = position
        elif wire_type == 1:
            payload, stop = position, position + 8
        elif wire_type == 2:
            length, payload = _read_varint(data, position, end)
            stop = payload + length
        elif wire_type == 5:
            payload, stop = position, position + 4
        else:
            raise WireError(f"wire type {wire_type} at byte {key_start}")
        if stop > end:
            raise WireError(f"field {field} at byte {key_start} runs past its message")
        yield field, wire_type, payload, stop, key_start
        position = stop


def _read_varint(data: mmap.mmap, position: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= end or shift > 63:
            raise WireError(f"truncated varint at byte {position}")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)
