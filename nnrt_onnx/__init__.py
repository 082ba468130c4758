"""nnrt_onnx: OpenHarmony's Neural Network Runtime (NNRt) model API in Python, native kernels, and ONNX conversion."""
from __future__ import annotations

from . import ort_device  # noqa: E402,F401  (registers the onnxruntime device, id 2; onnxruntime loads on use)
from .compilation import Compilation
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
from .executor import Executor, Memory
from .model import Model
from .runtime.device import CompileOptions, Device, PreparedModel, all_device_ids, get_device, register_device
from .tensor import QuantParam, Tensor, TensorDesc

__version__ = "0.1.0"


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
