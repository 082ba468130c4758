"""Import of the quantization family (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, ConvInteger,
QLinearConv, MatMulInteger, QLinearMatMul): small models whose expected integers come from exact integer math
(integer_oracle) and onnx.reference, with onnxruntime where its kernels are exact on every CPU; and the rejections.
"""
from __future__ import annotations

import integer_oracle
import numpy as np
import pytest
from support import onnx_model, ort_run

from nnrt_onnx.enums import OH_NN_OperationType as OP
from onnx_import.import_support import (
    F32,
    I8,
    I32,
    U8,
    F,
    check_model,
    check_n,
    check_named,
    dynamic_model,
    node_model_n,
    node_model_named,
    onnx_node,
    ops_of,
    rand_normal,
    randn1,
    rejects_named,
    rng_for,
    run_ours,
    runs_like_onnxruntime,
)

# -- QuantizeLinear / DequantizeLinear ---------------------------------------------------------------------------------

def test_qdq_per_axis_chain_uses_quant_dtype_cast():
    x = rand_normal(20, 2, 3, 4) * 3
    scale, zero = np.asarray([0.02, 0.05, 0.1], F), np.asarray([2, -4, 0], np.int8)
    model = onnx_model([onnx_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
                    onnx_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)], {"x": x}, {"s": scale, "z": zero},
                   opset=13, outputs=("y", "q"))
    result = check_model(model, {"x": x})
    assert OP.OH_NN_OPS_QUANT_DTYPE_CAST in ops_of(result)


@pytest.mark.parametrize("zero", [1, 2], ids=["quantize_ties_odd_zero_point", "quantize_ties_even_zero_point"])
def test_quantize_rounds_ties_to_even_before_the_zero_point(zero):
    x = np.asarray([0.5, 1.5, 2.5, -0.5, -1.5, 3.25], F)
    model = onnx_model(onnx_node("QuantizeLinear", ["x", "s", "z"]), {"x": x},
                   {"s": np.asarray(1.0, F), "z": np.asarray(zero, np.uint8)}, opset=13)
    result = check_model(model, {"x": x})
    assert (OP.OH_NN_OPS_QUANT_DTYPE_CAST in ops_of(result)) == (zero % 2 == 0)


def test_dequantize_raw_uint8_input_per_tensor():
    x = rand_normal(21, 3, 4, dtype=np.uint8, low=0, high=255)
    model = onnx_model(onnx_node("DequantizeLinear", ["x", "s", "z"]), {"x": x},
                   {"s": np.asarray(0.25, F), "z": np.asarray(100, np.uint8)}, opset=13)
    check_model(model, {"x": x})


def test_quantize_to_int16_plain_integers():
    x = rand_normal(22, 2, 5) * 1000
    model = onnx_model(onnx_node("QuantizeLinear", ["x", "s", "z"]), {"x": x},
                   {"s": np.asarray(0.5, F), "z": np.asarray(7, np.int16)}, opset=21)
    check_model(model, {"x": x})


def test_qdq_constant_weight_is_folded():
    x = rand_normal(23, 1, 2, 5, 5)
    w = rand_normal(24, 3, 2, 3, 3, dtype=np.int8, low=-128, high=127)
    model = onnx_model([onnx_node("DequantizeLinear", ["w", "ws"], ["wf"], axis=0), onnx_node("Conv", ["x", "wf"])], {"x": x},
                   {"w": w, "ws": np.asarray([0.01, 0.02, 0.03], F)}, opset=13)
    result = check_model(model, {"x": x})
    assert OP.OH_NN_OPS_QUANT_DTYPE_CAST not in ops_of(result)


# -- DynamicQuantizeLinear ---------------------------------------------------------------------------------------------

DQL_CASES = {
    "dql-all-positive": np.asarray([[0.5, 1.0, 3.75], [2.0, 0.25, 1.5]], F32),
    "dql-all-negative": np.asarray([-0.3, -2.0, -1.1, -0.9], F32),
    "dql-all-zero": np.zeros((2, 2), F32),
    "dql-ties": np.asarray([-2.55, 0.0, 0.005, 0.015, 1.275, 2.55], F32) * 2,
    "dql-scalar": np.asarray(-1.25, F32),
}


@pytest.mark.parametrize("case", list(DQL_CASES))
def test_dynamic_quantize_linear(case):
    # expected values from the spec's formulas (integer_oracle), not from onnxruntime's quantizer kernel
    x = DQL_CASES[case]
    check_named("DynamicQuantizeLinear", {"x": x}, 11, outputs=("y", "scale", "zp"),
          against=list(integer_oracle.dynamic_quantize_linear(x)))


