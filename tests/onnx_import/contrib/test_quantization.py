"""onnxruntime's contrib DynamicQuantizeMatMul and MatMulIntegerToFloat (com.microsoft). Expected values come from
the contrib documentation's formula computed exactly here (``integer_oracle``: the uint8 dynamic quantization of A,
the int64 product, then float32 scaling and bias), never from onnxruntime's u8s8 kernels, whose int16 pair sums
saturate on AVX2 CPUs without VNNI; onnxruntime is a second opinion for uint8 x uint8 products only (exact on every
CPU)."""
from __future__ import annotations

import numpy as np
import pytest
from integer_oracle import dynamic_quantize_linear, matmul_accumulate

from nnrt_onnx.ir.issues import INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE

from .contrib_support import F32, against_ort, contrib_model, ms_node, ours, rejected

U8, I8 = np.uint8, np.int8


def _scaled(acc, a_scale, b_scale, bias):
    """float32(acc) * float32(a_scale * b_scale) (+ bias), float32 throughout as the contrib kernels compute it."""
    y = acc.astype(F32) * (np.float32(a_scale) * np.asarray(b_scale, F32).reshape(-1))
    return y if bias is None else y + bias


def _dqmm_expected(a, b, b_scale, b_zp, bias):
    a_q, a_scale, a_zp = dynamic_quantize_linear(a)
    acc = matmul_accumulate(a_q, b, a_zp, None if b_zp is None else np.asarray(b_zp).reshape(-1))
    return _scaled(acc, a_scale, b_scale, bias)


