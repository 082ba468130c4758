"""Conversion never escapes with anything but a ConversionError (or an OSError for a file that cannot be opened).

* :func:`structural_issues` -- what makes a model invalid as a whole, found before any node is converted: opsets
  this onnx package does not know, unreadable initializers, a tensor written by two nodes (or by a node and as an
  input/initializer), node inputs nothing defines before them, graph outputs nothing computes, duplicate inputs.
  They are all reported together; conversion does not start on such a model.
* :func:`internal_issue` -- a converter that still raises (a bug) becomes the problem of its node, reason
  ``internal_error``, with the file:line where it happened (``out_of_memory`` for a MemoryError, which the memory
  budget should have prevented). The formatted tracebacks stay available for ``--debug``
  (:attr:`ConversionError.tracebacks`).
* :func:`guarded` -- wraps ``from_onnx``: the budget of the import is made active, the structure checked, and any
  exception outside a node (shape inference, passes, emitting) becomes a ConversionError too.
"""
from __future__ import annotations

import functools
import inspect
import threading
import traceback
from pathlib import Path

import onnx

from ..errors import NNRtError
from ..ir import budget
from ..ir.issues import INTERNAL_ERROR, INVALID_MODEL, OUT_OF_MEMORY, TOO_LARGE, ConversionError, Issue
from . import weights
from .attributes import check_tensor_proto
from .subgraph import subgraphs

__all__ = ["guarded", "internal_issue", "site", "structural_issues"]

_PACKAGE = Path(__file__).resolve().parent.parent  # .../nnrt_onnx
_state = threading.local()


