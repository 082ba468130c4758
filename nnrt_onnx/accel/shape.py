"""TRANSPOSE accelerated: a swap of the last two axes (a channel shuffle) as one compiled loop (numba; for float32
on AVX-512, 16 values interleaved in registers at a time), into the plan's array. Exact."""
from __future__ import annotations

import functools

import numpy as np

from ..kernels import specialiser
from . import numba_loops


def transpose(general, x, perm, out=None):
    """``x`` with its last two axes swapped in the compiled loop where ``perm`` says so; ``general`` (the reference
    kernel) otherwise."""
    x, axes = np.asarray(x), np.asarray(perm).reshape(-1)
    if x.ndim >= 3 and axes.dtype.kind in "iu" and axes.tolist() == list(range(x.ndim - 2)) + [x.ndim - 1,
                                                                                                x.ndim - 2]:
        swapped = numba_loops.swap_last_axes(x, out)
        if swapped is not None:
            return swapped
    return general(x, perm, out=out)


@specialiser("OH_NN_OPS_TRANSPOSE")
def specialise_transpose(op, general, inputs, arguments, addends):
    return functools.partial(transpose, general)


__all__ = ["transpose"]
