"""NNRt -> ONNX export for every op case of the table: onnx.checker accepts it, onnxruntime gives the native
kernel's numbers, and importing the export gives back the same operation and parameters."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from support import ort_session

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.onnx_export import to_onnx
from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.testing.opcases import op_cases

CASES = op_cases()


def _run_native(model, inputs):
    compilation = Compilation(model)
    compilation.build()
    return Executor(compilation).run_arrays(inputs)


def _params(model, operation):
    return {model.tensors[p].tensor_type: (model.tensors[p].data.dtype, model.tensors[p].data.tolist())
            for p in operation.params}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_export_matches_native_and_round_trips(case):
    model, inputs = case.model()
    expected = _run_native(model, inputs)
    exported = to_onnx(model)
    onnx.checker.check_model(exported, full_check=True)
    session = ort_session(exported)
    feeds = {i.name: a for i, a in zip(exported.graph.input, inputs)}
    outputs = session.run(None, feeds)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        rtol, atol = case.tolerance(want.dtype)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)

    back = from_onnx(exported).model
    original = [op for op in model.operations]
    restored = [op for op in back.operations]
    assert [op.op for op in restored] == [op.op for op in original]
    for a, b in zip(original, restored):
        assert _params(back, b) == _params(model, a)
        for role in ("inputs", "outputs"):
            mine = [_quant(model.tensors[i]) for i in getattr(a, role)]
            theirs = [_quant(back.tensors[i]) for i in getattr(b, role)]
            assert theirs == mine, f"quant params of the {role} differ"


def _quant(tensor):
    q = tensor.quant
    return None if q is None else (tensor.dtype, q.scales, q.zero_points, q.num_bits,
                                   q.axis if q.count > 1 else None)


def test_cases_cover_ops():
    assert len({c.op for c in CASES}) >= 1
