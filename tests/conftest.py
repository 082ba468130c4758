"""Shared fixtures."""
from __future__ import annotations

import zlib

import numpy as np
import pytest


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A generator seeded from the test id, so every test sees the same data on every run."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def cli_main():
    """The click entry point: the installed nnrt_onnx.cli, or cli.py of the checkout."""
    try:
        from nnrt_onnx.cli import main
    except ImportError:
        import importlib.util
        from pathlib import Path

        path = Path(__file__).resolve().parent.parent / "cli.py"
        spec = importlib.util.spec_from_file_location("nnrt_onnx_cli", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        main = module.main
    return main


@pytest.fixture
def invoke(cli_main):
    """``invoke(*args)``: run the CLI in-process (click's CliRunner), stderr kept apart from stdout."""
    from click.testing import CliRunner

    def run(*args):
        try:
            runner = CliRunner(mix_stderr=False)  # click 8.1
        except TypeError:
            runner = CliRunner()  # click >= 8.2 keeps stderr apart
        return runner.invoke(cli_main, [str(a) for a in args])

    return run


@pytest.fixture(autouse=True)
def _blas_threads_given_back():
    """The native device's runs leave BLAS at their thread count (runtime/threads.py: set once, not per run): every
    test starts from the process's own count, as a program that calls ``release_blas_threads`` would."""
    yield
    from nnrt_onnx.runtime.threads import release_blas_threads

    release_blas_threads()
