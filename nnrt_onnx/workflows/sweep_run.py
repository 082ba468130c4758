"""A whole sweep (``nnrt-onnx check DIR -j N [--results FILE --resume] [--engine ray]``): which models still need
a check, the engine that runs :func:`~.sweep.check_one` for them (:mod:`.sweep_pool` here, :mod:`.sweep_ray` on a
Ray cluster), and the results file each finished row is appended to (:mod:`.sweep_results`)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..errors import UserError
from .sweep import CheckOptions
from .sweep_order import most_expensive_first
from .sweep_pool import Limits, WorkerPool, available_cores
from .sweep_results import ResultsFile, latest_rows, models_to_skip, read_rows

ENGINES = ("local", "ray")


def run_sweep(models: Sequence[str], options: CheckOptions, *, jobs: int | None = None, limits: Limits = Limits(),
              engine: str = "local", address: str | None = None, results: str | None = None, resume: bool = False,
              rerun_failures: bool = False, on_row: Callable[[dict, int, int], None] | None = None,
              initializer: Callable[[], None] | None = None,
              before_store: Callable[[int, dict[str, Any]], None] | None = None) -> tuple[list[dict[str, Any]], int]:
    """Every model's row, in the order of ``models``, and how many came from the results file unchecked.

    ``on_row(row, finished, to_check)`` is called as each model is checked (progress); ``before_store(index, row)``
    first, before the row is appended to the results file (to take the model's page out of it and write it). ``jobs``: worker processes
    (local; default: the cores) or tasks in flight (Ray; default: the cluster's CPUs). ``initializer``: a
    picklable function every worker calls first (tests inject faults with it).
    """
    if engine not in ENGINES:
        raise UserError(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
    if address is not None and engine != "ray":
        raise UserError("--address names a Ray cluster: it needs --engine ray")
    if (resume or rerun_failures) and results is None:
        raise UserError("--resume and --rerun-failures continue a --results FILE: name it")
    previous: dict[str, dict[str, Any]] = {}
    skip: set[str] = set()
    if results is not None:
        rows = read_rows(results)
        if rows and not (resume or rerun_failures):
            raise UserError(f"--results {results} already has {len(rows)} row(s): add --resume to continue that "
                            f"sweep (or --rerun-failures), or name another file")
        previous = latest_rows(rows)
        skip = models_to_skip(rows, rerun_failures) & set(models)
    todo = [(index, path) for index, path in enumerate(models) if path not in skip]
    jobs = jobs or (available_cores() if engine == "local" else None)

    def in_order(tasks, pool=None):
        if len(tasks) > 1 and (jobs is None or 1 < jobs < len(tasks)):  # with one worker the order changes nothing
            return most_expensive_first(tasks, pool.estimates([path for _, path in tasks]) if pool else None)
        return tasks

    finished: dict[int, dict[str, Any]] = {}
    writer = ResultsFile(results) if results is not None else None

    def record(index: int, row: dict[str, Any]) -> None:
        if before_store is not None:
            before_store(index, row)
        finished[index] = row
        if writer is not None:
            writer.append(row)
        if on_row is not None:
            on_row(row, len(finished), len(todo))

    try:
        if todo and engine == "local":
            with WorkerPool(min(jobs, len(todo)), limits, initializer) as pool:  # (its fork server estimates)
                pool.run(in_order(todo, pool), options, record)
        elif todo:
            from .sweep_ray import run_on_ray

            run_on_ray(in_order(todo), options, limits, record, address=address, jobs=jobs, initializer=initializer)
    finally:
        if writer is not None:
            writer.close()
    ordered = [finished[index] if index in finished else previous[path] for index, path in enumerate(models)]
    return ordered, len(models) - len(todo)


__all__ = ["ENGINES", "run_sweep"]
