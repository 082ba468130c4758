"""Build the corpus of real-world model patterns: python tools/make_realworld_models.py OUT_DIR [--only TEXT] [--list]

Run it with a Python that has what the groups need (torch, onnxscript for the exporters: /work/venv-gen/bin/python
here); groups whose packages are missing are skipped with a note.

Plugin interface (one module per group, discovered automatically): every module ``tools/realworld/<group>.py`` whose
name does not start with ``_`` defines

    def models() -> list[CorpusModel]      # or dicts with the same keys

where ``CorpusModel`` (tools/realworld/__init__.py) holds

    name       str                          unique across the corpus: the file is OUT_DIR/<name>.onnx
    build      () -> onnx.ModelProto        makes the model
    inputs     dict[str, np.ndarray]        example runtime inputs, given with --input NAME=FILE (they pin dims)
    constants  dict[str, np.ndarray] = {}   inputs to bind, given with --constant-input NAME=FILE
    note       str = ""                     one line on what the model shows

A module that needs a package which is not installed raises ModuleNotFoundError (at import or from models()): the
group is reported as skipped. Groups today: torch_exports (small CNN, U-Net, LSTM and transformer encoder through
both torch exporters, with dynamic axes), helper_graphs (paddle2onnx-, jax2tf-, YOLO-head-, fp16-, IR3- and
If/Loop/Scan-style graphs written with onnx.helper), contrib (onnxruntime quantization and transformers-optimizer
models).

Output: OUT_DIR/<name>.onnx, each input as OUT_DIR/<name>.<input>.npy, and OUT_DIR/manifest.json listing per model
its group, note, input and constant files and the ``nnrt-onnx check`` command that must pass (exit 0: converted,
run natively, equal to onnxruntime within the default tolerances).
"""
from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import realworld  # noqa: E402
from realworld import as_corpus_model  # noqa: E402


def groups() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(realworld.__path__) if not info.name.startswith("_"))


def collect(only: str = "") -> tuple[list[tuple[str, realworld.CorpusModel]], dict[str, str]]:
    """(group, model) for every model of every group; and the skipped groups with the reason."""
    found, skipped = [], {}
    for group in groups():
        try:
            module = importlib.import_module(f"realworld.{group}")
            entries = [as_corpus_model(e) for e in module.models()]
        except ModuleNotFoundError as exc:
            skipped[group] = f"needs {exc.name}"
            continue
        found += [(group, e) for e in entries if only in e.name or only == group]
    names = [e.name for _, e in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SystemExit(f"corpus model names must be unique: {duplicates}")
    return found, skipped


def check_command(name: str, entry: realworld.CorpusModel) -> str:
    parts = [f"nnrt-onnx check {name}.onnx"]
    parts += [f"--input {i}={name}.{i}.npy" for i in entry.inputs]
    parts += [f"--constant-input {c}={name}.{c}.npy" for c in entry.constants]
    return " ".join(parts)


def write(out: Path, group: str, entry: realworld.CorpusModel) -> dict:
    model = entry.build()
    onnx.checker.check_model(model)
    onnx.save(model, str(out / f"{entry.name}.onnx"))
    files = {}
    for kind, arrays in (("inputs", entry.inputs), ("constants", entry.constants)):
        files[kind] = {}
        for input_name, array in arrays.items():
            path = out / f"{entry.name}.{input_name}.npy"
            np.save(path, np.asarray(array))
            files[kind][input_name] = path.name
    return {"group": group, "model": f"{entry.name}.onnx", "note": entry.note, **files,
            "check": check_command(entry.name, entry)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--only", default="", help="Models whose name contains TEXT (or the group named TEXT).")
    parser.add_argument("--list", action="store_true", help="List the models, write nothing.")
    args = parser.parse_args(argv)
    found, skipped = collect(args.only)
    for group, reason in skipped.items():
        print(f"skipped group {group}: {reason}", file=sys.stderr)
    if args.list:
        for group, entry in found:
            print(f"{group:<16} {entry.name:<36} {entry.note}")
        return 0
    args.out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if args.only and manifest_path.exists() else {}
    for group, entry in found:
        manifest[entry.name] = write(args.out_dir, group, entry)
        size = (args.out_dir / f"{entry.name}.onnx").stat().st_size
        print(f"wrote {entry.name}.onnx ({size / 1024:.1f} KiB) [{group}]")
    manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
