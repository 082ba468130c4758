"""Convolutions (CONV2D, DEPTHWISE_CONV2D_NATIVE), accelerated: the kernel that picks its algorithm per call (the
1x1 products, direct, Winograd, kn2row, blocked im2col in register tiles or BLAS, the depthwise loops), with the
plan's fusions (``post``: MUL/ADD by per-channel vectors and residual addends, applied while a block is in cache;
``nchw``: the NCHW image's transpose folded in), and the specialiser binding a plan step to a runner
(``runners``) that makes only its compiled call. Checks, geometry and the bias's decoding are the reference
kernel's (``kernels.conv``); what it computes is the reference kernel's, within the tolerance of
``accel.contract``."""
from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from ..errors import NNRtError, invalid
from ..geometry import effective_extent
from ..kernels import packed, specialiser
from ..kernels.conv import activation_code, conv_checked, depthwise_group, real_bias
from . import gemm, numba_loops, runners, tiles
from .conv_method import special_method
from .depthwise import depthwise_core, depthwise_taps
from .direct import direct_in_tiles, direct_offsets, direct_possible
from .finish import Finish
from .kn2row import kn2row, kn2row_runner
from .winograd import winograd_3x3, winograd_runner
from .workspace import packed_matrix, padded, scratch

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
        return depthwise_core(x, w, strides, dilation, pads, out_size, bias, activation, out, post)
    s_h, s_w = strides
    d_h, d_w = dilation
    if out is None:
        out = np.empty((n, oh, ow, o), dtype=x.dtype)
    if group == 1 and kh == 1 and kw == 1 and not any(pads):
        src = x[:, : (oh - 1) * s_h + 1: s_h, : (ow - 1) * s_w + 1: s_w]
        rows = src.reshape(n * oh * ow, c) if src.flags.c_contiguous else np.ascontiguousarray(src).reshape(-1, c)
        out2d, wmat = out.reshape(n * oh * ow, o), packed_matrix(w, o, w.dtype)
        finish = Finish(bias, post, activation)
        if not gemm.matmul_finished(rows, wmat, out2d, finish, lambda t: t.reshape(n * oh * ow, o)):
            gemm.matmul_into(rows, wmat, out2d)
            finish(out)
        return out
    method = special_method(x, w, strides, dilation, group, out_size)
    if method == "winograd":
        return winograd_3x3(x, w, pads, out_size, bias, activation, out, post)
    if method == "kn2row" and kn2row(x, w, pads, out_size, bias, activation, out, post):
        return out
    xp = padded(x, pads)
    ek_h, ek_w = effective_extent(kh, d_h), effective_extent(kw, d_w)
    if group == 1:
        k = kh * kw * c
        finish = Finish(bias, post, activation)
        if direct_in_tiles(xp, w, out, strides, dilation, out_size, finish):
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
        wmat = packed_matrix(w, o, w.dtype)  # [K, O], rows padded for the register tiles
        block_bytes = max(_IM2COL_BLOCK_BYTES, _IM2COL_WEIGHT_MULTIPLE * k * o * x.dtype.itemsize)
        rows = min(oh, max(1, block_bytes // max(1, n * ow * k * x.dtype.itemsize)))
        cols_full = scratch("im2col", (n, rows, ow) + taps.shape[3:], x.dtype)
        compiled = n == 1 and d_w == 1 and kw * c <= _COMPILED_IM2COL_MAX_RUN
        for r0 in range(0, oh, rows):
            r1 = min(oh, r0 + rows)
            cols = cols_full[:, : r1 - r0]
            if not (compiled and numba_loops.im2col_rows(xp[0], cols.reshape((r1 - r0) * ow, k), r0, r1, (kh, kw),
                                                    (s_h, s_w), d_h)):
                np.copyto(cols, taps[:, r0:r1])  # im2col of the block: one copy
            block = out[:, r0:r1]
            if n == 1:
                block2d, cols2d = block.reshape((r1 - r0) * ow, o), cols.reshape((r1 - r0) * ow, k)
                if gemm.matmul_finished(cols2d, wmat, block2d, finish,
                                         lambda t, r0=r0, r1=r1: t[:, r0:r1].reshape((r1 - r0) * ow, o)):
                    continue
                gemm.matmul_into(cols2d, wmat, block2d)
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
    if not gemm.matmul_finished(cols, wg, target, finish, lambda t: t.reshape(m, group, og).transpose(1, 0, 2),
                                 group):
        gemm.batched_matmul_into(cols, wg, target)
        finish(out)
    return out


def _grouped_weights(w: np.ndarray, group: int) -> np.ndarray:
    """A grouped convolution's weight [O, kH, kW, C/G] as G matrices [K, O/G] (padded for the register tiles)."""
    o, kh, kw, cg = w.shape
    return packed(w, ("groups", group), lambda a: tiles.padded(
        a.reshape(group, o // group, kh * kw * cg).transpose(0, 2, 1)))


def _conv_common(op, x, weight, bias, ctx, strides, pad_mode, pad_list, dilation, group, activation=0, out=None,
                 post=()):
    cdtype, (n, oh, ow, o), group, s, d, pads = conv_checked(op, x, weight, bias, strides, pad_mode, pad_list,
                                                             dilation, group)
    b = real_bias(op, bias, o, ctx, cdtype)
    activation = activation_code(activation)
    if out is not None and (out.dtype != x.dtype or x.dtype != cdtype or out.shape != (n, oh, ow, o)
                            or not numba_loops.evenly_strided(out)):
        out = None  # float16 data computes in float32: the planned array does not fit
    w_c = weight if weight.dtype == cdtype else packed(weight, ("cast", cdtype.str), lambda a: a.astype(cdtype))
    if post and (x.dtype != cdtype or any(v.dtype != cdtype or v.shape != ((n, oh, ow, o) if name == "addend" else (o,))
                                          for name, v in post)):
        raise invalid(f"{op}: post operations need per-channel vectors (addends: the output's shape) of the compute "
                      "dtype")  # (the fusion guards this)
    result = _conv_core(x.astype(cdtype, copy=False), w_c, s, d, pads, group, (oh, ow), b, activation, out, post)
    return result.astype(x.dtype, copy=False)


def _nhwc_dims(dims):
    n, c, h, w = dims
    return (n, h, w, c)


def conv2d(x, weight, bias, *, strides, pad_mode, pad_list, dilation, group, ctx, activation=0, out=None, post=(),
           nchw=False):
    """CONV2D (``kernels.conv.conv2d``) accelerated. ``post``: see :func:`_conv_core`. ``nchw`` (the plan's fusion
    of the TRANSPOSE [0, 2, 3, 1] before it: a model's NCHW image): ``x`` is [N, C, H, W], read through its NHWC
    view."""
    if nchw:
        if np.ndim(x) != 4:
            raise invalid(f"CONV2D: input must be 4-D [N, C, H, W] (an NCHW image), got shape {list(np.shape(x))}")
        x = np.transpose(x, (0, 2, 3, 1))
    return _conv_common("CONV2D", x, weight, bias, ctx, strides, pad_mode, pad_list, dilation, group, activation,
                        out, post)


def depthwise_conv2d_native(x, weight, bias, *, strides, pad_mode, pad_list, dilation, ctx, activation=0,
                            out=None, post=()):
    """DEPTHWISE_CONV2D_NATIVE (``kernels.conv.depthwise_conv2d_native``) accelerated; ``post``: see
    :func:`_conv_core`."""
    op = "DEPTHWISE_CONV2D_NATIVE"
    if np.ndim(x) != 4 or np.ndim(weight) != 4:
        raise invalid(f"{op}: input and weight must be 4-D, got shapes {list(np.shape(x))} and "
                      f"{list(np.shape(weight))}")
    return _conv_common(op, x, weight, bias, ctx, strides, pad_mode, pad_list, dilation,
                        depthwise_group(op, x.shape, weight.shape), activation, out, post)


ACCELERATED = {"CONV2D": conv2d, "DEPTHWISE_CONV2D_NATIVE": depthwise_conv2d_native}


@specialiser("OH_NN_OPS_CONV2D", "OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE")
def specialise_conv(op, general, inputs, arguments, addends):
    """A plan step's runner: the one bound to its planned shapes and constants (:func:`_bound_runner`) where there
    is one, else the accelerated kernel picking its path per call (a fused step's ``general`` already is) -- which
    is also what a bound runner calls for inputs that are not as planned."""
    fused = "post" in arguments or "nchw" in arguments
    fast = general if fused else functools.partial(ACCELERATED[op], **arguments)
    return _bound_runner(op, fast, inputs, arguments, addends) or fast


def _bound_runner(op, general, inputs, arguments, addends):
    """A plan step's runner (``runners``) for the planned float32 input and constant weight and bias, making
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
        group = depthwise_group(op, x.shape, weight.shape) if depthwise else arguments["group"]
        _, out_shape, group, strides, dilation, pads = conv_checked(
            op, x, weight, bias, arguments["strides"], arguments["pad_mode"], arguments["pad_list"],
            arguments["dilation"], group)
        activation = activation_code(arguments.get("activation", 0))
    except NNRtError:
        return None  # the general kernel raises its error in the run
    n, oh, ow, o = out_shape
    _, kh, kw, cg = weight.shape
    post = tuple(arguments.get("post", ()))
    if cg == 1 and group > 1:
        if post or o != x.shape[3] or (kh, kw) != (3, 3) or nchw:
            return None
        loop = numba_loops.depthwise_3x3_loop(True)
        if loop is None:
            return None
        taps = depthwise_taps(weight)
        return runners.depthwise_3x3(general, x.shape, out_shape, loop, taps, bias,
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
        if not gemm.uses_tiles(m, cg, og, x.dtype, group, finished=True):
            if group != 1 or tuple(strides) != (1, 1) or addends > 1 or not numba_loops.enabled():
                return None
            wmat = packed_matrix(weight, o, np.float32)
            fused = tuple((name, None if name == "addend" else v) for name, v in post)
            operands = numba_loops.finish_arrays(bias, fused, o, np.float32)
            return runners.blas_1x1(general, x.shape, out_shape, lambda a, t: gemm.matmul_into(a, wmat, t),
                                     operands, activation, bool(addends))
        if group == 1:
            weights, view = packed_matrix(weight, o, np.float32), (lambda t: t.reshape(m, o))
        else:
            weights, view = _grouped_weights(weight, group), (lambda t: t.reshape(m, group, og).transpose(1, 0, 2))
        tile_finish = finish.tile_finish(o, view, group)
        product = None if tile_finish is None else tiles.bound_product(weights, tile_finish)
        return None if product is None else runners.tiled_1x1(general, x.shape, out_shape, strides, group,
                                                               product, bool(addends))
    if group != 1:
        return None
    method = special_method(x, weight, strides, dilation, group, (oh, ow))
    if method is not None and nchw:
        return None
    if method == "winograd":
        return winograd_runner(general, x.shape, weight, pads, out_shape, finish, addends)
    if method == "kn2row":
        return kn2row_runner(general, x.shape, weight, bias, pads, out_shape, post, activation, addends)
    wmat = packed_matrix(weight, o, np.float32)
    if method is not None or not direct_possible(x, weight, group, (oh, ow)):
        return None
    _, h, w, c = x.shape
    hp, wp = h + pads[0] + pads[1], w + pads[2] + pads[3]
    span = ((kh - 1) * dilation[0] * wp + (kw - 1) * dilation[1]) * c + c
    if ((oh - 1) * strides[0] * wp + (ow - 1) * strides[1]) * c + span > hp * wp * c:
        return None
    columns = packed(weight, ("direct", wp, *dilation), lambda a: direct_offsets(a, wp * c, *dilation))
    tile_finish = finish.tile_finish(o, lambda t: t.reshape(oh, ow, o))
    product = None if tile_finish is None else tiles.bound_product(wmat, tile_finish, columns)
    return None if product is None else runners.direct(general, x_in.shape, out_shape, pads, (strides, span),
                                                        product, bool(addends), nchw)


__all__ = ["ACCELERATED", "conv2d", "depthwise_conv2d_native"]
