"""Spatial family (NHWC): conv / transposed conv / depthwise conv, avg/max pool, resize bilinear, batch<->space,
depth<->space, LRN, pad, crop.

Oracles: onnxruntime single-node models (NHWC<->NCHW transposes done here), and hand-worked examples
(TF / NNAPI documentation examples, naive index formulas) where ONNX has no equivalent.
Every case runs through the end-to-end harness ``nnrt_onnx.testing.run_op`` (validation, defaults, fused activation,
quantization, EnableFloat16).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from onnx import TensorProto, helper
from support import ort_session

from nnrt_onnx.dtypes import dequantize, quantize
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as T
from nnrt_onnx.errors import NNRtError
from nnrt_onnx.tensor import QuantParam
from nnrt_onnx.testing.single_op import run_op

TOL = {
    np.dtype(np.float32): dict(rtol=1e-5, atol=1e-5),
    np.dtype(np.float16): dict(rtol=1e-2, atol=1e-2),
    "float16_mode": dict(rtol=2e-2, atol=2e-2),  # EnableFloat16: float32 model computed in float16
    "quant": dict(rtol=0, atol=1),  # one quantization step (rounding of the float oracle vs the kernel)
}
F32, F16 = np.dtype(np.float32), np.dtype(np.float16)


def rng_for(request) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.callspec.id.encode()))


def run(op, inputs, params=None, **kw):
    """One call of the op through the harness (a single place to change how kernels are driven)."""
    return run_op(op, inputs, params or {}, **kw)


def check(actual, expected, key):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    tol = TOL[key]
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), **tol)


def expect_error(code, op, inputs, params=None, **kw):
    with pytest.raises(NNRtError) as info:
        run(op, inputs, params, **kw)
    assert info.value.code == code, info.value


# ---------------------------------------------------------------------------------------------------------------
# onnxruntime oracle

_ONNX_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
               np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
               np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
               np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.float64): TensorProto.DOUBLE}


def ort_node(op_type, inputs: list, out_dtype=None, opset=19, **attrs):
    """Run one ONNX node; ``inputs`` is a list of arrays (None = omitted optional input)."""
    names, feeds, value_infos = [], {}, []
    for i, array in enumerate(inputs):
        if array is None:
            names.append("")
            continue
        name = f"in{i}"
        names.append(name)
        feeds[name] = array
        value_infos.append(helper.make_tensor_value_info(name, _ONNX_TYPES[array.dtype], list(array.shape)))
    out_dtype = np.dtype(out_dtype or inputs[0].dtype)
    node = helper.make_node(op_type, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", value_infos, [helper.make_tensor_value_info("y", _ONNX_TYPES[out_dtype], None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    session = ort_session(model)
    return session.run(None, feeds)[0]


def nchw(x):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def nhwc(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def f32(x):
    return np.asarray(x).astype(np.float32)


def act(y, fuse):
    return y if fuse == 0 else np.maximum(y, 0) if fuse == 1 else np.clip(y, 0, 6)


# ---------------------------------------------------------------------------------------------------------------
# convolution

def nnapi_same_pads(size, k, stride, dilation):
    """NeuralNetworks.h PaddingCode SAME: total = max(0, (out-1)*stride + (k-1)*dilation + 1 - size), out = ceil."""
    out = (size + stride - 1) // stride
    total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - size)
    return total // 2, (total + 1) // 2


def onnx_conv(x, w, b, strides, dilation, group, pads=None, auto_pad=None):
    attrs = dict(strides=list(strides), dilations=list(dilation), group=group)
    if auto_pad == "SAME_UPPER" and max(dilation) > 1:  # ORT has no SAME with dilation: explicit NNAPI pads
        (t, bo), (l, r) = (nnapi_same_pads(x.shape[1 + i], w.shape[1 + i], strides[i], dilation[i]) for i in (0, 1))
        auto_pad, pads = None, (t, bo, l, r)
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    else:
        t, bo, l, r = pads
        attrs["pads"] = [t, l, bo, r]
    return nhwc(ort_node("Conv", [nchw(f32(x)), f32(w).transpose(0, 3, 1, 2).copy(), f32(b)], **attrs))


CONV_CASES = {
    # id: (input NHWC, weight [O,kH,kW,Cg], group, params, oracle kwargs, fuse)
    "conv2d-default": ((2, 6, 7, 3), (4, 3, 3, 3), 1, {}, dict(pads=(0, 0, 0, 0)), 0),
    "conv2d-padlist": ((1, 6, 7, 3), (4, 3, 2, 3), 1, {T.OH_NN_CONV2D_PAD: [1, 2, 0, 1]}, dict(pads=(1, 2, 0, 1)), 0),
    "conv2d-padlist-via-padmode-type": ((1, 5, 5, 2), (3, 3, 3, 2), 1, {T.OH_NN_CONV2D_PAD_MODE: [2, 0, 1, 1]},
                                        dict(pads=(2, 0, 1, 1)), 0),
    "conv2d-same-stride2": ((1, 7, 8, 3), (5, 3, 4, 3), 1,
                            {T.OH_NN_CONV2D_PAD_MODE: 0, T.OH_NN_CONV2D_STRIDES: [2, 2]}, dict(auto_pad="SAME_UPPER"), 0),
    "conv2d-same-stride1-evenkernel": ((1, 6, 6, 2), (3, 2, 4, 2), 1, {T.OH_NN_CONV2D_PAD: 0},
                                       dict(auto_pad="SAME_UPPER"), 0),
    "conv2d-valid-stride2": ((1, 9, 8, 3), (2, 3, 3, 3), 1,
                             {T.OH_NN_CONV2D_PAD_MODE: 1, T.OH_NN_CONV2D_STRIDES: [2, 3]}, dict(auto_pad="VALID"), 0),
    "conv2d-valid-mode2-wins-over-padlist": ((1, 6, 6, 2), (2, 3, 3, 2), 1,
                                             {T.OH_NN_CONV2D_PAD_MODE: 2, T.OH_NN_CONV2D_PAD: [1, 1, 1, 1]},
                                             dict(auto_pad="VALID"), 0),
    "conv2d-dilation": ((1, 9, 10, 2), (3, 3, 2, 2), 1,
                        {T.OH_NN_CONV2D_DILATION: [2, 3], T.OH_NN_CONV2D_PAD: [1, 0, 2, 1]}, dict(pads=(1, 0, 2, 1)), 0),
    "conv2d-dilation-same-stride": ((1, 9, 10, 2), (3, 3, 3, 2), 1,
                                    {T.OH_NN_CONV2D_DILATION: [2, 2], T.OH_NN_CONV2D_STRIDES: [2, 2],
                                     T.OH_NN_CONV2D_PAD_MODE: 0}, dict(auto_pad="SAME_UPPER"), 0),
    "conv2d-group2": ((2, 5, 5, 4), (6, 3, 3, 2), 2, {T.OH_NN_CONV2D_GROUP: 2, T.OH_NN_CONV2D_PAD: [1, 1, 1, 1]},
                      dict(pads=(1, 1, 1, 1)), 0),
    "conv2d-group-depthwise": ((1, 6, 6, 4), (4, 3, 3, 1), 4, {T.OH_NN_CONV2D_GROUP: 4}, dict(pads=(0, 0, 0, 0)), 0),
    "conv2d-relu": ((1, 5, 5, 3), (4, 3, 3, 3), 1, {T.OH_NN_CONV2D_ACTIVATION_TYPE: 1}, dict(pads=(0, 0, 0, 0)), 1),
    "conv2d-padlist-relu6": ((1, 5, 5, 3), (4, 3, 3, 3), 1,
                             {T.OH_NN_CONV2D_ACTIVATION_TYPE: 2, T.OH_NN_CONV2D_PAD: [1, 1, 1, 1]},
                             dict(pads=(1, 1, 1, 1)), 2),
    "conv2d-1x1-large": ((1, 32, 32, 64), (128, 1, 1, 64), 1, {}, dict(pads=(0, 0, 0, 0)), 0),
}


def _conv_oracle_kwargs(params, group):
    strides = params.get(T.OH_NN_CONV2D_STRIDES, [1, 1])
    dilation = params.get(T.OH_NN_CONV2D_DILATION, [1, 1])
    return strides, dilation, group


@pytest.mark.parametrize("dtype", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(CONV_CASES), ids=list(CONV_CASES))
def test_conv2d(request, case, dtype):
    shape, wshape, group, params, oracle, fuse = CONV_CASES[case]
    rng = rng_for(request)
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal(wshape) / np.sqrt(np.prod(wshape[1:]))).astype(dtype)
    b = rng.standard_normal(wshape[0]).astype(dtype)
    strides, dilation, group = _conv_oracle_kwargs(params, group)
    expected = act(onnx_conv(x, w, b, strides, dilation, group, **oracle), fuse)
    (y,) = run("OH_NN_OPS_CONV2D", [x, w, b], params)
    assert y.dtype == dtype
    check(y, expected, dtype)


def test_conv2d_enable_float16():
    rng = np.random.default_rng(zlib.crc32(b"conv2d-enablef16"))
    x = rng.standard_normal((1, 8, 8, 4)).astype(np.float32)
    w = (rng.standard_normal((6, 3, 3, 4)) / 6).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    (y,) = run("OH_NN_OPS_CONV2D", [x, w, b], {T.OH_NN_CONV2D_PAD_MODE: 0}, float16=True, constant_inputs=[1, 2])
    assert y.dtype == np.float32
    check(y, onnx_conv(x, w, b, [1, 1], [1, 1], 1, auto_pad="SAME_UPPER"), "float16_mode")


def _qparams(real, dtype, per_channel_axis=None):
    """Quant params covering ``real`` for an 8-bit dtype."""
    lo, hi = (-128, 127) if dtype == np.int8 else (0, 255)
    if per_channel_axis is None:
        amin, amax = min(real.min(), 0.0), max(real.max(), 0.0)
        scale = (amax - amin) / (hi - lo) or 1.0
        zero = int(np.clip(round(lo - amin / scale), lo, hi))
        return QuantParam([scale], [zero], [8])
    moved = np.moveaxis(real, per_channel_axis, 0).reshape(real.shape[per_channel_axis], -1)
    scales = (np.abs(moved).max(axis=1) / 127.0).clip(1e-6).tolist()
    return QuantParam(scales, [0] * len(scales), [8] * len(scales), axis=per_channel_axis)


def _q(real, qp, dtype, axis=None):
    return quantize(real, dtype, qp.scales, qp.zero_points, axis=axis)


def _dq(q, qp, axis=None):
    return dequantize(q, qp.scales, qp.zero_points, axis=axis)


@pytest.mark.parametrize("case", ["conv2d-quant-int8-perchannel", "conv2d-quant-uint8-same"])
def test_conv2d_quantized(request, case):
    rng = rng_for(request)
    dtype = np.int8 if "int8" in case and "uint8" not in case else np.uint8
    x_real = rng.uniform(-1, 1, (1, 7, 7, 3)).astype(np.float32)
    if dtype == np.uint8:
        x_real = np.abs(x_real)
    w_real = rng.uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(np.float32)
    xq_p = _qparams(x_real, dtype)
    wq_p = _qparams(w_real, np.int8, per_channel_axis=0) if "perchannel" in case else _qparams(w_real, np.int8)
    xq = _q(x_real, xq_p, dtype)
    wq = _q(w_real, wq_p, np.int8, axis=0 if wq_p.count > 1 else None)
    bias_scale = xq_p.scales[0] * np.asarray(wq_p.scales)
    b_real = rng.uniform(-0.3, 0.3, 4)
    bq = np.rint(b_real / bias_scale).astype(np.int32)
    params = {T.OH_NN_CONV2D_PAD_MODE: 0} if "same" in case else {}
    oracle = dict(auto_pad="SAME_UPPER") if "same" in case else dict(pads=(0, 0, 0, 0))
    expected_real = onnx_conv(_dq(xq, xq_p), _dq(wq, wq_p, 0 if wq_p.count > 1 else None),
                              (bq * bias_scale).astype(np.float32), [1, 1], [1, 1], 1, **oracle)
    yq_p = _qparams(expected_real, dtype)
    out_shape = expected_real.shape
    (y,) = run("OH_NN_OPS_CONV2D", [xq, wq, bq], params, input_quant={0: xq_p, 1: wq_p}, output_quant={0: yq_p},
               output_dtypes=[dtype], output_shapes=[out_shape], constant_inputs=[1, 2])
    assert y.dtype == dtype
    check(y, _q(expected_real, yq_p, dtype), "quant")


@pytest.mark.parametrize("case", ["conv2d-err-channels", "conv2d-err-int32-unsupported", "conv2d-err-kernel-too-big",
                                  "conv2d-err-outc-not-divisible", "conv2d-err-int-bias-without-quant"])
def test_conv2d_errors(case):
    x = np.zeros((1, 4, 4, 4), np.float32)
    w = np.zeros((4, 3, 3, 4), np.float32)
    b = np.zeros(4, np.float32)
    if case == "conv2d-err-channels":
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_CONV2D", [x, w[..., :3], b])
    elif case == "conv2d-err-int32-unsupported":
        expect_error(RC.OH_NN_UNSUPPORTED, "OH_NN_OPS_CONV2D", [x.astype(np.int32), w.astype(np.int32), b.astype(np.int32)],
                     output_dtypes=[np.int32], output_shapes=[(1, 2, 2, 4)])
    elif case == "conv2d-err-kernel-too-big":
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_CONV2D", [x, np.zeros((4, 5, 5, 4), np.float32), b])
    elif case == "conv2d-err-outc-not-divisible":
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_CONV2D", [x, np.zeros((3, 3, 3, 2), np.float32), b[:3]],
                     {T.OH_NN_CONV2D_GROUP: 2})
    else:
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_CONV2D", [x, w, b.astype(np.int32)],
                     output_dtypes=[np.float32], output_shapes=[(1, 2, 2, 4)])


# ---------------------------------------------------------------------------------------------------------------
# depthwise convolution

DW_CASES = {
    # id: (input, multiplier, k, params, oracle)
    "depthwise_conv2d_native-mult1": ((1, 6, 7, 3), 1, (3, 3), {}, dict(pads=(0, 0, 0, 0))),
    "depthwise_conv2d_native-mult2-padlist-stride": ((2, 7, 7, 3), 2, (3, 2),
                                                     {T.OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD: [1, 0, 1, 1],
                                                      T.OH_NN_DEPTHWISE_CONV2D_NATIVE_STRIDES: [2, 1]},
                                                     dict(pads=(1, 0, 1, 1))),
    "depthwise_conv2d_native-same-dilation": ((1, 8, 9, 4), 1, (3, 3),
                                              {T.OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD_MODE: 0,
                                               T.OH_NN_DEPTHWISE_CONV2D_NATIVE_DILATION: [2, 2]},
                                              dict(auto_pad="SAME_UPPER")),
    "depthwise_conv2d_native-valid-stride2-relu6": ((1, 9, 9, 2), 3, (3, 3),
                                                    {T.OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD_MODE: 1,
                                                     T.OH_NN_DEPTHWISE_CONV2D_NATIVE_STRIDES: [2, 2],
                                                     T.OH_NN_DEPTHWISE_CONV2D_NATIVE_ACTIVATION_TYPE: 2},
                                                    dict(auto_pad="VALID")),
}


@pytest.mark.parametrize("dtype", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(DW_CASES), ids=list(DW_CASES))
def test_depthwise_conv2d_native(request, case, dtype):
    shape, mult, (kh, kw), params, oracle = DW_CASES[case]
    rng = rng_for(request)
    c = shape[3]
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((c * mult, kh, kw, 1)).astype(dtype) / 3
    b = rng.standard_normal(c * mult).astype(dtype)
    strides = params.get(T.OH_NN_DEPTHWISE_CONV2D_NATIVE_STRIDES, [1, 1])
    dilation = params.get(T.OH_NN_DEPTHWISE_CONV2D_NATIVE_DILATION, [1, 1])
    fuse = params.get(T.OH_NN_DEPTHWISE_CONV2D_NATIVE_ACTIVATION_TYPE, 0)
    expected = act(onnx_conv(x, w, b, strides, dilation, c, **oracle), fuse)
    (y,) = run("OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE", [x, w, b], params)
    assert y.dtype == dtype
    check(y, expected, dtype)


def test_depthwise_conv2d_native_quantized():
    rng = np.random.default_rng(zlib.crc32(b"depthwise_conv2d_native-quant-uint8"))
    x_real = rng.uniform(0, 2, (1, 6, 6, 3)).astype(np.float32)
    w_real = rng.uniform(-1, 1, (6, 3, 3, 1)).astype(np.float32)
    xq_p, wq_p = _qparams(x_real, np.uint8), _qparams(w_real, np.int8, per_channel_axis=0)
    xq, wq = _q(x_real, xq_p, np.uint8), _q(w_real, wq_p, np.int8, axis=0)
    bias_scale = xq_p.scales[0] * np.asarray(wq_p.scales)
    bq = np.rint(rng.uniform(-1, 1, 6) / bias_scale).astype(np.int32)
    expected_real = onnx_conv(_dq(xq, xq_p), _dq(wq, wq_p, 0), (bq * bias_scale).astype(np.float32), [1, 1], [1, 1], 3,
                              auto_pad="SAME_UPPER")
    yq_p = _qparams(expected_real, np.uint8)
    (y,) = run("OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE", [xq, wq, bq], {T.OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD_MODE: 0},
               input_quant={0: xq_p, 1: wq_p}, output_quant={0: yq_p}, output_dtypes=[np.uint8],
               output_shapes=[expected_real.shape], constant_inputs=[1, 2])
    check(y, _q(expected_real, yq_p, np.uint8), "quant")


@pytest.mark.parametrize("case", ["depthwise_conv2d_native-err-weight-not-1", "depthwise_conv2d_native-err-multiplier"])
def test_depthwise_conv2d_native_errors(case):
    x = np.zeros((1, 4, 4, 3), np.float32)
    if case.endswith("weight-not-1"):
        w, b = np.zeros((3, 3, 3, 3), np.float32), np.zeros(3, np.float32)
    else:
        w, b = np.zeros((4, 3, 3, 1), np.float32), np.zeros(4, np.float32)
    expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE", [x, w, b])


# ---------------------------------------------------------------------------------------------------------------
# transposed convolution

def onnx_conv_transpose(x, w, b, strides, dilation, group, pads=None, output_padding=(0, 0), auto_pad=None):
    """w [O, kH, kW, Cin/g] (header layout) -> ONNX [Cin, O/g, kH, kW]."""
    o, kh, kw, cg = w.shape
    og = o // group
    w_onnx = f32(w).reshape(group, og, kh, kw, cg).transpose(0, 4, 1, 2, 3).reshape(group * cg, og, kh, kw)
    attrs = dict(strides=list(strides), dilations=list(dilation), group=group, output_padding=list(output_padding))
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    else:
        t, bo, l, r = pads
        attrs["pads"] = [t, l, bo, r]
    return nhwc(ort_node("ConvTranspose", [nchw(f32(x)), np.ascontiguousarray(w_onnx), f32(b)], **attrs))


def _same_transpose_pads(size, k, s, d):
    """The documented SAME rule: output in*stride, crop start = max(full - in*stride, 0) // 2."""
    full = (size - 1) * s + (k - 1) * d + 1
    total = full - size * s
    begin = max(total, 0) // 2
    return begin, total - begin


