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

The fast paths (``nnrt_onnx.accel``) change the plan only where they are on (:func:`.specialise.fast_paths_on`):
their fusion passes merge steps (run by the pass manager, ``nnrt_onnx.passes``; ``pass_results`` says what each
did) and their specialisers bind steps to runners (:mod:`.specialise`). Off, the plan is the *reference plan*:
every operation its own step, run by its reference kernel (``nnrt_onnx.kernels``).
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
from ..passes import run_passes
from ..plan import Step, plan_structure
from .device import CompileOptions, Device, PreparedModel, register_device
from .graph import execution_order
from .invoke import apply_fused_activation, apply_fused_activation_inplace, bind
from .memory import plan_arena, slot_is_free
from .specialise import fast_paths_on, specialise_steps
from .calls import KERNEL_ERRORS, activated, checked_result, owns, prepare_call
from .threads import enter_run, leave_run, thread_count

FLOAT32 = np.dtype(np.float32)
FLOAT16 = np.dtype(np.float16)
_OP = OH_NN_OperationType
# ops whose output is their input's data with another shape: a view when both shapes are static
_VIEW_OPS = frozenset({_OP.OH_NN_OPS_RESHAPE, _OP.OH_NN_OPS_SQUEEZE, _OP.OH_NN_OPS_UNSQUEEZE,
                       _OP.OH_NN_OPS_EXPAND_DIMS, _OP.OH_NN_OPS_FLATTEN})
_KERNEL_ERRORS = KERNEL_ERRORS
_CHECKED_SIGNATURES = 64  # input signatures (dtypes, shapes) remembered as checked, per plan
# float arithmetic (and MATMUL) whose kernel is, once its dtype checks pass, exactly this ufunc on its two inputs
_UFUNC_OPS = {_OP.OH_NN_OPS_ADD: np.add, _OP.OH_NN_OPS_SUB: np.subtract, _OP.OH_NN_OPS_MUL: np.multiply,
              _OP.OH_NN_OPS_DIV: np.true_divide, _OP.OH_NN_OPS_MATMUL: np.matmul}
_FLOATS = frozenset({np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)})


def _quant_args(q, ndim):
    axis = None
    if q.count > 1:
        axis = q.axis if q.axis is not None else 0
        axis = axis % max(ndim, 1)
    return q.scales, q.zero_points, axis


