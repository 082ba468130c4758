"""UNSTACK and STACK of static shapes without the reference's checks per call (exact copies), and TRANSPOSE
accelerated: a swap of the last two axes (a channel shuffle) as one compiled loop (numba; for float32
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


__all__ = ["transpose"]  # (and the specialisers of TRANSPOSE, UNSTACK and STACK)


def _unstacked(general, shape, axis, x, **kwargs):
    """UNSTACK of a static shape: one contiguous copy with the axis first, its rows as the outputs (the
    reference's values: it copies each slice); ``general`` for inputs that are not as planned."""
    if type(x) is not np.ndarray or x.shape != shape:
        return general(x)
    return tuple(np.ascontiguousarray(np.moveaxis(x, axis, 0)))


@specialiser("OH_NN_OPS_UNSTACK")
def specialise_unstack(op, general, inputs, arguments, addends):
    """:func:`_unstacked` where the input's shape is static and the axis an integer within it; None otherwise."""
    x, axis = inputs[0], arguments.get("axis")
    if x.shape is None or not x.shape or not isinstance(axis, (int, np.integer)) or not -len(x.shape) <= axis < len(
            x.shape) or x.shape[int(axis)] < 1:
        return None
    return functools.partial(_unstacked, general, tuple(x.shape), int(axis) % len(x.shape))


def _stacked(general, shapes, dtype, out_shape, places, *arrays, **kwargs):
    """STACK of static shapes of one dtype: each input copied into its place of the output (numpy's own stack
    costs ~2.5 us of Python for two small arrays; these copies ~0.7); ``general`` for inputs that are not as
    planned."""
    if len(arrays) != len(shapes) or any(type(a) is not np.ndarray or a.shape != s or a.dtype != dtype
                                         for a, s in zip(arrays, shapes)):
        return general(*arrays)
    out = np.empty(out_shape, dtype)
    for place, a in zip(places, arrays):
        out[place] = a
    return out


@specialiser("OH_NN_OPS_STACK")
def specialise_stack(op, general, inputs, arguments, addends):
    """:func:`_stacked` where every input has one static shape and dtype and the axis is an integer within the
    output's rank; None otherwise."""
    shapes, dtypes, axis = [i.shape for i in inputs], {i.dtype for i in inputs}, arguments.get("axis")
    if (not inputs or any(s is None for s in shapes) or len(set(shapes)) != 1 or len(dtypes) != 1
            or not isinstance(axis, (int, np.integer)) or not -len(shapes[0]) - 1 <= axis <= len(shapes[0])):
        return None
    axis = int(axis) % (len(shapes[0]) + 1)
    shape = tuple(shapes[0])
    out_shape = shape[:axis] + (len(inputs),) + shape[axis:]
    places = tuple((slice(None),) * axis + (i,) for i in range(len(inputs)))
    return functools.partial(_stacked, general, tuple(tuple(s) for s in shapes), dtypes.pop(), out_shape, places)
