"""Activation fusion: RELU, RELU6 and CLIP(0, 6) / CLIP(0, inf) after an op with a fused-activation parameter become
that parameter (``fuse_activations``)."""
from __future__ import annotations

from ...enums import OH_NN_OperationType as OP
from ...optable import op_spec
from ..graph import Graph, Node


def _activation_of(graph: Graph, node: Node) -> int | None:
    """The OH_NN_FuseType an activation node computes, or None."""
    if node.op == OP.OH_NN_OPS_RELU:
        return 1
    if node.op == OP.OH_NN_OPS_RELU6:
        return 2
    if node.op == OP.OH_NN_OPS_CLIP:
        args = node.kernel_arguments()
        if args["min"] == 0 and args["max"] == 6:
            return 2
        if args["min"] == 0 and args["max"] == float("inf"):
            return 1
    return None


def fuse_activations(graph: Graph) -> int:
    # one pass with the producer map updated per fusion (restarting after each one was quadratic); a fusion
    # never enables another (the producer now carries an activation), so this is the old fixed point
    fused = 0
    producers = graph.producers()
    consumers = graph.consumers()
    removed: set[int] = set()
    for act in graph.nodes:
        kind = _activation_of(graph, act)
        if kind is None:
            continue
        producer = producers.get(act.inputs[0])
        if producer is None or len(consumers.get(act.inputs[0], [])) != 1 or act.inputs[0] in graph.outputs:
            continue
        spec = op_spec(producer.op)
        if spec.fuse is None or producer.values().get(spec.fuse, 0):
            continue
        if graph.values[producer.outputs[0]].quant is not None:
            continue
        tensor_type = next(p.tensor_type for p in spec.own_params if spec.fuse in p.keywords)
        from ...optable import param_array

        producer.params[tensor_type] = param_array(tensor_type, kind)
        producers.pop(producer.outputs[0], None)
        producer.outputs = [act.outputs[0]]
        producers[act.outputs[0]] = producer
        removed.add(id(act))
        fused += 1
    if removed:
        graph.nodes[:] = [n for n in graph.nodes if id(n) not in removed]
    return fused
