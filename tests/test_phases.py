"""nnrt_onnx.workflows.phases: the status line of a long command -- nothing for a quick phase, a counting line for a
slow one that stays as ``label: N s``."""
from __future__ import annotations

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
