"""The driver's view: a model as NNRt hands it to a device driver through HDI v2.1 (ohos.hdi.nnrt.v2_1).

At OH_NNModel_Finish the real runtime turns every operation into a node of NodeAttrTypes.idl: a NodeType, an
attribute structure (Conv2DFusion, Activation, ...) filled from the operation's parameter tensors, its input shapes and
constants, and a quant type; parameter tensors leave the tensor list, which is renumbered. What each op becomes is
declared in its op-table entry (``[hdi]`` of ``mappings/ops/<op>.toml``); the HDI enums and the value tables of the
runtime's conversions are in ``mappings/hdi.toml``. This module only computes: :func:`hdi_view` of a model,
:func:`structure_rows` of the table (``nnrt-onnx ops --hdi``, docs/hdi.md).
"""
from __future__ import annotations

import math
import tomllib
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from .enums import OH_NN_DataType
from .errors import forbidden
from .optable import HdiField, OpSpec, OpTableError, mappings_dir, op_table

if TYPE_CHECKING:
    from .model import Model, ModelTensor, Operation

MODEL_NAME = "NNR_Model"  # the names the runtime gives the LiteGraph and its one subgraph (nnrt_ops_spec.md 1.7)
SUBGRAPH_NAME = "NNRt_SubGraph"


# -- conversions the builders apply to a parameter's value (a field's `map`) -------------------------------------

def _one_element_list(value):
    """The one value as a one-element list."""
    return [value]


def _rows_of_two(values):
    """The flat list as rows of two ([a, b, c, d] -> [[a, b], [c, d]])."""
    return [list(values[i:i + 2]) for i in range(0, len(values), 2)]


def _first_row_twice(values):
    """The first row twice ([a, b, c, d] -> [[a, b], [a, b]]): SpaceToBatchND's builder copies paddings[0] into
    both rows (nnrt_ops_spec.md, op 31)."""
    return [list(values[:2]), list(values[:2])]


def _int64_read_as_float32(value):
    """The INT64's first 4 bytes read as a float32, truncated: LSTM's builder reads projSize so (op 75)."""
    as_float = float(np.frombuffer(np.asarray(value, "<i8").tobytes()[:4], "<f4")[0])
    return math.trunc(as_float) if math.isfinite(as_float) else None  # (a non-finite float has no int64 value)


CONVERSION_FUNCTIONS = {"one_element_list": _one_element_list, "rows_of_two": _rows_of_two,
                        "first_row_twice": _first_row_twice, "int64_read_as_float32": _int64_read_as_float32}


# -- mappings/hdi.toml ---------------------------------------------------------------------------------------------

@cache
def hdi_definitions() -> dict[str, Any]:
    """``{"interface", "enums": {Enum: {MEMBER: value}}, "tables": {name: {int: HDI value}}, "unreachable"}``,
    checked against every op entry's [hdi] section (a developer error is an OpTableError)."""
    path = mappings_dir() / "hdi.toml"
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    unknown = set(data) - {"interface", "enums", "tables", "unreachable"}
    if unknown:
        raise OpTableError(f"hdi.toml: unknown keys {sorted(unknown)}")
    tables = {name: {int(k): v for k, v in table.items()} for name, table in data.get("tables", {}).items()}
    definitions = {"interface": data["interface"], "enums": data["enums"], "tables": tables,
                   "unreachable": dict(data.get("unreachable", {}))}
    _check(definitions)
    return definitions


def _member(enums, enum: str, name: str, where: str) -> int:
    try:
        return enums[enum][name]
    except KeyError:
        raise OpTableError(f"{where}: {name!r} is not a member of the HDI enum {enum}") from None


