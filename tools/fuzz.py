"""A structure-aware mutation fuzzer of the ONNX importer (issue 12): hostile and broken models never crash the tool.

    python tools/fuzz.py --minutes 30              # a campaign; new crash sites saved, minimized, under
                                                   # tests/data/fuzz_regressions/ (the test suite replays them)
    python tools/fuzz.py --count 500 --seed 7      # a fixed slice (what the CI test runs)
    python tools/fuzz.py --replay FILE.onnx        # one model through the same checks, the outcome printed

Seeds are real models: every case of the ONNX backend node suite (``collect_testcases``) and ``models/*.onnx``.
Mutant ``i`` of seed ``s`` is a pure function of (s, i): 1-4 mutations of one seed model -- attribute values and
types (ints <-> lists, strings that are not UTF-8, huge and negative numbers), dims and element types of tensors,
edges (inputs rewired, dropped, written twice), initializers (dims against data, values, element types), opsets,
op types, domains, nodes dropped, duplicated and reordered, constants that make shapes huge; then, for some, damage
to the serialized bytes themselves (bits flipped, truncated, slices cut or repeated).

Each mutant runs in a worker subprocess (restarted every --batch mutants) under a memory limit (RLIMIT_AS) and a
time limit, written to a file and converted from it by ``from_onnx`` (with a small ``max_constant_bytes``; the
workers read initializers of more than SPLIT_ELEMENTS elements straight from the file, as production does for large
ones), then -- when it converted -- the ``.nnrt``
bytes round trip and ``Compilation.build``. Outcomes:

    converted   the model converted (and its file reloads, and it builds or is refused with an NNRtError)
    clean       a ConversionError whose issues are all ordinary reasons (invalid_model, unsupported_op, ...)
    crash       any other exception, or an issue ``internal_error``; its site is the file:line of the innermost
                project frame
    memory      MemoryError or an issue ``out_of_memory`` (the budget did not foresee an allocation)
    hang        over the time limit
    died        the worker process died (a signal, e.g. a segfault in a native library)

Exit status: 0 when no mutant crashed, ran out of memory, hung or killed its worker; 1 otherwise.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import os
import random
import struct
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # (its sibling fuzz_workers, also when loaded by path)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_workers  # noqa: E402
from fuzz_workers import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, Hang  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REGRESSIONS = ROOT / "tests" / "data" / "fuzz_regressions"
BAD = ("crash", "memory", "hang", "died")
SPLIT_ELEMENTS = 16  # in the workers: initializers of more elements are read from the file (production: 1024)
FUZZ_BUDGET = 64 << 20  # max_constant_bytes of the conversions under test
CORPUS_FORMAT = 2  # 2: with the "+initializers" variants of the node-suite cases


# -- the corpus --------------------------------------------------------------------------------------------------------

def _corpus_cache() -> Path:
    import onnx

    key = hashlib.sha256(f"{onnx.__version__}|{sys.version}|{CORPUS_FORMAT}".encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"nnrt_onnx_fuzz_corpus_{os.getuid() if hasattr(os, 'getuid') else 0}_{key}"


def _write_corpus(path: Path, entries: list[tuple[str, bytes]]) -> None:
    chunks = [struct.pack("<I", len(entries))]
    for name, data in entries:
        raw = name.encode()
        chunks += [struct.pack("<IQ", len(raw), len(data)), raw, data]
    temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        temp.write_bytes(b"".join(chunks))
        os.replace(temp, path)
    except OSError:  # (a cache only)
        try:
            temp.unlink()
        except OSError:
            pass


def _read_corpus(path: Path) -> list[tuple[str, bytes]] | None:
    try:
        data = path.read_bytes()
        (count,) = struct.unpack_from("<I", data, 0)
        offset, entries = 4, []
        for _ in range(count):
            name_length, model_length = struct.unpack_from("<IQ", data, offset)
            offset += 12
            name = data[offset:offset + name_length].decode()
            offset += name_length
            entries.append((name, data[offset:offset + model_length]))
            offset += model_length
        return entries if offset == len(data) else None
    except (OSError, struct.error, UnicodeDecodeError):
        return None


def corpus() -> list[tuple[str, bytes]]:
    """(name, serialized ModelProto) of every seed: the node suite's cases and models/*.onnx, sorted by name.
    Cached in the temp directory per onnx version (a plain length-prefixed file: no pickle)."""
    cache = _corpus_cache()
    cached = _read_corpus(cache)
    if cached:
        return cached
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    entries = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in collect_testcases(None):
            if case.model is not None:
                entries.append((case.name, case.model.SerializeToString()))
                variant = _with_initializers(case)
                if variant is not None:
                    entries.append((f"{case.name}+initializers", variant))
    for path in sorted((ROOT / "models").glob("*.onnx")):
        entries.append((f"models/{path.name}", path.read_bytes()))
    entries.sort()
    _write_corpus(cache, entries)
    return entries


def _with_initializers(case) -> bytes | None:
    """The case's model with every input after the first an initializer holding the case's test data (as weights
    are): initializers, the file's external-data path and constant folding get seeds too. None when there is
    nothing to move."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    if not case.data_sets or len(case.model.graph.input) < 2:
        return None
    arrays = case.data_sets[0][0]
    inputs = list(case.model.graph.input)
    if len(arrays) != len(inputs) or not all(isinstance(a, np.ndarray) and a.dtype.kind in "biuf"
                                             for a in arrays[1:]):
        return None
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    del model.graph.input[1:]
    for info, array in zip(inputs[1:], arrays[1:]):
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(array), info.name))
    model.ir_version = max(model.ir_version, 4)  # (initializers need not be listed as inputs)
    return model.SerializeToString()


