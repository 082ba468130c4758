"""Quantization family: QUANT_DTYPE_CAST (dequantize, quantize, requantize, float -> float), run end to end through
``run_op``.

Oracles: onnxruntime's DequantizeLinear / QuantizeLinear on single-node ONNX models, and the header's formula written
out by hand (ties, MindIR type codes).

The last section: the quantized operands of the other ops through the runtime, with exact expected integers and
rounding ties. The executor dequantizes quantized inputs, runs the float kernel and quantizes the outputs with the header's formula
``q = clamp(round(r / s + z), qmin, qmax)`` (neural_network_runtime_type.h, OH_NN_QuantParam), rounding half to even
(docs/deviations.md, "Quantized operands"). Every scale here is a power of two and every product and sum stays far
below 2**24, so the float kernels compute exactly and the expected output is exact integer arithmetic written here:
int64 accumulation of ``(q - z)`` products (``integer_oracle.conv_accumulate`` / ``matmul_accumulate``, written
from the ONNX spec), then ``r / s + z`` as an exact fraction rounded half to even by integer division
(:func:`round_half_even`). Nothing here calls the library's ``quantize``/``dequantize``, and the comparison is
exact equality.

The data is chosen so that many outputs land exactly on .5 after scaling, with odd and even zero points (the header
rounds ``r / s + z``, so a tie rounds towards the even integer *after* adding the zero point: 2.5 + 3 -> 6, where
ONNX's QuantizeLinear, rounding ``r / s`` first, gives 5). Each test checks that its data really has ties rounding
both ways, so a rounding that is half-up, half-away, truncating or flooring fails it.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from integer_oracle import conv_accumulate, matmul_accumulate
from kernels.kernel_support import INVALID, OH_CODE, UNSUPPORTED, check, ort1, raises, rand_any, rng_for, run

from nnrt_onnx.enums import OH_NN_DataType
from nnrt_onnx.enums import OH_NN_TensorType as T
from nnrt_onnx.tensor import QuantParam

# ---------------------------------------------------------------------------------------------- QUANT_DTYPE_CAST

QDC = "OH_NN_QUANT_DTYPE_CAST"


def _qdc(x, src, dst, out_dtype, axis=None, input_quant=None, output_quant=None, float16=False):
    params = {f"{QDC}_SRC_T": int(src), f"{QDC}_DST_T": int(dst)}
    if axis is not None:
        params[f"{QDC}_AXIS"] = axis
    return run("QUANT_DTYPE_CAST", [x], params, input_quant=input_quant or {}, output_quant=output_quant or {},
               output_dtypes=[out_dtype], output_shapes=[x.shape], float16=float16)[0]


DT = OH_NN_DataType
DEQUANT_CASES = [
    ("quant_dtype_cast-i8-to-f32-tensor", "int8", [0.05], [3], None),
    ("quant_dtype_cast-u8-to-f32-tensor", "uint8", [0.1], [128], None),
    ("quant_dtype_cast-i8-to-f32-channel0", "int8", [0.1, 0.02, 0.5], [0, -4, 7], 0),
    ("quant_dtype_cast-u8-to-f32-channel2", "uint8", [0.1, 0.2, 0.3, 0.4], [10, 0, 128, 255], 2),
    ("quant_dtype_cast-i8-to-f32-channel-neg1", "int8", [0.1, 0.2, 0.3, 0.4], [1, 2, 3, 4], -1),
]


@pytest.mark.parametrize("case", DEQUANT_CASES, ids=[c[0] for c in DEQUANT_CASES])
def test_quant_dtype_cast_dequantize(case, rng):
    _, dtype, scales, zeros, axis = case
    dt = np.dtype(dtype)
    x = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, (3, 2, 4)).astype(dt)
    qp = QuantParam(scales, zeros, [8] * len(scales))
    attrs = {} if axis is None else {"axis": axis}
    expected = ort1("DequantizeLinear", [x, np.array(scales, np.float32).reshape(-1 if axis is not None else ()),
                                         np.array(zeros, dt).reshape(-1 if axis is not None else ())], attrs,
                    out_dtypes=[np.float32])
    out = _qdc(x, OH_CODE[dt], DT.OH_NN_FLOAT32, np.float32, axis, input_quant={0: qp})
    check(out, expected)


QUANT_CASES = [
    ("quant_dtype_cast-f32-to-i8-tensor", "int8", [0.05], [3], None),
    ("quant_dtype_cast-f32-to-u8-tensor", "uint8", [0.02], [128], None),
    ("quant_dtype_cast-f32-to-i8-channel1", "int8", [0.1, 0.01], [0, -5], 1),
    ("quant_dtype_cast-f32-to-u8-channel0", "uint8", [0.1, 0.05, 0.2], [128, 100, 0], 0),
]


@pytest.mark.parametrize("case", QUANT_CASES, ids=[c[0] for c in QUANT_CASES])
def test_quant_dtype_cast_quantize(case, rng):
    _, dtype, scales, zeros, axis = case
    dt = np.dtype(dtype)
    x = (rng.standard_normal((3, 2, 4)) * 4).astype(np.float32)  # some values saturate
    qp = QuantParam(scales, zeros, [8] * len(scales))
    attrs = {} if axis is None else {"axis": axis}
    expected = ort1("QuantizeLinear", [x, np.array(scales, np.float32).reshape(-1 if axis is not None else ()),
                                       np.array(zeros, dt).reshape(-1 if axis is not None else ())], attrs,
                    out_dtypes=[dt])
    out = _qdc(x, DT.OH_NN_FLOAT32, OH_CODE[dt], dt, axis, output_quant={0: qp})
    check(out, expected)


def test_quant_dtype_cast_hand_ties():
    """Header formula q = clamp(round(r / s + z)), round half to even applied to r / s + z (ONNX's QuantizeLinear
    rounds r / s first and adds z, which differs at ties when z is odd: 0.25 / 0.5 + 3 = 3.5 -> 4 here, 3 in ONNX)."""
    x = np.array([0.25, 0.75, -0.25, 1.25, 100.0, -100.0], np.float32)
    out = _qdc(x, DT.OH_NN_FLOAT32, DT.OH_NN_INT8, np.int8, output_quant={0: QuantParam.per_tensor(0.5, 3)})
    check(out, np.array([4, 4, 2, 6, 127, -128], np.int8))
    out = _qdc(x, DT.OH_NN_FLOAT32, DT.OH_NN_UINT8, np.uint8, output_quant={0: QuantParam.per_tensor(0.5, 0)})
    check(out, np.array([0, 2, 0, 2, 200, 0], np.uint8))


def test_quant_dtype_cast_requantize_i8_to_u8(rng):
    x = rng.integers(-128, 128, (4, 5)).astype(np.int8)
    real = ort1("DequantizeLinear", [x, np.float32(0.1), np.int8(-3)], out_dtypes=[np.float32])
    expected = ort1("QuantizeLinear", [real, np.float32(0.07), np.uint8(120)], out_dtypes=[np.uint8])
    out = _qdc(x, DT.OH_NN_INT8, DT.OH_NN_UINT8, np.uint8, input_quant={0: QuantParam.per_tensor(0.1, -3)},
               output_quant={0: QuantParam.per_tensor(0.07, 120)})
    check(out, expected)


def test_quant_dtype_cast_mindir_codes(rng):
    x = rng.integers(-128, 128, (2, 3)).astype(np.int8)
    out = _qdc(x, 32, 43, np.float32, input_quant={0: QuantParam.per_tensor(0.5, 1)})  # kNumberTypeInt8/Float32
    check(out, ((x.astype(np.float64) - 1) * 0.5).astype(np.float32))


def test_quant_dtype_cast_fp16_mode(rng):
    x = rng.integers(-128, 128, (2, 3)).astype(np.int8)
    out = _qdc(x, DT.OH_NN_INT8, DT.OH_NN_FLOAT32, np.float32, input_quant={0: QuantParam.per_tensor(0.25, 0)},
               float16=True)
    check(out, (x.astype(np.float32) * 0.25).astype(np.float16).astype(np.float32))


def test_quant_dtype_cast_err_bool():
    raises(UNSUPPORTED, _qdc, np.array([True, False]), DT.OH_NN_BOOL, DT.OH_NN_FLOAT32, np.float32,
           match="QUANT_DTYPE_CAST")


def test_quant_dtype_cast_float_to_float(rng):
    x = rand_any(rng, (2, 3), "float32")
    check(_qdc(x, DT.OH_NN_FLOAT32, DT.OH_NN_FLOAT16, np.float16), x.astype(np.float16))


def test_quant_dtype_cast_errors(rng):
    x = rng.integers(-128, 128, (3, 4)).astype(np.int8)
    raises(INVALID, _qdc, x, DT.OH_NN_INT8, DT.OH_NN_FLOAT32, np.float32, match="quant params")
    raises(INVALID, _qdc, x, DT.OH_NN_UINT8, DT.OH_NN_FLOAT32, np.float32,
           input_quant={0: QuantParam.per_tensor(1.0, 0)}, match="srcT")
    raises(INVALID, _qdc, x, DT.OH_NN_INT8, DT.OH_NN_FLOAT32, np.float32, axis=1,
           input_quant={0: QuantParam([1.0, 2.0], [0, 0], [8, 8])}, match="channels")


# ---------------------------------------------------------------- the executor's output quantization, exact
INFO = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255)}


def round_half_even(numerator: np.ndarray, denominator: int) -> np.ndarray:
    """round(numerator / denominator) to the nearest integer, ties to even, in exact integer arithmetic."""
    numerator = np.asarray(numerator, np.int64)
    q, r = np.divmod(numerator, denominator)  # floor division, 0 <= r < denominator
    up = (2 * r > denominator) | ((2 * r == denominator) & (q % 2 == 1))
    return q + up


def requantize(acc: np.ndarray, multiplier, zero: int, dtype, channel_axis: int = -1) -> np.ndarray:
    """clamp(round_half_even(acc * multiplier + zero)): ``multiplier`` = input scale x weight scale / output scale
    as exact fractions (one, or one per channel along ``channel_axis``)."""
    multipliers = [Fraction(m) for m in np.atleast_1d(multiplier)]
    den = max(m.denominator for m in multipliers)
    nums = np.array([int(m * den) for m in multipliers], np.int64)
    if nums.size > 1:
        shape = [1] * acc.ndim
        shape[channel_axis] = nums.size
        nums = nums.reshape(shape)
    lo, hi = INFO[np.dtype(dtype)]
    return np.clip(round_half_even(acc.astype(np.int64) * nums + zero * den, den), lo, hi).astype(dtype)


def tie_counts(acc: np.ndarray, multiplier, zero: int, channel_axis: int = -1) -> tuple[int, int]:
    """(ties rounding down, ties rounding up) among the outputs: how much the data exercises the tie rule."""
    multipliers = [Fraction(m) for m in np.atleast_1d(multiplier)]
    den = max(m.denominator for m in multipliers)
    nums = np.array([int(m * den) for m in multipliers], np.int64)
    if nums.size > 1:
        shape = [1] * acc.ndim
        shape[channel_axis] = nums.size
        nums = nums.reshape(shape)
    q, r = np.divmod(acc.astype(np.int64) * nums + zero * den, den)
    tie = 2 * r == den
    return int(np.sum(tie & (q % 2 == 0))), int(np.sum(tie & (q % 2 == 1)))


def assert_ties_both_ways(acc, multiplier, zero, channel_axis=-1, at_least=3):
    down, up = tie_counts(acc, multiplier, zero, channel_axis)
    assert down >= at_least and up >= at_least, f"the data needs ties rounding both ways: {down} down, {up} up"


def qp(scales, zeros, axis=None) -> QuantParam:
    scales, zeros = list(np.atleast_1d(scales)), list(np.atleast_1d(zeros))
    return QuantParam([float(s) for s in scales], [int(z) for z in zeros], [8] * len(scales), axis=axis)


def ints(rng, shape, dtype, lo=None, hi=None):
    info_lo, info_hi = INFO[np.dtype(dtype)]
    return rng.integers(info_lo if lo is None else lo, (info_hi if hi is None else hi) + 1, shape).astype(dtype)


def near(rng, shape, dtype, center: int, spread: int):
    """Integers of ``dtype`` within ``center +- spread`` (data near the zero point keeps the outputs in range, so
    ties are not lost to saturation)."""
    return ints(rng, shape, dtype, center - spread, center + spread)


def nchw(a):
    return np.ascontiguousarray(np.transpose(a, (0, 3, 1, 2)))


def nhwc(a):
    return np.ascontiguousarray(np.transpose(a, (0, 2, 3, 1)))


# -- hand-made ties: the executor's output quantization alone ------------------------------------------------------

@pytest.mark.parametrize("dtype,zero,expected", [
    # r = 0.5 * (qa - za) + 0.25 * (qb - zb) with qb = zb; output scale 1: r / s + z rounded half to even by hand
    (np.int8, 0, [0, 2, 2, 0, -2, -2, 4, 64, -64]),  # .5 1.5 2.5 -.5 -1.5 -2.5 3.5 63.5 -64
    (np.int8, 3, [4, 4, 6, 2, 2, 0, 6, 66, -61]),  # 3.5 4.5 5.5 2.5 1.5 .5 6.5 66.5 -61
    (np.int8, -2, [-2, 0, 0, -2, -4, -4, 2, 62, -66]),  # -1.5 -.5 .5 -2.5 -3.5 -4.5 1.5 61.5 -66
    (np.uint8, 129, [130, 130, 132, 128, 128, 126, 132, 192, 65]),  # 129.5 130.5 131.5 128.5 127.5 126.5 132.5 ...
])
def test_add_output_ties_round_half_to_even(dtype, zero, expected):
    za = 0 if dtype == np.int8 else 128
    qa = (np.array([1, 3, 5, -1, -3, -5, 7, 127, -128]) + za).astype(dtype)
    qb = np.full_like(qa, za)
    out = run("ADD", [qa, qb], input_quant={0: qp(0.5, za), 1: qp(0.25, za)}, output_quant={0: qp(1.0, zero)},
              output_dtypes=[dtype])[0]
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, np.array(expected, dtype))


@pytest.mark.parametrize("dtype,scale,zero,expected", [
    # saturation: r / s + z beyond the type's range clamps to qmin / qmax
    (np.int8, 0.25, 1, [127, -128, 127, -128, 9]),  # r / s = 2 qa: 254 + 1, -256 + 1, 128 + 1, -130 + 1, 8 + 1
    (np.uint8, 0.25, 10, [255, 0, 138, 0, 18]),  # 254 + 10, -256 + 10, 128 + 10, -130 + 10, 8 + 10
])
def test_add_output_saturates(dtype, scale, zero, expected):
    za = 0 if dtype == np.int8 else 128
    qa = (np.array([127, -128, 64, -65, 4]) + za).astype(dtype)
    qb = np.full_like(qa, za)
    out = run("ADD", [qa, qb], input_quant={0: qp(0.5, za), 1: qp(0.25, za)}, output_quant={0: qp(scale, zero)},
              output_dtypes=[dtype])[0]
    np.testing.assert_array_equal(out, np.array(expected, dtype))


# -- element-wise and pooling: exact ties on random data -----------------------------------------------------------

@pytest.mark.parametrize("zero", [3, -4], ids=["odd-zero", "even-zero"])
def test_add_int8_exact(zero):
    rng = rng_for(f"quant-exact-add-{zero}")
    a, b = ints(rng, (4, 6, 5), np.int8), ints(rng, (4, 6, 5), np.int8)
    za, zb = 1, -2
    # r = 0.5 (a - za) + 0.25 (b - zb) = (2 (a - za) + (b - zb)) / 4; output scale 1
    acc = 2 * (a.astype(np.int64) - za) + (b.astype(np.int64) - zb)
    out = run("ADD", [a, b], input_quant={0: qp(0.5, za), 1: qp(0.25, zb)}, output_quant={0: qp(1.0, zero)},
              output_dtypes=[np.int8])[0]
    assert_ties_both_ways(acc, Fraction(1, 4), zero)
    np.testing.assert_array_equal(out, requantize(acc, Fraction(1, 4), zero, np.int8))


@pytest.mark.parametrize("zero", [101, 100], ids=["odd-zero", "even-zero"])
def test_mul_uint8_exact(zero):
    rng = rng_for(f"quant-exact-mul-{zero}")
    za, zb = 128, 130
    a, b = near(rng, (3, 7, 4), np.uint8, za, 12), near(rng, (3, 7, 4), np.uint8, zb, 10)
    # r = 0.25 (a - za) * 0.5 (b - zb); output scale 0.25: r / s = (a - za)(b - zb) / 2
    acc = (a.astype(np.int64) - za) * (b.astype(np.int64) - zb)
    out = run("MUL", [a, b], input_quant={0: qp(0.25, za), 1: qp(0.5, zb)}, output_quant={0: qp(0.25, zero)},
              output_dtypes=[np.uint8])[0]
    assert_ties_both_ways(acc, Fraction(1, 2), zero)
    np.testing.assert_array_equal(out, requantize(acc, Fraction(1, 2), zero, np.uint8))


@pytest.mark.parametrize("dtype,zx,zero", [(np.int8, 5, 3), (np.int8, 0, -6), (np.uint8, 128, 127)],
                         ids=["i8-odd-zero", "i8-even-zero", "u8-odd-zero"])
def test_avg_pool_exact(dtype, zx, zero):
    """2x2 windows, stride 2, VALID (no padding: every window averages 4 real cells): r = 0.5 * sum(q - zx) / 4,
    output scale 0.25: r / s = sum / 2."""
    rng = rng_for(f"quant-exact-avgpool-{np.dtype(dtype).name}-{zero}")
    x = near(rng, (2, 8, 6, 3), dtype, zx, 30)
    params = {T.OH_NN_AVG_POOL_KERNEL_SIZE: [2, 2], T.OH_NN_AVG_POOL_STRIDE: [2, 2], T.OH_NN_AVG_POOL_PAD_MODE: 1}
    out = run("AVG_POOL", [x], params, input_quant={0: qp(0.5, zx)}, output_quant={0: qp(0.25, zero)},
              output_dtypes=[dtype])[0]
    d = x.astype(np.int64) - zx
    acc = d[:, 0::2, 0::2] + d[:, 1::2, 0::2] + d[:, 0::2, 1::2] + d[:, 1::2, 1::2]
    assert_ties_both_ways(acc, Fraction(1, 2), zero)
    np.testing.assert_array_equal(out, requantize(acc, Fraction(1, 2), zero, dtype))


# -- convolutions and matrix products: int64 accumulation, then the exact requantization ---------------------------

CONV_CASES = {
    # id: (input dtype, x zero, NHWC input shape, weight shape [O, kH, kW, C], weight scales, params, ONNX geometry
    #      (strides, pads [top, left, bottom, right], dilations), output zero)
    "pad-list-odd-zero": (np.int8, 2, (1, 6, 6, 3), (4, 3, 3, 3), 0.25,
                          {T.OH_NN_CONV2D_PAD: [1, 0, 2, 1]}, ((1, 1), (1, 2, 0, 1), (1, 1)), 3),
    "stride2-even-zero": (np.int8, -1, (2, 9, 8, 2), (3, 3, 2, 2), 0.25,
                          {T.OH_NN_CONV2D_STRIDES: [2, 2], T.OH_NN_CONV2D_PAD: [1, 1, 0, 1]},
                          ((2, 2), (1, 0, 1, 1), (1, 1)), -8),
    "dilation-u8": (np.uint8, 128, (1, 8, 7, 2), (3, 2, 3, 2), 0.25,
                    {T.OH_NN_CONV2D_DILATION: [2, 3], T.OH_NN_CONV2D_PAD: [1, 0, 2, 1]}, ((1, 1), (1, 2, 0, 1), (2, 3)),
                    125),
    # SAME, stride 2 on 7x7 with a 3x3 kernel: out 4, total pad (4 - 1) * 2 + 3 - 7 = 2 -> 1 top, 1 bottom (NNAPI)
    "same-stride2": (np.int8, 0, (1, 7, 7, 2), (3, 3, 3, 2), 0.25,
                     {T.OH_NN_CONV2D_PAD_MODE: 0, T.OH_NN_CONV2D_STRIDES: [2, 2]}, ((2, 2), (1, 1, 1, 1), (1, 1)), 1),
    "per-channel": (np.int8, 3, (1, 5, 6, 3), (4, 3, 3, 3), [0.25, 0.5, 0.125, 0.25],
                    {T.OH_NN_CONV2D_PAD: [1, 1, 1, 1]}, ((1, 1), (1, 1, 1, 1), (1, 1)), -3),
}


@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv2d_exact(case):
    dtype, zx, x_shape, w_shape, w_scales, params, (strides, pads, dilations), zero = CONV_CASES[case]
    rng = rng_for(f"quant-exact-conv2d-{case}")
    x = near(rng, x_shape, dtype, zx, 8)
    w = ints(rng, w_shape, np.int8, -4, 4)
    b = rng.integers(-20, 21, w_shape[0]).astype(np.int32)  # INT32 bias: scale = input scale x weight scale
    per_channel = np.ndim(w_scales) == 1
    x_scale, y_scale = 0.5, 1.0
    w_q = qp(w_scales, [0] * len(w_scales), axis=0) if per_channel else qp(w_scales, 0)
    out = run("CONV2D", [x, w, b], params, input_quant={0: qp(x_scale, zx), 1: w_q},
              output_quant={0: qp(y_scale, zero)}, output_dtypes=[dtype], constant_inputs=[1, 2])[0]
    acc = nhwc(conv_accumulate(nchw(x), np.transpose(w, (0, 3, 1, 2)), zx, 0, strides, pads, dilations, 1, b))
    multiplier = [Fraction(x_scale) * Fraction(s) / Fraction(y_scale) for s in np.atleast_1d(w_scales)]
    assert out.shape == acc.shape
    assert_ties_both_ways(acc, multiplier, zero)
    np.testing.assert_array_equal(out, requantize(acc, multiplier, zero, dtype))


@pytest.mark.parametrize("zero", [7, 126], ids=["odd-zero", "even-zero"])
def test_depthwise_conv2d_native_exact(zero):
    """uint8 input, int8 per-channel weights, channel multiplier 2 (output channel k reads input channel k // 2)."""
    rng = rng_for(f"quant-exact-depthwise-{zero}")
    x = near(rng, (1, 7, 6, 3), np.uint8, 120, 10)
    w = ints(rng, (6, 3, 3, 1), np.int8, -6, 6)
    b = rng.integers(-20, 21, 6).astype(np.int32)
    w_scales = [0.25, 0.5, 0.125, 0.25, 0.5, 0.125]
    params = {T.OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD: [1, 1, 0, 2]}
    out = run("DEPTHWISE_CONV2D_NATIVE", [x, w, b], params,
              input_quant={0: qp(0.5, 120), 1: qp(w_scales, [0] * 6, axis=0)},
              output_quant={0: qp(0.5, zero)}, output_dtypes=[np.uint8], constant_inputs=[1, 2])[0]
    acc = nhwc(conv_accumulate(nchw(x), np.transpose(w, (0, 3, 1, 2)), 120, 0, (1, 1), (1, 0, 1, 2), (1, 1), 3, b))
    multiplier = [Fraction(1, 2) * Fraction(s) / Fraction(1, 2) for s in w_scales]
    assert_ties_both_ways(acc, multiplier, zero)
    np.testing.assert_array_equal(out, requantize(acc, multiplier, zero, np.uint8))


@pytest.mark.parametrize("zero", [5, -2], ids=["odd-zero", "even-zero"])
def test_full_connection_exact(zero):
    rng = rng_for(f"quant-exact-fc-{zero}")
    zx, zw = -3, 2
    x, w = near(rng, (16, 10), np.int8, zx, 8), near(rng, (6, 10), np.int8, zw, 6)
    b = rng.integers(-30, 31, 6).astype(np.int32)
    out = run("FULL_CONNECTION", [x, w, b], {T.OH_NN_FULL_CONNECTION_HAS_BIAS: True},
              input_quant={0: qp(0.25, zx), 1: qp(0.125, zw)}, output_quant={0: qp(0.25, zero)},
              output_dtypes=[np.int8], output_shapes=[(16, 6)])[0]
    acc = matmul_accumulate(x, w.T, zx, zw).astype(np.int64) + b
    multiplier = Fraction(1, 4) * Fraction(1, 8) / Fraction(1, 4)
    assert_ties_both_ways(acc, multiplier, zero)
    np.testing.assert_array_equal(out, requantize(acc, multiplier, zero, np.int8))


@pytest.mark.parametrize("zero", [-7, 10], ids=["odd-zero", "even-zero"])
def test_matmul_exact(zero):
    rng = rng_for(f"quant-exact-matmul-{zero}")
    za, zb = 4, -1
    a, b = near(rng, (3, 6, 6), np.int8, za, 8), near(rng, (6, 7), np.int8, zb, 8)
    out = run("MATMUL", [a, b], {}, input_quant={0: qp(0.5, za), 1: qp(0.5, zb)}, output_quant={0: qp(2.0, zero)},
              output_dtypes=[np.int8])[0]
    acc = np.matmul(a.astype(np.int64) - za, b.astype(np.int64) - zb)
    multiplier = Fraction(1, 4) / 2
    assert_ties_both_ways(acc, multiplier, zero)
    np.testing.assert_array_equal(out, requantize(acc, multiplier, zero, np.int8))


def test_round_half_even_helper_by_hand():
    """The oracle's own rounding, on hand-picked fractions: 5/2 -> 2, 7/2 -> 4, -5/2 -> -2, -7/2 -> -4, 5/4 -> 1,
    7/4 -> 2, -5/4 -> -1, -7/4 -> -2, 1/2 -> 0, -1/2 -> 0."""
    got = [int(round_half_even(np.int64(n), d)) for n, d in
           [(5, 2), (7, 2), (-5, 2), (-7, 2), (5, 4), (7, 4), (-5, 4), (-7, 4), (1, 2), (-1, 2)]]
    assert got == [2, 4, -2, -4, 1, 2, -1, -2, 0, 0]
    assert list(requantize(np.array([5, -5, 300, -300]), Fraction(1, 2), 3, np.int8)) == [6, 0, 127, -128]
