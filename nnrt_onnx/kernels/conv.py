"""Convolution kernels (NHWC): CONV2D, DEPTHWISE_CONV2D_NATIVE, CONV2D_TRANSPOSE.

Conventions shared by the convolution and pooling kernels (header + NNAPI, see docs/deviations.md):

* Layout NHWC; conv weights ``[outC, kH, kW, inC/group]`` (also for the transposed convolution, as in NNAPI
  TRANSPOSE_CONV_2D); pad lists ``[top, bottom, left, right]``.
* ``pad_mode``: 0 = SAME, 1 or 2 = VALID, -1 (the table default, "no pad mode given") = the explicit pad list.
  SAME follows NNAPI/TF: output = ceil(in / stride), total padding split evenly with the odd unit at bottom/right.
  These rules (and the output sizes) are defined once in ``nnrt_onnx.geometry``; each kernel's shape rule runs
  the kernel's own checks and geometry helpers on shapes alone.
* Lists of two values ([h, w]) also accept a single value meaning both.
* float16 data is accumulated in float32 and returned as float16; float64 stays float64.
"""
from __future__ import annotations

import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from ..errors import NNRtError, invalid, unsupported
from ..geometry import (
    PAD_MODE_EXPLICIT,
    UNKNOWN,
    check_pad_list,
    check_pad_mode,
    effective_extent,
    spatial_pair,
    transposed_axis,
    transposed_full_size,
    window_axis,
)
from . import _accel, _gemm, _runners, _tiles, kernel, shape_rule, specialiser
from ._common import _FLOATS, _check_rank, _check_rank_dims, _compute_dtype, _known, _packed, _packed_matrix
from ._finish import Finish


def _conv_geometry(op, h, w, ek_h, ek_w, s_h, s_w, pad_mode, pad_list_values):
    """Output size and pads of a (dilated) convolution; ek = effective (dilated) kernel extent (sizes may be
    UNKNOWN: so are the results then)."""
    mode = check_pad_mode(op, pad_mode)
    pads = check_pad_list(op, pad_list_values) if mode == PAD_MODE_EXPLICIT else (0, 0, 0, 0)
    oh, pt, pb = window_axis(mode, h, ek_h, s_h, pads[0], pads[1])
    ow, pl, pr = window_axis(mode, w, ek_w, s_w, pads[2], pads[3])
    if oh == 0 or ow == 0:
        raise invalid(f"{op}: kernel extent [{ek_h}, {ek_w}] does not fit the padded input "
                      f"[{h + pt + pb}, {w + pl + pr}]")
    return oh, ow, (pt, pb, pl, pr)


def _conv_window(op, h, w, kh, kw, strides, dilation, pad_mode, pad_list_values):
    """Checked strides and dilation, then :func:`_conv_geometry` of a kH x kW kernel: (strides, dilation,
    (oh, ow, pads))."""
    s = spatial_pair(op, "stride", strides, 1)
    d = spatial_pair(op, "dilation", dilation, 1)
    geometry = _conv_geometry(op, h, w, effective_extent(kh, d[0]), effective_extent(kw, d[1]), s[0], s[1],
                              pad_mode, pad_list_values)
    return s, d, geometry


def _check_bias_dims(op: str, bias_shape, n_out: int) -> None:
    if bias_shape is None or not _known(n_out):
        return
    if len(bias_shape) != 1 or _known(bias_shape[0]) and bias_shape[0] != n_out:
        raise invalid(f"{op}: bias must be 1-D of length outChannel={n_out}, got shape {list(bias_shape)}")


def _real_bias(op: str, bias: np.ndarray, n_out: int, ctx, cdtype) -> np.ndarray:
    """The bias as real values in the compute dtype; an integer bias is the quantized INT32 bias of the header
    (scale = input scale * weight scale per output channel, zero point 0)."""
    _check_bias_dims(op, bias.shape, n_out)
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


# work blocks of the blocked conv loops (measured on a 2-core EPYC with 512 KiB L2 and a Xeon with 2 MiB L2,
# docs/performance.md)
_IM2COL_BLOCK_BYTES = 1 << 19  # im2col rows per GEMM call (0.92-0.98x the time of 2 MiB blocks on the Xeon)
# ... but at least this many times the weight matrix's bytes: OpenBLAS packs the whole weight matrix again for every
# call, which for a few rows of a large matrix costs more than the product (ResNet-50's 3x3/2 512 -> 512 at 7x7,
# AlexNet's 13x13 384 -> 384: 0.52-0.82x the time in blocks that large; no change where the weights are small)
_IM2COL_WEIGHT_MULTIPLE = 2
# kernel-row runs (kW * C values) up to this long go through the compiled im2col: 0.5-0.66x numpy's copy at 9-96,
# 0.89-0.92 at 192-384, but 1.19x at 768, where numpy's copy of long runs is as fast as a memcpy
_COMPILED_IM2COL_MAX_RUN = 512
_DEPTHWISE_BLOCK_BYTES = 1 << 18  # output rows a depthwise tap loop keeps in cache
_SCRATCH = threading.local()


