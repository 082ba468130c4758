"""Execution: the device interface and registry (device; a prepared model may capture intermediate tensors), the graph
checks every device shares (graph), the one kernel-invocation function (invoke: ``bind`` / ``BoundKernel``, also used
by constant folding), and the two devices: the native CPU device (cpu, id 1) and onnxruntime (ort, id 2).

Importing the package registers both devices.
"""
from . import cpu, ort  # noqa: F401  (register devices 1 and 2)
