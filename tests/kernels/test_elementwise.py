"""Element-wise family: broadcasting binary ops, unary math, activations, comparisons, logic, selection.

Every case runs the op end to end through ``nnrt_onnx.testing.run_op`` (model -> compilation -> executor), so the op
table's validation, defaults and the executor's fused activations are exercised. Expected values come from
onnxruntime on an equivalent single-node ONNX model (``onnx.reference`` where ORT has no kernel for the dtype) or from
float64 computations written out in the test for the NNRt-only ops (ELTWISE, SCALE, POW scale/shift, EXP
base/scale/shift, BIAS_ADD, SQUARED_DIFFERENCE) and the decided semantics (worked examples).
"""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from onnx import helper
from onnx.helper import np_dtype_to_tensor_dtype
from onnx.reference import ReferenceEvaluator
from support import ort_session

from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.errors import NNRtError
from nnrt_onnx.tensor import QuantParam
from nnrt_onnx.testing.single_op import run_op

# Tolerances per (output) dtype; integer and BOOL results must match exactly.
TOL = {
    np.dtype(np.float16): dict(rtol=1e-2, atol=1e-2),
    np.dtype(np.float32): dict(rtol=1e-5, atol=1e-6),
    np.dtype(np.float64): dict(rtol=1e-12, atol=1e-12),
}
OPSET = 21

F16, F32, F64 = np.float16, np.float32, np.float64
I8, I16, I32, I64, U8, U16, BOOL = np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.bool_
SHORT = {F16: "f16", F32: "f32", F64: "f64", I8: "i8", I16: "i16", I32: "i32", I64: "i64", U8: "u8", U16: "u16",
         BOOL: "bool"}


# -- harness ------------------------------------------------------------------------------------------------------

def run(op, inputs, params=None, **kwargs):
    """One NNRt op through the end-to-end harness; returns its single output."""
    (out,) = run_op(f"OH_NN_OPS_{op.upper()}", list(inputs), params or {}, **kwargs)
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


def nonzero(rng, shape, dtype, lo=-6, hi=6):
    x = rand(rng, shape, dtype, lo, hi)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return np.where(x == 0, np.asarray(1, dtype), x).astype(dtype)
    return np.where(np.abs(x) < 0.25, np.asarray(0.5, dtype), x).astype(dtype)


def fused(x, activation):
    return {0: x, 1: np.maximum(x, 0), 2: np.clip(x, 0, 6)}[activation].astype(x.dtype)


def check(out, expected, tol_dtype=None):
    """Exact for integers and BOOL; per-dtype tolerance for floats (``tol_dtype``: the compute dtype)."""
    expected = np.asarray(expected)
    assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
    assert out.shape == expected.shape, (out.shape, expected.shape)
    if np.issubdtype(expected.dtype, np.floating):
        np.testing.assert_allclose(out.astype(F64), expected.astype(F64), **TOL[np.dtype(tol_dtype or expected.dtype)])
    else:
        np.testing.assert_array_equal(out, expected)


# -- cases --------------------------------------------------------------------------------------------------------
# Each case: id -> builder(rng) returning (op, inputs, params, expected, run_op kwargs).

CASES: dict[str, object] = {}


def case(cid):
    def register(fn):
        assert cid not in CASES, cid
        CASES[cid] = fn
        return fn
    return register


def oracle_for(op_type, inputs, attrs=None, out_dtype=None):
    if any(a is not None and a.dtype == F16 for a in inputs):
        return via_f32(op_type, inputs, attrs, out_dtype if out_dtype is not None else F16)
    return onnx_ref(op_type, inputs, attrs, out_dtype)


# Broadcasting binary arithmetic against the ONNX op of the same meaning.
BINARY = {
    "add": ("Add", {}), "sub": ("Sub", {}), "mul": ("Mul", {}), "div": ("Div", {}),
    "maximum": ("Max", {}), "minimum": ("Min", {}), "mod": ("Mod", {"fmod": 1}),
}
SHAPES = {"same": ((2, 3, 4), (2, 3, 4)), "broadcast": ((2, 3, 4), (3, 1)), "scalar": ((2, 5), ())}
BINARY_DTYPES = {"add": [F32, F16, F64, I8, I16, I32, I64, U8],
                 "sub": [F32, F16, I8, I32, I64, U8], "mul": [F32, F16, I8, I32, I64, U8],
                 "div": [F32, F16, F64, I8, I32, I64, U8], "maximum": [F32, F16, I8, I32, I64, U8],
                 "minimum": [F32, F16, I8, I32, I64, U8], "mod": [F32, F16, I8, I32, I64]}


def _binary_case(op, shape_name, dtype):
    op_type, attrs = BINARY[op]
    sa, sb = SHAPES[shape_name]

    def build(rng):
        a = rand(rng, sa, dtype, -20, 20) if op != "mul" else rand(rng, sa, dtype, -9, 9)
        b = nonzero(rng, sb, dtype) if op in ("div", "mod") else rand(rng, sb, dtype, -20, 20)
        if dtype == U8:
            a = rand(rng, sa, dtype, 0, 255) if op in ("add", "sub", "maximum", "minimum") else rand(rng, sa, dtype, 0, 30)
            b = rand(rng, sb, dtype, 1, 255 if op != "mul" else 15)
        return op, [a, b], {}, oracle_for(op_type, [a, b], attrs), {}
    return build


