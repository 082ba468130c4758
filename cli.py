"""The nnrt-onnx command line: thin wrappers over library functions (installed as nnrt_onnx/cli.py).

Every user error ends in one line on stderr and a non-zero exit (2 for a malformed command line, 1 for a problem
with a model, an input or a file); ``--debug`` shows the traceback. Progress bars go to stderr, only on a TTY.
"""
from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import re
import sys
import traceback

import click

from nnrt_onnx import NNRtError, __version__
from nnrt_onnx.errors import CommandLineError, UserError
from nnrt_onnx.ir.issues import ConversionError


def _interrupts_kept(hook):
    """``sys.unraisablehook`` that raises a swallowed Ctrl-C again: a KeyboardInterrupt raised inside a C library's
    Python callback is printed and dropped ("Exception ignored on calling ctypes callback function": llvmlite's object
    cache while a kernel compiles), and the command would run on. Another thread raises it anew in the main thread
    (``interrupt_main``) a moment later, once the callback has returned (raised at once, it would land in this hook,
    itself such a callback); swallowed again, it comes back here again."""
    import _thread
    import threading

    def kept(unraisable):
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            threading.Timer(0.05, _thread.interrupt_main).start()
            return
        hook(unraisable)

    return kept


class FriendlyGroup(click.Group):
    """Turns library errors into one clear line: exit 2 for a malformed or inconsistent command line, 1 for anything
    else, 130 for Ctrl-C. ``--debug`` (the traceback) is accepted anywhere on the command line; after ``--json`` an
    error is also printed as JSON on stdout."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        ctx.meta["json_errors"] = "--json" in args[:end]
        if "--debug" in args[:end]:  # a global option, wherever it is given
            args = ["--debug"] + [a for a in args[:end] if a != "--debug"] + args[end:]
        return super().parse_args(ctx, args)

    def make_context(self, info_name, args, parent=None, **extra):
        command_line = ["nnrt-onnx", *args]  # copied before parsing consumes them: what a report records
        ctx = super().make_context(info_name, args, parent=parent, **extra)
        ctx.meta["nnrt_onnx.command_line"] = command_line
        return ctx

    def invoke(self, ctx: click.Context):
        sys.unraisablehook = _interrupts_kept(sys.unraisablehook)
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # output piped into e.g. `head`
            sys.stderr.close()
            ctx.exit(0)
        except KeyboardInterrupt:
            _fail(ctx, "interrupted", 130)
        except click.UsageError as exc:  # a malformed command line: one line too, and click's exit code 2
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            _fail(ctx, f"{exc.format_message()} (see '{where} --help')", 2)
        except ConversionError as exc:
            _debug(ctx)
            if ctx.obj and ctx.obj.get("debug"):
                for text in getattr(exc, "tracebacks", []):  # the converters' own failures (internal errors)
                    click.echo(text, err=True, nl=False)
            if ctx.meta.get("json_errors"):
                click.echo(exc.to_json())
            elif len(exc.issues) == 1:  # one line, like every other error
                click.echo(f"error: cannot convert the model: {exc.issues[0]}", err=True)
            else:  # every problem of the model, one per line
                click.echo(f"error: {exc.text()}", err=True)
            ctx.exit(1)
        except CommandLineError as exc:  # a spec that does not parse, a file it names missing, flags that conflict
            _debug(ctx)
            _fail(ctx, _one_line(str(exc)), 2)
        except (UserError, NNRtError, OSError) as exc:
            _debug(ctx)
            _fail(ctx, _one_line(_user_message(exc)), 1)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except MemoryError:
            _debug(ctx)
            _fail(ctx, "out of memory (a smaller --max-constant-bytes bounds what converting a model may take; running "
                       "a model needs what its tensors need)", 1)
        except RecursionError:
            _debug(ctx)
            _fail(ctx, "the input is nested too deeply to process", 1)
        except Exception as exc:  # a bug: still one line (and the traceback with --debug)
            _debug(ctx)
            from nnrt_onnx.onnx_import.guard import site

            text = _one_line(str(exc))
            _fail(ctx, f"internal error: {type(exc).__name__}{': ' + text if text else ''} (at {site(exc)}; run with "
                       f"--debug for the traceback and please report it)", 1)


def _debug(ctx: click.Context) -> None:
    if ctx.obj and ctx.obj.get("debug"):
        traceback.print_exc()


def _fail(ctx: click.Context, message: str, code: int):
    """The error line on stderr (and, after --json, ``{"ok": false, "error": ..., "exit_code": ...}`` on stdout), then
    exit ``code``."""
    if ctx.meta.get("json_errors") and not ctx.meta.get("json_printed"):  # (not after a JSON report that says it)
        click.echo(json.dumps({"ok": False, "error": message, "exit_code": code}, indent=1))
    click.echo(f"error: {message}", err=True)
    ctx.exit(code)


def _user_message(exc: BaseException) -> str:
    """An error in user terms: an NNRtError's message without its C return code; an OSError's reason and path, never
    ``[Errno N]``."""
    if isinstance(exc, NNRtError):
        return exc.message
    if isinstance(exc, OSError) and not isinstance(exc, UserError) and exc.strerror:
        from nnrt_onnx.errors import os_reason

        where = exc.filename if exc.filename is not None else "a file"
        return f"cannot access {where}: {os_reason(exc)}"
    return str(exc)


def _one_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return "; ".join(lines)[:2000] if len(lines) > 1 else (lines[0] if lines else "")


class HelpCommand(click.Command):
    """A command whose --help lists its options in groups (``groups``: title -> option names, the rest under
    "Other options") and ends with examples."""

    def __init__(self, *args, groups: dict[str, list[str]] | None = None, examples: list[str] | None = None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.groups = groups or {}
        self.examples = examples or []

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = {param.name: param.get_help_record(ctx) for param in self.get_params(ctx)
                   if isinstance(param, click.Option)}
        placed: set[str] = set()
        for title, names in self.groups.items():
            rows = [records[name] for name in names if records.get(name)]
            placed.update(names)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [record for name, record in records.items() if record and name not in placed]
        if rest:
            with formatter.section("Other options"):
                formatter.write_dl(rest)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if self.examples:
            with formatter.section("Examples"):
                for example in self.examples:  # as written: a command line is not rewrapped
                    formatter.write(f"{'':>{formatter.current_indent}}{example}\n")
        super().format_epilog(ctx, formatter)


def _given(ctx: click.Context, *names: str) -> list[str]:
    """The options among ``names`` (parameter names) given on the command line, as the user wrote them."""
    from click.core import ParameterSource

    shown = {param.name: max(param.opts, key=len) if param.opts else param.name for param in ctx.command.params}
    return [shown[name] for name in names if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE]


def _only_with(ctx: click.Context, needed: str, needed_name: str, *names: str) -> None:
    """A usage error when an option of ``names`` is given without ``needed`` (a parameter name) being set."""
    given = _given(ctx, *names)
    if given and not ctx.params.get(needed):
        raise click.UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} only with {needed_name}",
                               ctx)


@click.group(cls=FriendlyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nnrt-onnx")
@click.option("--debug", is_flag=True, help="Show tracebacks of errors (accepted anywhere on the command line).")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Take ONNX models to OpenHarmony's Neural Network Runtime (NNRt) and back.

    MODEL is an .onnx model or an .nnrt file. Exit codes: 0 success, 1 a problem with a model, an input or a file
    (or a failed check), 2 a malformed command line, 130 interrupted.

    \b
    Examples:
      nnrt-onnx check model.onnx
      nnrt-onnx convert model.onnx -o model.nnrt
      nnrt-onnx ops --onnx Resize
    """
    ctx.obj = {"debug": debug}


def _progress(items, label: str):
    """A progress bar on stderr when it is a terminal; nothing otherwise (pipes, CI logs, tests)."""
    if not sys.stderr.isatty():
        return contextlib.nullcontext(items)
    return click.progressbar(items, label=label, file=sys.stderr)


def _row_progress():
    """One line on stderr per checked model when stderr is a terminal; None otherwise (pipes, CI logs, tests)."""
    if not sys.stderr.isatty():
        return None

    def show(row, finished, total):
        click.echo(f"[{finished}/{total}] {row['model']}: {row['verdict']} ({row['seconds'] or 0:.1f} s)",
                   err=True)

    return show


def _phases():
    """A status line on stderr for each phase of a command still running after 2 s, when stderr is a terminal;
    None otherwise (pipes, CI logs, tests)."""
    if not sys.stderr.isatty():
        return None
    from nnrt_onnx.workflows.phases import StatusLine

    return StatusLine(sys.stderr)


class ByteSize(click.ParamType):
    """A byte count: an integer, optionally with a binary unit (K, M, G, T; KB/KiB... the same), e.g. 256M."""

    name = "BYTES"
    _UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    MAX = 1 << 50

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            number, scale = value, 1
        else:
            match = re.fullmatch(r"\s*(\d{1,20})\s*([KMGT]?)(?:I?B)?\s*", str(value), re.IGNORECASE)
            if not match:
                self.fail(f"{value!r} is not a byte count (e.g. 268435456, 256M, 1G)", param, ctx)
            number, scale = int(match.group(1)), self._UNITS[match.group(2).upper()]
        size = number * scale
        if not 0 <= size <= self.MAX:
            self.fail(f"{value!r} is outside 0..{self.MAX} bytes", param, ctx)
        return size


class Tolerance(click.ParamType):
    """A finite float >= 0 (nan and inf would make every comparison pass or fail); with ``per_tensor``, also
    ``NAME=VALUE`` (that tensor's), as ``(name or None, value)``."""

    name = "FLOAT"

    def __init__(self, per_tensor: bool = False):
        self.per_tensor = per_tensor
        if per_tensor:
            self.name = "[NAME=]FLOAT"

    def convert(self, value, param, ctx):
        name, sep, text = str(value).rpartition("=") if self.per_tensor else ("", "", value)
        if sep and not name:
            self.fail(f"{value!r}: expected FLOAT or NAME=FLOAT", param, ctx)
        try:
            number = float(text)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number" + (" (nor NAME=FLOAT)" if self.per_tensor else ""), param, ctx)
        if not math.isfinite(number) or number < 0:
            self.fail(f"{value!r} must be a finite number >= 0", param, ctx)
        return (name or None, number) if self.per_tensor else number