TC_CASES = {
    # id: (input, weight [O,kH,kW,Cg], group, params, oracle)
    "conv2d_transpose-default": ((1, 4, 5, 3), (2, 3, 3, 3), 1, {}, dict(pads=(0, 0, 0, 0))),
    "conv2d_transpose-padlist-stride2": ((2, 4, 4, 3), (4, 3, 3, 3), 1,
                                         {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 2], T.OH_NN_CONV2D_TRANSPOSE_PAD: [1, 0, 1, 2]},
                                         dict(pads=(1, 0, 1, 2))),
    "conv2d_transpose-outpad": ((1, 3, 4, 2), (3, 3, 3, 2), 1,
                                {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 3], T.OH_NN_CONV2D_TRANSPOSE_PAD: [1, 1, 1, 1],
                                 T.OH_NN_CONV2D_TRANSPOSE_OUTPUT_PADDINGS: [1, 2]},
                                dict(pads=(1, 1, 1, 1), output_padding=(1, 2))),
    "conv2d_transpose-same-stride2": ((1, 4, 5, 3), (2, 3, 3, 3), 1,
                                      {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 2], T.OH_NN_CONV2D_TRANSPOSE_PAD_MODE: 0},
                                      dict(auto_pad="SAME_UPPER")),
    "conv2d_transpose-same-evenkernel": ((1, 4, 4, 2), (2, 4, 4, 2), 1,
                                         {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 2], T.OH_NN_CONV2D_TRANSPOSE_PAD: 0},
                                         dict(auto_pad="SAME_UPPER")),
    # k < stride: SAME output in*stride exceeds the full size by one row/col, which holds only the bias (= ONNX with
    # output_padding 1 and no pads)
    "conv2d_transpose-same-kernel-smaller-than-stride": ((1, 3, 4, 2), (3, 1, 1, 2), 1,
                                                         {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 2],
                                                          T.OH_NN_CONV2D_TRANSPOSE_PAD_MODE: 0},
                                                         dict(pads=(0, 0, 0, 0), output_padding=(1, 1))),
    "conv2d_transpose-valid": ((1, 3, 3, 2), (2, 2, 3, 2), 1,
                               {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 2], T.OH_NN_CONV2D_TRANSPOSE_PAD_MODE: 1},
                               dict(auto_pad="VALID")),
    "conv2d_transpose-dilation-group": ((1, 4, 4, 4), (6, 3, 2, 2), 2,
                                        {T.OH_NN_CONV2D_TRANSPOSE_DILATION: [2, 1], T.OH_NN_CONV2D_TRANSPOSE_GROUP: 2,
                                         T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [1, 2], T.OH_NN_CONV2D_TRANSPOSE_PAD: [1, 1, 0, 1]},
                                        dict(pads=(1, 1, 0, 1))),
    "conv2d_transpose-same-outpad-relu": ((1, 3, 3, 2), (2, 3, 3, 2), 1,
                                          {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 2], T.OH_NN_CONV2D_TRANSPOSE_PAD_MODE: 0,
                                           T.OH_NN_CONV2D_TRANSPOSE_OUTPUT_PADDINGS: [1, 1],
                                           T.OH_NN_CONV2D_TRANSPOSE_ACTIVATION_TYPE: 1},
                                          "same-outpad"),
}


