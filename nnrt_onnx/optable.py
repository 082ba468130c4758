"""The op table: one declarative TOML entry per OH_NN_OperationType in ``mappings/ops/``.

Everything op-specific that is data lives there: inputs and outputs, every parameter tensor (type, dtype,
element count, value range, the kernel keyword it feeds, its default), the fused activation, named extra
checks. Validation, the executor, docs and the tests are all driven from it. See docs/op_table.md.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .enums import OH_NN_DataType, OH_NN_OperationType, OH_NN_TensorType


def mappings_dir() -> Path:
    """``mappings/`` in a source checkout, or its copy shipped inside the installed package."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_mappings", here.parent / "mappings"):
        if (candidate / "ops").is_dir():
            return candidate
    raise FileNotFoundError("cannot find the mappings/ op table next to the nnrt_onnx package")


@dataclass(frozen=True)
class ParamVariant:
    """One accepted form of a parameter tensor; several forms are told apart by element count."""

    to: str  # kernel keyword this form feeds
    dtype: OH_NN_DataType
    count: int | None  # enforced element count, None = not checked
    rank: int | None  # enforced rank, None = not checked
    scalar: bool  # the kernel gets the first element (True) or the whole list (False)
    value_range: tuple[int, int] | None


@dataclass(frozen=True)
class ParamSpec:
    tensor_type: OH_NN_TensorType
    meaning: str
    variants: tuple[ParamVariant, ...]
    required: bool = False
    append: bool = False  # a repeated tensor of this type appends instead of replacing
    alias: bool = False  # accepted only because the real builder shares its map with another op
    notes: str = ""

    def variant_for(self, element_count: int) -> ParamVariant | None:
        """The variant a tensor with ``element_count`` elements selects (None: no variant fits)."""
        if len(self.variants) == 1:
            return self.variants[0]
        for variant in self.variants:
            if variant.count == element_count:
                return variant
        return None

    @property
    def keywords(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.to for v in self.variants))


@dataclass(frozen=True)
class HdiField:
    """Where one field of the op's HDI structure gets its value (docs/hdi.md): exactly one of a parameter (by kernel
    keyword), a constant, or an input's dims."""

    name: str  # the IDL field name
    param: str | None = None  # kernel keyword of the parameter it comes from
    absent: Any = None  # the value sent when that parameter is omitted (None only for a required parameter)
    map: str | None = None  # a named conversion of the parameter's value (nnrt_onnx/hdi.py, mappings/hdi.toml)
    when_given: dict[str, Any] = field(default_factory=dict)  # keyword -> the value set when that parameter is given
    const: Any = None  # the value the builder always sends
    input: int | None = None  # the input whose dims it reads
    dims: tuple[int, ...] = ()  # which of that input's dims
    single_dim: bool = False  # one dim (a long), not a list of dims (a long[])
    enum: str | None = None  # the HDI enum of the field (mappings/hdi.toml), for enum-typed fields
    note: str = ""

    @property
    def kind(self) -> str:
        return "param" if self.param is not None else ("input" if self.input is not None else "const")


@dataclass(frozen=True)
class HdiSpec:
    """The op as a driver receives it: an HDI v2.1 NodeType and attribute structure (NodeAttrTypes.idl)."""

    struct: str
    node_type: str  # NodeType member name (mappings/hdi.toml)
    node_name: str  # the runtime names the node "<node_name>:<operation index>"
    fields: tuple[HdiField, ...]
    kept_params: tuple[OH_NN_TensorType, ...]  # parameter tensors the builder leaves in the tensor list
    dropped: tuple[str, ...]  # keywords the builder validates but does not pass on


@dataclass(frozen=True)
class OpSpec:
    op: OH_NN_OperationType
    file: Path
    family: str  # one of FAMILIES: the module name of its kernel, import and export functions and tests
    summary: str
    layout: str  # "NHWC" when the header fixes the layout, else "any"
    layout_role: str | None  # see LAYOUT_ROLES
    inputs: tuple[int, int]  # accepted input count range
    outputs: tuple[int, int]
    input_roles: tuple[str, ...]
    output_roles: tuple[str, ...]
    input_ranks: dict[int, int]
    param_max: int
    params: dict[OH_NN_TensorType, ParamSpec]
    defaults: dict[str, Any]
    fuse: str | None  # keyword holding the OH_NN_FuseType the executor applies after the kernel
    checks: tuple[str, ...]  # named extra rules (nnrt_onnx.validation.op_checks)
    quant: str  # "dequantize" (executor (de)quantizes around the kernel), "dequantize_float64" (the same in float64:
    # the quantized result is the exact rounding of the real one), or "native" (the kernel reads the integers)
    notes: tuple[str, ...]
    quant_type_from_output0: bool
    raw: dict[str, Any] = field(repr=False, compare=False)  # sections owned by later layers (onnx, cases)
    hdi: HdiSpec | None = None

    @property
    def name(self) -> str:
        """Short lower-case name, e.g. ``conv2d`` (also the entry's file stem)."""
        return self.op.name[len("OH_NN_OPS_"):].lower()

    @property
    def keywords(self) -> tuple[str, ...]:
        """Kernel keywords in declaration order (the fused activation included)."""
        seen: dict[str, None] = {}
        for spec in self.params.values():
            seen.update(dict.fromkeys(spec.keywords))
        return tuple(seen)

    @property
    def own_params(self) -> list[ParamSpec]:
        return [p for p in self.params.values() if not p.alias]


