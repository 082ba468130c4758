"""Regenerate the sample models in models/ (deterministic: seeded weights). Run: python tools/make_models.py"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nnrt_onnx import Model, TensorDesc  # noqa: E402
from nnrt_onnx.enums import OH_NN_DataType as DT  # noqa: E402
from nnrt_onnx.enums import OH_NN_OperationType as OP  # noqa: E402
from nnrt_onnx.enums import OH_NN_TensorType as TT  # noqa: E402
from nnrt_onnx.serialization import save_model  # noqa: E402


def tiny_cnn() -> Model:
    """NHWC 1x16x16x3 image -> conv/relu -> depthwise/relu6 -> avg pool -> fc -> softmax over 10 classes."""
    rng = np.random.default_rng(2026)
    m = Model()

    def tensor(name, dims):
        return m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, dims), name=name)

    def weight(name, shape, scale=0.3):
        return m.add_constant((rng.standard_normal(shape) * scale).astype(np.float32), name=name)

    image = tensor("image", [1, 16, 16, 3])
    conv = tensor("conv1", [1, 16, 16, 8])
    m.add_operation(OP.OH_NN_OPS_CONV2D, [m.add_param(TT.OH_NN_CONV2D_PAD_MODE, 0),
                                          m.add_param(TT.OH_NN_CONV2D_ACTIVATION_TYPE, 1)],
                    [image, weight("conv1.weight", (8, 3, 3, 3)), weight("conv1.bias", (8,))], [conv])
    dw = tensor("dw1", [1, 8, 8, 8])
    m.add_operation(OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE,
                    [m.add_param(TT.OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD_MODE, 0),
                     m.add_param(TT.OH_NN_DEPTHWISE_CONV2D_NATIVE_STRIDES, [2, 2]),
                     m.add_param(TT.OH_NN_DEPTHWISE_CONV2D_NATIVE_ACTIVATION_TYPE, 2)],
                    [conv, weight("dw1.weight", (8, 3, 3, 1)), weight("dw1.bias", (8,))], [dw])
    pooled = tensor("pool", [1, 1, 1, 8])
    m.add_operation(OP.OH_NN_OPS_AVG_POOL, [m.add_param(TT.OH_NN_AVG_POOL_GLOBAL, True)], [dw], [pooled])
    flat = tensor("flat", [1, 8])
    m.add_operation(OP.OH_NN_OPS_RESHAPE, [], [pooled, m.add_constant(np.array([1, 8], np.int64), name="flat.shape")],
                    [flat])
    logits = tensor("logits", [1, 10])
    m.add_operation(OP.OH_NN_OPS_FULL_CONNECTION, [m.add_param(TT.OH_NN_FULL_CONNECTION_HAS_BIAS, True)],
                    [flat, weight("fc.weight", (10, 8)), weight("fc.bias", (10,))], [logits])
    probs = tensor("probs", [1, 10])
    m.add_operation(OP.OH_NN_OPS_SOFTMAX, [m.add_param(TT.OH_NN_SOFTMAX_AXIS, -1)], [logits], [probs])
    m.specify_inputs_and_outputs([image], [probs])
    m.finish()
    return m


# -- ONNX samples (onnx.helper + seeded numpy weights; opset 17, IR 8 so any onnxruntime >= 1.17 loads them) ---------

OPSET, IR_VERSION = 17, 8


class _OnnxBuilder:
    """A tiny graph builder: seeded initializers and nodes named after their outputs."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.initializers = [], []

    def weight(self, name: str, shape, scale: float | None = None, positive: bool = False):
        from onnx import numpy_helper

        if positive:
            data = self.rng.uniform(0.5, 1.5, shape)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            data = self.rng.standard_normal(shape) * (scale if scale is not None else np.sqrt(2.0 / fan_in))
        self.initializers.append(numpy_helper.from_array(np.asarray(data, np.float32), name))
        return name

    def constant(self, name: str, array):
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op_type: str, inputs, output: str, **attrs):
        from onnx import helper

        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=output, **attrs))
        return output

    def conv_bn(self, x: str, name: str, c_in: int, c_out: int, k: int = 3, stride: int = 1, group: int = 1):
        """Conv (no bias) + BatchNormalization, as exported by most frameworks."""
        pad = k // 2
        conv = self.node("Conv", [x, self.weight(f"{name}.weight", (c_out, c_in // group, k, k))], f"{name}.conv",
                         kernel_shape=[k, k], pads=[pad] * 4, strides=[stride, stride], group=group)
        return self.node("BatchNormalization",
                         [conv, self.weight(f"{name}.bn.scale", (c_out,), positive=True),
                          self.weight(f"{name}.bn.bias", (c_out,), scale=0.1),
                          self.weight(f"{name}.bn.mean", (c_out,), scale=0.1),
                          self.weight(f"{name}.bn.var", (c_out,), positive=True)], f"{name}.bn", epsilon=1e-5)

    def model(self, name: str, inputs, outputs, doc: str):
        import onnx
        from onnx import helper

        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="nnrt_onnx",
                                  doc_string=doc)
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model


def small_cnn():
    """NCHW 1x3x32x32 image -> conv/bn/relu -> max pool -> conv/relu -> depthwise conv/relu6 -> LRN -> global avg
    pool -> flatten -> gemm -> softmax over 10 classes (also returns the logits)."""
    from onnx import TensorProto, helper

    b = _OnnxBuilder(2027)
    x = b.node("Relu", [b.conv_bn("image", "stem", 3, 16)], "stem.relu")
    x = b.node("MaxPool", [x], "pool1", kernel_shape=[2, 2], strides=[2, 2])
    x = b.node("Conv", [x, b.weight("conv2.weight", (24, 16, 3, 3)), b.weight("conv2.bias", (24,), scale=0.1)],
               "conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    x = b.node("Relu", [x], "conv2.relu")
    x = b.node("Conv", [x, b.weight("dw.weight", (24, 1, 3, 3)), b.weight("dw.bias", (24,), scale=0.1)], "dw",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], group=24)
    x = b.node("Clip", [x, b.constant("six.min", np.float32(0)), b.constant("six.max", np.float32(6))], "dw.relu6")
    x = b.node("LRN", [x], "lrn", size=5, alpha=1e-4, beta=0.75, bias=1.0)
    x = b.node("GlobalAveragePool", [x], "gap")
    x = b.node("Flatten", [x], "flat", axis=1)
    logits = b.node("Gemm", [x, b.weight("fc.weight", (10, 24)), b.weight("fc.bias", (10,), scale=0.1)], "logits",
                    transB=1)
    b.node("Softmax", [logits], "probs", axis=1)
    return b.model("small_cnn", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
                   [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10]),
                    helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], small_cnn.__doc__)


