"""Every ONNX node's attributes checked against its schema before a converter reads them -- one place for all ops.

Two layers, both run by :func:`check_node` before a converter sees the node:

1. **The schema** (``onnx.defs``, the operator's version at the model's opset): each attribute is defined for the op
   at that opset, appears once, has the schema's type (an ``INTS`` where an ``INT`` belongs is an error, not a
   crash), is not a function-attribute reference, and decodes (strings must be UTF-8); required attributes are
   present; tensor attributes have an element type numpy knows and as many values as their dims say.
2. **Value constraints the schema does not express** (``CONSTRAINTS`` below, a declarative table): window sizes,
   strides and dilations >= 1, pads >= 0, dims-like values that fit in 31 bits, LRN ``size`` >= 1, ``perm`` a
   permutation of the input's rank, ``axis``/``axes`` inside the rank of the input they index (when it is known).

A problem is a :class:`~nnrt_onnx.ir.issues.ConversionIssue` with reason ``invalid_model`` naming the attribute, so
the importer reports it for that node and goes on with the next; converters can then take attribute types and
ranges for granted.
"""
from __future__ import annotations

import re
from functools import cache
from typing import Callable, Iterable

import numpy as np
import onnx
from onnx import AttributeProto, defs, helper

from ..ir.issues import INVALID_MODEL, ConversionIssue
from .weights import external_problem

__all__ = ["CONSTRAINTS", "check_node", "check_tensor_proto"]

_TYPE_NAMES = {value: name for name, value in AttributeProto.AttributeType.items()}
_DIM_LIMIT = (1 << 31) - 1  # dims-like attribute values must fit NNRt's int32 parameters (and numpy arithmetic)
_MAX_TENSOR_DIMS = 1 << 10

RankOf = Callable[[int], "int | None"]  # the rank of the node's input at a position (None: unknown or absent)


def _type_name(code: int) -> str:
    return _TYPE_NAMES.get(code, f"type {code}")


# -- value constraints -------------------------------------------------------------------------------------------------
# Each rule is a function (node, attribute name, value, rank_of) -> an error message or None; CONSTRAINTS maps an
# op type to {attribute name: rule}. The schema check has run first, so a value already has the schema's type.

def _positive(node, name, value, rank_of):
    values = value if isinstance(value, list) else [value]
    bad = [v for v in values if v < 1]
    if bad:
        return f"{name}={value} must be >= 1"
    return _dims_sized(node, name, value, rank_of)


def _non_negative(node, name, value, rank_of):
    values = value if isinstance(value, list) else [value]
    if any(v < 0 for v in values):
        return f"{name}={value} must be >= 0"
    return _dims_sized(node, name, value, rank_of)


def _dims_sized(node, name, value, rank_of):
    values = value if isinstance(value, list) else [value]
    if any(abs(v) > _DIM_LIMIT for v in values):
        return f"{name}={value} holds a value beyond {_DIM_LIMIT}"
    return None


def _in_range(value: int, rank: int, name: str, shown) -> str | None:
    if not -rank <= value < rank:
        return f"{name}={shown} is out of range for rank {rank - 0} (valid: {-rank}..{rank - 1})"
    return None


def _axis(position: int = 0, extra: int = 0):
    """``axis`` indexes input ``position`` (``extra``: the output has that many more dims, e.g. OneHot)."""
    def rule(node, name, value, rank_of):
        rank = rank_of(position)
        if rank is None:
            return None if abs(value) <= _DIM_LIMIT else f"{name}={value} is out of range"
        return _in_range(value, rank + extra, name, value)
    return rule


def _flatten_axis(node, name, value, rank_of):
    rank = rank_of(0)
    if rank is not None and not -rank <= value <= rank:
        return f"{name}={value} is out of range for rank {rank} (valid: {-rank}..{rank})"
    return None


def _axes(position: int = 0, grows: bool = False):
    """``axes`` index input ``position`` (``grows``: Unsqueeze, the output rank is the input's plus len(axes))."""
    def rule(node, name, value, rank_of):
        rank = rank_of(position)
        if rank is not None:
            rank = rank + len(value) if grows else rank
            for v in value:
                problem = _in_range(v, max(rank, 1) if not grows else rank, name, value)
                if problem:
                    return problem
            normalized = [v + rank if v < 0 else v for v in value]
            if len(set(normalized)) != len(normalized):
                return f"{name}={value} repeats an axis"
        elif any(abs(v) > _DIM_LIMIT for v in value):
            return f"{name}={value} is out of range"
        return None
    return rule


