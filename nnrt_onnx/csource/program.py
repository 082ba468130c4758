"""C programs linked against the recording shim, run, and their traces replayed: the proof of an emitted model
without a device (``build_emitted``), and ``capture`` of the model an app's own C code builds (docs/c_source.md)."""
from __future__ import annotations

import os
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import UserError
from ..model import Model
from .emit import EmittedC
from .toolchain import STRICT_C99, Toolchain, host_toolchain, include_dir, shim_source
from .trace import Replay, TraceError, replay_file

__all__ = ["ProgramRun", "build_program", "build_shim", "build_emitted", "run_recorded", "capture", "captured_model"]

RUN_TIMEOUT = 120  # seconds a recorded program may take (an emulated one too)


@dataclass(frozen=True)
class ProgramRun:
    returncode: int
    stdout: str
    stderr: str
    replay: Replay


def build_program(sources: Sequence[Path], output: Path, toolchain: Toolchain | None = None,
                  includes: Sequence[Path] = (), flags: Sequence[str] = STRICT_C99,
                  shim_object: Path | None = None) -> Path:
    """Compile ``sources`` with ``flags`` and link them with the recording shim into the executable ``output`` (one
    compiler invocation). The shim is compiled strictly (C99, warnings as errors) unless ``shim_object`` is an
    object of it already built for this toolchain (see ``build_shim``)."""
    toolchain = toolchain or _host()
    output = Path(output)
    if shim_object is None:
        shim_object = build_shim(output.with_name(f"{output.name}.shim.o"), toolchain)
    return toolchain.build([Path(s) for s in sources], output, [*includes, include_dir()], flags, [shim_object])


def build_shim(output: Path, toolchain: Toolchain | None = None) -> Path:
    """The recording shim as an object file, compiled with the strict C99 flags."""
    return (toolchain or _host()).compile(shim_source(), Path(output), [include_dir()], STRICT_C99)


def build_emitted(emitted: EmittedC, toolchain: Toolchain | None = None, output: Path | None = None,
                  shim_object: Path | None = None) -> Path:
    """The example program of an emitted model (``<name>_main``), built with the strict C99 flags against the
    emitted headers and linked with the recording shim."""
    sources = [emitted.directory / f"{emitted.name}.c", emitted.directory / f"{emitted.name}_main.c"]
    if emitted.weights is None:
        sources.append(emitted.directory / f"{emitted.name}_weights.c")
    output = output or emitted.directory / f"{emitted.name}_main"
    return build_program(sources, output, toolchain, includes=[emitted.directory], shim_object=shim_object)


def run_recorded(executable: Path, args: Sequence[str] = (), *, cwd: Path | None = None,
                 toolchain: Toolchain | None = None, trace: Path | None = None,
                 outputs: Sequence[np.ndarray] | None = None, timeout: float = RUN_TIMEOUT) -> ProgramRun:
    """Run a program linked with the shim (through the toolchain's emulator, if it has one) and replay its trace.
    A program that fails still has its trace replayed: what it built before failing is kept. ``outputs``: the
    values the shim's runs give the program (default: zeros, dynamic dims 1)."""
    toolchain = toolchain or _host()
    cwd = Path(cwd) if cwd is not None else Path(executable).parent
    with tempfile.TemporaryDirectory(prefix="nnrt_trace_") as scratch:
        trace_path = Path(trace) if trace is not None else Path(scratch) / "trace.bin"
        env = {**os.environ, "NNRT_TRACE": str(trace_path)}
        env.pop("NNRT_SHIM_OUTPUTS", None)
        if outputs is not None:
            env["NNRT_SHIM_OUTPUTS"] = str(_write_outputs(Path(scratch) / "outputs.bin", outputs))
        command = toolchain.run_command(Path(executable).resolve(), args)
        try:
            done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, errors="replace",
                                  timeout=timeout)
        except OSError as error:
            raise UserError(f"cannot run {command[0]}: {error.strerror or error}") from None
        except subprocess.TimeoutExpired:
            raise UserError(f"{Path(executable).name} did not finish in {timeout:g} s") from None
        if not trace_path.is_file():
            raise UserError(f"{Path(executable).name} made no NNRt call (exit {done.returncode}; no trace written)"
                            + (f": {done.stderr.strip()}" if done.stderr.strip() else ""))
        try:
            replay = replay_file(trace_path)
        except TraceError as error:
            raise UserError(f"the NNRt calls of {Path(executable).name} do not build a valid model: {error}") \
                from None
    return ProgramRun(done.returncode, done.stdout, done.stderr, replay)


def captured_model(run: ProgramRun, which: int | None = None) -> Model:
    """The finished model a program built: its only one, or the ``which``-th (from 0) of those it finished."""
    finished = run.replay.finished
    if not finished:
        built = len(run.replay.models)
        raise UserError(f"the program finished no model (it constructed {built}, exit {run.returncode})"
                        + (f": {run.stderr.strip()}" if run.stderr.strip() else ""))
    if which is None:
        if len(finished) > 1:
            raise UserError(f"the program finished {len(finished)} models: choose one with --model-index "
                            f"0..{len(finished) - 1}")
        which = 0
    if not 0 <= which < len(finished):
        raise UserError(f"--model-index {which}: the program finished {len(finished)} model(s)")
    return run.replay.models[finished[which]]


def capture(sources: Sequence[str | os.PathLike], args: Sequence[str] = (), *, flags: Sequence[str] = (),
            includes: Sequence[str | os.PathLike] = (), which: int | None = None,
            toolchain: Toolchain | None = None) -> tuple[Model, ProgramRun]:
    """The model an app's own model-building C (or C++) code makes: ``sources`` compiled with ``flags`` against
    the project's NNRt headers, linked with the recording shim, run once with ``args``, its calls replayed."""
    paths = [Path(s) for s in sources]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise UserError(f"no such source file: {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="nnrt_capture_") as scratch:
        executable = build_program(paths, Path(scratch) / "captured_program", toolchain,
                                   includes=[Path(i) for i in includes], flags=flags)
        run = run_recorded(executable, args, cwd=Path.cwd(), toolchain=toolchain)
    return captured_model(run, which), run


def _write_outputs(path: Path, outputs: Sequence[np.ndarray]) -> Path:
    """The shim's output file: per output u32 rank, i32 dims, u64 byte count, the bytes (little-endian)."""
    with open(path, "wb") as file:
        for array in outputs:
            array = np.ascontiguousarray(array)
            data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
            file.write(struct.pack("<I", array.ndim) + struct.pack(f"<{array.ndim}i", *array.shape)
                       + struct.pack("<Q", len(data)) + data)
    return path


def _host() -> Toolchain:
    toolchain = host_toolchain()
    if toolchain is None:
        raise UserError("no C compiler found (install cc, gcc or clang, or set CC)")
    return toolchain
