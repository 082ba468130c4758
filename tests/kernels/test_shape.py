"""Shape family: reshape, transpose, concat/split, stack/unstack, squeeze/unsqueeze/expand_dims, flatten, tile,
broadcast_to, pad, fill, shape, rank, range, constant_of_shape and assert, run end to end through ``run_op``.

Oracles: onnxruntime on single-node ONNX models (onnx.reference where ORT has no kernel for a dtype), and
hand-written expected values for FILL, RANK, ASSERT, STACK/UNSTACK, the mirror PAD modes (TF documentation examples,
a naive index formula) and the header's own examples.
"""
from __future__ import annotations

import numpy as np
import pytest
from kernels.kernel_support import (
    DTYPES,
    INVALID,
    SHORT,
    UNSUPPORTED,
    check,
    check_tol,
    dequant,
    dequantize_ref,
    expect_error,
    i32,
    i64,
    oracle,
    ort1,
    ort_node,
    quant,
    quantize_ref,
    raises,
    rand_any,
    rng_for_request,
    run,
)
from onnx import helper, numpy_helper

from nnrt_onnx.enums import OH_NN_DataType, OH_NN_ReturnCode
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as T
from nnrt_onnx.tensor import QuantParam

FAILED = OH_NN_ReturnCode.OH_NN_FAILED


# ------------------------------------------------------------------------------------------------------- RESHAPE

RESHAPE_CASES = [
    ("reshape-basic-f32", (2, 3, 4), "float32", [4, 6], False),
    ("reshape-infer-f16", (2, 3, 4), "float16", [-1, 3, 2], False),
    ("reshape-zero-copy-i8", (2, 3, 4), "int8", [0, 12], False),
    ("reshape-flat-bool", (2, 3, 4), "bool", [24], False),
    ("reshape-5d-u16", (2, 3, 4), "uint16", [1, 2, 1, 12, 1], False),
    ("reshape-i32shape-i64", (6, 2), "int64", [3, 4], True),
] + [(f"reshape-dtype-{SHORT[d]}", (2, 6), d, [3, -1], False) for d in DTYPES]


@pytest.mark.parametrize("case", RESHAPE_CASES, ids=[c[0] for c in RESHAPE_CASES])
def test_reshape(case, rng):
    _, dims, dtype, target, int32_shape = case
    x = rand_any(rng, dims, dtype)
    shape = np.array(target, dtype=np.int32 if int32_shape else np.int64)
    expected = ort1("Reshape", [x, shape.astype(np.int64)])
    check(run("RESHAPE", [x, shape], constant_inputs=[1])[0], expected)


def test_reshape_fp16_mode(rng):
    x = rand_any(rng, (4, 6), "float32")
    out = run("RESHAPE", [x, i64(2, 12)], constant_inputs=[1], float16=True)[0]
    check(out, x.astype(np.float16).astype(np.float32).reshape(2, 12))


@pytest.mark.parametrize("target,code", [([-1, -1], INVALID), ([5, 5], INVALID), ([-2, 12], INVALID)],
                         ids=["reshape-err-two-infer", "reshape-err-count", "reshape-err-negative"])
def test_reshape_errors(target, code):
    raises(code, run, "RESHAPE", [np.zeros((4, 6), np.float32), i64(*target)], constant_inputs=[1])


def test_reshape_err_float_shape():
    raises(UNSUPPORTED, run, "RESHAPE", [np.zeros((4, 6), np.float32), np.array([24.0], np.float32)],
           constant_inputs=[1], match="RESHAPE")


def test_reshape_quantized(rng):
    q = rng.integers(-128, 128, (3, 4)).astype(np.int8)
    out = run("RESHAPE", [q, i64(4, 3)], constant_inputs=[1], input_quant={0: QuantParam.per_tensor(0.05, 3)},
              output_quant={0: QuantParam.per_tensor(0.1, -2)}, output_dtypes=[np.int8])[0]
    real = ort1("Reshape", [dequantize_ref(q, 0.05, 3), i64(4, 3)])
    check(out, quantize_ref(real, np.int8, 0.1, -2))


# ----------------------------------------------------------------------------------------------------- TRANSPOSE

TRANSPOSE_CASES = [
    ("transpose-2d-f32", (3, 5), "float32", [1, 0]),
    ("transpose-nhwc2nchw-f16", (2, 3, 4, 5), "float16", [0, 3, 1, 2]),
    ("transpose-identity-i32", (2, 3, 4), "int32", [0, 1, 2]),
    ("transpose-negative-perm-u8", (2, 3, 4), "uint8", [-1, 0, 1]),
    ("transpose-5d-bool", (2, 1, 3, 2, 2), "bool", [4, 2, 0, 3, 1]),
] + [(f"transpose-dtype-{SHORT[d]}", (2, 3, 4), d, [2, 0, 1]) for d in DTYPES]


@pytest.mark.parametrize("case", TRANSPOSE_CASES, ids=[c[0] for c in TRANSPOSE_CASES])
def test_transpose(case, rng):
    _, dims, dtype, perm = case
    x = rand_any(rng, dims, dtype)
    expected = ort1("Transpose", [x], {"perm": [p % len(dims) for p in perm]})
    check(run("TRANSPOSE", [x, i32(*perm)], constant_inputs=[1])[0], expected)


@pytest.mark.parametrize("perm", [[0, 0, 1], [0, 1], [0, 1, 3]],
                         ids=["transpose-err-repeat", "transpose-err-length", "transpose-err-bounds"])
