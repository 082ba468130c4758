"""OH_NN_DataType <-> numpy dtype, element sizes, and the quantization formula."""
from __future__ import annotations

import numpy as np

from .enums import OH_NN_DataType as DT

NUMPY_DTYPES: dict[DT, np.dtype] = {
    DT.OH_NN_BOOL: np.dtype(np.bool_),
    DT.OH_NN_INT8: np.dtype(np.int8),
    DT.OH_NN_INT16: np.dtype(np.int16),
    DT.OH_NN_INT32: np.dtype(np.int32),
    DT.OH_NN_INT64: np.dtype(np.int64),
    DT.OH_NN_UINT8: np.dtype(np.uint8),
    DT.OH_NN_UINT16: np.dtype(np.uint16),
    DT.OH_NN_UINT32: np.dtype(np.uint32),
    DT.OH_NN_UINT64: np.dtype(np.uint64),
    DT.OH_NN_FLOAT16: np.dtype(np.float16),
    DT.OH_NN_FLOAT32: np.dtype(np.float32),
    DT.OH_NN_FLOAT64: np.dtype(np.float64),
}
_BY_NUMPY = {v: k for k, v in NUMPY_DTYPES.items()}


def element_size(dtype: DT | int) -> int:
    """Bytes per element; OH_NN_UNKNOWN has size 0 (so such a tensor can never hold data)."""
    np_dtype = NUMPY_DTYPES.get(DT(dtype))
    return 0 if np_dtype is None else np_dtype.itemsize


def to_numpy(dtype: DT | int) -> np.dtype:
    try:
        return NUMPY_DTYPES[DT(dtype)]
    except KeyError:
        raise ValueError(f"{DT(dtype).name} has no numpy equivalent") from None


def from_numpy(dtype) -> DT:
    try:
        return _BY_NUMPY[np.dtype(dtype)]
    except KeyError:
        raise ValueError(f"numpy dtype {np.dtype(dtype)} has no OH_NN_DataType") from None


def quant_range(np_dtype: np.dtype, num_bits: int = 8) -> tuple[int, int]:
    """[qmin, qmax] of a quantized integer type with ``num_bits`` bits."""
    if np.issubdtype(np_dtype, np.signedinteger):
        return -(1 << (num_bits - 1)), (1 << (num_bits - 1)) - 1
    return 0, (1 << num_bits) - 1


def _broadcast_params(scales, zero_points, ndim: int, axis: int | None):
    scale = np.asarray(scales, dtype=np.float64)
    zero = np.asarray(zero_points, dtype=np.float64)
    if scale.size == 1 or axis is None:
        return scale.reshape(()) if scale.size == 1 else scale, zero.reshape(()) if zero.size == 1 else zero
    shape = [1] * ndim
    shape[axis] = scale.size
    return scale.reshape(shape), zero.reshape(shape)


def quantize(real: np.ndarray, np_dtype, scales, zero_points, num_bits: int = 8, axis: int | None = None) -> np.ndarray:
    """q = clamp(round(r / s + z), qmin, qmax), the header's formula; round half to even (numpy's rint)."""
    np_dtype = np.dtype(np_dtype)
    scale, zero = _broadcast_params(scales, zero_points, np.ndim(real), axis)
    qmin, qmax = quant_range(np_dtype, num_bits)
    q = np.rint(np.asarray(real, dtype=np.float64) / scale + zero)
    return np.clip(q, qmin, qmax).astype(np_dtype)


def dequantize(q: np.ndarray, scales, zero_points, axis: int | None = None, out_dtype=np.float32) -> np.ndarray:
    """r = (q - z) * s."""
    scale, zero = _broadcast_params(scales, zero_points, np.ndim(q), axis)
    return ((np.asarray(q, dtype=np.float64) - zero) * scale).astype(out_dtype)
