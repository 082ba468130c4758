"""onnxruntime's contrib activations (com.microsoft Gelu, BiasGelu, FastGelu, QuickGelu) against onnxruntime's float
kernels, and against the formulas of the contrib documentation written out here."""
from __future__ import annotations

import math

import numpy as np
import pytest

from nnrt_onnx.ir.issues import INVALID_MODEL, UNSUPPORTED_DTYPE

from .contrib_support import F32, against_ort, contrib_model, ms_node, ours, rejected

_erf = np.vectorize(math.erf)


def _gelu(x):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _fast_gelu(x):  # the contrib doc's constants
    return 0.5 * x * (1 + np.tanh(0.797885 * x + 0.035677 * x ** 3))


@pytest.mark.parametrize("shape", [(2, 3, 8), (5,), (4, 16)])
def test_gelu(rng, shape):
    x = (rng.standard_normal(shape) * 3).astype(F32)
    (y,) = against_ort(contrib_model(ms_node("Gelu", ["x"], ["y"]), {"x": x}, ["y"]), {"x": x})
    np.testing.assert_allclose(y, _gelu(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_gelu_float64_by_the_formula(rng):
    x = rng.standard_normal((3, 7)) * 3
    (y,) = ours(contrib_model(ms_node("Gelu", ["x"], ["y"]), {"x": x}, ["y"]), {"x": x})
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, _gelu(x), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("constant_bias", [False, True])
def test_bias_gelu(rng, constant_bias):
    a = (rng.standard_normal((2, 5, 12)) * 2).astype(F32)
    b = rng.standard_normal(12).astype(F32)
    node = ms_node("BiasGelu", ["a", "b"], ["y"])
    if constant_bias:
        model, feeds = contrib_model(node, {"a": a}, ["y"], {"b": b}), {"a": a}
    else:
        model, feeds = contrib_model(node, {"a": a, "b": b}, ["y"]), {"a": a, "b": b}
    (y,) = against_ort(model, feeds)
    np.testing.assert_allclose(y, _gelu((a + b).astype(np.float64)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("with_bias", [False, True])
def test_fast_gelu(rng, with_bias):
    x = (rng.standard_normal((2, 4, 16)) * 3).astype(F32)
    bias = rng.standard_normal(16).astype(F32)
    inputs = {"x": x, "bias": bias} if with_bias else {"x": x}
    (y,) = against_ort(contrib_model(ms_node("FastGelu", list(inputs), ["y"]), inputs, ["y"]), inputs)
    total = (x + bias if with_bias else x).astype(np.float64)
    np.testing.assert_allclose(y, _fast_gelu(total), rtol=1e-5, atol=1e-5)  # the doc's 6-digit constants


@pytest.mark.parametrize("alpha", [None, 1.0, 0.5])
def test_quick_gelu(rng, alpha):
    x = (rng.standard_normal((3, 10)) * 4).astype(F32)
    attrs = {} if alpha is None else {"alpha": alpha}
    (y,) = against_ort(contrib_model(ms_node("QuickGelu", ["x"], ["y"], **attrs), {"x": x}, ["y"]), {"x": x})
    a = 1.702 if alpha is None else alpha
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y, x64 / (1 + np.exp(-a * x64)), rtol=1e-5, atol=1e-6)


def test_a_bias_of_the_wrong_length_is_rejected(rng):
    x = rng.standard_normal((2, 8)).astype(F32)
    rejected(contrib_model(ms_node("BiasGelu", ["x", "b"], ["y"]), {"x": x}, ["y"], {"b": np.zeros(3, F32)}),
             INVALID_MODEL, "must be 1-D with the input's last dim (8)")


def test_an_integer_input_is_rejected():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    rejected(contrib_model(ms_node("Gelu", ["x"], ["y"]), {"x": x}, ["y"]), UNSUPPORTED_DTYPE, "int32")
