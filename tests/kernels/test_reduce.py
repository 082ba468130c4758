"""Reduce family: REDUCE_{MEAN,PROD,MAX,MIN,SUM,L2,ALL}, ALL, ARG_MAX and TOP_K, run end to end through
``nnrt_onnx.testing.run_op``.

Oracles: onnxruntime on a single-node ONNX model built here, or hand computations for NNRt-only behaviour (coeff,
reduce_to_end, out_max_value, ALL, REDUCE_ALL, TopK sorted=false). Ids start with the op's short name
(``pytest -k top_k``).
"""
from __future__ import annotations

import numpy as np
import pytest
from kernels.kernel_support import (
    F16,
    F32,
    F64,
    I32,
    I64,
    QUANT_ATOL,
    assert_close,
    expect_error,
    ort_run,
    qparam,
    quantize_ref,
    rand_uniform,
    ref_in,
    rng_for,
    run,
)

from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as T

# ================================================================================================================
# REDUCE_{MEAN,PROD,MAX,MIN,SUM,L2}: onnxruntime Reduce* (opset 18, axes input); coeff and reduce_to_end by hand
# ================================================================================================================
REDUCE_OPS = {"REDUCE_MEAN": "ReduceMean", "REDUCE_PROD": "ReduceProd", "REDUCE_MAX": "ReduceMax",
              "REDUCE_MIN": "ReduceMin", "REDUCE_SUM": "ReduceSum", "REDUCE_L2": "ReduceL2"}
REDUCE_VARIANTS = {
    "axis1": dict(shape=(2, 3, 4), axis=[1]),
    "keep_dims": dict(shape=(2, 3, 4), axis=[1], keep=True),
    "multi-axis": dict(shape=(2, 3, 4), axis=[0, 2]),
    "neg-axis": dict(shape=(2, 3, 4), axis=[-1]),
    "scalar-axis": dict(shape=(3, 5), axis=np.array(0, I32)),
    "all-axes-keep": dict(shape=(2, 3, 2), axis=[0, 1, 2], keep=True),
    "reduce_to_end": dict(shape=(2, 3, 4, 2), axis=[1], to_end=True),
    "reduce_to_end-keep-coeff": dict(shape=(2, 3, 4), axis=[-2], to_end=True, keep=True, coeff=0.5),
    "coeff": dict(shape=(2, 3, 4), axis=[2], coeff=2.5),
    "f16": dict(shape=(3, 4, 5), axis=[2], dtype=F16),
    "f64": dict(shape=(3, 4), axis=[1], dtype=F64),
    "int32": dict(shape=(3, 4), axis=[1], dtype=I32, skip=("REDUCE_L2",)),
    "int64-coeff": dict(shape=(3, 4), axis=[0], dtype=I64, coeff=3.0, skip=("REDUCE_L2",)),
    # NNAPI / TFLite: a dim named twice, or as -3 and 0, is reduced once (docs/deviations.md); onnxruntime is given
    # the distinct axes, written out by hand
    "repeated-mixed-sign-axes": dict(shape=(2, 3, 4), axis=[1, 0, -3, -3], oracle_axes=[0, 1]),
    "repeated-axes-keep": dict(shape=(2, 3, 4), axis=[2, -1, 2], keep=True, oracle_axes=[2]),
    "reduce_to_end-repeated": dict(shape=(2, 3, 4), axis=[-2, 1], to_end=True, oracle_axes=[1, 2]),
}
REDUCE_CASES = {f"{op.lower()}-{v}": (op, v) for op in REDUCE_OPS for v, c in REDUCE_VARIANTS.items()
                if op not in c.get("skip", ())}


def _reduce_input(op: str, rng, shape, dtype) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        lo, hi = (-3, 3) if op == "REDUCE_PROD" else (-50, 50)
        return rand_uniform(rng, shape, dtype, lo, hi)
    if op == "REDUCE_PROD":  # keep products in a comfortable range
        return (rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1, 1], size=shape)).astype(dtype)
    return rand_uniform(rng, shape, dtype, -3, 3)


