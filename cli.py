"""The nnrt-onnx command line: thin wrappers over library functions (installed as nnrt_onnx/cli.py).

Every user error ends in one line on stderr and a non-zero exit (2 for a malformed command line, 1 for a problem
with a model, an input or a file); ``--debug`` shows the traceback. Progress bars go to stderr, only on a TTY.
"""
from __future__ import annotations

import contextlib
import json
import math
import re
import sys
import traceback

import click

from nnrt_onnx import NNRtError, __version__
from nnrt_onnx.errors import UserError
from nnrt_onnx.onnx_import import ConversionError


class FriendlyGroup(click.Group):
    """Turns library errors into one clear line and exit code 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # output piped into e.g. `head`
            sys.stderr.close()
            ctx.exit(0)
        except click.UsageError as exc:  # a malformed command line: one line too, and click's exit code 2
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            click.echo(f"error: {exc.format_message()} (see '{where} --help')", err=True)
            ctx.exit(2)
        except ConversionError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
                for text in getattr(exc, "tracebacks", []):  # the converters' own failures (internal errors)
                    click.echo(text, err=True, nl=False)
            if ctx.obj and ctx.obj.get("json_errors"):
                click.echo(exc.to_json())
            elif len(exc.issues) == 1:  # one line, like every other error
                click.echo(f"error: cannot convert the model: {exc.issues[0]}", err=True)
            else:  # every problem of the model, one per line
                click.echo(f"error: {exc.text()}", err=True)
            ctx.exit(1)
        except (UserError, NNRtError, OSError) as exc:
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            message = exc.message if isinstance(exc, NNRtError) else str(exc)
            prefix = f"{exc.code.name}: " if isinstance(exc, NNRtError) else ""
            click.echo(f"error: {prefix}{_one_line(message)}", err=True)
            ctx.exit(1)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except MemoryError:
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            click.echo("error: out of memory (a smaller --max-constant-bytes bounds what converting a model may "
                       "take; running a model needs what its tensors need)", err=True)
            ctx.exit(1)
        except RecursionError:
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            click.echo("error: the input is nested too deeply to process", err=True)
            ctx.exit(1)
        except Exception as exc:  # a bug: still one line (and the traceback with --debug)
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            from nnrt_onnx.onnx_import.guard import site

            text = _one_line(str(exc))
            click.echo(f"error: internal error: {type(exc).__name__}{': ' + text if text else ''} (at {site(exc)}; "
                       f"run with --debug for the traceback and please report it)", err=True)
            ctx.exit(1)


def _one_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return "; ".join(lines)[:2000] if len(lines) > 1 else (lines[0] if lines else "")


@click.group(cls=FriendlyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nnrt-onnx")
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Take ONNX models to OpenHarmony's Neural Network Runtime (NNRt) and back."""
    ctx.obj = {"debug": debug}


def _progress(items, label: str):
    """A progress bar on stderr when it is a terminal; nothing otherwise (pipes, CI logs, tests)."""
    if not sys.stderr.isatty():
        return contextlib.nullcontext(items)
    return click.progressbar(items, label=label, file=sys.stderr)


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
    """A finite float >= 0 (nan and inf would make every comparison pass or fail)."""

    name = "FLOAT"

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number) or number < 0:
            self.fail(f"{value!r} must be a finite number >= 0", param, ctx)
        return number


def _max_constant_bytes(command):
    return click.option("--max-constant-bytes", "max_constant_bytes", type=ByteSize(), default=None,
                        help="Memory budget of an .onnx conversion for the constants it computes (folding), and of "
                             "input files and random inputs [default: 256M].")(command)


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


