"""Import of the normalization family (BatchNormalization, LRN, LayerNormalization, InstanceNormalization,
GroupNormalization, LpNormalization, MeanVarianceNormalization, RMSNormalization, Softmax, LogSoftmax, Hardmax):
small models compared with onnxruntime (onnx.reference or the ONNX formula where onnxruntime has no kernel).
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper
from support import onnx_model, run_imported

from onnx_import.import_support import (
    F16,
    F32,
    F64,
    F,
    check_n,
    check_named,
    dynamic_model,
    node_model_n,
    onnx_node,
    rand_normal,
    randn,
    randn1,
    rejects_n,
    rejects_named,
    rng_for,
    run_ours,
    runs_like_onnxruntime,
)

# -- BatchNormalization, LRN -------------------------------------------------------------------------------------------

def _bn_stats(c, seed=13):
    return {"s": rand_normal(seed, c), "b": rand_normal(seed + 1, c), "m": rand_normal(seed + 2, c),
            "v": np.abs(rand_normal(seed + 3, c)) + 0.5}


def test_batchnorm_opset6_is_test_3d_input():
    x = rand_normal(14, 2, 3, 5)
    model = onnx_model(onnx_node("BatchNormalization", ["x", "s", "b", "m", "v"], is_test=1, epsilon=1e-3), {"x": x},
                   _bn_stats(3), opset=6)
    actual, _ = run_imported(model, {"x": x})
    st = _bn_stats(3)
    expected = (x - st["m"][:, None]) / np.sqrt(st["v"][:, None] + 1e-3) * st["s"][:, None] + st["b"][:, None]
    np.testing.assert_allclose(actual[0], expected, rtol=1e-5, atol=1e-5)


def test_batchnorm_spatial0_per_activation():
    x = rand_normal(15, 2, 3, 4)
    stats = {k: np.broadcast_to(v[:, None], (3, 4)) * np.linspace(0.5, 1.5, 4, dtype=F)
             for k, v in _bn_stats(3).items()}
    model = onnx_model(onnx_node("BatchNormalization", ["x", "s", "b", "m", "v"], spatial=0), {"x": x},
                   {k: np.ascontiguousarray(v) for k, v in stats.items()}, opset=7)
    actual, _ = run_imported(model, {"x": x})
    expected = (x - stats["m"]) / np.sqrt(stats["v"] + 1e-5) * stats["s"] + stats["b"]
    np.testing.assert_allclose(actual[0], expected, rtol=1e-5, atol=1e-5)


def _lrn_spec(x, size, alpha, beta, bias):
    """The ONNX LRN formula (onnxruntime takes odd sizes and 4-D inputs only; the reference loops over the batch)."""
    squares = np.zeros_like(x, dtype=np.float64)
    channels = x.shape[1]
    for c in range(channels):
        lo, hi = max(0, c - (size - 1) // 2), min(channels - 1, c + int(np.ceil((size - 1) / 2)))
        squares[:, c] = (x[:, lo:hi + 1].astype(np.float64) ** 2).sum(axis=1)
    return (x / (bias + alpha / size * squares) ** beta).astype(x.dtype)


@pytest.mark.parametrize("case", ["lrn_even_size_4d", "lrn_odd_size_3d"])
def test_lrn(case):
    size, shape = (4, (1, 6, 3, 3)) if case == "lrn_even_size_4d" else (3, (2, 5, 4))
    x = rand_normal(16, *shape)
    actual, _ = run_imported(onnx_model(onnx_node("LRN", ["x"], size=size, alpha=0.01, beta=0.6, bias=1.5), {"x": x}), {"x": x})
    np.testing.assert_allclose(actual[0], _lrn_spec(x, size, 0.01, 0.6, 1.5), rtol=1e-5, atol=1e-6)


# -- Hardmax, Softmax, LogSoftmax (opset < 13 flattens at axis) --------------------------------------------------------

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
    check_n(op, {"x": x}, opset, attrs)


# -- normalisations ----------------------------------------------------------------------------------------------------

def test_layer_norm_without_bias_constant_broadcast_scale():
    rng = rng_for("ln-nobias")
    x, w = randn(rng, (2, 3, 4)), randn(rng, (4,))
    check_n("LayerNormalization", {"x": x, "w": w}, 17, {"axis": 1, "epsilon": 1e-3}, constants=("w",))


def test_layer_norm_axis0_input_scale_and_bias():
    rng = rng_for("ln-axis0")
    x, w, b = randn(rng, (3, 4)), randn(rng, (3, 4)), randn(rng, (3, 4))
    check_n("LayerNormalization", {"x": x, "w": w, "b": b}, 17, {"axis": 0})


def test_layer_norm_non_constant_scale_of_broadcast_shape():
    rng = rng_for("ln-bcast")
    x, w, b = randn(rng, (2, 3, 4)), randn(rng, (1, 4)), randn(rng, (4,))
    check_n("LayerNormalization", {"x": x, "w": w, "b": b}, 17, {"axis": -2})


def test_layer_norm_float16_with_stash_outputs():
    rng = rng_for("ln-f16")
    x, w, b = randn(rng, (2, 8), F16), randn(rng, (8,), F16), randn(rng, (8,), F16)
    check_n("LayerNormalization", {"x": x, "w": w, "b": b}, 17, {}, constants=("w", "b"), n_outputs=3)


@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 2, 3, 2, 2)], ids=["rank3", "rank5"])
def test_instance_norm_ranks(shape):
    rng = rng_for(f"in-{shape}")
    x, s, b = randn(rng, shape), randn(rng, (shape[1],)), randn(rng, (shape[1],))
    check_n("InstanceNormalization", {"x": x, "s": s, "b": b}, 6, {"epsilon": 1e-3}, constants=("s", "b"))


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((1, 4, 3, 2), 4), ((2, 4, 2, 2), 1)],
                         ids=["rank3-g3", "rank4-g4", "rank4-g1"])
def test_group_norm_opset21(shape, groups):
    rng = rng_for(f"gn-{shape}-{groups}")
    x, s, b = randn(rng, shape), randn(rng, (shape[1],)), randn(rng, (shape[1],))
    check_n("GroupNormalization", {"x": x, "s": s, "b": b}, 21, {"num_groups": groups, "epsilon": 1e-3})


@pytest.mark.parametrize("constant", [True, False], ids=["constant-affine", "input-affine"])
def test_group_norm_opset18_per_group_affine(constant):
    """Opset 18 scales and shifts per group; onnxruntime has no GroupNormalization-18 kernel: reference."""
    from onnx.reference import ReferenceEvaluator

    rng = rng_for(f"gn18-{constant}")
    x, s, b = randn(rng, (2, 6, 3)), randn(rng, (3,)), randn(rng, (3,))
    model = node_model_n("GroupNormalization", {"x": x, "s": s, "b": b}, 18, {"num_groups": 3},
                   constants=("s", "b") if constant else ())
    feeds = {"x": x} if constant else {"x": x, "s": s, "b": b}
    expected = ReferenceEvaluator(model).run(None, feeds)[0]
    np.testing.assert_allclose(run_ours(model, feeds)[0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, -1])
def test_lp_normalization_with_zero_vector(p, axis):
    x = randn(rng_for(f"lp-{p}-{axis}"), (3, 3))
    x[0, :] = 0
    x[:, 0] = 0
    check_n("LpNormalization", {"x": x}, 1, {"p": p, "axis": axis})


def test_lp_normalization_rejects_p3():
    rejects_n("LpNormalization", {"x": np.ones((2, 2), F32)}, "unsupported_attribute", 1, {"p": 3}, match="p=3")


@pytest.mark.parametrize("opset,attrs", [(9, {"axes": [1]}), (13, {"axes": [0, 1]}), (13, {})],
                         ids=["opset9-axis1", "opset13-axes01", "default-axes"])
def test_mean_variance_normalization(opset, attrs):
    x = randn(rng_for(f"mvn-{opset}-{attrs}"), (2, 3, 2, 2))
    check_n("MeanVarianceNormalization", {"x": x}, opset, attrs)


# -- RMSNormalization --------------------------------------------------------------------------------------------------

RMS_CASES = [
    ("rms-f16-last-axis", F16, (2, 3, 8), (8,), {}),
    ("rms-f64-axis1", F64, (2, 3, 4), (3, 4), {"axis": 1, "epsilon": 1e-3}),
    ("rms-f32-scale-broadcast", F32, (2, 5, 6), (1, 6), {"axis": -1}),
]


@pytest.mark.parametrize("case,dtype,shape,scale_shape,attrs", RMS_CASES, ids=[c[0] for c in RMS_CASES])
def test_rms_normalization(case, dtype, shape, scale_shape, attrs):
    rng = rng_for(case)
    check_named("RMSNormalization", {"x": randn1(rng, shape, dtype), "scale": randn1(rng, scale_shape, dtype)}, 23, attrs)


def test_rms_normalization_rejects_bfloat16_stash():
    x = np.ones((2, 4), F32)
    rejects_named("RMSNormalization", {"x": x, "scale": np.ones(4, F32)}, "unsupported_attribute", 23,
            {"stash_type": 16}, match="stash_type")


# -- dynamic dims kept dynamic (issue 26): converted with no shape pinned, run at several sizes ------------------------


@pytest.mark.parametrize("axis,shape,param", [(0, ["N", 3], [1, 3]), (-1, [2, "T"], [1]), (0, ["N", "T"], [1])])
@pytest.mark.parametrize("elem_type,dtype", [(TP.FLOAT, F32), (TP.FLOAT16, F16)])
def test_layer_normalization_over_dynamic_dims(axis, shape, param, elem_type, dtype):
    # LAYER_NORM's gamma has the normalised shape, unknown here: normalised with reductions, scale/bias broadcast
    rng = rng_for(f"ln{axis}{shape}{dtype}")
    model = dynamic_model([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=axis)],
                          [("x", elem_type, shape)], [("y", elem_type, shape)],
                          [("g", randn(rng, param, dtype)), ("b", randn(rng, param, dtype))])
    sizes = [[n if isinstance(d, str) else d for d in shape] for n in (1, 2, 3)]
    tolerance = 1e-5 if dtype == F32 else 2e-3
    runs_like_onnxruntime(model, [{"x": randn(rng, s, dtype)} for s in sizes], rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("opset,groups_param", [(21, 4), (18, 2)])
def test_group_normalization_over_dynamic_spatial_dims(opset, groups_param):
    rng = rng_for(f"gn{opset}")
    model = dynamic_model([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)],
                          [("x", TP.FLOAT, ["N", 4, "H", 3])], [("y", TP.FLOAT, ["N", 4, "H", 3])],
                          [("s", randn(rng, [groups_param])), ("b", randn(rng, [groups_param]))], opset=opset,
                          check=opset != 18)  # (onnx's checker calls GroupNormalization-18 deprecated)
    runs_like_onnxruntime(model, [{"x": randn(rng, (n, 4, n + 1, 3))} for n in (1, 2, 3)])


def test_rms_normalization_over_a_dynamic_batch():
    rng = rng_for("rms")
    nodes = [helper.make_node("RMSNormalization", ["x", "s"], ["last"]),
             helper.make_node("RMSNormalization", ["x", "s"], ["all"], axis=0)]
    model = dynamic_model(nodes, [("x", TP.FLOAT, ["N", 3])],
                          [("last", TP.FLOAT, ["N", 3]), ("all", TP.FLOAT, ["N", 3])], [("s", randn(rng, [3]))],
                          opset=23)
    runs_like_onnxruntime(model, [{"x": randn(rng, (n, 3))} for n in (1, 2, 3)])


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset,axis", [(11, 1), (13, 0)])
def test_softmax_family_over_dynamic_dims(op, opset, axis):
    # opsets < 13 flatten at the axis: both halves hold a dynamic dim here (products read at run time); Hardmax's
    # one-hot depth is the dynamic axis's size
    rng = rng_for(f"{op}{opset}")
    model = dynamic_model([helper.make_node(op, ["x"], ["y"], axis=axis)], [("x", TP.FLOAT, ["N", 4, "T"])],
                          [("y", TP.FLOAT, ["N", 4, "T"])], opset=opset)
    runs_like_onnxruntime(model, [{"x": randn(rng, (n, 4, n + 1))} for n in (1, 2, 3)])
