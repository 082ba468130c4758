"""The fused activation (OH_NN_FuseType) that many ops apply to their result: one place for all of them."""
from __future__ import annotations

import numpy as np

from ..enums import OH_NN_FuseType
from ..errors import invalid


def apply_fused_activation(x: np.ndarray, fuse_type: int) -> np.ndarray:
    if fuse_type == OH_NN_FuseType.OH_NN_FUSED_NONE:
        return x
    if fuse_type == OH_NN_FuseType.OH_NN_FUSED_RELU:
        return np.maximum(x, x.dtype.type(0))
    if fuse_type == OH_NN_FuseType.OH_NN_FUSED_RELU6:
        return np.clip(x, x.dtype.type(0), x.dtype.type(6))
    raise invalid(f"fused activation {fuse_type} is not an OH_NN_FuseType (0..2)")
