"""Build, compile and run a one-operation NNRt model: the harness of the kernel tests (and handy in a REPL)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..compilation import Compilation
from ..dtypes import from_numpy
from ..enums import OH_NN_OperationType, OH_NN_TensorType
from ..executor import Executor
from ..model import Model
from ..optable import op_spec
from ..runtime.invoke import bind
from ..tensor import QuantParam
from ..validation import validate_operation


def _tensor_type(key) -> OH_NN_TensorType:
    return OH_NN_TensorType[key] if isinstance(key, str) else OH_NN_TensorType(int(key))


def single_op_model(op, inputs: Sequence[np.ndarray], params: Mapping[Any, Any], output_specs,
                    input_quant: Mapping[int, QuantParam], output_quant: Mapping[int, QuantParam],
                    constant_inputs: Sequence[int] = ()) -> Model:
    """A finished model with one operation; inputs listed in ``constant_inputs`` are baked in as constants."""
    model = Model()
    input_indices, model_inputs = [], []
    for position, array in enumerate(inputs):
        quant = input_quant.get(position)
        if position in constant_inputs:
            index = model.add_constant(array, name=f"input{position}", quant=quant)
        else:
            index = model.add_tensor_legacy(from_numpy(array.dtype), array.shape, quant, name=f"input{position}")
            model_inputs.append(index)
        input_indices.append(index)
    param_indices = [model.add_param(_tensor_type(key), value) for key, value in params.items()]
    output_indices = [model.add_tensor_legacy(from_numpy(dtype), shape, output_quant.get(position), name=f"output{position}")
                      for position, (dtype, shape) in enumerate(output_specs)]
    model.add_operation(op, param_indices, input_indices, output_indices)
    model.specify_inputs_and_outputs(model_inputs or input_indices[:1], output_indices)
    model.finish()
    return model


def _infer_outputs(op, inputs, params, output_dtypes, input_quant, output_quant):
    """Output dtypes and shapes, by validating the operation and calling its kernel once on float inputs."""
    probe = Model()
    input_indices = [probe.add_constant(a) for a in inputs]  # with data: some checks read operands (CAST)
    param_indices = [probe.add_param(_tensor_type(k), v) for k, v in params.items()]
    output_indices = [probe.add_tensor_legacy(from_numpy(inputs[0].dtype), ()) for _ in range(op_spec(op).outputs[0])]
    validated, values = validate_operation(probe.tensors, op, param_indices, input_indices, output_indices)
    dtypes = tuple(np.dtype(d) for d in output_dtypes) if output_dtypes else tuple(
        inputs[0].dtype for _ in output_indices)
    bound = bind(op, values, [a.dtype for a in inputs], dtypes, [() for _ in dtypes],  # shapes: being inferred
                 [input_quant.get(i) for i in range(len(inputs))], [output_quant.get(i) for i in range(len(dtypes))])
    if bound is None:
        return None
    results = bound(*inputs)
    return [(np.dtype(output_dtypes[i] if output_dtypes else np.asarray(v).dtype), np.shape(v))
            for i, v in enumerate(results)]


def run_op(op, inputs: Sequence[np.ndarray], params: Mapping[Any, Any] | None = None, *, float16: bool = False,
           input_quant: Mapping[int, QuantParam] | None = None, output_quant: Mapping[int, QuantParam] | None = None,
           output_dtypes: Sequence[Any] | None = None, output_shapes: Sequence[Sequence[int]] | None = None,
           constant_inputs: Sequence[int] = (), reference_plan: bool = False) -> list[np.ndarray]:
    """Run ``op`` once through Model -> Compilation -> Executor on the CPU device and return its outputs
    (``reference_plan``: compiled to the reference plan, its reference kernel alone -- the extension config
    ``nnrt_onnx.reference_plan``).

    ``params`` maps OH_NN_TensorType (member, value or name) to a python value or numpy array; the parameter
    dtype comes from the op table unless an array with an explicit dtype is given. Output dtypes and shapes
    default to what the kernel produces (declare them with ``output_dtypes``/``output_shapes``, -1 allowed).
    Quantized operands: give integer arrays and their ``input_quant``; ``output_quant`` with ``output_dtypes``.
    """
    op = OH_NN_OperationType[op] if isinstance(op, str) else OH_NN_OperationType(int(op))
    params = dict(params or {})
    input_quant, output_quant = dict(input_quant or {}), dict(output_quant or {})
    inputs = [np.asarray(a) for a in inputs]
    if output_shapes is not None:
        if output_dtypes is None:
            raise ValueError("output_shapes needs output_dtypes")
        specs = [(np.dtype(d), tuple(s)) for d, s in zip(output_dtypes, output_shapes)]
    else:
        native = op_spec(op).quant == "native"
        float_inputs = [a if native else _dequantized(a, input_quant.get(i)) for i, a in enumerate(inputs)]
        specs = _infer_outputs(op, float_inputs, params, output_dtypes, input_quant, output_quant)
        if specs is None:
            specs = [(inputs[0].dtype, (-1,) * inputs[0].ndim)]
    model = single_op_model(op, inputs, params, specs, input_quant, output_quant, constant_inputs)
    compilation = Compilation(model)
    compilation.enable_float16(float16)
    if reference_plan:
        compilation.add_extension_config("nnrt_onnx.reference_plan", b"1")
    compilation.build()
    executor = Executor(compilation)
    runtime_inputs = [a for i, a in enumerate(inputs) if i not in constant_inputs] or inputs[:1]
    return executor.run_arrays(runtime_inputs)


def _dequantized(array: np.ndarray, quant: QuantParam | None) -> np.ndarray:
    if quant is None:
        return array
    from ..dtypes import dequantize

    axis = None if quant.count == 1 else (quant.axis or 0)
    return dequantize(array, quant.scales, quant.zero_points, axis)
