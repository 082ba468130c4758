"""The importer's mutable graph of NNRt operations, before it becomes an (append-only, validated) Model."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import from_numpy
from ..enums import OH_NN_OperationType, OH_NN_TensorType
from ..model import ModelTensor
from ..optable import op_spec
from ..tensor import QuantParam
from ..validation import decode_param


@dataclass(eq=False)
class Value:
    """A tensor of the graph: dtype, shape (-1 = unknown), constant data or None, quant params; a float constant
    that an ONNX DequantizeLinear made from integers keeps them (``integer``), so a quantized op can read them."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...] | None  # None: rank unknown
    data: np.ndarray | None = None
    quant: QuantParam | None = None
    integer: IntegerForm | None = None  # float constant == dequantize(integer.data, integer.quant)

    @property
    def is_constant(self) -> bool:
        return self.data is not None


@dataclass(eq=False)
class IntegerForm:
    """The integers a dequantized float constant came from: ``data`` (int8/uint8/int32 ...) with ``quant`` (per
    tensor, or per channel along ``quant.axis`` of ``data``). See ``ir.quantized``."""

    data: np.ndarray
    quant: QuantParam
    restored: str = ""  # an exported NNRt constant: "quantized" (it had these params), "bias" (an INT32 bias, none)


@dataclass
class QuantizationState:
    """What the importer knows about quantization beyond the tensors' quant params (``ir.quantized``,
    ``ir.passes.qdq``): the outputs of ONNX QuantizeLinear nodes that round ONNX's way (round(x / s) + z, odd zero
    points: they are lowered to exact arithmetic when no quantized op reads them), the tensors an ONNX graph reads as
    raw integers (QOperator outputs), what the folding pass found (quantized ops, float fallbacks per op type,
    the form chosen for dynamic quantization), and the Q / DQ standing for an exported model's quantized tensors
    (``restored``: ``ir.passes.qdq.absorb_restored`` makes the ops read and write those tensors again)."""

    onnx_rounding: set[str] = field(default_factory=set)
    raw: set[str] = field(default_factory=set)
    fallbacks: Counter = field(default_factory=Counter)
    notes: dict[str, Any] = field(default_factory=dict)
    restored: set[str] = field(default_factory=set)  # outputs of the Q / DQ of an exported NNRt model's tensors

    def copy(self) -> QuantizationState:
        return QuantizationState(set(self.onnx_rounding), set(self.raw), Counter(self.fallbacks), dict(self.notes),
                                 set(self.restored))


@dataclass(eq=False)  # identity semantics: nodes are compared and hashed as objects
class Node:
    op: OH_NN_OperationType
    inputs: list[str]
    outputs: list[str]
    params: dict[OH_NN_TensorType, np.ndarray] = field(default_factory=dict)
    origin: str = ""  # the ONNX node it came from (for error messages and per-layer mapping)
    layout: str = ""  # "NCHW" when the exporter wraps this NHWC op in transposes to emit the ONNX (NCHW) form

    def param_tensor(self, tensor_type: OH_NN_TensorType) -> ModelTensor:
        array = self.params[tensor_type]
        return ModelTensor(from_numpy(array.dtype), tuple(array.shape), tensor_type, data=array)

    def values(self) -> dict[str, Any]:
        """Parameter values by kernel keyword, decoded and checked exactly like AddOperation does."""
        entry = op_spec(self.op)
        values: dict[str, Any] = {}
        for tensor_type in self.params:
            spec = entry.params[tensor_type]
            keyword, value = decode_param(entry, spec, self.param_tensor(tensor_type))
            values[keyword] = list(values[keyword]) + list(value) if spec.append and keyword in values else value
        return values

    def kernel_arguments(self) -> dict[str, Any]:
        return {**op_spec(self.op).defaults, **self.values()}


