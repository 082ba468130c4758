"""What an output holds: min/max/mean/std over its finite elements, NaN and Inf counts, and whether it is constant
(shown by ``nnrt-onnx check`` and ``run``).

A float output is *constant* when it has at least two elements, all finite, and its spread ``max - min`` is at
most ``2**-16`` of its largest magnitude (about 256 float32 ulps: what rounding alone leaves of an output that
exact arithmetic makes constant, e.g. a classifier whose placeholder weights are all equal). Agreement on such an
output says little about the conversion: ``check`` warns, and asks the float64 referee how fragile it is.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

CONSTANT_SPREAD = 2.0 ** -16


@dataclass(frozen=True)
class TensorStats:
    """Statistics of one tensor; min/max/mean/std over the finite elements (None when there are none)."""

    size: int
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    nan: int
    inf: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tensor_stats(array) -> TensorStats:
    a = np.asarray(array)
    if a.dtype.kind not in "fiub" or a.size == 0:
        return TensorStats(int(a.size), None, None, None, None, 0, 0)
    values = a.reshape(-1).astype(np.float64)
    nan = int(np.count_nonzero(np.isnan(values))) if a.dtype.kind == "f" else 0
    inf = int(np.count_nonzero(np.isinf(values))) if a.dtype.kind == "f" else 0
    finite = values[np.isfinite(values)] if nan or inf else values
    if not finite.size:
        return TensorStats(int(a.size), None, None, None, None, nan, inf)
    with np.errstate(over="ignore"):
        mean = float(finite.mean())
        std = float(finite.std())
    return TensorStats(int(a.size), float(finite.min()), float(finite.max()), mean if math.isfinite(mean) else None,
                       std if math.isfinite(std) else None, nan, inf)


def is_constant(array) -> bool:
    """Whether a float tensor is constant (see the module doc); other dtypes: never."""
    a = np.asarray(array)
    if a.dtype.kind != "f" or a.size < 2:
        return False
    values = a.reshape(-1).astype(np.float64)
    if not np.isfinite(values).all():
        return False
    low, high = float(values.min()), float(values.max())
    return high - low <= CONSTANT_SPREAD * max(abs(low), abs(high))


__all__ = ["CONSTANT_SPREAD", "TensorStats", "is_constant", "tensor_stats"]
