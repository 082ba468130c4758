"""Permutation helpers every layout pass shares: the permutation of a TRANSPOSE node (``perm_of``), the inverse of a
permutation, a shape permuted, and building a new TRANSPOSE node and placing it after another node. (Here rather than
in layout.py so that layout.py and reshape_algebra.py, which use each other, both stand on it without an import
cycle.)"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ..graph import Graph, Node


def perm_of(graph: Graph, node: Node) -> tuple[int, ...] | None:
    if node.op != OP.OH_NN_OPS_TRANSPOSE:
        return None
    perm = graph.values[node.inputs[1]].data
    return None if perm is None else tuple(int(p) for p in perm.reshape(-1))


def transposes_and_users(graph: Graph, consumers: dict[str, list[Node]]):
    """(node, permutation, consumers of its output) for each TRANSPOSE of a snapshot of the graph's nodes (the
    caller may edit the graph meanwhile)."""
    for node in list(graph.nodes):
        perm = perm_of(graph, node)
        if perm is not None:
            yield node, perm, consumers.get(node.outputs[0], [])


def inverse(perm: Sequence[int]) -> tuple[int, ...]:
    result = [0] * len(perm)
    for i, p in enumerate(perm):
        result[p] = i
    return tuple(result)


def _new_transpose(graph: Graph, source: str, perm: Sequence[int], output: str, origin: str) -> Node:
    perm_name = graph.constant(np.asarray(perm, np.int64), f"{output}.perm")
    return Node(OP.OH_NN_OPS_TRANSPOSE, [source, perm_name], [output], {}, origin)


def _insert_after(graph: Graph, anchor: Node, new: Node) -> None:
    graph.nodes.insert(graph.nodes.index(anchor) + 1, new)
