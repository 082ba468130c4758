"""Helpers shared by the kernel tests (tests/kernels/test_<family>.py): runners, ONNX oracles, checks, random data.

``run``, ``expect_error``, ``rng_for`` and ``TOL`` serve every family; the rest keeps the styles the tests were
written in: one-output cases with tolerances by compute dtype (elementwise, activation: ``case_table``, ``run_one``,
``check_one``, ``rand``); onnxruntime oracles with dtype tolerances (linear, normalization, reduce: ``ort_run``,
``assert_close``, ``rand_uniform``); every dtype against ONNX graphs (shape, indexing, quantization, CAST:
``ort1``, ``oracle``, ``check``, ``rand_any``); NHWC tests transposing to ONNX's NCHW (conv, pool, spatial, LRN,
PAD: ``ort_node``, ``nchw``, ``nhwc``, ``check_tol``); explicit tolerances (recurrent, detection: ``assert_within``).
The ``rng`` fixture of the shape, indexing, quantization and CAST tests is in conftest.py.
"""
from __future__ import annotations

import os
import zlib
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.helper import np_dtype_to_tensor_dtype
from onnx.reference import ReferenceEvaluator
from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OrtNotImplemented
from support import ort_session

from nnrt_onnx.enums import OH_NN_DataType, OH_NN_ReturnCode
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.errors import NNRtError
from nnrt_onnx.tensor import QuantParam
from nnrt_onnx.testing.single_op import run_op

# -- dtypes, tolerances, error codes -------------------------------------------------------------------------------

# Tolerances per dtype (computed dtype of the kernel's output vs a float32/float64 oracle), and by name (LSTM,
# DETECTION_POST_PROCESS; EnableFloat16 and quantized outputs of the NHWC tests).
TOL: dict[Any, dict[str, float]] = {
    np.dtype(np.float64): dict(rtol=1e-10, atol=1e-10),
    np.dtype(np.float32): dict(rtol=1e-5, atol=1e-5),
    np.dtype(np.float16): dict(rtol=1e-2, atol=1e-2),
    "float32": dict(rtol=1e-5, atol=1e-5),
    "float16": dict(rtol=2e-2, atol=2e-2),  # float16 compute, recurrent accumulation over several steps
    "float16_mode": dict(rtol=2e-2, atol=2e-2),  # EnableFloat16: float32 model computed in float16
    "quant": dict(rtol=0, atol=1),  # one quantization step (rounding of the float oracle vs the kernel)
}
QUANT_ATOL = 1  # quantized outputs: at most one step from the quantized float oracle (rounding at a boundary)

F16, F32, F64 = np.float16, np.float32, np.float64
I8, I16, I32, I64, U8, U16, BOOL = np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.bool_
DTYPE_F32, DTYPE_F16 = np.dtype(np.float32), np.dtype(np.float16)  # the NHWC tests' dtype parameters (TOL keys)
DTYPES = ["float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "bool"]
# Short dtype names for test ids, by numpy type and by dtype name.
SHORT = {F16: "f16", F32: "f32", F64: "f64", I8: "i8", I16: "i16", I32: "i32", I64: "i64", U8: "u8", U16: "u16",
         BOOL: "bool",
         "float32": "f32", "float16": "f16", "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
         "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool"}
OH_CODE = {np.dtype(getattr(np, n) if n != "bool" else np.bool_): getattr(OH_NN_DataType, f"OH_NN_{n.upper()}")
           for n in DTYPES}

INVALID = OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER
UNSUPPORTED = OH_NN_ReturnCode.OH_NN_UNSUPPORTED
U, INV = UNSUPPORTED, INVALID  # short forms for the error tables
ones_f32 = lambda *s: np.ones(s, F32)  # noqa: E731 - float32 ones of shape s, for the error tables


# -- running a kernel ----------------------------------------------------------------------------------------------

def rng_for(case_id: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(case_id.encode()))


def rng_for_request(request) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.callspec.id.encode()))


