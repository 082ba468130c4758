"""Convolutions bound to one execution plan step (:func:`conv.specialise_conv`): the compiled call alone.

A compiled model's convolution sees the same shapes, weights and parameters in every run, yet the general kernel
re-derives its path on each call -- checks, method rule, finish table, the driver's argument checks -- ~60-120 us
of Python per step inside a model (its working set evicted by the layers' data), as much as the arithmetic of a
MobileNetV2 1x1 layer. A runner made here does that once: per run it checks that the input, output and residual
arrays have the planned shapes and strides (else it calls the general kernel, ``general``), then makes the one
compiled call the general kernel would make -- the same operations on the same values, so bit-identical.

Each runner is called like the plan calls the kernel: ``run(x, weight, bias, *addends, out=None)``.
"""
from __future__ import annotations

import threading

import numpy as np

_F32 = np.dtype(np.float32)


def _contiguous_strides(shape) -> tuple[int, ...]:
    return np.empty(0, _F32).reshape(0, *shape[1:]).strides if len(shape) > 1 else (4,)


class _Layout:
    """The checks a runner makes per run: the input's shape and C-contiguous strides, the output's shape (its
    strides: C-contiguous, or evenly strided rows -- a slice of a concatenation -- checked once per strides
    tuple), each residual addend's shape and C-contiguous strides, and no overlap of the output with them."""

    __slots__ = ("x_shape", "x_strides", "out_shape", "out_strides", "rows", "out_rows", "_good_out")

    def __init__(self, x_shape, out_shape, rows: int):
        self.x_shape, self.out_shape = tuple(x_shape), tuple(out_shape)
        self.x_strides, self.out_strides = _contiguous_strides(x_shape), _contiguous_strides(out_shape)
        self.rows = rows  # the output viewed as [1, rows, O] by :meth:`out_rows_view`
        self._good_out = {self.out_strides}

    def matches(self, x, out, addends) -> bool:
        if (x.shape != self.x_shape or x.strides != self.x_strides or x.dtype != _F32
                or out.shape != self.out_shape or out.dtype != _F32 or np.may_share_memory(out, x)):
            return False
        if out.strides not in self._good_out and not self._accept_out(out):
            return False
        for addend in addends:
            if (addend.shape != self.out_shape or addend.strides != self.out_strides or addend.dtype != _F32
                    or np.may_share_memory(out, addend)):
                return False
        return True

    def _accept_out(self, out) -> bool:
        """A new strides tuple of ``out``: whether its [1, rows, O] view is a view (rows evenly strided, unit
        channel stride, writeable) -- then every array with these strides is."""
        if out.strides[-1] != 4 or not out.flags.writeable or len(self._good_out) > 8:
            return False
        if not np.may_share_memory(out.reshape(1, self.rows, out.shape[-1]), out):  # (a copy otherwise)
            return False
        self._good_out.add(out.strides)
        return True


