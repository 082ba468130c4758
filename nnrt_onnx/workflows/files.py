"""What the tools check about the files a command names, before doing any work: a model file whose content is not
what its suffix says is named for what it is (an empty file, a short text file, an ONNX model renamed .nnrt, an
.nnrt file renamed .onnx), and an output path that cannot be written fails before the model runs.

Nothing here imports numpy or onnx: it runs on the start-up path of every command.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import CommandLineError, UserError, cannot

NNRT_MAGIC = b"NNRT"
_SNIFFED = 4096  # bytes read to tell what a file is
# ModelProto's field numbers (onnx.proto): ir_version 1, opset_import 8, producer_name 2, producer_version 3,
# domain 4, model_version 5, doc_string 6, graph 7, metadata_props 14, training_info 20, functions 25
_MODEL_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2}  # field -> wire type


def _varint(data: bytes, at: int) -> tuple[int, int] | None:
    value = shift = 0
    while at < len(data) and shift < 64:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7
    return None


def looks_like_onnx(head: bytes, size: int) -> bool:
    """Whether ``head`` (the first bytes of a ``size``-byte file) reads as an ONNX ModelProto: an ir_version first
    (as every exporter writes it), then only ModelProto fields of the right wire type, lengths within the file."""
    if len(head) < 2 or head[0] != 0x08:  # field 1 (ir_version), varint
        return False
    at, fields = 0, 0
    while at < len(head):
        tag = _varint(head, at)
        if tag is None:
            return fields > 1
        key, at = tag
        number, wire = key >> 3, key & 7
        if _MODEL_FIELDS.get(number) != wire:
            return False
        value = _varint(head, at)
        if value is None:
            return fields > 1
        length, at = value
        if number == 1 and not 1 <= length <= 64:
            return False
        if wire == 2:
            if at + length > size:
                return False
            at += length
        fields += 1
    return fields > 1 or (fields == 1 and size == len(head))


def _text_preview(head: bytes) -> str | None:
    """The file's start as text when it reads as text (UTF-8, printable or whitespace); None otherwise."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        try:  # a multi-byte character cut at the end of the sniffed bytes
            text = head[:-3].decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not text or not all(c.isprintable() or c in "\t\r\n" for c in text):
        return None
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first[:40] + ("..." if len(first) > 40 else "")


def check_model_file(path: str | os.PathLike, kind: str) -> None:
    """A UserError naming what the file at ``path`` is when it cannot be a model of ``kind`` ("onnx" or "nnrt"): empty,
    a text file, an ONNX model where an .nnrt file is expected, or the reverse. Anything else is left to the loader."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as stream:
            head = stream.read(_SNIFFED)
    except OSError as exc:
        raise UserError(cannot("read", path, exc)) from None
    expected = "an ONNX model" if kind == "onnx" else "an NNRt model file (.nnrt)"
    if size == 0:
        raise UserError(f"{path}: the file is empty (0 bytes), not {expected}")
    is_nnrt = head.startswith(NNRT_MAGIC)
    if kind == "nnrt" and is_nnrt:
        return
    if kind == "onnx" and is_nnrt:
        raise UserError(f"{path}: this looks like an NNRt model file (it starts with {NNRT_MAGIC.decode()}), not an "
                        f"ONNX model: name it .nnrt")
    if kind == "nnrt" and looks_like_onnx(head, size):
        raise UserError(f"{path}: this looks like an ONNX model, not an .nnrt file: name it .onnx (nnrt-onnx "
                        f"convert MODEL.onnx -o MODEL.nnrt converts it)")
    preview = _text_preview(head) if size <= _SNIFFED else None
    if preview is not None:
        raise UserError(f"{path}: a {size}-byte text file ({preview!r}), not {expected}")


ARRAY_SUFFIXES = (".npy", ".npz", ".pb")


def split_spec(spec: str) -> tuple[str | None, str]:
    """``NAME=FILE`` -> (NAME, FILE); a bare ``FILE`` (also when the whole spec names an existing file, '=' in its
    path or not) -> (None, FILE)."""
    name, sep, file = spec.partition("=")
    if not sep or Path(spec).is_file():
        return None, spec
    return name, file


def spec_file(flag: str, spec: str, file: str) -> Path:
    """The array file a spec of ``flag`` names; a CommandLineError when it is missing, a directory or of no known
    array type (.npy, .npz, .pb)."""
    path = Path(file)
    if not path.exists():
        raise CommandLineError(f"{flag} {spec}: no such file {file}")
    if path.is_dir():
        raise CommandLineError(f"{flag} {spec}: {file} is a directory")
    if path.suffix.lower() not in ARRAY_SUFFIXES:
        raise CommandLineError(f"{flag} {spec}: {file} is not an array file (.npy, .npz or .pb)")
    return path


def check_writable(path: str | os.PathLike, flag: str, directory: bool = False) -> None:
    """Fail now, before any work, when ``path`` cannot be written: a CommandLineError naming ``flag`` when it names a
    directory where a file is meant (or the reverse) or a directory that does not exist, a UserError when the file
    (or, with ``directory``, the directory, created with its parents when missing) could not be created there."""
    path = Path(path)
    if directory:
        if path.exists() and not path.is_dir():
            raise CommandLineError(f"{flag} {path}: exists and is not a directory")
        probe = path
        while not probe.exists():  # the nearest existing ancestor is where the directory will be created
            probe = probe.parent
        if not probe.is_dir():
            raise CommandLineError(f"{flag} {path}: {probe} is not a directory")
    else:
        if path.is_dir():
            raise CommandLineError(f"{flag} {path}: is a directory")
        probe = path.parent
        if not probe.is_dir():
            raise CommandLineError(f"{flag}: cannot write {path}: no such directory {probe}")
    try:
        fd, temp = tempfile.mkstemp(prefix=".nnrt_onnx_probe.", dir=probe)
    except OSError as exc:  # permissions, a read-only or full file system: the place, not the command line
        raise UserError(f"{flag}: {cannot('write', path, exc)}") from None
    os.close(fd)
    os.unlink(temp)


__all__ = ["ARRAY_SUFFIXES", "check_model_file", "check_writable", "looks_like_onnx", "spec_file", "split_spec"]
