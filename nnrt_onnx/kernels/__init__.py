"""Native numpy kernels, one plain function per NNRt operation, registered with ``@kernel``.

A kernel takes the op's input arrays positionally (in the header's order) and its parameters as
keyword-only arguments named exactly like the ``to`` keywords of the op's entry in ``mappings/ops/``;
the executor fills every keyword from the entry's ``[defaults]`` when the model omits the parameter.
The fused activation keyword (``params.fuse`` in the entry) is *not* passed: the executor applies it.
A kernel that declares a keyword-only ``ctx`` also receives an :class:`OpContext`.
It returns one array, or a tuple of arrays for multi-output ops.

Each kernel lives in the module of its op's family (``<family>.py``, see ``optable.FAMILIES``); private helpers
shared by several families are in ``_common.py``. :func:`kernels` imports every module of this package.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable

import numpy as np

from ..enums import OH_NN_OperationType

_REGISTRY: dict[OH_NN_OperationType, Callable[..., Any]] = {}


def kernel(op_name: str):
    """Register the decorated function as the kernel of ``op_name`` (e.g. ``"OH_NN_OPS_CONV2D"``)."""
    op = OH_NN_OperationType[op_name]

    def register(fn):
        if op in _REGISTRY and _REGISTRY[op] is not fn:
            raise RuntimeError(f"{op_name} already has kernel {_REGISTRY[op].__module__}.{_REGISTRY[op].__name__}")
        _REGISTRY[op] = fn
        return fn

    return register


@dataclass(frozen=True)
class OpContext:
    """What a kernel may need beyond its inputs: the declared operands of its node."""

    op: OH_NN_OperationType
    input_dtypes: tuple[np.dtype, ...]  # declared (storage) dtypes of the inputs
    output_dtypes: tuple[np.dtype, ...]  # declared dtypes of the outputs (float16 under EnableFloat16)
    output_shapes: tuple[tuple[int, ...], ...]  # declared dims, -1 where dynamic
    input_quant: tuple[Any, ...]  # QuantParam or None per input
    output_quant: tuple[Any, ...]  # QuantParam or None per output


@cache
def kernels() -> dict[OH_NN_OperationType, Callable[..., Any]]:
    """Import every module of this package once and return the registry."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return dict(_REGISTRY)


def get_kernel(op: OH_NN_OperationType) -> Callable[..., Any] | None:
    return kernels().get(OH_NN_OperationType(op))


def wants_context(fn: Callable[..., Any]) -> bool:
    return "ctx" in inspect.signature(fn).parameters
