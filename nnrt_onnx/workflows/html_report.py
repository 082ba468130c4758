"""``nnrt-onnx check --report FILE.html``: one self-contained page (inline CSS and SVG, no script, no external
resource) for one checked model.

From the top: the verdict banner (pass / pass with warnings / fail, in colour and in words, and why), the
warnings, the outputs (comparison and statistics tables), a histogram and a scatter of each output's differences
(``difference_plots``), the per-layer chart (``layer_chart``) and the node table, and how the check was run (the
command line, the versions, each phase's time).

The node table collapses what needs no reading: every run of at least :data:`MIN_RUN` consecutive ONNX nodes that
agree within tolerance or were not compared is one ``<details>`` element, closed, whose summary counts them (and
their worst max rel); it opens on a click, without script. Diverging layers, layers with a float64 verdict, the
first divergence, the culprit and the nodes fused into them always show. Numbers are monospace and never wrap;
the columns have fixed widths, so the collapsed runs' tables line up with the rest.
"""
from __future__ import annotations

from typing import Any, Sequence

from .difference_plots import output_figures
from .html_page import banner, e, g, page, run_section
from .layer_chart import chart_legend, error_chart

MIN_RUN = 4  # a shorter run of agreeing nodes is shown as it is: a summary line would take as much room
MAX_FIGURES = 16  # outputs with pictures (the failing ones first); the others are listed
LAYER_COLUMNS = [("#", 56, "num"), ("node", 240, ""), ("op", 140, ""), ("NNRt op", 190, ""), ("max abs", 80, "num"),
                 ("max rel", 80, "num"), ("cosine", 90, "num"), ("status", 120, ""), ("float64", 200, "")]


def headline(report) -> tuple[str, str]:
    """(state, why): ``fail``, ``warn`` (passes with warnings) or ``pass``, and the reason in one sentence."""
    outputs = len(report.outputs)
    warned = len(report.warnings)
    tail = f"; {warned} warning(s)" if warned else ""
    if not report.ok:
        reasons = []
        failing = [c for c in report.outputs if not c.passed()]
        if failing:
            nan = sum(1 for c in failing if c.nan)
            reasons.append(f"{len(failing)} of {outputs} output(s) outside tolerance"
                           + (f" ({nan} with NaN)" if nan else ""))
            verdicts = sorted({c.float64.verdict for c in failing if c.float64 is not None and c.float64.verdict})
            if verdicts:
                reasons.append("float64 referee: " + ", ".join(verdicts))
        bad = sum(1 for c in report.expected if not c.within or c.nan)
        if bad:
            reasons.append(f"{bad} of {len(report.expected)} output(s) outside tolerance of the expected values")
        if report.culprit is not None:
            c = report.culprit
            reasons.append(f"native is wrong first at ONNX node #{c.index} {c.node!r} ({c.op_type})")
        if not reasons:
            reasons.append(f"--strict and {warned} warning(s)")
            tail = ""
        return "fail", "; ".join(reasons) + tail
    cleared = sum(1 for c in report.outputs if not c.within)
    what = (f"all {outputs} output(s) pass ({cleared} outside tolerance, cleared by the float64 referee)" if cleared
            else f"all {outputs} output(s) within tolerance of onnxruntime")
    if warned:
        return "warn", f"{what}; {warned} warning(s) to read"
    return "pass", what


def _table(headers: Sequence[str], rows: list[list[Any]], classes: list[str] | None = None,
           numeric: Sequence[int] = (), text: Sequence[int] = ()) -> str:
    head = "".join(f'<th{" class=num" if i in numeric else ""}>{e(h)}</th>' for i, h in enumerate(headers))
    body = []
    for r, row in enumerate(rows):
        css = f' class="{e(classes[r])}"' if classes and classes[r] else ""
        cells = []
        for i, cell in enumerate(row):
            kind = " class=num" if i in numeric else " class=text" if i in text else ""
            cells.append(f"<td{kind}>{e(cell)}</td>")
        body.append(f"<tr{css}>{''.join(cells)}</tr>")
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _outputs_section(report) -> list[str]:
    rows, classes = [], []
    for c in report.outputs:
        tolerance = "exact" if c.rtol == 0 and c.atol == 0 else f"rtol {c.rtol:g}, atol {c.atol:.2g}"
        result = "within" if c.within else "OUTSIDE"
        if c.nan:
            result = "NaN"
        rows.append([c.name, c.dtype, c.shape, g(c.max_abs), g(c.max_rel), f"{c.mismatched:,}/{c.size:,}",
                     "-" if c.cosine is None else f"{c.cosine:.6f}", tolerance, result + (f" ({c.note})" if c.note
                                                                                    else ""),
                     c.float64.text() if c.float64 is not None else "-"])
        classes.append("" if c.passed(report.strict) and not c.warned else ("warn" if c.passed() else "bad"))
    parts = ["<h2>Outputs</h2>",
             _table(["tensor", "dtype", "shape", "max abs", "max rel", "outside", "cosine", "tolerance", "result",
                     "float64"], rows, classes, numeric=(3, 4, 5, 6), text=(8, 9))]
    stats_rows = []
    for c in report.outputs:
        for side, st in (("native", c.native_stats), ("onnxruntime", c.reference_stats)):
            if st is None:
                continue
            stats_rows.append([c.name if side == "native" else "", side, g(st.min), g(st.max), g(st.mean), g(st.std),
                               f"{st.nan:,}", f"{st.inf:,}"])
    if stats_rows:
        parts.append(_table(["statistics", "side", "min", "max", "mean", "std", "NaN", "Inf"], stats_rows,
                            numeric=(2, 3, 4, 5, 6, 7)))
    return parts


