"""Import of the attention family (Attention, RotaryEmbedding): what the node suite misses (grouped heads with
caches, windows with nonpad_kv_seqlen, softcap output modes, constant inputs that fold ...), compared with
onnxruntime on one-node models (with the ONNX reference where onnxruntime has no kernel or knowingly differs), and
the clear rejections.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

from onnx_import.import_support import (
    F16,
    F32,
    I64,
    check_named,
    dynamic_model,
    randn1,
    rejects_named,
    rng_for,
    runs_like_onnxruntime,
)

# -- RotaryEmbedding ---------------------------------------------------------------------------------------------------

def _caches(rng, rows, half, dtype):
    angles = rng.uniform(0, 6.3, (rows, half))
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


ROPE_CASES = [  # case, x shape, attrs, rotary dim (0: head size), positions, dtype
    ("rope-3d-positions-partial", (2, 3, 4 * 8), {"num_heads": 4, "rotary_embedding_dim": 4}, 4, True, F32),
    ("rope-3d-interleaved-partial", (1, 5, 2 * 6), {"num_heads": 2, "interleaved": 1, "rotary_embedding_dim": 4},
     4, True, F32),
    ("rope-4d-interleaved-f16", (2, 2, 3, 8), {"interleaved": 1}, 0, True, F16),
    ("rope-4d-no-positions", (2, 2, 3, 8), {"num_heads": 2}, 0, False, F32),
]


@pytest.mark.parametrize("case,shape,attrs,rdim,with_positions,dtype", ROPE_CASES, ids=[c[0] for c in ROPE_CASES])
def test_rotary_embedding(case, shape, attrs, rdim, with_positions, dtype):
    rng = rng_for(case)
    x = randn1(rng, shape, dtype)
    batch, seq = shape[0], (shape[1] if len(shape) == 3 else shape[2])
    head = shape[-1] if len(shape) == 4 else shape[-1] // attrs["num_heads"]
    half = (rdim or head) // 2
    if with_positions:
        cos, sin = _caches(rng, 10, half, dtype)
        positions = rng.integers(0, 10, (batch, seq)).astype(I64)
        check_named("RotaryEmbedding", {"x": x, "cos": cos, "sin": sin, "pos": positions}, 23, attrs)
    else:
        cos, sin = _caches(rng, batch * seq, half, dtype)
        check_named("RotaryEmbedding", {"x": x, "cos": cos.reshape(batch, seq, half), "sin": sin.reshape(batch, seq, half)},
              23, attrs)


def test_rotary_embedding_constant_positions_and_caches_fold():
    rng = rng_for("rope-constants")
    cos, sin = _caches(rng, 6, 4, F32)
    inputs = {"x": randn1(rng, (1, 2, 3, 8)), "cos": cos, "sin": sin, "pos": np.asarray([[5, 0, 3]], I64)}
    check_named("RotaryEmbedding", inputs, 23, {}, constants=("cos", "sin", "pos"))


def test_rotary_embedding_rejects_3d_without_num_heads():
    cos, sin = _caches(rng_for("rope-bad"), 4, 4, F32)
    rejects_named("RotaryEmbedding", {"x": np.ones((1, 2, 16), F32), "cos": cos, "sin": sin,
                                "pos": np.zeros((1, 2), I64)}, "invalid_model", 23, match="num_heads")


# -- Attention ---------------------------------------------------------------------------------------------------------

def _qkv(rng, q_shape, k_shape, v_shape, dtype=F32):
    return {"Q": randn1(rng, q_shape, dtype), "K": randn1(rng, k_shape, dtype), "V": randn1(rng, v_shape, dtype)}


def test_attention_3d_gqa_past_causal_bool_mask():
    rng = rng_for("attn-3d-gqa-past")
    inputs = _qkv(rng, (2, 3, 4 * 4), (2, 3, 2 * 4), (2, 3, 2 * 5))
    mask = rng.random((2, 1, 3, 7)) > 0.3
    mask[..., 0] = True
    inputs.update({"mask": mask, "past_key": randn1(rng, (2, 2, 4, 4)), "past_value": randn1(rng, (2, 2, 4, 5))})
    check_named("Attention", inputs, 23, {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1},
          outputs=("y", "present_key", "present_value"))


def test_attention_short_masks_are_padded_as_masked_keys():  # onnxruntime rejects a short mask: the reference
    rng = rng_for("attn-short-mask")
    inputs = _qkv(rng, (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4))
    inputs["mask"] = rng.random((3, 3)) > 0.2
    check_named("Attention", inputs, 23, {}, against="reference")
    inputs["mask"] = randn1(rng, (2, 3, 4))
    check_named("Attention", inputs, 23, {"is_causal": 1}, against="reference")


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_attention_qk_output_modes_with_softcap(mode):
    rng = rng_for(f"attn-mode-{mode}")
    inputs = _qkv(rng, (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4))
    inputs["mask"] = randn1(rng, (3, 5))
    check_named("Attention", inputs, 23, {"softcap": 1.5, "qk_matmul_output_mode": mode, "scale": 0.7},
          outputs=("y", "", "", "qk"))


def test_attention_window_with_runtime_nonpad_lengths():
    rng = rng_for("attn-window-nonpad")
    inputs = _qkv(rng, (3, 2, 2, 4), (3, 2, 6, 4), (3, 2, 6, 4))
    inputs.update({"mask": randn1(rng, (2, 6)), "nonpad": np.asarray([6, 3, 2], I64)})
    check_named("Attention", inputs, 25, {"is_causal": 1, "left_window_size": 1, "right_window_size": 0},
          node_inputs=["Q", "K", "V", "mask", "", "", "nonpad"])


def test_attention_constant_bool_mask_with_fully_masked_row():
    rng = rng_for("attn-const-mask")
    inputs = _qkv(rng, (2, 2, 3, 4), (2, 2, 4, 4), (2, 2, 4, 4))
    inputs["mask"] = np.asarray([[True, False, True, True], [False] * 4, [True, True, False, False]])
    out = check_named("Attention", inputs, 23, {}, constants=("mask",), outputs=("y", "", "", "qk"),
                against="reference")
    assert not np.isnan(out[0]).any() and (out[0][:, :, 1] == 0).all()


@pytest.mark.parametrize("dtype,precision", [(F32, 11), (F16, 1)], ids=["attn-f32-double-softmax",
                                                                         "attn-f16-float-softmax"])
def test_attention_softmax_precision(dtype, precision):
    rng = rng_for(f"attn-precision-{precision}")
    inputs = _qkv(rng, (1, 2, 3, 8), (1, 2, 4, 8), (1, 2, 4, 8), dtype)
    check_named("Attention", inputs, 23, {"softmax_precision": precision, "is_causal": 1})


def test_attention_rejects_3d_without_heads():
    inputs = _qkv(rng_for("attn-bad-3d"), (1, 2, 8), (1, 2, 8), (1, 2, 8))
    rejects_named("Attention", inputs, "invalid_model", 23, match="q_num_heads")


def test_attention_rejects_bfloat16_softmax_precision():
    inputs = _qkv(rng_for("attn-bad-precision"), (1, 1, 2, 4), (1, 1, 2, 4), (1, 1, 2, 4))
    rejects_named("Attention", inputs, "unsupported_dtype", 23, {"softmax_precision": 16}, match="softmax_precision")


# -- dynamic batch and sequence (issue 26) -----------------------------------------------------------------------------

ATTENTION_DYNAMIC = {
    # name: (node inputs, attributes, inputs (name, dims), outputs (name, dims), sizes of a run from n)
    "mask_dynamic_batch": (["q", "k", "v", "mask"], {}, [("q", ["N", 2, 3, 4]), ("k", ["N", 2, 5, 4]),
                                                         ("v", ["N", 2, 5, 4]), ("mask", [3, 5])],
                           [("y", ["N", 2, 3, 4])]),
    "causal_dynamic_sequence": (["q", "k", "v"], {"is_causal": 1}, [("q", [1, 2, "S", 4]), ("k", [1, 2, "S", 4]),
                                                                     ("v", [1, 2, "S", 4])], [("y", [1, 2, "S", 4])]),
    "grouped_3d_causal": (["q", "k", "v"], {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1},
                          [("q", ["N", "S", 8]), ("k", ["N", "S", 4]), ("v", ["N", "S", 4])], [("y", ["N", "S", 8])]),
    "past_dynamic_lengths": (["q", "k", "v", "", "pk", "pv"], {"is_causal": 1},
                             [("q", ["N", 2, "S", 4]), ("k", ["N", 2, "S", 4]), ("v", ["N", 2, "S", 4]),
                              ("pk", ["N", 2, "P", 4]), ("pv", ["N", 2, "P", 4])],
                             [("y", ["N", 2, "S", 4]), ("present_k", ["N", 2, None, 4]),
                              ("present_v", ["N", 2, None, 4])]),
}


@pytest.mark.parametrize("case", sorted(ATTENTION_DYNAMIC))
def test_attention_over_dynamic_dims(case):
    # the structural bias (causal frontier) from positions read at run time; reshapes with run-time shapes
    node_inputs, attrs, inputs, outputs = ATTENTION_DYNAMIC[case]
    model = dynamic_model([helper.make_node("Attention", node_inputs, [o for o, _ in outputs], **attrs)],
                          [(n, TP.BOOL if n == "mask" else TP.FLOAT, d) for n, d in inputs],
                          [(n, TP.FLOAT, d) for n, d in outputs], opset=23)
    rng = rng_for(case)
    feeds = []
    for n in (1, 2, 3):
        sizes = {"N": n, "S": n + 1, "P": n + 2}
        feeds.append({name: (rng.random([sizes.get(d, d) for d in dims]) > 0.3) if name == "mask"
                      else randn1(rng, [sizes.get(d, d) for d in dims]) for name, dims in inputs})
    runs_like_onnxruntime(model, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("rank", [3, 4])
def test_rotary_embedding_over_a_dynamic_batch_and_sequence(rank):
    rng = rng_for(f"rope{rank}")
    x_dims = ["N", 2, "S", 4] if rank == 4 else ["N", "S", 8]
    attrs = {} if rank == 4 else {"num_heads": 2, "interleaved": 1, "rotary_embedding_dim": 2}
    half = 2 if rank == 4 else 1
    model = dynamic_model([helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "positions"], ["y"], **attrs)],
                          [("x", TP.FLOAT, x_dims), ("positions", TP.INT64, ["N", "S"])], [("y", TP.FLOAT, x_dims)],
                          [("cos", randn1(rng, (8, half))), ("sin", randn1(rng, (8, half)))], opset=23)
    feeds = [{"x": randn1(rng, [{"N": n, "S": n + 1}.get(d, d) for d in x_dims]),
              "positions": rng.integers(0, 8, (n, n + 1)).astype(I64)} for n in (1, 2, 3)]
    runs_like_onnxruntime(model, feeds)
