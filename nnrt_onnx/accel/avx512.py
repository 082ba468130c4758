"""Loading the kernels written in AVX-512 LLVM IR (:mod:`._tile_kernels`, :mod:`._depthwise_vectors`): each
only where it can run -- numba and llvmlite installed, ``NNRT_ONNX_NUMBA`` not 0, an ``avx512f`` host, numba not
compiling for another CPU (``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``: portable caches) -- and once per process
(the first import compiles the module's driver, or loads it from numba's disk cache). A module that numba/LLVM
cannot compile (another version's IR rules) warns once, and its callers take their other paths."""
from __future__ import annotations

import importlib
import os
import threading
import warnings

_LOCK = threading.Lock()
_LOADED: dict[str, object] = {}  # "module.attribute" -> the compiled function, or False where it cannot run
# the modules of kernels in AVX-512 LLVM IR, loaded through this module only (tests/accel checks the list is whole)
MODULES = ("tile_kernels", "pool_vectors", "depthwise_vectors", "shuffle_vectors", "softmax_vectors")


def switched_off() -> bool:
    return os.environ.get("NNRT_ONNX_NUMBA", "").strip() == "0"


def compiled(module: str, attribute: str):
    """``attribute`` of the kernels' module ``module`` (e.g. "_tile_kernels", "driver"), or None where it cannot
    run (see the module doc)."""
    if switched_off():
        return None
    key = f"{module}.{attribute}"
    function = _LOADED.get(key)
    if function is None:
        with _LOCK:
            function = _LOADED.get(key)
            if function is None:
                function = _LOADED[key] = _load(module, attribute) or False
    return function or None


def preload() -> None:
    """Load every module of :data:`MODULES` where it can run, as its first caller would (compiling its kernels or
    loading them from the disk cache)."""
    for module in MODULES:
        compiled(module, "__name__")


def host_runs_avx512() -> bool:
    try:
        import llvmlite.binding as llvm_binding
    except ImportError:
        return False
    try:
        if not llvm_binding.get_host_cpu_features().get("avx512f", False):
            return False
    except Exception:  # a host LLVM cannot describe: no AVX-512 kernels
        return False
    return not (os.environ.get("NUMBA_CPU_NAME") or os.environ.get("NUMBA_CPU_FEATURES"))


def _load(module: str, attribute: str):
    if not host_runs_avx512():
        return None
    try:
        return getattr(importlib.import_module(f"{__package__}.{module}"), attribute)
    except ImportError:
        return None
    except Exception as exc:  # a numba/LLVM that cannot compile this IR: the callers' other paths then
        warnings.warn(f"nnrt_onnx: the AVX-512 kernels of {module} did not compile ({type(exc).__name__}: {exc}); "
                      "their numpy/numba paths run instead", RuntimeWarning, stacklevel=3)
        return None
