"""The NNRt C API as Python functions: the 75 functions of ``neural_network_runtime.h`` and ``neural_network_core.h``.

A thin facade over the Python API (:class:`~nnrt_onnx.model.Model`, :class:`~nnrt_onnx.compilation.Compilation`,
:class:`~nnrt_onnx.executor.Executor`, :mod:`nnrt_onnx.tensor`, :mod:`nnrt_onnx.runtime.device`). Conventions (see
``docs/capi.md``):

* same names and parameter order as C, minus the out-parameters;
* a function returning ``OH_NN_ReturnCode`` returns the code, or ``(code, out1, ...)`` when C has
  out-parameters (outs are ``None`` on failure); handle-returning functions return the handle or ``None``;
* ``NULL`` is ``None``; destroy functions take the handle or a one-element list whose item is set to ``None``;
* no function raises: :class:`~nnrt_onnx.errors.NNRtError` becomes its code, a Python error caused by a bad
  argument (TypeError, ValueError, ...) becomes ``OH_NN_INVALID_PARAMETER``, ``MemoryError`` becomes
  ``OH_NN_MEMORY_ERROR`` and anything else ``OH_NN_FAILED``. The reason is logged on the ``nnrt_onnx.capi``
  logger at DEBUG level (the C runtime's LOGE).

Every enum member is importable from here under its C name (``OH_NN_OPS_CONV2D``, ``OH_NN_FLOAT32`` ...).
"""
from __future__ import annotations

import functools
import logging
import numbers
import operator
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import enums as _enums
from .compilation import Compilation
from .dtypes import element_size
from .enums import (  # noqa: F401 (re-exported:
    OH_NN_DataType,
    OH_NN_DeviceType,
    OH_NN_Format,
    OH_NN_FuseType,
    OH_NN_OperationType,  # the C enum names are part of
    OH_NN_PerformanceMode,
    OH_NN_Priority,
    OH_NN_ReturnCode,  # the facade)
    OH_NN_TensorType,
)
from .errors import NNRtError, invalid
from .executor import Executor, Memory
from .model import Model
from .runtime.device import all_device_ids, get_device
from .tensor import QuantParam, Tensor, TensorDesc

_log = logging.getLogger(__name__)

_SUCCESS = OH_NN_ReturnCode.OH_NN_SUCCESS
_FAILED = OH_NN_ReturnCode.OH_NN_FAILED
_INVALID = OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER

UINT32_MAX = 0xFFFFFFFF
SIZE_MAX = 0xFFFFFFFFFFFFFFFF
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

# Every enum member under its C name, e.g. OH_NN_OPS_CONV2D, OH_NN_FLOAT32, OH_NN_SUCCESS.
_ENUMS = tuple(getattr(_enums, name) for name in _enums.__all__)
_MEMBER_NAMES = [name for enum in _ENUMS for name in enum.__members__]
globals().update({name: member for enum in _ENUMS for name, member in enum.__members__.items()})

# Callback types (C typedefs); documentation only.
NN_OnRunDone = Callable[[Any, OH_NN_ReturnCode, list, int], None]
"""``NN_OnRunDone(userData, errCode, outputTensor, outputCount)``: called once when an async run ends."""
NN_OnServiceDied = Callable[[Any], None]
"""``NN_OnServiceDied(userData)``: stored only; the in-process devices have no service that can die."""


# ---------------------------------------------------------------------------------------------------------------
# Handles (opaque C pointers) and structs

class _Handle:
    """An opaque handle; ``_obj`` is the Python API object, ``None`` once destroyed."""

    __slots__ = ("_obj", "__weakref__")

    def __init__(self, obj):
        self._obj = obj

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {'destroyed' if self._obj is None else hex(id(self._obj))}>"


class OH_NNModel(_Handle):
    """``OH_NNModel *`` (wraps :class:`nnrt_onnx.model.Model`)."""
    __slots__ = ()


class OH_NNCompilation(_Handle):
    """``OH_NNCompilation *`` (wraps :class:`nnrt_onnx.compilation.Compilation`)."""
    __slots__ = ()


class OH_NNExecutor(_Handle):
    """``OH_NNExecutor *`` (wraps :class:`nnrt_onnx.executor.Executor`)."""
    __slots__ = ("_on_run_done", "_on_service_died", "_lock")

    def __init__(self, obj):
        super().__init__(obj)
        self._on_run_done = None
        self._on_service_died = None
        self._lock = threading.Lock()


class NN_TensorDesc(_Handle):
    """``NN_TensorDesc *`` (wraps :class:`nnrt_onnx.tensor.TensorDesc`)."""
    __slots__ = ()


class NN_Tensor(_Handle):
    """``NN_Tensor *`` (wraps :class:`nnrt_onnx.tensor.Tensor`)."""
    __slots__ = ()


class NN_QuantParam(_Handle):
    """``NN_QuantParam *`` (wraps a :class:`nnrt_onnx.tensor.QuantParam` filled by the three setters)."""
    __slots__ = ()


@dataclass
class OH_NN_UInt32Array:
    """``OH_NN_UInt32Array {uint32_t *data; uint32_t size;}``; ``size`` defaults to ``len(data)``."""

    data: Any = None
    size: int | None = None

    def __post_init__(self):
        if self.size is None:
            self.size = 0 if self.data is None else len(self.data)


@dataclass
class OH_NN_QuantParam:
    """``OH_NN_QuantParam {quantCount; numBits; scale; zeroPoint}`` (legacy, used by OH_NN_Tensor)."""

    quantCount: int = 0
    numBits: Any = None
    scale: Any = None
    zeroPoint: Any = None