for _op, _dtypes in BINARY_DTYPES.items():
    for _dt in _dtypes:
        for _shape in (("same", "broadcast", "scalar") if _dt in (F32, I32) else ("broadcast",)):
            CASES[f"{_op}-{_shape}-{SHORT[_dt]}"] = _binary_case(_op, _shape, _dt)


@case("add-relu")
def _(rng):
    a, b = rand(rng, (2, 3, 4), F32), rand(rng, (4,), F32)
    return "add", [a, b], {"OH_NN_ADD_ACTIVATIONTYPE": 1}, fused(onnx_ref("Add", [a, b]), 1), {}


@case("add-relu6-i32")
def _(rng):
    a, b = rand(rng, (3, 5), I32, -10, 10), rand(rng, (3, 5), I32, -10, 10)
    return "add", [a, b], {"OH_NN_ADD_ACTIVATIONTYPE": 2}, fused(onnx_ref("Add", [a, b]), 2), {}


@case("sub-relu6")
def _(rng):
    a, b = rand(rng, (2, 3, 4), F32, -8, 8), rand(rng, (3, 1), F32)
    return "sub", [a, b], {"OH_NN_SUB_ACTIVATIONTYPE": 2}, fused(onnx_ref("Sub", [a, b]), 2), {}


@case("mul-relu6-f16")
def _(rng):
    a, b = rand(rng, (4, 6), F16), rand(rng, (6,), F16)
    return "mul", [a, b], {"OH_NN_MUL_ACTIVATION_TYPE": 2}, fused(via_f32("Mul", [a, b]), 2), {}


@case("div-relu")
def _(rng):
    a, b = rand(rng, (2, 3, 4), F32), nonzero(rng, (2, 1, 4), F32)
    return "div", [a, b], {"OH_NN_DIV_ACTIVATIONTYPE": 1}, fused(onnx_ref("Div", [a, b]), 1), {}


@case("add-enablefloat16-relu")
def _(rng):  # EnableFloat16: float32 model, float16 compute, float32 IO
    a, b = rand(rng, (3, 4), F32), rand(rng, (4,), F32)
    return "add", [a, b], {"OH_NN_ADD_ACTIVATIONTYPE": 1}, fused(onnx_ref("Add", [a, b]), 1), {"float16": True}


@case("add-mixed-i32-f32")
def _(rng):  # "the data type is the same as that of the input with a higher precision"
    a, b = rand(rng, (2, 3), I32, -9, 9), rand(rng, (3,), F32)
    return "add", [a, b], {}, onnx_ref("Add", [a.astype(F32), b]), {}


@case("add-mixed-f16-f32")
def _(rng):
    a, b = rand(rng, (2, 3), F16), rand(rng, (2, 3), F32)
    return "add", [a, b], {}, onnx_ref("Add", [a.astype(F32), b]), {}


@case("add-i8-wrap")
def _(rng):
    a, b = np.array([127, -128, 100], I8), np.array([1, -1, 100], I8)
    return "add", [a, b], {}, np.array([-128, 127, -56], I8), {}


@case("div-trunc-i32")
def _(rng):  # integer DIV truncates toward zero (C, nnacl, ONNX Div)
    a, b = np.array([-7, 7, -7, 7, 6, -1], I32), np.array([2, -2, -2, 2, 3, 2], I32)
    return "div", [a, b], {}, np.array([-3, -3, 3, 3, 2, 0], I32), {}


@case("div-trunc-i64-oracle")
def _(rng):
    a, b = rand(rng, (50,), I64, -1000, 1000), nonzero(rng, (50,), I64, -17, 17)
    return "div", [a, b], {}, onnx_ref("Div", [a, b]), {}


@case("mod-fmod-i32")
def _(rng):  # C remainder: the sign of the dividend (nnacl ElementMod = fmod)
    a, b = np.array([-7, 7, -7, 7, 6], I32), np.array([3, -3, -3, 3, 3], I32)
    return "mod", [a, b], {}, np.array([-1, 1, -1, 1, 0], I32), {}


@case("mod-fmod-f32")
def _(rng):
    a, b = np.array([-7.5, 7.5, -7.5, 7.5], F32), np.array([2, -2, -2, 2], F32)
    return "mod", [a, b], {}, np.array([-1.5, 1.5, -1.5, 1.5], F32), {}


@case("maximum-bool-i32")
def _(rng):  # one BOOL operand is promoted to the other's type
    a, b = rand(rng, (2, 4), BOOL), rand(rng, (2, 4), I32, -2, 2)
    return "maximum", [a, b], {}, onnx_ref("Max", [a.astype(I32), b]), {}