@pytest.mark.parametrize("case_id", REDUCE_CASES)
def test_reduce(case_id):
    op, variant = REDUCE_CASES[case_id]
    c = REDUCE_VARIANTS[variant]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    x = _reduce_input(op, rng, c["shape"], dtype)
    axis = np.asarray(c["axis"], I64) if isinstance(c["axis"], list) else c["axis"]
    params = {}
    if "keep" in c:
        params[T[f"OH_NN_{op}_KEEP_DIMS"]] = c["keep"]
    if "to_end" in c:
        params[T[f"OH_NN_{op}_REDUCE_TO_END"]] = c["to_end"]
    if "coeff" in c:
        params[T[f"OH_NN_{op}_COEFF"]] = c["coeff"]
    (out,) = run(op, [x, axis], params)
    rank = len(c["shape"])
    axes = [a % rank for a in np.asarray(axis).reshape(-1).tolist()]
    if c.get("to_end"):
        axes = list(range(axes[0], rank))
    axes = c.get("oracle_axes", axes)
    (expected,) = ort_run(REDUCE_OPS[op], [ref_in(x), np.asarray(axes, I64)], dict(keepdims=int(c.get("keep", False))))
    expected = expected * c.get("coeff", 1.0) if dtype not in (I32, I64) else expected * int(c.get("coeff", 1))
    assert_close(out, expected, dtype)


def test_reduce_mean_int_truncates():
    """Integer mean truncates toward zero (C division; onnxruntime agrees)."""
    x = np.array([[-7, -1, 1], [5, 6, -9], [4, 4, 4]], I32)
    (out,) = run("REDUCE_MEAN", [x, np.array([1], I64)])
    (expected,) = ort_run("ReduceMean", [x, np.array([1], I64)], dict(keepdims=0))
    assert_close(out, expected, I32)
    np.testing.assert_array_equal(out, [-2, 0, 4])


def test_reduce_mean_quant_uint8():
    case_id = "reduce_mean-quant-uint8"
    rng = rng_for(case_id)
    x = rng.integers(0, 256, size=(2, 6, 3)).astype(np.uint8)
    qx, qo = qparam(0.1, 100), qparam(0.05, 120)
    (out,) = run("REDUCE_MEAN", [x, np.array([1], I64)], {T.OH_NN_REDUCE_MEAN_KEEP_DIMS: True},
                 input_quant={0: qx}, output_quant={0: qo}, output_dtypes=[np.uint8])
    (real,) = ort_run("ReduceMean", [(x.astype(F32) - 100) * F32(0.1), np.array([1], I64)], dict(keepdims=1))
    expected = quantize_ref(real, np.uint8, [0.05], [120])
    assert out.shape == (2, 1, 3)
    assert np.max(np.abs(out.astype(int) - expected.astype(int))) <= QUANT_ATOL


REDUCE_ALL_CASES = {
    "reduce_all-axis1": dict(shape=(3, 4, 2), axis=[1]),
    "reduce_all-keep_dims": dict(shape=(3, 4, 2), axis=[0, 2], keep=True),
    "reduce_all-reduce_to_end": dict(shape=(2, 3, 2, 2), axis=[1], to_end=True),
    "reduce_all-float-nonzero": dict(shape=(3, 4), axis=[1], dtype=F32),
    "reduce_all-float-coeff": dict(shape=(3, 4), axis=[0], dtype=F32, coeff=2.0),
    "reduce_all-int32": dict(shape=(4, 3), axis=[0], dtype=I32),
    "reduce_all-repeated-mixed-sign": dict(shape=(3, 4, 2), axis=[1, 0, -3, -3], oracle_axes=[0, 1]),
}