def _tolerance_option(flag: str, what: str):
    return click.option(flag, flag[2:], multiple=True, type=Tolerance(per_tensor=True),
                        help=f"{what} Repeatable: FLOAT for every output, NAME=FLOAT for output NAME.")


def _tolerances(ctx: click.Context, flag: str, given, names=None):
    """--rtol/--atol values: None, one float (every tensor) or {name or None: float}; a usage error for a name the
    model does not have (``names``: its outputs) or a tensor given twice."""
    found: dict[str | None, float] = {}
    for name, value in given:
        if name in found:
            raise click.UsageError(f"{flag} {'' if name is None else name + '='}{value:g}: "
                                   f"{'every output' if name is None else 'output ' + repr(name)} has a value already",
                                   ctx)
        found[name] = value
    unknown = sorted(n for n in found if n is not None and names is not None and n not in names)
    if unknown:
        raise click.UsageError(f"{flag}: unknown output name(s) {unknown}; the model's outputs are {list(names)}", ctx)
    if not found:
        return None
    return found[None] if list(found) == [None] else found


class DeviceName(click.ParamType):
    """--device: cpu (the native kernels), onnxruntime (the model exported to ONNX and run by onnxruntime), a device's
    full name or id."""

    name = "cpu|onnxruntime"

    def convert(self, value, param, ctx):
        from nnrt_onnx.workflows.inference import device_id_by_name

        try:
            device_id_by_name(str(value))
        except CommandLineError as exc:
            self.fail(str(exc).partition(": ")[2], param, ctx)
        return str(value)


def _max_constant_bytes(command):
    return click.option("--max-constant-bytes", "max_constant_bytes", type=ByteSize(), default=None,
                        help="Memory budget of an .onnx conversion for the constants it computes (folding), and of "
                             "input files and random inputs [default: 256M].")(command)


def _sweep_options(command):
    """Options of a sweep of several models (docs/sweeps.md), gathered into one ``sweep`` dict argument."""
    options = [
        click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes [default: the CPU count; "
                     "with --engine ray: the cluster's CPUs]."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True),
                     help="Seconds one model may run; then its worker is killed and its verdict is timeout "
                          "[default: 600]."),
        click.option("--max-memory", type=ByteSize(), default=None,
                     help="Resident memory one worker may use (e.g. 4G; Linux); then it is killed and the model's "
                          "verdict is out of memory [default: no cap]."),
        click.option("--results", "results", type=click.Path(dir_okay=False), metavar="FILE.jsonl",
                     help="Append each model's row to FILE as it finishes (JSON lines)."),
        click.option("--resume", is_flag=True, help="Skip the models --results FILE already has a row for."),
        click.option("--rerun-failures", is_flag=True, help="With --results: skip only the models that passed."),
        click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="local worker processes, or Ray tasks (pip install \"nnrt-onnx[ray]\")."),
        click.option("--address", help="The Ray cluster to use (--engine ray) [default: start a local one]."),
    ]
    names = ("jobs", "timeout", "max_memory", "results", "resume", "rerun_failures", "engine", "address")

    @functools.wraps(command)
    def gather(*args, **kwargs):
        return command(*args, sweep={name: kwargs.pop(name) for name in names}, **kwargs)

    for option in reversed(options):
        gather = option(gather)
    return gather


def _shape_specs(ctx, param, specs: tuple[str, ...]) -> dict[str, list[int]]:
    """Click callback of --input-shape NAME=D1,D2,...: malformed specs are usage errors."""
    shapes = {}
    for spec in specs:
        name, sep, dims = spec.rpartition("=")
        if not sep or not name:
            raise click.BadParameter(f"{spec!r}: expected NAME=D1,D2,...", param=param)
        try:
            shapes[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            raise click.BadParameter(f"{spec!r}: expected NAME=D1,D2,... with integer dims", param=param) from None
        if any(d <= 0 for d in shapes[name]):
            raise click.BadParameter(f"{spec!r}: dims must be positive", param=param)
    return shapes


_override_static_option = click.option(
    "--override-static", is_flag=True,
    help="Let --input-shape replace static dims of an .onnx model's inputs too (re-batching a model declared with "
         "batch 1); the model is converted as if declared with them.")

INPUT_OPTIONS = ["inputs", "input_shapes", "override_static", "constant_inputs", "seed", "value_ranges", "iterations",
                 "save_inputs"]


def _input_options(command):
    """--input, --input-shape, --constant-input and --seed: what every command that runs a model accepts."""
    options = [
        click.option("--input", "-i", "inputs", multiple=True, metavar="[NAME=]FILE",
                     help="An input from .npy/.pb (or a .npz of several); it also pins the input's dynamic dims. "
                          "FILE alone: a .npz whose keys are input names, or the only input of a one-input model. "
                          "Inputs not given get seeded random data."),
        click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...",
                     callback=_shape_specs, help="Pin a dynamic input's dims (also the shape of its random data)."),
        _override_static_option,
        click.option("--constant-input", "constant_inputs", multiple=True, metavar="NAME=FILE|VALUE[,VALUE...]",
                     help="Bind an input to a fixed value, e.g. a sample rate the model branches on (.onnx models)."),
        click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0),
                     help="Seed of the random inputs."),
        click.option("--val-range", "value_ranges", multiple=True, metavar="[NAME=]LO,HI",
                     help="Random values of input NAME (of every input without NAME=) uniform in [LO, HI) "
                          "(integers: [LO, HI]) instead of standard normal."),
        click.option("--save-inputs", "save_inputs", type=click.Path(dir_okay=False), metavar="FILE.npz",
                     help="Save the inputs the model was fed (given and generated) to FILE.npz, reusable as --input."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _gather_inputs(model_path: str, inputs, input_shapes, constant_inputs, max_bytes=None, override_static=False):
    """(the model, converted with what the user gave about its inputs; the ModelInputs)."""
    from pathlib import Path

    from nnrt_onnx.workflows.inference import input_names, load_any
    from nnrt_onnx.workflows.model_inputs import (
        ModelInputs,
        declared_inputs,
        import_options,
        parse_constant_specs,
        parse_input_specs,
    )

    path = Path(model_path)
    _model_file(path)
    constants = parse_constant_specs(constant_inputs, max_bytes=max_bytes)
    if override_static and path.suffix.lower() != ".onnx":
        raise CommandLineError("--override-static applies to .onnx models (an .nnrt model's static dims are fixed)")
    if override_static and not input_shapes:
        raise CommandLineError("--override-static needs --input-shape (the dims to declare)")
    if path.suffix.lower() == ".onnx":
        from nnrt_onnx.onnx_import import load_structure
        from nnrt_onnx.workflows.files import check_model_file
        from nnrt_onnx.workflows.model_inputs import override_static_dims

        check_model_file(path, "onnx")
        proto = load_structure(path)
        if override_static:
            proto = override_static_dims(proto, dict(input_shapes))
        given = parse_input_specs(inputs, sorted(declared_inputs(proto)), max_bytes=max_bytes)
        model_inputs = ModelInputs(given, dict(input_shapes or {}), constants, override_static)
        model_inputs.constants = import_options(proto, model_inputs)["constant_inputs"]  # literals typed
        return load_any(path, model_inputs, max_constant_bytes=max_bytes), model_inputs
    model_inputs = ModelInputs({}, dict(input_shapes or {}), constants)
    model = load_any(model_path, model_inputs, max_constant_bytes=max_bytes)
    model_inputs.data = parse_input_specs(inputs, input_names(model), max_bytes=max_bytes)
    return model, model_inputs


def _model_file(path) -> None:
    """A model path that does not name a file is a malformed command line (exit 2, as click's own path checks): a
    missing file and a directory alike."""
    from pathlib import Path

    path = Path(path)
    if path.is_dir():
        raise CommandLineError(f"{path}: is a directory, not a model file")
    if not path.is_file():
        raise CommandLineError(f"{path}: no such file")


def _writable(path, flag: str, directory: bool = False) -> None:
    """Fail before any work when ``path`` (an option's file or directory) cannot be written."""
    if path is not None:
        from nnrt_onnx.workflows.files import check_writable

        check_writable(path, flag, directory)


@main.command(cls=HelpCommand, groups={"What to list": ["onnx_ops", "hdi"], "Output": ["as_json", "markdown"]},
              examples=["nnrt-onnx ops                      # every NNRt op: parameters, input counts",
                        "nnrt-onnx ops --onnx Resize        # does Resize convert, at which opsets, to what",
                        "nnrt-onnx ops --onnx --markdown    # docs/onnx_unsupported.md"])
@click.argument("op", metavar="[OP]", required=False)
@click.option("--onnx", "onnx_ops", is_flag=True,
              help="ONNX operators instead: whether each converts, per opset, to what NNRt op, or why not; with OP "
                   "(an ONNX operator, e.g. Resize or com.microsoft.Attention) that one in detail.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--markdown", is_flag=True,
              help="The generated docs page: docs/ops.md (with --hdi: docs/hdi.md; with --onnx: "
                   "docs/onnx_unsupported.md).")
@click.option("--hdi", is_flag=True,
              help="Each op as the HDI v2.1 structure a driver receives, and its fields' sources.")
@click.pass_context
def ops(ctx: click.Context, op: str | None, onnx_ops: bool, as_json: bool, markdown: bool, hdi: bool) -> None:
    """The operator support matrix: every NNRt op, its parameters, dtypes and quantization; with --onnx, every ONNX
    operator and whether (and how) it converts."""
    from nnrt_onnx.workflows.opdocs import op_rows, ops_markdown

    if as_json and markdown:
        raise click.UsageError("--json and --markdown are two output formats: give one", ctx)
    if onnx_ops and hdi:
        raise click.UsageError("--onnx and --hdi list different things: give one", ctx)
    if op is not None and not onnx_ops:
        raise click.UsageError(f"OP ({op}) names an ONNX operator: add --onnx", ctx)
    if op is not None and markdown:
        raise click.UsageError("--markdown writes the page of every operator: drop OP", ctx)
    if onnx_ops:
        _onnx_ops(op, as_json, markdown)
        return
    if hdi:
        from nnrt_onnx.hdi import structure_rows
        from nnrt_onnx.workflows.hdi_text import hdi_markdown, structure_lines

        if as_json:
            click.echo(json.dumps(structure_rows(), indent=1))
        else:
            click.echo(hdi_markdown() if markdown else "\n".join(structure_lines()), nl=not markdown)
        return
    if as_json:
        click.echo(json.dumps(op_rows(), indent=1))
    elif markdown:
        click.echo(ops_markdown(), nl=False)
    else:
        for row in op_rows():
            params = ", ".join(p["type"][6:] for p in row["params"]) or "-"
            kernel = "" if row["native_kernel"] else "  [no native kernel]"
            click.echo(f"{row['value']:>3} {row['op']:<36} in {row['inputs'][0]}-{row['inputs'][1]:<3} "
                       f"params: {params}{kernel}")


def _onnx_ops(op: str | None, as_json: bool, markdown: bool) -> None:
    from nnrt_onnx.workflows.onnx_ops import onnx_op_support, support_lines, support_table, unsupported_markdown

    if markdown:
        click.echo(unsupported_markdown(), nl=False)
        return
    try:
        entries = onnx_op_support(op)
    except LookupError as exc:
        raise UserError(str(exc).strip("'\"")) from None
    if as_json:
        click.echo(json.dumps(entries if op is None else entries[0], indent=1))
    elif op is not None:
        click.echo("\n".join(support_lines(entries[0])))
    else:
        _echo_table(support_table(entries))
        converting = sum(entry["converts"] != "no" for entry in entries)
        click.echo(f"{converting} of {len(entries)} operators convert (at least at some opsets); "
                   f"'nnrt-onnx ops --onnx OP' for one in detail")
    if op is not None and entries[0]["converts"] == "no":
        sys.exit(1)


RUN_GROUPS = {
    "Inputs": INPUT_OPTIONS,
    "Outputs": ["output_dir", "output_npz", "as_json"],
    "Golden outputs": ["expected", "rtol", "atol"],
    "How it runs": ["device", "float16", "fast_paths", "max_constant_bytes"],
}


@main.command(cls=HelpCommand, groups=RUN_GROUPS, examples=[
    "nnrt-onnx run model.nnrt",
    "nnrt-onnx run model.onnx -i image.npy --output-npz out.npz",
    "nnrt-onnx run model.onnx --input-shape image=1,3,224,224 --iterations 3",
    "nnrt-onnx run model.nnrt --expected golden.npz --atol probs=1e-4"])
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=True))
@_input_options
@click.option("--iterations", default=1, show_default=True, type=click.IntRange(min=1),
              help="Run N input sets: the random inputs of seeds SEED, SEED+1, ... (given inputs stay the same).")
