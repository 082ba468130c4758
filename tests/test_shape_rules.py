"""Shape rules (``@shape_rule`` next to every kernel, ``infer_output_shapes``) against the kernels themselves.

* every op with a kernel has a rule;
* every op case of the op table (``op_cases()``): the rule's shapes equal the shapes the native run produces when
  every input value is known, and agree with them (same rank, same known dims) when only the case's constants are;
* unknown dims: for a representative op of each rule kind, an unknown (-1) batch dim stays -1 and the known dims stay
  exact; unknown ranks and unknown value inputs give None / -1 where the kernel could give anything;
* inconsistent shapes raise the kernel's own NNRtError (same code, same message);
* rules are shape arithmetic: dims far too large to allocate are no problem.

(This cross-family module lives in tests/ rather than tests/kernels/, whose modules are one per family.)
"""
from __future__ import annotations

import numpy as np
import pytest

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.errors import NNRtError
from nnrt_onnx.kernels import OpContext, infer_output_shapes, kernels, shape_rules, wants_context
from nnrt_onnx.optable import op_spec
from nnrt_onnx.testing.opcases import op_cases

CASES = op_cases()
U = -1  # an unknown dim


def test_every_kernel_has_a_shape_rule():
    assert set(shape_rules()) == set(kernels())


# -- the kernels as the oracle -------------------------------------------------------------------------------------

def _agrees(rule_shape, actual) -> bool:
    """A rule's shape is consistent with an actual one: unknown rank, or the same rank with every known dim equal."""
    return rule_shape is None or (len(rule_shape) == len(actual) and
                                  all(d in (U, a) for d, a in zip(rule_shape, actual)))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule_matches_the_kernel_on_every_op_case(case):
    model, runtime_inputs = case.model()
    compilation = Compilation(model)
    compilation.build()
    actual = [tuple(a.shape) for a in Executor(compilation).run_arrays(runtime_inputs)]

    operation = model.operations[0]
    arrays = case.arrays()
    shapes = [a.shape for a in arrays]
    constants = [a if i in case.constant_positions else None for i, a in enumerate(arrays)]
    arguments = dict(operation.values)  # the op table defaults are filled in by infer_output_shapes
    count = len(operation.outputs)

    every_value = infer_output_shapes(case.op, shapes, arrays, arguments, output_count=count)
    assert list(every_value) == actual
    only_constants = infer_output_shapes(case.op, shapes, constants, arguments, output_count=count)
    assert len(only_constants) == len(actual)
    assert all(_agrees(r, a) for r, a in zip(only_constants, actual)), (only_constants, actual)
    if len(case.constant_positions) == len(arrays):
        assert list(only_constants) == actual


# -- unknown dims --------------------------------------------------------------------------------------------------

i32 = lambda *v: np.array(v, np.int32)  # noqa: E731 - a constant integer input
i64 = lambda *v: np.array(v, np.int64)  # noqa: E731

