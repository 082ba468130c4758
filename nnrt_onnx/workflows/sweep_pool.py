"""The local sweep engine (``check DIR -j N``): :func:`~.sweep.check_one` in N worker processes.

The workers (:mod:`.sweep_worker`) are forked from the pool's fork server (:mod:`.sweep_forkserver`: one process,
started with the pool, that has loaded what every check loads -- the imports, the op tables, the compiled kernels --
so that no worker pays that start-up), or, where there is none (not Linux) or it cannot fork safely, spawned as
fresh interpreters (multiprocessing's ``spawn``: nothing is forked from a process whose threads run -- importing
numpy starts OpenBLAS's threads -- such as the pool's own). A worker checks one model at a time and lives on for the
next model. The pool watches every busy worker:

* a model still running after ``Limits.timeout`` seconds: its worker is killed, the row's verdict is ``timeout``;
* a worker whose resident memory (RSS, read from /proc each 50 ms) passes ``Limits.max_memory``: killed,
  ``out of memory`` (as is a model whose allocation raised MemoryError in the worker);
* a worker that dies (a signal, an exit, a segfault in native code): ``crashed``, with the signal or exit code.

Tasks and rows cross the pipes as JSON, never pickles: the pool does not unpickle what a process that parses
untrusted models sends (pickles go only from the pool: the initializer, and a spawned worker's start-up arguments).

Each of these is that model's row and a new worker takes the dead one's place: never the end of the sweep. The
workers split the cores' BLAS threads (``cores // jobs`` each, set in the environment and through threadpoolctl),
and a worker dies with the process that started it, the fork server with the pool (Linux: PR_SET_PDEATHSIG).

A row's ``peak_rss`` is the worker's peak resident memory during that model's check (bytes): ``check_one`` resets
its high-water mark (/proc/self/clear_refs) before each model and reads it (``VmHWM``) after it
(``sweep.peak_rss``), so it includes the runtime the worker holds before any model (a forked worker: ~0.13 GB on a
small model, the pages it shares with the fork server counted; a spawned one: ~50 MB after the imports, 0.2-0.3 GB
once onnxruntime, onnx and the kernels are loaded). For a killed worker it is the largest RSS the pool saw (a lower
bound).
"""
from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing import connection
from typing import Any, Callable, Iterable

from ..errors import UserError
from . import sweep_forkserver
from .sweep_worker import OUT_OF_MEMORY, send, serve

TIMEOUT = "timeout"
CRASHED = "crashed"
_MEMORY_POLL = 0.05  # seconds between RSS reads of busy workers when a memory cap is set


@dataclass(frozen=True)
class Limits:
    """What one model may take (picklable: the Ray engine ships it to its tasks)."""

    timeout: float | None = 600.0  # wall-clock seconds per model, from the moment its worker starts it
    max_memory: int | None = None  # bytes of the worker's resident memory (Linux), its runtime included
    start_timeout: float = 300.0  # seconds a new worker (or the fork server) may take to load its runtime


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def limited_row(path: str, verdict: str, error: str, seconds: float | None, peak_rss: int | None) -> dict[str, Any]:
    """The row of a model whose worker was killed or died: the keys of :func:`~.sweep.check_one`'s rows."""
    return {"model": path, "ok": False, "verdict": verdict, "onnx_nodes": None, "nnrt_operations": None,
            "worst_output": None, "warnings": 0, "seconds": seconds, "error": error, "report": None,
            "peak_rss": peak_rss, "peak_rss_this_model": peak_rss is not None}


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def death_text(exitcode: int | None) -> str:
    """Why a worker ended, in words."""
    if exitcode is None:  # (a forked worker whose fork server, which reaps it and reports its status, is gone)
        return "the worker ended, its exit status unknown (its fork server is gone)"
    if exitcode < 0:
        hint = " (the system's out-of-memory killer sends it too)" if -exitcode == 9 else ""
        return f"the worker was killed by {_signal_name(-exitcode)}{hint}"
    return f"the worker exited with status {exitcode}"


# -- the pool ----------------------------------------------------------------------------------------------------


