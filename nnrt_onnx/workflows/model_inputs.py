"""What a user says about an ONNX model's inputs, turned into import options: data given for an input pins its
shape, ``--input-shape`` pins dims explicitly, ``--constant-input`` binds an input to a fixed value (a setting the
model branches on, such as a sample rate, or a shape the graph computes with).

Pinning a dim that the model declares static to another value is an error naming the input and the dim.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import CommandLineError, UserError, cannot
from .files import ARRAY_SUFFIXES, spec_file, split_spec


@dataclass
class ModelInputs:
    """Data (pins shapes), explicit shapes, and constants for some of a model's inputs, by ONNX input name."""

    data: dict[str, np.ndarray] = field(default_factory=dict)
    shapes: dict[str, list[int]] = field(default_factory=dict)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    override_static: bool = False  # ``shapes`` may replace static dims too (re-batching a model declared batch 1)


@dataclass(frozen=True)
class DeclaredInput:
    name: str
    dtype: np.dtype | None  # None: an element type numpy has no name for
    dims: tuple[int | None, ...] | None  # None per dynamic dim; None for the whole shape when the rank is unknown


def declared_inputs(model) -> dict[str, DeclaredInput]:
    """The runtime inputs of an ONNX ModelProto (initializers excluded), as declared."""
    from onnx import helper

    initializers = {t.name for t in model.graph.initializer}
    found = {}
    for info in model.graph.input:
        if info.name in initializers:
            continue
        tensor_type = info.type.tensor_type
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
        except (KeyError, TypeError, ValueError):
            dtype = None
        dims = None
        if tensor_type.HasField("shape"):
            dims = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                         for d in tensor_type.shape.dim)
        found[info.name] = DeclaredInput(info.name, dtype, dims)
    return found


def _npy_header(stream, what: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) from the header of the .npy at ``stream``'s position; the data is not read."""
    from numpy.lib import format as npy

    try:
        version = npy.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = npy.read_array_header_1_0(stream)
        elif version in ((2, 0), (3, 0)):
            shape, _, dtype = npy.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unknown .npy format version {version}")
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as exc:
        raise UserError(f"{what}: not a readable .npy array ({_first_line(exc)})") from None
    if dtype.hasobject:
        raise UserError(f"{what}: holds Python objects (dtype {dtype}); only plain numeric arrays are read, never "
                        f"unpickled")
    return tuple(int(d) for d in shape), dtype


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def _checked_size(shape, dtype, what: str, limit: int) -> int:
    from ..ir.budget import format_bytes, nbytes

    size = nbytes(shape, dtype)
    if size > limit:
        raise UserError(f"{what}: the array {np.dtype(dtype).name} {list(shape)[:8]} holds {format_bytes(size)}, over "
                        f"the limit of {format_bytes(limit)} (raise it with --max-constant-bytes)")
    return size