# The family map: every op (and every ONNX decomposition in mappings/onnx/) belongs to one family, and its kernel,
# import handlers, export function and tests live in the module of that name in each layer (kernels/<family>.py,
# onnx_import/handlers/<family>.py, onnx_export/handlers/<family>.py, tests/.../test_<family>.py).
FAMILIES = ("elementwise", "activation", "conv", "pool", "linear", "normalization", "reduce", "shape", "indexing",
            "spatial", "recurrent", "attention", "quantization", "signal", "detection", "control", "ml")

_TOP_KEYS = {"op", "family", "summary", "layout", "layout_role", "quant_type_from_output0", "notes", "checks", "quant",
             "inputs", "outputs", "params", "defaults", "param", "onnx", "cases", "dtypes", "hdi"}
# How an op lets a transpose move through it (the importer's layout pass):
#   unary     — one data input, same shape out (y = f(x)): T(f(x)) == f(T(x))
#   broadcast — numpy-broadcasting n-ary elementwise op: operands permuted alike
#   concat    — concatenation along the "axis" keyword: the axis is permuted
#   axis      — one data input, same shape out, computed along the "axis" keyword (softmax): the axis is permuted
#   reduce    — reduction over the axes of constant input #1 (keep_dims keyword): the axes are permuted
#   pad       — padding by the constant [rank, 2] input #1: its rows are permuted
#   slice     — SLICE over the "axes" keyword (begin/size inputs follow the axes): the axes are permuted
#   gather    — GATHER along the constant axis input #2 with 1-D indices: the axis is permuted
#   split     — SPLIT along the "axis" keyword: the axis is permuted, each output gets the transpose
LAYOUT_ROLES = {"unary", "broadcast", "concat", "axis", "reduce", "pad", "slice", "gather", "split"}
_PARAM_KEYS = {"type", "meaning", "notes", "required", "alias", "append", "variant", "to", "dtype", "count", "rank",
               "value", "range"}
_VARIANT_KEYS = {"to", "dtype", "count", "rank", "value", "range"}
_HDI_KEYS = {"struct", "node_type", "node_name", "kept_params", "dropped", "fields"}
_HDI_FIELD_KEYS = {"param", "absent", "map", "when_given", "const", "input", "dim", "dims", "enum", "note"}


class OpTableError(ValueError):
    """A malformed op-table entry (a developer error, reported with the file name)."""


def _check_keys(where: str, table: dict, allowed: set[str]) -> None:
    unknown = set(table) - allowed
    if unknown:
        raise OpTableError(f"{where}: unknown keys {sorted(unknown)}")


def _variant(where: str, table: dict) -> ParamVariant:
    _check_keys(where, table, _VARIANT_KEYS)
    try:
        dtype = OH_NN_DataType["OH_NN_" + table["dtype"]]
    except KeyError:
        raise OpTableError(f"{where}: bad or missing dtype {table.get('dtype')!r}") from None
    count = table.get("count")
    value = table.get("value", "scalar" if count == 1 else "list")
    if value not in ("scalar", "list"):
        raise OpTableError(f"{where}: value must be 'scalar' or 'list'")
    rng = table.get("range")
    return ParamVariant(to=table["to"], dtype=dtype, count=count, rank=table.get("rank"), scalar=value == "scalar",
                        value_range=tuple(rng) if rng is not None else None)


def _param(where: str, table: dict) -> ParamSpec:
    _check_keys(where, table, _PARAM_KEYS)
    try:
        tensor_type = OH_NN_TensorType[table["type"]]
    except KeyError:
        raise OpTableError(f"{where}: unknown tensor type {table.get('type')!r}") from None
    where = f"{where} {tensor_type.name}"
    if "variant" in table:
        variants = tuple(_variant(where, v) for v in table["variant"])
    else:
        variants = (_variant(where, {k: table[k] for k in _VARIANT_KEYS if k in table}),)
    return ParamSpec(tensor_type=tensor_type, meaning=table.get("meaning", ""), variants=variants,
                     required=table.get("required", False), append=table.get("append", False),
                     alias=table.get("alias", False), notes=table.get("notes", ""))


