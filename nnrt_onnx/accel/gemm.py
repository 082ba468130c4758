"""Matrix products into a preallocated output: in register tiles (:mod:`._tiles`) where those are faster than
numpy's BLAS, else numpy's BLAS, split into row blocks where it runs them faster so.

With one BLAS thread (the runtime's default policy) a float32 product whose shape :func:`._tiles.wanted` accepts
runs in :mod:`._tiles`' register tiles (:func:`uses_tiles`): bare products off OpenBLAS's small-matrix kernel's
shapes (0.56-0.9x its time there), and products whose finish -- a convolution's bias, fused vectors, residual and
activation -- the tiles apply as they store (:func:`matmul_finished`: 0.34-0.9x "BLAS + the finish pass"). With
more threads BLAS keeps them all: the tiles use one core.

OpenBLAS (numpy's BLAS) multiplies a product whose M * N * K is at most 1e6 with a "small-matrix" kernel that
reads the operands in place instead of packing them, on its AVX-512 cores (the SkylakeX kernels, which Cooperlake
and SapphireRapids reuse; ``sgemm_small_kernel_permit``). For the narrow products of convolutions -- a
3-channel stem's im2col [12544, 27] x [27, 32], MobileNetV2's 1x1 [12544, 16] x [16, 96] -- one call runs at
60-90 GFLOPS, while the same product cut into row blocks that each fit under 1e6 runs at 90-130. Measured on
single-threaded OpenBLAS 0.3.31 (docs/performance.md, fifth round): the blocks take 0.6-0.9x the time of one
call where N is a multiple of 16 and K * N <= 6144 (at least 162 rows per block); where N is not a multiple of 16
(24, 40, ...) or K * N is larger, they were as slow or slower (up to 1.6x), so there one call stays.

Only float32, only with one BLAS thread (the small kernel is single-threaded: it would throw away a
multi-threaded call's other cores), only on the cores above: elsewhere :func:`matmul_into` is one ``np.matmul``.
"""
from __future__ import annotations

import os
from functools import cache

import numpy as np

from . import tiles as _tiles

SMALL_KERNEL_MNK = 1_000_000  # OpenBLAS's limit for its small-matrix kernel (M * N * K)
MAX_BLOCKED_KN = 6144  # beyond this K * N, blocks under the limit measured no faster than one call
SMALL_KERNEL_CORES = frozenset({"skylakex", "cooperlake", "sapphirerapids"})


@cache
def _openblas():
    """numpy's OpenBLAS controller (threadpoolctl), or None."""
    try:
        from threadpoolctl import ThreadpoolController
        controllers = ThreadpoolController().select(internal_api="openblas").lib_controllers
    except Exception:  # no threadpoolctl, or a BLAS it cannot read: never block
        return None
    return numpy_openblas(controllers, os.path.realpath(os.path.dirname(np.__file__)))


def _blas():
    """numpy's OpenBLAS controller when its core type has the small-matrix kernel, else None."""
    blas = _openblas()
    return blas if blas is not None and str(getattr(blas, "architecture", "")).lower() in SMALL_KERNEL_CORES else None


def single_threaded() -> bool:
    """numpy's BLAS runs one thread (an OpenBLAS whose count threadpoolctl reads; any other BLAS: unknown, False)."""
    blas = _openblas()
    return blas is not None and blas.get_num_threads() == 1


def numpy_openblas(controllers, numpy_dir: str):
    """Of threadpoolctl's OpenBLAS controllers, the one numpy uses: the library inside numpy's own folders (a wheel
    bundles it in ``numpy.libs`` or ``numpy/.dylibs``), else the only one loaded (a numpy linked to a system or conda
    OpenBLAS); None when several are loaded and none is numpy's (another package's OpenBLAS -- scipy's -- could
    have another core type or thread count)."""
    own = [c for c in controllers
           if os.path.realpath(str(getattr(c, "filepath", ""))).startswith((numpy_dir + os.sep, numpy_dir + ".libs"))]
    if own:
        return own[0]
    return controllers[0] if len(controllers) == 1 else None


