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


class FriendlyGroup(click.Group):
    """Turns library errors into one clear line and exit code 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # output piped into e.g. `head`
            sys.stderr.close()
            ctx.exit(0)
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
