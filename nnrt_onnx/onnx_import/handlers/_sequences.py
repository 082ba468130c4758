"""Per-entry sequence lengths (the ``sequence_lens`` input of RNN, GRU and LSTM) as tensors the converted model
computes: which steps of each batch entry lie inside its sequence, each entry's sequence reversed within its own
length, and each entry's last step. Over a constant ``sequence_lens`` they fold into constants.

onnxruntime's reading, which the importer follows: the outputs past an entry's length are 0, its final states are
those of its last step (a reverse pass starts at that step), and an entry of length 0 has 0 everywhere, final
states included (not its initial ones).
"""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...ir.issues import INVALID_MODEL, ConversionIssue
from ..context import NodeContext
from ._common import _binary, _cast, _compare, _reshape
from ._dims import axis_iota, dims_tensor, reshape_to

I64 = np.int64


def sequence_lengths(ctx: NodeContext, position: int, steps: int, batch: int) -> "SequenceLengths | None":
    """The ``sequence_lens`` input at ``position`` for ``steps`` steps (-1: known at run time) of ``batch``
    entries; None when absent, or a constant that is the whole sequence for every entry."""
    if not ctx.has_input(position):
        return None
    name = ctx.input(position)
    value = ctx.value(name)
    if value.dtype.kind not in "iu":
        raise ConversionIssue(INVALID_MODEL, f"sequence_lens has dtype {value.dtype} (int32)", tensor=name)
    if value.data is not None:
        lens = np.asarray(value.data).astype(I64).reshape(-1)
        if (batch >= 0 and lens.size != batch) or np.any(lens < 0) or (steps >= 0 and np.any(lens > steps)):
            raise ConversionIssue(INVALID_MODEL, f"sequence_lens {lens.tolist()} must hold {batch} values in "
                                                 f"[0, {steps}]")
        if steps >= 0 and np.all(lens == steps):
            return None
    elif value.shape is not None and (len(value.shape) != 1 or batch >= 0 and value.shape[0] not in (-1, batch)):
        raise ConversionIssue(INVALID_MODEL, f"sequence_lens has shape {list(value.shape)}, expected [{batch}]")
    return SequenceLengths(ctx, name)


