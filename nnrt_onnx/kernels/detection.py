"""Detection kernels: DETECTION_POST_PROCESS (box decoding and non-maximum suppression).

DETECTION_POST_PROCESS
  MindSpore Lite / TFLite ``DetectionPostProcess`` semantics (the real runtime's kernel), batched:

  * ``bbox`` [batch, anchors, >=4]: box deltas ``(dy, dx, dh, dw)`` (extra values ignored, as in NNAPI);
    ``scores`` [batch, anchors, classes(+1)]: when it has ``num_classes + 1`` columns, column 0 is the background
    and is skipped; ``anchors`` [anchors, 4]: ``(ycenter, xcenter, h, w)``.
  * ``scale`` = ``[h_scale, w_scale, x_scale, y_scale]`` — MindSpore's attribute order (its TFLite converter
    writes it so and its kernel reads it so). Decoding: ``yc = dy/y_scale*ha + ya``, ``xc = dx/x_scale*wa + xa``,
    ``h = exp(dh/h_scale)*ha``, ``w = exp(dw/w_scale)*wa``; boxes are ``[ymin, xmin, ymax, xmax]``.
  * NMS: candidates with score >= nms_score_threshold, greedy by descending score (ties: lower anchor first),
    a candidate is suppressed when its IoU with a kept box is > nms_iou_threshold.
  * ``use_regular_nms``: NMS per class (at most detections_per_class each), then the best max_detections over all
    classes (ties: lower class, then lower anchor). Otherwise fast NMS: one NMS on each anchor's best class score
    (at most max_detections anchors), each kept anchor yielding its min(max_classes_per_detection, num_classes)
    best classes (scores not thresholded again), rows packed.
  * Outputs: ``bboxes`` [batch, M, 4], ``classes`` [batch, M] (0 = first non-background class), ``confidences``
    [batch, M], ``numDetections`` [batch] (valid rows), M = max_detections * max_classes_per_detection; unused rows
    are 0. ``classes`` and ``numDetections`` take the declared dtype (float32 in MindSpore Lite, INT32 as in NNAPI).
  * ``input_size``: MindSpore records the op's input count there (3); 0 (unset) or 3 are accepted.
  * ``out_quantized``: true iff ``bboxes`` and ``confidences`` are declared quantized (the executor quantizes them).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import invalid
from ..geometry import UNKNOWN
from . import kernel, shape_rule
from ._common import _known, _need_float, _product

_DPP = "OH_NN_OPS_DETECTION_POST_PROCESS"


# ---------------------------------------------------------------------------------------------------------------
# DETECTION_POST_PROCESS
# ---------------------------------------------------------------------------------------------------------------
def decode_boxes(deltas: np.ndarray, anchors: np.ndarray, scale) -> np.ndarray:
    """Centre-size deltas (dy, dx, dh, dw) [..., N, 4] against anchors (yc, xc, h, w) [N, 4] -> (ymin, xmin, ymax, xmax).

    ``scale`` = (h_scale, w_scale, x_scale, y_scale), MindSpore's order.
    """
    dtype = deltas.dtype
    h_scale, w_scale, x_scale, y_scale = (dtype.type(s) for s in scale)
    ya, xa, ha, wa = (anchors[:, k] for k in range(4))
    yc = deltas[..., 0] / y_scale * ha + ya
    xc = deltas[..., 1] / x_scale * wa + xa
    half = dtype.type(0.5)
    hh = half * np.exp(deltas[..., 2] / h_scale) * ha
    hw = half * np.exp(deltas[..., 3] / w_scale) * wa
    return np.stack([yc - hh, xc - hw, yc + hh, xc + hw], axis=-1)


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """IoU of one corner box with many; 0 where either box has no area (as MindSpore Lite)."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    h = np.maximum(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0)
    w = np.maximum(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0)
    inter = h * w
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area + areas - inter)
    return np.where((area > 0) & (areas > 0), iou, 0)


def nms(boxes: np.ndarray, scores: np.ndarray, limit: int, score_threshold: float, iou_threshold: float) -> np.ndarray:
    """Greedy hard NMS; indices of the kept boxes in selection order (descending score, ties: lower index)."""
    candidates = np.flatnonzero(scores >= score_threshold)
    alive = candidates[np.argsort(-scores[candidates], kind="stable")]
    kept = []
    while alive.size and len(kept) < limit:
        best = alive[0]
        kept.append(best)
        rest = alive[1:]
        alive = rest[~(_iou(boxes[best], boxes[rest]) > iou_threshold)]
    return np.asarray(kept, dtype=np.int64)


