"""The C toolchains that build emitted models and apps against the recording shim: the system compiler, and a
cross compiler for aarch64-linux-musl (OpenHarmony's libc) from the ``ziglang`` package; qemu-user runs the
aarch64 builds where it is installed."""
from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Sequence

from ..errors import UserError

__all__ = ["STRICT_C99", "Toolchain", "aarch64_toolchain", "host_toolchain", "include_dir", "shim_source",
           "qemu_aarch64"]

STRICT_C99 = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic")
AARCH64_TARGET = "aarch64-linux-musl"
_CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".C")


def include_dir() -> Path:
    """The directory holding ``neural_network_runtime/*.h`` (the project's C99 declarations of the NNRt API)."""
    return Path(str(resources.files(__package__).joinpath("include")))


def shim_source() -> Path:
    return Path(str(resources.files(__package__).joinpath("shim", "nnrt_recorder.c")))


class CompileError(UserError):
    """A compiler refused a source (its messages are kept)."""


@dataclass(frozen=True)
class Toolchain:
    name: str
    cc: tuple[str, ...]
    cxx: tuple[str, ...] | None
    runner: tuple[str, ...] = ()  # how to run what it links (an emulator), empty for the host

    def compile(self, source: Path, output: Path, includes: Sequence[Path] = (), flags: Sequence[str] = STRICT_C99,
                ) -> Path:
        """One object file (C99, or C++ for a .cc/.cpp source); a CompileError with the compiler's messages."""
        cxx = source.suffix in _CXX_SUFFIXES
        if cxx and self.cxx is None:
            raise UserError(f"{source}: no C++ compiler found (set CXX)")
        compiler = self.cxx if cxx else self.cc
        flags = [f.replace("-std=c99", "-std=c++11") for f in flags] if cxx else list(flags)
        command = [*compiler, *flags, *(f"-I{i}" for i in includes), "-c", str(source), "-o", str(output)]
        _run(command, f"{self.name} cannot compile {source.name}")
        return output

    def build(self, sources: Sequence[Path], output: Path, includes: Sequence[Path] = (),
              flags: Sequence[str] = STRICT_C99, objects: Sequence[Path] = ()) -> Path:
        """An executable from ``sources`` (compiled with ``flags``) and ``objects``, in one compiler invocation."""
        cxx = any(Path(s).suffix in _CXX_SUFFIXES for s in sources)
        if cxx and self.cxx is None:
            raise UserError(f"{output.name}: no C++ compiler found (set CXX)")
        compiler = self.cxx if cxx else self.cc
        flags = [f.replace("-std=c99", "-std=c++11") for f in flags] if cxx else list(flags)
        command = [*compiler, *flags, *(f"-I{i}" for i in includes), *map(str, sources), *map(str, objects),
                   "-o", str(output)]
        _run(command, f"{self.name} cannot build {output.name}")
        return output

    def run_command(self, executable: Path, args: Sequence[str] = ()) -> list[str]:
        return [*self.runner, str(executable), *args]


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace")
    except OSError as error:
        raise CompileError(f"{what}: {command[0]}: {error.strerror or error}") from None
    if done.returncode != 0 or done.stderr.strip():  # -Werror aside, any message is a failure: warning-free
        raise CompileError(f"{what} (exit {done.returncode}): {(done.stderr or done.stdout).strip()}\n"
                           f"command: {shlex.join(command)}")


def _which(*names: str) -> str | None:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def host_toolchain() -> Toolchain | None:
    """The system C compiler (``$CC``, else cc, gcc or clang) and C++ compiler (``$CXX``, else c++, g++,
    clang++); None without a C compiler."""
    cc = shlex.split(os.environ["CC"]) if os.environ.get("CC") else ([p] if (p := _which("cc", "gcc", "clang"))
                                                                      else None)
    if not cc:
        return None
    cxx = shlex.split(os.environ["CXX"]) if os.environ.get("CXX") else ([p] if (p := _which("c++", "g++", "clang++"))
                                                                         else None)
    return Toolchain("the system C compiler", tuple(cc), tuple(cxx) if cxx else None)


def aarch64_toolchain() -> Toolchain | None:
    """zig's clang for aarch64-linux-musl (statically linked executables), from the ``ziglang`` package; None when
    it is not installed. Its runner is qemu-aarch64 when installed (else running is not possible here)."""
    if importlib.util.find_spec("ziglang") is None:
        return None
    zig = (sys.executable, "-m", "ziglang")
    qemu = qemu_aarch64()
    return Toolchain(f"zig cc -target {AARCH64_TARGET}", (*zig, "cc", "-target", AARCH64_TARGET),
                     (*zig, "c++", "-target", AARCH64_TARGET), (qemu,) if qemu else ())


def qemu_aarch64() -> str | None:
    """qemu-user's aarch64 emulator (Debian: ``apt-get install qemu-user``), or None."""
    return _which("qemu-aarch64", "qemu-aarch64-static")
