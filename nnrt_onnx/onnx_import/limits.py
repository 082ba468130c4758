"""The importer's memory bounds on the ONNX side (the budget itself: ``nnrt_onnx.ir.budget``).

* :func:`infer_shapes` -- ONNX shape inference with data propagation, bounded. Data propagation costs about 150
  bytes per element of every 1-D tensor an op with a data-propagation function (Add, Cast, Concat, Gather, Mul,
  Shape, Size, Slice, Squeeze, Sub, Unsqueeze) touches, so a 100-byte model with ``Add(x, ConstantOfShape([2**29]))``
  takes tens of GB. Shapes are first inferred without it (cheap), then data is propagated only through the nodes
  whose 1-D operands are known to be short (shape vectors are): the others are hidden from the second pass, which
  keeps what the first pass found for them.
* :func:`reference_output_bytes` -- the size of what folding an all-constant ONNX node would produce, from its
  output shapes inferred from the constant values (never from what the model declares), before evaluating it.
* :func:`require_shape` / :func:`admit_shape` -- a converter's constant, counted against the budget before it is
  built (ConstantOfShape, Range, EyeLike, masks, index tables ...).
"""
from __future__ import annotations

from functools import cache
from typing import Mapping, Sequence

import numpy as np
import onnx
from onnx import defs, helper

from ..ir import budget
from ..ir.issues import INVALID_MODEL, TOO_LARGE, ConversionIssue

__all__ = ["infer_shapes", "reference_output_bytes", "require_shape", "admit_shape", "check_dims"]

MAX_PROPAGATED_LENGTH = 4096  # longest 1-D operand a data-propagating node may have (shape vectors are rank-long)
MAX_PROPAGATED_TOTAL = 1 << 20  # elements data propagation may touch over the whole model (~150 MB)
_HIDDEN_DOMAIN = "nnrt_onnx.no_data_propagation"
_INLINE_CONSTANT_ELEMENTS = 1 << 16
_UINT32_MAX = (1 << 32) - 1  # constants up to this size are given to the one-node inference as values
_MAX_ELEMENTS = 1 << 58  # no array holds more (numpy: its byte size, up to 16 bytes an element, fits an intp)


@cache
def _data_propagating_ops() -> frozenset[str]:
    return frozenset(s.name for s in defs.get_all_schemas_with_history()
                     if s.domain in ("", "ai.onnx") and s.has_data_propagation_function)


def _types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    graph = model.graph
    found = {t.name: helper.make_tensor_type_proto(t.data_type, list(t.dims)) for t in graph.initializer}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        if info.type.HasField("tensor_type"):
            found[info.name] = info.type
    return found


def _rank1_length(type_proto: onnx.TypeProto | None) -> int | None:
    """0 for a tensor data propagation does not expand (rank 0 or >= 2), its length for a 1-D one, None when it
    may be a long 1-D tensor (unknown rank or length)."""
    if type_proto is None or not type_proto.tensor_type.HasField("shape"):
        return None
    dims = type_proto.tensor_type.shape.dim
    if len(dims) != 1:
        return 0
    return dims[0].dim_value if dims[0].HasField("dim_value") else None


