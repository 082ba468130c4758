"""``nnrt-onnx check A.onnx B.onnx DIR ...``: many models, one summary.

:func:`check_one` is a pure function of (model path, :class:`CheckOptions`) returning a JSON-able summary -- it
never raises and writes nothing -- so a sweep can be handed to any engine that runs one task per model;
:func:`sweep` runs them here, in order. One model's failure (it cannot be converted, onnxruntime cannot load it,
it runs out of memory, a bug) is that model's row, never the end of the sweep.

Each row carries the peak resident memory of the model's check (``peak_rss``, bytes, None where the platform does
not say) and whether that figure is this model's own (``peak_rss_this_model``). On Linux it is: ``check_one``
resets the process's peak-RSS watermark before the model (``/proc/self/clear_refs``) and reads it after
(``VmHWM``). Elsewhere the figure is the process's peak so far (``getrusage``; on Linux that figure would also carry
the peak of the process that forked this one), this model's own only when it raised it, else a bound.

With ``CheckOptions.page`` the row also carries the model's HTML report page (``page``, ``workflows/html_report.py``;
``page_error`` says why when it could not be rendered), rendered where the model was checked: whoever holds the row
writes it (``sweep_report.write_model_page``, which takes it out of the row) before the row is stored or printed.
"""
from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Sequence

from ..errors import NNRtError, UserError


@dataclass(frozen=True)
class CheckOptions:
    """What every model of a sweep is checked with (hashable, picklable)."""

    seed: int = 0
    per_layer: bool = False
    rtol: float | None = None
    atol: float | None = None
    strict: bool = False
    value_ranges: tuple[tuple[str | None, float, float], ...] = ()  # (input name or None for all, low, high)
    float64_opinion: bool = True
    float64_always: bool = False
    max_constant_bytes: int | None = None  # the import's memory budget (None: the default)
    page: bool = False  # render each model's HTML report page into its row ("page")
    command: str | None = None  # the command line the pages record
    back: str | None = None  # the address of the sweep's page relative to a model's page, linked from it


def find_models(paths: Sequence[str]) -> list[str]:
    """The models named: files as given, directories searched recursively for ``*.onnx`` (sorted)."""
    found: list[str] = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            models = sorted(str(m) for m in p.rglob("*.onnx") if m.is_file())
            if not models:
                raise UserError(f"{p}: no .onnx model in this directory")
            found.extend(models)
        else:
            found.append(str(p))
    return found


def check_one(path: str, options: CheckOptions) -> dict[str, Any]:
    """Check one model; a summary row (with the full report, or the one-line error)."""
    from ..ir.issues import ConversionError
    from .parity import check_model

    started = time.perf_counter()
    own_peak = reset_peak()
    peak_before = peak_rss()
    row: dict[str, Any] = {"model": path, "ok": False, "verdict": None, "onnx_nodes": None, "nnrt_operations": None,
                           "worst_output": None, "warnings": 0, "seconds": None, "error": None, "report": None,
                           "peak_rss": None, "peak_rss_this_model": False}
    try:
        ranges = {name: (low, high) for name, low, high in options.value_ranges}
        report = check_model(path, seed=options.seed, per_layer=options.per_layer, rtol=options.rtol,
                             atol=options.atol, strict=options.strict, value_ranges=ranges or None,
                             float64_opinion=options.float64_opinion, float64_always=options.float64_always,
                             max_constant_bytes=options.max_constant_bytes)
    except ConversionError as exc:
        first = exc.issues[0] if exc.issues else "unknown problem"
        more = f" (+{len(exc.issues) - 1} more)" if len(exc.issues) > 1 else ""
        row["error"] = f"cannot convert the model: {first}{more}"
    except NNRtError as exc:
        row["error"] = f"{exc.code.name}: {exc.message}"
    except (UserError, OSError) as exc:
        row["error"] = str(exc)
    except MemoryError:
        row["error"] = "out of memory"
    except Exception as exc:  # noqa: BLE001 - a bug on one model must not end the sweep; its row says what it was
        row["error"] = f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    else:
        data = report.to_dict()
        row.update(ok=report.ok, onnx_nodes=report.onnx_nodes, nnrt_operations=report.nnrt_operations,
                   warnings=len(report.warnings), report=data, verdict=verdict_of(report))
        if report.outputs:  # the failing output with the largest max rel (NaN and inf count as the largest)
            worst = max(range(len(report.outputs)),
                        key=lambda i: (not report.outputs[i].passed(options.strict), _rank(report.outputs[i].max_rel)))
            shown = data["outputs"][worst]
            row["worst_output"] = {k: shown[k] for k in ("name", "max_abs", "max_rel")}
        if options.page:
            _add_page(row, report, options)
    if row["error"] is not None:
        row["verdict"] = "ERROR"
    row["seconds"] = time.perf_counter() - started
    row["peak_rss"] = peak_rss()
    row["peak_rss_this_model"] = row["peak_rss"] is not None and (
        own_peak or (peak_before is not None and row["peak_rss"] > peak_before))
    return row