# (id, op, input shapes, input values (None = unknown), kernel keywords beyond the table defaults, expected shapes)
UNKNOWN_DIM_CASES = [
    # same shape as the input (element-wise unary, activations, casts, normalizations)
    ("unary", OP.OH_NN_OPS_RELU, [(U, 3, 4)], [None], {}, [(U, 3, 4)]),
    ("unary-rank", OP.OH_NN_OPS_EXP, [None], [None], {}, [None]),
    ("softmax", OP.OH_NN_OPS_SOFTMAX, [(U, 10)], [None], {"axis": 1}, [(U, 10)]),
    ("layer-norm", OP.OH_NN_OPS_LAYER_NORM, [(U, 5, 8), (5, 8), (5, 8)], [None] * 3, {}, [(U, 5, 8)]),
    ("batch-norm", OP.OH_NN_OPS_BATCH_NORM, [(U, 4, 4, 3)] + [(3,)] * 4, [None] * 5, {}, [(U, 4, 4, 3)]),
    ("prelu", OP.OH_NN_OPS_PRELU, [(U, 6, 6, 3), (3,)], [None, None], {}, [(U, 6, 6, 3)]),
    # broadcasting
    ("binary", OP.OH_NN_OPS_ADD, [(U, 1, 4), (3, 1)], [None, None], {}, [(U, 3, 4)]),
    ("binary-two-unknown", OP.OH_NN_OPS_MUL, [(U, 4), (U, 4)], [None, None], {}, [(U, 4)]),
    ("binary-one", OP.OH_NN_OPS_LESS, [(U, 1), (1, 1)], [None, None], {}, [(U, 1)]),
    ("binary-rank", OP.OH_NN_OPS_SUB, [None, (4,)], [None, None], {}, [None]),
    ("select", OP.OH_NN_OPS_SELECT, [(U,), (U, 3), (U, 3)], [None] * 3, {}, [(U, 3)]),
    ("where", OP.OH_NN_OPS_WHERE, [(U, 1), (1, 5), (5,)], [None] * 3, {}, [(U, 5)]),
    ("bias-add", OP.OH_NN_OPS_BIAS_ADD, [(U, 7), (7,)], [None, None], {}, [(U, 7)]),
    # window geometry
    ("conv-same", OP.OH_NN_OPS_CONV2D, [(U, 9, 9, 3), (8, 3, 3, 3), (8,)], [None] * 3,
     {"strides": [2, 2], "pad_mode": 0}, [(U, 5, 5, 8)]),
    ("conv-hw", OP.OH_NN_OPS_CONV2D, [(U, U, 9, 3), (8, 3, 3, 3), (8,)], [None] * 3,
     {"pad_list": [1, 1, 1, 1], "dilation": [2, 2]}, [(U, U, 7, 8)]),
    ("conv-rank", OP.OH_NN_OPS_CONV2D, [None, (8, 3, 3, 3), (8,)], [None] * 3, {}, [(U, U, U, 8)]),
    ("depthwise", OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE, [(U, 8, 8, U), (6, 3, 3, 1), (6,)], [None] * 3,
     {"pad_mode": 1}, [(U, 6, 6, 6)]),
    ("conv-transpose", OP.OH_NN_OPS_CONV2D_TRANSPOSE, [(U, 4, 5, 2), (3, 3, 3, 2), (3,)], [None] * 3,
     {"strides": [2, 2], "pad_list": [1, 1, 1, 1], "output_paddings": [1, 0]}, [(U, 8, 9, 3)]),
    ("max-pool-ceil", OP.OH_NN_OPS_MAX_POOL, [(U, 4, 4, 2)], [None],
     {"kernel_size": [3, 3], "stride": [2, 2], "round_mode": 1}, [(U, 2, 2, 2)]),
    ("avg-pool-global", OP.OH_NN_OPS_AVG_POOL, [(U, U, U, 5)], [None], {"global_pool": True}, [(U, 1, 1, 5)]),
    ("resize", OP.OH_NN_OPS_RESIZE_BILINEAR, [(U, 4, 4, 3)], [None], {"new_height": 8, "new_width": 6},
     [(U, 8, 6, 3)]),
    ("resize-aspect", OP.OH_NN_OPS_RESIZE_BILINEAR, [(1, U, 4, 3)], [None],
     {"new_height": 8, "new_width": 6, "preserve_aspect_ratio": True}, [(1, U, U, 3)]),
    ("space-to-batch", OP.OH_NN_OPS_SPACE_TO_BATCH_ND, [(U, 4, 6, 3)], [None],
     {"block_shape": [2, 2], "paddings": [0, 0, 1, 1]}, [(U, 2, 4, 3)]),
    ("batch-to-space", OP.OH_NN_OPS_BATCH_TO_SPACE_ND, [(U, 2, 4, 3)], [None],
     {"block_size": [2, 2], "crops": [0, 0, 1, 1]}, [(U, 4, 6, 3)]),
    ("depth-to-space", OP.OH_NN_OPS_DEPTH_TO_SPACE, [(U, 2, 3, 8)], [None], {"block_size": 2}, [(U, 4, 6, 2)]),
    ("space-to-depth", OP.OH_NN_OPS_SPACE_TO_DEPTH, [(U, 4, 6, 2)], [None], {"block_size": 2}, [(U, 2, 3, 8)]),
    # products
    ("matmul", OP.OH_NN_OPS_MATMUL, [(U, 3, 4), (5, 4)], [None, None], {"transpose_b": True}, [(U, 3, 5)]),
    ("matmul-vector", OP.OH_NN_OPS_MATMUL, [(4,), (U, 4, 6)], [None, None], {}, [(U, 6)]),
    ("full-connection-axis", OP.OH_NN_OPS_FULL_CONNECTION, [(U, 2, 3), (7, 6)], [None, None],
     {"use_axis": True, "axis": 1}, [(U, 7)]),
    ("full-connection-rows", OP.OH_NN_OPS_FULL_CONNECTION, [(U, 6), (7, 6)], [None, None], {}, [(U, 7)]),
    # reductions
    ("reduce", OP.OH_NN_OPS_REDUCE_SUM, [(U, 4, 5), (1,)], [None, i32(1)], {}, [(U, 5)]),
    ("reduce-keep", OP.OH_NN_OPS_REDUCE_MEAN, [(U, 4, 5), (2,)], [None, i32(-1, 1)], {"keep_dims": True},
     [(U, 1, 1)]),
    ("reduce-axes-unknown", OP.OH_NN_OPS_REDUCE_MAX, [(U, 4, 5), (1,)], [None, None], {}, [(U, U)]),
    ("reduce-axes-unknown-keep", OP.OH_NN_OPS_REDUCE_MIN, [(U, 4, 5), (1,)], [None, None], {"keep_dims": True},
     [(U, U, U)]),
    ("reduce-to-end", OP.OH_NN_OPS_REDUCE_PROD, [(U, 4, 5), (1,)], [None, None], {"reduce_to_end": True}, [None]),
    ("all", OP.OH_NN_OPS_ALL, [(U, 4, 5), ()], [None, i64(2)], {"keep_dims": 1}, [(U, 4, 1)]),
    ("arg-max", OP.OH_NN_OPS_ARG_MAX, [(U, 4, 5)], [None], {"axis": 1}, [(U, 5)]),
    ("arg-max-top-k", OP.OH_NN_OPS_ARG_MAX, [(U, 4, 5)], [None], {"axis": 2, "top_k": 3}, [(U, 4, 3)]),
    ("top-k", OP.OH_NN_OPS_TOP_K, [(U, 4, 5), ()], [None, i32(2)], {}, [(U, 4, 2), (U, 4, 2)]),
    ("top-k-unknown", OP.OH_NN_OPS_TOP_K, [(U, 4, 5), ()], [None, None], {}, [(U, 4, U), (U, 4, U)]),
    # shape movement
    ("reshape-copy", OP.OH_NN_OPS_RESHAPE, [(U, 4, 4), (2,)], [None, i64(0, -1)], {}, [(U, 16)]),
    ("reshape-infer", OP.OH_NN_OPS_RESHAPE, [(U, 4, 4), (2,)], [None, i64(-1, 8)], {}, [(U, 8)]),
    ("reshape-unknown-target", OP.OH_NN_OPS_RESHAPE, [(U, 4), (3,)], [None, None], {}, [(U, U, U)]),
    ("reshape-to-vector", OP.OH_NN_OPS_RESHAPE, [(3, 4), (1,)], [None, None], {}, [(12,)]),
    ("transpose", OP.OH_NN_OPS_TRANSPOSE, [(U, 3, 5), (3,)], [None, i32(0, 2, 1)], {}, [(U, 5, 3)]),
    ("transpose-unknown-perm", OP.OH_NN_OPS_TRANSPOSE, [(U, 3, 5), (3,)], [None, None], {}, [(U, U, U)]),
    ("concat", OP.OH_NN_OPS_CONCAT, [(U, 3), (U, 4)], [None, None], {"axis": 1}, [(U, 7)]),
    ("concat-batch", OP.OH_NN_OPS_CONCAT, [(U, 3), (2, 3)], [None, None], {"axis": 0}, [(U, 3)]),
    ("split", OP.OH_NN_OPS_SPLIT, [(U, 6)], [None], {"axis": 1, "output_num": 3}, [(U, 2)] * 3),
    ("split-batch", OP.OH_NN_OPS_SPLIT, [(U, 6)], [None], {"size_splits": [1, -1]}, [(1, 6), (U, 6)]),
    ("stack", OP.OH_NN_OPS_STACK, [(U, 3), (2, U)], [None, None], {"axis": 1}, [(2, 2, 3)]),
    ("unstack", OP.OH_NN_OPS_UNSTACK, [(U, 3)], [None], {"axis": 1}, [(U,)] * 3),
    ("squeeze-axis", OP.OH_NN_OPS_SQUEEZE, [(U, 1, 3)], [None], {"axis": [1]}, [(U, 3)]),
    ("squeeze-all", OP.OH_NN_OPS_SQUEEZE, [(U, 1, 3)], [None], {}, [None]),
    ("unsqueeze", OP.OH_NN_OPS_UNSQUEEZE, [(U, 3)], [None], {"axis": [1, -1]}, [(U, 1, 3, 1)]),
    ("expand-dims", OP.OH_NN_OPS_EXPAND_DIMS, [(U, 3), ()], [None, i32(0)], {}, [(1, U, 3)]),
    ("expand-dims-unknown", OP.OH_NN_OPS_EXPAND_DIMS, [(U, 3), ()], [None, None], {}, [(U, U, U)]),
    ("flatten", OP.OH_NN_OPS_FLATTEN, [(U, 3, 4)], [None], {}, [(U, 12)]),
    ("tile", OP.OH_NN_OPS_TILE, [(U, 3), (3,)], [None, i32(2, 1, 2)], {}, [(2, U, 6)]),
    ("tile-unknown", OP.OH_NN_OPS_TILE, [(U, 3), (2,)], [None, None], {}, [(U, U)]),
    ("broadcast-to", OP.OH_NN_OPS_BROADCAST_TO, [(U, 1)], [None], {"shape": [-1, 4]}, [(U, 4)]),
    ("pad", OP.OH_NN_OPS_PAD, [(U, 3), (2, 2)], [None, i32(0, 0, 1, 2)], {}, [(U, 6)]),
    ("pad-unknown", OP.OH_NN_OPS_PAD, [(U, 3), (2, 2)], [None, None], {}, [(U, U)]),
    ("crop", OP.OH_NN_OPS_CROP, [(U, 6, 6, 3), (2,)], [None, i32(4, 2)], {"axis": 2, "offset": [1]},
     [(U, 6, 4, 2)]),
    ("crop-unknown", OP.OH_NN_OPS_CROP, [(U, 6, 6, 3), (3,)], [None, None], {"axis": 1}, [(U, U, U, U)]),
    # generators
    ("shape", OP.OH_NN_OPS_SHAPE, [(U, 3)], [None], {}, [(2,)]),
    ("shape-rank", OP.OH_NN_OPS_SHAPE, [None], [None], {}, [(U,)]),
    ("rank", OP.OH_NN_OPS_RANK, [None], [None], {}, [()]),
    ("range", OP.OH_NN_OPS_RANGE, [(U,)], [None], {"start": 2, "limit": 11, "delta": 3}, [(3,)]),
    ("fill", OP.OH_NN_OPS_FILL, [(), (3,)], [None, i32(2, 5, 1)], {}, [(2, 5, 1)]),
    ("fill-unknown", OP.OH_NN_OPS_FILL, [(), (3,)], [None, None], {}, [(U, U, U)]),
    ("constant-of-shape", OP.OH_NN_OPS_CONSTANT_OF_SHAPE, [(2,)], [None], {}, [(U, U)]),
    # indexing
    ("slice", OP.OH_NN_OPS_SLICE, [(U, 6, 5), (2,), (2,)], [None, i32(1, 0), i32(3, -1)], {"axes": [1, 2]},
     [(U, 3, 5)]),
    ("slice-unknown", OP.OH_NN_OPS_SLICE, [(U, 6, 5), (1,), (1,)], [None, None, i32(2)], {"axes": [2]}, [(U, 6, 2)]),
    ("strided-slice", OP.OH_NN_OPS_STRIDED_SLICE, [(U, 8, 4), (3,), (3,), (3,)],
     [None, i32(0, 1, 0), i32(0, 7, 4), i32(1, 2, -1)], {"begin_mask": 5, "end_mask": 5}, [(U, 3, 4)]),
    ("strided-slice-masks", OP.OH_NN_OPS_STRIDED_SLICE, [(U, 8, 4), (3,), (3,), (3,)], [None] * 4,
     {"new_axis_mask": 1, "shrink_axis_mask": 4}, [(1, U, 4)]),
    ("gather", OP.OH_NN_OPS_GATHER, [(U, 5, 3), (2, 2), ()], [None, None, i32(1)], {}, [(U, 2, 2, 3)]),
    ("gather-unknown-axis", OP.OH_NN_OPS_GATHER, [(U, 5, 3), (2,), ()], [None, None, None], {}, [(U, U, U)]),
    ("gather-nd", OP.OH_NN_OPS_GATHER_ND, [(U, 5, 3), (U, 2)], [None, None], {}, [(U, 3)]),
    ("scatter-nd", OP.OH_NN_OPS_SCATTER_ND, [(U, 1), (U, 3), (2,)], [None, None, None], {}, [(U, 3)]),
    ("one-hot", OP.OH_NN_OPS_ONE_HOT, [(U, 3), (), (), ()], [None, i32(4), None, None], {}, [(U, 3, 4)]),
    ("one-hot-unknown-depth", OP.OH_NN_OPS_ONE_HOT, [(U,), (), (), ()], [None] * 4, {"axis": 0}, [(U, U)]),
    ("sparse-to-dense", OP.OH_NN_OPS_SPARSE_TO_DENSE, [(U, 2), (U,), (2,)], [None, None, i32(3, 4)], {}, [(3, 4)]),
    # multi-output
    ("lstm", OP.OH_NN_OPS_LSTM, [(5, U, 3), (2, 16, 3), (2, 16, 4), (2, 32), (2, U, 4), (2, U, 4)], [None] * 6,
     {"bidirectional": True}, [(5, U, 8), (2, U, 4), (2, U, 4)]),
    ("detection", OP.OH_NN_OPS_DETECTION_POST_PROCESS, [(U, 10, 4), (U, 10, 3), (10, 4)], [None] * 3,
     {"scale": [5.0, 5.0, 10.0, 10.0], "max_detections": 3, "max_classes_per_detection": 2, "num_classes": 2},
     [(U, 6, 4), (U, 6), (U, 6), (U,)]),
]


