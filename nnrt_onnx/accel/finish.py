"""The in-place finish of a kernel's output blocks: bias, the plan's fused operations (MUL/ADD by per-channel
vectors, a residual addend) and the fused activation, while a block is still in cache -- one compiled pass when
numba is there (``_accel.finish_rows``), numpy's passes otherwise. Convolutions finish every block with it."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import numba_loops as _accel
from . import tiles as _tiles

_POST_UFUNCS = {"mul": np.multiply, "add": np.add}
_FLAT_ROW = 256  # values per row of the compiled pass where a block's rows are shorter than _FLAT_BELOW (Finish)
_FLAT_BELOW = 32


def tiled_rows(vector: np.ndarray, width: int) -> np.ndarray:
    """A [C] vector repeated ``width`` times: [width, C] rows that broadcast over a block's rows."""
    return np.tile(vector, width).reshape(width, vector.shape[0])


def _finish_rows(block: np.ndarray, bias_rows: np.ndarray | None, activation: int, post=()) -> None:
    """Bias (pre-tiled to the block's trailing dims), the ``post`` operations ((ufunc, rows) pairs, rows tiled like
    the bias) and the fused activation, in place, on a block still in cache: numpy's passes."""
    if bias_rows is not None:
        np.add(block, bias_rows, out=block)
    for ufunc, rows in post:
        ufunc(block, rows, out=block)
    if activation == 1:
        np.maximum(block, block.dtype.type(0), out=block)
    elif activation == 2:  # one pass (as fast as one np.maximum when given scalars of the array's dtype)
        np.clip(block, block.dtype.type(0), block.dtype.type(6), out=block)


