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