def _figures_section(report) -> list[str]:
    values = getattr(report, "output_values", None) or {}
    drawn = [c for c in report.outputs if c.name in values]
    if not drawn:
        return []
    drawn.sort(key=lambda c: c.passed(report.strict))  # the failing outputs first (a stable sort keeps the order)
    parts = ["<h2>Output differences</h2>"]
    for c in drawn[:MAX_FIGURES]:
        native, reference = values[c.name]
        parts.append(output_figures(c.name, native, reference, c.rtol, c.atol))
    if len(drawn) > MAX_FIGURES:
        rest = ", ".join(c.name for c in drawn[MAX_FIGURES:])
        parts.append(f'<p class="note">No pictures for the other {len(drawn) - MAX_FIGURES} output(s): {e(rest)}.</p>')
    return parts


def _float64_section(report) -> list[str]:
    if report.float64 is not None:
        f = report.float64
        if f.get("error"):
            return [f'<p class="note">float64 referee (onnx.reference): could not run ({e(f["error"])})</p>']
        return [f'<p class="note">float64 referee (onnx.reference, the model in double): {f["trials"]} Monte Carlo '
                f'runs, {f["seconds"]:.1f} s; asked because {e(" and ".join(f["asked_because"]))}.</p>']
    if report.float64_not_asked is not None:
        return [f'<p class="note">float64 referee not asked: {e(report.float64_not_asked)}.</p>']
    return []


def _important(report) -> set[int]:
    """The layers always shown: diverging, with a float64 verdict, the first divergence, the culprit, and the nodes
    fused into those two."""
    layers = report.layers or []
    keep = {layer.index for layer in layers if layer.status == "diverged" or layer.verdict is not None}
    by_name = {layer.node: layer.index for layer in layers}
    for layer in filter(None, (report.first_divergence, report.culprit)):
        keep.add(layer.index)
        keep.update(by_name[n] for n in layer.fused_with if n in by_name)
    return keep


def _layer_row(layer) -> str:
    if layer.status == "not compared":
        cells = [layer.index, layer.node, layer.op_type, "-", "-", "-", "-", layer.reason or "not compared", ""]
        css = "skipped"
    else:
        worst = max(layer.outputs, key=lambda c: c.max_rel)
        cells = [layer.index, layer.node, layer.op_type, ", ".join(layer.nnrt_ops) or "-", g(worst.max_abs),
                 g(worst.max_rel), "-" if worst.cosine is None else f"{worst.cosine:.6f}", layer.status,
                 layer.verdict or ""]
        css = "bad" if layer.status == "diverged" else ("warn" if layer.verdict else "")
    tds = []
    for (_, _, kind), cell in zip(LAYER_COLUMNS, cells):
        text = e(cell)
        tds.append(f'<td{" class=num" if kind else ""} title="{text}">{text}</td>')
    return f'<tr class="layer {css}" data-index="{layer.index}">{"".join(tds)}</tr>'


def _layer_table(rows: list[str], head: bool = False) -> str:
    cols = "".join(f'<col style="width:{width}px">' for _, width, _ in LAYER_COLUMNS)
    thead = ""
    if head:
        thead = "<thead><tr>" + "".join(f'<th{" class=num" if kind else ""}>{e(name)}</th>'
                                        for name, _, kind in LAYER_COLUMNS) + "</tr></thead>"
    width = sum(w for _, w, _ in LAYER_COLUMNS)
    return f'<table style="width:{width}px"><colgroup>{cols}</colgroup>{thead}<tbody>{"".join(rows)}</tbody></table>'


def _run_summary(run) -> str:
    compared = [layer for layer in run if layer.status != "not compared"]
    skipped = [layer for layer in run if layer.status == "not compared"]
    parts = []
    if compared:
        worst = max(c.max_rel for layer in compared for c in layer.outputs) if any(l.outputs for l in compared) \
            else 0.0
        parts.append(f"{len(compared)} within tolerance (worst max rel {g(worst)})")
    if skipped:
        reasons: dict[str, int] = {}
        for layer in skipped:
            reasons[layer.reason or "not compared"] = reasons.get(layer.reason or "not compared", 0) + 1
        parts.append(f"{len(skipped)} not compared ({', '.join(f'{n} {r}' for r, n in reasons.items())})")
    return f"#{run[0].index}\u2013#{run[-1].index}: {len(run)} nodes \u2014 " + "; ".join(parts)


