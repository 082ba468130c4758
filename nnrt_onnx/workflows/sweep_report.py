"""The report of a sweep (``nnrt-onnx check A.onnx B.onnx DIR``): the summary table -- model, verdict, worst output,
time, peak memory -- as text, JSON and one HTML page, from the sweep's rows (``workflows/sweep.py``'s
:func:`~nnrt_onnx.workflows.sweep.check_one` rows, whatever engine ran them, read back from a results file or not).

A row whose model could not be checked at all carries ``error`` and one of :data:`NOT_CHECKED` as its verdict
("ERROR": the check raised; "timeout", "out of memory", "crashed": an engine that isolates each model gave up on it
or lost it); such rows may lack every other field but ``model``, and are rendered all the same.

``check ... --report DIR`` writes ``DIR/index.html`` (:func:`sweep_html`: the verdict over all models, the table
with each model's name linking to its page, how the sweep was run) and one page per model beside it
(:func:`write_model_page`, named by :func:`page_name`), each written as soon as its model is done.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from ..errors import UserError
from .html_page import STATES, banner, byte_size, e, g, page, run_section, seconds, write_page

NOT_CHECKED = ("ERROR", "timeout", "out of memory", "crashed")  # verdicts of a model with no report
INDEX = "index.html"


def row_state(row: dict[str, Any]) -> str:
    """``fail`` (failed, or could not be checked), ``warn`` (passes with warnings) or ``pass``."""
    if row.get("error") is not None or not row.get("ok"):
        return "fail"
    return "warn" if row.get("warnings") else "pass"


def checked(row: dict[str, Any]) -> bool:
    """Whether the model was checked at all (a verdict of its outputs), rather than lost on the way."""
    return row.get("error") is None and row.get("verdict") not in NOT_CHECKED


def verdict_text(row: dict[str, Any]) -> str:
    """The verdict in words: "OK", "OK (2 warning(s))", "FAIL: ...", "ERROR: why", "timeout: why", ..."""
    verdict = row.get("verdict")
    if checked(row):
        return verdict or ("OK" if row.get("ok") else "FAIL")
    label = verdict if verdict in NOT_CHECKED else "ERROR"
    error = row.get("error")
    if not error or error == label:
        return label
    return error if error.startswith(f"{label}: ") else f"{label}: {error}"  # the pool's errors start with it


def worst_text(row: dict[str, Any]) -> str:
    worst = row.get("worst_output")
    if not worst:
        return "-"
    return f"{worst['name']} (max rel {_number(worst.get('max_rel'))})"


def ops_text(row: dict[str, Any]) -> str:
    return "-" if row.get("onnx_nodes") is None else f"{row['onnx_nodes']} -> {row.get('nnrt_operations')}"


def memory_text(row: dict[str, Any]) -> str:
    """The peak memory: exact when the model raised the process's peak, else "<=" a bound."""
    peak = row.get("peak_rss")
    if peak is None:
        return "-"
    return byte_size(peak) if row.get("peak_rss_this_model") else f"<= {byte_size(peak)}"


def _number(value) -> str:
    return "inf" if value is None else g(value)  # JSON has no inf: the rows carry None for it


