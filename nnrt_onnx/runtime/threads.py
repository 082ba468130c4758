"""The native device's thread policy: how many threads numpy's BLAS may use during a run.

numpy's BLAS (OpenBLAS in numpy's wheels) starts one worker per core and lets idle workers spin. On a machine
where another process holds a core, a multi-threaded sgemm waits on a worker that is not running: the same model
then runs many times slower than with one thread (measured up to 30x on 2 cores, see docs/performance.md). So the
native device sets the BLAS thread count explicitly for its runs:

* default: **1 thread** -- as fast as 2 on an idle 2-core machine for these model sizes, and steady under load;
* ``OH_NN_PERFORMANCE_HIGH`` / ``OH_NN_PERFORMANCE_EXTREME`` (Compilation.set_performance_mode): every core this
  process may run on (``os.sched_getaffinity``); ``OH_NN_PERFORMANCE_MEDIUM``: half of them (at least 1);
* the extension config ``nnrt_onnx.threads`` (``Compilation.add_extension_config("nnrt_onnx.threads", b"2")``)
  or the environment variable ``NNRT_ONNX_THREADS``: that many threads exactly (0 = leave BLAS alone), winning
  over the performance mode (the extension over the environment).

The count is applied through threadpoolctl's controller, found once per process; without threadpoolctl (or a BLAS
it knows) the policy is a no-op and numpy's BLAS keeps its own count.

**Held, not set per run** (issue 27): reading and setting the count through threadpoolctl costs ~1 us per call and
a set-and-restore per run ~10 us, half of a small model's run. So a run (:func:`enter_run` / :func:`leave_run`)
touches BLAS only when its count differs from the count the device last set, and leaves it set afterwards; the
caller's own count, saved when the device first changed it, comes back with :func:`release_blas_threads` (the
``bench`` workflow calls it after timing). :func:`blas_threads` (a block with a count, restored on leaving: plan
time, tools) keeps both in step. A count changed behind the device's back (the caller's own threadpoolctl limits
between runs) is not seen until :func:`release_blas_threads`.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from functools import cache

from ..enums import OH_NN_PerformanceMode
from ..errors import invalid

THREADS_EXTENSION = "nnrt_onnx.threads"
THREADS_ENV = "NNRT_ONNX_THREADS"


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _parse(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise invalid(f"{what} must be a thread count (an integer >= 0), got {text!r}") from None
    if value < 0:
        raise invalid(f"{what} must be a thread count (an integer >= 0), got {value}")
    return value


def thread_count(performance_mode=OH_NN_PerformanceMode.OH_NN_PERFORMANCE_NONE, extensions=None) -> int:
    """The BLAS thread count of a run (0: leave BLAS as it is), from the compile options (see the module doc)."""
    extensions = extensions or {}
    if THREADS_EXTENSION in extensions:
        raw = extensions[THREADS_EXTENSION]
        return _parse(raw.decode("ascii", "replace") if isinstance(raw, bytes) else str(raw),
                      f"extension config {THREADS_EXTENSION}")
    if os.environ.get(THREADS_ENV, "").strip():
        return _parse(os.environ[THREADS_ENV].strip(), f"${THREADS_ENV}")
    cores = available_cores()
    if performance_mode in (OH_NN_PerformanceMode.OH_NN_PERFORMANCE_HIGH,
                            OH_NN_PerformanceMode.OH_NN_PERFORMANCE_EXTREME):
        return cores
    if performance_mode == OH_NN_PerformanceMode.OH_NN_PERFORMANCE_MEDIUM:
        return max(1, cores // 2)
    return 1


@cache
def _blas_controllers() -> tuple:
    """threadpoolctl's controllers of the BLAS libraries numpy loaded (found once; () without threadpoolctl)."""
    try:
        import numpy  # noqa: F401  (its BLAS must be loaded before the scan)
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return ()
    try:
        return tuple(ThreadpoolController().select(user_api="blas").lib_controllers)
    except Exception:  # an unknown BLAS build: leave it alone
        return ()


_LOCK = threading.Lock()
_ACTIVE: list[int] = []  # thread counts of the runs in progress (BLAS thread counts are process-wide)


@contextmanager
def blas_threads(count: int):
    """Run the block with BLAS limited to ``count`` threads (0: unchanged); the previous count is restored when
    the last concurrent run leaves (concurrent runs share the process-wide setting: the largest count wins)."""
    controllers = _blas_controllers() if count > 0 else ()
    if not controllers:
        yield
        return
    with _LOCK:
        if not _ACTIVE:
            _blas_threads.saved = [c.num_threads for c in controllers]
        _ACTIVE.append(count)
        wanted = max(_ACTIVE)
        for c in controllers:
            if c.num_threads != wanted:
                c.set_num_threads(wanted)
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE.remove(count)
            wanted = max(_ACTIVE) if _ACTIVE else None
            for c, saved in zip(controllers, _blas_threads.saved):
                target = saved if wanted is None else wanted
                if c.num_threads != target:
                    c.set_num_threads(target)


class _Saved:
    saved: list[int] = []


_blas_threads = _Saved()


class _Held:
    count: int | None = None  # the count the device's runs last set (None: it has not changed BLAS)
    saved: list[int] | None = None  # the caller's counts before that
    active: list[int] = []  # counts of the runs in progress


_HELD = _Held()


def enter_run(count: int) -> None:
    """A run with BLAS at ``count`` threads (0: unchanged) starts: BLAS is set only when the device's last count
    differs (while runs overlap, the largest count wins). Pair with :func:`leave_run`."""
    if count <= 0:
        return
    controllers = _blas_controllers()
    if not controllers:
        return
    with _LOCK:
        _HELD.active.append(count)
        wanted = max(_HELD.active)
        if _HELD.count != wanted:
            if _HELD.saved is None:
                _HELD.saved = [c.num_threads for c in controllers]
            for c in controllers:
                if c.num_threads != wanted:
                    c.set_num_threads(wanted)
            _HELD.count = wanted


def leave_run(count: int) -> None:
    """The run that :func:`enter_run` started with ``count`` ends (BLAS keeps its count)."""
    if count <= 0 or not _blas_controllers():
        return
    with _LOCK:
        _HELD.active.remove(count)


def release_blas_threads() -> None:
    """Give BLAS back the count it had before the device's runs changed it (no-op while a run is in progress or
    when they never changed it)."""
    controllers = _blas_controllers()
    with _LOCK:
        if _HELD.active or _HELD.saved is None:
            return
        for c, saved in zip(controllers, _HELD.saved):
            if c.num_threads != saved:
                c.set_num_threads(saved)
        _HELD.count, _HELD.saved = None, None


def current_blas_threads() -> list[int]:
    """The thread count of each BLAS library threadpoolctl controls (empty without threadpoolctl)."""
    return [c.num_threads for c in _blas_controllers()]


__all__ = ["THREADS_ENV", "THREADS_EXTENSION", "available_cores", "blas_threads", "current_blas_threads",
           "enter_run", "leave_run", "release_blas_threads", "thread_count"]
