"""Converters of the normalization family: BatchNormalization, LRN, LayerNormalization, InstanceNormalization,
GroupNormalization, LpNormalization, MeanVarianceNormalization, RMSNormalization, Softmax, LogSoftmax and Hardmax;
and onnxruntime's contrib normalizations: SkipLayerNormalization, SkipSimplifiedLayerNormalization,
EmbedLayerNormalization (com.microsoft) and SimplifiedLayerNormalization (registered by onnxruntime in the default
domain).

Decisions (also stated where they are made): RMSNormalization computes stage one in the ``stash_type`` precision
(float32 for 1, float64 for 11; the ONNX function body casts there and back) or the input's when wider (float64 is
never narrowed, as in onnxruntime and the reference), as MUL, REDUCE_MEAN, ADD epsilon, SQRT, DIV, then MUL by the
scale.
The contrib normalizations compute float16 in float32 (as onnxruntime's kernels); their mean / inv_std_var outputs are
float32 with the normalised dim kept (size 1); EmbedLayerNormalization's mask_index counts the mask entries equal to
1 (zeros without a mask), as onnxruntime's CPU kernel does.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...ir.graph import Value
from ...ir.issues import DYNAMIC_SHAPE, INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE, ConversionIssue
from .. import limits
from ..context import NodeContext
from . import converts
from ._common import (
    _ONNX_FLOAT_TYPES,
    _arg_max,
    _binary,
    _cast,
    _compare,
    _const,
    _float_input,
    _float_only,
    _norm_axes,
    _norm_axis,
    _ranked_shape,
    _reduce,
    _reshape,
    _shape,
    _transpose,
    _unary,
    _unsupported,
)
from ._dims import dim_product, dims_tensor, known, reshape_to, shape_tensor

# float32 smallest normal: a norm floor that only differs from "no floor" for denormal norms
_TINY = float(np.finfo(np.float32).tiny)


# -- BatchNormalization, LRN -------------------------------------------------------------------------------------------

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


# -- LayerNormalization, InstanceNormalization, GroupNormalization -----------------------------------------------------

def _affine_operand(ctx: NodeContext, position: int, norm_shape: tuple[int, ...], fill: float, dtype,
                    what: str) -> tuple[str, str | None]:
    """gamma/beta for LAYER_NORM (exact shape ``norm_shape``) and, when the ONNX operand cannot be that (a
    non-constant tensor of another shape), the tensor to apply afterwards with MUL/ADD."""
    limits.require_shape(norm_shape, dtype, f"the {what} constant")  # built below, before anything can check it
    if not ctx.has_input(position):
        return ctx.constant(np.full(norm_shape, fill, dtype), f"{ctx.name}.{what}"), None
    name = ctx.input(position)
    value = ctx.value(name)
    if value.data is not None:
        try:
            data = np.broadcast_to(value.data.astype(dtype), norm_shape)
        except ValueError:
            raise ConversionIssue(INVALID_MODEL, f"{what} of shape {list(value.data.shape)} does not broadcast to "
                                                 f"the normalised shape {list(norm_shape)}") from None
        return ctx.constant(np.ascontiguousarray(data), f"{name}.{what}"), None
    if value.shape is not None and tuple(value.shape) == tuple(norm_shape) and value.dtype == dtype:
        return name, None
    return ctx.constant(np.full(norm_shape, fill, dtype), f"{ctx.name}.{what}"), name


def _layer_norm_core(ctx: NodeContext, x: str, axis: int, eps: float, out: str) -> None:
    """LAYER_NORM over axes ``axis..``; axis 0 runs on a [1, ...] view (NNRt wants begin_norm_axis >= 1)."""
    value = ctx.value(x)
    shape = _ranked_shape(ctx, x)
    norm_shape = tuple(shape[axis:])
    if any(d < 0 for d in norm_shape):  # LAYER_NORM's gamma has the normalised shape: decomposed instead
        _layer_norm_decomposed(ctx, x, axis, eps, out)
        return
    gamma, late_scale = _affine_operand(ctx, 1, norm_shape, 1.0, value.dtype, "scale")
    # an absent bias adds -0.0, the identity of IEEE addition (+0.0 would turn a -0.0 result into +0.0)
    beta, late_bias = _affine_operand(ctx, 2, norm_shape, -0.0, value.dtype, "bias")
    if late_scale is not None and late_bias is None and ctx.has_input(2):
        # the scale is applied after LAYER_NORM, so the bias must be too: (x_hat + b) * s is not x_hat * s + b
        beta, late_bias = ctx.constant(np.full(norm_shape, -0.0, value.dtype), f"{ctx.name}.bias"), beta
    source, begin = x, axis
    if axis == 0:
        source, begin = ctx.reshape(x, (1, *shape)), 1
    last = late_scale is None and late_bias is None and axis != 0
    y = out if last else ctx.new_value(value.dtype, _ranked_shape(ctx, source), f"{out}.normalized")
    ctx.settle(y, shape, value.dtype)
    ctx.emit(OP.OH_NN_OPS_LAYER_NORM, [source, gamma, beta], [y],
             {"OH_NN_LAYER_NORM_BEGIN_NORM_AXIS": begin, "OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS": begin,
              "OH_NN_LAYER_NORM_EPSILON": float(eps)})
    if axis == 0:
        y = _reshape(ctx, y, shape, output=out if late_scale is None and late_bias is None else None)
    if late_scale is not None:
        y = _binary(ctx, OP.OH_NN_OPS_MUL, y, late_scale, f"{out}.scaled", output=None if late_bias else out)
    if late_bias is not None:
        _binary(ctx, OP.OH_NN_OPS_ADD, y, late_bias, out, output=out)


def _normalized(ctx: NodeContext, x: str, axes, eps: float, hint: str) -> str:
    """(x - mean) / sqrt(var + eps) over ``axes`` (var the centred mean square), in float32 for float16 input (the
    stash type) and back."""
    dtype = ctx.value(x).dtype
    work = np.dtype(np.float32) if dtype == np.float16 else dtype
    xs = _cast(ctx, x, work, f"{hint}.stash")
    mean = _reduce(ctx, "MEAN", xs, axes, True, f"{hint}.mean")
    centred = _binary(ctx, OP.OH_NN_OPS_SUB, xs, mean, f"{hint}.centred")
    var = _reduce(ctx, "MEAN", _binary(ctx, OP.OH_NN_OPS_MUL, centred, centred, f"{hint}.sq"), axes, True,
                  f"{hint}.var")
    shifted = _binary(ctx, OP.OH_NN_OPS_ADD, var, _const(ctx, eps, work, "eps"), f"{hint}.var_eps")
    inverse = _unary(ctx, OP.OH_NN_OPS_RSQRT, shifted, f"{hint}.inv_std")
    return _cast(ctx, _binary(ctx, OP.OH_NN_OPS_MUL, centred, inverse, f"{hint}.normalized"), dtype, f"{hint}.back")


def _layer_norm_decomposed(ctx: NodeContext, x: str, axis: int, eps: float, out: str) -> None:
    """LayerNormalization over dims of which some are dynamic: the normalisation, then scale and bias broadcast
    (they have the normalised shape, or broadcast to it)."""
    rank = ctx.rank(x)
    y = _normalized(ctx, x, list(range(axis, rank)), eps, out)
    scale = ctx.input(1)
    bias = ctx.input(2) if ctx.has_input(2) else None
    y = _binary(ctx, OP.OH_NN_OPS_MUL, y, scale, f"{out}.scaled", output=None if bias else out)
    if bias is not None:
        _binary(ctx, OP.OH_NN_OPS_ADD, y, bias, out, output=out)


@converts("LayerNormalization")
def layer_normalization(ctx: NodeContext) -> None:
    """LAYER_NORM (gamma/beta broadcast to the normalised shape); the optional Mean and InvStdDev outputs are
    computed with REDUCE_MEAN / RSQRT in the stash type."""
    x = ctx.input(0)
    rank = ctx.rank(x)
    _float_only(ctx, x)
    axis = _norm_axis(ctx, ctx.attr("axis", -1), rank)
    eps = float(ctx.attr("epsilon", 1e-5))
    stash = int(ctx.attr("stash_type", 1))
    _layer_norm_core(ctx, x, axis, eps, ctx.output(0))
    mean_out = ctx.output(1) if len(ctx.node.output) > 1 and ctx.node.output[1] else None
    inv_out = ctx.output(2) if len(ctx.node.output) > 2 and ctx.node.output[2] else None
    if mean_out is None and inv_out is None:
        return
    from onnx import helper

    try:
        stash_dtype = np.dtype(helper.tensor_dtype_to_np_dtype(stash))
    except (KeyError, TypeError, ValueError):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"stash_type={stash} is not a known element type") from None
    if stash_dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"stash_type={stash} ({stash_dtype}) is not a float type")
    xs = _cast(ctx, x, stash_dtype, f"{x}.stash")
    axes = list(range(axis, rank))
    mean = _reduce(ctx, "MEAN", xs, axes, True, f"{ctx.name}.mean", output=mean_out)
    if inv_out is None:
        return
    centred = _binary(ctx, OP.OH_NN_OPS_SUB, xs, mean, f"{ctx.name}.centred")
    var = _reduce(ctx, "MEAN", _binary(ctx, OP.OH_NN_OPS_MUL, centred, centred, f"{ctx.name}.sq"), axes, True,
                  f"{ctx.name}.var")
    shifted = _binary(ctx, OP.OH_NN_OPS_ADD, var, _const(ctx, eps, stash_dtype, "eps"), f"{ctx.name}.var_eps")
    _unary(ctx, OP.OH_NN_OPS_RSQRT, shifted, inv_out, output=inv_out)


def _channel_last_region(ctx: NodeContext, op: OP, x: str, extra, params, out: str) -> None:
    rank = ctx.rank(x)
    to_last = (0, *range(2, rank), 1)
    back = (0, rank - 1, *range(1, rank - 1))
    x_last = ctx.transpose(x, to_last)
    out_value = ctx.value(out)
    shape = ctx.value(x_last).shape
    y_last = ctx.new_value(out_value.dtype, shape, f"{out}.nhwc")
    ctx.emit(op, [x_last, *extra], [y_last], params)
    _transpose(ctx, y_last, back, output=out)


@converts("InstanceNormalization")
def instance_normalization(ctx: NodeContext) -> None:
    """INSTANCE_NORM (channel last) between transposes."""
    x = ctx.input(0)
    _float_only(ctx, x)
    rank = ctx.rank(x)
    if rank < 3:
        raise ConversionIssue(INVALID_MODEL, f"InstanceNormalization needs an (N, C, D1, ...) input, got rank {rank}")
    eps = float(ctx.attr("epsilon", 1e-5))
    _channel_last_region(ctx, OP.OH_NN_OPS_INSTANCE_NORM, x, [ctx.input(1), ctx.input(2)],
                         {"OH_NN_INSTANCE_NORM_EPSILON": eps}, ctx.output(0))


@converts("GroupNormalization")
def group_normalization(ctx: NodeContext) -> None:
    """(N, C, ...) -> (N, G, C/G * spatial), LAYER_NORM over the last axis, back, then per-channel (opset 21) or
    per-group (opset 18) scale and bias."""
    x = ctx.input(0)
    out = ctx.output(0)
    _float_only(ctx, x)
    value = ctx.value(x)
    groups = ctx.attr("num_groups")
    if groups is None:
        raise ConversionIssue(INVALID_MODEL, "GroupNormalization needs num_groups")
    groups = int(groups)
    eps = float(ctx.attr("epsilon", 1e-5))
    ctx.attr("stash_type", 1)  # the normalisation is computed in float32 (float64 for float64) anyway
    shape = _ranked_shape(ctx, x)
    if len(shape) < 2:
        raise ConversionIssue(INVALID_MODEL, f"GroupNormalization needs an (N, C, ...) input, got rank {len(shape)}")
    n, c = shape[0], shape[1]
    if c < 0:  # (the channels come from the scale's length then)
        scale_shape = ctx.value(ctx.input(1)).shape
        c = scale_shape[0] if ctx.opset >= 21 and scale_shape and scale_shape[0] >= 0 else -1
    if c < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, f"GroupNormalization needs the number of channels, got {list(shape)}")
    if groups <= 0 or c % groups:
        raise ConversionIssue(INVALID_MODEL, f"num_groups={groups} does not divide the {c} channels")
    if known(shape[1:]):
        m = c // groups * int(prod(shape[2:]))
        limits.require_shape([2, m], value.dtype, "GroupNormalization's unit scale and zero bias")  # built below
        grouped = ctx.reshape(x, (n, groups, m))
        normalized = ctx.new_value(value.dtype, (n, groups, m), f"{out}.grouped")
        ctx.emit(OP.OH_NN_OPS_LAYER_NORM, [grouped, ctx.constant(np.ones((m,), value.dtype), f"{ctx.name}.ones"),
                                           ctx.constant(np.zeros((m,), value.dtype), f"{ctx.name}.zeros")],
                 [normalized], {"OH_NN_LAYER_NORM_BEGIN_NORM_AXIS": 2, "OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS": 2,
                                "OH_NN_LAYER_NORM_EPSILON": eps})
    else:  # dynamic spatial dims: [N, G, -1] (its shape read at run time when N is dynamic too), decomposed
        batch = n if n >= 0 else dims_tensor(ctx, x, [0])
        grouped = reshape_to(ctx, x, [batch, groups, -1], f"{out}.grouped")
        normalized = _normalized(ctx, grouped, [2], eps, f"{out}.grouped")
    scale, bias = ctx.input(1), ctx.input(2)
    per_channel = ctx.opset >= 21
    if not per_channel:
        scale_data, bias_data = ctx.value(scale).data, ctx.value(bias).data
        if scale_data is not None and bias_data is not None:  # per-group constants: expand to channels
            scale = ctx.constant(np.repeat(scale_data.reshape(-1), c // groups), f"{scale}.channels")
            bias = ctx.constant(np.repeat(bias_data.reshape(-1), c // groups), f"{bias}.channels")
            per_channel = True
    if per_channel:
        y = reshape_to(ctx, normalized, [shape_tensor(ctx, x)], f"{out}.ungrouped")
        affine_shape = (c, *([1] * (len(shape) - 2)))
    else:
        y = normalized
        affine_shape = (groups, 1)
    scaled = _binary(ctx, OP.OH_NN_OPS_MUL, y, ctx.reshape(scale, affine_shape), f"{out}.scaled")
    if per_channel:
        _binary(ctx, OP.OH_NN_OPS_ADD, scaled, ctx.reshape(bias, affine_shape), out, output=out)
    else:
        shifted = _binary(ctx, OP.OH_NN_OPS_ADD, scaled, ctx.reshape(bias, affine_shape), f"{out}.shifted")
        reshape_to(ctx, shifted, [shape_tensor(ctx, x)], f"{out}.ungrouped", output=out)


# -- LpNormalization, MeanVarianceNormalization, RMSNormalization ------------------------------------------------------

@converts("LpNormalization")
def lp_normalization(ctx: NodeContext) -> None:
    """p=2: L2_NORMALIZE; p=1: x / max(sum|x|, tiny). A zero vector stays zero (as in onnxruntime)."""
    x = ctx.input(0)
    out = ctx.output(0)
    _float_only(ctx, x)
    rank = ctx.rank(x)
    axis = _norm_axis(ctx, ctx.attr("axis", -1), rank)
    p = int(ctx.attr("p", 2))
    if p == 2:
        ctx.settle(out, ctx.value(x).shape, ctx.value(x).dtype)
        ctx.emit(OP.OH_NN_OPS_L2_NORMALIZE, [x], [out],
                 {"OH_NN_L2_NORMALIZE_AXIS": [axis], "OH_NN_L2_NORMALIZE_EPSILON": _TINY})
        return
    if p != 1:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"p={p} is not supported (1 or 2)")
    dtype = ctx.value(x).dtype
    norm = _reduce(ctx, "SUM", _unary(ctx, OP.OH_NN_OPS_ABS, x, f"{out}.abs"), [axis], True, f"{out}.norm")
    floor = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, norm, _const(ctx, _TINY if dtype != np.float16 else 6e-8, dtype,
                                                                  "tiny"), f"{out}.floored")
    _binary(ctx, OP.OH_NN_OPS_DIV, x, floor, out, output=out)


@converts("MeanVarianceNormalization")
def mean_variance_normalization(ctx: NodeContext) -> None:
    """(x - mean) / (sqrt(var) + 1e-9) over ``axes`` (default [0, 2, 3]); var is the centred mean square."""
    x = ctx.input(0)
    out = ctx.output(0)
    _float_only(ctx, x)
    rank = ctx.rank(x)
    axes = _norm_axes(ctx, ctx.attr("axes", [0, 2, 3]), rank)
    dtype = ctx.value(x).dtype
    mean = _reduce(ctx, "MEAN", x, axes, True, f"{out}.mean")
    centred = _binary(ctx, OP.OH_NN_OPS_SUB, x, mean, f"{out}.centred")
    var = _reduce(ctx, "MEAN", _binary(ctx, OP.OH_NN_OPS_MUL, centred, centred, f"{out}.sq"), axes, True,
                  f"{out}.var")
    std = _unary(ctx, OP.OH_NN_OPS_SQRT, var, f"{out}.std")
    denominator = _binary(ctx, OP.OH_NN_OPS_ADD, std, _const(ctx, 1e-9, dtype, "eps"), f"{out}.std_eps")
    _binary(ctx, OP.OH_NN_OPS_DIV, centred, denominator, out, output=out)


@converts("RMSNormalization")
def rms_normalization(ctx: NodeContext) -> None:
    """Y = X / sqrt(mean(X^2 over axis..) + epsilon) * scale; stage one in the stash_type precision."""
    x, scale = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    dtype = _float_input(ctx, x)
    scale_dtype = _float_input(ctx, scale)
    shape = _ranked_shape(ctx, x)
    rank = len(shape)
    if rank == 0:
        raise ConversionIssue(INVALID_MODEL, "RMSNormalization of a scalar")
    axis = _norm_axis(ctx, ctx.attr("axis", -1), rank)
    epsilon = float(ctx.attr("epsilon", 1e-5))
    stash_type = int(ctx.attr("stash_type", 1))
    if stash_type not in (1, 11):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"stash_type={stash_type} is not supported (1 = float32, "
                                                     "11 = float64)")
    stash = np.dtype(_ONNX_FLOAT_TYPES[stash_type])
    if dtype.itemsize > stash.itemsize:  # float64 stays float64 (onnxruntime and the reference do not narrow it)
        stash = dtype
    xs = _cast(ctx, x, stash, f"{out}.stash")
    squared = _binary(ctx, OP.OH_NN_OPS_MUL, xs, xs, f"{out}.squared")
    mean = _reduce(ctx, "MEAN", squared, list(range(axis, rank)), True, f"{out}.mean_square")
    shifted = _binary(ctx, OP.OH_NN_OPS_ADD, mean, _const(ctx, epsilon, stash, "epsilon"), f"{out}.plus_eps")
    rms = _unary(ctx, OP.OH_NN_OPS_SQRT, shifted, f"{out}.rms")
    normalized = _binary(ctx, OP.OH_NN_OPS_DIV, xs, rms, f"{out}.normalized")
    normalized = _cast(ctx, normalized, dtype, f"{out}.normalized_back")
    normalized = _cast(ctx, normalized, scale_dtype, f"{out}.normalized_v")
    scale_shape = _ranked_shape(ctx, scale)
    if len(scale_shape) > rank or any(s not in (1, d) and s >= 0 and d >= 0
                                      for s, d in zip(reversed(scale_shape), reversed(shape))):
        raise ConversionIssue(INVALID_MODEL, f"scale shape {list(scale_shape)} does not broadcast to the "
                                             f"input shape {list(shape)}")
    _binary(ctx, OP.OH_NN_OPS_MUL, normalized, scale, out, output=out)


# -- Softmax, LogSoftmax, Hardmax --------------------------------------------------------------------------------------

@converts("LogSoftmax", "Softmax")
def softmax(ctx: NodeContext) -> None:
    """Softmax/LogSoftmax: opset >= 13 normalises one axis; older opsets flatten from ``axis`` on."""
    op = OP.OH_NN_OPS_SOFTMAX if ctx.node.op_type == "Softmax" else OP.OH_NN_OPS_LOG_SOFTMAX
    key = "OH_NN_SOFTMAX_AXIS" if op == OP.OH_NN_OPS_SOFTMAX else "OH_NN_LOG_SOFTMAX_AXIS"
    x = ctx.input(0)
    rank = ctx.rank(x)
    ctx.settle(ctx.output(0), ctx.value(x).shape, ctx.value(x).dtype)  # the input's (where inference left it unknown)
    axis = int(ctx.attr("axis", -1 if ctx.opset >= 13 else 1))
    axis = axis + rank if axis < 0 else axis
    if ctx.opset >= 13 or axis == rank - 1:
        ctx.emit(op, [x], [ctx.output(0)], {key: axis})
        return
    flat = _flattened(ctx, x, axis, f"{ctx.output(0)}.flat")
    out_value = ctx.value(ctx.output(0))
    flat_out = ctx.new_value(out_value.dtype, ctx.value(flat).shape, f"{ctx.output(0)}.flat")
    ctx.emit(op, [flat], [flat_out], {key: 1})
    reshape_to(ctx, flat_out, [shape_tensor(ctx, x)], f"{ctx.output(0)}.unflat", output=ctx.output(0))


def _flattened(ctx: NodeContext, x: str, axis: int, hint: str) -> str:
    """``x`` as [prod(dims before axis), prod(dims from axis)] (opsets < 13), products read at run time when
    dynamic."""
    rank = ctx.rank(x)
    return reshape_to(ctx, x, [dim_product(ctx, x, range(axis)), dim_product(ctx, x, range(axis, rank))], hint)


@converts("Hardmax")
def hardmax(ctx: NodeContext) -> None:
    """1 at the first maximum along the axis, 0 elsewhere: ARG_MAX + ONE_HOT. Before opset 13 the input is
    flattened to 2-D at ``axis`` (default 1) first."""
    x = ctx.input(0)
    out = ctx.output(0)
    dtype = ctx.value(x).dtype
    _float_only(ctx, x)
    rank = ctx.rank(x)
    if rank == 0:
        raise ConversionIssue(INVALID_MODEL, "Hardmax of a scalar")
    axis = _norm_axis(ctx, ctx.attr("axis", -1 if ctx.opset >= 13 else 1), rank)
    source, target = x, out
    if ctx.opset < 13 and axis != rank - 1:
        source = _flattened(ctx, x, axis, f"{out}.flat")
        target = ctx.new_value(dtype, ctx.value(source).shape, f"{out}.flat")
        axis = 1
    n = _ranked_shape(ctx, source)[axis]
    # ONE_HOT's depth: the axis's size, read at run time when dynamic
    depth = _const(ctx, n, np.int32, "depth") if n >= 0 else ctx.emit_to(
        OP.OH_NN_OPS_SQUEEZE, [_cast(ctx, dims_tensor(ctx, source, [axis]), np.int32, f"{out}.depth")], np.int32, (),
        f"{out}.depth_scalar")
    idx = _arg_max(ctx, source, axis, False, np.int32, f"{out}.index")
    ctx.settle(target, _ranked_shape(ctx, source), dtype)
    ctx.emit(OP.OH_NN_OPS_ONE_HOT, [idx, depth, _const(ctx, 1, dtype, "on"), _const(ctx, 0, dtype, "off")], [target],
             {"OH_NN_ONE_HOT_AXIS": axis})
    if target != out:
        reshape_to(ctx, target, [shape_tensor(ctx, x)], f"{out}.unflat", output=out)


# -- onnxruntime's contrib normalizations: SkipLayerNormalization, SkipSimplifiedLayerNormalization,
#    SimplifiedLayerNormalization (default domain), EmbedLayerNormalization -----------------------------------------

def _hidden_operand(ctx: NodeContext, position: int, hidden: int, work: np.dtype, what: str) -> str | None:
    """A 1-D (hidden,) gamma / beta / bias operand in the working dtype (None when the optional input is absent)."""
    if not ctx.has_input(position):
        return None
    name = ctx.input(position)
    value = ctx.value(name)
    if value.shape is None or tuple(value.shape) != (hidden,):
        raise ConversionIssue(INVALID_MODEL, f"{what} {name!r} has shape {value.shape}, expected ({hidden},)")
    if value.dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{what} {name!r} has dtype {value.dtype}", tensor=name)
    return _cast(ctx, name, work, f"{name}.{work.name}")


def _work_dtype(dtype: np.dtype) -> np.dtype:
    """float16 is computed in float32 (as onnxruntime's kernels do), float32/float64 in themselves."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _row_statistics(ctx: NodeContext, total: str, simplified: bool, eps: float, positions, stat_dtype) -> None:
    """The optional mean (1) and inv_std_var (2) outputs over the last axis, kept as a size-1 dim, in float32."""
    wanted = {p: ctx.output(p) for p in positions if len(ctx.node.output) > p and ctx.node.output[p]}
    if not wanted:
        return
    out = ctx.output(0)
    rank = len(_shape(ctx, total))
    axes = [rank - 1]
    if simplified and 1 in wanted:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "the mean output of SkipSimplifiedLayerNormalization is not "
                                                     "defined (RMS normalization computes no mean; onnxruntime leaves "
                                                     "it unwritten)")
    stats = _cast(ctx, total, stat_dtype, f"{out}.stats")
    eps_const = _const(ctx, eps, stat_dtype, "eps")
    if simplified:
        second = _reduce(ctx, "MEAN", _binary(ctx, OP.OH_NN_OPS_MUL, stats, stats, f"{out}.sq"), axes, True,
                         f"{out}.mean_square")
    else:
        mean = _reduce(ctx, "MEAN", stats, axes, True, f"{out}.mean", output=wanted.get(1))
        if 2 not in wanted:
            return
        centred = _binary(ctx, OP.OH_NN_OPS_SUB, stats, mean, f"{out}.centred")
        second = _reduce(ctx, "MEAN", _binary(ctx, OP.OH_NN_OPS_MUL, centred, centred, f"{out}.sq"), axes, True,
                         f"{out}.var")
    if 2 in wanted:
        shifted = _binary(ctx, OP.OH_NN_OPS_ADD, second, eps_const, f"{out}.plus_eps")
        _unary(ctx, OP.OH_NN_OPS_RSQRT, shifted, wanted[2], output=wanted[2])