def test_transpose_errors(perm):
    raises(INVALID, run, "TRANSPOSE", [np.zeros((2, 3, 4), np.float32), i64(*perm)], constant_inputs=[1],
           match="TRANSPOSE")


def test_transpose_quantized(rng):
    q = rng.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    out = run("TRANSPOSE", [q, i32(2, 0, 1)], constant_inputs=[1], input_quant={0: QuantParam.per_tensor(0.02, 128)},
              output_quant={0: QuantParam.per_tensor(0.02, 128)}, output_dtypes=[np.uint8])[0]
    check(out, quantize_ref(ort1("Transpose", [dequantize_ref(q, 0.02, 128)], {"perm": [2, 0, 1]}), np.uint8, 0.02,
                            128))


# -------------------------------------------------------------------------------------------------------- CONCAT

CONCAT_CASES = [
    ("concat-axis0-f32", [(2, 3), (4, 3)], "float32", 0),
    ("concat-axis1-three-f16", [(2, 1, 4), (2, 3, 4), (2, 2, 4)], "float16", 1),
    ("concat-axis-neg1-i64", [(2, 3), (2, 5)], "int64", -1),
    ("concat-default-axis-bool", [(1, 3), (2, 3)], "bool", None),
] + [(f"concat-dtype-{SHORT[d]}", [(2, 3), (2, 2)], d, 1) for d in DTYPES]


@pytest.mark.parametrize("case", CONCAT_CASES, ids=[c[0] for c in CONCAT_CASES])
def test_concat(case, rng):
    _, shapes, dtype, axis = case
    xs = [rand_any(rng, s, dtype) for s in shapes]
    params = {} if axis is None else {"OH_NN_CONCAT_AXIS": axis}
    expected = ort1("Concat", xs, {"axis": 0 if axis is None else axis})
    check(run("CONCAT", xs, params)[0], expected)


def test_concat_errors():
    a, b = np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32)
    raises(INVALID, run, "CONCAT", [a, b], {"OH_NN_CONCAT_AXIS": 0}, match="CONCAT")
    raises(INVALID, run, "CONCAT", [a, a], {"OH_NN_CONCAT_AXIS": 2}, match="axis")


def test_concat_quantized(rng):
    a = rng.integers(-128, 128, (2, 3)).astype(np.int8)
    b = rng.integers(-128, 128, (1, 3)).astype(np.int8)
    out = run("CONCAT", [a, b], {"OH_NN_CONCAT_AXIS": 0},
              input_quant={0: QuantParam.per_tensor(0.05, 0), 1: QuantParam.per_tensor(0.1, 10)},
              output_quant={0: QuantParam.per_tensor(0.1, 0)}, output_dtypes=[np.int8])[0]
    real = ort1("Concat", [dequantize_ref(a, 0.05, 0), dequantize_ref(b, 0.1, 10)], {"axis": 0})
    check(out, quantize_ref(real, np.int8, 0.1, 0))


# --------------------------------------------------------------------------------------------------------- SPLIT

SPLIT_CASES = [
    # id, dims, dtype, params, node output count, ONNX split sizes
    ("split-outputnum-f32", (6, 4), "float32", {"OH_NN_SPLIT_OUTPUT_NUM": 3}, 3, [2, 2, 2], 0),
    ("split-sizes-axis1-f16", (2, 7), "float16", {"OH_NN_SPLIT_AXIS": 1, "OH_NN_SPLIT_SIZE_SPLITS": [2, 4, 1]}, 3,
     [2, 4, 1], 1),
    ("split-sizes-infer-i32", (2, 7), "int32", {"OH_NN_SPLIT_AXIS": -1, "OH_NN_SPLIT_SIZE_SPLITS": [3, -1]}, 2,
     [3, 4], -1),
    ("split-outputs-only-u8", (4, 2, 6), "uint8", {"OH_NN_SPLIT_AXIS": 2}, 2, [3, 3], 2),
    ("split-sizes-and-num-bool", (5, 2), "bool", {"OH_NN_SPLIT_OUTPUT_NUM": 2, "OH_NN_SPLIT_SIZE_SPLITS": [1, 4]}, 2,
     [1, 4], 0),
] + [(f"split-dtype-{SHORT[d]}", (2, 6), d, {"OH_NN_SPLIT_AXIS": 1, "OH_NN_SPLIT_OUTPUT_NUM": 3}, 3, [2, 2, 2], 1)
     for d in DTYPES]


@pytest.mark.parametrize("case", SPLIT_CASES, ids=[c[0] for c in SPLIT_CASES])
def test_split(case, rng):
    _, dims, dtype, params, n_out, sizes, axis = case
    x = rand_any(rng, dims, dtype)
    expected = ort1("Split", [x, np.array(sizes, np.int64)], {"axis": axis}, out_dtypes=[x.dtype] * n_out)
    outs = run("SPLIT", [x], params, output_dtypes=[x.dtype] * n_out)
    assert len(outs) == n_out
    for out, exp in zip(outs, expected):
        check(out, exp)


@pytest.mark.parametrize("params,n_out", [
    ({"OH_NN_SPLIT_OUTPUT_NUM": 4}, 4),  # 6 not divisible by 4
    ({"OH_NN_SPLIT_SIZE_SPLITS": [2, 2]}, 2),  # sum 4 != 6
    ({"OH_NN_SPLIT_OUTPUT_NUM": 3}, 2),  # 3 pieces, 2 outputs
    ({"OH_NN_SPLIT_OUTPUT_NUM": 3, "OH_NN_SPLIT_SIZE_SPLITS": [3, 3]}, 2),  # outputNum vs sizeSplits
], ids=["split-err-indivisible", "split-err-sum", "split-err-output-count", "split-err-num-vs-sizes"])
def test_split_errors(params, n_out):
    raises(INVALID, run, "SPLIT", [np.zeros((6, 2), np.float32)], params, output_dtypes=[np.float32] * n_out,
           match="SPLIT")


