"""The native CPU device (id 1): runs a finished model through the numpy kernels.

Compiling a model builds an **execution plan** once (:class:`NativePreparedModel`): every operation bound to its
kernel with validated, decoded parameters (``runtime.invoke.bind``), a list-indexed tensor store (constants
pre-placed, already in the compute dtype), each tensor's declared dtype and static shape for the one check of
every value that flows, the tensors to drop after each step, reshape-like steps (RESHAPE, SQUEEZE, UNSQUEEZE,
EXPAND_DIMS, FLATTEN with static shapes) turned into numpy views, and **memory planning**: kernels that accept
``out=`` write into buffers of a per-run arena whose slots are reused by tensor lifetime (the shapes come from the
model's declared dims, checked against the kernels' shape rules; see :mod:`.memory`).

Cross-cutting work happens here once for every op: default parameters and the fused activation (through
runtime.invoke, which constant folding shares; applied in place when the kernel's output is its own),
(de)quantization around kernels, EnableFloat16, the check of each output's dtype and shape, capturing
intermediate tensors (``run(inputs, capture)``), the BLAS thread count of a run (:mod:`.threads`) and the
per-step timing of ``run(..., profile=...)``.
"""
from __future__ import annotations

import copy
import threading
import time
from typing import Any, MutableMapping, Sequence

import numpy as np

from ..dtypes import dequantize, quantize
from ..enums import OH_NN_DeviceType, OH_NN_OperationType, OH_NN_ReturnCode
from ..errors import NNRtError, invalid, unsupported
from ..kernels import register_constant
from ..kernels.elementwise import erf_gelu
from .assembly import assemble_concats
from .device import CompileOptions, Device, PreparedModel, register_device
from .graph import execution_order, readers_and_producers
from .invoke import apply_fused_activation, apply_fused_activation_inplace, bind
from .memory import plan_arena, slot_is_free
from .specialise import specialise_steps
from .threads import blas_threads, thread_count

FLOAT32 = np.dtype(np.float32)
FLOAT16 = np.dtype(np.float16)
_OP = OH_NN_OperationType
# ops whose output is their input's data with another shape: a view when both shapes are static
_VIEW_OPS = frozenset({_OP.OH_NN_OPS_RESHAPE, _OP.OH_NN_OPS_SQUEEZE, _OP.OH_NN_OPS_UNSQUEEZE,
                       _OP.OH_NN_OPS_EXPAND_DIMS, _OP.OH_NN_OPS_FLATTEN})
_KERNEL_ERRORS = (ValueError, IndexError, TypeError, ZeroDivisionError, FloatingPointError)
# float arithmetic (and MATMUL) whose kernel is, once its dtype checks pass, exactly this ufunc on its two inputs
_UFUNC_OPS = {_OP.OH_NN_OPS_ADD: np.add, _OP.OH_NN_OPS_SUB: np.subtract, _OP.OH_NN_OPS_MUL: np.multiply,
              _OP.OH_NN_OPS_DIV: np.true_divide, _OP.OH_NN_OPS_MATMUL: np.matmul}
# ops whose kernel takes ``post`` (and ``activation``): following MUL/ADD by per-channel constants fuse into them
# (MATMUL: of rows by a constant matrix, see _fusable_conv -- a linear layer's bias ADD)
_CONV_OPS = frozenset({_OP.OH_NN_OPS_CONV2D, _OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE, _OP.OH_NN_OPS_BATCH_NORM,
                       _OP.OH_NN_OPS_MATMUL})
_POST_OPS = {_OP.OH_NN_OPS_MUL: "mul", _OP.OH_NN_OPS_ADD: "add"}
_FLOATS = frozenset({np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)})


def _quant_args(q, ndim):
    axis = None
    if q.count > 1:
        axis = q.axis if q.axis is not None else 0
        axis = axis % max(ndim, 1)
    return q.scales, q.zero_points, axis