def test_dynamic_quantize_linear_random_matches_reference():
    x = randn1(rng_for("dql-random"), (3, 7), scale=4.0)
    check_named("DynamicQuantizeLinear", {"x": x}, 11, outputs=("y", "scale", "zp"), against="reference")


# -- ConvInteger / QLinearConv -----------------------------------------------------------------------------------------

def _int_data(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)


CONV_INT_CASES = [  # case, x, w dtype, x shape, w shape, attrs, per-channel w zero point, constant w
    ("convint-u8-pads-strides", U8, U8, (1, 2, 6, 5), (3, 2, 3, 3), {"pads": [1, 0, 2, 1], "strides": [2, 1]}, False,
     True),
    ("convint-group-dilation", U8, U8, (2, 4, 7, 7), (6, 2, 2, 2), {"group": 2, "dilations": [2, 1]}, False, True),
    ("convint-depthwise-same-lower", U8, U8, (1, 3, 5, 5), (3, 1, 3, 3), {"group": 3, "auto_pad": "SAME_LOWER",
                                                                         "strides": [2, 2]}, False, True),
    ("convint-1d-runtime-weight", U8, U8, (2, 3, 9), (4, 3, 3), {"pads": [1, 1]}, False, False),
    ("convint-i8-weight-per-channel", U8, I8, (1, 2, 4, 4), (3, 2, 2, 2), {}, True, True),
]


@pytest.mark.parametrize("case,xt,wt,x_shape,w_shape,attrs,per_channel,constant_w", CONV_INT_CASES,
                         ids=[c[0] for c in CONV_INT_CASES])
def test_conv_integer(case, xt, wt, x_shape, w_shape, attrs, per_channel, constant_w):
    rng = rng_for(case)
    inputs = {"x": _int_data(rng, x_shape, xt), "w": _int_data(rng, w_shape, wt),
              "x_zp": np.asarray(131, xt), "w_zp": (_int_data(rng, (w_shape[0],), wt) if per_channel
                                                     else np.asarray(7, wt))}
    constants = ("x_zp", "w_zp") + (("w",) if constant_w else ())
    expected = integer_oracle.conv_accumulate(
        *_conv_operands(inputs["x"], inputs["w"], attrs), inputs["x_zp"], inputs["w_zp"], **_conv_geometry(
            inputs["x"], inputs["w"], attrs))
    if len(x_shape) == 3:
        expected = expected[:, :, 0, :]  # back from the unit height of the 2-D oracle
    got = check_named("ConvInteger", inputs, 10, attrs, constants=constants, against=[expected])[0]
    if wt == U8:  # a second opinion: onnxruntime's u8u8 kernels widen to int16 before multiplying, exact on every
        # CPU (only its u8s8/s8s8 path saturates); it takes uint8 weights only
        np.testing.assert_array_equal(got, ort_run(node_model_named("ConvInteger", inputs, 10, attrs, constants),
                                                   {n: a for n, a in inputs.items() if n not in constants})[0])


def _conv_operands(x, w, attrs):
    """1-D convolutions as 2-D ones with a unit height (the oracle is 2-D)."""
    if x.ndim == 3:
        return x[:, :, None, :], w[:, :, None, :]
    return x, w


