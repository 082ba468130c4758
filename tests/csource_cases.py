"""The models the C source tests emit, compile, run against the recording shim and replay (tests/test_csource.py):
every model of models/, the light nets shipped with onnx, the real-world corpus (dynamic dims), and op cases of
the op table chosen so that every op and every parameter tensor type of the table is among them, and every
quantized case (per tensor and per channel).

A case is (id, a function giving the finished model and the inputs to run it on). Nothing is built at import."""
from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from nnrt_onnx.enums import OH_NN_TensorType
from nnrt_onnx.model import Model
from nnrt_onnx.optable import op_table
from nnrt_onnx.testing.opcases import OpCase, op_cases

ROOT = Path(__file__).resolve().parent.parent
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
REALWORLD = ROOT / "tests" / "data" / "realworld"


@dataclass(frozen=True)
class Case:
    id: str
    make: Callable[[], tuple[Model, list[np.ndarray]]]
    per_channel_axis: int | None = None  # a case quantized per channel along this axis


def _random_inputs(model: Model, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for index in model.inputs:
        tensor = model.tensors[index]
        dims = [d if d >= 0 else 2 for d in tensor.dims]
        dtype = tensor.np_dtype
        if np.issubdtype(dtype, np.floating):
            arrays.append(rng.standard_normal(dims).astype(dtype))
        elif dtype == np.bool_:
            arrays.append(rng.random(dims) < 0.5)
        else:
            arrays.append(rng.integers(0, 3, dims).astype(dtype))
    return arrays


def _converted(path: Path, pin_from: dict[str, Path] | None = None) -> tuple[Model, list[np.ndarray]]:
    from nnrt_onnx.ir.issues import ConversionError
    from nnrt_onnx.onnx_import import from_onnx
    from nnrt_onnx.serialization import load_model

    if path.suffix == ".nnrt":
        model = load_model(path)
        return model, _random_inputs(model, zlib.crc32(path.name.encode()))
    data = {name: np.load(file) for name, file in (pin_from or {}).items()}
    try:  # dynamic dims kept where the converter can
        model = from_onnx(str(path)).model
    except ConversionError:
        model = from_onnx(str(path), input_shapes={n: a.shape for n, a in data.items()}).model
    if data:
        names = [model.tensors[i].name for i in model.inputs]
        return model, [data[name] for name in names]
    return model, _random_inputs(model, zlib.crc32(path.name.encode()))


def _model_cases() -> list[Case]:
    files = sorted(p for p in (ROOT / "models").iterdir() if p.suffix in (".onnx", ".nnrt"))
    return [Case(f"models-{p.stem}", lambda p=p: _converted(p)) for p in files]


def _light_cases() -> list[Case]:
    names = sorted(p.stem for p in LIGHT.glob("*.onnx")) if LIGHT.is_dir() else []
    return [Case(f"onnx-{name}", lambda name=name: _converted(LIGHT / f"{name}.onnx")) for name in names]


def _realworld_cases() -> list[Case]:
    manifest = json.loads((REALWORLD / "manifest.json").read_text())
    cases = []
    for name, entry in sorted(manifest.items()):
        if entry.get("constants"):
            continue
        inputs = {i: REALWORLD / f for i, f in entry["inputs"].items()}
        cases.append(Case(f"realworld-{name}", lambda e=entry, i=inputs: _converted(REALWORLD / e["model"], i)))
    return cases


def _helper_graph_cases() -> list[Case]:
    """The real-world corpus' onnx.helper graphs (tools/realworld/helper_graphs.py), with their constant bindings."""
    import importlib
    import sys

    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    entries = importlib.import_module("realworld.helper_graphs").models()

    def make(entry):
        from nnrt_onnx.ir.issues import ConversionError
        from nnrt_onnx.onnx_import import from_onnx

        proto = entry.build()
        constants = {n: np.asarray(a) for n, a in entry.constants.items()}
        inputs = {n: np.asarray(a) for n, a in entry.inputs.items()}
        try:
            model = from_onnx(proto, constant_inputs=constants).model
        except ConversionError:
            model = from_onnx(proto, constant_inputs=constants,
                              input_shapes={n: a.shape for n, a in inputs.items()}).model
        return model, [inputs[model.tensors[i].name] for i in model.inputs]

    return [Case(f"realworld-{entry.name}", lambda entry=entry: make(entry)) for entry in entries]


def _param_types(case: OpCase) -> set[OH_NN_TensorType]:
    return {OH_NN_TensorType[name] if isinstance(name, str) else OH_NN_TensorType(name) for name in case.params}


def _quant_axis(case: OpCase) -> tuple[bool, int | None]:
    """(quantized, the per-channel axis if any) of a case's operands."""
    quantized, axis = False, None
    for spec in [*case.inputs, *case.outputs]:
        quant = spec.get("quant")
        if quant is not None:
            quantized = True
            if len(quant["scales"]) > 1:
                axis = quant.get("axis", 0)
    return quantized, axis


def selected_op_cases() -> list[tuple[OpCase, int | None]]:
    """Op cases of the table: every quantized one; greedily, cases adding an op or a parameter tensor type not yet
    covered; and for a parameter type no case of the table gives, its op's first case with that parameter set to
    the op's default."""
    cases = op_cases()
    chosen: dict[str, tuple[OpCase, int | None]] = {}
    ops, types = set(), set()
    for case in sorted(cases, key=lambda c: -len(_param_types(c))):
        quantized, axis = _quant_axis(case)
        new_types = _param_types(case) - types
        if quantized or new_types or case.op not in ops:
            chosen[case.name] = (case, axis)
            ops.add(case.op)
            types |= _param_types(case)
    for entry in op_table().values():
        for tensor_type, spec in entry.params.items():
            if tensor_type in types or spec.alias:
                continue
            first = next(c for c in cases if c.op == entry.op)
            keyword = spec.keywords[0]
            params = {**first.params, tensor_type.name: entry.defaults[keyword]}
            case = OpCase(first.op, f"{first.id}-{tensor_type.name[6:].lower()}", first.inputs, params, first.outputs,
                          first.rtol, first.atol)
            chosen[case.name] = (case, _quant_axis(case)[1])
            types.add(tensor_type)
    return list(chosen.values())


def _op_case(case: OpCase, axis: int | None) -> Case:
    def make():
        model, runtime = case.model()
        return model, runtime

    return Case(f"op-{case.name}", make, axis)


def all_cases() -> list[Case]:
    cases = _model_cases() + _light_cases() + _realworld_cases() + _helper_graph_cases()
    cases += [_op_case(case, axis) for case, axis in selected_op_cases()]
    return cases


def covered_param_types() -> set[OH_NN_TensorType]:
    return set().union(*(_param_types(case) for case, _ in selected_op_cases()))


def table_param_types() -> set[OH_NN_TensorType]:
    return {t for entry in op_table().values() for t, spec in entry.params.items() if not spec.alias}


def jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))
