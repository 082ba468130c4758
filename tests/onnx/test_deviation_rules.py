"""The ONNX readings of nnrt_onnx/ir/deviations.py are each documented in docs/deviations.md, and only those."""
from __future__ import annotations

import re

from support import REPO

from nnrt_onnx.ir.deviations import RULES


def test_every_rule_is_documented_and_every_documented_rule_exists():
    text = (REPO / "docs" / "deviations.md").read_text()
    section = text[text.index("## ONNX readings"):]
    documented = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.M))
    assert documented == set(RULES)