# --------------------------------------------------------------------------------------------------- STACK/UNSTACK

def test_stack_hand_axis0():
    a, b = i32(1, 2, 3), i32(4, 5, 6)
    check(run("STACK", [a, b])[0], np.array([[1, 2, 3], [4, 5, 6]], np.int32))


def test_stack_hand_axis1():
    a, b, c = i32(1, 2), i32(3, 4), i32(5, 6)
    check(run("STACK", [a, b, c], {"OH_NN_STACK_AXIS": 1})[0], np.array([[1, 3, 5], [2, 4, 6]], np.int32))


def test_stack_hand_axis_neg1_f16():
    a = np.array([[1.5, 2.0], [3.0, 4.0]], np.float16)
    b = np.array([[5.0, 6.0], [7.0, 8.25]], np.float16)
    expected = np.array([[[1.5, 5.0], [2.0, 6.0]], [[3.0, 7.0], [4.0, 8.25]]], np.float16)
    check(run("STACK", [a, b], {"OH_NN_STACK_AXIS": -1})[0], expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=[f"stack-dtype-{SHORT[d]}" for d in DTYPES])
def test_stack_dtypes(dtype, rng):
    xs = [rand_any(rng, (2, 3), dtype) for _ in range(3)]
    nodes = [helper.make_node("Unsqueeze", [f"x{i}", "ax"], [f"u{i}"]) for i in range(3)]
    nodes.append(helper.make_node("Concat", ["u0", "u1", "u2"], ["out"], axis=1))
    expected = oracle(nodes, {f"x{i}": x for i, x in enumerate(xs)}, [("out", xs[0].dtype)],
                      initializers=[numpy_helper.from_array(i64(1), "ax")])[0]
    check(run("STACK", xs, {"OH_NN_STACK_AXIS": 1})[0], expected)


def test_stack_errors():
    raises(INVALID, run, "STACK", [np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32)], match="STACK")
    raises(INVALID, run, "STACK", [np.zeros((2, 3), np.float32)] * 2, {"OH_NN_STACK_AXIS": 3}, match="axis")


def test_unstack_hand_axis0():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int64)
    outs = run("UNSTACK", [x], output_dtypes=[np.int64] * 2)
    check(outs[0], i64(1, 2, 3))
    check(outs[1], i64(4, 5, 6))


def test_unstack_hand_axis_neg1_bool():
    x = np.array([[True, False], [False, False], [True, True]])
    outs = run("UNSTACK", [x], {"OH_NN_UNSTACK_AXIS": -1}, output_dtypes=[np.bool_] * 2)
    check(outs[0], np.array([True, False, True]))
    check(outs[1], np.array([False, False, True]))


def test_unstack_hand_axis1_f32():
    x = np.array([[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]], np.float32)
    outs = run("UNSTACK", [x], {"OH_NN_UNSTACK_AXIS": 1}, output_dtypes=[np.float32] * 3)
    check(outs[0], np.array([[1, 2], [7, 8]], np.float32))
    check(outs[1], np.array([[3, 4], [9, 10]], np.float32))
    check(outs[2], np.array([[5, 6], [11, 12]], np.float32))


@pytest.mark.parametrize("dtype", DTYPES, ids=[f"unstack-dtype-{SHORT[d]}" for d in DTYPES])
def test_unstack_dtypes(dtype, rng):
    x = rand_any(rng, (2, 3, 2), dtype)
    expected = ort1("Split", [x, i64(1, 1, 1)], {"axis": 1}, out_dtypes=[x.dtype] * 3)
    outs = run("UNSTACK", [x], {"OH_NN_UNSTACK_AXIS": 1}, output_dtypes=[x.dtype] * 3)
    for out, exp in zip(outs, expected):
        check(out, exp[:, 0, :])


def test_unstack_err_output_count():
    raises(INVALID, run, "UNSTACK", [np.zeros((3, 2), np.float32)], output_dtypes=[np.float32] * 2, match="UNSTACK")


# ---------------------------------------------------------------------------------------- SQUEEZE / UNSQUEEZE / ...

SQUEEZE_CASES = [
    ("squeeze-all-f32", (1, 3, 1, 2), "float32", None, [0, 2]),
    ("squeeze-one-axis-f16", (1, 3, 1, 2), "float16", [2], [2]),
    ("squeeze-neg-axis-i16", (2, 1, 3, 1), "int16", [-1], [3]),
    ("squeeze-axis-list-bool", (1, 1, 3, 1), "bool", [0, 3], [0, 3]),
] + [(f"squeeze-dtype-{SHORT[d]}", (3, 1, 2), d, [1], [1]) for d in DTYPES]


@pytest.mark.parametrize("case", SQUEEZE_CASES, ids=[c[0] for c in SQUEEZE_CASES])
def test_squeeze(case, rng):
    _, dims, dtype, axis, onnx_axes = case
    x = rand_any(rng, dims, dtype)
    params = {} if axis is None else {"OH_NN_SQUEEZE_AXIS": axis}
    check(run("SQUEEZE", [x], params)[0], ort1("Squeeze", [x, np.array(onnx_axes, np.int64)]))


