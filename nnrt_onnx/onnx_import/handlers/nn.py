"""Convolution, pooling, normalisation and dense layers: NCHW ONNX nodes onto NHWC NNRt ops.

An NHWC op is emitted between two transposes (NCHW->NHWC before, NHWC->NCHW after); weights are
permuted offline. The layout pass then cancels the transposes between consecutive NHWC ops.
"""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ..context import NodeContext
from ..issues import DYNAMIC_SHAPE, UNSUPPORTED_ATTRIBUTE, ConversionIssue
from ..passes import NCHW_TO_NHWC, NHWC_TO_NCHW
from . import handler


def _check_2d(ctx: NodeContext, name: str) -> None:
    if ctx.rank(name) != 4:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"only 2-D (4-D NCHW) inputs are supported, {name!r} has "
                                                     f"rank {ctx.rank(name)}")


def _padding(ctx: NodeContext, kernel, strides, dilations, prefix: str) -> dict:
    """ONNX auto_pad/pads as NNRt pad mode or pad list parameters."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad == "VALID":
        return {f"{prefix}_PAD_MODE": np.asarray([1], np.int8)}
    if auto_pad == "SAME_UPPER":
        return {f"{prefix}_PAD_MODE": np.asarray([0], np.int8)}
    if auto_pad == "SAME_LOWER":
        in_h, in_w = ctx.static_shape(ctx.input(0), "input")[2:]
        pads = []
        for size, k, s, d in zip((in_h, in_w), kernel, strides, dilations):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            pads.append((total - total // 2, total // 2))  # the extra unit goes first
        (top, bottom), (left, right) = pads
        return {f"{prefix}_PAD": [top, bottom, left, right]}
    if auto_pad != "NOTSET":
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"auto_pad={auto_pad!r}")
    pads = ctx.attr("pads", [0, 0, 0, 0])
    top, left, bottom, right = (int(p) for p in pads)
    return {f"{prefix}_PAD": [top, bottom, left, right]}


def _nhwc_region(ctx: NodeContext, op: OP, extra_inputs, params, out_channels_shape=None):
    """Transpose in, run ``op`` in NHWC, transpose out to the ONNX output."""
    x = ctx.input(0)
    x_nhwc = ctx.transpose(x, NCHW_TO_NHWC)
    out = ctx.output(0)
    out_value = ctx.value(out)
    shape = None if out_value.shape is None else tuple(out_value.shape[p] for p in NCHW_TO_NHWC)
    y_nhwc = ctx.new_value(out_value.dtype, shape, f"{out}.nhwc")
    ctx.emit(op, [x_nhwc, *extra_inputs], [y_nhwc], params)
    ctx.transpose(y_nhwc, NHWC_TO_NCHW, output=out)


@handler("conv")
def conv(ctx: NodeContext) -> None:
    x = ctx.input(0)
    _check_2d(ctx, x)
    weight = ctx.constant_input(1, "the convolution weight")
    if weight.ndim != 4:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"only 2-D convolutions are supported (weight rank {weight.ndim})")
    out_c, in_per_group, kh, kw = weight.shape
    group = int(ctx.attr("group", 1))
    strides = list(ctx.attr("strides", [1, 1]))
    dilations = list(ctx.attr("dilations", [1, 1]))
    kernel_shape = ctx.attr("kernel_shape", [kh, kw])
    if list(kernel_shape) != [kh, kw]:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"kernel_shape {kernel_shape} disagrees with the weight {weight.shape}")
    bias = ctx.optional_constant(2, "the convolution bias")
    if bias is None:
        bias = np.zeros(out_c, weight.dtype)
    in_c = ctx.value(x).shape[1]
    depthwise = group > 1 and in_per_group == 1 and in_c == group
    prefix = "OH_NN_DEPTHWISE_CONV2D_NATIVE" if depthwise else "OH_NN_CONV2D"
    params = {f"{prefix}_STRIDES": strides, f"{prefix}_DILATION": dilations,
              **_padding(ctx, (kh, kw), strides, dilations, prefix)}
    if not depthwise and group != 1:
        params["OH_NN_CONV2D_GROUP"] = group
    w_nhwc = ctx.constant(np.ascontiguousarray(weight.transpose(0, 2, 3, 1)), f"{ctx.input(1)}.ohwi")
    b = ctx.constant(bias.astype(weight.dtype), f"{ctx.name}.bias")
    _nhwc_region(ctx, OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE if depthwise else OP.OH_NN_OPS_CONV2D, [w_nhwc, b], params)


def _pool(ctx: NodeContext, op: OP, prefix: str) -> None:
    x = ctx.input(0)
    _check_2d(ctx, x)
    kernel = list(ctx.attr("kernel_shape"))
    if len(kernel) != 2:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"only 2-D pooling is supported (kernel_shape {kernel})")
    strides = list(ctx.attr("strides", [1, 1]))
    dilations = list(ctx.attr("dilations", [1, 1]))
    if dilations != [1, 1]:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"dilations {dilations}: NNRt pooling has no dilation")
    if op == OP.OH_NN_OPS_MAX_POOL:
        ctx.require_attr("storage_order", [0], 0)
        if len(ctx.node.output) > 1 and ctx.node.output[1]:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "the Indices output of MaxPool is not supported")
    else:
        ctx.require_attr("count_include_pad", [0], 0)
    params = {f"{prefix}_KERNEL_SIZE": kernel, f"{prefix}_STRIDE": strides,
              f"{prefix}_ROUND_MODE": int(ctx.attr("ceil_mode", 0)),
              **_padding(ctx, kernel, strides, dilations, prefix)}
    _nhwc_region(ctx, op, [], params)


@handler("max_pool")
def max_pool(ctx: NodeContext) -> None:
    _pool(ctx, OP.OH_NN_OPS_MAX_POOL, "OH_NN_MAX_POOL")


@handler("average_pool")
def average_pool(ctx: NodeContext) -> None:
    _pool(ctx, OP.OH_NN_OPS_AVG_POOL, "OH_NN_AVG_POOL")


@handler("global_average_pool")
def global_average_pool(ctx: NodeContext) -> None:
    _check_2d(ctx, ctx.input(0))
    _nhwc_region(ctx, OP.OH_NN_OPS_AVG_POOL, [], {"OH_NN_AVG_POOL_GLOBAL": True})


@handler("global_max_pool")
def global_max_pool(ctx: NodeContext) -> None:
    _check_2d(ctx, ctx.input(0))
    _nhwc_region(ctx, OP.OH_NN_OPS_MAX_POOL, [], {"OH_NN_MAX_POOL_GLOBAL": True})


@handler("batch_normalization")
def batch_normalization(ctx: NodeContext) -> None:
    """Inference BatchNormalization on the channel axis 1: NNRt's BATCH_NORM normalises the last axis."""
    if int(ctx.attr("training_mode", 0)):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "training_mode=1 is not supported (inference only)")
    ctx.attr("momentum")  # training-only
    ctx.attr("spatial", 1)
    if len([o for o in ctx.node.output if o]) > 1:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "running mean/var outputs (training) are not supported")
    x = ctx.input(0)
    rank = ctx.rank(x)
    stats = [ctx.input(i) for i in range(1, 5)]
    params = {"OH_NN_BATCH_NORM_EPSILON": float(ctx.attr("epsilon", 1e-5))}
    if rank == 2:
        ctx.emit(OP.OH_NN_OPS_BATCH_NORM, [x, *stats], [ctx.output(0)], params)
        return
    to_last = (0, *range(2, rank), 1)
    back = (0, rank - 1, *range(1, rank - 1))
    x_last = ctx.transpose(x, to_last)
    out = ctx.output(0)
    out_value = ctx.value(out)
    shape = None if out_value.shape is None else tuple(out_value.shape[p] for p in to_last)
    y_last = ctx.new_value(out_value.dtype, shape, f"{out}.nhwc")
    ctx.emit(OP.OH_NN_OPS_BATCH_NORM, [x_last, *stats], [y_last], params)
    ctx.transpose(y_last, back, output=out)