def _perm(node, name, value, rank_of):
    rank = rank_of(0)
    if sorted(value) != list(range(len(value))):
        return f"{name}={value} is not a permutation of 0..{len(value) - 1}"
    if rank is not None and len(value) != rank:
        return f"{name}={value} has {len(value)} entries, the input has rank {rank}"
    return None


def _one_per_output(node, name, value, rank_of):
    outputs = len(node.output)
    if value != outputs:
        return f"{name}={value} but the node has {outputs} output(s)"
    return None


def _batch_dims(node, name, value, rank_of):
    """GatherND/ScatterND-like ``batch_dims``: 0 <= b < the rank of both operands (when known)."""
    if value < 0:
        return f"{name}={value} must be >= 0"
    ranks = [r for r in (rank_of(0), rank_of(1)) if r is not None]
    if value > _DIM_LIMIT or (ranks and value >= min(ranks)):
        return f"{name}={value} must be less than the operands' ranks {ranks}"
    return None


def _batch_time_axis(node, name, value, rank_of):
    if value not in (0, 1):
        return f"{name}={value} must be 0 or 1"
    return None


_EINSUM_EQUATION = re.compile(r"[A-Za-z.,\s]*(->[A-Za-z.\s]*)?")


def _einsum_equation(node, name, value, rank_of):
    """Letters, ',', '...' and one '->' (onnx's own shape inference never returns on some other equations)."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if not _EINSUM_EQUATION.fullmatch(text):
        return f"{name}={text!r} is not an einsum equation (letters, ',', '...' and one '->')"
    return None


_WINDOW = {"kernel_shape": _positive, "strides": _positive, "dilations": _positive, "pads": _non_negative,
           "output_shape": _positive, "output_padding": _non_negative}
_SPATIAL_OPS = ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "LpPool",
                "MaxUnpool", "DeformConv", "Col2Im", "MaxRoiPool")
_AXIS_OPS = ("Softmax", "LogSoftmax", "Hardmax", "Concat", "Gather", "GatherElements", "Scatter", "ScatterElements",
             "Split", "ArgMax", "ArgMin", "LpNormalization", "TopK", "LayerNormalization", "Compress", "Unique",
             "RMSNormalization", "CumSum")
_AXES_OPS = ("ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2",
             "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "Squeeze", "MeanVarianceNormalization", "Slice")

CONSTRAINTS: dict[str, dict[str, Callable]] = {
    **{op: dict(_WINDOW, group=_positive) for op in _SPATIAL_OPS},
    **{op: {"axis": _axis()} for op in _AXIS_OPS},
    **{op: {"axes": _axes()} for op in _AXES_OPS},
    "Flatten": {"axis": _flatten_axis},
    "OneHot": {"axis": _axis(0, extra=1)},
    "Unsqueeze": {"axes": _axes(grows=True)},
    "Transpose": {"perm": _perm},
    "LRN": {"size": _positive},
    "SpaceToDepth": {"blocksize": _positive},
    "DepthToSpace": {"blocksize": _positive},
    "Split": {"axis": _axis(), "num_outputs": _one_per_output, "split": _non_negative},
    "RNN": {"hidden_size": _positive},
    "GRU": {"hidden_size": _positive},
    "LSTM": {"hidden_size": _positive},
    "ReverseSequence": {"batch_axis": _batch_time_axis, "time_axis": _batch_time_axis},
    "GatherND": {"batch_dims": _batch_dims},
    "GroupNormalization": {"num_groups": _positive},
    "Upsample": {},
    "Einsum": {"equation": _einsum_equation},
}



def _one_value(node):
    """Constant holds exactly one of its value attributes (onnx's own shape inference crashes on none)."""
    if len(node.attribute) != 1:
        return f"a Constant needs exactly one value attribute, the node has {len(node.attribute)}"
    return None


# Rules over a node's attributes together: op -> (node) -> an error message or None
NODE_RULES: dict[str, Callable] = {"Constant": _one_value}

# -- tensor attributes (and initializers) ------------------------------------------------------------------------------

_TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def check_tensor_proto(tensor: onnx.TensorProto, what: str) -> str | None:
    """Why ``tensor`` cannot be read as an array (None: it can): element type, dims, value count vs dims.

    Checked before numpy_helper.to_array, so a hostile tensor (dims far beyond its data, an unknown type) is a
    clear problem rather than an exception or a huge allocation."""
    if len(tensor.dims) > _MAX_TENSOR_DIMS:
        return f"{what} has {len(tensor.dims)} dims"
    if any(d < 0 for d in tensor.dims):
        return f"{what} has negative dims {list(tensor.dims)[:8]}"
    if tensor.data_location == onnx.TensorProto.EXTERNAL and not tensor.HasField("raw_data"):
        return external_problem(tensor, what)
    try:
        field = helper.tensor_dtype_to_field(tensor.data_type)
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type))
    except (KeyError, TypeError, ValueError):
        return f"{what} has element type {tensor.data_type}, which is not an ONNX tensor type"
    count = 1
    for d in tensor.dims:
        count *= int(d)
    others = [f for f in _TYPED_FIELDS if f != field and len(getattr(tensor, f))]
    if others:
        return f"{what} of element type {tensor.data_type} holds values in {others[0]} (expected {field})"
    if tensor.HasField("raw_data"):
        if tensor.data_type == onnx.TensorProto.STRING:
            return f"{what} is a string tensor with raw data"
        sub_byte = tensor.data_type in _SUB_BYTE_TYPES
        needed = (count + 1) // 2 if sub_byte else count * dtype.itemsize
        if len(tensor.raw_data) != needed:
            return f"{what} holds {len(tensor.raw_data)} bytes of raw data, {list(tensor.dims)} needs {needed}"
        if len(getattr(tensor, field)):
            return f"{what} holds both raw data and {field}"
        return None
    held = len(getattr(tensor, field))
    if tensor.data_type in (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128):
        if held % 2:
            return f"{what} holds an odd number of complex parts"
        held //= 2
    if tensor.data_type in _SUB_BYTE_TYPES:  # two values per int32 entry
        if not 2 * held - 1 <= count <= 2 * held:
            return f"{what} holds {held} packed entries, {list(tensor.dims)} needs {(count + 1) // 2}"
        return None
    if held != count:
        return f"{what} holds {held} values, {list(tensor.dims)} needs {count}"
    return None