@pytest.mark.parametrize("case_id", REDUCE_ALL_CASES)
def test_reduce_all(case_id):
    c = REDUCE_ALL_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", np.bool_)
    x = (rng.random(c["shape"]) > 0.2)
    if dtype is not np.bool_:
        x = (x * rng.integers(1, 5, size=c["shape"])).astype(dtype)
    x.reshape(-1)[0] = 0  # make sure at least one slice is false
    params = {}
    if "keep" in c:
        params[T.OH_NN_REDUCE_ALL_KEEP_DIMS] = c["keep"]
    if "to_end" in c:
        params[T.OH_NN_REDUCE_ALL_REDUCE_TO_END] = c["to_end"]
    if "coeff" in c:
        params[T.OH_NN_REDUCE_ALL_COEFF] = c["coeff"]
    (out,) = run("REDUCE_ALL", [x, np.asarray(c["axis"], I64)], params)
    axes = c["axis"] if not c.get("to_end") else list(range(c["axis"][0], len(c["shape"])))
    axes = c.get("oracle_axes", axes)
    expected = np.all(x != 0, axis=tuple(axes), keepdims=c.get("keep", False)).astype(dtype) * c.get("coeff", 1)
    assert_close(out, expected.astype(dtype), dtype)


REDUCE_ERRORS = {
    "reduce_l2-err-int32": ("REDUCE_L2", RC.OH_NN_UNSUPPORTED, np.ones((2, 3), I32), [1], {}),
    "reduce_sum-err-bool": ("REDUCE_SUM", RC.OH_NN_UNSUPPORTED, np.ones((2, 3), bool), [1], {}),
    "reduce_mean-err-axis-range": ("REDUCE_MEAN", RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), [2], {}),
    "reduce_max-err-axis-below-range": ("REDUCE_MAX", RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), [1, -3], {}),
    "reduce_min-err-float-axis": ("REDUCE_MIN", RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32),
                                  np.array([1.0], F32), {}),
    "reduce_prod-err-to_end-two-axes": ("REDUCE_PROD", RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3, 4), F32), [0, 1],
                                        {T.OH_NN_REDUCE_PROD_REDUCE_TO_END: True}),
    "reduce_sum-err-int-fractional-coeff": ("REDUCE_SUM", RC.OH_NN_UNSUPPORTED, np.ones((2, 3), I32), [1],
                                            {T.OH_NN_REDUCE_SUM_COEFF: 0.5}),
    "reduce_all-err-bool-coeff": ("REDUCE_ALL", RC.OH_NN_UNSUPPORTED, np.ones((2, 3), bool), [1],
                                  {T.OH_NN_REDUCE_ALL_COEFF: 2.0}),
}


@pytest.mark.parametrize("case_id", REDUCE_ERRORS)
def test_reduce_errors(case_id):
    op, code, x, axis, params = REDUCE_ERRORS[case_id]
    axis = axis if isinstance(axis, np.ndarray) else np.asarray(axis, I64)
    expect_error(code, op, [x, axis], params, output_dtypes=[x.dtype], output_shapes=[(-1,)])


# ================================================================================================================
# ALL (INT64 keep_dims flag, BOOL output)
# ================================================================================================================
ALL_CASES = {
    "all-axis-scalar": dict(shape=(3, 4), axis=np.array(1, I64)),
    "all-axis-list-keep": dict(shape=(2, 3, 4), axis=np.array([0, 2], I64), keep=1),
    "all-neg-axis-int32-axis": dict(shape=(2, 3, 4), axis=np.array([-1], I32)),
    "all-int-input": dict(shape=(4, 3), axis=np.array([0], I64), dtype=I32),
    "all-repeated-mixed-sign": dict(shape=(2, 3, 4), axis=np.array([1, 0, -3, -3], I64), oracle_axes=(0, 1)),
    "all-float-input": dict(shape=(4, 3), axis=np.array([1], I64), dtype=F32),
}


