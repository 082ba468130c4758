"""NNRt-only ops exported as NNRt-domain functions of standard ONNX ops."""
from __future__ import annotations

import numpy as np

from ..context import ExportContext
from ..custom import FunctionBody, emit_custom
from . import exporter


@exporter("OH_NN_OPS_SCALE")
def scale(ctx: ExportContext) -> None:
    """y = x * scale + bias, scale/bias covering input dims [axis, axis + scale.ndim)."""
    rank = len(ctx.value(ctx.input(0)).shape)
    axis = int(ctx.args["axis"]) % rank
    scale_rank = len(ctx.value(ctx.input(1)).shape)

    def build(f: FunctionBody) -> None:
        x, s, b = f.inputs
        trailing = rank - axis - scale_rank
        if trailing > 0:
            axes = f.constant(np.arange(scale_rank, scale_rank + trailing, dtype=np.int64))
            s = f.one("Unsqueeze", [s, axes])
            b = f.one("Unsqueeze", [b, axes])
        f.one("Add", [f.one("Mul", [x, s]), b], "y0")

    emit_custom(ctx, build)
