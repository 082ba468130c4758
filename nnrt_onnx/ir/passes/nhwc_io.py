"""NHWC model inputs and outputs (the importer's ``nhwc_io`` option): 4-D model inputs and outputs take the NHWC
layout, absorbing the transposes at the graph boundary (``nhwc_boundaries``)."""
from __future__ import annotations

from ...geometry import NCHW_TO_NHWC, NHWC_TO_NCHW, permute
from ..graph import Graph, Value
from .permutations import _new_transpose, perm_of


def nhwc_boundaries(graph: Graph) -> None:
    """Make 4-D model inputs and outputs NHWC by absorbing the boundary transposes."""
    consumers = graph.consumers()
    for position, name in enumerate(list(graph.inputs)):
        value = graph.values[name]
        if value.shape is None or len(value.shape) != 4:
            continue
        users = consumers.get(name, [])
        transposes = [u for u in users if perm_of(graph, u) == NCHW_TO_NHWC]
        # the NHWC input replaces the NCHW one; remaining NCHW users read a transpose of it
        nhwc = graph.fresh_name(f"{name}.nhwc")
        graph.add_value(Value(nhwc, value.dtype, permute(value.shape, NCHW_TO_NHWC)))
        for t in transposes:
            graph.rename_uses(t.outputs[0], nhwc)
            graph.nodes.remove(t)
        others = [u for u in users if u not in transposes]
        if others:
            back = _new_transpose(graph, nhwc, NHWC_TO_NCHW, graph.fresh_name(f"{name}.nchw"), "input")
            graph.add_value(Value(back.outputs[0], value.dtype, value.shape))
            graph.nodes.insert(0, back)
            for u in others:
                u.inputs = [back.outputs[0] if n == name else n for n in u.inputs]
        # keep the ONNX name on the model input
        graph.values[name] = Value(name, value.dtype, graph.values[nhwc].shape)
        for node in graph.nodes:
            node.inputs = [name if n == nhwc else n for n in node.inputs]
        graph.inputs[position] = name
    producers = graph.producers()
    for position, name in enumerate(list(graph.outputs)):
        value = graph.values[name]
        producer = producers.get(name)
        if value.shape is None or len(value.shape) != 4 or producer is None:
            continue
        if perm_of(graph, producer) == NHWC_TO_NCHW:
            source = producer.inputs[0]
            graph.nodes.remove(producer)
            graph.values[name] = Value(name, value.dtype, graph.values[source].shape)
            producers2 = graph.producers()
            inner = producers2.get(source)
            if inner is not None:
                inner.outputs = [name if o == source else o for o in inner.outputs]
                graph.rename_uses(source, name)
        else:
            out = graph.fresh_name(f"{name}.nhwc")
            graph.add_value(Value(out, value.dtype, permute(value.shape, NCHW_TO_NHWC)))
            graph.nodes.append(_new_transpose(graph, name, NCHW_TO_NHWC, out, "output"))
            graph.outputs[position] = out
