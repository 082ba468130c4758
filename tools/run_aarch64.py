#!/usr/bin/env python3
"""Emit a model as C, build its example program for aarch64-linux-musl (OpenHarmony's libc) with zig cc and the
recording shim, run it under qemu-user, and check what it built (docs/c_source.md, "Proof without a device").

    python tools/run_aarch64.py MODEL.onnx|MODEL.nnrt [--keep DIR]

Prints the ELF machine of the build, the program's output under qemu-aarch64, whether its trace is byte for byte
the host build's, and whether the model replayed from the aarch64 trace is the converted model (the same .nnrt
bytes). Needs the ziglang package (pip install -e '.[test,cross]'), qemu-user (apt-get install qemu-user) and a
host C compiler. Exit status 0 when everything agrees, 1 otherwise.
"""
from __future__ import annotations

import argparse
import dataclasses
import struct
import sys
import tempfile
from pathlib import Path

from nnrt_onnx.csource.emit import emit_c
from nnrt_onnx.csource.program import build_emitted, build_shim, run_recorded
from nnrt_onnx.csource.toolchain import aarch64_toolchain, host_toolchain
from nnrt_onnx.serialization import load_model, save_model

EM_AARCH64 = 183


def _model(path: Path):
    if path.suffix == ".nnrt":
        return load_model(path)
    from nnrt_onnx.onnx_import import from_onnx

    return from_onnx(str(path)).model


def _elf_machine(path: Path) -> int:
    header = path.read_bytes()[:20]
    if header[:4] != b"\x7fELF":
        return -1
    return struct.unpack("<H", header[18:20])[0]


def _without_axis_zero(model):
    """NN_QuantParam has no axis: per-channel parameters along axis 0 come back with the axis unset (the same)."""
    for tensor in model.tensors:
        if tensor.quant is not None and tensor.quant.count > 1 and tensor.quant.axis == 0:
            tensor.quant = dataclasses.replace(tensor.quant, axis=None)
    return model


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--keep", type=Path, help="emit and build into this directory (kept)")
    args = parser.parse_args(argv)
    cross, host = aarch64_toolchain(), host_toolchain()
    if cross is None or host is None:
        print("needs the ziglang package and a host C compiler", file=sys.stderr)
        return 1
    if not cross.runner:
        print("qemu-aarch64 is not installed (apt-get install qemu-user)", file=sys.stderr)
        return 1
    model = _model(args.model)
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        emitted = emit_c(model, root / "c", args.model.stem, source=args.model.name)
        arm = build_emitted(emitted, cross, output=root / "main.aarch64",
                            shim_object=build_shim(root / "shim.aarch64.o", cross))
        native = build_emitted(emitted, host, output=root / "main.host",
                               shim_object=build_shim(root / "shim.host.o", host))
        print(f"built {arm.name} with {cross.name}: ELF machine {_elf_machine(arm)} "
              f"({'AArch64' if _elf_machine(arm) == EM_AARCH64 else 'not AArch64'}), {arm.stat().st_size} bytes")
        on_arm = run_recorded(arm, cwd=emitted.directory, toolchain=cross, trace=root / "aarch64.trace")
        print(f"$ {' '.join(cross.run_command(arm))}  (in {emitted.directory})  -> exit {on_arm.returncode}")
        print("".join(f"  | {line}\n" for line in (on_arm.stdout + on_arm.stderr).splitlines()), end="")
        run_recorded(native, cwd=emitted.directory, toolchain=host, trace=root / "host.trace")
        same_trace = (root / "aarch64.trace").read_bytes() == (root / "host.trace").read_bytes()
        print(f"trace: {on_arm.replay.calls} NNRt calls, {(root / 'aarch64.trace').stat().st_size} bytes; "
              f"the host build's trace is {'identical' if same_trace else 'DIFFERENT'}")
        rebuilt = on_arm.replay.models[on_arm.replay.finished[0]] if on_arm.replay.finished else None
        same_model = False
        if rebuilt is not None:
            save_model(_without_axis_zero(model), root / "converted.nnrt")
            save_model(rebuilt, root / "rebuilt.nnrt")
            same_model = (root / "converted.nnrt").read_bytes() == (root / "rebuilt.nnrt").read_bytes()
        print(f"replayed model: {len(rebuilt.operations) if rebuilt else 0} operations, "
              f"{len(rebuilt.tensors) if rebuilt else 0} tensors; "
              f"{'the same .nnrt bytes as the conversion' if same_model else 'NOT the converted model'}")
    return 0 if on_arm.returncode == 0 and same_trace and same_model else 1


if __name__ == "__main__":
    sys.exit(main())
