"""What a long command is doing, phase by phase (``check``: converting, each side's run, the float64 referee, the
per-layer comparison).

A workflow wraps each phase in ``with phase(label, total, unit) as update:`` and may call ``update(done)`` as it
advances. :func:`no_phases` shows nothing (the default: libraries, tests, pipes). :class:`StatusLine` draws one line
on a terminal, and only for a phase still running after ``delay`` seconds (2 s): a quick phase prints nothing, a
slow one a line that counts seconds (and ``done/total``) and stays as ``label: N s`` when the phase ends.
:func:`timed` records every phase's duration (for the report) while passing it on to the phases it wraps.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, ContextManager, Iterator, TextIO

Update = Callable[[int], None]
Phases = Callable[..., ContextManager[Update]]  # phase(label, total=None, unit="") -> context yielding update(done)


@contextlib.contextmanager
def no_phases(label: str, total: int | None = None, unit: str = "") -> Iterator[Update]:
    """Show nothing."""
    yield lambda done: None


def timed(phases: Phases, into: list[tuple[str, float]], clock: Callable[[], float] = time.perf_counter) -> Phases:
    """``phases``, with each phase's ``(label, seconds)`` appended to ``into`` when it ends (a phase that raises
    too: the time it took to fail is part of the run)."""

    @contextlib.contextmanager
    def phase(label: str, total: int | None = None, unit: str = "") -> Iterator[Update]:
        started = clock()
        try:
            with phases(label, total, unit) as update:
                yield update
        finally:
            into.append((label, clock() - started))

    return phase


class StatusLine:
    """Phases on one line of ``stream`` (a terminal): drawn after ``delay`` seconds, redrawn every ``interval``."""

    def __init__(self, stream: TextIO, delay: float = 2.0, interval: float = 0.5,
                 clock: Callable[[], float] = time.monotonic):
        self.stream, self.delay, self.interval, self.clock = stream, delay, interval, clock

    @contextlib.contextmanager
    def __call__(self, label: str, total: int | None = None, unit: str = "") -> Iterator[Update]:
        started = self.clock()
        done = [0]
        shown = [False]
        width = [0]
        stop = threading.Event()

        def draw(end: str = "") -> None:
            seconds = self.clock() - started
            count = f"{done[0]}/{total}{' ' + unit if unit else ''}, " if total else ""
            text = f"{label}: {count}{seconds:.0f} s" if not end else f"{label}: {seconds:.1f} s"
            try:
                self.stream.write("\r" + text.ljust(width[0]) + end)  # pad over a longer previous line
                self.stream.flush()
            except (OSError, ValueError):  # the terminal went away: the work goes on without a line
                stop.set()
                return
            width[0] = len(text)
            shown[0] = True

        def ticker() -> None:
            if stop.wait(self.delay):
                return
            while True:
                draw()
                if stop.wait(self.interval):
                    return

        thread = threading.Thread(target=ticker, name=f"phase {label}", daemon=True)
        thread.start()
        try:
            yield lambda value: done.__setitem__(0, value)
        finally:
            stop.set()
            thread.join()
            if shown[0]:
                draw(end="\n")


__all__ = ["Phases", "StatusLine", "Update", "no_phases", "timed"]
