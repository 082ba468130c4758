"""Spatial ONNX ops: convolutions, pooling, normalisation, resize, LSTM and (de)quantization.

Layout: NCHW ONNX tensors meet NHWC NNRt ops between transposes (the layout pass cancels the transposes between
consecutive NHWC ops). 1-D ops ([N, C, L]) run as 2-D ops on [N, 1, L, C]; 3-D convolutions have no NNRt op and
are rejected. Decisions:

* Pads are computed explicitly (ONNX ``auto_pad`` included) whenever the spatial dims are static; otherwise
  SAME_UPPER/VALID use the NNRt pad modes (identical semantics) and SAME_LOWER is rejected.
* MaxPool/AveragePool run on the native pooling ops when they can express the case exactly: no dilation, pads
  smaller than the kernel. ``count_include_pad=1`` becomes PAD (zeros) + pooling whose extra end padding (ceil
  mode) is not counted -- ONNX does not count the cells past the declared end pads either. Everything else
  (dilations, big pads, 3-D) is decomposed into one strided slice per kernel tap combined with MAXIMUM/ADD
  (and a constant divisor map for averages).
* LpPool: |x|^p (SQUARE for p=2), a sum pool (average pool times the constant window-size map), then ^(1/p).
* Resize/Upsample: the interpolation is separable; every resized axis is a constant [out, in] matrix computed
  here exactly like the ONNX reference (all coordinate modes, cubic, antialias, exclude_outside, roi). Nearest
  becomes a GATHER per axis; linear on H/W of a 4-D tensor becomes RESIZE_BILINEAR when that op's own
  matrix equals ONNX's; anything else a MATMUL per axis.
* LSTM: NNRt's six-input LSTM uses ONNX's gate order (iofc) and bias layout; reverse runs forward on the
  time-reversed sequence (GATHER).
* QuantizeLinear -> QUANT_DTYPE_CAST with the quant params on its int8/uint8 output when the zero points are
  even (QUANT_DTYPE_CAST rounds r/s + z, ONNX rounds r/s then adds z: they differ at .5 ties for an odd z);
  otherwise (odd zero point, 16-bit, blocked or computed parameters) DIV, ROUND, ADD, CLIP, CAST to plain
  integers. DequantizeLinear of a constant is folded, of a tensor carrying the same quant params ->
  QUANT_DTYPE_CAST, of a raw integer tensor -> CAST, SUB zero point, MUL scale (exact).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.graph import Value
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    NEEDS_CONSTANT,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from ...ir.passes import NCHW_TO_NHWC, NHWC_TO_NCHW
from ...kernels.spatial import bilinear_matrix
from ...tensor import QuantParam
from ..context import NodeContext
from . import converts

# ----------------------------------------------------------------------------------------------------------------
# shared helpers


def _unsupported(message: str) -> ConversionIssue:
    return ConversionIssue(UNSUPPORTED_ATTRIBUTE, message)


def _known(shape) -> bool:
    return shape is not None and all(d >= 0 for d in shape)


def _set_shape(ctx: NodeContext, name: str, shape: Sequence[int]) -> None:
    """Record a shape we computed on an output whose inferred shape is missing or partly unknown."""
    value = ctx.value(name)
    if value.shape is None or len(value.shape) != len(shape) or any(d < 0 for d in value.shape):
        value.shape = tuple(int(d) for d in shape)


def _reshape(ctx: NodeContext, name: str, shape: Sequence[int], output: str | None = None) -> str:
    if sum(d < 0 for d in shape) > 1:
        raise ConversionIssue(DYNAMIC_SHAPE, f"reshaping {name!r} to {list(shape)} needs static dims")
    return ctx.reshape(name, [int(d) for d in shape], output=output)


def _spatial_rank(ctx: NodeContext, x: str, what: str, allow_3d: bool = False) -> int:
    rank = ctx.rank(x)
    nd = rank - 2
    if nd < 1:
        raise ConversionIssue(INVALID_MODEL, f"{what} needs an [N, C, spatial...] input, {x!r} has rank {rank}")
    if nd > 2 and not allow_3d:
        raise _unsupported(f"{nd}-D {what} is not supported: NNRt has only 2-D {what} ops (input rank {rank})")
    return nd


def _ints_attr(ctx: NodeContext, name: str, nd: int, default: int) -> list[int]:
    value = ctx.attr(name)
    if value is None:
        return [default] * nd
    value = [int(v) for v in value]
    if len(value) != nd:
        raise ConversionIssue(INVALID_MODEL, f"{name}={value} needs {nd} values")
    return value


def _onnx_pads(ctx: NodeContext, nd: int, kernel, strides, dilations, in_sizes, allow_modes=True):
    """(begin, end) per spatial dim, or ("mode", 0|1) when auto_pad needs the NNRt pad mode (dynamic dims)."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    pads_attr = ctx.attr("pads")
    if auto_pad in ("NOTSET", ""):
        pads = [int(p) for p in pads_attr] if pads_attr is not None else [0] * (2 * nd)
        if len(pads) != 2 * nd:
            raise ConversionIssue(INVALID_MODEL, f"pads={pads} needs {2 * nd} values")
        if any(p < 0 for p in pads):
            raise _unsupported(f"negative pads {pads} are not supported")
        return list(zip(pads[:nd], pads[nd:]))
    if auto_pad == "VALID":
        return [(0, 0)] * nd
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise _unsupported(f"auto_pad={auto_pad!r} is not supported")
    if not _known(in_sizes):
        if auto_pad == "SAME_UPPER" and allow_modes:
            return ("mode", 0)
        raise ConversionIssue(DYNAMIC_SHAPE, f"auto_pad={auto_pad} needs static spatial dims, got {list(in_sizes)}")
    result = []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        result.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
    return result


def _tblr(pads_2d) -> list[int]:
    (top, bottom), (left, right) = pads_2d
    return [top, bottom, left, right]


def _into_nhwc(ctx: NodeContext, x: str, nd: int) -> str:
    """NC(H)W -> NHWC (1-D [N, C, L] becomes [N, 1, L, C])."""
    if nd == 2:
        return ctx.transpose(x, NCHW_TO_NHWC)
    n, c, length = ctx.value(x).shape
    return _reshape(ctx, ctx.transpose(x, (0, 2, 1)), [n, 1, length, c])


def _nhwc_shape(nd: int, out_shape) -> tuple[int, ...] | None:
    if out_shape is None:
        return None
    if nd == 2:
        return tuple(out_shape[p] for p in NCHW_TO_NHWC)
    return (out_shape[0], 1, out_shape[2], out_shape[1])


def _out_of_nhwc(ctx: NodeContext, y: str, nd: int, out: str) -> None:
    if nd == 2:
        ctx.transpose(y, NHWC_TO_NCHW, output=out)
        return
    n, _, length, c = ctx.value(y).shape
    ctx.transpose(_reshape(ctx, y, [n, length, c]), (0, 2, 1), output=out)


def _conv_out(size, k, s, d, pads) -> int:
    return (size + pads[0] + pads[1] - ((k - 1) * d + 1)) // s + 1 if size >= 0 else -1


# ----------------------------------------------------------------------------------------------------------------
# Conv / ConvTranspose


def _weight(ctx: NodeContext, position: int, what: str):
    name = ctx.input(position)
    value = ctx.value(name)
    shape = ctx.static_shape(name, what)
    return name, value, shape


def _conv_operands(ctx: NodeContext, what: str):
    """The input, the (1-D or 2-D) weight and the kernel of a Conv/ConvTranspose node, checked against each other
    and the kernel_shape attribute: (x, weight name, weight value, weight shape, spatial rank, kernel)."""
    x = ctx.input(0)
    w_name, w_value, w_shape = _weight(ctx, 1, f"the {what} weight")
    if len(w_shape) not in (3, 4):
        raise _unsupported(f"{len(w_shape) - 2}-D {what} (weight shape {list(w_shape)}) is not supported: "
                           f"NNRt has only 2-D {what}s")
    nd = _spatial_rank(ctx, x, what)
    if nd != len(w_shape) - 2:
        raise ConversionIssue(INVALID_MODEL, f"input rank {nd + 2} and weight rank {len(w_shape)} disagree")
    kernel = list(w_shape[2:])
    kernel_attr = ctx.attr("kernel_shape")
    if kernel_attr is not None and [int(k) for k in kernel_attr] != kernel:
        raise ConversionIssue(INVALID_MODEL, f"kernel_shape {list(kernel_attr)} disagrees with the weight {list(w_shape)}")
    return x, w_name, w_value, w_shape, nd, kernel