def _rows_view(block: np.ndarray) -> np.ndarray | None:
    """``block`` [..., C] as a view of [M, C] rows: C-contiguous, or a channel slice of a C-contiguous array (a
    concatenation assembled in place, runtime/assembly.py); None otherwise."""
    if block.flags.c_contiguous:
        return block.reshape(-1, block.shape[-1])
    if not _accel.evenly_strided(block):
        return None
    return as_strided(block, (block.size // block.shape[-1], block.shape[-1]), block.strides[-2:])


class Finish:
    """A kernel output's bias ([O] or None), ``post`` operations (the plan's fusions: ("mul" | "add", [O] vector)
    pairs, and ("addend", array): add a residual tensor of the output's shape) and fused activation, applied in
    place to each finished block of output rows while it is in cache: one compiled pass over a contiguous block
    (``_accel.finish_rows``: bit-identical, 3x faster than numpy's passes), else numpy's passes with the vectors
    tiled along the block's width. Call with the block and its index in the whole output (``out[index]`` is the
    block), which selects the addend's matching rows."""

    __slots__ = ("bias", "post", "activation", "_addends", "_tiled", "_compiled")

    def __init__(self, bias, post, activation: int):
        self.bias, self.post, self.activation = bias, tuple(post), activation
        self._addends = [vector for name, vector in self.post if name == "addend"]
        self._tiled = None  # (width, tiled bias, tiled post) for numpy's passes, made at the first such block
        # (C, dtype, k, the compiled pass's operands for rows of C and for rows of k C, or None where it cannot run),
        # likewise
        self._compiled = None

    def tile_finish(self, columns: int, view, groups: int = 1):
        """This finish as register tiles apply it while they store a product (``_tiles.tile_finish``: the same
        float operations), or None where they cannot: more than two MUL/ADD vectors, a residual addend that is not
        the last operation, another dtype. ``view`` lays a tensor shaped like the kernel's output out like the
        product's output (the addend goes through it); ``groups``: the product is a stack of that many matrices,
        one group's channels each."""
        vectors = list(self.post)
        addend = vectors.pop()[1] if vectors and vectors[-1][0] == "addend" else None
        if any(name == "addend" for name, _ in vectors):
            return None
        return _tiles.tile_finish(columns, self.bias, self.activation, vectors,
                                  None if addend is None else view(addend), groups)

    def row_operands(self, c: int, width: int, dtype):
        """The trailing arguments with which a compiled kernel finishes whole output rows of ``width`` pixels of
        ``c`` channels itself, as this finish would (``_accel.winograd_transforms``' ``transform_out``): (True,
        bias, has_bias, vectors, kinds, activation, addend, has_addend), the vectors tiled ``width`` times; None
        where the compiled finish cannot run (another dtype, several addends, an addend not C-contiguous) or there
        is nothing to do."""
        if self.bias is None and not self.post and not self.activation:
            return None
        vectors = ([] if self.bias is None else [self.bias]) + [v for name, v in self.post if name != "addend"]
        if any(v.dtype != dtype for v in vectors) or len(self._addends) > 1:
            return None
        addend = self._addends[0] if self._addends else None
        if addend is not None and (addend.dtype != dtype or not addend.flags.c_contiguous or addend.ndim != 4):
            return None
        bias, has_bias, tiled, kinds = self._operands(c, dtype, width)
        return (True, bias, has_bias, tiled, kinds, self.activation,
                np.zeros((1, 1, 1, 1), dtype) if addend is None else addend, addend is not None)

    def _operands(self, c: int, dtype, k: int):
        """The compiled pass's operands for rows of ``k`` times ``c`` values (the vectors repeated ``k`` times)."""
        post = tuple((name, None if name == "addend" else np.tile(vector, k)) for name, vector in self.post)
        return _accel.finish_arrays(None if self.bias is None else np.tile(self.bias, k), post, c * k, dtype)

    def __call__(self, block: np.ndarray, index=Ellipsis) -> None:
        if self.bias is None and not self.post and not self.activation:
            return
        c = block.shape[-1]
        if self._compiled is None or self._compiled[:2] != (c, block.dtype):
            vectors = ([] if self.bias is None else [self.bias]) + [v for name, v in self.post if name != "addend"]
            usable = all(v.dtype == block.dtype for v in vectors) and len(self._addends) <= 1
            k = _FLAT_ROW // c if c < _FLAT_BELOW else 1
            self._compiled = (c, block.dtype, k, (self._operands(c, block.dtype, 1),
                                                  self._operands(c, block.dtype, k) if k > 1 else None)
                              if usable else None)
        addend = self._addends[0][index] if len(self._addends) == 1 else None
        operands = self._compiled[3]
        rows = _rows_view(block)
        if (operands is not None and rows is not None
                and (addend is None or (addend.dtype == block.dtype and addend.flags.c_contiguous))):
            addend = None if addend is None else addend.reshape(-1, c)
            k = self._compiled[2] if block.flags.c_contiguous else 1
            whole = rows.shape[0] // k * k if k > 1 else 0
            # short rows (C < 32): k rows at a time as one row of k C values, so that the compiled loops run long
            # (0.24-0.53x the time at C = 16-24; 0.9-1.1x at 32, 1.2-1.5x at 64); the same operations on the same
            # values: bit-identical. (Both calls fail alike -- no numba, another dtype -- or neither does.)
            if whole and not _accel.finish_rows(rows[:whole].reshape(-1, c * k), operands[1], self.activation,
                                                None if addend is None else addend[:whole].reshape(-1, c * k)):
                whole = -1
            if whole >= 0 and _accel.finish_rows(rows[whole:], operands[0], self.activation,
                                                 None if addend is None else addend[whole:]):
                return
        width = block.shape[-2]
        if self._tiled is None or self._tiled[0] != width:
            self._tiled = (width, None if self.bias is None else tiled_rows(self.bias, width),
                           tuple(None if name == "addend" else (_POST_UFUNCS[name], tiled_rows(vector, width))
                                 for name, vector in self.post))
        post = tuple((np.add, vector[index]) if tiled is None else tiled
                     for tiled, (_, vector) in zip(self._tiled[2], self.post))
        _finish_rows(block, self._tiled[1], self.activation, post)


__all__ = ["Finish", "tiled_rows"]
