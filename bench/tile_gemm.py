#!/usr/bin/env python3
"""Where do the register tiles beat numpy's BLAS? The sweep behind ``_tiles.wanted`` (nnrt_onnx/accel/tiles.py).

For each K x N of the table and each M given, the float32 product [M, K] x [K, N] is timed, with one BLAS thread,
as the tiles run it (``_tiles.matmul``, B padded) and as the executor would run it without them
(``_gemm.matmul_into`` minus the tiles: one ``np.matmul``, or row blocks for OpenBLAS's small-matrix kernel where
``_gemm``'s rule says so). With ``--stack S`` each cell is a stack of S products of M rows instead (Winograd's 16
planes: one call of the tiles against one batched ``np.matmul``). With ``--finish`` both sides also add a bias and
apply ReLU, as a convolution does: the tiles as they store, the BLAS side with the compiled finish pass after the
product (``_finish.Finish``) -- the comparison behind ``_gemm.matmul_finished``. A cell is the median over ``--pairs``
interleaved pairs of the ratio tiles / BLAS (below 1: the tiles are faster). Re-run it on another CPU before
trusting the rule there.

    python bench/tile_gemm.py [--m 196,784,3136,12544] [--k 3,16,...] [--n 2,8,...] [--stack 0] [--finish] [--pairs 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_blocks import median_seconds  # noqa: E402  (the same timer)

KS = (3, 16, 27, 32, 64, 128, 147, 288, 576, 1152)
NS = (2, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256)


def _ratio(m: int, k: int, n: int, stack: int, finish: bool, pairs: int, rng) -> float:
    from nnrt_onnx.accel import gemm as _gemm
    from nnrt_onnx.accel import tiles as _tiles
    from nnrt_onnx.accel.finish import Finish

    shape = (stack,) if stack else ()
    a = rng.standard_normal(shape + (m, k)).astype(np.float32)
    b = _tiles.padded(rng.standard_normal(shape + (k, n)).astype(np.float32))
    out = np.empty(shape + (m, n), np.float32)
    bias = rng.standard_normal(n).astype(np.float32) if finish else None
    finishing = Finish(bias, (), 1 if finish else 0)
    tiles_on = _tiles.available

    tile_finish = _tiles.tile_finish(n, bias, 1) if finish else None

    def with_tiles():
        assert _tiles.matmul(a, b, out, tile_finish)

    def with_blas():
        _tiles.available = lambda: False  # _gemm's own path without the tiles
        try:
            (_gemm.batched_matmul_into if stack else _gemm.matmul_into)(a, b, out)
        finally:
            _tiles.available = tiles_on
        finishing(out)

    with_tiles()
    return statistics.median(median_seconds(with_tiles, 7) / median_seconds(with_blas, 7) for _ in range(pairs))


def main(argv=None) -> int:
    from nnrt_onnx.accel import tiles as _tiles

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--m", default="196,784,3136,12544", help="comma-separated row counts M")
    p.add_argument("--stack", type=int, default=0, help="products per call (0: one 2-D product)")
    p.add_argument("--finish", action="store_true", help="with a bias and ReLU (fused in the tiles, a pass for BLAS)")
    p.add_argument("--pairs", type=int, default=3, help="interleaved pairs per cell (default 3)")
    p.add_argument("--k", default=",".join(map(str, KS)), help="comma-separated depths K")
    p.add_argument("--n", default=",".join(map(str, NS)), help="comma-separated widths N")
    args = p.parse_args(argv)
    if not _tiles.available():
        print("the register tiles cannot run here (no numba, or no AVX-512)")
        return 1
    blas = [(i.get("internal_api"), i.get("version"), i.get("architecture")) for i in threadpool_info()
            if i.get("user_api") == "blas"]
    print(f"BLAS: {blas}; cells: time of the tiles / numpy's BLAS path (median of {args.pairs} pairs)"
          + (f"; stacks of {args.stack}" if args.stack else "") + ("; with bias and ReLU" if args.finish else ""))
    rng = np.random.default_rng(0)
    ks, ns = ([int(v) for v in text.split(",")] for text in (args.k, args.n))
    with threadpool_limits(1):
        for m in (int(v) for v in args.m.split(",")):
            print(f"\nM = {m}" + "".join(f"{'N=' + str(n):>7s}" for n in ns))
            for k in ks:
                cells = [_ratio(m, k, n, args.stack, args.finish, args.pairs, rng) for n in ns]
                print(f"K = {k:5d}" + "".join(f"{c:7.2f}" for c in cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
