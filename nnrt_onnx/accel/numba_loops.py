"""Optional compiled loops (numba) for the kernels numpy cannot fuse, each with a pure-numpy path beside it.

numba is a dependency (it pays 3-12x on depthwise convolution and 6x on average pooling, docs/performance.md), but
never a requirement: when it cannot be imported (a platform without wheels), or with the environment variable
``NNRT_ONNX_NUMBA=0``, every function here returns False and the kernel takes its numpy path. The compiled loops
use no fast-math (no FMA contraction, no reassociation), and numpy's error model: a float division is just the
division (numba's default checks each divisor for zero to raise ZeroDivisionError, which kept the ERF loop from
vectorising -- 5x slower -- and made LAYER_NORM raise where numpy gives NaN).

* :func:`depthwise` -- the depthwise convolution of ``conv._depthwise_core``: per output pixel, the taps in
  row-major order into a channel vector that stays in registers/L1, then the bias and the fused activation. The
  numpy path makes two passes over the whole output per tap (measured 3-12x slower, docs/performance.md).
  Bit-identical.
* :func:`depthwise_3x3` -- 3x3 kernels: one channel at a time through all nine taps (the sum in a register, the
  channel loop vectorised: 0.6-0.9x the general loop's time), reading the unpadded input (padded taps read +0.0,
  so no padded copy). The general loop's operations in the same order: bit-identical.
* :func:`erf_gelu` -- the exported exact GELU (Div, Erf, Add, Mul, Mul) that the plan fuses, in one loop.
  Bit-identical.
* :func:`lstm_steps` -- the elementwise part of an LSTM step around numpy's tanh (two calls per step instead of
  about ten numpy calls on small arrays). Bit-identical.
* :func:`erf` -- ``_common._erf_float32`` element by element. Bit-identical.
* :func:`pool` -- max and average pooling, one loop over the output (the numpy path: one pass per kernel tap).
  Identical values and signs of zero.
* :func:`softmax_last_axis`, :func:`layer_norm_rows` -- row loops instead of five to nine numpy passes (numpy's
  SIMD exp kept: a compiled loop calling libm's exp was 2x slower); their sums accumulate in float64, so they
  agree with the numpy path to an ulp or two (well inside the kernel tolerances), not bit for bit.
"""
from __future__ import annotations

import os
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import avx512 as _avx512
from .numba_cache import cache_ok as _cache_ok

_LOCK = threading.Lock()
_COMPILED: dict[str, object] = {}
_DISABLED = object()


def enabled() -> bool:
    """numba is importable and not switched off (``NNRT_ONNX_NUMBA=0``)."""
    return _get("depthwise") is not None


def _get(name: str):
    if os.environ.get("NNRT_ONNX_NUMBA", "").strip() == "0":
        return None
    fn = _COMPILED.get(name)
    if fn is None:
        with _LOCK:
            fn = _COMPILED.get(name)
            if fn is None:
                fn = _COMPILED[name] = _build(name)
    return None if fn is _DISABLED else fn


def _build(name: str):
    try:
        import numba
    except ImportError:
        return _DISABLED
    if name == "erf":
        return _build_erf(numba)
    if name == "softmax":
        return _build_softmax(numba)
    if name == "layer_norm":
        return _build_layer_norm(numba)
    if name == "pool":
        return _build_pool(numba)
    if name == "lstm":
        return _build_lstm(numba)
    if name == "gelu":
        return _build_gelu(numba)
    if name == "depthwise3x3":
        return _build_depthwise_3x3(numba)
    if name == "kn2row":
        return _build_kn2row_gather(numba)
    if name == "winograd":
        return _build_winograd(numba)
    if name == "im2col":
        return _build_im2col(numba)
    if name == "swap_last_axes":
        return _build_swap_last_axes(numba)
    if name == "channel_affine":
        return _build_channel_affine(numba)
    if name == "finish_rows":
        return _build_finish_rows(numba)
    if name != "depthwise":
        raise KeyError(name)

    clamp = _build_clamp(numba)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def depthwise_loop(xp, wt, bias, out, s_h, s_w, d_h, d_w, activation, has_bias):  # pragma: no cover (compiled)
        n, oh, ow, c = out.shape
        kh, kw = wt.shape[0], wt.shape[1]
        zero = out.dtype.type(0)
        six = out.dtype.type(6)
        for b in range(n):
            for r in range(oh):
                for q in range(ow):
                    acc = out[b, r, q]
                    row, col = r * s_h, q * s_w
                    for ch in range(c):
                        acc[ch] = xp[b, row, col, ch] * wt[0, 0, ch]
                    for i in range(kh):
                        for j in range(kw):
                            if i == 0 and j == 0:
                                continue
                            src = xp[b, row + i * d_h, col + j * d_w]
                            wij = wt[i, j]
                            for ch in range(c):
                                acc[ch] = acc[ch] + src[ch] * wij[ch]
                    if has_bias:
                        for ch in range(c):
                            acc[ch] = acc[ch] + bias[ch]
                    if activation:
                        for ch in range(c):
                            acc[ch] = clamp(acc[ch], activation, zero, six)
        return out

    return depthwise_loop