@pytest.mark.parametrize("dtype", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(TC_CASES), ids=list(TC_CASES))
def test_conv2d_transpose(request, case, dtype):
    shape, wshape, group, params, oracle = TC_CASES[case]
    rng = rng_for(request)
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal(wshape) / 3).astype(dtype)
    b = rng.standard_normal(wshape[0]).astype(dtype)
    strides = params.get(T.OH_NN_CONV2D_TRANSPOSE_STRIDES, [1, 1])
    dilation = params.get(T.OH_NN_CONV2D_TRANSPOSE_DILATION, [1, 1])
    fuse = params.get(T.OH_NN_CONV2D_TRANSPOSE_ACTIVATION_TYPE, 0)
    if oracle == "same-outpad":  # SAME + outputPads: size in*stride + outputPads, extra rows at the bottom/right
        th = _same_transpose_pads(shape[1], wshape[1], strides[0], dilation[0])
        tw = _same_transpose_pads(shape[2], wshape[2], strides[1], dilation[1])
        oracle = dict(pads=(th[0], th[1], tw[0], tw[1]), output_padding=tuple(params[T.OH_NN_CONV2D_TRANSPOSE_OUTPUT_PADDINGS]))
    expected = act(onnx_conv_transpose(x, w, b, strides, dilation, group, **oracle), fuse)
    (y,) = run("OH_NN_OPS_CONV2D_TRANSPOSE", [x, w, b], params)
    assert y.dtype == dtype
    if "same" in case:
        out_pad = params.get(T.OH_NN_CONV2D_TRANSPOSE_OUTPUT_PADDINGS, [0, 0])
        assert y.shape[1:3] == (shape[1] * strides[0] + out_pad[0], shape[2] * strides[1] + out_pad[1])
    check(y, expected, dtype)


def test_conv2d_transpose_quantized():
    rng = np.random.default_rng(zlib.crc32(b"conv2d_transpose-quant-int8"))
    x_real = rng.uniform(-1, 1, (1, 4, 4, 2)).astype(np.float32)
    w_real = rng.uniform(-1, 1, (3, 3, 3, 2)).astype(np.float32)
    xq_p, wq_p = _qparams(x_real, np.int8), _qparams(w_real, np.int8)
    xq, wq = _q(x_real, xq_p, np.int8), _q(w_real, wq_p, np.int8)
    bias_scale = xq_p.scales[0] * wq_p.scales[0]
    bq = np.rint(rng.uniform(-1, 1, 3) / bias_scale).astype(np.int32)
    expected_real = onnx_conv_transpose(_dq(xq, xq_p), _dq(wq, wq_p), (bq * bias_scale).astype(np.float32), [2, 2],
                                        [1, 1], 1, pads=(1, 1, 1, 1), output_padding=(1, 1))
    yq_p = _qparams(expected_real, np.int8)
    (y,) = run("OH_NN_OPS_CONV2D_TRANSPOSE", [xq, wq, bq],
               {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 2], T.OH_NN_CONV2D_TRANSPOSE_PAD: [1, 1, 1, 1],
                T.OH_NN_CONV2D_TRANSPOSE_OUTPUT_PADDINGS: [1, 1]},
               input_quant={0: xq_p, 1: wq_p}, output_quant={0: yq_p}, output_dtypes=[np.int8],
               output_shapes=[expected_real.shape], constant_inputs=[1, 2])
    check(y, _q(expected_real, yq_p, np.int8), "quant")


@pytest.mark.parametrize("case", ["conv2d_transpose-err-outpad-ge-stride", "conv2d_transpose-err-channels",
                                  "conv2d_transpose-err-bool-unsupported"])
