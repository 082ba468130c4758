"""Worker processes for the fuzzers (tools/fuzz.py, tools/difffuzz.py): each task runs in a subprocess under a
memory limit (RLIMIT_AS) and a time limit; a worker that dies, hangs or finishes its batch is replaced, and the
task is classified ``died``, ``hang`` or ``memory`` instead.

The protocol: the campaign writes one JSON task a line to the worker's stdin; the worker answers each with a line
``{"id": ..., "start": true}`` once the task is loaded, then the result line (a JSON object with ``outcome``). A
fuzzer's script runs :func:`serve` when started with ``--worker --memory-mb M --timeout S``, and subclasses
:class:`Runner` with ``script`` set to itself.
"""
from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

DEFAULT_MEMORY_MB = 1536  # address space a worker may add to what it has after start-up
DEFAULT_TIMEOUT = 20.0  # seconds per task


class Hang(BaseException):
    """Raised by the worker's timer: a BaseException, so no `except Exception` in the code under test swallows it."""


_SCRATCH: list[Path] = []


def scratch_file(name: str = "model.onnx") -> Path:
    """This process's file for the model under test (in a directory of its own, removed at exit)."""
    if not _SCRATCH:
        import atexit
        import shutil

        directory = Path(tempfile.mkdtemp(prefix="nnrt_fuzz_"))
        atexit.register(shutil.rmtree, directory, True)
        _SCRATCH.append(directory)
    return _SCRATCH[0] / name


def reset_peak_rss() -> None:
    """Reset this process's VmHWM to its current RSS (Linux >= 4.0: "5" to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


def peak_rss_mb() -> float | None:
    """This process's peak resident memory so far (VmHWM), MiB."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM"))
    except (OSError, StopIteration, ValueError):
        return None


def _limit_memory(memory_mb: int) -> None:
    """RLIMIT_AS: what this process has mapped now, plus ``memory_mb``."""
    try:
        import resource

        with open("/proc/self/status") as status:
            vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
        limit = vm + memory_mb * (1 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, OSError, StopIteration, ValueError):
        pass


def serve(memory_mb: int, timeout: float, load: Callable[[dict], tuple[Any, dict]],
          evaluate: Callable[[Any], dict]) -> None:
    """The worker loop: JSON tasks on stdin, JSON results on stdout. Call it after the imports and warm-up that are
    not findings (the memory limit counts from here).

    ``load(task)`` -> (subject, fields added to the result); an exception there is the fuzzer's own failure (outcome
    ``skipped``). ``evaluate(subject)`` -> the result dict, run under the time limit (``Hang`` escaping it is a
    ``hang``).
    """
    import signal

    _limit_memory(memory_mb)

    def alarm(signum, frame):
        raise Hang()

    signal.signal(signal.SIGALRM, alarm)
    out = sys.stdout
    for line in sys.stdin:
        task = json.loads(line)
        try:
            subject, extra = load(task)
        except Exception as exc:  # a task the fuzzer itself cannot make: not a finding
            out.write(json.dumps({"id": task["id"], "start": True}) + "\n")
            out.write(json.dumps({"id": task["id"], "outcome": "skipped", "detail": repr(exc)[:200]}) + "\n")
            out.flush()
            continue
        out.write(json.dumps({"id": task["id"], "start": True}) + "\n")
        out.flush()
        reset_peak_rss()  # so that VmHWM after the task is this task's peak
        started = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            result = evaluate(subject)
        except Hang:
            result = {"outcome": "hang", "site": "?", "detail": "over the time limit"}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        result.update(extra)
        result["id"] = task["id"]
        result["ms"] = round((time.perf_counter() - started) * 1e3, 1)
        result["peak_rss_mb"] = peak_rss_mb()
        out.write(json.dumps(result) + "\n")
        out.flush()


def site_of_issue(message: str) -> str:
    """The ``file:line`` an ``internal_error`` issue's message names (``... (at path:line; ...)``), or "?"."""
    marker = "(at "
    start = message.rfind(marker)
    if start < 0:
        return "?"
    return message[start + len(marker):].split(";")[0].split(")")[0]


def slug(key: str) -> str:
    """A file name for a failure's key: its words, and a hash that keeps different keys apart."""
    import hashlib

    text = "".join(c if c.isalnum() else "_" for c in key).strip("_")
    return f"{text[:80]}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"


