"""Import of the pool family (MaxPool, AveragePool, LpPool, the global pools, MaxUnpool): small models run natively
and compared with onnxruntime (or onnx.reference where onnxruntime refuses the case or knowingly differs): padding,
ceil mode, dilations, 1-D and 3-D, repeated unpool indices.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper
from support import onnx_model, ort_run

from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx
from onnx_import.import_support import (
    F32,
    I64,
    check_model,
    check_named,
    dynamic_model,
    node_model_named,
    onnx_node,
    ops_of,
    rand_normal,
    randn1,
    rejects_named,
    rng_for,
    runs_like_onnxruntime,
)

# -- pooling -----------------------------------------------------------------------------------------------------------

POOL_CASES = {
    "maxpool_1d_ceil": ("MaxPool", dict(kernel_shape=[3], strides=[2], ceil_mode=1, pads=[1, 0]), (1, 2, 10)),
    "maxpool_2d_dilated_padded": ("MaxPool", dict(kernel_shape=[2, 3], dilations=[2, 1], pads=[1, 1, 0, 1],
                                                  strides=[1, 2]), (1, 2, 7, 8)),
    "avgpool_2d_pads_as_big_as_kernel": ("AveragePool", dict(kernel_shape=[2, 2], pads=[2, 0, 0, 2],
                                                             count_include_pad=1), (1, 1, 5, 5)),
    "avgpool_2d_count_include_pad_ceil": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                                              ceil_mode=1, count_include_pad=1), (1, 2, 8, 7)),
    "avgpool_1d_count_include_pad": ("AveragePool", dict(kernel_shape=[4], pads=[2, 1], count_include_pad=1),
                                     (2, 3, 9)),
    "avgpool_2d_same_lower_exclude_pad": ("AveragePool", dict(kernel_shape=[3, 2], strides=[2, 2],
                                                              auto_pad="SAME_LOWER"), (1, 2, 7, 7)),
    "avgpool_3d_dilated_include_pad": ("AveragePool", dict(kernel_shape=[2, 2, 2], dilations=[1, 2, 1],
                                                           pads=[1, 0, 1, 0, 1, 0], count_include_pad=1),
                                       (1, 2, 4, 5, 4)),
    "lppool_2d_p1_ceil": ("LpPool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, p=1), (1, 2, 5, 5)),
    "lppool_1d_p3_pads": ("LpPool", dict(kernel_shape=[3], pads=[1, 1], p=3), (1, 2, 6)),
    "lppool_2d_p2_dilated": ("LpPool", dict(kernel_shape=[2, 2], dilations=[2, 2], p=2), (1, 1, 6, 6)),
}


@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pool(case):
    op, attrs, shape = POOL_CASES[case]
    x = rand_normal(11, *shape)
    oracle = "reference" if "as_big_as_kernel" in case else "ort"  # onnxruntime refuses it
    check_model(onnx_model(onnx_node(op, ["x"], **attrs), {"x": x}, opset=19), {"x": x}, oracle=oracle)


def test_maxpool_uint8_uses_native_pool():
    x = rand_normal(3, 1, 2, 6, 6, dtype=np.uint8, low=0, high=255)
    result = check_model(onnx_model(onnx_node("MaxPool", ["x"], kernel_shape=[2, 2], pads=[1, 1, 0, 0]), {"x": x}), {"x": x})
    assert OP.OH_NN_OPS_MAX_POOL in ops_of(result)


def test_avgpool_count_include_pad_uses_pad_then_pool():
    x = rand_normal(4, 1, 2, 6, 6)
    model = onnx_model(onnx_node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1), {"x": x})
    assert {OP.OH_NN_OPS_PAD, OP.OH_NN_OPS_AVG_POOL} <= ops_of(check_model(model, {"x": x}))


GLOBAL_CASES = {
    "globalaveragepool_3d_input": ("GlobalAveragePool", {}, (2, 3, 7)),
    "globalaveragepool_5d_input": ("GlobalAveragePool", {}, (1, 2, 3, 4, 5)),
    "globalmaxpool_3d_input": ("GlobalMaxPool", {}, (2, 3, 7)),
    "globallppool_p2": ("GlobalLpPool", {"p": 2}, (1, 3, 4, 5)),
    "globallppool_p3_3d_input": ("GlobalLpPool", {"p": 3}, (2, 2, 6)),
}


@pytest.mark.parametrize("case", sorted(GLOBAL_CASES))
def test_global_pool(case):
    op, attrs, shape = GLOBAL_CASES[case]
    x = rand_normal(12, *shape)
    check_model(onnx_model(onnx_node(op, ["x"], **attrs), {"x": x}), {"x": x})


# -- MaxUnpool ---------------------------------------------------------------------------------------------------------

def _pooled(rng, shape, kernel, strides, pads=None):
    """MaxPool output and indices of random data (onnxruntime), overlapping windows give repeated indices."""
    x = randn1(rng, shape)
    attrs = {"kernel_shape": kernel, "strides": strides}
    if pads:
        attrs["pads"] = pads
    model = node_model_named("MaxPool", {"x": x}, 12, attrs, outputs=("y", "i"))
    return ort_run(model, {"x": x})


@pytest.mark.parametrize("constant", [False, True], ids=["unpool-runtime-indices", "unpool-constant-indices"])
def test_max_unpool_overlapping_windows_repeat_indices(constant):
    values, indices = _pooled(rng_for(f"unpool-overlap-{constant}"), (2, 3, 7, 7), [3, 3], [2, 2])
    assert len(np.unique(indices)) < indices.size  # the case is about repeated indices
    check_named("MaxUnpool", {"x": values, "i": indices}, 11, {"kernel_shape": [3, 3], "strides": [2, 2]},
          constants=("i",) if constant else ())


def test_max_unpool_1d_with_pads_and_matching_output_shape():
    values, indices = _pooled(rng_for("unpool-1d"), (1, 2, 8), [2], [2], pads=[1, 1])
    check_named("MaxUnpool", {"x": values, "i": indices, "shape": np.asarray([1, 2, 8], I64)}, 22,
          {"kernel_shape": [2], "strides": [2], "pads": [1, 1]}, constants=("shape",))


def test_max_unpool_3d():
    values, indices = _pooled(rng_for("unpool-3d"), (1, 1, 4, 4, 4), [2, 2, 2], [2, 2, 2])
    check_named("MaxUnpool", {"x": values, "i": indices}, 9, {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]})


def test_max_unpool_larger_output_shape_follows_the_reference():
    values, indices = _pooled(rng_for("unpool-bigger"), (1, 2, 4, 4), [2, 2], [2, 2])
    check_named("MaxUnpool", {"x": values, "i": indices, "shape": np.asarray([1, 2, 5, 6], I64)}, 22,
          {"kernel_shape": [2, 2], "strides": [2, 2]}, constants=("shape",), against="reference")


def test_max_unpool_needs_constant_output_shape():
    rejects_named("MaxUnpool", {"x": np.ones((1, 1, 2, 2), F32), "i": np.zeros((1, 1, 2, 2), I64),
                          "shape": np.asarray([1, 1, 4, 4], I64)}, "needs_constant_input", 22,
            {"kernel_shape": [2, 2], "strides": [2, 2]})


def test_tap_counts_in_closed_form_match_enumerating_every_tap():
    """AveragePool's divisor per output position: the closed form against listing each tap of each window."""
    import itertools

    from nnrt_onnx.onnx_import.handlers.pool import _tap_counts

    def enumerated(size, k, s, d, p0, p1, out, include_pad):
        lo, hi = (-p0, size + p1) if include_pad else (0, size)
        return [sum(lo <= o * s - p0 + j * d < hi for j in range(k)) for o in range(out)]

    for size, k, s, d, p0, p1, include_pad in itertools.product(range(1, 7), range(1, 5), range(1, 4), range(1, 3),
                                                                range(3), range(3), (False, True)):
        extent = (k - 1) * d + 1
        if size + p0 + p1 >= extent:
            out = (size + p0 + p1 - extent) // s + 2  # one window more than floor mode (ceil mode's partial one)
            assert list(_tap_counts(size, k, s, d, p0, p1, out, include_pad)) == enumerated(
                size, k, s, d, p0, p1, out, include_pad)


