"""A readable description of an NNRt model: ops by count, IO, and each op's parameters with enum names."""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..enums import OH_NN_DataType, OH_NN_FuseType

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
    info = {"index": index, "name": tensor.name, "dtype": tensor.dtype.name.replace("OH_NN_", "").lower(),
            "dims": list(tensor.dims)}
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
            "input_dims": [list(model.tensors[i].dims) for i in operation.inputs],
            "output_dims": [list(model.tensors[i].dims) for i in operation.outputs],
            "params": {k: _decoded(k, v) for k, v in operation.values.items()},
        })
    constants = [t for t in model.tensors if t.data is not None]
    quantized = [i for i, t in enumerate(model.tensors) if t.quant is not None]
    quantization = None
    if quantized:  # which operations read quantized tensors (a QUANT_DTYPE_CAST only converts)
        marked = set(quantized)
        reading = Counter(op.op.name for op in model.operations if marked & set(op.inputs))
        quantization = {"quantized_tensors": len(quantized), "operations_reading_quantized": dict(reading.most_common())}
    return {
        "name": model.name,
        "inputs": [_tensor_info(model, i) for i in model.inputs],
        "outputs": [_tensor_info(model, i) for i in model.outputs],
        "op_counts": dict(Counter(op.op.name for op in model.operations).most_common()),
        "tensor_count": len(model.tensors),
        "constant_bytes": int(sum(t.data.nbytes for t in constants)),
        "operations": operations,
        "quantization": quantization,
    }


def _value_types(model) -> dict[str, dict[str, Any]]:
    """ONNX value name -> {"dtype", "dims"} (a dim_param's name for a symbolic dim, None for an unknown one) from the
    declared inputs, outputs, initializers and the value_info shape inference adds."""
    from onnx import helper

    def shown(elem_type: int) -> str:
        try:
            return helper.tensor_dtype_to_np_dtype(elem_type).name
        except (KeyError, TypeError, ValueError):
            return f"elem_type {elem_type}"

    types: dict[str, dict[str, Any]] = {}
    for info in [*model.graph.input, *model.graph.value_info, *model.graph.output]:
        tensor = info.type.tensor_type
        if not info.type.HasField("tensor_type"):
            continue
        dims = None
        if tensor.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]
        types[info.name] = {"dtype": shown(tensor.elem_type), "dims": dims}
    for tensor in model.graph.initializer:
        types[tensor.name] = {"dtype": shown(tensor.data_type), "dims": list(tensor.dims)}
    return types


def onnx_support_report(path, input_shapes=None, max_constant_bytes: int | None = None,
                        hdi: bool = False, shapes: bool = False) -> dict[str, Any]:
    """Which nodes of an ONNX model convert, to what, and why the others cannot -- looked up before converting
    (each node's mapping row), then confirmed by a conversion (its problems, and the NNRt ops each node became).

    Returns ``{"model", "opset", "nodes": [...], "problems": [...not tied to a node], "convertible", "nnrt"}``
    where ``nnrt`` is :func:`describe_model` of the converted model (None when it cannot be converted) and
    ``quantization`` the conversion's quantization summary (quantized share, float fallbacks; None for a float model);
    with ``hdi``, ``"hdi"`` is the converted model as a driver receives it (:func:`nnrt_onnx.hdi.hdi_view`, or None).
    ``"graph"``, ``"inputs"``, ``"outputs"`` (name, dtype, dims) and ``"op_counts"`` (ONNX op type -> nodes) summarise
    the ONNX model; with ``shapes``, each node also lists its inputs and outputs with their inferred dtype and dims.
    """
    from pathlib import Path

    from ..ir.rows import domain_versions, route
    from ..onnx_import import ConversionError, from_onnx, load_structure
    from ..onnx_import.handlers import handler_for
    from ..onnx_import.importer import opset_of

    model = load_structure(path)  # (nodes and attributes; from_onnx reads the weights from the file itself)
    opset = opset_of(model)
    versions = domain_versions(model.opset_import)
    types = _value_types(model)
    if shapes:
        from ..onnx_import.shapes import infer_shapes_without_weights
        from .model_inputs import override_static_dims

        try:
            pinned = override_static_dims(model, dict(input_shapes)) if input_shapes else model
            types = _value_types(infer_shapes_without_weights(pinned))
        except Exception:  # ONNX inference gives up on some models: the declared shapes are still shown
            pass
    nodes = []
    for index, node in enumerate(model.graph.node):
        name = node.name or (node.output[0] if node.output else node.op_type)
        entry: dict[str, Any] = {"index": index, "node": name, "op_type": node.op_type, "domain": node.domain,
                                 "targets": [], "mapping": None, "emitted": None, "problems": []}
        if shapes:
            entry["inputs"] = [{"name": i, **types.get(i, {"dtype": None, "dims": None})} for i in node.input if i]
            entry["outputs"] = [{"name": o, **types.get(o, {"dtype": None, "dims": None})} for o in node.output if o]
        row = route(node.domain, node.op_type, versions)[0]  # by domain, op type and that domain's opset
        if row is not None:
            entry["targets"] = [row.nnrt_op.name] if row.nnrt_op is not None else []
            converter = handler_for(row).__name__
            entry["mapping"] = row.notes or ("1:1" if converter == "convert_generic" else f"converter {converter}")
        nodes.append(entry)
    by_name = {n["node"]: n for n in nodes}
    problems = []
    nnrt = driver_view = None
    quantization = None
    try:
        result = from_onnx(str(path) if isinstance(path, (str, Path)) else model, input_shapes=input_shapes,
                           max_constant_bytes=max_constant_bytes)
    except ConversionError as exc:
        for issue in exc.issues:
            target = by_name.get(issue.node)
            text = f"[{issue.reason}] {issue.message}"
            (target["problems"] if target is not None else problems).append(text)
    else:
        emitted: dict[str, list[str]] = {}
        for op_node in result.graph.nodes:
            emitted.setdefault(op_node.origin, []).append(op_node.op.name)
        for entry in nodes:
            entry["emitted"] = emitted.get(entry["node"], [])
        nnrt = describe_model(result.model)
        quantization = result.stats.get("quantization")  # quantized share, float fallbacks by op type
        if hdi:
            from ..hdi import hdi_view

            driver_view = hdi_view(result.model)
    for entry in nodes:
        entry["status"] = "cannot convert" if entry["problems"] else "ok"
    runtime = [i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    report = {"model": str(path), "graph": model.graph.name, "opset": opset,
              "inputs": [{"name": i.name, **types.get(i.name, {"dtype": None, "dims": None})} for i in runtime],
              "outputs": [{"name": o.name, **types.get(o.name, {"dtype": None, "dims": None})}
                          for o in model.graph.output],
              "op_counts": dict(Counter(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
                                        for n in model.graph.node).most_common()),
              "nodes": nodes, "problems": problems,
              "convertible": nnrt is not None, "nnrt": nnrt, "quantization": quantization}
    if hdi:
        report["hdi"] = driver_view
    return report
