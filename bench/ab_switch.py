#!/usr/bin/env python3
"""In-process A/B of one native-executor optimisation on whole models.

Each model is converted and compiled once for the native device (one BLAS thread); then ``--rounds`` rounds run
it with the optimisation on and off back to back (which side goes first alternates; each side runs ``k`` times,
``k`` making a side take >= 50 ms), and the median of the per-round time ratios on/off is printed with its
p10-p90. Both sides share the process, the compiled plan, the inputs and the machine's state of the moment, so
a few-percent effect shows through the noise of a shared machine that comparing two benchmark runs hides.

Switches (each turns one optimisation off by routing its callers to the path it replaced; docs/performance.md):
  finish       a convolution's bias, fused MUL/ADD vectors and activation in one compiled pass (off: numpy passes)
  short_rows   that pass over rows of under 32 channels taking several rows as one (off: row by row)
  batch_norm   BATCH_NORM's one compiled pass (off: numpy passes over row blocks)
  kn2row       the kn2row convolution (off: Winograd or im2col + GEMM)
  winograd     Winograd's compiled transforms (off: its transforms as GEMMs with the Kronecker matrices)
  shuffle      TRANSPOSE of the last two axes (a channel shuffle) as one compiled loop (off: numpy's copy)
  im2col_block im2col blocks of 512 KiB (off: 2 MiB)
  big_weights  im2col and Winograd blocks of at least twice their weights' bytes (off: 512 KiB / 1 MiB blocks)
  im2col       the compiled im2col for short kernel-row runs (off: numpy's strided copy)
  small_gemm   narrow GEMMs in row blocks that run on OpenBLAS's small-matrix kernel (off: one call each)
  tiles        products in AVX-512 register tiles (accel/tiles.py; off: numpy's BLAS)
  row_finish   Winograd's output transform finishing each output row (off: a finish pass per block)
  direct       convolutions read straight from their padded input in register tiles (off: im2col + GEMM)
  sixth_round  tiles, direct and row_finish together (docs/performance.md, sixth round)
  checked_once a convolution's checks and decoded parameters, and its register tiles' finish table, made once and
               remembered (off: made in every call, as before)
  depthwise_vectors  the depthwise 3x3 convolution in AVX-512 vectors (accel/depthwise_vectors.py; off: numba's
               loop)
  pool_vectors 2x2 and 3x3 max and average pooling in AVX-512 vectors (accel/pool_vectors.py; off: numba's loop)
  softmax_vectors  softmax's row loops in AVX-512 vectors (accel/softmax_vectors.py; off: numba's loops)
  shuffle_vectors  a channel shuffle's transpose in AVX-512 vectors (accel/shuffle_vectors.py; off: numba's loop)
  seventh_round  checked_once, depthwise_vectors, pool_vectors, softmax_vectors and direct_3x3 together
               (docs/performance.md, seventh round; the plan-time "assembly" is measured on its own)
  direct_3x3   3x3 stride-1 layers choosing the direct convolution where it measured fastest (off: the rule's
               choice between Winograd, kn2row and im2col as before it; seventh round)
  numba        every compiled loop (off: NNRT_ONNX_NUMBA=0, the numpy paths)
  residual     residual ADDs fused into the convolution before them (off: a plan compiled without; a plan-time
               switch, so the two sides are two compiled plans of the same model)
  fusion       every fusion into a convolution or BATCH_NORM step: per-channel MUL/ADD and residual ADDs (off: a
               plan compiled without; plan-time)
  assembly     concatenations assembled in place by the convolutions that produce them
               (accel/fusions/concat_assembly.py; off: a plan compiled without; plan-time)
  runners      convolution, pooling and linear-layer steps bound to runners that make only the compiled call
               (accel/runners.py; off: the accelerated kernels picking their path per call; plan-time; eighth round)
  input_transpose  an NCHW image's TRANSPOSE folded into the first convolution, which lays the image out as it
               pads it (off: the TRANSPOSE step; plan-time; eighth round)
  activations  any elementwise activation applied in place after the step before it (accel/fusions/activations.py;
               off: the activation a step of its own; plan-time; issue 27)
  gru_cells    unrolled GRU time steps recognised and run as one compiled loop over time (accel/fusions/gru_cells.py;
               off: the unrolled steps; plan-time; issue 27)
  accel        every fast path: fusions, runners, accelerated kernels (off: the reference plan, the extension config
               nnrt_onnx.reference_plan; plan-time)

The run-time switches measure the accelerated kernels: their plan is compiled without bound runners (which bind
the compiled loops once, so a switch flipped after compiling would not reach them).

    python bench/ab_switch.py SWITCH MODEL.onnx [MODEL.onnx ...] [--rounds 30] [--seed 0]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SWITCHES = ("finish", "short_rows", "batch_norm", "kn2row", "winograd", "shuffle", "im2col_block", "big_weights",
            "im2col", "small_gemm", "tiles", "row_finish", "direct", "sixth_round", "checked_once", "depthwise_vectors",
            "pool_vectors", "softmax_vectors", "shuffle_vectors", "seventh_round", "direct_3x3", "numba", "residual",
            "fusion", "assembly", "runners", "input_transpose", "activations", "gru_cells", "accel")
# switches of AVX-512 kernels (accel/avx512.py): off, their callers take numba's loops
VECTOR_KERNELS = {"depthwise_vectors": ("depthwise_vectors.depthwise_3x3",), "pool_vectors": ("pool_vectors.pool",),
                  "softmax_vectors": ("softmax_vectors.shift_rows", "softmax_vectors.normalise_rows"),
                  "shuffle_vectors": ("shuffle_vectors.swap_last_axes",)}
# the specialisers' bound runners (accel/runners.py): made to decline, the steps run the accelerated kernels
BOUND_RUNNERS = ("nnrt_onnx.accel.conv", "nnrt_onnx.accel.pool", "nnrt_onnx.accel.linear")


def _without_pass(name):
    from nnrt_onnx.accel import fusions

    return tuple(p for p in fusions.PASSES if p.name != name)


# plan-time switches: [(module, attribute, replacement)] set while the "off" plan compiles (a callable replacement
# of a function; a zero-argument factory (``lambda: value``) for other attributes)
PLAN_SWITCHES = {"residual": [("nnrt_onnx.accel.fusions.conv_post_ops", "_post_addend", lambda *_: None)],
                 "fusion": [("nnrt_onnx.accel.fusions.conv_post_ops", "_fusable", lambda *_: False)],
                 "assembly": [("nnrt_onnx.accel.fusions", "PASSES", "without:assemble_concats")],
                 "runners": [(module, "_bound_runner", lambda *_a, **_k: None) for module in BOUND_RUNNERS],
                 "input_transpose": [("nnrt_onnx.accel.fusions", "PASSES", "without:fuse_input_transpose")],
                 "activations": [("nnrt_onnx.accel.fusions", "PASSES", "without:fuse_activations")],
                 "gru_cells": [("nnrt_onnx.accel.fusions", "PASSES", "without:fuse_gru_cells")],
                 "accel": [("nnrt_onnx.runtime.cpu", "fast_paths_on", lambda *_: False)]}


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("switch", choices=SWITCHES)
    p.add_argument("models", nargs="+", type=Path, help=".onnx (or .nnrt) files")
    p.add_argument("--rounds", type=int, default=30, help="interleaved on/off rounds per model (default 30)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    return p.parse_args(argv)


def _setter(switch: str):
    """A function setting the optimisation on (True) or off (False)."""
    from nnrt_onnx.accel import conv, conv_method, winograd
    from nnrt_onnx.accel import finish as _finish
    from nnrt_onnx.accel import gemm as _gemm
    from nnrt_onnx.accel import numba_loops as _accel
    from nnrt_onnx.accel import tiles as _tiles
    from nnrt_onnx.kernels import conv as reference_conv

    def declined(*_args, **_kwargs):
        return False

    if switch == "finish":
        original = _accel.finish_rows
        return lambda on: setattr(_accel, "finish_rows", original if on else declined)
    if switch == "short_rows":
        below = _finish._FLAT_BELOW
        return lambda on: setattr(_finish, "_FLAT_BELOW", below if on else 0)
    if switch == "batch_norm":
        original = _accel.channel_affine
        return lambda on: setattr(_accel, "channel_affine", original if on else declined)
    if switch == "kn2row":
        original = conv_method.kn2row_usable
        return lambda on: setattr(conv_method, "kn2row_usable", original if on else declined)
    if switch == "winograd":
        original = _accel.winograd_transforms
        return lambda on: setattr(_accel, "winograd_transforms", original if on else (lambda: None))
    if switch == "shuffle":
        original = _accel.swap_last_axes
        return lambda on: setattr(_accel, "swap_last_axes", original if on else (lambda *_args: None))
    if switch == "big_weights":
        multiples = {(module, name): getattr(module, name) for module, name in
                     ((conv, "_IM2COL_WEIGHT_MULTIPLE"), (winograd, "_WINO_WEIGHT_MULTIPLE"))}
        return lambda on: [setattr(module, name, value if on else 0) for (module, name), value in multiples.items()]
    if switch == "im2col":
        original = _accel.im2col_rows
        return lambda on: setattr(_accel, "im2col_rows", original if on else declined)
    if switch == "small_gemm":
        original = _gemm.small_kernel_rows
        return lambda on: setattr(_gemm, "small_kernel_rows", original if on else (lambda *_args: 0))
    if switch == "tiles":
        original = _tiles.available
        return lambda on: setattr(_tiles, "available", original if on else declined)
    if switch == "seventh_round":
        setters = [_setter(name) for name in ("checked_once", "depthwise_vectors", "pool_vectors", "softmax_vectors",
                                              "direct_3x3")]
        return lambda on: [setter(on) for setter in setters]
    if switch == "sixth_round":
        setters = [_setter(name) for name in ("tiles", "row_finish", "direct")]
        return lambda on: [setter(on) for setter in setters]
    if switch == "direct":
        original = conv.direct_in_tiles
        return lambda on: setattr(conv, "direct_in_tiles", original if on else declined)
    if switch == "checked_once":
        checked = conv.conv_checked

        def every_time(*args):
            reference_conv._CHECKED.clear()
            _tiles._FINISHES.clear()
            return checked(*args)
        return lambda on: setattr(conv, "conv_checked", checked if on else every_time)
    if switch in VECTOR_KERNELS:
        from nnrt_onnx.accel import avx512 as _avx512

        loaded = {key: _avx512.compiled(*key.split(".")) for key in VECTOR_KERNELS[switch]}
        return lambda on: _avx512._LOADED.update({key: kernel if on else False for key, kernel in loaded.items()})
    if switch == "direct_3x3":
        rule = conv_method.method_3x3
        return lambda on: setattr(conv_method, "method_3x3", rule if on else (
            lambda c, o, pixels, kn2row, direct=False: rule(c, o, pixels, kn2row, False)))
    if switch == "row_finish":
        original = _finish.Finish.row_operands
        return lambda on: setattr(_finish.Finish, "row_operands", original if on else (lambda *_args: None))
    if switch == "im2col_block":
        return lambda on: setattr(conv, "_IM2COL_BLOCK_BYTES", (1 << 19) if on else (1 << 21))

    def numba(on):
        if on:
            os.environ.pop("NNRT_ONNX_NUMBA", None)
        else:
            os.environ["NNRT_ONNX_NUMBA"] = "0"
    return numba


def _executor(model):
    from nnrt_onnx.compilation import Compilation
    from nnrt_onnx.executor import Executor
    from nnrt_onnx.runtime.threads import THREADS_EXTENSION

    compilation = Compilation(model)
    compilation.set_device(1)
    compilation.add_extension_config(THREADS_EXTENSION, b"1")
    compilation.build()
    return Executor(compilation)


def _sides(switch: str, model):
    """(set_on, {True: executor, False: executor}): a run-time switch toggles one plan, a plan-time switch
    compiles the model twice."""
    if switch not in PLAN_SWITCHES:
        executor = _patched_executor(model, PLAN_SWITCHES["runners"])  # (see the module doc)
        return _setter(switch), {True: executor, False: executor}
    off = _patched_executor(model, PLAN_SWITCHES[switch])  # (first: the "on" plan does not gain from being first)
    on = _executor(model)
    return (lambda _on: None), {True: on, False: off}


def _patched_executor(model, patches):
    """The model compiled while each (module, attribute, replacement) of ``patches`` is in place."""
    import importlib

    saved = []
    for module, name, replacement in patches:
        holder = importlib.import_module(module)
        saved.append((holder, name, getattr(holder, name)))
        if isinstance(replacement, str) and replacement.startswith("without:"):
            replacement = _without_pass(replacement[len("without:"):])
        setattr(holder, name, replacement)
    try:
        return _executor(model)
    finally:
        for holder, name, original in reversed(saved):
            setattr(holder, name, original)


def _ab(path: Path, switch: str, rounds: int, seed: int) -> list[float]:
    from nnrt_onnx.workflows.inference import load_any, random_inputs

    model = load_any(path)
    set_on, executors = _sides(switch, model)
    inputs = random_inputs(model, seed)

    def timed(on: bool, k: int) -> float:
        set_on(on)
        executor = executors[on]
        start = time.perf_counter()
        for _ in range(k):
            executor.run_arrays(list(inputs))
        return (time.perf_counter() - start) / k

    for on in (True, False, True):  # warm both paths (compilation of the loops, packed weights)
        timed(on, 1)
    k = max(1, int(0.05 / timed(True, 1)))
    ratios = []
    for r in range(rounds):
        seconds = {on: timed(on, k) for on in ((True, False) if r % 2 else (False, True))}
        ratios.append(seconds[True] / seconds[False])
    set_on(True)
    return ratios


def main(argv=None) -> int:
    args = _parse(argv)
    print(f"{args.switch}: time with it / time without it, median of {args.rounds} interleaved rounds (p10-p90)")
    for path in args.models:
        ratios = _ab(path, args.switch, args.rounds, args.seed)
        deciles = statistics.quantiles(ratios, n=10)
        print(f"  {path.name:40s} {statistics.median(ratios):.3f}  ({deciles[0]:.3f}-{deciles[-1]:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
