"""Devices: the interface a backend implements, and the registry.

A backend registers a :class:`Device`; compilation asks it which operations it supports and to
``prepare`` a finished model into a :class:`PreparedModel` that executors run. A prepared model may also capture
intermediate tensors while it runs (``supports_capture``; the parity check compares them layer by layer).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
import threading
from typing import TYPE_CHECKING, Any, Callable, MutableMapping, Sequence

from ..enums import OH_NN_DeviceType, OH_NN_OperationType, OH_NN_PerformanceMode, OH_NN_Priority
from ..errors import NNRtError, invalid, unsupported

if TYPE_CHECKING:  # annotations only: importing the registry needs no numpy (a CLI's --help never loads it)
    import numpy as np


@dataclass
class CompileOptions:
    performance_mode: OH_NN_PerformanceMode = OH_NN_PerformanceMode.OH_NN_PERFORMANCE_NONE
    priority: OH_NN_Priority = OH_NN_Priority.OH_NN_PRIORITY_NONE
    float16: bool = False
    extensions: dict[str, bytes] = field(default_factory=dict)


class PreparedModel(ABC):
    """A model compiled for one device."""

    supports_capture: bool = False  # whether run() can capture intermediate tensors (``capture``)

    @abstractmethod
    def run(self, inputs: Sequence[np.ndarray], capture: MutableMapping[int, np.ndarray | None] | None = None
            ) -> list[np.ndarray]:
        """Run once; inputs and outputs in model order, with the declared dtypes.

        ``capture`` (optional) maps the indices of the tensors to keep to anything (None); each entry is set to that
        tensor's value (declared dtype) once it is known -- intermediates included. A prepared model without
        ``supports_capture`` raises :func:`cannot_capture` when given one.
        """

    def input_dim_ranges(self, index: int) -> tuple[list[int], list[int]]:
        """(min dims, max dims) the device accepts for input ``index``; default: fixed dims or 1..2**31-1."""
        dims = self.model.tensors[self.model.inputs[index]].dims
        return ([1 if d == -1 else d for d in dims], [0x7FFFFFFF if d == -1 else d for d in dims])


class Device(ABC):
    """A compute device. ``id`` must be stable across processes."""

    id: int
    name: str
    device_type: OH_NN_DeviceType
    supports_float16: bool = True
    performance_modes: frozenset = frozenset(OH_NN_PerformanceMode)
    priorities: frozenset = frozenset(OH_NN_Priority)

    @abstractmethod
    def supports(self, op: OH_NN_OperationType) -> bool:
        """Whether the device can run operations of this type."""

    @abstractmethod
    def prepare(self, model: Any, options: CompileOptions) -> PreparedModel:
        """Compile a finished model (raises NNRtError)."""


def cannot_capture(device_name: str) -> NNRtError:
    """The error (OH_NN_UNSUPPORTED) of a device asked to capture intermediate tensors it cannot capture."""
    return unsupported(f"{device_name} cannot capture intermediate tensors: it runs the model as a whole (capture "
                       f"them on a device that supports it, such as the native CPU device)")


_DEVICES: dict[int, Device] = {}
# the built-in devices' modules, imported on the registry's first use (``import nnrt_onnx`` stays light: numpy,
# the kernels and onnxruntime load only when a device is wanted); each registers its device
_LOADERS: list[Callable[[], object]] = []
_LOADING = threading.RLock()


def register_device_loader(loader: Callable[[], object]) -> None:
    """Have ``loader`` (which registers devices) called before the registry is next used."""
    with _LOADING:
        _LOADERS.append(loader)


def _load_devices() -> None:
    with _LOADING:
        while _LOADERS:
            _LOADERS.pop(0)()


def register_device(device: Device) -> None:
    if _LOADERS:
        _load_devices()
    if device.id in _DEVICES and _DEVICES[device.id] is not device:
        raise ValueError(f"device id {device.id} is already taken by {_DEVICES[device.id].name}")
    _DEVICES[device.id] = device


def all_device_ids() -> list[int]:
    if _LOADERS:
        _load_devices()
    return sorted(_DEVICES)


def get_device(device_id: int) -> Device:
    """The device with this id; 0 means the first device, as in NNRt."""
    if _LOADERS:
        _load_devices()
    if device_id == 0 and _DEVICES:
        return _DEVICES[all_device_ids()[0]]
    try:
        return _DEVICES[int(device_id)]
    except (KeyError, TypeError, ValueError):
        raise invalid(f"no device with id {device_id!r} (available: {all_device_ids()})") from None

