"""What the tests of the fast paths share: the skip mark for runs without them, and the reference plan's switch."""
from __future__ import annotations

import os

import pytest

FAST_PATHS_OFF = os.environ.get("NNRT_ONNX_NUMBA", "").strip() == "0"

requires_fast_paths = pytest.mark.skipif(
    FAST_PATHS_OFF, reason="tests of the fast paths (nnrt_onnx.accel): NNRT_ONNX_NUMBA=0 runs the reference plan only")


def _compile(model, extensions):
    from nnrt_onnx import Compilation, Executor

    compilation = Compilation(model)
    for name, value in extensions.items():
        compilation.add_extension_config(name, value)
    compilation.build()
    return Executor(compilation)


def reference_executor(model, **extensions):
    """``model`` compiled to the reference plan (the extension config ``nnrt_onnx.reference_plan``)."""
    from nnrt_onnx.runtime.specialise import REFERENCE_PLAN_EXTENSION

    return _compile(model, {**extensions, REFERENCE_PLAN_EXTENSION: b"1"})


def unfused_executor(model, **extensions):
    """``model`` compiled with the fast paths but without their fusion passes: every operation its own step, run by
    its runner or accelerated kernel (what a fused step must give bit for bit where the contract says EXACT)."""
    from unittest import mock

    import nnrt_onnx.accel

    with mock.patch.object(nnrt_onnx.accel, "fusion_passes", lambda: ()):
        return _compile(model, extensions)


def unbound_executor(model, **extensions):
    """``model`` compiled with the fast paths but no step bound to a runner of its planned shapes: the
    accelerated kernels picking their path per call (what a bound runner must give bit for bit)."""
    from unittest import mock

    from nnrt_onnx.accel import conv, linear, pool

    with mock.patch.object(conv, "_bound_runner", lambda *a, **k: None), \
            mock.patch.object(pool, "_bound_runner", lambda *a, **k: None), \
            mock.patch.object(linear, "_bound_runner", lambda *a, **k: None):
        return _compile(model, extensions)


_UNFUSED: dict[int, object] = {}


def unfused_run(ex, inputs):
    """The outputs of ``ex``'s model (same thread count) on the plan without fusions (:func:`unfused_executor`)."""
    from nnrt_onnx.runtime.threads import THREADS_EXTENSION

    prepared = ex.prepared
    plain = _UNFUSED.get(id(prepared))
    if plain is None or plain[0] is not prepared:
        plain = _UNFUSED[id(prepared)] = (prepared, unfused_executor(
            prepared.model, **{THREADS_EXTENSION: str(prepared.threads).encode()}))
    return plain[1].run_arrays(inputs)
