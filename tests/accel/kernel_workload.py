"""Calls every compiled kernel of nnrt_onnx.accel once (a script run in a subprocess by test_kernel_cache.py), checks
a few results against independent oracles, and prints JSON: per kernel declared with ``numba_cache.jit``, this
process's cache hits and misses; the compilations numba reported (its ``numba:compile`` event: one per kernel it
compiled instead of loading); the cache directory.

    python kernel_workload.py [all|small|float64|preload]   # small: a few cheap kernels; float64: them in float64
                                                            # preload: accel.preload(), then small

With ``preload`` the JSON also has ``preloaded``: per kernel, the signatures it had in memory after the preload and
before any call, and ``preload_compiled``: the kernels the preload itself compiled (numba's cache misses).
"""
from __future__ import annotations

import json
import math
import sys

import numba.core.event as numba_event
import numpy as np

COMPILED: list[str] = []


class _CompileListener(numba_event.Listener):
    def on_start(self, event):
        pass

    def on_end(self, event):
        COMPILED.append(event.data["dispatcher"].py_func.__qualname__)


def small(dtype) -> None:
    """erf, pooling and the finish loop: cheap to compile (the concurrency and place tests)."""
    from nnrt_onnx.accel import numba_loops as L

    values = np.array([-1.5, -0.25, 0.0, 0.5, 2.0], np.float32)
    got = L.erf(values)
    assert np.allclose(got, [math.erf(v) for v in values.tolist()], rtol=1e-6, atol=1e-7), got
    x = np.arange(2 * 4 * 4 * 3, dtype=dtype).reshape(2, 4, 4, 3)
    pooled = L.pool(x, "max", (2, 2), (2, 2), (0, 0), (2, 2), False)
    assert np.array_equal(pooled, x.reshape(2, 2, 2, 2, 2, 3).max(axis=(2, 4))), pooled
    rows = np.arange(12, dtype=dtype).reshape(4, 3) - 6
    expected = np.maximum(rows + np.array([1, 2, 3], dtype), 0)
    assert L.finish_rows(rows, L.finish_arrays(np.array([1, 2, 3], dtype), (), 3, dtype), 1)
    assert np.array_equal(rows, expected), rows


