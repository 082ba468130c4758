"""Indexing family: slice, strided_slice, gather, gather_nd, scatter_nd, sparse_to_dense and one_hot, run end to
end through ``run_op``.

Oracles: onnxruntime on single-node ONNX models (onnx.reference where ORT has no kernel for a dtype), and
hand-written expected values for STRIDED_SLICE masks, SPARSE_TO_DENSE and ONE_HOT.
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
    dequantize_ref,
    i32,
    i64,
    ort1,
    quantize_ref,
    raises,
    rand_any,
    run,
)

from nnrt_onnx.tensor import QuantParam

# --------------------------------------------------------------------------------------------------------- SLICE

SLICE_CASES = [
    ("slice-default-axes-f32", (4, 5, 6), "float32", [1, 2], [2, 3], None),
    ("slice-all-dims-f16", (4, 5, 6), "float16", [0, 1, 2], [4, 3, 1], None),
    ("slice-axes-i32", (4, 5, 6), "int32", [3, 1], [2, 3], [2, 0]),
    ("slice-neg-axes-u8", (4, 5, 6), "uint8", [1], [2], [-2]),
    ("slice-size-neg1-bool", (4, 5, 6), "bool", [2, 1], [-1, -1], [1, 2]),
] + [(f"slice-dtype-{SHORT[d]}", (3, 4), d, [1, 1], [2, 2], None) for d in DTYPES]


@pytest.mark.parametrize("case", SLICE_CASES, ids=[c[0] for c in SLICE_CASES])
def test_slice(case, rng):
    _, dims, dtype, begin, size, axes = case
    x = rand_any(rng, dims, dtype)
    onnx_axes = axes if axes is not None else list(range(len(begin)))
    ends = [np.iinfo(np.int64).max if s == -1 else b + s for b, s in zip(begin, size)]
    expected = ort1("Slice", [x, i64(*begin), i64(*ends), i64(*onnx_axes)])
    params = {} if axes is None else {"OH_NN_SLICE_AXES": axes}
    check(run("SLICE", [x, i32(*begin), i32(*size)], params)[0], expected)


@pytest.mark.parametrize("begin,size,axes", [([-1], [1], None), ([2], [3], None), ([0, 0], [1, 1], [0]),
                                             ([0], [1], [2])],
                         ids=["slice-err-neg-begin", "slice-err-past-end", "slice-err-axes-length",
                              "slice-err-axis-bounds"])
def test_slice_errors(begin, size, axes):
    params = {} if axes is None else {"OH_NN_SLICE_AXES": axes}
    raises(INVALID, run, "SLICE", [np.zeros((4, 2), np.float32), i64(*begin), i64(*size)], params, match="SLICE")


# -------------------------------------------------------------------------------------------------- STRIDED_SLICE

X24 = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
# X24[0] = [[ 0,  1,  2,  3], [ 4,  5,  6,  7], [ 8,  9, 10, 11]]
# X24[1] = [[12, 13, 14, 15], [16, 17, 18, 19], [20, 21, 22, 23]]
TF_DOC = np.array([[[1, 1, 1], [2, 2, 2]], [[3, 3, 3], [4, 4, 4]], [[5, 5, 5], [6, 6, 6]]], np.int32)
MASKS = {"begin": "BEGIN_MASK", "end": "END_MASK", "ellipsis": "ELLIPSIS_MASK", "new_axis": "NEW_AXIS_MASK",
         "shrink": "SHRINK_AXIS_MASK"}

# id, input, begin, end, strides, masks, expected (written out by hand)
STRIDED_CASES = [
    ("strided_slice-plain", X24, [0, 1, 1], [2, 3, 3], [1, 1, 1], {},
     [[[5, 6], [9, 10]], [[17, 18], [21, 22]]]),
    ("strided_slice-neg-strides", X24, [1, 2, 3], [0, -4, 0], [-1, -2, -2], {},
     [[[23, 21], [15, 13]]]),
    ("strided_slice-clamp", X24, [-10, 1, 0], [10, 100, -1], [1, 1, 1], {},
     [[[4, 5, 6], [8, 9, 10]], [[16, 17, 18], [20, 21, 22]]]),
    ("strided_slice-begin-mask", X24, [1, 1, 1], [2, 3, 3], [1, 1, 1], {"begin": 0b101},
     [[[4, 5, 6], [8, 9, 10]], [[16, 17, 18], [20, 21, 22]]]),
    ("strided_slice-end-mask", X24, [1, 0, 2], [0, 1, 0], [1, 1, 1], {"end": 0b101},
     [[[14, 15]]]),
    ("strided_slice-reverse-masks", X24, [0, 0, 0], [0, 0, 0], [1, -1, -1], {"begin": 0b110, "end": 0b111},
     [[[11, 10, 9, 8], [7, 6, 5, 4], [3, 2, 1, 0]], [[23, 22, 21, 20], [19, 18, 17, 16], [15, 14, 13, 12]]]),
    ("strided_slice-shrink", X24, [1, 0, 2], [2, 3, 3], [1, 1, 1], {"shrink": 0b101},
     [14, 18, 22]),
    ("strided_slice-shrink-negative", X24, [-1, -1], [0, 0], [1, 1], {"shrink": 0b11},
     [20, 21, 22, 23]),
    ("strided_slice-shrink-all", X24, [1, 2, 3], [0, 0, 0], [1, 1, 1], {"shrink": 0b111},
     23),
    ("strided_slice-ellipsis-front", X24, [0, 1], [0, 3], [1, 1], {"ellipsis": 0b01},
     [[[1, 2], [5, 6], [9, 10]], [[13, 14], [17, 18], [21, 22]]]),
    ("strided_slice-ellipsis-middle-shrink", X24, [1, 0, 2], [2, 0, 3], [1, 1, 1], {"ellipsis": 0b010, "shrink": 0b100},
     [[14, 18, 22]]),
    ("strided_slice-new-axis", X24, [0, 0, 1], [1, 0, 3], [1, 1, 1], {"new_axis": 0b010},
     [[[[4, 5, 6, 7], [8, 9, 10, 11]]]]),
    ("strided_slice-new-axis-beats-shrink", X24, [0, 0], [1, 1], [1, 1], {"new_axis": 0b01, "shrink": 0b11},
     [[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]]),
    ("strided_slice-ellipsis-then-new-axis", X24[:1, :2, :2], [0, 0], [0, 0], [1, 1], {"ellipsis": 0b01, "new_axis": 0b10},
     [[[[0], [1]], [[4], [5]]]]),
    ("strided_slice-ellipsis-beats-new-axis", X24, [0, 1], [0, 2], [1, 1], {"ellipsis": 0b01, "new_axis": 0b01},
     [[[1], [5], [9]], [[13], [17], [21]]]),
    ("strided_slice-mask-all-ones", X24, [0, 0, 0], [0, 0, 0], [2, 2, 3], {"begin": -1, "end": -1},
     [[[0, 3], [8, 11]]]),
    ("strided_slice-tfdoc-1", TF_DOC, [1, 0, 0], [2, 1, 3], [1, 1, 1], {},
     [[[3, 3, 3]]]),
    ("strided_slice-tfdoc-2", TF_DOC, [1, 0, 0], [2, 2, 3], [1, 1, 1], {},
     [[[3, 3, 3], [4, 4, 4]]]),
    ("strided_slice-tfdoc-3", TF_DOC, [1, -1, 0], [2, -3, 3], [1, -1, 1], {},
     [[[4, 4, 4], [3, 3, 3]]]),
    ("strided_slice-1d-stride3", np.arange(10, dtype=np.int64), [1], [9], [3], {},
     [1, 4, 7]),
    ("strided_slice-1d-reverse-stride3", np.arange(10, dtype=np.int64), [0], [0], [-3], {"begin": 1},
     [9, 6, 3]),
]


@pytest.mark.parametrize("case", STRIDED_CASES, ids=[c[0] for c in STRIDED_CASES])
def test_strided_slice_hand(case):
    _, x, begin, end, strides, masks, expected = case
    params = {f"OH_NN_STRIDED_SLICE_{MASKS[m]}": v for m, v in masks.items()}
    out = run("STRIDED_SLICE", [x, i64(*begin), i64(*end), i64(*strides)], params, constant_inputs=[1, 2, 3])[0]
    check(out, np.array(expected, dtype=x.dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=[f"strided_slice-dtype-{SHORT[d]}" for d in DTYPES])
def test_strided_slice_dtypes(dtype):
    """The reverse-masks case in every dtype (expected values derived from the hand-written int ones)."""
    x = (X24 % 7).astype(dtype)  # small values, fine in every dtype
    expected = np.array([[[4, 3, 2, 1], [0, 6, 5, 4], [3, 2, 1, 0]], [[2, 1, 0, 6], [5, 4, 3, 2], [1, 0, 6, 5]]])
    params = {"OH_NN_STRIDED_SLICE_BEGIN_MASK": 0b110, "OH_NN_STRIDED_SLICE_END_MASK": 0b111}
    out = run("STRIDED_SLICE", [x, i64(0, 0, 0), i64(0, 0, 0), i64(1, -1, -1)], params, constant_inputs=[1, 2, 3])[0]
    check(out, expected.astype(dtype))


@pytest.mark.parametrize("seed", range(12), ids=[f"strided_slice-ort-random-{i}" for i in range(12)])
def test_strided_slice_vs_ort(seed, rng):
    """No masks: TF StridedSlice equals ONNX Slice, except that ONNX clamps a negative-stride begin below -dim to 0
    where TF (and Python) clamp it to -1 (an empty slice): such begins are not drawn here."""
    x = rand_any(rng, (5, 6, 7), "float32")
    for _ in range(100):
        strides = [int(rng.choice([-3, -2, -1, 1, 2, 3])) for _ in range(3)]
        begin = [int(v) for v in rng.integers(-9, 10, 3)]
        end = [int(v) for v in rng.integers(-9, 10, 3)]
        if any(s < 0 and b < -n for s, b, n in zip(strides, begin, x.shape)):
            continue
        expected = ort1("Slice", [x, i64(*begin), i64(*end), i64(0, 1, 2), i64(*strides)])
        if expected.size:
            break
    out = run("STRIDED_SLICE", [x, i64(*begin), i64(*end), i64(*strides)], constant_inputs=[1, 2, 3])[0]
    check(out, expected)


def test_strided_slice_negative_stride_begin_below_bounds_is_empty():
    """TF/Python: begin -7 on a dim of 6 with stride -1 clamps to -1, so nothing is selected (list(range(6))[-7::-1]
    is []). An empty output cannot be declared in a model (dims must be >= 1), so the kernel is called directly."""
    from nnrt_onnx.kernels.indexing import strided_slice

    x = np.arange(12, dtype=np.int32).reshape(2, 6)
    out = strided_slice(x, i64(0, -7), i64(2, -9), i64(1, -1), begin_mask=0, end_mask=0, ellipsis_mask=0,
                        new_axis_mask=0, shrink_axis_mask=0)
    assert out.shape == (2, 0) and out.dtype == np.int32


def test_strided_slice_fp16_mode():
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)
    out = run("STRIDED_SLICE", [x, i64(1, 0), i64(2, 3), i64(1, 2)], {"OH_NN_STRIDED_SLICE_SHRINK_AXIS_MASK": 1},
              constant_inputs=[1, 2, 3], float16=True)[0]
    check(out, x.astype(np.float16).astype(np.float32)[1, 0:3:2])


@pytest.mark.parametrize("begin,end,strides,params,code", [
    ([0, 0], [1, 1], [1, 0], {}, INVALID),
    ([0, 0], [1, 1], [1, 1], {"OH_NN_STRIDED_SLICE_ELLIPSIS_MASK": 0b11}, INVALID),
    ([2, 0], [3, 1], [1, 1], {"OH_NN_STRIDED_SLICE_SHRINK_AXIS_MASK": 1}, INVALID),
    ([0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1], {}, INVALID),
    ([0, 0], [1, 1], [1], {}, INVALID),
], ids=["strided_slice-err-zero-stride", "strided_slice-err-two-ellipses", "strided_slice-err-shrink-oob",
        "strided_slice-err-too-many-dims", "strided_slice-err-lengths"])
def test_strided_slice_errors(begin, end, strides, params, code):
    raises(code, run, "STRIDED_SLICE", [np.zeros((2, 3, 4), np.float32), i64(*begin), i64(*end), i64(*strides)],
           params, constant_inputs=[1, 2, 3], match="STRIDED_SLICE")


def test_strided_slice_err_float_begin():
    raises(UNSUPPORTED, run, "STRIDED_SLICE", [np.zeros((2, 3), np.float32), np.zeros(2, np.float32), i64(1, 1),
                                               i64(1, 1)], constant_inputs=[1, 2, 3], match="begin")


# ------------------------------------------------------------------------------------------------ GATHER/GATHER_ND

GATHER_CASES = [
    ("gather-axis0-f32", (5, 3), "float32", (4,), 0, "int32"),
    ("gather-axis1-2d-idx-f16", (2, 6, 3), "float16", (2, 3), 1, "int64"),
    ("gather-axis-neg1-i16", (2, 3, 7), "int16", (5,), -1, "int32"),
    ("gather-scalar-idx-u8", (4, 3), "uint8", (), 0, "int64"),
    ("gather-repeats-bool", (6,), "bool", (8,), 0, "int32"),
] + [(f"gather-dtype-{SHORT[d]}", (4, 3), d, (2, 2), 0, "int32") for d in DTYPES]


@pytest.mark.parametrize("case", GATHER_CASES, ids=[c[0] for c in GATHER_CASES])
def test_gather(case, rng):
    _, dims, dtype, idx_shape, axis, idx_dtype = case
    x = rand_any(rng, dims, dtype)
    idx = rng.integers(0, dims[axis], idx_shape).astype(idx_dtype)
    expected = ort1("Gather", [x, idx], {"axis": axis})
    check(run("GATHER", [x, idx, i32(axis)], constant_inputs=[2])[0], expected)


def test_gather_quantized(rng):
    q = rng.integers(-128, 128, (5, 3)).astype(np.int8)
    idx = i32(4, 0, 2)
    out = run("GATHER", [q, idx, i32(0)], constant_inputs=[2], input_quant={0: QuantParam.per_tensor(0.1, 1)},
              output_quant={0: QuantParam.per_tensor(0.1, 1)}, output_dtypes=[np.int8])[0]
    check(out, quantize_ref(ort1("Gather", [dequantize_ref(q, 0.1, 1), idx], {"axis": 0}), np.int8, 0.1, 1))


@pytest.mark.parametrize("idx,axis,code", [(i32(0, 5), 0, INVALID), (i32(-1), 0, INVALID), (i32(0), 2, INVALID),
                                           (np.array([0.0], np.float32), 0, UNSUPPORTED)],
                         ids=["gather-err-index-bounds", "gather-err-negative-index", "gather-err-axis",
                              "gather-err-float-indices"])
def test_gather_errors(idx, axis, code):
    raises(code, run, "GATHER", [np.zeros((5, 3), np.float32), idx, i32(axis)], constant_inputs=[2], match="GATHER")


GATHER_ND_CASES = [
    ("gather_nd-full-index-f32", (3, 4), "float32", (5, 2), "int32"),
    ("gather_nd-rows-f16", (3, 4, 2), "float16", (2, 1), "int64"),
    ("gather_nd-batched-idx-i32", (3, 4, 2), "int32", (2, 3, 2), "int32"),
    ("gather_nd-bool", (2, 2, 2), "bool", (3, 3), "int64"),
] + [(f"gather_nd-dtype-{SHORT[d]}", (3, 4), d, (2, 2), "int64") for d in DTYPES]


@pytest.mark.parametrize("case", GATHER_ND_CASES, ids=[c[0] for c in GATHER_ND_CASES])
def test_gather_nd(case, rng):
    _, dims, dtype, idx_shape, idx_dtype = case
    x = rand_any(rng, dims, dtype)
    k = idx_shape[-1]
    idx = np.stack([rng.integers(0, dims[i], idx_shape[:-1]) for i in range(k)], axis=-1).astype(idx_dtype)
    check(run("GATHER_ND", [x, idx])[0], ort1("GatherND", [x, idx.astype(np.int64)]))


def test_gather_nd_errors():
    x = np.zeros((3, 4), np.float32)
    raises(INVALID, run, "GATHER_ND", [x, i64(3, 0).reshape(1, 2)], match="GATHER_ND")
    raises(INVALID, run, "GATHER_ND", [x, i64(0, 0, 0).reshape(1, 3)], match="GATHER_ND")


# ---------------------------------------------------------------------------------------------------- SCATTER_ND

SCATTER_CASES = [
    ("scatter_nd-elements-f32", [4, 5], "float32", (3, 2), "int32"),
    ("scatter_nd-rows-f16", [4, 5], "float16", (2, 1), "int64"),
    ("scatter_nd-slices-i32", [5, 4, 2], "int32", (2, 2, 1), "int32"),
] + [(f"scatter_nd-dtype-{SHORT[d]}", [5, 3], d, (3, 1), "int64") for d in DTYPES]


@pytest.mark.parametrize("case", SCATTER_CASES, ids=[c[0] for c in SCATTER_CASES])
def test_scatter_nd(case, rng):
    _, shape, dtype, idx_shape, idx_dtype = case
    k = idx_shape[-1]
    n = int(np.prod(idx_shape[:-1]))
    cells = rng.permutation(int(np.prod(shape[:k])))[:n]  # unique positions
    idx = np.stack(np.unravel_index(cells, shape[:k]), axis=-1).reshape(idx_shape).astype(idx_dtype)
    updates = rand_any(rng, idx_shape[:-1] + tuple(shape[k:]), dtype)
    expected = ort1("ScatterND", [np.zeros(shape, updates.dtype), idx.astype(np.int64), updates])
    out = run("SCATTER_ND", [idx, updates, np.array(shape, idx_dtype)], constant_inputs=[2])[0]
    check(out, expected)


def test_scatter_nd_duplicates_accumulate():
    idx = i64(1, 3, 1).reshape(3, 1)
    updates = np.array([1.5, 2.0, 4.0], np.float32)
    expected = ort1("ScatterND", [np.zeros(5, np.float32), idx, updates], {"reduction": "add"})
    check(run("SCATTER_ND", [idx, updates, i64(5)], constant_inputs=[2])[0], expected)
    check(expected, np.array([0, 5.5, 0, 2.0, 0], np.float32))


def test_scatter_nd_errors():
    raises(INVALID, run, "SCATTER_ND", [i64(5).reshape(1, 1), np.ones(1, np.float32), i64(5)], constant_inputs=[2],
           match="SCATTER_ND")
    raises(INVALID, run, "SCATTER_ND", [i64(1).reshape(1, 1), np.ones((1, 2), np.float32), i64(5, 3)],
           constant_inputs=[2], match="updates")


# ----------------------------------------------------------------------------------------------- SPARSE_TO_DENSE

def test_sparse_to_dense_hand_f32():
    idx = i32(0, 1, 2, 3, 1, 0).reshape(3, 2)
    values = np.array([1.5, -2.0, 7.0], np.float32)
    out = run("SPARSE_TO_DENSE", [idx, values, i32(3, 4)], constant_inputs=[2])[0]
    check(out, np.array([[0, 1.5, 0, 0], [7.0, 0, 0, 0], [0, 0, 0, -2.0]], np.float32))


def test_sparse_to_dense_hand_i64_scalar_value():
    idx = i64(0, 0, 1, 1).reshape(2, 2)
    out = run("SPARSE_TO_DENSE", [idx, i64(9), i64(2, 3)], constant_inputs=[2])[0]
    check(out, np.array([[9, 0, 0], [0, 9, 0]], np.int64))


def test_sparse_to_dense_hand_1d_f16():
    out = run("SPARSE_TO_DENSE", [i32(4, 1), np.array([0.5, 3.0], np.float16), i32(5)], constant_inputs=[2])[0]
    check(out, np.array([0, 3.0, 0, 0, 0.5], np.float16))


def test_sparse_to_dense_hand_bool():
    out = run("SPARSE_TO_DENSE", [i32(1, 0).reshape(1, 2), np.array([True]), i32(2, 2)], constant_inputs=[2])[0]
    check(out, np.array([[False, False], [True, False]]))


@pytest.mark.parametrize("dtype", DTYPES, ids=[f"sparse_to_dense-dtype-{SHORT[d]}" for d in DTYPES])
def test_sparse_to_dense_dtypes(dtype):
    idx = i32(0, 2, 1, 0).reshape(2, 2)
    values = np.array([1, 1], dtype=dtype)
    expected = np.array([[0, 0, 1], [1, 0, 0]], dtype=dtype)
    check(run("SPARSE_TO_DENSE", [idx, values, i32(2, 3)], constant_inputs=[2])[0], expected)


def test_sparse_to_dense_errors():
    raises(INVALID, run, "SPARSE_TO_DENSE", [i32(0, 3).reshape(1, 2), np.ones(1, np.float32), i32(2, 3)],
           constant_inputs=[2], match="SPARSE_TO_DENSE")
    raises(INVALID, run, "SPARSE_TO_DENSE", [i32(0, 1, 0, 1).reshape(2, 2), np.ones(2, np.float32), i32(2, 3)],
           constant_inputs=[2], match="repeated")
    raises(INVALID, run, "SPARSE_TO_DENSE", [i32(0, 1, 1, 1).reshape(2, 2), np.ones(3, np.float32), i32(2, 3)],
           constant_inputs=[2], match="values")


# ------------------------------------------------------------------------------------------------------- ONE_HOT

ONE_HOT_CASES = [
    ("one_hot-default-axis-f32", (2, 3), 5, None, "float32"),
    ("one_hot-axis0-i64", (2, 3), 4, 0, "int64"),
    ("one_hot-axis1-f32", (2, 3), 4, 1, "float32"),
    ("one_hot-1d-f32", (6,), 3, -1, "float32"),
]


@pytest.mark.parametrize("case", ONE_HOT_CASES, ids=[c[0] for c in ONE_HOT_CASES])
def test_one_hot(case, rng):
    _, dims, depth, axis, dtype = case
    idx = rng.integers(0, depth + 2, dims).astype(np.int64)  # some >= depth: all-off vectors
    on, off = np.array(3, dtype), np.array(-1, dtype)
    expected = ort1("OneHot", [idx, np.array(depth, np.int64), np.array([-1, 3], dtype)], {"axis": -1 if axis is None else axis},
                    out_dtypes=[np.dtype(dtype)])
    params = {} if axis is None else {"OH_NN_ONE_HOT_AXIS": axis}
    out = run("ONE_HOT", [idx.astype(np.int32), i32(depth), on, off], params, constant_inputs=[1, 2, 3],
              output_dtypes=[np.dtype(dtype)])[0]
    check(out, expected)


def test_one_hot_hand_negative_index_is_off_f16():
    idx = i32(0, -1, 2)
    out = run("ONE_HOT", [idx, i32(3), np.array(1.5, np.float16), np.array(0, np.float16)], constant_inputs=[1, 2, 3],
              output_dtypes=[np.float16])[0]
    check(out, np.array([[1.5, 0, 0], [0, 0, 0], [0, 0, 1.5]], np.float16))


def test_one_hot_hand_int32_axis1():
    out = run("ONE_HOT", [i32(2, 0, 5).reshape(3, 1), i32(3), i32(7), i32(-7)], {"OH_NN_ONE_HOT_AXIS": 1},
              constant_inputs=[1, 2, 3], output_dtypes=[np.int32])[0]
    check(out, np.array([[[-7], [-7], [7]], [[7], [-7], [-7]], [[-7], [-7], [-7]]], np.int32))


def test_one_hot_hand_bool():
    out = run("ONE_HOT", [i64(1, 0), i64(2), np.array(True), np.array(False)], {"OH_NN_ONE_HOT_AXIS": 0},
              constant_inputs=[1, 2, 3], output_dtypes=[np.bool_])[0]
    check(out, np.array([[False, True], [True, False]]))


def test_one_hot_errors():
    raises(INVALID, run, "ONE_HOT", [i32(0), i32(0), np.float32(1), np.float32(0)], constant_inputs=[1, 2, 3],
           output_dtypes=[np.float32], match="depth")
    raises(INVALID, run, "ONE_HOT", [i32(0), i32(2), np.float32(1), np.float32(0)], {"OH_NN_ONE_HOT_AXIS": 3},
           constant_inputs=[1, 2, 3], output_dtypes=[np.float32], match="ONE_HOT")
