"""Converters of the attention family: Attention and RotaryEmbedding, decomposed into NNRt ops; and onnxruntime's
contrib Attention (com.microsoft: merged Q/K/V weights, mask_index forms, unidirectional, past / present).

Decisions (also stated where they are made):

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
"""
from __future__ import annotations

import math

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...ir.issues import DYNAMIC_SHAPE, INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE, ConversionIssue
from ..context import NodeContext
from . import converts
from ._common import (
    _ONNX_FLOAT_TYPES,
    _binary,
    _cast,
    _compare,
    _concat,
    _const,
    _float_input,
    _integer_product,
    _matmul,
    _ranked_shape,
    _reduce,
    _reshape,
    _shape,
    _transpose,
    _unary,
    _wanted,
    _where,
)
from ._dims import axis_iota, dims_tensor, reshape_to, shape_tensor

# -- RotaryEmbedding ---------------------------------------------------------------------------------------------------

def _slice(ctx: NodeContext, x: str, axis: int, start: int, length: int, hint: str) -> str:
    """x[..., start:start + length, ...] along ``axis`` (SLICE with full-rank begin/size)."""
    shape = list(_ranked_shape(ctx, x))
    begin = [0] * len(shape)
    size = [-1] * len(shape)  # (-1: the whole dim, known or not)
    begin[axis], size[axis] = start, length
    out_shape = list(shape)
    out_shape[axis] = length
    return ctx.emit_to(OP.OH_NN_OPS_SLICE, [x, ctx.constant(np.asarray(begin, np.int64), f"{x}.begin"),
                                          ctx.constant(np.asarray(size, np.int64), f"{x}.size")],
                 ctx.value(x).dtype, out_shape, hint)


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
    shape = _ranked_shape(ctx, x)  # (the batch and the sequence may be dynamic)
    interleaved = bool(int(ctx.attr("interleaved", 0)))
    rotary_dim = int(ctx.attr("rotary_embedding_dim", 0))
    num_heads = ctx.attr("num_heads")
    if len(shape) == 4:  # (B, H, S, D): work there, caches as (B, 1, S, rd/2)
        batch, heads, seq, head_size = shape
        _static_dims(ctx, x, (1, 3), "its heads and head size")
        if num_heads is not None and int(num_heads) != heads:
            raise ConversionIssue(INVALID_MODEL, f"num_heads={num_heads} disagrees with the input's {heads} heads")
        work = x
    elif len(shape) == 3:  # (B, S, H * D) -> (B, S, H, D), caches as (B, S, 1, rd/2)
        batch, seq, hidden = shape
        _static_dims(ctx, x, (2,), "its hidden size")
        if num_heads is None or int(num_heads) <= 0:
            raise ConversionIssue(INVALID_MODEL, "RotaryEmbedding with a 3-D input needs num_heads")
        heads = int(num_heads)
        if hidden % heads:
            raise ConversionIssue(INVALID_MODEL, f"hidden size {hidden} is not a multiple of num_heads={heads}")
        head_size = hidden // heads
        work = reshape_to(ctx, x, [_part(ctx, x, 0), _part(ctx, x, 1), heads, head_size], f"{out}.heads")
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
        cache_shape = _ranked_shape(ctx, name)
        if ctx.has_input(3):
            positions = ctx.input(3)
            if len(cache_shape) != 2:
                raise ConversionIssue(INVALID_MODEL, f"with position_ids the cache must be 2-D, got "
                                                     f"{list(cache_shape)}")
            pos_shape = _ranked_shape(ctx, positions)
            if not _fits(pos_shape, (batch, seq)):
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
            if len(cache_shape) != 3 or not _fits(cache_shape[:2], (batch, seq)):
                raise ConversionIssue(INVALID_MODEL, f"without position_ids the cache must be ({batch}, {seq}, "
                                                     f"{half}), got {list(cache_shape)}")
        if cache_shape[-1] != half:
            raise ConversionIssue(INVALID_MODEL, f"the cache's last dim {cache_shape[-1]} is not rotary_embedding_dim"
                                                 f"/2 = {half}")
        lead = [_part(ctx, gathered, 0), 1, _part(ctx, gathered, 1)] if len(shape) == 4 else \
            [_part(ctx, gathered, 0), _part(ctx, gathered, 1), 1]
        caches.append(reshape_to(ctx, gathered, [*lead, half, 1] if interleaved else [*lead, half], f"{name}.4d"))
    cos, sin = caches
    work_lead = [_part(ctx, work, a) for a in range(3)]
    rotated_part = work if rotary_dim == head_size else _slice(ctx, work, 3, 0, rotary_dim, f"{out}.rot")
    if interleaved:  # (..., rd) -> (..., rd/2, 2): pairs along the last axis
        pairs = reshape_to(ctx, rotated_part, [*work_lead, half, 2], f"{out}.pairs")
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
        rotated = reshape_to(ctx, joined, [*work_lead, rotary_dim], f"{out}.rotated", output=direct)
    else:
        rotated = _concat(ctx, [real, imag], axis, f"{out}.rotated", output=direct)
    if partial:
        kept = _slice(ctx, work, 3, rotary_dim, head_size - rotary_dim, f"{out}.pass")
        rotated = _concat(ctx, [rotated, kept], 3, f"{out}.joined", output=out if final_4d else None)
    if not final_4d:
        reshape_to(ctx, rotated, [_part(ctx, x, 0), _part(ctx, x, 1), shape[2]], f"{out}.tokens", output=out)