def every_kernel() -> None:
    """Each numba loop, and on AVX-512 hosts each vector kernel, at least once."""
    from nnrt_onnx.accel import avx512
    from nnrt_onnx.accel import numba_loops as L
    from nnrt_onnx.accel import tiles

    rng = np.random.default_rng(0)
    small(np.float32)
    small(np.float64)
    for dtype in (np.float32, np.float64):
        xp = rng.standard_normal((1, 6, 6, 4)).astype(dtype)
        wt = rng.standard_normal((3, 3, 4)).astype(dtype)
        out = np.empty((1, 4, 4, 4), dtype)
        assert L.depthwise(xp, wt, None, out, (1, 1), (1, 1), 0)
        assert L.depthwise_3x3(xp[:, 1:5, 1:5], wt, None, out, (1, 1), (1, 1), (1, 1, 1, 1), 1)
        assert L.softmax_last_axis(rng.standard_normal((3, 20)).astype(dtype)) is not None
        assert L.layer_norm_rows(rng.standard_normal((3, 8)).astype(dtype), np.ones(8), np.zeros(8), 1e-5) is not None
        rows = rng.standard_normal((5, 4)).astype(dtype)
        assert L.channel_affine(rows, np.ones(4), np.zeros(4), (("mul", np.ones(4)),), 2, np.empty_like(rows))
        assert L.swap_last_axes(rng.standard_normal((3, 4, 8)).astype(dtype)) is not None
        z = rng.standard_normal((4, 4, 3, 3, 2)).astype(dtype)
        assert L.kn2row_gather(z, np.empty((4, 4, 2), dtype), -1, -1)
        cols = np.empty((2 * 4, 3 * 3 * 4), dtype)
        assert L.im2col_rows(np.ascontiguousarray(xp[0]), cols, 0, 2, (3, 3), (1, 1), 1)
    assert L.erf_gelu(rng.standard_normal(10).astype(np.float32), 1.41, 1.0, 0.5) is not None
    from nnrt_onnx.accel.loops import recurrence as R  # the recurrences compiled over time (float32)

    f32 = np.float32
    h, c = np.zeros((1, 2, 4), f32), np.zeros((1, 2, 4), f32)
    R.lstm_layer(rng.standard_normal((1, 3, 2, 16)).astype(f32), rng.standard_normal((1, 4, 16)).astype(f32), h, c,
                 np.empty((3, 2, 1, 4), f32), np.empty(16, f32), 0, 4, 8, 12)
    assert np.all(np.abs(h) < 1) and np.all(np.isfinite(c))  # (h = o * tanh(c): inside (-1, 1))
    proj = [rng.standard_normal((3, 2, 4)).astype(f32) for _ in range(3)]
    weights = [rng.standard_normal((4, 4)).astype(f32) for _ in range(3)]
    state, bias, scratch = np.zeros((2, 4), f32), np.zeros(4, f32), np.empty((4, 4), f32)
    R.gru_step(proj[0][0], proj[1][0], proj[2][0], state, *weights, bias, True, np.empty((2, 4), f32), scratch)
    R.gru_sequence(*proj, state, *weights, bias, False, np.empty((3, 2, 4), f32), scratch)
    R.gru_sequence_rows(*proj, 2, -1, state, *weights, bias, True, np.empty((3, 2, 4), f32), scratch)
    transform_in, transform_out = L.winograd_transforms()
    th, tw, c, o = 2, 2, 3, 5
    xp = rng.standard_normal((1, 2 * th + 2, 2 * tw + 2, c)).astype(np.float32)
    v = np.empty((16, th * tw * c), np.float32)
    transform_in(xp, v, 0, th, tw, np.empty((4, (2 * tw + 2) * c), np.float32))
    out = np.empty((1, 2 * th, 2 * tw, o), np.float32)
    transform_out(np.ones((16, th * tw * o), np.float32), out.reshape(-1), o, 1, 2 * th, 2 * tw, o, 0, th, tw,
                  np.empty((8, tw * o), np.float32), *L.NO_ROW_FINISH)
    if avx512.compiled("tile_kernels", "driver") is not None:  # AVX-512 hosts: the tiles (softmax, pooling,
        a = rng.standard_normal((20, 30)).astype(np.float32)   # depthwise and shuffle vectors ran above)
        b = tiles.padded(rng.standard_normal((30, 40)).astype(np.float32))
        product = np.empty((20, 40), np.float32)
        assert tiles.matmul(a, b, product)
        assert np.allclose(product, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def _name(dispatcher) -> str:
    return f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}"


def main(workload: str) -> None:
    from nnrt_onnx.accel import numba_cache

    numba_event.register("numba:compile", _CompileListener())
    extra = {}
    if workload == "preload":
        from nnrt_onnx import accel

        accel.preload()
        extra = {"preloaded": {_name(d): len(d.overloads) for d in numba_cache.KERNELS},
                 "declared_with_signatures": [_name(d) for d in numba_cache.KERNELS if not d._can_compile],
                 "preload_compiled": [_name(d) for d in numba_cache.KERNELS if numba_cache.jit_stats(d)[1]]}
        del COMPILED[:]  # what the calls compile, below
    if workload == "all":
        every_kernel()
    else:
        small(np.float64 if workload == "float64" else np.float32)
    kernels = {_name(d): numba_cache.jit_stats(d)
               for d in numba_cache.KERNELS if d.targetoptions.get("inline", "never") == "never"}
    print(json.dumps({"kernels": kernels, "compiled": COMPILED, "cache_dir": str(numba_cache.cache_dir()), **extra}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "all")