@pytest.mark.parametrize("case_id", ALL_CASES)
def test_all(case_id):
    c = ALL_CASES[case_id]
    rng = rng_for(case_id)
    x = rng.random(c["shape"]) > 0.15
    if "dtype" in c:
        x = (x * rng.integers(-3, 4, size=c["shape"])).astype(c["dtype"])
    x.reshape(-1)[-1] = 0
    params = {T.OH_NN_ALL_KEEP_DIMS: c["keep"]} if "keep" in c else {}
    (out,) = run("ALL", [x, c["axis"]], params, output_dtypes=[np.bool_])
    axes = c.get("oracle_axes", tuple(int(a) for a in np.asarray(c["axis"]).reshape(-1)))
    expected = np.all(x != 0, axis=axes, keepdims=bool(c.get("keep", 0)))  # hand: logical AND of x != 0
    assert_close(out, expected, np.bool_)


ALL_ERRORS = {
    "all-err-axis-range": (np.ones((2, 3), bool), np.array([2], I64)),
    "all-err-float-axis": (np.ones((2, 3), bool), np.array([1.0], F32)),
}


@pytest.mark.parametrize("case_id", ALL_ERRORS)
def test_all_errors(case_id):
    x, axis = ALL_ERRORS[case_id]
    expect_error(RC.OH_NN_INVALID_PARAMETER, "ALL", [x, axis], output_dtypes=[np.bool_], output_shapes=[(-1,)])


# ================================================================================================================
# ARG_MAX
# ================================================================================================================
ARGMAX_CASES = {
    "arg_max-default-last-axis": dict(shape=(3, 4, 5)),
    "arg_max-axis0-keep_dims": dict(shape=(3, 4, 5), axis=0, keep=True),
    "arg_max-axis1": dict(shape=(3, 4, 5), axis=1),
    "arg_max-top_k3": dict(shape=(2, 6, 3), axis=1, top_k=3),
    "arg_max-top_k2-keep": dict(shape=(4, 5), axis=-1, top_k=2, keep=True),
    "arg_max-out_max_value": dict(shape=(3, 4, 5), axis=2, out_value=True),
    "arg_max-out_max_value-top_k2": dict(shape=(3, 5), axis=0, out_value=True, top_k=2),
    "arg_max-int32": dict(shape=(4, 6), axis=1, dtype=I32),
    "arg_max-f16": dict(shape=(4, 6), axis=0, dtype=F16),
    "arg_max-index-int64": dict(shape=(4, 6), axis=1, index=I64),
    "arg_max-ties-first": dict(values=np.array([[1, 3, 3, 2], [5, 5, 5, 5]], F32), axis=1),
}


@pytest.mark.parametrize("case_id", ARGMAX_CASES)
def test_arg_max(case_id):
    c = ARGMAX_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    x = c["values"] if "values" in c else (rng.permutation(np.prod(c["shape"])).reshape(c["shape"]) - 10).astype(dtype)
    params = {}
    if "axis" in c:
        params[T.OH_NN_ARG_MAX_AXIS] = c["axis"]
    if "keep" in c:
        params[T.OH_NN_ARG_MAX_KEEPDIMS] = c["keep"]
    if "top_k" in c:
        params[T.OH_NN_ARG_MAX_TOP_K] = c["top_k"]
    if "out_value" in c:
        params[T.OH_NN_ARG_MAX_OUT_MAX_VALUE] = c["out_value"]
    out_dtype = x.dtype if c.get("out_value") else c.get("index", I32)
    (out,) = run("ARG_MAX", [x], params, output_dtypes=[out_dtype])
    axis, k, keep = c.get("axis", -1), c.get("top_k", 1), c.get("keep", False)
    if k == 1:
        (index,) = ort_run("ArgMax", [ref_in(x)], dict(axis=axis, keepdims=1), out_dtypes=[I64])
        (value,) = ort_run("ReduceMax", [ref_in(x), np.array([axis], I64)], dict(keepdims=1))
        if not keep:
            index, value = np.squeeze(index, axis), np.squeeze(value, axis)
    else:  # the top_k largest along the axis, descending; the axis keeps size top_k
        value, index = ort_run("TopK", [ref_in(x), np.array([k], I64)], dict(axis=axis), out_dtypes=[ref_in(x).dtype, I64])
    expected = value if c.get("out_value") else index
    assert_close(out, np.asarray(expected).astype(out_dtype), out_dtype)


