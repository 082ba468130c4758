"""ERF accelerated (the reference's float64 rational evaluation in one compiled loop: bit-identical), and the
kernel of the fused exact GELU step (``fusions.erf_gelu``)."""
from __future__ import annotations

import functools

import numpy as np

from ..kernels import specialiser
from ..kernels.elementwise import erf as reference_erf
from . import numba_loops


def erf(general, x):
    """ERF of a float16/float32 array in the compiled loop; ``general`` (the reference kernel) otherwise."""
    x = np.asarray(x)
    fast = numba_loops.erf(x) if x.dtype in (np.float16, np.float32) else None
    return general(x) if fast is None else fast.astype(x.dtype, copy=False)


def erf_gelu(x, *, divisor, addend, factor):
    """``(x * (erf(x / divisor) + addend)) * factor`` on float32 with float32 scalars: the exported exact GELU (DIV,
    ERF, ADD, MUL, MUL) that ``fusions.erf_gelu`` makes one step. The compiled loop, or those steps' own operations
    in order (ERF by the reference kernel): bit-identical to the five steps either way."""
    fast = numba_loops.erf_gelu(x, divisor, addend, factor)
    if fast is not None:
        return fast
    return np.multiply(np.multiply(x, np.add(reference_erf(np.divide(x, divisor)), addend)), factor)


@specialiser("OH_NN_OPS_ERF")
def specialise_erf(op, general, inputs, arguments, addends):
    """:func:`erf` for float16/float32 data; None otherwise."""
    return functools.partial(erf, general) if inputs[0].dtype in (np.float16, np.float32) else None


__all__ = ["erf", "erf_gelu"]