def tiny_mlp():
    """[batch, 64] features (dynamic batch) -> matmul+add/relu -> gemm/tanh -> gemm -> sigmoid (4 scores)."""
    from onnx import TensorProto, helper

    b = _OnnxBuilder(2028)
    x = b.node("MatMul", ["features", b.weight("fc1.weight", (64, 32), scale=0.2)], "fc1.matmul")
    x = b.node("Add", [x, b.weight("fc1.bias", (32,), scale=0.1)], "fc1")
    x = b.node("Relu", [x], "fc1.relu")
    x = b.node("Gemm", [x, b.weight("fc2.weight", (16, 32), scale=0.25), b.weight("fc2.bias", (16,), scale=0.1)],
               "fc2", transB=1)
    x = b.node("Tanh", [x], "fc2.tanh")
    x = b.node("Gemm", [x, b.weight("fc3.weight", (16, 4), scale=0.5), b.weight("fc3.bias", (4,), scale=0.1)], "fc3")
    b.node("Sigmoid", [x], "scores")
    return b.model("tiny_mlp", [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 64])],
                   [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 4])], tiny_mlp.__doc__)


def residual_block():
    """NCHW 1x8x16x16 -> [conv/bn/relu -> conv/bn] + skip -> relu, concatenated with an avg-pooled skip branch,
    then a 1x1 conv (a ResNet basic block with an Inception-style side branch; BN folds into the convs)."""
    from onnx import TensorProto, helper

    b = _OnnxBuilder(2029)
    y = b.node("Relu", [b.conv_bn("x", "block.a", 8, 8)], "block.a.relu")
    y = b.conv_bn(y, "block.b", 8, 8)
    y = b.node("Add", [y, "x"], "block.add")
    y = b.node("Relu", [y], "block.relu")
    side = b.node("AveragePool", ["x"], "side.pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    y = b.node("Concat", [y, side], "concat", axis=1)
    y = b.node("Conv", [y, b.weight("head.weight", (8, 16, 1, 1)), b.weight("head.bias", (8,), scale=0.1)], "y",
               kernel_shape=[1, 1])
    return b.model("residual_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], residual_block.__doc__)


ONNX_SAMPLES = {"small_cnn.onnx": small_cnn, "tiny_mlp.onnx": tiny_mlp, "residual_block.onnx": residual_block}
TOLERANCES = {"float32": {"rtol": 1e-4, "atol": 1e-5}}


def _io(infos):
    from onnx import helper

    return [{"name": i.name, "dtype": str(helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)),
             "shape": [d.dim_value if d.HasField("dim_value") else d.dim_param for d in i.type.tensor_type.shape.dim]}
            for i in infos]


def main() -> None:
    from nnrt_onnx.serialization import atomic_write

    out = ROOT / "models"
    out.mkdir(exist_ok=True)
    save_model(tiny_cnn(), out / "tiny_cnn.nnrt")
    print(f"wrote {out / 'tiny_cnn.nnrt'}")
    manifest = {"models": [{"file": "tiny_cnn.nnrt", "description": " ".join(tiny_cnn.__doc__.split()),
                            "inputs": [{"name": "image", "dtype": "float32", "shape": [1, 16, 16, 3]}],
                            "outputs": [{"name": "probs", "dtype": "float32", "shape": [1, 10]}]}]}
    for file, make in ONNX_SAMPLES.items():
        model = make()
        data = model.SerializeToString()
        atomic_write(out / file, [data])
        manifest["models"].append({"file": file, "description": " ".join(make.__doc__.split()),
                                   "opset": OPSET, "bytes": len(data),
                                   "inputs": _io(model.graph.input), "outputs": _io(model.graph.output),
                                   "tolerances": TOLERANCES})
        print(f"wrote {out / file} ({len(data)} bytes)")
    atomic_write(out / "manifest.json", [(json.dumps(manifest, indent=1) + "\n").encode()])
    print(f"wrote {out / 'manifest.json'}")


if __name__ == "__main__":
    main()
