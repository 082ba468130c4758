"""Quantization family: QUANT_DTYPE_CAST (dequantize, quantize, requantize, float -> float), run end to end through
``run_op``.

Oracles: onnxruntime's DequantizeLinear / QuantizeLinear on single-node ONNX models, and the header's formula written
out by hand (ties, MindIR type codes).
"""
from __future__ import annotations

import numpy as np
import pytest
from kernels.kernel_support import INVALID, OH_CODE, UNSUPPORTED, check, ort1, raises, rand_any, run

from nnrt_onnx.enums import OH_NN_DataType
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
