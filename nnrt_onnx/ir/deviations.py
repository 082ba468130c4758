"""Readings of the ONNX specification that onnxruntime, ``onnx.reference`` and the specification's own text do not
share, each decided once (docs/deviations.md, "ONNX readings"): a converter that meets one records a
:class:`Deviation` on the graph, so a disagreement of ``check`` (whose float64 referee is ``onnx.reference``) can
name the rule it comes from. Each rule's id is its anchor in docs/deviations.md.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

RULES = {
    "resize-length-resized": (
        "Resize: `length_resized` in the coordinate formulas (align_corners, pytorch_half_pixel, "
        "tf_crop_and_resize, half_pixel_symmetric) is the integer length of the resized axis, as onnxruntime "
        "computes it; onnx.reference uses the fractional scale x input length, which differs when that product is "
        "not an integer"),
    "resize-output-size": (
        "Resize and Upsample with scales: each output length is floor(input length x scale) of the exact "
        "product, as the specification, onnx shape inference and onnx.reference compute it; onnxruntime multiplies "
        "in float32, which can round up past an integer (scale 0.7 on 10 gives 7 there, 6 here)"),
    "resize-nearest-sizes": (
        "Resize nearest to given sizes: the source of each output is picked from x_resized / (out / in) in float64, "
        "as onnx.reference computes it, so that an exact tie (1 / (2 / 7) = 3.5) rounds as nearest_mode says; "
        "float32 arithmetic lands below some ties (3.4999998) and picks the other source, and onnxruntime's does "
        "at a few of them (tf_crop_and_resize takes no scale: float32, in onnxruntime's order)"),
    "resize-kept-length": (
        "Resize and Upsample: an axis whose output length equals its input length is resized by the coordinate "
        "formula all the same, as the specification and onnx.reference compute it: tf_crop_and_resize crops its roi "
        "and extrapolates outside it (roi [-0.2, 1.2] on 3 -> 3: rows 0 and 2 take the extrapolation value), and a "
        "scale other than 1 moves positions (7 x 1.125 -> 7, half_pixel); onnxruntime returns such an axis as it is "
        "where its scale is 1 or no axis changes its length"),
    "convtranspose-same-small-kernel": (
        "ConvTranspose auto_pad SAME_UPPER/SAME_LOWER with a kernel smaller than the stride: the padding the SAME "
        "rule asks for is negative, pads are >= 0, so none is applied and the output is the full (in - 1) * stride "
        "+ kernel, as onnxruntime and onnx shape inference compute it; onnx.reference pads the output to "
        "in * stride"),
}


@dataclass(frozen=True)
class Deviation:
    """One node of a converted model that follows a rule of :data:`RULES` where ``onnx.reference`` differs."""

    rule: str  # a key of RULES (and the anchor in docs/deviations.md)
    node: str  # the ONNX node's name
    op_type: str
    detail: str  # what this node's case is (axes, sizes) and how the two readings differ

    @property
    def text(self) -> str:
        return RULES[self.rule]

    def as_dict(self) -> dict:
        return {**asdict(self), "text": self.text}