# -- mutations ---------------------------------------------------------------------------------------------------------

INTS = [0, 1, -1, 2, 3, -2, 4, 7, 64, 255, 1 << 15, (1 << 31) - 1, 1 << 31, 1 << 32, 1 << 40, 1 << 62,
        -(1 << 63), (1 << 63) - 1]
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-38, 1e38, 3.4e38, float("inf"), float("-inf"), float("nan")]
STRINGS = [b"", b"\xff", b"\xc3\x28", b"\x00", b"nearest", b"linear", b"cubic", b"constant", b"reflect", b"edge",
           b"wrap", b"SAME_UPPER", b"SAME_LOWER", b"VALID", b"NOTSET", b"forward", b"reverse", b"bidirectional",
           b"DCR", b"CRD", b"half_pixel", b"align_corners", b"asymmetric", b"tf_crop_and_resize", b"floor",
           b"round_prefer_ceil", b"a" * 300, b"Relu", b"Tanh", b"Sigmoid", b"ij,jk->ik", b"...", b"->", b"i,i",
           b"none", b"add", b"mul", b"max", b"NCHW", b"tanh", b"erf", b"not_a_mode"]


def _interesting_int(rng: random.Random) -> int:
    return rng.choice(INTS) if rng.random() < 0.7 else rng.randint(-8, 16)


def _tensor_names(graph) -> list[str]:
    names = [i.name for i in graph.input] + [t.name for t in graph.initializer]
    for node in graph.node:
        names += [o for o in node.output if o]
    return names or ["x"]


def _value_infos(graph) -> list:
    return list(graph.input) + list(graph.output) + list(graph.value_info)


def _mutate_ints(rng, values: list[int]) -> list[int]:
    values = list(values)
    choice = rng.randrange(5)
    if choice == 0 and values:
        values[rng.randrange(len(values))] = _interesting_int(rng)
    elif choice == 1:
        values.append(_interesting_int(rng))
    elif choice == 2 and values:
        values.pop(rng.randrange(len(values)))
    elif choice == 3:
        values = []
    else:
        values = values * 2 if values else [_interesting_int(rng)]
    return values


def m_attr_value(rng, model) -> str:
    from onnx import AttributeProto as A

    nodes = [n for n in model.graph.node if n.attribute]
    if not nodes:
        return ""
    node = rng.choice(nodes)
    attr = rng.choice(node.attribute)
    if attr.type == A.INT:
        attr.i = _interesting_int(rng)
    elif attr.type == A.INTS:
        new = _mutate_ints(rng, attr.ints)
        del attr.ints[:]
        attr.ints.extend(new)
    elif attr.type == A.FLOAT:
        attr.f = rng.choice(FLOATS)
    elif attr.type == A.FLOATS:
        values = list(attr.floats) or [1.0]
        values[rng.randrange(len(values))] = rng.choice(FLOATS)
        del attr.floats[:]
        attr.floats.extend(values if rng.random() < 0.8 else values[:-1])
    elif attr.type == A.STRING:
        attr.s = rng.choice(STRINGS)
    elif attr.type == A.STRINGS:
        values = list(attr.strings) or [b"x"]
        values[rng.randrange(len(values))] = rng.choice(STRINGS)
        del attr.strings[:]
        attr.strings.extend(values)
    elif attr.type == A.TENSOR:
        _mutate_tensor(rng, attr.t)
    else:
        return ""
    return f"attr {node.op_type}.{attr.name}"


