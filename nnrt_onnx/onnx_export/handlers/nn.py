"""Export of convolution, pooling, dense, normalisation and the structural ops the importer handles itself."""
from __future__ import annotations

import numpy as np

from ..context import ExportContext, ExportIssue
from . import exporter


def _pads_and_mode(ctx: ExportContext) -> dict:
    mode = ctx.args.get("pad_mode", -1)
    if mode == 0:
        return {"auto_pad": "SAME_UPPER"}
    if mode in (1, 2):
        return {"auto_pad": "VALID"}
    top, bottom, left, right = (int(v) for v in ctx.args.get("pad_list", [0, 0, 0, 0]))
    return {"pads": [top, left, bottom, right]}


def _pair(values, what: str) -> list[int]:
    values = [int(v) for v in values]
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise ExportIssue(f"{what} {values} must have 2 values")
    return values


@exporter("OH_NN_OPS_CONV2D", nchw=True)
def conv2d(ctx: ExportContext) -> None:
    weight = ctx.constant_input(1, "the weight")  # [out, kH, kW, in/group]
    w = ctx.constant(np.ascontiguousarray(weight.transpose(0, 3, 1, 2)), f"{ctx.input(1)}.oihw")
    group = int(ctx.args.get("group", 1))
    ctx.add("Conv", [ctx.input(0), w, ctx.input(2)], [ctx.result(0)], main=True,
            strides=_pair(ctx.args["strides"], "strides"), dilations=_pair(ctx.args["dilation"], "dilation"),
            group=group, kernel_shape=list(weight.shape[1:3]), **_pads_and_mode(ctx))


@exporter("OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE", nchw=True)
def depthwise(ctx: ExportContext) -> None:
    weight = ctx.constant_input(1, "the weight")  # [out = mult * in, kH, kW, 1]
    channels = ctx.value(ctx.input(0)).shape[1]
    w = ctx.constant(np.ascontiguousarray(weight.transpose(0, 3, 1, 2)), f"{ctx.input(1)}.oihw")
    ctx.add("Conv", [ctx.input(0), w, ctx.input(2)], [ctx.result(0)], main=True,
            strides=_pair(ctx.args["strides"], "strides"), dilations=_pair(ctx.args["dilation"], "dilation"),
            group=int(channels), kernel_shape=list(weight.shape[1:3]), **_pads_and_mode(ctx))


def _pool(ctx: ExportContext, op_type: str) -> None:
    if ctx.args.get("global_pool"):
        ctx.add(f"Global{op_type}", [ctx.input(0)], [ctx.result(0)], main=True)
        return
    kernel = _pair(ctx.args["kernel_size"], "kernel_size")
    attrs = {"kernel_shape": kernel, "strides": _pair(ctx.args["stride"], "stride"),
             "ceil_mode": int(ctx.args.get("round_mode", 0)), **_pads_and_mode(ctx)}
    if op_type == "AveragePool":
        attrs["count_include_pad"] = 0
    ctx.add(op_type, [ctx.input(0)], [ctx.result(0)], main=True, **attrs)


@exporter("OH_NN_OPS_MAX_POOL", nchw=True)
def max_pool(ctx: ExportContext) -> None:
    _pool(ctx, "MaxPool")


@exporter("OH_NN_OPS_AVG_POOL", nchw=True)
def avg_pool(ctx: ExportContext) -> None:
    _pool(ctx, "AveragePool")


@exporter("OH_NN_OPS_LRN", nchw=True)
def lrn(ctx: ExportContext) -> None:
    radius = int(ctx.args["depth_radius"])
    size = 2 * radius + 1
    if ctx.args.get("norm_region", 0) != 0:
        raise ExportIssue("LRN norm_region other than ACROSS_CHANNELS")
    ctx.add("LRN", [ctx.input(0)], [ctx.result(0)], main=True, size=size, alpha=float(ctx.args["alpha"]) * size,
            beta=float(ctx.args["beta"]), bias=float(ctx.args["bias"]))