def _with_releases(steps: list[Step], keep: set[int]) -> list[Step]:
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
        self.dequantized_dtype = FLOAT16 if self.float16 else FLOAT32  # what quantized inputs reach kernels as
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
        self.steps: list[Step] = []
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
            step = Step(number, label, operation.op, bound.kernel, bound.kwargs, bound.fuse,
                         tuple(operation.inputs), tuple(operation.outputs),
                         tuple(None if native_quant else tensors[t].quant for t in operation.inputs),
                         tuple(None if native_quant else tensors[t].quant for t in operation.outputs))
            if operation.spec.quant == "dequantize_float64":  # (the op table: quantized arithmetic in float64)
                step.dequantize_dtype = np.dtype(np.float64)
            step.release = tuple(t for t in operation.inputs if last_use.get(t) == position and t not in keep)
            step.checks = tuple((t, self.compute_dtype[t], self.static[t]) for t in operation.outputs)
            step.accepts_out = bound.accepts_out
            self._plan_view(step)
            self._plan_ufunc(step)
            self.steps.append(step)
        # every operation on its own, with its reference kernel: the steps that capture re-runs for the tensors a
        # fused step hides; the plan's own steps are copies the fast paths may rewrite
        self._plain_steps = self.steps
        self.steps = [copy.copy(step) for step in self._plain_steps]
        self.fast_paths = fast_paths_on(options.extensions)
        self.pass_results = []
        if self.fast_paths:
            from .. import accel

            accel.load()
            self.pass_results = run_passes(self, accel.fusion_passes(), plan_structure)
            # a fused step runs at its first step's position: each step releases exactly the tensors whose last
            # reader it is in the final list (not what the steps it absorbed released later)
            self.steps = _with_releases(self.steps, keep)
        self._arena_sizes = plan_arena(self)
        for step in self.steps + self._plain_steps:
            step.plain = (step.view_shape is None and step.dequantize_inputs is None and step.quantize_outputs is None
                          and not step.fuse and len(step.outputs) == 1)
        if self.fast_paths:
            specialise_steps(self, self.steps)
        self._hidden: dict[int, Step] = {t: step for step in self.steps for t in step.hidden()}
        self._fused_writer: dict[int, Step] = {t: step for step in self.steps if len(step.group) > 1
                                               for t in step.outputs}
        self._arenas: list[list[np.ndarray]] = []
        self._arena_lock = threading.Lock()
        # the flat list of prepared calls a run makes (runtime.calls), and the input signatures already checked
        self._calls = [prepare_call(self, step) for step in self.steps]
        self._input_targets = [(index, self.compute_dtype[index]) for index in self.inputs]
        self._checked_inputs: set = set()

    def _constant(self, index, tensor) -> np.ndarray:
        """The constant in its compute dtype, as a read-only array registered with the kernels (which may then
        keep pre-packed forms of it, see kernels.register_constant)."""
        data = tensor.data
        target = self.compute_dtype[index]
        value = (data.astype(target) if target is not None and data.dtype != target else data).view()
        value.flags.writeable = False
        register_constant(value)
        return value

    def _plan_view(self, step: Step) -> None:
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

    def _plan_ufunc(self, step: Step) -> None:
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
        entry is set to a copy of that tensor's value (declared dtype) once it is known -- intermediates included.
        The run is the production plan's (its fusions and runners, so a capture sees what they compute); a tensor
        that a fused step hides (an intermediate of the operations it merged, :meth:`hidden_by`) is computed by
        re-running those operations' reference steps alone, on the fused step's inputs, just before it.
        ``profile`` (optional, a list): one ``(operation number, op name, seconds)`` is appended per step."""
        if len(inputs) != len(self.inputs):
            raise invalid(f"the model has {len(self.inputs)} inputs, got {len(inputs)}")
        env = self._template.copy()
        signature = tuple([(a.dtype, a.shape) if type(a) is np.ndarray else None for a in inputs])
        if signature in self._checked_inputs:  # (the checks below passed for these dtypes and shapes before)
            for (index, target), array in zip(self._input_targets, inputs):
                env[index] = array if array.dtype == target else array.astype(target)
        else:
            for position, (index, array) in enumerate(zip(self.inputs, inputs)):
                array = np.asarray(array)
                self._check_value(index, array, f"input #{position}", self.declared_dtype[index])
                target = self.compute_dtype[index]
                env[index] = array.astype(target) if array.dtype != target else array
            if None not in signature:
                if len(self._checked_inputs) >= _CHECKED_SIGNATURES:
                    self._checked_inputs.clear()
                self._checked_inputs.add(signature)
        sources = [env[i] for i in self.inputs]  # (the plan releases inputs after their last use)
        traced = capture is not None or profile is not None
        if capture is not None:
            self._capture(capture, env, [i for i in capture if env[i] is not None])
            hiding = {id(self._hidden[t]) for t in capture if t in self._hidden}
        arena = self._take_arena() if self._arena_sizes else None
        threads = self.threads
        enter_run(threads)
        try:
            with np.errstate(all="ignore"):
                if not traced:
                    for call in self._calls:
                        call(env, arena)
                else:
                    for step, call in zip(self.steps, self._calls):
                        if capture is not None and id(step) in hiding:
                            self._capture_hidden(step, env, capture)
                        if profile is not None:
                            started = time.perf_counter()
                        call(env, arena)
                        if profile is not None:
                            profile.append((step.number, step.op.name, time.perf_counter() - started))
                        if capture is not None:
                            self._capture(capture, env, [i for i in step.outputs if i in capture])
        finally:
            leave_run(threads)
            if arena is not None:
                self._give_arena(arena)
        results = []
        for index in self.outputs:
            value = env[index]
            declared = self.declared_dtype[index]
            if value.dtype != declared:
                value = value.astype(declared)
            elif value.base is None and value.flags.writeable and all(value is not s for s in sources):
                pass  # owns its data: neither a constant nor the caller's input, nor a view of them
            elif not value.flags.writeable or any(np.may_share_memory(value, s) for s in sources):
                value = value.copy()  # never hand out a constant or a view of the caller's input
            results.append(value)
        return results

    def hidden_by(self, tensor: int) -> str | None:
        """The label of the fused step that hides ``tensor`` -- an intermediate of the operations it merged, which
        no step of the plan writes (a capture computes it by re-running their reference steps) -- or None."""
        return _fused_label(self._hidden.get(tensor))

    def written_by_fused(self, tensor: int) -> str | None:
        """The label of the fused step (several operations merged by a fusion pass) that writes ``tensor``, or
        None: where a value diverges and a fused step wrote it, that step's fast path is the suspect."""
        return _fused_label(self._fused_writer.get(tensor))

    def _capture(self, capture: MutableMapping[int, np.ndarray | None], env: list, indices: Sequence[int]) -> None:
        for index in indices:  # copies: the plan's arena arrays are written again by later steps
            capture[index] = np.array(env[index], dtype=self.declared_dtype[index], copy=True)

    def _capture_hidden(self, step: Step, env: list, capture: MutableMapping[int, np.ndarray | None]) -> None:
        """The tensors ``step`` hides that ``capture`` wants: its operations' reference steps run on a copy of the
        store (their inputs are there: ``step`` has not run yet), allocating their outputs."""
        local, wanted = env.copy(), {t for t in step.hidden() if t in capture}
        for plain in step.group:
            self._run_step(plain, local, None)
            self._capture(capture, local, [t for t in plain.outputs if t in wanted])

    @staticmethod
    def _call_kernel(step: Step, args: list, arena):
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

    def _run_plain(self, step: Step, env: list, arena) -> None:
        """:meth:`_run_step` for the common step (``step.plain``): the same work with fewer branches -- the plan's
        own overhead was ~3 us of a small op's ~7 us."""
        result = self._call_kernel(step, [env[i] for i in step.inputs], arena)
        index, dtype, static = step.checks[0]
        if type(result) is not np.ndarray or result.dtype != dtype or result.shape != static:
            result = checked_result(result, step, self._check_value, index, dtype, static, f"{step.label} output #0")
        env[index] = result
        for index in step.release:
            env[index] = None

    def _run_step(self, step: Step, env: list, arena) -> None:
        if step.plain:
            return self._run_plain(step, env, arena)
        if step.view_shape is not None:
            env[step.outputs[0]] = env[step.inputs[0]].reshape(step.view_shape)
            for index in step.release:
                env[index] = None
            return
        args = [env[i] for i in step.inputs]
        if step.dequantize_inputs is not None:
            out_dtype = step.dequantize_dtype or self.dequantized_dtype
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
        if step.then and results:
            results = (activated(step.then, results[0], args, owns(step, results[0], arena)),) + results[1:]
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


def _fused_label(step: Step | None) -> str | None:
    if step is None:
        return None
    merged = ", ".join(f"#{s.number} {s.op.name[len('OH_NN_OPS_'):]}" for s in step.group)
    return f"{step.label} (fused: operations {merged})"


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
