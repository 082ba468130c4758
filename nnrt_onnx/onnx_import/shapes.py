"""ONNX shape inference without re-serialising the weights.

``onnx.shape_inference.infer_shapes`` serialises the whole model to hand it to its C++ implementation and parses
the result back: for a 548 MiB VGG-19 that is two full copies of the weights and about 6 s. Shape inference only
needs each initializer's type and shape (data propagation reads small shape-like constants), so
:func:`infer_shapes_without_weights` runs it on a light copy of the model whose large initializers are declared as
typed graph inputs instead, then copies the inferred ``value_info`` and output types back.
"""
from __future__ import annotations

import onnx
from onnx import helper

from .subgraph import subgraphs

LARGE_ELEMENTS = 1024  # initializers with more elements are left out (shape tensors and axes are far smaller)


def _element_count(tensor: onnx.TensorProto) -> int:
    count = 1
    for d in tensor.dims:
        count *= d
    return count


def light_copy(model: onnx.ModelProto, large: int = LARGE_ELEMENTS) -> onnx.ModelProto:
    """``model`` without the data of its initializers of more than ``large`` elements (or whose data stays in the
    file, ``weights``): each becomes a graph input of its type and shape (unless it is listed as one already, as IR
    version 3 requires)."""
    light = onnx.ModelProto()
    light.ir_version = max(model.ir_version, 4)  # IR >= 4: graph inputs need not have initializers and vice versa
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    graph, source = light.graph, model.graph
    graph.name = source.name
    graph.node.extend(source.node)
    graph.input.extend(source.input)
    graph.output.extend(source.output)
    graph.value_info.extend(source.value_info)
    listed = {i.name for i in source.input}
    for tensor in source.initializer:
        if _element_count(tensor) <= large and tensor.data_location != onnx.TensorProto.EXTERNAL:
            graph.initializer.append(tensor)
        elif tensor.name not in listed:
            graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    _clear_negative_dims(graph)
    return light


def _clear_negative_dims(graph: onnx.GraphProto) -> None:
    """Declared dims below 0 become unknown dims, in a graph and its subgraphs: exporters write -1 for a dynamic dim
    (paddle2onnx does), and onnx's C++ inference aborts the process on some such shapes (a Slice trips an
    assertion)."""
    for info in (*graph.input, *graph.output, *graph.value_info):
        for dim in info.type.tensor_type.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value < 0:
                dim.Clear()
    for node in graph.node:
        for subgraph in subgraphs(node):
            _clear_negative_dims(subgraph)


def infer_shapes_without_weights(model: onnx.ModelProto, *, in_place: bool = False) -> onnx.ModelProto:
    """The ``value_info``, output types and annotated If/Loop/Scan bodies of ``limits.infer_shapes`` (ONNX shape
    inference with bounded data propagation), inferred on :func:`light_copy` (the weights are never serialised).
    ``in_place``: add them to ``model`` itself (which the caller owns) and return it; otherwise ``model`` is left
    unchanged and a copy is returned. Raises what infer_shapes raises."""
    from .limits import infer_shapes  # the importer's bounded inference (data propagation capped, bad nodes hidden)

    inferred = infer_shapes(light_copy(model))
    if in_place:
        target = model
    else:
        target = onnx.ModelProto()
        target.CopyFrom(model)
    known = {v.name for v in target.graph.value_info}
    target.graph.value_info.extend(v for v in inferred.graph.value_info if v.name not in known)
    outputs = {o.name: o for o in inferred.graph.output}
    for output in target.graph.output:
        if output.name in outputs:
            output.CopyFrom(outputs[output.name])
    _copy_subgraph_shapes(inferred.graph, target.graph)
    return target


def _has_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)


def _copy_subgraph_shapes(inferred: onnx.GraphProto, target: onnx.GraphProto) -> None:
    """Inference also annotates If/Loop/Scan bodies (their value_info and outputs): the converter unrolls them with
    those shapes, so the inferred nodes replace the target's (same nodes in the same order; the bodies' own
    initializers were never taken out of the light copy)."""
    if len(inferred.node) != len(target.node):
        return
    for node, annotated in zip(target.node, inferred.node):
        if _has_subgraph(node) and annotated.op_type == node.op_type and list(annotated.output) == list(node.output):
            node.CopyFrom(annotated)


__all__ = ["infer_shapes_without_weights", "light_copy"]
