"""Element-wise family: broadcasting binary ops, unary math, comparisons, logic, selection, and CAST.

Every case runs the op end to end through ``nnrt_onnx.testing.run_op`` (model -> compilation -> executor), so the op
table's validation, defaults and the executor's fused activations are exercised. Expected values come from
onnxruntime on an equivalent single-node ONNX model (``onnx.reference`` where ORT has no kernel for the dtype) or from
float64 computations written out in the test for the NNRt-only ops (ELTWISE, SCALE, POW scale/shift, EXP
base/scale/shift, BIAS_ADD, SQUARED_DIFFERENCE) and the decided semantics (worked examples). CAST is checked in every
pair of dtypes against ONNX Cast.
"""
from __future__ import annotations

import math
import os
import zlib

import numpy as np
import pytest
from kernels.kernel_support import (
    BOOL,
    DTYPES,
    F16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    INV,
    INVALID,
    OH_CODE,
    SHORT,
    U8,
    U,
    add_unary_cases,
    case_table,
    check,
    check_one,
    dequantize_ref,
    i32,
    ones_f32,
    onnx_ref,
    onnx_type,
    oracle_for,
    ort1,
    raises,
    rand,
    run,
    run_case,
    run_error_case,
    run_one,
    run_quantized_case,
    via_f32,
)

from nnrt_onnx.enums import OH_NN_DataType
from nnrt_onnx.tensor import QuantParam

# -- harness ------------------------------------------------------------------------------------------------------

def nonzero(rng, shape, dtype, lo=-6, hi=6):
    x = rand(rng, shape, dtype, lo, hi)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return np.where(x == 0, np.asarray(1, dtype), x).astype(dtype)
    return np.where(np.abs(x) < 0.25, np.asarray(0.5, dtype), x).astype(dtype)


def fused(x, activation):
    return {0: x, 1: np.maximum(x, 0), 2: np.clip(x, 0, 6)}[activation].astype(x.dtype)


# -- cases --------------------------------------------------------------------------------------------------------
# Each case: id -> builder(rng) returning (op, inputs, params, expected, run_op kwargs).

CASES, case = case_table()


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


# Unary math against ONNX.
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
}

add_unary_cases(CASES, UNARY)


@case("exp-large-magnitudes")
def _(rng):
    x = np.array([-100.0, -20.0, 0.0, 20.0, 80.0], F32)
    return "exp", [x], {}, onnx_ref("Exp", [x]), {}


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
    run_case(CASES, cid)


# -- quantized: the executor dequantizes around the kernel ---------------------------------------------------------

QUANT_CASES = {
    "add-quant-i8": ("add", "Add", 2, {}),
    "mul-quant-u8": ("mul", "Mul", 2, {}),
    "maximum-quant-i8": ("maximum", "Max", 2, {}),
}


@pytest.mark.parametrize("cid", list(QUANT_CASES), ids=list(QUANT_CASES))
def test_elementwise_quantized(cid):
    run_quantized_case(QUANT_CASES, cid)


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
    reals = [dequantize_ref(qa, 0.1, 0), dequantize_ref(qb, 0.05, 0)]
    expected = onnx_ref({"less": "Less", "equal": "Equal"}[op], reals, out_dtype=BOOL)
    out = run_one(op, [qa, qb], {}, input_quant=quant)
    check_one(out, expected)


# -- errors ------------------------------------------------------------------------------------------------------

ERRORS = {
    "add-bool": ("add", [np.ones(3, BOOL), np.ones(3, BOOL)], {}, U),
    "mul-bool": ("mul", [np.ones(3, BOOL), np.ones(3, BOOL)], {}, U),
    "add-shapes-not-broadcastable": ("add", [ones_f32(2, 3), ones_f32(4)], {}, INV),
    "div-int-by-zero": ("div", [np.array([1, 2], I32), np.array([1, 0], I32)], {}, INV),
    "mod-int-by-zero": ("mod", [np.array([1, 2], I32), np.array([0, 1], I32)], {}, INV),
    "mod-both-bool": ("mod", [np.ones(3, BOOL), np.ones(3, BOOL)], {}, U),
    "maximum-both-bool": ("maximum", [np.ones(3, BOOL), np.ones(3, BOOL)], {}, U),
    "minimum-both-bool": ("minimum", [np.ones(3, BOOL), np.ones(3, BOOL)], {}, U),
    "eltwise-mode-unknown": ("eltwise", [ones_f32(2, 3), ones_f32(2, 3)], {"OH_NN_ELTWISE_MODE": 3}, INV),
    "pow-i32-scale": ("pow", [np.ones(3, I32), np.ones(3, I32)], {"OH_NN_POW_SCALE": 2.0}, U),
    "pow-i32-negative-exponent": ("pow", [np.ones(3, I32), np.array([1, -1, 2], I32)], {}, INV),
    "bias_add-wrong-length": ("bias_add", [ones_f32(2, 3, 4), ones_f32(3)], {}, INV),
    "bias_add-2d-bias": ("bias_add", [ones_f32(2, 3, 4), ones_f32(1, 4)], {}, INV),
    "scale-shape-mismatch": ("scale", [ones_f32(2, 3, 4), ones_f32(4), ones_f32(4)], {"OH_NN_SCALE_AXIS": 1}, INV),
    "scale-axis-out-of-range": ("scale", [ones_f32(2, 3), ones_f32(3), ones_f32(3)], {"OH_NN_SCALE_AXIS": 2}, INV),
    "scale-dtype-mismatch": ("scale", [ones_f32(2, 3), np.ones(3, I32), ones_f32(3)], {"OH_NN_SCALE_AXIS": 1}, U),
    "exp-base-negative": ("exp", [ones_f32(3)], {"OH_NN_EXP_BASE": -2.0}, INV),
    "exp-base-zero": ("exp", [ones_f32(3)], {"OH_NN_EXP_BASE": 0.0}, INV),
    "exp-i32": ("exp", [np.ones(3, I32)], {}, U),
    "log-i32": ("log", [np.ones(3, I32)], {}, U),
    "sqrt-bool": ("sqrt", [np.ones(3, BOOL)], {}, U),
    "erf-f64": ("erf", [np.ones(3, F64)], {}, U),
    "round-i32": ("round", [np.ones(3, I32)], {}, U),
    "neg-u8": ("neg", [np.ones(3, U8)], {}, U),
    "abs-bool": ("abs", [np.ones(3, BOOL)], {}, U),
    "select-int-condition": ("select", [np.ones(3, I32), ones_f32(3), ones_f32(3)], {}, U),
    "select-rank1-condition-mismatch": ("select", [np.ones(2, BOOL), ones_f32(3, 2), ones_f32(3, 2)], {}, INV),
    "where-shapes-not-broadcastable": ("where", [np.ones(2, BOOL), ones_f32(3), ones_f32(3)], {}, INV),
    "equal-shapes-not-broadcastable": ("equal", [ones_f32(2), ones_f32(3)], {}, INV),
}


