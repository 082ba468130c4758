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
from ...ir.graph import Value
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    NEEDS_CONSTANT,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
)
from ...tensor import QuantParam
from ..context import NodeContext
from . import converts
from ._common import (
    _binary,
    _cast,
    _clip,
    _const,
    _dynamic_quantize,
    _integer_product,
    _ints_attr,
    _onnx_pads,
    _ranked_shape,
    _reshape,
    _shape,
    _transpose,
    _unary,
    _unsupported,
    _wanted,
)

# -- QuantizeLinear / DequantizeLinear ---------------------------------------------------------------------------------

_QUANT_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8))
_RAW_INT_DTYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32))


class _QuantArgs:
    """Scale and zero point of a (De)QuantizeLinear node: constants as arrays, else tensor names."""

    def __init__(self, ctx: NodeContext, what: str):
        self.ctx = ctx
        x = ctx.input(0)
        self.rank = ctx.rank(x)
        self.x_shape = ctx.value(x).shape
        self.scale_name = ctx.input(1)
        scale_value = ctx.value(self.scale_name)
        self.scale = scale_value.data
        self.scale_dtype = scale_value.dtype
        scale_shape = scale_value.shape
        if scale_shape is None:
            raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of the {what} scale is unknown")
        self.zero_name = ctx.input(2) if ctx.has_input(2) else None
        zero_value = ctx.value(self.zero_name) if self.zero_name else None
        self.zero = None if zero_value is None else zero_value.data
        self.zero_dtype = None if zero_value is None else zero_value.dtype
        self.block = int(ctx.attr("block_size", 0))
        axis = int(ctx.attr("axis", 1))
        if zero_value is not None and zero_value.shape is not None and tuple(zero_value.shape) != tuple(scale_shape):
            raise ConversionIssue(INVALID_MODEL, f"zero point shape {list(zero_value.shape)} differs from the "
                                                 f"scale's {list(scale_shape)}")
        elements = int(np.prod(scale_shape)) if all(d >= 0 for d in scale_shape) else -1
        self.per_tensor = len(scale_shape) == 0 or (elements == 1 and not self.block)
        self.axis = None
        if not self.per_tensor:
            if not -self.rank <= axis < self.rank:
                raise ConversionIssue(INVALID_MODEL, f"axis={axis} is out of range for rank {self.rank}")
            self.axis = axis % self.rank
            dim = self.x_shape[self.axis]
            if self.block:
                if len(scale_shape) != self.rank:
                    raise ConversionIssue(INVALID_MODEL, f"blocked scale {list(scale_shape)} needs rank {self.rank}")
            elif len(scale_shape) != 1:
                raise _unsupported(f"a {len(scale_shape)}-D scale {list(scale_shape)} needs block_size")
            elif dim >= 0 and elements >= 0 and dim != elements:
                raise ConversionIssue(INVALID_MODEL, f"{elements} scales for axis {self.axis} of size {dim}")

    @property
    def constant(self) -> bool:
        return self.scale is not None and (self.zero_name is None or self.zero is not None)

    def expand(self, array: np.ndarray) -> np.ndarray:
        """A scale/zero-point constant shaped to broadcast against x (blocks repeated along the axis)."""
        if self.per_tensor:
            return array.reshape(())
        if self.block:
            dim = self.x_shape[self.axis]
            if dim < 0:
                raise ConversionIssue(DYNAMIC_SHAPE, "blocked quantization needs a static blocked axis")
            return np.repeat(array, self.block, axis=self.axis).take(np.arange(dim), axis=self.axis)
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

    def quant_param(self) -> QuantParam:
        scales = [float(s) for s in self.scale.reshape(-1)]
        zeros = [0] * len(scales) if self.zero is None else [int(z) for z in self.zero.reshape(-1)]
        return QuantParam(scales, zeros, [8] * len(scales), self.axis)


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