def _rms_scaled(ctx: NodeContext, total: str, gamma: str, eps: float, output: str | None, hint: str) -> str:
    """total / sqrt(mean(total^2 over the last axis) + eps) * gamma."""
    rank = len(_shape(ctx, total))
    dtype = ctx.value(total).dtype
    mean_square = _reduce(ctx, "MEAN", _binary(ctx, OP.OH_NN_OPS_MUL, total, total, f"{hint}.sq"), [rank - 1], True,
                          f"{hint}.mean_square")
    rms = _unary(ctx, OP.OH_NN_OPS_SQRT, _binary(ctx, OP.OH_NN_OPS_ADD, mean_square, _const(ctx, eps, dtype, "eps"),
                                                 f"{hint}.plus_eps"), f"{hint}.rms")
    normalized = _binary(ctx, OP.OH_NN_OPS_DIV, total, rms, f"{hint}.normalized")
    return _binary(ctx, OP.OH_NN_OPS_MUL, normalized, gamma, hint, output=output)


def _skip_layer_norm(ctx: NodeContext, simplified: bool) -> None:
    """Shared by SkipLayerNormalization (input, skip, gamma, beta?, bias?) and SkipSimplifiedLayerNormalization
    (input, skip, gamma, bias?): total = input + skip (+ bias), then LAYER_NORM / RMS over the last axis."""
    x, skip = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    dtype = _float_input(ctx, x)
    if ctx.value(skip).dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"skip has dtype {ctx.value(skip).dtype}, the input {dtype}")
    shape = _shape(ctx, x, "the input")
    skip_shape = _shape(ctx, skip, "skip")
    if len(shape) not in (2, 3):
        raise ConversionIssue(INVALID_MODEL, f"the input must be 2-D or 3-D, got {list(shape)}")
    hidden = shape[-1]
    allowed = [shape] + ([shape[1:], (1, *shape[1:])] if len(shape) == 3 else [])
    if tuple(skip_shape) not in [tuple(s) for s in allowed]:
        raise ConversionIssue(INVALID_MODEL, f"skip of shape {list(skip_shape)} does not fit the input {list(shape)} "
                                             f"(same shape, or (1, S, H) / (S, H) for a 3-D input)")
    eps = float(ctx.attr("epsilon", 1e-12))
    work = _work_dtype(dtype)
    gamma = _hidden_operand(ctx, 2, hidden, work, "gamma")
    if gamma is None:
        raise ConversionIssue(INVALID_MODEL, "gamma (input #2) is required")
    beta = None if simplified else _hidden_operand(ctx, 3, hidden, work, "beta")
    bias = _hidden_operand(ctx, 3 if simplified else 4, hidden, work, "bias")
    total = _binary(ctx, OP.OH_NN_OPS_ADD, _cast(ctx, x, work, f"{x}.{work.name}"),
                    _cast(ctx, skip, work, f"{skip}.{work.name}"), f"{out}.input_skip")
    if bias is not None:
        total = _binary(ctx, OP.OH_NN_OPS_ADD, total, bias, f"{out}.input_skip_bias")
    direct = work == dtype  # write the ONNX output itself unless a cast back to float16 follows
    if simplified:
        y = _rms_scaled(ctx, total, gamma, eps, out if direct else None, f"{out}.rms_scaled")
    else:
        if beta is None:
            beta = ctx.constant(np.zeros(hidden, work), f"{ctx.name}.beta")
        y = ctx.emit_to(OP.OH_NN_OPS_LAYER_NORM, [total, gamma, beta], work, shape, f"{out}.normalized",
                        {"OH_NN_LAYER_NORM_BEGIN_NORM_AXIS": len(shape) - 1,
                         "OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS": len(shape) - 1, "OH_NN_LAYER_NORM_EPSILON": eps},
                        output=out if direct else None)
    if not direct:
        _cast(ctx, y, dtype, output=out)
    _row_statistics(ctx, total, simplified, eps, (1, 2), np.dtype(np.float32))
    if len(ctx.node.output) > 3 and ctx.node.output[3]:
        _cast(ctx, total, dtype, output=ctx.output(3))
    if len(ctx.node.output) > 4 and any(ctx.node.output[4:]):
        raise ConversionIssue(INVALID_MODEL, f"{ctx.node.op_type} has at most 4 outputs")


