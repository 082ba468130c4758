"""The compiled loops of ``nnrt_onnx.accel`` (numba, and AVX-512 vectors where the CPU has them) against the
reference kernels or the numpy paths they replace, bit for bit where ``accel.contract`` says EXACT; moved here
from tests/kernels. Skipped with ``NNRT_ONNX_NUMBA=0`` (no fast paths)."""
from __future__ import annotations

import itertools
from functools import partial

import numpy as np
import pytest
from accel_support import requires_fast_paths

from nnrt_onnx.accel import avx512 as _avx512
from nnrt_onnx.accel import normalization as fast_norm
from nnrt_onnx.accel import numba_loops as _accel
from nnrt_onnx.errors import NNRtError

pytestmark = requires_fast_paths
F32 = np.float32


def test_erf_compiled_and_numpy_paths_are_bit_identical(monkeypatch):
    from nnrt_onnx.accel.elementwise import erf as fast_erf
    from nnrt_onnx.kernels.elementwise import erf

    if not _accel.enabled():
        pytest.skip("numba is not installed")
    x = np.concatenate([np.linspace(-6, 6, 100_001, dtype=F32), np.array([np.nan, np.inf, -np.inf, -0.0], F32)])
    compiled = fast_erf(erf, x)
    assert compiled.tobytes() == erf(x).tobytes()


def test_softmax_and_layer_norm_compiled_loops_agree_with_the_numpy_path(monkeypatch):
    from nnrt_onnx.kernels.normalization import layer_norm, softmax

    if not _accel.enabled():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(5)
    # row lengths around the compiled loops' 16 lanes (shorter rows, exact multiples, tails)
    for dtype, n in itertools.product((np.float32, np.float64), (3, 15, 16, 17, 37, 128)):
        x = (rng.standard_normal((3, 5, n)) * 4).astype(dtype)
        x[0, 1, 2] = np.nan
        x[1, 2, :] = np.inf
        x[2, 0, n - 1] = -np.inf
        x[2, 1, 0] = np.nan  # NaN in the first cell (the running maxima start from it)
        x[1, 3, n - 1] = np.nan  # NaN in the last cell (the lanes' loop or the tail)
        g = rng.standard_normal(n).astype(dtype)
        b = rng.standard_normal(n).astype(dtype)
        with np.errstate(all="ignore"):
            ln = dict(begin_norm_axis=2, epsilon=1e-5, begin_param_axis=2)
            compiled = (fast_norm.softmax(partial(softmax, axis=-1), x, axis=-1),
                        fast_norm.layer_norm(partial(layer_norm, **ln), x, g, b, **ln))
            plain = (softmax(x, axis=-1), layer_norm(x, g, b, **ln))
        for got, want in zip(compiled, plain):
            assert got.dtype == want.dtype == dtype and got.shape == want.shape
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=4 * np.finfo(dtype).eps)
        finite = x[2, 2].astype(np.float64)  # a row with only finite values: against float64 directly
        e = np.exp(finite - finite.max())
        # (rounding of x - max, about |x| ulps, carries into exp: a few tens of eps)
        np.testing.assert_allclose(compiled[0][2, 2], e / e.sum(), rtol=32 * np.finfo(dtype).eps, atol=0)


def test_layer_norm_compiled_loop_divides_like_numpy_by_a_zero_deviation(monkeypatch):
    # a constant row with epsilon 0 divides 0 by 0: NaN as in numpy, not a ZeroDivisionError from the compiled loop
    from nnrt_onnx.kernels.normalization import layer_norm

    if not _accel.enabled():
        pytest.skip("numba is off or not installed")
    x = np.array([[2.0, 2.0, 2.0, 2.0], [1.0, 2.0, 3.0, 4.0]], np.float32)
    g, b = np.ones(4, np.float32), np.zeros(4, np.float32)
    ln = dict(begin_norm_axis=1, epsilon=0.0, begin_param_axis=1)
    with np.errstate(all="ignore"):
        got = fast_norm.layer_norm(None, x, g, b, **ln)  # (None: the loop must take it, no fallback)
        want = layer_norm(x, g, b, **ln)
    assert np.isnan(want[0]).all() and np.isnan(got[0]).all()
    np.testing.assert_allclose(got[1], want[1], rtol=4e-7)


def test_layer_norm_compiled_loop_squares_in_float32_like_the_reference():
    # fuzzer seed 7919 model 106285 (Exp -> GroupNormalization): a row whose deviation passes 1.8e19 squares to inf
    # in float32 -- the reference kernel's, onnxruntime's and the spec's float32 stash give a normalised 0 -- while
    # the loop once squared in float64 and normalised it (-0.258 ... 3.87, what float64 gives, not float32)
    from nnrt_onnx.kernels.normalization import layer_norm

    if not _accel.enabled():
        pytest.skip("numba is off or not installed")
    x = np.array([[1e-11, 2e-5, 8.3e10, 1.2e5, 2.5e15, 2.6e-4, 1e-11, 2.8e4, 2.3e-3, 0.49, 2.4e-2, 4.1, 1.6e-6, 4.8e13,
                   4.558e19, 1.05e3], np.arange(16)], np.float32)
    g, b = np.full(16, 2.0, np.float32), np.full(16, 0.5, np.float32)
    ln = dict(begin_norm_axis=1, epsilon=1e-5, begin_param_axis=1)
    with np.errstate(all="ignore"):
        got = fast_norm.layer_norm(None, x, g, b, **ln)  # (None: the loop must take it, no fallback)
        want = layer_norm(x, g, b, **ln)
    np.testing.assert_array_equal(got[0], np.full(16, 0.5, np.float32))  # bias only, as onnxruntime
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=4e-7)

