"""The ONNX mapping rows: ``[[onnx]]`` in an NNRt op's entry (1:1 and near-1:1 mappings) and
``mappings/onnx/<OnnxOp>.toml`` (decompositions into several NNRt ops). Picked by the op's since-version."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..enums import OH_NN_OperationType, OH_NN_TensorType
from ..optable import FAMILIES, OpTableError, mappings_dir, op_table

_ROW_KEYS = {"op_type", "since", "until", "inputs", "attrs", "notes", "domain", "export"}
_ATTR_KEYS = {"param", "default", "transform", "ignore", "require", "input"}


@dataclass(frozen=True)
class AttrRule:
    """What an ONNX attribute becomes: a parameter (optionally transformed), a required value, or nothing."""

    name: str
    param: OH_NN_TensorType | None = None
    default: Any = None
    transform: str | None = None
    ignore: str | None = None  # why the attribute has no NNRt counterpart and no effect
    require: Any = None  # the only value we can convert


@dataclass(frozen=True)
class Row:
    op_type: str
    since: int
    until: int | None  # last opset version the row covers (None: open)
    nnrt_op: OH_NN_OperationType | None  # the op whose entry holds the row (None for decompositions)
    inputs: tuple[int, ...] | None  # ONNX input positions feeding the NNRt inputs (generic converter)
    attrs: dict[str, AttrRule] = field(default_factory=dict)
    notes: str = ""
    source: str = ""  # file the row is declared in
    family: str = ""  # the family of the file's op (or of the decomposition): where its handler lives
    export: str | None = None  # "generic": the exporter may read this row in reverse (attributes <- parameters)

    def covers(self, version: int) -> bool:
        return self.since <= version and (self.until is None or version <= self.until)


def _row(source: str, table: dict, nnrt_op: OH_NN_OperationType | None, family: str) -> Row:
    unknown = set(table) - _ROW_KEYS
    if unknown:
        raise OpTableError(f"{source}: [[onnx]] row has unknown keys {sorted(unknown)}")
    attrs = {}
    for name, rule in table.get("attrs", {}).items():
        if set(rule) - _ATTR_KEYS:
            raise OpTableError(f"{source}: attribute {name} has unknown keys {sorted(set(rule) - _ATTR_KEYS)}")
        param = OH_NN_TensorType[rule["param"]] if "param" in rule else None
        attrs[name] = AttrRule(name, param, rule.get("default"), rule.get("transform"), rule.get("ignore"),
                               rule.get("require"))
    return Row(op_type=table["op_type"], since=table.get("since", 1), until=table.get("until"), nnrt_op=nnrt_op,
               inputs=tuple(table["inputs"]) if "inputs" in table else None,
               attrs=attrs, notes=table.get("notes", ""), source=source, export=table.get("export"),
               family=family)


@cache
def onnx_rows() -> dict[str, list[Row]]:
    """ONNX op type -> rows sorted by since-version."""
    rows: dict[str, list[Row]] = {}
    for entry in op_table().values():
        for table in entry.raw.get("onnx", []):
            row = _row(entry.file.name, table, entry.op, entry.family)
            rows.setdefault(row.op_type, []).append(row)
    composite = mappings_dir() / "onnx"
    for path in sorted(composite.glob("*.toml")) if composite.is_dir() else []:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        if set(data) - {"family", "onnx"}:
            raise OpTableError(f"{path.name}: unknown keys {sorted(set(data) - {'family', 'onnx'})}")
        if data.get("family") not in FAMILIES:
            raise OpTableError(f"{path.name}: family must be one of {list(FAMILIES)}, got {data.get('family')!r}")
        for table in data.get("onnx", []):
            row = _row(path.name, table, None, data["family"])
            rows.setdefault(row.op_type, []).append(row)
    for op_type, found in rows.items():
        found.sort(key=lambda r: r.since)
        for a, b in zip(found, found[1:]):
            if a.until is None or a.until >= b.since:
                raise OpTableError(f"{op_type}: rows in {a.source} and {b.source} overlap (give the older one an 'until')")
    return rows


def find_row(op_type: str, version: int) -> Row | None:
    for row in reversed(onnx_rows().get(op_type, [])):
        if row.covers(version):
            return row
    return None


def claimed_op_types() -> set[str]:
    return set(onnx_rows())