def test_a_window_of_a_billion_taps_costs_nothing():
    """kernel_shape 2**30 over a padded extent: the divisor is counted, never materialised (was a MemoryError)."""
    from nnrt_onnx.onnx_import.handlers.pool import _tap_counts

    assert list(_tap_counts(4, 1 << 30, 1, 1, 0, (1 << 30) - 4, 1, False)) == [4]


# -- ceil_mode where the last window would start in the end padding (issue 26) ----------------------------------------

@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1])),  # 4: ONNX inference 3, the rule 2
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[3, 3], pads=[0, 0, 2, 2])),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 2, 2])),
])
def test_ceil_mode_drops_a_last_window_starting_in_the_end_padding(op, attrs):
    # onnx shape inference keeps that window (its value_info said [N, 2, 3, 3]), the specification, onnxruntime,
    # onnx.reference and the kernel drop it: the conversion refused the valid model as invalid; the Relu and the
    # Conv after it read the pooled tensor, whose ONNX-inferred shapes (from the wrong one) are not trusted either
    weight = rand_normal(4, 3, 2, 1, 1)
    size = {2: 4, 3: 6}[attrs["kernel_shape"][0]] if attrs["pads"][0] == 0 else 7
    model = dynamic_model([helper.make_node(op, ["x"], ["p"], ceil_mode=1, **attrs),
                           helper.make_node("Relu", ["p"], ["r"]), helper.make_node("Conv", ["r", "w"], ["y"])],
                          [("x", TP.FLOAT, ["N", 2, size, size])], [("y", TP.FLOAT, ["N", 3, None, None])],
                          [("w", weight)])
    inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
    ours = runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 2, size, size)} for n in (1, 2, 3)])
    onnx_says = next(i for i in inferred if i.name == "p").type.tensor_type.shape.dim[2].dim_value
    assert ours.tensors[ours.outputs[0]].dims[2] < onnx_says


