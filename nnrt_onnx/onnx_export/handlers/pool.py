"""Export of the pooling NNRt ops: MAX_POOL and AVG_POOL (the ONNX NCHW MaxPool / AveragePool between transposes,
global pooling as a reduction, or per-tap strided slices for the dtypes onnxruntime does not pool).

Decisions (the kernels' semantics are in the kernel module of the same family):

* Pooling: average pooling never counts padding (``count_include_pad = 0``); the kernel's windows (ceil mode
  drops a last window starting in the end padding; SAME ignores the round mode) are written as floor mode with
  the end padding they touch (< kernel), since ONNX shape inference keeps such a last window. Integer max pooling:
  int8/uint8 natively, 16/32-bit through float64 (exact), 64-bit as one strided slice per tap + Max;
  float64 average pooling also per tap (onnxruntime has no double AveragePool).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ... import geometry
from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter
from ._common import (
    _ORT_FLOAT,
    _TO_NHWC,
    F16,
    F32,
    F64,
    _const,
    _elem,
    _i64,
    _in_dtype,
    _input_dtype,
    _layout_ok,
    _nhwc,
    _no_quant,
    _pad_list,
    _pair,
    _to_nchw,
    _wrapped,
)

# dtypes of onnxruntime's CPU kernels
_ORT_MAXPOOL = (F16, F32, F64, np.dtype(np.int8), np.dtype(np.uint8))
_EXACT_IN_F64 = tuple(np.dtype(t) for t in (np.int16, np.uint16, np.int32, np.uint32))


def _to_nhwc(f: FunctionBody, x: str) -> str:
    return f.one("Transpose", [x], perm=_TO_NHWC)


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
    for size, k, s, (p0, p1) in zip((h, w), kernel, strides, geometry.pad_list_to_axes(tblr)):
        out, p0, _ = geometry.window_axis(mode, size, k, s, p0, p1, ceil_mode=ceil)
        axes.append((out, p0, geometry.touched_end_padding(size, out, k, s, p0)))
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
    if args.get("global_pool"):
        return _global_standard(node, graph)
    if not _layout_ok(node, graph):
        return False
    native = _ORT_MAXPOOL if node.op.name == "OH_NN_OPS_MAX_POOL" else _ORT_FLOAT
    return _in_dtype(node, graph) in native


def _global_standard(node, graph) -> bool:
    """Global pooling of a float tensor: GlobalAveragePool / GlobalMaxPool between the layout transposes (the one
    after it only moves unit dims: a Reshape, which the importer's layout pass cancels like the transpose)."""
    x, y = graph.values[node.inputs[0]], graph.values[node.outputs[0]]
    if x.shape is None or len(x.shape) != 4 or any(d < 0 for d in x.shape) or any(
            v.quant is not None for v in (x, y)):
        return False
    return _in_dtype(node, graph) in _ORT_FLOAT


def _reduce_hw(f: FunctionBody, op_type: str, x: str, dtype: np.dtype, shape) -> str:
    """ReduceMean/ReduceMax over H and W (keepdims); 16-bit and unsigned 32-bit ints through a wider type."""
    if dtype == np.uint64:  # no reduction kernel: the variadic Max of the H*W positions
        n, h, w, c = shape
        cells = f.add("Split", [f.one("Reshape", [x, _i64(f, [n, h * w, c])]), _i64(f, [1] * (h * w))],
                      [f.fresh("cell") for _ in range(h * w)], axis=1)
        return f.one("Reshape", [f.one("Max", cells) if h * w > 1 else cells[0], _i64(f, [n, 1, 1, c])])
    wider = {np.dtype(np.int16): TensorProto.INT32, np.dtype(np.uint16): TensorProto.INT32,
             np.dtype(np.uint32): TensorProto.INT64}.get(dtype)
    source = x if wider is None else f.one("Cast", [x], to=wider)
    y = f.one(op_type, [source, _i64(f, [1, 2])], keepdims=1)
    return y if wider is None else f.one("Cast", [y], to=_elem(dtype))


def _pool(ctx: ExportContext, kind: str) -> None:
    _no_quant(ctx)
    op_type = "MaxPool" if kind == "max" else "AveragePool"
    dtype = _input_dtype(ctx)
    shape = _nhwc(ctx, ctx.input(0), "the input")
    if ctx.args.get("global_pool") and _wrapped(ctx):
        ctx.add("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", [ctx.input(0)], [ctx.result(0)], main=True)
        return
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
            y = f.one("Cast", [_to_nhwc(f, pooled)], to=_elem(dtype))
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
