"""``--threads N``: how many threads a run may use (one small policy; a thread-policy module may replace it).

- onnxruntime: the session's intra-op thread count (the onnxruntime device reads the NNRt extension config
  :data:`ORT_THREADS_EXTENSION`, which ``OH_NNCompilation_AddExtensionConfig`` sets);
- native: the native kernels are numpy, whose only threads are its BLAS pool; :func:`thread_limit` caps it
  (numpy's bundled OpenBLAS, found through its ``*_set_num_threads`` symbol) for the duration of a block.
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import os
from typing import Iterator

from ..runtime.ort import THREADS_EXTENSION as ORT_THREADS_EXTENSION

_SYMBOLS = ("scipy_openblas_{}_num_threads64_", "scipy_openblas_{}_num_threads", "openblas_{}_num_threads64_",
            "openblas_{}_num_threads")


def _openblas():
    """(get, set) of numpy's bundled OpenBLAS thread count, or None when numpy has another BLAS."""
    import numpy

    folder = os.path.join(os.path.dirname(os.path.dirname(numpy.__file__)), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(folder, "*openblas*"))):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for pattern in _SYMBOLS:
            get, put = getattr(library, pattern.format("get"), None), getattr(library, pattern.format("set"), None)
            if get is not None and put is not None:
                return get, put
    return None


@contextlib.contextmanager
def thread_limit(threads: int | None) -> Iterator[bool]:
    """Cap the native side at ``threads`` (None: leave it); yields whether a cap is in force."""
    found = _openblas() if threads else None
    if found is None:
        yield False
        return
    get, put = found
    before = int(get())
    put(int(threads))
    try:
        yield True
    finally:
        put(before)


def native_threads() -> int | None:
    """The native side's current thread count (None when unknown)."""
    found = _openblas()
    return int(found[0]()) if found else None


__all__ = ["ORT_THREADS_EXTENSION", "native_threads", "thread_limit"]
