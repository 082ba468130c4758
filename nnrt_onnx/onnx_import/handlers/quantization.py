"""Converters of the quantization family: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, ConvInteger,
QLinearConv, MatMulInteger and QLinearMatMul; and onnxruntime's contrib DynamicQuantizeMatMul and MatMulIntegerToFloat
(com.microsoft: the same exact int32 product, then float32 scaling and bias).

Decisions (also stated where they are made):

* QuantizeLinear -> QUANT_DTYPE_CAST with the quant params on its int8/uint8 output when the zero points are
  even (QUANT_DTYPE_CAST rounds r/s + z, ONNX rounds r/s then adds z: they differ at .5 ties for an odd z);
  otherwise (odd zero point, 16-bit, blocked or computed parameters) DIV, ROUND, ADD, CLIP, CAST to plain
  integers. DequantizeLinear of a constant is folded, of a tensor carrying the same quant params ->
  QUANT_DTYPE_CAST, of a raw integer tensor -> CAST, SUB zero point, MUL scale (exact).
* DynamicQuantizeLinear follows the ONNX reference step by step in float32 (REDUCE_MAX/MIN, MAXIMUM/MINIMUM
  with 0, SUB, DIV by 255, ROUND half to even, CLIP, CAST); an all-zero input gets scale 1 (onnxruntime).
* ConvInteger/QLinearConv convolve exactly in float64 (int8/uint8 products summed in float64 are exact far
  beyond int32): CAST, SUB zero points, CONV2D (weights offline when constant), CAST to int32 (rejected when
  the int32 accumulator could overflow: ONNX wraps, float64 would not). QLinearConv then
  requantizes like the ONNX reference: acc * (x_scale * w_scale / y_scale in float32) + y_zero_point in float64,
  CLIP, ROUND half to even, CAST.
* MatMulInteger / QLinearMatMul: an exact int32 MATMUL of the centred operands; QLinearMatMul then rounds
  acc * a_scale * b_scale / y_scale half to even, adds the zero point and saturates.
"""
from __future__ import annotations

import numpy as np

from ... import geometry
from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...geometry import NCHW_TO_NHWC, NHWC_TO_NCHW
from ...ir.graph import IntegerForm, Value
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    NEEDS_CONSTANT,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    UNSUPPORTED_OP,
    ConversionIssue,
)
from ...ir.quantized import same_quant
from ...tensor import QuantParam
from ..context import NodeContext
from . import converts
from ._common import (
    _binary,
    _cast,
    _const,
    _dynamic_quantize,
    _integer_product,
    _into_nhwc,
    _ints_attr,
    _onnx_pads,
    _out_of_nhwc,
    _ranked_shape,
    _reshape,
    _shape,
    _transpose,
    _unsupported,
    _wanted,
)

# -- QuantizeLinear / DequantizeLinear ---------------------------------------------------------------------------------

_QUANT_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8))
_RAW_INT_DTYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32))


class _QuantArgs:
    """Scale and zero point of one (de)quantization: constants as arrays, else tensor names. ``axis`` and ``block``
    are the ONNX attributes (axis 1 by default; per-tensor parameters ignore it). A zero point may have the scale's
    shape, or be a scalar where the scale has one element ([], [1] ...) and the reverse; it may be absent (0)."""

    def __init__(self, ctx: NodeContext, x: str, scale_name: str, zero_name: str | None, axis: int | None,
                 block: int, what: str):
        self.ctx = ctx
        self.rank = ctx.rank(x)
        self.x_shape = ctx.value(x).shape
        self.scale_name = scale_name
        scale_value = ctx.value(scale_name)
        self.scale = scale_value.data
        self.scale_dtype = scale_value.dtype
        scale_shape = scale_value.shape
        if scale_shape is None:
            raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of the {what} scale is unknown")
        self.zero_name = zero_name
        zero_value = ctx.value(zero_name) if zero_name else None
        self.zero = None if zero_value is None else zero_value.data
        self.zero_dtype = None if zero_value is None else zero_value.dtype
        self.block = int(block or 0)
        if self.block < 0:
            raise ConversionIssue(INVALID_MODEL, f"block_size={self.block} must be >= 0")
        elements = int(np.prod(scale_shape)) if all(d >= 0 for d in scale_shape) else -1
        if zero_value is not None and zero_value.shape is not None and tuple(zero_value.shape) != tuple(scale_shape):
            zero_elements = int(np.prod(zero_value.shape)) if all(d >= 0 for d in zero_value.shape) else -1
            if not (elements == 1 and zero_elements == 1 and not self.block):
                raise ConversionIssue(INVALID_MODEL, f"zero point shape {list(zero_value.shape)} differs from the "
                                                     f"scale's {list(scale_shape)}")
        self.per_tensor = len(scale_shape) == 0 or (elements == 1 and not self.block)
        self.axis = None
        if not self.per_tensor:
            axis = 1 if axis is None else int(axis)
            if not -self.rank <= axis < self.rank:
                raise ConversionIssue(INVALID_MODEL, f"axis={axis} is out of range for rank {self.rank}")
            self.axis = axis % self.rank
            dim = self.x_shape[self.axis]
            if self.block:
                if len(scale_shape) != self.rank:
                    raise ConversionIssue(INVALID_MODEL, f"blocked scale {list(scale_shape)} needs rank {self.rank}")
                blocks = scale_shape[self.axis]
                if dim >= 0 and blocks >= 0 and blocks != -(-dim // self.block):
                    raise ConversionIssue(INVALID_MODEL, f"{blocks} blocks of {self.block} along axis {self.axis} "
                                                         f"do not cover its {dim} elements")
            elif len(scale_shape) != 1:
                raise _unsupported(f"a {len(scale_shape)}-D scale {list(scale_shape)} needs block_size")
            elif dim >= 0 and elements >= 0 and dim != elements:
                raise ConversionIssue(INVALID_MODEL, f"{elements} scales for axis {self.axis} of size {dim}")

    @property
    def constant(self) -> bool:
        return self.scale is not None and (self.zero_name is None or self.zero is not None)

    @property
    def odd_zero_point(self) -> bool:
        return self.zero is not None and bool(np.any(np.asarray(self.zero, np.int64) % 2))

    def expand(self, array: np.ndarray) -> np.ndarray:
        """A scale/zero-point constant shaped to broadcast against x (blocks repeated along the axis)."""
        if self.per_tensor:
            return array.reshape(())
        if self.block:
            dim = self.x_shape[self.axis]
            if dim < 0:
                raise ConversionIssue(DYNAMIC_SHAPE, "blocked quantization needs a static blocked axis")
            return array.take(np.arange(dim) // self.block, axis=self.axis)  # (element i: block i // size)
        shape = [1] * self.rank
        shape[self.axis] = array.size
        return array.reshape(shape)

    def tensor(self, name: str, array: np.ndarray | None, dtype, hint: str) -> str:
        """The scale / zero point as a tensor of ``dtype`` that broadcasts against x."""
        ctx = self.ctx
        if array is not None:
            return ctx.constant(self.expand(array).astype(dtype), f"{ctx.name}.{hint}")
        if self.block:
            raise ConversionIssue(NEEDS_CONSTANT, f"a blocked {hint} must be a constant", tensor=name)
        value = ctx.value(name)
        if value.dtype != np.dtype(dtype):
            cast = ctx.new_value(dtype, value.shape, f"{name}.{np.dtype(dtype).name}")
            ctx.emit(OP.OH_NN_OPS_CAST, [name, ctx.constant(np.asarray(int(from_numpy(np.dtype(dtype))), np.int32))],
                     [cast])
            name = cast
        if not self.per_tensor:
            shape = [1] * self.rank
            shape[self.axis] = self.x_shape[self.axis]
            name = _reshape(ctx, name, shape)
        return name

    def quant_param(self, bits: int = 8) -> QuantParam:
        scales = [float(s) for s in self.scale.reshape(-1)]
        zeros = [0] * len(scales) if self.zero is None else [int(z) for z in np.asarray(self.zero).reshape(-1)]
        return QuantParam(scales, zeros, [bits] * len(scales), self.axis)


def _quant_args(ctx: NodeContext, what: str) -> _QuantArgs:
    """The parameters of this QuantizeLinear / DequantizeLinear node (inputs 1, 2; axis, block_size)."""
    return _QuantArgs(ctx, ctx.input(0), ctx.input(1), ctx.input(2) if ctx.has_input(2) else None,
                      ctx.attr("axis", 1), int(ctx.attr("block_size", 0)), what)


def _onnx_elem_dtype(code: int) -> np.dtype:
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(int(code)))
    except (KeyError, TypeError, ValueError):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"ONNX element type {code} has no NNRt equivalent") from None


