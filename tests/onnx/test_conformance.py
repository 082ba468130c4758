"""The ONNX backend node suite: every case whose operators the mapping rows claim is imported, run natively
and compared with the case's expected outputs (the case's own tolerances).

Known failures are listed, with their reason, in tests/data/conformance_known_failures.json (regenerate with
``python tools/conformance.py --update``). A listed case that starts passing fails too, so the list stays true.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnrt_onnx.testing.conformance import is_claimed, node_cases, run_case

KNOWN = Path(__file__).resolve().parent.parent / "data" / "conformance_known_failures.json"
KNOWN_FAILURES: dict[str, str] = json.loads(KNOWN.read_text()) if KNOWN.exists() else {}
ATTEMPTED = sorted(name for name, case in node_cases().items() if is_claimed(case))


@pytest.mark.parametrize("name", ATTEMPTED)
def test_node_case(name):
    result = run_case(node_cases()[name])
    if name in KNOWN_FAILURES:
        assert not result.passed, f"{name} passes now: remove it from {KNOWN.name}"
        pytest.xfail(KNOWN_FAILURES[name])
    assert result.passed, result.reason


def test_at_least_95_percent_of_attempted_cases_pass():
    failing = [n for n in ATTEMPTED if n in KNOWN_FAILURES]
    assert len(ATTEMPTED) > 0
    assert 1 - len(failing) / len(ATTEMPTED) >= 0.95, f"{len(failing)} of {len(ATTEMPTED)} attempted cases fail"


def test_known_failures_are_attempted_cases():
    stale = sorted(set(KNOWN_FAILURES) - set(ATTEMPTED))
    assert not stale, f"{KNOWN.name} lists cases no longer attempted: {stale[:10]}"
