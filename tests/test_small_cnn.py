"""A small NHWC CNN built with the Python API runs and matches a numpy reference written out in this test."""
from __future__ import annotations

import numpy as np
import pytest

from nnrt_onnx import Compilation, Executor, Model, TensorDesc
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_TensorType as TT


def reference(x, w1, b1, w2, b2, wfc, bfc):
    """conv 3x3 SAME + relu -> depthwise 3x3 stride 2 VALID + relu6 -> maxpool 2x2 -> reshape -> fc -> softmax."""
    n, h, wd, c = x.shape
    padded = np.zeros((n, h + 2, wd + 2, c), np.float64)
    padded[:, 1:-1, 1:-1] = x
    conv = np.zeros((n, h, wd, w1.shape[0]))
    for i in range(h):
        for j in range(wd):
            window = padded[:, i:i + 3, j:j + 3, :]  # [n, 3, 3, c]
            conv[:, i, j, :] = np.einsum("nhwc,ohwc->no", window, w1) + b1
    conv = np.maximum(conv, 0)
    oh = (h - 3) // 2 + 1
    dw = np.zeros((n, oh, oh, w2.shape[0]))
    for i in range(oh):
        for j in range(oh):
            window = conv[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3, :]
            dw[:, i, j, :] = np.einsum("nhwc,chw->nc", window, w2[..., 0]) + b2
    dw = np.clip(dw, 0, 6)
    pooled = dw.reshape(n, oh // 2, 2, oh // 2, 2, -1).max(axis=(2, 4))
    flat = pooled.reshape(n, -1)
    logits = flat @ wfc.T + bfc
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def build(weights, batch):
    w1, b1, w2, b2, wfc, bfc = weights
    m = Model()
    f32 = lambda dims: m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, dims))  # noqa: E731
    x = f32([batch, 9, 9, 3])
    conv = f32([batch, 9, 9, 4])
    m.add_operation(OP.OH_NN_OPS_CONV2D,
                    [m.add_param(TT.OH_NN_CONV2D_PAD_MODE, 0), m.add_param(TT.OH_NN_CONV2D_ACTIVATION_TYPE, 1),
                     m.add_param(TT.OH_NN_CONV2D_STRIDES, [1, 1])],
                    [x, m.add_constant(w1), m.add_constant(b1)], [conv])
    dw = f32([batch, 4, 4, 4])
    m.add_operation(OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE,
                    [m.add_param(TT.OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD_MODE, 1),
                     m.add_param(TT.OH_NN_DEPTHWISE_CONV2D_NATIVE_STRIDES, [2, 2]),
                     m.add_param(TT.OH_NN_DEPTHWISE_CONV2D_NATIVE_ACTIVATION_TYPE, 2)],
                    [conv, m.add_constant(w2), m.add_constant(b2)], [dw])
    pooled = f32([batch, 2, 2, 4])
    m.add_operation(OP.OH_NN_OPS_MAX_POOL,
                    [m.add_param(TT.OH_NN_MAX_POOL_KERNEL_SIZE, [2, 2]), m.add_param(TT.OH_NN_MAX_POOL_STRIDE, [2, 2]),
                     m.add_param(TT.OH_NN_MAX_POOL_PAD_MODE, 1)], [dw], [pooled])
    flat = f32([batch, 16])
    m.add_operation(OP.OH_NN_OPS_RESHAPE, [], [pooled, m.add_constant(np.array([batch, 16], np.int64))], [flat])
    logits = f32([batch, 5])
    m.add_operation(OP.OH_NN_OPS_FULL_CONNECTION, [m.add_param(TT.OH_NN_FULL_CONNECTION_HAS_BIAS, True)],
                    [flat, m.add_constant(wfc), m.add_constant(bfc)], [logits])
    probs = f32([batch, 5])
    m.add_operation(OP.OH_NN_OPS_SOFTMAX, [m.add_param(TT.OH_NN_SOFTMAX_AXIS, 1)], [logits], [probs])
    m.specify_inputs_and_outputs([x], [probs])
    m.finish()
    return m


@pytest.mark.parametrize("float16", [False, True], ids=["float32", "float16"])
def test_small_cnn_matches_numpy_reference(rng, float16):
    weights = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in
               ((4, 3, 3, 3), (4,), (4, 3, 3, 1), (4,), (5, 16), (5,))]
    x = rng.standard_normal((2, 9, 9, 3)).astype(np.float32)
    compilation = Compilation(build(weights, 2))
    compilation.enable_float16(float16)
    compilation.build()
    (probs,) = Executor(compilation).run_arrays([x])
    expected = reference(x.astype(np.float64), *[w.astype(np.float64) for w in weights])
    assert probs.dtype == np.float32 and probs.shape == (2, 5)
    np.testing.assert_allclose(probs, expected, atol=2e-2 if float16 else 1e-5)
