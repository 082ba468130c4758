"""onnxruntime's contrib Attention (com.microsoft) against its CPU kernel, and against the attention formula written out
here: masks in every CPU form (1-D end positions, end + start positions, raw 2-D / 3-D), unidirectional, scale,
qkv_hidden_sizes, past / present, attention_bias, float16; and the forms onnxruntime's CPU kernel rejects."""
from __future__ import annotations

import numpy as np
import pytest
from integer_oracle import matmul_accumulate

from nnrt_onnx.ir.issues import INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, UNSUPPORTED_DTYPE

from .contrib_support import F32, against_ort, contrib_model, ms_node, ours, rejected

B, S, HIDDEN, HEADS = 2, 4, 8, 2
LOWEST = np.finfo(np.float32).min


def _attention(x, w, b, heads, additive=None, causal=False, scale=None, past=None, sizes=None, qkv=None):
    """The contrib doc's computation in float64: softmax(scale Q K^T + additive [+ lowest after each query]) V
    (``qkv``: the projection x @ w + b given)."""
    batch, seq, _ = x.shape
    sizes = sizes or [w.shape[1] // 3] * 3
    qkv = x.astype(np.float64) @ w + (0 if b is None else b) if qkv is None else qkv
    q, k, v = np.split(qkv, [sizes[0], sizes[0] + sizes[1]], axis=-1)
    head, v_head = sizes[0] // heads, sizes[2] // heads

    def split(t, size):
        return t.reshape(batch, seq, heads, size).transpose(0, 2, 1, 3)

    q, k, v = split(q, head), split(k, head), split(v, v_head)
    past_len = 0
    if past is not None:
        past_len = past.shape[3]
        k, v = np.concatenate([past[0], k], 2), np.concatenate([past[1], v], 2)
    total = past_len + seq
    scores = q @ k.transpose(0, 1, 3, 2) * (scale or 1 / np.sqrt(head))
    term = np.zeros((1, 1, seq, total)) if additive is None else additive
    if causal and seq > 1:
        term = np.where(np.arange(total)[None, :] > past_len + np.arange(seq)[:, None], LOWEST, term)
    # the additive term meets the scores in float32, as the kernels add it: a fully masked row (every score shifted by
    # the filter value) keeps only float32's precision at that magnitude
    scores = (scores.astype(np.float32) + np.asarray(term, np.float32)).astype(np.float64)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    out = (e / e.sum(-1, keepdims=True)) @ v
    return out.transpose(0, 2, 1, 3).reshape(batch, seq, heads * v_head), np.stack([k, v]) if head == v_head else None


def _data(rng, seq=S, columns=3 * HIDDEN):
    return (rng.standard_normal((B, seq, HIDDEN)).astype(F32), (rng.standard_normal((HIDDEN, columns)) * 0.5).astype(F32),
            rng.standard_normal(columns).astype(F32))


@pytest.mark.parametrize("constant_weights", [True, False])
def test_attention_without_mask(rng, constant_weights):
    x, w, b = _data(rng)
    node = ms_node("Attention", ["x", "w", "b"], ["y"], num_heads=HEADS)
    if constant_weights:
        model, feeds = contrib_model(node, {"x": x}, ["y"], {"w": w, "b": b}), {"x": x}
    else:
        model, feeds = contrib_model(node, {"x": x, "w": w, "b": b}, ["y"]), {"x": x, "w": w, "b": b}
    (y,) = against_ort(model, feeds)
    np.testing.assert_allclose(y, _attention(x, w, b, HEADS)[0], rtol=1e-5, atol=1e-5)


MASKS = {
    "end-positions": np.array([3, 1], np.int32),
    "end-and-start-positions": np.array([3, 4, 1, 2], np.int32),
    "raw-2d": np.array([[1, 1, 0, 1], [0, 1, 1, 1]], np.int32),
    "raw-2d-all-masked-row": np.array([[0, 0, 0, 0], [1, 1, 2, 1]], np.int32),
    "raw-3d": np.array([[[1, 0, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 1, 0]],
                        [[1, 1, 1, 0], [0, 1, 0, 1], [1, 0, 0, 0], [1, 1, 1, 1]]], np.int32),
}


def _mask_term(mask, fill, total=S):
    keys = np.arange(total)
    if mask.ndim == 1:
        masked = keys[None, :] >= mask[:B, None]
        if mask.size == 2 * B:
            masked |= keys[None, :] < mask[B:, None]
        return np.where(masked, fill, 0.0)[:, None, None, :]
    kept = mask > 0
    return np.where(kept, 0.0, fill)[:, None, None, :] if mask.ndim == 2 else np.where(kept, 0.0, fill)[:, None]


@pytest.mark.parametrize("constant_mask", [False, True])
@pytest.mark.parametrize("form", sorted(MASKS))
@pytest.mark.parametrize("causal,fill", [(0, None), (1, -20000.0)])
def test_attention_masks(rng, form, constant_mask, causal, fill):
    x, w, b = _data(rng)
    mask = MASKS[form]
    attrs = {"num_heads": HEADS, "unidirectional": causal, **({} if fill is None else {"mask_filter_value": fill})}
    node = ms_node("Attention", ["x", "w", "b", "mask"], ["y"], **attrs)
    feeds = {"x": x, "w": w, "b": b}
    if constant_mask:
        model = contrib_model(node, feeds, ["y"], {"mask": mask})
    else:
        feeds["mask"] = mask
        model = contrib_model(node, feeds, ["y"])
    (y,) = against_ort(model, feeds)
    want = _attention(x, w, b, HEADS, _mask_term(mask, -10000.0 if fill is None else fill), causal=bool(causal))[0]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5)