def run(op: str, inputs, params=None, **kw) -> list[np.ndarray]:
    """The one place that calls the kernels (through the full Model -> Compilation -> Executor path); ``op`` is the
    operation's name with or without its ``OH_NN_OPS_`` prefix. Returns what the reference kernel computes (the
    reference plan: the tests' oracles judge it); where the fast paths are on, the production plan runs the same
    case too and must keep ``nnrt_onnx.accel.contract`` against it (the same error code where it raises)."""
    name = op if op.startswith("OH_NN_OPS_") else f"OH_NN_OPS_{op}"
    inputs = [np.asarray(a) for a in inputs]
    try:
        reference = run_op(name, inputs, params or {}, reference_plan=True, **kw)
    except NNRtError as error:
        if FAST_PATHS:
            with pytest.raises(NNRtError) as raised:
                run_op(name, inputs, params or {}, **kw)
            assert raised.value.code == error.code, f"the production plan raised {raised.value}, the reference {error}"
        raise
    if FAST_PATHS:
        from nnrt_onnx.accel.contract import disagreement

        fast = run_op(name, inputs, params or {}, **kw)
        for position, (f, r) in enumerate(zip(fast, reference)):
            problem = disagreement(name[len("OH_NN_OPS_"):], f, r)
            assert problem is None, f"{name} output #{position}, production plan against reference plan: {problem}"
    return reference


# the production plan differs from the reference plan (the fast paths are on): kernel tests run both
FAST_PATHS = os.environ.get("NNRT_ONNX_NUMBA", "").strip() != "0"


def run_declared(op, inputs, params, ranks):
    """Run with declared dynamic float32 outputs, so the kernel is reached through compile + execute only."""
    return run(op, inputs, params, output_dtypes=[np.float32] * len(ranks), output_shapes=[[-1] * r for r in ranks])


def expect_error(code: RC, op: str, inputs, params=None, **kw) -> None:
    with pytest.raises(NNRtError) as info:
        run(op, inputs, params, **kw)
    assert info.value.code == code, info.value


def raises(code, fn, *args, match=None, **kw):
    with pytest.raises(NNRtError) as info:
        fn(*args, **kw)
    assert info.value.code == code, info.value
    if match:
        assert match in str(info.value), info.value
    return info.value


# -- one-output cases, tolerance by compute dtype (elementwise, activation) ----------------------------------------

# Tolerances per (output) dtype; integer and BOOL results must match exactly.
_TOL_ONE = {
    np.dtype(np.float16): dict(rtol=1e-2, atol=1e-2),
    np.dtype(np.float32): dict(rtol=1e-5, atol=1e-6),
    np.dtype(np.float64): dict(rtol=1e-12, atol=1e-12),
}
OPSET = 21


def run_one(op, inputs, params=None, **kwargs):
    """One NNRt op through the end-to-end harness; returns its single output."""
    (out,) = run(f"OH_NN_OPS_{op.upper()}", list(inputs), params or {}, **kwargs)
    return out