def _part(ctx: NodeContext, x: str, axis: int):
    """Dim ``axis`` of ``x`` for reshape_to: its size when known, else a [1] tensor read at run time."""
    size = ctx.value(x).shape[axis]
    return size if size >= 0 else dims_tensor(ctx, x, [axis])


def _fits(shape, expected) -> bool:
    """Whether ``shape`` is ``expected`` where both dims are known (a dynamic dim is checked at run time)."""
    return len(shape) == len(expected) and all(a == b or a < 0 or b < 0 for a, b in zip(shape, expected))


def _static_dims(ctx: NodeContext, x: str, axes, what: str) -> None:
    shape = ctx.value(x).shape
    if any(shape[a] < 0 for a in axes):
        raise ConversionIssue(DYNAMIC_SHAPE, f"{ctx.node.op_type} needs {what} of {x!r} static, got {list(shape)}",
                              tensor=x, axes=tuple(a for a in axes if shape[a] < 0))


# -- Attention ---------------------------------------------------------------------------------------------------------

def _to_heads(ctx: NodeContext, x: str, heads: int | None, what: str, attr: str) -> tuple[str, tuple[int, ...]]:
    """A 3-D (B, S, H * D) input as (B, H, S, D); a 4-D one as it is."""
    shape = _ranked_shape(ctx, x)  # (the batch and the sequence may be dynamic)
    if len(shape) == 4:
        _static_dims(ctx, x, (1, 3), f"the heads and head size of the {what}")
        if heads is not None and int(heads) != shape[1]:
            raise ConversionIssue(INVALID_MODEL, f"{attr}={heads} disagrees with the {what}'s {shape[1]} heads")
        return x, shape
    if heads is None or int(heads) <= 0:
        raise ConversionIssue(INVALID_MODEL, f"3-D Attention inputs need {attr}")
    _static_dims(ctx, x, (2,), f"the hidden size of the {what}")
    batch, seq, hidden = shape
    heads = int(heads)
    if hidden % heads:
        raise ConversionIssue(INVALID_MODEL, f"the {what}'s hidden size {hidden} is not a multiple of {attr}={heads}")
    split = reshape_to(ctx, x, [_part(ctx, x, 0), _part(ctx, x, 1), heads, hidden // heads], f"{x}.heads")
    return _transpose(ctx, split, (0, 2, 1, 3)), (batch, heads, seq, hidden // heads)


def _mask_bias(ctx: NodeContext, dtype: np.dtype, total: int) -> str | None:
    """The attention mask as an additive bias (bool: 0 where True, -inf where False), padded to ``total`` keys."""
    if not ctx.has_input(3):
        return None
    mask = ctx.input(3)
    value = ctx.value(mask)
    shape = _ranked_shape(ctx, mask)
    if not 1 <= len(shape) <= 4:
        raise ConversionIssue(INVALID_MODEL, f"attn_mask must have rank 1..4, got shape {list(shape)}")
    is_bool = value.dtype == np.bool_
    if not is_bool and value.dtype.kind not in "fiu":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"attn_mask of dtype {value.dtype} is not supported")
    if total >= 0 and shape[-1] > total:
        raise ConversionIssue(INVALID_MODEL, f"attn_mask has {shape[-1]} keys, more than the {total} of K")
    if (total < 0) != (shape[-1] < 0):  # (whether the mask is short would be known at run time only)
        raise ConversionIssue(DYNAMIC_SHAPE, f"attn_mask has {shape[-1]} keys for a total sequence of {total}: a "
                                             f"dynamic one of the two must be the other", tensor=mask)
    if 0 <= shape[-1] < total:  # a short mask: the missing keys are masked out
        fill_shape = (*shape[:-1], total - shape[-1])
        fill = np.zeros(fill_shape, np.bool_) if is_bool else np.full(fill_shape, -np.inf, value.dtype)
        mask = _concat(ctx, [mask, ctx.constant(fill, f"{mask}.pad")], len(shape) - 1, f"{mask}.padded")
    if is_bool:
        return _where(ctx, mask, _const(ctx, 0, dtype, "zero"), _const(ctx, -np.inf, dtype, "neg_inf"),
                      f"{ctx.output(0)}.mask_bias")
    return _cast(ctx, mask, dtype, f"{mask}.bias")


def _structural_bias(ctx: NodeContext, dtype: np.dtype, batch: int, q_len: int, total: int, past, nonpad: str | None,
                     causal: bool, left: int, right: int, q4: str, k4: str) -> str | None:
    """0 / -inf for the causal frontier, the sliding window and the nonpad_kv_seqlen padding, composed.

    offset = past length (or 0), or nonpad_kv_seqlen[b] - q_len per batch: query i attends key j iff
    j <= i + offset (causal), i + offset - left <= j <= i + offset + right (window), j < nonpad[b] (padding).
    Positions and lengths that are dynamic (``q4`` / ``k4`` dim 2, ``past`` a [1] tensor) are read at run time."""
    windowed = left >= 0 or right >= 0
    if not (causal or windowed or nonpad is not None):
        return None
    out = ctx.output(0)
    static = q_len >= 0 and total >= 0 and not isinstance(past, str)
    i = np.arange(q_len).reshape(q_len, 1) if q_len >= 0 else None
    j = np.arange(total).reshape(1, total) if total >= 0 else None
    if nonpad is None and static:  # everything is known now
        diff = i + past - j  # (q, kv)
        allowed = np.ones((q_len, total), np.bool_)
        if causal:
            allowed &= diff >= 0
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        return ctx.constant(np.where(allowed, 0, -np.inf).astype(dtype), f"{ctx.name}.structural_bias")
    rows = ctx.constant(i.astype(np.int64), f"{ctx.name}.query_positions") if i is not None else \
        axis_iota(ctx, q4, 2, 2, position=0)
    keys = ctx.constant(j.astype(np.int64), f"{ctx.name}.key_positions") if j is not None else \
        axis_iota(ctx, k4, 2, 2, position=1)
    i_minus_j = _binary(ctx, OP.OH_NN_OPS_SUB, rows, keys, f"{out}.i_minus_j")  # (q, kv)
    zero64 = _const(ctx, 0, np.int64, "zero_i64")
    if nonpad is None:  # offset = past
        offset = past if isinstance(past, str) else _const(ctx, past, np.int64, "past")
        allowed = None
    else:  # per batch: offset[b] = nonpad[b] - q_len; conditions on i - j + offset[b] (B, 1, q, kv), j < nonpad[b]
        lengths = _reshape(ctx, nonpad, (batch, 1, 1, 1))
        q_size = _const(ctx, q_len, np.int64, "q_len") if q_len >= 0 else dims_tensor(ctx, q4, [2])
        offset = _binary(ctx, OP.OH_NN_OPS_SUB, lengths, q_size, f"{out}.offset")
        allowed = _compare(ctx, OP.OH_NN_OPS_LESS, keys, lengths, f"{out}.nonpad")
    diff = _binary(ctx, OP.OH_NN_OPS_ADD, i_minus_j, offset, f"{out}.diff")
    conditions = [] if allowed is None else [allowed]
    if causal:
        conditions.append(_compare(ctx, OP.OH_NN_OPS_GREATER_EQUAL, diff, zero64, f"{out}.causal"))
    if left >= 0:
        conditions.append(_compare(ctx, OP.OH_NN_OPS_LESS_EQUAL, diff, _const(ctx, left, np.int64, "left"),
                                   f"{out}.left_window"))
    if right >= 0:
        conditions.append(_compare(ctx, OP.OH_NN_OPS_GREATER_EQUAL, diff, _const(ctx, -right, np.int64, "right"),
                                   f"{out}.right_window"))
    allowed = conditions[0]
    for condition in conditions[1:]:
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
    rank = len(_ranked_shape(ctx, q))  # (the batch and the sequences may be dynamic)
    if rank not in (3, 4) or any(len(_ranked_shape(ctx, n)) != rank for n in (k, v)):
        raise ConversionIssue(INVALID_MODEL, "Q, K and V must all be 3-D or all 4-D")
    q4, (batch, q_heads, q_len, head) = _to_heads(ctx, q, q_heads_attr, "Q", "q_num_heads")
    k4, (_, kv_heads, kv_len, k_head) = _to_heads(ctx, k, kv_heads_attr, "K", "kv_num_heads")
    v4, (_, v_heads, _, v_head) = _to_heads(ctx, v, kv_heads_attr, "V", "kv_num_heads")
    k_len, v_len = _ranked_shape(ctx, k4)[2], _ranked_shape(ctx, v4)[2]
    if k_head != head or v_heads != kv_heads or k_len != v_len and k_len >= 0 and v_len >= 0:
        raise ConversionIssue(INVALID_MODEL, f"K {list(_ranked_shape(ctx, k4))} and V {list(_ranked_shape(ctx, v4))} "
                                             f"do not fit Q {list(_ranked_shape(ctx, q4))}")
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
        pk, pv = _ranked_shape(ctx, past_k), _ranked_shape(ctx, past_v)
        if len(pk) != 4 or len(pv) != 4 or not (_fits(pk[:2], (batch, kv_heads)) and pk[3] == head and _fits(
                pv[:2], (batch, kv_heads)) and pv[3] == v_head and _fits(pk[2:3], pv[2:3])):
            raise ConversionIssue(INVALID_MODEL, f"past_key {list(pk)} / past_value {list(pv)} do not fit K and V")
        past = pk[2] if pk[2] >= 0 else dims_tensor(ctx, past_k, [2])  # (a [1] tensor when dynamic)
        k4 = _concat(ctx, [past_k, k4], 2, f"{out}.present_key", output=ctx.output(1) if _wanted(ctx, 1) else None)
        v4 = _concat(ctx, [past_v, v4], 2, f"{out}.present_value", output=ctx.output(2) if _wanted(ctx, 2) else None)
    else:
        for position, name in ((1, k4), (2, v4)):
            if _wanted(ctx, position):
                ctx.settle(ctx.output(position), _ranked_shape(ctx, name), dtype)
                ctx.alias(name, ctx.output(position))
    total = past + kv_len if not isinstance(past, str) and kv_len >= 0 else -1
    if nonpad is not None:
        if ctx.value(nonpad).dtype != np.int64 or not _fits(_ranked_shape(ctx, nonpad), (batch,)):
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
        qs = reshape_to(ctx, qs, [_part(ctx, qs, 0), kv_heads, groups, _part(ctx, qs, 2), head], f"{out}.q_grouped")
        ks = reshape_to(ctx, ks, [_part(ctx, ks, 0), kv_heads, 1, _part(ctx, ks, 2), head], f"{out}.k_grouped")
        grouped = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [qs, ks], dtype, (batch, kv_heads, groups, q_len, total),
                        f"{out}.scores_grouped", {"OH_NN_MATMUL_TRANSPOSE_B": True})
        scores = reshape_to(ctx, grouped, [_part(ctx, qs, 0), q_heads, _part(ctx, qs, 3), _part(ctx, ks, 3)],
                            f"{out}.scores")
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
    structural = _structural_bias(ctx, dtype, batch, q_len, total, past, nonpad, causal, left, right, q4, k4)
    if bias is not None and structural is not None:
        bias = _binary(ctx, OP.OH_NN_OPS_ADD, bias, structural, f"{out}.bias")
    elif structural is not None:
        bias = structural
    # a row whose bias is -inf everywhere has no key: its bias becomes 0 (no NaN from the softmax), its
    # probabilities 0 afterwards
    row_mask = None
    with_bias = scores
    if bias is not None:
        bias_shape = _ranked_shape(ctx, bias)
        if len(bias_shape) > len(scores_shape) or not all(
                b in (1, s, -1) or s < 0 for b, s in zip(reversed(bias_shape), reversed(scores_shape))):
            raise ConversionIssue(INVALID_MODEL, f"the attention bias of shape {list(bias_shape)} (attn_mask) "
                                                 f"does not broadcast to {list(scores_shape)}")
        bias_data = ctx.value(bias).data
        if bias_data is not None:
            masked_rows = np.isneginf(bias_data.max(axis=-1, keepdims=True))
            row_mask = ctx.constant(masked_rows, f"{ctx.name}.masked_rows") if masked_rows.any() else None
        else:
            row_max = _reduce(ctx, "MAX", bias, [len(bias_shape) - 1], True, f"{out}.bias_row_max")
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
        shifted = _binary(ctx, OP.OH_NN_OPS_SUB, logits, _reduce(ctx, "MAX", logits, [3], True, f"{out}.row_max"),
                          f"{out}.shifted")
        exps = ctx.emit_to(OP.OH_NN_OPS_EXP, [shifted], work, scores_shape, f"{out}.exp",
                     {"OH_NN_EXP_BASE": -1.0, "OH_NN_EXP_SCALE": 1.0, "OH_NN_EXP_SHIFT": 0.0})
        probs = _binary(ctx, OP.OH_NN_OPS_DIV, exps, _reduce(ctx, "SUM", exps, [3], True, f"{out}.row_sum"),
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
            reshape_to(ctx, chosen, [shape_tensor(ctx, chosen)], f"{out}.qk", output=ctx.output(3))

    # Y = probs V
    final_4d = rank == 4
    y_shape = (batch, q_heads, q_len, v_head)
    if groups > 1:
        probs5 = reshape_to(ctx, probs, [_part(ctx, probs, 0), kv_heads, groups, _part(ctx, probs, 2),
                                         _part(ctx, probs, 3)], f"{out}.probs_grouped")
        v5 = reshape_to(ctx, v4, [_part(ctx, v4, 0), kv_heads, 1, _part(ctx, v4, 2), v_head], f"{out}.v_grouped")
        grouped = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [probs5, v5], dtype, (batch, kv_heads, groups, q_len, v_head),
                              f"{out}.y_grouped")
        y = reshape_to(ctx, grouped, [_part(ctx, probs, 0), q_heads, _part(ctx, probs, 2), v_head], f"{out}.y",
                       output=out if final_4d else None)
    else:
        y = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [probs, v4], dtype, y_shape, f"{out}.y4",
                  output=out if final_4d else None)
    if not final_4d:
        per_token = _transpose(ctx, y, (0, 2, 1, 3))
        reshape_to(ctx, per_token, [_part(ctx, per_token, 0), _part(ctx, per_token, 1), q_heads * v_head],
                   f"{out}.tokens", output=out)


