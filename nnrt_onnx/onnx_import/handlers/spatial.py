"""Converters of the spatial family: Resize, Upsample, DepthToSpace, SpaceToDepth, CenterCropPad and AffineGrid.

Decisions (also in the mapping rows' notes):

* Resize/Upsample: the interpolation is separable; every static resized axis has constant taps (each output's
  window of sources and weights) computed here like the ONNX reference (all coordinate modes, cubic, antialias,
  exclude_outside, roi), at onnxruntime's source coordinates and cubic window. Nearest becomes a GATHER per
  axis; linear on H/W of a 4-D tensor becomes RESIZE_BILINEAR when that op's own matrix equals ONNX's; anything
  else one GATHER per tap, weighted and summed (not a product with the [out, in] matrix, which would spread one
  NaN of the input to every output of the row). An axis whose input length (a dynamic dim) or output
  length (sizes computed at run time) is known at run time only is resized by the same formulas emitted as
  operations (``_resize``): nearest one GATHER, linear two GATHERs weighted; cubic, antialias,
  tf_crop_and_resize and keep_aspect_ratio_policy need it static.
* CenterCropPad needs a constant target shape and static dims on the cropped/padded axes: SLICE, then PAD
  (the extra unit of an odd difference goes to the end, as the reference).
* AffineGrid needs a constant size: a constant homogeneous base grid times theta^T (one MATMUL), reshaped.
"""
from __future__ import annotations

import math

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...geometry import NCHW_TO_NHWC, NHWC_TO_NCHW, permute
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    NEEDS_CONSTANT,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from ...kernels.spatial import bilinear_matrix
from .. import limits
from ..context import NodeContext
from . import converts
from ._common import _float_dtype, _matmul, _nhwc_shape, _reshape, _unsupported, fold_constant_node, through_real_values
from ._arith import NUMPY
from ._dims import dims_tensor, reshape_to
from ._resize import LENGTH_MODES, RunTimeAxis, emit_run_time_axis, linear_taps, nearest_source, source_coordinates

# -- Resize / Upsample -------------------------------------------------------------------------------------------------

