"""The switch of the fast paths, and plan steps bound to their runners.

**The switch** (:func:`fast_paths_on`): the native plan uses ``nnrt_onnx.accel`` -- its fusion passes and runners
-- unless the environment variable ``NNRT_ONNX_NUMBA`` is ``0`` (then the package is not even imported: no numba,
no compiled code) or the compilation's extension config ``nnrt_onnx.reference_plan`` is ``1``
(``Compilation.add_extension_config("nnrt_onnx.reference_plan", b"1")``: this compilation alone gets the
*reference plan*, every operation its own step run by its reference kernel; ``0`` leaves the default).

**Runners** (:func:`specialise_steps`): once the plan is final (fusions, assembled concatenations, arena slots),
each step whose op has a specialiser (``kernels.specialiser``, registered by ``accel``) is offered what the plan
knows before any run -- its inputs' static shapes, the dtypes its kernel receives and constant values, its
keywords -- and runs through the runner it returns instead of its kernel: the compiled call alone, without
re-deriving the kernel's path, checks and tables in every run (docs/performance.md, eighth round), or an
accelerated kernel that picks its path per call where shapes are dynamic. The specialisers see the plan's BLAS
thread count, as the kernels do in its runs."""
from __future__ import annotations

import functools
import os

from ..errors import invalid
from ..kernels import Planned, get_specialiser
from .threads import blas_threads

REFERENCE_PLAN_EXTENSION = "nnrt_onnx.reference_plan"
NUMBA_ENV = "NNRT_ONNX_NUMBA"


def fast_paths_on(extensions=None) -> bool:
    """Whether a plan compiled with ``extensions`` (the compilation's extension configs) uses the fast paths."""
    raw = (extensions or {}).get(REFERENCE_PLAN_EXTENSION)
    text = "0" if raw is None else (raw.decode("ascii", "replace") if isinstance(raw, bytes) else str(raw)).strip()
    if text not in ("0", "1"):
        raise invalid(f"extension config {REFERENCE_PLAN_EXTENSION} must be b'1' (the reference plan) or b'0', "
                      f"got {raw!r}")
    return text == "0" and os.environ.get(NUMBA_ENV, "").strip() != "0"


def preload_fast_paths() -> int:
    """Where the fast paths are on, load them up front -- their modules and every compiled kernel the disk cache
    holds (``accel.preload``) -- for a process whose forks then run models; how many cached kernels were loaded."""
    if not fast_paths_on():
        return 0
    from .. import accel

    return accel.preload()


def specialise_steps(prepared, steps) -> None:
    """Give each step of ``steps`` (of the plan ``prepared``) its runner where its op's specialiser returns one."""
    float_dtype = prepared.compute_dtype  # (what a dequantized input reaches the kernel as: see runtime.cpu)
    with blas_threads(prepared.threads):
        for step in steps:
            if step.view_shape is not None or step.ufunc is not None:
                continue
            specialise = get_specialiser(step.op)
            if specialise is None:
                continue
            dequantized = step.dequantize_inputs or (None,) * len(step.inputs)
            inputs = [Planned(prepared.static[i], float_dtype[i], prepared.constants.get(i)) if q is None else
                      Planned(prepared.static[i], step.dequantize_dtype or prepared.dequantized_dtype, None)
                      for i, q in zip(step.inputs, dequantized)]
            general = functools.partial(step.fn, **step.kwargs)
            runner = specialise(step.op.name[len("OH_NN_OPS_"):], general, inputs, step.kwargs, step.addends)
            if runner is not None and runner is not general:
                step.fn, step.kwargs = runner, {}


__all__ = ["NUMBA_ENV", "REFERENCE_PLAN_EXTENSION", "fast_paths_on", "preload_fast_paths", "specialise_steps"]
