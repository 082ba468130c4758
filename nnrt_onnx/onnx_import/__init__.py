"""ONNX -> NNRt import, driven by the ``[[onnx]]`` mapping rows of the op table."""
from .importer import ImportOptions, ImportResult, from_onnx, load_onnx
from .issues import ConversionError, Issue

__all__ = ["ConversionError", "ImportOptions", "ImportResult", "Issue", "from_onnx", "load_onnx"]
