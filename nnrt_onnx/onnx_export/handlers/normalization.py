"""Export of the normalization NNRt ops: SOFTMAX, LOG_SOFTMAX, BATCH_NORM, LAYER_NORM, INSTANCE_NORM, L2_NORMALIZE
and LRN.

Decisions:

* Channel-last BATCH_NORM / INSTANCE_NORM become the ONNX channel-first node between two Transposes (the
  importer's layout pass cancels them on the way back); not with ``nchw=True``: the function fallback (float16,
  no parameters ...) must receive the NHWC tensor itself.
* LRN: ONNX divides alpha by ``size = 2r + 1``, NNRt does not: ``alpha * size`` is written. NNRt normalises the
  last axis of any rank: other ranks run ONNX LRN on the tensor reshaped to ``[M, C, 1, 1]``; float64 (no
  onnxruntime LRN) as its formula, in float64.
"""
from __future__ import annotations

import numpy as np

from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter
from ._common import (
    _ORT_FLOAT,
    F16,
    _cast_to,
    _const,
    _dtype,
    _export,
    _has_params,
    _i64,
    _in_dtype,
    _in_shape,
    _input_dtype,
    _layout_ok,
    _no_quant,
    _norm,
    _rank,
    _scalar,
    _shape,
    _widen,
    _work,
    _wrapped,
)

# -- softmax ------------------------------------------------------------------------------------------------------