def _check(definitions) -> None:
    enums, tables = definitions["enums"], definitions["tables"]
    for name, value in tables["tensor_format"].items():
        _member(enums, "Format", value, f"hdi.toml [tables.tensor_format] {name}")
    for entry in op_table().values():
        spec, where = entry.hdi, entry.file.name
        _member(enums, "NodeType", spec.node_type, f"{where} [hdi] node_type")
        if spec.struct in definitions["unreachable"]:
            raise OpTableError(f"{where}: {spec.struct} is listed as unreachable in hdi.toml")
        for f in spec.fields:
            at = f"{where} [hdi.fields] {f.name}"
            if f.enum is not None and f.enum not in enums:
                raise OpTableError(f"{at}: unknown HDI enum {f.enum!r}")
            if f.map is not None and f.map not in tables and f.map not in CONVERSION_FUNCTIONS:
                raise OpTableError(f"{at}: unknown conversion {f.map!r} (mappings/hdi.toml tables, nnrt_onnx/hdi.py)")
            names = [v for v in (f.const, f.absent, *f.when_given.values()) if isinstance(v, str)]
            names += list(tables[f.map].values()) if f.map in tables else []
            for name in names if f.enum is not None else []:
                _member(enums, f.enum, name, at)


def _enum_value(field: HdiField, value):
    """A value as sent: an enum member named in the table becomes its number."""
    if field.enum is not None and isinstance(value, str):
        return hdi_definitions()["enums"][field.enum][value]
    if isinstance(value, float):  # every IDL float is 32-bit: what the driver reads
        return float(np.float32(value))
    return value


def enum_name(enum: str, value) -> str | None:
    """The member of HDI enum ``enum`` with this value (None when the value is not one: sent unchecked)."""
    for name, number in hdi_definitions()["enums"][enum].items():
        if number == value and not isinstance(value, bool):
            return name
    return None


def _enum(enum: str, value) -> dict[str, Any]:
    return {"value": value, "name": enum_name(enum, value)}


def _convert(field: HdiField, value):
    if field.map is None:
        return _enum_value(field, value)
    if field.map in CONVERSION_FUNCTIONS:
        return CONVERSION_FUNCTIONS[field.map](value)
    table = hdi_definitions()["tables"][field.map]
    if value not in table:
        raise OpTableError(f"{field.name}: value {value!r} is not in the {field.map} table of mappings/hdi.toml")
    return _enum_value(field, table[value])


# -- one operation -------------------------------------------------------------------------------------------------

def _given_types(entry: OpSpec, operation: Operation, tensors) -> dict[str, list[str]]:
    """Kernel keyword -> the parameter tensor type(s) the operation gave it."""
    given: dict[str, list[str]] = {}
    for index in operation.params:
        tensor = tensors[index]
        spec = entry.params[tensor.tensor_type]
        variant = spec.variant_for(tensor.element_count) or spec.variants[0]
        given.setdefault(variant.to, []).append(tensor.tensor_type.name)
    return given


def _literal(value) -> str:
    """A parameter value as the source text shows it (IDL-style booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return str(value)


def _dims_text(field: HdiField) -> str:
    return ", ".join(f"dims[{d}]" for d in field.dims)


def _field(entry: OpSpec, field: HdiField, operation: Operation, tensors, given: dict[str, list[str]]):
    """(value, source) of one field for one operation."""
    if field.kind == "const":
        return _enum_value(field, field.const), "set by the builder"
    if field.kind == "input":
        dims = tensors[operation.inputs[field.input]].dims
        values = [int(dims[d]) if d < len(dims) else None for d in field.dims]
        return (values[0] if field.single_dim else values), f"input #{field.input} {_dims_text(field)}"
    for keyword, value in field.when_given.items():
        if keyword in operation.values:
            return _enum_value(field, value), f"{' + '.join(given.get(keyword, [keyword]))} given"
    if field.param in operation.values:
        raw = operation.values[field.param]
        names = " + ".join(given.get(field.param, [field.param]))
        conversion = f", converted by {field.map}" if field.map else ""
        return _convert(field, raw), f"{names} = {_literal(raw)}{conversion}"
    native = native_default(entry, field)
    differs = "" if native is None else f" (the native kernel uses {native!r})"
    return _enum_value(field, field.absent), f"not given: the builder's default{differs}"


def native_default(entry: OpSpec, field: HdiField):
    """What the native kernels use when the model omits the field's parameter, as the driver would get it, when that
    differs from what the builder sends (docs/deviations.md); None when they agree."""
    if field.kind != "param" or field.param not in entry.defaults:
        return None
    scalar = all(v.scalar for s in entry.own_params for v in s.variants if v.to == field.param)
    if scalar and isinstance(entry.defaults[field.param], list):  # a kernel's "no value" spelling, nothing to send
        return None
    try:
        native = _convert(field, entry.defaults[field.param])
    except OpTableError:  # a kernel-only spelling (pad_mode -1: no mode, the pad list is used) = PAD_MODE_PAD
        return None
    return None if native == _enum_value(field, field.absent) else native


def _attribute(field: HdiField, value, source: str) -> dict[str, Any]:
    attribute: dict[str, Any] = {"value": value}
    if field.enum is not None:
        attribute["name"] = enum_name(field.enum, value)
    attribute["source"] = source
    return attribute


def node_attributes(entry: OpSpec, operation: Operation, tensors) -> dict[str, dict[str, Any]]:
    """Every field of the op's HDI structure: ``{field: {"value", "name" (enum fields), "source"}}``, IDL order."""
    given = _given_types(entry, operation, tensors)
    return {f.name: _attribute(f, *_field(entry, f, operation, tensors, given)) for f in entry.hdi.fields}


