"""Fusion pass: concatenations assembled in place -- convolutions write straight into their slice of a CONCAT's
output.

A CONCAT copies every input into its output (8-10% of SqueezeNet's and DenseNet's time, 6% of U-Net's). Where an
input is the output of a convolution step (CONV2D, DEPTHWISE_CONV2D_NATIVE: kernels that fill a strided ``out``)
that nothing else reads, the plan hands that step, as its ``out``, the view of the concatenation's arena array its
values belong in (``step.out_view``); the CONCAT step then only copies the inputs that were not written in place.
Only where such inputs make at least half the concatenation (SqueezeNet's fire modules, inception's branches), and
only along the last axis (the channels of an NHWC concatenation), the one slice the producers fill correctly.
The concatenation's array is taken from the arena at its first producer (:func:`.memory.plan_arena`) and held
until the concatenation's last reader (``runtime.memory``).

Results are the same values as the copies: a producer that returns another array than the view it was given (a
kernel path that declines a strided ``out``) has its result copied into the view by the engine. Only float32
steps without quantization or fused activation, static shapes, and a concatenation that is not a model output.
"""
from __future__ import annotations

import copy

import numpy as np

from ...enums import OH_NN_OperationType
from ...errors import NNRtError
from ...kernels import infer_output_shapes
from ...plan import readers_and_producers

_OP = OH_NN_OperationType
# kernels whose every path fills a strided ``out`` (a slice of a larger array's last axis) correctly
_PRODUCERS = frozenset({_OP.OH_NN_OPS_CONV2D, _OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE})
FLOAT32 = np.dtype(np.float32)


def concat_axis(prepared, step) -> int | None:
    """The normalised axis of a CONCAT step of static float32 shapes whose output the kernel's shape rule agrees
    with, or None."""
    shapes = [prepared.static[t] for t in step.inputs]
    target = prepared.static[step.outputs[0]]
    if (target is None or any(s is None for s in shapes)
            or any(prepared.compute_dtype[t] != FLOAT32 for t in step.inputs)):
        return None
    axis = step.kwargs.get("axis")
    if isinstance(axis, (list, tuple, np.ndarray)):
        axis = axis[0] if len(axis) == 1 else None
    if not isinstance(axis, (int, np.integer)) or not -len(target) <= axis < len(target):
        return None
    try:
        (rule,) = infer_output_shapes(step.op, shapes, [None] * len(shapes), {"axis": axis}, output_count=1)
    except (NNRtError, TypeError, ValueError):
        return None
    return int(axis) % len(target) if rule == target else None


def assemble_concats(prepared) -> int:
    """The pass on ``prepared.steps`` (a plan): each eligible CONCAT assembled in place (see the module doc): copies
    of its producers carry ``out_view = (concat step, index of their slice)``, a copy of the CONCAT copies only the
    other inputs. Returns how many concatenations it assembled."""
    steps, outputs = list(prepared.steps), set(prepared.outputs)
    readers, produced_at = readers_and_producers(steps)
    assembled = 0
    result = list(steps)
    for position, step in enumerate(steps):
        if step.op != _OP.OH_NN_OPS_CONCAT or not step.plain_candidate() or len(step.outputs) != 1:
            continue
        target = step.outputs[0]
        axis = None if target in outputs or prepared.compute_dtype[target] != FLOAT32 else concat_axis(prepared, step)
        if axis is None or axis != len(prepared.static[target]) - 1:
            continue  # (the producers fill a slice of the last axis; a W slice of an NHWC array they wrote past)
        slices, start = [], 0
        for t in step.inputs:
            end = start + prepared.static[t][axis]
            slices.append((slice(None),) * axis + (slice(start, end),))
            start = end
        in_place = [k for k, t in enumerate(step.inputs) if _producer_writes_in_place(prepared, result, t, step,
                                                                                       readers, produced_at, outputs)]
        if 2 * sum(prepared.static[step.inputs[k]][axis] for k in in_place) < start:
            continue  # (DenseNet's concatenations of all earlier features with a 32-channel convolution: holding
            # the concatenation's array from that convolution on saved less than it cost, 1.01-1.1x)
        concat = copy.copy(step)
        copies = tuple((k, slices[k]) for k in range(len(step.inputs)) if k not in in_place)
        concat.fn, concat.kwargs, concat.accepts_out, concat.ufunc = _assembler(copies), {}, True, None
        concat.out_view = (concat, ())  # its whole array: the producers' views already live in it
        for k in in_place:
            producer = copy.copy(result[produced_at[step.inputs[k]]])
            producer.out_view = (concat, slices[k])
            result[produced_at[step.inputs[k]]] = producer
        result[position] = concat
        assembled += 1
    prepared.steps[:] = result
    return assembled


def _producer_writes_in_place(prepared, steps, tensor, concat, readers, produced_at, outputs) -> bool:
    position = produced_at.get(tensor)
    if position is None or readers.get(tensor) != 1 or concat.inputs.count(tensor) != 1 or tensor in outputs:
        return False
    producer = steps[position]
    return (producer.op in _PRODUCERS and producer.accepts_out and producer.plain_candidate()
            and producer.outputs == (tensor,) and producer.out_view is None
            and prepared.compute_dtype[tensor] == FLOAT32)


def _assembler(copies):
    """The assembled CONCAT's kernel: the inputs not written in place copied into their slices of ``out``."""
    def assemble(*inputs, out):
        for k, index in copies:
            np.copyto(out[index], inputs[k])
        return out
    return assemble


__all__ = ["assemble_concats", "concat_axis"]
