"""Operator domains: a node is routed by (domain, op type, the model's opset of that domain); rows of onnxruntime's
``com.microsoft`` domain are keyed ``com.microsoft.<Op>`` and never clash with a default-domain op of the same name;
nodes of unknown domains, of a domain the model does not import, or of an unmapped contrib op are reported per node
in one pass."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from nnrt_onnx.ir import rows
from nnrt_onnx.ir.issues import INVALID_MODEL, UNSUPPORTED_OP
from nnrt_onnx.onnx_import import ConversionError, from_onnx
from nnrt_onnx.optable import OpTableError


def _model(nodes, imports):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None) for n in nodes[-1:]])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in imports])


def test_contrib_rows_are_qualified_and_standard_ones_are_not():
    found = rows.find_row("Gelu", 1, "com.microsoft")
    assert found.op_type == "com.microsoft.Gelu" and found.domain == "com.microsoft" and found.nnrt_op is None
    assert found.source == "com.microsoft.Gelu.toml"
    standard = rows.find_row("Gelu", 20)
    assert standard.op_type == "Gelu" and standard.domain == "" and standard.nnrt_op is not None
    assert rows.find_row("Gelu", 19) is None  # the default domain's Gelu starts at opset 20
    assert rows.find_row("Gelu", 1, "ai.onnx") is None  # "ai.onnx" is the default domain
    assert "com.microsoft.Gelu" in rows.claimed_op_types() and "Gelu" in rows.claimed_op_types()


def test_route_uses_the_opset_of_the_nodes_domain():
    versions = rows.domain_versions(_model([helper.make_node("Relu", ["x"], ["y"])],
                                           [("", 13), ("com.microsoft", 1)]).opset_import)
    assert versions == {"": 13, "com.microsoft": 1}
    row, version, problem = rows.route("com.microsoft", "Gelu", versions)
    assert (row.op_type, version, problem) == ("com.microsoft.Gelu", 1, None)
    row, version, problem = rows.route("", "Gelu", versions)  # default-domain Gelu at opset 13: no row
    assert row is None and version == 13  # (Gelu joined the default domain at opset 20: the message says so)
    assert problem == (UNSUPPORTED_OP, "no NNRt mapping for Gelu at opset 13 (its rows cover opsets 20 and later)")


def test_every_problem_of_every_domain_is_reported_in_one_pass():
    nodes = [helper.make_node("Gelu", ["x"], ["a"], domain="com.microsoft", name="ok"),
             helper.make_node("NoSuchOp", ["a"], ["b"], domain="com.microsoft", name="unmapped"),
             helper.make_node("Frobnicate", ["b"], ["c"], domain="org.example", name="foreign"),
             helper.make_node("Relu", ["c"], ["y"], name="fine")]
    with pytest.raises(ConversionError) as info:
        from_onnx(_model(nodes, [("", 17), ("com.microsoft", 1), ("org.example", 3)]))
    found = {i.node: (f"{i.domain}.{i.op_type}" if i.domain else i.op_type, i.opset, i.reason, i.message)
             for i in info.value.issues}
    assert found == {
        "unmapped": ("com.microsoft.NoSuchOp", 1, UNSUPPORTED_OP,
                     "no NNRt mapping for com.microsoft.NoSuchOp at com.microsoft opset 1"),
        "foreign": ("org.example.Frobnicate", 3, UNSUPPORTED_OP, "operator domain 'org.example' is not supported"),
    }


def test_a_contrib_node_in_a_model_that_does_not_import_its_domain_is_invalid():
    with pytest.raises(ConversionError) as info:
        from_onnx(_model([helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft", name="g")], [("", 17)]))
    (issue,) = info.value.issues
    assert (issue.node, issue.domain, issue.op_type, issue.reason) == ("g", "com.microsoft", "Gelu", INVALID_MODEL)
    assert "does not import the operator domain 'com.microsoft'" in issue.message


def test_a_contrib_node_converts_and_computes():
    model = _model([helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")], [("", 17), ("com.microsoft", 1)])
    result = from_onnx(model)
    assert [op.op.name for op in result.model.operations] == ["OH_NN_OPS_GELU"]


def _rows_from(tmp_path, monkeypatch, files: dict):
    (tmp_path / "ops").mkdir()
    (tmp_path / "onnx").mkdir()
    for name, text in files.items():
        (tmp_path / "onnx" / name).write_text(text)
    monkeypatch.setattr(rows, "mappings_dir", lambda: tmp_path)
    monkeypatch.setattr(rows, "op_table", lambda: {})
    rows.onnx_rows.cache_clear()
    try:
        return rows.onnx_rows()
    finally:
        rows.onnx_rows.cache_clear()


def test_the_loader_keys_contrib_rows_by_their_qualified_file_name(tmp_path, monkeypatch):
    found = _rows_from(tmp_path, monkeypatch, {
        "com.microsoft.Attention.toml": 'family = "attention"\n[[onnx]]\nop_type = "Attention"\ndomain = "com.microsoft"\n',
        "Attention.toml": 'family = "attention"\n[[onnx]]\nop_type = "Attention"\nsince = 23\n'})
    assert sorted(found) == ["Attention", "com.microsoft.Attention"]
    assert found["com.microsoft.Attention"][0].since == 1 and found["Attention"][0].since == 23


@pytest.mark.parametrize("name,text,message", [
    ("com.microsoft.Attention.toml", 'family = "attention"\n[[onnx]]\nop_type = "Attention"\n',
     "holds a row of Attention; rows of com.microsoft.Attention only"),
    ("Attention.toml", 'family = "attention"\n[[onnx]]\nop_type = "Attention"\ndomain = "com.microsoft"\n',
     "holds a row of com.microsoft.Attention; rows of Attention only"),
    ("org.example.Foo.toml", 'family = "attention"\n[[onnx]]\nop_type = "Foo"\ndomain = "org.example"\n',
     "domain 'org.example' is not one of"),
    ("com.microsoft.Foo.toml", 'family = "attention"\n[[onnx]]\nop_type = "Foo"\ndomain = "com.microsoft"\n'
                               'export = "generic"\n', "never exported"),
])
def test_the_loader_rejects_misplaced_or_foreign_rows(tmp_path, monkeypatch, name, text, message):
    with pytest.raises(OpTableError, match=message):
        _rows_from(tmp_path, monkeypatch, {name: text})


def test_the_default_domain_alias_routes_like_the_empty_domain():
    model = _model([helper.make_node("Relu", ["x"], ["y"], domain="ai.onnx")], [("ai.onnx", 17)])
    result = from_onnx(model)
    assert [op.op.name for op in result.model.operations] == ["OH_NN_OPS_RELU"]
    assert np.dtype(result.graph.values[result.graph.inputs[0]].dtype) == np.float32


def test_the_support_report_looks_contrib_nodes_up_by_domain(tmp_path):
    from nnrt_onnx.workflows.describe import onnx_support_report

    model = _model([helper.make_node("FastGelu", ["x"], ["g"], domain="com.microsoft", name="fast"),
                    helper.make_node("Frobnicate", ["g"], ["y"], domain="org.example", name="foreign")],
                   [("", 17), ("com.microsoft", 1), ("org.example", 1)])
    path = tmp_path / "m.onnx"
    import onnx

    onnx.save(model, str(path))
    report = onnx_support_report(path)
    nodes = {n["node"]: n for n in report["nodes"]}
    assert nodes["fast"]["mapping"] == rows.find_row("FastGelu", 1, "com.microsoft").notes
    assert nodes["fast"]["problems"] == [] and nodes["fast"]["status"] == "ok"
    assert nodes["foreign"]["mapping"] is None
    assert nodes["foreign"]["problems"] == ["[unsupported_op] operator domain 'org.example' is not supported"]
    assert report["convertible"] is False
