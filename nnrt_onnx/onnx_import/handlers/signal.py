"""Converters of the signal family: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix.

Decisions (also in the mapping rows' notes):

* Accuracy: float32 tensors are computed in float32 (the kernels' MATMUL accumulates in float32), like the other
  decompositions; the only node-suite cases that fail (test_dft_inverse, _opset19) expect float32 FFT round-off
  (1.9e-7 where the exact inverse is 0) beyond the suite's atol 1e-7: a float64 evaluation misses them too.
* DFT is one MATMUL with a constant real matrix: the transformed axis and the real/imaginary pair are flattened
  into the contraction dim (TRANSPOSE around it unless the axis is the last signal axis). The matrix holds
  dft_length zero-padding/truncation, onesided (RFFT), inverse (1/n) and IRFFT (one-sided Hermitian input,
  the imaginary parts of the DC and Nyquist bins ignored, as numpy's irfft). Angles are reduced exactly
  (``k*n mod n_fft``) and the matrix is built in float64, rounded once to the input dtype; the product
  accumulates in float32 (float16 inputs too). Needs a static input shape and constant dft_length/axis.
* STFT: the frames are one GATHER with constant positions, the window (a constant: folded into the DFT matrix;
  else a MUL) and the DFT are one MATMUL.
* HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix need constant inputs and become constants
  (windows computed in float64 with the reference formulas, then rounded to output_datatype; the mel matrix
  with the reference algorithm, on the inputs' own dtypes, so the integer bin edges match it exactly).
"""
from __future__ import annotations

import numpy as np
from onnx import helper

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...ir.graph import Value
from ...ir.issues import DYNAMIC_SHAPE, INVALID_MODEL, UNSUPPORTED_DTYPE, ConversionIssue
from .. import limits
from ..context import NodeContext
from . import converts
from ._common import _binary, _float_dtype, _matmul, _reshape, _transpose
from ._dims import dims_tensor, known, reshape_to


def _scalar_int(ctx: NodeContext, position: int, what: str) -> int:
    array = np.asarray(ctx.constant_input(position, what))
    if array.size != 1:
        raise ConversionIssue(INVALID_MODEL, f"{what} must be a scalar, got shape {list(array.shape)}")
    return int(array.reshape(-1)[0])


def _onnx_dtype(ctx: NodeContext, code: int) -> np.dtype:
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(code)))
        from_numpy(dtype)
    except (KeyError, TypeError, ValueError):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"output_datatype={code} has no NNRt data type") from None
    return dtype


def _set_constant(ctx: NodeContext, name: str, array: np.ndarray) -> None:
    array = np.ascontiguousarray(array).reshape(np.shape(array))
    if 0 in array.shape:
        raise ConversionIssue(INVALID_MODEL, f"{name!r} would be empty (shape {list(array.shape)}): NNRt tensors "
                                             "cannot have a 0 dim")
    ctx.graph.add_value(Value(name, array.dtype, tuple(array.shape), array))


# -- DFT / STFT --------------------------------------------------------------------------------------------------------

