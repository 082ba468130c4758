"""Conversion functions for ONNX ops, registered by the ONNX op types (and opset rows) they convert.

``@converts("Conv")`` makes the decorated function the converter of every mapping row of ``Conv``;
``@converts("Add", since=1)`` of the one row starting at opset 1. A row with no registered function goes through
the generic converter (one NNRt op, inputs and attributes mapped by the row). Modules of this package are named
after the op families (``FAMILIES`` of the op table; the private ``_common`` holds the helpers several families
share) and imported on first use; tests/onnx_import checks both ways that every registration has its row and
every decomposition row its function.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Callable

Key = tuple[str, "int | None"]  # (ONNX op type, the since-version of one row, or None for all its rows)
_HANDLERS: dict[Key, Callable] = {}


def converts(*op_types: str, since: int | None = None):
    """Register the decorated function as the converter of ``op_types`` (all their rows, or the row ``since``)."""
    def register(fn):
        for op_type in op_types:
            key = (op_type, since)
            if key in _HANDLERS and _HANDLERS[key] is not fn:
                raise RuntimeError(f"{op_type} (since {since}) has two converters: {_HANDLERS[key].__name__} and "
                                   f"{fn.__name__}")
            _HANDLERS[key] = fn
        return fn

    return register


@cache
def registered() -> dict[Key, Callable]:
    """Every registration, the modules of this package imported."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return dict(_HANDLERS)


def handler_for(row) -> Callable:
    """The function converting nodes of this mapping row: its registered converter, else the generic one."""
    table = registered()
    found = table.get((row.op_type, row.since)) or table.get((row.op_type, None))
    if found is not None:
        return found
    from ..generic import convert_generic

    return convert_generic
