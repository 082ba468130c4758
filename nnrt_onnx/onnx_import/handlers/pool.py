"""Converters of the pool family: MaxPool, AveragePool, LpPool, their global forms and MaxUnpool.

Decisions (layout and pads: see ``_common``):

* MaxPool/AveragePool run on the native pooling ops when they can express the case exactly: no dilation, pads
  smaller than the kernel. ``count_include_pad=1`` becomes PAD (zeros) + pooling whose extra end padding (ceil
  mode) is not counted -- ONNX does not count the cells past the declared end pads either. Everything else
  (dilations, big pads, 3-D) is decomposed into one strided slice per kernel tap combined with MAXIMUM/ADD
  (and a constant divisor map for averages; a float max: below).
* LpPool: |x|^p (SQUARE for p=2), a sum pool (average pool times the constant window-size map), then ^(1/p).
* MaxPool and NaN: MAX_POOL's rule (``kernels.pool``: with unit strides and dilations a NaN never wins, else a
  window's NaN first cell does), also where the taps are combined here: their MAXIMUM with NaN made -inf, then
  NaN where the rule says (``_nan_rule_max``). Except SAME_LOWER over dynamic dims with a stride above 1
  (``_same_lower_pool``).
* MaxPool's Indices output (static spatial dims): the first tap, in scan order, whose value equals the window's
  maximum Y (onnxruntime's choice at a tie; padding never wins), or its first cell inside the input where that is
  NaN (onnxruntime's, also with unit strides), as the window origin's flat position plus the tap's offset --
  row-major within an (n, c) plane, or column-major under ``storage_order=1`` -- plus the plane's.
* MaxUnpool scatters X at the flat indices into the inferred shape (SCATTER_ND) and pads to ``output_shape``
  (the ONNX reference and node suite; onnxruntime instead reads the indices against ``output_shape`` when it
  differs). Constant indices keep the last write of a repeated index; runtime indices are averaged over
  repeats (a sum and a count, in float64: exact for the identical values a MaxPool writes), also over a batch
  or channels known at run time only.
"""
from __future__ import annotations

import numpy as np

from ... import geometry
from ...enums import OH_NN_OperationType as OP
from ...geometry import NCHW_TO_NHWC, NHWC_TO_NCHW
from ...ir.issues import DYNAMIC_SHAPE, INVALID_MODEL, UNSUPPORTED_DTYPE, ConversionIssue
from .. import limits
from ..context import NodeContext
from . import converts
from ._common import (
    _binary,
    _cast,
    _compare,
    _const,
    _float_input,
    _into_nhwc,
    _ints_attr,
    _known,
    _nhwc_shape,
    _onnx_pads,
    _out_of_nhwc,
    _reshape,
    _same_lower_pad,
    _set_shape,
    _shape,
    _spatial_rank,
    _unsupported,
    _wanted,
)
from ._dims import dim_product, dims_tensor, iota, reshape_to, shape_tensor


def _pool_sizes(in_sizes, kernel, strides, dilations, pads, ceil_mode) -> list[int]:
    """ONNX output sizes (ceil mode drops a last window that would start in the end padding)."""
    result = []
    for size, k, s, d, (p0, p1) in zip(in_sizes, kernel, strides, dilations, pads):
        extent = geometry.effective_extent(k, d)
        if size + p0 + p1 < extent:
            raise ConversionIssue(INVALID_MODEL, f"kernel {k} (dilation {d}) does not fit the padded extent {size + p0 + p1}")
        result.append(geometry.window_output_size(size, extent, s, p0, p1, ceil_mode=bool(ceil_mode)))
    return result


