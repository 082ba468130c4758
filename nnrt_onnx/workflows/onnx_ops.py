"""Does my ONNX operator convert, and how (``nnrt-onnx ops --onnx [OP]``): every operator of the default ONNX domain
the installed onnx package knows, and the contrib operators with mapping rows, by the model's opset -- the mapping
row that converts it (the NNRt op it targets or the decomposition's family, its notes, the attribute values it
requires or ignores), or why it does not (``mappings/onnx_unsupported.toml``; docs/onnx_unsupported.md is generated
here from it).

Read from the same rows the importer routes nodes by (``ir.rows.route``), so the answer is the importer's."""
from __future__ import annotations

import difflib
from typing import Any

from ..ir.rows import DEFAULT_DOMAINS, Row, find_row, onnx_rows, refusal, unsupported_reasons


def _schema_versions() -> tuple[dict[str, list[tuple[int, bool]]], int]:
    """Default-domain operator -> [(since version, deprecated)], and the newest opset the onnx package knows."""
    import onnx.defs

    versions: dict[str, list[tuple[int, bool]]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in DEFAULT_DOMAINS:
            versions.setdefault(schema.name, []).append((schema.since_version, bool(schema.deprecated)))
    return {name: sorted(found) for name, found in versions.items()}, onnx.defs.onnx_opset_version()


def _row_info(row: Row) -> dict[str, Any]:
    info: dict[str, Any] = {"to": row.nnrt_op.name.replace("OH_NN_OPS_", "") if row.nnrt_op is not None else None,
                            "decomposition": row.family if row.nnrt_op is None else None,
                            "source": f"mappings/{'ops' if row.nnrt_op is not None else 'onnx'}/{row.source}",
                            "notes": row.notes}
    requires = {name: rule.require for name, rule in row.attrs.items() if rule.require is not None}
    ignores = {name: rule.ignore for name, rule in row.attrs.items() if rule.ignore}
    if requires:
        info["requires"] = requires
    if ignores:
        info["ignores"] = ignores
    return info


def _spans(key: str, domain: str, versions: list[tuple[int, bool]], newest: int) -> list[dict[str, Any]]:
    """The model opsets 1..newest (of the operator's domain) where the operator exists, grouped where the answer is
    the same: converted by one row, or refused."""
    spans: list[dict[str, Any]] = []
    op_type = key.split(".")[-1] if domain else key
    for opset in range(1, newest + 1):
        defined = [deprecated for since, deprecated in versions if since <= opset] if versions else [False]
        if not defined:
            continue  # the operator does not exist at this opset yet
        row = find_row(op_type, opset, domain)
        state = id(row) if row is not None else None
        if spans and spans[-1]["_state"] == state and spans[-1]["opsets"][1] == opset - 1:
            spans[-1]["opsets"][1] = opset
            continue
        span: dict[str, Any] = {"_state": state, "opsets": [opset, opset], "converts": row is not None}
        if row is not None:
            span.update(_row_info(row))
        else:
            span["reason"] = refusal(key)[2:].strip(" ()") or "no mapping row"
        spans.append(span)
    for span in spans:
        del span["_state"]
    return spans


def onnx_op_support(op: str | None = None) -> list[dict[str, Any]]:
    """One entry per operator (``op``: that one only, by name or qualified contrib name such as
    ``com.microsoft.Attention``; a LookupError with suggestions when unknown): ``{"op", "domain", "versions",
    "converts": "yes" | "some opsets" | "no", "reason", "spans": [...]}``."""
    versions, newest = _schema_versions()
    rows = onnx_rows()
    contrib = sorted(key for key, found in rows.items() if found[0].domain)
    keys = sorted(versions) + contrib
    if op is not None:
        if op not in keys:
            close = difflib.get_close_matches(op, keys, n=3) or [k for k in keys if k.lower() == op.lower()]
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise LookupError(f"{op!r} is not an ONNX operator this onnx package knows, nor a contrib operator with a "
                              f"mapping row{hint}")
        keys = [op]
    reasons = unsupported_reasons()
    entries = []
    for key in keys:
        domain = rows[key][0].domain if key in rows and rows[key][0].domain else ""
        own = versions.get(key, []) if not domain else []
        last = max((r.until or r.since for r in rows.get(key, [])), default=1) if domain else newest
        spans = _spans(key, domain, own, max(last, 1))
        converting = [s for s in spans if s["converts"]]
        entries.append({
            "op": key, "domain": domain or "ai.onnx",
            "versions": [since for since, _ in own] if not domain else sorted({r.since for r in rows[key]}),
            "deprecated_since": next((since for since, deprecated in own if deprecated), None),
            "converts": "no" if not converting else "yes" if len(converting) == len(spans) else "some opsets",
            "reason": reasons.get(key),
            "spans": spans,
        })
    return entries


def _target(span: dict[str, Any]) -> str:
    if span.get("to"):
        return span["to"]
    return f"a decomposition ({span['decomposition']})"


def _opsets(span: dict[str, Any]) -> str:
    lo, hi = span["opsets"]
    return f"opset {lo}" if lo == hi else f"opsets {lo}-{hi}"


def support_lines(entry: dict[str, Any]) -> list[str]:
    """``ops --onnx OP``: the operator, then each opset span with its row or reason."""
    versions = ", ".join(map(str, entry["versions"]))
    deprecated = f", deprecated since {entry['deprecated_since']}" if entry["deprecated_since"] else ""
    answer = {"yes": "converts", "some opsets": "converts at some opsets", "no": "does not convert"}[entry["converts"]]
    lines = [f"{entry['op']} ({entry['domain']}; versions {versions}{deprecated}): {answer}"]
    if entry["converts"] == "no" and entry["reason"]:
        lines.append(f"  why: {entry['reason']}")
        return lines
    for span in entry["spans"]:
        if not span["converts"]:
            lines.append(f"  {_opsets(span)}: does not convert: {span['reason']}")
            continue
        lines.append(f"  {_opsets(span)}: -> {_target(span)}  ({span['source']})")
        if span["notes"]:
            lines.append(f"    {span['notes']}")
        for name, value in span.get("requires", {}).items():
            lines.append(f"    attribute {name}: only {value!r} converts")
        for name, why in span.get("ignores", {}).items():
            lines.append(f"    attribute {name}: ignored ({why})")
    return lines


def support_table(entries: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """``ops --onnx``: one row per operator (op, versions, support, to what or why not)."""
    rows = [("op", "versions", "converts", "to / why not")]
    for entry in entries:
        spans = entry["spans"]
        converting = [s for s in spans if s["converts"]]
        if not converting:
            what = entry["reason"] or (spans[0]["reason"] if spans else "-")
        else:
            targets = sorted({_target(s) for s in converting})
            what = ", ".join(targets)
            if entry["converts"] == "some opsets":
                what += "; at " + ", ".join(_opsets(s) for s in converting)
        rows.append((entry["op"], ",".join(map(str, entry["versions"])), entry["converts"], what))
    return rows


_UNSUPPORTED_HEAD = """# ONNX operators the importer does not convert, and why

<!-- generated by `nnrt-onnx ops --onnx --markdown > docs/onnx_unsupported.md` from mappings/onnx_unsupported.toml;
a test keeps it fresh -->

Every operator of the default ONNX domain that the installed onnx package knows either has a mapping row
(`docs/onnx_conformance.md` lists how each fares on the node suite) or is listed here with the reason, which the
importer also gives with its `unsupported_op` problem and `nnrt-onnx ops --onnx OP` shows.
`tests/onnx/test_unsupported_doc.py` fails when this list and the mapping rows disagree.

| operator | why it cannot be expressed with the {count} NNRt operations |
|---|---|
"""

_UNSUPPORTED_TAIL = """
Element types without an NNRt data type (bfloat16, float8 variants, float4, int4/uint4, int2/uint2, strings,
complex) are rejected per node with `unsupported_dtype`, whatever the operator.

Operators of other domains: onnxruntime's contrib operators (com.microsoft) that its quantization and
transformer-optimization tools emit convert (docs/onnx_import.md, "onnxruntime's contrib operators"); any other
com.microsoft operator, and any other domain, is reported per node (`unsupported_op`).
"""


def unsupported_markdown() -> str:
    """docs/onnx_unsupported.md."""
    from ..enums import OH_NN_OperationType

    lines = [f"| {op} | {reason} |" for op, reason in sorted(unsupported_reasons().items())]
    return (_UNSUPPORTED_HEAD.format(count=len(OH_NN_OperationType)) + "\n".join(lines) + "\n" + _UNSUPPORTED_TAIL)


__all__ = ["onnx_op_support", "support_lines", "support_table", "unsupported_markdown"]
