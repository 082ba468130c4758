"""Window geometry of 2-D convolution and pooling, once: padding, output sizes, NCHW <-> NHWC permutations.

The one definition of each rule; the kernels (and their shape rules) call these, the ONNX converters should too.
Every size function works per spatial axis on plain ints and accepts :data:`UNKNOWN` (-1) for a size that is not
known yet (a dynamic dim): the result is then UNKNOWN as well, so the same call serves shape inference.

References (the semantics each function cites):

* NNAPI ``NeuralNetworks.h`` (``PaddingCode``): SAME padding ``out_size = (input + stride - 1) / stride``,
  ``effective_filter_size = (filter_size - 1) * dilation + 1``, ``needed_input = (out_size - 1) * stride +
  effective_filter_size``, ``total_padding = max(0, needed_input - input_size)``, ``padding_to_beginning =
  total_padding / 2``, ``padding_to_end = (total_padding + 1) / 2``; VALID: no padding, the input that does not
  fill a whole window at the end is ignored. NNRt's ``pad_mode`` 0 is SAME and 1 or 2 VALID (the kernels' default
  -1 means "no pad mode given": the explicit pad list ``[top, bottom, left, right]``).
* ONNX ``Conv`` / ``MaxPool`` / ``AveragePool`` (``onnx.defs.get_schema("MaxPool").doc``): explicit padding
  ``out = floor((in + pad_begin + pad_end - ((k - 1) * dilation + 1)) / stride + 1)``, or ``ceil(...)`` with
  ``ceil_mode``, where "sliding windows that would start in the right padded region are ignored";
  ``auto_pad`` SAME_UPPER / SAME_LOWER give ``out = ceil(in / stride)`` with the odd padding unit at the end
  (UPPER) or the beginning (LOWER); ONNX pads are ``[x1_begin, x2_begin, ..., x1_end, x2_end]``.
  NNRt's ``round_mode`` 1 is ONNX's ``ceil_mode`` 1.
* ONNX ``ConvTranspose``: ``out = stride * (in - 1) + output_padding + ((k - 1) * dilation + 1) - pad_begin -
  pad_end``; NNRt's transposed convolution with SAME gives ``in * stride`` (TF), cropping
  ``max(full - in * stride, 0) // 2`` at the beginning.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .errors import invalid

UNKNOWN = -1  # a dim not known before run time

# Axis permutations between ONNX's NCHW and NNRt's NHWC: ``permute(shape, NCHW_TO_NHWC)`` is the NHWC shape of an
# NCHW tensor (the ``perm`` of the Transpose that makes it), and NHWC_TO_NCHW the way back.
NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)

# NNRt pad modes (``pad_mode`` of CONV2D, DEPTHWISE_CONV2D_NATIVE, CONV2D_TRANSPOSE, AVG_POOL, MAX_POOL).
PAD_MODE_EXPLICIT = -1  # the kernels' "no pad mode given": use the pad list
PAD_MODE_SAME = 0
PAD_MODE_VALID = 1  # 2 is accepted as VALID too
_PAD_MODES = (PAD_MODE_EXPLICIT, PAD_MODE_SAME, PAD_MODE_VALID, 2)

# NNRt pooling round modes (``round_mode``): floor, or ceil = ONNX ceil_mode 1.
ROUND_MODE_FLOOR = 0
ROUND_MODE_CEIL = 1

# ONNX auto_pad values NNRt's pad mode expresses exactly (SAME_LOWER has no pad mode: its pads must be explicit).
AUTO_PAD_PAD_MODES = {"SAME_UPPER": PAD_MODE_SAME, "VALID": PAD_MODE_VALID}


def permute(shape: Sequence[int] | None, perm: Sequence[int]) -> tuple[int, ...] | None:
    """``shape`` after ``Transpose(perm)``: ``out[i] = shape[perm[i]]`` (None stays None: an unknown rank)."""
    return None if shape is None else tuple(shape[p] for p in perm)


# ----------------------------------------------------------------------------------------------------------------
# parameters (checked; errors name the op, e.g. "CONV2D: ...")


def check_pad_mode(op: str, pad_mode) -> int:
    """The pad mode as an int: -1 (explicit pad list), 0 (SAME) or 1/2 (VALID); anything else is invalid."""
    mode = int(pad_mode)
    if mode not in _PAD_MODES:
        raise invalid(f"{op}: pad mode {mode} is not 0 (same) or 1/2 (valid)")
    return mode


def check_round_mode(op: str, round_mode) -> int:
    """The pooling round mode as an int: 0 (floor) or 1 (ceil)."""
    mode = int(round_mode)
    if mode not in (ROUND_MODE_FLOOR, ROUND_MODE_CEIL):
        raise invalid(f"{op}: round mode {mode} is not 0 (floor) or 1 (ceil)")
    return mode


def spatial_pair(op: str, name: str, values, minimum: int) -> tuple[int, int]:
    """A ``[h, w]`` parameter (strides, dilation, kernel size, output paddings); one value means both."""
    vals = [int(v) for v in np.asarray(values).reshape(-1).tolist()]
    if len(vals) == 1:
        vals = vals * 2
    if len(vals) != 2:
        raise invalid(f"{op}: {name} needs 2 values [h, w] (or 1 for both), got {vals}")
    if any(v < minimum for v in vals):
        raise invalid(f"{op}: {name} values must be >= {minimum}, got {vals}")
    return vals[0], vals[1]


def check_pad_list(op: str, values) -> tuple[int, int, int, int]:
    """NNRt's explicit pad list ``[top, bottom, left, right]`` (empty = no padding), each >= 0."""
    vals = [int(v) for v in np.asarray(values).reshape(-1).tolist()]
    if len(vals) == 0:
        vals = [0, 0, 0, 0]
    if len(vals) != 4:
        raise invalid(f"{op}: pad list needs 4 values [top, bottom, left, right], got {vals}")
    if any(v < 0 for v in vals):
        raise invalid(f"{op}: pad list values must be >= 0, got {vals}")
    return vals[0], vals[1], vals[2], vals[3]