def m_attr_type(rng, model) -> str:
    from onnx import AttributeProto as A

    nodes = [n for n in model.graph.node if n.attribute]
    if not nodes:
        return ""
    node = rng.choice(nodes)
    attr = rng.choice(node.attribute)
    name = attr.name
    value = _interesting_int(rng)
    new = rng.choice(["int", "ints", "float", "string", "floats", "strings", "none"])
    attr.Clear()
    attr.name = name
    if new == "int":
        attr.type, attr.i = A.INT, value
    elif new == "ints":
        attr.type = A.INTS
        attr.ints.extend([value, _interesting_int(rng)][: rng.randint(0, 2)])
    elif new == "float":
        attr.type, attr.f = A.FLOAT, rng.choice(FLOATS)
    elif new == "floats":
        attr.type = A.FLOATS
        attr.floats.extend([rng.choice(FLOATS)])
    elif new == "string":
        attr.type, attr.s = A.STRING, rng.choice(STRINGS)
    elif new == "strings":
        attr.type = A.STRINGS
        attr.strings.extend([rng.choice(STRINGS)])
    else:
        attr.i = value  # no type at all
    return f"attr-type {node.op_type}.{name} -> {new}"


def m_attr_drop(rng, model) -> str:
    nodes = [n for n in model.graph.node if n.attribute]
    if not nodes:
        return ""
    node = rng.choice(nodes)
    attr = node.attribute.pop(rng.randrange(len(node.attribute)))
    return f"attr-drop {node.op_type}.{attr.name}"


def m_attr_add(rng, model) -> str:
    from onnx import defs, helper

    if not model.graph.node:
        return ""
    node = rng.choice(model.graph.node)
    names = ["axis", "axes", "perm", "mode", "kernel_shape", "strides", "pads", "to", "value", "k", "group",
             "keepdims", "alpha", "epsilon", "size", "blocksize", "transA", "direction", "hidden_size"]
    try:
        names = list(defs.get_schema(node.op_type).attributes) or names
    except Exception:
        pass
    name = rng.choice(names)
    if any(a.name == name for a in node.attribute):
        return ""
    kind = rng.randrange(4)
    value = (_interesting_int(rng), [_interesting_int(rng) for _ in range(rng.randint(0, 4))], rng.choice(FLOATS),
             rng.choice(STRINGS))[kind]
    node.attribute.append(helper.make_attribute(name, value))
    return f"attr-add {node.op_type}.{name}"


def m_dim(rng, model) -> str:
    infos = [i for i in _value_infos(model.graph) if i.type.HasField("tensor_type")]
    if not infos:
        return ""
    info = rng.choice(infos)
    shape = info.type.tensor_type.shape
    choice = rng.randrange(5)
    if choice == 0 and shape.dim:
        dim = rng.choice(shape.dim)
        dim.dim_value = rng.choice([0, 1, 2, 3, 7, 1 << 20, 1 << 31, 1 << 40, -1, -5])
    elif choice == 1 and shape.dim:
        rng.choice(shape.dim).dim_param = rng.choice(["N", "batch", "", "?"])
    elif choice == 2:
        shape.dim.add().dim_value = rng.choice([1, 2, 5, 1 << 24])
    elif choice == 3 and shape.dim:
        del shape.dim[rng.randrange(len(shape.dim))]
    else:
        info.type.tensor_type.ClearField("shape")
    return f"dim {info.name}"


def m_elem_type(rng, model) -> str:
    infos = [i for i in _value_infos(model.graph) if i.type.HasField("tensor_type")]
    if not infos:
        return ""
    info = rng.choice(infos)
    info.type.tensor_type.elem_type = rng.randint(0, 23)
    return f"elem-type {info.name}"