def onnx_ref(op_type, inputs, attrs=None, out_dtype=None):
    """Single-node ONNX model run by onnxruntime (onnx.reference if ORT has no kernel for these dtypes)."""
    names = [f"x{i}" if a is not None else "" for i, a in enumerate(inputs)]
    node = helper.make_node(op_type, names, ["y"], **(attrs or {}))
    real = [(n, np.asarray(a)) for n, a in zip(names, inputs) if a is not None]
    graph_inputs = [helper.make_tensor_value_info(n, np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in real]
    out_dtype = np.dtype(out_dtype if out_dtype is not None else real[0][1].dtype)
    output = helper.make_tensor_value_info("y", np_dtype_to_tensor_dtype(out_dtype), None)
    model = helper.make_model(helper.make_graph([node], "oracle", graph_inputs, [output]),
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    feeds = dict(real)
    try:
        session = ort_session(model)
    except Exception:  # no ORT kernel for this dtype: the ONNX reference implementation
        return np.asarray(ReferenceEvaluator(model).run(None, feeds)[0])
    return np.asarray(session.run(None, feeds)[0])


def via_f32(op_type, inputs, attrs=None, out_dtype=F16):
    """Oracle for float16 cases: the float32 model, rounded to float16 once."""
    return onnx_ref(op_type, [a.astype(F32) if a is not None and a.dtype == F16 else a for a in inputs],
                    attrs).astype(out_dtype)


def rand(rng, shape, dtype, lo=-4.0, hi=4.0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(int(lo), info.min), min(int(hi), info.max) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def check_one(out, expected, tol_dtype=None):
    """Exact for integers and BOOL; per-dtype tolerance for floats (``tol_dtype``: the compute dtype)."""
    expected = np.asarray(expected)
    assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
    assert out.shape == expected.shape, (out.shape, expected.shape)
    if np.issubdtype(expected.dtype, np.floating):
        np.testing.assert_allclose(out.astype(F64), expected.astype(F64), **_TOL_ONE[np.dtype(tol_dtype or expected.dtype)])
    else:
        np.testing.assert_array_equal(out, expected)


def case_table():
    """An empty case table and its ``@case(id)`` decorator; each case: id -> builder(rng) returning (op, inputs,
    params, expected, run_op kwargs)."""
    cases: dict[str, object] = {}

    def case(cid):
        def register(fn):
            assert cid not in cases, cid
            cases[cid] = fn
            return fn
        return register
    return cases, case


def oracle_for(op_type, inputs, attrs=None, out_dtype=None):
    if any(a is not None and a.dtype == F16 for a in inputs):
        return via_f32(op_type, inputs, attrs, out_dtype if out_dtype is not None else F16)
    return onnx_ref(op_type, inputs, attrs, out_dtype)


def add_unary_cases(cases, unary):
    """One case per op and dtype of ``unary`` (op: (onnx op, attrs, input maker, dtypes)), against the ONNX op."""
    for _op, (_onnx, _attrs, _make, _dtypes) in unary.items():
        for _dt in _dtypes:
            def _unary(rng, op=_op, onnx_op=_onnx, attrs=_attrs, make=_make, dt=_dt):
                x = make(rng, (2, 3, 4, 5), dt)
                return op, [x], {}, oracle_for(onnx_op, [x], attrs), {}
            cases[f"{_op}-{SHORT[_dt]}"] = _unary


def run_case(cases, cid):
    """Build case ``cid`` of ``cases`` with its own rng, run it, check the output."""
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    op, inputs, params, expected, kwargs = cases[cid](rng)
    out = run_one(op, inputs, params, **kwargs)
    check_one(out, expected, F16 if kwargs.get("float16") else None)


def run_quantized_case(cases, cid):
    """Quantized case ``cid`` of ``cases`` ((op, ONNX op, input count, params)): the executor dequantizes around the
    kernel; the output may be one step off the quantized float oracle."""
    op, onnx_op, n_in, params = cases[cid]
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    dtype = I8 if cid.endswith("i8") else U8
    zero = 3 if dtype == I8 else 128
    scale_in, scale_out, zero_out = 0.05, 0.04, (0 if dtype == I8 else 100)
    info = np.iinfo(dtype)
    qs = [rng.integers(info.min, info.max + 1, size=(2, 3, 4)).astype(dtype) for _ in range(n_in)]
    reals = [dequantize_ref(q, scale_in, zero) for q in qs]
    expected_real = onnx_ref(onnx_op, reals) if onnx_op else np.clip(reals[0], 0, 6)
    expected = quantize_ref(expected_real, dtype, scale_out, zero_out)
    out = run_one(op, qs, params, input_quant={i: QuantParam([scale_in], [zero], [8]) for i in range(n_in)},
              output_quant={0: QuantParam([scale_out], [zero_out], [8])}, output_dtypes=[dtype])
    assert out.dtype == dtype
    assert np.max(np.abs(out.astype(np.int32) - expected.astype(np.int32))) <= 1


def run_error_case(errors, cid):
    """Error case ``cid`` of ``errors`` ((op, inputs, params, code)): the code, and the op's name in the message."""
    op, inputs, params, code = errors[cid]
    with pytest.raises(NNRtError) as info:
        run_one(op, inputs, params)
    assert info.value.code == code, info.value
    assert f"OH_NN_OPS_{op.upper()}" in info.value.message


# -- onnxruntime oracles, tolerance by dtype (linear, normalization, reduce) ---------------------------------------

def ort_run(op: str, inputs, attrs=None, out_dtypes=None, opset: int = 18) -> list[np.ndarray]:
    """Run a single ONNX node on onnxruntime (CPU), or onnx.reference where onnxruntime has no kernel."""
    inputs = [np.asarray(a) for a in inputs]
    names = [f"x{i}" for i in range(len(inputs))]
    out_dtypes = out_dtypes or [inputs[0].dtype]
    graph = helper.make_graph(
        [helper.make_node(op, names, [f"y{i}" for i in range(len(out_dtypes))], **(attrs or {}))], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info(f"y{i}", helper.np_dtype_to_tensor_dtype(np.dtype(d)), None)
         for i, d in enumerate(out_dtypes)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    try:
        session = ort_session(model)
    except OrtNotImplemented:  # e.g. float64 InstanceNormalization: onnx's reference implementation instead
        return list(ReferenceEvaluator(model).run(None, dict(zip(names, inputs))))
    return session.run(None, dict(zip(names, inputs)))


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype=None) -> None:
    dtype = np.dtype(dtype or actual.dtype)
    assert actual.dtype == dtype, f"dtype {actual.dtype}, expected {dtype}"
    assert actual.shape == np.shape(expected), f"shape {actual.shape}, expected {np.shape(expected)}"
    if dtype.kind == "f":
        np.testing.assert_allclose(actual.astype(np.float64), np.asarray(expected, np.float64), **TOL[dtype])
    else:
        np.testing.assert_array_equal(actual, expected)


def rand_uniform(rng, shape, dtype=F32, lo=-2.0, hi=2.0) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def qparam(scale: float, zero: int) -> QuantParam:
    return QuantParam(scales=[scale], zero_points=[zero], num_bits=[8])


def ref_in(x: np.ndarray) -> np.ndarray:
    """The oracle's input: float16 data is evaluated in float32 (exactly representable)."""
    return x.astype(F32) if x.dtype == F16 else x


# -- every dtype against ONNX graphs (shape, indexing, quantization, CAST) -----------------------------------------

# Tolerances (rtol, atol) per output dtype. Data movement is exact; the floats only matter for
# dequantization, float16 compute mode and Range.
_TOL_BY_NAME = {
    "float64": (1e-12, 0.0),
    "float32": (1e-6, 1e-7),
    "float16": (1e-3, 1e-3),
}
EXACT = (0.0, 0.0)  # every integer and bool dtype


def rand_any(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(0, 100, shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def check(actual, expected):
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    rtol, atol = _TOL_BY_NAME.get(expected.dtype.name, EXACT)
    if rtol == atol == 0.0:
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def onnx_type(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def oracle(nodes, feeds, outputs, opset=21, initializers=()):
    """Run an ONNX graph: onnxruntime, or onnx.reference when ORT has no kernel for the dtypes."""
    if isinstance(nodes, onnx.NodeProto):
        nodes = [nodes]
    graph = helper.make_graph(
        nodes, "oracle",
        [helper.make_tensor_value_info(n, onnx_type(a.dtype), a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(n, onnx_type(d), None) for n, d in outputs],
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


def _per_axis(values, ndim: int, axis):
    """Quant params as an array broadcasting against a rank-``ndim`` tensor: a scalar, or one per entry of ``axis``."""
    values = np.asarray(values, np.float64)
    if values.size == 1:
        return values.reshape(())
    shape = [1] * ndim
    shape[axis] = values.size
    return values.reshape(shape)


def quantize_ref(real, dtype, scale, zero, axis=None):
    """The header's formula q = clamp(round(r / s + z), qmin, qmax), ties to even (numpy's rint), written here so
    that no expected value goes through the library's own ``quantize``; per channel along ``axis``."""
    info = np.iinfo(dtype)
    real = np.asarray(real, np.float64)
    q = np.rint(real / _per_axis(scale, real.ndim, axis) + _per_axis(zero, real.ndim, axis))
    return np.clip(q, info.min, info.max).astype(dtype)


def dequantize_ref(q, scale, zero, axis=None):
    """r = (q - z) * s (per channel along ``axis``), as float32."""
    q = np.asarray(q)
    return ((q.astype(np.float64) - _per_axis(zero, q.ndim, axis)) * _per_axis(scale, q.ndim, axis)).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


def i32(*values):
    return np.array(values, dtype=np.int32)


# -- NHWC: transposes to and from ONNX's NCHW (conv, pool, spatial, LRN, PAD) --------------------------------------

def check_tol(actual, expected, key):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    tol = TOL[key]
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), **tol)


_ONNX_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
               np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
               np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
               np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.float64): TensorProto.DOUBLE}


def ort_node(op_type, inputs: list, out_dtype=None, opset=19, **attrs):
    """Run one ONNX node; ``inputs`` is a list of arrays (None = omitted optional input)."""
    names, feeds, value_infos = [], {}, []
    for i, array in enumerate(inputs):
        if array is None:
            names.append("")
            continue
        name = f"in{i}"
        names.append(name)
        feeds[name] = array
        value_infos.append(helper.make_tensor_value_info(name, _ONNX_TYPES[array.dtype], list(array.shape)))
    out_dtype = np.dtype(out_dtype or inputs[0].dtype)
    node = helper.make_node(op_type, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", value_infos, [helper.make_tensor_value_info("y", _ONNX_TYPES[out_dtype], None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    session = ort_session(model)
    return session.run(None, feeds)[0]


def nchw(x):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def nhwc(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def f32(x):
    return np.asarray(x).astype(np.float32)


def act(y, fuse):
    return y if fuse == 0 else np.maximum(y, 0) if fuse == 1 else np.clip(y, 0, 6)


def qparams_for(real, dtype, per_channel_axis=None):
    """Quant params covering ``real`` for an 8-bit dtype."""
    lo, hi = (-128, 127) if dtype == np.int8 else (0, 255)
    if per_channel_axis is None:
        amin, amax = min(real.min(), 0.0), max(real.max(), 0.0)
        scale = (amax - amin) / (hi - lo) or 1.0
        zero = int(np.clip(round(lo - amin / scale), lo, hi))
        return QuantParam([scale], [zero], [8])
    moved = np.moveaxis(real, per_channel_axis, 0).reshape(real.shape[per_channel_axis], -1)
    scales = (np.abs(moved).max(axis=1) / 127.0).clip(1e-6).tolist()
    return QuantParam(scales, [0] * len(scales), [8] * len(scales), axis=per_channel_axis)


def quant(real, qp, dtype, axis=None):
    """``real`` quantized with ``qp`` by the test's own formula (:func:`quantize_ref`)."""
    return quantize_ref(real, dtype, qp.scales, qp.zero_points, axis)


def dequant(q, qp, axis=None):
    return dequantize_ref(q, qp.scales, qp.zero_points, axis)


# -- explicit tolerances (recurrent, detection) --------------------------------------------------------------------

def assert_within(actual, expected, tol):
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64), **tol)
