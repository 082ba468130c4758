"""The HTML report of ``nnrt-onnx check --report``: its verdict states, the per-layer chart, the collapsed node table,
the pictures of the output differences and the record of the run; the sweep's report (text, JSON, HTML). The
rendering in a real browser is tests/test_html_browser.py."""
from __future__ import annotations

import html.parser
import json
import math
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from test_parity import off_by_one_pad

MODELS = Path(__file__).resolve().parent.parent / "models"
SMALL_CNN = MODELS / "small_cnn.onnx"


class Element:
    def __init__(self, tag, attrs, parents):
        self.tag, self.attrs, self.parents, self.text = tag, dict(attrs), parents, ""

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def inside(self, tag: str) -> bool:
        return any(p.tag == tag for p in self.parents)


class Page(html.parser.HTMLParser):
    """Every element of a page with its attributes, its ancestors and its own text."""

    VOID = {"meta", "col", "br", "img", "input", "link", "hr"}

    def __init__(self, text: str):
        super().__init__()
        self.elements: list[Element] = []
        self.stack: list[Element] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs, list(self.stack))
        self.elements.append(element)
        if tag not in self.VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.elements.append(Element(tag, attrs, list(self.stack)))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop().tag == tag:
                break

    def handle_data(self, data):
        for element in self.stack:
            element.text += data

    def find(self, tag: str | None = None, css: str | None = None) -> list[Element]:
        return [el for el in self.elements if (tag is None or el.tag == tag) and (css is None or css in el.classes)]


def checked(path, monkeypatch=None, wrong=False, **kwargs):
    from nnrt_onnx.workflows.parity import check_model

    if wrong:
        off_by_one_pad(monkeypatch, lambda args: args[1].shape[0] == 24)
    return check_model(path, per_layer=True, **kwargs)


