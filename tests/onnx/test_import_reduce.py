"""Reductions, arg-max/top-k, normalisations and matrix products through the importer, compared with onnxruntime
on small one-node models: what the node suite misses (older opsets, other dtypes, ties, noop_with_empty_axes,
decomposition edge cases) and the clear rejections."""
from __future__ import annotations

import zlib

import integer_oracle
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from support import ort_run

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.onnx_import import ConversionError, from_onnx

ort = pytest.importorskip("onnxruntime")

F16, F32, F64 = np.float16, np.float32, np.float64
TOL = {np.dtype(F16): (1e-2, 1e-2), np.dtype(F32): (1e-5, 1e-5), np.dtype(F64): (1e-9, 1e-9)}


def _model(op, inputs, opset, attrs, constants=(), n_outputs=1):
    node = helper.make_node(op, list(inputs), [f"y{i}" for i in range(n_outputs)], **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items() if n and n not in constants]
    inits = [numpy_helper.from_array(inputs[n], n) for n in constants]
    outputs = [helper.make_value_info(f"y{i}", onnx.TypeProto()) for i in range(n_outputs)]
    graph = helper.make_graph([node], op, graph_inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)  # typed outputs, as onnxruntime wants


def _run_ours(model, feeds):
    result = from_onnx(model)
    compilation = Compilation(result.model)
    compilation.build()
    names = [result.model.tensors[i].name for i in result.model.inputs]
    return Executor(compilation).run_arrays([np.asarray(feeds[n]) for n in names])


def check(op, inputs, opset, attrs=None, constants=(), n_outputs=1, unordered=False, expected=None):
    """Our conversion against onnxruntime, or against ``expected`` outputs the test computed."""
    model = _model(op, inputs, opset, attrs or {}, constants, n_outputs)
    feeds = {n: a for n, a in inputs.items() if n and n not in constants}
    if expected is None:
        expected = ort_run(model, feeds)
    actual = _run_ours(model, feeds)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        if unordered:  # TopK sorted=0: any order of the same entries
            got, want = np.sort(got, axis=-1), np.sort(want, axis=-1)
        if want.dtype.kind == "f":
            rtol, atol = TOL[want.dtype]
            np.testing.assert_allclose(got.astype(F64), want.astype(F64), rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)


def rejects(op, inputs, reason, opset, attrs=None, constants=(), match="", n_outputs=1):
    model = _model(op, inputs, opset, attrs or {}, constants, n_outputs)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    issue = info.value.issues[0]
    assert issue.reason == reason and match in issue.message, str(info.value)


def rng_for(case_id: str):
    return np.random.default_rng(zlib.crc32(case_id.encode()))


