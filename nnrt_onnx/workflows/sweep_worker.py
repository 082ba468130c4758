"""A sweep's worker process (:mod:`.sweep_pool` starts it: forked from :mod:`.sweep_forkserver`, or spawned): it
checks the models its pool sends, one at a time, with :func:`~.sweep.check_one`, until the pool sends None or goes
away. Tasks and rows cross its pipe as JSON, never pickles (the pool does not unpickle what a process that parses
untrusted models sends).

Before its first model the worker ties its life to its parent's (Linux: PR_SET_PDEATHSIG), ignores Ctrl-C (the
terminal sends it to the whole process group: the pool handles it), sets its BLAS and OpenMP thread counts (the
environment, for libraries loaded later, and threadpoolctl, for those loaded already: a forked worker has numpy's
OpenBLAS from its server) and imports what the check uses that it does not have yet (onnxruntime, which a fork
server cannot hold: its import starts a thread), so that start-up is not a model's time.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Callable

# the variables BLAS and OpenMP libraries read when they load (numpy's OpenBLAS, MKL, numba's OpenMP layer)
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
OUT_OF_MEMORY = "out of memory"


def die_with_parent() -> None:
    """Linux: the kernel kills this process when the thread that started it ends (a killed sweep leaves nothing)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def serve(conn, blas_threads: int, initializer: Callable[[], None] | None) -> None:
    """A worker's life: warm up, then check each model the pool sends until it sends None or goes away."""
    import signal

    parent = os.getppid()  # the pool, or the fork server
    die_with_parent()
    if os.getppid() != parent:  # the parent died before PR_SET_PDEATHSIG took effect
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the terminal's whole group: the pool handles it
    for name in THREAD_VARIABLES:
        os.environ[name] = str(blas_threads)
    if initializer is not None:
        initializer()
    from ..runtime.threads import release_blas_threads
    from . import parity, sweep  # noqa: F401  (the runtime is imported now: start-up is not a model's time)

    import onnxruntime  # noqa: F401

    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=blas_threads)  # libraries loaded before the environment was set
    except ImportError:
        pass
    while True:
        try:
            task = json.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if task is None:
            return
        key, path, options = task["key"], task["model"], options_from_json(task["options"])
        send(conn, ["start", key])
        row = sweep.check_one(path, options)  # its peak_rss: this model's own (the watermark reset before it)
        release_blas_threads()  # the native device holds its own count after a run: the next model starts afresh
        if row.get("error") == "out of memory":  # a MemoryError the check caught: the same verdict as the cap's
            row["verdict"] = OUT_OF_MEMORY
        try:
            send(conn, ["row", key, row])
        except (BrokenPipeError, OSError):
            return


def send(conn, message) -> None:
    """``message`` to the other end of ``conn``, as JSON."""
    conn.send_bytes(json.dumps(message).encode())


def options_from_json(data: dict):
    """The :class:`~.sweep.CheckOptions` a worker was sent as JSON."""
    from .sweep import CheckOptions

    return CheckOptions(**{**data, "value_ranges": tuple(tuple(r) for r in data["value_ranges"])})


__all__ = ["OUT_OF_MEMORY", "THREAD_VARIABLES", "die_with_parent", "options_from_json", "send", "serve"]