def test_squeeze_header_example():
    """Header: input [2, 1, 1, 2, 2] with axis [0, 1] gives [2, 1, 2, 2] (dim 0 has length 2 and stays)."""
    x = np.arange(8, dtype=np.int32).reshape(2, 1, 1, 2, 2)
    out = run("SQUEEZE", [x], {"OH_NN_SQUEEZE_AXIS": [0, 1]})[0]
    check(out, np.array([[[[0, 1], [2, 3]]], [[[4, 5], [6, 7]]]], np.int32))


def test_squeeze_err_axis_bounds():
    raises(INVALID, run, "SQUEEZE", [np.zeros((1, 3), np.float32)], {"OH_NN_SQUEEZE_AXIS": [2]}, match="SQUEEZE")


UNSQUEEZE_CASES = [
    ("unsqueeze-front-f32", (3, 4), "float32", 0),
    ("unsqueeze-end-f16", (3, 4), "float16", 2),
    ("unsqueeze-neg-i8", (3, 4), "int8", -1),
    ("unsqueeze-mid-bool", (3, 4), "bool", 1),
] + [(f"unsqueeze-dtype-{SHORT[d]}", (2, 3), d, -2) for d in DTYPES]


@pytest.mark.parametrize("case", UNSQUEEZE_CASES, ids=[c[0] for c in UNSQUEEZE_CASES])
def test_unsqueeze(case, rng):
    _, dims, dtype, axis = case
    x = rand_any(rng, dims, dtype)
    check(run("UNSQUEEZE", [x], {"OH_NN_UNSQUEEZE_AXIS": axis})[0], ort1("Unsqueeze", [x, i64(axis)]))


def test_unsqueeze_omitted_axis_is_identity(rng):
    x = rand_any(rng, (2, 3), "float32")
    check(run("UNSQUEEZE", [x])[0], x)


def test_unsqueeze_err_axis_bounds():
    raises(INVALID, run, "UNSQUEEZE", [np.zeros((2, 3), np.float32)], {"OH_NN_UNSQUEEZE_AXIS": 3}, match="UNSQUEEZE")


EXPAND_DIMS_CASES = [
    ("expand_dims-front-f32", (3, 4), "float32", 0),
    ("expand_dims-end-f16", (3, 4), "float16", 2),
    ("expand_dims-min-neg-i32", (3, 4), "int32", -3),
    ("expand_dims-neg1-bool", (3, 4), "bool", -1),
] + [(f"expand_dims-dtype-{SHORT[d]}", (2, 3), d, 1) for d in DTYPES]


@pytest.mark.parametrize("case", EXPAND_DIMS_CASES, ids=[c[0] for c in EXPAND_DIMS_CASES])
def test_expand_dims(case, rng):
    _, dims, dtype, axis = case
    x = rand_any(rng, dims, dtype)
    check(run("EXPAND_DIMS", [x, i32(axis)], constant_inputs=[1])[0], ort1("Unsqueeze", [x, i64(axis)]))


def test_expand_dims_errors():
    x = np.zeros((2, 3), np.float32)
    raises(INVALID, run, "EXPAND_DIMS", [x, i32(3)], constant_inputs=[1], match="EXPAND_DIMS")
    raises(INVALID, run, "EXPAND_DIMS", [x, i32(0, 1)], constant_inputs=[1], match="EXPAND_DIMS")


FLATTEN_CASES = [
    ("flatten-default-f32", (2, 3, 4), "float32", None),
    ("flatten-axis0-f16", (2, 3, 4), "float16", 0),
    ("flatten-axis2-i64", (2, 3, 4, 5), "int64", 2),
    ("flatten-axis-last-u8", (2, 3, 4), "uint8", 3),
    ("flatten-axis-neg-bool", (2, 3, 4), "bool", -1),
] + [(f"flatten-dtype-{SHORT[d]}", (2, 3, 2), d, 1) for d in DTYPES]


@pytest.mark.parametrize("case", FLATTEN_CASES, ids=[c[0] for c in FLATTEN_CASES])
def test_flatten(case, rng):
    _, dims, dtype, axis = case
    x = rand_any(rng, dims, dtype)
    params = {} if axis is None else {"OH_NN_FLATTEN_AXIS": axis}
    check(run("FLATTEN", [x], params)[0], ort1("Flatten", [x], {"axis": 1 if axis is None else axis}))


def test_flatten_err_axis():
    raises(INVALID, run, "FLATTEN", [np.zeros((2, 3), np.float32)], {"OH_NN_FLATTEN_AXIS": 3}, match="FLATTEN")


# ---------------------------------------------------------------------------------------------- TILE/BROADCAST_TO

TILE_CASES = [
    ("tile-basic-f32", (2, 3), "float32", [2, 3], None),
    ("tile-ones-f16", (2, 3, 1), "float16", [1, 1, 4], None),
    ("tile-extend-dims-i32", (2, 3), "int32", [2, 1, 2], None),
    ("tile-dims-equal-multiples-u8", (2, 3), "uint8", [3, 2], [3, 2]),
    ("tile-dims-identity-axes-bool", (2, 3), "bool", [2, 2], [0, 1]),
    ("tile-dims-default-explicit-i64", (3,), "int64", [4], [0]),
] + [(f"tile-dtype-{SHORT[d]}", (2, 2), d, [1, 3], None) for d in DTYPES]


@pytest.mark.parametrize("case", TILE_CASES, ids=[c[0] for c in TILE_CASES])
def test_tile(case, rng):
    _, dims, dtype, multiples, tile_dims = case
    x = rand_any(rng, dims, dtype)
    padded = x.reshape((1,) * (len(multiples) - x.ndim) + x.shape)
    expected = ort1("Tile", [padded, i64(*multiples)])
    params = {} if tile_dims is None else {"OH_NN_TILE_DIMS": tile_dims}
    check(run("TILE", [x, i32(*multiples)], params, constant_inputs=[1])[0], expected)


