"""The onnxruntime device: the same compiled NNRt model, run by onnxruntime's CPU execution provider.

Registered on ``import nnrt_onnx`` as device id 2, ``onnxruntime.cpu``. Build exports the NNRt model op by op
to an equivalent ONNX model (nnrt_onnx.onnx_export) and opens an InferenceSession on it; Executor runs go
through that session. onnxruntime itself is imported only when a model is built on the device.

Device type: OH_NN_CPU. OH_NNDevice_GetType tells an application what kind of hardware a device computes on,
and onnxruntime's CPU execution provider computes on the host CPU, exactly like the native device; OH_NN_OTHERS
would claim an unknown kind of hardware. The two CPU devices are told apart by name (and id), not by type.

Extension config (``OH_NNCompilation_AddExtensionConfig``): ``onnxruntime.intra_op_num_threads`` = an ASCII
integer sets the session's intra-op thread count (default: onnxruntime's).
"""
from __future__ import annotations

from typing import MutableMapping, Sequence

import numpy as np

from .enums import OH_NN_DeviceType, OH_NN_OperationType, OH_NN_ReturnCode
from .enums import OH_NN_OperationType as OP
from .errors import NNRtError, invalid
from .runtime.device import CompileOptions, Device, PreparedModel, cannot_capture, register_device


def _failed(message: str) -> NNRtError:
    return NNRtError(OH_NN_ReturnCode.OH_NN_FAILED, message)


def exportable(op: OP) -> bool:
    """Whether operations of this type have an ONNX export (an export function or a generic mapping row)."""
    from .ir.rows import onnx_rows
    from .onnx_export.handlers import exporters

    if OP(op) in exporters():
        return True
    return any(r.nnrt_op == op and r.export == "generic"
               for rows in onnx_rows().values() for r in rows)


def to_onnx(model, name: str = "nnrt_model"):
    """An ONNX ModelProto computing the same as the finished NNRt ``model`` (raises NNRtError OH_NN_FAILED)."""
    from .onnx_export import ExportError
    from .onnx_export import to_onnx as export

    try:
        return export(model, name=name, check=False)
    except ExportError as exc:
        raise _failed(f"onnxruntime.cpu cannot run {'; '.join(exc.problems)}") from None


class OrtPreparedModel(PreparedModel):
    """A model compiled for onnxruntime: the exported ONNX model in an InferenceSession."""

    def __init__(self, model, options, threads: int = 0):
        try:
            import onnxruntime as ort
        except ImportError:  # pragma: no cover - onnxruntime is a dependency
            raise NNRtError(OH_NN_ReturnCode.OH_NN_UNAVAILABLE_DEVICE, "onnxruntime is not installed") from None
        self.model = model
        self.onnx_model = to_onnx(model)
        session_options = ort.SessionOptions()
        session_options.log_severity_level = 3
        # quantized tensors export as QuantizeLinear/DequantizeLinear around float ops; left unfused they compute
        # what NNRt defines (dequantize, float op, quantize) on every CPU, where onnxruntime's fused u8s8 kernels
        # saturate int16 sums on AVX2 CPUs without VNNI
        session_options.add_session_config_entry("session.disable_quant_qdq", "1")
        if threads:
            session_options.intra_op_num_threads = threads
            session_options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(self.onnx_model.SerializeToString(), session_options,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's errors have no stable public types
            raise _failed(f"onnxruntime.cpu cannot compile the model: {str(exc).splitlines()[0]}") from None
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.output_names = [o.name for o in self.session.get_outputs()]

    def run(self, inputs: Sequence[np.ndarray], capture: MutableMapping[int, np.ndarray | None] | None = None
            ) -> list[np.ndarray]:
        if capture is not None:
            raise cannot_capture(OnnxRuntimeDevice.name)
        model = self.model
        if len(inputs) != len(model.inputs):
            raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER,
                            f"the model has {len(model.inputs)} inputs, got {len(inputs)}")
        feed = {name: np.ascontiguousarray(array) for name, array in zip(self.input_names, inputs)}
        try:
            results = self.session.run(self.output_names, feed)
        except Exception as exc:
            raise _failed(f"onnxruntime.cpu run failed: {str(exc).splitlines()[0]}") from None
        outputs = []
        for index, value in zip(model.outputs, results):
            declared = model.tensors[index].np_dtype
            value = np.asarray(value)
            outputs.append(value.astype(declared) if value.dtype != declared else value)
        return outputs


class OnnxRuntimeDevice(Device):
    id = 2
    name = "onnxruntime.cpu"
    device_type = OH_NN_DeviceType.OH_NN_CPU
    supports_float16 = False  # EnableFloat16 would need a float16 export; not offered rather than ignored

    def supports(self, op: OH_NN_OperationType) -> bool:
        return exportable(op)

    def prepare(self, model, options: CompileOptions) -> PreparedModel:
        return OrtPreparedModel(model, options, _threads(options))


THREADS_EXTENSION = "onnxruntime.intra_op_num_threads"


def _threads(options: CompileOptions) -> int:
    """The intra-op thread count of the extension config (0: onnxruntime's default)."""
    value = options.extensions.get(THREADS_EXTENSION)
    if value is None:
        return 0
    try:
        threads = int(bytes(value).decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        threads = -1
    if threads < 0:
        raise invalid(f"extension config {THREADS_EXTENSION} must be a non-negative integer, got {bytes(value)!r}")
    return threads


register_device(OnnxRuntimeDevice())


__all__ = ["OnnxRuntimeDevice", "OrtPreparedModel", "THREADS_EXTENSION", "exportable", "to_onnx"]