@dataclass
class OH_NN_Tensor:
    """``OH_NN_Tensor {dataType; dimensionCount; dimensions; quantParam; type}`` (legacy);
    ``dimensionCount`` defaults to ``len(dimensions)``."""

    dataType: Any = OH_NN_DataType.OH_NN_UNKNOWN
    dimensionCount: int | None = None
    dimensions: Any = None
    quantParam: OH_NN_QuantParam | None = None
    type: Any = OH_NN_TensorType.OH_NN_TENSOR

    def __post_init__(self):
        if self.dimensionCount is None:
            self.dimensionCount = 0 if self.dimensions is None else len(self.dimensions)


@dataclass
class OH_NN_Memory:
    """``OH_NN_Memory {void *data; size_t length;}``: ``data`` is a writable memoryview of the shared memory."""

    data: Any = None
    length: int = 0
    _memory: Memory | None = field(default=None, init=False, repr=False, compare=False)  # set by Allocate*Memory


# ---------------------------------------------------------------------------------------------------------------
# The error barrier

_BAD_ARGUMENT = (TypeError, ValueError, AttributeError, OverflowError, IndexError, KeyError, BufferError,
                 LookupError, ArithmeticError)


def _failure_code(name: str, exc: Exception) -> OH_NN_ReturnCode:
    if isinstance(exc, NNRtError):
        code = exc.code
    elif isinstance(exc, MemoryError):
        code = OH_NN_ReturnCode.OH_NN_MEMORY_ERROR
    elif isinstance(exc, _BAD_ARGUMENT):
        code = _INVALID
    else:
        code = _FAILED
    _log.debug("%s failed with %s: %s: %s", name, code.name, type(exc).__name__, exc)
    return code


def _returns_code(outs: int = 0):
    """C result ``OH_NN_ReturnCode``; with ``outs`` out-parameters the result is ``(code, out1, ...)``."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # the C API never raises
                code = _failure_code(fn.__name__, exc)
                return (code,) + (None,) * outs if outs else code

        return wrapper

    return decorate


def _returns_pointer(fn):
    """C result is a pointer: the object, or ``None`` (NULL) on any failure."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            _failure_code(fn.__name__, exc)
            return None

    return wrapper


_returns_void = _returns_pointer  # a void function returns None whatever happens


# ---------------------------------------------------------------------------------------------------------------
# Argument conversion (C types)

def _get(handle, cls, what: str):
    if handle is None:
        raise invalid(f"{what} is NULL")
    if not isinstance(handle, cls):
        raise invalid(f"{what} must be an {cls.__name__}, got {type(handle).__name__}")
    if handle._obj is None:
        raise invalid(f"{what} was destroyed")
    return handle._obj


def _target(arg, what: str):
    """A destroy function's ``T **``: the handle itself or a one-element list. Returns (list or None, handle)."""
    if isinstance(arg, list):
        if len(arg) != 1:
            raise invalid(f"{what}: a T** list must have exactly one element, got {len(arg)}")
        return arg, arg[0]
    return None, arg


def _destroy(arg, cls, what: str):
    holder, handle = _target(arg, what)
    obj = _get(handle, cls, f"*{what}" if holder is not None else what)
    return holder, handle, obj


def _finish_destroy(holder, handle) -> None:
    handle._obj = None
    if holder is not None:
        holder[0] = None


def _uint(value, bits: int, what: str) -> int:
    if value is None:
        raise invalid(f"{what} is NULL")
    number = operator.index(value)
    if not 0 <= number < (1 << bits):
        raise invalid(f"{what} {number} is outside the uint{bits}_t range")
    return number


def _int32(value, what: str) -> int:
    if value is None:
        raise invalid(f"{what} is NULL")
    number = operator.index(value)
    if not INT32_MIN <= number <= INT32_MAX:
        raise invalid(f"{what} {number} is outside the int32_t range")
    return number


def _enum_value(value, what: str) -> int:
    """An enum parameter: a member or a plain int (range checked by the Python API, in C order)."""
    if value is None:
        raise invalid(f"{what} is NULL")
    return operator.index(value)


def _cstr(value, what: str) -> str:
    if value is None:
        raise invalid(f"{what} is NULL")
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
        return value.decode("utf-8") if isinstance(value, bytes) else value
    if not isinstance(value, str):
        raise invalid(f"{what} must be a str, got {type(value).__name__}")
    return value


def _device(device_id, what: str = "deviceID") -> int:
    """``size_t deviceID``; 0 means the first device, as in the runtime's BackendManager."""
    number = _uint(device_id, 64, what)
    ids = all_device_ids()
    return ids[0] if number == 0 and ids else number


def _bytes_view(buffer, length: int, what: str, writable: bool = False) -> memoryview:
    """The first ``length`` bytes of a buffer-protocol object (the C pointer + length pair)."""
    if buffer is None:
        raise invalid(f"{what} is NULL")
    view = memoryview(buffer)
    if writable and view.readonly:
        raise invalid(f"{what} is read-only")
    if not view.c_contiguous:
        raise invalid(f"{what} is not a contiguous buffer")
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    if length > view.nbytes:
        raise invalid(f"{what}: length {length} exceeds the buffer's {view.nbytes} bytes")
    return view[:length]


