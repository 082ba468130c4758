"""Valid ONNX models that once got wrong answers or were refused (issue 26), each converted the way ``convert``
converts it -- dynamic dims stay dynamic -- and run at several sizes of those dims, against onnxruntime."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_import.import_support import dynamic_model as graph
from onnx_import.import_support import ort_run, runs_like_onnxruntime

F = TensorProto.FLOAT


def test_a_one_channel_convolution_on_a_dynamic_batch(rng):
    # the NCHW image transposed to NHWC with one channel is "C-contiguous" to numpy whatever its channel stride:
    # the im2col read that stride and returned uninitialised memory from batch 2 on
    weight = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    model = graph([helper.make_node("Conv", ["x", "w"], ["y"])], [("x", F, ["N", 1, 10, 10])],
                  [("y", F, ["N", 4, 8, 8])], [("w", weight)])
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((n, 1, 10, 10)).astype(np.float32)} for n in (1, 2, 3)])


def test_a_transpose_that_moves_a_dynamic_dim_into_the_batch_position(rng):
    weight = rng.standard_normal((3, 1, 2, 2)).astype(np.float32)
    model = graph([helper.make_node("Transpose", ["x"], ["t"], perm=[3, 1, 2, 0]),
                   helper.make_node("Conv", ["t", "w"], ["y"])],
                  [("x", F, [6, 1, 6, "B"])], [("y", F, ["B", 3, 5, 5])], [("w", weight)])
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((6, 1, 6, n)).astype(np.float32)} for n in (1, 2, 3)])


@pytest.mark.parametrize("bias_is_input", [True, False])
@pytest.mark.parametrize("axis, scale_shape", [(-2, [1, 5]), (1, [3, 1, 1]), (2, [5])])
def test_layer_normalization_whose_scale_is_an_input_that_broadcasts(rng, axis, scale_shape, bias_is_input):
    # the scale is multiplied after LAYER_NORM; the bias went into LAYER_NORM, before it: (x_hat + b) * s
    norm_shape = [2, 3, 4, 5][axis:]
    bias = rng.standard_normal(norm_shape).astype(np.float32)
    inputs = [("x", F, ["N", 3, 4, 5]), ("s", F, scale_shape)] + ([("b", F, norm_shape)] if bias_is_input else [])
    model = graph([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=axis)], inputs,
                  [("y", F, ["N", 3, 4, 5])], [] if bias_is_input else [("b", bias)])
    feeds = [{"x": rng.standard_normal((n, 3, 4, 5)).astype(np.float32),
              "s": rng.standard_normal(scale_shape).astype(np.float32), **({"b": bias} if bias_is_input else {})}
             for n in (1, 2, 3)]
    runs_like_onnxruntime(model, feeds)


@pytest.mark.parametrize("batch", ["N", 2])
@pytest.mark.parametrize("through_relu", [False, True])
def test_a_residual_whose_input_also_feeds_an_op_between_the_product_and_the_add(rng, through_relu, batch):
    # MatMul + Add(residual) fuse into one step at the MatMul's position; it took over the Add's release of x, so
    # the Sigmoid between them read a released (or reused) buffer
    weight = rng.standard_normal((8, 8)).astype(np.float32)
    source = ["i"] if through_relu else []
    nodes = ([helper.make_node("Relu", ["i"], ["x"])] if through_relu else []) + [
        helper.make_node("MatMul", ["x", "w"], ["product"]), helper.make_node("Sigmoid", ["x"], ["z"]),
        helper.make_node("Add", ["product", "x"], ["y"])]
    name = source[0] if source else "x"
    model = graph(nodes, [(name, F, [batch, 8])], [("y", F, [batch, 8]), ("z", F, [batch, 8])], [("w", weight)])
    sizes = (1, 2, 3) if batch == "N" else (batch,)
    runs_like_onnxruntime(model, [{name: rng.standard_normal((n, 8)).astype(np.float32)} for n in sizes])


@pytest.mark.parametrize("op", ["AveragePool", "Conv"])
@pytest.mark.parametrize("other_reader", ["Transpose", "Relu"])
def test_an_nhwc_computed_tensor_that_also_feeds_a_transposed_graph_output(rng, op, other_reader):
    # the transposes cancel, so the pool/conv writes the graph output t directly; sinking the transpose into the
    # other reader still used the old name of that tensor: a tensor nothing writes
    weight = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    first = (helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=[2, 2]) if op == "AveragePool"
             else helper.make_node("Conv", ["x", "w"], ["p"]))
    side = 5 if op == "AveragePool" else 4
    channels = 3 if op == "AveragePool" else 4
    other = (helper.make_node("Transpose", ["p"], ["u"], perm=[0, 2, 3, 1]) if other_reader == "Transpose"
             else helper.make_node("Relu", ["p"], ["u"]))
    u_dims = ["N", side, side, channels] if other_reader == "Transpose" else ["N", channels, side, side]
    model = graph([first, helper.make_node("Transpose", ["p"], ["t"], perm=[0, 2, 3, 1]), other],
                  [("x", F, ["N", 3, 6, 6])], [("t", F, ["N", side, side, channels]), ("u", F, u_dims)],
                  [("w", weight)] if op == "Conv" else [])
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((n, 3, 6, 6)).astype(np.float32)} for n in (1, 2, 3)])


def test_dropout_with_its_mask_output_on_a_dynamic_batch(rng):
    model = graph([helper.make_node("Dropout", ["x"], ["y", "mask"])], [("x", F, ["N", 3])],
                  [("y", F, ["N", 3]), ("mask", TensorProto.BOOL, ["N", 3])], opset=13)
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((n, 3)).astype(np.float32)} for n in (1, 2, 3)])


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_the_softmax_family_before_opset_13_flattens_a_dynamic_batch(rng, op):
    model = graph([helper.make_node(op, ["x"], ["y"], axis=1)], [("x", F, ["N", 4, 2, 3])], [("y", F, ["N", 4, 2, 3])],
                  opset=11)
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((n, 4, 2, 3)).astype(np.float32)} for n in (1, 2, 3)])


@pytest.mark.parametrize("op", ["Mul", "Add"])
def test_a_one_column_product_times_a_scalar(rng, op):
    # the post-op fusion read the last dim of the 0-d constant (IndexError while compiling)
    weight = rng.standard_normal((2, 1)).astype(np.float32)
    model = graph([helper.make_node("MatMul", ["x", "w"], ["c"]), helper.make_node(op, ["c", "s"], ["y"])],
                  [("x", F, [4, 2])], [("y", F, [4, 1])], [("w", weight), ("s", np.float32(2.0))])
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((4, 2)).astype(np.float32)}])


def test_layer_normalization_without_a_bias_keeps_the_sign_of_a_zero(rng):
    # one element normalised is 0; times a negative scale, -0.0 -- which an added +0.0 bias turned into +0.0 (and
    # Reciprocal into +inf instead of -inf)
    model = graph([helper.make_node("LayerNormalization", ["x", "scale"], ["n"], axis=-1),
                   helper.make_node("Reciprocal", ["n"], ["y"])],
                  [("x", F, ["N", 1])], [("y", F, ["N", 1])], [("scale", np.array([-0.29], np.float32))])
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((n, 1)).astype(np.float32)} for n in (1, 2, 3)])


@pytest.mark.parametrize("nodes", [[], [helper.make_node("Identity", ["x"], ["y"])],
                                   [helper.make_node("Tile", ["x", "ones"], ["y"])]], ids=["input", "identity", "tile"])
def test_an_output_that_is_the_input_with_two_dynamic_dims(rng, nodes):
    # the copy that writes such an output was a RESHAPE to [-1, -1, 3]: RESHAPE takes one -1, so every run failed
    output = "y" if nodes else "x"
    model = graph(nodes, [("x", F, ["N", "C", 3])], [(output, F, ["N", "C", 3])],
                  [("ones", np.ones(3, np.int64))] if len(nodes) and nodes[0].op_type == "Tile" else [])
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((n, c, 3)).astype(np.float32)} for n, c in ((1, 2), (3, 1))])


@pytest.mark.parametrize("k_as_input", [False, True])
def test_top_k_smallest_puts_nan_last_as_the_largest_value(rng, k_as_input):
    # onnxruntime and onnx.reference rank NaN above every number in both orders; -x kept NaN on top, so the
    # "smallest" came out NaN first (a Log of negative values before a TopK, fuzzer seed 31337)
    x_rows = np.array([[1.0, np.nan, -np.inf, 0.5, np.inf, np.nan], [np.nan] * 6,
                       [3.0, -0.0, 0.0, -2.0, np.inf, 7.0]], np.float32)
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0)]
    inputs = [("x", F, ["N", 6])] + ([("k", TensorProto.INT64, [1])] if k_as_input else [])
    initializers = [] if k_as_input else [("k", np.array([5], np.int64))]
    model = graph(nodes, inputs, [("v", F, ["N", 5]), ("i", TensorProto.INT64, ["N", 5])], initializers)
    feeds = [{"x": x_rows[:n], **({"k": np.array([5], np.int64)} if k_as_input else {})} for n in (1, 2, 3)]
    runs_like_onnxruntime(model, feeds, rtol=0, atol=0)


@pytest.mark.parametrize("reduction, activation", [("ReduceLogSumExp", "Sigmoid"), ("ReduceMax", "HardSwish"),
                                                   ("ReduceSum", "LeakyRelu"), ("ReduceMean", "Tanh")])
def test_an_activation_of_a_scalar(rng, reduction, activation):
    # a ufunc of 0-d arrays gives a numpy scalar, which the in-place activations (fused into the reduction, or a
    # step of their own) cannot write into: "return arrays must be of ArrayType" (fuzzer seed 31337)
    nodes = [helper.make_node(reduction, ["x"], ["r"], keepdims=0),
             helper.make_node(activation, ["r"], ["y"]), helper.make_node(activation, ["x"], ["z"])]
    model = graph(nodes, [("x", F, [3, 4])], [("y", F, []), ("z", F, [3, 4])])
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((3, 4)).astype(np.float32)}])


@pytest.mark.parametrize("axis", [1, 2, 3])
def test_a_convolution_concatenated_along_any_axis(rng, axis):
    # the convolution wrote its output into its slice of the concatenation (a fast path) also along W, a slice its
    # kernels do not fill: the rest of the array was never written (fuzzer seed 8086: output height 1)
    conv_shape = [3, 5, 1, 2]
    extra_shape = list(conv_shape)
    extra_shape[axis] = 2
    out_shape = list(conv_shape)
    out_shape[axis] += 2
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=[3, 2]),
             helper.make_node("Concat", ["c", "e"], ["y"], axis=axis), helper.make_node("Relu", ["y"], ["z"])]
    model = graph(nodes, [("b", F, [5])], [("z", F, out_shape)],
                  [("x", rng.standard_normal((3, 4, 1, 3)).astype(np.float32)),
                   ("w", rng.standard_normal((5, 4, 1, 1)).astype(np.float32)),
                   ("e", rng.standard_normal(extra_shape).astype(np.float32))])
    runs_like_onnxruntime(model, [{"b": rng.standard_normal(5).astype(np.float32)}])


def test_hard_swish_is_x_itself_from_three_on(rng):
    # x * 6 / 6 is not always x in float32: HardSwish(x) >= x came out False for some x >= 3 (fuzzer seed 8086)
    x = np.concatenate([rng.uniform(3, 1000, 500), rng.uniform(-6, 6, 100)]).astype(np.float32).reshape(1, 600)
    nodes = [helper.make_node("HardSwish", ["x"], ["h"]), helper.make_node("GreaterOrEqual", ["h", "x"], ["y"]),
             helper.make_node("HardSwish", ["x"], ["z"])]
    model = graph(nodes, [("x", F, [1, 600])], [("y", TensorProto.BOOL, [1, 600]), ("z", F, [1, 600])])
    runs_like_onnxruntime(model, [{"x": x}], rtol=1e-6, atol=1e-7)  # (y, the comparison: exact)


def test_reduce_prod_of_finite_values_whose_partial_products_overflow():
    # float32 partial products overflowed to inf though the product is finite: the float64 product, rounded, is the
    # answer (here by hand: 1e30 * 1e30 * 1e-30 * 1e-30 * 3 = 3; the last row overflows for real: inf); fuzzer 8086
    from nnrt_onnx import Compilation, Executor, from_onnx

    x = np.array([[1e30, 1e30, 1e-30, 1e-30, 3], [1e30, 1e30, 1e30, 1, 1], [2, 0.5, 4, 0.25, -1]], np.float32)
    model = graph([helper.make_node("ReduceProd", ["x"], ["y"], axes=[1], keepdims=0)], [("x", F, ["N", 5])],
                  [("y", F, ["N"])], opset=13)
    compilation = Compilation(from_onnx(model).model)
    compilation.build()
    (got,) = Executor(compilation).run_arrays([x])
    np.testing.assert_allclose(got, np.array([3, np.inf, -1], np.float32), rtol=1e-6)


@pytest.mark.parametrize("op", ["LessOrEqual", "Sub"])
@pytest.mark.parametrize("order", ["twice first", "once first"])
def test_an_op_reading_a_transpose_and_that_transpose_transposed_again(rng, op, order):
    # op(T(x), T(T(x))): moving T(x) past the op cancelled the second transpose first, which left the op reading
    # x where it needed T^-1(x): the converter emitted an input named None (fuzzer seed 2027, a crash)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Transpose", ["t"], ["tt"], perm=[1, 0, 2])]
    operands = ["tt", "t"] if order == "twice first" else ["t", "tt"]
    nodes.append(helper.make_node(op, operands, ["y"]))
    out_type = TensorProto.BOOL if op == "LessOrEqual" else F
    model = graph(nodes, [("x", F, [3, 3, "N"])], [("y", out_type, [3, 3, "N"])])
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((3, 3, n)).astype(np.float32)} for n in (1, 2)])


@pytest.mark.parametrize("scale_is_input", [True, False])
@pytest.mark.parametrize("dims", [[2, 5, 3], ["N", 5, "C"]])
def test_layer_normalization_of_rows_of_equal_values_is_exactly_the_bias(rng, dims, scale_is_input):
    # every row holds one value c (an Expand of a constant column): normalised, exactly 0 -- onnxruntime sums in
    # float64; the float32 mean of three c's was an ulp off c, and 1 ulp / sqrt(epsilon) made 2e-5 (fuzzer seed 2027)
    column = np.asarray([[0.7731157], [-0.66587025], [0.3767675], [-1.2686288], [2.7790055]], np.float32)
    c = 3
    scale = rng.standard_normal(c).astype(np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Expand", ["column", "s"], ["e"]),
             helper.make_node("LayerNormalization", ["e", "scale", "bias"], ["y"], epsilon=1e-5)]
    inputs = [("x", F, dims)] + ([("scale", F, [dims[-1]])] if scale_is_input else [])
    inits = [("column", column), ("bias", bias)] + ([] if scale_is_input else [("scale", scale)])
    model = graph(nodes, inputs, [("y", F, dims)], inits)
    feeds = {"x": np.zeros((2, 5, c), np.float32)}
    if scale_is_input:
        feeds["scale"] = scale
    runs_like_onnxruntime(model, [feeds], rtol=0, atol=0)


# -- MaxPool of windows holding NaN (fuzzer seed 2027 model 88950: Log -> MaxPool) -------------------------------------
# np.maximum made every window holding a NaN NaN. The rule of kernels.pool: with unit strides and dilations a NaN
# never wins (NaN for NaN cells only), else the window's first cell inside the input wins if NaN -- onnx.reference's
# Y everywhere below, and onnxruntime's wherever the two agree: its float32 (MLAS) loops take other rules for some
# windows, its float64 loop the scan-order fold everywhere; its Indices follow that fold always. (onnx.reference
# raises on a window of NaN only with unit strides -- none below -- and reads pads wrongly there but in 2-D.)

def _nan_image(rng, shape, dtype, checkerboard):
    """Normal values, +-inf, and NaN in about half the cells; ``checkerboard``: only where the spatial coordinates
    sum to an even number (no window two cells long along an axis is NaN only)."""
    x = rng.standard_normal(shape)
    x[rng.random(shape) < 0.1] = np.inf
    x[rng.random(shape) < 0.1] = -np.inf
    nan = rng.random(shape) < 0.6
    if checkerboard:
        nan &= sum(np.indices(shape)[2:]) % 2 == 0
    x[nan] = np.nan
    return x.astype(dtype)


def _max_pool_runs_like_the_oracles(rng, attrs, dims_in, dims_out, shapes, dtype=np.float32, checkerboard=False,
                                    indices=False):
    """Converted once (dynamic dims stay dynamic), run on NaN-holding images of every shape: Y equal to
    onnx.reference's (Indices: to onnxruntime's) everywhere, and to the other oracle's wherever the two agree."""
    from onnx.reference import ReferenceEvaluator

    from nnrt_onnx import Compilation, Executor, from_onnx

    elem = {np.float32: F, np.float64: TensorProto.DOUBLE}[dtype]
    out = ("i", TensorProto.INT64, dims_out) if indices else ("y", elem, dims_out)
    model = graph([helper.make_node("MaxPool", ["x"], ["y", "i"] if indices else ["y"], **attrs)],
                  [("x", elem, dims_in)], [out], opset=13)
    compilation = Compilation(from_onnx(model).model)
    compilation.build()
    executor = Executor(compilation)
    agreed = 0
    for shape in shapes:
        x = _nan_image(rng, shape, dtype, checkerboard)
        (got,) = executor.run_arrays([x])
        (runtime,) = ort_run(model, {"x": x})
        (reference,) = ReferenceEvaluator(model).run(None, {"x": x})
        agree = (runtime == reference) | (np.isnan(runtime) & np.isnan(reference)) if not indices else \
            runtime == reference
        np.testing.assert_array_equal(got, runtime if indices else reference)
        np.testing.assert_array_equal(got[agree], runtime[agree])
        agreed += int(agree.sum())
    assert agreed  # (the oracles agree somewhere)