@click.option("--output-dir", type=click.Path(file_okay=False),
              help="Save each output as DIR/<name>.npy (names percent-encoded) and DIR/manifest.json.")
@click.option("--output-npz", type=click.Path(dir_okay=False), metavar="FILE.npz",
              help="Save every output to one FILE.npz (keys: the output names).")
@click.option("--device", default="cpu", show_default=True, type=DeviceName(),
              help="cpu (native numpy kernels) or onnxruntime (the same model exported to ONNX and run by "
                   "onnxruntime); a device's full name or id also works.")
@click.option("--float16", is_flag=True, help="Compute float32 work in float16 (EnableFloat16).")
@click.option("--fast-paths", is_flag=True,
              help="Run the native device's fast paths (compiled kernels, fusions) instead of its reference plan: "
                   "their start-up (numba, ~0.4 s even from the disk cache) costs more than they save in one run; "
                   "`bench` always uses them.")
@click.option("--expected", multiple=True, metavar="[NAME=]FILE",
              help="Golden outputs (.npy/.pb, or a .npz of several) to compare with, by check's tolerance rule; exit 1 "
                   "when outside.")
@_tolerance_option("--rtol", "Relative tolerance against --expected [float32: 1e-4].")
@_tolerance_option("--atol", "Absolute tolerance against --expected, times the output's largest magnitude "
                             "[float32: 1e-5].")
@click.option("--json", "as_json", is_flag=True, help="Outputs (dtype, shape, statistics), timings as JSON.")
@_max_constant_bytes
@click.pass_context
def run(ctx: click.Context, model_path: str, inputs: tuple[str, ...], input_shapes, override_static,
        constant_inputs, seed: int, value_ranges, save_inputs, iterations: int, output_dir: str | None, output_npz,
        device: str, float16: bool, fast_paths: bool, expected, rtol, atol, as_json: bool,
        max_constant_bytes: int | None) -> None:
    """Run MODEL (.nnrt or .onnx) and print its outputs' shapes, statistics and timings.

    On the native device, the reference plan runs (nothing to compile or load: the quickest way to one result in a
    fresh process); --fast-paths runs the plan `bench` measures. Exits 1 when a --float16 run produces NaN or
    Inf, or an output is outside its --expected golden value.
    With --output-dir, each output is saved as DIR/<name>.npy (the name percent-encoded, so every tensor name has
    its own file) and DIR/manifest.json maps the tensor names to their files.
    """
    from nnrt_onnx.workflows.inference import (
        complete_inputs,
        device_id_by_name,
        input_names,
        output_names,
        parse_value_ranges,
        run_model,
        save_outputs,
    )
    from nnrt_onnx.workflows.model_inputs import parse_expected_specs, save_arrays
    from nnrt_onnx.workflows.parity import compare, json_safe, tolerance_of
    from nnrt_onnx.workflows.tensor_stats import tensor_stats

    _only_with(ctx, "expected", "--expected", "rtol", "atol")
    if iterations > 1 and (output_dir or output_npz or save_inputs):
        raise click.UsageError("--output-dir, --output-npz and --save-inputs save one input set: drop --iterations",
                               ctx)
    _writable(save_inputs, "--save-inputs")
    _writable(output_npz, "--output-npz")
    _writable(output_dir, "--output-dir", directory=True)
    ranges = parse_value_ranges(value_ranges)
    model, model_inputs = _gather_inputs(model_path, inputs, input_shapes, constant_inputs, max_constant_bytes,
                                         override_static)
    device_id = device_id_by_name(device)
    names = input_names(model)
    if iterations > 1 and names and all(n in model_inputs.data for n in names):
        raise click.UsageError("--iterations: every input is given with --input, so every set would be the same", ctx)
    golden = parse_expected_specs(expected, output_names(model))
    rtol, atol = _tolerances(ctx, "--rtol", rtol, output_names(model)), _tolerances(ctx, "--atol", atol,
                                                                                     output_names(model))
    runs = []
    for iteration in range(iterations):
        arrays = complete_inputs(model, model_inputs.data, seed + iteration, ranges, max_bytes=max_constant_bytes,
                                 shapes=model_inputs.shapes)
        if save_inputs:
            save_arrays(save_inputs, dict(zip(names, arrays)))
        result = run_model(model, arrays, device_id, float16, fast_paths=fast_paths)
        stats = [tensor_stats(a) for a in result.outputs]
        checks = [compare(result.outputs[result.names.index(n)], v, n, tolerance_of(rtol, n), tolerance_of(atol, n))
                  for n, v in golden.items()]
        runs.append((seed + iteration, arrays, result, stats, checks))
    if as_json:
        entries = [{
            "seed": run_seed,
            "inputs": {n: {"dtype": str(a.dtype), "shape": list(a.shape),
                           "source": "given" if n in model_inputs.data else "random"} for n, a in zip(names, arrays)},
            "outputs": [{"name": n, "dtype": str(a.dtype), "shape": list(a.shape), "stats": st.to_dict()}
                        for n, a, st in zip(result.names, result.outputs, stats)],
            "expected": [c.to_dict() for c in checks],
            "compile_ms": result.compile_seconds * 1e3, "run_ms": result.run_seconds * 1e3}
            for run_seed, arrays, result, stats, checks in runs]
        data = {"model": model_path, "device": device, "float16": float16, "fast_paths": fast_paths, "seed": seed,
                **{k: v for k, v in entries[0].items() if k != "seed"}}
        if iterations > 1:
            data["iterations"] = entries
        click.echo(json.dumps(json_safe(data), indent=1))
    else:
        for run_seed, arrays, result, stats, checks in runs:
            if iterations > 1:
                click.echo(f"input set {run_seed - seed + 1} of {iterations} (seed {run_seed}):")
            for name, array, st in zip(result.names, result.outputs, stats):
                flat = array.reshape(-1)
                preview = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in flat[:4].tolist())
                click.echo(f"{name}: {array.dtype} {list(array.shape)}  [{preview}{', ...' if flat.size > 4 else ''}]")
                click.echo(f"  {_stats_text(st)}")
            click.echo(f"compile {result.compile_seconds * 1e3:.1f} ms, run {result.run_seconds * 1e3:.1f} ms")
            if checks:
                click.echo("against the expected outputs:")
                _echo_table(_comparison_rows(checks), "  ")
    result, stats = runs[-1][2], runs[-1][3]
    if output_dir:
        for path in save_outputs(result, output_dir):
            if not as_json:
                click.echo(f"wrote {path}")
    if output_npz:
        save_arrays(output_npz, dict(zip(result.names, result.outputs)), "--output-npz")
        if not as_json:
            click.echo(f"wrote {output_npz}")
    if save_inputs and not as_json:
        click.echo(f"inputs saved to {save_inputs}")
    all_stats = [(n, st) for _, _, r, sts, _ in runs for n, st in zip(r.names, sts)]
    bad = [(n, st) for n, st in all_stats if st.nan or st.inf]
    if bad and float16:
        shown = ", ".join(f"{n}: {st.nan} NaN, {st.inf} Inf" for n, st in bad)
        raise UserError(f"the float16 run produced NaN/Inf in {len(bad)} of {len(all_stats)} output(s) ({shown}): "
                        f"float16 overflows beyond 65504; run without --float16")
    for name, st in bad:
        click.echo(f"warning: output {name!r} has {st.nan} NaN and {st.inf} Inf of {st.size} elements", err=True)
    checks = [c for *_, run_checks in runs for c in run_checks]
    outside = [c.name for c in checks if not c.within]
    if outside:
        raise UserError(f"{len(outside)} of {len(checks)} output(s) outside tolerance of the expected values: "
                        f"{', '.join(outside)}")


def _stats_text(st) -> str:
    if st.min is None:
        return f"no finite element; NaN {st.nan}, Inf {st.inf}"
    return (f"min {st.min:.6g}  max {st.max:.6g}  mean {_fmt(st.mean)}  std {_fmt(st.std)}  "
            f"NaN {st.nan}  Inf {st.inf}")