ARGMAX_ERRORS = {
    "arg_max-err-top_k-too-big": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), {T.OH_NN_ARG_MAX_TOP_K: 4}, I32),
    "arg_max-err-axis-range": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), {T.OH_NN_ARG_MAX_AXIS: 2}, I32),
    "arg_max-err-bool": (RC.OH_NN_UNSUPPORTED, np.ones((2, 3), bool), {}, I32),
    "arg_max-err-float-index": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), {}, F32),
}


@pytest.mark.parametrize("case_id", ARGMAX_ERRORS)
def test_arg_max_errors(case_id):
    code, x, params, out_dtype = ARGMAX_ERRORS[case_id]
    expect_error(code, "ARG_MAX", [x], params, output_dtypes=[out_dtype], output_shapes=[(-1,)])


# ================================================================================================================
# TOP_K
# ================================================================================================================
TOPK_CASES = {
    "top_k-default-last-axis": dict(shape=(3, 4, 6), k=3),
    "top_k-axis0": dict(shape=(5, 4), k=2, axis=0),
    "top_k-axis1-k-int32": dict(shape=(2, 7, 3), k=np.array(4, I32), axis=1),
    "top_k-unsorted-ascending": dict(shape=(3, 8), k=3, sorted=False),
    "top_k-k-all": dict(shape=(2, 5), k=5),
    "top_k-int32": dict(shape=(3, 6), k=2, dtype=I32),
    "top_k-f16": dict(shape=(3, 6), k=3, dtype=F16),
    "top_k-index-int64": dict(shape=(3, 6), k=2, index=I64),
}


@pytest.mark.parametrize("case_id", TOPK_CASES)
def test_top_k(case_id):
    c = TOPK_CASES[case_id]
    rng = rng_for(case_id)
    dtype = c.get("dtype", F32)
    x = (rng.permutation(np.prod(c["shape"])).reshape(c["shape"]) - 7).astype(dtype)  # distinct values: no ties
    k = c["k"] if isinstance(c["k"], np.ndarray) else np.array([c["k"]], I64)
    params = {}
    if "sorted" in c:
        params[T.OH_NN_TOP_K_SORTED] = c["sorted"]
    if "axis" in c:
        params[T.OH_NN_TOP_K_AXIS] = c["axis"]
    index_dtype = c.get("index", I32)
    values, indices = run("TOP_K", [x, k], params, output_dtypes=[dtype, index_dtype])
    axis = c.get("axis", -1)  # header default: the last axis
    ev, ei = ort_run("TopK", [ref_in(x), np.array([int(k.reshape(-1)[0])], I64)], dict(axis=axis),
                     out_dtypes=[ref_in(x).dtype, I64])
    if c.get("sorted") is False:  # header: false = ascending order (of the same k largest)
        ev, ei = np.flip(ev, axis), np.flip(ei, axis)
    assert_close(values, ev.astype(dtype), dtype)
    assert_close(indices, ei.astype(index_dtype), index_dtype)


def test_top_k_ties_and_unsorted_by_hand():
    """Equal values: the lower index first, in both orders (hand-computed)."""
    x = np.array([[1, 3, 3, 2, 3]], F32)
    values, indices = run("TOP_K", [x, np.array([3], I64)], {}, output_dtypes=[F32, I32])
    np.testing.assert_array_equal(values, [[3, 3, 3]])
    np.testing.assert_array_equal(indices, [[1, 2, 4]])
    x = np.array([[1, 3, 3, 2, 0]], F32)
    values, indices = run("TOP_K", [x, np.array([3], I64)], {T.OH_NN_TOP_K_SORTED: False}, output_dtypes=[F32, I32])
    np.testing.assert_array_equal(values, [[2, 3, 3]])
    np.testing.assert_array_equal(indices, [[3, 1, 2]])