def _op(ctx: NodeContext, op: OP, inputs, dtype, shape, hint: str, out: str | None = None, params=None) -> str:
    target = out or ctx.new_value(dtype, shape, f"{ctx.name}.{hint}")
    ctx.emit(op, inputs, [target], params)
    return target


def _cast_params(src: np.dtype, dst: np.dtype, axis: int | None) -> dict:
    params = {"OH_NN_QUANT_DTYPE_CAST_SRC_T": int(from_numpy(src)), "OH_NN_QUANT_DTYPE_CAST_DST_T": int(from_numpy(dst))}
    if axis is not None:
        params["OH_NN_QUANT_DTYPE_CAST_AXIS"] = axis
    return params


def _quantize(ctx: NodeContext, args: _QuantArgs, x: str, out: str, target: np.dtype, onnx_rounding: bool = True) -> None:
    """y = saturate(round_half_even(x / scale) + zero_point) into ``out`` (a tensor the caller declared).

    int8/uint8 with constant per-tensor/per-axis parameters: QUANT_DTYPE_CAST onto an output carrying them (a
    constant x is quantized here). QUANT_DTYPE_CAST rounds r/s + z as a whole (the header's formula); ONNX rounds r/s
    (half to even) before adding z: the two differ at exact .5 ties when z is odd, so such an output is recorded
    (``onnx_rounding``) and lowered to exact arithmetic by the qdq pass unless a quantized op reads it (QLinearConv
    and QLinearMatMul round acc * M + z as a whole, like the header: ``onnx_rounding=False``). Otherwise
    (16-bit outputs, blocked or computed parameters) the raw integers: DIV, ROUND, ADD zero point, CLIP, CAST."""
    if target not in _RAW_INT_DTYPES or target == np.int32:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"quantizing to {target} is not supported (int8/uint8, or "
                                                 f"int16/uint16 as plain integers)")
    x_value = ctx.value(x)
    if x_value.dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"QuantizeLinear of {x_value.dtype} is not supported")
    info = np.iinfo(target)
    zero = args.zero if args.zero is not None else np.zeros_like(args.scale if args.scale is not None else 0, target)
    if args.constant and x_value.data is not None:
        q = np.rint(x_value.data.astype(np.float64) / args.expand(args.scale.astype(np.float64))) \
            + args.expand(np.asarray(zero, np.float64))
        data = np.clip(q, info.min, info.max).astype(target)
        quant = args.quant_param() if target in _QUANT_DTYPES and not args.block else None
        ctx.graph.add_value(Value(out, target, tuple(data.shape), data, quant))
        return
    out_value = ctx.value(out)
    out_value.dtype = target
    if out_value.shape is None or len(out_value.shape) != args.rank:
        out_value.shape = x_value.shape
    if args.constant and target in _QUANT_DTYPES and not args.block:
        out_value.quant = args.quant_param()
        ctx.graph.quantization.raw.add(out)  # the ONNX graph reads it as integers
        if args.odd_zero_point and onnx_rounding:
            ctx.graph.quantization.onnx_rounding.add(out)
        ctx.emit(OP.OH_NN_OPS_QUANT_DTYPE_CAST, [x], [out], _cast_params(x_value.dtype, target, args.axis))
        return
    dtype, shape = x_value.dtype, x_value.shape
    scaled = _op(ctx, OP.OH_NN_OPS_DIV, [x, args.tensor(args.scale_name, args.scale, dtype, "scale")], dtype, shape,
                 "scaled")
    if not onnx_rounding and args.zero_name is not None:  # round(x / s + z)
        scaled = _op(ctx, OP.OH_NN_OPS_ADD, [scaled, args.tensor(args.zero_name, args.zero, dtype, "zero_point")],
                     dtype, shape, "shifted")
    rounded = _op(ctx, OP.OH_NN_OPS_ROUND, [scaled], dtype, shape, "rounded")
    if onnx_rounding and args.zero_name is not None:  # round(x / s) + z
        rounded = _op(ctx, OP.OH_NN_OPS_ADD, [rounded, args.tensor(args.zero_name, args.zero, dtype, "zero_point")],
                      dtype, shape, "shifted")
    clipped = _op(ctx, OP.OH_NN_OPS_CLIP, [rounded], dtype, shape, "clipped",
                  params={"OH_NN_CLIP_MIN": float(info.min), "OH_NN_CLIP_MAX": float(info.max)})
    ctx.emit(OP.OH_NN_OPS_CAST, [clipped, ctx.constant(np.asarray(int(from_numpy(target)), np.int32))], [out])


