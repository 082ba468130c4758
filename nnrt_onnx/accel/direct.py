"""The direct convolution of one image in register tiles, read straight from its zero-padded input through the
weights' offsets (no im2col copy), its finish fused where the tiles apply it."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..kernels import packed
from . import gemm, numba_loops, tiles
from .workspace import packed_matrix

_DIRECT_MIN_WIDTH = 14  # output rows narrower than this are mostly the tiles' thin tail tiles: im2col + GEMM
# wider finished products than the tiles take after a GEMM (K N <= 65536): the direct convolution also saves the
# im2col copy (eighth round: ResNet-18-half's 3x3/2 64 -> 128, K N = 73728, 0.93 -> 0.45 ms in the model; whole
# models 0.97-0.99 with 2^18, and no better without a bound)
_DIRECT_MAX_KN = 1 << 18


def direct_offsets(w: np.ndarray, row_values: int, d_h: int, d_w: int) -> np.ndarray:
    """The offset of each weight (kH, kW, C order) from its window's first value in an NHWC image whose rows hold
    ``row_values`` values: i d_h W C + j d_w C + ch."""
    _, kh, kw, c = w.shape
    rows = np.arange(kh, dtype=np.int64)[:, None, None] * (d_h * row_values)
    return (rows + np.arange(kw, dtype=np.int64)[None, :, None] * (d_w * c)
            + np.arange(c, dtype=np.int64)[None, None, :]).reshape(-1)


def direct_possible(x, w, group: int, out_size) -> bool:
    """Whether :func:`_direct_in_tiles` takes this convolution (of one image, float32, one group, output rows of
    at least _DIRECT_MIN_WIDTH pixels, a product the finished register tiles run, up to K N = _DIRECT_MAX_KN)."""
    n, _, _, c = x.shape
    o, kh, kw, _ = w.shape
    oh, ow = out_size
    return (n == 1 and group == 1 and ow >= _DIRECT_MIN_WIDTH and x.dtype == np.float32 and w.dtype == np.float32
            and gemm.uses_tiles(oh * ow, kh * kw * c, o, x.dtype, finished=True, max_kn=_DIRECT_MAX_KN))


def direct_in_tiles(xp, w, out, strides, dilation, out_size, finish) -> bool:
    """A one-group convolution of one padded image ``xp`` [1, Hp, Wp, C] straight from it in register tiles, no
    im2col copy (``tiles.gathered_matmul``: each output pixel's window read at the weights' offsets), its
    finish fused where the tiles can apply it; False (nothing written) where the tiles do not take it."""
    n, hp, wp, c = xp.shape
    o, kh, kw, _ = w.shape
    oh, ow = out_size
    s_h, s_w = strides
    d_h, d_w = dilation
    if not numba_loops.evenly_strided(out) or not direct_possible(xp, w, 1, out_size):
        return False
    xp = np.ascontiguousarray(xp)
    span = ((kh - 1) * d_h * wp + (kw - 1) * d_w) * c + c  # a window's extent in the flat image
    if ((oh - 1) * s_h * wp + (ow - 1) * s_w) * c + span > xp.size:  # (never, by the geometry: checked anyway)
        return False
    item = xp.itemsize
    windows = as_strided(xp, (oh, ow, span), (s_h * wp * c * item, s_w * c * item, item), writeable=False)
    columns = packed(w, ("direct", wp, d_h, d_w), lambda a: direct_offsets(a, wp * c, d_h, d_w))
    wmat, target = packed_matrix(w, o, w.dtype), out.reshape(oh, ow, o)
    tile_finish = finish.tile_finish(o, lambda t: t.reshape(oh, ow, o))
    if tile_finish is not None:
        return tiles.gathered_matmul(windows, columns, wmat, target, tile_finish)
    if not tiles.gathered_matmul(windows, columns, wmat, target):
        return False
    finish(out)
    return True


__all__ = ["direct_in_tiles", "direct_offsets", "direct_possible"]
