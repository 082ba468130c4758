"""The onnxruntime device: the same compiled NNRt model, run by onnxruntime's CPU execution provider.

Registered on ``import nnrt_onnx`` as device id 2, ``onnxruntime.cpu``. Build exports the NNRt model op by op
to an equivalent ONNX model (nnrt_onnx.runtime.ort_device) and opens an InferenceSession on it; Executor runs go
through that session. onnxruntime itself is imported only when a model is built on the device.

Device type: OH_NN_CPU. OH_NNDevice_GetType tells an application what kind of hardware a device computes on,
and onnxruntime's CPU execution provider computes on the host CPU, exactly like the native device; OH_NN_OTHERS
would claim an unknown kind of hardware. The two CPU devices are told apart by name (and id), not by type.
"""
from __future__ import annotations

from .devices import CompileOptions, Device, PreparedModel, register_device
from .enums import OH_NN_DeviceType, OH_NN_OperationType


class OnnxRuntimeDevice(Device):
    id = 2
    name = "onnxruntime.cpu"
    device_type = OH_NN_DeviceType.OH_NN_CPU
    supports_float16 = False  # EnableFloat16 would need a float16 export; not offered rather than ignored

    def supports(self, op: OH_NN_OperationType) -> bool:
        from .runtime.ort_device import exportable

        return exportable(op)

    def prepare(self, model, options: CompileOptions) -> PreparedModel:
        from .runtime.ort_device import OrtPreparedModel

        return OrtPreparedModel(model, options)


register_device(OnnxRuntimeDevice())