# ----------------------------------------------------------------------------------------------------------------
# pad layouts


def pad_list_to_axes(tblr: Sequence[int]) -> list[tuple[int, int]]:
    """NNRt ``[top, bottom, left, right]`` -> ``[(top, bottom), (left, right)]`` (begin, end per spatial axis)."""
    top, bottom, left, right = tblr
    return [(top, bottom), (left, right)]


def axes_to_pad_list(axes: Sequence[tuple[int, int]]) -> list[int]:
    """``[(top, bottom), (left, right)]`` -> NNRt ``[top, bottom, left, right]``."""
    (top, bottom), (left, right) = axes
    return [top, bottom, left, right]


def onnx_pads_to_axes(pads: Sequence[int]) -> list[tuple[int, int]]:
    """ONNX ``[x1_begin, x2_begin, ..., x1_end, x2_end]`` -> ``[(x1_begin, x1_end), (x2_begin, x2_end), ...]``."""
    nd = len(pads) // 2
    return list(zip((int(p) for p in pads[:nd]), (int(p) for p in pads[nd:])))


def axes_to_onnx_pads(axes: Sequence[tuple[int, int]]) -> list[int]:
    """``[(begin, end), ...]`` per axis -> ONNX ``[x1_begin, x2_begin, ..., x1_end, x2_end]``."""
    return [int(b) for b, _ in axes] + [int(e) for _, e in axes]


# ----------------------------------------------------------------------------------------------------------------
# sizes (one spatial axis; UNKNOWN in -> UNKNOWN out)


def effective_extent(kernel: int, dilation: int = 1) -> int:
    """Input cells one window spans: ``(kernel - 1) * dilation + 1`` (NNAPI ``effective_filter_size``)."""
    return UNKNOWN if kernel < 0 else (kernel - 1) * dilation + 1