IMPORT_ONLY = ("input_shapes", "override_static", "constant_inputs", "nhwc_io", "no_fold_batchnorm",
               "max_constant_bytes")


@main.command(cls=HelpCommand, groups={
    "Output": ["output", "as_json"],
    "Importing an .onnx model": list(IMPORT_ONLY),
    "Exporting to ONNX": ["opset"],
    "C source (docs/c_source.md)": ["emit", "embed_weights", "c_name"]}, examples=[
    "nnrt-onnx convert model.onnx -o model.nnrt",
    "nnrt-onnx convert model.onnx -o model.nnrt --input-shape image=1,3,224,224",
    "nnrt-onnx convert model.nnrt -o model.onnx --opset 17",
    "nnrt-onnx convert model.onnx -o simplified.onnx   # the model as the importer sees it, in ONNX",
    "nnrt-onnx convert model.onnx --emit c -o model_c/  # C99 that builds it through the NNRt C API"])
@click.argument("source", metavar="MODEL", type=click.Path(dir_okay=True))
@click.option("--output", "-o", required=True, type=click.Path(), metavar="FILE|DIR",
              help="The file to write: .nnrt (from an .onnx MODEL), or .onnx (from an .nnrt MODEL; from an .onnx "
                   "MODEL: the model after conversion -- folded, fused, simplified -- exported back to ONNX); with "
                   "--emit c, the directory.")
@click.option("--emit", type=click.Choice(["c"]), default=None, help="Write C99 source that builds the model through "
              "the NNRt C API into the directory -o.")
@click.option("--embed-weights", is_flag=True, help="With --emit c: the weights as a C array, not a file.")
@click.option("--name", "c_name", default=None, help="With --emit c: the prefix of the C functions and files "
              "(default: MODEL's name).")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...", callback=_shape_specs,
              help="Pin an input's dynamic dims.")
@_override_static_option
@click.option("--constant-input", "constant_inputs", multiple=True, metavar="NAME=FILE|VALUE[,VALUE...]",
              help="Bind an input to fixed values (a setting the model branches on; shapes, axes ... NNRt needs as "
                   "constants).")
@click.option("--nhwc-io", is_flag=True, help="Model inputs/outputs in NHWC instead of the ONNX layout.")
@click.option("--no-fold-batchnorm", is_flag=True, help="Keep BatchNormalization after Conv as its own op.")
@click.option("--opset", type=click.IntRange(13, 23), default=None, help="Target ONNX opset of an export, 13..23 "
              "(default: 18).")
@click.option("--json", "as_json", is_flag=True, help="Summary (or the list of problems) as JSON.")
@_max_constant_bytes
@click.pass_context
def convert(ctx: click.Context, source: str, output: str, emit: str | None, embed_weights: bool, c_name: str | None,
            input_shapes, override_static: bool, constant_inputs, nhwc_io: bool, no_fold_batchnorm: bool,
            opset: int | None, as_json: bool, max_constant_bytes: int | None) -> None:
    """Convert MODEL.onnx to an NNRt model file (-o FILE.nnrt), MODEL.nnrt to ONNX (-o FILE.onnx), or MODEL.onnx to
    the ONNX model the importer makes of it (-o FILE.onnx: converted to NNRt and exported back); with --emit c,
    MODEL.onnx or MODEL.nnrt to C source (-o DIR).

    Every node that cannot be converted is reported, with its reason, in one pass. The converted model is built
    (compiled for the native CPU device) before it is written: a model that cannot compile is an error, no file.
    The exported ONNX graph keeps the source graph's name.
    """
    from pathlib import Path

    from nnrt_onnx.onnx_import import from_onnx, load_onnx, load_structure
    from nnrt_onnx.serialization import save_model
    from nnrt_onnx.workflows.files import check_model_file
    from nnrt_onnx.workflows.model_inputs import ModelInputs, import_options, override_static_dims, parse_constant_specs

    src, dst = Path(source), Path(output)
    _model_file(src)
    direction = (src.suffix.lower(), dst.suffix.lower())
    if emit is None and (embed_weights or c_name is not None):
        raise click.UsageError("--embed-weights and --name go with --emit c", ctx)
    if emit == "c":
        if src.suffix.lower() not in (".onnx", ".nnrt"):
            raise click.UsageError("convert --emit c takes MODEL.onnx or MODEL.nnrt", ctx)
        if opset is not None:
            raise click.UsageError("--opset is the ONNX opset of an export; C source has none", ctx)
        if dst.exists() and not dst.is_dir():
            raise click.UsageError(f"-o {dst}: is a file; --emit c writes a directory", ctx)
        if src.suffix.lower() == ".nnrt":
            irrelevant = _given(ctx, *IMPORT_ONLY)
            if irrelevant:
                raise click.UsageError(f"{', '.join(irrelevant)}: an .nnrt model is converted already; these apply "
                                       f"to an .onnx MODEL", ctx)
            from nnrt_onnx.serialization import load_model

            check_model_file(src, "nnrt")
            _emit_c(load_model(src), src, dst, c_name, embed_weights, as_json)
            return
    elif direction not in ((".onnx", ".nnrt"), (".nnrt", ".onnx"), (".onnx", ".onnx")):
        raise click.UsageError("convert takes MODEL.onnx -o FILE.nnrt, MODEL.nnrt -o FILE.onnx or MODEL.onnx -o "
                               "FILE.onnx (or --emit c -o DIR)", ctx)
    if emit is None and direction == (".nnrt", ".onnx"):
        irrelevant = _given(ctx, *IMPORT_ONLY)
        if irrelevant:
            raise click.UsageError(f"{', '.join(irrelevant)}: an .nnrt model is converted already; these apply to an "
                                   f".onnx MODEL", ctx)
    elif emit is None and opset is not None and direction == (".onnx", ".nnrt"):
        raise click.UsageError("--opset is the ONNX opset of an export (-o FILE.onnx); an .nnrt file has none", ctx)
    if emit is None and direction == (".onnx", ".onnx") and nhwc_io:
        raise click.UsageError("--nhwc-io changes the model's interface; the ONNX model keeps the source's layout",
                               ctx)
    if override_static and not input_shapes:
        raise click.UsageError("--override-static needs --input-shape (the dims to declare)", ctx)
    if src.resolve() == dst.resolve():
        raise click.UsageError(f"-o {dst}: is MODEL itself; write to another file", ctx)
    if emit is None:
        if dst.is_dir():
            raise click.UsageError(f"-o {dst}: is a directory; give the file to write (or --emit c)", ctx)
        _writable(dst, "--output")
    if emit is None and direction == (".nnrt", ".onnx"):
        _export(src, dst, opset, as_json)
        return
    check_model_file(src, "onnx")
    proto = load_structure(src)  # (its inputs; from_onnx reads the weights from the file itself)
    source_model = str(src)
    if override_static:
        proto = override_static_dims(proto, dict(input_shapes))
        source_model = override_static_dims(load_onnx(src), dict(input_shapes))
    constants = parse_constant_specs(constant_inputs, max_bytes=max_constant_bytes)
    pinned = import_options(proto, ModelInputs({}, dict(input_shapes or {}), constants, override_static))
    result = from_onnx(source_model, **pinned, nhwc_io=nhwc_io, fold_batchnorm=not no_fold_batchnorm,
                       max_constant_bytes=max_constant_bytes)
    _must_compile(result.model)
    if emit == "c":
        _emit_c(result.model, src, dst, c_name, embed_weights, as_json)
        return
    if direction == (".onnx", ".onnx"):
        _export_model(result.model, src, dst, opset, as_json, onnx_nodes=result.stats["onnx_nodes"])
        return
    save_model(result.model, dst)
    stats = {**result.stats, "output": str(dst)}
    if as_json:
        click.echo(json.dumps(stats, indent=1))
        return
    click.echo(f"converted {src.name} (opset {stats['opset']}, {stats['onnx_nodes']} nodes) -> {dst} in "
               f"{stats['seconds']:.2f} s")
    click.echo(f"  {stats['operations']} NNRt operations, {stats['tensors']} tensors, {stats['transposes']} transposes, "
               f"{stats['fused_activations']} fused activations, {stats['folded_batchnorms']} batch norms folded")
    if stats.get("quantization"):
        click.echo(f"  {_quantization_text(stats['quantization'])}")


def _emit_c(model, src, dst, name: str | None, embed_weights: bool, as_json: bool) -> None:
    from nnrt_onnx.csource.emit import emit_c

    emitted = emit_c(model, dst, name or src.stem, embed_weights=embed_weights, source=src.name)
    if as_json:
        click.echo(json.dumps({"name": emitted.name, "directory": str(dst), "files": [str(f) for f in emitted.files],
                               "weights_bytes": emitted.weights_size}, indent=1))
        return
    click.echo(f"wrote the C source of {src.name} ({len(model.operations)} operations, {len(model.tensors)} tensors, "
               f"{emitted.weights_size} bytes of weights) -> {dst}/: {emitted.name}.c, {emitted.name}.h, "
               f"{emitted.name}_main.c, " + (f"{emitted.name}_weights.c" if emitted.weights is None
                                              else f"{emitted.name}.weights") + ", neural_network_runtime/*.h")


def _quantization_text(summary) -> str:
    """One line on a quantized model's conversion: how many compute ops read quantized tensors, the float fallbacks
    by op type, and the form chosen for dynamic quantization."""
    parts = [f"quantized: {summary['quantized_ops']} of {summary['compute_ops']} compute ops read quantized tensors"]
    fallbacks = summary.get("float_fallbacks") or {}
    parts.append("float fallbacks: " + (", ".join(f"{op} {n}" for op, n in fallbacks.items()) or "none"))
    dynamic = summary.get("dynamic")
    if dynamic:
        form = dynamic.get("form")
        parts.append("dynamic quantization: " + ("float form (weights dequantized once at conversion)"
                                                 if form == "float" else "exact integer form"))
    return "; ".join(parts)


def _must_compile(model) -> None:
    """Build ``model`` for the native CPU device, its reference plan (what `run` does first: the fast paths take
    every model the reference plan takes, and loading their compiled kernels would cost a fresh process more than
    the conversion); a UserError when it cannot."""
    from nnrt_onnx import Compilation
    from nnrt_onnx.workflows.inference import reference_plan

    try:
        compilation = Compilation(model)
        reference_plan(compilation)
        compilation.build()
    except NNRtError as exc:
        raise UserError(f"the converted model does not compile: {exc.message}; nothing written") from None