# ELTWISE: PROD / SUM / MAXIMUM.
for _mode, (_name, _onnx) in enumerate((("prod", "Mul"), ("sum", "Add"), ("maximum", "Max"))):
    for _dt in (F32, F16, I32):
        def _eltwise(rng, mode=_mode, onnx_op=_onnx, dt=_dt):
            a, b = rand(rng, (2, 3, 4), dt), rand(rng, (2, 3, 4), dt)
            return "eltwise", [a, b], {"OH_NN_ELTWISE_MODE": mode}, oracle_for(onnx_op, [a, b]), {}
        CASES[f"eltwise-{_name}-{SHORT[_dt]}"] = _eltwise


@case("eltwise-default-prod")
def _(rng):
    a, b = rand(rng, (3, 4), F32), rand(rng, (3, 4), F32)
    return "eltwise", [a, b], {}, (a.astype(F64) * b).astype(F32), {}


# POW: (scale * x + shift) ^ y.
@case("pow-default-f32")
def _(rng):
    a, y = rand(rng, (2, 3, 4), F32, 0.1, 3), rand(rng, (2, 3, 4), F32, -2, 2)
    return "pow", [a, y], {}, onnx_ref("Pow", [a, y]), {}


@case("pow-broadcast-scalar-exp")
def _(rng):
    a, y = rand(rng, (2, 3, 4), F32, -3, 3), np.array(3.0, F32)
    return "pow", [a, y], {}, onnx_ref("Pow", [a, y]), {}


@case("pow-scale-shift")
def _(rng):
    a, y = rand(rng, (2, 3, 4), F32, 0, 2), rand(rng, (4,), F32, -2, 2)
    base = (a.astype(F64) * 1.5 + 0.25).astype(F32)
    return "pow", [a, y], {"OH_NN_POW_SCALE": 1.5, "OH_NN_POW_SHIFT": 0.25}, onnx_ref("Pow", [base, y]), {}


@case("pow-scale-shift-worked")
def _(rng):
    a, y = np.array([0.0, 1.0, 2.0], F32), np.array(2.0, F32)
    return "pow", [a, y], {"OH_NN_POW_SCALE": 2.0, "OH_NN_POW_SHIFT": 1.0}, np.array([1.0, 9.0, 25.0], F32), {}


@case("pow-scale-shift-f16")
def _(rng):
    a, y = rand(rng, (3, 4), F16, 0, 2), rand(rng, (3, 4), F16, -1, 2)
    base = (a.astype(F32) * 0.5 + 1.0).astype(F16)
    return "pow", [a, y], {"OH_NN_POW_SCALE": 0.5, "OH_NN_POW_SHIFT": 1.0}, via_f32("Pow", [base, y]), {}


@case("pow-i32")
def _(rng):
    a, y = rand(rng, (3, 4), I32, -5, 5), rand(rng, (3, 4), I32, 0, 4)
    return "pow", [a, y], {}, onnx_ref("Pow", [a, y]), {}


# SQUARED_DIFFERENCE: (a - b)^2.
for _dt in (F32, F16, I32):
    def _sqdiff(rng, dt=_dt):
        a, b = rand(rng, (2, 3, 4), dt), rand(rng, (3, 1), dt)
        expected = np.square(a.astype(F64) - b.astype(F64)).astype(dt)
        return "squared_difference", [a, b], {}, expected, {}
    CASES[f"squared_difference-broadcast-{SHORT[_dt]}"] = _sqdiff


@case("squared_difference-bool")
def _(rng):
    a, b = rand(rng, (3, 4), BOOL), rand(rng, (3, 4), BOOL)
    return "squared_difference", [a, b], {}, np.square(a.astype(I32) - b.astype(I32)).astype(BOOL), {}


# BIAS_ADD: bias along the last (channel) axis.
for _rank in (2, 4, 5):
    for _dt in (F32, F16, I32):
        def _bias_add(rng, rank=_rank, dt=_dt):
            shape = (2, 3, 4, 5, 6)[:rank]
            x, bias = rand(rng, shape, dt), rand(rng, (shape[-1],), dt)
            return "bias_add", [x, bias], {}, oracle_for("Add", [x, bias]), {}
        CASES[f"bias_add-rank{_rank}-{SHORT[_dt]}"] = _bias_add


# SCALE: input * scale + bias, scale/bias spanning dims [axis, axis + scale.ndim).
def _scale_expected(x, s, b, axis):
    axis %= x.ndim
    shape = s.shape + (1,) * (x.ndim - axis - s.ndim)
    return (x.astype(F64) * s.astype(F64).reshape(shape) + b.astype(F64).reshape(shape)).astype(x.dtype)


