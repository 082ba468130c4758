"""The compiled kernels' disk cache (nnrt_onnx/accel/numba_cache.py), observed from separate processes: what a first
process compiles, a second loads without compiling (numba's own ``numba:compile`` event and the dispatchers' cache
statistics say which); an unwritable place falls back to the per-user cache directory; processes compiling at once
all succeed and leave a cache a later process loads whole; the cache does not grow with use, and keeps only the
most recent keys. The workload is ``kernel_workload.py`` beside this file."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nnrt_onnx.accel import numba_loops

pytestmark = pytest.mark.skipif(not numba_loops.enabled(), reason="numba is off or not installed")

WORKLOAD = Path(__file__).with_name("kernel_workload.py")


def _environment(cache_dir, xdg=None, pythonpath=None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NNRT_ONNX_CACHE_DIR", "XDG_CACHE_HOME", "NUMBA_CACHE_DIR")}
    if cache_dir is not None:
        env["NNRT_ONNX_CACHE_DIR"] = str(cache_dir)
    if xdg is not None:
        env["XDG_CACHE_HOME"] = str(xdg)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def _run(workload: str, env: dict) -> dict:
    done = subprocess.run([sys.executable, str(WORKLOAD), workload], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != ".lock")


def test_a_second_process_loads_every_kernel_from_the_cache(tmp_path):
    env = _environment(tmp_path / "cache")
    first = _run("all", env)
    assert first["compiled"], "the first process found kernels in an empty cache"
    assert all(hits + misses > 0 for hits, misses in first["kernels"].values()), \
        f"kernels the workload never called: {[k for k, v in first['kernels'].items() if not sum(v)]}"
    files = _files(tmp_path / "cache")
    second = _run("all", env)
    assert second["compiled"] == [], f"compiled again instead of loading from the cache: {second['compiled']}"
    assert {k: misses for k, (hits, misses) in second["kernels"].items() if misses or not hits} == {}
    assert set(second["kernels"]) == set(first["kernels"])
    assert _files(tmp_path / "cache") == files, "a process that compiled nothing added files to the cache"


def test_a_preload_loads_what_the_cache_holds_and_compiles_only_kernels_declared_with_signatures(tmp_path):
    """accel.preload (what the sweep's fork server runs): after one process ran the small workload, a second one's
    preload has its kernels in memory before any call -- the calls then load and compile nothing -- and compiles
    nothing but the kernels whose signatures are declared (compiled when their module loads, cached or not)."""
    env = _environment(tmp_path / "cache")
    first = _run("small", env)
    used = {name for name, (hits, misses) in first["kernels"].items() if hits + misses}
    assert used, "the small workload called no kernel"
    second = _run("preload", env)
    assert {name for name in used if not second["preloaded"].get(name)} == set(), "a cached kernel was not loaded"
    assert set(second["preload_compiled"]) <= set(second["declared_with_signatures"])
    assert second["compiled"] == []
    assert {name: stats for name, stats in second["kernels"].items()
            if name in used and name not in second["declared_with_signatures"]} == \
        {name: [1, 0] for name in used if name not in second["declared_with_signatures"]}, \
        "the calls loaded again (or compiled) what the preload had loaded"


def test_every_avx512_kernel_module_is_preloaded():
    """avx512.MODULES is every module of nnrt_onnx/accel built on vector_ir (the AVX-512 IR): the ones the preload
    loads through avx512's gate."""
    import ast

    from nnrt_onnx.accel import avx512

    accel = Path(avx512.__file__).parent
    built_on_ir = set()
    for path in accel.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module == "vector_ir":
                built_on_ir.add(path.stem)
    assert built_on_ir and built_on_ir == set(avx512.MODULES)


def test_an_unwritable_cache_dir_falls_back_to_the_per_user_dir(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory would go: it cannot be created, even by root")
    env = _environment(blocker / "cache", xdg=tmp_path / "xdg")
    first = _run("small", env)
    assert Path(first["cache_dir"]).is_relative_to(tmp_path / "xdg" / "nnrt_onnx" / "kernels")
    assert first["compiled"]
    second = _run("small", env)
    assert second["compiled"] == [] and second["cache_dir"] == first["cache_dir"]


def test_a_read_only_install_caches_in_the_per_user_dir(tmp_path):
    """A copy of the package whose own cache place cannot be written (its accel/__pycache__ a file: root too is
    refused) and no NNRT_ONNX_CACHE_DIR: the per-user directory, and still the right results (the workload's
    oracles)."""
    import nnrt_onnx
    from nnrt_onnx.optable import mappings_dir

    package = Path(nnrt_onnx.__file__).parent
    copy = tmp_path / "site" / "nnrt_onnx"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if not (copy / "_mappings").is_dir():
        shutil.copytree(mappings_dir(), copy / "_mappings")
    (copy / "accel" / "__pycache__").write_text("read-only")
    env = _environment(None, xdg=tmp_path / "xdg", pythonpath=tmp_path / "site")
    first = _run("small", env)
    assert Path(first["cache_dir"]).is_relative_to(tmp_path / "xdg" / "nnrt_onnx" / "kernels")
    second = _run("small", env)
    assert second["compiled"] == []


def test_processes_compiling_at_once_all_succeed_and_leave_a_whole_cache(tmp_path):
    env = _environment(tmp_path / "cache")
    command = [sys.executable, str(WORKLOAD)]
    runs = [subprocess.Popen([*command, workload], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for workload in ("small", "float64", "small", "float64")]
    for run in runs:
        out, err = run.communicate(timeout=900)
        assert run.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1])["compiled"]
    for workload in ("small", "float64"):  # every signature of both kinds of run is there, under the right key
        after = _run(workload, env)
        assert after["compiled"] == [], f"{workload}: an entry lost or mixed up by the concurrent saves"


def test_the_cache_keeps_only_the_most_recent_keys(tmp_path):
    from nnrt_onnx.accel.numba_cache import KEEP_KEYS

    root = tmp_path / "cache" / "kernels"
    old = []
    for age in range(KEEP_KEYS + 2):  # other versions' key directories, the oldest last
        directory = root / f"0.0.{age}-{age:016x}"
        (directory / "accel").mkdir(parents=True)
        (directory / "accel" / "kernel.nbi").write_text("x")
        os.utime(directory, (1e9 - age * 1000, 1e9 - age * 1000))
        old.append(directory.name)
    first = _run("small", _environment(tmp_path / "cache"))
    kept = sorted(p.name for p in root.iterdir())
    assert len(kept) == KEEP_KEYS and Path(first["cache_dir"]).name in kept
    assert sorted(set(kept) - {Path(first["cache_dir"]).name}) == sorted(old[:KEEP_KEYS - 1])  # the most recent
