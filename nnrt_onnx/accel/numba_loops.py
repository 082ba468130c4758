"""Optional compiled loops (numba) for the kernels numpy cannot fuse, each with a pure-numpy path beside it: the
functions the accelerated kernels call, each compiling its loop on first use or loading it from the disk cache
(:mod:`.numba_cache`; the loops are in :mod:`.loops`, one module per job) and declining (None or False) where it
cannot run.

numba is a dependency (it pays 3-12x on depthwise convolution and 6x on average pooling, docs/performance.md), but
never a requirement: when it cannot be imported (a platform without wheels), or with the environment variable
``NNRT_ONNX_NUMBA=0``, every function here returns False and the kernel takes its numpy path. The compiled loops
use no fast-math (no FMA contraction, no reassociation), and numpy's error model: a float division is just the
division (numba's default checks each divisor for zero to raise ZeroDivisionError, which kept the ERF loop from
vectorising -- 5x slower -- and made LAYER_NORM raise where numpy gives NaN).

* :func:`depthwise` -- the depthwise convolution of ``depthwise.depthwise_core``: per output pixel, the taps in
  row-major order into a channel vector that stays in registers/L1, then the bias and the fused activation. The
  numpy path makes two passes over the whole output per tap (measured 3-12x slower, docs/performance.md).
  Bit-identical.
* :func:`depthwise_3x3` -- 3x3 kernels: one channel at a time through all nine taps (the sum in a register, the
  channel loop vectorised: 0.6-0.9x the general loop's time), reading the unpadded input (padded taps read +0.0,
  so no padded copy). The general loop's operations in the same order: bit-identical.
* :func:`erf_gelu` -- the exported exact GELU (Div, Erf, Add, Mul, Mul) that the plan fuses, in one loop.
  Bit-identical.
* :func:`erf` -- the reference ERF's evaluation element by element. Bit-identical.
* :func:`pool` -- max and average pooling, one loop over the output (the numpy path: one pass per kernel tap).
  Identical values and signs of zero.
* :func:`softmax_last_axis`, :func:`layer_norm_rows` -- row loops instead of five to nine numpy passes (numpy's
  SIMD exp kept: a compiled loop calling libm's exp was 2x slower); their sums accumulate in float64, so they
  agree with the numpy path to an ulp or two (well inside the kernel tolerances), not bit for bit.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import avx512 as _avx512

_LOCK = threading.Lock()
_COMPILED: dict[str, object] = {}
_DISABLED = object()


def enabled() -> bool:
    """numba is importable and not switched off (``NNRT_ONNX_NUMBA=0``)."""
    return _get("depthwise") is not None


def _get(name: str):
    if os.environ.get("NNRT_ONNX_NUMBA", "").strip() == "0":
        return None
    fn = _COMPILED.get(name)
    if fn is None:
        with _LOCK:
            fn = _COMPILED.get(name)
            if fn is None:
                fn = _COMPILED[name] = _build(name)
    return None if fn is _DISABLED else fn


# each loop: name -> (module of .loops, its function or tuple of functions); importing the module imports numba
_LOOPS = {"depthwise": ("depthwise", "depthwise_loop"), "depthwise3x3": ("depthwise", "depthwise_3x3"),
          "erf": ("elementwise", "erf_loop"), "gelu": ("elementwise", "gelu_loop"),
          "softmax": ("rows", "softmax_rows"), "layer_norm": ("rows", "layer_norm_rows"),
          "pool": ("pool", "pool_loop"), "kn2row": ("conv", "gather"),
          "winograd": ("conv", ("transform_in", "transform_out")), "im2col": ("conv", "im2col_rows"),
          "swap_last_axes": ("shuffle", "swap"),
          "channel_affine": ("finish", "affine_rows"), "finish_rows": ("finish", "finish_rows")}


def preload() -> None:
    """Import every module of :mod:`.loops` (declaring their loops: nothing compiles until called, or loads from the
    cache, see :func:`.numba_cache.load_cached`), where numba runs."""
    if not enabled():
        return
    from . import loops

    for module in pkgutil.iter_modules(loops.__path__, f"{loops.__name__}."):
        importlib.import_module(module.name)


def _build(name: str):
    try:
        import numba  # noqa: F401
    except ImportError:
        return _DISABLED
    module_name, attribute = _LOOPS[name]
    module = importlib.import_module(f"{__package__}.loops.{module_name}")
    if isinstance(attribute, tuple):
        return tuple(getattr(module, a) for a in attribute)
    return getattr(module, attribute)


def _post_arrays(post, c: int, dtype):
    """(vectors [P, C], kinds [P]: 0 multiply, 1 add, 2 add the addend) of ("mul" | "add", [C] vector) and
    ("addend", None) pairs."""
    vectors = np.zeros((len(post), c), dtype)
    kinds = np.empty(len(post), np.int64)
    for i, (name, vector) in enumerate(post):
        if name != "addend":
            vectors[i] = vector
        kinds[i] = {"mul": 0, "add": 1, "addend": 2}[name]
    return vectors, kinds


def finish_arrays(bias: np.ndarray | None, post, c: int, dtype) -> tuple:
    """The operands :func:`finish_rows` takes besides the rows: ``bias`` (a [C] vector, or None) and ``post`` --
    ("mul" | "add", [C] vector) pairs, and ("addend", None) for a residual -- as arrays of ``dtype``. Built once per
    kernel call, used for each of its blocks."""
    dtype = np.dtype(dtype)
    vectors, kinds = _post_arrays(post, c, dtype)
    has_bias = bias is not None
    return (np.ascontiguousarray(bias, dtype) if has_bias else np.zeros(1, dtype)), has_bias, vectors, kinds


def finish_rows(rows: np.ndarray, arrays: tuple, activation: int, addend: np.ndarray | None = None) -> bool:
    """In place on the float32/float64 ``rows`` [R, C] (C-contiguous, or rows of contiguous channels a stride apart:
    a channel slice): ``+ bias``, the ``post`` operations in order
    (an "addend" adds ``addend``, an [R, C] array, a residual's rows), then ``activation`` (0, 1 RELU, 2 RELU6),
    with bias and post as :func:`finish_arrays` built them for this dtype and C: one compiled pass, bit-identical
    to numpy's ufunc passes in the same order (a convolution's finish, 3x faster); False (rows untouched) without
    numba or for another layout or dtype."""
    dtype = rows.dtype
    if dtype not in (np.float32, np.float64) or rows.ndim != 2 or rows.strides[1] != rows.itemsize:
        return False
    if addend is not None and (addend.dtype != dtype or addend.shape != rows.shape or not addend.flags.c_contiguous):
        return False
    loop = _get("finish_rows")
    if loop is None:
        return False
    bias, has_bias, vectors, kinds = arrays
    count, c = rows.shape
    step = rows.strides[0] // rows.itemsize if count > 1 else c
    if rows.strides[0] % rows.itemsize or step < c:
        return False
    flat = as_strided(rows, ((count - 1) * step + c,), (rows.itemsize,)) if count else rows.reshape(-1)
    loop(flat, step, count, c, bias, has_bias, vectors, kinds, int(activation),
         np.zeros((1, 1), dtype) if addend is None else addend)
    return True


def channel_affine(rows: np.ndarray, scale: np.ndarray, shift: np.ndarray, post, activation: int,
                   out: np.ndarray) -> bool:
    """``out = activation(post(rows * scale + shift))`` for C-contiguous float32/float64 ``rows`` [R, C] and
    ``out``: ``post`` is a sequence of ("mul" | "add", [C] vector) pairs, ``activation`` 0 none, 1 RELU, 2 RELU6.
    One compiled pass, bit-identical to numpy's ufunc passes in the same order (batch norm's blocks); False (out
    untouched) without numba or for another layout or dtype."""
    dtype = rows.dtype
    if (dtype not in (np.float32, np.float64) or out.dtype != dtype or rows.ndim != 2 or out.shape != rows.shape
            or not rows.flags.c_contiguous or not out.flags.c_contiguous):
        return False
    loop = _get("channel_affine")
    if loop is None:
        return False
    vectors, kinds = _post_arrays(post, rows.shape[1], dtype)
    loop(rows, np.ascontiguousarray(scale, dtype), np.ascontiguousarray(shift, dtype), vectors, kinds, out,
         int(activation))
    return True


def kn2row_gather(z: np.ndarray, out: np.ndarray, top: int, left: int) -> bool:
    """The second half of a kn2row convolution: ``z`` [R, W, kH, kW, O] holds every input pixel's product with
    every tap's weights; ``out`` [OH, OW, O] gets, per output pixel, the sum of the taps' products that lie
    inside the input (``top``/``left``: z's row/column of output (0, 0)'s tap (0, 0), negative in the padding).
    False (out untouched) without numba or for another dtype or layout."""
    if (z.dtype not in (np.float32, np.float64) or out.dtype != z.dtype or z.ndim != 5 or out.ndim != 3
            or not z.flags.c_contiguous):
        return False
    runs = pixel_runs(out)
    loop = _get("kn2row") if runs is not None else None
    if loop is None:
        return False
    loop(z, runs[0], runs[1], out.shape[0], out.shape[1], int(top), int(left))
    return True


def pixel_runs(out: np.ndarray):
    """``out`` [..., C] -- C-contiguous, or a channel slice of a C-contiguous array (its pixels evenly strided: a
    concatenation the plan assembles in place) -- as (flat, step): the contiguous 1-D view from its first value to
    its last, in which pixel p's C values are ``flat[p * step: p * step + C]``; None for any other layout."""
    c = out.shape[-1]
    if out.flags.c_contiguous:
        return out.reshape(-1), c
    if not evenly_strided(out):
        return None
    step = out.strides[-2] // out.itemsize
    return as_strided(out, ((out.size // c - 1) * step + c,), (out.itemsize,)), step


def evenly_strided(out: np.ndarray) -> bool:
    """``out`` [..., C] (2-D or more, not empty) is C-contiguous or a channel slice of a C-contiguous array: unit
    channel stride, pixels a whole number of values >= C apart, every leading axis a whole number of pixels."""
    if out.flags.c_contiguous:
        return out.ndim >= 2
    if out.ndim < 2 or not out.size or out.strides[-1] != out.itemsize or out.strides[-2] % out.itemsize:
        return False
    if out.strides[-2] < out.shape[-1] * out.itemsize:
        return False
    return all(out.shape[axis] <= 1 or out.strides[axis] == out.shape[axis + 1] * out.strides[axis + 1]
               for axis in range(out.ndim - 2))


def winograd_transforms():
    """(transform_in, transform_out) of F(2x2, 3x3) as compiled loops with only adds and subtracts (the transform
    matrices' entries are 0 and +-1), or None without numba: ``transform_in(xp, v, r0, r1, tw, rows)`` writes
    V = B^T d B of tile rows r0..r1 of the padded float32 ``xp`` into the C-contiguous ``v`` [16, >= T C] (tile t's
    channels at t C of each plane); ``transform_out(m, flat, step, n, oh, ow, o, r0, r1, tw, rows, *finishing)``
    writes Y = A^T M A of ``m`` (laid out like ``v``, O per tile) into the pixels inside [OH, OW] of the [N, OH,
    OW, O] output whose pixel p is ``flat[p * step: p * step + O]`` (:func:`pixel_runs`), then finishes each
    output row as :func:`finish_rows` would where ``finishing`` (``_finish.Finish.row_operands``; else
    :data:`NO_ROW_FINISH`). ``rows``: float32 work arrays, [4, (2 tw + 2) C] and [8, tw O]."""
    return _get("winograd")


# transform_out's trailing arguments for "no finish"
NO_ROW_FINISH = (False, np.zeros(1, np.float32), False, np.zeros((0, 1), np.float32), np.zeros(0, np.int64), 0,
                 np.zeros((1, 1, 1, 1), np.float32), False)


_SWAP_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64))


def swap_last_axes(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray | None:
    """``x`` with its last two axes swapped, as a C-contiguous array (``out`` where it is one of the right shape and
    dtype, else a new one): one compiled loop reading ``x`` in order (a channel shuffle's [.., G, C/G] -> [.., C/G,
    G]: 1.4-2.3x faster than numpy's copy, whose inner loops there run along G; for float32 and G = 2, 4, 8 on
    AVX-512, 16 values interleaved in registers at a time, 0.45x that loop's time); None without numba, for
    another dtype, or fewer than 2 dims."""
    if x.ndim < 2 or x.dtype not in _SWAP_DTYPES or x.size == 0:
        return None
    loop = _get("swap_last_axes")
    if loop is None:
        return None
    a, b = x.shape[-2:]
    src = np.ascontiguousarray(x).reshape(-1, a, b)
    shape = x.shape[:-2] + (b, a)
    if out is None or out.shape != shape or out.dtype != x.dtype or not out.flags.c_contiguous:
        out = np.empty(shape, x.dtype)
    target = out.reshape(-1, b, a)
    if x.dtype == np.float32:
        vectors = _avx512.compiled("shuffle_vectors", "swap_last_axes")
        if vectors is not None and vectors(src, target):
            return out
    loop(src, target)
    return out


def erf_gelu(x: np.ndarray, divisor, addend, factor) -> np.ndarray | None:
    """``(x * (erf(x / divisor) + addend)) * factor`` for float32 ``x`` and float32 scalars (the exact-erf GELU
    as exported: Div, Erf, Add, Mul, Mul) in one compiled loop, with the ERF loop's float64 evaluation verbatim:
    bit-identical to the five steps; None without numba."""
    loop = _get("gelu") if x.dtype == np.float32 and x.size else None
    if loop is None:
        return None
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    loop(flat, out, np.float32(divisor), np.float32(addend), np.float32(factor))
    return out.reshape(x.shape)


def pool(x: np.ndarray, kind: str, kernel, strides, pads, out_size, start_at_zero: bool,
         out: np.ndarray | None = None) -> np.ndarray | None:
    """Max or average pooling of NHWC float32/float64 ``x`` (pads [top, left]; windows clipped to the input: padded
    cells neither win a max nor count in an average), one compiled loop over the output; None without numba.
    Max is exact, so identical to the numpy path (NaN by its rule, ``kernels.pool``); the average adds a window's
    cells in row-major order starting from the first (or from 0 when ``start_at_zero``, as the numpy path does when
    its first tap is clipped anywhere), then divides by the clipped count: also identical. ``out``: the array to
    write where it has the output's shape and dtype (any strides: a slice of a concatenation too), else a new one."""
    loop = _get("pool") if x.dtype in (np.float32, np.float64) and x.size else None
    if loop is None:
        return None
    shape = (x.shape[0], out_size[0], out_size[1], x.shape[3])
    if out is None or out.shape != shape or out.dtype != x.dtype or not out.flags.writeable:
        out = np.empty(shape, x.dtype)
    x = np.ascontiguousarray(x)
    geometry = (int(kernel[0]), int(kernel[1]), int(strides[0]), int(strides[1]), int(pads[0]), int(pads[1]))
    if x.dtype == np.float32:  # 2x2 and 3x3 windows in AVX-512 vectors: the same results, 0.17-0.7x the time
        vectors = _avx512.compiled("pool_vectors", "pool")
        if vectors is not None and vectors(x, out, kind == "max", *geometry, bool(start_at_zero)):
            return out
    fill = x.dtype.type(np.nan)  # (a window with no cell inside: no maximum, an average of nothing)
    return loop(x, out, *geometry, kind == "max", bool(start_at_zero), fill)


def im2col_rows(xp: np.ndarray, cols: np.ndarray, r0: int, r1: int, kernel, strides, d_h: int) -> bool:
    """im2col of output rows r0..r1 of one image: ``cols`` [(r1 - r0) * OW, kH * kW * C] gets, per output pixel,
    its window's kernel rows of the padded ``xp`` [Hp, Wp, C] (each kW * C contiguous values; kernel columns not
    dilated), in the weight's (kH, kW, C) order. One compiled copy loop -- 0.5-0.66x numpy's strided copy for the
    short runs of 3-channel stems and 16-32-channel layers, whose inner loops numpy runs one call each; False
    (cols untouched) without numba or for another dtype or layout."""
    if (xp.dtype not in (np.float32, np.float64) or cols.dtype != xp.dtype or xp.ndim != 3 or cols.ndim != 2
            or not xp.flags.c_contiguous or not cols.flags.c_contiguous):
        return False
    loop = _get("im2col")
    if loop is None:
        return False
    loop(xp, cols, int(r0), int(r1), int(kernel[0]), int(kernel[1]), int(strides[0]), int(strides[1]), int(d_h))
    return True


def erf(x: np.ndarray) -> np.ndarray | None:
    """The float32 erf of ``_common._erf_float32`` (the same float64 operations in the same order: bit-identical)
    for a float16/float32 array; None without numba."""
    loop = _get("erf") if x.dtype in (np.float16, np.float32) else None
    if loop is None:
        return None
    flat = np.ascontiguousarray(x, np.float32).reshape(-1)  # float16 is exact in float32 (numba has no float16)
    return loop(flat, np.empty(flat.shape, np.float32)).reshape(x.shape)


_SOFTMAX_MAX_ROW = 256  # longer rows: numpy's vectorised reductions win (measured 0.65x at 1000)


def softmax_last_axis(x: np.ndarray) -> np.ndarray | None:
    """softmax over the last axis of a float32/float64 array: one compiled loop per row for the max and the
    shift, numpy's exp in place, one compiled loop per row for the sum (accumulated in float64) and the division;
    None without numba. Within an ulp or two of the numpy path (another summation order), not bit-identical."""
    short_rows = x.ndim >= 1 and 0 < x.shape[-1] <= _SOFTMAX_MAX_ROW and x.size
    loop = _get("softmax") if x.dtype in (np.float32, np.float64) and short_rows else None
    if loop is None:
        return None
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    if rows.dtype == np.float32:  # the same loops with their lanes in AVX-512 registers: bit-identical, 0.5x
        shift = _avx512.compiled("softmax_vectors", "shift_rows")
        normalise = _avx512.compiled("softmax_vectors", "normalise_rows")
        if shift is not None and normalise is not None:
            out = np.empty_like(rows)
            shift(rows, out)
            np.exp(out, out=out)
            normalise(out)
            return out.reshape(x.shape)
    return loop(rows, np.empty_like(rows)).reshape(x.shape)


def softmax_row_loops(shape, dtype):
    """(shift, normalise): the AVX-512 row loops of :func:`softmax_last_axis` for float32 rows of ``shape``'s last
    dim (the same calls it makes), or None where it would not take them."""
    if dtype != np.float32 or not shape or not 0 < shape[-1] <= _SOFTMAX_MAX_ROW or _get("softmax") is None:
        return None
    shift = _avx512.compiled("softmax_vectors", "shift_rows")
    normalise = _avx512.compiled("softmax_vectors", "normalise_rows")
    return None if shift is None or normalise is None else (shift, normalise)


def layer_norm_loop(dtype):
    """The compiled row loop of :func:`layer_norm_rows` for float32/float64 (called as it calls it), or None."""
    return _get("layer_norm") if dtype in (np.float32, np.float64) else None


def layer_norm_rows(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, epsilon: float) -> np.ndarray | None:
    """Layer norm of each row of the 2-D float32/float64 ``x`` (mean and variance accumulated in float64, then the
    numpy path's float operations: centre, divide by sqrt(var + eps), scale, shift); None without numba."""
    loop = _get("layer_norm") if x.dtype in (np.float32, np.float64) and x.ndim == 2 and x.shape[1] else None
    if loop is None:
        return None
    dtype = x.dtype
    return loop(np.ascontiguousarray(x), np.ascontiguousarray(gamma, dtype).reshape(-1),
                np.ascontiguousarray(beta, dtype).reshape(-1), dtype.type(epsilon), np.empty_like(x))


def depthwise(xp: np.ndarray, wt: np.ndarray, bias: np.ndarray | None, out: np.ndarray, strides, dilation,
              activation: int) -> bool:
    """Depthwise convolution of the zero-padded NHWC ``xp`` (channels already repeated for a multiplier) with
    taps ``wt`` [kH, kW, C] into ``out`` [N, OH, OW, C], then bias and activation (0 none, 1 RELU, 2 RELU6);
    False (``out`` untouched) when numba is unavailable or the dtypes are not one float32/float64."""
    if out.dtype not in (np.float32, np.float64) or xp.dtype != out.dtype or wt.dtype != out.dtype:
        return False
    loop = _get("depthwise")
    if loop is None:
        return False
    has_bias = bias is not None
    b = bias.astype(out.dtype, copy=False) if has_bias else np.zeros(1, out.dtype)
    loop(np.ascontiguousarray(xp), np.ascontiguousarray(wt), b, out, int(strides[0]), int(strides[1]),
         int(dilation[0]), int(dilation[1]), int(activation), has_bias)
    return True


def depthwise_3x3_loop(vectors: bool):
    """The compiled loop of :func:`depthwise_3x3` (its arguments after the checks), or None without numba:
    with ``vectors`` (float32, unit channel stride of the output) the same loop in AVX-512 vectors where it runs
    (0.5-1x its time, bit-identical)."""
    loop = _get("depthwise3x3")
    if loop is not None and vectors:
        loop = _avx512.compiled("depthwise_vectors", "depthwise_3x3") or loop
    return loop


def depthwise_3x3(x: np.ndarray, wt: np.ndarray, bias: np.ndarray | None, out: np.ndarray, strides, dilation,
                  pads, activation: int) -> bool:
    """Depthwise 3x3 convolution of the *unpadded* NHWC ``x`` (channels already repeated for a multiplier;
    ``pads`` [top, bottom, left, right], zeros) with taps ``wt`` [3, 3, C] into ``out``, then bias and activation,
    like :func:`depthwise` on the padded copy (bit-identical: a tap in the padding reads +0.0 as it would there);
    False (``out`` untouched) without numba or for another dtype."""
    if out.dtype not in (np.float32, np.float64) or x.dtype != out.dtype or wt.dtype != out.dtype:
        return False
    if wt.shape[:2] != (3, 3):
        return False
    loop = depthwise_3x3_loop(out.dtype == np.float32 and out.strides[3] == 4)
    if loop is None:
        return False
    has_bias = bias is not None
    b = bias.astype(out.dtype, copy=False) if has_bias else np.zeros(1, out.dtype)
    loop(np.ascontiguousarray(x), np.ascontiguousarray(wt), b, out, int(strides[0]), int(strides[1]),
         int(dilation[0]), int(dilation[1]), int(pads[0]), int(pads[2]), int(activation), has_bias)
    return True


__all__ = ["channel_affine", "depthwise", "depthwise_3x3", "depthwise_3x3_loop", "enabled", "erf", "erf_gelu",
           "finish_arrays", "finish_rows", "evenly_strided", "im2col_rows", "kn2row_gather", "layer_norm_rows",
           "pixel_runs", "pool", "preload", "softmax_last_axis", "swap_last_axes", "winograd_transforms"]
