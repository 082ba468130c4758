"""Float32 matrix products in AVX-512 register tiles: the narrow GEMMs of convolutions, faster than numpy's BLAS.

OpenBLAS runs the products of convolutions -- many rows, few columns (N = 16-64: a stem's [12544, 27] x [27, 32],
MobileNetV2's projections to 24 channels, ShuffleNet's 34-channel groups) -- at 50-90 GFLOPS on one core; its
kernels are tuned for large square products. Here each output tile of R rows x V vectors of 16 floats (6 x 4,
8 x 3, 12 x 2 or 14 x 1: 24-28 accumulators of the 32 vector registers) is one loop over K that keeps every
accumulator in a register: per k, V loads of B's row, then per tile row one broadcast of A's value and V fused
multiply-adds. The loop is written in LLVM IR (numba intrinsics emitting ``<16 x float>`` vectors and
``llvm.fma``), because numba's auto-vectoriser does not keep a register tile (a numba loop nest was 2.5-4x slower
than OpenBLAS, docs/performance.md, fifth round).

Because the kernel is ours, two things BLAS cannot do come with it: the convolution's finish (bias, the plan's
MUL/ADD vectors, a residual, the activation: :class:`TileFinish`) is applied to each tile before it is stored, so
the output is written once; and :func:`gathered_matmul` reads A's columns at given offsets from each row's start,
so a convolution runs straight from its padded input with no im2col copy. Measured against numpy's single-threaded
OpenBLAS (``bench/tile_gemm.py``; docs/performance.md, sixth round): bare products 0.56-0.9x its time for N = 16-64
off its small-matrix kernel's shapes, but up to 1.5x on them and for N > 64; with a finish against "BLAS + the
finish pass", 0.34-0.9x for N >= 8 up to K N = 32768 (sixth round), and re-measured for wide N (eighth round:
``bench/tile_gemm.py --finish --n 96,192,384,960``) 0.51-0.98x up to K N = 65536 and 0.55-0.91x at any K N for
M = 49 rows (1.0-1.4x only for larger M and K N). :func:`wanted` is that rule.

The driver blocks like a small GEMM library: K in blocks of at most 256 (a 64-column panel's block of B, 64 KiB,
stays in L1/L2; later blocks start from the stored sums), rows in chunks whose A block stays in L2, columns in
panels of 64 (the last vector of a row masked to N). A may have any row stride (a grouped convolution's channel
slice), the output too (a slice of a concatenation); B's rows are read in whole vectors, so B must be readable up
to ``16 * ceil(N / 16)`` columns: :func:`padded` makes such a matrix, and :func:`matmul` checks the buffer's bounds
before it reads anything else.

Products are summed in K order with FMA (one rounding per step), like OpenBLAS's AVX-512 kernels; results agree
with numpy's to float32 rounding, not bit for bit (the finish is bit-identical to the finish pass). Only with
numba, an AVX-512 host (``avx512f``; without it the 16-lane vectors would spill), and ``NNRT_ONNX_NUMBA`` not 0;
elsewhere (or if the tiles fail to compile: a warning) :func:`matmul` returns False and the caller uses numpy. The
compiled driver (:mod:`._tile_kernels`, loaded by :mod:`._avx512`) takes about 7 s to compile the first time, then
loads from numba's cache.
"""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from . import avx512 as _avx512
from .tile_layout import (
    FINISH_ACTIVATION_SHIFT,
    FINISH_ADD,
    FINISH_ADDEND_SHIFT,
    FINISH_BIAS,
    FINISH_MULTIPLY,
    FINISH_VECTOR_SHIFT,
    LANES,
)

K_BLOCK = 256  # at most this many k per pass over a tile (a 64-column panel's block of B: 64 KiB)
CHUNK_BYTES = 1 << 17  # rows per chunk: the chunk's A block (rows x K block floats) about this size
MIN_COLUMNS, MAX_COLUMNS = 16, 64  # N: narrower wastes most lanes; wider, OpenBLAS's packing catches up
MIN_DEPTH = 8  # K: shorter products are all load and store
# a call's M * K * N (a stack's in all): smaller bare products pay more in call overhead; and a model whose products
# are all smaller (a toy CNN) gains a fraction of a millisecond, not worth the tiles' 7 s first compile
MIN_MULTIPLY_ADDS = 1 << 20
MIN_FINISHED_MULTIPLY_ADDS = 1 << 19  # with a finish: BERT-tiny's [128, 64] x [64, 64] + bias, 0.73x BLAS + add
# with a finish (bias, activation) fused into the stores, against BLAS and the finish's pass over the output:
MIN_FINISHED_COLUMNS = 8
MAX_FINISHED_KN = 1 << 16  # wider than MAX_COLUMNS while K * N is at most this
MAX_FINISHED_ROWS = 64  # ... or at any K and N for at most this many rows (M, all products of the call together)

