"""Arrays that view a read-only mapped file (the importer's weights, ``onnx_import.weights``): their pages can be
dropped from this process's memory once read (:func:`drop_pages`; the kernel maps them again from the unchanged file
if they are read again), and :func:`detached` copies one so that nothing kept outlives the mapping."""
from __future__ import annotations

import mmap

import numpy as np

__all__ = ["detached", "drop_pages", "mapping_of"]


def mapping_of(array: np.ndarray) -> mmap.mmap | None:
    """The mapped file ``array`` views, or None."""
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):  # (np.frombuffer keeps a memoryview of the object it reads)
        base = base.obj
    return base if isinstance(base, mmap.mmap) else None


def drop_pages(array: np.ndarray | None) -> None:
    """Advise the kernel that the pages ``array`` views are not needed now (no-op for an ordinary array)."""
    if array is None or not array.size:
        return
    mapped = mapping_of(array)
    if mapped is None or not hasattr(mapped, "madvise"):
        return
    start = array.__array_interface__["data"][0] - np.frombuffer(mapped, np.uint8, 1).__array_interface__["data"][0]
    low, high = start, start + array.nbytes  # (a transposed view spans the same bytes as its contiguous base)
    if any(s < 0 for s in array.strides):
        low, high = 0, len(mapped)
    low -= low % mmap.PAGESIZE
    try:
        mapped.madvise(mmap.MADV_DONTNEED, low, min(len(mapped), high) - low)
    except (OSError, ValueError):  # advice only
        pass


def detached(array: np.ndarray) -> np.ndarray:
    """``array``, copied into ordinary memory when it views a mapped file (whose pages are then dropped)."""
    if mapping_of(array) is None:
        return array
    copy = np.array(array, order="C")
    drop_pages(array)
    return copy
