"""The native CPU device (id 1): runs a finished model through the numpy kernels.

Cross-cutting work happens here once for every op: default parameters and the fused activation (through
runtime.invoke, which constant folding shares), (de)quantization around kernels, EnableFloat16, the check of each
output's dtype and shape, and capturing intermediate tensors (``run(inputs, capture)``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, MutableMapping, Sequence

import numpy as np

from ..dtypes import dequantize, quantize
from ..enums import OH_NN_DeviceType, OH_NN_OperationType, OH_NN_ReturnCode
from ..errors import NNRtError, invalid, unsupported
from .device import CompileOptions, Device, PreparedModel, register_device
from .graph import execution_order
from .invoke import BoundKernel, bind

FLOAT32 = np.dtype(np.float32)
FLOAT16 = np.dtype(np.float16)


def _quant_args(q, ndim):
    axis = None
    if q.count > 1:
        axis = q.axis if q.axis is not None else 0
        axis = axis % max(ndim, 1)
    return q.scales, q.zero_points, axis


@dataclass
class _Step:
    number: int  # operation index in the model
    label: str
    kernel: BoundKernel
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    dequantize_inputs: tuple[Any, ...]  # QuantParam or None per input
    quantize_outputs: tuple[Any, ...]
    release: tuple[int, ...]  # tensors dead after this step


class NativePreparedModel(PreparedModel):
    """A model compiled for the CPU device."""

    supports_capture = True

    def __init__(self, model, options):
        self.model = model
        self.float16 = options.float16
        order = execution_order(model)
        tensors = model.tensors
        # EnableFloat16: float32 work runs in float16; model IO stays float32.
        self.compute_dtype = {i: (FLOAT16 if self.float16 and t.np_dtype == FLOAT32 and t.quant is None else t.np_dtype)
                              for i, t in enumerate(tensors) if t.dtype != 0}
        self.constants = {i: self._constant(i, t) for i, t in enumerate(tensors) if t.data is not None}
        last_use: dict[int, int] = {}
        for position, number in enumerate(order):
            for t in model.operations[number].inputs:
                last_use[t] = position
        keep = set(model.outputs) | set(self.constants)
        self.steps: list[_Step] = []
        for position, number in enumerate(order):
            operation = model.operations[number]
            label = f"operation #{number} {operation.op.name}"
            kernel = bind(operation.op, operation.values,
                          [self.compute_dtype.get(t) for t in operation.inputs],
                          [self.compute_dtype.get(t) for t in operation.outputs],
                          [tensors[t].dims for t in operation.outputs],
                          [tensors[t].quant for t in operation.inputs],
                          [tensors[t].quant for t in operation.outputs])
            if kernel is None:
                raise unsupported(f"{label}: the native CPU device has no kernel for {operation.op.name} yet")
            native_quant = operation.spec.quant == "native"
            release = tuple(t for t in operation.inputs if last_use.get(t) == position and t not in keep)
            self.steps.append(_Step(
                number, label, kernel, operation.inputs, operation.outputs,
                tuple(None if native_quant else tensors[t].quant for t in operation.inputs),
                tuple(None if native_quant else tensors[t].quant for t in operation.outputs),
                release))

    def _constant(self, index, tensor) -> np.ndarray:
        data = tensor.data
        target = self.compute_dtype.get(index)
        return data.astype(target) if target is not None and data.dtype != target else data

    # -- running ---------------------------------------------------------------------------------------------
    def run(self, inputs: Sequence[np.ndarray], capture: MutableMapping[int, np.ndarray | None] | None = None
            ) -> list[np.ndarray]:
        """Run once. ``capture`` (optional) maps the indices of the tensors to keep to anything (None); each
        entry is set to that tensor's value (declared dtype) once it is known -- intermediates included."""
        model = self.model
        if len(inputs) != len(model.inputs):
            raise invalid(f"the model has {len(model.inputs)} inputs, got {len(inputs)}")
        env: dict[int, np.ndarray] = dict(self.constants)
        for position, (index, array) in enumerate(zip(model.inputs, inputs)):
            array = np.asarray(array)
            self._check_value(index, array, f"input #{position}", model.tensors[index].np_dtype)
            target = self.compute_dtype[index]
            env[index] = array.astype(target) if array.dtype != target else array
        if capture is not None:
            self._capture(capture, env, [i for i in capture if i in env])
        for step in self.steps:
            self._run_step(step, env)
            if capture is not None:
                self._capture(capture, env, [i for i in step.outputs if i in capture])
        results = []
        for index in model.outputs:
            value = env[index]
            declared = model.tensors[index].np_dtype
            results.append(value.astype(declared) if value.dtype != declared else value)
        return results

    def _capture(self, capture: MutableMapping[int, np.ndarray | None], env: dict[int, np.ndarray],
                 indices: Sequence[int]) -> None:
        for index in indices:
            value, declared = env[index], self.model.tensors[index].np_dtype
            capture[index] = value.astype(declared) if value.dtype != declared else value

    def _run_step(self, step: _Step, env: dict[int, np.ndarray]) -> None:
        tensors = self.model.tensors
        args = []
        for index, quant in zip(step.inputs, step.dequantize_inputs):
            value = env[index]
            if quant is not None:
                value = dequantize(value, *_quant_args(quant, value.ndim), out_dtype=FLOAT16 if self.float16 else FLOAT32)
            args.append(value)
        try:
            results = step.kernel(*args)
        except NNRtError as exc:
            raise NNRtError(exc.code, f"{step.label}: {exc.message}") from None
        except (ValueError, IndexError, TypeError, ZeroDivisionError, FloatingPointError) as exc:
            raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED, f"{step.label} failed: {exc}") from exc
        if len(results) != len(step.outputs):
            raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED,
                            f"{step.label} produced {len(results)} outputs, the model declares {len(step.outputs)}")
        for position, (index, value, quant) in enumerate(zip(step.outputs, results, step.quantize_outputs)):
            if quant is not None:
                scales, zero_points, axis = _quant_args(quant, value.ndim)
                value = quantize(value, tensors[index].np_dtype, scales, zero_points, quant.num_bits[0], axis)
            self._check_value(index, value, f"{step.label} output #{position}", self.compute_dtype[index])
            env[index] = value
        for index in step.release:
            env.pop(index, None)

    def _check_value(self, index: int, value: np.ndarray, what: str, dtype: np.dtype) -> None:
        """The one dtype/shape check of every tensor that flows: declared dims (-1 = any) and dtype."""
        declared = self.model.tensors[index].dims
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
