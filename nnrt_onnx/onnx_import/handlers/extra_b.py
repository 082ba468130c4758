"""Transformer and integer-arithmetic ONNX ops decomposed into NNRt ops: RMSNormalization, RotaryEmbedding,
SwiGLU, Attention, TensorScatter, DynamicQuantizeLinear, ConvInteger, QLinearConv, MaxUnpool.

Decisions (also stated where they are made):

* RMSNormalization computes stage one in the ``stash_type`` precision (float32 for 1, float64 for 11; the
  ONNX function body casts there and back) or the input's when wider (float64 is never narrowed, as in
  onnxruntime and the reference), as MUL, REDUCE_MEAN, ADD epsilon, SQRT, DIV, then MUL by the scale.
* Attention (opset 23..25) is MATMUL, [DIV, TANH, MUL softcap], ADD bias, SOFTMAX, MATMUL. Q and K are each
  scaled by sqrt(scale) first (as the ONNX function does). Grouped-query attention reshapes Q to
  (B, kv_heads, q_heads / kv_heads, S, D) against K as (B, kv_heads, 1, L, D) instead of repeating K and V.
  The additive bias is the attention mask (bool: 0 / -inf; a short mask is padded with -inf / False) plus one
  0 / -inf term for everything structural (causal frontier, sliding window, ``nonpad_kv_seqlen`` padding), a
  constant when it does not depend on ``nonpad_kv_seqlen``. A query row whose bias is -inf everywhere gives
  zeros, as the ONNX reference does (its bias is replaced by 0 before the softmax, so no NaN is computed, and
  its probabilities by 0 after it). A float16 softmax runs step by step in float16
  (REDUCE_MAX, SUB, EXP, REDUCE_SUM, DIV), as the reference computes it; SOFTMAX would widen to float32.
  ``qk_matmul_output_mode=0`` is the raw product even with a softcap (the spec text and onnxruntime; the
  reference returns the softcapped product there). The causal frontier spans Q's length with offset = past
  length (the spec; the reference builds it from a broadcast mask's length 1 when no window is set, and
  onnxruntime offsets by total - q_len when K brings a different number of new tokens than Q).
* TensorScatter writes the update with SCATTER_ND into zeros and picks it with WHERE over a mask of the written
  cache positions; indices and mask come from ``write_indices`` (folded to constants when that is constant).
* DynamicQuantizeLinear follows the ONNX reference step by step in float32 (REDUCE_MAX/MIN, MAXIMUM/MINIMUM
  with 0, SUB, DIV by 255, ROUND half to even, CLIP, CAST); an all-zero input gets scale 1 (onnxruntime).
* ConvInteger/QLinearConv convolve exactly in float64 (int8/uint8 products summed in float64 are exact far
  beyond int32): CAST, SUB zero points, CONV2D (weights offline when constant), CAST to int32 (rejected when
  the int32 accumulator could overflow: ONNX wraps, float64 would not). QLinearConv then
  requantizes like the ONNX reference: acc * (x_scale * w_scale / y_scale in float32) + y_zero_point in float64,
  CLIP, ROUND half to even, CAST.
* MaxUnpool scatters X at the flat indices into the inferred shape (SCATTER_ND) and pads to ``output_shape``
  (the ONNX reference and node suite; onnxruntime instead reads the indices against ``output_shape`` when it
  differs). Constant indices keep the last write of a repeated index; runtime indices are averaged over
  repeats (a sum and a count, in float64: exact for the identical values a MaxPool writes).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.issues import (
    INVALID_MODEL,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from ...ir.passes import NCHW_TO_NHWC, NHWC_TO_NCHW
from ..context import NodeContext
from . import converts

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_ONNX_FLOAT_TYPES = {1: np.float32, 10: np.float16, 11: np.float64}  # TensorProto codes with an NNRt dtype


# ---------------------------------------------------------------------------------------------------------------
# small emit helpers
# ---------------------------------------------------------------------------------------------------------------





def _shape(ctx: NodeContext, name: str, what: str = "tensor") -> tuple[int, ...]:
    return tuple(ctx.static_shape(name, what))


def _broadcast(*shapes) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def _binary(ctx: NodeContext, op: OP, a: str, b: str, hint: str, output: str | None = None, dtype=None) -> str:
    va, vb = ctx.value(a), ctx.value(b)
    shape = _broadcast(va.shape, vb.shape)
    if dtype is None:
        dtype = va.dtype if va.dtype.kind == "f" or vb.dtype.kind != "f" else vb.dtype
    return ctx.emit_to(op, [a, b], dtype, shape, hint, output=output)


def _compare(ctx: NodeContext, op: OP, a: str, b: str, hint: str) -> str:
    return _binary(ctx, op, a, b, hint, dtype=np.bool_)


def _unary(ctx: NodeContext, op: OP, x: str, hint: str, output: str | None = None, params=None) -> str:
    value = ctx.value(x)
    return ctx.emit_to(op, [x], value.dtype, value.shape, hint, params, output)


def _const(ctx: NodeContext, value, dtype, hint: str) -> str:
    return ctx.constant(np.asarray(value, dtype=dtype), f"{ctx.name}.{hint}")


def _cast(ctx: NodeContext, name: str, dtype, hint: str | None = None, output: str | None = None) -> str:
    value = ctx.value(name)
    dtype = np.dtype(dtype)
    if value.dtype == dtype and output is None:
        return name
    code = ctx.constant(np.asarray(int(from_numpy(dtype)), np.int32), f"{name}.to")
    return ctx.emit_to(OP.OH_NN_OPS_CAST, [name, code], dtype, value.shape, hint or f"{name}.{dtype}", output=output)


def _reshape(ctx: NodeContext, name: str, shape: Sequence[int], output: str | None = None) -> str:
    shape = [int(d) for d in shape]
    if output is None and ctx.value(name).shape is not None and tuple(ctx.value(name).shape) == tuple(shape):
        return name
    if output is not None:
        ctx.settle(output, shape, ctx.value(name).dtype)
    if not shape:  # to a scalar: SQUEEZE without axes (a shape tensor cannot be empty)
        out = output or ctx.new_value(ctx.value(name).dtype, (), f"{name}.scalar")
        ctx.emit(OP.OH_NN_OPS_SQUEEZE, [name], [out])
        return out
    return ctx.reshape(name, shape, output=output)


def _transpose(ctx: NodeContext, name: str, perm: Sequence[int], output: str | None = None) -> str:
    shape = ctx.value(name).shape
    if output is not None:
        ctx.settle(output, None if shape is None else [shape[p] for p in perm], ctx.value(name).dtype)
    return ctx.transpose(name, list(perm), output=output)


def _slice(ctx: NodeContext, x: str, axis: int, start: int, length: int, hint: str) -> str:
    """x[..., start:start + length, ...] along ``axis`` (SLICE with full-rank begin/size)."""
    shape = list(_shape(ctx, x))
    begin = [0] * len(shape)
    size = list(shape)
    begin[axis], size[axis] = start, length
    out_shape = list(shape)
    out_shape[axis] = length
    return ctx.emit_to(OP.OH_NN_OPS_SLICE, [x, ctx.constant(np.asarray(begin, np.int64), f"{x}.begin"),
                                          ctx.constant(np.asarray(size, np.int64), f"{x}.size")],
                 ctx.value(x).dtype, out_shape, hint)


def _concat(ctx: NodeContext, parts: Sequence[str], axis: int, hint: str, output: str | None = None) -> str:
    shapes = [_shape(ctx, p) for p in parts]
    shape = list(shapes[0])
    shape[axis] = sum(s[axis] for s in shapes)
    return ctx.emit_to(OP.OH_NN_OPS_CONCAT, list(parts), ctx.value(parts[0]).dtype, shape, hint,
                 {"OH_NN_CONCAT_AXIS": axis}, output)


def _reduce(ctx: NodeContext, kind: str, x: str, axes: Sequence[int], hint: str) -> str:
    """REDUCE_<kind> over ``axes``, keeping the reduced dims."""
    shape = _shape(ctx, x)
    out_shape = [1 if i in axes else d for i, d in enumerate(shape)]
    params = {f"OH_NN_REDUCE_{kind}_KEEP_DIMS": True, f"OH_NN_REDUCE_{kind}_COEFF": 1.0}
    axis = ctx.constant(np.asarray(list(axes), np.int32), f"{ctx.name}.axes")
    return ctx.emit_to(OP[f"OH_NN_OPS_REDUCE_{kind}"], [x, axis], ctx.value(x).dtype, out_shape, hint, params)


def _clip(ctx: NodeContext, x: str, lo: float, hi: float, hint: str) -> str:
    return _unary(ctx, OP.OH_NN_OPS_CLIP, x, hint, params={"OH_NN_CLIP_MIN": float(lo), "OH_NN_CLIP_MAX": float(hi)})


def _where(ctx: NodeContext, cond: str, a: str, b: str, hint: str, output: str | None = None) -> str:
    shape = _broadcast(ctx.value(cond).shape, ctx.value(a).shape, ctx.value(b).shape)
    dtype = ctx.value(a).dtype
    return ctx.emit_to(OP.OH_NN_OPS_WHERE, [cond, a, b], dtype, shape, hint, output=output)


def _float_input(ctx: NodeContext, name: str) -> np.dtype:
    dtype = ctx.value(name).dtype
    if dtype not in _FLOATS:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} on {dtype} input {name!r} is not supported "
                                                 "(float16/float32/float64 only)", tensor=name)
    return dtype


def _norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    axis = int(axis)
    if not -rank <= axis < rank:
        raise ConversionIssue(INVALID_MODEL, f"{what}={axis} is out of range for an input of rank {rank}")
    return axis + rank if axis < 0 else axis


def _wanted(ctx: NodeContext, position: int) -> bool:
    return position < len(ctx.node.output) and ctx.node.output[position] != ""


# ---------------------------------------------------------------------------------------------------------------
# RMSNormalization, SwiGLU
# ---------------------------------------------------------------------------------------------------------------

@converts("RMSNormalization")
def rms_normalization(ctx: NodeContext) -> None:
    """Y = X / sqrt(mean(X^2 over axis..) + epsilon) * scale; stage one in the stash_type precision."""
    x, scale = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    dtype = _float_input(ctx, x)
    scale_dtype = _float_input(ctx, scale)
    shape = _shape(ctx, x, "the RMSNormalization input")
    rank = len(shape)
    if rank == 0:
        raise ConversionIssue(INVALID_MODEL, "RMSNormalization of a scalar")
    axis = _norm_axis(ctx.attr("axis", -1), rank)
    epsilon = float(ctx.attr("epsilon", 1e-5))
    stash_type = int(ctx.attr("stash_type", 1))
    if stash_type not in (1, 11):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"stash_type={stash_type} is not supported (1 = float32, "
                                                     "11 = float64)")
    stash = np.dtype(_ONNX_FLOAT_TYPES[stash_type])
    if dtype.itemsize > stash.itemsize:  # float64 stays float64 (onnxruntime and the reference do not narrow it)
        stash = dtype
    xs = _cast(ctx, x, stash, f"{out}.stash")
    squared = _binary(ctx, OP.OH_NN_OPS_MUL, xs, xs, f"{out}.squared")
    mean = _reduce(ctx, "MEAN", squared, list(range(axis, rank)), f"{out}.mean_square")
    shifted = _binary(ctx, OP.OH_NN_OPS_ADD, mean, _const(ctx, epsilon, stash, "epsilon"), f"{out}.plus_eps")
    rms = _unary(ctx, OP.OH_NN_OPS_SQRT, shifted, f"{out}.rms")
    normalized = _binary(ctx, OP.OH_NN_OPS_DIV, xs, rms, f"{out}.normalized")
    normalized = _cast(ctx, normalized, dtype, f"{out}.normalized_back")
    normalized = _cast(ctx, normalized, scale_dtype, f"{out}.normalized_v")
    y_shape = _broadcast(shape, _shape(ctx, scale))
    if y_shape != shape:
        raise ConversionIssue(INVALID_MODEL, f"scale shape {list(_shape(ctx, scale))} does not broadcast to the "
                                             f"input shape {list(shape)}")
    _binary(ctx, OP.OH_NN_OPS_MUL, normalized, scale, out, output=out)


@converts("SwiGLU")
def swiglu(ctx: NodeContext) -> None:
    """Y = A * sigmoid(alpha * A) * B: SWISH (alpha = 1) or MUL, SIGMOID, MUL; then MUL by B."""
    a, b = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    dtype = _float_input(ctx, a)
    if ctx.value(b).dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"SwiGLU inputs have different dtypes ({dtype}, {ctx.value(b).dtype})")
    sa, sb = ctx.value(a).shape, ctx.value(b).shape
    if sa is not None and sb is not None and all(d >= 0 for d in (*sa, *sb)) and tuple(sa) != tuple(sb):
        raise ConversionIssue(INVALID_MODEL, f"SwiGLU inputs must have identical shapes, got {list(sa)} and "
                                             f"{list(sb)} (no broadcasting)")
    alpha = float(ctx.attr("alpha", 1.0))
    if alpha == 1.0:
        gate = _unary(ctx, OP.OH_NN_OPS_SWISH, a, f"{out}.swish")
    else:
        scaled = _binary(ctx, OP.OH_NN_OPS_MUL, a, _const(ctx, alpha, dtype, "alpha"), f"{out}.alpha_a")
        gate = _binary(ctx, OP.OH_NN_OPS_MUL, a, _unary(ctx, OP.OH_NN_OPS_SIGMOID, scaled, f"{out}.sigmoid"),
                       f"{out}.swish")
    _binary(ctx, OP.OH_NN_OPS_MUL, gate, b, out, output=out)


# ---------------------------------------------------------------------------------------------------------------
# RotaryEmbedding
# ---------------------------------------------------------------------------------------------------------------

@converts("RotaryEmbedding")
def rotary_embedding(ctx: NodeContext) -> None:
    """Rotate the first rotary_embedding_dim features of every head by the (gathered) cos/sin caches:
    real = cos x1 - sin x2, imag = sin x1 + cos x2, halves (x1 | x2) or interleaved pairs (x1, x2)."""
    x, cos_cache, sin_cache = ctx.input(0), ctx.input(1), ctx.input(2)
    out = ctx.output(0)
    dtype = _float_input(ctx, x)
    for name in (cos_cache, sin_cache):
        if ctx.value(name).dtype != dtype:
            raise ConversionIssue(INVALID_MODEL, f"cache {name!r} has dtype {ctx.value(name).dtype}, the input {dtype}")
    shape = _shape(ctx, x, "the RotaryEmbedding input")
    interleaved = bool(int(ctx.attr("interleaved", 0)))
    rotary_dim = int(ctx.attr("rotary_embedding_dim", 0))
    num_heads = ctx.attr("num_heads")
    if len(shape) == 4:  # (B, H, S, D): work there, caches as (B, 1, S, rd/2)
        batch, heads, seq, head_size = shape
        if num_heads is not None and int(num_heads) != heads:
            raise ConversionIssue(INVALID_MODEL, f"num_heads={num_heads} disagrees with the input's {heads} heads")
        work = x
        cache_4d = (batch, 1, seq)
    elif len(shape) == 3:  # (B, S, H * D) -> (B, S, H, D), caches as (B, S, 1, rd/2)
        batch, seq, hidden = shape
        if num_heads is None or int(num_heads) <= 0:
            raise ConversionIssue(INVALID_MODEL, "RotaryEmbedding with a 3-D input needs num_heads")
        heads = int(num_heads)
        if hidden % heads:
            raise ConversionIssue(INVALID_MODEL, f"hidden size {hidden} is not a multiple of num_heads={heads}")
        head_size = hidden // heads
        work = _reshape(ctx, x, (batch, seq, heads, head_size))
        cache_4d = (batch, seq, 1)
    else:
        raise ConversionIssue(INVALID_MODEL, f"RotaryEmbedding needs a 3-D or 4-D input, got rank {len(shape)}")
    if rotary_dim == 0:
        rotary_dim = head_size
    if rotary_dim < 0 or rotary_dim > head_size or rotary_dim % 2:
        raise ConversionIssue(INVALID_MODEL, f"rotary_embedding_dim={rotary_dim} must be even and <= the head size "
                                             f"{head_size}")
    half = rotary_dim // 2
    caches = []
    for name in (cos_cache, sin_cache):
        cache_shape = _shape(ctx, name, "the cos/sin cache")
        if ctx.has_input(3):
            positions = ctx.input(3)
            if len(cache_shape) != 2:
                raise ConversionIssue(INVALID_MODEL, f"with position_ids the cache must be 2-D, got "
                                                     f"{list(cache_shape)}")
            pos_shape = _shape(ctx, positions, "position_ids")
            if tuple(pos_shape) != (batch, seq):
                raise ConversionIssue(INVALID_MODEL, f"position_ids shape {list(pos_shape)} is not ({batch}, {seq})")
            data = ctx.value(positions).data
            if data is not None and ((data < 0) | (data >= cache_shape[0])).any():
                raise ConversionIssue(INVALID_MODEL, f"position_ids must lie in [0, {cache_shape[0]})")
            gathered = ctx.emit_to(OP.OH_NN_OPS_GATHER, [name, positions,
                                                        ctx.constant(np.asarray([0], np.int64), f"{name}.axis")],
                             dtype, (batch, seq, cache_shape[1]), f"{name}.gathered")
            cache_shape = (batch, seq, cache_shape[1])
        else:
            gathered = name
            if len(cache_shape) != 3 or tuple(cache_shape[:2]) != (batch, seq):
                raise ConversionIssue(INVALID_MODEL, f"without position_ids the cache must be ({batch}, {seq}, "
                                                     f"{half}), got {list(cache_shape)}")
        if cache_shape[-1] != half:
            raise ConversionIssue(INVALID_MODEL, f"the cache's last dim {cache_shape[-1]} is not rotary_embedding_dim"
                                                 f"/2 = {half}")
        target = (*cache_4d, half, 1) if interleaved else (*cache_4d, half)
        caches.append(_reshape(ctx, gathered, target))
    cos, sin = caches
    work_shape = _shape(ctx, work)
    rotated_part = work if rotary_dim == head_size else _slice(ctx, work, 3, 0, rotary_dim, f"{out}.rot")
    if interleaved:  # (..., rd) -> (..., rd/2, 2): pairs along the last axis
        pairs = _reshape(ctx, rotated_part, (*work_shape[:3], half, 2))
        x1 = _slice(ctx, pairs, 4, 0, 1, f"{out}.x1")
        x2 = _slice(ctx, pairs, 4, 1, 1, f"{out}.x2")
        axis = 4
    else:
        x1 = _slice(ctx, rotated_part, 3, 0, half, f"{out}.x1")
        x2 = _slice(ctx, rotated_part, 3, half, half, f"{out}.x2")
        axis = 3
    real = _binary(ctx, OP.OH_NN_OPS_SUB, _binary(ctx, OP.OH_NN_OPS_MUL, cos, x1, f"{out}.cos_x1"),
                   _binary(ctx, OP.OH_NN_OPS_MUL, sin, x2, f"{out}.sin_x2"), f"{out}.real")
    imag = _binary(ctx, OP.OH_NN_OPS_ADD, _binary(ctx, OP.OH_NN_OPS_MUL, sin, x1, f"{out}.sin_x1"),
                   _binary(ctx, OP.OH_NN_OPS_MUL, cos, x2, f"{out}.cos_x2"), f"{out}.imag")
    final_4d = len(shape) == 4
    partial = rotary_dim < head_size
    direct = out if final_4d and not partial else None  # the last op writes the ONNX output itself
    if interleaved:
        joined = _concat(ctx, [real, imag], axis, f"{out}.pairs")
        rotated = _reshape(ctx, joined, (*work_shape[:3], rotary_dim), output=direct)
    else:
        rotated = _concat(ctx, [real, imag], axis, f"{out}.rotated", output=direct)
    if partial:
        kept = _slice(ctx, work, 3, rotary_dim, head_size - rotary_dim, f"{out}.pass")
        rotated = _concat(ctx, [rotated, kept], 3, f"{out}.joined", output=out if final_4d else None)
    if not final_4d:
        _reshape(ctx, rotated, shape, output=out)


# ---------------------------------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------------------------------

def _to_heads(ctx: NodeContext, x: str, heads: int | None, what: str, attr: str) -> tuple[str, tuple[int, ...]]:
    """A 3-D (B, S, H * D) input as (B, H, S, D); a 4-D one as it is."""
    shape = _shape(ctx, x, f"the Attention {what}")
    if len(shape) == 4:
        if heads is not None and int(heads) != shape[1]:
            raise ConversionIssue(INVALID_MODEL, f"{attr}={heads} disagrees with the {what}'s {shape[1]} heads")
        return x, shape
    if heads is None or int(heads) <= 0:
        raise ConversionIssue(INVALID_MODEL, f"3-D Attention inputs need {attr}")
    batch, seq, hidden = shape
    heads = int(heads)
    if hidden % heads:
        raise ConversionIssue(INVALID_MODEL, f"the {what}'s hidden size {hidden} is not a multiple of {attr}={heads}")
    split = _reshape(ctx, x, (batch, seq, heads, hidden // heads))
    return _transpose(ctx, split, (0, 2, 1, 3)), (batch, heads, seq, hidden // heads)


def _mask_bias(ctx: NodeContext, dtype: np.dtype, total: int) -> str | None:
    """The attention mask as an additive bias (bool: 0 where True, -inf where False), padded to ``total`` keys."""
    if not ctx.has_input(3):
        return None
    mask = ctx.input(3)
    value = ctx.value(mask)
    shape = _shape(ctx, mask, "attn_mask")
    if not 1 <= len(shape) <= 4:
        raise ConversionIssue(INVALID_MODEL, f"attn_mask must have rank 1..4, got shape {list(shape)}")
    is_bool = value.dtype == np.bool_
    if not is_bool and value.dtype.kind not in "fiu":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"attn_mask of dtype {value.dtype} is not supported")
    if shape[-1] > total:
        raise ConversionIssue(INVALID_MODEL, f"attn_mask has {shape[-1]} keys, more than the {total} of K")
    if shape[-1] < total:  # a short mask: the missing keys are masked out
        fill_shape = (*shape[:-1], total - shape[-1])
        fill = np.zeros(fill_shape, np.bool_) if is_bool else np.full(fill_shape, -np.inf, value.dtype)
        mask = _concat(ctx, [mask, ctx.constant(fill, f"{mask}.pad")], len(shape) - 1, f"{mask}.padded")
    if is_bool:
        return _where(ctx, mask, _const(ctx, 0, dtype, "zero"), _const(ctx, -np.inf, dtype, "neg_inf"),
                      f"{ctx.output(0)}.mask_bias")
    return _cast(ctx, mask, dtype, f"{mask}.bias")


def _structural_bias(ctx: NodeContext, dtype: np.dtype, batch: int, q_len: int, total: int, past: int,
                     nonpad: str | None, causal: bool, left: int, right: int) -> str | None:
    """0 / -inf for the causal frontier, the sliding window and the nonpad_kv_seqlen padding, composed.

    offset = past length (or 0), or nonpad_kv_seqlen[b] - q_len per batch: query i attends key j iff
    j <= i + offset (causal), i + offset - left <= j <= i + offset + right (window), j < nonpad[b] (padding)."""
    windowed = left >= 0 or right >= 0
    if not (causal or windowed or nonpad is not None):
        return None
    out = ctx.output(0)
    i = np.arange(q_len).reshape(q_len, 1)
    j = np.arange(total).reshape(1, total)
    if nonpad is None:  # everything is known now
        diff = i + past - j  # (q, kv)
        allowed = np.ones((q_len, total), np.bool_)
        if causal:
            allowed &= diff >= 0
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        return ctx.constant(np.where(allowed, 0, -np.inf).astype(dtype), f"{ctx.name}.structural_bias")
    # per batch: offset[b] = nonpad[b] - q_len; conditions on i - j + offset[b] (B, 1, q, kv) and j < nonpad[b]
    lengths = _reshape(ctx, nonpad, (batch, 1, 1, 1))
    offset = _binary(ctx, OP.OH_NN_OPS_SUB, lengths, _const(ctx, q_len, np.int64, "q_len"), f"{out}.offset")
    diff = _binary(ctx, OP.OH_NN_OPS_ADD, ctx.constant((i - j).astype(np.int64), f"{ctx.name}.i_minus_j"), offset,
                   f"{out}.diff")
    zero64 = _const(ctx, 0, np.int64, "zero_i64")
    allowed = _compare(ctx, OP.OH_NN_OPS_LESS, ctx.constant(j.reshape(1, 1, 1, total).astype(np.int64),
                                                            f"{ctx.name}.key_positions"), lengths, f"{out}.nonpad")
    conditions = []
    if causal:
        conditions.append(_compare(ctx, OP.OH_NN_OPS_GREATER_EQUAL, diff, zero64, f"{out}.causal"))
    if left >= 0:
        conditions.append(_compare(ctx, OP.OH_NN_OPS_LESS_EQUAL, diff, _const(ctx, left, np.int64, "left"),
                                   f"{out}.left_window"))
    if right >= 0:
        conditions.append(_compare(ctx, OP.OH_NN_OPS_GREATER_EQUAL, diff, _const(ctx, -right, np.int64, "right"),
                                   f"{out}.right_window"))
    for condition in conditions:
        allowed = _compare(ctx, OP.OH_NN_OPS_LOGICAL_AND, allowed, condition, f"{out}.allowed")
    return _where(ctx, allowed, _const(ctx, 0, dtype, "zero"), _const(ctx, -np.inf, dtype, "neg_inf"),
                  f"{out}.structural_bias")


@converts("Attention")
def attention(ctx: NodeContext) -> None:
    """ONNX Attention (opset 23..25) as MATMUL / SOFTMAX / ADD / WHERE (see the module docstring)."""
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    out = ctx.output(0)
    dtype = _float_input(ctx, q)
    for name in (k, v):
        if ctx.value(name).dtype != dtype:
            raise ConversionIssue(INVALID_MODEL, f"Q has dtype {dtype}, {name!r} {ctx.value(name).dtype}: "
                                                 "mixed dtypes are not supported")
    q_heads_attr, kv_heads_attr = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    causal = bool(int(ctx.attr("is_causal", 0)))
    scale = ctx.attr("scale")
    softcap = float(ctx.attr("softcap", 0.0))
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    precision = ctx.attr("softmax_precision")
    left, right = int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))
    if mode not in (0, 1, 2, 3):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"qk_matmul_output_mode={mode} is not supported (0..3)")
    if left < -1 or right < -1:
        raise ConversionIssue(INVALID_MODEL, f"left/right_window_size ({left}, {right}) must be -1 or >= 0")
    if softcap < 0:
        raise ConversionIssue(INVALID_MODEL, f"softcap={softcap} must be >= 0")
    work = dtype
    if precision is not None:
        precision = int(precision)
        if precision not in _ONNX_FLOAT_TYPES:
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"softmax_precision={precision} is not supported (1 = float32, "
                                                     "10 = float16, 11 = float64)")
        work = np.dtype(_ONNX_FLOAT_TYPES[precision])
    rank = len(_shape(ctx, q, "the Attention Q"))
    if rank not in (3, 4) or any(len(_shape(ctx, n)) != rank for n in (k, v)):
        raise ConversionIssue(INVALID_MODEL, "Q, K and V must all be 3-D or all 4-D")
    q4, (batch, q_heads, q_len, head) = _to_heads(ctx, q, q_heads_attr, "Q", "q_num_heads")
    k4, (_, kv_heads, kv_len, k_head) = _to_heads(ctx, k, kv_heads_attr, "K", "kv_num_heads")
    v4, (_, v_heads, _, v_head) = _to_heads(ctx, v, kv_heads_attr, "V", "kv_num_heads")
    if k_head != head or v_heads != kv_heads or _shape(ctx, k4)[2] != _shape(ctx, v4)[2]:
        raise ConversionIssue(INVALID_MODEL, f"K {list(_shape(ctx, k4))} and V {list(_shape(ctx, v4))} do not fit "
                                             f"Q {list(_shape(ctx, q4))}")
    if q_heads % kv_heads:
        raise ConversionIssue(INVALID_MODEL, f"q_num_heads={q_heads} is not a multiple of kv_num_heads={kv_heads}")
    groups = q_heads // kv_heads

    # KV cache: present = past ++ new along the sequence
    past = 0
    if ctx.has_input(4) != ctx.has_input(5):
        raise ConversionIssue(INVALID_MODEL, "past_key and past_value must be given together")
    nonpad = ctx.input(6) if ctx.has_input(6) else None
    if ctx.has_input(4):
        if nonpad is not None:
            raise ConversionIssue(INVALID_MODEL, "nonpad_kv_seqlen cannot be combined with past_key/past_value")
        past_k, past_v = ctx.input(4), ctx.input(5)
        pk, pv = _shape(ctx, past_k, "past_key"), _shape(ctx, past_v, "past_value")
        if pk[:2] != (batch, kv_heads) or pk[3] != head or pv[:2] != (batch, kv_heads) or pv[3] != v_head or \
                pk[2] != pv[2]:
            raise ConversionIssue(INVALID_MODEL, f"past_key {list(pk)} / past_value {list(pv)} do not fit K and V")
        past = pk[2]
        k4 = _concat(ctx, [past_k, k4], 2, f"{out}.present_key", output=ctx.output(1) if _wanted(ctx, 1) else None)
        v4 = _concat(ctx, [past_v, v4], 2, f"{out}.present_value", output=ctx.output(2) if _wanted(ctx, 2) else None)
    else:
        for position, name in ((1, k4), (2, v4)):
            if _wanted(ctx, position):
                ctx.settle(ctx.output(position), _shape(ctx, name), dtype)
                ctx.alias(name, ctx.output(position))
    total = past + kv_len
    if nonpad is not None:
        if ctx.value(nonpad).dtype != np.int64 or _shape(ctx, nonpad, "nonpad_kv_seqlen") != (batch,):
            raise ConversionIssue(INVALID_MODEL, f"nonpad_kv_seqlen must be int64 of shape ({batch},)")
        data = ctx.value(nonpad).data
        if data is not None and ((data < 0) | (data > total)).any():
            raise ConversionIssue(INVALID_MODEL, f"nonpad_kv_seqlen {data.tolist()} must lie in [0, {total}]")

    # scores = (Q sqrt(scale)) (K sqrt(scale))^T, grouped-query heads against their shared K head
    if scale is None:
        scale = 1.0 / math.sqrt(head)
    root = _const(ctx, np.sqrt(np.float64(scale)), dtype, "sqrt_scale")
    qs = _binary(ctx, OP.OH_NN_OPS_MUL, q4, root, f"{out}.q_scaled")
    ks = _binary(ctx, OP.OH_NN_OPS_MUL, k4, root, f"{out}.k_scaled")
    scores_shape = (batch, q_heads, q_len, total)
    if groups > 1:
        qs = _reshape(ctx, qs, (batch, kv_heads, groups, q_len, head))
        ks = _reshape(ctx, ks, (batch, kv_heads, 1, total, head))
        grouped = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [qs, ks], dtype, (batch, kv_heads, groups, q_len, total),
                        f"{out}.scores_grouped", {"OH_NN_MATMUL_TRANSPOSE_B": True})
        scores = _reshape(ctx, grouped, scores_shape)
    else:
        scores = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [qs, ks], dtype, scores_shape, f"{out}.scores",
                       {"OH_NN_MATMUL_TRANSPOSE_B": True})
    raw = scores
    if softcap > 0:
        cap = _const(ctx, softcap, dtype, "softcap")
        scores = _binary(ctx, OP.OH_NN_OPS_MUL, _unary(ctx, OP.OH_NN_OPS_TANH, _binary(
            ctx, OP.OH_NN_OPS_DIV, scores, cap, f"{out}.scores_over_cap"), f"{out}.tanh"), cap, f"{out}.capped")
    capped = scores

    # bias: mask (+) structural 0/-inf terms
    bias = _mask_bias(ctx, dtype, total)
    structural = _structural_bias(ctx, dtype, batch, q_len, total, past, nonpad, causal, left, right)
    if bias is not None and structural is not None:
        bias = _binary(ctx, OP.OH_NN_OPS_ADD, bias, structural, f"{out}.bias")
    elif structural is not None:
        bias = structural
    # a row whose bias is -inf everywhere has no key: its bias becomes 0 (no NaN from the softmax), its
    # probabilities 0 afterwards
    row_mask = None
    with_bias = scores
    if bias is not None:
        bias_shape = _shape(ctx, bias)
        if _broadcast(scores_shape, bias_shape) != scores_shape:
            raise ConversionIssue(INVALID_MODEL, f"the attention bias of shape {list(bias_shape)} (attn_mask) "
                                                 f"does not broadcast to {list(scores_shape)}")
        bias_data = ctx.value(bias).data
        if bias_data is not None:
            masked_rows = np.isneginf(bias_data.max(axis=-1, keepdims=True))
            row_mask = ctx.constant(masked_rows, f"{ctx.name}.masked_rows") if masked_rows.any() else None
        else:
            row_max = _reduce(ctx, "MAX", bias, [len(bias_shape) - 1], f"{out}.bias_row_max")
            row_mask = _compare(ctx, OP.OH_NN_OPS_EQUAL, row_max, _const(ctx, -np.inf, dtype, "neg_inf"),
                                f"{out}.masked_rows")
        with_bias = _binary(ctx, OP.OH_NN_OPS_ADD, scores, bias, f"{out}.biased")
        if row_mask is not None:
            safe_bias = _where(ctx, row_mask, _const(ctx, 0, dtype, "zero"), bias, f"{out}.safe_bias")
            scores = _binary(ctx, OP.OH_NN_OPS_ADD, scores, safe_bias, f"{out}.safely_biased")
        else:
            scores = with_bias

    # softmax (in softmax_precision)
    logits = _cast(ctx, scores, work, f"{out}.logits")
    if work == np.float16:  # step by step in float16, as the ONNX reference (SOFTMAX would widen to float32)
        shifted = _binary(ctx, OP.OH_NN_OPS_SUB, logits, _reduce(ctx, "MAX", logits, [3], f"{out}.row_max"),
                          f"{out}.shifted")
        exps = ctx.emit_to(OP.OH_NN_OPS_EXP, [shifted], work, scores_shape, f"{out}.exp",
                     {"OH_NN_EXP_BASE": -1.0, "OH_NN_EXP_SCALE": 1.0, "OH_NN_EXP_SHIFT": 0.0})
        probs = _binary(ctx, OP.OH_NN_OPS_DIV, exps, _reduce(ctx, "SUM", exps, [3], f"{out}.row_sum"),
                        f"{out}.probs")
    else:
        probs = ctx.emit_to(OP.OH_NN_OPS_SOFTMAX, [logits], work, scores_shape, f"{out}.probs",
                      {"OH_NN_SOFTMAX_AXIS": -1})
    if row_mask is not None:
        probs = _where(ctx, row_mask, _const(ctx, 0, work, "zero_work"), probs, f"{out}.probs_guarded")
    probs = _cast(ctx, probs, dtype, f"{out}.probs_back")

    if _wanted(ctx, 3):
        chosen = {0: raw, 1: capped, 2: with_bias, 3: probs}[mode]
        ctx.settle(ctx.output(3), scores_shape, dtype)
        if ctx.value(chosen).data is None and chosen not in ctx.graph.inputs:
            ctx.alias(chosen, ctx.output(3))
        else:
            _reshape(ctx, chosen, scores_shape, output=ctx.output(3))

    # Y = probs V
    final_4d = rank == 4
    y_shape = (batch, q_heads, q_len, v_head)
    if groups > 1:
        grouped = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [_reshape(ctx, probs, (batch, kv_heads, groups, q_len, total)),
                                                   _reshape(ctx, v4, (batch, kv_heads, 1, total, v_head))],
                        dtype, (batch, kv_heads, groups, q_len, v_head), f"{out}.y_grouped")
        y = _reshape(ctx, grouped, y_shape, output=out if final_4d else None)
    else:
        y = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [probs, v4], dtype, y_shape, f"{out}.y4",
                  output=out if final_4d else None)
    if not final_4d:
        per_token = _transpose(ctx, y, (0, 2, 1, 3))
        _reshape(ctx, per_token, (batch, q_len, q_heads * v_head), output=out)


# ---------------------------------------------------------------------------------------------------------------
# TensorScatter
# ---------------------------------------------------------------------------------------------------------------

@converts("TensorScatter")
def tensor_scatter(ctx: NodeContext) -> None:
    """present = past with update written at write_indices[b] + s (mod max_sequence_length when circular) along
    ``axis``: SCATTER_ND of the update into zeros, WHERE over the mask of written positions."""
    past, update = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"mode={mode!r} is not supported (linear, circular)")
    dtype = ctx.value(past).dtype
    if ctx.value(update).dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"update dtype {ctx.value(update).dtype} differs from the cache's {dtype}")
    shape = _shape(ctx, past, "past_cache")
    u_shape = _shape(ctx, update, "update")
    rank = len(shape)
    if rank < 2 or len(u_shape) != rank:
        raise ConversionIssue(INVALID_MODEL, f"past_cache {list(shape)} and update {list(u_shape)} need one rank >= 2")
    axis = _norm_axis(ctx.attr("axis", -2), rank)
    if axis == 0:
        raise ConversionIssue(INVALID_MODEL, "axis must not be the batch dimension 0")
    if any(a != b for i, (a, b) in enumerate(zip(shape, u_shape)) if i != axis) or u_shape[axis] > shape[axis]:
        raise ConversionIssue(INVALID_MODEL, f"update {list(u_shape)} does not fit past_cache {list(shape)} along "
                                             f"axis {axis}")
    batch, max_len, seq = shape[0], shape[axis], u_shape[axis]
    if ctx.has_input(2):
        writes = ctx.input(2)
        if ctx.value(writes).dtype != np.int64 or _shape(ctx, writes, "write_indices") != (batch,):
            raise ConversionIssue(INVALID_MODEL, f"write_indices must be int64 of shape ({batch},)")
        data = ctx.value(writes).data
        if data is not None:
            if (data < 0).any():
                raise ConversionIssue(INVALID_MODEL, f"write_indices {data.tolist()} must be >= 0")
            if mode == "linear" and (data + seq > max_len).any():
                raise ConversionIssue(INVALID_MODEL, f"write_indices {data.tolist()} + {seq} updates run past the "
                                                     f"{max_len} cache positions (mode linear)")
    else:
        writes = ctx.constant(np.zeros(batch, np.int64), f"{ctx.name}.write_indices")
    start = _reshape(ctx, writes, (batch, 1))
    if mode == "circular":
        start = _binary(ctx, OP.OH_NN_OPS_MOD, start, _const(ctx, max_len, np.int64, "max_len"), f"{out}.start")
    # cache position of update row s of batch b: start[b] + s (mod max_len)
    steps = ctx.constant(np.arange(seq, dtype=np.int64).reshape(1, seq), f"{ctx.name}.steps")
    position = _binary(ctx, OP.OH_NN_OPS_ADD, start, steps, f"{out}.positions")  # (B, S)
    if mode == "circular":
        position = _binary(ctx, OP.OH_NN_OPS_MOD, position, _const(ctx, max_len, np.int64, "max_len"),
                           f"{out}.positions_wrapped")
    prefix = shape[:axis]
    # SCATTER_ND indices (*prefix, S, axis + 1): the prefix coordinates, then the cache position
    position_b = _reshape(ctx, position, (batch, *([1] * (axis - 1)), seq, 1))
    if axis > 1:
        position_b = ctx.emit_to(OP.OH_NN_OPS_BROADCAST_TO, [position_b], np.int64, (*prefix, seq, 1),
                           f"{out}.positions_full", {"OH_NN_BROADCAST_TO_SHAPE": [*prefix, seq, 1]})
    grid = np.stack(np.meshgrid(*[np.arange(d) for d in prefix], np.arange(seq), indexing="ij")[:-1], axis=-1)
    indices = _concat(ctx, [ctx.constant(grid.astype(np.int64), f"{ctx.name}.prefix_grid"), position_b], axis + 1,
                      f"{out}.indices")
    scattered = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [indices, update, ctx.constant(np.asarray(shape, np.int64),
                                                                                   f"{ctx.name}.shape")],
                      dtype, shape, f"{out}.scattered")
    # written[b, p]: (p - start[b]) mod max_len < S (linear: 0 <= p - start[b] < S)
    cache_positions = ctx.constant(np.arange(max_len, dtype=np.int64).reshape(1, max_len), f"{ctx.name}.cache_pos")
    offset = _binary(ctx, OP.OH_NN_OPS_SUB, cache_positions, start, f"{out}.offset")  # (B, M)
    if mode == "circular":
        offset = _binary(ctx, OP.OH_NN_OPS_MOD, _binary(ctx, OP.OH_NN_OPS_ADD, offset, _const(
            ctx, max_len, np.int64, "max_len"), f"{out}.offset_pos"), _const(ctx, max_len, np.int64, "max_len"),
            f"{out}.offset_wrapped")
        written = _compare(ctx, OP.OH_NN_OPS_LESS, offset, _const(ctx, seq, np.int64, "seq"), f"{out}.written")
    else:
        written = _compare(ctx, OP.OH_NN_OPS_LOGICAL_AND,
                           _compare(ctx, OP.OH_NN_OPS_GREATER_EQUAL, offset, _const(ctx, 0, np.int64, "zero"),
                                    f"{out}.after_start"),
                           _compare(ctx, OP.OH_NN_OPS_LESS, offset, _const(ctx, seq, np.int64, "seq"),
                                    f"{out}.before_end"), f"{out}.written")
    mask_shape = [1] * rank
    mask_shape[0], mask_shape[axis] = batch, max_len
    written = _reshape(ctx, written, mask_shape)
    _where(ctx, written, scattered, past, out, output=out)


# ---------------------------------------------------------------------------------------------------------------
# DynamicQuantizeLinear
# ---------------------------------------------------------------------------------------------------------------

@converts("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx: NodeContext) -> None:
    """uint8 quantization with scale = (max(0, max x) - min(0, min x)) / 255 (1 for an all-zero range, as
    onnxruntime; the reference gives 1/255, the function body 0),
    zero point = round(clip(-min / scale, 0, 255)), y = clip(round(x / scale) + zero point, 0, 255); float32."""
    x = ctx.input(0)
    y = ctx.output(0)
    if ctx.value(x).dtype != np.float32:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"DynamicQuantizeLinear takes float32, got {ctx.value(x).dtype}")
    shape = _shape(ctx, x, "the DynamicQuantizeLinear input")
    f32 = np.float32
    flat = _reshape(ctx, x, (int(np.prod(shape)),)) if len(shape) != 1 else x
    high = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, _reduce(ctx, "MAX", flat, [0], f"{y}.max"),
                   _const(ctx, 0, f32, "zero"), f"{y}.max0")
    low = _binary(ctx, OP.OH_NN_OPS_MINIMUM, _reduce(ctx, "MIN", flat, [0], f"{y}.min"),
                  _const(ctx, 0, f32, "zero"), f"{y}.min0")
    spread = _binary(ctx, OP.OH_NN_OPS_SUB, high, low, f"{y}.range")
    scale = _binary(ctx, OP.OH_NN_OPS_DIV, spread, _const(ctx, 255, f32, "qrange"), f"{y}.scale_of_range")
    scale = _where(ctx, _compare(ctx, OP.OH_NN_OPS_EQUAL, spread, _const(ctx, 0, f32, "zero"), f"{y}.flat_range"),
                   _const(ctx, 1, f32, "one"), scale, f"{y}.scale")
    initial = _binary(ctx, OP.OH_NN_OPS_SUB, _const(ctx, 0, f32, "zero"),
                      _binary(ctx, OP.OH_NN_OPS_DIV, low, scale, f"{y}.min_over_scale"), f"{y}.initial_zero_point")
    zero_point = _unary(ctx, OP.OH_NN_OPS_ROUND, _clip(ctx, initial, 0, 255, f"{y}.zp_clipped"), f"{y}.zp")
    quotient = _binary(ctx, OP.OH_NN_OPS_DIV, x, scale if len(shape) else _reshape(ctx, scale, ()), f"{y}.scaled")
    shifted = _binary(ctx, OP.OH_NN_OPS_ADD, _unary(ctx, OP.OH_NN_OPS_ROUND, quotient, f"{y}.rounded"),
                      zero_point if len(shape) else _reshape(ctx, zero_point, ()), f"{y}.shifted")
    _cast(ctx, _clip(ctx, shifted, 0, 255, f"{y}.clipped"), np.uint8, output=y)
    if _wanted(ctx, 1):
        _reshape(ctx, scale, (), output=ctx.output(1))
    if _wanted(ctx, 2):
        _reshape(ctx, _cast(ctx, zero_point, np.uint8, f"{y}.zp_u8"), (), output=ctx.output(2))


# ---------------------------------------------------------------------------------------------------------------
# ConvInteger, QLinearConv: exact integer convolution in float64
# ---------------------------------------------------------------------------------------------------------------

_INT32_LIMIT = 2 ** 31


def _conv_ints(ctx: NodeContext, name: str, nd: int, default: int) -> list[int]:
    value = ctx.attr(name)
    if value is None:
        return [default] * nd
    value = [int(v) for v in value]
    if len(value) != nd:
        raise ConversionIssue(INVALID_MODEL, f"{name}={value} needs {nd} values")
    return value


def _conv_pads(ctx: NodeContext, nd: int, kernel, strides, dilations, sizes) -> list[tuple[int, int]]:
    """(begin, end) per spatial dim, ``auto_pad`` resolved against the static input size."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    pads = ctx.attr("pads")
    if auto_pad in ("NOTSET", ""):
        pads = [int(p) for p in pads] if pads is not None else [0] * (2 * nd)
        if len(pads) != 2 * nd or any(p < 0 for p in pads):
            raise ConversionIssue(INVALID_MODEL, f"pads={pads} must be {2 * nd} values >= 0")
        return list(zip(pads[:nd], pads[nd:]))
    if auto_pad == "VALID":
        return [(0, 0)] * nd
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"auto_pad={auto_pad!r} is not supported")
    result = []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        result.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
    return result