@pytest.mark.parametrize("op,attrs,dims,sizes", [
    ("MaxPool", dict(kernel_shape=[1, 3], strides=[3, 2]), [1, 1, 11, "W"], [(1, 1, 11, 7), (1, 1, 11, 8)]),
    ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1]), [1, 1, "H", 6],
     [(1, 1, 5, 6), (1, 1, 6, 6)]),
])
def test_ceil_mode_over_a_dynamic_spatial_dim_drops_the_window_in_the_padding_of_the_static_one(op, attrs, dims,
                                                                                              sizes):
    # the static spatial dim took onnx shape inference's size (one window more) when the other one was dynamic:
    # the valid model was refused as invalid (a differential fuzzer's find)
    model = dynamic_model([helper.make_node(op, ["x"], ["p"], ceil_mode=1, **attrs),
                           helper.make_node("Flatten", ["p"], ["y"])],
                          [("x", TP.FLOAT, dims)], [("y", TP.FLOAT, [1, None])])
    runs_like_onnxruntime(model, [{"x": rand_normal(n, *shape)} for n, shape in enumerate(sizes)])


def test_lp_pool_with_p_1_over_a_dynamic_batch():
    model = dynamic_model([helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=1)],
                          [("x", TP.FLOAT, ["N", 2, 4, 4])], [("y", TP.FLOAT, ["N", 2, 3, 3])])
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 2, 4, 4)} for n in (1, 2, 3)])


# -- dynamic spatial dims (issue 26) -----------------------------------------------------------------------------------

@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", dict(kernel_shape=[3, 2], strides=[2, 1])),
    ("AveragePool", dict(kernel_shape=[3, 2], strides=[2, 1])),  # the padding does not count
    ("AveragePool", dict(kernel_shape=[3, 2], strides=[2, 1], count_include_pad=1)),
    ("LpPool", dict(kernel_shape=[3, 2], strides=[2, 1], p=2)),
    ("MaxPool", dict(kernel_shape=[3], strides=[2])),
])
def test_same_lower_pooling_over_dynamic_spatial_dims(op, attrs):
    # NNRt's SAME puts the odd unit of padding at the end: SAME_LOWER is padded at run time, then pooled VALID
    nd = len(attrs["kernel_shape"])
    dims = ["N", 2, "H", "W"][:2 + nd]
    model = dynamic_model([helper.make_node(op, ["x"], ["y"], auto_pad="SAME_LOWER", **attrs)], [("x", TP.FLOAT, dims)],
                          [("y", TP.FLOAT, ["N", 2] + [None] * nd)])
    runs_like_onnxruntime(model, [{"x": rand_normal(n, *([n, 2, n + 2, n + 3][:2 + nd]))} for n in (1, 2, 3)])


