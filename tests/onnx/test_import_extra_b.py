"""RMSNormalization, RotaryEmbedding, SwiGLU, Attention, TensorScatter, DynamicQuantizeLinear, ConvInteger,
QLinearConv and MaxUnpool through the importer: what the node suite misses (other dtypes, constant inputs that
fold, grouped heads with caches, windows with nonpad_kv_seqlen, repeated unpool indices, per-channel integer
convolutions ...), compared with onnxruntime on one-node models (with the ONNX reference where onnxruntime has no
kernel or knowingly differs), and the clear rejections."""
from __future__ import annotations

import zlib

import integer_oracle
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from support import ort_run

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.onnx_import import ConversionError, from_onnx

ort = pytest.importorskip("onnxruntime")

F16, F32, F64 = np.float16, np.float32, np.float64
I64, U8, I8, I32 = np.int64, np.uint8, np.int8, np.int32
TOL = {np.dtype(F16): (2e-3, 2e-3), np.dtype(F32): (1e-5, 1e-5), np.dtype(F64): (1e-9, 1e-9)}


def _model(op, inputs, opset, attrs, constants=(), outputs=("y",), node_inputs=None):
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


def _run_ours(model, feeds):
    result = from_onnx(model)
    compilation = Compilation(result.model)
    compilation.build()
    names = [result.model.tensors[i].name for i in result.model.inputs]
    return Executor(compilation).run_arrays([np.asarray(feeds[n]) for n in names])


def check(op, inputs, opset, attrs=None, constants=(), outputs=("y",), against="ort", tol=None, node_inputs=None):
    model = _model(op, inputs, opset, attrs or {}, constants, outputs, node_inputs)
    feeds = {n: a for n, a in inputs.items() if n and n not in constants}
    if against == "ort":
        expected = ort_run(model, feeds)
    elif against == "reference":
        expected = ReferenceEvaluator(model).run(None, feeds)
    else:  # expected outputs computed by the test
        expected = against
    actual = _run_ours(model, feeds)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        if want.dtype.kind == "f":
            rtol, atol = tol or TOL[want.dtype]
            np.testing.assert_allclose(got.astype(F64), want.astype(F64), rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)
    return actual


def rejects(op, inputs, reason, opset, attrs=None, constants=(), match="", outputs=("y",)):
    model = _model(op, inputs, opset, attrs or {}, constants, outputs)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    issue = info.value.issues[0]
    assert issue.reason == reason and match in issue.message, str(info.value)


def rng_for(case_id: str):
    return np.random.default_rng(zlib.crc32(case_id.encode()))


