"""Fixtures of the kernel tests."""
from __future__ import annotations

import zlib

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    """A generator seeded from the test's name (parametrize id included, file not): the shape, indexing, quantization
    and CAST tests' data (it shadows the suite's ``rng``, seeded from the whole node id)."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))
