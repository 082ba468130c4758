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


def main() -> None:
    out = ROOT / "models"
    out.mkdir(exist_ok=True)
    save_model(tiny_cnn(), out / "tiny_cnn.nnrt")
    print(f"wrote {out / 'tiny_cnn.nnrt'}")


if __name__ == "__main__":
    main()
