"""Import of the spatial ONNX ops (conv, pooling, BN, LRN, resize, LSTM, (de)quantization): small models built with
onnx.helper, run natively and compared with onnxruntime; cases the node suite does not cover. Also the ONNX
pytorch-converted / pytorch-operator models whose ops are all claimed (each against its stored outputs)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import support
from onnx import helper, numpy_helper
from support import ort_session

from nnrt_onnx.compilation import Compilation
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.executor import Executor
from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.ir.rows import find_row
from nnrt_onnx.onnx_import.importer import from_onnx, opset_of

ort = pytest.importorskip("onnxruntime")

F = np.float32


def _rand(seed: int, *shape, dtype=F, low=None, high=None):
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.integers(low, high, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


_model = support.onnx_model


def _run_native(model, feeds: dict):
    return support.run_imported(model, feeds)


def _check(model, feeds: dict, rtol=1e-4, atol=1e-5, oracle: str = "ort"):
    """Compare with onnxruntime, or with the ONNX reference evaluator where onnxruntime lacks the case."""
    if oracle == "ort":
        session = ort_session(model)
        expected = session.run(None, feeds)
    else:
        from onnx.reference import ReferenceEvaluator

        expected = ReferenceEvaluator(model).run(None, feeds)
    actual, result = _run_native(model, feeds)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a = np.asarray(a)
        assert a.shape == e.shape and a.dtype == e.dtype
        if e.dtype.kind == "f":
            np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(a, e)
    return result


def _ops(result) -> set:
    return {op.op for op in result.model.operations}


def _node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


# ----------------------------------------------------------------------------------------------------------------
# convolutions

CONV_CASES = {
    "conv_1d_same_lower_dilated": (dict(auto_pad="SAME_LOWER", strides=[2], dilations=[2]), (2, 4, 11), (6, 4, 3), 1),
    "conv_1d_groups_pads": (dict(group=2, pads=[2, 1]), (1, 4, 9), (6, 2, 3), 2),
    "conv_2d_depthwise_multiplier": (dict(group=3, pads=[1, 0, 2, 1], strides=[2, 1]), (1, 3, 7, 6), (6, 1, 3, 3), 3),
    "conv_2d_same_upper_strided": (dict(auto_pad="SAME_UPPER", strides=[2, 3]), (1, 2, 8, 10), (4, 2, 3, 2), 4),
    "conv_2d_valid_grouped": (dict(auto_pad="VALID", group=2), (2, 4, 5, 5), (4, 2, 2, 3), 5),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv(case):
    attrs, x_shape, w_shape, seed = CONV_CASES[case]
    x, w, b = _rand(seed, *x_shape), _rand(seed + 10, *w_shape), _rand(seed + 20, w_shape[0])
    oracle = "reference" if "dilations" in attrs and "auto_pad" in attrs else "ort"  # onnxruntime refuses it
    _check(_model(_node("Conv", ["x", "w", "b"], **attrs), {"x": x}, {"w": w, "b": b}), {"x": x}, oracle=oracle)


def test_conv_weight_as_input_is_transposed_in_graph():
    x, w = _rand(1, 1, 3, 6, 6), _rand(2, 4, 3, 3, 3)
    result = _check(_model(_node("Conv", ["x", "w"], pads=[1, 1, 1, 1]), {"x": x, "w": w}), {"x": x, "w": w})
    assert OP.OH_NN_OPS_CONV2D in _ops(result)


CONV_TRANSPOSE_CASES = {
    "convtranspose_1d_output_padding": (dict(strides=[3], output_padding=[2], pads=[1, 0]), (1, 2, 5), (2, 3, 4)),
    "convtranspose_2d_group_dilated": (dict(group=2, strides=[2, 1], dilations=[1, 2], pads=[0, 1, 1, 0]),
                                       (1, 4, 4, 5), (4, 3, 3, 2)),
    "convtranspose_2d_output_shape_odd": (dict(strides=[2, 2], output_shape=[10, 8]), (1, 2, 5, 5), (2, 3, 3, 3)),
    "convtranspose_2d_output_shape_larger": (dict(strides=[2, 2], output_shape=[12, 12]), (1, 2, 5, 5), (2, 3, 3, 3)),
    "convtranspose_2d_same_lower": (dict(strides=[2, 2], auto_pad="SAME_LOWER"), (1, 2, 5, 4), (2, 3, 3, 3)),
}


@pytest.mark.parametrize("case", sorted(CONV_TRANSPOSE_CASES))
def test_conv_transpose(case):
    attrs, x_shape, w_shape = CONV_TRANSPOSE_CASES[case]
    x, w = _rand(7, *x_shape), _rand(8, *w_shape)
    b = _rand(9, w_shape[1] * attrs.get("group", 1))
    _check(_model(_node("ConvTranspose", ["x", "w", "b"], **attrs), {"x": x}, {"w": w, "b": b}), {"x": x})


# ----------------------------------------------------------------------------------------------------------------
# pooling

POOL_CASES = {
    "maxpool_1d_ceil": ("MaxPool", dict(kernel_shape=[3], strides=[2], ceil_mode=1, pads=[1, 0]), (1, 2, 10)),
    "maxpool_2d_dilated_padded": ("MaxPool", dict(kernel_shape=[2, 3], dilations=[2, 1], pads=[1, 1, 0, 1],
                                                  strides=[1, 2]), (1, 2, 7, 8)),
    "avgpool_2d_pads_as_big_as_kernel": ("AveragePool", dict(kernel_shape=[2, 2], pads=[2, 0, 0, 2],
                                                             count_include_pad=1), (1, 1, 5, 5)),
    "avgpool_2d_count_include_pad_ceil": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                                              ceil_mode=1, count_include_pad=1), (1, 2, 8, 7)),
    "avgpool_1d_count_include_pad": ("AveragePool", dict(kernel_shape=[4], pads=[2, 1], count_include_pad=1),
                                     (2, 3, 9)),
    "avgpool_2d_same_lower_exclude_pad": ("AveragePool", dict(kernel_shape=[3, 2], strides=[2, 2],
                                                              auto_pad="SAME_LOWER"), (1, 2, 7, 7)),
    "avgpool_3d_dilated_include_pad": ("AveragePool", dict(kernel_shape=[2, 2, 2], dilations=[1, 2, 1],
                                                           pads=[1, 0, 1, 0, 1, 0], count_include_pad=1),
                                       (1, 2, 4, 5, 4)),
    "lppool_2d_p1_ceil": ("LpPool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, p=1), (1, 2, 5, 5)),
    "lppool_1d_p3_pads": ("LpPool", dict(kernel_shape=[3], pads=[1, 1], p=3), (1, 2, 6)),
    "lppool_2d_p2_dilated": ("LpPool", dict(kernel_shape=[2, 2], dilations=[2, 2], p=2), (1, 1, 6, 6)),
}


@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pool(case):
    op, attrs, shape = POOL_CASES[case]
    x = _rand(11, *shape)
    oracle = "reference" if "as_big_as_kernel" in case else "ort"  # onnxruntime refuses it
    _check(_model(_node(op, ["x"], **attrs), {"x": x}, opset=19), {"x": x}, oracle=oracle)


def test_maxpool_uint8_uses_native_pool():
    x = _rand(3, 1, 2, 6, 6, dtype=np.uint8, low=0, high=255)
    result = _check(_model(_node("MaxPool", ["x"], kernel_shape=[2, 2], pads=[1, 1, 0, 0]), {"x": x}), {"x": x})
    assert OP.OH_NN_OPS_MAX_POOL in _ops(result)


def test_avgpool_count_include_pad_uses_pad_then_pool():
    x = _rand(4, 1, 2, 6, 6)
    model = _model(_node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1), {"x": x})
    assert {OP.OH_NN_OPS_PAD, OP.OH_NN_OPS_AVG_POOL} <= _ops(_check(model, {"x": x}))


GLOBAL_CASES = {
    "globalaveragepool_3d_input": ("GlobalAveragePool", {}, (2, 3, 7)),
    "globalaveragepool_5d_input": ("GlobalAveragePool", {}, (1, 2, 3, 4, 5)),
    "globalmaxpool_3d_input": ("GlobalMaxPool", {}, (2, 3, 7)),
    "globallppool_p2": ("GlobalLpPool", {"p": 2}, (1, 3, 4, 5)),
    "globallppool_p3_3d_input": ("GlobalLpPool", {"p": 3}, (2, 2, 6)),
}


@pytest.mark.parametrize("case", sorted(GLOBAL_CASES))
def test_global_pool(case):
    op, attrs, shape = GLOBAL_CASES[case]
    x = _rand(12, *shape)
    _check(_model(_node(op, ["x"], **attrs), {"x": x}), {"x": x})


# ----------------------------------------------------------------------------------------------------------------
# BatchNormalization, LRN


def _bn_stats(c, seed=13):
    return {"s": _rand(seed, c), "b": _rand(seed + 1, c), "m": _rand(seed + 2, c),
            "v": np.abs(_rand(seed + 3, c)) + 0.5}


def test_batchnorm_opset6_is_test_3d_input():
    x = _rand(14, 2, 3, 5)
    model = _model(_node("BatchNormalization", ["x", "s", "b", "m", "v"], is_test=1, epsilon=1e-3), {"x": x},
                   _bn_stats(3), opset=6)
    actual, _ = _run_native(model, {"x": x})
    st = _bn_stats(3)
    expected = (x - st["m"][:, None]) / np.sqrt(st["v"][:, None] + 1e-3) * st["s"][:, None] + st["b"][:, None]
    np.testing.assert_allclose(actual[0], expected, rtol=1e-5, atol=1e-5)


def test_batchnorm_spatial0_per_activation():
    x = _rand(15, 2, 3, 4)
    stats = {k: np.broadcast_to(v[:, None], (3, 4)) * np.linspace(0.5, 1.5, 4, dtype=F)
             for k, v in _bn_stats(3).items()}
    model = _model(_node("BatchNormalization", ["x", "s", "b", "m", "v"], spatial=0), {"x": x},
                   {k: np.ascontiguousarray(v) for k, v in stats.items()}, opset=7)
    actual, _ = _run_native(model, {"x": x})
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
    x = _rand(16, *shape)
    actual, _ = _run_native(_model(_node("LRN", ["x"], size=size, alpha=0.01, beta=0.6, bias=1.5), {"x": x}), {"x": x})
    np.testing.assert_allclose(actual[0], _lrn_spec(x, size, 0.01, 0.6, 1.5), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------------------------------------
# Resize / Upsample

RESIZE_CASES = {
    # name: (opset, attrs, input shape, scales, sizes, expected op)
    "resize_linear_half_pixel_bilinear_op": (13, dict(mode="linear"), (1, 2, 4, 5), [1, 1, 2, 1.6], None,
                                             OP.OH_NN_OPS_RESIZE_BILINEAR),
    "resize_linear_align_corners_sizes": (13, dict(mode="linear", coordinate_transformation_mode="align_corners"),
                                          (1, 2, 5, 4), None, [1, 2, 3, 7], OP.OH_NN_OPS_RESIZE_BILINEAR),
    "resize_linear_pytorch_half_pixel_size1": (13, dict(mode="linear",
                                                        coordinate_transformation_mode="pytorch_half_pixel"),
                                               (1, 1, 4, 6), None, [1, 1, 1, 3], OP.OH_NN_OPS_MATMUL),
    "resize_linear_3d_input": (13, dict(mode="linear"), (2, 3, 5), [1, 1, 2.5], None, OP.OH_NN_OPS_MATMUL),
    "resize_cubic_asymmetric_down": (13, dict(mode="cubic", coordinate_transformation_mode="asymmetric"),
                                     (1, 1, 8, 8), [1, 1, 0.5, 0.75], None, OP.OH_NN_OPS_MATMUL),
    "resize_nearest_non_integer_scales": (13, dict(mode="nearest", nearest_mode="round_prefer_ceil"),
                                          (1, 2, 5, 4), [1, 1, 1.5, 0.75], None, OP.OH_NN_OPS_GATHER),
    "resize_nearest_opset10_up_down": (10, dict(mode="nearest"), (1, 1, 4, 6), [1, 1, 1.7, 0.8], None,
                                       OP.OH_NN_OPS_GATHER),
    "resize_linear_opset10_asymmetric": (10, dict(mode="linear"), (1, 1, 4, 6), [1, 1, 2, 1.5], None,
                                         OP.OH_NN_OPS_RESIZE_BILINEAR),
    "resize_nearest_channel_axis": (13, dict(mode="nearest"), (1, 3, 2, 2), [1, 2, 1, 1], None, OP.OH_NN_OPS_GATHER),
}


@pytest.mark.parametrize("case", sorted(RESIZE_CASES))
def test_resize(case):
    opset, attrs, shape, scales, sizes, op = RESIZE_CASES[case]
    x = _rand(17, *shape)
    if opset == 10:
        node, inits = _node("Resize", ["x", "scales"], **attrs), {"scales": np.asarray(scales, F)}
    elif sizes is not None:
        node, inits = _node("Resize", ["x", "", "", "sizes"], **attrs), {"sizes": np.asarray(sizes, np.int64)}
    else:
        node, inits = _node("Resize", ["x", "", "scales"], **attrs), {"scales": np.asarray(scales, F)}
    result = _check(_model(node, {"x": x}, inits, opset=opset), {"x": x})
    assert op in _ops(result)


@pytest.mark.parametrize("case", ["upsample_opset7_nearest_attr", "upsample_opset9_linear"])
def test_upsample(case):
    x = _rand(18, 1, 2, 3, 4)
    if case == "upsample_opset7_nearest_attr":
        model = _model(_node("Upsample", ["x"], scales=[1.0, 1.0, 2.0, 3.0]), {"x": x}, opset=7)
    else:
        model = _model(_node("Upsample", ["x", "s"], mode="linear"), {"x": x},
                       {"s": np.asarray([1, 1, 2, 1.5], F)}, opset=9)
    _check(model, {"x": x})


# ----------------------------------------------------------------------------------------------------------------
# LSTM


def _lstm_inputs(seed, dirs, steps, batch, features, hidden, layout=0):
    x_shape = (batch, steps, features) if layout else (steps, batch, features)
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    return {"x": _rand(seed, *x_shape) * 0.5}, {
        "w": _rand(seed + 1, dirs, 4 * hidden, features) * 0.4, "r": _rand(seed + 2, dirs, 4 * hidden, hidden) * 0.4,
        "b": _rand(seed + 3, dirs, 8 * hidden) * 0.2, "h0": _rand(seed + 4, *state) * 0.3,
        "c0": _rand(seed + 5, *state) * 0.3}


LSTM_CASES = {
    "lstm_bidirectional_layout1_states": ("bidirectional", 1, ["x", "w", "r", "b", "", "h0", "c0"], ("y", "yh", "yc")),
    "lstm_reverse_all_outputs": ("reverse", 0, ["x", "w", "r", "b", "", "h0", "c0"], ("y", "yh", "yc")),
    "lstm_forward_only_yc_no_bias": ("forward", 0, ["x", "w", "r"], ("", "", "yc")),
    "lstm_bidirectional_y_only": ("bidirectional", 0, ["x", "w", "r", "b"], ("y",)),
}


@pytest.mark.parametrize("case", sorted(LSTM_CASES))
def test_lstm(case):
    direction, layout, inputs, outputs = LSTM_CASES[case]
    dirs = 2 if direction == "bidirectional" else 1
    feeds, weights = _lstm_inputs(19, dirs, 5, 2, 3, 4, layout)
    weights = {k: v for k, v in weights.items() if k in inputs}
    node = _node("LSTM", inputs, outputs, hidden_size=4, direction=direction, layout=layout)
    oracle = "reference" if layout else "ort"  # onnxruntime has no layout=1
    _check(_model(node, feeds, weights, opset=14, outputs=[o for o in outputs if o]), feeds, oracle=oracle)


# ----------------------------------------------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear


def test_qdq_per_axis_chain_uses_quant_dtype_cast():
    x = _rand(20, 2, 3, 4) * 3
    scale, zero = np.asarray([0.02, 0.05, 0.1], F), np.asarray([2, -4, 0], np.int8)
    model = _model([_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
                    _node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)], {"x": x}, {"s": scale, "z": zero},
                   opset=13, outputs=("y", "q"))
    result = _check(model, {"x": x})
    assert OP.OH_NN_OPS_QUANT_DTYPE_CAST in _ops(result)


@pytest.mark.parametrize("zero", [1, 2], ids=["quantize_ties_odd_zero_point", "quantize_ties_even_zero_point"])
def test_quantize_rounds_ties_to_even_before_the_zero_point(zero):
    x = np.asarray([0.5, 1.5, 2.5, -0.5, -1.5, 3.25], F)
    model = _model(_node("QuantizeLinear", ["x", "s", "z"]), {"x": x},
                   {"s": np.asarray(1.0, F), "z": np.asarray(zero, np.uint8)}, opset=13)
    result = _check(model, {"x": x})
    assert (OP.OH_NN_OPS_QUANT_DTYPE_CAST in _ops(result)) == (zero % 2 == 0)


def test_dequantize_raw_uint8_input_per_tensor():
    x = _rand(21, 3, 4, dtype=np.uint8, low=0, high=255)
    model = _model(_node("DequantizeLinear", ["x", "s", "z"]), {"x": x},
                   {"s": np.asarray(0.25, F), "z": np.asarray(100, np.uint8)}, opset=13)
    _check(model, {"x": x})


def test_quantize_to_int16_plain_integers():
    x = _rand(22, 2, 5) * 1000
    model = _model(_node("QuantizeLinear", ["x", "s", "z"]), {"x": x},
                   {"s": np.asarray(0.5, F), "z": np.asarray(7, np.int16)}, opset=21)
    _check(model, {"x": x})


def test_qdq_constant_weight_is_folded():
    x = _rand(23, 1, 2, 5, 5)
    w = _rand(24, 3, 2, 3, 3, dtype=np.int8, low=-128, high=127)
    model = _model([_node("DequantizeLinear", ["w", "ws"], ["wf"], axis=0), _node("Conv", ["x", "wf"])], {"x": x},
                   {"w": w, "ws": np.asarray([0.01, 0.02, 0.03], F)}, opset=13)
    result = _check(model, {"x": x})
    assert OP.OH_NN_OPS_QUANT_DTYPE_CAST not in _ops(result)


# ----------------------------------------------------------------------------------------------------------------
# clear rejections

REJECTIONS = {
    "conv_3d": (_node("Conv", ["x", "w"]), {"x": _rand(1, 1, 1, 3, 3, 3)}, {"w": _rand(2, 1, 1, 2, 2, 2)},
                "3-D convolution"),
    "maxpool_indices": (_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2]), {"x": _rand(1, 1, 1, 4, 4)}, {},
                        "Indices output"),
    "lstm_clip": (_node("LSTM", ["x", "w", "r"], hidden_size=2, clip=1.0), {"x": _rand(1, 2, 1, 3)},
                  {"w": _rand(2, 1, 8, 3), "r": _rand(3, 1, 8, 2)}, "clip"),
    "lstm_sequence_lens": (_node("LSTM", ["x", "w", "r", "", "sl"], hidden_size=2), {"x": _rand(1, 2, 2, 3)},
                           {"w": _rand(2, 1, 8, 3), "r": _rand(3, 1, 8, 2), "sl": np.asarray([2, 1], np.int32)},
                           "sequence_lens"),
    "maxpool_window_only_in_padding": (_node("MaxPool", ["x"], kernel_shape=[2, 2], pads=[2, 0, 0, 0]),
                                       {"x": _rand(1, 1, 1, 4, 4)}, {}, "entirely in the padding"),
    "quantize_blocked_to_uint8_per_tensor_param": (_node("QuantizeLinear", ["x", "s"], axis=1, block_size=2),
                                                   {"x": _rand(1, 2, 4)}, {"s": np.ones((2, 2), F)}, None),
}


@pytest.mark.parametrize("case", sorted(REJECTIONS))
def test_rejected_with_reason(case):
    node, inputs, inits, words = REJECTIONS[case]
    model = _model(node, inputs, inits, opset=21, outputs=list(node.output))
    if words is None:  # supported after all: must then be right
        _check(model, inputs)
        return
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    assert words in str(info.value)


# ----------------------------------------------------------------------------------------------------------------
# ONNX's pytorch-converted / pytorch-operator models

_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
_TORCH_MODELS = sorted(p.parent for kind in ("pytorch-converted", "pytorch-operator")
                       for p in (_DATA / kind).glob("*/model.onnx"))


def _unclaimed(model) -> list[str]:
    opset = opset_of(model)
    return sorted({n.op_type for n in model.graph.node
                   if n.domain not in ("", "ai.onnx") or find_row(n.op_type, opset) is None})


@pytest.mark.parametrize("folder", _TORCH_MODELS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pytorch_model(folder):
    model = onnx.load(str(folder / "model.onnx"))
    missing = _unclaimed(model)
    if missing:
        pytest.skip(f"ops without a mapping row at opset {opset_of(model)}: {missing}")
    try:
        result = from_onnx(model)
    except ConversionError as exc:
        pytest.skip(f"cannot convert: {exc.issues[0]}")
    compilation = Compilation(result.model)
    compilation.build()
    executor = Executor(compilation)
    initializers = {t.name for t in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    for data_set in sorted(folder.glob("test_data_set_*")):
        feeds = {}
        for position, name in enumerate(input_names):
            tensor = onnx.TensorProto()
            tensor.ParseFromString((data_set / f"input_{position}.pb").read_bytes())
            feeds[name] = numpy_helper.to_array(tensor)
        arrays = [feeds[result.model.tensors[i].name] for i in result.model.inputs]
        outputs = executor.run_arrays(arrays)
        assert len(outputs) == len(output_names)
        for position, actual in enumerate(outputs):
            tensor = onnx.TensorProto()
            tensor.ParseFromString((data_set / f"output_{position}.pb").read_bytes())
            np.testing.assert_allclose(np.asarray(actual), numpy_helper.to_array(tensor), rtol=1e-3, atol=1e-4)
