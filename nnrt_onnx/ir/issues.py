"""Conversion problems: collected for the whole model in one pass, reported together."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

# Reason codes of a conversion problem.
UNSUPPORTED_OP = "unsupported_op"
UNSUPPORTED_ATTRIBUTE = "unsupported_attribute"
NEEDS_CONSTANT = "needs_constant_input"
DYNAMIC_SHAPE = "dynamic_shape"
UNSUPPORTED_DTYPE = "unsupported_dtype"
INVALID_MODEL = "invalid_model"
TOO_LARGE = "too_large"  # a constant, an input file or a model beyond the memory budget (--max-constant-bytes)
OUT_OF_MEMORY = "out_of_memory"  # the machine ran out of memory converting a node (the budget did not foresee it)
INTERNAL_ERROR = "internal_error"  # a converter failed unexpectedly on this node: a bug, reported with where it was


@dataclass(frozen=True)
class Issue:
    node: str
    op_type: str
    opset: int
    reason: str
    message: str
    tensor: str | None = None

    def __str__(self) -> str:
        return f"{self.node} ({self.op_type}, opset {self.opset}): [{self.reason}] {self.message}"


class ConversionIssue(Exception):
    """Raised by a handler for one node; the importer records it and goes on with the next node."""

    def __init__(self, reason: str, message: str, tensor: str | None = None):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.tensor = tensor  # the tensor the problem is about, when there is one


class ConversionError(Exception):
    """Every problem of a model, raised once the whole model has been looked at."""

    def __init__(self, issues: list[Issue]):
        self.issues = issues
        super().__init__(self.text())

    def text(self) -> str:
        lines = [f"{len(self.issues)} problem(s) converting the model:"]
        lines += [f"  {issue}" for issue in self.issues]
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps([asdict(i) for i in self.issues], indent=1)