for _cid, (_shape, _sshape, _axis, _dt, _act) in {
    "scale-axis1": ((2, 3, 4, 5), (3,), 1, F32, 0),
    "scale-axis1-2d": ((2, 3, 4, 5), (3, 4), 1, F32, 0),
    "scale-axis-last": ((2, 3, 4, 5), (5,), -1, F32, 0),
    "scale-axis0": ((4, 3), (4,), 0, F32, 0),
    "scale-axis2-f16": ((2, 3, 4, 5), (4, 5), 2, F16, 0),
    "scale-axis3-i32": ((2, 3, 4, 5), (5,), 3, I32, 0),
    "scale-relu6": ((2, 3, 4, 5), (3,), 1, F32, 2),
    "scale-relu": ((2, 3, 4), (3, 4), -2, F32, 1),
}.items():
    def _scale(rng, shape=_shape, sshape=_sshape, axis=_axis, dt=_dt, act=_act):
        x, s, b = rand(rng, shape, dt, -5, 5), rand(rng, sshape, dt, -3, 3), rand(rng, sshape, dt, -3, 3)
        params = {"OH_NN_SCALE_AXIS": axis}
        if act:
            params["OH_NN_SCALE_ACTIVATIONTYPE"] = act
        return "scale", [x, s, b], params, fused(_scale_expected(x, s, b, axis), act), {}
    CASES[_cid] = _scale


@case("scale-enablefloat16-constant-weights")
def _(rng):  # scale/bias baked into the model as constants, EnableFloat16 compute
    x, s, b = rand(rng, (2, 3, 4), F32), rand(rng, (3,), F32), rand(rng, (3,), F32)
    return ("scale", [x, s, b], {"OH_NN_SCALE_AXIS": 1}, _scale_expected(x, s, b, 1),
            {"float16": True, "constant_inputs": [1, 2]})


# Unary math and activations against ONNX.
def _pos(rng, shape, dt):
    return rand(rng, shape, dt, 0.05, 6)


UNARY = {
    # op: (onnx op, attrs, input maker, dtypes)
    "abs": ("Abs", {}, rand, [F32, F16, F64, I8, I32, I64, U8]),
    "neg": ("Neg", {}, rand, [F32, F16, I8, I32, I64]),
    "exp": ("Exp", {}, rand, [F32, F16, F64]),
    "log": ("Log", {}, _pos, [F32, F16, F64]),
    "sqrt": ("Sqrt", {}, _pos, [F32, F16, F64]),
    "reciprocal": ("Reciprocal", {}, nonzero, [F32, F16, F64]),
    "sin": ("Sin", {}, rand, [F32, F16, F64]),
    "cos": ("Cos", {}, rand, [F32, F16, F64]),
    "erf": ("Erf", {}, rand, [F32, F16]),
    "ceil": ("Ceil", {}, rand, [F32, F16, F64]),
    "floor": ("Floor", {}, rand, [F32, F16, F64]),
    "round": ("Round", {}, rand, [F32, F16, F64]),
    "relu": ("Relu", {}, rand, [F32, F16, F64, I8, I32, I64]),
    "sigmoid": ("Sigmoid", {}, lambda rng, s, d: rand(rng, s, d, -12, 12), [F32, F16, F64]),
    "tanh": ("Tanh", {}, rand, [F32, F16, F64]),
    # float64 of these three: the ONNX oracles compute in float32 (float attributes), see the *-f64 cases below
    "hswish": ("HardSwish", {}, lambda rng, s, d: rand(rng, s, d, -5, 5), [F32, F16]),
    "hard_sigmoid": ("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}, lambda rng, s, d: rand(rng, s, d, -5, 5),
                     [F32, F16]),
    "gelu": ("Gelu", {}, rand, [F32, F16]),
}

for _op, (_onnx, _attrs, _make, _dtypes) in UNARY.items():
    for _dt in _dtypes:
        def _unary(rng, op=_op, onnx_op=_onnx, attrs=_attrs, make=_make, dt=_dt):
            x = make(rng, (2, 3, 4, 5), dt)
            return op, [x], {}, oracle_for(onnx_op, [x], attrs), {}
        CASES[f"{_op}-{SHORT[_dt]}"] = _unary


F64_BY_HAND = {
    "hswish-f64": ("hswish", lambda v: v * min(max(v + 3, 0.0), 6.0) / 6),
    "hard_sigmoid-f64": ("hard_sigmoid", lambda v: min(max(v / 6 + 0.5, 0.0), 1.0)),
    "gelu-f64": ("gelu", lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2)))),
}
for _cid, (_op, _fn) in F64_BY_HAND.items():
    def _by_hand(rng, op=_op, fn=_fn):
        x = rand(rng, (4, 5), F64, -6, 6)
        return op, [x], {}, np.array([fn(v) for v in x.ravel()]).reshape(x.shape), {}
    CASES[_cid] = _by_hand


@case("sigmoid-enablefloat16")
def _(rng):
    x = rand(rng, (3, 7), F32, -8, 8)
    return "sigmoid", [x], {}, onnx_ref("Sigmoid", [x]), {"float16": True}


@case("exp-large-magnitudes")
def _(rng):
    x = np.array([-100.0, -20.0, 0.0, 20.0, 80.0], F32)
    return "exp", [x], {}, onnx_ref("Exp", [x]), {}


@case("sigmoid-saturation")
def _(rng):
    x = np.array([-1000.0, -50.0, -1e-3, 0.0, 1e-3, 50.0, 1000.0], F32)
    return "sigmoid", [x], {}, onnx_ref("Sigmoid", [x]), {}


