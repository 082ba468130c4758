"""Execution: the device interface and registry (device), the graph checks every device shares (graph), the one
kernel-call function (invoke), and the two devices: the native CPU device (cpu, id 1) and onnxruntime (ort, id 2).

Importing the package registers both devices.
"""
from . import cpu, ort  # noqa: F401  (register devices 1 and 2)