def _softmax(ctx: ExportContext, op_type: str) -> None:
    if ctx.opset < 13:
        raise ExportIssue(f"{op_type} on one axis needs opset >= 13")
    rank = _rank(ctx, ctx.input(0))
    axis = _scalar(ctx.args["axis"])
    axis = _norm(-1 if axis is None else axis, rank)
    dtype = _dtype(ctx, ctx.input(0))
    if _has_params(ctx) and dtype != F16:
        ctx.add(op_type, [ctx.input(0)], [ctx.result(0)], main=True, axis=axis)
        return

    def build(f: FunctionBody) -> None:
        _cast_to(f, f.one(op_type, [_widen(f, f.inputs[0], dtype)], axis=axis), _work(dtype), dtype, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_SOFTMAX")
def softmax(ctx: ExportContext) -> None:
    _softmax(ctx, "Softmax")


@_export("OH_NN_OPS_LOG_SOFTMAX")
def log_softmax(ctx: ExportContext) -> None:
    _softmax(ctx, "LogSoftmax")


# -- normalisations -----------------------------------------------------------------------------------------------

def _channel_first(ctx: ExportContext, op_type: str, stats: list[str], **attrs) -> None:
    """The ONNX channel-first node between Transposes (NHWC -> NCHW before, back after); rank 2 needs none."""
    rank = _rank(ctx, ctx.input(0))
    x = ctx.input(0)
    if rank == 2:
        ctx.add(op_type, [x, *stats], [ctx.result(0)], main=True, **attrs)
        return
    to_first = [0, rank - 1, *range(1, rank - 1)]
    back = [0, *range(2, rank), 1]
    moved = ctx.fresh(f"{x}.nchw")
    ctx.add("Transpose", [x], [moved], perm=to_first)
    normalized = ctx.fresh(f"{ctx.output(0)}.nchw")
    ctx.add(op_type, [moved, *stats], [normalized], main=True, **attrs)
    ctx.add("Transpose", [normalized], [ctx.result(0)], perm=back)


def _per_channel(f: FunctionBody, name: str, dtype, work, c: int) -> str:
    return f.one("Reshape", [_cast_to(f, name, dtype, work), _i64(f, [c])])


def _batch_norm_is_standard(node, graph) -> bool:
    """A 4-D float batch norm with per-channel statistics of its dtype and explicit parameters exports as the ONNX
    node on the NCHW tensor: the exporter wraps it in transposes the layout pass cancels against its neighbours."""
    values = [graph.values[n] for n in node.inputs]
    x = values[0]
    if x.shape is None or len(x.shape) != 4 or x.dtype not in (np.float32, np.float64) or not node.params:
        return False
    return all(v.shape == (x.shape[-1],) and v.dtype == x.dtype and v.quant is None for v in values[1:])


@_export("OH_NN_OPS_BATCH_NORM", nchw=_batch_norm_is_standard)
def batch_norm(ctx: ExportContext) -> None:
    """Channel-last inference batch norm: BatchNormalization (on the NCHW tensor for 4-D inputs, else between
    transposes), or a function computing the kernel's x * inv + (offset - mean * inv), inv = scale / sqrt(var + eps)."""
    if ctx.node.layout == "NCHW":
        ctx.add("BatchNormalization", list(ctx.node.inputs), [ctx.result(0)], main=True,
                epsilon=float(_scalar(ctx.args["epsilon"])))
        return
    shape = _in_shape(ctx)
    dtype = _dtype(ctx, ctx.input(0))
    eps = float(_scalar(ctx.args["epsilon"]))
    c = shape[-1] if shape else 0
    stat_dtypes = [_dtype(ctx, ctx.input(i)) for i in range(1, 5)]
    stats_ok = all(_in_shape(ctx, i) == (c,) for i in range(1, 5)) and all(d == dtype for d in stat_dtypes)
    if len(shape) >= 2 and stats_ok and _has_params(ctx) and dtype in (np.float32, np.float64):
        _channel_first(ctx, "BatchNormalization", list(ctx.node.inputs[1:]), epsilon=eps)
        return
    work = _work(dtype)

    def build(f: FunctionBody) -> None:
        x, scale, offset, mean, var = f.inputs
        scale, offset, mean, var = (_per_channel(f, t, d, work, c)
                                    for t, d in zip((scale, offset, mean, var), stat_dtypes))
        inv = f.one("Div", [scale, f.one("Sqrt", [f.one("Add", [var, f.constant(np.asarray(eps, work))])])])
        shift = f.one("Sub", [offset, f.one("Mul", [mean, inv])])
        y = f.one("Add", [f.one("Mul", [_widen(f, x, dtype), inv]), shift])
        _cast_to(f, y, work, dtype, "y0")

    emit_custom(ctx, build)


def _normalize(f: FunctionBody, x: str, axes: list[int], eps: float, work) -> str:
    """(x - mean) / sqrt(var + eps) over ``axes`` (two-pass variance, as the kernels compute it)."""
    axes_input = _i64(f, axes)
    centred = f.one("Sub", [x, f.one("ReduceMean", [x, axes_input], keepdims=1)])
    var = f.one("ReduceMean", [f.one("Mul", [centred, centred]), axes_input], keepdims=1)
    return f.one("Div", [centred, f.one("Sqrt", [f.one("Add", [var, f.constant(np.asarray(eps, work))])])])


@_export("OH_NN_OPS_LAYER_NORM")
def layer_norm(ctx: ExportContext) -> None:
    shape = _in_shape(ctx)
    rank = len(shape)
    dtype = _dtype(ctx, ctx.input(0))
    begin = int(_scalar(ctx.args["begin_norm_axis"]))
    param = _norm(_scalar(ctx.args["begin_param_axis"]), rank)
    eps = float(_scalar(ctx.args["epsilon"]))
    affine = [_dtype(ctx, ctx.input(i)) for i in (1, 2)]
    if (ctx.opset >= 17 and begin == param and _has_params(ctx) and dtype in (np.float32, np.float64)
            and all(d == dtype for d in affine)
            and all(_in_shape(ctx, i) == shape[begin:] for i in (1, 2))):
        ctx.add("LayerNormalization", list(ctx.node.inputs), [ctx.result(0)], main=True, axis=begin, epsilon=eps)
        return
    work = _work(dtype)

    def build(f: FunctionBody) -> None:
        x, gamma, beta = f.inputs
        y = _normalize(f, _widen(f, x, dtype), list(range(begin, rank)), eps, work)
        y = f.one("Add", [f.one("Mul", [y, _cast_to(f, gamma, affine[0], work)]), _cast_to(f, beta, affine[1], work)])
        _cast_to(f, y, work, dtype, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_INSTANCE_NORM")
def instance_norm(ctx: ExportContext) -> None:
    """NHWC instance norm: InstanceNormalization between transposes, or a function normalising over the spatial
    axes 1..rank-2 per sample and channel."""
    shape = _in_shape(ctx)
    rank = len(shape)
    dtype = _dtype(ctx, ctx.input(0))
    eps = float(_scalar(ctx.args["epsilon"]))
    c = shape[-1]
    affine = [_dtype(ctx, ctx.input(i)) for i in (1, 2)]
    if (rank >= 3 and _has_params(ctx) and dtype == np.float32 and all(d == dtype for d in affine)
            and all(_in_shape(ctx, i) == (c,) for i in (1, 2))):
        _channel_first(ctx, "InstanceNormalization", list(ctx.node.inputs[1:]), epsilon=eps)
        return
    work = _work(dtype)

    def build(f: FunctionBody) -> None:
        x, scale, bias = f.inputs
        y = _normalize(f, _widen(f, x, dtype), list(range(1, rank - 1)), eps, work)
        y = f.one("Add", [f.one("Mul", [y, _per_channel(f, scale, affine[0], work, c)]),
                          _per_channel(f, bias, affine[1], work, c)])
        _cast_to(f, y, work, dtype, "y0")

    emit_custom(ctx, build)


@_export("OH_NN_OPS_L2_NORMALIZE")
def l2_normalize(ctx: ExportContext) -> None:
    """x / sqrt(max(sum(x^2 over axis), epsilon)); an empty axis list means every axis."""
    rank = _rank(ctx, ctx.input(0))
    axis = ctx.args.get("axis")
    listed = [axis] if isinstance(axis, (int, np.integer)) else list(np.asarray(axis if axis is not None else [])
                                                                     .reshape(-1).tolist())
    axes = [_norm(a, rank) for a in listed] or list(range(rank))
    eps = float(_scalar(ctx.args["epsilon"]))
    dtype = _dtype(ctx, ctx.input(0))
    work = _work(dtype)

    def build(f: FunctionBody) -> None:
        x = _widen(f, f.inputs[0], dtype)
        squares = f.one("ReduceSum", [f.one("Mul", [x, x]), _i64(f, axes)], keepdims=1)
        norm = f.one("Sqrt", [f.one("Max", [squares, f.constant(np.asarray(eps, work))])])
        _cast_to(f, f.one("Div", [x, norm]), work, dtype, "y0")

    emit_custom(ctx, build)


# -- LRN ----------------------------------------------------------------------------------------------------------

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
    dtype = _input_dtype(ctx)
    shape = _shape(ctx, ctx.input(0), "the input")
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