def test_unidirectional_attention(rng):
    x, w, b = _data(rng)
    node = ms_node("Attention", ["x", "w", "b"], ["y"], num_heads=HEADS, unidirectional=1)
    (y,) = against_ort(contrib_model(node, {"x": x}, ["y"], {"w": w, "b": b}), {"x": x})
    np.testing.assert_allclose(y, _attention(x, w, b, HEADS, causal=True)[0], rtol=1e-5, atol=1e-5)
    # the first query sees only the first key: its output is that key's value
    v0 = (x[:, 0].astype(np.float64) @ w[:, 2 * HIDDEN:] + b[2 * HIDDEN:])
    np.testing.assert_allclose(y[:, 0], v0, rtol=1e-5, atol=1e-5)


def test_attention_scale_and_qkv_hidden_sizes(rng):
    x, w, b = _data(rng, columns=8 + 8 + 12)
    node = ms_node("Attention", ["x", "w", "b"], ["y"], num_heads=HEADS, qkv_hidden_sizes=[8, 8, 12], scale=0.3)
    (y,) = against_ort(contrib_model(node, {"x": x, "w": w, "b": b}, ["y"]), {"x": x, "w": w, "b": b})
    assert y.shape == (B, S, 12)
    np.testing.assert_allclose(y, _attention(x, w, b, HEADS, scale=0.3, sizes=[8, 8, 12])[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seq,mask", [(4, None), (1, None), (4, "raw")])
def test_attention_with_past_and_present(rng, seq, mask):
    x, w, b = _data(rng, seq=seq)
    past = rng.standard_normal((2, B, HEADS, 3, HIDDEN // HEADS)).astype(F32)
    feeds = {"x": x, "past": past}
    inputs = ["x", "w", "b", "", "past"]
    additive = None
    if mask == "raw":
        raw = np.ones((B, 3 + seq), np.int32)
        raw[0, 1] = raw[1, 5] = 0
        feeds["mask"], inputs[3] = raw, "mask"
        additive = _mask_term(raw, -10000.0, 3 + seq)
    node = ms_node("Attention", inputs, ["y", "present"], num_heads=HEADS, unidirectional=int(mask is None))
    y, present = against_ort(contrib_model(node, feeds, ["y", "present"], {"w": w, "b": b}), feeds)
    want, want_present = _attention(x, w, b, HEADS, additive, causal=mask is None, past=past)
    assert present.shape == (2, B, HEADS, 3 + seq, HIDDEN // HEADS)
    np.testing.assert_allclose(present, want_present, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_attention_present_without_past(rng):
    x, w, b = _data(rng)
    node = ms_node("Attention", ["x", "w", "b"], ["y", "present"], num_heads=HEADS, unidirectional=1)
    y, present = against_ort(contrib_model(node, {"x": x}, ["y", "present"], {"w": w, "b": b}), {"x": x})
    np.testing.assert_allclose(present, _attention(x, w, b, HEADS, causal=True)[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias_shape", [(1, HEADS, S, S), (B, 1, S, S), (B, HEADS, S, S)])
def test_attention_bias_with_mask_and_causality(rng, bias_shape):
    x, w, b = _data(rng)
    feeds = {"x": x, "mask": np.array([3, 2], np.int32), "attention_bias": rng.standard_normal(bias_shape).astype(F32)}
    node = ms_node("Attention", ["x", "w", "b", "mask", "", "attention_bias"], ["y"], num_heads=HEADS, unidirectional=1)
    (y,) = against_ort(contrib_model(node, feeds, ["y"], {"w": w, "b": b}), feeds)
    additive = feeds["attention_bias"] + _mask_term(feeds["mask"], -10000.0)
    causal = np.arange(S)[None, :] > np.arange(S)[:, None]
    want = _attention(x, w, b, HEADS, np.where(causal, LOWEST, additive))[0]  # lowest replaces bias and mask there
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_attention_without_bias_input(rng):
    x, w, _ = _data(rng)
    (y,) = against_ort(contrib_model(ms_node("Attention", ["x", "w"], ["y"], num_heads=HEADS), {"x": x}, ["y"],
                                     {"w": w}), {"x": x})
    np.testing.assert_allclose(y, _attention(x, w, None, HEADS)[0], rtol=1e-5, atol=1e-5)


def test_attention_float16(rng):
    x, w, b = (a.astype(np.float16) for a in _data(rng))
    node = ms_node("Attention", ["x", "w", "b"], ["y", "present"], num_heads=HEADS)
    y, present = against_ort(contrib_model(node, {"x": x}, ["y", "present"], {"w": w, "b": b}), {"x": x},
                             rtol=2e-3, atol=2e-3)
    assert y.dtype == present.dtype == np.float16


@pytest.mark.parametrize("attrs,inputs,extra,reason,message", [
    ({"do_rotary": 1}, [], {}, UNSUPPORTED_ATTRIBUTE, "do_rotary=1"),
    ({"past_present_share_buffer": 1}, [], {}, UNSUPPORTED_ATTRIBUTE, "past_present_share_buffer"),
    ({}, ["mask"], {"mask": np.ones((B, 1, S, S), np.int32)}, UNSUPPORTED_ATTRIBUTE, "4-D mask_index"),
    ({}, ["mask"], {"mask": np.ones(3 * B + 2, np.int32)}, UNSUPPORTED_ATTRIBUTE, "(3B+2) form"),
    ({}, ["mask"], {"mask": np.ones((B, S), np.int64)}, UNSUPPORTED_DTYPE, "int32 only"),
    ({}, ["mask"], {"mask": np.ones((B, S + 1), np.int32)}, INVALID_MODEL, "is neither (2, 4) nor (2, 4, 4)"),
    ({"qkv_hidden_sizes": [8, 4, 12]}, [], {}, INVALID_MODEL, "qkv_hidden_sizes=[8, 4, 12]"),
    ({"num_heads": 3}, [], {}, INVALID_MODEL, "multiples of num_heads=3"),
])
def test_attention_rejections(rng, attrs, inputs, extra, reason, message):
    x, w, b = _data(rng)
    node = ms_node("Attention", ["x", "w", "b", *inputs], ["y"], **{"num_heads": HEADS, **attrs})
    rejected(contrib_model(node, {"x": x}, ["y"], {"w": w, "b": b, **extra}), reason, message)


# -- QAttention ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("weight_dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("variant", ["plain", "mask-unidirectional", "past"])
def test_quantized_attention(rng, weight_dtype, per_column, variant):
    """The projection is float((x - x_zp) @ (w - w_zp)) * (x_scale * w_scale) + bias, exact here
    (``integer_oracle``); onnxruntime is a second opinion for uint8 weights only (u8s8 saturates on AVX2 CPUs
    without VNNI)."""
    columns = 3 * HIDDEN
    x = rng.integers(0, 256, (B, S, HIDDEN)).astype(np.uint8)
    info = np.iinfo(weight_dtype)
    w = rng.integers(info.min, info.max + 1, (HIDDEN, columns)).astype(weight_dtype)
    bias = rng.standard_normal(columns).astype(F32)
    x_scale, x_zp = np.float32(0.02), np.uint8(120)
    w_scale = rng.uniform(0.001, 0.01, (columns,) if per_column else ()).astype(F32)
    w_zp = (rng.integers(100, 150, (columns,) if per_column else ()) if weight_dtype == np.uint8 else
            np.zeros((columns,) if per_column else (), np.int64)).astype(weight_dtype)
    constants = {"w": w, "bias": bias, "x_scale": x_scale, "w_scale": w_scale, "x_zp": x_zp, "w_zp": w_zp}
    inputs, outputs, attrs, feeds = ["x", "w", "bias", "x_scale", "w_scale", "", "x_zp", "w_zp"], ["y"], {}, {"x": x}
    past = additive = None
    if variant == "mask-unidirectional":
        inputs[5], feeds["mask"], attrs["unidirectional"] = "mask", np.array([3, 2], np.int32), 1
        additive = _mask_term(feeds["mask"], -10000.0)
    if variant == "past":
        past = rng.standard_normal((2, B, HEADS, 3, HIDDEN // HEADS)).astype(F32)
        inputs.append("past")
        feeds["past"], outputs, attrs["unidirectional"] = past, ["y", "present"], 1
    model = contrib_model(ms_node("QAttention", inputs, outputs, num_heads=HEADS, **attrs), feeds, outputs, constants)
    got = ours(model, feeds)
    acc = matmul_accumulate(x.reshape(B * S, HIDDEN), w, x_zp, w_zp.reshape(-1))
    qkv = (acc.astype(F32) * (w_scale.reshape(-1) * x_scale) + bias).reshape(B, S, columns)
    want, want_present = _attention(x, w, None, HEADS, additive, causal=variant != "plain", past=past, qkv=qkv)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)
    if variant == "past":
        np.testing.assert_allclose(got[1], want_present, rtol=1e-5, atol=1e-5)
    if weight_dtype == np.uint8:
        against_ort(model, feeds)


@pytest.mark.parametrize("position,value,reason,message", [
    (3, np.full(2, 0.02, F32), UNSUPPORTED_ATTRIBUTE, "input_scale"),
    (6, np.full(2, 120, np.uint8), UNSUPPORTED_ATTRIBUTE, "input_zero_point"),
    (4, np.full(5, 0.01, F32), INVALID_MODEL, "weight_scale must be float32 with one value or 24"),
])
def test_quantized_attention_rejections(rng, position, value, reason, message):
    names = ["x", "w", "bias", "x_scale", "w_scale", "", "x_zp", "w_zp"]
    constants = {"w": rng.integers(0, 256, (HIDDEN, 3 * HIDDEN)).astype(np.uint8),
                 "bias": np.zeros(3 * HIDDEN, F32), "x_scale": np.float32(0.02), "w_scale": np.float32(0.01),
                 "x_zp": np.uint8(128), "w_zp": np.uint8(128)}
    constants[names[position]] = value
    x = rng.integers(0, 256, (B, S, HIDDEN)).astype(np.uint8)
    rejected(contrib_model(ms_node("QAttention", names, ["y"], num_heads=HEADS), {"x": x}, ["y"], constants),
             reason, message)