def _export(src, dst, opset: int | None, as_json: bool) -> None:
    """NNRt -> ONNX, written atomically."""
    from nnrt_onnx.serialization import load_model
    from nnrt_onnx.workflows.files import check_model_file

    check_model_file(src, "nnrt")
    try:
        model = load_model(src)
    except NNRtError as exc:
        raise UserError(f"{src}: not a valid .nnrt model file: {exc.message}") from None
    _export_model(model, src, dst, opset, as_json)


def _export_model(model, src, dst, opset: int | None, as_json: bool, onnx_nodes: int | None = None) -> None:
    """A finished NNRt model to ONNX (the graph named as the source graph), checked and written atomically."""
    import time

    from nnrt_onnx.onnx_export import DEFAULT_OPSET, ExportError, to_onnx
    from nnrt_onnx.serialization import atomic_write

    started = time.perf_counter()
    try:
        exported = to_onnx(model, opset=opset or DEFAULT_OPSET, check=True)
    except ExportError as exc:
        raise UserError(str(exc)) from None
    try:
        atomic_write(dst, [exported.SerializeToString()])
    except OSError as exc:
        from nnrt_onnx.errors import cannot

        raise UserError(cannot("write", dst, exc)) from None
    seconds = time.perf_counter() - started
    counts = {"operations": len(model.operations), "onnx_nodes": len(exported.graph.node),
              "functions": len(exported.functions), "opset": opset or DEFAULT_OPSET, "seconds": seconds,
              "graph": exported.graph.name, "output": str(dst)}
    if onnx_nodes is not None:
        counts["source_onnx_nodes"] = onnx_nodes
    if as_json:
        click.echo(json.dumps(counts, indent=1))
        return
    source = f"{src.name} ({onnx_nodes} ONNX nodes -> {counts['operations']} NNRt operations)" \
        if onnx_nodes is not None else f"{src.name} ({counts['operations']} operations)"
    click.echo(f"exported {source} -> {dst} (graph {counts['graph']!r}, opset {counts['opset']}, "
               f"{counts['onnx_nodes']} nodes, {counts['functions']} NNRt-domain functions) in {seconds:.2f} s")


@main.command(cls=HelpCommand, groups={
    "Building the program": ["cflags", "includes", "args"], "Output": ["output", "model_index", "opset"]},
    examples=["nnrt-onnx capture examples/capture/add_relu.c -o add_relu.nnrt",
              "nnrt-onnx capture app.c model_builder.c -I include --cflag -DSMALL -o app_model.onnx"])
@click.argument("sources", metavar="PROGRAM.c...", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="The .nnrt (or .onnx) file to "
              "write.")
@click.option("--cflag", "cflags", multiple=True, metavar="FLAG", help="A compiler flag for the sources (repeat).")
@click.option("-I", "includes", multiple=True, type=click.Path(file_okay=False), help="An include directory.")
@click.option("--arg", "args", multiple=True, metavar="ARG", help="An argument of the program (repeat).")
@click.option("--model-index", type=click.IntRange(min=0), default=None, help="Which of the models the program "
              "finishes (from 0), when it finishes several.")
@click.option("--opset", type=click.IntRange(13, 23), default=None, help="Target ONNX opset of an .onnx output.")
def capture(sources, output: str, cflags, includes, args, model_index: int | None, opset: int | None) -> None:
    """The model that C code builds through the NNRt C API, as a .nnrt or .onnx file.

    SOURCES (a program with its main) are compiled with the system C compiler against nnrt_onnx's NNRt headers and
    linked with a recording implementation of the API; the program runs once and its calls are replayed through
    the Python API, which validates each (docs/c_source.md).
    """
    from pathlib import Path

    from nnrt_onnx.csource.program import capture as capture_model
    from nnrt_onnx.serialization import atomic_write, save_model

    dst = Path(output)
    if dst.suffix.lower() not in (".nnrt", ".onnx"):
        raise click.BadParameter("capture writes FILE.nnrt or FILE.onnx", param_hint="-o")
    _writable(dst, "--output")
    model, run = capture_model(sources, args, flags=cflags, includes=includes, which=model_index)
    if dst.suffix.lower() == ".onnx":
        from nnrt_onnx.onnx_export import DEFAULT_OPSET, ExportError, to_onnx

        try:
            exported = to_onnx(model, opset=opset or DEFAULT_OPSET, check=True)
        except ExportError as exc:
            raise UserError(str(exc)) from None
        atomic_write(dst, [exported.SerializeToString()])
    else:
        save_model(model, dst)
    click.echo(f"captured {len(model.operations)} operations, {len(model.tensors)} tensors from "
               f"{run.replay.calls} NNRt calls (program exit {run.returncode}) -> {dst}")


@main.command(cls=HelpCommand, groups={
    "Inputs": ["input_shapes", "override_static", "max_constant_bytes"],
    "What to show": ["verbose", "hdi", "as_json"]}, examples=[
    "nnrt-onnx inspect model.onnx               # summary: inputs, outputs, op counts, what does not convert",
    "nnrt-onnx inspect model.onnx --verbose     # and every node with its shapes and the NNRt op(s) it became",
    "nnrt-onnx inspect model.nnrt --hdi         # the model as a driver receives it"])
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=True))
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...", callback=_shape_specs,
              help="Pin an input's dims (ONNX models).")
@_override_static_option
@click.option("--verbose", "-v", is_flag=True,
              help="Every node (ONNX: with its inputs' and outputs' dtype and shape, and what it became) and every "
                   "NNRt operation with its parameters and shapes.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (always complete).")
@click.option("--hdi", is_flag=True, help="The model as a driver receives it (HDI v2.1): each operation's NodeType "
              "and attribute structure, the tensor list without parameter tensors (--json: under \"hdi\").")
@_max_constant_bytes
@click.pass_context
def inspect(ctx: click.Context, model_path: str, input_shapes, override_static: bool, verbose: bool, as_json: bool,
            hdi: bool, max_constant_bytes: int | None) -> None:
    """What is in MODEL: a summary first (inputs, outputs, ONNX and NNRt op counts), then -- with --verbose -- each
    node and operation with its shapes.

    For an .onnx MODEL, also whether it converts: each node that cannot, with its reason (exit 1 then); --verbose
    lists every node -> the NNRt op(s) its mapping row targets and what it became.
    """
    from pathlib import Path

    from nnrt_onnx.workflows.describe import describe_model, onnx_support_report
    from nnrt_onnx.workflows.inference import load_any

    path = Path(model_path)
    _model_file(path)
    if override_static and not input_shapes:
        raise click.UsageError("--override-static needs --input-shape (the dims to declare)", ctx)
    if path.suffix.lower() == ".onnx":
        from nnrt_onnx.workflows.files import check_model_file

        check_model_file(path, "onnx")
        source = path
        if override_static:
            from nnrt_onnx.onnx_import import load_onnx
            from nnrt_onnx.workflows.model_inputs import override_static_dims

            source = override_static_dims(load_onnx(path), dict(input_shapes))
        report = onnx_support_report(source, input_shapes or None, max_constant_bytes=max_constant_bytes, hdi=hdi,
                                     shapes=verbose or as_json)
        report["model"] = str(path)
        if as_json:
            click.echo(json.dumps(report, indent=1))
            ctx.meta["json_printed"] = True
        else:
            _print_support(report, verbose)
        if not report["convertible"]:
            bad = sum(1 for n in report["nodes"] if n["problems"]) + len(report["problems"])
            raise UserError(f"{path.name} cannot be converted: {bad} problem(s), listed above")
        if as_json:
            return
        info = report["nnrt"]
        click.echo(f"converted to NNRt: {len(info['operations'])} operations, {info['tensor_count']} tensors, "
                   f"{info['constant_bytes']} bytes of constants")
        if report.get("quantization"):
            click.echo(_quantization_text(report["quantization"]))
    else:
        if input_shapes or override_static:
            raise click.UsageError("--input-shape applies to an .onnx MODEL (an .nnrt model's shapes are fixed)", ctx)
        model = load_any(model_path)
        info = describe_model(model)
        if hdi:
            from nnrt_onnx.hdi import hdi_view

            info["hdi"] = hdi_view(model)
        if as_json:
            click.echo(json.dumps(info, indent=1))
            return
        _print_interface(info, f"{path}: an NNRt model" + (f" (graph {info['name']!r})" if info.get("name") else ""))
        click.echo(f"{info['tensor_count']} tensors, {info['constant_bytes']} bytes of constants, "
                   f"{len(info['operations'])} operations")
    if hdi:
        from nnrt_onnx.workflows.hdi_text import view_lines

        click.echo("\n".join(view_lines(info["hdi"] if "hdi" in info else report["hdi"])))
        return
    _print_description(info, verbose, counts=path.suffix.lower() != ".onnx")  # (ONNX: in the summary already)


def _dims_text(dims) -> str:
    if dims is None:
        return "[?]"
    return "[" + ", ".join("?" if d is None or d == -1 else str(d) for d in dims) + "]"


def _print_interface(info, title: str) -> None:
    click.echo(title)
    for role in ("inputs", "outputs"):
        for t in info[role]:
            click.echo(f"  {role[:-1]:<6} {t['name']}: {t['dtype']} {_dims_text(t['dims'])}")


def _counts_text(counts: dict, strip: str = "") -> str:
    return ", ".join(f"{op.replace(strip, '') if strip else op} {n}" for op, n in counts.items())