def _zero_point_data(ctx: NodeContext, position: int, operand: str, per_channel: int | None) -> np.ndarray | str | None:
    """A zero point: its data (int64; scalar, or one per output channel when ``per_channel``), a runtime tensor,
    or None when absent."""
    if not ctx.has_input(position):
        return None
    zp = ctx.input(position)
    value = ctx.value(zp)
    if value.dtype != ctx.value(operand).dtype:
        raise ConversionIssue(INVALID_MODEL, f"zero point {zp!r} has dtype {value.dtype}, its operand "
                                             f"{ctx.value(operand).dtype}")
    size = int(np.prod(_shape(ctx, zp, "a zero point")))
    if size != 1 and (per_channel is None or size != per_channel or len(_shape(ctx, zp)) != 1):
        what = "a scalar" if per_channel is None else f"a scalar or {per_channel} values (one per output channel)"
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"zero point {zp!r} of shape {list(_shape(ctx, zp))} is not "
                                                     f"supported ({what})")
    return zp if value.data is None else value.data.astype(np.int64).reshape(-1)


def _integer_conv(ctx: NodeContext, x: str, x_zp, w: str, w_zp, bias: str | None, out: str) -> str:
    """(x - x_zp) conv (w - w_zp) (+ bias) as a float64 NCHW tensor with exact integer values."""
    f64 = np.dtype(np.float64)
    for name in (x, w):
        if ctx.value(name).dtype not in (np.int8, np.uint8):
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"{name!r} has dtype {ctx.value(name).dtype} (int8/uint8 only)")
    x_shape = _shape(ctx, x, "the convolution input")
    w_shape = _shape(ctx, w, "the convolution weight")
    nd = len(x_shape) - 2
    if nd < 1 or len(w_shape) != len(x_shape):
        raise ConversionIssue(INVALID_MODEL, f"input {list(x_shape)} and weight {list(w_shape)} do not fit")
    if nd > 2:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"{nd}-D convolution is not supported: NNRt has only 2-D "
                                                     "convolutions")
    out_c, in_per_group = w_shape[:2]
    kernel = list(w_shape[2:])
    kernel_attr = ctx.attr("kernel_shape")
    if kernel_attr is not None and [int(k) for k in kernel_attr] != kernel:
        raise ConversionIssue(INVALID_MODEL, f"kernel_shape {list(kernel_attr)} disagrees with the weight "
                                             f"{list(w_shape)}")
    group = int(ctx.attr("group", 1))
    if group < 1 or out_c % group or x_shape[1] != in_per_group * group:
        raise ConversionIssue(INVALID_MODEL, f"group={group} does not fit {x_shape[1]} input / {out_c} output "
                                             f"channels with weight {list(w_shape)}")
    strides = _conv_ints(ctx, "strides", nd, 1)
    dilations = _conv_ints(ctx, "dilations", nd, 1)
    pads = _conv_pads(ctx, nd, kernel, strides, dilations, x_shape[2:])
    spatial = [(s + p0 + p1 - ((k - 1) * d + 1)) // st + 1
               for s, k, st, d, (p0, p1) in zip(x_shape[2:], kernel, strides, dilations, pads)]
    if any(n < 1 for n in spatial):
        raise ConversionIssue(INVALID_MODEL, f"the convolution output would be empty ({spatial})")
    out_shape = (x_shape[0], out_c, *spatial)

    # x - x_zp in float64 (exact)
    xf = _cast(ctx, x, f64, f"{out}.x64")
    if isinstance(x_zp, str):
        xf = _binary(ctx, OP.OH_NN_OPS_SUB, xf, _cast(ctx, x_zp, f64, f"{out}.x_zp64"), f"{out}.x_centred")
    elif x_zp is not None and x_zp[0] != 0:
        xf = _binary(ctx, OP.OH_NN_OPS_SUB, xf, _const(ctx, float(x_zp[0]), f64, "x_zero_point"), f"{out}.x_centred")
    # w - w_zp, as [O, kH, kW, C/g] float64
    w_value = ctx.value(w)
    channel_zp = (out_c, *([1] * (nd + 1)))
    if w_value.data is not None and not isinstance(w_zp, str):
        weight = w_value.data.astype(np.float64)
        if w_zp is not None:
            weight = weight - (w_zp.reshape(channel_zp) if w_zp.size > 1 else w_zp[0])
        if nd == 1:
            weight = weight[:, :, None, :]
        x_range = 255.0
        if x_zp is not None and not isinstance(x_zp, str):
            info = np.iinfo(ctx.value(x).dtype)
            x_range = float(max(x_zp[0] - info.min, info.max - x_zp[0]))
        bound = np.abs(weight).reshape(out_c, -1).sum(axis=1).max() * x_range
        if bound >= _INT32_LIMIT:  # ONNX wraps an overflowing int32 accumulator; float64 would not
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"the int32 accumulator could overflow (|sum| up to "
                                                         f"{bound:.0f}): wrap-around is not reproduced")
        w_ohwi = ctx.constant(np.ascontiguousarray(weight.transpose(0, 2, 3, 1)), f"{w}.ohwi64")
    else:
        bound = in_per_group * int(np.prod(kernel)) * 255.0 * 255.0
        if bound >= _INT32_LIMIT:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"with a runtime weight the int32 accumulator could overflow "
                                                         f"(|sum| up to {bound:.0f}): wrap-around is not reproduced")
        wf = _cast(ctx, w, f64, f"{out}.w64")
        if isinstance(w_zp, str):
            zp64 = _cast(ctx, w_zp, f64, f"{out}.w_zp64")
            if int(np.prod(_shape(ctx, w_zp))) > 1:
                zp64 = _reshape(ctx, zp64, channel_zp)
            wf = _binary(ctx, OP.OH_NN_OPS_SUB, wf, zp64, f"{out}.w_centred")
        elif w_zp is not None:
            zp = w_zp.reshape(channel_zp) if w_zp.size > 1 else w_zp[0]
            wf = _binary(ctx, OP.OH_NN_OPS_SUB, wf, ctx.constant(np.asarray(zp, np.float64), f"{ctx.name}.w_zp"),
                         f"{out}.w_centred")
        if nd == 1:
            wf = _reshape(ctx, wf, (out_c, in_per_group, 1, kernel[0]))
        w_ohwi = _transpose(ctx, wf, (0, 2, 3, 1))
    if bias is None:
        b = ctx.constant(np.zeros(out_c, np.float64), f"{ctx.name}.bias64")
    elif ctx.value(bias).data is not None:
        b = ctx.constant(ctx.value(bias).data.astype(np.float64).reshape(out_c), f"{bias}.f64")
    else:
        b = _cast(ctx, bias, f64, f"{bias}.f64")

    # NCHW -> NHWC (1-D: [N, C, L] as [N, 1, L, C]), CONV2D / DEPTHWISE_CONV2D_NATIVE, back
    if nd == 1:
        n, c, length = _shape(ctx, xf)
        x_nhwc = _reshape(ctx, _transpose(ctx, xf, (0, 2, 1)), (n, 1, length, c))
        kernel, strides, dilations, pads = [1] + kernel, [1] + strides, [1] + dilations, [(0, 0)] + pads
        y_nhwc_shape = (out_shape[0], 1, out_shape[2], out_c)
    else:
        x_nhwc = _transpose(ctx, xf, NCHW_TO_NHWC)
        y_nhwc_shape = tuple(out_shape[p] for p in NCHW_TO_NHWC)
    depthwise = group > 1 and in_per_group == 1
    prefix = "OH_NN_DEPTHWISE_CONV2D_NATIVE" if depthwise else "OH_NN_CONV2D"
    (top, bottom), (left, right) = pads
    params = {f"{prefix}_STRIDES": strides, f"{prefix}_DILATION": dilations,
              f"{prefix}_PAD": [top, bottom, left, right]}
    if not depthwise and group != 1:
        params["OH_NN_CONV2D_GROUP"] = group
    y_nhwc = ctx.emit_to(OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE if depthwise else OP.OH_NN_OPS_CONV2D,
                   [x_nhwc, w_ohwi, b], f64, y_nhwc_shape, f"{out}.acc_nhwc", params)
    if nd == 1:
        return _transpose(ctx, _reshape(ctx, y_nhwc, (out_shape[0], out_shape[2], out_c)), (0, 2, 1))
    return _transpose(ctx, y_nhwc, NHWC_TO_NCHW)