def _widest_dim(type_proto: onnx.TypeProto | None) -> int:
    """The largest static dim of a tensor type (0 when none is known)."""
    if type_proto is None or not type_proto.tensor_type.HasField("shape"):
        return 0
    return max((d.dim_value for d in type_proto.tensor_type.shape.dim if d.HasField("dim_value")), default=0)


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """``onnx.shape_inference.infer_shapes(model, data_prop=True)`` with the cost of data propagation bounded;
    the model itself when inference fails (missing shapes are then reported per node)."""
    original = model
    invalid = _invalid_nodes(model)  # hidden from both passes: onnx's C++ inference may abort on them
    if invalid:
        model = _hidden(model, invalid)
    try:
        first = onnx.shape_inference.infer_shapes(model, data_prop=False)
    except Exception:  # partial information is still useful; missing shapes surface per node
        return _restored(model, invalid, original) if invalid else model
    propagating = _data_propagating_ops()
    types = _types(first)
    hidden: list[int] = list(invalid)
    skipped = set(invalid)
    total = 0
    for index, node in enumerate(first.graph.node):
        if index in skipped:
            continue
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            # a body sees slices and states of the node's inputs as its own 1-D inputs: data propagation in it
            # would expand those (a Scan state of 2**40 elements, cast in the body: terabytes)
            if any(_widest_dim(types.get(name)) > MAX_PROPAGATED_LENGTH for name in node.input if name):
                hidden.append(index)
            continue
        if node.domain not in ("", "ai.onnx") or node.op_type not in propagating:
            continue
        lengths = [_rank1_length(types.get(name)) for name in list(node.input) + list(node.output) if name]
        if any(n is None or n > MAX_PROPAGATED_LENGTH for n in lengths) or total + sum(lengths) > MAX_PROPAGATED_TOTAL:
            hidden.append(index)
        else:
            total += sum(lengths)
    source = _hidden(first, hidden) if hidden else first
    try:
        second = onnx.shape_inference.infer_shapes(source, data_prop=True)
    except Exception:
        second = source
    return _restored(second, hidden, original) if hidden else second


_ONNX_ML_DOMAINS = ("ai.onnx.ml", "ai.onnx.preview.training")  # known to onnx's inference, never converted here


def _typed(model: onnx.ModelProto) -> set[str]:
    """Tensors with an element type before inference: graph inputs, initializers, declared value_info/outputs."""
    graph = model.graph
    typed = {t.name for t in graph.initializer}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type:
            typed.add(info.name)
    return typed


def _invalid_nodes(model: onnx.ModelProto) -> list[int]:
    """Nodes ONNX's shape inference is not shown, for the C++ library aborts or crashes on some of them (Split
    with num_outputs != its outputs aborts; a required input left "", or an untyped input of RegexFullMatch or
    LabelEncoder, crashes). Hidden, with every node downstream of one (the model fails to convert regardless):

    * default-domain nodes whose attributes or arity the importer rejects (attributes.py), or that it has no
      mapping row for (unsupported_op anyway), or with an input nothing gives a type to;
    * nodes of the ONNX-ML domains, which the importer does not convert."""
    from ..ir.rows import find_row
    from .attributes import problems

    opset = next((e.version for e in model.opset_import if e.domain in ("", "ai.onnx")), 1)
    typed = _typed(model)
    declared = _types(model)

    def ranks(node):  # the ranks the model declares for a node's inputs (attribute rules that need them)
        def rank_of(position: int) -> int | None:
            if position >= len(node.input) or node.input[position] not in declared:
                return None
            type_proto = declared[node.input[position]]
            return len(type_proto.tensor_type.shape.dim) if type_proto.tensor_type.HasField("shape") else None
        return rank_of

    tainted: set[str] = set()
    found = []
    for index, node in enumerate(model.graph.node):
        inputs = [name for name in node.input if name]
        bad = node.domain in _ONNX_ML_DOMAINS or any(name in tainted for name in inputs)
        if not bad and node.domain in ("", "ai.onnx"):
            bad = (any(name not in typed for name in inputs) or find_row(node.op_type, opset) is None
                   or next(iter(problems(node, opset, ranks(node))), None) is not None)
        outputs = [name for name in node.output if name]
        if bad:
            found.append(index)
            tainted.update(outputs)
        else:
            typed.update(outputs)  # (foreign domains: assumed typed, their types come from elsewhere if at all)
    return found