def test_conv2d_transpose_errors(case):
    x = np.zeros((1, 3, 3, 2), np.float32)
    w = np.zeros((2, 3, 3, 2), np.float32)
    b = np.zeros(2, np.float32)
    if case.endswith("outpad-ge-stride"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_CONV2D_TRANSPOSE", [x, w, b],
                     {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 2], T.OH_NN_CONV2D_TRANSPOSE_OUTPUT_PADDINGS: [2, 0]})
    elif case.endswith("channels"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_CONV2D_TRANSPOSE", [x, w[..., :1], b])
    else:
        expect_error(RC.OH_NN_UNSUPPORTED, "OH_NN_OPS_CONV2D_TRANSPOSE",
                     [x.astype(bool), w.astype(bool), b.astype(bool)],
                     output_dtypes=[np.bool_], output_shapes=[(1, 5, 5, 2)])


# ---------------------------------------------------------------------------------------------------------------
# pooling

def onnx_pool(kind, x, kernel, strides, pads=None, auto_pad=None, ceil=0):
    if kernel == "global":
        return nhwc(ort_node("GlobalAveragePool" if kind == "avg" else "GlobalMaxPool", [nchw(x)]))
    attrs = dict(kernel_shape=list(kernel), strides=list(strides), ceil_mode=ceil)
    if kind == "avg":
        attrs["count_include_pad"] = 0
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    else:
        t, b, l, r = pads
        attrs["pads"] = [t, l, b, r]
    return nhwc(ort_node("AveragePool" if kind == "avg" else "MaxPool", [nchw(x)], **attrs))


def pool_params(kind, kernel=None, stride=None, pad_mode=None, pad=None, round_mode=None, global_=None, fuse=None,
                alias=False):
    own, other = ("AVG", "MAX") if kind == "avg" else ("MAX", "AVG")
    prefix = other if alias else own
    p = {}
    if kernel is not None:
        p[T[f"OH_NN_{prefix}_POOL_KERNEL_SIZE"]] = kernel
    if stride is not None:
        p[T[f"OH_NN_{prefix}_POOL_STRIDE"]] = stride
    if pad_mode is not None:
        p[T[f"OH_NN_{prefix}_POOL_PAD_MODE"]] = pad_mode
    if pad is not None:
        p[T[f"OH_NN_{prefix}_POOL_PAD"]] = pad
    if round_mode is not None:
        p[T[f"OH_NN_{prefix}_POOL_ROUND_MODE"]] = round_mode
    if global_ is not None:
        p[T[f"OH_NN_{prefix}_POOL_GLOBAL"]] = global_
    if fuse is not None:
        p[T[f"OH_NN_{prefix}_POOL_ACTIVATION_TYPE"]] = fuse
    return p


POOL_CASES = {
    # id suffix: (input shape, param kwargs, oracle kwargs)
    "k2s2": ((2, 6, 8, 3), dict(kernel=[2, 2], stride=[2, 2]), dict(kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    "k3-default-stride": ((1, 5, 6, 2), dict(kernel=[3, 2]), dict(kernel=(3, 2), strides=(1, 1), pads=(0, 0, 0, 0))),
    "padlist": ((1, 6, 7, 3), dict(kernel=[3, 3], stride=[2, 2], pad=[1, 1, 2, 0]),
                dict(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 2, 0))),
    "same-stride2": ((1, 7, 8, 3), dict(kernel=[3, 3], stride=[2, 2], pad_mode=0),
                     dict(kernel=(3, 3), strides=(2, 2), auto_pad="SAME_UPPER")),
    "same-evenkernel": ((1, 6, 5, 2), dict(kernel=[2, 4], stride=[1, 1], pad_mode=0),
                        dict(kernel=(2, 4), strides=(1, 1), auto_pad="SAME_UPPER")),
    "same-ceil": ((1, 7, 7, 2), dict(kernel=[3, 3], stride=[2, 2], pad_mode=0, round_mode=1),
                  dict(kernel=(3, 3), strides=(2, 2), auto_pad="SAME_UPPER")),
    "valid": ((1, 7, 8, 2), dict(kernel=[3, 2], stride=[2, 3], pad_mode=1),
              dict(kernel=(3, 2), strides=(2, 3), auto_pad="VALID")),
    "valid-ceil": ((1, 7, 8, 2), dict(kernel=[2, 2], stride=[2, 3], pad_mode=2, round_mode=1),
                   dict(kernel=(2, 2), strides=(2, 3), pads=(0, 0, 0, 0), ceil=1)),
    "padlist-ceil": ((1, 6, 7, 3), dict(kernel=[3, 3], stride=[2, 2], pad=[1, 0, 1, 1], round_mode=1),
                     dict(kernel=(3, 3), strides=(2, 2), pads=(1, 0, 1, 1), ceil=1)),
    "padlist-ceil-drop-window-in-end-pad": ((1, 4, 5, 2), dict(kernel=[2, 2], stride=[2, 2], pad=[0, 1, 0, 1], round_mode=1),
                                            dict(kernel=(2, 2), strides=(2, 2), pads=(0, 1, 0, 1), ceil=1)),
    "padlist-floor": ((1, 6, 7, 3), dict(kernel=[3, 3], stride=[2, 2], pad=[1, 0, 1, 1], round_mode=0),
                      dict(kernel=(3, 3), strides=(2, 2), pads=(1, 0, 1, 1))),
    "global": ((2, 5, 6, 3), dict(global_=True), dict(kernel="global", strides=None)),
    "global-ignores-kernel": ((1, 4, 4, 2), dict(kernel=[2, 2], stride=[2, 2], global_=True),
                              dict(kernel="global", strides=None)),
    "relu6": ((1, 6, 6, 2), dict(kernel=[2, 2], stride=[2, 2], fuse=2), dict(kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    "alias-params": ((1, 6, 6, 2), dict(kernel=[3, 3], stride=[1, 2], pad=[1, 1, 1, 1], alias=True),
                     dict(kernel=(3, 3), strides=(1, 2), pads=(1, 1, 1, 1))),
}


POOL_IDS = [(kind, case) for kind in ("avg", "max") for case in POOL_CASES]


@pytest.mark.parametrize("dtype", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("kind,case", POOL_IDS, ids=[f"{kind}_pool-{case}" for kind, case in POOL_IDS])
def test_pool(request, kind, case, dtype):
    shape, pkw, okw = POOL_CASES[case]
    rng = rng_for(request)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    op = "OH_NN_OPS_AVG_POOL" if kind == "avg" else "OH_NN_OPS_MAX_POOL"
    expected = act(onnx_pool(kind, f32(x), **okw), pkw.get("fuse", 0))
    (y,) = run(op, [x], pool_params(kind, **pkw))
    assert y.dtype == dtype
    check(y, expected, dtype)


@pytest.mark.parametrize("case", ["max_pool-int8-padlist", "max_pool-uint8-same", "max_pool-int32-ceil"])
def test_max_pool_integers(request, case):
    dtype = {"int8": np.int8, "uint8": np.uint8, "int32": np.int32}[case.split("-")[1]]
    rng = rng_for(request)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (1, 6, 7, 2), endpoint=True).astype(dtype)
    if "padlist" in case:
        pkw, okw = dict(kernel=[3, 3], stride=[2, 2], pad=[1, 1, 1, 1]), dict(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    elif "same" in case:
        pkw, okw = dict(kernel=[3, 3], stride=[2, 2], pad_mode=0), dict(kernel=(3, 3), strides=(2, 2), auto_pad="SAME_UPPER")
    else:
        pkw, okw = dict(kernel=[2, 2], stride=[2, 2], round_mode=1), dict(kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0), ceil=1)
    # exact oracle: max pooling of float64 copies of the integers (exactly representable)
    expected = onnx_pool("max", x.astype(np.float64), **okw)
    (y,) = run("OH_NN_OPS_MAX_POOL", [x], pool_params("max", **pkw))
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, expected.astype(dtype))


@pytest.mark.parametrize("kind,qdtype", [(k, d) for k in ("avg", "max") for d in (np.int8, np.uint8)],
                         ids=[f"{k}_pool-quant-{d}" for k in ("avg", "max") for d in ("int8", "uint8")])
def test_pool_quantized(request, kind, qdtype):
    rng = rng_for(request)
    x_real = rng.uniform(-2, 2, (1, 7, 7, 3)).astype(np.float32)
    if qdtype == np.uint8:
        x_real = np.abs(x_real)
    qp = _qparams(x_real, qdtype)
    xq = _q(x_real, qp, qdtype)
    expected_real = onnx_pool(kind, _dq(xq, qp), kernel=(3, 3), strides=(2, 2), auto_pad="SAME_UPPER")
    op = "OH_NN_OPS_AVG_POOL" if kind == "avg" else "OH_NN_OPS_MAX_POOL"
    (y,) = run(op, [xq], pool_params(kind, kernel=[3, 3], stride=[2, 2], pad_mode=0), input_quant={0: qp},
               output_quant={0: qp}, output_dtypes=[qdtype])
    assert y.dtype == qdtype
    check(y, _q(expected_real, qp, qdtype), "quant")


def test_avg_pool_enable_float16():
    rng = np.random.default_rng(zlib.crc32(b"avg_pool-enablef16"))
    x = rng.standard_normal((1, 8, 8, 4)).astype(np.float32)
    (y,) = run("OH_NN_OPS_AVG_POOL", [x], pool_params("avg", kernel=[3, 3], stride=[1, 1], pad=[1, 1, 1, 1]), float16=True)
    assert y.dtype == np.float32
    check(y, onnx_pool("avg", x, kernel=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1)), "float16_mode")


def test_avg_pool_excludes_padding_worked_example():
    """NNAPI AVERAGE_POOL_2D divides by the number of real (unpadded) elements: hand-computed corner values."""
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)  # [[1,2,3],[4,5,6],[7,8,9]]
    (y,) = run("OH_NN_OPS_AVG_POOL", [x], pool_params("avg", kernel=[3, 3], stride=[1, 1], pad_mode=0))
    expected = np.array([[3.0, 3.5, 4.0], [4.5, 5.0, 5.5], [6.0, 6.5, 7.0]], np.float32)  # e.g. (1+2+4+5)/4 = 3
    np.testing.assert_allclose(y[0, :, :, 0], expected, rtol=1e-6)


@pytest.mark.parametrize("case", ["avg_pool-err-no-kernel", "avg_pool-err-int32-unsupported",
                                  "max_pool-err-pad-ge-kernel", "max_pool-err-kernel-too-big", "max_pool-err-rank3",
                                  "avg_pool-err-round-mode"])
def test_pool_errors(case):
    x = np.zeros((1, 4, 4, 2), np.float32)
    if case == "avg_pool-err-no-kernel":
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_AVG_POOL", [x], output_dtypes=[np.float32],
                     output_shapes=[(1, 4, 4, 2)])
    elif case == "avg_pool-err-int32-unsupported":
        expect_error(RC.OH_NN_UNSUPPORTED, "OH_NN_OPS_AVG_POOL", [x.astype(np.int32)], pool_params("avg", kernel=[2, 2]),
                     output_dtypes=[np.int32], output_shapes=[(1, 3, 3, 2)])
    elif case == "max_pool-err-pad-ge-kernel":
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_MAX_POOL", [x], pool_params("max", kernel=[2, 2], pad=[2, 0, 0, 0]),
                     output_dtypes=[np.float32], output_shapes=[(1, 5, 3, 2)])
    elif case == "max_pool-err-kernel-too-big":
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_MAX_POOL", [x], pool_params("max", kernel=[5, 5]),
                     output_dtypes=[np.float32], output_shapes=[(1, 1, 1, 2)])
    elif case == "max_pool-err-rank3":
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_MAX_POOL", [x[0]], pool_params("max", kernel=[2, 2]),
                     output_dtypes=[np.float32], output_shapes=[(3, 3, 2)])
    else:  # round mode 2 is rejected by validation (range 0..1)
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_AVG_POOL", [x], pool_params("avg", kernel=[2, 2], round_mode=2),
                     output_dtypes=[np.float32], output_shapes=[(1, 3, 3, 2)])


