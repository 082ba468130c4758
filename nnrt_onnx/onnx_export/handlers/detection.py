"""Export of the detection NNRt op DETECTION_POST_PROCESS: box decoding and greedy NMS written with standard ops.

Decisions:

* DETECTION_POST_PROCESS: decoding and greedy NMS written with standard ops (a ``Loop`` picks the best alive
  candidate per class, lowest anchor on ties, and suppresses IoU > threshold), in the data dtype, so it follows
  the kernel's arithmetic (ONNX ``NonMaxSuppression`` is not used: it keeps ``score > threshold`` where the
  kernel keeps ``>=``, computes IoU in float32 and leaves the order of equal scores unspecified).
* Not exported (ExportIssue): DETECTION_POST_PROCESS other than float16/float32 (the kernel takes no other).
* Exactness limits that no export can remove: onnxruntime's float32 Exp (DETECTION_POST_PROCESS box decoding)
  differs from numpy's by an ulp, and onnxruntime runs chains of float16 elementwise ops in float32 without
  rounding in between, so decoded boxes can differ by an ulp and, in principle, an IoU lying exactly at the
  threshold could be decided differently.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from ..context import ExportContext, ExportIssue
from ..custom import FunctionBody, emit_custom
from . import exporter
from ._common import F16, F32, _const, _elem, _i64, _input_dtype, _no_quant, _shape


class _SubGraph(FunctionBody):
    """Nodes of a control-flow body inside a function body (names drawn from the function's counter)."""

    def __init__(self, parent: FunctionBody):
        super().__init__(0, 0)
        self.fresh = parent.fresh  # type: ignore[method-assign]


def _nms_loop(f: FunctionBody, boxes: str, scores: str, rows: int, count: int, limit: int, score_threshold: float,
              iou_threshold: float, dtype: np.dtype) -> tuple[str, str]:
    """The kernel's greedy NMS for every row of ``scores`` [rows, N] at once (boxes [N, 4]).

    Each Loop iteration picks, per row, the alive candidate of highest score (lowest anchor on ties, ArgMax) and
    drops it and every alive candidate whose IoU with it is > the threshold (IoU 0 where a box has no area).
    Returns (picks [T, rows] int64, valid [T, rows] bool) for the T <= limit iterations run."""
    zero = _const(f, 0, dtype)
    corner = [f.one("Unsqueeze", [f.one("Gather", [boxes, _i64(f, k)], axis=1), _i64(f, [0])]) for k in range(4)]
    areas = f.one("Mul", [f.one("Sub", [corner[2], corner[0]]), f.one("Sub", [corner[3], corner[1]])])  # [1, N]
    alive0 = f.one("GreaterOrEqual", [scores, _const(f, score_threshold, dtype)])
    positions = _i64(f, np.arange(count).reshape(1, count))

    g = _SubGraph(f)
    it, cond, alive = g.fresh("iter"), g.fresh("cond"), g.fresh("alive")
    masked = g.one("Where", [alive, scores, _const(g, -np.inf, dtype)])
    best = g.one("ArgMax", [masked], axis=1, keepdims=0)  # [rows]
    any_alive = g.one("ReduceMax", [g.one("Cast", [alive], to=TensorProto.INT32), _i64(g, [1])], keepdims=0)
    valid = g.one("Greater", [any_alive, _const(g, 0, np.int32)])
    chosen = g.one("Gather", [boxes, best], axis=0)  # [rows, 4]
    b = [g.one("Gather", [chosen, _i64(g, [k])], axis=1) for k in range(4)]  # [rows, 1]
    area = g.one("Mul", [g.one("Sub", [b[2], b[0]]), g.one("Sub", [b[3], b[1]])])
    height = g.one("Max", [g.one("Sub", [g.one("Min", [b[2], corner[2]]), g.one("Max", [b[0], corner[0]])]), zero])
    width = g.one("Max", [g.one("Sub", [g.one("Min", [b[3], corner[3]]), g.one("Max", [b[1], corner[1]])]), zero])
    inter = g.one("Mul", [height, width])
    iou = g.one("Div", [inter, g.one("Sub", [g.one("Add", [area, areas]), inter])])
    has_area = g.one("And", [g.one("Greater", [area, zero]), g.one("Greater", [areas, zero])])
    iou = g.one("Where", [has_area, iou, zero])
    kept = g.one("Not", [g.one("Greater", [iou, _const(g, iou_threshold, dtype)])])
    other = g.one("Not", [g.one("Equal", [positions, g.one("Unsqueeze", [best, _i64(g, [1])])])])
    alive_out = g.one("And", [g.one("And", [alive, kept]), other])
    left = g.one("ReduceMax", [g.one("Cast", [alive_out], to=TensorProto.INT32)], keepdims=0)
    cond_out = g.one("Greater", [left, _const(g, 0, np.int32)])
    body = helper.make_graph(
        g.nodes, f.fresh("nms_body"),
        [helper.make_tensor_value_info(it, TensorProto.INT64, []),
         helper.make_tensor_value_info(cond, TensorProto.BOOL, []),
         helper.make_tensor_value_info(alive, TensorProto.BOOL, [rows, count])],
        [helper.make_tensor_value_info(cond_out, TensorProto.BOOL, []),
         helper.make_tensor_value_info(alive_out, TensorProto.BOOL, [rows, count]),
         helper.make_tensor_value_info(best, TensorProto.INT64, [rows]),
         helper.make_tensor_value_info(valid, TensorProto.BOOL, [rows])])
    # the first iteration always runs (limit >= 1): with nothing alive it only reports invalid picks
    _, picks, valids = f.add("Loop", [_i64(f, limit), _const(f, True, np.bool_), alive0],
                             [f.fresh("alive_end"), f.fresh("picks"), f.fresh("valid")], body=body)
    return picks, valids


@exporter("OH_NN_OPS_DETECTION_POST_PROCESS")
def detection_post_process(ctx: ExportContext) -> None:
    """Box decoding + greedy NMS (regular: per class, then the best max_detections over all classes; fast: on each
    anchor's best class score, each kept anchor giving its best classes), rows packed and zero-padded."""
    _no_quant(ctx)
    a = ctx.args
    dtype = _input_dtype(ctx, 0)
    if dtype not in (F16, F32):
        raise ExportIssue(f"DETECTION_POST_PROCESS of {dtype}")
    batch, count, _ = _shape(ctx, ctx.input(0), "bbox")
    columns = _shape(ctx, ctx.input(1), "scores")[2]
    classes = int(a["num_classes"])
    first = columns - classes
    h_scale, w_scale, x_scale, y_scale = (float(v) for v in a["scale"])
    iou_threshold, score_threshold = float(a["nms_iou_threshold"]), float(a["nms_score_threshold"])
    max_detections = int(a["max_detections"])
    per_class = int(a["detections_per_class"])
    max_classes = int(a["max_classes_per_detection"])
    regular = bool(a["use_regular_nms"])
    rows_out = max_detections * max_classes
    out_dtypes = [np.dtype(ctx.value(o).dtype) for o in ctx.node.outputs]

    def build(f: FunctionBody) -> None:
        bbox, scores, anchors = f.inputs
        anchors = f.one("Reshape", [anchors, _i64(f, [count, 4])])
        if _input_dtype(ctx, 2) != dtype:
            anchors = f.one("Cast", [anchors], to=_elem(dtype))
        ya, xa, ha, wa = (f.one("Gather", [anchors, _i64(f, k)], axis=1) for k in range(4))
        dy, dx, dh, dw = (f.one("Gather", [bbox, _i64(f, k)], axis=2) for k in range(4))
        half = _const(f, 0.5, dtype)
        yc = f.one("Add", [f.one("Mul", [f.one("Div", [dy, _const(f, y_scale, dtype)]), ha]), ya])
        xc = f.one("Add", [f.one("Mul", [f.one("Div", [dx, _const(f, x_scale, dtype)]), wa]), xa])
        hh = f.one("Mul", [f.one("Mul", [half, f.one("Exp", [f.one("Div", [dh, _const(f, h_scale, dtype)])])]), ha])
        hw = f.one("Mul", [f.one("Mul", [half, f.one("Exp", [f.one("Div", [dw, _const(f, w_scale, dtype)])])]), wa])
        last = _i64(f, [2])
        corners = [f.one("Sub", [yc, hh]), f.one("Sub", [xc, hw]), f.one("Add", [yc, hh]), f.one("Add", [xc, hw])]
        boxes = f.one("Concat", [f.one("Unsqueeze", [v, last]) for v in corners], axis=2)  # [B, N, 4]
        class_scores = scores
        if first:
            class_scores = f.one("Slice", [scores, _i64(f, [first]), _i64(f, [columns]), last])
        if _input_dtype(ctx, 1) != dtype:
            class_scores = f.one("Cast", [class_scores], to=_elem(dtype))
        results: list[list[str]] = [[], [], [], []]
        for n in range(batch):
            bn = f.one("Gather", [boxes, _i64(f, n)], axis=0)  # [N, 4]
            sn = f.one("Gather", [class_scores, _i64(f, n)], axis=0)  # [N, C]
            if regular:
                table, rows, limit = f.one("Transpose", [sn], perm=[1, 0]), classes, per_class
            else:
                best = f.one("ReduceMax", [sn, _i64(f, [1])], keepdims=1)
                table, rows, limit = f.one("Transpose", [best], perm=[1, 0]), 1, max_detections
            picks, valids = _nms_loop(f, bn, table, rows, count, limit, score_threshold, iou_threshold, dtype)
            flat = _i64(f, [-1])
            picks_by_row = f.one("Transpose", [picks], perm=[1, 0])  # [rows, T]: row-major, selection order
            keep = f.one("Reshape", [f.one("Transpose", [valids], perm=[1, 0]), flat])
            anchor_sel = f.one("Compress", [f.one("Reshape", [picks_by_row, flat]), keep], axis=0)
            if regular:
                grid = f.one("Expand", [_i64(f, np.arange(classes).reshape(classes, 1)),
                                        f.one("Shape", [picks_by_row])])
                class_sel = f.one("Compress", [f.one("Reshape", [grid, flat]), keep], axis=0)
                one_col = _i64(f, [1])
                pairs = f.one("Concat", [f.one("Unsqueeze", [anchor_sel, one_col]),
                                         f.one("Unsqueeze", [class_sel, one_col])], axis=1)
                score_sel = f.one("GatherND", [sn, pairs])  # [K]
                k = f.one("Min", [f.one("Shape", [score_sel]), _i64(f, [max_detections])])
                # TopK: descending, lower position first on ties = lower class, then lower anchor
                _, order = f.add("TopK", [f.one("Cast", [score_sel], to=TensorProto.FLOAT), k],
                                 [f.fresh("top"), f.fresh("order")], axis=0, largest=1, sorted=1)
                out_scores = f.one("Gather", [score_sel, order], axis=0)
                out_classes = f.one("Gather", [class_sel, order], axis=0)
                out_boxes = f.one("Gather", [bn, f.one("Gather", [anchor_sel, order], axis=0)], axis=0)
                found = k
            else:
                per_anchor = min(max_classes, classes)
                anchor_scores = f.one("Gather", [sn, anchor_sel], axis=0)  # [K, C]
                _, order = f.add("TopK", [f.one("Cast", [anchor_scores], to=TensorProto.FLOAT), _i64(f, [per_anchor])],
                                 [f.fresh("top"), f.fresh("order")], axis=1, largest=1, sorted=1)
                out_scores = f.one("Reshape", [f.one("GatherElements", [anchor_scores, order], axis=1), flat])
                out_classes = f.one("Reshape", [order, flat])
                kept_boxes = f.one("Unsqueeze", [f.one("Gather", [bn, anchor_sel], axis=0), _i64(f, [1])])
                out_boxes = f.one("Reshape", [f.one("Expand", [kept_boxes, _i64(f, [1, per_anchor, 1])]),
                                              _i64(f, [-1, 4])])
                found = f.one("Mul", [f.one("Shape", [anchor_sel]), _i64(f, [per_anchor])])
            missing = f.one("Sub", [_i64(f, [rows_out]), found])
            pads_1d = f.one("Concat", [_i64(f, [0]), missing], axis=0)
            pads_2d = f.one("Concat", [_i64(f, [0, 0]), missing, _i64(f, [0])], axis=0)
            axis0 = _i64(f, [0])
            results[0].append(f.one("Unsqueeze", [f.one("Pad", [out_boxes, pads_2d]), axis0]))
            results[1].append(f.one("Unsqueeze", [f.one("Pad", [out_classes, pads_1d]), axis0]))
            results[2].append(f.one("Unsqueeze", [f.one("Pad", [out_scores, pads_1d]), axis0]))
            results[3].append(found)
        for k, parts in enumerate(results):
            joined = parts[0] if batch == 1 else f.one("Concat", parts, axis=0)
            f.one("Cast", [joined], f"y{k}", to=_elem(out_dtypes[k]))

    emit_custom(ctx, build)
