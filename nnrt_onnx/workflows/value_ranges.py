"""``--val-range`` specs parsed (``NAME=LO,HI`` or ``LO,HI``): without numpy, so that a sweep's own process, which
parses them before its fork server starts, imports none (``cli.py check``)."""
from __future__ import annotations

import math
from typing import Sequence

from ..errors import CommandLineError


def parse_value_ranges(specs: Sequence[str]) -> dict[str | None, tuple[float, float]]:
    """``NAME=LO,HI`` or a bare ``LO,HI`` (every input) specs of ``--val-range``; LO < HI, both finite."""
    ranges: dict[str | None, tuple[float, float]] = {}
    for spec in specs:
        name, sep, values = spec.rpartition("=")
        parts = values.split(",")
        try:
            if len(parts) != 2:
                raise ValueError
            low, high = float(parts[0]), float(parts[1])
        except ValueError:
            raise CommandLineError(f"--val-range {spec}: expected NAME=LO,HI or LO,HI (two numbers)") from None
        if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
            raise CommandLineError(f"--val-range {spec}: LO must be below HI, both finite")
        if sep and not name:
            raise CommandLineError(f"--val-range {spec}: expected NAME=LO,HI or LO,HI")
        if (name if sep else None) in ranges:
            raise CommandLineError(f"--val-range {spec}: {'input ' + repr(name) if sep else 'every input'} has a "
                                   f"range already")
        ranges[name if sep else None] = (low, high)
    return ranges


__all__ = ["parse_value_ranges"]