def _build_clamp(numba):
    """The fused activation both depthwise loops apply: 0 none, 1 ReLU (NaN stays NaN), 2 ReLU6."""
    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, error_model="numpy", inline="always")
    def clamp(v, activation, zero, six):  # pragma: no cover (compiled)
        if activation == 1:
            return v if v > zero else (zero if v <= zero else v)
        if activation == 2:
            if v < zero:
                return zero
            if v > six:
                return six
        return v

    return clamp


def _build_depthwise_3x3(numba):
    clamp = _build_clamp(numba)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def depthwise_3x3(x, wt, bias, out, s_h, s_w, d_h, d_w, pt, pl, activation, has_bias):  # pragma: no cover
        # the general loop's operations in the same order (nine taps row-major from the first product, then the
        # bias, then the activation), but one channel at a time through all nine taps: the sum stays in a
        # register and the channel loop vectorises; taps in the padding read a vector of +0.0 (what the padded
        # copy holds), so the input is never copied
        n, oh, ow, c = out.shape
        h, w = x.shape[1], x.shape[2]
        zero = out.dtype.type(0)
        six = out.dtype.type(6)
        zc = np.zeros(c, out.dtype)
        w00, w01, w02 = wt[0, 0], wt[0, 1], wt[0, 2]
        w10, w11, w12 = wt[1, 0], wt[1, 1], wt[1, 2]
        w20, w21, w22 = wt[2, 0], wt[2, 1], wt[2, 2]
        for b in range(n):
            for r in range(oh):
                r0 = r * s_h - pt
                r1, r2 = r0 + d_h, r0 + 2 * d_h
                v0, v1, v2 = 0 <= r0 < h, 0 <= r1 < h, 0 <= r2 < h
                x0, x1, x2 = x[b, r0 if v0 else 0], x[b, r1 if v1 else 0], x[b, r2 if v2 else 0]
                for q in range(ow):
                    c0 = q * s_w - pl
                    c1, c2 = c0 + d_w, c0 + 2 * d_w
                    u0, u1, u2 = 0 <= c0 < w, 0 <= c1 < w, 0 <= c2 < w
                    a00 = x0[c0] if v0 and u0 else zc
                    a01 = x0[c1] if v0 and u1 else zc
                    a02 = x0[c2] if v0 and u2 else zc
                    a10 = x1[c0] if v1 and u0 else zc
                    a11 = x1[c1] if v1 and u1 else zc
                    a12 = x1[c2] if v1 and u2 else zc
                    a20 = x2[c0] if v2 and u0 else zc
                    a21 = x2[c1] if v2 and u1 else zc
                    a22 = x2[c2] if v2 and u2 else zc
                    acc = out[b, r, q]
                    for ch in range(c):
                        v = a00[ch] * w00[ch] + a01[ch] * w01[ch] + a02[ch] * w02[ch]
                        v = v + a10[ch] * w10[ch] + a11[ch] * w11[ch] + a12[ch] * w12[ch]
                        v = v + a20[ch] * w20[ch] + a21[ch] * w21[ch] + a22[ch] * w22[ch]
                        if has_bias:
                            v = v + bias[ch]
                        acc[ch] = clamp(v, activation, zero, six)
        return out

    return depthwise_3x3


def _build_erf_value(numba):
    """The float64 rational evaluation of erf on [-4, 4] (outside: clamped) that every compiled loop shares: the
    numpy path's operations in the same order (bit-identical)."""
    from ..kernels.elementwise import ERF_COEFFICIENTS

    p0, p1, p2, p3, p4, p5, p6 = ERF_COEFFICIENTS[0]
    q1, q2, q3, q4, q5 = ERF_COEFFICIENTS[1][1:]

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, error_model="numpy", inline="always")
    def erf_value(v):  # pragma: no cover (compiled)
        if v < -4.0:
            v = -4.0
        elif v > 4.0:
            v = 4.0
        t = v * v
        p = t * p6
        p = (p + p5) * t
        p = (p + p4) * t
        p = (p + p3) * t
        p = (p + p2) * t
        p = (p + p1) * t
        p = p + p0
        q = t * q5
        q = (q + q4) * t
        q = (q + q3) * t
        q = (q + q2) * t
        q = (q + q1) * t
        q = q + 1.0
        return (p * v) / q

    return erf_value


def _build_erf(numba):
    erf_value = _build_erf_value(numba)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def erf_loop(x, out):  # pragma: no cover (compiled)
        for k in range(x.size):
            out[k] = np.float32(erf_value(np.float64(x[k])))
        return out

    return erf_loop


_SOFTMAX_LANES = 16  # running maxima and float64 partial sums per row: one vector's worth, so the loops vectorise


