"""The per-layer error chart of ``nnrt-onnx check --report``: inline SVG, no script.

One column per *compared* layer, in graph order: the layers that were not compared (fused away in NNRt,
constant-folded) take no room -- a model whose weights are computed by hundreds of constant nodes would otherwise
spend most of the width on nothing. The x ticks name ONNX node indices. For every compared layer the largest
``max rel`` of native against onnxruntime (one ``<circle class="point native-ort">`` per layer, ``data-index`` its
ONNX node index, ``diverged`` among its classes when it is outside tolerance); with a float64 opinion, also each
side against float64 (``native-f64`` squares, ``ort-f64`` diamonds).

The y axis is logarithmic over the non-zero finite values. Exact agreement (0) has no place on it: such points sit
in a band of their own under the axis, labelled ``= 0``; infinite ones (a NaN or inf on one side) in a band above
it, labelled ``inf``. The tolerance is a dashed line; the first divergence and the float64 culprit are vertical
lines (``class="divergence"``, ``class="culprit"``).
"""
from __future__ import annotations

import math
from typing import Any

from .html_page import SERIES, e, g, legend

WIDTH, HEIGHT = 980, 340
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 44
BAND, BAND_GAP = 18, 8
SHAPES = {"native-ort": "circle", "native-f64": "square", "ort-f64": "diamond"}


def layer_points(report) -> list[dict[str, Any]]:
    """Each compared layer: its index, node, op, status, verdict and the worst value of each series."""
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


def symbol(shape: str, x: float, y: float, attrs: str, inner: str = "") -> str:
    """A circle, square or diamond centred on (x, y)."""
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" {attrs}>{inner}</circle>'
    if shape == "square":
        return f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" {attrs}>{inner}</rect>'
    return f'<path d="M{x:.1f} {y - 4:.1f} l4 4 l-4 4 l-4 -4 z" {attrs}>{inner}</path>'


def _key(shape: str, css: str) -> str:
    drawn = symbol(shape, 6, 6, f'class="{css}"')
    return f'<svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true">{drawn}</svg>'


def chart_legend(report) -> str:
    """The legend of the chart: the symbols in the chart's own colours (the same classes), only series present."""
    points = layer_points(report)
    items = [(_key("circle", "s-native-ort"), SERIES["native-ort"][1])]
    if any(p["status"] == "diverged" for p in points):
        items.append((_key("circle", "s-diverged"), "native vs onnxruntime, " + SERIES["diverged"][1]))
    for name in ("native-f64", "ort-f64"):
        if any(p[name] is not None for p in points):
            items.append((_key(SHAPES[name], f"s-{name}"), SERIES[name][1]))
    items.append(('<svg width="22" height="12" aria-hidden="true"><line x1="0" x2="22" y1="6" y2="6" '
                  'class="tolerance"/></svg>', "tolerance (rtol)"))
    return legend(items)