def test_top_k_quant_int8():
    case_id = "top_k-quant-int8"
    rng = rng_for(case_id)
    x = rng.permutation(np.arange(-60, 60)).reshape(4, 30).astype(np.int8)
    q = qparam(0.1, -3)
    values, indices = run("TOP_K", [x, np.array([5], I64)], {}, input_quant={0: q}, output_quant={0: q},
                          output_dtypes=[np.int8, I32])
    ev, ei = ort_run("TopK", [x.astype(F32), np.array([5], I64)], dict(axis=-1), out_dtypes=[F32, I64])
    np.testing.assert_array_equal(values, ev.astype(np.int8))
    np.testing.assert_array_equal(indices, ei.astype(I32))


TOPK_ERRORS = {
    "top_k-err-k-too-big": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), np.array([4], I64), {}),
    "top_k-err-k-negative": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), np.array([-1], I64), {}),
    "top_k-err-k-float": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), np.array([1.0], F32), {}),
    "top_k-err-axis-range": (RC.OH_NN_INVALID_PARAMETER, np.ones((2, 3), F32), np.array([1], I64),
                             {T.OH_NN_TOP_K_AXIS: 2}),
    "top_k-err-bool": (RC.OH_NN_UNSUPPORTED, np.ones((2, 3), bool), np.array([1], I64), {}),
}


@pytest.mark.parametrize("case_id", TOPK_ERRORS)
def test_top_k_errors(case_id):
    code, x, k, params = TOPK_ERRORS[case_id]
    expect_error(code, "TOP_K", [x, k], params, output_dtypes=[x.dtype, I32], output_shapes=[(-1, -1), (-1, -1)])


@pytest.mark.parametrize("values, expected", [
    ([3e30, 3e30, 0.0, 2.0], 0.0),  # the partial product overflows to inf before it meets the zero: inf * 0 = NaN
    ([-3e30, 3e30, 0.0, 2.0], -0.0),  # the product's sign: one negative factor
    ([3e30, 3e30, 2.0], np.inf),  # no zero: the float32 product is inf
    ([3e30, 3e30, 0.0, np.nan], np.nan),  # a NaN stays NaN
    ([np.inf, 0.0, 1.0], np.nan),  # inf * 0 is NaN whatever the order
])
def test_reduce_prod_of_finite_values_with_a_zero_is_zero(values, expected):
    # hand computations: the product of finite factors one of which is 0 is 0, whatever order overflows first
    (out,) = run("REDUCE_PROD", [np.asarray(values, F32), np.asarray([0], I64)])
    assert out.shape == () and (np.isnan(out) if np.isnan(expected) else out == expected)
    assert np.signbit(out) == np.signbit(np.float32(expected)) or np.isnan(expected)


@pytest.mark.parametrize("values", [
    [1e-30, 1e-15, 3.0, 7.0],  # 1e-45 rounds to one subnormal step, then x 21: 3e-44 where the product is 2.1e-44
    [1e-30, -1e-15, 3.0, 7.0, 1.1, 1.3, 0.9, 1.7, 1.01],  # a negative one, past numpy's unrolled lanes
    [2e-25, 3e-21, 5.0, 7.0, 1.5],  # a partial product underflows to 0: 3.1e-44 is representable
    [1e-30, 1e-30, 1e-30],  # below half the smallest subnormal: 0
])
def test_reduce_prod_underflowing_to_a_subnormal_is_rounded_once(values):
    # exact oracle: the product of the float32 factors as a Fraction, rounded to float32 (through float64, 1e-16
    # relative, far finer than a subnormal's step); float32 partial products lose digits in the subnormal range
    from fractions import Fraction
    from math import prod

    x = np.asarray(values, F32)
    exact = np.float32(float(prod(Fraction(float(v)) for v in x)))
    (out,) = run("REDUCE_PROD", [x, np.asarray([0], I64)])
    assert out.shape == () and out == exact and np.signbit(out) == np.signbit(exact)
