"""Node-by-node conversion of an ONNX graph into the IR, collecting every problem.

One :class:`GraphConversion` converts a model: each node is looked up in the mapping rows and converted by its
handler; a problem is recorded against the node (name, op type, domain, opset) with a reason code and, when a model
input is to blame, what to pin or bind. A node fed by a node that could not be converted reports its problem as
following from that one (``Issue.depends_on``), not as a root cause. Control-flow handlers convert subgraphs
inline through :meth:`GraphConversion.inline`, with the same machinery (nested subgraphs, outer-scope names).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from ..dtypes import from_numpy
from ..errors import NNRtError
from ..ir.graph import Graph, Value
from ..ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    NEEDS_CONSTANT,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_DTYPE,
    ConversionIssue,
    Issue,
)
from ..ir.metadata import METADATA_FUSED, METADATA_OP, METADATA_PARAMS, METADATA_QUANT, NNRT_DOMAIN
from ..ir.quantized import guard_raw_reads
from ..ir.rows import route
from .attributes import check_node, input_ranks
from .context import NodeContext
from .diagnosis import DeclaredInput, fix_hint
from .guard import internal_issue
from .handlers import handler_for
from .restore import restore_exact_params, restore_nnrt_node, restore_quantized_tensor
from .subgraph import SEPARATOR, renamed_copy
from .symbolic import ShapeValues

DEFAULT_DOMAINS = ("", "ai.onnx")


def onnx_dtype(elem_type: int) -> np.dtype:
    """The numpy dtype of an ONNX element type (UNSUPPORTED_DTYPE when there is none)."""
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"ONNX element type {elem_type} has no numpy/NNRt equivalent") from None


def shape_of(type_proto) -> tuple[int, ...] | None:
    """The dims of a TypeProto (-1 for unknown or 0 dims); None when the rank is unknown."""
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else -1
                 for d in type_proto.tensor_type.shape.dim)


def value_infos(graph: onnx.GraphProto) -> dict[str, Any]:
    """Tensor name -> TypeProto of everything shape inference (or the file) says about a graph's tensors."""
    infos = {}
    for info in list(graph.value_info) + list(graph.output) + list(graph.input):
        infos[info.name] = info.type
    return infos


def node_label(node: onnx.NodeProto) -> str:
    return node.name or (node.output[0] if node.output else node.op_type)