@pytest.mark.parametrize("cid", list(ERRORS), ids=list(ERRORS))
def test_elementwise_errors(cid):
    run_error_case(ERRORS, cid)


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
    expected = ort1("Cast", [x], {"to": onnx_type(dt)}, out_dtypes=[dt])
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


# ---------------------------------------------------------------------------------------------------------------
# ERF's float32 approximation against math.erf (the oracle: Python's libm erf in double precision)


def _ulp_errors(x32: np.ndarray, got: np.ndarray) -> np.ndarray:
    """|got - erf(x)| in units of the float32 spacing at erf(x) (math.erf in double as the exact value)."""
    exact = np.array([math.erf(v) for v in x32.astype(F64).tolist()])
    spacing = np.spacing(np.abs(exact.astype(F32))).astype(F64)
    spacing[spacing == 0] = np.spacing(F32(0))
    return np.abs(got.astype(F64) - exact) / spacing


@pytest.fixture(params=["compiled", "numpy"])
def erf(request):
    """Both implementations of the float32 erf: the reference kernel (numpy blocks) and the fast path's compiled
    loop (numba; nnrt_onnx.accel), skipped where it cannot run."""
    from nnrt_onnx.kernels.elementwise import erf as reference

    if request.param == "numpy":
        return reference
    if os.environ.get("NNRT_ONNX_NUMBA", "").strip() == "0":
        pytest.skip("the fast paths are off (NNRT_ONNX_NUMBA=0)")
    from nnrt_onnx.accel import numba_loops
    from nnrt_onnx.accel.elementwise import erf as fast

    if not numba_loops.enabled():
        pytest.skip("numba is not installed")
    return lambda x: fast(None, x)  # (None: the compiled loop must take it)


def test_erf_float32_within_one_ulp_of_math_erf_on_a_dense_grid(erf):
    rng = np.random.default_rng(20240611)
    grid = np.concatenate([
        np.linspace(-4.5, 4.5, 400_001, dtype=F32),  # every region of the approximation, step ~2e-5
        (rng.standard_normal(200_000) * 2).astype(F32),
        (F32(10.0) ** rng.uniform(-38, 0.7, 100_000)).astype(F32) * rng.choice(np.array([-1, 1], F32), 100_000),
        np.nextafter(F32(3.9), F32(5), dtype=F32) + np.arange(-2000, 2000, dtype=F32) * F32(1e-4),  # where erf -> 1
    ])
    got = erf(grid)
    assert got.dtype == F32 and got.shape == grid.shape
    errors = _ulp_errors(grid, got)
    worst = int(np.argmax(errors))
    assert errors.max() <= 1.0, f"erf({grid[worst]!r}) = {got[worst]!r}: {errors.max():.2f} ulp from math.erf"
    # not a fluke of a loose bound: most values are the correctly rounded float32 of math.erf
    exact32 = np.array([math.erf(v) for v in grid[:20_000].astype(F64).tolist()]).astype(F32)
    assert np.mean(got[:20_000] == exact32) > 0.99


def test_erf_float32_edge_values(erf):
    tiny = np.array([np.finfo(F32).smallest_subnormal, np.finfo(F32).tiny, 1e-30, 1e-8], F32)
    x = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf, 3.9, -3.9, 4.0, 10.0, -10.0, 1e30, -1e30], F32),
                        tiny, -tiny])
    got = erf(x)
    exact = np.array([math.erf(v) for v in x.astype(F64).tolist()])
    finite = ~np.isnan(exact)
    assert np.all(_ulp_errors(x[finite], got[finite]) <= 1.0)
    assert np.signbit(got[1]) and got[0] == 0 and not np.signbit(got[0])  # erf(-0) = -0, erf(0) = +0
    assert got[2] == 1 and got[3] == -1 and got[7] == 1 and got[8] == -1
    assert np.isnan(erf(np.array([np.nan], F32)))[0]
    half = erf(np.array([0.5, -1.25, 2.0], np.float16))
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, np.array([math.erf(0.5), math.erf(-1.25), math.erf(2.0)], np.float16))