class Graph:
    def __init__(self):
        self.values: dict[str, Value] = {}
        self.nodes: list[Node] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.aliases: dict[str, str] = {}  # ONNX no-op outputs (Identity, Dropout) -> the tensor they repeat
        # a tensor removed by the layout pass -> (the tensor it was a transpose of, that permutation)
        self.provenance: dict[str, tuple[str, tuple[int, ...]]] = {}
        self.quantization = QuantizationState()
        # a Node.origin -> (ONNX op type, domain, opset) of the node it came from (for problems found later)
        self.origins: dict[str, tuple[str, str, int]] = {}
        self.tensor_origins: dict[str, str] = {}  # an ONNX tensor -> the origin of the node that wrote it
        self.deviations: list = []  # ir.deviations.Deviation: nodes converted by a rule onnx.reference reads otherwise
        self._counter = 0

    def resolve(self, name: str) -> str:
        while name in self.aliases:
            name = self.aliases[name]
        return name

    def add_value(self, value: Value) -> Value:
        self.values[value.name] = value
        return value

    def fresh_name(self, hint: str) -> str:
        while True:
            self._counter += 1
            name = f"{hint}__{self._counter}"
            if name not in self.values:
                return name

    def constant(self, array: np.ndarray, hint: str = "const") -> str:
        array = np.ascontiguousarray(array).reshape(np.shape(array))  # (ascontiguousarray makes a 0-d array 1-d)
        name = self.fresh_name(hint)
        self.add_value(Value(name, array.dtype, tuple(array.shape), array))
        return name

    def clone(self) -> Graph:
        """A copy whose structure can change independently (values and constant arrays are shared, not copied)."""
        other = Graph()
        other.values = dict(self.values)
        other.nodes = [Node(n.op, list(n.inputs), list(n.outputs), dict(n.params), n.origin, n.layout)
                       for n in self.nodes]
        other.inputs, other.outputs = list(self.inputs), list(self.outputs)
        other.aliases = dict(self.aliases)
        other.provenance = dict(self.provenance)
        other.quantization = self.quantization.copy()
        other.origins = dict(self.origins)
        other.tensor_origins = dict(self.tensor_origins)
        other.deviations = list(self.deviations)
        other._counter = self._counter
        return other

    def locate(self, name: str) -> tuple[str, tuple[int, ...] | None] | None:
        """Where an (ONNX) tensor lives after conversion: (graph tensor, permutation) such that the original is
        ``transpose(graph_tensor, permutation)`` (None: no permutation); None when it no longer exists."""
        name = self.resolve(name)
        perm: tuple[int, ...] | None = None
        seen = set()
        while name in self.provenance and name not in seen:
            seen.add(name)
            source, p = self.provenance[name]
            perm = tuple(p) if perm is None else tuple(p[i] for i in perm)
            name = source
        if name not in self.values:
            return None
        if perm is not None and perm == tuple(range(len(perm))):
            perm = None
        return name, perm

    def consumers(self) -> dict[str, list[Node]]:
        users: dict[str, list[Node]] = {}
        for node in self.nodes:
            for name in node.inputs:
                users.setdefault(name, []).append(node)
        return users

    def producers(self) -> dict[str, Node]:
        return {name: node for node in self.nodes for name in node.outputs}

    def remove_unused(self) -> None:
        """Drop nodes whose outputs nobody needs, then values nobody references."""
        needed = set(self.outputs)
        kept: list[Node] = []
        for node in reversed(self.nodes):
            if any(o in needed for o in node.outputs):
                kept.append(node)
                needed.update(node.inputs)
        self.nodes = kept[::-1]
        referenced = needed | set(self.inputs) | {o for n in self.nodes for o in n.outputs}
        self.values = {k: v for k, v in self.values.items() if k in referenced}

    def rename_uses(self, old: str, new: str) -> None:
        """Make every consumer (and the graph outputs) read ``new`` instead of ``old``."""
        for node in self.nodes:
            if old in node.inputs:  # (the membership test is a C loop: most nodes do not read it)
                node.inputs = [new if n == old else n for n in node.inputs]
        self.outputs = [new if n == old else n for n in self.outputs]