@converts("Conv")
def conv(ctx: NodeContext) -> None:
    """Conv (1-D and 2-D): CONV2D, or DEPTHWISE_CONV2D_NATIVE when every group has one input channel."""
    x, w_name, w_value, w_shape, nd, kernel = _conv_operands(ctx, "convolution")
    out_c, in_per_group = w_shape[:2]
    group = int(ctx.attr("group", 1))
    strides = _ints_attr(ctx, "strides", nd, 1)
    dilations = _ints_attr(ctx, "dilations", nd, 1)
    x_shape = ctx.value(x).shape
    pads = _onnx_pads(ctx, nd, kernel, strides, dilations, x_shape[2:])
    if group < 1 or out_c % group:
        raise ConversionIssue(INVALID_MODEL, f"group={group} does not divide the {out_c} output channels")
    if x_shape[1] >= 0 and x_shape[1] != in_per_group * group:
        raise ConversionIssue(INVALID_MODEL, f"input has {x_shape[1]} channels, weight expects {in_per_group}x{group}")
    if nd == 1:  # [N, C, L] as [N, 1, L, C]: an H axis of size 1
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        if pads[0] != "mode":
            pads = [(0, 0)] + list(pads)
    depthwise = group > 1 and in_per_group == 1
    prefix = "OH_NN_DEPTHWISE_CONV2D_NATIVE" if depthwise else "OH_NN_CONV2D"
    params = {f"{prefix}_STRIDES": strides, f"{prefix}_DILATION": dilations}
    if pads[0] == "mode":
        params[f"{prefix}_PAD_MODE"] = np.asarray([pads[1]], np.int8)
    else:
        params[f"{prefix}_PAD"] = _tblr(pads)
    if not depthwise and group != 1:
        params["OH_NN_CONV2D_GROUP"] = group
    # weight [O, C/g, (kH,) kW] -> [O, kH, kW, C/g]
    if w_value.data is not None:
        data = w_value.data if nd == 2 else w_value.data[:, :, None, :]
        w_nhwc = ctx.constant(np.ascontiguousarray(data.transpose(0, 2, 3, 1)), f"{w_name}.ohwi")
    else:
        w4 = w_name if nd == 2 else _reshape(ctx, w_name, [out_c, in_per_group, 1, kernel[-1]])
        w_nhwc = ctx.transpose(w4, (0, 2, 3, 1))
    if ctx.has_input(2):
        b = ctx.input(2)
    else:
        b = ctx.constant(np.zeros(out_c, w_value.dtype), f"{ctx.name}.bias")
    out = ctx.output(0)
    if _known(x_shape[2:]) and pads[0] != "mode":
        spatial = [_conv_out(s, k, st, d, p) for s, k, st, d, p in
                   zip(x_shape[2:], kernel[-nd:], strides[-nd:], dilations[-nd:], pads[-nd:])]
        _set_shape(ctx, out, [x_shape[0], out_c, *spatial])
    x_nhwc = _into_nhwc(ctx, x, nd)
    y = ctx.new_value(ctx.value(out).dtype, _nhwc_shape(nd, ctx.value(out).shape), f"{out}.nhwc")
    ctx.emit(OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE if depthwise else OP.OH_NN_OPS_CONV2D, [x_nhwc, w_nhwc, b], [y],
             params)
    _out_of_nhwc(ctx, y, nd, out)