class _Worker:
    def __init__(self, script: Path, memory_mb: int, timeout: float, package: str):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": package}
        self.process = subprocess.Popen(
            [sys.executable, str(script), "--worker", "--memory-mb", str(memory_mb), "--timeout", str(timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.done = 0
        self.buffer = b""

    def send(self, task: dict) -> None:
        self.process.stdin.write(json.dumps(task).encode() + b"\n")
        self.process.stdin.flush()

    def read_line(self, deadline: float) -> str | None:
        """The next line (read from the pipe's file descriptor, buffered here), or None when the deadline passes
        or the worker dies."""
        fd = self.process.stdout.fileno()
        selector = selectors.DefaultSelector()
        selector.register(fd, selectors.EVENT_READ)
        try:
            while b"\n" not in self.buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    return None
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None
                self.buffer += chunk
            line, _, self.buffer = self.buffer.partition(b"\n")
            return line.decode()
        finally:
            selector.close()

    def stop(self) -> int | None:
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        return self.process.returncode


class Runner:
    """Workers that evaluate tasks, restarted on death, hang or batch end. A fuzzer subclasses it with ``script``,
    the file started as ``script --worker``."""

    script: Path

    def __init__(self, workers: int = 1, batch: int = 500, memory_mb: int = DEFAULT_MEMORY_MB,
                 timeout: float = DEFAULT_TIMEOUT, package: str | None = None):
        """``package``: the PYTHONPATH of the workers (where they import nnrt_onnx from; default the checkout)."""
        self.count, self.batch, self.memory_mb, self.timeout = workers, batch, memory_mb, timeout
        self.package = package or str(Path(__file__).resolve().parent.parent)
        self.pool: list[_Worker | None] = [None] * workers
        self.next_id = 0
        self._lock = threading.Lock()

    def _worker(self, slot: int) -> _Worker:
        worker = self.pool[slot]
        if worker is None or worker.done >= self.batch or worker.process.poll() is not None:
            if worker is not None:
                worker.stop()
            worker = self.pool[slot] = _Worker(self.script, self.memory_mb, self.timeout, self.package)
        return worker

    def evaluate(self, slot: int, task: dict) -> dict:
        """Run one task on worker ``slot`` (one task at a time per slot; slots may run in parallel threads); a
        worker that dies or overruns is replaced and the task classified."""
        worker = self._worker(slot)
        with self._lock:
            self.next_id += 1
            task = {**task, "id": self.next_id}
        try:
            worker.send(task)
        except (BrokenPipeError, OSError):
            code = worker.stop()
            self.pool[slot] = None
            return {"outcome": "died", "site": f"worker exit {code}", "detail": "before the task"}
        startup = 600.0 if worker.done == 0 else 0.0  # the first task waits for imports and warm-up
        line = worker.read_line(time.monotonic() + self.timeout + 30 + startup)
        if line is None or '"start"' not in line:
            code = worker.stop()
            self.pool[slot] = None
            return {"outcome": "died", "site": f"worker exit {code}", "detail": "no start line"}
        line = worker.read_line(time.monotonic() + self.timeout + 30)
        worker.done += 1
        if line is None:
            try:  # EOF (the worker died) or the deadline: which one, the process tells
                worker.process.wait(5)
            except subprocess.TimeoutExpired:
                pass
            alive = worker.process.poll() is None
            code = worker.stop()
            self.pool[slot] = None
            if alive:
                return {"outcome": "hang", "site": "killed after the time limit", "detail": ""}
            signal_text = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
            outcome = "memory" if code is not None and code in (-9,) else "died"
            return {"outcome": outcome, "site": f"worker {signal_text}", "detail": ""}
        return json.loads(line)

    def close(self) -> None:
        for worker in self.pool:
            if worker is not None:
                worker.stop()
        self.pool = [None] * self.count


def run_tasks(runner: Runner, tasks, record: Callable[[Any, dict, int], None],
              deadline: float = float("inf")) -> None:
    """Evaluate ``tasks`` (an iterable of (key, task dict)) on every slot of ``runner`` in parallel threads until
    they run out or ``deadline`` (time.monotonic()) passes; ``record(key, result, slot)`` is called under a lock.
    Closes the runner."""
    lock = threading.Lock()
    tasks = iter(tasks)

    def work(slot: int) -> None:
        while time.monotonic() < deadline:
            with lock:
                item = next(tasks, None)
            if item is None:
                return
            key, task = item
            result = runner.evaluate(slot, task)
            with lock:
                record(key, result, slot)

    threads = [threading.Thread(target=work, args=(slot,), daemon=True) for slot in range(runner.count)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        runner.close()


def shrink_greedily(best, candidates: Callable[[Any], Any], keeps: Callable[[Any], bool], budget: int):
    """Greedy minimisation: the first of ``candidates(best)`` (smaller versions, None for one that could not be
    made) that ``keeps`` the failure becomes the new ``best``, until none does or ``budget`` candidates were tried."""
    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        for candidate in candidates(best):
            if candidate is None:
                continue
            tries += 1
            if tries > budget:
                break
            if keeps(candidate):
                best = candidate
                improved = True
                break
    return best


def campaign_parser(doc: str, unit: str, timeout: float) -> argparse.ArgumentParser:
    """A fuzzer's command line: its module ``doc``, --minutes, --count, --seed (of ``unit``s, e.g. "mutant"),
    --memory-mb, --timeout, --replay and the hidden --worker; the fuzzer adds its own options."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0], epilog=doc.split("\n\n", 1)[-1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, help="run this long (new bad sites are shrunk and saved)")
    parser.add_argument("--count", type=int, help=f"try this many {unit}s")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB, help="address space a worker may add")
    parser.add_argument("--timeout", type=float, default=timeout, help=f"seconds per {unit}")
    parser.add_argument("--replay", metavar="MODEL.onnx", help="classify one model file and exit")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser


def parse_args(parser: argparse.ArgumentParser, argv, worker: Callable[[int, float], None]):
    """The fuzzer's arguments; with --worker, run ``worker(memory_mb, timeout)`` instead and return None. The
    checkout this file is in goes first on sys.path (the campaign imports nnrt_onnx from it, as its workers do)."""
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.memory_mb, args.timeout)
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    return args


def replay(runner: Runner, task: dict, bad) -> int:
    """Run one task on ``runner`` (then closed), print its result as JSON; 1 when its outcome is in ``bad``."""
    try:
        result = runner.evaluate(0, task)
    finally:
        runner.close()
    print(json.dumps(result))
    return 1 if result["outcome"] in bad else 0