_SUB_BYTE_TYPES = {getattr(onnx.TensorProto, n) for n in ("INT4", "UINT4", "FLOAT4E2M1")
                   if hasattr(onnx.TensorProto, n)}


# -- the check ---------------------------------------------------------------------------------------------------------

@cache
def _schema_attributes(op_type: str, opset: int, domain: str):
    """({attribute: type code}, required attribute names, (min, max) inputs, positions of required single inputs,
    (min, max) outputs) of the op's schema at ``opset``; None: no schema."""
    try:
        schema = defs.get_schema(op_type, opset, domain)
    except Exception:  # SchemaError: no such op (at this opset); the importer reports the op itself
        return None
    types = {name: int(declared.type) for name, declared in schema.attributes.items()}
    single = defs.OpSchema.FormalParameterOption.Single
    required_inputs = tuple(i for i, formal in enumerate(schema.inputs) if formal.option == single)
    return (types, tuple(name for name, declared in schema.attributes.items() if declared.required),
            (schema.min_input, schema.max_input), required_inputs, (schema.min_output, schema.max_output))


def _arity(node: onnx.NodeProto, schema, opset: int) -> str | None:
    """Input and output counts against the schema, and required inputs that are given as "" (missing)."""
    (low, high), required, (out_low, out_high) = schema[2], schema[3], schema[4]
    given = len(node.input)
    if not low <= given <= high:
        return f"{node.op_type} (opset {opset}) takes {low}..{high} inputs, the node has {given}"
    missing = [i for i in required if i < given and not node.input[i]]
    if missing:
        return f"{node.op_type} (opset {opset}) needs input #{missing[0]}, the node leaves it empty"
    if not out_low <= len(node.output) <= out_high:
        return f"{node.op_type} (opset {opset}) has {out_low}..{out_high} outputs, the node has {len(node.output)}"
    return None


