"""Export of the convolution NNRt ops: CONV2D, DEPTHWISE_CONV2D_NATIVE and CONV2D_TRANSPOSE (the ONNX NCHW Conv /
ConvTranspose between transposes, or an NNRt-domain function on the NHWC tensors).

Decisions (the kernels' semantics are in the kernel module of the same family):

* Transposed convolution: explicit pads (SAME crops ``max(F - in*s, 0) // 2`` at the start, TF); an output
  larger than the full result is more ``output_padding`` (bias-only cells), or, when that reaches the stride,
  ConvTranspose + zero Pad + bias in a function.
* float64 (onnxruntime has no double Conv / ConvTranspose): convolutions as one strided slice + MatMul per kernel
  tap (the transposed one on the stride-dilated input with flipped taps), in float64.
"""
from __future__ import annotations

import numpy as np

from ... import geometry
from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter
from ._common import (
    _ORT_FLOAT,
    _TO_NHWC,
    _i64,
    _in_dtype,
    _input_dtype,
    _ints,
    _layout_ok,
    _nhwc,
    _no_quant,
    _pad_list,
    _pair,
    _shape,
    _to_nchw,
    _wrapped,
)


def _conv_pads(args, h: int, w: int, kh: int, kw: int) -> list[int]:
    """ONNX pads [top, left, bottom, right] of a (dilated) convolution, exactly as the kernel pads."""
    strides, dilation = _pair(args["strides"], "strides"), _pair(args["dilation"], "dilation")
    mode = int(args.get("pad_mode", geometry.PAD_MODE_EXPLICIT))
    explicit = geometry.pad_list_to_axes(_pad_list(args))
    axes = [geometry.window_axis(mode, size, geometry.effective_extent(k, d), s, *pads)[1:]
            for size, k, s, d, pads in zip((h, w), (kh, kw), strides, dilation, explicit)]
    return geometry.axes_to_onnx_pads(axes)


def _conv_taps(f: FunctionBody, x: str, weight: str, x_shape, w_shape, strides, dilation, tblr, group: int,
               flip: bool = False) -> str:
    """Grouped NHWC convolution (no bias) as one strided slice + batched MatMul per kernel tap, accumulated in the
    data dtype (for float64, which onnxruntime's Conv lacks). ``flip``: the kernel taps reversed (for the
    transposed convolution as a convolution of the stride-dilated input)."""
    n, h, w, c = x_shape
    o, kh, kw, cg = w_shape
    og = o // group
    t, b, l, r = tblr
    oh = geometry.window_output_size(h, geometry.effective_extent(kh, dilation[0]), strides[0], t, b)
    ow = geometry.window_output_size(w, geometry.effective_extent(kw, dilation[1]), strides[1], l, r)
    if any(tblr):
        x = f.one("Pad", [x, _i64(f, [0, t, l, 0, 0, b, r, 0])])
    # weight [O, kH, kW, Cg] -> [kH, kW, G, Cg, Og]
    taps = f.one("Transpose", [f.one("Reshape", [weight, _i64(f, [group, og, kh, kw, cg])])], perm=[2, 3, 0, 4, 1])
    acc = None
    for i in range(kh):
        for j in range(kw):
            window = f.one("Slice", [x, _i64(f, [i * dilation[0], j * dilation[1]]),
                                     _i64(f, [i * dilation[0] + (oh - 1) * strides[0] + 1,
                                              j * dilation[1] + (ow - 1) * strides[1] + 1]),
                                     _i64(f, [1, 2]), _i64(f, strides)])  # [N, OH, OW, C]
            window = f.one("Reshape", [window, _i64(f, [n, oh, ow, group, 1, cg])])
            ti, tj = (kh - 1 - i, kw - 1 - j) if flip else (i, j)
            tap = f.one("Gather", [f.one("Gather", [taps, _i64(f, ti)], axis=0), _i64(f, tj)], axis=0)  # [G, Cg, Og]
            term = f.one("MatMul", [window, tap])  # [N, OH, OW, G, 1, Og]
            acc = term if acc is None else f.one("Add", [acc, term])
    return f.one("Reshape", [acc, _i64(f, [n, oh, ow, o])])


def _quantized(node, graph) -> bool:
    """A quantized convolution: quantized input (per tensor), constant quantized weight (per tensor or per output
    channel), constant INT32 bias (scale input scale x weight scale, no params of its own)."""
    x, weight, bias = (graph.values[n] for n in node.inputs[:3])
    return (x.quant is not None and x.quant.count == 1 and weight.quant is not None and weight.data is not None
            and (weight.quant.count == 1 or (weight.quant.axis or 0) == 0) and bias.dtype == np.int32
            and bias.quant is None and bias.data is not None)


