"""Export of the spatial NNRt ops: convolutions, pooling, resize, batch/space and depth/space rearrangements,
LRN, pad, crop, LSTM and DETECTION_POST_PROCESS.

Decisions (the kernels' semantics are in ``kernels/spatial.py`` and ``kernels/sequence_detection.py``):

* One standard ONNX node when importing it gives back exactly this op: the NHWC op then runs as the ONNX NCHW
  op between transposes (the registration's ``nchw`` predicate says so per node). Otherwise -- non-constant
  weights, dtypes onnxruntime has no kernel for, a layout transpose that only moves unit dims (it becomes a
  Reshape, which imports as RESHAPE), parameter combinations the importer maps to another op -- the op becomes
  an NNRt-domain function of standard ops working on the NHWC tensors, exact on round trip by construction.
* Pads are explicit (static shapes): SAME (NNAPI/TF: ``out = ceil(in/stride)``, the odd unit at the end) and
  VALID are computed like the kernels do; pad lists ``[top, bottom, left, right]`` become
  ``pads = [top, left, bottom, right]``. (onnxruntime rejects ``auto_pad`` SAME with dilations.)
* Pooling: average pooling never counts padding (``count_include_pad = 0``); the kernel's windows (ceil mode
  drops a last window starting in the end padding; SAME ignores the round mode) are written as floor mode with
  the end padding they touch (< kernel), since ONNX shape inference keeps such a last window. Integer max pooling:
  int8/uint8 natively, 16/32-bit through float64 (exact), 64-bit as one strided slice per tap + Max;
  float64 average pooling also per tap (onnxruntime has no double AveragePool).
* Transposed convolution: explicit pads (SAME crops ``max(F - in*s, 0) // 2`` at the start, TF); an output
  larger than the full result is more ``output_padding`` (bias-only cells), or, when that reaches the stride,
  ConvTranspose + zero Pad + bias in a function.
* LRN: ONNX divides alpha by ``size = 2r + 1``, NNRt does not: ``alpha * size`` is written. NNRt normalises the
  last axis of any rank: other ranks run ONNX LRN on the tensor reshaped to ``[M, C, 1, 1]``.
* RESIZE_BILINEAR: ``Resize(linear)`` to the final size (``preserve_aspect_ratio`` already applied: ONNX's
  ``keep_aspect_ratio_policy`` would also change the coordinate scale); ``exclude_outside`` has no effect on a
  2-tap linear filter with edge clamping; float64 as the kernel's two interpolation matrices (MatMul).
* LSTM: per layer one ONNX ``LSTM`` (gate order iofc = NNRt's, bias ``[Wb | Rb]``); zoneout (no ONNX form)
  unrolls the cell over the (static) time steps.
* DETECTION_POST_PROCESS: decoding and greedy NMS written with standard ops (a ``Loop`` picks the best alive
  candidate per class, lowest anchor on ties, and suppresses IoU > threshold), in the data dtype, so it follows
  the kernel's arithmetic (ONNX ``NonMaxSuppression`` is not used: it keeps ``score > threshold`` where the
  kernel keeps ``>=``, computes IoU in float32 and leaves the order of equal scores unspecified).
* float64 (onnxruntime has no double Conv / ConvTranspose / AveragePool / LRN / Resize): convolutions as one
  strided slice + MatMul per kernel tap (the transposed one on the stride-dilated input with flipped taps),
  average pooling per tap, LRN and resize as their formulas; all in float64.
* Not exported (ExportIssue): quantized tensors; shapes that are not static; SYMMETRIC PAD with run-time
  paddings; DETECTION_POST_PROCESS other than float16/float32 (the kernel takes no other).
* Exactness limits that no export can remove: onnxruntime's float32 Exp (DETECTION_POST_PROCESS box decoding)
  differs from numpy's by an ulp, and onnxruntime runs chains of float16 elementwise ops in float32 without
  rounding in between, so decoded boxes can differ by an ulp and, in principle, an IoU lying exactly at the
  threshold could be decided differently.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from ...ir.passes import NCHW_TO_NHWC, NHWC_TO_NCHW, only_moves_unit_dims
from ...kernels.spatial import bilinear_matrix
from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter

_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
_TO_NHWC, _TO_NCHW = list(NCHW_TO_NHWC), list(NHWC_TO_NCHW)
# dtypes of onnxruntime's CPU kernels
_ORT_FLOAT = (_F16, _F32)  # Conv, ConvTranspose, AveragePool, LRN, Resize, LSTM
_ORT_MAXPOOL = (_F16, _F32, _F64, np.dtype(np.int8), np.dtype(np.uint8))
_ORT_DEPTH_SPACE = (_F16, _F32, _F64, np.dtype(np.int8), np.dtype(np.uint8))
_ORT_PAD = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.uint32,
                                       np.int64, np.uint64, np.bool_))
_EXACT_IN_F64 = tuple(np.dtype(t) for t in (np.int16, np.uint16, np.int32, np.uint32))


# ----------------------------------------------------------------------------------------------------------------
# helpers


def _dtype(ctx: ExportContext, position: int = 0) -> np.dtype:
    return np.dtype(ctx.value(ctx.input(position)).dtype)


def _static(ctx: ExportContext, name: str, what: str) -> tuple[int, ...]:
    shape = ctx.value(name).shape
    if shape is None or any(d < 0 for d in shape):
        raise ExportIssue(f"{ctx.node.op.name}: {what} needs a static shape, got {shape}")
    return tuple(int(d) for d in shape)


def _wrapped(ctx: ExportContext) -> bool:
    """The exporter put the op between transposes: input 0 / output 0 are NCHW."""
    return ctx.node.layout == "NCHW"


def _nhwc(ctx: ExportContext, name: str, what: str) -> tuple[int, ...]:
    """The NHWC shape of the op's input 0 / output 0 (NCHW in the graph when the op was wrapped)."""
    shape = _static(ctx, name, what)
    if _wrapped(ctx) and name in (ctx.input(0), ctx.output(0)):
        return tuple(shape[p] for p in NCHW_TO_NHWC)
    return shape


def _pair(values, what: str) -> list[int]:
    values = [int(v) for v in np.asarray(values).reshape(-1).tolist()]
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise ExportIssue(f"{what} {values} must have 2 values")
    return values


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1).tolist()]


def _pad_list(args) -> list[int]:
    values = _ints(args.get("pad_list", [])) or [0, 0, 0, 0]
    if len(values) != 4:
        raise ExportIssue(f"pad list {values} must have 4 values")
    return values


