"""NNRt Model -> ONNX ModelProto.

The model becomes the importer's IR; NHWC ops whose exporter emits the ONNX (NCHW) form are wrapped in
transposes; the importer's layout pass cancels the transposes where they meet; then every node is emitted by
its export function, or by its op's generic mapping row read in reverse.
"""
from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..enums import OH_NN_OperationType as OP
from ..geometry import NCHW_TO_NHWC, NHWC_TO_NCHW
from ..ir import transforms
from ..ir.graph import Graph, Node, Value
from ..ir.metadata import quant_metadata
from ..ir.passes import sink_transposes
from ..ir.rows import onnx_rows
from ..model import Model
from ..runtime.graph import execution_order
from .context import METADATA_FUSED, METADATA_QUANT, NNRT_DOMAIN, ExportContext, ExportIssue
from .handlers import exporters
from .handlers._common import emit_node
from .opset_forms import lower

DEFAULT_OPSET = 18
OPSETS = range(13, 24)  # target opsets of an export: 13 (single-axis Softmax) .. 23 (the newest the importer takes)


class ExportError(Exception):
    """Every operation that cannot be exported, each problem naming its operation (``conv2d_3: ...``)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        if len(problems) == 1:
            super().__init__(f"1 operation cannot be exported: {problems[0]}")
        else:
            super().__init__(f"{len(problems)} operations cannot be exported" + "".join(f"\n  {p}" for p in problems))


def model_to_ir(model: Model) -> Graph:
    """The finished model as an IR graph (tensor names made unique), operations in execution order."""
    graph = Graph()
    names: list[str] = []
    used: set[str] = set()
    for index, tensor in enumerate(model.tensors):
        name = tensor.name or f"tensor{index}"
        if name in used:
            name = f"{name}.{index}"
        used.add(name)
        names.append(name)
    params = {t for op in model.operations for t in op.params}
    for index, tensor in enumerate(model.tensors):
        if index in params:
            continue
        graph.add_value(Value(names[index], tensor.np_dtype, tuple(tensor.dims), tensor.data, tensor.quant))
    for number in execution_order(model):
        operation = model.operations[number]
        node_params = {model.tensors[p].tensor_type: np.asarray(model.tensors[p].data) for p in operation.params}
        graph.nodes.append(Node(operation.op, [names[i] for i in operation.inputs],
                                [names[i] for i in operation.outputs], node_params, origin=f"{operation.op.name[10:].lower()}_{number}"))
    graph.inputs = [names[i] for i in model.inputs]
    graph.outputs = [names[i] for i in model.outputs]
    return graph


def _wrap_nchw(graph: Graph) -> None:
    """Put NHWC ops that export as NCHW ONNX ops between transposes."""
    table = exporters()
    for node in list(graph.nodes):
        fn = table.get(node.op)
        nchw = getattr(fn, "nchw", False) if fn is not None else False
        if callable(nchw):  # a per-node decision (e.g. a dtype only the NNRt-domain NHWC function handles)
            nchw = nchw(node, graph)
        if not nchw:
            continue
        x, y = graph.values[node.inputs[0]], graph.values[node.outputs[0]]
        if x.shape is None or len(x.shape) != 4 or y.shape is None or len(y.shape) != 4:
            continue
        x_nchw = graph.fresh_name(f"{x.name}.nchw")
        graph.add_value(Value(x_nchw, x.dtype, tuple(x.shape[p] for p in NHWC_TO_NCHW), None, x.quant))
        y_nchw = graph.fresh_name(f"{y.name}.nchw")
        graph.add_value(Value(y_nchw, y.dtype, tuple(y.shape[p] for p in NHWC_TO_NCHW), None, y.quant))
        position = graph.nodes.index(node)
        to_nchw = Node(OP.OH_NN_OPS_TRANSPOSE, [x.name, graph.constant(np.asarray(NHWC_TO_NCHW, np.int64))], [x_nchw])
        to_nhwc = Node(OP.OH_NN_OPS_TRANSPOSE, [y_nchw, graph.constant(np.asarray(NCHW_TO_NHWC, np.int64))], [y.name])
        node.inputs[0], node.outputs[0], node.layout = x_nchw, y_nchw, "NCHW"
        graph.nodes.insert(position, to_nchw)
        graph.nodes.insert(position + 2, to_nhwc)


class OnnxBuilder:
    def __init__(self, opset: int):
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: dict[str, np.ndarray] = {}  # written into the model once, at the end
        self.functions: dict[str, onnx.FunctionProto] = {}
        self.pending_activation: tuple[str, str, int] | None = None
        self.dequantized: dict[str, str] = {}
        self.quant_dtype: dict[str, np.dtype] = {}  # quantized tensor -> its integer dtype (zero points match it)
        self.origins: dict[str, str] = {}  # ONNX node name / function name -> the NNRt operation it comes from
        self._names: set[str] = set()
        self._counter = 0

    def reserve(self, names) -> None:
        self._names.update(names)

    def fresh(self, hint: str) -> str:
        while True:
            self._counter += 1
            name = f"{hint}_{self._counter}"
            if name not in self._names:
                self._names.add(name)
                return name

    def initializer(self, array: np.ndarray, name: str) -> str:
        self.initializers[name] = np.asarray(array)
        return name

    def _quant_node(self, op_type: str, source: str, target: str, quant, axis: int | None, role: str) -> None:
        integer = target if role == "quantize" else source  # the zero point has the quantized tensor's type
        scales = np.asarray(quant.scales, np.float32)
        zero_points = np.asarray(quant.zero_points, self.quant_dtype.get(integer, np.int8))
        if axis is None:
            scales, zero_points = scales.reshape(()), zero_points.reshape(())
        scale = self.initializer(scales, self.fresh(f"{source}.scale"))
        zero = self.initializer(zero_points, self.fresh(f"{source}.zero_point"))
        node = helper.make_node(op_type, [source, scale, zero], [target], name=self.fresh(op_type),
                                **({"axis": axis} if axis is not None else {}))
        entry = node.metadata_props.add()
        info = json.loads(quant_metadata(quant))
        entry.key, entry.value = METADATA_QUANT, json.dumps({**info, "role": role})
        self.nodes.append(node)

    def dequantize(self, name: str, quant, axis: int | None) -> str:
        """DequantizeLinear of a quantized tensor (once per tensor): the float view ONNX ops consume."""
        if name not in self.dequantized:
            target = self.fresh(f"{name}.dq")
            self._quant_node("DequantizeLinear", name, target, quant, axis, "dequantize")
            self.dequantized[name] = target
        return self.dequantized[name]

    def quantize(self, source: str, target: str, quant, axis: int | None) -> None:
        self._quant_node("QuantizeLinear", source, target, quant, axis, "quantize")


def _value_info(value: Value) -> onnx.ValueInfoProto:
    elem = helper.np_dtype_to_tensor_dtype(value.dtype)
    dims = None if value.shape is None else [d if d >= 0 else f"{value.name}_d{i}" for i, d in enumerate(value.shape)]
    return helper.make_tensor_value_info(value.name, elem, dims)


def _schema_attr_type(op_type: str, opset: int, name: str):
    try:
        return onnx.defs.get_schema(op_type, opset).attributes[name].type
    except Exception:
        return None


def _onnx_attr_value(value: Any, attr_type):
    kinds = onnx.defs.OpSchema.AttrType
    if attr_type == kinds.INT:
        return int(value[0] if isinstance(value, list) else value)
    if attr_type == kinds.FLOAT:
        return float(value[0] if isinstance(value, list) else value)
    if attr_type == kinds.INTS:
        return [int(v) for v in (value if isinstance(value, list) else [value])]
    if attr_type == kinds.FLOATS:
        return [float(v) for v in (value if isinstance(value, list) else [value])]
    if attr_type == kinds.STRING:
        return str(value)
    return value


def export_generic(ctx: ExportContext) -> None:
    """The op's generic mapping row read in reverse: inputs in order, parameters back to attributes."""
    rows = [r for rows in onnx_rows().values() for r in rows
            if r.nnrt_op == ctx.node.op and r.export == "generic" and r.since <= ctx.opset
            and (r.until is None or ctx.opset <= r.until)]
    if not rows:
        raise ExportIssue(f"{ctx.node.op.name} has no ONNX export (no export function and no generic mapping row)")
    row = max(rows, key=lambda r: r.since)
    inputs: list[str] = [""] * (max(row.inputs) + 1 if row.inputs else len(ctx.node.inputs))
    for position, name in enumerate(ctx.node.inputs):
        target = row.inputs[position] if row.inputs else position
        inputs[target] = name
    attrs = {}
    for attr_name, rule in row.attrs.items():
        if rule.param is None:
            continue
        spec = ctx.spec.params[rule.param]
        keyword = spec.keywords[0]
        value = ctx.args.get(keyword)
        if value is None:
            continue
        if rule.transform:
            value = transforms.apply(transforms.INVERSES[rule.transform], value)
        attrs[attr_name] = _onnx_attr_value(value, _schema_attr_type(row.op_type, ctx.opset, attr_name))
    if row.inputs is None and len(ctx.node.outputs) == 1 and ctx.node.inputs:
        # the one node, widened (and cast back) where onnxruntime has no kernel for the dtype
        emit_node(ctx, row.op_type, ctx.graph.values[ctx.node.inputs[0]].dtype, **attrs)
        return
    ctx.add(row.op_type, inputs, [ctx.result(0)] + ctx.node.outputs[1:], main=True, **attrs)


