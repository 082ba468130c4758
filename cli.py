"""The nnrt-onnx command line (installed as nnrt_onnx/cli.py; run from a checkout as `python cli.py`)."""
from __future__ import annotations

import sys

import click

from nnrt_onnx import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nnrt-onnx")
def main() -> None:
    """Take ONNX models to OpenHarmony's Neural Network Runtime (NNRt) and back."""


if __name__ == "__main__":
    sys.exit(main())
