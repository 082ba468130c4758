"""The pass manager, for any structure a pass rewrites (the IR graph of the converters, the native execution plan):
a pass is a named function editing its target in place (:class:`Pass`); running it gives a :class:`PassResult` --
the pass's name, whether it modified the target, the item count (nodes, steps) before and after, and the counts of
what it did (the pattern of onnx-ir's and onnxscript's pass infrastructure). :func:`run_passes` runs a list of
passes in order and returns their results.

Whether a pass modified its target is observed, not declared: a *structure* function, given by the target's owner
(``ir.passes.manager`` for graphs, ``plan.plan_structure`` for execution plans), returns ``(key, items, alive)``
-- a hashable key of the structure (items by identity), the items counted, and the objects to keep alive while the
key is compared (so that no identity is reused) -- and the pass modified the target when the keys before and after
differ. The passes themselves stay plain functions."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

Structure = Callable[[Any], tuple[Any, Sequence[Any], Any]]


@dataclass(frozen=True)
class PassResult:
    """What one run of a pass did."""

    name: str
    modified: bool
    nodes_before: int  # items of the target: a graph's nodes, a plan's steps
    nodes_after: int
    counts: dict[str, int] = field(default_factory=dict)  # what the pass reports it did, e.g. {"fused_activations": 3}

    def summary(self) -> dict[str, Any]:
        """The result as plain data (for ImportResult.stats and ``--json``)."""
        return {"name": self.name, "modified": self.modified, "nodes_before": self.nodes_before,
                "nodes_after": self.nodes_after, **self.counts}


@dataclass(frozen=True)
class Pass:
    """A pass: ``function(target)`` edits the target in place and returns None, or -- when ``count`` names it --
    the number of things it did (reported as ``counts[count]``). ``structure``: see the module doc (None: the
    caller of :func:`run_passes` gives it)."""

    name: str
    function: Callable[[Any], Any]
    count: str | None = None
    structure: Structure | None = None

    def __call__(self, target, structure: Structure | None = None) -> PassResult:
        structure = self.structure or structure
        if structure is None:
            raise TypeError(f"pass {self.name}: no structure function for its target")
        key_before, items_before, alive = structure(target)
        returned = self.function(target)
        counts = {} if self.count is None else {self.count: int(returned or 0)}
        key_after, items_after, _ = structure(target)
        del alive
        return PassResult(self.name, key_after != key_before, len(items_before), len(items_after), counts)


def run_passes(target, passes: Sequence[Pass], structure: Structure | None = None) -> list[PassResult]:
    """Run ``passes`` on ``target`` in order; one result per pass. ``structure``: the target's structure function
    for passes that do not name their own."""
    return [one(target, structure) for one in passes]


__all__ = ["Pass", "PassResult", "Structure", "run_passes"]
