"""Detection family: DETECTION_POST_PROCESS, run end to end through ``nnrt_onnx.testing.run_op``.

Oracles, all independent of the kernel: hand-computed worked examples, an independent decoding formula, and
onnxruntime's NonMaxSuppression on the decoded boxes (with the per-class merge / best-class step done here).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from kernels.kernel_support import INVALID, TOL, UNSUPPORTED, assert_within, quantize_ref, rng_for, run, run_declared
from onnx import TensorProto, helper, numpy_helper
from support import ort_session

from nnrt_onnx.errors import NNRtError
from nnrt_onnx.tensor import QuantParam

DPP = "OH_NN_OPS_DETECTION_POST_PROCESS"


# =================================================================================================================
# DETECTION_POST_PROCESS
# =================================================================================================================
def dpp_params(*, scale=(5.0, 5.0, 10.0, 10.0), iou=0.5, score=0.0, max_detections=3, per_class=1,
               classes_per_detection=1, num_classes=2, regular=False, **extra):
    params = {
        "OH_NN_DETECTION_POST_PROCESS_SCALE": list(scale),
        "OH_NN_DETECTION_POST_PROCESS_NMS_IOU_THRESHOLD": iou,
        "OH_NN_DETECTION_POST_PROCESS_NMS_SCORE_THRESHOLD": score,
        "OH_NN_DETECTION_POST_PROCESS_MAX_DETECTIONS": max_detections,
        "OH_NN_DETECTION_POST_PROCESS_DETECTIONS_PER_CLASS": per_class,
        "OH_NN_DETECTION_POST_PROCESS_MAX_CLASSES_PER_DETECTION": classes_per_detection,
        "OH_NN_DETECTION_POST_PROCESS_NUM_CLASSES": num_classes,
        "OH_NN_DETECTION_POST_PROCESS_USE_REGULAR_NMS": regular,
    }
    names = {"input_size": "OH_NN_DETECTION_POST_PROCESS_INPUT_SIZE",
             "out_quantized": "OH_NN_DETECTION_POST_PROCESS_OUT_QUANTIZED"}
    params.update({names[k]: v for k, v in extra.items()})
    return params


# Worked example: six anchors, two classes after a background column. Deltas (dy, dx, dh, dw) with
# x_scale = 10 move anchors #2/#5 by +0.1 and #3 by -0.1 in x; nothing else moves.
EX_BOXES = np.array([[[0, 0, 0, 0], [0, 1, 0, 0], [0, -1, 0, 0],
                      [0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]], np.float32)
EX_SCORES = np.array([[[0, .9, .8], [0, .75, .72], [0, .6, .5],
                       [0, .93, .95], [0, .5, .4], [0, .3, .2]]], np.float32)
EX_ANCHORS = np.array([[.5, .5, 1, 1], [.5, .5, 1, 1], [.5, .5, 1, 1],
                       [.5, 10.5, 1, 1], [.5, 10.5, 1, 1], [.5, 100.5, 1, 1]], np.float32)
# Decoded by hand: anchor #1 -> [0, 0, 1, 1]; #2 -> [0, .1, 1, 1.1]; #3 -> [0, -.1, 1, .9]; #4 -> [0, 10, 1, 11];
# #5 -> [0, 10.1, 1, 11.1]; #6 -> [0, 100, 1, 101]. IoU(#1, #2) = IoU(#1, #3) = IoU(#4, #5) = .9/1.1 = .818.
B1, B4, B6, B2, ZERO = [0, 0, 1, 1], [0, 10, 1, 11], [0, 100, 1, 101], [0, .1, 1, 1.1], [0, 0, 0, 0]

# (id, params, boxes, classes, scores, count)
WORKED = [
    # fast: per-anchor best scores .9 .75 .6 .95 .5 .3 -> keep #4 (.95, class 1), #1 (.9, class 0), #6 (.3, class 0)
    ("detection_post_process-fast", dict(), [B4, B1, B6], [1, 0, 0], [.95, .9, .3], 3),
    # score threshold .4 removes #6 (.3): two rows, third row zero
    ("detection_post_process-fast-scorethr", dict(score=0.4), [B4, B1, ZERO], [1, 0, 0], [.95, .9, 0], 2),
    # IoU threshold .9: .818 no longer suppresses, #2 (.75) is the third best
    ("detection_post_process-fast-iou", dict(iou=0.9), [B4, B1, B2], [1, 0, 0], [.95, .9, .75], 3),
    # two classes per detection: rows (anchor, class) #4:(1 .95)(0 .93), #1:(0 .9)(1 .8), #6:(0 .3)(1 .2)
    ("detection_post_process-fast-2classes", dict(classes_per_detection=2),
     [B4, B4, B1, B1, B6, B6], [1, 0, 0, 1, 0, 1], [.95, .93, .9, .8, .3, .2], 6),
    # max_detections 1
    ("detection_post_process-fast-maxdet1", dict(max_detections=1), [B4], [1], [.95], 1),
    # regular, one per class: class 0 best #4 (.93), class 1 best #4 (.95)
    ("detection_post_process-regular", dict(regular=True), [B4, B4, ZERO], [1, 0, 0], [.95, .93, 0], 2),
    # regular, two per class: class 0 keeps #4 .93, #1 .9; class 1 keeps #4 .95, #1 .8 -> best three overall
    ("detection_post_process-regular-2perclass", dict(regular=True, per_class=2),
     [B4, B4, B1], [1, 0, 0], [.95, .93, .9], 3),
    # regular: rows = max_detections * max_classes_per_detection = 6, but at most max_detections (3) are filled
    ("detection_post_process-regular-2perclass-6rows", dict(regular=True, per_class=2, classes_per_detection=2),
     [B4, B4, B1, ZERO, ZERO, ZERO], [1, 0, 0, 0, 0, 0], [.95, .93, .9, 0, 0, 0], 3),
    # regular with max_detections 4: the fourth best (#1 class 1, .8) now fits
    ("detection_post_process-regular-2perclass-maxdet4", dict(regular=True, per_class=2, max_detections=4),
     [B4, B4, B1, B1], [1, 0, 0, 1], [.95, .93, .9, .8], 4),
    # input_size may carry the op's input count
    ("detection_post_process-input-size", dict(input_size=3), [B4, B1, B6], [1, 0, 0], [.95, .9, .3], 3),
]


@pytest.mark.parametrize("case", WORKED, ids=[c[0] for c in WORKED])
def test_detection_post_process_worked_examples(case):
    _, params, boxes, classes, scores, count = case
    got_boxes, got_classes, got_scores, got_count = run(DPP, [EX_BOXES, EX_SCORES, EX_ANCHORS], dpp_params(**params))
    rows = len(classes)
    assert got_boxes.shape == (1, rows, 4) and got_classes.shape == (1, rows) and got_count.shape == (1,)
    assert got_classes.dtype == np.float32 and got_count.dtype == np.float32  # MindSpore Lite's output types
    assert_within(got_boxes[0], boxes, dict(rtol=0, atol=1e-5))
    np.testing.assert_array_equal(got_classes[0], classes)
    assert_within(got_scores[0], scores, dict(rtol=0, atol=1e-6))
    assert got_count[0] == count


def test_detection_post_process_worked_example_background_free_and_int_outputs():
    """num_classes == score columns: no background column; classes/numDetections declared INT32 (as NNAPI)."""
    scores = EX_SCORES[..., 1:]
    got = run(DPP, [EX_BOXES, scores, EX_ANCHORS], dpp_params(),
              output_dtypes=[np.float32, np.int32, np.float32, np.int32])
    assert got[1].dtype == np.int32 and got[3].dtype == np.int32
    np.testing.assert_array_equal(got[1][0], [1, 0, 0])
    assert got[3][0] == 3
    assert_within(got[0][0], [B4, B1, B6], dict(rtol=0, atol=1e-5))


def test_detection_post_process_scale_order_worked_example():
    """scale = [h_scale, w_scale, x_scale, y_scale] (MindSpore): distinct values pin each one.

    anchor (yc 1, xc 2, h 2, w 4), deltas dy 5, dx 3, dh 2*ln2, dw 4*ln(1/2), scale h 2, w 4, x 3, y 5:
    yc = 5/5*2 + 1 = 3, xc = 3/3*4 + 2 = 6, h = exp(ln2)*2 = 4, w = exp(-ln2)*4 = 2 -> [1, 5, 5, 7].
    """
    deltas = np.array([[[5, 3, 2 * math.log(2), 4 * math.log(0.5)]]], np.float32)
    anchors = np.array([[1, 2, 2, 4]], np.float32)
    scores = np.array([[[0.0, 0.7]]], np.float32)
    got = run(DPP, [deltas, scores, anchors], dpp_params(scale=(2, 4, 3, 5), num_classes=1, max_detections=1))
    assert_within(got[0][0], [[1, 5, 5, 7]], dict(rtol=0, atol=1e-5))
    assert got[3][0] == 1


def decode_reference(deltas, anchors, h_scale, w_scale, x_scale, y_scale):
    """The TFLite / MindSpore centre-size decoding, written out per coordinate in float64."""
    d = np.asarray(deltas, np.float64)
    a = np.asarray(anchors, np.float64)
    ycenter = d[..., 0] / y_scale * a[:, 2] + a[:, 0]
    xcenter = d[..., 1] / x_scale * a[:, 3] + a[:, 1]
    half_h = 0.5 * np.exp(d[..., 2] / h_scale) * a[:, 2]
    half_w = 0.5 * np.exp(d[..., 3] / w_scale) * a[:, 3]
    return np.stack([ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w], axis=-1)


@pytest.mark.parametrize("extra_coords", [0, 4], ids=["detection_post_process-decode", "detection_post_process-decode-len8"])
def test_detection_post_process_decoding_formula(extra_coords):
    """No suppression (IoU threshold 1): every anchor comes out, ordered by its best score."""
    rng = rng_for(f"detection_post_process-decode-{extra_coords}")
    N, C = 12, 3
    deltas = rng.normal(0, 1, (1, N, 4 + extra_coords)).astype(np.float32)
    anchors = np.concatenate([rng.uniform(0, 1, (N, 2)), rng.uniform(0.1, 0.5, (N, 2))], axis=1).astype(np.float32)
    scores = rng.permutation(np.linspace(0.05, 0.95, N * (C + 1))).reshape(1, N, C + 1).astype(np.float32)
    scale = (3.0, 7.0, 11.0, 13.0)
    got = run(DPP, [deltas, scores, anchors],
              dpp_params(scale=scale, iou=1.0, score=-1.0, max_detections=N, num_classes=C))
    order = np.argsort(-scores[0, :, 1:].max(axis=1), kind="stable")
    want = decode_reference(deltas[0, :, :4], anchors, *scale)[order]
    assert_within(got[0][0], want, dict(rtol=1e-5, atol=1e-5))
    assert got[3][0] == N


def ort_nms(boxes, scores, max_per_class, iou, score_threshold):
    """onnxruntime NonMaxSuppression, boxes [N, 4] corners (y1, x1, y2, x2), scores [C, N] -> [(class, box)]."""
    graph = helper.make_graph(
        [helper.make_node("NonMaxSuppression", ["b", "s", "m", "i", "t"], ["sel"], center_point_box=0)], "nms",
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("sel", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array([max_per_class], np.int64), "m"),
         numpy_helper.from_array(np.array([iou], np.float32), "i"),
         numpy_helper.from_array(np.array([score_threshold], np.float32), "t")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    session = ort_session(model)
    sel = session.run(None, {"b": boxes[None].astype(np.float32), "s": scores[None].astype(np.float32)})[0]
    return [(int(c), int(b)) for _, c, b in sel]


def random_detection_inputs(rng, batch, N, C, background):
    # clustered anchors so that boxes overlap often
    centres = rng.uniform(0, 1, (4, 2))
    pick = rng.integers(0, 4, N)
    anchors = np.concatenate([centres[pick] + rng.normal(0, 0.03, (N, 2)), rng.uniform(0.1, 0.3, (N, 2))], axis=1)
    deltas = rng.normal(0, 0.5, (batch, N, 4))
    columns = C + (1 if background else 0)
    # distinct scores (no ties, no value equal to a threshold)
    scores = np.stack([rng.permutation(np.linspace(0.01, 0.99, N * columns)) for _ in range(batch)])
    return (deltas.astype(np.float32), scores.reshape(batch, N, columns).astype(np.float32),
            anchors.astype(np.float32))


NMS_CASES = [
    # id, batch, N, C, background, params
    ("detection_post_process-ort-regular", 1, 40, 3, True, dict(regular=True, per_class=5, max_detections=8)),
    ("detection_post_process-ort-regular-nobg-thr", 1, 30, 2, False,
     dict(regular=True, per_class=10, max_detections=12, score=0.35, iou=0.3)),
    ("detection_post_process-ort-regular-batch2", 2, 25, 4, True,
     dict(regular=True, per_class=3, max_detections=6, iou=0.6)),
    ("detection_post_process-ort-fast", 1, 40, 3, True, dict(max_detections=10)),
    ("detection_post_process-ort-fast-2classes-thr", 1, 35, 4, True,
     dict(max_detections=6, classes_per_detection=2, score=0.4, iou=0.45)),
    ("detection_post_process-ort-fast-batch3-allclasses", 3, 20, 2, False,
     dict(max_detections=5, classes_per_detection=5, iou=0.2)),
]


@pytest.mark.parametrize("case", NMS_CASES, ids=[c[0] for c in NMS_CASES])
def test_detection_post_process_nms_matches_onnxruntime(case):
    test_id, batch, N, C, background, extra = case
    params = {"scale": (5.0, 5.0, 10.0, 10.0), "iou": 0.5, "score": 0.0, "num_classes": C, **extra}
    deltas, scores, anchors = random_detection_inputs(rng_for(test_id), batch, N, C, background)
    got_boxes, got_classes, got_scores, got_count = run(DPP, [deltas, scores, anchors], dpp_params(**params))
    rows = params["max_detections"] * params.get("classes_per_detection", 1)
    assert got_boxes.shape == (batch, rows, 4) and got_count.shape == (batch,)
    first = 1 if background else 0
    for n in range(batch):
        decoded = decode_reference(deltas[n], anchors, *params["scale"])
        cls_scores = scores[n, :, first:].astype(np.float64)
        if params.get("regular"):
            picked = ort_nms(decoded, cls_scores.T, params["per_class"], params["iou"], params["score"])
            picked.sort(key=lambda cb: (-cls_scores[cb[1], cb[0]], cb[0], cb[1]))
            picked = picked[: params["max_detections"]]
            want = [(b, c, cls_scores[b, c]) for c, b in picked]
        else:
            kept = [b for _, b in ort_nms(decoded, cls_scores.max(axis=1)[None], params["max_detections"],
                                          params["iou"], params["score"])]
            per_anchor = min(params.get("classes_per_detection", 1), C)
            want = [(b, int(c), cls_scores[b, c]) for b in kept
                    for c in np.argsort(-cls_scores[b], kind="stable")[:per_anchor]]
        k = len(want)
        assert got_count[n] == k
        assert_within(got_boxes[n, :k], decoded[[b for b, _, _ in want]], dict(rtol=1e-5, atol=1e-5))
        np.testing.assert_array_equal(got_classes[n, :k], [c for _, c, _ in want])
        assert_within(got_scores[n, :k], [s for _, _, s in want], dict(rtol=0, atol=1e-7))
        assert not got_boxes[n, k:].any() and not got_classes[n, k:].any() and not got_scores[n, k:].any()


@pytest.mark.parametrize("mode", ["enable-float16", "float16-tensors"],
                         ids=["detection_post_process-f16-enable", "detection_post_process-f16-tensors"])
def test_detection_post_process_float16(mode):
    params = dpp_params(classes_per_detection=2)
    inputs = [EX_BOXES, EX_SCORES, EX_ANCHORS]
    if mode == "enable-float16":
        got = run(DPP, inputs, params, float16=True)
        assert got[0].dtype == np.float32
    else:
        got = run(DPP, [a.astype(np.float16) for a in inputs], params)
        assert got[0].dtype == np.float16 and got[2].dtype == np.float16
    assert_within(got[0][0], [B4, B4, B1, B1, B6, B6], TOL["float16"])
    np.testing.assert_array_equal(got[1][0], [1, 0, 0, 1, 0, 1])
    assert_within(got[2][0], [.95, .93, .9, .8, .3, .2], TOL["float16"])
    assert got[3][0] == 6


def test_detection_post_process_quantized():
    """Quantized inputs (dequantized by the executor) and quantized bboxes/confidences (out_quantized=true)."""
    box_q, score_q, anchor_q = QuantParam.per_tensor(0.1, 0), QuantParam.per_tensor(0.01, 0), QuantParam.per_tensor(0.5, 1)
    q_boxes = quantize_ref(EX_BOXES, np.int8, [0.1], [0])
    q_scores = quantize_ref(EX_SCORES, np.uint8, [0.01], [0])
    q_anchors = quantize_ref(EX_ANCHORS, np.uint8, [0.5], [1])
    out_box_q, out_score_q = QuantParam.per_tensor(0.5, 0), QuantParam.per_tensor(1 / 255, 0)
    got = run(DPP, [q_boxes, q_scores, q_anchors], dpp_params(out_quantized=True),
              input_quant={0: box_q, 1: score_q, 2: anchor_q}, output_quant={0: out_box_q, 2: out_score_q},
              output_dtypes=[np.uint8, np.float32, np.uint8, np.float32])
    # float oracle: the worked example on the dequantized inputs (all exactly representable), then quantized
    assert got[0].dtype == np.uint8 and got[2].dtype == np.uint8
    want_boxes = quantize_ref(np.array([B4, B1, B6], np.float64), np.uint8, [0.5], [0])
    want_scores = quantize_ref(np.array([.95, .9, .3]), np.uint8, [1 / 255], [0])
    assert_within(got[0][0], want_boxes, TOL["quant"])
    assert_within(got[2][0], want_scores, TOL["quant"])
    np.testing.assert_array_equal(got[1][0], [1, 0, 0])
    assert got[3][0] == 3


DPP_ERROR_CASES = [
    ("detection_post_process-int32-input", UNSUPPORTED, "int", {}),
    ("detection_post_process-scale-len3", INVALID, None, dict(scale=(5.0, 5.0, 10.0))),
    ("detection_post_process-scale-zero", INVALID, None, dict(scale=(5.0, 0.0, 10.0, 10.0))),
    ("detection_post_process-num-classes-mismatch", INVALID, None, dict(num_classes=4)),
    ("detection_post_process-num-classes-zero", INVALID, None, dict(num_classes=0)),
    ("detection_post_process-iou-above-one", INVALID, None, dict(iou=1.5)),
    ("detection_post_process-max-detections-zero", INVALID, None, dict(max_detections=0)),
    ("detection_post_process-classes-per-detection-zero", INVALID, None, dict(classes_per_detection=0)),
    ("detection_post_process-regular-per-class-zero", INVALID, None, dict(regular=True, per_class=0)),
    ("detection_post_process-input-size-bad", INVALID, None, dict(input_size=300)),
    ("detection_post_process-out-quantized-float-outputs", INVALID, None, dict(out_quantized=True)),
    ("detection_post_process-anchor-count-mismatch", INVALID, "anchors", {}),
]


@pytest.mark.parametrize("case", DPP_ERROR_CASES, ids=[c[0] for c in DPP_ERROR_CASES])
def test_detection_post_process_errors(case):
    _, code, tweak, extra = case
    inputs = [EX_BOXES, EX_SCORES, EX_ANCHORS]
    if tweak == "int":
        inputs = [a.astype(np.int32) for a in inputs]
    elif tweak == "anchors":
        inputs[2] = EX_ANCHORS[:5]
    with pytest.raises(NNRtError) as err:
        run_declared(DPP, inputs, dpp_params(**extra), [3, 2, 2, 1])
    assert err.value.code == code
    assert "DETECTION_POST_PROCESS" in err.value.message


def test_detection_post_process_quantized_outputs_without_flag():
    with pytest.raises(NNRtError) as err:
        run(DPP, [EX_BOXES, EX_SCORES, EX_ANCHORS], dpp_params(),
            output_quant={0: QuantParam.per_tensor(0.5, 0), 2: QuantParam.per_tensor(1 / 255, 0)},
            output_dtypes=[np.uint8, np.float32, np.uint8, np.float32])
    assert err.value.code == INVALID