def _build_softmax(numba):
    lanes_count = _SOFTMAX_LANES

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def shift_rows(x, out, lanes):  # pragma: no cover (compiled): out = x - max(x) per row (NaN wins, as np.max)
        rows, n = x.shape
        for r in range(rows):
            xr = x[r]
            # 16 running maxima, each a select that keeps a NaN (the loop over them vectorises), then their max
            if n >= lanes_count:
                for j in range(lanes_count):
                    lanes[j] = xr[j]
                k = lanes_count
                while k + lanes_count <= n:
                    for j in range(lanes_count):
                        v, a = xr[k + j], lanes[j]
                        lanes[j] = v if (v > a or v != v) else a
                    k += lanes_count
                m = lanes[0]
                for j in range(1, lanes_count):
                    v = lanes[j]
                    m = v if (v > m or v != v) else m
            else:
                m, k = xr[0], 1
            while k < n:
                v = xr[k]
                m = v if (v > m or v != v) else m
                k += 1
            o = out[r]
            for k in range(n):
                o[k] = xr[k] - m
        return out

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def normalise_rows(e, sums):  # pragma: no cover (compiled): e /= sum(e) per row (the sum in float64)
        rows, n = e.shape
        for r in range(rows):
            er = e[r]
            # 16 float64 partial sums (no serial chain of dependent adds; the loop over them vectorises)
            for j in range(lanes_count):
                sums[j] = 0.0
            k = 0
            while k + lanes_count <= n:
                for j in range(lanes_count):
                    sums[j] += er[k + j]
                k += lanes_count
            total = 0.0
            while k < n:
                total += er[k]
                k += 1
            for j in range(lanes_count):
                total += sums[j]
            inv = e.dtype.type(total)
            for k in range(n):
                er[k] = er[k] / inv
        return e

    def softmax_rows(x, out):
        shift_rows(x, out, np.empty(lanes_count, x.dtype))
        np.exp(out, out=out)  # numpy's SIMD exp: faster than a compiled scalar loop calling libm
        return normalise_rows(out, np.empty(lanes_count, np.float64))

    return softmax_rows


def _build_layer_norm(numba):
    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def layer_norm_rows(x, gamma, beta, eps, out):  # pragma: no cover (compiled)
        rows, n = x.shape
        for r in range(rows):
            xr = x[r]
            o = out[r]
            # four float64 partial sums per pass: no serial chain of dependent adds
            t0 = t1 = t2 = t3 = 0.0
            k = 0
            while k + 4 <= n:
                t0 += xr[k]
                t1 += xr[k + 1]
                t2 += xr[k + 2]
                t3 += xr[k + 3]
                k += 4
            while k < n:
                t0 += xr[k]
                k += 1
            mean = out.dtype.type(((t0 + t1) + (t2 + t3)) / n)
            for k in range(n):
                o[k] = xr[k] - mean
            t0 = t1 = t2 = t3 = 0.0
            k = 0
            while k + 4 <= n:
                d0, d1, d2, d3 = np.float64(o[k]), np.float64(o[k + 1]), np.float64(o[k + 2]), np.float64(o[k + 3])
                t0 += d0 * d0
                t1 += d1 * d1
                t2 += d2 * d2
                t3 += d3 * d3
                k += 4
            while k < n:
                d0 = np.float64(o[k])
                t0 += d0 * d0
                k += 1
            squares = (t0 + t1) + (t2 + t3)
            std = out.dtype.type(np.sqrt(out.dtype.type(squares / n) + eps))
            for k in range(n):
                out[r, k] = out[r, k] / std * gamma[k] + beta[k]
        return out

    return layer_norm_rows