def _cubic_coeffs(ratio: float, a: float) -> list[float]:
    r = ratio
    return [((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
            ((a + 2) * r - (a + 3)) * r * r + 1,
            ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
            ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a]


def _cubic_coeffs_antialias(ratio: float, scale: float, a: float) -> np.ndarray:
    scale = min(scale, 1.0)

    def coeff(x: float) -> float:
        x = abs(x)
        if x <= 1:
            return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
        if x < 2:
            return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
        return 0.0

    start = int(np.floor(-2 / scale) + 1)
    values = np.asarray([coeff(scale * (i - ratio)) for i in range(start, 2 - start)])
    return values / values.sum()


def _linear_coeffs_antialias(ratio: float, scale: float) -> np.ndarray:
    scale = min(scale, 1.0)
    start = int(np.floor(-1 / scale) + 1)
    args = (np.arange(start, start + 2 - 2 * start) - ratio) * scale
    values = np.clip(1 - np.abs(args), 0, 1)
    return values / values.sum()


def _source_coordinates(in_size: int, out_size: int, scale: float, ctm: str, roi, length: float,
                        work=np.float32) -> np.ndarray:
    """The input coordinate of every output position along one axis, in float32 as onnxruntime computes it (or in
    ``work``: float64 for a nearest resize to given sizes, see :func:`resize`): ``_resize.source_coordinates``
    evaluated at conversion. ``length`` is the formulas' ``length_resized``: the integer ``out_size``
    (onnxruntime, and the specification's "length of the resized tensor"; rule resize-length-resized) or
    ``scale * in_size`` (onnx.reference)."""
    work = np.dtype(work).type
    with np.errstate(divide="ignore", invalid="ignore"):  # (a where picks around a division by zero)
        return source_coordinates(NUMPY, np.arange(out_size, dtype=work), work(in_size), work(length), work(scale),
                                  ctm, roi)


def _resize_matrix(in_size: int, out_size: int, scale: float, mode: str, ctm: str, *, roi=None,
                   cubic_a: float = -0.75, exclude_outside: bool = False, antialias: bool = False,
                   nearest_mode: str = "round_prefer_floor", length: float | None = None, work=np.float32):
    """The [out, in] matrix of ONNX Resize along one axis (the ONNX reference's interpolation, at onnxruntime's
    source coordinates), the mask of output positions that take the extrapolation value (tf_crop_and_resize) or
    None, and the taps the matrix sums: (sources [out, n], weights [out, n]), every source of each output's window,
    zero weights included (an interpolation reads them: a NaN there is NaN, as in onnxruntime). ``length``: the
    ``length_resized`` of the coordinate formulas (default ``out_size``). Nearest and (plain) linear take their
    sources and weights from ``_resize``'s formulas, as an axis resized at run time."""
    limits.require_shape([out_size, in_size], np.float64, "the interpolation matrix of a resized axis")
    x = _source_coordinates(in_size, out_size, scale, ctm, roi, out_size if length is None else length, work)
    extrapolated = ((x < 0) | (x > in_size - 1)) if ctm == "tf_crop_and_resize" else None
    x = x.astype(np.float64)
    if mode == "nearest":
        sources = nearest_source(NUMPY, x, nearest_mode, float(in_size), quotient=np.dtype(work) == np.float64)
        taps = sources[:, None], np.ones((out_size, 1))
    elif mode == "linear" and not antialias:
        first, second, first_weight, second_weight = linear_taps(NUMPY, x, float(in_size))
        taps = np.stack([first, second], axis=1), np.stack([first_weight, second_weight], axis=1)
    else:
        taps = _cubic_or_antialiased_taps(x, in_size, scale, mode, cubic_a, exclude_outside, antialias)
    sources, weights = taps[0].astype(np.int64), taps[1].astype(np.float64)
    matrix = np.zeros((out_size, in_size), np.float64)
    np.add.at(matrix, (np.repeat(np.arange(out_size), sources.shape[1]), sources.reshape(-1)), weights.reshape(-1))
    if extrapolated is not None:
        matrix[extrapolated] = 0.0
        if not extrapolated.any():
            extrapolated = None
    return matrix, extrapolated, (sources, weights)


def _cubic_or_antialiased_taps(x, in_size: int, scale: float, mode: str, cubic_a: float, exclude_outside: bool,
                               antialias: bool) -> tuple[np.ndarray, np.ndarray]:
    """The taps (sources [out, n], weights [out, n]) of cubic and antialiased linear interpolation at coordinates
    ``x`` (the ONNX reference's coefficients, sources clamped into the input)."""
    floor = np.floor(x)
    # plain cubic: the window of onnxruntime, floor(x) - 1 .. floor(x) + 2 (at an integer x the reference's
    # ratio 1 reads floor(x) - 2 .. floor(x) + 1: the same value, but another source for a NaN to come from)
    plain_cubic = mode == "cubic" and not antialias
    ratios = x - floor if plain_cubic else np.where(x == floor, 1.0, x - floor)
    rows = []
    for r in ratios:
        if mode == "linear":
            rows.append(_linear_coeffs_antialias(float(r), scale))
        else:
            rows.append(_cubic_coeffs_antialias(float(r), scale, cubic_a) if antialias else _cubic_coeffs(float(r), cubic_a))
    coeffs = np.asarray(rows, np.float64)
    n = coeffs.shape[1]
    pad = int(np.ceil(n / 2))
    padded = x + pad
    p = np.floor(padded).astype(np.int64)
    frac = padded - p
    if plain_cubic:
        offset = -(n // 2) + 1
    elif n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        base = -((n - 1) // 2)
        offset = np.where(frac <= 0.5, base, base + 1)
    index = (p + offset)[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        coeffs = np.where((index < 0) | (index >= in_size), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    return np.clip(index, 0, in_size - 1), coeffs


def _emit_resize(ctx: NodeContext, x: str, out: str, out_shape: list[int], axes_plan: dict, mode: str,
                 extrapolation_value: float) -> None:
    """axes_plan: axis -> ``_resize_matrix``'s (matrix, extrapolation mask or None, taps), or a ``RunTimeAxis``;
    only the axes that change."""
    value = ctx.value(x)
    dtype = value.dtype
    rank = len(out_shape)
    ctx.settle(out, out_shape)
    if not axes_plan:
        ctx.alias(x, out)
        return
    at_run_time = any(isinstance(p, RunTimeAxis) for p in axes_plan.values())
    masks = {a: p[1] for a, p in axes_plan.items() if not isinstance(p, RunTimeAxis) and p[1] is not None}
    if mode != "nearest" and dtype.kind != "f":
        if value.quant is None or value.quant.count != 1:
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"{mode} resize of {dtype} is not supported (float types, or "
                                                     f"int8/uint8 tensors quantized per tensor)")
        _emit_quantized_resize(ctx, x, out, out_shape, axes_plan, mode, extrapolation_value)
        return
    current_shape = list(value.shape)
    steps = sorted(axes_plan)
    # linear on H/W of a 4-D tensor: one RESIZE_BILINEAR when its matrices are exactly ONNX's
    if mode == "linear" and rank == 4 and set(steps) <= {2, 3} and not masks and not at_run_time \
            and min(current_shape[2:]) > 0:
        for code in (2, 1, 0):
            if all(np.allclose(axes_plan[a][0] if a in axes_plan else np.eye(current_shape[a]),
                               bilinear_matrix(current_shape[a], out_shape[a], code), rtol=0, atol=1e-6)
                   for a in (2, 3)):
                y = ctx.new_value(dtype, _nhwc_shape(2, out_shape), f"{out}.nhwc")
                ctx.emit(OP.OH_NN_OPS_RESIZE_BILINEAR, [ctx.transpose(x, NCHW_TO_NHWC)], [y],
                         {"OH_NN_RESIZE_BILINEAR_NEW_HEIGHT": out_shape[2], "OH_NN_RESIZE_BILINEAR_NEW_WIDTH": out_shape[3],
                          "OH_NN_RESIZE_BILINEAR_COORDINATE_TRANSFORM_MODE": code})
                ctx.transpose(y, NHWC_TO_NCHW, output=out)
                return
    current = x
    for position, axis in enumerate(steps):
        plan = axes_plan[axis]
        current_shape[axis] = plan.out_length if isinstance(plan, RunTimeAxis) else plan[0].shape[0]
        last = position == len(steps) - 1 and not masks
        target = out if last else ctx.new_value(dtype, tuple(current_shape), f"{out}.axis{axis}")
        if isinstance(plan, RunTimeAxis):
            emit_run_time_axis(ctx, current, axis, plan, target)
            current = target
            continue
        _emit_taps(ctx, current, axis, plan[2], dtype, tuple(current_shape), target)
        current = target
    if masks:
        keep = np.ones([out_shape[a] if a in masks else 1 for a in range(rank)], bool)
        for a, m in masks.items():
            shape = [1] * rank
            shape[a] = out_shape[a]
            keep = keep & ~m.reshape(shape)
        # selected, not multiplied by a 0/1 mask: an extrapolated position reads a row of zeros (or any source, for
        # nearest), and 0 x inf or a NaN source is NaN where the extrapolation value belongs (fuzzer seed 4711)
        fill = ctx.constant(np.full([1] * rank, extrapolation_value, dtype), f"{out}.extrapolation_value")
        ctx.emit(OP.OH_NN_OPS_WHERE, [ctx.constant(keep, f"{out}.inside"), current, fill], [out])


def _emit_taps(ctx: NodeContext, x: str, axis: int, taps: tuple, dtype, shape: tuple, target: str) -> None:
    """``target`` = sum over the window of GATHER(x, the tap's sources along ``axis``) x its weights: each output
    reads its own window only (a product with the [out, in] matrix would spread one NaN or infinity of ``x`` to
    every output along the axis, as 0 x NaN is NaN: fuzzer seed 8191); nearest is the one GATHER."""
    sources, weights = taps
    count = sources.shape[1]
    weight_shape = [1] * len(shape)
    weight_shape[axis] = shape[axis]
    axis_constant = ctx.constant(np.asarray([axis], np.int64))
    terms = []
    for tap in range(count):
        index = ctx.constant(np.ascontiguousarray(sources[:, tap].astype(np.int32)), f"{target}.sources{tap}")
        gathered = ctx.emit_to(OP.OH_NN_OPS_GATHER, [x, index, axis_constant], dtype, shape, f"{target}.tap{tap}",
                               output=target if count == 1 else None)
        if count > 1:
            weight = ctx.constant(weights[:, tap].astype(dtype).reshape(weight_shape), f"{target}.weights{tap}")
            terms.append(ctx.emit_to(OP.OH_NN_OPS_MUL, [gathered, weight], dtype, shape, f"{target}.weighted{tap}"))
    total = terms[0] if terms else target
    for position, term in enumerate(terms[1:], 2):
        total = ctx.emit_to(OP.OH_NN_OPS_ADD, [total, term], dtype, shape, f"{target}.sum{position}",
                            output=target if position == count else None)


def _emit_quantized_resize(ctx: NodeContext, x: str, out: str, out_shape: list[int], axes_plan: dict, mode: str,
                           extrapolation_value: float) -> None:
    """Linear / cubic resize of a quantized int8/uint8 tensor (onnxruntime's QOperator quantizer leaves Resize on
    the integers, with the input's parameters on the output): the interpolation weights of a row sum to 1, so
    interpolating the integers is interpolating the real values, quantized with the same parameters (up to the
    rounding of the last step): ``through_real_values``, folded into a quantized RESIZE_BILINEAR where the resize is
    one."""
    through_real_values(ctx, x, out, lambda real, real_out: _emit_resize(ctx, real, real_out, out_shape, axes_plan,
                                                                         mode, extrapolation_value))


def _float_list(array) -> list[float]:
    return [float(v) for v in np.asarray(array, np.float64).reshape(-1)]


@converts("Resize")
def resize(ctx: NodeContext) -> None:
    """Resize (opset 10..19+): every attribute; scales (and roi for tf_crop_and_resize) must be constants; sizes may
    be computed at run time, and a dynamic resized dim is resized at run time, for nearest and linear."""
    x = ctx.input(0)
    shape = ctx.value(x).shape
    if shape is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {x!r} is unknown")
    rank = len(shape)
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic"):
        raise _unsupported(f"mode={mode!r} is not supported")
    if ctx.opset < 11:  # Resize-10: asymmetric; nearest floors when upsampling and ceils when downsampling (ORT)
        ctm, nearest_mode, cubic_a, exclude, extrapolation, antialias, axes, policy = \
            "asymmetric", None, -0.75, False, 0.0, False, None, "stretch"
        scales = ctx.constant_input(1, "scales").astype(np.float64)
        sizes = None
        roi = None
    else:
        ctm = ctx.attr("coordinate_transformation_mode", "half_pixel")
        nearest_mode = ctx.attr("nearest_mode", "round_prefer_floor")
        cubic_a = float(ctx.attr("cubic_coeff_a", -0.75))
        exclude = bool(int(ctx.attr("exclude_outside", 0)))
        extrapolation = float(ctx.attr("extrapolation_value", 0.0))
        antialias = bool(int(ctx.attr("antialias", 0)))
        axes = ctx.attr("axes")
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        scales = sizes = None
        if ctx.has_input(2) and ctx.value(ctx.input(2)).shape not in ((0,),):
            scales = ctx.constant_input(2, "scales").astype(np.float64).reshape(-1)  # (a 0-d one: one value)
            if scales.size == 0:
                scales = None
        if scales is None and ctx.has_input(3):
            sizes = _resize_sizes(ctx, x)
        if scales is None and sizes is None:
            raise ConversionIssue(INVALID_MODEL, "Resize needs scales or sizes")
        roi = None
        if ctm == "tf_crop_and_resize":
            roi = _float_list(ctx.constant_input(1, "roi")) if ctx.has_input(1) else None
        if mode == "nearest" and antialias:
            raise _unsupported("antialias=1 with mode=nearest is not supported")
    axes = list(range(rank)) if axes is None else [int(a) + rank if int(a) < 0 else int(a) for a in axes]
    count = len(axes)
    if scales is not None and scales.size != count or sizes is not None and len(sizes) != count:
        raise ConversionIssue(INVALID_MODEL, f"scales/sizes need {count} values (one per axis {axes})")
    if roi is not None:
        if len(roi) != 2 * count:
            raise ConversionIssue(INVALID_MODEL, f"roi {roi} needs {2 * count} values")
        roi_pairs = list(zip(roi[:count], roi[count:]))
    else:
        roi_pairs = [(0.0, 1.0)] * count
        if ctm == "tf_crop_and_resize":
            raise ConversionIssue(INVALID_MODEL, "coordinate_transformation_mode=tf_crop_and_resize needs roi")
    # an axis whose size stays (scale 1, or the size it has: a symbol when dynamic, read from Shape) may be
    # dynamic; a resized axis whose input or output length is known at run time only is resized at run time
    # (nearest and linear: the coordinates computed by the model, _resize.RunTimeAxis)
    in_sizes = [shape[a] for a in axes]
    kept = [sizes is not None and sizes[i] == "same" or scales is not None and float(np.float32(scales[i])) == 1.0
            and (ctm != "tf_crop_and_resize" or tuple(roi_pairs[i]) == (0.0, 1.0)) for i in range(count)]
    run_time = [not k and (d < 0 or sizes is not None and not isinstance(sizes[i], int))
                for i, (d, k) in enumerate(zip(in_sizes, kept))]
    if any(run_time):
        _run_time_resize_supported(ctx, x, [a for a, r in zip(axes, run_time) if r], mode, ctm, antialias, policy)
    if any(k and d < 0 for k, d in zip(kept, in_sizes)) and policy != "stretch":
        raise ConversionIssue(DYNAMIC_SHAPE, f"keep_aspect_ratio_policy={policy!r} needs every resized dim of {x!r} "
                                             f"static, got {list(shape)}", tensor=x)
    if sizes is not None:
        out_sizes = [d if k else int(v) if isinstance(v, int) else -1 for v, d, k in zip(sizes, in_sizes, kept)]
        # onnxruntime's scale of a sized axis: the float32 quotient (for interpolation; nearest picks its source
        # in float64, below); an axis resized at run time computes it there
        axis_scales = [1.0 if k else None if r else float(np.float32(o) / np.float32(i))
                       for o, i, k, r in zip(out_sizes, in_sizes, kept, run_time)]
        if policy != "stretch":
            pick = min if policy == "not_larger" else max if policy == "not_smaller" else None
            if pick is None:
                raise _unsupported(f"keep_aspect_ratio_policy={policy!r} is not supported")
            # the common scale of the exact quotients: round(3 * 7 / 6) is 4 (onnxruntime, onnx.reference), the
            # float32 quotient's product 3.4999998 rounded to 3
            common = pick(o / i for o, i, k in zip(out_sizes, in_sizes, kept) if not k)
            axis_scales = [common] * count
            out_sizes = [int(common * i + 0.5) for i in in_sizes]
    else:
        axis_scales = _finite_scales(scales, "Resize")
        out_sizes = [d if k else -1 if r else _scaled_length(ctx, s, d, a)
                     for s, d, a, k, r in zip(axis_scales, in_sizes, axes, kept, run_time)]
    if any(s is not None and s <= 0 for s in axis_scales) or any(o == 0 for o in out_sizes):
        raise _unsupported(f"scales {axis_scales} give an empty output {out_sizes} (empty tensors are not supported)")
    out_shape = list(shape)
    plan = {}
    # onnxruntime skips the coordinate formula on an axis of scale 1, and on every axis when none changes its length
    # (rule resize-kept-length: recorded where the formula moves positions of such an axis)
    any_changes = any(not r and o != d for o, d, r in zip(out_sizes, in_sizes, run_time))
    for i, (axis, size, out_size, scale, pair, k) in enumerate(zip(axes, in_sizes, out_sizes, axis_scales, roi_pairs,
                                                                   kept)):
        out_shape[axis] = out_size
        if run_time[i]:
            axis_nearest = nearest_mode or ("floor" if scale >= 1 else "ceil")
            if sizes is None:
                plan[axis] = RunTimeAxis(mode, ctm, axis_nearest, out_size, scale=scale)
                _run_time_deviations(ctx, axis, scale, mode, ctm, axis_nearest, any_changes)
            else:
                plan[axis] = RunTimeAxis(mode, ctm, axis_nearest, out_size, sizes=ctx.input(3), sizes_index=i)
                if mode == "nearest":
                    ctx.deviation("resize-nearest-sizes", f"axis {axis}: lengths known at run time (not checked at "
                                                          f"conversion): sources picked in float64")
            continue
        identity = k or math.isclose(scale, 1.0) and out_size == size and (
            ctm != "tf_crop_and_resize" or (math.isclose(pair[0], 0.0) and math.isclose(pair[1], 1.0)))
        if identity:
            continue
        axis_nearest = nearest_mode or ("floor" if scale >= 1 else "ceil")
        options = dict(roi=pair, cubic_a=cubic_a, exclude_outside=exclude, antialias=antialias,
                       nearest_mode=axis_nearest)
        if sizes is not None and mode == "nearest" and ctm != "tf_crop_and_resize":
            # which source a nearest output takes is decided at ties (3.5 of 7 -> 2, asymmetric), which float32
            # quotients break either way: float64, x_resized / (out / in), as onnx.reference (onnxruntime agrees
            # but for a few ties its float32 arithmetic rounds the other way; rule resize-nearest-sizes).
            # (tf_crop_and_resize's coordinates take no scale: float32 as onnxruntime's, below, whose order keeps
            # a tie of the lengths exact; its float32 roi is no exact ratio of integers)
            exact = scale if policy != "stretch" else out_size / size  # (the policy's common scale: exact already)
            plan[axis] = _resize_matrix(size, out_size, exact, mode, ctm, work=np.float64, **options)
            if not np.array_equal(plan[axis][0], _resize_matrix(size, out_size, scale, mode, ctm, **options)[0]):
                ctx.deviation("resize-nearest-sizes", f"axis {axis}: {size} -> {out_size}: float64 and float32 "
                                                      f"coordinates pick different sources at a tie")
            if np.float32(scale) == 1 or not any_changes:
                _kept_length_deviation(ctx, axis, plan[axis], f"{ctm} at size {out_size}")
            continue
        plan[axis] = _resize_matrix(size, out_size, scale, mode, ctm, **options)
        if np.float32(scale) == 1 or not any_changes:
            _kept_length_deviation(ctx, axis, plan[axis], f"{ctm} at scale {scale:g}")
        if _length_readings_differ(size, out_size, scale, mode, ctm, options):
            ctx.deviation("resize-length-resized", f"axis {axis}: {size} -> {out_size} at scale {scale:g}: "
                                                   f"onnxruntime's length_resized {out_size}, onnx.reference's "
                                                   f"{scale * size:g}")
    _emit_resize(ctx, x, ctx.output(0), out_shape, plan, mode, extrapolation)


def _kept_length_deviation(ctx: NodeContext, axis: int, plan: tuple, case: str) -> bool:
    """Record rule resize-kept-length where an axis that onnxruntime returns as it is (its scale is 1, or no axis
    changes its length) keeps its length but the coordinate formula does not map it onto itself (``plan``: the
    axis' matrix and extrapolation mask). Whether it was recorded."""
    matrix = plan[0]  # (an extrapolated position's row is empty: it moves too)
    size = matrix.shape[1]
    if matrix.shape[0] != size:
        return False
    moved = int(np.count_nonzero(~np.all(matrix == np.eye(size), axis=1)))
    if moved:
        ctx.deviation("resize-kept-length", f"axis {axis}: {size} -> {size} ({case}): the formula moves {moved} of "
                                            f"{size} positions; onnxruntime keeps the axis as it is")
    return bool(moved)


def _length_readings_differ(size: int, out_size: int, scale: float, mode: str, ctm: str, options: dict) -> bool:
    """Whether onnx.reference's length_resized (scale x size) gives another matrix than the integer out_size
    (rule resize-length-resized)."""
    fractional = scale * size
    return fractional != out_size and ctm in LENGTH_MODES and not np.array_equal(
        _resize_matrix(size, out_size, scale, mode, ctm, **options)[0],
        _resize_matrix(size, out_size, scale, mode, ctm, length=fractional, **options)[0])


def _run_time_resize_supported(ctx: NodeContext, x: str, axes: list[int], mode: str, ctm: str, antialias: bool,
                               policy: str) -> None:
    """Refuse, with the dims to pin, what an axis resized at run time cannot compute: cubic and antialiased
    interpolation (a window whose taps depend on the scale), tf_crop_and_resize, a policy's common scale."""
    shape = list(ctx.value(x).shape)
    what = ("mode=cubic" if mode == "cubic" else "antialias=1" if antialias else
            "coordinate_transformation_mode=tf_crop_and_resize" if ctm == "tf_crop_and_resize" else
            f"keep_aspect_ratio_policy={policy!r}" if policy != "stretch" else None)
    if what is None:
        return
    dynamic = [a for a in axes if shape[a] < 0]
    if dynamic:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the resized dims {dynamic} of {x!r} must be static: {what} is "
                                             f"converted with constant interpolation taps, got {shape}", tensor=x)
    raise ConversionIssue(NEEDS_CONSTANT, f"sizes (input #3) must be a constant: {what} is converted with "
                                          f"constant interpolation taps", tensor=ctx.input(3))


_DEVIATION_LENGTHS = 4096  # input lengths an axis resized at run time is checked at for rule resize-output-size
_LENGTH_READING_LENGTHS = 64  # ... and for rule resize-length-resized (a matrix each)


def _run_time_deviations(ctx: NodeContext, axis: int, scale: float, mode: str, ctm: str, nearest_mode: str,
                         any_changes: bool) -> None:
    """The rules an axis resized at run time by ``scale`` follows where onnxruntime or onnx.reference differ, at
    some input length: recorded with the first such length (the lengths are known at run time only).
    ``any_changes``: a static axis of the node changes its length (onnxruntime then applies the formula to an axis
    that keeps its length, unless its scale is 1)."""
    lengths = np.arange(1, _DEVIATION_LENGTHS + 1)
    exact = np.floor(lengths * float(np.float32(scale))).astype(np.int64)  # (exact: < 2^29 x a float32)
    rounded = (np.float32(scale) * lengths.astype(np.float32)).astype(np.int64)
    differs = np.flatnonzero(exact != rounded)
    if differs.size:
        at = int(differs[0])
        ctx.deviation("resize-output-size", f"axis {axis} (length known at run time): e.g. floor({lengths[at]} x "
                                            f"{scale!r}) = {exact[at]}; onnxruntime's float32 product gives "
                                            f"{rounded[at]}")
    options = dict(nearest_mode=nearest_mode)
    kept = lengths[:_LENGTH_READING_LENGTHS][exact[:_LENGTH_READING_LENGTHS] == lengths[:_LENGTH_READING_LENGTHS]]
    for size in kept if not any_changes else []:
        if _kept_length_deviation(ctx, axis, _resize_matrix(int(size), int(size), scale, mode, ctm, **options),
                                  f"{ctm} at scale {scale:g}; the length is known at run time: e.g. this one"):
            break
    for size, out_size in zip(lengths[:_LENGTH_READING_LENGTHS], exact[:_LENGTH_READING_LENGTHS]):
        if out_size > 0 and _length_readings_differ(int(size), int(out_size), scale, mode, ctm, options):
            ctx.deviation("resize-length-resized", f"axis {axis} (length known at run time): e.g. {size} -> "
                                                   f"{out_size} at scale {scale:g}: onnxruntime's length_resized "
                                                   f"{out_size}, onnx.reference's {scale * size:g}")
            return


def _scaled_length(ctx: NodeContext, scale: float, size: int, axis: int) -> int:
    """floor(size * scale) of the exact product (the specification, onnx shape inference and onnx.reference);
    onnxruntime multiplies in float32, which can round up past an integer (0.7 x 10 = 7): rule resize-output-size."""
    exact = int(math.floor(scale * size))
    rounded = int(np.float32(scale) * np.float32(size))
    if rounded != exact:
        ctx.deviation("resize-output-size", f"axis {axis}: floor({size} x {scale!r}) = {exact}; onnxruntime's "
                                            f"float32 product gives {rounded}")
    return exact


def _resize_sizes(ctx: NodeContext, x: str) -> list:
    """The sizes input: a constant, or one computed at run time whose entries are read where they can be (a
    Concat of parts read apart): ints, "same" for the input's own dim (that axis keeps its size), None for an entry
    known at run time only (that axis is resized at run time)."""
    sizes = ctx.input_value(3)
    if sizes.data is not None:
        return [int(v) for v in sizes.data.astype(np.int64).reshape(-1)]
    if sizes.dtype.kind not in "iu":
        raise ConversionIssue(INVALID_MODEL, f"sizes has dtype {sizes.dtype} (int64)", tensor=ctx.input(3))
    reader = ctx.shape_values()
    requested = reader.elements(ctx.node.input[3]) if reader is not None else None
    dims = reader.dims(ctx.node.input[0]) if reader is not None else None
    if requested is None or dims is None or len(requested) != len(dims):
        ctx.constant_input(3, "sizes")  # raises NEEDS_CONSTANT
    return ["same" if isinstance(v, str) and v == d else None if isinstance(v, str) else v
            for v, d in zip(requested, dims)]


def _finite_scales(scales, op: str) -> list[float]:
    """Resize/Upsample scales as float32 values, each finite (an invalid model otherwise)."""
    values = [float(np.float32(s)) for s in scales]
    if not all(math.isfinite(v) for v in values):
        raise ConversionIssue(INVALID_MODEL, f"{op} scales {values} must be finite")
    return values


@converts("Upsample")
def upsample(ctx: NodeContext) -> None:
    """Upsample (opset 7: scales attribute; 9: scales input): asymmetric coordinates, nearest truncates (ORT).
    A dynamic resized dim is resized at run time (as Resize's)."""
    x = ctx.input(0)
    shape = ctx.value(x).shape
    if shape is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {x!r} is unknown")
    mode = ctx.attr("mode", "nearest")
    if mode == "bilinear":
        mode = "linear"
    if mode not in ("nearest", "linear"):
        raise _unsupported(f"mode={mode!r} is not supported")
    if ctx.opset < 9:
        scales = ctx.attr("scales")
        if scales is None:
            raise ConversionIssue(INVALID_MODEL, "Upsample needs scales")
        scales = _finite_scales(scales, "Upsample")
    else:
        scales = _finite_scales(ctx.constant_input(1, "scales").reshape(-1), "Upsample")
    if len(scales) != len(shape):
        raise ConversionIssue(INVALID_MODEL, f"scales {scales} need {len(shape)} values")
    out_shape = [d if s == 1.0 else -1 if d < 0 else _scaled_length(ctx, s, d, a)
                 for a, (s, d) in enumerate(zip(scales, shape))]
    if any(o == 0 for o in out_shape) or any(s <= 0 for s in scales):
        raise _unsupported(f"scales {scales} give an empty output {out_shape}")
    plan = {}
    any_changes = any(d >= 0 and o != d for o, d in zip(out_shape, shape))  # (rule resize-kept-length, as Resize)
    for axis, (size, out_size, scale) in enumerate(zip(shape, out_shape, scales)):
        if scale == 1.0 or math.isclose(scale, 1.0) and out_size == size:
            continue
        if size < 0:  # resized at run time (_resize.RunTimeAxis)
            nearest_mode = "floor" if scale >= 1 else "ceil"
            plan[axis] = RunTimeAxis(mode, "asymmetric", nearest_mode, -1, scale=scale)
            _run_time_deviations(ctx, axis, scale, mode, "asymmetric", nearest_mode, any_changes)
            continue
        plan[axis] = _resize_matrix(size, out_size, scale, mode, "asymmetric",
                                    nearest_mode="floor" if scale >= 1 else "ceil")
        if not any_changes:  # (a scale of 1 is the identity here)
            _kept_length_deviation(ctx, axis, plan[axis], f"asymmetric at scale {scale:g}")
    _emit_resize(ctx, x, ctx.output(0), out_shape, plan, mode, 0.0)


# -- Depth / space -----------------------------------------------------------------------------------------------------

def _nhwc(ctx: NodeContext, what: str) -> tuple[str, tuple[int, ...]]:
    x = ctx.input(0)
    if ctx.rank(x) != 4:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"{what} needs a 4-D NCHW input, {x!r} has rank {ctx.rank(x)}")
    return x, ctx.value(x).shape


def _blocksize(ctx: NodeContext) -> int:
    block = ctx.attr("blocksize")
    if block is None or int(block) < 1:
        raise ConversionIssue(INVALID_MODEL, f"blocksize={block} must be given and >= 1")
    return int(block)


def _mode(ctx: NodeContext) -> str:
    mode = ctx.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"mode={mode!r} is not supported (DCR, CRD)")
    return mode


@converts("DepthToSpace")
def depth_to_space(ctx: NodeContext) -> None:
    if fold_constant_node(ctx):
        return
    x, (n, c, h, w) = _nhwc(ctx, "DepthToSpace")
    block = _blocksize(ctx)
    mode = _mode(ctx)
    if c >= 0 and c % (block * block):
        raise ConversionIssue(INVALID_MODEL, f"channels {c} are not divisible by blocksize^2 = {block * block}")
    out = ctx.output(0)
    out_nchw = [n, c // (block * block) if c >= 0 else -1, h * block if h >= 0 else -1, w * block if w >= 0 else -1]
    ctx.settle(out, out_nchw)
    x_nhwc = ctx.transpose(x, NCHW_TO_NHWC)
    y = ctx.emit_to(OP.OH_NN_OPS_DEPTH_TO_SPACE, [x_nhwc], ctx.value(x).dtype, list(permute(out_nchw, NCHW_TO_NHWC)),
               f"{out}.nhwc", {"OH_NN_DEPTH_TO_SPACE_BLOCK_SIZE": block,
                               "OH_NN_DEPTH_TO_SPACE_MODE": 0 if mode == "DCR" else 1})
    ctx.transpose(y, NHWC_TO_NCHW, output=out)


@converts("SpaceToDepth")
def space_to_depth(ctx: NodeContext) -> None:
    """SPACE_TO_DEPTH orders the new channels DCR; CRD (opset 28) re-orders them with a constant channel GATHER."""
    if fold_constant_node(ctx):
        return
    x, (n, c, h, w) = _nhwc(ctx, "SpaceToDepth")
    block = _blocksize(ctx)
    mode = _mode(ctx)
    if block < 2:
        ctx.alias(x, ctx.output(0))
        return
    if (h >= 0 and h % block) or (w >= 0 and w % block):
        raise ConversionIssue(INVALID_MODEL, f"height/width {h}x{w} are not divisible by blocksize {block}")
    out = ctx.output(0)
    out_nchw = [n, c * block * block if c >= 0 else -1, h // block if h >= 0 else -1, w // block if w >= 0 else -1]
    ctx.settle(out, out_nchw)
    dtype = ctx.value(x).dtype
    nhwc_shape = list(permute(out_nchw, NCHW_TO_NHWC))
    x_nhwc = ctx.transpose(x, NCHW_TO_NHWC)
    y = ctx.emit_to(OP.OH_NN_OPS_SPACE_TO_DEPTH, [x_nhwc], dtype, nhwc_shape, f"{out}.nhwc",
               {"OH_NN_SPACE_TO_DEPTH_BLOCK_SIZE": block})
    if mode == "CRD" and c < 0:  # dynamic channels: the DCR channels as [b*b, C], transposed to [C, b*b]
        lead = [d if d >= 0 else dims_tensor(ctx, y, [a]) for a, d in enumerate(nhwc_shape[:3])]
        split = reshape_to(ctx, y, [*lead, block * block, -1], f"{out}.dcr")
        y = reshape_to(ctx, ctx.transpose(split, (0, 1, 2, 4, 3)), [*lead, -1], f"{out}.crd_nhwc")
    elif mode == "CRD":  # CRD channel k = c * b*b + (i*b + j) is DCR channel (i*b + j) * C + c
        k = np.arange(c * block * block)
        order = (k % (block * block)) * c + k // (block * block)
        y = ctx.emit_to(OP.OH_NN_OPS_GATHER, [y, ctx.constant(order.astype(np.int64), f"{out}.crd"),
                                              ctx.constant(np.asarray([3], np.int64))], dtype, nhwc_shape,
                   f"{out}.crd_nhwc")
    ctx.transpose(y, NHWC_TO_NCHW, output=out)


# -- CenterCropPad, AffineGrid -----------------------------------------------------------------------------------------

@converts("CenterCropPad")
def center_crop_pad(ctx: NodeContext) -> None:
    x = ctx.input(0)
    rank = ctx.rank(x)
    shape = list(ctx.value(x).shape)
    target = [int(v) for v in np.asarray(ctx.constant_input(1, "the target shape")).reshape(-1)]
    axes = ctx.attr("axes")
    axes = list(range(rank)) if axes is None else [int(a) for a in axes]
    if any(not -rank <= a < rank for a in axes) or len({a % rank for a in axes}) != len(axes):
        raise ConversionIssue(INVALID_MODEL, f"axes={axes} are out of range or repeated for rank {rank}")
    axes = [a % rank for a in axes]
    if len(axes) != len(target):
        raise ConversionIssue(INVALID_MODEL, f"the target shape {target} needs one value per axis {axes}")
    begin, size, pads, out_shape = [], [], [[0, 0] for _ in range(rank)], list(shape)
    crop_axes = []
    for axis, wanted in zip(axes, target):
        if wanted < 1:
            raise ConversionIssue(INVALID_MODEL, f"target size {wanted} on axis {axis}: NNRt tensors cannot be empty")
        if shape[axis] < 0:  # a dynamic axis: cropped and padded by amounts computed at run time
            x = _center_crop_pad_at_run_time(ctx, x, axis, wanted)
            shape[axis] = out_shape[axis] = wanted
    for axis, wanted in zip(axes, target):
        dim = shape[axis]
        if wanted < dim:
            crop_axes.append(axis)
            begin.append((dim - wanted) // 2)
            size.append(wanted)
        elif wanted > dim:
            extra = wanted - dim
            pads[axis] = [extra // 2, extra - extra // 2]
        out_shape[axis] = wanted
    out = ctx.output(0)
    padded = any(p != [0, 0] for p in pads)
    current = x
    if crop_axes:
        shape_after = list(shape)
        for axis, s in zip(crop_axes, size):
            shape_after[axis] = s
        current = ctx.emit_to(OP.OH_NN_OPS_SLICE, [x, ctx.constant(np.asarray(begin, np.int64)),
                                                  ctx.constant(np.asarray(size, np.int64))],
                        ctx.value(x).dtype, shape_after, f"{ctx.name}.crop", {"OH_NN_SLICE_AXES": crop_axes},
                        output=None if padded else out)
    if padded:
        ctx.emit_to(OP.OH_NN_OPS_PAD, [current, ctx.constant(np.asarray(pads, np.int64))], ctx.value(x).dtype,
              out_shape, "", output=out)
    elif not crop_axes:
        ctx.alias(x, out)


def _center_crop_pad_at_run_time(ctx: NodeContext, x: str, axis: int, wanted: int) -> str:
    """Dynamic axis ``axis`` of ``x`` to ``wanted``: SLICE of min(d, wanted) from max(d - wanted, 0) // 2, then PAD
    of max(wanted - d, 0) split as CenterCropPad splits it (the odd unit at the end)."""
    i64 = np.int64
    rank = ctx.rank(x)
    value = ctx.value(x)
    dim = dims_tensor(ctx, x, [axis])

    def const(v):
        return ctx.constant(np.asarray([v], i64))

    def op(kind, a, b, hint):
        return ctx.emit_to(kind, [a, b], i64, (1,), f"{ctx.name}.{hint}{axis}")

    excess = op(OP.OH_NN_OPS_MAXIMUM, op(OP.OH_NN_OPS_SUB, dim, const(wanted), "excess_raw"), const(0), "excess")
    begin = op(OP.OH_NN_OPS_DIV, excess, const(2), "crop_begin")
    size = op(OP.OH_NN_OPS_MINIMUM, dim, const(wanted), "kept")
    shape = list(value.shape)
    shape[axis] = -1
    cropped = ctx.emit_to(OP.OH_NN_OPS_SLICE, [x, begin, size], value.dtype, shape, f"{ctx.name}.crop{axis}",
                          {"OH_NN_SLICE_AXES": [axis]})
    missing = op(OP.OH_NN_OPS_SUB, const(wanted), size, "missing")
    before = op(OP.OH_NN_OPS_DIV, missing, const(2), "pad_begin")
    pieces = [ctx.constant(np.zeros(2 * axis, i64))] if axis else []
    pieces += [before, op(OP.OH_NN_OPS_SUB, missing, before, "pad_end")]
    if axis < rank - 1:
        pieces.append(ctx.constant(np.zeros(2 * (rank - 1 - axis), i64)))
    flat = ctx.emit_to(OP.OH_NN_OPS_CONCAT, pieces, i64, (2 * rank,), f"{ctx.name}.pads{axis}",
                       {"OH_NN_CONCAT_AXIS": 0})
    shape[axis] = wanted
    return ctx.emit_to(OP.OH_NN_OPS_PAD, [cropped, ctx.reshape(flat, [rank, 2])], value.dtype, shape,
                       f"{ctx.name}.fitted{axis}", {"OH_NN_PAD_CONSTANT_VALUE": 0.0})


def _grid_axis(n: int, align_corners: bool) -> np.ndarray:
    if align_corners:
        return -1.0 + 2.0 * np.arange(n) / (n - 1)
    return (2.0 * np.arange(n) + 1.0) / n - 1.0


@converts("AffineGrid")
def affine_grid(ctx: NodeContext) -> None:
    theta = ctx.input(0)
    dtype = _float_dtype(ctx, theta, "theta")
    theta_shape = ctx.value(theta).shape  # (a dynamic batch must be size[0] at run time)
    size = [int(v) for v in np.asarray(ctx.constant_input(1, "size")).reshape(-1)]
    align = int(ctx.attr("align_corners", 0))
    spatial = size[2:]
    k = len(spatial)
    if k not in (2, 3) or theta_shape is None or len(theta_shape) != 3 or min(size) < 1 or any(
            a != b and a >= 0 for a, b in zip(theta_shape, (size[0], k, k + 1))):
        raise ConversionIssue(INVALID_MODEL, f"size {size} and theta {list(theta_shape)} must be [N, C, H, W] with "
                                             "[N, 2, 3] or [N, C, D, H, W] with [N, 3, 4]")
    if align and 1 in spatial:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"align_corners=1 with a spatial size of 1 (size {size}) has no "
                                                     "agreed meaning (ONNX reference -1, onnxruntime 1, PyTorch 0)")
    limits.require_shape([*spatial, k + 1], np.float64, "AffineGrid's base grid")  # built below
    axes = [_grid_axis(n, bool(align)) for n in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # D, H, W order; the grid lists x (W) first
    base = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(mesh[0].size)], -1)
    base_name = ctx.constant(base.reshape(1, -1, k + 1).astype(dtype), f"{ctx.name}.base")
    product = _matmul(ctx, base_name, theta, f"{ctx.name}.grid", transpose_b=True)
    _reshape(ctx, product, [size[0], *spatial, k], output=ctx.output(0))