@converts("QuantizeLinear")
def quantize_linear(ctx: NodeContext) -> None:
    """y = saturate(round_half_even(x / scale) + zero_point).

    int8/uint8 with constant per-tensor/per-axis parameters: QUANT_DTYPE_CAST onto an output carrying them (a
    constant x is quantized here). Otherwise (16-bit outputs, blocked or computed parameters) the raw integers:
    DIV, ROUND, ADD zero point, CLIP, CAST."""
    ctx.attr("saturate")  # only affects float8 outputs, which are rejected
    precision = int(ctx.attr("precision", 0))
    if precision:
        raise _unsupported(f"precision={precision} is not supported (the computation precision follows the scale)")
    args = _QuantArgs(ctx, "y")
    out_code = int(ctx.attr("output_dtype", 0))
    if args.zero_dtype is not None:
        target = args.zero_dtype
        if out_code and _onnx_elem_dtype(out_code) != target:
            raise ConversionIssue(INVALID_MODEL, f"output_dtype {out_code} disagrees with the zero point {target}")
    else:
        target = _onnx_elem_dtype(out_code) if out_code else np.dtype(np.uint8)
    if target not in _RAW_INT_DTYPES or target == np.int32:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"quantizing to {target} is not supported (int8/uint8, or "
                                                 f"int16/uint16 as plain integers)")
    x = ctx.input(0)
    x_value = ctx.value(x)
    if x_value.dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"QuantizeLinear of {x_value.dtype} is not supported")
    out = ctx.output(0)
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
    # QUANT_DTYPE_CAST rounds r/s + z as a whole; ONNX rounds r/s (half to even) before adding z. The two agree
    # for every input only when z is even (adding an even integer keeps the parity of the tie-break).
    even_zero = args.zero is None or not np.any(np.asarray(args.zero, np.int64) % 2)
    if args.constant and target in _QUANT_DTYPES and not args.block and even_zero:
        out_value.quant = args.quant_param()
        params = {"OH_NN_QUANT_DTYPE_CAST_SRC_T": int(from_numpy(x_value.dtype)),
                  "OH_NN_QUANT_DTYPE_CAST_DST_T": int(from_numpy(target))}
        if args.axis is not None:
            params["OH_NN_QUANT_DTYPE_CAST_AXIS"] = args.axis
        ctx.emit(OP.OH_NN_OPS_QUANT_DTYPE_CAST, [x], [out], params)
        return
    dtype, shape = x_value.dtype, x_value.shape
    scaled = _op(ctx, OP.OH_NN_OPS_DIV, [x, args.tensor(args.scale_name, args.scale, dtype, "scale")], dtype, shape,
                 "scaled")
    rounded = _op(ctx, OP.OH_NN_OPS_ROUND, [scaled], dtype, shape, "rounded")
    if args.zero_name is not None:
        rounded = _op(ctx, OP.OH_NN_OPS_ADD, [rounded, args.tensor(args.zero_name, args.zero, dtype, "zero_point")],
                      dtype, shape, "shifted")
    clipped = _op(ctx, OP.OH_NN_OPS_CLIP, [rounded], dtype, shape, "clipped",
                  params={"OH_NN_CLIP_MIN": float(info.min), "OH_NN_CLIP_MAX": float(info.max)})
    ctx.emit(OP.OH_NN_OPS_CAST, [clipped, ctx.constant(np.asarray(int(from_numpy(target)), np.int32))], [out])


