"""Quantization kernels: QUANT_DTYPE_CAST (quantized <-> float conversion, and requantization).

Quantized tensors are converted with the input's / output's quant params, per tensor or per channel along
``axis``; data type codes are OH_NN_DataType values (MindIR TypeIds accepted too).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import quant_range
from ..errors import invalid, unsupported
from . import kernel
from ._common import _agree, _declared, _first_input_shape, _norm_axis, _np_dtype_name, _type_code

# A conversion keeps the input's shape.


@kernel("OH_NN_OPS_QUANT_DTYPE_CAST", shape=_first_input_shape)
def quant_dtype_cast(x, *, src_t, dst_t, axis, ctx):
    """Quantized <-> float with the input's / output's quant params (per tensor, or per channel along ``axis`` when a
    tensor has several): int -> float r = (q - z) * s; float -> int q = clamp(round(r / s + z)); int -> int
    requantizes; float -> float converts. srcT/dstT: OH_NN_DataType codes (MindIR TypeIds accepted too)."""
    op = "QUANT_DTYPE_CAST"
    x = np.asarray(x)
    src = _type_code(int(src_t), op, "srcT", mindir=True)
    dst = _type_code(int(dst_t), op, "dstT", mindir=True)
    if src is None or dst is None:
        raise invalid(f"{op}: srcT and dstT must name data types, got {src_t} and {dst_t}")
    in_dtype = np.dtype(ctx.input_dtypes[0]) if ctx is not None and ctx.input_dtypes else x.dtype
    if src != in_dtype and not (in_dtype == np.float16 and src.kind == "f"):
        raise invalid(f"{op}: srcT {_np_dtype_name(src)} disagrees with the input type {_np_dtype_name(in_dtype)}")
    dst = _agree(op, "dstT", dst, _declared(ctx))
    for dtype in (src, dst):
        if dtype.kind not in "iuf":
            raise unsupported(f"{op}: {_np_dtype_name(dtype)} is neither a quantized integer nor a float type")
    in_q = ctx.input_quant[0] if ctx is not None and ctx.input_quant else None
    out_q = ctx.output_quant[0] if ctx is not None and ctx.output_quant else None
    real = x
    if src.kind in "iu":
        if in_q is None:
            raise invalid(f"{op}: the {_np_dtype_name(src)} input has no quant params")
        scale, zero = _quant_arrays(in_q, x, axis, op, "input")
        real = (x.astype(np.float64) - zero) * scale
    if dst.kind == "f":
        return np.asarray(real).astype(dst)
    if out_q is None:
        raise invalid(f"{op}: the {_np_dtype_name(dst)} output has no quant params")
    scale, zero = _quant_arrays(out_q, x, axis, op, "output")
    bits = min(out_q.num_bits) if getattr(out_q, "num_bits", None) else 8
    qmin, qmax = quant_range(dst, bits)
    q = np.rint(np.asarray(real, dtype=np.float64) / scale + zero)
    return np.clip(q, qmin, qmax).astype(dst)


def _quant_arrays(qp, x: np.ndarray, axis: int, op: str, which: str) -> tuple[np.ndarray, np.ndarray]:
    scale = np.asarray(qp.scales, dtype=np.float64)
    zero = np.asarray(qp.zero_points, dtype=np.float64)
    if scale.size == 1:
        return scale.reshape(()), zero.reshape(())
    ax = _norm_axis(int(axis), x.ndim, op)
    if scale.size != x.shape[ax]:
        raise invalid(f"{op}: the {which} has {scale.size} per-channel quant params but axis {axis} of dims "
                      f"{list(x.shape)} has {x.shape[ax]} channels")
    shape = [1] * x.ndim
    shape[ax] = scale.size
    return scale.reshape(shape), zero.reshape(shape)
