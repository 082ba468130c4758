"""Convolution by kn2row for stride-1 layers: one GEMM of the input pixels with every tap's weights, then a
compiled gather (numba) adding each output pixel's taps, in blocks of output rows; and its runner bound to a plan
step. Within float32 rounding of the direct sum (``accel.contract``)."""
from __future__ import annotations

import numpy as np

from ..kernels import packed
from . import gemm, numba_loops, runners, tiles
from .finish import Finish
from .workspace import scratch


def kn2row_usable(x, w, strides, dilation, group) -> bool:
    """kn2row (below) can run: a float stride-1 undilated convolution of one group with a kernel larger than 1x1,
    and the compiled gather."""
    o, kh, kw, c = w.shape
    return (x.dtype in (np.float32, np.float64) and w.dtype == x.dtype and group == 1 and kh * kw > 1
            and tuple(strides) == (1, 1) and tuple(dilation) == (1, 1) and numba_loops.enabled())


def _kn2row_weights(w: np.ndarray):
    """[O, kH, kW, C] -> ([C, kH * kW * O] with rows padded for the register tiles, all weights finite)."""
    o, kh, kw, c = w.shape
    return tiles.padded(w.transpose(3, 1, 2, 0).reshape(c, kh * kw * o)), bool(np.isfinite(w).all())


def _kn2row_rows(width: int, oh: int, kh: int, taps: int, itemsize: int) -> int:
    """Output rows per block of :func:`_kn2row`: the block's products (its input rows) about _KN2ROW_BLOCK_BYTES."""
    return max(1, min(oh, _KN2ROW_BLOCK_BYTES // max(1, width * taps * itemsize) - (kh - 1)))


def kn2row(x, w, pads, out_size, bias, activation, out, post) -> bool:
    """Stride-1 convolution as one GEMM of the input pixels [H * W, C] with every tap's weights [C, kH * kW * O]
    (N = kH * kW * O keeps the GEMM efficient where O alone is small; no im2col copy), then a compiled gather adding,
    per output pixel, the products of the taps inside the input; in blocks of output rows (their input rows
    and a halo) so the products stay cache-sized. Taps in the padding are skipped, which is exact for finite
    weights (a padded zero times a weight adds +-0); with an inf/NaN weight (0 * inf = NaN) it declines: False."""
    wk, finite = packed(w, "kn2row", _kn2row_weights)
    if not finite:
        return False
    n, h, wd, c = x.shape
    o, kh, kw, _ = w.shape
    oh, ow = out_size
    pt, _, pl, _ = pads
    x = np.ascontiguousarray(x)
    taps = kh * kw * o
    rows = _kn2row_rows(wd, oh, kh, taps, x.dtype.itemsize)
    finish = Finish(bias, post, activation)
    z_full = scratch("kn2row", (min(h, rows + kh - 1), wd, kh, kw, o), x.dtype)
    for b in range(n):
        for r0 in range(0, oh, rows):
            r1 = min(oh, r0 + rows)
            i0, i1 = max(0, r0 - pt), min(h, r1 - 1 - pt + kh)  # the input rows the block's windows touch
            block = out[b, r0:r1]
            if i1 <= i0:  # every window in the padding
                block[...] = 0
            else:
                z = z_full[: i1 - i0]
                gemm.matmul_into(x[b, i0:i1].reshape(-1, c), wk, z.reshape(-1, taps))
                if not numba_loops.kn2row_gather(z, block, r0 - pt - i0, -pl):
                    return False  # (only ever at the first block: numba off, or ``out`` of another layout)
            finish(block, (b, slice(r0, r1)))
    return True


_KN2ROW_BLOCK_BYTES = 1 << 22  # products of a block of input rows (4 MiB: DenseNet's 56x56 layers in one block)


def kn2row_runner(general, x_shape, weight, bias, pads, out_shape, post, activation: int, addends: int):
    """:func:`kn2row` bound to one plan step (``runners.kn2row``), or None where it would decline (a
    non-finite weight), a block would lie wholly in the padding, or the finish has several residuals."""
    wk, finite = packed(weight, "kn2row", _kn2row_weights)
    if not finite or addends > 1:
        return None
    n, h, wd, c = x_shape
    _, oh, ow, o = out_shape
    _, kh, kw, _ = weight.shape
    pt = pads[0]
    taps = kh * kw * o
    rows = _kn2row_rows(wd, oh, kh, taps, 4)

    def product(m: int):  # gemm.matmul_into's choice for the block's [m, C] x [C, taps]
        tiled = tiles.bound_product(wk, None) if gemm.uses_tiles(m, c, taps, np.float32) else None
        if tiled is not None:
            return lambda a, z: tiled(a[np.newaxis], z[np.newaxis], None)
        return lambda a, z: gemm.matmul_into(a, wk, z)

    blocks = []
    for b in range(n):
        for r0 in range(0, oh, rows):
            r1 = min(oh, r0 + rows)
            i0, i1 = max(0, r0 - pt), min(h, r1 - 1 - pt + kh)
            if i1 <= i0:
                return None
            blocks.append((b, r0, r1, i0, i1, product((i1 - i0) * wd)))
    operands = numba_loops.finish_arrays(bias, tuple((name, None if name == "addend" else v) for name, v in post), o,
                                    np.float32)
    return runners.kn2row(general, x_shape, out_shape, pads, blocks, (kh, kw), operands, activation,
                                bool(addends))


__all__ = ["kn2row", "kn2row_runner", "kn2row_usable"]
