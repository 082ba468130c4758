"""Work arrays and pre-packed weights of the accelerated kernels: per-thread scratch arrays reused across calls,
a zero-padded copy of an image in one, and a weight as the row-major matrix the register tiles and OpenBLAS read
fastest."""
from __future__ import annotations

import threading

import numpy as np

from ..kernels import packed
from . import tiles

_SCRATCH = threading.local()


def scratch(name: str, shape, dtype) -> np.ndarray:
    """A per-thread reusable work array of ``shape`` (grown as needed; contents undefined)."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    pool = _SCRATCH.__dict__.setdefault("pool", {})
    buffer = pool.get(name)
    if buffer is None or buffer.nbytes < size:
        buffer = pool[name] = np.empty(max(size, 64), np.uint8)
    return buffer[:size].view(dtype).reshape(shape)


def padded(x, pads, name="pad"):
    """``x`` zero-padded in H and W ([top, bottom, left, right]) into a reused scratch array (``x`` itself when
    there is no padding)."""
    pt, pb, pl, pr = pads
    if not any(pads):
        return x
    n, h, w, c = x.shape
    xp = scratch(name, (n, h + pt + pb, w + pl + pr, c), x.dtype)
    if pt:
        xp[:, :pt] = 0
    if pb:
        xp[:, h + pt:] = 0
    if pl:
        xp[:, pt:pt + h, :pl] = 0
    if pr:
        xp[:, pt:pt + h, w + pl:] = 0
    xp[:, pt:pt + h, pl:pl + w] = x
    return xp


def packed_matrix(weight: np.ndarray, rows: int, dtype) -> np.ndarray:
    """``weight`` as a row-major [K, rows] matrix in ``dtype`` (the transpose of ``weight.reshape(rows, K)``), its
    rows padded to whole 16-float vectors for the register tiles (``tiles.padded``; a view, unit column stride):
    OpenBLAS multiplies a row-major right operand up to 3.6x faster than a transposed view at small M and never
    slower (docs/performance.md). Made once per constant weight."""
    return packed(weight, ("matrix", rows, np.dtype(dtype).str),
                  lambda w: tiles.padded(w.reshape(rows, -1).T.astype(dtype, copy=False)))


__all__ = ["packed_matrix", "padded", "scratch"]
