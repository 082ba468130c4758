"""The native device's fast paths, apart from the reference kernels (``nnrt_onnx.kernels``: plain numpy/BLAS, what
each op computes). Nothing here is needed for a correct result: the runtime uses this package only when it is on
(not with ``NNRT_ONNX_NUMBA=0``, nor for a compilation with the extension config ``nnrt_onnx.reference_plan``; see
``runtime.specialise``), and then only through two seams:

* **specialisers** (``kernels.specialiser``): each op module here registers one for its ops; at plan time the
  runtime offers it what the plan knows of a step (static shapes or None, compute dtypes, constants, keywords) and
  runs the step through the runner it returns -- bound to the planned shapes and constants (``runners``: the
  compiled call alone), or an accelerated kernel picking its path per call -- or keeps the reference kernel (None).
  A bound runner calls its op's accelerated kernel for inputs that are not as planned, and an accelerated
  kernel calls the reference kernel for what it does not take (other dtypes, layouts; and every error, which is
  the reference kernel's to raise). Op modules: :mod:`.conv` (with
  :mod:`.depthwise`, :mod:`.direct`, :mod:`.winograd`, :mod:`.kn2row`, :mod:`.conv_method`), :mod:`.linear`,
  :mod:`.pool`, :mod:`.normalization`, :mod:`.elementwise`, :mod:`.activation`, :mod:`.recurrent`, :mod:`.shape`.
* **fusion passes** (:mod:`.fusions`), run by the pass manager on the plan: steps merged into one whose kernel is
  the accelerated kernel of its op (``post``, ``nchw``, residual addends: keywords only these kernels take).

What the fast paths may differ from the reference by is one table, :mod:`.contract`. The machinery under them:
:mod:`.numba_loops` (the numba loops; their builders in :mod:`.loops`), :mod:`.tiles` / :mod:`.tile_kernels` /
:mod:`.tile_layout` (register-tile GEMMs in AVX-512 LLVM IR), :mod:`.gemm` (products into a preallocated output),
:mod:`.finish` (bias, fused operations and activation on a block in cache), :mod:`.avx512` / :mod:`.vector_ir`
and the ``*_vectors`` modules (depthwise, pooling, softmax and channel-shuffle loops in AVX-512 vectors),
:mod:`.workspace` (scratch arrays, packed weights), :mod:`.numba_cache`."""
from __future__ import annotations

import importlib

# the modules registering specialisers (imported by :func:`load`)
_OP_MODULES = ("conv", "linear", "pool", "normalization", "elementwise", "activation", "recurrent", "shape")


def load() -> None:
    """Import the op modules, registering their specialisers (idempotent)."""
    for name in _OP_MODULES:
        importlib.import_module(f"{__name__}.{name}")


def preload() -> int:
    """What the plans of a process's models would load one by one, up front: the op modules and fusion passes, every
    compiled loop's module (:func:`.numba_loops.preload`) and AVX-512 kernel module where it can run
    (:func:`.avx512.preload`; their kernels, declared with signatures, compile here if the disk cache lacks them),
    then every kernel the disk cache holds compiled for this machine (:func:`.numba_cache.load_cached`: loaded,
    never compiled). For a process whose forks check models (the sweep's fork server). How many cached entries were
    loaded."""
    load()
    fusion_passes()
    from . import avx512, numba_loops
    from .numba_cache import load_cached

    numba_loops.preload()
    avx512.preload()
    return load_cached()


def fusion_passes():
    """The plan's fusion passes, in order (:mod:`.fusions`)."""
    from .fusions import PASSES

    return PASSES


__all__ = ["fusion_passes", "load", "preload"]
