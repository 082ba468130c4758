"""Graphs written with onnx.helper in the shapes that real converters produce (their tools are not installable
here, or would make the corpus large): paddle2onnx, tf2onnx/jax2tf, a YOLO detection head, fp16 weights, an IR 3
model, and If/Loop/Scan. Seeded weights; needs only onnx and numpy (the tests build these models themselves).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from . import CorpusModel

V = helper.make_tensor_value_info


class _Graph:
    """A graph under construction: nodes, initializers (or Constant nodes) and fresh names."""

    def __init__(self, seed: int, constants_as_nodes: bool = False):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.constants_as_nodes = constants_as_nodes
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}.{self.count}"

    def const(self, array, hint: str = "const") -> str:
        array = np.asarray(array)
        name = self.name(hint)
        if self.constants_as_nodes:  # paddle2onnx writes every weight and scalar as a Constant node
            self.nodes.append(helper.make_node("Constant", [], [name], name=f"{name}.node",
                                               value=numpy_helper.from_array(array, name)))
        else:
            self.inits.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, shape, scale=None, hint="w", dtype=np.float32) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        scale = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        return self.const((self.rng.standard_normal(shape) * scale).astype(dtype), hint)

    def op(self, op_type: str, inputs, n_outputs: int = 1, hint: str | None = None, **attrs):
        outputs = [self.name(hint or op_type.lower()) for _ in range(n_outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=self.name(f"{op_type}_node"),
                                           **attrs))
        return outputs[0] if n_outputs == 1 else outputs

    def model(self, inputs, outputs, opset: int = 13, ir_version: int = 8, producer: str = "") -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "graph", inputs, outputs, initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name=producer)
        model.ir_version = ir_version
        inferred = onnx.shape_inference.infer_shapes(model)  # the outputs' types, as the writers state them
        for output, typed in zip(model.graph.output, inferred.graph.output):
            if not output.type.tensor_type.HasField("shape"):
                output.CopyFrom(typed)
        return model


def _image(seed: int, shape, low=0.0, high=1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, shape).astype(np.float32)


# -- paddle2onnx -------------------------------------------------------------------------------------------------------

def paddle_style() -> onnx.ModelProto:
    """A PP-LCNet-like classifier as paddle2onnx writes it: every weight and scalar a Constant node (hundreds),
    Conv + BatchNormalization, hardswish as x * HardSigmoid(x), ReLU6 as Clip with min/max inputs, an SE block,
    Reshape with 0 (copy a dim) and -1, Flatten-free flattening, MatMul + Add, Softmax; dynamic batch/height/width
    named p2o.DynamicDimension.N."""
    g = _Graph(11, constants_as_nodes=True)
    x = "x"
    channels = 3
    for stage, (out, stride) in enumerate([(8, 2), (8, 1), (16, 2), (16, 1), (24, 2), (24, 1)] * 3):
        groups = out if out == channels else 1
        w = g.weight((out, channels // groups, 3, 3), hint=f"conv{stage}.w")
        x = g.op("Conv", [x, w], pads=[1, 1, 1, 1], strides=[stride, stride], group=groups, hint=f"conv{stage}")
        x = g.op("BatchNormalization", [x, g.const(g.rng.uniform(0.5, 1.5, out).astype(np.float32), "bn.scale"),
                                        g.const(g.rng.uniform(-0.2, 0.2, out).astype(np.float32), "bn.bias"),
                                        g.const(g.rng.uniform(-0.2, 0.2, out).astype(np.float32), "bn.mean"),
                                        g.const(g.rng.uniform(0.5, 1.5, out).astype(np.float32), "bn.var")],
                 epsilon=1e-5)
        if stage % 2:
            gate = g.op("HardSigmoid", [x], alpha=0.1666667, beta=0.5)
            x = g.op("Mul", [x, gate])
        else:
            x = g.op("Clip", [x, g.const(np.float32(0), "min"), g.const(np.float32(6), "max")])
        if stage % 3 == 2:  # squeeze-and-excitation
            pooled = g.op("GlobalAveragePool", [x])
            squeezed = g.op("Conv", [pooled, g.weight((out // 4, out, 1, 1)), g.const(np.zeros(out // 4, np.float32))])
            squeezed = g.op("Relu", [squeezed])
            excited = g.op("Conv", [squeezed, g.weight((out, out // 4, 1, 1)), g.const(np.zeros(out, np.float32))])
            x = g.op("Mul", [x, g.op("HardSigmoid", [excited], alpha=0.2, beta=0.5)])
        channels = out
    tokens = g.op("Reshape", [x, g.const(np.asarray([0, 0, -1], np.int64), "shape")])  # [N, C, H*W]
    tokens = g.op("Transpose", [tokens], perm=[0, 2, 1])
    pooled = g.op("ReduceMean", [tokens], axes=[1], keepdims=1)  # [N, 1, C]
    # paddle's flatten(start_axis=1): the batch read with Shape -> Cast(int32) -> Slice -> Cast(int64), joined
    # with a Cast constant -1 (ONNX shape inference loses the rank of what follows)
    shape = g.op("Cast", [g.op("Shape", [pooled])], to=TP.INT32)
    batch = g.op("Slice", [shape, g.const(np.asarray([0], np.int64)), g.const(np.asarray([1], np.int64)),
                           g.const(np.asarray([0], np.int64))])
    target = g.op("Concat", [g.op("Cast", [batch], to=TP.INT64),
                             g.op("Cast", [g.const(np.asarray([-1], np.int32), "fill_constant")], to=TP.INT64)],
                  axis=-1)
    pooled = g.op("Reshape", [pooled, target])
    logits = g.op("Add", [g.op("MatMul", [pooled, g.weight((channels, 10))]), g.const(np.zeros(10, np.float32))])
    probs = g.op("Softmax", [logits], axis=1)
    g.nodes.append(helper.make_node("Identity", [probs], ["softmax_0.tmp_0"], name="fetch"))
    dims = ["p2o.DynamicDimension.0", 3, "p2o.DynamicDimension.1", "p2o.DynamicDimension.2"]
    return g.model([V("x", TP.FLOAT, dims)], [V("softmax_0.tmp_0", TP.FLOAT, ["p2o.DynamicDimension.0", 10])],
                   opset=11, producer="PaddlePaddle")


# -- tf2onnx / jax2tf ----------------------------------------------------------------------------------------------------

def jax2tf_style() -> onnx.ModelProto:
    """An NHWC model as tf2onnx writes a jax2tf export: Transpose to NCHW around each Conv, a bias broadcast with
    Expand to a shape computed from Shape, Cast chains (float -> int32 -> float quantisation, float -> bool -> float
    masks), Where, ReduceMean over the spatial axes, Squeeze with axes, MatMul; dims named unk__N."""
    g = _Graph(12)
    x = g.op("Transpose", ["input_1"], perm=[0, 3, 1, 2])
    x = g.op("Conv", [x, g.weight((8, 3, 3, 3)), g.const(np.zeros(8, np.float32))], pads=[1, 1, 1, 1])
    x = g.op("Transpose", [x], perm=[0, 2, 3, 1])  # back to NHWC
    shape = g.op("Shape", [x])
    bias = g.op("Expand", [g.const(np.linspace(-0.5, 0.5, 8, dtype=np.float32).reshape(1, 1, 1, 8), "bias"), shape])
    x = g.op("Add", [x, bias])
    quantised = g.op("Cast", [g.op("Cast", [g.op("Mul", [x, g.const(np.float32(16))])], to=TP.INT32)], to=TP.FLOAT)
    x = g.op("Div", [quantised, g.const(np.float32(16))])
    positive = g.op("Cast", [g.op("Cast", [g.op("Relu", [x])], to=TP.BOOL)], to=TP.FLOAT)
    x = g.op("Where", [g.op("Greater", [positive, g.const(np.float32(0.5))]), x,
                       g.op("Mul", [x, g.const(np.float32(0.1))])])
    x = g.op("Transpose", [x], perm=[0, 3, 1, 2])
    x = g.op("Conv", [x, g.weight((16, 8, 3, 3)), g.const(np.zeros(16, np.float32))], pads=[1, 1, 1, 1],
             strides=[2, 2])
    x = g.op("Transpose", [x], perm=[0, 2, 3, 1])
    pooled = g.op("ReduceMean", [x], axes=[1, 2], keepdims=1)
    pooled = g.op("Squeeze", [pooled, g.const(np.asarray([1, 2], np.int64), "axes")])
    logits = g.op("MatMul", [pooled, g.weight((16, 4))])
    g.nodes.append(helper.make_node("Identity", [logits], ["Identity:0"], name="output"))
    return g.model([V("input_1", TP.FLOAT, ["unk__7", "unk__8", "unk__9", 3])], [V("Identity:0", TP.FLOAT, None)],
                   opset=13, producer="tf2onnx")


# -- YOLO detection head -------------------------------------------------------------------------------------------------

def yolo_head() -> onnx.ModelProto:
    """A YOLOv8-style head on a tiny backbone: Split of the box/class channels, DFL (Reshape to 4 x 16 bins,
    Softmax, a 1x1 Conv with arange(16) weights), anchor points from Range over the feature map's height and width
    (read with Shape/Gather), Expand to the grid, dist2bbox with Split/Sub/Add/Concat, sigmoid class scores."""
    g = _Graph(13)
    classes, bins = 3, 16
    x = g.op("Conv", ["images", g.weight((8, 3, 3, 3)), g.const(np.zeros(8, np.float32))], pads=[1, 1, 1, 1],
             strides=[2, 2])
    x = g.op("Mul", [x, g.op("Sigmoid", [x])])  # SiLU
    features = g.op("Conv", [x, g.weight((4 * bins + classes, 8, 1, 1)),
                             g.const(np.zeros(4 * bins + classes, np.float32))], strides=[2, 2])
    shape = g.op("Shape", [features])
    height = g.op("Gather", [shape, g.const(np.int64(2), "i2")], axis=0)
    width = g.op("Gather", [shape, g.const(np.int64(3), "i3")], axis=0)
    flat = g.op("Reshape", [features, g.const(np.asarray([1, 4 * bins + classes, -1], np.int64), "flat")])
    box, cls = g.op("Split", [flat, g.const(np.asarray([4 * bins, classes], np.int64), "split")], n_outputs=2, axis=1)
    anchors_count = g.op("Mul", [height, width])
    dfl_shape = g.op("Concat", [g.const(np.asarray([1, 4, bins], np.int64), "dfl"),
                                g.op("Unsqueeze", [anchors_count, g.const(np.asarray([0], np.int64), "ax")])], axis=0)
    dist = g.op("Transpose", [g.op("Reshape", [box, dfl_shape])], perm=[0, 2, 1, 3])  # [1, bins, 4, A]
    dist = g.op("Softmax", [dist], axis=1)
    dist = g.op("Conv", [dist, g.const(np.arange(bins, dtype=np.float32).reshape(1, bins, 1, 1), "dfl.w")])
    dist = g.op("Reshape", [dist, g.op("Concat", [g.const(np.asarray([1, 4], np.int64), "b4"),
                                                  g.op("Unsqueeze", [anchors_count, g.const(np.asarray([0], np.int64))])],
                                       axis=0)])
    zero, one = g.const(np.int64(0), "zero"), g.const(np.int64(1), "one")
    xs = g.op("Add", [g.op("Cast", [g.op("Range", [zero, width, one])], to=TP.FLOAT), g.const(np.float32(0.5))])
    ys = g.op("Add", [g.op("Cast", [g.op("Range", [zero, height, one])], to=TP.FLOAT), g.const(np.float32(0.5))])
    grid = g.op("Concat", [g.op("Unsqueeze", [height, g.const(np.asarray([0], np.int64))]),
                           g.op("Unsqueeze", [width, g.const(np.asarray([0], np.int64))])], axis=0)
    gx = g.op("Expand", [g.op("Unsqueeze", [xs, g.const(np.asarray([0], np.int64))]), grid])
    gy = g.op("Expand", [g.op("Unsqueeze", [ys, g.const(np.asarray([1], np.int64))]), grid])
    points = g.op("Concat", [g.op("Reshape", [gx, g.const(np.asarray([1, -1], np.int64))]),
                             g.op("Reshape", [gy, g.const(np.asarray([1, -1], np.int64))])], axis=0)  # [2, A]
    points = g.op("Unsqueeze", [points, g.const(np.asarray([0], np.int64))])
    lt, rb = g.op("Split", [dist, g.const(np.asarray([2, 2], np.int64))], n_outputs=2, axis=1)
    top_left, bottom_right = g.op("Sub", [points, lt]), g.op("Add", [points, rb])
    centre = g.op("Div", [g.op("Add", [top_left, bottom_right]), g.const(np.float32(2))])
    size = g.op("Sub", [bottom_right, top_left])
    boxes = g.op("Mul", [g.op("Concat", [centre, size], axis=1), g.const(np.float32(4), "stride")])
    g.nodes.append(helper.make_node("Concat", [boxes, g.op("Sigmoid", [cls])], ["output0"], axis=1, name="out"))
    return g.model([V("images", TP.FLOAT, [1, 3, "height", "width"])], [V("output0", TP.FLOAT, None)], opset=17,
                   producer="pytorch")


# -- fp16 weights, IR 3 ------------------------------------------------------------------------------------------------

def fp16_weights() -> onnx.ModelProto:
    """float16 initializers, each Cast to float32 before use (a model converted to fp16 with float32 inputs and
    outputs kept): Conv, a residual Add, MatMul after Flatten."""
    g = _Graph(14)
    w1 = g.op("Cast", [g.weight((8, 3, 3, 3), dtype=np.float16)], to=TP.FLOAT)
    b1 = g.op("Cast", [g.const(np.linspace(-0.1, 0.1, 8).astype(np.float16))], to=TP.FLOAT)
    x = g.op("Relu", [g.op("Conv", ["x", w1, b1], pads=[1, 1, 1, 1])])
    w2 = g.op("Cast", [g.weight((8, 8, 3, 3), dtype=np.float16)], to=TP.FLOAT)
    x = g.op("Add", [x, g.op("Conv", [x, w2], pads=[1, 1, 1, 1])])
    flat = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    w3 = g.op("Cast", [g.weight((8, 6), dtype=np.float16)], to=TP.FLOAT)
    g.nodes.append(helper.make_node("MatMul", [flat, w3], ["y"], name="head"))
    return g.model([V("x", TP.FLOAT, ["N", 3, 12, 12])], [V("y", TP.FLOAT, None)], opset=13)


def ir3_model() -> onnx.ModelProto:
    """IR version 3 (opset 8): every initializer is also listed as a graph input, as writers of that time did;
    BatchNormalization with spatial, Dropout with ratio, MaxPool, Reshape to a constant shape, Gemm, Softmax."""
    g = _Graph(15)
    x = g.op("Conv", ["data", g.weight((6, 3, 3, 3)), g.const(np.zeros(6, np.float32))], pads=[1, 1, 1, 1])
    x = g.op("BatchNormalization", [x, g.const(np.ones(6, np.float32)), g.const(np.zeros(6, np.float32)),
                                    g.const(g.rng.uniform(-0.1, 0.1, 6).astype(np.float32)),
                                    g.const(g.rng.uniform(0.5, 1.5, 6).astype(np.float32))], spatial=1)
    x = g.op("MaxPool", [g.op("Relu", [x])], kernel_shape=[2, 2], strides=[2, 2])
    x = g.op("Dropout", [x], ratio=0.3)
    x = g.op("Reshape", [x, g.const(np.asarray([1, 6 * 4 * 4], np.int64), "shape")])
    x = g.op("Gemm", [x, g.weight((5, 96)), g.const(np.zeros(5, np.float32))], transB=1)
    g.nodes.append(helper.make_node("Softmax", [x], ["prob"], name="prob"))
    inputs = [V("data", TP.FLOAT, [1, 3, 8, 8])] + [V(t.name, t.data_type, list(t.dims)) for t in g.inits]
    return g.model(inputs, [V("prob", TP.FLOAT, [1, 5])], opset=8, ir_version=3)


# -- control flow ------------------------------------------------------------------------------------------------------

def if_sample_rate() -> onnx.ModelProto:
    """A voice-activity-style model that branches on its sample rate input (as silero_vad does): 16 kHz frames
    go through a stride-8 Conv1d, others through a stride-4 one; the branches read the outer audio tensor, and the
    then branch nests an If on the frame count (Shape -> Gather -> Equal), which folds once the audio is given."""
    g = _Graph(16)
    audio = g.op("Unsqueeze", ["audio", g.const(np.asarray([1], np.int64))])  # [B, 1, T]

    def branch(stride: int, tag: str, nested: bool) -> onnx.GraphProto:
        b = _Graph(16 + stride)
        b.count = 1000 * stride
        y = b.op("Conv", [audio, b.weight((4, 1, 16)), b.const(np.zeros(4, np.float32))], strides=[stride],
                 hint=f"{tag}.conv")
        y = b.op("Relu", [y])
        if nested:
            frames = b.op("Gather", [b.op("Shape", [y]), b.const(np.int64(2))], axis=0)
            long_enough = b.op("Greater", [frames, b.const(np.int64(8))])
            inner_then = helper.make_graph([helper.make_node("ReduceMean", [y], ["then.mean"], axes=[2],
                                                             keepdims=0)],
                                           "long", [], [V("then.mean", TP.FLOAT, None)])
            inner_else = helper.make_graph([helper.make_node("ReduceMax", [y], ["else.max"], axes=[2], keepdims=0)],
                                           "short", [], [V("else.max", TP.FLOAT, None)])
            pooled = b.op("If", [long_enough], then_branch=inner_then, else_branch=inner_else)
        else:
            pooled = b.op("ReduceMean", [y], axes=[2], keepdims=0)
        out = b.op("Sigmoid", [b.op("MatMul", [pooled, b.weight((4, 1))])], hint=f"{tag}.prob")
        return helper.make_graph(b.nodes, tag, [], [V(out, TP.FLOAT, None)], initializer=b.inits)

    is_16k = g.op("Equal", ["sr", g.const(np.int64(16000))])
    g.nodes.append(helper.make_node("If", [is_16k], ["speech_prob"], name="If_0",
                                    then_branch=branch(8, "sr16k", True), else_branch=branch(4, "sr8k", False)))
    return g.model([V("audio", TP.FLOAT, ["batch", "samples"]), V("sr", TP.INT64, [])],
                   [V("speech_prob", TP.FLOAT, None)], opset=16, producer="pytorch")


def loop_refine() -> onnx.ModelProto:
    """An iterative refinement: h <- tanh(h W + x) repeated 'steps' times (a model input, bound), each step's h
    kept as a scan output (stacked on a new first axis)."""
    g = _Graph(17)
    w = g.weight((8, 8), scale=0.3)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h", w], ["hw"]), helper.make_node("Add", ["hw", "x"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_next"]), helper.make_node("Identity", ["h_next"], ["h_seen"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])], "step",
        [V("i", TP.INT64, []), V("cond", TP.BOOL, []), V("h", TP.FLOAT, ["batch", 8])],
        [V("cond_out", TP.BOOL, []), V("h_next", TP.FLOAT, ["batch", 8]), V("h_seen", TP.FLOAT, ["batch", 8])])
    g.nodes.append(helper.make_node("Loop", ["steps", "", "h0"], ["h_final", "trajectory"], name="refine",
                                    body=body))
    return g.model([V("x", TP.FLOAT, ["batch", 8]), V("h0", TP.FLOAT, ["batch", 8]), V("steps", TP.INT64, [])],
                   [V("h_final", TP.FLOAT, ["batch", 8]), V("trajectory", TP.FLOAT, ["steps", "batch", 8])], opset=16)


def scan_rnn() -> onnx.ModelProto:
    """An Elman RNN written as a Scan over time (axis 0 of x [T, B, 4]), its state [B, 6], outputs per step."""
    g = _Graph(18)
    wx, wh = g.weight((4, 6)), g.weight((6, 6), scale=0.4)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", wx], ["a"]), helper.make_node("MatMul", ["s", wh], ["b"]),
         helper.make_node("Add", ["a", "b"], ["pre"]), helper.make_node("Tanh", ["pre"], ["s_next"]),
         helper.make_node("Identity", ["s_next"], ["y_t"])], "cell",
        [V("s", TP.FLOAT, ["B", 6]), V("x_t", TP.FLOAT, ["B", 4])],
        [V("s_next", TP.FLOAT, ["B", 6]), V("y_t", TP.FLOAT, ["B", 6])])
    g.nodes.append(helper.make_node("Scan", ["s0", "x"], ["s_last", "ys"], name="rnn", body=body, num_scan_inputs=1))
    return g.model([V("s0", TP.FLOAT, ["B", 6]), V("x", TP.FLOAT, ["T", "B", 4])],
                   [V("s_last", TP.FLOAT, None), V("ys", TP.FLOAT, None)], opset=16)


def models() -> list[CorpusModel]:
    rng = np.random.default_rng(20)
    t = np.arange(1600) / 16000
    audio = (0.3 * np.sin(2 * np.pi * 220 * t) + 0.01 * rng.standard_normal(1600)).astype(np.float32)[None]
    return [
        CorpusModel("paddle_pplcnet", paddle_style, {"x": _image(1, (1, 3, 32, 48), -1, 1)},
                    note="paddle2onnx: Constant nodes, Reshape 0/-1, HardSigmoid, Clip with inputs, dynamic dims"),
        CorpusModel("jax2tf_nhwc", jax2tf_style, {"input_1": _image(2, (2, 10, 12, 3))},
                    note="tf2onnx/jax2tf: NHWC transposes, Expand to a computed shape, Cast chains, Where"),
        CorpusModel("yolo_head", yolo_head, {"images": _image(3, (1, 3, 32, 40))},
                    note="YOLO head: Split, DFL Reshape/Softmax/Conv, anchors from Range/Expand of the map size"),
        CorpusModel("fp16_weights", fp16_weights, {"x": _image(4, (2, 3, 12, 12))},
                    note="float16 initializers cast to float32 before use"),
        CorpusModel("ir3_initializer_inputs", ir3_model, {"data": _image(5, (1, 3, 8, 8))},
                    note="IR 3, opset 8: initializers listed as graph inputs"),
        CorpusModel("if_sample_rate", if_sample_rate, {"audio": audio}, {"sr": np.asarray(16000, np.int64)},
                    note="If on a sample-rate input (bound) with a nested If on the frame count"),
        CorpusModel("loop_refine", loop_refine,
                    {"x": rng.standard_normal((2, 8)).astype(np.float32), "h0": np.zeros((2, 8), np.float32)},
                    {"steps": np.asarray(4, np.int64)}, note="Loop with a bound trip count, a scan output"),
        CorpusModel("scan_rnn", scan_rnn,
                    {"s0": np.zeros((2, 6), np.float32), "x": rng.standard_normal((5, 2, 4)).astype(np.float32)},
                    note="Scan over time: an Elman RNN"),
    ]
