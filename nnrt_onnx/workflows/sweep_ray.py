"""The Ray sweep engine (``check DIR --engine ray [--address ADDR]``): one Ray remote task per model.

Each task asks for one CPU (and ``memory=`` the cap, when there is one, so Ray places no more models on a node
than its memory holds) and runs the model exactly as the local engine does: in a worker process of a one-worker
:class:`~.sweep_pool.WorkerPool` that the Ray worker keeps for its next tasks, under the same time and memory
limits, so a hang, a memory hog or a crash is the same row on a cluster as on one machine. The driver keeps at
most ``jobs`` tasks in flight (default: the cluster's CPUs) and cancels (``ray.cancel(force=True)``) a task still
unfinished well after its limit: a Ray worker stuck outside the model.

Ray is an optional dependency (``pip install "nnrt-onnx[ray]"``), imported only here. Without ``--address`` a
local Ray instance is started for the sweep (``ray.init(num_cpus=jobs)``, no dashboard) and stopped after it.
"""
from __future__ import annotations

import pickle
import threading
import time
from typing import Any, Callable, Sequence

from ..errors import UserError
from .sweep_pool import CRASHED, TIMEOUT, Limits, WorkerPool, available_cores, limited_row

_CANCEL_GRACE = 60.0  # seconds past a task's own limits before the driver cancels it


def _import_ray():
    try:
        import ray
    except ImportError:
        raise UserError('--engine ray needs Ray, an optional dependency: pip install "nnrt-onnx[ray]"') from None
    return ray


_POOLS: dict[Any, WorkerPool] = {}


def check_in_ray_worker(path: str, options, limits: Limits, initializer) -> dict[str, Any]:
    """The body of one Ray task: the model checked in this Ray worker's own isolated worker process."""
    # the initializer by value (each task unpickles its own copy); a worker dies with the thread that started it
    key = (limits, pickle.dumps(initializer), threading.get_ident())
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = WorkerPool(1, limits, initializer, blas_threads=1)
    rows: list[dict[str, Any]] = []
    pool.run([(0, path)], options, lambda _, row: rows.append(row))
    return rows[0]


def run_on_ray(tasks: Sequence[tuple[Any, str]], options, limits: Limits, on_row: Callable[[Any, dict], None], *,
               address: str | None = None, jobs: int | None = None, initializer=None) -> None:
    """Check each (key, model path) of ``tasks`` as a Ray task; ``on_row(key, row)`` as each one finishes."""
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        settings = {"include_dashboard": False, "log_to_driver": False}
        try:
            if address is not None:
                ray.init(address=address, **settings)
            else:
                ray.init(num_cpus=jobs or available_cores(), **settings)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            raise UserError(f"--engine ray: cannot start or reach {where}: {exc}") from None
    try:
        capacity = jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
        resources: dict[str, Any] = {"num_cpus": 1, "max_retries": 0}
        if limits.max_memory is not None:
            resources["memory"] = limits.max_memory
        remote = ray.remote(check_in_ray_worker).options(**resources)
        deadline_after = (limits.timeout or float("inf")) + limits.start_timeout + _CANCEL_GRACE
        pending = list(tasks)
        pending.reverse()
        flying: dict[Any, tuple[Any, str, float]] = {}  # ref -> (key, path, submitted)
        while pending or flying:
            while pending and len(flying) < capacity:
                key, path = pending.pop()
                flying[remote.remote(path, options, limits, initializer)] = (key, path, time.monotonic())
            done, _ = ray.wait(list(flying), num_returns=1, timeout=1.0)
            for ref in done:
                key, path, submitted = flying.pop(ref)
                on_row(key, _row_of(ray, ref, path, time.monotonic() - submitted))
            now = time.monotonic()
            for ref, (key, path, submitted) in list(flying.items()):
                if now - submitted > deadline_after:
                    ray.cancel(ref, force=True)
                    del flying[ref]
                    on_row(key, limited_row(path, TIMEOUT, f"timeout: the Ray task was still running after "
                                                           f"{now - submitted:.0f} s (cancelled)", now - submitted,
                                            None))
    finally:
        if started_here:
            ray.shutdown()


def _row_of(ray, ref, path: str, seconds: float) -> dict[str, Any]:
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as exc:  # the Ray worker died or the task failed outside the model
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return limited_row(path, CRASHED, f"crashed: the Ray task failed ({type(exc).__name__}: {first})", seconds,
                           None)


__all__ = ["check_in_ray_worker", "run_on_ray"]
