"""ONNX -> NNRt: load, infer shapes, convert node by node (collecting every problem), optimise, emit a Model."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from ..dtypes import from_numpy
from ..enums import OH_NN_OperationType
from ..errors import NNRtError
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
from ..ir.metadata import METADATA_FUSED, METADATA_OP, METADATA_PARAMS, METADATA_QUANT, NNRT_DOMAIN
from ..ir.quantized import guard_raw_reads
from ..ir.rows import domain_versions, qualified, route
from ..model import Model
from .context import NodeContext
from .handlers import handler_for
from .restore import restore_exact_params, restore_nnrt_node, restore_quantized_tensor

DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass
class ImportOptions:
    input_shapes: Mapping[str, Sequence[int]] = field(default_factory=dict)  # pin dynamic input dims
    constant_inputs: Mapping[str, np.ndarray] = field(default_factory=dict)  # bind inputs to fixed values
    nhwc_io: bool = False  # model inputs/outputs in NHWC instead of the ONNX layout (4-D image tensors)
    fold_batchnorm: bool = True
    fuse_activations: bool = True
    optimize_layout: bool = True
    fold_qdq: bool = True  # DequantizeLinear -> op -> QuantizeLinear groups become quantized NNRt ops (ir/passes/qdq.py)
    dynamic_quantization: str = "float"  # "float": weights dequantized at conversion (dynamic.py); "exact"


@dataclass
class ImportResult:
    model: Model
    graph: Graph
    stats: dict[str, Any]


def _onnx_dtype(elem_type: int) -> np.dtype:
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"ONNX element type {elem_type} has no numpy/NNRt equivalent") from None


def _shape_of(type_proto) -> tuple[int, ...] | None:
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else -1
                 for d in type_proto.tensor_type.shape.dim)


def load_onnx(source: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    if isinstance(source, onnx.ModelProto):
        return source
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        return onnx.load(str(path))  # external data next to the file loads with it
    except Exception as exc:  # protobuf decode errors have no stable type
        raise ConversionError([Issue(str(path), "-", 0, INVALID_MODEL, f"not a readable ONNX model: {exc}")]) from None


def _pin_shapes(model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]]) -> None:
    inputs = {i.name: i for i in model.graph.input}
    for name, dims in shapes.items():
        if name not in inputs:
            raise ConversionError([Issue(name, "-", 0, INVALID_MODEL,
                                         f"--input-shape names unknown input {name!r}; inputs: {list(inputs)}")])
        tensor_shape = inputs[name].type.tensor_type.shape
        if len(tensor_shape.dim) not in (0, len(dims)):
            raise ConversionError([Issue(name, "-", 0, INVALID_MODEL,
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


def from_onnx(source: str | Path | onnx.ModelProto, *, input_shapes: Mapping[str, Sequence[int]] | None = None,
              constant_inputs: Mapping[str, np.ndarray] | None = None, nhwc_io: bool = False,
              fold_batchnorm: bool = True, fuse_activations: bool = True, optimize_layout: bool = True,
              fold_qdq: bool = True, dynamic_quantization: str = "float") -> ImportResult:
    """Convert an ONNX model (path or ModelProto) to a finished NNRt :class:`Model`.

    ``input_shapes`` pins dynamic input dims; ``constant_inputs`` binds inputs to fixed values (NNRt needs
    shapes, axes and the like as constants). ``fold_qdq`` makes quantized ONNX models quantized NNRt models
    (docs/quantization.md); ``dynamic_quantization`` picks the form of dynamically quantized ones ("float": the
    weights dequantized at conversion, float arithmetic; "exact": the integer arithmetic, exactly). Raises
    :class:`ConversionError` listing every node that cannot be converted, with a reason code each.
    """
    if dynamic_quantization not in ("float", "exact"):
        raise ValueError(f"dynamic_quantization must be 'float' or 'exact', got {dynamic_quantization!r}")
    options = ImportOptions(dict(input_shapes or {}), dict(constant_inputs or {}), nhwc_io, fold_batchnorm,
                            fuse_activations, optimize_layout, fold_qdq, dynamic_quantization)
    started = time.perf_counter()
    model = load_onnx(source)
    if options.input_shapes:
        model = onnx.ModelProto.FromString(model.SerializeToString()) if isinstance(source, onnx.ModelProto) else model
        _pin_shapes(model, options.input_shapes)
    opset = opset_of(model)
    dynamic: dict[str, Any] = {}
    if options.dynamic_quantization == "float":
        from .dynamic import float_form

        model, dynamic = float_form(model)
    elif any(n.op_type == "DynamicQuantizeLinear" for n in model.graph.node):
        dynamic = {"form": "exact"}
    model = _with_initializer_inputs(model)
    try:
        model = onnx.shape_inference.infer_shapes(model, data_prop=True)
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
    return ImportResult(nnrt_model, graph, stats)


def _quantized(model: onnx.ModelProto) -> bool:
    """Whether the ONNX model quantizes anything (its conversion summary then says how much stayed quantized)."""
    return any(n.op_type in ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConvInteger",
                             "MatMulInteger") or n.op_type.startswith(("QLinear", "DynamicQuantize", "MatMulInteger"))
               or (n.domain == "com.microsoft" and n.op_type.startswith("Q")) for n in model.graph.node)


def _value_infos(model: onnx.ModelProto) -> dict[str, Any]:
    infos = {}
    for info in list(model.graph.value_info) + list(model.graph.output) + list(model.graph.input):
        infos[info.name] = info.type
    return infos


def _convert(model: onnx.ModelProto, graph: Graph, opset: int, options: ImportOptions) -> list[Issue]:
    issues: list[Issue] = []
    initializers = {t.name for t in model.graph.initializer}
    for tensor in model.graph.initializer:
        try:
            array = numpy_helper.to_array(tensor)
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
    for info in model.graph.input:
        if info.name in initializers or info.name in options.constant_inputs:
            continue
        try:
            dtype = _onnx_dtype(info.type.tensor_type.elem_type)
            from_numpy(dtype)
        except (ConversionIssue, ValueError) as exc:
            issues.append(Issue(info.name, "input", opset, UNSUPPORTED_DTYPE, str(exc)))
            continue
        shape = _shape_of(info.type)
        if shape is None:
            issues.append(Issue(info.name, "input", opset, DYNAMIC_SHAPE, "model input has no shape (pin it)"))
            continue
        dims = info.type.tensor_type.shape.dim
        if any(d.HasField("dim_value") and d.dim_value == 0 for d in dims):
            if any(info.name in node.input for node in model.graph.node if node.op_type != "CastLike"
                   or list(node.input).index(info.name) == 0):
                issues.append(Issue(info.name, "input", opset, INVALID_MODEL,
                                    f"model input {info.name!r} is empty (a 0 dim): NNRt tensors cannot be empty"))
            graph.add_value(Value(info.name, dtype, shape))  # known (CastLike reads its type) but not a model input
            continue
        graph.add_value(Value(info.name, dtype, shape))
        graph.inputs.append(info.name)

    infos = _value_infos(model)
    versions = domain_versions(model.opset_import)
    for node in model.graph.node:
        name = node.name or (node.output[0] if node.output else node.op_type)
        for output in node.output:
            if output and output not in graph.values:
                type_proto = infos.get(output)
                dtype, shape = np.dtype(np.float32), None
                if type_proto is not None and type_proto.tensor_type.elem_type:
                    try:
                        dtype = _onnx_dtype(type_proto.tensor_type.elem_type)
                    except ConversionIssue:
                        pass
                    shape = _shape_of(type_proto)
                graph.add_value(Value(output, dtype, shape))
        metadata = {entry.key: entry.value for entry in node.metadata_props}
        if METADATA_QUANT in metadata:
            try:
                restore_quantized_tensor(graph, node, metadata[METADATA_QUANT])
            except (KeyError, AttributeError, ValueError) as exc:
                issues.append(Issue(name, node.op_type, opset, INVALID_MODEL, f"cannot restore quant params: {exc}"))
            continue
        if METADATA_FUSED in metadata and node.input:
            graph.aliases[node.output[0]] = graph.resolve(node.input[0])  # already in the producing op's parameters
            continue
        if node.domain == NNRT_DOMAIN:
            try:
                restore_nnrt_node(graph, node, metadata)
            except (ConversionIssue, KeyError, ValueError) as exc:
                issues.append(Issue(name, node.op_type, opset, INVALID_MODEL, f"cannot restore the NNRt op: {exc}"))
            continue
        row, version, problem = route(node.domain, node.op_type, versions)  # by (domain, type, that domain's opset)
        if row is None:
            issues.append(Issue(name, qualified(node.domain, node.op_type), version, *problem))
            continue
        ctx = NodeContext(graph, node, row, opset, options)
        emitted_before = len(graph.nodes)
        try:
            handler_for(row)(ctx)
            if graph.quantization.raw:  # ONNX reads these quantized tensors as integers (ir.quantized)
                guard_raw_reads(graph, graph.nodes[emitted_before:])
            if METADATA_PARAMS in metadata:
                restore_exact_params(graph.nodes[emitted_before:], metadata[METADATA_PARAMS], metadata.get(METADATA_OP))
            unused = sorted(set(ctx.attrs) - ctx.used_attrs - set(row.attrs))
            if unused:
                raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"attribute(s) {unused} are not supported")
        except ConversionIssue as exc:
            issues.append(Issue(name, row.op_type, version, exc.reason, exc.message, exc.tensor))
        except NNRtError as exc:  # an emitted op the NNRt API would reject
            issues.append(Issue(name, row.op_type, version, INVALID_MODEL, exc.message))
    graph.outputs = [graph.resolve(o.name) for o in model.graph.output]
    return issues


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
        if value.shape:
            shape = graph.constant(np.asarray(value.shape, np.int64), f"{name}.shape")
            graph.nodes.append(Node(OH_NN_OperationType.OH_NN_OPS_RESHAPE, [source, shape], [target], {}, name))
        else:  # a scalar: SQUEEZE without axes is the identity (a shape tensor cannot be empty in NNRt)
            graph.nodes.append(Node(OH_NN_OperationType.OH_NN_OPS_SQUEEZE, [source], [target], {}, name))


def emit_model(graph: Graph, name: str = "model") -> Model:
    """The IR as a finished NNRt Model, built through the validating API."""
    graph.remove_unused()
    model = Model()
    index: dict[str, int] = {}
    issues = []

    def tensor(value_name: str) -> int:
        if value_name in index:
            return index[value_name]
        value = graph.values[value_name]
        if value.shape is None:
            issues.append(Issue(value_name, "-", 0, DYNAMIC_SHAPE, f"the rank of {value_name!r} is unknown"))
            dims: tuple[int, ...] = ()
        else:
            dims = value.shape
        try:
            dtype = from_numpy(value.dtype)
        except ValueError as exc:
            raise ConversionError([Issue(value_name, "-", 0, UNSUPPORTED_DTYPE, str(exc))]) from None
        if 0 in dims:  # an empty tensor (a constant, e.g. a zero-size slice) reaching an operation or an output
            issues.append(Issue(value_name, "-", 0, UNSUPPORTED_ATTRIBUTE, f"{value_name!r} is empty (shape "
                                f"{list(dims)}): NNRt tensors cannot have a 0 dim"))
            dims = tuple(max(d, 1) if d >= 0 else d for d in dims)
            value = Value(value_name, value.dtype, dims, None, value.quant)
        i = model.add_tensor_legacy(dtype, dims, value.quant, name=value_name)
        if value.data is not None:  # attached, not copied: the importer owns these arrays
            model.attach_tensor_data(i, np.ascontiguousarray(value.data.astype(value.dtype, copy=False)))
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
            issues.append(Issue(node.origin, node.op.name, 0, INVALID_MODEL, exc.message))
    graph_outputs = [tensor(n) for n in graph.outputs]
    if issues:
        raise ConversionError(issues)
    if not graph_inputs:
        raise ConversionError([Issue(name, "-", 0, INVALID_MODEL, "the model has no input left (all were constant)")])
    model.specify_inputs_and_outputs(graph_inputs, graph_outputs)
    model.finish()
    return model