def _mutate_tensor(rng, tensor) -> None:
    import numpy as np
    from onnx import numpy_helper

    choice = rng.randrange(5)
    if choice == 0 and tensor.dims:
        tensor.dims[rng.randrange(len(tensor.dims))] = rng.choice([0, 1, 2, 5, 1 << 20, 1 << 40, -1])
    elif choice == 1:
        tensor.data_type = rng.randint(1, 23)
    elif choice == 2 and tensor.HasField("raw_data"):
        tensor.raw_data = tensor.raw_data[: rng.randrange(len(tensor.raw_data) + 1)]
    else:
        try:
            array = numpy_helper.to_array(tensor)
        except Exception:
            return
        if array.size == 0 or array.size > 1 << 16:
            return
        flat = array.reshape(-1).copy()
        if array.dtype.kind in "iu":
            info = np.iinfo(array.dtype)
            flat[rng.randrange(flat.size)] = max(min(_interesting_int(rng), info.max), info.min)
        elif array.dtype.kind == "f":
            flat[rng.randrange(flat.size)] = rng.choice(FLOATS)
        else:
            return
        tensor.CopyFrom(numpy_helper.from_array(flat.reshape(array.shape), tensor.name))


def m_initializer(rng, model) -> str:
    if not model.graph.initializer:
        return ""
    tensor = rng.choice(model.graph.initializer)
    _mutate_tensor(rng, tensor)
    return f"initializer {tensor.name}"


def m_rewire(rng, model) -> str:
    nodes = [n for n in model.graph.node if n.input]
    if not nodes:
        return ""
    node = rng.choice(nodes)
    position = rng.randrange(len(node.input))
    node.input[position] = rng.choice(_tensor_names(model.graph) + ["", "ghost"])
    return f"rewire {node.op_type} input {position}"


def m_arity(rng, model) -> str:
    if not model.graph.node:
        return ""
    node = rng.choice(model.graph.node)
    if node.input and rng.random() < 0.5:
        node.input.pop()
        return f"drop-input {node.op_type}"
    node.input.append(rng.choice(_tensor_names(model.graph) + [""]))
    return f"add-input {node.op_type}"


def m_output(rng, model) -> str:
    graph = model.graph
    choice = rng.randrange(4)
    nodes = [n for n in graph.node if n.output]
    if choice == 0 and nodes:
        node = rng.choice(nodes)
        node.output[rng.randrange(len(node.output))] = rng.choice(_tensor_names(graph) + ["fresh", ""])
        return f"node-output {node.op_type}"
    if choice == 1 and len(graph.output) > 1:
        graph.output.pop(rng.randrange(len(graph.output)))
        return "graph-output-drop"
    if choice == 2:
        info = graph.output.add()
        info.name = rng.choice(_tensor_names(graph) + ["ghost"])
        return "graph-output-add"
    if graph.output:
        graph.output[rng.randrange(len(graph.output))].name = rng.choice(_tensor_names(graph))
        return "graph-output-rename"
    return ""


def m_opset(rng, model) -> str:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = rng.choice([1, 5, 6, 7, 9, 10, 11, 12, 13, 17, 18, 20, 21, 23, 24, 0, 99, -1])
            return f"opset {entry.version}"
    return ""


def m_op_type(rng, model) -> str:
    from onnx import defs

    if not model.graph.node:
        return ""
    node = rng.choice(model.graph.node)
    ops = sorted({s.name for s in defs.get_all_schemas() if s.domain == ""})
    node.op_type = rng.choice(ops)
    return f"op-type -> {node.op_type}"


def m_nodes(rng, model) -> str:
    graph = model.graph
    if not graph.node:
        return ""
    choice = rng.randrange(3)
    i = rng.randrange(len(graph.node))
    if choice == 0:
        node = graph.node.pop(i)
        return f"node-drop {node.op_type}"
    if choice == 1:
        copy = graph.node.add()
        copy.CopyFrom(graph.node[i])
        return f"node-dup {copy.op_type}"
    j = rng.randrange(len(graph.node))
    a, b = type(graph.node[i])(), type(graph.node[j])()
    a.CopyFrom(graph.node[i])
    b.CopyFrom(graph.node[j])
    graph.node[i].CopyFrom(b)
    graph.node[j].CopyFrom(a)
    return "node-swap"


def m_domain(rng, model) -> str:
    if not model.graph.node:
        return ""
    node = rng.choice(model.graph.node)
    node.domain = rng.choice(["ai.onnx", "com.microsoft", "nnrt", "", "ai.onnx.ml"])
    return f"domain {node.op_type} -> {node.domain!r}"


