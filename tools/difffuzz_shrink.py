"""Smaller versions of a failing model, for tools/difffuzz.py's greedy shrinker: each candidate is one edit that
keeps the model valid if it can (the worker discards those that are not): fewer bindings, an output dropped, the
graph cut after a node, an intermediate tensor frozen into an initializer (its value at the first binding), a node
bypassed, a runtime input made an initializer, an optional input or an attribute dropped, a dim made smaller.
Every candidate is pruned of what nothing reads any more."""
from __future__ import annotations

from typing import Iterator

import numpy as np
import onnx
from onnx import helper, numpy_helper

import difffuzz_graphs as graphs


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy


def prune(model: onnx.ModelProto) -> onnx.ModelProto:
    """Drop nodes whose outputs nothing reads (and no graph output is), then unread initializers and inputs."""
    graph = model.graph
    changed = True
    while changed:
        changed = False
        wanted = {o.name for o in graph.output} | {i for n in graph.node for i in n.input}
        for position in reversed(range(len(graph.node))):
            if not any(o in wanted for o in graph.node[position].output if o):
                del graph.node[position]
                changed = True
                break
    read = {o.name for o in graph.output} | {i for n in graph.node for i in n.input}
    for position in reversed(range(len(graph.initializer))):
        if graph.initializer[position].name not in read:
            del graph.initializer[position]
    for position in reversed(range(len(graph.input))):
        if graph.input[position].name not in read:
            del graph.input[position]
    return model


def _types(model: onnx.ModelProto) -> dict:
    """Tensor name -> (elem type, rank) from ONNX shape inference (where it knows)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001
        inferred = model
    found = {}
    graph = inferred.graph
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        t = info.type.tensor_type
        if t.elem_type and t.HasField("shape"):
            found[info.name] = (t.elem_type, len(t.shape.dim))
    for tensor in graph.initializer:
        found[tensor.name] = (tensor.data_type, len(tensor.dims))
    return found


def _output(name: str, types: dict):
    if name not in types:
        return None
    elem, rank = types[name]
    return helper.make_tensor_value_info(name, elem, [None] * rank)


def _intermediates(model: onnx.ModelProto) -> dict:
    """Every node output's value at the first binding (onnxruntime), or {} when it cannot say."""
    from nnrt_onnx.workflows import parity

    names = [o for n in model.graph.node for o in n.output if o]
    try:
        wide = parity._with_all_outputs(model, names)
        session = parity._session(wide, "the model")
        binding = graphs.bindings(model)[0]
        values = session.run(names, graphs.feeds(model, 0, binding))
    except Exception:  # noqa: BLE001 (no cut candidates then)
        return {}
    return dict(zip(names, values))


def with_bindings(model: onnx.ModelProto, keep: list[int]) -> onnx.ModelProto:
    """The model run at the bindings ``keep`` only (their input values unchanged)."""
    copy = _copy(model)
    meta = graphs.get_meta(copy)
    ids = meta.get("binding_ids") or list(range(len(graphs.bindings(model))))
    meta["dims"] = {k: [v[i] for i in keep] for k, v in meta.get("dims", {}).items()}
    meta["binding_ids"] = [ids[i] for i in keep]
    graphs.set_meta(copy, meta)
    return copy


def candidates(model: onnx.ModelProto, found: dict) -> Iterator[onnx.ModelProto | None]:
    """Smaller versions of ``model`` (``found``: the failure's result, whose "bindings" are tried alone first), each
    with a runtime input left (a model of constants is another story: NNRt models need an input)."""
    for candidate in _edits(model, found):
        if candidate is not None and graphs.runtime_inputs(candidate):
            yield candidate