def _build_pool(numba):
    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy", inline="always")
    def _max_row(x, out_row, top, i0, i1, s_w, pl, k_w, fill):  # pragma: no cover (compiled)
        # One output row, kernel rows outermost: the input row a kernel row reads stays in L1 while every window
        # of the row takes it (0.77-1.06x the time of window by window, interleaved on a noisy machine: no slower,
        # sometimes faster; docs/performance.md fifth round). Per window the cells still come in row-major
        # order: the first copied, then a select per later cell (a NaN wins, a tie keeps the earlier cell), which
        # the channel loop vectorises -- the same result as the branchy "if v > a or v != v" loop.
        w, c = x.shape[1], x.shape[2]
        ow = out_row.shape[0]
        for q in range(ow):
            left = q * s_w - pl
            j0, j1 = max(0, -left), min(k_w, w - left)
            acc = out_row[q]
            if i1 <= i0 or j1 <= j0:  # no cell inside
                for ch in range(c):
                    acc[ch] = fill
                continue
            src = x[top + i0, left + j0]
            for ch in range(c):
                acc[ch] = src[ch]
        for i in range(i0, i1):
            row = x[top + i]
            for q in range(ow):
                left = q * s_w - pl
                j0, j1 = max(0, -left), min(k_w, w - left)
                acc = out_row[q]
                for j in range(j0, j1):
                    if i == i0 and j == j0:
                        continue
                    src = row[left + j]
                    for ch in range(c):
                        v = src[ch]
                        a = acc[ch]
                        acc[ch] = v if (v > a) | (v != v) else a

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def pool_loop(x, out, k_h, k_w, s_h, s_w, pt, pl, is_max, start_at_zero, fill):  # pragma: no cover
        n, h, w, c = x.shape
        _, oh, ow, _ = out.shape
        for b in range(n):
            for r in range(oh):
                top = r * s_h - pt
                i0, i1 = max(0, -top), min(k_h, h - top)
                if is_max:
                    _max_row(x[b], out[b, r], top, i0, i1, s_w, pl, k_w, fill)
                    continue
                for q in range(ow):
                    left = q * s_w - pl
                    j0, j1 = max(0, -left), min(k_w, w - left)
                    acc = out[b, r, q]
                    if i1 <= i0 or j1 <= j0:  # no cell inside: an average of nothing (0 / 0)
                        for ch in range(c):
                            acc[ch] = fill
                        continue
                    first = True
                    for i in range(i0, i1):
                        for j in range(j0, j1):
                            src = x[b, top + i, left + j]
                            if first:
                                if not start_at_zero:
                                    for ch in range(c):
                                        acc[ch] = src[ch]
                                else:
                                    for ch in range(c):
                                        acc[ch] = out.dtype.type(0) + src[ch]
                                first = False
                            else:
                                for ch in range(c):
                                    acc[ch] = acc[ch] + src[ch]
                    count = out.dtype.type((i1 - i0) * (j1 - j0))
                    for ch in range(c):
                        acc[ch] = acc[ch] / count
        return out

    return pool_loop


def _build_finish_row(numba):
    """The in-place tail both per-row loops share: each post operation (kind 0 multiply by its vector, 1 add its
    vector, 2 add ``addend_row``: a residual tensor's row), then the activation (its branch outside the channel
    loops, so they vectorise)."""
    clamp = _build_clamp(numba)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, error_model="numpy", inline="always")
    def finish_row(row, vectors, kinds, activation, addend_row):  # pragma: no cover (compiled)
        c = row.shape[0]
        zero, six = row.dtype.type(0), row.dtype.type(6)
        for p in range(kinds.shape[0]):
            vector = vectors[p]
            if kinds[p] == 0:
                for ch in range(c):
                    row[ch] = row[ch] * vector[ch]
            elif kinds[p] == 1:
                for ch in range(c):
                    row[ch] = row[ch] + vector[ch]
            else:
                for ch in range(c):
                    row[ch] = row[ch] + addend_row[ch]
        if activation == 1:
            for ch in range(c):
                row[ch] = clamp(row[ch], 1, zero, six)
        elif activation == 2:
            for ch in range(c):
                row[ch] = clamp(row[ch], 2, zero, six)

    return finish_row


def _build_channel_affine(numba):
    finish_row = _build_finish_row(numba)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
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

    return affine_rows


def _build_finish_rows(numba):
    finish_row = _build_finish_row(numba)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
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

    return finish_rows


def _post_arrays(post, c: int, dtype):
    """(vectors [P, C], kinds [P]: 0 multiply, 1 add, 2 add the addend) of ("mul" | "add", [C] vector) and
    ("addend", None) pairs."""
    vectors = np.zeros((len(post), c), dtype)
    kinds = np.empty(len(post), np.int64)
    for i, (name, vector) in enumerate(post):
        if name != "addend":
            vectors[i] = vector
        kinds[i] = {"mul": 0, "add": 1, "addend": 2}[name]
    return vectors, kinds


def finish_arrays(bias: np.ndarray | None, post, c: int, dtype) -> tuple:
    """The operands :func:`finish_rows` takes besides the rows: ``bias`` (a [C] vector, or None) and ``post`` --
    ("mul" | "add", [C] vector) pairs, and ("addend", None) for a residual -- as arrays of ``dtype``. Built once per
    kernel call, used for each of its blocks."""
    dtype = np.dtype(dtype)
    vectors, kinds = _post_arrays(post, c, dtype)
    has_bias = bias is not None
    return (np.ascontiguousarray(bias, dtype) if has_bias else np.zeros(1, dtype)), has_bias, vectors, kinds


