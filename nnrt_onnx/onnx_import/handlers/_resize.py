"""Resize along one axis, its formulas written once (``_arith``): the source coordinate of each output position by
the coordinate_transformation_mode, the nearest source, the two linear taps and their weights. At conversion they
build the constant [out, in] matrix of a static axis (``spatial._resize_matrix``); over an axis whose input or
output length is known at run time only (:class:`RunTimeAxis`) the same formulas are emitted as operations:
the positions 0..out-1 (``_dims.iota``), their coordinates, then one GATHER of the nearest sources, or two GATHERs
weighted and added for linear.

Coordinates are float32 as onnxruntime computes them (float64 for a nearest resize to given sizes: rule
resize-nearest-sizes); linear weights are float64 at conversion (the matrix, cast to the tensor's dtype), in the
tensor's float dtype at run time (float32 for float16: rounded once more).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...ir.issues import UNSUPPORTED_ATTRIBUTE, ConversionIssue
from ..context import NodeContext
from ._arith import GraphArith
from ._common import _binary, _cast, _reshape
from ._dims import dims_tensor, iota

LENGTH_MODES = ("align_corners", "pytorch_half_pixel", "tf_crop_and_resize", "half_pixel_symmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
# A coordinate this close to a half is the half (a tie), as onnxruntime's nearest resize takes it: the float32
# formulas land a few ulps either side of ties that are exact in real arithmetic (2 x 0.75 -> 1, half_pixel_symmetric:
# 0.49999997 for 0.5). docs/deviations.md, "Resize nearest near a tie".
TIE_TOLERANCE = 1e-6


def source_coordinates(k, y, in_size, length, scale, ctm: str, roi=None):
    """The input coordinate of each output position ``y`` along one axis. ``in_size``, ``length`` (the formulas'
    ``length_resized``: the integer output length, as onnxruntime; rule resize-length-resized) and ``scale`` are
    values of ``y``'s dtype, evaluated by ``k`` in that dtype in the order written."""
    if ctm == "align_corners":
        return k.where(k.equal(length, 1), 0.0, y * (in_size - 1) / (length - 1))
    if ctm == "asymmetric":
        return y / scale
    if ctm == "pytorch_half_pixel":
        return k.where(k.greater(length, 1), (y + 0.5) / scale - 0.5, 0.0)
    if ctm == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        # onnxruntime's: the offset in float32, the rest in double (its literals 0.5 are doubles), then float32
        adjustment = length / (scale * in_size)
        offset = in_size / 2 * (1 - adjustment)
        wide = np.float64
        return k.cast(k.cast(offset, wide) + (k.cast(y, wide) + 0.5) / k.cast(scale, wide) - 0.5, y.dtype)
    if ctm == "tf_crop_and_resize":
        if not k.at_conversion:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, "coordinate_transformation_mode=tf_crop_and_resize needs "
                                                         "the resized axis static")
        work = y.dtype.type
        start, end = work(roi[0]), work(roi[1])
        if length > 1:
            return start * (in_size - 1) + y * (end - start) * (in_size - 1) / (length - 1)
        # onnxruntime's: the roi's sum in float32, the rest in double (its literal 0.5 is a double)
        return np.full(y.shape, work(0.5 * float(start + end) * (float(in_size) - 1)))
    raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"coordinate_transformation_mode={ctm!r} is not supported")


def nearest_source(k, x, nearest_mode: str, in_size, *, quotient: bool = False):
    """The input position a nearest resize reads at coordinate ``x``: rounded as ``nearest_mode`` says (an exact
    integer stays; a coordinate within TIE_TOLERANCE of a half is the half), clamped to [0, in_size - 1]; a value of
    ``x``'s float dtype. ``quotient``: ``x`` is a float64 quotient of integers (nearest to given sizes), whose exact
    value may be an integer that floor and ceil must keep: within TIE_TOLERANCE of an integer, it is that integer
    (float32 coordinates of a float32 scale are floored and ceiled as they are, as onnxruntime does)."""
    base = k.floor(x)
    fraction = x - base  # (exact)
    if nearest_mode == "round_prefer_floor":
        up = k.greater(fraction, 0.5 + TIE_TOLERANCE)
    elif nearest_mode == "round_prefer_ceil":
        up = k.greater_equal(fraction, 0.5 - TIE_TOLERANCE)
    elif nearest_mode == "ceil":
        up = k.greater(fraction, TIE_TOLERANCE if quotient else 0.0)
    elif nearest_mode == "floor":
        up = k.greater_equal(fraction, 1.0 - TIE_TOLERANCE) if quotient else None
    else:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"nearest_mode={nearest_mode!r} is not supported")
    source = base if up is None else k.where(up, base + 1, base)
    return k.minimum(k.maximum(source, 0.0), in_size - 1)