def _quant_type(entry: OpSpec, operation: Operation, tensors) -> dict[str, Any]:
    """QUANT_TYPE_ALL when the builder follows output #0 and it has quant params (nnrt_ops_spec.md 1.5)."""
    quantized = entry.quant_type_from_output0 and tensors[operation.outputs[0]].quant is not None
    return _enum("QuantType", hdi_definitions()["enums"]["QuantType"]["QUANT_TYPE_ALL" if quantized
                                                                      else "QUANT_TYPE_NONE"])


# -- the model -----------------------------------------------------------------------------------------------------

def data_type(dtype: OH_NN_DataType) -> dict[str, Any]:
    """An OH_NN_DataType as the HDI DataType (OH_NN_X -> DATA_TYPE_X, the MindIR codes)."""
    name = "DATA_TYPE_" + dtype.name[len("OH_NN_"):]
    return {"value": hdi_definitions()["enums"]["DataType"][name], "name": name}


def _tensor(tensor: ModelTensor, number: int, model_index: int, role: str) -> dict[str, Any]:
    fmt = hdi_definitions()["tables"]["tensor_format"][int(tensor.format)]
    quant = tensor.quant
    return {
        "index": number,
        "name": f"Tensor: {model_index}",  # the runtime's name for model tensor #i; ours is model_name
        "model_index": model_index,
        "model_name": tensor.name,
        "role": role,
        "dataType": data_type(tensor.dtype),
        "dims": [int(d) for d in tensor.dims],
        "format": _enum("Format", hdi_definitions()["enums"]["Format"][fmt]),
        "quantParams": [] if quant is None else [
            {"numBits": int(b), "zeroPoint": int(z), "scale": float(s)}
            for b, z, s in zip(quant.num_bits, quant.zero_points, quant.scales)],
        "dataBytes": None if tensor.data is None else int(tensor.data.nbytes),
    }


def _marked_parameters(model: Model) -> tuple[set[int], dict[int, str]]:
    """Tensors the builders mark as operator parameters (they vanish), and the parameter tensors they keep."""
    marked, kept = set(), {}
    for operation in model.operations:
        spec = operation.spec.hdi
        for index in operation.params:
            tensor_type = model.tensors[index].tensor_type
            if tensor_type in spec.kept_params:
                kept[index] = tensor_type.name
            else:
                marked.add(index)
    return marked, {i: name for i, name in kept.items() if i not in marked}


