"""The compiled kernels' disk cache: every numba function of :mod:`nnrt_onnx.accel` is declared with :func:`jit`
(numba's ``njit`` with this cache), so a process loads what an earlier one compiled instead of compiling it again.

numba's own cache keys a function by its bytecode *and the pickled values of its closure*: the loops used to be
closures over other compiled functions, whose pickles differ in every process, so every process missed the cache,
compiled again (about 20 s for a mid-size CNN) and added files next to the old ones. The kernels are now
module-level functions (no closure): their keys are the same in every process, one entry per signature.

Where (the first that works, checked once per process; docs/performance.md, "Start-up"):

1. ``NNRT_ONNX_CACHE_DIR``, when set;
2. else the installed package's own ``accel/__pycache__/kernels`` (numba's in-tree place), when writable;
3. else the per-user cache directory: ``$XDG_CACHE_HOME/nnrt_onnx/kernels`` (``~/.cache/nnrt_onnx/kernels``;
   ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows) -- a read-only install, or an unwritable
   ``NNRT_ONNX_CACHE_DIR``;
4. else no disk cache (each process compiles what it uses).

Each place holds one directory per *key* -- a hash of this package's version, the kernels' sources (``accel/`` and
the constants they read from ``kernels/elementwise.py``), and the Python, numba, llvmlite and numpy versions -- so
an upgrade or an edited kernel never loads stale code; numba itself adds the CPU to each entry's key. Bounded:
within a key, one entry per kernel and signature (a fixed set); across keys, the :data:`KEEP_KEYS` most recently
used directories are kept and older ones deleted when a new key is first used. Concurrent processes: numba writes
every file to a temporary name and renames it, and an entry's save (which rewrites the kernel's index) runs under
an exclusive file lock, so two processes compiling at once both succeed and neither loses or mixes up the other's
entries; a failed save (a full disk, a directory removed meanwhile) only means the next process compiles again.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

ENV_CACHE_DIR = "NNRT_ONNX_CACHE_DIR"
KEEP_KEYS = 3  # key directories kept per cache place (the current one and the two used before it)
_PACKAGE = Path(__file__).resolve().parent.parent  # nnrt_onnx/
# the sources the compiled code depends on: the fast paths, and the ERF coefficients the loops freeze in
_KEY_SOURCES = ("accel", "kernels/elementwise.py")


def user_cache_root() -> Path:
    """The platform's per-user cache directory for nnrt_onnx (not created here)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "nnrt_onnx" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "nnrt_onnx"
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "nnrt_onnx"


def candidate_roots() -> list[Path]:
    """Where the kernels' cache may go, in order of preference (see the module doc)."""
    override = os.environ.get(ENV_CACHE_DIR, "").strip()
    first = Path(override).expanduser() if override else _PACKAGE / "accel" / "__pycache__"
    return [first / "kernels", user_cache_root() / "kernels"]


@functools.lru_cache(maxsize=1)
def cache_key() -> str:
    """The key of this installation's compiled code: version, kernel sources, and the compiler stack."""
    digest = hashlib.sha256()
    versions = [sys.version, _package_version()]
    for name in ("numba", "llvmlite", "numpy"):
        module = sys.modules.get(name)
        if module is None:
            module = __import__(name)
        versions.append(f"{name} {getattr(module, '__version__', '?')}")
    digest.update("\n".join(versions).encode())
    for source in _KEY_SOURCES:
        path = _PACKAGE / source
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(str(file.relative_to(_PACKAGE)).encode() + b"\0")
            digest.update(file.read_bytes())
    return f"{_package_version()}-{digest.hexdigest()[:16]}"


def _package_version() -> str:
    # looked up, not imported: nnrt_onnx's __init__ stands above this package (and has run before any kernel)
    return str(getattr(sys.modules.get(__name__.split(".")[0]), "__version__", "0"))


@functools.lru_cache(maxsize=1)
def cache_dir() -> Path | None:
    """This process's key directory (created, writable), or None where no place works."""
    for root in candidate_roots():
        directory = _usable(root / cache_key())
        if directory is not None:
            return directory
    return None


def _usable(directory: Path) -> Path | None:
    new = not directory.is_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=directory).close()
    except OSError:
        return None
    if new:
        prune(directory.parent, keep=directory.name)
    else:
        with contextlib.suppress(OSError):
            os.utime(directory)  # most recently used: the last one pruning would remove
    return directory