def finish_rows(rows: np.ndarray, arrays: tuple, activation: int, addend: np.ndarray | None = None) -> bool:
    """In place on the float32/float64 ``rows`` [R, C] (C-contiguous, or rows of contiguous channels a stride apart:
    a channel slice): ``+ bias``, the ``post`` operations in order
    (an "addend" adds ``addend``, an [R, C] array, a residual's rows), then ``activation`` (0, 1 RELU, 2 RELU6),
    with bias and post as :func:`finish_arrays` built them for this dtype and C: one compiled pass, bit-identical
    to numpy's ufunc passes in the same order (a convolution's finish, 3x faster); False (rows untouched) without
    numba or for another layout or dtype."""
    dtype = rows.dtype
    if dtype not in (np.float32, np.float64) or rows.ndim != 2 or rows.strides[1] != rows.itemsize:
        return False
    if addend is not None and (addend.dtype != dtype or addend.shape != rows.shape or not addend.flags.c_contiguous):
        return False
    loop = _get("finish_rows")
    if loop is None:
        return False
    bias, has_bias, vectors, kinds = arrays
    count, c = rows.shape
    step = rows.strides[0] // rows.itemsize if count > 1 else c
    if rows.strides[0] % rows.itemsize or step < c:
        return False
    flat = as_strided(rows, ((count - 1) * step + c,), (rows.itemsize,)) if count else rows.reshape(-1)
    loop(flat, step, count, c, bias, has_bias, vectors, kinds, int(activation),
         np.zeros((1, 1), dtype) if addend is None else addend)
    return True


def channel_affine(rows: np.ndarray, scale: np.ndarray, shift: np.ndarray, post, activation: int,
                   out: np.ndarray) -> bool:
    """``out = activation(post(rows * scale + shift))`` for C-contiguous float32/float64 ``rows`` [R, C] and
    ``out``: ``post`` is a sequence of ("mul" | "add", [C] vector) pairs, ``activation`` 0 none, 1 RELU, 2 RELU6.
    One compiled pass, bit-identical to numpy's ufunc passes in the same order (batch norm's blocks); False (out
    untouched) without numba or for another layout or dtype."""
    dtype = rows.dtype
    if (dtype not in (np.float32, np.float64) or out.dtype != dtype or rows.ndim != 2 or out.shape != rows.shape
            or not rows.flags.c_contiguous or not out.flags.c_contiguous):
        return False
    loop = _get("channel_affine")
    if loop is None:
        return False
    vectors, kinds = _post_arrays(post, rows.shape[1], dtype)
    loop(rows, np.ascontiguousarray(scale, dtype), np.ascontiguousarray(shift, dtype), vectors, kinds, out,
         int(activation))
    return True


def _build_kn2row_gather(numba):
    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
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

    return gather


def kn2row_gather(z: np.ndarray, out: np.ndarray, top: int, left: int) -> bool:
    """The second half of a kn2row convolution: ``z`` [R, W, kH, kW, O] holds every input pixel's product with
    every tap's weights; ``out`` [OH, OW, O] gets, per output pixel, the sum of the taps' products that lie
    inside the input (``top``/``left``: z's row/column of output (0, 0)'s tap (0, 0), negative in the padding).
    False (out untouched) without numba or for another dtype or layout."""
    if (z.dtype not in (np.float32, np.float64) or out.dtype != z.dtype or z.ndim != 5 or out.ndim != 3
            or not z.flags.c_contiguous):
        return False
    runs = pixel_runs(out)
    loop = _get("kn2row") if runs is not None else None
    if loop is None:
        return False
    loop(z, runs[0], runs[1], out.shape[0], out.shape[1], int(top), int(left))
    return True