def _with_addends(fn, count: int):
    """``fn`` (a convolution kernel) taking ``count`` more positional inputs, the residuals of fused ADD steps:
    its ``post`` entries ("addend", k) become ("addend", the k-th of them)."""
    def run(*args, post=(), **kwargs):
        inputs, addends = args[:-count], args[-count:]
        post = tuple(("addend", addends[v]) if name == "addend" else (name, v) for name, v in post)
        return fn(*inputs, post=post, **kwargs)
    return run


class _Step:
    """One operation of the plan."""

    __slots__ = ("number", "label", "op", "fn", "kwargs", "fuse", "inputs", "outputs", "dequantize_inputs",
                 "quantize_outputs", "release", "view_shape", "out_slot", "checks", "accepts_out", "ufunc", "plain",
                 "addends", "out_view")

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
        self.release: tuple[int, ...] = ()
        self.view_shape: tuple[int, ...] | None = None  # a reshape-like step done as a view
        self.out_slot: int | None = None  # arena slot of the first output (kernels that accept ``out``)
        self.checks: tuple = ()
        self.accepts_out = False
        self.ufunc = None  # float ADD/SUB/MUL/DIV/MATMUL checked at compile time: the ufunc itself
        self.addends = 0  # trailing inputs that are not the kernel's: residuals a fused ADD adds (see _with_addends)
        # a slice of another step's arena array to write the output into (runtime.assembly; memory.plan_arena
        # resolves it to (slot, index, first writer))
        self.out_view = None

    def plain_candidate(self) -> bool:
        """No (de)quantization and no fused activation: the step is its kernel (or ufunc) alone."""
        return self.dequantize_inputs is None and self.quantize_outputs is None and not self.fuse \
            and self.view_shape is None
        self.plain = False  # one output, no (de)quantization, no fused activation left: run by _run_plain


def _merged(step: _Step, fn, kwargs, fuse: int, inputs, last: _Step, addends: int, release) -> _Step:
    """The one step a fusion makes of ``step`` (its number, label and op; the kernel ``fn`` with ``kwargs``) and
    the steps it absorbs up to ``last`` (whose outputs and checks it takes): no (de)quantization."""
    merged = _Step(step.number, step.label, step.op, fn, kwargs, fuse, inputs, last.outputs, (None,) * len(inputs),
                   (None,) * len(last.outputs))
    merged.addends = addends
    merged.release = release
    merged.checks = last.checks
    merged.accepts_out = step.accepts_out
    return merged


def _with_releases(steps: list[_Step], keep: set[int]) -> list[_Step]:
    """``steps`` with each step releasing exactly the tensors whose last reader it is. A fused step runs at its
    first step's position but took over the releases of the steps it absorbed, whose positions were later: a tensor
    read by a step in between (a residual's input that also feeds a third op) was gone when that step ran. Steps
    whose releases change are copies: the plain steps (shared with the unfused plan) keep their own."""
    last_use: dict[int, int] = {}
    for position, step in enumerate(steps):
        for t in step.inputs:
            last_use[t] = position
    result = []
    for position, step in enumerate(steps):
        release = tuple(dict.fromkeys(t for t in step.inputs if last_use[t] == position and t not in keep))
        if release != step.release:
            step = copy.copy(step)
            step.release = release
        result.append(step)
    return result