@converts("QuantizeLinear")
def quantize_linear(ctx: NodeContext) -> None:
    """y = saturate(round_half_even(x / scale) + zero_point): see :func:`_quantize`. ``saturate`` only concerns
    float8 outputs (rejected: NNRt has no float8); ``output_dtype`` must agree with the zero point."""
    ctx.attr("saturate")  # float8 only
    precision = int(ctx.attr("precision", 0))
    if precision:
        raise _unsupported(f"precision={precision} is not supported (the computation precision follows the scale)")
    args = _quant_args(ctx, "y")
    out_code = int(ctx.attr("output_dtype", 0))
    if args.zero_dtype is not None:
        target = args.zero_dtype
        if out_code and _onnx_elem_dtype(out_code) != target:
            raise ConversionIssue(INVALID_MODEL, f"output_dtype {out_code} disagrees with the zero point {target}")
    else:
        target = _onnx_elem_dtype(out_code) if out_code else np.dtype(np.uint8)
    _quantize(ctx, args, ctx.input(0), ctx.output(0), target)


def _dequantize(ctx: NodeContext, args: _QuantArgs, x: str, out: str, out_dtype: np.dtype) -> None:
    """``out`` = (x - zero_point) * scale.

    A constant x is folded, and the float constant keeps its integers and parameters (``Value.integer``) when NNRt
    quant params can say them (per tensor or per axis), so a quantized op can read the integers themselves. x carrying
    quant params: QUANT_DTYPE_CAST (other parameters than the tensor's: x is reinterpreted, the float formula of the
    difference). A raw integer x: CAST, SUB zero point, MUL scale (exact)."""
    x_value = ctx.value(x)
    if x_value.dtype not in _RAW_INT_DTYPES:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"DequantizeLinear of {x_value.dtype} is not supported")
    if args.constant and x_value.data is not None:
        zero = 0.0 if args.zero is None else args.expand(args.zero.astype(np.float64))
        data = ((x_value.data.astype(np.float64) - zero) * args.expand(args.scale.astype(np.float64))).astype(out_dtype)
        integer = None
        if not args.block:
            bits = 8 * x_value.dtype.itemsize
            integer = IntegerForm(np.ascontiguousarray(x_value.data), args.quant_param(bits))
        ctx.graph.add_value(Value(out, np.dtype(out_dtype), tuple(data.shape), data, integer=integer))
        return
    out_value = ctx.value(out)
    out_value.dtype = np.dtype(out_dtype)
    if out_value.shape is None or len(out_value.shape) != args.rank:
        out_value.shape = x_value.shape
    if x_value.quant is not None:
        if not (args.constant and not args.block):
            raise _unsupported(f"{x!r} is quantized; this DequantizeLinear's parameters must be constants")
        expected = args.quant_param()
        if same_quant(x_value.quant, expected, rtol=1e-7):
            ctx.emit(OP.OH_NN_OPS_QUANT_DTYPE_CAST, [x], [out], _cast_params(x_value.dtype, out_dtype, args.axis))
            return
        if x_value.quant.count != 1 or expected.count != 1:
            raise _unsupported(f"{x!r} is quantized per channel with other parameters than this DequantizeLinear's")
        # the integers q read with (s', z') instead of (s, z): (q - z') s' = r s'/s + (z - z') s', r = (q - z) s
        (s, z), (s2, z2) = (x_value.quant.scales[0], x_value.quant.zero_points[0]), (expected.scales[0],
                                                                                  expected.zero_points[0])
        real = _op(ctx, OP.OH_NN_OPS_QUANT_DTYPE_CAST, [x], out_dtype, x_value.shape, "as_quantized",
                   params=_cast_params(x_value.dtype, out_dtype, None))
        scaled = _op(ctx, OP.OH_NN_OPS_MUL, [real, ctx.constant(np.asarray(s2 / s, out_dtype))], out_dtype,
                     x_value.shape, "rescaled", out=None if z != z2 else out)
        if z != z2:
            ctx.emit(OP.OH_NN_OPS_ADD, [scaled, ctx.constant(np.asarray((z - z2) * s2, out_dtype))], [out])
        return
    shape = x_value.shape
    real = _op(ctx, OP.OH_NN_OPS_CAST, [x, ctx.constant(np.asarray(int(from_numpy(out_dtype)), np.int32))],
               out_dtype, shape, "real")
    if args.zero_name is not None and (args.zero is None or np.any(args.zero != 0)):
        real = _op(ctx, OP.OH_NN_OPS_SUB, [real, args.tensor(args.zero_name, args.zero, out_dtype, "zero_point")],
                   out_dtype, shape, "shifted")
    ctx.emit(OP.OH_NN_OPS_MUL, [real, args.tensor(args.scale_name, args.scale, out_dtype, "scale")], [out])