_PADDED: dict[int, weakref.ref] = {}  # id -> the views made by padded()
_COUNTING: dict[int, np.ndarray] = {}  # k -> 0, 1, ..., k - 1
_FINISHES: dict[tuple, tuple] = {}  # tile_finish's tables of read-only arrays, by their ids (and the arrays)
_FINISHES_LIMIT = 1024
# the finish's arguments without a finish (their masked loads never read them)
_NO_TABLE = np.zeros((1, 3, 1), np.float32)
_NO_ADDEND = np.zeros((1, 1, 1), np.float32)


def wanted(multiply_adds: int, k: int, n: int, finished: bool = False, max_kn: int = 0) -> bool:
    """Whether a call of float32 products [M, k] x [k, n] (``multiply_adds``: M k n over the whole call) is one the
    tiles run faster than single-threaded OpenBLAS, by shape (``bench/tile_gemm.py``, the module doc); with
    ``finished``, where the tiles also apply a bias and activation that BLAS would leave to a pass over the
    output (which makes the tiles 0.35-0.9x the time on most shapes, even on products they multiply slower).
    At least MIN_MULTIPLY_ADDS per call (MIN_FINISHED_MULTIPLY_ADDS with a finish). ``max_kn``: another bound on
    K N for finished products than MAX_FINISHED_KN (a caller that saves more than the finish pass: the direct
    convolution, its im2col copy).
    Products OpenBLAS runs on its small-matrix kernel are the caller's to exclude (``_gemm.uses_tiles``)."""
    if multiply_adds < (MIN_FINISHED_MULTIPLY_ADDS if finished else MIN_MULTIPLY_ADDS) or k < MIN_DEPTH:
        return False
    if finished:
        return n >= MIN_FINISHED_COLUMNS and (n <= MAX_COLUMNS or k * n <= (max_kn or MAX_FINISHED_KN)
                                              or multiply_adds <= MAX_FINISHED_ROWS * k * n)
    return MIN_COLUMNS <= n <= MAX_COLUMNS


