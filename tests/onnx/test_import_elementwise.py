"""Element-wise ONNX ops through the importer, compared with onnxruntime on small models (what the node suite misses:
other dtypes, opsets, attribute values, decomposition edge cases, dtype rejections at import)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import ort_session

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.onnx_import import ConversionError, from_onnx

ort = pytest.importorskip("onnxruntime")

F16, F32, F64 = np.float16, np.float32, np.float64


def _model(op, inputs, opset, attrs, constants=(), out_type=None, n_outputs=1):
    """One-node model; ``inputs`` maps name -> array (graph inputs unless named in ``constants``)."""
    node = helper.make_node(op, list(inputs), [f"y{i}" for i in range(n_outputs)], **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items() if n and n not in constants]
    inits = [numpy_helper.from_array(inputs[n], n) for n in constants]
    outputs = [helper.make_tensor_value_info(f"y{i}", out_type or TensorProto.UNDEFINED, None)
               for i in range(n_outputs)]
    graph = helper.make_graph([node], op, graph_inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)  # types the outputs


def _run_ours(model, feeds):
    result = from_onnx(model)
    compilation = Compilation(result.model)
    compilation.build()
    names = [result.model.tensors[i].name for i in result.model.inputs]
    return Executor(compilation).run_arrays([np.asarray(feeds[n]) for n in names])


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
    model = _model(op, inputs, opset, attrs or {}, constants)
    feeds = {n: a for n, a in inputs.items() if n and n not in constants}
    expected = reference(model, feeds)
    actual = _run_ours(model, feeds)
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got.astype(F64), want.astype(F64), rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)


def rejects(op, inputs, reason, opset=17, attrs=None, constants=(), match=""):
    model = _model(op, inputs, opset, attrs or {}, constants)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    issue = info.value.issues[0]
    assert issue.reason == reason and match in issue.message, str(info.value)


def randn(rng, shape, dtype=F32, scale=2.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


SPECIAL = np.array([-np.inf, -30.0, -2.5, -1.0, -1e-6, -0.0, 0.0, 1e-6, 0.5, 1.0, 2.5, 30.0, np.inf, np.nan], F32)


# -- unary math and activations, several float dtypes ---------------------------------------------------------------

UNARY = [("Abs", 13, {}), ("Neg", 13, {}), ("Exp", 13, {}), ("Log", 13, {}), ("Sqrt", 13, {}), ("Reciprocal", 13, {}),
         ("Sin", 7, {}), ("Cos", 7, {}), ("Tan", 7, {}), ("Sinh", 9, {}), ("Cosh", 9, {}), ("Ceil", 13, {}),
         ("Floor", 13, {}), ("Round", 11, {}), ("Sign", 13, {}), ("Sigmoid", 13, {}), ("Tanh", 13, {}),
         ("Relu", 14, {}), ("LeakyRelu", 16, {"alpha": 0.3}), ("HardSigmoid", 6, {}),
         ("HardSigmoid", 6, {"alpha": 1 / 6, "beta": 0.5}), ("HardSwish", 14, {}), ("Elu", 6, {"alpha": 0.7}),
         ("Selu", 6, {}), ("Celu", 12, {"alpha": 2.0}), ("Softplus", 1, {}), ("Softsign", 1, {}), ("Mish", 18, {}),
         ("ThresholdedRelu", 10, {"alpha": 0.5}), ("Shrink", 9, {"lambd": 1.0, "bias": 0.5}),
         ("Gelu", 20, {}), ("Gelu", 20, {"approximate": "tanh"}), ("IsNaN", 13, {}), ("IsInf", 10, {}),
         ("IsInf", 10, {"detect_negative": 0}), ("IsInf", 10, {"detect_positive": 0}),
         ("IsInf", 10, {"detect_positive": 0, "detect_negative": 0}), ("Erf", 13, {})]


def _unary_id(case):
    op, _, attrs = case
    return op + "".join(f"-{k}={v:.3g}" if isinstance(v, float) else f"-{k}={v}" for k, v in attrs.items())


@pytest.mark.parametrize("dtype", [F32, F16, F64], ids=["float32", "float16", "float64"])
@pytest.mark.parametrize("case", UNARY, ids=[_unary_id(c) for c in UNARY])
def test_unary(rng, case, dtype):
    op, opset, attrs = case
    if op == "Erf" and dtype == F64:
        rejects(op, {"x": randn(rng, (2, 3), dtype)}, "unsupported_dtype", opset, attrs, match="float64")
        return
    if dtype == F16 and op in ("Round", "IsNaN", "IsInf", "Sign", "Shrink", "HardSigmoid", "Celu", "Selu", "Tan",
                               "Sinh", "Cosh", "Mish", "Softsign", "ThresholdedRelu", "Elu", "Softplus"):
        opset = max(opset, 13)
    if dtype != F32 and op in ("Celu", "IsInf"):
        opset = {"Celu": 28, "IsInf": 20}[op]  # the versions that take float16/float64
    x = np.concatenate([randn(rng, (30,)), SPECIAL]).astype(dtype).reshape(4, 11)
    if op in ("Log", "Sqrt"):
        x = np.abs(x)
    if op == "Sign" and dtype == F16:
        x = np.nan_to_num(x)  # onnxruntime's float16 Sign(NaN) is 0 (its float32 one and numpy's are NaN)
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype == F16 else {"rtol": 2e-5, "atol": 1e-6}
    check(op, {"x": x}, opset, attrs, **tol)


@pytest.mark.parametrize("op", ["Exp", "Log", "Sin", "Sigmoid", "Tanh", "Softplus", "Elu", "HardSigmoid", "Erf",
                                "LeakyRelu", "IsNaN", "Sinh"])
def test_float_only_ops_reject_integers_at_import(op):
    rejects(op, {"x": np.arange(6, dtype=np.int32).reshape(2, 3)}, "unsupported_dtype", 13, match="int32")


def test_neg_rejects_unsigned():
    rejects("Neg", {"x": np.arange(6, dtype=np.uint8)}, "unsupported_dtype", 13, match="uint8")


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("op", ["Abs", "Sign", "Neg", "Relu"])
def test_integer_unary(rng, op, dtype):
    if np.dtype(dtype).kind == "u" and op in ("Neg", "Relu"):
        pytest.skip("not an ONNX type of the op")
    x = rng.integers(-50 if np.dtype(dtype).kind == "i" else 0, 50, (3, 5)).astype(dtype)
    check(op, {"x": x}, 14)


def test_sinh_is_exact_near_zero():
    x = np.array([1e-7, -3e-6, 1e-4, 1e-3, 0.1], F32)
    (y,) = _run_ours(_model("Sinh", {"x": x}, 9, {}), {"x": x})
    np.testing.assert_allclose(y, np.sinh(x.astype(F64)), rtol=1e-6)


def test_softplus_keeps_tiny_values_and_does_not_overflow():
    x = np.array([-80.0, -20.0, -1e-3, 0.0, 20.0, 100.0, 1000.0], F32)
    (y,) = _run_ours(_model("Softplus", {"x": x}, 1, {}), {"x": x})
    np.testing.assert_allclose(y, np.logaddexp(0, x.astype(F64)), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, F32])
def test_shrink_integers(rng, dtype):
    x = rng.integers(0 if np.dtype(dtype).kind == "u" else -6, 7, (4, 6)).astype(dtype)
    check("Shrink", {"x": x}, 9, {"lambd": 1.5, "bias": 2.0})


def test_shrink_rejects_fractional_bias_on_integers():
    rejects("Shrink", {"x": np.arange(4, dtype=np.int32)}, "unsupported_attribute", 9, {"bias": 0.5}, match="bias")


def test_gelu_rejects_unknown_approximation():
    rejects("Gelu", {"x": np.zeros(3, F32)}, "unsupported_attribute", 20, {"approximate": "erf"}, match="approximate")


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_swish(rng, alpha):
    x = randn(rng, (3, 4))
    (y,) = _run_ours(_model("Swish", {"x": x}, 24, {"alpha": alpha}), {"x": x})
    x64 = x.astype(F64)
    np.testing.assert_allclose(y, x64 / (1 + np.exp(-alpha * x64)), rtol=1e-5, atol=1e-6)


# -- PRelu: NNRt PRELU (channel-last) where the slope allows, else WHERE(x < 0, x * slope, x) ----------------------

PRELU = [("nchw-channel", (2, 3, 4, 5), (3, 1, 1)), ("last-axis", (2, 4, 5), (5,)), ("scalar", (2, 3), (1,)),
         ("rank0", (2, 3), ()), ("same-shape", (2, 3, 4), (2, 3, 4)), ("middle-axis", (2, 3, 4), (3, 1)),
         ("rank1", (5,), (5,)), ("broadcast-2d", (2, 3, 4), (1, 4))]


@pytest.mark.parametrize("constant", [True, False], ids=["const-slope", "input-slope"])
@pytest.mark.parametrize("name,x_shape,slope_shape", PRELU, ids=[c[0] for c in PRELU])
def test_prelu(rng, name, x_shape, slope_shape, constant):
    inputs = {"x": randn(rng, x_shape), "slope": np.asarray(rng.random(slope_shape) + 0.1, F32)}
    check("PRelu", inputs, 16, constants=("slope",) if constant else ())


@pytest.mark.parametrize("dtype", [np.int32, np.int64, F64, F16])
def test_prelu_dtypes(rng, dtype):
    x = rng.integers(-9, 9, (2, 3, 4)).astype(dtype)
    slope = rng.integers(1, 4, (3, 1)).astype(dtype)
    check("PRelu", {"x": x, "slope": slope}, 16, constants=("slope",))


def test_prelu_channel_region_uses_nnrt_prelu(rng):
    model = _model("PRelu", {"x": randn(rng, (1, 3, 4, 4)), "s": np.ones((3, 1, 1), F32)}, 16, {}, constants=("s",))
    ops = {op.op.name for op in from_onnx(model).model.operations}
    assert "OH_NN_OPS_PRELU" in ops and "OH_NN_OPS_WHERE" not in ops


# -- Clip across opsets -------------------------------------------------------------------------------------------

def test_clip_attributes_opset6(rng):
    check("Clip", {"x": randn(rng, (3, 4))}, 6, {"min": -0.5, "max": 1.2})
    check("Clip", {"x": randn(rng, (3, 4))}, 6, {"max": 0.3})


@pytest.mark.parametrize("dtype", [F32, F16, F64, np.int8, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("bounds", ["both", "min", "max", "none", "inverted"])
@pytest.mark.parametrize("constant", [True, False], ids=["const", "input"])
def test_clip_inputs(rng, dtype, bounds, constant):
    unsigned = np.dtype(dtype).kind == "u"
    x = rng.integers(0, 255, (3, 5)).astype(dtype) if unsigned else randn(rng, (3, 5), F64, 50).astype(dtype)
    lo, hi = (10, 5 if unsigned else -3) if bounds == "inverted" else (3 if unsigned else -7, 20)
    names = ["x", "lo" if bounds in ("both", "min", "inverted") else "", "hi" if bounds in ("both", "max", "inverted")
             else ""]
    while names[-1] == "":
        names.pop()
    arrays = {"x": x, "lo": np.array(lo, dtype), "hi": np.array(hi, dtype)}
    consts = [n for n in names[1:] if n] if constant else []
    node = helper.make_node("Clip", names, ["y"])
    graph = helper.make_graph(
        [node], "clip",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), arrays[n].shape)
         for n in names if n and n not in consts],
        [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None)],
        initializer=[numpy_helper.from_array(arrays[n], n) for n in consts])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    feeds = {n: arrays[n] for n in names if n and n not in consts}
    (want,) = reference(model, feeds)
    (got,) = _run_ours(model, feeds)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# -- binary / n-ary -----------------------------------------------------------------------------------------------

POW = [(F32, F32), (F32, np.int64), (F32, np.int32), (F16, F32), (F64, F64), (np.int32, F32), (np.int64, F32),
       (np.int32, np.int32), (np.int64, np.int64), (np.int32, np.int64), (np.int64, np.int32)]


@pytest.mark.parametrize("tx,ty", POW, ids=[f"{np.dtype(a).name}^{np.dtype(b).name}" for a, b in POW])
def test_pow_types(rng, tx, ty):
    x = (rng.integers(1, 6, (3, 4)) if np.dtype(tx).kind in "iu" else rng.random((3, 4)) * 3 + 0.1).astype(tx)
    y = (rng.integers(0, 4, (4,)) if np.dtype(ty).kind in "iu" else rng.random((4,)) * 3).astype(ty)
    check("Pow", {"x": x, "y": y}, 15, rtol=2e-3 if F16 in (tx, ty) else 1e-5)


@pytest.mark.parametrize("dtype", [F32, F16, F64, np.int8, np.int32, np.int64, np.uint16, np.uint64])
@pytest.mark.parametrize("op", ["Max", "Min"])
def test_max_min_three_inputs_broadcast(rng, op, dtype):
    make = (lambda s: rng.integers(0, 100, s).astype(dtype)) if np.dtype(dtype).kind in "iu" else \
        (lambda s: randn(rng, s, dtype))
    check(op, {"a": make((2, 1, 4)), "b": make((3, 1)), "c": make((4,))}, 13)


def test_mean_three_inputs(rng):
    check("Mean", {"a": randn(rng, (2, 3, 4)), "b": randn(rng, (3, 1)), "c": randn(rng, (4,))}, 13)
    check("Mean", {"a": randn(rng, (2, 3), F64), "b": randn(rng, (2, 3), F64)}, 13)


def test_mean_rejects_integers():
    rejects("Mean", {"a": np.ones(3, np.int32), "b": np.ones(3, np.int32)}, "unsupported_dtype", 13)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32, F32, F64, F16])
def test_mod(rng, dtype, fmod):
    if np.dtype(dtype).kind == "f" and fmod == 0:
        x = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 4.0, -4.0, 3.0, -7.25], dtype)
        y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, -3.0, -2.0, 2.0, 7.0, 0.5], dtype)
        (got,) = _run_ours(_model("Mod", {"x": x, "y": y}, 13, {"fmod": 0}), {"x": x, "y": y})
        np.testing.assert_array_equal(got, np.mod(x, y))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(np.mod(x, y)))
        return
    if np.dtype(dtype).kind == "u":
        x, y = rng.integers(0, 100, (3, 4)).astype(dtype), rng.integers(1, 9, (4,)).astype(dtype)
    elif np.dtype(dtype).kind == "i":
        x = rng.integers(-100, 100, (3, 4)).astype(dtype)
        y = (rng.integers(1, 9, (4,)) * rng.choice([-1, 1], (4,))).astype(dtype)
    else:
        x, y = randn(rng, (3, 4), dtype, 10), (randn(rng, (4,), dtype) + 0.5).astype(dtype)
    check("Mod", {"x": x, "y": y}, 13, {"fmod": fmod}, rtol=1e-3 if dtype == F16 else 1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.int64])
@pytest.mark.parametrize("op", ["Div", "Add", "Sub", "Mul"])
def test_integer_arithmetic_broadcast(rng, op, dtype):
    kind = np.dtype(dtype).kind
    x = rng.integers(0 if kind == "u" else -50, 50, (2, 3, 4)).astype(dtype)
    y = rng.integers(1, 7, (3, 1)).astype(dtype)
    if kind == "i":
        y = (y * rng.choice([-1, 1], y.shape)).astype(dtype)
    check(op, {"x": x, "y": y}, 14)


@pytest.mark.parametrize("dtype", [F32, np.int32, np.uint8, np.int64, F16, np.bool_])
@pytest.mark.parametrize("op", ["Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"])
def test_comparisons(rng, op, dtype):
    if dtype == np.bool_ and op != "Equal":
        pytest.skip("not an ONNX type of the op")
    x = rng.integers(0, 3, (2, 3, 4)).astype(dtype)
    y = rng.integers(0, 3, (3, 1)).astype(dtype)
    check(op, {"x": x, "y": y}, 16)


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(rng, op):
    check(op, {"x": rng.random((2, 3, 4)) > 0.5, "y": rng.random((4,)) > 0.5}, 7)


def test_not(rng):
    check("Not", {"x": rng.random((2, 3)) > 0.5}, 1)


@pytest.mark.parametrize("dtype", [F32, np.int64, np.bool_, F16, np.uint8])
def test_where_broadcast(rng, dtype):
    c = rng.random((2, 1, 4)) > 0.5
    check("Where", {"c": c, "x": rng.integers(0, 9, (3, 1)).astype(dtype), "y": rng.integers(0, 9, (4,)).astype(dtype)},
          16)


# -- casts and expand ----------------------------------------------------------------------------------------------

CASTS = [(F32, TensorProto.INT32), (F32, TensorProto.INT8), (F32, TensorProto.BOOL), (F32, TensorProto.FLOAT16),
         (F64, TensorProto.FLOAT), (np.int64, TensorProto.INT8), (np.int32, TensorProto.FLOAT),
         (np.bool_, TensorProto.FLOAT), (np.int32, TensorProto.UINT8), (F32, TensorProto.FLOAT),
         (np.uint8, TensorProto.INT64), (F16, TensorProto.INT32)]


@pytest.mark.parametrize("opset", [6, 13, 21])
@pytest.mark.parametrize("src,to", CASTS, ids=[f"{np.dtype(s).name}->{TensorProto.DataType.Name(t)}" for s, t in CASTS])
def test_cast(rng, src, to, opset):
    if src == np.bool_:
        x = rng.random((3, 4)) > 0.5
    elif np.dtype(src).kind == "f":
        x = randn(rng, (3, 4), src, 40)
        if to == TensorProto.UINT8 or to == TensorProto.INT8:
            x = np.abs(x)
    else:
        x = rng.integers(0, 300, (3, 4)).astype(src) if np.dtype(src).kind == "u" else \
            rng.integers(-300, 300, (3, 4)).astype(src)
    check("Cast", {"x": x}, opset, {"to": to})


@pytest.mark.parametrize("to", [TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.STRING])
def test_cast_rejects_types_nnrt_has_not(to):
    rejects("Cast", {"x": np.zeros(3, F32)}, "unsupported_dtype", 21, {"to": to},
            match=TensorProto.DataType.Name(to))


def test_castlike(rng):
    check("CastLike", {"x": randn(rng, (3, 4), F32, 20), "like": np.zeros((2,), np.int16)}, 15, constants=("like",))
    check("CastLike", {"x": rng.integers(0, 9, (3,)).astype(np.int64), "like": np.zeros((1,), F16)}, 19,
          constants=("like",))


EXPAND = [((3, 1), (2, 1, 6)), ((3, 1), (3, 4)), ((1, 4), (3, 1)), ((2, 3), (3,)), ((2, 3), (1, 2, 1)), ((4,), (4,))]


@pytest.mark.parametrize("dtype", [F32, np.int64, np.bool_])
@pytest.mark.parametrize("x_shape,shape", EXPAND, ids=[f"{a}->{b}" for a, b in EXPAND])
def test_expand(rng, x_shape, shape, dtype):
    x = rng.integers(0, 5, x_shape).astype(dtype)
    check("Expand", {"x": x, "shape": np.asarray(shape, np.int64)}, 13, constants=("shape",))


def test_expand_needs_a_constant_shape():
    rejects("Expand", {"x": np.zeros((3, 1), F32), "shape": np.asarray([3, 4], np.int64)}, "needs_constant_input", 13)


def test_sum_is_checked_and_one_input_is_identity(rng):
    check("Sum", {"a": randn(rng, (2, 3)), "b": randn(rng, (3,)), "c": randn(rng, (2, 1))}, 13)
    check("Max", {"a": randn(rng, (2, 3))}, 13)


# -- every schema version from opset 7 on ----------------------------------------------------------------------------

_SWEEP_OPS = {  # op: (inputs, attrs); inputs by role: "f" float32, "p" positive float32, "i" int32, "b" bool
    "Abs": ("f", {}), "Neg": ("f", {}), "Exp": ("f", {}), "Log": ("p", {}), "Sqrt": ("p", {}), "Reciprocal": ("p", {}),
    "Sin": ("f", {}), "Cos": ("f", {}), "Tan": ("f", {}), "Sinh": ("f", {}), "Cosh": ("f", {}), "Erf": ("f", {}),
    "Ceil": ("f", {}), "Floor": ("f", {}), "Round": ("f", {}), "Sign": ("f", {}), "Relu": ("f", {}),
    "Sigmoid": ("f", {}), "Tanh": ("f", {}), "LeakyRelu": ("f", {}), "PRelu": ("ff", {}), "HardSigmoid": ("f", {}),
    "HardSwish": ("f", {}), "Elu": ("f", {}), "Selu": ("f", {}), "Celu": ("f", {}), "Softplus": ("f", {}),
    "Softsign": ("f", {}), "Mish": ("f", {}), "Gelu": ("f", {}), "ThresholdedRelu": ("f", {}), "Shrink": ("f", {}),
    "Clip": ("f", {}), "Pow": ("pf", {}), "Max": ("fff", {}), "Min": ("ff", {}), "Mean": ("fff", {}),
    "Sum": ("ff", {}), "Mod": ("ff", {"fmod": 1}), "Equal": ("ii", {}), "Greater": ("ff", {}),
    "GreaterOrEqual": ("ff", {}), "Less": ("ff", {}), "LessOrEqual": ("ff", {}), "Not": ("b", {}),
    "And": ("bb", {}), "Or": ("bb", {}), "Xor": ("bb", {}), "Where": ("bff", {}), "Cast": ("f", {"to": 6}),
    "CastLike": ("ff", {}), "IsNaN": ("f", {}), "IsInf": ("f", {}), "Add": ("ff", {}), "Sub": ("ff", {}),
    "Mul": ("ff", {}), "Div": ("fp", {}), "Swish": ("f", {}),
}


def _sweep_cases():
    from onnx import defs

    cases = []
    for op in _SWEEP_OPS:
        versions = sorted({s.since_version for s in defs.get_all_schemas_with_history()
                           if s.name == op and s.domain == ""})
        for since in versions:
            opset = max(since, 7)
            if since < 7 and any(v <= 7 for v in versions if v > since):
                continue  # superseded before opset 7
            cases.append((op, opset))
    return cases


@pytest.mark.parametrize("op,opset", _sweep_cases(), ids=[f"{op}-{v}" for op, v in _sweep_cases()])
def test_every_version(rng, op, opset):
    roles, attrs = _SWEEP_OPS[op]
    make = {"f": lambda: randn(rng, (2, 3)), "p": lambda: np.abs(randn(rng, (2, 3))) + 0.5,
            "b": lambda: rng.random((2, 3)) > 0.5, "i": lambda: rng.integers(-2, 3, (2, 3)).astype(np.int32)}
    inputs = {f"i{k}": make[r]() for k, r in enumerate(roles)}
    check(op, inputs, opset, attrs)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64])
def test_bitwise_not(rng, dtype):
    info = np.iinfo(dtype)
    x = np.concatenate([rng.integers(info.min, info.max, 10, dtype=dtype, endpoint=True),
                        np.array([info.min, info.max, 0], dtype)])
    (got,) = _run_ours(_model("BitwiseNot", {"x": x}, 18, {}), {"x": x})
    np.testing.assert_array_equal(got, np.invert(x))


def test_bitwise_not_rejects_bool():
    rejects("BitwiseNot", {"x": np.zeros(3, np.bool_)}, "unsupported_dtype", 18)
