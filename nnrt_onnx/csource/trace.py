"""The recording shim's traces (shim/nnrt_recorder.c) read and replayed into Models through the Python API.

A trace is ``b"NNRTTRC1"`` followed by one record per NNRt call, in call order::

    u16 name length, name (ASCII), u16 argument count,
    per argument: u8 kind, u64 length, `length` bytes,
    i64 result (the return code; a handle's id for the functions that return one, 0 for NULL; 0 for void)

Integers are little-endian. Argument kinds: ``q`` an int64, ``n`` NULL, ``b`` bytes, ``s`` a string (UTF-8),
``i`` int32s, ``U`` uint32s, ``d`` doubles. Handles are recorded as the ids the shim gave them.

The replay makes the model-building calls on :class:`~nnrt_onnx.model.Model` (with :class:`TensorDesc` and
:class:`QuantParam` for the descriptions and quantization parameters they name), so every call is validated as the
Python API validates it: a call the shim accepted and the API refuses is a :class:`TraceError` naming the call.
Runs (``OH_NNExecutor_RunSync``/``RunAsync``, and the API-9 ``SetInput``... ``Run``) are kept with their inputs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import to_numpy
from ..enums import OH_NN_DataType, OH_NN_Format, OH_NN_ReturnCode
from ..errors import NNRtError
from ..model import Model
from ..tensor import QuantParam, TensorDesc

__all__ = ["Call", "RecordedRun", "Replay", "TraceError", "read_trace", "replay", "replay_file"]

MAGIC = b"NNRTTRC1"
_SUCCESS = OH_NN_ReturnCode.OH_NN_SUCCESS
_ARRAYS = {"i": np.dtype("<i4"), "U": np.dtype("<u4"), "d": np.dtype("<f8")}


class TraceError(Exception):
    """A trace that cannot be read, or a call in it that the NNRt API refuses."""


@dataclass(frozen=True)
class Call:
    number: int  # its place in the trace, from 0
    name: str
    args: tuple[Any, ...]
    result: int

    def describe(self) -> str:
        return f"call #{self.number} {self.name}"


@dataclass
class RecordedRun:
    """One inference the program asked for: the model it ran and the inputs it fed (arrays in their shapes)."""

    model: int  # index into Replay.models
    inputs: list[np.ndarray]
    call: str


@dataclass
class Replay:
    models: list[Model] = field(default_factory=list)  # every model constructed, in order
    runs: list[RecordedRun] = field(default_factory=list)
    calls: int = 0

    @property
    def finished(self) -> list[int]:
        return [i for i, m in enumerate(self.models) if m.finished]


def _read_uint(view, offset: int, width: int) -> int:
    if offset + width > len(view):
        raise TraceError(f"the trace is truncated at byte {offset}")
    return int.from_bytes(view[offset:offset + width], "little")


def read_trace(buffer) -> list[Call]:
    """Every call of a trace (bytes or an mmap); a TraceError where it is malformed."""
    view = memoryview(buffer)
    if bytes(view[:8]) != MAGIC:
        raise TraceError("not an NNRt recorder trace (no NNRTTRC1 magic)")
    calls, offset = [], 8
    while offset < len(view):
        length = _read_uint(view, offset, 2)
        name = bytes(view[offset + 2:offset + 2 + length]).decode("ascii", "replace")
        offset += 2 + length
        count = _read_uint(view, offset, 2)
        offset += 2
        args = []
        for _ in range(count):
            kind = chr(_read_uint(view, offset, 1))
            size = _read_uint(view, offset + 1, 8)
            offset += 9
            if offset + size > len(view):
                raise TraceError(f"the trace is truncated in {name} (argument {len(args)})")
            raw = view[offset:offset + size]
            offset += size
            if kind == "q":
                args.append(int.from_bytes(raw, "little", signed=True))
            elif kind == "n":
                args.append(None)
            elif kind == "b":
                args.append(raw)
            elif kind == "s":
                args.append(bytes(raw).decode("utf-8", "surrogateescape"))
            elif kind in _ARRAYS:
                args.append(np.frombuffer(raw, _ARRAYS[kind]).astype(_ARRAYS[kind].newbyteorder("=")))
            else:
                raise TraceError(f"unknown argument kind {kind!r} in {name}")
        result = _read_uint(view, offset, 8)
        offset += 8
        calls.append(Call(len(calls), name, tuple(args), result - (1 << 64) if result >= 1 << 63 else result))
    return calls


class _Replayer:
    def __init__(self):
        self.replay = Replay()
        self.models: dict[int, int] = {}  # handle id -> index into replay.models
        self.descs: dict[int, TensorDesc] = {}
        self.quants: dict[int, QuantParam] = {}
        self.compilations: dict[int, int] = {}  # compilation id -> model index
        self.executors: dict[int, int] = {}  # executor id -> model index
        self.legacy_inputs: dict[int, dict[int, np.ndarray]] = {}

    def model(self, call: Call, handle) -> Model:
        if handle not in self.models:
            raise TraceError(f"{call.describe()} names a model the trace never constructed")
        return self.replay.models[self.models[handle]]

    def desc(self, call: Call, handle) -> TensorDesc:
        if handle not in self.descs:
            raise TraceError(f"{call.describe()} names a tensor description the trace never created")
        return self.descs[handle]

    def quant(self, call: Call, handle) -> QuantParam:
        if handle not in self.quants:
            raise TraceError(f"{call.describe()} names quantization parameters the trace never created")
        return self.quants[handle]

    # -- the calls that build models -------------------------------------------------------------------------
    def OH_NNModel_Construct(self, call):
        if call.result:
            self.models[call.result] = len(self.replay.models)
            self.replay.models.append(Model())

    def OH_NNTensorDesc_Create(self, call):
        if call.result:
            self.descs[call.result] = TensorDesc()

    def _executor_desc(self, call):  # a description of an input or output: its settings matter to no model
        if call.result:
            self.descs[call.result] = TensorDesc()

    OH_NNExecutor_CreateInputTensorDesc = OH_NNExecutor_CreateOutputTensorDesc = _executor_desc
    OH_NNTensor_GetTensorDesc = _executor_desc

    def OH_NNTensorDesc_SetDataType(self, call):
        self.desc(call, call.args[0]).set_data_type(call.args[1])

    def OH_NNTensorDesc_SetShape(self, call):
        self.desc(call, call.args[0]).set_shape([int(d) for d in call.args[1][:call.args[2]]])

    def OH_NNTensorDesc_SetFormat(self, call):
        self.desc(call, call.args[0]).set_format(call.args[1])

    def OH_NNTensorDesc_SetName(self, call):
        self.desc(call, call.args[0]).name = call.args[1]

    def OH_NNQuantParam_Create(self, call):
        if call.result:
            self.quants[call.result] = QuantParam([], [], [])

    def OH_NNQuantParam_SetScales(self, call):
        self.quant(call, call.args[0]).scales = [float(v) for v in call.args[1]]

    def OH_NNQuantParam_SetZeroPoints(self, call):
        self.quant(call, call.args[0]).zero_points = [int(v) for v in call.args[1]]

    def OH_NNQuantParam_SetNumBits(self, call):
        self.quant(call, call.args[0]).num_bits = [int(v) for v in call.args[1]]

    def OH_NNModel_AddTensorToModel(self, call):
        model, desc = self.model(call, call.args[0]), self.desc(call, call.args[1])
        index = model.add_tensor(desc)
        # the tensor takes its format from the description (nnrt_onnx's AddTensorToModel keeps none; the runtime's
        # NNTensor copies it)
        model.tensors[index].format = OH_NN_Format(desc.format)

    def OH_NNModel_SetTensorData(self, call):
        model, index, data, length = call.args
        self.model(call, model).set_tensor_data(index, data[:length] if data is not None else None)

    def OH_NNModel_SetTensorQuantParams(self, call):
        model, index, quant = call.args
        q = self.quant(call, quant)
        self.model(call, model).set_tensor_quant_params(index, QuantParam(list(q.scales), list(q.zero_points),
                                                                          list(q.num_bits)))

    def OH_NNModel_SetTensorType(self, call):
        self.model(call, call.args[0]).set_tensor_type(call.args[1], call.args[2])

    def OH_NNModel_AddOperation(self, call):
        model, op, params, inputs, outputs = call.args
        self.model(call, model).add_operation(op, _indices(params), _indices(inputs), _indices(outputs))

    def OH_NNModel_SpecifyInputsAndOutputs(self, call):
        model, inputs, outputs = call.args
        self.model(call, model).specify_inputs_and_outputs(_indices(inputs), _indices(outputs))

    def OH_NNModel_Finish(self, call):
        self.model(call, call.args[0]).finish()

    def OH_NNModel_AddTensor(self, call):
        model, data_type, dims, tensor_type, count, num_bits, scales, zero_points = call.args
        quant = None
        if count is not None:
            if scales is None or zero_points is None or num_bits is None:
                raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER, "a quantParam with a NULL array")
            quant = QuantParam(list(scales[:count]), list(zero_points[:count]), list(num_bits[:count]))
        self.model(call, model).add_tensor_legacy(data_type, [] if dims is None else [int(d) for d in dims], quant,
                                                  tensor_type)

    # -- the calls that run them -----------------------------------------------------------------------------
    def OH_NNCompilation_Construct(self, call):
        if call.result and call.args[0] in self.models:
            self.compilations[call.result] = self.models[call.args[0]]

    def OH_NNExecutor_Construct(self, call):
        if call.result and call.args[0] in self.compilations:
            self.executors[call.result] = self.compilations[call.args[0]]

    def OH_NNExecutor_RunSync(self, call):
        executor, count = call.args[0], call.args[1]
        if executor not in self.executors or len(call.args) != 3 + 3 * count:
            return
        inputs = [_array(*call.args[3 + 3 * i:6 + 3 * i]) for i in range(count)]
        self.replay.runs.append(RecordedRun(self.executors[executor], inputs, call.name))

    OH_NNExecutor_RunAsync = OH_NNExecutor_RunSync

    def OH_NNExecutor_SetInput(self, call):
        executor, index, data_type, dims, data, length = call.args
        if executor in self.executors and data is not None:
            self.legacy_inputs.setdefault(executor, {})[index] = _array(data_type, dims, data[:length])

    OH_NNExecutor_SetInputWithMemory = OH_NNExecutor_SetInput

    def OH_NNExecutor_Run(self, call):
        executor = call.args[0]
        given = self.legacy_inputs.get(executor, {})
        if executor in self.executors:
            self.replay.runs.append(RecordedRun(self.executors[executor], [given[i] for i in sorted(given)],
                                                call.name))


def _indices(values) -> list[int] | None:
    return None if values is None else [int(v) for v in values]


def _array(data_type, shape, data) -> np.ndarray:
    dtype = to_numpy(OH_NN_DataType(data_type))
    dims = [int(d) for d in shape] if shape is not None else []
    return np.frombuffer(bytes(data), dtype.newbyteorder("<")).astype(dtype).reshape(dims)


def replay(calls: list[Call]) -> Replay:
    """Rebuild every model the calls construct, and collect the runs; a TraceError at the first call that the NNRt
    API refuses although the recorder accepted it."""
    replayer = _Replayer()
    for call in calls:
        handler = getattr(replayer, call.name, None)
        if handler is None or (call.result != _SUCCESS and _returns_code(call.name)):
            continue  # not a building call, or one the program saw fail (and so did not count on)
        try:
            handler(call)
        except NNRtError as error:
            raise TraceError(f"{call.describe()} is refused by the NNRt API ({error.code.name}): {error.message}") \
                from None
        except (TypeError, ValueError, IndexError) as error:
            raise TraceError(f"{call.describe()} is refused by the NNRt API: {error}") from None
    replayer.replay.calls = len(calls)
    return replayer.replay


_HANDLE_RESULTS = {"OH_NNModel_Construct", "OH_NNTensorDesc_Create", "OH_NNQuantParam_Create",
                   "OH_NNCompilation_Construct", "OH_NNExecutor_Construct", "OH_NNExecutor_CreateInputTensorDesc",
                   "OH_NNExecutor_CreateOutputTensorDesc", "OH_NNTensor_GetTensorDesc"}


def _returns_code(name: str) -> bool:
    return name not in _HANDLE_RESULTS


def replay_file(path: str | os.PathLike) -> Replay:
    """Read and replay the trace at ``path``."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise TraceError(f"cannot read the trace {os.fspath(path)}: {error.strerror or error}") from None
    if not data:
        raise TraceError(f"{os.fspath(path)} is empty: the program made no NNRt call")
    return replay(read_trace(data))