@converts("com.microsoft.SkipLayerNormalization")
def skip_layer_normalization(ctx: NodeContext) -> None:
    """LayerNorm(input + skip + bias) * gamma + beta over the last axis (epsilon 1e-12 by default): ADD, LAYER_NORM
    (float16 in float32); outputs mean / inv_std_var (float32, last dim kept) and input + skip + bias on request."""
    _skip_layer_norm(ctx, simplified=False)


@converts("com.microsoft.SkipSimplifiedLayerNormalization")
def skip_simplified_layer_normalization(ctx: NodeContext) -> None:
    """(input + skip + bias) / sqrt(mean of its squares + epsilon) * gamma over the last axis: ADD, MUL, REDUCE_MEAN,
    ADD, SQRT, DIV, MUL (float16 in float32); inv_std_var and input + skip + bias on request."""
    _skip_layer_norm(ctx, simplified=True)


@converts("SimplifiedLayerNormalization")
def simplified_layer_normalization(ctx: NodeContext) -> None:
    """onnxruntime's RMS normalization (default domain, contrib schema): Y as RMSNormalization (axis, epsilon,
    stash_type); the optional inv_std_var = 1 / sqrt(mean(X^2 over axis..) + epsilon) in the stash precision."""
    rms_normalization(ctx)
    if len(ctx.node.output) < 2 or not ctx.node.output[1]:
        return
    x = ctx.input(0)
    dtype = ctx.value(x).dtype
    shape = _shape(ctx, x, "the input")
    axis = _norm_axis(ctx, ctx.attr("axis", -1), len(shape))
    stash = np.dtype(_ONNX_FLOAT_TYPES[int(ctx.attr("stash_type", 1))])
    if dtype.itemsize > stash.itemsize:
        stash = dtype
    xs = _cast(ctx, x, stash, f"{x}.inv_stash")
    inv = ctx.output(1)
    mean_square = _reduce(ctx, "MEAN", _binary(ctx, OP.OH_NN_OPS_MUL, xs, xs, f"{inv}.sq"),
                          list(range(axis, len(shape))), True, f"{inv}.mean_square")
    shifted = _binary(ctx, OP.OH_NN_OPS_ADD, mean_square, _const(ctx, float(ctx.attr("epsilon", 1e-5)), stash, "eps"),
                      f"{inv}.plus_eps")
    _unary(ctx, OP.OH_NN_OPS_RSQRT, shifted, inv, output=inv)


