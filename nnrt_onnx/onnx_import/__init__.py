"""ONNX -> NNRt import, driven by the ``[[onnx]]`` mapping rows of the op table."""
from ..ir.issues import ConversionError, Issue
from .importer import ImportOptions, ImportResult, from_onnx, load_onnx, load_structure

__all__ = ["ConversionError", "ImportOptions", "ImportResult", "Issue", "from_onnx", "load_onnx", "load_structure"]