def _hdi_field(where: str, name: str, table: dict, entry: OpSpec) -> HdiField:
    where = f"{where} [hdi.fields] {name}"
    if not isinstance(table, dict):
        raise OpTableError(f"{where}: must be an inline table")
    _check_keys(where, table, _HDI_FIELD_KEYS)
    sources = [key for key in ("param", "const", "input") if key in table]
    if len(sources) != 1:
        raise OpTableError(f"{where}: needs exactly one source (param, const or input), has {sources}")
    common = {"name": name, "enum": table.get("enum"), "note": table.get("note", "")}
    if "param" in table:
        keyword = table["param"]
        if keyword not in entry.keywords:
            raise OpTableError(f"{where}: {keyword!r} is not a parameter keyword of the op ({list(entry.keywords)})")
        required = any(p.required for p in entry.params.values() if keyword in p.keywords)
        if required == ("absent" in table):
            raise OpTableError(f"{where}: 'absent' (the value sent when {keyword} is omitted) is "
                               f"{'not allowed for a required parameter' if required else 'needed'}")
        when_given = dict(table.get("when_given", {}))
        unknown = [k for k in when_given if k not in entry.keywords]
        if unknown:
            raise OpTableError(f"{where}: when_given names unknown keywords {unknown}")
        _check_keys(where, table, {"param", "absent", "map", "when_given", "enum", "note"})
        return HdiField(param=keyword, absent=table.get("absent"), map=table.get("map"), when_given=when_given,
                        **common)
    if "const" in table:
        _check_keys(where, table, {"const", "enum", "note"})
        return HdiField(const=table["const"], **common)
    _check_keys(where, table, {"input", "dim", "dims", "enum", "note"})
    position = table["input"]
    if not isinstance(position, int) or not 0 <= position < entry.inputs[0]:
        raise OpTableError(f"{where}: input {position!r} is not an input every {entry.op.name} has")
    if ("dim" in table) == ("dims" in table):
        raise OpTableError(f"{where}: an input source needs one of 'dim' (a long) or 'dims' (a long[])")
    dims = (table["dim"],) if "dim" in table else tuple(table["dims"])
    return HdiField(input=position, dims=dims, single_dim="dim" in table, **common)


def _hdi(where: str, table: dict, entry: OpSpec) -> HdiSpec:
    where = f"{where} [hdi]"
    _check_keys(where, table, _HDI_KEYS)
    missing = [key for key in ("struct", "node_type", "node_name") if key not in table]
    if missing:
        raise OpTableError(f"{where}: missing {missing}")
    fields = tuple(_hdi_field(where, name, spec, entry) for name, spec in table.get("fields", {}).items())
    kept = []
    for name in table.get("kept_params", []):
        tensor_type = OH_NN_TensorType.__members__.get(name)
        if tensor_type not in entry.params:
            raise OpTableError(f"{where}: kept_params names {name!r}, not a parameter of the op")
        kept.append(tensor_type)
    dropped = tuple(table.get("dropped", []))
    used = {f.param for f in fields if f.param is not None} | {k for f in fields for k in f.when_given}
    if set(dropped) & used or not set(dropped) <= set(entry.keywords):
        raise OpTableError(f"{where}: dropped {list(dropped)} must be keywords of the op that no field reads")
    ignored = [k for k in entry.keywords if k not in used and k not in dropped]
    if ignored:  # never silently: a parameter the driver does not get is listed as dropped
        raise OpTableError(f"{where}: no field reads the parameter keyword(s) {ignored} (list them as dropped)")
    return HdiSpec(struct=table["struct"], node_type=table["node_type"], node_name=table["node_name"],
                   fields=fields, kept_params=tuple(kept), dropped=dropped)