def _rss(pid: int) -> int | None:
    """A process's resident memory in bytes (Linux), or None."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class _Worker:
    def __init__(self, conn, process):
        """``process``: a started ``multiprocessing.Process`` or a :class:`~.sweep_forkserver.ForkedProcess`."""
        self.conn, self.process = conn, process
        self.task: tuple[Any, str] | None = None  # (key, model path) of the model it has
        self.sent_at = 0.0
        self.started_at: float | None = None  # when it said it started the model
        self.largest_rss: int | None = None
        self.stopped = False

    def alive(self) -> bool:
        return not self.stopped and self.process.is_alive()

    def give(self, key: Any, path: str, options) -> bool:
        try:
            send(self.conn, {"key": key, "model": path, "options": dataclasses.asdict(options)})
        except (BrokenPipeError, OSError):
            return False
        self.task, self.sent_at, self.started_at, self.largest_rss = (key, path), time.monotonic(), None, None
        return True

    def stop(self, kill: bool) -> None:
        """End the worker (politely: None, then 10 s to leave) and release its pipe and handle (once)."""
        if self.stopped:
            return
        if kill:
            self.process.kill()
        else:
            try:
                send(self.conn, None)
            except (BrokenPipeError, OSError):
                pass
        self.process.join(5 if kill else 10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.conn.close()
        self.stopped = True
        if not self.process.is_alive():
            self.process.close()


class WorkerPool:
    """N worker processes that check models under :class:`Limits`; reusable across :meth:`run` calls."""

    def __init__(self, jobs: int, limits: Limits = Limits(), initializer: Callable[[], None] | None = None,
                 blas_threads: int | None = None):
        """``initializer``: a picklable function each worker calls first (tests inject faults with it)."""
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        if limits.max_memory is not None and not os.path.exists(f"/proc/{os.getpid()}/status"):
            raise UserError("--max-memory reads the workers' resident memory from /proc: Linux only")
        self.jobs, self.limits, self.initializer = jobs, limits, initializer
        self.blas_threads = blas_threads or max(1, available_cores() // jobs)
        self._context = multiprocessing.get_context("spawn")
        self._idle: list[_Worker] = []
        # started now: it loads while the caller goes on (sorting the models, say)
        self._server = sweep_forkserver.ForkServer(self._context, self.blas_threads, initializer) \
            if sweep_forkserver.supported() else None

    def run(self, tasks: Iterable[tuple[Any, str]], options, on_row: Callable[[Any, dict], None]) -> None:
        """Check each (key, model path) of ``tasks``; ``on_row(key, row)`` as each model finishes, in that order."""
        pending = deque(tasks)
        busy: list[_Worker] = []
        try:
            while pending or busy:
                while pending and len(busy) < self.jobs:
                    worker = self._idle.pop() if self._idle else self._new_worker()
                    key, path = pending[0]
                    if not worker.give(key, path, options):  # it died idle: a fresh one takes the model
                        worker.stop(kill=True)
                        continue
                    pending.popleft()
                    busy.append(worker)
                connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy],
                                timeout=_MEMORY_POLL if self.limits.max_memory else 0.5)
                for worker in list(busy):
                    row = self._watch(worker)
                    if row is not None:
                        busy.remove(worker)
                        key = worker.task[0]
                        worker.task = None
                        if worker.alive() and row["verdict"] != OUT_OF_MEMORY:
                            self._idle.append(worker)
                        else:
                            worker.stop(kill=True)
                        on_row(key, row)
        finally:
            for worker in busy:
                worker.stop(kill=True)

    def _new_worker(self) -> _Worker:
        """A worker forked by the fork server, or spawned where there is none (or it cannot fork: then none from
        now on)."""
        conn, child = self._context.Pipe()
        process = None
        if self._server is not None:
            process = self._server.fork(child, self.limits.start_timeout)
            if process is None:
                self._server.stop()
                self._server = None
        if process is None:
            process = self._context.Process(target=serve, args=(child, self.blas_threads, self.initializer),
                                            name="nnrt-onnx sweep worker", daemon=True)
            process.start()
        child.close()
        return _Worker(conn, process)

    def estimates(self, paths: list[str]) -> list[int | None] | None:
        """Each model's :func:`~.sweep_order.estimated_cost` as the fork server makes it (None for all where it could
        not: sort by file size then, parse nothing here), or None where there is no fork server (estimate here)."""
        if self._server is None:
            return None
        estimates = self._server.estimates(paths, self.limits.start_timeout)
        if estimates is None:
            self._server.stop()
            self._server = None
            return [None] * len(paths)
        return estimates

    @property
    def forks(self) -> bool:
        """Whether new workers are forked from the fork server (else spawned)."""
        return self._server is not None

    def _watch(self, worker: _Worker) -> dict | None:
        """The model's row once it is done (finished, or its worker killed or dead); None while it runs."""
        now = time.monotonic()
        path = worker.task[1]
        try:
            while worker.conn.poll():
                message = json.loads(worker.conn.recv_bytes())
                if message[0] == "start":
                    worker.started_at = now
                elif message[0] == "row":
                    return message[2]
        except (EOFError, OSError):
            pass
        except ValueError:  # not JSON: nothing a worker of ours sends
            worker.stop(kill=True)
            return limited_row(path, CRASHED, "crashed: the worker sent a malformed message (killed)", None, None)
        ran = None if worker.started_at is None else now - worker.started_at
        if not worker.process.is_alive():
            return limited_row(path, CRASHED, f"crashed: {death_text(worker.process.exitcode)}", ran,
                               worker.largest_rss)
        limits = self.limits
        if ran is None and now - worker.sent_at > limits.start_timeout:
            worker.stop(kill=True)
            return limited_row(path, CRASHED, f"crashed: the worker did not start within {limits.start_timeout:g} s",
                               None, None)
        if ran is not None and limits.timeout is not None and ran > limits.timeout:
            worker.stop(kill=True)
            return limited_row(path, TIMEOUT, f"timeout: still running after {limits.timeout:g} s (killed)", ran,
                               worker.largest_rss)
        if limits.max_memory is not None and ran is not None:
            rss = _rss(worker.process.pid)
            if rss is not None:
                worker.largest_rss = max(rss, worker.largest_rss or 0)
                if rss > limits.max_memory:
                    worker.stop(kill=True)
                    return limited_row(path, OUT_OF_MEMORY,
                                       f"out of memory: the worker's resident memory passed "
                                       f"{limits.max_memory / (1 << 20):.0f} MiB (killed)", ran, rss)
        return None

    def close(self) -> None:
        """Stop the idle workers (they finish nothing: they have no model), then the fork server."""
        while self._idle:
            self._idle.pop().stop(kill=False)
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["CRASHED", "Limits", "OUT_OF_MEMORY", "TIMEOUT", "WorkerPool", "available_cores", "death_text",
           "limited_row"]
