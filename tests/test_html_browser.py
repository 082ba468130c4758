"""The HTML reports in a real headless browser (chromium, tests/browser.py; skipped, saying how to get one, where
there is none): each page renders without a console message, its verdict banner and pictures are visible in the
screenshot, the legend's symbols have the chart's colours, numbers stay on one line in a narrow window, the folded
runs of the node table take no room, and the sweep's page links to pages that render."""
from __future__ import annotations

from pathlib import Path

import pytest

import browser
from test_html_report import SMALL_CNN, checked, constant_output_model

MODELS = SMALL_CNN.parent


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Three model pages (fail, pass with warnings, pass) written the way the CLI writes them."""
    browser.chromium()  # skip the module at once when there is no browser
    from nnrt_onnx.workflows.html_report import html_report

    folder = tmp_path_factory.mktemp("pages")
    monkeypatch = pytest.MonkeyPatch()
    try:
        reports = {"fail": checked(SMALL_CNN, monkeypatch, wrong=True)}
    finally:
        monkeypatch.undo()
    reports["warn"] = checked(constant_output_model(folder / "constant.onnx"))
    reports["pass"] = checked(SMALL_CNN)
    written = {}
    for state, report in reports.items():
        written[state] = folder / f"{state}.html"
        written[state].write_text(html_report(report, command=f"nnrt-onnx check {report.model} --report x.html"))
    return written


NARROW = 360  # px: a phone; every cell that can wrap does


def assert_one_line(cells, minimum):
    """Each number (a cell of class num: "0.04 s", "13 → 10", "≤ 204.6 MiB" have spaces) on one line."""
    numbers = [b for b in cells if b["visible"] and b["text"].strip()]
    assert len(numbers) >= minimum
    spaced = [b for b in numbers if " " in b["text"].strip()]
    assert spaced, "no number with a space: the check would prove nothing"
    wrapped = [b["text"] for b in numbers if b["lines"] != 1]
    assert wrapped == [], f"numbers wrapped onto several lines at {NARROW} px: {wrapped[:5]}"


def test_each_verdict_renders_as_its_own_coloured_banner_without_console_messages(pages, tmp_path):
    from nnrt_onnx.workflows.html_page import STATES

    for state, page in pages.items():
        image, console = browser.screenshot(page, tmp_path / f"{state}.png", width=1280, height=900)
        assert console == [], f"{state}: {console}"
        colour = browser.hex_rgb(STATES[state][1])
        banner = browser.pixels_of(image[:160], colour)  # the banner, near the top of the page
        assert banner.sum() > 20_000, f"{state}: no {STATES[state][1]} banner at the top of the screenshot"
        others = [browser.hex_rgb(c) for s, (_, c) in STATES.items() if s != state]
        assert all(browser.pixels_of(image[:160], c).sum() < 100 for c in others)
        found = browser.probe(page, {"banner": ".verdict", "word": ".verdict .word"})
        assert found["console"] == []
        word, = found["boxes"]["word"]
        assert word["text"] == STATES[state][0] and word["width"] > 0 and word["height"] > 0
        assert browser.hex_rgb(found["boxes"]["banner"][0]["background"]) == colour


def test_the_legend_pictures_and_tables_are_visible_and_numbers_never_wrap(pages, tmp_path):
    from nnrt_onnx.workflows.html_page import SERIES

    page = pages["fail"]
    wanted = {"chart": "svg.chart", "points": "svg.chart circle.point.native-ort", "histogram": "svg.histogram",
              "scatter": "svg.scatter", "dots": "svg.scatter path.dots", "numbers": "td.num",
              "labels": "svg.histogram text.axis, svg.chart text.axis",
              "folded": "details.run tr.layer", "runs": "details.run > summary", "details": "details.run", "shown": ".layers tr.layer",
              **{f"key-{name}": f".legend .s-{name}" for name in SERIES}}
    narrow = browser.probe(page, wanted, width=NARROW, height=900)  # narrow: whatever may wrap, wraps
    boxes = narrow["boxes"]
    assert narrow["console"] == []
    for name in ("chart", "histogram", "scatter"):
        assert boxes[name] and all(b["width"] > 200 and b["height"] > 150 for b in boxes[name]), name
    assert len(boxes["points"]) == 8 and all(b["width"] > 0 for b in boxes["points"])
    assert boxes["dots"] and all(b["width"] > 0 and b["height"] > 0 for b in boxes["dots"])
    for name, (colour, _) in SERIES.items():  # each legend symbol painted in its series' colour
        keys = boxes[f"key-{name}"]
        assert keys, name
        assert all(browser.hex_rgb(k["fill"]) == browser.hex_rgb(colour) and k["width"] > 0 for k in keys), name
    assert_one_line(boxes["numbers"], minimum=40)
    rows: dict[int, list] = {}  # the axis labels of the pictures, by line: 4 px apart at least
    for label in boxes["labels"]:
        rows.setdefault(round(label["y"]), []).append(label)
    for line in rows.values():
        line.sort(key=lambda b: b["x"])
        for left, right in zip(line, line[1:]):
            assert left["x"] + left["width"] + 4 <= right["x"], f"{left['text']!r} overlaps {right['text']!r}"
    assert narrow["scrollWidth"] <= narrow["clientWidth"] + 1  # wide tables scroll in their own box, not the page
    assert boxes["folded"] and not any(b["visible"] for b in boxes["folded"])  # closed runs hide their rows ...
    assert all(b["visible"] and b["height"] > 0 for b in boxes["runs"])  # ... but their summaries show
    for run, summary in zip(boxes["details"], boxes["runs"]):  # ... and take no more room than the summary
        assert run["height"] == pytest.approx(summary["height"], abs=2)
    assert sum(b["visible"] for b in boxes["shown"]) == len(boxes["shown"]) - len(boxes["folded"]) > 0


def test_the_sweep_page_renders_and_links_to_pages_that_render(invoke, tmp_path):
    out = tmp_path / "sweep"
    result = invoke("check", MODELS, "--report", out)
    assert result.exit_code == 0, result.output
    image, console = browser.screenshot(out / "index.html", tmp_path / "index.png", width=1280, height=700)
    assert console == []
    from nnrt_onnx.workflows.html_page import STATES

    assert browser.pixels_of(image[:160], browser.hex_rgb(STATES["pass"][1])).sum() > 20_000
    found = browser.probe(out / "index.html", {"links": "table.sweep a", "rows": "tr.model", "numbers": "td.num"},
                          width=NARROW)
    assert found["console"] == []
    assert_one_line(found["boxes"]["numbers"], minimum=15)
    assert len(found["boxes"]["rows"]) == 3 and all(b["height"] > 0 for b in found["boxes"]["rows"])
    assert [b["text"] for b in found["boxes"]["links"]] == [str(MODELS / n) for n in
                                                          ("residual_block.onnx", "small_cnn.onnx", "tiny_mlp.onnx")]
    for page in sorted(out.glob("[0-9]*.html")):
        assert not page.name.endswith(".probe.html")
        found = browser.probe(page, {"back": "a[href='index.html']", "chart": "svg.chart"})
        assert found["console"] == [] and found["boxes"]["back"] and found["boxes"]["chart"][0]["height"] > 0