def tiled_1x1(general, x_shape, out_shape, strides, groups: int, product, has_addend: bool):
    """A 1x1 convolution without padding as register-tile products (``product``: ``_tiles.bound_product`` of its
    weight matrices and finish), one per group: the input's pixels are the rows of A (each group's channels a
    strided [M, C/G] matrix), read in place for stride 1, copied (like the general kernel: one contiguous copy of
    the strided pixels) into a per-thread array otherwise; the output and residual likewise as [G, M, O/G]."""
    n, h, w, c = x_shape
    _, oh, ow, o = out_shape
    rows = n * oh * ow
    layout = _Layout(x_shape, out_shape, rows)
    s_h, s_w = strides
    strided = (s_h, s_w) != (1, 1)
    local = threading.local()
    a_shape, out_rows = (rows, groups, c // groups), (rows, groups, o // groups)

    def run(x, weight, bias, *addends, out=None):
        if out is None:  # (a model output: no arena array)
            out = np.empty(layout.out_shape, _F32)
        if not layout.matches(x, out, addends):
            return general(x, weight, bias, *addends, out=out)
        if strided:
            a = getattr(local, "rows", None)
            if a is None:
                a = local.rows = np.empty((n, oh, ow, c), _F32)
            np.copyto(a, x[:, : (oh - 1) * s_h + 1: s_h, : (ow - 1) * s_w + 1: s_w])
            a = a.reshape(a_shape)
        else:
            a = x.reshape(a_shape)
        product(a.transpose(1, 0, 2), out.reshape(out_rows).transpose(1, 0, 2),
                addends[0].reshape(out_rows).transpose(1, 0, 2) if has_addend else None)
        return out

    return run


# per thread: (padded shape, pads) -> (zero-bordered padded image, its interior); shared by the runners of one
# geometry (each run overwrites the whole interior; nothing writes the borders)
_PADDED_IMAGES = threading.local()


def _padded_image(shape, pads):
    images = _PADDED_IMAGES.__dict__.setdefault("images", {})
    key = (shape, pads)
    made = images.get(key)
    if made is None:
        n, h, w, c = shape
        pt, pb, pl, pr = pads
        image = np.zeros((n, h + pt + pb, w + pl + pr, c), _F32)
        made = images[key] = (image, image[:, pt:pt + h, pl:pl + w])
    return made


def direct(general, x_shape, out_shape, pads, window, product, has_addend: bool):
    """A one-image convolution read straight from its zero-padded input by the gathered register tiles
    (``product``: ``_tiles.bound_product`` with the weights' offsets as columns); ``window``: (strides, the
    window's extent in the flat image). The padded image is a per-thread array whose borders stay zero, so a run
    copies only the input into its interior (the general kernel pads a scratch copy, borders included)."""
    _, h, w, c = x_shape
    _, oh, ow, o = out_shape
    (s_h, s_w), span = window
    wp = w + pads[2] + pads[3]
    window_strides = (s_h * wp * c * 4, s_w * c * 4, 4)
    padding = any(pads)
    layout = _Layout(x_shape, out_shape, oh * ow)
    local = threading.local()

    def run(x, weight, bias, *addends, out=None):
        if out is None:  # (a model output: no arena array)
            out = np.empty(layout.out_shape, _F32)
        if not layout.matches(x, out, addends):
            return general(x, weight, bias, *addends, out=out)
        if padding:
            made = getattr(local, "made", None)
            if made is None:
                image, interior = _padded_image(layout.x_shape, pads)
                made = local.made = (interior, np.ndarray((oh, ow, span), _F32, image, 0, window_strides))
            interior, windows = made
            np.copyto(interior, x)
        else:  # the windows are views of x itself
            windows = np.ndarray((oh, ow, span), _F32, x, 0, window_strides)
        product(windows, out.reshape(oh, ow, o), addends[0].reshape(oh, ow, o) if has_addend else None)
        return out

    return run


def depthwise_3x3(general, x_shape, out_shape, loop, taps, bias, geometry, activation: int):
    """A 3x3 depthwise convolution (no channel multiplier, no ``post``) as the one call of its compiled loop
    (``_depthwise_vectors.depthwise_3x3`` or numba's), unpadded input, bias and activation fused; ``geometry``:
    (s_h, s_w, d_h, d_w, pad top, pad left)."""
    layout = _Layout(x_shape, out_shape, int(np.prod(out_shape[:3])))
    has_bias = bias is not None
    values = bias if has_bias else np.zeros(1, _F32)
    s_h, s_w, d_h, d_w, pt, pl = geometry

    def run(x, weight, bias_, out=None):
        if out is None:  # (a model output: no arena array)
            out = np.empty(layout.out_shape, _F32)
        if not layout.matches(x, out, ()):
            return general(x, weight, bias_, out=out)
        loop(x, taps, values, out, s_h, s_w, d_h, d_w, pt, pl, activation, has_bias)
        return out

    return run


__all__ = ["depthwise_3x3", "direct", "tiled_1x1"]