@exporter("OH_NN_OPS_FULL_CONNECTION")
def full_connection(ctx: ExportContext) -> None:
    x = ctx.input(0)
    shape = ctx.value(x).shape
    if ctx.args.get("use_axis"):
        raise ExportIssue("FULL_CONNECTION with use_axis is not exported yet")
    if shape is None or len(shape) != 2:
        in_features = ctx.value(ctx.input(1)).shape[1]
        flat = ctx.fresh(f"{x}.flat")
        ctx.add("Reshape", [x, ctx.constant(np.asarray([-1, in_features], np.int64), "fc_shape")], [flat])
        x = flat
    inputs = [x, ctx.input(1)] + ([ctx.input(2)] if len(ctx.node.inputs) > 2 else [])
    ctx.add("Gemm", inputs, [ctx.result(0)], main=True, transB=1)


@exporter("OH_NN_OPS_MATMUL")
def matmul(ctx: ExportContext) -> None:
    a, b = ctx.input(0), ctx.input(1)
    for flag, name in (("transpose_a", "a"), ("transpose_b", "b")):
        if ctx.args.get(flag):
            source = a if name == "a" else b
            rank = len(ctx.value(source).shape)
            if rank >= 2:
                perm = list(range(rank - 2)) + [rank - 1, rank - 2]
                moved = ctx.fresh(f"{source}.T")
                ctx.add("Transpose", [source], [moved], perm=perm)
                a, b = (moved, b) if name == "a" else (a, moved)
    ctx.add("MatMul", [a, b], [ctx.result(0)], main=True)


@exporter("OH_NN_OPS_BATCH_NORM")
def batch_norm(ctx: ExportContext) -> None:
    """Channel-last inference batch norm as x * a + b (a, b from the statistics when they are constants)."""
    stats = [ctx.value(ctx.input(i)).data for i in range(1, 5)]
    eps = float(ctx.args["epsilon"])
    if any(s is None for s in stats):
        raise ExportIssue("BATCH_NORM with non-constant statistics is not exported yet")
    scale, offset, mean, var = (s.astype(np.float64) for s in stats)
    dtype = ctx.value(ctx.input(0)).dtype
    a = scale / np.sqrt(var + eps)
    b = offset - mean * a
    scaled = ctx.fresh(f"{ctx.output(0)}.scaled")
    ctx.add("Mul", [ctx.input(0), ctx.constant(a.astype(dtype), "bn_a")], [scaled], main=True)
    ctx.add("Add", [scaled, ctx.constant(b.astype(dtype), "bn_b")], [ctx.result(0)])


@exporter("OH_NN_OPS_SOFTMAX")
def softmax(ctx: ExportContext) -> None:
    _softmax(ctx, "Softmax")


@exporter("OH_NN_OPS_LOG_SOFTMAX")
def log_softmax(ctx: ExportContext) -> None:
    _softmax(ctx, "LogSoftmax")


def _softmax(ctx: ExportContext, op_type: str) -> None:
    if ctx.opset < 13:
        raise ExportIssue(f"{op_type} on one axis needs opset >= 13")
    ctx.add(op_type, [ctx.input(0)], [ctx.result(0)], main=True, axis=int(ctx.args["axis"]))


@exporter("OH_NN_OPS_CONCAT")
def concat(ctx: ExportContext) -> None:
    ctx.add("Concat", list(ctx.node.inputs), [ctx.result(0)], main=True, axis=int(ctx.args["axis"]))


@exporter("OH_NN_OPS_RESHAPE")
def reshape(ctx: ExportContext) -> None:
    ctx.add("Reshape", [ctx.input(0), ctx.input(1)], [ctx.result(0)], main=True)


@exporter("OH_NN_OPS_GATHER")
def gather(ctx: ExportContext) -> None:
    axis = int(ctx.constant_input(2, "the axis").reshape(-1)[0])
    ctx.add("Gather", [ctx.input(0), ctx.input(1)], [ctx.result(0)], main=True, axis=axis)
