"""The driver's view as text: the op-to-structure table (docs/hdi.md, ``nnrt-onnx ops --hdi``) and a model's HDI view
(``nnrt-onnx inspect --hdi``), both from :mod:`nnrt_onnx.hdi`."""
from __future__ import annotations

from typing import Any

from ..hdi import CONVERSION_FUNCTIONS, hdi_definitions, structure_rows

HEADER = """# The driver's view (HDI v2.1)

Generated from the op table in `mappings/ops/` (each entry's `[hdi]` section) and `mappings/hdi.toml` by
`nnrt-onnx ops --hdi --markdown > docs/hdi.md` (`tests/test_hdi.py` fails when this file is stale).

At `OH_NNModel_Finish` the real runtime turns every operation into a node of the driver interface
(`ohos.hdi.nnrt.v2_1`, `NodeAttrTypes.idl`): a **NodeType** and an **attribute structure** whose fields come from the
operation's parameter tensors, its inputs' shapes, or constants of the builder; parameter tensors leave the tensor
list (which is renumbered), except the few a builder does not mark. `nnrt-onnx inspect MODEL --hdi` shows a model
that way (`--json` for all of it), `nnrt_onnx.hdi.hdi_view(model)` returns it. One row per `OH_NN_OperationType`:

- **fields**, in the IDL's order: `field ← PARAM` comes from that parameter tensor (its value converted by a named
  conversion where the builder converts it, see below), and when the model omits it the driver gets the value after
  *absent* — the builder's default; where the native kernels read an omitted parameter otherwise, their value
  follows in parentheses (docs/deviations.md);
  `field ← input #i dims[k]` is read from an input's shape; `field = VALUE` is fixed by the builder.
- **quantType**: `QUANT_TYPE_ALL` when the builder follows output #0 and that tensor has quant params, else
  `QUANT_TYPE_NONE`.
- **kept / dropped**: parameter tensors the builder leaves in the tensor list; parameters it validates but never
  passes on.

"""


def value_text(value: Any) -> str:
    """An HDI value: an enum as ``NAME (n)``, a float briefly, lists as lists."""
    if isinstance(value, dict) and "value" in value:
        name = value.get("name")
        return f"{name} ({value['value']})" if name else value_text(value["value"])
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = f"{value:.7g}"
        return text if any(c in text for c in ".ein") else text + ".0"
    if isinstance(value, list):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return "null" if value is None else str(value)


def _short(tensor_type: str) -> str:
    return tensor_type[len("OH_NN_"):]


def field_text(row: dict[str, Any], code: str = "") -> str:
    """One field of the table: where its value comes from."""
    q = code  # markdown: backticks around names and values
    name = row["field"]
    if row["source"] == "const":
        text = f"{name} = {q}{value_text(row['value'])}{q}"
    elif row["source"] == "input":
        dims = ", ".join(f"dims[{d}]" for d in row["dims"])
        text = f"{name} ← input #{row['input']} {dims}"
    else:
        feeding = " / ".join(f"{q}{_short(t)}{q}" for t in row["params"])
        text = f"{name} ← {feeding}"
        if row["element_count"] is not None:
            text += f" of {row['element_count']} element{'s' if row['element_count'] != 1 else ''}"
        if row["map"]:
            text += f" via {row['map']}"
        for given, value in row["when_given"].items():
            text += f"; {value_text(value)} when {' / '.join(q + _short(t) + q for t in given.split(', '))} is given"
        text += "; required" if row["absent"] is None else f"; absent: {q}{value_text(row['absent'])}{q}"
        if row["native_default"] is not None:
            text += f" (native kernels: {q}{value_text(row['native_default'])}{q})"
    return text + (f" — {row['note']}" if row["note"] else "")


def structure_lines() -> list[str]:
    """``nnrt-onnx ops --hdi``: each op, its NodeType and structure, then one line per field."""
    lines = []
    for row in structure_rows():
        lines.append(f"{row['value']:>3} {row['op']:<36} -> {row['struct']} ({row['nodeType']['name']} = "
                     f"{row['nodeType']['value']}), node \"{row['node_name']}:<i>\", quantType {row['quantType']}")
        lines.extend(f"      {field_text(f)}" for f in row["fields"])
        if row["kept_params"]:
            lines.append(f"      kept in the tensor list: {', '.join(row['kept_params'])}")
        for dropped in row["dropped"]:
            lines.append(f"      dropped: {', '.join(dropped['params'])}")
    return lines