@pytest.mark.parametrize("multiples,tile_dims", [([2, 2], [1, 3]), ([2], None)],
                         ids=["tile-err-dims-conflict", "tile-err-short-multiples"])
def test_tile_errors(multiples, tile_dims):
    params = {} if tile_dims is None else {"OH_NN_TILE_DIMS": tile_dims}
    raises(INVALID, run, "TILE", [np.zeros((2, 3), np.float32), i64(*multiples)], params, constant_inputs=[1],
           match="TILE")


BROADCAST_CASES = [
    ("broadcast_to-basic-f32", (3, 1), "float32", [2, 3, 4], [2, 3, 4]),
    ("broadcast_to-same-ndim-f16", (1, 4), "float16", [3, 4], [3, 4]),
    ("broadcast_to-keep-dim-neg1-i8", (3, 1), "int8", [2, -1, 5], [2, 3, 5]),
    ("broadcast_to-scalar-bool", (), "bool", [2, 2], [2, 2]),
] + [(f"broadcast_to-dtype-{SHORT[d]}", (2, 1), d, [2, 3], [2, 3]) for d in DTYPES]


@pytest.mark.parametrize("case", BROADCAST_CASES, ids=[c[0] for c in BROADCAST_CASES])
def test_broadcast_to(case, rng):
    _, dims, dtype, shape, resolved = case
    x = rand_any(rng, dims, dtype)
    check(run("BROADCAST_TO", [x], {"OH_NN_BROADCAST_TO_SHAPE": shape})[0], ort1("Expand", [x, i64(*resolved)]))


def test_broadcast_to_errors():
    x = np.zeros((2, 3), np.float32)
    raises(INVALID, run, "BROADCAST_TO", [x], {"OH_NN_BROADCAST_TO_SHAPE": [4, 3]}, match="BROADCAST_TO")
    raises(INVALID, run, "BROADCAST_TO", [x], {"OH_NN_BROADCAST_TO_SHAPE": [3]}, match="BROADCAST_TO")
    raises(INVALID, run, "BROADCAST_TO", [x], {"OH_NN_BROADCAST_TO_SHAPE": [1, 3]}, match="BROADCAST_TO")


# ---------------------------------------------------------------------------------------------------------------
# pad

def naive_mirror_pad(x, pads, symmetric):
    """Index formula: position p in [-p0, n+p1) maps to reflect (no edge repeat) or symmetric (edge repeated)."""
    def source(p, n):
        if p < 0:
            return -p - 1 if symmetric else -p
        if p >= n:
            return 2 * n - p - 1 if symmetric else 2 * n - p - 2
        return p
    out_shape = [n + a + b for n, (a, b) in zip(x.shape, pads)]
    out = np.empty(out_shape, x.dtype)
    for index in np.ndindex(*out_shape):
        src = tuple(source(i - a, n) for i, (a, _), n in zip(index, pads, x.shape))
        out[index] = x[src]
    return out


def test_pad_tf_mirror_examples():
    """tf.pad documentation: t=[[1,2,3],[4,5,6]], paddings [[1,1],[2,2]]."""
    t = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    paddings = np.array([[1, 1], [2, 2]], np.int32)
    reflect = [[6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1]]
    symmetric = [[2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2], [5, 4, 4, 5, 6, 6, 5], [5, 4, 4, 5, 6, 6, 5]]
    constant = [[0] * 7, [0, 0, 1, 2, 3, 0, 0], [0, 0, 4, 5, 6, 0, 0], [0] * 7]
    for mode, expected in ((1, reflect), (2, symmetric), (0, constant)):
        (y,) = run("OH_NN_OPS_PAD", [t, paddings], {T.OH_NN_PAD_PADDING_MODE: mode}, constant_inputs=[1])
        np.testing.assert_array_equal(y, expected)


PAD_CASES = {
    # id: (shape, paddings, mode, constant, dtype)
    "pad-constant-f32": ((2, 3, 4, 2), [[0, 1], [2, 0], [1, 1], [0, 0]], 0, 1.5, np.float32),
    "pad-constant-default-value-f16": ((3, 4), [[1, 2], [0, 3]], 0, None, np.float16),
    "pad-constant-int32": ((2, 3, 2), [[1, 0], [0, 2], [1, 1]], 0, -7.0, np.int32),
    "pad-constant-bool": ((2, 3), [[1, 1], [0, 2]], 0, 1.0, np.bool_),
    "pad-reflect-f32": ((1, 4, 5, 3), [[0, 0], [3, 2], [1, 4], [0, 0]], 1, None, np.float32),
    "pad-reflect-int8": ((3, 4), [[2, 1], [3, 0]], 1, None, np.int8),
    "pad-symmetric-f32": ((1, 4, 5, 3), [[0, 0], [4, 2], [5, 1], [1, 0]], 2, None, np.float32),
    "pad-symmetric-f16-1d": ((5,), [[5, 3]], 2, None, np.float16),
}