def m_constant(rng, model) -> str:
    """An input of some node replaced by a Constant node holding interesting integers (shapes, repeats, axes)."""
    import numpy as np
    from onnx import helper, numpy_helper

    nodes = [n for n in model.graph.node if n.input]
    if not nodes:
        return ""
    node = rng.choice(nodes)
    position = rng.randrange(len(node.input))
    values = [_interesting_int(rng) for _ in range(rng.randint(0, 4))]
    array = np.asarray(values if rng.random() < 0.8 else (values[0] if values else 0), np.int64)
    name = f"fuzz_const_{len(model.graph.node)}"
    constant = helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array))
    index = list(model.graph.node).index(node)
    model.graph.node.insert(index, constant)
    model.graph.node[index + 1].input[position] = name
    return f"constant {array.tolist()} -> {node.op_type} input {position}"


def m_bytes(rng, data: bytes) -> tuple[bytes, str]:
    """Damage the serialized model itself (what a torn download or a bad disk does): the importer's wire scanner and
    then protobuf see bytes no mutation of the message can make."""
    if not data:
        return data, ""
    i, j = sorted(rng.randrange(len(data) + 1) for _ in range(2))
    kind = rng.choice(("flip", "truncate", "cut", "repeat", "byte"))
    if kind == "flip" and i < len(data):
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:], f"bytes: bit flipped at {i}"
    if kind == "truncate":
        return data[:i], f"bytes: truncated to {i}"
    if kind == "cut" and j > i:
        return data[:i] + data[j:], f"bytes: {i}..{j} cut"
    if kind == "repeat" and j > i:
        return data[:j] + data[i:j] + data[j:], f"bytes: {i}..{j} repeated"
    if i < len(data):
        value = rng.choice((0x00, 0x7F, 0x80, 0xFF))
        return data[:i] + bytes([value]) + data[i + 1:], f"bytes: {value:#04x} at {i}"
    return data, ""


MUTATORS = [(m_attr_value, 6), (m_attr_type, 3), (m_attr_drop, 2), (m_attr_add, 2), (m_dim, 4), (m_elem_type, 2),
            (m_initializer, 5), (m_rewire, 3), (m_arity, 2), (m_output, 2), (m_opset, 2), (m_op_type, 3),
            (m_nodes, 2), (m_domain, 1), (m_constant, 4)]


# what the closing table of a campaign groups by
FAMILIES = {"attributes": (m_attr_value, m_attr_type, m_attr_drop, m_attr_add), "dims and dtypes": (m_dim, m_elem_type),
            "initializers and constants": (m_initializer, m_constant), "edges": (m_rewire, m_arity, m_output),
            "ops, domains, opsets, nodes": (m_op_type, m_domain, m_opset, m_nodes), "file bytes": (m_bytes,)}
BYTES_SHARE = 0.15  # of the mutants: their serialized bytes damaged after the message mutations
_FAMILY_OF = {function: family for family, functions in FAMILIES.items() for function in functions}


def mutant(seeds: list[tuple[str, bytes]], seed: int, index: int,
           families: list[str] | None = None) -> tuple[str, bytes, list[str]]:
    """Mutant ``index`` of campaign ``seed``: (seed model name, serialized mutant, the mutations applied). The
    FAMILIES of the mutations applied are appended to ``families`` when given."""
    import onnx

    rng = random.Random(seed * 1_000_003 + index)
    name, data = seeds[rng.randrange(len(seeds))]
    model = onnx.ModelProto.FromString(data)
    applied = []
    functions, weights = zip(*MUTATORS)
    for _ in range(1 + min(int(rng.expovariate(1.0)), 3)):
        mutate = rng.choices(functions, weights)[0]
        try:
            what = mutate(rng, model)
        except (ValueError, TypeError, IndexError, OverflowError):  # a value protobuf refuses: skip this mutation
            what = ""
        if what:
            applied.append(what)
            if families is not None and _FAMILY_OF[mutate] not in families:
                families.append(_FAMILY_OF[mutate])
    data = model.SerializeToString()
    if rng.random() < BYTES_SHARE:
        data, what = m_bytes(rng, data)
        if what:
            applied.append(what)
            if families is not None:
                families.append("file bytes")
    return name, data, applied


# -- one mutant, in a worker -------------------------------------------------------------------------------------------

