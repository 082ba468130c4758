"""MatMul after an operator ONNX's shape inference has no schema for (onnxruntime's contrib ones): its output shape
is completed from the operands' shapes, so shape-dependent ops after it (normalizations over static dims) convert."""
from __future__ import annotations

import numpy as np
from onnx import helper

from .contrib_support import F32, against_ort, contrib_model, ms_node


def test_matmul_completes_the_shape_onnx_inference_left_unknown(rng):
    x = rng.standard_normal((2, 3, 8)).astype(F32)
    w = rng.standard_normal((8, 6)).astype(F32)
    nodes = [ms_node("Gelu", ["x"], ["g"]),  # ONNX infers nothing for g, hence nothing for m
             helper.make_node("MatMul", ["g", "w"], ["m"]),
             helper.make_node("LayerNormalization", ["m", "gamma"], ["y"], axis=-1)]
    model = contrib_model(nodes, {"x": x}, ["y"], {"w": w, "gamma": np.ones(6, F32)})
    (y,) = against_ort(model, {"x": x})
    assert y.shape == (2, 3, 6)