class GraphConversion:
    """The conversion of one model's graph (and the subgraphs inlined into it) into ``graph``."""

    def __init__(self, graph: Graph, opset: int, options, inputs: Mapping[str, DeclaredInput],
                 model_outputs: Sequence[str] = (), domain_opsets: Mapping[str, int] | None = None):
        self.graph = graph
        self.domain_opsets = dict(domain_opsets or {})  # the opset the model imports for each other domain
        self.model_outputs = set(model_outputs)
        self.opset = opset
        self.options = options
        self.inputs = dict(inputs)  # the model's runtime inputs, for the hints
        self.issues: list[Issue] = []
        self.producers: dict[str, onnx.NodeProto] = {}  # tensor -> the ONNX node writing it (inlined ones too)
        self.failed: dict[str, str] = {}  # tensor -> the node whose failed conversion it follows from
        self.symbols: dict[str, tuple[str, ...]] = {n: i.symbols for n, i in self.inputs.items()}  # ONNX dim_params
        self.scope: list[str] = []  # the control-flow nodes being inlined, outermost first
        # tensors whose ONNX-inferred shape a converter overrode (onnx shape inference contradicting the kernels'
        # rule and onnxruntime): the inferred shapes of everything computed from them are not trusted either
        self.distrusted: set[str] = set()

    # -- nodes ---------------------------------------------------------------------------------------------------
    def convert_nodes(self, nodes, infos: Mapping[str, Any], use_shapes: bool = True) -> None:
        for node in nodes:
            self.convert_node(node, infos, use_shapes)

    def _declare_outputs(self, node: onnx.NodeProto, infos: Mapping[str, Any], use_shapes: bool) -> None:
        downstream = any(i in self.distrusted for i in node.input)
        if downstream:
            self.distrusted.update(o for o in node.output if o)
        for output in node.output:
            type_proto = infos.get(output)
            # a model output's stated shape is not trusted (exporters write stale ones; onnxruntime only warns):
            # the rules give it; nor one computed from a tensor whose inferred shape was wrong
            trusted = use_shapes and output not in self.model_outputs and not downstream
            if trusted and type_proto is not None and type_proto.tensor_type.HasField("shape"):
                self.symbols[output] = tuple(d.dim_param for d in type_proto.tensor_type.shape.dim)
            if output and output not in self.graph.values:
                dtype, shape = np.dtype(np.float32), None
                if type_proto is not None and type_proto.tensor_type.elem_type:
                    try:
                        dtype = onnx_dtype(type_proto.tensor_type.elem_type)
                    except ConversionIssue:
                        pass
                    shape = shape_of(type_proto) if trusted else None
                self.graph.add_value(Value(output, dtype, shape))

    def convert_node(self, node: onnx.NodeProto, infos: Mapping[str, Any], use_shapes: bool = True) -> None:
        label = node_label(node)
        for output in node.output:
            if output:
                self.producers[output] = node
        self._declare_outputs(node, infos, use_shapes)
        upstream = sorted({self.failed[i] for i in node.input if i in self.failed})
        self.graph.origins.setdefault(self._ir_name(label), (node.op_type, node.domain, self._opset_of(node)))
        self.graph.tensor_origins.update({o: self._ir_name(label) for o in node.output if o})
        issues_before = len(self.issues)
        try:
            self._convert(node, label)
        except ConversionIssue as exc:
            self._record(node, label, exc.reason, exc.message, exc.tensor, upstream, exc.axes)
        except NNRtError as exc:  # an emitted op the NNRt API would reject
            self._record(node, label, INVALID_MODEL, exc.message, None, upstream)
        except Exception as exc:  # invalid per ONNX, or a converter bug (internal_error): never an escaping exception
            issue = internal_issue(label, node.op_type, self._opset_of(node), exc, proto=node, graph=self.graph)
            self._record(node, label, issue.reason, issue.message, None, upstream)
        else:
            inner = [i for i in self.issues[issues_before:] if i.is_root]
            if upstream or inner:  # converted, but from something that was not (or a subgraph that was not)
                root = upstream[0] if upstream else inner[0].node
                for output in node.output:
                    if output:
                        self.failed.setdefault(output, root)

    def _opset_of(self, node: onnx.NodeProto) -> int:
        """The opset the model imports for the node's domain."""
        return self.opset if node.domain in DEFAULT_DOMAINS else self.domain_opsets.get(node.domain, 0)

    def _ir_name(self, label: str) -> str:
        """The name this node's IR nodes carry as their origin (unique across inlined copies)."""
        return SEPARATOR.join([*self.scope, label]) if self.scope else label

    def _record(self, node, label: str, reason: str, message: str, tensor, upstream: list[str],
                axes: tuple[int, ...] | None = None) -> None:
        depends_on = upstream[0] if upstream else None
        if depends_on is None and reason in (DYNAMIC_SHAPE, NEEDS_CONSTANT):
            hint = self.fix_hint([tensor] if tensor else [i for i in node.input if i], reason == NEEDS_CONSTANT,
                                 axes if tensor else None)
            if hint:
                message = f"{message}; {hint}"
        if self.scope:
            message = f"{message} (inside {' > '.join(self.scope)})"
        self.issues.append(Issue(label, node.op_type, self._opset_of(node), reason, message, tensor, node.domain,
                                 depends_on))
        root = depends_on or label
        for output in node.output:
            if output:
                self.failed.setdefault(output, root)

    def _convert(self, node: onnx.NodeProto, label: str) -> None:
        graph = self.graph
        metadata = {entry.key: entry.value for entry in node.metadata_props}
        if METADATA_QUANT in metadata:
            try:
                restore_quantized_tensor(graph, node, metadata[METADATA_QUANT])
            except (KeyError, AttributeError, ValueError) as exc:
                raise ConversionIssue(INVALID_MODEL, f"cannot restore quant params: {exc}") from None
            return
        if METADATA_FUSED in metadata and node.input:
            graph.aliases[node.output[0]] = graph.resolve(node.input[0])  # already in the producing op's parameters
            return
        if node.domain == NNRT_DOMAIN:
            try:
                restore_nnrt_node(graph, node, metadata)
            except (ConversionIssue, KeyError, ValueError) as exc:
                raise ConversionIssue(INVALID_MODEL, f"cannot restore the NNRt op: {exc}") from None
            return
        # by (domain, type, the model's opset of that domain): com.microsoft rows are keyed com.microsoft.<Op>
        versions = {"": self.opset, **{d: v for d, v in self.domain_opsets.items() if d not in DEFAULT_DOMAINS}}
        row, _, problem = route(node.domain, node.op_type, versions)
        if row is None:
            raise ConversionIssue(*problem)
        check_node(node, self._opset_of(node), input_ranks(graph, node))  # attribute types and ranges, first
        ctx = NodeContext(graph, node, row, self.opset, self.options, conversion=self)
        ctx.name = self._ir_name(label)
        emitted_before = len(graph.nodes)
        handler_for(row)(ctx)
        if graph.quantization.raw:  # ONNX reads these quantized tensors as integers (ir.quantized)
            guard_raw_reads(graph, graph.nodes[emitted_before:])
        if METADATA_PARAMS in metadata:
            restore_exact_params(graph.nodes[emitted_before:], metadata[METADATA_PARAMS], metadata.get(METADATA_OP))
        unused = sorted(set(ctx.attrs) - ctx.used_attrs - set(row.attrs))
        if unused:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"attribute(s) {unused} are not supported")

    # -- subgraphs -----------------------------------------------------------------------------------------------
    def inline(self, body: onnx.GraphProto, bindings: Mapping[str, str], where: str,
               use_shapes: bool = True) -> list[str | None]:
        """Convert ``body`` in place: its inputs are ``bindings`` (input name -> IR tensor), its nodes are converted
        into this graph under the prefix ``where``; returns the IR tensors of its outputs (None for an output that
        could not be converted). ``use_shapes``: trust shape inference's shapes inside the body (not for loop
        bodies, whose loop-carried shapes may change from one iteration to the next)."""
        prefix = SEPARATOR.join([*self.scope, where])
        copy = renamed_copy(body, prefix)
        graph = self.graph
        for formal, original in zip(copy.input, body.input):
            if original.name not in bindings:
                raise ConversionIssue(INVALID_MODEL, f"{where}: subgraph input {original.name!r} is not bound")
            source = graph.resolve(bindings[original.name])
            if source not in graph.values:  # (its own declaration failed, and was reported)
                raise ConversionIssue(INVALID_MODEL, f"{where}: subgraph input {original.name!r} is bound to "
                                                     f"{bindings[original.name]!r}, which is not known")
            value = graph.values[source]
            if value.data is not None:
                graph.add_value(Value(formal.name, value.dtype, value.shape, value.data, value.quant))
            else:
                graph.aliases[formal.name] = source
            if bindings[original.name] in self.failed:
                self.failed[formal.name] = self.failed[bindings[original.name]]
        for tensor in copy.initializer:
            array = numpy_helper.to_array(tensor)
            try:
                from_numpy(array.dtype)
            except ValueError as exc:
                raise ConversionIssue(UNSUPPORTED_DTYPE, f"{where}: initializer {tensor.name!r}: {exc}") from None
            graph.add_value(Value(tensor.name, array.dtype, tuple(array.shape),
                                  np.ascontiguousarray(array).reshape(array.shape)))  # (keeps 0-d)
        self.scope.append(where)
        try:
            self.convert_nodes(copy.node, value_infos(copy), use_shapes)
        finally:
            self.scope.pop()
        results: list[str | None] = []
        for output in copy.output:
            name = graph.resolve(output.name)
            results.append(None if name not in graph.values or output.name in self.failed else name)
        return results

    def shape_values(self) -> ShapeValues:
        """Symbolic reading of shape tensors computed at run time (see symbolic.py)."""
        return ShapeValues(self.graph, self.producers, self.symbols)

    def fix_hint(self, tensors, needs_value: bool = True, axes: tuple[int, ...] | None = None) -> str:
        """What the user can pin or bind so that ``tensors`` become constants (or static; ``axes``: only those dims
        of the one tensor)."""
        return fix_hint(needs_value, tensors, self.producers, self.inputs,
                        self._dim_symbols(tensors, needs_value, axes))

    def _dim_symbols(self, tensors, needs_value: bool, axes: tuple[int, ...] | None = None) -> set[str]:
        """The names of the dynamic dims ``tensors`` read: in their symbolic values (a shape computed at run
        time), or of their own unknown dims (``axes``: of those dims only)."""
        reader = self.shape_values()
        found: set[str] = set()
        for tensor in tensors:
            if needs_value:
                found |= {e for e in reader.value(tensor) or () if isinstance(e, str)}
            else:
                dims = reader.dims(tensor) or ()
                found |= {e for i, e in enumerate(dims) if isinstance(e, str) and (axes is None or i in axes)}
        return found