def _print_support(report, verbose: bool = False) -> None:
    nodes = report["nodes"]
    ok = sum(1 for n in nodes if not n["problems"])
    graph = f" (graph {report['graph']!r})" if report.get("graph") else ""
    _print_interface(report, f"{report['model']}{graph}: an ONNX model, opset {report['opset']}, {len(nodes)} nodes, "
                             f"{ok} convertible")
    click.echo(f"ONNX op counts: {_counts_text(report['op_counts'])}")
    if report.get("nnrt"):
        click.echo(f"NNRt op counts: {_counts_text(report['nnrt']['op_counts'], 'OH_NN_OPS_')}")
    if not verbose:
        for n in nodes:
            if n["problems"]:
                click.echo(f"  #{n['index']} {n['node']} ({n['op_type']}) cannot convert: {'; '.join(n['problems'])}")
        for problem in report["problems"]:
            click.echo(f"  model: {problem}")
        return
    width = max([len(n["node"]) for n in nodes] + [4])
    op_width = max([len(n["op_type"]) for n in nodes] + [7])
    click.echo("nodes:")
    for n in nodes:
        head = f"  #{n['index']:<4} {n['node']:<{width}}  {n['op_type']:<{op_width}}"
        if n["problems"]:
            click.echo(f"{head}  cannot convert: {'; '.join(n['problems'])}")
        else:
            target = ", ".join(t.replace("OH_NN_OPS_", "") for t in n["targets"]) or n["mapping"] or "?"
            line = f"{head}  -> {target}"
            if n["emitted"] is not None:
                became = sorted(set(n["emitted"]))
                if not became:
                    line += "  (fused/folded into a neighbour)"
                elif [b.replace("OH_NN_OPS_", "") for b in became] != [target]:
                    line += f"  (emitted: {', '.join(b.replace('OH_NN_OPS_', '') for b in became)})"
            click.echo(line)
        if "inputs" in n:
            shown = [f"{v['name']} {v['dtype'] or '?'} {_dims_text(v['dims'])}" for v in n["inputs"]]
            click.echo(f"  {'':<5} {'':<{width}}  in:  {', '.join(shown) or '-'}")
            shown = [f"{v['name']} {v['dtype'] or '?'} {_dims_text(v['dims'])}" for v in n["outputs"]]
            click.echo(f"  {'':<5} {'':<{width}}  out: {', '.join(shown) or '-'}")
    for problem in report["problems"]:
        click.echo(f"  model: {problem}")


def _print_description(info, verbose: bool = False, counts: bool = True) -> None:
    """An NNRt model: op counts (and quantization); with ``verbose``, every operation with its shapes."""
    if counts:
        click.echo("NNRt op counts:")
        for op, count in info["op_counts"].items():
            click.echo(f"  {count:>4} x {op.replace('OH_NN_OPS_', '')}")
    quantization = info.get("quantization")
    if quantization:
        reading = quantization["operations_reading_quantized"]
        click.echo(f"{quantization['quantized_tensors']} quantized tensors, read by {sum(reading.values())} operations: "
                   + ", ".join(f"{op.replace('OH_NN_OPS_', '')} {n}" for op, n in reading.items()))
    if not verbose:
        click.echo("(--verbose: every node and operation with its shapes)")
        return
    click.echo("operations:")
    for op in info["operations"]:
        params = ", ".join(f"{k}={v}" for k, v in op["params"].items())
        ins = ", ".join(f"{n} {_dims_text(d)}" for n, d in zip(op["inputs"], op.get("input_dims", [])))
        outs = ", ".join(f"{n} {_dims_text(d)}" for n, d in zip(op["outputs"], op.get("output_dims", [])))
        click.echo(f"  #{op['index']} {op['op'].replace('OH_NN_OPS_', '')}({ins}) -> {outs}"
                   f"{'  ' + params if params else ''}")


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:  # NaN: never shown as a number
            return "-"
        return "inf" if value == float("inf") else f"{value:.3g}"
    return str(value)


def _comparison_rows(comparisons):
    rows = [("tensor", "dtype", "shape", "max abs", "max rel", "outside", "cosine", "tolerance", "result")]
    for c in comparisons:
        tolerance = "exact" if c.rtol == 0 and c.atol == 0 else f"rtol {c.rtol:g}, atol {c.atol:.2g}"
        result = "within" if c.within else "OUTSIDE"
        if c.nan:
            result = f"NaN (native {c.native_stats.nan}, onnxruntime {c.reference_stats.nan})"
        rows.append((c.name, c.dtype, str(c.shape), _fmt(c.max_abs), _fmt(c.max_rel), f"{c.mismatched}/{c.size}",
                     "-" if c.cosine is None else f"{c.cosine:.6f}", tolerance,
                     result + (f"  ({c.note})" if c.note else "")))
    return rows


def _stats_rows(comparisons):
    rows = [("statistics", "side", "min", "max", "mean", "std", "NaN", "Inf")]
    for c in comparisons:
        for side, st in (("native", c.native_stats), ("onnxruntime", c.reference_stats)):
            if st is None:
                continue
            rows.append((c.name if side == "native" else "", side, _fmt(st.min), _fmt(st.max), _fmt(st.mean),
                         _fmt(st.std), str(st.nan), str(st.inf)))
    return rows


def _echo_table(rows, indent: str = "") -> None:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [str(cell).ljust(w) for cell, w in zip(row, widths)] + [str(row[-1])]
        click.echo((indent + "  ".join(cells)).rstrip())


CHECK_GROUPS = {
    "Inputs": INPUT_OPTIONS,
    "Tolerances": ["rtol", "atol", "steps", "strict", "float64"],
    "Golden outputs": ["expected"],
    "Finding the culprit": ["per_layer", "repro_dir"],
    "Output": ["as_json", "html_path"],
    "Converting": ["max_constant_bytes"],
}


@main.command(cls=HelpCommand, groups=CHECK_GROUPS, examples=[
    "nnrt-onnx check model.onnx",
    "nnrt-onnx check model.onnx -i image.npy --per-layer --extract-repro repro/",
    "nnrt-onnx check model.onnx --iterations 5 --val-range 0,1 --atol logits=1e-4",
    "nnrt-onnx check model.onnx --input-shape image=8,3,224,224 --override-static   # re-batched to 8",
    "nnrt-onnx check models/ --json"])
@click.argument("model_paths", metavar="MODEL...", nargs=-1, required=True, type=click.Path())
@_input_options
@click.option("--iterations", default=1, show_default=True, type=click.IntRange(min=1),
              help="Check N input sets: the random inputs of seeds SEED, SEED+1, ... (given inputs stay the same); "
                   "passes when every set passes.")
@_tolerance_option("--rtol", "Relative tolerance of float outputs [float32: 1e-4].")
@_tolerance_option("--atol", "Absolute tolerance of float outputs, times the output's largest magnitude "
                             "[float32: 1e-5].")
@click.option("--steps", type=click.FloatRange(min=0),
              help="Quantization steps a dequantized output of a quantized model may be off [1]; onnx.reference "
                   "judges a larger disagreement.")
@click.option("--per-layer", is_flag=True, help="Compare every intermediate tensor; name the first diverging node.")
@click.option("--extract-repro", "repro_dir", type=click.Path(file_okay=False),
              help="Write the smallest ONNX model reproducing the first divergence, and its inputs, to DIR "
                   "(implies --per-layer); it is run first, and grown upstream until it fails on its own.")
@click.option("--expected", multiple=True, metavar="[NAME=]FILE",
              help="Golden outputs (.npy/.pb, or a .npz of several): native must be within tolerance of them too.")
@click.option("--strict", is_flag=True,
              help="Fail on any warning: an ill-conditioned or constant output, a side a referee overruled.")
@click.option("--float64/--no-float64", "float64", default=None,
              help="Always ask the float64 referee, even where it cannot change the result (slow on big models) / "
                   "never ask it (a disagreement then simply fails). Default: only where it can change the result.")
@click.option("--report", "html_path", type=click.Path(), metavar="FILE.html | DIR",
              help="Write a self-contained HTML page: the verdict, the outputs and pictures of their differences, the "
                   "per-layer error chart and node table, the command and timings (implies --per-layer). Several "
                   "models: a directory, with index.html (the summary table) linking one page per model.")
@click.option("--json", "as_json", is_flag=True, help="The report as JSON (errors too).")
@_max_constant_bytes
@_sweep_options
@click.pass_context
def check(ctx: click.Context, model_paths, inputs, input_shapes, override_static, constant_inputs, seed: int,
          value_ranges, save_inputs, iterations, rtol, atol, steps, per_layer: bool, repro_dir, expected, strict: bool,
          float64: bool | None, html_path, as_json: bool, max_constant_bytes: int | None, sweep: dict):
    """Convert MODEL (.onnx), run it natively and the original on onnxruntime, and compare every output.

    When they disagree (or, with --strict, agree only just) a float64 referee (onnx.reference) says who is right:
    native, onnxruntime, or neither -- or that the model is ill-conditioned (a warning). Several models or a directory:
    one summary row per model. Exits 0 when every model passes, 1 otherwise (or on an error), 2 on a malformed
    command line.
    """
    from pathlib import Path

    from nnrt_onnx.workflows.value_ranges import parse_value_ranges  # (no numpy: a sweep's process imports none)

    ranges = parse_value_ranges(value_ranges)
    sweep_given = [f"--{name.replace('_', '-')}" for name, value in sweep.items()
                   if value and name != "engine" or name == "engine" and value != "local"]
    if len(model_paths) > 1 or Path(model_paths[0]).is_dir() or sweep_given:
        given = [name for name, value in (("--input", inputs), ("--input-shape", input_shapes),
                                          ("--constant-input", constant_inputs), ("--expected", expected),
                                          ("--extract-repro", repro_dir), ("--save-inputs", save_inputs),
                                          ("--override-static", override_static), ("--iterations", iterations > 1))
                 if value]
        if any(name is not None for name in ranges):
            given.append("--val-range NAME=")
        if any(name is not None for name, _ in rtol + atol):
            given.append("--rtol/--atol NAME=")
        if given:
            raise click.UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to one model; "
                                   f"checking several takes --seed, --val-range LO,HI, --rtol, --atol, "
                                   f"--per-layer, --strict, --float64, --no-float64, --report DIR, --json", ctx)
        _check_many(model_paths, seed, ranges, _tolerances(ctx, "--rtol", rtol), _tolerances(ctx, "--atol", atol),
                    per_layer, strict, float64, as_json, max_constant_bytes, sweep, html_path)
        return
    if override_static and not input_shapes:
        raise click.UsageError("--override-static needs --input-shape (the dims to declare)", ctx)
    if iterations > 1 and save_inputs:
        raise click.UsageError("--save-inputs saves one input set: drop --iterations", ctx)
    _model_file(model_paths[0])
    _writable(save_inputs, "--save-inputs")
    if html_path is not None and os.path.isdir(html_path):
        raise click.UsageError(f"--report {html_path}: a directory; one model's report is a file (FILE.html)", ctx)
    _writable(html_path, "--report")
    _writable(repro_dir, "--extract-repro", directory=True)
    _check_one(ctx, model_paths[0], inputs, input_shapes, constant_inputs, seed, ranges, save_inputs, rtol, atol,
               per_layer, repro_dir, expected, strict, float64, html_path, as_json, max_constant_bytes, steps,
               override_static, iterations)