def _embedding(ctx: NodeContext, table: str, ids: str, what: str, hidden: int, dtype) -> str:
    """GATHER rows of the (rows, hidden) ``table`` by the int32 ids (B, S) -> (B, S, hidden)."""
    value = ctx.value(table)
    shape = _shape(ctx, table, what)
    if len(shape) != 2 or shape[1] != hidden:
        raise ConversionIssue(INVALID_MODEL, f"{what} {table!r} has shape {list(shape)}, expected (rows, {hidden})")
    if value.dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"{what} {table!r} has dtype {value.dtype}, the word embedding {dtype}")
    id_value = ctx.value(ids)
    if id_value.dtype != np.int32:
        raise ConversionIssue(INVALID_MODEL, f"ids {ids!r} have dtype {id_value.dtype} (int32 only)")
    if id_value.data is not None and ((id_value.data < 0) | (id_value.data >= shape[0])).any():
        raise ConversionIssue(INVALID_MODEL, f"ids {ids!r} lie outside [0, {shape[0]}) of {what}")
    id_shape = _shape(ctx, ids, f"the ids of {what}")
    return ctx.emit_to(OP.OH_NN_OPS_GATHER, [table, ids, ctx.constant(np.asarray([0], np.int64), f"{table}.axis")],
                       dtype, (*id_shape, hidden), f"{ctx.output(0)}.{what.replace(' ', '_')}")


