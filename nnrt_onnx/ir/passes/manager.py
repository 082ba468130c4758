"""The pass manager: a graph pass is a named function editing a :class:`~nnrt_onnx.ir.graph.Graph` in place
(:class:`Pass`); running it gives a :class:`PassResult` -- the pass's name, whether it modified the graph, the node
count before and after, and the counts of what it did (the pattern of onnx-ir's and onnxscript's pass
infrastructure). :func:`run_passes` runs a list of passes in order and returns their results. Whether a pass modified
the graph is observed (its nodes, values, inputs, outputs, aliases and provenance before and after), not declared, so
the passes themselves stay plain functions."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..graph import Graph


@dataclass(frozen=True)
class PassResult:
    """What one run of a pass did."""

    name: str
    modified: bool
    nodes_before: int
    nodes_after: int
    counts: dict[str, int] = field(default_factory=dict)  # what the pass reports it did, e.g. {"fused_activations": 3}

    def summary(self) -> dict[str, Any]:
        """The result as plain data (for ImportResult.stats and ``--json``)."""
        return {"name": self.name, "modified": self.modified, "nodes_before": self.nodes_before,
                "nodes_after": self.nodes_after, **self.counts}


@dataclass(frozen=True)
class Pass:
    """A graph pass: ``function(graph)`` edits the graph in place and returns None, or -- when ``count`` names it --
    the number of things it did (reported as ``counts[count]``)."""

    name: str
    function: Callable[[Graph], Any]
    count: str | None = None

    def __call__(self, graph: Graph) -> PassResult:
        before = _Snapshot(graph)
        returned = self.function(graph)
        counts = {} if self.count is None else {self.count: int(returned or 0)}
        after = _Snapshot(graph)
        return PassResult(self.name, after.key != before.key, len(before.nodes), len(after.nodes), counts)


def run_passes(graph: Graph, passes: Sequence[Pass]) -> list[PassResult]:
    """Run ``passes`` on ``graph`` in order; one result per pass."""
    return [graph_pass(graph) for graph_pass in passes]


class _Snapshot:
    """The graph's structure: nodes, values and parameter arrays by identity (kept alive here, so that no identity is
    reused while the snapshot exists), names, shapes and the graph's bookkeeping by value."""

    def __init__(self, graph: Graph):
        self.nodes = list(graph.nodes)
        self.values = list(graph.values.items())
        self.alive = [a for n in self.nodes for a in n.params.values()] + [(v.data, v.quant) for _, v in self.values]
        self.key = (
            tuple((id(n), n.op, tuple(n.inputs), tuple(n.outputs), n.origin, n.layout,
                   tuple((k, id(a)) for k, a in n.params.items())) for n in self.nodes),
            tuple((name, id(v), v.dtype, v.shape, id(v.data), id(v.quant)) for name, v in self.values),
            tuple(graph.inputs), tuple(graph.outputs), tuple(graph.aliases.items()), tuple(graph.provenance.items()),
        )


__all__ = ["Pass", "PassResult", "run_passes"]
