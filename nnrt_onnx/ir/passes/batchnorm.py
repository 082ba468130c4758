"""Batch norm folding: a BATCH_NORM with constant statistics after a convolution becomes part of the convolution's
weights and bias (``fold_batchnorms``)."""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ..graph import Graph
from ..mapped import drop_pages

_CONVS = {OP.OH_NN_OPS_CONV2D, OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE}


def fold_batchnorms(graph: Graph) -> int:
    """CONV -> BATCH_NORM (constant statistics) becomes one CONV with scaled weights and shifted bias."""
    folded = 0
    producers = graph.producers()
    consumers = graph.consumers()
    removed: set[int] = set()
    for bn in list(graph.nodes):
        if bn.op != OP.OH_NN_OPS_BATCH_NORM:
            continue
        conv = producers.get(bn.inputs[0])
        if conv is None or conv.op not in _CONVS or len(consumers.get(conv.outputs[0], [])) != 1:
            continue
        if conv.outputs[0] in graph.outputs or conv.values().get("activation_type", 0):
            continue
        stats = [graph.values[n].data for n in bn.inputs[1:]]
        weight, bias = graph.values[conv.inputs[1]].data, graph.values[conv.inputs[2]].data
        if any(s is None for s in stats) or weight is None or bias is None or weight.dtype.kind != "f":
            continue
        scale, offset, mean, variance = (s.astype(np.float64) for s in stats)
        eps = bn.kernel_arguments()["epsilon"]
        factor = scale / np.sqrt(variance + eps)
        # computed in float64, rounded once into the weight's dtype (the ufunc casts block by block: no float64 copy
        # of the whole weight)
        new_weight = np.multiply(weight, factor.reshape(-1, 1, 1, 1), dtype=np.float64,
                                 out=np.empty(weight.shape, weight.dtype), casting="unsafe")
        new_bias = ((bias.astype(np.float64) - mean) * factor + offset).astype(bias.dtype)
        drop_pages(weight)  # (read from the model file: its pages need not stay in memory)
        conv.inputs[1] = graph.constant(new_weight, f"{conv.inputs[1]}.bnfolded")
        conv.inputs[2] = graph.constant(new_bias, f"{conv.inputs[2]}.bnfolded")
        # the maps are updated in place (recomputing them per fold was quadratic: densenet has 120 batch norms)
        producers.pop(conv.outputs[0], None)
        consumers.pop(conv.outputs[0], None)
        conv.outputs = [bn.outputs[0]]
        producers[bn.outputs[0]] = conv
        removed.add(id(bn))
        folded += 1
    if removed:
        graph.nodes[:] = [n for n in graph.nodes if id(n) not in removed]
    return folded


def fold_quantized_batchnorms(graph: Graph) -> tuple[int, list[str]]:
    """A quantized CONV (output quantized q1) -> quantized BATCH_NORM (q1 -> q2, constant statistics): the batch
    norm's per-channel gain ``a = scale / sqrt(variance + eps)`` joins the weights' scales (the same integers; a
    negative gain negates a channel's symmetric integers), its shift ``offset - mean * a`` the INT32 bias, and the
    convolution writes q2 directly -- the float folding above, on the quantized operands.

    onnxruntime rounds the convolution into q1, then the batch norm into q2; the folded convolution rounds once.
    The first rounding moves the batch norm's input by at most s1 / 2, its output by |a| s1 / 2: the two agree
    within one step of q2 when |a| s1 < 2 s2 for every channel. And q1 saturates the convolution: the fold keeps
    that only when, per channel, the batch norm maps q1's range over q2's whole range (q2's own saturation then
    clamps the same values). A batch norm failing either stays a quantized BATCH_NORM (q1 in, q2 out: exactly
    onnxruntime's dequantize, normalise, quantize); the reasons are returned, one per batch norm kept."""
    folded, kept = 0, []
    producers, consumers = graph.producers(), graph.consumers()
    for bn in list(graph.nodes):
        if bn.op != OP.OH_NN_OPS_BATCH_NORM:
            continue
        x, y = graph.values[bn.inputs[0]], graph.values[bn.outputs[0]]
        conv = producers.get(bn.inputs[0])
        if x.quant is None or y.quant is None or conv is None or conv.op not in _CONVS:
            continue
        reason = _why_not_foldable(graph, conv, bn, consumers)
        if reason is None:
            reason = _fold_into_quantized(graph, conv, bn)
        if reason is not None:
            kept.append(f"{bn.origin or bn.outputs[0]}: {reason}")
            continue
        producers.pop(conv.outputs[0], None)
        consumers.pop(conv.outputs[0], None)
        conv.outputs = [bn.outputs[0]]
        producers[bn.outputs[0]] = conv
        graph.nodes.remove(bn)
        folded += 1
    return folded, kept


