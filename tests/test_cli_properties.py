"""Properties of the command-line parsers (issue 12): whatever text a user types, a parser returns a well-formed
value or refuses it with its own error type (click's BadParameter: exit 2; UserError: exit 1) -- and the CLI as a
whole ends with exit 0, 1 or 2, one error line, no traceback."""
from __future__ import annotations

import importlib.util
import math
import string
from pathlib import Path

import click
import numpy as np
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnrt_onnx.errors import UserError
from nnrt_onnx.workflows.model_inputs import ModelInputs, import_options, parse_constant_specs, parse_input_specs

ROOT = Path(__file__).resolve().parent.parent
TINY_MLP = str(ROOT / "models" / "tiny_mlp.onnx")
TINY_NNRT = str(ROOT / "models" / "tiny_cnn.nnrt")

TEXT = st.text(alphabet=string.printable + "é∞−\x00", max_size=24)
NUMBERISH = st.one_of(TEXT, st.from_regex(r"-?\d{0,25}(\.\d{0,5})?([eE][+-]?\d{0,4})?\s?[kKmMgGtTeE]?[iI]?[bB]?",
                                          fullmatch=True),
                      st.sampled_from(["nan", "NaN", "inf", "-inf", "1e309", "0", "-0", "1E", "256M", "1 GiB"]))


def _cli():
    spec = importlib.util.spec_from_file_location("nnrt_onnx_cli_properties", ROOT / "cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cli = _cli()


@settings(max_examples=500, deadline=None)
@given(NUMBERISH)
def test_byte_size_parses_or_refuses(text):
    try:
        value = cli.ByteSize().convert(text, None, None)
    except click.BadParameter:
        return
    assert isinstance(value, int) and 0 <= value <= cli.ByteSize.MAX


@settings(max_examples=500, deadline=None)
@given(NUMBERISH)
def test_tolerance_parses_or_refuses(text):
    try:
        value = cli.Tolerance().convert(text, None, None)
    except click.BadParameter:
        return
    assert isinstance(value, float) and math.isfinite(value) and value >= 0


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(TEXT, st.from_regex(r"[a-z]{1,4}=(-?\d{1,12},?){0,4}", fullmatch=True)), max_size=4))
def test_input_shape_specs_parse_or_refuse(specs):
    try:
        shapes = cli._shape_specs(None, None, tuple(specs))
    except click.BadParameter:
        return
    assert all(isinstance(name, str) and name and dims and all(isinstance(d, int) and d > 0 for d in dims)
               for name, dims in shapes.items())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(TEXT, st.from_regex(r"(x|features)=(-?[\d.e]{1,8},?){1,3}", fullmatch=True),
                          st.from_regex(r"[a-z]{1,3}=[a-z/]{0,6}\.(npy|npz|pb)", fullmatch=True)), max_size=3))
def test_constant_input_specs_parse_or_refuse(specs):
    """Literals are typed by the model's declared input (tiny_mlp: float32 'features'): a UserError otherwise."""
    import onnx

    model = onnx.load(TINY_MLP)
    try:
        constants = parse_constant_specs(specs)
        options = import_options(model, ModelInputs({}, {}, constants))
    except UserError:
        return
    for name, array in options["constant_inputs"].items():
        assert isinstance(array, np.ndarray) and array.dtype == np.float32


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(TEXT, st.from_regex(r"[a-z]{0,3}=?[a-z/]{0,6}\.(npy|npz|pb)", fullmatch=True)), max_size=3))
def test_input_specs_parse_or_refuse(specs):
    try:
        given_inputs = parse_input_specs(specs, ["features"])
    except UserError:
        return
    assert set(given_inputs) <= {"features"}


OPTION_VALUES = {
    "--seed": st.sampled_from(["0", "-1", "3", "x", "99999999999999999999"]),
    "--max-constant-bytes": NUMBERISH,
    "--input-shape": st.sampled_from(["features=2,64", "features=0,64", "features=2", "nope=1", "=", "features=a"]),
    "--constant-input": st.sampled_from(["features=1", "features=x", "nope=1", "features=/no/such.npy", "="]),
    "--input": st.sampled_from(["features=/no/such.npy", "nope", "x.npz", "features="]),
    "--rtol": NUMBERISH,
    "--atol": NUMBERISH,
    "--runs": st.sampled_from(["1", "0", "-3", "two"]),
    "--warmup": st.sampled_from(["0", "-1", "x"]),
    "--device": st.sampled_from(["cpu", "onnxruntime", "7", "nope", "1"]),
    "--opset": st.sampled_from(["13", "18", "23", "12", "99", "x"]),
}
COMMANDS = {
    "run": ["--seed", "--max-constant-bytes", "--input-shape", "--constant-input", "--input", "--device"],
    "inspect": ["--input-shape", "--max-constant-bytes"],
    "bench": ["--runs", "--warmup", "--seed", "--max-constant-bytes"],
    "check": ["--rtol", "--atol", "--seed", "--input-shape", "--max-constant-bytes"],
    "convert": ["--input-shape", "--constant-input", "--max-constant-bytes", "--opset"],
}


@st.composite
def command_lines(draw):
    command = draw(st.sampled_from(sorted(COMMANDS)))
    model = draw(st.sampled_from([TINY_MLP, TINY_NNRT, "/no/such.onnx", str(ROOT / "README.md")]))
    argv = [command, model]
    if command == "convert":
        argv += ["-o", draw(st.sampled_from(["OUT.nnrt", "OUT.onnx", "OUT.txt"]))]
    for option in draw(st.lists(st.sampled_from(COMMANDS[command]), max_size=3)):
        argv += [option, draw(OPTION_VALUES[option])]
    if draw(st.booleans()) and command in ("run", "bench"):
        argv += ["--runs", "1"] if command == "bench" else []
    return argv


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(command_lines())
def test_any_command_line_ends_in_0_1_or_2_without_a_traceback(cli_main, tmp_path_factory, argv):
    out = tmp_path_factory.mktemp("cli")
    argv = [a.replace("OUT", str(out / "model")) if isinstance(a, str) else a for a in argv]
    try:
        runner = CliRunner(mix_stderr=False)  # click 8.1
    except TypeError:
        runner = CliRunner()
    result = runner.invoke(cli_main, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), (argv, result.exception)
    assert result.exit_code in (0, 1, 2), (argv, result.exit_code, result.output)
    assert "Traceback" not in result.output + result.stderr, argv
    if result.exit_code == 2 or (result.exit_code == 1 and argv[0] != "check"):
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, result.stderr)
    leftovers = [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers
