"""The real-world corpus of tools/make_realworld_models.py: every model passes ``nnrt-onnx check MODEL --input
NAME=FILE ...`` (the If/Loop ones with ``--constant-input``), never with ``--input-shape``: exit 0 means converted,
run natively and equal to onnxruntime within the default tolerances.

The torch exports are committed in tests/data/realworld/ (written by tools/realworld/torch_exports.py: torch is
not a test dependency); the onnx.helper graphs (tools/realworld/helper_graphs.py) are built here.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import onnx
import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "realworld"
MANIFEST = json.loads((DATA / "manifest.json").read_text())


def _script():
    spec = importlib.util.spec_from_file_location("make_realworld_models", ROOT / "tools" / "make_realworld_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # (puts tools/ on sys.path: the realworld package)
    return module


SCRIPT = _script()
HELPER_MODELS = {entry.name: entry for entry in importlib.import_module("realworld.helper_graphs").models()}


def _check(invoke, arguments) -> tuple[int, str]:
    result = invoke("check", *arguments)
    return result.exit_code, result.stdout + result.stderr


def _arguments(directory: Path, name: str, entry: dict) -> list[str]:
    arguments = [str(directory / entry["model"])]
    arguments += [a for i, f in entry["inputs"].items() for a in ("--input", f"{i}={directory / f}")]
    arguments += [a for i, f in entry["constants"].items() for a in ("--constant-input", f"{i}={directory / f}")]
    return arguments


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_committed_export_passes_check(invoke, name):
    entry = MANIFEST[name]
    code, output = _check(invoke, _arguments(DATA, name, entry))
    assert code == 0 and "OK: all" in output, output


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_committed_exports_have_dynamic_axes_the_data_pins(name):
    model = onnx.load(str(DATA / MANIFEST[name]["model"]))
    dims = [d for i in model.graph.input for d in i.type.tensor_type.shape.dim]
    assert any(d.dim_param for d in dims), "exported without dynamic axes"
    assert "--input-shape" not in MANIFEST[name]["check"]


@pytest.mark.parametrize("name", sorted(HELPER_MODELS))
def test_helper_graph_passes_check(invoke, tmp_path, name):
    entry = SCRIPT.write(tmp_path, "helper_graphs", HELPER_MODELS[name])
    code, output = _check(invoke, _arguments(tmp_path, name, entry))
    assert code == 0 and "OK: all" in output, output


@pytest.mark.parametrize("name,hint", [("if_sample_rate", "bind input 'sr' with --constant-input sr="),
                                       ("loop_refine", "bind input 'steps' with --constant-input steps=")])
def test_control_flow_without_its_binding_says_what_to_bind(invoke, tmp_path, name, hint):
    entry = SCRIPT.write(tmp_path, "helper_graphs", HELPER_MODELS[name])
    entry["constants"] = {}
    code, output = _check(invoke, _arguments(tmp_path, name, entry))
    assert code == 1 and hint in output and "Traceback" not in output, output


def test_the_corpus_script_discovers_its_groups_and_writes_a_manifest(tmp_path):
    assert {"helper_graphs", "torch_exports"} <= set(SCRIPT.groups())
    found, skipped = SCRIPT.collect("helper_graphs")
    assert {e.name for _, e in found} == set(HELPER_MODELS)
    assert SCRIPT.main([str(tmp_path), "--only", "scan_rnn"]) == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["scan_rnn"]["check"] == "nnrt-onnx check scan_rnn.onnx --input s0=scan_rnn.s0.npy --input x=scan_rnn.x.npy"
    assert np.load(tmp_path / "scan_rnn.x.npy").shape == (5, 2, 4)
