"""Where numba may cache compiled loops on disk (shared by :mod:`._accel` and :mod:`._tile_kernels`)."""
from __future__ import annotations

import os


def cache_ok() -> bool:
    """Cache compiled code next to the kernels when that is writable (else compile once per process)."""
    return os.access(os.path.dirname(os.path.abspath(__file__)), os.W_OK) or bool(os.environ.get("NUMBA_CACHE_DIR"))
