"""A readable description of an NNRt model: ops by count, IO, and each op's parameters with enum names."""
from __future__ import annotations

from collections import Counter
from typing import Any

from .enums import OH_NN_DataType, OH_NN_FuseType

_ENUM_KEYWORDS = {"activation_type": OH_NN_FuseType, "data_type": OH_NN_DataType, "src_t": OH_NN_DataType,
                  "dst_t": OH_NN_DataType}
_PAD_MODES = {0: "SAME", 1: "VALID", 2: "VALID"}


def _decoded(keyword: str, value: Any) -> Any:
    enum = _ENUM_KEYWORDS.get(keyword)
    if enum is not None and isinstance(value, int):
        try:
            return f"{enum(value).name} ({value})"
        except ValueError:
            return value
    if keyword == "pad_mode" and isinstance(value, int):
        return f"{_PAD_MODES.get(value, value)} ({value})"
    return value


def _tensor_info(model, index: int) -> dict[str, Any]:
    tensor = model.tensors[index]
    info = {"index": index, "name": tensor.name, "dtype": tensor.dtype.name, "dims": list(tensor.dims)}
    if tensor.quant is not None:
        info["quant"] = {"scales": tensor.quant.scales, "zero_points": tensor.quant.zero_points}
    return info


def describe_model(model) -> dict[str, Any]:
    operations = []
    for number, operation in enumerate(model.operations):
        operations.append({
            "index": number,
            "op": operation.op.name,
            "inputs": [model.tensors[i].name for i in operation.inputs],
            "outputs": [model.tensors[i].name for i in operation.outputs],
            "params": {k: _decoded(k, v) for k, v in operation.values.items()},
        })
    constants = [t for t in model.tensors if t.data is not None]
    return {
        "inputs": [_tensor_info(model, i) for i in model.inputs],
        "outputs": [_tensor_info(model, i) for i in model.outputs],
        "op_counts": dict(Counter(op.op.name for op in model.operations).most_common()),
        "tensor_count": len(model.tensors),
        "constant_bytes": int(sum(t.data.nbytes for t in constants)),
        "operations": operations,
    }
