"""Conversion speed and memory on light_resnet50 (shipped inside the onnx package).

Each measurement runs in a fresh subprocess so peak RSS belongs to that step alone:
  onnx.load            — the baseline: just parsing the file
  import (from_onnx)   — ONNX -> NNRt (load, shape inference, conversion, layout pass, emit)
  export (to_onnx)     — the converted NNRt model -> ONNX (after importing it, timed separately)

    python bench/bench_convert.py [--model light_resnet50] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STEP = r"""
import json, os, resource, sys, time
sys.path.insert(0, {root!r})
import onnx
path = {path!r}
step = {step!r}
if step == "onnx.load":
    t = time.perf_counter(); onnx.load(path); seconds = time.perf_counter() - t
elif step == "import":
    from nnrt_onnx.onnx_import import from_onnx
    t = time.perf_counter(); from_onnx(path); seconds = time.perf_counter() - t
else:
    from nnrt_onnx.onnx_import import from_onnx
    from nnrt_onnx.onnx_export import to_onnx
    model = from_onnx(path).model
    t = time.perf_counter(); to_onnx(model); seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": seconds, "peak_mib": peak}}))
"""


def measure(step: str, path: str) -> dict:
    code = STEP.format(root=str(ROOT), path=path, step=step)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    import onnx

    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="light_resnet50")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", args.model + ".onnx")
    print(f"{args.model}: {os.path.getsize(path) / 2**20:.1f} MiB on disk")
    results = {}
    for step in ("onnx.load", "import", "export"):
        runs = [measure(step, path) for _ in range(args.repeat)]
        best = min(r["seconds"] for r in runs)
        peak = max(r["peak_mib"] for r in runs)
        results[step] = {"seconds": best, "peak_mib": peak}
        print(f"  {step:<10} {best * 1e3:8.1f} ms (best of {args.repeat})   peak RSS {peak:7.1f} MiB")
    print(f"  import / onnx.load = {results['import']['seconds'] / results['onnx.load']['seconds']:.1f}x time, "
          f"export / import = {results['export']['seconds'] / results['import']['seconds']:.2f}x time")


if __name__ == "__main__":
    main()
