"""NNRt -> ONNX export of every op case of the table (``[[cases]]`` of mappings/ops/*.toml).

For each case: onnx.checker accepts the export; onnxruntime running it gives the outputs the *specification* gives
(``op_oracles.expected``: numpy / onnx.reference written from the header, the builder's defaults and
docs/deviations.md — never the native kernel or the exporter, which read the same op table); the native kernel gives
them too; and importing the export gives back the same operation with the case's declared parameter values and the
declared quant params.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from op_oracles import assert_matches_spec, expected
from support import ort_session

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.enums import OH_NN_OperationType
from nnrt_onnx.onnx_export import DEFAULT_OPSET, to_onnx
from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.testing.opcases import op_cases

CASES = op_cases()


def _run_native(model, inputs):
    compilation = Compilation(model)
    compilation.build()
    return [np.asarray(a) for a in Executor(compilation).run_arrays(inputs)]


def _declared(case) -> dict[str, list]:
    """The case's parameters as the model stores them: flat lists, float values at FLOAT32 precision."""
    def flat(value):
        array = np.asarray(value)
        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        return array.reshape(-1).tolist()
    return {name: flat(value) for name, value in case.params.items()}


def _restored_params(model, operation) -> dict[str, list]:
    return {model.tensors[p].tensor_type.name: np.asarray(model.tensors[p].data).reshape(-1).tolist()
            for p in operation.params}


def _param_dtypes(model, operation) -> dict[str, str]:
    return {model.tensors[p].tensor_type.name: model.tensors[p].data.dtype.name for p in operation.params}


def _quant_of(spec):
    q = spec.get("quant")
    if q is None:
        return None
    return (list(q["scales"]), list(q["zero_points"]), q.get("axis") if len(q["scales"]) > 1 else None)


def _quant_of_tensor(tensor):
    q = tensor.quant
    return None if q is None else (list(q.scales), list(q.zero_points), q.axis if q.count > 1 else None)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_export_follows_the_spec_and_round_trips(case):
    want = expected(case)
    model, inputs = case.model()
    assert_matches_spec(case, _run_native(model, inputs), want, "native")

    exported = to_onnx(model)
    onnx.checker.check_model(exported, full_check=True)
    feeds = {i.name: a for i, a in zip(exported.graph.input, inputs)}
    outputs = ort_session(exported).run(None, feeds)
    assert_matches_spec(case, outputs, want, "onnxruntime on the export")

    back = from_onnx(exported).model
    assert [op.op for op in back.operations] == [case.op]
    (operation,) = back.operations
    assert _restored_params(back, operation) == _declared(case)
    original = model.operations[0]
    assert _param_dtypes(back, operation) == _param_dtypes(model, original)  # the table's dtypes, both sides
    for position, spec in enumerate(case.inputs):
        tensor = back.tensors[operation.inputs[position]]
        assert _quant_of_tensor(tensor) == _quant_of(spec), f"quant params of input #{position}"
    for position, spec in enumerate(case.outputs):
        assert _quant_of_tensor(back.tensors[operation.outputs[position]]) == _quant_of(spec), \
            f"quant params of output #{position}"


def _forms(model: onnx.ModelProto) -> list[tuple[str, tuple[str, ...]]]:
    """Every node of the export as (op type, attribute names), function bodies and subgraphs included."""
    def walk(nodes):
        for node in nodes:
            yield node.op_type, tuple(sorted(a.name for a in node.attribute)), len(node.input)
            for a in node.attribute:
                for graph in ([a.g] if a.HasField("g") else list(a.graphs)):
                    yield from walk(graph.node)
    return sorted(walk([*model.graph.node, *(n for f in model.functions for n in f.node)]))