def same_output_size(size: int, stride: int) -> int:
    """SAME output size ``ceil(size / stride)`` (NNAPI ``(input + stride - 1) / stride``; ONNX SAME_UPPER/LOWER)."""
    return UNKNOWN if size < 0 else -(-size // stride)


def same_padding(size: int, stride: int, extent: int, *, lower: bool = False) -> tuple[int, int]:
    """(begin, end) padding of SAME: ``total = max(0, (ceil(size/stride) - 1) * stride + extent - size)`` split
    evenly, the odd unit at the end (NNAPI PADDING_SAME, ONNX SAME_UPPER) or, with ``lower``, at the beginning
    (ONNX SAME_LOWER). ``extent`` is the effective (dilated) window size."""
    if size < 0 or extent < 0:
        return UNKNOWN, UNKNOWN
    total = max((same_output_size(size, stride) - 1) * stride + extent - size, 0)
    small, big = total // 2, total - total // 2
    return (big, small) if lower else (small, big)


def auto_pad_padding(auto_pad: str, size: int, extent: int, stride: int,
                     explicit: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """(begin, end) padding an ONNX ``auto_pad`` means: NOTSET (or "") the ``explicit`` pads, VALID none,
    SAME_UPPER / SAME_LOWER :func:`same_padding`. Raises ValueError for any other name."""
    if auto_pad in ("NOTSET", ""):
        return explicit
    if auto_pad == "VALID":
        return 0, 0
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return same_padding(size, stride, extent, lower=auto_pad == "SAME_LOWER")
    raise ValueError(f"auto_pad={auto_pad!r} is not NOTSET, SAME_UPPER, SAME_LOWER or VALID")


def window_output_size(size: int, extent: int, stride: int, pad_begin: int = 0, pad_end: int = 0, *,
                       ceil_mode: bool = False) -> int:
    """Windows of ``extent`` cells at ``stride`` over the padded axis: ``floor(span / stride) + 1`` with
    ``span = size + pad_begin + pad_end - extent`` (ONNX Conv/MaxPool explicit padding, NNAPI VALID), or with
    ``ceil_mode`` (NNRt round mode 1) ``ceil(span / stride) + 1`` less a last window that would start in the end
    padding (ONNX: "sliding windows that would start in the right padded region are ignored"). 0 when no window
    fits."""
    if size < 0 or extent < 0:
        return UNKNOWN
    span = size + pad_begin + pad_end - extent
    if span < 0:
        return 0
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def window_axis(pad_mode: int, size: int, extent: int, stride: int, pad_begin: int = 0, pad_end: int = 0, *,
                ceil_mode: bool = False) -> tuple[int, int, int]:
    """(output size, begin pad, end pad) of one axis of an NNRt convolution or pooling: SAME (pad mode 0) is
    :func:`same_output_size` / :func:`same_padding` whatever the round mode; VALID (1, 2) has no padding; the
    explicit mode (-1) uses ``pad_begin`` / ``pad_end``; both then :func:`window_output_size`."""
    if pad_mode == PAD_MODE_SAME:
        begin, end = same_padding(size, stride, extent)
        return same_output_size(size, stride), begin, end
    if pad_mode != PAD_MODE_EXPLICIT:
        pad_begin = pad_end = 0
    return window_output_size(size, extent, stride, pad_begin, pad_end, ceil_mode=ceil_mode), pad_begin, pad_end


def touched_end_padding(size: int, out: int, extent: int, stride: int, pad_begin: int) -> int:
    """End padding the ``out`` windows actually read: ``max((out - 1) * stride + extent - size - pad_begin, 0)``
    (ceil mode may reach past the declared end pad; a smaller declared pad is never touched in full)."""
    if size < 0 or out < 0:
        return UNKNOWN
    return max((out - 1) * stride + extent - size - pad_begin, 0)


def transposed_full_size(size: int, extent: int, stride: int) -> int:
    """Uncropped transposed-convolution output ``(size - 1) * stride + extent`` (ONNX ConvTranspose without pads
    and output padding; ``extent`` = effective kernel size)."""
    return UNKNOWN if size < 0 or extent < 0 else (size - 1) * stride + extent


def transposed_axis(pad_mode: int, size: int, extent: int, stride: int, pad_begin: int = 0, pad_end: int = 0,
                    output_padding: int = 0) -> tuple[int, int]:
    """(output size, crop at the beginning) of one axis of NNRt's transposed convolution: from the full size F
    (:func:`transposed_full_size`), SAME gives ``size * stride`` cropping ``max(F - size * stride, 0) // 2`` first
    (TF); VALID keeps F; explicit pads crop ``pad_begin`` / ``pad_end`` (ONNX ConvTranspose). ``output_padding``
    rows/cols are then added at the end."""
    full = transposed_full_size(size, extent, stride)
    if full < 0:
        return UNKNOWN, UNKNOWN
    if pad_mode == PAD_MODE_SAME:
        out = size * stride
        crop = max(full - out, 0) // 2
    elif pad_mode == PAD_MODE_EXPLICIT:
        out, crop = full - pad_begin - pad_end, pad_begin
    else:
        out, crop = full, 0
    return out + output_padding, crop
