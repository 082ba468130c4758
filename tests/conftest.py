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
