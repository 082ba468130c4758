"""The native plan as a flat list of prepared calls: one closure per step, ``call(env, arena)``, bound once at
compile time to everything the step needs (its kernel or ufunc, keywords, tensor indices, arena slot, planned
output check, releases), so that a run is ``for call in calls: call(env, arena)``.

A step's generic path (``NativePreparedModel._run_step``: dequantization, fused activation, several outputs,
quantization) is the reference of what a call does; the calls only drop work the plan proves useless: a ufunc step
whose inputs' static shapes broadcast to its static output shape (its dtypes are checked at compile time) skips the
output check; a reshape-like step is its view; everything else keeps the check of its output's dtype and shape.
The per-step cost of the engine itself falls from ~3-16 us to ~0.3-1 us (docs/performance.md, issue 27)."""
from __future__ import annotations

import numpy as np

from ..enums import OH_NN_ReturnCode
from ..errors import NNRtError
from ..plan import Step
from .invoke import apply_fused_activation_inplace

KERNEL_ERRORS = (ValueError, IndexError, TypeError, ZeroDivisionError, FloatingPointError)


def _failed(step: Step, exc: Exception) -> NNRtError:
    if isinstance(exc, NNRtError):
        return NNRtError(exc.code, f"{step.label}: {exc.message}")
    return NNRtError(OH_NN_ReturnCode.OH_NN_FAILED, f"{step.label} failed: {exc}")


def _broadcast_is_static(prepared, step: Step) -> bool:
    """The step's inputs have static shapes that broadcast to exactly its static output shape, of rank 1 or more (a
    ufunc of 0-d arrays gives a numpy scalar, which the checked path makes an array)."""
    shapes = [prepared.static[i] for i in step.inputs]
    out = prepared.static[step.outputs[0]]
    if not out or any(s is None for s in shapes):
        return False
    try:
        return tuple(np.broadcast_shapes(*shapes)) == tuple(out)
    except ValueError:
        return False


def activated(then, result: np.ndarray, args, owned: bool) -> np.ndarray:
    """``result`` with the activations ``then`` (``Step.then``) applied: in place where the engine owns it (an arena
    array, a fresh array that is none of the step's inputs), else to a copy."""
    if not owned and not (result.flags.writeable and result.base is None
                          and all(result is not a and a.base is not result for a in args)):
        result = np.array(result, copy=True)
    for fn in then:
        result = fn(result)
    return result


def owns(step: Step, result: np.ndarray, arena) -> bool:
    """Whether ``result`` of ``step`` is the engine's own array: its arena slot, or its slice of an assembled
    concatenation (``_call_kernel`` returns that slice)."""
    if arena is None:
        return False
    if step.out_view is not None:
        return True
    return step.out_slot is not None and result is arena[step.out_slot]


def prepare_call(prepared, step: Step):
    """The closure running ``step`` of ``prepared`` (a NativePreparedModel) on a run's store and arena."""
    release, then = step.release, step.then
    if step.view_shape is not None:
        source, target, shape = step.inputs[0], step.outputs[0], step.view_shape

        def view(env, arena):
            env[target] = env[source].reshape(shape)
            for index in release:
                env[index] = None
        return view
    if (step.ufunc is not None and step.fuse in (1, 2) and not then and step.dequantize_inputs is None
            and step.quantize_outputs is None and len(step.outputs) == 1 and len(step.inputs) == 2
            and _broadcast_is_static(prepared, step)):
        # a float ADD/SUB/MUL/DIV with NNRt's fused RELU/RELU6: the ufunc's new array, the activation in place
        ufunc, (a, b), fuse = step.ufunc, step.inputs, step.fuse
        out = step.outputs[0]

        def binary_fused(env, arena):
            result = ufunc(env[a], env[b])
            env[out] = apply_fused_activation_inplace(result, fuse)
            for index in release:
                env[index] = None
        return binary_fused
    if not step.plain:
        run_step = prepared._run_step

        def general(env, arena):
            run_step(step, env, arena)
        return general
    inputs = step.inputs
    target, dtype, static = step.checks[0]
    check = prepared._check_value
    label = f"{step.label} output #0"
    fn, kwargs = step.fn, step.kwargs
    if step.ufunc is not None and len(inputs) == 2 and _broadcast_is_static(prepared, step):
        ufunc, (a, b) = step.ufunc, inputs  # dtypes checked at compile time, shapes proven: nothing can go wrong
        if then:
            def binary_activated(env, arena):
                result = ufunc(env[a], env[b])
                for fn in then:
                    result = fn(result)  # (a ufunc's result is a new array)
                env[target] = result
                for index in release:
                    env[index] = None
            return binary_activated

        def binary(env, arena):
            env[target] = ufunc(env[a], env[b])
            for index in release:
                env[index] = None
        return binary
    if step.ufunc is None and step.out_view is None and step.out_slot is None and not kwargs and len(inputs) == 1 \
            and not then:
        (a,) = inputs  # a one-input runner (e.g. a bare ufunc a specialiser returned)

        def unary(env, arena):
            try:
                result = fn(env[a])
            except (NNRtError,) + KERNEL_ERRORS as exc:
                raise _failed(step, exc) from exc
            if type(result) is not np.ndarray or result.dtype != dtype or result.shape != static:
                result = checked_result(result, step, check, target, dtype, static, label)
            env[target] = result
            for index in release:
                env[index] = None
        return unary
    call_kernel = prepared._call_kernel
    if then:
        def plain_activated(env, arena):
            args = [env[i] for i in inputs]
            result = call_kernel(step, args, arena)
            if type(result) is not np.ndarray or result.dtype != dtype or result.shape != static:
                result = checked_result(result, step, check, target, dtype, static, label)
            env[target] = activated(then, result, args, owns(step, result, arena))
            for index in release:
                env[index] = None
        return plain_activated

    def plain(env, arena):
        result = call_kernel(step, [env[i] for i in inputs], arena)
        if type(result) is not np.ndarray or result.dtype != dtype or result.shape != static:
            result = checked_result(result, step, check, target, dtype, static, label)
        env[target] = result
        for index in release:
            env[index] = None
    return plain


def checked_result(result, step, check, target, dtype, static, label):
    """A plain step's result as one array of the declared dtype and shape, or the engine's error."""
    if type(result) is not np.ndarray:
        if isinstance(result, tuple):
            if len(result) != 1:
                raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED,
                                f"{step.label} produced {len(result)} outputs, the model declares 1")
            result = result[0]
        if type(result) is not np.ndarray:
            result = np.asarray(result)
    if result.dtype != dtype or result.shape != static:
        check(target, result, label, dtype)
    return result


__all__ = ["KERNEL_ERRORS", "activated", "checked_result", "owns", "prepare_call"]
