"""Pooling family (NHWC): AVG_POOL and MAX_POOL, windowed and global.

Oracles: onnxruntime single-node AveragePool / MaxPool models (NHWC<->NCHW transposes done here), and a
hand-worked example of the padding-excluding average. Every case runs through the end-to-end harness
``nnrt_onnx.testing.run_op`` (validation, defaults, fused activation, quantization, EnableFloat16).
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


@pytest.mark.parametrize("dtype", [DTYPE_F32, DTYPE_F16], ids=["f32", "f16"])
@pytest.mark.parametrize("kind,case", POOL_IDS, ids=[f"{kind}_pool-{case}" for kind, case in POOL_IDS])
def test_pool(request, kind, case, dtype):
    shape, pkw, okw = POOL_CASES[case]
    rng = rng_for_request(request)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    op = "OH_NN_OPS_AVG_POOL" if kind == "avg" else "OH_NN_OPS_MAX_POOL"
    expected = act(onnx_pool(kind, f32(x), **okw), pkw.get("fuse", 0))
    (y,) = run(op, [x], pool_params(kind, **pkw))
    assert y.dtype == dtype
    check_tol(y, expected, dtype)


@pytest.mark.parametrize("case", ["max_pool-int8-padlist", "max_pool-uint8-same", "max_pool-int32-ceil"])
def test_max_pool_integers(request, case):
    dtype = {"int8": np.int8, "uint8": np.uint8, "int32": np.int32}[case.split("-")[1]]
    rng = rng_for_request(request)
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
    rng = rng_for_request(request)
    x_real = rng.uniform(-2, 2, (1, 7, 7, 3)).astype(np.float32)
    if qdtype == np.uint8:
        x_real = np.abs(x_real)
    qp = qparams_for(x_real, qdtype)
    xq = quant(x_real, qp, qdtype)
    expected_real = onnx_pool(kind, dequant(xq, qp), kernel=(3, 3), strides=(2, 2), auto_pad="SAME_UPPER")
    op = "OH_NN_OPS_AVG_POOL" if kind == "avg" else "OH_NN_OPS_MAX_POOL"
    (y,) = run(op, [xq], pool_params(kind, kernel=[3, 3], stride=[2, 2], pad_mode=0), input_quant={0: qp},
               output_quant={0: qp}, output_dtypes=[qdtype])
    assert y.dtype == qdtype
    check_tol(y, quant(expected_real, qp, qdtype), "quant")


def test_avg_pool_enable_float16():
    rng = np.random.default_rng(zlib.crc32(b"avg_pool-enablef16"))
    x = rng.standard_normal((1, 8, 8, 4)).astype(np.float32)
    (y,) = run("OH_NN_OPS_AVG_POOL", [x], pool_params("avg", kernel=[3, 3], stride=[1, 1], pad=[1, 1, 1, 1]), float16=True)
    assert y.dtype == np.float32
    check_tol(y, onnx_pool("avg", x, kernel=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1)), "float16_mode")


def test_avg_pool_excludes_padding_worked_example():
    """NNAPI AVERAGE_POOL_2D divides by the number of real (unpadded) elements: hand-computed corner values."""
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)  # [[1,2,3],[4,5,6],[7,8,9]]
    (y,) = run("OH_NN_OPS_AVG_POOL", [x], pool_params("avg", kernel=[3, 3], stride=[1, 1], pad_mode=0))
    expected = np.array([[3.0, 3.5, 4.0], [4.5, 5.0, 5.5], [6.0, 6.5, 7.0]], np.float32)  # e.g. (1+2+4+5)/4 = 3
    np.testing.assert_allclose(y[0, :, :, 0], expected, rtol=1e-6)


NAN = np.nan
# MAX_POOL of windows holding NaN, worked by hand (the rule of kernels/pool.py, measured on onnxruntime and
# onnx.reference where they agree: docs/deviations.md). A kernel [3, 1] down a column of 5:
# (column, strides [1, 1]: NaN never wins, strides [1, 2]: NaN where the window's first cell is)
MAX_POOL_NAN_COLUMNS = [
    ([NAN, 1, 2, NAN, NAN], [2, 2, 2], [NAN, 2, 2]),
    ([1, NAN, NAN, 2, NAN], [1, 2, 2], [1, NAN, NAN]),
    ([-np.inf, NAN, -np.inf, NAN, 1], [-np.inf, -np.inf, 1], [-np.inf, NAN, 1]),
    ([NAN, NAN, NAN, NAN, 5], [NAN, NAN, 5], [NAN, NAN, NAN]),  # a window of NaN only: NaN
]


@pytest.mark.parametrize("dtype", [DTYPE_F32, DTYPE_F16], ids=["f32", "f16"])
@pytest.mark.parametrize("column,unit,strided", MAX_POOL_NAN_COLUMNS)
def test_max_pool_nan_windows_worked_example(column, unit, strided, dtype):
    x = np.asarray(column, dtype).reshape(1, 5, 1, 1)
    for stride, want in (([1, 1], unit), ([1, 2], strided)):
        (y,) = run("OH_NN_OPS_MAX_POOL", [x], pool_params("max", kernel=[3, 1], stride=stride))
        np.testing.assert_array_equal(y.reshape(-1), np.asarray(want, dtype), err_msg=f"stride {stride}")


@pytest.mark.parametrize("dtype", [DTYPE_F32, DTYPE_F16], ids=["f32", "f16"])
def test_max_pool_nan_windows_starting_in_the_padding_worked_example(dtype):
    # padding is no cell: a window's first cell is its first one inside the input (row-major)
    x = np.asarray([[NAN, 1, 5], [7, NAN, 2], [3, 4, NAN]], dtype).reshape(1, 3, 3, 1)
    (y,) = run("OH_NN_OPS_MAX_POOL", [x], pool_params("max", kernel=[3, 3], stride=[2, 2], pad=[1, 1, 1, 1]))
    # windows: rows/columns 0-1 (first cell NaN), 0-1/1-2 (1, 5, NaN, 2), 1-2/0-1 (7, NaN, 3, 4), 1-2/1-2 (NaN ...)
    np.testing.assert_array_equal(y[0, :, :, 0], np.asarray([[NAN, 5], [7, NAN]], dtype))
    (y,) = run("OH_NN_OPS_MAX_POOL", [x], pool_params("max", kernel=[3, 3], stride=[1, 1], pad=[1, 1, 1, 1]))
    np.testing.assert_array_equal(y[0, :, :, 0], np.asarray([[7, 7, 5], [7, 7, 5], [7, 7, 4]], dtype))
    # SAME padding (pads [0, 1, 0, 1]) and a NaN first cell on the second row of windows
    x = np.asarray([[1, 2, 3], [NAN, 8, 9], [NAN, NAN, 6]], dtype).reshape(1, 3, 3, 1)
    (y,) = run("OH_NN_OPS_MAX_POOL", [x], pool_params("max", kernel=[2, 2], stride=[2, 2], pad_mode=0))
    np.testing.assert_array_equal(y[0, :, :, 0], np.asarray([[8, 9], [NAN, 6]], dtype))


def test_global_max_pool_propagates_nan():
    # as onnx.reference's GlobalMaxPool (onnxruntime 1.32's ignores NaN there: the two disagree, measured)
    x = np.asarray([[1, NAN], [3, 2]], np.float32).reshape(1, 2, 2, 1)
    (y,) = run("OH_NN_OPS_MAX_POOL", [np.concatenate([x, np.ones_like(x)], axis=3)], pool_params("max", global_=True))
    np.testing.assert_array_equal(y.reshape(-1), [NAN, 1])


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
# the compiled pooling loop (numba, optional) against the numpy path: same values, same signs of zeros