@pytest.mark.parametrize("case", UNKNOWN_DIM_CASES, ids=[c[0] for c in UNKNOWN_DIM_CASES])
def test_unknown_dims_stay_unknown_and_known_dims_exact(case):
    _, op, shapes, values, arguments, expected = case
    assert list(infer_output_shapes(op, shapes, values, arguments, output_count=len(expected))) == expected


def test_every_rule_kind_is_tried_with_unknown_dims():
    assert {shape_rules()[c[1]] for c in UNKNOWN_DIM_CASES} >= {shape_rules()[op] for op in (
        OP.OH_NN_OPS_RELU, OP.OH_NN_OPS_ADD, OP.OH_NN_OPS_CONV2D, OP.OH_NN_OPS_MAX_POOL, OP.OH_NN_OPS_MATMUL,
        OP.OH_NN_OPS_REDUCE_SUM, OP.OH_NN_OPS_RESHAPE, OP.OH_NN_OPS_STRIDED_SLICE, OP.OH_NN_OPS_SPLIT)}


def test_output_count_comes_from_the_node_when_the_parameters_do_not_give_it():
    assert infer_output_shapes(OP.OH_NN_OPS_SPLIT, [(U, 6)], [None], {"axis": 1}, output_count=2) == \
        ((U, 3), (U, 3))
    with pytest.raises(NNRtError, match="neither outputNum nor sizeSplits"):
        infer_output_shapes(OP.OH_NN_OPS_SPLIT, [(U, 6)], [None], {"axis": 1})
    assert infer_output_shapes(OP.OH_NN_OPS_UNSTACK, [(U, 3)], [None], {"axis": 0}, output_count=2) == ((3,), (3,))