@converts("ConvTranspose")
def conv_transpose(ctx: NodeContext) -> None:
    """ConvTranspose (1-D and 2-D) -> CONV2D_TRANSPOSE; weight [C, O/g, kH, kW] -> [O, kH, kW, C/g]."""
    x, w_name, w_value, w_shape, nd, kernel = _conv_operands(ctx, "transposed convolution")
    in_c, out_per_group = w_shape[:2]
    group = int(ctx.attr("group", 1))
    if group < 1 or in_c % group:
        raise ConversionIssue(INVALID_MODEL, f"group={group} does not divide the {in_c} input channels")
    strides = _ints_attr(ctx, "strides", nd, 1)
    dilations = _ints_attr(ctx, "dilations", nd, 1)
    out_pad = _ints_attr(ctx, "output_padding", nd, 0)
    output_shape = ctx.attr("output_shape")
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    pads_attr = ctx.attr("pads")
    x_shape = ctx.value(x).shape
    in_sizes = list(x_shape[2:])
    full = [(s - 1) * st + (k - 1) * d + 1 if s >= 0 else -1 for s, st, k, d in zip(in_sizes, strides, kernel, dilations)]
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if not _known(in_sizes):
            raise ConversionIssue(DYNAMIC_SHAPE, f"output_shape/auto_pad need static spatial dims, got {in_sizes}")
        if output_shape is not None:
            wanted = [int(v) for v in output_shape][-nd:]
        else:
            wanted = [s * st for s, st in zip(in_sizes, strides)]
        pads = []
        for i in range(nd):
            total = full[i] + out_pad[i] - wanted[i]
            if total < 0:  # a bigger output than the full result: more output padding (bias-only cells)
                out_pad[i] -= total
                pads.append((0, 0))
            elif auto_pad == "SAME_UPPER":
                pads.append((total // 2, total - total // 2))
            else:
                pads.append((total - total // 2, total // 2))
    elif auto_pad in ("NOTSET", "VALID"):
        raw = [int(p) for p in pads_attr] if pads_attr is not None and auto_pad == "NOTSET" else [0] * (2 * nd)
        if len(raw) != 2 * nd or any(p < 0 for p in raw):
            raise _unsupported(f"pads={raw} are not supported (need {2 * nd} values >= 0)")
        pads = list(zip(raw[:nd], raw[nd:]))
    else:
        raise _unsupported(f"auto_pad={auto_pad!r} is not supported")
    for i in range(nd):
        if out_pad[i] >= strides[i]:
            raise _unsupported(f"output padding {out_pad[i]} (axis {i}) must be smaller than the stride {strides[i]} "
                               f"for NNRt CONV2D_TRANSPOSE")
    out_c = out_per_group * group
    out = ctx.output(0)
    if _known(in_sizes):
        spatial = [f + op - p[0] - p[1] for f, op, p in zip(full, out_pad, pads)]
        if any(s <= 0 for s in spatial):
            raise ConversionIssue(INVALID_MODEL, f"the pads leave an empty output {spatial}")
        _set_shape(ctx, out, [x_shape[0], out_c, *spatial])
    if nd == 1:
        strides, dilations, out_pad, pads = [1] + strides, [1] + dilations, [0] + out_pad, [(0, 0)] + pads
    params = {"OH_NN_CONV2D_TRANSPOSE_STRIDES": strides, "OH_NN_CONV2D_TRANSPOSE_DILATION": dilations,
              "OH_NN_CONV2D_TRANSPOSE_PAD": _tblr(pads), "OH_NN_CONV2D_TRANSPOSE_OUTPUT_PADDINGS": out_pad,
              "OH_NN_CONV2D_TRANSPOSE_GROUP": group}
    cg = in_c // group
    kh, kw = (1, kernel[0]) if nd == 1 else kernel
    if w_value.data is not None:
        data = w_value.data.reshape(group, cg, out_per_group, kh, kw).transpose(0, 2, 3, 4, 1)
        w_nhwc = ctx.constant(np.ascontiguousarray(data.reshape(out_c, kh, kw, cg)), f"{w_name}.ohwi")
    else:
        w5 = _reshape(ctx, w_name, [group, cg, out_per_group, kh, kw])
        w_nhwc = _reshape(ctx, ctx.transpose(w5, (0, 2, 3, 4, 1)), [out_c, kh, kw, cg])
    b = ctx.input(2) if ctx.has_input(2) else ctx.constant(np.zeros(out_c, w_value.dtype), f"{ctx.name}.bias")
    x_nhwc = _into_nhwc(ctx, x, nd)
    y = ctx.new_value(ctx.value(out).dtype, _nhwc_shape(nd, ctx.value(out).shape), f"{out}.nhwc")
    ctx.emit(OP.OH_NN_OPS_CONV2D_TRANSPOSE, [x_nhwc, w_nhwc, b], [y], params)
    _out_of_nhwc(ctx, y, nd, out)


# ----------------------------------------------------------------------------------------------------------------
# pooling


def _pool_sizes(in_sizes, kernel, strides, dilations, pads, ceil_mode) -> list[int]:
    """ONNX output sizes (ceil mode drops a last window that would start in the end padding)."""
    result = []
    for size, k, s, d, (p0, p1) in zip(in_sizes, kernel, strides, dilations, pads):
        span = size + p0 + p1 - ((k - 1) * d + 1)
        if span < 0:
            raise ConversionIssue(INVALID_MODEL, f"kernel {k} (dilation {d}) does not fit the padded extent {size + p0 + p1}")
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= size + p0:
            out -= 1
        result.append(out)
    return result


def _tap_counts(size, k, s, d, p0, p1, out, include_pad) -> np.ndarray:
    """Per output position: how many taps of the window hit a counted cell (input, or declared pads if include_pad)."""
    lo, hi = (-p0, size + p1) if include_pad else (0, size)
    starts = np.arange(out) * s - p0
    taps = starts[:, None] + np.arange(k)[None, :] * d
    return ((taps >= lo) & (taps < hi)).sum(axis=1)


def _count_map(in_sizes, kernel, strides, dilations, pads, out_sizes, include_pad) -> np.ndarray:
    counts = np.ones((), np.float64)
    for size, k, s, d, (p0, p1), out in zip(in_sizes, kernel, strides, dilations, pads, out_sizes):
        counts = np.multiply.outer(counts, _tap_counts(size, k, s, d, p0, p1, out, include_pad))
    return counts


def _pad_values(ctx: NodeContext, x: str, pads_per_dim, fill: float, out_shape=None) -> str:
    """PAD (constant) of an n-D tensor; ``pads_per_dim`` lists (begin, end) for every dim."""
    value = ctx.value(x)
    shape = None if value.shape is None else tuple(d + b + e if d >= 0 else -1
                                                   for d, (b, e) in zip(value.shape, pads_per_dim))
    padded = ctx.new_value(value.dtype, out_shape or shape, f"{x}.padded")
    paddings = ctx.constant(np.asarray(pads_per_dim, np.int64), f"{x}.paddings")
    ctx.emit(OP.OH_NN_OPS_PAD, [x, paddings], [padded], {"OH_NN_PAD_CONSTANT_VALUE": float(fill)})
    return padded


def _lowest(dtype: np.dtype) -> float:
    return float("-inf") if dtype.kind == "f" else float(np.iinfo(dtype).min)


def _taps_pool(ctx: NodeContext, kind: str, x: str, out: str, kernel, strides, dilations, pads, out_sizes,
               include_pad: bool) -> None:
    """Pooling of any rank as one strided slice per kernel tap (for what the native pooling ops cannot express).

    kind: "max", "avg" or "sum"."""
    value = ctx.value(x)
    shape = value.shape
    extra = [max((o - 1) * s + (k - 1) * d + 1 - (size + p0 + p1), 0)
             for o, s, k, d, size, (p0, p1) in zip(out_sizes, strides, kernel, dilations, shape[2:], pads)]
    pad_list = [(0, 0), (0, 0)] + [(p0, p1 + e) for (p0, p1), e in zip(pads, extra)]
    fill = _lowest(value.dtype) if kind == "max" else 0.0
    source = _pad_values(ctx, x, pad_list, fill) if any(b or e for b, e in pad_list) else x
    out_shape = (shape[0], shape[1], *out_sizes)
    taps = []
    for offsets in np.ndindex(*kernel):
        begin = [0, 0] + [o * d for o, d in zip(offsets, dilations)]
        end = [0, 0] + [o * d + (n - 1) * s + 1 for o, d, n, s in zip(offsets, dilations, out_sizes, strides)]
        tap = ctx.new_value(value.dtype, out_shape, f"{out}.tap")
        ctx.emit(OP.OH_NN_OPS_STRIDED_SLICE,
                 [source, ctx.constant(np.asarray(begin, np.int64)), ctx.constant(np.asarray(end, np.int64)),
                  ctx.constant(np.asarray([1, 1, *strides], np.int64))], [tap],
                 {"OH_NN_STRIDED_SLICE_BEGIN_MASK": 3, "OH_NN_STRIDED_SLICE_END_MASK": 3})
        taps.append(tap)
    combine = OP.OH_NN_OPS_MAXIMUM if kind == "max" else OP.OH_NN_OPS_ADD
    acc = taps[0]
    scale = None
    if kind == "avg":
        counts = _count_map(shape[2:], kernel, strides, dilations, pads, out_sizes, include_pad)
        scale = (1.0 / counts).astype(value.dtype)
    for position, tap in enumerate(taps[1:], start=1):
        last = position == len(taps) - 1 and scale is None
        target = out if last else ctx.new_value(value.dtype, out_shape, f"{out}.acc")
        ctx.emit(combine, [acc, tap], [target])
        acc = target
    if scale is not None:
        factor = scale.reshape(-1)[0] if np.all(scale == scale.reshape(-1)[0]) else scale.reshape((1, 1, *out_sizes))
        ctx.emit(OP.OH_NN_OPS_MUL, [acc, ctx.constant(np.asarray(factor, value.dtype))], [out])
    elif len(taps) == 1:
        _copy(ctx, acc, out, out_shape)


def _copy(ctx: NodeContext, source: str, out: str, shape) -> None:
    ctx.emit(OP.OH_NN_OPS_RESHAPE, [source, ctx.constant(np.asarray(shape, np.int64))], [out])


def _pool_common(ctx: NodeContext, kind: str, x: str, out: str, *, p: float | None = None) -> None:
    """MaxPool / AveragePool / LpPool onto native pooling where exact, else slices per tap."""
    nd = _spatial_rank(ctx, x, "pooling", allow_3d=True)
    kernel = [int(k) for k in ctx.attr("kernel_shape") or []]
    if len(kernel) != nd:
        raise ConversionIssue(INVALID_MODEL, f"kernel_shape {kernel} needs {nd} values")
    strides = _ints_attr(ctx, "strides", nd, 1)
    dilations = _ints_attr(ctx, "dilations", nd, 1)
    ceil_mode = int(ctx.attr("ceil_mode", 0))
    include_pad = bool(int(ctx.attr("count_include_pad", 0))) if kind == "avg" else False
    x_value = ctx.value(x)
    shape = x_value.shape
    in_sizes = list(shape[2:])
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad != "NOTSET":
        ceil_mode = 0  # the output size of SAME/VALID does not depend on ceil_mode
    pads = _onnx_pads(ctx, nd, kernel, strides, dilations, in_sizes)
    if kind != "max" and x_value.dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} of {x_value.dtype} is not supported")
    static = _known(in_sizes)
    if pads[0] == "mode":  # dynamic dims, SAME_UPPER: only the native op can do it
        if nd > 2 or any(d != 1 for d in dilations) or kind == "sum" or include_pad:
            raise ConversionIssue(DYNAMIC_SHAPE, "auto_pad=SAME_UPPER with dynamic spatial dims is only supported "
                                                 "for plain 1-D/2-D max/average pooling")
        _native_pool(ctx, kind, x, out, nd, kernel, strides, None, ceil_mode, pad_mode=0)
        return
    if not static:
        if nd > 2 or any(d != 1 for d in dilations) or include_pad or kind == "sum" \
                or any(p0 >= k or p1 >= k for (p0, p1), k in zip(pads, kernel)):
            raise ConversionIssue(DYNAMIC_SHAPE, f"this pooling needs static spatial dims, got {in_sizes}")
        _native_pool(ctx, kind, x, out, nd, kernel, strides, pads, ceil_mode)
        return
    out_sizes = _pool_sizes(in_sizes, kernel, strides, dilations, pads, ceil_mode)
    _set_shape(ctx, out, [shape[0], shape[1], *out_sizes])
    if kind == "max" or (kind == "avg" and not include_pad):
        if _count_map(in_sizes, kernel, strides, dilations, pads, out_sizes, False).min() == 0:
            raise _unsupported(f"pads {[list(p) for p in pads]} leave a window entirely in the padding (no value)")
    native = nd <= 2 and all(d == 1 for d in dilations) and all(p0 < k and p1 < k for (p0, p1), k in zip(pads, kernel))
    if not native:
        _taps_pool(ctx, kind, x, out, kernel, strides, dilations, pads, out_sizes, include_pad)
        return
    if kind == "max" or (kind == "avg" and (not include_pad or not any(p0 or p1 for p0, p1 in pads))):
        _native_pool(ctx, kind, x, out, nd, kernel, strides, pads, ceil_mode)
        return
    # counted padding (average with count_include_pad, or a sum): PAD zeros, then pool with uncounted extra end pads
    extra = [max((o - 1) * s + k - (size + p0 + p1), 0)
             for o, s, k, size, (p0, p1) in zip(out_sizes, strides, kernel, in_sizes, pads)]
    source = x
    if any(p0 or p1 for p0, p1 in pads):
        source = _pad_values(ctx, x, [(0, 0), (0, 0), *pads], 0.0)
    padded_sizes = [size + p0 + p1 for size, (p0, p1) in zip(in_sizes, pads)]
    if kind == "avg":
        _native_pool(ctx, "avg", source, out, nd, kernel, strides, [(0, e) for e in extra], 0)
        return
    # sum = average (over the cells inside the padded extent) x that count
    mean = ctx.new_value(x_value.dtype, (shape[0], shape[1], *out_sizes), f"{out}.mean")
    _native_pool(ctx, "avg", source, mean, nd, kernel, strides, [(0, e) for e in extra], 0)
    counts = _count_map(padded_sizes, kernel, strides, [1] * nd, [(0, 0)] * nd, out_sizes, False)
    factor = counts.reshape(-1)[0] if np.all(counts == counts.reshape(-1)[0]) else counts.reshape((1, 1, *out_sizes))
    ctx.emit(OP.OH_NN_OPS_MUL, [mean, ctx.constant(np.asarray(factor, x_value.dtype))], [out])


def _native_pool(ctx: NodeContext, kind: str, x: str, out: str, nd: int, kernel, strides, pads, ceil_mode,
                 pad_mode: int | None = None) -> None:
    op, prefix = (OP.OH_NN_OPS_MAX_POOL, "OH_NN_MAX_POOL") if kind == "max" else (OP.OH_NN_OPS_AVG_POOL, "OH_NN_AVG_POOL")
    if nd == 1:
        kernel, strides = [1] + list(kernel), [1] + list(strides)
        pads = None if pads is None else [(0, 0)] + list(pads)
    params = {f"{prefix}_KERNEL_SIZE": list(kernel), f"{prefix}_STRIDE": list(strides),
              f"{prefix}_ROUND_MODE": int(ceil_mode)}
    if pad_mode is not None:
        params[f"{prefix}_PAD_MODE"] = np.asarray([pad_mode], np.int8)
    else:
        params[f"{prefix}_PAD"] = _tblr(pads)
    x_nhwc = _into_nhwc(ctx, x, nd)
    out_value = ctx.value(out)
    y = ctx.new_value(out_value.dtype, _nhwc_shape(nd, out_value.shape), f"{out}.nhwc")
    ctx.emit(op, [x_nhwc], [y], params)
    _out_of_nhwc(ctx, y, nd, out)


def _no_indices(ctx: NodeContext) -> None:
    ctx.attr("storage_order", 0)  # only affects the Indices output
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        raise _unsupported("the Indices output of MaxPool is not supported")


@converts("MaxPool")
def max_pool(ctx: NodeContext) -> None:
    _no_indices(ctx)
    _pool_common(ctx, "max", ctx.input(0), ctx.output(0))


@converts("AveragePool")
def average_pool(ctx: NodeContext) -> None:
    _pool_common(ctx, "avg", ctx.input(0), ctx.output(0))


def _lp_p(ctx: NodeContext) -> float:
    p = ctx.attr("p", 2)
    p = float(p)
    if p <= 0:
        raise _unsupported(f"p={p} must be > 0")
    return p


def _abs_pow(ctx: NodeContext, x: str, p: float, hint: str) -> str:
    value = ctx.value(x)
    if value.dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} of {value.dtype} is not supported")
    powered = ctx.new_value(value.dtype, value.shape, f"{hint}.pow")
    if p == 2:
        ctx.emit(OP.OH_NN_OPS_SQUARE, [x], [powered])
        return powered
    absolute = ctx.new_value(value.dtype, value.shape, f"{hint}.abs")
    ctx.emit(OP.OH_NN_OPS_ABS, [x], [absolute])
    if p == 1:
        return absolute
    ctx.emit(OP.OH_NN_OPS_POW, [absolute, ctx.constant(np.asarray(p, value.dtype))], [powered])
    return powered


def _root(ctx: NodeContext, summed: str, p: float, out: str) -> None:
    dtype = ctx.value(summed).dtype
    if p == 1:
        _copy(ctx, summed, out, ctx.static_shape(summed))
    elif p == 2:
        ctx.emit(OP.OH_NN_OPS_SQRT, [summed], [out])
    else:
        ctx.emit(OP.OH_NN_OPS_POW, [summed, ctx.constant(np.asarray(1.0 / p, dtype))], [out])


@converts("LpPool")
def lp_pool(ctx: NodeContext) -> None:
    """LpPool: (sum over the window of |x|^p)^(1/p); padded cells add nothing."""
    p = _lp_p(ctx)
    x = ctx.input(0)
    out = ctx.output(0)
    powered = _abs_pow(ctx, x, p, out)
    value = ctx.value(x)
    summed = ctx.new_value(value.dtype, None, f"{out}.sum")
    _pool_common(ctx, "sum", powered, summed)
    out_shape = ctx.value(summed).shape
    if out_shape is not None:
        _set_shape(ctx, out, out_shape)
    _root(ctx, summed, p, out)


def _global_reduce(ctx: NodeContext, op: OP, prefix: str, x: str, out: str) -> None:
    rank = ctx.rank(x)
    if rank < 3:
        raise ConversionIssue(INVALID_MODEL, f"global pooling needs an [N, C, spatial...] input, got rank {rank}")
    shape = ctx.value(x).shape
    _set_shape(ctx, out, [shape[0], shape[1]] + [1] * (rank - 2))
    ctx.emit(op, [x, ctx.constant(np.arange(2, rank, dtype=np.int64), f"{ctx.name}.axes")], [out],
             {f"{prefix}_KEEP_DIMS": True})


@converts("GlobalAveragePool")
def global_average_pool(ctx: NodeContext) -> None:
    x = ctx.input(0)
    if ctx.rank(x) == 4:
        shape = ctx.value(x).shape
        _set_shape(ctx, ctx.output(0), [shape[0], shape[1], 1, 1])
        y = ctx.new_value(ctx.value(x).dtype, (shape[0], 1, 1, shape[1]), f"{ctx.output(0)}.nhwc")
        ctx.emit(OP.OH_NN_OPS_AVG_POOL, [ctx.transpose(x, NCHW_TO_NHWC)], [y], {"OH_NN_AVG_POOL_GLOBAL": True})
        ctx.transpose(y, NHWC_TO_NCHW, output=ctx.output(0))
        return
    _global_reduce(ctx, OP.OH_NN_OPS_REDUCE_MEAN, "OH_NN_REDUCE_MEAN", x, ctx.output(0))


@converts("GlobalMaxPool")
def global_max_pool(ctx: NodeContext) -> None:
    x = ctx.input(0)
    if ctx.rank(x) == 4:
        shape = ctx.value(x).shape
        _set_shape(ctx, ctx.output(0), [shape[0], shape[1], 1, 1])
        y = ctx.new_value(ctx.value(x).dtype, (shape[0], 1, 1, shape[1]), f"{ctx.output(0)}.nhwc")
        ctx.emit(OP.OH_NN_OPS_MAX_POOL, [ctx.transpose(x, NCHW_TO_NHWC)], [y], {"OH_NN_MAX_POOL_GLOBAL": True})
        ctx.transpose(y, NHWC_TO_NCHW, output=ctx.output(0))
        return
    _global_reduce(ctx, OP.OH_NN_OPS_REDUCE_MAX, "OH_NN_REDUCE_MAX", x, ctx.output(0))


@converts("GlobalLpPool")
def global_lp_pool(ctx: NodeContext) -> None:
    p = _lp_p(ctx)
    x = ctx.input(0)
    out = ctx.output(0)
    rank = ctx.rank(x)
    powered = _abs_pow(ctx, x, p, out)
    shape = ctx.value(x).shape
    summed = ctx.new_value(ctx.value(x).dtype, (shape[0], shape[1]) + (1,) * (rank - 2), f"{out}.sum")
    _global_reduce(ctx, OP.OH_NN_OPS_REDUCE_SUM, "OH_NN_REDUCE_SUM", powered, summed)
    _set_shape(ctx, out, ctx.value(summed).shape)
    _root(ctx, summed, p, out)


# ----------------------------------------------------------------------------------------------------------------
# BatchNormalization, LRN


@converts("BatchNormalization")
def batch_normalization(ctx: NodeContext) -> None:
    """Inference BatchNormalization on the channel axis 1 (NNRt's BATCH_NORM normalises the last axis).

    Opset < 7 ``is_test=0`` and opset >= 14 ``training_mode=1`` (batch statistics) are rejected, as are the
    running-statistics outputs; ``spatial=0`` (opset < 9, per-activation statistics) with constant statistics
    becomes MUL + ADD."""
    if int(ctx.attr("training_mode", 0)):
        raise _unsupported("training_mode=1 is not supported (inference only)")
    if ctx.opset < 7 and "is_test" in ctx.attrs and not int(ctx.attr("is_test", 0)):
        raise _unsupported("is_test=0 (training: batch statistics) is not supported")
    ctx.attr("is_test")
    ctx.attr("consumed_inputs")  # legacy (opset < 6) in-place hint, no effect
    ctx.attr("momentum")  # training-only
    spatial = int(ctx.attr("spatial", 1))
    if len([o for o in ctx.node.output[1:] if o]) > 0:
        raise _unsupported("the running/saved mean and variance outputs (training) are not supported")
    x = ctx.input(0)
    rank = ctx.rank(x)
    epsilon = float(ctx.attr("epsilon", 1e-5))
    stats = [ctx.input(i) for i in range(1, 5)]
    out = ctx.output(0)
    out_value = ctx.value(out)
    if spatial == 0 and any(len(ctx.value(s).shape or ()) > 1 for s in stats):
        scale, bias, mean, var = (ctx.constant_input(i, "per-activation (spatial=0) statistics") for i in range(1, 5))
        factor = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + epsilon)
        shift = bias.astype(np.float64) - mean.astype(np.float64) * factor
        dtype = ctx.value(x).dtype
        scaled = ctx.new_value(dtype, out_value.shape, f"{out}.scaled")
        ctx.emit(OP.OH_NN_OPS_MUL, [x, ctx.constant(factor.astype(dtype)[None])], [scaled])
        ctx.emit(OP.OH_NN_OPS_ADD, [scaled, ctx.constant(shift.astype(dtype)[None])], [out])
        return
    params = {"OH_NN_BATCH_NORM_EPSILON": epsilon}
    if rank == 2:
        ctx.emit(OP.OH_NN_OPS_BATCH_NORM, [x, *stats], [out], params)
        return
    to_last = (0, *range(2, rank), 1)
    back = (0, rank - 1, *range(1, rank - 1))
    x_last = ctx.transpose(x, to_last)
    shape = None if out_value.shape is None else tuple(out_value.shape[p] for p in to_last)
    y_last = ctx.new_value(out_value.dtype, shape, f"{out}.nhwc")
    ctx.emit(OP.OH_NN_OPS_BATCH_NORM, [x_last, *stats], [y_last], params)
    ctx.transpose(y_last, back, output=out)


@converts("LRN")
def lrn(ctx: NodeContext) -> None:
    """ONNX LRN sums x^2 over channels [c - floor((size-1)/2), c + ceil((size-1)/2)] and divides alpha by size.

    Odd size: NNRt LRN on the channel-last tensor (depth_radius (size-1)/2, alpha/size). Even size (asymmetric
    window): x * (bias + alpha/size * (x^2 @ band))^-beta with a constant band matrix over the channels."""
    x = ctx.input(0)
    rank = ctx.rank(x)
    if rank < 2:
        raise ConversionIssue(INVALID_MODEL, f"LRN needs an [N, C, ...] input, got rank {rank}")
    size = int(ctx.attr("size"))
    alpha = float(ctx.attr("alpha", 1e-4))
    beta = float(ctx.attr("beta", 0.75))
    bias = float(ctx.attr("bias", 1.0))
    out = ctx.output(0)
    out_value = ctx.value(out)
    dtype = ctx.value(x).dtype
    to_last = (0, *range(2, rank), 1)
    back = (0, rank - 1, *range(1, rank - 1))
    x_last = ctx.transpose(x, to_last) if rank > 2 else x
    shape = None if out_value.shape is None else tuple(out_value.shape[p] for p in to_last)
    y_last = ctx.new_value(out_value.dtype, shape, f"{out}.nhwc") if rank > 2 else out
    if size % 2 == 1:
        params = {"OH_NN_LRN_DEPTH_RADIUS": (size - 1) // 2, "OH_NN_LRN_BIAS": bias,
                  "OH_NN_LRN_ALPHA": alpha / size, "OH_NN_LRN_BETA": beta}
        ctx.emit(OP.OH_NN_OPS_LRN, [x_last], [y_last], params)
    else:
        channels = ctx.static_shape(x, "LRN input")[1]
        band = np.zeros((channels, channels), dtype)
        for c in range(channels):
            band[max(0, c - (size - 1) // 2): min(channels - 1, c + -(-(size - 1) // 2)) + 1, c] = 1
        squared = ctx.new_value(dtype, shape, f"{out}.sq")
        ctx.emit(OP.OH_NN_OPS_SQUARE, [x_last], [squared])
        summed = ctx.new_value(dtype, shape, f"{out}.sum")
        ctx.emit(OP.OH_NN_OPS_MATMUL, [squared, ctx.constant(band)], [summed])
        scaled = ctx.new_value(dtype, shape, f"{out}.scaled")
        ctx.emit(OP.OH_NN_OPS_MUL, [summed, ctx.constant(np.asarray(alpha / size, dtype))], [scaled])
        based = ctx.new_value(dtype, shape, f"{out}.based")
        ctx.emit(OP.OH_NN_OPS_ADD, [scaled, ctx.constant(np.asarray(bias, dtype))], [based])
        factor = ctx.new_value(dtype, shape, f"{out}.factor")
        ctx.emit(OP.OH_NN_OPS_POW, [based, ctx.constant(np.asarray(-beta, dtype))], [factor])
        ctx.emit(OP.OH_NN_OPS_MUL, [x_last, factor], [y_last])
    if rank > 2:
        ctx.transpose(y_last, back, output=out)


# ----------------------------------------------------------------------------------------------------------------
# Resize / Upsample


def _nearest_coeffs(ratio: float, mode: str) -> list[float]:
    if float(ratio).is_integer():
        return [0.0, 1.0]
    if mode == "round_prefer_floor":
        return [float(ratio <= 0.5), float(ratio > 0.5)]
    if mode == "round_prefer_ceil":
        return [float(ratio < 0.5), float(ratio >= 0.5)]
    if mode == "floor":
        return [1.0, 0.0]
    if mode == "ceil":
        return [0.0, 1.0]
    raise _unsupported(f"nearest_mode={mode!r} is not supported")


def _cubic_coeffs(ratio: float, a: float) -> list[float]:
    r = ratio
    return [((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
            ((a + 2) * r - (a + 3)) * r * r + 1,
            ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
            ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a]


def _cubic_coeffs_antialias(ratio: float, scale: float, a: float) -> np.ndarray:
    scale = min(scale, 1.0)

    def coeff(x: float) -> float:
        x = abs(x)
        if x <= 1:
            return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
        if x < 2:
            return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
        return 0.0

    start = int(np.floor(-2 / scale) + 1)
    values = np.asarray([coeff(scale * (i - ratio)) for i in range(start, 2 - start)])
    return values / values.sum()


def _linear_coeffs_antialias(ratio: float, scale: float) -> np.ndarray:
    scale = min(scale, 1.0)
    start = int(np.floor(-1 / scale) + 1)
    args = (np.arange(start, start + 2 - 2 * start) - ratio) * scale
    values = np.clip(1 - np.abs(args), 0, 1)
    return values / values.sum()


def _resize_matrix(in_size: int, out_size: int, scale: float, mode: str, ctm: str, *, roi=None,
                   cubic_a: float = -0.75, exclude_outside: bool = False, antialias: bool = False,
                   nearest_mode: str = "round_prefer_floor"):
    """The [out, in] matrix of ONNX Resize along one axis (as the ONNX reference computes it) and the mask of
    output positions that take the extrapolation value (tf_crop_and_resize), or None."""
    y = np.arange(out_size, dtype=np.float64)
    length = scale * in_size
    extrapolated = None
    if ctm == "align_corners":
        x = np.zeros(out_size) if length == 1 else y * (in_size - 1) / (length - 1)
    elif ctm == "asymmetric":
        x = y / scale
    elif ctm == "tf_crop_and_resize":
        start, end = roi
        if length == 1:
            x = np.full(out_size, (end - start) * (in_size - 1) / 2)
        else:
            x = y * (end - start) * (in_size - 1) / (length - 1)
        x = x + start * (in_size - 1)
        extrapolated = (x < 0) | (x > in_size - 1)
    elif ctm == "pytorch_half_pixel":
        x = np.full(out_size, -0.5) if length == 1 else (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / length)
        x = offset + (y + 0.5) / scale - 0.5
    else:
        raise _unsupported(f"coordinate_transformation_mode={ctm!r} is not supported")
    floor = np.floor(x)
    ratios = np.where(x == floor, 1.0, x - floor)
    rows = []
    for r in ratios:
        if mode == "nearest":
            rows.append(_nearest_coeffs(float(r), nearest_mode))
        elif mode == "linear":
            rows.append(_linear_coeffs_antialias(float(r), scale) if antialias else [1 - r, r])
        else:
            rows.append(_cubic_coeffs_antialias(float(r), scale, cubic_a) if antialias else _cubic_coeffs(float(r), cubic_a))
    coeffs = np.asarray(rows, np.float64)
    n = coeffs.shape[1]
    pad = int(np.ceil(n / 2))
    padded = x + pad
    p = np.floor(padded).astype(np.int64)
    frac = padded - p
    if n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        base = -((n - 1) // 2)
        offset = np.where(frac <= 0.5, base, base + 1)
    index = (p + offset)[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        coeffs = np.where((index < 0) | (index >= in_size), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    matrix = np.zeros((out_size, in_size), np.float64)
    np.add.at(matrix, (np.repeat(np.arange(out_size), n), np.clip(index, 0, in_size - 1).reshape(-1)),
              coeffs.reshape(-1))
    if extrapolated is not None:
        matrix[extrapolated] = 0.0
        if not extrapolated.any():
            extrapolated = None
    return matrix, extrapolated




def _emit_resize(ctx: NodeContext, x: str, out: str, out_shape: list[int], axes_plan: dict, mode: str,
                 extrapolation_value: float) -> None:
    """axes_plan: axis -> (matrix [out, in], extrapolation mask or None), only the axes that change."""
    value = ctx.value(x)
    dtype = value.dtype
    rank = len(out_shape)
    _set_shape(ctx, out, out_shape)
    if not axes_plan:
        _copy(ctx, x, out, out_shape)
        return
    masks = {a: m for a, (_, m) in axes_plan.items() if m is not None}
    if mode != "nearest" and dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{mode} resize of {dtype} is not supported (float types only)")
    current_shape = list(value.shape)
    steps = sorted(axes_plan)
    # linear on H/W of a 4-D tensor: one RESIZE_BILINEAR when its matrices are exactly ONNX's
    if mode == "linear" and rank == 4 and set(steps) <= {2, 3} and not masks:
        for code in (2, 1, 0):
            if all(np.allclose(axes_plan[a][0] if a in axes_plan else np.eye(current_shape[a]),
                               bilinear_matrix(current_shape[a], out_shape[a], code), rtol=0, atol=1e-6)
                   for a in (2, 3)):
                y = ctx.new_value(dtype, _nhwc_shape(2, out_shape), f"{out}.nhwc")
                ctx.emit(OP.OH_NN_OPS_RESIZE_BILINEAR, [ctx.transpose(x, NCHW_TO_NHWC)], [y],
                         {"OH_NN_RESIZE_BILINEAR_NEW_HEIGHT": out_shape[2], "OH_NN_RESIZE_BILINEAR_NEW_WIDTH": out_shape[3],
                          "OH_NN_RESIZE_BILINEAR_COORDINATE_TRANSFORM_MODE": code})
                ctx.transpose(y, NHWC_TO_NCHW, output=out)
                return
    current = x
    for position, axis in enumerate(steps):
        matrix, _ = axes_plan[axis]
        current_shape[axis] = matrix.shape[0]
        last = position == len(steps) - 1 and not masks
        target = out if last else ctx.new_value(dtype, tuple(current_shape), f"{out}.axis{axis}")
        if mode == "nearest":
            if not np.all((matrix == 0) | (matrix == 1)) or not np.all(matrix.sum(axis=1) == 1):
                raise ConversionIssue(INVALID_MODEL, "internal: nearest resize matrix is not a selection")
            indices = matrix.argmax(axis=1).astype(np.int32)
            ctx.emit(OP.OH_NN_OPS_GATHER, [current, ctx.constant(indices, f"{out}.indices"),
                                           ctx.constant(np.asarray([axis], np.int64))], [target])
        elif axis == rank - 1:
            ctx.emit(OP.OH_NN_OPS_MATMUL, [current, ctx.constant(np.ascontiguousarray(matrix.T.astype(dtype)))], [target])
        elif axis == rank - 2:
            ctx.emit(OP.OH_NN_OPS_MATMUL, [ctx.constant(matrix.astype(dtype)), current], [target])
        else:
            perm = list(range(rank))
            perm[axis], perm[-1] = perm[-1], perm[axis]
            moved = ctx.transpose(current, perm)
            moved_shape = [current_shape[p] for p in perm]
            product = ctx.new_value(dtype, moved_shape, f"{out}.axis{axis}.t")
            ctx.emit(OP.OH_NN_OPS_MATMUL, [moved, ctx.constant(np.ascontiguousarray(matrix.T.astype(dtype)))], [product])
            ctx.transpose(product, perm, output=target)
        current = target
    if masks:
        keep = np.ones([out_shape[a] if a in masks else 1 for a in range(rank)], bool)
        for a, m in masks.items():
            shape = [1] * rank
            shape[a] = out_shape[a]
            keep = keep & ~m.reshape(shape)
        kept = out if extrapolation_value == 0 else ctx.new_value(dtype, out_shape, f"{out}.kept")
        ctx.emit(OP.OH_NN_OPS_MUL, [current, ctx.constant(keep.astype(dtype))], [kept])
        if extrapolation_value != 0:
            fill = np.where(keep, 0, extrapolation_value).astype(dtype)
            ctx.emit(OP.OH_NN_OPS_ADD, [kept, ctx.constant(fill)], [out])


def _float_list(array) -> list[float]:
    return [float(v) for v in np.asarray(array, np.float64).reshape(-1)]


@converts("Resize")
def resize(ctx: NodeContext) -> None:
    """Resize (opset 10..19+): every attribute; scales/sizes (and roi for tf_crop_and_resize) must be constants."""
    x = ctx.input(0)
    shape = ctx.value(x).shape
    if shape is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {x!r} is unknown")
    rank = len(shape)
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic"):
        raise _unsupported(f"mode={mode!r} is not supported")
    if ctx.opset < 11:  # Resize-10: asymmetric; nearest floors when upsampling and ceils when downsampling (ORT)
        ctm, nearest_mode, cubic_a, exclude, extrapolation, antialias, axes, policy = \
            "asymmetric", None, -0.75, False, 0.0, False, None, "stretch"
        scales = ctx.constant_input(1, "scales").astype(np.float64)
        sizes = None
        roi = None
    else:
        ctm = ctx.attr("coordinate_transformation_mode", "half_pixel")
        nearest_mode = ctx.attr("nearest_mode", "round_prefer_floor")
        cubic_a = float(ctx.attr("cubic_coeff_a", -0.75))
        exclude = bool(int(ctx.attr("exclude_outside", 0)))
        extrapolation = float(ctx.attr("extrapolation_value", 0.0))
        antialias = bool(int(ctx.attr("antialias", 0)))
        axes = ctx.attr("axes")
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        scales = sizes = None
        if ctx.has_input(2) and ctx.value(ctx.input(2)).shape not in ((0,),):
            scales = ctx.constant_input(2, "scales").astype(np.float64)
            if scales.size == 0:
                scales = None
        if scales is None and ctx.has_input(3):
            sizes = ctx.constant_input(3, "sizes").astype(np.int64)
        if scales is None and sizes is None:
            raise ConversionIssue(INVALID_MODEL, "Resize needs scales or sizes")
        roi = None
        if ctm == "tf_crop_and_resize":
            roi = _float_list(ctx.constant_input(1, "roi")) if ctx.has_input(1) else None
        if mode == "nearest" and antialias:
            raise _unsupported("antialias=1 with mode=nearest is not supported")
    axes = list(range(rank)) if axes is None else [int(a) + rank if int(a) < 0 else int(a) for a in axes]
    count = len(axes)
    if scales is not None and scales.size != count or sizes is not None and sizes.size != count:
        raise ConversionIssue(INVALID_MODEL, f"scales/sizes need {count} values (one per axis {axes})")
    in_sizes = [shape[a] for a in axes]
    if any(d < 0 for d in in_sizes):
        raise ConversionIssue(DYNAMIC_SHAPE, f"the resized dims of {x!r} must be static, got {list(shape)}")
    if sizes is not None:
        out_sizes = [int(v) for v in sizes]
        axis_scales = [o / i for o, i in zip(out_sizes, in_sizes)]
        if policy != "stretch":
            pick = min if policy == "not_larger" else max if policy == "not_smaller" else None
            if pick is None:
                raise _unsupported(f"keep_aspect_ratio_policy={policy!r} is not supported")
            common = pick(axis_scales)
            axis_scales = [common] * count
            out_sizes = [int(common * i + 0.5) for i in in_sizes]
    else:
        axis_scales = [float(np.float32(s)) for s in scales]
        out_sizes = [int(s * i) for s, i in zip(axis_scales, in_sizes)]
    if any(s <= 0 for s in axis_scales) or any(o <= 0 for o in out_sizes):
        raise _unsupported(f"scales {axis_scales} give an empty output {out_sizes} (empty tensors are not supported)")
    if roi is not None:
        if len(roi) != 2 * count:
            raise ConversionIssue(INVALID_MODEL, f"roi {roi} needs {2 * count} values")
        roi_pairs = list(zip(roi[:count], roi[count:]))
    else:
        roi_pairs = [(0.0, 1.0)] * count
        if ctm == "tf_crop_and_resize":
            raise ConversionIssue(INVALID_MODEL, "coordinate_transformation_mode=tf_crop_and_resize needs roi")
    out_shape = list(shape)
    plan = {}
    for axis, size, out_size, scale, pair in zip(axes, in_sizes, out_sizes, axis_scales, roi_pairs):
        out_shape[axis] = out_size
        identity = math.isclose(scale, 1.0) and out_size == size and (
            ctm != "tf_crop_and_resize" or (math.isclose(pair[0], 0.0) and math.isclose(pair[1], 1.0)))
        if identity:
            continue
        axis_nearest = nearest_mode or ("floor" if scale >= 1 else "ceil")
        plan[axis] = _resize_matrix(size, out_size, scale, mode, ctm, roi=pair, cubic_a=cubic_a,
                                    exclude_outside=exclude, antialias=antialias, nearest_mode=axis_nearest)
    if any(d < 0 for d in out_shape):
        raise ConversionIssue(DYNAMIC_SHAPE, f"the output shape {out_shape} of the resize must be static")
    _emit_resize(ctx, x, ctx.output(0), out_shape, plan, mode, extrapolation)


@converts("Upsample")
def upsample(ctx: NodeContext) -> None:
    """Upsample (opset 7: scales attribute; 9: scales input): asymmetric coordinates, nearest truncates (ORT)."""
    x = ctx.input(0)
    shape = ctx.value(x).shape
    if shape is None or any(d < 0 for d in shape):
        raise ConversionIssue(DYNAMIC_SHAPE, f"Upsample needs a static input shape, got {shape}")
    mode = ctx.attr("mode", "nearest")
    if mode == "bilinear":
        mode = "linear"
    if mode not in ("nearest", "linear"):
        raise _unsupported(f"mode={mode!r} is not supported")
    if ctx.opset < 9:
        scales = ctx.attr("scales")
        if scales is None:
            raise ConversionIssue(INVALID_MODEL, "Upsample needs scales")
        scales = [float(np.float32(s)) for s in scales]
    else:
        scales = [float(np.float32(s)) for s in ctx.constant_input(1, "scales").reshape(-1)]
    if len(scales) != len(shape):
        raise ConversionIssue(INVALID_MODEL, f"scales {scales} need {len(shape)} values")
    out_shape = [int(s * d) for s, d in zip(scales, shape)]
    if any(o <= 0 for o in out_shape):
        raise _unsupported(f"scales {scales} give an empty output {out_shape}")
    plan = {}
    for axis, (size, out_size, scale) in enumerate(zip(shape, out_shape, scales)):
        if math.isclose(scale, 1.0) and out_size == size:
            continue
        plan[axis] = _resize_matrix(size, out_size, scale, mode, "asymmetric",
                                    nearest_mode="floor" if scale >= 1 else "ceil")
    _emit_resize(ctx, x, ctx.output(0), out_shape, plan, mode, 0.0)


# ----------------------------------------------------------------------------------------------------------------
# LSTM

_LSTM_DEFAULT_ACTIVATIONS = ["sigmoid", "tanh", "tanh"]


def _zeros_or_input(ctx: NodeContext, position: int, shape, dtype, hint: str) -> str:
    if ctx.has_input(position):
        return ctx.input(position)
    return ctx.constant(np.zeros(shape, dtype), f"{ctx.name}.{hint}")


def _time_reverse(ctx: NodeContext, name: str, steps: int) -> str:
    value = ctx.value(name)
    out = ctx.new_value(value.dtype, value.shape, f"{name}.reversed")
    ctx.emit(OP.OH_NN_OPS_GATHER, [name, ctx.constant(np.arange(steps - 1, -1, -1, dtype=np.int32)),
                                   ctx.constant(np.asarray([0], np.int64))], [out])
    return out


@converts("LSTM")
def lstm(ctx: NodeContext) -> None:
    """ONNX LSTM -> NNRt LSTM (one layer; gates iofc and bias [Wb | Rb] are the same in both).

    layout=1 is transposed to layout 0; direction=reverse runs forward over the time-reversed sequence.
    Rejected: clip, input_forget=1, non-default activations, peepholes (unless constant zeros) and
    sequence_lens (unless a constant equal to the sequence length everywhere)."""
    if ctx.attr("clip") is not None:
        raise _unsupported(f"clip={ctx.attr('clip')} is not supported (NNRt LSTM has no cell clipping)")
    if int(ctx.attr("input_forget", 0)):
        raise _unsupported("input_forget=1 (coupled input and forget gates) is not supported")
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise _unsupported(f"direction={direction!r} is not supported")
    dirs = 2 if direction == "bidirectional" else 1
    activations = ctx.attr("activations")
    if activations is not None and [a.lower() for a in activations] != _LSTM_DEFAULT_ACTIVATIONS * dirs:
        raise _unsupported(f"activations={list(activations)} are not supported (only Sigmoid, Tanh, Tanh)")
    for name in ("activation_alpha", "activation_beta"):
        if ctx.attr(name):
            raise _unsupported(f"{name}={list(ctx.attr(name))} is not supported (default activations take none)")
    layout = int(ctx.attr("layout", 0))
    if layout not in (0, 1):
        raise _unsupported(f"layout={layout} is not supported")
    x = ctx.input(0)
    x_shape = ctx.static_shape(x, "the LSTM input")
    if len(x_shape) != 3:
        raise ConversionIssue(INVALID_MODEL, f"the LSTM input must be 3-D, got {list(x_shape)}")
    steps, batch, features = (x_shape[1], x_shape[0], x_shape[2]) if layout else x_shape
    w_shape = ctx.static_shape(ctx.input(1), "W")
    hidden = w_shape[1] // 4
    hidden_attr = ctx.attr("hidden_size")
    if hidden_attr is not None and int(hidden_attr) != hidden:
        raise ConversionIssue(INVALID_MODEL, f"hidden_size={hidden_attr} disagrees with W {list(w_shape)}")
    if w_shape[0] != dirs:
        raise ConversionIssue(INVALID_MODEL, f"W {list(w_shape)} does not have {dirs} direction(s)")
    dtype = ctx.value(x).dtype
    if ctx.has_input(4):
        lens = ctx.constant_input(4, "sequence_lens")
        if not np.all(lens == steps):
            raise _unsupported(f"sequence_lens {lens.tolist()} shorter than the sequence ({steps}) are not supported")
    if ctx.has_input(7):
        peep = ctx.value(ctx.input(7))
        if peep.data is None or np.any(peep.data != 0):
            raise _unsupported("peephole weights (input P) are not supported")
    if layout:
        x = ctx.transpose(x, (1, 0, 2))
    if direction == "reverse":
        x = _time_reverse(ctx, x, steps)
    w, r = ctx.input(1), ctx.input(2)
    b = _zeros_or_input(ctx, 3, (dirs, 8 * hidden), dtype, "B")
    state_shape = (dirs, batch, hidden)
    h0 = _zeros_or_input(ctx, 5, state_shape, dtype, "initial_h")
    c0 = _zeros_or_input(ctx, 6, state_shape, dtype, "initial_c")
    if layout:
        h0 = ctx.transpose(h0, (1, 0, 2)) if ctx.has_input(5) else h0
        c0 = ctx.transpose(c0, (1, 0, 2)) if ctx.has_input(6) else c0
    outputs = list(ctx.node.output) + [""] * (3 - len(ctx.node.output))
    y_seq = ctx.new_value(dtype, (steps, batch, dirs * hidden), f"{ctx.name}.y")
    direct = [bool(name) and not layout for name in outputs[1:3]]  # states written straight to the ONNX outputs
    hy = outputs[1] if direct[0] else ctx.new_value(dtype, state_shape, f"{ctx.name}.hy")
    cy = outputs[2] if direct[1] else ctx.new_value(dtype, state_shape, f"{ctx.name}.cy")
    for name, is_direct in zip((hy, cy), direct):
        if is_direct:
            _set_shape(ctx, name, state_shape)
    params = {"OH_NN_LSTM_BIDIRECTIONAL": dirs == 2, "OH_NN_LSTM_HAS_BIAS": True,
              "OH_NN_LSTM_INPUT_SIZE": features, "OH_NN_LSTM_HIDDEN_SIZE": hidden,
              "OH_NN_LSTM_NUM_LAYERS": 1, "OH_NN_LSTM_NUM_DIRECTIONS": dirs}
    ctx.emit(OP.OH_NN_OPS_LSTM, [x, w, r, b, h0, c0], [y_seq, hy, cy], params)
    if outputs[0]:
        y = y_seq if direction != "reverse" else _time_reverse(ctx, y_seq, steps)
        y4 = _reshape(ctx, y, [steps, batch, dirs, hidden])
        if layout:  # [batch, seq, dirs, hidden]
            ctx.transpose(y4, (1, 0, 2, 3), output=outputs[0])
        elif dirs == 1:
            _reshape(ctx, y, [steps, 1, batch, hidden], output=outputs[0])
        else:
            ctx.transpose(y4, (0, 2, 1, 3), output=outputs[0])
        _set_shape(ctx, outputs[0], [batch, steps, dirs, hidden] if layout else [steps, dirs, batch, hidden])
    for state, name in ((hy, outputs[1]), (cy, outputs[2])):
        if name and layout:
            _set_shape(ctx, name, [batch, dirs, hidden])
            ctx.transpose(state, (1, 0, 2), output=name)


# ----------------------------------------------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear

_QUANT_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8))
_RAW_INT_DTYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32))


class _QuantArgs:
    """Scale and zero point of a (De)QuantizeLinear node: constants as arrays, else tensor names."""

    def __init__(self, ctx: NodeContext, what: str):
        self.ctx = ctx
        x = ctx.input(0)
        self.rank = ctx.rank(x)
        self.x_shape = ctx.value(x).shape
        self.scale_name = ctx.input(1)
        scale_value = ctx.value(self.scale_name)
        self.scale = scale_value.data
        self.scale_dtype = scale_value.dtype
        scale_shape = scale_value.shape
        if scale_shape is None:
            raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of the {what} scale is unknown")
        self.zero_name = ctx.input(2) if ctx.has_input(2) else None
        zero_value = ctx.value(self.zero_name) if self.zero_name else None
        self.zero = None if zero_value is None else zero_value.data
        self.zero_dtype = None if zero_value is None else zero_value.dtype
        self.block = int(ctx.attr("block_size", 0))
        axis = int(ctx.attr("axis", 1))
        if zero_value is not None and zero_value.shape is not None and tuple(zero_value.shape) != tuple(scale_shape):
            raise ConversionIssue(INVALID_MODEL, f"zero point shape {list(zero_value.shape)} differs from the "
                                                 f"scale's {list(scale_shape)}")
        elements = int(np.prod(scale_shape)) if all(d >= 0 for d in scale_shape) else -1
        self.per_tensor = len(scale_shape) == 0 or (elements == 1 and not self.block)
        self.axis = None
        if not self.per_tensor:
            if not -self.rank <= axis < self.rank:
                raise ConversionIssue(INVALID_MODEL, f"axis={axis} is out of range for rank {self.rank}")
            self.axis = axis % self.rank
            dim = self.x_shape[self.axis]
            if self.block:
                if len(scale_shape) != self.rank:
                    raise ConversionIssue(INVALID_MODEL, f"blocked scale {list(scale_shape)} needs rank {self.rank}")
            elif len(scale_shape) != 1:
                raise _unsupported(f"a {len(scale_shape)}-D scale {list(scale_shape)} needs block_size")
            elif dim >= 0 and elements >= 0 and dim != elements:
                raise ConversionIssue(INVALID_MODEL, f"{elements} scales for axis {self.axis} of size {dim}")

    @property
    def constant(self) -> bool:
        return self.scale is not None and (self.zero_name is None or self.zero is not None)

    def expand(self, array: np.ndarray) -> np.ndarray:
        """A scale/zero-point constant shaped to broadcast against x (blocks repeated along the axis)."""
        if self.per_tensor:
            return array.reshape(())
        if self.block:
            dim = self.x_shape[self.axis]
            if dim < 0:
                raise ConversionIssue(DYNAMIC_SHAPE, "blocked quantization needs a static blocked axis")
            return np.repeat(array, self.block, axis=self.axis).take(np.arange(dim), axis=self.axis)
        shape = [1] * self.rank
        shape[self.axis] = array.size
        return array.reshape(shape)

    def tensor(self, name: str, array: np.ndarray | None, dtype, hint: str) -> str:
        """The scale / zero point as a tensor of ``dtype`` that broadcasts against x."""
        ctx = self.ctx
        if array is not None:
            return ctx.constant(self.expand(array).astype(dtype), f"{ctx.name}.{hint}")
        if self.block:
            raise ConversionIssue(NEEDS_CONSTANT, f"a blocked {hint} must be a constant", tensor=name)
        value = ctx.value(name)
        if value.dtype != np.dtype(dtype):
            cast = ctx.new_value(dtype, value.shape, f"{name}.{np.dtype(dtype).name}")
            ctx.emit(OP.OH_NN_OPS_CAST, [name, ctx.constant(np.asarray(int(from_numpy(np.dtype(dtype))), np.int32))],
                     [cast])
            name = cast
        if not self.per_tensor:
            shape = [1] * self.rank
            shape[self.axis] = self.x_shape[self.axis]
            name = _reshape(ctx, name, shape)
        return name

    def quant_param(self) -> QuantParam:
        scales = [float(s) for s in self.scale.reshape(-1)]
        zeros = [0] * len(scales) if self.zero is None else [int(z) for z in self.zero.reshape(-1)]
        return QuantParam(scales, zeros, [8] * len(scales), self.axis)


def _onnx_elem_dtype(code: int) -> np.dtype:
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(int(code)))
    except (KeyError, TypeError, ValueError):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"ONNX element type {code} has no NNRt equivalent") from None


def _op(ctx: NodeContext, op: OP, inputs, dtype, shape, hint: str, out: str | None = None, params=None) -> str:
    target = out or ctx.new_value(dtype, shape, f"{ctx.name}.{hint}")
    ctx.emit(op, inputs, [target], params)
    return target


@converts("QuantizeLinear")
def quantize_linear(ctx: NodeContext) -> None:
    """y = saturate(round_half_even(x / scale) + zero_point).

    int8/uint8 with constant per-tensor/per-axis parameters: QUANT_DTYPE_CAST onto an output carrying them (a
    constant x is quantized here). Otherwise (16-bit outputs, blocked or computed parameters) the raw integers:
    DIV, ROUND, ADD zero point, CLIP, CAST."""
    ctx.attr("saturate")  # only affects float8 outputs, which are rejected
    precision = int(ctx.attr("precision", 0))
    if precision:
        raise _unsupported(f"precision={precision} is not supported (the computation precision follows the scale)")
    args = _QuantArgs(ctx, "y")
    out_code = int(ctx.attr("output_dtype", 0))
    if args.zero_dtype is not None:
        target = args.zero_dtype
        if out_code and _onnx_elem_dtype(out_code) != target:
            raise ConversionIssue(INVALID_MODEL, f"output_dtype {out_code} disagrees with the zero point {target}")
    else:
        target = _onnx_elem_dtype(out_code) if out_code else np.dtype(np.uint8)
    if target not in _RAW_INT_DTYPES or target == np.int32:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"quantizing to {target} is not supported (int8/uint8, or "
                                                 f"int16/uint16 as plain integers)")
    x = ctx.input(0)
    x_value = ctx.value(x)
    if x_value.dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"QuantizeLinear of {x_value.dtype} is not supported")
    out = ctx.output(0)
    info = np.iinfo(target)
    zero = args.zero if args.zero is not None else np.zeros_like(args.scale if args.scale is not None else 0, target)
    if args.constant and x_value.data is not None:
        q = np.rint(x_value.data.astype(np.float64) / args.expand(args.scale.astype(np.float64))) \
            + args.expand(np.asarray(zero, np.float64))
        data = np.clip(q, info.min, info.max).astype(target)
        quant = args.quant_param() if target in _QUANT_DTYPES and not args.block else None
        ctx.graph.add_value(Value(out, target, tuple(data.shape), data, quant))
        return
    out_value = ctx.value(out)
    out_value.dtype = target
    if out_value.shape is None or len(out_value.shape) != args.rank:
        out_value.shape = x_value.shape
    # QUANT_DTYPE_CAST rounds r/s + z as a whole; ONNX rounds r/s (half to even) before adding z. The two agree
    # for every input only when z is even (adding an even integer keeps the parity of the tie-break).
    even_zero = args.zero is None or not np.any(np.asarray(args.zero, np.int64) % 2)
    if args.constant and target in _QUANT_DTYPES and not args.block and even_zero:
        out_value.quant = args.quant_param()
        params = {"OH_NN_QUANT_DTYPE_CAST_SRC_T": int(from_numpy(x_value.dtype)),
                  "OH_NN_QUANT_DTYPE_CAST_DST_T": int(from_numpy(target))}
        if args.axis is not None:
            params["OH_NN_QUANT_DTYPE_CAST_AXIS"] = args.axis
        ctx.emit(OP.OH_NN_OPS_QUANT_DTYPE_CAST, [x], [out], params)
        return
    dtype, shape = x_value.dtype, x_value.shape
    scaled = _op(ctx, OP.OH_NN_OPS_DIV, [x, args.tensor(args.scale_name, args.scale, dtype, "scale")], dtype, shape,
                 "scaled")
    rounded = _op(ctx, OP.OH_NN_OPS_ROUND, [scaled], dtype, shape, "rounded")
    if args.zero_name is not None:
        rounded = _op(ctx, OP.OH_NN_OPS_ADD, [rounded, args.tensor(args.zero_name, args.zero, dtype, "zero_point")],
                      dtype, shape, "shifted")
    clipped = _op(ctx, OP.OH_NN_OPS_CLIP, [rounded], dtype, shape, "clipped",
                  params={"OH_NN_CLIP_MIN": float(info.min), "OH_NN_CLIP_MAX": float(info.max)})
    ctx.emit(OP.OH_NN_OPS_CAST, [clipped, ctx.constant(np.asarray(int(from_numpy(target)), np.int32))], [out])


