"""The memory budget of one import: every constant the conversion computes is counted before it is materialised.

A model file of a few bytes can ask for gigabytes (``ConstantOfShape([2**29])``, ``Range(0, 2**28)``, a Tile or an
Expand of a constant, a Resize to a huge size). So every path that *computes* a constant at import -- folding a node
whose inputs are constants (``ir.fold.fold_within_budget`` for NNRt kernels, ``onnx_import.limits`` for the ONNX reference
evaluator), and converters that build arrays (ConstantOfShape, Range, index tables, masks ...) -- asks the budget
first, from the shapes, before anything is allocated:

* ``ConstantBudget.admit(nbytes)``: True (and counted) when it fits; a fold that does not fit is simply not done
  (the op stays an operation computed at run time);
* ``ConstantBudget.require(nbytes, what)``: raises ConversionIssue(``too_large``) when it does not fit, for
  converters that have no operation to fall back on.

The budget is cumulative over one import (so a chain of constants each under the limit cannot add up to a bomb) and
counts computed constants only: initializers are the user's weights, already in memory when the import starts.
One budget is active per import (``active``, a context variable, so threads import independently); its limit is
``max_constant_bytes`` (``nnrt-onnx ... --max-constant-bytes``), default :data:`DEFAULT_MAX_CONSTANT_BYTES`.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Sequence

import numpy as np

from .issues import INVALID_MODEL, TOO_LARGE, ConversionIssue

__all__ = ["DEFAULT_MAX_CONSTANT_BYTES", "ConstantBudget", "active", "active_budget", "current",
           "format_bytes", "nbytes", "resolve_limit"]

DEFAULT_MAX_CONSTANT_BYTES = 256 * 1024 * 1024
# Time, bounded the same way: NNRt operations one ONNX node may emit (an RNN unrolled over 2**30 steps would take
# hours), and one import in all.
MAX_OPERATIONS_PER_NODE = 100_000
MAX_OPERATIONS = 2_000_000


def format_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def resolve_limit(limit: int | None) -> int:
    """``limit`` checked (a non-negative int), or the default for None."""
    if limit is None:
        return DEFAULT_MAX_CONSTANT_BYTES
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0:
        raise ValueError(f"max_constant_bytes must be a non-negative integer, got {limit!r}")
    return int(limit)


def nbytes(shape: Sequence[int], dtype) -> int:
    """Bytes of an array of ``shape`` (exact Python integers: no overflow); ValueError for a negative dim."""
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise ValueError(f"shape {dims[:8]} has a negative dim")
    return math.prod(dims) * np.dtype(dtype).itemsize


class ConstantBudget:
    """Bytes of computed constants one import may still materialise."""

    def __init__(self, limit: int | None = None):
        self.limit = resolve_limit(limit)
        self.used = 0
        self.operations = 0
        self.per_node: dict[str, int] = {}

    def count_operation(self, origin: str) -> None:
        """One more NNRt operation emitted for the ONNX node ``origin``; too_large past the caps."""
        self.operations += 1
        count = self.per_node[origin] = self.per_node.get(origin, 0) + 1
        if count > MAX_OPERATIONS_PER_NODE:
            raise ConversionIssue(TOO_LARGE, f"the node would become more than {MAX_OPERATIONS_PER_NODE} NNRt "
                                             f"operations (a recurrence unrolled over a huge sequence?)")
        if self.operations > MAX_OPERATIONS:
            raise ConversionIssue(TOO_LARGE, f"the model would become more than {MAX_OPERATIONS} NNRt operations")

    @property
    def remaining(self) -> int:
        return max(self.limit - self.used, 0)

    def admit(self, size: int) -> bool:
        """Count ``size`` bytes if they fit; whether they did."""
        if size > self.remaining:
            return False
        self.used += size
        return True

    def require(self, size: int, what: str) -> None:
        """Count ``size`` bytes, or raise ConversionIssue(too_large) naming ``what``."""
        if not self.admit(size):
            raise ConversionIssue(TOO_LARGE, f"{what} would take {format_bytes(size)}; the import's budget for "
                                             f"computed constants has {format_bytes(self.remaining)} of "
                                             f"{format_bytes(self.limit)} left (raise it with --max-constant-bytes)")

    def require_shape(self, shape: Sequence[int], dtype, what: str) -> None:
        """``require`` for an array of ``shape``; a negative dim is an invalid model."""
        try:
            size = nbytes(shape, dtype)
        except ValueError:
            raise ConversionIssue(INVALID_MODEL, f"{what}: shape {[int(d) for d in shape][:8]} has a negative "
                                                 f"dim") from None
        self.require(size, what)


_current: ContextVar[ConstantBudget | None] = ContextVar("nnrt_onnx_constant_budget", default=None)


def active_budget() -> ConstantBudget | None:
    """The budget of the import in progress, None outside an import."""
    return _current.get()


def current() -> ConstantBudget:
    """The budget of the import in progress; outside an import (a converter called directly) a fresh default one,
    not kept: each check then stands alone."""
    budget = _current.get()
    return budget if budget is not None else ConstantBudget()


@contextmanager
def active(limit: int | None = None) -> Iterator[ConstantBudget]:
    """Make a fresh budget of ``limit`` bytes the current one for the duration of an import."""
    budget = ConstantBudget(limit)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