class SequenceLengths:
    """The lengths of one node's sequences and what its conversion derives from them."""

    def __init__(self, ctx: NodeContext, name: str):
        self.ctx = ctx
        self.hint = f"{ctx.name}.lens"
        self.lengths = _reshape(ctx, _cast(ctx, name, I64, f"{self.hint}.i64"), (-1,))  # [batch]
        self.column = _reshape(ctx, self.lengths, (-1, 1))  # [batch, 1]
        data = ctx.value(self.lengths).data
        self.constant = None if data is None else np.asarray(data)

    @property
    def may_be_empty(self) -> bool:
        """Whether an entry may have length 0 (at run time: yes)."""
        return self.constant is None or bool(np.any(self.constant == 0))

    def step_mask(self, t: int) -> str | None:
        """[batch, 1] bool: whether step ``t`` lies inside each entry's sequence (None: inside all of them)."""
        if self.constant is not None and np.all(self.constant > t):
            return None
        return _compare(self.ctx, OP.OH_NN_OPS_LESS, self.ctx.constant(np.asarray(t, I64), f"{self.hint}.t{t}"),
                        self.column, f"{self.hint}.inside{t}")

    def nonempty(self) -> str:
        """[batch, 1] bool: the entries of length > 0."""
        return _compare(self.ctx, OP.OH_NN_OPS_GREATER, self.column, self.ctx.constant(np.asarray(0, I64)),
                        f"{self.hint}.nonempty")

    def inside(self, x: str) -> str:
        """[steps, batch] bool over the steps of ``x`` ([steps, batch, ...]): whether each step lies inside each
        entry's sequence."""
        steps = axis_iota(self.ctx, x, 0, 2)  # [steps, 1]
        return _compare(self.ctx, OP.OH_NN_OPS_LESS, steps, _reshape(self.ctx, self.lengths, (1, -1)),
                        f"{self.hint}.inside")

    def _entries(self, like: str) -> str:
        """[steps, batch] int64: each entry's index, over the steps and batch of ``like`` ([steps, batch, ...])."""
        ctx = self.ctx
        entries = axis_iota(ctx, like, 1, 2)  # [1, batch]
        zeros = _binary(ctx, OP.OH_NN_OPS_MUL, axis_iota(ctx, like, 0, 2), ctx.constant(np.asarray(0, I64)),
                        f"{self.hint}.zero_steps")  # [steps, 1]
        return _binary(ctx, OP.OH_NN_OPS_ADD, zeros, entries, f"{self.hint}.entries")

    def reversed_within(self, x: str) -> str:
        """``x`` ([steps, batch, ...]) with each entry's steps 0..len-1 in reverse order, the steps past its length
        where they are (GATHER_ND at (len - 1 - t or t, entry))."""
        ctx = self.ctx
        value = ctx.value(x)
        steps = axis_iota(ctx, x, 0, 2)
        back = _binary(ctx, OP.OH_NN_OPS_SUB, _binary(ctx, OP.OH_NN_OPS_SUB, _reshape(ctx, self.lengths, (1, -1)),
                                                       ctx.constant(np.asarray(1, I64)), f"{self.hint}.last"),
                       steps, f"{self.hint}.back")
        source = ctx.emit_to(OP.OH_NN_OPS_WHERE, [self.inside(x), back, steps], I64, ctx.value(back).shape,
                             f"{self.hint}.source")
        at = ctx.emit_to(OP.OH_NN_OPS_STACK, [source, self._entries(x)], I64, (*ctx.value(source).shape, 2),
                         f"{self.hint}.at", {"OH_NN_STACK_AXIS": -1})
        return ctx.emit_to(OP.OH_NN_OPS_GATHER_ND, [x, at], value.dtype, value.shape, f"{x}.reversed_within")

    def last_steps(self, y: str) -> str:
        """[batch, ...]: each entry's value at its last step in ``y`` ([steps, batch, ...]); 0 for an empty one."""
        ctx = self.ctx
        value = ctx.value(y)
        last = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, _binary(ctx, OP.OH_NN_OPS_SUB, self.lengths,
                                                          ctx.constant(np.asarray(1, I64)), f"{self.hint}.last_step"),
                       ctx.constant(np.asarray(0, I64)), f"{self.hint}.last_step_at_least_0")
        entries = axis_iota(ctx, y, 1, 1, position=0)  # [batch]
        at = ctx.emit_to(OP.OH_NN_OPS_STACK, [last, entries], I64, (value.shape[1], 2), f"{self.hint}.last_at",
                         {"OH_NN_STACK_AXIS": 1})
        picked = ctx.emit_to(OP.OH_NN_OPS_GATHER_ND, [y, at], value.dtype, value.shape[1:], f"{y}.last")
        return self.zero_where_empty(picked)

    def zero_where_empty(self, state: str) -> str:
        """``state`` ([batch, ...]) with the entries of length 0 zeroed (onnxruntime's final states there)."""
        if not self.may_be_empty:
            return state
        ctx = self.ctx
        value = ctx.value(state)
        keep = self.nonempty()
        if len(value.shape) != 2:
            keep = reshape_to(ctx, keep, [dims_tensor(ctx, keep, [0]), *[1] * (len(value.shape) - 1)],
                              f"{self.hint}.nonempty_nd")
        return ctx.emit_to(OP.OH_NN_OPS_WHERE, [keep, state, ctx.constant(np.asarray(0, value.dtype))], value.dtype,
                           value.shape, f"{state}.kept")

    def zero_outside(self, y: str) -> str:
        """``y`` ([steps, batch, ...]) with the steps past each entry's length zeroed."""
        ctx = self.ctx
        value = ctx.value(y)
        inside = self.inside(y)
        if len(value.shape) > 2:
            inside = reshape_to(ctx, inside, [dims_tensor(ctx, inside, [0, 1]), *[1] * (len(value.shape) - 2)],
                                f"{self.hint}.inside_nd")
        return ctx.emit_to(OP.OH_NN_OPS_WHERE, [inside, y, ctx.constant(np.asarray(0, value.dtype))], value.dtype,
                           value.shape, f"{y}.inside")
