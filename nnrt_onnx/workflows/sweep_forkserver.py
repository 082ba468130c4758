"""The process a sweep's workers are forked from (Linux): one per :class:`~.sweep_pool.WorkerPool`, started with the
pool, it loads what every model's check loads (:func:`preload`: the check, the converter and its op tables, the
reference kernels, the native runtime with its fast paths and every compiled kernel numba's disk cache holds) and
then forks a worker whenever the pool asks. So the workers share that start-up instead of each paying it (~1.5 s of
CPU: the imports, onnx's ml_dtypes alone 0.55 s, and the kernels' loading), and a worker that replaces a killed one
starts at once.

**One thread.** Forking copies only the thread that forks, so a process whose other threads may hold a lock
(malloc's, a library's) must not fork. The server imports numpy with ``OPENBLAS_NUM_THREADS=1`` (OpenBLAS starts no
thread then; each worker sets its own count through threadpoolctl after the fork), never imports onnxruntime (its
import starts a thread: each worker imports it after the fork, 0.03 s), runs no model, and counts its threads
(``/proc/self/task``) after loading and before every fork: with more than one it forks nothing and the pool spawns
its workers instead (as it does where there is no fork server: not Linux, no pidfd).

**Frozen.** Once loaded, the server moves its objects out of the garbage collector's reach (``gc.freeze``, as
Python's documentation advises before forking without exec): a worker's full collections then neither traverse
them nor write to them, which would copy the pages it shares with the server (measured in one process after the
preload: five full collections over four light nets took 0.49 s of CPU, 0.07 s with the loaded objects frozen).

**Lifetimes.** The server dies with the thread that started it and each worker with the server (Linux
``PR_SET_PDEATHSIG``, :func:`~.sweep_worker.die_with_parent`): a killed sweep (``kill -9``, Ctrl-C) leaves nothing
running. The server ignores Ctrl-C (the pool handles it) and, told to stop or finding its pool gone, kills and reaps
any worker left, then exits without Python's slow teardown (``os._exit``), as each worker does.

**Sorting the models.** The server also estimates the models' costs for the pool's order
(:func:`~.sweep_order.estimated_cost`: onnx's shape inference, which the server has loaded anyway), before it forks
the first worker: the sweep's own process then never imports onnx (0.7 s of CPU) nor parses a model, so a model that
crashes or hangs onnx's shape inference ends the server -- the pool then spawns its workers, the models sorted by
file size -- not the sweep.

**The line to the pool** is a socket pair, messages in JSON (the pool never unpickles what comes from a process
that forks model parsers): ``{"estimate": [paths]}`` answered by ``{"estimates": [cost or null, ...]}``;
``{"fork": true}`` with the worker's end of its own pipe passed along (``SCM_RIGHTS``),
answered by ``{"forked": pid}`` and a pidfd of the worker -- the pool's handle on it (:class:`ForkedProcess`: it
waits on it and signals through it, so a reused pid is never hit; the server opens it before it could reap the
worker); ``{"exited": pid, "code": c}`` once the server has reaped a worker (``c`` as multiprocessing's exit codes:
the status, or minus the signal); ``{"ready": true}`` or ``{"unusable": why}`` after the start-up. The initializer
(tests inject faults with it) goes to the server pickled and is unpickled by each worker after the fork, so the
server never imports what the initializer needs.
"""
from __future__ import annotations

import gc
import json
import os
import pickle
import select
import signal
import sys
import time
import traceback
from multiprocessing import connection, reduction
from typing import Any, Callable

from .sweep_worker import THREAD_VARIABLES, die_with_parent, send, serve

_EXIT_REPORT_WAIT = 10.0  # seconds the pool waits for the server's report of a dead worker's exit code


def supported() -> bool:
    """Whether workers can be forked from a server here (Linux, with pidfds)."""
    return sys.platform.startswith("linux") and hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")


def preload() -> None:
    """What every model's check loads, loaded once here for all the workers forked from this process (each module
    and table is what the first model would load on its own; the sweep tests check that a forked worker's first
    check imports nothing more of nnrt_onnx and loads no kernel)."""
    import onnx  # noqa: F401  (protobuf, ml_dtypes)
    import threadpoolctl  # noqa: F401  (each worker sets its BLAS threads with it)

    from ..ir.rows import onnx_rows, unsupported_reasons
    from ..kernels import kernels
    from ..onnx_import import dynamic, importer  # noqa: F401
    from ..onnx_import.handlers import registered
    from ..optable import op_table
    from ..runtime import cpu  # noqa: F401
    from ..runtime.specialise import preload_fast_paths
    from . import dropped_quantization, parity, quant_compare, sweep  # noqa: F401

    op_table()
    onnx_rows()
    unsupported_reasons()
    registered()
    kernels()
    preload_fast_paths()