def _emit_transpose(ctx: ExportContext) -> None:
    perm = [int(p) for p in ctx.constant_input(1, "the permutation").reshape(-1)]
    ctx.add("Transpose", [ctx.input(0)], [ctx.result(0)], main=True, perm=perm)


def _quantized_operands(graph: Graph, node: Node, builder: OnnxBuilder, table) -> list:
    """Quantized operands of an op that computes in float: its inputs are read through DequantizeLinear and its
    outputs written through QuantizeLinear. Returns the (float output, quantized output, quant) to emit after it."""
    from ..optable import op_spec

    if op_spec(node.op).quant == "native":
        return []
    has_function = node.op in table
    for position, name in enumerate(node.inputs):
        value = graph.values[name]
        if value.quant is None or (value.data is not None and has_function):  # export functions use ctx.weight
            continue
        if value.data is not None:
            builder.initializer(value.data, name)
        node.inputs[position] = builder.dequantize(name, value.quant, (value.quant.axis or 0) if value.quant.count > 1
                                                   else None)
        graph.values.setdefault(node.inputs[position], Value(node.inputs[position], np.dtype(np.float32), value.shape))
    requantize = []
    for position, name in enumerate(node.outputs):
        value = graph.values[name]
        if value.quant is None:
            continue
        float_name = builder.fresh(f"{name}.f")
        graph.values[float_name] = Value(float_name, np.dtype(np.float32), value.shape)
        node.outputs[position] = float_name
        requantize.append((float_name, name, value.quant))
    return requantize


