"""Fault injection for the sweep engines' tests: :func:`install`, given to a sweep as its worker initializer, wraps
the worker's ``check_one`` so that a model whose file name starts with

* ``hang_`` sleeps (120 s), ``hog_`` allocates memory (64 MiB a step, touched, up to 3 GiB), ``crash_`` kills
  its own process with SIGKILL, ``exit_`` leaves it with status 3, ``threads_`` adds the worker's BLAS
  thread counts to its row, ``probe_`` adds the worker's parent (``parent``: the pool, or the fork server), the
  nnrt_onnx modules its check imported (``new_modules``) and the compiled kernels it loaded or compiled
  (``kernel_loads``: numba's cache hits and misses during the check), and how many objects the garbage collector
  had frozen (``frozen``: the fork server's);

and every other model is checked for real (after ``delay`` seconds), each call appended to ``log`` (the model,
the worker's pid). Nothing of this exists outside a test: the tests pass it to the engines themselves.

``python sweep_faults.py RESULTS LOG DELAY MODEL...`` runs a sweep with it (-j 1), the process a test kills.
"""
from __future__ import annotations

import functools
import os
import signal
import sys
import time


def install(log: str | None = None, delay: float = 0.0) -> None:
    from nnrt_onnx.workflows import sweep

    real = sweep.check_one

    def faulty(path, options):
        name = os.path.basename(path)
        if log is not None:
            with open(log, "a") as stream:
                stream.write(f"{path}\t{os.getpid()}\n")
        if name.startswith("hang_"):
            time.sleep(120)  # bounded: a time limit that fails to act fails the test instead of hanging it
            return {**real(path, options), "verdict": "the time limit did not act"}
        if name.startswith("hog_"):
            hoard = []
            for _ in range(48):  # 3 GiB at most: a cap that fails to act ends the test, not the machine
                hoard.append(bytearray(64 << 20))  # zero-filled by the allocator; touch every page to be sure
                hoard[-1][::4096] = b"\1" * len(range(0, 64 << 20, 4096))
                time.sleep(0.02)
            return {**real(path, options), "verdict": "the memory cap did not act"}
        if name.startswith("crash_"):
            os.kill(os.getpid(), signal.SIGKILL)
        if name.startswith("exit_"):
            os._exit(3)
        if name.startswith("threads_"):  # what the worker's BLAS has when the model starts
            from threadpoolctl import threadpool_info

            def blas():
                return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

            before = blas()
            return {**real(path, options), "blas": before,
                    "environment": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}}
        if name.startswith("probe_"):  # what the check had to load beyond what the worker had at the start
            import sys

            from nnrt_onnx.accel import numba_cache

            def loads():
                return sum(sum(numba_cache.jit_stats(d)) for d in numba_cache.KERNELS)

            time.sleep(delay)
            import gc

            frozen = gc.get_freeze_count()  # objects out of the collector's reach (the fork server's)
            modules, before = set(sys.modules), loads()
            row = real(path, options)
            return {**row, "parent": os.getppid(), "kernel_loads": loads() - before, "frozen": frozen,
                    "new_modules": sorted(m for m in set(sys.modules) - modules if m.startswith("nnrt_onnx"))}
        time.sleep(delay)
        return real(path, options)

    sweep.check_one = faulty


def installer(log: str | None = None, delay: float = 0.0):
    """A picklable initializer for a sweep: :func:`install` with these arguments."""
    return functools.partial(install, log, delay)


if __name__ == "__main__":
    results, log, delay, *models = sys.argv[1:]
    from nnrt_onnx.workflows.sweep import CheckOptions
    from nnrt_onnx.workflows.sweep_run import run_sweep

    run_sweep(models, CheckOptions(), jobs=1, results=results, resume=True,
              initializer=installer(log, float(delay)))