def _regular(boxes, scores, *, max_detections, detections_per_class, score_threshold, iou_threshold):
    found_scores, found_classes, found_anchors = [], [], []
    for cls in range(scores.shape[1]):
        kept = nms(boxes, scores[:, cls], detections_per_class, score_threshold, iou_threshold)
        found_scores.append(scores[kept, cls])
        found_classes.append(np.full(kept.size, cls, np.int64))
        found_anchors.append(kept)
    s, c, a = (np.concatenate(v) for v in (found_scores, found_classes, found_anchors))
    best = np.lexsort((a, c, -s.astype(np.float64)))[:max_detections]
    return boxes[a[best]], c[best], s[best]


def _fast(boxes, scores, *, max_detections, max_classes_per_detection, score_threshold, iou_threshold):
    per_anchor = min(max_classes_per_detection, scores.shape[1])
    kept = nms(boxes, scores.max(axis=1), max_detections, score_threshold, iou_threshold)
    classes = np.argsort(-scores[kept], axis=1, kind="stable")[:, :per_anchor]  # [K, per_anchor]
    chosen = np.take_along_axis(scores[kept], classes, axis=1)
    return np.repeat(boxes[kept], per_anchor, axis=0), classes.reshape(-1), chosen.reshape(-1)


def _output(value: np.ndarray, position: int, ctx, float_dtype) -> np.ndarray:
    """Cast to the declared dtype; a quantized output stays float (the executor quantizes it)."""
    if ctx.output_quant[position] is not None:
        return value.astype(float_dtype)
    dtype = ctx.output_dtypes[position]
    return value.astype(float_dtype if dtype is None else dtype)


def _checked_parameters(input_size, scale, nms_iou_threshold, nms_score_threshold, max_detections,
                        detections_per_class, max_classes_per_detection, use_regular_nms) -> list[float]:
    """The parameter checks; returns the scale as floats."""
    if input_size not in (0, 3):
        raise invalid(f"{_DPP}: input_size {input_size} must be 0 (unset) or 3, the op's input count "
                      f"(the value MindSpore records there)")
    scale = [float(v) for v in scale]
    if len(scale) != 4 or not all(math.isfinite(v) and v != 0 for v in scale):
        raise invalid(f"{_DPP}: scale must be 4 finite non-zero floats [h_scale, w_scale, x_scale, y_scale], "
                      f"got {scale}")
    if not 0.0 <= nms_iou_threshold <= 1.0:
        raise invalid(f"{_DPP}: nms_iou_threshold {nms_iou_threshold} must be in [0, 1]")
    if math.isnan(nms_score_threshold):
        raise invalid(f"{_DPP}: nms_score_threshold is NaN")
    if max_detections < 1:
        raise invalid(f"{_DPP}: max_detections {max_detections} must be >= 1")
    if max_classes_per_detection < 1:
        raise invalid(f"{_DPP}: max_classes_per_detection {max_classes_per_detection} must be >= 1")
    if use_regular_nms and detections_per_class < 1:
        raise invalid(f"{_DPP}: detections_per_class {detections_per_class} must be >= 1 with regular NMS")
    return scale