def _why_not_foldable(graph: Graph, conv, bn, consumers) -> str | None:
    x, y = graph.values[bn.inputs[0]], graph.values[bn.outputs[0]]
    if x.quant.count != 1 or y.quant.count != 1:
        return "per-channel activation parameters"
    if len(consumers.get(conv.outputs[0], [])) != 1 or conv.outputs[0] in graph.outputs:
        return "the convolution's output has other readers"
    if conv.values().get("activation_type", 0):
        return "the convolution has a fused activation before the batch norm"
    if len(conv.inputs) < 3 or any(graph.values[n].data is None for n in [*conv.inputs[1:3], *bn.inputs[1:]]):
        return "non-constant weights, bias or statistics"
    weight, bias = graph.values[conv.inputs[1]], graph.values[conv.inputs[2]]
    if weight.quant is None or bias.dtype != np.int32 or graph.values[conv.inputs[0]].quant is None:
        return "the convolution is not quantized"
    return None


def _range(value) -> tuple[float, float]:
    info = np.iinfo(value.dtype)
    scale, zero = float(value.quant.scales[0]), float(value.quant.zero_points[0])
    return (info.min - zero) * scale, (info.max - zero) * scale


def _fold_into_quantized(graph: Graph, conv, bn) -> str | None:
    """Fold ``bn`` into the quantized ``conv`` (new weight and bias constants), or say why not (nothing changed)."""
    x, y = graph.values[bn.inputs[0]], graph.values[bn.outputs[0]]
    scale, offset, mean, variance = (graph.values[n].data.astype(np.float64).reshape(-1) for n in bn.inputs[1:])
    gain = scale / np.sqrt(variance + float(bn.kernel_arguments()["epsilon"]))
    shift = offset - mean * gain
    s1, s2 = float(x.quant.scales[0]), float(y.quant.scales[0])
    worst = float(np.max(np.abs(gain))) * s1 / s2
    if worst >= 2.0:
        return (f"onnxruntime rounds before it: up to {worst / 2:.2f} steps of its output, more than the one step a "
                "fold may add (|gain| x input step >= 2 output steps)")
    lo1, hi1 = _range(x)
    lo2, hi2 = _range(y)
    image = np.sort(np.stack([gain * lo1 + shift, gain * hi1 + shift]), axis=0)
    if np.any(image[0] > lo2 + s2 / 2) or np.any(image[1] < hi2 - s2 / 2):
        return "the convolution's output saturates inside the batch norm's output range"
    weight, bias = graph.values[conv.inputs[1]], graph.values[conv.inputs[2]]
    channels = weight.shape[0]
    w_quant = weight.quant
    if gain.size != channels or (w_quant.count > 1 and (w_quant.axis or 0) % weight.data.ndim != 0):
        return "weights not quantized per output channel"
    w_scales = np.broadcast_to(np.asarray(w_quant.scales, np.float64), (channels,))
    w_zeros = np.broadcast_to(np.asarray(w_quant.zero_points, np.int64), (channels,))
    integers = weight.data.astype(np.int64)
    negative = gain < 0
    if np.any(negative & (w_zeros != 0)):
        return "a negative gain on asymmetric weights"
    info = np.iinfo(weight.dtype)
    flipped = np.where(negative.reshape(-1, *([1] * (integers.ndim - 1))), -integers, integers)
    if flipped.min() < info.min or flipped.max() > info.max:
        return "a negative gain on a weight at the integer minimum"
    in_scale = float(graph.values[conv.inputs[0]].quant.scales[0])
    new_scales = w_scales * np.abs(gain)
    real_bias = bias.data.astype(np.float64).reshape(-1) * in_scale * w_scales
    new_bias = np.rint((real_bias * gain + shift) / (in_scale * new_scales))
    if np.any(np.abs(new_bias) > 2 ** 31 - 1) or np.any(new_scales == 0):
        return "the folded bias overflows INT32"
    from ...tensor import QuantParam

    new_weight = graph.constant(flipped.astype(weight.dtype), f"{conv.inputs[1]}.bnfolded")
    graph.values[new_weight].quant = QuantParam([float(s) for s in new_scales], [int(z) for z in w_zeros],
                                                [8] * channels, 0)
    conv.inputs[1] = new_weight
    conv.inputs[2] = graph.constant(new_bias.astype(np.int32), f"{conv.inputs[2]}.bnfolded")
    return None
