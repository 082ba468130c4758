"""Valid ONNX models that once got wrong answers or were refused (issue 26), each converted the way ``convert``
converts it -- dynamic dims stay dynamic -- and run at several sizes of those dims, against onnxruntime."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper
from onnx_import.import_support import dynamic_model as graph
from onnx_import.import_support import runs_like_onnxruntime

F = TensorProto.FLOAT


def test_a_one_channel_convolution_on_a_dynamic_batch(rng):
    # the NCHW image transposed to NHWC with one channel is "C-contiguous" to numpy whatever its channel stride:
    # the im2col read that stride and returned uninitialised memory from batch 2 on
    weight = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    model = graph([helper.make_node("Conv", ["x", "w"], ["y"])], [("x", F, ["N", 1, 10, 10])],
                  [("y", F, ["N", 4, 8, 8])], [("w", weight)])
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((n, 1, 10, 10)).astype(np.float32)} for n in (1, 2, 3)])


def test_a_transpose_that_moves_a_dynamic_dim_into_the_batch_position(rng):
    weight = rng.standard_normal((3, 1, 2, 2)).astype(np.float32)
    model = graph([helper.make_node("Transpose", ["x"], ["t"], perm=[3, 1, 2, 0]),
                   helper.make_node("Conv", ["t", "w"], ["y"])],
                  [("x", F, [6, 1, 6, "B"])], [("y", F, ["B", 3, 5, 5])], [("w", weight)])
    runs_like_onnxruntime(model, [{"x": rng.standard_normal((6, 1, 6, n)).astype(np.float32)} for n in (1, 2, 3)])
