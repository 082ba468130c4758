"""OH_NNModel in Python: tensors, operations, inputs/outputs and Finish, validated like the real runtime."""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Any, Sequence

import numpy as np

from .dtypes import element_size, from_numpy, to_numpy
from .enums import OH_NN_DataType, OH_NN_Format, OH_NN_OperationType, OH_NN_ReturnCode, OH_NN_TensorType
from .errors import NNRtError, forbidden, invalid
from .optable import op_spec, param_dtype
from .tensor import QuantParam, TensorDesc, check_dims, check_dtype
from .validation import check_io_indices, validate_operation


@dataclass
class ModelTensor:
    dtype: OH_NN_DataType
    dims: tuple[int, ...]
    tensor_type: OH_NN_TensorType = OH_NN_TensorType.OH_NN_TENSOR
    quant: QuantParam | None = None
    data: np.ndarray | None = None  # read-only, shaped like dims (1 element for a scalar)
    name: str = ""
    format: OH_NN_Format = OH_NN_Format.OH_NN_FORMAT_NHWC

    @property
    def is_dynamic(self) -> bool:
        return any(d == -1 for d in self.dims)

    @property
    def element_count(self) -> int:
        return 0 if self.is_dynamic else prod(self.dims)

    @property
    def byte_size(self) -> int:
        return self.element_count * element_size(self.dtype)

    @property
    def np_dtype(self) -> np.dtype:
        return to_numpy(self.dtype)


@dataclass(frozen=True)
class Operation:
    op: OH_NN_OperationType
    params: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    values: dict[str, Any] = field(compare=False)  # parameter values the model gave, by kernel keyword

    @property
    def spec(self):
        return op_spec(self.op)


def _as_indices(values: Sequence[int] | None, what: str) -> tuple[int, ...]:
    if values is None:
        raise invalid(f"{what} is NULL")
    try:
        return tuple(int(v) for v in values)
    except (TypeError, ValueError):
        raise invalid(f"{what} must be a sequence of tensor indices") from None