def _counted(values, count, what: str, element) -> tuple:
    """A (pointer, count) pair of a struct: NULL with count 0, or a sequence holding >= count elements."""
    count = _uint(count, 32, f"{what} count")
    if values is None:
        if count:
            raise invalid(f"{what} is NULL but its count is {count}")
        return ()
    if isinstance(values, str):
        raise invalid(f"{what} must be a sequence of integers, got a str")
    values = list(values)
    if count == 0 and values:
        raise invalid(f"{what} has {len(values)} elements but its count is 0")
    if count > len(values):
        raise invalid(f"{what} has {len(values)} elements, fewer than its count {count}")
    return tuple(element(v, what) for v in values[:count])


def _array(values, count, what: str, element) -> list:
    """A ``const T *values, size_t count`` parameter pair: non-NULL, count > 0, enough elements."""
    if values is None:
        raise invalid(f"{what} is NULL")
    count = _uint(count, 64, f"{what} count")
    if count == 0:
        raise invalid(f"{what} count is 0")
    if isinstance(values, str):
        raise invalid(f"{what} must be a sequence, got a str")
    values = list(values)
    if count > len(values):
        raise invalid(f"{what} has {len(values)} elements, fewer than the count {count}")
    return [element(v, what) for v in values[:count]]


def _uint32_array(arr, what: str) -> tuple[int, ...]:
    """``const OH_NN_UInt32Array *``: the struct or a plain sequence of ints."""
    if arr is None:
        raise invalid(f"{what} is NULL")
    if isinstance(arr, OH_NN_UInt32Array):
        return _counted(arr.data, arr.size, what, lambda v, w: _uint(v, 32, w))
    if isinstance(arr, str):
        raise invalid(f"{what} must be a sequence of indices, got a str")
    return tuple(_uint(v, 32, what) for v in arr)


def _real(value, what: str) -> float:
    if not isinstance(value, numbers.Real):
        raise invalid(f"{what}: {value!r} is not a number")
    return float(value)


def _legacy_quant(quant) -> QuantParam | None:
    if quant is None:
        return None
    if not isinstance(quant, OH_NN_QuantParam):
        raise invalid(f"quantParam must be an OH_NN_QuantParam, got {type(quant).__name__}")
    if quant.numBits is None or quant.scale is None or quant.zeroPoint is None:
        raise invalid("quantParam needs non-NULL numBits, scale and zeroPoint")
    count = _uint(quant.quantCount, 32, "quantCount")
    bits = _counted(quant.numBits, count, "numBits", lambda v, w: _uint(v, 32, w))
    scales = _counted(quant.scale, count, "scale", _real)
    zeros = _counted(quant.zeroPoint, count, "zeroPoint", _int32)
    return QuantParam(list(scales), list(zeros), list(bits))


def _legacy_tensor(tensor, what: str = "tensor"):
    """``const OH_NN_Tensor *`` -> (dataType, dims, QuantParam or None, type)."""
    if tensor is None:
        raise invalid(f"{what} is NULL")
    if not isinstance(tensor, OH_NN_Tensor):
        raise invalid(f"{what} must be an OH_NN_Tensor, got {type(tensor).__name__}")
    dims = _counted(tensor.dimensions, tensor.dimensionCount, "dimensions", _int32)
    return (_enum_value(tensor.dataType, "dataType"), dims, _legacy_quant(tensor.quantParam),
            _enum_value(tensor.type, "type"))


def _memory_arg(memory, writable: bool) -> Memory:
    """``const OH_NN_Memory *``: one from Allocate*Memory, or a user struct over any buffer."""
    if memory is None:
        raise invalid("memory is NULL")
    if not isinstance(memory, OH_NN_Memory):
        raise invalid(f"memory must be an OH_NN_Memory, got {type(memory).__name__}")
    if memory._memory is not None:
        return memory._memory
    length = _uint(memory.length, 64, "memory length")
    return Memory(_bytes_view(memory.data, length, "memory data", writable), length)


def _tensor_array(tensors, count, what: str) -> list[NN_Tensor]:
    """``NN_Tensor *tensors[], size_t count``."""
    if tensors is None:
        raise invalid(f"{what} is NULL")
    count = _uint(count, 64, f"{what} count")
    if count == 0:
        raise invalid(f"{what} count is 0")
    handles = list(tensors)
    if count > len(handles):
        raise invalid(f"{what} has {len(handles)} tensors, fewer than the count {count}")
    handles = handles[:count]
    for position, handle in enumerate(handles):
        _get(handle, NN_Tensor, f"{what}[{position}]")
    return handles


def _desc_byte_size(desc: TensorDesc) -> int:
    """``TensorDesc::GetByteSize``: INVALID for an unset shape or OH_NN_UNKNOWN, 0 for a dynamic shape."""
    if not desc.shape:
        raise invalid("the tensor desc has no shape (call OH_NNTensorDesc_SetShape)")
    if desc.is_dynamic:
        return 0
    size = element_size(desc.data_type)
    if size == 0:
        raise invalid("the tensor desc's data type is OH_NN_UNKNOWN")
    return desc.element_count * size


# ---------------------------------------------------------------------------------------------------------------
# neural_network_runtime.h: quantization parameters

@_returns_pointer
def OH_NNQuantParam_Create():
    return NN_QuantParam(QuantParam([], [], []))


@_returns_code()
def OH_NNQuantParam_SetScales(quantParams, scales, quantCount):
    quant = _get(quantParams, NN_QuantParam, "quantParams")
    quant.scales = _array(scales, quantCount, "scales", _real)
    return _SUCCESS