@converts("DequantizeLinear")
def dequantize_linear(ctx: NodeContext) -> None:
    """y = (x - zero_point) * scale: see :func:`_dequantize`; the output type is the scale's (``output_dtype``
    when given)."""
    args = _quant_args(ctx, "x")
    out_code = int(ctx.attr("output_dtype", 0))
    out_dtype = _onnx_elem_dtype(out_code) if out_code else args.scale_dtype
    try:
        from_numpy(out_dtype)
    except ValueError:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"output_dtype {np.dtype(out_dtype)} has no NNRt data type") from None
    _dequantize(ctx, args, ctx.input(0), ctx.output(0), np.dtype(out_dtype))


# -- DynamicQuantizeLinear ---------------------------------------------------------------------------------------------

@converts("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx: NodeContext) -> None:
    """uint8 quantization with scale = (max(0, max x) - min(0, min x)) / 255 (1 for an all-zero range, as
    onnxruntime; the reference gives 1/255, the function body 0),
    zero point = round(clip(-min / scale, 0, 255)), y = clip(round(x / scale) + zero point, 0, 255); float32."""
    x = ctx.input(0)
    y = ctx.output(0)
    if ctx.value(x).dtype != np.float32:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"DynamicQuantizeLinear takes float32, got {ctx.value(x).dtype}")
    _, scale, zero_point = _dynamic_quantize(ctx, x, y, output=y)
    if _wanted(ctx, 1):
        _reshape(ctx, scale, (), output=ctx.output(1))
    if _wanted(ctx, 2):
        _reshape(ctx, _cast(ctx, zero_point, np.uint8, f"{y}.zp_u8"), (), output=ctx.output(2))


# -- ConvInteger, QLinearConv: exact integer convolution in float64 ----------------------------------------------------

_INT32_LIMIT = 2 ** 31


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
    x_shape = _ranked_shape(ctx, x)  # (the batch and, with explicit pads, the spatial dims may be dynamic)
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
    if group < 1 or out_c % group or x_shape[1] not in (in_per_group * group, -1):
        raise ConversionIssue(INVALID_MODEL, f"group={group} does not fit {x_shape[1]} input / {out_c} output "
                                             f"channels with weight {list(w_shape)}")
    strides = _ints_attr(ctx, "strides", nd, 1)
    dilations = _ints_attr(ctx, "dilations", nd, 1)
    pads = _onnx_pads(ctx, nd, kernel, strides, dilations, x_shape[2:], allow_modes=False)
    spatial = [geometry.window_output_size(s, geometry.effective_extent(k, d), st, p0, p1)
               for s, k, st, d, (p0, p1) in zip(x_shape[2:], kernel, strides, dilations, pads)]
    if any(n == 0 for n in spatial):
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
        x_nhwc = _into_nhwc(ctx, xf, 1)
        kernel, strides, dilations, pads = [1] + kernel, [1] + strides, [1] + dilations, [(0, 0)] + pads
        y_nhwc_shape = (out_shape[0], 1, out_shape[2], out_c)
    else:
        x_nhwc = _transpose(ctx, xf, NCHW_TO_NHWC)
        y_nhwc_shape = geometry.permute(out_shape, NCHW_TO_NHWC)
    depthwise = group > 1 and in_per_group == 1
    prefix = "OH_NN_DEPTHWISE_CONV2D_NATIVE" if depthwise else "OH_NN_CONV2D"
    params = {f"{prefix}_STRIDES": strides, f"{prefix}_DILATION": dilations,
              f"{prefix}_PAD": geometry.axes_to_pad_list(pads)}
    if not depthwise and group != 1:
        params["OH_NN_CONV2D_GROUP"] = group
    y_nhwc = ctx.emit_to(OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE if depthwise else OP.OH_NN_OPS_CONV2D,
                   [x_nhwc, w_ohwi, b], f64, y_nhwc_shape, f"{out}.acc_nhwc", params)
    if nd == 1:
        y = ctx.new_value(f64, out_shape, f"{out}.acc")
        _out_of_nhwc(ctx, y_nhwc, 1, y)
        return y
    return _transpose(ctx, y_nhwc, NHWC_TO_NCHW)


@converts("ConvInteger")
def conv_integer(ctx: NodeContext) -> None:
    """ConvInteger: (x - x_zero_point) conv (w - w_zero_point) in float64 (exact), CAST to int32."""
    x, w = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    out_c = _shape(ctx, w, "the convolution weight")[0]
    acc = _integer_conv(ctx, x, _zero_point_data(ctx, 2, x, None), w, _zero_point_data(ctx, 3, w, out_c), None, out)
    _cast(ctx, acc, np.int32, output=out)


# -- MatMulInteger, QLinearMatMul --------------------------------------------------------------------------------------

def _zero_point(ctx: NodeContext, position: int, operand: str, per: str) -> str | None:
    """An (optional) zero point as int32, shaped to broadcast per row of A ([M, 1]) or per column of B ([N])."""
    if not ctx.has_input(position):
        return None
    zp = ctx.input(position)
    zp_value = ctx.value(zp)
    if zp_value.dtype != ctx.value(operand).dtype:
        raise ConversionIssue(INVALID_MODEL, f"zero point {zp!r} has dtype {zp_value.dtype}, its operand "
                                             f"{ctx.value(operand).dtype}")
    zp32 = _cast(ctx, zp, np.int32, f"{zp}.i32")
    shape = _ranked_shape(ctx, zp)
    if per == "row" and len(shape) == 1 and shape[0] > 1:
        zp32 = ctx.reshape(zp32, [shape[0], 1])
    return zp32