def classify(data: bytes, max_constant_bytes: int = FUZZ_BUDGET) -> dict:
    """Run one serialized model (the file's bytes) through conversion, the file round trip and build; the outcome
    as a dict."""
    from nnrt_onnx import Compilation, NNRtError
    from nnrt_onnx.onnx_import import ConversionError, from_onnx
    from nnrt_onnx.onnx_import.guard import site
    from nnrt_onnx.serialization import model_from_bytes, model_to_bytes

    stage = "convert"
    try:
        # through a file, as users convert: the importer's own wire scanner (onnx_import.weights) reads it first
        path = fuzz_workers.scratch_file("mutant.onnx")
        path.write_bytes(data)
        result = from_onnx(str(path), max_constant_bytes=max_constant_bytes)
        stage = "round trip"
        again = model_from_bytes(model_to_bytes(result.model))
        if len(again.operations) != len(result.model.operations):
            return {"outcome": "crash", "site": "serialization round trip", "detail": "operation count differs"}
        stage = "build"
        try:
            compilation = Compilation(result.model)
            compilation.build()
        except NNRtError as exc:
            return {"outcome": "converted", "detail": f"build refused: {exc.code.name}"}
        return {"outcome": "converted", "detail": ""}
    except ConversionError as error:
        reasons = sorted({i.reason for i in error.issues})
        for issue in error.issues:
            where = fuzz_workers.site_of_issue(issue.message)
            if issue.reason == "internal_error":
                return {"outcome": "crash", "site": where, "detail": issue.message[:300]}
            if issue.reason == "out_of_memory":
                return {"outcome": "memory", "site": where, "detail": issue.message[:300]}
        return {"outcome": "clean", "detail": ",".join(reasons)}
    except MemoryError as exc:
        return {"outcome": "memory", "site": site(exc), "detail": f"MemoryError in {stage}"}
    except Hang:
        return {"outcome": "hang", "site": stage, "detail": "over the time limit"}
    except Exception as exc:
        return {"outcome": "crash", "site": site(exc),
                "detail": f"{stage}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"}


def _worker(memory_mb: int, timeout: float) -> None:
    """The worker loop (fuzz_workers.serve) with the library imported and the corpus loaded."""
    import warnings

    warnings.simplefilter("ignore")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import nnrt_onnx.onnx_import  # noqa: F401  (imports before the limit: they are not the findings)
    from nnrt_onnx.onnx_import import weights

    weights.SPLIT_ELEMENTS = SPLIT_ELEMENTS  # the seeds' initializers are small: most of them take the file path too
    from nnrt_onnx.kernels import kernels
    from nnrt_onnx.onnx_import.handlers import registered

    kernels()
    registered()
    seeds = corpus()

    def load(task: dict) -> tuple[bytes, dict]:
        families: list[str] = []
        if "model" in task:
            return base64.b64decode(task["model"]), {"families": families}
        _, data, _ = mutant(seeds, task["seed"], task["index"], families)
        return data, {"families": families}

    fuzz_workers.serve(memory_mb, timeout, load, classify)


# -- the campaign ------------------------------------------------------------------------------------------------------

@dataclass
class Report:
    seed: int
    tried: int = 0
    seconds: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    details: Counter = field(default_factory=Counter)  # clean reasons, build refusals
    sites: dict = field(default_factory=dict)  # "outcome site" -> {"count", "example": {...}}
    by_family: dict = field(default_factory=dict)  # mutation family -> Counter of outcomes (a mutant counts in each)
    peak_rss_mb: float = 0.0  # the largest peak RSS of a worker during one mutant (its start-up included)
    peak_rss_example: dict = field(default_factory=dict)  # which mutant that was
    family_peak_rss_mb: dict = field(default_factory=dict)  # mutation family -> the largest peak RSS of its mutants

    @property
    def bad(self) -> int:
        return sum(self.outcomes[o] for o in BAD)

    def to_dict(self) -> dict:
        return {"seed": self.seed, "tried": self.tried, "seconds": round(self.seconds, 1),
                "outcomes": dict(self.outcomes), "peak_rss_mb": round(self.peak_rss_mb, 1),
                "peak_rss_example": self.peak_rss_example,
                "by_family": {f: dict(c) for f, c in self.by_family.items()},
                "family_peak_rss_mb": {f: round(v, 1) for f, v in self.family_peak_rss_mb.items()},
                "details": dict(self.details.most_common(40)), "sites": self.sites}


class Runner(fuzz_workers.Runner):
    """Workers that classify tasks (mutant indices or explicit model bytes): see fuzz_workers.Runner."""

    script = Path(__file__).resolve()


