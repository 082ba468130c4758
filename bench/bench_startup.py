#!/usr/bin/env python3
"""What users wait for: whole commands in fresh processes, nnrt-onnx against onnxruntime on the same model and inputs.

    python bench/bench_startup.py [--models a,b] [--rounds 7] [--scenarios second,first,readonly]
                                  [--fast-paths] [--convert] [--json FILE]

* **run**: ``nnrt-onnx run MODEL.nnrt --input INPUTS.npz --output-npz OUT.npz`` against a Python script that imports
  onnxruntime, opens the original .onnx (one intra-op thread), runs it once on the same INPUTS.npz and saves the
  outputs with ``np.savez`` (written next to the results, ``ort_once.py``). ``--fast-paths`` adds the same command
  with ``--fast-paths`` (the compiled kernels, loaded from the disk cache or compiled).
* **convert** (``--convert``): ``nnrt-onnx convert MODEL.onnx -o MODEL.nnrt`` against onnxruntime's own converter,
  ``python -m onnxruntime.tools.convert_onnx_models_to_ort MODEL.onnx --output_dir DIR``.

Scenarios (the kernel cache of nnrt_onnx/accel/numba_cache.py, placed with its environment variables):

* ``second``: the second command after install -- the cache filled by one command before the rounds;
* ``first``: the first command after install -- every round a new empty cache directory;
* ``readonly``: a read-only install -- the cache directory unwritable (a path under a regular file), so the per-user
  directory (``XDG_CACHE_HOME``, a new empty one for the first round only) takes it: the first round is the first
  command of that user, the others second commands.

Method: each scenario's rounds alternate the two commands (which goes first alternates too); each command is one
fresh process, timed from start to exit (wall) and by the kernel's accounting (user + system CPU of it and its
children). The table gives each side's median and the median of the per-round ratios nnrt/onnxruntime (min-max);
outputs are compared once per model first (max abs difference). Children run without PYTHONDONTWRITEBYTECODE
(Python's default: an installed package's bytecode is compiled at install). The machine's load average is printed;
on a shared machine quote the ratios, not the absolute times.

Models (bench/README.md): the torch-exported ones of bench/gen_models.py (mobilenet_v2, resnet18_half,
bert_tiny_seq16, lstm_classifier; generated into the cache directory with a torch environment first) and the onnx
zoo's light SqueezeNet with seeded random weights (bench_models.py writes it to the cache directory).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import DEFAULT_CACHE, model_path, onnx_inputs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["mobilenet_v2", "resnet18_half", "bert_tiny_seq16", "lstm_classifier", "light_squeezenet"]
SCENARIOS = ["second", "first", "readonly"]
ORT_SCRIPT = '''import sys
import numpy as np
import onnxruntime as ort
model, inputs, out = sys.argv[1:4]
options = ort.SessionOptions()
options.intra_op_num_threads = 1
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
with np.load(inputs) as data:
    feeds = {i.name: data[i.name] for i in session.get_inputs()}
outputs = session.run(None, feeds)
np.savez(out, **{o.name: v for o, v in zip(session.get_outputs(), outputs)})
'''


def _parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated model names")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per scenario (each runs both commands once)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated, of {SCENARIOS}")
    parser.add_argument("--fast-paths", action="store_true", help="also time `run --fast-paths`")
    parser.add_argument("--convert", action="store_true", help="also time convert against onnxruntime's converter")
    parser.add_argument("--no-run", action="store_true", help="skip the plain `run` comparison")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"model cache (default {DEFAULT_CACHE})")
    parser.add_argument("--json", type=Path, help="write the results to this file")
    return parser.parse_args(argv)


def cli_command() -> list[str]:
    """The installed console script, else cli.py of this checkout run by this interpreter."""
    script = Path(sys.executable).with_name("nnrt-onnx")
    return [str(script)] if script.exists() else [sys.executable, str(ROOT / "cli.py")]


def timed(command: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh process; exits non-zero with its stderr when it fails."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    error = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if process.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{error[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def base_environment() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "NNRT_ONNX_CACHE_DIR", "XDG_CACHE_HOME", "NNRT_ONNX_NUMBA")}
    return env


def compare_pair(name: str, scenario: str, label: str, ours: list[str], theirs: list[str], rounds: int,
                 work: Path) -> dict:
    """Alternating rounds of ``ours`` and ``theirs`` in ``scenario``; the medians and per-round ratios."""
    env = base_environment()
    blocker = work / "read-only"
    blocker.write_text("a file where the cache directory would be: it cannot be created")
    xdg = work / f"xdg-{label}-{scenario}"
    if scenario == "second":
        env["NNRT_ONNX_CACHE_DIR"] = str(work / f"cache-{label}")
        timed(ours, env)  # the first command after install fills the cache
    elif scenario == "readonly":
        env["NNRT_ONNX_CACHE_DIR"] = str(blocker / "cache")
        env["XDG_CACHE_HOME"] = str(xdg)
        shutil.rmtree(xdg, ignore_errors=True)
    rows = []
    for round_ in range(rounds):
        if scenario == "first":
            env["NNRT_ONNX_CACHE_DIR"] = tempfile.mkdtemp(prefix="first-", dir=work)
        if round_ % 2:
            theirs_time, ours_time = timed(theirs, env), timed(ours, env)
        else:
            ours_time, theirs_time = timed(ours, env), timed(theirs, env)
        rows.append((ours_time, theirs_time))
    walls = [o[0] / t[0] for o, t in rows]
    cpus = [o[1] / t[1] for o, t in rows]
    result = {"model": name, "command": label, "scenario": scenario, "rounds": rounds,
              "ours_wall_s": statistics.median(o[0] for o, _ in rows),
              "theirs_wall_s": statistics.median(t[0] for _, t in rows),
              "ours_cpu_s": statistics.median(o[1] for o, _ in rows),
              "theirs_cpu_s": statistics.median(t[1] for _, t in rows),
              "ratio_wall": statistics.median(walls), "ratio_wall_min": min(walls), "ratio_wall_max": max(walls),
              "ratio_cpu": statistics.median(cpus), "first_round_wall_s": rows[0][0][0],
              "times": rows}
    print(f"  {name:<18} {label:<16} {scenario:<9} nnrt {result['ours_wall_s']:6.2f} s  ort "
          f"{result['theirs_wall_s']:6.2f} s  ratio {result['ratio_wall']:5.2f} ({min(walls):.2f}-{max(walls):.2f})"
          f"  cpu ratio {result['ratio_cpu']:5.2f}  round 1: {rows[0][0][0]:.2f} s", flush=True)
    return result


def prepare(name: str, cache: Path, work: Path) -> dict:
    """The model's .onnx, its .nnrt (converted by the CLI, as a user would), its inputs and the outputs compared."""
    import numpy as np

    onnx_path = model_path(name, cache)
    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    nnrt = folder / f"{name}.nnrt"
    inputs = folder / "inputs.npz"
    env = base_environment()
    env["NNRT_ONNX_CACHE_DIR"] = str(work / "cache-prepare")
    subprocess.run([*cli_command(), "convert", str(onnx_path), "-o", str(nnrt)], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    np.savez(inputs, **onnx_inputs(onnx_path))
    ort_script = work / "ort_once.py"
    ort_script.write_text(ORT_SCRIPT)
    paths = {"onnx": onnx_path, "nnrt": nnrt, "inputs": inputs, "ort_script": ort_script,
             "ours_out": folder / "nnrt_out.npz", "theirs_out": folder / "ort_out.npz"}
    timed(run_command(paths), env)
    timed(ort_command(paths), env)
    with np.load(paths["ours_out"]) as ours, np.load(paths["theirs_out"]) as theirs:
        differences = {key: float(np.max(np.abs(ours[key].reshape(theirs[key].shape).astype(np.float64)
                                                 - theirs[key]))) for key in theirs.files if key in ours.files}
    paths["max_abs_difference"] = differences
    return paths


def run_command(paths: dict, fast: bool = False) -> list[str]:
    return [*cli_command(), "run", str(paths["nnrt"]), "--input", str(paths["inputs"]), "--output-npz",
            str(paths["ours_out"]), *(["--fast-paths"] if fast else [])]


def ort_command(paths: dict) -> list[str]:
    return [sys.executable, str(paths["ort_script"]), str(paths["onnx"]), str(paths["inputs"]),
            str(paths["theirs_out"])]


def machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    return f"{cpu}, {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in load)}"


def main(argv=None) -> None:
    args = _parse(argv)
    names = [n for n in args.models.split(",") if n]
    scenarios = [s for s in args.scenarios.split(",") if s]
    print(f"machine: {machine()}; {sys.executable}; nnrt-onnx: {' '.join(cli_command())}", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_startup-") as tmp:
        work = Path(tmp)
        for name in names:
            paths = prepare(name, args.cache, work)
            print(f"{name}: outputs max |nnrt - ort| {paths['max_abs_difference']}", flush=True)
            variants = [] if args.no_run else [("run", run_command(paths))]
            if args.fast_paths:
                variants.append(("run --fast-paths", run_command(paths, fast=True)))
            for label, ours in variants:
                for scenario in scenarios:
                    results.append(compare_pair(name, scenario, label, ours, ort_command(paths), args.rounds, work))
            if args.convert:
                out_dir = work / name / "ort_converted"
                ours = [*cli_command(), "convert", str(paths["onnx"]), "-o", str(work / name / "converted.nnrt")]
                theirs = [sys.executable, "-m", "onnxruntime.tools.convert_onnx_models_to_ort", str(paths["onnx"]),
                          "--output_dir", str(out_dir)]
                results.append(compare_pair(name, "second", "convert", ours, theirs, args.rounds, work))
    print(f"machine after: {machine()}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
