"""Shape / indexing / data movement / type conversion kernels, run end to end through ``run_op``.

Oracles: onnxruntime on single-node ONNX models (onnx.reference where ORT has no kernel for a dtype), and
hand-written expected values for STRIDED_SLICE masks, SPARSE_TO_DENSE, FILL, RANK, ASSERT, STACK/UNSTACK and
the header's own examples.
"""
from __future__ import annotations

import zlib

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from support import ort_session

from nnrt_onnx.enums import OH_NN_DataType, OH_NN_ReturnCode
from nnrt_onnx.errors import NNRtError
from nnrt_onnx.tensor import QuantParam
from nnrt_onnx.testing.single_op import run_op

# Tolerances (rtol, atol) per output dtype. Data movement is exact; the floats only matter for
# dequantization, float16 compute mode and Range.
TOL = {
    "float64": (1e-12, 0.0),
    "float32": (1e-6, 1e-7),
    "float16": (1e-3, 1e-3),
}
EXACT = (0.0, 0.0)  # every integer and bool dtype

DTYPES = ["float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "bool"]
SHORT = {"float32": "f32", "float16": "f16", "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
         "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool"}
OH_CODE = {np.dtype(getattr(np, n) if n != "bool" else np.bool_): getattr(OH_NN_DataType, f"OH_NN_{n.upper()}")
           for n in DTYPES}

INVALID = OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER
UNSUPPORTED = OH_NN_ReturnCode.OH_NN_UNSUPPORTED
FAILED = OH_NN_ReturnCode.OH_NN_FAILED


# ------------------------------------------------------------------------------------------------------- helpers

@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(0, 100, shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def run(op, inputs, params=None, **kw):
    return run_op(f"OH_NN_OPS_{op}", [np.asarray(a) for a in inputs], params or {}, **kw)


def check(actual, expected):
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    rtol, atol = TOL.get(expected.dtype.name, EXACT)
    if rtol == atol == 0.0:
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def raises(code, fn, *args, match=None, **kw):
    with pytest.raises(NNRtError) as info:
        fn(*args, **kw)
    assert info.value.code == code, info.value
    if match:
        assert match in str(info.value), info.value
    return info.value


def _onnx_type(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def oracle(nodes, feeds, outputs, opset=21, initializers=()):
    """Run an ONNX graph: onnxruntime, or onnx.reference when ORT has no kernel for the dtypes."""
    if isinstance(nodes, onnx.NodeProto):
        nodes = [nodes]
    graph = helper.make_graph(
        nodes, "oracle",
        [helper.make_tensor_value_info(n, _onnx_type(a.dtype), a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(n, _onnx_type(d), None) for n, d in outputs],
        initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    try:
        session = ort_session(model)
    except Exception as exc:  # noqa: BLE001 - ORT reports a missing typed kernel in several ways
        if "NOT_IMPLEMENTED" not in str(exc) and "Could not find an implementation" not in str(exc):
            raise
        return [np.asarray(r) for r in ReferenceEvaluator(model).run(None, feeds)]
    return session.run(None, feeds)


def ort1(op_type, inputs, attrs=None, out_dtypes=None, opset=21):
    """One ONNX node; ``inputs`` is a list of arrays (None for an omitted optional input)."""
    names = ["" if a is None else f"in{i}" for i, a in enumerate(inputs)]
    feeds = {n: np.asarray(a) for n, a in zip(names, inputs) if a is not None}
    out_dtypes = out_dtypes or [next(a for a in inputs if a is not None).dtype]
    outs = [f"out{i}" for i in range(len(out_dtypes))]
    node = helper.make_node(op_type, names, outs, **(attrs or {}))
    result = oracle(node, feeds, list(zip(outs, out_dtypes)), opset)
    return result if len(result) > 1 else result[0]


def quantize_ref(real, dtype, scale, zero):
    """The header's formula q = clamp(round(r / s + z), qmin, qmax)."""
    info = np.iinfo(dtype)
    return np.clip(np.rint(np.asarray(real, np.float64) / scale + zero), info.min, info.max).astype(dtype)


def dequantize_ref(q, scale, zero):
    return ((q.astype(np.float64) - zero) * scale).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


def i32(*values):
    return np.array(values, dtype=np.int32)


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
    x = rand(rng, dims, dtype)
    shape = np.array(target, dtype=np.int32 if int32_shape else np.int64)
    expected = ort1("Reshape", [x, shape.astype(np.int64)])
    check(run("RESHAPE", [x, shape], constant_inputs=[1])[0], expected)


def test_reshape_fp16_mode(rng):
    x = rand(rng, (4, 6), "float32")
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
    x = rand(rng, dims, dtype)
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
    xs = [rand(rng, s, dtype) for s in shapes]
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
    x = rand(rng, dims, dtype)
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
    xs = [rand(rng, (2, 3), dtype) for _ in range(3)]
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
    x = rand(rng, (2, 3, 2), dtype)
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
    x = rand(rng, dims, dtype)
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
    x = rand(rng, dims, dtype)
    check(run("UNSQUEEZE", [x], {"OH_NN_UNSQUEEZE_AXIS": axis})[0], ort1("Unsqueeze", [x, i64(axis)]))


def test_unsqueeze_omitted_axis_is_identity(rng):
    x = rand(rng, (2, 3), "float32")
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
    x = rand(rng, dims, dtype)
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
    x = rand(rng, dims, dtype)
    params = {} if axis is None else {"OH_NN_FLATTEN_AXIS": axis}
    check(run("FLATTEN", [x], params)[0], ort1("Flatten", [x], {"axis": 1 if axis is None else axis}))


def test_flatten_err_axis():
    raises(INVALID, run, "FLATTEN", [np.zeros((2, 3), np.float32)], {"OH_NN_FLATTEN_AXIS": 3}, match="FLATTEN")


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
    x = rand(rng, dims, dtype)
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
    x = rand(rng, (5, 6, 7), "float32")
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
    x = rand(rng, dims, dtype)
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
    x = rand(rng, dims, dtype)
    check(run("BROADCAST_TO", [x], {"OH_NN_BROADCAST_TO_SHAPE": shape})[0], ort1("Expand", [x, i64(*resolved)]))


def test_broadcast_to_errors():
    x = np.zeros((2, 3), np.float32)
    raises(INVALID, run, "BROADCAST_TO", [x], {"OH_NN_BROADCAST_TO_SHAPE": [4, 3]}, match="BROADCAST_TO")
    raises(INVALID, run, "BROADCAST_TO", [x], {"OH_NN_BROADCAST_TO_SHAPE": [3]}, match="BROADCAST_TO")
    raises(INVALID, run, "BROADCAST_TO", [x], {"OH_NN_BROADCAST_TO_SHAPE": [1, 3]}, match="BROADCAST_TO")


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
    x = rand(rng, dims, dtype)
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
    x = rand(rng, dims, dtype)
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
    updates = rand(rng, idx_shape[:-1] + tuple(shape[k:]), dtype)
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
    x = rand(rng, dims, dtype)
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


# --------------------------------------------------------------------------------------------------------- CAST

def _cast_source(rng, src, dst):
    src, dst = np.dtype(src), np.dtype(dst)
    if src == np.bool_:
        return rng.random((3, 4)) < 0.5
    low = 0 if (src.kind == "u" or dst.kind in "ub") else -60
    values = rng.uniform(low, 100, (3, 4))
    values[0, :2] = [0, 1]
    if src.kind == "f":
        return values.astype(src)  # fractions: float -> int truncates toward zero
    return np.round(values).astype(src)


def run_cast(x, code, dtype, **kw):
    """Cast's input #1 is a constant holding the target OH_NN_DataType (an INT32 scalar, as the runtime's tests use)."""
    return run("CAST", [x, np.array(int(code), np.int32)], constant_inputs=[1], output_dtypes=[np.dtype(dtype)],
               output_shapes=[np.shape(x)], **kw)[0]


CAST_PAIRS = [(s, d) for s in DTYPES for d in DTYPES]


@pytest.mark.parametrize("pair", CAST_PAIRS, ids=[f"cast-{SHORT[s]}-to-{SHORT[d]}" for s, d in CAST_PAIRS])
def test_cast(pair, rng):
    src, dst = pair
    x = _cast_source(rng, src, dst)
    dt = np.dtype(dst)
    expected = ort1("Cast", [x], {"to": _onnx_type(dt)}, out_dtypes=[dt])
    out = run_cast(x, OH_CODE[dt], dt)
    check(out, expected)


def test_cast_hand_truncation():
    x = np.array([-2.7, -0.5, 0.5, 2.7, 3.0], np.float32)
    out = run_cast(x, OH_NN_DataType.OH_NN_INT32, np.int32)
    check(out, i32(-2, 0, 0, 2, 3))


def test_cast_unknown_uses_declared():
    out = run_cast(i32(1, 2), OH_NN_DataType.OH_NN_UNKNOWN, np.float32)
    check(out, np.array([1, 2], np.float32))


def test_cast_fp16_mode(rng):
    x = rng.integers(-50, 50, (2, 5)).astype(np.int32)
    out = run_cast(x, OH_NN_DataType.OH_NN_FLOAT32, np.float32, float16=True)
    check(out, x.astype(np.float32))


def test_cast_errors():
    raises(INVALID, run_cast, i32(1), OH_NN_DataType.OH_NN_INT8, np.float32, match="disagrees")
    raises(INVALID, run_cast, i32(1), 40, np.float32, match="CAST")


# ---------------------------------------------------------------------------------------------- QUANT_DTYPE_CAST

QDC = "OH_NN_QUANT_DTYPE_CAST"


def _qdc(x, src, dst, out_dtype, axis=None, input_quant=None, output_quant=None, float16=False):
    params = {f"{QDC}_SRC_T": int(src), f"{QDC}_DST_T": int(dst)}
    if axis is not None:
        params[f"{QDC}_AXIS"] = axis
    return run("QUANT_DTYPE_CAST", [x], params, input_quant=input_quant or {}, output_quant=output_quant or {},
               output_dtypes=[out_dtype], output_shapes=[x.shape], float16=float16)[0]


DT = OH_NN_DataType
DEQUANT_CASES = [
    ("quant_dtype_cast-i8-to-f32-tensor", "int8", [0.05], [3], None),
    ("quant_dtype_cast-u8-to-f32-tensor", "uint8", [0.1], [128], None),
    ("quant_dtype_cast-i8-to-f32-channel0", "int8", [0.1, 0.02, 0.5], [0, -4, 7], 0),
    ("quant_dtype_cast-u8-to-f32-channel2", "uint8", [0.1, 0.2, 0.3, 0.4], [10, 0, 128, 255], 2),
    ("quant_dtype_cast-i8-to-f32-channel-neg1", "int8", [0.1, 0.2, 0.3, 0.4], [1, 2, 3, 4], -1),
]


@pytest.mark.parametrize("case", DEQUANT_CASES, ids=[c[0] for c in DEQUANT_CASES])
def test_quant_dtype_cast_dequantize(case, rng):
    _, dtype, scales, zeros, axis = case
    dt = np.dtype(dtype)
    x = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, (3, 2, 4)).astype(dt)
    qp = QuantParam(scales, zeros, [8] * len(scales))
    attrs = {} if axis is None else {"axis": axis}
    expected = ort1("DequantizeLinear", [x, np.array(scales, np.float32).reshape(-1 if axis is not None else ()),
                                         np.array(zeros, dt).reshape(-1 if axis is not None else ())], attrs,
                    out_dtypes=[np.float32])
    out = _qdc(x, OH_CODE[dt], DT.OH_NN_FLOAT32, np.float32, axis, input_quant={0: qp})
    check(out, expected)


QUANT_CASES = [
    ("quant_dtype_cast-f32-to-i8-tensor", "int8", [0.05], [3], None),
    ("quant_dtype_cast-f32-to-u8-tensor", "uint8", [0.02], [128], None),
    ("quant_dtype_cast-f32-to-i8-channel1", "int8", [0.1, 0.01], [0, -5], 1),
    ("quant_dtype_cast-f32-to-u8-channel0", "uint8", [0.1, 0.05, 0.2], [128, 100, 0], 0),
]


@pytest.mark.parametrize("case", QUANT_CASES, ids=[c[0] for c in QUANT_CASES])
def test_quant_dtype_cast_quantize(case, rng):
    _, dtype, scales, zeros, axis = case
    dt = np.dtype(dtype)
    x = (rng.standard_normal((3, 2, 4)) * 4).astype(np.float32)  # some values saturate
    qp = QuantParam(scales, zeros, [8] * len(scales))
    attrs = {} if axis is None else {"axis": axis}
    expected = ort1("QuantizeLinear", [x, np.array(scales, np.float32).reshape(-1 if axis is not None else ()),
                                       np.array(zeros, dt).reshape(-1 if axis is not None else ())], attrs,
                    out_dtypes=[dt])
    out = _qdc(x, DT.OH_NN_FLOAT32, OH_CODE[dt], dt, axis, output_quant={0: qp})
    check(out, expected)


def test_quant_dtype_cast_hand_ties():
    """Header formula q = clamp(round(r / s + z)), round half to even applied to r / s + z (ONNX's QuantizeLinear
    rounds r / s first and adds z, which differs at ties when z is odd: 0.25 / 0.5 + 3 = 3.5 -> 4 here, 3 in ONNX)."""
    x = np.array([0.25, 0.75, -0.25, 1.25, 100.0, -100.0], np.float32)
    out = _qdc(x, DT.OH_NN_FLOAT32, DT.OH_NN_INT8, np.int8, output_quant={0: QuantParam.per_tensor(0.5, 3)})
    check(out, np.array([4, 4, 2, 6, 127, -128], np.int8))
    out = _qdc(x, DT.OH_NN_FLOAT32, DT.OH_NN_UINT8, np.uint8, output_quant={0: QuantParam.per_tensor(0.5, 0)})
    check(out, np.array([0, 2, 0, 2, 200, 0], np.uint8))


def test_quant_dtype_cast_requantize_i8_to_u8(rng):
    x = rng.integers(-128, 128, (4, 5)).astype(np.int8)
    real = ort1("DequantizeLinear", [x, np.float32(0.1), np.int8(-3)], out_dtypes=[np.float32])
    expected = ort1("QuantizeLinear", [real, np.float32(0.07), np.uint8(120)], out_dtypes=[np.uint8])
    out = _qdc(x, DT.OH_NN_INT8, DT.OH_NN_UINT8, np.uint8, input_quant={0: QuantParam.per_tensor(0.1, -3)},
               output_quant={0: QuantParam.per_tensor(0.07, 120)})
    check(out, expected)


def test_quant_dtype_cast_mindir_codes(rng):
    x = rng.integers(-128, 128, (2, 3)).astype(np.int8)
    out = _qdc(x, 32, 43, np.float32, input_quant={0: QuantParam.per_tensor(0.5, 1)})  # kNumberTypeInt8/Float32
    check(out, ((x.astype(np.float64) - 1) * 0.5).astype(np.float32))


def test_quant_dtype_cast_fp16_mode(rng):
    x = rng.integers(-128, 128, (2, 3)).astype(np.int8)
    out = _qdc(x, DT.OH_NN_INT8, DT.OH_NN_FLOAT32, np.float32, input_quant={0: QuantParam.per_tensor(0.25, 0)},
               float16=True)
    check(out, (x.astype(np.float32) * 0.25).astype(np.float16).astype(np.float32))


def test_quant_dtype_cast_err_bool():
    raises(UNSUPPORTED, _qdc, np.array([True, False]), DT.OH_NN_BOOL, DT.OH_NN_FLOAT32, np.float32,
           match="QUANT_DTYPE_CAST")


def test_quant_dtype_cast_float_to_float(rng):
    x = rand(rng, (2, 3), "float32")
    check(_qdc(x, DT.OH_NN_FLOAT32, DT.OH_NN_FLOAT16, np.float16), x.astype(np.float16))


def test_quant_dtype_cast_errors(rng):
    x = rng.integers(-128, 128, (3, 4)).astype(np.int8)
    raises(INVALID, _qdc, x, DT.OH_NN_INT8, DT.OH_NN_FLOAT32, np.float32, match="quant params")
    raises(INVALID, _qdc, x, DT.OH_NN_UINT8, DT.OH_NN_FLOAT32, np.float32,
           input_quant={0: QuantParam.per_tensor(1.0, 0)}, match="srcT")
    raises(INVALID, _qdc, x, DT.OH_NN_INT8, DT.OH_NN_FLOAT32, np.float32, axis=1,
           input_quant={0: QuantParam([1.0, 2.0], [0, 0], [8, 8])}, match="channels")


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