def randn(rng, shape, dtype=F32, scale=2.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def randint(rng, shape, dtype, lo=-5, hi=6):
    return rng.integers(lo, hi, shape).astype(dtype)


I64 = np.int64


def axes(*values):
    return np.asarray(values, I64)


# -- reductions ---------------------------------------------------------------------------------------------------

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


def _positive(op):
    return op in ("ReduceLogSum",)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("opset", [11, 13, 18])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_attribute_or_input(op, opset, keepdims):
    case = f"{op}-{opset}-{keepdims}"
    rng = rng_for(case)
    x = randn(rng, (2, 3, 4), scale=1.0)
    if _positive(op):
        x = np.abs(x) + 0.1
    input_since = 13 if op == "ReduceSum" else 18
    if opset < input_since:
        check(op, {"x": x}, opset, {"axes": [0, -1], "keepdims": keepdims})
    else:
        check(op, {"x": x, "axes": axes(0, -1)}, opset, {"keepdims": keepdims}, constants=("axes",))


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_no_axes_reduces_everything(op):
    x = randn(rng_for(op), (3, 4), scale=1.0)
    if _positive(op):
        x = np.abs(x) + 0.1
    check(op, {"x": x}, 18, {"keepdims": 0})


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_noop_with_empty_axes(op):
    x = randn(rng_for(f"noop-{op}"), (3, 4), scale=1.0)
    if _positive(op):
        x = np.abs(x) + 0.1
    check(op, {"x": x, "axes": np.zeros((0,), I64)}, 18, {"noop_with_empty_axes": 1}, constants=("axes",))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                "ReduceSumSquare"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reduce_integers(op, dtype):
    x = randint(rng_for(f"{op}-{dtype.__name__}"), (3, 5), dtype)
    if op == "ReduceSum":
        check(op, {"x": x, "axes": axes(1)}, 13, {"keepdims": 0}, constants=("axes",))
    else:
        check(op, {"x": x}, 13, {"axes": [1], "keepdims": 0})


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceL2", "ReduceLogSumExp"])
def test_reduce_float16(op):
    x = randn(rng_for(f"{op}-f16"), (4, 6), F16, scale=1.0)
    check(op, {"x": x}, 13, {"axes": [1]} if op != "ReduceSum" else {})


def test_reduce_scalar_input():
    check("ReduceSumSquare", {"x": np.asarray(-3.0, F32)}, 18, {"keepdims": 0})


def test_reduce_log_sum_exp_large_values_stay_finite():
    x = np.asarray([[1000.0, 999.0, -5.0], [-1000.0, -1001.0, -999.5]], F32)
    check("ReduceLogSumExp", {"x": x}, 13, {"axes": [1]})


def test_reduce_rejects_float_only_op_on_integers():
    rejects("ReduceL2", {"x": np.ones((2, 3), np.int32)}, "unsupported_dtype", 13, {"axes": [1]}, match="float")


def test_reduce_needs_constant_axes():
    rejects("ReduceMean", {"x": np.ones((2, 3), F32), "axes": axes(1)}, "needs_constant_input", 18)


# -- ArgMax / ArgMin ---------------------------------------------------------------------------------------------

ARG_CASES = [
    ("argmax-opset11-negative-axis", "ArgMax", 11, {"axis": -1, "keepdims": 0}, F32),
    ("argmax-opset1-axis0", "ArgMax", 1, {"axis": 0}, F32),
    ("argmax-last-index-ties-int32", "ArgMax", 13, {"axis": 1, "select_last_index": 1}, np.int32),
    ("argmax-first-index-ties-int32", "ArgMax", 13, {"axis": 1}, np.int32),
    ("argmin-last-index-ties-f32", "ArgMin", 12, {"axis": 0, "select_last_index": 1, "keepdims": 0}, F32),
    ("argmin-int32-extremes", "ArgMin", 13, {"axis": 1}, np.int32),
    ("argmin-uint8", "ArgMin", 13, {"axis": 1, "keepdims": 0}, np.uint8),
    ("argmin-int64-last", "ArgMin", 13, {"axis": -1, "select_last_index": 1}, np.int64),
]


@pytest.mark.parametrize("case,op,opset,attrs,dtype", ARG_CASES, ids=[c[0] for c in ARG_CASES])
def test_arg_max_min(case, op, opset, attrs, dtype):
    rng = rng_for(case)
    if np.dtype(dtype).kind == "f":
        x = rng.integers(-2, 3, (4, 5)).astype(dtype)  # ties
    else:
        x = rng.integers(-2, 3, (4, 5)).astype(np.int64)
        info = np.iinfo(dtype)
        x = np.where(x == 2, info.max, np.where(x == -2, info.min, x)).astype(dtype)
    check(op, {"x": x}, opset, attrs)


# -- TopK --------------------------------------------------------------------------------------------------------

def test_top_k_opset1_k_attribute():
    x = randn(rng_for("topk-1"), (3, 6))
    check("TopK", {"x": x}, 1, {"k": 2, "axis": 1}, n_outputs=2)


def test_top_k_opset10_axis0():
    x = randn(rng_for("topk-10"), (5, 3))
    check("TopK", {"x": x, "k": np.asarray([3], I64)}, 10, {"axis": 0}, constants=("k",), n_outputs=2)


@pytest.mark.parametrize("dtype", [F32, np.int32, np.int64, np.uint8])
def test_top_k_smallest_with_ties(dtype):
    rng = rng_for(f"topk-smallest-{np.dtype(dtype).name}")
    x = rng.integers(0, 4, (3, 7)).astype(dtype)
    if np.dtype(dtype).kind == "i":
        x[0, 0] = np.iinfo(dtype).min
    check("TopK", {"x": x, "k": np.asarray([4], I64)}, 11, {"largest": 0, "axis": -1}, constants=("k",),
          n_outputs=2)


def test_top_k_unsorted_same_set():
    x = randn(rng_for("topk-unsorted"), (2, 8))
    check("TopK", {"x": x, "k": np.asarray([3], I64)}, 11, {"sorted": 0}, constants=("k",), n_outputs=2,
          unordered=True)


def test_top_k_middle_axis():
    x = randn(rng_for("topk-mid"), (2, 5, 3))
    check("TopK", {"x": x, "k": np.asarray([2], I64)}, 11, {"axis": 1, "largest": 0}, constants=("k",), n_outputs=2)


# -- Hardmax, Softmax, LogSoftmax (opset < 13 flattens at axis) --------------------------------------------------

FLATTEN_CASES = [(op, opset, attrs) for op in ("Hardmax", "Softmax", "LogSoftmax") for opset, attrs in
                 ((1, {}), (11, {"axis": 0}), (11, {"axis": 1}), (11, {"axis": -1}), (13, {"axis": 1}),
                  (13, {}))]


@pytest.mark.parametrize("op,opset,attrs", FLATTEN_CASES,
                         ids=[f"{op}-{opset}-{attrs.get('axis', 'default')}" for op, opset, attrs in FLATTEN_CASES])
def test_softmax_family_axis_semantics(op, opset, attrs):
    rng = rng_for(f"{op}-{opset}-{attrs}")
    x = rng.integers(-2, 3, (2, 3, 4)).astype(F32)  # ties for Hardmax
    if op != "Hardmax":
        x = x + randn(rng, x.shape, scale=0.5)
    check(op, {"x": x}, opset, attrs)


# -- normalisations ------------------------------------------------------------------------------------------------

def test_layer_norm_without_bias_constant_broadcast_scale():
    rng = rng_for("ln-nobias")
    x, w = randn(rng, (2, 3, 4)), randn(rng, (4,))
    check("LayerNormalization", {"x": x, "w": w}, 17, {"axis": 1, "epsilon": 1e-3}, constants=("w",))


def test_layer_norm_axis0_input_scale_and_bias():
    rng = rng_for("ln-axis0")
    x, w, b = randn(rng, (3, 4)), randn(rng, (3, 4)), randn(rng, (3, 4))
    check("LayerNormalization", {"x": x, "w": w, "b": b}, 17, {"axis": 0})


def test_layer_norm_non_constant_scale_of_broadcast_shape():
    rng = rng_for("ln-bcast")
    x, w, b = randn(rng, (2, 3, 4)), randn(rng, (1, 4)), randn(rng, (4,))
    check("LayerNormalization", {"x": x, "w": w, "b": b}, 17, {"axis": -2})


def test_layer_norm_float16_with_stash_outputs():
    rng = rng_for("ln-f16")
    x, w, b = randn(rng, (2, 8), F16), randn(rng, (8,), F16), randn(rng, (8,), F16)
    check("LayerNormalization", {"x": x, "w": w, "b": b}, 17, {}, constants=("w", "b"), n_outputs=3)


@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 2, 3, 2, 2)], ids=["rank3", "rank5"])
def test_instance_norm_ranks(shape):
    rng = rng_for(f"in-{shape}")
    x, s, b = randn(rng, shape), randn(rng, (shape[1],)), randn(rng, (shape[1],))
    check("InstanceNormalization", {"x": x, "s": s, "b": b}, 6, {"epsilon": 1e-3}, constants=("s", "b"))


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((1, 4, 3, 2), 4), ((2, 4, 2, 2), 1)],
                         ids=["rank3-g3", "rank4-g4", "rank4-g1"])