def thread_count() -> int:
    """This process's threads (Linux)."""
    return len(os.listdir("/proc/self/task"))


# -- the pool's side ---------------------------------------------------------------------------------------------

class ForkedProcess:
    """A worker forked by the server, as the pool handles it: what the pool uses of ``multiprocessing.Process``."""

    def __init__(self, pid: int, pidfd: int, server: "ForkServer"):
        self.pid, self.sentinel, self._server = pid, pidfd, server
        self._exitcode: int | None = None
        self._asked = False

    def is_alive(self) -> bool:
        return not _readable(self.sentinel, 0)

    @property
    def exitcode(self) -> int | None:
        """None while it runs, and where the server could not say (gone itself: ``death_text`` says so)."""
        if self.is_alive():
            return None
        if not self._asked:  # (the server reports each exit once)
            self._exitcode, self._asked = self._server.exit_code(self.pid), True
        return self._exitcode

    def kill(self) -> None:
        try:
            signal.pidfd_send_signal(self.sentinel, signal.SIGKILL)
        except ProcessLookupError:  # already dead
            pass

    def join(self, timeout: float | None = None) -> None:
        _readable(self.sentinel, timeout)

    def close(self) -> None:
        os.close(self.sentinel)


class ForkServer:
    """The pool's handle on its fork server (started at once; :meth:`fork` waits for it to be ready)."""

    def __init__(self, context, blas_threads: int, initializer: Callable[[], None] | None):
        """``context``: multiprocessing's spawn context (the server is a fresh interpreter)."""
        self._control, remote = context.Pipe(duplex=True)  # a socket pair: it can carry file descriptors
        blob = pickle.dumps(initializer) if initializer is not None else None
        # daemonic: a pool never closed (a Ray worker's) does not hold its process's exit (multiprocessing ends it)
        self.process = context.Process(target=run_server, args=(remote, blas_threads, blob),
                                       name="nnrt-onnx sweep fork server", daemon=True)
        self.process.start()
        remote.close()
        self.unusable: str | None = None  # why it cannot fork (then the pool spawns its workers)
        self._ready = False
        self._exits: dict[int, int] = {}

    def estimates(self, paths: list[str], timeout: float) -> list[int | None] | None:
        """Each model's :func:`~.sweep_order.estimated_cost`, made by the server (it has onnx loaded, and a model
        that crashes or hangs onnx's shape inference takes the server down, not the sweep), or None where it could
        not (``unusable`` says why; stop the server then)."""
        try:
            if not self._wait_ready(timeout):
                return None
            send(self._control, {"estimate": paths})
            reply = self._next(("estimates", "unusable"), timeout)
            if reply is None or "unusable" in reply:
                self.unusable = reply["unusable"] if reply else f"it estimated nothing within {timeout:g} s"
                return None
            return [None if cost is None else int(cost) for cost in reply["estimates"]]
        except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
            self.unusable = f"its line broke while it estimated the models ({type(exc).__name__}: {exc})"
            return None

    def _wait_ready(self, timeout: float) -> bool:
        if not self._ready:
            ready = self._next(("ready", "unusable"), timeout)
            if ready is None or "unusable" in ready:
                self.unusable = ready["unusable"] if ready else f"it was not ready within {timeout:g} s"
                return False
            self._ready = True
        return True

    def fork(self, conn, timeout: float) -> ForkedProcess | None:
        """A new worker serving ``conn`` (its end of the pool's pipe), or None where the server cannot fork one
        (``unusable`` says why; stop the server then)."""
        try:
            if not self._wait_ready(timeout):
                return None
            send(self._control, {"fork": True})
            reduction.send_handle(self._control, conn.fileno(), self.process.pid)
            reply = self._next(("forked", "unusable"), timeout)
            if reply is None or "unusable" in reply:
                self.unusable = reply["unusable"] if reply else f"it forked no worker within {timeout:g} s"
                return None
            return ForkedProcess(reply["forked"], reduction.recv_handle(self._control), self)
        except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
            self.unusable = f"its line broke ({type(exc).__name__}: {exc})"
            return None

    def exit_code(self, pid: int) -> int | None:
        """The exit code of the dead worker ``pid``, as the server reports it (None: no report)."""
        deadline = time.monotonic() + _EXIT_REPORT_WAIT
        while pid not in self._exits:
            try:
                if self._next(("exited",), max(0.0, deadline - time.monotonic())) is None:
                    break
            except (OSError, EOFError, ValueError, KeyError, TypeError):
                break
        return self._exits.pop(pid, None)

    def _next(self, kinds: tuple[str, ...], timeout: float) -> dict[str, Any] | None:
        """The next message of one of ``kinds`` within ``timeout`` seconds (recording the exit reports read on the
        way), or None."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left < 0 or not self._control.poll(left):
                return None
            message = json.loads(self._control.recv_bytes())
            if "exited" in message:
                self._exits[int(message["exited"])] = int(message["code"])
            if any(kind in message for kind in kinds):
                return message

    def stop(self) -> None:
        """Stop the server (it kills and reaps any worker it still has) and wait for it to end."""
        try:
            send(self._control, "stop")
        except OSError:
            pass
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self._control.close()


def _readable(fd: int, timeout: float | None) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if timeout is None else max(0, int(timeout * 1000))))


# -- the server --------------------------------------------------------------------------------------------------

def run_server(control, blas_threads: int, initializer: bytes | None) -> None:
    """The fork server's life (a spawned process): load, report, then fork workers until told to stop."""
    parent = os.getppid()
    die_with_parent()
    if os.getppid() != parent:  # the pool died before PR_SET_PDEATHSIG took effect
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the pool handles it
    for name in THREAD_VARIABLES:  # OpenBLAS: no thread of its own here (set per worker); the others as the workers'
        os.environ[name] = "1" if name == "OPENBLAS_NUM_THREADS" else str(blas_threads)
    try:
        preload()
    except Exception as exc:  # noqa: BLE001 - the workers then load (and fail) on their own, spawned
        send(control, {"unusable": f"loading failed ({type(exc).__name__}: {exc})"})
        return
    if thread_count() != 1:
        send(control, {"unusable": f"it runs {thread_count()} threads after loading (only one may fork)"})
        return
    # what it loaded, out of the collector's reach: the workers' full collections skip it (see above). No collection
    # first (0.05 s of the start-up both -j 1 and -j N pay): Python's documentation advises none (it would leave
    # holes in the pages the workers share), and what the loading left as garbage is a few objects frozen with it
    gc.freeze()
    send(control, {"ready": True})
    children: dict[int, int] = {}  # pidfd -> pid
    try:
        _serve_forks(control, children, blas_threads, initializer)
    finally:
        for pidfd in children:
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in children.values():
            os.waitpid(pid, 0)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # nothing to tear down: Python's finalization of numba and onnx would only cost time