def _embed_layer_norm(ctx: NodeContext, word: str, position: str, segment: str | None, gamma: str, beta: str,
                      position_ids_at: int | None, mask_at: int, always_mask_index: bool) -> None:
    """Shared by EmbedLayerNormalization and QEmbedLayerNormalization (whose tables are dequantized first):
    LayerNorm(word[ids] + position[position ids or 0..S-1] + segment[segment ids]) * gamma + beta, the mask index
    and the embedding sum."""
    ids = ctx.input(0)
    out = ctx.output(0)
    ids_shape = _shape(ctx, ids, "input_ids")
    if len(ids_shape) != 2:
        raise ConversionIssue(INVALID_MODEL, f"input_ids must be 2-D (batch, sequence), got {list(ids_shape)}")
    batch, seq = ids_shape
    dtype = _float_input(ctx, word)
    word_shape = _shape(ctx, word, "word_embedding")
    if len(word_shape) != 2:
        raise ConversionIssue(INVALID_MODEL, f"word_embedding must be 2-D, got {list(word_shape)}")
    hidden = word_shape[1]
    eps = float(ctx.attr("epsilon", 1e-12))
    total = _embedding(ctx, word, ids, "word embedding", hidden, dtype)
    # positions: position_ids (B, S) or (1, S), else 0..S-1
    position_shape = _shape(ctx, position, "position_embedding")
    if position_ids_at is not None and ctx.has_input(position_ids_at):
        positions = ctx.input(position_ids_at)
        if tuple(_shape(ctx, positions, "position_ids")) not in ((batch, seq), (1, seq)):
            raise ConversionIssue(INVALID_MODEL, f"position_ids of shape {list(_shape(ctx, positions))} is not "
                                                 f"({batch}, {seq}) or (1, {seq})")
    else:
        if len(position_shape) == 2 and seq > position_shape[0]:
            raise ConversionIssue(INVALID_MODEL, f"the sequence ({seq}) is longer than the position embedding "
                                                 f"({position_shape[0]} rows)")
        positions = ctx.constant(np.arange(seq, dtype=np.int32).reshape(1, seq), f"{ctx.name}.position_ids")
    total = _binary(ctx, OP.OH_NN_OPS_ADD, total, _embedding(ctx, position, positions, "position embedding", hidden,
                                                             dtype), f"{out}.word_position")
    if ctx.has_input(1) != (segment is not None):
        raise ConversionIssue(INVALID_MODEL, "segment_ids and segment_embedding must be given together")
    if segment is not None:
        if tuple(_shape(ctx, ctx.input(1), "segment_ids")) != (batch, seq):
            raise ConversionIssue(INVALID_MODEL, f"segment_ids must have the shape of input_ids ({batch}, {seq})")
        total = _binary(ctx, OP.OH_NN_OPS_ADD, total, _embedding(ctx, segment, ctx.input(1), "segment embedding",
                                                                 hidden, dtype), f"{out}.embedding_sum")
    for name, what in ((gamma, "gamma"), (beta, "beta")):
        if _shape(ctx, name, what) != (hidden,) or ctx.value(name).dtype != dtype:
            raise ConversionIssue(INVALID_MODEL, f"{what} {name!r} must be {dtype} of shape ({hidden},)")
    ctx.emit_to(OP.OH_NN_OPS_LAYER_NORM, [total, gamma, beta], dtype, (batch, seq, hidden), out,
                {"OH_NN_LAYER_NORM_BEGIN_NORM_AXIS": 2, "OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS": 2,
                 "OH_NN_LAYER_NORM_EPSILON": eps}, output=out)
    if always_mask_index or (len(ctx.node.output) > 1 and ctx.node.output[1]):
        if len(ctx.node.output) < 2 or not ctx.node.output[1]:
            raise ConversionIssue(INVALID_MODEL, f"{ctx.node.op_type} has a mask_index output")
        mask_index = ctx.output(1)
        if ctx.has_input(mask_at):
            mask = ctx.input(mask_at)
            if ctx.value(mask).dtype != np.int32 or tuple(_shape(ctx, mask, "mask")) != (batch, seq):
                raise ConversionIssue(INVALID_MODEL, f"mask must be int32 of shape ({batch}, {seq})")
            ones = _compare(ctx, OP.OH_NN_OPS_EQUAL, mask, _const(ctx, 1, np.int32, "one"), f"{mask_index}.is_one")
            counted = _cast(ctx, ones, np.int32, f"{mask_index}.counted")
            _reduce(ctx, "SUM", counted, [1], False, mask_index, output=mask_index)
        else:
            ctx.graph.add_value(Value(mask_index, np.dtype(np.int32), (batch,), np.zeros(batch, np.int32)))
    if len(ctx.node.output) > 2 and ctx.node.output[2]:
        if always_mask_index:
            raise ConversionIssue(INVALID_MODEL, f"{ctx.node.op_type} has 2 outputs")
        _reshape(ctx, total, (batch, seq, hidden), output=ctx.output(2))


