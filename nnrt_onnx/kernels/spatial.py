"""Spatial kernels (NHWC): convolutions, pooling, resize, batch/space and depth/space rearrangements, LRN, pad, crop.

Conventions shared by the convolution and pooling kernels (header + NNAPI, see docs/deviations.md):

* Layout NHWC; conv weights ``[outC, kH, kW, inC/group]`` (also for the transposed convolution, as in NNAPI
  TRANSPOSE_CONV_2D); pad lists ``[top, bottom, left, right]``.
* ``pad_mode``: 0 = SAME, 1 or 2 = VALID, -1 (the table default, "no pad mode given") = the explicit pad list.
  SAME follows NNAPI/TF: output = ceil(in / stride), total padding split evenly with the odd unit at bottom/right.
* Lists of two values ([h, w]) also accept a single value meaning both.
* float16 data is accumulated in float32 and returned as float16; float64 stays float64.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import invalid, unsupported
from . import kernel

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


# ----------------------------------------------------------------------------------------------------------------
# helpers


def _compute_dtype(op: str, *arrays: np.ndarray) -> np.dtype:
    """float32 for float16/float32 data, float64 for float64; anything else is unsupported."""
    for a in arrays:
        if a.dtype not in _FLOATS:
            raise unsupported(f"{op}: data type {a.dtype} is not supported (float16/float32/float64, or quantized "
                              f"int8/uint8 with quant params)")
    return np.dtype(np.float64) if any(a.dtype == np.float64 for a in arrays) else np.dtype(np.float32)


def _check_rank(op: str, x: np.ndarray, rank: int = 4, what: str = "input") -> None:
    if x.ndim != rank:
        raise invalid(f"{op}: {what} must be a {rank}-D NHWC tensor, got shape {list(x.shape)}")


def _pair(op: str, name: str, values, minimum: int) -> tuple[int, int]:
    vals = [int(v) for v in np.asarray(values).reshape(-1).tolist()]
    if len(vals) == 1:
        vals = vals * 2
    if len(vals) != 2:
        raise invalid(f"{op}: {name} needs 2 values [h, w] (or 1 for both), got {vals}")
    if any(v < minimum for v in vals):
        raise invalid(f"{op}: {name} values must be >= {minimum}, got {vals}")
    return vals[0], vals[1]


def _pad_list(op: str, pad_list) -> tuple[int, int, int, int]:
    vals = [int(v) for v in np.asarray(pad_list).reshape(-1).tolist()]
    if len(vals) == 0:
        vals = [0, 0, 0, 0]
    if len(vals) != 4:
        raise invalid(f"{op}: pad list needs 4 values [top, bottom, left, right], got {vals}")
    if any(v < 0 for v in vals):
        raise invalid(f"{op}: pad list values must be >= 0, got {vals}")
    return vals[0], vals[1], vals[2], vals[3]


def _check_pad_mode(op: str, pad_mode) -> int:
    mode = int(pad_mode)
    if mode not in (-1, 0, 1, 2):
        raise invalid(f"{op}: pad mode {mode} is not 0 (same) or 1/2 (valid)")
    return mode


def _same_pads(size: int, stride: int, extent: int) -> tuple[int, int, int]:
    """NNAPI/TF SAME: output ceil(size/stride); the odd padding unit goes to the end (bottom/right)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + extent - size, 0)
    return out, total // 2, total - total // 2


