"""Helpers shared by the tests (importable as ``support``: pytest puts tests/ on sys.path)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nnrt_onnx import Model, NNRtError, TensorDesc
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as TT

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


def shared_file(*parts: str) -> Path:
    """A file of ../shared, or skip the test with the reason when that folder is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (the read-only spec folder ../shared is not next to this checkout)")
    return path


def code_of(fn, *args, **kwargs):
    """The OH_NN_ReturnCode a Python API call ends with (SUCCESS when it does not raise)."""
    try:
        fn(*args, **kwargs)
    except NNRtError as exc:
        return exc.code
    return RC.OH_NN_SUCCESS


def conv_model(weight: np.ndarray | None = None, bias: np.ndarray | None = None) -> Model:
    """A finished NHWC 1x4x4x2 -> CONV2D 3x3 SAME -> 1x4x4x3 model."""
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 4, 4, 2]))
    w = m.add_constant(np.ones((3, 3, 3, 2), np.float32) if weight is None else weight)
    b = m.add_constant(np.zeros(3, np.float32) if bias is None else bias)
    pm = m.add_param(TT.OH_NN_CONV2D_PAD_MODE, 0)
    y = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 4, 4, 3]))
    m.add_operation(OP.OH_NN_OPS_CONV2D, [pm], [x, w, b], [y])
    m.specify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def onnx_model(node_or_nodes, inputs: dict, initializers: dict | None = None, opset: int = 17, outputs=("y",)):
    """A one-graph ONNX model: ``inputs`` name -> example array (its dtype and shape declare the input)."""
    import onnx
    from onnx import helper, numpy_helper

    nodes = node_or_nodes if isinstance(node_or_nodes, list) else [node_or_nodes]
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items()]
    graph_outputs = [onnx.ValueInfoProto(name=o) for o in outputs]
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()]
    graph = helper.make_graph(nodes, "g", graph_inputs, graph_outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def run_imported(model, feeds: dict):
    """Import ``model``, run it natively on ``feeds`` (by input name): (outputs, ImportResult)."""
    from nnrt_onnx import Compilation, Executor
    from nnrt_onnx.onnx_import import from_onnx

    result = from_onnx(model)
    compilation = Compilation(result.model)
    compilation.build()
    arrays = [np.asarray(feeds[result.model.tensors[i].name]) for i in result.model.inputs]
    return [np.asarray(a) for a in Executor(compilation).run_arrays(arrays)], result


def ort_session(model, optimize: bool = True):
    """An onnxruntime session used as an oracle, made deterministic across CPUs and core counts.

    One thread and sequential execution: a float reduction then sums in the same order whatever the core count.
    QDQ fusion off (``session.disable_quant_qdq``): a DequantizeLinear -> op -> QuantizeLinear group stays on
    float kernels instead of becoming onnxruntime's u8s8/s8s8 integer kernels, whose int16 intermediates saturate
    on AVX2 CPUs without VNNI (their results depend on the CPU). Tests of integer ONNX ops (QLinearConv,
    ConvInteger, MatMulInteger, ...) take their expected values from ``integer_oracle`` or ``onnx.reference``.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    source = model if isinstance(model, (str, bytes, Path)) else model.SerializeToString()
    return ort.InferenceSession(str(source) if isinstance(source, Path) else source, options,
                                providers=["CPUExecutionProvider"])


def ort_run(model, feeds: dict, optimize: bool = True) -> list:
    """The outputs of ``model`` on onnxruntime (see :func:`ort_session`)."""
    return ort_session(model, optimize).run(None, feeds)


def one_line_error(result, code=1, contains=""):
    """A CLI result that failed with exit ``code`` and one line ``error: ...`` (containing ``contains``) on stderr,
    no traceback anywhere; returns that line."""
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output + result.stderr
    assert contains in lines[0], lines[0]
    return lines[0]
