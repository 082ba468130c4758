"""The accelerated convolution paths (``nnrt_onnx.accel``: Winograd, kn2row, the depthwise loops, register
tiles, the direct convolution, BLAS row blocks, the compiled finish and im2col) against float64 oracles and the
numpy paths they replace; moved here from tests/kernels/test_conv.py. The whole file needs the fast paths: it
skips with ``NNRT_ONNX_NUMBA=0`` (the reference plan's suite)."""
from __future__ import annotations

import numpy as np
import pytest
from accel_support import requires_fast_paths

from nnrt_onnx.accel import conv_method
from nnrt_onnx.accel import gemm as _gemm
from nnrt_onnx.accel import kn2row as kn2row_module
from nnrt_onnx.accel import winograd as winograd_module

pytestmark = requires_fast_paths

def _direct_conv_f64(x, w, b, pads):
    """NHWC stride-1 convolution in float64 by explicit taps: sum over (i, j) of shifted input @ w[:, i, j, :].T."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    pt, pb, pl, pr = pads
    kh, kw = w.shape[1:3]
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    oh, ow = xp.shape[1] - kh + 1, xp.shape[2] - kw + 1
    out = np.zeros(x.shape[:1] + (oh, ow, w.shape[0]))
    for i in range(kh):
        for j in range(kw):
            out += xp[:, i:i + oh, j:j + ow, :] @ w[:, i, j, :].T
    return out + b


@pytest.mark.parametrize("path", ["compiled", "numpy"])
@pytest.mark.parametrize("shape,out_c,pads,fuse", [
    ((1, 11, 13, 64), 64, (1, 1, 1, 1), 0),  # odd output sizes: partial tiles at the bottom/right
    ((2, 12, 12, 72), 80, (0, 0, 0, 0), 1),  # VALID, batch 2, RELU
    ((1, 14, 13, 96), 64, (2, 0, 1, 2), 2),  # uneven explicit pads, RELU6
    ((1, 23, 20, 32), 16, (1, 1, 1, 1), 1),  # few channels, 12x10 tiles: the compiled transforms' range only
])
def test_winograd_conv_matches_a_float64_direct_convolution(monkeypatch, shape, out_c, pads, fuse, path):
    # both transforms: the compiled loops (numba) and the numpy GEMMs with the Kronecker matrices; in blocks of one
    # tile row (every block boundary) and in one block
    from nnrt_onnx.accel import conv as conv_kernels
    from nnrt_onnx.accel import numba_loops as _accel
    from nnrt_onnx.accel.conv import conv2d

    if path == "numpy":
        monkeypatch.setenv("NNRT_ONNX_NUMBA", "0")
    elif _accel.winograd_transforms() is None:
        pytest.skip("numba is off or not installed")
    monkeypatch.setattr(winograd_module, "_WINO_BLOCK_BYTES", 1 if shape[1] % 2 else 1 << 20)
    monkeypatch.setattr(winograd_module, "_WINO_WEIGHT_MULTIPLE", 0)  # (so that the block size above rules)

    rng = np.random.default_rng(sum(shape) + out_c)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((out_c, 3, 3, shape[3])) / np.sqrt(9 * shape[3])).astype(np.float32)
    b = rng.standard_normal(out_c).astype(np.float32)
    oh, ow = shape[1] + pads[0] + pads[1] - 2, shape[2] + pads[2] + pads[3] - 2
    if path == "numpy" and shape[3] < 64:
        assert conv_kernels.special_method(x, w, (1, 1), (1, 1), 1, (oh, ow)) is None  # im2col without numba
        return
    assert conv_kernels.special_method(x, w, (1, 1), (1, 1), 1, (oh, ow)) == "winograd"  # the path under test
    got = conv2d(x, w, b, strides=[1, 1], pad_mode=-1, pad_list=list(pads), dilation=[1, 1], group=1, ctx=None,
                 activation=fuse)
    want = _direct_conv_f64(x, w, b, pads)
    if fuse:
        want = np.maximum(want, 0) if fuse == 1 else np.clip(want, 0, 6)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,out_c,activation", [
    ((1, 11, 13, 64), 48, 1),  # odd output sizes: a last tile row and column half outside
    ((2, 12, 12, 32), 16, 2),  # batch 2, 16 channels
])
def test_winograd_finishes_rows_inside_its_output_transform(monkeypatch, shape, out_c, activation):
    # transform_out finishing each output row (bias, the plan's MUL/ADD vectors, a residual addend, the activation)
    # is bit-identical to the finish pass over each block after it; both against the float64 direct convolution
    from nnrt_onnx.accel import conv as conv_kernels
    from nnrt_onnx.accel import finish as finish_module
    from nnrt_onnx.accel import numba_loops as _accel

    if _accel.winograd_transforms() is None:
        pytest.skip("numba is off or not installed")
    rng = np.random.default_rng(sum(shape) + out_c)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((out_c, 3, 3, shape[3])) / np.sqrt(9 * shape[3])).astype(np.float32)
    b = rng.standard_normal(out_c).astype(np.float32)
    scale, shift = (rng.standard_normal(out_c).astype(np.float32) for _ in range(2))
    oh, ow = shape[1], shape[2]
    addend = rng.standard_normal((shape[0], oh, ow, out_c)).astype(np.float32)
    post = (("mul", scale), ("add", shift), ("addend", addend))
    monkeypatch.setattr(winograd_module, "_WINO_BLOCK_BYTES", 1)  # blocks of one tile row
    monkeypatch.setattr(winograd_module, "_WINO_WEIGHT_MULTIPLE", 0)
    calls = []
    real = finish_module.Finish.row_operands
    monkeypatch.setattr(finish_module.Finish, "row_operands", lambda *a: calls.append(1) or real(*a))
    fused = conv_kernels.winograd_3x3(x, w, (1, 1, 1, 1), (oh, ow), b, activation, np.empty_like(addend), post)
    assert calls  # the fused finish is the path under test
    monkeypatch.setattr(finish_module.Finish, "row_operands", lambda *a: None)
    separate = conv_kernels.winograd_3x3(x, w, (1, 1, 1, 1), (oh, ow), b, activation, np.empty_like(addend), post)
    np.testing.assert_array_equal(fused.view(np.uint32), separate.view(np.uint32))
    want = _direct_conv_f64(x, w, b, (1, 1, 1, 1)) * scale + shift + addend
    want = np.maximum(want, 0) if activation == 1 else np.clip(want, 0, 6)
    np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# kn2row: stride-1 convolutions with few output channels as one GEMM against every tap's weights and a compiled
# gather, against the same float64 direct convolution


@pytest.mark.parametrize("shape,out_c,kernel,pads,fuse,dtype", [
    ((1, 9, 11, 128), 32, (3, 3), (1, 1, 1, 1), 0, np.float32),  # SAME-like (C >= 3 O: ahead of Winograd)
    ((2, 8, 7, 96), 16, (3, 3), (0, 0, 0, 0), 1, np.float32),  # VALID, batch 2, RELU
    ((1, 10, 9, 64), 24, (1, 3), (0, 0, 2, 1), 2, np.float32),  # 1x3, uneven pads, RELU6
    ((1, 7, 6, 128), 8, (5, 2), (3, 4, 1, 1), 0, np.float64),  # pads beyond the kernel: windows wholly in padding
    ((1, 12, 5, 64), 32, (3, 1), (2, 0, 0, 0), 1, np.float64),  # 3x1, top pad only
    ((1, 9, 10, 192), 64, (3, 3), (1, 1, 1, 1), 2, np.float32),  # C >= 3 O: ahead of Winograd
    ((1, 11, 8, 16), 8, (3, 3), (1, 1, 1, 1), 1, np.float32),  # the smallest channel counts it takes
])
def test_kn2row_conv_matches_a_float64_direct_convolution(monkeypatch, shape, out_c, kernel, pads, fuse, dtype):
    from nnrt_onnx.accel import conv as conv_kernels
    from nnrt_onnx.accel import numba_loops as _accel
    from nnrt_onnx.accel.conv import conv2d

    if not _accel.enabled():
        pytest.skip("numba is off or not installed: no kn2row")
    rng = np.random.default_rng(sum(shape) + out_c + kernel[0])
    kh, kw = kernel
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal((out_c, kh, kw, shape[3])) / np.sqrt(kh * kw * shape[3])).astype(dtype)
    b = rng.standard_normal(out_c).astype(dtype)
    oh, ow = shape[1] + pads[0] + pads[1] - kh + 1, shape[2] + pads[2] + pads[3] - kw + 1
    assert conv_kernels.special_method(x, w, (1, 1), (1, 1), 1, (oh, ow)) == "kn2row"
    gathers = []
    real_gather = _accel.kn2row_gather
    monkeypatch.setattr(_accel, "kn2row_gather", lambda *a: gathers.append(a[1].shape[0]) or real_gather(*a))
    monkeypatch.setattr(kn2row_module, "_KN2ROW_BLOCK_BYTES", 1)  # one output row per block: every halo case
    got = conv2d(x, w, b, strides=[1, 1], pad_mode=-1, pad_list=list(pads), dilation=[1, 1], group=1, ctx=None,
                 activation=fuse)
    want = _direct_conv_f64(x, w, b, pads)
    if fuse:
        want = np.maximum(want, 0) if fuse == 1 else np.clip(want, 0, 6)
    assert gathers and set(gathers) == {1}  # the path under test ran, in one-row blocks
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    monkeypatch.setattr(kn2row_module, "_KN2ROW_BLOCK_BYTES", 1 << 22)  # and in one block
    whole = conv2d(x, w, b, strides=[1, 1], pad_mode=-1, pad_list=list(pads), dilation=[1, 1], group=1, ctx=None,
                   activation=fuse)
    np.testing.assert_allclose(whole, want, rtol=tol, atol=tol)


def test_kn2row_declines_non_finite_weights_where_padding_would_make_nan(monkeypatch):
    # 0 * inf = NaN: a padded convolution with an inf weight is NaN wherever that tap reads padding; kn2row skips
    # padded taps, so it must hand such weights to im2col, which multiplies the zeros
    from nnrt_onnx.accel.conv import conv2d

    x = np.ones((1, 4, 4, 64), np.float32)
    w = np.zeros((8, 3, 3, 64), np.float32)
    w[0, 0, 0, 0] = np.inf  # tap (0, 0): reads padding for output row 0 and column 0
    with np.errstate(invalid="ignore"):
        got = conv2d(x, w, np.zeros(8, np.float32), strides=[1, 1], pad_mode=-1, pad_list=[1, 1, 1, 1],
                     dilation=[1, 1], group=1, ctx=None)
    assert np.isnan(got[0, 0, :, 0]).all() and np.isnan(got[0, :, 0, 0]).all()
    assert np.isposinf(got[0, 1:, 1:, 0]).all() and (got[..., 1:] == 0).all()


# ---------------------------------------------------------------------------------------------------------------
# the compiled depthwise loop (numba, optional) against the numpy path: the same float operations in the same order


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_depthwise_compiled_loop_is_bit_identical_to_the_numpy_path(dtype, monkeypatch):
    from nnrt_onnx.accel import numba_loops as _accel

    if not _accel.enabled():
        pytest.skip("numba is not installed: the numpy path is the only one")
    rng = np.random.default_rng(11)
    cases = 0
    for k in range(40):
        n, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 13)), int(rng.integers(1, 13))
        c, mult = int(rng.integers(1, 20)), int(rng.integers(1, 3))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        strides, dilation = tuple(int(v) for v in rng.integers(1, 3, 2)), tuple(int(v) for v in rng.integers(1, 3, 2))
        pads = tuple(int(v) for v in rng.integers(0, 3, 4))
        oh = (h + pads[0] + pads[1] - (kh - 1) * dilation[0] - 1) // strides[0] + 1
        ow = (w + pads[2] + pads[3] - (kw - 1) * dilation[1] - 1) // strides[1] + 1
        if oh < 1 or ow < 1:
            continue
        x = rng.standard_normal((n, h, w, c)).astype(dtype)
        x.flat[::7] = 0.0
        x.flat[::11] *= -0.0
        if k % 5 == 0:
            x.flat[3] = np.nan
        wt = rng.standard_normal((c * mult, kh, kw, 1)).astype(dtype)
        if k % 6 == 0:
            wt.flat[0] = np.inf
        bias = rng.standard_normal(c * mult).astype(dtype) if k % 3 else None
        activation = k % 3
        args = (x, wt, strides, dilation, pads, (oh, ow), bias, activation)
        compiled, plain = _compiled_and_numpy(monkeypatch, args)
        assert compiled.dtype == plain.dtype == dtype and compiled.shape == plain.shape
        assert compiled.tobytes() == plain.tobytes(), f"case {k}: {args[2:6]} activation {activation}"
        cases += 1
    assert cases > 25


def _compiled_and_numpy(monkeypatch, args):
    """``_depthwise_core(*args)`` on the compiled loop, then on the numpy path (NNRT_ONNX_NUMBA=0)."""
    from nnrt_onnx.accel.depthwise import depthwise_core as _depthwise_core

    with np.errstate(all="ignore"):
        compiled = _depthwise_core(*args)
        monkeypatch.setenv("NNRT_ONNX_NUMBA", "0")
        plain = _depthwise_core(*args)
        monkeypatch.delenv("NNRT_ONNX_NUMBA")
    return compiled, plain


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_depthwise_3x3_loop_against_numpy_path_and_float64_oracle(dtype, monkeypatch):
    """The 3x3 compiled loop (one channel through all nine taps, reading the unpadded input: padded taps read
    +0.0): bit-identical to the numpy path on the padded copy, and within rounding of a float64 direct sum over the
    taps (NaN/inf cases only against the numpy path)."""
    from nnrt_onnx.accel import numba_loops as _accel

    if not _accel.enabled():
        pytest.skip("numba is not installed: the numpy path is the only one")
    rng = np.random.default_rng(13)
    for k in range(24):
        n, h, w = int(rng.integers(1, 3)), int(rng.integers(3, 15)), int(rng.integers(3, 15))
        c = int(rng.integers(1, 70))
        strides, dilation = tuple(int(v) for v in rng.integers(1, 3, 2)), tuple(int(v) for v in rng.integers(1, 3, 2))
        pads = tuple(int(v) for v in rng.integers(0, 3, 4))
        oh = (h + pads[0] + pads[1] - 2 * dilation[0] - 1) // strides[0] + 1
        ow = (w + pads[2] + pads[3] - 2 * dilation[1] - 1) // strides[1] + 1
        if oh < 1 or ow < 1:
            continue
        x = rng.standard_normal((n, h, w, c)).astype(dtype)
        special = k % 6 == 5
        if special:
            x.flat[2] = np.nan
            x.flat[::13] = -0.0
        wt = rng.standard_normal((c, 3, 3, 1)).astype(dtype)
        if special:
            wt.flat[0] = np.inf  # a padded tap gives 0 * inf = NaN, as on the padded copy
        bias = rng.standard_normal(c).astype(dtype) if k % 2 else None
        activation = k % 3
        args = (x, wt, strides, dilation, pads, (oh, ow), bias, activation)
        compiled, plain = _compiled_and_numpy(monkeypatch, args)
        assert compiled.tobytes() == plain.tobytes(), f"case {k}"
        if special:
            continue
        xp = np.pad(x.astype(np.float64), ((0, 0), (pads[0], pads[1]), (pads[2], pads[3]), (0, 0)))
        ref = np.zeros((n, oh, ow, c))
        for i in range(3):
            for j in range(3):
                top, left = i * dilation[0], j * dilation[1]
                ref += xp[:, top: top + (oh - 1) * strides[0] + 1: strides[0],
                          left: left + (ow - 1) * strides[1] + 1: strides[1]] * wt[:, i, j, 0].astype(np.float64)
        if bias is not None:
            ref += bias
        if activation == 1:
            ref = np.maximum(ref, 0)
        elif activation == 2:
            ref = np.clip(ref, 0, 6)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(compiled, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("activation", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_convolution_finish_compiled_pass_is_identical_to_numpy(monkeypatch, dtype, activation):
    # bias, the plan's fused MUL/ADD vectors and the activation in one compiled pass against numpy's passes:
    # the same values, NaN and signs of zero (-0.0 + -0.0 reaches the activation: RELU gives +0.0, RELU6 -0.0)
    from nnrt_onnx.accel import numba_loops as _accel
    from nnrt_onnx.accel.finish import Finish

    if not _accel.enabled():
        pytest.skip("numba is off or not installed")
    rng = np.random.default_rng(7 + activation)
    c = 19  # (short rows: the compiled pass takes 13 rows at a time as one, and the last 2 of 15 as they are)
    block = (rng.standard_normal((3, 5, c)) * 8).astype(dtype)
    block[0, 0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    block[1, :, 0] = -0.0
    bias = rng.standard_normal(c).astype(dtype)
    bias[0] = -0.0
    residual = rng.standard_normal(block.shape).astype(dtype)
    residual[2, 4, :2] = [np.nan, -0.0]
    for post in ((), (("mul", rng.standard_normal(c).astype(dtype)), ("add", rng.standard_normal(c).astype(dtype))),
                 (("addend", residual), ("mul", rng.standard_normal(c).astype(dtype)))):
        compiled, plain = block.copy(), block.copy()
        with np.errstate(all="ignore"):
            Finish(bias, post, activation)(compiled)
            monkeypatch.setenv("NNRT_ONNX_NUMBA", "0")
            Finish(bias, post, activation)(plain)
            monkeypatch.delenv("NNRT_ONNX_NUMBA")
        np.testing.assert_array_equal(compiled, plain)
        np.testing.assert_array_equal(np.signbit(compiled), np.signbit(plain))
        if not post:  # against a hand computation
            want = block.astype(np.float64) + bias
            want = {0: want, 1: np.where(want > 0, want, np.where(np.isnan(want), want, 0.0)),
                    2: np.where(np.isnan(want), want, np.minimum(np.maximum(want, 0.0), 6.0))}[activation]
            np.testing.assert_allclose(compiled, want, rtol=np.finfo(dtype).eps)
            zeros = compiled[1, :, 0]  # -0.0 + -0.0: RELU gives +0.0, RELU6 keeps -0.0 (np.clip), none keeps it
            assert (zeros == 0).all() and np.signbit(zeros).all() == (activation != 1)


# ---------------------------------------------------------------------------------------------------------------
# Narrow GEMMs in row blocks for OpenBLAS's small-matrix kernel (kernels/_gemm.py): every convolution path that
# blocks, with a fake single-threaded small-kernel BLAS so that every machine blocks, against the float64 oracle


@pytest.mark.parametrize("shape,out_c,kernel,stride,pads,method", [
    ((1, 40, 38, 16), 96, (1, 1), 1, (0, 0, 0, 0), None),  # 1x1: one GEMM of the pixels, 1520 x 16 x 96
    ((1, 80, 79, 3), 32, (3, 3), 2, (1, 1, 1, 1), None),  # a 3-channel stem: an im2col block, 1600 x 27 x 32
    ((1, 48, 47, 3), 16, (7, 7), 2, (3, 3, 3, 3), None),  # a 7x7 stem: 576 x 147 x 16
    ((1, 40, 31, 32), 16, (3, 1), 1, (1, 1, 0, 0), "kn2row"),  # kn2row's GEMM: 1240 x 32 x 48
    ((1, 40, 42, 64), 64, (3, 3), 1, (1, 1, 1, 1), "winograd"),  # Winograd's 16 GEMMs: tile blocks of <= 244 rows
])
def test_small_kernel_blocks_in_every_conv_path(monkeypatch, shape, out_c, kernel, stride, pads, method):
    from nnrt_onnx.accel import conv as conv_kernels
    from nnrt_onnx.accel import gemm as _gemm
    from nnrt_onnx.accel import numba_loops as _accel
    from nnrt_onnx.accel.conv import conv2d

    if method and not _accel.enabled():
        pytest.skip("numba is off or not installed: no kn2row, and Winograd's blocks are the numpy path's")
    monkeypatch.setattr(_gemm, "_blas", lambda: _FakeBlas(1))
    monkeypatch.setattr(_gemm, "uses_tiles", lambda *a, **k: False)  # the BLAS path under test, not the register tiles
    limits = []
    real = _gemm.small_kernel_rows
    monkeypatch.setattr(_gemm, "small_kernel_rows", lambda *a: limits.append(real(*a)) or limits[-1])
    kh, kw = kernel
    rng = np.random.default_rng(sum(shape) + out_c + kh)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((out_c, kh, kw, shape[3])) / np.sqrt(kh * kw * shape[3])).astype(np.float32)
    b = rng.standard_normal(out_c).astype(np.float32)
    pt, pb, pl, pr = pads
    oh = (shape[1] + pt + pb - kh) // stride + 1
    ow = (shape[2] + pl + pr - kw) // stride + 1
    assert conv_kernels.special_method(x, w, (stride, stride), (1, 1), 1, (oh, ow)) == method
    got = conv2d(x, w, b, strides=[stride, stride], pad_mode=-1, pad_list=list(pads), dilation=[1, 1], group=1,
                 ctx=None, activation=2)
    want = np.clip(_direct_conv_f64(x, w, b, pads)[:, ::stride, ::stride][:, :oh, :ow], 0, 6)
    assert limits and max(limits) > 0  # the blocks under test were taken
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# The compiled im2col (short kernel-row runs): the same copy as the numpy path, against an explicit loop here


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size,c,kernel,strides,d_h,rows", [
    ((11, 13), 3, (7, 7), (2, 2), 1, (0, 3)),  # a stem: 7x7/2 over 3 channels, a block of output rows
    ((9, 8), 16, (3, 3), (1, 1), 2, (1, 4)),  # dilated rows (kernel columns stay contiguous)
    ((6, 10), 5, (2, 3), (1, 2), 1, (0, 5)),  # unequal strides and kernel sides
])
def test_compiled_im2col_copies_each_window_row(dtype, size, c, kernel, strides, d_h, rows):
    from nnrt_onnx.accel import numba_loops as _accel

    if not _accel.enabled():
        pytest.skip("numba is off or not installed")
    rng = np.random.default_rng(size[0] * c)
    xp = rng.standard_normal(size + (c,)).astype(dtype)
    kh, kw = kernel
    ow = (size[1] - kw) // strides[1] + 1
    r0, r1 = rows
    cols = np.full(((r1 - r0) * ow, kh * kw * c), np.nan, dtype)
    assert _accel.im2col_rows(xp, cols, r0, r1, kernel, strides, d_h)
    want = np.empty_like(cols)
    for r in range(r0, r1):
        for q in range(ow):
            window = [xp[r * strides[0] + i * d_h, q * strides[1] + j] for i in range(kh) for j in range(kw)]
            want[(r - r0) * ow + q] = np.concatenate(window)
    np.testing.assert_array_equal(cols, want)
    assert not _accel.im2col_rows(xp.astype(np.int32), cols.astype(np.int32), r0, r1, kernel, strides, d_h)


# ---------------------------------------------------------------------------------------------------------------
# kernels/_gemm.py (the convolutions' GEMMs): narrow products in row blocks sized for OpenBLAS's small-matrix kernel.
# The rule (which products are blocked, how) checked by hand computation, the products against a float64 oracle; a
# fake BLAS controller makes every machine take the blocked path (the blocks are ordinary products wherever they run)


class _FakeBlas:
    def __init__(self, threads=1):
        self.threads = threads

    def get_num_threads(self):
        return self.threads


@pytest.fixture
def small_kernel_blas(monkeypatch):
    monkeypatch.setattr(_gemm, "_blas", lambda: _FakeBlas(1))
    monkeypatch.setattr(_gemm, "uses_tiles", lambda *a, **k: False)  # the BLAS path under test, not the register tiles


F32 = np.dtype(np.float32)


def test_block_rows_rule(small_kernel_blas):
    # 12544 x 27 x 32 (a 3-channel stem's im2col): at most 1e6 // 864 = 1157 rows per block, so 11 blocks, made
    # equal: ceil(12544 / 11) = 1141 rows
    assert _gemm.block_rows(12544, 27, 32, F32) == 1141
    # 3136 x 144 x 32: limit 1e6 // 4608 = 217 rows, 15 blocks of ceil(3136 / 15) = 210
    assert _gemm.block_rows(3136, 144, 32, F32) == 210
    assert _gemm.block_rows(12544, 16, 96, F32) == 628  # limit 651, 20 blocks of ceil(12544 / 20) = 628
    # one call: N not a multiple of 16, K * N above 6144, float64, already under the limit
    assert _gemm.block_rows(3136, 96, 24, F32) == 0
    assert _gemm.block_rows(3136, 97, 64, F32) == 0  # K * N = 6208
    assert _gemm.block_rows(3136, 96, 64, F32) == 157  # limit 162, 20 blocks of ceil(3136 / 20) = 157
    assert _gemm.block_rows(12544, 27, 32, np.dtype(np.float64)) == 0
    assert _gemm.block_rows(1157, 27, 32, F32) == 0  # 999,648 multiply-adds: the whole product is small already


def test_no_blocks_with_several_blas_threads_or_another_blas(monkeypatch):
    monkeypatch.setattr(_gemm, "_blas", lambda: _FakeBlas(2))  # the small kernel is single-threaded
    assert _gemm.block_rows(12544, 27, 32, F32) == 0
    monkeypatch.setattr(_gemm, "_blas", lambda: None)  # a BLAS (or core) without the small-matrix kernel
    assert _gemm.block_rows(12544, 27, 32, F32) == 0
    assert _gemm.small_kernel_rows(27, 32, F32) == 0


def test_blas_detection_names_a_small_kernel_core_or_nothing():
    blas = _gemm._blas()
    assert blas is None or str(blas.architecture).lower() in _gemm.SMALL_KERNEL_CORES


def test_numpy_openblas_is_numpys_own_library_or_the_only_one():
    from types import SimpleNamespace

    numpy_dir = "/site/numpy"
    bundled = SimpleNamespace(filepath="/site/numpy.libs/libscipy_openblas64_-abc.so")
    scipys = SimpleNamespace(filepath="/site/scipy.libs/libscipy_openblas-def.so")
    inside = SimpleNamespace(filepath="/site/numpy/.dylibs/libscipy_openblas64_.dylib")
    system = SimpleNamespace(filepath="/usr/lib/libopenblas.so.0")
    assert _gemm.numpy_openblas([scipys, bundled], numpy_dir) is bundled  # a wheel's own, whatever the order
    assert _gemm.numpy_openblas([inside, scipys], numpy_dir) is inside
    assert _gemm.numpy_openblas([system], numpy_dir) is system  # linked to a system OpenBLAS: the only one
    assert _gemm.numpy_openblas([system, scipys], numpy_dir) is None  # several, none numpy's: no guess
    assert _gemm.numpy_openblas([], numpy_dir) is None
    assert _gemm.numpy_openblas([SimpleNamespace(filepath="/site/numpyx/lib.so"), scipys], numpy_dir) is None


@pytest.mark.parametrize("m,k,n", [(3001, 27, 32), (4099, 16, 96), (2500, 48, 64), (2777, 128, 48)])
def test_matmul_into_matches_float64_in_blocks(small_kernel_blas, m, k, n):
    assert _gemm.block_rows(m, k, n, F32) > 0  # the blocked path is the one under test
    rng = np.random.default_rng(m + k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    out = np.full((m, n), np.nan, np.float32)
    assert _gemm.matmul_into(a, b, out) is out
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    # into a column slice of a wider array (a strided output), leaving the other columns alone
    wide = np.zeros((m, n + 16), np.float32)
    _gemm.matmul_into(a, b, wide[:, 8:8 + n])
    np.testing.assert_allclose(wide[:, 8:8 + n], want, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    assert not wide[:, :8].any() and not wide[:, 8 + n:].any()


# ---------------------------------------------------------------------------------------------------------------
# kernels/_tiles.py: float32 products in AVX-512 register tiles (numba + LLVM IR), against float64 products computed
# here; their fused bias/activation bit for bit against the compiled finish pass; and every convolution path that
# uses them, against the float64 direct convolution. Skipped where the tiles cannot run (no numba, no AVX-512).

def _tiles_or_skip():
    from nnrt_onnx.accel import tiles as _tiles

    if not _tiles.available():
        pytest.skip("the register tiles need numba and an AVX-512 CPU")
    return _tiles


@pytest.mark.parametrize("m,k,n", [
    (1, 1, 1), (5, 3, 7), (3, 2, 200),  # fewer rows than a tile; a single k; N > 64: several column panels
    (13, 27, 16), (14, 27, 16), (47, 64, 32), (53, 9, 48), (50, 40, 64),  # each tile height, its 4-row and 1-row tails
    (100, 300, 37), (200, 513, 64), (1000, 600, 130),  # K in blocks (> 256: later blocks add), masked last vectors
    (700, 33, 24), (1500, 16, 96),  # chunks of rows (A's block in L2), N = 24 (MobileNetV2's projections)
])
def test_tiles_match_float64_products(m, k, n):
    _tiles = _tiles_or_skip()
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = _tiles.padded(rng.standard_normal((k, n)).astype(np.float32))
    out = np.full((m, n), np.nan, np.float32)
    assert _tiles.matmul(a, b, out)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=2e-6 * np.sqrt(k) * np.abs(want).max())


@pytest.mark.parametrize("m,k,n", [(14, 20, 16), (47, 9, 32), (53, 30, 48), (50, 40, 64), (31, 300, 20)])
def test_gathered_tiles_match_float64_products(m, k, n):
    # every tile height with its 4-row and 1-row tails, each row's values read at the same offsets from a row
    # start a stride apart (a convolution's windows), here offsets out of order and with gaps
    _tiles = _tiles_or_skip()
    rng = np.random.default_rng(m + k + n)
    span, stride = 3 * k, 5
    flat = rng.standard_normal((m - 1) * stride + span).astype(np.float32)
    windows = np.lib.stride_tricks.as_strided(flat, (1, m, span), (0, 4 * stride, 4), writeable=False)
    columns = rng.permutation(span)[:k].astype(np.int64)
    b = _tiles.padded(rng.standard_normal((k, n)).astype(np.float32))
    out = np.full((1, m, n), np.nan, np.float32)
    assert _tiles.gathered_matmul(windows, columns, b, out)
    a = np.stack([flat[row * stride + columns] for row in range(m)]).astype(np.float64)
    want = a @ b.astype(np.float64)
    np.testing.assert_allclose(out[0], want, rtol=1e-5, atol=2e-6 * np.sqrt(k) * np.abs(want).max())


def test_tiles_read_and_write_strided_rows_and_leave_the_rest():
    # a column slice of the input (a group's channels) into a column slice of the output (a concatenation's)
    _tiles = _tiles_or_skip()
    rng = np.random.default_rng(5)
    wide_in = rng.standard_normal((301, 100)).astype(np.float32)
    b = _tiles.padded(rng.standard_normal((30, 20)).astype(np.float32))
    wide_out = np.zeros((301, 80), np.float32)
    assert _tiles.matmul(wide_in[:, 40:70], b, wide_out[:, 10:30])
    want = wide_in[:, 40:70].astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(wide_out[:, 10:30], want, rtol=1e-5, atol=1e-5)
    assert not wide_out[:, :10].any() and not wide_out[:, 30:].any()


def test_tiles_stack_one_product_per_matrix_with_its_own_group_of_channels():
    # a grouped finish: 4 products, each with its group's slice of the bias and of a scale, and its own residual
    _tiles = _tiles_or_skip()
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 61, 34)).astype(np.float32)
    b = _tiles.padded(rng.standard_normal((4, 34, 34)).astype(np.float32))
    bias, scale = (rng.standard_normal(4 * 34).astype(np.float32) for _ in range(2))
    addend = rng.standard_normal((4, 61, 34)).astype(np.float32)
    out = np.empty((4, 61, 34), np.float32)
    assert _tiles.matmul(a, b, out, _tiles.tile_finish(4 * 34, bias, 1, [("mul", scale)], addend, groups=4))
    product = a.astype(np.float64) @ b.astype(np.float64)
    want = np.maximum((product + bias.reshape(4, 1, 34)) * scale.reshape(4, 1, 34) + addend, 0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    assert _tiles.matmul(a, b, out, _tiles.tile_finish(34, bias[:34]))  # one bias for every matrix
    np.testing.assert_allclose(out, product + bias[:34], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("post", [(), (("mul", 0),), (("add", 1), ("mul", 0)), (("addend", None),),
                                  (("mul", 0), ("add", 1), ("addend", None))])
@pytest.mark.parametrize("activation", [0, 1, 2])
@pytest.mark.parametrize("with_bias", [False, True])
def test_tiles_finish_is_bit_identical_to_the_finish_pass(activation, with_bias, post):
    from nnrt_onnx.accel import numba_loops as _accel

    _tiles = _tiles_or_skip()
    rng = np.random.default_rng(activation * 2 + with_bias)
    m, k, n = 61, 300, 37  # K in two blocks: the finish only after the last
    a = (rng.standard_normal((m, k)) * 3).astype(np.float32)
    a[0, 0], a[1], a[2, 0] = np.nan, 0.0, np.inf  # NaN and +-inf rows; an all-zero row gives +-0.0 with the bias
    b = _tiles.padded(rng.standard_normal((k, n)).astype(np.float32))
    bias = (rng.standard_normal(n) * 4).astype(np.float32)
    bias[:3] = (-0.0, 7.5, -7.5)
    bias = bias if with_bias else None
    vectors = [(rng.standard_normal(n) * 2).astype(np.float32) for _ in range(2)]
    vectors[0][3:5] = (np.inf, -0.0)
    wide = rng.standard_normal((m, n + 9)).astype(np.float32)  # the residual: a strided view
    addend = wide[:, 4:4 + n]
    operations = [(name, vectors[i]) for name, i in post if name != "addend"]
    fused = np.empty((m, n), np.float32)
    finish = _tiles.tile_finish(n, bias, activation, operations, addend if post and post[-1][0] == "addend" else None)
    assert _tiles.matmul(a, b, fused, finish)
    separate = np.empty((m, n), np.float32)
    assert _tiles.matmul(a, b, separate)
    arrays = _accel.finish_arrays(bias, [(name, None if name == "addend" else vectors[i]) for name, i in post], n,
                                  np.float32)
    assert _accel.finish_rows(separate, arrays, activation, np.ascontiguousarray(addend) if post else None)
    np.testing.assert_array_equal(fused.view(np.uint32), separate.view(np.uint32))


def test_tile_finish_tables_are_made_once_for_read_only_vectors_only():
    from nnrt_onnx.accel import tiles as _tiles  # (the tables are plain numpy: no compiled tiles needed)

    bias = np.arange(24, dtype=np.float32)
    assert _tiles.tile_finish(24, bias, 1).table[0, 0, 0] == 0
    bias[0] = 5  # a writeable array may change between calls: its table is made anew
    assert _tiles.tile_finish(24, bias, 1).table[0, 0, 0] == 5
    bias.flags.writeable = False  # a compiled model's constant
    scale = np.full(24, 2, np.float32)
    scale.flags.writeable = False
    first = _tiles.tile_finish(24, bias, 1, [("mul", scale)])
    again = _tiles.tile_finish(24, bias, 1, [("mul", scale)])
    assert again.table is first.table and again.code == first.code
    assert _tiles.tile_finish(24, bias, 2, [("mul", scale)]).code != first.code  # another activation
    assert _tiles.tile_finish(24, bias, 1, [("add", scale)]).code != first.code  # another operation
    addend = np.ones((10, 24), np.float32)
    with_addend = _tiles.tile_finish(24, bias, 1, [("mul", scale)], addend)
    assert with_addend.code != first.code and with_addend.addend.shape == (1, 10, 24)
    np.testing.assert_array_equal(with_addend.table, first.table)
    other = scale.copy()  # equal values, another array: its own entry, checked by identity
    other.flags.writeable = False
    assert _tiles.tile_finish(24, bias, 1, [("mul", other)]).table is not first.table


def test_tiles_decline_what_they_cannot_run():
    _tiles = _tiles_or_skip()
    rng = np.random.default_rng(7)
    a = rng.standard_normal((40, 20)).astype(np.float32)
    out = np.full((40, 5), 7.0, np.float32)
    tight = rng.standard_normal((20, 5)).astype(np.float32)  # 5 columns: the last row's vector would run past it
    assert not _tiles.matmul(a, tight, out)
    inside = np.zeros((21, 16), np.float32)  # a 5-column view with room after its last row: read as is
    inside[:20, :5] = tight
    assert _tiles.matmul(a, inside[:20, :5], out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ tight.astype(np.float64), rtol=1e-5, atol=1e-5)
    out[...] = 7.0
    b = _tiles.padded(tight)
    assert not _tiles.matmul(a.astype(np.float64), b.astype(np.float64), out.astype(np.float64))
    assert not _tiles.matmul(a[:, ::2], b[:10], out)  # a strided column step
    assert _tiles.tile_finish(5, np.zeros(5, np.float64)) is None  # a bias of another dtype
    assert _tiles.tile_finish(5, None, 3) is None  # no such activation
    assert _tiles.tile_finish(5, None, 0, [("mul", np.ones(5, np.float32))] * 3) is None  # three vectors
    assert not _tiles.matmul(a, b, out, _tiles.tile_finish(5, None, 0, (), out))  # a residual that is the output
    assert not _tiles.matmul(a[:, :5], b[:5], a[:, :5])  # the output overlaps the input
    assert (out == 7.0).all()


@pytest.mark.parametrize("shape,out_c,kernel,stride,pads,group,method", [
    ((1, 60, 58, 16), 24, (1, 1), 1, (0, 0, 0, 0), 1, None),  # 1x1 to 24 channels: one tiled product, finished
    ((1, 81, 79, 16), 40, (1, 1), 2, (0, 0, 0, 0), 1, None),  # 1x1 stride 2
    ((1, 80, 79, 3), 32, (3, 3), 2, (1, 1, 1, 1), 1, None),  # a stem, straight from the padded input (no im2col)
    ((1, 48, 47, 3), 24, (7, 7), 2, (3, 3, 3, 3), 1, None),  # a 7x7/2 stem
    ((1, 33, 30, 16), 40, (5, 3), 1, (2, 2, 1, 1), 1, None),  # 5x3, no special method
    ((1, 33, 34, 16), 32, (3, 3), 2, (1, 1, 1, 1), 1, None),  # 3x3/2 (MobileNet's, ResNet's downsampling)
    ((1, 30, 29, 136), 136, (1, 1), 1, (0, 0, 0, 0), 4, None),  # grouped 1x1 (ShuffleNet): strided groups
    ((1, 17, 19, 24), 48, (3, 3), 1, (1, 1, 1, 1), 2, None),  # grouped 3x3: a stack of im2col products
    ((1, 60, 41, 32), 8, (3, 1), 1, (1, 1, 0, 0), 1, "kn2row"),  # kn2row's bare product, N = 3 taps x 8
    ((1, 40, 42, 64), 40, (3, 3), 1, (1, 1, 1, 1), 1, "winograd"),  # a stack of 16 bare products per block
])
@pytest.mark.parametrize("activation", [0, 2])
def test_conv_paths_in_register_tiles_match_float64(monkeypatch, shape, out_c, kernel, stride, pads, group, method,
                                                    activation):
    from nnrt_onnx.accel import conv as conv_kernels
    from nnrt_onnx.accel import numba_loops as _accel
    from nnrt_onnx.accel.conv import conv2d

    _tiles = _tiles_or_skip()
    if method and not _accel.enabled():
        pytest.skip("numba is off: no kn2row, and Winograd's blocks are the numpy path's")
    monkeypatch.setattr(_gemm, "single_threaded", lambda: True)  # the runtime's one-thread policy
    calls = []
    real, real_gathered = _tiles.matmul, _tiles.gathered_matmul
    monkeypatch.setattr(_tiles, "matmul", lambda *a: calls.append(a[3:]) or real(*a))
    monkeypatch.setattr(_tiles, "gathered_matmul", lambda *a: calls.append(a[4:]) or real_gathered(*a))
    kh, kw = kernel
    c = shape[3]
    rng = np.random.default_rng(sum(shape) + out_c + kh + group)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((out_c, kh, kw, c // group)) / np.sqrt(kh * kw * c / group)).astype(np.float32)
    b = rng.standard_normal(out_c).astype(np.float32)
    pt, pb, pl, pr = pads
    oh = (shape[1] + pt + pb - kh) // stride + 1
    ow = (shape[2] + pl + pr - kw) // stride + 1
    assert conv_kernels.special_method(x, w, (stride, stride), (1, 1), group, (oh, ow)) == method
    got = conv2d(x, w, b, strides=[stride, stride], pad_mode=-1, pad_list=list(pads), dilation=[1, 1], group=group,
                 ctx=None, activation=activation)
    og = out_c // group
    want = np.concatenate([_direct_conv_f64(x[..., g * (c // group):(g + 1) * (c // group)], w[g * og:(g + 1) * og],
                                            b[g * og:(g + 1) * og], pads) for g in range(group)], axis=-1)
    want = want[:, ::stride, ::stride][:, :oh, :ow]
    want = np.clip(want, 0, 6) if activation == 2 else want
    assert calls  # the products ran in the tiles
    if method is None:
        assert all(len(extra) == 1 and extra[0] is not None for extra in calls)  # ... which applied the finish
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_tiles_rule(monkeypatch):
    from nnrt_onnx.accel import tiles as _tiles

    monkeypatch.setattr(_tiles, "available", lambda: True)
    monkeypatch.setattr(_gemm, "single_threaded", lambda: True)
    monkeypatch.setattr(_gemm, "_blas", lambda: _FakeBlas(1))  # a BLAS with the small-matrix kernel
    assert _gemm.uses_tiles(3136, 144, 24, F32)  # N = 24: no small kernel; 10.8M multiply-adds
    assert not _gemm.uses_tiles(3136, 27, 32, F32)  # N % 16 == 0, K N <= 6144: the small kernel's
    assert _gemm.uses_tiles(3136, 27, 32, F32, finished=True)  # ... unless the tiles save the finish's pass
    assert _gemm.uses_tiles(3136, 576, 32, F32)  # K N = 18432: beyond the small kernel
    assert not _gemm.uses_tiles(3136, 64, 96, F32)  # too wide for a bare product,
    assert _gemm.uses_tiles(3136, 64, 96, F32, finished=True)  # not with a finish (K N = 6144 <= 65536)
    assert _gemm.uses_tiles(3136, 512, 128, F32, finished=True)  # K N = 65536
    assert not _gemm.uses_tiles(3136, 512, 144, F32, finished=True)  # K N = 73728
    assert _gemm.uses_tiles(64, 960, 1280, F32, finished=True)  # ... at any K N for <= 64 rows
    assert _gemm.uses_tiles(16, 960, 1280, F32, batch=4, finished=True)  # (all products of the call together)
    assert not _gemm.uses_tiles(65, 960, 1280, F32, finished=True)
    assert not _gemm.uses_tiles(49, 960, 1280, F32)  # (a bare product: N <= 64 only)
    assert not _gemm.uses_tiles(196, 40, 24, F32)  # 188,160 multiply-adds: the call's overhead would show
    assert not _gemm.uses_tiles(1024, 27, 16, F32, finished=True)  # a toy CNN's layer: not worth compiling for
    assert _gemm.uses_tiles(128, 64, 64, F32, finished=True)  # BERT-tiny's linear layer with its bias: 2^19
    assert not _gemm.uses_tiles(128, 64, 64, F32)  # (bare: under 2^20)
    assert _gemm.uses_tiles(49, 40, 24, F32, batch=16 * 2)  # a stack: the whole call's multiply-adds count
    assert not _gemm.uses_tiles(3136, 4, 24, F32, finished=True)  # K < 8
    assert not _gemm.uses_tiles(3136, 64, 4, F32, finished=True)  # N < 8
    assert not _gemm.uses_tiles(3136, 144, 24, np.dtype(np.float64))
    monkeypatch.setattr(_gemm, "single_threaded", lambda: False)  # the tiles use one core
    assert not _gemm.uses_tiles(3136, 144, 24, F32)
    monkeypatch.setattr(_gemm, "single_threaded", lambda: True)
    monkeypatch.setattr(_tiles, "available", lambda: False)
    assert not _gemm.uses_tiles(3136, 144, 24, F32)


def test_3x3_rule_takes_the_direct_convolution_where_it_measured_fastest(monkeypatch):
    # _method_3x3 with the direct path (docs/performance.md, seventh round): the sweep's cells by hand
    from nnrt_onnx.accel import conv as conv_kernels
    from nnrt_onnx.accel import numba_loops as _accel
    from nnrt_onnx.accel import tiles as _tiles

    rule = conv_method.method_3x3
    assert rule(32, 32, 56 * 56, True, direct=True) is None  # ResNet-18-half's 56x56 layers
    assert rule(32, 32, 56 * 56, True, direct=False) == "winograd"  # (no tiles: im2col would be the None path)
    assert rule(16, 64, 112 * 112, True, direct=True) is None
    assert rule(64, 64, 56 * 56, True, direct=True) == "winograd"  # O > 64 C / C > 32: Winograd still
    assert rule(16, 8, 56 * 56, True, direct=True) is None  # O <= 16, 16 <= C <= 4 O, 56x56
    assert rule(16, 8, 28 * 28, True, direct=True) == "kn2row"  # ... not below 3000 pixels
    assert rule(128, 24, 28 * 28, True, direct=True) == "kn2row"  # O <= 24, C >= 4 O
    assert rule(128, 24, 28 * 28, True, direct=False) == "winograd"
    assert rule(32, 32, 14 * 14, True, direct=True) == "kn2row"  # under 400 pixels: the rule without direct
    assert rule(256, 64, 7 * 7, True) == "kn2row"  # under 100 pixels: kn2row up to 64 output channels,
    assert rule(256, 256, 7 * 7, True) == "winograd"  # Winograd above (eighth round)
    assert rule(8, 96, 7 * 7, True) == "winograd"
    assert rule(4, 256, 7 * 7, True) is None  # (fewer than 8 input channels, or O >= 16 C: im2col)
    assert rule(16, 256, 7 * 7, True) is None
    if _accel.winograd_transforms() is None:
        return
    monkeypatch.setattr(_tiles, "available", lambda: True)
    monkeypatch.setattr(_gemm, "single_threaded", lambda: True)
    x = np.zeros((1, 56, 56, 32), np.float32)
    w = np.zeros((32, 3, 3, 32), np.float32)
    assert conv_kernels.special_method(x, w, (1, 1), (1, 1), 1, (56, 56)) is None
    assert conv_kernels.special_method(np.zeros((2, 56, 56, 32), np.float32), w, (1, 1), (1, 1), 1,
                                        (56, 56)) == "winograd"  # two images: no direct path
    monkeypatch.setattr(_gemm, "single_threaded", lambda: False)  # BLAS threads: no tiles
    assert conv_kernels.special_method(x, w, (1, 1), (1, 1), 1, (56, 56)) == "winograd"


@pytest.mark.parametrize("kernel,stride,dilation,pads", [
    ((3, 3), (2, 2), (1, 1), (0, 1, 0, 1)),  # 3x3/2, pads on one side
    ((3, 3), (1, 1), (2, 2), (2, 2, 2, 2)),  # dilated: the window's columns are C apart, not contiguous
    ((1, 5), (1, 2), (1, 1), (0, 0, 2, 2)),  # 1x5, unequal strides
    ((4, 2), (3, 1), (1, 3), (1, 2, 3, 0)),  # even kernel, both dilations and strides uneven
])
def test_direct_convolution_in_tiles_matches_float64(monkeypatch, kernel, stride, dilation, pads):
    # _direct_in_tiles: every kernel, stride and dilation read straight from the padded input at the weights'
    # offsets, finished in the tiles (bias, ReLU6) or, with the plan's fused operations, by the finish pass after
    from nnrt_onnx.accel import conv as conv_kernels

    _tiles = _tiles_or_skip()
    monkeypatch.setattr(_gemm, "single_threaded", lambda: True)
    calls = []
    real = _tiles.gathered_matmul
    monkeypatch.setattr(_tiles, "gathered_matmul", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(sum(kernel) + sum(stride) + sum(dilation))
    kh, kw = kernel
    x = rng.standard_normal((1, 57, 61, 12)).astype(np.float32)  # (every layer >= 2^20 multiply-adds: tiles' rule)
    w = (rng.standard_normal((20, kh, kw, 12)) / np.sqrt(kh * kw * 12)).astype(np.float32)
    b = rng.standard_normal(20).astype(np.float32)
    pt, pb, pl, pr = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    oh = (xp.shape[1] - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    want = np.zeros((1, oh, ow, 20)) + b
    for i in range(kh):
        for j in range(kw):
            rows = xp[:, i * dilation[0]: i * dilation[0] + (oh - 1) * stride[0] + 1: stride[0],
                      j * dilation[1]: j * dilation[1] + (ow - 1) * stride[1] + 1: stride[1]]
            want += rows @ w[:, i, j, :].astype(np.float64).T
    got = conv_kernels._conv_core(x, w, stride, dilation, pads, 1, (oh, ow), b, 2)
    assert calls
    np.testing.assert_allclose(got, np.clip(want, 0, 6), rtol=1e-5, atol=1e-5)
    scale = rng.standard_normal(20).astype(np.float32)
    addend = rng.standard_normal((1, oh, ow, 20)).astype(np.float32)
    got = conv_kernels._conv_core(x, w, stride, dilation, pads, 1, (oh, ow), b, 1,
                                  post=(("mul", scale), ("addend", addend)))
    np.testing.assert_allclose(got, np.maximum(want * scale + addend, 0), rtol=1e-5, atol=1e-5)
    assert len(calls) == 2


def test_direct_offsets_by_hand():
    # a 2x2 kernel over 3 channels, dilations (2, 3), in an image of rows of 10 pixels (30 values)
    from nnrt_onnx.accel.direct import direct_offsets as _direct_offsets

    w = np.zeros((1, 2, 2, 3), np.float32)
    want = [0, 1, 2, 9, 10, 11, 60, 61, 62, 69, 70, 71]  # (i 2 * 30) + (j 3 * 3) + ch
    assert _direct_offsets(w, 30, 2, 3).tolist() == want


@pytest.mark.parametrize("group,out_c", [(1, 24), (4, 136)])
def test_1x1_convolutions_finish_the_plans_fused_operations_in_tiles(monkeypatch, group, out_c):
    # bias, the plan's MUL/ADD vectors and a residual addend (BN folded after the conv, a ResNet/MobileNet block),
    # then ReLU6: applied by the tiles as they store, a group's slice each for a grouped convolution
    from nnrt_onnx.accel import conv as conv_kernels

    _tiles = _tiles_or_skip()
    monkeypatch.setattr(_gemm, "single_threaded", lambda: True)
    finishes = []
    real = _tiles.matmul
    monkeypatch.setattr(_tiles, "matmul", lambda *a: finishes.append(a[3] if len(a) > 3 else None) or real(*a))
    rng = np.random.default_rng(group + out_c)
    c = 16 * group
    x = rng.standard_normal((1, 60, 58, c)).astype(np.float32)
    w = (rng.standard_normal((out_c, 1, 1, c // group)) / 4).astype(np.float32)
    b, scale, shift = (rng.standard_normal(out_c).astype(np.float32) for _ in range(3))
    addend = rng.standard_normal((1, 60, 58, out_c)).astype(np.float32)
    post = (("mul", scale), ("add", shift), ("addend", addend))
    got = conv_kernels._conv_core(x, w, (1, 1), (1, 1), (0, 0, 0, 0), group, (60, 58), b, 2, post=post)
    assert finishes and all(f is not None and f.addend is not None for f in finishes)
    og, cg = out_c // group, c // group
    product = np.concatenate([x[..., g * cg:(g + 1) * cg].astype(np.float64) @ w[g * og:(g + 1) * og, 0, 0].T
                              for g in range(group)], axis=-1)
    want = np.clip((product + b) * scale + shift + addend, 0, 6)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_avx512_kernels_that_do_not_compile_leave_convolutions_to_their_other_paths(monkeypatch):
    # a numba/LLVM that rejects the IR: a warning, no compiled function, and every caller on its other path (BLAS
    # for the tiles, numba's loop for the depthwise convolution: same results)
    import importlib

    from nnrt_onnx.accel import avx512 as _avx512
    from nnrt_onnx.accel import conv as conv_kernels
    from nnrt_onnx.accel import numba_loops as _accel
    from nnrt_onnx.accel import tiles as _tiles

    real_import = importlib.import_module

    def failing_import(name, package=None):
        if name.endswith((".tile_kernels", ".depthwise_vectors")):
            raise RuntimeError("LLVM ERROR: unsupported intrinsic")
        return real_import(name, package)

    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 9, 10, 20)).astype(np.float32)
    w = rng.standard_normal((20, 3, 3, 1)).astype(np.float32)
    b = rng.standard_normal(20).astype(np.float32)
    with_vectors = conv_kernels._conv_core(x, w, (1, 1), (1, 1), (1, 1, 1, 1), 20, (9, 10), b, 2)
    monkeypatch.setattr(importlib, "import_module", failing_import)
    monkeypatch.setattr(_avx512, "_LOADED", {})
    llvm_binding = pytest.importorskip("llvmlite.binding")
    monkeypatch.setattr(llvm_binding, "get_host_cpu_features", lambda: {"avx512f": True})  # any machine
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    monkeypatch.delenv("NNRT_ONNX_NUMBA", raising=False)
    with pytest.warns(RuntimeWarning, match="did not compile"):
        assert not _tiles.available()
    monkeypatch.setattr(_gemm, "single_threaded", lambda: True)
    assert not _gemm.uses_tiles(3136, 144, 24, F32)
    with pytest.warns(RuntimeWarning, match="did not compile"):
        without = conv_kernels._conv_core(x, w, (1, 1), (1, 1), (1, 1, 1, 1), 20, (9, 10), b, 2)
    if _accel.enabled():  # (both runs on numba's loop or the IR: bit-identical either way)
        np.testing.assert_array_equal(without, with_vectors)


@pytest.mark.parametrize("h,w,c,stride,dilation,pads,activation,with_bias", [
    (9, 11, 37, 1, 1, (1, 1), 2, True),  # 37 channels: two whole blocks of 16 and a masked one
    (8, 8, 16, 2, 1, (0, 1), 1, False),
    (10, 13, 5, 2, 2, (2, 0), 0, True),  # dilated, one masked block
    (5, 30, 50, 1, 3, (3, 3), 1, True),  # pads as wide as the dilated kernel: rows and columns all in the padding
    (7, 7, 33, 3, 1, (1, 2), 2, False),
])
def test_depthwise_vectors_are_bit_identical_to_numbas_loop(h, w, c, stride, dilation, pads, activation, with_bias):
    # the AVX-512 depthwise 3x3 (_depthwise_vectors) does _accel's loop's float operations in its order: the same
    # bits, NaN, inf (0 * inf in the padding: NaN) and -0.0 included
    from nnrt_onnx.accel import avx512 as _avx512
    from nnrt_onnx.accel import numba_loops as _accel

    vectors = _avx512.compiled("depthwise_vectors", "depthwise_3x3")
    loop = _accel._get("depthwise3x3")
    if vectors is None or loop is None:
        pytest.skip("needs numba and an AVX-512 CPU")
    rng = np.random.default_rng(h * w + c)
    x = rng.standard_normal((2, h, w, c)).astype(np.float32)
    x[0, 0, 0, :3] = [np.nan, np.inf, -0.0]
    x[1, -1, -1, -2:] = [-np.inf, -0.0]
    wt = rng.standard_normal((3, 3, c)).astype(np.float32)
    wt[0, 0, 1] = np.inf
    wt[2, 2, 3] = -0.0
    bias = rng.standard_normal(c).astype(np.float32) if with_bias else np.zeros(1, np.float32)
    pt, pl = pads
    oh = (h + 2 * pt - 2 * dilation - 1) // stride + 1
    ow = (w + 2 * pl - 2 * dilation - 1) // stride + 1
    want = np.full((2, oh, ow, c), 7, np.float32)
    got = want.copy()
    args = (stride, stride, dilation, dilation, pt, pl, activation, with_bias)
    loop(x, wt, bias, want, *args)
    vectors(x, wt, bias, got, *args)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("kernel,channels,out_c,size,group", [
    (1, 8, 16, 9, 1), (3, 64, 64, 12, 1), (3, 3, 32, 40, 1), (3, 32, 8, 20, 1), (1, 8, 8, 9, 4)])
def test_conv2d_reads_an_nchw_input_like_its_nhwc_view(kernel, channels, out_c, size, group):
    # the plan folds an NCHW image's TRANSPOSE into the convolution (``nchw``): every path (1x1, Winograd, direct,
    # kn2row, grouped) gives exactly what it gives for the transposed input
    from nnrt_onnx.accel import conv as conv_kernels

    rng = np.random.default_rng(kernel + channels)
    x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    w = rng.standard_normal((out_c, kernel, kernel, channels // group)).astype(np.float32)
    b = rng.standard_normal(out_c).astype(np.float32)
    params = dict(strides=[1, 1], pad_mode=0, pad_list=[0, 0, 0, 0], dilation=[1, 1], group=group, ctx=None,
                  activation=1)
    want = conv_kernels.conv2d(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), w, b, **params)
    np.testing.assert_array_equal(conv_kernels.conv2d(x, w, b, nchw=True, **params), want)