def test_group_norm_opset21(shape, groups):
    rng = rng_for(f"gn-{shape}-{groups}")
    x, s, b = randn(rng, shape), randn(rng, (shape[1],)), randn(rng, (shape[1],))
    check("GroupNormalization", {"x": x, "s": s, "b": b}, 21, {"num_groups": groups, "epsilon": 1e-3})


@pytest.mark.parametrize("constant", [True, False], ids=["constant-affine", "input-affine"])
def test_group_norm_opset18_per_group_affine(constant):
    """Opset 18 scales and shifts per group; onnxruntime has no GroupNormalization-18 kernel: reference."""
    from onnx.reference import ReferenceEvaluator

    rng = rng_for(f"gn18-{constant}")
    x, s, b = randn(rng, (2, 6, 3)), randn(rng, (3,)), randn(rng, (3,))
    model = _model("GroupNormalization", {"x": x, "s": s, "b": b}, 18, {"num_groups": 3},
                   constants=("s", "b") if constant else ())
    feeds = {"x": x} if constant else {"x": x, "s": s, "b": b}
    expected = ReferenceEvaluator(model).run(None, feeds)[0]
    np.testing.assert_allclose(_run_ours(model, feeds)[0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, -1])
def test_lp_normalization_with_zero_vector(p, axis):
    x = randn(rng_for(f"lp-{p}-{axis}"), (3, 3))
    x[0, :] = 0
    x[:, 0] = 0
    check("LpNormalization", {"x": x}, 1, {"p": p, "axis": axis})


