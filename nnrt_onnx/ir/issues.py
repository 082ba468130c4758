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
    """One problem: the ONNX node (name, op type, domain, opset) it is about, a reason code and a message.

    ``depends_on`` names the node whose failed conversion this one follows from (its input comes from there): such
    a problem is a consequence, not a root cause. ``op_type`` is ``input`` / ``initializer`` for problems with a
    model input or an initializer (``node`` is then its name).
    """

    node: str
    op_type: str
    opset: int
    reason: str
    message: str
    tensor: str | None = None  # the tensor the problem is about, when there is one
    domain: str = ""
    depends_on: str | None = None

    @property
    def is_root(self) -> bool:
        return self.depends_on is None

    def __str__(self) -> str:
        op = f"{self.domain}.{self.op_type}" if self.domain not in ("", "ai.onnx") else self.op_type
        follows = f"depends on {self.depends_on!r}, which could not be converted: " if self.depends_on else ""
        return f"{self.node} ({op}, opset {self.opset}): [{self.reason}] {follows}{self.message}"


class ConversionIssue(Exception):
    """Raised by a handler for one node; the importer records it and goes on with the next node."""

    def __init__(self, reason: str, message: str, tensor: str | None = None, axes: tuple[int, ...] | None = None):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.tensor = tensor  # the tensor the problem is about, when there is one
        self.axes = axes  # the dims of that tensor a dynamic_shape problem is about (None: all its dynamic ones)


class ConversionError(Exception):
    """Every problem of a model, raised once the whole model has been looked at."""

    def __init__(self, issues: list[Issue]):
        self.issues = issues
        super().__init__(self.text())

    def text(self) -> str:
        """Root causes first, then the problems that follow from them."""
        roots = [i for i in self.issues if i.is_root]
        following = [i for i in self.issues if not i.is_root]
        lines = [f"{len(self.issues)} problem(s) converting the model:"]
        lines += [f"  {issue}" for issue in roots]
        if following and roots:
            lines.append(f"  and {len(following)} that follow from those:")
        lines += [f"  {issue}" for issue in following]
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps([asdict(i) for i in self.issues], indent=1)
