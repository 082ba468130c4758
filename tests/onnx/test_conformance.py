"""The ONNX backend node suite: every case whose operators the mapping rows claim is imported, run natively
and compared with the case's expected outputs (the case's own tolerances).

Known failures are listed, with their reason, in tests/data/conformance_known_failures.json (regenerate with
``python tools/conformance.py --update``). A listed case must fail for the listed reason (a case failing for another
reason fails); a listed case that starts passing fails too, so the list stays true. The attempted cases are recorded
in tests/data/conformance_attempted.txt (same tool): a case that leaves the attempted set (a mapping row removed or
narrowed) fails a test until the record is updated, so no case drops out of the suite silently.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nnrt_onnx.testing.conformance import is_claimed, node_cases, run_case

DATA = Path(__file__).resolve().parent.parent / "data"
KNOWN = DATA / "conformance_known_failures.json"
KNOWN_FAILURES: dict[str, str] = json.loads(KNOWN.read_text())
RECORDED = DATA / "conformance_attempted.txt"
ATTEMPTED = sorted(name for name, case in node_cases().items() if is_claimed(case))


def reason_key(reason: str) -> str:
    """A failure reason without the size of a numeric difference (its last digits may vary with the CPU's float
    kernels): "values differ (max abs diff 0.000488)" -> "values differ (max abs diff <n>)"."""
    return re.sub(r"max abs diff [-+0-9.einf]+", "max abs diff <n>", reason)


@pytest.mark.parametrize("name", ATTEMPTED)
def test_node_case(name):
    result = run_case(node_cases()[name])
    if name in KNOWN_FAILURES:
        assert not result.passed, f"{name} passes now: remove it from {KNOWN.name}"
        assert reason_key(result.reason) == reason_key(KNOWN_FAILURES[name]), (
            f"{name} fails for another reason than the listed one: {result.reason!r} "
            f"(listed: {KNOWN_FAILURES[name]!r})")
        pytest.xfail(KNOWN_FAILURES[name])
    assert result.passed, result.reason


def test_reason_key_hides_only_the_difference():
    assert reason_key("output #0: values differ (max abs diff 3.81e-06)") == \
        reason_key("output #0: values differ (max abs diff 4e-06)")
    assert reason_key("output #0: values differ (max abs diff 1)") != reason_key("output #1: values differ (max abs diff 1)")
    assert reason_key("conversion: [unsupported_attribute] x") == "conversion: [unsupported_attribute] x"


def test_no_case_leaves_the_attempted_set():
    recorded = RECORDED.read_text().split()
    left = sorted(set(recorded) - set(ATTEMPTED))
    assert not left, (f"{len(left)} node cases are no longer attempted: {left[:10]}; if that is intended, run "
                      f"python tools/conformance.py --update")


def test_at_least_95_percent_of_attempted_cases_pass():
    failing = [n for n in ATTEMPTED if n in KNOWN_FAILURES]
    assert len(ATTEMPTED) > 0
    assert 1 - len(failing) / len(ATTEMPTED) >= 0.95, f"{len(failing)} of {len(ATTEMPTED)} attempted cases fail"


def test_known_failures_are_attempted_cases():
    stale = sorted(set(KNOWN_FAILURES) - set(ATTEMPTED))
    assert not stale, f"{KNOWN.name} lists cases no longer attempted: {stale[:10]}"
