"""The nnrt-onnx command line: thin wrappers over library functions (installed as nnrt_onnx/cli.py).

Every user error ends in one line on stderr and a non-zero exit; ``--debug`` shows the traceback.
"""
from __future__ import annotations

import json
import sys
import traceback

import click

from nnrt_onnx import NNRtError, __version__
from nnrt_onnx.inference import UserError
from nnrt_onnx.onnx_import import ConversionError


class FriendlyGroup(click.Group):
    """Turns library errors into one clear line and exit code 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # output piped into e.g. `head`
            sys.stderr.close()
            ctx.exit(0)
        except ConversionError as exc:
            if ctx.obj and ctx.obj.get("json_errors"):
                click.echo(exc.to_json())
            else:
                click.echo(f"error: {exc.text()}", err=True)
            ctx.exit(1)
        except (UserError, NNRtError, OSError) as exc:
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            message = exc.message if isinstance(exc, NNRtError) else str(exc)
            prefix = f"{exc.code.name}: " if isinstance(exc, NNRtError) else ""
            click.echo(f"error: {prefix}{message}", err=True)
            ctx.exit(1)


@click.group(cls=FriendlyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nnrt-onnx")
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Take ONNX models to OpenHarmony's Neural Network Runtime (NNRt) and back."""
    ctx.obj = {"debug": debug}


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--markdown", is_flag=True, help="The docs/ops.md table.")
def ops(as_json: bool, markdown: bool) -> None:
    """The operator support matrix: every NNRt op, its parameters, dtypes and quantization."""
    from nnrt_onnx.opdocs import op_rows, ops_markdown

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
@click.option("--input", "-i", "inputs", multiple=True, metavar="NAME=FILE",
              help="An input from .npy/.pb (or a .npz of several). Inputs not given get seeded random data.")
@click.option("--output-dir", "-o", type=click.Path(file_okay=False), help="Save each output as DIR/<name>.npy.")
@click.option("--device", default="cpu", show_default=True, help="Device name or id.")
@click.option("--float16", is_flag=True, help="Compute float32 work in float16 (EnableFloat16).")
@click.option("--seed", default=0, show_default=True, help="Seed of the random inputs.")
def run(model_path: str, inputs: tuple[str, ...], output_dir: str | None, device: str, float16: bool, seed: int) -> None:
    """Run MODEL (.nnrt or .onnx) once and print its outputs' shapes and timings."""
    from nnrt_onnx.inference import (complete_inputs, device_id_by_name, input_names, load_any, parse_input_specs,
                                     run_model, save_outputs)

    model = load_any(model_path)
    device_id = device_id_by_name(device)
    arrays = complete_inputs(model, parse_input_specs(inputs, input_names(model)), seed)
    result = run_model(model, arrays, device_id, float16)
    for name, array in zip(result.names, result.outputs):
        flat = array.reshape(-1)
        preview = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in flat[:4].tolist())
        click.echo(f"{name}: {array.dtype} {list(array.shape)}  [{preview}{', ...' if flat.size > 4 else ''}]")
    click.echo(f"compile {result.compile_seconds * 1e3:.1f} ms, run {result.run_seconds * 1e3:.1f} ms")
    if output_dir:
        for path in save_outputs(result, output_dir):
            click.echo(f"wrote {path}")


def _shape_specs(specs: tuple[str, ...]) -> dict[str, list[int]]:
    shapes = {}
    for spec in specs:
        name, sep, dims = spec.rpartition("=")
        try:
            shapes[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            raise UserError(f"--input-shape {spec}: expected NAME=D1,D2,... with integer dims") from None
        if not sep or not name:
            raise UserError(f"--input-shape {spec}: expected NAME=D1,D2,...")
    return shapes


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="The .nnrt (or .onnx) file to write.")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...", help="Pin an input's dims.")
@click.option("--constant-input", "constant_inputs", multiple=True, metavar="NAME=FILE.npy",
              help="Bind an input to fixed values (shapes, axes ... NNRt needs as constants).")
@click.option("--nhwc-io", is_flag=True, help="Model inputs/outputs in NHWC instead of the ONNX layout.")
@click.option("--no-fold-batchnorm", is_flag=True, help="Keep BatchNormalization after Conv as its own op.")
@click.option("--json", "as_json", is_flag=True, help="Summary (or the list of problems) as JSON.")
@click.pass_context
def convert(ctx: click.Context, source: str, output: str, input_shapes, constant_inputs, nhwc_io: bool,
            no_fold_batchnorm: bool, as_json: bool) -> None:
    """Convert SOURCE (.onnx) to an NNRt model file (.nnrt).

    Every node that cannot be converted is reported, with its reason, in one pass.
    """
    from pathlib import Path

    from nnrt_onnx.inference import parse_input_specs
    from nnrt_onnx.onnx_import import from_onnx
    from nnrt_onnx.serialization import save_model

    ctx.obj["json_errors"] = as_json
    src, dst = Path(source), Path(output)
    if not src.is_file():
        raise UserError(f"{src}: no such file")
    if src.suffix.lower() != ".onnx" or dst.suffix.lower() != ".nnrt":
        raise UserError("convert takes an .onnx model and writes a .nnrt file (NNRt -> ONNX export is not available yet)")
    bound = {}
    for spec in constant_inputs:
        name, sep, file = spec.partition("=")
        if not sep:
            raise UserError(f"--constant-input {spec}: expected NAME=FILE")
        bound.update(parse_input_specs([spec], [name]))
    result = from_onnx(str(src), input_shapes=_shape_specs(input_shapes), constant_inputs=bound, nhwc_io=nhwc_io,
                       fold_batchnorm=not no_fold_batchnorm)
    save_model(result.model, dst)
    stats = {**result.stats, "output": str(dst)}
    if as_json:
        click.echo(json.dumps(stats, indent=1))
        return
    click.echo(f"converted {src.name} (opset {stats['opset']}, {stats['onnx_nodes']} nodes) -> {dst} in "
               f"{stats['seconds']:.2f} s")
    click.echo(f"  {stats['operations']} NNRt operations, {stats['tensors']} tensors, {stats['transposes']} transposes, "
               f"{stats['fused_activations']} fused activations, {stats['folded_batchnorms']} batch norms folded")


@main.command()
@click.argument("model_path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def inspect(model_path: str, as_json: bool) -> None:
    """What is in MODEL: ops by count, inputs/outputs, each op's parameters."""
    from nnrt_onnx.describe import describe_model
    from nnrt_onnx.inference import load_any

    info = describe_model(load_any(model_path))
    if as_json:
        click.echo(json.dumps(info, indent=1))
        return
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


if __name__ == "__main__":
    sys.exit(main())
