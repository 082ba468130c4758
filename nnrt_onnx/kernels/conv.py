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

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import invalid, unsupported
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
from . import kernel, packed, shape_rule
from ._common import _FLOATS, _check_rank, _check_rank_dims, _compute_dtype, _known


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


def real_bias(op: str, bias: np.ndarray, n_out: int, ctx, cdtype) -> np.ndarray:
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


def activation_code(activation) -> int:
    code = int(activation or 0)
    if code not in (0, 1, 2):
        raise invalid(f"fused activation {code} is not an OH_NN_FuseType (0..2)")
    return code


def _padded(x: np.ndarray, pads) -> np.ndarray:
    """``x`` [N, H, W, C] zero-padded in H and W ([top, bottom, left, right]): a new array."""
    pt, pb, pl, pr = pads
    return np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))


def _windows(x, size, strides, dilation, pads, out_size) -> np.ndarray:
    """Every output pixel's kH x kW (``size``) window of the zero-padded input: a view [N, OH, OW, kH, kW, C] (the
    weight's (kH, kW, C) order)."""
    (kh, kw), (s_h, s_w), (d_h, d_w), (oh, ow) = size, strides, dilation, out_size
    ek_h, ek_w = effective_extent(kh, d_h), effective_extent(kw, d_w)
    windows = sliding_window_view(_padded(x, pads), (ek_h, ek_w), axis=(1, 2))  # [N, ., ., C, ekH, ekW]
    windows = windows[:, : (oh - 1) * s_h + 1: s_h, : (ow - 1) * s_w + 1: s_w, :, ::d_h, ::d_w]
    return windows.transpose(0, 1, 2, 4, 5, 3)


def _activate(y: np.ndarray, activation: int) -> np.ndarray:
    """The fused activation (0 none, 1 ReLU, 2 ReLU6) in place."""
    if activation == 1:
        np.maximum(y, y.dtype.type(0), out=y)
    elif activation == 2:
        np.clip(y, y.dtype.type(0), y.dtype.type(6), out=y)
    return y


