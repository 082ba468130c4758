"""Fusion pass: an elementwise activation (RELU, RELU6, SIGMOID, TANH, LEAKY_RELU, HSWISH, HARD_SIGMOID, SWISH,
CLIP: ``accel.activation.IN_PLACE``; ABS, NEG: ``accel.elementwise.IN_PLACE``) after any float32 step becomes part of that step: the step's
``then`` gets the activation, applied in place to the step's output by the engine -- one step, one array and the
activation's reference passes fewer. NNRt's own fused activation covers only RELU and RELU6 of some ops; this
covers any op before (a convolution's LeakyRelu, a MATMUL's Sigmoid, an ADD's Tanh, a chain of them).

Conditions: the activation step reads only the step's output, which nothing else reads and which is no model
output; both float32 with the same static shape; neither step (de)quantizes, and the step before is no view
(its output may be another tensor's data; a fused activation of its own left for the engine comes first), and no
CONCAT (assembled in place by the pass after this one). Exact: the activation's reference operations on the
step's values (``accel.contract``)."""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType
from ...plan import readers_and_producers
from ..activation import IN_PLACE as ACTIVATIONS
from ..activation import in_place
from ..elementwise import IN_PLACE as SIGN_OPS

FLOAT32 = np.dtype(np.float32)


def fuse_activations(plan) -> int:
    """The pass (module doc) on ``plan.steps``; returns how many activations it fused."""
    steps, outputs = plan.steps, set(plan.outputs)
    readers, produced_at = readers_and_producers(steps)
    fused = 0
    position = 0
    while position < len(steps):
        step = steps[position]
        position += 1
        if not _can_take(plan, step):
            continue
        tensor = step.outputs[0]
        # (not 0-d: a ufunc of 0-d arrays gives numpy scalars, which the in-place activations cannot write into)
        if tensor in outputs or readers.get(tensor) != 1 or plan.static[tensor] == ():
            continue
        reader = next(i for i in range(position, len(steps)) if tensor in steps[i].inputs)
        activation = steps[reader]
        name = activation.op.name[len("OH_NN_OPS_"):]
        arguments = {k: v for k, v in activation.kwargs.items() if k != "ctx"}
        fn = in_place(name, arguments, ACTIVATIONS if name in ACTIVATIONS else SIGN_OPS)
        if (fn is None or activation.inputs != (tensor,) or len(activation.outputs) != 1
                or not activation.plain_candidate() or activation.then
                or plan.static[activation.outputs[0]] != plan.static[tensor]
                or plan.compute_dtype[activation.outputs[0]] != FLOAT32):
            continue
        merged = _merged(step, activation, fn)
        steps[position - 1] = merged
        del steps[reader]
        fused += 1
        position -= 1  # the merged step may take the next activation too
        readers, produced_at = readers_and_producers(steps)
    return fused


def _can_take(plan, step) -> bool:
    # (a CONCAT keeps its output tensor: the assembly pass after this one writes its inputs in place)
    return (step.op != OH_NN_OperationType.OH_NN_OPS_CONCAT and len(step.outputs) == 1 and step.view_shape is None
            and step.dequantize_inputs is None and step.quantize_outputs is None and step.out_view is None
            and plan.static[step.outputs[0]] is not None and plan.compute_dtype[step.outputs[0]] == FLOAT32)


def _merged(step, activation, fn):
    import copy

    result = copy.copy(step)
    result.outputs = activation.outputs
    result.checks = activation.checks
    result.then = step.then + (fn,)
    result.group = step.group + activation.group
    result.release = tuple(dict.fromkeys(step.release + activation.release))
    if step.label.endswith(")") and " (+ " in step.label:
        result.label = step.label[:-1] + f", {activation.op.name[len('OH_NN_OPS_'):]})"
    else:
        result.label = f"{step.label} (+ {activation.op.name[len('OH_NN_OPS_'):]})"
    return result


__all__ = ["fuse_activations"]
