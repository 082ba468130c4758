"""Spatial family (NHWC): resize bilinear, batch<->space, depth<->space, crop.

Oracles: onnxruntime single-node models (NHWC<->NCHW transposes done here), and hand-worked examples
(TF / NNAPI documentation examples, naive index formulas) where ONNX has no equivalent.
Every case runs through the end-to-end harness ``nnrt_onnx.testing.run_op`` (validation, defaults, quantization,
EnableFloat16).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from kernels.kernel_support import (
    DTYPE_F16,
    DTYPE_F32,
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
from nnrt_onnx.tensor import QuantParam

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


@pytest.mark.parametrize("dtype", [DTYPE_F32, DTYPE_F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(RESIZE_CASES), ids=list(RESIZE_CASES))
def test_resize_bilinear(request, case, dtype):
    shape, nh, nw, mode, preserve, size, exclude = RESIZE_CASES[case]
    rng = rng_for_request(request)
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
    check_tol(y, expected, dtype)


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
    qp = qparams_for(x_real, np.uint8)
    xq = quant(x_real, qp, np.uint8)
    expected_real = onnx_resize(dequant(xq, qp), 8, 9, 2)
    (y,) = run("OH_NN_OPS_RESIZE_BILINEAR", [xq], {T.OH_NN_RESIZE_BILINEAR_NEW_HEIGHT: 8,
                                                   T.OH_NN_RESIZE_BILINEAR_NEW_WIDTH: 9,
                                                   T.OH_NN_RESIZE_BILINEAR_COORDINATE_TRANSFORM_MODE: 2},
               input_quant={0: qp}, output_quant={0: qp}, output_dtypes=[np.uint8])
    check_tol(y, quant(expected_real, qp, np.uint8), "quant")


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
    rng = rng_for_request(request)
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
    xq = quant(x_real, qp, np.uint8)
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
    rng = rng_for_request(request)
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
    qp = qparams_for(x_real, np.int8)
    xq = quant(x_real, qp, np.int8)
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