# -- onnxruntime's contrib Attention (com.microsoft) -------------------------------------------------------------------

_LOWEST = float(np.finfo(np.float32).min)  # what onnxruntime writes over the causally masked scores


def _contrib_mask_bias(ctx: NodeContext, position: int, batch: int, q_len: int, total: int, fill: float,
                       work: np.dtype) -> str | None:
    """mask_index as an additive (B, 1, 1 | S, T) term: ``fill`` (mask_filter_value) where masked, 0 elsewhere.

    Forms (onnxruntime's CPU kernel): (B) end positions (keys j >= end masked: right padding); (2B) end positions
    then start positions (also keys j < start masked: left padding); raw 0/1 masks (B, T) and (B, S, T) (a key is
    kept where the mask is > 0). A constant mask becomes a constant term."""
    if not ctx.has_input(position):
        return None
    mask = ctx.input(position)
    value = ctx.value(mask)
    shape = _shape(ctx, mask, "mask_index")
    out = ctx.output(0)
    if value.dtype != np.int32:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"mask_index has dtype {value.dtype} (int32 only)", tensor=mask)
    keys = np.arange(total, dtype=np.int32)
    if len(shape) == 1 and shape[0] in (batch, 2 * batch):
        if value.data is not None:
            data = value.data.astype(np.int64)
            masked = keys[None, :] >= data[:batch, None]
            if shape[0] == 2 * batch:
                masked |= keys[None, :] < np.minimum(data[batch:, None], total)
            return ctx.constant(np.where(masked, fill, 0).astype(work).reshape(batch, 1, 1, total),
                                f"{ctx.name}.mask_bias")
        positions = ctx.constant(keys.reshape(1, total), f"{ctx.name}.key_positions")
        ends = mask if shape[0] == batch else _slice(ctx, mask, 0, 0, batch, f"{out}.mask_ends")
        masked = _compare(ctx, OP.OH_NN_OPS_GREATER_EQUAL, positions, _reshape(ctx, ends, (batch, 1)),
                          f"{out}.past_end")
        if shape[0] == 2 * batch:
            starts = _reshape(ctx, _slice(ctx, mask, 0, batch, batch, f"{out}.mask_starts"), (batch, 1))
            before = _compare(ctx, OP.OH_NN_OPS_LESS, positions, starts, f"{out}.before_start")
            masked = _compare(ctx, OP.OH_NN_OPS_LOGICAL_OR, masked, before, f"{out}.masked")
        bias = _where(ctx, masked, _const(ctx, fill, work, "mask_filter"), _const(ctx, 0, work, "zero"),
                      f"{out}.mask_bias_2d")
        return _reshape(ctx, bias, (batch, 1, 1, total))
    if len(shape) == 1:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"a 1-D mask_index of {shape[0]} values is not supported "
                                                     f"(({batch},) end positions or ({2 * batch},) end and start "
                                                     "positions; the (3B+2) form is onnxruntime's GPU-only one)")
    if len(shape) == 4:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "a 4-D mask_index (Megatron's (B, 1, max, max)) is not supported "
                                                     "(onnxruntime's CPU kernel rejects it too)")
    if len(shape) == 2 and tuple(shape) != (batch, total) or len(shape) == 3 and tuple(shape) != (batch, q_len, total):
        raise ConversionIssue(INVALID_MODEL, f"mask_index of shape {list(shape)} is neither ({batch}, {total}) nor "
                                             f"({batch}, {q_len}, {total})")
    if len(shape) not in (2, 3):
        raise ConversionIssue(INVALID_MODEL, f"mask_index of rank {len(shape)} is not supported")
    target = (batch, 1, 1, total) if len(shape) == 2 else (batch, 1, q_len, total)
    if value.data is not None:
        return ctx.constant(np.where(value.data > 0, 0, fill).astype(work).reshape(target), f"{ctx.name}.mask_bias")
    kept = _compare(ctx, OP.OH_NN_OPS_GREATER, mask, _const(ctx, 0, np.int32, "zero_i32"), f"{out}.kept")
    bias = _where(ctx, kept, _const(ctx, 0, work, "zero"), _const(ctx, fill, work, "mask_filter"), f"{out}.mask_raw")
    return _reshape(ctx, bias, target)


