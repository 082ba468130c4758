"""Import of the conv family (Conv, ConvTranspose; 1-D and 2-D, groups, dilations, auto_pad, output_shape): small
models built with onnx.helper, run natively and compared with onnxruntime (or onnx.reference where onnxruntime
refuses the case).
"""
from __future__ import annotations

import pytest
from onnx import TensorProto as TP
from onnx import helper
from support import onnx_model

from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.onnx_import import from_onnx
from onnx_import.import_support import check_model, dynamic_model, onnx_node, ops_of, rand_normal, runs_like_onnxruntime

CONV_CASES = {
    "conv_1d_same_lower_dilated": (dict(auto_pad="SAME_LOWER", strides=[2], dilations=[2]), (2, 4, 11), (6, 4, 3), 1),
    "conv_1d_groups_pads": (dict(group=2, pads=[2, 1]), (1, 4, 9), (6, 2, 3), 2),
    "conv_2d_depthwise_multiplier": (dict(group=3, pads=[1, 0, 2, 1], strides=[2, 1]), (1, 3, 7, 6), (6, 1, 3, 3), 3),
    "conv_2d_same_upper_strided": (dict(auto_pad="SAME_UPPER", strides=[2, 3]), (1, 2, 8, 10), (4, 2, 3, 2), 4),
    "conv_2d_valid_grouped": (dict(auto_pad="VALID", group=2), (2, 4, 5, 5), (4, 2, 2, 3), 5),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv(case):
    attrs, x_shape, w_shape, seed = CONV_CASES[case]
    x, w, b = rand_normal(seed, *x_shape), rand_normal(seed + 10, *w_shape), rand_normal(seed + 20, w_shape[0])
    oracle = "reference" if "dilations" in attrs and "auto_pad" in attrs else "ort"  # onnxruntime refuses it
    check_model(onnx_model(onnx_node("Conv", ["x", "w", "b"], **attrs), {"x": x}, {"w": w, "b": b}), {"x": x}, oracle=oracle)


def test_conv_weight_as_input_is_transposed_in_graph():
    x, w = rand_normal(1, 1, 3, 6, 6), rand_normal(2, 4, 3, 3, 3)
    result = check_model(onnx_model(onnx_node("Conv", ["x", "w"], pads=[1, 1, 1, 1]), {"x": x, "w": w}), {"x": x, "w": w})
    assert OP.OH_NN_OPS_CONV2D in ops_of(result)


CONV_TRANSPOSE_CASES = {
    "convtranspose_1d_output_padding": (dict(strides=[3], output_padding=[2], pads=[1, 0]), (1, 2, 5), (2, 3, 4)),
    "convtranspose_2d_group_dilated": (dict(group=2, strides=[2, 1], dilations=[1, 2], pads=[0, 1, 1, 0]),
                                       (1, 4, 4, 5), (4, 3, 3, 2)),
    "convtranspose_2d_output_shape_odd": (dict(strides=[2, 2], output_shape=[10, 8]), (1, 2, 5, 5), (2, 3, 3, 3)),
    "convtranspose_2d_output_shape_larger": (dict(strides=[2, 2], output_shape=[12, 12]), (1, 2, 5, 5), (2, 3, 3, 3)),
    "convtranspose_2d_same_lower": (dict(strides=[2, 2], auto_pad="SAME_LOWER"), (1, 2, 5, 4), (2, 3, 3, 3)),
}


@pytest.mark.parametrize("case", sorted(CONV_TRANSPOSE_CASES))
def test_conv_transpose(case):
    attrs, x_shape, w_shape = CONV_TRANSPOSE_CASES[case]
    x, w = rand_normal(7, *x_shape), rand_normal(8, *w_shape)
    b = rand_normal(9, w_shape[1] * attrs.get("group", 1))
    check_model(onnx_model(onnx_node("ConvTranspose", ["x", "w", "b"], **attrs), {"x": x}, {"w": w, "b": b}), {"x": x})


# -- ConvTranspose SAME, dynamic spatial dims (issue 26) ---------------------------------------------------------------

@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("kernel,stride", [(1, 2), (2, 3), (3, 2), (4, 2)])
def test_conv_transpose_same_over_dynamic_dims_as_onnxruntime(auto_pad, kernel, stride):
    # SAME's padding is kernel - stride whatever the size, so the spatial dims may stay dynamic; a kernel smaller
    # than the stride asks for negative padding: none, the output is (in - 1) * stride + kernel as onnxruntime and
    # onnx shape inference compute it (the conversion gave in * stride and refused the valid model as invalid)
    weight = rand_normal(7, 2, 3, kernel, kernel)
    transposed = helper.make_node("ConvTranspose", ["x", "w"], ["c"], auto_pad=auto_pad, strides=[stride] * 2)
    model = dynamic_model([transposed, helper.make_node("Relu", ["c"], ["y"])], [("x", TP.FLOAT, ["N", 2, "H", "W"])],
                          [("y", TP.FLOAT, ["N", 3, None, None])], [("w", weight)])
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 2, n + 1, n + 2)} for n in (1, 2, 3)])
    rules = [d.rule for d in from_onnx(model).deviations]
    assert rules == (["convtranspose-same-small-kernel"] * 2 if kernel < stride else [])