@cache
def _attribute_types() -> dict[tuple[str, str], dict[str, int]]:
    """(op type, domain) -> {attribute: its type in the newest version that has it}, over every opset."""
    found: dict[tuple[str, str], dict[str, int]] = {}
    for schema in sorted(defs.get_all_schemas_with_history(), key=lambda s: -s.since_version):
        entry = found.setdefault((schema.name, schema.domain), {})
        for name, declared in schema.attributes.items():
            entry.setdefault(name, int(declared.type))
    return found


def _types_in_any_version(op_type: str, domain: str) -> dict[str, int]:
    return _attribute_types().get((op_type, domain), {})


def _value(attribute: AttributeProto):
    """The attribute's value (lists as lists); strings stay bytes (decoded by the check)."""
    value = helper.get_attribute_value(attribute)
    return list(value) if isinstance(value, (list, tuple)) or type(value).__name__.startswith("Repeated") else value


def check_node(node: onnx.NodeProto, opset: int, rank_of: RankOf | None = None) -> None:
    """Raise ConversionIssue(invalid_model) for the first attribute of ``node`` that its schema (at ``opset``) or
    CONSTRAINTS rejects. ``rank_of(position)`` gives the rank of an input when known (for axis/perm checks)."""
    for problem in problems(node, opset, rank_of):
        raise ConversionIssue(INVALID_MODEL, problem)


def problems(node: onnx.NodeProto, opset: int, rank_of: RankOf | None = None) -> Iterable[str]:
    rank_of = rank_of or (lambda position: None)
    domain = "" if node.domain == "ai.onnx" else node.domain  # onnx.defs knows the default domain only as ""
    schema = _schema_attributes(node.op_type, opset, domain)
    seen: set[str] = set()
    values = {}
    for attribute in node.attribute:
        name = attribute.name
        if name in seen:
            yield f"attribute {name!r} appears more than once"
            return
        seen.add(name)
        if attribute.ref_attr_name:
            yield f"attribute {name!r} refers to a function attribute ({attribute.ref_attr_name!r}) outside a function"
            return
        declared = schema[0].get(name) if schema is not None else None
        # (not an attribute at this opset: the importer reports it as unsupported once converted, unless its type
        # is not even the one it has at another opset -- converters may read it there)
        expected = declared if declared is not None else _types_in_any_version(node.op_type, domain).get(name)
        if expected is not None:
            if attribute.type != expected:
                yield (f"attribute {name!r} of {node.op_type} must be {_type_name(expected)} (opset {opset}), "
                       f"got {_type_name(attribute.type) if attribute.type else 'no type'}")
                return
        if attribute.type == AttributeProto.UNDEFINED:
            yield f"attribute {name!r} has no type"
            return
        try:
            value = _value(attribute)
        except Exception as exc:  # a type code helper does not know
            yield f"attribute {name!r} cannot be read: {exc}"
            return
        problem = _decodes(name, attribute, value)
        if problem:
            yield problem
            return
        values[name] = value
    if schema is not None:
        missing = [name for name in schema[1] if name not in seen]
        if missing:
            yield f"{node.op_type} (opset {opset}) needs attribute(s) {missing}"
            return
        problem = _arity(node, schema, opset)
        if problem:
            yield problem
            return
    node_rule = NODE_RULES.get(node.op_type)
    problem = node_rule(node) if node_rule is not None else None
    if problem:
        yield f"{problem} ({node.op_type})"
        return
    for name, rule in CONSTRAINTS.get(node.op_type, {}).items():
        if name in values:
            try:
                problem = rule(node, name, values[name], rank_of)
            except TypeError:  # (a type no schema version gives it: an op unknown at this opset, say)
                problem = f"attribute {name!r} has the wrong type ({type(values[name]).__name__})"
            if problem:
                yield f"{problem} ({node.op_type})"
                return
    if isinstance(rank_of, Operands):
        for problem in rank_of.problems():
            yield problem
            return