def campaign(seed: int = 0, count: int | None = None, minutes: float | None = None, workers: int = 1,
             batch: int = 500, memory_mb: int = DEFAULT_MEMORY_MB, timeout: float = DEFAULT_TIMEOUT,
             save: bool = False, progress=None, package: str | None = None) -> Report:
    """Mutants 0, 1, 2 ... of ``seed`` until ``count`` are tried or ``minutes`` pass; a Report. With ``save``, each
    new bad site is minimized and written to tests/data/fuzz_regressions/."""
    seeds = corpus()
    report = Report(seed)
    runner = Runner(workers, batch, memory_mb, timeout, package)
    started = time.monotonic()
    deadline = started + minutes * 60 if minutes else math.inf
    known = set(_known_sites()) if save else set()
    counter = range(count if count is not None else sys.maxsize)

    def record(index: int, result: dict, slot: int) -> None:
        outcome = result["outcome"]
        report.tried += 1
        report.outcomes[outcome] += 1
        for family in result.get("families") or ():
            report.by_family.setdefault(family, Counter())[outcome] += 1
            peak = result.get("peak_rss_mb") or 0.0
            report.family_peak_rss_mb[family] = max(report.family_peak_rss_mb.get(family, 0.0), peak)
        if (result.get("peak_rss_mb") or 0.0) > report.peak_rss_mb:
            report.peak_rss_mb = result["peak_rss_mb"]
            name, _, applied = mutant(seeds, seed, index)
            report.peak_rss_example = {"index": index, "seed_model": name, "mutations": applied,
                                       "outcome": outcome}
        if outcome in ("clean", "converted") and result.get("detail"):
            report.details[f"{outcome}: {result['detail']}"] += 1
        if outcome in BAD:
            key = f"{outcome} {result.get('site', '?')}"
            entry = report.sites.setdefault(key, {"count": 0})
            entry["count"] += 1
            if "example" not in entry:
                name, data, applied = mutant(seeds, seed, index)
                entry["example"] = {"index": index, "seed_model": name, "mutations": applied,
                                    "detail": result.get("detail", "")}
                if save and key not in known:
                    known.add(key)
                    entry["saved"] = str(_save(runner, slot, key, data, entry["example"]))
        if progress is not None:
            progress(report)

    try:
        fuzz_workers.run_tasks(runner, ((index, {"seed": seed, "index": index}) for index in counter), record, deadline)
    finally:
        report.seconds = time.monotonic() - started
    return report


# -- minimization and the regression corpus ----------------------------------------------------------------------------

def _known_sites() -> dict[str, str]:
    index = REGRESSIONS / "index.json"
    if not index.exists():
        return {}
    return {entry["site"]: name for name, entry in json.loads(index.read_text()).items()}


def _candidates(model):
    """Smaller versions of ``model``: one node, output, input, initializer, attribute or value_info removed."""
    import onnx

    def variant(edit):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        try:
            edit(copy.graph)
        except (IndexError, ValueError):
            return None
        return copy

    graph = model.graph
    if graph.value_info:
        yield variant(lambda g: g.ClearField("value_info"))
    for i in reversed(range(len(graph.node))):
        yield variant(lambda g, i=i: g.node.pop(i))
    for i in reversed(range(len(graph.output))):
        if len(graph.output) > 1:
            yield variant(lambda g, i=i: g.output.pop(i))
    for i in reversed(range(len(graph.initializer))):
        yield variant(lambda g, i=i: g.initializer.pop(i))
    for i in reversed(range(len(graph.input))):
        yield variant(lambda g, i=i: g.input.pop(i))
    for n in range(len(graph.node)):
        for a in reversed(range(len(graph.node[n].attribute))):
            yield variant(lambda g, n=n, a=a: g.node[n].attribute.pop(a))


def minimize(runner: Runner, slot: int, key: str, data: bytes, budget: int = 300) -> bytes:
    """Greedily remove parts of the model while it still ends in the same outcome and site (``key``)."""
    import onnx

    try:
        best = onnx.ModelProto.FromString(data)
    except Exception:  # (damaged bytes: kept as found)
        return data

    def keeps(candidate) -> bool:
        result = runner.evaluate(slot, {"model": base64.b64encode(candidate.SerializeToString()).decode()})
        return f"{result['outcome']} {result.get('site', '?')}" == key

    best = fuzz_workers.shrink_greedily(best, _candidates, keeps, budget)
    return best.SerializeToString()


