"""Convolution by Winograd's F(2x2, 3x3) (Lavin & Gray 2015) for stride-1 3x3 float32 layers: compiled input and
output transforms (numba) around 16 products (register tiles or BLAS), else the transforms as GEMMs; and its
runner bound to a plan step. Within float32 rounding of the direct sum (the transforms reorder the arithmetic;
``accel.contract``)."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..kernels import packed
from . import gemm, numba_loops, runners, tiles
from .finish import Finish
from .workspace import scratch

# channel pair instead of 36. The tile transforms are GEMMs with the Kronecker products of the transform matrices
# (V = (B^T x B^T) d, Y = (A^T x A^T) M): their entries are 0 and +-1, so they are exact; the weight transform
# U = (G x G) g (entries 0, +-1/2, +-1/4) is computed once per weight in float64.
_WINO_BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64)
_WINO_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64)
_WINO_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)
_WINO_KB = np.kron(_WINO_BT, _WINO_BT).astype(np.float32)  # [16, 16]
_WINO_KA = np.kron(_WINO_AT, _WINO_AT).astype(np.float32)  # [4, 16]
_WINO_KG = np.kron(_WINO_G, _WINO_G)  # [16, 9]
_WINO_BLOCK_BYTES = 1 << 20  # tile rows per pass: the transformed tiles of a block stay in L2
# ... but at least this many times the transformed weights' bytes: OpenBLAS packs the 16 weight matrices again in
# every block (28x28 256 -> 256: 0.81x the time in blocks that large, 14x14 512 -> 512: 0.77x; small weights: no change)
_WINO_WEIGHT_MULTIPLE = 2


def _winograd_weights(w: np.ndarray) -> np.ndarray:
    """[O, 3, 3, C] -> the transformed weights U [16, C, O] (float32, computed in float64; rows padded for the
    register tiles, :func:`.tiles.padded`)."""
    o, _, _, c = w.shape
    g = w.transpose(1, 2, 3, 0).reshape(9, c * o).astype(np.float64)
    return tiles.padded((_WINO_KG @ g).reshape(16, c, o).astype(np.float32))


def _skewed(length: int) -> int:
    """``length`` float32s plus padding so that consecutive rows of a [16, result] array start 2 KiB + 64 B apart
    modulo 4 KiB (never on the same L1 set)."""
    return length + (528 - length) % 1024


def winograd_shape(x, w, strides, dilation, group) -> bool:
    """F(2x2, 3x3) can run: a float32 3x3 stride-1 undilated convolution of one group."""
    o, kh, kw, c = w.shape
    return (x.dtype == np.float32 and w.dtype == np.float32 and (kh, kw) == (3, 3) and tuple(strides) == (1, 1)
            and tuple(dilation) == (1, 1) and group == 1)


WINO_MIN_CHANNELS = 64


def _winograd_geometry(x_shape, o: int, out_size, weight_bytes: int):
    """F(2x2, 3x3)'s tiles of an [N, H, W, C] -> O convolution: (tile rows, tiles per row, padded height and
    width -- every tile inside: >= H + pads since OH = H + pads - 2 --, tile rows per block)."""
    n, _, _, c = x_shape
    oh, ow = out_size
    th, tw = -(-oh // 2), -(-ow // 2)
    block_bytes = max(_WINO_BLOCK_BYTES, _WINO_WEIGHT_MULTIPLE * weight_bytes)  # (each block's GEMMs repack u)
    rows = min(th, max(1, block_bytes // (16 * n * tw * max(c, o) * 4)))
    limit = gemm.small_kernel_rows(c, o, np.float32)
    if limit:  # blocks whose 16 GEMMs run on BLAS's small-matrix kernel where that pays (kernels/gemm.py)
        rows = min(rows, max(1, limit // (n * tw)))
    return th, tw, 2 * th + 2, 2 * tw + 2, rows


def winograd_3x3(x, w, pads, out_size, bias, activation, out, post=()):
    """Stride-1 3x3 convolution by F(2x2, 3x3), in blocks of tile rows; bias and activation per block."""
    n, h, wd, c = x.shape
    o = w.shape[0]
    oh, ow = out_size
    u = packed(w, "winograd", _winograd_weights)
    th, tw, hp, wp, rows = _winograd_geometry(x.shape, o, out_size, u.nbytes)
    pt, _, pl, _ = pads
    xp = scratch("wino_pad", (n, hp, wp, c), x.dtype)
    xp[:, :pt] = 0
    xp[:, pt + h:] = 0
    xp[:, pt:pt + h, :pl] = 0
    xp[:, pt:pt + h, pl + wd:] = 0
    xp[:, pt:pt + h, pl:pl + wd] = x
    finish = Finish(bias, post, activation)
    sn, sh, sw, sc = xp.strides
    transforms = numba_loops.winograd_transforms()
    if transforms is not None and out.dtype == np.float32:
        # compiled transforms (adds and subtracts only, straight from the padded input into the output) around the
        # 16 GEMMs; each of the 16 planes starts off a 4 KiB multiple from the last (16 streams a multiple of 4 KiB
        # apart evict each other from L1: 7x slower transforms at 224x224x64)
        transform_in, transform_out = transforms
        v_full, m_full = (scratch(name, (16, _skewed(n * rows * tw * k)), np.float32)
                          for name, k in (("wino_v", c), ("wino_m", o)))
        rows_in = scratch("wino_rows_in", (4, (2 * tw + 2) * c), np.float32)
        rows_out = scratch("wino_rows_out", (8, tw * o), np.float32)
        # the finish row by row inside transform_out, where the compiled finish can run (else block by block)
        row_finish = finish.row_operands(o, ow, np.float32)
        flat, step = numba_loops.pixel_runs(out)  # (``out``: C-contiguous or evenly strided)
        for r0 in range(0, th, rows):
            r1 = min(th, r0 + rows)
            t = n * (r1 - r0) * tw
            transform_in(xp, v_full, r0, r1, tw, rows_in)
            gemm.batched_matmul_into(v_full[:, : t * c].reshape(16, t, c), u, m_full[:, : t * o].reshape(16, t, o))
            transform_out(m_full, flat, step, n, oh, ow, o, r0, r1, tw, rows_out,
                          *(row_finish or numba_loops.NO_ROW_FINISH))
            if row_finish is None:
                finish(out[:, 2 * r0: min(oh, 2 * r1)], (slice(None), slice(2 * r0, min(oh, 2 * r1))))
        return out
    d_full = scratch("wino_d", (16, n * rows * tw * c), np.float32)
    v_full = scratch("wino_v", (16, n * rows * tw * c), np.float32)
    m_full = scratch("wino_m", (16, n * rows * tw * o), np.float32)
    y_full = scratch("wino_y", (4, n * rows * tw * o), np.float32)
    for r0 in range(0, th, rows):
        r1 = min(th, r0 + rows)
        t = n * (r1 - r0) * tw
        d, v, m, y = d_full[:, : t * c], v_full[:, : t * c], m_full[:, : t * o], y_full[:, : t * o]
        tiles = as_strided(xp[:, 2 * r0:], (4, 4, n, r1 - r0, tw, c), (sh, sw, sn, 2 * sh, 2 * sw, sc),
                           writeable=False)
        np.copyto(d.reshape(4, 4, n, r1 - r0, tw, c), tiles)
        np.matmul(_WINO_KB, d, out=v)
        gemm.batched_matmul_into(v.reshape(16, t, c), u, m.reshape(16, t, o))
        np.matmul(_WINO_KA, m, out=y)
        tiles_out = y.reshape(2, 2, n, r1 - r0, tw, o).transpose(2, 3, 0, 4, 1, 5)  # [N, R, 2, TW, 2, O]
        rr = min(oh, 2 * r1) - 2 * r0
        block = out[:, 2 * r0: 2 * r0 + rr]
        if rr == 2 * (r1 - r0) and ow == 2 * tw:
            np.copyto(block.reshape(n, r1 - r0, 2, tw, 2, o), tiles_out)
        else:
            full = np.ascontiguousarray(tiles_out).reshape(n, 2 * (r1 - r0), 2 * tw, o)
            np.copyto(block, full[:, :rr, :ow])
        finish(block, (slice(None), slice(2 * r0, 2 * r0 + rr)))
    return out


def winograd_runner(general, x_shape, weight, pads, out_shape, finish, addends: int):
    """:func:`winograd_3x3`'s compiled path bound to one plan step (``runners.winograd``), or None where
    it would not take that path or finish each row in its output transform."""
    transforms = numba_loops.winograd_transforms()
    n, _, _, c = x_shape
    _, oh, ow, o = out_shape
    row_finish = finish.row_operands(o, ow, np.float32)
    if transforms is None or row_finish is None:
        return None
    u = packed(weight, "winograd", _winograd_weights)
    geometry = _winograd_geometry(x_shape, o, (oh, ow), u.nbytes)
    th, tw, _, _, rows = geometry

    def product(t: int):  # gemm.batched_matmul_into's choice for the block's [16, t, C] x [16, C, O]
        tiled = tiles.bound_product(u, None) if gemm.uses_tiles(t, c, o, np.float32, 16) else None
        if tiled is not None:
            return lambda v, m: tiled(v, m, None)
        return lambda v, m: np.matmul(v, u, out=m)

    products = [product(n * (min(th, r0 + rows) - r0) * tw) for r0 in range(0, th, rows)]
    lengths = [_skewed(n * rows * tw * k) for k in (c, o)]
    return runners.winograd(general, x_shape, out_shape, pads, geometry, lengths, transforms, products,
                             row_finish, bool(addends))


__all__ = ["WINO_MIN_CHANNELS", "winograd_3x3", "winograd_runner", "winograd_shape"]