def _heads(ctx: NodeContext, x: str, batch: int, seq: int, heads: int, size: int) -> str:
    """(B, S, N * size) -> (B, N, S, size)."""
    return _transpose(ctx, _reshape(ctx, x, (batch, seq, heads, size)), (0, 2, 1, 3))


class _Layout:
    """Where a merged-QKV attention node keeps its optional inputs (Attention and QAttention differ)."""

    def __init__(self, mask: int, past: int, attention_bias: int | None, past_length: int | None):
        self.mask, self.past, self.attention_bias, self.past_length = mask, past, attention_bias, past_length


def _attention_attributes(ctx: NodeContext, layout: _Layout) -> tuple[int, bool, float | None, float]:
    """num_heads, unidirectional, scale, mask_filter_value; the shared-buffer and rotary forms rejected."""
    heads = ctx.attr("num_heads")
    if heads is None or int(heads) <= 0:
        raise ConversionIssue(INVALID_MODEL, "num_heads is required (> 0)")
    if int(ctx.attr("do_rotary", 0)):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"do_rotary=1 is not supported (onnxruntime's CPU "
                                                     f"{ctx.node.op_type} rejects it too)")
    ctx.attr("rotary_embedding_dim")  # only read with do_rotary=1, which is rejected: no effect
    shared = layout.past_length is not None and ctx.has_input(layout.past_length)
    if int(ctx.attr("past_present_share_buffer", 0)) or shared:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "past_present_share_buffer / past_sequence_length (a shared "
                                                     "KV-cache buffer) is not supported")
    scale = ctx.attr("scale")
    return (int(heads), bool(int(ctx.attr("unidirectional", 0))), None if scale is None else float(scale),
            float(ctx.attr("mask_filter_value", -10000.0)))