def _hidden(model: onnx.ModelProto, indices) -> onnx.ModelProto:
    """A copy of ``model`` whose nodes at ``indices`` are in a domain shape inference does not know."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for index in indices:
        copy.graph.node[index].domain = _HIDDEN_DOMAIN
    if not any(entry.domain == _HIDDEN_DOMAIN for entry in copy.opset_import):
        copy.opset_import.append(helper.make_opsetid(_HIDDEN_DOMAIN, 1))
    return copy


def _restored(model: onnx.ModelProto, indices, original: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with the domains of the nodes at ``indices`` (and the opset imports) of ``original``."""
    for index in indices:
        model.graph.node[index].domain = original.graph.node[index].domain
    del model.opset_import[:]
    model.opset_import.extend(original.opset_import)
    return model


# -- folding a node with the ONNX reference evaluator ------------------------------------------------------------------

def _bound_without_shapes(node: onnx.NodeProto, values: Mapping[str, np.ndarray]) -> int | None:
    """An upper bound of the output bytes of ops whose output shape depends on values (None: no bound known)."""
    first = values.get(node.input[0]) if node.input else None
    if first is None:
        return None
    if node.op_type == "NonZero":
        return max(first.ndim, 1) * first.size * 8
    if node.op_type == "Compress":
        return first.nbytes
    if node.op_type == "Unique":
        return first.nbytes + 3 * first.size * 8
    return None


# Ops whose outputs are at most (product + sum of their inputs' sizes + a rank's worth) elements, whatever the input
# values: element-wise and broadcasting ops, reshapes, transposes, gathers, slices, concatenations, shapes.
_SIZE_BOUNDED_BY_INPUTS = frozenset("""
    Abs Acos Acosh Add And Asin Asinh Atan Atanh BitwiseAnd BitwiseNot BitwiseOr BitwiseXor Cast CastLike Ceil Clip
    Concat Cos Cosh Div Equal Erf Exp Flatten Floor Gather GatherElements GatherND Greater GreaterOrEqual Identity
    IsInf IsNaN Less LessOrEqual Log Max Mean Min Mod Mul Neg Not Or Pow Reciprocal ReduceMax ReduceMean ReduceMin
    ReduceProd ReduceSum Relu Reshape Round Shape Sigmoid Sign Sin Sinh Size Slice Sqrt Squeeze Sub Sum Tan Tanh
    Transpose Unsqueeze Where Xor ArgMax ArgMin Softmax""".split())
_QUICK_ELEMENTS = 4096


def _quick_bound(node: onnx.NodeProto, values: Mapping[str, np.ndarray]) -> int | None:
    """Bytes the outputs of a small node of _SIZE_BOUNDED_BY_INPUTS take at most (None: not such a node)."""
    if node.op_type not in _SIZE_BOUNDED_BY_INPUTS or node.domain not in ("", "ai.onnx"):
        return None
    sizes = [int(array.size) for array in values.values()]
    product = 1
    for size in sizes:
        product *= max(size, 1)
        if product > _QUICK_ELEMENTS:
            return None
    return (product + sum(sizes) + 64) * 8 * max(len(node.output), 1)


def schema_accepts(node: onnx.NodeProto, values: Mapping[str, np.ndarray], opset: int) -> bool:
    """Whether the element types of ``values`` (by input name) are ones the node's schema allows, each type
    variable bound to one type: the reference implementation trusts them (GatherElements with float indices runs
    for minutes)."""
    try:
        schema = defs.get_schema(node.op_type, opset, node.domain)
    except Exception:
        return False
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    bound: dict[str, str] = {}
    for position, name in enumerate(node.input):
        if not name or name not in values:
            continue
        if not schema.inputs:
            return False
        formal = schema.inputs[min(position, len(schema.inputs) - 1)]
        try:
            element = helper.tensor_dtype_to_string(helper.np_dtype_to_tensor_dtype(values[name].dtype))
        except (KeyError, TypeError, ValueError):
            return False
        actual = f"tensor({element.rsplit('.', 1)[-1].lower()})"  # TensorProto.FLOAT -> tensor(float)
        if formal.type_str in allowed:
            if actual not in allowed[formal.type_str] or bound.setdefault(formal.type_str, actual) != actual:
                return False
        elif formal.type_str != actual:
            return False
    return True


