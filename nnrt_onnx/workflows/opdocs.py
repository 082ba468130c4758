"""The op-support matrix, generated from the op table (docs/ops.md and ``nnrt-onnx ops``)."""
from __future__ import annotations

from typing import Any

from ..kernels import get_kernel
from ..optable import OpSpec, ParamSpec, op_table

HEADER = """# Supported operators

Generated from the op table in `mappings/ops/` by `nnrt-onnx ops --markdown > docs/ops.md`
(`tests/test_opdocs.py` fails when this file is stale). One row per `OH_NN_OperationType`.

- **inputs / outputs**: the counts the runtime accepts.
- **parameters**: `tensor type: dtype[element count]` (`[*]` = count not checked, `a or b` = forms told apart by element count);
  `*` marks the parameter carrying the fused activation, `!` a required one.
- **dtypes**: the data types the native kernel computes in (see `dtypes` in the entry).
- **quantized**: how quantized operands run — `dequantize` means the executor dequantizes inputs with their
  quant params, runs the float kernel and quantizes outputs with the output's params; `native` means the
  kernel works on the integers itself.

"""


def _param_text(entry: OpSpec, spec: ParamSpec) -> str:
    forms = " or ".join(f"{v.dtype.name[6:]}[{'*' if v.count is None else v.count}]" for v in spec.variants)
    mark = "*" if entry.fuse in spec.keywords else ""
    mark += "!" if spec.required else ""
    return f"`{spec.tensor_type.name[6:]}`{mark}: {forms}"


def op_rows() -> list[dict[str, Any]]:
    rows = []
    for entry in op_table().values():
        rows.append({
            "op": entry.op.name,
            "value": int(entry.op),
            "summary": entry.summary,
            "layout": entry.layout,
            "inputs": list(entry.inputs),
            "outputs": list(entry.outputs),
            "max_params": entry.param_max,
            "params": [{
                "type": spec.tensor_type.name,
                "forms": [{"keyword": v.to, "dtype": v.dtype.name, "count": v.count, "rank": v.rank,
                           "range": list(v.value_range) if v.value_range else None} for v in spec.variants],
                "required": spec.required,
                "fused_activation": entry.fuse in spec.keywords,
                "meaning": spec.meaning,
            } for spec in entry.own_params],
            "defaults": entry.defaults,
            "dtypes": list(entry.raw.get("dtypes", [])),
            "quantized": entry.quant,
            "native_kernel": get_kernel(entry.op) is not None,
        })
    return rows


def _count(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else (f"≥{lo}" if hi >= 200 else f"{lo}–{hi}")


def ops_markdown() -> str:
    lines = [HEADER, "| op | inputs | outputs | parameters | dtypes | quantized | layout | summary |",
             "|---|---|---|---|---|---|---|---|"]
    for entry in op_table().values():
        params = "<br>".join(_param_text(entry, spec) for spec in entry.own_params) or "—"
        dtypes = ", ".join(entry.raw.get("dtypes", [])) or "—"
        kernel = "" if get_kernel(entry.op) is not None else " (no native kernel)"
        lines.append(f"| `{entry.op.name[10:]}` ({int(entry.op)}) | {_count(*entry.inputs)} | {_count(*entry.outputs)} | "
                     f"{params} | {dtypes} | {entry.quant}{kernel} | {entry.layout} | {entry.summary} |")
    return "\n".join(lines) + "\n"