def read_array(path: str | Path, max_bytes: int | None = None) -> dict[str, np.ndarray] | np.ndarray:
    """An array from ``.npy``, a dict of arrays from ``.npz``, or an ONNX TensorProto ``.pb``; never unpickles.

    The size of every array is checked from its header (the .npy header, each .npz member's header, the
    TensorProto's dims) before anything is read: over ``max_bytes`` (default: the import budget, 256 MiB) in all
    -- a 3 MB .npz that would inflate to gigabytes -- or more than the file holds, it is a UserError.
    """
    from ..ir.budget import resolve_limit

    limit = resolve_limit(max_bytes)
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        if path.suffix == ".npy":
            with open(path, "rb") as stream:
                shape, dtype = _npy_header(stream, str(path))
                size = _checked_size(shape, dtype, str(path), limit)
                available = path.stat().st_size - stream.tell()
            if size > available:
                raise UserError(f"{path}: truncated: its header announces {size} bytes of data, the file holds "
                                f"{available}")
            return np.load(path, allow_pickle=False)
        if path.suffix == ".npz":
            import zipfile

            try:
                archive = zipfile.ZipFile(path)
            except zipfile.BadZipFile as exc:
                raise UserError(f"{path}: not a readable .npz archive ({_first_line(exc)})") from None
            with archive:
                total = 0
                for info in archive.infolist():
                    what = f"{path}[{info.filename}]"
                    with archive.open(info) as member:
                        shape, dtype = _npy_header(member, what)
                    total += _checked_size(shape, dtype, what, limit)
                    if total > limit:
                        raise UserError(f"{path}: its arrays hold more than the limit of {limit} bytes together "
                                        f"(raise it with --max-constant-bytes)")
            with np.load(path, allow_pickle=False) as arrays:
                return {k: arrays[k] for k in arrays.files}
        if path.suffix == ".pb":
            import onnx
            from onnx import numpy_helper

            from ..onnx_import.attributes import check_tensor_proto

            tensor = onnx.TensorProto()
            tensor.ParseFromString(path.read_bytes())
            problem = check_tensor_proto(tensor, "the tensor")
            if problem:
                raise UserError(f"{path}: {problem}")
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type))
            _checked_size(list(tensor.dims), dtype, str(path), limit)
            return numpy_helper.to_array(tensor)
    except UserError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise UserError(f"{path}: cannot read an array ({_first_line(exc)})") from None
    except Exception as exc:  # protobuf's DecodeError, zipfile's errors have no stable import path
        raise UserError(f"{path}: cannot read an array ({type(exc).__name__}: {_first_line(exc)})") from None
    raise UserError(f"{path}: unknown input file type (expected .npy, .npz or .pb)")


def parse_input_specs(specs: Sequence[str], names: Sequence[str], max_bytes: int | None = None
                      ) -> dict[str, np.ndarray]:
    """``NAME=FILE`` specs of ``--input``, or a bare ``FILE``: a ``.npz`` (its keys are input names), or the one input
    of a one-input model (a ``.pb`` may also name its input); each file read with :func:`read_array` (``max_bytes``).
    A malformed spec, a missing file, an input given twice or an unknown name is a CommandLineError."""
    given: dict[str, np.ndarray] = {}
    source: dict[str, str] = {}

    def add(name: str, array, spec: str) -> None:
        if name in given:
            raise CommandLineError(f"--input {spec}: input {name!r} is given already (by --input {source[name]})")
        given[name], source[name] = array, spec

    for spec in specs:
        name, file = split_spec(spec)
        if name == "":
            raise CommandLineError(f"--input {spec}: expected NAME=FILE or FILE")
        path = spec_file("--input", spec, file)
        data = read_array(path, max_bytes)
        if name is not None:
            if isinstance(data, dict):
                raise CommandLineError(f"--input {spec}: a .npz holds several arrays; pass it without NAME=")
            add(name, data, spec)
        elif isinstance(data, dict):
            for key, array in data.items():
                add(key, array, spec)
        else:
            tensor_name = _tensor_proto_name(path) if path.suffix.lower() == ".pb" else ""
            if tensor_name in names:
                add(tensor_name, data, spec)
            elif len(names) == 1:
                add(names[0], data, spec)
            else:
                raise CommandLineError(f"--input {spec}: the model has {len(names)} inputs ({', '.join(names)}); "
                                       f"say which: --input NAME={spec}")
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise CommandLineError(f"--input: unknown input name(s) {unknown}; the model's inputs are {list(names)}")
    return given


