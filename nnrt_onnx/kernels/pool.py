"""Pooling kernels (NHWC): AVG_POOL and MAX_POOL, windowed or global.

They follow the conventions of the convolution kernels (conv.py): layout NHWC, pad lists ``[top, bottom, left,
right]``, ``pad_mode`` 0 = SAME (NNAPI/TF), 1 or 2 = VALID, -1 = the explicit pad list, two-value lists that also
accept one value for both, float16 accumulated in float32. AVG_POOL divides by the number of real (unpadded) cells.
The window geometry (round mode 1 = ONNX ceil_mode) is ``nnrt_onnx.geometry``'s, shared with the shape rule.

MAX_POOL and NaN (the header says nothing; onnxruntime and onnx.reference, measured where they agree,
docs/deviations.md): a window's cells are folded in row-major order, padding excluded. With both strides 1 a NaN
never wins (``np.fmax``: NaN only for a window of NaN only). With a stride above 1 the fold is ``y = first cell;
y = x if x > y``: NaN where the window's first cell inside the input is NaN, else the maximum ignoring NaN.
Global max pooling propagates NaN (``np.max``), as both do.
"""
from __future__ import annotations

import numpy as np

from ..errors import invalid, unsupported
from ..geometry import (
    PAD_MODE_EXPLICIT,
    PAD_MODE_SAME,
    ROUND_MODE_CEIL,
    check_pad_list,
    check_pad_mode,
    check_round_mode,
    spatial_pair,
    touched_end_padding,
    window_axis,
)
from . import kernel, shape_rule
from ._common import _check_rank, _check_rank_dims, _compute_dtype, _known, _tap_range


def _pool_taps(x, oh, ow, k_h, k_w, s_h, s_w, pt, pl):
    """(full, out view, input view) for each kernel tap in row-major order: the output block whose window reads a
    real (non-padding) cell at this tap, and the strided input view of those cells. No padded copy is made."""
    h, w = x.shape[1], x.shape[2]
    taps = []
    for i in range(k_h):
        r0, r1, a = _tap_range(oh, h, s_h, i - pt)
        for j in range(k_w):
            q0, q1, b = _tap_range(ow, w, s_w, j - pl)
            if r1 > r0 and q1 > q0:
                src = x[:, a: a + (r1 - r0 - 1) * s_h + 1: s_h, b: b + (q1 - q0 - 1) * s_w + 1: s_w]
                full = r0 == 0 and r1 == oh and q0 == 0 and q1 == ow
                taps.append((full, (slice(None), slice(r0, r1), slice(q0, q1)), src))
    return taps


def first_tap_full(oh, ow, h, w, k_h, k_w, s_h, s_w, pt, pl) -> bool:
    """Whether the first kernel tap (row-major) that reads any real cell reads one for every output position."""
    for i in range(k_h):
        r0, r1, _ = _tap_range(oh, h, s_h, i - pt)
        for j in range(k_w):
            q0, q1, _ = _tap_range(ow, w, s_w, j - pl)
            if r1 > r0 and q1 > q0:
                return r0 == 0 and r1 == oh and q0 == 0 and q1 == ow
    return False


def _max_1d(x, axis, out_size, k, s, p0, fill, combine):
    """Max pooling along one axis (1 = height, 2 = width) of an NHWC array: one ``combine`` (np.maximum or
    np.fmax) per kernel tap over a strided view, into the output buffer; taps reading padding are skipped
    (``fill``, the identity of ``combine``, starts the positions no tap covers everywhere)."""
    if k == 1 and s == 1 and p0 == 0 and x.shape[axis] == out_size:
        return x
    size = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = out_size
    out = np.empty(shape, dtype=x.dtype)
    pre = (slice(None),) * axis
    taps = []
    for i in range(k):
        r0, r1, a = _tap_range(out_size, size, s, i - p0)
        if r1 > r0:
            src = x[pre + (slice(a, a + (r1 - r0 - 1) * s + 1, s),)]
            taps.append((r0 == 0 and r1 == out_size, pre + (slice(r0, r1),), src))
    first = next((t for t in taps if t[0]), None)  # start from a tap that covers every output position
    if first is None:
        out.fill(fill)
    else:
        np.copyto(out, first[2])
    for t in taps:
        if t is not first:
            combine(out[t[1]], t[2], out=out[t[1]])
    return out