def _reads_quantized(ctx: ExportContext) -> bool:
    """:func:`_quantized` while exporting (the exporter has dequantized the input already)."""
    from .linear import _source_quant

    weight, bias = ctx.value(ctx.input(1)), ctx.value(ctx.input(2))
    source = _source_quant(ctx, 0)
    return (weight.quant is not None and weight.data is not None and source is not None and source.count == 1
            and (weight.quant.count == 1 or (weight.quant.axis or 0) == 0) and bias.dtype == np.int32
            and bias.quant is None and bias.data is not None)


def _dequantized_operands(ctx: ExportContext, transform=None, axis_map=None) -> tuple[str, str]:
    """The weight (its integers, ``transform``-ed, and a DequantizeLinear) and the INT32 bias (a DequantizeLinear
    with scale input scale x weight scale, marked "bias": re-imported as the INT32 bias again) of a quantized
    convolution."""
    from ...tensor import QuantParam
    from .linear import _source_quant

    weight = ctx.weight(1, transform, axis_map)
    w_quant, x_quant = ctx.value(ctx.input(1)).quant, _source_quant(ctx, 0)
    scales = [x_quant.scales[0] * s for s in w_quant.scales]
    bias = ctx.input(2)
    channels = ctx.value(bias).data.size
    if len(scales) == 1:
        scales = scales * channels
    quant = QuantParam(scales, [0] * channels, [32] * channels, 0)
    name = ctx.constant(np.ascontiguousarray(ctx.value(bias).data.reshape(-1)), f"{bias}.int32")
    ctx.builder.quant_dtype[name] = np.dtype(np.int32)
    target = ctx.fresh(f"{bias}.dq")
    ctx.builder._quant_node("DequantizeLinear", name, target, quant, 0, "bias")
    return weight, target


def _conv_standard(node, graph, group_of) -> bool:
    weight = graph.values[node.inputs[1]]
    quantized = _quantized(node, graph)
    if not _layout_ok(node, graph, allow_quant=quantized) or weight.data is None or weight.shape is None \
            or len(weight.shape) != 4:
        return False
    dtype = np.dtype(np.float32) if quantized else _in_dtype(node, graph)
    if dtype not in _ORT_FLOAT or (not quantized and _in_dtype(node, graph, 2) != dtype):
        return False
    group = group_of(node, graph)
    # Conv with one input channel per group (group > 1) imports as DEPTHWISE_CONV2D_NATIVE, else as CONV2D
    return (group > 1 and weight.shape[3] == 1) == (node.op.name == "OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE")


def _conv2d_group(node, graph) -> int:
    return int(node.kernel_arguments().get("group", 1))


def _depthwise_group(node, graph) -> int:
    return int(graph.values[node.inputs[0]].shape[3])


def _conv(ctx: ExportContext, group: int) -> None:
    """Conv with weight [O, kH, kW, C/g] -> [O, C/g, kH, kW]. A quantized convolution reads its dequantized input,
    weight and bias (DequantizeLinear -> Conv -> QuantizeLinear: QDQ ONNX, which the importer folds back)."""
    quantized = _reads_quantized(ctx)
    if not quantized:
        _no_quant(ctx)
    if not quantized and _input_dtype(ctx, 2) != _input_dtype(ctx, 0):
        raise ExportIssue(f"{ctx.node.op.name}: a {_input_dtype(ctx, 2)} bias with {_input_dtype(ctx, 0)} data")
    n, h, w, c = _nhwc(ctx, ctx.input(0), "the input")
    _, kh, kw, _ = _shape(ctx, ctx.input(1), "the weight")
    attrs = {"strides": _pair(ctx.args["strides"], "strides"), "dilations": _pair(ctx.args["dilation"], "dilation"),
             "kernel_shape": [kh, kw], "pads": _conv_pads(ctx.args, h, w, kh, kw), "group": group}
    if _wrapped(ctx):
        if quantized:
            w_oihw, bias = _dequantized_operands(ctx, lambda a: a.transpose(0, 3, 1, 2), lambda axis: (0, 2, 3, 1)[axis])
        else:
            weight = ctx.value(ctx.input(1)).data
            w_oihw = ctx.constant(np.ascontiguousarray(weight.transpose(0, 3, 1, 2)), f"{ctx.input(1)}.oihw")
            bias = ctx.input(2)
        ctx.add("Conv", [ctx.input(0), w_oihw, bias], [ctx.result(0)], main=True, **attrs)
        return
    if quantized:
        ctx.node.inputs[1:3] = _dequantized_operands(ctx)

    def build(f: FunctionBody) -> None:
        x, weight, bias = f.inputs
        if _input_dtype(ctx) not in _ORT_FLOAT:
            t, l, b, r = attrs["pads"]
            y = _conv_taps(f, x, weight, (n, h, w, c), _shape(ctx, ctx.input(1), "the weight"), attrs["strides"],
                           attrs["dilations"], (t, b, l, r), group)
            f.one("Add", [y, bias], "y0")
            return
        y = f.one("Conv", [_to_nchw(f, x), f.one("Transpose", [weight], perm=[0, 3, 1, 2]), bias], **attrs)
        f.one("Transpose", [y], "y0", perm=_TO_NHWC)

    emit_custom(ctx, build)


