"""nnrt_onnx.workflows.phases: the status line of a long command -- nothing for a quick phase, a counting line for a
slow one that stays as ``label: N s``."""
from __future__ import annotations

import contextlib
import io
import time

from nnrt_onnx.workflows.phases import StatusLine, no_phases


class Clock:
    """A clock the test moves."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def wait_for(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.005)
    return predicate()


def test_a_quick_phase_prints_nothing():
    stream = io.StringIO()
    with StatusLine(stream, delay=30.0)("converting") as update:
        update(3)
    assert stream.getvalue() == ""


def test_a_slow_phase_counts_and_stays_as_its_duration():
    stream, clock = io.StringIO(), Clock()
    with StatusLine(stream, delay=0.0, interval=0.01, clock=clock)("float64 referee", 40, "nodes") as update:
        update(7)
        clock.now += 3.0
        assert wait_for(lambda: "7/40" in stream.getvalue())
        assert stream.getvalue().split("\r")[-1] == "float64 referee: 7/40 nodes, 3 s"
        update(12)
        clock.now += 9.25
        assert wait_for(lambda: "12/40" in stream.getvalue())
    assert stream.getvalue().split("\r")[-1] == "float64 referee: 12.2 s".ljust(len("float64 referee: 12/40 nodes, "
                                                                                  "12 s")) + "\n"


def test_a_line_without_a_count_and_a_terminal_that_went_away(monkeypatch):
    import threading

    failures = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    stream, clock = io.StringIO(), Clock()
    with StatusLine(stream, delay=0.0, interval=0.01, clock=clock)("running natively"):
        clock.now += 2.5
        assert wait_for(lambda: "running natively: 2 s" in stream.getvalue())

    class Closed(io.StringIO):
        def write(self, text):
            raise OSError("gone")

    with StatusLine(Closed(), delay=0.0, interval=0.01)("converting"):  # the work goes on, the thread ends quietly
        time.sleep(0.05)
    assert failures == []


def test_no_phases_accepts_updates():
    with no_phases("converting", 3, "nodes") as update:
        update(2)


def test_timed_records_each_phase_and_passes_it_on():
    from nnrt_onnx.workflows.phases import timed

    clock, heard, recorded = Clock(), [], []

    @contextlib.contextmanager
    def wrapped(label, total=None, unit=""):  # the phases timed() wraps: they still see every phase and update
        heard.append((label, total, unit))
        yield lambda done: heard.append((label, done))

    phase = timed(wrapped, recorded, clock=clock)
    with phase("converting") as update:
        clock.now += 2.5
        update(1)
    try:
        with phase("float64 referee", 40, "nodes"):
            clock.now += 0.25
            raise RuntimeError("the phase fails")
    except RuntimeError:
        pass
    assert recorded == [("converting", 2.5), ("float64 referee", 0.25)]  # a failing phase's time is recorded too
    assert heard == [("converting", None, ""), ("converting", 1), ("float64 referee", 40, "nodes")]


def test_check_model_reports_its_phases_in_order(tmp_path):
    from pathlib import Path

    from nnrt_onnx.workflows.parity import check_model

    report = check_model(Path(__file__).resolve().parent.parent / "models" / "small_cnn.onnx", per_layer=True)
    labels = [label for label, _ in report.phases]
    assert labels[:4] == ["converting", "running natively", "running onnxruntime", "comparing layers"]
    assert all(seconds >= 0 for _, seconds in report.phases)
    assert sum(seconds for _, seconds in report.phases) <= report.seconds
    assert report.to_dict()["phases"][0]["phase"] == "converting"