def _input_options(command):
    """--input, --input-shape, --constant-input and --seed: what every command that runs a model accepts."""
    options = [
        click.option("--input", "-i", "inputs", multiple=True, metavar="NAME=FILE",
                     help="An input from .npy/.pb (or a .npz of several); it also pins the input's dynamic dims. "
                          "Inputs not given get seeded random data."),
        click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...",
                     callback=_shape_specs, help="Pin a dynamic input's dims (.onnx models)."),
        click.option("--constant-input", "constant_inputs", multiple=True, metavar="NAME=FILE|VALUE[,VALUE...]",
                     help="Bind an input to a fixed value, e.g. a sample rate the model branches on (.onnx models)."),
        click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0),
                     help="Seed of the random inputs."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _gather_inputs(model_path: str, inputs, input_shapes, constant_inputs, max_bytes=None):
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
    constants = parse_constant_specs(constant_inputs, max_bytes=max_bytes)
    if path.suffix.lower() == ".onnx" and path.is_file():
        from nnrt_onnx.onnx_import import load_onnx

        proto = load_onnx(path)
        given = parse_input_specs(inputs, sorted(declared_inputs(proto)), max_bytes=max_bytes)
        model_inputs = ModelInputs(given, dict(input_shapes or {}), constants)
        model_inputs.constants = import_options(proto, model_inputs)["constant_inputs"]  # literals typed
        return load_any(proto, model_inputs, max_constant_bytes=max_bytes), model_inputs
    model_inputs = ModelInputs({}, dict(input_shapes or {}), constants)
    model = load_any(model_path, model_inputs, max_constant_bytes=max_bytes)
    model_inputs.data = parse_input_specs(inputs, input_names(model), max_bytes=max_bytes)
    return model, model_inputs


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--markdown", is_flag=True, help="The docs/ops.md table.")
def ops(as_json: bool, markdown: bool) -> None:
    """The operator support matrix: every NNRt op, its parameters, dtypes and quantization."""
    from nnrt_onnx.workflows.opdocs import op_rows, ops_markdown

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


@main.command()
@click.argument("model_path", type=click.Path(dir_okay=False))
@_input_options
@click.option("--output-dir", "-o", type=click.Path(file_okay=False),
              help="Save each output as DIR/<name>.npy (names percent-encoded) and DIR/manifest.json.")
@click.option("--device", default="cpu", show_default=True,
              help="Device name, backend or id: cpu (native numpy kernels) or onnxruntime (the same model exported "
                   "to ONNX and run by onnxruntime).")
@click.option("--float16", is_flag=True, help="Compute float32 work in float16 (EnableFloat16).")
@_max_constant_bytes
def run(model_path: str, inputs: tuple[str, ...], input_shapes, constant_inputs, seed: int, output_dir: str | None,
        device: str, float16: bool, max_constant_bytes: int | None) -> None:
    """Run MODEL (.nnrt or .onnx) once and print its outputs' shapes and timings.

    With --output-dir, each output is saved as DIR/<name>.npy (the name percent-encoded, so every tensor name has
    its own file) and DIR/manifest.json maps the tensor names to their files.
    """
    from nnrt_onnx.workflows.inference import complete_inputs, device_id_by_name, run_model, save_outputs

    model, model_inputs = _gather_inputs(model_path, inputs, input_shapes, constant_inputs, max_constant_bytes)
    device_id = device_id_by_name(device)
    arrays = complete_inputs(model, model_inputs.data, seed, max_bytes=max_constant_bytes)
    result = run_model(model, arrays, device_id, float16)
    for name, array in zip(result.names, result.outputs):
        flat = array.reshape(-1)
        preview = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in flat[:4].tolist())
        click.echo(f"{name}: {array.dtype} {list(array.shape)}  [{preview}{', ...' if flat.size > 4 else ''}]")
    click.echo(f"compile {result.compile_seconds * 1e3:.1f} ms, run {result.run_seconds * 1e3:.1f} ms")
    if output_dir:
        for path in save_outputs(result, output_dir):
            click.echo(f"wrote {path}")


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="The .nnrt (or .onnx) file to write.")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...", callback=_shape_specs,
              help="Pin an input's dims.")
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
def convert(ctx: click.Context, source: str, output: str, input_shapes, constant_inputs, nhwc_io: bool,
            no_fold_batchnorm: bool, opset: int | None, as_json: bool, max_constant_bytes: int | None) -> None:
    """Convert SOURCE.onnx to an NNRt model file (-o MODEL.nnrt), or SOURCE.nnrt to ONNX (-o MODEL.onnx).

    Every node that cannot be converted is reported, with its reason, in one pass. The converted model is built
    (compiled for the native CPU device) before it is written: a model that cannot compile is an error, no file.
    """
    from pathlib import Path

    from nnrt_onnx.onnx_import import from_onnx, load_onnx
    from nnrt_onnx.serialization import save_model
    from nnrt_onnx.workflows.model_inputs import ModelInputs, import_options, parse_constant_specs

    ctx.obj["json_errors"] = as_json
    src, dst = Path(source), Path(output)
    if not src.is_file():
        raise UserError(f"{src}: no such file")
    direction = (src.suffix.lower(), dst.suffix.lower())
    if direction == (".nnrt", ".onnx"):
        _export(src, dst, opset, as_json)
        return
    if direction != (".onnx", ".nnrt"):
        raise UserError("convert takes MODEL.onnx -o MODEL.nnrt, or MODEL.nnrt -o MODEL.onnx")
    proto = load_onnx(src)
    constants = parse_constant_specs(constant_inputs, max_bytes=max_constant_bytes)
    pinned = import_options(proto, ModelInputs({}, dict(input_shapes or {}), constants))
    result = from_onnx(proto, **pinned, nhwc_io=nhwc_io, fold_batchnorm=not no_fold_batchnorm,
                       max_constant_bytes=max_constant_bytes)
    _must_compile(result.model)
    save_model(result.model, dst)
    stats = {**result.stats, "output": str(dst)}
    if as_json:
        click.echo(json.dumps(stats, indent=1))
        return
    click.echo(f"converted {src.name} (opset {stats['opset']}, {stats['onnx_nodes']} nodes) -> {dst} in "
               f"{stats['seconds']:.2f} s")
    click.echo(f"  {stats['operations']} NNRt operations, {stats['tensors']} tensors, {stats['transposes']} transposes, "
               f"{stats['fused_activations']} fused activations, {stats['folded_batchnorms']} batch norms folded")


