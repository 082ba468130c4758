"""MATMUL accelerated: rows by a constant 2-D matrix with its finish -- the plan's fused bias ADD, MUL/ADD by
per-column vectors, residual addend (``post``) and the fused activation -- applied by the register tiles as they
store the product (else BLAS and the finish pass), and the specialiser binding such a plan step to a runner
(``runners.rows_product``). Within float32 rounding of the reference (``kernels.linear.matmul`` and the ADD/MUL
steps; ``accel.contract``)."""
from __future__ import annotations

import functools

import numpy as np

from ..enums import OH_NN_OperationType
from ..kernels import packed, specialiser
from ..kernels.linear import matmul as reference_matmul
from ..kernels.linear import matmul_dims
from . import gemm, runners, tiles
from .finish import Finish


def matmul(input1: np.ndarray, input2: np.ndarray, *, transpose_a: bool, transpose_b: bool, activation: int = 0,
           out: np.ndarray | None = None, post=()) -> np.ndarray:
    """``kernels.linear.matmul`` with ``post`` (("add" | "mul", [N] vector) and ("addend", array of the output's
    shape) pairs, applied in order before the activation): float32 products of rows by a 2-D matrix finished as
    they are stored (:func:`_finished_rows_product`), else the reference product and the finish after it."""
    a, b = np.asarray(input1), np.asarray(input2)
    if post or (out is not None and activation):
        out_shape = matmul_dims("MATMUL", a.shape, b.shape, transpose_a, transpose_b)
        if activation in (0, 1, 2):
            finished = _finished_rows_product(a, b, transpose_a, transpose_b, out_shape, activation, out, post)
            if finished is not None:
                return finished
    if not post:
        return reference_matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b, activation=activation,
                                out=out)
    result = reference_matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    Finish(None, post, activation)(result)
    return result


def _matrix_operand(b: np.ndarray) -> np.ndarray:
    """A 2-D right operand as the register tiles read it (``tiles.padded``; made once for a model's constants)."""
    return packed(b, "matmul", lambda m: tiles.padded(np.ascontiguousarray(m)))


def _finished_rows_product(a, b, transpose_a, transpose_b, out_shape, activation, out, post):
    """:func:`matmul` of float32 rows ``a`` [..., K] by a 2-D ``b`` [K, N] with its finish (``post``, then the
    activation) into ``out`` (or a new array): the rows' product finished as the tiles store it where they take
    it, else numpy's product and the finish pass; None for other operands (the caller's path)."""
    if (transpose_a or transpose_b or a.dtype != np.float32 or b.dtype != np.float32 or b.ndim != 2
            or a.ndim < 2 or out_shape is None):
        return None
    if any(name not in ("add", "mul", "addend") for name, _ in post):
        return None
    k, n = b.shape
    rows = np.ascontiguousarray(a).reshape(-1, k)
    if out is None or out.shape != tuple(out_shape) or out.dtype != np.float32 or not out.flags.c_contiguous:
        out = np.empty(out_shape, np.float32)
    target = out.reshape(-1, n)
    finish = Finish(None, post, activation)
    matrix = _matrix_operand(b)
    if not gemm.matmul_finished(rows, matrix, target, finish, lambda t: t.reshape(-1, n)):
        gemm.matmul_into(rows, matrix, target)
        finish(out)
    return out


@specialiser("OH_NN_OPS_MATMUL")
def specialise_matmul(op, general, inputs, arguments, addends):
    """A plan step's runner: a finished float32 MATMUL of rows by a constant 2-D matrix where
    :func:`_finished_rows_product` would take the register tiles (``runners.rows_product``); else a fused step's
    ``general`` (this module's :func:`matmul`), this module's :func:`matmul` for a product with a fused activation,
    None for the others (the reference kernel is numpy's product already)."""
    bound = _bound_runner(general, inputs, arguments, addends)
    if bound is not None:
        return bound
    if "post" in arguments:
        return general
    if arguments.get("activation"):
        return functools.partial(matmul, **arguments)
    return None


