#!/usr/bin/env python3
"""Where do row blocks for OpenBLAS's small-matrix kernel pay? The sweep behind ``nnrt_onnx/accel/gemm.py``.

For each K x N of the table and each M given, the product [M, K] x [K, N] (float32, one BLAS thread) is timed as
one ``np.matmul`` and as row blocks of 1e6 // (K N) rows (each block under OpenBLAS's small-kernel limit of
M N K <= 1e6); the cell is the median over ``--pairs`` interleaved pairs of the ratio blocks / one call (below 1:
blocks faster). Cells where a block would have fewer than 16 rows, or the whole product is one block, are "-".
Re-run it on another CPU before trusting ``_gemm``'s rule there.

    python bench/gemm_blocks.py [--m 784,3136,12544] [--pairs 5]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

KS = (16, 27, 32, 48, 64, 96, 128, 147, 192, 288, 384, 576)
NS = (8, 16, 24, 32, 48, 64, 96, 128, 144, 192, 256)
LIMIT = 1_000_000


def median_seconds(fn, runs: int = 9) -> float:
    """The median wall time of ``runs`` calls of ``fn`` (also bench/tile_gemm.py's timer)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _ratio(m: int, k: int, n: int, pairs: int, rng) -> float | None:
    rows = LIMIT // (k * n)
    if rows < 16 or rows >= m:
        return None
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    out = np.empty((m, n), np.float32)

    def one_call():
        np.matmul(a, b, out=out)

    def blocks():
        for r0 in range(0, m, rows):
            np.matmul(a[r0:r0 + rows], b, out=out[r0:r0 + rows])

    return statistics.median(median_seconds(blocks) / median_seconds(one_call) for _ in range(pairs))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--m", default="784,3136,12544", help="comma-separated row counts M (default 784,3136,12544)")
    p.add_argument("--pairs", type=int, default=3, help="interleaved pairs per cell (default 3)")
    args = p.parse_args(argv)
    blas = [(i.get("internal_api"), i.get("version"), i.get("architecture")) for i in threadpool_info()
            if i.get("user_api") == "blas"]
    print(f"BLAS: {blas}; cells: time of small-kernel row blocks / one call (median of {args.pairs} pairs)")
    rng = np.random.default_rng(0)
    with threadpool_limits(1, user_api="blas"):
        for m in (int(v) for v in args.m.split(",")):
            print(f"\nM = {m}\n K \\ N " + " ".join(f"{n:>5}" for n in NS))
            for k in KS:
                cells = (_ratio(m, k, n, args.pairs, rng) for n in NS)
                print(f"{k:>6} " + " ".join("    -" if c is None else f"{c:5.2f}" for c in cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