def _save(runner: Runner | None, slot: int, key: str, data: bytes, example: dict) -> Path:
    """Minimize (unless ``runner`` is None) and write the model of a bad site, and its entry in index.json."""
    sys.path.insert(0, str(ROOT))
    from nnrt_onnx.serialization import atomic_write

    small = minimize(runner, slot, key, data) if runner is not None else data
    REGRESSIONS.mkdir(parents=True, exist_ok=True)
    path = REGRESSIONS / f"{fuzz_workers.slug(key)}.onnx"
    atomic_write(path, [small])
    index_path = REGRESSIONS / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    outcome, _, where = key.partition(" ")
    index[path.name] = {"outcome": outcome, "site": key, "where": where, "seed_model": example["seed_model"],
                        "mutations": example["mutations"], "detail": example["detail"],
                        "found": time.strftime("%Y-%m-%d")}
    atomic_write(index_path, [json.dumps(index, indent=1, sort_keys=True).encode() + b"\n"])
    return path


# -- command line ------------------------------------------------------------------------------------------------------

def _print_report(report: Report) -> None:
    print(f"fuzz seed {report.seed}: {report.tried} mutants in {report.seconds:.0f} s")
    for outcome in ("converted", "clean", *BAD):
        print(f"  {outcome:<10} {report.outcomes.get(outcome, 0)}")
    example = report.peak_rss_example
    print(f"  peak RSS of a worker during one mutant: {report.peak_rss_mb:.0f} MiB"
          + (f" (mutant {example['index']} of {example['seed_model']}: {'; '.join(example['mutations'])}, "
             f"{example['outcome']})" if example else ""))
    if report.by_family:
        columns = ("converted", "clean", *BAD)
        print(f"  {'mutation family':<28} {'tried':>7} " + " ".join(f"{c:>9}" for c in columns) + "  peak RSS MiB")
        for family in FAMILIES:
            counts = report.by_family.get(family, Counter())
            print(f"  {family:<28} {sum(counts.values()):>7} " + " ".join(f"{counts.get(c, 0):>9}" for c in columns)
                  + f"  {report.family_peak_rss_mb.get(family, 0.0):>12.0f}")
    if report.details:
        print("  most common clean results:")
        for text, n in report.details.most_common(12):
            print(f"    {n:>6}  {text[:110]}")
    if report.sites:
        print(f"  {len(report.sites)} distinct bad site(s):")
        for key, entry in sorted(report.sites.items(), key=lambda kv: -kv[1]["count"]):
            example = entry["example"]
            print(f"    {entry['count']:>5}  {key}")
            print(f"           e.g. mutant {example['index']} of {example['seed_model']}: "
                  f"{'; '.join(example['mutations'])} -- {example['detail'][:160]}")
            if "saved" in entry:
                print(f"           saved {entry['saved']}")


def main(argv=None) -> int:
    parser = fuzz_workers.campaign_parser(__doc__, "mutant", DEFAULT_TIMEOUT)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--batch", type=int, default=500, help="mutants per worker process before it is restarted")
    parser.add_argument("--save", action=argparse.BooleanOptionalAction, default=None,
                        help="minimize and save new bad sites (default: with --minutes)")
    parser.add_argument("--keep", metavar="SEED:INDEX=SITE", action="append", default=[],
                        help="save mutant INDEX of SEED as the regression of SITE (a site found and fixed before it "
                             "could be saved; not minimized)")
    parser.add_argument("--json", action="store_true", help="the report as JSON")
    args = fuzz_workers.parse_args(parser, argv, _worker)
    if args is None:
        return 0
    if args.replay:
        task = {"model": base64.b64encode(Path(args.replay).read_bytes()).decode()}
        return fuzz_workers.replay(Runner(1, 1, args.memory_mb, args.timeout), task, BAD)
    if args.keep:
        seeds = corpus()
        for spec in args.keep:
            where, _, key = spec.partition("=")
            seed, index = (int(v) for v in where.split(":"))
            name, data, applied = mutant(seeds, seed, index)
            print(_save(None, 0, key, data, {"seed_model": name, "mutations": applied, "detail": f"seed {seed} "
                                                                                                 f"mutant {index}"}))
        return 0
    if args.minutes is None and args.count is None:
        args.count = 500
    save = args.save if args.save is not None else args.minutes is not None
    show = sys.stderr.isatty()

    def progress(report: Report) -> None:
        if show and report.tried % 25 == 0:
            print(f"\r{report.tried} mutants, {report.bad} bad, {len(report.sites)} sites", end="", file=sys.stderr,
                  flush=True)

    report = campaign(args.seed, args.count, args.minutes, args.workers, args.batch, args.memory_mb, args.timeout,
                      save, progress)
    if show:
        print(file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        _print_report(report)
    return 1 if report.bad else 0


if __name__ == "__main__":
    sys.exit(main())
