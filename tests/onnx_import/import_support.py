"""Helpers the import tests share (tests/onnx_import/test_<family>.py and the cross-family import tests of tests/onnx):
small ONNX models built with onnx.helper, converted, run natively and compared with onnxruntime, the ONNX reference
evaluator or outputs the test computed; and the clear rejections. The tests were written per op group, so a few
flavours coexist, each once: one-node models from arrays with outputs y0.. and tolerances given by the test
(``node_model``, ``check``, ``rejects``) or per dtype (``node_model_n``, ``check_n``, ``rejects_n``), or with named
outputs and node inputs (``node_model_named``, ``check_named``, ``rejects_named``); graphs from value infos and
initializers (``graph_model``, ``check_graph``, ``check_graph_ort``, ``rejects_graph``); models from
``support.onnx_model`` (``check_model``). Importable as ``onnx_import.import_support`` (pytest puts tests/ on
sys.path).
"""
from __future__ import annotations

import zlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from support import ort_run, ort_session, run_imported

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx

F16, F32, F64 = np.float16, np.float32, np.float64
I64, U8, I8, I32 = np.int64, np.uint8, np.int8, np.int32
F = np.float32
V = helper.make_tensor_value_info
FLOAT, DOUBLE, INT64, INT32, BOOL = TP.FLOAT, TP.DOUBLE, TP.INT64, TP.INT32, TP.BOOL


def run_ours(model, feeds):
    """Import ``model`` and run it natively on ``feeds`` (by input name): the outputs."""
    return run_imported(model, feeds)[0]


def rng_for(case_id: str):
    return np.random.default_rng(zlib.crc32(case_id.encode()))


# -- one node, outputs y0.., onnxruntime (else the reference), tolerances given by the test --------------------------

def node_model(op, inputs, opset, attrs, constants=(), out_type=None, n_outputs=1):
    """One-node model; ``inputs`` maps name -> array (graph inputs unless named in ``constants``)."""
    node = helper.make_node(op, list(inputs), [f"y{i}" for i in range(n_outputs)], **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items() if n and n not in constants]
    inits = [numpy_helper.from_array(inputs[n], n) for n in constants]
    outputs = [helper.make_tensor_value_info(f"y{i}", out_type or TP.UNDEFINED, None)
               for i in range(n_outputs)]
    graph = helper.make_graph([node], op, graph_inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)  # types the outputs


def reference(model, feeds):
    """onnxruntime's outputs; onnx's reference evaluator where onnxruntime has no kernel for the dtype."""
    try:
        session = ort_session(model)
    except Exception as exc:  # NOT_IMPLEMENTED: e.g. float64 Tan, uint16 Max, bool Where
        if "NOT_IMPLEMENTED" not in str(exc) and "opset" not in str(exc):
            raise
        from onnx.reference import ReferenceEvaluator

        return [np.asarray(a) for a in ReferenceEvaluator(model).run(None, feeds)]
    return session.run(None, feeds)


def check(op, inputs, opset=17, attrs=None, constants=(), rtol=1e-5, atol=1e-6):
    model = node_model(op, inputs, opset, attrs or {}, constants)
    feeds = {n: a for n, a in inputs.items() if n and n not in constants}
    expected = reference(model, feeds)
    actual = run_ours(model, feeds)
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got.astype(F64), want.astype(F64), rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)


def rejects(op, inputs, reason, opset=17, attrs=None, constants=(), match=""):
    model = node_model(op, inputs, opset, attrs or {}, constants)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    issue = info.value.issues[0]
    assert issue.reason == reason and match in issue.message, str(info.value)