def _merged_qkv_attention(ctx: NodeContext, qkv: str, batch: int, seq: int, sizes, dtype, work, layout: _Layout,
                          heads: int, causal: bool, scale_attr: float | None, fill: float) -> None:
    """Everything after the projection: ``qkv`` (B, S, q + k + v, in ``work``) split into heads, [past ++ new,
    present], scale * Q K^T + (attention_bias + mask term + causal term), SOFTMAX, times V, back to (B, S, v)."""
    out = ctx.output(0)
    head, v_head = sizes[0] // heads, sizes[2] // heads
    starts = (0, sizes[0], sizes[0] + sizes[1])
    q, k, v = (_slice(ctx, qkv, 2, start, size, f"{out}.{part}")
               for start, size, part in zip(starts, sizes, ("q", "k", "v")))
    q4 = _heads(ctx, q, batch, seq, heads, head)
    k4 = _heads(ctx, k, batch, seq, heads, head)
    v4 = _heads(ctx, v, batch, seq, heads, v_head)

    # past ++ new keys and values; present = stack(K, V)
    past_len = 0
    if ctx.has_input(layout.past):
        past = ctx.input(layout.past)
        past_shape = _shape(ctx, past, "past")
        if head != v_head:
            raise ConversionIssue(INVALID_MODEL, "with past, Q, K and V must have the same hidden size")
        if len(past_shape) != 5 or past_shape[:3] != (2, batch, heads) or past_shape[4] != head:
            raise ConversionIssue(INVALID_MODEL, f"past of shape {list(past_shape)} is not (2, {batch}, {heads}, "
                                                 f"past_sequence_length, {head})")
        if ctx.value(past).dtype != dtype:
            raise ConversionIssue(INVALID_MODEL, f"past has dtype {ctx.value(past).dtype}, the output {dtype}")
        past_len = past_shape[3]
        past_w = _cast(ctx, past, work, f"{past}.{work.name}")
        past_kv = [_reshape(ctx, _slice(ctx, past_w, 0, i, 1, f"{out}.past_{part}"), (batch, heads, past_len, head))
                   for i, part in enumerate(("key", "value"))]
        k4 = _concat(ctx, [past_kv[0], k4], 2, f"{out}.k_all")
        v4 = _concat(ctx, [past_kv[1], v4], 2, f"{out}.v_all")
    total = past_len + seq
    if _wanted(ctx, 1):
        if head != v_head:
            raise ConversionIssue(INVALID_MODEL, "present needs Q, K and V of the same hidden size")
        present = ctx.output(1)
        stacked = ctx.emit_to(OP.OH_NN_OPS_STACK, [k4, v4], work, (2, batch, heads, total, head), f"{out}.present",
                              {"OH_NN_STACK_AXIS": 0}, output=present if work == dtype else None)
        if work != dtype:
            _cast(ctx, stacked, dtype, output=present)

    # scores = scale * Q K^T + (attention_bias + mask term + causal term)
    scale = scale_attr if scale_attr is not None and scale_attr != 0.0 else 1.0 / math.sqrt(head)
    product = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [q4, k4], work, (batch, heads, seq, total), f"{out}.qk",
                          {"OH_NN_MATMUL_TRANSPOSE_B": True})
    scores = _binary(ctx, OP.OH_NN_OPS_MUL, product, _const(ctx, scale, work, "scale"), f"{out}.scores")
    additive = _contrib_mask_bias(ctx, layout.mask, batch, seq, total, fill, work)
    if causal and seq > 1:
        future = np.arange(total)[None, :] > (past_len + np.arange(seq))[:, None]  # (S, T)
        if additive is None:
            additive = ctx.constant(np.where(future, _LOWEST, 0).astype(work), f"{ctx.name}.causal_bias")
        elif ctx.value(additive).data is not None:
            additive = ctx.constant(np.where(future, _LOWEST, ctx.value(additive).data).astype(work),
                                    f"{ctx.name}.mask_causal_bias")
        else:
            additive = _where(ctx, ctx.constant(future, f"{ctx.name}.future"), _const(ctx, _LOWEST, work, "lowest"),
                              additive, f"{out}.mask_causal_bias")
    if layout.attention_bias is not None and ctx.has_input(layout.attention_bias):
        attention_bias = ctx.input(layout.attention_bias)
        bias_shape = _shape(ctx, attention_bias, "attention_bias")
        if len(bias_shape) != 4 or bias_shape[0] not in (1, batch) or bias_shape[1] not in (1, heads) or \
                tuple(bias_shape[2:]) != (seq, total):
            raise ConversionIssue(INVALID_MODEL, f"attention_bias of shape {list(bias_shape)} is not ({batch} or 1, "
                                                 f"{heads} or 1, {seq}, {total})")
        attention_bias = _cast(ctx, attention_bias, work, f"{attention_bias}.{work.name}")
        additive = attention_bias if additive is None else _binary(ctx, OP.OH_NN_OPS_ADD, attention_bias, additive,
                                                                   f"{out}.additive")
    if additive is not None:
        scores = _binary(ctx, OP.OH_NN_OPS_ADD, scores, additive, f"{out}.masked_scores")
    probs = ctx.emit_to(OP.OH_NN_OPS_SOFTMAX, [scores], work, (batch, heads, seq, total), f"{out}.probs",
                        {"OH_NN_SOFTMAX_AXIS": -1})

    # out = probs V, back to (B, S, N * v_head)
    context = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [probs, v4], work, (batch, heads, seq, v_head), f"{out}.context")
    merged = _reshape(ctx, _transpose(ctx, context, (0, 2, 1, 3)), (batch, seq, heads * v_head),
                      output=out if work == dtype else None)
    if work != dtype:
        _cast(ctx, merged, dtype, output=out)


