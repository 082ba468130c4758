"""The pass manager on IR graphs: :mod:`nnrt_onnx.passes`' ``Pass``, ``PassResult`` and ``run_passes`` with the
graph's structure (:func:`graph_structure`) as the default observation of whether a pass modified it. A graph pass
is a named function editing a :class:`~nnrt_onnx.ir.graph.Graph` in place."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...passes import Pass as _GenericPass
from ...passes import PassResult, Structure
from ...passes import run_passes as _run_passes
from ..graph import Graph


def graph_structure(graph: Graph):
    """The graph's structure: nodes, values and parameter arrays by identity (kept alive with the key, so that no
    identity is reused while it is compared), names, shapes and the graph's bookkeeping by value."""
    nodes = list(graph.nodes)
    values = list(graph.values.items())
    alive = (nodes, values, [a for n in nodes for a in n.params.values()] + [(v.data, v.quant) for _, v in values])
    key = (
        tuple((id(n), n.op, tuple(n.inputs), tuple(n.outputs), n.origin, n.layout,
               tuple((k, id(a)) for k, a in n.params.items())) for n in nodes),
        tuple((name, id(v), v.dtype, v.shape, id(v.data), id(v.quant)) for name, v in values),
        tuple(graph.inputs), tuple(graph.outputs), tuple(graph.aliases.items()), tuple(graph.provenance.items()),
    )
    return key, nodes, alive


@dataclass(frozen=True)
class Pass(_GenericPass):
    """A graph pass: :class:`nnrt_onnx.passes.Pass` observing :func:`graph_structure`."""

    structure: Structure | None = graph_structure


def run_passes(graph: Graph, passes: Sequence[_GenericPass]) -> list[PassResult]:
    """Run ``passes`` on ``graph`` in order; one result per pass."""
    return _run_passes(graph, passes, graph_structure)


__all__ = ["Pass", "PassResult", "graph_structure", "run_passes"]