@converts("ConvInteger")
def conv_integer(ctx: NodeContext) -> None:
    """ConvInteger: (x - x_zero_point) conv (w - w_zero_point) in float64 (exact), CAST to int32."""
    x, w = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    out_c = _shape(ctx, w, "the convolution weight")[0]
    acc = _integer_conv(ctx, x, _zero_point_data(ctx, 2, x, None), w, _zero_point_data(ctx, 3, w, out_c), None, out)
    _cast(ctx, acc, np.int32, output=out)


@converts("QLinearConv")
def qlinear_conv(ctx: NodeContext) -> None:
    """QLinearConv: the exact float64 accumulator (+ int32 bias), then as the ONNX reference:
    round_half_even(clip(acc * (x_scale * w_scale / y_scale) + y_zero_point)) cast to the output type."""
    x, w = ctx.input(0), ctx.input(3)
    out = ctx.output(0)
    out_c = _shape(ctx, w, "the convolution weight")[0]
    y_zp = ctx.input(7)
    out_dtype = ctx.value(y_zp).dtype
    if out_dtype not in (np.int8, np.uint8):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"y_zero_point dtype {out_dtype} is not supported (int8/uint8)")
    if int(np.prod(_shape(ctx, y_zp, "y_zero_point"))) != 1:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "y_zero_point must be a scalar (per-tensor)")
    bias = ctx.input(8) if ctx.has_input(8) else None
    if bias is not None and (ctx.value(bias).dtype != np.int32 or _shape(ctx, bias, "B") != (out_c,)):
        raise ConversionIssue(INVALID_MODEL, f"B must be int32 of shape ({out_c},)")
    acc = _integer_conv(ctx, x, _zero_point_data(ctx, 2, x, None), w, _zero_point_data(ctx, 5, w, out_c), bias, out)
    x_scale, w_scale, y_scale = ctx.input(1), ctx.input(4), ctx.input(6)
    for name in (x_scale, w_scale, y_scale):
        if ctx.value(name).dtype != np.float32:
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"scale {name!r} has dtype {ctx.value(name).dtype} (float32 only)")
    for name in (x_scale, y_scale):
        if int(np.prod(_shape(ctx, name, "a scale"))) != 1:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"scale {name!r} must be a scalar (per-tensor)")
    w_count = int(np.prod(_shape(ctx, w_scale, "w_scale")))
    if w_count not in (1, out_c):
        raise ConversionIssue(INVALID_MODEL, f"w_scale has {w_count} values for {out_c} output channels")
    rank = len(_shape(ctx, acc))
    channel = (1, out_c, *([1] * (rank - 2))) if w_count > 1 else ()
    data = [ctx.value(n).data for n in (x_scale, w_scale, y_scale)]
    if all(d is not None for d in data):  # float32 arithmetic, as the reference
        combined = data[0].reshape(()) * data[1].reshape(-1) / data[2].reshape(())
        factor = ctx.constant(combined.astype(np.float64).reshape(channel), f"{ctx.name}.requant_scale")
    else:
        xw = _binary(ctx, OP.OH_NN_OPS_MUL, _reshape(ctx, x_scale, ()), _reshape(ctx, w_scale, channel),
                     f"{out}.xw_scale")
        factor = _cast(ctx, _binary(ctx, OP.OH_NN_OPS_DIV, xw, _reshape(ctx, y_scale, ()), f"{out}.requant32"),
                       np.float64, f"{out}.requant_scale")
    real = _binary(ctx, OP.OH_NN_OPS_MUL, acc, factor, f"{out}.real")
    zp_data = ctx.value(y_zp).data
    if zp_data is None:
        real = _binary(ctx, OP.OH_NN_OPS_ADD, real, _cast(ctx, _reshape(ctx, y_zp, ()), np.float64, f"{out}.y_zp64"),
                       f"{out}.shifted")
    elif int(zp_data.reshape(-1)[0]) != 0:
        real = _binary(ctx, OP.OH_NN_OPS_ADD, real, _const(ctx, float(zp_data.reshape(-1)[0]), np.float64, "y_zp"),
                       f"{out}.shifted")
    info = np.iinfo(out_dtype)
    rounded = _unary(ctx, OP.OH_NN_OPS_ROUND, _clip(ctx, real, info.min, info.max, f"{out}.clipped"),
                     f"{out}.rounded")
    _cast(ctx, rounded, out_dtype, output=out)


