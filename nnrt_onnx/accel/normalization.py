"""SOFTMAX, LAYER_NORM and BATCH_NORM accelerated: compiled row loops (numba; softmax's in AVX-512 vectors for
float32) and batch norm's one compiled pass with the plan's fused MUL/ADD vectors and activation (``post``).
Softmax and layer norm sum in float64 partial sums: within a few float32 ulps of the reference kernels
(``kernels.normalization``); batch norm's pass is the reference's operations in order (``accel.contract``)."""
from __future__ import annotations

import functools
from math import prod

import numpy as np

from ..kernels import specialiser
from ..kernels.normalization import batch_norm as reference_batch_norm
from ..kernels.normalization import batch_norm_affine
from . import numba_loops

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_BN_BLOCK_BYTES = 1 << 17


def _last_axis(axis, rank: int) -> bool:
    value = np.asarray(axis).reshape(-1)
    if value.size > 1 or rank == 0:
        return False
    a = -1 if value.size == 0 else int(value[0])  # (an omitted axis: the last, as the kernel reads it)
    return a in (-1, rank - 1)


def softmax(general, x, *, axis):
    """Softmax over the last axis of float32/float64 rows of up to 256 in the compiled row loops; ``general`` (the
    reference kernel with its keywords) otherwise."""
    x = np.asarray(x)
    if x.dtype in _FLOATS and _last_axis(axis, x.ndim):
        fast = numba_loops.softmax_last_axis(x)
        if fast is not None:
            return fast
    return general(x)


def layer_norm(general, x, gamma, beta, *, begin_norm_axis, epsilon, begin_param_axis):
    """Layer norm of float32/float64 rows (the normalised axes, gamma and beta exactly of their shape and of the
    input's dtype kind) in the compiled row loop; ``general`` otherwise (and for every error)."""
    x, g, b = np.asarray(x), np.asarray(gamma), np.asarray(beta)
    try:
        bna, bpa = int(np.asarray(begin_norm_axis).reshape(-1)[0]), int(np.asarray(begin_param_axis).reshape(-1)[0])
    except (IndexError, TypeError, ValueError):
        return general(x, g, b)
    rank = x.ndim
    bpa = bpa + rank if bpa < 0 else bpa
    if (x.dtype in _FLOATS and 1 <= bna < rank and bpa == bna and x.size and g.dtype.kind == "f"
            and b.dtype.kind == "f" and g.shape == x.shape[bna:] and b.shape == x.shape[bna:]):
        fast = numba_loops.layer_norm_rows(x.reshape(-1, prod(x.shape[bna:])), g, b, epsilon)
        if fast is not None:
            return fast.reshape(x.shape)
    return general(x, g, b)