def uses_tiles(m: int, k: int, n: int, dtype, batch: int = 1, finished: bool = False, max_kn: int = 0) -> bool:
    """Whether [m, k] x [k, n] products of ``dtype`` (``batch`` of them in one call; ``finished``: with a finish the
    tiles apply as they store) run in register tiles: float32, one BLAS thread, tiles that can run here, and a
    shape :func:`._tiles.wanted` takes (``max_kn``: its bound on K N for finished products) -- without a finish,
    not one OpenBLAS's small-matrix kernel runs (the bare products measured even to 1.5x slower in tiles there)."""
    if dtype != np.float32 or not _tiles.wanted(batch * m * k * n, k, n, finished, max_kn) or not single_threaded():
        return False
    if not finished and n % 16 == 0 and k * n <= MAX_BLOCKED_KN and _blas() is not None:
        return False
    return _tiles.available()


def small_kernel_rows(k: int, n: int, dtype) -> int:
    """The most rows a block of [rows, k] x [k, n] products may have to run on the small-matrix kernel where the
    rule of the module doc says that pays; 0 where it does not (or the BLAS has no such kernel)."""
    if dtype != np.float32 or n % 16 or k * n > MAX_BLOCKED_KN:
        return 0
    blas = _blas()
    if blas is None or blas.get_num_threads() != 1:
        return 0
    return SMALL_KERNEL_MNK // (k * n)


def block_rows(m: int, k: int, n: int, dtype) -> int:
    """Rows per block for the product [m, k] x [k, n] (0: one call), by the rule of the module doc."""
    limit = small_kernel_rows(k, n, dtype) if m * k * n > SMALL_KERNEL_MNK else 0
    if not limit:
        return 0
    blocks = -(-m // limit)
    return -(-m // blocks)  # equal blocks (no thin last block), each under the limit


def matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b, out=out)`` for 2-D ``a`` [M, K], ``b`` [K, N], ``out`` [M, N]: the same product, in register
    tiles where the module doc says so (``b`` then best from :func:`._tiles.padded`), else in row blocks where
    :func:`block_rows` says numpy's BLAS runs it faster so."""
    m, k = a.shape
    n = b.shape[1]
    if uses_tiles(m, k, n, out.dtype) and _tiles.matmul(a, b, out):
        return out
    rows = block_rows(m, k, n, out.dtype)
    if not rows:
        return np.matmul(a, b, out=out)
    for r0 in range(0, m, rows):
        np.matmul(a[r0:r0 + rows], b, out=out[r0:r0 + rows])
    return out


def batched_matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b, out=out)`` for 3-D ``a`` [B, M, K], ``b`` [B, K, N], ``out`` [B, M, N]: in register tiles
    (one call for the whole stack) where :func:`uses_tiles` says so, else one batched ``np.matmul``."""
    if uses_tiles(a.shape[1], a.shape[2], b.shape[2], out.dtype, a.shape[0]) and _tiles.matmul(a, b, out):
        return out
    return np.matmul(a, b, out=out)


def matmul_finished(a: np.ndarray, b: np.ndarray, out: np.ndarray, finish, view, groups: int = 1) -> bool:
    """``out[...] = a @ b`` (2-D, or 3-D stacks) with ``finish`` (a ``_finish.Finish``) applied by the register
    tiles as they store -- no second pass over ``out``; ``view`` lays a tensor shaped like the finish's output out
    like ``out`` (for a residual addend), ``groups``: a stack of that many matrices, one group's channels each.
    False, with nothing written, where that cannot be (the product does not run in tiles, or the tiles cannot apply
    this finish): the caller then multiplies and finishes."""
    batch = a.shape[0] if a.ndim == 3 else 1
    if not uses_tiles(a.shape[-2], a.shape[-1], b.shape[-1], out.dtype, batch, finished=True):
        return False
    tile_finish = finish.tile_finish(batch * b.shape[-1] if groups > 1 else b.shape[-1], view, groups)
    return tile_finish is not None and _tiles.matmul(a, b, out, tile_finish)
