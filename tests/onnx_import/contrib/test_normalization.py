"""onnxruntime's contrib normalizations against its float kernels (and the contrib documentation's formulas written
out here): SkipLayerNormalization, SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization (registered by
onnxruntime in the default domain) and EmbedLayerNormalization."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from nnrt_onnx.ir.issues import INVALID_MODEL, UNSUPPORTED_ATTRIBUTE

from .contrib_support import F32, against_ort, contrib_model, ms_node, rejected


def _layer_norm(t, gamma, beta, eps):
    t = t.astype(np.float64)
    mean = t.mean(-1, keepdims=True)
    var = ((t - mean) ** 2).mean(-1, keepdims=True)
    return (t - mean) / np.sqrt(var + eps) * gamma + (0 if beta is None else beta), mean, 1 / np.sqrt(var + eps)


def _rms(t, gamma, eps):
    t = t.astype(np.float64)
    inv = 1 / np.sqrt((t * t).mean(-1, keepdims=True) + eps)
    return t * inv * gamma, inv


# -- SkipLayerNormalization ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("beta,bias", [(True, True), (True, False), (False, True), (False, False)])
def test_skip_layer_norm_with_every_output(rng, beta, bias):
    x, skip = rng.standard_normal((2, 3, 16)).astype(F32), rng.standard_normal((2, 3, 16)).astype(F32)
    params = {"gamma": rng.standard_normal(16).astype(F32), "beta": rng.standard_normal(16).astype(F32),
              "bias": rng.standard_normal(16).astype(F32)}
    inputs = ["x", "skip", "gamma", "beta" if beta else "", "bias" if bias else ""]
    node = ms_node("SkipLayerNormalization", inputs, ["y", "mean", "inv_std_var", "sum"], epsilon=1e-5)
    constants = {k: v for k, v in params.items() if k in inputs}
    model = contrib_model(node, {"x": x, "skip": skip}, ["y", "mean", "inv_std_var", "sum"], constants)
    y, mean, inv, total = against_ort(model, {"x": x, "skip": skip})
    want_total = x + skip + (params["bias"] if bias else 0)
    want_y, want_mean, want_inv = _layer_norm(want_total, params["gamma"], params["beta"] if beta else None, 1e-5)
    np.testing.assert_allclose(total, want_total, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-5)
    assert mean.shape == inv.shape == (2, 3, 1) and mean.dtype == inv.dtype == np.float32
    np.testing.assert_allclose(mean, want_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(inv, want_inv, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("x_shape,skip_shape", [((2, 3, 8), (1, 3, 8)), ((2, 3, 8), (3, 8)), ((5, 8), (5, 8))])
def test_skip_layer_norm_broadcasts_skip_over_the_batch(rng, x_shape, skip_shape):
    x, skip = rng.standard_normal(x_shape).astype(F32), rng.standard_normal(skip_shape).astype(F32)
    gamma = rng.standard_normal(8).astype(F32)
    node = ms_node("SkipLayerNormalization", ["x", "skip", "gamma"], ["y"])  # epsilon 1e-12 by default
    (y,) = against_ort(contrib_model(node, {"x": x, "skip": skip}, ["y"], {"gamma": gamma}), {"x": x, "skip": skip})
    np.testing.assert_allclose(y, _layer_norm(x + skip, gamma, None, 1e-12)[0], rtol=1e-5, atol=1e-5)


def test_skip_layer_norm_with_runtime_gamma_and_beta(rng):
    feeds = {"x": rng.standard_normal((2, 4, 8)).astype(F32), "skip": rng.standard_normal((2, 4, 8)).astype(F32),
             "gamma": rng.standard_normal(8).astype(F32), "beta": rng.standard_normal(8).astype(F32)}
    node = ms_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta"], ["y", "", "", "sum"], epsilon=1e-6)
    against_ort(contrib_model(node, feeds, ["y", "sum"]), feeds)


def test_skip_layer_norm_float16_is_computed_in_float32(rng):
    feeds = {"x": rng.standard_normal((2, 3, 8)).astype(np.float16),
             "skip": rng.standard_normal((2, 3, 8)).astype(np.float16)}
    gamma, beta = rng.standard_normal(8).astype(np.float16), rng.standard_normal(8).astype(np.float16)
    node = ms_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta"], ["y", "mean", "", "sum"], epsilon=1e-5)
    y, mean, total = against_ort(contrib_model(node, feeds, ["y", "mean", "sum"], {"gamma": gamma, "beta": beta}),
                                 feeds, rtol=1e-3, atol=1e-3)
    assert y.dtype == total.dtype == np.float16 and mean.dtype == np.float32


@pytest.mark.parametrize("skip_shape,message", [((2, 8), "does not fit the input"), ((8,), "does not fit")])
def test_skip_layer_norm_rejects_a_skip_that_does_not_fit(rng, skip_shape, message):
    x = rng.standard_normal((2, 3, 8)).astype(F32)
    node = ms_node("SkipLayerNormalization", ["x", "skip", "gamma"], ["y"])
    rejected(contrib_model(node, {"x": x, "skip": np.zeros(skip_shape, F32)}, ["y"], {"gamma": np.ones(8, F32)}),
             INVALID_MODEL, message)


def test_skip_layer_norm_rejects_a_gamma_of_another_length(rng):
    x = rng.standard_normal((2, 3, 8)).astype(F32)
    node = ms_node("SkipLayerNormalization", ["x", "x", "gamma"], ["y"])
    rejected(contrib_model(node, {"x": x}, ["y"], {"gamma": np.ones(4, F32)}), INVALID_MODEL, "expected (8,)")


# -- SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization --------------------------------------------------

@pytest.mark.parametrize("bias", [True, False])
def test_skip_simplified_layer_norm(rng, bias):
    feeds = {"x": rng.standard_normal((2, 5, 12)).astype(F32), "skip": rng.standard_normal((1, 5, 12)).astype(F32)}
    gamma, b = rng.standard_normal(12).astype(F32), rng.standard_normal(12).astype(F32)
    inputs = ["x", "skip", "gamma"] + (["bias"] if bias else [])
    node = ms_node("SkipSimplifiedLayerNormalization", inputs, ["y", "", "inv_std_var", "sum"], epsilon=1e-6)
    constants = {"gamma": gamma, **({"bias": b} if bias else {})}
    y, inv, total = against_ort(contrib_model(node, feeds, ["y", "inv_std_var", "sum"], constants), feeds)
    want_total = feeds["x"] + feeds["skip"] + (b if bias else 0)
    want_y, want_inv = _rms(want_total, gamma, 1e-6)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(inv, want_inv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total, want_total, rtol=1e-6, atol=1e-6)


def test_skip_simplified_layer_norm_has_no_mean_output(rng):
    x = rng.standard_normal((2, 3, 8)).astype(F32)
    node = ms_node("SkipSimplifiedLayerNormalization", ["x", "x", "gamma"], ["y", "mean"])
    rejected(contrib_model(node, {"x": x}, ["y", "mean"], {"gamma": np.ones(8, F32)}), UNSUPPORTED_ATTRIBUTE,
             "mean output of SkipSimplifiedLayerNormalization is not defined")


@pytest.mark.parametrize("axis,scale_shape", [(-1, (8,)), (1, (3, 8)), (2, (8,))])
def test_simplified_layer_norm_of_the_default_domain(rng, axis, scale_shape):
    x = rng.standard_normal((2, 3, 8)).astype(F32)
    scale = rng.standard_normal(scale_shape).astype(F32)
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y", "inv_std_var"], axis=axis,
                            epsilon=1e-5)
    y, inv = against_ort(contrib_model(node, {"x": x}, ["y", "inv_std_var"], {"scale": scale}, opset=13), {"x": x})
    axes = tuple(range(axis % 3, 3))
    want_inv = 1 / np.sqrt((x.astype(np.float64) ** 2).mean(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(inv, want_inv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y, x * want_inv * scale, rtol=1e-5, atol=1e-5)


# -- EmbedLayerNormalization ---------------------------------------------------------------------------------------

def _embedding_tables(rng, vocab=13, positions=10, segments=3, hidden=8):
    return {"word": rng.standard_normal((vocab, hidden)).astype(F32),
            "position": rng.standard_normal((positions, hidden)).astype(F32),
            "segment": rng.standard_normal((segments, hidden)).astype(F32),
            "gamma": rng.standard_normal(hidden).astype(F32), "beta": rng.standard_normal(hidden).astype(F32)}


@pytest.mark.parametrize("segments,mask", [(True, True), (False, True), (True, False), (False, False)])
def test_embed_layer_norm(rng, segments, mask):
    tables = _embedding_tables(rng)
    ids = rng.integers(0, 13, (2, 6)).astype(np.int32)
    segment_ids = rng.integers(0, 3, (2, 6)).astype(np.int32)
    attention = np.array([[1, 1, 1, 1, 0, 0], [1, 0, 1, 2, 1, 1]], np.int32)  # a 2 is not counted
    inputs = ["ids", "segment_ids" if segments else "", "word", "position", "segment" if segments else "", "gamma",
              "beta"] + (["mask"] if mask else [])
    feeds = {"ids": ids, **({"segment_ids": segment_ids} if segments else {}), **({"mask": attention} if mask else {})}
    constants = {k: v for k, v in tables.items() if k in inputs}
    node = ms_node("EmbedLayerNormalization", inputs, ["y", "mask_index", "embedding_sum"], epsilon=1e-5)
    y, mask_index, total = against_ort(contrib_model(node, feeds, ["y", "mask_index", "embedding_sum"], constants),
                                       feeds)
    want = tables["word"][ids] + tables["position"][:6] + (tables["segment"][segment_ids] if segments else 0)
    np.testing.assert_allclose(total, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y, _layer_norm(want, tables["gamma"], tables["beta"], 1e-5)[0], rtol=1e-5, atol=1e-5)
    assert mask_index.dtype == np.int32
    np.testing.assert_array_equal(mask_index, [4, 4] if mask else [0, 0])


@pytest.mark.parametrize("position_shape", [(2, 5), (1, 5)])
def test_embed_layer_norm_with_position_ids(rng, position_shape):
    tables = _embedding_tables(rng)
    feeds = {"ids": rng.integers(0, 13, (2, 5)).astype(np.int32),
             "position_ids": rng.integers(0, 10, position_shape).astype(np.int32)}
    node = ms_node("EmbedLayerNormalization", ["ids", "", "word", "position", "", "gamma", "beta", "", "position_ids"],
                   ["y", "mask_index"])  # onnxruntime's shape inference wants mask_index unless mask_index_type=0
    constants = {k: tables[k] for k in ("word", "position", "gamma", "beta")}
    y, mask_index = against_ort(contrib_model(node, feeds, ["y", "mask_index"], constants), feeds)
    np.testing.assert_array_equal(mask_index, [0, 0])
    want = tables["word"][feeds["ids"]] + tables["position"][feeds["position_ids"]]
    np.testing.assert_allclose(y, _layer_norm(want, tables["gamma"], tables["beta"], 1e-12)[0], rtol=1e-5, atol=1e-5)


def test_embed_layer_norm_with_runtime_tables(rng):
    tables = _embedding_tables(rng)
    feeds = {"ids": rng.integers(0, 13, (1, 4)).astype(np.int32), **tables}
    node = ms_node("EmbedLayerNormalization", ["ids", "", "word", "position", "", "gamma", "beta"], ["y"],
                   mask_index_type=0)
    against_ort(contrib_model(node, feeds, ["y"]), feeds)


def test_embed_layer_norm_rejects_a_sequence_longer_than_the_position_table(rng):
    tables = _embedding_tables(rng, positions=4)
    node = ms_node("EmbedLayerNormalization", ["ids", "", "word", "position", "", "gamma", "beta"], ["y"])
    model = contrib_model(node, {"ids": np.zeros((1, 6), np.int32)}, ["y"],
                          {k: tables[k] for k in ("word", "position", "gamma", "beta")})
    rejected(model, INVALID_MODEL, "the sequence (6) is longer than the position embedding (4 rows)")


def test_embed_layer_norm_needs_segment_ids_and_table_together(rng):
    tables = _embedding_tables(rng)
    node = ms_node("EmbedLayerNormalization", ["ids", "", "word", "position", "segment", "gamma", "beta"], ["y"])
    model = contrib_model(node, {"ids": np.zeros((1, 3), np.int32)}, ["y"], tables)
    rejected(model, INVALID_MODEL, "segment_ids and segment_embedding must be given together")


def test_layer_normalization_below_opset_17_is_onnxruntimes_default_domain_contrib_schema(rng):
    """onnxruntime.transformers fuses LayerNormalization into models of any opset; below 17 it is onnxruntime's
    contrib schema of the default domain (ONNX's own starts at 17), with the same semantics."""
    x = rng.standard_normal((2, 5, 16)).astype(F32)
    gamma, beta = rng.standard_normal(16).astype(F32), rng.standard_normal(16).astype(F32)
    node = helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-6)
    (y,) = against_ort(contrib_model(node, {"x": x}, ["y"], {"gamma": gamma, "beta": beta}, opset=13), {"x": x})
    np.testing.assert_allclose(y, _layer_norm(x, gamma, beta, 1e-6)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("segments,mask", [(True, True), (False, False)])
def test_quantized_embed_layer_norm(rng, dtype, segments, mask):
    """Tables, gamma and beta as int8/uint8 with per-tensor scales and zero points: (q - zero point) * scale, then
    EmbedLayerNormalization (float arithmetic: onnxruntime is exact here on every CPU)."""
    info = np.iinfo(dtype)
    tables = {name: rng.integers(info.min, info.max + 1, shape).astype(dtype)
              for name, shape in (("word", (13, 8)), ("position", (10, 8)), ("segment", (3, 8)), ("gamma", (8,)),
                                  ("beta", (8,)))}
    scales = {name: np.float32(rng.uniform(0.005, 0.05)) for name in tables}
    zeros = {name: dtype(rng.integers(info.min // 2, info.max // 2)) for name in tables}
    ids = rng.integers(0, 13, (2, 6)).astype(np.int32)
    segment_ids = rng.integers(0, 3, (2, 6)).astype(np.int32)
    attention = np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)
    order = ("word", "position", "segment", "gamma", "beta")
    present = [n for n in order if segments or n != "segment"]
    inputs = (["ids", "segment_ids" if segments else "", "word", "position", "segment" if segments else "", "gamma",
               "beta", "mask" if mask else ""] + [f"{n}_scale" if n in present else "" for n in order]
              + [f"{n}_zp" if n in present else "" for n in order])
    constants = {**{n: tables[n] for n in present}, **{f"{n}_scale": scales[n] for n in present},
                 **{f"{n}_zp": zeros[n] for n in present}}
    feeds = {"ids": ids, **({"segment_ids": segment_ids} if segments else {}), **({"mask": attention} if mask else {})}
    node = ms_node("QEmbedLayerNormalization", inputs, ["y", "mask_index"], epsilon=1e-5)
    y, mask_index = against_ort(contrib_model(node, feeds, ["y", "mask_index"], constants), feeds)

    def real(name):
        return (tables[name].astype(np.int32) - int(zeros[name])).astype(F32) * scales[name]

    total = real("word")[ids] + real("position")[:6] + (real("segment")[segment_ids] if segments else 0)
    np.testing.assert_allclose(y, _layer_norm(total, real("gamma"), real("beta"), 1e-5)[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(mask_index, [3, 6] if mask else [0, 0])


def test_quantized_embed_layer_norm_with_runtime_tables(rng):
    tables = {"word": rng.integers(0, 256, (13, 8)).astype(np.uint8), "position": rng.integers(0, 256, (10, 8))
              .astype(np.uint8), "gamma": rng.integers(0, 256, 8).astype(np.uint8),
              "beta": rng.integers(0, 256, 8).astype(np.uint8)}
    feeds = {"ids": rng.integers(0, 13, (1, 5)).astype(np.int32), **tables,
             **{f"{n}_scale": np.asarray(0.01 * (i + 1), F32) for i, n in enumerate(tables)},
             **{f"{n}_zp": np.asarray(100 + i, np.uint8) for i, n in enumerate(tables)}}
    order = ("word", "position", "", "gamma", "beta")
    inputs = ["ids", "", "word", "position", "", "gamma", "beta", ""] + [f"{n}_scale" if n else "" for n in order] + \
        [f"{n}_zp" if n else "" for n in order]
    node = ms_node("QEmbedLayerNormalization", inputs, ["y", "mask_index"])
    against_ort(contrib_model(node, feeds, ["y", "mask_index"]), feeds, rtol=1e-5, atol=1e-5)


def test_softmax_keeps_the_shape_onnx_inference_left_unknown(rng):
    x = rng.standard_normal((2, 3, 8)).astype(F32)
    nodes = [ms_node("Gelu", ["x"], ["g"]),  # ONNX infers nothing for g, hence nothing for s
             helper.make_node("Softmax", ["g"], ["s"], axis=-1),
             helper.make_node("LayerNormalization", ["s", "gamma"], ["y"], axis=-1)]
    (y,) = against_ort(contrib_model(nodes, {"x": x}, ["y"], {"gamma": np.ones(8, F32)}), {"x": x})
    assert y.shape == (2, 3, 8)
