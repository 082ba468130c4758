"""Execution: the device interface and registry (device; a prepared model may capture intermediate tensors), the graph
checks every device shares (graph), the one kernel-invocation function (invoke: ``bind`` / ``BoundKernel``, also used
by constant folding), and the native CPU device (cpu, id 1). The onnxruntime device (id 2) runs an exported model,
so it stands above the exporter: ``nnrt_onnx.ort_device``. Both are registered on the registry's first use
(``device.register_device_loader``): importing this package loads neither numpy nor the kernels.
"""
from .device import register_device_loader


def _load_cpu_device() -> None:
    from . import cpu  # noqa: F401  (registers device 1)


register_device_loader(_load_cpu_device)