@handler("lrn")
def lrn(ctx: NodeContext) -> None:
    """ONNX LRN divides alpha by size and spans size channels; NNRt (TF) uses depth_radius and a raw alpha."""
    x = ctx.input(0)
    _check_2d(ctx, x)
    size = int(ctx.attr("size"))
    if size % 2 == 0:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"size={size}: an even window has no NNRt equivalent")
    alpha = float(ctx.attr("alpha", 1e-4))
    params = {"OH_NN_LRN_DEPTH_RADIUS": (size - 1) // 2, "OH_NN_LRN_BIAS": float(ctx.attr("bias", 1.0)),
              "OH_NN_LRN_ALPHA": alpha / size, "OH_NN_LRN_BETA": float(ctx.attr("beta", 0.75))}
    _nhwc_region(ctx, OP.OH_NN_OPS_LRN, [], params)


@handler("gemm")
def gemm(ctx: NodeContext) -> None:
    """Y = alpha * A' B' + beta * C: FULL_CONNECTION when B and C are constants, else MATMUL (+ MUL/ADD)."""
    a, b = ctx.input(0), ctx.input(1)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    trans_a, trans_b = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    if ctx.rank(a) != 2:
        raise ConversionIssue(DYNAMIC_SHAPE, "Gemm needs a 2-D A")
    out = ctx.output(0)
    out_value = ctx.value(out)
    if trans_a:
        a = ctx.transpose(a, (1, 0))
    b_value = ctx.value(b)
    c = ctx.input(2) if ctx.has_input(2) else None
    c_value = ctx.value(c) if c else None
    if b_value.data is not None and (c is None or (c_value.data is not None and c_value.data.ndim <= 1)):
        weight = b_value.data if trans_b else b_value.data.T
        weight = np.ascontiguousarray(weight * np.asarray(alpha, weight.dtype)) if alpha != 1 else np.ascontiguousarray(weight)
        inputs = [a, ctx.constant(weight, f"{b}.weight")]
        if c is not None:
            bias = np.broadcast_to(c_value.data * np.asarray(beta, c_value.data.dtype), (weight.shape[0],))
            inputs.append(ctx.constant(np.ascontiguousarray(bias), f"{ctx.name}.bias"))
        ctx.emit(OP.OH_NN_OPS_FULL_CONNECTION, inputs, [out],
                 {"OH_NN_FULL_CONNECTION_HAS_BIAS": c is not None})
        return
    product = ctx.new_value(out_value.dtype, out_value.shape, f"{out}.matmul") if (alpha != 1 or c) else out
    ctx.emit(OP.OH_NN_OPS_MATMUL, [a, b], [product], {"OH_NN_MATMUL_TRANSPOSE_B": bool(trans_b)})
    if alpha != 1:
        scaled = ctx.new_value(out_value.dtype, out_value.shape, f"{out}.alpha") if c else out
        ctx.emit(OP.OH_NN_OPS_MUL, [product, ctx.constant(np.asarray(alpha, out_value.dtype))], [scaled])
        product = scaled
    if c:
        if beta != 1:
            scaled_c = ctx.new_value(c_value.dtype, c_value.shape, f"{c}.beta")
            ctx.emit(OP.OH_NN_OPS_MUL, [c, ctx.constant(np.asarray(beta, c_value.dtype))], [scaled_c])
            c = scaled_c
        ctx.emit(OP.OH_NN_OPS_ADD, [product, c], [out])