def test_same_lower_max_pooling_over_dynamic_spatial_dims_of_nan_cells():
    # padded at run time with NaN under unit strides (a NaN never wins: kernels.pool): a window whose real cells
    # are NaN only is NaN (onnxruntime's float32 gives the lowest float there, onnx.reference raises); by hand
    model = dynamic_model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="SAME_LOWER")],
                          [("x", TP.FLOAT, [1, 1, "H", "W"])], [("y", TP.FLOAT, [1, 1, "H", "W"])])
    converted = from_onnx(model).model
    from nnrt_onnx import Compilation, Executor

    compilation = Compilation(converted)
    compilation.build()
    x = np.array([[np.nan, 1, -np.inf], [np.nan, np.nan, 2]], np.float32).reshape(1, 1, 2, 3)
    (y,) = Executor(compilation).run_arrays([x])
    # windows: rows -1..0 / 0..1 x columns -1..0, 0..1, 1..2 (the padding first)
    np.testing.assert_array_equal(y[0, 0], [[np.nan, 1, 1], [np.nan, 1, 2]])


def test_3d_max_pooling_of_windows_of_nan_cells_only_is_nan():
    # the slices per tap (3-D): NaN made -inf for the maximum, then NaN where no cell is a number (kernels.pool's
    # rule: onnxruntime's float32 gives the lowest float there, onnx.reference raises); by hand
    model = dynamic_model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1, 1, 2], pads=[0, 0, 1, 0, 0, 1])],
                          [("x", TP.FLOAT, [1, 1, 2, 1, 3])], [("y", TP.FLOAT, [1, 1, 2, 1, 4])])
    from nnrt_onnx import Compilation, Executor

    compilation = Compilation(from_onnx(model).model)
    compilation.build()
    x = np.array([[np.nan, 5, np.nan], [-np.inf, np.nan, np.nan]], np.float32).reshape(1, 1, 2, 1, 3)
    (y,) = Executor(compilation).run_arrays([x])
    # windows (the padding first and last): [pad, NaN], [NaN, 5], [5, NaN], [NaN, pad]; [pad, -inf], ...
    np.testing.assert_array_equal(y.reshape(2, 4), [[np.nan, 5, 5, np.nan], [-np.inf, -np.inf, np.nan, np.nan]])


@pytest.mark.parametrize("op,attrs", [
    ("AveragePool", dict(kernel_shape=[3, 2], pads=[1, 0, 2, 1], count_include_pad=1)),
    ("LpPool", dict(kernel_shape=[2, 2], pads=[1, 0, 1, 1], p=3)),
])
def test_counted_padding_over_dynamic_spatial_dims(op, attrs):
    model = dynamic_model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", TP.FLOAT, ["N", 2, "H", "W"])],
                          [("y", TP.FLOAT, ["N", 2, None, None])])
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 2, n + 2, n + 3)} for n in (1, 2, 3)], rtol=1e-4)


def test_ceil_mode_pooling_that_is_a_graph_output_and_read_by_another_op():
    # a graph output's inferred shape is never trusted, so nothing contradicted it -- but the reader's inferred
    # shape (one window more, onnx shape inference's) was trusted: the valid model was refused (fuzzer finding)
    model = dynamic_model([helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[1, 1], strides=[2, 2], ceil_mode=1),
                           helper.make_node("Abs", ["p"], ["a"]), helper.make_node("Sqrt", ["a"], ["y"])],
                          [("x", TP.FLOAT, ["N", 1, 1, 6])], [("y", TP.FLOAT, None), ("p", TP.FLOAT, None)],
                          check=False)  # (the full checker trusts onnx shape inference, wrong here)
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 1, 1, 6)} for n in (1, 2)])


# -- MaxPool's Indices -------------------------------------------------------------------------------------------------

INDICES_CASES = {
    # name: (input dims, attributes)
    "2x2-stride-2": ([1, 2, 5, 6], dict(kernel_shape=[2, 2], strides=[2, 2])),
    "3x3-padded": ([1, 2, 5, 6], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "ceil-mode-uneven-pads": ([2, 3, 7, 5], dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1],
                                                 ceil_mode=1)),
    "dilated": ([1, 2, 7, 7], dict(kernel_shape=[2, 2], dilations=[2, 2])),
    "same-upper": ([1, 2, 6, 5], dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[2, 2])),
    "overlapping": ([1, 1, 6, 6], dict(kernel_shape=[3, 3], strides=[1, 1])),
    "1d-padded": ([2, 3, 9], dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    "3d": ([1, 2, 4, 5, 6], dict(kernel_shape=[2, 2, 3], strides=[2, 1, 2])),
    "dynamic-batch-channels": (["N", "C", 6, 5], dict(kernel_shape=[2, 2], strides=[2, 2], pads=[1, 0, 0, 1])),
}