@pytest.mark.parametrize("activation", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_compiled_pass_is_identical_to_the_numpy_blocks(monkeypatch, dtype, activation):
    # the one-pass compiled batch norm (with the plan's fused MUL/ADD ``post`` vectors and the activation) against
    # the numpy path's per-block ufunc passes: the same values, NaN and signs of zero; and against float64 by hand
    from nnrt_onnx.accel.normalization import batch_norm

    if not _accel.enabled():
        pytest.skip("numba is off or not installed")
    rng = np.random.default_rng(11)
    c = 37  # a tail after any vector width
    x = (rng.standard_normal((2, 5, 3, c)) * 8).astype(dtype)
    x[0, 0, 0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    x[1, 4, 2, ::3] = 0.0
    scale, offset, mean = (rng.standard_normal(c).astype(dtype) for _ in range(3))
    scale[5] = 0.0  # -> products of -0.0 and +0.0 reach the activation
    variance = rng.random(c).astype(dtype) + 0.1
    post = (("mul", rng.standard_normal(c).astype(dtype)), ("add", rng.standard_normal(c).astype(dtype)))
    with np.errstate(all="ignore"):
        compiled = batch_norm(x, scale, offset, mean, variance, epsilon=1e-3, activation=activation, post=post)
        monkeypatch.setenv("NNRT_ONNX_NUMBA", "0")
        plain = batch_norm(x, scale, offset, mean, variance, epsilon=1e-3, activation=activation, post=post)
        monkeypatch.delenv("NNRT_ONNX_NUMBA")
    assert compiled.dtype == plain.dtype == dtype
    np.testing.assert_array_equal(compiled, plain)
    np.testing.assert_array_equal(np.signbit(compiled), np.signbit(plain))
    finite = x[1].astype(np.float64)
    want = (finite - mean) / np.sqrt(variance.astype(np.float64) + 1e-3) * scale + offset
    want = want * post[0][1] + post[1][1]
    want = {0: want, 1: np.maximum(want, 0), 2: np.clip(want, 0, 6)}[activation]
    np.testing.assert_allclose(compiled[1], want, rtol=64 * np.finfo(dtype).eps, atol=64 * np.finfo(dtype).eps * 8)


@pytest.mark.parametrize("shape", [(512, 128), (7, 37), (3, 16), (5, 15), (4, 1), (64, 200)])
def test_softmax_vectors_are_bit_identical_to_numbas_loops(shape):
    # the AVX-512 row loops (_softmax_vectors) around numpy's exp give _accel's softmax bit for bit: rows shorter
    # than a vector, tails after the whole vectors, NaN, +-inf and signed zeros
    shift = _avx512.compiled("softmax_vectors", "shift_rows")
    normalise = _avx512.compiled("softmax_vectors", "normalise_rows")
    loop = _accel._get("softmax")
    if shift is None or normalise is None or loop is None:
        pytest.skip("needs numba and an AVX-512 CPU")
    rng = np.random.default_rng(shape[0] * shape[1])
    x = rng.standard_normal(shape).astype(np.float32) * 4
    if shape[1] >= 3:
        x[0, :3] = [np.nan, -0.0, 0.0]
    if shape[0] > 2 and shape[1] > 20:
        x[1, 17], x[2, 5], x[2, 6] = np.inf, -np.inf, 30.0
    if shape[0] > 3 and shape[1] >= 32:
        x[3, 20] = np.nan  # a NaN after a lane's first element: it must win that lane's maximum
    want = loop(x, np.empty_like(x))
    got = np.empty_like(x)
    shift(x, got)
    np.exp(got, out=got)
    normalise(got)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_pool_compiled_loop_is_identical_to_the_numpy_path(monkeypatch):
    from nnrt_onnx.accel.pool import pool
    from nnrt_onnx.kernels.pool import avg_pool, max_pool

    if not _accel.enabled():
        pytest.skip("numba is not installed: the numpy path is the only one")
    rng = np.random.default_rng(3)
    compared = 0
    for k in range(120):
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 10)), int(rng.integers(1, 10)), int(rng.integers(1, 6)))
        params = dict(kernel_size=[int(v) for v in rng.integers(1, 4, 2)],
                      stride=[int(v) for v in rng.integers(1, 3, 2)],
                      pad_mode=int(rng.integers(-1, 2)), pad_list=[int(v) for v in rng.integers(0, 3, 4)],
                      round_mode=int(rng.integers(0, 2)), global_pool=False)
        x = rng.standard_normal(shape).astype([np.float32, np.float64][k % 2])
        x.flat[::5] = -0.0
        # (no +0.0 in x: which sign a window holding both -0.0 and +0.0 returns is unspecified -- the compiled loop
        # keeps the earlier cell, numpy's separable np.maximum the later -- as it is in onnxruntime)
        if k % 3 == 0:  # NaN cells, the first one a window's first cell (max pooling's NaN rule: kernels.pool)
            x[rng.random(shape) < 0.3] = np.nan
            x[:, 0, 0] = np.nan
        for op, fn in (("AVG_POOL", avg_pool), ("MAX_POOL", max_pool)):
            try:
                with np.errstate(all="ignore"):
                    plain = fn(x, **params)
                    compiled = pool(None, op, x, **params)  # (None: the compiled loop must take it)
            except NNRtError:
                continue  # an invalid geometry: the reference raises (the fast path defers to it)
            assert compiled.dtype == plain.dtype and compiled.shape == plain.shape, params
            np.testing.assert_array_equal(compiled, plain)  # NaN where NaN
            np.testing.assert_array_equal(np.signbit(compiled), np.signbit(plain))
            compared += 1
    assert compared > 100