def parse_constant_specs(specs: Sequence[str], max_bytes: int | None = None) -> dict[str, np.ndarray | str]:
    """``NAME=FILE`` (.npy/.npz/.pb) or ``NAME=VALUE[,VALUE...]`` (numbers, typed later by the model's input)."""
    bound: dict[str, np.ndarray | str] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name or not value:
            raise CommandLineError(f"--constant-input {spec}: expected NAME=FILE or NAME=VALUE[,VALUE...]")
        if name in bound:
            raise CommandLineError(f"--constant-input {spec}: input {name!r} is bound already")
        if any(value.lower().endswith(suffix) for suffix in ARRAY_SUFFIXES):
            data = read_array(spec_file("--constant-input", spec, value), max_bytes)
            if isinstance(data, dict):
                if len(data) != 1:
                    raise UserError(f"--constant-input {spec}: a .npz with {len(data)} arrays; give one array")
                data = next(iter(data.values()))
            bound[name] = np.asarray(data)
        else:
            bound[name] = value  # a literal: typed once the model's declared dtype is known
    return bound


def _literal(name: str, text: str, dtype: np.dtype | None) -> np.ndarray:
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) if dtype is None or dtype.kind == "f" else int(p) for p in parts]
    except ValueError:
        raise CommandLineError(f"--constant-input {name}={text}: not a file (.npy/.npz/.pb) and not numbers") from None
    array = np.asarray(values if len(values) > 1 else values[0], dtype=dtype or np.float32)
    return array


def import_options(model, inputs: ModelInputs) -> dict:
    """``input_shapes`` and ``constant_inputs`` for ``from_onnx``: explicit shapes, the shapes of the data given
    (for inputs with dynamic dims), constants typed by the model; a UserError for anything inconsistent."""
    declared = declared_inputs(model)
    names = sorted(declared)

    def known(name: str, what: str) -> DeclaredInput:
        if name not in declared:
            raise CommandLineError(f"{what}: unknown input {name!r} (the model's inputs: {names})")
        return declared[name]

    shapes: dict[str, list[int]] = {}
    for name, dims in inputs.shapes.items():
        shapes[name] = _pinned(known(name, "--input-shape"), [int(d) for d in dims], "--input-shape",
                               inputs.override_static)
    if inputs.override_static:  # the data and constants are checked against the overridden dims
        declared = {name: DeclaredInput(entry.name, entry.dtype, tuple(shapes[name]) if name in shapes else entry.dims)
                    for name, entry in declared.items()}
    for name, array in inputs.data.items():
        entry = known(name, "--input")
        dims = _pinned(entry, list(np.shape(array)), "the data given for it")
        if name in shapes and shapes[name] != dims:
            raise UserError(f"input {name!r}: --input-shape {shapes[name]} but the data given has shape {dims}")
        if entry.dims is None or any(d is None for d in entry.dims):
            shapes[name] = dims
    constants: dict[str, np.ndarray] = {}
    for name, value in inputs.constants.items():
        entry = known(name, "--constant-input")
        if name in inputs.data:
            raise UserError(f"input {name!r} is given both as data (--input) and as a constant (--constant-input)")
        array = _literal(name, value, entry.dtype) if isinstance(value, str) else np.asarray(value)
        if entry.dtype is not None and array.dtype != entry.dtype:
            if not np.can_cast(array.dtype, entry.dtype, "same_kind"):
                raise UserError(f"constant input {name!r} has dtype {array.dtype}, the model declares {entry.dtype}")
            array = array.astype(entry.dtype)
        _pinned(entry, list(array.shape), "the constant given for it")
        constants[name] = array
    return {"input_shapes": shapes, "constant_inputs": constants}


def _pinned(entry: DeclaredInput, dims: list[int], source: str, override_static: bool = False) -> list[int]:
    """``dims`` checked against what the model declares for the input (``override_static``: the rank only)."""
    error = CommandLineError if source.startswith("--") else UserError
    if any(d <= 0 for d in dims):
        raise error(f"input {entry.name!r}: {source} has shape {dims}; dims must be positive")
    if entry.dims is None:
        return dims
    if len(entry.dims) != len(dims):
        raise error(f"input {entry.name!r} has rank {len(entry.dims)} (shape {_shown(entry.dims)}), "
                    f"{source} has rank {len(dims)} ({dims})")
    for axis, (declared, given) in enumerate(zip(entry.dims, dims)):
        if declared is not None and declared != given and not override_static:
            hint = " (--override-static replaces static dims too)" if source == "--input-shape" else ""
            raise error(f"input {entry.name!r} has the static shape {_shown(entry.dims)}, {source} has shape "
                        f"{dims} (dim {axis}: {declared} vs {given}; only dynamic dims can be pinned{hint})")
    return dims


