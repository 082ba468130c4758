"""Shared fixtures."""
from __future__ import annotations

import zlib

import numpy as np
import pytest


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A generator seeded from the test id, so every test sees the same data on every run."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