# ---------------------------------------------------------------------------------------------------------------
# MaxUnpool
# ---------------------------------------------------------------------------------------------------------------

@converts("MaxUnpool")
def max_unpool(ctx: NodeContext) -> None:
    """Y (inferred shape, zeros) with Y.flat[I] = X, padded with zeros at the end to ``output_shape``.

    Constant indices: a repeated index keeps its last write (the ONNX reference), SCATTER_ND of the kept values.
    Runtime indices: SCATTER_ND sums, so the values (in float64) and a count are scattered and divided: exact for
    the equal values MaxPool writes at a repeated index, the mean otherwise."""
    x, indices = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    dtype = _float_input(ctx, x)
    x_shape = _shape(ctx, x, "the MaxUnpool input")
    nd = len(x_shape) - 2
    if nd < 1:
        raise ConversionIssue(INVALID_MODEL, f"MaxUnpool needs an (N, C, spatial...) input, got {list(x_shape)}")
    if ctx.value(indices).dtype != np.int64 or _shape(ctx, indices, "the indices") != x_shape:
        raise ConversionIssue(INVALID_MODEL, f"the indices must be int64 of the input's shape {list(x_shape)}")
    kernel = ctx.attr("kernel_shape")
    if kernel is None or len(kernel) != nd:
        raise ConversionIssue(INVALID_MODEL, f"kernel_shape needs {nd} values, got {kernel}")
    kernel = [int(k) for k in kernel]
    strides = _conv_ints(ctx, "strides", nd, 1)
    pads = _conv_ints(ctx, "pads", 2 * nd, 0)
    inferred = [x_shape[0], x_shape[1]] + [(size - 1) * s - (pads[i] + pads[nd + i]) + k
                                           for i, (size, s, k) in enumerate(zip(x_shape[2:], strides, kernel))]
    if any(d < 1 for d in inferred):
        raise ConversionIssue(INVALID_MODEL, f"the unpooled shape {inferred} is empty")
    target = list(inferred)
    if ctx.has_input(2):
        target = [int(d) for d in ctx.constant_input(2, "output_shape").reshape(-1)]
        if len(target) != len(inferred) or any(t < i for t, i in zip(target, inferred)):
            raise ConversionIssue(INVALID_MODEL, f"output_shape {target} must have rank {len(inferred)} and be at "
                                                 f"least the unpooled shape {inferred}")
    total = int(np.prod(inferred))
    count = int(np.prod(x_shape))
    flat_x = _reshape(ctx, x, (count,))
    shape_const = ctx.constant(np.asarray([total], np.int64), f"{ctx.name}.flat_shape")
    padded = target != inferred
    index_data = ctx.value(indices).data
    if index_data is not None:
        flat = index_data.reshape(-1)
        if ((flat < 0) | (flat >= total)).any():
            raise ConversionIssue(INVALID_MODEL, f"indices must lie in [0, {total}) (the unpooled shape {inferred})")
        last = {int(i): p for p, i in enumerate(flat)}  # the last write of each index wins
        keep = np.asarray(sorted(last.values()), np.int64)
        values = flat_x
        if keep.size != count:
            values = ctx.emit_to(OP.OH_NN_OPS_GATHER, [flat_x, ctx.constant(keep, f"{ctx.name}.kept"),
                                                      ctx.constant(np.asarray([0], np.int64), f"{ctx.name}.axis")],
                           dtype, (keep.size,), f"{out}.kept_values")
        where = ctx.constant(flat[keep].reshape(-1, 1), f"{ctx.name}.positions")
        scattered = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [where, values, shape_const], dtype, (total,),
                          f"{out}.scattered")
    else:
        where = _reshape(ctx, indices, (count, 1))
        f64 = np.dtype(np.float64)
        sums = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [where, _cast(ctx, flat_x, f64, f"{out}.x64"), shape_const], f64,
                     (total,), f"{out}.sums")
        hits = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [where, ctx.constant(np.ones(count, f64), f"{ctx.name}.ones"),
                                                    shape_const], f64, (total,), f"{out}.hits")
        hits = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, hits, _const(ctx, 1, f64, "one"), f"{out}.hits_at_least_1")
        scattered = _cast(ctx, _binary(ctx, OP.OH_NN_OPS_DIV, sums, hits, f"{out}.means"), dtype, f"{out}.scattered")
    if not padded:
        _reshape(ctx, scattered, inferred, output=out)
        return
    unpooled = _reshape(ctx, scattered, inferred)
    paddings = np.asarray([[0, t - i] for t, i in zip(target, inferred)], np.int64)
    ctx.emit_to(OP.OH_NN_OPS_PAD, [unpooled, ctx.constant(paddings, f"{ctx.name}.paddings")], dtype, target, out,
          {"OH_NN_PAD_CONSTANT_VALUE": 0.0, "OH_NN_PAD_PADDING_MODE": 0}, output=out)
