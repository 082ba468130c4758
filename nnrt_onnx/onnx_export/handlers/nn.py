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


# FULL_CONNECTION, MATMUL, BATCH_NORM, SOFTMAX, LOG_SOFTMAX, CONCAT, RESHAPE and GATHER: movement_reduce.py
