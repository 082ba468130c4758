"""Export functions for NNRt ops whose ONNX form is more than a reversed generic row.

``@exporter("OH_NN_OPS_CONV2D")`` registers the function converting that op; modules here load on first use.
An op's export function lives in the module of its family (``conv.py``: see ``optable.FAMILIES``); helpers shared
by several families in ``_common.py``.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Callable

from ...enums import OH_NN_OperationType

_EXPORTERS: dict[OH_NN_OperationType, Callable] = {}


def exporter(op_name: str, nchw=False):
    """Register an export function. ``nchw``: the function emits the ONNX NCHW form of an NHWC op, and the
    exporter wraps the op's data input/output in transposes (cancelled by the layout pass where they meet).
    ``nchw`` may also be a predicate ``(node, graph) -> bool`` deciding per node (the function then sees
    ``ctx.node.layout == "NCHW"`` when it was wrapped)."""
    op = OH_NN_OperationType[op_name]

    def register(fn):
        if op in _EXPORTERS and _EXPORTERS[op] is not fn:
            raise RuntimeError(f"{op_name} has two exporters")
        fn.nchw = nchw
        _EXPORTERS[op] = fn
        return fn

    return register


@cache
def exporters() -> dict[OH_NN_OperationType, Callable]:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return dict(_EXPORTERS)
