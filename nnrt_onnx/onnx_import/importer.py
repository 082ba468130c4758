"""ONNX -> NNRt: load, infer shapes, convert node by node (collecting every problem), optimise, emit a Model."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import onnx

from ..dtypes import from_numpy
from ..enums import OH_NN_OperationType
from ..errors import NNRtError
from ..ir.budget import DEFAULT_MAX_CONSTANT_BYTES
from ..ir.graph import Graph, Value
from ..ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionError,
    ConversionIssue,
    Issue,
)
from ..ir.mapped import detached
from ..model import Model
from .conversion import DEFAULT_DOMAINS, GraphConversion, onnx_dtype, shape_of, value_infos
from .diagnosis import declared_input
from .guard import guarded
from .shapes import infer_shapes_without_weights
from .weights import WeightFile, WireError, load_light, release, to_array

__all__ = ["DEFAULT_DOMAINS", "ImportOptions", "ImportResult", "emit_model", "from_onnx", "load_onnx", "load_structure",
           "opset_of"]


@dataclass
class ImportOptions:
    input_shapes: Mapping[str, Sequence[int]] = field(default_factory=dict)  # pin dynamic input dims
    constant_inputs: Mapping[str, np.ndarray] = field(default_factory=dict)  # bind inputs to fixed values
    nhwc_io: bool = False  # model inputs/outputs in NHWC instead of the ONNX layout (4-D image tensors)
    fold_batchnorm: bool = True
    fuse_activations: bool = True
    optimize_layout: bool = True
    max_constant_bytes: int = DEFAULT_MAX_CONSTANT_BYTES  # fold no tensor larger than this (the node stays an op)
    fold_qdq: bool = True  # DequantizeLinear -> op -> QuantizeLinear groups become quantized NNRt ops (ir/passes/qdq.py)
    dynamic_quantization: str = "float"  # "float": weights dequantized at conversion (dynamic.py); "exact"


@dataclass
class ImportResult:
    model: Model
    graph: Graph
    stats: dict[str, Any]

    @property
    def deviations(self) -> list:
        """The nodes converted by a reading of the ONNX spec that onnx.reference does not share (ir.deviations):
        ``Deviation(rule, node, op_type, detail)``, ``.text`` the rule; also ``stats["deviations"]`` as dicts."""
        return list(self.graph.deviations)


def load_onnx(source: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    if isinstance(source, onnx.ModelProto):
        return source
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        return onnx.load(str(path))  # external data next to the file loads with it
    except Exception as exc:  # protobuf decode errors have no stable type
        raise ConversionError([Issue(str(path), "file", 0, INVALID_MODEL, f"not a readable ONNX model: {exc}")]) from None


def load_for_conversion(source: str | Path | onnx.ModelProto) -> tuple[onnx.ModelProto, WeightFile | None]:
    """The model to convert, and where its large weights are read from: a file's large initializers stay in the
    file (``weights.load_light``) unless the file is not wire format that scanner follows (then ``load_onnx``)."""
    if isinstance(source, onnx.ModelProto):
        return source, None
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        return load_light(path)
    except (WireError, OSError, ValueError):  # (a file it cannot follow or map: onnx.load says what is wrong)
        return load_onnx(path), None


def load_structure(source: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    """The model without paying for its weights (its large initializers are external references to the file): for
    reading its inputs, nodes and attributes before converting it from the same path."""
    return load_for_conversion(source)[0]


def _pin_shapes(model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]]) -> None:
    inputs = {i.name: i for i in model.graph.input}
    for name, dims in shapes.items():
        if name not in inputs:
            raise ConversionError([Issue(name, "input", opset_of(model), INVALID_MODEL,
                                         f"--input-shape names unknown input {name!r}; inputs: {list(inputs)}")])
        tensor_shape = inputs[name].type.tensor_type.shape
        if len(tensor_shape.dim) not in (0, len(dims)):
            raise ConversionError([Issue(name, "input", opset_of(model), INVALID_MODEL,
                                         f"input {name!r} has rank {len(tensor_shape.dim)}, pinned shape {list(dims)}")])
        del tensor_shape.dim[:]
        for d in dims:
            tensor_shape.dim.add().dim_value = int(d)


def _with_initializer_inputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """Before IR version 4 an initializer had to be a graph input too; shape inference only sees it then."""
    listed = {i.name for i in model.graph.input}
    missing = [t for t in model.graph.initializer if t.name not in listed]
    if model.ir_version >= 4 or not missing:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for tensor in missing:
        copy.graph.input.append(onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    return copy


def opset_of(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in DEFAULT_DOMAINS:
            return entry.version
    return 1


@guarded(load_for_conversion, opset_of)  # only ConversionError/OSError escape; max_constant_bytes: the memory budget
def from_onnx(source: str | Path | onnx.ModelProto, *, input_shapes: Mapping[str, Sequence[int]] | None = None,
              constant_inputs: Mapping[str, np.ndarray] | None = None, nhwc_io: bool = False,
              fold_batchnorm: bool = True, fuse_activations: bool = True, optimize_layout: bool = True,
              max_constant_bytes: int = DEFAULT_MAX_CONSTANT_BYTES, fold_qdq: bool = True,
              dynamic_quantization: str = "float", _owned: bool = False) -> ImportResult:
    """Convert an ONNX model (path or ModelProto) to a finished NNRt :class:`Model`.

    ``input_shapes`` pins dynamic input dims; ``constant_inputs`` binds inputs to fixed values (NNRt needs
    shapes, axes and the like as constants). Raises :class:`ConversionError` listing every node that cannot
    be converted, with a reason code each. ``max_constant_bytes``: constant folding produces no tensor larger than
    this (the node stays an operation).
    """
    if dynamic_quantization not in ("float", "exact"):
        raise ValueError(f"dynamic_quantization must be 'float' or 'exact', got {dynamic_quantization!r}")
    options = ImportOptions(dict(input_shapes or {}), dict(constant_inputs or {}), nhwc_io, fold_batchnorm,
                            fuse_activations, optimize_layout, max_constant_bytes, fold_qdq, dynamic_quantization)
    started = time.perf_counter()
    model = load_onnx(source)
    # _owned (set by the guard when it loaded the model from a file): nobody else sees this ModelProto, so pinning
    # and shape annotations go into it instead of into a copy of every weight
    owned = _owned or not isinstance(source, onnx.ModelProto)
    if options.input_shapes:
        model = model if owned else onnx.ModelProto.FromString(model.SerializeToString())
        _pin_shapes(model, options.input_shapes)
    opset = opset_of(model)
    dynamic: dict[str, Any] = {}
    if options.dynamic_quantization == "float":
        from .dynamic import float_form

        model, dynamic = float_form(model)
        dynamic.pop("activations", None)  # (check's business: workflows/dropped_quantization.py)
    elif any(n.op_type == "DynamicQuantizeLinear" for n in model.graph.node):
        dynamic = {"form": "exact"}
    model = _inline_unrestorable_calls(model, owned or model is not source)
    model = _with_initializer_inputs(model)
    try:
        # limits.infer_shapes (data propagation with its cost bounded) on a copy without the large weights
        model = infer_shapes_without_weights(model, in_place=owned or model is not source)
    except Exception:  # partial information is still useful; missing shapes surface per node
        pass
    graph = Graph()
    if dynamic:
        graph.quantization.notes["dynamic"] = dynamic
    issues = _convert(model, graph, opset, options)
    if issues:
        raise ConversionError(issues)
    from ..ir.passes import optimize, quantization_summary

    counts = optimize(graph, options)
    if not graph.inputs and options.constant_inputs:
        # everything folded: the bound inputs stay declared (unread) so the model still has inputs, as NNRt requires
        for name, array in options.constant_inputs.items():
            declared = f"{name}.bound"
            graph.add_value(Value(declared, np.asarray(array).dtype, tuple(np.shape(array)) or (1,)))
            graph.inputs.append(declared)
    nnrt_model = emit_model(graph, model.graph.name or "model")
    stats = {
        "opset": opset,
        "onnx_nodes": len(model.graph.node),
        "operations": len(nnrt_model.operations),
        "tensors": len(nnrt_model.tensors),
        "transposes": sum(op.op == OH_NN_OperationType.OH_NN_OPS_TRANSPOSE for op in nnrt_model.operations),
        "seconds": time.perf_counter() - started,
        **counts,
    }
    if dynamic or _quantized(model) or any(v.quant is not None for v in graph.values.values()):
        stats["quantization"] = quantization_summary(graph)
    if graph.deviations:
        stats["deviations"] = [d.as_dict() for d in graph.deviations]
    return ImportResult(nnrt_model, graph, stats)


def _inline_unrestorable_calls(model: onnx.ModelProto, in_place: bool) -> onnx.ModelProto:
    """Calls of NNRt-domain functions whose node lost the metadata naming its op (onnxslim, ``polygraphy surgeon
    sanitize`` and other tools drop node metadata): their function bodies -- standard ops computing exactly what the
    op computes -- are inlined, as ``onnx.inliner`` would, and converted like any ONNX graph. (Inlined on a copy
    without the weights: only the nodes change.)"""
    from ..ir.metadata import METADATA_OP, NNRT_DOMAIN

    local = {(f.domain, f.name) for f in model.functions}
    calls = sorted({(n.domain, n.op_type) for n in model.graph.node if n.domain == NNRT_DOMAIN
                    and (n.domain, n.op_type) in local and not any(p.key == METADATA_OP for p in n.metadata_props)})
    if not calls:
        return model
    import onnx.inliner

    light = onnx.ModelProto(ir_version=model.ir_version)
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    light.graph.node.extend(model.graph.node)
    light.graph.input.extend(model.graph.input)
    light.graph.output.extend(model.graph.output)
    inlined = onnx.inliner.inline_selected_functions(light, calls)
    if not in_place:
        model = onnx.ModelProto.FromString(model.SerializeToString())
    del model.graph.node[:]
    model.graph.node.extend(inlined.graph.node)
    kept = [f for f in model.functions if (f.domain, f.name) not in set(calls)]
    del model.functions[:]
    model.functions.extend(kept)
    return model


def _quantized(model: onnx.ModelProto) -> bool:
    """Whether the ONNX model quantizes anything (its conversion summary then says how much stayed quantized)."""
    return any(n.op_type in ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConvInteger",
                             "MatMulInteger") or n.op_type.startswith(("QLinear", "DynamicQuantize", "MatMulInteger"))
               or (n.domain == "com.microsoft" and n.op_type.startswith("Q")) for n in model.graph.node)


def _convert(model: onnx.ModelProto, graph: Graph, opset: int, options: ImportOptions) -> list[Issue]:
    issues: list[Issue] = []
    initializers = {t.name for t in model.graph.initializer}
    for tensor in model.graph.initializer:
        try:
            array = to_array(tensor)  # (a large one: a view of the mapped file, nothing read yet)
            from_numpy(array.dtype)
        except (ValueError, TypeError) as exc:
            issues.append(Issue(tensor.name, "initializer", opset, UNSUPPORTED_DTYPE, str(exc)))
            continue
        graph.add_value(Value(tensor.name, array.dtype, tuple(array.shape), array))
    for name, array in options.constant_inputs.items():
        if name not in {i.name for i in model.graph.input}:
            issues.append(Issue(name, "input", opset, INVALID_MODEL, f"constant input {name!r} is not a model input"))
            continue
        array = np.asarray(array)
        graph.add_value(Value(name, array.dtype, tuple(array.shape), array))
    declared = {}
    for info in model.graph.input:
        if info.name in initializers or info.name in options.constant_inputs:
            continue
        try:
            dtype = onnx_dtype(info.type.tensor_type.elem_type)
            from_numpy(dtype)
        except (ConversionIssue, ValueError) as exc:
            issues.append(Issue(info.name, "input", opset, UNSUPPORTED_DTYPE, str(exc)))
            continue
        shape = shape_of(info.type)
        declared[info.name] = declared_input(info, shape)
        if shape is None:
            issues.append(Issue(info.name, "input", opset, DYNAMIC_SHAPE,
                                f"model input {info.name!r} has no shape: pin it with --input-shape "
                                f"{info.name}=D1,D2,... or give --input {info.name}=FILE"))
            continue
        dims = info.type.tensor_type.shape.dim
        if any(d.HasField("dim_value") and d.dim_value == 0 for d in dims):
            if any(info.name in node.input for node in model.graph.node if node.op_type != "CastLike"
                   or list(node.input)[:1] == [info.name]):
                issues.append(Issue(info.name, "input", opset, INVALID_MODEL,
                                    f"model input {info.name!r} is empty (a 0 dim): NNRt tensors cannot be empty"))
            graph.add_value(Value(info.name, dtype, shape))  # known (CastLike reads its type) but not a model input
            continue
        graph.add_value(Value(info.name, dtype, shape))
        graph.inputs.append(info.name)

    conversion = GraphConversion(graph, opset, options, declared, [o.name for o in model.graph.output],
                                 {entry.domain: entry.version for entry in model.opset_import})
    conversion.convert_nodes(_releasing(model.graph.node), value_infos(model.graph))
    graph.outputs = [graph.resolve(o.name) for o in model.graph.output]
    issues += conversion.issues
    if not issues:
        issues += _unknown_ranks(graph, conversion)
    return issues


def _unknown_ranks(graph: Graph, conversion: GraphConversion) -> list[Issue]:
    """Tensors whose rank nothing could tell (NNRt needs at least the rank), each against the ONNX node that
    writes it, with what the user can pin."""
    graph.remove_unused()
    writers = {name: node for node in graph.nodes for name in node.outputs}
    found: dict[str, Issue] = {}
    for name in list(graph.inputs) + [n for node in graph.nodes for n in (*node.inputs, *node.outputs)]:
        value = graph.values.get(name)
        if value is None or value.shape is not None or name in found:
            continue
        writer = writers.get(name)
        origin = writer.origin if writer is not None else name
        op_type, domain, opset = graph.origins.get(origin, ("input", "", conversion.opset))
        onnx_name = origin.rsplit("::", 1)[-1]
        hint = conversion.fix_hint([name], needs_value=False)
        found[name] = Issue(onnx_name, op_type, opset, DYNAMIC_SHAPE,
                            f"the rank of {name!r} is unknown" + (f"; {hint}" if hint else ""), name, domain)
    return list(found.values())


def _releasing(nodes):
    """The nodes, the pages of the file's weights a node read dropped from memory once it is converted (a converter
    that permutes or scales a weight has its own copy; the file's view pages in again if anything reads it)."""
    for node in nodes:
        yield node
        release(node.input)