def pixel_runs(out: np.ndarray):
    """``out`` [..., C] -- C-contiguous, or a channel slice of a C-contiguous array (its pixels evenly strided: a
    concatenation the plan assembles in place) -- as (flat, step): the contiguous 1-D view from its first value to
    its last, in which pixel p's C values are ``flat[p * step: p * step + C]``; None for any other layout."""
    c = out.shape[-1]
    if out.flags.c_contiguous:
        return out.reshape(-1), c
    if not evenly_strided(out):
        return None
    step = out.strides[-2] // out.itemsize
    return as_strided(out, ((out.size // c - 1) * step + c,), (out.itemsize,)), step


def evenly_strided(out: np.ndarray) -> bool:
    """``out`` [..., C] (2-D or more, not empty) is C-contiguous or a channel slice of a C-contiguous array: unit
    channel stride, pixels a whole number of values >= C apart, every leading axis a whole number of pixels."""
    if out.flags.c_contiguous:
        return out.ndim >= 2
    if out.ndim < 2 or not out.size or out.strides[-1] != out.itemsize or out.strides[-2] % out.itemsize:
        return False
    if out.strides[-2] < out.shape[-1] * out.itemsize:
        return False
    return all(out.shape[axis] <= 1 or out.strides[axis] == out.shape[axis + 1] * out.strides[axis + 1]
               for axis in range(out.ndim - 2))


def _build_winograd(numba):
    # Every inner loop runs over a contiguous range with an unsigned index: an index computed from signed integers
    # makes numba emit a negative-index wraparound per element, and LLVM then leaves the loop scalar (5x slower
    # here). The planes of ``v``/``m`` are the rows of one C-contiguous [16, S] array (tile t's channels at t * C).
    unsigned = np.uint64

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
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

    finish_row = _build_finish_row(numba)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
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

    return transform_in, transform_out


def winograd_transforms():
    """(transform_in, transform_out) of F(2x2, 3x3) as compiled loops with only adds and subtracts (the transform
    matrices' entries are 0 and +-1), or None without numba: ``transform_in(xp, v, r0, r1, tw, rows)`` writes
    V = B^T d B of tile rows r0..r1 of the padded float32 ``xp`` into the C-contiguous ``v`` [16, >= T C] (tile t's
    channels at t C of each plane); ``transform_out(m, flat, step, n, oh, ow, o, r0, r1, tw, rows, *finishing)``
    writes Y = A^T M A of ``m`` (laid out like ``v``, O per tile) into the pixels inside [OH, OW] of the [N, OH,
    OW, O] output whose pixel p is ``flat[p * step: p * step + O]`` (:func:`pixel_runs`), then finishes each
    output row as :func:`finish_rows` would where ``finishing`` (``_finish.Finish.row_operands``; else
    :data:`NO_ROW_FINISH`). ``rows``: float32 work arrays, [4, (2 tw + 2) C] and [8, tw O]."""
    return _get("winograd")


# transform_out's trailing arguments for "no finish"
NO_ROW_FINISH = (False, np.zeros(1, np.float32), False, np.zeros((0, 1), np.float32), np.zeros(0, np.int64), 0,
                 np.zeros((1, 1, 1, 1), np.float32), False)


def _build_im2col(numba):
    unsigned = np.uint64  # unsigned offsets: the copy loop vectorises (see _build_winograd)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
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

    return im2col_rows


def _build_swap_last_axes(numba):
    @numba.njit(cache=_cache_ok(), nogil=True, boundscheck=False)
    def swap(x, out):  # pragma: no cover (compiled): out[r, k, j] = x[r, j, k], reading x in order
        rows, a, b = x.shape
        for r in range(rows):
            src, dst = x[r], out[r]
            for j in range(a):
                for k in range(b):
                    dst[k, j] = src[j, k]
        return out

    return swap


_SWAP_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64))


def swap_last_axes(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray | None:
    """``x`` with its last two axes swapped, as a C-contiguous array (``out`` where it is one of the right shape and
    dtype, else a new one): one compiled loop reading ``x`` in order (a channel shuffle's [.., G, C/G] -> [.., C/G,
    G]: 1.4-2.3x faster than numpy's copy, whose inner loops there run along G; for float32 and G = 2, 4, 8 on
    AVX-512, 16 values interleaved in registers at a time, 0.45x that loop's time); None without numba, for
    another dtype, or fewer than 2 dims."""
    if x.ndim < 2 or x.dtype not in _SWAP_DTYPES or x.size == 0:
        return None
    loop = _get("swap_last_axes")
    if loop is None:
        return None
    a, b = x.shape[-2:]
    src = np.ascontiguousarray(x).reshape(-1, a, b)
    shape = x.shape[:-2] + (b, a)
    if out is None or out.shape != shape or out.dtype != x.dtype or not out.flags.c_contiguous:
        out = np.empty(shape, x.dtype)
    target = out.reshape(-1, b, a)
    if x.dtype == np.float32:
        vectors = _avx512.compiled("shuffle_vectors", "swap_last_axes")
        if vectors is not None and vectors(src, target):
            return out
    loop(src, target)
    return out


def _build_gelu(numba):
    erf_value = _build_erf_value(numba)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def gelu_loop(x, out, d, a, m):  # pragma: no cover (compiled): (x * (erf(x / d) + a)) * m
        for k in range(x.size):
            xk = x[k]
            e = np.float32(erf_value(np.float64(xk / d)))  # the DIV in float32, then the ERF loop's evaluation
            out[k] = (xk * (e + a)) * m
        return out

    return gelu_loop


def erf_gelu(x: np.ndarray, divisor, addend, factor) -> np.ndarray | None:
    """``(x * (erf(x / divisor) + addend)) * factor`` for float32 ``x`` and float32 scalars (the exact-erf GELU
    as exported: Div, Erf, Add, Mul, Mul) in one compiled loop, with the ERF loop's float64 evaluation verbatim:
    bit-identical to the five steps; None without numba."""
    loop = _get("gelu") if x.dtype == np.float32 and x.size else None
    if loop is None:
        return None
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    loop(flat, out, np.float32(divisor), np.float32(addend), np.float32(factor))
    return out.reshape(x.shape)


def _build_lstm(numba):
    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def gates_in(gates, pre, s, scale):  # pragma: no cover (compiled): (recurrent + input part) * scale
        d_count, batch, width = gates.shape
        steps = pre.shape[1]
        for d in range(d_count):
            t = s if d == 0 else steps - 1 - s  # the backward direction reads the sequence from its end
            for b in range(batch):
                g = gates[d, b]
                p = pre[d, t, b]
                for k in range(width):
                    g[k] = (g[k] + p[k]) * scale[k]

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
    def cell(gates, c, gi, go, gf, gg):  # pragma: no cover (compiled): sigmoids from tanh, c = f * c + i * g
        d_count, batch, hidden = c.shape
        half = c.dtype.type(0.5)
        for d in range(d_count):
            for b in range(batch):
                g = gates[d, b]
                cc = c[d, b]
                for k in range(hidden):
                    i = g[gi + k] * half + half
                    f = g[gf + k] * half + half
                    cc[k] = f * cc[k] + i * g[gg + k]
                    g[go + k] = g[go + k] * half + half

    return gates_in, cell


def lstm_steps(dtype):
    """The two compiled parts of an LSTM step for float32/float64 (None without numba): ``gates_in(gates, pre, s,
    scale)`` adds the step's input part to the recurrent product and scales (0.5 on the sigmoid blocks, 1 on g)
    ahead of one tanh over all gates; ``cell(gates, c, gi, go, gf, gg)`` turns the i, f, o tanh values into
    sigmoids (``0.5 * t + 0.5``, o written back in place) and updates ``c = f * c + i * g`` in place. The same
    float operations in the same order as the numpy step (tanh stays numpy's): bit-identical."""
    return _get("lstm") if np.dtype(dtype) in (np.float32, np.float64) else None


def pool(x: np.ndarray, kind: str, kernel, strides, pads, out_size, start_at_zero: bool,
         out: np.ndarray | None = None) -> np.ndarray | None:
    """Max or average pooling of NHWC float32/float64 ``x`` (pads [top, left]; windows clipped to the input: padded
    cells neither win a max nor count in an average), one compiled loop over the output; None without numba.
    Max is exact, so identical to the numpy path (NaN propagates); the average adds a window's cells in row-major
    order starting from the first (or from 0 when ``start_at_zero``, as the numpy path does when its first tap is
    clipped anywhere), then divides by the clipped count: also identical. ``out``: the array to write where it
    has the output's shape and dtype (any strides: a slice of a concatenation too), else a new one."""
    loop = _get("pool") if x.dtype in (np.float32, np.float64) and x.size else None
    if loop is None:
        return None
    shape = (x.shape[0], out_size[0], out_size[1], x.shape[3])
    if out is None or out.shape != shape or out.dtype != x.dtype or not out.flags.writeable:
        out = np.empty(shape, x.dtype)
    x = np.ascontiguousarray(x)
    geometry = (int(kernel[0]), int(kernel[1]), int(strides[0]), int(strides[1]), int(pads[0]), int(pads[1]))
    if x.dtype == np.float32:  # 2x2 and 3x3 windows in AVX-512 vectors: the same results, 0.17-0.7x the time
        vectors = _avx512.compiled("pool_vectors", "pool")
        if vectors is not None and vectors(x, out, kind == "max", *geometry, bool(start_at_zero)):
            return out
    fill = x.dtype.type(-np.inf if kind == "max" else np.nan)
    return loop(x, out, *geometry, kind == "max", bool(start_at_zero), fill)


def im2col_rows(xp: np.ndarray, cols: np.ndarray, r0: int, r1: int, kernel, strides, d_h: int) -> bool:
    """im2col of output rows r0..r1 of one image: ``cols`` [(r1 - r0) * OW, kH * kW * C] gets, per output pixel,
    its window's kernel rows of the padded ``xp`` [Hp, Wp, C] (each kW * C contiguous values; kernel columns not
    dilated), in the weight's (kH, kW, C) order. One compiled copy loop -- 0.5-0.66x numpy's strided copy for the
    short runs of 3-channel stems and 16-32-channel layers, whose inner loops numpy runs one call each; False
    (cols untouched) without numba or for another dtype or layout."""
    if (xp.dtype not in (np.float32, np.float64) or cols.dtype != xp.dtype or xp.ndim != 3 or cols.ndim != 2
            or not xp.flags.c_contiguous or not cols.flags.c_contiguous):
        return False
    loop = _get("im2col")
    if loop is None:
        return False
    loop(xp, cols, int(r0), int(r1), int(kernel[0]), int(kernel[1]), int(strides[0]), int(strides[1]), int(d_h))
    return True


def erf(x: np.ndarray) -> np.ndarray | None:
    """The float32 erf of ``_common._erf_float32`` (the same float64 operations in the same order: bit-identical)
    for a float16/float32 array; None without numba."""
    loop = _get("erf") if x.dtype in (np.float16, np.float32) else None
    if loop is None:
        return None
    flat = np.ascontiguousarray(x, np.float32).reshape(-1)  # float16 is exact in float32 (numba has no float16)
    return loop(flat, np.empty(flat.shape, np.float32)).reshape(x.shape)


_SOFTMAX_MAX_ROW = 256  # longer rows: numpy's vectorised reductions win (measured 0.65x at 1000)


def softmax_last_axis(x: np.ndarray) -> np.ndarray | None:
    """softmax over the last axis of a float32/float64 array: one compiled loop per row for the max and the
    shift, numpy's exp in place, one compiled loop per row for the sum (accumulated in float64) and the division;
    None without numba. Within an ulp or two of the numpy path (another summation order), not bit-identical."""
    short_rows = x.ndim >= 1 and 0 < x.shape[-1] <= _SOFTMAX_MAX_ROW and x.size
    loop = _get("softmax") if x.dtype in (np.float32, np.float64) and short_rows else None
    if loop is None:
        return None
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    if rows.dtype == np.float32:  # the same loops with their lanes in AVX-512 registers: bit-identical, 0.5x
        shift = _avx512.compiled("softmax_vectors", "shift_rows")
        normalise = _avx512.compiled("softmax_vectors", "normalise_rows")
        if shift is not None and normalise is not None:
            out = np.empty_like(rows)
            shift(rows, out)
            np.exp(out, out=out)
            normalise(out)
            return out.reshape(x.shape)
    return loop(rows, np.empty_like(rows)).reshape(x.shape)


def layer_norm_rows(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, epsilon: float) -> np.ndarray | None:
    """Layer norm of each row of the 2-D float32/float64 ``x`` (mean and variance accumulated in float64, then the
    numpy path's float operations: centre, divide by sqrt(var + eps), scale, shift); None without numba."""
    loop = _get("layer_norm") if x.dtype in (np.float32, np.float64) and x.ndim == 2 and x.shape[1] else None
    if loop is None:
        return None
    dtype = x.dtype
    return loop(np.ascontiguousarray(x), np.ascontiguousarray(gamma, dtype).reshape(-1),
                np.ascontiguousarray(beta, dtype).reshape(-1), dtype.type(epsilon), np.empty_like(x))


def depthwise(xp: np.ndarray, wt: np.ndarray, bias: np.ndarray | None, out: np.ndarray, strides, dilation,
              activation: int) -> bool:
    """Depthwise convolution of the zero-padded NHWC ``xp`` (channels already repeated for a multiplier) with
    taps ``wt`` [kH, kW, C] into ``out`` [N, OH, OW, C], then bias and activation (0 none, 1 RELU, 2 RELU6);
    False (``out`` untouched) when numba is unavailable or the dtypes are not one float32/float64."""
    if out.dtype not in (np.float32, np.float64) or xp.dtype != out.dtype or wt.dtype != out.dtype:
        return False
    loop = _get("depthwise")
    if loop is None:
        return False
    has_bias = bias is not None
    b = bias.astype(out.dtype, copy=False) if has_bias else np.zeros(1, out.dtype)
    loop(np.ascontiguousarray(xp), np.ascontiguousarray(wt), b, out, int(strides[0]), int(strides[1]),
         int(dilation[0]), int(dilation[1]), int(activation), has_bias)
    return True


def depthwise_3x3_loop(vectors: bool):
    """The compiled loop of :func:`depthwise_3x3` (its arguments after the checks), or None without numba:
    with ``vectors`` (float32, unit channel stride of the output) the same loop in AVX-512 vectors where it runs
    (0.5-1x its time, bit-identical)."""
    loop = _get("depthwise3x3")
    if loop is not None and vectors:
        loop = _avx512.compiled("depthwise_vectors", "depthwise_3x3") or loop
    return loop


def depthwise_3x3(x: np.ndarray, wt: np.ndarray, bias: np.ndarray | None, out: np.ndarray, strides, dilation,
                  pads, activation: int) -> bool:
    """Depthwise 3x3 convolution of the *unpadded* NHWC ``x`` (channels already repeated for a multiplier;
    ``pads`` [top, bottom, left, right], zeros) with taps ``wt`` [3, 3, C] into ``out``, then bias and activation,
    like :func:`depthwise` on the padded copy (bit-identical: a tap in the padding reads +0.0 as it would there);
    False (``out`` untouched) without numba or for another dtype."""
    if out.dtype not in (np.float32, np.float64) or x.dtype != out.dtype or wt.dtype != out.dtype:
        return False
    if wt.shape[:2] != (3, 3):
        return False
    loop = depthwise_3x3_loop(out.dtype == np.float32 and out.strides[3] == 4)
    if loop is None:
        return False
    has_bias = bias is not None
    b = bias.astype(out.dtype, copy=False) if has_bias else np.zeros(1, out.dtype)
    loop(np.ascontiguousarray(x), np.ascontiguousarray(wt), b, out, int(strides[0]), int(strides[1]),
         int(dilation[0]), int(dilation[1]), int(pads[0]), int(pads[2]), int(activation), has_bias)
    return True


__all__ = ["channel_affine", "depthwise", "depthwise_3x3", "depthwise_3x3_loop", "enabled", "erf", "erf_gelu",
           "finish_arrays", "finish_rows", "evenly_strided", "im2col_rows", "kn2row_gather", "layer_norm_rows",
           "lstm_steps", "pixel_runs", "pool", "softmax_last_axis", "swap_last_axes", "winograd_transforms"]