@converts("MatMulInteger")
def matmul_integer(ctx: NodeContext) -> None:
    """MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) in int32 (CAST, SUB, int32 MATMUL: exact)."""
    a, b = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    _integer_product(ctx, a, _zero_point(ctx, 2, a, "row"), b, _zero_point(ctx, 3, b, "column"), out, output=out)


# -- the QOperator format: DequantizeLinear -> the float op -> QuantizeLinear, folded by ir/passes/qdq.py ----------------

_F32 = np.dtype(np.float32)


def _real(ctx: NodeContext, q: int, scale: int, zero: int | None, axis: int | None = None, what: str = "x") -> str:
    """The real value of the quantized operand at input ``q`` (DequantizeLinear with the scale and zero point at
    inputs ``scale`` / ``zero``, per tensor, or per ``axis`` when the scale has several values): a float constant that
    keeps its integers for a constant, else a DQ the folding pass turns back into the quantized tensor."""
    x = ctx.input(q)
    if ctx.value(x).dtype not in _QUANT_DTYPES:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"{what} {x!r} has dtype {ctx.value(x).dtype} (int8/uint8)", tensor=x)
    zero_name = ctx.input(zero) if zero is not None and ctx.has_input(zero) else None
    if zero_name is not None and ctx.value(zero_name).dtype != ctx.value(x).dtype:
        raise ConversionIssue(INVALID_MODEL, f"the zero point of {what} has dtype {ctx.value(zero_name).dtype}, "
                                             f"{what} {ctx.value(x).dtype}")
    args = _QuantArgs(ctx, x, ctx.input(scale), zero_name, axis, 0, what)
    if args.scale_dtype not in (_F32, np.dtype(np.float16)):  # (float16 scales: computed in float32)
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"the scale of {what} has dtype {args.scale_dtype} (float32 or "
                                                 "float16)")
    out = ctx.graph.fresh_name(f"{x}.real")
    ctx.graph.add_value(Value(out, _F32, ctx.value(x).shape))
    _dequantize(ctx, args, x, out, _F32)
    return out


def _requantize(ctx: NodeContext, real: str, scale: int, zero: int | None, out: str, axis: int | None = None,
                onnx_rounding: bool = True) -> None:
    """``out`` = QuantizeLinear(real) with the scale / zero point at those inputs (the output's type is the zero
    point's; uint8 without one); ``onnx_rounding=False``: round(real / scale + zero point) as a whole."""
    zero_name = ctx.input(zero) if zero is not None and ctx.has_input(zero) else None
    args = _QuantArgs(ctx, real, ctx.input(scale), zero_name, axis, 0, "y")
    target = args.zero_dtype if args.zero_dtype is not None else np.dtype(np.uint8)
    if target not in _QUANT_DTYPES:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"the output zero point has dtype {target} (int8/uint8)")
    ctx.settle(out, ctx.value(real).shape, target, force=ctx.value(real).shape is not None)
    _quantize(ctx, args, real, out, target, onnx_rounding)


def _float_op(ctx: NodeContext, op_type: str, inputs, attrs: dict | None = None, shape=None,
              version: int | None = None) -> str:
    """The float ONNX ``op_type`` (its own converter, at the model's opset or ``version``) of ``inputs`` (IR tensor
    names, "" for an absent optional one): its output's name. Attributes it does not use are reported."""
    from onnx import helper

    from ...ir.rows import find_row
    from . import handler_for

    version = ctx.opset if version is None else version
    row = find_row(op_type, version)
    if row is None:
        raise ConversionIssue(UNSUPPORTED_OP, f"no conversion of the float {op_type} at opset {version}")
    real = ctx.graph.fresh_name(f"{ctx.output(0)}.real")
    ctx.graph.add_value(Value(real, _F32, None if shape is None else tuple(shape)))
    node = helper.make_node(op_type, list(inputs), [real], name=ctx.name, **(attrs or {}))
    inner = NodeContext(ctx.graph, node, row, version, ctx.options)
    handler_for(row)(inner)
    unused = sorted(set(inner.attrs) - inner.used_attrs - set(row.attrs))
    if unused:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"attribute(s) {unused} are not supported")
    return real


def _attrs(ctx: NodeContext, names) -> dict:
    """The given attributes of this node that it has (marked used: the float op reports those it cannot take)."""
    return {name: ctx.attr(name) for name in names if name in ctx.attrs}


def _scales(ctx: NodeContext, positions) -> list[np.ndarray] | None:
    values = [ctx.value(ctx.input(p)).data for p in positions]
    return None if any(v is None for v in values) else [np.asarray(v, np.float64).reshape(-1) for v in values]


def _bias_real(ctx: NodeContext, position: int, scale_positions, factor: float = 1.0, channel_axis: int = 0) -> str:
    """An INT32 bias added to the integer accumulator, as its real value: B * factor * (product of the scales),
    per channel when a scale has several values. A constant keeps its integers (scale: that product, zero point 0)."""
    b = ctx.input(position)
    value = ctx.value(b)
    if value.dtype != np.int32:
        raise ConversionIssue(INVALID_MODEL, f"the bias {b!r} must be int32, got {value.dtype}", tensor=b)
    scales = _scales(ctx, scale_positions)
    if value.data is not None and scales is not None:
        combined = np.asarray(float(factor), np.float64)
        for scale in scales:
            combined = combined * (scale if scale.size > 1 else scale.reshape(()))
        if combined.ndim and value.data.ndim:
            line = [1] * value.data.ndim
            line[channel_axis % value.data.ndim] = combined.size
            real = value.data.astype(np.float64) * combined.reshape(line)
        else:
            real = value.data.astype(np.float64) * combined
        per = combined.reshape(-1)
        quant = QuantParam([float(v) for v in per], [0] * per.size, [32] * per.size,
                           channel_axis % max(value.data.ndim, 1) if per.size > 1 else None)
        name = ctx.graph.fresh_name(f"{b}.real")
        ctx.graph.add_value(Value(name, _F32, tuple(real.shape), real.astype(np.float32),
                                  integer=IntegerForm(np.ascontiguousarray(value.data), quant)))
        return name
    real = _cast(ctx, b, np.float32, f"{b}.f32")
    for p in scale_positions:
        scale = ctx.input(p)
        count = int(np.prod(_shape(ctx, scale, "a scale")))
        scale = _reshape(ctx, scale, ()) if count == 1 else scale
        real = _binary(ctx, OP.OH_NN_OPS_MUL, real, scale, f"{b}.scaled")
    if factor != 1.0:
        real = _binary(ctx, OP.OH_NN_OPS_MUL, real, _const(ctx, factor, np.float32, "alpha"), f"{b}.alpha")
    return real


