"""docs/onnx_unsupported.md lists exactly the default-domain ONNX operators without a mapping row."""
from __future__ import annotations

import re

import onnx.defs
from support import REPO

from nnrt_onnx.ir.rows import claimed_op_types


def test_every_onnx_operator_is_mapped_or_explained():
    known = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain in ("", "ai.onnx") and not s.deprecated}
    text = (REPO / "docs" / "onnx_unsupported.md").read_text()
    listed = set(re.findall(r"^\| (\w+) \| ", text, re.M)) - {"operator"}
    unclaimed = known - claimed_op_types()
    assert listed == unclaimed, (f"mapped but still listed: {sorted(listed - unclaimed)}; "
                                 f"neither mapped nor listed: {sorted(unclaimed - listed)}")
    assert len(known & claimed_op_types()) >= 150


def test_the_page_is_generated_from_the_reasons_file():
    from nnrt_onnx.workflows.onnx_ops import unsupported_markdown

    assert (REPO / "docs" / "onnx_unsupported.md").read_text() == unsupported_markdown(), \
        "regenerate: nnrt-onnx ops --onnx --markdown > docs/onnx_unsupported.md"


def test_every_unmapped_operator_has_a_reason_and_no_mapped_one_does():
    from nnrt_onnx.ir.rows import unsupported_reasons

    known = {s.name for s in onnx.defs.get_all_schemas_with_history()
             if s.domain in ("", "ai.onnx") and not s.deprecated}
    reasons = unsupported_reasons()
    assert set(reasons) == known - claimed_op_types()
    assert all(len(reason) > 10 for reason in reasons.values())


def test_the_importer_gives_the_documented_reason():
    """An unsupported operator's problem carries the reason from mappings/onnx_unsupported.toml (not only "no NNRt
    mapping"): the words are the file's, checked against the file's own text."""
    from onnx import TensorProto, helper

    from nnrt_onnx.ir.issues import ConversionError
    from nnrt_onnx.ir.rows import unsupported_reasons
    from nnrt_onnx.onnx_import import from_onnx

    graph = helper.make_graph([helper.make_node("Acos", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    try:
        from_onnx(model)
    except ConversionError as exc:
        text = str(exc)
    else:
        raise AssertionError("Acos converted")
    assert "no inverse trigonometric operation" in unsupported_reasons()["Acos"]
    assert unsupported_reasons()["Acos"] in text, text