def randn(rng, shape, dtype=F32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# -- RMSNormalization --------------------------------------------------------------------------------------------

RMS_CASES = [
    ("rms-f16-last-axis", F16, (2, 3, 8), (8,), {}),
    ("rms-f64-axis1", F64, (2, 3, 4), (3, 4), {"axis": 1, "epsilon": 1e-3}),
    ("rms-f32-scale-broadcast", F32, (2, 5, 6), (1, 6), {"axis": -1}),
]


@pytest.mark.parametrize("case,dtype,shape,scale_shape,attrs", RMS_CASES, ids=[c[0] for c in RMS_CASES])
def test_rms_normalization(case, dtype, shape, scale_shape, attrs):
    rng = rng_for(case)
    check("RMSNormalization", {"x": randn(rng, shape, dtype), "scale": randn(rng, scale_shape, dtype)}, 23, attrs)


def test_rms_normalization_rejects_bfloat16_stash():
    x = np.ones((2, 4), F32)
    rejects("RMSNormalization", {"x": x, "scale": np.ones(4, F32)}, "unsupported_attribute", 23,
            {"stash_type": 16}, match="stash_type")


# -- RotaryEmbedding ---------------------------------------------------------------------------------------------

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
    x = randn(rng, shape, dtype)
    batch, seq = shape[0], (shape[1] if len(shape) == 3 else shape[2])
    head = shape[-1] if len(shape) == 4 else shape[-1] // attrs["num_heads"]
    half = (rdim or head) // 2
    if with_positions:
        cos, sin = _caches(rng, 10, half, dtype)
        positions = rng.integers(0, 10, (batch, seq)).astype(I64)
        check("RotaryEmbedding", {"x": x, "cos": cos, "sin": sin, "pos": positions}, 23, attrs)
    else:
        cos, sin = _caches(rng, batch * seq, half, dtype)
        check("RotaryEmbedding", {"x": x, "cos": cos.reshape(batch, seq, half), "sin": sin.reshape(batch, seq, half)},
              23, attrs)


def test_rotary_embedding_constant_positions_and_caches_fold():
    rng = rng_for("rope-constants")
    cos, sin = _caches(rng, 6, 4, F32)
    inputs = {"x": randn(rng, (1, 2, 3, 8)), "cos": cos, "sin": sin, "pos": np.asarray([[5, 0, 3]], I64)}
    check("RotaryEmbedding", inputs, 23, {}, constants=("cos", "sin", "pos"))


def test_rotary_embedding_rejects_3d_without_num_heads():
    cos, sin = _caches(rng_for("rope-bad"), 4, 4, F32)
    rejects("RotaryEmbedding", {"x": np.ones((1, 2, 16), F32), "cos": cos, "sin": sin,
                                "pos": np.zeros((1, 2), I64)}, "invalid_model", 23, match="num_heads")


# -- SwiGLU (no onnxruntime kernel: the ONNX reference) ------------------------------------------------------------

@pytest.mark.parametrize("alpha,dtype", [(1.702, F32), (0.5, F64)], ids=["swiglu-alpha-f32", "swiglu-alpha-f64"])
def test_swiglu(alpha, dtype):
    rng = rng_for(f"swiglu-{alpha}")
    check("SwiGLU", {"a": randn(rng, (3, 4), dtype, 3.0), "b": randn(rng, (3, 4), dtype)}, 28, {"alpha": alpha},
          against="reference")


# -- Attention ---------------------------------------------------------------------------------------------------

def _qkv(rng, q_shape, k_shape, v_shape, dtype=F32):
    return {"Q": randn(rng, q_shape, dtype), "K": randn(rng, k_shape, dtype), "V": randn(rng, v_shape, dtype)}


def test_attention_3d_gqa_past_causal_bool_mask():
    rng = rng_for("attn-3d-gqa-past")
    inputs = _qkv(rng, (2, 3, 4 * 4), (2, 3, 2 * 4), (2, 3, 2 * 5))
    mask = rng.random((2, 1, 3, 7)) > 0.3
    mask[..., 0] = True
    inputs.update({"mask": mask, "past_key": randn(rng, (2, 2, 4, 4)), "past_value": randn(rng, (2, 2, 4, 5))})
    check("Attention", inputs, 23, {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1},
          outputs=("y", "present_key", "present_value"))


def test_attention_short_masks_are_padded_as_masked_keys():  # onnxruntime rejects a short mask: the reference
    rng = rng_for("attn-short-mask")
    inputs = _qkv(rng, (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4))
    inputs["mask"] = rng.random((3, 3)) > 0.2
    check("Attention", inputs, 23, {}, against="reference")
    inputs["mask"] = randn(rng, (2, 3, 4))
    check("Attention", inputs, 23, {"is_causal": 1}, against="reference")


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_attention_qk_output_modes_with_softcap(mode):
    rng = rng_for(f"attn-mode-{mode}")
    inputs = _qkv(rng, (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4))
    inputs["mask"] = randn(rng, (3, 5))
    check("Attention", inputs, 23, {"softcap": 1.5, "qk_matmul_output_mode": mode, "scale": 0.7},
          outputs=("y", "", "", "qk"))


def test_attention_window_with_runtime_nonpad_lengths():
    rng = rng_for("attn-window-nonpad")
    inputs = _qkv(rng, (3, 2, 2, 4), (3, 2, 6, 4), (3, 2, 6, 4))
    inputs.update({"mask": randn(rng, (2, 6)), "nonpad": np.asarray([6, 3, 2], I64)})
    check("Attention", inputs, 25, {"is_causal": 1, "left_window_size": 1, "right_window_size": 0},
          node_inputs=["Q", "K", "V", "mask", "", "", "nonpad"])


def test_attention_constant_bool_mask_with_fully_masked_row():
    rng = rng_for("attn-const-mask")
    inputs = _qkv(rng, (2, 2, 3, 4), (2, 2, 4, 4), (2, 2, 4, 4))
    inputs["mask"] = np.asarray([[True, False, True, True], [False] * 4, [True, True, False, False]])
    out = check("Attention", inputs, 23, {}, constants=("mask",), outputs=("y", "", "", "qk"),
                against="reference")
    assert not np.isnan(out[0]).any() and (out[0][:, :, 1] == 0).all()


@pytest.mark.parametrize("dtype,precision", [(F32, 11), (F16, 1)], ids=["attn-f32-double-softmax",
                                                                         "attn-f16-float-softmax"])
def test_attention_softmax_precision(dtype, precision):
    rng = rng_for(f"attn-precision-{precision}")
    inputs = _qkv(rng, (1, 2, 3, 8), (1, 2, 4, 8), (1, 2, 4, 8), dtype)
    check("Attention", inputs, 23, {"softmax_precision": precision, "is_causal": 1})


def test_attention_rejects_3d_without_heads():
    inputs = _qkv(rng_for("attn-bad-3d"), (1, 2, 8), (1, 2, 8), (1, 2, 8))
    rejects("Attention", inputs, "invalid_model", 23, match="q_num_heads")


def test_attention_rejects_bfloat16_softmax_precision():
    inputs = _qkv(rng_for("attn-bad-precision"), (1, 1, 2, 4), (1, 1, 2, 4), (1, 1, 2, 4))
    rejects("Attention", inputs, "unsupported_dtype", 23, {"softmax_precision": 16}, match="softmax_precision")


# -- TensorScatter -----------------------------------------------------------------------------------------------

SCATTER_CASES = [  # case, cache shape, update length, axis, mode, write indices (None: absent), constant
    ("ts-linear-runtime", (2, 3, 6, 4), 2, -2, "linear", [1, 4], False),
    ("ts-circular-wraps", (2, 2, 5, 3), 3, 2, "circular", [4, 7], False),
    ("ts-linear-constant-axis1", (3, 5, 2), 2, 1, "linear", [0, 3, 2], True),
    ("ts-no-indices", (2, 4, 3), 3, 1, "linear", None, False),
]


@pytest.mark.parametrize("case,shape,seq,axis,mode,writes,constant", SCATTER_CASES, ids=[c[0] for c in SCATTER_CASES])
def test_tensor_scatter(case, shape, seq, axis, mode, writes, constant):
    rng = rng_for(case)
    u_shape = list(shape)
    u_shape[axis] = seq
    inputs = {"past": randn(rng, shape), "update": randn(rng, u_shape)}
    if writes is not None:
        inputs["writes"] = np.asarray(writes, I64)
    check("TensorScatter", inputs, 24, {"axis": axis, "mode": mode}, constants=("writes",) if constant else ())


def test_tensor_scatter_rejects_constant_overflowing_linear_write():
    inputs = {"past": np.zeros((1, 4, 2), F32), "update": np.zeros((1, 2, 2), F32), "writes": np.asarray([3], I64)}
    rejects("TensorScatter", inputs, "invalid_model", 24, {"axis": 1}, constants=("writes",), match="run past")


# -- DynamicQuantizeLinear ---------------------------------------------------------------------------------------

DQL_CASES = {
    "dql-all-positive": np.asarray([[0.5, 1.0, 3.75], [2.0, 0.25, 1.5]], F32),
    "dql-all-negative": np.asarray([-0.3, -2.0, -1.1, -0.9], F32),
    "dql-all-zero": np.zeros((2, 2), F32),
    "dql-ties": np.asarray([-2.55, 0.0, 0.005, 0.015, 1.275, 2.55], F32) * 2,
    "dql-scalar": np.asarray(-1.25, F32),
}


@pytest.mark.parametrize("case", list(DQL_CASES))
def test_dynamic_quantize_linear(case):
    # expected values from the spec's formulas (integer_oracle), not from onnxruntime's quantizer kernel
    x = DQL_CASES[case]
    check("DynamicQuantizeLinear", {"x": x}, 11, outputs=("y", "scale", "zp"),
          against=list(integer_oracle.dynamic_quantize_linear(x)))


def test_dynamic_quantize_linear_random_matches_reference():
    x = randn(rng_for("dql-random"), (3, 7), scale=4.0)
    check("DynamicQuantizeLinear", {"x": x}, 11, outputs=("y", "scale", "zp"), against="reference")


# -- ConvInteger / QLinearConv -----------------------------------------------------------------------------------

def _int_data(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)


CONV_INT_CASES = [  # case, x, w dtype, x shape, w shape, attrs, per-channel w zero point, constant w
    ("convint-u8-pads-strides", U8, U8, (1, 2, 6, 5), (3, 2, 3, 3), {"pads": [1, 0, 2, 1], "strides": [2, 1]}, False,
     True),
    ("convint-group-dilation", U8, U8, (2, 4, 7, 7), (6, 2, 2, 2), {"group": 2, "dilations": [2, 1]}, False, True),
    ("convint-depthwise-same-lower", U8, U8, (1, 3, 5, 5), (3, 1, 3, 3), {"group": 3, "auto_pad": "SAME_LOWER",
                                                                         "strides": [2, 2]}, False, True),
    ("convint-1d-runtime-weight", U8, U8, (2, 3, 9), (4, 3, 3), {"pads": [1, 1]}, False, False),
    ("convint-i8-weight-per-channel", U8, I8, (1, 2, 4, 4), (3, 2, 2, 2), {}, True, True),
]


@pytest.mark.parametrize("case,xt,wt,x_shape,w_shape,attrs,per_channel,constant_w", CONV_INT_CASES,
                         ids=[c[0] for c in CONV_INT_CASES])
def test_conv_integer(case, xt, wt, x_shape, w_shape, attrs, per_channel, constant_w):
    rng = rng_for(case)
    inputs = {"x": _int_data(rng, x_shape, xt), "w": _int_data(rng, w_shape, wt),
              "x_zp": np.asarray(131, xt), "w_zp": (_int_data(rng, (w_shape[0],), wt) if per_channel
                                                     else np.asarray(7, wt))}
    constants = ("x_zp", "w_zp") + (("w",) if constant_w else ())
    expected = integer_oracle.conv_accumulate(
        *_conv_operands(inputs["x"], inputs["w"], attrs), inputs["x_zp"], inputs["w_zp"], **_conv_geometry(
            inputs["x"], inputs["w"], attrs))
    if len(x_shape) == 3:
        expected = expected[:, :, 0, :]  # back from the unit height of the 2-D oracle
    got = check("ConvInteger", inputs, 10, attrs, constants=constants, against=[expected])[0]
    if wt == U8:  # a second opinion: onnxruntime's u8u8 kernels widen to int16 before multiplying, exact on every
        # CPU (only its u8s8/s8s8 path saturates); it takes uint8 weights only
        np.testing.assert_array_equal(got, ort_run(_model("ConvInteger", inputs, 10, attrs, constants),
                                                   {n: a for n, a in inputs.items() if n not in constants})[0])


def _conv_operands(x, w, attrs):
    """1-D convolutions as 2-D ones with a unit height (the oracle is 2-D)."""
    if x.ndim == 3:
        return x[:, :, None, :], w[:, :, None, :]
    return x, w


def _conv_geometry(x, w, attrs):
    """strides, pads [top, left, bottom, right], dilations and group of the oracle for an ONNX Conv's attributes,
    auto_pad resolved by the ONNX rule (SAME_UPPER puts the odd padding at the end, SAME_LOWER at the start)."""
    spatial = x.ndim - 2
    strides = list(attrs.get("strides", [1] * spatial))
    dilations = list(attrs.get("dilations", [1] * spatial))
    pads = list(attrs.get("pads", [0] * (2 * spatial)))
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * spatial)
        for axis in range(spatial):
            size, kernel = x.shape[2 + axis], (w.shape[2 + axis] - 1) * dilations[axis] + 1
            total = max((-(-size // strides[axis]) - 1) * strides[axis] + kernel - size, 0)
            small, large = total // 2, total - total // 2
            pads[axis], pads[spatial + axis] = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    if spatial == 1:
        strides, dilations, pads = [1] + strides, [1] + dilations, [0, pads[0], 0, pads[1]]
    return dict(strides=strides, pads=pads, dilations=dilations, group=attrs.get("group", 1))


QCONV_CASES = [  # case, x/y dtype, w dtype, per-channel w scale, bias, constant scales
    ("qconv-u8-per-channel-bias", U8, I8, True, True, True),
    ("qconv-i8-per-tensor", I8, I8, False, False, True),
    ("qconv-u8-runtime-scales", U8, U8, True, True, False),
]


@pytest.mark.parametrize("case,xt,wt,per_channel,with_bias,constant_scales", QCONV_CASES,
                         ids=[c[0] for c in QCONV_CASES])
def test_qlinear_conv(case, xt, wt, per_channel, with_bias, constant_scales):
    rng = rng_for(case)
    out_c = 4
    inputs = {"x": _int_data(rng, (1, 3, 6, 6), xt), "x_scale": np.asarray(0.02, F32),
              "x_zp": np.asarray(3 if xt == U8 else -2, xt), "w": _int_data(rng, (out_c, 3, 3, 3), wt),
              "w_scale": (rng.uniform(0.001, 0.01, out_c) if per_channel else np.asarray(0.004)).astype(F32),
              "w_zp": np.zeros(out_c if per_channel else (), wt), "y_scale": np.asarray(0.5, F32),
              "y_zp": np.asarray(121 if xt == U8 else 5, xt)}
    if with_bias:
        inputs["B"] = rng.integers(-2000, 2000, out_c).astype(I32)
    constants = ("x_zp", "w", "w_zp", "y_zp") + (("x_scale", "w_scale", "y_scale") if constant_scales else ())
    acc = integer_oracle.conv_accumulate(inputs["x"], inputs["w"], inputs["x_zp"], inputs["w_zp"], pads=[1, 1, 1, 1],
                                         bias=inputs.get("B"))
    expected = integer_oracle.requantize(acc, inputs["x_scale"], inputs["w_scale"], inputs["y_scale"], inputs["y_zp"])
    check("QLinearConv", inputs, 10, {"pads": [1, 1, 1, 1]}, constants=constants, against=[expected])
    check("QLinearConv", inputs, 10, {"pads": [1, 1, 1, 1]}, constants=constants, against="reference")
    # no onnxruntime opinion: its u8s8 QLinearConv saturates int16 sums on AVX2 CPUs without VNNI (up to 9 units
    # off on this very case there), so its answer depends on the CPU


def test_qlinear_conv_rounds_half_to_even_after_the_zero_point():
    # acc * scale = 2.5 exactly; reference: round(2.5 + 1) = 4 (not round(2.5) + 1 = 3)
    inputs = {"x": np.full((1, 1, 1, 1), 5, U8), "x_scale": np.asarray(0.5, F32), "x_zp": np.asarray(0, U8),
              "w": np.full((1, 1, 1, 1), 1, U8), "w_scale": np.asarray(1.0, F32), "w_zp": np.asarray(0, U8),
              "y_scale": np.asarray(1.0, F32), "y_zp": np.asarray(1, U8)}
    got = check("QLinearConv", inputs, 10, {}, constants=("w",), against="reference")[0]
    assert int(got.reshape(-1)[0]) == 4


def test_conv_integer_rejects_a_possible_int32_overflow():
    inputs = {"x": np.zeros((1, 1100, 6, 6), U8), "w": np.full((1, 1100, 6, 6), 255, U8)}
    rejects("ConvInteger", inputs, "unsupported_attribute", 10, constants=("w",), match="overflow")


def test_conv_integer_rejects_3d():
    inputs = {"x": np.zeros((1, 1, 2, 2, 2), U8), "w": np.zeros((1, 1, 1, 1, 1), U8)}
    rejects("ConvInteger", inputs, "unsupported_attribute", 10, constants=("w",), match="3-D convolution")


# -- MaxUnpool ---------------------------------------------------------------------------------------------------

def _pooled(rng, shape, kernel, strides, pads=None):
    """MaxPool output and indices of random data (onnxruntime), overlapping windows give repeated indices."""
    x = randn(rng, shape)
    attrs = {"kernel_shape": kernel, "strides": strides}
    if pads:
        attrs["pads"] = pads
    model = _model("MaxPool", {"x": x}, 12, attrs, outputs=("y", "i"))
    return ort_run(model, {"x": x})


@pytest.mark.parametrize("constant", [False, True], ids=["unpool-runtime-indices", "unpool-constant-indices"])
def test_max_unpool_overlapping_windows_repeat_indices(constant):
    values, indices = _pooled(rng_for(f"unpool-overlap-{constant}"), (2, 3, 7, 7), [3, 3], [2, 2])
    assert len(np.unique(indices)) < indices.size  # the case is about repeated indices
    check("MaxUnpool", {"x": values, "i": indices}, 11, {"kernel_shape": [3, 3], "strides": [2, 2]},
          constants=("i",) if constant else ())


def test_max_unpool_1d_with_pads_and_matching_output_shape():
    values, indices = _pooled(rng_for("unpool-1d"), (1, 2, 8), [2], [2], pads=[1, 1])
    check("MaxUnpool", {"x": values, "i": indices, "shape": np.asarray([1, 2, 8], I64)}, 22,
          {"kernel_shape": [2], "strides": [2], "pads": [1, 1]}, constants=("shape",))


def test_max_unpool_3d():
    values, indices = _pooled(rng_for("unpool-3d"), (1, 1, 4, 4, 4), [2, 2, 2], [2, 2, 2])
    check("MaxUnpool", {"x": values, "i": indices}, 9, {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]})


def test_max_unpool_larger_output_shape_follows_the_reference():
    values, indices = _pooled(rng_for("unpool-bigger"), (1, 2, 4, 4), [2, 2], [2, 2])
    check("MaxUnpool", {"x": values, "i": indices, "shape": np.asarray([1, 2, 5, 6], I64)}, 22,
          {"kernel_shape": [2, 2], "strides": [2, 2]}, constants=("shape",), against="reference")


def test_max_unpool_needs_constant_output_shape():
    rejects("MaxUnpool", {"x": np.ones((1, 1, 2, 2), F32), "i": np.zeros((1, 1, 2, 2), I64),
                          "shape": np.asarray([1, 1, 4, 4], I64)}, "needs_constant_input", 22,
            {"kernel_shape": [2, 2], "strides": [2, 2]})