def constant_output_model(path: Path) -> Path:
    """y = x - x (constant: a warning) and z = relu(x): every layer agrees exactly."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("y", "z")]
    graph = helper.make_graph([helper.make_node("Sub", ["x", "x"], ["y"]), helper.make_node("Relu", ["x"], ["z"])],
                              "constant_output", [x], outputs)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


# -- the verdict ----------------------------------------------------------------------------------------------------

def test_the_headline_has_a_state_of_its_own_for_a_pass_with_warnings(tmp_path, monkeypatch):
    from nnrt_onnx.workflows.html_page import STATES
    from nnrt_onnx.workflows.html_report import html_report

    cases = {"pass": checked(SMALL_CNN), "warn": checked(constant_output_model(tmp_path / "c.onnx"))}
    cases["fail"] = checked(SMALL_CNN, monkeypatch, wrong=True)
    assert cases["warn"].ok and cases["warn"].warnings and cases["pass"].ok and not cases["fail"].ok
    colours = set()
    for state, report in cases.items():
        page = Page(html_report(report))
        banner, = page.find("div", "verdict")
        assert banner.attrs["data-state"] == state and state in banner.classes
        word, = [el.text for el in page.find("span", "word")]
        assert word == {"pass": "PASS", "warn": "PASS WITH WARNINGS", "fail": "FAIL"}[state]
        colours.add(STATES[state][1])
    assert len(colours) == 3  # three colours: a pass with warnings is not painted as a clean pass
    warn_page = html_report(cases["warn"])
    assert re.search(r"\.verdict\.warn \{ background: #a15c00; \}", warn_page)
    assert "1 warning(s)" in Page(warn_page).find("div", "verdict")[0].text
    assert "is constant" in "".join(el.text for el in Page(warn_page).find("ul", "warnings"))


# -- the per-layer chart --------------------------------------------------------------------------------------------

def test_the_chart_spends_no_width_on_uncompared_layers_and_puts_exact_zeros_in_a_band(tmp_path):
    from nnrt_onnx.workflows.html_report import html_report
    from nnrt_onnx.workflows.layer_chart import BAND, BOTTOM, HEIGHT, LEFT, RIGHT, WIDTH

    report = checked(SMALL_CNN)
    page = Page(html_report(report))
    compared = [layer for layer in report.layers if layer.status != "not compared"]
    assert len(compared) < len(report.layers)  # fused layers exist, and ...
    points = page.find("circle", "native-ort")
    assert [int(p.attrs["data-index"]) for p in points] == [layer.index for layer in compared]  # ... get no column
    xs = [float(p.attrs["cx"]) for p in points]
    step = (WIDTH - LEFT - RIGHT) / len(compared)
    assert np.allclose(np.diff(xs), step, atol=0.11)  # evenly spread over the whole width: no room left for the others
    assert page.find("svg", "chart")[0].attrs["data-layers"] == str(len(compared))

    zero_report = checked(constant_output_model(tmp_path / "c.onnx"))
    assert all(c.max_rel == 0 for layer in zero_report.layers for c in layer.outputs)
    zero_page = Page(html_report(zero_report))
    chart, = zero_page.find("svg", "chart")
    band, = [el for el in zero_page.find("rect", "zero-band") if chart in el.parents]
    frame, = [el for el in zero_page.find("rect", "frame") if chart in el.parents]
    band_top = float(band.attrs["y"])
    assert band_top >= float(frame.attrs["y"]) + float(frame.attrs["height"])  # below the log axis, not on it
    assert band_top + BAND <= HEIGHT - BOTTOM
    for point in zero_page.find("circle", "native-ort"):
        assert band_top <= float(point.attrs["cy"]) <= band_top + BAND and point.attrs["data-value"] == "0"
    assert "= 0" in [el.text for el in zero_page.find("text", "axis")]


def test_the_legend_draws_each_series_with_the_charts_own_class(monkeypatch):
    from nnrt_onnx.workflows.html_page import CSS, SERIES
    from nnrt_onnx.workflows.html_report import html_report

    page = Page(html_report(checked(SMALL_CNN, monkeypatch, wrong=True)))
    legend, = page.find("div", "legend")
    keys = [el for el in page.elements if legend in el.parents and el.tag in ("circle", "rect", "path")]
    drawn = {cls for p in page.find(None, "point") for cls in p.classes if cls.startswith("s-")}
    key_classes = {cls for key in keys for cls in key.classes}
    assert {"s-native-ort", "s-diverged", "s-native-f64", "s-ort-f64"} <= drawn
    assert drawn <= key_classes  # every colour of the chart is in the legend ...
    for name, (colour, _) in SERIES.items():  # ... and the class paints it
        assert f".s-{name} {{ fill: {colour}; stroke: {colour};" in CSS


# -- the node table -------------------------------------------------------------------------------------------------

def test_the_node_table_shows_the_differences_and_folds_the_agreeing_runs(monkeypatch):
    from nnrt_onnx.workflows.html_report import MIN_RUN, html_report

    report = checked(SMALL_CNN, monkeypatch, wrong=True)
    page = Page(html_report(report))
    rows = page.find("tr", "layer")
    assert sorted(int(r.attrs["data-index"]) for r in rows) == [layer.index for layer in report.layers]  # each once
    shown = {int(r.attrs["data-index"]) for r in rows if not r.inside("details")}
    diverged = {layer.index for layer in report.layers if layer.status == "diverged"}
    assert diverged == {5, 7, 8, 10, 11, 12} and diverged <= shown
    runs = page.find("details", "run")
    assert runs and all(int(run.attrs["data-rows"]) >= MIN_RUN for run in runs)
    assert all("open" not in run.attrs for run in runs)  # closed until clicked
    for run in runs:
        folded = [r for r in rows if run in r.parents]
        assert len(folded) == int(run.attrs["data-rows"])
        assert all(report.layers[int(r.attrs["data-index"])].status != "diverged" for r in folded)
        first, last = int(run.attrs["data-first"]), int(run.attrs["data-last"])
        assert f"#{first}\u2013#{last}: {last - first + 1} nodes" in run.text


def test_a_model_that_agrees_everywhere_folds_the_whole_node_table():
    from nnrt_onnx.workflows.html_report import html_report

    report = checked(SMALL_CNN)
    page = Page(html_report(report))
    assert all(r.inside("details") for r in page.find("tr", "layer"))
    assert len(page.find("tr", "layer")) == len(report.layers)


# -- the pictures of the output differences --------------------------------------------------------------------------

def test_the_histogram_counts_by_hand():
    from nnrt_onnx.workflows.difference_plots import difference_bars

    native = np.array([0.0, 1.0, 2.5, 3.002, np.nan, 7.0, 10.0, np.inf])
    reference = np.array([0.0, 1.0, 2.0, 3.0, 1.0, 7.0, 10.5, np.inf])
    # |diff|: 0, 0, 0.5, 0.002, (NaN), 0, 0.5, (inf = inf); outside atol 0.01: the two 0.5 and the NaN
    bars = difference_bars(native, reference, rtol=0.0, atol=0.01)
    zero, *bins, special = bars
    assert (zero.kind, zero.count, zero.outside) == ("zero", 3, 0)
    assert (special.kind, special.count, special.outside) == ("special", 2, 1)  # equal infinities agree
    assert sum(b.count for b in bins) == 3 and sum(b.outside for b in bins) == 2
    holding = [b for b in bins if b.count]
    assert [(b.count, b.outside) for b in holding] == [(1, 0), (2, 2)]
    assert holding[0].low <= 0.002 < holding[0].high and holding[1].low <= 0.5 < holding[1].high
    widths = {round(math.log10(b.high / b.low), 9) for b in bins}
    assert len(widths) == 1 and widths.pop() <= 1  # log-spaced: equal widths on the log axis, a decade at most
    assert bins[0].low <= 0.002 and bins[-1].high >= 0.5 and bins[0].low == 10.0 ** round(math.log10(bins[0].low))
    relative = difference_bars(native, reference, rtol=0.1, atol=0.0)  # 0.5 <= 0.1 * 10.5, but 0.5 > 0.1 * 2
    assert [(b.count, b.outside) for b in relative if b.kind == "bin" and b.count] == [(1, 0), (2, 1)]


def test_the_histogram_agrees_with_the_comparison_and_the_scatter_keeps_the_worst(monkeypatch):
    from nnrt_onnx.workflows.difference_plots import SCATTER_WORST, difference_bars, scatter_points
    from nnrt_onnx.workflows.html_report import html_report

    report = checked(SMALL_CNN, monkeypatch, wrong=True)
    page = Page(html_report(report))
    for c in report.outputs:
        native, reference = report.output_values[c.name]
        bars = difference_bars(native, reference, c.rtol, c.atol)
        assert sum(b.count for b in bars) == c.size and sum(b.outside for b in bars) == c.mismatched
        histogram, = [s for s in page.find("svg", "histogram") if s.attrs["data-output"] == c.name]
        drawn = [g for g in page.find("g", "bin") if histogram in g.parents]
        assert [int(g.attrs["data-count"]) for g in drawn] == [b.count for b in bars]
        scatter, = [s for s in page.find("svg", "scatter") if s.attrs["data-output"] == c.name]
        assert int(scatter.attrs["data-points"]) == c.size and int(scatter.attrs["data-outside"]) == c.mismatched

    rng = np.random.default_rng(0)
    reference = rng.standard_normal(20_000)
    native = reference + rng.standard_normal(20_000) * 1e-6  # float64: no two differences tie
    native[[17, 4242, 19_999]] += 5.0  # three outliers among 20,000: a sample must not lose them
    worst = np.argsort(-np.abs(native - reference))[:SCATTER_WORST]
    points = scatter_points(native, reference, 1e-4, 1e-5)
    assert points.x.size <= 1500 and points.finite == 20_000
    assert set(zip(reference[worst].tolist(), native[worst].tolist())) <= set(zip(points.x.tolist(),
                                                                                  points.y.tolist()))
    assert int(points.outside.sum()) == 3


# -- the record of the run -------------------------------------------------------------------------------------------

def test_the_page_records_the_command_line_and_each_phase(invoke, tmp_path):
    out = tmp_path / "my report.html"
    result = invoke("check", SMALL_CNN, "--seed", "3", "--report", out)
    assert result.exit_code == 0, result.output
    page = Page(out.read_text())
    command, = [el.text for el in page.find("code") if el.inside("table")]
    assert command == f"nnrt-onnx check {SMALL_CNN} --seed 3 --report '{out}'"  # as typed, shell-quoted
    rows = page.find("tr", "phase")
    labels = [next(el.text for el in page.elements if el.tag == "td" and row in el.parents) for row in rows]
    assert labels[:4] == ["converting", "running natively", "running onnxruntime", "comparing layers"]
    times = [float(el.attrs["data-seconds"]) for el in page.find("td", "num") if el.inside("table")
             and "data-seconds" in el.attrs]
    assert times[-1] == pytest.approx(sum(times[:-1]), abs=1e-5)  # the phases and "other" add up to the total


# -- the sweep's report ----------------------------------------------------------------------------------------------

LOST = [{"model": "zoo/hangs.onnx", "ok": False, "verdict": "timeout", "error": "no answer within 60 s",
         "seconds": 60.0, "peak_rss": None},
        {"model": "zoo/hog.onnx", "ok": False, "verdict": "out of memory", "error": "over the 2 GiB cap",
         "seconds": 3.5, "peak_rss": 2 << 30, "peak_rss_this_model": True},
        {"model": "zoo/dies.onnx", "ok": False, "verdict": "crashed", "error": "killed by signal 9 (SIGKILL)",
         "seconds": 0.7}]


def test_a_sweep_report_renders_models_that_were_never_checked():
    from nnrt_onnx.workflows.sweep import CheckOptions, check_one
    from nnrt_onnx.workflows.sweep_report import summary_counts, summary_table, sweep_html, sweep_json

    good = check_one(str(SMALL_CNN), CheckOptions())
    rows = [good, *LOST]
    assert summary_counts(rows) == {"models": 4, "pass": 1, "warn": 0, "fail": 0, "not_checked": 3}
    table = summary_table(rows)
    assert table[0] == ("model", "ops", "worst output", "seconds", "peak memory", "verdict")
    assert table[2] == ("zoo/hangs.onnx", "-", "-", "60.0", "-", "timeout: no answer within 60 s")
    assert table[3][4] == "2.0 GiB" and table[3][5] == "out of memory: over the 2 GiB cap"
    assert table[4][5] == "crashed: killed by signal 9 (SIGKILL)"
    assert table[1][2] == f"{good['worst_output']['name']} (max rel {good['worst_output']['max_rel']:.3g})"
    assert table[1][5] == "OK"
    data = json.loads(json.dumps(sweep_json(rows, {"seed": 0})))
    assert data["ok"] is False and data["summary"]["not_checked"] == 3 and len(data["models"]) == 4
    page = Page(sweep_html(rows, command="nnrt-onnx check zoo"))
    assert page.find("div", "verdict")[0].attrs["data-state"] == "fail"
    states = [(row.attrs["data-state"], row.text) for row in page.find("tr", "model")]
    assert [s for s, _ in states] == ["pass", "fail", "fail", "fail"]
    for (_, text), word in zip(states[1:], ("TIMEOUT", "OUT OF MEMORY", "CRASHED")):
        assert word in text
    assert "no answer within 60 s" in states[1][1] and "killed by signal 9" in states[3][1]


def test_a_sweep_passing_with_warnings_is_not_a_clean_pass(tmp_path):
    from nnrt_onnx.workflows.sweep import CheckOptions, check_one
    from nnrt_onnx.workflows.sweep_report import sweep_headline

    rows = [check_one(str(SMALL_CNN), CheckOptions()),
            check_one(str(constant_output_model(tmp_path / "c.onnx")), CheckOptions())]
    assert sweep_headline(rows)[0] == "warn" and sweep_headline(rows[:1])[0] == "pass"
    assert sweep_headline(rows + LOST[:1])[0] == "fail"


def test_check_dir_report_writes_an_index_linking_each_models_page(invoke, tmp_path):
    out = tmp_path / "sweep"
    result = invoke("check", MODELS, "--report", out, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert all("page" not in row for row in data["models"])  # the pages went to files, not into the JSON
    assert sorted(p.name for p in out.iterdir()) == ["1-residual_block.html", "2-small_cnn.html", "3-tiny_mlp.html",
                                                      "index.html"]
    index = Page((out / "index.html").read_text())
    links = [a.attrs["href"] for a in index.find("a")]
    assert links == ["1-residual_block.html", "2-small_cnn.html", "3-tiny_mlp.html"]
    assert [Path(row["html"]).name for row in data["models"]] == links
    for link, row in zip(links, data["models"]):
        model_page = Page((out / link).read_text())
        assert [a.attrs["href"] for a in model_page.find("a")] == ["index.html"]  # and back
        assert row["model"] in model_page.find("h1")[0].text
        assert model_page.find("svg", "histogram") and model_page.find("svg", "chart")  # per-layer is implied
    assert [row.attrs["data-state"] for row in index.find("tr", "model")] == ["pass"] * 3
    memory = [el.text for el in index.find("td", "num") if "peak" in el.attrs.get("title", "")]
    assert len(memory) == 3 and all(re.fullmatch(r"(\u2264 )?\d+\.\d (MiB|GiB)", m) for m in memory)
    text = invoke("check", MODELS, "--report", out).stdout
    assert "peak memory" in text.splitlines()[1] and f"report written to {out / 'index.html'}" in text
    assert not [f for f in out.iterdir() if f.name.startswith(".")]  # written atomically, nothing left over


def test_a_page_that_cannot_be_rendered_costs_the_model_its_page_not_its_row(monkeypatch):
    import nnrt_onnx.workflows.html_report as html_report
    from nnrt_onnx.workflows.sweep import CheckOptions, check_one
    from nnrt_onnx.workflows.sweep_report import sweep_html

    monkeypatch.setattr(html_report, "html_report", lambda report, **kwargs: 1 / 0)
    row = check_one(str(SMALL_CNN), CheckOptions(page=True))
    assert row["verdict"] == "OK" and "page" not in row
    assert row["page_error"] == "ZeroDivisionError: division by zero"
    assert "(no page: ZeroDivisionError: division by zero)" in Page(sweep_html([row])).find("tr", "model")[0].text


def test_check_report_usage_errors(invoke, tmp_path):
    (tmp_path / "a_file").write_text("x")
    result = invoke("check", MODELS, "--report", tmp_path / "a_file")
    assert result.exit_code == 1 and "writes a directory" in result.stderr and "Traceback" not in result.output
    result = invoke("check", SMALL_CNN, "--report", tmp_path)
    assert result.exit_code == 2 and "one model's report is a file" in result.stderr
    result = invoke("check", MODELS, "--report", tmp_path / "no" / "such")
    assert result.exit_code == 1 and "no such directory" in result.stderr


def test_worker_processes_send_the_pages_back_and_the_results_file_stays_lean(invoke, tmp_path):
    out, results = tmp_path / "sweep", tmp_path / "rows.jsonl"
    result = invoke("check", MODELS, "-j", "2", "--report", out, "--results", results)
    assert result.exit_code == 0, result.output
    stored = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(stored) == 3 and all("page" not in row and Path(row["html"]).is_file() for row in stored)
    index = Page((out / "index.html").read_text())
    assert sorted(a.attrs["href"] for a in index.find("a")) == sorted(Path(row["html"]).name for row in stored)
    for row in stored:  # each page, rendered in its worker, is the model's own
        assert row["model"] in Page(Path(row["html"]).read_text()).find("h1")[0].text
