"""Convolution family (NHWC): CONV2D, DEPTHWISE_CONV2D_NATIVE and CONV2D_TRANSPOSE.

Oracles: onnxruntime single-node Conv / ConvTranspose models (NHWC<->NCHW transposes done here).
Every case runs through the end-to-end harness ``nnrt_onnx.testing.run_op`` (validation, defaults, fused activation,
quantization, EnableFloat16).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from kernels.kernel_support import (
    DTYPE_F16,
    DTYPE_F32,
    act,
    check_tol,
    dequant,
    expect_error,
    f32,
    nchw,
    nhwc,
    ort_node,
    qparams_for,
    quant,
    rng_for_request,
    run,
)

from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as T

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


@pytest.mark.parametrize("dtype", [DTYPE_F32, DTYPE_F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(CONV_CASES), ids=list(CONV_CASES))
def test_conv2d(request, case, dtype):
    shape, wshape, group, params, oracle, fuse = CONV_CASES[case]
    rng = rng_for_request(request)
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal(wshape) / np.sqrt(np.prod(wshape[1:]))).astype(dtype)
    b = rng.standard_normal(wshape[0]).astype(dtype)
    strides, dilation, group = _conv_oracle_kwargs(params, group)
    expected = act(onnx_conv(x, w, b, strides, dilation, group, **oracle), fuse)
    (y,) = run("OH_NN_OPS_CONV2D", [x, w, b], params)
    assert y.dtype == dtype
    check_tol(y, expected, dtype)


def test_conv2d_enable_float16():
    rng = np.random.default_rng(zlib.crc32(b"conv2d-enablef16"))
    x = rng.standard_normal((1, 8, 8, 4)).astype(np.float32)
    w = (rng.standard_normal((6, 3, 3, 4)) / 6).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    (y,) = run("OH_NN_OPS_CONV2D", [x, w, b], {T.OH_NN_CONV2D_PAD_MODE: 0}, float16=True, constant_inputs=[1, 2])
    assert y.dtype == np.float32
    check_tol(y, onnx_conv(x, w, b, [1, 1], [1, 1], 1, auto_pad="SAME_UPPER"), "float16_mode")


@pytest.mark.parametrize("case", ["conv2d-quant-int8-perchannel", "conv2d-quant-uint8-same"])
def test_conv2d_quantized(request, case):
    rng = rng_for_request(request)
    dtype = np.int8 if "int8" in case and "uint8" not in case else np.uint8
    x_real = rng.uniform(-1, 1, (1, 7, 7, 3)).astype(np.float32)
    if dtype == np.uint8:
        x_real = np.abs(x_real)
    w_real = rng.uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(np.float32)
    xq_p = qparams_for(x_real, dtype)
    wq_p = qparams_for(w_real, np.int8, per_channel_axis=0) if "perchannel" in case else qparams_for(w_real, np.int8)
    xq = quant(x_real, xq_p, dtype)
    wq = quant(w_real, wq_p, np.int8, axis=0 if wq_p.count > 1 else None)
    bias_scale = xq_p.scales[0] * np.asarray(wq_p.scales)
    b_real = rng.uniform(-0.3, 0.3, 4)
    bq = np.rint(b_real / bias_scale).astype(np.int32)
    params = {T.OH_NN_CONV2D_PAD_MODE: 0} if "same" in case else {}
    oracle = dict(auto_pad="SAME_UPPER") if "same" in case else dict(pads=(0, 0, 0, 0))
    expected_real = onnx_conv(dequant(xq, xq_p), dequant(wq, wq_p, 0 if wq_p.count > 1 else None),
                              (bq * bias_scale).astype(np.float32), [1, 1], [1, 1], 1, **oracle)
    yq_p = qparams_for(expected_real, dtype)
    out_shape = expected_real.shape
    (y,) = run("OH_NN_OPS_CONV2D", [xq, wq, bq], params, input_quant={0: xq_p, 1: wq_p}, output_quant={0: yq_p},
               output_dtypes=[dtype], output_shapes=[out_shape], constant_inputs=[1, 2])
    assert y.dtype == dtype
    check_tol(y, quant(expected_real, yq_p, dtype), "quant")


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


@pytest.mark.parametrize("dtype", [DTYPE_F32, DTYPE_F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(DW_CASES), ids=list(DW_CASES))
def test_depthwise_conv2d_native(request, case, dtype):
    shape, mult, (kh, kw), params, oracle = DW_CASES[case]
    rng = rng_for_request(request)
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
    check_tol(y, expected, dtype)


def test_depthwise_conv2d_native_quantized():
    rng = np.random.default_rng(zlib.crc32(b"depthwise_conv2d_native-quant-uint8"))
    x_real = rng.uniform(0, 2, (1, 6, 6, 3)).astype(np.float32)
    w_real = rng.uniform(-1, 1, (6, 3, 3, 1)).astype(np.float32)
    xq_p, wq_p = qparams_for(x_real, np.uint8), qparams_for(w_real, np.int8, per_channel_axis=0)
    xq, wq = quant(x_real, xq_p, np.uint8), quant(w_real, wq_p, np.int8, axis=0)
    bias_scale = xq_p.scales[0] * np.asarray(wq_p.scales)
    bq = np.rint(rng.uniform(-1, 1, 6) / bias_scale).astype(np.int32)
    expected_real = onnx_conv(dequant(xq, xq_p), dequant(wq, wq_p, 0), (bq * bias_scale).astype(np.float32), [1, 1], [1, 1], 3,
                              auto_pad="SAME_UPPER")
    yq_p = qparams_for(expected_real, np.uint8)
    (y,) = run("OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE", [xq, wq, bq], {T.OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD_MODE: 0},
               input_quant={0: xq_p, 1: wq_p}, output_quant={0: yq_p}, output_dtypes=[np.uint8],
               output_shapes=[expected_real.shape], constant_inputs=[1, 2])
    check_tol(y, quant(expected_real, yq_p, np.uint8), "quant")


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
    # stride == kernel: the taps tile the output without overlap (U-Net's upsampling), an interleaving copy
    "conv2d_transpose-tiling-2x2-stride2": ((2, 3, 4, 5), (6, 2, 2, 5), 1, {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 2]},
                                            dict(pads=(0, 0, 0, 0))),
    "conv2d_transpose-tiling-3x2-group2": ((1, 3, 2, 4), (4, 3, 2, 2), 2, {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [3, 2],
                                                                          T.OH_NN_CONV2D_TRANSPOSE_GROUP: 2},
                                           dict(pads=(0, 0, 0, 0))),
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


@pytest.mark.parametrize("dtype", [DTYPE_F32, DTYPE_F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(TC_CASES), ids=list(TC_CASES))
def test_conv2d_transpose(request, case, dtype):
    shape, wshape, group, params, oracle = TC_CASES[case]
    rng = rng_for_request(request)
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
    check_tol(y, expected, dtype)


def test_conv2d_transpose_quantized():
    rng = np.random.default_rng(zlib.crc32(b"conv2d_transpose-quant-int8"))
    x_real = rng.uniform(-1, 1, (1, 4, 4, 2)).astype(np.float32)
    w_real = rng.uniform(-1, 1, (3, 3, 3, 2)).astype(np.float32)
    xq_p, wq_p = qparams_for(x_real, np.int8), qparams_for(w_real, np.int8)
    xq, wq = quant(x_real, xq_p, np.int8), quant(w_real, wq_p, np.int8)
    bias_scale = xq_p.scales[0] * wq_p.scales[0]
    bq = np.rint(rng.uniform(-1, 1, 3) / bias_scale).astype(np.int32)
    expected_real = onnx_conv_transpose(dequant(xq, xq_p), dequant(wq, wq_p), (bq * bias_scale).astype(np.float32), [2, 2],
                                        [1, 1], 1, pads=(1, 1, 1, 1), output_padding=(1, 1))
    yq_p = qparams_for(expected_real, np.int8)
    (y,) = run("OH_NN_OPS_CONV2D_TRANSPOSE", [xq, wq, bq],
               {T.OH_NN_CONV2D_TRANSPOSE_STRIDES: [2, 2], T.OH_NN_CONV2D_TRANSPOSE_PAD: [1, 1, 1, 1],
                T.OH_NN_CONV2D_TRANSPOSE_OUTPUT_PADDINGS: [1, 1]},
               input_quant={0: xq_p, 1: wq_p}, output_quant={0: yq_p}, output_dtypes=[np.int8],
               output_shapes=[expected_real.shape], constant_inputs=[1, 2])
    check_tol(y, quant(expected_real, yq_p, np.int8), "quant")


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
# Winograd F(2x2, 3x3): the 3x3 stride-1 float32 path for wide layers, against a float64 direct convolution written
# here (no library code in the oracle)
