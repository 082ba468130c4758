"""Import of the spatial family (Resize, Upsample, DepthToSpace, SpaceToDepth, CenterCropPad, AffineGrid): small
models converted, run natively and compared with onnxruntime; cases the node suite does not cover.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import helper
from support import onnx_model, ort_run

from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx
from onnx_import.import_support import (
    FLOAT,
    INT32,
    INT64,
    F,
    V,
    check_graph,
    check_graph_ort,
    check_model,
    const_tensor,
    dynamic_model,
    graph_model,
    onnx_node,
    ops_of,
    rand_normal,
    rejects_graph,
    run_ours,
    runs_like_onnxruntime,
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
                                               (1, 1, 4, 6), None, [1, 1, 1, 3], OP.OH_NN_OPS_MUL),
    "resize_linear_3d_input": (13, dict(mode="linear"), (2, 3, 5), [1, 1, 2.5], None, OP.OH_NN_OPS_MUL),
    "resize_cubic_asymmetric_down": (13, dict(mode="cubic", coordinate_transformation_mode="asymmetric"),
                                     (1, 1, 8, 8), [1, 1, 0.5, 0.75], None, OP.OH_NN_OPS_MUL),
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


@pytest.mark.parametrize("case, oracle", [("resize_cubic_asymmetric_down", "ort"), ("resize_cubic_half_pixel", "ort"),
                                          ("resize_linear_3d_input", "reference"),
                                          ("resize_linear_pytorch_half_pixel_size1", "ort")])
def test_resize_reads_only_each_outputs_window(case, oracle):
    """A NaN in the input reaches only the outputs whose window reads it (the product with an [out, in] matrix
    spread it to the whole row: fuzzer seed 8191, cubic after a Sqrt). Cubic reads onnxruntime's window
    floor(x) - 1 .. floor(x) + 2 (the reference's is one lower at an integer x). The 3-D linear case against
    onnx.reference: onnxruntime 1.32 spreads the NaN to the same positions of the other channels."""
    opset, attrs, shape, scales, sizes, _ = RESIZE_CASES.get(case) or (
        13, dict(mode="cubic"), (1, 2, 5, 6), [1, 1, 2, 1.5], None, None)
    x = rand_normal(5, *shape)
    x.reshape(-1)[3] = np.nan
    x.reshape(-1)[-8] = np.nan  # (interior: where a border output reads a NaN of weight 0, the two disagree)
    if sizes is not None:
        node, inits = onnx_node("Resize", ["x", "", "", "sizes"], **attrs), {"sizes": np.asarray(sizes, np.int64)}
    else:
        node, inits = onnx_node("Resize", ["x", "", "scales"], **attrs), {"scales": np.asarray(scales, F)}
    model = onnx_model(node, {"x": x}, inits, opset=opset)
    expected = ort_run(model, {"x": x})[0]
    assert 0 < np.isnan(expected).sum() < expected.size  # (the case reads a NaN somewhere, not everywhere)
    check_model(model, {"x": x}, oracle=oracle)


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


# -- Resize: valid models once refused or read otherwise than onnxruntime (issue 26) -----------------------------------

def _resize_model(shape, attrs, scales=None, sizes=None, out_shape=None, opset=19):
    inputs = ["x", "", "scales"] if scales is not None else ["x", "", "", "sizes"]
    inits = [("scales", np.asarray(scales, F))] if scales is not None else [("sizes", np.asarray(sizes, np.int64))]
    return dynamic_model([helper.make_node("Resize", inputs, ["y"], **attrs)], [("x", FLOAT, list(shape))],
                         [("y", FLOAT, out_shape or [None] * len(shape))], inits, opset)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_tf_crop_and_resize_extrapolates_in_every_mode(mode):
    # nearest with positions outside the roi was an internal error reported as invalid_model
    model = dynamic_model(
        [helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode=mode,
                          coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-7.0)],
        [("x", FLOAT, [1, 1, 4, 4])], [("y", FLOAT, [1, 1, 3, 5])],
        [("roi", np.asarray([0, 0, -0.2, 0.1, 1, 1, 0.9, 1.3], F)), ("sizes", np.asarray([1, 1, 3, 5], np.int64))])
    runs_like_onnxruntime(model, [{"x": rand_normal(3, 1, 1, 4, 4)}])


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_keeps_a_dynamic_batch_dynamic(mode):
    model = _resize_model(["N", 2, 4, 5], dict(mode=mode), scales=[1, 1, 2, 1.5], out_shape=["N", 2, 8, 7])
    converted = runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 2, 4, 5)} for n in (1, 2, 3)])
    assert converted.tensors[converted.inputs[0]].dims[0] == -1


def test_resize_with_axes_keeps_a_dynamic_batch_dynamic():
    model = _resize_model(["N", 2, 4, 4], dict(mode="nearest", axes=[2, 3]), scales=[1.5, 0.5],
                          out_shape=["N", 2, 6, 2])
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 2, 4, 4)} for n in (1, 2, 3)])


def test_resize_sizes_computed_from_the_input_shape_keep_the_batch():
    # sizes = Concat(Shape(x)[:2], [6, 7]): the batch entry is the input's own dynamic dim, so that axis keeps it
    model = dynamic_model(
        [helper.make_node("Shape", ["x"], ["shape"], end=2),
         helper.make_node("Concat", ["shape", "hw"], ["sizes"], axis=0),
         helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="cubic")],
        [("x", FLOAT, ["N", 2, 4, 4])], [("y", FLOAT, ["N", 2, 6, 7])], [("hw", np.asarray([6, 7], np.int64))])
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 2, 4, 4)} for n in (1, 2, 3)])


@pytest.mark.parametrize("attrs", [dict(mode="cubic"), dict(mode="linear", antialias=1),
                                   dict(mode="nearest", coordinate_transformation_mode="tf_crop_and_resize")])
def test_resize_of_a_dynamic_resized_dim_names_the_dim_to_pin(attrs):
    # cubic, antialias and tf_crop_and_resize keep their constant matrices: a dynamic resized dim is refused
    model = _resize_model([1, 2, "H", 4], attrs, scales=[1, 1, 2, 2])
    if "coordinate_transformation_mode" in attrs:
        model.graph.node[0].input[1] = "roi"
        model.graph.initializer.append(const_tensor("roi", np.asarray([0, 0, 0, 0, 1, 1, 1, 1], F)))
    with pytest.raises(ConversionError) as caught:
        from_onnx(model)
    (issue,) = caught.value.issues
    assert issue.reason == "dynamic_shape"
    assert "resized dims [2]" in issue.message and "pin input 'x' dim 2 (H)" in issue.message


# -- Resize over dims known at run time only (issue 26): the coordinates computed by the model -------------------------

_CTMS = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"]
_RUN_TIME_CASES = [("nearest", ctm, nearest) for ctm in _CTMS
                   for nearest in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")] + \
                  [("linear", ctm, None) for ctm in _CTMS]
# H/W bound at run time, odd and even (1 where every scale keeps the output non-empty)
_RUN_TIME_SCALES = {(2, 2): [(1, 1), (2, 3), (5, 4), (7, 9), (6, 10)],
                    (0.5, 1.5): [(2, 3), (5, 4), (7, 9), (6, 10)],
                    (1.7, 0.6): [(2, 2), (5, 4), (7, 9), (6, 10)]}


@pytest.mark.parametrize("mode,ctm,nearest", _RUN_TIME_CASES)
def test_resize_over_dynamic_resized_dims_runs_like_onnxruntime(mode, ctm, nearest):
    # the fuzzer's most frequent refusal: torch's F.interpolate(scale_factor=...) over a dynamic H/W (FPN, U-Net,
    # segmentation models run at any image size); one converted model, every H/W bound at run time
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm, **({"nearest_mode": nearest} if nearest else {}))
    for (sh, sw), sizes in _RUN_TIME_SCALES.items():
        model = _resize_model(["N", 2, "H", "W"], attrs, scales=[1, 1, sh, sw])
        feeds = [{"x": rand_normal(7 * h + w, 1 + (h + w) % 2, 2, h, w)} for h, w in sizes]
        converted = runs_like_onnxruntime(model, feeds)
        assert [converted.tensors[i].dims for i in converted.outputs] == [(-1, 2, -1, -1)]


def test_resize_of_a_dynamic_dim_half_pixel_symmetric_takes_onnxruntime_arithmetic():
    # onnxruntime computes half_pixel_symmetric's offset in float32 and the rest in double: 10 -> 6 at scale 0.6
    # reads source 1.9999999 (floor: 1), where float32 throughout gives 2.0 (the static path took source 2 too)
    for dims in (["N", 1, "H", "W"], [1, 1, 6, 10]):
        model = _resize_model(dims, dict(mode="nearest", coordinate_transformation_mode="half_pixel_symmetric",
                                         nearest_mode="floor"), scales=[1, 1, 1.7, 0.6])
        runs_like_onnxruntime(model, [{"x": np.arange(60, dtype=F).reshape(1, 1, 6, 10)}])


def test_resize_with_sizes_computed_from_the_shape_resizes_at_run_time():
    # F.interpolate(x, size=(2 * h, 3 * w)): sizes = Concat(Shape(x)[:2], Shape(x)[2:] * [2, 3]); the first part is
    # read (the axes keep their dims), the second is known at run time only
    for mode in ("nearest", "linear"):
        model = dynamic_model(
            [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Slice", ["shape", "s0", "s2"], ["nc"]),
             helper.make_node("Slice", ["shape", "s2", "s4"], ["hw"]),
             helper.make_node("Mul", ["hw", "factor"], ["hw_out"]),
             helper.make_node("Concat", ["nc", "hw_out"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode)],
            [("x", FLOAT, ["N", 2, "H", "W"])], [("y", FLOAT, ["N", 2, None, None])],
            [("s0", np.array([0], np.int64)), ("s2", np.array([2], np.int64)), ("s4", np.array([4], np.int64)),
             ("factor", np.array([2, 3], np.int64))], 13)
        converted = runs_like_onnxruntime(model, [{"x": rand_normal(h, n, 2, h, w)}
                                                  for n, h, w in [(1, 1, 1), (2, 3, 5), (1, 4, 2)]])
        gathers_of_x = [op for op in converted.operations if op.op == OP.OH_NN_OPS_GATHER
                        and converted.tensors[op.inputs[0]].dims[0] == -1]
        assert len(gathers_of_x) == (2 if mode == "nearest" else 4)  # H and W only: N and C keep their dims


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_to_sizes_given_at_run_time(mode):
    # every axis resized at run time, to lengths of a model input; static input dims too
    for dims in (["N", 2, "H", "W"], [2, 2, 3, 5]):
        model = dynamic_model([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode)],
                              [("x", FLOAT, dims), ("sizes", INT64, [4])], [("y", FLOAT, [None] * 4)], [], 13)
        shapes = [(1, 3, 4, 5, 2), (2, 5, 5, 3, 9), (1, 1, 1, 4, 1)] if dims[0] == "N" else [(2, 3, 5, 7, 2)]
        runs_like_onnxruntime(model, [{"x": rand_normal(h, n, 2, h, w), "sizes": np.array([n, 2, oh, ow], np.int64)}
                                      for n, h, w, oh, ow in shapes])


@pytest.mark.parametrize("opset,mode", [(9, "nearest"), (9, "linear"), (10, "nearest"), (10, "linear")])
def test_upsample_and_resize_10_over_dynamic_dims(opset, mode):
    # Upsample and Resize-10: asymmetric; nearest floors upsampling and ceils downsampling
    op, scales = ("Upsample", [1, 1, 2, 3]) if opset == 9 else ("Resize", [1, 1, 2.5, 0.5])
    model = dynamic_model([helper.make_node(op, ["x", "scales"], ["y"], mode=mode)], [("x", FLOAT, ["N", 2, "H", "W"])],
                          [("y", FLOAT, [None] * 4)], [("scales", np.asarray(scales, F))], opset=opset)
    runs_like_onnxruntime(model, [{"x": rand_normal(h, 1, 2, h, w)} for h, w in [(1, 2), (3, 4), (6, 5)]])


def test_nearest_resize_of_integers_over_dynamic_dims():
    model = dynamic_model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")],
                          [("x", INT32, [1, "H", "W"])], [("y", INT32, [None] * 3)],
                          [("scales", np.asarray([1, 2, 0.5], F))], 13)
    runs_like_onnxruntime(model, [{"x": np.arange(h * w, dtype=np.int32).reshape(1, h, w)}
                                  for h, w in [(2, 2), (3, 7)]])


def test_resize_over_a_dynamic_dim_takes_the_floor_of_the_exact_product():
    # floor(10 x float32(0.7)) is 6 (onnxruntime's float32 product: 7), at run time as for a static dim; the rule
    # is recorded with the first length it changes
    from onnx.reference import ReferenceEvaluator

    model = _resize_model([1, 1, 3, "W"], dict(mode="linear"), scales=[1, 1, 1, 0.7])
    x = rand_normal(5, 1, 1, 3, 10)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = run_ours(model, {"x": x})
    assert got.shape == expected.shape == (1, 1, 3, 6)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    (deviation,) = from_onnx(model).deviations
    assert deviation.rule == "resize-output-size"
    assert "run time" in deviation.detail and "floor(10 x" in deviation.detail


def test_resize_over_a_dynamic_dim_records_the_length_reading():
    # align_corners at scale 0.5: at odd lengths (5 -> 2) onnx.reference's length_resized 2.5 is not the integer 2
    model = _resize_model([1, 1, 4, "W"], dict(mode="linear", coordinate_transformation_mode="align_corners"),
                          scales=[1, 1, 1, 0.5])
    runs_like_onnxruntime(model, [{"x": rand_normal(w, 1, 1, 4, w)} for w in (2, 5, 8)])
    assert {d.rule for d in from_onnx(model).deviations} == {"resize-length-resized"}
    model = _resize_model([1, 1, 4, "W"], dict(mode="linear", coordinate_transformation_mode="align_corners"),
                          scales=[1, 1, 1, 2])
    assert from_onnx(model).deviations == []


@pytest.mark.parametrize("ctm,scale", [("align_corners", 0.5), ("align_corners", 1.7), ("pytorch_half_pixel", 0.3),
                                       ("half_pixel_symmetric", 0.5), ("tf_crop_and_resize", 0.6)])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_length_resized_is_the_integer_output_length(ctm, scale, mode):
    # onnxruntime's reading (rule resize-length-resized): onnx.reference uses scale x length (2.5 for 5 x 0.5);
    # the conversion follows onnxruntime and records the node where the two differ
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
    inputs, inits = ["x", "", "scales"], [("scales", np.asarray([1, 1, scale, scale], F))]
    if ctm == "tf_crop_and_resize":
        inputs[1] = "roi"
        inits.append(("roi", np.asarray([0, 0, 0.1, 0.2, 1, 1, 0.9, 1.0], F)))
    model = dynamic_model([helper.make_node("Resize", inputs, ["y"], **attrs)], [("x", FLOAT, ["N", 1, 5, 7])],
                          [("y", FLOAT, [None] * 4)], inits, 19)
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 1, 5, 7)} for n in (1, 2)])
    rules = {d.rule for d in from_onnx(model).deviations}
    # (nearest may pick the same sources under both readings: then nothing differs and nothing is recorded)
    assert rules == {"resize-length-resized"} or mode == "nearest" and not rules


def test_resize_with_an_integer_length_records_no_deviation():
    model = _resize_model([1, 1, 4, 6], dict(mode="linear", coordinate_transformation_mode="align_corners"),
                          scales=[1, 1, 2, 0.5])
    runs_like_onnxruntime(model, [{"x": rand_normal(1, 1, 1, 4, 6)}])
    assert from_onnx(model).deviations == []


def test_resize_output_length_is_the_floor_of_the_exact_product():
    # float32(0.7) x 10 = 6.99999988: floor 6 (the spec, onnx shape inference and onnx.reference); onnxruntime's
    # float32 product rounds to 7 (rule resize-output-size, recorded)
    from onnx.reference import ReferenceEvaluator

    model = _resize_model([1, 1, 3, 10], dict(mode="linear"), scales=[1, 1, 1, 0.7])
    x = rand_normal(5, 1, 1, 3, 10)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    result = from_onnx(model)
    (got,) = run_ours(model, {"x": x})
    assert got.shape == expected.shape == (1, 1, 3, 6)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    (deviation,) = result.deviations
    assert deviation.rule == "resize-output-size" and deviation.node == "y" and "gives 7" in deviation.detail
    assert result.stats["deviations"][0]["rule"] == "resize-output-size"


# -- Resize of an axis that keeps its length (rule resize-kept-length), tf_crop_and_resize's float32 coordinates ----------

_E = -7.0  # the extrapolation value of the tf_crop_and_resize cases below


def _crop_model(length, out, roi, mode, nearest=None, sizes=True):
    """Resize tf_crop_and_resize of a [2, length] input to [2, out] (roi [0, 1] on axis 0), by sizes or scales."""
    attrs = dict(mode=mode, coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=_E,
                 **({"nearest_mode": nearest} if nearest else {}))
    resized = ("sizes", np.asarray([2, out], np.int64)) if sizes else ("scales", np.asarray([1, out / length], F))
    inputs = ["x", "roi", "", "sizes"] if sizes else ["x", "roi", "scales"]
    return dynamic_model([helper.make_node("Resize", inputs, ["y"], **attrs)], [("x", FLOAT, [2, length])],
                         [("y", FLOAT, [2, out])], [("roi", np.asarray([0, roi[0], 1, roi[1]], F)), resized], opset=19)


_X5 = np.asarray([[1, 2, 4, 8, 16], [3, 5, 7, 11, 13]], F)


@pytest.mark.parametrize("sizes", [True, False])
@pytest.mark.parametrize("mode, nearest, expected", [
    # roi [-0.25, 1.25] on 5 -> 5: x = -0.25 * 4 + y * 1.5 * 4 / 4 = -1, 0.5, 2, 3.5, 5 (all exact in float32);
    # -1 and 5 lie outside [0, 4] and take the extrapolation value
    ("nearest", "round_prefer_floor", [_E, 0, 2, 3, _E]),
    ("nearest", "round_prefer_ceil", [_E, 1, 2, 4, _E]),
    ("nearest", "floor", [_E, 0, 2, 3, _E]),
    ("nearest", "ceil", [_E, 1, 2, 4, _E]),
    ("linear", None, [_E, (0, 1), 2, (3, 4), _E]),
])
def test_resize_crop_of_an_axis_that_keeps_its_length_follows_the_formula(mode, nearest, expected, sizes):
    # the spec's formula with the roi on every axis (onnx.reference agrees): onnxruntime returns an axis whose scale
    # is 1 as it is, roi and extrapolation ignored (rule resize-kept-length; differential fuzzer seed 8086: 14 models)
    model = _crop_model(5, 5, (-0.25, 1.25), mode, nearest, sizes)
    want = np.asarray([[v if v == _E else row[v] if isinstance(v, int) else (row[v[0]] + row[v[1]]) / 2
                        for v in expected] for row in _X5], F)
    (got,) = run_ours(model, {"x": _X5})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ort_run(model, {"x": _X5})[0], _X5)  # (the deviation recorded below)
    (deviation,) = from_onnx(model).deviations
    assert deviation.rule == "resize-kept-length" and "axis 1: 5 -> 5" in deviation.detail


def test_resize_of_an_axis_that_keeps_its_length_at_a_scale_other_than_one():
    # half_pixel 7 x 1.125 -> 7: x = (y + 0.5) * 8 / 9 - 0.5 = -1/18, 5/6, 31/18, 47/18, 3.5, 79/18, 95/18 (3.5 exact
    # in float32 too: 4.5 / 1.125 = 4), round_prefer_floor: sources 0, 1, 2, 3, 3, 4, 5. onnxruntime keeps the axis
    # as it is when no axis changes its length, and applies the formula when another one does
    x = np.arange(14, dtype=F).reshape(2, 7) ** 2
    model = _resize_model([2, 7], dict(mode="nearest"), scales=[1, 1.125])
    (got,) = run_ours(model, {"x": x})
    np.testing.assert_array_equal(got, x[:, [0, 1, 2, 3, 3, 4, 5]])
    np.testing.assert_array_equal(ort_run(model, {"x": x})[0], x)
    (deviation,) = from_onnx(model).deviations
    assert deviation.rule == "resize-kept-length" and "half_pixel at scale 1.125" in deviation.detail
    model = _resize_model([2, 7], dict(mode="nearest"), scales=[2, 1.125])
    runs_like_onnxruntime(model, [{"x": x}])
    assert from_onnx(model).deviations == []


def test_resize_of_a_run_time_axis_that_may_keep_its_length_records_the_rule():
    # 1.125 keeps every length below 8 (floor(7 x 1.125) = 7); those resizes move positions: recorded, at run time
    model = _resize_model([1, 1, 3, "W"], dict(mode="linear"), scales=[1, 1, 1, 1.125])
    runs_like_onnxruntime(model, [{"x": rand_normal(w, 1, 1, 3, w)} for w in (8, 16)])  # (lengths that change)
    (deviation,) = from_onnx(model).deviations
    assert deviation.rule == "resize-kept-length" and "known at run time" in deviation.detail
    assert "axis 3: 2 -> 2" in deviation.detail  # (1 -> 1 maps onto itself)
    # with another axis changing its length, onnxruntime applies the formula too: nothing to record
    model = _resize_model([1, 1, 3, "W"], dict(mode="linear"), scales=[1, 1, 2, 1.125])
    runs_like_onnxruntime(model, [{"x": rand_normal(w, 1, 1, 3, w)} for w in (2, 7, 8)])
    assert from_onnx(model).deviations == []


def test_resize_crop_whose_formula_maps_a_kept_axis_onto_itself_records_nothing():
    # roi [0.01, 0.99] on 5 -> 5, round_prefer_floor: x = 0.04 + 0.98 y rounds to y everywhere
    model = _crop_model(5, 5, (0.01, 0.99), "nearest", "round_prefer_floor")
    runs_like_onnxruntime(model, [{"x": _X5}])
    assert from_onnx(model).deviations == []


@pytest.mark.parametrize("length, out, roi, nearest, sources, sizes", [
    # position 2 of 3 -> 5, roi [-0.2, 1.2]: float32(-0.2) * 2 + 2 * (float32(1.2) - float32(-0.2)) * 2 / 4 is
    # 1.0000000447 exactly (onnx.reference), 1.0000001 in float32 (onnxruntime): ceil 2. The float64 quotient's
    # "within 1e-6 of an integer" of a nearest resize to sizes took 1: a wrong answer (a differential fuzzer's find)
    (3, 5, (-0.2, 1.2), "ceil", [None, 1, 2, 2, None], True),
    # one output: onnxruntime's 0.5 * (start + end) * (length - 1) sums the float32 roi in float32:
    # float32(-0.2) + float32(1.2) is 1.0 there, so 3.0, ceil 3 (the double sum gave 3.0000001, ceil 4)
    (7, 1, (-0.2, 1.2), "ceil", [3], True),
    (7, 1, (-0.2, 1.2), "ceil", [3], False),
])
def test_resize_crop_coordinates_are_float32_as_onnxruntime_computes_them(length, out, roi, nearest, sources, sizes):
    assert np.float32(-0.2) + np.float32(1.2) == 1.0  # (the float32 sum of the second case)
    x = np.arange(2 * length, dtype=F).reshape(2, length) + 10
    model = _crop_model(length, out, roi, "nearest", nearest, sizes)
    (got,) = run_ours(model, {"x": x})
    np.testing.assert_array_equal(got, np.asarray([[_E if s is None else row[s] for s in sources] for row in x], F))
    runs_like_onnxruntime(model, [{"x": x}])


def test_resize_crop_to_sizes_agrees_wherever_onnxruntime_and_onnx_reference_agree():
    # tf_crop_and_resize nearest over lengths 2-6 -> 1-7 and decimal rois (float32 values an ulp off the decimal):
    # wherever the two independent implementations agree, the conversion does (36 of 4,110 such resizes differed
    # when its coordinates were float64 with the quotients' integer tolerance)
    from onnx.reference import ReferenceEvaluator

    checked = 0
    for length in range(2, 7):
        x = (np.arange(2 * length, dtype=F).reshape(2, length) + 1) ** 1.5
        for out, roi, nearest in itertools.product(range(1, 8), [(-0.2, 1.2), (0.1, 0.9), (-0.1, 0.6)],
                                                   ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]):
            if out == length:
                continue
            model = _crop_model(length, out, roi, "nearest", nearest)
            (theirs,) = ort_run(model, {"x": x})
            if not np.array_equal(theirs, ReferenceEvaluator(model).run(None, {"x": x})[0]):
                continue
            (got,) = run_ours(model, {"x": x})
            np.testing.assert_array_equal(got, theirs, err_msg=f"{length} -> {out} roi {roi} {nearest}")
            checked += 1
    assert checked > 300


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_keeps_a_dynamic_batch_dynamic(mode):
    model = dynamic_model([helper.make_node("Upsample", ["x", "scales"], ["y"], mode=mode)],
                          [("x", FLOAT, ["N", 2, 3, 3])],
                          [("y", FLOAT, ["N", 2, 6, 9])], [("scales", np.asarray([1, 1, 2, 3], F))], opset=9)
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 2, 3, 3)} for n in (1, 2, 3)])


def test_center_crop_pad_of_dynamic_axes():
    # each dynamic axis cropped and padded by amounts computed at run time (2 -> pad, 4 -> as is, 6 -> crop)
    model = dynamic_model([helper.make_node("CenterCropPad", ["x", "s"], ["y"], axes=[0, 1])],
                          [("x", FLOAT, ["N", "M", 2])], [("y", FLOAT, [4, 3, 2])],
                          [("s", np.asarray([4, 3], np.int64))],
                          opset=18)
    runs_like_onnxruntime(model, [{"x": rand_normal(n, 2 * n, 7 - 2 * n, 2)} for n in (1, 2, 3)])


def test_affine_grid_of_a_theta_whose_batch_is_dynamic():
    model = dynamic_model([helper.make_node("AffineGrid", ["theta", "size"], ["y"])], [("theta", FLOAT, ["N", 2, 3])],
                          [("y", FLOAT, [2, 3, 4, 2])], [("size", np.asarray([2, 1, 3, 4], np.int64))], opset=20)
    runs_like_onnxruntime(model, [{"theta": rand_normal(seed, 2, 2, 3)} for seed in (1, 2)])


def test_space_to_depth_crd_with_dynamic_channels():
    # the DCR channels regrouped as [b*b, C] -> [C, b*b] by reshapes of run-time shapes (the constant GATHER of the
    # static case needs C)
    model = dynamic_model([helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode="CRD")],
                          [("x", FLOAT, ["N", "C", 4, 6])], [("y", FLOAT, ["N", None, 2, 3])], opset=28)
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, n + 1, 4, 6)} for n in (1, 2, 3)])


@pytest.mark.parametrize("width, out, ctm, nearest", [(7, 2, "asymmetric", "round_prefer_ceil"),
                                                      (14, 4, "asymmetric", "round_prefer_ceil"),
                                                      (7, 3, "half_pixel", "round_prefer_floor")])
def test_nearest_resize_to_sizes_breaks_an_exact_tie_as_its_mode_says(width, out, ctm, nearest):
    # 1 / float32(2 / 7) is 3.4999998, which took source 3; the exact 3.5 rounds up under round_prefer_ceil
    # (onnxruntime and onnx.reference both take 4; rule resize-nearest-sizes; a differential fuzzer's find)
    model = dynamic_model([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest",
                                            coordinate_transformation_mode=ctm, nearest_mode=nearest)],
                          [("x", FLOAT, [1, 2, 3, width])], [("y", FLOAT, [1, 2, 3, out])],
                          [("sizes", np.array([1, 2, 3, out], np.int64))], opset=19, check=False)
    x = np.arange(2 * 2 * 3 * width, dtype=np.float32).reshape(2, 2, 3, width)
    runs_like_onnxruntime(model, [{"x": x[:1]}])


def test_resize_keeping_the_aspect_ratio_rounds_the_exact_product():
    # not_smaller: scale max(7 / 6, 2 / 3) = 7 / 6; width round(3 x 7 / 6) = round(3.5) = 4 (onnxruntime and
    # onnx.reference), not 3 from the float32 quotient's product 3.4999998 (a differential fuzzer's find)
    model = dynamic_model([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], axes=[2, 3],
                                            keep_aspect_ratio_policy="not_smaller")],
                          [("x", FLOAT, [1, 2, 6, 3])], [("y", FLOAT, [1, 2, 7, 4])],
                          [("sizes", np.array([7, 2], np.int64))], opset=19)
    runs_like_onnxruntime(model, [{"x": rand_normal(1, 1, 2, 6, 3)}])


def _exact_nearest_sources(width, out, scale, ctm, nearest):
    """The source of each output position in exact arithmetic (Fraction): the spec's coordinate formula at the
    exact scale, rounded as ``nearest`` says, clamped."""
    from fractions import Fraction
    from math import ceil, floor

    scale = Fraction(scale)
    sources = []
    for y in range(out):
        if ctm == "half_pixel":
            x = (y + Fraction(1, 2)) / scale - Fraction(1, 2)
        else:  # half_pixel_symmetric, with the integer output length (rule resize-length-resized)
            offset = Fraction(width, 2) * (1 - Fraction(out) / (scale * width))
            x = offset + (y + Fraction(1, 2)) / scale - Fraction(1, 2)
        half_up = x - floor(x) > Fraction(1, 2) or (x - floor(x) == Fraction(1, 2) and nearest == "round_prefer_ceil")
        source = {"floor": floor(x), "ceil": ceil(x)}.get(nearest, floor(x) + half_up)
        sources.append(min(max(source, 0), width - 1))
    return sources


@pytest.mark.parametrize("width, out, scale, ctm, nearest", [
    # 2 x 0.75, half_pixel_symmetric: exactly 0.5 at position 0, 0.49999997 in onnxruntime's own float32 formula;
    # its nearest takes that as the tie (so does onnx.reference); the importer took source 0 (fuzzer seed 8086)
    (2, None, 0.75, "half_pixel_symmetric", "round_prefer_ceil"),
    (6, None, 0.75, "half_pixel_symmetric", "round_prefer_ceil"),
    (5, None, 0.6, "half_pixel_symmetric", "round_prefer_floor"),
    # 20 -> 6, half_pixel: position 4 is exactly 14.5 (onnxruntime issue 28291): round_prefer_ceil takes 15
    (20, 6, None, "half_pixel", "round_prefer_ceil"),
    # 7 -> 17, half_pixel: position 8 is exactly 3; the float64 quotient 3.0000000000000004 took source 4 under ceil
    (7, 17, None, "half_pixel", "ceil"),
    (7, 17, None, "half_pixel_symmetric", "floor"),
])
def test_nearest_resize_takes_a_coordinate_ulps_from_a_tie_or_an_integer_as_exact(width, out, scale, ctm, nearest):
    from fractions import Fraction

    attrs = dict(mode="nearest", coordinate_transformation_mode=ctm, nearest_mode=nearest)
    if scale is not None:
        out = int(np.floor(Fraction(float(np.float32(scale))) * width))
        exact_scale = Fraction(float(np.float32(scale)))
    else:
        exact_scale = Fraction(out, width)
    want = np.asarray(_exact_nearest_sources(width, out, exact_scale, ctm, nearest), F)
    x = np.arange(width, dtype=F).reshape(1, 1, width)
    for dims in ([1, 1, width], ["N", 1, "W"]):  # resized at conversion, and at run time
        if scale is not None:
            model = _resize_model(dims, attrs, scales=[1, 1, scale])
        else:
            model = _resize_model(dims, attrs, sizes=[1, 1, out])
        got = run_ours(model, {"x": x})[0]
        np.testing.assert_array_equal(got.reshape(-1), want, err_msg=str(dims))