# ---------------------------------------------------------------------------------------------------------------
# resize bilinear

_MODES = {0: "asymmetric", 1: "align_corners", 2: "half_pixel"}


def onnx_resize(x, out_h, out_w, mode):
    n, h, w, c = x.shape
    sizes = np.array([n, c, out_h, out_w], np.int64)
    return nhwc(ort_node("Resize", [nchw(f32(x)), None, None, sizes], mode="linear",
                         coordinate_transformation_mode=_MODES[mode]))


RESIZE_CASES = {
    # id: (input, new_h, new_w, mode, preserve, expected output size or None (= new size), exclude_outside)
    "resize_bilinear-asymmetric-up": ((1, 4, 5, 3), 9, 7, 0, False, None, 0),
    "resize_bilinear-asymmetric-down": ((2, 8, 9, 2), 3, 4, 0, False, None, 0),
    "resize_bilinear-align-corners-up": ((1, 4, 5, 3), 9, 11, 1, False, None, 0),
    "resize_bilinear-align-corners-down": ((1, 9, 7, 2), 4, 3, 1, False, None, 0),
    "resize_bilinear-align-corners-to-1": ((1, 5, 4, 2), 1, 3, 1, False, None, 0),
    "resize_bilinear-half-pixel-up": ((1, 4, 5, 3), 10, 8, 2, False, None, 0),
    "resize_bilinear-half-pixel-down": ((1, 9, 10, 2), 4, 3, 2, False, None, 0),
    "resize_bilinear-half-pixel-exclude-outside": ((1, 4, 4, 2), 7, 9, 2, False, None, 1),
    "resize_bilinear-asymmetric-exclude-outside": ((1, 4, 4, 2), 7, 9, 0, False, None, 1),
    # preserve aspect ratio (TF): scale = min(newH/h, newW/w), size = round(scale * [h, w])
    "resize_bilinear-preserve-width-limits": ((1, 4, 6, 2), 20, 9, 0, True, (6, 9), 0),  # scale 1.5
    "resize_bilinear-preserve-height-limits": ((1, 4, 6, 2), 6, 30, 2, True, (6, 9), 0),  # scale 1.5
    "resize_bilinear-preserve-round": ((1, 3, 7, 1), 10, 10, 1, True, (4, 10), 0),  # scale 10/7: 3*10/7=4.29 -> 4
}


@pytest.mark.parametrize("dtype", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(RESIZE_CASES), ids=list(RESIZE_CASES))
def test_resize_bilinear(request, case, dtype):
    shape, nh, nw, mode, preserve, size, exclude = RESIZE_CASES[case]
    rng = rng_for(request)
    x = rng.uniform(0, 4, shape).astype(dtype)
    out_h, out_w = size or (nh, nw)
    expected = onnx_resize(x, out_h, out_w, mode)
    params = {T.OH_NN_RESIZE_BILINEAR_NEW_HEIGHT: nh, T.OH_NN_RESIZE_BILINEAR_NEW_WIDTH: nw,
              T.OH_NN_RESIZE_BILINEAR_COORDINATE_TRANSFORM_MODE: mode,
              T.OH_NN_RESIZE_BILINEAR_PRESERVE_ASPECT_RATIO: preserve,
              T.OH_NN_RESIZE_BILINEAR_EXCLUDE_OUTSIDE: exclude}
    if mode == 0 and "exclude" not in case:
        params.pop(T.OH_NN_RESIZE_BILINEAR_COORDINATE_TRANSFORM_MODE)  # default is ASYMMETRIC
    (y,) = run("OH_NN_OPS_RESIZE_BILINEAR", [x], params)
    assert y.dtype == dtype and y.shape == (shape[0], out_h, out_w, shape[3])
    check(y, expected, dtype)


def test_resize_bilinear_worked_example():
    """Hand-computed: 1-D row [0, 10] to width 4. asymmetric src = 0, .5, 1, 1.5 -> 0, 5, 10, 10;
    align corners src = 0, 1/3, 2/3, 1 -> 0, 3.33, 6.67, 10; half pixel src = -.25, .25, .75, 1.25 -> 0, 2.5, 7.5, 10."""
    x = np.array([0, 10], np.float32).reshape(1, 1, 2, 1)
    expected = {0: [0, 5, 10, 10], 1: [0, 10 / 3, 20 / 3, 10], 2: [0, 2.5, 7.5, 10]}
    for mode, row in expected.items():
        (y,) = run("OH_NN_OPS_RESIZE_BILINEAR", [x], {T.OH_NN_RESIZE_BILINEAR_NEW_HEIGHT: 1,
                                                      T.OH_NN_RESIZE_BILINEAR_NEW_WIDTH: 4,
                                                      T.OH_NN_RESIZE_BILINEAR_COORDINATE_TRANSFORM_MODE: mode})
        np.testing.assert_allclose(y.reshape(-1), row, rtol=1e-6, atol=1e-6)


def test_resize_bilinear_quantized():
    rng = np.random.default_rng(zlib.crc32(b"resize_bilinear-quant-uint8"))
    x_real = rng.uniform(0, 3, (1, 5, 5, 2)).astype(np.float32)
    qp = _qparams(x_real, np.uint8)
    xq = _q(x_real, qp, np.uint8)
    expected_real = onnx_resize(_dq(xq, qp), 8, 9, 2)
    (y,) = run("OH_NN_OPS_RESIZE_BILINEAR", [xq], {T.OH_NN_RESIZE_BILINEAR_NEW_HEIGHT: 8,
                                                   T.OH_NN_RESIZE_BILINEAR_NEW_WIDTH: 9,
                                                   T.OH_NN_RESIZE_BILINEAR_COORDINATE_TRANSFORM_MODE: 2},
               input_quant={0: qp}, output_quant={0: qp}, output_dtypes=[np.uint8])
    check(y, _q(expected_real, qp, np.uint8), "quant")


@pytest.mark.parametrize("case", ["resize_bilinear-err-mode3", "resize_bilinear-err-no-size",
                                  "resize_bilinear-err-int32-unsupported", "resize_bilinear-err-exclude2"])