@pytest.mark.parametrize("h,w,c,window,stride,pads,is_max,start_at_zero", [
    (9, 11, 37, 3, 2, (1, 1), True, False),  # 37 channels: two whole blocks of 16 and a masked one
    (8, 8, 16, 2, 2, (0, 0), True, False),
    (10, 13, 5, 3, 1, (1, 1), False, True),  # padding clips the first cell: sums from +0.0
    (7, 9, 33, 3, 2, (0, 0), False, False),
    (8, 10, 17, 2, 2, (0, 0), False, False),
    (6, 6, 20, 2, 2, (1, 1), False, True),
    (5, 5, 18, 3, 3, (2, 2), True, False),  # windows entirely in the padding: the fill (NaN)
    (5, 5, 18, 3, 3, (2, 2), False, True),
    (10, 13, 21, 3, 1, (1, 1), True, False),  # both strides 1: a NaN never wins (kernels.pool)
    (7, 8, 20, 2, 1, (1, 0), True, False),
])
def test_pool_vectors_are_bit_identical_to_numbas_loop(h, w, c, window, stride, pads, is_max, start_at_zero):
    # the AVX-512 pooling (_pool_vectors) gives _accel's pool_loop's results bit for bit: NaN and inf cells, -0.0
    # sums, the fills of windows with no cell inside
    vectors = _avx512.compiled("pool_vectors", "pool")
    loop = _accel._get("pool")
    if vectors is None or loop is None:
        pytest.skip("needs numba and an AVX-512 CPU")
    rng = np.random.default_rng(h * w + c + window)
    x = rng.standard_normal((2, h, w, c)).astype(np.float32)
    x[0, 0, 0, :3] = [np.nan, np.inf, -0.0]
    x[1, 1, 1, :2] = [-np.inf, -0.0]
    x[1, :3, :3, 4] = -0.0  # windows of -0.0 only: their average stays -0.0 unless it starts from +0.0
    # NaN in a third of the cells of channels 5.., and windows of NaN only: max pooling's NaN rule
    x[:, :, :, 5:][rng.random((2, h, w, c - 5)) < 1 / 3] = np.nan
    x[0, 2:5, 2:5, 5:] = np.nan
    pt, pl = pads
    oh, ow = (h + 2 * pt - window) // stride + 1, (w + 2 * pl - window) // stride + 1
    want = np.full((2, oh, ow, c), 7, np.float32)
    got = want.copy()
    loop(x, want, window, window, stride, stride, pt, pl, is_max, start_at_zero,
         np.float32(np.nan))
    assert vectors(x, got, is_max, window, window, stride, stride, pt, pl, start_at_zero)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not vectors(x, got, is_max, 5, 5, 1, 1, 0, 0, start_at_zero)  # other windows: numba's loop


@pytest.mark.parametrize("shape", [(784, 4, 34), (10, 2, 37), (5, 8, 3), (7, 8, 17), (3, 4, 1)])
def test_shuffle_vectors_transpose_like_numpy(shape):
    # the AVX-512 channel shuffle (_shuffle_vectors): out[r, k, j] = x[r, j, k] for G = 2, 4, 8, every tail length
    # (N not a multiple of 16 / G); other G declined
    vectors = _avx512.compiled("shuffle_vectors", "swap_last_axes")
    if vectors is None:
        pytest.skip("needs numba and an AVX-512 CPU")
    x = np.random.default_rng(shape[2]).standard_normal(shape).astype(np.float32)
    x.reshape(-1)[:3] = [np.nan, -0.0, np.inf]
    out = np.full((shape[0], shape[2], shape[1]), 7, np.float32)
    assert vectors(x, out)
    np.testing.assert_array_equal(out.view(np.uint32), np.ascontiguousarray(x.transpose(0, 2, 1)).view(np.uint32))
    assert not vectors(np.zeros((2, 3, 5), np.float32), np.zeros((2, 5, 3), np.float32))