@converts("com.microsoft.EmbedLayerNormalization")
def embed_layer_normalization(ctx: NodeContext) -> None:
    """BERT's embedding layer: LayerNorm(word[input_ids] + position[position_ids or 0..S-1] + segment[segment_ids])
    * gamma + beta (GATHER, ADD, LAYER_NORM); mask_index = the number of mask entries equal to 1 per batch entry
    (EQUAL, CAST, REDUCE_SUM; zeros without a mask, as onnxruntime); embedding_sum = the sum before the norm."""
    mask_type = int(ctx.attr("mask_index_type", 1))
    if mask_type not in (0, 1):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"mask_index_type={mask_type} is not supported (0 or 1)")
    for position, what in ((5, "gamma"), (6, "beta")):
        if not ctx.has_input(position):
            raise ConversionIssue(INVALID_MODEL, f"{what} (input #{position}) is required")
    _embed_layer_norm(ctx, ctx.input(2), ctx.input(3), ctx.input(4) if ctx.has_input(4) else None, ctx.input(5),
                      ctx.input(6), position_ids_at=8, mask_at=7, always_mask_index=False)


def _dequantized_table(ctx: NodeContext, position: int, what: str) -> str | None:
    """Input ``position`` of QEmbedLayerNormalization dequantized: (q - zero point) * scale (float32), its scale at
    ``position + 6`` and zero point at ``position + 11`` (per tensor); a constant table is dequantized here."""
    if not ctx.has_input(position):
        return None
    q, scale, zero = ctx.input(position), ctx.input(position + 6), ctx.input(position + 11)
    if ctx.value(q).dtype not in (np.int8, np.uint8) or ctx.value(zero).dtype != ctx.value(q).dtype:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{what} {q!r} and its zero point must be int8 or uint8 alike",
                              tensor=q)
    for name, kind in ((scale, "scale"), (zero, "zero point")):
        if int(np.prod(_shape(ctx, name, f"the {what} {kind}"))) != 1:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"the {what} {kind} {name!r} must be one value (per tensor)")
    if ctx.value(scale).dtype != np.float32:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"the {what} scale {scale!r} must be float32", tensor=scale)
    values = [ctx.value(n).data for n in (q, scale, zero)]
    if all(v is not None for v in values):
        data, s, z = values
        real = (data.astype(np.int32) - np.int32(z.reshape(-1)[0])).astype(np.float32) * np.float32(s.reshape(-1)[0])
        return ctx.constant(real, f"{q}.dequantized")
    centred = _binary(ctx, OP.OH_NN_OPS_SUB, _cast(ctx, q, np.int32, f"{q}.i32"),
                      _cast(ctx, _reshape(ctx, zero, ()), np.int32, f"{zero}.i32"), f"{q}.centred")
    return _binary(ctx, OP.OH_NN_OPS_MUL, _cast(ctx, centred, np.float32, f"{q}.f32"), _reshape(ctx, scale, ()),
                   f"{q}.dequantized")


@converts("com.microsoft.QEmbedLayerNormalization")
def quantized_embed_layer_normalization(ctx: NodeContext) -> None:
    """EmbedLayerNormalization with int8/uint8 tables, gamma and beta (each with a per-tensor scale and zero point,
    what quantize_dynamic makes of it): dequantized ((q - zero point) * scale, float32; folded for constants), then
    as EmbedLayerNormalization (no position_ids; mask_index always output)."""
    tables = {}
    for position, what in ((2, "word embedding"), (3, "position embedding"), (4, "segment embedding"), (5, "gamma"),
                           (6, "beta")):
        tables[what] = _dequantized_table(ctx, position, what)
        if tables[what] is None and position != 4:
            raise ConversionIssue(INVALID_MODEL, f"the {what} (input #{position}) is required")
    _embed_layer_norm(ctx, tables["word embedding"], tables["position embedding"], tables["segment embedding"],
                      tables["gamma"], tables["beta"], position_ids_at=None, mask_at=7, always_mask_index=True)