def _emit_activation(builder: OnnxBuilder, source: str, target: str, fuse: int, dtype=np.float32) -> None:
    if fuse == 1:
        node = helper.make_node("Relu", [source], [target], name=builder.fresh("relu"))
    else:  # Clip's min/max have the data's dtype
        low = builder.initializer(np.asarray(0, dtype), builder.fresh("relu6_min"))
        high = builder.initializer(np.asarray(6, dtype), builder.fresh("relu6_max"))
        node = helper.make_node("Clip", [source, low, high], [target], name=builder.fresh("relu6"))
    entry = node.metadata_props.add()
    entry.key, entry.value = METADATA_FUSED, str(fuse)
    builder.nodes.append(node)


def _write_initializer(tensor: TensorProto, name: str, array: np.ndarray) -> None:
    """Fill an initializer in place (one copy of the bytes, little-endian raw data)."""
    array = np.asarray(array)
    tensor.name = name
    tensor.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
    tensor.dims.extend(array.shape)
    little = array.astype(array.dtype.newbyteorder("<"), copy=False) if array.dtype.byteorder == ">" else array
    tensor.raw_data = np.ascontiguousarray(little).tobytes()


def _remember_origin(builder: OnnxBuilder, nodes, origin: str | None) -> None:
    """Name the ONNX nodes one NNRt operation became after it (and its function), for the checker's messages."""
    origin = origin or "an operation"
    for node in nodes:
        if not node.name:
            node.name = builder.fresh(origin)
        builder.origins[node.name] = origin
        if node.domain == NNRT_DOMAIN:
            builder.origins[node.op_type] = origin


def _culprit(model: onnx.ModelProto, origins: dict[str, str], message: str) -> str:
    """The NNRt operation whose ONNX nodes the checker rejects: the first node (of the graph or of a function body)
    that fails on its own, else the node the message names."""
    def failing(node, opsets) -> bool:
        ctx = onnx.checker.C.CheckerContext()
        ctx.ir_version, ctx.opset_imports = model.ir_version, opsets
        try:
            onnx.checker.check_node(node, ctx)
        except onnx.checker.ValidationError:
            return True
        return False

    opsets = {o.domain: o.version for o in model.opset_import}
    functions = {f.name: f for f in model.functions}
    for node in model.graph.node:
        if node.op_type not in functions and failing(node, opsets):
            return origins.get(node.name, f"node {node.name!r}")
    for function in model.functions:
        inner = {**opsets, **{o.domain: o.version for o in function.opset_import}}
        if any(failing(node, inner) for node in function.node):
            return origins.get(function.name, f"function {function.name!r}")
    for name, origin in origins.items():
        if name and (f"node name: {name})" in message or f"Node({name})" in message or f"({name})" in message):
            return origin
    return "an operation the ONNX checker does not name"