def _scratch(name: str, shape, dtype) -> np.ndarray:
    """A per-thread reusable work array of ``shape`` (grown as needed; contents undefined)."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    pool = _SCRATCH.__dict__.setdefault("pool", {})
    buffer = pool.get(name)
    if buffer is None or buffer.nbytes < size:
        buffer = pool[name] = np.empty(max(size, 64), np.uint8)
    return buffer[:size].view(dtype).reshape(shape)


def _activation_code(activation) -> int:
    code = int(activation or 0)
    if code not in (0, 1, 2):
        raise invalid(f"fused activation {code} is not an OH_NN_FuseType (0..2)")
    return code


def _padded(x, pads, name="pad"):
    """``x`` zero-padded in H and W ([top, bottom, left, right]) into a reused scratch array (``x`` itself when
    there is no padding)."""
    pt, pb, pl, pr = pads
    if not any(pads):
        return x
    n, h, w, c = x.shape
    xp = _scratch(name, (n, h + pt + pb, w + pl + pr, c), x.dtype)
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


def _depthwise_core(x, w, strides, dilation, pads, out_size, bias=None, activation=0, out=None, post=()):
    """Depthwise convolution (weight [C * mult, kH, kW, 1]) in blocks of output rows that stay in cache: for each
    block, the kernel taps in row-major order (``acc = x_tap0 * w_tap0; acc += x_tap * w_tap``), then the bias and
    the fused activation while the block is still in cache. The input is zero-padded once into a reused scratch
    array (0 * w adds nothing for a finite weight; a non-finite weight makes the padded outputs NaN, as a padded
    convolution does). Each tap's weights are tiled along the output width, so every multiply/add runs over whole
    (W, C) rows. A channel multiplier repeats the input channels once (output channel k reads input channel
    k // mult)."""
    o, kh, kw, _ = w.shape
    if o != x.shape[3]:
        x = np.repeat(x, o // x.shape[3], axis=3)
    n, _, _, c = x.shape
    s_h, s_w = strides
    d_h, d_w = dilation
    oh, ow = out_size
    if out is None:
        out = np.empty((n, oh, ow, c), dtype=x.dtype)
    taps = _packed(w, "depthwise_taps", lambda a: np.ascontiguousarray(a[:, :, :, 0].transpose(1, 2, 0)))
    if _accel.depthwise_3x3(x, taps, bias, out, strides, dilation, pads, 0 if post else activation):  # no pad copy
        if post:
            Finish(None, post, activation)(out)
        return out
    xp = _padded(x, pads, "dw_pad")
    if _accel.depthwise(xp, taps, bias, out, strides, dilation, 0 if post else activation):  # numba, when installed
        if post:
            Finish(None, post, activation)(out)
        return out
    wt = _tiled_taps(w, ow)  # [kH, kW, OW, C]
    finish = Finish(bias, post, activation)
    rows = max(1, _DEPTHWISE_BLOCK_BYTES // max(1, n * ow * c * x.dtype.itemsize))
    tmp_full = _scratch("dw_tmp", (n, min(rows, oh), ow, c), x.dtype)
    for r0 in range(0, oh, rows):
        r1 = min(oh, r0 + rows)
        acc = out[:, r0:r1]
        tmp = tmp_full[:, : r1 - r0]
        first = True
        for i in range(kh):
            top = r0 * s_h + i * d_h
            band = xp[:, top: top + (r1 - r0 - 1) * s_h + 1: s_h]
            for j in range(kw):
                src = band[:, :, j * d_w: j * d_w + (ow - 1) * s_w + 1: s_w]
                if first:
                    np.multiply(src, wt[i, j], out=acc)
                    first = False
                else:
                    np.multiply(src, wt[i, j], out=tmp)
                    np.add(acc, tmp, out=acc)
        finish(acc, (slice(None), slice(r0, r1)))
    return out


def _tiled_taps(w, ow):
    """Depthwise weights [C, kH, kW, 1] as [kH, kW, OW, C]: each tap's channel weights repeated along the width."""
    o, kh, kw, _ = w.shape
    return np.ascontiguousarray(np.broadcast_to(w[:, :, :, 0].transpose(1, 2, 0)[:, :, None], (kh, kw, ow, o)))


# Winograd F(2x2, 3x3) (Lavin & Gray 2015): a 2x2 output tile from a 4x4 input tile with 16 multiplies per
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
    register tiles, :func:`._tiles.padded`)."""
    o, _, _, c = w.shape
    g = w.transpose(1, 2, 3, 0).reshape(9, c * o).astype(np.float64)
    return _tiles.padded((_WINO_KG @ g).reshape(16, c, o).astype(np.float32))


def _skewed(length: int) -> int:
    """``length`` float32s plus padding so that consecutive rows of a [16, result] array start 2 KiB + 64 B apart
    modulo 4 KiB (never on the same L1 set)."""
    return length + (528 - length) % 1024


def _winograd_shape(x, w, strides, dilation, group) -> bool:
    """F(2x2, 3x3) can run: a float32 3x3 stride-1 undilated convolution of one group."""
    o, kh, kw, c = w.shape
    return (x.dtype == np.float32 and w.dtype == np.float32 and (kh, kw) == (3, 3) and tuple(strides) == (1, 1)
            and tuple(dilation) == (1, 1) and group == 1)


_WINO_MIN_CHANNELS = 64


def _winograd_geometry(x_shape, o: int, out_size, weight_bytes: int):
    """F(2x2, 3x3)'s tiles of an [N, H, W, C] -> O convolution: (tile rows, tiles per row, padded height and
    width -- every tile inside: >= H + pads since OH = H + pads - 2 --, tile rows per block)."""
    n, _, _, c = x_shape
    oh, ow = out_size
    th, tw = -(-oh // 2), -(-ow // 2)
    block_bytes = max(_WINO_BLOCK_BYTES, _WINO_WEIGHT_MULTIPLE * weight_bytes)  # (each block's GEMMs repack u)
    rows = min(th, max(1, block_bytes // (16 * n * tw * max(c, o) * 4)))
    limit = _gemm.small_kernel_rows(c, o, np.float32)
    if limit:  # blocks whose 16 GEMMs run on BLAS's small-matrix kernel where that pays (kernels/_gemm.py)
        rows = min(rows, max(1, limit // (n * tw)))
    return th, tw, 2 * th + 2, 2 * tw + 2, rows


def _winograd_3x3(x, w, pads, out_size, bias, activation, out, post=()):
    """Stride-1 3x3 convolution by F(2x2, 3x3), in blocks of tile rows; bias and activation per block."""
    n, h, wd, c = x.shape
    o = w.shape[0]
    oh, ow = out_size
    u = _packed(w, "winograd", _winograd_weights)
    th, tw, hp, wp, rows = _winograd_geometry(x.shape, o, out_size, u.nbytes)
    pt, _, pl, _ = pads
    xp = _scratch("wino_pad", (n, hp, wp, c), x.dtype)
    xp[:, :pt] = 0
    xp[:, pt + h:] = 0
    xp[:, pt:pt + h, :pl] = 0
    xp[:, pt:pt + h, pl + wd:] = 0
    xp[:, pt:pt + h, pl:pl + wd] = x
    finish = Finish(bias, post, activation)
    sn, sh, sw, sc = xp.strides
    transforms = _accel.winograd_transforms()
    if transforms is not None and out.dtype == np.float32:
        # compiled transforms (adds and subtracts only, straight from the padded input into the output) around the
        # 16 GEMMs; each of the 16 planes starts off a 4 KiB multiple from the last (16 streams a multiple of 4 KiB
        # apart evict each other from L1: 7x slower transforms at 224x224x64)
        transform_in, transform_out = transforms
        v_full, m_full = (_scratch(name, (16, _skewed(n * rows * tw * k)), np.float32)
                          for name, k in (("wino_v", c), ("wino_m", o)))
        rows_in = _scratch("wino_rows_in", (4, (2 * tw + 2) * c), np.float32)
        rows_out = _scratch("wino_rows_out", (8, tw * o), np.float32)
        # the finish row by row inside transform_out, where the compiled finish can run (else block by block)
        row_finish = finish.row_operands(o, ow, np.float32)
        flat, step = _accel.pixel_runs(out)  # (``out``: C-contiguous or evenly strided)
        for r0 in range(0, th, rows):
            r1 = min(th, r0 + rows)
            t = n * (r1 - r0) * tw
            transform_in(xp, v_full, r0, r1, tw, rows_in)
            _gemm.batched_matmul_into(v_full[:, : t * c].reshape(16, t, c), u, m_full[:, : t * o].reshape(16, t, o))
            transform_out(m_full, flat, step, n, oh, ow, o, r0, r1, tw, rows_out,
                          *(row_finish or _accel.NO_ROW_FINISH))
            if row_finish is None:
                finish(out[:, 2 * r0: min(oh, 2 * r1)], (slice(None), slice(2 * r0, min(oh, 2 * r1))))
        return out
    d_full = _scratch("wino_d", (16, n * rows * tw * c), np.float32)
    v_full = _scratch("wino_v", (16, n * rows * tw * c), np.float32)
    m_full = _scratch("wino_m", (16, n * rows * tw * o), np.float32)
    y_full = _scratch("wino_y", (4, n * rows * tw * o), np.float32)
    for r0 in range(0, th, rows):
        r1 = min(th, r0 + rows)
        t = n * (r1 - r0) * tw
        d, v, m, y = d_full[:, : t * c], v_full[:, : t * c], m_full[:, : t * o], y_full[:, : t * o]
        tiles = as_strided(xp[:, 2 * r0:], (4, 4, n, r1 - r0, tw, c), (sh, sw, sn, 2 * sh, 2 * sw, sc),
                           writeable=False)
        np.copyto(d.reshape(4, 4, n, r1 - r0, tw, c), tiles)
        np.matmul(_WINO_KB, d, out=v)
        _gemm.batched_matmul_into(v.reshape(16, t, c), u, m.reshape(16, t, o))
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


def _use_kn2row(x, w, strides, dilation, group) -> bool:
    """kn2row (below) can run: a float stride-1 undilated convolution of one group with a kernel larger than 1x1,
    and the compiled gather."""
    o, kh, kw, c = w.shape
    return (x.dtype in (np.float32, np.float64) and w.dtype == x.dtype and group == 1 and kh * kw > 1
            and tuple(strides) == (1, 1) and tuple(dilation) == (1, 1) and _accel.enabled())


def _special_method(x, w, strides, dilation, group, out_size) -> str | None:
    """"kn2row", "winograd" or None (im2col + GEMM) for a non-1x1 convolution, by the rules measured in
    docs/performance.md (fifth round: every method on 264 layer shapes). For the 3x3 float32 layers that compiled
    Winograd transforms can take, :func:`_method_3x3`; otherwise kn2row where the input has at least twice as many
    channels as the output (and 16 or more: DenseNet's 128 -> 32, U-Net's 32 -> 16 and 16 -> 8), and without numba
    Winograd with its transforms as GEMMs for 64+ channels both ways and outputs of 8x8 or more."""
    o, kh, kw, c = w.shape
    kn2row = _use_kn2row(x, w, strides, dilation, group)
    winograd = _winograd_shape(x, w, strides, dilation, group)
    if winograd and _accel.winograd_transforms() is not None:
        return _method_3x3(c, o, out_size[0] * out_size[1], kn2row, _direct_possible(x, w, group, out_size))
    if kn2row and c >= max(16, 2 * o):
        return "kn2row"
    if winograd and c >= _WINO_MIN_CHANNELS and o >= _WINO_MIN_CHANNELS and out_size[0] * out_size[1] >= 64:
        return "winograd"
    return None


def _method_3x3(c: int, o: int, pixels: int, kn2row: bool, direct: bool = False) -> str | None:
    """The fastest method measured for a 3x3 stride-1 float32 layer of C -> O channels and ``pixels`` output pixels
    (each rule's range: time relative to im2col + GEMM, docs/performance.md fifth round; 264 shapes, 8 to 512
    channels each way):

    * outputs under 100 pixels (7x7): from 8 input channels where O < 16 C, kn2row for O <= 64 (0.46-0.99;
      Winograd's 2x2 tiles waste too much there: 0.82-1.33), Winograd for more (eighth round, against im2col into
      the register tiles that now take such 49-row products at any width: Winograd 0.65-1.1, kn2row 0.9-1.3; whole
      models with the convolutions bound to runners: ResNet-18-half 0.95-0.97, inception_v2 0.97, ResNet-50 1.0);
    * under 400 pixels (14x14): Winograd for 64+ channels both ways (0.44-0.74), else kn2row where O < 4 C or O <=
      64 (0.30-0.95), else Winograd from 16 channels (0.75-0.98; kn2row 1.06-1.88 there);
    * larger: kn2row for O <= 16 with C >= 3 O (0.26-0.91; Winograd 0.53-1.03), else Winograd from 16 channels both
      ways with O < 16 C (0.49-1.04, O >= 4 C included; 16 input channels only from 50x50 outputs: 0.79-0.91 there,
      0.95-1.08 at 28x28; 1.1-1.45 at O = 16-32 C), else kn2row where C >= max(16, 2 O); 8 input channels: im2col.
    Winograd never for O >= 16 C.

    Where the direct convolution in register tiles can run (``direct``: :func:`_direct_possible`; the None path is
    then that, not im2col), outputs of 400 pixels or more take it for 16 <= O <= 64 with C <= 32, and for O <= 16
    with 16 <= C <= 4 O from 3000 pixels (56x56) on (Winograd and kn2row 1.1-1.6x its time there: seventh round,
    the sweep re-run with the direct path); and kn2row then for O <= 24 with C >= 4 O (Winograd 1.1-1.4x)."""
    wide = o >= 16 * c  # many more output than input channels: Winograd's and kn2row's larger GEMMs do not pay
    if pixels < 100:
        if c < 8 or wide:
            return None
        return "winograd" if o > 64 else ("kn2row" if kn2row else None)
    if pixels < 400:
        if c >= 64 and o >= 64:
            return "winograd"
        if kn2row and c >= 8 and (o < 4 * c or o <= 64):
            return "kn2row"
        return "winograd" if c >= 16 and o >= 16 and not wide else None
    if direct:
        if (16 <= o <= 64 and c <= 32) or (o <= 16 and 16 <= c <= 4 * o and pixels >= 3000):
            return None
        if kn2row and o <= 24 and c >= 4 * o:
            return "kn2row"
    if kn2row and o <= 16 and c >= 3 * o:
        return "kn2row"
    if o >= 16 and (c >= 24 or (c >= 16 and pixels >= 2500)) and not wide:
        return "winograd"
    return "kn2row" if kn2row and c >= max(16, 2 * o) else None


def _kn2row_weights(w: np.ndarray):
    """[O, kH, kW, C] -> ([C, kH * kW * O] with rows padded for the register tiles, all weights finite)."""
    o, kh, kw, c = w.shape
    return _tiles.padded(w.transpose(3, 1, 2, 0).reshape(c, kh * kw * o)), bool(np.isfinite(w).all())


def _kn2row_rows(width: int, oh: int, kh: int, taps: int, itemsize: int) -> int:
    """Output rows per block of :func:`_kn2row`: the block's products (its input rows) about _KN2ROW_BLOCK_BYTES."""
    return max(1, min(oh, _KN2ROW_BLOCK_BYTES // max(1, width * taps * itemsize) - (kh - 1)))


def _kn2row(x, w, pads, out_size, bias, activation, out, post) -> bool:
    """Stride-1 convolution as one GEMM of the input pixels [H * W, C] with every tap's weights [C, kH * kW * O]
    (N = kH * kW * O keeps the GEMM efficient where O alone is small; no im2col copy), then a compiled gather adding,
    per output pixel, the products of the taps inside the input; in blocks of output rows (their input rows
    and a halo) so the products stay cache-sized. Taps in the padding are skipped, which is exact for finite
    weights (a padded zero times a weight adds +-0); with an inf/NaN weight (0 * inf = NaN) it declines: False."""
    wk, finite = _packed(w, "kn2row", _kn2row_weights)
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
    z_full = _scratch("kn2row", (min(h, rows + kh - 1), wd, kh, kw, o), x.dtype)
    for b in range(n):
        for r0 in range(0, oh, rows):
            r1 = min(oh, r0 + rows)
            i0, i1 = max(0, r0 - pt), min(h, r1 - 1 - pt + kh)  # the input rows the block's windows touch
            block = out[b, r0:r1]
            if i1 <= i0:  # every window in the padding
                block[...] = 0
            else:
                z = z_full[: i1 - i0]
                _gemm.matmul_into(x[b, i0:i1].reshape(-1, c), wk, z.reshape(-1, taps))
                if not _accel.kn2row_gather(z, block, r0 - pt - i0, -pl):
                    return False  # (only ever at the first block: numba off, or ``out`` of another layout)
            finish(block, (b, slice(r0, r1)))
    return True


_KN2ROW_BLOCK_BYTES = 1 << 22  # products of a block of input rows (4 MiB: DenseNet's 56x56 layers in one block)


_DIRECT_MIN_WIDTH = 14  # output rows narrower than this are mostly the tiles' thin tail tiles: im2col + GEMM
# wider finished products than the tiles take after a GEMM (K N <= 65536): the direct convolution also saves the
# im2col copy (eighth round: ResNet-18-half's 3x3/2 64 -> 128, K N = 73728, 0.93 -> 0.45 ms in the model; whole
# models 0.97-0.99 with 2^18, and no better without a bound)
_DIRECT_MAX_KN = 1 << 18


def _direct_offsets(w: np.ndarray, row_values: int, d_h: int, d_w: int) -> np.ndarray:
    """The offset of each weight (kH, kW, C order) from its window's first value in an NHWC image whose rows hold
    ``row_values`` values: i d_h W C + j d_w C + ch."""
    _, kh, kw, c = w.shape
    rows = np.arange(kh, dtype=np.int64)[:, None, None] * (d_h * row_values)
    return (rows + np.arange(kw, dtype=np.int64)[None, :, None] * (d_w * c)
            + np.arange(c, dtype=np.int64)[None, None, :]).reshape(-1)


def _direct_possible(x, w, group: int, out_size) -> bool:
    """Whether :func:`_direct_in_tiles` takes this convolution (of one image, float32, one group, output rows of
    at least _DIRECT_MIN_WIDTH pixels, a product the finished register tiles run, up to K N = _DIRECT_MAX_KN)."""
    n, _, _, c = x.shape
    o, kh, kw, _ = w.shape
    oh, ow = out_size
    return (n == 1 and group == 1 and ow >= _DIRECT_MIN_WIDTH and x.dtype == np.float32 and w.dtype == np.float32
            and _gemm.uses_tiles(oh * ow, kh * kw * c, o, x.dtype, finished=True, max_kn=_DIRECT_MAX_KN))


def _direct_in_tiles(xp, w, out, strides, dilation, out_size, finish) -> bool:
    """A one-group convolution of one padded image ``xp`` [1, Hp, Wp, C] straight from it in register tiles, no
    im2col copy (``_tiles.gathered_matmul``: each output pixel's window read at the weights' offsets), its
    finish fused where the tiles can apply it; False (nothing written) where the tiles do not take it."""
    n, hp, wp, c = xp.shape
    o, kh, kw, _ = w.shape
    oh, ow = out_size
    s_h, s_w = strides
    d_h, d_w = dilation
    if not _accel.evenly_strided(out) or not _direct_possible(xp, w, 1, out_size):
        return False
    xp = np.ascontiguousarray(xp)
    span = ((kh - 1) * d_h * wp + (kw - 1) * d_w) * c + c  # a window's extent in the flat image
    if ((oh - 1) * s_h * wp + (ow - 1) * s_w) * c + span > xp.size:  # (never, by the geometry: checked anyway)
        return False
    item = xp.itemsize
    windows = as_strided(xp, (oh, ow, span), (s_h * wp * c * item, s_w * c * item, item), writeable=False)
    columns = _packed(w, ("direct", wp, d_h, d_w), lambda a: _direct_offsets(a, wp * c, d_h, d_w))
    wmat, target = _packed_matrix(w, o, w.dtype), out.reshape(oh, ow, o)
    tile_finish = finish.tile_finish(o, lambda t: t.reshape(oh, ow, o))
    if tile_finish is not None:
        return _tiles.gathered_matmul(windows, columns, wmat, target, tile_finish)
    if not _tiles.gathered_matmul(windows, columns, wmat, target):
        return False
    finish(out)
    return True


def _conv_core(x, w, strides, dilation, pads, group, out_size, bias=None, activation=0, out=None, post=()):
    """Grouped 2-D convolution, NHWC, weight [O, kH, kW, C/group]; ``out_size`` (OH, OW) is :func:`_conv_geometry`'s.
    Bias and fused activation are applied in place (block by block where the convolution is blocked); ``out``,
    when given, is the [N, OH, OW, O] array to write. ``post``: elementwise operations by per-channel vectors
    (("mul" | "add", [O] array) pairs) applied after the bias and before the activation, in order -- the plan's
    fusion of a following MUL/ADD by a constant (runtime/cpu.py), the same float operations as those steps.

    * depthwise (C/group = 1): :func:`_depthwise_core`;
    * 1x1, group 1: one GEMM of the (strided) input rows with the weight matrix, no im2col;
    * group 1: im2col of a block of output rows into a reused scratch array (padding read as zeros from a padded
      scratch copy), GEMM of the block into its rows of the output, bias and activation while it is in cache;
    * other groups: im2col + one batched matmul over the groups."""
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    oh, ow = out_size
    if cg == 1 and group > 1:
        return _depthwise_core(x, w, strides, dilation, pads, out_size, bias, activation, out, post)
    s_h, s_w = strides
    d_h, d_w = dilation
    if out is None:
        out = np.empty((n, oh, ow, o), dtype=x.dtype)
    if group == 1 and kh == 1 and kw == 1 and not any(pads):
        src = x[:, : (oh - 1) * s_h + 1: s_h, : (ow - 1) * s_w + 1: s_w]
        rows = src.reshape(n * oh * ow, c) if src.flags.c_contiguous else np.ascontiguousarray(src).reshape(-1, c)
        out2d, wmat = out.reshape(n * oh * ow, o), _packed_matrix(w, o, w.dtype)
        finish = Finish(bias, post, activation)
        if not _gemm.matmul_finished(rows, wmat, out2d, finish, lambda t: t.reshape(n * oh * ow, o)):
            _gemm.matmul_into(rows, wmat, out2d)
            finish(out)
        return out
    method = _special_method(x, w, strides, dilation, group, out_size)
    if method == "winograd":
        return _winograd_3x3(x, w, pads, out_size, bias, activation, out, post)
    if method == "kn2row" and _kn2row(x, w, pads, out_size, bias, activation, out, post):
        return out
    xp = _padded(x, pads)
    ek_h, ek_w = effective_extent(kh, d_h), effective_extent(kw, d_w)
    if group == 1:
        k = kh * kw * c
        finish = Finish(bias, post, activation)
        if _direct_in_tiles(xp, w, out, strides, dilation, out_size, finish):
            return out
        if d_w == 1:  # a kernel row's kW * C values are contiguous in NHWC: copy them as one inner run
            xp = np.ascontiguousarray(xp)
            # the strides of a C-contiguous layout, not xp.strides: numpy keeps any stride on a size-1 dim (an
            # NCHW image with one channel, transposed to NHWC, is "contiguous" with a channel stride of H*W)
            sc = xp.itemsize
            sw, sh = c * sc, xp.shape[2] * c * sc
            sn = xp.shape[1] * sh
            taps = as_strided(xp, (n, oh, ow, kh, kw * c), (sn, sh * s_h, sw * s_w, sh * d_h, sc), writeable=False)
        else:
            win = sliding_window_view(xp, (ek_h, ek_w), axis=(1, 2))  # [N, ., ., C, ekH, ekW]
            win = win[:, : (oh - 1) * s_h + 1: s_h, : (ow - 1) * s_w + 1: s_w, :, ::d_h, ::d_w]
            taps = win.transpose(0, 1, 2, 4, 5, 3)  # [N, OH, OW, kH, kW, C]: the weight's (kH, kW, C) order
        wmat = _packed_matrix(w, o, w.dtype)  # [K, O], rows padded for the register tiles
        block_bytes = max(_IM2COL_BLOCK_BYTES, _IM2COL_WEIGHT_MULTIPLE * k * o * x.dtype.itemsize)
        rows = min(oh, max(1, block_bytes // max(1, n * ow * k * x.dtype.itemsize)))
        cols_full = _scratch("im2col", (n, rows, ow) + taps.shape[3:], x.dtype)
        compiled = n == 1 and d_w == 1 and kw * c <= _COMPILED_IM2COL_MAX_RUN
        for r0 in range(0, oh, rows):
            r1 = min(oh, r0 + rows)
            cols = cols_full[:, : r1 - r0]
            if not (compiled and _accel.im2col_rows(xp[0], cols.reshape((r1 - r0) * ow, k), r0, r1, (kh, kw),
                                                    (s_h, s_w), d_h)):
                np.copyto(cols, taps[:, r0:r1])  # im2col of the block: one copy
            block = out[:, r0:r1]
            if n == 1:
                block2d, cols2d = block.reshape((r1 - r0) * ow, o), cols.reshape((r1 - r0) * ow, k)
                if _gemm.matmul_finished(cols2d, wmat, block2d, finish,
                                         lambda t, r0=r0, r1=r1: t[:, r0:r1].reshape((r1 - r0) * ow, o)):
                    continue
                _gemm.matmul_into(cols2d, wmat, block2d)
            else:
                block[...] = np.matmul(cols.reshape(n, (r1 - r0) * ow, k), wmat).reshape(n, r1 - r0, ow, o)
            finish(block, (slice(None), slice(r0, r1)))
        return out
    og = o // group
    m = n * oh * ow
    if kh == kw == 1 and xp is x:  # grouped 1x1: each group's rows are a strided [M, Cg] matrix BLAS reads as is
        src = x[:, : (oh - 1) * s_h + 1: s_h, : (ow - 1) * s_w + 1: s_w]
        cols = np.ascontiguousarray(src).reshape(m, group, cg).transpose(1, 0, 2)  # [G, M, Cg], a view
    else:
        win = sliding_window_view(xp, (ek_h, ek_w), axis=(1, 2))  # [N, ., ., C, ekH, ekW]
        win = win[:, : (oh - 1) * s_h + 1: s_h, : (ow - 1) * s_w + 1: s_w, :, ::d_h, ::d_w]  # [N,OH,OW,C,kH,kW]
        cols = win.reshape(n, oh, ow, group, cg, kh, kw).transpose(3, 0, 1, 2, 5, 6, 4)
        cols = cols.reshape(group, m, kh * kw * cg)  # im2col (one copy), (kH, kW, Cg) order like w
    wg = _grouped_weights(w, group)
    # each group into its output columns (strided views: the tiles read and write them in place)
    target, finish = out.reshape(m, group, og).transpose(1, 0, 2), Finish(bias, post, activation)
    if not _gemm.matmul_finished(cols, wg, target, finish, lambda t: t.reshape(m, group, og).transpose(1, 0, 2),
                                 group):
        _gemm.batched_matmul_into(cols, wg, target)
        finish(out)
    return out


def _grouped_weights(w: np.ndarray, group: int) -> np.ndarray:
    """A grouped convolution's weight [O, kH, kW, C/G] as G matrices [K, O/G] (padded for the register tiles)."""
    o, kh, kw, cg = w.shape
    return _packed(w, ("groups", group), lambda a: _tiles.padded(
        a.reshape(group, o // group, kh * kw * cg).transpose(0, 2, 1)))


def _conv_dims(op, x_shape, w_shape, group):
    """Checked NHWC input and [out, kH, kW, in/group] weight dims of a (transposed) convolution (unknown dims are
    not checked; an UNKNOWN group, a depthwise convolution's unknown channel count, checks nothing): input dims,
    weight dims, group."""
    x_shape = _check_rank_dims(op, x_shape)
    w_shape = _check_rank_dims(op, w_shape, what="weight")
    c = x_shape[3]
    o, _, _, cg = w_shape
    group = int(group)
    if group == UNKNOWN:
        return x_shape, w_shape, group
    if group < 1:
        raise invalid(f"{op}: group must be >= 1, got {group}")
    if _known(c, cg) and cg * group != c:
        raise invalid(f"{op}: input has {c} channels but weight inChannel/group={cg} x group={group} = {cg * group}")
    if _known(o) and o % group:
        raise invalid(f"{op}: outChannel={o} is not divisible by group={group}")
    return x_shape, w_shape, group


def _conv_shapes(op, x, weight, group):
    """Checked NHWC input and [out, kH, kW, in/group] weight of a (transposed) convolution: compute dtype,
    input dims, weight dims, group."""
    _check_rank(op, x)
    _check_rank(op, weight, what="weight")
    cdtype = _compute_dtype(op, x, weight)
    x_shape, w_shape, group = _conv_dims(op, x.shape, weight.shape, group)
    return cdtype, x_shape, w_shape, group


# (op, the inputs' shapes and dtypes, the parameters) -> _conv_checked's result, which depends on nothing else: a
# compiled model's convolution checks and decodes its parameters once, not in every run (~20 us a call)
_CHECKED: dict = {}
_CHECKED_LIMIT = 4096


def _conv_checked(op, x, weight, bias, strides, pad_mode, pad_list, dilation, group):
    """The checked geometry of a convolution: (compute dtype, output [N, OH, OW, O], group, strides, dilation,
    pads), remembered by its inputs' shapes and dtypes and its parameters."""
    try:
        key = (op, x.shape, x.dtype, weight.shape, weight.dtype, bias.shape, bias.dtype, tuple(strides), pad_mode,
               tuple(pad_list), tuple(dilation), group)
        checked = _CHECKED.get(key)
    except TypeError:  # a parameter that is no sequence, or unhashable: the checks below say what is wrong
        key, checked = None, None
    if checked is None:
        cdtype, (n, h, w, c), (o, kh, kw, cg), group = _conv_shapes(op, x, weight, group)
        s, d, (oh, ow, pads) = _conv_window(op, h, w, kh, kw, strides, dilation, pad_mode, pad_list)
        _check_bias_dims(op, bias.shape, o)
        checked = (cdtype, (n, oh, ow, o), group, s, d, pads)
        if key is not None:
            if len(_CHECKED) >= _CHECKED_LIMIT:
                _CHECKED.clear()
            _CHECKED[key] = checked
    return checked


def _conv_common(op, x, weight, bias, ctx, strides, pad_mode, pad_list, dilation, group, activation=0, out=None,
                 post=()):
    cdtype, (n, oh, ow, o), group, s, d, pads = _conv_checked(op, x, weight, bias, strides, pad_mode, pad_list,
                                                              dilation, group)
    b = bias.astype(cdtype, copy=False) if bias.dtype in _FLOATS else _real_bias(op, bias, o, ctx, cdtype)
    activation = _activation_code(activation)
    if out is not None and (out.dtype != x.dtype or x.dtype != cdtype or out.shape != (n, oh, ow, o)
                            or not _accel.evenly_strided(out)):
        out = None  # float16 data computes in float32: the planned array does not fit
    w_c = weight if weight.dtype == cdtype else _packed(weight, ("cast", cdtype.str), lambda a: a.astype(cdtype))
    if post and (x.dtype != cdtype or any(v.dtype != cdtype or v.shape != ((n, oh, ow, o) if name == "addend" else (o,))
                                          for name, v in post)):
        raise invalid(f"{op}: post operations need per-channel vectors (addends: the output's shape) of the compute "
                      "dtype")  # (the plan guards this)
    result = _conv_core(x.astype(cdtype, copy=False), w_c, s, d, pads, group, (oh, ow), b, activation, out, post)
    return result.astype(x.dtype, copy=False)


def _conv_output_shape(op, shapes, group, strides, pad_mode, pad_list, dilation):
    """The shape rule of a convolution: [N, OH, OW, outChannel], by the kernel's own checks and geometry."""
    (n, h, w, _), (o, kh, kw, _), _ = _conv_dims(op, shapes[0], shapes[1], group)
    _, _, (oh, ow, _) = _conv_window(op, h, w, kh, kw, strides, dilation, pad_mode, pad_list)
    _check_bias_dims(op, shapes[2], o)
    return ((n, oh, ow, o),)


# ----------------------------------------------------------------------------------------------------------------
# convolutions


@shape_rule("OH_NN_OPS_CONV2D")
def _conv2d_shape(op, shapes, values, *, strides, pad_mode, pad_list, dilation, group, nchw=False, **_):
    if nchw and shapes[0] is not None and len(shapes[0]) == 4:
        shapes = (_nhwc_dims(shapes[0]),) + tuple(shapes[1:])
    return _conv_output_shape(op, shapes, group, strides, pad_mode, pad_list, dilation)


def _nhwc_dims(dims):
    n, c, h, w = dims
    return (n, h, w, c)


@kernel("OH_NN_OPS_CONV2D")
def conv2d(x, weight, bias, *, strides, pad_mode, pad_list, dilation, group, ctx, activation=0, out=None, post=(),
           nchw=False):
    """``nchw`` (the plan's fusion of the TRANSPOSE [0, 2, 3, 1] before it: a model's NCHW image): ``x`` is [N, C,
    H, W], read through its NHWC view."""
    if nchw:
        _check_rank("CONV2D", x)
        x = np.transpose(x, (0, 2, 3, 1))
    return _conv_common("CONV2D", x, weight, bias, ctx, strides, pad_mode, pad_list, dilation, group, activation,
                        out, post)


@kernel("OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE")
def depthwise_conv2d_native(x, weight, bias, *, strides, pad_mode, pad_list, dilation, ctx, activation=0,
                            out=None, post=()):
    op = "DEPTHWISE_CONV2D_NATIVE"
    _check_rank(op, x)
    _check_rank(op, weight, what="weight")
    return _conv_common(op, x, weight, bias, ctx, strides, pad_mode, pad_list, dilation,
                        _depthwise_group(op, x.shape, weight.shape), activation, out, post)


@specialiser("OH_NN_OPS_CONV2D", "OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE")
def _specialise_conv(op, general, inputs, arguments, addends):
    """A plan step's runner (``_runners``) for the planned float32 input and constant weight and bias, making
    the compiled calls the general kernel would: a 1x1 convolution without padding in register tiles (grouped,
    strided) or on BLAS (stride 1), the direct convolution from its padded input (an NCHW input too: ``nchw``),
    Winograd, kn2row, a 3x3 depthwise convolution in its compiled loop. The path is chosen by the general kernel's
    own rules, evaluated once here; None for the others (im2col, grouped convolutions with a window, a depthwise
    one with ``post``), which keep the general kernel."""
    x_in, w_in, b_in = inputs[:3]
    weight, bias = w_in.value, b_in.value
    if (weight is None or bias is None or x_in.shape is None or x_in.dtype != np.float32
            or weight.dtype != np.float32 or bias.dtype != np.float32 or len(x_in.shape) != 4 or weight.ndim != 4):
        return None
    nchw = bool(arguments.get("nchw"))  # the input is [N, C, H, W]: only the direct convolution reads it so
    x = as_strided(np.zeros(1, np.float32), _nhwc_dims(x_in.shape) if nchw else x_in.shape, (0,) * 4)  # (the rules)
    depthwise = op == "DEPTHWISE_CONV2D_NATIVE"
    try:
        group = _depthwise_group(op, x.shape, weight.shape) if depthwise else arguments["group"]
        _, out_shape, group, strides, dilation, pads = _conv_checked(
            op, x, weight, bias, arguments["strides"], arguments["pad_mode"], arguments["pad_list"],
            arguments["dilation"], group)
        activation = _activation_code(arguments.get("activation", 0))
    except NNRtError:
        return None  # the general kernel raises its error in the run
    n, oh, ow, o = out_shape
    _, kh, kw, cg = weight.shape
    post = tuple(arguments.get("post", ()))
    if cg == 1 and group > 1:
        if post or o != x.shape[3] or (kh, kw) != (3, 3) or nchw:
            return None
        loop = _accel.depthwise_3x3_loop(True)
        if loop is None:
            return None
        taps = _packed(weight, "depthwise_taps", lambda a: np.ascontiguousarray(a[:, :, :, 0].transpose(1, 2, 0)))
        return _runners.depthwise_3x3(general, x.shape, out_shape, loop, taps, bias,
                                      (*strides, *dilation, pads[0], pads[2]), activation)
    if sum(name == "addend" for name, _ in post) != addends:
        return None
    addend = np.zeros(out_shape, np.float32) if addends else None  # (a stand-in: untouched pages, never read)
    finish = Finish(bias, tuple(("addend", addend) if name == "addend" else (name, v) for name, v in post),
                    activation)
    m, og = n * oh * ow, o // group
    if nchw and (kh == kw == 1 or group != 1):
        return None
    if kh == kw == 1 and not any(pads):  # _conv_core's 1x1 paths: one product, or one per group
        if not _gemm.uses_tiles(m, cg, og, x.dtype, group, finished=True):
            if group != 1 or tuple(strides) != (1, 1) or addends > 1 or not _accel.enabled():
                return None
            wmat = _packed_matrix(weight, o, np.float32)
            operands = _accel.finish_arrays(bias, tuple((name, None if name == "addend" else v) for name, v in post),
                                            o, np.float32)
            return _runners.blas_1x1(general, x.shape, out_shape, lambda a, t: _gemm.matmul_into(a, wmat, t),
                                     operands, activation, bool(addends))
        if group == 1:
            weights, view = _packed_matrix(weight, o, np.float32), (lambda t: t.reshape(m, o))
        else:
            weights, view = _grouped_weights(weight, group), (lambda t: t.reshape(m, group, og).transpose(1, 0, 2))
        tile_finish = finish.tile_finish(o, view, group)
        product = None if tile_finish is None else _tiles.bound_product(weights, tile_finish)
        return None if product is None else _runners.tiled_1x1(general, x.shape, out_shape, strides, group,
                                                               product, bool(addends))
    if group != 1:
        return None
    method = _special_method(x, weight, strides, dilation, group, (oh, ow))
    if method is not None and nchw:
        return None
    if method == "winograd":
        return _winograd_runner(general, x.shape, weight, pads, out_shape, finish, addends)
    if method == "kn2row":
        return _kn2row_runner(general, x.shape, weight, bias, pads, out_shape, post, activation, addends)
    wmat = _packed_matrix(weight, o, np.float32)
    if method is not None or not _direct_possible(x, weight, group, (oh, ow)):
        return None
    _, h, w, c = x.shape
    hp, wp = h + pads[0] + pads[1], w + pads[2] + pads[3]
    span = ((kh - 1) * dilation[0] * wp + (kw - 1) * dilation[1]) * c + c
    if ((oh - 1) * strides[0] * wp + (ow - 1) * strides[1]) * c + span > hp * wp * c:
        return None
    columns = _packed(weight, ("direct", wp, *dilation), lambda a: _direct_offsets(a, wp * c, *dilation))
    tile_finish = finish.tile_finish(o, lambda t: t.reshape(oh, ow, o))
    product = None if tile_finish is None else _tiles.bound_product(wmat, tile_finish, columns)
    return None if product is None else _runners.direct(general, x_in.shape, out_shape, pads, (strides, span),
                                                        product, bool(addends), nchw)


def _winograd_runner(general, x_shape, weight, pads, out_shape, finish, addends: int):
    """:func:`_winograd_3x3`'s compiled path bound to one plan step (``_runners.winograd``), or None where
    it would not take that path or finish each row in its output transform."""
    transforms = _accel.winograd_transforms()
    n, _, _, c = x_shape
    _, oh, ow, o = out_shape
    row_finish = finish.row_operands(o, ow, np.float32)
    if transforms is None or row_finish is None:
        return None
    u = _packed(weight, "winograd", _winograd_weights)
    geometry = _winograd_geometry(x_shape, o, (oh, ow), u.nbytes)
    th, tw, _, _, rows = geometry

    def product(t: int):  # _gemm.batched_matmul_into's choice for the block's [16, t, C] x [16, C, O]
        tiled = _tiles.bound_product(u, None) if _gemm.uses_tiles(t, c, o, np.float32, 16) else None
        if tiled is not None:
            return lambda v, m: tiled(v, m, None)
        return lambda v, m: np.matmul(v, u, out=m)

    products = [product(n * (min(th, r0 + rows) - r0) * tw) for r0 in range(0, th, rows)]
    lengths = [_skewed(n * rows * tw * k) for k in (c, o)]
    return _runners.winograd(general, x_shape, out_shape, pads, geometry, lengths, transforms, products,
                             row_finish, bool(addends))


def _kn2row_runner(general, x_shape, weight, bias, pads, out_shape, post, activation: int, addends: int):
    """:func:`_kn2row` bound to one plan step (``_runners.kn2row``), or None where it would decline (a
    non-finite weight), a block would lie wholly in the padding, or the finish has several residuals."""
    wk, finite = _packed(weight, "kn2row", _kn2row_weights)
    if not finite or addends > 1:
        return None
    n, h, wd, c = x_shape
    _, oh, ow, o = out_shape
    _, kh, kw, _ = weight.shape
    pt = pads[0]
    taps = kh * kw * o
    rows = _kn2row_rows(wd, oh, kh, taps, 4)

    def product(m: int):  # _gemm.matmul_into's choice for the block's [m, C] x [C, taps]
        tiled = _tiles.bound_product(wk, None) if _gemm.uses_tiles(m, c, taps, np.float32) else None
        if tiled is not None:
            return lambda a, z: tiled(a[np.newaxis], z[np.newaxis], None)
        return lambda a, z: _gemm.matmul_into(a, wk, z)

    blocks = []
    for b in range(n):
        for r0 in range(0, oh, rows):
            r1 = min(oh, r0 + rows)
            i0, i1 = max(0, r0 - pt), min(h, r1 - 1 - pt + kh)
            if i1 <= i0:
                return None
            blocks.append((b, r0, r1, i0, i1, product((i1 - i0) * wd)))
    operands = _accel.finish_arrays(bias, tuple((name, None if name == "addend" else v) for name, v in post), o,
                                    np.float32)
    return _runners.kn2row(general, x_shape, out_shape, pads, blocks, (kh, kw), operands, activation,
                                bool(addends))


def _depthwise_group(op, x_shape, w_shape) -> int:
    """The group of a depthwise convolution, its input channel count (UNKNOWN if that is), after checking the
    [outChannel, kH, kW, 1] weight against it."""
    c = x_shape[3]
    if _known(w_shape[3]) and w_shape[3] != 1:
        raise invalid(f"{op}: weight must be [outChannel, kH, kW, 1], got {list(w_shape)}")
    if _known(c, w_shape[0]) and w_shape[0] % c:
        raise invalid(f"{op}: outChannel={w_shape[0]} is not a multiple (channelMultiplier) of inChannel={c}")
    return c


@shape_rule("OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE")
def _depthwise_conv2d_native_shape(op, shapes, values, *, strides, pad_mode, pad_list, dilation, **_):
    x_shape = _check_rank_dims(op, shapes[0])
    w_shape = _check_rank_dims(op, shapes[1], what="weight")
    return _conv_output_shape(op, (x_shape, w_shape, shapes[2]), _depthwise_group(op, x_shape, w_shape), strides,
                              pad_mode, pad_list, dilation)


def _transposed_geometry(op, h, w, kh, kw, strides, dilation, output_paddings, pad_mode, pad_list_values):
    """Checked strides, dilation and output paddings of the transposed convolution, then per axis its output size
    and crop (``geometry.transposed_axis``): (strides, dilation, (out_h, out_w), (top, left), (full_h, full_w))."""
    s_h, s_w = spatial_pair(op, "stride", strides, 1)
    d_h, d_w = spatial_pair(op, "dilation", dilation, 1)
    op_vals = list(np.asarray(output_paddings).reshape(-1).tolist())
    op_h, op_w = spatial_pair(op, "output paddings", op_vals or [0], 0)
    if op_h >= s_h or op_w >= s_w:
        raise invalid(f"{op}: output paddings [{op_h}, {op_w}] must be smaller than the stride [{s_h}, {s_w}]")
    ek_h, ek_w = effective_extent(kh, d_h), effective_extent(kw, d_w)
    mode = check_pad_mode(op, pad_mode)
    pt, pb, pl, pr = check_pad_list(op, pad_list_values) if mode == PAD_MODE_EXPLICIT else (0, 0, 0, 0)
    out_h, top = transposed_axis(mode, h, ek_h, s_h, pt, pb, op_h)
    out_w, left = transposed_axis(mode, w, ek_w, s_w, pl, pr, op_w)
    full_h, full_w = transposed_full_size(h, ek_h, s_h), transposed_full_size(w, ek_w, s_w)
    # (a negative size from known dims is a real result here, not UNKNOWN: decide by the inputs)
    if (_known(h, ek_h) and out_h <= 0) or (_known(w, ek_w) and out_w <= 0):
        raise invalid(f"{op}: the pads crop the whole output (full size [{full_h}, {full_w}])")
    return (s_h, s_w), (d_h, d_w), (out_h, out_w), (top, left), (full_h, full_w)


@shape_rule("OH_NN_OPS_CONV2D_TRANSPOSE")
def _conv2d_transpose_shape(op, shapes, values, *, strides, pad_mode, pad_list, dilation, output_paddings, group,
                            **_):
    (n, h, w, _), (o, kh, kw, _), _ = _conv_dims(op, shapes[0], shapes[1], group)
    _, _, (out_h, out_w), _, _ = _transposed_geometry(op, h, w, kh, kw, strides, dilation, output_paddings,
                                                      pad_mode, pad_list)
    _check_bias_dims(op, shapes[2], o)
    return ((n, out_h, out_w, o),)


@kernel("OH_NN_OPS_CONV2D_TRANSPOSE")
def conv2d_transpose(x, weight, bias, *, strides, pad_mode, pad_list, dilation, output_paddings, group, ctx):
    """Transposed convolution; weight [outC, kH, kW, inC/group] (NNAPI TRANSPOSE_CONV_2D layout).

    Full output F = (in-1)*stride + (k-1)*dilation + 1, then cropped: explicit pads -> F - top - bottom; VALID -> F;
    SAME -> in*stride (crop start = max(F - in*stride, 0) // 2, TF). outputPads rows/cols are appended at the
    bottom/right (PyTorch/ONNX meaning) and must be < stride.
    """
    op = "CONV2D_TRANSPOSE"
    cdtype, (n, h, w, c), (o, kh, kw, cg), group = _conv_shapes(op, x, weight, group)
    (s_h, s_w), (d_h, d_w), (out_h, out_w), (top, left), (full_h, full_w) = _transposed_geometry(
        op, h, w, kh, kw, strides, dilation, output_paddings, pad_mode, pad_list)
    b = _real_bias(op, bias, o, ctx, cdtype)

    og = o // group
    xg = x.astype(cdtype, copy=False).reshape(n * h * w, group, cg).transpose(1, 0, 2)  # [G, M, Cg]
    wg = _packed(weight, ("transposed", group, cdtype.str), lambda a: np.ascontiguousarray(
        a.astype(cdtype, copy=False).reshape(group, og, kh, kw, cg).transpose(0, 4, 2, 3, 1)
        .reshape(group, cg, kh * kw * og)))  # [G, Cg, kH*kW*Og], once per constant weight
    products = np.matmul(xg[0], wg[0]) if group == 1 else np.matmul(xg, wg)  # every pixel times every tap
    cols = products.reshape(group, n, h, w, kh, kw, og).transpose(1, 2, 3, 4, 5, 0, 6).reshape(n, h, w, kh, kw, o)
    rows, columns = max(full_h, top + out_h), max(full_w, left + out_w)
    if (s_h, s_w) == (kh, kw) and (d_h, d_w) == (1, 1) and (rows, columns) == (h * kh, w * kw):
        # the taps tile the output without overlap (U-Net's 2x2 stride-2 upsampling): one interleaving copy
        full = np.empty((n, rows, columns, o), dtype=cdtype)
        np.copyto(full.reshape(n, h, kh, w, kw, o), cols.transpose(0, 1, 3, 2, 4, 5))
    else:
        full = np.zeros((n, rows, columns, o), dtype=cdtype)
        for i in range(kh):  # col2im: scatter-add each kernel tap (loop over the small kernel window only)
            for j in range(kw):
                full[:, i * d_h: i * d_h + (h - 1) * s_h + 1: s_h, j * d_w: j * d_w + (w - 1) * s_w + 1: s_w, :] += \
                    cols[:, :, :, i, j, :]
    if (top, left, out_h, out_w) == (0, 0, rows, columns):
        Finish(b, (), 0)(full)  # the bias in place
        return full.astype(x.dtype, copy=False)
    out = full[:, top: top + out_h, left: left + out_w, :] + b
    return out.astype(x.dtype, copy=False)
