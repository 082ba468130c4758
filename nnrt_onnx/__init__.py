"""nnrt_onnx: OpenHarmony's Neural Network Runtime (NNRt) model API in Python, native kernels, and ONNX conversion.

``import nnrt_onnx`` is light (no numpy, kernels, onnx or onnxruntime): the API's classes and functions load on first
use, and the devices -- the native CPU (id 1) and onnxruntime (id 2) -- on the device registry's first use."""
from __future__ import annotations

from .enums import (
    OH_NN_DataType,
    OH_NN_DeviceType,
    OH_NN_Format,
    OH_NN_FuseType,
    OH_NN_OperationType,
    OH_NN_PerformanceMode,
    OH_NN_Priority,
    OH_NN_ReturnCode,
    OH_NN_TensorType,
)
from .errors import NNRtError
from .runtime.device import register_device_loader

__version__ = "0.1.0"

# name -> the module that defines it, imported on first access (PEP 562)
_LAZY = {"Compilation": "compilation", "Executor": "executor", "Memory": "executor", "Model": "model",
         "QuantParam": "tensor", "Tensor": "tensor", "TensorDesc": "tensor", "CompileOptions": "device",
         "Device": "device", "PreparedModel": "device", "all_device_ids": "device", "get_device": "device",
         "register_device": "device"}


def __getattr__(name: str):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import compilation, executor, model, tensor
    from .runtime import device

    modules = {"compilation": compilation, "executor": executor, "model": model, "tensor": tensor, "device": device}
    value = globals()[name] = getattr(modules[where], name)
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def _load_onnxruntime_device() -> None:
    from . import ort_device  # noqa: F401  (registers device 2; onnxruntime itself loads on use)


register_device_loader(_load_onnxruntime_device)


def from_onnx(source, **options):
    """ONNX model (path or ModelProto) -> ImportResult (``.model`` is the NNRt Model); see nnrt_onnx.onnx_import."""
    from .onnx_import import from_onnx as convert

    return convert(source, **options)


def to_onnx(model, **options):
    """NNRt Model -> onnx.ModelProto; see nnrt_onnx.onnx_export."""
    from .onnx_export import to_onnx as export

    return export(model, **options)


__all__ = [
    "from_onnx", "to_onnx", "Compilation", "CompileOptions", "Device", "Executor", "Memory", "Model", "NNRtError", "PreparedModel",
    "QuantParam", "Tensor", "TensorDesc", "all_device_ids", "get_device", "register_device",
    "OH_NN_DataType", "OH_NN_DeviceType", "OH_NN_Format", "OH_NN_FuseType", "OH_NN_OperationType",
    "OH_NN_PerformanceMode", "OH_NN_Priority", "OH_NN_ReturnCode", "OH_NN_TensorType",
]
