"""The ONNX backend node suite against the importer + native kernels (used by tests and tools/conformance.py)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cache

import numpy as np

from .importer import opset_of
from .rows import find_row


@dataclass
class CaseResult:
    name: str
    op_types: tuple[str, ...]
    passed: bool
    reason: str = ""


@cache
def node_cases():
    """All node test cases the installed onnx package generates, by name."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {case.name: case for case in collect_testcases(None) if case.model is not None}


def case_op_types(case) -> tuple[str, ...]:
    return tuple(sorted({node.op_type for node in case.model.graph.node}))


def is_claimed(case) -> bool:
    """Whether every node of the case has a mapping row at the case's opset (default domain only)."""
    opset = opset_of(case.model)
    return all(node.domain in ("", "ai.onnx") and find_row(node.op_type, opset) is not None
               for node in case.model.graph.node)


def _compare(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> str:
    if expected.dtype == object:
        return "string outputs are not comparable"
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)} != expected {list(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} != expected {expected.dtype}"
    if expected.dtype.kind in "fc":
        ok = np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = np.array_equal(actual, expected)
    if not ok:
        diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        return f"values differ (max abs diff {np.nanmax(diff):.3g})"
    return ""


def _arrays(values) -> list:
    """A data set's tensors as numpy arrays (some cases store TensorProtos, e.g. Cast's)."""
    from onnx import TensorProto, numpy_helper

    return [numpy_helper.to_array(v) if isinstance(v, TensorProto) else v for v in values]


def run_case(case) -> CaseResult:
    """Import the case's model, run it natively on every data set, compare with the expected outputs."""
    from ..compilation import Compilation
    from ..errors import NNRtError
    from ..executor import Executor
    from .importer import from_onnx
    from .issues import ConversionError

    ops = case_op_types(case)
    model_inputs = [i.name for i in case.model.graph.input
                    if i.name not in {t.name for t in case.model.graph.initializer}]
    data_sets = [(_arrays(ins), _arrays(outs)) for ins, outs in case.data_sets]
    first_inputs = dict(zip(model_inputs, data_sets[0][0]))
    try:
        # NNRt takes shapes, axes and the like as constants: bind the case's data for such inputs, as a user
        # would with --constant-input, and only when every data set uses the same values. A node reports one
        # missing constant at a time, so bind until nothing new is asked for.
        bound: dict = {}
        while True:
            try:
                result = from_onnx(case.model, constant_inputs=bound)
                break
            except ConversionError as exc:
                needed = {i.tensor for i in exc.issues
                          if i.reason == "needs_constant_input" and i.tensor in first_inputs and i.tensor not in bound}
                if not needed or any(not np.array_equal(dict(zip(model_inputs, ins))[n], first_inputs[n])
                                     for ins, _ in data_sets for n in needed):
                    raise
                bound.update({n: np.asarray(first_inputs[n]) for n in needed})
        compilation = Compilation(result.model)
        compilation.build()
        executor = Executor(compilation)
        for inputs, expected in data_sets:
            feed = dict(zip(model_inputs, inputs))
            arrays = [np.asarray(feed[result.model.tensors[i].name]) for i in result.model.inputs]
            outputs = executor.run_arrays(arrays)
            if len(outputs) != len(expected):
                return CaseResult(case.name, ops, False, f"{len(outputs)} outputs, expected {len(expected)}")
            for position, (actual, want) in enumerate(zip(outputs, expected)):
                problem = _compare(np.asarray(actual), np.asarray(want), case.rtol, case.atol)
                if problem:
                    return CaseResult(case.name, ops, False, f"output #{position}: {problem}")
        return CaseResult(case.name, ops, True)
    except ConversionError as exc:
        first = exc.issues[0]
        return CaseResult(case.name, ops, False, f"conversion: [{first.reason}] {first.message}")
    except NNRtError as exc:
        return CaseResult(case.name, ops, False, f"{exc.code.name}: {exc.message}")
    except Exception as exc:  # a crash is a failure with its reason, never a stopped suite
        return CaseResult(case.name, ops, False, f"crash: {type(exc).__name__}: {exc}")
