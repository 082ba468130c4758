"""Named, reversible attribute transforms shared by the importer (forward) and the exporter (inverse).

Each transform is registered with its inverse; tests/test_transforms.py round-trips every pair.
"""
from __future__ import annotations

from typing import Any, Callable

from .issues import UNSUPPORTED_ATTRIBUTE, ConversionIssue

TRANSFORMS: dict[str, Callable[[Any], Any]] = {}
INVERSES: dict[str, str] = {}


def transform(name: str, inverse: str):
    def register(fn):
        if name in TRANSFORMS:
            raise RuntimeError(f"transform {name} declared twice")
        TRANSFORMS[name] = fn
        INVERSES[name] = inverse
        return fn

    return register


def apply(name: str, value: Any) -> Any:
    try:
        fn = TRANSFORMS[name]
    except KeyError:
        raise KeyError(f"unknown transform {name!r}") from None
    return fn(value)


@transform("pads_onnx_to_tblr", inverse="pads_tblr_to_onnx")
def pads_onnx_to_tblr(pads):
    """ONNX 2-D pads [top, left, bottom, right] -> NNRt [top, bottom, left, right]."""
    if len(pads) != 4:
        raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"pads {list(pads)}: only 2-D pads (4 values) map to NNRt")
    top, left, bottom, right = (int(v) for v in pads)
    return [top, bottom, left, right]


@transform("pads_tblr_to_onnx", inverse="pads_onnx_to_tblr")
def pads_tblr_to_onnx(pads):
    top, bottom, left, right = (int(v) for v in pads)
    return [top, left, bottom, right]


@transform("ceil_mode_to_round_mode", inverse="round_mode_to_ceil_mode")
def ceil_mode_to_round_mode(ceil_mode):
    return 1 if int(ceil_mode) else 0


@transform("round_mode_to_ceil_mode", inverse="ceil_mode_to_round_mode")
def round_mode_to_ceil_mode(round_mode):
    return 1 if int(round_mode) else 0


@transform("bool_to_int", inverse="int_to_bool")
def bool_to_int(value):
    return int(bool(value))


@transform("int_to_bool", inverse="bool_to_int")
def int_to_bool(value):
    return bool(int(value))


@transform("identity", inverse="identity")
def identity(value):
    return value
