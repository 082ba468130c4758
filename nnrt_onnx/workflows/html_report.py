"""``nnrt-onnx check --report FILE.html``: one self-contained page (inline CSS and SVG, no script, no external
resource) with the output table and the per-layer error chart.

The chart plots, for every compared layer, the largest ``max rel`` of native against onnxruntime (one
``<circle class="point native-ort">`` per layer, ``data-index`` its ONNX node index) on a log scale against the
layer's position in the ONNX graph; with a float64 opinion, also each side against float64 (``native-f64``,
``ort-f64``). The tolerance is a dashed line; the first divergence and the float64 culprit are vertical lines
(``class="divergence"``, ``class="culprit"``). Exact agreement (0) sits on the bottom edge, infinity on the top.
"""
from __future__ import annotations

import html
import math
from typing import Any

WIDTH, HEIGHT = 960, 340
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 40


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _g(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isinf(value):
            return "inf"
        return f"{value:.3g}"
    return str(value)


def _layer_points(report) -> list[dict[str, Any]]:
    points = []
    for layer in report.layers or []:
        if layer.status == "not compared":
            continue
        worst = max((c.max_rel for c in layer.outputs), default=0.0)
        f64_native = [c.float64.native_error for c in layer.outputs if c.float64 is not None]
        f64_ort = [c.float64.onnxruntime_error for c in layer.outputs if c.float64 is not None]
        points.append({"index": layer.index, "node": layer.node, "op": layer.op_type, "status": layer.status,
                       "native-ort": worst, "native-f64": max(f64_native) if f64_native else None,
                       "ort-f64": max(f64_ort) if f64_ort else None, "verdict": layer.verdict})
    return points


def error_chart(report) -> str:
    """The per-layer chart as an inline ``<svg>`` element."""
    points = _layer_points(report)
    series = ["native-ort", "native-f64", "ort-f64"]
    values = [p[s] for p in points for s in series if p[s] is not None and 0 < p[s] < math.inf]
    tolerance = next((c.rtol for layer in report.layers or [] for c in layer.outputs if c.rtol > 0), 1e-4)
    values.append(tolerance)
    low = math.floor(math.log10(min(values))) - 1
    high = math.ceil(math.log10(max(values)))
    if high <= low:
        high = low + 1
    count = max(report.onnx_nodes - 1, 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(index: int) -> float:
        return LEFT + plot_w * index / count

    def y(value: float | None) -> float:
        if value is None or value <= 0:
            return TOP + plot_h
        if math.isinf(value):
            return TOP
        return TOP + plot_h * (high - min(max(math.log10(value), low), high)) / (high - low)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="per-layer error">',
             f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="frame"/>']
    for decade in range(low, high + 1):
        gy = y(10.0 ** decade)
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{gy:.1f}" y2="{gy:.1f}" class="grid"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{gy + 4:.1f}" class="axis" text-anchor="end">1e{decade}</text>')
    ty = y(tolerance)
    parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}" class="tolerance"/>')
    parts.append(f'<text x="{LEFT + plot_w - 4}" y="{ty - 4:.1f}" class="axis" text-anchor="end">tolerance '
                 f'{_g(tolerance)}</text>')
    for label, layer in (("divergence", report.first_divergence), ("culprit", report.culprit)):
        if layer is not None:
            lx = x(layer.index)
            parts.append(f'<line x1="{lx:.1f}" x2="{lx:.1f}" y1="{TOP}" y2="{TOP + plot_h}" class="{label}" '
                         f'data-index="{layer.index}"><title>{_e(label)}: #{layer.index} {_e(layer.node)} '
                         f'({_e(layer.op_type)})</title></line>')
            parts.append(f'<text x="{lx + 4:.1f}" y="{TOP + 12 + (14 if label == "culprit" else 0)}" '
                         f'class="{label}-label">{_e(label)}: {_e(layer.node)} ({_e(layer.op_type)})</text>')
    shapes = {"native-ort": "circle", "native-f64": "square", "ort-f64": "diamond"}
    for name in series:
        for p in points:
            value = p[name]
            if value is None:
                continue
            px, py = x(p["index"]), y(value)
            title = (f'<title>#{p["index"]} {_e(p["node"])} ({_e(p["op"])}): {name} max rel {_g(value)}'
                     f'{" - " + _e(p["verdict"]) if p["verdict"] else ""}</title>')
            attrs = f'class="point {name} {p["status"]}" data-index="{p["index"]}" data-value="{_g(value)}"'
            if shapes[name] == "circle":
                parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" {attrs}>{title}</circle>')
            elif shapes[name] == "square":
                parts.append(f'<rect x="{px - 3:.1f}" y="{py - 3:.1f}" width="6" height="6" {attrs}>{title}</rect>')
            else:
                parts.append(f'<path d="M{px:.1f} {py - 4:.1f} l4 4 l-4 4 l-4 -4 z" {attrs}>{title}</path>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" class="axis" text-anchor="middle">ONNX node '
                 f'index (0 to {report.onnx_nodes - 1})</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _table(headers: list[str], rows: list[list[Any]], classes: list[str] | None = None) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        css = f' class="{_e(classes[i])}"' if classes and classes[i] else ""
        body.append(f"<tr{css}>" + "".join(f"<td>{_e(cell)}</td>" for cell in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _stats(stats) -> str:
    if stats is None or stats.min is None:
        return "-"
    return (f"min {_g(stats.min)}, max {_g(stats.max)}, mean {_g(stats.mean)}, std {_g(stats.std)}, "
            f"NaN {stats.nan}, Inf {stats.inf}")


CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; } th, td { padding: 3px 8px; border-bottom: 1px solid #ddd;
  text-align: left; font-variant-numeric: tabular-nums; }
tr.bad td { background: #fde8e8; } tr.warn td { background: #fff6dc; } tr.skipped td { color: #999; }
.ok { color: #176b2c; font-weight: bold; } .fail { color: #b3261e; font-weight: bold; }
.chart .frame { fill: #fafafa; stroke: #bbb; } .chart .grid { stroke: #e4e4e4; }
.chart .axis { font-size: 11px; fill: #555; } .chart .tolerance { stroke: #888; stroke-dasharray: 5 4; }
.chart .divergence { stroke: #b3261e; stroke-width: 2; } .chart .culprit { stroke: #7b1fa2; stroke-width: 2; }
.chart .divergence-label { fill: #b3261e; font-size: 11px; } .chart .culprit-label { fill: #7b1fa2; font-size: 11px; }
.chart .native-ort { fill: #1f6fb2; } .chart .native-ort.diverged { fill: #b3261e; }
.chart .native-f64 { fill: #e07b00; } .chart .ort-f64 { fill: #2e7d32; }
.legend span { margin-right: 16px; }
"""


def html_report(report) -> str:
    """The whole page for a :class:`ParityReport`."""
    verdict = "OK" if report.ok else "FAIL"
    inputs = ", ".join(f"{n} {i['dtype']} {i['shape']} ({i['source']})" for n, i in report.inputs.items())
    rows, classes = [], []
    for c in report.outputs:
        tolerance = "exact" if c.rtol == 0 and c.atol == 0 else f"rtol {c.rtol:g}, atol {c.atol:.2g}"
        rows.append([c.name, c.dtype, c.shape, _g(c.max_abs), _g(c.max_rel), f"{c.mismatched}/{c.size}",
                     "-" if c.cosine is None else f"{c.cosine:.6f}", tolerance,
                     ("within" if c.within else "OUTSIDE") + (f" ({c.note})" if c.note else ""),
                     _stats(c.native_stats), _stats(c.reference_stats),
                     c.float64.text() if c.float64 is not None else "-"])
        classes.append("" if c.passed(report.strict) and not c.warned else ("warn" if c.passed() else "bad"))
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>nnrt-onnx check {_e(report.model)}</title>", f"<style>{CSS}</style></head><body>",
        f"<h1>nnrt-onnx check {_e(report.model)}: <span class=\"{verdict.lower()}\">{verdict}</span></h1>",
        f"<p>{report.onnx_nodes} ONNX nodes &rarr; {report.nnrt_operations} NNRt operations, native vs "
        f"onnxruntime{', seed ' + str(report.seed) if report.seed is not None else ''}; inputs: {_e(inputs)}</p>",
        "<h2>Outputs</h2>",
        _table(["tensor", "dtype", "shape", "max abs", "max rel", "outside", "cosine", "tolerance", "result",
                "native", "onnxruntime", "float64"], rows, classes),
    ]
    if report.expected:
        parts.append("<h2>Against the expected outputs</h2>")
        parts.append(_table(["tensor", "side", "max abs", "max rel", "outside", "result"],
                            [[c.name, side, _g(c.max_abs), _g(c.max_rel), f"{c.mismatched}/{c.size}",
                              "within" if c.within else "OUTSIDE"]
                             for cs, side in ((report.expected, "native"), (report.expected_reference, "onnxruntime"))
                             for c in cs]))
    for warning in report.warnings:
        parts.append(f'<p class="warning">warning: {_e(warning)}</p>')
    for note in report.notes:
        parts.append(f'<p class="note">{_e(note)}</p>')
    if report.layers is not None:
        compared = [layer for layer in report.layers if layer.status != "not compared"]
        fused = sum(layer.reason == "fused away" for layer in report.layers)
        folded = sum(layer.reason == "constant-folded" for layer in report.layers)
        parts.append("<h2>Per layer</h2>")
        parts.append(f"<p>{len(compared)} of {len(report.layers)} ONNX nodes compared ({fused} fused away in NNRt, "
                     f"{folded} constant-folded); {sum(layer.status == 'diverged' for layer in compared)} outside "
                     f"tolerance.</p>")
        parts.append('<p class="legend"><span>&#9679; native vs onnxruntime</span><span>&#9632; native vs '
                     'float64</span><span>&#9670; onnxruntime vs float64</span><span>- - tolerance</span></p>')
        parts.append(error_chart(report))
        layer_rows, layer_classes = [], []
        for layer in report.layers:
            if layer.status == "not compared":
                layer_rows.append([layer.index, layer.node, layer.op_type, "-", "-", "-", "-", layer.reason, ""])
                layer_classes.append("skipped")
                continue
            worst = max(layer.outputs, key=lambda c: c.max_rel)
            layer_rows.append([layer.index, layer.node, layer.op_type, ", ".join(layer.nnrt_ops) or "-",
                               _g(worst.max_abs), _g(worst.max_rel),
                               "-" if worst.cosine is None else f"{worst.cosine:.6f}", layer.status,
                               layer.verdict or ""])
            layer_classes.append("bad" if layer.status == "diverged" else "")
        parts.append(_table(["#", "node", "op", "NNRt op", "max abs", "max rel", "cosine", "status", "float64"],
                            layer_rows, layer_classes))
    if report.repro is not None:
        state = "reproduces" if report.repro["reproduces"] else "does not reproduce on its own"
        parts.append(f"<p>repro: {_e(report.repro['path'])} ({state}): <code>{_e(report.repro['command'])}</code></p>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


__all__ = ["error_chart", "html_report"]
