"""Subgraphs (the bodies of If, Loop and Scan) copied under a fresh prefix, so that one body can be converted
inline several times (once per unrolled iteration) into one flat graph.

Names a subgraph defines (its inputs, initializers and node outputs) are renamed ``<prefix>::<name>``; names it
reads from an enclosing scope are kept. Nested subgraphs are renamed where they read the renamed names (their own
names are renamed when they are inlined in turn).
"""
from __future__ import annotations

import onnx

SEPARATOR = "::"


def defined_names(graph: onnx.GraphProto) -> set[str]:
    """The tensor names a graph defines itself (not those it reads from an enclosing scope)."""
    names = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    names |= {o for node in graph.node for o in node.output}
    names.discard("")
    return names


def outer_references(graph: onnx.GraphProto) -> set[str]:
    """Names a graph (or any graph nested in it) reads without defining them: its enclosing scope's tensors."""
    defined = defined_names(graph)
    read = {i for node in graph.node for i in node.input} | {o.name for o in graph.output}
    for node in graph.node:
        for nested in subgraphs(node):
            read |= outer_references(nested)
    return {name for name in read - defined if name}


def subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    found = []
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            found.append(attribute.g)
        found.extend(attribute.graphs)
    return found


def _rename_references(graph: onnx.GraphProto, mapping: dict[str, str]) -> None:
    """Rename the uses of ``mapping``'s names in ``graph`` and its nested graphs (definitions of the same name in a
    nested graph would shadow the outer one: those are left alone)."""
    shadowed = defined_names(graph)
    mapping = {k: v for k, v in mapping.items() if k not in shadowed}
    if not mapping:
        return
    for node in graph.node:
        node.input[:] = [mapping.get(n, n) for n in node.input]
        for nested in subgraphs(node):
            _rename_references(nested, mapping)
    for output in graph.output:
        output.name = mapping.get(output.name, output.name)


def renamed_copy(graph: onnx.GraphProto, prefix: str) -> onnx.GraphProto:
    """A copy of ``graph`` whose own names are ``<prefix>::<name>`` (reads of enclosing names unchanged)."""
    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    mapping = {name: f"{prefix}{SEPARATOR}{name}" for name in defined_names(graph)}
    for info in list(copy.input) + list(copy.value_info) + list(copy.output):
        info.name = mapping.get(info.name, info.name)
    for tensor in copy.initializer:
        tensor.name = mapping[tensor.name]
    for node in copy.node:
        node.input[:] = [mapping.get(n, n) for n in node.input]
        node.output[:] = [mapping.get(n, n) for n in node.output]
        for nested in subgraphs(node):
            _rename_references(nested, mapping)
    return copy
