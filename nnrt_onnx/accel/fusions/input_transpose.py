"""Fusion pass: a float32 TRANSPOSE [0, 2, 3, 1] (an NCHW image made NHWC: every model exported from NCHW starts
with one) whose only reader is a CONV2D's input becomes that convolution's ``nchw`` (``accel.conv.conv2d``): it
reads the NCHW tensor (the direct convolution lays it out as it copies it into its padded image), so the image is
not rewritten once more (a 224x224 image's TRANSPOSE took 190-240 us in the model, cold in memory; the stem takes
40-80 us more). The same values."""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType
from ...kernels import registered_kernel
from ...plan import merged, readers_and_producers
from .conv_post_ops import KERNELS

_OP = OH_NN_OperationType
FLOAT32 = np.dtype(np.float32)


def fuse_input_transpose(plan) -> int:
    """The pass (module doc) on ``plan.steps``; returns how many transposes it folded."""
    steps, outputs = plan.steps, set(plan.outputs)
    readers, _ = readers_and_producers(steps)
    fused: dict[int, object] = {}
    absorbed: set[int] = set()
    for position, step in enumerate(steps):
        if step.op != _OP.OH_NN_OPS_TRANSPOSE or not step.plain_candidate() or len(step.inputs) != 2:
            continue
        perm = plan.constants.get(step.inputs[1])
        source, tensor = step.inputs[0], step.outputs[0]
        if (perm is None or perm.tolist() != [0, 2, 3, 1] or tensor in outputs or readers.get(tensor) != 1
                or plan.compute_dtype[source] != FLOAT32 or plan.static[source] is None):
            continue
        reader = next((i for i in range(position + 1, len(steps)) if tensor in steps[i].inputs), None)
        conv = None if reader is None else steps[reader]
        if (conv is None or conv.op != _OP.OH_NN_OPS_CONV2D or conv.inputs[0] != tensor
                or (conv.fn is not registered_kernel(conv.op) and "post" not in conv.kwargs)  # (a patched kernel)
                or tensor in conv.inputs[1:] or conv.kwargs.get("nchw") or not conv.plain_candidate()):
            continue
        fn = conv.fn if "post" in conv.kwargs else KERNELS[conv.op]  # (a convolution fused with its post ops)
        fused[reader] = merged(conv, fn, dict(conv.kwargs, nchw=True), conv.fuse, (source,) + conv.inputs[1:],
                               [step, conv], conv.addends,
                               tuple(t for t in step.release + conv.release if t != tensor))
        absorbed.add(position)
    if fused:
        plan.steps[:] = [fused.get(position, step) for position, step in enumerate(steps) if position not in absorbed]
    return len(fused)


__all__ = ["fuse_input_transpose"]