def hdi_view(model: Model) -> dict[str, Any]:
    """The HDI v2.1 Model a driver receives for this finished model (ModelTypes.idl's Model, attributes decoded).

    ``{"interface", "name", "inputIndex", "outputIndex", "nodes": [{"index", "name", "op", "nodeType", "struct",
    "attributes", "inputIndex", "outputIndex", "quantType"}], "allTensors": [...], "subGraph": [...],
    "removedParameters": [model tensor indices]}``; enums are ``{"value", "name"}``, every index an HDI index.
    """
    if not model.finished:
        raise forbidden("the driver's view needs a finished model (OH_NNModel_Finish builds it)")
    marked, kept = _marked_parameters(model)
    renumbered = {i: n for n, i in enumerate(i for i in range(len(model.tensors)) if i not in marked)}
    produced = {i for operation in model.operations for i in operation.outputs}
    tensors = []
    for index, number in renumbered.items():
        tensor = model.tensors[index]
        if index in kept:
            role = f"kept parameter {kept[index]}"
        elif index in model.inputs:
            role = "model input"
        elif index in model.outputs:
            role = "model output"
        elif tensor.data is not None:
            role = "constant"
        else:
            role = "intermediate" if index in produced else "unwritten"
        tensors.append(_tensor(tensor, number, index, role))
    nodes = []
    for number, operation in enumerate(model.operations):
        entry = operation.spec
        spec = entry.hdi
        nodes.append({
            "index": number,
            "name": f"{spec.node_name}:{number}",
            "op": operation.op.name,
            "nodeType": _enum("NodeType", hdi_definitions()["enums"]["NodeType"][spec.node_type]),
            "struct": spec.struct,
            "attributes": node_attributes(entry, operation, model.tensors),
            "inputIndex": [renumbered[i] for i in operation.inputs],
            "outputIndex": [renumbered[i] for i in operation.outputs],
            "quantType": _quant_type(entry, operation, model.tensors),
        })
    inputs, outputs = [renumbered[i] for i in model.inputs], [renumbered[i] for i in model.outputs]
    return {"interface": hdi_definitions()["interface"], "name": MODEL_NAME, "inputIndex": inputs,
            "outputIndex": outputs, "nodes": nodes, "allTensors": tensors,
            "subGraph": [{"name": SUBGRAPH_NAME, "inputIndices": inputs, "outputIndices": outputs,
                          "nodeIndices": list(range(len(nodes)))}],
            "removedParameters": sorted(marked)}


# -- the op table as structures ------------------------------------------------------------------------------------

def _feeding_types(entry: OpSpec, keyword: str) -> list[str]:
    return [spec.tensor_type.name for spec in entry.own_params if keyword in spec.keywords]


def _element_count(entry: OpSpec, keyword: str) -> int | None:
    """The element count that routes a tensor to ``keyword`` when one parameter feeds several (pad mode or list)."""
    for spec in entry.own_params:
        if keyword in spec.keywords and len(spec.variants) > 1:
            return next(v.count for v in spec.variants if v.to == keyword)
    return None


def _shown(field: HdiField, value) -> Any:
    sent = _enum_value(field, value)
    return {"value": sent, "name": enum_name(field.enum, sent)} if field.enum is not None else sent


def field_rows(entry: OpSpec) -> list[dict[str, Any]]:
    """Where each field of the op's structure comes from, as data (for tables and docs)."""
    rows = []
    for f in entry.hdi.fields:
        row: dict[str, Any] = {"field": f.name, "source": f.kind, "enum": f.enum, "note": f.note}
        if f.kind == "const":
            row["value"] = _shown(f, f.const)
        elif f.kind == "input":
            row["input"], row["dims"], row["single_dim"] = f.input, list(f.dims), f.single_dim
        else:
            row["params"] = _feeding_types(entry, f.param)
            row["element_count"] = _element_count(entry, f.param)
            row["keyword"] = f.param
            row["map"] = f.map
            row["absent"] = None if f.param in _required_keywords(entry) else _shown(f, f.absent)
            native = None if row["absent"] is None else native_default(entry, f)
            row["native_default"] = None if native is None else _shown(f, native)
            row["when_given"] = {", ".join(_feeding_types(entry, k)): _shown(f, v) for k, v in f.when_given.items()}
        rows.append(row)
    return rows


def _required_keywords(entry: OpSpec) -> set[str]:
    return {k for spec in entry.params.values() if spec.required for k in spec.keywords}


def structure_rows() -> list[dict[str, Any]]:
    """One row per OH_NN_OperationType: its NodeType, structure, node name, quant type rule and field sources."""
    enums = hdi_definitions()["enums"]
    rows = []
    for op, entry in op_table().items():
        spec = entry.hdi
        rows.append({
            "op": op.name, "value": int(op), "struct": spec.struct,
            "nodeType": {"value": enums["NodeType"][spec.node_type], "name": spec.node_type},
            "node_name": spec.node_name,
            "quantType": "follows output #0" if entry.quant_type_from_output0 else "QUANT_TYPE_NONE",
            "fields": field_rows(entry),
            "kept_params": [t.name for t in spec.kept_params],
            "dropped": [{"keyword": k, "params": _feeding_types(entry, k)} for k in spec.dropped],
        })
    return rows