def padded_columns(n: int) -> int:
    return -(-n // LANES) * LANES


def padded(b: np.ndarray) -> np.ndarray:
    """``b`` [..., K, N] as a view of a zero-padded [..., K, 16 * ceil(N / 16)] copy: the same values, each matrix
    readable by the tiles' whole-vector loads. The view is remembered (while it lives), so that :func:`matmul`
    skips the bounds check for it."""
    n = b.shape[-1]
    storage = np.zeros(b.shape[:-1] + (padded_columns(n),), dtype=b.dtype)
    storage[..., :n] = b
    view = storage[..., :n]
    key = id(view)
    _PADDED[key] = weakref.ref(view, lambda _, key=key: _PADDED.pop(key, None))
    return view


def _driver():
    """The compiled driver, or None (no numba, no AVX-512, switched off: :mod:`._avx512`)."""
    return _avx512.compiled("tile_kernels", "driver")


def available() -> bool:
    return _driver() is not None


def _buffer_end(array: np.ndarray) -> int:
    """The address just past the memory ``array`` lives in (the owning array's buffer)."""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root.flags.c_contiguous or root.flags.f_contiguous:
        return root.__array_interface__["data"][0] + root.nbytes
    from numpy.lib.array_utils import byte_bounds
    return byte_bounds(root)[1]


class TileFinish(NamedTuple):
    """A finish the tiles apply as they store (:func:`tile_finish` makes one)."""

    table: np.ndarray  # [B or 1, 3, N] float32: the bias, then two per-column vectors
    code: int  # _tile_layout's FINISH_* bits
    addend: np.ndarray | None  # [B or 1, M, N], laid out like the product's output: a residual to add


def tile_finish(columns: int, bias: np.ndarray | None = None, activation: int = 0, vectors=(),
                addend: np.ndarray | None = None, groups: int = 1) -> TileFinish | None:
    """The finish ``+ bias``, then each of ``vectors`` (at most two ("mul" | "add", [N] vector) pairs, in order),
    then ``+ addend`` (a float32 array laid out like the product's output, 2-D or a 3-D stack), then
    ``activation`` (0 none, 1 ReLU, 2 ReLU6) -- ``_accel.finish_rows``' operations in its order -- for products
    of ``columns`` output columns in all (``groups`` products of columns / groups each, one group's slice of every
    vector: a grouped convolution); None where the tiles cannot apply it (more vectors, another dtype)."""
    if len(vectors) > 2 or activation not in (0, 1, 2) or columns % groups:
        return None
    listed = [bias] + [vector for _, vector in vectors]
    # a compiled model's bias and vectors are the same read-only arrays in every run: their table is made once
    constant = all(v is None or not v.flags.writeable for v in listed)
    key = (columns, groups, activation, addend is None) + tuple(id(v) for v in listed) + tuple(n for n, _ in vectors)
    made = _FINISHES.get(key) if constant else None
    if made is not None and all(a is b for a, b in zip(made[0], listed)):
        table, code = made[1]
        if addend is not None:
            addend = addend if addend.ndim == 3 else addend[np.newaxis]
            if addend.dtype != np.float32:
                return None
        return TileFinish(table, code, addend)
    if any(v is not None and (v.dtype != np.float32 or v.shape != (columns,)) for v in listed):
        return None
    table = np.zeros((3, columns), np.float32)
    code = activation << FINISH_ACTIVATION_SHIFT
    if bias is not None:
        table[0] = bias
        code |= FINISH_BIAS
    for slot, (name, vector) in enumerate(vectors):
        if name not in ("mul", "add"):
            return None
        table[1 + slot] = vector
        code |= (FINISH_MULTIPLY if name == "mul" else FINISH_ADD) << FINISH_VECTOR_SHIFT[slot]
    if addend is not None:
        if addend.dtype != np.float32:
            return None
        addend = addend if addend.ndim == 3 else addend[np.newaxis]
        code |= 1 << FINISH_ADDEND_SHIFT
    table = np.ascontiguousarray(table.reshape(3, groups, columns // groups).transpose(1, 0, 2))
    table.flags.writeable = False
    if constant:
        if len(_FINISHES) >= _FINISHES_LIMIT:
            _FINISHES.clear()
        _FINISHES[key] = (listed, (table, code))  # (holding the arrays keeps their ids from being reused)
    return TileFinish(table, code, addend)


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray, finish: TileFinish | None = None) -> bool:
    """``out[...] = a @ b`` for float32 matrices (2-D) or stacks of them (3-D, one product per matrix) with unit
    column strides (rows and matrices may be strided), in register tiles, each tile finished (``finish``, see
    :func:`tile_finish`) before it is stored -- bit-identical to ``_accel.finish_rows`` after the product. False
    (``out`` untouched) where the tiles cannot run: no driver, another dtype or layout, B not readable in whole
    vectors (see :func:`padded`), ``out`` overlapping an operand, an empty product."""
    if a.ndim == 2 and b.ndim == 2 and out.ndim == 2:
        a, out = a[np.newaxis], out[np.newaxis]
    elif not (a.ndim == b.ndim == out.ndim == 3 and b.shape[0] == a.shape[0]):
        return False
    return _run(a, None, b, out, finish)


def gathered_matmul(windows: np.ndarray, columns: np.ndarray, b: np.ndarray, out: np.ndarray,
                    finish: TileFinish | None = None) -> bool:
    """:func:`matmul` of the matrices ``windows[p][:, columns]`` without making them: ``windows`` [P, M, S] is a
    float32 view whose rows start where each row of A's values lie (a convolution: each output pixel's window in
    its padded input), ``columns`` (int64 [K], each in [0, S)) the offset of A's column k in such a row; ``b``
    [K, N] (or [P, K, N]). A convolution straight from its input, without an im2col copy."""
    if windows.ndim != 3 or out.ndim != 3 or columns.dtype != np.int64 or columns.ndim != 1:
        return False
    if not columns.size or columns.min() < 0 or columns.max() >= windows.shape[2]:
        return False
    return _run(windows, np.ascontiguousarray(columns), b if b.ndim == 3 else b[np.newaxis], out, finish)


def _counting(k: int) -> np.ndarray:
    """0, 1, ..., k - 1: the columns of a plain product (cached)."""
    columns = _COUNTING.get(k)
    if columns is None:
        columns = np.arange(k, dtype=np.int64)
        columns.flags.writeable = False
        if len(_COUNTING) < 4096:
            _COUNTING[k] = columns
    return columns


def _strided_ok(array: np.ndarray) -> bool:
    strides = array.strides
    return strides[2] == 4 and strides[1] >= 0 and strides[0] >= 0 and not strides[1] % 4 and not strides[0] % 4


def _run(a, columns, b, out, finish) -> bool:
    made = _PADDED.get(id(b))
    made = made is not None and made() is b  # padded() made b: its rows are readable in whole vectors
    if b.ndim == 2:
        b = b[np.newaxis]
    batch, m = a.shape[:2]
    k = a.shape[2] if columns is None else columns.shape[0]
    n = b.shape[2]
    if (a.dtype != np.float32 or b.dtype != np.float32 or out.dtype != np.float32 or b.shape[0] not in (1, batch)
            or b.shape[1] != k or out.shape != (batch, m, n) or not (batch and m and k and n)):
        return False
    if not (_strided_ok(a) and _strided_ok(b) and _strided_ok(out)):
        return False
    if not out.flags.writeable or np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return False
    if not made:
        last_row = b.__array_interface__["data"][0] + (b.shape[0] - 1) * b.strides[0] + (k - 1) * b.strides[1]
        if last_row + 4 * padded_columns(n) > _buffer_end(b):  # whole-vector loads of the last row stay inside
            return False
    table, code, addend = finish if finish is not None else (_NO_TABLE, 0, None)
    if finish is not None and (table.dtype != np.float32 or table.shape not in ((batch, 3, n), (1, 3, n))
                               or not _strided_ok(table)):
        return False
    if addend is None:
        addend = _NO_ADDEND
    elif (addend.dtype != np.float32 or addend.shape not in ((batch, m, n), (1, m, n)) or not _strided_ok(addend)
          or np.may_share_memory(out, addend)):
        return False
    driver = _driver()
    if driver is None:
        return False
    driver(a, b, out, table, code, _counting(k) if columns is None else columns, addend, columns is not None,
           K_BLOCK, CHUNK_BYTES)
    return True


def bound_product(b: np.ndarray, finish: TileFinish | None, columns: np.ndarray | None = None):
    """The products of :func:`matmul` (``columns`` None) or :func:`gathered_matmul` with the right operand ``b``
    [K, N] or [P, K, N] (from :func:`padded`) and the finish fixed, checked once: ``run(a, out, addend)`` with 3-D
    ``a`` [P, M, K] (windows [P, M, S] when gathered), ``out`` [P, M, N] and the finish's addend [P, M, N] (None
    without one) -- the driver call alone, for an execution plan's step whose layouts its caller has checked
    (float32, unit column strides, the shapes above, ``out`` not overlapping the others: nothing here checks
    them). None where the tiles cannot run or ``b``/the finish do not qualify."""
    made = _PADDED.get(id(b))
    driver = _driver()
    if driver is None or made is None or made() is not b or b.ndim not in (2, 3) or b.dtype != np.float32:
        return None
    b3 = b if b.ndim == 3 else b[np.newaxis]
    k, n = b3.shape[1:]
    gathered = columns is not None
    if gathered:
        if columns.dtype != np.int64 or columns.shape != (k,) or columns.min() < 0:
            return None
        columns = np.ascontiguousarray(columns)
    else:
        columns = _counting(k)
    table, code, addend = finish if finish is not None else (_NO_TABLE, 0, None)
    if finish is not None and (table.dtype != np.float32 or table.shape not in ((1, 3, n), (b3.shape[0], 3, n))
                               or not _strided_ok(table)):
        return None
    expects_addend = addend is not None

    def run(a: np.ndarray, out: np.ndarray, addend: np.ndarray | None) -> None:
        driver(a, b3, out, table, code, columns, addend if expects_addend else _NO_ADDEND, gathered, K_BLOCK,
               CHUNK_BYTES)

    return run


__all__ = ["TileFinish", "available", "bound_product", "gathered_matmul", "matmul", "tile_finish", "padded",
           "padded_columns", "wanted"]