@_returns_code()
def OH_NNQuantParam_SetZeroPoints(quantParams, zeroPoints, quantCount):
    quant = _get(quantParams, NN_QuantParam, "quantParams")
    quant.zero_points = _array(zeroPoints, quantCount, "zeroPoints", _int32)
    return _SUCCESS


@_returns_code()
def OH_NNQuantParam_SetNumBits(quantParams, numBits, quantCount):
    quant = _get(quantParams, NN_QuantParam, "quantParams")
    quant.num_bits = _array(numBits, quantCount, "numBits", lambda v, w: _uint(v, 32, w))
    return _SUCCESS


@_returns_code()
def OH_NNQuantParam_Destroy(quantParams):
    holder, handle, _ = _destroy(quantParams, NN_QuantParam, "quantParams")
    _finish_destroy(holder, handle)
    return _SUCCESS


# ---------------------------------------------------------------------------------------------------------------
# neural_network_runtime.h: model building

@_returns_pointer
def OH_NNModel_Construct():
    return OH_NNModel(Model())


@_returns_code()
def OH_NNModel_AddTensorToModel(model, tensorDesc):
    inner = _get(model, OH_NNModel, "model")
    inner.add_tensor(_get(tensorDesc, NN_TensorDesc, "tensorDesc"))
    return _SUCCESS


@_returns_code()
def OH_NNModel_SetTensorData(model, index, dataBuffer, length):
    inner = _get(model, OH_NNModel, "model")
    if dataBuffer is None:
        raise invalid("dataBuffer is NULL")
    length = _uint(length, 64, "length")
    if length == 0:
        raise invalid("length is 0")
    inner.set_tensor_data(_uint(index, 32, "index"), _bytes_view(dataBuffer, length, "dataBuffer"))
    return _SUCCESS


@_returns_code()
def OH_NNModel_SetTensorQuantParams(model, index, quantParam):
    inner = _get(model, OH_NNModel, "model")
    quant = _get(quantParam, NN_QuantParam, "quantParam")
    copy = QuantParam(list(quant.scales), list(quant.zero_points), list(quant.num_bits))  # C copies the vectors
    inner.set_tensor_quant_params(_uint(index, 32, "index"), copy)
    return _SUCCESS


@_returns_code()
def OH_NNModel_SetTensorType(model, index, tensorType):
    inner = _get(model, OH_NNModel, "model")
    inner.set_tensor_type(_uint(index, 32, "index"), _enum_value(tensorType, "tensorType"))
    return _SUCCESS


@_returns_code()
def OH_NNModel_AddOperation(model, op, paramIndices, inputIndices, outputIndices):
    inner = _get(model, OH_NNModel, "model")
    params = _uint32_array(paramIndices, "paramIndices")
    inputs = _uint32_array(inputIndices, "inputIndices")
    outputs = _uint32_array(outputIndices, "outputIndices")
    inner.add_operation(_enum_value(op, "op"), params, inputs, outputs)
    return _SUCCESS


@_returns_code()
def OH_NNModel_SpecifyInputsAndOutputs(model, inputIndices, outputIndices):
    inner = _get(model, OH_NNModel, "model")
    inner.specify_inputs_and_outputs(_uint32_array(inputIndices, "inputIndices"),
                                     _uint32_array(outputIndices, "outputIndices"))
    return _SUCCESS


@_returns_code()
def OH_NNModel_Finish(model):
    _get(model, OH_NNModel, "model").finish()
    return _SUCCESS


@_returns_void
def OH_NNModel_Destroy(model):
    holder, handle, _ = _destroy(model, OH_NNModel, "model")
    _finish_destroy(holder, handle)


@_returns_code(outs=1)
def OH_NNModel_GetAvailableOperations(model, deviceID):
    inner = _get(model, OH_NNModel, "model")
    return _SUCCESS, list(inner.get_available_operations(_device(deviceID)))


@_returns_code()
def OH_NNModel_AddTensor(model, tensor):
    inner = _get(model, OH_NNModel, "model")
    data_type, dims, quant, tensor_type = _legacy_tensor(tensor)
    inner.add_tensor_legacy(data_type, dims, quant, tensor_type)
    return _SUCCESS


# ---------------------------------------------------------------------------------------------------------------
# neural_network_runtime.h: API-9 executor calls (deprecated since 11)

@_returns_code()
def OH_NNExecutor_SetInput(executor, inputIndex, tensor, dataBuffer, length):
    inner = _get(executor, OH_NNExecutor, "executor")
    index = _uint(inputIndex, 32, "inputIndex")
    data_type, dims, _quant, tensor_type = _legacy_tensor(tensor)
    if dataBuffer is None:
        raise invalid("dataBuffer is NULL")
    length = _uint(length, 64, "length")
    if length == 0:
        raise invalid("length is 0")
    inner.set_input(index, _bytes_view(dataBuffer, length, "dataBuffer"), data_type, dims, tensor_type, length)
    return _SUCCESS


@_returns_code()
def OH_NNExecutor_SetOutput(executor, outputIndex, dataBuffer, length):
    inner = _get(executor, OH_NNExecutor, "executor")
    index = _uint(outputIndex, 32, "outputIndex")
    if dataBuffer is None:
        raise invalid("dataBuffer is NULL")
    length = _uint(length, 64, "length")
    if length == 0:
        raise invalid("length is 0")
    inner.set_output(index, _bytes_view(dataBuffer, length, "dataBuffer", writable=True), length)
    return _SUCCESS


@_returns_code()
def OH_NNExecutor_Run(executor):
    _get(executor, OH_NNExecutor, "executor").run()
    return _SUCCESS


