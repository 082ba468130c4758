"""TRANSPOSE accelerated: a swap of the last two axes (a channel shuffle) as one compiled loop (numba; for float32
on AVX-512, 16 values interleaved in registers at a time), into the plan's array. Exact."""
from __future__ import annotations

import functools
from math import prod

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


def _swapped(general, rank, x, perm, out=None):
    """A transpose the plan knows swaps the last two of ``rank`` axes: the compiled loop's call, else ``general``."""
    swapped = numba_loops.swap_last_axes(x, out) if x.ndim == rank else None
    return general(x, perm, out=out) if swapped is None else swapped


@specialiser("OH_NN_OPS_TRANSPOSE")
def specialise_transpose(op, general, inputs, arguments, addends):
    """For a constant permutation, decided once: the compiled swap where it swaps the last two axes, else None (the
    reference kernel); :func:`transpose` (per call) for a permutation known only at run time."""
    perm = inputs[1].value if len(inputs) > 1 else None
    if perm is None:
        return functools.partial(transpose, general)
    axes = np.asarray(perm).reshape(-1)
    rank = len(axes)
    if rank >= 3 and axes.dtype.kind in "iu" and axes.tolist() == list(range(rank - 2)) + [rank - 1, rank - 2]:
        return functools.partial(_swapped, general, rank)
    x = inputs[0]
    if (x.shape is None or len(x.shape) != rank or axes.dtype.kind not in "iu"
            or sorted(int(a) % max(rank, 1) for a in axes) != list(range(rank))):
        return None
    order = tuple(int(a) % rank for a in axes)
    out_shape = tuple(x.shape[a] for a in order)
    if rank >= 2 and out_shape[-1] <= _NARROW_LAST and prod(out_shape) >= 4096:
        return None  # (the reference's own path for a short last axis read across the input)
    return functools.partial(_permuted, general, tuple(x.shape), order, out_shape)


_NARROW_LAST = 8  # (kernels.shape.transpose's rule)


def _permuted(general, shape, order, out_shape, x, perm, out=None):
    """A constant permutation of a static shape: the reference's copy of the transposed view, without its checks
    per call; ``general`` for inputs that are not as planned."""
    if type(x) is not np.ndarray or x.shape != shape:
        return general(x, perm, out=out)
    view = x.transpose(order)
    if out is not None and out.shape == out_shape and out.dtype == x.dtype and out.flags.c_contiguous:
        np.copyto(out, view)
        return out
    return np.ascontiguousarray(view)


__all__ = ["transpose"]
