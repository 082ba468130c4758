"""Arithmetic written once, evaluated two ways: on numpy arrays at conversion (:data:`NUMPY`) or as NNRt operations
the converted model runs (:class:`GraphArith`), for a formula a converter needs both ways -- over a static axis its
result is a constant, over a dynamic one it is computed at run time (Resize's source coordinates).

A formula takes the evaluator ``k`` and values: numpy arrays / scalars of one float dtype, or :class:`Symbolic`
tensors. ``+ - * /`` work on both (a Python number meets the other operand's dtype), the rest goes through ``k``
(``floor``, ``equal``, ``greater``, ``greater_equal``, ``where``, ``minimum``, ``maximum``, ``cast``). Each
operation is one rounding in the operands' dtype, in the order written, so both evaluations give the same bits:
the kernels compute float32 arithmetic in float32, as numpy does.
"""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ..context import NodeContext
from ..generic import bshape
from ._common import _cast


class _Numpy:
    """The evaluator at conversion: numpy, warnings of a division by zero silenced (a ``where`` picks around it)."""

    at_conversion = True

    @staticmethod
    def floor(x):
        return np.floor(x)

    @staticmethod
    def equal(a, b):
        return np.equal(a, b)

    @staticmethod
    def greater(a, b):
        return np.greater(a, b)

    @staticmethod
    def greater_equal(a, b):
        return np.greater_equal(a, b)

    @staticmethod
    def where(condition, a, b):
        return np.where(condition, a, b)

    @staticmethod
    def minimum(a, b):
        return np.minimum(a, b)

    @staticmethod
    def maximum(a, b):
        return np.maximum(a, b)

    @staticmethod
    def cast(x, dtype):
        return np.asarray(x).astype(dtype)


NUMPY = _Numpy()


class Symbolic:
    """A tensor of the converted model inside a formula of :class:`GraphArith`."""

    __slots__ = ("k", "name")

    def __init__(self, k: "GraphArith", name: str):
        self.k = k
        self.name = name

    @property
    def dtype(self) -> np.dtype:
        return self.k.ctx.value(self.name).dtype

    def __add__(self, other):
        return self.k.binary(OP.OH_NN_OPS_ADD, self, other)

    def __radd__(self, other):
        return self.k.binary(OP.OH_NN_OPS_ADD, other, self)

    def __sub__(self, other):
        return self.k.binary(OP.OH_NN_OPS_SUB, self, other)

    def __rsub__(self, other):
        return self.k.binary(OP.OH_NN_OPS_SUB, other, self)

    def __mul__(self, other):
        return self.k.binary(OP.OH_NN_OPS_MUL, self, other)

    def __rmul__(self, other):
        return self.k.binary(OP.OH_NN_OPS_MUL, other, self)

    def __truediv__(self, other):
        return self.k.binary(OP.OH_NN_OPS_DIV, self, other)

    def __rtruediv__(self, other):
        return self.k.binary(OP.OH_NN_OPS_DIV, other, self)


class GraphArith:
    """The evaluator at run time: each operation an NNRt operation of the node being converted (folded where its
    operands are constants)."""

    at_conversion = False

    def __init__(self, ctx: NodeContext, hint: str):
        self.ctx = ctx
        self.hint = hint

    def tensor(self, name: str) -> Symbolic:
        return Symbolic(self, name)

    def _name(self, value, like: Symbolic | None) -> str:
        if isinstance(value, Symbolic):
            return value.name
        dtype = like.dtype if like is not None and not isinstance(value, np.ndarray | np.generic) else None
        return self.ctx.constant(np.asarray(value, dtype), f"{self.hint}.const")

    def _emit(self, op: OP, operands, dtype=None) -> Symbolic:
        like = next(o for o in operands if isinstance(o, Symbolic))
        names = [self._name(o, like) for o in operands]
        shapes = [self.ctx.value(n).shape for n in names]
        dtype = like.dtype if dtype is None else dtype
        out = self.ctx.emit_to(op, names, dtype, bshape(*shapes), f"{self.hint}.{op.name[10:].lower()}")
        return Symbolic(self, out)

    def binary(self, op: OP, a, b) -> Symbolic:
        return self._emit(op, [a, b])

    def floor(self, x: Symbolic) -> Symbolic:
        return self._emit(OP.OH_NN_OPS_FLOOR, [x])

    def equal(self, a, b) -> Symbolic:
        return self._emit(OP.OH_NN_OPS_EQUAL, [a, b], np.bool_)

    def greater(self, a, b) -> Symbolic:
        return self._emit(OP.OH_NN_OPS_GREATER, [a, b], np.bool_)

    def greater_equal(self, a, b) -> Symbolic:
        return self._emit(OP.OH_NN_OPS_GREATER_EQUAL, [a, b], np.bool_)

    def where(self, condition: Symbolic, a, b) -> Symbolic:
        like = a if isinstance(a, Symbolic) else b
        names = [condition.name, self._name(a, like), self._name(b, like)]
        shape = bshape(*(self.ctx.value(n).shape for n in names))
        return Symbolic(self, self.ctx.emit_to(OP.OH_NN_OPS_WHERE, names, like.dtype, shape, f"{self.hint}.where"))

    def minimum(self, a, b) -> Symbolic:
        return self._emit(OP.OH_NN_OPS_MINIMUM, [a, b])

    def maximum(self, a, b) -> Symbolic:
        return self._emit(OP.OH_NN_OPS_MAXIMUM, [a, b])

    def cast(self, x, dtype):
        if not isinstance(x, Symbolic):  # a constant operand
            return np.asarray(x).astype(dtype)
        return Symbolic(self, _cast(self.ctx, x.name, dtype, f"{self.hint}.{np.dtype(dtype).name}"))
