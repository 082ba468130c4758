"""nnrt_onnx.geometry against hand-computed cases of the documented formulas: NNAPI's PaddingCode (NeuralNetworks.h)
and the examples of ONNX's node tests (onnx/backend/test/case/node: maxpool.py, convtranspose.py), not our code."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nnrt_onnx import geometry as g
from nnrt_onnx.enums import OH_NN_ReturnCode
from nnrt_onnx.errors import NNRtError

# -- SAME padding (NNAPI: out = (in + stride - 1) / stride, total = max(0, (out - 1) * stride + (k - 1) * d + 1 - in),
#    begin = total / 2, end = (total + 1) / 2; ONNX SAME_LOWER puts the odd unit first)

SAME_CASES = [
    # (size, stride, kernel, dilation) -> out, (begin, end) upper, (begin, end) lower
    ((5, 2, 3, 1), 3, (1, 1), (1, 1)),  # ONNX maxpool_2d_precomputed_same_upper: 5x5, k3, s2 -> 3x3, pads 1,1
    ((6, 2, 3, 1), 3, (0, 1), (1, 0)),  # total 1 (odd): NNAPI padding_to_end is the bigger one
    ((32, 1, 2, 1), 32, (0, 1), (1, 0)),  # ONNX maxpool_2d_same_upper / _lower: pad_shape 1 -> [0, 1] / [1, 0]
    ((7, 1, 3, 2), 7, (2, 2), (2, 2)),  # dilation 2: effective filter 5, total 4
    ((8, 3, 4, 2), 3, (2, 3), (3, 2)),  # ceil(8/3) = 3; effective 7; needed 2*3+7 = 13; total 5
    ((4, 4, 1, 1), 1, (0, 0), (0, 0)),  # the window fits without padding: total max(0, -3) = 0
]


@pytest.mark.parametrize("args,out,upper,lower", SAME_CASES, ids=[str(c[0]) for c in SAME_CASES])
def test_same_padding_follows_nnapi_and_onnx(args, out, upper, lower):
    size, stride, kernel, dilation = args
    extent = g.effective_extent(kernel, dilation)
    assert g.same_output_size(size, stride) == out
    assert g.same_padding(size, stride, extent) == upper
    assert g.same_padding(size, stride, extent, lower=True) == lower
    assert g.auto_pad_padding("SAME_UPPER", size, extent, stride) == upper
    assert g.auto_pad_padding("SAME_LOWER", size, extent, stride) == lower
    # NNRt pad mode 0 is NNAPI SAME whatever the round mode
    assert g.window_axis(g.PAD_MODE_SAME, size, extent, stride, ceil_mode=True) == (out, *upper)
    # the SAME pads make the explicit-padding formula give the SAME size back
    assert g.window_output_size(size, extent, stride, *upper) == out


def test_auto_pad_names():
    assert g.auto_pad_padding("NOTSET", 5, 3, 1, (2, 1)) == (2, 1)
    assert g.auto_pad_padding("", 5, 3, 1, (2, 1)) == (2, 1)
    assert g.auto_pad_padding("VALID", 5, 3, 1, (2, 1)) == (0, 0)
    assert g.AUTO_PAD_PAD_MODES == {"SAME_UPPER": g.PAD_MODE_SAME, "VALID": g.PAD_MODE_VALID}
    with pytest.raises(ValueError):
        g.auto_pad_padding("SAME", 5, 3, 1)


# -- window output sizes (ONNX MaxPool: floor/ceil((in + pads - d*(k-1) - 1) / s + 1), a last window starting in the
#    end padding is dropped)

WINDOW_CASES = [
    # (size, kernel, stride, dilation, pads, ceil) -> out
    ((4, 3, 2, 1, (0, 0), False), 1),  # maxpool_2d_ceil without ceil_mode: floor(1/2 + 1) = 1
    ((4, 3, 2, 1, (0, 0), True), 2),  # ONNX maxpool_2d_ceil: 4x4, k3, s2, ceil_mode -> 2x2
    ((2, 1, 2, 1, (0, 0), True), 1),  # ONNX maxpool_2d_ceil_output_size_reduce_by_one: 2x2, k1, s2 -> 1x1
    ((4, 2, 1, 2, (0, 0), False), 2),  # ONNX maxpool_2d_dilations: 4x4, k2, s1, d2 -> 2x2
    ((5, 3, 2, 1, (1, 1), False), 3),  # (5 + 2 - 3) / 2 + 1
    ((5, 2, 2, 1, (0, 1), True), 3),  # ceil((5 + 1 - 2) / 2) + 1 = 3; the last window starts at 4 < 5: kept
    ((6, 2, 2, 1, (0, 1), True), 3),  # ceil(5/2) + 1 = 4, but window 4 starts at 6, in the end padding: dropped
    ((7, 3, 1, 2, (0, 0), False), 3),  # NNAPI VALID with dilation: (7 - 5) / 1 + 1
    ((2, 3, 1, 1, (0, 0), False), 0),  # no window fits
]


@pytest.mark.parametrize("args,out", WINDOW_CASES, ids=[str(c[0]) for c in WINDOW_CASES])
def test_window_output_size_follows_onnx(args, out):
    size, kernel, stride, dilation, (p0, p1), ceil = args
    assert g.window_output_size(size, g.effective_extent(kernel, dilation), stride, p0, p1, ceil_mode=ceil) == out


def test_window_axis_modes():
    # VALID ignores the pads it is given; explicit uses them
    assert g.window_axis(g.PAD_MODE_VALID, 5, 3, 2, 1, 1) == (2, 0, 0)
    assert g.window_axis(2, 5, 3, 2, 1, 1) == (2, 0, 0)
    assert g.window_axis(g.PAD_MODE_EXPLICIT, 5, 3, 2, 1, 1) == (3, 1, 1)
    # ceil mode reads past the declared end pad: 4x4, k3, s2 -> windows at 0 and 2 need one extra cell
    assert g.touched_end_padding(4, 2, 3, 2, 0) == 1
    assert g.touched_end_padding(5, 3, 3, 2, 1) == 1


# -- transposed convolution (ONNX ConvTranspose: out = s * (in - 1) + output_padding + (k - 1) * d + 1 - pads)

TRANSPOSED_CASES = [
    # (mode, size, kernel, stride, dilation, pads, output_padding) -> (out, crop at the beginning)
    ((g.PAD_MODE_EXPLICIT, 3, 3, 3, 1, (1, 1), 0), (7, 1)),  # ONNX convtranspose_pads, height: (1, 2, 7, 3)
    ((g.PAD_MODE_EXPLICIT, 3, 3, 2, 1, (2, 2), 0), (3, 2)),  # ... width
    ((g.PAD_MODE_VALID, 3, 3, 3, 1, (0, 0), 1), (10, 0)),  # ONNX convtranspose_pad (output_padding 1): 10 x 8
    ((g.PAD_MODE_VALID, 3, 3, 2, 1, (0, 0), 1), (8, 0)),
    ((g.PAD_MODE_VALID, 3, 2, 1, 2, (0, 0), 0), (5, 0)),  # ONNX convtranspose_dilations: 3x3, k2, d2 -> 5x5
    # ONNX convtranspose_autopad_same (SAME_UPPER, s2): in * s = 6; total padding F - 6 = 1, the odd unit at the end
    ((g.PAD_MODE_SAME, 3, 3, 2, 1, (0, 0), 0), (6, 0)),
    ((g.PAD_MODE_SAME, 4, 5, 2, 1, (0, 0), 0), (8, 1)),  # F = 11, total 3: crop 1 first (TF)
]


@pytest.mark.parametrize("args,expected", TRANSPOSED_CASES, ids=[str(c[0]) for c in TRANSPOSED_CASES])
def test_transposed_axis_follows_onnx(args, expected):
    mode, size, kernel, stride, dilation, (p0, p1), output_padding = args
    extent = g.effective_extent(kernel, dilation)
    assert g.transposed_axis(mode, size, extent, stride, p0, p1, output_padding) == expected


def test_transposed_full_size():
    assert g.transposed_full_size(3, 3, 3) == 9  # 3 * (3 - 1) + 3
    assert g.transposed_full_size(3, g.effective_extent(2, 2), 1) == 5


# -- unknown sizes stay unknown


def test_unknown_sizes_give_unknown_results():
    u = g.UNKNOWN
    assert g.same_output_size(u, 2) == u
    assert g.same_padding(u, 2, 3) == (u, u)
    assert g.window_output_size(u, 3, 2, 1, 1) == u
    assert g.window_output_size(5, u, 2) == u  # a weight of unknown size
    assert g.window_axis(g.PAD_MODE_SAME, u, 3, 2) == (u, u, u)
    assert g.window_axis(g.PAD_MODE_SAME, 7, u, 2)[0] == 4  # SAME's size needs no kernel
    assert g.transposed_axis(g.PAD_MODE_EXPLICIT, u, 3, 2, 1, 1, 1) == (u, u)
    assert g.touched_end_padding(u, 3, 3, 2, 0) == u
    assert g.effective_extent(u, 2) == u


# -- layouts and parameters


def test_permutations_and_pad_layouts():
    nchw = (1, 3, 8, 6)
    nhwc = g.permute(nchw, g.NCHW_TO_NHWC)
    assert nhwc == (1, 8, 6, 3)
    assert g.permute(nhwc, g.NHWC_TO_NCHW) == nchw
    assert g.permute(None, g.NCHW_TO_NHWC) is None
    onnx_pads = [1, 2, 3, 4]  # [top, left, bottom, right]
    axes = g.onnx_pads_to_axes(onnx_pads)
    assert axes == [(1, 3), (2, 4)]
    assert g.axes_to_onnx_pads(axes) == onnx_pads
    assert g.axes_to_pad_list(axes) == [1, 3, 2, 4]  # NNRt [top, bottom, left, right]
    assert g.pad_list_to_axes([1, 3, 2, 4]) == axes


@pytest.mark.parametrize("call,message", [
    (lambda: g.check_pad_mode("CONV2D", 3), "pad mode 3"),
    (lambda: g.check_round_mode("MAX_POOL", 2), "round mode 2"),
    (lambda: g.spatial_pair("CONV2D", "stride", [1, 2, 3], 1), "stride needs 2 values"),
    (lambda: g.spatial_pair("CONV2D", "stride", [0], 1), "must be >= 1"),
    (lambda: g.check_pad_list("CONV2D", [1, 2]), "pad list needs 4 values"),
    (lambda: g.check_pad_list("CONV2D", [1, 2, -1, 0]), "must be >= 0"),
])
def test_parameter_checks_are_invalid_parameters(call, message):
    with pytest.raises(NNRtError, match=message) as info:
        call()
    assert info.value.code == OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER


def test_parameters_normalised():
    assert g.spatial_pair("CONV2D", "dilation", [2], 1) == (2, 2)
    assert g.check_pad_list("CONV2D", []) == (0, 0, 0, 0)
    assert [g.check_pad_mode("CONV2D", m) for m in (-1, 0, 1, 2)] == [-1, 0, 1, 2]


def test_geometry_is_the_bottom_layer():
    """geometry.py imports nothing from nnrt_onnx but the enums and errors."""
    source = Path(g.__file__).read_text()
    relative = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom) and node.level}
    assert relative <= {"enums", "errors"}
    assert "import nnrt_onnx" not in source and "from nnrt_onnx" not in source