def _onnx_elem(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _const(f: FunctionBody, values, dtype) -> str:
    return f.constant(np.asarray(values, dtype=dtype))


def _i64(f: FunctionBody, values) -> str:
    return f.constant(np.asarray(values, dtype=np.int64))


def _no_quant(ctx: ExportContext) -> None:
    for name in list(ctx.node.inputs) + list(ctx.node.outputs):
        if name and ctx.value(name).quant is not None:
            raise ExportIssue(f"{ctx.node.op.name}: quantized tensors are not exported yet")


def _layout_ok(node, graph) -> bool:
    """4-D NHWC input and output whose NCHW transposes are true transposes (not reshapes of unit dims)."""
    shapes = [graph.values[node.inputs[0]].shape, graph.values[node.outputs[0]].shape]
    if any(s is None or len(s) != 4 or any(d < 0 for d in s) for s in shapes):
        return False
    return not any(only_moves_unit_dims(s, NHWC_TO_NCHW) for s in shapes) and \
        not any(v.quant is not None for v in (graph.values[n] for n in list(node.inputs) + list(node.outputs) if n))


def _in_dtype(node, graph, position: int = 0) -> np.dtype:
    return np.dtype(graph.values[node.inputs[position]].dtype)


def _to_nchw(f: FunctionBody, x: str) -> str:
    return f.one("Transpose", [x], perm=_TO_NCHW)


def _to_nhwc(f: FunctionBody, x: str) -> str:
    return f.one("Transpose", [x], perm=_TO_NHWC)


# ----------------------------------------------------------------------------------------------------------------
# convolutions


def _same(size: int, stride: int, extent: int) -> tuple[int, int]:
    """NNAPI/TF SAME pads (begin, end) of one axis: output ceil(size/stride), odd unit at the end."""
    out = -(-size // stride)
    total = max((out - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


def _conv_pads(args, h: int, w: int, kh: int, kw: int) -> list[int]:
    """ONNX pads [top, left, bottom, right] of a (dilated) convolution, exactly as the kernel pads."""
    strides, dilation = _pair(args["strides"], "strides"), _pair(args["dilation"], "dilation")
    mode = int(args.get("pad_mode", -1))
    if mode == 0:
        (t, b), (l, r) = (_same(size, s, (k - 1) * d + 1) for size, s, k, d in zip((h, w), strides, (kh, kw), dilation))
    elif mode in (1, 2):
        t = b = l = r = 0
    else:
        t, b, l, r = _pad_list(args)
    return [t, l, b, r]


def _conv_taps(f: FunctionBody, x: str, weight: str, x_shape, w_shape, strides, dilation, tblr, group: int,
               flip: bool = False) -> str:
    """Grouped NHWC convolution (no bias) as one strided slice + batched MatMul per kernel tap, accumulated in the
    data dtype (for float64, which onnxruntime's Conv lacks). ``flip``: the kernel taps reversed (for the
    transposed convolution as a convolution of the stride-dilated input)."""
    n, h, w, c = x_shape
    o, kh, kw, cg = w_shape
    og = o // group
    t, b, l, r = tblr
    oh = (h + t + b - ((kh - 1) * dilation[0] + 1)) // strides[0] + 1
    ow = (w + l + r - ((kw - 1) * dilation[1] + 1)) // strides[1] + 1
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


def _conv_standard(node, graph, group_of) -> bool:
    weight = graph.values[node.inputs[1]]
    if not _layout_ok(node, graph) or weight.data is None or weight.shape is None or len(weight.shape) != 4:
        return False
    dtype = _in_dtype(node, graph)
    if dtype not in _ORT_FLOAT or _in_dtype(node, graph, 2) != dtype:
        return False
    group = group_of(node, graph)
    # Conv with one input channel per group (group > 1) imports as DEPTHWISE_CONV2D_NATIVE, else as CONV2D
    return (group > 1 and weight.shape[3] == 1) == (node.op.name == "OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE")


def _conv2d_group(node, graph) -> int:
    return int(node.kernel_arguments().get("group", 1))


def _depthwise_group(node, graph) -> int:
    return int(graph.values[node.inputs[0]].shape[3])


def _conv(ctx: ExportContext, group: int) -> None:
    """Conv with weight [O, kH, kW, C/g] -> [O, C/g, kH, kW]."""
    _no_quant(ctx)
    if _dtype(ctx, 2) != _dtype(ctx, 0):
        raise ExportIssue(f"{ctx.node.op.name}: a {_dtype(ctx, 2)} bias with {_dtype(ctx, 0)} data")
    n, h, w, c = _nhwc(ctx, ctx.input(0), "the input")
    _, kh, kw, _ = _static(ctx, ctx.input(1), "the weight")
    attrs = {"strides": _pair(ctx.args["strides"], "strides"), "dilations": _pair(ctx.args["dilation"], "dilation"),
             "kernel_shape": [kh, kw], "pads": _conv_pads(ctx.args, h, w, kh, kw), "group": group}
    if _wrapped(ctx):
        weight = ctx.value(ctx.input(1)).data
        w_oihw = ctx.constant(np.ascontiguousarray(weight.transpose(0, 3, 1, 2)), f"{ctx.input(1)}.oihw")
        ctx.add("Conv", [ctx.input(0), w_oihw, ctx.input(2)], [ctx.result(0)], main=True, **attrs)
        return

    def build(f: FunctionBody) -> None:
        x, weight, bias = f.inputs
        if _dtype(ctx) not in _ORT_FLOAT:
            t, l, b, r = attrs["pads"]
            y = _conv_taps(f, x, weight, (n, h, w, c), _static(ctx, ctx.input(1), "the weight"), attrs["strides"],
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
        full = (size - 1) * s + (k - 1) * d + 1
        if mode == 0:
            out = size * s
            p0 = max(full - out, 0) // 2
            p1 = full - p0 - out
        elif mode in (1, 2):
            p0 = p1 = 0
        begin.append(p0)
        end.append(max(p1, 0))
        extra.append(op + max(-p1, 0))  # an output larger than the full result: bias-only rows/cols at the end
    return begin + end, extra, strides, dilation


def _conv_transpose_standard(node, graph) -> bool:
    weight = graph.values[node.inputs[1]]
    if not _layout_ok(node, graph) or weight.data is None or len(weight.shape) != 4:
        return False
    dtype = _in_dtype(node, graph)
    if dtype not in _ORT_FLOAT or _in_dtype(node, graph, 2) != dtype:
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
    """ConvTranspose; weight [O, kH, kW, C/g] -> [C, O/g, kH, kW]."""
    _no_quant(ctx)
    if _dtype(ctx, 2) != _dtype(ctx, 0):
        raise ExportIssue(f"CONV2D_TRANSPOSE: a {_dtype(ctx, 2)} bias with {_dtype(ctx, 0)} data")
    n, h, w, c = _nhwc(ctx, ctx.input(0), "the input")
    o, kh, kw, cg = _static(ctx, ctx.input(1), "the weight")
    group = int(ctx.args.get("group", 1))
    og = o // group
    pads, extra, strides, dilation = _transpose_geometry(ctx.args, h, w, kh, kw)
    attrs = {"strides": strides, "dilations": dilation, "kernel_shape": [kh, kw], "group": group, "pads": pads,
             "output_padding": extra}
    if _wrapped(ctx):
        data = ctx.value(ctx.input(1)).data.reshape(group, og, kh, kw, cg).transpose(0, 4, 1, 2, 3)
        w_onnx = ctx.constant(np.ascontiguousarray(data.reshape(c, og, kh, kw)), f"{ctx.input(1)}.iohw")
        ctx.add("ConvTranspose", [ctx.input(0), w_onnx, ctx.input(2)], [ctx.result(0)], main=True, **attrs)
        return

    def build(f: FunctionBody) -> None:
        x, weight, bias = f.inputs
        if _dtype(ctx) not in _ORT_FLOAT:
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


# ----------------------------------------------------------------------------------------------------------------
# pooling


def _pool_geometry(args, h: int, w: int):
    """Kernel, strides, ONNX pads [top, left, bottom, right] and per axis (out, begin pad, touched end pad) exactly
    as the kernel pools. The ONNX form uses floor mode with the end padding the windows touch: the same windows
    as the kernel's ceil mode (ONNX shape inference does not drop a last window starting in the end padding)."""
    kernel = _pair(args["kernel_size"], "kernel size")
    strides = _pair(args["stride"], "stride")
    mode = int(args.get("pad_mode", -1))
    ceil = int(args.get("round_mode", 0)) == 1 and mode != 0  # SAME ignores the round mode
    tblr = _pad_list(args) if mode == -1 else [0, 0, 0, 0]
    axes = []
    for size, k, s, (p0, p1) in zip((h, w), kernel, strides, (tblr[0:2], tblr[2:4])):
        if mode == 0:
            p0, p1 = _same(size, s, k)
        span = size + p0 + p1 - k
        out = (-(-span // s) if ceil else span // s) + 1
        if ceil and (out - 1) * s >= size + p0:
            out -= 1
        axes.append((out, p0, max((out - 1) * s + k - size - p0, 0)))
    pads = [axes[0][1], axes[1][1], axes[0][2], axes[1][2]]
    return kernel, strides, pads, axes


def _taps_pool(f: FunctionBody, x: str, kind: str, dtype: np.dtype, shape, kernel, strides, axes) -> str:
    """Pooling of an NHWC tensor as one strided slice per kernel tap (for dtypes without a pooling kernel)."""
    n, h, w, c = shape
    (oh, pt, pb), (ow, pl, pr) = axes
    fill = (-np.inf if dtype.kind == "f" else np.iinfo(dtype).min) if kind == "max" else 0
    source = x
    if pt or pb or pl or pr:
        source = f.one("Pad", [x, _i64(f, [0, pt, pl, 0, 0, pb, pr, 0]), _const(f, fill, dtype)])
    acc = None
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            tap = f.one("Slice", [source, _i64(f, [i, j]),
                                  _i64(f, [i + (oh - 1) * strides[0] + 1, j + (ow - 1) * strides[1] + 1]),
                                  _i64(f, [1, 2]), _i64(f, strides)])
            acc = tap if acc is None else f.one("Max" if kind == "max" else "Add", [acc, tap])
    if kind == "max":
        return acc
    rows = [min(o * strides[0] - pt + kernel[0], h) - max(o * strides[0] - pt, 0) for o in range(oh)]
    cols = [min(o * strides[1] - pl + kernel[1], w) - max(o * strides[1] - pl, 0) for o in range(ow)]
    count = np.multiply.outer(np.asarray(rows, np.float64), np.asarray(cols, np.float64))
    return f.one("Div", [acc, _const(f, count.reshape(1, oh, ow, 1), dtype)])


def _pool_standard(node, graph) -> bool:
    args = node.kernel_arguments()
    if args.get("global_pool") or not _layout_ok(node, graph):
        return False  # global pooling: a [N, 1, 1, C] result, whose layout transpose would be a reshape
    native = _ORT_MAXPOOL if node.op.name == "OH_NN_OPS_MAX_POOL" else _ORT_FLOAT
    return _in_dtype(node, graph) in native


def _reduce_hw(f: FunctionBody, op_type: str, x: str, dtype: np.dtype, shape) -> str:
    """ReduceMean/ReduceMax over H and W (keepdims); 16-bit and unsigned 32-bit ints through a wider type."""
    if dtype == np.uint64:  # no reduction kernel: the variadic Max of the H*W positions
        n, h, w, c = shape
        cells = f.add("Split", [f.one("Reshape", [x, _i64(f, [n, h * w, c])])],
                      [f.fresh("cell") for _ in range(h * w)], axis=1, num_outputs=h * w)
        return f.one("Reshape", [f.one("Max", cells) if h * w > 1 else cells[0], _i64(f, [n, 1, 1, c])])
    wider = {np.dtype(np.int16): TensorProto.INT32, np.dtype(np.uint16): TensorProto.INT32,
             np.dtype(np.uint32): TensorProto.INT64}.get(dtype)
    source = x if wider is None else f.one("Cast", [x], to=wider)
    y = f.one(op_type, [source, _i64(f, [1, 2])], keepdims=1)
    return y if wider is None else f.one("Cast", [y], to=_onnx_elem(dtype))


def _pool(ctx: ExportContext, kind: str) -> None:
    _no_quant(ctx)
    op_type = "MaxPool" if kind == "max" else "AveragePool"
    dtype = _dtype(ctx)
    shape = _nhwc(ctx, ctx.input(0), "the input")
    if ctx.args.get("global_pool"):
        def build_global(f: FunctionBody) -> None:
            reduce = "ReduceMax" if kind == "max" else "ReduceMean"
            f.one("Identity", [_reduce_hw(f, reduce, f.inputs[0], dtype, shape)], "y0")

        emit_custom(ctx, build_global)
        return
    kernel, strides, pads, axes = _pool_geometry(ctx.args, shape[1], shape[2])
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads}
    if kind == "avg":
        attrs["count_include_pad"] = 0
    if _wrapped(ctx):
        ctx.add(op_type, [ctx.input(0)], [ctx.result(0)], main=True, **attrs)
        return

    def build(f: FunctionBody) -> None:
        x = f.inputs[0]
        if dtype in (_ORT_MAXPOOL if kind == "max" else _ORT_FLOAT):  # (unit-dim layout)
            y = _to_nhwc(f, f.one(op_type, [_to_nchw(f, x)], **attrs))
        elif kind == "avg" or dtype.itemsize == 8:  # float64 average, 64-bit integer max
            y = _taps_pool(f, x, kind, dtype, shape, kernel, strides, axes)
        elif dtype in _EXACT_IN_F64:  # every value exact in float64: the float64 MaxPool kernel
            pooled = f.one("MaxPool", [_to_nchw(f, f.one("Cast", [x], to=TensorProto.DOUBLE))], **attrs)
            y = f.one("Cast", [_to_nhwc(f, pooled)], to=_onnx_elem(dtype))
        else:
            raise ExportIssue(f"{ctx.node.op.name} of {dtype} is not exported")
        f.one("Identity", [y], "y0")

    emit_custom(ctx, build)


@exporter("OH_NN_OPS_MAX_POOL", nchw=_pool_standard)
def max_pool(ctx: ExportContext) -> None:
    _pool(ctx, "max")


@exporter("OH_NN_OPS_AVG_POOL", nchw=_pool_standard)
def avg_pool(ctx: ExportContext) -> None:
    _pool(ctx, "avg")


# ----------------------------------------------------------------------------------------------------------------
# resize




def _resize_standard(node, graph) -> bool:
    if not _layout_ok(node, graph) or _in_dtype(node, graph) not in _ORT_FLOAT:
        return False
    # the importer copies (RESHAPE) an identity resize instead of giving RESIZE_BILINEAR back
    return graph.values[node.inputs[0]].shape[1:3] != graph.values[node.outputs[0]].shape[1:3]


@exporter("OH_NN_OPS_RESIZE_BILINEAR", nchw=_resize_standard)
def resize_bilinear(ctx: ExportContext) -> None:
    _no_quant(ctx)
    n, h, w, c = _nhwc(ctx, ctx.input(0), "the input")
    _, nh, nw, _ = _nhwc(ctx, ctx.output(0), "the output")
    mode = int(ctx.args.get("coordinate_transform_mode", 0))
    ctm = {0: "asymmetric", 1: "align_corners", 2: "half_pixel"}.get(mode)
    if ctm is None:
        raise ExportIssue(f"RESIZE_BILINEAR coordinate transform mode {mode}")
    dtype = _dtype(ctx)
    attrs = {"mode": "linear", "coordinate_transformation_mode": ctm}
    if _wrapped(ctx):
        sizes = ctx.constant(np.asarray([n, c, nh, nw], np.int64), "resize_sizes")
        ctx.add("Resize", [ctx.input(0), "", "", sizes], [ctx.result(0)], main=True, **attrs)
        return

    def build(f: FunctionBody) -> None:
        x = _to_nchw(f, f.inputs[0])
        if dtype in _ORT_FLOAT:
            y = f.one("Resize", [x, "", "", _i64(f, [n, c, nh, nw])], **attrs)
        else:  # float64: the kernel's interpolation matrices, Mh @ X @ Mw^T on [N, C, H, W]
            mw = _const(f, bilinear_matrix(w, nw, mode).T, dtype)
            mh = _const(f, bilinear_matrix(h, nh, mode), dtype)
            y = f.one("MatMul", [mh, f.one("MatMul", [x, mw])])
        f.one("Transpose", [y], "y0", perm=_TO_NHWC)

    emit_custom(ctx, build)


# ----------------------------------------------------------------------------------------------------------------
# batch/space, depth/space


def _depth_space_standard(node, graph) -> bool:
    return _layout_ok(node, graph) and _in_dtype(node, graph) in _ORT_DEPTH_SPACE


@exporter("OH_NN_OPS_DEPTH_TO_SPACE", nchw=_depth_space_standard)
def depth_to_space(ctx: ExportContext) -> None:
    """DCR: channel (i*b + j)*C' + c (ONNX DCR); CRD: c*b*b + i*b + j (ONNX CRD)."""
    _no_quant(ctx)
    b = int(ctx.args["block_size"])
    crd = int(ctx.args.get("mode", 0)) == 1
    if _wrapped(ctx):
        ctx.add("DepthToSpace", [ctx.input(0)], [ctx.result(0)], main=True, blocksize=b, mode="CRD" if crd else "DCR")
        return
    n, h, w, c = _nhwc(ctx, ctx.input(0), "the input")
    cc = c // (b * b)

    def build(f: FunctionBody) -> None:  # the kernel's rearrangement, on NHWC
        if crd:
            t = f.one("Reshape", [f.inputs[0], _i64(f, [n, h, w, cc, b, b])])
            t = f.one("Transpose", [t], perm=[0, 1, 4, 2, 5, 3])
        else:
            t = f.one("Reshape", [f.inputs[0], _i64(f, [n, h, w, b, b, cc])])
            t = f.one("Transpose", [t], perm=[0, 1, 3, 2, 4, 5])
        f.one("Reshape", [t, _i64(f, [n, h * b, w * b, cc])], "y0")

    emit_custom(ctx, build)


@exporter("OH_NN_OPS_SPACE_TO_DEPTH", nchw=_depth_space_standard)
def space_to_depth(ctx: ExportContext) -> None:
    """New channel (i*b + j)*C + c, ONNX SpaceToDepth's order."""
    _no_quant(ctx)
    b = int(ctx.args["block_size"])
    if _wrapped(ctx):
        ctx.add("SpaceToDepth", [ctx.input(0)], [ctx.result(0)], main=True, blocksize=b)
        return
    n, h, w, c = _nhwc(ctx, ctx.input(0), "the input")

    def build(f: FunctionBody) -> None:
        t = f.one("Reshape", [f.inputs[0], _i64(f, [n, h // b, b, w // b, b, c])])
        t = f.one("Transpose", [t], perm=[0, 1, 3, 2, 4, 5])
        f.one("Reshape", [t, _i64(f, [n, h // b, w // b, b * b * c])], "y0")

    emit_custom(ctx, build)


@exporter("OH_NN_OPS_BATCH_TO_SPACE_ND")
def batch_to_space_nd(ctx: ExportContext) -> None:
    _no_quant(ctx)
    n, h, w, c = _static(ctx, ctx.input(0), "the input")
    b0, b1 = _ints(ctx.args["block_size"])
    crop = _ints(ctx.args.get("crops", [])) or [0, 0, 0, 0]
    nb = n // (b0 * b1)

    def build(f: FunctionBody) -> None:
        t = f.one("Reshape", [f.inputs[0], _i64(f, [b0, b1, nb, h, w, c])])
        t = f.one("Transpose", [t], perm=[2, 3, 0, 4, 1, 5])
        t = f.one("Reshape", [t, _i64(f, [nb, h * b0, w * b1, c])])
        if any(crop):
            t = f.one("Slice", [t, _i64(f, [crop[0], crop[2]]), _i64(f, [h * b0 - crop[1], w * b1 - crop[3]]),
                                _i64(f, [1, 2])])
        f.one("Identity", [t], "y0")

    emit_custom(ctx, build)


def _pad_constant(f: FunctionBody, x: str, dtype: np.dtype, pads_onnx: str, value, mode: str = "constant") -> str:
    """Constant (or reflect) padding of any dtype (16-bit ints, which onnxruntime's Pad lacks, go through int32)."""
    wide = dtype not in _ORT_PAD
    source = f.one("Cast", [x], to=TensorProto.INT32) if wide else x
    inputs = [source, pads_onnx] + ([_const(f, value, np.int32 if wide else dtype)] if mode == "constant" else [])
    padded = f.one("Pad", inputs, mode=mode)
    return f.one("Cast", [padded], to=_onnx_elem(dtype)) if wide else padded


@exporter("OH_NN_OPS_SPACE_TO_BATCH_ND")
def space_to_batch_nd(ctx: ExportContext) -> None:
    _no_quant(ctx)
    n, h, w, c = _static(ctx, ctx.input(0), "the input")
    b0, b1 = _ints(ctx.args["block_shape"])
    pad = _ints(ctx.args.get("paddings", [])) or [0, 0, 0, 0]
    hp, wp = h + pad[0] + pad[1], w + pad[2] + pad[3]
    dtype = _dtype(ctx)

    def build(f: FunctionBody) -> None:
        t = f.inputs[0]
        if any(pad):
            t = _pad_constant(f, t, dtype, _i64(f, [0, pad[0], pad[2], 0, 0, pad[1], pad[3], 0]), 0)
        t = f.one("Reshape", [t, _i64(f, [n, hp // b0, b0, wp // b1, b1, c])])
        t = f.one("Transpose", [t], perm=[2, 4, 0, 1, 3, 5])
        f.one("Reshape", [t, _i64(f, [b0 * b1 * n, hp // b0, wp // b1, c])], "y0")

    emit_custom(ctx, build)


# ----------------------------------------------------------------------------------------------------------------
# LRN


def _lrn_standard(node, graph) -> bool:
    return _layout_ok(node, graph) and _in_dtype(node, graph) in _ORT_FLOAT


@exporter("OH_NN_OPS_LRN", nchw=_lrn_standard)
def lrn(ctx: ExportContext) -> None:
    """NNRt LRN normalises the last axis of a tensor of any rank: ONNX LRN (channel axis 1) on the NCHW form of a
    4-D tensor, else on the tensor reshaped to [M, C, 1, 1]; float64 (no onnxruntime kernel) as its formula."""
    _no_quant(ctx)
    if int(ctx.args.get("norm_region", 0)) != 0:
        raise ExportIssue("LRN norm_region other than ACROSS_CHANNELS")
    radius = int(ctx.args["depth_radius"])
    size = 2 * radius + 1
    alpha, beta, bias = float(ctx.args["alpha"]), float(ctx.args["beta"]), float(ctx.args["bias"])
    attrs = {"size": size, "alpha": alpha * size, "beta": beta, "bias": bias}
    if _wrapped(ctx):
        ctx.add("LRN", [ctx.input(0)], [ctx.result(0)], main=True, **attrs)
        return
    dtype = _dtype(ctx)
    shape = _static(ctx, ctx.input(0), "the input")
    channels = shape[-1]

    def build(f: FunctionBody) -> None:
        x = f.inputs[0]
        if dtype in _ORT_FLOAT:
            flat = f.one("Reshape", [x, _i64(f, [-1, channels, 1, 1])])
            f.one("Reshape", [f.one("LRN", [flat], **attrs), _i64(f, list(shape))], "y0")
            return
        # x / (bias + alpha * sum(x^2 over [c - r, c + r])) ** beta, in the data dtype
        band = np.zeros((channels, channels))
        for k in range(channels):
            band[max(k - radius, 0): k + radius + 1, k] = 1
        summed = f.one("MatMul", [f.one("Mul", [x, x]), _const(f, band, dtype)])
        base = f.one("Add", [_const(f, bias, dtype), f.one("Mul", [_const(f, alpha, dtype), summed])])
        f.one("Div", [x, f.one("Pow", [base, _const(f, beta, dtype)])], "y0")

    emit_custom(ctx, build)


# ----------------------------------------------------------------------------------------------------------------
# PAD, CROP


def _fill_value(value: float, dtype: np.dtype):
    if dtype.kind == "f":
        return dtype.type(value)
    if dtype == np.bool_:
        return bool(value)
    return dtype.type(int(value))


def _gather_pad(f: FunctionBody, x: str, shape, pads, mode: str) -> str:
    """Reflect/symmetric padding as one Gather per padded axis with constant source positions (any dtype)."""
    for axis, (p0, p1) in enumerate(pads):
        if p0 or p1:
            source = np.pad(np.arange(shape[axis]), (p0, p1), mode=mode)
            x = f.one("Gather", [x, _i64(f, source)], axis=axis)
    return x


@exporter("OH_NN_OPS_PAD")
def pad(ctx: ExportContext) -> None:
    _no_quant(ctx)
    dtype = _dtype(ctx)
    shape = _static(ctx, ctx.input(0), "the input")
    rank = len(shape)
    mode = int(ctx.args.get("padding_mode", 0))
    if mode not in (0, 1, 2):
        raise ExportIssue(f"PAD padding mode {mode}")
    # the fill value only matters (and must fit the dtype) in constant mode
    fill = _fill_value(float(ctx.args.get("constant_value", 0.0)), dtype) if mode == 0 else None
    paddings = ctx.value(ctx.input(1)).data
    if paddings is not None:
        pairs = [(int(a), int(b)) for a, b in np.asarray(paddings).reshape(rank, 2)]
        onnx_pads = [a for a, _ in pairs] + [b for _, b in pairs]
        # (the importer turns a Pad that pads nothing into a copy)
        if mode in (0, 1) and dtype in _ORT_PAD and any(onnx_pads):
            inputs = [ctx.input(0), ctx.constant(np.asarray(onnx_pads, np.int64), "pads")]
            attrs = {"mode": "constant" if mode == 0 else "reflect"}
            if mode == 0:
                inputs.append(ctx.constant(np.asarray(fill, dtype), "pad_value"))
            ctx.add("Pad", inputs, [ctx.result(0)], main=True, **attrs)
            return

        def build(f: FunctionBody) -> None:
            if mode == 0:
                y = _pad_constant(f, f.inputs[0], dtype, _i64(f, onnx_pads), fill)
            else:
                y = _gather_pad(f, f.inputs[0], shape, pairs, "reflect" if mode == 1 else "symmetric")
            f.one("Identity", [y], "y0")

        emit_custom(ctx, build)
        return
    if mode == 2:
        raise ExportIssue("PAD: SYMMETRIC padding needs constant paddings (ONNX Pad has no symmetric mode)")

    def build_dynamic(f: FunctionBody) -> None:
        x, p = f.inputs
        p = f.one("Cast", [p], to=TensorProto.INT64)
        p = f.one("Reshape", [f.one("Transpose", [f.one("Reshape", [p, _i64(f, [rank, 2])])], perm=[1, 0]),
                              _i64(f, [-1])])
        f.one("Identity", [_pad_constant(f, x, dtype, p, fill, "reflect" if mode == 1 else "constant")], "y0")

    emit_custom(ctx, build_dynamic)


@exporter("OH_NN_OPS_CROP")
def crop(ctx: ExportContext) -> None:
    """A Slice with constant starts (the offsets) and sizes (the output shape, or the shape input's values)."""
    _no_quant(ctx)
    shape = _static(ctx, ctx.input(0), "the input")
    rank = len(shape)
    axis = int(ctx.args.get("axis", 0)) % rank
    offsets = _ints(ctx.args.get("offset", []))
    if not offsets:
        offsets = [0] * (rank - axis)
    elif len(offsets) == 1:
        offsets = offsets * (rank - axis)
    starts = [0] * axis + offsets
    out_shape = ctx.value(ctx.output(0)).shape
    sizes = ctx.value(ctx.input(1)).data
    if sizes is not None:
        sizes = _ints(sizes)
        if len(sizes) == rank - axis and len(sizes) != rank:
            sizes = list(shape[:axis]) + sizes
    elif out_shape is not None and all(d >= 0 for d in out_shape):
        sizes = [int(d) for d in out_shape]

    def build(f: FunctionBody) -> None:
        x, window = f.inputs
        if sizes is not None:
            ends = _i64(f, [s + z for s, z in zip(starts, sizes)])
        else:  # window sizes only known at run time
            window = f.one("Cast", [window], to=TensorProto.INT64)
            count = ctx.value(ctx.input(1)).shape[0]
            if count != rank:
                window = f.one("Concat", [_i64(f, shape[:axis]), window], axis=0)
            ends = f.one("Add", [_i64(f, starts), window])
        f.one("Slice", [x, _i64(f, starts), ends, _i64(f, list(range(rank)))], "y0")

    emit_custom(ctx, build)


# ----------------------------------------------------------------------------------------------------------------
# LSTM


def _lstm_unrolled(f: FunctionBody, seq: str, w: str, r: str, bias: str | None, h0: str, c0: str, *, steps: int,
                   hidden: int, dirs: int, dtype: np.dtype, zc: float, zh: float):
    """One (bi)directional layer cell by cell (zoneout has no ONNX LSTM form): returns (output, hy, cy)."""
    wt = f.one("Transpose", [w], perm=[0, 2, 1])  # [D, I, 4H]
    rt = f.one("Transpose", [r], perm=[0, 2, 1])  # [D, H, 4H]
    # 1 - z rounded in the data dtype, as the kernel computes it
    keep_c = f.constant(np.asarray(1, dtype) - np.asarray(zc, dtype))
    keep_h = f.constant(np.asarray(1, dtype) - np.asarray(zh, dtype))
    outs, hys, cys = [], [], []
    for d in range(dirs):
        index = _i64(f, d)
        pre = f.one("MatMul", [seq, f.one("Gather", [wt, index], axis=0)])  # [T, B, 4H]
        if bias is not None:
            pre = f.one("Add", [pre, f.one("Gather", [bias, index], axis=0)])
        rd = f.one("Gather", [rt, index], axis=0)
        h = f.one("Gather", [h0, index], axis=0)
        c = f.one("Gather", [c0, index], axis=0)
        per_step: dict[int, str] = {}
        for s in range(steps):
            t = s if d == 0 else steps - 1 - s
            gates = f.one("Add", [f.one("Gather", [pre, _i64(f, t)], axis=0), f.one("MatMul", [h, rd])])
            parts = [f.one("Slice", [gates, _i64(f, [k * hidden]), _i64(f, [(k + 1) * hidden]), _i64(f, [1])])
                     for k in range(4)]  # i, o, f, g
            i_g, o_g, f_g = (f.one("Sigmoid", [p]) for p in parts[:3])
            g_g = f.one("Tanh", [parts[3]])
            c_new = f.one("Add", [f.one("Mul", [f_g, c]), f.one("Mul", [i_g, g_g])])
            h_new = f.one("Mul", [o_g, f.one("Tanh", [c_new])])
            per_step[t] = h_new
            if zc:
                c_new = f.one("Add", [f.one("Mul", [_const(f, zc, dtype), c]), f.one("Mul", [keep_c, c_new])])
            if zh:
                h_new = f.one("Add", [f.one("Mul", [_const(f, zh, dtype), h]), f.one("Mul", [keep_h, h_new])])
            h, c = h_new, c_new
        axis0 = _i64(f, [0])
        outs.append(f.one("Concat", [f.one("Unsqueeze", [per_step[t], axis0]) for t in range(steps)], axis=0))
        hys.append(f.one("Unsqueeze", [h, axis0]))
        cys.append(f.one("Unsqueeze", [c, axis0]))
    output = outs[0] if dirs == 1 else f.one("Concat", outs, axis=2)
    hy = hys[0] if dirs == 1 else f.one("Concat", hys, axis=0)
    cy = cys[0] if dirs == 1 else f.one("Concat", cys, axis=0)
    return output, hy, cy


@exporter("OH_NN_OPS_LSTM")
def lstm(ctx: ExportContext) -> None:
    """Each layer: ONNX LSTM on the layer's slices of wIh/wHh/bias/hx/cx (Y [T, D, B, H] -> [T, B, D*H])."""
    _no_quant(ctx)
    args = ctx.args
    if int(args.get("proj_size", 0)) > 0:
        raise ExportIssue("LSTM with proj_size > 0")
    dtype = _dtype(ctx)
    steps, batch, _features = _static(ctx, ctx.input(0), "the input")
    stack, rows, _ = _static(ctx, ctx.input(1), "wIh")
    dirs = 2 if args.get("bidirectional") else 1
    hidden = rows // 4
    layers = int(args.get("num_layers", 0)) or stack // dirs
    has_bias = bool(args.get("has_bias"))
    zc, zh = float(args.get("zoneout_cell", 0.0)), float(args.get("zoneout_hidden", 0.0))
    if any(_dtype(ctx, i) != dtype for i in range(1, 6) if i != 3 or has_bias):
        raise ExportIssue("LSTM operands of mixed dtypes")

    def build(f: FunctionBody) -> None:
        x, w_ih, w_hh, bias, hx, cx = f.inputs
        seq = x
        hys, cys = [], []
        for layer in range(layers):
            begin, end, axis = _i64(f, [layer * dirs]), _i64(f, [(layer + 1) * dirs]), _i64(f, [0])

            def part(t: str) -> str:
                return t if layers == 1 else f.one("Slice", [t, begin, end, axis])

            w, r, h0, c0 = part(w_ih), part(w_hh), part(hx), part(cx)
            b = part(bias) if has_bias else None
            if zc == 0 and zh == 0:
                y, hy, cy = f.add("LSTM", [seq, w, r, b or "", "", h0, c0],
                                  [f.fresh("y"), f.fresh("hy"), f.fresh("cy")], hidden_size=hidden,
                                  direction="bidirectional" if dirs == 2 else "forward")
                seq = f.one("Reshape", [f.one("Transpose", [y], perm=[0, 2, 1, 3]),
                                        _i64(f, [steps, batch, dirs * hidden])])
            else:
                if b is not None:  # the kernel adds the input and hidden biases first
                    b = f.one("Add", [f.one("Slice", [b, _i64(f, [0]), _i64(f, [4 * hidden]), _i64(f, [1])]),
                                      f.one("Slice", [b, _i64(f, [4 * hidden]), _i64(f, [8 * hidden]), _i64(f, [1])])])
                seq, hy, cy = _lstm_unrolled(f, seq, w, r, b, h0, c0, steps=steps, hidden=hidden, dirs=dirs,
                                             dtype=dtype, zc=zc, zh=zh)
            hys.append(hy)
            cys.append(cy)
        f.one("Identity", [seq], "y0")
        f.one("Identity" if layers == 1 else "Concat", hys, "y1", axis=None if layers == 1 else 0)
        f.one("Identity" if layers == 1 else "Concat", cys, "y2", axis=None if layers == 1 else 0)

    emit_custom(ctx, build)


# ----------------------------------------------------------------------------------------------------------------
# DETECTION_POST_PROCESS


class _SubGraph(FunctionBody):
    """Nodes of a control-flow body inside a function body (names drawn from the function's counter)."""

    def __init__(self, parent: FunctionBody):
        super().__init__(0, 0)
        self.fresh = parent.fresh  # type: ignore[method-assign]


def _nms_loop(f: FunctionBody, boxes: str, scores: str, rows: int, count: int, limit: int, score_threshold: float,
              iou_threshold: float, dtype: np.dtype) -> tuple[str, str]:
    """The kernel's greedy NMS for every row of ``scores`` [rows, N] at once (boxes [N, 4]).

    Each Loop iteration picks, per row, the alive candidate of highest score (lowest anchor on ties, ArgMax) and
    drops it and every alive candidate whose IoU with it is > the threshold (IoU 0 where a box has no area).
    Returns (picks [T, rows] int64, valid [T, rows] bool) for the T <= limit iterations run."""
    zero = _const(f, 0, dtype)
    corner = [f.one("Unsqueeze", [f.one("Gather", [boxes, _i64(f, k)], axis=1), _i64(f, [0])]) for k in range(4)]
    areas = f.one("Mul", [f.one("Sub", [corner[2], corner[0]]), f.one("Sub", [corner[3], corner[1]])])  # [1, N]
    alive0 = f.one("GreaterOrEqual", [scores, _const(f, score_threshold, dtype)])
    positions = _i64(f, np.arange(count).reshape(1, count))

    g = _SubGraph(f)
    it, cond, alive = g.fresh("iter"), g.fresh("cond"), g.fresh("alive")
    masked = g.one("Where", [alive, scores, _const(g, -np.inf, dtype)])
    best = g.one("ArgMax", [masked], axis=1, keepdims=0)  # [rows]
    any_alive = g.one("ReduceMax", [g.one("Cast", [alive], to=TensorProto.INT32), _i64(g, [1])], keepdims=0)
    valid = g.one("Greater", [any_alive, _const(g, 0, np.int32)])
    chosen = g.one("Gather", [boxes, best], axis=0)  # [rows, 4]
    b = [g.one("Gather", [chosen, _i64(g, [k])], axis=1) for k in range(4)]  # [rows, 1]
    area = g.one("Mul", [g.one("Sub", [b[2], b[0]]), g.one("Sub", [b[3], b[1]])])
    height = g.one("Max", [g.one("Sub", [g.one("Min", [b[2], corner[2]]), g.one("Max", [b[0], corner[0]])]), zero])
    width = g.one("Max", [g.one("Sub", [g.one("Min", [b[3], corner[3]]), g.one("Max", [b[1], corner[1]])]), zero])
    inter = g.one("Mul", [height, width])
    iou = g.one("Div", [inter, g.one("Sub", [g.one("Add", [area, areas]), inter])])
    has_area = g.one("And", [g.one("Greater", [area, zero]), g.one("Greater", [areas, zero])])
    iou = g.one("Where", [has_area, iou, zero])
    kept = g.one("Not", [g.one("Greater", [iou, _const(g, iou_threshold, dtype)])])
    other = g.one("Not", [g.one("Equal", [positions, g.one("Unsqueeze", [best, _i64(g, [1])])])])
    alive_out = g.one("And", [g.one("And", [alive, kept]), other])
    left = g.one("ReduceMax", [g.one("Cast", [alive_out], to=TensorProto.INT32)], keepdims=0)
    cond_out = g.one("Greater", [left, _const(g, 0, np.int32)])
    body = helper.make_graph(
        g.nodes, f.fresh("nms_body"),
        [helper.make_tensor_value_info(it, TensorProto.INT64, []),
         helper.make_tensor_value_info(cond, TensorProto.BOOL, []),
         helper.make_tensor_value_info(alive, TensorProto.BOOL, [rows, count])],
        [helper.make_tensor_value_info(cond_out, TensorProto.BOOL, []),
         helper.make_tensor_value_info(alive_out, TensorProto.BOOL, [rows, count]),
         helper.make_tensor_value_info(best, TensorProto.INT64, [rows]),
         helper.make_tensor_value_info(valid, TensorProto.BOOL, [rows])])
    # the first iteration always runs (limit >= 1): with nothing alive it only reports invalid picks
    _, picks, valids = f.add("Loop", [_i64(f, limit), _const(f, True, np.bool_), alive0],
                             [f.fresh("alive_end"), f.fresh("picks"), f.fresh("valid")], body=body)
    return picks, valids


@exporter("OH_NN_OPS_DETECTION_POST_PROCESS")
def detection_post_process(ctx: ExportContext) -> None:
    """Box decoding + greedy NMS (regular: per class, then the best max_detections over all classes; fast: on each
    anchor's best class score, each kept anchor giving its best classes), rows packed and zero-padded."""
    _no_quant(ctx)
    a = ctx.args
    dtype = _dtype(ctx, 0)
    if dtype not in (_F16, _F32):
        raise ExportIssue(f"DETECTION_POST_PROCESS of {dtype}")
    batch, count, _ = _static(ctx, ctx.input(0), "bbox")
    columns = _static(ctx, ctx.input(1), "scores")[2]
    classes = int(a["num_classes"])
    first = columns - classes
    h_scale, w_scale, x_scale, y_scale = (float(v) for v in a["scale"])
    iou_threshold, score_threshold = float(a["nms_iou_threshold"]), float(a["nms_score_threshold"])
    max_detections = int(a["max_detections"])
    per_class = int(a["detections_per_class"])
    max_classes = int(a["max_classes_per_detection"])
    regular = bool(a["use_regular_nms"])
    rows_out = max_detections * max_classes
    out_dtypes = [np.dtype(ctx.value(o).dtype) for o in ctx.node.outputs]

    def build(f: FunctionBody) -> None:
        bbox, scores, anchors = f.inputs
        anchors = f.one("Reshape", [anchors, _i64(f, [count, 4])])
        if _dtype(ctx, 2) != dtype:
            anchors = f.one("Cast", [anchors], to=_onnx_elem(dtype))
        ya, xa, ha, wa = (f.one("Gather", [anchors, _i64(f, k)], axis=1) for k in range(4))
        dy, dx, dh, dw = (f.one("Gather", [bbox, _i64(f, k)], axis=2) for k in range(4))
        half = _const(f, 0.5, dtype)
        yc = f.one("Add", [f.one("Mul", [f.one("Div", [dy, _const(f, y_scale, dtype)]), ha]), ya])
        xc = f.one("Add", [f.one("Mul", [f.one("Div", [dx, _const(f, x_scale, dtype)]), wa]), xa])
        hh = f.one("Mul", [f.one("Mul", [half, f.one("Exp", [f.one("Div", [dh, _const(f, h_scale, dtype)])])]), ha])
        hw = f.one("Mul", [f.one("Mul", [half, f.one("Exp", [f.one("Div", [dw, _const(f, w_scale, dtype)])])]), wa])
        last = _i64(f, [2])
        corners = [f.one("Sub", [yc, hh]), f.one("Sub", [xc, hw]), f.one("Add", [yc, hh]), f.one("Add", [xc, hw])]
        boxes = f.one("Concat", [f.one("Unsqueeze", [v, last]) for v in corners], axis=2)  # [B, N, 4]
        class_scores = scores
        if first:
            class_scores = f.one("Slice", [scores, _i64(f, [first]), _i64(f, [columns]), last])
        if _dtype(ctx, 1) != dtype:
            class_scores = f.one("Cast", [class_scores], to=_onnx_elem(dtype))
        results: list[list[str]] = [[], [], [], []]
        for n in range(batch):
            bn = f.one("Gather", [boxes, _i64(f, n)], axis=0)  # [N, 4]
            sn = f.one("Gather", [class_scores, _i64(f, n)], axis=0)  # [N, C]
            if regular:
                table, rows, limit = f.one("Transpose", [sn], perm=[1, 0]), classes, per_class
            else:
                best = f.one("ReduceMax", [sn, _i64(f, [1])], keepdims=1)
                table, rows, limit = f.one("Transpose", [best], perm=[1, 0]), 1, max_detections
            picks, valids = _nms_loop(f, bn, table, rows, count, limit, score_threshold, iou_threshold, dtype)
            flat = _i64(f, [-1])
            picks_by_row = f.one("Transpose", [picks], perm=[1, 0])  # [rows, T]: row-major, selection order
            keep = f.one("Reshape", [f.one("Transpose", [valids], perm=[1, 0]), flat])
            anchor_sel = f.one("Compress", [f.one("Reshape", [picks_by_row, flat]), keep], axis=0)
            if regular:
                grid = f.one("Expand", [_i64(f, np.arange(classes).reshape(classes, 1)),
                                        f.one("Shape", [picks_by_row])])
                class_sel = f.one("Compress", [f.one("Reshape", [grid, flat]), keep], axis=0)
                one_col = _i64(f, [1])
                pairs = f.one("Concat", [f.one("Unsqueeze", [anchor_sel, one_col]),
                                         f.one("Unsqueeze", [class_sel, one_col])], axis=1)
                score_sel = f.one("GatherND", [sn, pairs])  # [K]
                k = f.one("Min", [f.one("Shape", [score_sel]), _i64(f, [max_detections])])
                # TopK: descending, lower position first on ties = lower class, then lower anchor
                _, order = f.add("TopK", [f.one("Cast", [score_sel], to=TensorProto.FLOAT), k],
                                 [f.fresh("top"), f.fresh("order")], axis=0, largest=1, sorted=1)
                out_scores = f.one("Gather", [score_sel, order], axis=0)
                out_classes = f.one("Gather", [class_sel, order], axis=0)
                out_boxes = f.one("Gather", [bn, f.one("Gather", [anchor_sel, order], axis=0)], axis=0)
                found = k
            else:
                per_anchor = min(max_classes, classes)
                anchor_scores = f.one("Gather", [sn, anchor_sel], axis=0)  # [K, C]
                _, order = f.add("TopK", [f.one("Cast", [anchor_scores], to=TensorProto.FLOAT), _i64(f, [per_anchor])],
                                 [f.fresh("top"), f.fresh("order")], axis=1, largest=1, sorted=1)
                out_scores = f.one("Reshape", [f.one("GatherElements", [anchor_scores, order], axis=1), flat])
                out_classes = f.one("Reshape", [order, flat])
                kept_boxes = f.one("Unsqueeze", [f.one("Gather", [bn, anchor_sel], axis=0), _i64(f, [1])])
                out_boxes = f.one("Reshape", [f.one("Expand", [kept_boxes, _i64(f, [1, per_anchor, 1])]),
                                              _i64(f, [-1, 4])])
                found = f.one("Mul", [f.one("Shape", [anchor_sel]), _i64(f, [per_anchor])])
            missing = f.one("Sub", [_i64(f, [rows_out]), found])
            pads_1d = f.one("Concat", [_i64(f, [0]), missing], axis=0)
            pads_2d = f.one("Concat", [_i64(f, [0, 0]), missing, _i64(f, [0])], axis=0)
            axis0 = _i64(f, [0])
            results[0].append(f.one("Unsqueeze", [f.one("Pad", [out_boxes, pads_2d]), axis0]))
            results[1].append(f.one("Unsqueeze", [f.one("Pad", [out_classes, pads_1d]), axis0]))
            results[2].append(f.one("Unsqueeze", [f.one("Pad", [out_scores, pads_1d]), axis0]))
            results[3].append(found)
        for k, parts in enumerate(results):
            joined = parts[0] if batch == 1 else f.one("Concat", parts, axis=0)
            f.one("Cast", [joined], f"y{k}", to=_onnx_elem(out_dtypes[k]))

    emit_custom(ctx, build)
