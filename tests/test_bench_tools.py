"""The benchmark scripts behind the kernels' measured rules still run against the code they measure (a smoke
test: tiny sizes, no timing claims)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _script(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


@pytest.mark.parametrize("stack,finish", [(0, False), (2, True)])
def test_tile_gemm_sweep_cell_runs(stack, finish):
    from nnrt_onnx.accel import tiles as _tiles

    if not _tiles.available():
        pytest.skip("the register tiles need numba and an AVX-512 CPU")
    tile_gemm = _script("tile_gemm")
    ratio = tile_gemm._ratio(30, 27, 24, stack, finish, 1, np.random.default_rng(0))
    assert ratio > 0


def test_ab_switch_turns_every_switch_on_and_off(monkeypatch):
    monkeypatch.setenv("NNRT_ONNX_NUMBA", "1")  # (the "numba" switch edits the environment: restored after)
    ab_switch = _script("ab_switch")
    for switch in ab_switch.SWITCHES:
        if switch in ab_switch.PLAN_SWITCHES:
            continue
        set_on = ab_switch._setter(switch)
        set_on(False)
        set_on(True)
    import importlib

    for switch, patches in ab_switch.PLAN_SWITCHES.items():  # every plan-time switch names what exists
        for module, name, _ in patches:
            assert hasattr(importlib.import_module(module), name), (switch, module, name)


def test_bench_check_measures_a_fresh_check():
    if not Path("/usr/bin/time").exists():
        pytest.skip("bench_check measures the peak memory with /usr/bin/time")
    bench_check = _script("bench_check")
    model = str(BENCH.parent / "models" / "tiny_mlp.onnx")
    wall, peak_gb, referee, ok = bench_check._run(BENCH.parent, model, ["--float64"])
    assert ok and wall > 0 and 0.01 < peak_gb < 64 and 0 < referee < wall
    assert bench_check._run(BENCH.parent, model, [])[2] == 0.0  # agreement: the referee is not asked
