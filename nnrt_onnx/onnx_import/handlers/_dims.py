"""Dims known only at run time, as tensors the converted model computes (NNRt tensors may have -1 dims; what a
decomposition needs of them it reads with SHAPE): a tensor's shape, some of its dims, their product, and the
sequence 0..n-1 of a run-time length n. Each is a constant when the dims it reads are known.

The sequence (``iota``) is the indices of TOP_K over n equal values: TOP_K ranks equal values by index, the lower
first (TensorFlow's top_k, whose semantics NNRt's TOP_K has, and ONNX TopK say so), so the indices are 0..n-1. NNRt's
RANGE takes its bounds as parameters, known when the model is built.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ..context import NodeContext


def known(shape, axes: Sequence[int] | None = None) -> bool:
    """Whether ``shape`` (or its ``axes``) is known."""
    if shape is None:
        return False
    return all(shape[a] >= 0 for a in (range(len(shape)) if axes is None else axes))


def shape_tensor(ctx: NodeContext, x: str, dtype=np.int64) -> str:
    """The shape of ``x`` as a 1-D tensor: a constant when static, else SHAPE."""
    shape = ctx.value(x).shape
    if known(shape):
        return ctx.constant(np.asarray(shape, dtype), f"{x}.shape")
    return ctx.emit_to(OP.OH_NN_OPS_SHAPE, [x], dtype, (len(shape),), f"{x}.shape")


def dims_tensor(ctx: NodeContext, x: str, axes: Sequence[int], dtype=np.int64) -> str:
    """``[shape(x)[a] for a in axes]`` as a 1-D tensor: a constant when those dims are known, else a GATHER of
    SHAPE(x)."""
    shape = ctx.value(x).shape
    axes = [int(a) for a in axes]
    if known(shape, axes):
        return ctx.constant(np.asarray([shape[a] for a in axes], dtype), f"{x}.dims")
    full = shape_tensor(ctx, x, dtype)
    return ctx.emit_to(OP.OH_NN_OPS_GATHER, [full, ctx.constant(np.asarray(axes, np.int64), f"{x}.axes"),
                                             ctx.constant(np.asarray([0], np.int64), f"{x}.axis0")],
                       dtype, (len(axes),), f"{x}.dims")


def dim_product(ctx: NodeContext, x: str, axes: Sequence[int], dtype=np.int64) -> str:
    """The product of dims ``axes`` of ``x`` as a [1] tensor (1 for no axes)."""
    shape = ctx.value(x).shape
    axes = [int(a) for a in axes]
    if known(shape, axes):
        return ctx.constant(np.asarray([int(np.prod([shape[a] for a in axes]))], dtype), f"{x}.size")
    dims = dims_tensor(ctx, x, axes, dtype)
    return ctx.emit_to(OP.OH_NN_OPS_REDUCE_PROD, [dims, ctx.constant(np.asarray([0], np.int32), f"{x}.axis0")],
                       dtype, (1,), f"{x}.size", {"OH_NN_REDUCE_PROD_KEEP_DIMS": True, "OH_NN_REDUCE_PROD_COEFF": 1.0})


def iota(ctx: NodeContext, length: str, dtype=np.int64, hint: str = "iota") -> str:
    """0, 1, ..., n-1 for the length ``length`` (a one-element integer tensor): a constant when it is one, else the
    indices of TOP_K over n zeros (equal values rank by index, the lower first)."""
    value = ctx.value(length)
    if value.data is not None:
        return ctx.constant(np.arange(int(np.asarray(value.data).reshape(-1)[0]), dtype=dtype), f"{ctx.name}.{hint}")
    zeros = ctx.emit_to(OP.OH_NN_OPS_FILL, [ctx.constant(np.asarray(0, np.float32), f"{ctx.name}.zero"), length],
                        np.float32, (-1,), f"{ctx.name}.{hint}.zeros")
    values = ctx.new_value(np.float32, (-1,), f"{ctx.name}.{hint}.values")
    indices = ctx.new_value(dtype, (-1,), f"{ctx.name}.{hint}")
    ctx.emit(OP.OH_NN_OPS_TOP_K, [zeros, length], [values, indices], {"OH_NN_TOP_K_SORTED": True})
    return indices


def axis_iota(ctx: NodeContext, x: str, axis: int, rank: int, dtype=np.int64, position: int | None = None) -> str:
    """The positions 0..d-1 along dim ``axis`` of ``x`` shaped to broadcast over a rank-``rank`` tensor: d at
    ``position`` (default ``axis``), 1 elsewhere."""
    shape = ctx.value(x).shape
    target = [1] * rank
    target[axis if position is None else position] = shape[axis]
    if shape[axis] >= 0:
        return ctx.constant(np.arange(shape[axis], dtype=dtype).reshape(target), f"{x}.positions{axis}")
    sequence = iota(ctx, dims_tensor(ctx, x, [axis], np.int64), dtype, f"positions{axis}")
    if rank == 1:
        return sequence
    return ctx.reshape(sequence, target)