@exporter("OH_NN_OPS_CONV2D", nchw=lambda node, graph: _conv_standard(node, graph, _conv2d_group))
def conv2d(ctx: ExportContext) -> None:
    _conv(ctx, int(ctx.args.get("group", 1)))


@exporter("OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE", nchw=lambda node, graph: _conv_standard(node, graph, _depthwise_group))
def depthwise(ctx: ExportContext) -> None:
    _conv(ctx, _nhwc(ctx, ctx.input(0), "the input")[3])


def _transpose_geometry(args, h: int, w: int, kh: int, kw: int):
    """ONNX pads [top, left, bottom, right] and output_padding of the kernel's transposed convolution."""
    strides, dilation = _pair(args["strides"], "strides"), _pair(args["dilation"], "dilation")
    out_pad = _pair(_ints(args.get("output_paddings", [])) or [0], "output paddings")
    mode = int(args.get("pad_mode", -1))
    tblr = _pad_list(args)
    begin, end, extra = [], [], []
    for size, k, s, d, op, (p0, p1) in zip((h, w), (kh, kw), strides, dilation, out_pad, (tblr[0:2], tblr[2:4])):
        full = geometry.transposed_full_size(size, geometry.effective_extent(k, d), s)
        if mode == geometry.PAD_MODE_SAME:
            out, p0 = geometry.transposed_axis(mode, size, geometry.effective_extent(k, d), s)
            p1 = full - p0 - out
        elif mode in (1, 2):
            p0 = p1 = 0
        begin.append(p0)
        end.append(max(p1, 0))
        extra.append(op + max(-p1, 0))  # an output larger than the full result: bias-only rows/cols at the end
    return begin + end, extra, strides, dilation


def _conv_transpose_standard(node, graph) -> bool:
    weight = graph.values[node.inputs[1]]
    quantized = _quantized(node, graph)
    if not _layout_ok(node, graph, allow_quant=quantized) or weight.data is None or len(weight.shape) != 4:
        return False
    if quantized and weight.quant.count > 1 and int(node.kernel_arguments().get("group", 1)) > 1:
        return False  # per output channel across groups: no one axis of the ONNX [C, O/g, kH, kW] weight
    dtype = np.dtype(np.float32) if quantized else _in_dtype(node, graph)
    if dtype not in _ORT_FLOAT or (not quantized and _in_dtype(node, graph, 2) != dtype):
        return False
    _, h, w, _ = graph.values[node.inputs[0]].shape
    _, extra, strides, _ = _transpose_geometry(node.kernel_arguments(), h, w, weight.shape[1], weight.shape[2])
    return all(e < s for e, s in zip(extra, strides))  # the importer (and NNRt) need output padding < stride


