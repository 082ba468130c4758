"""Load a model file, make or read its inputs, run it on a device, save its outputs: the library behind ``nnrt-onnx run``."""
from __future__ import annotations

import io
import json
import math
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..compilation import Compilation
from ..errors import CommandLineError, UserError, cannot
from ..executor import Executor
from ..model import Model
from ..runtime.device import all_device_ids, get_device
from .converting import convert_as_convert
from .files import check_model_file
from .model_inputs import ModelInputs
from .value_ranges import parse_value_ranges


def load_any(path, inputs: ModelInputs | None = None, **import_options) -> Model:
    """A finished NNRt model from a ``.nnrt`` file (or an ``.onnx`` file or ModelProto, converted as ``convert``
    converts it, see :mod:`.converting`: ``inputs`` -- shapes and constants the user gave -- pin dims and bind
    inputs; data pins dims only where the model cannot be converted without)."""
    if not isinstance(path, (str, Path)):  # an ONNX ModelProto already loaded
        return convert_as_convert(path, inputs or ModelInputs(), **import_options).result.model
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    suffix = path.suffix.lower()
    inputs = inputs or ModelInputs()
    if suffix == ".nnrt":
        from ..errors import NNRtError
        from ..serialization import load_model

        if inputs.constants:
            raise CommandLineError(f"{path}: --constant-input applies to .onnx models (an .nnrt model's inputs are "
                                   f"fixed when it is converted)")
        check_model_file(path, "nnrt")
        try:
            return load_model(path)
        except NNRtError as exc:
            raise UserError(f"{path}: not a valid .nnrt model file: {exc.message}") from None
    if suffix == ".onnx":  # (from_onnx reads the weights from the file itself)
        check_model_file(path, "onnx")
        return convert_as_convert(path, inputs, **import_options).result.model
    raise UserError(f"{path}: unknown model type {suffix!r} (expected .nnrt or .onnx)")


DEVICE_CHOICES = ("cpu", "onnxruntime")  # what --device offers; the full names and ids are accepted too


def device_id_by_name(name: str) -> int:
    """A device id from a device name (``onnxruntime.cpu``), its backend (``onnxruntime``), its kind (``cpu``: the
    first device of that kind, i.e. the native one), or a number."""
    if str(name).isdigit():
        ids = all_device_ids()
        if int(name) not in ids and int(name) != 0:  # (0: the first device, as in NNRt)
            raise CommandLineError(f"--device {name}: no device with that id (ids: {', '.join(map(str, ids))})")
        return get_device(int(name)).id
    ids = all_device_ids()
    for part in (lambda n: n, lambda n: n.split(".")[0], lambda n: n.split(".")[-1]):
        matches = [i for i in ids if part(get_device(i).name) == name]
        if matches:
            return matches[0]
    names = ", ".join(get_device(i).name for i in ids)
    raise CommandLineError(f"--device {name}: unknown device (available: cpu or {DEVICE_CHOICES[-1]}, or the "
                           f"full names {names})")


def input_names(model: Model) -> list[str]:
    return [model.tensors[i].name for i in model.inputs]


def output_names(model: Model) -> list[str]:
    return [model.tensors[i].name for i in model.outputs]


ValueRanges = Mapping["str | None", "tuple[float, float]"]  # input name (None: every input) -> (low, high)