def _indices_model(dims, attrs, storage_order, dtype=TP.FLOAT):
    rank = len(dims)
    return dynamic_model([helper.make_node("MaxPool", ["x"], ["y", "i"], storage_order=storage_order, **attrs)],
                         [("x", dtype, dims)], [("y", dtype, [None] * rank), ("i", TP.INT64, [None] * rank)], [], 12)


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("case", sorted(INDICES_CASES))
def test_max_pool_indices_are_onnxruntime_s(case, storage_order):
    # the flat NCHW position of each maximum (column-major within a plane under storage_order=1); small integers
    # make ties in most windows: the first maximum in scan order wins (onnxruntime; onnx.reference's are wrong with
    # pads and ignore storage_order)
    dims, attrs = INDICES_CASES[case]
    model = _indices_model(dims, attrs, storage_order)
    rng = rng_for(f"indices-{case}-{storage_order}")
    bound = [[d if isinstance(d, int) else n for d in dims] for n in (1, 3)]
    feeds = [{"x": rng.integers(-3, 3, shape).astype(F32)} for shape in bound] + \
            [{"x": rng.standard_normal(shape).astype(F32)} for shape in bound]
    runs_like_onnxruntime(model, feeds)


@pytest.mark.parametrize("dtype,np_dtype", [(TP.INT8, np.int8), (TP.UINT8, np.uint8), (TP.DOUBLE, np.float64)])
def test_max_pool_indices_of_other_dtypes(dtype, np_dtype):
    # int8 padded windows: the padding holds -128 like the data, and never wins
    model = _indices_model([1, 2, 5, 5], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), 0, dtype)
    low = np.iinfo(np_dtype).min if np_dtype != np.float64 else -3
    x = rng_for(f"indices-{np_dtype}").integers(low, low + 3, (1, 2, 5, 5)).astype(np_dtype)
    runs_like_onnxruntime(model, [{"x": x}])


@pytest.mark.parametrize("dtype,lowest", [(TP.INT8, np.int8(-128)), (TP.FLOAT, np.float32(-np.inf))])
def test_max_pool_indices_never_point_into_the_padding(dtype, lowest):
    # windows whose every value is the lowest one, the value the padding holds: the first cell inside wins
    model = _indices_model([1, 1, 4, 4], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), 0, dtype)
    x = np.full((1, 1, 4, 4), lowest)
    x[0, 0, 3, 3] = 1
    runs_like_onnxruntime(model, [{"x": x}])


def test_max_pool_indices_whose_last_ceil_mode_window_starts_in_the_end_padding():
    # 6 rows, kernel 1, stride 3, ceil_mode: onnx shape inference keeps a third window starting at row 6 (past the
    # input), the rule and onnxruntime drop it; Y's shape was overridden, the Indices' was not, and the Transpose
    # reading them made the valid model "invalid" (fuzzer seed 8086, 4 models)
    model = dynamic_model([helper.make_node("MaxPool", ["x"], ["y", "i"], ceil_mode=1, kernel_shape=[1, 3],
                                            pads=[0, 2, 0, 2], strides=[3, 1]),
                           helper.make_node("Transpose", ["i"], ["t"], perm=[0, 1, 3, 2])],
                          [("x", TP.FLOAT, ["N", 1, 6, 4])], [("y", TP.FLOAT, [None] * 4), ("t", TP.INT64, [None] * 4)],
                          [], 12, check=False)  # (the full checker trusts onnx shape inference, wrong here)
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 1, 6, 4)} for n in (1, 2)])


def test_max_pool_indices_feed_max_unpool():
    # SegNet's decoder: MaxUnpool scatters the pooled values back to the positions MaxPool found
    model = dynamic_model([helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2]),
                           helper.make_node("Relu", ["y"], ["r"]),
                           helper.make_node("MaxUnpool", ["r", "i"], ["u"], kernel_shape=[2, 2], strides=[2, 2])],
                          [("x", TP.FLOAT, ["N", 3, 6, 8])], [("u", TP.FLOAT, ["N", 3, 6, 8])], [], 12)
    runs_like_onnxruntime(model, [{"x": rand_normal(n, n, 3, 6, 8)} for n in (1, 2)])


def test_max_pool_indices_need_static_spatial_dims():
    model = _indices_model(["N", 2, "H", 6], dict(kernel_shape=[2, 2]), 0)
    with pytest.raises(ConversionError) as caught:
        from_onnx(model)
    (issue,) = caught.value.issues
    assert issue.reason == "dynamic_shape" and "Indices" in issue.message and "dim 2 (H)" in issue.message