def _allocate(executor, index, length, kind: str) -> OH_NN_Memory:
    inner = _get(executor, OH_NNExecutor, "executor")
    index = _uint(index, 32, f"{kind}Index")
    length = _uint(length, 64, "length")
    allocate = inner.allocate_input_memory if kind == "input" else inner.allocate_output_memory
    memory = allocate(index, length)
    handle = OH_NN_Memory(memoryview(memory.data), memory.length)
    handle._memory = memory
    return handle


def _release(executor, index, memory, kind: str) -> None:
    inner = _get(executor, OH_NNExecutor, "executor")
    holder, handle = _target(memory, "memory")
    if handle is None:
        raise invalid("memory is NULL")
    if not isinstance(handle, OH_NN_Memory) or handle._memory is None:
        raise invalid("memory was not allocated by OH_NNExecutor_Allocate*Memory")
    inner.destroy_memory(kind, _uint(index, 32, f"{kind}Index"), handle._memory)
    if holder is not None:
        holder[0] = None


@_returns_pointer
def OH_NNExecutor_AllocateInputMemory(executor, inputIndex, length):
    return _allocate(executor, inputIndex, length, "input")


@_returns_pointer
def OH_NNExecutor_AllocateOutputMemory(executor, outputIndex, length):
    return _allocate(executor, outputIndex, length, "output")


@_returns_void
def OH_NNExecutor_DestroyInputMemory(executor, inputIndex, memory):
    _release(executor, inputIndex, memory, "input")


@_returns_void
def OH_NNExecutor_DestroyOutputMemory(executor, outputIndex, memory):
    _release(executor, outputIndex, memory, "output")


@_returns_code()
def OH_NNExecutor_SetInputWithMemory(executor, inputIndex, tensor, memory):
    inner = _get(executor, OH_NNExecutor, "executor")
    index = _uint(inputIndex, 32, "inputIndex")
    data_type, dims, _quant, tensor_type = _legacy_tensor(tensor)
    inner.set_input_with_memory(index, data_type, dims, _memory_arg(memory, writable=False), tensor_type)
    return _SUCCESS


@_returns_code()
def OH_NNExecutor_SetOutputWithMemory(executor, outputIndex, memory):
    inner = _get(executor, OH_NNExecutor, "executor")
    inner.set_output_with_memory(_uint(outputIndex, 32, "outputIndex"), _memory_arg(memory, writable=True))
    return _SUCCESS


# ---------------------------------------------------------------------------------------------------------------
# neural_network_core.h: compilation

@_returns_pointer
def OH_NNCompilation_Construct(model):
    return OH_NNCompilation(Compilation(_get(model, OH_NNModel, "model")))


@_returns_pointer
def OH_NNCompilation_ConstructWithOfflineModelFile(modelPath):
    path = _cstr(modelPath, "modelPath")
    return OH_NNCompilation(Compilation.for_offline_model(f"offline model file {path!r}"))


@_returns_pointer
def OH_NNCompilation_ConstructWithOfflineModelBuffer(modelBuffer, modelSize):
    if modelBuffer is None:
        raise invalid("modelBuffer is NULL")
    size = _uint(modelSize, 64, "modelSize")
    if size == 0:
        raise invalid("modelSize is 0")
    _bytes_view(modelBuffer, size, "modelBuffer")
    return OH_NNCompilation(Compilation.for_offline_model(f"offline model buffer of {size} bytes"))


@_returns_pointer
def OH_NNCompilation_ConstructForCache():
    return OH_NNCompilation(Compilation.for_cache())


@_returns_code(outs=1)
def OH_NNCompilation_ExportCacheToBuffer(compilation, buffer, length):
    inner = _get(compilation, OH_NNCompilation, "compilation")
    if buffer is None:
        raise invalid("buffer is NULL")
    length = _uint(length, 64, "length")
    if length == 0:
        raise invalid("length is 0")
    view = _bytes_view(buffer, length, "buffer", writable=True)
    data = inner.export_cache_to_buffer()
    if len(data) > length:
        raise invalid(f"the cache needs {len(data)} bytes, the buffer has {length}")
    view[: len(data)] = data
    return _SUCCESS, len(data)


@_returns_code()
def OH_NNCompilation_ImportCacheFromBuffer(compilation, buffer, modelSize):
    inner = _get(compilation, OH_NNCompilation, "compilation")
    if buffer is None:
        raise invalid("buffer is NULL")
    size = _uint(modelSize, 64, "modelSize")
    if size == 0:
        raise invalid("modelSize is 0")
    inner.import_cache_from_buffer(bytes(_bytes_view(buffer, size, "buffer")))
    return _SUCCESS


@_returns_code()
def OH_NNCompilation_AddExtensionConfig(compilation, configName, configValue, configValueSize):
    inner = _get(compilation, OH_NNCompilation, "compilation")
    name = _cstr(configName, "configName")
    if configValue is None:
        raise invalid("configValue is NULL")
    size = _uint(configValueSize, 64, "configValueSize")
    if size == 0:
        raise invalid("configValueSize is 0")
    if not name:
        raise invalid("configName is empty")
    value = bytes(_bytes_view(configValue, size, "configValue"))
    if name in inner.options.extensions:
        raise NNRtError(_FAILED, f"extension config {name!r} is already set")
    inner.add_extension_config(name, value)
    return _SUCCESS


@_returns_code()
def OH_NNCompilation_SetDevice(compilation, deviceID):
    _get(compilation, OH_NNCompilation, "compilation").set_device(_device(deviceID))
    return _SUCCESS


