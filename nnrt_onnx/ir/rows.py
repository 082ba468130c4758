"""The ONNX mapping rows: ``[[onnx]]`` in an NNRt op's entry (1:1 and near-1:1 mappings) and
``mappings/onnx/<OnnxOp>.toml`` (decompositions into several NNRt ops). Picked by the op's since-version.

Rows of another operator domain than ONNX's default one (``domain = "com.microsoft"``: the contrib operators of
onnxruntime) are keyed by the qualified name ``<domain>.<OpType>``, which is also their file's name
(``mappings/onnx/com.microsoft.Attention.toml``) and the name their converter registers (``@converts(
"com.microsoft.Attention")``), so they never clash with a default-domain operator of the same name; their
since/until count in the model's opset of *that* domain (:func:`route`)."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..enums import OH_NN_OperationType, OH_NN_TensorType
from ..optable import FAMILIES, OpTableError, mappings_dir, op_table
from .issues import INVALID_MODEL, UNSUPPORTED_OP

_ROW_KEYS = {"op_type", "since", "until", "inputs", "attrs", "notes", "domain", "export"}
DEFAULT_DOMAINS = ("", "ai.onnx")  # the ONNX operator set (the empty string and its alias)
# other operator domains rows may belong to: onnxruntime's contrib operators, ONNX's classical machine learning ones
CONTRIB_DOMAINS = ("com.microsoft", "ai.onnx.ml")
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
    op_type: str  # the ONNX op type; qualified by its domain outside the default one ("com.microsoft.Attention")
    since: int
    until: int | None  # last opset version the row covers (None: open)
    nnrt_op: OH_NN_OperationType | None  # the op whose entry holds the row (None for decompositions)
    inputs: tuple[int, ...] | None  # ONNX input positions feeding the NNRt inputs (generic converter)
    attrs: dict[str, AttrRule] = field(default_factory=dict)
    notes: str = ""
    source: str = ""  # file the row is declared in
    family: str = ""  # the family of the file's op (or of the decomposition): where its handler lives
    export: str | None = None  # "generic": the exporter may read this row in reverse (attributes <- parameters)
    domain: str = ""  # the operator domain ("" for ONNX's own operators)

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
    domain = table.get("domain", "")
    if domain in DEFAULT_DOMAINS:
        domain = ""
    elif domain not in CONTRIB_DOMAINS:
        raise OpTableError(f"{source}: domain {domain!r} is not one of {['', *CONTRIB_DOMAINS]}")
    if domain and (nnrt_op is not None or table.get("export")):
        raise OpTableError(f"{source}: a {domain} row is a decomposition (mappings/onnx/), never exported")
    return Row(op_type=qualified(domain, table["op_type"]), since=table.get("since", 1), until=table.get("until"),
               nnrt_op=nnrt_op, inputs=tuple(table["inputs"]) if "inputs" in table else None,
               attrs=attrs, notes=table.get("notes", ""), source=source, export=table.get("export"),
               family=family, domain=domain)


def qualified(domain: str, op_type: str) -> str:
    """The key of an operator: its type in the default domain, ``<domain>.<type>`` in any other."""
    return op_type if domain in DEFAULT_DOMAINS else f"{domain}.{op_type}"


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
            if row.op_type != path.stem:  # one operator per file, named after it (qualified outside the default domain)
                raise OpTableError(f"{path.name}: holds a row of {row.op_type}; rows of {path.stem} only")
            rows.setdefault(row.op_type, []).append(row)
    for op_type, found in rows.items():
        found.sort(key=lambda r: r.since)
        for a, b in zip(found, found[1:]):
            if a.until is None or a.until >= b.since:
                raise OpTableError(f"{op_type}: rows in {a.source} and {b.source} overlap (give the older one an 'until')")
    return rows


def find_row(op_type: str, version: int, domain: str = "") -> Row | None:
    """The row converting ``op_type`` of ``domain`` at that domain's opset ``version`` (None: no row covers it)."""
    for row in reversed(onnx_rows().get(qualified(domain, op_type), [])):
        if row.covers(version):
            return row
    return None


def domain_versions(opset_import) -> dict[str, int]:
    """Operator domain -> opset version, from a model's ``opset_import`` entries (the default domain as "")."""
    versions = {}
    for entry in opset_import:
        versions["" if entry.domain in DEFAULT_DOMAINS else entry.domain] = int(entry.version)
    return versions


@cache
def _row_domains() -> frozenset[str]:
    return frozenset(row.domain for found in onnx_rows().values() for row in found)


def route(domain: str, op_type: str, versions: dict[str, int]) -> tuple[Row | None, int, tuple[str, str] | None]:
    """How a node of ``op_type`` in ``domain`` converts in a model importing the opsets ``versions``
    (:func:`domain_versions`): ``(row, version, None)``, or ``(None, version, (reason code, message))``;
    ``version`` is the model's opset of the node's domain (1 for the default domain when the model names none)."""
    domain = "" if domain in DEFAULT_DOMAINS else domain
    version = versions.get(domain, 1 if not domain else 0)
    key = qualified(domain, op_type)
    if domain and domain not in _row_domains():
        return None, version, (UNSUPPORTED_OP, f"operator domain {domain!r} is not supported")
    if domain and domain not in versions:
        return None, version, (INVALID_MODEL, f"the model does not import the operator domain {domain!r} "
                                              "(no opset_import entry)")
    row = find_row(op_type, version, domain)
    if row is None:
        where = f"opset {version}" if not domain else f"{domain} opset {version}"
        return None, version, (UNSUPPORTED_OP, f"no NNRt mapping for {key} at {where}{refusal(key)}")
    return row, version, None


def refusal(key: str) -> str:
    """Why an operator without a row for some version does not convert, as ``": <reason>"`` (empty when unknown):
    its documented reason (``mappings/onnx_unsupported.toml``), or the opsets its rows do cover."""
    reason = unsupported_reasons().get(key)
    if reason:
        return f": {reason}"
    rows = onnx_rows().get(key)
    if rows:
        spans = ", ".join(f"{r.since}-{r.until}" if r.until else f"{r.since} and later" for r in rows)
        return f" (its rows cover opsets {spans})"
    return ""


@cache
def unsupported_reasons() -> dict[str, str]:
    """ONNX operator -> why it does not convert (``mappings/onnx_unsupported.toml``: one entry per operator of the
    default domain without a mapping row; docs/onnx_unsupported.md is generated from it)."""
    path = mappings_dir() / "onnx_unsupported.toml"
    if not path.is_file():
        return {}
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    reasons = {}
    for op_type, entry in data.items():
        if not isinstance(entry, dict) or set(entry) != {"reason"} or not isinstance(entry["reason"], str):
            raise OpTableError(f"{path.name}: [{op_type}] must hold exactly one string, reason")
        reasons[op_type] = entry["reason"]
    return reasons


def claimed_op_types() -> set[str]:
    """Every operator with a mapping row (qualified outside the default domain: ``com.microsoft.Attention``)."""
    return set(onnx_rows())
