"""Fusion pass: the exact GELU as exported (BERT) -- ``y = (x * (erf(x / c1) + c2)) * c3`` as DIV, ERF, ADD, MUL, MUL
steps on float32 with scalar constants, each intermediate read only by the next step -- becomes one step
(``accel.elementwise.erf_gelu``: one compiled loop, or the same steps' operations in order): bit-identical, four
steps and passes fewer."""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType
from ...kernels import registered_kernel
from ...plan import merged, readers_and_producers
from ..elementwise import erf_gelu

_OP = OH_NN_OperationType
FLOAT32 = np.dtype(np.float32)
_CHAIN = (_OP.OH_NN_OPS_ERF, _OP.OH_NN_OPS_ADD, _OP.OH_NN_OPS_MUL, _OP.OH_NN_OPS_MUL)


def _scalar_constant(plan, index: int):
    value = plan.constants.get(index)
    if value is None or value.dtype != FLOAT32 or value.size != 1 or value.ndim > 1:
        return None
    return np.float32(value.reshape(()))


def fuse_erf_gelu(plan) -> int:
    """The pass (module doc) on ``plan.steps``; returns how many GELUs it fused."""
    steps, outputs = plan.steps, set(plan.outputs)
    readers, _ = readers_and_producers(steps)
    consumer: dict[int, int] = {}
    for position, step in enumerate(steps):
        for t in step.inputs:
            consumer.setdefault(t, position)
    absorbed: set[int] = set()
    fused: dict[int, object] = {}
    for position, div in enumerate(steps):
        if div.op != _OP.OH_NN_OPS_DIV or div.ufunc is None or len(div.inputs) != 2 or div.fuse:
            continue
        x, divisor = div.inputs[0], _scalar_constant(plan, div.inputs[1])
        shape = plan.static[x]
        if divisor is None or shape is None or plan.compute_dtype[x] != FLOAT32:
            continue
        chain, tensor, scalars = [position], div.outputs[0], []
        for op in _CHAIN:
            if tensor in outputs or readers.get(tensor) != 1 or plan.static[tensor] != shape:
                break
            nxt = steps[consumer[tensor]]
            if nxt.op != op or not nxt.plain_candidate() or len(nxt.outputs) != 1:
                break
            others = [t for t in nxt.inputs if t != tensor]
            if op == _OP.OH_NN_OPS_ERF:
                if len(nxt.inputs) != 1 or nxt.fn is not registered_kernel(op):
                    break
            elif len(nxt.inputs) != 2 or len(others) != 1 or nxt.ufunc is None:
                break
            elif len(chain) == 3:  # MUL by x itself
                if others[0] != x:
                    break
            else:
                value = _scalar_constant(plan, others[0])
                if value is None:
                    break
                scalars.append(value)
            chain.append(consumer[tensor])
            tensor = nxt.outputs[0]
        if len(chain) != 5 or plan.static[tensor] != shape:
            continue
        group = [steps[i] for i in chain]
        step = merged(div, erf_gelu, {"divisor": divisor, "addend": scalars[0], "factor": scalars[1]}, 0, (x,),
                      group, 0, tuple(t for s in group for t in s.release))
        step.label = div.label + " (+ ERF, ADD, MUL, MUL: GELU)"
        step.accepts_out = False
        fused[position] = step
        absorbed.update(chain[1:])
    if fused:
        plan.steps[:] = [fused.get(position, step) for position, step in enumerate(steps) if position not in absorbed]
    return len(fused)


__all__ = ["fuse_erf_gelu"]
