"""Spatial kernels (NHWC): RESIZE_BILINEAR, the batch/space and depth/space rearrangements and CROP.

Layout NHWC (see conv.py for the shared conventions); RESIZE_BILINEAR accumulates float16 in float32 and returns
float16. ``bilinear_matrix`` (the matrix RESIZE_BILINEAR applies along one axis) is also used by the ONNX importer
and exporter. Each kernel computes its output size with a helper its shape rule calls too.
"""
from __future__ import annotations

import numpy as np

from ..errors import invalid
from ..geometry import UNKNOWN
from . import kernel, shape_rule
from ._common import _check_rank, _check_rank_dims, _compute_dtype, _known

# ----------------------------------------------------------------------------------------------------------------
# resize


def _linear_taps(in_size: int, out_size: int, mode: int):
    """Source indices (lo, hi) and weight of hi for each output position (TF/NNAPI = ONNX for these modes)."""
    o = np.arange(out_size, dtype=np.float64)
    if mode == 0:  # ASYMMETRIC
        src = o * (in_size / out_size)
    elif mode == 1:  # ALIGN_CORNERS
        src = o * ((in_size - 1) / (out_size - 1)) if out_size > 1 else np.zeros_like(o)
    else:  # HALF_PIXEL
        src = (o + 0.5) * (in_size / out_size) - 0.5
    # Edge clamping; for a 2-tap linear filter this equals excluding (and renormalising) outside samples.
    src = np.clip(src, 0.0, in_size - 1)
    lo = np.floor(src).astype(np.intp)
    hi = np.minimum(lo + 1, in_size - 1)
    return lo, hi, src - lo


def bilinear_matrix(in_size: int, out_size: int, mode: int) -> np.ndarray:
    """The [out, in] float64 matrix RESIZE_BILINEAR applies along one axis (used by the ONNX importer and exporter
    to decide when ONNX Resize and this op agree, and to write the op as matrix products)."""
    lo, hi, frac = _linear_taps(in_size, out_size, mode)
    matrix = np.zeros((out_size, in_size))
    np.add.at(matrix, (np.arange(out_size), lo), 1 - frac)
    np.add.at(matrix, (np.arange(out_size), hi), frac)
    return matrix


@kernel("OH_NN_OPS_RESIZE_BILINEAR")
def resize_bilinear(x, *, new_height, new_width, preserve_aspect_ratio, coordinate_transform_mode, exclude_outside):
    op = "RESIZE_BILINEAR"
    _check_rank(op, x)
    cdtype = _compute_dtype(op, x)
    n, h, w, c = x.shape
    nh, nw, mode = _resize_geometry(op, x.shape, new_height, new_width, preserve_aspect_ratio,
                                    coordinate_transform_mode, exclude_outside)
    xc = x.astype(cdtype, copy=False)
    lo, hi, frac = _linear_taps(h, nh, mode)
    f = frac.astype(cdtype)[None, :, None, None]
    rows = xc[:, lo] * (1 - f) + xc[:, hi] * f
    lo, hi, frac = _linear_taps(w, nw, mode)
    f = frac.astype(cdtype)[None, None, :, None]
    out = rows[:, :, lo] * (1 - f) + rows[:, :, hi] * f
    return out.astype(x.dtype, copy=False)


def _resize_geometry(op, shape, new_height, new_width, preserve_aspect_ratio, coordinate_transform_mode,
                     exclude_outside) -> tuple[int, int, int]:
    """(output height, output width, coordinate mode) after the parameter checks: [newHeight, newWidth], or with
    preserve_aspect_ratio the largest h:w size inside it (TF; UNKNOWN while the input size is)."""
    h, w = shape[1], shape[2]
    nh, nw = int(new_height), int(new_width)
    if nh <= 0 or nw <= 0:
        raise invalid(f"{op}: new height/width must be > 0, got [{nh}, {nw}]")
    mode = int(coordinate_transform_mode)
    if mode not in (0, 1, 2):
        raise invalid(f"{op}: coordinate transform mode {mode} is not 0 (asymmetric), 1 (align corners) "
                      f"or 2 (half pixel)")
    if int(exclude_outside) not in (0, 1):
        raise invalid(f"{op}: exclude outside must be 0 or 1, got {exclude_outside}")
    if h == 0 or w == 0:
        raise invalid(f"{op}: input has an empty spatial dimension {list(shape)}")
    if bool(preserve_aspect_ratio):  # TF: fit inside [newHeight, newWidth] keeping h:w
        if not _known(h, w):
            return UNKNOWN, UNKNOWN, mode
        scale = min(nh / h, nw / w)
        nh, nw = max(int(np.rint(scale * h)), 1), max(int(np.rint(scale * w)), 1)
    return nh, nw, mode