def reference_output_bytes(node: onnx.NodeProto, values: Mapping[str, np.ndarray], opset: int) -> int | None:
    """Bytes the outputs of ``node`` take when evaluated on the constant ``values`` (by input name), computed by
    ONNX shape inference from those values (small ones given as initializers, the rest as typed inputs); None when
    the outputs' shapes cannot be known before evaluating (the caller then does not fold). Small nodes of ops whose
    output size is bounded by their inputs' get that bound without an inference."""
    if node.op_type in ("If", "Loop", "Scan", "SequenceMap"):
        return None  # a body the reference would run: its cost is not bounded by shapes
    quick = _quick_bound(node, values)
    if quick is not None:
        return quick
    initializers, inputs = [], []
    for name, array in values.items():
        try:
            elem_type = helper.np_dtype_to_tensor_dtype(array.dtype)
        except (KeyError, TypeError, ValueError):
            return None
        if array.size <= _INLINE_CONSTANT_ELEMENTS:
            initializers.append(onnx.numpy_helper.from_array(array, name))
        inputs.append(helper.make_tensor_value_info(name, elem_type, list(array.shape)))
    outputs = [name for name in node.output if name]
    graph = helper.make_graph([node], "size", inputs, [helper.make_value_info(n, onnx.TypeProto()) for n in outputs],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:
        return None
    found = {info.name: info.type for info in list(inferred.graph.output) + list(inferred.graph.value_info)}
    total = 0
    for name in outputs:
        type_proto = found.get(name)
        if type_proto is None or not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
            return _bound_without_shapes(node, values)
        dims = type_proto.tensor_type.shape.dim
        if not all(d.HasField("dim_value") for d in dims):
            return _bound_without_shapes(node, values)
        if any(d.dim_value < 0 for d in dims):
            return None  # (an inconsistent node: converted normally, which reports it)
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(type_proto.tensor_type.elem_type)).itemsize
        except (KeyError, TypeError, ValueError):
            itemsize = 8
        total += budget.nbytes([d.dim_value for d in dims], np.uint8) * max(itemsize, 1)
    return total


# -- converters' constants ---------------------------------------------------------------------------------------------

def check_dims(dims: Sequence[int], what: str) -> list[int]:
    """``dims`` as ints, each 0..2**32-1 (NNRt's limit; an invalid model otherwise)."""
    dims = [int(d) for d in dims]
    if any(d < 0 for d in dims):
        raise ConversionIssue(INVALID_MODEL, f"{what}: shape {dims[:8]} has a negative dim")
    if any(d > _UINT32_MAX for d in dims):
        raise ConversionIssue(INVALID_MODEL, f"{what}: shape {dims[:8]} has a dim beyond NNRt's limit of 2**32-1")
    nonzero = 1
    for d in dims:
        nonzero *= max(d, 1)
    if nonzero > _MAX_ELEMENTS:  # (numpy refuses such a shape even when another dim is 0)
        raise ConversionIssue(TOO_LARGE, f"{what}: shape {dims[:8]} is beyond any array's size")
    return dims


def require_shape(shape: Sequence[int], dtype, what: str) -> None:
    """Count a constant of ``shape`` and ``dtype`` against the import's budget (too_large when it does not fit)."""
    budget.current().require_shape(shape, dtype, what)


def admit_shape(shape: Sequence[int], dtype, what: str) -> bool:
    """Count a constant of ``shape`` and ``dtype`` if it fits the budget; whether it did (negative dims: invalid)."""
    dims = check_dims(shape, what)
    return budget.current().admit(budget.nbytes(dims, dtype))