def prune(root: Path, keep: str, count: int = KEEP_KEYS) -> None:
    """Delete all but the ``count`` most recently used key directories of ``root`` (``keep`` always stays)."""
    try:
        entries = [entry for entry in root.iterdir() if entry.is_dir() and entry.name != keep]
        entries.sort(key=lambda entry: entry.stat().st_mtime, reverse=True)
    except OSError:
        return
    for entry in entries[count - 1:]:
        shutil.rmtree(entry, ignore_errors=True)


@contextlib.contextmanager
def _exclusive(directory: str):
    """An exclusive lock between processes on ``directory`` (POSIX ``flock``; elsewhere numba's renames alone)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(os.path.join(directory, ".lock"), "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


@functools.lru_cache(maxsize=1)
def _cache_class():
    """numba's function cache with this module's place and key (built on first use: numba imported then)."""
    from numba.core import caching

    class KernelLocator(caching._CacheLocator):
        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            relative = Path(py_file).resolve().parent.relative_to(_PACKAGE)
            self._cache_path = str(cache_dir() / relative)

        def ensure_cache_path(self):
            os.makedirs(self._cache_path, exist_ok=True)

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):  # the key already covers every source the kernels depend on
            return cache_key()

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            if cache_dir() is None:
                return None
            try:
                Path(py_file).resolve().relative_to(_PACKAGE)
            except ValueError:  # not one of ours
                return None
            return cls(py_func, py_file)

    class KernelCacheImpl(caching.CompileResultCacheImpl):
        _locator_classes = [KernelLocator]

    class KernelCache(caching.FunctionCache):
        _impl_class = KernelCacheImpl

        def load_overload(self, sig, target_context):
            # numba refreshes the whole target context first: it imports every implementation registry a
            # *compilation* needs (0.2-0.4 s, most of a cached kernel's start-up). Code loaded from the cache needs
            # only the runtime it calls (allocation, boxing); a compilation refreshes the context itself.
            load = getattr(self, "_load_overload", None)
            if load is None:  # another numba's internals: its own way
                return super().load_overload(sig, target_context)
            from numba.core.runtime import rtsys

            rtsys.initialize(target_context)
            return load(sig, target_context)

        def save_overload(self, sig, data):
            try:
                with _exclusive(str(cache_dir())):
                    super().save_overload(sig, data)
            except OSError:  # not cached: the next process compiles again
                pass

    return KernelCache


KERNELS: list = []  # every function declared with jit (its numba dispatcher), in declaration order


def jit(*signatures, **options):
    """``numba.njit(*signatures, **options)`` with this module's disk cache (no cache where no place works):
    compiled for ``signatures`` at once (as njit does with them; each loaded from the cache when there), else on
    first call for each argument types."""
    import numba

    def decorate(function):
        dispatcher = numba.njit(**options)(function)
        KERNELS.append(dispatcher)
        if cache_dir() is not None:
            try:
                dispatcher._cache = _cache_class()(function)
            except Exception:  # a numba whose cache internals differ: compile in every process, as without a cache
                pass
        if signatures:
            for signature in signatures:
                dispatcher.compile(signature)
            dispatcher.disable_compile()
        return dispatcher

    return decorate


def load_cached() -> int:
    """Load into this process every compiled entry the disk cache holds for the kernels declared so far (those of
    the modules imported), as their first calls would; compiles nothing. How many entries were loaded.

    A process that forks workers (the sweep's fork server) calls it once so that every worker starts with the
    kernels in memory instead of loading them from disk itself. An entry counts when numba would load it for this
    function on this machine (same signature, CPU and bytecode: numba's own index key), so loading cannot turn
    into a compilation; a kernel whose signatures were given is compiled (or loaded) at its declaration already.
    """
    loaded = 0
    for dispatcher in KERNELS:
        cache = getattr(dispatcher, "_cache", None)
        index_file = getattr(cache, "_cache_file", None)
        if index_file is None or not dispatcher._can_compile:
            continue
        try:
            keys = list(index_file._load_index())
            codegen = dispatcher.targetctx.codegen()
            wanted = [key[0] for key in keys if key == cache._index_key(key[0], codegen)]
        except Exception:  # another numba's internals, or an unreadable index: the first call loads it as usual
            continue
        for signature in wanted:
            if tuple(signature) not in dispatcher.overloads:
                dispatcher.compile(signature)
                loaded += 1
    return loaded


def jit_stats(dispatcher) -> tuple[int, int]:
    """(cache hits, cache misses = compilations) of a :func:`jit` function in this process."""
    return sum(dispatcher.stats.cache_hits.values()), sum(dispatcher.stats.cache_misses.values())


__all__ = ["ENV_CACHE_DIR", "KEEP_KEYS", "KERNELS", "cache_dir", "cache_key", "candidate_roots", "jit", "jit_stats",
           "load_cached", "prune", "user_cache_root"]
