"""What the fast paths may differ from the reference kernels by: one table, by op (the fused steps' ops included:
a fused step answers for the ops it absorbed, all of them elementwise and exact, so its op's row holds).

* ``EXACT``: the same values, NaN where the reference has NaN (the compiled loops make the reference's float
  operations in its order: depthwise convolution, pooling, ERF and the fused GELU, batch norm's pass, the channel
  shuffle, the activations, and every plan fusion given its kernel's product).
* ``Tolerance(rtol, atol)``: ``|fast - reference| <= atol * max|reference| + rtol * |reference|`` per element, NaN
  and inf where the reference has them: the paths that sum in another order -- a product's K terms in register tiles
  or BLAS blocks, Winograd's and kn2row's reordered sums, float64 partial sums in the softmax and layer-norm row
  loops -- and the recurrences compiled over time (LSTM, a recognised GRU: each step's product in another order and
  a rational tanh, through the sequence). The bounds are a few float32 epsilons (1.2e-7) times the terms' count,
  measured with margin on the differential tests (``tests/accel``); Winograd F(2x2, 3x3) is the loosest (its
  transforms add and subtract up to 16 inputs before the product). For an inf in its input Winograd is outside any
  tolerance: its transforms subtract inf from inf, so outputs where the direct sum gives +-inf come out NaN (a 3x3
  64 -> 64 layer with one inf input: 8 NaN and 6 inf pixels where the reference has 9 inf ones); the contract tests
  feed the tolerance paths finite data, NaN/inf only the EXACT ones."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Tolerance(NamedTuple):
    rtol: float
    atol: float  # times the largest magnitude of the reference tensor


EXACT = Tolerance(0.0, 0.0)
_GEMM = Tolerance(1e-5, 2e-5)  # a product's terms in another order (tiles, BLAS blocks, kn2row)
_WINOGRAD = Tolerance(1e-4, 2e-4)  # CONV2D may take Winograd F(2x2, 3x3)
_ROWS = Tolerance(2e-6, 1e-7)  # float64 partial sums of a row (softmax, layer norm)
# a recurrence compiled over time (the LSTM layer, a recognised GRU): the recurrent product in another order and
# libm's tanh/exp for numpy's SIMD ones, through every step of the sequence
_RECURRENCE = Tolerance(2e-5, 4e-5)

CONTRACT: dict[str, Tolerance] = {
    "CONV2D": _WINOGRAD,
    "DEPTHWISE_CONV2D_NATIVE": EXACT,
    "MATMUL": _GEMM,
    "AVG_POOL": EXACT,
    "MAX_POOL": EXACT,
    "SOFTMAX": _ROWS,
    "LAYER_NORM": _ROWS,
    "BATCH_NORM": EXACT,
    # every other op: EXACT (ERF and the fused GELU, whose step is its DIV's, among them)
    "LSTM": _RECURRENCE,
    "TRANSPOSE": EXACT,
    "CONCAT": EXACT,
}


def tolerance(op: str) -> Tolerance:
    """The contract of ``op`` (short name, e.g. "CONV2D"); EXACT for an op without fast paths."""
    return CONTRACT.get(op, EXACT)


def disagreement(op: str, fast: np.ndarray, reference: np.ndarray) -> str | None:
    """None when ``fast`` keeps the contract of ``op`` against ``reference``; else what is wrong."""
    fast, reference = np.asarray(fast), np.asarray(reference)
    if fast.shape != reference.shape or fast.dtype != reference.dtype:
        return f"shape/dtype {fast.shape} {fast.dtype} against the reference's {reference.shape} {reference.dtype}"
    if reference.dtype.kind not in "fc":
        bad = int(np.count_nonzero(fast != reference))
        return None if bad == 0 else f"{bad} of {reference.size} values differ"
    nan_f, nan_r = np.isnan(fast), np.isnan(reference)
    if not np.array_equal(nan_f, nan_r):
        return f"NaN at {int(np.count_nonzero(nan_f != nan_r))} positions where the reference differs"
    inf_r = np.isinf(reference)
    if not np.array_equal(fast[inf_r], reference[inf_r]) or np.isinf(fast[~inf_r]).any():
        return "inf where the reference differs"
    finite = ~(nan_r | inf_r)
    a, b = fast[finite].astype(np.float64), reference[finite].astype(np.float64)
    rtol, atol = tolerance(op)
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    excess = np.abs(a - b) - (atol * scale + rtol * np.abs(b))
    if b.size and excess.max() > 0:
        worst = int(np.argmax(excess))
        return (f"{int(np.count_nonzero(excess > 0))} of {b.size} values outside {op}'s contract (rtol {rtol}, "
                f"atol {atol} x {scale:.3g}); worst {a[worst]!r} against {b[worst]!r}")
    return None


__all__ = ["CONTRACT", "EXACT", "Tolerance", "disagreement", "tolerance"]