@pytest.mark.parametrize("dtype, widths", [(np.float32, (1,)), (np.float64, (1, 5, 6))])
def test_max_pool_keeps_a_nan_first_cell_where_a_stride_is_above_1(rng, dtype, widths):
    # the fuzzer's MaxPool: kernel [3, 1], strides [1, 2], ceil mode; onnxruntime agrees everywhere here
    model = graph([helper.make_node("Log", ["x"], ["t"]),
                   helper.make_node("MaxPool", ["t"], ["y"], kernel_shape=[3, 1], strides=[1, 2], ceil_mode=1)],
                  [("x", {np.float32: F, np.float64: TensorProto.DOUBLE}[dtype], ["N", 7, 6, "L"])],
                  [("y", {np.float32: F, np.float64: TensorProto.DOUBLE}[dtype], ["N", 7, 4, "W"])])
    feeds = [{"x": rng.standard_normal((n, 7, 6, w)).astype(dtype)} for n in (3, 2) for w in widths]
    runs_like_onnxruntime(model, feeds)  # (NaN where onnxruntime has NaN; Log rounds its own way)
    _max_pool_runs_like_the_oracles(rng, dict(kernel_shape=[3, 1], strides=[1, 2], ceil_mode=1), ["N", 7, 6, "L"],
                                    ["N", 7, 4, "W"], [(n, 7, 6, w) for n in (3, 2) for w in widths], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("attrs, dims_in, dims_out", [
    (dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), [2, 3, 7, 8], [2, 3, 4, 4]),
    (dict(kernel_shape=[2, 3], strides=[2, 1], pads=[1, 0, 0, 2], ceil_mode=1), [2, 3, 7, 8], [2, 3, 4, 8]),
    (dict(kernel_shape=[3], strides=[2], pads=[2, 1]), [2, 3, 9], [2, 3, 5]),
    (dict(kernel_shape=[2, 2], dilations=[2, 1], pads=[1, 1, 1, 1]), [2, 3, 7, 8], [2, 3, 7, 9]),  # slices per tap
    (dict(kernel_shape=[2, 2, 2], strides=[2, 1, 2], pads=[1, 0, 1, 0, 1, 1]), [1, 2, 5, 6, 5], [1, 2, 3, 6, 3]),
    (dict(kernel_shape=[2, 3, 2], strides=[2, 2, 3], ceil_mode=1), [1, 2, 5, 6, 7], [1, 2, 3, 3, 3]),
    (dict(kernel_shape=[2, 2], dilations=[1, 2], pads=[0, 1, 1, 0]), [2, 3, 7, 8], [2, 3, 7, 7]),
    (dict(kernel_shape=[3, 3], strides=[2, 2], dilations=[2, 2], pads=[2, 2, 2, 2]), [2, 3, 7, 8], [2, 3, 4, 4]),
])
def test_max_pool_of_nan_windows_strided_or_dilated_keeps_a_nan_first_cell(rng, attrs, dims_in, dims_out, dtype):
    _max_pool_runs_like_the_oracles(rng, attrs, dims_in, dims_out, [dims_in], dtype)


