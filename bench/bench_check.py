"""Wall time and peak memory of `nnrt-onnx check` as users wait for it: fresh processes, interleaved rounds, medians.

    python bench/bench_check.py light_vgg19 light_bvlc_alexnet MODEL.onnx ...
    python bench/bench_check.py --compare /path/to/other/checkout --variant=--float64 light_vgg19

A name without a path is a light net of the onnx package (onnx/backend/test/data/light/NAME.onnx, placeholder
weights: constant outputs). Each side runs `python CHECKOUT/cli.py check MODEL --json [OPTIONS]` with that
checkout first on PYTHONPATH, under `/usr/bin/time` (peak RSS of the process); the float64 referee's seconds come
from the report. `--variant OPTIONS` adds this checkout with extra options as another side (repeatable, e.g.
`--variant=--float64`). Round 0 is a warm-up (numba's cache of each checkout) and is not counted.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _model(name: str) -> str:
    if os.sep in name or name.endswith(".onnx"):
        return str(Path(name).resolve())
    import onnx

    return str(Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"{name}.onnx")


def _run(checkout: Path, model: str, options: list[str]) -> tuple[float, float, float, bool]:
    """(wall seconds, peak RSS in GB, referee seconds, ok) of one fresh `check`."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    command = ["/usr/bin/time", "-f", "TIME %e %M", sys.executable, str(checkout / "cli.py"), "check", model, "--json",
               *options]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd="/tmp")
    timing = [line for line in done.stderr.splitlines() if line.startswith("TIME ")]
    if not timing or not done.stdout.strip():
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    wall, rss = timing[-1].split()[1:]
    report = json.loads(done.stdout)
    referee = (report.get("float64") or {}).get("seconds") or 0.0
    return float(wall), int(rss) / (1 << 20), float(referee), bool(report["ok"])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compare", type=Path, help="another checkout (e.g. a worktree of an older commit)")
    parser.add_argument("--variant", action="append", default=[], metavar="OPTIONS",
                        help="this checkout with these extra check options, as another side")
    args = parser.parse_args(argv)
    sides = [("this", ROOT, [])] + [(f"this {v}", ROOT, shlex.split(v)) for v in args.variant]
    if args.compare is not None:
        sides.insert(0, (f"{args.compare.name}", args.compare.resolve(), []))
    results: dict[tuple[str, str], list[tuple[float, float, float, bool]]] = {}
    for round_ in range(args.rounds + 1):
        for name in args.models:
            for label, checkout, options in sides:
                row = _run(checkout, _model(name), options)
                print(f"round {round_} {name} {label}: {row[0]:.1f} s, {row[1]:.2f} GB, referee {row[2]:.1f} s",
                      file=sys.stderr, flush=True)
                if round_:
                    results.setdefault((name, label), []).append(row)
    print(f"{'model':24} {'side':24} {'wall s':>7} {'peak GB':>8} {'referee s':>10} {'referee %':>10}  ok")
    for (name, label), rows in results.items():
        wall = statistics.median(r[0] for r in rows)
        peak = statistics.median(r[1] for r in rows)
        referee = statistics.median(r[2] for r in rows)
        print(f"{name:24} {label:24} {wall:7.1f} {peak:8.2f} {referee:10.1f} {100 * referee / wall:9.0f}%  "
              f"{all(r[3] for r in rows)}")


if __name__ == "__main__":
    main()
