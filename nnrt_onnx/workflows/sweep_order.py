"""The order a sweep hands its models to N workers: the most expensive first (longest-processing-time first), so
the sweep does not end with one worker still on a big model it started last while the others idle.

A model's cost is estimated, not measured, over the shapes ONNX shape inference gives (unknown dims count 1), read
without external data: the multiply-accumulates of its Conv, ConvTranspose, Gemm and MatMul nodes, plus
:data:`ELEMENT_COST` for each element of every tensor it stores or computes (its initializers and every node's
outputs: weights, computed in the graph or not, and activations). A check touches every such element several
times over -- both runtimes write each output, the converter and onnxruntime's session copy every weight -- which
the products alone miss: AlexNet of the onnx package's light nets (0.65 GMAC,
63 M elements written, 61 M of them its weights) takes longer than ResNet-50 (4.1 GMAC, 63 M elements). A file that
does not load or infer counts by its size in bytes after every estimated one. File size alone is a poor proxy
where weights are computed in the graph (the light nets: VGG-19 is their smallest file and their largest model).
"""
from __future__ import annotations

import os
from typing import Any, Sequence

# multiply-accumulates one element stored or computed costs, as a check's time goes (fitted on the onnx package's
# light nets, warm, one worker: ~0.07 s per GMAC and ~0.01 s per million elements; docs/sweeps.md)
ELEMENT_COST = 150


def estimated_cost(path: str) -> int | None:
    """The estimated cost of checking the model at ``path`` (multiply-accumulates plus :data:`ELEMENT_COST` per
    element stored or computed), or None where onnx cannot read or infer it."""
    shapes_and_graph = _inferred(path)
    if shapes_and_graph is None:
        return None
    shapes, graph = shapes_and_graph
    elements = sum(_product(tensor.dims) for tensor in graph.initializer)
    elements += sum(_product(shapes[name]) for node in graph.node for name in node.output if name in shapes)
    return _multiply_accumulates(shapes, graph) + ELEMENT_COST * elements


def multiply_accumulates(path: str) -> int | None:
    """The estimated multiply-accumulates of one inference of the model at ``path``, or None."""
    shapes_and_graph = _inferred(path)
    return None if shapes_and_graph is None else _multiply_accumulates(*shapes_and_graph)


def _inferred(path: str):
    """(tensor name -> shape, the graph) as ONNX infers them, or None."""
    try:
        import onnx
        from onnx import shape_inference

        model = onnx.load(path, load_external_data=False)
        model = shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # noqa: BLE001 - any model onnx cannot read or infer has no estimate; its check will say why
        return None
    graph = model.graph
    shapes = {info.name: [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                          for d in info.type.tensor_type.shape.dim]
              for info in (*graph.value_info, *graph.input, *graph.output)}
    shapes.update({tensor.name: list(tensor.dims) for tensor in graph.initializer})
    return shapes, graph


def _multiply_accumulates(shapes, graph) -> int:
    total = 0
    for node in graph.node:
        if node.op_type not in ("Conv", "ConvTranspose", "Gemm", "MatMul") or len(node.input) < 2:
            continue
        weight, out, data = shapes.get(node.input[1]), shapes.get(node.output[0]), shapes.get(node.input[0])
        if not weight or not out:
            continue
        if node.op_type == "Conv":
            total += _product(out) * _product(weight[1:])
        elif node.op_type == "ConvTranspose":
            total += _product(data or [1]) * _product(weight[1:])
        else:
            transposed = any(a.name == "transB" and a.i for a in node.attribute)
            total += _product(out) * (weight[-1] if transposed else weight[-2] if len(weight) > 1 else weight[0])
    return total


def _product(dims) -> int:
    result = 1
    for dim in dims:
        result *= max(int(dim), 1)
    return result


def most_expensive_first(tasks: Sequence[tuple[Any, str]],
                         estimates: Sequence[int | None] | None = None) -> list[tuple[Any, str]]:
    """``tasks`` (key, model path) sorted by estimated cost, the largest first (ties keep their order).
    ``estimates``: each task's :func:`estimated_cost` made elsewhere (the sweep's fork server), None for those it
    has none of; by default they are made here."""
    if estimates is None:
        estimates = [estimated_cost(path) for _, path in tasks]

    def cost(path: str, estimate: int | None) -> tuple[int, int]:
        if estimate is not None:
            return (1, estimate)
        try:
            return (0, os.path.getsize(path))
        except OSError:
            return (0, 0)

    costs = [cost(path, estimate) for (_, path), estimate in zip(tasks, estimates)]
    order = sorted(range(len(tasks)), key=lambda i: costs[i], reverse=True)
    return [tasks[i] for i in order]


__all__ = ["ELEMENT_COST", "estimated_cost", "most_expensive_first", "multiply_accumulates"]