def _qkv_sizes(ctx: NodeContext, columns: int, heads: int) -> list[int]:
    sizes = ctx.attr("qkv_hidden_sizes") if ctx.node.op_type == "Attention" else None
    if sizes is None:
        if columns % 3:
            raise ConversionIssue(INVALID_MODEL, f"weights' second dim {columns} is not divisible by 3"
                                                 + (" (give qkv_hidden_sizes)" if ctx.node.op_type == "Attention"
                                                    else ""))
        sizes = [columns // 3] * 3
    sizes = [int(s) for s in sizes]
    if len(sizes) != 3 or sum(sizes) != columns or sizes[0] != sizes[1] or any(s <= 0 or s % heads for s in sizes):
        raise ConversionIssue(INVALID_MODEL, f"qkv_hidden_sizes={sizes} must be 3 positive multiples of num_heads="
                                             f"{heads}, Q and K equal, summing to the weights' {columns} columns")
    return sizes


def _input_and_weights(ctx: NodeContext) -> tuple[str, str, int, int, int]:
    x, weights = ctx.input(0), ctx.input(1)
    x_shape = _shape(ctx, x, f"the {ctx.node.op_type} input")
    w_shape = _shape(ctx, weights, "weights")
    if len(x_shape) != 3 or len(w_shape) != 2 or w_shape[0] != x_shape[2]:
        raise ConversionIssue(INVALID_MODEL, f"input {list(x_shape)} (batch, sequence, hidden) and weights "
                                             f"{list(w_shape)} (hidden, q + k + v) do not fit")
    return x, weights, x_shape[0], x_shape[1], w_shape[1]


@converts("com.microsoft.Attention")
def contrib_attention(ctx: NodeContext) -> None:
    """onnxruntime's multi-head self-attention with merged Q/K/V weights: MATMUL + ADD bias, SLICE into Q, K, V,
    RESHAPE/TRANSPOSE to heads, [CONCAT past K/V, STACK present], MATMUL Q K^T, MUL scale, ADD (attention_bias +
    mask term + causal term), SOFTMAX, MATMUL V, TRANSPOSE/RESHAPE back.

    As onnxruntime's CPU kernel: masked keys get ``mask_filter_value`` (-10000) added; with unidirectional=1 (and
    more than one query) the keys after a query's position (past length + its index) get the lowest float32
    instead of whatever mask value they had. float16 is computed in float32. Rejected: do_rotary=1 and
    past_present_share_buffer=1 (onnxruntime's CPU kernel rejects them too, or they need its shared-buffer
    decoding), 4-D and (3B+2) mask_index forms."""
    layout = _Layout(mask=3, past=4, attention_bias=5, past_length=6)
    heads, causal, scale, fill = _attention_attributes(ctx, layout)
    x, weights, batch, seq, columns = _input_and_weights(ctx)
    out = ctx.output(0)
    dtype = _float_input(ctx, x)
    work = np.dtype(np.float32) if dtype == np.float16 else dtype
    sizes = _qkv_sizes(ctx, columns, heads)
    if ctx.value(weights).dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"weights have dtype {ctx.value(weights).dtype}, the input {dtype}")
    xw = _cast(ctx, x, work, f"{x}.{work.name}")
    qkv = _matmul(ctx, xw, _cast(ctx, weights, work, f"{weights}.{work.name}"), f"{out}.qkv")
    if ctx.has_input(2):
        bias = ctx.input(2)
        if _shape(ctx, bias, "bias") != (columns,) or ctx.value(bias).dtype != dtype:
            raise ConversionIssue(INVALID_MODEL, f"bias must be {dtype} of shape ({columns},)")
        qkv = _binary(ctx, OP.OH_NN_OPS_ADD, qkv, _cast(ctx, bias, work, f"{bias}.{work.name}"), f"{out}.qkv_biased")
    _merged_qkv_attention(ctx, qkv, batch, seq, sizes, dtype, work, layout, heads, causal, scale, fill)