@converts("DequantizeLinear")
def dequantize_linear(ctx: NodeContext) -> None:
    """y = (x - zero_point) * scale: folded for constants; QUANT_DTYPE_CAST when x carries these quant params;
    otherwise CAST, SUB zero point, MUL scale on the raw integers (exact)."""
    args = _QuantArgs(ctx, "x")
    x = ctx.input(0)
    x_value = ctx.value(x)
    if x_value.dtype not in _RAW_INT_DTYPES:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"DequantizeLinear of {x_value.dtype} is not supported")
    out_code = int(ctx.attr("output_dtype", 0))
    out_dtype = _onnx_elem_dtype(out_code) if out_code else args.scale_dtype
    out = ctx.output(0)
    if args.constant and x_value.data is not None:
        zero = 0.0 if args.zero is None else args.expand(args.zero.astype(np.float64))
        data = ((x_value.data.astype(np.float64) - zero) * args.expand(args.scale.astype(np.float64))).astype(out_dtype)
        ctx.graph.add_value(Value(out, out_dtype, tuple(data.shape), data))
        return
    out_value = ctx.value(out)
    out_value.dtype = out_dtype
    if out_value.shape is None or len(out_value.shape) != args.rank:
        out_value.shape = x_value.shape
    if x_value.quant is not None:
        same = False
        if args.constant and not args.block:
            expected = args.quant_param()
            same = (np.allclose(x_value.quant.scales, expected.scales, rtol=1e-7, atol=0)
                    and list(x_value.quant.zero_points) == expected.zero_points
                    and (args.axis is None or x_value.quant.axis in (None, args.axis)))
        if not same:
            raise _unsupported(f"{x!r} is quantized with other parameters than this DequantizeLinear's")
        params = {"OH_NN_QUANT_DTYPE_CAST_SRC_T": int(from_numpy(x_value.dtype)),
                  "OH_NN_QUANT_DTYPE_CAST_DST_T": int(from_numpy(out_dtype))}
        if args.axis is not None:
            params["OH_NN_QUANT_DTYPE_CAST_AXIS"] = args.axis
        ctx.emit(OP.OH_NN_OPS_QUANT_DTYPE_CAST, [x], [out], params)
        return
    shape = x_value.shape
    real = _op(ctx, OP.OH_NN_OPS_CAST, [x, ctx.constant(np.asarray(int(from_numpy(out_dtype)), np.int32))],
               out_dtype, shape, "real")
    if args.zero_name is not None and (args.zero is None or np.any(args.zero != 0)):
        real = _op(ctx, OP.OH_NN_OPS_SUB, [real, args.tensor(args.zero_name, args.zero, out_dtype, "zero_point")],
                   out_dtype, shape, "shifted")
    ctx.emit(OP.OH_NN_OPS_MUL, [real, args.tensor(args.scale_name, args.scale, out_dtype, "scale")], [out])