def linear_taps(k, x, in_size):
    """(first, second, first's weight, second's weight) of a linear resize at coordinate ``x``, clamped into the
    input first (as onnxruntime: a border output is that border's value), positions as floats of ``x``'s dtype."""
    last = in_size - 1
    clamped = k.minimum(k.maximum(x, 0.0), last)
    first = k.floor(clamped)
    second_weight = clamped - first
    return first, k.minimum(first + 1, last), 1 - second_weight, second_weight


# -- an axis resized at run time ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunTimeAxis:
    """A resized axis whose input or output length is known at run time only. Its output length: ``out_length``
    when static, else ``floor(in x scale)`` of the constant ``scale`` or element ``sizes_index`` of the run-time
    ``sizes``; its scale: ``scale``, else output / input length at run time (float64 for nearest, float32 for
    linear: as the constant path)."""

    mode: str  # nearest or linear
    ctm: str
    nearest_mode: str
    out_length: int  # -1 when computed at run time
    scale: float | None = None
    sizes: str | None = None
    sizes_index: int = 0


def exact_output_length(ctx: NodeContext, in_length: str, scale: float, hint: str) -> str:
    """floor(in x scale) of the exact product (rule resize-output-size) at run time: the float32 scale is a
    fraction p / 2^q, so (in * p) DIV 2^q in int64 (both non-negative: DIV truncates, which floors)."""
    fraction = Fraction(float(np.float32(scale)))
    if fraction.numerator > 2 ** 31:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"scale {scale} is too large for an axis resized at run time")
    i64 = np.int64
    product = _binary(ctx, OP.OH_NN_OPS_MUL, in_length, ctx.constant(np.asarray([fraction.numerator], i64)),
                      f"{hint}.scaled")
    if fraction.denominator == 1:
        return product
    return _binary(ctx, OP.OH_NN_OPS_DIV, product, ctx.constant(np.asarray([fraction.denominator], i64)),
                   f"{hint}.length")


def emit_run_time_axis(ctx: NodeContext, x: str, axis: int, plan: RunTimeAxis, target: str) -> None:
    """``x`` resized along ``axis`` into ``target`` by ``plan``, the positions and coordinates computed at run time."""
    hint = f"{target}.axis{axis}"
    value = ctx.value(x)
    rank = len(value.shape)
    in_length = dims_tensor(ctx, x, [axis])
    if plan.out_length >= 0:
        out_length = ctx.constant(np.asarray([plan.out_length], np.int64), f"{hint}.out_length")
    elif plan.sizes is not None:
        entry = ctx.emit_to(OP.OH_NN_OPS_GATHER, [plan.sizes, ctx.constant(np.asarray([plan.sizes_index], np.int64)),
                                                  ctx.constant(np.asarray([0], np.int64))],
                            ctx.value(plan.sizes).dtype, (1,), f"{hint}.size")
        out_length = _cast(ctx, entry, np.int64, f"{hint}.out_length")
    else:
        out_length = exact_output_length(ctx, in_length, plan.scale, hint)
    # coordinates in float32 (float64 for nearest to given sizes: x / (out / in), rule resize-nearest-sizes)
    work = np.float64 if plan.mode == "nearest" and plan.scale is None else np.float32
    k = GraphArith(ctx, hint)
    y = k.cast(k.tensor(iota(ctx, out_length, np.int64, f"{hint}.positions")), work)
    in_size = k.cast(k.tensor(in_length), work)
    length = k.cast(k.tensor(out_length), work)
    scale = length / in_size if plan.scale is None else np.asarray(plan.scale, work)
    x_coordinate = source_coordinates(k, y, in_size, length, scale, plan.ctm)
    shape = list(value.shape)
    shape[axis] = plan.out_length
    axis_constant = ctx.constant(np.asarray([axis], np.int64), f"{hint}.axis")

    def gather(position, output=None):
        index = k.cast(position, np.int64).name
        return ctx.emit_to(OP.OH_NN_OPS_GATHER, [x, index, axis_constant], value.dtype, shape, f"{hint}.taps",
                           output=output)

    if plan.mode == "nearest":
        gather(nearest_source(k, x_coordinate, plan.nearest_mode, in_size, quotient=work is np.float64),
               output=target)
        return
    weight_dtype = np.float64 if value.dtype == np.float64 else np.float32
    if weight_dtype != work:
        x_coordinate, in_size = k.cast(x_coordinate, weight_dtype), k.cast(in_size, weight_dtype)
    first, second, first_weight, second_weight = linear_taps(k, x_coordinate, in_size)
    along = [1] * rank
    along[axis] = -1

    def weighted(position, weight):
        w = _reshape(ctx, k.cast(weight, value.dtype).name, along)
        return _binary(ctx, OP.OH_NN_OPS_MUL, gather(position), w, f"{hint}.weighted")

    _binary(ctx, OP.OH_NN_OPS_ADD, weighted(first, first_weight), weighted(second, second_weight), f"{hint}.sum",
            output=target)
