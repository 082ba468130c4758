#!/usr/bin/env python3
"""Whole models: the native executor against single-threaded onnxruntime, in one process, interleaved.

    python bench/bench_models.py [--models a,b] [--modes quiet,busy] [--rounds 15] [--json FILE]
    python bench/bench_models.py --convert [--models ...]          # conversion time and peak RSS vs onnx.load

Models (see bench/README.md): the torch-exported ones of bench/gen_models.py (generated into the cache directory
with a torch environment first; left out of the default set where they are missing), the onnx zoo "light" nets
shipped inside the onnx package, whose weights (ConstantOfShape fills there) are replaced by seeded random
initializers and written to the cache directory once, and the small and recurrent models of bench/small_models.py
(onnx.helper graphs, built into the cache directory on first use).

Timing: each model is converted once (``from_onnx``), compiled once for the native device with the executor's
default thread policy, and its original .onnx opened once in onnxruntime (``intra_op_num_threads=1``,
``inter_op_num_threads=1``, sequential, default graph optimisations). Outputs are compared first (a model whose
outputs differ is reported, not timed). Then ``--rounds`` rounds: in each, ``k`` native runs and ``k`` onnxruntime
runs back to back (which side goes first alternates; ``k`` makes a side take >= 20 ms), giving one ratio
native/onnxruntime per round; the table shows median ms per run of each side and the **median of the per-round
ratios** (p10-p90 of the ratios beside it). Mode ``busy`` does the same while a busy-loop process
(``while True: pass``) holds one core; ``busy/quiet`` is the native time busy over the native time quiet.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = Path(os.environ.get("NNRT_BENCH_CACHE", Path.home() / ".cache" / "nnrt_onnx_bench"))
TORCH = ["mobilenet_v2", "resnet18_half", "unet_small", "bert_tiny", "lstm_classifier"]
LIGHT = ["light_resnet50", "light_vgg19", "light_zfnet512", "light_bvlc_alexnet", "light_squeezenet",
         "light_shufflenet", "light_inception_v1", "light_inception_v2", "light_densenet121"]
# the small and recurrent models of issue 27 (bench/small_models.py: onnx.helper, no torch; built on first use)
SMALL = ["bert_tiny16", "lstm_small", "chain50", "gru_tagger", "leaky_convnet"]
CNN = set(LIGHT) | {"mobilenet_v2", "resnet18_half", "unet_small", "leaky_convnet"}


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="", help="comma-separated model names (default: all)")
    p.add_argument("--modes", default="quiet,busy", help="quiet, busy or both (default quiet,busy)")
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds per model and mode (default 15)")
    p.add_argument("--budget", type=float, default=20.0, help="max seconds of rounds per model and mode")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"model cache (default {DEFAULT_CACHE})")
    p.add_argument("--impl", type=Path, default=ROOT, help="checkout whose nnrt_onnx is measured (default this one)")
    p.add_argument("--convert", action="store_true", help="measure conversion time and peak RSS instead")
    p.add_argument("--repeat", type=int, default=3, help="--convert: subprocess runs per step (best time)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    return p.parse_args(argv)


# ----------------------------------------------------------------------------------------------------------------
# models


def light_path(name: str, cache: Path) -> Path:
    """The light net with seeded random weights (He-scaled conv/gemm weights, BatchNorm statistics near 1/0),
    written to the cache once."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    out = cache / f"{name}_random.onnx"
    if out.exists():
        return out
    source = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"{name}.onnx"
    model = onnx.load(str(source))
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    uses = {}
    for node in graph.node:
        for position, name_in in enumerate(node.input):
            uses.setdefault(name_in, []).append((node.op_type, position))
    rng = np.random.default_rng(20240601)
    keep_nodes, new_inits, dropped = [], [], set()
    for node in graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            keep_nodes.append(node)
            continue
        shape = [int(d) for d in numpy_helper.to_array(inits[node.input[0]])]
        role = (uses.get(node.output[0]) or [("", 0)])[0]
        if role[0] == "BatchNormalization" and role[1] in (1, 4):  # scale, variance
            value = rng.uniform(0.5, 1.5, shape)
        elif len(shape) >= 2:
            value = rng.standard_normal(shape) * math.sqrt(2.0 / max(1, math.prod(shape[1:])))
        else:
            value = rng.standard_normal(shape) * 0.1
        new_inits.append(numpy_helper.from_array(value.astype(np.float32), node.output[0]))
        dropped.add(node.input[0])
    del graph.node[:]
    graph.node.extend(keep_nodes)
    used = {i for n in keep_nodes for i in n.input}
    remaining = [t for t in graph.initializer if t.name not in dropped or t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(remaining + new_inits)
    # IR 3 lists every initializer as a graph input too: the dropped shape tensors go, the new weights come in
    names = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in names and i.name not in dropped]
    del graph.input[:]
    graph.input.extend(inputs)
    model.ir_version = max(model.ir_version, 4)
    cache.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out))
    return out