def summary_counts(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many models pass, pass with warnings, fail, and could not be checked."""
    states = [row_state(row) for row in rows]
    lost = sum(not checked(row) for row in rows)
    return {"models": len(rows), "pass": states.count("pass"), "warn": states.count("warn"),
            "fail": states.count("fail") - lost, "not_checked": lost}


def summary_line(rows: Sequence[dict[str, Any]]) -> str:
    n = summary_counts(rows)
    return f"{n['models']} model(s): {n['pass'] + n['warn']} OK, {n['fail']} FAIL, {n['not_checked']} error(s)"


def summary_table(rows: Sequence[dict[str, Any]]) -> list[tuple[str, ...]]:
    """The text table, header first; the verdict last (it may be long)."""
    table = [("model", "ops", "worst output", "seconds", "peak memory", "verdict")]
    for row in rows:
        spent = row.get("seconds")
        table.append((row["model"], ops_text(row), worst_text(row), "-" if spent is None else f"{spent:.1f}",
                      memory_text(row), verdict_text(row)))
    return table


def sweep_json(rows: Sequence[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
    """The sweep as one JSON document: the verdict, the options, the counts and every row."""
    return {"ok": all(row.get("ok") for row in rows), "options": options, "summary": summary_counts(rows),
            "models": list(rows)}


def sweep_headline(rows: Sequence[dict[str, Any]]) -> tuple[str, str]:
    n = summary_counts(rows)
    counts = f"{n['pass']} pass, {n['warn']} pass with warnings, {n['fail']} fail, {n['not_checked']} not checked"
    if n["fail"] or n["not_checked"]:
        return "fail", f"{n['fail'] + n['not_checked']} of {n['models']} model(s) do not pass ({counts})"
    if n["warn"]:
        return "warn", f"all {n['models']} model(s) pass, {n['warn']} with warnings ({counts})"
    return "pass", f"all {n['models']} model(s) pass"


def _detail(row: dict[str, Any]) -> tuple[str, str]:
    """(the state's word, the rest of the verdict): ("PASS", "2 warning(s)"), ("TIMEOUT", "no answer in 60 s")."""
    text = verdict_text(row)
    if not checked(row):
        label, _, rest = text.partition(": ")
        return label.upper(), rest
    for word in ("OK", "FAIL"):
        if text.startswith(word):
            text = text[len(word):].strip()
    return STATES[row_state(row)][0], text.removeprefix(":").strip().removeprefix("(").removesuffix(")")


def sweep_html(rows: Sequence[dict[str, Any]], command: str | None = None, total: float | None = None) -> str:
    """The sweep's page; a row's ``html`` (its model's page, beside this one) becomes the link on its name."""
    state, why = sweep_headline(rows)
    body = [f"<h1>nnrt-onnx check: {len(rows)} model(s)</h1>", banner(state, why),
            '<div class="wide"><table class="sweep"><thead><tr><th class="num">#</th><th>model</th><th>verdict</th>'
            '<th>worst output</th><th class="num">max rel</th><th class="num">ops (ONNX &rarr; NNRt)</th>'
            '<th class="num">time</th><th class="num">peak memory</th></tr></thead><tbody>']
    for position, row in enumerate(rows):
        row_css = row_state(row)
        word, detail = _detail(row)
        name = e(row["model"])
        model = f'<a href="{e(Path(row["html"]).name)}">{name}</a>' if row.get("html") else name
        if row.get("page_error"):
            model += f' <span class="note">(no page: {e(row["page_error"])})</span>'
        worst = row.get("worst_output")
        ops = "-" if row.get("onnx_nodes") is None else f"{row['onnx_nodes']} &rarr; {row.get('nnrt_operations')}"
        memory = memory_text(row).replace("<=", "\u2264")
        memory_note = ("not known on this platform" if row.get("peak_rss") is None else
                       "the peak of this model's check" if row.get("peak_rss_this_model") else
                       "this model did not raise the process's peak: only a bound")
        css = {"pass": "", "warn": "warn", "fail": "bad"}[row_css]
        body.append(f'<tr class="model {css}" data-state="{row_css}"><td class="num">{position + 1}</td>'
                    f'<td class="text">{model}</td><td class="text"><span class="state-{row_css}">{e(word)}</span> '
                    f'{e(detail)}</td><td>{e(worst["name"]) if worst else "-"}</td>'
                    f'<td class="num">{_number(worst.get("max_rel")) if worst else "-"}</td><td class="num">{ops}</td>'
                    f'<td class="num">{seconds(row.get("seconds"))}</td><td class="num" title="{e(memory_note)}">'
                    f'{e(memory)}</td></tr>')
    body.append("</tbody></table></div>")
    body.append('<p class="note">Peak memory is the peak resident memory of the model\'s check (on Linux the '
                'process\'s watermark starts afresh for each model); "&le;" marks a figure that is only a bound (a '
                "platform without that reset, where the model did not raise the process's peak). Each model's name "
                "links to its own report.</p>")
    phases: dict[str, float] = {}
    for row in rows:
        for item in (row.get("report") or {}).get("phases", []):
            phases[item["phase"]] = phases.get(item["phase"], 0.0) + item["seconds"]
    summed = sum(row.get("seconds") or 0.0 for row in rows)
    extra = [("times", f"each phase summed over the {len(rows)} model(s)")]
    if total is not None:  # with several workers, less than the sum
        extra.append(("wall clock", seconds(total)))
    body += run_section(command, list(phases.items()), summed, extra=extra)
    return page(f"nnrt-onnx check: {len(rows)} model(s): {state}", body)


def page_name(position: int, model: str, models: int) -> str:
    """The file name of a model's page: numbered, so that models of the same name in different directories get
    pages of their own."""
    digits = len(str(max(models, 1)))
    stem = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in Path(model).stem) or "model"
    return f"{position + 1:0{digits}d}-{stem}.html"


def prepare_report_dir(path: str) -> None:
    """Make the sweep's report directory (its parent must exist), or say why not."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"--report {path}: checking several models writes a directory (index.html and one page "
                        f"per model), and this is a file")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UserError(f"--report {path}: no such directory: {parent}")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--report {path}: cannot create the directory ({exc.strerror or exc})") from None


def write_model_page(row: dict[str, Any], report_dir: str, position: int, models: int) -> None:
    """Take the page out of ``row`` (``row["page"]``, rendered by ``check_one`` with ``CheckOptions.page``), write it
    into ``report_dir`` and record where in ``row["html"]``; a row without a page keeps no link."""
    text = row.pop("page", None)
    if text is None:
        return
    path = os.path.join(report_dir, page_name(position, row["model"], models))
    write_page(path, text)
    row["html"] = path


def write_index(rows: Sequence[dict[str, Any]], report_dir: str, command: str | None = None,
                total: float | None = None) -> str:
    """Write the sweep's page, ``report_dir/index.html``; its path."""
    path = os.path.join(report_dir, INDEX)
    write_page(path, sweep_html(rows, command, total))
    return path


__all__ = ["INDEX", "NOT_CHECKED", "checked", "memory_text", "page_name", "prepare_report_dir", "row_state",
           "summary_counts", "summary_line", "summary_table", "sweep_headline", "sweep_html", "sweep_json",
           "verdict_text", "write_index", "write_model_page"]