@case("erf-extremes")
def _(rng):
    x = np.array([-10.0, -3.0, -1.999, -2.0, -1e-6, 0.0, 1e-30, 0.5, 2.0, 2.001, 5.0, np.inf, -np.inf], F32)
    return "erf", [x], {}, np.array([math.erf(v) for v in x.astype(F64)]).astype(F32), {}


@case("round-half-to-even")
def _(rng):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, 2.51], F32)
    return "round", [x], {}, np.array([0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0, 3.0], F32), {}


@case("rsqrt-f32")
def _(rng):
    x = _pos(rng, (2, 3, 4), F32)
    return "rsqrt", [x], {}, (1.0 / np.sqrt(x.astype(F64))).astype(F32), {}


@case("rsqrt-f16")
def _(rng):
    x = _pos(rng, (2, 3, 4), F16)
    return "rsqrt", [x], {}, (1.0 / np.sqrt(x.astype(F64))).astype(F16), {}


for _dt in (F32, F16, I8, I32, I64, U8):
    def _square(rng, dt=_dt):
        x = rand(rng, (3, 4, 5), dt, -11, 11)
        return "square", [x], {}, oracle_for("Mul", [x, x]), {}
    CASES[f"square-{SHORT[_dt]}"] = _square


for _dt in (F32, F16, F64, I8, I32, U8):
    def _relu6(rng, dt=_dt):
        x = rand(rng, (3, 4, 5), dt, -10, 10) if dt != U8 else rand(rng, (3, 4, 5), dt, 0, 20)
        lo, hi = np.array(0, dt), np.array(6, dt)
        return "relu6", [x], {}, oracle_for("Clip", [x, lo, hi]), {}
    CASES[f"relu6-{SHORT[_dt]}"] = _relu6


for _dt in (F32, F16, F64):
    def _swish(rng, dt=_dt):
        x = rand(rng, (3, 4, 5), dt, -8, 8).astype(dt)
        x64 = x.astype(F64)
        return "swish", [x], {}, (x64 / (1 + np.exp(-x64))).astype(dt), {}
    CASES[f"swish-{SHORT[_dt]}"] = _swish


@case("hard_sigmoid-worked")
def _(rng):  # relu6(x + 3) / 6 (nnacl HSigmoid)
    x = np.array([-4.0, -3.0, 0.0, 1.5, 3.0, 4.0], F32)
    return "hard_sigmoid", [x], {}, np.array([0.0, 0.0, 0.5, 0.75, 1.0, 1.0], F32), {}


@case("hswish-worked")
def _(rng):
    x = np.array([-4.0, -3.0, -1.5, 0.0, 1.5, 3.0, 4.0], F32)
    return "hswish", [x], {}, np.array([0.0, 0.0, -0.375, 0.0, 1.125, 3.0, 4.0], F32), {}


for _approx in (False, True):
    for _dt in (F32, F16):
        def _gelu(rng, approx=_approx, dt=_dt):
            x = rand(rng, (3, 4, 5), dt, -5, 5)
            attrs = {"approximate": "tanh" if approx else "none"}
            return "gelu", [x], {"OH_NN_GELU_APPROXIMATE": approx}, oracle_for("Gelu", [x], attrs), {}
        CASES[f"gelu-{'tanh' if _approx else 'erf'}-{SHORT[_dt]}"] = _gelu


for _slope in (0.01, 0.2, -0.5):
    for _dt in (F32, F16):
        def _leaky(rng, slope=_slope, dt=_dt):
            x = rand(rng, (3, 4, 5), dt)
            params = {"OH_NN_LEAKY_RELU_NEGATIVE_SLOPE": slope}
            return "leaky_relu", [x], params, oracle_for("LeakyRelu", [x], {"alpha": slope}), {}
        CASES[f"leaky_relu-slope{_slope}-{SHORT[_dt]}"] = _leaky


@case("leaky_relu-default-slope")
def _(rng):  # the builder's default negativeSlope is 0.0
    x = rand(rng, (3, 4), F32)
    return "leaky_relu", [x], {}, onnx_ref("Relu", [x]), {}


# PRELU: slope per channel, channel = last (NHWC) axis.
for _cid, (_shape, _wlen, _dt) in {
    "prelu-nhwc": ((2, 3, 4, 5), 5, F32), "prelu-shared": ((2, 3, 4, 5), 1, F32),
    "prelu-2d": ((6, 4), 4, F32), "prelu-f16": ((2, 3, 3, 8), 8, F16), "prelu-rank1": ((7,), 1, F32),
}.items():
    def _prelu(rng, shape=_shape, wlen=_wlen, dt=_dt):
        x, w = rand(rng, shape, dt), rand(rng, (wlen,), dt, -1, 1)
        return "prelu", [x, w], {}, oracle_for("PRelu", [x, w]), {}
    CASES[_cid] = _prelu


