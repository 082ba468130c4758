"""The order a sweep hands its models to N workers: the most expensive first (longest-processing-time first), so
the sweep does not end with one worker still on a big model it started last while the others idle.

A model's cost is estimated, not measured: the multiply-accumulates of its Conv, ConvTranspose, Gemm and MatMul
nodes over the shapes ONNX shape inference gives (unknown dims count 1), read without external data. A file
that does not load or infer counts by its size in bytes after every estimated one. File size alone is a poor
proxy where weights are computed in the graph (the onnx package's light nets: VGG-19 is their smallest file and
their largest model, 19.5 GMAC).
"""
from __future__ import annotations

import os
from typing import Any, Sequence


def multiply_accumulates(path: str) -> int | None:
    """The estimated multiply-accumulates of one inference of the model at ``path``, or None."""
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


def most_expensive_first(tasks: Sequence[tuple[Any, str]]) -> list[tuple[Any, str]]:
    """``tasks`` (key, model path) sorted by estimated cost, the largest first (ties keep their order)."""
    def cost(task) -> tuple[int, int]:
        estimate = multiply_accumulates(task[1])
        if estimate is not None:
            return (1, estimate)
        try:
            return (0, os.path.getsize(task[1]))
        except OSError:
            return (0, 0)

    costs = {id(task): cost(task) for task in tasks}
    return sorted(tasks, key=lambda task: costs[id(task)], reverse=True)


__all__ = ["most_expensive_first", "multiply_accumulates"]