@converts("DequantizeLinear")
def dequantize_linear(ctx: NodeContext) -> None:
    """y = (x - zero_point) * scale: folded for constants; QUANT_DTYPE_CAST when x carries these quant params;
    otherwise CAST, SUB zero point, MUL scale on the raw integers (exact)."""
    args = _QuantArgs(ctx, "x")
    x = ctx.input(0)
    x_value = ctx.value(x)
    if x_value.dtype not in _RAW_INT_DTYPES:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"DequantizeLinear of {x_value.dtype} is not supported")
    out_code = int(ctx.attr("output_dtype", 0))
    out_dtype = _onnx_elem_dtype(out_code) if out_code else args.scale_dtype
    out = ctx.output(0)
    if args.constant and x_value.data is not None:
        zero = 0.0 if args.zero is None else args.expand(args.zero.astype(np.float64))
        data = ((x_value.data.astype(np.float64) - zero) * args.expand(args.scale.astype(np.float64))).astype(out_dtype)
        ctx.graph.add_value(Value(out, out_dtype, tuple(data.shape), data))
        return
    out_value = ctx.value(out)
    out_value.dtype = out_dtype
    if out_value.shape is None or len(out_value.shape) != args.rank:
        out_value.shape = x_value.shape
    if x_value.quant is not None:
        same = False
        if args.constant and not args.block:
            expected = args.quant_param()
            same = (np.allclose(x_value.quant.scales, expected.scales, rtol=1e-7, atol=0)
                    and list(x_value.quant.zero_points) == expected.zero_points
                    and (args.axis is None or x_value.quant.axis in (None, args.axis)))
        if not same:
            raise _unsupported(f"{x!r} is quantized with other parameters than this DequantizeLinear's")
        params = {"OH_NN_QUANT_DTYPE_CAST_SRC_T": int(from_numpy(x_value.dtype)),
                  "OH_NN_QUANT_DTYPE_CAST_DST_T": int(from_numpy(out_dtype))}
        if args.axis is not None:
            params["OH_NN_QUANT_DTYPE_CAST_AXIS"] = args.axis
        ctx.emit(OP.OH_NN_OPS_QUANT_DTYPE_CAST, [x], [out], params)
        return
    shape = x_value.shape
    real = _op(ctx, OP.OH_NN_OPS_CAST, [x, ctx.constant(np.asarray(int(from_numpy(out_dtype)), np.int32))],
               out_dtype, shape, "real")
    if args.zero_name is not None and (args.zero is None or np.any(args.zero != 0)):
        real = _op(ctx, OP.OH_NN_OPS_SUB, [real, args.tensor(args.zero_name, args.zero, out_dtype, "zero_point")],
                   out_dtype, shape, "shifted")
    ctx.emit(OP.OH_NN_OPS_MUL, [real, args.tensor(args.scale_name, args.scale, out_dtype, "scale")], [out])


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
    _shape(ctx, x, "the DynamicQuantizeLinear input")
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
    strides = _ints_attr(ctx, "strides", nd, 1)
    dilations = _ints_attr(ctx, "dilations", nd, 1)
    pads = _onnx_pads(ctx, nd, kernel, strides, dilations, x_shape[2:], allow_modes=False)
    spatial = [geometry.window_output_size(s, geometry.effective_extent(k, d), st, p0, p1)
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


@converts("QLinearMatMul")
def qlinear_matmul(ctx: NodeContext) -> None:
    """QLinearMatMul: exact int32 product, then round(acc * a_scale * b_scale / y_scale) + y_zero_point,
    saturated to the output type (CAST, ROUND half to even, CLIP)."""
    a, b = ctx.input(0), ctx.input(3)
    out = ctx.output(0)
    out_dtype = ctx.value(ctx.input(7)).dtype if ctx.has_input(7) else ctx.value(a).dtype
    acc = _integer_product(ctx, a, _zero_point(ctx, 2, a, "row"), b, _zero_point(ctx, 5, b, "column"),
                           f"{out}.acc")
    a_scale, b_scale, y_scale = ctx.input(1), ctx.input(4), ctx.input(6)
    scale_dtype = ctx.value(a_scale).dtype
    if scale_dtype.kind != "f":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"scale dtype {scale_dtype} is not supported")
    scales = [ctx.value(s).data for s in (a_scale, b_scale, y_scale)]
    a_rows = _ranked_shape(ctx, a_scale)
    if all(s is not None for s in scales):
        sa = scales[0].reshape(-1, 1) if scales[0].size > 1 else scales[0].reshape(())
        combined = (sa * scales[1].reshape(-1) / scales[2].reshape(-1)) if scales[1].size > 1 else \
            (sa * scales[1].reshape(()) / scales[2].reshape(()))
        factor = ctx.constant(np.asarray(combined, np.float64).astype(np.float32), f"{ctx.name}.scale")
    else:
        sa = ctx.reshape(a_scale, [a_rows[0], 1]) if len(a_rows) == 1 and a_rows[0] > 1 else a_scale
        ab = _binary(ctx, OP.OH_NN_OPS_MUL, sa, b_scale, f"{ctx.name}.ab_scale")
        factor = _cast(ctx, _binary(ctx, OP.OH_NN_OPS_DIV, ab, y_scale, f"{ctx.name}.scale"), np.float32)
    real = _binary(ctx, OP.OH_NN_OPS_MUL, _cast(ctx, acc, np.float32), factor, f"{out}.real")
    rounded = _unary(ctx, OP.OH_NN_OPS_ROUND, real, f"{out}.rounded")
    if ctx.has_input(7):
        rounded = _binary(ctx, OP.OH_NN_OPS_ADD, rounded, _cast(ctx, ctx.input(7), np.float32), f"{out}.shifted")
    info = np.iinfo(out_dtype)
    clipped = ctx.emit_to(OP.OH_NN_OPS_CLIP, [rounded], np.float32, _ranked_shape(ctx, rounded), f"{out}.clipped",
                    {"OH_NN_CLIP_MIN": float(info.min), "OH_NN_CLIP_MAX": float(info.max)})
    code = ctx.constant(np.asarray(int(from_numpy(out_dtype)), np.int32), f"{out}.to")
    ctx.settle(out, _ranked_shape(ctx, clipped), out_dtype)
    ctx.emit(OP.OH_NN_OPS_CAST, [clipped, code], [out])


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
