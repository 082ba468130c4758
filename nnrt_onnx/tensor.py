"""Tensor descriptions (NN_TensorDesc), quantization parameters (NN_QuantParam) and device tensors (NN_Tensor)."""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Sequence

import numpy as np

from .dtypes import element_size, to_numpy
from .enums import OH_NN_DataType, OH_NN_Format
from .errors import invalid

MAX_DESC_RANK = 10  # OH_NNTensorDesc_SetShape limit
MAX_TENSOR_RANK = 200  # NNTensor limit for model tensors
UINT32_MAX = 0xFFFFFFFF


def check_dims(dims: Sequence[int], dtype: OH_NN_DataType, max_rank: int = MAX_TENSOR_RANK) -> tuple[int, ...]:
    """Dims as the runtime accepts them: each -1 or >= 1, rank <= max_rank, byte size <= UINT32_MAX."""
    dims = tuple(int(d) for d in dims)
    if len(dims) > max_rank:
        raise invalid(f"rank {len(dims)} exceeds the limit of {max_rank}")
    size = element_size(dtype)
    for d in dims:
        if d != -1 and d < 1:
            raise invalid(f"dimension {d} in {list(dims)} is invalid: each dim must be -1 (dynamic) or >= 1")
        size *= abs(d)
        if size > UINT32_MAX:
            raise invalid(f"tensor of dims {list(dims)} exceeds the 4 GiB byte-size limit")
    return dims


def check_dtype(dtype: int) -> OH_NN_DataType:
    try:
        return OH_NN_DataType(int(dtype))
    except (ValueError, TypeError):
        raise invalid(f"data type {dtype!r} is not an OH_NN_DataType (0..12)") from None


@dataclass
class QuantParam:
    """Per-tensor (one entry) or per-channel quantization parameters; ``num_bits`` must all be 8."""

    scales: list[float]
    zero_points: list[int]
    num_bits: list[int]
    axis: int | None = None  # channel axis for per-channel params (NNRt leaves it to the op; we record it)

    def __post_init__(self):
        self.scales = [float(s) for s in self.scales]
        self.zero_points = [int(z) for z in self.zero_points]
        self.num_bits = [int(b) for b in self.num_bits]

    @classmethod
    def per_tensor(cls, scale: float, zero_point: int = 0) -> QuantParam:
        return cls([scale], [zero_point], [8])

    def validate(self) -> None:
        n = len(self.scales)
        if n == 0 or len(self.zero_points) != n or len(self.num_bits) != n:
            raise invalid("quant params need equally many (>= 1) scales, zero points and numBits")
        if any(b != 8 for b in self.num_bits):
            raise invalid(f"numBits must be 8, got {self.num_bits}")

    @property
    def count(self) -> int:
        return len(self.scales)


class TensorDesc:
    """NN_TensorDesc: name, data type, shape and format. Starts as {UNKNOWN, FORMAT_NONE, shape []}."""

    def __init__(self, data_type: int = OH_NN_DataType.OH_NN_UNKNOWN, shape: Sequence[int] = (),
                 format: int = OH_NN_Format.OH_NN_FORMAT_NONE, name: str = ""):
        self.data_type = check_dtype(data_type)
        self.shape = check_dims(shape, self.data_type, MAX_DESC_RANK)
        self.format = OH_NN_Format(format)
        self.name = name

    def set_shape(self, shape: Sequence[int]) -> None:
        if len(shape) == 0:
            raise invalid("shape length must be > 0 (a scalar is a desc whose shape is never set)")
        self.shape = check_dims(shape, self.data_type, MAX_DESC_RANK)

    def set_data_type(self, data_type: int) -> None:
        self.data_type = check_dtype(data_type)

    def set_format(self, fmt: int) -> None:
        try:
            self.format = OH_NN_Format(int(fmt))
        except ValueError:
            raise invalid(f"format {fmt!r} is not an OH_NN_Format (0..3)") from None

    @property
    def is_dynamic(self) -> bool:
        return any(d == -1 for d in self.shape)

    @property
    def element_count(self) -> int:
        """Element count; 0 for a dynamic shape (as the runtime records it), 1 for a scalar."""
        return 0 if self.is_dynamic else prod(self.shape)

    @property
    def byte_size(self) -> int:
        return self.element_count * element_size(self.data_type)

    def copy(self) -> TensorDesc:
        return TensorDesc(self.data_type, self.shape, self.format, self.name)

    def __repr__(self) -> str:
        return f"TensorDesc({self.data_type.name}, {list(self.shape)}, {self.format.name}, name={self.name!r})"


class Tensor:
    """NN_Tensor: a description plus a device buffer (host memory on the CPU device)."""

    def __init__(self, device_id: int, desc: TensorDesc, size: int | None = None):
        needed = desc.byte_size
        if size is None:
            if desc.is_dynamic:
                raise invalid("a tensor with dynamic dims needs an explicit size")
            size = needed
        if size < needed:
            raise invalid(f"size {size} is smaller than the description's byte size {needed}")
        self.device_id = device_id
        self.desc = desc.copy()
        self.size = int(size)
        self.offset = 0
        self._buffer = bytearray(self.size)

    @property
    def buffer(self) -> memoryview:
        """Writable view of the tensor's bytes."""
        return memoryview(self._buffer)

    def as_array(self, shape: Sequence[int] | None = None) -> np.ndarray:
        """The buffer viewed as a numpy array of the desc's dtype (shares memory)."""
        shape = tuple(self.desc.shape if shape is None else shape)
        dtype = to_numpy(self.desc.data_type)
        count = prod(shape)
        return np.frombuffer(self._buffer, dtype=dtype, count=count).reshape(shape)

    def write(self, array: np.ndarray) -> None:
        data = np.ascontiguousarray(array, dtype=to_numpy(self.desc.data_type)).tobytes()
        if len(data) > self.size:
            raise invalid(f"{len(data)} bytes do not fit a tensor of {self.size} bytes")
        self._buffer[: len(data)] = data