def _sizes_onnx_infers(in_sizes, kernel, strides, dilations, pads, ceil_mode) -> list[int]:
    """The output sizes onnx shape inference gives: in ceil mode it keeps a last window that starts in the end
    padding, which the specification, onnxruntime and the kernels drop (-1 for an unknown size)."""
    return [-1 if size < 0 else -(-(size + p0 + p1 - geometry.effective_extent(k, d)) // s) + 1 if ceil_mode
            else (size + p0 + p1 - geometry.effective_extent(k, d)) // s + 1
            for size, k, s, d, (p0, p1) in zip(in_sizes, kernel, strides, dilations, pads)]


def _tap_counts(size, k, s, d, p0, p1, out, include_pad) -> np.ndarray:
    """Per output position: how many taps of the window hit a counted cell (input, or declared pads if include_pad).
    Counted in closed form per position (a window of millions of taps costs nothing)."""
    lo, hi = (-p0, size + p1) if include_pad else (0, size)
    starts = np.arange(out, dtype=np.int64) * s - p0
    first = np.maximum(-((starts - lo) // d), 0)  # first tap index j with starts + j*d >= lo: ceil((lo - start) / d)
    last = np.minimum((hi - 1 - starts) // d, k - 1)  # last with starts + j*d < hi
    return np.maximum(last - first + 1, 0)


def _count_map(in_sizes, kernel, strides, dilations, pads, out_sizes, include_pad) -> np.ndarray:
    limits.require_shape(list(out_sizes), np.float64, "the pooling windows' tap counts")  # one per output position
    counts = np.ones((), np.float64)
    for size, k, s, d, (p0, p1), out in zip(in_sizes, kernel, strides, dilations, pads, out_sizes):
        counts = np.multiply.outer(counts, _tap_counts(size, k, s, d, p0, p1, out, include_pad))
    return counts


def _pad_values(ctx: NodeContext, x: str, pads_per_dim, fill: float, out_shape=None) -> str:
    """PAD (constant) of an n-D tensor; ``pads_per_dim`` lists (begin, end) for every dim."""
    value = ctx.value(x)
    shape = None if value.shape is None else tuple(d + b + e if d >= 0 else -1
                                                   for d, (b, e) in zip(value.shape, pads_per_dim))
    padded = ctx.new_value(value.dtype, out_shape or shape, f"{x}.padded")
    paddings = ctx.constant(np.asarray(pads_per_dim, np.int64), f"{x}.paddings")
    ctx.emit(OP.OH_NN_OPS_PAD, [x, paddings], [padded], {"OH_NN_PAD_CONSTANT_VALUE": float(fill)})
    return padded


def _lowest(dtype: np.dtype) -> float:
    return float("-inf") if dtype.kind == "f" else float(np.iinfo(dtype).min)


def _window_taps(ctx: NodeContext, x: str, kernel, strides, dilations, pads, out_sizes, fill: float,
                 hint: str) -> list[str]:
    """The value every output position's window reads at each kernel tap (np.ndindex order: the last spatial axis
    fastest), one strided slice of ``x`` padded with ``fill`` each."""
    value = ctx.value(x)
    shape = value.shape
    extra = [max(geometry.touched_end_padding(size, o, geometry.effective_extent(k, d), s, p0) - p1, 0)
             for o, s, k, d, size, (p0, p1) in zip(out_sizes, strides, kernel, dilations, shape[2:], pads)]
    pad_list = [(0, 0), (0, 0)] + [(p0, p1 + e) for (p0, p1), e in zip(pads, extra)]
    source = _pad_values(ctx, x, pad_list, fill) if any(b or e for b, e in pad_list) else x
    out_shape = (shape[0], shape[1], *out_sizes)
    taps = []
    for offsets in np.ndindex(*kernel):
        begin = [0, 0] + [o * d for o, d in zip(offsets, dilations)]
        end = [0, 0] + [o * d + (n - 1) * s + 1 for o, d, n, s in zip(offsets, dilations, out_sizes, strides)]
        tap = ctx.new_value(value.dtype, out_shape, f"{hint}.tap")
        ctx.emit(OP.OH_NN_OPS_STRIDED_SLICE,
                 [source, ctx.constant(np.asarray(begin, np.int64)), ctx.constant(np.asarray(end, np.int64)),
                  ctx.constant(np.asarray([1, 1, *strides], np.int64))], [tap],
                 {"OH_NN_STRIDED_SLICE_BEGIN_MASK": 3, "OH_NN_STRIDED_SLICE_END_MASK": 3})
        taps.append(tap)
    return taps


def _first_taps(strides, dilations, pads, out_sizes) -> list[np.ndarray]:
    """Per spatial axis, per output position along it: the offset (in taps) of its window's first tap inside the
    input -- the first j with start + j * dilation >= 0; the window's first cell inside (in scan order) takes it on
    every axis."""
    result = []
    for o, s, d, (p0, _) in zip(out_sizes, strides, dilations, pads):
        starts = np.arange(o, dtype=np.int64) * s - p0
        result.append(np.maximum(-(starts // d), 0))
    return result


def _first_cells(ctx: NodeContext, x: str, kernel, strides, dilations, pads, out_sizes, hint: str) -> str:
    """Each window's first cell inside the input (scan order: per axis, its first tap inside), [N, C, *out_sizes]:
    one STRIDED_SLICE over the axes without leading padding (there the window's start), then one GATHER per axis
    with (where windows start in the padding)."""
    value = ctx.value(x)
    padded = [p0 > 0 for p0, _ in pads]
    shape = [value.shape[0], value.shape[1]] + [size if pad else o
                                                for size, o, pad in zip(value.shape[2:], out_sizes, padded)]
    source = x
    if not all(padded):
        end = [0, 0] + [1 if pad else (o - 1) * s + 1 for o, s, pad in zip(out_sizes, strides, padded)]
        source = ctx.emit_to(OP.OH_NN_OPS_STRIDED_SLICE, [
            x, ctx.constant(np.zeros(len(end), np.int64)), ctx.constant(np.asarray(end, np.int64)),
            ctx.constant(np.asarray([1, 1] + [1 if pad else s for s, pad in zip(strides, padded)], np.int64))],
            value.dtype, tuple(shape), f"{hint}.first_cells",
            {"OH_NN_STRIDED_SLICE_BEGIN_MASK": 3, "OH_NN_STRIDED_SLICE_END_MASK": 3 | sum(
                1 << (2 + axis) for axis, pad in enumerate(padded) if pad)})
    for axis, (o, s, d, (p0, _), pad, first) in enumerate(zip(out_sizes, strides, dilations, pads, padded,
                                                              _first_taps(strides, dilations, pads, out_sizes)),
                                                          start=2):
        if pad:
            cells = np.arange(o, dtype=np.int64) * s - p0 + first * d
            shape[axis] = o
            source = ctx.emit_to(OP.OH_NN_OPS_GATHER, [source, ctx.constant(cells, f"{hint}.first_cells"),
                                                       ctx.constant(np.asarray([axis], np.int64))],
                                 value.dtype, tuple(shape), f"{hint}.first_cells")
    return source


def _nan_rule_max(ctx: NodeContext, x: str, out: str, kernel, strides, dilations, pads, out_sizes) -> None:
    """A float max pooling by MAX_POOL's NaN rule (``kernels.pool``) into ``out``: the MAXIMUM of the taps of ``x``
    with NaN made -inf (one WHERE over the input, then one op per tap as for integers), then NaN where the window
    holds NaN only (unit strides and dilations: a LOGICAL_OR per tap of "is a number") or where its first cell
    inside the input is NaN (else: ``_first_cells``). 1.4-1.75x the time of the NaN-blind MAXIMUM per tap
    (2x2x2 stride 2 over 1x64x16x56x56, 3x3x3 unit over 1x32x8x28x28, a dilated 3x3: np.where's cost)."""
    value = ctx.value(x)
    dtype, shape = value.dtype, value.shape
    out_shape = (shape[0], shape[1], *out_sizes)
    nan = _compare(ctx, OP.OH_NN_OPS_NOT_EQUAL, x, x, f"{out}.nan")
    numbers = ctx.emit_to(OP.OH_NN_OPS_WHERE, [nan, _const(ctx, -np.inf, dtype, "minus_inf"), x], dtype, shape,
                          f"{out}.numbers")
    taps = _window_taps(ctx, numbers, kernel, strides, dilations, pads, out_sizes, float("-inf"), out)
    maximum = taps[0]
    for tap in taps[1:]:
        maximum = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, maximum, tap, f"{out}.max")
    if all(s == 1 for s in strides) and all(d == 1 for d in dilations):
        present = ctx.emit_to(OP.OH_NN_OPS_LOGICAL_NOT, [nan], np.bool_, shape, f"{out}.present")
        flags = _window_taps(ctx, present, kernel, strides, dilations, pads, out_sizes, 0.0, f"{out}.present")
        defined = flags[0]
        for flag in flags[1:]:
            defined = _binary(ctx, OP.OH_NN_OPS_LOGICAL_OR, defined, flag, f"{out}.defined", dtype=np.bool_)
        ctx.emit_to(OP.OH_NN_OPS_WHERE, [defined, maximum, _const(ctx, np.nan, dtype, "nan")], dtype, out_shape,
                    out, output=out)
        return
    first = _first_cells(ctx, x, kernel, strides, dilations, pads, out_sizes, out)
    first_nan = _compare(ctx, OP.OH_NN_OPS_NOT_EQUAL, first, first, f"{out}.first_is_nan")
    ctx.emit_to(OP.OH_NN_OPS_WHERE, [first_nan, first, maximum], dtype, out_shape, out, output=out)


def _taps_pool(ctx: NodeContext, kind: str, x: str, out: str, kernel, strides, dilations, pads, out_sizes,
               include_pad: bool) -> None:
    """Pooling of any rank as one strided slice per kernel tap (for what the native pooling ops cannot express).

    kind: "max", "avg" or "sum" (a float max: ``_nan_rule_max``)."""
    value = ctx.value(x)
    shape = value.shape
    out_shape = (shape[0], shape[1], *out_sizes)
    if kind == "max" and value.dtype.kind == "f":
        _nan_rule_max(ctx, x, out, kernel, strides, dilations, pads, out_sizes)
        return
    fill = _lowest(value.dtype) if kind == "max" else 0.0
    taps = _window_taps(ctx, x, kernel, strides, dilations, pads, out_sizes, fill, out)
    combine = OP.OH_NN_OPS_MAXIMUM if kind == "max" else OP.OH_NN_OPS_ADD
    acc = taps[0]
    scale = None
    if kind == "avg":
        counts = _count_map(shape[2:], kernel, strides, dilations, pads, out_sizes, include_pad)
        scale = (1.0 / counts).astype(value.dtype)
    for position, tap in enumerate(taps[1:], start=1):
        last = position == len(taps) - 1 and scale is None
        target = out if last else ctx.new_value(value.dtype, out_shape, f"{out}.acc")
        ctx.emit(combine, [acc, tap], [target])
        acc = target
    if scale is not None:
        factor = scale.reshape(-1)[0] if np.all(scale == scale.reshape(-1)[0]) else scale.reshape((1, 1, *out_sizes))
        ctx.emit(OP.OH_NN_OPS_MUL, [acc, ctx.constant(np.asarray(factor, value.dtype))], [out])
    elif len(taps) == 1:
        ctx.reshape(acc, out_shape, output=out)


def _window_attributes(ctx: NodeContext, x: str) -> tuple[int, list[int], list[int], list[int], int]:
    """(spatial rank, kernel_shape, strides, dilations, ceil_mode) of a pooling node (ceil_mode 0 under auto_pad:
    the output size of SAME/VALID does not depend on it)."""
    nd = _spatial_rank(ctx, x, "pooling", allow_3d=True)
    kernel = [int(k) for k in ctx.attr("kernel_shape") or []]
    if len(kernel) != nd:
        raise ConversionIssue(INVALID_MODEL, f"kernel_shape {kernel} needs {nd} values")
    strides = _ints_attr(ctx, "strides", nd, 1)
    dilations = _ints_attr(ctx, "dilations", nd, 1)
    ceil_mode = int(ctx.attr("ceil_mode", 0))
    if (ctx.attr("auto_pad", "NOTSET") or "NOTSET") != "NOTSET":
        ceil_mode = 0
    return nd, kernel, strides, dilations, ceil_mode


def _pool_common(ctx: NodeContext, kind: str, x: str, out: str, *, p: float | None = None) -> None:
    """MaxPool / AveragePool / LpPool onto native pooling where exact, else slices per tap."""
    nd, kernel, strides, dilations, ceil_mode = _window_attributes(ctx, x)
    include_pad = bool(int(ctx.attr("count_include_pad", 0))) if kind == "avg" else False
    x_value = ctx.value(x)
    shape = x_value.shape
    in_sizes = list(shape[2:])
    pads = _onnx_pads(ctx, nd, kernel, strides, dilations, in_sizes)
    if kind != "max" and x_value.dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} of {x_value.dtype} is not supported")
    if pads[0] == "lower":  # SAME_LOWER over dynamic dims: padded at run time, then VALID
        if nd > 2 or any(d != 1 for d in dilations):
            raise ConversionIssue(DYNAMIC_SHAPE, f"auto_pad=SAME_LOWER with dynamic spatial dims is only supported for "
                                                 f"undilated 1-D/2-D pooling, got {in_sizes}",
                                  tensor=x, axes=tuple(2 + i for i, d in enumerate(in_sizes) if d < 0))
        _same_lower_pool(ctx, kind, x, out, nd, kernel, strides, include_pad)
        return
    static = _known(in_sizes)
    if pads[0] == "mode":  # dynamic dims, SAME_UPPER: only the native op can do it
        if nd > 2 or any(d != 1 for d in dilations) or kind == "sum" or include_pad:
            raise ConversionIssue(DYNAMIC_SHAPE, "auto_pad=SAME_UPPER with dynamic spatial dims is only supported "
                                                 "for plain 1-D/2-D max/average pooling")
        _native_pool(ctx, kind, x, out, nd, kernel, strides, None, ceil_mode, pad_mode=0)
        return
    if not static:
        counted = include_pad or kind == "sum"  # (the padding counts: zeros padded, then windows all inside)
        if nd > 2 or any(d != 1 for d in dilations) or (counted and ceil_mode) \
                or any(p0 >= k or p1 >= k for (p0, p1), k in zip(pads, kernel)) and not counted:
            raise ConversionIssue(DYNAMIC_SHAPE, f"this pooling (dilations, pads as large as the kernel, 3-D, or a "
                                                 f"counted padding with ceil_mode) needs static spatial dims, got "
                                                 f"{in_sizes}", tensor=x,
                                  axes=tuple(2 + i for i, d in enumerate(in_sizes) if d < 0))
        if not counted:
            # the static spatial dims by the kernels' rule, as below (onnx shape inference keeps a last ceil-mode
            # window that starts in the end padding)
            sizes = [_pool_sizes([size], [k], [st], [d], [pad], ceil_mode)[0] if size >= 0 else -1
                     for size, k, st, d, pad in zip(in_sizes, kernel, strides, dilations, pads)]
            ctx.override_shape(out, [shape[0], shape[1], *sizes],
                               sizes != _sizes_onnx_infers(in_sizes, kernel, strides, dilations, pads, ceil_mode))
            _native_pool(ctx, kind, x, out, nd, kernel, strides, pads, ceil_mode)
            return
        padded = _pad_values(ctx, x, [(0, 0), (0, 0), *pads], 0.0) if any(p0 or p1 for p0, p1 in pads) else x
        mean = out if kind == "avg" else ctx.new_value(x_value.dtype, ctx.value(out).shape, f"{out}.mean")
        _native_pool(ctx, "avg", padded, mean, nd, kernel, strides, [(0, 0)] * nd, 0)
        if kind == "sum":
            ctx.emit(OP.OH_NN_OPS_MUL, [mean, ctx.constant(np.asarray(np.prod(kernel), x_value.dtype))], [out])
        return
    out_sizes = _pool_sizes(in_sizes, kernel, strides, dilations, pads, ceil_mode)
    # onnx shape inference keeps a last ceil-mode window that starts in the end padding, which the specification
    # ignores ("sliding windows that would start in the right padded region are ignored"), as onnxruntime and
    # onnx.reference do: the rule's size wins
    ctx.override_shape(out, [shape[0], shape[1], *out_sizes],
                       out_sizes != _sizes_onnx_infers(in_sizes, kernel, strides, dilations, pads, ceil_mode))
    if kind == "max" or (kind == "avg" and not include_pad):
        if _count_map(in_sizes, kernel, strides, dilations, pads, out_sizes, False).min() == 0:
            raise _unsupported(f"pads {[list(p) for p in pads]} leave a window entirely in the padding (no value)")
    native = nd <= 2 and all(d == 1 for d in dilations) and all(p0 < k and p1 < k for (p0, p1), k in zip(pads, kernel))
    if not native:
        _taps_pool(ctx, kind, x, out, kernel, strides, dilations, pads, out_sizes, include_pad)
        return
    if kind == "max" or (kind == "avg" and (not include_pad or not any(p0 or p1 for p0, p1 in pads))):
        _native_pool(ctx, kind, x, out, nd, kernel, strides, pads, ceil_mode)
        return
    # counted padding (average with count_include_pad, or a sum): PAD zeros, then pool with uncounted extra end pads
    extra = [max(geometry.touched_end_padding(size, o, k, s, p0) - p1, 0)
             for o, s, k, size, (p0, p1) in zip(out_sizes, strides, kernel, in_sizes, pads)]
    source = x
    if any(p0 or p1 for p0, p1 in pads):
        source = _pad_values(ctx, x, [(0, 0), (0, 0), *pads], 0.0)
    padded_sizes = [size + p0 + p1 for size, (p0, p1) in zip(in_sizes, pads)]
    if kind == "avg":
        _native_pool(ctx, "avg", source, out, nd, kernel, strides, [(0, e) for e in extra], 0)
        return
    # sum = average (over the cells inside the padded extent) x that count
    mean = ctx.new_value(x_value.dtype, (shape[0], shape[1], *out_sizes), f"{out}.mean")
    _native_pool(ctx, "avg", source, mean, nd, kernel, strides, [(0, e) for e in extra], 0)
    counts = _count_map(padded_sizes, kernel, strides, [1] * nd, [(0, 0)] * nd, out_sizes, False)
    factor = counts.reshape(-1)[0] if np.all(counts == counts.reshape(-1)[0]) else counts.reshape((1, 1, *out_sizes))
    ctx.emit(OP.OH_NN_OPS_MUL, [mean, ctx.constant(np.asarray(factor, x_value.dtype))], [out])


def _same_lower_pool(ctx: NodeContext, kind: str, x: str, out: str, nd: int, kernel, strides,
                     include_pad: bool) -> None:
    """SAME_LOWER pooling over dynamic dims on the input padded at run time: a max ignores the NaN (unit strides)
    or lowest value it is padded with -- not quite where a stride is above 1: a window starting in the padding
    whose first real cell is NaN gets the maximum of its other cells, not NaN (``kernels.pool``); an average of
    the zero-padded input is divided by the average of zero-padded ones (the share of each window inside the
    input) unless the padding counts; a sum is the average times the window size."""
    dtype = ctx.value(x).dtype
    ones = [1] * nd
    fill = 0.0
    if kind == "max":  # (NaN padding: a NaN never wins with unit strides; strided, a NaN first cell would win)
        fill = float("nan") if dtype.kind == "f" and all(s == 1 for s in strides) else _lowest(dtype)
    padded = _same_lower_pad(ctx, x, kernel, strides, ones, fill)
    if kind == "max":
        _native_pool(ctx, kind, padded, out, nd, kernel, strides, [(0, 0)] * nd, 0)
        return
    shape = ctx.value(out).shape
    mean = ctx.new_value(dtype, shape, f"{out}.mean")
    _native_pool(ctx, "avg", padded, mean, nd, kernel, strides, [(0, 0)] * nd, 0)
    if kind == "sum":
        ctx.emit(OP.OH_NN_OPS_MUL, [mean, ctx.constant(np.asarray(np.prod(kernel), dtype))], [out])
        return
    if include_pad:
        ctx.alias(mean, out)
        return
    everywhere = ctx.emit_to(OP.OH_NN_OPS_FILL, [ctx.constant(np.asarray(1, dtype)), shape_tensor(ctx, x)], dtype,
                             ctx.value(x).shape, f"{out}.ones")
    share = ctx.new_value(dtype, shape, f"{out}.share")
    _native_pool(ctx, "avg", _same_lower_pad(ctx, everywhere, kernel, strides, ones, 0.0), share, nd, kernel, strides,
                 [(0, 0)] * nd, 0)
    ctx.emit(OP.OH_NN_OPS_DIV, [mean, share], [out])


def _native_pool(ctx: NodeContext, kind: str, x: str, out: str, nd: int, kernel, strides, pads, ceil_mode,
                 pad_mode: int | None = None) -> None:
    op, prefix = (OP.OH_NN_OPS_MAX_POOL, "OH_NN_MAX_POOL") if kind == "max" else (OP.OH_NN_OPS_AVG_POOL, "OH_NN_AVG_POOL")
    if nd == 1:
        kernel, strides = [1] + list(kernel), [1] + list(strides)
        pads = None if pads is None else [(0, 0)] + list(pads)
    params = {f"{prefix}_KERNEL_SIZE": list(kernel), f"{prefix}_STRIDE": list(strides),
              f"{prefix}_ROUND_MODE": int(ceil_mode)}
    if pad_mode is not None:
        params[f"{prefix}_PAD_MODE"] = np.asarray([pad_mode], np.int8)
    else:
        params[f"{prefix}_PAD"] = geometry.axes_to_pad_list(pads)
    x_nhwc = _into_nhwc(ctx, x, nd)
    out_value = ctx.value(out)
    y = ctx.new_value(out_value.dtype, _nhwc_shape(nd, out_value.shape), f"{out}.nhwc")
    ctx.emit(op, [x_nhwc], [y], params)
    _out_of_nhwc(ctx, y, nd, out)


@converts("MaxPool")
def max_pool(ctx: NodeContext) -> None:
    storage_order = int(ctx.attr("storage_order", 0))  # (only the Indices output depends on it)
    if storage_order not in (0, 1):
        raise ConversionIssue(INVALID_MODEL, f"storage_order={storage_order} must be 0 (row major) or 1 (column major)")
    x, y = ctx.input(0), ctx.output(0)
    _pool_common(ctx, "max", x, y)
    if _wanted(ctx, 1):
        _max_pool_indices(ctx, x, y, ctx.output(1), storage_order)


def _max_pool_indices(ctx: NodeContext, x: str, y: str, out: str, storage_order: int) -> None:
    """MaxPool's Indices: per output, the flat (NCHW) input position of the first tap (in the scan order: the last
    spatial axis fastest) whose value is the window's maximum ``y`` (onnxruntime's choice at a tie: it keeps the
    first value greater than all before), padding excluded; the position within an (n, c) plane in row-major order,
    or column-major (the first spatial axis fastest) under ``storage_order=1``, plus the plane's offset.

    Computed as ``base + delta``: the window origin's position (a constant per output) plus the chosen tap's offset,
    picked from the taps in reverse order by WHERE (the earliest match written last). A float window whose first
    cell inside the input is NaN points to that cell: onnxruntime's fold ``y = x if x > y`` stops there -- ``y``
    is that NaN where a stride or dilation is above 1 (MAX_POOL's rule, ``kernels.pool``), but with unit ones
    ``y`` is the maximum of the other cells (onnx.reference's value; onnxruntime's is NaN there) while the index
    stays onnxruntime's (onnx.reference's too where the other cells are all equal, the only case they agree)."""
    nd, kernel, strides, dilations, ceil_mode = _window_attributes(ctx, x)
    shape = list(ctx.value(x).shape)
    in_sizes = shape[2:]
    if not _known(in_sizes):
        raise ConversionIssue(DYNAMIC_SHAPE, f"the Indices output of MaxPool needs the spatial dims of {x!r} static "
                                             f"(the window positions are constants), got {shape}", tensor=x,
                              axes=tuple(2 + i for i, d in enumerate(in_sizes) if d < 0))
    pads = _onnx_pads(ctx, nd, kernel, strides, dilations, in_sizes)
    out_sizes = _pool_sizes(in_sizes, kernel, strides, dilations, pads, ceil_mode)
    limits.require_shape(out_sizes, np.int64, "the pooling windows' positions")
    # the Indices output has Y's shape: the rule's, where onnx shape inference keeps a last ceil-mode window that
    # starts in the end padding (as for Y in _pool_common)
    ctx.override_shape(out, [shape[0], shape[1], *out_sizes],
                       out_sizes != _sizes_onnx_infers(in_sizes, kernel, strides, dilations, pads, ceil_mode))
    order = list(range(nd)) if storage_order else list(range(nd - 1, -1, -1))  # fastest axis first
    step = [0] * nd
    size = 1
    for axis in order:
        step[axis], size = size, size * in_sizes[axis]
    plane = size
    origins = [np.arange(o, dtype=np.int64) * s - p0 for o, s, (p0, _) in zip(out_sizes, strides, pads)]
    base = sum(np.asarray(g) * st for g, st in zip(np.meshgrid(*origins, indexing="ij"), step))
    value = ctx.value(x)
    taps = _window_taps(ctx, x, kernel, strides, dilations, pads, out_sizes, _lowest(value.dtype), f"{out}.indices")
    i64 = np.int64
    full = (shape[0], shape[1], *out_sizes)
    chosen = None  # the offset of the chosen tap: a constant until the first WHERE
    for offsets, tap in reversed(list(zip(np.ndindex(*kernel), taps))):
        cells = [g + off * d for g, off, d in zip(np.meshgrid(*origins, indexing="ij"), offsets, dilations)]
        inside = np.logical_and.reduce([(c >= 0) & (c < n) for c, n in zip(cells, in_sizes)])
        if not inside.any():
            continue
        delta = ctx.constant(np.asarray(sum(off * d * st for off, d, st in zip(offsets, dilations, step)), i64),
                             f"{out}.delta")
        if chosen is None:  # the last tap inside some window: the start (overwritten wherever an earlier one matches)
            chosen = delta
            continue
        match = _compare(ctx, OP.OH_NN_OPS_EQUAL, tap, y, f"{out}.is_max")
        if not inside.all():  # (a padded cell holds the lowest value: it may equal a maximum of lowest values)
            match = _binary(ctx, OP.OH_NN_OPS_LOGICAL_AND, match, ctx.constant(inside, f"{out}.inside"),
                            f"{out}.max_inside", dtype=np.bool_)
        chosen = ctx.emit_to(OP.OH_NN_OPS_WHERE, [match, delta, chosen], i64, full, f"{out}.chosen")
    if value.dtype.kind == "f":  # a NaN first cell is the index (onnxruntime's scan-order fold)
        first = _first_cells(ctx, x, kernel, strides, dilations, pads, out_sizes, out)
        undefined = _compare(ctx, OP.OH_NN_OPS_NOT_EQUAL, first, first, f"{out}.first_is_nan")
        delta = sum(first * d * st for first, d, st in zip(
            np.ix_(*_first_taps(strides, dilations, pads, out_sizes)), dilations, step))
        chosen = ctx.emit_to(OP.OH_NN_OPS_WHERE, [undefined, ctx.constant(
            np.broadcast_to(delta, out_sizes).reshape(1, 1, *out_sizes).astype(i64), f"{out}.first_inside"),
                                                   chosen], i64, full, f"{out}.chosen")
    if _known(shape[:2]):
        planes = ctx.constant((np.arange(shape[0] * shape[1], dtype=i64) * plane).reshape(shape[0], shape[1],
                                                                                          *[1] * nd),
                              f"{out}.planes")
    else:
        count = dim_product(ctx, x, [0, 1])
        first = _binary(ctx, OP.OH_NN_OPS_MUL, iota(ctx, count, i64, "planes"), ctx.constant(np.asarray(plane, i64)),
                        f"{out}.plane_starts")
        planes = reshape_to(ctx, first, [dims_tensor(ctx, x, [0, 1]), *[1] * nd], f"{out}.planes")
    start = _binary(ctx, OP.OH_NN_OPS_ADD, planes, ctx.constant(base.astype(i64), f"{out}.origins"),
                    f"{out}.window_starts")
    _binary(ctx, OP.OH_NN_OPS_ADD, start, chosen, f"{out}.positions", output=out)
    ctx.settle(out, full, i64)


@converts("AveragePool")
def average_pool(ctx: NodeContext) -> None:
    _pool_common(ctx, "avg", ctx.input(0), ctx.output(0))


# -- LpPool ------------------------------------------------------------------------------------------------------------

def _lp_p(ctx: NodeContext) -> float:
    p = ctx.attr("p", 2)
    p = float(p)
    if p <= 0:
        raise _unsupported(f"p={p} must be > 0")
    return p


def _abs_pow(ctx: NodeContext, x: str, p: float, hint: str) -> str:
    value = ctx.value(x)
    if value.dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{ctx.node.op_type} of {value.dtype} is not supported")
    powered = ctx.new_value(value.dtype, value.shape, f"{hint}.pow")
    if p == 2:
        ctx.emit(OP.OH_NN_OPS_SQUARE, [x], [powered])
        return powered
    absolute = ctx.new_value(value.dtype, value.shape, f"{hint}.abs")
    ctx.emit(OP.OH_NN_OPS_ABS, [x], [absolute])
    if p == 1:
        return absolute
    ctx.emit(OP.OH_NN_OPS_POW, [absolute, ctx.constant(np.asarray(p, value.dtype))], [powered])
    return powered


def _root(ctx: NodeContext, summed: str, p: float, out: str) -> None:
    dtype = ctx.value(summed).dtype
    if p == 1:
        ctx.alias(summed, out)
    elif p == 2:
        ctx.emit(OP.OH_NN_OPS_SQRT, [summed], [out])
    else:
        ctx.emit(OP.OH_NN_OPS_POW, [summed, ctx.constant(np.asarray(1.0 / p, dtype))], [out])


@converts("LpPool")
def lp_pool(ctx: NodeContext) -> None:
    """LpPool: (sum over the window of |x|^p)^(1/p); padded cells add nothing."""
    p = _lp_p(ctx)
    x = ctx.input(0)
    out = ctx.output(0)
    powered = _abs_pow(ctx, x, p, out)
    value = ctx.value(x)
    summed = ctx.new_value(value.dtype, None, f"{out}.sum")
    _pool_common(ctx, "sum", powered, summed)
    out_shape = ctx.value(summed).shape
    if out_shape is not None:
        _set_shape(ctx, out, out_shape)
    _root(ctx, summed, p, out)


# -- global pooling ----------------------------------------------------------------------------------------------------

def _global_reduce(ctx: NodeContext, op: OP, prefix: str, x: str, out: str) -> None:
    rank = ctx.rank(x)
    if rank < 3:
        raise ConversionIssue(INVALID_MODEL, f"global pooling needs an [N, C, spatial...] input, got rank {rank}")
    shape = ctx.value(x).shape
    _set_shape(ctx, out, [shape[0], shape[1]] + [1] * (rank - 2))
    ctx.emit(op, [x, ctx.constant(np.arange(2, rank, dtype=np.int64), f"{ctx.name}.axes")], [out],
             {f"{prefix}_KEEP_DIMS": True})


@converts("GlobalAveragePool")
def global_average_pool(ctx: NodeContext) -> None:
    x = ctx.input(0)
    if ctx.rank(x) == 4:
        shape = ctx.value(x).shape
        _set_shape(ctx, ctx.output(0), [shape[0], shape[1], 1, 1])
        y = ctx.new_value(ctx.value(x).dtype, (shape[0], 1, 1, shape[1]), f"{ctx.output(0)}.nhwc")
        ctx.emit(OP.OH_NN_OPS_AVG_POOL, [ctx.transpose(x, NCHW_TO_NHWC)], [y], {"OH_NN_AVG_POOL_GLOBAL": True})
        ctx.transpose(y, NHWC_TO_NCHW, output=ctx.output(0))
        return
    _global_reduce(ctx, OP.OH_NN_OPS_REDUCE_MEAN, "OH_NN_REDUCE_MEAN", x, ctx.output(0))


@converts("GlobalMaxPool")
def global_max_pool(ctx: NodeContext) -> None:
    x = ctx.input(0)
    if ctx.rank(x) == 4:
        shape = ctx.value(x).shape
        _set_shape(ctx, ctx.output(0), [shape[0], shape[1], 1, 1])
        y = ctx.new_value(ctx.value(x).dtype, (shape[0], 1, 1, shape[1]), f"{ctx.output(0)}.nhwc")
        ctx.emit(OP.OH_NN_OPS_MAX_POOL, [ctx.transpose(x, NCHW_TO_NHWC)], [y], {"OH_NN_MAX_POOL_GLOBAL": True})
        ctx.transpose(y, NHWC_TO_NCHW, output=ctx.output(0))
        return
    _global_reduce(ctx, OP.OH_NN_OPS_REDUCE_MAX, "OH_NN_REDUCE_MAX", x, ctx.output(0))


@converts("GlobalLpPool")
def global_lp_pool(ctx: NodeContext) -> None:
    p = _lp_p(ctx)
    x = ctx.input(0)
    out = ctx.output(0)
    rank = ctx.rank(x)
    powered = _abs_pow(ctx, x, p, out)
    shape = ctx.value(x).shape
    summed = ctx.new_value(ctx.value(x).dtype, (shape[0], shape[1]) + (1,) * (rank - 2), f"{out}.sum")
    _global_reduce(ctx, OP.OH_NN_OPS_REDUCE_SUM, "OH_NN_REDUCE_SUM", powered, summed)
    _set_shape(ctx, out, ctx.value(summed).shape)
    _root(ctx, summed, p, out)


# -- MaxUnpool ---------------------------------------------------------------------------------------------------------

def _unpooled_shape(ctx: NodeContext, x_shape) -> list[int]:
    """The shape MaxUnpool infers from its input's: (in - 1) * stride - pads + kernel per spatial dim."""
    nd = len(x_shape) - 2
    kernel = ctx.attr("kernel_shape")
    if kernel is None or len(kernel) != nd:
        raise ConversionIssue(INVALID_MODEL, f"kernel_shape needs {nd} values, got {kernel}")
    kernel = [int(k) for k in kernel]
    strides = _ints_attr(ctx, "strides", nd, 1)
    pads = _ints_attr(ctx, "pads", 2 * nd, 0)
    inferred = [x_shape[0], x_shape[1]] + [(size - 1) * s - (pads[i] + pads[nd + i]) + k
                                           for i, (size, s, k) in enumerate(zip(x_shape[2:], strides, kernel))]
    if any(d < 1 for d in inferred[2:]):
        raise ConversionIssue(INVALID_MODEL, f"the unpooled shape {inferred} is empty")
    return inferred


def _max_unpool_of_run_time_planes(ctx: NodeContext, x: str, indices: str, out: str, dtype) -> None:
    """MaxUnpool whose batch or channels are known at run time only (the runtime-indices form of
    :func:`max_unpool`): the flat lengths are read at run time (the planes times the static plane sizes)."""
    x_shape = list(ctx.value(x).shape)
    inferred = _unpooled_shape(ctx, x_shape)
    i64, f64 = np.int64, np.dtype(np.float64)
    planes = dim_product(ctx, x, [0, 1])
    total = _binary(ctx, OP.OH_NN_OPS_MUL, planes, ctx.constant(np.asarray([int(np.prod(inferred[2:]))], i64)),
                    f"{out}.flat_length")
    flat_x = _reshape(ctx, x, (-1,))
    where = _reshape(ctx, indices, (-1, 1))
    sums = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [where, _cast(ctx, flat_x, f64, f"{out}.x64"), total], f64, (-1,),
                       f"{out}.sums")
    ones = ctx.emit_to(OP.OH_NN_OPS_FILL, [ctx.constant(np.asarray(1, f64)), dim_product(ctx, x, range(len(x_shape)))],
                       f64, (-1,), f"{out}.ones")
    hits = ctx.emit_to(OP.OH_NN_OPS_SCATTER_ND, [where, ones, total], f64, (-1,), f"{out}.hits")
    hits = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, hits, _const(ctx, 1, f64, "one"), f"{out}.hits_at_least_1")
    scattered = _cast(ctx, _binary(ctx, OP.OH_NN_OPS_DIV, sums, hits, f"{out}.means"), dtype, f"{out}.scattered")
    reshape_to(ctx, scattered, [d if d >= 0 else dims_tensor(ctx, x, [a]) for a, d in enumerate(inferred)],
               f"{out}.unpooled", output=out)


@converts("MaxUnpool")
def max_unpool(ctx: NodeContext) -> None:
    """Y (inferred shape, zeros) with Y.flat[I] = X, padded with zeros at the end to ``output_shape``.

    Constant indices: a repeated index keeps its last write (the ONNX reference), SCATTER_ND of the kept values.
    Runtime indices: SCATTER_ND sums, so the values (in float64) and a count are scattered and divided: exact for
    the equal values MaxPool writes at a repeated index, the mean otherwise."""
    x, indices = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    dtype = _float_input(ctx, x)
    x_shape = ctx.value(x).shape
    index_shape = ctx.value(indices).shape
    if x_shape is not None and len(x_shape) > 2 and _known(x_shape[2:]) and not _known(x_shape[:2]) \
            and ctx.value(indices).data is None and not ctx.has_input(2):
        # (a batch or channels known at run time only: the runtime-indices scatter into a run-time length)
        if ctx.value(indices).dtype != np.int64 or index_shape is None or len(index_shape) != len(x_shape) or any(
                a >= 0 and b >= 0 and a != b for a, b in zip(x_shape, index_shape)):
            raise ConversionIssue(INVALID_MODEL, f"the indices must be int64 of the input's shape {list(x_shape)}")
        _max_unpool_of_run_time_planes(ctx, x, indices, out, dtype)
        return
    x_shape = _shape(ctx, x, "the MaxUnpool input")
    nd = len(x_shape) - 2
    if nd < 1:
        raise ConversionIssue(INVALID_MODEL, f"MaxUnpool needs an (N, C, spatial...) input, got {list(x_shape)}")
    if ctx.value(indices).dtype != np.int64 or _shape(ctx, indices, "the indices") != x_shape:
        raise ConversionIssue(INVALID_MODEL, f"the indices must be int64 of the input's shape {list(x_shape)}")
    inferred = _unpooled_shape(ctx, x_shape)
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