def _decodes(name: str, attribute: AttributeProto, value) -> str | None:
    if attribute.type == AttributeProto.STRING:
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return f"attribute {name!r} is not a UTF-8 string ({value[:16]!r})"
    elif attribute.type == AttributeProto.STRINGS:
        for item in value:
            try:
                item.decode("utf-8")
            except UnicodeDecodeError:
                return f"attribute {name!r} holds a string that is not UTF-8 ({item[:16]!r})"
    elif attribute.type == AttributeProto.TENSOR:
        return check_tensor_proto(attribute.t, f"tensor attribute {name!r}")
    elif attribute.type == AttributeProto.TENSORS:
        for i, tensor in enumerate(attribute.tensors):
            problem = check_tensor_proto(tensor, f"tensor #{i} of attribute {name!r}")
            if problem:
                return problem
    elif attribute.type == AttributeProto.SPARSE_TENSOR:
        sparse = attribute.sparse_tensor
        for part, tensor in (("values", sparse.values), ("indices", sparse.indices)):
            problem = check_tensor_proto(tensor, f"sparse attribute {name!r} {part}")
            if problem:
                return problem
        if any(d < 0 for d in sparse.dims) or len(sparse.dims) > _MAX_TENSOR_DIMS:
            return f"sparse attribute {name!r} has dims {list(sparse.dims)[:8]}"
    return None


# Input ranks the operators need (the schema's type constraints do not say): op -> {input position: (min, max)}.
INPUT_RANKS: dict[str, dict[int, tuple[int, int | None]]] = {
    **{op: {0: (3, None)} for op in ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool",
                                      "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "LRN",
                                      "InstanceNormalization", "MaxUnpool", "GroupNormalization")},
    **{op: {0: (4, 4)} for op in ("DepthToSpace", "SpaceToDepth")},
    "BatchNormalization": {0: (2, None)},
    "Conv": {0: (3, None), 1: (3, None)},
    "ConvTranspose": {0: (3, None), 1: (3, None)},
    "ConvInteger": {0: (3, None), 1: (3, None)},
    "QLinearConv": {0: (3, None), 3: (3, None)},
    "MatMulInteger": {0: (1, None), 1: (1, None)},
    "QLinearMatMul": {0: (1, None), 3: (1, None)},
    "Gemm": {0: (2, 2), 1: (2, 2)},
    "MatMul": {0: (1, None), 1: (1, None)},
    "LpNormalization": {0: (1, None)},
    **{op: {0: (3, 3), 1: (3, 3), 2: (3, 3), 3: (2, 2), 5: (3, 3), 6: (3, 3)} for op in ("RNN", "GRU", "LSTM")},
}


class Operands:
    """What check_node may know of a node's operands in the importer's graph: their ranks (``operands(position)``,
    the RankOf protocol) and static shapes, for the rank table and NNRt's size limit."""

    def __init__(self, graph, node: onnx.NodeProto):
        self.graph, self.node = graph, node

    def value(self, name: str):
        if not name:
            return None
        return self.graph.values.get(self.graph.resolve(name))

    def __call__(self, position: int) -> int | None:
        if position >= len(self.node.input):
            return None
        value = self.value(self.node.input[position])
        return None if value is None or value.shape is None else len(value.shape)

    def problems(self) -> Iterable[str]:
        from ..ir.budget import format_bytes
        from ..tensor import UINT32_MAX

        for kind, names in (("input", self.node.input), ("output", self.node.output)):
            for position, name in enumerate(names):
                value = self.value(name)
                if value is None or value.shape is None or any(d < 0 for d in value.shape):
                    continue
                size = np.dtype(value.dtype).itemsize
                for d in value.shape:
                    size *= int(d)
                if size > UINT32_MAX or any(d > UINT32_MAX for d in value.shape):
                    yield (f"{kind} #{position} {name!r} of shape {list(value.shape)[:8]} would take "
                           f"{format_bytes(size)}: over NNRt's 4 GiB tensor limit")
                    return
        for position, (low, high) in INPUT_RANKS.get(self.node.op_type, {}).items():
            rank = self(position)
            if rank is not None and (rank < low or (high is not None and rank > high)):
                wanted = f"rank {low}" if low == high else f"rank >= {low}" if high is None else f"rank {low}..{high}"
                yield (f"{self.node.op_type} needs input #{position} of {wanted}, "
                       f"{self.node.input[position]!r} has rank {rank}")
                return


def input_ranks(graph, node: onnx.NodeProto) -> Operands:
    """``rank_of`` for ``node`` from the importer's graph (the values its inputs have at this point); check_node
    also checks the operands' ranks and sizes through it."""
    return Operands(graph, node)