def batch_norm(input, scale, offset, mean, variance, *, epsilon, activation=0, out=None, post=()):
    """``kernels.normalization.batch_norm`` with the plan's fusions: ``post`` (("mul" | "add", [C] vector) pairs)
    and ``activation`` (0, 1 RELU, 2 RELU6) after the affine map, the same float operations in the same order --
    one compiled pass per row, else numpy's passes over cache-sized row blocks of ``out``."""
    x = np.asarray(input)
    if x.dtype not in _FLOATS or x.ndim < 1 or x.size == 0 or x.shape[-1] == 0:
        if post or activation:
            raise ValueError("BATCH_NORM: post operations need float32/float64 data")  # (the fusion guards this)
        return reference_batch_norm(x, scale, offset, mean, variance, epsilon=epsilon, out=out)
    c = x.shape[-1]
    inv, shift = batch_norm_affine("BATCH_NORM", scale, offset, mean, variance, c, x.dtype, epsilon)
    if out is None or out.shape != x.shape or out.dtype != x.dtype or not out.flags.c_contiguous:
        out = np.empty(x.shape, x.dtype)
    rows_in, rows_out = x.reshape(-1, c), out.reshape(-1, c)
    if numba_loops.channel_affine(rows_in, inv, shift, post, activation, rows_out):
        return out
    post = tuple(({"mul": np.multiply, "add": np.add}[name], vector) for name, vector in post)
    step = max(1, _BN_BLOCK_BYTES // (c * x.dtype.itemsize))
    zero, six = x.dtype.type(0), x.dtype.type(6)
    for r0 in range(0, rows_in.shape[0], step):  # one block through every operation while it is in cache
        block = rows_out[r0:r0 + step]
        np.multiply(rows_in[r0:r0 + step], inv, out=block)
        np.add(block, shift, out=block)
        for ufunc, vector in post:
            ufunc(block, vector, out=block)
        if activation == 1:
            np.maximum(block, zero, out=block)
        elif activation == 2:
            np.clip(block, zero, six, out=block)
    return out


def _rows_softmax(general, rank, x):
    """A softmax the plan knows is over the last of ``rank`` axes of float32/float64 data: the row loops' call."""
    fast = numba_loops.softmax_last_axis(x) if x.dtype in _FLOATS and x.ndim == rank else None
    return general(x) if fast is None else fast


def _planned_softmax(general, shape, rows, shift, normalise, x):
    """A float32 softmax over the last axis of a static shape (``rows`` x its last dim): the AVX-512 row loops of
    :func:`numba_loops.softmax_last_axis` called directly (their Python around them costs more than a small
    softmax); ``general`` for inputs that are not as planned."""
    if x.shape != shape or x.dtype != np.float32 or not x.flags.c_contiguous:
        return general(x)
    out = np.empty(rows, np.float32)
    shift(x.reshape(rows), out)
    np.exp(out, out=out)
    normalise(out)
    return out.reshape(shape)


@specialiser("OH_NN_OPS_SOFTMAX")
def specialise_softmax(op, general, inputs, arguments, addends):
    """The row loops where the plan knows the axis is the last and the data float32/float64 (decided once, not per
    call: for a static float32 shape, the loops themselves); :func:`softmax` where the rank is not known; None
    otherwise."""
    x = inputs[0]
    if x.dtype not in _FLOATS:
        return None
    rank = None if x.shape is None else len(x.shape)
    if rank is None:
        return functools.partial(softmax, general, **arguments)
    if not _last_axis(arguments.get("axis"), rank):
        return None
    loops = numba_loops.softmax_row_loops(x.shape, x.dtype) if x.shape is not None else None
    if loops is not None:
        return functools.partial(_planned_softmax, general, tuple(x.shape), (prod(x.shape[:-1]), x.shape[-1]),
                                 *loops)
    return functools.partial(_rows_softmax, general, rank)


def _planned_layer_norm(general, shape, rows, gamma, beta, epsilon, loop, x, g, b):
    """Layer norm of a static shape with constant gamma and beta: the compiled row loop called directly;
    ``general`` for inputs that are not as planned."""
    if x.shape != shape or x.dtype != gamma.dtype or not x.flags.c_contiguous:
        return general(x, g, b)
    return loop(x.reshape(rows), gamma, beta, epsilon, np.empty(rows, x.dtype)).reshape(shape)


@specialiser("OH_NN_OPS_LAYER_NORM")
def specialise_layer_norm(op, general, inputs, arguments, addends):
    """For a static shape with constant gamma and beta of the normalised axes (the usual transformer layer norm):
    the compiled row loop, its operands made once; else :func:`layer_norm` for float32/float64 data; None
    otherwise."""
    x, g, b = inputs[:3] if len(inputs) >= 3 else (inputs[0], None, None)
    if x.dtype not in _FLOATS:
        return None
    try:
        bna = int(np.asarray(arguments["begin_norm_axis"]).reshape(-1)[0])
        bpa = int(np.asarray(arguments["begin_param_axis"]).reshape(-1)[0])
    except (KeyError, IndexError, TypeError, ValueError):
        bna = bpa = None
    loop = numba_loops.layer_norm_loop(x.dtype)
    if (loop is not None and x.shape is not None and g is not None and g.value is not None and b.value is not None
            and bna is not None and 1 <= bna < len(x.shape) and (bpa + len(x.shape) if bpa < 0 else bpa) == bna
            and g.value.shape == tuple(x.shape[bna:]) and b.value.shape == tuple(x.shape[bna:])
            and g.value.dtype.kind == "f" and b.value.dtype.kind == "f" and prod(x.shape)):
        rows = (prod(x.shape[:bna]), prod(x.shape[bna:]))
        gamma = np.ascontiguousarray(g.value, x.dtype).reshape(-1)
        beta = np.ascontiguousarray(b.value, x.dtype).reshape(-1)
        return functools.partial(_planned_layer_norm, functools.partial(layer_norm, general, **arguments),
                                 tuple(x.shape), rows, gamma, beta, x.dtype.type(arguments["epsilon"]), loop)
    return functools.partial(layer_norm, general, **arguments)


@specialiser("OH_NN_OPS_BATCH_NORM")
def specialise_batch_norm(op, general, inputs, arguments, addends):
    """A fused step's ``general`` already is :func:`batch_norm`; a plain one runs it too (its one compiled pass)."""
    if "post" in arguments or "activation" in arguments:
        return general
    return functools.partial(batch_norm, **arguments)


ACCELERATED = {"BATCH_NORM": batch_norm}

__all__ = ["ACCELERATED", "batch_norm", "layer_norm", "softmax"]
