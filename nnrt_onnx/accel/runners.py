"""Kernels bound to one execution plan step (the kernels' specialisers: :func:`conv._specialise_conv`,
:func:`linear._specialise_matmul`): the compiled call alone.

A compiled model's convolution sees the same shapes, weights and parameters in every run, yet the general kernel
re-derives its path on each call -- checks, method rule, finish table, the driver's argument checks -- ~60-120 us
of Python per step inside a model (its working set evicted by the layers' data), as much as the arithmetic of a
MobileNetV2 1x1 layer. A runner made here does that once: per run it checks that the input, output and residual
arrays have the planned shapes and strides (else it calls the general kernel, ``general``), then makes the one
compiled call the general kernel would make -- the same operations on the same values, so bit-identical.

Each runner is called like the plan calls the kernel: ``run(x, weight[, bias], *addends, out=None)``.
"""
from __future__ import annotations

import threading

import numpy as np

from . import numba_loops as _accel

_F32 = np.dtype(np.float32)


def _contiguous_strides(shape) -> tuple[int, ...]:
    return np.empty(0, _F32).reshape(0, *shape[1:]).strides if len(shape) > 1 else (4,)


class _Layout:
    """The checks a runner makes per run: the input's shape and C-contiguous strides, the output's shape (its
    strides: C-contiguous, or evenly strided rows -- a slice of a concatenation -- checked once per strides
    tuple), each residual addend's shape and C-contiguous strides, and no overlap of the output with them."""

    __slots__ = ("x_shape", "x_strides", "out_shape", "out_strides", "_good_out")

    def __init__(self, x_shape, out_shape):
        self.x_shape, self.out_shape = tuple(x_shape), tuple(out_shape)
        self.x_strides, self.out_strides = _contiguous_strides(x_shape), _contiguous_strides(out_shape)
        self._good_out = {self.out_strides}

    def output(self, x, out, addends):
        """The array a runner writes -- ``out``, or a new one for a model output (no arena array) -- where the
        arrays are as planned; else None (the runner calls the general kernel)."""
        if out is None:
            out = np.empty(self.out_shape, _F32)
        return out if self.matches(x, out, addends) else None

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
        """A new strides tuple of ``out``: whether it is evenly strided (the general kernels' rule, which their
        paths write in place: rows a whole number of pixels apart, unit channel stride) -- then every array with
        these strides is."""
        if not out.flags.writeable or len(self._good_out) > 8 or not _accel.evenly_strided(out):
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
    layout = _Layout(x_shape, out_shape)
    s_h, s_w = strides
    strided = (s_h, s_w) != (1, 1)
    local = threading.local()
    a_shape, out_rows = (rows, groups, c // groups), (rows, groups, o // groups)

    def run(x, weight, bias, *addends, out=None):
        target = layout.output(x, out, addends)
        if target is None:
            return general(x, weight, bias, *addends, out=out)
        out = target
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


def blas_1x1(general, x_shape, out_shape, multiply, operands, activation: int, has_addend: bool):
    """A 1x1 convolution of stride 1 without padding whose product stays with numpy's BLAS (too wide for the
    register tiles): ``multiply(a, out)`` (``_gemm.matmul_into`` with the weight matrix: its row blocks), then the
    compiled finish pass over the output rows (``operands``: ``_accel.finish_arrays``' for the bias and post
    operations) -- the general kernel's calls without its Python around them."""
    rows = int(np.prod(x_shape[:3]))
    c, o = x_shape[3], out_shape[3]
    layout = _Layout(x_shape, out_shape)

    def run(x, weight, bias, *addends, out=None):
        target = layout.output(x, out, addends)
        if target is None or not target.flags.c_contiguous:
            return general(x, weight, bias, *addends, out=out)
        out = target
        target = out.reshape(rows, o)
        multiply(x.reshape(rows, c), target)
        _accel.finish_rows(target, operands, activation, addends[0].reshape(rows, o) if has_addend else None)
        return out

    return run


def pooling(general, x_shape, out_shape, vectors, window):
    """A 2x2 or 3x3 pooling as the one call of its AVX-512 loop (``_pool_vectors.pool``; ``window``: its
    arguments after the arrays), into the plan's array. Called as ``run(x, out=None)``."""
    layout = _Layout(x_shape, out_shape)

    def run(x, out=None):
        target = layout.output(x, out, ())
        if target is None:
            return general(x, out=out)
        out = target
        vectors(x, out, *window)
        return out

    return run


def rows_product(general, x_shape, out_shape, product, has_addend: bool):
    """A product of the input's rows (its last axis: K) with a constant matrix in register tiles (``product``:
    ``_tiles.bound_product`` of the matrix and the finish), e.g. a MATMUL by a weight with its bias fused: the rows
    read in place. Called as ``run(x, weight, *addends, out=None)``."""
    rows = int(np.prod(x_shape[:-1]))
    layout = _Layout(x_shape, out_shape)
    a_shape, out_rows = (1, rows, x_shape[-1]), (1, rows, out_shape[-1])

    def run(x, weight, *addends, out=None):
        target = layout.output(x, out, addends)
        if target is None:
            return general(x, weight, *addends, out=out)
        out = target
        product(x.reshape(a_shape), out.reshape(out_rows), addends[0].reshape(out_rows) if has_addend else None)
        return out

    return run


# per thread: zeroed work arrays shared by the runners, by a key naming their use and layout (a thread runs one step
# at a time; a padded image's key fixes where its interior lies, so its borders, which nothing writes, stay zero)
_THREAD_ARRAYS = threading.local()


def _thread_array(key, shape) -> np.ndarray:
    arrays = _THREAD_ARRAYS.__dict__.setdefault("arrays", {})
    array = arrays.get(key)
    if array is None:
        array = arrays[key] = np.zeros(shape, _F32)
    return array


def _padded_image(x_shape, top: int, left: int, padded_hw):
    """A per-thread zero-bordered image [N, Hp, Wp, C] for inputs of ``x_shape`` placed at (top, left), and the
    view of its interior."""
    n, h, w, c = x_shape
    image = _thread_array(("padded", tuple(x_shape), top, left, tuple(padded_hw)), (n, *padded_hw, c))
    return image, image[:, top:top + h, left:left + w]


def direct(general, x_shape, out_shape, pads, window, product, has_addend: bool, nchw: bool = False):
    """A one-image convolution read straight from its zero-padded input by the gathered register tiles
    (``product``: ``_tiles.bound_product`` with the weights' offsets as columns); ``window``: (strides, the
    window's extent in the flat image). The padded image is a per-thread array whose borders stay zero, so a run
    copies only the input into its interior (the general kernel pads a scratch copy, borders included). With
    ``nchw`` the input is [N, C, H, W] (``x_shape`` too): that copy transposes it, one channel at a time (long
    inner loops), so the image is laid out once instead of by a TRANSPOSE step and then this copy."""
    planned = x_shape
    if nchw:
        n, c, h, w = x_shape
        x_shape = (n, h, w, c)
    _, h, w, c = x_shape
    _, oh, ow, o = out_shape
    (s_h, s_w), span = window
    wp = w + pads[2] + pads[3]
    window_strides = (s_h * wp * c * 4, s_w * c * 4, 4)
    padding = any(pads) or nchw
    layout = _Layout(planned, out_shape)
    local = threading.local()

    def run(x, weight, bias, *addends, out=None):
        target = layout.output(x, out, addends)
        if target is None:
            return general(x, weight, bias, *addends, out=out)
        out = target
        if padding:
            made = getattr(local, "made", None)
            if made is None:
                image, interior = _padded_image(x_shape, pads[0], pads[2], (h + pads[0] + pads[1], wp))
                made = local.made = (interior, np.ndarray((oh, ow, span), _F32, image, 0, window_strides))
            interior, windows = made
            if nchw:
                for channel in range(c):
                    interior[..., channel] = x[:, channel]
            else:
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
    layout = _Layout(x_shape, out_shape)
    has_bias = bias is not None
    values = bias if has_bias else np.zeros(1, _F32)
    s_h, s_w, d_h, d_w, pt, pl = geometry

    def run(x, weight, bias_, out=None):
        target = layout.output(x, out, ())
        if target is None:
            return general(x, weight, bias_, out=out)
        out = target
        loop(x, taps, values, out, s_h, s_w, d_h, d_w, pt, pl, activation, has_bias)
        return out

    return run


def winograd(general, x_shape, out_shape, pads, geometry, lengths, transforms, products, row_finish,
             has_addend: bool):
    """A stride-1 3x3 convolution by F(2x2, 3x3) as ``conv._winograd_3x3`` runs it with compiled transforms: the
    input copied into a per-thread zero-bordered image, then per block of tile rows the input transform, the 16
    products (``products``: one callable(v, m) per block, register tiles or BLAS as the general kernel chooses)
    and the output transform finishing each row (``row_finish``: ``Finish.row_operands``, the addend in place 6).
    ``geometry``: ``conv._winograd_geometry``'s; ``lengths``: the planes' (skewed) lengths of V and M."""
    n, h, w, c = x_shape
    _, oh, ow, o = out_shape
    th, tw, hp, wp, rows = geometry
    layout = _Layout(x_shape, out_shape)
    transform_in, transform_out = transforms
    blocks = [(r0, min(th, r0 + rows)) for r0 in range(0, th, rows)]
    local = threading.local()

    def made():
        image, interior = _padded_image(x_shape, pads[0], pads[2], (hp, wp))
        v_full, m_full = (_thread_array(("winograd", name, length), (16, length))
                          for name, length in zip("vm", lengths))
        rows_in = _thread_array(("winograd", "in", tw, c), (4, (2 * tw + 2) * c))
        rows_out = _thread_array(("winograd", "out", tw, o), (8, tw * o))
        steps = [(r0, r1, v_full[:, : n * (r1 - r0) * tw * c].reshape(16, -1, c),
                  m_full[:, : n * (r1 - r0) * tw * o].reshape(16, -1, o), product)
                 for (r0, r1), product in zip(blocks, products)]
        local.made = (image, interior, v_full, m_full, rows_in, rows_out, steps)
        return local.made

    def run(x, weight, bias, *addends, out=None):
        target = layout.output(x, out, addends)
        if target is None:
            return general(x, weight, bias, *addends, out=out)
        out = target
        image, interior, v_full, m_full, rows_in, rows_out, steps = getattr(local, "made", None) or made()
        np.copyto(interior, x)
        flat, step = _accel.pixel_runs(out)
        finishing = (*row_finish[:6], addends[0], *row_finish[7:]) if has_addend else row_finish
        for r0, r1, v, m, product in steps:
            transform_in(image, v_full, r0, r1, tw, rows_in)
            product(v, m)
            transform_out(m_full, flat, step, n, oh, ow, o, r0, r1, tw, rows_out, *finishing)
        return out

    return run


def kn2row(general, x_shape, out_shape, pads, blocks, kernel, operands, activation: int, has_addend: bool):
    """A stride-1 convolution by kn2row as ``conv._kn2row`` runs it: per block of output rows (``blocks``: (image,
    first and last output row, first and last input row, product) -- the product a callable(a, z), register tiles
    or BLAS as the general kernel chooses) the product of its input rows with every tap's weights into a per-thread
    array, the compiled gather, then the compiled finish (``operands``: ``_accel.finish_arrays``' for the bias and
    the post operations). ``kernel``: (kH, kW)."""
    n, h, w, c = x_shape
    _, oh, ow, o = out_shape
    pt, pl = pads[0], pads[2]
    layout = _Layout(x_shape, out_shape)
    rows = max(i1 - i0 for _, _, _, i0, i1, _ in blocks)
    taps = kernel[0] * kernel[1] * o

    def run(x, weight, bias, *addends, out=None):
        target = layout.output(x, out, addends)
        if target is None or not target.flags.c_contiguous:
            return general(x, weight, bias, *addends, out=out)
        out = target
        z_full = _thread_array(("kn2row", rows, w, taps), (rows * w, taps))
        for b, r0, r1, i0, i1, product in blocks:
            z = z_full[: (i1 - i0) * w]
            product(x[b, i0:i1].reshape(-1, c), z)
            block = out[b, r0:r1]
            if not _accel.kn2row_gather(z.reshape(i1 - i0, w, *kernel, o), block, r0 - pt - i0, -pl):
                return general(x, weight, bias, *addends, out=out)  # (no gather: the general kernel's paths)
            _accel.finish_rows(block.reshape(-1, o), operands, activation,
                               addends[0][b, r0:r1].reshape(-1, o) if has_addend else None)
        return out

    return run


__all__ = ["blas_1x1", "depthwise_3x3", "direct", "kn2row", "pooling", "rows_product", "tiled_1x1", "winograd"]