def _round_trip_at(case, opset: int, model, inputs, want) -> None:
    exported = to_onnx(model, opset=opset)
    assert exported.opset_import[0].version == opset
    onnx.checker.check_model(exported, full_check=True)
    feeds = {i.name: a for i, a in zip(exported.graph.input, inputs)}
    assert_matches_spec(case, ort_session(exported).run(None, feeds), want, f"onnxruntime on the opset-{opset} export")
    back = from_onnx(exported).model
    assert [op.op for op in back.operations] == [case.op]
    assert _restored_params(back, back.operations[0]) == _declared(case)


@pytest.mark.parametrize("opset", range(13, 24))
def test_every_case_exports_at_every_opset(opset):
    """--opset 13..23: every op case exports and passes the checker; each case whose export at this opset is
    written in other forms than at the default opset (reductions' axes as an attribute before 18, LayerNormalization
    decomposed before 17, ScatterND's reduction as a Loop before 16, ...) also runs on onnxruntime against the
    specification and round trips to the same op and parameters."""
    failures, rewritten = [], 0
    for case in CASES:
        model, inputs = case.model()
        try:
            exported = to_onnx(model, opset=opset)
            if _forms(exported) == _forms(to_onnx(model)):  # (the default opset's export: the test above)
                onnx.checker.check_model(exported, full_check=True)
                continue
            rewritten += 1
            _round_trip_at(case, opset, model, inputs, expected(case))
        except Exception as exc:  # noqa: BLE001 - every case's failure, in one report
            failures.append(f"{case.name}: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}")
    assert not failures, f"{len(failures)} case(s) fail at opset {opset}:\n" + "\n".join(failures)
    if opset < DEFAULT_OPSET:  # the reductions (at least) are written in their older form
        assert rewritten > 50, rewritten


def test_every_op_type_has_op_cases():
    covered = {c.op for c in CASES}
    assert covered == set(OH_NN_OperationType), f"ops without [[cases]]: {sorted(set(OH_NN_OperationType) - covered)}"


def test_the_oracles_import_nothing_of_the_library():
    import ast
    from pathlib import Path

    source = (Path(__file__).resolve().parent / "op_oracles.py").read_text()
    imported = {alias.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name and name.split(".")[0] == "nnrt_onnx"}, imported


def test_a_checker_failure_names_the_operation(monkeypatch):
    """When the export fails the ONNX checker, the message names the NNRt operation whose nodes it rejects (it
    was "1 operation(s) cannot be exported:;" with the checker's text only). The fault is planted: the older
    forms are not written, so at opset 13 the layer norm's reductions keep their opset-18 axes input."""
    from nnrt_onnx.onnx_export import ExportError, custom, exporter

    monkeypatch.setattr(custom, "lower", lambda nodes, *_: nodes)
    monkeypatch.setattr(exporter, "lower", lambda nodes, *_: nodes)
    case = next(c for c in CASES if c.name == "layer_norm-no-params")
    model, _ = case.model()
    with pytest.raises(ExportError) as caught:
        to_onnx(model, opset=13, check=True)
    text = str(caught.value)
    assert text.startswith("1 operation cannot be exported: layer_norm_0: the export at opset 13 fails the ONNX "
                           "checker: "), text
    assert "ReduceMean" in text and "\n" not in text


def test_the_export_keeps_the_source_graphs_name(tmp_path):
    """The exported graph is named as the ONNX graph the model came from -- also through an .nnrt file -- not after
    a tensor; a model built with the API (no source graph) is 'nnrt_model', and ``name=`` still wins."""
    from onnx import TensorProto, helper

    from nnrt_onnx.serialization import load_model, save_model

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "my_detector",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])).model
    assert to_onnx(model).graph.name == "my_detector"
    save_model(model, tmp_path / "m.nnrt")
    assert to_onnx(load_model(tmp_path / "m.nnrt")).graph.name == "my_detector"
    assert to_onnx(model, name="other").graph.name == "other"
    model.name = ""
    save_model(model, tmp_path / "unnamed.nnrt")
    assert to_onnx(load_model(tmp_path / "unnamed.nnrt")).graph.name == "nnrt_model"