# CLIP.
for _cid, (_lo, _hi, _dt) in {
    "clip-f32": (-1.5, 2.25, F32), "clip-f16": (-1.0, 0.5, F16), "clip-f64": (0.0, 3.0, F64),
    "clip-i32": (-3.0, 5.0, I32), "clip-i8-fractional": (-2.5, 3.5, I8), "clip-u8": (2.0, 9.0, U8),
    "clip-min-gt-max": (2.0, -1.0, F32),
}.items():
    def _clip(rng, lo=_lo, hi=_hi, dt=_dt):
        x = rand(rng, (3, 4, 5), dt, -10, 10) if dt != U8 else rand(rng, (3, 4, 5), dt, 0, 20)
        if np.issubdtype(np.dtype(dt), np.integer):  # the integers within [lo, hi]
            bounds = [np.array(math.ceil(lo), dt), np.array(math.floor(hi), dt)]
        else:
            bounds = [np.array(lo, dt), np.array(hi, dt)]
        return ("clip", [x], {"OH_NN_CLIP_MIN": lo, "OH_NN_CLIP_MAX": hi},
                oracle_for("Clip", [x] + bounds), {})
    CASES[_cid] = _clip


@case("clip-only-min")
def _(rng):  # an omitted bound is unbounded (the builder sends 0.0: docs/deviations.md)
    x = rand(rng, (3, 4), F32)
    return "clip", [x], {"OH_NN_CLIP_MIN": -1.0}, np.maximum(x, -1.0), {}


@case("clip-defaults-unbounded")
def _(rng):
    x = rand(rng, (3, 4), F32)
    return "clip", [x], {}, x.copy(), {}


# EXP: base ^ (shift + scale * x); base -1 means e.
for _cid, (_base, _scale, _shift, _dt) in {
    "exp-scale-shift": (-1.0, 0.5, 1.0, F32), "exp-base2": (2.0, 1.0, 0.0, F32),
    "exp-base10-scale-shift": (10.0, -0.5, 0.25, F32), "exp-base-half-f16": (0.5, 2.0, -1.0, F16),
}.items():
    def _exp(rng, base=_base, scale=_scale, shift=_shift, dt=_dt):
        x = rand(rng, (3, 4, 5), dt, -3, 3)
        t = (shift + scale * x.astype(F64))
        b = math.e if base == -1.0 else base
        expected = onnx_ref("Pow", [np.full(x.shape, b), t]).astype(dt)
        return "exp", [x], {"OH_NN_EXP_BASE": base, "OH_NN_EXP_SCALE": scale, "OH_NN_EXP_SHIFT": shift}, expected, {}
    CASES[_cid] = _exp


@case("exp-base2-worked")
def _(rng):
    x = np.array([0.0, 2.0, 4.0], F32)
    params = {"OH_NN_EXP_BASE": 2.0, "OH_NN_EXP_SCALE": 0.5, "OH_NN_EXP_SHIFT": 1.0}
    return "exp", [x], params, np.array([2.0, 4.0, 8.0], F32), {}


# Comparisons: numbers and BOOL in, BOOL out.
COMPARE = {"equal": "Equal", "not_equal": "Equal", "less": "Less", "less_equal": "LessOrEqual",
           "greater": "Greater", "greater_equal": "GreaterOrEqual"}
for _op, _onnx in COMPARE.items():
    for _dt in (F32, F16, F64, I8, I32, I64, U8, BOOL):
        for _shape in (("same", "broadcast") if _dt in (F32, I32) else ("broadcast",)):
            def _compare(rng, op=_op, onnx_op=_onnx, dt=_dt, shape=_shape):
                sa, sb = SHAPES[shape]
                a, b = rand(rng, sa, dt, -3, 3), rand(rng, sb, dt, -3, 3)
                if dt == BOOL:  # ONNX Less/Greater have no BOOL: compare as integers
                    expected = onnx_ref(onnx_op, [a.astype(I32), b.astype(I32)], out_dtype=BOOL)
                else:
                    expected = onnx_ref(onnx_op, [a, b], out_dtype=BOOL)
                if op == "not_equal":
                    expected = ~expected
                return op, [a, b], {}, expected, {}
            CASES[f"{_op}-{_shape}-{SHORT[_dt]}"] = _compare


@case("less-mixed-i32-f32")
def _(rng):
    a, b = rand(rng, (3, 4), I32, -3, 3), rand(rng, (4,), F32, -3, 3)
    return "less", [a, b], {}, onnx_ref("Less", [a.astype(F64), b.astype(F64)], out_dtype=BOOL), {}


# Logic: BOOL, or numbers converted implicitly (non-zero is true).
for _op, _onnx in (("logical_and", "And"), ("logical_or", "Or")):
    for _dt in (BOOL, I32, F32):
        def _logic(rng, op=_op, onnx_op=_onnx, dt=_dt):
            a, b = rand(rng, (2, 3, 4), dt, -1, 1), rand(rng, (3, 4), dt, -1, 1)
            return op, [a, b], {}, onnx_ref(onnx_op, [a != 0, b != 0]), {}
        CASES[f"{_op}-{SHORT[_dt]}"] = _logic