def _scalar_input(ctx: NodeContext, position: int, what: str, dtype=None) -> str:
    name = ctx.input(position)
    if int(np.prod(_shape(ctx, name, what))) != 1:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"{what} {name!r} of shape {list(_shape(ctx, name))} is not "
                                                     "supported: the input is quantized per tensor (one value)")
    if dtype is not None and ctx.value(name).dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"{what} {name!r} has dtype {ctx.value(name).dtype}, expected "
                                             f"{np.dtype(dtype).name}")
    return _reshape(ctx, name, ())


@converts("com.microsoft.QAttention")
def quantized_attention(ctx: NodeContext) -> None:
    """onnxruntime's Attention on a quantized input (uint8/int8, from DynamicQuantizeLinear) and int8/uint8 merged
    weights: Q/K/V = float((input - input_zero_point) @ (weight - weight_zero_point)) * (input_scale * weight_scale)
    + bias (the exact int32 product; weight scale and zero point per tensor or per column), then as Attention
    (mask_index forms, unidirectional, scale, mask_filter_value, past / present)."""
    layout = _Layout(mask=5, past=8, attention_bias=None, past_length=None)
    heads, causal, scale, fill = _attention_attributes(ctx, layout)
    x, weights, batch, seq, columns = _input_and_weights(ctx)
    out = ctx.output(0)
    for name, what in ((x, "input"), (weights, "weight")):
        if ctx.value(name).dtype not in (np.int8, np.uint8):
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"{what} {name!r} has dtype {ctx.value(name).dtype} "
                                                     "(int8/uint8)", tensor=name)
    bias = ctx.input(2)
    dtype = _float_input(ctx, bias)
    work = np.dtype(np.float32) if dtype == np.float16 else dtype
    if _shape(ctx, bias, "bias") != (columns,):
        raise ConversionIssue(INVALID_MODEL, f"bias must be of shape ({columns},)")
    sizes = _qkv_sizes(ctx, columns, heads)
    input_scale = _scalar_input(ctx, 3, "input_scale", dtype)
    weight_scale = ctx.input(4)
    if ctx.value(weight_scale).dtype != dtype or int(np.prod(_shape(ctx, weight_scale, "weight_scale"))) not in \
            (1, columns) or len(_shape(ctx, weight_scale)) > 1:
        raise ConversionIssue(INVALID_MODEL, f"weight_scale must be {dtype} with one value or {columns} (one per "
                                             "column)")
    zero_points = []
    for position, operand, what, columns_allowed in ((6, x, "input_zero_point", False),
                                                     (7, weights, "weight_zero_point", True)):
        if not ctx.has_input(position):
            zero_points.append(None)
            continue
        zp = ctx.input(position)
        count = int(np.prod(_shape(ctx, zp, what)))
        if ctx.value(zp).dtype != ctx.value(operand).dtype:
            raise ConversionIssue(INVALID_MODEL, f"{what} has dtype {ctx.value(zp).dtype}, its operand "
                                                 f"{ctx.value(operand).dtype}")
        if count != 1 and not (columns_allowed and count == columns and len(_shape(ctx, zp)) == 1):
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE if not columns_allowed else INVALID_MODEL,
                                  f"{what} of shape {list(_shape(ctx, zp))} is not one value"
                                  + (f" or {columns} (one per column)" if columns_allowed else ""))
        zp32 = _cast(ctx, zp, np.int32, f"{zp}.i32")
        zero_points.append(zp32 if count == columns and count > 1 else _reshape(ctx, zp32, ()))
    acc = _integer_product(ctx, x, zero_points[0], weights, zero_points[1], f"{out}.qkv_acc")
    scales = _binary(ctx, OP.OH_NN_OPS_MUL, _cast(ctx, weight_scale, work, f"{weight_scale}.{work.name}"),
                     _cast(ctx, input_scale, work, f"{input_scale}.{work.name}"), f"{out}.dequant_scale")
    real = _binary(ctx, OP.OH_NN_OPS_MUL, _cast(ctx, acc, work, f"{out}.qkv_float"), scales, f"{out}.qkv_scaled")
    qkv = _binary(ctx, OP.OH_NN_OPS_ADD, real, _cast(ctx, bias, work, f"{bias}.{work.name}"), f"{out}.qkv")
    _merged_qkv_attention(ctx, qkv, batch, seq, sizes, dtype, work, layout, heads, causal, scale, fill)