@pytest.mark.parametrize("case", list(PAD_CASES))
def test_pad(request, case):
    shape, paddings, mode, value, dtype = PAD_CASES[case]
    rng = rng_for_request(request)
    x = (rng.standard_normal(shape) * 20).astype(dtype) if dtype != np.bool_ else rng.integers(0, 2, shape).astype(bool)
    pads = np.array(paddings, np.int64)
    params = {T.OH_NN_PAD_PADDING_MODE: mode}
    if value is not None:
        params[T.OH_NN_PAD_CONSTANT_VALUE] = value
    if mode == 2:
        expected = naive_mirror_pad(x, paddings, symmetric=True)
    else:
        onnx_pads = np.concatenate([pads[:, 0], pads[:, 1]]).astype(np.int64)
        cval = None if mode == 1 else np.array(value or 0, dtype=dtype)
        expected = ort_node("Pad", [x, onnx_pads, cval], mode="reflect" if mode == 1 else "constant")
        if mode == 1:  # cross-check the ORT reflect oracle with the naive index formula
            np.testing.assert_array_equal(expected, naive_mirror_pad(x, paddings, symmetric=False))
    (y,) = run("OH_NN_OPS_PAD", [x, pads], params, constant_inputs=[1])
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, expected)


def test_pad_quantized():
    x_real = np.random.default_rng(11).uniform(0, 2, (1, 3, 3, 2)).astype(np.float32)
    qp = QuantParam([2 / 255], [20], [8])
    xq = quant(x_real, qp, np.uint8)
    pads = np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32)
    (y,) = run("OH_NN_OPS_PAD", [xq, pads], {T.OH_NN_PAD_CONSTANT_VALUE: 0.5}, input_quant={0: qp},
               output_quant={0: qp}, output_dtypes=[np.uint8], constant_inputs=[1])
    expected = np.pad(dequant(xq, qp), [(0, 0), (1, 1), (1, 1), (0, 0)], constant_values=0.5)
    check_tol(y, quant(expected, qp, np.uint8), "quant")
    assert y[0, 0, 0, 0] == 20 + round(0.5 / (2 / 255))  # padded real 0.5 -> q = z + 0.5/s


@pytest.mark.parametrize("case", ["pad-err-reflect-too-big", "pad-err-symmetric-too-big", "pad-err-negative",
                                  "pad-err-shape", "pad-err-reserved-mode", "pad-err-int-fractional-constant"])