def test_lp_normalization_rejects_p3():
    rejects("LpNormalization", {"x": np.ones((2, 2), F32)}, "unsupported_attribute", 1, {"p": 3}, match="p=3")


@pytest.mark.parametrize("opset,attrs", [(9, {"axes": [1]}), (13, {"axes": [0, 1]}), (13, {})],
                         ids=["opset9-axis1", "opset13-axes01", "default-axes"])
def test_mean_variance_normalization(opset, attrs):
    x = randn(rng_for(f"mvn-{opset}-{attrs}"), (2, 3, 2, 2))
    check("MeanVarianceNormalization", {"x": x}, opset, attrs)


# -- Einsum ------------------------------------------------------------------------------------------------------

EINSUM = [
    ("matmul", "ij,jk->ik", [(2, 3), (3, 4)]),
    ("implicit", "ij,jk", [(2, 3), (3, 4)]),
    ("transposed-b", "bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
    ("attention", "bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ellipsis", "...ij,...jk->...ik", [(2, 2, 3), (2, 3, 4)]),
    ("outer", "i,j->ij", [(3,), (4,)]),
    ("three", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("sum-private", "ij,jk->k", [(2, 3), (3, 4)]),
    ("trace", "ii", [(4, 4)]),
    ("diag-batch", "bii->bi", [(2, 3, 3)]),
    ("permute", "abc->cab", [(2, 3, 4)]),
    ("batch-out-of-order", "bij,bjk->kbi", [(2, 3, 4), (2, 4, 5)]),
]


@pytest.mark.parametrize("name,equation,shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum(name, equation, shapes):
    rng = rng_for(f"einsum-{name}")
    inputs = {f"x{i}": randn(rng, s) for i, s in enumerate(shapes)}
    check("Einsum", inputs, 12, {"equation": equation})


def test_einsum_int32():
    rng = rng_for("einsum-int")
    check("Einsum", {"a": randint(rng, (2, 3), np.int32), "b": randint(rng, (3, 2), np.int32)}, 12,
          {"equation": "ij,jk->ik"})


def test_einsum_rejects_size_one_broadcast():
    rejects("Einsum", {"a": np.ones((1, 2, 3), F32), "b": np.ones((4, 3, 2), F32)}, "unsupported_attribute", 12,
            {"equation": "bij,bjk->bik"}, match="broadcasting")


# -- CumSum, MatMulInteger, QLinearMatMul, MatMul, Gemm ---------------------------------------------------------

@pytest.mark.parametrize("attrs", [{}, {"exclusive": 1}, {"reverse": 1}, {"exclusive": 1, "reverse": 1}],
                         ids=["plain", "exclusive", "reverse", "exclusive-reverse"])
@pytest.mark.parametrize("dtype", [F32, np.int64])
def test_cum_sum_middle_axis(attrs, dtype):
    x = randint(rng_for(f"cumsum-{attrs}-{dtype}"), (2, 4, 3), dtype)
    check("CumSum", {"x": x, "axis": np.asarray(1, np.int32)}, 14, attrs, constants=("axis",))


def test_cum_sum_needs_constant_axis():
    rejects("CumSum", {"x": np.ones((2, 3), F32), "axis": np.asarray(1, np.int32)}, "needs_constant_input", 14)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_matmul_integer_per_row_and_column_zero_points(dtype):
    """Per-row/per-column zero points, as the ONNX spec defines them (onnxruntime and the reference evaluator take
    scalars only, so numpy computes the expected product)."""
    rng = rng_for(f"mmi-{np.dtype(dtype).name}")
    lo, hi = (0, 256) if dtype == np.uint8 else (-128, 128)
    a, b = rng.integers(lo, hi, (3, 4)).astype(dtype), rng.integers(lo, hi, (4, 5)).astype(dtype)
    a_zp, b_zp = rng.integers(lo, hi, (3,)).astype(dtype), rng.integers(lo, hi, (5,)).astype(dtype)
    model = _model("MatMulInteger", {"a": a, "b": b, "a_zp": a_zp, "b_zp": b_zp}, 10, {}, ("a_zp", "b_zp"))
    expected = (a.astype(np.int32) - a_zp.astype(np.int32)[:, None]) @ (b.astype(np.int32) - b_zp.astype(np.int32))
    got = _run_ours(model, {"a": a, "b": b})[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


# The expected values of the integer ops come from exact integer math (integer_oracle), never from onnxruntime's
# integer kernels: their u8s8/s8s8 paths saturate int16 sums on AVX2 CPUs without VNNI. Its u8u8 path widens to
# int16 before multiplying and is exact on every CPU, so it stays as a second opinion for uint8 x uint8.

@pytest.mark.parametrize("b_dtype", [np.uint8, np.int8])
def test_matmul_integer_scalar_zero_points(b_dtype):
    rng = rng_for(f"mmi-scalar-{np.dtype(b_dtype).name}")
    info = np.iinfo(b_dtype)
    a = rng.integers(0, 256, (3, 40)).astype(np.uint8)
    b = rng.integers(info.min, int(info.max) + 1, (40, 5)).astype(b_dtype)
    a[0], b[:, 0] = 255, info.max  # pairs of 255 * 127 overflow an int16 sum: where saturating kernels go wrong
    inputs = {"a": a, "b": b, "a_zp": np.asarray(7, np.uint8), "b_zp": np.asarray(info.max // 3, b_dtype)}
    expected = [integer_oracle.matmul_accumulate(a, b, inputs["a_zp"], inputs["b_zp"])]
    check("MatMulInteger", inputs, 10, constants=("a_zp", "b_zp"), expected=expected)
    if b_dtype == np.uint8:
        check("MatMulInteger", inputs, 10, constants=("a_zp", "b_zp"))


def test_matmul_integer_without_zero_points_batched():
    rng = rng_for("mmi-batched")
    a, b = rng.integers(0, 256, (2, 3, 4)).astype(np.uint8), rng.integers(0, 256, (4, 2)).astype(np.uint8)
    check("MatMulInteger", {"a": a, "b": b}, 10, expected=[integer_oracle.matmul_accumulate(a, b)])
    check("MatMulInteger", {"a": a, "b": b}, 10)  # uint8 x uint8: onnxruntime is exact on every CPU


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_matmul_constant_params(dtype):
    rng = rng_for(f"qlmm-{np.dtype(dtype).name}")
    info = np.iinfo(dtype)
    a = rng.integers(info.min, int(info.max) + 1, (3, 4)).astype(dtype)
    b = rng.integers(info.min, int(info.max) + 1, (4, 2)).astype(dtype)
    params = {"a_s": np.asarray(0.02, F32), "a_zp": np.asarray(info.min + 120, dtype), "b_s": np.asarray(0.03, F32),
              "b_zp": np.asarray(info.min + 130, dtype), "y_s": np.asarray(0.5, F32),
              "y_zp": np.asarray(info.min + 100, dtype)}
    inputs = {"a": a, "a_s": params["a_s"], "a_zp": params["a_zp"], "b": b, "b_s": params["b_s"],
              "b_zp": params["b_zp"], "y_s": params["y_s"], "y_zp": params["y_zp"]}
    acc = integer_oracle.matmul_accumulate(a, b, params["a_zp"], params["b_zp"])
    expected = integer_oracle.requantize(acc, params["a_s"], params["b_s"], params["y_s"], params["y_zp"])
    check("QLinearMatMul", inputs, 10, constants=tuple(params), expected=[expected])


@pytest.mark.parametrize("shapes", [((3,), (3, 4)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2))],
                         ids=["1d-2d", "3d-1d", "broadcast-batch"])
@pytest.mark.parametrize("dtype", [F32, np.int32])
def test_matmul(shapes, dtype):
    rng = rng_for(f"matmul-{shapes}-{dtype}")
    a, b = (randint(rng, s, dtype) if np.dtype(dtype).kind == "i" else randn(rng, s) for s in shapes)
    check("MatMul", {"a": a, "b": b}, 13)


GEMM = [
    ("opset7-input-c-2d", 7, {"alpha": 0.5, "beta": 2.0}, (3, 4), (4, 5), (3, 5), ()),
    ("opset9-const-b-2d-c", 9, {"transB": 1}, (3, 4), (5, 4), (1, 5), ("b", "c")),
    ("opset11-no-c-transA", 11, {"transA": 1, "alpha": 2.0}, (4, 3), (4, 5), None, ("b",)),
    ("opset13-const-b-scalar-c", 13, {"beta": 0.5}, (2, 3), (3, 4), (), ("b", "c")),
    ("opset13-input-b-column-c", 13, {"transA": 1, "transB": 1}, (3, 2), (4, 3), (2, 1), ()),
]


@pytest.mark.parametrize("case,opset,attrs,sa,sb,sc,constants", GEMM, ids=[g[0] for g in GEMM])
def test_gemm(case, opset, attrs, sa, sb, sc, constants):
    rng = rng_for(case)
    inputs = {"a": randn(rng, sa), "b": randn(rng, sb)}
    if sc is not None:
        inputs["c"] = randn(rng, sc)
    check("Gemm", inputs, opset, attrs, constants=constants)


def test_top_k_rejects_k_beyond_axis():
    rejects("TopK", {"x": np.ones((2, 3), F32), "k": np.asarray([4], I64)}, "invalid_model", 11, constants=("k",),
            match="k=4", n_outputs=2)


def test_top_k_non_constant_k():
    x = randn(rng_for("topk-dynamic-k"), (3, 6))
    check("TopK", {"x": x, "k": np.asarray([2], I64)}, 11, {}, n_outputs=2)


def test_reduce_empty_axes_input_without_noop_reduces_everything():
    x = randn(rng_for("reduce-empty-axes"), (3, 4))
    check("ReduceSum", {"x": x, "axes": np.zeros((0,), I64)}, 13, {"keepdims": 1}, constants=("axes",))


def test_reduce_output_shape_when_inference_cannot_tell():
    """The axes come from a computation shape inference cannot follow: the handler gives the output its shape."""
    x = randn(rng_for("reduce-computed-axes"), (2, 3, 4))
    nodes = [helper.make_node("Constant", [], ["start"], value=numpy_helper.from_array(np.asarray(1, I64))),
             helper.make_node("Constant", [], ["limit"], value=numpy_helper.from_array(np.asarray(3, I64))),
             helper.make_node("Constant", [], ["delta"], value=numpy_helper.from_array(np.asarray(1, I64))),
             helper.make_node("Range", ["start", "limit", "delta"], ["axes"]),
             helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=1),
             helper.make_node("Sub", ["x", "y"], ["z"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    got = _run_ours(model, {"x": x})[0]
    np.testing.assert_allclose(got, x - x.mean(axis=(1, 2), keepdims=True), rtol=1e-5, atol=1e-6)
