"""Export of the recurrent NNRt op LSTM.

Decisions:

* LSTM: per layer one ONNX ``LSTM`` (gate order iofc = NNRt's, bias ``[Wb | Rb]``); zoneout (no ONNX form)
  unrolls the cell over the (static) time steps.
"""
from __future__ import annotations

import numpy as np

from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter
from ._common import _const, _i64, _input_dtype, _no_quant, _shape


def _lstm_unrolled(f: FunctionBody, seq: str, w: str, r: str, bias: str | None, h0: str, c0: str, *, steps: int,
                   hidden: int, dirs: int, dtype: np.dtype, zc: float, zh: float):
    """One (bi)directional layer cell by cell (zoneout has no ONNX LSTM form): returns (output, hy, cy)."""
    wt = f.one("Transpose", [w], perm=[0, 2, 1])  # [D, I, 4H]
    rt = f.one("Transpose", [r], perm=[0, 2, 1])  # [D, H, 4H]
    # 1 - z rounded in the data dtype, as the kernel computes it
    keep_c = f.constant(np.asarray(1, dtype) - np.asarray(zc, dtype))
    keep_h = f.constant(np.asarray(1, dtype) - np.asarray(zh, dtype))
    outs, hys, cys = [], [], []
    for d in range(dirs):
        index = _i64(f, d)
        pre = f.one("MatMul", [seq, f.one("Gather", [wt, index], axis=0)])  # [T, B, 4H]
        if bias is not None:
            pre = f.one("Add", [pre, f.one("Gather", [bias, index], axis=0)])
        rd = f.one("Gather", [rt, index], axis=0)
        h = f.one("Gather", [h0, index], axis=0)
        c = f.one("Gather", [c0, index], axis=0)
        per_step: dict[int, str] = {}
        for s in range(steps):
            t = s if d == 0 else steps - 1 - s
            gates = f.one("Add", [f.one("Gather", [pre, _i64(f, t)], axis=0), f.one("MatMul", [h, rd])])
            parts = [f.one("Slice", [gates, _i64(f, [k * hidden]), _i64(f, [(k + 1) * hidden]), _i64(f, [1])])
                     for k in range(4)]  # i, o, f, g
            i_g, o_g, f_g = (f.one("Sigmoid", [p]) for p in parts[:3])
            g_g = f.one("Tanh", [parts[3]])
            c_new = f.one("Add", [f.one("Mul", [f_g, c]), f.one("Mul", [i_g, g_g])])
            h_new = f.one("Mul", [o_g, f.one("Tanh", [c_new])])
            per_step[t] = h_new
            if zc:
                c_new = f.one("Add", [f.one("Mul", [_const(f, zc, dtype), c]), f.one("Mul", [keep_c, c_new])])
            if zh:
                h_new = f.one("Add", [f.one("Mul", [_const(f, zh, dtype), h]), f.one("Mul", [keep_h, h_new])])
            h, c = h_new, c_new
        axis0 = _i64(f, [0])
        outs.append(f.one("Concat", [f.one("Unsqueeze", [per_step[t], axis0]) for t in range(steps)], axis=0))
        hys.append(f.one("Unsqueeze", [h, axis0]))
        cys.append(f.one("Unsqueeze", [c, axis0]))
    output = outs[0] if dirs == 1 else f.one("Concat", outs, axis=2)
    hy = hys[0] if dirs == 1 else f.one("Concat", hys, axis=0)
    cy = cys[0] if dirs == 1 else f.one("Concat", cys, axis=0)
    return output, hy, cy


@exporter("OH_NN_OPS_LSTM")
def lstm(ctx: ExportContext) -> None:
    """Each layer: ONNX LSTM on the layer's slices of wIh/wHh/bias/hx/cx (Y [T, D, B, H] -> [T, B, D*H])."""
    _no_quant(ctx)
    args = ctx.args
    if int(args.get("proj_size", 0)) > 0:
        raise ExportIssue("LSTM with proj_size > 0")
    dtype = _input_dtype(ctx)
    steps, batch, _features = _shape(ctx, ctx.input(0), "the input")
    stack, rows, _ = _shape(ctx, ctx.input(1), "wIh")
    dirs = 2 if args.get("bidirectional") else 1
    hidden = rows // 4
    layers = int(args.get("num_layers", 0)) or stack // dirs
    has_bias = bool(args.get("has_bias"))
    zc, zh = float(args.get("zoneout_cell", 0.0)), float(args.get("zoneout_hidden", 0.0))
    if any(_input_dtype(ctx, i) != dtype for i in range(1, 6) if i != 3 or has_bias):
        raise ExportIssue("LSTM operands of mixed dtypes")

    def build(f: FunctionBody) -> None:
        x, w_ih, w_hh, bias, hx, cx = f.inputs
        seq = x
        hys, cys = [], []
        for layer in range(layers):
            begin, end, axis = _i64(f, [layer * dirs]), _i64(f, [(layer + 1) * dirs]), _i64(f, [0])

            def part(t: str) -> str:
                return t if layers == 1 else f.one("Slice", [t, begin, end, axis])

            w, r, h0, c0 = part(w_ih), part(w_hh), part(hx), part(cx)
            b = part(bias) if has_bias else None
            if zc == 0 and zh == 0:
                y, hy, cy = f.add("LSTM", [seq, w, r, b or "", "", h0, c0],
                                  [f.fresh("y"), f.fresh("hy"), f.fresh("cy")], hidden_size=hidden,
                                  direction="bidirectional" if dirs == 2 else "forward")
                seq = f.one("Reshape", [f.one("Transpose", [y], perm=[0, 2, 1, 3]),
                                        _i64(f, [steps, batch, dirs * hidden])])
            else:
                if b is not None:  # the kernel adds the input and hidden biases first
                    b = f.one("Add", [f.one("Slice", [b, _i64(f, [0]), _i64(f, [4 * hidden]), _i64(f, [1])]),
                                      f.one("Slice", [b, _i64(f, [4 * hidden]), _i64(f, [8 * hidden]), _i64(f, [1])])])
                seq, hy, cy = _lstm_unrolled(f, seq, w, r, b, h0, c0, steps=steps, hidden=hidden, dirs=dirs,
                                             dtype=dtype, zc=zc, zh=zh)
            hys.append(hy)
            cys.append(cy)
        f.one("Identity", [seq], "y0")
        f.one("Identity" if layers == 1 else "Concat", hys, "y1", axis=None if layers == 1 else 0)
        f.one("Identity" if layers == 1 else "Concat", cys, "y2", axis=None if layers == 1 else 0)

    emit_custom(ctx, build)
