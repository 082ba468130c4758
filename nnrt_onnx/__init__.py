"""nnrt_onnx: OpenHarmony's Neural Network Runtime (NNRt) model API in Python, native kernels, and ONNX conversion."""
from __future__ import annotations

from .compilation import Compilation
from .devices import CompileOptions, Device, PreparedModel, all_device_ids, get_device, register_device
from . import devices_ort  # noqa: F401  (registers the onnxruntime device, id 2)
from .enums import (OH_NN_DataType, OH_NN_DeviceType, OH_NN_Format, OH_NN_FuseType, OH_NN_OperationType,
                    OH_NN_PerformanceMode, OH_NN_Priority, OH_NN_ReturnCode, OH_NN_TensorType)
from .errors import NNRtError
from .executor import Executor, Memory
from .model import Model
from .tensor import QuantParam, Tensor, TensorDesc

__version__ = "0.1.0"

__all__ = [
    "Compilation", "CompileOptions", "Device", "Executor", "Memory", "Model", "NNRtError", "PreparedModel",
    "QuantParam", "Tensor", "TensorDesc", "all_device_ids", "get_device", "register_device",
    "OH_NN_DataType", "OH_NN_DeviceType", "OH_NN_Format", "OH_NN_FuseType", "OH_NN_OperationType",
    "OH_NN_PerformanceMode", "OH_NN_Priority", "OH_NN_ReturnCode", "OH_NN_TensorType",
]
