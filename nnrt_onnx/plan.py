"""The native execution plan's data types, shared by the engine that builds and runs it (``runtime.cpu``) and the
fast-path package that rewrites it (``accel``: its fusion passes and runners): one :class:`Step` per operation (or
per group of operations a fusion merged, :func:`merged`), the readers and producers of the plan's tensors, and the
plan's structure for the pass manager (:func:`plan_structure`, see :mod:`nnrt_onnx.passes`).

A plan (``runtime.cpu.NativePreparedModel``) offers the passes: ``steps`` (the list they rewrite), ``static`` (per
tensor its static shape or None), ``dims`` (declared dims, -1 where dynamic), ``compute_dtype``, ``constants``
(tensor index -> read-only array) and ``outputs`` (the model's output tensor indices)."""
from __future__ import annotations

from typing import Any


class Step:
    """One step of the plan: one operation, or the operations a fusion merged into one (``group``)."""

    __slots__ = ("number", "label", "op", "fn", "kwargs", "fuse", "inputs", "outputs", "dequantize_inputs",
                 "quantize_outputs", "release", "view_shape", "out_slot", "checks", "accepts_out", "ufunc", "plain",
                 "addends", "out_view", "group", "dequantize_dtype", "then")

    def __init__(self, number, label, op, fn, kwargs, fuse, inputs, outputs, dequantize_inputs, quantize_outputs):
        self.number = number
        self.label = label
        self.op = op
        self.fn = fn
        self.kwargs = kwargs
        self.fuse = fuse
        self.inputs = inputs
        self.outputs = outputs
        self.dequantize_inputs = dequantize_inputs if any(q is not None for q in dequantize_inputs) else None
        self.quantize_outputs = quantize_outputs if any(q is not None for q in quantize_outputs) else None
        self.dequantize_dtype = None  # what its quantized inputs reach the kernel as (None: the plan's own)
        self.release: tuple[int, ...] = ()
        self.view_shape: tuple[int, ...] | None = None  # a reshape-like step done as a view
        self.out_slot: int | None = None  # arena slot of the first output (kernels that accept ``out``)
        self.checks: tuple = ()
        self.accepts_out = False
        self.ufunc = None  # float ADD/SUB/MUL/DIV/MATMUL checked at compile time: the ufunc itself
        self.addends = 0  # trailing inputs that are not the kernel's: residuals a fused ADD adds
        # a slice of another step's arena array to write the output into (accel's concatenation assembly;
        # runtime.memory.plan_arena resolves it to (slot, index, first writer))
        self.out_view = None
        self.plain = False  # one output, no (de)quantization, no fused activation left: the engine's short path
        self.group: tuple[Step, ...] = (self,)  # the model's operations this step runs (their unfused steps)
        # elementwise activations a fusion appended (accel's activation fusion): each ``fn(x) -> x`` applied in
        # order to the first output, in place where the engine owns that array (else to a copy)
        self.then: tuple = ()

    def plain_candidate(self) -> bool:
        """No (de)quantization and no fused activation: the step is its kernel (or ufunc) alone."""
        return self.dequantize_inputs is None and self.quantize_outputs is None and not self.fuse \
            and self.view_shape is None

    def kernel_step(self) -> Step:
        """The unfused step of this step's own operation (``number``): whose kernel's shape rule gives the output
        shape (a fusion keeps its kernel's output shape)."""
        return next((s for s in self.group if s.number == self.number), self)

    def hidden(self) -> tuple[int, ...]:
        """The tensors the operations of ``group`` produce that this step does not write (a fusion's
        intermediates)."""
        return tuple(t for s in self.group for t in s.outputs if t not in self.outputs)


def merged(step: Step, fn, kwargs, fuse: int, inputs, steps, addends: int, release, last: Step | None = None) -> Step:
    """The one step a fusion makes of ``steps`` (in execution order, ``step`` among them): ``step``'s number, label
    and op, the kernel ``fn`` with ``kwargs``, the outputs and checks of ``last`` (default: the last of ``steps``);
    no (de)quantization."""
    last = last or steps[-1]
    result = Step(step.number, step.label, step.op, fn, kwargs, fuse, tuple(inputs), last.outputs,
                  (None,) * len(inputs), (None,) * len(last.outputs))
    result.addends = addends
    result.release = tuple(release)
    result.checks = last.checks
    result.accepts_out = step.accepts_out
    result.group = tuple(s for one in steps for s in one.group)
    return result


def readers_and_producers(steps) -> tuple[dict[int, int], dict[int, int]]:
    """For a plan's steps (anything with ``inputs`` and ``outputs``): how many times each tensor is read, and the
    position of the step that writes it."""
    readers: dict[int, int] = {}
    produced_at: dict[int, int] = {}
    for position, step in enumerate(steps):
        for t in step.inputs:
            readers[t] = readers.get(t, 0) + 1
        for t in step.outputs:
            produced_at[t] = position
    return readers, produced_at


def plan_structure(plan) -> tuple[Any, list, Any]:
    """The plan's structure for the pass manager (:mod:`nnrt_onnx.passes`): its steps by identity, each with its
    op, inputs, outputs, kernel and keywords (by identity), and what they write into (``out_view``)."""
    steps = list(plan.steps)
    alive = [(s, s.fn, list(s.kwargs.values())) for s in steps]
    key = tuple((id(s), s.op, s.inputs, s.outputs, id(s.fn), tuple((k, id(v)) for k, v in s.kwargs.items()),
                 None if s.out_view is None else (id(s.out_view[0]), repr(s.out_view[1]))) for s in steps)
    return key, steps, alive


__all__ = ["Step", "merged", "plan_structure", "readers_and_producers"]