def _angles(rows: np.ndarray, cols: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2*pi*(r*c mod length)/length (exact reduction; exact zeros where they belong)."""
    m = np.outer(rows.astype(np.int64), cols.astype(np.int64)) % length
    theta = 2 * np.pi * m / length
    cos, sin = np.cos(theta), np.sin(theta)
    cos[np.abs(cos) < 1e-12] = 0.0
    sin[np.abs(sin) < 1e-12] = 0.0
    return cos, sin


def dft_matrix(n_in: int, c_in: int, length: int, inverse: bool, onesided: bool) -> tuple[np.ndarray, int, int]:
    """The float64 matrix M with ``y.reshape(..., k_out * c_out) = x.reshape(..., n_in * c_in) @ M`` for the ONNX DFT
    of ``n_in`` values (c_in = 1 real, 2 complex) with dft_length ``length``; returns (M, k_out, c_out)."""
    bins = length // 2 + 1 if onesided and not inverse else length  # (counted against the import's budget first)
    limits.require_shape([n_in, c_in, bins, 2], np.float64, "the DFT matrix")
    limits.require_shape([min(n_in, length), bins, 4], np.float64, "the DFT's angle tables")
    if not inverse:
        k_out, c_out, used = (length // 2 + 1 if onesided else length), 2, min(n_in, length)
        matrix = np.zeros((n_in, c_in, k_out, c_out))
        cos, sin = _angles(np.arange(used), np.arange(k_out), length)
        matrix[:used, 0, :, 0], matrix[:used, 0, :, 1] = cos, -sin
        if c_in == 2:
            matrix[:used, 1, :, 0], matrix[:used, 1, :, 1] = sin, cos
    elif not onesided:
        k_out, c_out, used = length, 2, min(n_in, length)
        matrix = np.zeros((n_in, c_in, k_out, c_out))
        cos, sin = _angles(np.arange(used), np.arange(k_out), length)
        matrix[:used, 0, :, 0], matrix[:used, 0, :, 1] = cos / length, sin / length
        if c_in == 2:
            matrix[:used, 1, :, 0], matrix[:used, 1, :, 1] = -sin / length, cos / length
    else:  # IRFFT: bins 0..length//2 of a Hermitian spectrum -> a real signal (numpy's irfft)
        k_out, c_out, used = length, 1, min(n_in, length // 2 + 1)
        weights = np.full(used, 2.0)
        weights[0] = 1.0
        if length % 2 == 0 and used > length // 2:
            weights[length // 2] = 1.0
        matrix = np.zeros((n_in, c_in, k_out, c_out))
        cos, sin = _angles(np.arange(used), np.arange(k_out), length)
        matrix[:used, 0, :, 0] = weights[:, None] * cos / length
        if c_in == 2:
            matrix[:used, 1, :, 0] = -weights[:, None] * sin / length
    return matrix.reshape(n_in * c_in, k_out * c_out), k_out, c_out


def _spectral_product(ctx: NodeContext, x: str, axis: int, matrix: np.ndarray, k_out: int, c_out: int,
                      output: str) -> None:
    """``output`` = x with (axis, last) transformed by ``matrix``: TRANSPOSE, RESHAPE, MATMUL, RESHAPE, TRANSPOSE."""
    value = ctx.value(x)
    shape = list(value.shape)
    rank = len(shape)
    perm = [i for i in range(rank - 1) if i != axis] + [axis, rank - 1]
    moved = _transpose(ctx, x, perm)
    lead = [shape[p] for p in perm[:-2]]
    # (the other dims may be dynamic: read at run time where RESHAPE's one -1 is not enough)
    lead_parts = [dims_tensor(ctx, moved, range(len(lead)))] if lead and not known(lead) else lead
    flat = reshape_to(ctx, moved, (lead_parts or [1]) + [shape[axis] * shape[-1]], f"{ctx.name}.flat")
    product = _matmul(ctx, flat, ctx.constant(matrix.astype(value.dtype), f"{ctx.name}.dft"), f"{ctx.name}.product")
    result_shape = lead + [k_out, c_out]
    inverse = list(np.argsort(perm))
    out_shape = [result_shape[p] for p in inverse]
    ctx.settle(output, out_shape, force=True)
    if inverse == list(range(rank)):
        reshape_to(ctx, product, lead_parts + [k_out, c_out], f"{ctx.name}.spectrum", output=output)
        return
    spectrum = reshape_to(ctx, product, lead_parts + [k_out, c_out], f"{ctx.name}.spectrum")
    ctx.settle(output, out_shape)
    ctx.transpose(spectrum, inverse, output=output)


@converts("DFT")
def dft(ctx: NodeContext) -> None:
    x = ctx.input(0)
    _float_dtype(ctx, x, "input")
    shape = ctx.value(x).shape
    if shape is None:
        raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {x!r} is unknown", tensor=x)
    rank = len(shape)
    inverse, onesided = int(ctx.attr("inverse", 0)), int(ctx.attr("onesided", 0))
    if ctx.opset >= 20:
        axis = _scalar_int(ctx, 2, "axis") if ctx.has_input(2) else -2
    else:
        axis = int(ctx.attr("axis", 1))
    if rank < 2 or not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise ConversionIssue(INVALID_MODEL, f"axis={axis} is out of range for an input of rank {rank} (the last dim "
                                             "holds the real/imaginary parts)")
    axis %= rank
    if shape[-1] not in (1, 2):
        raise ConversionIssue(INVALID_MODEL, f"the last dim of the input must be 1 (real) or 2 (complex), got "
                                             f"{shape[-1]}")
    n_in = shape[axis]
    if n_in < 0:  # (its DFT is a constant matrix; the other dims may stay dynamic)
        raise ConversionIssue(DYNAMIC_SHAPE, f"the transformed axis {axis} of {x!r} must be static, got {list(shape)}",
                              tensor=x, axes=(axis,))
    if ctx.has_input(1):
        length = _scalar_int(ctx, 1, "dft_length")
    else:
        length = 2 * (n_in - 1) if inverse and onesided else n_in
    if length < 1:
        raise ConversionIssue(INVALID_MODEL, f"dft_length={length} must be >= 1")
    matrix, k_out, c_out = dft_matrix(n_in, shape[-1], length, bool(inverse), bool(onesided))
    _spectral_product(ctx, x, axis, matrix, k_out, c_out, ctx.output(0))


@converts("STFT")
def stft(ctx: NodeContext) -> None:
    x = ctx.input(0)
    dtype = _float_dtype(ctx, x, "signal")
    shape = ctx.value(x).shape
    if shape is None or len(shape) != 3 or shape[-1] not in (1, 2):
        raise ConversionIssue(INVALID_MODEL, f"the signal must be [batch, length, 1 or 2], got {shape}")
    batch, length, parts = shape
    if length < 0:  # (its frames are constant positions; the batch may stay dynamic)
        raise ConversionIssue(DYNAMIC_SHAPE, f"the signal length of {x!r} must be static, got {list(shape)}",
                              tensor=x, axes=(1,))
    step = _scalar_int(ctx, 1, "frame_step")
    window = ctx.input(2) if ctx.has_input(2) else None
    if ctx.has_input(3):
        frame = _scalar_int(ctx, 3, "frame_length")
    elif window is not None:
        frame = ctx.static_shape(window, "window")[0]
    else:
        frame = length
    if window is not None and tuple(ctx.static_shape(window, "window")) != (frame,):
        raise ConversionIssue(INVALID_MODEL, f"the window has shape {list(ctx.value(window).shape)}, frame_length is "
                                             f"{frame}")
    onesided = int(ctx.attr("onesided", 1))
    if step < 1 or not 1 <= frame <= length:
        raise ConversionIssue(INVALID_MODEL, f"frame_step={step} / frame_length={frame} do not fit a signal of length "
                                             f"{length}")
    frames = (length - frame) // step + 1
    if frames == 1 and frame == length:
        framed = _reshape(ctx, x, [batch, 1, frame, parts])
    else:
        positions = np.arange(frames)[:, None] * step + np.arange(frame)[None, :]
        framed = ctx.emit_to(OP.OH_NN_OPS_GATHER, [x, ctx.constant(positions.astype(np.int64), f"{ctx.name}.frames"),
                                                  ctx.constant(np.asarray([1], np.int64))],
                       dtype, [batch, frames, frame, parts], f"{ctx.name}.framed")
    matrix, k_out, c_out = dft_matrix(frame, parts, frame, False, bool(onesided))
    window_data = None if window is None else ctx.value(window).data
    if window_data is not None:
        matrix = (matrix.reshape(frame, parts, -1) * window_data.astype(np.float64).reshape(frame, 1, 1)).reshape(
            frame * parts, -1)
    elif window is not None:
        _float_dtype(ctx, window, "window")
        column = _reshape(ctx, window, [frame, 1])
        framed = _binary(ctx, OP.OH_NN_OPS_MUL, framed, column, f"{ctx.name}.windowed")
    flat = _reshape(ctx, framed, [batch, frames, frame * parts])
    product = _matmul(ctx, flat, ctx.constant(matrix.astype(dtype), f"{ctx.name}.dft"), f"{ctx.name}.product")
    ctx.settle(ctx.output(0), [batch, frames, k_out, c_out], force=True)
    _reshape(ctx, product, [batch, frames, k_out, c_out], output=ctx.output(0))


# -- windows, mel weights ----------------------------------------------------------------------------------------------

def window_values(kind: str, size: int, periodic: bool) -> np.ndarray:
    """HannWindow / HammingWindow / BlackmanWindow in float64 (the ONNX reference formulas)."""
    limits.require_shape([size], np.float64, f"the {kind}")
    n = np.arange(size, dtype=np.float64)
    span = size if periodic else size - 1
    with np.errstate(all="ignore"):
        if kind == "HannWindow":
            return np.sin(np.pi * n / span) ** 2
        if kind == "HammingWindow":
            return 25.0 / 46.0 - 21.0 / 46.0 * np.cos(2 * np.pi * n / span)
        return 0.42 - 0.5 * np.cos(2 * np.pi * n / span) + 0.08 * np.cos(4 * np.pi * n / span)


@converts("BlackmanWindow", "HammingWindow", "HannWindow")
def window(ctx: NodeContext) -> None:
    size = _scalar_int(ctx, 0, "the window size")
    periodic = int(ctx.attr("periodic", 1))
    dtype = _onnx_dtype(ctx, ctx.attr("output_datatype", 1))
    if size < 1:
        raise ConversionIssue(INVALID_MODEL, f"window size {size}: NNRt tensors cannot be empty")
    values = window_values(ctx.node.op_type, size, bool(periodic))
    _set_constant(ctx, ctx.output(0), values.astype(dtype))


def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz) -> np.ndarray:
    """The ONNX reference algorithm verbatim (float64 result), on the inputs' own dtypes: the integer bin edges
    depend on the precision of each step."""
    num_spectrogram_bins = dft_length // 2 + 1
    frequency_bins = np.arange(0, num_mel_bins + 2)
    low_frequency_mel = 2595 * np.log1p(lower_edge_hertz / 700) / np.log(10)
    high_frequency_mel = 2595 * np.log1p(upper_edge_hertz / 700) / np.log(10)
    mel_step = (high_frequency_mel - low_frequency_mel) / frequency_bins.shape[0]
    frequency_bins = frequency_bins * mel_step + low_frequency_mel
    frequency_bins = 700 * np.expm1(frequency_bins / 2595 * np.log(10))
    frequency_bins = ((dft_length + 1) * frequency_bins) // sample_rate
    frequency_bins = frequency_bins.astype(int)
    output = np.zeros((int(num_spectrogram_bins), int(num_mel_bins)))
    for i in range(int(num_mel_bins)):
        lower, center, higher = frequency_bins[i], frequency_bins[i + 1], frequency_bins[i + 2]
        low_to_center = center - lower
        if low_to_center == 0:
            output[center, i] = 1
        else:
            for j in range(lower, center + 1):
                output[j, i] = float(j - lower) / float(low_to_center)
        center_to_high = higher - center
        if center_to_high > 0:
            for j in range(center, higher):
                output[j, i] = float(higher - j) / float(center_to_high)
    return output


@converts("MelWeightMatrix")
def mel_weights(ctx: NodeContext) -> None:
    names = ["num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"]
    args = []
    for position, what in enumerate(names):
        array = np.asarray(ctx.constant_input(position, what))
        if array.size != 1:
            raise ConversionIssue(INVALID_MODEL, f"{what} must be a scalar, got shape {list(array.shape)}")
        args.append(array.reshape(()))
    dtype = _onnx_dtype(ctx, ctx.attr("output_datatype", 1))
    bins, dft_length, rate = (int(a) for a in args[:3])
    if bins < 1 or dft_length < 1 or rate < 1:
        raise ConversionIssue(INVALID_MODEL, f"num_mel_bins={bins}, dft_length={dft_length}, sample_rate={rate} "
                                             "must be >= 1")
    try:
        with np.errstate(all="ignore"):
            values = mel_weight_matrix(*args)
    except IndexError:
        raise ConversionIssue(INVALID_MODEL, "the mel bands fall outside the spectrogram bins (upper_edge_hertz "
                                             "beyond sample_rate / 2?)") from None
    _set_constant(ctx, ctx.output(0), values.astype(dtype))
