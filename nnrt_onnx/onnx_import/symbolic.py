"""Shape tensors computed at run time, read symbolically: each element a known int or the name of a dynamic dim.

``x.view(x.size(0), -1)`` exports as ``Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1]))``: with the batch
dynamic the target is no constant, yet it is ``[batch, -1]`` — and against an input ``[batch, 4, 4, 4]`` the batch
cancels and the ``-1`` is 64, so RESHAPE can take ``[-1, 64]``. A dynamic dim is named by its ONNX ``dim_param``
(shape inference carries those from tensor to tensor), else by the tensor and axis it belongs to.

Only the ops that move shape elements around are followed (Shape, Gather, Slice, Concat, Unsqueeze, Squeeze,
Cast, Identity), integer constants, and Add/Sub/Mul/Div on elements known as numbers (a symbol only through what
leaves it as it is); anything else gives up (None).
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

import numpy as np
import onnx
from onnx import helper

from ..ir.graph import Graph

Element = "int | str"
_MAX_DEPTH = 32


class ShapeValues:
    """Reads the symbolic value of small integer tensors of one conversion."""

    def __init__(self, graph: Graph, producers: Mapping[str, onnx.NodeProto],
                 symbols: Mapping[str, Sequence[str]]):
        self.graph = graph
        self.producers = producers
        self.symbols = symbols  # ONNX tensor -> the dim_param of each dim ("" when none)

    def dim(self, tensor: str, axis: int) -> int | str:
        """Dim ``axis`` of ``tensor``: its size when known, else its symbol."""
        value = self.graph.values.get(self.graph.resolve(tensor))
        if value is not None and value.shape is not None and axis < len(value.shape) and value.shape[axis] >= 0:
            return int(value.shape[axis])
        names = self.symbols.get(tensor, ())
        return names[axis] if axis < len(names) and names[axis] else f"{tensor}#{axis}"

    def dims(self, tensor: str) -> list[int | str] | None:
        value = self.graph.values.get(self.graph.resolve(tensor))
        if value is None or value.shape is None:
            return None
        return [self.dim(tensor, axis) for axis in range(len(value.shape))]

    def value(self, tensor: str, depth: int = 0) -> list[int | str] | None:
        """The elements of a 0-d or 1-d integer tensor; None when they cannot be told."""
        known = self.graph.values.get(self.graph.resolve(tensor))
        if known is not None and known.data is not None:
            data = np.asarray(known.data)
            if data.dtype.kind not in "iu" or data.ndim > 1:
                return None
            return [int(v) for v in data.reshape(-1)]
        node = self.producers.get(tensor)
        if node is None or depth > _MAX_DEPTH:
            return None
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if any(type(attrs.get(name, 0)) is not int for name in ("start", "axis", "to")) or \
                type(attrs.get("end", 0)) not in (int, type(None)):
            return None  # an attribute of the wrong type: the producer's own conversion reports it
        inputs = list(node.input)
        op = node.op_type
        if not inputs or not inputs[0] or (op == "Gather" and (len(inputs) < 2 or not inputs[1])):
            return None  # (a malformed node: its own conversion reports it)
        if op == "Shape":
            dims = self.dims(inputs[0])
            if dims is None:
                return None
            return dims[slice(attrs.get("start", 0), attrs.get("end"))]
        if op in ("Cast", "Identity", "Unsqueeze", "Squeeze"):
            if op == "Cast" and attrs.get("to") not in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
                return None
            return self.value(inputs[0], depth + 1)
        if op == "Concat":
            parts = [self.value(i, depth + 1) for i in inputs]
            return None if any(p is None for p in parts) else [e for p in parts for e in p]
        if op == "Gather" and attrs.get("axis", 0) == 0:
            data, indices = self.value(inputs[0], depth + 1), self.value(inputs[1], depth + 1)
            if data is None or indices is None or any(isinstance(i, str) for i in indices):
                return None
            try:
                return [data[i] for i in indices]
            except IndexError:
                return None
        if op == "Slice" and len(inputs) >= 3:
            data = self.value(inputs[0], depth + 1)
            bounds = [self.value(i, depth + 1) if i else None for i in inputs[1:5]]
            starts, ends = bounds[0], bounds[1]
            steps = bounds[3] if len(bounds) > 3 and bounds[3] is not None else [1]
            if data is None or starts is None or ends is None or any(isinstance(v, str) for v in starts + ends + steps):
                return None
            if len(starts) != 1 or len(ends) != 1 or len(steps) != 1 or steps[0] == 0:
                return None
            return data[slice(starts[0], ends[0], steps[0])]
        if op in _ARITHMETIC and len(inputs) == 2 and inputs[1]:
            return _arithmetic(op, self.value(inputs[0], depth + 1), self.value(inputs[1], depth + 1))
        return None

    def elements(self, tensor: str, depth: int = 0) -> list[int | str | None] | None:
        """The elements of a 1-d integer tensor whose length is known, each as :meth:`value` reads it or None where
        it cannot be told (a Concat's parts are read apart: ``Concat(Shape(x)[:2], Mul(Shape(x)[2:], 2))`` is
        ``[N, C, None, None]``); None when not even the length is known."""
        whole = self.value(tensor)
        if whole is not None:
            return whole
        node = self.producers.get(tensor)
        if node is not None and node.op_type == "Concat" and depth <= _MAX_DEPTH and all(node.input):
            parts = [self.elements(part, depth + 1) for part in node.input]
            if all(p is not None for p in parts):
                return [e for p in parts for e in p]
        known = self.graph.values.get(self.graph.resolve(tensor))
        if known is not None and known.shape is not None and len(known.shape) == 1 and known.shape[0] >= 0:
            return [None] * int(known.shape[0])
        return None


# shape arithmetic exporters write (torch's ``x.size(1) // 2``): on known elements; a symbol survives only what leaves
# it unchanged (times or divided by 1, plus or minus 0)
_ARITHMETIC = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
               "Div": lambda a, b: None if b == 0 else abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)}


def _arithmetic(op: str, left, right) -> list[int | str] | None:
    """``op`` element by element (one side may have one element), integer Div truncating toward zero as
    onnxruntime's; None where a result cannot be told."""
    if left is None or right is None or (len(left) != len(right) and 1 not in (len(left), len(right))):
        return None
    count = max(len(left), len(right))
    result: list[int | str] = []
    for a, b in zip(left * count if len(left) == 1 else left, right * count if len(right) == 1 else right):
        if isinstance(a, str) or isinstance(b, str):
            symbol, other = (a, b) if isinstance(a, str) else (b, a)
            keeps = isinstance(other, int) and (other == 0 and op in ("Add", "Sub") and symbol is a or
                                                other == 1 and (op == "Mul" or op == "Div" and symbol is a))
            if not keeps:
                return None
            result.append(symbol)
            continue
        value = _ARITHMETIC[op](a, b)
        if value is None:
            return None
        result.append(int(value))
    return result


def reshape_target(input_dims: Sequence[int | str], requested: Sequence[int | str], allowzero: bool) -> list[int] | None:
    """RESHAPE's target (at most one -1) for an input of ``input_dims`` reshaped to the symbolic ``requested``
    (ONNX semantics: 0 copies the input's dim unless ``allowzero``, one -1 is inferred); None when more than one
    output dim stays unknown."""
    target: list[int | str] = [input_dims[i] if e == 0 and not allowzero and i < len(input_dims) else e
                               for i, e in enumerate(requested)]
    if target.count(-1) > 1:
        return None
    if -1 in target:
        numerator = Counter(d for d in input_dims if isinstance(d, str))
        denominator = Counter(e for e in target if isinstance(e, str))
        if not denominator - numerator and numerator - denominator == Counter():  # every symbol cancels
            known_in = int(np.prod([d for d in input_dims if isinstance(d, int)]))
            known_out = int(np.prod([e for e in target if isinstance(e, int) and e != -1]))
            if known_out and known_in % known_out == 0:
                target[target.index(-1)] = known_in // known_out
    resolved = [e if isinstance(e, int) else -1 for e in target]
    return resolved if resolved.count(-1) <= 1 else None
