"""Export of the spatial NNRt ops: RESIZE_BILINEAR, DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND,
SPACE_TO_BATCH_ND and CROP (the ONNX NCHW node between transposes, or an NNRt-domain function on the NHWC tensors).

Decisions (the kernels' semantics are in the kernel module of the same family):

* RESIZE_BILINEAR: ``Resize(linear)`` to the final size (``preserve_aspect_ratio`` already applied: ONNX's
  ``keep_aspect_ratio_policy`` would also change the coordinate scale); ``exclude_outside`` has no effect on a
  2-tap linear filter with edge clamping; float64 (onnxruntime has no double Resize) as the kernel's two
  interpolation matrices (MatMul).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ...kernels.spatial import bilinear_matrix
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
    _i64,
    _in_dtype,
    _input_dtype,
    _ints,
    _layout_ok,
    _nhwc,
    _no_quant,
    _pad_constant,
    _shape,
    _to_nchw,
    _wrapped,
)

# dtypes of onnxruntime's CPU kernels
_ORT_DEPTH_SPACE = (F16, F32, F64, np.dtype(np.int8), np.dtype(np.uint8))


# -- resize -------------------------------------------------------------------------------------------------------

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
    dtype = _input_dtype(ctx)
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


# -- batch/space, depth/space -------------------------------------------------------------------------------------

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
    n, h, w, c = _shape(ctx, ctx.input(0), "the input")
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


@exporter("OH_NN_OPS_SPACE_TO_BATCH_ND")
def space_to_batch_nd(ctx: ExportContext) -> None:
    _no_quant(ctx)
    n, h, w, c = _shape(ctx, ctx.input(0), "the input")
    b0, b1 = _ints(ctx.args["block_shape"])
    pad = _ints(ctx.args.get("paddings", [])) or [0, 0, 0, 0]
    hp, wp = h + pad[0] + pad[1], w + pad[2] + pad[3]
    dtype = _input_dtype(ctx)

    def build(f: FunctionBody) -> None:
        t = f.inputs[0]
        if any(pad):
            t = _pad_constant(f, t, dtype, _i64(f, [0, pad[0], pad[2], 0, 0, pad[1], pad[3], 0]), 0)
        t = f.one("Reshape", [t, _i64(f, [n, hp // b0, b0, wp // b1, b1, c])])
        t = f.one("Transpose", [t], perm=[2, 4, 0, 1, 3, 5])
        f.one("Reshape", [t, _i64(f, [b0 * b1 * n, hp // b0, wp // b1, c])], "y0")

    emit_custom(ctx, build)


# -- crop ---------------------------------------------------------------------------------------------------------

@exporter("OH_NN_OPS_CROP")
def crop(ctx: ExportContext) -> None:
    """A Slice with constant starts (the offsets) and sizes (the output shape, or the shape input's values)."""
    _no_quant(ctx)
    shape = _shape(ctx, ctx.input(0), "the input")
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