for _dt in (BOOL, I8, F32):
    def _logic_not(rng, dt=_dt):
        x = rand(rng, (2, 3, 4), dt, -1, 1)
        return "logical_not", [x], {}, onnx_ref("Not", [x != 0]), {}
    CASES[f"logical_not-{SHORT[_dt]}"] = _logic_not


# SELECT / WHERE.
for _op in ("select", "where"):
    for _dt in (F32, F16, I32, BOOL):
        def _sel(rng, op=_op, dt=_dt):
            c, a, b = rand(rng, (2, 3, 4), BOOL), rand(rng, (2, 3, 4), dt), rand(rng, (2, 3, 4), dt)
            return op, [c, a, b], {}, onnx_ref("Where", [c, a, b]), {}
        CASES[f"{_op}-same-{SHORT[_dt]}"] = _sel


@case("where-broadcast")
def _(rng):
    c, a, b = rand(rng, (3, 1), BOOL), rand(rng, (2, 3, 4), F32), rand(rng, (4,), F32)
    return "where", [c, a, b], {}, onnx_ref("Where", [c, a, b]), {}


@case("where-scalar-condition")
def _(rng):
    c, a, b = np.array(False), rand(rng, (2, 3), I64), rand(rng, (2, 3), I64)
    return "where", [c, a, b], {}, onnx_ref("Where", [c, a, b]), {}


@case("select-rank1-condition-rows")
def _(rng):  # a rank-1 condition chooses whole rows along the first dimension
    c, a, b = np.array([True, False, True]), rand(rng, (3, 3, 2), F32), rand(rng, (3, 3, 2), F32)
    return "select", [c, a, b], {}, onnx_ref("Where", [c.reshape(3, 1, 1), a, b]), {}


# -- the test -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cid", list(CASES), ids=list(CASES))
def test_elementwise(cid):
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    op, inputs, params, expected, kwargs = CASES[cid](rng)
    out = run(op, inputs, params, **kwargs)
    check(out, expected, F16 if kwargs.get("float16") else None)


# -- quantized: the executor dequantizes around the kernel ---------------------------------------------------------

def _quantize(real, dtype, scale, zero):
    info = np.iinfo(dtype)
    return np.clip(np.rint(np.asarray(real, F64) / scale + zero), info.min, info.max).astype(dtype)


def _dequantize(q, scale, zero):
    return ((q.astype(F64) - zero) * scale).astype(F32)


QUANT_CASES = {
    "add-quant-i8": ("add", "Add", 2, {}),
    "mul-quant-u8": ("mul", "Mul", 2, {}),
    "maximum-quant-i8": ("maximum", "Max", 2, {}),
    "sigmoid-quant-u8": ("sigmoid", "Sigmoid", 1, {}),
    "relu6-quant-i8": ("relu6", None, 1, {}),
    "tanh-quant-i8": ("tanh", "Tanh", 1, {}),
}


@pytest.mark.parametrize("cid", list(QUANT_CASES), ids=list(QUANT_CASES))
def test_elementwise_quantized(cid):
    op, onnx_op, n_in, params = QUANT_CASES[cid]
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    dtype = I8 if cid.endswith("i8") else U8
    zero = 3 if dtype == I8 else 128
    scale_in, scale_out, zero_out = 0.05, 0.04, (0 if dtype == I8 else 100)
    info = np.iinfo(dtype)
    qs = [rng.integers(info.min, info.max + 1, size=(2, 3, 4)).astype(dtype) for _ in range(n_in)]
    reals = [_dequantize(q, scale_in, zero) for q in qs]
    expected_real = onnx_ref(onnx_op, reals) if onnx_op else np.clip(reals[0], 0, 6)
    expected = _quantize(expected_real, dtype, scale_out, zero_out)
    out = run(op, qs, params, input_quant={i: QuantParam([scale_in], [zero], [8]) for i in range(n_in)},
              output_quant={0: QuantParam([scale_out], [zero_out], [8])}, output_dtypes=[dtype])
    assert out.dtype == dtype
    assert np.max(np.abs(out.astype(np.int32) - expected.astype(np.int32))) <= 1


@pytest.mark.parametrize("cid", ["less-quant-i8", "equal-quant-u8"])
def test_compare_quantized_inputs(cid):
    """Quantized inputs compare by their real values; the BOOL output carries no data of its own."""
    op = cid.split("-")[0]
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    dtype = I8 if cid.endswith("i8") else U8
    lo = -60 if dtype == I8 else 0
    qa = rng.integers(lo, 61, size=(3, 4)).astype(dtype)
    qb = (qa.astype(np.int32) * 2).astype(dtype)  # input 2 holds the same real values at half the step ...
    qb[0] = rng.integers(2 * lo, 121, size=4).astype(dtype)  # ... except in row 0
    quant = {0: QuantParam([0.1], [0], [8]), 1: QuantParam([0.05], [0], [8])}
    reals = [_dequantize(qa, 0.1, 0), _dequantize(qb, 0.05, 0)]
    expected = onnx_ref({"less": "Less", "equal": "Equal"}[op], reals, out_dtype=BOOL)
    out = run(op, [qa, qb], {}, input_quant=quant)
    check(out, expected)