def _bound_runner(general, inputs, arguments, addends):
    x_in, b_in = inputs[:2]
    b, post, activation = b_in.value, tuple(arguments.get("post", ())), arguments.get("activation", 0)
    if (b is None or b.ndim != 2 or b.dtype != np.float32 or x_in.shape is None or len(x_in.shape) < 2
            or x_in.dtype != np.float32 or arguments.get("transpose_a") or arguments.get("transpose_b")
            or not post or activation not in (0, 1, 2) or sum(name == "addend" for name, _ in post) != addends
            or any(name not in ("add", "mul", "addend") for name, _ in post)):
        return None
    k, n = b.shape
    if x_in.shape[-1] != k:
        return None
    out_shape = tuple(x_in.shape[:-1]) + (n,)
    rows = int(np.prod(x_in.shape[:-1]))
    if not gemm.uses_tiles(rows, k, n, np.float32, finished=True):
        return functools.partial(_small_rows_product, general, tuple(x_in.shape), out_shape, b, post, activation)
    addend = np.zeros(out_shape, np.float32) if addends else None  # (a stand-in: untouched pages, never read)
    finish = Finish(None, tuple(("addend", addend) if name == "addend" else (name, v) for name, v in post),
                    activation)
    tile_finish = finish.tile_finish(n, lambda t: t.reshape(-1, n))
    product = None if tile_finish is None else tiles.bound_product(_matrix_operand(b), tile_finish)
    return None if product is None else runners.rows_product(general, x_in.shape, out_shape, product, bool(addends))


def _small_rows_product(general, x_shape, out_shape, matrix, post, activation, x, weight, *addends, out=None):
    """A fused linear layer too small for the register tiles (a transformer's [16, 64] x [64, 64]: BLAS takes
    ~3 us, the general kernel's finish machinery ~20 more): numpy's product (the reference kernel's) and the fused
    steps' ufuncs in place, in their order -- the unfused steps' values bit for bit. The general kernel for inputs
    that are not as planned."""
    if (x.shape != x_shape or x.dtype != np.float32 or weight is not matrix
            or not all(a.shape == out_shape and a.dtype == np.float32 for a in addends)):
        return general(x, weight, *addends, out=out)
    if out is None or out.shape != out_shape or out.dtype != np.float32:
        out = np.matmul(x, matrix)
    else:
        np.matmul(x, matrix, out=out)
    for name, value in post:
        if name == "mul":
            np.multiply(out, value, out=out)
        else:
            np.add(out, addends[value] if name == "addend" else value, out=out)
    if activation == 1:
        np.maximum(out, np.float32(0), out=out)
    elif activation == 2:
        np.minimum(np.maximum(out, np.float32(0), out=out), np.float32(6), out=out)
    return out


def _bound_full_connection(general, x_shape, rows, out_shape, weight, matrix, bias, x, w, *b):
    """A float32 FULL_CONNECTION of a static input by a constant weight (and constant bias): the reference's
    product with its transposed weight made once, and its bias added -- its values, without its checks per call;
    ``general`` for anything not as planned."""
    if (type(x) is not np.ndarray or x.shape != x_shape or x.dtype != np.float32 or w is not weight
            or (b[0] if b else None) is not bias[0]):
        return general(x, w, *b)
    out = np.matmul(x.reshape(rows), matrix)
    if bias[1] is not None:
        out = out + bias[1]
    return out.reshape(out_shape)


@specialiser("OH_NN_OPS_FULL_CONNECTION")
def specialise_full_connection(op, general, inputs, arguments, addends):
    """:func:`_bound_full_connection` for a static float32 input, a constant float32 weight and bias; None
    otherwise."""
    from ..kernels import infer_output_shapes

    x, w = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) > 2 else None
    if (x.shape is None or x.dtype != np.float32 or w.value is None or w.value.dtype != np.float32
            or w.value.ndim != 2 or (b is not None and (b.value is None or b.value.dtype != np.float32))):
        return None
    plain = {k: v for k, v in arguments.items() if k != "ctx"}
    try:
        (out_shape,) = infer_output_shapes(OH_NN_OperationType.OH_NN_OPS_FULL_CONNECTION,
                                           [i.shape for i in inputs], [i.value for i in inputs], plain,
                                           output_count=1)
    except Exception:  # the reference raises its error in the run
        return None
    n_out, k = w.value.shape
    if out_shape is None or any(d < 0 for d in out_shape) or out_shape[-1] != n_out \
            or (b is not None and b.value.size != n_out) or np.prod(x.shape) % k:
        return None
    rows = (int(np.prod(out_shape[:-1])), k) if plain.get("use_axis") else (-1, k)
    matrix = np.ascontiguousarray(w.value.T)
    bias = (None, None) if b is None else (b.value, b.value.reshape(n_out))
    return functools.partial(_bound_full_connection, general, tuple(x.shape), rows, tuple(out_shape), w.value,
                             matrix, bias)


ACCELERATED = {"MATMUL": matmul}

__all__ = ["ACCELERATED", "matmul"]
