"""Converters of the conv family: Conv and ConvTranspose (1-D and 2-D) onto CONV2D, DEPTHWISE_CONV2D_NATIVE and
CONV2D_TRANSPOSE, NHWC between transposes with the weights permuted offline (layout and pads: see ``_common``).
"""
from __future__ import annotations

import numpy as np

from ... import geometry
from ...enums import OH_NN_OperationType as OP
from ...ir.issues import DYNAMIC_SHAPE, INVALID_MODEL, ConversionIssue
from ...ir.quantized import derive
from ..context import NodeContext
from . import converts
from ._common import (
    _into_nhwc,
    _ints_attr,
    _known,
    _nhwc_shape,
    _onnx_pads,
    _out_of_nhwc,
    _reshape,
    _same_lower_pad,
    _set_shape,
    _spatial_rank,
    _unsupported,
)


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
    if pads[0] == "lower":  # SAME_LOWER over dynamic dims: zeros padded at run time, then VALID
        x = _same_lower_pad(ctx, x, kernel, strides, dilations, 0.0)
        x_shape = ctx.value(x).shape
        pads = [(0, 0)] * nd
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
        params[f"{prefix}_PAD"] = geometry.axes_to_pad_list(pads)
    if not depthwise and group != 1:
        params["OH_NN_CONV2D_GROUP"] = group
    # weight [O, C/g, (kH,) kW] -> [O, kH, kW, C/g]
    if w_value.data is not None:  # (a dequantized weight keeps its integers: ir.quantized.derive)
        w_nhwc = derive(ctx.graph, w_name, lambda a: (a if nd == 2 else a[:, :, None, :]).transpose(0, 2, 3, 1),
                        f"{w_name}.ohwi")
    else:
        w4 = w_name if nd == 2 else _reshape(ctx, w_name, [out_c, in_per_group, 1, kernel[-1]])
        w_nhwc = ctx.transpose(w4, (0, 2, 3, 1))
    if ctx.has_input(2):
        b = ctx.input(2)
    else:
        b = ctx.constant(np.zeros(out_c, w_value.dtype), f"{ctx.name}.bias")
    out = ctx.output(0)
    if _known(x_shape[2:]) and pads[0] != "mode":
        spatial = [geometry.window_output_size(s, geometry.effective_extent(k, d), st, *p) for s, k, st, d, p in
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
    full = [geometry.transposed_full_size(s, geometry.effective_extent(k, d), st)
            for s, st, k, d in zip(in_sizes, strides, kernel, dilations)]
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if output_shape is not None and not _known(in_sizes):
            raise ConversionIssue(DYNAMIC_SHAPE, f"output_shape needs static spatial dims (the padding depends on "
                                                 f"them), got {in_sizes}")
        wanted = [int(v) for v in output_shape][-nd:] if output_shape is not None else None
        pads = []
        for i in range(nd):
            extent = geometry.effective_extent(kernel[i], dilations[i])
            # SAME: in * stride, i.e. a total padding of extent - stride (+ output padding) whatever the size
            total = full[i] + out_pad[i] - wanted[i] if wanted is not None else extent - strides[i] + out_pad[i]
            if total < 0 and output_shape is None:
                # SAME with a kernel smaller than the stride asks for negative padding; pads are >= 0, so none:
                # the full (in - 1) * stride + kernel, as onnxruntime and onnx shape inference (rule
                # convtranspose-same-small-kernel; onnx.reference pads the output to in * stride)
                ctx.deviation("convtranspose-same-small-kernel",
                              f"axis {i}: stride {strides[i]}, kernel extent {extent}: (in - 1) * {strides[i]} + "
                              f"{extent + out_pad[i]} (onnx.reference: in * {strides[i]})")
                pads.append((0, 0))
            elif total < 0:  # an output_shape bigger than the full result: more output padding (bias-only cells)
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
        pads = geometry.onnx_pads_to_axes(raw)
    else:
        raise _unsupported(f"auto_pad={auto_pad!r} is not supported")
    for i in range(nd):
        if out_pad[i] >= strides[i]:
            raise _unsupported(f"output padding {out_pad[i]} (axis {i}) must be smaller than the stride {strides[i]} "
                               f"for NNRt CONV2D_TRANSPOSE")
    out_c = out_per_group * group
    out = ctx.output(0)
    same = auto_pad in ("SAME_UPPER", "SAME_LOWER") and output_shape is None
    if _known(in_sizes) or same:  # (SAME's padding does not depend on the size: its known axes are known)
        spatial = [geometry.transposed_axis(geometry.PAD_MODE_EXPLICIT, size, geometry.effective_extent(k, d), st, p0, p1,
                                            op)[0] if size >= 0 else -1
                   for size, k, d, st, (p0, p1), op in zip(in_sizes, kernel, dilations, strides, pads, out_pad)]
        if any(s == 0 or s < -1 for s in spatial):
            raise ConversionIssue(INVALID_MODEL, f"the pads leave an empty output {spatial}")
        if same:
            # SAME absorbs the output padding into the padding (in * stride, as the specification and onnxruntime);
            # onnx shape inference adds it once more: the rule's size wins, and its readers' inferred shapes
            ctx.override_shape(out, [x_shape[0], out_c, *spatial], any(
                size >= 0 and a != size * st + op for a, size, st, op in zip(spatial, in_sizes, strides, out_pad)))
        else:
            _set_shape(ctx, out, [x_shape[0], out_c, *spatial])
    if nd == 1:
        strides, dilations, out_pad, pads = [1] + strides, [1] + dilations, [0] + out_pad, [(0, 0)] + pads
    params = {"OH_NN_CONV2D_TRANSPOSE_STRIDES": strides, "OH_NN_CONV2D_TRANSPOSE_DILATION": dilations,
              "OH_NN_CONV2D_TRANSPOSE_PAD": geometry.axes_to_pad_list(pads), "OH_NN_CONV2D_TRANSPOSE_OUTPUT_PADDINGS": out_pad,
              "OH_NN_CONV2D_TRANSPOSE_GROUP": group}
    cg = in_c // group
    kh, kw = (1, kernel[0]) if nd == 1 else kernel
    if w_value.data is not None:
        w_nhwc = derive(ctx.graph, w_name, lambda a: a.reshape(group, cg, out_per_group, kh, kw).transpose(
            0, 2, 3, 4, 1).reshape(out_c, kh, kw, cg), f"{w_name}.ohwi")
    else:
        w5 = _reshape(ctx, w_name, [group, cg, out_per_group, kh, kw])
        w_nhwc = _reshape(ctx, ctx.transpose(w5, (0, 2, 3, 4, 1)), [out_c, kh, kw, cg])
    b = ctx.input(2) if ctx.has_input(2) else ctx.constant(np.zeros(out_c, w_value.dtype), f"{ctx.name}.bias")
    x_nhwc = _into_nhwc(ctx, x, nd)
    y = ctx.new_value(ctx.value(out).dtype, _nhwc_shape(nd, ctx.value(out).shape), f"{out}.nhwc")
    ctx.emit(OP.OH_NN_OPS_CONV2D_TRANSPOSE, [x_nhwc, w_nhwc, b], [y], params)
    _out_of_nhwc(ctx, y, nd, out)
