"""The ONNX backend node suite against the importer + native kernels (used by tests and tools/conformance.py)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cache

import numpy as np

from ..ir.rows import find_row
from ..onnx_import.importer import opset_of


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


NNRT_ELEMENT_TYPES = {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13}  # ONNX element types with an OH_NN_DataType


def has_nnrt_types(case) -> bool:
    """Whether every tensor the case feeds or expects has an NNRt data type (no bfloat16, float8, int4, string ...)."""
    graph = case.model.graph
    for info in list(graph.input) + list(graph.output):
        kind = info.type.WhichOneof("value")
        if kind != "tensor_type" or info.type.tensor_type.elem_type not in NNRT_ELEMENT_TYPES:
            return False
    if any(t.data_type not in NNRT_ELEMENT_TYPES for t in graph.initializer):
        return False
    for node in graph.node:  # Cast/CastLike targets and constant types
        for attr in node.attribute:
            if attr.name == "to" and attr.i not in NNRT_ELEMENT_TYPES:
                return False
            if attr.name == "value" and attr.type == attr.TENSOR and attr.t.data_type not in NNRT_ELEMENT_TYPES:
                return False
    return True


def _all_nodes(graph):
    """The nodes of a graph and of every subgraph in it (If branches, Loop and Scan bodies)."""
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            for subgraph in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                yield from _all_nodes(subgraph)


def is_claimed(case) -> bool:
    """Whether the case is in scope: every node (subgraphs included) has a mapping row at the case's opset (default
    domain only), and every tensor type exists in NNRt (cases about bfloat16, float8, int4, strings ... are out of
    scope)."""
    opset = opset_of(case.model)
    return has_nnrt_types(case) and all(node.domain in ("", "ai.onnx") and find_row(node.op_type, opset) is not None
                                        for node in _all_nodes(case.model.graph))


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


def _input_ancestors(model, tensor: str, inputs) -> set[str]:
    """The model inputs a tensor is computed from (binding them makes it a constant)."""
    if tensor in inputs:
        return {tensor}
    producers = {o: node for node in model.graph.node for o in node.output}
    found, stack, seen = set(), [tensor], set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in inputs:
            found.add(name)
        elif name in producers:
            stack.extend(i for i in producers[name].input if i)
    return found


def _feed(feed: dict, tensor) -> np.ndarray:
    if tensor.name in feed:
        return np.asarray(feed[tensor.name])
    bound = tensor.name[: -len(".bound")]  # a bound input kept declared: its (fixed) value, shaped as declared
    return np.asarray(feed[bound]).reshape(tensor.dims)


def import_case(case):
    """Import a case's model, binding the inputs NNRt needs as constants (shapes, axes ...) to the case's data,
    as a user would with --constant-input, when every data set uses the same values for them.

    Returns (ImportResult, model input names, data sets as arrays). Raises ConversionError.
    """
    from ..ir.issues import ConversionError
    from ..onnx_import.importer import from_onnx

    model_inputs = [i.name for i in case.model.graph.input
                    if i.name not in {t.name for t in case.model.graph.initializer}]
    data_sets = [(_arrays(ins), _arrays(outs)) for ins, outs in case.data_sets]
    first_inputs = dict(zip(model_inputs, data_sets[0][0]))
    bound: dict = {}
    while True:  # a node reports one missing constant at a time: bind until nothing new is asked for
        try:
            return from_onnx(case.model, constant_inputs=bound), model_inputs, data_sets
        except ConversionError as exc:
            wanted = {i.tensor for i in exc.issues if i.reason == "needs_constant_input" and i.tensor}
            needed = {n for t in wanted for n in _input_ancestors(case.model, t, first_inputs)} - set(bound)
            if not needed or any(not np.array_equal(dict(zip(model_inputs, ins))[n], first_inputs[n])
                                 for ins, _ in data_sets for n in needed):
                raise
            bound.update({n: np.asarray(first_inputs[n]) for n in needed})


def compare_outputs(outputs, expected, rtol: float, atol: float) -> str:
    """'' when the outputs match the case's expected outputs, else what differs."""
    if len(outputs) != len(expected):
        return f"{len(outputs)} outputs, expected {len(expected)}"
    for position, (actual, want) in enumerate(zip(outputs, expected)):
        problem = _compare(np.asarray(actual), np.asarray(want), rtol, atol)
        if problem:
            return f"output #{position}: {problem}"
    return ""


def feed_for(model, names, inputs) -> list[np.ndarray]:
    """A data set's input arrays in the order of the NNRt model's inputs."""
    feed = dict(zip(names, inputs))
    return [_feed(feed, model.tensors[i]) for i in model.inputs]


def run_case(case) -> CaseResult:
    """Import the case's model, run it natively on every data set, compare with the expected outputs."""
    from ..compilation import Compilation
    from ..errors import NNRtError
    from ..executor import Executor
    from ..ir.issues import ConversionError

    ops = case_op_types(case)
    try:
        result, model_inputs, data_sets = import_case(case)
        compilation = Compilation(result.model)
        compilation.build()
        executor = Executor(compilation)
        for inputs, expected in data_sets:
            problem = compare_outputs(executor.run_arrays(feed_for(result.model, model_inputs, inputs)), expected,
                                      case.rtol, case.atol)
            if problem:
                return CaseResult(case.name, ops, False, problem)
        return CaseResult(case.name, ops, True)
    except ConversionError as exc:
        first = exc.issues[0]
        return CaseResult(case.name, ops, False, f"conversion: [{first.reason}] {first.message}")
    except NNRtError as exc:
        return CaseResult(case.name, ops, False, f"{exc.code.name}: {exc.message}")
    except Exception as exc:  # a crash is a failure with its reason, never a stopped suite
        return CaseResult(case.name, ops, False, f"crash: {type(exc).__name__}: {exc}")
