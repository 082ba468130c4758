"""The named attribute transforms of nnrt_onnx/ir/transforms.py (usable by mapping rows as ``transform = "name"``):
each against a hand-written expectation from the two conventions it converts, and each paired with its inverse.

ONNX 2-D pads are ``[x1_begin, x2_begin, x1_end, x2_end]`` = [top, left, bottom, right] (onnx Conv doc); NNRt's pad
list is [top, bottom, left, right] (the header's padList); ONNX ceil_mode 1 is NNRt's round mode 1 (ceil).
"""
from __future__ import annotations

import pytest

from nnrt_onnx.ir.issues import ConversionIssue
from nnrt_onnx.ir.transforms import INVERSES, TRANSFORMS, apply

HAND = {
    "pads_onnx_to_tblr": [([1, 2, 3, 4], [1, 3, 2, 4]), ([0, 5, 0, 7], [0, 0, 5, 7])],
    "pads_tblr_to_onnx": [([1, 3, 2, 4], [1, 2, 3, 4]), ([0, 0, 5, 7], [0, 5, 0, 7])],
    "ceil_mode_to_round_mode": [(0, 0), (1, 1)],
    "round_mode_to_ceil_mode": [(0, 0), (1, 1)],
    "bool_to_int": [(True, 1), (False, 0)],
    "int_to_bool": [(1, True), (0, False)],
    "identity": [(3, 3), ([1, 2], [1, 2])],
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_transform_by_hand(name):
    for value, want in HAND[name]:
        assert apply(name, value) == want


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_every_transform_has_an_inverse(name):
    inverse = INVERSES[name]
    assert inverse in TRANSFORMS and INVERSES[inverse] == name
    for value, want in HAND.get(name, []):
        assert apply(inverse, want) == value


def test_pads_with_other_than_4_values_are_rejected():
    with pytest.raises(ConversionIssue):
        apply("pads_onnx_to_tblr", [1, 2])


def test_unknown_transform_is_named():
    with pytest.raises(KeyError, match="no_such"):
        apply("no_such", 1)