@_returns_code()
def OH_NNCompilation_SetCache(compilation, cachePath, version):
    inner = _get(compilation, OH_NNCompilation, "compilation")
    inner.set_cache(_cstr(cachePath, "cachePath"), _uint(version, 32, "version"))
    return _SUCCESS


@_returns_code()
def OH_NNCompilation_SetPerformanceMode(compilation, performanceMode):
    inner = _get(compilation, OH_NNCompilation, "compilation")
    inner.set_performance_mode(_enum_value(performanceMode, "performanceMode"))
    return _SUCCESS


@_returns_code()
def OH_NNCompilation_SetPriority(compilation, priority):
    _get(compilation, OH_NNCompilation, "compilation").set_priority(_enum_value(priority, "priority"))
    return _SUCCESS


@_returns_code()
def OH_NNCompilation_EnableFloat16(compilation, enableFloat16):
    inner = _get(compilation, OH_NNCompilation, "compilation")
    if not isinstance(enableFloat16, (bool, int, np.bool_, np.integer)):
        raise invalid(f"enableFloat16 must be a bool, got {type(enableFloat16).__name__}")
    inner.enable_float16(bool(enableFloat16))
    return _SUCCESS


@_returns_code()
def OH_NNCompilation_Build(compilation):
    _get(compilation, OH_NNCompilation, "compilation").build()
    return _SUCCESS


@_returns_void
def OH_NNCompilation_Destroy(compilation):
    holder, handle, _ = _destroy(compilation, OH_NNCompilation, "compilation")
    _finish_destroy(holder, handle)


# ---------------------------------------------------------------------------------------------------------------
# neural_network_core.h: tensor descriptions

@_returns_pointer
def OH_NNTensorDesc_Create():
    return NN_TensorDesc(TensorDesc())


@_returns_code()
def OH_NNTensorDesc_Destroy(tensorDesc):
    holder, handle, _ = _destroy(tensorDesc, NN_TensorDesc, "tensorDesc")
    _finish_destroy(holder, handle)
    return _SUCCESS


@_returns_code()
def OH_NNTensorDesc_SetName(tensorDesc, name):
    desc = _get(tensorDesc, NN_TensorDesc, "tensorDesc")
    desc.name = _cstr(name, "name")
    return _SUCCESS


@_returns_code(outs=1)
def OH_NNTensorDesc_GetName(tensorDesc):
    return _SUCCESS, _get(tensorDesc, NN_TensorDesc, "tensorDesc").name


@_returns_code()
def OH_NNTensorDesc_SetDataType(tensorDesc, dataType):
    _get(tensorDesc, NN_TensorDesc, "tensorDesc").set_data_type(_enum_value(dataType, "dataType"))
    return _SUCCESS


@_returns_code(outs=1)
def OH_NNTensorDesc_GetDataType(tensorDesc):
    return _SUCCESS, _get(tensorDesc, NN_TensorDesc, "tensorDesc").data_type


@_returns_code()
def OH_NNTensorDesc_SetShape(tensorDesc, shape, shapeLength):
    desc = _get(tensorDesc, NN_TensorDesc, "tensorDesc")
    desc.set_shape(_array(shape, shapeLength, "shape", _int32))
    return _SUCCESS


@_returns_code(outs=1)
def OH_NNTensorDesc_GetShape(tensorDesc):
    return _SUCCESS, list(_get(tensorDesc, NN_TensorDesc, "tensorDesc").shape)


@_returns_code()
def OH_NNTensorDesc_SetFormat(tensorDesc, format):  # noqa: A002 - the C parameter name
    _get(tensorDesc, NN_TensorDesc, "tensorDesc").set_format(_enum_value(format, "format"))
    return _SUCCESS


@_returns_code(outs=1)
def OH_NNTensorDesc_GetFormat(tensorDesc):
    return _SUCCESS, _get(tensorDesc, NN_TensorDesc, "tensorDesc").format


@_returns_code(outs=1)
def OH_NNTensorDesc_GetElementCount(tensorDesc):
    desc = _get(tensorDesc, NN_TensorDesc, "tensorDesc")
    if not desc.shape:
        raise invalid("the tensor desc has no shape (call OH_NNTensorDesc_SetShape)")
    if desc.is_dynamic:  # C writes 0 and returns OH_NN_DYNAMIC_SHAPE
        return OH_NN_ReturnCode.OH_NN_DYNAMIC_SHAPE, 0
    return _SUCCESS, desc.element_count


@_returns_code(outs=1)
def OH_NNTensorDesc_GetByteSize(tensorDesc):
    return _SUCCESS, _desc_byte_size(_get(tensorDesc, NN_TensorDesc, "tensorDesc"))


# ---------------------------------------------------------------------------------------------------------------
# neural_network_core.h: tensors

def _create_tensor(deviceID, tensorDesc, size=None) -> NN_Tensor:
    desc = _get(tensorDesc, NN_TensorDesc, "tensorDesc")
    device = get_device(_device(deviceID)).id
    _desc_byte_size(desc)  # the runtime refuses descs without a byte size (no shape, OH_NN_UNKNOWN)
    return NN_Tensor(Tensor(device, desc, None if size is None else _uint(size, 64, "size")))


@_returns_pointer
def OH_NNTensor_Create(deviceID, tensorDesc):
    return _create_tensor(deviceID, tensorDesc)


@_returns_pointer
def OH_NNTensor_CreateWithSize(deviceID, tensorDesc, size):
    return _create_tensor(deviceID, tensorDesc, size)