def _materialize_passthrough_outputs(graph: Graph) -> None:
    """An output that is a constant or a model input gets an operation writing it (NNRt outputs are op results).

    A constant output keeps its name; an output that *is* a model input becomes ``<name>.copy``.
    """
    from ..ir.graph import Node

    for position, name in enumerate(graph.outputs):
        value = graph.values[name]
        if name in graph.inputs:
            source, target = name, graph.fresh_name(f"{name}.copy")
            graph.values[target] = Value(target, value.dtype, value.shape, None, value.quant)
            graph.outputs[position] = target
        elif value.data is not None:
            source, target = graph.fresh_name(f"{name}.value"), name
            graph.values[source] = Value(source, value.dtype, value.shape, value.data, value.quant)
            graph.values[name] = Value(name, value.dtype, value.shape, None, value.quant)
        else:
            continue
        origin = graph.tensor_origins.get(name, name)  # (problems with it belong to the node that wrote it)
        if value.shape and sum(d < 0 for d in value.shape) > 1:  # RESHAPE takes one -1: the identity TRANSPOSE
            perm = graph.constant(np.arange(len(value.shape), dtype=np.int64), f"{name}.perm")
            graph.nodes.append(Node(OH_NN_OperationType.OH_NN_OPS_TRANSPOSE, [source, perm], [target], {}, origin))
        elif value.shape:
            shape = graph.constant(np.asarray(value.shape, np.int64), f"{name}.shape")
            graph.nodes.append(Node(OH_NN_OperationType.OH_NN_OPS_RESHAPE, [source, shape], [target], {}, origin))
        else:  # a scalar: SQUEEZE without axes is the identity (a shape tensor cannot be empty in NNRt)
            graph.nodes.append(Node(OH_NN_OperationType.OH_NN_OPS_SQUEEZE, [source], [target], {}, origin))