def _check_one(ctx, model_path, inputs, input_shapes, constant_inputs, seed, ranges, save_inputs, rtol, atol,
               per_layer, repro_dir, expected, strict, float64, html_path, as_json, max_constant_bytes,
               steps=None, override_static=False, iterations=1) -> None:
    from nnrt_onnx.workflows.model_inputs import (
        override_static_dims,
        parse_constant_specs,
        parse_expected_specs,
        parse_input_specs,
        save_arrays,
    )
    from nnrt_onnx.workflows.parity import check_model, load_checked, runtime_input_names

    model, label = load_checked(model_path)
    declared = override_static_dims(model, dict(input_shapes)) if override_static else model
    names = runtime_input_names(declared)
    given = parse_input_specs(inputs, names, max_bytes=max_constant_bytes)
    if iterations > 1 and names and all(n in given for n in names):
        raise click.UsageError("--iterations: every input is given with --input, so every set would be the same", ctx)
    outputs = [o.name for o in model.graph.output]
    golden = parse_expected_specs(expected, outputs)
    rtol, atol = _tolerances(ctx, "--rtol", rtol, outputs), _tolerances(ctx, "--atol", atol, outputs)
    asked = per_layer  # the layer table is printed when asked for (a referee may compare the layers anyway)
    per_layer = per_layer or repro_dir is not None or html_path is not None
    constants = parse_constant_specs(constant_inputs, max_bytes=max_constant_bytes)
    reports = []
    for iteration in range(iterations):
        reports.append(check_model(
            model, given, seed + iteration, per_layer, rtol=rtol, atol=atol, input_shapes=input_shapes,
            constant_inputs=constants, phases=_phases(), label=label, strict=strict, expected=golden,
            value_ranges=ranges or None, float64_opinion=float64 is not False, float64_always=float64 is True,
            max_constant_bytes=max_constant_bytes, steps=steps, override_static=override_static))
    report = next((r for r in reports if not r.ok), reports[-1])  # the set shown in full: the first that fails
    if save_inputs:
        save_arrays(save_inputs, report.input_arrays)
    diverged = (report.culprit or report.first_divergence) is not None
    if repro_dir is not None and diverged:
        report.extract_repro(repro_dir)
    if html_path is not None:
        from nnrt_onnx.workflows.html_page import write_page
        from nnrt_onnx.workflows.html_report import html_report

        write_page(html_path, html_report(report, command=_command_line()))
    ok = all(r.ok for r in reports)
    if as_json:
        data = report.to_dict()
        data["repro"] = report.repro["path"] if report.repro is not None else None
        data["repro_details"] = report.repro
        if iterations > 1:
            data["ok"] = ok
            data["iterations"] = [{"seed": r.seed, "ok": r.ok, **({"report": r.to_dict()} if r is not report else {})}
                                  for r in reports]
        click.echo(json.dumps(data, indent=1))
    else:
        if iterations > 1:
            click.echo(f"{iterations} input sets (seeds {seed}..{seed + iterations - 1}):")
            for r in reports:
                worst = max(r.outputs, key=lambda c: c.max_rel if c.max_rel == c.max_rel else float("inf"))
                click.echo(f"  seed {r.seed}: {'OK' if r.ok else 'FAIL'}  (worst output {worst.name}: max rel "
                           f"{_fmt(worst.max_rel)})")
            click.echo(f"the set of seed {report.seed} in full:")
        _print_check(report, show_layers=asked or repro_dir is not None)
        if iterations > 1:
            failed = sum(not r.ok for r in reports)
            click.echo(f"{'FAIL' if failed else 'OK'}: {iterations - failed} of {iterations} input sets pass")
        if save_inputs:
            click.echo(f"inputs saved to {save_inputs}")
        if html_path is not None:
            click.echo(f"report written to {html_path}")
    if repro_dir is not None and not diverged:
        click.echo("no layer diverged: there is nothing to extract", err=True)
    sys.exit(0 if ok else 1)


def _command_line() -> str | None:
    """The command line as typed (shell-quoted), for a report to record."""
    import shlex

    words = click.get_current_context().meta.get("nnrt_onnx.command_line")
    return shlex.join(str(w) for w in words) if words else None


def _verdict_text(v) -> str:
    """The float64 verdict in a table cell."""
    if v is None:
        return "-"
    if v.verdict is None:
        return "agrees"
    if v.verdict == "ill-conditioned" and v.amplifier is not None:
        return f"ill-conditioned at #{v.amplifier['index']} ({v.amplifier['op_type']})"
    if v.verdict in ("native is wrong", "onnxruntime is wrong", "neither matches float64") and v.closer != "equal":
        ratio = "inf" if v.ratio == float("inf") else f"{v.ratio:.3g}"
        return f"{v.verdict} ({v.closer} {ratio}x closer)"
    return v.verdict


def _print_check(report, show_layers: bool = True) -> None:
    sources = {info["source"] for info in report.inputs.values()}
    seed = f", seed {report.seed}" if "random" in sources else ""

    def shown(name, info):
        span = f", uniform [{info['range'][0]:g}, {info['range'][1]:g})" if "range" in info else ""
        return f"{name} {info['dtype']} {info['shape']} ({info['source']}{span})"

    inputs = ", ".join(shown(n, i) for n, i in report.inputs.items())
    click.echo(f"check {report.model}: {report.onnx_nodes} ONNX nodes -> {report.nnrt_operations} NNRt operations, "
               f"native vs onnxruntime{seed}")
    click.echo(f"inputs: {inputs}")
    _echo_table(_comparison_rows(report.outputs), "  ")
    _echo_table(_stats_rows(report.outputs), "  ")
    if report.expected:
        click.echo("against the expected outputs (native, then onnxruntime):")
        _echo_table(_comparison_rows(report.expected + report.expected_reference), "  ")
    if report.float64_not_asked is not None:
        click.echo(f"float64 referee not asked: {report.float64_not_asked}")
    if report.float64 is not None and report.float64.get("error") is None:
        f = report.float64
        click.echo(f"float64 referee (onnx.reference, the model in double; {f['trials']} Monte Carlo runs, "
                   f"{f['seconds']:.1f} s; asked because {' and '.join(f['asked_because'])}):")
        rows = [("tensor", "native err", "onnxruntime err", "expected err", "verdict")]
        for c in report.outputs:
            if c.float64 is not None:
                v = c.float64
                rows.append((c.name, _fmt(v.native_error), _fmt(v.onnxruntime_error), _fmt(v.expected_error),
                             _verdict_text(v)))
        _echo_table(rows, "  ")
    if report.layers is not None:
        compared = [layer for layer in report.layers if layer.status != "not compared"]
        diverged = [layer for layer in compared if layer.status == "diverged"]
        fused = sum(layer.reason == "fused away" for layer in report.layers)
        folded = sum(layer.reason == "constant-folded" for layer in report.layers)
        click.echo(f"per layer: {len(compared)} of {len(report.layers)} ONNX nodes compared ({fused} fused away in "
                   f"NNRt, {folded} constant-folded), {len(diverged)} outside tolerance")
        rows = [("#", "node", "op", "NNRt op", "max abs", "max rel", "cosine", "float64")]
        for layer in compared if show_layers else []:
            worst = max(layer.outputs, key=lambda c: c.max_rel)
            f64 = [c.float64 for c in layer.outputs if c.float64 is not None]
            verdict = layer.verdict or ("agrees" if f64 else "-")
            if layer.verdict:
                verdict = _verdict_text(next(c.float64 for c in layer.outputs
                                             if c.float64 is not None and c.float64.verdict == layer.verdict))
            rows.append((str(layer.index), layer.node, layer.op_type, ", ".join(layer.nnrt_ops) or "-",
                         _fmt(worst.max_abs), _fmt(worst.max_rel),
                         "-" if worst.cosine is None else f"{worst.cosine:.6f}",
                         verdict + ("  OUTSIDE" if layer.status == "diverged" else "")))
        if len(rows) > 1:
            _echo_table(rows, "  ")
        first = report.first_divergence
        if first is not None:
            fused = f", fused in NNRt with {', '.join(repr(n) for n in first.fused_with)}" if first.fused_with else ""
            click.echo(f"first divergence: ONNX node #{first.index} {first.node!r} ({first.op_type}){fused}")
            _echo_table(_comparison_rows(first.outputs), "  ")
        culprit = report.culprit
        if culprit is not None:
            v = next(c.float64 for c in culprit.outputs if c.float64 is not None and c.float64.verdict)
            click.echo(f"float64 says native is wrong first at ONNX node #{culprit.index} {culprit.node!r} "
                       f"({culprit.op_type}): {v.text()}")
    if report.repro is not None:
        r = report.repro
        if r["reproduces"]:
            grown = f" ({r['nodes']} nodes, grown upstream until it fails alone)" if len(r["sizes_tried"]) > 1 else ""
            click.echo(f"repro written to {r['path']}/{grown}; it reproduces on its own (run: {r['command']})")
        else:
            click.echo(f"repro written to {r['path']}/ but it does NOT fail on its own (tried "
                       f"{', '.join(map(str, r['sizes_tried']))} nodes); run: {r['command']}")
    for note in report.notes:
        click.echo(f"note: {note}")
    for warning in report.warnings:
        click.echo(f"warning: {warning}")
    failing = [c for c in report.outputs if not c.passed()]
    warned = len(report.warnings)
    tail = f", {warned} warning(s)" if warned else ""
    if failing:
        nan = sum(1 for c in failing if c.nan)
        what = f" ({nan} with NaN)" if nan else ""
        click.echo(f"FAIL: {len(failing)} of {len(report.outputs)} output(s) outside tolerance{what}{tail}")
    elif report.expected and not all(c.within and not c.nan for c in report.expected):
        bad = sum(1 for c in report.expected if not c.within or c.nan)
        click.echo(f"FAIL: {bad} of {len(report.expected)} output(s) outside tolerance of the expected values{tail}")
    elif report.culprit is not None:
        click.echo(f"FAIL: native is wrong at ONNX node #{report.culprit.index} {report.culprit.node!r} "
                   f"({report.culprit.op_type}){tail}")
    elif not report.ok:
        click.echo(f"FAIL (--strict): {warned} warning(s)")
    else:
        cleared = sum(1 for c in report.outputs if not c.within)
        if cleared:
            click.echo(f"OK: all {len(report.outputs)} output(s) pass ({cleared} outside tolerance, cleared by the "
                       f"float64 referee){tail}")
        else:
            click.echo(f"OK: all {len(report.outputs)} output(s) within tolerance{tail}")