@_returns_pointer
def OH_NNTensor_CreateWithFd(deviceID, tensorDesc, fd, size, offset):
    """Always NULL: tensors over a file descriptor need a hardware driver's shared memory."""
    _get(tensorDesc, NN_TensorDesc, "tensorDesc")
    if _int32(fd, "fd") < 0 or _uint(size, 64, "size") == 0 or size < _uint(offset, 64, "offset"):
        raise invalid("fd must be >= 0, size > 0 and offset <= size")
    get_device(_device(deviceID))
    raise NNRtError(OH_NN_ReturnCode.OH_NN_UNSUPPORTED, "the in-process devices have no fd-backed memory")


@_returns_code()
def OH_NNTensor_Destroy(tensor):
    holder, handle, _ = _destroy(tensor, NN_Tensor, "tensor")
    _finish_destroy(holder, handle)
    return _SUCCESS


@_returns_pointer
def OH_NNTensor_GetTensorDesc(tensor):
    """The tensor's own description (a live view, as in C: do not destroy it while using the tensor)."""
    return NN_TensorDesc(_get(tensor, NN_Tensor, "tensor").desc)


@_returns_pointer
def OH_NNTensor_GetDataBuffer(tensor):
    """A writable memoryview of the tensor's bytes (``np.frombuffer`` gives an array over the same memory)."""
    return _get(tensor, NN_Tensor, "tensor").buffer


@_returns_code(outs=1)
def OH_NNTensor_GetFd(tensor):
    """Host memory has no file descriptor: ``(OH_NN_SUCCESS, -1)``."""
    _get(tensor, NN_Tensor, "tensor")
    return _SUCCESS, -1


@_returns_code(outs=1)
def OH_NNTensor_GetSize(tensor):
    return _SUCCESS, _get(tensor, NN_Tensor, "tensor").size


@_returns_code(outs=1)
def OH_NNTensor_GetOffset(tensor):
    return _SUCCESS, _get(tensor, NN_Tensor, "tensor").offset


# ---------------------------------------------------------------------------------------------------------------
# neural_network_core.h: executor

@_returns_pointer
def OH_NNExecutor_Construct(compilation):
    return OH_NNExecutor(Executor(_get(compilation, OH_NNCompilation, "compilation")))


@_returns_code(outs=1)
def OH_NNExecutor_GetOutputShape(executor, outputIndex):
    inner = _get(executor, OH_NNExecutor, "executor")
    return _SUCCESS, list(inner.output_shape(_uint(outputIndex, 32, "outputIndex")))


@_returns_void
def OH_NNExecutor_Destroy(executor):
    holder, handle, _ = _destroy(executor, OH_NNExecutor, "executor")
    _finish_destroy(holder, handle)


@_returns_code(outs=1)
def OH_NNExecutor_GetInputCount(executor):
    return _SUCCESS, _get(executor, OH_NNExecutor, "executor").input_count


@_returns_code(outs=1)
def OH_NNExecutor_GetOutputCount(executor):
    return _SUCCESS, _get(executor, OH_NNExecutor, "executor").output_count


@_returns_pointer
def OH_NNExecutor_CreateInputTensorDesc(executor, index):
    inner = _get(executor, OH_NNExecutor, "executor")
    return NN_TensorDesc(inner.create_input_tensor_desc(_uint(index, 64, "index")))


@_returns_pointer
def OH_NNExecutor_CreateOutputTensorDesc(executor, index):
    inner = _get(executor, OH_NNExecutor, "executor")
    return NN_TensorDesc(inner.create_output_tensor_desc(_uint(index, 64, "index")))


@_returns_code(outs=2)
def OH_NNExecutor_GetInputDimRange(executor, index):
    inner = _get(executor, OH_NNExecutor, "executor")
    mins, maxs = inner.input_dim_range(_uint(index, 64, "index"))
    return _SUCCESS, list(mins), list(maxs)


def _callback(fn, what: str):
    if fn is None:
        raise invalid(f"{what} is NULL")
    if not callable(fn):
        raise invalid(f"{what} must be callable, got {type(fn).__name__}")
    return fn


@_returns_code()
def OH_NNExecutor_SetOnRunDone(executor, onRunDone):
    inner = _get(executor, OH_NNExecutor, "executor")
    executor._on_run_done = inner.on_run_done = _callback(onRunDone, "onRunDone")
    return _SUCCESS


@_returns_code()
def OH_NNExecutor_SetOnServiceDied(executor, onServiceDied):
    inner = _get(executor, OH_NNExecutor, "executor")
    executor._on_service_died = inner.on_service_died = _callback(onServiceDied, "onServiceDied")
    return _SUCCESS


@_returns_code()
def OH_NNExecutor_RunSync(executor, inputTensor, inputCount, outputTensor, outputCount):
    inner = _get(executor, OH_NNExecutor, "executor")
    inputs = _tensor_array(inputTensor, inputCount, "inputTensor")
    outputs = _tensor_array(outputTensor, outputCount, "outputTensor")
    inner.run_sync([t._obj for t in inputs], [t._obj for t in outputs])
    return _SUCCESS


