"""The one-pass finish loops (numba): a convolution's rows (bias, fused vectors, residual, activation) and batch
norm's channel affine map."""
from __future__ import annotations

from ..numba_cache import jit
from .shared import finish_row


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def affine_rows(x, scale, shift, vectors, kinds, out, activation):  # pragma: no cover (compiled)
    # per row (in L1): x * scale + shift, then the post vectors and the activation; the numpy path's float
    # operations in the same order, one pass over memory instead of five
    rows, c = x.shape
    for r in range(rows):
        src, dst = x[r], out[r]
        for ch in range(c):
            dst[ch] = src[ch] * scale[ch] + shift[ch]
        finish_row(dst, vectors, kinds, activation, src)  # (src: never read, no kind 2 here)
    return out


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def finish_rows(x, step, rows, c, bias, has_bias, vectors, kinds, activation, addend):  # pragma: no cover
    # in place, per row (row r: x[r * step: r * step + c] of the flat, contiguous ``x``, so that every row is a
    # contiguous run the loops vectorise, also where rows are a stride apart): + bias, the post operations,
    # the activation (x written through one array: no aliasing check to fail); ``addend`` [R, C] (or [1, 1]
    # when no kind 2) the residual's rows
    for r in range(rows):
        row = x[r * step: r * step + c]
        if has_bias:
            for ch in range(c):
                row[ch] = row[ch] + bias[ch]
        finish_row(row, vectors, kinds, activation, addend[r if addend.shape[0] > 1 else 0])
    return x
