"""Import of the spatial family (Resize, Upsample, DepthToSpace, SpaceToDepth, CenterCropPad, AffineGrid): small
models converted, run natively and compared with onnxruntime; cases the node suite does not cover.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from support import onnx_model

from nnrt_onnx.enums import OH_NN_OperationType as OP
from onnx_import.import_support import (
    FLOAT,
    INT64,
    F,
    V,
    check_graph,
    check_graph_ort,
    check_model,
    const_tensor,
    graph_model,
    onnx_node,
    ops_of,
    rand_normal,
    rejects_graph,
    x_of,
)

# -- Resize / Upsample -------------------------------------------------------------------------------------------------

RESIZE_CASES = {
    # name: (opset, attrs, input shape, scales, sizes, expected op)
    "resize_linear_half_pixel_bilinear_op": (13, dict(mode="linear"), (1, 2, 4, 5), [1, 1, 2, 1.6], None,
                                             OP.OH_NN_OPS_RESIZE_BILINEAR),
    "resize_linear_align_corners_sizes": (13, dict(mode="linear", coordinate_transformation_mode="align_corners"),
                                          (1, 2, 5, 4), None, [1, 2, 3, 7], OP.OH_NN_OPS_RESIZE_BILINEAR),
    "resize_linear_pytorch_half_pixel_size1": (13, dict(mode="linear",
                                                        coordinate_transformation_mode="pytorch_half_pixel"),
                                               (1, 1, 4, 6), None, [1, 1, 1, 3], OP.OH_NN_OPS_MATMUL),
    "resize_linear_3d_input": (13, dict(mode="linear"), (2, 3, 5), [1, 1, 2.5], None, OP.OH_NN_OPS_MATMUL),
    "resize_cubic_asymmetric_down": (13, dict(mode="cubic", coordinate_transformation_mode="asymmetric"),
                                     (1, 1, 8, 8), [1, 1, 0.5, 0.75], None, OP.OH_NN_OPS_MATMUL),
    "resize_nearest_non_integer_scales": (13, dict(mode="nearest", nearest_mode="round_prefer_ceil"),
                                          (1, 2, 5, 4), [1, 1, 1.5, 0.75], None, OP.OH_NN_OPS_GATHER),
    "resize_nearest_opset10_up_down": (10, dict(mode="nearest"), (1, 1, 4, 6), [1, 1, 1.7, 0.8], None,
                                       OP.OH_NN_OPS_GATHER),
    "resize_linear_opset10_asymmetric": (10, dict(mode="linear"), (1, 1, 4, 6), [1, 1, 2, 1.5], None,
                                         OP.OH_NN_OPS_RESIZE_BILINEAR),
    "resize_nearest_channel_axis": (13, dict(mode="nearest"), (1, 3, 2, 2), [1, 2, 1, 1], None, OP.OH_NN_OPS_GATHER),
}


@pytest.mark.parametrize("case", sorted(RESIZE_CASES))
def test_resize(case):
    opset, attrs, shape, scales, sizes, op = RESIZE_CASES[case]
    x = rand_normal(17, *shape)
    if opset == 10:
        node, inits = onnx_node("Resize", ["x", "scales"], **attrs), {"scales": np.asarray(scales, F)}
    elif sizes is not None:
        node, inits = onnx_node("Resize", ["x", "", "", "sizes"], **attrs), {"sizes": np.asarray(sizes, np.int64)}
    else:
        node, inits = onnx_node("Resize", ["x", "", "scales"], **attrs), {"scales": np.asarray(scales, F)}
    result = check_model(onnx_model(node, {"x": x}, inits, opset=opset), {"x": x})
    assert op in ops_of(result)


@pytest.mark.parametrize("case", ["upsample_opset7_nearest_attr", "upsample_opset9_linear"])
def test_upsample(case):
    x = rand_normal(18, 1, 2, 3, 4)
    if case == "upsample_opset7_nearest_attr":
        model = onnx_model(onnx_node("Upsample", ["x"], scales=[1.0, 1.0, 2.0, 3.0]), {"x": x}, opset=7)
    else:
        model = onnx_model(onnx_node("Upsample", ["x", "s"], mode="linear"), {"x": x},
                       {"s": np.asarray([1, 1, 2, 1.5], F)}, opset=9)
    check_model(model, {"x": x})


# -- DepthToSpace / SpaceToDepth ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset,mode", [(1, None), (11, "DCR"), (13, "CRD")])
def test_depth_to_space(rng, opset, mode):
    x = x_of(rng, 2, 12, 2, 3)
    attrs = {"blocksize": 2} if mode is None else {"blocksize": 2, "mode": mode}
    node = helper.make_node("DepthToSpace", ["x"], ["y"], **attrs)
    check_graph_ort(graph_model([node], [V("x", FLOAT, [2, 12, 2, 3])], [V("y", FLOAT, None)], max(opset, 7)), {"x": x})


def test_space_to_depth_then_depth_to_space_cancels_transposes(rng):
    x = x_of(rng, 1, 3, 4, 6)
    nodes = [helper.make_node("SpaceToDepth", ["x"], ["s"], blocksize=2),
             helper.make_node("DepthToSpace", ["s"], ["y"], blocksize=2)]
    result = check_graph_ort(graph_model(nodes, [V("x", FLOAT, [1, 3, 4, 6])], [V("y", FLOAT, None)], 13), {"x": x})
    assert result.stats["transposes"] == 2


# -- CenterCropPad, AffineGrid -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,target,axes", [([7, 6, 3], [4, 9], [0, 1]), ([5, 6], [5, 3], None),
                                               ([2, 9, 4], [3, 4], [-1, 1])])
def test_center_crop_pad(rng, shape, target, axes):
    x = rng.standard_normal(shape).astype(np.float32)
    attrs = {} if axes is None else {"axes": axes}
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"], **attrs)
    model = graph_model([node], [V("x", FLOAT, shape)], [V("y", FLOAT, None)], 18, [const_tensor("s", np.int64(target))])
    check_graph(model, {"x": x})


def test_center_crop_pad_int64(rng):
    x = rng.integers(-9, 9, (3, 5), dtype=np.int64)
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"])
    model = graph_model([node], [V("x", INT64, [3, 5])], [V("y", INT64, None)], 18, [const_tensor("s", np.int64([6, 2]))])
    check_graph(model, {"x": x})


@pytest.mark.parametrize("size,align", [([2, 3, 4, 7], 0), ([1, 1, 1, 5], 0), ([2, 1, 3, 2, 4], 1),
                                        ([1, 2, 2, 3, 1], 0)])
def test_affine_grid(rng, size, align):
    k = len(size) - 2
    theta = rng.standard_normal((size[0], k, k + 1)).astype(np.float32)
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)
    model = graph_model([node], [V("theta", FLOAT, list(theta.shape))], [V("grid", FLOAT, None)], 20,
                   [const_tensor("size", np.int64(size))])
    check_graph(model, {"theta": theta})


def test_affine_grid_rejects_ambiguous_unit_size():
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=1)
    model = graph_model([node], [V("theta", FLOAT, [1, 2, 3])], [V("grid", FLOAT, None)], 20,
                   [const_tensor("size", np.int64([1, 1, 1, 5]))])
    rejects_graph(model, "unsupported_attribute", "align_corners=1 with a spatial size of 1")
