"""Dense layers (convolution, pooling, BN, LRN live in spatial.py)."""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...ir.issues import DYNAMIC_SHAPE, UNSUPPORTED_ATTRIBUTE, ConversionIssue
from ..context import NodeContext
from ..generic import emit_row
from . import converts


@converts("MatMul")
def matmul(ctx: NodeContext) -> None:
    """MATMUL 1:1 (numpy matmul semantics on both sides); the output shape is ONNX shape inference's."""
    emit_row(ctx)


@converts("Gemm")
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
    if ctx.opset < 7 and not int(ctx.attr("broadcast", 0)) and c is not None:  # legacy: C must be [M, N] then
        c_shape, out_shape = c_value.shape, out_value.shape
        if c_shape is not None and out_shape is not None and (len(c_shape) != len(out_shape) or any(
                x >= 0 and y >= 0 and x != y for x, y in zip(c_shape, out_shape))):
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"Gemm (opset {ctx.opset}) without broadcast=1 needs C of "
                                                         f"the output shape {list(out_shape)}, got {list(c_shape)}")
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
