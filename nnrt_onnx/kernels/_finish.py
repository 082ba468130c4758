"""The in-place finish of a kernel's output blocks: bias, the plan's fused operations (MUL/ADD by per-channel
vectors, a residual addend) and the fused activation, while a block is still in cache -- one compiled pass when
numba is there (``_accel.finish_rows``), numpy's passes otherwise. Convolutions finish every block with it."""
from __future__ import annotations

import numpy as np

from . import _accel

_POST_UFUNCS = {"mul": np.multiply, "add": np.add}


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
        self._compiled = None  # (C, dtype, the compiled pass's operands or None where it cannot run), likewise

    def __call__(self, block: np.ndarray, index=Ellipsis) -> None:
        if self.bias is None and not self.post and not self.activation:
            return
        c = block.shape[-1]
        if self._compiled is None or self._compiled[:2] != (c, block.dtype):
            vectors = ([] if self.bias is None else [self.bias]) + [v for name, v in self.post if name != "addend"]
            usable = all(v.dtype == block.dtype for v in vectors) and len(self._addends) <= 1
            post = tuple((name, None if name == "addend" else vector) for name, vector in self.post)
            self._compiled = (c, block.dtype, _accel.finish_arrays(self.bias, post, c, block.dtype) if usable else None)
        addend = self._addends[0][index] if len(self._addends) == 1 else None
        if (self._compiled[2] is not None and block.flags.c_contiguous
                and (addend is None or (addend.dtype == block.dtype and addend.flags.c_contiguous))):
            if _accel.finish_rows(block.reshape(-1, c), self._compiled[2], self.activation,
                                  None if addend is None else addend.reshape(-1, c)):
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