def _max_pool(x, oh, ow, k_h, k_w, s_h, s_w, pt, pl, combine):
    fill = np.nan if combine is np.fmax else -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    return _max_1d(_max_1d(x, 2, ow, k_w, s_w, pl, fill, combine), 1, oh, k_h, s_h, pt, fill, combine)


def _first_cells(x, oh, ow, s_h, s_w, pt, pl):
    """Each window's first cell inside the input (row-major: its first real row and column), [N, OH, OW, C]: a
    strided view, or one gather where the windows start in the padding."""
    if pt == 0 and pl == 0:
        return x[:, : (oh - 1) * s_h + 1: s_h, : (ow - 1) * s_w + 1: s_w]
    rows = np.maximum(np.arange(oh) * s_h - pt, 0)
    cols = np.maximum(np.arange(ow) * s_w - pl, 0)
    return x[:, rows[:, None], cols[None, :]]


def pool_geometry(op, h, w, kernel_size, stride, pad_mode, pad_list, round_mode):
    """Checked kernel size, strides and modes, then per axis the output size and pads of the windows
    (``geometry.window_axis``; explicit pads must be smaller than the kernel and the kernel must fit): (kernel,
    strides, (oh, ow), declared pads (top, bottom, left, right)). Sizes may be UNKNOWN (so are the results then)."""
    if len(np.asarray(kernel_size).reshape(-1)) == 0:
        raise invalid(f"{op}: kernel size is required (or set global pooling)")
    k_h, k_w = spatial_pair(op, "kernel size", kernel_size, 1)
    s_h, s_w = spatial_pair(op, "stride", stride, 1)
    ceil_mode = check_round_mode(op, round_mode) == ROUND_MODE_CEIL
    mode = check_pad_mode(op, pad_mode)

    def axis_geometry(size, k, s, p0, p1, name):
        if mode != PAD_MODE_SAME:
            if p0 >= k or p1 >= k:
                raise invalid(f"{op}: {name} pads [{p0}, {p1}] must be smaller than the kernel size {k}")
            if _known(size) and size + p0 + p1 < k:
                raise invalid(f"{op}: kernel size {k} does not fit the padded {name} extent {size + p0 + p1}")
        return window_axis(mode, size, k, s, p0, p1, ceil_mode=ceil_mode)

    pt, pb, pl, pr = check_pad_list(op, pad_list) if mode == PAD_MODE_EXPLICIT else (0, 0, 0, 0)
    oh, pt, pb = axis_geometry(h, k_h, s_h, pt, pb, "height")
    ow, pl, pr = axis_geometry(w, k_w, s_w, pl, pr, "width")
    return (k_h, k_w), (s_h, s_w), (oh, ow), (pt, pb, pl, pr)


@shape_rule("OH_NN_OPS_AVG_POOL", "OH_NN_OPS_MAX_POOL")
def _pool_shape(op, shapes, values, *, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool, **_):
    """[N, OH, OW, C] by the kernel's geometry; [N, 1, 1, C] for global pooling."""
    n, h, w, c = _check_rank_dims(op, shapes[0])
    if bool(global_pool):
        return ((n, 1, 1, c),)
    _, _, (oh, ow), _ = pool_geometry(op, h, w, kernel_size, stride, pad_mode, pad_list, round_mode)
    return ((n, oh, ow, c),)


def _pool(op, kind, x, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool, out=None):
    result = _pooled(op, kind, x, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool)
    if out is not None and out.shape == result.shape and out.dtype == result.dtype:
        np.copyto(out, result)
        return out
    return result


