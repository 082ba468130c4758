"""The convolution algorithms' compiled parts (numba): kn2row's gather, Winograd's transforms, the im2col copy."""
from __future__ import annotations

import numpy as np

from ..numba_cache import jit
from .shared import finish_row

# unsigned offsets: the copy loops vectorise (see transform_in)
unsigned = np.uint64


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def gather(z, flat, step, oh, ow, top, left):  # pragma: no cover (compiled)
    # out[y, x] = sum over the taps (i, j) inside the input of z[y + top + i, x + left + j, i, j], row-major
    # from the first tap inside; a window wholly in the padding is 0. Pixel p of the [OH, OW, O] output is
    # flat[p * step: p * step + O] (pixel_runs), a contiguous run the channel loops vectorise
    rows, width, kh, kw, o = z.shape
    for y in range(oh):
        for q in range(ow):
            at = (y * ow + q) * step
            dst = flat[at: at + o]
            first = True
            for i in range(kh):
                zy = y + top + i
                if zy < 0 or zy >= rows:
                    continue
                for j in range(kw):
                    zx = q + left + j
                    if zx < 0 or zx >= width:
                        continue
                    src = z[zy, zx, i, j]
                    if first:
                        for ch in range(o):
                            dst[ch] = src[ch]
                        first = False
                    else:
                        for ch in range(o):
                            dst[ch] = dst[ch] + src[ch]
            if first:
                for ch in range(o):
                    dst[ch] = 0


