"""Helpers shared by the tests (importable as ``support``: pytest puts tests/ on sys.path)."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


def shared_file(*parts: str) -> Path:
    """A file of ../shared, or skip the test with the reason when that folder is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (the read-only spec folder ../shared is not next to this checkout)")
    return path
