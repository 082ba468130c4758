"""Optional compiled loops (numba) for the kernels numpy cannot fuse, each with a pure-numpy path beside it.

numba is not a dependency: ``pip install "nnrt-onnx[fast]"`` adds it. Without it (or with the environment
variable ``NNRT_ONNX_NUMBA=0``) every function here returns False and the kernel takes its numpy path. The
compiled loops perform exactly the numpy path's float operations in the same order (no fast-math, so no FMA
contraction or reassociation): results are bit-identical, which tests/kernels/test_conv.py checks.

* :func:`depthwise` -- the depthwise convolution of ``conv._depthwise_core``: per output pixel, the taps in
  row-major order into a channel vector that stays in registers/L1, then the bias and the fused activation. The
  numpy path makes two passes over the whole output per tap (measured 4-5x slower, docs/performance.md).
"""
from __future__ import annotations

import os
import threading

import numpy as np

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


def _build(name: str):
    try:
        import numba
    except ImportError:
        return _DISABLED
    if name != "depthwise":
        raise KeyError(name)

    @numba.njit(cache=_cache_ok(), nogil=True, fastmath=False, boundscheck=False)
    def depthwise_loop(xp, wt, bias, out, s_h, s_w, d_h, d_w, activation, has_bias):  # pragma: no cover (compiled)
        n, oh, ow, c = out.shape
        kh, kw = wt.shape[0], wt.shape[1]
        zero = out.dtype.type(0)
        six = out.dtype.type(6)
        for b in range(n):
            for r in range(oh):
                for q in range(ow):
                    acc = out[b, r, q]
                    row, col = r * s_h, q * s_w
                    for ch in range(c):
                        acc[ch] = xp[b, row, col, ch] * wt[0, 0, ch]
                    for i in range(kh):
                        for j in range(kw):
                            if i == 0 and j == 0:
                                continue
                            src = xp[b, row + i * d_h, col + j * d_w]
                            wij = wt[i, j]
                            for ch in range(c):
                                acc[ch] = acc[ch] + src[ch] * wij[ch]
                    if has_bias:
                        for ch in range(c):
                            acc[ch] = acc[ch] + bias[ch]
                    if activation == 1:
                        for ch in range(c):
                            v = acc[ch]
                            acc[ch] = v if v > zero else (zero if v <= zero else v)  # NaN stays NaN
                    elif activation == 2:
                        for ch in range(c):
                            v = acc[ch]
                            if v < zero:
                                v = zero
                            elif v > six:
                                v = six
                            acc[ch] = v
        return out

    return depthwise_loop


def _cache_ok() -> bool:
    """Cache compiled code next to this file when that is writable (else compile once per process)."""
    return os.access(os.path.dirname(os.path.abspath(__file__)), os.W_OK) or bool(os.environ.get("NUMBA_CACHE_DIR"))


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


__all__ = ["depthwise", "enabled"]