def _add_page(row: dict[str, Any], report, options: CheckOptions) -> None:
    """The model's page into ``row["page"]``; a page that cannot be rendered is said in ``row["page_error"]`` (the
    check itself succeeded: its row stands)."""
    from .html_report import html_report

    try:
        row["page"] = html_report(report, command=options.command,
                                  back=(options.back, "all models of this check") if options.back else None)
    except Exception as exc:  # noqa: BLE001 - a bug in the page must not cost the model its row
        row["page_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def peak_rss() -> int | None:
    """This process's peak resident memory, in bytes (None where the platform does not say): Linux's ``VmHWM``
    (since the process started or :func:`reset_peak`), else ``getrusage``'s ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # macOS says bytes, Linux KiB


def reset_peak() -> bool:
    """Start this process's peak resident memory afresh from what it holds now (Linux 4.0+: ``clear_refs`` 5);
    False where that cannot be done."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def _rank(value: float) -> float:
    return float("inf") if value != value else value  # NaN sorts as the worst


def verdict_of(report) -> str:
    """One word or a few: OK, OK with warnings, or why it fails."""
    if report.ok:
        return f"OK ({len(report.warnings)} warning(s))" if report.warnings else "OK"
    failing = [c for c in report.outputs if not c.passed(report.strict)]
    if any(c.nan for c in failing):
        return "FAIL: NaN"
    verdicts = {c.float64.verdict for c in failing if c.float64 is not None and c.float64.verdict}
    if verdicts:
        return "FAIL: " + ", ".join(sorted(verdicts))
    if failing:
        return f"FAIL: {len(failing)} of {len(report.outputs)} outside tolerance"
    if report.expected and not all(c.within for c in report.expected):
        return "FAIL: outside the expected outputs"
    if report.culprit is not None:
        return f"FAIL: native is wrong at #{report.culprit.index} ({report.culprit.op_type})"
    return "FAIL (--strict): warnings"


Progress = Callable[[Sequence[Any], str], ContextManager[Iterable[Any]]]


def sweep(paths: Sequence[str], options: CheckOptions, progress: Progress | None = None,
          on_row: Callable[[int, dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """:func:`check_one` for every model of ``find_models(paths)``, in order; ``on_row(position, row)`` is called as
    each row is done (to write its page while the next model runs, say)."""
    models = find_models(paths)
    progress = progress or (lambda items, label: contextlib.nullcontext(items))
    rows = []
    with progress(models, "checking models") as items:
        for path in items:
            rows.append(check_one(path, options))
            if on_row is not None:
                on_row(len(rows) - 1, rows[-1])
    return rows


__all__ = ["CheckOptions", "check_one", "find_models", "peak_rss", "reset_peak", "sweep", "verdict_of"]