def test_resize_bilinear_errors(case):
    x = np.zeros((1, 4, 4, 2), np.float32)
    size = {T.OH_NN_RESIZE_BILINEAR_NEW_HEIGHT: 8, T.OH_NN_RESIZE_BILINEAR_NEW_WIDTH: 8}
    shape_kw = dict(output_dtypes=[np.float32], output_shapes=[(1, 8, 8, 2)])
    if case.endswith("mode3"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_RESIZE_BILINEAR", [x],
                     {**size, T.OH_NN_RESIZE_BILINEAR_COORDINATE_TRANSFORM_MODE: 3}, **shape_kw)
    elif case.endswith("no-size"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_RESIZE_BILINEAR", [x], {}, **shape_kw)
    elif case.endswith("exclude2"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_RESIZE_BILINEAR", [x],
                     {**size, T.OH_NN_RESIZE_BILINEAR_EXCLUDE_OUTSIDE: 2}, **shape_kw)
    else:
        expect_error(RC.OH_NN_UNSUPPORTED, "OH_NN_OPS_RESIZE_BILINEAR", [x.astype(np.int32)], size,
                     output_dtypes=[np.int32], output_shapes=[(1, 8, 8, 2)])


# ---------------------------------------------------------------------------------------------------------------
# space_to_batch_nd / batch_to_space_nd: TF documentation examples + a naive index-formula oracle

def naive_space_to_batch(x, block, pads, fill=0):
    """TF definition, element by element: out[(i*b1 + j)*N + n, h, w, c] = padded[n, h*b0 + i, w*b1 + j, c]."""
    n, h, w, c = x.shape
    b0, b1 = block
    hp, wp = h + pads[0] + pads[1], w + pads[2] + pads[3]
    out = np.full((n * b0 * b1, hp // b0, wp // b1, c), fill, x.dtype)
    for i in range(b0):
        for j in range(b1):
            for nn in range(n):
                for hh in range(hp // b0):
                    for ww in range(wp // b1):
                        sh, sw = hh * b0 + i - pads[0], ww * b1 + j - pads[2]
                        if 0 <= sh < h and 0 <= sw < w:
                            out[(i * b1 + j) * n + nn, hh, ww] = x[nn, sh, sw]
    return out


def naive_batch_to_space(x, block, crops):
    n, h, w, c = x.shape
    b0, b1 = block
    nb = n // (b0 * b1)
    full = np.zeros((nb, h * b0, w * b1, c), x.dtype)
    for i in range(b0):
        for j in range(b1):
            for nn in range(nb):
                for hh in range(h):
                    for ww in range(w):
                        full[nn, hh * b0 + i, ww * b1 + j] = x[(i * b1 + j) * nb + nn, hh, ww]
    return full[:, crops[0]: h * b0 - crops[1], crops[2]: w * b1 - crops[3]]


# TF tf.space_to_batch_nd doc example 4: x [2,2,4,1], block [2,2], paddings [[0,0],[2,0]].
_S2B_X = np.array([[[[1], [2], [3], [4]], [[5], [6], [7], [8]]],
                   [[[9], [10], [11], [12]], [[13], [14], [15], [16]]]], np.float32)
_S2B_Y = np.array([[[[0], [1], [3]]], [[[0], [9], [11]]], [[[0], [2], [4]]], [[[0], [10], [12]]],
                   [[[0], [5], [7]]], [[[0], [13], [15]]], [[[0], [6], [8]]], [[[0], [14], [16]]]], np.float32)


def test_space_to_batch_nd_tf_example_second_padding_row_used():
    """The second row of paddings ([2, 0], width) must be used as given (the real runtime duplicates row 0)."""
    (y,) = run("OH_NN_OPS_SPACE_TO_BATCH_ND", [_S2B_X],
               {T.OH_NN_SPACE_TO_BATCH_ND_BLOCK_SHAPE: [2, 2], T.OH_NN_SPACE_TO_BATCH_ND_PADDINGS: [[0, 0], [2, 0]]})
    np.testing.assert_array_equal(y, _S2B_Y)


def test_batch_to_space_nd_tf_example():
    (y,) = run("OH_NN_OPS_BATCH_TO_SPACE_ND", [_S2B_Y],
               {T.OH_NN_BATCH_TO_SPACE_ND_BLOCKSIZE: [2, 2], T.OH_NN_BATCH_TO_SPACE_ND_CROPS: [[0, 0], [2, 0]]})
    np.testing.assert_array_equal(y, _S2B_X)


def test_space_to_batch_nd_and_batch_to_space_nd_tf_example_block_4x4():
    """TF doc example 3: [1,4,4,1] of 1..16 with block [2,2] -> [4,2,2,1]."""
    x = np.arange(1, 17, dtype=np.int32).reshape(1, 4, 4, 1)
    expected = np.array([[[[1], [3]], [[9], [11]]], [[[2], [4]], [[10], [12]]],
                         [[[5], [7]], [[13], [15]]], [[[6], [8]], [[14], [16]]]], np.int32)
    (y,) = run("OH_NN_OPS_SPACE_TO_BATCH_ND", [x], {T.OH_NN_SPACE_TO_BATCH_ND_BLOCK_SHAPE: [2, 2],
                                                    T.OH_NN_SPACE_TO_BATCH_ND_PADDINGS: [[0, 0], [0, 0]]})
    np.testing.assert_array_equal(y, expected)
    (z,) = run("OH_NN_OPS_BATCH_TO_SPACE_ND", [expected], {T.OH_NN_BATCH_TO_SPACE_ND_BLOCKSIZE: [2, 2]})  # crops omitted
    np.testing.assert_array_equal(z, x)


SB_CASES = {
    # id: (shape, block, pads/crops, dtype)
    "space_to_batch_nd-pad-all-sides-f32": ((2, 5, 3, 3), (2, 3), (1, 0, 2, 1), np.float32),
    "space_to_batch_nd-block-1x2-int8": ((1, 4, 4, 2), (1, 2), (0, 0, 1, 1), np.int8),
    "space_to_batch_nd-bool": ((1, 3, 3, 1), (2, 2), (0, 1, 1, 0), np.bool_),
    "space_to_batch_nd-f16": ((3, 4, 6, 2), (2, 2), (2, 2, 0, 2), np.float16),
    "batch_to_space_nd-crop-all-sides-f32": ((6, 3, 2, 3), (2, 3), (1, 0, 2, 1), np.float32),
    "batch_to_space_nd-int32": ((4, 2, 2, 2), (2, 2), (0, 1, 1, 0), np.int32),
    "batch_to_space_nd-f16": ((8, 2, 3, 1), (2, 2), (0, 0, 0, 0), np.float16),
}


@pytest.mark.parametrize("case", list(SB_CASES))
def test_space_batch_naive(request, case):
    shape, block, pads, dtype = SB_CASES[case]
    rng = rng_for(request)
    x = (rng.standard_normal(shape) * 50).astype(dtype) if dtype != np.bool_ else rng.integers(0, 2, shape).astype(bool)
    if case.startswith("space"):
        expected = naive_space_to_batch(x, block, pads)
        (y,) = run("OH_NN_OPS_SPACE_TO_BATCH_ND", [x], {T.OH_NN_SPACE_TO_BATCH_ND_BLOCK_SHAPE: list(block),
                                                        T.OH_NN_SPACE_TO_BATCH_ND_PADDINGS: np.array(pads, np.int64).reshape(2, 2)})
    else:
        expected = naive_batch_to_space(x, block, pads)
        (y,) = run("OH_NN_OPS_BATCH_TO_SPACE_ND", [x], {T.OH_NN_BATCH_TO_SPACE_ND_BLOCKSIZE: list(block),
                                                        T.OH_NN_BATCH_TO_SPACE_ND_CROPS: list(pads)})
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, expected)


def test_space_to_batch_nd_quantized():
    """Padding is real zero: with a non-zero zero point the padded cells hold the zero point."""
    x_real = np.array([[[[0.5], [1.0]], [[1.5], [2.0]]]], np.float32)
    qp = QuantParam([0.5], [10], [8])
    xq = _q(x_real, qp, np.uint8)
    (y,) = run("OH_NN_OPS_SPACE_TO_BATCH_ND", [xq], {T.OH_NN_SPACE_TO_BATCH_ND_BLOCK_SHAPE: [2, 2],
                                                     T.OH_NN_SPACE_TO_BATCH_ND_PADDINGS: [[0, 2], [0, 0]]},
               input_quant={0: qp}, output_quant={0: qp}, output_dtypes=[np.uint8])
    np.testing.assert_array_equal(y, naive_space_to_batch(xq, (2, 2), (0, 2, 0, 0), fill=10))


@pytest.mark.parametrize("case", ["space_to_batch_nd-err-not-divisible", "space_to_batch_nd-err-no-block",
                                  "batch_to_space_nd-err-batch-not-divisible", "batch_to_space_nd-err-block-3-values",
                                  "batch_to_space_nd-err-crop-too-big"])
def test_space_batch_errors(case):
    x = np.zeros((4, 3, 3, 1), np.float32)
    kw = dict(output_dtypes=[np.float32], output_shapes=[(-1, -1, -1, -1)])
    if case.endswith("not-divisible") and case.startswith("space"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_SPACE_TO_BATCH_ND", [x],
                     {T.OH_NN_SPACE_TO_BATCH_ND_BLOCK_SHAPE: [2, 2], T.OH_NN_SPACE_TO_BATCH_ND_PADDINGS: [[0, 0], [0, 1]]}, **kw)
    elif case.endswith("no-block"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_SPACE_TO_BATCH_ND", [x], {}, **kw)
    elif case.endswith("batch-not-divisible"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_BATCH_TO_SPACE_ND", [x[:3]],
                     {T.OH_NN_BATCH_TO_SPACE_ND_BLOCKSIZE: [2, 2]}, **kw)
    elif case.endswith("3-values"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_BATCH_TO_SPACE_ND", [x],
                     {T.OH_NN_BATCH_TO_SPACE_ND_BLOCKSIZE: [2, 2, 1]}, **kw)
    else:
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_BATCH_TO_SPACE_ND", [x],
                     {T.OH_NN_BATCH_TO_SPACE_ND_BLOCKSIZE: [2, 2], T.OH_NN_BATCH_TO_SPACE_ND_CROPS: [4, 3, 0, 0]}, **kw)


# ---------------------------------------------------------------------------------------------------------------
# depth_to_space / space_to_depth

D2S_CASES = {
    "depth_to_space-dcr-f32": ((2, 3, 4, 12), 2, 0, np.float32),
    "depth_to_space-crd-f32": ((1, 3, 2, 18), 3, 1, np.float32),
    "depth_to_space-default-mode-is-dcr-f16": ((1, 2, 2, 8), 2, None, np.float16),
    "depth_to_space-crd-int8": ((1, 2, 3, 8), 2, 1, np.int8),
    "depth_to_space-dcr-bool": ((1, 2, 2, 4), 2, 0, np.bool_),
    "space_to_depth-f32": ((2, 4, 6, 3), 2, None, np.float32),
    "space_to_depth-block3-f16": ((1, 6, 3, 2), 3, None, np.float16),
    "space_to_depth-int32": ((1, 4, 4, 1), 2, None, np.int32),
}


@pytest.mark.parametrize("case", list(D2S_CASES))
def test_depth_space(request, case):
    shape, block, mode, dtype = D2S_CASES[case]
    rng = rng_for(request)
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    xf = nchw(x.astype(np.float32))
    if case.startswith("depth"):
        expected = nhwc(ort_node("DepthToSpace", [xf], blocksize=block, mode="CRD" if mode == 1 else "DCR"))
        params = {T.OH_NN_DEPTH_TO_SPACE_BLOCK_SIZE: block}
        if mode is not None:
            params[T.OH_NN_DEPTH_TO_SPACE_MODE] = mode
        (y,) = run("OH_NN_OPS_DEPTH_TO_SPACE", [x], params)
    else:
        expected = nhwc(ort_node("SpaceToDepth", [xf], blocksize=block))
        (y,) = run("OH_NN_OPS_SPACE_TO_DEPTH", [x], {T.OH_NN_SPACE_TO_DEPTH_BLOCK_SIZE: block})
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, expected.astype(dtype))


def test_depth_to_space_worked_example():
    """TF depth_to_space doc: [1,1,1,4] of [1,2,3,4], block 2 (DCR) -> [[1,2],[3,4]]; CRD of channels c*4+i*2+j."""
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 1, 4)
    (y,) = run("OH_NN_OPS_DEPTH_TO_SPACE", [x], {T.OH_NN_DEPTH_TO_SPACE_BLOCK_SIZE: 2, T.OH_NN_DEPTH_TO_SPACE_MODE: 0})
    np.testing.assert_array_equal(y.reshape(2, 2), [[1, 2], [3, 4]])
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 1, 8)  # C' = 2: DCR reads (i*2+j)*2 + c, CRD reads c*4 + i*2 + j
    (dcr,) = run("OH_NN_OPS_DEPTH_TO_SPACE", [x], {T.OH_NN_DEPTH_TO_SPACE_BLOCK_SIZE: 2, T.OH_NN_DEPTH_TO_SPACE_MODE: 0})
    (crd,) = run("OH_NN_OPS_DEPTH_TO_SPACE", [x], {T.OH_NN_DEPTH_TO_SPACE_BLOCK_SIZE: 2, T.OH_NN_DEPTH_TO_SPACE_MODE: 1})
    np.testing.assert_array_equal(dcr[0, :, :, 0], [[0, 2], [4, 6]])
    np.testing.assert_array_equal(crd[0, :, :, 1], [[4, 5], [6, 7]])


def test_depth_to_space_quantized():
    x_real = np.random.default_rng(7).uniform(-1, 1, (1, 2, 2, 8)).astype(np.float32)
    qp = _qparams(x_real, np.int8)
    xq = _q(x_real, qp, np.int8)
    (y,) = run("OH_NN_OPS_DEPTH_TO_SPACE", [xq], {T.OH_NN_DEPTH_TO_SPACE_BLOCK_SIZE: 2},
               input_quant={0: qp}, output_quant={0: qp}, output_dtypes=[np.int8])
    expected = nhwc(ort_node("DepthToSpace", [nchw(xq)], blocksize=2, mode="DCR"))
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("case", ["depth_to_space-err-channels", "depth_to_space-err-no-block",
                                  "space_to_depth-err-not-divisible", "space_to_depth-err-block1"])
def test_depth_space_errors(case):
    x = np.zeros((1, 4, 4, 6), np.float32)
    kw = dict(output_dtypes=[np.float32], output_shapes=[(-1, -1, -1, -1)])
    if case.endswith("channels"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_DEPTH_TO_SPACE", [x], {T.OH_NN_DEPTH_TO_SPACE_BLOCK_SIZE: 2}, **kw)
    elif case.endswith("no-block"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_DEPTH_TO_SPACE", [x], {}, **kw)
    elif case.endswith("not-divisible"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_SPACE_TO_DEPTH", [x], {T.OH_NN_SPACE_TO_DEPTH_BLOCK_SIZE: 3}, **kw)
    else:
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_SPACE_TO_DEPTH", [x], {T.OH_NN_SPACE_TO_DEPTH_BLOCK_SIZE: 1}, **kw)


# ---------------------------------------------------------------------------------------------------------------
# LRN: out = x / (bias + alpha * sum_{|d|<=r} x[c+d]^2) ** beta (TF/NNAPI); ONNX divides alpha by size = 2r+1

LRN_CASES = {
    "lrn-r2": ((2, 3, 4, 7), 2, 1.0, 1e-1, 0.75),
    "lrn-r1-bias2": ((1, 5, 5, 4), 1, 2.0, 1e-2, 0.5),
    "lrn-r0": ((1, 2, 3, 5), 0, 1.5, 0.3, 1.0),
    "lrn-radius-exceeds-channels": ((1, 2, 2, 3), 5, 1.0, 0.5, 0.6),
}


@pytest.mark.parametrize("dtype", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(LRN_CASES))
def test_lrn(request, case, dtype):
    shape, r, bias, alpha, beta = LRN_CASES[case]
    rng = rng_for(request)
    x = rng.standard_normal(shape).astype(dtype)
    size = 2 * r + 1
    expected = nhwc(ort_node("LRN", [nchw(f32(x))], size=size, alpha=alpha * size, beta=beta, bias=bias))
    (y,) = run("OH_NN_OPS_LRN", [x], {T.OH_NN_LRN_DEPTH_RADIUS: r, T.OH_NN_LRN_BIAS: bias, T.OH_NN_LRN_ALPHA: alpha,
                                      T.OH_NN_LRN_BETA: beta, T.OH_NN_LRN_NORM_REGION: 0})
    assert y.dtype == dtype
    check(y, expected, dtype)


def test_lrn_rank2_and_defaults():
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], np.float32)
    (y,) = run("OH_NN_OPS_LRN", [x], {T.OH_NN_LRN_DEPTH_RADIUS: 1, T.OH_NN_LRN_BIAS: 1.0, T.OH_NN_LRN_ALPHA: 0.5,
                                      T.OH_NN_LRN_BETA: 1.0})
    # row 0: sums of squares over windows: [1+4, 1+4+9, 4+9] = [5, 14, 13]
    expected0 = np.array([1 / (1 + 2.5), 2 / (1 + 7), 3 / (1 + 6.5)])
    np.testing.assert_allclose(y[0], expected0, rtol=1e-6)
    (z,) = run("OH_NN_OPS_LRN", [x])  # runtime defaults radius 0, bias 0, alpha 0, beta 0: x / 0**0 = x
    np.testing.assert_array_equal(z, x)


def test_lrn_errors():
    expect_error(RC.OH_NN_UNSUPPORTED, "OH_NN_OPS_LRN", [np.zeros((1, 2, 2, 3), np.int32)],
                 output_dtypes=[np.int32], output_shapes=[(1, 2, 2, 3)])
    expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_LRN", [np.zeros((1, 2, 2, 3), np.float32)],
                 {T.OH_NN_LRN_DEPTH_RADIUS: -1}, output_dtypes=[np.float32], output_shapes=[(1, 2, 2, 3)])


# ---------------------------------------------------------------------------------------------------------------
# pad

def naive_mirror_pad(x, pads, symmetric):
    """Index formula: position p in [-p0, n+p1) maps to reflect (no edge repeat) or symmetric (edge repeated)."""
    def source(p, n):
        if p < 0:
            return -p - 1 if symmetric else -p
        if p >= n:
            return 2 * n - p - 1 if symmetric else 2 * n - p - 2
        return p
    out_shape = [n + a + b for n, (a, b) in zip(x.shape, pads)]
    out = np.empty(out_shape, x.dtype)
    for index in np.ndindex(*out_shape):
        src = tuple(source(i - a, n) for i, (a, _), n in zip(index, pads, x.shape))
        out[index] = x[src]
    return out


def test_pad_tf_mirror_examples():
    """tf.pad documentation: t=[[1,2,3],[4,5,6]], paddings [[1,1],[2,2]]."""
    t = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    paddings = np.array([[1, 1], [2, 2]], np.int32)
    reflect = [[6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1]]
    symmetric = [[2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2], [5, 4, 4, 5, 6, 6, 5], [5, 4, 4, 5, 6, 6, 5]]
    constant = [[0] * 7, [0, 0, 1, 2, 3, 0, 0], [0, 0, 4, 5, 6, 0, 0], [0] * 7]
    for mode, expected in ((1, reflect), (2, symmetric), (0, constant)):
        (y,) = run("OH_NN_OPS_PAD", [t, paddings], {T.OH_NN_PAD_PADDING_MODE: mode}, constant_inputs=[1])
        np.testing.assert_array_equal(y, expected)


PAD_CASES = {
    # id: (shape, paddings, mode, constant, dtype)
    "pad-constant-f32": ((2, 3, 4, 2), [[0, 1], [2, 0], [1, 1], [0, 0]], 0, 1.5, np.float32),
    "pad-constant-default-value-f16": ((3, 4), [[1, 2], [0, 3]], 0, None, np.float16),
    "pad-constant-int32": ((2, 3, 2), [[1, 0], [0, 2], [1, 1]], 0, -7.0, np.int32),
    "pad-constant-bool": ((2, 3), [[1, 1], [0, 2]], 0, 1.0, np.bool_),
    "pad-reflect-f32": ((1, 4, 5, 3), [[0, 0], [3, 2], [1, 4], [0, 0]], 1, None, np.float32),
    "pad-reflect-int8": ((3, 4), [[2, 1], [3, 0]], 1, None, np.int8),
    "pad-symmetric-f32": ((1, 4, 5, 3), [[0, 0], [4, 2], [5, 1], [1, 0]], 2, None, np.float32),
    "pad-symmetric-f16-1d": ((5,), [[5, 3]], 2, None, np.float16),
}


@pytest.mark.parametrize("case", list(PAD_CASES))
def test_pad(request, case):
    shape, paddings, mode, value, dtype = PAD_CASES[case]
    rng = rng_for(request)
    x = (rng.standard_normal(shape) * 20).astype(dtype) if dtype != np.bool_ else rng.integers(0, 2, shape).astype(bool)
    pads = np.array(paddings, np.int64)
    params = {T.OH_NN_PAD_PADDING_MODE: mode}
    if value is not None:
        params[T.OH_NN_PAD_CONSTANT_VALUE] = value
    if mode == 2:
        expected = naive_mirror_pad(x, paddings, symmetric=True)
    else:
        onnx_pads = np.concatenate([pads[:, 0], pads[:, 1]]).astype(np.int64)
        cval = None if mode == 1 else np.array(value or 0, dtype=dtype)
        expected = ort_node("Pad", [x, onnx_pads, cval], mode="reflect" if mode == 1 else "constant")
        if mode == 1:  # cross-check the ORT reflect oracle with the naive index formula
            np.testing.assert_array_equal(expected, naive_mirror_pad(x, paddings, symmetric=False))
    (y,) = run("OH_NN_OPS_PAD", [x, pads], params, constant_inputs=[1])
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, expected)