def test_pad_errors(case):
    x = np.zeros((2, 3), np.float32)
    kw = dict(output_dtypes=[np.float32], output_shapes=[(-1, -1)], constant_inputs=[1])
    pads = np.array([[0, 0], [3, 0]], np.int64)
    if case.endswith("reflect-too-big"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_PAD", [x, pads], {T.OH_NN_PAD_PADDING_MODE: 1}, **kw)
    elif case.endswith("symmetric-too-big"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_PAD", [x, np.array([[0, 0], [4, 0]])],
                     {T.OH_NN_PAD_PADDING_MODE: 2}, **kw)
    elif case.endswith("negative"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_PAD", [x, np.array([[0, -1], [0, 0]])], {}, **kw)
    elif case.endswith("shape"):
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_PAD", [x, np.array([[0, 1]])], {}, **kw)
    elif case.endswith("reserved-mode"):
        expect_error(RC.OH_NN_UNSUPPORTED, "OH_NN_OPS_PAD", [x, pads], {T.OH_NN_PAD_PADDING_MODE: 3}, **kw)
    else:
        expect_error(RC.OH_NN_INVALID_PARAMETER, "OH_NN_OPS_PAD", [x.astype(np.int32), pads],
                     {T.OH_NN_PAD_CONSTANT_VALUE: 0.5}, output_dtypes=[np.int32], output_shapes=[(-1, -1)],
                     constant_inputs=[1])


# ------------------------------------------------------------------------------------------ FILL / SHAPE / RANK

@pytest.mark.parametrize("dtype", DTYPES, ids=[f"fill-{SHORT[d]}" for d in DTYPES])
def test_fill(dtype):
    value = np.array(1 if dtype == "bool" else 7, dtype=dtype)
    out = run("FILL", [value, i32(2, 3)], constant_inputs=[1])[0]
    check(out, np.array([[value] * 3] * 2, dtype=dtype))


def test_fill_hand_f16_fraction():
    out = run("FILL", [np.array(-2.5, np.float16), i64(3)], constant_inputs=[1])[0]
    check(out, np.array([-2.5, -2.5, -2.5], np.float16))


def test_fill_errors():
    raises(INVALID, run, "FILL", [np.ones(2, np.float32), i32(2)], constant_inputs=[1], match="FILL")
    raises(UNSUPPORTED, run, "FILL", [np.float32(1), np.array([2.0], np.float32)], constant_inputs=[1], match="FILL")


SHAPE_CASES = [
    ("shape-i64-f32", (2, 3, 4), "float32", "int64"),
    ("shape-i32-f16", (5,), "float16", "int32"),
    ("shape-i64-bool", (1, 2, 1, 2, 1), "bool", "int64"),
    ("shape-i32-u8", (3, 3), "uint8", "int32"),
]


@pytest.mark.parametrize("case", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_shape(case, rng):
    _, dims, dtype, out_dtype = case
    x = rand_any(rng, dims, dtype)
    expected = ort1("Shape", [x], out_dtypes=[np.int64]).astype(out_dtype)
    check(run("SHAPE", [x], output_dtypes=[np.dtype(out_dtype)])[0], expected)


def test_shape_err_float_output():
    raises(UNSUPPORTED, run, "SHAPE", [np.zeros((2, 3), np.float32)], output_dtypes=[np.float32], match="SHAPE")


@pytest.mark.parametrize("dims,out_dtype,expected", [((2, 3, 4), "int32", 3), ((7,), "int64", 1),
                                                     ((1, 1, 1, 1, 1, 1), "int32", 6)],
                         ids=["rank-3-i32", "rank-1-i64", "rank-6-i32"])
def test_rank(dims, out_dtype, expected):
    out = run("RANK", [np.zeros(dims, np.float32)], output_dtypes=[np.dtype(out_dtype)])[0]
    check(out, np.array(expected, dtype=out_dtype))


def test_rank_scalar_input_bool():
    out = run("RANK", [np.array(True)], output_dtypes=[np.int32])[0]
    check(out, np.array(0, np.int32))


def test_rank_declared_as_one_element():
    out = run("RANK", [np.zeros((2, 2), np.int8)], output_dtypes=[np.int32], output_shapes=[[1]])[0]
    check(out, i32(2))


# -------------------------------------------------------------------------------------------------------- RANGE

RANGE_CASES = [
    ("range-basic-i32", 0, 5, 1, "int32"),
    ("range-step-i64", 3, 17, 4, "int64"),
    ("range-negative-delta-i32", 10, -3, -3, "int32"),
    ("range-float-f32", -2, 3, 2, "float32"),
    ("range-f64", 5, 0, -1, "float64"),
]


@pytest.mark.parametrize("case", RANGE_CASES, ids=[c[0] for c in RANGE_CASES])
def test_range(case):
    _, start, limit, delta, dtype = case
    dt = np.dtype(dtype)
    expected = ort1("Range", [np.array(start, dt), np.array(limit, dt), np.array(delta, dt)])
    params = {"OH_NN_RANGE_START": start, "OH_NN_RANGE_LIMIT": limit, "OH_NN_RANGE_DELTA": delta}
    check(run("RANGE", [np.zeros(1, np.float32)], params, output_dtypes=[dt])[0], expected)


@pytest.mark.parametrize("start,limit,delta,dtype,expected", [
    (1, 6, 2, "float16", [1, 3, 5]),
    (-4, 4, 3, "int16", [-4, -1, 2]),
    (9, 2, -3, "uint8", [9, 6, 3]),
    (0, 3, 1, "uint64", [0, 1, 2]),
], ids=["range-hand-f16", "range-hand-i16", "range-hand-u8-descending", "range-hand-u64"])
def test_range_hand(start, limit, delta, dtype, expected):
    params = {"OH_NN_RANGE_START": start, "OH_NN_RANGE_LIMIT": limit, "OH_NN_RANGE_DELTA": delta}
    out = run("RANGE", [np.zeros(1, np.float32)], params, output_dtypes=[np.dtype(dtype)])[0]
    check(out, np.array(expected, dtype))


def test_range_fp16_mode():
    params = {"OH_NN_RANGE_START": 0, "OH_NN_RANGE_LIMIT": 4, "OH_NN_RANGE_DELTA": 1}
    out = run("RANGE", [np.zeros(1, np.float32)], params, output_dtypes=[np.float32], float16=True)[0]
    check(out, np.array([0, 1, 2, 3], np.float32))


def test_range_default_delta():
    out = run("RANGE", [np.zeros(1, np.int32)], {"OH_NN_RANGE_START": -2, "OH_NN_RANGE_LIMIT": 2},
              output_dtypes=[np.int32])[0]
    check(out, i32(-2, -1, 0, 1))


def test_range_errors():
    raises(INVALID, run, "RANGE", [np.zeros(1, np.int32)], {"OH_NN_RANGE_LIMIT": 3, "OH_NN_RANGE_DELTA": 0},
           output_dtypes=[np.int32], match="delta")
    raises(UNSUPPORTED, run, "RANGE", [np.zeros(1, np.int32)], {"OH_NN_RANGE_LIMIT": 3}, output_dtypes=[np.bool_],
           match="RANGE")


# --------------------------------------------------------------------------------------------- CONSTANT_OF_SHAPE

COS_CASES = [
    ("constant_of_shape-f32-by-dtype", [2, 3], 2.5, OH_NN_DataType.OH_NN_FLOAT32, "float32"),
    ("constant_of_shape-i32-declared-only", [4], 7.0, None, "int32"),
    ("constant_of_shape-i64-by-dtype", [1, 2, 2], -3.0, OH_NN_DataType.OH_NN_INT64, "int64"),
    ("constant_of_shape-f16", [3, 1], 0.25, OH_NN_DataType.OH_NN_FLOAT16, "float16"),
    ("constant_of_shape-bool", [2], 1.0, OH_NN_DataType.OH_NN_BOOL, "bool"),
    ("constant_of_shape-mindir-code-u8", [2, 2], 200.0, 37, "uint8"),
    ("constant_of_shape-default-value-f32", [3], None, OH_NN_DataType.OH_NN_FLOAT32, "float32"),
]


@pytest.mark.parametrize("case", COS_CASES, ids=[c[0] for c in COS_CASES])
def test_constant_of_shape(case):
    _, shape, value, code, dtype = case
    dt = np.dtype(dtype)
    attrs = {} if value is None else {"value": numpy_helper.from_array(np.array([value]).astype(dt), "value")}
    expected = ort1("ConstantOfShape", [i64(*shape)], attrs, out_dtypes=[dt]) if value is not None else \
        ort1("ConstantOfShape", [i64(*shape)], {}, out_dtypes=[np.float32])
    params = {}
    if code is not None:
        params["OH_NN_CONSTANT_OF_SHAPE_DATA_TYPE"] = int(code)
    if value is not None:
        params["OH_NN_CONSTANT_OF_SHAPE_VALUE"] = [value]
    check(run("CONSTANT_OF_SHAPE", [i64(*shape)], params, constant_inputs=[0], output_dtypes=[dt])[0], expected)


def test_constant_of_shape_fp16_mode():
    out = run("CONSTANT_OF_SHAPE", [i64(2, 2)], {"OH_NN_CONSTANT_OF_SHAPE_DATA_TYPE": int(OH_NN_DataType.OH_NN_FLOAT32),
                                                  "OH_NN_CONSTANT_OF_SHAPE_VALUE": [0.1]},
              constant_inputs=[0], output_dtypes=[np.float32], float16=True)[0]
    check(out, np.full((2, 2), np.float16(0.1), np.float32))


def test_constant_of_shape_errors():
    raises(INVALID, run, "CONSTANT_OF_SHAPE", [i64(2)],
           {"OH_NN_CONSTANT_OF_SHAPE_DATA_TYPE": int(OH_NN_DataType.OH_NN_INT32)}, output_dtypes=[np.float32],
           match="disagrees")
    raises(INVALID, run, "CONSTANT_OF_SHAPE", [i64(2)], {"OH_NN_CONSTANT_OF_SHAPE_VALUE": [1.0, 2.0]},
           output_dtypes=[np.float32], match="value")
    raises(INVALID, run, "CONSTANT_OF_SHAPE", [i64(2)], {"OH_NN_CONSTANT_OF_SHAPE_DATA_TYPE": 99},
           output_dtypes=[np.float32], match="dataType")


# -------------------------------------------------------------------------------------------------------- ASSERT

def test_assert_passes_bool():
    cond = np.array([True, True])
    check(run("ASSERT", [cond, np.arange(3, dtype=np.float32)])[0], cond)


def test_assert_passes_int_condition():
    cond = i32(1, 5, -1)
    check(run("ASSERT", [cond, i32(0)])[0], cond)


def test_assert_fails_names_op_and_data():
    err = raises(FAILED, run, "ASSERT", [np.array([True, False]), np.array([1.5, 2.5, 3.5], np.float32)],
                 output_dtypes=[np.bool_], output_shapes=[[2]])
    assert "ASSERT" in err.message and "1.5, 2.5, 3.5" in err.message


def test_assert_summarize_limits_entries():
    err = raises(FAILED, run, "ASSERT", [np.array(False), np.arange(10, dtype=np.int32)],
                 {"OH_NN_ASSERT_SUMMARIZE": 2}, output_dtypes=[np.bool_], output_shapes=[[]])
    assert "[0, 1]" in err.message and "8 more" in err.message


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.float16, np.bool_])
def test_transpose_of_the_last_two_axes_matches_numpy(dtype):
    # a channel shuffle ([.., G, C/G] -> [.., C/G, G]) takes a compiled loop for most dtypes (numba): against
    # numpy's own transpose, for contiguous and strided inputs
    from nnrt_onnx.kernels.shape import transpose

    rng = np.random.default_rng(4)
    for shape in ((1, 5, 6, 4, 7), (3, 2, 9), (2, 1, 1, 3)):
        x = (rng.standard_normal(shape) * 50).astype(dtype)
        for source in (x, x[..., ::-1, :], np.swapaxes(x, 0, 1)):
            perm = list(range(source.ndim - 2)) + [source.ndim - 1, source.ndim - 2]
            got = transpose(source, np.array(perm))
            want = np.transpose(source, perm)
            assert got.dtype == source.dtype and got.flags.c_contiguous
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("perm", [[0, 1, 2, 4, 3], [0, 3, 1, 2, 4]])
def test_transpose_writes_the_plans_array_where_it_fits(perm):
    from nnrt_onnx.kernels.shape import transpose

    x = np.random.default_rng(1).standard_normal((1, 5, 6, 4, 7)).astype(np.float32)
    want = np.transpose(x, perm)
    out = np.empty(want.shape, np.float32)
    got = transpose(x, np.array(perm, np.int32), out=out)
    assert got is out
    np.testing.assert_array_equal(got, want)
    wrong = np.empty((3,), np.float32)  # (another shape: a new array)
    np.testing.assert_array_equal(transpose(x, np.array(perm, np.int32), out=wrong), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64, np.float16, np.bool_])