def _tap_range(out_size: int, size: int, stride: int, offset: int) -> tuple[int, int, int]:
    """Output positions [r0, r1) whose kernel tap at input position r * stride + offset lies inside [0, size),
    and the input position of r0 (the other taps read padding)."""
    r0 = max(0, -(offset // stride))
    r1 = min(out_size, (size - 1 - offset) // stride + 1) if size - 1 - offset >= 0 else 0
    return r0, max(r0, r1), r0 * stride + offset


def _conv_geometry(op, h, w, ek_h, ek_w, s_h, s_w, pad_mode, pad_list):
    """Output size and pads of a (dilated) convolution; ek = effective (dilated) kernel extent."""
    mode = _check_pad_mode(op, pad_mode)
    if mode == 0:
        oh, pt, pb = _same_pads(h, s_h, ek_h)
        ow, pl, pr = _same_pads(w, s_w, ek_w)
    else:
        pt, pb, pl, pr = (0, 0, 0, 0) if mode in (1, 2) else _pad_list(op, pad_list)
        oh = (h + pt + pb - ek_h) // s_h + 1 if h + pt + pb >= ek_h else 0
        ow = (w + pl + pr - ek_w) // s_w + 1 if w + pl + pr >= ek_w else 0
    if oh <= 0 or ow <= 0:
        raise invalid(f"{op}: kernel extent [{ek_h}, {ek_w}] does not fit the padded input "
                      f"[{h + pt + pb}, {w + pl + pr}]")
    return oh, ow, (pt, pb, pl, pr)


def _real_bias(op: str, bias: np.ndarray, n_out: int, ctx, cdtype) -> np.ndarray:
    """The bias as real values in the compute dtype; an integer bias is the quantized INT32 bias of the header
    (scale = input scale * weight scale per output channel, zero point 0)."""
    if bias.ndim != 1 or bias.shape[0] != n_out:
        raise invalid(f"{op}: bias must be 1-D of length outChannel={n_out}, got shape {list(bias.shape)}")
    if bias.dtype in _FLOATS:
        return bias.astype(cdtype, copy=False)
    if not np.issubdtype(bias.dtype, np.integer):
        raise unsupported(f"{op}: bias data type {bias.dtype} is not supported")
    in_q = ctx.input_quant[0] if ctx is not None and len(ctx.input_quant) > 1 else None
    w_q = ctx.input_quant[1] if ctx is not None and len(ctx.input_quant) > 1 else None
    if in_q is None or w_q is None:
        raise invalid(f"{op}: an integer ({bias.dtype}) bias needs quantized input and weight "
                      f"(its scale is input scale * weight scale)")
    w_scales = np.asarray(w_q.scales, dtype=np.float64)
    if w_scales.size not in (1, n_out):
        raise invalid(f"{op}: weight has {w_scales.size} scales, expected 1 or outChannel={n_out}")
    return (bias.astype(np.float64) * (in_q.scales[0] * w_scales)).astype(cdtype)


def _depthwise_core(x, w, strides, dilation, pads):
    """Depthwise convolution (weight [C * mult, kH, kW, 1]), accumulated one kernel tap at a time in row-major tap
    order into the output buffer, as ``out = 0; out += x_tap * w_tap``. Taps that would read padding are skipped
    for those output positions (adding 0 * w changes nothing for finite weights), so no padded copy is made.
    The weights of a tap are tiled along the output width, so every multiply/add runs over whole (W, C) rows
    instead of C-long pieces. A channel multiplier repeats the input channels once (output channel k reads input
    channel k // mult): viewing the output as [N, OH, OW, C, mult] instead, without the copy, was ~2x slower
    (mult-long inner loops)."""
    o, kh, kw, _ = w.shape
    if o != x.shape[3]:  # channel multiplier: output channel k reads input channel k // mult
        x = np.repeat(x, o // x.shape[3], axis=3)  # one copy; faster than mult-long inner loops over a view
    n, h, wd, c = x.shape
    s_h, s_w = strides
    d_h, d_w = dilation
    pt, pb, pl, pr = pads
    oh = (h + pt + pb - (kh - 1) * d_h - 1) // s_h + 1
    ow = (wd + pl + pr - (kw - 1) * d_w - 1) // s_w + 1
    # [kH, kW, OW, C]: each tap's weights repeated along the output width
    wt = np.ascontiguousarray(np.broadcast_to(w[:, :, :, 0].transpose(1, 2, 0)[:, :, None], (kh, kw, ow, c)))
    out = np.empty((n, oh, ow, c), dtype=x.dtype)
    tmp = None
    started = False
    for i in range(kh):
        r0, r1, a = _tap_range(oh, h, s_h, i * d_h - pt)
        if r1 <= r0:
            continue
        for j in range(kw):
            q0, q1, b = _tap_range(ow, wd, s_w, j * d_w - pl)
            if q1 <= q0:
                continue
            src = x[:, a: a + (r1 - r0 - 1) * s_h + 1: s_h, b: b + (q1 - q0 - 1) * s_w + 1: s_w]
            wtap = wt[i, j, q0:q1]
            where = (slice(None), slice(r0, r1), slice(q0, q1))
            if not started:
                if r1 - r0 < oh or q1 - q0 < ow:
                    out.fill(0)
                else:  # 0 + x * w == x * w (up to the sign of a zero): write the first full tap directly
                    np.multiply(src, wtap, out=out)
                    started = True
                    continue
                started = True
            if tmp is None:
                tmp = np.empty_like(out)
            np.multiply(src, wtap, out=tmp[where])
            np.add(out[where], tmp[where], out=out[where])
    if not started:  # every tap reads padding only (a 1x1 kernel over pads): the sum is 0
        out.fill(0)
    return out


def _conv_core(x, w, strides, dilation, pads, group, op):
    """Grouped 2-D convolution, NHWC, weight [O, kH, kW, C/group]: im2col + one batched matmul over groups."""
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    if cg == 1 and group > 1 and np.isfinite(w).all():  # depthwise; non-finite weights: padded path below
        return _depthwise_core(x, w, strides, dilation, pads)
    s_h, s_w = strides
    d_h, d_w = dilation
    pt, pb, pl, pr = pads
    if any(pads):
        x = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    ek_h, ek_w = (kh - 1) * d_h + 1, (kw - 1) * d_w + 1
    oh = (x.shape[1] - ek_h) // s_h + 1
    ow = (x.shape[2] - ek_w) // s_w + 1
    og = o // group
    if cg == 1 and group > 1:  # depthwise with a non-finite weight (0 * inf in the padding must stay NaN)
        xs = x if og == 1 else np.repeat(x, og, axis=3)  # output channel k reads input channel k // og
        out = np.zeros((n, oh, ow, o), dtype=x.dtype)
        for i in range(kh):
            for j in range(kw):
                out += xs[:, i * d_h: i * d_h + (oh - 1) * s_h + 1: s_h, j * d_w: j * d_w + (ow - 1) * s_w + 1: s_w] \
                    * w[:, i, j, 0]
        return out
    win = sliding_window_view(x, (ek_h, ek_w), axis=(1, 2))  # [N, ., ., C, ekH, ekW]
    win = win[:, : (oh - 1) * s_h + 1 : s_h, : (ow - 1) * s_w + 1 : s_w, :, ::d_h, ::d_w]  # [N,OH,OW,C,kH,kW]
    cols = win.reshape(n, oh, ow, group, cg, kh, kw).transpose(3, 0, 1, 2, 5, 6, 4)
    cols = cols.reshape(group, n * oh * ow, kh * kw * cg)  # im2col (one copy), (kH, kW, Cg) order like w
    wg = w.reshape(group, og, kh * kw * cg).transpose(0, 2, 1)  # [G, K, Og]
    out = np.matmul(cols, wg)  # [G, M, Og]
    return out.transpose(1, 0, 2).reshape(n, oh, ow, o)


def _conv_shapes(op, x, weight, group):
    """Checked NHWC input and [out, kH, kW, in/group] weight of a (transposed) convolution: compute dtype,
    input dims, weight dims, group."""
    _check_rank(op, x)
    _check_rank(op, weight, what="weight")
    cdtype = _compute_dtype(op, x, weight)
    c = x.shape[3]
    o, _, _, cg = weight.shape
    group = int(group)
    if group < 1:
        raise invalid(f"{op}: group must be >= 1, got {group}")
    if cg * group != c:
        raise invalid(f"{op}: input has {c} channels but weight inChannel/group={cg} x group={group} = {cg * group}")
    if o % group:
        raise invalid(f"{op}: outChannel={o} is not divisible by group={group}")
    return cdtype, x.shape, weight.shape, group


def _conv_common(op, x, weight, bias, ctx, strides, pad_mode, pad_list, dilation, group):
    cdtype, (n, h, w, c), (o, kh, kw, cg), group = _conv_shapes(op, x, weight, group)
    s = _pair(op, "stride", strides, 1)
    d = _pair(op, "dilation", dilation, 1)
    oh, ow, pads = _conv_geometry(op, h, w, (kh - 1) * d[0] + 1, (kw - 1) * d[1] + 1, s[0], s[1], pad_mode, pad_list)
    b = _real_bias(op, bias, o, ctx, cdtype)
    out = _conv_core(x.astype(cdtype, copy=False), weight.astype(cdtype, copy=False), s, d, pads, group, op)
    # the bias tiled along the width, so the add runs over whole (W, C) rows rather than C-long pieces
    np.add(out, np.tile(b, out.shape[2]).reshape(out.shape[2], o), out=out)
    return out.astype(x.dtype, copy=False)


# ----------------------------------------------------------------------------------------------------------------
# convolutions


@kernel("OH_NN_OPS_CONV2D")
def conv2d(x, weight, bias, *, strides, pad_mode, pad_list, dilation, group, ctx):
    return _conv_common("CONV2D", x, weight, bias, ctx, strides, pad_mode, pad_list, dilation, group)


@kernel("OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE")
def depthwise_conv2d_native(x, weight, bias, *, strides, pad_mode, pad_list, dilation, ctx):
    op = "DEPTHWISE_CONV2D_NATIVE"
    _check_rank(op, x)
    _check_rank(op, weight, what="weight")
    c = x.shape[3]
    if weight.shape[3] != 1:
        raise invalid(f"{op}: weight must be [outChannel, kH, kW, 1], got {list(weight.shape)}")
    if weight.shape[0] % c:
        raise invalid(f"{op}: outChannel={weight.shape[0]} is not a multiple (channelMultiplier) of inChannel={c}")
    return _conv_common(op, x, weight, bias, ctx, strides, pad_mode, pad_list, dilation, c)


@kernel("OH_NN_OPS_CONV2D_TRANSPOSE")
def conv2d_transpose(x, weight, bias, *, strides, pad_mode, pad_list, dilation, output_paddings, group, ctx):
    """Transposed convolution; weight [outC, kH, kW, inC/group] (NNAPI TRANSPOSE_CONV_2D layout).

    Full output F = (in-1)*stride + (k-1)*dilation + 1, then cropped: explicit pads -> F - top - bottom; VALID -> F;
    SAME -> in*stride (crop start = max(F - in*stride, 0) // 2, TF). outputPads rows/cols are appended at the
    bottom/right (PyTorch/ONNX meaning) and must be < stride.
    """
    op = "CONV2D_TRANSPOSE"
    cdtype, (n, h, w, c), (o, kh, kw, cg), group = _conv_shapes(op, x, weight, group)
    s_h, s_w = _pair(op, "stride", strides, 1)
    d_h, d_w = _pair(op, "dilation", dilation, 1)
    op_vals = list(np.asarray(output_paddings).reshape(-1).tolist())
    op_h, op_w = _pair(op, "output paddings", op_vals or [0], 0)
    if op_h >= s_h or op_w >= s_w:
        raise invalid(f"{op}: output paddings [{op_h}, {op_w}] must be smaller than the stride [{s_h}, {s_w}]")
    ek_h, ek_w = (kh - 1) * d_h + 1, (kw - 1) * d_w + 1
    full_h, full_w = (h - 1) * s_h + ek_h, (w - 1) * s_w + ek_w
    mode = _check_pad_mode(op, pad_mode)
    if mode == 0:
        out_h, out_w = h * s_h, w * s_w
        top, left = max(full_h - out_h, 0) // 2, max(full_w - out_w, 0) // 2
    elif mode in (1, 2):
        out_h, out_w, top, left = full_h, full_w, 0, 0
    else:
        pt, pb, pl, pr = _pad_list(op, pad_list)
        out_h, out_w, top, left = full_h - pt - pb, full_w - pl - pr, pt, pl
    out_h, out_w = out_h + op_h, out_w + op_w
    if out_h <= 0 or out_w <= 0:
        raise invalid(f"{op}: the pads crop the whole output (full size [{full_h}, {full_w}])")
    b = _real_bias(op, bias, o, ctx, cdtype)

    og = o // group
    xg = x.astype(cdtype, copy=False).reshape(n * h * w, group, cg).transpose(1, 0, 2)  # [G, M, Cg]
    wg = weight.astype(cdtype, copy=False).reshape(group, og, kh, kw, cg).transpose(0, 4, 2, 3, 1)
    wg = wg.reshape(group, cg, kh * kw * og)  # [G, Cg, kH*kW*Og]
    cols = np.matmul(xg, wg).reshape(group, n, h, w, kh, kw, og).transpose(1, 2, 3, 4, 5, 0, 6)
    cols = cols.reshape(n, h, w, kh, kw, o)
    full = np.zeros((n, max(full_h, top + out_h), max(full_w, left + out_w), o), dtype=cdtype)
    for i in range(kh):  # col2im: scatter-add each kernel tap (loop over the small kernel window only)
        for j in range(kw):
            full[:, i * d_h: i * d_h + (h - 1) * s_h + 1: s_h, j * d_w: j * d_w + (w - 1) * s_w + 1: s_w, :] += \
                cols[:, :, :, i, j, :]
    out = full[:, top: top + out_h, left: left + out_w, :] + b
    return out.astype(x.dtype, copy=False)


# ----------------------------------------------------------------------------------------------------------------
# pooling


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


def _max_1d(x, axis, out_size, k, s, p0, fill):
    """Max pooling along one axis (1 = height, 2 = width) of an NHWC array: one np.maximum per kernel tap over a
    strided view, into the output buffer; taps reading padding are skipped (the max with the fill changes
    nothing)."""
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
            np.maximum(out[t[1]], t[2], out=out[t[1]])
    return out


def _pool(op, kind, x, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool):
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
    if len(np.asarray(kernel_size).reshape(-1)) == 0:
        raise invalid(f"{op}: kernel size is required (or set global pooling)")
    k_h, k_w = _pair(op, "kernel size", kernel_size, 1)
    s_h, s_w = _pair(op, "stride", stride, 1)
    round_mode = int(round_mode)
    if round_mode not in (0, 1):
        raise invalid(f"{op}: round mode {round_mode} is not 0 (floor) or 1 (ceil)")
    mode = _check_pad_mode(op, pad_mode)

    def axis_geometry(size, k, s, p0, p1, name):
        if mode == 0:
            return _same_pads(size, s, k)
        if p0 >= k or p1 >= k:
            raise invalid(f"{op}: {name} pads [{p0}, {p1}] must be smaller than the kernel size {k}")
        span = size + p0 + p1 - k
        if span < 0:
            raise invalid(f"{op}: kernel size {k} does not fit the padded {name} extent {size + p0 + p1}")
        out = (-(-span // s) if round_mode == 1 else span // s) + 1
        if round_mode == 1 and (out - 1) * s >= size + p0:  # a last window starting in the end padding is dropped
            out -= 1
        return out, p0, p1

    pt, pb, pl, pr = (0, 0, 0, 0) if mode != -1 else _pad_list(op, pad_list)
    oh, pt, pb = axis_geometry(h, k_h, s_h, pt, pb, "height")
    ow, pl, pr = axis_geometry(w, k_w, s_w, pl, pr, "width")
    # padding actually touched by the windows (ceil mode may reach past the declared end pad)
    pb = max((oh - 1) * s_h + k_h - h - pt, 0)
    pr = max((ow - 1) * s_w + k_w - w - pl, 0)
    xc = x.astype(cdtype, copy=False)
    # One np.maximum / np.add per kernel tap over strided views, into an output buffer: taps reading padding are
    # skipped (a max with the fill or an add of +0 changes nothing), so no padded copy is made.
    if kind == "max":  # max is exact and order-free: separable, the width taps first, then the height taps
        fill = -np.inf if np.issubdtype(cdtype, np.floating) else np.iinfo(cdtype).min
        out = _max_1d(_max_1d(xc, 2, ow, k_w, s_w, pl, fill), 1, oh, k_h, s_h, pt, fill)
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
def avg_pool(x, *, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool):
    return _pool("AVG_POOL", "avg", x, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool)


@kernel("OH_NN_OPS_MAX_POOL")
def max_pool(x, *, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool):
    return _pool("MAX_POOL", "max", x, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool)


# ----------------------------------------------------------------------------------------------------------------
# resize


def _linear_taps(in_size: int, out_size: int, mode: int):
    """Source indices (lo, hi) and weight of hi for each output position (TF/NNAPI = ONNX for these modes)."""
    o = np.arange(out_size, dtype=np.float64)
    if mode == 0:  # ASYMMETRIC
        src = o * (in_size / out_size)
    elif mode == 1:  # ALIGN_CORNERS
        src = o * ((in_size - 1) / (out_size - 1)) if out_size > 1 else np.zeros_like(o)
    else:  # HALF_PIXEL
        src = (o + 0.5) * (in_size / out_size) - 0.5
    # Edge clamping; for a 2-tap linear filter this equals excluding (and renormalising) outside samples.
    src = np.clip(src, 0.0, in_size - 1)
    lo = np.floor(src).astype(np.intp)
    hi = np.minimum(lo + 1, in_size - 1)
    return lo, hi, src - lo


def bilinear_matrix(in_size: int, out_size: int, mode: int) -> np.ndarray:
    """The [out, in] float64 matrix RESIZE_BILINEAR applies along one axis (used by the ONNX importer and exporter
    to decide when ONNX Resize and this op agree, and to write the op as matrix products)."""
    lo, hi, frac = _linear_taps(in_size, out_size, mode)
    matrix = np.zeros((out_size, in_size))
    np.add.at(matrix, (np.arange(out_size), lo), 1 - frac)
    np.add.at(matrix, (np.arange(out_size), hi), frac)
    return matrix


@kernel("OH_NN_OPS_RESIZE_BILINEAR")
def resize_bilinear(x, *, new_height, new_width, preserve_aspect_ratio, coordinate_transform_mode, exclude_outside):
    op = "RESIZE_BILINEAR"
    _check_rank(op, x)
    cdtype = _compute_dtype(op, x)
    n, h, w, c = x.shape
    nh, nw = int(new_height), int(new_width)
    if nh <= 0 or nw <= 0:
        raise invalid(f"{op}: new height/width must be > 0, got [{nh}, {nw}]")
    mode = int(coordinate_transform_mode)
    if mode not in (0, 1, 2):
        raise invalid(f"{op}: coordinate transform mode {mode} is not 0 (asymmetric), 1 (align corners) "
                      f"or 2 (half pixel)")
    if int(exclude_outside) not in (0, 1):
        raise invalid(f"{op}: exclude outside must be 0 or 1, got {exclude_outside}")
    if h == 0 or w == 0:
        raise invalid(f"{op}: input has an empty spatial dimension {list(x.shape)}")
    if bool(preserve_aspect_ratio):  # TF: fit inside [newHeight, newWidth] keeping h:w
        scale = min(nh / h, nw / w)
        nh, nw = max(int(np.rint(scale * h)), 1), max(int(np.rint(scale * w)), 1)
    xc = x.astype(cdtype, copy=False)
    lo, hi, frac = _linear_taps(h, nh, mode)
    f = frac.astype(cdtype)[None, :, None, None]
    rows = xc[:, lo] * (1 - f) + xc[:, hi] * f
    lo, hi, frac = _linear_taps(w, nw, mode)
    f = frac.astype(cdtype)[None, None, :, None]
    out = rows[:, :, lo] * (1 - f) + rows[:, :, hi] * f
    return out.astype(x.dtype, copy=False)


# ----------------------------------------------------------------------------------------------------------------
# batch/space, depth/space


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1).tolist()]


@kernel("OH_NN_OPS_BATCH_TO_SPACE_ND")
def batch_to_space_nd(x, *, block_size, crops):
    op = "BATCH_TO_SPACE_ND"
    _check_rank(op, x)
    block = _ints(block_size)
    if len(block) != 2 or min(block) < 1:
        raise invalid(f"{op}: block size needs 2 values >= 1 [bH, bW], got {block}")
    crop = _ints(crops) or [0, 0, 0, 0]
    if len(crop) != 4 or min(crop) < 0:
        raise invalid(f"{op}: crops need 4 values >= 0 [[top, bottom], [left, right]], got {crop}")
    n, h, w, c = x.shape
    b0, b1 = block
    if n % (b0 * b1):
        raise invalid(f"{op}: batch {n} is not divisible by blockSize product {b0 * b1}")
    if crop[0] + crop[1] > h * b0 or crop[2] + crop[3] > w * b1:
        raise invalid(f"{op}: crops {crop} exceed the output extent [{h * b0}, {w * b1}]")
    nb = n // (b0 * b1)
    y = x.reshape(b0, b1, nb, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(nb, h * b0, w * b1, c)
    return np.ascontiguousarray(y[:, crop[0]: h * b0 - crop[1], crop[2]: w * b1 - crop[3]])


@kernel("OH_NN_OPS_SPACE_TO_BATCH_ND")
def space_to_batch_nd(x, *, block_shape, paddings):
    """paddings [[top, bottom], [left, right]] as the header says (NOT the runtime's duplicated first row)."""
    op = "SPACE_TO_BATCH_ND"
    _check_rank(op, x)
    block = _ints(block_shape)
    if len(block) != 2 or min(block) < 1:
        raise invalid(f"{op}: block shape needs 2 values >= 1 [bH, bW], got {block}")
    pad = _ints(paddings) or [0, 0, 0, 0]
    if len(pad) != 4 or min(pad) < 0:
        raise invalid(f"{op}: paddings need 4 values >= 0 [[top, bottom], [left, right]], got {pad}")
    n, h, w, c = x.shape
    b0, b1 = block
    hp, wp = h + pad[0] + pad[1], w + pad[2] + pad[3]
    if hp % b0 or wp % b1:
        raise invalid(f"{op}: padded spatial size [{hp}, {wp}] is not divisible by the block shape {block}")
    xp = np.pad(x, ((0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0))) if any(pad) else x
    y = xp.reshape(n, hp // b0, b0, wp // b1, b1, c).transpose(2, 4, 0, 1, 3, 5)
    return np.ascontiguousarray(y.reshape(b0 * b1 * n, hp // b0, wp // b1, c))


@kernel("OH_NN_OPS_DEPTH_TO_SPACE")
def depth_to_space(x, *, block_size, mode):
    op = "DEPTH_TO_SPACE"
    _check_rank(op, x)
    b = int(block_size)
    if b < 1:
        raise invalid(f"{op}: block size must be >= 1, got {b}")
    mode = int(mode)
    if mode not in (0, 1):
        raise invalid(f"{op}: mode {mode} is not 0 (DCR) or 1 (CRD)")
    n, h, w, c = x.shape
    if c % (b * b):
        raise invalid(f"{op}: channels {c} are not divisible by blockSize^2 = {b * b}")
    cc = c // (b * b)
    if mode == 0:  # DCR: channel = (i * b + j) * C' + c'
        y = x.reshape(n, h, w, b, b, cc).transpose(0, 1, 3, 2, 4, 5)
    else:  # CRD: channel = c' * b * b + i * b + j
        y = x.reshape(n, h, w, cc, b, b).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(y.reshape(n, h * b, w * b, cc))


@kernel("OH_NN_OPS_SPACE_TO_DEPTH")
def space_to_depth(x, *, block_size):
    op = "SPACE_TO_DEPTH"
    _check_rank(op, x)
    b = int(block_size)
    if b < 2:
        raise invalid(f"{op}: block size must be >= 2, got {b}")
    n, h, w, c = x.shape
    if h % b or w % b:
        raise invalid(f"{op}: height/width [{h}, {w}] are not divisible by block size {b}")
    y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)  # channel = (i * b + j) * C + c
    return np.ascontiguousarray(y.reshape(n, h // b, w // b, b * b * c))


# ----------------------------------------------------------------------------------------------------------------
# LRN, pad, crop


@kernel("OH_NN_OPS_LRN")
def lrn(x, *, depth_radius, bias, alpha, beta, norm_region):
    """TF/NNAPI LRN across the last (channel) axis:
    out = x / (bias + alpha * sum(x[c-r .. c+r]^2)) ** beta   (alpha is NOT divided by the window size)."""
    op = "LRN"
    if x.ndim < 1:
        raise invalid(f"{op}: input must have rank >= 1")
    cdtype = _compute_dtype(op, x)
    if int(norm_region) != 0:
        raise invalid(f"{op}: norm region {norm_region} is not 0 (ACROSS_CHANNELS)")
    r = int(depth_radius)
    if r < 0:
        raise invalid(f"{op}: depth radius must be >= 0, got {r}")
    xc = x.astype(cdtype, copy=False)
    sq = np.square(xc)
    pad = [(0, 0)] * (x.ndim - 1) + [(r, r)]
    sqr_sum = sliding_window_view(np.pad(sq, pad), 2 * r + 1, axis=-1).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = xc / np.power(cdtype.type(bias) + cdtype.type(alpha) * sqr_sum, cdtype.type(beta))
    return out.astype(x.dtype, copy=False)


def _fill_value(op: str, value, dtype: np.dtype):
    if dtype in _FLOATS:
        return dtype.type(value)
    v = float(value)
    if dtype == np.bool_:
        if v not in (0.0, 1.0):
            raise invalid(f"{op}: constant value {value} is not representable as bool")
        return bool(v)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        if not v.is_integer() or not info.min <= v <= info.max:
            raise invalid(f"{op}: constant value {value} is not representable as {dtype}")
        return dtype.type(int(v))
    raise unsupported(f"{op}: data type {dtype} is not supported")


@kernel("OH_NN_OPS_PAD")
def pad(x, paddings, *, constant_value, padding_mode):
    op = "PAD"
    paddings = np.asarray(paddings)
    if not np.issubdtype(paddings.dtype, np.integer):
        raise invalid(f"{op}: paddings must be an integer tensor, got {paddings.dtype}")
    if paddings.size != 2 * x.ndim:
        raise invalid(f"{op}: paddings must have shape [{x.ndim}, 2] for a rank-{x.ndim} input, "
                      f"got {list(paddings.shape)}")
    pads = paddings.reshape(x.ndim, 2).astype(np.int64)
    if (pads < 0).any():
        raise invalid(f"{op}: paddings must be >= 0, got {pads.tolist()}")
    pads_t = [tuple(int(v) for v in row) for row in pads]
    mode = int(padding_mode)
    if mode == 0:
        return np.pad(x, pads_t, mode="constant", constant_values=_fill_value(op, constant_value, x.dtype))
    if mode in (1, 2):
        limit_extra = 0 if mode == 1 else 1  # REFLECT: pad <= dim-1 (edge not repeated); SYMMETRIC: pad <= dim
        for axis, (p0, p1) in enumerate(pads_t):
            if max(p0, p1) > x.shape[axis] - 1 + limit_extra:
                raise invalid(f"{op}: {'REFLECT' if mode == 1 else 'SYMMETRIC'} paddings {[p0, p1]} are too large "
                              f"for dimension {axis} of size {x.shape[axis]}")
        return np.pad(x, pads_t, mode="reflect" if mode == 1 else "symmetric")
    if mode == 3:
        raise unsupported(f"{op}: padding mode 3 (RESERVED) has no defined meaning")
    raise invalid(f"{op}: padding mode {mode} is not 0..3")


@kernel("OH_NN_OPS_CROP")
def crop(x, shape, *, axis, offset):
    """Output = x[off_i : off_i + size_i] per dim. ``shape`` (1-D) holds the window sizes, either for every dim
    or for the dims from ``axis`` on. Dims before ``axis`` have offset 0; from ``axis`` on the offset is
    offset[0] for all (1 value) or one per dim (rank - axis values); no offset = 0 (MindSpore Crop rule)."""
    op = "CROP"
    rank = x.ndim
    ax = int(axis)
    if not -rank <= ax < rank:
        raise invalid(f"{op}: axis {ax} is out of range for a rank-{rank} input")
    ax %= rank
    shape = np.asarray(shape)
    if shape.ndim != 1:
        raise invalid(f"{op}: shape must be a 1-D tensor, got shape {list(shape.shape)}")
    sizes = shape.tolist()
    if any(float(s) != int(s) or int(s) < 0 for s in sizes):
        raise invalid(f"{op}: shape values must be integers >= 0, got {sizes}")
    sizes = [int(s) for s in sizes]
    if len(sizes) == rank - ax and len(sizes) != rank:
        sizes = list(x.shape[:ax]) + sizes
    if len(sizes) != rank:
        raise invalid(f"{op}: shape needs {rank} (or rank - axis = {rank - ax}) values, got {len(sizes)}")
    offs = _ints(offset)
    if len(offs) == 0:
        offs = [0] * (rank - ax)
    elif len(offs) == 1:
        offs = offs * (rank - ax)
    elif len(offs) != rank - ax:
        raise invalid(f"{op}: offset needs 1 or rank - axis = {rank - ax} values, got {offs}")
    offs = [0] * ax + offs
    for i, (o, s) in enumerate(zip(offs, sizes)):
        if o < 0 or o + s > x.shape[i]:
            raise invalid(f"{op}: window [{o}, {o + s}) exceeds dimension {i} of size {x.shape[i]}")
    return np.ascontiguousarray(x[tuple(slice(o, o + s) for o, s in zip(offs, sizes))])
