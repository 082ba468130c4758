"""Pictures of how one output differs: a histogram of ``|native - onnxruntime|`` and a scatter of native against
onnxruntime, as inline SVG (``nnrt-onnx check --report``).

The histogram counts every element once. Exact agreement has its own bar, ``= 0``, left of the log-spaced bins of
the non-zero differences (a zero has no place on a log axis, so it is never drawn as a small number); elements
where either side is NaN or infinite have their own bar, ``NaN/inf``, on the right. Each bar is split into the
elements within tolerance (blue) and those outside (red, on top), by the check's own rule
``|native - onnxruntime| <= atol + rtol * |onnxruntime|`` (``atol`` the effective one, as the comparison carries
it); the counts are on the bars' ``data-count`` / ``data-outside`` attributes and in their tooltips. The count axis
is logarithmic (``log10(1 + count)``), so that a handful of outliers next to a million agreeing elements still
shows.

The scatter draws native (y) against onnxruntime (x) for the finite pairs, the diagonal ``y = x`` dashed: all of
them up to :data:`SCATTER_POINTS`, beyond that evenly spaced elements plus the :data:`SCATTER_WORST` largest
differences (so no outlier is ever left out); the caption says how many of how many.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .html_page import count, e, g

SCATTER_POINTS = 1500
SCATTER_WORST = 100
MAX_BINS = 36

H_WIDTH, H_HEIGHT = 520, 250
S_SIZE = 300
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 56, 12, 14, 44


@dataclass
class Bar:
    """One bar of the histogram: ``kind`` is "zero", "bin" (``low <= |diff| < high``) or "special" (NaN/inf)."""

    kind: str
    label: str
    count: int
    outside: int
    low: float | None = None
    high: float | None = None


def _sides(native: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    native, reference = np.asarray(native), np.asarray(reference)
    if native.size != reference.size or native.dtype.kind not in "fiub" or reference.dtype.kind not in "fiub":
        return None
    return native.reshape(-1).astype(np.float64), reference.reshape(-1).astype(np.float64)


def difference_bars(native: np.ndarray, reference: np.ndarray, rtol: float, atol: float) -> list[Bar] | None:
    """The histogram's bars (None: the sides cannot be compared element by element -- sizes or dtypes differ)."""
    sides = _sides(native, reference)
    if sides is None:
        return None
    a, b = sides
    finite = np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a[finite] - b[finite])
        outside = diff > atol + rtol * np.abs(b[finite])
    same_special = (np.isnan(a) & np.isnan(b)) | ((a == b) & ~finite)
    special = ~finite
    zero = diff == 0
    bars = [Bar("zero", "= 0", int(zero.sum()), int((zero & outside).sum()), 0.0, 0.0)]
    positive = diff[~zero]
    if positive.size:
        exponents = np.log10(positive)
        low, high = math.floor(float(exponents.min())), math.ceil(float(exponents.max()))
        if high <= low:
            high = low + 1
        decades = high - low
        per_decade = max(1, min(4, MAX_BINS // decades))
        bins = decades * per_decade
        # the bin of each difference, from its exponent: [low + i/k, low + (i+1)/k); the top edge joins the last bin
        position = np.minimum(((exponents - low) * per_decade).astype(np.int64), bins - 1)
        counts = np.bincount(position, minlength=bins)
        outside_counts = np.bincount(position, weights=outside[~zero], minlength=bins).astype(np.int64)
        for i in range(bins):
            lo, hi = 10.0 ** (low + i / per_decade), 10.0 ** (low + (i + 1) / per_decade)
            bars.append(Bar("bin", f"{g(lo)}", int(counts[i]), int(outside_counts[i]), lo, hi))
    if special.any():
        bars.append(Bar("special", "NaN/inf", int(special.sum()), int((special & ~same_special).sum())))
    return bars


def _log_height(value: int, top: int) -> float:
    return math.log10(1 + value) / math.log10(1 + top) if top > 0 else 0.0


def histogram_svg(name: str, bars: list[Bar]) -> str:
    """The histogram of one output as an ``<svg class="histogram">``."""
    total = sum(b.count for b in bars)
    top = max((b.count for b in bars), default=0)
    plot_w, plot_h = H_WIDTH - MARGIN_L - MARGIN_R, H_HEIGHT - MARGIN_T - MARGIN_B
    base = MARGIN_T + plot_h
    gap = 10.0  # between the "= 0" bar, the bins and the NaN/inf bar
    bins = [b for b in bars if b.kind == "bin"]
    separate = [b for b in bars if b.kind != "bin"]
    slots = len(bins) + len(separate)
    width = min((plot_w - gap * (1 + (bars[-1].kind == "special"))) / max(slots, 1), 48.0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="histogram" width="{H_WIDTH}" height="{H_HEIGHT}" '
             f'viewBox="0 0 {H_WIDTH} {H_HEIGHT}" role="img" data-output="{e(name)}" data-total="{total}" '
             f'aria-label="histogram of |native - onnxruntime| of {e(name)}">',
             f'<rect x="{MARGIN_L}" y="{MARGIN_T}" width="{plot_w}" height="{plot_h}" class="frame"/>']
    tick = 1
    while tick <= max(top, 1):
        ty = base - plot_h * _log_height(tick, top) if top else base
        parts.append(f'<line x1="{MARGIN_L}" x2="{MARGIN_L + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}" class="grid"/>')
        parts.append(f'<text x="{MARGIN_L - 5}" y="{ty + 4:.1f}" class="axis" text-anchor="end">'
                     f'{_compact(tick)}</text>')
        tick *= 10 if top < 1e4 else 100
    decades = {round(math.log10(b.low)) for b in bins if _is_decade(b.low)}
    every = max(1, math.ceil(len(decades) / 8))  # at most about eight decade labels: they never overlap
    x = MARGIN_L
    labelled = -math.inf  # where the last x label was centred: a decade label too close to it is left out
    for i, bar in enumerate(bars):
        if bar.kind == "special" or (i == 1 and bar.kind == "bin"):
            x += gap
        height = plot_h * _log_height(bar.count, top)
        inner = plot_h * _log_height(bar.count - bar.outside, top)  # the within part, the outside part on top
        span = "exactly 0" if bar.kind == "zero" else "NaN or inf on a side" if bar.kind == "special" else \
            f"{g(bar.low)} to {g(bar.high)}"
        title = (f"<title>|diff| {span}: {count(bar.count)} element(s)"
                 f"{f', {count(bar.outside)} outside tolerance' if bar.outside else ''}</title>")
        data = (f'data-kind="{bar.kind}" data-count="{bar.count}" data-outside="{bar.outside}"'
                + (f' data-low="{bar.low!r}" data-high="{bar.high!r}"' if bar.kind == "bin" else ""))
        kind = " special" if bar.kind == "special" else ""
        parts.append(f'<g class="bin" {data}>{title}')
        if bar.count - bar.outside:
            parts.append(f'<rect class="bar{kind}" x="{x + 1:.1f}" y="{base - inner:.1f}" '
                         f'width="{max(width - 2, 1):.1f}" height="{inner:.1f}"/>')
        if bar.outside:
            parts.append(f'<rect class="bar outside" x="{x + 1:.1f}" y="{base - height:.1f}" '
                         f'width="{max(width - 2, 1):.1f}" height="{height - inner:.1f}"/>')
        if bar.count and width >= 13:
            parts.append(f'<text class="count" x="{x + width / 2:.1f}" y="{base - height - 3:.1f}" '
                         f'text-anchor="middle">{_compact(bar.count)}</text>')
        parts.append("</g>")
        if bar.kind != "bin":
            labelled = x + width / 2
            parts.append(f'<text x="{labelled:.1f}" y="{base + 14}" class="axis" text-anchor="middle">'
                         f'{e(bar.label)}</text>')
        elif _is_decade(bar.low) and round(math.log10(bar.low)) % every == 0 and x - labelled >= 36:
            labelled = x  # a decade, at its bin's left edge
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{base}" y2="{base + 4}" class="grid"/>'
                         f'<text x="{x:.1f}" y="{base + 14}" class="axis" text-anchor="middle">'
                         f'1e{round(math.log10(bar.low))}</text>')
        x += width
    parts.append(f'<text x="{MARGIN_L + plot_w / 2:.1f}" y="{H_HEIGHT - 8}" class="axis" text-anchor="middle">'
                 f'|native - onnxruntime|, log scale; elements, log scale</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _is_decade(value: float) -> bool:
    return abs(math.log10(value) - round(math.log10(value))) < 1e-9


def _compact(value: int) -> str:
    if value < 10_000:
        return str(value)
    if value < 10_000_000:
        return f"{value / 1000:.0f}k"
    return f"{value / 1e6:.0f}M"


@dataclass
class Scatter:
    """The pairs drawn: onnxruntime (x) and native (y) values, which of them are outside tolerance, how many finite
    pairs there were in all."""

    x: np.ndarray
    y: np.ndarray
    outside: np.ndarray
    finite: int
    size: int


def scatter_points(native: np.ndarray, reference: np.ndarray, rtol: float, atol: float,
                   limit: int = SCATTER_POINTS, worst: int = SCATTER_WORST) -> Scatter | None:
    """The pairs of the scatter: every finite pair up to ``limit``, else evenly spaced ones plus the ``worst``
    largest differences."""
    sides = _sides(native, reference)
    if sides is None:
        return None
    a, b = sides
    finite = np.flatnonzero(np.isfinite(a) & np.isfinite(b))
    chosen = finite
    if finite.size > limit:
        diff = np.abs(a[finite] - b[finite])
        largest = finite[np.argpartition(diff, -worst)[-worst:]]
        spaced = finite[np.linspace(0, finite.size - 1, limit - worst).round().astype(np.int64)]
        chosen = np.union1d(spaced, largest)
    x, y = b[chosen], a[chosen]
    return Scatter(x, y, np.abs(y - x) > atol + rtol * np.abs(x), int(finite.size), int(a.size))


def scatter_svg(name: str, points: Scatter) -> str:
    """The scatter of one output as an ``<svg class="scatter">``: one dot per pair (a zero-length path segment
    with round caps), the pairs within tolerance in one path, those outside in another, drawn on top."""
    plot = S_SIZE - MARGIN_L - MARGIN_R
    values = np.concatenate([points.x, points.y])
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    if high - low <= 0:
        pad = abs(high) * 0.1 or 1.0
        low, high = low - pad, high + pad
    pad = (high - low) * 0.04
    low, high = low - pad, high + pad
    height = MARGIN_T + plot + 36

    def sx(v):
        return MARGIN_L + plot * (v - low) / (high - low)

    def sy(v):
        return MARGIN_T + plot * (high - v) / (high - low)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="scatter" width="{S_SIZE}" height="{height}" '
             f'viewBox="0 0 {S_SIZE} {height}" role="img" data-output="{e(name)}" data-points="{points.x.size}" '
             f'data-outside="{int(points.outside.sum())}" aria-label="native against onnxruntime of {e(name)}">',
             f'<rect x="{MARGIN_L}" y="{MARGIN_T}" width="{plot}" height="{plot}" class="frame"/>',
             f'<line x1="{sx(low):.1f}" y1="{sy(low):.1f}" x2="{sx(high):.1f}" y2="{sy(high):.1f}" class="diagonal"/>']
    for t in _ticks(low, high):
        parts.append(f'<text x="{sx(t):.1f}" y="{MARGIN_T + plot + 13}" class="axis" text-anchor="middle">{g(t)}</text>')
        parts.append(f'<text x="{MARGIN_L - 4}" y="{sy(t) + 4:.1f}" class="axis" text-anchor="end">{g(t)}</text>')
    for css, mask in (("within s-native-ort", ~points.outside), ("outside s-diverged", points.outside)):
        if mask.any():
            d = "".join(f"M{sx(x):.1f} {sy(y):.1f}h0" for x, y in zip(points.x[mask], points.y[mask]))
            parts.append(f'<path class="dots {css}" d="{d}" stroke-width="4" stroke-linecap="round" '
                         f'fill="none" data-count="{int(mask.sum())}"/>')
    parts.append(f'<text x="{MARGIN_L + plot / 2:.1f}" y="{height - 6}" class="axis" text-anchor="middle">'
                 f'onnxruntime (x) vs native (y)</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _ticks(low: float, high: float) -> list[float]:
    """About four round values between ``low`` and ``high``."""
    span = high - low
    step = 10 ** math.floor(math.log10(span / 4))
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= 5:
            step *= factor
            break
    first = math.ceil(low / step) * step
    return [round(first + i * step, 12) for i in range(int((high - first) / step) + 1)]


def output_figures(name: str, native: np.ndarray, reference: np.ndarray, rtol: float, atol: float) -> str:
    """Both pictures of one output with their caption, or a line saying why there are none."""
    bars = difference_bars(native, reference, rtol, atol)
    points = scatter_points(native, reference, rtol, atol)
    if bars is None or points is None:
        return (f'<p class="note">{e(name)}: no picture of the differences (the sides differ in size or are not '
                f'numbers).</p>')
    total = sum(b.count for b in bars)
    outside = sum(b.outside for b in bars)
    zero = bars[0].count
    shown = (f"all {count(points.x.size)} finite pairs" if points.x.size == points.finite else
             f"{count(points.x.size)} of {count(points.finite)} finite pairs (evenly spaced, plus the "
             f"{SCATTER_WORST} largest differences)")
    special = total - points.finite
    caption = (f"<b>{e(name)}</b>: {count(total)} elements, {count(zero)} exactly equal, {count(outside)} outside "
               f"tolerance (|diff| &gt; {g(atol)} + {g(rtol)} &times; |onnxruntime|); the scatter shows {shown}"
               f"{f', {count(special)} with NaN/inf not drawn' if special else ''}.")
    return (f'<figure class="output-diff" data-output="{e(name)}"><div class="figures">'
            f'{histogram_svg(name, bars)}{scatter_svg(name, points)}</div><figcaption>{caption}</figcaption></figure>')


__all__ = ["Bar", "Scatter", "difference_bars", "histogram_svg", "output_figures", "scatter_points", "scatter_svg"]
