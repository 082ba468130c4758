#!/usr/bin/env python3
"""Which convolution method is fastest for each 3x3 stride-1 float32 layer shape? The sweep behind the rule of
``nnrt_onnx/accel/conv_method.py`` (``method_3x3``).

For each output size H x H, input channels C and output channels O of the grid (layers of 2e5..4e8 multiply-adds),
the layer runs through the kernel with each method forced -- im2col + GEMM (or, where it runs, the direct
convolution in register tiles: the method None stands for both), kn2row, Winograd F(2x2, 3x3) --
interleaved over ``--rounds`` rounds (each side >= 10 ms per round); printed: the method the rule chooses, the
None's time, and kn2row's and Winograd's median time relative to it. The summary line gives the geometric mean
over the grid of (the chosen method's time / the fastest method's time): 1.0 means the rule always picks the fastest.
Re-run it on another CPU before trusting the rule there.

    python bench/conv_methods.py [--rounds 5] [--sizes 7,14,28,56,112] [--channels 8,16,...,256]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CHANNELS = (8, 16, 24, 32, 64, 96, 128, 256)
METHODS = (None, "kn2row", "winograd")


def _timed(conv, choose, method, run, count: int) -> float:
    conv.special_method = lambda *_args: method
    try:
        start = time.perf_counter()
        for _ in range(count):
            run()
        return (time.perf_counter() - start) / count
    finally:
        conv.special_method = choose


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds per layer (default 5)")
    p.add_argument("--sizes", default="7,14,28,56,112", help="output sizes H (H x H), comma-separated")
    p.add_argument("--channels", default=",".join(map(str, CHANNELS)), help="input and output channel counts")
    args = p.parse_args(argv)

    import numpy as np
    from threadpoolctl import threadpool_limits

    from nnrt_onnx.accel import conv
    from nnrt_onnx.accel import numba_loops as _accel
    from nnrt_onnx.accel.direct import direct_possible
    from nnrt_onnx.kernels import register_constant

    if not _accel.enabled():
        print("numba is off or not installed: kn2row and the compiled Winograd transforms are unavailable")
        return 1
    choose = conv.special_method
    losses = []
    rng = np.random.default_rng(0)
    with threadpool_limits(1, user_api="blas"):
        for size in (int(v) for v in args.sizes.split(",")):
            channels = [int(v) for v in args.channels.split(",")]
            for c in channels:
                for o in channels:
                    if not 2e5 <= size * size * c * o * 9 <= 4e8:
                        continue
                    x = rng.standard_normal((1, size, size, c)).astype(np.float32)
                    w = rng.standard_normal((o, 3, 3, c)).astype(np.float32)
                    w.setflags(write=False)
                    register_constant(w)  # (packed weights cached, as for a compiled model's constants)
                    bias = np.zeros(o, np.float32)

                    def run():
                        conv._conv_core(x, w, (1, 1), (1, 1), (1, 1, 1, 1), 1, (size, size), bias, 1)

                    for method in METHODS:
                        _timed(conv, choose, method, run, 1)  # warm: packed weights, compiled loops
                    count = max(1, int(0.01 / max(1e-5, _timed(conv, choose, None, run, 1))))
                    times = {method: [] for method in METHODS}
                    for r in range(args.rounds):
                        for method in (METHODS if r % 2 else METHODS[::-1]):
                            times[method].append(_timed(conv, choose, method, run, count))
                    median = {m: statistics.median(v) for m, v in times.items()}
                    chosen = choose(x, w, (1, 1), (1, 1), 1, (size, size))
                    direct = direct_possible(x, w, 1, (size, size))
                    losses.append(median[chosen] / min(median.values()))
                    none = "direct" if direct else "im2col"
                    print(f"{size:>3}x{size:<3} {c:>3} -> {o:<3} chosen {str(chosen):8s} {none} "
                          f"{median[None] * 1e3:7.3f} ms  kn2row {median['kn2row'] / median[None]:.2f}  "
                          f"winograd {median['winograd'] / median[None]:.2f}", flush=True)
    print(f"{len(losses)} layers: chosen / fastest, geometric mean {statistics.geometric_mean(losses):.3f}, "
          f"worst {max(losses):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
