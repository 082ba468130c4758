"""Wall time of a sweep, `nnrt-onnx check DIR -j N`, for several N: fresh processes, the same models, and the
per-model verdicts of every N compared (they must be identical).

    python bench/bench_sweep.py                      # the onnx package's light nets, -j 1 against -j 2
    python bench/bench_sweep.py --jobs 1,2 --rounds 3 DIR_OR_MODEL ...

Without models, the light nets shipped in the onnx package (onnx/backend/test/data/light/*.onnx, placeholder
weights), as tests/onnx/test_light_models.py finds them. Each round runs every N once, in a rotated order, as
`nnrt-onnx check MODELS... -j N --json` (a launcher like pip's console script, importing this checkout's CLI: see
``console_script``) with this checkout first on PYTHONPATH; round 0 also warms numba's
kernel cache. Prints each run's wall time and CPU time (the sweep and its workers: the work done, which the
machine's load does not change much), split into user and system time (the system time is mostly page faults on
the models' large tensors, and on a virtual machine their cost varies from run to run with what the host does:
the same VGG-19 check measured 0.7-3.6 s of it), the median wall time per N, and the ratio of each N's median to
the first's. The machine's other load counts: on a shared machine, run it when it is quiet and say when it was not.

The checkout's sources are compiled to bytecode first (``compileall``), as an installed package has them
(``--no-bytecode``: not).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def compile_bytecode() -> None:
    """The checkout's sources compiled to bytecode, as ``pip install`` does for an installed package: where
    PYTHONDONTWRITEBYTECODE is set (this machine sets it), a checkout run from its sources would otherwise compile
    nnrt_onnx's ~200 modules in every process, ~0.4 s of the fork server's start a user's install does not pay."""
    import compileall

    if not (compileall.compile_dir(str(ROOT / "nnrt_onnx"), quiet=1, workers=1)
            and compileall.compile_file(str(ROOT / "cli.py"), quiet=1)):
        raise SystemExit("compiling the checkout's sources failed")


def console_script(directory: Path) -> Path:
    """A launcher like the ``nnrt-onnx`` that ``pip install`` writes: a small script importing the CLI module (from
    its bytecode), which is what a user's sweep and its fork server (re-importing the main script, as
    multiprocessing's spawn does) load -- not ``cli.py`` run as a script, compiled anew in both processes."""
    path = directory / "nnrt-onnx"
    path.write_text("import sys\nfrom cli import main\n\nif __name__ == '__main__':\n    sys.exit(main())\n")
    return path


def light_models() -> list[str]:
    import onnx

    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return sorted(str(p) for p in light.glob("*.onnx"))


def run(models: list[str], jobs: int, launcher: Path) -> tuple[float, float, float, dict[str, str]]:
    """(wall seconds, user and system CPU seconds of the sweep and its workers, model -> verdict) of one fresh
    sweep."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, str(launcher), "check", *models, "-j", str(jobs), "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd="/tmp")
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers are reaped by the sweep: they count
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    try:
        rows = json.loads(done.stdout)["models"]
    except (ValueError, KeyError):
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}") from None
    return wall, user, system, {row["model"]: row["verdict"] for row in rows}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="models or directories [the onnx package's light nets]")
    parser.add_argument("--jobs", default="1,2", help="the worker counts to compare [1,2]")
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds after the warm-up round [1]")
    parser.add_argument("--no-warmup", action="store_true", help="skip round 0 (numba's cache is warm already)")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="do not compile the checkout's sources to bytecode first (see the module doc)")
    args = parser.parse_args(argv)
    if not args.no_bytecode:
        compile_bytecode()
    models = args.models or light_models()
    launcher = console_script(Path(tempfile.mkdtemp(prefix="bench_sweep")))
    counts = [int(j) for j in args.jobs.split(",")]
    times: dict[int, list[float]] = {j: [] for j in counts}
    verdicts: dict[int, dict[str, str]] = {}
    print(f"{len(models)} model(s), {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f} at the start")
    for round_number in range(0 if args.no_warmup else -1, args.rounds):
        order = counts[round_number % len(counts):] + counts[:round_number % len(counts)]
        for jobs in order:
            wall, user, system, found = run(models, jobs, launcher)
            label = "warm-up" if round_number < 0 else f"round {round_number + 1}"
            print(f"{label}: -j {jobs}: {wall:.1f} s wall, {user + system:.1f} s CPU ({user:.1f} user, {system:.1f} "
                  f"system) (load average {os.getloadavg()[0]:.2f})", flush=True)
            if round_number >= 0:
                times[jobs].append(wall)
            if verdicts.setdefault(jobs, found) != found:
                raise SystemExit(f"-j {jobs} gave other verdicts from one run to the next: {found}")
    first = statistics.median(times[counts[0]])
    for jobs in counts:
        median = statistics.median(times[jobs])
        print(f"-j {jobs}: median {median:.1f} s over {len(times[jobs])} run(s), {median / first:.2f}x the -j "
              f"{counts[0]} time")
    differing = {m: {j: verdicts[j].get(m) for j in counts} for m in verdicts[counts[0]]
                 if len({verdicts[j].get(m) for j in counts}) > 1}
    if differing:
        raise SystemExit(f"the verdicts differ between worker counts: {differing}")
    print(f"per-model verdicts identical for -j {', '.join(map(str, counts))}: "
          + ", ".join(f"{Path(m).stem} {v}" for m, v in verdicts[counts[0]].items()))


if __name__ == "__main__":
    main()