def _serve_forks(control, children: dict[int, int], blas_threads: int, initializer: bytes | None) -> None:
    while True:
        for ready in connection.wait([control, *children]):
            if ready is control:
                try:
                    message = json.loads(control.recv_bytes())
                except (EOFError, OSError):  # the pool is gone
                    return
                if message == "stop":
                    return
                if "estimate" in message:  # the models' costs, for the pool's order
                    from .sweep_order import estimated_cost

                    send(control, {"estimates": [estimated_cost(path) for path in message["estimate"]]})
                    continue
                worker_end = reduction.recv_handle(control)
                if thread_count() != 1:
                    os.close(worker_end)
                    send(control, {"unusable": f"it runs {thread_count()} threads (only one may fork)"})
                    continue
                pid = _fork_worker(control, worker_end, children, blas_threads, initializer)
                pidfd = os.pidfd_open(pid)  # before any reaping: it names this worker for sure
                children[pidfd] = pid
                send(control, {"forked": pid})
                reduction.send_handle(control, pidfd, os.getppid())
            else:
                pid = children.pop(ready)
                os.close(ready)
                _, status = os.waitpid(pid, 0)
                send(control, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def _fork_worker(control, worker_end: int, children: dict[int, int], blas_threads: int,
                 initializer: bytes | None) -> int:
    """Fork a worker serving the pipe end ``worker_end``; its pid (in the server)."""
    pid = os.fork()
    if pid:
        os.close(worker_end)
        return pid
    code = 1
    try:  # the worker: nothing of the server's stays open in it
        control.close()
        for pidfd in children:
            os.close(pidfd)
        serve(connection.Connection(worker_end), blas_threads,
              pickle.loads(initializer) if initializer is not None else None)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - said on stderr, as a spawned worker's would be
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return 0  # (not reached)


__all__ = ["ForkServer", "ForkedProcess", "preload", "run_server", "supported", "thread_count"]