def test_rules_are_shape_arithmetic():
    """Dims no array of which could be allocated: a rule that computed on arrays would fail."""
    huge = 10 ** 9
    assert infer_output_shapes(OP.OH_NN_OPS_ADD, [(huge, 1, huge), (huge, 1)], [None, None]) == ((huge, huge, huge),)
    assert infer_output_shapes(OP.OH_NN_OPS_CONV2D, [(huge, huge, huge, 3), (8, 3, 3, 3), (8,)], [None] * 3,
                               {"pad_mode": 0, "strides": [2, 2]}) == ((huge, huge // 2, huge // 2, 8),)
    assert infer_output_shapes(OP.OH_NN_OPS_RESHAPE, [(huge, huge), (1,)], [None, i64(-1)]) == ((huge * huge,),)


# -- rules raise the kernels' errors -------------------------------------------------------------------------------

f32 = lambda *s: np.zeros(s, np.float32)  # noqa: E731

BAD_INPUTS = [
    ("add", OP.OH_NN_OPS_ADD, [f32(2, 3), f32(4, 3)], {}),
    ("bias-add", OP.OH_NN_OPS_BIAS_ADD, [f32(2, 3), f32(4)], {}),
    ("scale", OP.OH_NN_OPS_SCALE, [f32(2, 3), f32(2), f32(2)], {"axis": 1}),
    ("prelu", OP.OH_NN_OPS_PRELU, [f32(2, 3), f32(2)], {}),
    ("conv-channels", OP.OH_NN_OPS_CONV2D, [f32(1, 5, 5, 3), f32(4, 3, 3, 2), f32(4)], {}),
    ("conv-fit", OP.OH_NN_OPS_CONV2D, [f32(1, 2, 5, 3), f32(4, 3, 3, 3), f32(4)], {}),
    ("conv-bias", OP.OH_NN_OPS_CONV2D, [f32(1, 5, 5, 3), f32(4, 3, 3, 3), f32(3)], {}),
    ("depthwise", OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE, [f32(1, 5, 5, 3), f32(4, 3, 3, 1), f32(4)], {}),
    ("conv-transpose-crop", OP.OH_NN_OPS_CONV2D_TRANSPOSE, [f32(1, 1, 1, 2), f32(2, 1, 1, 2), f32(2)],
     {"pad_list": [1, 1, 0, 0]}),
    ("pool-fit", OP.OH_NN_OPS_MAX_POOL, [f32(1, 2, 5, 3)], {"kernel_size": [3, 3]}),
    ("pool-pads", OP.OH_NN_OPS_AVG_POOL, [f32(1, 5, 5, 3)], {"kernel_size": [2, 2], "pad_list": [2, 0, 0, 0]}),
    ("matmul", OP.OH_NN_OPS_MATMUL, [f32(2, 3), f32(4, 5)], {}),
    ("matmul-batch", OP.OH_NN_OPS_MATMUL, [f32(2, 2, 3), f32(3, 3, 5)], {}),
    ("full-connection", OP.OH_NN_OPS_FULL_CONNECTION, [f32(2, 5), f32(3, 4)], {}),
    ("layer-norm", OP.OH_NN_OPS_LAYER_NORM, [f32(2, 3, 4), f32(3, 3), f32(3, 4)], {}),
    ("batch-norm", OP.OH_NN_OPS_BATCH_NORM, [f32(2, 3), f32(3), f32(2), f32(3), f32(3)], {}),
    ("reduce-to-end", OP.OH_NN_OPS_REDUCE_SUM, [f32(2, 3), np.array([0, 1], np.int32)], {"reduce_to_end": True}),
    ("reshape", OP.OH_NN_OPS_RESHAPE, [f32(2, 3), np.array([4, 2], np.int64)], {}),
    ("transpose", OP.OH_NN_OPS_TRANSPOSE, [f32(2, 3), np.array([0, 0], np.int32)], {}),
    ("concat", OP.OH_NN_OPS_CONCAT, [f32(2, 3), f32(2, 4)], {"axis": 0}),
    ("stack", OP.OH_NN_OPS_STACK, [f32(2, 3), f32(3, 2)], {}),
    ("tile", OP.OH_NN_OPS_TILE, [f32(2, 3), np.array([2], np.int32)], {}),
    ("broadcast-to", OP.OH_NN_OPS_BROADCAST_TO, [f32(2, 3)], {"shape": [4, 3]}),
    ("pad-reflect", OP.OH_NN_OPS_PAD, [f32(2, 3), np.array([[0, 0], [3, 0]], np.int32)], {"padding_mode": 1}),
    ("flatten", OP.OH_NN_OPS_FLATTEN, [f32(2, 3)], {"axis": 3}),
    ("slice", OP.OH_NN_OPS_SLICE, [f32(4, 3), np.array([2], np.int32), np.array([3], np.int32)], {}),
    ("strided-slice", OP.OH_NN_OPS_STRIDED_SLICE, [f32(4, 3)] + [np.array([5], np.int32)] * 2 +
     [np.array([1], np.int32)], {"shrink_axis_mask": 1}),
    ("gather-nd", OP.OH_NN_OPS_GATHER_ND, [f32(4, 3), np.zeros((2, 3), np.int32)], {}),
    ("one-hot", OP.OH_NN_OPS_ONE_HOT, [np.zeros(3, np.int32), np.array(0, np.int32), f32(), f32()], {}),
    ("space-to-depth", OP.OH_NN_OPS_SPACE_TO_DEPTH, [f32(1, 5, 4, 2)], {"block_size": 2}),
    ("batch-to-space", OP.OH_NN_OPS_BATCH_TO_SPACE_ND, [f32(3, 2, 2, 1)], {"block_size": [2, 2]}),
    ("crop", OP.OH_NN_OPS_CROP, [f32(2, 6), np.array([7], np.int32)], {"axis": 1}),
    ("lstm", OP.OH_NN_OPS_LSTM, [f32(5, 2, 3), f32(1, 16, 3), f32(1, 16, 4), f32(1, 32), f32(1, 3, 4),
                                 f32(1, 2, 4)], {}),
]


def _kernel_error(op, inputs, arguments) -> NNRtError:
    spec = op_spec(op)
    keywords = {**spec.defaults, **arguments}
    keywords.pop(spec.fuse, None)
    fn = kernels()[op]
    if wants_context(fn):
        keywords["ctx"] = OpContext(op, tuple(a.dtype for a in inputs), (np.dtype(np.float32),) * spec.outputs[0],
                                    ((),) * spec.outputs[0], (None,) * len(inputs), (None,) * spec.outputs[0])
    with pytest.raises(NNRtError) as info:
        fn(*inputs, **keywords)
    return info.value


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_rules_raise_the_kernels_errors(case):
    _, op, inputs, arguments = case
    expected = _kernel_error(op, inputs, arguments)
    with pytest.raises(NNRtError) as info:  # shapes, and the values a kernel reads to size its output
        infer_output_shapes(op, [a.shape for a in inputs], inputs, arguments)
    assert (info.value.code, info.value.message) == (expected.code, expected.message)