def test_pad_quantized():
    x_real = np.random.default_rng(11).uniform(0, 2, (1, 3, 3, 2)).astype(np.float32)
    qp = QuantParam([2 / 255], [20], [8])
    xq = _q(x_real, qp, np.uint8)
    pads = np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32)
    (y,) = run("OH_NN_OPS_PAD", [xq, pads], {T.OH_NN_PAD_CONSTANT_VALUE: 0.5}, input_quant={0: qp},
               output_quant={0: qp}, output_dtypes=[np.uint8], constant_inputs=[1])
    expected = np.pad(_dq(xq, qp), [(0, 0), (1, 1), (1, 1), (0, 0)], constant_values=0.5)
    check(y, _q(expected, qp, np.uint8), "quant")
    assert y[0, 0, 0, 0] == 20 + round(0.5 / (2 / 255))  # padded real 0.5 -> q = z + 0.5/s


@pytest.mark.parametrize("case", ["pad-err-reflect-too-big", "pad-err-symmetric-too-big", "pad-err-negative",
                                  "pad-err-shape", "pad-err-reserved-mode", "pad-err-int-fractional-constant"])
def test_pad_errors(case):
    x = np.zeros((2, 3), np.float32)
    kw = dict(output_dtypes=[np.float32], output_shapes=[(-1, -1)], constant_inputs=[1])
    pads = np.array([[0, 0], [3, 0]], np.int64)
    if case.endswith("reflect-too-big"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_PAD", [x, pads], {T.OH_NN_PAD_PADDING_MODE: 1}, **kw)
    elif case.endswith("symmetric-too-big"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_PAD", [x, np.array([[0, 0], [4, 0]])],
                     {T.OH_NN_PAD_PADDING_MODE: 2}, **kw)
    elif case.endswith("negative"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_PAD", [x, np.array([[0, -1], [0, 0]])], {}, **kw)
    elif case.endswith("shape"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_PAD", [x, np.array([[0, 1]])], {}, **kw)
    elif case.endswith("reserved-mode"):
        expect_error(RC.OH_NN_UNSUPPORTED, "OH_NN_OPS_PAD", [x, pads], {T.OH_NN_PAD_PADDING_MODE: 3}, **kw)
    else:
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_PAD", [x.astype(np.int32), pads],
                     {T.OH_NN_PAD_CONSTANT_VALUE: 0.5}, output_dtypes=[np.int32], output_shapes=[(-1, -1)],
                     constant_inputs=[1])


# ---------------------------------------------------------------------------------------------------------------
# crop: hand-worked examples (window sizes = values of input #1; offsets per the MindSpore Crop rule)

def test_crop_worked_examples():
    x = np.arange(2 * 4 * 4, dtype=np.float32).reshape(2, 4, 4)
    # XTS CropModel1: axis 0, offsets [0,1,1], window [2,2,2] -> x[0:2, 1:3, 1:3]
    (y,) = run("OH_NN_OPS_CROP", [x, np.array([2, 2, 2], np.float32)],
               {T.OH_NN_CROP_AXIS: 0, T.OH_NN_CROP_OFFSET: [0, 1, 1]}, constant_inputs=[1])
    np.testing.assert_array_equal(y, [[[5, 6], [9, 10]], [[21, 22], [25, 26]]])
    # axis 1, one offset for every dim from the axis on: x[:, 2:4, 2:4]
    (y,) = run("OH_NN_OPS_CROP", [x, np.array([2, 2, 2], np.int64)],
               {T.OH_NN_CROP_AXIS: 1, T.OH_NN_CROP_OFFSET: [2]}, constant_inputs=[1])
    np.testing.assert_array_equal(y, [[[10, 11], [14, 15]], [[26, 27], [30, 31]]])
    # dims before the axis keep offset 0 but take the window size; negative axis; per-dim offsets
    (y,) = run("OH_NN_OPS_CROP", [x, np.array([1, 3, 1], np.int32)],
               {T.OH_NN_CROP_AXIS: -2, T.OH_NN_CROP_OFFSET: [1, 3]}, constant_inputs=[1])
    np.testing.assert_array_equal(y, [[[7], [11], [15]]])
    # window sizes for the dims from the axis only; no offset -> 0
    (y,) = run("OH_NN_OPS_CROP", [x, np.array([3, 1], np.int64)], {T.OH_NN_CROP_AXIS: 1}, constant_inputs=[1])
    np.testing.assert_array_equal(y, x[:, 0:3, 0:1])


def test_crop_nhwc_int8_default_axis():
    x = np.arange(2 * 5 * 6 * 3, dtype=np.int64).reshape(2, 5, 6, 3).astype(np.int8)
    (y,) = run("OH_NN_OPS_CROP", [x, np.array([1, 3, 4, 2], np.int64)], {T.OH_NN_CROP_OFFSET: [1, 2, 1, 1]},
               constant_inputs=[1])  # default axis 0: offsets for every dim
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, x[1:2, 2:5, 1:5, 1:3])


@pytest.mark.parametrize("case", ["crop-err-window-too-big", "crop-err-offset-count", "crop-err-axis", "crop-err-shape-rank"])
def test_crop_errors(case):
    x = np.zeros((2, 4, 4), np.float32)
    kw = dict(output_dtypes=[np.float32], output_shapes=[(-1, -1, -1)], constant_inputs=[1])
    if case.endswith("window-too-big"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_CROP", [x, np.array([2, 2, 2])],
                     {T.OH_NN_CROP_AXIS: 1, T.OH_NN_CROP_OFFSET: [3]}, **kw)
    elif case.endswith("offset-count"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_CROP", [x, np.array([2, 2, 2])],
                     {T.OH_NN_CROP_AXIS: 1, T.OH_NN_CROP_OFFSET: [0, 1, 1]}, **kw)
    elif case.endswith("axis"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_CROP", [x, np.array([2, 2, 2])], {T.OH_NN_CROP_AXIS: 3}, **kw)
    else:
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_CROP", [x, np.array([[2, 2, 2]])], {}, **kw)