def _must_compile(model) -> None:
    """Build ``model`` for the native CPU device (what `run` does first); a UserError when it cannot."""
    from nnrt_onnx import Compilation

    try:
        Compilation(model).build()
    except NNRtError as exc:
        raise UserError(f"the converted model does not compile ({exc.code.name}): {exc.message}; nothing written") \
            from None


def _export(src, dst, opset: int | None, as_json: bool) -> None:
    """NNRt -> ONNX, written atomically."""
    import time

    from nnrt_onnx.onnx_export import DEFAULT_OPSET, ExportError, to_onnx
    from nnrt_onnx.serialization import atomic_write, load_model

    started = time.perf_counter()
    model = load_model(src)
    try:
        exported = to_onnx(model, opset=opset or DEFAULT_OPSET, check=True)
    except ExportError as exc:
        raise UserError(str(exc)) from None
    atomic_write(dst, [exported.SerializeToString()])
    seconds = time.perf_counter() - started
    counts = {"operations": len(model.operations), "onnx_nodes": len(exported.graph.node),
              "functions": len(exported.functions), "opset": opset or DEFAULT_OPSET, "seconds": seconds,
              "output": str(dst)}
    if as_json:
        click.echo(json.dumps(counts, indent=1))
        return
    click.echo(f"exported {src.name} ({counts['operations']} operations) -> {dst} (opset {counts['opset']}, "
               f"{counts['onnx_nodes']} nodes, {counts['functions']} NNRt-domain functions) in {seconds:.2f} s")


@main.command()
@click.argument("model_path", type=click.Path(dir_okay=False))
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...", callback=_shape_specs,
              help="Pin an input's dims (ONNX models).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@_max_constant_bytes
def inspect(model_path: str, input_shapes, as_json: bool, max_constant_bytes: int | None) -> None:
    """What is in MODEL: ops by count, inputs/outputs, each op's parameters.

    For an .onnx MODEL, first a support report: each node -> the NNRt op(s) its mapping row targets (and what it
    became), or why it cannot be converted; exits 1 when some node cannot.
    """
    from pathlib import Path

    from nnrt_onnx.workflows.describe import describe_model, onnx_support_report
    from nnrt_onnx.workflows.inference import load_any

    path = Path(model_path)
    if path.suffix.lower() == ".onnx":
        if not path.is_file():
            raise UserError(f"{path}: no such file")
        report = onnx_support_report(path, input_shapes or None, max_constant_bytes=max_constant_bytes)
        if as_json:
            click.echo(json.dumps(report, indent=1))
        else:
            _print_support(report)
        if not report["convertible"]:
            bad = sum(1 for n in report["nodes"] if n["problems"]) + len(report["problems"])
            raise UserError(f"{path.name} cannot be converted: {bad} problem(s), listed above")
        if as_json:
            return
        click.echo("converted to NNRt:")
        info = report["nnrt"]
    else:
        info = describe_model(load_any(model_path))
        if as_json:
            click.echo(json.dumps(info, indent=1))
            return
    _print_description(info)


