"""Helpers of the contrib-operator import tests: models with nodes of onnxruntime's ``com.microsoft`` domain (the
model imports that domain at version 1), converted and run natively, compared with onnxruntime (its float contrib
kernels, one thread: ``support.ort_run``) or with expectations the test computes."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from support import ort_run, run_imported

from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx

MS = "com.microsoft"
F32 = np.float32


def ms_node(op_type: str, inputs, outputs, **attrs) -> onnx.NodeProto:
    return helper.make_node(op_type, list(inputs), list(outputs), domain=MS, **attrs)


def contrib_model(nodes, inputs: dict, outputs, constants: dict | None = None, opset: int = 17) -> onnx.ModelProto:
    """A graph of ``nodes``: ``inputs`` name -> example array (graph inputs), ``constants`` name -> initializer."""
    nodes = nodes if isinstance(nodes, list) else [nodes]
    graph = helper.make_graph(
        nodes, "contrib",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs.items()],
        [helper.make_value_info(o, onnx.TypeProto()) for o in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (constants or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model


def ours(model, feeds: dict) -> list[np.ndarray]:
    return run_imported(model, feeds)[0]


def against_ort(model, feeds: dict, rtol=1e-5, atol=1e-5) -> list[np.ndarray]:
    """Our outputs against onnxruntime's (dtype, shape, values); returns ours."""
    expected = ort_run(model, feeds)
    actual = ours(model, feeds)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(got, want)
    return actual


def rejected(model, reason: str, match: str = ""):
    """The conversion fails with one issue of ``reason`` whose message contains ``match``; returns the issue."""
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    issues = info.value.issues
    assert len(issues) == 1 and issues[0].reason == reason and match in issues[0].message, str(info.value)
    return issues[0]