def _conv_geometry(x, w, attrs):
    """strides, pads [top, left, bottom, right], dilations and group of the oracle for an ONNX Conv's attributes,
    auto_pad resolved by the ONNX rule (SAME_UPPER puts the odd padding at the end, SAME_LOWER at the start)."""
    spatial = x.ndim - 2
    strides = list(attrs.get("strides", [1] * spatial))
    dilations = list(attrs.get("dilations", [1] * spatial))
    pads = list(attrs.get("pads", [0] * (2 * spatial)))
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * spatial)
        for axis in range(spatial):
            size, kernel = x.shape[2 + axis], (w.shape[2 + axis] - 1) * dilations[axis] + 1
            total = max((-(-size // strides[axis]) - 1) * strides[axis] + kernel - size, 0)
            small, large = total // 2, total - total // 2
            pads[axis], pads[spatial + axis] = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    if spatial == 1:
        strides, dilations, pads = [1] + strides, [1] + dilations, [0, pads[0], 0, pads[1]]
    return dict(strides=strides, pads=pads, dilations=dilations, group=attrs.get("group", 1))


QCONV_CASES = [  # case, x/y dtype, w dtype, per-channel w scale, bias, constant scales
    ("qconv-u8-per-channel-bias", U8, I8, True, True, True),
    ("qconv-i8-per-tensor", I8, I8, False, False, True),
    ("qconv-u8-runtime-scales", U8, U8, True, True, False),
]


@pytest.mark.parametrize("case,xt,wt,per_channel,with_bias,constant_scales", QCONV_CASES,
                         ids=[c[0] for c in QCONV_CASES])
def test_qlinear_conv(case, xt, wt, per_channel, with_bias, constant_scales):
    rng = rng_for(case)
    out_c = 4
    inputs = {"x": _int_data(rng, (1, 3, 6, 6), xt), "x_scale": np.asarray(0.02, F32),
              "x_zp": np.asarray(3 if xt == U8 else -2, xt), "w": _int_data(rng, (out_c, 3, 3, 3), wt),
              "w_scale": (rng.uniform(0.001, 0.01, out_c) if per_channel else np.asarray(0.004)).astype(F32),
              "w_zp": np.zeros(out_c if per_channel else (), wt), "y_scale": np.asarray(0.5, F32),
              "y_zp": np.asarray(121 if xt == U8 else 5, xt)}
    if with_bias:
        inputs["B"] = rng.integers(-2000, 2000, out_c).astype(I32)
    constants = ("x_zp", "w", "w_zp", "y_zp") + (("x_scale", "w_scale", "y_scale") if constant_scales else ())
    acc = integer_oracle.conv_accumulate(inputs["x"], inputs["w"], inputs["x_zp"], inputs["w_zp"], pads=[1, 1, 1, 1],
                                         bias=inputs.get("B"))
    expected = integer_oracle.requantize(acc, inputs["x_scale"], inputs["w_scale"], inputs["y_scale"], inputs["y_zp"])
    check_named("QLinearConv", inputs, 10, {"pads": [1, 1, 1, 1]}, constants=constants, against=[expected])
    check_named("QLinearConv", inputs, 10, {"pads": [1, 1, 1, 1]}, constants=constants, against="reference")


def test_qlinear_conv_rounds_half_to_even_after_the_zero_point():
    # acc * scale = 2.5 exactly; reference: round(2.5 + 1) = 4 (not round(2.5) + 1 = 3)
    inputs = {"x": np.full((1, 1, 1, 1), 5, U8), "x_scale": np.asarray(0.5, F32), "x_zp": np.asarray(0, U8),
              "w": np.full((1, 1, 1, 1), 1, U8), "w_scale": np.asarray(1.0, F32), "w_zp": np.asarray(0, U8),
              "y_scale": np.asarray(1.0, F32), "y_zp": np.asarray(1, U8)}
    got = check_named("QLinearConv", inputs, 10, {}, constants=("w",), against="reference")[0]
    assert int(got.reshape(-1)[0]) == 4


def test_conv_integer_rejects_a_possible_int32_overflow():
    inputs = {"x": np.zeros((1, 1100, 6, 6), U8), "w": np.full((1, 1100, 6, 6), 255, U8)}
    rejects_named("ConvInteger", inputs, "unsupported_attribute", 10, constants=("w",), match="overflow")


def test_conv_integer_rejects_3d():
    inputs = {"x": np.zeros((1, 1, 2, 2, 2), U8), "w": np.zeros((1, 1, 1, 1, 1), U8)}
    rejects_named("ConvInteger", inputs, "unsupported_attribute", 10, constants=("w",), match="3-D convolution")


# -- MatMulInteger, QLinearMatMul --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_matmul_integer_per_row_and_column_zero_points(dtype):
    """Per-row/per-column zero points, as the ONNX spec defines them (onnxruntime and the reference evaluator take
    scalars only, so numpy computes the expected product)."""
    rng = rng_for(f"mmi-{np.dtype(dtype).name}")
    lo, hi = (0, 256) if dtype == np.uint8 else (-128, 128)
    a, b = rng.integers(lo, hi, (3, 4)).astype(dtype), rng.integers(lo, hi, (4, 5)).astype(dtype)
    a_zp, b_zp = rng.integers(lo, hi, (3,)).astype(dtype), rng.integers(lo, hi, (5,)).astype(dtype)
    model = node_model_n("MatMulInteger", {"a": a, "b": b, "a_zp": a_zp, "b_zp": b_zp}, 10, {}, ("a_zp", "b_zp"))
    expected = (a.astype(np.int32) - a_zp.astype(np.int32)[:, None]) @ (b.astype(np.int32) - b_zp.astype(np.int32))
    got = run_ours(model, {"a": a, "b": b})[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


# The expected values of the integer ops come from exact integer math (integer_oracle), never from onnxruntime's
# integer kernels: their u8s8/s8s8 paths saturate int16 sums on AVX2 CPUs without VNNI. Its u8u8 path widens to
# int16 before multiplying and is exact on every CPU, so it stays as a second opinion for uint8 x uint8.


@pytest.mark.parametrize("b_dtype", [np.uint8, np.int8])
def test_matmul_integer_scalar_zero_points(b_dtype):
    rng = rng_for(f"mmi-scalar-{np.dtype(b_dtype).name}")
    info = np.iinfo(b_dtype)
    a = rng.integers(0, 256, (3, 40)).astype(np.uint8)
    b = rng.integers(info.min, int(info.max) + 1, (40, 5)).astype(b_dtype)
    a[0], b[:, 0] = 255, info.max  # pairs of 255 * 127 overflow an int16 sum: where saturating kernels go wrong
    inputs = {"a": a, "b": b, "a_zp": np.asarray(7, np.uint8), "b_zp": np.asarray(info.max // 3, b_dtype)}
    expected = [integer_oracle.matmul_accumulate(a, b, inputs["a_zp"], inputs["b_zp"])]
    check_n("MatMulInteger", inputs, 10, constants=("a_zp", "b_zp"), expected=expected)
    if b_dtype == np.uint8:
        check_n("MatMulInteger", inputs, 10, constants=("a_zp", "b_zp"))


def test_matmul_integer_without_zero_points_batched():
    rng = rng_for("mmi-batched")
    a, b = rng.integers(0, 256, (2, 3, 4)).astype(np.uint8), rng.integers(0, 256, (4, 2)).astype(np.uint8)
    check_n("MatMulInteger", {"a": a, "b": b}, 10, expected=[integer_oracle.matmul_accumulate(a, b)])
    check_n("MatMulInteger", {"a": a, "b": b}, 10)  # uint8 x uint8: onnxruntime is exact on every CPU


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_matmul_constant_params(dtype):
    rng = rng_for(f"qlmm-{np.dtype(dtype).name}")
    info = np.iinfo(dtype)
    a = rng.integers(info.min, int(info.max) + 1, (3, 4)).astype(dtype)
    b = rng.integers(info.min, int(info.max) + 1, (4, 2)).astype(dtype)
    params = {"a_s": np.asarray(0.02, F32), "a_zp": np.asarray(info.min + 120, dtype), "b_s": np.asarray(0.03, F32),
              "b_zp": np.asarray(info.min + 130, dtype), "y_s": np.asarray(0.5, F32),
              "y_zp": np.asarray(info.min + 100, dtype)}
    inputs = {"a": a, "a_s": params["a_s"], "a_zp": params["a_zp"], "b": b, "b_s": params["b_s"],
              "b_zp": params["b_zp"], "y_s": params["y_s"], "y_zp": params["y_zp"]}
    acc = integer_oracle.matmul_accumulate(a, b, params["a_zp"], params["b_zp"])
    expected = integer_oracle.requantize(acc, params["a_s"], params["b_s"], params["y_s"], params["y_zp"])
    check_n("QLinearMatMul", inputs, 10, constants=tuple(params), expected=[expected])


# -- dynamic dims (issue 26) -------------------------------------------------------------------------------------------

def test_dynamic_quantization_and_integer_convolutions_over_a_dynamic_batch():
    from onnx import TensorProto as TP
    from onnx import helper

    rng = np.random.default_rng(26)
    u8 = np.uint8
    nodes = [helper.make_node("DynamicQuantizeLinear", ["f"], ["q", "scale", "zero"]),
             helper.make_node("ConvInteger", ["x", "w", "xz"], ["conv"], pads=[1, 0, 0, 1]),
             helper.make_node("ConvInteger", ["line", "w1"], ["conv1d"], strides=[2]),
             helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["qconv"])]
    model = dynamic_model(nodes, [("f", TP.FLOAT, ["N", 5]), ("x", TP.UINT8, ["N", 2, 4, 4]),
                                  ("line", TP.UINT8, ["N", 2, "L"])],
                          [("q", TP.UINT8, ["N", 5]), ("scale", TP.FLOAT, []), ("zero", TP.UINT8, []),
                           ("conv", TP.INT32, ["N", 3, 4, 4]), ("conv1d", TP.INT32, ["N", 3, None]),
                           ("qconv", TP.UINT8, ["N", 3, 3, 3])],
                          [("w", rng.integers(0, 256, (3, 2, 2, 2)).astype(u8)), ("xz", np.asarray(100, u8)),
                           ("w1", rng.integers(0, 256, (3, 2, 3)).astype(u8)), ("xs", np.asarray(0.1, np.float32)),
                           ("ws", np.asarray(0.02, np.float32)), ("wz", np.asarray(128, u8)),
                           ("ys", np.asarray(0.5, np.float32)), ("yz", np.asarray(20, u8))])
    runs_like_onnxruntime(model, [{"f": rng.standard_normal((n, 5)).astype(np.float32),
                                   "x": rng.integers(0, 256, (n, 2, 4, 4)).astype(u8),
                                   "line": rng.integers(0, 256, (n, 2, n + 4)).astype(u8)} for n in (1, 2, 3)])
