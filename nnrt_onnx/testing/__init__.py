"""Test harnesses shipped for the tests, tools and benchmarks: single-op models (single_op), the op table's op
cases (opcases) and the ONNX backend node suite (conformance). The library itself never imports this package."""
