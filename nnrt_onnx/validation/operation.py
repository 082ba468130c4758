"""Checks of ``OH_NNModel_AddOperation``: generic IO rules, then the op's entry in the op table.

Every failure is ``OH_NN_INVALID_PARAMETER`` (as in the real builders); the message names the op and the
offending tensor so a user can fix the model without reading the runtime's source.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..enums import OH_NN_OperationType, OH_NN_TensorType
from ..errors import invalid
from ..optable import OpSpec, ParamSpec, op_spec
from . import op_checks

if TYPE_CHECKING:
    from ..model import ModelTensor

MAX_INDICES = 200


def check_io_indices(tensors: Sequence[ModelTensor], inputs: Sequence[int], outputs: Sequence[int], what: str) -> None:
    """Shared by AddOperation and SpecifyInputsAndOutputs: counts, ranges, OH_NN_TENSOR type, disjointness."""
    for role, indices in (("input", inputs), ("output", outputs)):
        if not 1 <= len(indices) <= MAX_INDICES:
            raise invalid(f"{what}: {len(indices)} {role} indices (must be 1..{MAX_INDICES})")
        for index in indices:
            if not 0 <= index < len(tensors):
                raise invalid(f"{what}: {role} index {index} is out of range (model has {len(tensors)} tensors)")
            if tensors[index].tensor_type != OH_NN_TensorType.OH_NN_TENSOR:
                raise invalid(f"{what}: {role} tensor {index} has type {tensors[index].tensor_type.name}, "
                              f"operands must be OH_NN_TENSOR")
    both = set(inputs) & set(outputs)
    if both:
        raise invalid(f"{what}: tensor(s) {sorted(both)} used as both input and output")


def _python_value(array: np.ndarray, scalar: bool) -> Any:
    flat = array.reshape(-1)
    values = flat.tolist()
    return values[0] if scalar else values


def decode_param(entry: OpSpec, spec: ParamSpec, tensor: ModelTensor) -> tuple[str, Any]:
    """Validate one parameter tensor against its spec; return (kernel keyword, python value)."""
    where = f"{entry.op.name}: parameter {spec.tensor_type.name}"
    count = tensor.element_count
    variant = spec.variant_for(count)
    if variant is None:
        forms = ", ".join(f"{v.count} x {v.dtype.name}" for v in spec.variants)
        raise invalid(f"{where} has {count} elements; accepted forms: {forms}")
    if tensor.dtype != variant.dtype:
        raise invalid(f"{where} must be {variant.dtype.name}, got {tensor.dtype.name}")
    if variant.count is not None and count != variant.count:
        raise invalid(f"{where} must have {variant.count} element(s), got {count} (dims {list(tensor.dims)})")
    if variant.rank is not None and len(tensor.dims) != variant.rank:
        raise invalid(f"{where} must have rank {variant.rank}, got dims {list(tensor.dims)}")
    if tensor.data is None:
        raise invalid(f"{where} has no data (set it with set_tensor_data before add_operation)")
    if tensor.data.size == 0:
        raise invalid(f"{where} is empty")
    value = _python_value(tensor.data, variant.scalar)
    if variant.value_range is not None:
        lo, hi = variant.value_range
        for v in ([value] if variant.scalar else value):
            if not lo <= v <= hi:
                raise invalid(f"{where} value {v} is outside {lo}..{hi}")
    return variant.to, value


def validate_operation(tensors: Sequence[ModelTensor], op: int, params: Sequence[int], inputs: Sequence[int],
                       outputs: Sequence[int]) -> tuple[OH_NN_OperationType, dict[str, Any]]:
    """Validate an AddOperation call; return the op and the parameter values the model gave, by kernel keyword."""
    try:
        op = OH_NN_OperationType(int(op))
    except (ValueError, TypeError):
        raise invalid(f"operation type {op!r} is not an OH_NN_OperationType "
                      f"({min(OH_NN_OperationType).value}..{max(OH_NN_OperationType).value})") from None
    check_io_indices(tensors, inputs, outputs, op.name)
    for index in params:
        if not 0 <= index < len(tensors):
            raise invalid(f"{op.name}: parameter index {index} is out of range (model has {len(tensors)} tensors)")
    entry = op_spec(op)
    for role, given, (lo, hi) in (("inputs", inputs, entry.inputs), ("outputs", outputs, entry.outputs)):
        if not lo <= len(given) <= hi:
            expected = str(lo) if lo == hi else f"{lo}..{hi}"
            raise invalid(f"{op.name} takes {expected} {role}, got {len(given)}")
    if len(params) > entry.param_max:
        raise invalid(f"{op.name} takes at most {entry.param_max} parameter tensors, got {len(params)}")
    for position, rank in entry.input_ranks.items():
        dims = tensors[inputs[position]].dims
        if len(dims) != rank:
            raise invalid(f"{op.name}: input #{position} must have rank {rank}, got dims {list(dims)}")

    values: dict[str, Any] = {}
    given: list[tuple[OH_NN_TensorType, Any]] = []
    for index in params:
        tensor = tensors[index]
        spec = entry.params.get(tensor.tensor_type)
        if spec is None:
            accepted = ", ".join(t.name for t in entry.params) or "none"
            raise invalid(f"{op.name}: tensor {index} has type {tensor.tensor_type.name}, which is not a parameter "
                          f"of this op (accepted: {accepted})")
        keyword, value = decode_param(entry, spec, tensor)
        if spec.append and keyword in values:
            values[keyword] = list(values[keyword]) + list(value)
        else:
            values[keyword] = value
        given.append((tensor.tensor_type, value))
    for check in entry.checks:
        getattr(op_checks, check)(entry, tensors, inputs, values, given)
    return op, values
