"""NNRt -> ONNX export, from the same mapping rows the importer uses (reversed), plus export handlers."""
from .exporter import DEFAULT_OPSET, OPSETS, ExportError, to_onnx

__all__ = ["DEFAULT_OPSET", "OPSETS", "ExportError", "to_onnx"]
