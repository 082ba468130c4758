"""What a user can do about a node that needs a constant or a static shape: the model inputs it depends on.

A tensor depends on a model input's *value* when a path of ordinary edges leads from the input to it, and only on
its *shape* when every such path passes through Shape or Size. The hint then says which input to bind
(``--constant-input``) or which of its dynamic dims to pin (``--input-shape``, or data given with ``--input``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

import onnx

from .subgraph import outer_references, subgraphs

_SHAPE_ONLY_READERS = {"Shape", "Size"}


@dataclass(frozen=True)
class DeclaredInput:
    """A runtime input of the model, as the conversion sees it (pinned dims known)."""

    name: str
    dims: tuple[int, ...] | None  # -1 per dynamic dim; None: unknown rank
    symbols: tuple[str, ...]  # the dim_param of each dim ("" when none)

    def dynamic_dims(self) -> list[int]:
        return [] if self.dims is None else [i for i, d in enumerate(self.dims) if d < 0]


def declared_input(info: onnx.ValueInfoProto, dims: tuple[int, ...] | None) -> DeclaredInput:
    symbols = tuple(d.dim_param for d in info.type.tensor_type.shape.dim) if info.type.tensor_type.HasField(
        "shape") else ()
    return DeclaredInput(info.name, dims, symbols)


def input_dependencies(tensors, producers: Mapping[str, onnx.NodeProto],
                       inputs: Mapping[str, DeclaredInput]) -> tuple[list[str], list[str]]:
    """(inputs whose values reach ``tensors``, inputs only whose shapes do), each in the model's input order."""
    by_value, by_shape = set(), set()
    stack = [(t, False) for t in tensors if t]
    seen = set()
    while stack:
        name, via_shape = stack.pop()
        if (name, via_shape) in seen:
            continue
        seen.add((name, via_shape))
        if name in inputs:
            (by_shape if via_shape else by_value).add(name)
            continue
        node = producers.get(name)
        if node is None:
            continue
        shape_only = via_shape or node.op_type in _SHAPE_ONLY_READERS
        stack.extend((i, shape_only) for i in node.input if i)
        for graph in subgraphs(node):
            stack.extend((i, via_shape) for i in outer_references(graph))
    order = list(inputs)
    return ([n for n in order if n in by_value], [n for n in order if n in by_shape - by_value])


def _symbol(entry: DeclaredInput, dim: int) -> str:
    """The dim's name in the model (dim_param), when it has a readable one."""
    symbol = entry.symbols[dim] if dim < len(entry.symbols) else ""
    return symbol if re.fullmatch(r"[A-Za-z_][\w.]*", symbol) else ""


def _pin_hint(entry: DeclaredInput, symbols: set[str] = frozenset()) -> str:
    dims = entry.dynamic_dims()
    named = [d for d in dims if d < len(entry.symbols) and entry.symbols[d] in symbols]
    dims = named or dims  # the dims the blocked tensor is known to read, else every dynamic one
    described = ", ".join(f"{d} ({_symbol(entry, d)})" if _symbol(entry, d) else str(d) for d in dims)
    example = ",".join(str(d) if d >= 0 else f"<{_symbol(entry, i) or 'N'}>" for i, d in enumerate(entry.dims or ()))
    which = f"dim {described}" if len(dims) == 1 else f"dims {described}"
    return f"pin input {entry.name!r} {which}: --input-shape {entry.name}={example} or give --input {entry.name}=FILE"


def fix_hint(reason_needs_constant: bool, tensors, producers: Mapping[str, onnx.NodeProto],
             inputs: Mapping[str, DeclaredInput], symbols: set[str] = frozenset()) -> str:
    """What would make the node convertible, or '' when no model input is to blame.

    ``reason_needs_constant``: the node needs the tensors' values (else: their static shapes). ``symbols``: the
    dim names the tensors are known to depend on (the pin hint then names just those dims)."""
    by_value, by_shape = input_dependencies(tensors, producers, inputs)
    hints = []
    if reason_needs_constant:
        hints += [f"bind input {n!r} with --constant-input {n}=VALUE (or FILE)" for n in by_value]
        pinnable = [inputs[n] for n in by_shape if inputs[n].dynamic_dims()]
    else:
        pinnable = [inputs[n] for n in by_value + by_shape if inputs[n].dynamic_dims()]
    hints += [_pin_hint(entry, symbols) for entry in pinnable]
    return "; ".join(hints)
