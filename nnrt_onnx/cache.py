"""The compile cache behind ``OH_NNCompilation_SetCache`` (docs/nnrt_format.md, "Compile cache").

One cache file per device: ``<cache_dir>/<device>/model.nnrtcache`` = a 64-byte header (magic, cache format,
cache version, payload length, SHA-256 of the payload) followed by the ``.nnrt`` bytes of the compiled model.
:meth:`CompilationCache.lookup` follows the documented SetCache cases::

    cache_dir missing / not a directory / not accessible      -> NNRtError(OH_NN_INVALID_PATH)
    no cache file                                             -> None (compile, then store())
    complete file, same version                               -> the cached Model (weights memory-mapped)
    complete file, older version                              -> None (recompile, store() overwrites)
    file with a newer version                                 -> NNRtError(OH_NN_INVALID_PARAMETER), model not read
    incomplete / corrupt / unreadable file                    -> NNRtError(OH_NN_INVALID_FILE)

:meth:`CompilationCache.store` writes atomically; failures are ``OH_NN_SAVE_CACHE_EXCEPTION``.
"""
from __future__ import annotations

import hashlib
import mmap
import os
import re
import struct

from .enums import OH_NN_ReturnCode
from .errors import NNRtError, invalid
from .model import Model
from .serialization import atomic_write, encode_chunks, model_from_bytes
from .tensor import UINT32_MAX

__all__ = ["CACHE_MAGIC", "CACHE_FORMAT_VERSION", "CACHE_FILE_NAME", "CompilationCache"]

CACHE_MAGIC = b"NNRC"
CACHE_FORMAT_VERSION = 1
CACHE_FILE_NAME = "model.nnrtcache"
# magic, cache format version, cache (model) version, reserved u32 = 0, payload length, sha256, 8 reserved zero bytes
CACHE_HEADER = struct.Struct("<4sIIIQ32s8s")
assert CACHE_HEADER.size == 64  # keeps the embedded model's data section 64-byte aligned in the file


def _bad(message: str) -> NNRtError:
    return NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_FILE, message)


def _check_version(version) -> int:
    if type(version) is not int or not 0 <= version <= UINT32_MAX:
        raise invalid(f"cache version must be an integer in 0..{UINT32_MAX}, got {version!r}")
    return version


def _device_dir_name(device_name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", device_name)
    if safe != device_name or safe in (".", ".."):
        safe = f"{safe.strip('.') or 'device'}-{hashlib.sha256(device_name.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
    return safe


class CompilationCache:
    """The cache directory of one compilation: ``cache_dir`` must exist; the device sub-directory is made on store."""

    def __init__(self, cache_dir: str | os.PathLike, device_name: str):
        try:
            self.cache_dir = os.fspath(cache_dir)
        except TypeError:
            raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PATH, f"cache path {cache_dir!r} is not a path") from None
        if type(device_name) is not str or not device_name:
            raise invalid(f"device name must be a non-empty string, got {device_name!r}")
        self.device_name = device_name
        self.device_dir = os.path.join(self.cache_dir, _device_dir_name(device_name))
        self.path = os.path.join(self.device_dir, CACHE_FILE_NAME)

    def _check_dir(self, mode: int) -> None:
        if not self.cache_dir or not os.path.isdir(self.cache_dir):
            raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PATH,
                            f"cache directory {self.cache_dir!r} does not exist or is not a directory")
        if not os.access(self.cache_dir, mode):
            raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PATH, f"no access permission to {self.cache_dir!r}")

    def lookup(self, version: int) -> Model | None:
        """The cached model compiled for ``version``, or None when the caller must compile (and store)."""
        version = _check_version(version)
        self._check_dir(os.R_OK | os.X_OK)
        try:
            stream = open(self.path, "rb")
        except FileNotFoundError:
            return None
        except OSError as error:
            raise _bad(f"cannot open cache file {self.path!r}: {error.strerror or error}") from None
        with stream:
            try:
                size = os.fstat(stream.fileno()).st_size
                head = stream.read(CACHE_HEADER.size)
            except OSError as error:
                raise _bad(f"cannot read cache file {self.path!r}: {error.strerror or error}") from None
            if len(head) < CACHE_HEADER.size:
                raise _bad(f"cache file is incomplete: {len(head)} bytes, the header alone is {CACHE_HEADER.size}")
            magic, fmt, cached, reserved, length, digest, tail = CACHE_HEADER.unpack(head)
            if magic != CACHE_MAGIC:
                raise _bad(f"not an NNRt cache file (magic {magic!r}, expected {CACHE_MAGIC!r})")
            if fmt == 0 or fmt > CACHE_FORMAT_VERSION:
                raise _bad(f"cache file format {fmt} is not supported (this reader supports {CACHE_FORMAT_VERSION})")
            if reserved or any(tail):
                raise _bad("cache file header has non-zero reserved bytes")
            if cached > version:
                raise invalid(f"cache version {cached} is newer than the requested version {version}")
            if size != CACHE_HEADER.size + length:
                raise _bad(f"cache file is incomplete: {size} bytes, its header announces "
                           f"{CACHE_HEADER.size + length}")
            if cached < version:
                return None  # outdated: the caller recompiles and store() replaces the file
            if length == 0:
                raise _bad("cache file holds no model")
            try:
                mapped = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as error:
                raise _bad(f"cannot map cache file {self.path!r}: {error}") from None
        with memoryview(mapped) as view:
            actual = hashlib.sha256(view[CACHE_HEADER.size:]).digest()
        if actual != digest:
            mapped.close()
            raise _bad("cache file is corrupt: SHA-256 of the payload does not match its header")
        try:
            return model_from_bytes(mapped, _start=CACHE_HEADER.size, _end=size)
        except NNRtError as error:
            raise _bad(f"cached model is invalid: {error.message}") from None

    def store(self, version: int, model: Model) -> None:
        """Write ``model`` as the cache for ``version`` (atomically replacing any older file)."""
        version = _check_version(version)
        if not isinstance(model, Model) or not model.finished:
            encode_chunks(model)  # OH_NN_INVALID_PARAMETER for an unfinished model
        try:
            chunks = encode_chunks(model)
        except NNRtError as error:  # too large for the format: no cache file rather than one no build can read
            raise NNRtError(OH_NN_ReturnCode.OH_NN_SAVE_CACHE_EXCEPTION, f"cannot cache the model: {error.message}") \
                from None
        self._check_dir(os.F_OK)
        digest = hashlib.sha256()
        length = 0
        for chunk in chunks:
            digest.update(chunk)
            length += len(chunk)
        head = CACHE_HEADER.pack(CACHE_MAGIC, CACHE_FORMAT_VERSION, version, 0, length, digest.digest(), bytes(8))
        try:
            os.makedirs(self.device_dir, exist_ok=True)
            atomic_write(self.path, [head, *chunks])
        except OSError as error:
            raise NNRtError(OH_NN_ReturnCode.OH_NN_SAVE_CACHE_EXCEPTION,
                            f"cannot write cache file {self.path!r}: {error.strerror or error}") from None