@shape_rule("OH_NN_OPS_RESIZE_BILINEAR")
def _resize_bilinear_shape(op, shapes, values, *, new_height, new_width, preserve_aspect_ratio,
                           coordinate_transform_mode, exclude_outside, **_):
    n, h, w, c = shape = _check_rank_dims(op, shapes[0])
    nh, nw, _ = _resize_geometry(op, shape, new_height, new_width, preserve_aspect_ratio, coordinate_transform_mode,
                                 exclude_outside)
    return ((n, nh, nw, c),)


# ----------------------------------------------------------------------------------------------------------------
# batch/space, depth/space


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1).tolist()]


@kernel("OH_NN_OPS_BATCH_TO_SPACE_ND")
def batch_to_space_nd(x, *, block_size, crops):
    op = "BATCH_TO_SPACE_ND"
    _check_rank(op, x)
    (b0, b1), crop, (nb, _, _, _) = _batch_to_space_geometry(op, x.shape, block_size, crops)
    n, h, w, c = x.shape
    y = x.reshape(b0, b1, nb, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(nb, h * b0, w * b1, c)
    return np.ascontiguousarray(y[:, crop[0]: h * b0 - crop[1], crop[2]: w * b1 - crop[3]])


def _batch_to_space_geometry(op, shape, block_size, crops):
    """(block [bH, bW], crops [top, bottom, left, right], output dims): the batch split into bH x bW blocks laid
    out over the spatial dims, then cropped (UNKNOWN dims stay unknown)."""
    block = _ints(block_size)
    if len(block) != 2 or min(block) < 1:
        raise invalid(f"{op}: block size needs 2 values >= 1 [bH, bW], got {block}")
    crop = _ints(crops) or [0, 0, 0, 0]
    if len(crop) != 4 or min(crop) < 0:
        raise invalid(f"{op}: crops need 4 values >= 0 [[top, bottom], [left, right]], got {crop}")
    n, h, w, c = shape
    b0, b1 = block
    if _known(n) and n % (b0 * b1):
        raise invalid(f"{op}: batch {n} is not divisible by blockSize product {b0 * b1}")
    if _known(h) and crop[0] + crop[1] > h * b0 or _known(w) and crop[2] + crop[3] > w * b1:
        raise invalid(f"{op}: crops {crop} exceed the output extent [{h * b0}, {w * b1}]")
    out = (n // (b0 * b1) if _known(n) else UNKNOWN, h * b0 - crop[0] - crop[1] if _known(h) else UNKNOWN,
           w * b1 - crop[2] - crop[3] if _known(w) else UNKNOWN, c)
    return block, crop, out


@shape_rule("OH_NN_OPS_BATCH_TO_SPACE_ND")
def _batch_to_space_nd_shape(op, shapes, values, *, block_size, crops, **_):
    return (_batch_to_space_geometry(op, _check_rank_dims(op, shapes[0]), block_size, crops)[2],)


@kernel("OH_NN_OPS_SPACE_TO_BATCH_ND")
def space_to_batch_nd(x, *, block_shape, paddings):
    """paddings [[top, bottom], [left, right]] as the header says (NOT the runtime's duplicated first row)."""
    op = "SPACE_TO_BATCH_ND"
    _check_rank(op, x)
    (b0, b1), pad, _ = _space_to_batch_geometry(op, x.shape, block_shape, paddings)
    n, h, w, c = x.shape
    hp, wp = h + pad[0] + pad[1], w + pad[2] + pad[3]
    xp = np.pad(x, ((0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0))) if any(pad) else x
    y = xp.reshape(n, hp // b0, b0, wp // b1, b1, c).transpose(2, 4, 0, 1, 3, 5)
    return np.ascontiguousarray(y.reshape(b0 * b1 * n, hp // b0, wp // b1, c))


def _space_to_batch_geometry(op, shape, block_shape, paddings):
    """(block [bH, bW], paddings [top, bottom, left, right], output dims): the padded spatial dims cut into
    bH x bW blocks that become batch entries (UNKNOWN dims stay unknown)."""
    block = _ints(block_shape)
    if len(block) != 2 or min(block) < 1:
        raise invalid(f"{op}: block shape needs 2 values >= 1 [bH, bW], got {block}")
    pad = _ints(paddings) or [0, 0, 0, 0]
    if len(pad) != 4 or min(pad) < 0:
        raise invalid(f"{op}: paddings need 4 values >= 0 [[top, bottom], [left, right]], got {pad}")
    n, h, w, c = shape
    b0, b1 = block
    hp = h + pad[0] + pad[1] if _known(h) else UNKNOWN
    wp = w + pad[2] + pad[3] if _known(w) else UNKNOWN
    if _known(hp) and hp % b0 or _known(wp) and wp % b1:
        raise invalid(f"{op}: padded spatial size [{hp}, {wp}] is not divisible by the block shape {block}")
    out = (b0 * b1 * n if _known(n) else UNKNOWN, hp // b0 if _known(hp) else UNKNOWN,
           wp // b1 if _known(wp) else UNKNOWN, c)
    return block, pad, out


@shape_rule("OH_NN_OPS_SPACE_TO_BATCH_ND")
def _space_to_batch_nd_shape(op, shapes, values, *, block_shape, paddings, **_):
    return (_space_to_batch_geometry(op, _check_rank_dims(op, shapes[0]), block_shape, paddings)[2],)


@kernel("OH_NN_OPS_DEPTH_TO_SPACE")
def depth_to_space(x, *, block_size, mode):
    op = "DEPTH_TO_SPACE"
    _check_rank(op, x)
    b, mode, _ = _depth_to_space_geometry(op, x.shape, block_size, mode)
    n, h, w, c = x.shape
    cc = c // (b * b)
    if mode == 0:  # DCR: channel = (i * b + j) * C' + c'
        y = x.reshape(n, h, w, b, b, cc).transpose(0, 1, 3, 2, 4, 5)
    else:  # CRD: channel = c' * b * b + i * b + j
        y = x.reshape(n, h, w, cc, b, b).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(y.reshape(n, h * b, w * b, cc))


def _depth_to_space_geometry(op, shape, block_size, mode):
    """(block size, mode, output dims [N, H*b, W*b, C/b^2]) after the checks (UNKNOWN dims stay unknown)."""
    b = int(block_size)
    if b < 1:
        raise invalid(f"{op}: block size must be >= 1, got {b}")
    mode = int(mode)
    if mode not in (0, 1):
        raise invalid(f"{op}: mode {mode} is not 0 (DCR) or 1 (CRD)")
    n, h, w, c = shape
    if _known(c) and c % (b * b):
        raise invalid(f"{op}: channels {c} are not divisible by blockSize^2 = {b * b}")
    scaled = tuple(d * b if _known(d) else UNKNOWN for d in (h, w))
    return b, mode, (n, *scaled, c // (b * b) if _known(c) else UNKNOWN)


@shape_rule("OH_NN_OPS_DEPTH_TO_SPACE")
def _depth_to_space_shape(op, shapes, values, *, block_size, mode, **_):
    return (_depth_to_space_geometry(op, _check_rank_dims(op, shapes[0]), block_size, mode)[2],)


@kernel("OH_NN_OPS_SPACE_TO_DEPTH")
def space_to_depth(x, *, block_size):
    op = "SPACE_TO_DEPTH"
    _check_rank(op, x)
    b, _ = _space_to_depth_geometry(op, x.shape, block_size)
    n, h, w, c = x.shape
    y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)  # channel = (i * b + j) * C + c
    return np.ascontiguousarray(y.reshape(n, h // b, w // b, b * b * c))


def _space_to_depth_geometry(op, shape, block_size):
    """(block size, output dims [N, H/b, W/b, b^2*C]) after the checks (UNKNOWN dims stay unknown)."""
    b = int(block_size)
    if b < 2:
        raise invalid(f"{op}: block size must be >= 2, got {b}")
    n, h, w, c = shape
    if _known(h) and h % b or _known(w) and w % b:
        raise invalid(f"{op}: height/width [{h}, {w}] are not divisible by block size {b}")
    return b, (n, *(d // b if _known(d) else UNKNOWN for d in (h, w)), b * b * c if _known(c) else UNKNOWN)


@shape_rule("OH_NN_OPS_SPACE_TO_DEPTH")
def _space_to_depth_shape(op, shapes, values, *, block_size, **_):
    return (_space_to_depth_geometry(op, _check_rank_dims(op, shapes[0]), block_size)[1],)


# ----------------------------------------------------------------------------------------------------------------
# crop


@kernel("OH_NN_OPS_CROP")
def crop(x, shape, *, axis, offset):
    """Output = x[off_i : off_i + size_i] per dim. ``shape`` (1-D) holds the window sizes, either for every dim
    or for the dims from ``axis`` on. Dims before ``axis`` have offset 0; from ``axis`` on the offset is
    offset[0] for all (1 value) or one per dim (rank - axis values); no offset = 0 (MindSpore Crop rule)."""
    op = "CROP"
    shape = np.asarray(shape)
    offs, sizes = _crop_window(op, x.shape, _crop_axis(op, x.ndim, axis), shape.shape, shape.tolist(), offset)
    return np.ascontiguousarray(x[tuple(slice(o, o + s) for o, s in zip(offs, sizes))])


def _crop_axis(op: str, rank: int, axis) -> int:
    ax = int(axis)
    if not -rank <= ax < rank:
        raise invalid(f"{op}: axis {ax} is out of range for a rank-{rank} input")
    return ax % rank


def _crop_window(op: str, x_shape, ax: int, shape_shape, size_values, offset):
    """(offset, size) per dim of the crop window: ``shape`` holds the sizes of every dim or of the dims from
    ``axis`` on (the dims before keep their size and offset 0); offset is one value for all of those dims or one
    per dim. ``size_values`` None: the sizes are unknown (UNKNOWN, as many as ``shape_shape`` says)."""
    rank = len(x_shape)
    if len(shape_shape) != 1:
        raise invalid(f"{op}: shape must be a 1-D tensor, got shape {list(shape_shape)}")
    if size_values is None:
        sizes = _crop_sizes_fit(op, [UNKNOWN] * shape_shape[0], x_shape, ax) if _known(shape_shape[0]) else \
            [UNKNOWN] * rank
    else:
        if any(float(s) != int(s) or int(s) < 0 for s in size_values):
            raise invalid(f"{op}: shape values must be integers >= 0, got {size_values}")
        sizes = _crop_sizes_fit(op, [int(s) for s in size_values], x_shape, ax)
    offs = _ints(offset)
    if len(offs) == 0:
        offs = [0] * (rank - ax)
    elif len(offs) == 1:
        offs = offs * (rank - ax)
    elif len(offs) != rank - ax:
        raise invalid(f"{op}: offset needs 1 or rank - axis = {rank - ax} values, got {offs}")
    offs = [0] * ax + offs
    for i, (o, s) in enumerate(zip(offs, sizes)):
        if o < 0 or _known(s, x_shape[i]) and o + s > x_shape[i]:
            raise invalid(f"{op}: window [{o}, {o + s}) exceeds dimension {i} of size {x_shape[i]}")
    return offs, sizes


def _crop_sizes_fit(op: str, sizes, x_shape, ax: int) -> list[int]:
    rank = len(x_shape)
    if len(sizes) == rank - ax and len(sizes) != rank:
        sizes = list(x_shape[:ax]) + sizes
    if len(sizes) != rank:
        raise invalid(f"{op}: shape needs {rank} (or rank - axis = {rank - ax}) values, got {len(sizes)}")
    return sizes


@shape_rule("OH_NN_OPS_CROP")
def _crop_shape(op, shapes, values, *, axis, offset, **_):
    """The window sizes (the shape input's value; -1 from axis on while it is unknown)."""
    x_shape = shapes[0]
    if x_shape is None:
        return (None,)
    shape_shape = shapes[1] if shapes[1] is not None else (UNKNOWN,)
    size_values = None if values[1] is None else np.asarray(values[1]).tolist()
    _, sizes = _crop_window(op, x_shape, _crop_axis(op, len(x_shape), axis), shape_shape, size_values, offset)
    return (tuple(sizes),)