def error_chart(report) -> str:
    """The per-layer chart as an inline ``<svg>`` element."""
    points = layer_points(report)
    series = ["native-f64", "ort-f64", "native-ort"]  # native vs onnxruntime last: on top
    values = [p[s] for p in points for s in series if p[s] is not None]
    finite = [v for v in values if 0 < v < math.inf]
    tolerance = next((c.rtol for layer in report.layers or [] for c in layer.outputs if c.rtol > 0), 1e-4)
    finite.append(tolerance)
    low = math.floor(math.log10(min(finite)))
    high = math.ceil(math.log10(max(finite)))
    if high <= low:
        high = low + 1
    zeros = any(v == 0 for v in values)
    infinite = any(not v < math.inf for v in values)  # inf, or NaN
    count = max(len(points), 1)
    plot_w = WIDTH - LEFT - RIGHT
    top_band = TOP if infinite else None
    log_top = TOP + (BAND + BAND_GAP if infinite else 0)
    log_bottom = HEIGHT - BOTTOM - (BAND + BAND_GAP if zeros else 0)
    zero_band = HEIGHT - BOTTOM - BAND if zeros else None

    def x(rank: float) -> float:
        return LEFT + plot_w * (rank + 0.5) / count

    def y(value: float) -> float:
        if value == 0:
            return zero_band + BAND / 2
        if not value < math.inf:
            return top_band + BAND / 2
        return log_bottom - (log_bottom - log_top) * (min(max(math.log10(value), low), high) - low) / (high - low)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="per-layer error" data-layers="{len(points)}">',
             f'<rect x="{LEFT}" y="{log_top}" width="{plot_w}" height="{log_bottom - log_top}" class="frame"/>']
    for band, label, css in ((top_band, "inf", "band inf-band"), (zero_band, "= 0", "band zero-band")):
        if band is not None:
            parts.append(f'<rect x="{LEFT}" y="{band}" width="{plot_w}" height="{BAND}" class="{css}"/>')
            parts.append(f'<text x="{LEFT - 6}" y="{band + BAND / 2 + 4}" class="axis" text-anchor="end">{label}'
                         f'</text>')
    for decade in range(low, high + 1):
        gy = y(10.0 ** decade)
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{gy:.1f}" y2="{gy:.1f}" class="grid"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{gy + 4:.1f}" class="axis" text-anchor="end">1e{decade}</text>')
    ty = y(tolerance)
    parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}" class="tolerance"/>')
    parts.append(f'<text x="{LEFT + plot_w - 4}" y="{ty - 4:.1f}" class="axis" text-anchor="end">tolerance '
                 f'{g(tolerance)}</text>')
    rank_of = {p["index"]: rank for rank, p in enumerate(points)}
    for rank in _tick_ranks(len(points)):
        tx = x(rank)
        parts.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{HEIGHT - BOTTOM}" y2="{HEIGHT - BOTTOM + 4}" '
                     f'class="grid"/><text x="{tx:.1f}" y="{HEIGHT - BOTTOM + 15}" class="axis" '
                     f'text-anchor="middle">#{points[rank]["index"]}</text>')
    for label, layer in (("divergence", report.first_divergence), ("culprit", report.culprit)):
        if layer is not None and layer.index in rank_of:
            lx = x(rank_of[layer.index])
            parts.append(f'<line x1="{lx:.1f}" x2="{lx:.1f}" y1="{TOP}" y2="{HEIGHT - BOTTOM}" class="{label}" '
                         f'data-index="{layer.index}"><title>{e(label)}: #{layer.index} {e(layer.node)} '
                         f'({e(layer.op_type)})</title></line>')
            right = lx > LEFT + plot_w * 0.6  # a label near the right edge goes left of its line
            parts.append(f'<text x="{lx + (-4 if right else 4):.1f}" y="{log_top + 12 + (14 if label == "culprit" else 0)}" '
                         f'class="{label}-label" text-anchor="{"end" if right else "start"}">{e(label)}: '
                         f'#{layer.index} {e(layer.node)} ({e(layer.op_type)})</text>')
    for name in series:
        for rank, p in enumerate(points):
            value = p[name]
            if value is None:
                continue
            title = (f'<title>#{p["index"]} {e(p["node"])} ({e(p["op"])}): {name} max rel {g(value)}'
                     f'{" - " + e(p["verdict"]) if p["verdict"] else ""}</title>')
            colour = "s-diverged" if name == "native-ort" and p["status"] == "diverged" else f"s-{name}"
            attrs = (f'class="point {name} {p["status"]} {colour}" data-index="{p["index"]}" '
                     f'data-value="{g(value)}"')
            parts.append(symbol(SHAPES[name], x(rank), y(value), attrs, title))
    not_compared = len(report.layers or []) - len(points)
    parts.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" class="axis" text-anchor="middle">the '
                 f'{len(points)} compared layers in graph order (ticks: ONNX node index; the {not_compared} not '
                 f'compared take no room); y: max rel, log scale</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _tick_ranks(n: int, wanted: int = 10) -> list[int]:
    if n <= 0:
        return []
    step = max(1, math.ceil(n / wanted))
    ranks = list(range(0, n, step))
    if n - 1 - ranks[-1] >= step / 2:
        ranks.append(n - 1)
    return ranks


__all__ = ["chart_legend", "error_chart", "layer_points", "symbol"]