def check_constant_of_shape(shape_value, fill: np.ndarray) -> None:
    """ConstantOfShape's shape input (integers, 1-D, >= 0 when known) and value (one element)."""
    if fill.size != 1:
        raise ConversionIssue(INVALID_MODEL, f"ConstantOfShape's value must hold one element, it holds {fill.size}")
    from ..dtypes import from_numpy
    from ..ir.issues import UNSUPPORTED_DTYPE

    try:
        from_numpy(fill.dtype)
    except ValueError as exc:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"ConstantOfShape's value: {exc}") from None
    if np.dtype(shape_value.dtype).kind not in "iu":
        raise ConversionIssue(INVALID_MODEL, f"ConstantOfShape's shape must be int64, got "
                                             f"{np.dtype(shape_value.dtype)}")
    if shape_value.shape is not None and len(shape_value.shape) > 1:
        raise ConversionIssue(INVALID_MODEL, f"ConstantOfShape's shape must be 1-D, it has shape "
                                             f"{list(shape_value.shape)}")
    if shape_value.data is not None:
        check_dims(shape_value.data.reshape(-1), "ConstantOfShape")


def range_length(start, limit, delta) -> int:
    """Number of elements of Range(start, limit, delta), computed exactly (non-finite values: invalid model)."""
    values = [np.asarray(v).item() for v in (start, limit, delta)]
    if any(isinstance(v, float) and not np.isfinite(v) for v in values):
        raise ConversionIssue(INVALID_MODEL, f"Range start/limit/delta {values} must be finite")
    start, limit, delta = values
    if delta == 0:
        raise ConversionIssue(INVALID_MODEL, "Range delta must not be 0")
    if all(isinstance(v, (int, bool)) for v in values):
        return max(-((start - limit) // delta), 0)
    try:
        return max(int(np.ceil((limit - start) / delta)), 0)
    except (OverflowError, ValueError):
        raise ConversionIssue(INVALID_MODEL, f"Range {values} has no finite length") from None


def check_reshape(in_shape, requested, target) -> None:
    """A Reshape's target: integers >= -1, one -1 at most, and the input's element count when both are known."""
    requested = [int(d) for d in requested]
    if any(d < -1 for d in requested) or requested.count(-1) > 1:
        raise ConversionIssue(INVALID_MODEL, f"Reshape target {requested} must hold dims >= 0 and at most one -1")
    if in_shape is None or any(d < 0 for d in in_shape):
        return
    have = int(np.prod([int(d) for d in in_shape], dtype=object)) if in_shape else 1
    if any(d < 0 for d in target):
        known = int(np.prod([int(d) for d in target if d >= 0], dtype=object)) if target else 1
        if known == 0 or have % known:
            raise ConversionIssue(INVALID_MODEL, f"cannot reshape {list(in_shape)} ({_count(have)} elements) to "
                                  f"{requested[:8]}")
        return
    want = int(np.prod([int(d) for d in target], dtype=object)) if target else 1
    if want != have:
        raise ConversionIssue(INVALID_MODEL, f"cannot reshape {list(in_shape)} ({_count(have)} elements) to "
                              f"{list(target)[:8]} ({_count(want)} elements)")


def _count(n: int) -> str:
    """An element count as text (Python refuses to print an int of more than 4300 digits)."""
    return str(n) if n < 10**30 else "more than 10**30"


def check_indices(indices: np.ndarray, dims, what: str) -> None:
    """Constant index tuples (the last axis: one index per leading dim of ``dims``) within -dim..dim-1 (an invalid
    model otherwise)."""
    indices = np.asarray(indices)
    k = indices.shape[-1] if indices.ndim else 0
    if k > len(dims):
        raise ConversionIssue(INVALID_MODEL, f"{what} index {k} dims of a rank-{len(dims)} tensor")
    flat = indices.reshape(-1, k) if k else indices.reshape(-1, 0)
    for axis in range(k):
        column, dim = flat[:, axis], int(dims[axis])
        if column.size and (column.min() < -dim or column.max() >= dim):
            raise ConversionIssue(INVALID_MODEL, f"{what} hold {int(column.min())}..{int(column.max())} for a dim "
                                                 f"of {dim}")