def _print_support(report) -> None:
    nodes = report["nodes"]
    ok = sum(1 for n in nodes if not n["problems"])
    click.echo(f"{report['model']}: opset {report['opset']}, {len(nodes)} nodes, {ok} convertible")
    width = max([len(n["node"]) for n in nodes] + [4])
    op_width = max([len(n["op_type"]) for n in nodes] + [7])
    for n in nodes:
        head = f"  #{n['index']:<4} {n['node']:<{width}}  {n['op_type']:<{op_width}}"
        if n["problems"]:
            click.echo(f"{head}  cannot convert: {'; '.join(n['problems'])}")
            continue
        target = ", ".join(t.replace("OH_NN_OPS_", "") for t in n["targets"]) or n["mapping"] or "?"
        line = f"{head}  -> {target}"
        if n["emitted"] is not None:
            became = sorted(set(n["emitted"]))
            if not became:
                line += "  (fused/folded into a neighbour)"
            elif [b.replace("OH_NN_OPS_", "") for b in became] != [target]:
                line += f"  (emitted: {', '.join(b.replace('OH_NN_OPS_', '') for b in became)})"
        click.echo(line)
    for problem in report["problems"]:
        click.echo(f"  model: {problem}")


def _print_description(info) -> None:
    for role in ("inputs", "outputs"):
        for t in info[role]:
            click.echo(f"{role[:-1]:<6} {t['name']}: {t['dtype']} {t['dims']}")
    click.echo(f"{info['tensor_count']} tensors, {info['constant_bytes']} bytes of constants, "
               f"{len(info['operations'])} operations:")
    for op, count in info["op_counts"].items():
        click.echo(f"  {count:>4} x {op}")
    for op in info["operations"]:
        params = ", ".join(f"{k}={v}" for k, v in op["params"].items())
        click.echo(f"  #{op['index']} {op['op']}({', '.join(op['inputs'])}) -> {', '.join(op['outputs'])}"
                   f"{'  ' + params if params else ''}")


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "inf" if value == float("inf") else f"{value:.3g}"
    return str(value)


def _comparison_rows(comparisons):
    rows = [("tensor", "dtype", "shape", "max abs", "max rel", "outside", "cosine", "tolerance", "result")]
    for c in comparisons:
        tolerance = "exact" if c.rtol == 0 and c.atol == 0 else f"rtol {c.rtol:g}, atol {c.atol:.2g}"
        rows.append((c.name, c.dtype, str(c.shape), _fmt(c.max_abs), _fmt(c.max_rel), f"{c.mismatched}/{c.size}",
                     "-" if c.cosine is None else f"{c.cosine:.6f}", tolerance,
                     ("within" if c.within else "OUTSIDE") + (f"  ({c.note})" if c.note else "")))
    return rows


def _echo_table(rows, indent: str = "") -> None:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [str(cell).ljust(w) for cell, w in zip(row, widths)] + [str(row[-1])]
        click.echo((indent + "  ".join(cells)).rstrip())


@main.command()
@click.argument("model_path", metavar="MODEL.onnx", type=click.Path(dir_okay=False))
@_input_options
@click.option("--rtol", type=Tolerance(), help="Relative tolerance of float outputs [float32: 1e-4].")
@click.option("--atol", type=Tolerance(),
              help="Absolute tolerance of float outputs, times the output's largest magnitude [float32: 1e-5].")
@click.option("--per-layer", is_flag=True, help="Compare every intermediate tensor; name the first diverging node.")
@click.option("--extract-repro", "repro_dir", type=click.Path(file_okay=False),
              help="Write the smallest ONNX model reproducing the first divergence, and its inputs, to DIR "
                   "(implies --per-layer).")
@click.option("--json", "as_json", is_flag=True, help="The report as JSON.")
@_max_constant_bytes
def check(model_path: str, inputs, input_shapes, constant_inputs, seed: int, rtol, atol, per_layer: bool, repro_dir,
          as_json: bool, max_constant_bytes: int | None):
    """Convert MODEL.onnx, run it natively and the original on onnxruntime, and compare every output.

    Exits 0 when every output is within tolerance, 1 otherwise (or on an error), 2 on a malformed command line.
    """
    from nnrt_onnx.workflows.model_inputs import parse_constant_specs, parse_input_specs
    from nnrt_onnx.workflows.parity import check_model, load_checked, runtime_input_names

    model, label = load_checked(model_path)
    given = parse_input_specs(inputs, runtime_input_names(model), max_bytes=max_constant_bytes)
    per_layer = per_layer or repro_dir is not None
    report = check_model(model, given, seed, per_layer, rtol=rtol, atol=atol, input_shapes=input_shapes,
                         constant_inputs=parse_constant_specs(constant_inputs, max_bytes=max_constant_bytes),
                         progress=_progress, label=label, max_constant_bytes=max_constant_bytes)
    repro = None
    if repro_dir is not None and report.first_divergence is not None:
        repro = report.extract_repro(repro_dir)
    if as_json:
        data = report.to_dict()
        data["repro"] = str(repro) if repro is not None else None
        click.echo(json.dumps(data, indent=1))
    else:
        _print_check(report, repro)
    if repro_dir is not None and report.first_divergence is None:
        click.echo("no layer diverged: there is nothing to extract", err=True)
    sys.exit(0 if report.ok else 1)