@pytest.mark.parametrize("attrs, dims_in, dims_out, shapes", [
    (dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), [2, 3, 7, 8], [2, 3, 7, 8], [(2, 3, 7, 8)]),
    (dict(kernel_shape=[2, 3]), ["N", 3, 7, 8], ["N", 3, 6, 6], [(2, 3, 7, 8), (1, 3, 7, 8)]),
    (dict(kernel_shape=[3]), [2, 3, 9], [2, 3, 7], [(2, 3, 9)]),
    (dict(kernel_shape=[2, 2, 3]), [1, 2, 5, 6, 5], [1, 2, 4, 5, 3], [(1, 2, 5, 6, 5)]),  # slices per tap
    (dict(kernel_shape=[3, 3], auto_pad="SAME_LOWER"), [2, 3, "H", "W"], [2, 3, "H", "W"],  # padded at run time
     [(2, 3, 7, 8), (2, 3, 4, 5)]),
])
def test_max_pool_of_nan_windows_with_unit_strides_ignores_nan(rng, attrs, dims_in, dims_out, shapes):
    _max_pool_runs_like_the_oracles(rng, attrs, dims_in, dims_out, shapes, checkerboard=True)


@pytest.mark.parametrize("attrs, dims_in, dims_out", [
    (dict(kernel_shape=[2, 3], strides=[2, 2], pads=[1, 1, 0, 1]), [2, 3, 7, 8], [2, 3, 4, 4]),
    (dict(kernel_shape=[2, 2, 2], dilations=[1, 2, 1], pads=[1, 0, 0, 0, 1, 1]), [1, 2, 5, 6, 5], [1, 2, 5, 5, 5]),
    (dict(kernel_shape=[3, 3], strides=[2, 2], dilations=[2, 2], pads=[2, 2, 2, 2]), [2, 3, 7, 8], [2, 3, 4, 4]),
    (dict(kernel_shape=[2]), [2, 3, 9], [2, 3, 8]),  # unit strides: windows [NaN, v] point to the NaN
])
def test_max_pool_indices_point_to_a_nan_first_cell(rng, attrs, dims_in, dims_out):
    # onnxruntime's Indices follow its scan-order fold (a NaN first cell is the index), with unit strides too,
    # where Y ignores that NaN (onnx.reference's indices agree there in the first plane, where they are right)
    unit = "strides" not in attrs and "dilations" not in attrs
    _max_pool_runs_like_the_oracles(rng, attrs, dims_in, dims_out, [dims_in], checkerboard=unit, indices=True)