def _conv_transpose_taps(f: FunctionBody, x: str, weight: str, bias: str, x_shape, w_shape, group: int, pads, extra,
                         strides, dilation) -> str:
    """The transposed convolution as a convolution (flipped taps, full padding) of the input with stride-1 zeros
    inserted, then the kernel's crop and end rows/cols, then the bias (float64)."""
    n, h, w, c = x_shape
    o, kh, kw, _ = w_shape
    sh, sw = strides
    if sh > 1 or sw > 1:  # zero insertion: [N, H, 1, W, 1, C] padded to [N, H, sh, W, sw, C], then cropped
        x = f.one("Reshape", [x, _i64(f, [n, h, 1, w, 1, c])])
        x = f.one("Pad", [x, _i64(f, [0, 0, 0, 0, 0, 0, 0, 0, sh - 1, 0, sw - 1, 0])])
        x = f.one("Reshape", [x, _i64(f, [n, h * sh, w * sw, c])])
        x = f.one("Slice", [x, _i64(f, [0, 0]), _i64(f, [(h - 1) * sh + 1, (w - 1) * sw + 1]), _i64(f, [1, 2])])
    eh, ew = (kh - 1) * dilation[0], (kw - 1) * dilation[1]
    dilated = (n, (h - 1) * sh + 1, (w - 1) * sw + 1, c)
    full = _conv_taps(f, x, weight, dilated, w_shape, [1, 1], dilation, (eh, eh, ew, ew), group, flip=True)
    top, left, bottom, right = pads
    full_h, full_w = dilated[1] + eh, dilated[2] + ew
    y = full
    if any(extra):
        y = f.one("Pad", [y, _i64(f, [0, 0, 0, 0, 0, extra[0], extra[1], 0])])
    y = f.one("Slice", [y, _i64(f, [top, left]), _i64(f, [full_h - bottom + extra[0], full_w - right + extra[1]]),
                        _i64(f, [1, 2])])
    return f.one("Add", [y, bias])


@exporter("OH_NN_OPS_CONV2D_TRANSPOSE", nchw=_conv_transpose_standard)
def conv2d_transpose(ctx: ExportContext) -> None:
    """ConvTranspose; weight [O, kH, kW, C/g] -> [C, O/g, kH, kW]. Quantized: as a quantized Conv (QDQ)."""
    quantized = _reads_quantized(ctx)
    if not quantized:
        _no_quant(ctx)
    if not quantized and _input_dtype(ctx, 2) != _input_dtype(ctx, 0):
        raise ExportIssue(f"CONV2D_TRANSPOSE: a {_input_dtype(ctx, 2)} bias with {_input_dtype(ctx, 0)} data")
    n, h, w, c = _nhwc(ctx, ctx.input(0), "the input")
    o, kh, kw, cg = _shape(ctx, ctx.input(1), "the weight")
    group = int(ctx.args.get("group", 1))
    og = o // group
    pads, extra, strides, dilation = _transpose_geometry(ctx.args, h, w, kh, kw)
    attrs = {"strides": strides, "dilations": dilation, "kernel_shape": [kh, kw], "group": group, "pads": pads,
             "output_padding": extra}
    def to_iohw(data):
        return data.reshape(group, og, kh, kw, cg).transpose(0, 4, 1, 2, 3).reshape(c, og, kh, kw)

    if _wrapped(ctx):
        if quantized:  # (per channel only with one group: the output channels are axis 1)
            w_onnx, bias = _dequantized_operands(ctx, to_iohw, lambda axis: (1, 2, 3, 0)[axis])
        else:
            w_onnx = ctx.constant(np.ascontiguousarray(to_iohw(ctx.value(ctx.input(1)).data)), f"{ctx.input(1)}.iohw")
            bias = ctx.input(2)
        ctx.add("ConvTranspose", [ctx.input(0), w_onnx, bias], [ctx.result(0)], main=True, **attrs)
        return
    if quantized:
        ctx.node.inputs[1:3] = _dequantized_operands(ctx)

    def build(f: FunctionBody) -> None:
        x, weight, bias = f.inputs
        if _input_dtype(ctx) not in _ORT_FLOAT:
            f.one("Identity", [_conv_transpose_taps(f, x, weight, bias, (n, h, w, c), (o, kh, kw, cg), group, pads,
                                                    extra, strides, dilation)], "y0")
            return
        weight = f.one("Reshape", [weight, _i64(f, [group, og, kh, kw, cg])])
        weight = f.one("Transpose", [weight], perm=[0, 4, 1, 2, 3])
        weight = f.one("Reshape", [weight, _i64(f, [c, og, kh, kw])])
        x = _to_nchw(f, x)
        if all(e < s for e, s in zip(extra, strides)):
            y = f.one("ConvTranspose", [x, weight, bias], **attrs)
        else:  # rows/cols past the full result reach the stride: zeros appended, then the bias everywhere
            inner = [e if e < s else 0 for e, s in zip(extra, strides)]
            y = f.one("ConvTranspose", [x, weight], **{**attrs, "output_padding": inner})
            y = f.one("Pad", [y, _i64(f, [0, 0, 0, 0, 0, 0] + [e - i for e, i in zip(extra, inner)])])
            y = f.one("Add", [y, f.one("Reshape", [bias, _i64(f, [1, o, 1, 1])])])
        f.one("Transpose", [y], "y0", perm=_TO_NHWC)

    emit_custom(ctx, build)
