"""Memory planning of the native execution plan: arena slots for the outputs of kernels that accept ``out=``.

At compile time, every step whose kernel accepts ``out`` and whose first output has a static shape, equal to what
the kernel's shape rule (``kernels.infer_output_shapes``) gives for its static inputs, no quantization, and is
not a model output, gets an arena slot: an array of that shape and compute dtype. Slots are reused by tensor
lifetime (a slot is free again after the step that last reads its tensor), exact shape and dtype matching. An
arena (one array per slot) is taken per run from the prepared model's pool (concurrent runs never share one). A
concatenation assembled in place (``accel.fusions.concat_assembly``) takes its slot at its first producer, whose
output, like its
other producers', is a slice of it (``step.out_view``).

Views can outlive their tensor (a reshape view of a slot read later, a captured intermediate, an output the
caller still holds): before a kernel writes into a slot, the engine checks that nothing else references the
slot's array (:func:`slot_is_free`, by reference count) and otherwise gives that slot a new array.
"""
from __future__ import annotations

import sys

import numpy as np

from ..errors import NNRtError


def _references(buffer: np.ndarray) -> int:
    return sys.getrefcount(buffer)


def _probe_free_refs() -> int:
    arena = [np.empty(1)]
    buffer = arena[0]
    return _references(buffer)


# references of an unshared slot array seen from _references: the arena list, the caller's local, the calls'
_FREE_REFS = _probe_free_refs()


def slot_is_free(buffer: np.ndarray) -> bool:
    """Nothing but the arena and the caller's one local name refers to ``buffer`` (call as
    ``slot_is_free(local)`` with ``local = arena[slot]``)."""
    return _references(buffer) <= _FREE_REFS + 1  # + 1: this function's own parameter


def plan_arena(prepared) -> list[tuple[tuple[int, ...], np.dtype]]:
    """Assign ``step.out_slot`` for the eligible steps of ``prepared`` (a NativePreparedModel); returns the
    (shape, dtype) of each slot."""
    from ..kernels import infer_output_shapes

    steps = prepared.steps
    outputs = set(prepared.outputs)
    last_use: dict[int, int] = {}
    for position, step in enumerate(steps):
        for t in step.inputs:
            last_use[t] = position
    slots: list[tuple[tuple[int, ...], np.dtype]] = []
    free: dict[tuple, list[int]] = {}
    holder: dict[int, int] = {}  # tensor -> slot
    for position, step in enumerate(steps):
        if step.out_view is not None:  # (accel's assembly) a slice of a concatenation's array: taken at its first
            concat, index = step.out_view  # producer, held until the concatenation's last reader
            target = concat.outputs[0]
            first = target not in holder
            if first:
                key = (prepared.static[target], prepared.compute_dtype[target])
                holder[target] = free[key].pop() if free.get(key) else len(slots)
                if holder[target] == len(slots):
                    slots.append(key)
            step.out_view = (holder[target], index, first)
            if step is concat and target not in last_use:  # never read: free right away
                free.setdefault(slots[holder[target]], []).append(holder.pop(target))
        elif step.accepts_out and step.view_shape is None and step.quantize_outputs is None \
                and step.dequantize_inputs is None and step.outputs and step.outputs[0] not in outputs:
            target = step.outputs[0]
            shape, dtype = prepared.static[target], prepared.compute_dtype[target]
            if shape is not None and dtype is not None and _rule_agrees(prepared, step, shape, infer_output_shapes):
                key = (shape, dtype)
                if free.get(key):
                    slot = free[key].pop()
                else:
                    slot = len(slots)
                    slots.append((shape, dtype))
                step.out_slot = slot
                holder[target] = slot
                if target not in last_use:  # never read: free right away
                    free.setdefault(key, []).append(holder.pop(target))
        for t in set(step.inputs):
            if last_use.get(t) == position and t in holder:
                slot = holder.pop(t)
                free.setdefault(slots[slot], []).append(slot)
    return slots


def _rule_agrees(prepared, step, shape, infer_output_shapes) -> bool:
    step = step.kernel_step()  # a fused step's output: its own operation's (fusions keep that shape)
    inputs = step.inputs
    if any(prepared.static[i] is None for i in inputs):
        return False
    values = [prepared._template[i] for i in inputs]
    arguments = {k: v for k, v in step.kwargs.items() if k != "ctx"}
    try:
        rule = infer_output_shapes(step.op, [prepared.dims[i] for i in inputs], values, arguments,
                                   output_count=len(step.outputs))
    except (NNRtError, ValueError, TypeError):
        return False
    return bool(rule) and rule[0] == shape


__all__ = ["plan_arena", "slot_is_free"]