def _times(ctx: NodeContext, real: str, factor: float) -> str:
    """``real`` * factor: a dequantized constant keeps its integers (the factor goes into its scales)."""
    if factor == 1.0:
        return real
    value = ctx.value(real)
    if value.data is None:
        return _binary(ctx, OP.OH_NN_OPS_MUL, real, _const(ctx, factor, np.float32, "alpha"), f"{real}.alpha")
    integer = None
    if value.integer is not None and factor > 0:
        q = value.integer.quant
        integer = IntegerForm(value.integer.data, QuantParam([s * factor for s in q.scales], q.zero_points,
                                                              q.num_bits, q.axis))
    name = ctx.graph.fresh_name(f"{real}.alpha")
    ctx.graph.add_value(Value(name, _F32, value.shape, (value.data.astype(np.float64) * factor).astype(np.float32),
                              integer=integer))
    return name


_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


@converts("QLinearConv")
def qlinear_conv(ctx: NodeContext) -> None:
    """QLinearConv: the ONNX Conv of the dequantized x and w (per tensor, w per output channel) plus the int32 bias
    at scale x_scale * w_scale, quantized with y_scale / y_zero_point; the qdq pass folds it into one quantized
    CONV2D / DEPTHWISE_CONV2D_NATIVE (the NNRt op says it exactly but for the rounding of exact .5 ties with an odd
    output zero point, and float precision of the requantization multiplier; int32 accumulator wrap-around, which
    ONNX specifies, is not reproduced)."""
    inputs = [_real(ctx, 0, 1, 2), _real(ctx, 3, 4, 5, axis=0, what="w")]
    if ctx.has_input(8):
        inputs.append(_bias_real(ctx, 8, [1, 4]))
    real = _float_op(ctx, "Conv", inputs, _attrs(ctx, _CONV_ATTRS), ctx.value(ctx.output(0)).shape)
    _requantize(ctx, real, 6, 7, ctx.output(0), onnx_rounding=False)  # ONNX: round(acc * M + y_zero_point)


@converts("QLinearMatMul")
def qlinear_matmul(ctx: NodeContext) -> None:
    """QLinearMatMul: the ONNX MatMul of the dequantized a (per tensor or per row) and b (per tensor or per column),
    quantized with y_scale / y_zero_point; the qdq pass folds it into one quantized MATMUL."""
    a_real = _real(ctx, 0, 1, 2, axis=-2, what="a")
    b_real = _real(ctx, 3, 4, 5, axis=-1, what="b")
    real = _float_op(ctx, "MatMul", [a_real, b_real], shape=ctx.value(ctx.output(0)).shape)
    _requantize(ctx, real, 6, 7, ctx.output(0), axis=-2, onnx_rounding=False)  # ONNX: rint(acc * M + y_zp)


@converts("com.microsoft.QGemm")
def qgemm(ctx: NodeContext) -> None:
    """QGemm: Y = alpha * (A' - a_zero_point)(B' - b_zero_point) * a_scale * b_scale + C * alpha * a_scale * b_scale
    (onnxruntime's kernel adds the int32 C to the accumulator), quantized with y_scale / y_zero_point, or float
    without them. The dequantized B carries alpha in its scales; the ONNX Gemm of the real values, then the qdq pass
    folds it into one quantized FULL_CONNECTION (constant B) or MATMUL."""
    alpha = float(ctx.attr("alpha", 1.0))
    trans_b = int(ctx.attr("transB", 0))
    a_real = _real(ctx, 0, 1, 2, what="A")
    b_real = _times(ctx, _real(ctx, 3, 4, 5, axis=0 if trans_b else 1, what="B"), alpha)
    inputs = [a_real, b_real]
    if ctx.has_input(6):
        inputs.append(_bias_real(ctx, 6, [1, 4], alpha, channel_axis=-1))
    if ctx.has_input(7) != ctx.has_input(8):
        raise ConversionIssue(INVALID_MODEL, "y_scale and y_zero_point go together (both for a quantized Y, "
                                             "neither for a float one)")
    shape = ctx.value(ctx.output(0)).shape
    if ctx.has_input(7):
        real = _float_op(ctx, "Gemm", inputs, _attrs(ctx, ("transA", "transB")), shape)
        _requantize(ctx, real, 7, 8, ctx.output(0))
    else:
        real = _float_op(ctx, "Gemm", inputs, _attrs(ctx, ("transA", "transB")), shape)
        ctx.settle(ctx.output(0), ctx.value(real).shape, _F32)
        ctx.alias(real, ctx.output(0))


def _binary_qlinear(ctx: NodeContext, op_type: str) -> None:
    real = _float_op(ctx, op_type, [_real(ctx, 0, 1, 2, what="A"), _real(ctx, 3, 4, 5, what="B")])
    _requantize(ctx, real, 6, 7, ctx.output(0))


@converts("com.microsoft.QLinearAdd")
def qlinear_add(ctx: NodeContext) -> None:
    """QLinearAdd: C = quantize(dequantize(A) + dequantize(B)) (numpy broadcasting): a quantized ADD."""
    _binary_qlinear(ctx, "Add")


