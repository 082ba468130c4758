"""The fuzzing campaign in the test suite (issue 12): a bounded slice of tools/fuzz.py (fixed seed), the replay of
every saved regression, and no known model reaching a converter's internal_error path."""
from __future__ import annotations

import importlib.util
import json
import sys
import warnings
from pathlib import Path

import onnx
import pytest

import nnrt_onnx

ROOT = Path(__file__).resolve().parent.parent
REGRESSIONS = ROOT / "tests" / "data" / "fuzz_regressions"
SLICE_SEED, SLICE_COUNT = 12, 4000


def _fuzz():
    spec = importlib.util.spec_from_file_location("nnrt_onnx_fuzz", ROOT / "tools" / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


fuzz = _fuzz()
PACKAGE_PARENT = str(Path(nnrt_onnx.__file__).resolve().parent.parent)  # the package under test, in the workers too


def _bad_sites(report) -> str:
    return json.dumps({k: v for k, v in report.sites.items()}, indent=1)[:4000]


def test_mutants_are_deterministic():
    seeds = fuzz.corpus()
    assert len(seeds) > 1000 and any(name.startswith("models/") for name, _ in seeds)
    assert fuzz.mutant(seeds, 5, 17) == fuzz.mutant(seeds, 5, 17)
    assert fuzz.mutant(seeds, 5, 17)[1] != fuzz.mutant(seeds, 5, 18)[1]


def test_fuzz_slice_finds_no_crash_hang_or_memory_problem():
    """4000 mutants of seed 12 through conversion, the .nnrt round trip and build, each in a worker process with a
    memory and a time limit: every outcome is a conversion or a clean ConversionError."""
    report = fuzz.campaign(seed=SLICE_SEED, count=SLICE_COUNT, workers=1, package=PACKAGE_PARENT)
    assert report.tried == SLICE_COUNT
    assert report.bad == 0, _bad_sites(report)
    assert report.outcomes["converted"] > 100 and report.outcomes["clean"] > 500  # (the slice does reach both)
    assert set(report.by_family) == set(fuzz.FAMILIES)  # every family of mutations was tried
    assert 0 < report.peak_rss_mb < 500  # per mutant, the worker's own start-up included (issue 12: < 500 MB)


def test_the_runner_reports_a_crash_a_hang_and_a_dead_worker(monkeypatch, tmp_path):
    """The classification itself, on a worker told to fail (its environment makes the importer raise, sleep or
    abort): the oracle of the fuzzer's verdicts."""
    probe = tmp_path / "sitecustomize.py"
    probe.write_text(
        "import os, time\n"
        "mode = os.environ.get('NNRT_FUZZ_PROBE')\n"
        "if mode:\n"
        "    import nnrt_onnx.onnx_import.importer as importer\n"
        "    original = importer._convert\n"
        "    def probe(*args, **kwargs):\n"
        "        if mode == 'crash': raise ZeroDivisionError('probe')\n"
        "        if mode == 'hang': time.sleep(60)\n"
        "        if mode == 'abort': os.abort()\n"
        "        if mode == 'memory': bytearray(1 << 40)\n"
        "        return original(*args, **kwargs)\n"
        "    importer._convert = probe\n")
    model = (ROOT / "models" / "tiny_mlp.onnx").read_bytes()
    verdicts = {}
    for mode in ("crash", "hang", "abort", "memory"):
        monkeypatch.setenv("NNRT_FUZZ_PROBE", mode)
        runner = fuzz.Runner(1, 10, timeout=2.0, package=f"{tmp_path}{__import__('os').pathsep}{PACKAGE_PARENT}")
        try:
            verdicts[mode] = runner.evaluate(0, {"model": __import__("base64").b64encode(model).decode()})
        finally:
            runner.close()
    assert verdicts["crash"]["outcome"] == "crash" and "ZeroDivisionError" in verdicts["crash"]["detail"]
    assert verdicts["hang"]["outcome"] == "hang"
    assert verdicts["abort"]["outcome"] == "died" and verdicts["abort"]["site"] == "worker signal 6"
    assert verdicts["memory"]["outcome"] == "memory"


def _regressions():
    return sorted(REGRESSIONS.glob("*.onnx")) if REGRESSIONS.exists() else []


@pytest.mark.skipif(not _regressions(), reason="no saved fuzz regressions")
def test_saved_fuzz_regressions_convert_or_fail_cleanly():
    """Every model tools/fuzz.py saved (one per crash site it ever found) now converts or fails cleanly, with the
    worker's peak RSS below 500 MB."""
    index = json.loads((REGRESSIONS / "index.json").read_text())
    assert set(index) == {p.name for p in _regressions()}
    runner = fuzz.Runner(1, 1000, package=PACKAGE_PARENT)
    bad = {}
    try:
        for path in _regressions():
            result = runner.evaluate(0, {"model": __import__("base64").b64encode(path.read_bytes()).decode()})
            if result["outcome"] in fuzz.BAD or (result.get("peak_rss_mb") or 0.0) > 500:
                bad[path.name] = (index[path.name]["site"], result)  # (issue 12: a mutant's peak below 500 MB)
    finally:
        runner.close()
    assert not bad, bad


def _known_models():
    from nnrt_onnx.testing.conformance import node_cases

    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    models = {name: case.model.SerializeToString() for name, case in node_cases().items()}
    for path in sorted((ROOT / "models").glob("*.onnx")) + sorted(light.glob("*.onnx")):
        models[path.name] = path.read_bytes()
    return models


def test_no_known_model_reaches_the_internal_error_path():
    """Every node-suite case (claimed or not), models/ and onnx's light architectures: converted or a clean
    ConversionError -- never an internal_error, out_of_memory or another exception."""
    bad = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, data in _known_models().items():
            result = fuzz.classify(data, max_constant_bytes=256 << 20)
            if result["outcome"] in fuzz.BAD:
                bad[name] = result
    assert not bad, json.dumps(bad, indent=1)[:4000]