@pytest.mark.parametrize("extrapolation", [0.0, 2.5])
def test_crop_and_resize_extrapolates_next_to_infinities_and_nan(extrapolation):
    # an extrapolated position was masked by a multiplication: 0 x -inf (a Log of 0 upstream) is NaN where the
    # extrapolation value belongs (fuzzer seed 4711: ReduceLogSum -> Resize tf_crop_and_resize -> Softmax)
    x = np.asarray([[-np.inf, 1.0, np.nan, 2.0], [3.0, np.inf, 4.0, -1.0]], np.float32).reshape(1, 2, 4)
    node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="nearest", axes=[2],
                            coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=extrapolation)
    model = graph([node], [("x", F, [1, 2, 4])], [("y", F, [1, 2, 6])],
                  [("roi", np.asarray([-0.4, 1.3], np.float32)), ("scales", np.asarray([1.5], np.float32))], 19)
    runs_like_onnxruntime(model, [{"x": x}], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", [2, 3])
def test_same_upper_dilated_strided_max_pool_follows_the_spec_where_onnxruntime_drops_a_window(kernel):
    # SAME_UPPER, dilation 2, stride 3 over 8: the spec's ceil(8 / 3) = 3 outputs, as onnx's shape inference and
    # onnx.reference give; onnxruntime 1.32 returns 2 (docs/deviations.md, "ONNX readings")
    import onnx
    from onnx.reference import ReferenceEvaluator

    from nnrt_onnx import Compilation, Executor, from_onnx

    model = graph([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[kernel], strides=[3], dilations=[2],
                                    auto_pad="SAME_UPPER")], [("x", F, [1, 1, 8])], [("y", F, ["N", 1, "W"])], opset=18)
    x = np.asarray([3, -1, 7, 0, 2, 9, -4, 5], np.float32).reshape(1, 1, 8)
    compilation = Compilation(from_onnx(model).model)
    compilation.build()
    (got,) = Executor(compilation).run_arrays([x])
    (reference,) = ReferenceEvaluator(model).run(None, {"x": x})
    inferred = onnx.shape_inference.infer_shapes(model).graph.output[0].type.tensor_type.shape
    assert [d.dim_value for d in inferred.dim] == [1, 1, 3]
    np.testing.assert_array_equal(got, reference)