def _depthwise(x, w, strides, dilation, pads, out_size, bias):
    """Depthwise convolution (weight [C * mult, kH, kW, 1]; output channel k reads input channel k // mult): the
    kernel taps in row-major order, ``acc = x_tap0 * w_tap0``, then ``acc += x_tap * w_tap``, then the bias."""
    o, kh, kw, _ = w.shape
    if o != x.shape[3]:
        x = np.repeat(x, o // x.shape[3], axis=3)
    windows = _windows(x, (kh, kw), strides, dilation, pads, out_size)  # [N, OH, OW, kH, kW, C]
    taps = w[:, :, :, 0].transpose(1, 2, 0)  # [kH, kW, C]
    acc = windows[:, :, :, 0, 0] * taps[0, 0]
    for i in range(kh):
        for j in range(kw):
            if i or j:
                acc += windows[:, :, :, i, j] * taps[i, j]
    acc += bias
    return acc


def _convolve(x, w, strides, dilation, pads, group, out_size, bias):
    """Grouped 2-D convolution, NHWC, weight [O, kH, kW, C/group]: im2col (every window as a row of kH * kW *
    C/group values) times each group's weight matrix, plus the bias."""
    n = x.shape[0]
    o, kh, kw, cg = w.shape
    oh, ow = out_size
    og, m, k = o // group, n * oh * ow, kh * kw * cg
    windows = _windows(x, (kh, kw), strides, dilation, pads, out_size)  # [N, OH, OW, kH, kW, C]
    cols = windows.reshape(n, oh, ow, kh, kw, group, cg).transpose(5, 0, 1, 2, 3, 4, 6).reshape(group, m, k)
    weights = w.reshape(group, og, k).transpose(0, 2, 1)  # [G, K, O/G]
    products = np.matmul(cols, weights)  # [G, M, O/G]
    result = products.transpose(1, 0, 2).reshape(n, oh, ow, o)
    result += bias
    return result


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


# (op, the inputs' shapes and dtypes, the parameters) -> conv_checked's result, which depends on nothing else: a
# compiled model's convolution checks and decodes its parameters once, not in every run (~20 us a call)
_CHECKED: dict = {}
_CHECKED_LIMIT = 4096


def conv_checked(op, x, weight, bias, strides, pad_mode, pad_list, dilation, group):
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


def _conv_common(op, x, weight, bias, ctx, strides, pad_mode, pad_list, dilation, group, activation=0, out=None):
    cdtype, (n, oh, ow, o), group, s, d, pads = conv_checked(op, x, weight, bias, strides, pad_mode, pad_list,
                                                             dilation, group)
    b = real_bias(op, bias, o, ctx, cdtype)
    activation = activation_code(activation)
    xc, wc = x.astype(cdtype, copy=False), weight.astype(cdtype, copy=False)
    if wc.shape[3] == 1 and group > 1:
        result = _depthwise(xc, wc, s, d, pads, (oh, ow), b)
    else:
        result = _convolve(xc, wc, s, d, pads, group, (oh, ow), b)
    result = _activate(result, activation).astype(x.dtype, copy=False)
    if out is not None and out.shape == result.shape and out.dtype == result.dtype:
        np.copyto(out, result)
        return out
    return result


def _conv_output_shape(op, shapes, group, strides, pad_mode, pad_list, dilation):
    """The shape rule of a convolution: [N, OH, OW, outChannel], by the kernel's own checks and geometry."""
    (n, h, w, _), (o, kh, kw, _), _ = _conv_dims(op, shapes[0], shapes[1], group)
    _, _, (oh, ow, _) = _conv_window(op, h, w, kh, kw, strides, dilation, pad_mode, pad_list)
    _check_bias_dims(op, shapes[2], o)
    return ((n, oh, ow, o),)


# ----------------------------------------------------------------------------------------------------------------
# convolutions


@shape_rule("OH_NN_OPS_CONV2D")
def _conv2d_shape(op, shapes, values, *, strides, pad_mode, pad_list, dilation, group, **_):
    return _conv_output_shape(op, shapes, group, strides, pad_mode, pad_list, dilation)


@kernel("OH_NN_OPS_CONV2D")
def conv2d(x, weight, bias, *, strides, pad_mode, pad_list, dilation, group, ctx, activation=0, out=None):
    """``out``: the plan's array for the result (memory planning), filled where it fits."""
    return _conv_common("CONV2D", x, weight, bias, ctx, strides, pad_mode, pad_list, dilation, group, activation,
                        out)


@kernel("OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE")
def depthwise_conv2d_native(x, weight, bias, *, strides, pad_mode, pad_list, dilation, ctx, activation=0, out=None):
    op = "DEPTHWISE_CONV2D_NATIVE"
    _check_rank(op, x)
    _check_rank(op, weight, what="weight")
    return _conv_common(op, x, weight, bias, ctx, strides, pad_mode, pad_list, dilation,
                        depthwise_group(op, x.shape, weight.shape), activation, out)


def depthwise_group(op, x_shape, w_shape) -> int:
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
    return _conv_output_shape(op, (x_shape, w_shape, shapes[2]), depthwise_group(op, x_shape, w_shape), strides,
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
    b = real_bias(op, bias, o, ctx, cdtype)

    og = o // group
    xg = x.astype(cdtype, copy=False).reshape(n * h * w, group, cg).transpose(1, 0, 2)  # [G, M, Cg]
    wg = packed(weight, ("transposed", group, cdtype.str), lambda a: np.ascontiguousarray(
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
        full += b  # the bias in place
        return full.astype(x.dtype, copy=False)
    out = full[:, top: top + out_h, left: left + out_w, :] + b
    return out.astype(x.dtype, copy=False)
