"""Named per-op rules that do not fit the declarative entry; an entry lists the ones it needs in ``checks``."""
from __future__ import annotations

from typing import Any

from ..enums import OH_NN_DataType, OH_NN_TensorType
from ..errors import invalid


def layer_norm_shapes(entry, tensors, inputs, values, given) -> None:
    """1 <= beginNormAxis < rank(input); gamma and beta shapes equal input.shape[beginNormAxis:]."""
    axis = values.get("begin_norm_axis", entry.defaults["begin_norm_axis"])
    in_dims = tensors[inputs[0]].dims
    if not 1 <= axis < len(in_dims):
        raise invalid(f"{entry.op.name}: beginNormAxis {axis} must lie in [1, {len(in_dims)}) for input dims {list(in_dims)}")
    expected = tuple(in_dims[axis:])
    for position, role in ((1, "gamma"), (2, "beta")):
        dims = tuple(tensors[inputs[position]].dims)
        if dims != expected:
            raise invalid(f"{entry.op.name}: {role} dims {list(dims)} must equal input dims from beginNormAxis {list(expected)}")


def full_connection_axis(entry, tensors, inputs, values, given: list[tuple[OH_NN_TensorType, Any]]) -> None:
    """AXIS forces useAxis on; an explicit USE_AXIS=false together with AXIS (either order) is rejected."""
    kinds = [t for t, _ in given]
    if OH_NN_TensorType.OH_NN_FULL_CONNECTION_AXIS in kinds:
        for tensor_type, value in given:
            if tensor_type == OH_NN_TensorType.OH_NN_FULL_CONNECTION_USE_AXIS and not value:
                raise invalid(f"{entry.op.name}: AXIS given together with USE_AXIS=false")
        values["use_axis"] = True


def cast_target_type(entry, tensors, inputs, values, given) -> None:
    """Input #1 holds the target OH_NN_DataType; the builder reads its data at AddOperation."""
    target = tensors[inputs[1]]
    if target.data is None or target.data.size == 0:
        raise invalid(f"{entry.op.name}: input #1 (target data type) has no data")
    code = int(target.data.reshape(-1)[0])
    if code not in {int(t) for t in OH_NN_DataType}:
        raise invalid(f"{entry.op.name}: target data type {code} is not an OH_NN_DataType (0..12)")