def _print_check(report, repro) -> None:
    sources = {info["source"] for info in report.inputs.values()}
    seed = f", seed {report.seed}" if "random" in sources else ""
    inputs = ", ".join(f"{n} {i['dtype']} {i['shape']} ({i['source']})" for n, i in report.inputs.items())
    click.echo(f"check {report.model}: {report.onnx_nodes} ONNX nodes -> {report.nnrt_operations} NNRt operations, "
               f"native vs onnxruntime{seed}")
    click.echo(f"inputs: {inputs}")
    _echo_table(_comparison_rows(report.outputs), "  ")
    if report.layers is not None:
        compared = [layer for layer in report.layers if layer.status != "not compared"]
        diverged = [layer for layer in compared if layer.status == "diverged"]
        click.echo(f"per layer: {len(compared)} of {len(report.layers)} ONNX nodes compared "
                   f"({len(report.layers) - len(compared)} fused away in NNRt), {len(diverged)} outside tolerance")
        first = report.first_divergence
        if first is not None:
            fused = f", fused in NNRt with {', '.join(repr(n) for n in first.fused_with)}" if first.fused_with else ""
            click.echo(f"first divergence: ONNX node #{first.index} {first.node!r} ({first.op_type}){fused}")
            _echo_table(_comparison_rows(first.outputs), "  ")
    if repro is not None:
        click.echo(f"repro written to {repro}/ (run: nnrt-onnx check {repro}/repro.onnx --input {repro}/inputs.npz)")
    bad = sum(not c.within for c in report.outputs)
    if bad:
        click.echo(f"FAIL: {bad} of {len(report.outputs)} output(s) outside tolerance")
    else:
        click.echo(f"OK: all {len(report.outputs)} output(s) within tolerance")


@main.command()
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@_input_options
@click.option("--runs", "-n", default=20, show_default=True, type=click.IntRange(min=1), help="Timed runs.")
@click.option("--warmup", default=3, show_default=True, type=click.IntRange(min=0), help="Untimed runs first.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@_max_constant_bytes
def bench(model_path: str, inputs, input_shapes, constant_inputs, seed: int, runs: int, warmup: int,
          as_json: bool, max_constant_bytes: int | None) -> None:
    """Latency of MODEL (.nnrt or .onnx) natively vs on onnxruntime: median of N runs after warm-up.

    Both devices run the same compiled NNRt model through Compilation/Executor; an .onnx MODEL is also timed as
    is in onnxruntime.
    """
    from pathlib import Path

    from nnrt_onnx.workflows.inference import benchmark, complete_inputs

    model, model_inputs = _gather_inputs(model_path, inputs, input_shapes, constant_inputs, max_constant_bytes)
    arrays = complete_inputs(model, model_inputs.data, seed, max_bytes=max_constant_bytes)
    original = model_path if Path(model_path).suffix.lower() == ".onnx" else None
    results = benchmark(model, arrays, (1, 2), runs, warmup, original, progress=_progress,
                        bound=model_inputs.constants)
    native = results[0].median
    if as_json:
        click.echo(json.dumps({"model": model_path, "runs": runs, "warmup": warmup, "results": [
            {"name": r.name, "compile_ms": None if r.compile_seconds is None else r.compile_seconds * 1e3,
             "median_ms": None if r.median is None else r.median * 1e3,
             "min_ms": min(r.times) * 1e3 if r.times else None,
             "speedup_vs_native": native / r.median if native and r.median else None, "error": r.error}
            for r in results]}, indent=1))
        return
    click.echo(f"bench {model_path}: median of {runs} run(s) after {warmup} warm-up")
    rows = [("runs on", "compile ms", "median ms", "min ms", "native/this")]
    for r in results:
        if r.error:
            rows.append((r.name, "-", "-", "-", f"unavailable: {r.error}"))
            continue
        rows.append((r.name, f"{r.compile_seconds * 1e3:.1f}", f"{r.median * 1e3:.3f}", f"{min(r.times) * 1e3:.3f}",
                     f"{native / r.median:.2f}x" if native else "-"))
    _echo_table(rows, "  ")


if __name__ == "__main__":
    sys.exit(main())