def random_inputs(model: Model, seed: int = 0, dynamic_dim: int = 1,
                  value_ranges: ValueRanges | None = None,
                  shapes: Mapping[str, Sequence[int]] | None = None) -> list[np.ndarray]:
    """Seeded random data fitting each input's dtype and shape (``shapes`` by input name; other inputs' dynamic dims
    become ``dynamic_dim``).

    Default values: floats standard normal, integers in [-8, 8] (quantized: their whole range), bools fair coins.
    ``value_ranges`` maps an input name (or None: every input) to (low, high): floats uniform in [low, high),
    integers uniform in [low, high] (clipped to the dtype), bools unchanged.
    """
    rng = np.random.default_rng(seed)
    ranges = dict(value_ranges or {})
    arrays = []
    for index in model.inputs:
        tensor = model.tensors[index]
        shape = tuple((shapes or {}).get(tensor.name) or (dynamic_dim if d == -1 else d for d in tensor.dims))
        dtype = tensor.np_dtype
        span = ranges.get(tensor.name, ranges.get(None))
        if dtype == np.bool_:
            arrays.append(rng.random(shape) < 0.5)
        elif np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            lo, hi = (max(info.min, -8), min(info.max, 8)) if tensor.quant is None else (info.min, info.max)
            if span is not None:
                lo, hi = max(info.min, math.ceil(span[0])), min(info.max, math.floor(span[1]))
                if lo > hi:
                    raise UserError(f"--val-range {span[0]:g},{span[1]:g} holds no {dtype} value (input "
                                    f"{tensor.name!r})")
            arrays.append(rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype))
        elif span is not None:
            arrays.append(rng.uniform(span[0], span[1], shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def check_value_ranges(ranges: ValueRanges, names: Sequence[str], given: Sequence[str] = ()) -> None:
    """A CommandLineError naming the inputs of ``--val-range`` the model does not have, or that are given (a range
    shapes random data only: with every input given, even an unnamed range would be silently ignored)."""
    unknown = sorted(n for n in ranges if n is not None and n not in names)
    if unknown:
        raise CommandLineError(f"--val-range: unknown input name(s) {unknown}; the model's inputs are {list(names)}")
    fed = sorted(n for n in ranges if n is not None and n in given)
    if fed:
        raise CommandLineError(f"--val-range: input(s) {fed} are given with --input; a range applies to random "
                               f"inputs only")
    if None in ranges and names and all(n in given for n in names):
        raise CommandLineError("--val-range: every input is given with --input; a range applies to random inputs "
                               "only")


def random_shape(name: str, dims: Sequence[int], pinned: Sequence[int] | None = None) -> list[int]:
    """The shape of random data for an input declared ``dims`` (-1: dynamic): ``pinned`` (``--input-shape``, which must
    agree with the static dims), or the declared dims with a dynamic leading (batch) dim of 1. Any other dynamic dim
    is a CommandLineError asking for the shape: a guess (1) would make the model fail far from the cause -- a pooling
    window larger than a height of 1 -- or compute something else than the user means."""
    shown = "[" + ", ".join("?" if d == -1 else str(d) for d in dims) + "]"
    if pinned is not None:
        pinned = [int(d) for d in pinned]
        if len(pinned) != len(dims) or any(d not in (-1, p) for d, p in zip(dims, pinned)):
            raise CommandLineError(f"--input-shape {name}={','.join(map(str, pinned))}: the input is declared "
                                   f"{shown}; only its dynamic dims (?) can be chosen")
        return pinned
    unknown = [axis for axis, d in enumerate(dims) if d == -1 and axis > 0]
    if unknown:
        example = ",".join("1" if d == -1 and axis == 0 else "224" if d == -1 else str(d)
                           for axis, d in enumerate(dims))
        raise CommandLineError(f"input {name!r} has dynamic dims {shown} (axis {', '.join(map(str, unknown))}): give "
                               f"its shape, e.g. --input-shape {name}={example}, or its data with --input")
    return [1 if d == -1 else d for d in dims]


def complete_inputs(model: Model, given: Mapping[str, np.ndarray], seed: int = 0,
                    value_ranges: ValueRanges | None = None, max_bytes: int | None = None,
                    shapes: Mapping[str, Sequence[int]] | None = None) -> list[np.ndarray]:
    """The given arrays in model order; inputs not given are seeded random data (``value_ranges``: see
    :func:`random_inputs`) of the shape :func:`random_shape` says (``shapes``: by input name), which must fit
    ``max_bytes`` (default: the import budget, 256 MiB) together -- a model declaring a [2**20, 2**20] input is a
    UserError, not a terabyte of random numbers."""
    from ..compilation import check_data_types
    from ..ir.budget import format_bytes, nbytes, resolve_limit

    check_data_types(model)  # (an OH_NN_UNKNOWN input has no data to make: the build's error, now)
    names = input_names(model)
    if value_ranges:
        check_value_ranges(value_ranges, names, list(given))
    unknown = sorted(set(shapes or {}) - set(names))
    if unknown:
        raise CommandLineError(f"--input-shape: unknown input name(s) {unknown}; the model's inputs are {names}")
    limit, total = resolve_limit(max_bytes), 0
    random_shapes = {}
    for name, index in zip(names, model.inputs):
        if name not in given:
            tensor = model.tensors[index]
            random_shapes[name] = random_shape(name, tensor.dims, (shapes or {}).get(name))
            total += nbytes(random_shapes[name], tensor.np_dtype)
            if total > limit:
                raise UserError(f"random data for input {name!r} ({tensor.np_dtype} {list(tensor.dims)}) would take "
                                f"the inputs over {format_bytes(limit)}: give it with --input, or raise "
                                f"--max-constant-bytes")
    generated = random_inputs(model, seed, value_ranges=value_ranges, shapes=random_shapes)
    arrays = []
    for name, index, fallback in zip(names, model.inputs, generated):
        if name not in given:
            arrays.append(fallback)
            continue
        array = np.asarray(given[name])
        tensor = model.tensors[index]
        if array.dtype != tensor.np_dtype:
            raise UserError(f"input {name!r} has dtype {array.dtype}, the model expects {tensor.np_dtype}")
        if array.ndim != len(tensor.dims) or any(d not in (-1, s) for d, s in zip(tensor.dims, array.shape)):
            raise UserError(f"input {name!r} has shape {list(array.shape)}, the model expects {list(tensor.dims)}")
        arrays.append(array)
    return arrays


@dataclass
class RunResult:
    outputs: list[np.ndarray]
    names: list[str]
    compile_seconds: float
    run_seconds: float


def run_model(model: Model, inputs: Sequence[np.ndarray], device_id: int = 1, float16: bool = False,
              fast_paths: bool = True) -> RunResult:
    """Compile ``model`` for the device and run it once. ``fast_paths=False``: the native device's reference plan
    (every operation its reference kernel: no numba, nothing compiled), which is what a single run of a
    fresh process should use -- loading the compiled kernels (numba's import and start, even from the disk cache)
    costs more than they save in one run (docs/performance.md, "Start-up")."""
    start = time.perf_counter()
    compilation = Compilation(model)
    compilation.set_device(device_id)
    compilation.enable_float16(float16)
    if not fast_paths:
        reference_plan(compilation)
    compilation.build()
    executor = Executor(compilation)
    compiled = time.perf_counter()
    outputs = executor.run_arrays(list(inputs))
    done = time.perf_counter()
    return RunResult(outputs, output_names(model), compiled - start, done - compiled)


def reference_plan(compilation: Compilation) -> None:
    """Have ``compilation`` build the reference plan where its device is the native one (others have no plan)."""
    from ..runtime.cpu import CpuDevice
    from ..runtime.specialise import REFERENCE_PLAN_EXTENSION

    if isinstance(get_device(compilation.device_id), CpuDevice):
        compilation.add_extension_config(REFERENCE_PLAN_EXTENSION, b"1")


@dataclass
class BenchResult:
    """Latencies of one way of running a model (seconds)."""

    name: str
    compile_seconds: float | None = None
    times: list[float] | None = None
    error: str | None = None  # why it could not run

    @property
    def median(self) -> float | None:
        return float(np.median(self.times)) if self.times else None

    @property
    def mean(self) -> float | None:
        return float(np.mean(self.times)) if self.times else None

    @property
    def std(self) -> float | None:
        """The population standard deviation of the times (0 for one run)."""
        return float(np.std(self.times)) if self.times else None

    def percentile(self, q: float) -> float | None:
        """The ``q``-th percentile of the times (numpy's linear interpolation between the closest runs)."""
        return float(np.percentile(self.times, q)) if self.times else None


def _ort_source(onnx_model):
    """What onnxruntime loads: a path, or a ModelProto's bytes (a model re-declared by --override-static)."""
    return onnx_model.SerializeToString() if hasattr(onnx_model, "SerializeToString") else str(onnx_model)


def benchmark(model: Model, inputs: Sequence[np.ndarray], device_ids: Sequence[int] = (1, 2), runs: int = 20,
              warmup: int = 3, onnx_model=None, progress=None,
              bound: Mapping[str, np.ndarray] | None = None, threads: int | None = None) -> list[BenchResult]:
    """Latencies of ``runs`` runs (after ``warmup`` runs) of ``model`` on each device through Compilation and
    Executor, and of ``onnx_model`` (a path or ModelProto, when given) in a plain onnxruntime session (fed ``bound``
    too: the inputs the conversion bound to constants).

    ``threads``: the onnxruntime sessions' intra-op threads and the native device's BLAS thread count (its thread
    policy's ``nnrt_onnx.threads`` extension config, runtime/threads.py); None leaves both at their defaults
    (onnxruntime's own, one thread natively).
    A device that cannot build the model gets a result with ``error`` set. ``progress(items, label)`` may wrap
    the timing loops (a context manager yielding the items).
    """
    import contextlib

    from ..errors import NNRtError
    from ..ort_device import THREADS_EXTENSION as ORT_THREADS_EXTENSION
    from ..runtime.threads import THREADS_EXTENSION as NATIVE_THREADS_EXTENSION

    progress = progress or (lambda items, label: contextlib.nullcontext(items))
    candidates = []
    for device_id in device_ids:
        device = get_device(device_id)
        result = BenchResult(device.name)
        try:
            start = time.perf_counter()
            compilation = Compilation(model)
            compilation.set_device(device_id)
            if threads:  # each device reads its own key (the native one sets BLAS per run, so no cap from outside)
                key = ORT_THREADS_EXTENSION if device.name.startswith("onnxruntime") else NATIVE_THREADS_EXTENSION
                compilation.add_extension_config(key, str(threads).encode())
            compilation.build()
            executor = Executor(compilation)
            result.compile_seconds = time.perf_counter() - start
            candidates.append((result, lambda executor=executor: executor.run_arrays(list(inputs))))
        except NNRtError as exc:
            result.error = exc.message
            candidates.append((result, None))
    if onnx_model is not None:
        import onnxruntime as ort

        result = BenchResult("onnxruntime (original .onnx)")
        start = time.perf_counter()
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        try:
            session = ort.InferenceSession(_ort_source(onnx_model), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's errors have no stable public types
            result.error = str(exc).splitlines()[0]
            candidates.append((result, None))
        else:
            result.compile_seconds = time.perf_counter() - start
            feed = {**dict(zip(input_names(model), inputs)), **dict(bound or {})}
            candidates.append((result, lambda: session.run(None, feed)))
    for result, run in candidates:
        if run is None:
            continue
        times = []
        with progress(range(warmup + runs), result.name) as steps:
            for step in steps:
                start = time.perf_counter()
                run()
                if step >= warmup:
                    times.append(time.perf_counter() - start)
        result.times = times
    from ..runtime.threads import release_blas_threads

    release_blas_threads()  # (the native runs keep their BLAS thread count; the caller's comes back here)
    return [result for result, _ in candidates]


@dataclass
class OpTime:
    """Time spent in one operation type over the profiled runs."""

    op: str  # OH_NN_OPS_ name without the prefix
    count: int  # operations of this type in the model
    seconds: float  # mean seconds per run, all operations of this type together
    share: float  # of the total step time


def profile_model(model: Model, inputs: Sequence[np.ndarray], runs: int = 10, warmup: int = 2,
                  float16: bool = False, threads: int | None = None) -> tuple[list[OpTime], float]:
    """Per-operation-type time of ``model`` on the native device: the execution plan's own per-step timing
    (``NativePreparedModel.run(..., profile=...)``) over ``runs`` runs after ``warmup``. Returns the op types,
    most expensive first, and the mean total seconds per run of the steps. ``threads``: as in :func:`benchmark`."""
    from ..runtime.threads import THREADS_EXTENSION

    compilation = Compilation(model)
    compilation.set_device(1)
    compilation.enable_float16(float16)
    if threads:
        compilation.add_extension_config(THREADS_EXTENSION, str(threads).encode())
    compilation.build()
    executor = Executor(compilation)
    prepared = executor.prepared
    for _ in range(warmup):
        executor.run_arrays(list(inputs))
    records: list = []
    for _ in range(runs):
        prepared.run(list(inputs), profile=records)
    totals: dict[str, float] = {}
    numbers: dict[str, set] = {}
    for number, op, seconds in records:
        name = op[len("OH_NN_OPS_"):] if op.startswith("OH_NN_OPS_") else op
        totals[name] = totals.get(name, 0.0) + seconds / runs
        numbers.setdefault(name, set()).add(number)
    return _op_table(totals, {name: len(found) for name, found in numbers.items()})


def _op_table(seconds: dict[str, float], counts: dict[str, int]) -> tuple[list[OpTime], float]:
    """Per-op-type rows (mean seconds per run, count of operations), most expensive first, and their total."""
    total = sum(seconds.values())
    table = [OpTime(op, counts[op], value, value / total if total else 0.0)
             for op, value in sorted(seconds.items(), key=lambda item: -item[1])]
    return table, total


def profile_onnxruntime(onnx_model, feed: dict, runs: int = 10, warmup: int = 2,
                        threads: int | None = None) -> tuple[list[OpTime], float]:
    """Per-op-type time of ``onnx_model`` (a path or ModelProto) in onnxruntime (CPU, ``threads`` intra-op
    threads, default 1) from onnxruntime's own profiler: the kernel time of every node over the last ``runs`` of
    ``warmup + runs`` runs fed ``feed``. Op types are onnxruntime's, after its graph optimisations (a Conv may have
    absorbed its Add and Relu). The counterpart of :func:`profile_model`, for finding where the two part. Raises
    RuntimeError when onnxruntime cannot load or run the model."""
    import tempfile

    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = threads or 1
    options.inter_op_num_threads = 1
    with tempfile.TemporaryDirectory(prefix="nnrt_onnx_ort_profile_") as tmp:
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(tmp, "ort")
        try:
            session = ort.InferenceSession(_ort_source(onnx_model), options, providers=["CPUExecutionProvider"])
            for _ in range(warmup + runs):
                session.run(None, feed)
            with open(session.end_profiling(), encoding="utf-8") as handle:
                events = json.load(handle)
        except Exception as exc:  # onnxruntime's errors have no stable public types
            raise RuntimeError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    per_node: dict[str, list[float]] = {}
    op_of: dict[str, str] = {}
    for event in events:
        name = event.get("name", "")
        if event.get("cat") == "Node" and name.endswith("_kernel_time"):
            node = name[: -len("_kernel_time")]
            per_node.setdefault(node, []).append(event.get("dur", 0) * 1e-6)
            op_of[node] = str(event.get("args", {}).get("op_name", "?"))
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for node, durations in per_node.items():
        op = op_of[node]
        totals[op] = totals.get(op, 0.0) + sum(durations[-runs:]) / min(runs, len(durations))
        counts[op] = counts.get(op, 0) + 1
    return _op_table(totals, counts)


def safe_file_name(name: str) -> str:
    """A tensor name as a file name: characters that cannot be in one become ``_``."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".")
    return cleaned or "_"


_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
_RESERVED = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))})
_MAX_STEM = 200


def encode_file_stem(name: str) -> str:
    """A tensor name as a file name stem, reversibly: every UTF-8 byte outside ``[A-Za-z0-9_.-]`` (and a leading
    ``.``) becomes ``%XX`` (so ``a/b`` is ``a%2Fb`` and ``a_b`` stays ``a_b``); :func:`decode_file_stem` undoes it.
    The empty name is ``%`` (which no encoding of another name is)."""
    if not name:
        return "%"
    out = []
    for position, byte in enumerate(name.encode("utf-8", "surrogatepass")):
        char = chr(byte)
        out.append(char if char in _KEPT and not (position == 0 and char == ".") else f"%{byte:02X}")
    return "".join(out)


def decode_file_stem(stem: str) -> str:
    if stem == "%":
        return ""
    from urllib.parse import unquote_to_bytes

    return unquote_to_bytes(stem).decode("utf-8", "surrogatepass")


def output_file_names(names: Sequence[str]) -> list[str]:
    """One distinct ``.npy`` file name per output: the encoded name; a name too long for a file system (or equal,
    ignoring case, to one already taken, or reserved on Windows) gets ``~N`` (``~`` is never part of an encoding),
    so nothing ever overwrites anything; manifest.json maps them back."""
    taken: set[str] = {"manifest"}
    files = []
    for name in names:
        stem = encode_file_stem(name)
        if len(stem) > _MAX_STEM:
            import hashlib

            stem = f"{stem[:_MAX_STEM - 20]}~{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"
        candidate, n = stem, 1
        while candidate.casefold() in taken or candidate.upper() in _RESERVED:
            n += 1
            candidate = f"{stem}~{n}"
        taken.add(candidate.casefold())
        files.append(f"{candidate}.npy")
    return files


def save_outputs(result: RunResult, directory: str | Path) -> list[Path]:
    """Each output as ``DIR/<encoded name>.npy`` (:func:`output_file_names`: distinct, never an overwrite of
    another output) and ``DIR/manifest.json`` mapping each tensor name to its file, dtype and shape; all written
    atomically, the manifest last. Returns the paths written."""
    from ..serialization import atomic_write

    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(cannot("create the output directory", directory, exc)) from None
    paths = []
    entries = []
    for name, array, file in zip(result.names, result.outputs, output_file_names(result.names)):
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        path = directory / file
        try:
            atomic_write(path, [buffer.getvalue()])
        except OSError as exc:
            raise UserError(cannot("write", path, exc)) from None
        paths.append(path)
        entries.append({"name": name, "file": file, "dtype": str(array.dtype), "shape": list(array.shape)})
    manifest = directory / "manifest.json"
    text = json.dumps({"outputs": entries}, indent=1, ensure_ascii=False) + "\n"
    try:
        atomic_write(manifest, [text.encode("utf-8", "surrogatepass")])
    except OSError as exc:
        raise UserError(cannot("write", manifest, exc)) from None
    paths.append(manifest)
    return paths


__all__ = ["DEVICE_CHOICES", "BenchResult", "OpTime", "RunResult", "benchmark", "check_value_ranges",
           "complete_inputs", "decode_file_stem", "device_id_by_name", "encode_file_stem", "load_any",
           "output_file_names", "parse_value_ranges", "profile_model", "profile_onnxruntime", "random_inputs",
           "random_shape", "run_model", "safe_file_name", "save_outputs"]
