"""The small models of issue 27, built with onnx.helper (no torch): what a user's small and recurrent models look
like after torch's exporter -- seeded weights, opset 17. bench/bench_models.py builds them into its cache directory
on first use; ``python bench/small_models.py [--out DIR]`` builds them all (the torch-exported models are
bench/gen_models.py's).

  bert_tiny16       BERT encoder, 2 layers, hidden 64, 4 heads, intermediate 256, sequence 16 (exact GELU as
                    Div/Erf/Add/Mul/Mul, LayerNormalization, attention as MatMul/Reshape/Transpose/Softmax)
  lstm_small        LSTM classifier: 2 stacked LSTMs (hidden 64), 24 steps, batch 1 -> last step -> Gemm to 10
  chain50           50 small elementwise ops on [1, 256] (Add/Mul/Sub by constants, Relu, Sigmoid, Tanh, Abs, Neg)
  gru_tagger        token ids [1, 24] -> embedding 64 -> two bidirectional GRUs (hidden 64) -> tags (MatMul + Add)
  leaky_convnet     a YOLO-like CNN on 1x3x128x128: 9 convolutions each followed by LeakyRelu(0.1), max pools,
                    a 1x1 head
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class _Graph:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, value, hint="c"):
        n = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def weight(self, *shape, scale=None):
        fan = shape[0] if len(shape) == 2 else int(np.prod(shape[1:]))
        scale = scale if scale is not None else 1.0 / np.sqrt(max(fan, 1))
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32), "w")

    def op(self, op_type, inputs, hint=None, outputs=1, **attrs):
        names = [self.name(hint or op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def model(self, inputs, outputs):
        graph = helper.make_graph(self.nodes, "g", inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def _io(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def bert_tiny16(seq=16, hidden=64, heads=4, inter=256, layers=2, vocab=1000):
    g = _Graph(27)
    head = hidden // heads
    emb = g.op("Gather", [g.weight(vocab, hidden, scale=0.1), "input_ids"], axis=0)
    pos = g.const((g.rng.standard_normal((1, seq, hidden)) * 0.1).astype(np.float32))
    x = g.op("Add", [emb, pos])

    def layer_norm(t):
        return g.op("LayerNormalization", [t, g.const(np.ones(hidden, np.float32) + 0.1 * g.rng.standard_normal(
            hidden).astype(np.float32)), g.weight(hidden, scale=0.1)], axis=-1, epsilon=1e-12)

    def linear(t, k, n):
        return g.op("Add", [g.op("MatMul", [t, g.weight(k, n)]), g.weight(n, scale=0.1)])

    x = layer_norm(x)
    split_shape = g.const(np.array([1, seq, heads, head], np.int64))
    merge_shape = g.const(np.array([1, seq, hidden], np.int64))
    scale = g.const(np.array(np.sqrt(head), np.float32))
    for _ in range(layers):
        q = g.op("Transpose", [g.op("Reshape", [linear(x, hidden, hidden), split_shape])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [linear(x, hidden, hidden), split_shape])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [linear(x, hidden, hidden), split_shape])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Div", [g.op("MatMul", [q, k]), scale]),
                              g.const(np.zeros((1, 1, 1, seq), np.float32))])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge_shape])
        x = layer_norm(g.op("Add", [linear(context, hidden, hidden), x]))
        up = linear(x, hidden, inter)
        erf = g.op("Erf", [g.op("Div", [up, g.const(np.array(1.4142135, np.float32))])])
        gelu = g.op("Mul", [g.op("Mul", [up, g.op("Add", [erf, g.const(np.array(1.0, np.float32))])]),
                            g.const(np.array(0.5, np.float32))])
        x = layer_norm(g.op("Add", [linear(gelu, inter, hidden), x]))
    g.nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    return g.model([_io("input_ids", TensorProto.INT64, [1, seq])],
                   [_io("hidden", TensorProto.FLOAT, [1, seq, hidden])])


def _lstm_weights(g, gates, hidden, features, directions=1):
    return (g.weight(directions, gates * hidden, features), g.weight(directions, gates * hidden, hidden),
            g.weight(directions, 2 * gates * hidden, scale=0.1))


def lstm_small(steps=24, features=64, hidden=64, layers=2, classes=10):
    g = _Graph(28)
    x = "x"
    for _ in range(layers):
        w, r, b = _lstm_weights(g, 4, hidden, features)
        y, _, _ = g.op("LSTM", [x, w, r, b], outputs=3, hidden_size=hidden)
        x = g.op("Squeeze", [y, g.const(np.array([1], np.int64))])
        features = hidden
    last = g.op("Gather", [x, g.const(np.array(steps - 1, np.int64))], axis=0)
    g.nodes.append(helper.make_node("Gemm", [last, g.weight(classes, hidden), g.weight(classes, scale=0.1)], ["y"],
                                    transB=1))
    return g.model([_io("x", TensorProto.FLOAT, [steps, 1, features if layers == 0 else 64])],
                   [_io("y", TensorProto.FLOAT, [1, classes])])


def chain50(width=256, length=50):
    g = _Graph(29)
    kinds = ["Add", "Mul", "Relu", "Sub", "Sigmoid", "Mul", "Tanh", "Add", "Abs", "Neg"]
    x = "x"
    for i in range(length):
        kind = kinds[i % len(kinds)]
        if kind in ("Add", "Mul", "Sub"):
            x = g.op(kind, [x, g.const((g.rng.uniform(0.5, 1.5, width)).astype(np.float32))])
        else:
            x = g.op(kind, [x])
    g.nodes.append(helper.make_node("Identity", [x], ["y"]))
    return g.model([_io("x", TensorProto.FLOAT, [1, width])], [_io("y", TensorProto.FLOAT, [1, width])])


def gru_tagger(steps=24, vocab=2000, emb=64, hidden=64, tags=17):
    g = _Graph(30)
    x = g.op("Gather", [g.weight(vocab, emb, scale=0.3), "ids"], axis=0)  # [1, T, E]
    x = g.op("Transpose", [x], perm=[1, 0, 2])  # [T, 1, E]
    features = emb
    for _ in range(2):
        w, r, b = _lstm_weights(g, 3, hidden, features, directions=2)
        y = g.op("GRU", [x, w, r, b], hidden_size=hidden, direction="bidirectional", linear_before_reset=1)
        y = g.op("Transpose", [y], perm=[0, 2, 1, 3])  # [T, 1, 2, H]
        x = g.op("Reshape", [y, g.const(np.array([steps, 1, 2 * hidden], np.int64))])
        features = 2 * hidden
    logits = g.op("Add", [g.op("MatMul", [x, g.weight(features, tags)]), g.weight(tags, scale=0.1)])
    g.nodes.append(helper.make_node("Transpose", [logits], ["tags"], perm=[1, 0, 2]))
    return g.model([_io("ids", TensorProto.INT64, [1, steps])], [_io("tags", TensorProto.FLOAT, [1, steps, tags])])


def leaky_convnet(size=128):
    g = _Graph(31)
    x, c = "x", 3
    plan = [(16, 1), "pool", (32, 1), "pool", (64, 1), (32, 0), (64, 1), "pool", (128, 1), (64, 0), (128, 1),
            "pool", (256, 1)]
    for item in plan:
        if item == "pool":
            x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
            continue
        o, three = item
        k = 3 if three else 1
        conv = g.op("Conv", [x, g.weight(o, c, k, k, scale=np.sqrt(2.0 / (c * k * k))), g.weight(o, scale=0.1)],
                    kernel_shape=[k, k], pads=[k // 2] * 4)
        x = g.op("LeakyRelu", [conv], alpha=0.1)
        c = o
    g.nodes.append(helper.make_node("Conv", [x, g.weight(18, c, 1, 1), g.weight(18, scale=0.1)], ["y"],
                                    kernel_shape=[1, 1]))
    return g.model([_io("x", TensorProto.FLOAT, [1, 3, size, size])],
                   [_io("y", TensorProto.FLOAT, [1, 18, size // 16, size // 16])])


MODELS = {"bert_tiny16": bert_tiny16, "lstm_small": lstm_small, "chain50": chain50,
          "gru_tagger": gru_tagger, "leaky_convnet": leaky_convnet}


def build(name: str, path) -> None:
    """Write model ``name`` to ``path`` (atomically: a temp file renamed)."""
    import os

    tmp = f"{path}.tmp{os.getpid()}"
    onnx.save(MODELS[name](), tmp)
    os.replace(tmp, path)


def main(argv=None):
    import argparse
    import os
    from pathlib import Path

    default = Path(os.environ.get("NNRT_BENCH_CACHE", Path.home() / ".cache" / "nnrt_onnx_bench"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=default, help=f"cache directory (default {default})")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in MODELS:
        build(name, args.out / f"{name}.onnx")
        print(args.out / f"{name}.onnx")


if __name__ == "__main__":
    main()
