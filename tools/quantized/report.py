"""Measure the quantized corpus (tools/quantized/make_corpus.py) and print the table of docs/quantization.md.

For every ``<net>_<variant>.onnx`` in the corpus directory (project virtualenv, no torch)::

    python tools/quantized/report.py CORPUS_DIR [--json OUT.json]

* converts it (``from_onnx``), counting NNRt operations (and the float twin's), transposes and, from the conversion
  summary, the compute ops that read quantized tensors (the quantized share) and the float fallbacks;
* compares the transposes with the float twin ``<net>_float`` (the layout pass must treat Q/DQ like the float ops);
* runs it natively on the corpus input and compares with ``onnx.reference`` (CPU-independent; onnxruntime's u8s8
  integer kernels are not an oracle, docs/testing.md): outputs written by a DequantizeLinear in quantization steps
  of that output, other float outputs by cosine and top-1;
* round trip: exports the NNRt model (QDQ ONNX), runs the export on onnxruntime's CPU provider against the native
  outputs (in steps), re-imports it and compares the operation list and every tensor's quant params with the first
  conversion.

The exit status is 1 when a static model misses a goal (quantized share < 90 %, transposes differ from the float
twin, more than one step off, round trip differs), so the script can gate a corpus run.
"""
from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

import numpy as np
import onnx

GOAL_SHARE = 0.9
GOAL_STEPS = 1.0
GOAL_COSINE = 0.999


def _signature(model) -> list[tuple]:
    """The operations with the dtype and quant params (rounded) of every tensor they read and write: two models with
    one signature are the same quantized NNRt model up to tensor names and constant data."""
    def tensor(index):
        t = model.tensors[index]
        q = t.quant
        quant = None if q is None else (tuple(round(s, 9) for s in q.scales), tuple(q.zero_points), tuple(q.num_bits))
        return (int(t.dtype), quant)
    return [(int(op.op), tuple(tensor(i) for i in op.inputs), tuple(tensor(i) for i in op.outputs))
            for op in model.operations]


def _run_native(model, arrays):
    from nnrt_onnx.workflows.inference import run_model

    return run_model(model, arrays).outputs


def _compare(actual: np.ndarray, reference: np.ndarray, step: float | None) -> dict:
    a, r = np.asarray(actual, np.float64), np.asarray(reference, np.float64)
    result = {}
    if step is not None:
        result["steps"] = float(np.abs(a - r).max() / step) if a.size else 0.0
    denominator = np.linalg.norm(a) * np.linalg.norm(r)
    result["cosine"] = float(a.ravel() @ r.ravel() / denominator) if denominator else float(np.array_equal(a, r))
    axis = 1 if a.ndim == 4 else -1  # classes: the last axis, or the channels of a segmentation map (NCHW)
    if a.ndim >= 1 and a.shape[axis] > 1:
        result["top1"] = bool(np.array_equal(a.argmax(axis), r.argmax(axis)))
    return result


