"""Fusion pass: MUL/ADD steps after a float32 convolution, BATCH_NORM or linear-layer MATMUL become part of it.

* MUL/ADD by a per-channel constant after a convolution or BATCH_NORM (a batch norm exported as BatchNormalization
  + Mul + Add: inception_v2, densenet121);
* a residual ADD: the convolution's output plus another tensor of its shape that exists before the convolution
  runs (ResNet, MobileNetV2, ShuffleNet) -- the tensor becomes an extra input of the step (an *addend*);
* a linear layer: a MATMUL of rows by a constant matrix (nothing transposed) followed by its bias ADD, per-column
  MUL/ADD and a residual ADD.

The step's kernel becomes the op's accelerated kernel (``accel.conv``, ``accel.normalization``, ``accel.linear``)
with ``post`` -- the operations in order, applied to each block of output rows while it is in cache -- and the
last absorbed step's fused activation. The same float operations in the same order as the absorbed steps (IEEE
addition commutes): bit-identical to them given the kernel's product (``accel.contract``)."""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType
from ...kernels import registered_kernel
from ...plan import merged, readers_and_producers
from ..conv import ACCELERATED as _CONV_KERNELS
from ..linear import ACCELERATED as _LINEAR_KERNELS
from ..normalization import ACCELERATED as _NORMALIZATION_KERNELS

_OP = OH_NN_OperationType
FLOAT32 = np.dtype(np.float32)
# each op whose accelerated kernel takes ``post`` (and ``activation``), by op
KERNELS = {_OP[f"OH_NN_OPS_{name}"]: fn for table in (_CONV_KERNELS, _LINEAR_KERNELS, _NORMALIZATION_KERNELS)
           for name, fn in table.items()}
_POST_OPS = {_OP.OH_NN_OPS_MUL: "mul", _OP.OH_NN_OPS_ADD: "add"}


def with_addends(fn, count: int):
    """``fn`` (an accelerated kernel taking ``post``) taking ``count`` more positional inputs, the residuals of
    fused ADD steps: its ``post`` entries ("addend", k) become ("addend", the k-th of them)."""
    def run(*args, post=(), **kwargs):
        inputs, addends = args[:-count], args[-count:]
        post = tuple(("addend", addends[v]) if name == "addend" else (name, v) for name, v in post)
        return fn(*inputs, post=post, **kwargs)
    return run


def fuse_conv_post_ops(plan) -> int:
    """The pass (module doc) on ``plan.steps``; returns how many steps it fused."""
    steps, outputs = plan.steps, set(plan.outputs)
    readers, produced_at = readers_and_producers(steps)
    absorbed: set[int] = set()
    fused: dict[int, object] = {}
    for position, step in enumerate(steps):
        if step.op not in KERNELS or not _fusable(plan, step):
            continue
        post, chain, activation, tensor, addends = [], [], 0, step.outputs[0], []
        channels = plan.static[tensor][-1] if plan.static[tensor] else None
        while channels and tensor not in outputs and readers.get(tensor) == 1:
            reader = next((i for i in range(position + 1, len(steps)) if tensor in steps[i].inputs), None)
            vector = None if reader is None else _post_vector(plan, steps[reader], tensor, channels)
            if vector is None and reader is not None and step.op != _OP.OH_NN_OPS_BATCH_NORM:
                addend = _post_addend(plan, steps[reader], tensor, position, produced_at)
                if addend is not None:
                    vector = ("addend", len(addends))
                    addends.append(addend)
            if vector is None:
                break
            post.append(vector)
            chain.append(reader)
            tensor = steps[reader].outputs[0]
            if steps[reader].fuse:
                activation = steps[reader].fuse
                break
        if not post:
            continue
        kwargs = dict(step.kwargs, post=tuple(post))
        if activation:
            kwargs["activation"] = activation
        inputs = step.inputs + tuple(addends)
        fn = KERNELS[step.op]
        fused[position] = merged(step, with_addends(fn, len(addends)) if addends else fn, kwargs, 0, inputs,
                                 [step] + [steps[i] for i in chain], len(addends),
                                 step.release + tuple(t for i in chain for t in steps[i].release))
        absorbed.update(chain)
    if fused:
        plan.steps[:] = [fused.get(position, step) for position, step in enumerate(steps) if position not in absorbed]
    return len(fused)


def _fusable(plan, step) -> bool:
    if step.op == _OP.OH_NN_OPS_MATMUL:  # rows by a constant matrix, nothing transposed
        matrix = plan.constants.get(step.inputs[1]) if len(step.inputs) == 2 else None
        shape = plan.static[step.inputs[0]]
        if (matrix is None or matrix.ndim != 2 or shape is None or len(shape) < 2
                or step.kwargs.get("transpose_a") or step.kwargs.get("transpose_b")):
            return False
    return (step.fn is registered_kernel(step.op) and step.dequantize_inputs is None
            and step.quantize_outputs is None and not step.fuse
            and not step.kwargs.get("activation") and not step.kwargs.get("post") and len(step.outputs) == 1
            and all(plan.compute_dtype[t] == FLOAT32 for t in step.inputs + step.outputs))


def _post_vector(plan, step, tensor: int, channels: int):
    """("mul" | "add", [channels] float32 vector) when ``step`` is a plain float32 MUL/ADD of ``tensor`` by a
    constant that broadcasts along the channels only (the result keeps ``tensor``'s shape); else None."""
    name = _POST_OPS.get(step.op)
    if name is None or step.ufunc is None or step.fuse not in (0, 1, 2) or len(step.outputs) != 1:
        return None
    others = [t for t in step.inputs if t != tensor]
    if len(others) != 1 or len(step.inputs) != 2:
        return None
    constant = plan.constants.get(others[0])
    shape = plan.static[tensor]
    if constant is None or constant.dtype != FLOAT32 or plan.static[step.outputs[0]] != shape:
        return None
    if constant.ndim > len(shape) or constant.size not in (1, channels):
        return None
    if constant.size == channels and constant.ndim and constant.shape[-1] != channels:
        return None  # e.g. [C, 1, 1]: broadcasts along another axis
    try:
        if np.broadcast_shapes(shape, constant.shape) != shape:
            return None
    except ValueError:
        return None
    vector = np.ascontiguousarray(np.broadcast_to(constant.reshape(-1), (channels,)))
    vector.flags.writeable = False
    return name, vector


def _post_addend(plan, step, tensor: int, position: int, produced_at: dict[int, int]):
    """The other input of ``step`` when it is a plain float32 ADD of ``tensor`` and another tensor of the same
    shape that exists before the convolution at ``position`` runs (a residual connection); else None. IEEE
    addition commutes, so adding it inside the convolution's finish gives the ADD's values bit for bit."""
    if step.op != _OP.OH_NN_OPS_ADD or step.ufunc is None or step.fuse not in (0, 1, 2) \
            or len(step.outputs) != 1 or len(step.inputs) != 2:
        return None
    others = [t for t in step.inputs if t != tensor]
    if len(others) != 1:
        return None
    other = others[0]
    shape = plan.static[tensor]
    if (other in plan.constants or plan.static[other] != shape or plan.static[step.outputs[0]] != shape
            or plan.compute_dtype[other] != FLOAT32 or produced_at.get(other, -1) >= position):
        return None
    return other


__all__ = ["KERNELS", "fuse_conv_post_ops", "with_addends"]
