"""kernels/_gemm.py: narrow matrix products in row blocks sized for OpenBLAS's small-matrix kernel. The rule (which
products are blocked, how) is checked by hand computation; the products against a float64 oracle. A fake BLAS
controller makes every machine take the blocked path (the blocks are ordinary products wherever they run)."""
from __future__ import annotations

import numpy as np
import pytest

from nnrt_onnx.kernels import _gemm


class _FakeBlas:
    def __init__(self, threads=1):
        self.threads = threads

    def get_num_threads(self):
        return self.threads


@pytest.fixture
def small_kernel_blas(monkeypatch):
    monkeypatch.setattr(_gemm, "_blas", lambda: _FakeBlas(1))


F32 = np.dtype(np.float32)


def test_block_rows_rule(small_kernel_blas):
    # 12544 x 27 x 32 (a 3-channel stem's im2col): at most 1e6 // 864 = 1157 rows per block, so 11 blocks, made
    # equal: ceil(12544 / 11) = 1141 rows
    assert _gemm.block_rows(12544, 27, 32, F32) == 1141
    # 3136 x 144 x 32: limit 1e6 // 4608 = 217 rows, 15 blocks of ceil(3136 / 15) = 210
    assert _gemm.block_rows(3136, 144, 32, F32) == 210
    assert _gemm.block_rows(12544, 16, 96, F32) == 628  # limit 651, 20 blocks of ceil(12544 / 20) = 628
    # one call: N not a multiple of 16, K * N above 6144, float64, already under the limit
    assert _gemm.block_rows(3136, 96, 24, F32) == 0
    assert _gemm.block_rows(3136, 97, 64, F32) == 0  # K * N = 6208
    assert _gemm.block_rows(3136, 96, 64, F32) == 157  # limit 162, 20 blocks of ceil(3136 / 20) = 157
    assert _gemm.block_rows(12544, 27, 32, np.dtype(np.float64)) == 0
    assert _gemm.block_rows(1157, 27, 32, F32) == 0  # 999,648 multiply-adds: the whole product is small already


def test_no_blocks_with_several_blas_threads_or_another_blas(monkeypatch):
    monkeypatch.setattr(_gemm, "_blas", lambda: _FakeBlas(2))  # the small kernel is single-threaded
    assert _gemm.block_rows(12544, 27, 32, F32) == 0
    monkeypatch.setattr(_gemm, "_blas", lambda: None)  # a BLAS (or core) without the small-matrix kernel
    assert _gemm.block_rows(12544, 27, 32, F32) == 0
    assert _gemm.small_kernel_rows(27, 32, F32) == 0


def test_blas_detection_names_a_small_kernel_core_or_nothing():
    blas = _gemm._blas()
    assert blas is None or str(blas.architecture).lower() in _gemm.SMALL_KERNEL_CORES


@pytest.mark.parametrize("m,k,n", [(3001, 27, 32), (4099, 16, 96), (2500, 48, 64), (2777, 128, 48)])
def test_matmul_into_matches_float64_in_blocks(small_kernel_blas, m, k, n):
    assert _gemm.block_rows(m, k, n, F32) > 0  # the blocked path is the one under test
    rng = np.random.default_rng(m + k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    out = np.full((m, n), np.nan, np.float32)
    assert _gemm.matmul_into(a, b, out) is out
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    # into a column slice of a wider array (a strided output), leaving the other columns alone
    wide = np.zeros((m, n + 16), np.float32)
    _gemm.matmul_into(a, b, wide[:, 8:8 + n])
    np.testing.assert_allclose(wide[:, 8:8 + n], want, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    assert not wide[:, :8].any() and not wide[:, 8 + n:].any()
