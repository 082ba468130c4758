"""Quantized ONNX models become quantized NNRt models (issue 15), end to end on small models made in the test:

* a float CNN (convolution + ReLU, depthwise convolution + ReLU6, a residual add, concatenation, max and global
  average pooling, a nearest resize, a sigmoid, a dense head) quantized by onnxruntime's own tool
  (``quantize_static``: QDQ and QOperator, per tensor and per channel, uint8 and int8 activations) -- onnxruntime
  only writes the models; the oracle is ``onnx.reference`` (exact, CPU-independent), never onnxruntime's integer
  kernels;
* for each: the ops read quantized tensors (>= 90 %), the transposes are the float twin's, the outputs are within one
  quantization step of onnx.reference, and the NNRt model exports to QDQ ONNX that onnxruntime runs and that
  re-imports to the same quantized NNRt model;
* a transposed convolution, hard-swish, slice / reshape / transpose, matmul and softmax in QDQ;
* hand-made QDQ groups for what quantize_static does not write (torch's Clip between its own Q / DQ).
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import ort_session

from nnrt_onnx import to_onnx
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.workflows.inference import run_model
from nnrt_onnx.workflows.quant_compare import quantized_outputs, reference_evaluator

quantization = pytest.importorskip("onnxruntime.quantization")

SHAPE = (1, 3, 12, 12)


def _float_cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(7)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    inits = {"w1": w(8, 3, 3, 3), "b1": w(8), "wd": w(8, 1, 3, 3), "bd": w(8), "w2": w(8, 8, 1, 1), "b2": w(8),
             "wf": w(16, 10), "bf": w(10), "zero": np.array(0, np.float32), "six": np.array(6, np.float32),
             "scales": np.array([1, 1, 2, 2], np.float32)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "wd", "bd"], ["cd"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Clip", ["cd", "zero", "six"], ["r6"]),
        helper.make_node("Conv", ["r6", "w2", "b2"], ["c2"]),
        helper.make_node("Add", ["c2", "r1"], ["res"]),
        helper.make_node("MaxPool", ["res"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Resize", ["mp", "", "scales"], ["up"], mode="nearest"),
        helper.make_node("Sigmoid", ["up"], ["sg"]),
        helper.make_node("Concat", ["sg", "res"], ["cat"], axis=1),
        helper.make_node("GlobalAveragePool", ["cat"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "wf", "bf"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _data(count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, SHAPE).astype(np.float32) for _ in range(count)]


class _Reader(quantization.CalibrationDataReader):
    def __init__(self, arrays):
        self.items = iter([{"x": a} for a in arrays])

    def get_next(self):
        return next(self.items, None)


@pytest.fixture(scope="module")
def float_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("quant") / "float.onnx"
    onnx.save(_float_cnn(), str(path))
    return path


def _quantize_static(float_path, fmt: str, per_channel: bool, activations: str) -> onnx.ModelProto:
    out = float_path.parent / f"{fmt}_{per_channel}_{activations}.onnx"
    quantization.quantize_static(
        str(float_path), str(out), _Reader(_data(4, 1)),
        quant_format=quantization.QuantFormat.QDQ if fmt == "qdq" else quantization.QuantFormat.QOperator,
        per_channel=per_channel, weight_type=quantization.QuantType.QInt8,
        activation_type=quantization.QuantType.QUInt8 if activations == "u8" else quantization.QuantType.QInt8)
    return onnx.load(str(out))


def _signature(model) -> list[tuple]:
    """Operations with the dtype and quant params of every tensor they read and write."""
    def tensor(index):
        t = model.tensors[index]
        q = t.quant
        return int(t.dtype), None if q is None else (tuple(np.round(q.scales, 9)), tuple(q.zero_points))
    return [(op.op, tuple(map(tensor, op.inputs)), tuple(map(tensor, op.outputs))) for op in model.operations]


VARIANTS = [(fmt, pc, act) for fmt in ("qdq", "qop") for pc in (False, True) for act in ("u8", "s8")]


@pytest.mark.parametrize("fmt,per_channel,activations", VARIANTS,
                         ids=[f"{f}-{'pc' if p else 'pt'}-{a}" for f, p, a in VARIANTS])
def test_a_statically_quantized_cnn_becomes_a_quantized_nnrt_model(float_path, fmt, per_channel, activations):
    model = _quantize_static(float_path, fmt, per_channel, activations)
    result = from_onnx(model)
    summary = result.stats["quantization"]
    assert summary["quantized_ops"] / summary["compute_ops"] >= 0.9, summary
    twin = from_onnx(str(float_path))
    assert result.stats["transposes"] == twin.stats["transposes"]
    convolutions = [op for op in result.model.operations
                    if op.op in (OP.OH_NN_OPS_CONV2D, OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE)]
    assert len(convolutions) == 3
    for op in convolutions:  # int8 weights, INT32 bias, quantized activations in and out
        x, weight, bias = (result.model.tensors[i] for i in op.inputs)
        assert weight.dtype.name == "OH_NN_INT8" and bias.dtype.name == "OH_NN_INT32"
        assert x.quant is not None and result.model.tensors[op.outputs[0]].quant is not None
        assert len(weight.quant.scales) == (weight.dims[0] if per_channel else 1)

    (step,) = quantized_outputs(model).values()
    for seed in (2, 3):
        x = _data(1, seed)[0]
        expected = reference_evaluator(model).run(None, {"x": x})[0]
        actual = run_model(result.model, [x]).outputs[0]
        assert np.abs(actual.astype(np.float64) - expected).max() / step <= 1 + 1e-4

    exported = to_onnx(result.model, check=True)
    assert {n.op_type for n in exported.graph.node} >= {"QuantizeLinear", "DequantizeLinear", "Conv"}
    again = from_onnx(exported)
    assert _signature(again.model) == _signature(result.model)
    # onnxruntime runs the export; QDQ fusion off (support.ort_session): its float kernels between exact
    # (de)quantizations, not its CPU-dependent u8s8 integer kernels
    session = ort_session(exported)
    x = _data(1, 4)[0]
    ours = run_model(result.model, [x]).outputs[0]
    theirs = session.run(None, {session.get_inputs()[0].name: x})[0]
    assert np.abs(ours.astype(np.float64) - theirs).max() / step <= 1 + 1e-4


def _float_sequence() -> onnx.ModelProto:
    """Transposed convolution, hard-swish, slice, reshape, transpose, matmul, softmax."""
    rng = np.random.default_rng(9)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    inits = {"wt": w(4, 4, 2, 2), "bt": w(4), "starts": np.array([0], np.int64), "ends": np.array([8], np.int64),
             "axes": np.array([2], np.int64), "shape": np.array([1, 4, 96], np.int64), "wm": w(4, 4)}
    nodes = [helper.make_node("ConvTranspose", ["x", "wt", "bt"], ["ct"], strides=[2, 2]),
             helper.make_node("HardSwish", ["ct"], ["hs"]),
             helper.make_node("Slice", ["hs", "starts", "ends", "axes"], ["sl"]),
             helper.make_node("Reshape", ["sl", "shape"], ["rs"]),
             helper.make_node("Transpose", ["rs"], ["tr"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["tr", "wm"], ["mm"]),
             helper.make_node("Softmax", ["mm"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "sequence", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SEQUENCE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 96, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


SEQUENCE = (1, 4, 6, 6)


@pytest.mark.parametrize("per_channel", [False, True], ids=["pt", "pc"])
def test_transposed_conv_hardswish_moves_matmul_and_softmax_fold_in_qdq(tmp_path, per_channel):
    onnx.save(_float_sequence(), str(tmp_path / "f.onnx"))
    rng = np.random.default_rng(1)
    reader = _Reader([rng.uniform(-1, 1, SEQUENCE).astype(np.float32) for _ in range(4)])
    quantization.quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), reader,
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=per_channel,
                                 weight_type=quantization.QuantType.QInt8,
                                 activation_type=quantization.QuantType.QUInt8)
    model = onnx.load(str(tmp_path / "q.onnx"))
    result = from_onnx(model)
    summary = result.stats["quantization"]
    assert summary["float_fallbacks"] == {} and summary["quantized_ops"] == summary["compute_ops"] == 4
    ops = {op.op for op in result.model.operations}
    assert {OP.OH_NN_OPS_CONV2D_TRANSPOSE, OP.OH_NN_OPS_HSWISH, OP.OH_NN_OPS_MATMUL, OP.OH_NN_OPS_SOFTMAX} <= ops
    assert result.stats["transposes"] == from_onnx(_float_sequence()).stats["transposes"]
    (step,) = quantized_outputs(model).values()
    x = np.random.default_rng(5).uniform(-1, 1, SEQUENCE).astype(np.float32)
    expected = reference_evaluator(model).run(None, {"x": x})[0]
    actual = run_model(result.model, [x]).outputs[0]
    assert np.abs(actual.astype(np.float64) - expected).max() / step <= 1 + 1e-4
    assert _signature(from_onnx(to_onnx(result.model, check=True)).model) == _signature(result.model)


def test_dynamic_quantization_is_compact_and_says_its_form(tmp_path):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((32, 32)) * 0.2).astype(np.float32), f"w{i}")
             for i in range(3)]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h0"]), helper.make_node("Relu", ["h0"], ["r0"]),
             helper.make_node("MatMul", ["r0", "w1"], ["h1"]), helper.make_node("Relu", ["h1"], ["r1"]),
             helper.make_node("MatMul", ["r1", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "f.onnx"))
    quantization.quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "d.onnx"),
                                  weight_type=quantization.QuantType.QInt8)
    dynamic = onnx.load(str(tmp_path / "d.onnx"))
    assert any(n.op_type == "DynamicQuantizeLinear" for n in dynamic.graph.node)
    float_ops = len(from_onnx(model).model.operations)
    result = from_onnx(dynamic)
    assert len(result.model.operations) <= 1.5 * float_ops
    assert result.stats["quantization"]["dynamic"]["form"] == "float"
    x = np.random.default_rng(1).standard_normal((4, 32)).astype(np.float32)
    expected = reference_evaluator(dynamic).run(None, {"x": x})[0]
    actual = run_model(result.model, [x]).outputs[0]
    cosine = float(actual.ravel() @ expected.ravel() / np.linalg.norm(actual) / np.linalg.norm(expected))
    assert cosine >= 0.999


# -- a Clip between its own Q / DQ (torch's QDQ export) --------------------------------------------------------------

def _conv_clip(clip_scale: float) -> onnx.ModelProto:
    rng = np.random.default_rng(5)
    f = np.float32
    inits = {"sx": np.array(0.02, f), "zx": np.array(128, np.uint8), "w": rng.integers(-90, 90, (4, 2, 3, 3), np.int8),
             "sw": np.array(0.01, f), "b": rng.integers(-300, 300, 4).astype(np.int32), "sb": np.array(0.0002, f),
             "sc": np.array(0.03, f), "zc": np.array(60, np.uint8), "sr": np.array(clip_scale, f),
             "lo": np.array(0, f), "hi": np.array(6, f)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "sw"], ["wf"]),
             helper.make_node("DequantizeLinear", ["b", "sb"], ["bf"]),
             helper.make_node("Conv", ["xf", "wf", "bf"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "sc", "zc"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "sc", "zc"], ["cf"]),
             helper.make_node("Clip", ["cf", "lo", "hi"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "sr", "zc"], ["rq"]),
             helper.make_node("DequantizeLinear", ["rq", "sr", "zc"], ["y"])]
    graph = helper.make_graph(nodes, "conv_clip", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("clip_scale,fused", [(0.03, True), (0.05, False)])
def test_a_clip_between_q_and_dq_is_a_quantized_relu6(clip_scale, fused):
    model = _conv_clip(clip_scale)
    result = from_onnx(model)
    ops = [op.op for op in result.model.operations]
    assert OP.OH_NN_OPS_CLIP not in ops and result.stats["quantization"]["float_fallbacks"] == {}
    # same params around the clip: it becomes the convolution's fused RELU6; other params: a quantized RELU6
    assert (OP.OH_NN_OPS_RELU6 in ops) is not fused
    x = np.random.default_rng(2).uniform(-3, 3, (1, 2, 6, 6)).astype(np.float32)
    expected = reference_evaluator(model).run(None, {"x": x})[0]
    actual = run_model(result.model, [x]).outputs[0]
    assert np.abs(actual.astype(np.float64) - expected).max() / clip_scale <= 1 + 1e-4


# -- issue 28: linear resize of quantized integers (QOperator), batch norms kept between quantized convolutions ----

def _float_unet_bilinear() -> onnx.ModelProto:
    """A small U-Net whose decoder upsamples bilinearly (Resize linear, half_pixel): onnxruntime's QOperator quantizer
    leaves that Resize on the uint8 / int8 tensors."""
    rng = np.random.default_rng(11)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    inits = {"w1": w(8, 3, 3, 3), "b1": w(8), "w2": w(8, 8, 3, 3), "b2": w(8), "wh": w(2, 16, 1, 1), "bh": w(2),
             "scales": np.array([1, 1, 2, 2], np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["mp", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Resize", ["r2", "", "scales"], ["up"], mode="linear",
                              coordinate_transformation_mode="half_pixel"),
             helper.make_node("Concat", ["up", "r1"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "wh", "bh"], ["c3"]),
             helper.make_node("Sigmoid", ["c3"], ["y"])]
    graph = helper.make_graph(nodes, "unet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 12, 12])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _quantized(float_model, tmp_path, fmt: str, activations: str, per_channel: bool = False) -> onnx.ModelProto:
    onnx.save(float_model, str(tmp_path / "float.onnx"))
    quantization.quantize_static(
        str(tmp_path / "float.onnx"), str(tmp_path / "q.onnx"), _Reader(_data(4, 1)),
        quant_format=quantization.QuantFormat.QDQ if fmt == "qdq" else quantization.QuantFormat.QOperator,
        per_channel=per_channel, weight_type=quantization.QuantType.QInt8,
        activation_type=quantization.QuantType.QUInt8 if activations == "u8" else quantization.QuantType.QInt8)
    return onnx.load(str(tmp_path / "q.onnx"))


def _steps_off_reference(model, converted, seeds=(2, 3, 4)) -> float:
    (step,) = quantized_outputs(model).values()
    worst = 0.0
    for seed in seeds:
        x = _data(1, seed)[0]
        expected = reference_evaluator(model).run(None, {"x": x})[0]
        actual = run_model(converted, [x]).outputs[0]
        worst = max(worst, float(np.abs(actual.astype(np.float64) - expected).max() / step))
    return worst


@pytest.mark.parametrize("activations", ["u8", "s8"])
def test_a_qoperator_unet_with_bilinear_resize_converts_on_integers(tmp_path, activations):
    """Was refused ("linear resize of uint8 is not supported (float types only)"). onnxruntime's QOperator
    quantizer leaves the Resize on the integers; it becomes a quantized RESIZE_BILINEAR (the input's parameters on
    its output), every compute op on integers, and onnx.reference (interpolating the integers, rounding half to
    even) agrees to the step: the quantized resize interpolates in float64, so its ties round exactly."""
    model = _quantized(_float_unet_bilinear(), tmp_path, "qop", activations)
    assert any(n.op_type == "Resize" for n in model.graph.node)  # (on the integers: no Q / DQ around it)
    result = from_onnx(model)
    summary = result.stats["quantization"]
    assert summary["quantized_ops"] == summary["compute_ops"] and summary["float_fallbacks"] == {}, summary
    resizes = [op for op in result.model.operations if op.op == OP.OH_NN_OPS_RESIZE_BILINEAR]
    assert len(resizes) == 1
    (resize,) = resizes
    source, target = (result.model.tensors[t] for t in (resize.inputs[0], resize.outputs[0]))
    assert source.quant is not None and target.quant is not None and source.dtype == target.dtype
    assert _steps_off_reference(model, result.model) == 0
    assert _signature(from_onnx(to_onnx(result.model, check=True)).model) == _signature(result.model)


def _float_bn_net() -> onnx.ModelProto:
    """Convolutions with their BatchNormalization kept (a MobileNetV2 block exported without folding): conv,
    BN, ReLU6; depthwise conv, BN, ReLU6; 1x1 conv, BN."""
    rng = np.random.default_rng(7)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    def bn(name, c):
        return {f"{name}_s": (rng.random(c) * 0.5 + 0.75).astype(np.float32), f"{name}_b": w(c), f"{name}_m": w(c),
                f"{name}_v": (rng.random(c) * 0.5 + 0.75).astype(np.float32)}

    inits = {"w1": w(8, 3, 3, 3), "wd": w(8, 1, 3, 3), "w2": w(4, 8, 1, 1), **bn("n1", 8), **bn("nd", 8),
             **bn("n2", 4), "zero": np.array(0, np.float32), "six": np.array(6, np.float32)}

    def norm(x, name, y):
        return helper.make_node("BatchNormalization", [x, f"{name}_s", f"{name}_b", f"{name}_m", f"{name}_v"], [y])

    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), norm("c1", "n1", "b1"),
             helper.make_node("Clip", ["b1", "zero", "six"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd"], ["cd"], pads=[1, 1, 1, 1], group=8), norm("cd", "nd", "bd"),
             helper.make_node("Clip", ["bd", "zero", "six"], ["rd"]),
             helper.make_node("Conv", ["rd", "w2"], ["c2"]), norm("c2", "n2", "y")]
    graph = helper.make_graph(nodes, "bn_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 12, 12])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("per_channel", [False, True], ids=["pt", "pc"])
def test_batch_norms_kept_between_quantized_convolutions_compute_on_integers(tmp_path, per_channel):
    """QDQ of a net exported with its BatchNormalization kept: each BN sat in float between a DQ and a Q (a float
    fallback and two casts per BN). Now each is a quantized BATCH_NORM (the convolution's q1 in, the next Q's q2
    out: dequantize, normalise, quantize, as onnxruntime), or folded into the convolution where the fold stays
    within one step of onnxruntime; the conversion says which and why."""
    model = _quantized(_float_bn_net(), tmp_path, "qdq", "u8", per_channel)
    result = from_onnx(model)
    summary = result.stats["quantization"]
    assert summary["float_fallbacks"] == {} and summary["quantized_ops"] == summary["compute_ops"], summary
    assert summary["quantize"] == summary["dequantize"] == 1  # the model's input and output only
    twin = len(from_onnx(_float_bn_net()).model.operations)
    norms = summary["batchnorm"]
    assert norms["folded"] + norms["kept"] == 3 and len(norms["why_kept"]) == norms["kept"]
    assert len(result.model.operations) == twin + 2 + norms["kept"]  # (+ the input's Q and the output's DQ)
    assert _steps_off_reference(model, result.model) <= 1 + 1e-4


def _qdq_conv_bn(gains: np.ndarray, out_scale: float) -> onnx.ModelProto:
    """Hand-made QDQ: x -Q/DQ-> Conv (int8 symmetric weights, INT32 bias) -Q1/DQ-> BatchNormalization -Q2/DQ-> y,
    with batch-norm gains ``gains`` (per channel) and q2's scale ``out_scale`` (q1: scale 0.02, zero point 128)."""
    rng = np.random.default_rng(3)
    c = len(gains)
    f = np.float32
    variance = np.full(c, 1.0, f)
    inits = {"sx": np.array(0.01, f), "zx": np.array(128, np.uint8),
             "w": rng.integers(-127, 128, (c, 2, 3, 3)).astype(np.int8), "sw": np.array(0.004, f),
             "b": rng.integers(-500, 500, c).astype(np.int32), "sb": np.array(0.01 * 0.004, f),
             "s1": np.array(0.02, f), "z1": np.array(128, np.uint8), "s2": np.array(out_scale, f),
             "z2": np.array(128, np.uint8), "gamma": (gains * np.sqrt(variance + 1e-5)).astype(f),
             "beta": rng.uniform(-0.02, 0.02, c).astype(f), "mean": rng.uniform(-0.02, 0.02, c).astype(f),
             "var": variance}
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "sw"], ["wf"]),
             helper.make_node("DequantizeLinear", ["b", "sb"], ["bf"]),
             helper.make_node("Conv", ["xf", "wf", "bf"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "s1", "z1"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "s1", "z1"], ["cf"]),
             helper.make_node("BatchNormalization", ["cf", "gamma", "beta", "mean", "var"], ["n"]),
             helper.make_node("QuantizeLinear", ["n", "s2", "z2"], ["nq"]),
             helper.make_node("DequantizeLinear", ["nq", "s2", "z2"], ["y"])]
    graph = helper.make_graph(nodes, "conv_bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 6, 6])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("gains,out_scale,folds", [
    # |gain| x 0.02 within [q2 step, 2 q2 steps): the fold rounds once and stays within a step; one gain negative
    (np.array([1.3, -1.5, 1.9, 1.4]), 0.025, True),
    # a gain of 4: onnxruntime's first rounding alone moves the result by up to 1.6 steps of q2: kept
    (np.array([1.3, 4.0, 1.5, 1.4]), 0.025, False),
])
def test_a_batch_norm_folds_into_a_quantized_convolution_only_within_one_step(gains, out_scale, folds):
    model = _qdq_conv_bn(gains, out_scale)
    result = from_onnx(model)
    ops = [op.op for op in result.model.operations]
    assert (OP.OH_NN_OPS_BATCH_NORM not in ops) is folds, ops
    norms = result.stats["quantization"]["batchnorm"]
    assert (norms["folded"], norms["kept"]) == ((1, 0) if folds else (0, 1))
    if not folds:
        assert "steps of its output" in norms["why_kept"][0]
    conv = next(op for op in result.model.operations if op.op == OP.OH_NN_OPS_CONV2D)
    assert result.model.tensors[conv.inputs[1]].dtype.name == "OH_NN_INT8"
    worst = 0.0
    for seed in range(4):
        x = np.random.default_rng(seed).uniform(-1.2, 1.2, (1, 2, 6, 6)).astype(np.float32)
        expected = reference_evaluator(model).run(None, {"x": x})[0]
        actual = run_model(result.model, [x]).outputs[0]
        worst = max(worst, float(np.abs(actual.astype(np.float64) - expected).max() / out_scale))
    assert worst <= 1 + 1e-4