def _weights(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


CASES = {  # b dtype, scale / zero point per column (N) or per tensor (scalar / (1,)), with bias
    "u8-per-column": (U8, (6,), True, True),
    "u8-per-tensor-scalar": (U8, (), True, True),
    "u8-per-tensor-1": (U8, (1,), True, False),
    "u8-no-zero-point": (U8, (6,), False, True),
    "s8-per-column": (I8, (6,), True, True),
    "s8-symmetric": (I8, (6,), False, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dynamic_quantize_matmul(rng, case):
    dtype, param_shape, with_zp, with_bias = CASES[case]
    a = (rng.standard_normal((3, 2, 10)) * 2).astype(F32)
    b = _weights(rng, dtype, (10, 6))
    b_scale = rng.uniform(0.005, 0.05, param_shape).astype(F32)
    b_zp = _weights(rng, dtype, param_shape) if with_zp else None
    bias = rng.standard_normal(6).astype(F32) if with_bias else None
    inputs = ["a", "b", "b_scale", "b_zp" if with_zp else "", "bias" if with_bias else ""]
    constants = {"b": b, "b_scale": b_scale, **({"b_zp": b_zp} if with_zp else {}),
                 **({"bias": bias} if with_bias else {})}
    model = contrib_model(ms_node("DynamicQuantizeMatMul", inputs, ["y"]), {"a": a}, ["y"], constants)
    (y,) = ours(model, {"a": a})
    assert y.dtype == F32 and y.shape == (3, 2, 6)
    np.testing.assert_allclose(y, _dqmm_expected(a, b, b_scale, b_zp, bias), rtol=1e-6, atol=1e-6)
    if dtype == U8:  # uint8 x uint8: onnxruntime's kernel is exact on every CPU
        against_ort(model, {"a": a}, rtol=1e-6, atol=1e-6)


def test_dynamic_quantize_matmul_is_exact_where_int16_pair_sums_saturate(rng):
    """A spread so that the quantized A is near 0 and 255 and int8 weights near -128/127: byte-pair sums reach
    255 * 127 * 2, beyond int16, where onnxruntime's AVX2 (no VNNI) kernel saturates; the formula is exact."""
    a = np.tile(np.array([[-1.0, 100.0, 99.0, 100.0, 98.0, 100.0, 97.0, 100.0]], F32), (2, 1))
    b = np.tile(np.array([[127], [-128], [127], [127], [-128], [127], [127], [127]], I8), (1, 3))
    b_scale = np.float32(0.01)
    model = contrib_model(ms_node("DynamicQuantizeMatMul", ["a", "b", "b_scale"], ["y"]), {"a": a}, ["y"],
                          {"b": b, "b_scale": b_scale})
    (y,) = ours(model, {"a": a})
    np.testing.assert_allclose(y, _dqmm_expected(a, b, b_scale, None, None), rtol=1e-6, atol=1e-6)
    # and close to the float product within a quantization step of A per term
    np.testing.assert_allclose(y, a @ (b.astype(F32) * b_scale), rtol=0, atol=8 * 0.01 * 101 / 255 * 128)


def test_dynamic_quantize_matmul_of_an_all_zero_input(rng):
    a = np.zeros((2, 4), F32)
    model = contrib_model(ms_node("DynamicQuantizeMatMul", ["a", "b", "b_scale", "", "bias"], ["y"]), {"a": a}, ["y"],
                          {"b": _weights(rng, U8, (4, 3)), "b_scale": np.float32(0.1), "bias": np.arange(3, dtype=F32)})
    (y,) = ours(model, {"a": a})
    np.testing.assert_array_equal(y, np.tile(np.arange(3, dtype=F32), (2, 1)))  # scale 1, zero point 0: 0 + bias


@pytest.mark.parametrize("a_dtype,b_dtype", [(U8, U8), (U8, I8), (I8, I8), (I8, U8)])
@pytest.mark.parametrize("per_column", [True, False])
def test_matmul_integer_to_float(rng, a_dtype, b_dtype, per_column):
    a = _weights(rng, a_dtype, (4, 9))
    b = _weights(rng, b_dtype, (9, 5))
    shape = (5,) if per_column else ()
    a_scale, a_zp = np.float32(0.02), _weights(rng, a_dtype, ())
    b_scale, b_zp = rng.uniform(0.01, 0.1, shape).astype(F32), _weights(rng, b_dtype, shape)
    bias = rng.standard_normal(5).astype(F32)
    node = ms_node("MatMulIntegerToFloat", ["a", "b", "a_scale", "b_scale", "a_zp", "b_zp", "bias"], ["y"])
    model = contrib_model(node, {"a": a}, ["y"], {"b": b, "a_scale": a_scale, "b_scale": b_scale, "a_zp": a_zp,
                                                  "b_zp": b_zp, "bias": bias})
    (y,) = ours(model, {"a": a})
    want = _scaled(matmul_accumulate(a, b, a_zp, b_zp.reshape(-1)), a_scale, b_scale, bias)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    if a_dtype == b_dtype == U8:
        against_ort(model, {"a": a}, rtol=1e-6, atol=1e-6)


def test_matmul_integer_to_float_with_runtime_scales_and_no_zero_points(rng):
    feeds = {"a": _weights(rng, U8, (2, 3, 6)), "a_scale": np.array([0.05], F32),
             "b_scale": rng.uniform(0.01, 0.1, 4).astype(F32)}
    b = _weights(rng, U8, (6, 4))
    model = contrib_model(ms_node("MatMulIntegerToFloat", ["a", "b", "a_scale", "b_scale"], ["y"]), feeds, ["y"],
                          {"b": b})
    (y,) = against_ort(model, feeds, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y, _scaled(matmul_accumulate(feeds["a"], b), 0.05, feeds["b_scale"], None),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op,inputs,constants,reason,message", [
    ("MatMulIntegerToFloat", ["a", "b", "a_scale", "b_scale"],
     {"a_scale": np.full(4, 0.1, F32), "b_scale": np.float32(0.1)}, UNSUPPORTED_ATTRIBUTE, "A is quantized per tensor"),
    ("MatMulIntegerToFloat", ["a", "b", "a_scale", "b_scale", "a_zp"],
     {"a_scale": np.float32(0.1), "b_scale": np.float32(0.1), "a_zp": np.zeros(2, U8)}, UNSUPPORTED_ATTRIBUTE,
     "a_zero_point"),
    ("MatMulIntegerToFloat", ["a", "b", "a_scale", "b_scale"],
     {"a_scale": np.float32(0.1), "b_scale": np.full(3, 0.1, F32)}, INVALID_MODEL, "one per column of B"),
    ("MatMulIntegerToFloat", ["a", "b", "a_scale", "b_scale", "", "", "bias"],
     {"a_scale": np.float32(0.1), "b_scale": np.float32(0.1), "bias": np.zeros(4, F32)}, INVALID_MODEL,
     "of shape (5,)"),
])
def test_quantized_matmul_rejections(rng, op, inputs, constants, reason, message):
    a = _weights(rng, U8, (2, 4))
    model = contrib_model(ms_node(op, inputs, ["y"]), {"a": a}, ["y"], {"b": _weights(rng, U8, (4, 5)), **constants})
    rejected(model, reason, message)


def test_dynamic_quantize_matmul_takes_float32_only(rng):
    a = rng.standard_normal((2, 4))
    model = contrib_model(ms_node("DynamicQuantizeMatMul", ["a", "b", "b_scale"], ["y"]), {"a": a}, ["y"],
                          {"b": _weights(rng, U8, (4, 5)), "b_scale": np.float32(0.1)})
    rejected(model, UNSUPPORTED_DTYPE, "float32 only")