def _conversions_markdown() -> list[str]:
    tables = hdi_definitions()["tables"]
    lines = ["## Conversions", "", "| name | parameter value → what the driver gets |", "|---|---|"]
    for name, table in tables.items():
        lines.append(f"| {name} | " + ", ".join(f"{k} → `{v}`" for k, v in table.items()) + " |")
    for name, fn in CONVERSION_FUNCTIONS.items():
        lines.append(f"| {name} | {' '.join((fn.__doc__ or '').split())} |")
    return lines + [""]


def hdi_markdown() -> str:
    """docs/hdi.md."""
    lines = [HEADER, "| op | NodeType | structure | fields | quantType | kept / dropped |", "|---|---|---|---|---|---|"]
    for row in structure_rows():
        fields = "<br>".join(field_text(f, "`") for f in row["fields"]) or "—"
        extra = [f"kept `{_short(t)}`" for t in row["kept_params"]]
        extra += [f"dropped {' / '.join('`' + _short(t) + '`' for t in d['params'])}" for d in row["dropped"]]
        lines.append(f"| `{row['op'][len('OH_NN_OPS_'):]}` ({row['value']}) | `{row['nodeType']['name']}` "
                     f"({row['nodeType']['value']}) | `{row['struct']}` | {fields} | {row['quantType']} | "
                     f"{'<br>'.join(extra) or '—'} |")
    lines += ["", *_conversions_markdown()]
    definitions = hdi_definitions()
    lines += ["## Structures no public operation reaches", "", "| structure | why |", "|---|---|"]
    lines += [f"| `{name}` | {why} |" for name, why in definitions["unreachable"].items()]
    lines += ["", "## Enums", "", f"`{definitions['interface']}` (NnrtTypes.idl):", ""]
    for enum, members in definitions["enums"].items():
        lines.append(f"- **{enum}**: " + ", ".join(f"`{name}` {value}" for name, value in members.items()))
    return "\n".join(lines) + "\n"


# -- a model -------------------------------------------------------------------------------------------------------

def _quant_text(params: list[dict[str, Any]]) -> str:
    if not params:
        return ""
    if len(params) == 1:
        p = params[0]
        return f"  quant scale {p['scale']:.7g} zeroPoint {p['zeroPoint']} numBits {p['numBits']}"
    scales = [p["scale"] for p in params]
    zero_points = sorted({p["zeroPoint"] for p in params})
    return (f"  quant {len(params)} params: scales {min(scales):.7g}..{max(scales):.7g}, zeroPoints "
            f"{', '.join(map(str, zero_points[:4]))}{', ...' if len(zero_points) > 4 else ''}")


def view_lines(view: dict[str, Any]) -> list[str]:
    """``nnrt-onnx inspect --hdi``: the tensor list and every node with its structure's field values."""
    tensors, nodes = view["allTensors"], view["nodes"]
    removed = len(view["removedParameters"])
    lines = [f"HDI model {view['name']} ({view['interface']}): {len(tensors)} tensors ({removed} parameter "
             f"tensor{'s' if removed != 1 else ''} removed), {len(nodes)} nodes, inputIndex {view['inputIndex']}, "
             f"outputIndex {view['outputIndex']}", "allTensors:"]
    width = max([len(t["name"]) for t in tensors] + [4])
    for t in tensors:
        label = f" ({t['model_name']})" if t["model_name"] and t["model_name"] != t["name"] else ""
        data = "" if t["dataBytes"] is None else f"  {t['dataBytes']} byte{'' if t['dataBytes'] == 1 else 's'}"
        lines.append(f"  #{t['index']:<4} {t['name']:<{width}}  {t['dataType']['name']:<17} {t['dims']} "
                     f"{t['format']['name']}  {t['role']}{data}{_quant_text(t['quantParams'])}{label}")
    lines.append("nodes:")
    for node in nodes:
        lines.append(f"  #{node['index']:<4} {node['name']}  {value_text(node['nodeType'])}  {node['struct']}  "
                     f"inputIndex {node['inputIndex']}  outputIndex {node['outputIndex']}  "
                     f"quantType {value_text(node['quantType'])}")
        attributes = node["attributes"]
        name_width = max([len(n) for n in attributes] + [1])
        values = {n: value_text(a) for n, a in attributes.items()}
        value_width = min(max([len(v) for v in values.values()] + [1]), 40)
        for field, attribute in attributes.items():
            lines.append(f"          {field:<{name_width}}  {values[field]:<{value_width}}  {attribute['source']}")
    return lines