def _blame(graph: Graph, value_name: str) -> tuple[str, str, str, int]:
    """(ONNX node, op type, domain, opset) a tensor's problem belongs to: the node that wrote it, else the first
    that reads it (a constant or an input)."""
    writer = next((n for n in graph.nodes if value_name in n.outputs), None) or \
        next((n for n in graph.nodes if value_name in n.inputs), None)
    if writer is None:
        return value_name, "input" if value_name in graph.inputs else "output", "", 0
    op_type, domain, opset = graph.origins.get(writer.origin, (writer.op.name, "", 0))
    return writer.origin.rsplit("::", 1)[-1], op_type, domain, opset


def emit_model(graph: Graph, name: str = "model") -> Model:
    """The IR as a finished NNRt Model, built through the validating API."""
    graph.remove_unused()
    model = Model()
    model.name = name
    index: dict[str, int] = {}
    issues = []

    def problem(value_name: str, reason: str, message: str) -> Issue:
        node, op_type, domain, opset = _blame(graph, value_name)
        return Issue(node, op_type, opset, reason, message, value_name, domain)

    def tensor(value_name: str) -> int:
        if value_name in index:
            return index[value_name]
        value = graph.values[value_name]
        if value.shape is None:
            issues.append(problem(value_name, DYNAMIC_SHAPE, f"the rank of {value_name!r} is unknown"))
            dims: tuple[int, ...] = ()
        else:
            dims = value.shape
        try:
            dtype = from_numpy(value.dtype)
        except ValueError as exc:
            raise ConversionError([problem(value_name, UNSUPPORTED_DTYPE, str(exc))]) from None
        if 0 in dims:  # an empty tensor (a constant, e.g. a zero-size slice) reaching an operation or an output
            issues.append(problem(value_name, UNSUPPORTED_ATTRIBUTE, f"{value_name!r} is empty (shape "
                                  f"{list(dims)}): NNRt tensors cannot have a 0 dim"))
            dims = tuple(max(d, 1) if d >= 0 else d for d in dims)
            value = Value(value_name, value.dtype, dims, None, value.quant)
        i = model.add_tensor_legacy(dtype, dims, value.quant, name=value_name)
        if value.data is not None:  # attached, not copied: the importer owns these arrays (or copies of the file's)
            attached = detached(np.ascontiguousarray(value.data.astype(value.dtype, copy=False)))
            if value_name in graph.values:
                graph.values[value_name].data = attached  # (so nothing of the result keeps the file mapped)
            model.attach_tensor_data(i, attached)
        index[value_name] = i
        return i

    _materialize_passthrough_outputs(graph)
    graph_inputs = [tensor(n) for n in graph.inputs]
    for node in graph.nodes:
        inputs = [tensor(n) for n in node.inputs]
        outputs = [tensor(n) for n in node.outputs]
        params = []
        for tensor_type, array in node.params.items():
            p = model.add_tensor_legacy(from_numpy(array.dtype), array.shape, tensor_type=tensor_type)
            model.set_tensor_data(p, np.ascontiguousarray(array))
            params.append(p)
        try:
            model.add_operation(node.op, params, inputs, outputs)
        except NNRtError as exc:
            op_type, domain, opset = graph.origins.get(node.origin, (node.op.name, "", 0))
            issues.append(Issue(node.origin.rsplit("::", 1)[-1], op_type, opset, INVALID_MODEL,
                                f"{node.op.name}: {exc.message}", None, domain))
    graph_outputs = [tensor(n) for n in graph.outputs]
    if issues:
        raise ConversionError(issues)
    if not graph_inputs:
        raise ConversionError([Issue(name, "model", 0, INVALID_MODEL, "the model has no input left (all were constant)")])
    model.specify_inputs_and_outputs(graph_inputs, graph_outputs)
    model.finish()
    return model
