"""Conversion functions for ONNX ops that need more than the generic 1:1 converter.

A mapping row names its handler (``handler = "conv"``); the function of that name registered here with
``@handler`` converts the node. Modules of this package are imported on first use.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Callable

_HANDLERS: dict[str, Callable] = {}


def handler(name: str):
    def register(fn):
        if name in _HANDLERS and _HANDLERS[name] is not fn:
            raise RuntimeError(f"handler {name} registered twice")
        _HANDLERS[name] = fn
        return fn

    return register


@cache
def handlers() -> dict[str, Callable]:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return dict(_HANDLERS)


def get_handler(name: str) -> Callable:
    try:
        return handlers()[name]
    except KeyError:
        raise KeyError(f"mapping row names unknown handler {name!r}") from None