def _checked_dims(bbox_shape, scores_shape, anchors_shape, num_classes) -> tuple[int, int]:
    """(batch, anchors) after checking bbox [batch, anchors, >=4], scores [batch, anchors, classes(+1)] and
    anchors [anchors, 4] against each other (unknown dims, and shapes given as None, pass)."""
    def differ(a, b):
        return _known(a, b) and a != b

    batch = count = UNKNOWN
    if bbox_shape is not None:
        if len(bbox_shape) != 3 or _known(bbox_shape[2]) and bbox_shape[2] < 4:
            raise invalid(f"{_DPP}: bbox must be [batch, anchors, >=4], got shape {list(bbox_shape)}")
        batch, count = bbox_shape[:2]
    if scores_shape is not None:
        if len(scores_shape) != 3 or differ(scores_shape[0], batch) or differ(scores_shape[1], count):
            raise invalid(f"{_DPP}: scores must be [batch, anchors, classes] = [{batch}, {count}, ...], "
                          f"got shape {list(scores_shape)}")
        batch = scores_shape[0] if not _known(batch) else batch
        count = scores_shape[1] if not _known(count) else count
    if anchors_shape is not None:
        size = _product(anchors_shape)
        if anchors_shape[-1:] not in ((4,), (UNKNOWN,)) or _known(size, count) and size != 4 * count:
            raise invalid(f"{_DPP}: anchors must be [{count}, 4] (ycenter, xcenter, h, w), got shape "
                          f"{list(anchors_shape)}")
    columns = UNKNOWN if scores_shape is None else scores_shape[2]
    if num_classes < 1 or _known(columns) and columns - num_classes not in (0, 1):
        raise invalid(f"{_DPP}: num_classes {num_classes} does not fit scores with {columns} columns "
                      f"(needs num_classes or num_classes + 1 with a leading background column)")
    return batch, count


@shape_rule(_DPP)
def _detection_post_process_shape(op, shapes, values, *, input_size, scale, nms_iou_threshold, nms_score_threshold,
                                  max_detections, detections_per_class, max_classes_per_detection, num_classes,
                                  use_regular_nms, **_):
    """bboxes [batch, M, 4], classes and confidences [batch, M], numDetections [batch];
    M = max_detections * max_classes_per_detection."""
    _checked_parameters(input_size, scale, nms_iou_threshold, nms_score_threshold, max_detections,
                        detections_per_class, max_classes_per_detection, use_regular_nms)
    batch, _ = _checked_dims(shapes[0], shapes[1], shapes[2], num_classes)
    rows = max_detections * max_classes_per_detection
    return (batch, rows, 4), (batch, rows), (batch, rows), (batch,)


@kernel(_DPP)
def detection_post_process(bbox, scores, anchors, *, input_size, scale, nms_iou_threshold, nms_score_threshold,
                           max_detections, detections_per_class, max_classes_per_detection, num_classes,
                           use_regular_nms, out_quantized, ctx):
    for what, array in (("bbox", bbox), ("scores", scores), ("anchors", anchors)):
        _need_float(_DPP, what, array)
    scale = _checked_parameters(input_size, scale, nms_iou_threshold, nms_score_threshold, max_detections,
                                detections_per_class, max_classes_per_detection, use_regular_nms)
    batch, count = _checked_dims(bbox.shape, scores.shape, anchors.shape, num_classes)
    quantized = [ctx.output_quant[k] is not None for k in (0, 2)]
    if any(q != bool(out_quantized) for q in quantized):
        raise invalid(f"{_DPP}: out_quantized={bool(out_quantized)} but bboxes/confidences are "
                      f"{'quantized' if quantized[0] else 'not quantized'}/"
                      f"{'quantized' if quantized[1] else 'not quantized'}; declare both with quant params "
                      f"exactly when out_quantized is true")

    dtype = bbox.dtype
    first = scores.shape[2] - num_classes
    decoded = decode_boxes(bbox[..., :4], anchors.reshape(count, 4).astype(dtype, copy=False), scale)
    rows = max_detections * max_classes_per_detection
    out_boxes = np.zeros((batch, rows, 4), dtype)
    out_classes = np.zeros((batch, rows), np.int64)
    out_scores = np.zeros((batch, rows), dtype)
    out_count = np.zeros(batch, np.int64)
    for n in range(batch):
        class_scores = scores[n, :, first:].astype(dtype, copy=False)
        if use_regular_nms:
            b, c, s = _regular(decoded[n], class_scores, max_detections=max_detections,
                               detections_per_class=detections_per_class, score_threshold=nms_score_threshold,
                               iou_threshold=nms_iou_threshold)
        else:
            b, c, s = _fast(decoded[n], class_scores, max_detections=max_detections,
                            max_classes_per_detection=max_classes_per_detection,
                            score_threshold=nms_score_threshold, iou_threshold=nms_iou_threshold)
        k = len(c)
        out_boxes[n, :k], out_classes[n, :k], out_scores[n, :k], out_count[n] = b, c, s, k
    return (_output(out_boxes, 0, ctx, dtype), _output(out_classes, 1, ctx, dtype),
            _output(out_scores, 2, ctx, dtype), _output(out_count, 3, ctx, dtype))