class Model:
    """A model under construction. Methods raise :class:`NNRtError` with the runtime's return code."""

    def __init__(self):
        self.tensors: list[ModelTensor] = []
        self.operations: list[Operation] = []
        self.inputs: tuple[int, ...] | None = None
        self.outputs: tuple[int, ...] | None = None
        self.finished = False
        self.name = ""  # extension: the source graph's name (NNRt models have none), kept by .nnrt files and exports

    # -- tensors ---------------------------------------------------------------------------------------------
    def _check_open(self, what: str) -> None:
        if self.finished:
            raise forbidden(f"{what} is not allowed after finish()")

    def _tensor(self, index: int) -> ModelTensor:
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.tensors):
            raise invalid(f"tensor index {index} is out of range (model has {len(self.tensors)} tensors)")
        return self.tensors[index]

    def add_tensor(self, desc: TensorDesc, name: str | None = None) -> int:
        """OH_NNModel_AddTensorToModel: an OH_NN_TENSOR of the desc's dtype and shape; returns its index."""
        self._check_open("add_tensor")
        if desc is None:
            raise invalid("tensor desc is NULL")
        dims = check_dims(desc.shape, desc.data_type)
        self.tensors.append(ModelTensor(desc.data_type, dims, name=name or desc.name or f"Tensor: {len(self.tensors)}"))
        return len(self.tensors) - 1

    def add_tensor_legacy(self, data_type: int, dims: Sequence[int], quant_param: QuantParam | None = None,
                          tensor_type: int = OH_NN_TensorType.OH_NN_TENSOR, name: str | None = None) -> int:
        """OH_NNModel_AddTensor (OH_NN_Tensor style): dtype, dims, optional quant params and tensor type."""
        self._check_open("add_tensor")
        dtype = check_dtype(data_type)
        try:
            ttype = OH_NN_TensorType(int(tensor_type))
        except (ValueError, TypeError):
            raise invalid(f"tensor type {tensor_type!r} is not an OH_NN_TensorType (0..162)") from None
        dims = check_dims(dims, dtype)
        if quant_param is not None:
            quant_param.validate()
        self.tensors.append(ModelTensor(dtype, dims, ttype, quant_param, name=name or f"Tensor: {len(self.tensors)}"))
        return len(self.tensors) - 1

    def set_tensor_data(self, index: int, data) -> None:
        """OH_NNModel_SetTensorData: exact byte length, once, not on a dynamic tensor; the bytes are copied."""
        if data is None:
            raise invalid("data buffer is NULL")
        raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(memoryview(data).cast("B"))
        if len(raw) == 0:
            raise invalid("data length is 0")
        self._check_open("set_tensor_data")
        tensor = self._tensor(index)
        if tensor.data is not None:
            raise invalid(f"tensor {index} already has data")
        if tensor.is_dynamic:
            raise forbidden(f"tensor {index} has dynamic dims {list(tensor.dims)} and cannot hold data")
        expected = max(tensor.element_count, 1) * element_size(tensor.dtype)
        if len(raw) != expected:
            raise invalid(f"tensor {index} ({tensor.dtype.name} {list(tensor.dims)}) needs exactly {expected} bytes, "
                          f"got {len(raw)}")
        array = np.frombuffer(raw, dtype=tensor.np_dtype).reshape(tensor.dims)
        tensor.data = array  # frombuffer over immutable bytes: read-only

    def attach_tensor_data(self, index: int, array: np.ndarray) -> None:
        """Like set_tensor_data but keeps ``array`` (e.g. a memory-mapped view) instead of copying it."""
        self._check_open("set_tensor_data")
        tensor = self._tensor(index)
        if tensor.data is not None:
            raise invalid(f"tensor {index} already has data")
        if tensor.is_dynamic:
            raise forbidden(f"tensor {index} has dynamic dims and cannot hold data")
        if array.dtype != tensor.np_dtype or array.size != max(tensor.element_count, 1):
            raise invalid(f"tensor {index}: data of {array.dtype} x {array.size} does not match "
                          f"{tensor.dtype.name} {list(tensor.dims)}")
        view = array.reshape(tensor.dims)
        view.flags.writeable = False
        tensor.data = view

    def set_tensor_type(self, index: int, tensor_type: int) -> None:
        """OH_NNModel_SetTensorType."""
        try:
            ttype = OH_NN_TensorType(int(tensor_type))
        except (ValueError, TypeError):
            raise invalid(f"tensor type {tensor_type!r} is not an OH_NN_TensorType (0..162)") from None
        self._check_open("set_tensor_type")
        self._tensor(index).tensor_type = ttype

    def set_tensor_quant_params(self, index: int, quant: QuantParam) -> None:
        """OH_NNModel_SetTensorQuantParams: equal-length scales/zero points/numBits, numBits 8."""
        if quant is None:
            raise invalid("quant param is NULL")
        self._check_open("set_tensor_quant_params")
        tensor = self._tensor(index)
        try:
            quant.validate()
        except NNRtError:
            tensor.quant = None  # the runtime clears them on failure
            raise
        tensor.quant = quant

    def set_tensor_name(self, index: int, name: str) -> None:
        """Extension: a readable name for diagnostics and conversion (NNRt itself numbers tensors)."""
        self._tensor(index).name = str(name)

    # -- operations ------------------------------------------------------------------------------------------
    def add_operation(self, op: int, params: Sequence[int] | None, inputs: Sequence[int] | None,
                      outputs: Sequence[int] | None) -> None:
        """OH_NNModel_AddOperation, validated by the op table like the real ops builders."""
        params = _as_indices(params, "paramIndices")
        inputs = _as_indices(inputs, "inputIndices")
        outputs = _as_indices(outputs, "outputIndices")
        self._check_open("add_operation")
        op, values = validate_operation(self.tensors, op, params, inputs, outputs)
        self.operations.append(Operation(op, params, inputs, outputs, values))

    def specify_inputs_and_outputs(self, inputs: Sequence[int] | None, outputs: Sequence[int] | None) -> None:
        """OH_NNModel_SpecifyInputsAndOutputs: once; order defines executor input/output numbering."""
        inputs = _as_indices(inputs, "inputIndices")
        outputs = _as_indices(outputs, "outputIndices")
        self._check_open("specify_inputs_and_outputs")
        if self.inputs is not None:
            raise forbidden("inputs and outputs were already specified")
        check_io_indices(self.tensors, inputs, outputs, "specify_inputs_and_outputs")
        self.inputs, self.outputs = inputs, outputs

    def finish(self) -> None:
        """OH_NNModel_Finish: needs >= 1 tensor, >= 1 operation and specified IO; checks required parameters."""
        if self.finished:
            raise forbidden("the model is already finished")
        if not self.tensors or not self.operations or self.inputs is None:
            raise forbidden("finish needs at least one tensor, one operation and specified inputs/outputs")
        for number, operation in enumerate(self.operations):
            missing = [p.tensor_type.name for p in operation.spec.params.values()
                       if p.required and not any(k in operation.values for k in p.keywords)]
            if missing:
                raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED,
                                f"operation #{number} {operation.op.name} lacks required parameter(s) {missing}")
        self.finished = True

    def get_available_operations(self, device_id: int) -> list[bool]:
        """OH_NNModel_GetAvailableOperations: one flag per operation, in insertion order."""
        from .runtime.device import get_device

        if not self.finished:
            raise forbidden("get_available_operations needs a finished model")
        device = get_device(device_id)
        return [device.supports(operation.op) for operation in self.operations]

    # -- conveniences (not in the C API) ---------------------------------------------------------------------
    def add_constant(self, array, name: str | None = None, quant: QuantParam | None = None) -> int:
        """An OH_NN_TENSOR holding ``array`` (weights, shape operands)."""
        array = np.asarray(array)
        index = self.add_tensor_legacy(from_numpy(array.dtype), array.shape, quant, name=name)
        self.set_tensor_data(index, np.ascontiguousarray(array))
        return index

    def add_param(self, tensor_type: int, value, dtype: int | None = None) -> int:
        """A parameter tensor of ``tensor_type`` holding ``value`` (python scalar, list or numpy array).

        The dtype is taken from the op table when not given: the parameter's dtype, or for parameters whose
        form depends on element count (pad mode vs pad list) the form matching the value's size.
        """
        ttype = OH_NN_TensorType(int(tensor_type))
        array = np.asarray(value)
        if dtype is None and not isinstance(value, np.ndarray):
            dtype = param_dtype(ttype, array.size)
        np_dtype = to_numpy(dtype) if dtype is not None else array.dtype
        array = array.astype(np_dtype)
        shape = array.shape if array.ndim else ()
        index = self.add_tensor_legacy(from_numpy(np_dtype), shape, tensor_type=ttype)
        self.set_tensor_data(index, np.ascontiguousarray(array))
        return index

    def producers(self) -> dict[int, int]:
        """Tensor index -> index of the operation that writes it."""
        return {t: i for i, operation in enumerate(self.operations) for t in operation.outputs}