@pytest.mark.parametrize("shape,perm", [
    ((1, 3, 224, 224), [0, 2, 3, 1]),  # an image's NCHW -> NHWC: one axis to the end
    ((2, 5, 7, 3), [0, 3, 1, 2]),  # NHWC -> NCHW: the last axis to 1
    ((2, 5, 7, 3, 4), [0, 2, 3, 4, 1]), ((2, 5, 7, 3, 4), [0, 4, 1, 2, 3]), ((2, 5, 7, 3, 4), [0, 1, 3, 4, 2]),
    ((4, 5, 6), [1, 2, 0]), ((4, 5, 6), [2, 0, 1]), ((1, 1, 6), [2, 0, 1]),
])
def test_transpose_moving_one_axis_matches_numpy(dtype, shape, perm):
    # one axis moved to the end (a short one: the output written one slice per index of it), or the last one moved
    # forward, into the plan's array or a new one; a strided input too
    from nnrt_onnx.kernels.shape import transpose

    x = (np.random.default_rng(2).standard_normal(shape) * 50).astype(dtype)
    want = np.transpose(x, perm)
    out = np.full(want.shape, 3, dtype)
    assert transpose(x, np.array(perm), out=out) is out
    np.testing.assert_array_equal(out, want)
    got = transpose(x, np.array(perm))
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(transpose(x[..., ::-1], np.array(perm)), np.transpose(x[..., ::-1], perm))
