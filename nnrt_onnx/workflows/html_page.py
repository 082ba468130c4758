"""What the HTML pages of ``nnrt-onnx check --report`` share: the frame of a self-contained page (inline CSS, no
script, no external resource), the verdict banner, the "Run" section (command line, versions, phase times), the
cell formats, and writing a page (atomically).

A verdict is one of three states, each with its own colour and its own words, so that neither colour nor words
alone carry it: ``pass`` (green, "PASS"), ``warn`` (amber, "PASS WITH WARNINGS") and ``fail`` (red, "FAIL").
"""
from __future__ import annotations

import datetime
import html
import math
import platform
import sys
from typing import Any, Sequence

# the verdict states: (banner words, banner colour); the CSS below and the banner take them from here
STATES = {"pass": ("PASS", "#1e7b34"), "warn": ("PASS WITH WARNINGS", "#a15c00"), "fail": ("FAIL", "#b3261e")}
# the series of the charts: (CSS colour, what the legend calls it)
SERIES = {"native-ort": ("#1f6fb2", "native vs onnxruntime"), "diverged": ("#b3261e", "outside tolerance"),
          "native-f64": ("#e07b00", "native vs float64"), "ort-f64": ("#6a3d9a", "onnxruntime vs float64")}
MONO = 'ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace'


def e(value: Any) -> str:
    """``value`` as HTML text (quotes escaped too: safe in attributes)."""
    return html.escape(str(value), quote=True)


def g(value) -> str:
    """A number in a cell: 3 significant digits, ``inf``, ``NaN``, ``-`` for none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.3g}"
    return str(value)


def count(value: int) -> str:
    """An element count with thousands separators."""
    return f"{value:,}"


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def byte_size(value: int | None) -> str:
    if value is None:
        return "-"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value} B"


def _series_css() -> str:
    rules = []
    for name, (colour, _) in SERIES.items():
        rules.append(f".s-{name} {{ fill: {colour}; stroke: {colour}; color: {colour}; }}")
    for name, (_, colour) in STATES.items():
        rules.append(f".verdict.{name} {{ background: {colour}; }} .state-{name} {{ color: {colour}; }}")
    return "\n".join(rules)


CSS = f"""
html {{ -webkit-text-size-adjust: 100%; }}
body {{ font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 20px 24px; color: #222;
  max-width: 1320px; }}