def _edits(model: onnx.ModelProto, found: dict) -> Iterator[onnx.ModelProto | None]:
    graph = model.graph
    count = len(graphs.bindings(model))
    for index in (found.get("bindings") or [])[:1] + list(range(count)):
        if count > 1 and index < count:
            yield with_bindings(model, [index])
    types = _types(model)
    for position in range(len(graph.output)):
        if len(graph.output) > 1:
            copy = _copy(model)
            del copy.graph.output[position]
            yield prune(copy)
    for node in graph.node:  # the graph cut after one node: its outputs are the graph's
        if node.op_type == "Constant":
            continue
        outputs = [_output(o, types) for o in node.output if o]
        if all(outputs) and {o.name for o in outputs} != {o.name for o in graph.output}:
            copy = _copy(model)
            del copy.graph.output[:]
            copy.graph.output.extend(outputs)
            yield prune(copy)
    values = _intermediates(model)
    for position in reversed(range(len(graph.node))):  # an intermediate frozen: the nodes before it go
        node = graph.node[position]
        if node.op_type == "Constant" or not all(o in values for o in node.output if o):
            continue
        if any(o in {x.name for x in graph.output} for o in node.output):
            continue
        copy = _copy(model)
        del copy.graph.node[position]
        for o in node.output:
            if o:
                copy.graph.initializer.append(numpy_helper.from_array(np.asarray(values[o]), o))
        yield prune(copy)
    for position, node in enumerate(graph.node):  # a node bypassed: its first output replaced by an input
        outputs = [o for o in node.output if o]
        if node.op_type == "Constant" or len(outputs) != 1 or not node.input:
            continue
        for source in dict.fromkeys(i for i in node.input if i):
            if types.get(source, (None,))[0] != types.get(outputs[0], (None,))[0]:
                continue
            copy = _copy(model)
            del copy.graph.node[position]
            for other in copy.graph.node:
                for k, name in enumerate(other.input):
                    if name == outputs[0]:
                        other.input[k] = source
            for info in copy.graph.output:
                if info.name == outputs[0]:
                    if any(o.name == source for o in copy.graph.output) or source not in types:
                        break
                    info.CopyFrom(_output(source, types))
            else:
                yield prune(copy)
    initializers = {t.name for t in graph.initializer}
    binding = graphs.bindings(model)[0]
    fed = graphs.feeds(model, 0, binding)
    for info in graph.input:  # a runtime input made a constant (its values at the first binding)
        if info.name in initializers or info.name not in fed:
            continue
        copy = _copy(model)
        copy.graph.input.remove(next(i for i in copy.graph.input if i.name == info.name))
        copy.graph.initializer.append(numpy_helper.from_array(fed[info.name], info.name))
        yield prune(copy)
    for position, node in enumerate(graph.node):  # an optional input dropped
        if len(node.input) > 1 and node.op_type not in ("Concat", "Sum", "Mean", "Max", "Min"):
            copy = _copy(model)
            copy.graph.node[position].input.pop()
            yield prune(copy)
        elif len(node.input) > 2:
            for k in range(len(node.input)):
                copy = _copy(model)
                del copy.graph.node[position].input[k]
                yield prune(copy)
    for position, node in enumerate(graph.node):  # an attribute back to its default
        for k in range(len(node.attribute)):
            copy = _copy(model)
            del copy.graph.node[position].attribute[k]
            yield copy
    yield from _smaller_dims(model)


def _smaller_dims(model: onnx.ModelProto) -> Iterator[onnx.ModelProto]:
    """A static dim of a runtime input, a dynamic dim's value at a binding, or a dim of a large initializer (one
    that stood for an input or an intermediate) made 1, half or one less."""
    for position, tensor in enumerate(model.graph.initializer):
        if int(np.prod(tensor.dims)) <= 16:
            continue
        array = numpy_helper.to_array(tensor)
        for axis, size in enumerate(array.shape):
            for smaller in sorted({1, size // 2} - {0, size}):
                copy = _copy(model)
                copy.graph.initializer[position].CopyFrom(
                    numpy_helper.from_array(np.take(array, range(smaller), axis=axis), tensor.name))
                yield copy
    initializers = {t.name for t in model.graph.initializer}
    for position, info in enumerate(model.graph.input):
        if info.name in initializers:
            continue
        for axis, dim in enumerate(info.type.tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value > 1:
                for smaller in sorted({1, dim.dim_value - 1}):
                    copy = _copy(model)
                    copy.graph.input[position].type.tensor_type.shape.dim[axis].dim_value = smaller
                    yield copy
    meta = graphs.get_meta(model)
    for name, sizes in meta.get("dims", {}).items():
        for k, value in enumerate(sizes):
            for smaller in sorted({1, value - 1} - {0}):
                if smaller < value:
                    copy = _copy(model)
                    changed = graphs.get_meta(copy)
                    changed["dims"][name][k] = smaller
                    graphs.set_meta(copy, changed)
                    yield copy
