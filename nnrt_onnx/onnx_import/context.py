"""What a handler sees while converting one ONNX node: its inputs, attributes, and ways to emit NNRt ops."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import onnx
from onnx import helper

from ..enums import OH_NN_OperationType, OH_NN_TensorType
from ..ir.fold import fold_within_budget
from ..ir.graph import Graph, Node, Value
from ..ir.issues import DYNAMIC_SHAPE, NEEDS_CONSTANT, UNSUPPORTED_ATTRIBUTE, ConversionIssue
from ..ir.quantized import propagate
from ..ir.rows import Row
from ..ir.shapes import refine_output_shapes
from ..optable import op_spec, param_array


class NodeContext:
    def __init__(self, graph: Graph, node: onnx.NodeProto, row: Row, opset: int, options, conversion=None):
        self.graph = graph
        self.conversion = conversion  # the GraphConversion converting this node (subgraphs inline through it)
        self.node = node
        self.row = row
        self.opset = opset
        self.options = options
        self.attrs: dict[str, Any] = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        for key, value in list(self.attrs.items()):
            if isinstance(value, bytes):
                self.attrs[key] = value.decode()
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                self.attrs[key] = [v.decode() for v in value]
        self.used_attrs: set[str] = set()
        self.label = node.name or (node.output[0] if node.output else node.op_type)  # the node's own name
        self.name = self.label  # what the IR nodes it emits carry as their origin (scoped inside subgraphs)

    # -- reading the ONNX node -------------------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        self.used_attrs.add(name)
        return self.attrs.get(name, default)

    def has_input(self, position: int) -> bool:
        return position < len(self.node.input) and self.node.input[position] != ""

    def input(self, position: int) -> str:
        if not self.has_input(position):
            raise ConversionIssue("invalid_model", f"input #{position} is missing")
        return self.graph.resolve(self.node.input[position])

    def output(self, position: int = 0) -> str:
        return self.node.output[position]

    def value(self, name: str) -> Value:
        try:
            return self.graph.values[name]
        except KeyError:
            raise ConversionIssue("invalid_model", f"tensor {name!r} is not known at this point") from None

    def input_value(self, position: int) -> Value:
        return self.value(self.input(position))

    def constant_input(self, position: int, what: str) -> np.ndarray:
        value = self.input_value(position)
        if value.data is None:
            raise ConversionIssue(NEEDS_CONSTANT, f"{what} (input #{position} {value.name!r}) must be a constant",
                                  tensor=value.name)
        return value.data

    def optional_constant(self, position: int, what: str) -> np.ndarray | None:
        return self.constant_input(position, what) if self.has_input(position) else None

    def static_shape(self, name: str, what: str = "tensor") -> tuple[int, ...]:
        shape = self.value(name).shape
        if shape is None or any(d < 0 for d in shape):
            raise ConversionIssue(DYNAMIC_SHAPE, f"{what} {name!r} needs a static shape, got {shape}")
        return shape

    def rank(self, name: str) -> int:
        shape = self.value(name).shape
        if shape is None:
            raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of {name!r} is unknown")
        return len(shape)

    def require_attr(self, name: str, allowed: Sequence[Any], default: Any) -> Any:
        value = self.attr(name, default)
        if value not in allowed:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"{name}={value!r} is not supported (supported: {list(allowed)})")
        return value

    # -- building the NNRt graph -----------------------------------------------------------------------------
    def new_value(self, dtype, shape: Sequence[int] | None, hint: str | None = None) -> str:
        name = self.graph.fresh_name(hint or self.name)
        self.graph.add_value(Value(name, np.dtype(dtype), None if shape is None else tuple(shape)))
        return name

    def constant(self, array, hint: str | None = None) -> str:
        return self.graph.constant(np.asarray(array), hint or f"{self.name}.const")

    def emit(self, op: OH_NN_OperationType, inputs: Sequence[str], outputs: Sequence[str],
             params: dict[Any, Any] | None = None) -> Node:
        converted = {}
        for key, value in (params or {}).items():
            tensor_type = OH_NN_TensorType[key] if isinstance(key, str) else OH_NN_TensorType(key)
            converted[tensor_type] = param_array(tensor_type, value)
        node = Node(op, list(inputs), list(outputs), converted, origin=self.name)
        op_spec(op)  # unknown ops fail loudly here
        self._refuse_empty_reads(inputs)
        propagate(self.graph, node)  # a transparent op on a quantized tensor writes one (ir.quantized)
        refine_output_shapes(self.graph, node)  # the kernel's shape rule: what ONNX inference left unknown
        if not fold_within_budget(self.graph, node):
            self.graph.nodes.append(node)
        return node

    def _refuse_empty_reads(self, inputs: Sequence[str]) -> None:
        """An operation may not read a tensor empty at every size of its dynamic dims (``_common._empty_result``'s
        placeholder, e.g. the empty last piece of an uneven Split of a dynamic batch): NNRt has no empty tensors,
        and folding it at one size of those dims would make constants of that size. (A consumer that drops empty
        inputs, as Concat, emits nothing that reads it.)"""
        for name in inputs:
            value = self.graph.values.get(self.graph.resolve(name)) if name else None
            if value is not None and value.data is not None and value.shape and any(d < 0 for d in value.shape):
                dims = ["?" if d < 0 else d for d in value.shape]
                raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"{name!r} is empty at every size (shape {dims}): NNRt "
                                                             f"tensors cannot have a 0 dim", tensor=name)

    def settle(self, name: str, shape, dtype=None, force: bool = False) -> None:
        """Fill in what ONNX shape inference left unknown about a tensor from what the handler computed
        (``force``: replace the inferred shape, for the few ops ONNX infers wrongly)."""
        value = self.value(name)
        if value.data is not None:
            return
        if dtype is not None:
            value.dtype = np.dtype(dtype)
        if shape is None:
            return
        shape = tuple(int(d) for d in shape)
        if force or value.shape is None:
            value.shape = shape
        elif len(value.shape) == len(shape):
            value.shape = tuple(v if v >= 0 else s for v, s in zip(value.shape, shape))

    def override_shape(self, name: str, shape, inference_differs: bool = False) -> None:
        """Give ``name`` (an output of this node) the shape the kernels' rule computes where ONNX shape inference
        says otherwise (pooling with ceil_mode); the inferred shapes computed from it are then not trusted -- also
        when ``name`` had no inferred shape of its own (a graph output's is never trusted) but the converter knows
        that inference gets it wrong (``inference_differs``): its readers' inferred shapes came from that."""
        value = self.value(name)
        shape = tuple(int(d) for d in shape)
        differs = inference_differs or (value.shape is not None and len(value.shape) == len(shape) and
                                        any(a >= 0 and a != b for a, b in zip(value.shape, shape)))
        if differs and self.conversion is not None:
            self.conversion.distrusted.add(name)
        if value.data is None:
            value.shape = shape

    def emit_to(self, op: OH_NN_OperationType, inputs: Sequence[str], dtype, shape, hint: str, params=None,
                output: str | None = None) -> str:
        """Emit ``op`` writing ``output`` (settled to dtype/shape) or a new tensor; returns what it wrote."""
        if output is not None:
            self.settle(output, shape, dtype)
        out = output or self.new_value(dtype, shape, hint)
        self.emit(op, list(inputs), [out], params)
        return out

    def transpose(self, name: str, perm: Sequence[int], output: str | None = None) -> str:
        """Emit TRANSPOSE(name, perm); returns the output name (a new value unless ``output`` is given)."""
        value = self.value(name)
        shape = None if value.shape is None else tuple(value.shape[p] for p in perm)
        out = output or self.new_value(value.dtype, shape, f"{name}.T")
        perm_name = self.constant(np.asarray(perm, np.int64), f"{name}.perm")
        self.emit(OH_NN_OperationType.OH_NN_OPS_TRANSPOSE, [name, perm_name], [out])
        return out

    def reshape(self, name: str, shape: Sequence[int], output: str | None = None) -> str:
        value = self.value(name)
        out = output or self.new_value(value.dtype, shape, f"{name}.reshaped")
        shape_name = self.constant(np.asarray(shape, np.int64), f"{name}.shape")
        self.emit(OH_NN_OperationType.OH_NN_OPS_RESHAPE, [name, shape_name], [out])
        return out

    def deviation(self, rule: str, detail: str) -> None:
        """Record that this node is converted by ``rule`` (ir.deviations.RULES), which onnx.reference reads
        otherwise (``detail``: this node's case)."""
        from ..ir.deviations import RULES, Deviation

        assert rule in RULES, rule
        self.graph.deviations.append(Deviation(rule, self.label, self.node.op_type, detail))

    # -- subgraphs ---------------------------------------------------------------------------------------------
    def subgraph(self, name: str) -> onnx.GraphProto:
        self.used_attrs.add(name)
        for attribute in self.node.attribute:
            if attribute.name == name and attribute.type == onnx.AttributeProto.GRAPH:
                return attribute.g
        raise ConversionIssue("invalid_model", f"{self.node.op_type} has no graph attribute {name!r}")

    def inline(self, body: onnx.GraphProto, bindings: dict[str, str], where: str,
               use_shapes: bool = True) -> list[str | None]:
        """Convert the subgraph ``body`` here (its inputs bound to IR tensors); the IR tensors of its outputs."""
        if self.conversion is None:
            raise ConversionIssue("unsupported_op", f"{self.node.op_type}: subgraphs are converted by the importer only")
        return self.conversion.inline(body, bindings, f"{self.label}.{where}", use_shapes)

    def shape_values(self):
        """The symbolic reader of run-time shape tensors (onnx_import/symbolic.py), or None outside an import."""
        return self.conversion.shape_values() if self.conversion is not None else None

    def fix_hint(self, tensors: Sequence[str], needs_value: bool = True) -> str:
        """What the user can pin (--input-shape) or bind (--constant-input) so that ``tensors`` become known."""
        return self.conversion.fix_hint(list(tensors), needs_value) if self.conversion is not None else ""

    def adopt(self, source: str, output: str) -> None:
        """``output`` (an ONNX name) means ``source``; when ``source`` is a name private to an inlined subgraph
        (``::`` in it) written by an op, that op writes ``output`` instead, so the model keeps the ONNX names."""
        source = self.graph.resolve(source)
        value = self.value(source)
        writer = next((n for n in reversed(self.graph.nodes) if source in n.outputs), None)
        if "::" not in source or value.data is not None or writer is None or output in self.graph.aliases:
            self.alias(source, output)
            return
        graph = self.graph
        for node in graph.nodes:
            node.inputs = [output if n == source else n for n in node.inputs]
            node.outputs = [output if n == source else n for n in node.outputs]
        graph.outputs = [output if n == source else n for n in graph.outputs]
        graph.values[output] = Value(output, value.dtype, value.shape, None, value.quant)
        del graph.values[source]
        graph.aliases = {k: (output if v == source else v) for k, v in graph.aliases.items()}
        graph.aliases[source] = output

    def alias(self, source: str, output: str) -> None:
        """Make ``output`` (an ONNX tensor name) mean the same tensor as ``source`` (no op emitted)."""
        value = self.value(source)
        if value.data is not None:
            self.graph.add_value(Value(output, value.dtype, value.shape, value.data, value.quant))
            return
        self.graph.aliases[output] = source