def test_conv_transpose_same_with_a_small_kernel_on_static_dims_feeds_the_next_node():
    # the Relu's ONNX-inferred shape (7x7) is what the conversion now computes (it said 8x8 and refused the model)
    weight = rand_normal(8, 2, 3, 1, 1)
    model = dynamic_model([helper.make_node("ConvTranspose", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2]),
                           helper.make_node("Relu", ["c"], ["y"])],
                          [("x", TP.FLOAT, [1, 2, 4, 4])], [("y", TP.FLOAT, [1, 3, 7, 7])], [("w", weight)])
    runs_like_onnxruntime(model, [{"x": rand_normal(9, 1, 2, 4, 4)}])
    (deviation,) = from_onnx(model).deviations[:1]
    assert deviation.rule == "convtranspose-same-small-kernel" and "in * 2" in deviation.detail


@pytest.mark.parametrize("op", ["Conv", "ConvTranspose"])
def test_one_dimensional_convolutions_over_a_dynamic_batch_and_length(op):
    # [N, C, L] runs as a 2-D op on [N, 1, L, C]: with N and L dynamic, UNSQUEEZE/SQUEEZE (RESHAPE takes one -1)
    weight = rand_normal(10, 3, 2, 3) if op == "Conv" else rand_normal(10, 2, 3, 3)
    attrs = dict(strides=[2], pads=[1, 1]) if op == "Conv" else dict(strides=[2], auto_pad="SAME_LOWER")
    model = dynamic_model([helper.make_node(op, ["x", "w"], ["y"], **attrs)], [("x", TP.FLOAT, ["N", 2, "L"])],
                          [("y", TP.FLOAT, ["N", 3, None])], [("w", weight)])
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 2, 3 * n + 2)} for n in (1, 2, 3)])


@pytest.mark.parametrize("shape,weight,strides", [(["N", 2, "H", "W"], (3, 2, 3, 2), [2, 3]),
                                                  (["N", 2, "L"], (3, 2, 4), [2])])
def test_conv_same_lower_over_dynamic_spatial_dims(shape, weight, strides):
    # NNRt's SAME puts the odd unit of padding at the end: SAME_LOWER is padded at run time, then convolved VALID
    model = dynamic_model([helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER", strides=strides)],
                          [("x", TP.FLOAT, shape)], [("y", TP.FLOAT, ["N", 3] + [None] * (len(shape) - 2))],
                          [("w", rand_normal(11, *weight))])
    runs_like_onnxruntime(model, [{"x": rand_normal(n, *[n, 2, n + 4, n + 5][:len(shape)])} for n in (1, 2, 3)],
                          rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch", [2, "N"])
@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_conv_transpose_same_with_output_padding_is_input_times_stride(auto_pad, batch):
    # SAME absorbs output_padding into the padding: in * stride, as onnxruntime (onnx shape inference adds the output
    # padding once more, and its readers' shapes follow; the valid model was refused -- a fuzzer finding)
    weight = rand_normal(3, 2, 1, 3, 4)
    model = dynamic_model([helper.make_node("ConvTranspose", ["x", "w"], ["t"], auto_pad=auto_pad, strides=[2, 2],
                                            output_padding=[1, 1]),
                           helper.make_node("Relu", ["t"], ["y"])],
                          [("x", TP.FLOAT, [batch, 2, 3, 5])], [("y", TP.FLOAT, None)], [("w", weight)],
                          check=False)  # (the full checker trusts onnx shape inference, wrong here)
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 2, 3, 5)} for n in ((1, 2) if batch == "N" else (2,))])