h1 {{ font-size: 19px; margin: 0 0 10px; overflow-wrap: anywhere; }} h2 {{ font-size: 16px; margin: 26px 0 6px; }}
code, .num, .mono {{ font-family: {MONO}; font-size: 12.5px; }}
.num {{ text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }}
th.num {{ font-family: inherit; font-size: inherit; }}
.verdict {{ color: #fff; padding: 10px 16px; border-radius: 6px; margin: 0 0 12px; }}
.verdict .word {{ font-size: 22px; font-weight: 700; letter-spacing: .02em; margin-right: 12px; }}
.verdict .why {{ font-size: 15px; }}
.state-pass, .state-warn, .state-fail {{ font-weight: 700; }}
.wide {{ overflow-x: auto; max-width: 100%; }}
table {{ border-collapse: collapse; margin: 6px 0; }}
th, td {{ padding: 3px 8px; border-bottom: 1px solid #e2e2e2; text-align: left; vertical-align: baseline; }}
th {{ white-space: nowrap; font-weight: 600; background: #f6f6f6; }}
td {{ white-space: nowrap; }}
td.text {{ white-space: normal; min-width: 16ch; max-width: 60ch; overflow-wrap: anywhere; }}
tr.bad td {{ background: #fde8e8; }} tr.warn td {{ background: #fff4d6; }} tr.skipped td {{ color: #8a8a8a; }}
table.kv th {{ background: none; text-align: right; color: #555; font-weight: 500; }}
table.kv td {{ white-space: normal; overflow-wrap: anywhere; }}
ul.warnings {{ margin: 4px 0 10px; padding-left: 20px; }} ul.warnings li {{ color: #6b4100; }}
p.note {{ color: #444; }}
.bar-cell {{ width: 160px; }} .time-bar {{ height: 9px; background: #8aa9c8; border-radius: 2px; }}
svg text {{ font-family: system-ui, sans-serif; }}
svg .frame {{ fill: #fbfbfb; stroke: #bbb; }} svg .grid {{ stroke: #e6e6e6; }}
svg .axis {{ font-size: 11px; fill: #555; }} svg .band {{ fill: #f0f0f0; }}
svg .tolerance {{ stroke: #777; stroke-dasharray: 5 4; fill: none; }}
svg .divergence {{ stroke: #b3261e; stroke-width: 2; }} svg .culprit {{ stroke: #6a3d9a; stroke-width: 2; }}
svg .divergence-label {{ fill: #b3261e; font-size: 11px; }} svg .culprit-label {{ fill: #6a3d9a; font-size: 11px; }}
svg .diagonal {{ stroke: #999; stroke-dasharray: 4 3; }}
svg .bar {{ fill: #1f6fb2; }} svg .bar.outside {{ fill: #b3261e; }} svg .bar.special {{ fill: #555; }}
svg .count {{ font-size: 9px; fill: #333; }}
{_series_css()}
.legend {{ display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 6px 0; }}
.legend .key {{ display: inline-flex; align-items: center; gap: 6px; }}
.figures {{ display: flex; flex-wrap: wrap; gap: 12px 28px; align-items: flex-start; }}
figure {{ margin: 6px 0 14px; }} figcaption {{ font-size: 13px; color: #444; max-width: 620px; }}
.layers {{ width: max-content; }}
.layers table {{ table-layout: fixed; margin: 0; }}
.layers td {{ overflow: hidden; text-overflow: ellipsis; }}
.layers details {{ border-left: 3px solid #cfd8e3; margin: 0; }}
.layers details[open] {{ border-left-color: #1f6fb2; }}
.layers summary {{ cursor: pointer; padding: 3px 8px; color: #3b5b7a; background: #f3f6f9;
  border-bottom: 1px solid #e2e2e2; white-space: nowrap; }}
a {{ color: #1f5fa0; }}
"""


def page(title: str, body: Sequence[str]) -> str:
    """A whole self-contained page."""
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{e(title)}</title>", f"<style>{CSS}</style></head><body>", *body, "</body></html>\n"])


def banner(state: str, why: str) -> str:
    """The verdict: its colour and its words, and why in one sentence."""
    words, _ = STATES[state]
    return (f'<div class="verdict {state}" data-state="{state}"><span class="word">{e(words)}</span>'
            f'<span class="why">{e(why)}</span></div>')


def versions() -> dict[str, str]:
    """What produced a report: this package, onnxruntime, onnx, numpy, Python, the platform."""
    from importlib import metadata

    found = {}
    for name in ("nnrt-onnx", "onnxruntime", "onnx", "numpy"):  # as installed (the package's own metadata too)
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    found["Python"] = platform.python_version()
    found["platform"] = f"{platform.system()} {platform.machine()}".strip() or sys.platform
    return found


def run_section(command: str | None, phases: Sequence[tuple[str, float]], total: float | None,
                extra: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The "Run" section: the command line, when, the versions, and each phase's time (the time no phase covers as
    "other", so that the rows add up to the total)."""
    rows = [("command", f"<code>{e(command)}</code>" if command else "(not run from the command line)"),
            ("written", e(datetime.datetime.now().astimezone().isoformat(timespec="seconds"))),
            ("versions", e(", ".join(f"{k} {v}" for k, v in versions().items())))]
    rows += [(label, e(text)) for label, text in extra]
    parts = ["<h2>Run</h2>", '<table class="kv">']
    parts += [f"<tr><th>{e(k)}</th><td>{v}</td></tr>" for k, v in rows]
    parts.append("</table>")
    if total is not None:
        timing = list(phases)
        other = total - sum(s for _, s in timing)
        if other > 0.0005 * max(total, 1e-9) and timing:
            timing.append(("other (inputs, comparisons, reports)", other))
        longest = max([s for _, s in timing] + [total, 1e-9])
        parts.append('<table class="timings"><thead><tr><th>phase</th><th class="num">time</th><th>share</th>'
                     '</tr></thead><tbody>')
        for label, spent in timing:
            width = max(1.0, 100.0 * spent / longest)
            parts.append(f'<tr class="phase"><td>{e(label)}</td><td class="num" data-seconds="{spent:.6f}">'
                         f'{seconds(spent)}</td><td class="bar-cell"><div class="time-bar" '
                         f'style="width:{width:.1f}%"></div></td></tr>')
        parts.append(f'<tr class="total"><th>total</th><td class="num" data-seconds="{total:.6f}">{seconds(total)}'
                     f'</td><td></td></tr></tbody></table>')
    return parts


def write_page(path: str, text: str) -> None:
    """Write one page atomically, or say why not (with the path)."""
    from ..errors import UserError
    from ..serialization import atomic_write

    try:
        atomic_write(path, [text.encode()])
    except OSError as exc:
        raise UserError(f"--report {path}: cannot write ({exc.strerror or exc})") from None


def legend(items: Sequence[tuple[str, str]]) -> str:
    """A legend of (symbol SVG, words) entries; the symbols carry the series' classes, so their colours are the
    chart's."""
    keys = "".join(f'<span class="key">{symbol}<span>{e(words)}</span></span>' for symbol, words in items)
    return f'<div class="legend">{keys}</div>'


__all__ = ["CSS", "SERIES", "STATES", "banner", "byte_size", "count", "e", "g", "legend", "page", "run_section",
           "seconds", "versions", "write_page"]
