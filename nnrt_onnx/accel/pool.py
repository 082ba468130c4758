"""MAX_POOL and AVG_POOL accelerated: one compiled loop over the output (numba; 2x2 and 3x3 float32 windows in
AVX-512 vectors), bound to a plan step where its geometry is known (``runners.pooling``). The same values and
signs of zero as the reference kernel (``kernels.pool``; ``accel.contract``)."""
from __future__ import annotations

import functools

import numpy as np

from ..errors import NNRtError
from ..kernels import specialiser
from ..kernels.pool import first_tap_full, pool_geometry
from . import avx512, numba_loops, runners

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def pool(general, op: str, x, *, kernel_size, stride, pad_mode, pad_list, round_mode, global_pool, out=None):
    """Pooling of a float32/float64 NHWC ``x`` in the compiled loop; ``general`` (the reference kernel with its
    keywords) for everything else (global pooling, other dtypes, no numba, and every error)."""
    x = np.asarray(x)
    if x.dtype not in _FLOATS or x.ndim != 4 or bool(global_pool) or not x.size:
        return general(x, out=out)
    n, h, w, c = x.shape
    try:
        (k_h, k_w), (s_h, s_w), (oh, ow), (pt, _, pl, _) = pool_geometry(op, h, w, kernel_size, stride, pad_mode,
                                                                          pad_list, round_mode)
    except NNRtError:
        return general(x, out=out)  # it raises its error
    start_at_zero = not first_tap_full(oh, ow, h, w, k_h, k_w, s_h, s_w, pt, pl)
    fast = numba_loops.pool(x, "max" if op == "MAX_POOL" else "avg", (k_h, k_w), (s_h, s_w), (pt, pl), (oh, ow),
                            start_at_zero, out)
    return general(x, out=out) if fast is None else fast


@specialiser("OH_NN_OPS_AVG_POOL", "OH_NN_OPS_MAX_POOL")
def specialise_pool(op, general, inputs, arguments, addends):
    """A plan step's runner: a float32 2x2 or 3x3 pooling in AVX-512 vectors with its geometry decided once
    (``runners.pooling``, calling :func:`pool` for inputs not as planned), else :func:`pool` (per call)."""
    fast = functools.partial(pool, general, op, **arguments)
    return _bound_runner(op, fast, inputs, arguments) or fast


def _bound_runner(op, general, inputs, arguments):
    shape = inputs[0].shape
    if inputs[0].dtype != np.float32 or shape is None or len(shape) != 4 or bool(arguments["global_pool"]):
        return None
    n, h, w, c = shape
    try:
        (k_h, k_w), (s_h, s_w), (oh, ow), (pt, _, pl, _) = pool_geometry(
            op, h, w, arguments["kernel_size"], arguments["stride"], arguments["pad_mode"], arguments["pad_list"],
            arguments["round_mode"])
    except NNRtError:
        return None  # the reference kernel raises its error in the run
    vectors = avx512.compiled("pool_vectors", "pool") if numba_loops.enabled() else None
    if vectors is None or (k_h, k_w) not in ((2, 2), (3, 3)) or min(oh, ow, h, w, c) <= 0:
        return None
    start_at_zero = not first_tap_full(oh, ow, h, w, k_h, k_w, s_h, s_w, pt, pl)
    return runners.pooling(general, shape, (n, oh, ow, c), vectors,
                           (op == "MAX_POOL", k_h, k_w, s_h, s_w, pt, pl, start_at_zero))


__all__ = ["pool"]