def model_path(name: str, cache: Path) -> Path:
    if name in LIGHT:
        return light_path(name, cache)
    if name in SMALL:
        path = cache / f"{name}.onnx"
        if not path.exists():
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import small_models

            cache.mkdir(parents=True, exist_ok=True)
            small_models.build(name, path)
        return path
    path = cache / f"{name}.onnx"
    if not path.exists():
        raise SystemExit(f"{path} is missing: generate it with a torch environment, "
                         f"python bench/gen_models.py --out {cache}")
    return path


def onnx_inputs(path: Path, seed: int = 0) -> dict:
    """Seeded inputs by ONNX input name: floats standard normal, integers (token ids) in [0, 100)."""
    import numpy as np
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for info in model.graph.input:
        if info.name in inits:
            continue
        tt = info.type.tensor_type
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim]
        if dtype.kind == "f":
            feeds[info.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[info.name] = rng.integers(0, 100, shape).astype(dtype)
    return feeds


# ----------------------------------------------------------------------------------------------------------------
# timing


def _busy_process():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def time_model(name, path, rounds, budget):
    import numpy as np
    import onnxruntime as ort

    from nnrt_onnx.compilation import Compilation
    from nnrt_onnx.executor import Executor
    from nnrt_onnx.onnx_import import from_onnx

    feeds = onnx_inputs(path)
    model = from_onnx(str(path)).model
    compilation = Compilation(model)
    compilation.build()
    executor = Executor(compilation)
    names = [model.tensors[i].name for i in model.inputs]
    arrays = [feeds[n] for n in names]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def native():
        return executor.run_arrays(arrays)

    def reference():
        return session.run(None, feeds)

    got, want = native(), reference()
    worst = 0.0
    for g, w in zip(got, want):
        w = np.asarray(w)
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        err = float(np.max(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
        worst = max(worst, err / (1e-4 + 1e-3 * scale))
    if worst > 1:
        return {"error": f"outputs differ (max err / tol {worst:.2f})"}
    for _ in range(2):
        native(), reference()
    t0 = time.perf_counter()
    native()
    t_native = time.perf_counter() - t0
    k = max(1, int(0.02 / max(t_native, 1e-6)))
    ratios, n_times, o_times = [], [], []
    started = time.perf_counter()
    for r in range(rounds):
        sides = [(native, n_times), (reference, o_times)]
        if r % 2:
            sides.reverse()
        per = {}
        for fn, store in sides:
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            per[fn] = (time.perf_counter() - t0) / k
            store.append(per[fn])
        ratios.append(per[native] / per[reference])
        if time.perf_counter() - started > budget and r >= 4:
            break
    ratios.sort()
    return {"native_ms": statistics.median(n_times) * 1e3, "ort_ms": statistics.median(o_times) * 1e3,
            "ratio": statistics.median(ratios), "ratio_p10": ratios[len(ratios) // 10],
            "ratio_p90": ratios[(len(ratios) * 9) // 10], "rounds": len(ratios), "runs_per_round": k,
            "check": worst}


# ----------------------------------------------------------------------------------------------------------------
# conversion

STEP = r"""
import json, sys, time
sys.path.insert(0, {impl!r})
import numpy, onnx
import nnrt_onnx.onnx_import


def high_water_mib():  # this process's peak RSS (VmHWM: unlike ru_maxrss, not inherited across exec)
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024


startup = 0.0
if {step!r} != "onnx.load":
    # one-time process start-up, timed apart: the op table (TOML) and every converter module
    import importlib, pkgutil
    import nnrt_onnx.onnx_import.handlers as handlers
    from nnrt_onnx.ir.rows import onnx_rows
    t = time.perf_counter()
    onnx_rows()
    for module in pkgutil.iter_modules(handlers.__path__):
        importlib.import_module(f"nnrt_onnx.onnx_import.handlers.{{module.name}}")
    startup = time.perf_counter() - t
base = high_water_mib()
t = time.perf_counter()
if {step!r} == "onnx.load":
    onnx.load({path!r})
else:
    nnrt_onnx.onnx_import.from_onnx({path!r})
seconds = time.perf_counter() - t
print(json.dumps({{"seconds": seconds, "peak_mib": high_water_mib(), "base_mib": base, "startup": startup}}))
"""


def measure_convert(path: Path, impl: Path, repeat: int) -> dict:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    weight_mib = sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer) / 2**20
    del model
    result = {"weights_mib": weight_mib}
    for step in ("onnx.load", "from_onnx"):
        runs = []
        for _ in range(repeat):
            out = subprocess.run([sys.executable, "-c", STEP.format(impl=str(impl), path=str(path), step=step)],
                                 capture_output=True, text=True)
            if out.returncode:
                result["error"] = out.stderr.strip().splitlines()[-1]
                return result
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        result[step] = {"seconds": min(r["seconds"] for r in runs), "peak_mib": min(r["peak_mib"] for r in runs),
                        "base_mib": min(r["base_mib"] for r in runs), "startup": min(r["startup"] for r in runs)}
    return result


def _geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main(argv=None):
    args = _parse(argv)
    sys.path.insert(0, str(args.impl))
    names = [n for n in args.models.split(",") if n] or TORCH + LIGHT + SMALL
    if not args.models:  # the torch-exported models only where they were generated
        names = [n for n in names if n not in TORCH or (args.cache / f"{n}.onnx").exists()]
    paths = {n: model_path(n, args.cache) for n in names}
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; nnrt_onnx from {args.impl}")
    results = {"load_average": load, "models": {}}
    if args.convert:
        header = f"{'model':20} {'weights MiB':>11} {'onnx.load s':>11} {'convert s':>10} {'x load':>7} " \
                 f"{'peak MiB':>9} {'(load)':>8} {'peak-base / weights':>20} {'(load)':>7}"
        print(header)
        print("-" * len(header))
        for name in names:
            r = measure_convert(paths[name], args.impl, args.repeat)
            results["models"][name] = r
            if "error" in r:
                print(f"{name:20} error: {r['error']}")
                continue
            lo, cv = r["onnx.load"], r["from_onnx"]
            grow = (cv["peak_mib"] - cv["base_mib"]) / max(r["weights_mib"], 1e-9)
            load_grow = (lo["peak_mib"] - lo["base_mib"]) / max(r["weights_mib"], 1e-9)
            print(f"{name:20} {r['weights_mib']:11.1f} {lo['seconds']:11.3f} {cv['seconds']:10.3f} "
                  f"{cv['seconds'] / lo['seconds']:7.1f} {cv['peak_mib']:9.0f} {lo['peak_mib']:8.0f} {grow:20.2f} "
                  f"{load_grow:7.2f}", flush=True)
        startups = [r["from_onnx"]["startup"] for r in results["models"].values() if "from_onnx" in r]
        if startups:
            print(f"one-time start-up before the first conversion (op table, converter imports; not in convert s): "
                  f"{min(startups):.2f} s")
    else:
        modes = [m for m in args.modes.split(",") if m]
        header = f"{'model':20} {'mode':6} {'native ms':>10} {'ort-1 ms':>9} {'ratio':>6} {'p10-p90':>11} " \
                 f"{'busy/quiet':>10}"
        print(header)
        print("-" * len(header))
        for name in names:
            entry = results["models"].setdefault(name, {})
            for mode in modes:
                busy = _busy_process() if mode == "busy" else None
                try:
                    r = time_model(name, paths[name], args.rounds, args.budget)
                finally:
                    if busy is not None:
                        busy.kill()
                        busy.wait()
                entry[mode] = r
                if "error" in r:
                    print(f"{name:20} {mode:6} {r['error']}")
                    continue
                rel = ""
                if mode == "busy" and "native_ms" in entry.get("quiet", {}):
                    rel = f"{r['native_ms'] / entry['quiet']['native_ms']:10.2f}"
                print(f"{name:20} {mode:6} {r['native_ms']:10.2f} {r['ort_ms']:9.2f} {r['ratio']:6.2f} "
                      f"{r['ratio_p10']:5.2f}-{r['ratio_p90']:<5.2f} {rel}", flush=True)
        for mode in modes:
            ratios = [results["models"][n][mode].get("ratio") for n in names]
            print(f"geometric mean of ratios ({mode}): {_geomean(ratios):.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