def _pooled(op, kind, x, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool):
    _check_rank(op, x)
    if kind == "avg":
        cdtype = _compute_dtype(op, x)
    else:
        if x.dtype == np.bool_ or not (np.issubdtype(x.dtype, np.number)):
            raise unsupported(f"{op}: data type {x.dtype} is not supported")
        cdtype = x.dtype
    n, h, w, c = x.shape
    if bool(global_pool):
        xc = x.astype(cdtype, copy=False)
        out = xc.mean(axis=(1, 2), keepdims=True) if kind == "avg" else xc.max(axis=(1, 2), keepdims=True)
        return out.astype(x.dtype, copy=False)
    (k_h, k_w), (s_h, s_w), (oh, ow), (pt, pb, pl, pr) = pool_geometry(op, h, w, kernel_size, stride, pad_mode,
                                                                        pad_list, round_mode)
    # padding actually touched by the windows (ceil mode may reach past the declared end pad)
    pb = touched_end_padding(h, oh, k_h, s_h, pt)
    pr = touched_end_padding(w, ow, k_w, s_w, pl)
    xc = x.astype(cdtype, copy=False)
    # One np.maximum (np.fmax) / np.add per kernel tap over strided views, into an output buffer: taps reading
    # padding are skipped (a max with the fill or an add of +0 changes nothing), so no padded copy is made.
    if kind == "max":  # exact and order-free: separable, the width taps first, then the height taps
        floats = np.issubdtype(cdtype, np.floating)
        strided = (s_h, s_w) != (1, 1)
        # strided: a NaN propagating maximum first, which is the rule wherever no window holds a NaN (checked on
        # the output, a fraction of the input); with both strides 1 the rule itself, np.fmax, as fast
        out = _max_pool(xc, oh, ow, k_h, k_w, s_h, s_w, pt, pl, np.maximum if strided or not floats else np.fmax)
        if floats and strided and out.size and np.isnan(out.min()):
            out = _max_pool(xc, oh, ow, k_h, k_w, s_h, s_w, pt, pl, np.fmax)
            first = _first_cells(xc, oh, ow, s_h, s_w, pt, pl)
            np.copyto(out, first, where=np.isnan(first))  # NaN where the first cell is (module doc)
        return out.copy() if out is x else out.astype(x.dtype, copy=False)  # never hand back the input itself
    out = np.empty((n, oh, ow, c), dtype=cdtype)
    taps = _pool_taps(xc, oh, ow, k_h, k_w, s_h, s_w, pt, pl)
    # Taps are added in row-major order, the order of the window sum this replaces (bit-identical results).
    if len(taps) > 1 and taps[0][0] and taps[1][0]:
        np.add(taps[0][2], taps[1][2], out=out)
        rest = taps[2:]
    elif taps[0][0]:
        np.copyto(out, taps[0][2])
        rest = taps[1:]
    else:
        out.fill(0)
        rest = taps
    for _, where, src in rest:
        np.add(out[where], src, out=out[where])
    if pt + pb + pl + pr:  # padded cells are not counted (NNAPI): count = valid rows x valid columns
        rows = np.arange(oh) * s_h - pt
        cols = np.arange(ow) * s_w - pl
        cnt_h = np.minimum(rows + k_h, h) - np.maximum(rows, 0)
        cnt_w = np.minimum(cols + k_w, w) - np.maximum(cols, 0)
        count = (cnt_h[:, None] * cnt_w[None, :]).astype(cdtype)[None, :, :, None]
    else:
        count = cdtype.type(k_h * k_w)
    np.divide(out, count, out=out)
    return out.astype(x.dtype, copy=False)


@kernel("OH_NN_OPS_AVG_POOL")
def avg_pool(x, *, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool, out=None):
    return _pool("AVG_POOL", "avg", x, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool, out)


@kernel("OH_NN_OPS_MAX_POOL")
def max_pool(x, *, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool, out=None):
    return _pool("MAX_POOL", "max", x, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool, out)