def load_entry(path: Path) -> OpSpec:
    where = path.name
    with path.open("rb") as fh:
        try:
            data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise OpTableError(f"{where}: {exc}") from None
    _check_keys(where, data, _TOP_KEYS)
    try:
        op = OH_NN_OperationType[data["op"]]
    except KeyError:
        raise OpTableError(f"{where}: unknown op {data.get('op')!r}") from None
    params = {}
    for table in data.get("param", []):
        spec = _param(where, table)
        if spec.tensor_type in params:
            raise OpTableError(f"{where}: {spec.tensor_type.name} declared twice")
        params[spec.tensor_type] = spec
    meta = data.get("params", {})
    if data.get("quant", "dequantize") not in ("dequantize", "dequantize_float64", "native"):
        raise OpTableError(f"{where}: quant must be dequantize, dequantize_float64 or native, got {data['quant']!r}")
    family = data.get("family")
    if family not in FAMILIES:
        raise OpTableError(f"{where}: family must be one of {list(FAMILIES)}, got {family!r}")
    entry = OpSpec(
        op=op, file=path, family=family, summary=data.get("summary", ""), layout=data.get("layout", "any"),
        layout_role=data.get("layout_role"),
        inputs=tuple(data["inputs"]["count"]), outputs=tuple(data["outputs"]["count"]),
        input_roles=tuple(data["inputs"].get("roles", ())), output_roles=tuple(data["outputs"].get("roles", ())),
        input_ranks={int(k): v for k, v in data["inputs"].get("rank", {}).items()},
        param_max=meta.get("max", 0), params=params, defaults=dict(data.get("defaults", {})),
        fuse=meta.get("fuse"), checks=tuple(data.get("checks", ())), quant=data.get("quant", "dequantize"),
        notes=tuple(data.get("notes", ())), quant_type_from_output0=data.get("quant_type_from_output0", False),
        raw=data,
    )
    missing = [kw for p in entry.params.values() if not p.required for kw in p.keywords if kw not in entry.defaults]
    if missing:
        raise OpTableError(f"{where}: optional parameters without a default: {missing}")
    if entry.layout_role is not None and entry.layout_role not in LAYOUT_ROLES:
        raise OpTableError(f"{where}: layout_role must be one of {sorted(LAYOUT_ROLES)}")
    if entry.fuse is not None and entry.fuse not in entry.keywords:
        raise OpTableError(f"{where}: fuse keyword {entry.fuse!r} is not fed by any parameter")
    if "hdi" not in data:
        raise OpTableError(f"{where}: no [hdi] section (the structure a driver receives, docs/op_table.md)")
    return replace(entry, hdi=_hdi(where, data["hdi"], entry))


@cache
def _load_entry(path: Path) -> OpSpec:
    return load_entry(path)


@cache
def op_table() -> dict[OH_NN_OperationType, OpSpec]:
    """All entries, keyed by operation type, in enum order."""
    entries = {}
    for path in sorted((mappings_dir() / "ops").glob("*.toml")):
        entry = _load_entry(path)
        if entry.op in entries:
            raise OpTableError(f"{path.name}: {entry.op.name} already declared in {entries[entry.op].file.name}")
        if path.stem != entry.name:
            raise OpTableError(f"{path.name}: an entry for {entry.op.name} must be named {entry.name}.toml")
        entries[entry.op] = entry
    return dict(sorted(entries.items()))


def op_spec(op: OH_NN_OperationType | int) -> OpSpec:
    """The entry of ``op`` (KeyError: none): read alone, from the file its name gives, until something needs the
    whole table -- a model's few op types are not worth parsing every entry at start-up (0.2 s)."""
    op = OH_NN_OperationType(op)
    if op_table.cache_info().currsize:
        return op_table()[op]
    path = mappings_dir() / "ops" / f"{op.name[len('OH_NN_OPS_'):].lower()}.toml"
    if not path.is_file():
        return op_table()[op]  # raises KeyError, or finds an entry filed under another name (an error there)
    entry = _load_entry(path)
    if entry.op != op:
        return op_table()[op]  # the whole table's checks name the misfiled entry
    return entry


def _parameter_variant(tensor_type: OH_NN_TensorType, count: int) -> ParamVariant:
    """The form (dtype, rank) a parameter tensor of ``count`` elements takes in the op table."""
    for entry in op_table().values():
        spec = entry.params.get(tensor_type)
        if spec is not None and not spec.alias:
            return spec.variant_for(count) or spec.variants[0]
    from .errors import invalid

    raise invalid(f"{tensor_type.name} is not a parameter of any operation")


def param_dtype(tensor_type: OH_NN_TensorType, count: int) -> OH_NN_DataType:
    """The OH_NN_DataType the op table demands for a parameter of ``count`` elements."""
    return _parameter_variant(tensor_type, count).dtype


def param_array(tensor_type: OH_NN_TensorType, value: Any) -> np.ndarray:
    """A parameter value as an array of the dtype (and rank: LAYER_NORM's scalars are 0-d) the op table demands."""
    from .dtypes import to_numpy

    array = value if isinstance(value, np.ndarray) and value.dtype != object else np.asarray(value)
    variant = _parameter_variant(tensor_type, array.size)
    result = np.ascontiguousarray(array.astype(to_numpy(variant.dtype)))
    scalar_rank = _parameter_variant(tensor_type, 1).rank
    return result.reshape(()) if result.size == 1 and scalar_rank == 0 else result