class NativePreparedModel(PreparedModel):
    """A model compiled for the CPU device: its execution plan."""

    supports_capture = True

    def __init__(self, model, options: CompileOptions | None = None):
        options = options or CompileOptions()
        self.model = model
        self.float16 = options.float16
        self.threads = thread_count(options.performance_mode, options.extensions)
        order = execution_order(model)
        tensors = model.tensors
        count = len(tensors)
        # EnableFloat16: float32 work runs in float16; model IO stays float32.
        self.declared_dtype = [t.np_dtype if t.dtype != 0 else None for t in tensors]
        self.compute_dtype = [None if d is None else (FLOAT16 if self.float16 and d == FLOAT32 and t.quant is None
                                                      else d) for d, t in zip(self.declared_dtype, tensors)]
        self.dims = [tuple(int(d) for d in t.dims) for t in tensors]
        self.static = [dims if all(d >= 0 for d in dims) else None for dims in self.dims]
        self._template: list[Any] = [None] * count
        for i, t in enumerate(tensors):
            if t.data is not None:
                self._template[i] = self._constant(i, t)
        self.constants = {i: self._template[i] for i, t in enumerate(tensors) if t.data is not None}
        self.inputs = tuple(model.inputs)
        self.outputs = tuple(model.outputs)
        last_use: dict[int, int] = {}
        for position, number in enumerate(order):
            for t in model.operations[number].inputs:
                last_use[t] = position
        keep = set(model.outputs) | set(self.constants)
        self.steps: list[_Step] = []
        for position, number in enumerate(order):
            operation = model.operations[number]
            label = f"operation #{number} {operation.op.name}"
            bound = bind(operation.op, operation.values,
                         [self.compute_dtype[t] for t in operation.inputs],
                         [self.compute_dtype[t] for t in operation.outputs],
                         [self.dims[t] for t in operation.outputs],
                         [tensors[t].quant for t in operation.inputs],
                         [tensors[t].quant for t in operation.outputs])
            if bound is None:
                raise unsupported(f"{label}: the native CPU device has no kernel for {operation.op.name} yet")
            native_quant = operation.spec.quant == "native"
            step = _Step(number, label, operation.op, bound.kernel, bound.kwargs, bound.fuse,
                         tuple(operation.inputs), tuple(operation.outputs),
                         tuple(None if native_quant else tensors[t].quant for t in operation.inputs),
                         tuple(None if native_quant else tensors[t].quant for t in operation.outputs))
            step.release = tuple(t for t in operation.inputs if last_use.get(t) == position and t not in keep)
            step.checks = tuple((t, self.compute_dtype[t], self.static[t]) for t in operation.outputs)
            step.accepts_out = bound.accepts_out
            self._plan_view(step)
            self._plan_ufunc(step)
            self.steps.append(step)
        self._plain_steps = self.steps  # every operation on its own: for runs that capture intermediates
        self.steps = self._fuse_conv_post_ops(self.steps, set(model.outputs))
        self.steps = self._fuse_erf_gelu(self.steps, set(model.outputs))
        self.steps = self._fuse_input_transpose(self.steps, set(model.outputs))
        self.steps = assemble_concats(self, self.steps, set(model.outputs))
        self.steps = _with_releases(self.steps, keep)
        self._arena_sizes = plan_arena(self)
        for step in self.steps + self._plain_steps:
            step.plain = (step.view_shape is None and step.dequantize_inputs is None and step.quantize_outputs is None
                          and not step.fuse and len(step.outputs) == 1)
        specialise_steps(self, self.steps)
        self._arenas: list[list[np.ndarray]] = []
        self._arena_lock = threading.Lock()

    def _constant(self, index, tensor) -> np.ndarray:
        """The constant in its compute dtype, as a read-only array registered with the kernels (which may then
        keep pre-packed forms of it, see kernels.register_constant)."""
        data = tensor.data
        target = self.compute_dtype[index]
        value = (data.astype(target) if target is not None and data.dtype != target else data).view()
        value.flags.writeable = False
        register_constant(value)
        return value

    def _plan_view(self, step: _Step) -> None:
        """A reshape-like step with static shapes, no quantization and the same dtype in and out becomes a view
        (when the kernel's own shape rule gives the declared output shape)."""
        if step.op not in _VIEW_OPS or step.dequantize_inputs or step.quantize_outputs or step.fuse:
            return
        if len(step.outputs) != 1 or not step.inputs:
            return
        source, target = step.inputs[0], step.outputs[0]
        shape_in, shape_out = self.static[source], self.static[target]
        if shape_in is None or shape_out is None or self.compute_dtype[source] != self.compute_dtype[target]:
            return
        from ..kernels import infer_output_shapes

        values = [self._template[i] for i in step.inputs]
        arguments = {k: v for k, v in step.kwargs.items() if k != "ctx"}
        try:
            (rule,) = infer_output_shapes(step.op, [self.dims[i] for i in step.inputs], values, arguments,
                                          output_count=1)
        except (NNRtError, ValueError, TypeError):
            return  # the kernel raises its error at run time
        if rule == shape_out and int(np.prod(shape_in)) == int(np.prod(shape_out)):
            step.view_shape = shape_out

    def _plan_ufunc(self, step: _Step) -> None:
        """Float ADD/SUB/MUL/DIV (and MATMUL without transposes, float32/float64) with one dtype in and out and no
        quantization: the kernel's dtype checks pass for every run, so the step calls the ufunc directly (shapes
        that do not fit still get the kernel's own error: the kernel is called then)."""
        ufunc = _UFUNC_OPS.get(step.op)
        if ufunc is None or step.dequantize_inputs or step.quantize_outputs or len(step.inputs) != 2:
            return
        dtypes = {self.compute_dtype[i] for i in step.inputs + step.outputs}
        if step.op == _OP.OH_NN_OPS_MATMUL:  # the kernel is np.matmul when nothing is transposed and not float16
            if (step.kwargs.get("transpose_a") or step.kwargs.get("transpose_b") or step.kwargs.get("activation")
                    or FLOAT16 in dtypes):
                return
        if len(dtypes) == 1 and dtypes <= _FLOATS and len(step.outputs) == 1:
            step.ufunc = ufunc

    def _fuse_conv_post_ops(self, steps: list[_Step], outputs: set[int]) -> list[_Step]:
        """A float32 convolution (or BATCH_NORM) followed by MUL/ADD steps with a per-channel constant (a batch
        norm exported as BatchNormalization + Mul + Add: inception_v2, densenet121) becomes one step: the kernel
        applies them to each block of output rows while it is in cache (its ``post``), then the last one's fused
        activation. The same float operations in the same order: bit-identical, minus two passes over the
        output and two steps. Runs with ``capture`` use the unfused steps (the intermediates exist there)."""
        readers, produced_at = readers_and_producers(steps)
        absorbed: set[int] = set()
        fused: dict[int, _Step] = {}
        for position, step in enumerate(steps):
            if step.op not in _CONV_OPS or not self._fusable_conv(step):
                continue
            post, chain, activation, tensor, addends = [], [], 0, step.outputs[0], []
            channels = self.static[tensor][-1] if self.static[tensor] else None
            while channels and tensor not in outputs and readers.get(tensor) == 1:
                reader = next((i for i in range(position + 1, len(steps)) if tensor in steps[i].inputs), None)
                vector = None if reader is None else self._post_vector(steps[reader], tensor, channels)
                if vector is None and reader is not None and step.op != _OP.OH_NN_OPS_BATCH_NORM:
                    addend = self._post_addend(steps[reader], tensor, position, produced_at)
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
            last = steps[chain[-1]]
            kwargs = dict(step.kwargs, post=tuple(post))
            if activation:
                kwargs["activation"] = activation
            inputs = step.inputs + tuple(addends)
            fn = _with_addends(step.fn, len(addends)) if addends else step.fn
            fused[position] = _merged(step, fn, kwargs, 0, inputs, last, len(addends),
                                      step.release + tuple(t for i in chain for t in steps[i].release))
            absorbed.update(chain)
        if not fused:
            return steps
        return [fused.get(position, step) for position, step in enumerate(steps) if position not in absorbed]

    def _fuse_input_transpose(self, steps: list[_Step], outputs: set[int]) -> list[_Step]:
        """A float32 TRANSPOSE [0, 2, 3, 1] (an NCHW image made NHWC: every model exported from NCHW starts with
        one) whose only reader is a CONV2D's input becomes that convolution's ``nchw``: it reads the NCHW tensor
        (the direct convolution lays it out as it copies it into its padded image), so the image is not
        rewritten once more (a 224x224 image's TRANSPOSE took 190-240 us in the model, cold in memory; the stem
        takes 40-80 us more). The same values; runs with ``capture`` use the unfused steps."""
        readers, _ = readers_and_producers(steps)
        fused: dict[int, _Step] = {}
        absorbed: set[int] = set()
        for position, step in enumerate(steps):
            if step.op != _OP.OH_NN_OPS_TRANSPOSE or not step.plain_candidate() or len(step.inputs) != 2:
                continue
            perm = self.constants.get(step.inputs[1])
            source, tensor = step.inputs[0], step.outputs[0]
            if (perm is None or perm.tolist() != [0, 2, 3, 1] or tensor in outputs or readers.get(tensor) != 1
                    or self.compute_dtype[source] != FLOAT32 or self.static[source] is None):
                continue
            reader = next((i for i in range(position + 1, len(steps)) if tensor in steps[i].inputs), None)
            conv = None if reader is None else steps[reader]
            if (conv is None or conv.op != _OP.OH_NN_OPS_CONV2D or conv.inputs[0] != tensor
                    or tensor in conv.inputs[1:] or conv.kwargs.get("nchw") or not conv.plain_candidate()):
                continue
            fused[reader] = _merged(conv, conv.fn, dict(conv.kwargs, nchw=True), conv.fuse,
                                    (source,) + conv.inputs[1:], conv, conv.addends,
                                    tuple(t for t in step.release + conv.release if t != tensor))
            absorbed.add(position)
        if not fused:
            return steps
        return [fused.get(position, step) for position, step in enumerate(steps) if position not in absorbed]

    def _fuse_erf_gelu(self, steps: list[_Step], outputs: set[int]) -> list[_Step]:
        """The exact GELU as exported (BERT): ``y = (x * (erf(x / c1) + c2)) * c3`` as DIV, ERF, ADD, MUL, MUL
        steps on float32 with scalar constants, each intermediate read only by the next step, becomes one step
        (kernels._accel.erf_gelu: one compiled loop; the same steps' kernels in order without numba):
        bit-identical, four steps and passes fewer. Runs with capture keep the unfused steps."""
        readers, _ = readers_and_producers(steps)
        consumer: dict[int, int] = {}
        for position, step in enumerate(steps):
            for t in step.inputs:
                consumer.setdefault(t, position)
        absorbed: set[int] = set()
        fused: dict[int, _Step] = {}
        for position, div in enumerate(steps):
            if div.op != _OP.OH_NN_OPS_DIV or div.ufunc is None or len(div.inputs) != 2 or div.fuse:
                continue
            x, divisor = div.inputs[0], self._scalar_constant(div.inputs[1])
            shape = self.static[x]
            if divisor is None or shape is None or self.compute_dtype[x] != FLOAT32:
                continue
            chain, tensor = [position], div.outputs[0]
            ops = (_OP.OH_NN_OPS_ERF, _OP.OH_NN_OPS_ADD, _OP.OH_NN_OPS_MUL, _OP.OH_NN_OPS_MUL)
            scalars = []
            for op in ops:
                if tensor in outputs or readers.get(tensor) != 1 or self.static[tensor] != shape:
                    break
                nxt = steps[consumer[tensor]]
                if nxt.op != op or not nxt.plain_candidate() or len(nxt.outputs) != 1:
                    break
                others = [t for t in nxt.inputs if t != tensor]
                if op == _OP.OH_NN_OPS_ERF:
                    if len(nxt.inputs) != 1:
                        break
                elif len(nxt.inputs) != 2 or len(others) != 1 or nxt.ufunc is None:
                    break
                elif len(chain) == 3:  # MUL by x itself
                    if others[0] != x:
                        break
                else:
                    value = self._scalar_constant(others[0])
                    if value is None:
                        break
                    scalars.append(value)
                chain.append(consumer[tensor])
                tensor = nxt.outputs[0]
            if len(chain) != 5 or self.static[tensor] != shape:
                continue
            last = steps[chain[-1]]
            kwargs = {"divisor": divisor, "addend": scalars[0], "factor": scalars[1]}
            merged = _Step(div.number, div.label + " (+ ERF, ADD, MUL, MUL: GELU)", div.op, erf_gelu, kwargs,
                           0, (x,), last.outputs, (None,), (None,))
            merged.release = tuple(t for i in chain for t in steps[i].release)
            merged.checks = last.checks
            fused[position] = merged
            absorbed.update(chain[1:])
        if not fused:
            return steps
        return [fused.get(position, step) for position, step in enumerate(steps) if position not in absorbed]

    def _scalar_constant(self, index: int):
        value = self.constants.get(index)
        if value is None or value.dtype != FLOAT32 or value.size != 1 or value.ndim > 1:
            return None
        return np.float32(value.reshape(()))

    def _fusable_conv(self, step: _Step) -> bool:
        if step.op == _OP.OH_NN_OPS_MATMUL:  # rows by a constant matrix, nothing transposed
            matrix = self.constants.get(step.inputs[1]) if len(step.inputs) == 2 else None
            shape = self.static[step.inputs[0]]
            if (matrix is None or matrix.ndim != 2 or shape is None or len(shape) < 2
                    or step.kwargs.get("transpose_a") or step.kwargs.get("transpose_b")):
                return False
        return (step.dequantize_inputs is None and step.quantize_outputs is None and not step.fuse
                and not step.kwargs.get("activation") and not step.kwargs.get("post") and len(step.outputs) == 1
                and all(self.compute_dtype[t] == FLOAT32 for t in step.inputs + step.outputs))

    def _post_vector(self, step: _Step, tensor: int, channels: int):
        """("mul" | "add", [channels] float32 vector) when ``step`` is a plain float32 MUL/ADD of ``tensor`` by a
        constant that broadcasts along the channels only (the result keeps ``tensor``'s shape); else None."""
        name = _POST_OPS.get(step.op)
        if name is None or step.ufunc is None or step.fuse not in (0, 1, 2) or len(step.outputs) != 1:
            return None
        others = [t for t in step.inputs if t != tensor]
        if len(others) != 1 or len(step.inputs) != 2:
            return None
        constant = self.constants.get(others[0])
        shape = self.static[tensor]
        if constant is None or constant.dtype != FLOAT32 or self.static[step.outputs[0]] != shape:
            return None
        if constant.ndim > len(shape) or constant.size not in (1, channels):
            return None
        if constant.size == channels and constant.shape[-1] != channels:
            return None  # e.g. [C, 1, 1]: broadcasts along another axis
        try:
            if np.broadcast_shapes(shape, constant.shape) != shape:
                return None
        except ValueError:
            return None
        vector = np.ascontiguousarray(np.broadcast_to(constant.reshape(-1), (channels,)))
        vector.flags.writeable = False
        return name, vector

    def _post_addend(self, step: _Step, tensor: int, position: int, produced_at: dict[int, int]):
        """The other input of ``step`` when it is a plain float32 ADD of ``tensor`` and another tensor of the same
        shape that exists before the convolution at ``position`` runs (a residual connection: ResNet,
        MobileNetV2, ShuffleNet); else None. IEEE addition commutes, so adding it inside the convolution's finish
        gives the ADD's values bit for bit."""
        if step.op != _OP.OH_NN_OPS_ADD or step.ufunc is None or step.fuse not in (0, 1, 2) \
                or len(step.outputs) != 1 or len(step.inputs) != 2:
            return None
        others = [t for t in step.inputs if t != tensor]
        if len(others) != 1:
            return None
        other = others[0]
        shape = self.static[tensor]
        if (other in self.constants or self.static[other] != shape or self.static[step.outputs[0]] != shape
                or self.compute_dtype[other] != FLOAT32 or produced_at.get(other, -1) >= position):
            return None
        return other

    # -- arenas ----------------------------------------------------------------------------------------------
    def _take_arena(self) -> list[np.ndarray]:
        with self._arena_lock:
            if self._arenas:
                return self._arenas.pop()
        return [np.empty(shape, dtype) for shape, dtype in self._arena_sizes]

    def _give_arena(self, arena: list[np.ndarray]) -> None:
        with self._arena_lock:
            self._arenas.append(arena)

    # -- running ---------------------------------------------------------------------------------------------
    def run(self, inputs: Sequence[np.ndarray], capture: MutableMapping[int, np.ndarray | None] | None = None,
            profile: list | None = None) -> list[np.ndarray]:
        """Run once. ``capture`` (optional) maps the indices of the tensors to keep to anything (None); each
        entry is set to that tensor's value (declared dtype) once it is known -- intermediates included.
        ``profile`` (optional, a list): one ``(operation number, op name, seconds)`` is appended per step."""
        if len(inputs) != len(self.inputs):
            raise invalid(f"the model has {len(self.inputs)} inputs, got {len(inputs)}")
        env = self._template.copy()
        for position, (index, array) in enumerate(zip(self.inputs, inputs)):
            array = np.asarray(array)
            self._check_value(index, array, f"input #{position}", self.declared_dtype[index])
            target = self.compute_dtype[index]
            env[index] = array.astype(target) if array.dtype != target else array
        sources = [env[i] for i in self.inputs]  # (the plan releases inputs after their last use)
        if capture is not None:
            self._capture(capture, env, [i for i in capture if env[i] is not None])
        arena = self._take_arena() if self._arena_sizes else None
        try:
            with blas_threads(self.threads), np.errstate(all="ignore"):
                run_plain, run_step = self._run_plain, self._run_step
                for step in (self.steps if capture is None else self._plain_steps):
                    if profile is not None:
                        started = time.perf_counter()
                    (run_plain if step.plain else run_step)(step, env, arena)
                    if profile is not None:
                        profile.append((step.number, step.op.name, time.perf_counter() - started))
                    if capture is not None:
                        self._capture(capture, env, [i for i in step.outputs if i in capture])
        finally:
            if arena is not None:
                self._give_arena(arena)
        results = []
        for index in self.outputs:
            value = env[index]
            declared = self.declared_dtype[index]
            if value.dtype != declared:
                value = value.astype(declared)
            elif not value.flags.writeable or any(np.may_share_memory(value, s) for s in sources):
                value = value.copy()  # never hand out a constant or a view of the caller's input
            results.append(value)
        return results

    def _capture(self, capture: MutableMapping[int, np.ndarray | None], env: list, indices: Sequence[int]) -> None:
        for index in indices:
            value, declared = env[index], self.declared_dtype[index]
            capture[index] = value.astype(declared) if value.dtype != declared else value

    @staticmethod
    def _call_kernel(step: _Step, args: list, arena):
        """The step's kernel on ``args``: a direct ufunc, into its planned arena slot, or allocating; kernel failures
        as NNRtErrors naming the step."""
        try:
            if step.ufunc is not None:
                try:
                    return step.ufunc(args[0], args[1])
                except ValueError:  # does not broadcast: the kernel raises its own error
                    return step.fn(*args, **step.kwargs)
            if arena is not None and step.out_view is not None:  # a slice of a concatenation's array
                slot, index, first = step.out_view
                buffer = arena[slot]
                if first and not slot_is_free(buffer):
                    buffer = arena[slot] = np.empty_like(buffer)
                view = buffer[index]
                result = step.fn(*args, **step.kwargs, out=view)
                if result is not view:  # the kernel took another path: its values go where they belong
                    np.copyto(view, result)
                return view
            if arena is not None and step.out_slot is not None:
                buffer = arena[step.out_slot]
                if not slot_is_free(buffer):  # still referenced (a view, a capture, an output): a new array
                    buffer = arena[step.out_slot] = np.empty_like(buffer)
                return step.fn(*args, **step.kwargs, out=buffer)
            return step.fn(*args, **step.kwargs)
        except NNRtError as exc:
            raise NNRtError(exc.code, f"{step.label}: {exc.message}") from None
        except _KERNEL_ERRORS as exc:
            raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED, f"{step.label} failed: {exc}") from exc

    def _run_plain(self, step: _Step, env: list, arena) -> None:
        """:meth:`_run_step` for the common step (``step.plain``): the same work with fewer branches -- the plan's
        own overhead was ~3 us of a small op's ~7 us."""
        result = self._call_kernel(step, [env[i] for i in step.inputs], arena)
        if type(result) is not np.ndarray:
            if isinstance(result, tuple):
                if len(result) != 1:
                    raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED,
                                    f"{step.label} produced {len(result)} outputs, the model declares 1")
                result = result[0]
            if type(result) is not np.ndarray:
                result = np.asarray(result)
        index, dtype, static = step.checks[0]
        if result.dtype != dtype or result.shape != static:
            self._check_value(index, result, f"{step.label} output #0", dtype)
        env[index] = result
        for index in step.release:
            env[index] = None

    def _run_step(self, step: _Step, env: list, arena) -> None:
        if step.plain:
            return self._run_plain(step, env, arena)
        if step.view_shape is not None:
            env[step.outputs[0]] = env[step.inputs[0]].reshape(step.view_shape)
            for index in step.release:
                env[index] = None
            return
        args = [env[i] for i in step.inputs]
        if step.dequantize_inputs is not None:
            out_dtype = FLOAT16 if self.float16 else FLOAT32
            args = [a if q is None else dequantize(a, *_quant_args(q, a.ndim), out_dtype=out_dtype)
                    for a, q in zip(args, step.dequantize_inputs)]
        result = self._call_kernel(step, args, arena)
        if isinstance(result, tuple):
            results = tuple(r if type(r) is np.ndarray else np.asarray(r) for r in result)
        else:
            results = (result if type(result) is np.ndarray else np.asarray(result),)
        if len(results) != len(step.outputs):
            raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED,
                            f"{step.label} produced {len(results)} outputs, the model declares {len(step.outputs)}")
        if step.fuse and results:
            first = results[0]
            if first.flags.writeable and not any(np.may_share_memory(first, a) for a in args):
                apply_fused_activation_inplace(first, step.fuse)
            else:
                results = (apply_fused_activation(first, step.fuse),) + results[1:]
        quantize_outputs = step.quantize_outputs
        for position, (value, (index, dtype, static)) in enumerate(zip(results, step.checks)):
            if quantize_outputs is not None and quantize_outputs[position] is not None:
                quant = quantize_outputs[position]
                scales, zero_points, axis = _quant_args(quant, value.ndim)
                value = quantize(value, self.declared_dtype[index], scales, zero_points, quant.num_bits[0], axis)
            if value.dtype != dtype or (value.shape != static if static is not None else True):
                self._check_value(index, value, f"{step.label} output #{position}", dtype)
            env[index] = value
        for index in step.release:
            env[index] = None

    def _check_value(self, index: int, value: np.ndarray, what: str, dtype: np.dtype) -> None:
        """The one dtype/shape check of every tensor that flows: declared dims (-1 = any) and dtype."""
        declared = self.dims[index]
        if value.dtype != dtype:
            raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER,
                            f"{what} (tensor {index}) has dtype {value.dtype}, the model declares {dtype}")
        if len(value.shape) != len(declared) or any(d not in (-1, s) for d, s in zip(declared, value.shape)):
            raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER,
                            f"{what} (tensor {index}) has shape {list(value.shape)}, the model declares {list(declared)}")


class CpuDevice(Device):
    """The native numpy device: every op through the kernels of nnrt_onnx.kernels."""

    id = 1
    name = "nnrt_onnx.cpu"
    device_type = OH_NN_DeviceType.OH_NN_CPU

    def supports(self, op: OH_NN_OperationType) -> bool:
        from ..kernels import get_kernel

        return get_kernel(op) is not None

    def prepare(self, model, options: CompileOptions) -> PreparedModel:
        return NativePreparedModel(model, options)


register_device(CpuDevice())