# Every inner loop runs over a contiguous range with an unsigned index: an index computed from signed integers
# makes numba emit a negative-index wraparound per element, and LLVM then leaves the loop scalar (5x slower
# here). The planes of ``v``/``m`` are the rows of one C-contiguous [16, S] array (tile t's channels at t * C).
@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def transform_in(xp, v, r0, r1, tw, rows):  # pragma: no cover (compiled)
    # V = B^T d B of every 4x4 tile at (2 ty, 2 tx) of the padded xp, tile rows r0..r1 of each image, into
    # v[4 a + b, t * C + ch] (V[a, b]); B^T = [[1,0,-1,0], [0,1,1,0], [0,-1,1,0], [0,1,0,-1]]: first the four
    # row combinations of a tile row's four input rows (whole rows, into ``rows`` [4, (2 tw + 2) C]), then the
    # four column combinations of each -- the same float operations in the same order as tile by tile
    n, c = xp.shape[0], xp.shape[3]
    cu = unsigned(c)
    size = (2 * tw + 2) * c
    t = 0
    for b in range(n):
        for ty in range(r0, r1):
            d0, d1 = xp[b, 2 * ty].ravel(), xp[b, 2 * ty + 1].ravel()
            d2, d3 = xp[b, 2 * ty + 2].ravel(), xp[b, 2 * ty + 3].ravel()
            q0, q1, q2, q3 = rows[0], rows[1], rows[2], rows[3]
            for k in range(size):
                q0[k] = d0[k] - d2[k]
            for k in range(size):
                q1[k] = d1[k] + d2[k]
            for k in range(size):
                q2[k] = d2[k] - d1[k]
            for k in range(size):
                q3[k] = d1[k] - d3[k]
            for a in range(4):
                q = rows[a]
                va, vb, vc, vd = v[4 * a], v[4 * a + 1], v[4 * a + 2], v[4 * a + 3]
                for tx in range(tw):
                    s0 = unsigned(2 * tx * c)
                    s1, s2, s3 = s0 + cu, s0 + unsigned(2) * cu, s0 + unsigned(3) * cu
                    at = unsigned((t + tx) * c)
                    for ch in range(c):
                        k = unsigned(ch)
                        va[at + k] = q[s0 + k] - q[s2 + k]
                    for ch in range(c):
                        k = unsigned(ch)
                        vb[at + k] = q[s1 + k] + q[s2 + k]
                    for ch in range(c):
                        k = unsigned(ch)
                        vc[at + k] = q[s2 + k] - q[s1 + k]
                    for ch in range(c):
                        k = unsigned(ch)
                        vd[at + k] = q[s1 + k] - q[s3 + k]
            t += tw


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def transform_out(m, flat, step, n, oh, ow, o, r0, r1, tw, rows, finishing, bias, has_bias, vectors, kinds,
                  activation, addend, has_addend):  # pragma: no cover (compiled)
    # Y = A^T M A of every tile's m[:, t * O: (t + 1) * O] into its 2x2 output pixels that lie inside [OH, OW];
    # A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]: per tile row, the row combinations of the planes (whole tile rows,
    # into ``rows`` [8, tw O]), then the column combinations into the output pixels; with ``finishing``, each
    # output row's finish (finish_rows' operations on a row of OW pixels: bias and vectors tiled OW times, the
    # addend's matching row) while the row is in L1. The output is ``flat``: pixel p's O channels at
    # flat[p * step: p * step + O] (step O: a C-contiguous [N, OH, OW, O]; more: a channel slice of a larger
    # array, as where the plan assembles a concatenation in place), so every run is contiguous and vectorises
    size = tw * o
    t = 0
    for b in range(n):
        for ty in range(r0, r1):
            y0 = 2 * ty
            at = unsigned(t * o)
            for j in range(4):
                p, a0, a1, a2 = rows[j], m[j], m[4 + j], m[8 + j]
                for kk in range(size):
                    k = unsigned(kk)
                    p[k] = a0[at + k] + a1[at + k] + a2[at + k]
            if y0 + 1 < oh:
                for j in range(4):
                    p, a1, a2, a3 = rows[4 + j], m[4 + j], m[8 + j], m[12 + j]
                    for kk in range(size):
                        k = unsigned(kk)
                        p[k] = a1[at + k] - a2[at + k] - a3[at + k]
            for half in range(2):
                y = y0 + half
                if y >= oh:
                    break
                p0, p1, p2, p3 = rows[4 * half], rows[4 * half + 1], rows[4 * half + 2], rows[4 * half + 3]
                start = (b * oh + y) * ow * step
                for tx in range(tw):
                    src = unsigned(tx * o)
                    dst = start + 2 * tx * step
                    pixel = flat[dst: dst + o]
                    for ch in range(o):
                        k = unsigned(ch)
                        pixel[k] = p0[src + k] + p1[src + k] + p2[src + k]
                    if 2 * tx + 1 < ow:
                        pixel = flat[dst + step: dst + step + o]
                        for ch in range(o):
                            k = unsigned(ch)
                            pixel[k] = p1[src + k] - p2[src + k] - p3[src + k]
                if finishing and step == o:  # the row is one run
                    pixels = flat[start: start + ow * o]
                    if has_bias:
                        for kk in range(ow * o):
                            pixels[kk] = pixels[kk] + bias[kk]
                    finish_row(pixels, vectors, kinds, activation, addend[b, y].ravel() if has_addend else pixels)
                elif finishing:  # pixel by pixel (the tiled vectors' first O values: the vectors themselves)
                    for px in range(ow):
                        pixels = flat[start + px * step: start + px * step + o]
                        if has_bias:
                            for kk in range(o):
                                pixels[kk] = pixels[kk] + bias[kk]
                        finish_row(pixels, vectors, kinds, activation, addend[b, y, px] if has_addend else pixels)
            t += tw


@jit(nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
def im2col_rows(xp, cols, r0, r1, kh, kw, s_h, s_w, d_h):  # pragma: no cover (compiled)
    # cols[(r - r0) * OW + q, (i * kW) * C:] = xp[r s_h + i d_h, q s_w: q s_w + kW] (kW * C contiguous values)
    c = xp.shape[2]
    run = kw * c
    ow = cols.shape[0] // (r1 - r0)
    row_stride = unsigned(xp.shape[1] * c)
    source, target = xp.ravel(), cols.ravel()
    at = unsigned(0)
    for r in range(r0, r1):
        for q in range(ow):
            start = unsigned(r * s_h) * row_stride + unsigned(q * s_w * c)
            for i in range(kh):
                src = start + unsigned(i * d_h) * row_stride
                for e in range(run):
                    target[at + unsigned(e)] = source[src + unsigned(e)]
                at += unsigned(run)
    return cols
