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