def to_onnx(model: Model, opset: int = DEFAULT_OPSET, name: str | None = None, optimize_layout: bool = True,
            check: bool = False) -> onnx.ModelProto:
    """Export a finished NNRt model. Raises :class:`ExportError` listing every op that cannot be exported.

    The graph is named ``name``, by default the model's (the source ONNX graph's name, for a converted model) or
    ``nnrt_model``.
    ``check=True`` also runs ``onnx.checker.check_model(full_check=True)`` (the tests and the CLI do)."""
    started = time.perf_counter()
    graph_name = name or getattr(model, "name", "") or "nnrt_model"  # (before the loops below reuse ``name``)
    if not model.finished:
        raise ExportError(["the model is not finished"])
    if isinstance(opset, bool) or not isinstance(opset, int) or opset not in OPSETS:
        raise ExportError([f"opset {opset!r} is not a target opset of the export ({OPSETS.start}..{OPSETS.stop - 1})"])
    graph = model_to_ir(model)
    _wrap_nchw(graph)
    if optimize_layout:
        sink_transposes(graph)
        graph.remove_unused()
    builder = OnnxBuilder(opset)
    builder.reserve(graph.values)
    problems = []
    table = exporters()
    used_constants: set[str] = set()
    for value_name, value in graph.values.items():
        if value.quant is not None:
            builder.quant_dtype[value_name] = value.dtype
    for node in graph.nodes:
        for i in node.inputs:
            if graph.values[i].data is not None:
                used_constants.add(i)
        requantize = _quantized_operands(graph, node, builder, table)
        ctx = ExportContext(graph, node, builder)
        first = len(builder.nodes)
        try:
            if node.op == OP.OH_NN_OPS_TRANSPOSE and graph.values[node.inputs[1]].data is not None:
                _emit_transpose(ctx)
            else:
                (table.get(node.op) or export_generic)(ctx)
            builder.nodes[first:] = lower(builder.nodes[first:], opset, builder.initializers.get, builder.fresh)
        except ExportIssue as exc:
            problems.append(f"{node.origin}: {exc.message}")
        _remember_origin(builder, builder.nodes[first:], node.origin)
        if builder.pending_activation is not None:
            _emit_activation(builder, *builder.pending_activation,
                             dtype=graph.values[builder.pending_activation[1]].dtype)
            builder.pending_activation = None
        for float_name, name, quant in requantize:
            builder.quantize(float_name, name, quant, (quant.axis or 0) if quant.count > 1 else None)
    if problems:
        raise ExportError(problems)
    referenced = {i for n in builder.nodes for i in n.input}
    for function in builder.functions.values():
        referenced.update(i for n in function.node for i in n.input)
    for name in sorted(used_constants & referenced):
        builder.initializer(graph.values[name].data, name)
    result = onnx.ModelProto()
    result.ir_version = min(onnx.IR_VERSION, 10)
    result.producer_name = "nnrt_onnx"
    result.opset_import.append(helper.make_opsetid("", opset))
    if builder.functions:
        result.opset_import.append(helper.make_opsetid(NNRT_DOMAIN, 1))
    onnx_graph = result.graph
    onnx_graph.name = graph_name
    onnx_graph.node.extend(builder.nodes)
    onnx_graph.input.extend(_value_info(graph.values[i]) for i in graph.inputs)
    onnx_graph.output.extend(_value_info(graph.values[o]) for o in graph.outputs)
    for tensor_name, array in builder.initializers.items():
        if tensor_name in referenced:
            _write_initializer(onnx_graph.initializer.add(), tensor_name, array)
    result.functions.extend(builder.functions.values())
    if check:
        try:
            onnx.checker.check_model(result, full_check=True)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
            message = str(exc).strip().splitlines()[0]
            raise ExportError([f"{_culprit(result, builder.origins, message)}: the export at opset {opset} fails "
                               f"the ONNX checker: {message}"]) from None
    result.doc_string = f"exported by nnrt_onnx in {time.perf_counter() - started:.3f} s"
    return result