def override_static_dims(model, shapes: dict[str, list[int]]):
    """A copy of the ONNX ``model`` whose inputs in ``shapes`` are declared with those dims (static ones replaced:
    ``--override-static``), every intermediate and output shape left to inference (the recorded ones were computed
    for the old dims)."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for info in copy.graph.input:
        if info.name in shapes:
            shape = info.type.tensor_type.shape
            del shape.dim[:]
            for d in shapes[info.name]:
                shape.dim.add().dim_value = int(d)
    del copy.graph.value_info[:]
    for info in copy.graph.output:
        info.type.tensor_type.ClearField("shape")
    return copy


def _shown(dims) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def parse_expected_specs(specs: Sequence[str], outputs: Sequence[str]) -> dict[str, np.ndarray]:
    """Golden outputs of ``--expected``: ``NAME=FILE`` (.npy/.pb, or a .npz holding one array), a bare ``.npz``
    (its keys are output names), a bare ``.pb`` (the TensorProto's name, or the model's only output), or a bare
    ``.npy`` (the model's only output). A malformed spec, a missing file or an output given twice is a
    CommandLineError."""
    golden: dict[str, np.ndarray] = {}
    source: dict[str, str] = {}

    def add(name: str, array, spec: str) -> None:
        if name in golden:
            raise CommandLineError(f"--expected {spec}: output {name!r} is given already (by --expected "
                                   f"{source[name]})")
        golden[name], source[name] = np.asarray(array), spec

    for spec in specs:
        name, file = split_spec(spec)
        if name == "":
            raise CommandLineError(f"--expected {spec}: expected NAME=FILE, FILE.npz, or a .pb/.npy for a model's "
                                   f"output")
        path = spec_file("--expected", spec, file)
        data = read_array(path)
        if name is not None:
            if isinstance(data, dict):
                if len(data) != 1:
                    raise CommandLineError(f"--expected {spec}: a .npz with {len(data)} arrays; pass it without "
                                           f"NAME=")
                data = next(iter(data.values()))
            add(name, data, spec)
            continue
        if isinstance(data, dict):
            for key, array in data.items():
                add(key, array, spec)
            continue
        tensor_name = _tensor_proto_name(path) if path.suffix.lower() == ".pb" else ""
        if tensor_name:
            add(tensor_name, data, spec)
        elif len(outputs) == 1:
            add(outputs[0], data, spec)
        else:
            raise CommandLineError(f"--expected {spec}: the model has {len(outputs)} outputs; say which: "
                                   f"NAME={spec}")
    unknown = sorted(set(golden) - set(outputs))
    if unknown:
        raise CommandLineError(f"--expected: unknown output name(s) {unknown}; the model's outputs are "
                               f"{list(outputs)}")
    return golden


def _tensor_proto_name(path: str | Path) -> str:
    import onnx

    tensor = onnx.TensorProto()
    tensor.ParseFromString(Path(path).read_bytes())
    return tensor.name


def save_arrays(path: str | Path, arrays: dict[str, np.ndarray], what: str = "--save-inputs") -> Path:
    """``arrays`` as one ``.npz`` (keys: the names), written atomically; a UserError when it cannot be."""
    import io

    from ..serialization import atomic_write

    path = Path(path)
    if path.suffix.lower() != ".npz":
        raise UserError(f"{what} {path}: the file must end in .npz")
    buffer = io.BytesIO()
    np.savez(buffer, **{name: np.asarray(a) for name, a in arrays.items()})
    try:
        atomic_write(path, [buffer.getvalue()])
    except OSError as exc:
        raise UserError(f"{what}: {cannot('write', path, exc)}") from None
    return path
