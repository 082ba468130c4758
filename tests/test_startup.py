"""What a fresh process loads (docs/performance.md, "Start-up"): ``import nnrt_onnx`` and ``nnrt-onnx --help`` need
no numpy; ``run`` of an .nnrt file imports neither onnx (its protobuf and ml_dtypes: over a second) nor numba (the
reference plan: nothing to compile or load) unless --fast-paths asks for the compiled kernels; the devices register
on the registry's first use. Each check runs in a new interpreter (this one has imported everything)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
TINY_NNRT = ROOT / "models" / "tiny_cnn.nnrt"

# the installed CLI, or cli.py of the checkout (an editable install ships no nnrt_onnx/cli.py)
_CLI = f"""
import importlib.util, sys
try:
    from nnrt_onnx.cli import main
except ImportError:
    spec = importlib.util.spec_from_file_location("nnrt_onnx_cli", {str(ROOT / "cli.py")!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    main = module.main
"""


def _modules_after(code: str) -> dict:
    """Run ``code`` in a new interpreter; the top-level packages it imported (and what it printed)."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    *printed, modules = done.stdout.strip().splitlines()
    return {"modules": set(json.loads(modules)), "printed": printed}


def _cli(*args: str) -> str:
    return _CLI + f"""
try:
    main({list(args)!r})
except SystemExit as exit:
    assert not exit.code, exit.code
"""


def test_importing_the_package_loads_no_numpy_and_the_devices_on_first_use():
    seen = _modules_after("import nnrt_onnx\nimport sys\nassert 'numpy' not in sys.modules\n"
                          "print(nnrt_onnx.all_device_ids(), nnrt_onnx.get_device(2).name)")
    assert seen["printed"] == ["[1, 2] onnxruntime.cpu"]
    assert "onnxruntime" not in seen["modules"] and "onnx" not in seen["modules"]


def test_help_needs_no_numpy():
    seen = _modules_after(_cli("--help"))
    assert "Usage:" in "\n".join(seen["printed"])
    assert not {"numpy", "onnx", "onnxruntime", "numba"} & seen["modules"]


def test_run_of_an_nnrt_file_imports_neither_onnx_nor_numba(tmp_path):
    out = tmp_path / "out.npz"
    seen = _modules_after(_cli("run", str(TINY_NNRT), "--json", "--output-npz", str(out)))
    assert not {"onnx", "onnxruntime", "numba", "llvmlite"} & seen["modules"]
    assert json.loads("\n".join(seen["printed"]))["fast_paths"] is False
    assert np.load(out).files


def test_run_with_fast_paths_uses_the_compiled_kernels(tmp_path):
    from nnrt_onnx.accel import numba_loops

    if not numba_loops.enabled():
        pytest.skip("numba is off or not installed")
    reference, fast = tmp_path / "reference.npz", tmp_path / "fast.npz"
    _modules_after(_cli("run", str(TINY_NNRT), "--output-npz", str(reference)))
    seen = _modules_after(_cli("run", str(TINY_NNRT), "--fast-paths", "--json", "--output-npz", str(fast)))
    assert "numba" in seen["modules"]
    assert json.loads("\n".join(seen["printed"]))["fast_paths"] is True
    with np.load(reference) as a, np.load(fast) as b:  # the two plans: the same values to float32 rounding
        assert a.files == b.files and all(np.allclose(a[k], b[k], rtol=1e-5, atol=1e-6) for k in a.files)


def test_a_sweeps_own_process_imports_neither_numpy_nor_onnx():
    """The workers (forked from the fork server) check the models; the sweep's process only orders them, which its
    fork server estimates, and reports: its fork server starts at once, not after numpy's import (docs/sweeps.md)."""
    models = [str(ROOT / "models" / "small_cnn.onnx"), str(ROOT / "models" / "tiny_mlp.onnx")]
    seen = _modules_after(_cli("check", *models, "-j", "1", "--json"))
    assert json.loads("\n".join(seen["printed"]))["ok"] is True
    assert not {"numpy", "onnx", "onnxruntime", "numba"} & seen["modules"]


def test_convert_builds_without_the_compiled_kernels(tmp_path):
    seen = _modules_after(_cli("convert", str(ROOT / "models" / "small_cnn.onnx"), "-o", str(tmp_path / "m.nnrt")))
    assert "numba" not in seen["modules"] and (tmp_path / "m.nnrt").is_file()