@_returns_code()
def OH_NNExecutor_RunAsync(executor, inputTensor, inputCount, outputTensor, outputCount, timeout, userData):
    inner = _get(executor, OH_NNExecutor, "executor")
    inputs = _tensor_array(inputTensor, inputCount, "inputTensor")
    outputs = _tensor_array(outputTensor, outputCount, "outputTensor")
    timeout = _int32(timeout, "timeout")
    if userData is None:
        raise invalid("userData is NULL")
    user_callback = executor._on_run_done
    if user_callback is None:
        raise invalid("set a callback with OH_NNExecutor_SetOnRunDone before OH_NNExecutor_RunAsync")

    def on_run_done(user_data, code, _tensors, count):
        # The callback sees the NN_Tensor handles it passed, not the Python API objects behind them.
        user_callback(user_data, code, list(outputs), count)

    with executor._lock:  # the Python executor reads on_run_done when the run starts
        inner.on_run_done = on_run_done
        try:
            inner.run_async([t._obj for t in inputs], [t._obj for t in outputs], timeout, userData)
        finally:
            inner.on_run_done = user_callback
    return _SUCCESS


# ---------------------------------------------------------------------------------------------------------------
# neural_network_core.h: devices

@_returns_code(outs=1)
def OH_NNDevice_GetAllDevicesID():
    return _SUCCESS, list(all_device_ids())


@_returns_code(outs=1)
def OH_NNDevice_GetName(deviceID):
    device_id = _device(deviceID)
    try:
        device = get_device(device_id)
    except NNRtError as exc:  # the runtime reports an unknown id here as OH_NN_FAILED
        raise NNRtError(_FAILED, exc.message) from None
    return _SUCCESS, device.name


@_returns_code(outs=1)
def OH_NNDevice_GetType(deviceID):
    return _SUCCESS, OH_NN_DeviceType(get_device(_device(deviceID)).device_type)


FUNCTIONS = (
    "OH_NNQuantParam_Create", "OH_NNQuantParam_SetScales", "OH_NNQuantParam_SetZeroPoints",
    "OH_NNQuantParam_SetNumBits", "OH_NNQuantParam_Destroy", "OH_NNModel_Construct", "OH_NNModel_AddTensorToModel",
    "OH_NNModel_SetTensorData", "OH_NNModel_SetTensorQuantParams", "OH_NNModel_SetTensorType",
    "OH_NNModel_AddOperation", "OH_NNModel_SpecifyInputsAndOutputs", "OH_NNModel_Finish", "OH_NNModel_Destroy",
    "OH_NNModel_GetAvailableOperations", "OH_NNModel_AddTensor", "OH_NNExecutor_SetInput", "OH_NNExecutor_SetOutput",
    "OH_NNExecutor_Run", "OH_NNExecutor_AllocateInputMemory", "OH_NNExecutor_AllocateOutputMemory",
    "OH_NNExecutor_DestroyInputMemory", "OH_NNExecutor_DestroyOutputMemory", "OH_NNExecutor_SetInputWithMemory",
    "OH_NNExecutor_SetOutputWithMemory", "OH_NNCompilation_Construct", "OH_NNCompilation_ConstructWithOfflineModelFile",
    "OH_NNCompilation_ConstructWithOfflineModelBuffer", "OH_NNCompilation_ConstructForCache",
    "OH_NNCompilation_ExportCacheToBuffer", "OH_NNCompilation_ImportCacheFromBuffer",
    "OH_NNCompilation_AddExtensionConfig", "OH_NNCompilation_SetDevice", "OH_NNCompilation_SetCache",
    "OH_NNCompilation_SetPerformanceMode", "OH_NNCompilation_SetPriority", "OH_NNCompilation_EnableFloat16",
    "OH_NNCompilation_Build", "OH_NNCompilation_Destroy", "OH_NNTensorDesc_Create", "OH_NNTensorDesc_Destroy",
    "OH_NNTensorDesc_SetName", "OH_NNTensorDesc_GetName", "OH_NNTensorDesc_SetDataType", "OH_NNTensorDesc_GetDataType",
    "OH_NNTensorDesc_SetShape", "OH_NNTensorDesc_GetShape", "OH_NNTensorDesc_SetFormat", "OH_NNTensorDesc_GetFormat",
    "OH_NNTensorDesc_GetElementCount", "OH_NNTensorDesc_GetByteSize", "OH_NNTensor_Create",
    "OH_NNTensor_CreateWithSize", "OH_NNTensor_CreateWithFd", "OH_NNTensor_Destroy", "OH_NNTensor_GetTensorDesc",
    "OH_NNTensor_GetDataBuffer", "OH_NNTensor_GetFd", "OH_NNTensor_GetSize", "OH_NNTensor_GetOffset",
    "OH_NNExecutor_Construct", "OH_NNExecutor_GetOutputShape", "OH_NNExecutor_Destroy", "OH_NNExecutor_GetInputCount",
    "OH_NNExecutor_GetOutputCount", "OH_NNExecutor_CreateInputTensorDesc", "OH_NNExecutor_CreateOutputTensorDesc",
    "OH_NNExecutor_GetInputDimRange", "OH_NNExecutor_SetOnRunDone", "OH_NNExecutor_SetOnServiceDied",
    "OH_NNExecutor_RunSync", "OH_NNExecutor_RunAsync", "OH_NNDevice_GetAllDevicesID", "OH_NNDevice_GetName",
    "OH_NNDevice_GetType",
)
"""The 75 C functions, in the order of the headers' function tables."""

__all__ = [
    *FUNCTIONS,
    "OH_NNModel", "OH_NNCompilation", "OH_NNExecutor", "NN_TensorDesc", "NN_Tensor", "NN_QuantParam",
    "OH_NN_UInt32Array", "OH_NN_QuantParam", "OH_NN_Tensor", "OH_NN_Memory", "NN_OnRunDone", "NN_OnServiceDied",
    *(enum.__name__ for enum in _ENUMS), *_MEMBER_NAMES,
]