def _check_many(paths, seed, ranges, rtol, atol, per_layer, strict, float64, as_json,
                max_constant_bytes=None, sweep=None, report_dir=None) -> None:
    import time

    from nnrt_onnx.workflows import sweep_report
    from nnrt_onnx.workflows.sweep import CheckOptions, find_models
    from nnrt_onnx.workflows.sweep_pool import Limits
    from nnrt_onnx.workflows.sweep_run import run_sweep

    options = CheckOptions(seed=seed, per_layer=per_layer or report_dir is not None, rtol=rtol, atol=atol,
                           strict=strict, value_ranges=tuple((n, lo, hi) for n, (lo, hi) in ranges.items()),
                           float64_opinion=float64 is not False, float64_always=float64 is True,
                           max_constant_bytes=max_constant_bytes, page=report_dir is not None,
                           command=_command_line(), back=sweep_report.INDEX if report_dir else None)
    models = find_models(paths)
    if report_dir is not None:
        sweep_report.prepare_report_dir(report_dir)

    def write_page(position, row):  # each model's page as soon as it is done, before its row is stored
        if report_dir is not None:
            sweep_report.write_model_page(row, report_dir, position, len(models))

    started = time.perf_counter()
    sweep = dict(sweep or {})
    limits = Limits(timeout=sweep.pop("timeout", None) or Limits.timeout, max_memory=sweep.pop("max_memory", None))
    rows, resumed = run_sweep(models, options, limits=limits, on_row=_row_progress(), before_store=write_page,
                              **sweep)
    if resumed:
        click.echo(f"{resumed} of {len(rows)} model(s) from {sweep['results']}, not checked again", err=True)
    if report_dir is not None:
        index = sweep_report.write_index(rows, report_dir, _command_line(), time.perf_counter() - started)
    ok = all(row["ok"] for row in rows)
    if as_json:
        options_shown = {"seed": seed, "rtol": rtol, "atol": atol, "strict": strict, "per_layer": per_layer}
        click.echo(json.dumps(sweep_report.sweep_json(rows, options_shown), indent=1))
        sys.exit(0 if ok else 1)
    click.echo(f"check {len(rows)} model(s), native vs onnxruntime, seed {seed}")
    table = sweep_report.summary_table(rows)
    _echo_table(table, "  ")
    click.echo(sweep_report.summary_line(rows))
    if report_dir is not None:
        click.echo(f"report written to {index} (and one page per model beside it)")
    sys.exit(0 if ok else 1)


@main.command(cls=HelpCommand, groups={
    "Inputs": INPUT_OPTIONS, "Timing": ["runs", "warmup", "threads"], "Profile": ["profile", "top"],
    "Output": ["as_json"], "Converting": ["max_constant_bytes"]}, examples=[
    "nnrt-onnx bench model.nnrt",
    "nnrt-onnx bench model.onnx -n 50 --threads 4",
    "nnrt-onnx bench model.onnx --profile --top 5"])
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=True))
@_input_options
@click.option("--runs", "-n", default=20, show_default=True, type=click.IntRange(min=1), help="Timed runs.")
@click.option("--warmup", default=3, show_default=True, type=click.IntRange(min=0), help="Untimed runs first.")
@click.option("--threads", type=click.IntRange(min=1),
              help="onnxruntime's intra-op threads, and the native side's BLAS threads (its thread policy's "
                   "nnrt_onnx.threads extension config; default 1).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output, with every run's time.")
@click.option("--profile", is_flag=True,
              help="Also time every native operation: a table of op types by time (count, ms per run, share); for "
                   "an .onnx MODEL, the same table from onnxruntime's profiler.")
@click.option("--top", default=15, show_default=True, type=click.IntRange(min=1),
              help="With --profile: rows of the op table (the rest summed in one row).")
@_max_constant_bytes
@click.pass_context
def bench(ctx: click.Context, model_path: str, inputs, input_shapes, override_static, constant_inputs, seed: int,
          value_ranges, save_inputs, runs: int, warmup: int, threads, as_json: bool, profile: bool, top: int,
          max_constant_bytes: int | None) -> None:
    """Latency of MODEL (.nnrt or .onnx) natively vs on onnxruntime: mean, std and percentiles of N runs after
    warm-up.

    Both devices run the same compiled NNRt model through Compilation/Executor; an .onnx MODEL is also timed as
    is in onnxruntime.
    """
    from pathlib import Path

    from nnrt_onnx.workflows.inference import benchmark, complete_inputs, input_names, parse_value_ranges
    from nnrt_onnx.workflows.model_inputs import save_arrays

    _only_with(ctx, "profile", "--profile", "top")
    _writable(save_inputs, "--save-inputs")
    ranges = parse_value_ranges(value_ranges)
    model, model_inputs = _gather_inputs(model_path, inputs, input_shapes, constant_inputs, max_constant_bytes,
                                         override_static)
    arrays = complete_inputs(model, model_inputs.data, seed, ranges, max_bytes=max_constant_bytes,
                             shapes=model_inputs.shapes)
    if save_inputs:
        save_arrays(save_inputs, dict(zip(input_names(model), arrays)))
    original = model_path if Path(model_path).suffix.lower() == ".onnx" else None
    if original and override_static:  # onnxruntime times the model as re-declared, as the native side runs it
        from nnrt_onnx.onnx_import import load_onnx
        from nnrt_onnx.workflows.model_inputs import override_static_dims

        original = override_static_dims(load_onnx(model_path), dict(input_shapes))
    results = benchmark(model, arrays, (1, 2), runs, warmup, original, progress=_progress,
                        bound=model_inputs.constants, threads=threads)
    native = results[0].median
    op_times = _profile_ops(model, arrays, runs, warmup, threads) if profile else None
    ort_times = _profile_onnxruntime(original, model, arrays, model_inputs.constants, runs, warmup, threads) \
        if profile and original else None

    def ms(value):
        return None if value is None else value * 1e3

    if as_json:
        click.echo(json.dumps({"model": model_path, "runs": runs, "warmup": warmup, "threads": threads,
                               **_profile_json(op_times),
                               **({"onnxruntime_profile": _profile_json(ort_times)["profile"]} if ort_times else {}),
                               "results": [
            {"name": r.name, "compile_ms": ms(r.compile_seconds), "median_ms": ms(r.median), "mean_ms": ms(r.mean),
             "std_ms": ms(r.std), "p50_ms": ms(r.percentile(50)), "p90_ms": ms(r.percentile(90)),
             "p99_ms": ms(r.percentile(99)), "min_ms": min(r.times) * 1e3 if r.times else None,
             "max_ms": max(r.times) * 1e3 if r.times else None,
             "times_ms": [t * 1e3 for t in r.times] if r.times else None,
             "speedup_vs_native": native / r.median if native and r.median else None, "error": r.error}
            for r in results]}, indent=1))
        return
    shown_threads = f", {threads} thread(s)" if threads else ""
    click.echo(f"bench {model_path}: {runs} run(s) after {warmup} warm-up{shown_threads} (median = p50)")
    rows = [("runs on", "compile ms", "mean ms", "std ms", "p50 ms", "p90 ms", "p99 ms", "min ms", "native/this")]
    for r in results:
        if r.error:
            rows.append((r.name, "-", "-", "-", "-", "-", "-", "-", f"unavailable: {r.error}"))
            continue
        rows.append((r.name, f"{r.compile_seconds * 1e3:.1f}", f"{r.mean * 1e3:.3f}", f"{r.std * 1e3:.3f}",
                     f"{r.median * 1e3:.3f}", f"{r.percentile(90) * 1e3:.3f}", f"{r.percentile(99) * 1e3:.3f}",
                     f"{min(r.times) * 1e3:.3f}", f"{native / r.median:.2f}x" if native else "-"))
    _echo_table(rows, "  ")
    if save_inputs:
        click.echo(f"inputs saved to {save_inputs}")
    if op_times is not None:
        _echo_profile(*op_times, top)
    if ort_times is not None:
        _echo_profile(*ort_times, top, "onnxruntime (original .onnx, its profiler; op types after its fusions)")


def _profile_ops(model, arrays, runs: int, warmup: int, threads: int | None):
    from nnrt_onnx.errors import NNRtError
    from nnrt_onnx.workflows.inference import profile_model

    try:
        return profile_model(model, arrays, runs, warmup, threads=threads)
    except NNRtError as exc:
        raise UserError(f"--profile: {exc.message}") from None


def _profile_onnxruntime(original, model, arrays, constants, runs: int, warmup: int, threads: int | None):
    """The original .onnx's per-op-type time in onnxruntime, or None (with a note) when it cannot run there."""
    from nnrt_onnx.workflows.inference import input_names, profile_onnxruntime

    feed = {**dict(zip(input_names(model), arrays)), **dict(constants or {})}
    try:
        return profile_onnxruntime(original, feed, runs, warmup, threads=threads)
    except RuntimeError as exc:
        click.echo(f"note: no onnxruntime profile: {exc}", err=True)
        return None


def _profile_json(op_times) -> dict:
    if op_times is None:
        return {}
    table, total = op_times
    return {"profile": {"step_ms": total * 1e3, "ops": [
        {"op": t.op, "count": t.count, "ms": t.seconds * 1e3, "share": t.share} for t in table]}}


def _echo_profile(table, total: float, top: int, runs_on: str = "native") -> None:
    """A --profile table: time per op type, most expensive first."""
    click.echo(f"{runs_on} time by operation type (mean of the runs; steps total {total * 1e3:.3f} ms):")
    rows = [("op", "count", "ms/run", "share")]
    for t in table[:top]:
        rows.append((t.op, str(t.count), f"{t.seconds * 1e3:.3f}", f"{t.share * 100:.1f}%"))
    rest = table[top:]
    if rest:
        rows.append((f"({len(rest)} more)", str(sum(t.count for t in rest)),
                     f"{sum(t.seconds for t in rest) * 1e3:.3f}", f"{sum(t.share for t in rest) * 100:.1f}%"))
    _echo_table(rows, "  ")


if __name__ == "__main__":
    sys.exit(main())
