"""Activation family: RELU, RELU6, SIGMOID, TANH, HSWISH, HARD_SIGMOID, SWISH, GELU, LEAKY_RELU, PRELU, CLIP.

Every case runs the op end to end through ``nnrt_onnx.testing.run_op`` (model -> compilation -> executor), so the op
table's validation and defaults are exercised. Expected values come from onnxruntime on an equivalent single-node ONNX
model (``onnx.reference`` where ORT has no kernel for the dtype), from float64 computations written out in the test
(SWISH, and the float64 cases of HSWISH, HARD_SIGMOID, GELU) and the decided semantics (worked examples).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from kernels.kernel_support import (
    BOOL,
    F16,
    F32,
    F64,
    I8,
    I32,
    I64,
    INV,
    SHORT,
    U8,
    U,
    add_unary_cases,
    case_table,
    ones_f32,
    onnx_ref,
    oracle_for,
    rand,
    run_case,
    run_error_case,
    run_quantized_case,
)

# -- cases --------------------------------------------------------------------------------------------------------
# Each case: id -> builder(rng) returning (op, inputs, params, expected, run_op kwargs).

CASES, case = case_table()


# Activations against ONNX.
UNARY = {
    # op: (onnx op, attrs, input maker, dtypes)
    "relu": ("Relu", {}, rand, [F32, F16, F64, I8, I32, I64]),
    "sigmoid": ("Sigmoid", {}, lambda rng, s, d: rand(rng, s, d, -12, 12), [F32, F16, F64]),
    "tanh": ("Tanh", {}, rand, [F32, F16, F64]),
    # float64 of these three: the ONNX oracles compute in float32 (float attributes), see the *-f64 cases below
    "hswish": ("HardSwish", {}, lambda rng, s, d: rand(rng, s, d, -5, 5), [F32, F16]),
    "hard_sigmoid": ("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}, lambda rng, s, d: rand(rng, s, d, -5, 5),
                     [F32, F16]),
    "gelu": ("Gelu", {}, rand, [F32, F16]),
}

add_unary_cases(CASES, UNARY)


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


@case("sigmoid-saturation")
def _(rng):
    x = np.array([-1000.0, -50.0, -1e-3, 0.0, 1e-3, 50.0, 1000.0], F32)
    return "sigmoid", [x], {}, onnx_ref("Sigmoid", [x]), {}


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


# -- the test -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cid", list(CASES), ids=list(CASES))
def test_activation(cid):
    run_case(CASES, cid)


# -- quantized: the executor dequantizes around the kernel ---------------------------------------------------------

QUANT_CASES = {
    "sigmoid-quant-u8": ("sigmoid", "Sigmoid", 1, {}),
    "relu6-quant-i8": ("relu6", None, 1, {}),
    "tanh-quant-i8": ("tanh", "Tanh", 1, {}),
}


@pytest.mark.parametrize("cid", list(QUANT_CASES), ids=list(QUANT_CASES))
def test_activation_quantized(cid):
    run_quantized_case(QUANT_CASES, cid)


# -- errors ------------------------------------------------------------------------------------------------------

ERRORS = {
    "sigmoid-i8": ("sigmoid", [np.ones(3, I8)], {}, U),
    "gelu-i32": ("gelu", [np.ones(3, I32)], {}, U),
    "relu-bool": ("relu", [np.ones(3, BOOL)], {}, U),
    "leaky_relu-i32": ("leaky_relu", [np.ones(3, I32)], {}, U),
    "prelu-wrong-weight-length": ("prelu", [ones_f32(2, 3, 4), ones_f32(3)], {}, INV),
    "prelu-rank1-channel-weight": ("prelu", [ones_f32(4), ones_f32(4)], {}, INV),
    "prelu-i32": ("prelu", [np.ones((2, 3), I32), np.ones(3, I32)], {}, U),
    "clip-bool": ("clip", [np.ones(3, BOOL)], {}, U),
}


@pytest.mark.parametrize("cid", list(ERRORS), ids=list(ERRORS))
def test_activation_errors(cid):
    run_error_case(ERRORS, cid)
