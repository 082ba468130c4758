"""Calling a kernel, written once for the native engine (runtime.cpu) and constant folding (ir.fold): look up the
kernel, default the parameters from the op table, pop the fused activation, build an OpContext when the kernel
wants one (:func:`bind`), then call it under ``np.errstate``, make the result a tuple of arrays and apply the fused
activation (:meth:`BoundKernel.__call__`, or :func:`call` for a one-off). Also the fused activation itself
(OH_NN_FuseType), one place for every op that has one. (De)quantization stays with the native engine."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..enums import OH_NN_FuseType, OH_NN_OperationType
from ..errors import invalid
from ..kernels import OpContext, accepts_out, applies_activation, get_kernel, wants_context
from ..optable import op_spec


def apply_fused_activation(x: np.ndarray, fuse_type: int) -> np.ndarray:
    """The fused activation of ``x`` as a new array."""
    if fuse_type == OH_NN_FuseType.OH_NN_FUSED_NONE:
        return x
    if fuse_type == OH_NN_FuseType.OH_NN_FUSED_RELU:
        return np.maximum(x, x.dtype.type(0))
    if fuse_type == OH_NN_FuseType.OH_NN_FUSED_RELU6:
        return np.clip(x, x.dtype.type(0), x.dtype.type(6))
    raise invalid(f"fused activation {fuse_type} is not an OH_NN_FuseType (0..2)")


def apply_fused_activation_inplace(x: np.ndarray, fuse_type: int) -> np.ndarray:
    """:func:`apply_fused_activation` written into ``x`` itself (the caller owns ``x``, a writeable array)."""
    if fuse_type == OH_NN_FuseType.OH_NN_FUSED_NONE:
        return x
    if fuse_type == OH_NN_FuseType.OH_NN_FUSED_RELU:
        return np.maximum(x, x.dtype.type(0), out=x)
    if fuse_type == OH_NN_FuseType.OH_NN_FUSED_RELU6:
        return np.clip(x, x.dtype.type(0), x.dtype.type(6), out=x)
    raise invalid(f"fused activation {fuse_type} is not an OH_NN_FuseType (0..2)")


@dataclass(frozen=True)
class BoundKernel:
    """An operation bound to its kernel: call it with the input arrays to get its outputs, a tuple of arrays, the
    fused activation (``fuse``, an OH_NN_FuseType) applied to the first. Kernel errors propagate unchanged."""

    op: OH_NN_OperationType
    kernel: Callable[..., Any]
    kwargs: dict[str, Any]  # every kernel keyword: parameters (op table defaults filled in) and ``ctx`` when wanted
    fuse: int
    accepts_out: bool = False  # the kernel takes ``out=``: an array of its first output's shape and dtype to fill

    def __call__(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        with np.errstate(all="ignore"):  # inf/nan results are values (as in onnxruntime), not warnings
            result = self.kernel(*inputs, **self.kwargs)
        results = tuple(np.asarray(r) for r in (result if isinstance(result, tuple) else (result,)))
        if self.fuse and results:
            results = (apply_fused_activation(results[0], self.fuse),) + results[1:]
        return results


def bind(op: OH_NN_OperationType, values: Mapping[str, Any], input_dtypes: Sequence[Any],
         output_dtypes: Sequence[Any], output_shapes: Sequence[Sequence[int]], input_quant: Sequence[Any] | None = None,
         output_quant: Sequence[Any] | None = None) -> BoundKernel | None:
    """``op`` with its decoded parameter ``values`` (by kernel keyword) bound to its kernel; None when there is no
    kernel for it. The dtypes, output shapes and quant params (None: none) go to the OpContext of kernels that take
    one."""
    fn = get_kernel(op)
    if fn is None:
        return None
    spec = op_spec(op)
    arguments = {**spec.defaults, **values}
    fuse = int(arguments.pop(spec.fuse, 0)) if spec.fuse else 0
    if fuse and applies_activation(fn):  # the kernel applies it itself, block by block while in cache
        if fuse not in (OH_NN_FuseType.OH_NN_FUSED_RELU, OH_NN_FuseType.OH_NN_FUSED_RELU6):
            raise invalid(f"fused activation {fuse} is not an OH_NN_FuseType (0..2)")
        arguments["activation"] = fuse
        fuse = 0
    if wants_context(fn):
        arguments["ctx"] = OpContext(
            op=op,
            input_dtypes=tuple(input_dtypes),
            output_dtypes=tuple(output_dtypes),
            output_shapes=tuple(tuple(s) for s in output_shapes),
            input_quant=tuple(input_quant) if input_quant is not None else tuple(None for _ in input_dtypes),
            output_quant=tuple(output_quant) if output_quant is not None else tuple(None for _ in output_dtypes),
        )
    return BoundKernel(op, fn, arguments, fuse, accepts_out(fn))


def call(op: OH_NN_OperationType, values: Mapping[str, Any], inputs: Sequence[np.ndarray], input_dtypes: Sequence[Any],
         output_dtypes: Sequence[Any], output_shapes: Sequence[Sequence[int]]) -> tuple[np.ndarray, ...] | None:
    """Run ``op`` once on ``inputs`` (no quant params): :func:`bind`, then call; None when there is no kernel."""
    bound = bind(op, values, input_dtypes, output_dtypes, output_shapes)
    return None if bound is None else bound(*inputs)


__all__ = ["BoundKernel", "apply_fused_activation", "apply_fused_activation_inplace", "bind", "call"]
