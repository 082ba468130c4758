"""Export of the quantization NNRt op QUANT_DTYPE_CAST: the exporter's DequantizeLinear / QuantizeLinear around a
function that only converts float types.
"""
from __future__ import annotations

import numpy as np

from ..context import ExportContext, ExportIssue
from ..custom import emit_custom
from . import exporter
from ._common import _cast_to, _norm, _rank, _scalar


@exporter("OH_NN_OPS_QUANT_DTYPE_CAST")
def quant_dtype_cast(ctx: ExportContext) -> None:
    """A quantized input is read through the exporter's DequantizeLinear, a quantized output written through its
    QuantizeLinear (round half to even, saturating: the kernel's rint + clamp for 8 bits), both carrying the quant
    params for the re-import; the function in between only converts float types. Per-channel params run along the
    op's ``axis``."""
    x_name, y_name = ctx.input(0), ctx.output(0)
    x, y = ctx.value(x_name), ctx.value(y_name)
    rank = _rank(ctx, ctx.input(0))
    axis = _norm(_scalar(ctx.args["axis"]), rank) if rank else 0
    src = np.dtype(x.dtype)
    dst = np.dtype(y.dtype)
    for value, dtype, what in ((x, src, "input"), (y, dst, "output")):
        if dtype.kind not in "iu":
            continue
        if value.quant is None:
            raise ExportIssue(f"QUANT_DTYPE_CAST: the {dtype.name} {what} has no quant params")
        if dtype not in (np.int8, np.uint8) or any(int(b) != 8 for b in value.quant.num_bits or [8]):
            raise ExportIssue(f"QUANT_DTYPE_CAST: a {dtype.name} {what} (Quantize/DequantizeLinear: 8-bit int8/uint8)")
    per_channel = lambda quant: axis if quant.count > 1 else None  # noqa: E731
    builder = ctx.builder
    real = src
    if src.kind in "iu":
        ctx.node.inputs[0] = builder.dequantize(x_name, x.quant, per_channel(x.quant))
        real = np.dtype(np.float32)
    target = dst
    if dst.kind in "iu":
        ctx.node.outputs[0] = builder.fresh(f"{y_name}.f")
        target = np.dtype(np.float32)
    emit_custom(ctx, lambda f: _cast_to(f, f.inputs[0], real, target, "y0"))
    if dst.kind in "iu":
        builder.quant_dtype[ctx.node.outputs[0]] = dst  # (zero points take the integer type)
        builder.quantize(ctx.node.outputs[0], y_name, y.quant, per_channel(y.quant))