def randn(rng, shape, dtype=F32, scale=2.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def randint(rng, shape, dtype, lo=-5, hi=6):
    return rng.integers(lo, hi, shape).astype(dtype)


# -- one node, outputs y0.., onnxruntime or the expected outputs, tolerances per dtype -------------------------------

TOL_N = {np.dtype(F16): (1e-2, 1e-2), np.dtype(F32): (1e-5, 1e-5), np.dtype(F64): (1e-9, 1e-9)}


def node_model_n(op, inputs, opset, attrs, constants=(), n_outputs=1):
    node = helper.make_node(op, list(inputs), [f"y{i}" for i in range(n_outputs)], **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items() if n and n not in constants]
    inits = [numpy_helper.from_array(inputs[n], n) for n in constants]
    outputs = [helper.make_value_info(f"y{i}", onnx.TypeProto()) for i in range(n_outputs)]
    graph = helper.make_graph([node], op, graph_inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)  # typed outputs, as onnxruntime wants


def check_n(op, inputs, opset, attrs=None, constants=(), n_outputs=1, unordered=False, expected=None):
    """Our conversion against onnxruntime, or against ``expected`` outputs the test computed."""
    model = node_model_n(op, inputs, opset, attrs or {}, constants, n_outputs)
    feeds = {n: a for n, a in inputs.items() if n and n not in constants}
    if expected is None:
        expected = ort_run(model, feeds)
    actual = run_ours(model, feeds)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        if unordered:  # TopK sorted=0: any order of the same entries
            got, want = np.sort(got, axis=-1), np.sort(want, axis=-1)
        if want.dtype.kind == "f":
            rtol, atol = TOL_N[want.dtype]
            np.testing.assert_allclose(got.astype(F64), want.astype(F64), rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)


def rejects_n(op, inputs, reason, opset, attrs=None, constants=(), match="", n_outputs=1):
    model = node_model_n(op, inputs, opset, attrs or {}, constants, n_outputs)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    issue = info.value.issues[0]
    assert issue.reason == reason and match in issue.message, str(info.value)


# -- one node, named outputs, onnxruntime / the reference / the expected outputs, tolerances per dtype ---------------

TOL_NAMED = {np.dtype(F16): (2e-3, 2e-3), np.dtype(F32): (1e-5, 1e-5), np.dtype(F64): (1e-9, 1e-9)}


def node_model_named(op, inputs, opset, attrs, constants=(), outputs=("y",), node_inputs=None):
    """One ``op`` node reading ``inputs`` (name -> array; ``node_inputs`` lists them with "" for skipped ones);
    ``constants`` become initializers."""
    node = helper.make_node(op, list(node_inputs or inputs), list(outputs), **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items() if n and n not in constants]
    inits = [numpy_helper.from_array(inputs[n], n) for n in constants]
    graph_outputs = [helper.make_value_info(o, onnx.TypeProto()) for o in outputs if o]
    graph = helper.make_graph([node], op, graph_inputs, graph_outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return onnx.shape_inference.infer_shapes(model)


def check_named(op, inputs, opset, attrs=None, constants=(), outputs=("y",), against="ort", tol=None,
                node_inputs=None):
    model = node_model_named(op, inputs, opset, attrs or {}, constants, outputs, node_inputs)
    feeds = {n: a for n, a in inputs.items() if n and n not in constants}
    if against == "ort":
        expected = ort_run(model, feeds)
    elif against == "reference":
        expected = ReferenceEvaluator(model).run(None, feeds)
    else:  # expected outputs computed by the test
        expected = against
    actual = run_ours(model, feeds)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        if want.dtype.kind == "f":
            rtol, atol = tol or TOL_NAMED[want.dtype]
            np.testing.assert_allclose(got.astype(F64), want.astype(F64), rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)
    return actual


def rejects_named(op, inputs, reason, opset, attrs=None, constants=(), match="", outputs=("y",)):
    model = node_model_named(op, inputs, opset, attrs or {}, constants, outputs)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    issue = info.value.issues[0]
    assert issue.reason == reason and match in issue.message, str(info.value)


def randn1(rng, shape, dtype=F32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# -- graphs from value infos and initializers ------------------------------------------------------------------------

def graph_model(nodes, inputs, outputs, opset, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def const_tensor(name, array):
    array = np.asarray(array)
    return helper.make_tensor(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape,
                              array.reshape(-1).tolist())


def native(model, feeds, **options):
    result = from_onnx(model, **options)
    compilation = Compilation(result.model)
    compilation.build()
    bound = options.get("constant_inputs", {})
    arrays = []
    for i in result.model.inputs:
        name = result.model.tensors[i].name
        arrays.append(np.asarray(feeds[name] if name in feeds else bound[name.removesuffix(".bound")]))
    return Executor(compilation).run_arrays(arrays)


def check_graph(model, feeds, rtol=1e-5, atol=1e-5, reference=False, **options):
    """Convert, run natively, compare every output with onnxruntime / the reference (exact for integers)."""
    everything = {**feeds, **options.get("constant_inputs", {})}
    if reference:
        want = ReferenceEvaluator(model).run(None, everything)
    else:
        session = ort_session(model)
        want = session.run(None, everything)
    got = native(model, feeds, **options)
    assert len(got) == len(want)
    for actual, expected in zip(got, want):
        expected = np.asarray(expected)
        assert actual.shape == expected.shape and actual.dtype == expected.dtype, (actual.shape, expected.shape)
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(actual, expected)


def check_graph_ort(model, feeds, **options):
    """Convert, run natively, compare every output with onnxruntime (exact for non-floats)."""
    want = ort_session(model).run(None, feeds)
    result = from_onnx(model, **options)
    compilation = Compilation(result.model)
    compilation.build()
    arrays = [np.asarray(feeds[result.model.tensors[i].name]) for i in result.model.inputs]
    got = Executor(compilation).run_arrays(arrays)
    assert len(got) == len(want)
    for actual, expected in zip(got, want):
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(actual, expected)
    return result


def rejects_graph(model, reason, text, **options):
    with pytest.raises(ConversionError) as info:
        from_onnx(model, **options)
    issue = info.value.issues[0]
    assert issue.reason == reason and text in issue.message, str(issue)


def x_of(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# -- models of support.onnx_model: seeded data, onnxruntime or the reference -----------------------------------------

def rand_normal(seed: int, *shape, dtype=F, low=None, high=None):
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.integers(low, high, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def rand_uniform(seed, shape, dtype=F, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(low), int(high), size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def check_model(model, feeds: dict, rtol=1e-4, atol=1e-5, oracle: str = "ort"):
    """Compare with onnxruntime, or with the ONNX reference evaluator where onnxruntime lacks the case."""
    if oracle == "ort":
        session = ort_session(model)
        expected = session.run(None, feeds)
    else:
        from onnx.reference import ReferenceEvaluator

        expected = ReferenceEvaluator(model).run(None, feeds)
    actual, result = run_imported(model, feeds)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a = np.asarray(a)
        assert a.shape == e.shape and a.dtype == e.dtype
        if e.dtype.kind == "f":
            np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(a, e)
    return result


def compare(actual, expected):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(actual, expected)


def ops_of(result) -> set:
    return {op.op for op in result.model.operations}


def onnx_node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


# -- valid models with dynamic dims: converted as ``nnrt-onnx convert`` does, run at several sizes ---------------------

def dynamic_model(nodes, inputs, outputs, initializers=(), opset=17, check=True):
    """A model checked by onnx's full checker: ``inputs``/``outputs`` are (name, elem_type, dims) with names
    (dim_params) for dynamic dims; ``initializers`` (name, array) pairs."""
    model = helper.make_model(
        helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*o) for o in outputs],
                          [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers]),
        opset_imports=[helper.make_opsetid("", opset)])
    if check:
        onnx.checker.check_model(model, full_check=True)
    return model


def runs_like_onnxruntime(model, feed_sets, rtol=1e-5, atol=1e-5):
    """Convert once with no shape pinned (dynamic dims stay dynamic), then run every feed set through one executor,
    each output against onnxruntime's."""
    converted = from_onnx(model).model
    compilation = Compilation(converted)
    compilation.build()
    executor = Executor(compilation)
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    for feeds in feed_sets:
        ours = executor.run_arrays([feeds[n] for n in names])
        for name, got, want in zip([o.name for o in model.graph.output], ours, ort_run(model, feeds)):
            assert got.shape == want.shape, (name, got.shape, want.shape)
            if want.dtype.kind in "fc":
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{name} at {feeds}")
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{name} at {feeds}")
    return converted
