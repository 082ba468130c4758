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


def shape_of_parts(ctx: NodeContext, parts, hint: str) -> str:
    """A 1-D int64 shape tensor from ``parts``: ints (known dims) and 1-D int64 tensors (dims read at run time),
    concatenated."""
    pieces, run = [], []
    for part in parts:
        if isinstance(part, str):
            if run:
                pieces.append(ctx.constant(np.asarray(run, np.int64), f"{hint}.dims"))
                run = []
            pieces.append(part)
        else:
            run.append(int(part))
    if run:
        pieces.append(ctx.constant(np.asarray(run, np.int64), f"{hint}.dims"))
    if len(pieces) == 1:
        return pieces[0]
    length = sum(ctx.value(p).shape[0] for p in pieces)
    return ctx.emit_to(OP.OH_NN_OPS_CONCAT, pieces, np.int64, (length,), f"{hint}.shape", {"OH_NN_CONCAT_AXIS": 0})


def reshape_to(ctx: NodeContext, x: str, parts, hint: str, output: str | None = None) -> str:
    """``x`` reshaped to ``parts`` (see :func:`shape_of_parts`; a part tensor may hold several dims): a constant
    target when at most one dim is unknown (RESHAPE's -1), else one computed at run time."""
    flat: list = []
    for part in parts:  # a part tensor of known value (a constant) is its dims
        data = ctx.value(part).data if isinstance(part, str) else None
        flat += [int(v) for v in np.asarray(data).reshape(-1)] if data is not None else [part]
    dims: list[int] = []
    for part in flat:
        dims += [-1] * ctx.value(part).shape[0] if isinstance(part, str) else [part]
    if output is not None:
        ctx.settle(output, dims, ctx.value(x).dtype)
    if output is None and ctx.value(x).shape is not None and tuple(ctx.value(x).shape) == tuple(dims) \
            and sum(d < 0 for d in dims) == 0:
        return x
    out = output or ctx.new_value(ctx.value(x).dtype, dims, f"{hint}.reshaped")
    if not dims:  # to a scalar: SQUEEZE without axes (a shape tensor cannot be empty)
        ctx.emit(OP.OH_NN_OPS_SQUEEZE, [x], [out])
        return out
    target = np.asarray(dims, np.int64) if sum(d < 0 for d in dims) <= 1 else None
    shape = ctx.constant(target, f"{hint}.shape") if target is not None else shape_of_parts(ctx, flat, hint)
    ctx.emit(OP.OH_NN_OPS_RESHAPE, [x, shape], [out])
    return out