def _float_pad_split_head() -> onnx.ModelProto:
    """Ops onnxruntime's QOperator quantizer leaves on the integers (Pad with the zero point as fill, Split, Gather,
    Reshape, ArgMax) between quantized ones (QLinearConv, QLinearLeakyRelu, QLinearAveragePool, QGemm,
    QLinearSoftmax)."""
    rng = np.random.default_rng(3)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    inits = {"w1": w(8, 3, 3, 3), "b1": w(8), "w2": w(8, 4, 3, 3), "b2": w(8),
             "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "split": np.array([4, 4], np.int64),
             "idx": np.array([0, 2, 4, 6], np.int64), "shape": np.array([1, -1], np.int64), "wf": w(4 * 6 * 6, 6),
             "bf": w(6)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["c1"], ["l1"], alpha=0.1),
             helper.make_node("Pad", ["l1", "pads"], ["p1"], mode="constant"),
             helper.make_node("Split", ["p1", "split"], ["s1", "s2"], axis=1),
             helper.make_node("Conv", ["s1", "w2", "b2"], ["c2"]),
             helper.make_node("Gather", ["c2", "idx"], ["g"], axis=1),
             helper.make_node("AveragePool", ["g"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Reshape", ["ap", "shape"], ["flat"]),
             helper.make_node("Gemm", ["flat", "wf", "bf"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["y"], axis=-1),
             helper.make_node("ArgMax", ["logits"], ["cls"], axis=-1, keepdims=0)]
    graph = helper.make_graph(nodes, "pad_split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6]),
                               helper.make_tensor_value_info("cls", TensorProto.INT64, [1])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("fmt", ["qop", "qdq"])
def test_pad_split_gather_argmax_on_integers(tmp_path, fmt):
    """QOperator: the Pad of the integers (fill: the zero point) was refused downstream ("has dtype float32
    (int8/uint8)"); it is now a quantized PAD, and ArgMax reads the integers (their order is the real values')
    instead of a five-op view of them (or, in QDQ, a float fallback). LeakyRelu stays the one fallback (NNRt
    quantizes no LEAKY_RELU). The class and the probabilities agree with onnx.reference."""
    model = _quantized(_float_pad_split_head(), tmp_path, fmt, "u8")
    if fmt == "qop":
        assert {"Pad", "ArgMax"} <= {n.op_type for n in model.graph.node}
    result = from_onnx(model)
    summary = result.stats["quantization"]
    assert summary["float_fallbacks"] == {"LEAKY_RELU": 1}, summary
    ops = [op.op for op in result.model.operations]
    assert OP.OH_NN_OPS_ROUND not in ops and OP.OH_NN_OPS_CAST not in ops
    pad = next(op for op in result.model.operations if op.op == OP.OH_NN_OPS_PAD)
    assert result.model.tensors[pad.inputs[0]].quant is not None
    step = quantized_outputs(model)["y"]
    # QDQ leaves the Gemm's bias in float; as the INT32 bias of a quantized FULL_CONNECTION it is rounded to
    # s_in x s_w, which can move a logit across a rounding tie: one step of the logits, two of the softmax
    allowed = 1 if fmt == "qop" else 2
    for seed in (2, 3, 4):
        x = _data(1, seed)[0]
        expected = reference_evaluator(model).run(None, {"x": x})
        y, cls = run_model(result.model, [x]).outputs
        assert np.abs(y.astype(np.float64) - expected[0]).max() / step <= allowed + 1e-4
        assert cls.tolist() == expected[1].tolist()
