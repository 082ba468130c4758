"""Sequence and detection kernels: LSTM and DETECTION_POST_PROCESS.

LSTM
  Inputs (header order): ``input`` [seqLen, batch, inputSize], ``wIh`` [dirs*layers, 4*hidden, inputSize],
  ``wHh`` [dirs*layers, 4*hidden, hidden], ``bias`` [dirs*layers, 8*hidden], ``hx`` and ``cx``
  [dirs*layers, batch, hidden]. The first axis of the weights and states is ``layer * dirs + direction``
  (direction 0 = forward, 1 = backward), as in MindSpore / PyTorch.

  * Gate order of the 4*hidden rows: ``i, o, f, g`` (input, output, forget, cell candidate). The header does
    not say; this is what the real runtime's six-input LSTM kernel uses (MindSpore Lite ``LstmNonMindir``,
    "order IOFG") and ONNX's ``iofc``. ``bias`` is ``[input bias (4H) | hidden bias (4H)]`` in the same order.
  * ``output`` is [seqLen, batch, dirs*hidden] (header), forward half first; ``hy``/``cy`` the final states.
  * Several layers: layer k > 0 reads the previous layer's output, so its ``wIh`` slice needs
    ``inputSize == dirs*hidden`` (the header gives every layer the same ``inputSize`` columns).
  * ``dropout`` acts only in training: at inference it is the identity (any value in [0, 1] accepted).
  * ``zoneout_cell`` / ``zoneout_hidden`` at inference use the expectation of the zoneout mask (Krueger et al.
    2016): the carried states are ``c = zc*c_prev + (1-zc)*c_new`` and ``h = zh*h_prev + (1-zh)*h_new``; ``h_new``
    is computed from the un-mixed ``c_new`` and the ``output`` sequence holds ``h_new`` (the cell's output before
    zoneout), as in MindSpore Lite's kernel and the widely used ZoneoutLSTMCell.
  * ``proj_size > 0`` (LSTM with projections) needs a projection weight [dirs*layers, proj, hidden], and the
    six-input signature has no input for it: OH_NN_UNSUPPORTED. (The real runtime also reads the INT64 value
    as a float32, so any ordinary proj_size reaches its primitive as 0.) The math is implemented in
    :func:`lstm_forward` (``w_proj``) for a future seven-input form.

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

from ..dtypes import from_numpy
from ..errors import invalid, unsupported
from . import kernel

_LSTM = "OH_NN_OPS_LSTM"
_DPP = "OH_NN_OPS_DETECTION_POST_PROCESS"
_FLOATS = (np.dtype(np.float16), np.dtype(np.float32))

# Position of each gate's block of `hidden` rows inside the 4*hidden axis (i, o, f, g = ONNX iofc / MindSpore Lite IOFG).
GATE_ROWS = {"i": 0, "o": 1, "f": 2, "g": 3}


def _dtype_name(dtype) -> str:
    try:
        return from_numpy(dtype).name
    except ValueError:
        return str(dtype)


def _need_float(op: str, what: str, array: np.ndarray) -> None:
    if array.dtype not in _FLOATS:
        raise unsupported(f"{op}: {what} dtype {_dtype_name(array.dtype)} is not supported "
                          f"(FLOAT32 or FLOAT16; quantized tensors are dequantized by the executor)")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # tanh form: no overflow in exp for large |x|, also in float16.
    half = x.dtype.type(0.5)
    return half * np.tanh(half * x) + half


def _rate(name: str, value) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise invalid(f"{_LSTM}: {name} {value} must be a probability in [0, 1]")
    return value


# ---------------------------------------------------------------------------------------------------------------
# LSTM
# ---------------------------------------------------------------------------------------------------------------
def lstm_forward(x, w_ih, w_hh, b, h0, c0, *, directions: int, layers: int, zoneout_cell: float = 0.0,
                 zoneout_hidden: float = 0.0, w_proj=None):
    """Stacked (bi)directional LSTM on validated arrays, all of one float dtype.

    x [T, B, I]; w_ih [D*L, 4H, I]; w_hh [D*L, 4H, R]; b [D*L, 4H] (input + hidden bias, or None);
    h0 [D*L, B, R]; c0 [D*L, B, H]; w_proj [D*L, R, H] or None (then R = H). Returns (output [T, B, D*R], hy, cy).
    Per time step: one batched matmul over the directions for the recurrence (plus one for the projection).
    """
    dtype = x.dtype
    steps, batch = x.shape[0], x.shape[1]
    hidden = w_ih.shape[1] // 4
    real = w_hh.shape[2]
    one = dtype.type(1)
    zc, zh = dtype.type(zoneout_cell), dtype.type(zoneout_hidden)
    rows = {g: slice(k * hidden, (k + 1) * hidden) for g, k in GATE_ROWS.items()}
    hy = np.empty((directions * layers, batch, real), dtype)
    cy = np.empty((directions * layers, batch, hidden), dtype)
    dirs = np.arange(directions)
    seq = x
    for layer in range(layers):
        idx = layer * directions + dirs
        # Input contributions of every time step at once: [D, T*B, 4H].
        pre = np.matmul(seq.reshape(steps * batch, -1), np.swapaxes(w_ih[idx], 1, 2))
        if b is not None:
            pre += b[idx][:, None, :]
        pre = pre.reshape(directions, steps, batch, 4 * hidden)
        recur = np.swapaxes(w_hh[idx], 1, 2)  # [D, R, 4H]
        proj = None if w_proj is None else np.swapaxes(w_proj[idx], 1, 2)  # [D, H, R]
        h = h0[idx].copy()
        c = c0[idx].copy()
        out = np.empty((steps, batch, directions, real), dtype)
        for s in range(steps):
            times = np.array([s, steps - 1 - s][:directions])  # forward reads t = s, backward t = T-1-s
            gates = pre[dirs, times] + np.matmul(h, recur)  # [D, B, 4H]
            i = _sigmoid(gates[..., rows["i"]])
            o = _sigmoid(gates[..., rows["o"]])
            f = _sigmoid(gates[..., rows["f"]])
            g = np.tanh(gates[..., rows["g"]])
            c_new = f * c + i * g
            h_new = o * np.tanh(c_new)
            if proj is not None:
                h_new = np.matmul(h_new, proj)
            out[times, :, dirs, :] = h_new
            c = c_new if zc == 0 else zc * c + (one - zc) * c_new
            h = h_new if zh == 0 else zh * h + (one - zh) * h_new
        hy[idx] = h
        cy[idx] = c
        seq = out.reshape(steps, batch, directions * real)
    return seq, hy, cy


@kernel(_LSTM)
def lstm(x, w_ih, w_hh, bias, hx, cx, *, bidirectional, has_bias, input_size, hidden_size, num_layers,
         num_directions, dropout, zoneout_cell, zoneout_hidden, proj_size):
    for what, array in (("input", x), ("wIh", w_ih), ("wHh", w_hh), ("hx", hx), ("cx", cx)) + (
            (("bias", bias),) if has_bias else ()):
        _need_float(_LSTM, what, array)
    directions = 2 if bidirectional else 1
    if num_directions not in (0, directions):
        raise invalid(f"{_LSTM}: num_directions {num_directions} contradicts bidirectional={bool(bidirectional)} "
                      f"(needs {directions})")
    _rate("dropout", dropout)  # training-only: identity at inference
    zc, zh = _rate("zoneout_cell", zoneout_cell), _rate("zoneout_hidden", zoneout_hidden)
    if proj_size < 0:
        raise invalid(f"{_LSTM}: proj_size {proj_size} must be >= 0")
    if proj_size > 0:
        raise unsupported(f"{_LSTM}: proj_size {proj_size} > 0 (LSTM with projection) needs a projection weight, "
                          f"and the six-input LSTM has no input for it")
    if x.ndim != 3:
        raise invalid(f"{_LSTM}: input must be [seqLen, batch, inputSize], got shape {list(x.shape)}")
    steps, batch, features = x.shape
    if input_size not in (0, features):
        raise invalid(f"{_LSTM}: input_size {input_size} does not match the input's last dim {features}")
    if w_ih.ndim != 3 or w_ih.shape[1] % 4 or w_ih.shape[0] % directions:
        raise invalid(f"{_LSTM}: wIh must be [dirs*layers, 4*hidden, inputSize], got shape {list(w_ih.shape)}")
    hidden = w_ih.shape[1] // 4
    if hidden_size not in (0, hidden):
        raise invalid(f"{_LSTM}: hidden_size {hidden_size} does not match wIh {list(w_ih.shape)} (4*hidden rows)")
    layers = num_layers or w_ih.shape[0] // directions
    if num_layers < 0 or layers < 1:
        raise invalid(f"{_LSTM}: num_layers {num_layers} must be >= 1")
    stack = directions * layers
    expected = {
        "wIh": (w_ih, (stack, 4 * hidden, features)),
        "wHh": (w_hh, (stack, 4 * hidden, hidden)),
        "hx": (hx, (stack, batch, hidden)),
        "cx": (cx, (stack, batch, hidden)),
    }
    if has_bias:
        expected["bias"] = (bias, (stack, 8 * hidden))
    for what, (array, shape) in expected.items():
        if tuple(array.shape) != shape:
            raise invalid(f"{_LSTM}: {what} has shape {list(array.shape)}, expected {list(shape)} "
                          f"(seqLen={steps}, batch={batch}, inputSize={features}, hidden={hidden}, "
                          f"layers={layers}, directions={directions})")
    if layers > 1 and features != directions * hidden:
        raise invalid(f"{_LSTM}: with {layers} layers every wIh slice has inputSize={features} columns, but layers "
                      f"after the first read dirs*hidden={directions * hidden} features; they must be equal")
    dtype = x.dtype
    b = None
    if has_bias:
        bias = bias.astype(dtype, copy=False)
        b = bias[:, : 4 * hidden] + bias[:, 4 * hidden:]
    return lstm_forward(x, w_ih.astype(dtype, copy=False), w_hh.astype(dtype, copy=False), b,
                        hx.astype(dtype, copy=False), cx.astype(dtype, copy=False),
                        directions=directions, layers=layers, zoneout_cell=zc, zoneout_hidden=zh)


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


@kernel(_DPP)
def detection_post_process(bbox, scores, anchors, *, input_size, scale, nms_iou_threshold, nms_score_threshold,
                           max_detections, detections_per_class, max_classes_per_detection, num_classes,
                           use_regular_nms, out_quantized, ctx):
    for what, array in (("bbox", bbox), ("scores", scores), ("anchors", anchors)):
        _need_float(_DPP, what, array)
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
    if bbox.ndim != 3 or bbox.shape[2] < 4:
        raise invalid(f"{_DPP}: bbox must be [batch, anchors, >=4], got shape {list(bbox.shape)}")
    batch, count = bbox.shape[:2]
    if scores.ndim != 3 or scores.shape[:2] != (batch, count):
        raise invalid(f"{_DPP}: scores must be [batch, anchors, classes] = [{batch}, {count}, ...], "
                      f"got shape {list(scores.shape)}")
    if anchors.shape[-1:] != (4,) or anchors.size != 4 * count:
        raise invalid(f"{_DPP}: anchors must be [{count}, 4] (ycenter, xcenter, h, w), got shape {list(anchors.shape)}")
    if num_classes < 1 or scores.shape[2] - num_classes not in (0, 1):
        raise invalid(f"{_DPP}: num_classes {num_classes} does not fit scores with {scores.shape[2]} columns "
                      f"(needs num_classes or num_classes + 1 with a leading background column)")
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