@converts("com.microsoft.QLinearMul")
def qlinear_mul(ctx: NodeContext) -> None:
    """QLinearMul: C = quantize(dequantize(A) * dequantize(B)) (numpy broadcasting): a quantized MUL."""
    _binary_qlinear(ctx, "Mul")


@converts("com.microsoft.QLinearConcat")
def qlinear_concat(ctx: NodeContext) -> None:
    """QLinearConcat (Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input): the dequantized inputs
    concatenated along ``axis``, quantized with Y's parameters: a quantized CONCAT (each input keeps its own)."""
    count = len(ctx.node.input) - 2
    if count < 3 or count % 3:
        raise ConversionIssue(INVALID_MODEL, f"QLinearConcat takes Y_scale, Y_zero_point and triples, got "
                                             f"{len(ctx.node.input)} inputs")
    axis = ctx.attr("axis")
    if axis is None:
        raise ConversionIssue(INVALID_MODEL, "QLinearConcat needs its axis attribute")
    reals = [_real(ctx, 2 + 3 * i, 3 + 3 * i, 4 + 3 * i, what=f"X{i}") for i in range(count // 3)]
    real = _float_op(ctx, "Concat", reals, {"axis": int(axis)})
    _requantize(ctx, real, 0, 1, ctx.output(0))


def _unary_qlinear(ctx: NodeContext, op_type: str, attrs: dict | None = None, version: int | None = None) -> None:
    real = _float_op(ctx, op_type, [_real(ctx, 0, 1, 2)], attrs, version=version)
    _requantize(ctx, real, 3, 4, ctx.output(0))


def _channels_last(ctx: NodeContext) -> bool:
    value = int(ctx.attr("channels_last", 0))
    if value not in (0, 1):
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"channels_last={value} must be 0 or 1")
    return bool(value)


def _pool_qlinear(ctx: NodeContext, op_type: str, attrs: dict) -> None:
    x = _real(ctx, 0, 1, 2)
    if not _channels_last(ctx):
        real = _float_op(ctx, op_type, [x], attrs)
    else:  # NHWC: the ONNX pool of the NCHW view, back to NHWC (the layout pass cancels the transposes it can)
        rank = ctx.rank(x)
        to_first = (0, rank - 1, *range(1, rank - 1))
        real = _float_op(ctx, op_type, [_transpose(ctx, x, to_first)], attrs)
        real = _transpose(ctx, real, (0, *range(2, rank), 1))
    _requantize(ctx, real, 3, 4, ctx.output(0))


@converts("com.microsoft.QLinearGlobalAveragePool")
def qlinear_global_average_pool(ctx: NodeContext) -> None:
    """QLinearGlobalAveragePool (channels_last 0: NCHW, 1: NHWC): the average over the spatial dims of the dequantized
    x, quantized with y's parameters: a quantized AVG_POOL."""
    _pool_qlinear(ctx, "GlobalAveragePool", {})


@converts("com.microsoft.QLinearAveragePool")
def qlinear_average_pool(ctx: NodeContext) -> None:
    """QLinearAveragePool: the ONNX AveragePool (auto_pad, ceil_mode, count_include_pad, kernel_shape, pads,
    strides) of the dequantized x (NCHW, or NHWC with channels_last=1), quantized: a quantized AVG_POOL."""
    _pool_qlinear(ctx, "AveragePool", _attrs(ctx, ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape",
                                                   "pads", "strides")))


@converts("com.microsoft.QLinearSigmoid")
def qlinear_sigmoid(ctx: NodeContext) -> None:
    """QLinearSigmoid: quantize(sigmoid(dequantize(X))): a quantized SIGMOID."""
    _unary_qlinear(ctx, "Sigmoid")


@converts("com.microsoft.QLinearLeakyRelu")
def qlinear_leaky_relu(ctx: NodeContext) -> None:
    """QLinearLeakyRelu: quantize(leaky_relu(dequantize(X), alpha)). NNRt's LEAKY_RELU has no quantized form (its
    builder never marks it quantized), so it stays a float op between a DQ and a Q (a float fallback)."""
    _unary_qlinear(ctx, "LeakyRelu", {"alpha": float(ctx.attr("alpha", 0.01))})


@converts("com.microsoft.QLinearSoftmax")
def qlinear_softmax(ctx: NodeContext) -> None:
    """QLinearSoftmax: quantize(softmax(dequantize(X))) along ``axis`` with the ONNX Softmax of opset ``opset`` (below
    13 the input is coerced to 2-D at the axis): a quantized SOFTMAX."""
    opset = ctx.attr("opset")
    if opset is None:
        raise ConversionIssue(INVALID_MODEL, "QLinearSoftmax needs its opset attribute")
    _unary_qlinear(ctx, "Softmax", {"axis": int(ctx.attr("axis", -1 if int(opset) >= 13 else 1))},
                   version=int(opset))


@converts("com.microsoft.QLinearWhere")
def qlinear_where(ctx: NodeContext) -> None:
    """QLinearWhere (condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale, z_zero_point): the
    dequantized X or Y picked by the condition, quantized with z's parameters. NNRt's WHERE has no quantized form,
    so it stays a float op between DQs and a Q (a float fallback)."""
    real = _float_op(ctx, "Where", [ctx.input(0), _real(ctx, 1, 2, 3, what="X"), _real(ctx, 4, 5, 6, what="Y")])
    _requantize(ctx, real, 7, 8, ctx.output(0))


# -- onnxruntime's contrib DynamicQuantizeMatMul, MatMulIntegerToFloat (com.microsoft) ---------------------------------

def _count(ctx: NodeContext, name: str, what: str) -> int:
    return int(np.prod(_shape(ctx, name, what)))