def layers_section(report) -> list[str]:
    """The per-layer chart, its legend and the node table with the agreeing runs collapsed."""
    layers = report.layers
    if layers is None:
        return []
    compared = [layer for layer in layers if layer.status != "not compared"]
    fused = sum(layer.reason == "fused away" for layer in layers)
    folded = sum(layer.reason == "constant-folded" for layer in layers)
    diverged = sum(layer.status == "diverged" for layer in compared)
    parts = ["<h2>Per layer</h2>",
             f"<p>{len(compared)} of {len(layers)} ONNX nodes compared ({fused} fused away in NNRt, {folded} "
             f"constant-folded); {diverged} outside tolerance.</p>"]
    if compared:
        parts += [chart_legend(report), f'<div class="wide">{error_chart(report)}</div>']
    keep = _important(report)
    segments: list[tuple[str, list]] = []  # ("rows", layers) shown, ("run", layers) collapsed
    pending: list = []

    def flush():
        if len(pending) >= MIN_RUN:
            segments.append(("run", list(pending)))
        elif pending:
            segments.append(("rows", list(pending)))
        pending.clear()

    for layer in layers:
        if layer.index in keep:
            flush()
            segments.append(("rows", [layer]))
        else:
            pending.append(layer)
    flush()
    runs = sum(kind == "run" for kind, _ in segments)
    hidden = sum(len(run) for kind, run in segments if kind == "run")
    parts.append(f'<p>The node table: {len(layers) - hidden} node(s) shown, {hidden} in {runs} collapsed run(s) of '
                 f'agreeing or uncompared nodes (click a run to open it).</p>')
    table = ['<div class="wide"><div class="layers">', _layer_table([], head=True)]
    shown: list[str] = []
    for kind, members in segments:
        if kind == "rows":
            shown += [_layer_row(layer) for layer in members]
            continue
        if shown:
            table.append(_layer_table(shown))
            shown = []
        table.append(f'<details class="run" data-first="{members[0].index}" data-last="{members[-1].index}" '
                     f'data-rows="{len(members)}"><summary>{e(_run_summary(members))}</summary>'
                     f'{_layer_table([_layer_row(layer) for layer in members])}</details>')
    if shown:
        table.append(_layer_table(shown))
    table.append("</div></div>")
    return parts + table


def html_report(report, command: str | None = None, back: tuple[str, str] | None = None) -> str:
    """The whole page for a :class:`ParityReport`. ``command``: the command line that ran the check (recorded in the
    page); ``back``: (href, words) of a link back, e.g. to the sweep page that lists this model."""
    state, why = headline(report)
    inputs = ", ".join(f"{n} {i['dtype']} {i['shape']} ({i['source']})" for n, i in report.inputs.items())
    parts = []
    if back is not None:
        parts.append(f'<p><a href="{e(back[0])}">&larr; {e(back[1])}</a></p>')
    parts += [f"<h1>nnrt-onnx check {e(report.model)}</h1>", banner(state, why)]
    if report.warnings:
        parts.append('<ul class="warnings">' + "".join(f"<li>warning: {e(w)}</li>" for w in report.warnings) + "</ul>")
    parts.append(f"<p>{report.onnx_nodes} ONNX nodes &rarr; {report.nnrt_operations} NNRt operations, native vs "
                 f"onnxruntime{', seed ' + str(report.seed) if report.seed is not None else ''}"
                 f"{', strict' if report.strict else ''}; inputs: {e(inputs)}</p>")
    parts += _outputs_section(report)
    if report.expected:
        parts.append("<h2>Against the expected outputs</h2>")
        parts.append(_table(["tensor", "side", "max abs", "max rel", "outside", "result"],
                            [[c.name, side, g(c.max_abs), g(c.max_rel), f"{c.mismatched:,}/{c.size:,}",
                              "within" if c.within else "OUTSIDE"]
                             for cs, side in ((report.expected, "native"), (report.expected_reference, "onnxruntime"))
                             for c in cs], numeric=(2, 3, 4)))
    parts += _float64_section(report)
    for note in report.notes:
        parts.append(f'<p class="note">note: {e(note)}</p>')
    parts += _figures_section(report)
    parts += layers_section(report)
    if report.repro is not None:
        repro_state = "reproduces" if report.repro["reproduces"] else "does not reproduce on its own"
        parts.append(f"<p>repro: {e(report.repro['path'])} ({repro_state}): <code>{e(report.repro['command'])}</code>"
                     f"</p>")
    parts += run_section(command, getattr(report, "phases", []), report.seconds or None)
    return page(f"nnrt-onnx check {report.model}: {state}", parts)


__all__ = ["MIN_RUN", "headline", "html_report", "layers_section"]