def site(exc: BaseException) -> str:
    """``path:line`` of the innermost frame of ``exc``'s traceback inside this package (relative to its parent), or
    of the innermost frame at all when none is."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        path = Path(frame.filename).resolve()
        try:
            return f"{path.relative_to(_PACKAGE.parent)}:{frame.lineno}"
        except ValueError:
            continue
    if frames:
        return f"{Path(frames[-1].filename).name}:{frames[-1].lineno}"
    return "?"


def _remember(exc: BaseException) -> None:
    found = getattr(_state, "tracebacks", None)
    if found is not None and len(found) < 100:
        found.append("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def diagnose(node: onnx.NodeProto, graph, opset: int) -> str | None:
    """ONNX's own verdict on ``node`` with the inputs it has in the importer's ``graph``: the message of strict
    shape inference of the node alone (small constant inputs given as values), or None when ONNX finds nothing."""
    from onnx import helper, numpy_helper

    inputs, initializers, seen = [], [], set()
    for name in node.input:
        if not name or name in seen:
            continue
        seen.add(name)
        value = graph.values.get(graph.resolve(name))
        if value is None:
            return None
        try:
            elem_type = helper.np_dtype_to_tensor_dtype(value.dtype)
        except (KeyError, TypeError, ValueError):
            return None
        shape = None if value.shape is None else [d if d >= 0 else None for d in value.shape]
        inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        if value.data is not None and value.data.size <= 4096:
            initializers.append(numpy_helper.from_array(value.data, name))
    outputs = []
    for name in node.output:  # the outputs' known shapes too (an output declared inconsistently is found); their
        if not name:          # element types are left open (the importer may have defaulted one)
            continue
        value = graph.values.get(name)
        if value is None or value.data is not None or value.shape is None:
            outputs.append(helper.make_value_info(name, onnx.TypeProto()))
        else:
            shape = [d if d >= 0 else None for d in value.shape]
            outputs.append(helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, shape))
    model = helper.make_model(helper.make_graph([node], "diagnose", inputs, outputs, initializer=initializers),
                              opset_imports=[helper.make_opsetid("", opset)])
    try:
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as exc:  # InferenceError, ValidationError ...
        lines = [line for line in str(exc).splitlines() if line.strip()]
        return lines[0][:300] if lines else type(exc).__name__
    return None


def internal_issue(node: str, op_type: str, opset: int, exc: BaseException, *, proto: onnx.NodeProto | None = None,
                   graph=None) -> Issue:
    """The Issue of a node whose conversion raised ``exc`` unexpectedly: ``invalid_model`` with ONNX's reason when
    ONNX's shape inference rejects the node too (given ``proto`` and the importer's ``graph``), else
    ``internal_error`` (a converter bug) with the file:line."""
    _remember(exc)
    if proto is not None and graph is not None and not isinstance(exc, (MemoryError, RecursionError)):
        verdict = diagnose(proto, graph, opset)
        if verdict is not None:
            return Issue(node, op_type, opset, INVALID_MODEL, f"the node is invalid: {verdict}")
    where = site(exc)
    if isinstance(exc, MemoryError):
        return Issue(node, op_type, opset, OUT_OF_MEMORY, f"ran out of memory converting this node (at {where}); "
                                                          f"try a smaller --max-constant-bytes")
    if isinstance(exc, RecursionError):
        return Issue(node, op_type, opset, TOO_LARGE, f"the model is nested too deeply to convert (at {where})")
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return Issue(node, op_type, opset, INTERNAL_ERROR,
                 f"internal error: {type(exc).__name__}{': ' + text if text else ''} (at {where}; please report it)")


# -- the model as a whole ----------------------------------------------------------------------------------------------

def _opset_issues(model: onnx.ModelProto) -> list[Issue]:
    issues = []
    newest = onnx.defs.onnx_opset_version()
    seen = set()
    for entry in model.opset_import:
        domain = entry.domain
        if domain in seen:
            issues.append(Issue("-", "-", 0, INVALID_MODEL, f"opset_import lists domain {domain!r} twice"))
        seen.add(domain)
        if domain in ("", "ai.onnx") and not 1 <= entry.version <= newest:
            issues.append(Issue("-", "-", entry.version, INVALID_MODEL,
                                f"default-domain opset {entry.version} is not an ONNX opset this onnx package "
                                f"knows (1..{newest})"))
    return issues


def _text_fields(graph: onnx.GraphProto):
    """(what, node name or None, value) of every name-like string field of a graph and its subgraphs (protobuf hands
    out bytes, not str, for one that is not valid UTF-8)."""
    yield "graph name", None, graph.name
    for kind, infos in (("input", graph.input), ("output", graph.output), ("value_info", graph.value_info),
                        ("initializer", graph.initializer)):
        for info in infos:
            yield f"{kind} name", None, info.name
    for node in graph.node:
        yield "node name", None, node.name
        yield "op type", node.name, node.op_type
        yield "domain", node.name, node.domain
        for value in (*node.input, *node.output):
            yield "tensor name", node.name, value
        for attribute in node.attribute:
            yield "attribute name", node.name, attribute.name
            yield "attribute reference", node.name, attribute.ref_attr_name
        for subgraph in subgraphs(node):
            yield from _text_fields(subgraph)


def _text_issues(model: onnx.ModelProto) -> list[Issue]:
    """A name that is not valid UTF-8 text: the first one (every later step reads names as text)."""
    fields = [("opset domain", None, entry.domain) for entry in model.opset_import]
    for what, owner, value in (*fields, *_text_fields(model.graph)):
        if not isinstance(value, str):
            where = f" of node {owner!r}" if isinstance(owner, str) and owner else ""
            return [Issue("-", "-", 0, INVALID_MODEL, f"a {what}{where} is not valid UTF-8 text: {value[:40]!r}")]
    return []


def structural_issues(model: onnx.ModelProto, opset: int) -> list[Issue]:
    """Every whole-model problem of ``model`` (its main graph), in one list."""
    text = _text_issues(model)
    if text:
        return text
    issues = _opset_issues(model)
    graph = model.graph
    defined: dict[str, str] = {}  # tensor -> what defines it

    def define(name: str, what: str, node_name: str, op_type: str) -> None:
        if not name:
            return
        if name in defined:
            issues.append(Issue(node_name, op_type, opset, INVALID_MODEL,
                                f"tensor {name!r} is written by {what} and also by {defined[name]}", name))
        else:
            defined[name] = what

    for tensor in graph.initializer:
        problem = check_tensor_proto(tensor, f"initializer {tensor.name!r}")
        if problem:
            issues.append(Issue(tensor.name, "initializer", opset, INVALID_MODEL, problem, tensor.name))
    initializers = {t.name for t in graph.initializer}
    inputs = set()
    for info in graph.input:
        if info.name in inputs:
            issues.append(Issue(info.name, "input", opset, INVALID_MODEL, f"graph input {info.name!r} is listed twice"))
        inputs.add(info.name)
        if not info.name:
            issues.append(Issue("-", "input", opset, INVALID_MODEL, "a graph input has no name"))
        define(info.name, f"graph input {info.name!r}", info.name, "input")
    for tensor in graph.initializer:
        if tensor.name not in inputs:
            define(tensor.name, f"initializer {tensor.name!r}", tensor.name, "initializer")
    for position, node in enumerate(graph.node):
        name = node.name or (node.output[0] if node.output else node.op_type)
        for value in node.input:
            if value and value not in defined:
                issues.append(Issue(name, node.op_type, opset, INVALID_MODEL,
                                    f"input {value!r} is not a graph input, an initializer or the output of an "
                                    f"earlier node", value))
        for value in node.output:
            define(value, f"node #{position} {name!r}", name, node.op_type)
    for info in graph.output:
        if info.name not in defined:
            issues.append(Issue(info.name, "output", opset, INVALID_MODEL,
                                f"graph output {info.name!r} is not computed by any node (nor an input or "
                                f"initializer)", info.name))
    del initializers
    return issues


# -- from_onnx, guarded ------------------------------------------------------------------------------------------------

def guarded(load, opset_of):
    """Decorator of ``from_onnx``: the model loaded by ``load`` (a path or ModelProto -> (ModelProto, the
    ``weights.WeightFile`` its large initializers are read from, or None)), the budget
    active (``max_constant_bytes``), the structure checked first (at ``opset_of(model)``), and every exception but
    ConversionError/OSError (and KeyboardInterrupt) turned into a ConversionError."""
    return functools.partial(_guard, load=load, opset_of=opset_of)


def _guard(convert, *, load, opset_of):
    accepts_limit = "max_constant_bytes" in inspect.signature(convert).parameters
    accepts_owned = "_owned" in inspect.signature(convert).parameters

    @functools.wraps(convert)
    def wrapper(source, *args, max_constant_bytes: int | None = None, **kwargs):
        limit = budget.resolve_limit(max_constant_bytes)
        if accepts_limit:
            kwargs["max_constant_bytes"] = limit
        outer = getattr(_state, "tracebacks", None)
        _state.tracebacks = []
        try:
            with budget.active(limit):
                model, weight_file = load(source)
                with weights.active(weight_file):  # (large weights stay in the file until a converter reads them)
                    issues = structural_issues(model, opset_of(model))
                    if issues:
                        raise ConversionError(issues)
                    if accepts_owned and not isinstance(source, onnx.ModelProto):
                        kwargs["_owned"] = True  # loaded here from a file: convert may annotate it, not a copy
                    return convert(model, *args, **kwargs)
        except ConversionError as error:
            error.tracebacks = list(_state.tracebacks)
            raise
        except (OSError, KeyboardInterrupt):
            raise
        except NNRtError as exc:
            _remember(exc)
            raise _wrapped(Issue("-", "-", 0, INVALID_MODEL, f"the converted model is rejected by the NNRt API "
                                                             f"({exc.code.name}): {exc.message}"))
        except Exception as exc:
            raise _wrapped(internal_issue("-", "-", 0, exc)) from None
        finally:
            _state.tracebacks = outer

    def _wrapped(issue: Issue) -> ConversionError:
        error = ConversionError([issue])
        error.tracebacks = list(_state.tracebacks)
        return error

    wrapper.__wrapped_convert__ = convert
    return wrapper