# -- errors ------------------------------------------------------------------------------------------------------

U = RC.OH_NN_UNSUPPORTED
INV = RC.OH_NN_INVALID_PARAMETER
f32 = lambda *s: np.ones(s, F32)  # noqa: E731

ERRORS = {
    "add-bool": ("add", [np.ones(3, BOOL), np.ones(3, BOOL)], {}, U),
    "mul-bool": ("mul", [np.ones(3, BOOL), np.ones(3, BOOL)], {}, U),
    "add-shapes-not-broadcastable": ("add", [f32(2, 3), f32(4)], {}, INV),
    "div-int-by-zero": ("div", [np.array([1, 2], I32), np.array([1, 0], I32)], {}, INV),
    "mod-int-by-zero": ("mod", [np.array([1, 2], I32), np.array([0, 1], I32)], {}, INV),
    "mod-both-bool": ("mod", [np.ones(3, BOOL), np.ones(3, BOOL)], {}, U),
    "maximum-both-bool": ("maximum", [np.ones(3, BOOL), np.ones(3, BOOL)], {}, U),
    "minimum-both-bool": ("minimum", [np.ones(3, BOOL), np.ones(3, BOOL)], {}, U),
    "eltwise-mode-unknown": ("eltwise", [f32(2, 3), f32(2, 3)], {"OH_NN_ELTWISE_MODE": 3}, INV),
    "pow-i32-scale": ("pow", [np.ones(3, I32), np.ones(3, I32)], {"OH_NN_POW_SCALE": 2.0}, U),
    "pow-i32-negative-exponent": ("pow", [np.ones(3, I32), np.array([1, -1, 2], I32)], {}, INV),
    "bias_add-wrong-length": ("bias_add", [f32(2, 3, 4), f32(3)], {}, INV),
    "bias_add-2d-bias": ("bias_add", [f32(2, 3, 4), f32(1, 4)], {}, INV),
    "scale-shape-mismatch": ("scale", [f32(2, 3, 4), f32(4), f32(4)], {"OH_NN_SCALE_AXIS": 1}, INV),
    "scale-axis-out-of-range": ("scale", [f32(2, 3), f32(3), f32(3)], {"OH_NN_SCALE_AXIS": 2}, INV),
    "scale-dtype-mismatch": ("scale", [f32(2, 3), np.ones(3, I32), f32(3)], {"OH_NN_SCALE_AXIS": 1}, U),
    "exp-base-negative": ("exp", [f32(3)], {"OH_NN_EXP_BASE": -2.0}, INV),
    "exp-base-zero": ("exp", [f32(3)], {"OH_NN_EXP_BASE": 0.0}, INV),
    "exp-i32": ("exp", [np.ones(3, I32)], {}, U),
    "log-i32": ("log", [np.ones(3, I32)], {}, U),
    "sqrt-bool": ("sqrt", [np.ones(3, BOOL)], {}, U),
    "sigmoid-i8": ("sigmoid", [np.ones(3, I8)], {}, U),
    "gelu-i32": ("gelu", [np.ones(3, I32)], {}, U),
    "erf-f64": ("erf", [np.ones(3, F64)], {}, U),
    "round-i32": ("round", [np.ones(3, I32)], {}, U),
    "neg-u8": ("neg", [np.ones(3, U8)], {}, U),
    "abs-bool": ("abs", [np.ones(3, BOOL)], {}, U),
    "relu-bool": ("relu", [np.ones(3, BOOL)], {}, U),
    "leaky_relu-i32": ("leaky_relu", [np.ones(3, I32)], {}, U),
    "prelu-wrong-weight-length": ("prelu", [f32(2, 3, 4), f32(3)], {}, INV),
    "prelu-rank1-channel-weight": ("prelu", [f32(4), f32(4)], {}, INV),
    "prelu-i32": ("prelu", [np.ones((2, 3), I32), np.ones(3, I32)], {}, U),
    "clip-bool": ("clip", [np.ones(3, BOOL)], {}, U),
    "select-int-condition": ("select", [np.ones(3, I32), f32(3), f32(3)], {}, U),
    "select-rank1-condition-mismatch": ("select", [np.ones(2, BOOL), f32(3, 2), f32(3, 2)], {}, INV),
    "where-shapes-not-broadcastable": ("where", [np.ones(2, BOOL), f32(3), f32(3)], {}, INV),
    "equal-shapes-not-broadcastable": ("equal", [f32(2), f32(3)], {}, INV),
}


@pytest.mark.parametrize("cid", list(ERRORS), ids=list(ERRORS))
def test_elementwise_errors(cid):
    op, inputs, params, code = ERRORS[cid]
    with pytest.raises(NNRtError) as info:
        run(op, inputs, params)
    assert info.value.code == code, info.value
    assert f"OH_NN_OPS_{op.upper()}" in info.value.message