def _per_column(ctx: NodeContext, position: int, columns: int, what: str, dtype=None) -> str | None:
    """A B-side scale / zero point: one value (per tensor) or ``columns`` values (per column of B), or None."""
    if not ctx.has_input(position):
        return None
    name = ctx.input(position)
    shape = _shape(ctx, name, what)
    if len(shape) > 1 or _count(ctx, name, what) not in (1, columns):
        raise ConversionIssue(INVALID_MODEL, f"{what} {name!r} of shape {list(shape)} is neither one value nor "
                                             f"{columns} (one per column of B)")
    if dtype is not None and ctx.value(name).dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"{what} {name!r} has dtype {ctx.value(name).dtype}, expected {dtype}")
    return name


def _per_tensor(ctx: NodeContext, position: int, what: str) -> str | None:
    """An A-side scale / zero point: one value (onnxruntime's CPU kernel, like this conversion, takes no other)."""
    if not ctx.has_input(position):
        return None
    name = ctx.input(position)
    if _count(ctx, name, what) != 1:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"{what} {name!r} of shape {list(_shape(ctx, name, what))} is not "
                                                     "supported: A is quantized per tensor (one value)")
    return name


def _to_float(ctx: NodeContext, acc: str, scale: str, bias_position: int, columns: int, dtype, out: str) -> None:
    """Y = float(acc) * scale (+ bias): CAST, MUL, ADD, as onnxruntime's output processor (scale per column)."""
    real = _binary(ctx, OP.OH_NN_OPS_MUL, _cast(ctx, acc, dtype, f"{out}.acc_float"), scale, f"{out}.scaled",
                   output=None if ctx.has_input(bias_position) else out)
    if ctx.has_input(bias_position):
        bias = ctx.input(bias_position)
        if _shape(ctx, bias, "bias") != (columns,) or ctx.value(bias).dtype != dtype:
            raise ConversionIssue(INVALID_MODEL, f"bias {bias!r} must be {np.dtype(dtype).name} of shape ({columns},)")
        _binary(ctx, OP.OH_NN_OPS_ADD, real, bias, f"{out}.biased", output=out)


def _b_columns(ctx: NodeContext, b: str) -> int:
    shape = _shape(ctx, b, "B")
    if len(shape) < 2:
        raise ConversionIssue(INVALID_MODEL, f"B must have rank >= 2, got {list(shape)}")
    return shape[-1]


def _b_zero_point(ctx: NodeContext, position: int, b: str, columns: int) -> str | None:
    if _per_column(ctx, position, columns, "b_zero_point", ctx.value(b).dtype) is None:
        return None
    zp = _cast(ctx, ctx.input(position), np.int32, f"{ctx.input(position)}.i32")
    return zp if _count(ctx, zp, "b_zero_point") == columns else _reshape(ctx, zp, ())


@converts("com.microsoft.DynamicQuantizeMatMul")
def dynamic_quantize_matmul(ctx: NodeContext) -> None:
    """Y = (quantize(A) - a_zero_point) @ (B - b_zero_point) * (a_scale * b_scale) + bias: A (float32) quantized to
    uint8 as DynamicQuantizeLinear, the exact int32 product (CAST, SUB, MATMUL), then CAST, MUL (per-column scale),
    ADD bias."""
    a, b = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    if ctx.value(a).dtype != np.float32:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"A has dtype {ctx.value(a).dtype} (float32 only)", tensor=a)
    columns = _b_columns(ctx, b)
    b_scale = _per_column(ctx, 2, columns, "b_scale", np.float32)
    b_zp = _b_zero_point(ctx, 3, b, columns)
    a_q, a_scale, a_zp = _dynamic_quantize(ctx, a, f"{out}.a")
    a_zp32 = _cast(ctx, _reshape(ctx, a_zp, ()), np.int32, f"{out}.a_zp_i32")
    acc = _integer_product(ctx, a_q, a_zp32, b, b_zp, f"{out}.acc")
    scale = _binary(ctx, OP.OH_NN_OPS_MUL, _reshape(ctx, a_scale, ()),
                    b_scale if _count(ctx, b_scale, "b_scale") == columns else _reshape(ctx, b_scale, ()),
                    f"{out}.scale")
    _to_float(ctx, acc, scale, 4, columns, np.float32, out)


@converts("com.microsoft.MatMulIntegerToFloat")
def matmul_integer_to_float(ctx: NodeContext) -> None:
    """Y = (A - a_zero_point) @ (B - b_zero_point) * (a_scale * b_scale) + bias: the exact int32 product (CAST, SUB,
    MATMUL), then CAST, MUL (b_scale per tensor or per column), ADD bias. A's scale and zero point are per tensor."""
    a, b = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    columns = _b_columns(ctx, b)
    a_scale = _per_tensor(ctx, 2, "a_scale")
    dtype = ctx.value(a_scale).dtype
    if dtype not in (np.float32, np.float16):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"a_scale has dtype {dtype} (float32 or float16)", tensor=a_scale)
    b_scale = _per_column(ctx, 3, columns, "b_scale", dtype)
    a_zp = _per_tensor(ctx, 4, "a_zero_point")
    if a_zp is not None:
        if ctx.value(a_zp).dtype != ctx.value(a).dtype:
            raise ConversionIssue(INVALID_MODEL, f"a_zero_point has dtype {ctx.value(a_zp).dtype}, A "
                                                 f"{ctx.value(a).dtype}")
        a_zp = _cast(ctx, _reshape(ctx, a_zp, ()), np.int32, f"{a_zp}.i32")
    acc = _integer_product(ctx, a, a_zp, b, _b_zero_point(ctx, 5, b, columns), f"{out}.acc")
    scale = _binary(ctx, OP.OH_NN_OPS_MUL, _reshape(ctx, a_scale, ()),
                    b_scale if _count(ctx, b_scale, "b_scale") == columns else _reshape(ctx, b_scale, ()),
                    f"{out}.scale")
    _to_float(ctx, acc, scale, 6, columns, dtype, out)