def measure(path: Path, float_transposes: int | None) -> dict:
    from nnrt_onnx import from_onnx, to_onnx
    from nnrt_onnx.workflows.quant_compare import quantized_outputs, reference_evaluator

    onnx_model = onnx.load(str(path))
    feed_file = path.with_suffix(".npz")
    x = np.load(feed_file)["x"]
    row: dict = {"model": path.stem}
    result = from_onnx(onnx_model)
    summary = result.stats.get("quantization", {})
    row.update(ops=result.stats["operations"], transposes=result.stats["transposes"],
               compute_ops=summary.get("compute_ops"), quantized_ops=summary.get("quantized_ops"),
               fallbacks=summary.get("float_fallbacks", {}), dynamic=summary.get("dynamic"),
               float_transposes=float_transposes)
    if summary.get("compute_ops"):
        row["share"] = summary["quantized_ops"] / summary["compute_ops"]
    native = _run_native(result.model, [x])
    reference = reference_evaluator(onnx_model).run(None, {onnx_model.graph.input[0].name: x})
    steps = quantized_outputs(onnx_model)
    outputs = [o.name for o in onnx_model.graph.output]
    row["outputs"] = {name: _compare(a, r, steps.get(name)) for name, a, r in zip(outputs, native, reference)}
    # round trip: export, onnxruntime runs the export, re-import gives the same quantized model
    try:
        exported = to_onnx(result.model, check=True)
        import onnxruntime as ort

        session = ort.InferenceSession(exported.SerializeToString(), providers=["CPUExecutionProvider"])
        ort_out = session.run(None, {session.get_inputs()[0].name: x})
        row["export_vs_native"] = {name: _compare(o, a, steps.get(name)) for name, o, a in zip(outputs, ort_out, native)}
        again = from_onnx(exported)
        row["roundtrip_same"] = _signature(again.model) == _signature(result.model)
        if not row["roundtrip_same"]:
            row["roundtrip_ops"] = (len(result.model.operations), len(again.model.operations))
    except Exception as exc:  # reported per model: the table says which step failed
        row["roundtrip_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    return row


def _fmt_outputs(row: dict) -> str:
    worst_steps = [o["steps"] for o in row["outputs"].values() if "steps" in o]
    if worst_steps:
        return f"{max(worst_steps):.2f}"
    cos = min(o["cosine"] for o in row["outputs"].values())
    top1 = all(o.get("top1", True) for o in row["outputs"].values())
    return f"cos {cos:.5f}{'' if top1 else ' (top-1 differs)'}"


def _fmt_roundtrip(row: dict) -> str:
    if "roundtrip_error" in row:
        return "fails: " + row["roundtrip_error"].replace("|", "/")
    parts = ["same" if row["roundtrip_same"] else f"differs {row.get('roundtrip_ops')}"]
    worst = [o.get("steps", None) for o in row["export_vs_native"].values()]
    if all(w is not None for w in worst):
        parts.append(f"ORT {max(worst):.2f} steps")
    else:
        parts.append(f"ORT cos {min(o['cosine'] for o in row['export_vs_native'].values()):.5f}")
    return ", ".join(parts)


def goals_met(row: dict) -> list[str]:
    """The goals a static (QDQ / QOperator) model misses."""
    missed = []
    if row.get("share", 0) < GOAL_SHARE:
        missed.append("share")
    if row["float_transposes"] is not None and row["transposes"] != row["float_transposes"]:
        missed.append("transposes")
    for o in row["outputs"].values():
        if ("steps" in o and o["steps"] > GOAL_STEPS) or ("steps" not in o and (o["cosine"] < GOAL_COSINE
                                                                                 or not o.get("top1", True))):
            missed.append("parity")
    if not row.get("roundtrip_same"):
        missed.append("roundtrip")
    return missed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", default="")
    args = parser.parse_args(argv)
    wanted = {n for n in args.only.split(",") if n}
    rows, failed = [], False
    paths = sorted(args.corpus.glob("*.onnx"))
    twins: dict[str, int] = {}
    twin_ops: dict[str, int] = {}
    for path in paths:
        if path.stem.endswith("_float"):
            from nnrt_onnx import from_onnx

            twin = from_onnx(str(path))
            twins[path.stem[:-len("_float")]] = twin.stats["transposes"]
            twin_ops[path.stem[:-len("_float")]] = len(twin.model.operations)
    print("| model | format | NNRt ops (float twin) | quantized share | transposes (float twin) | max steps off (or "
          "cosine) | float fallbacks | round trip |")
    print("|---|---|---|---|---|---|---|---|")
    for path in paths:
        if wanted and path.stem not in wanted and path.stem.split("_")[0] not in wanted:
            continue
        net, _, variant = path.stem.partition("_")
        try:
            row = measure(path, twins.get(net))
        except Exception:
            traceback.print_exc()
            print(f"| {net} | {variant} | conversion or run failed | | | | | |")
            failed = True
            continue
        rows.append(row)
        share = f"{row['share']:.0%} ({row['quantized_ops']}/{row['compute_ops']})" if "share" in row else "-"
        fallbacks = ", ".join(f"{k} {v}" for k, v in row["fallbacks"].items()) or "-"
        if row.get("dynamic"):
            fallbacks += f"; dynamic: {row['dynamic'].get('form')}"
        print(f"| {net} | {variant} | {row['ops']} ({twin_ops.get(net, '-')}) | {share} | "
              f"{row['transposes']} ({row['float_transposes']}) | "
              f"{_fmt_outputs(row)} | {fallbacks} | {_fmt_roundtrip(row)} |", flush=True)
        static = variant.startswith(("qdq", "qop", "torchqdq"))
        missed = goals_met(row) if static else []
        if missed:
            row["missed"] = missed
            failed = True
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
