"""Quantized tensors in the importer's IR, before and after the folding pass (``ir.passes.qdq``).

* **Integer forms of dequantized constants.** An ONNX DequantizeLinear of a constant is folded into a float constant
  (so every converter can read the weights), and that float :class:`~nnrt_onnx.ir.graph.Value` keeps the integers it
  came from (``Value.integer``: the data and its quant params, per tensor or per channel along an axis). Converters
  that lay weights out for NNRt (OIHW -> OHWI, B -> B^T ...) do it through :func:`derive`, and constant folding of a
  data-movement op carries the integers along (:func:`carry_through`), so the pass finds the integers of the exact
  tensor a quantized op needs, with the channel axis followed through the move.
* **Transparent ops**: ops that only move (or select by a monotone rule, as max pooling does) elements. Such an op
  applied to a quantized tensor gives the quantized result with the same parameters, exactly, whatever the
  quantization: :data:`TRANSPARENT`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..enums import OH_NN_OperationType as OP
from ..tensor import QuantParam
from .graph import Graph, IntegerForm, Node, Value
from .mapped import drop_pages

# ops whose result on a quantized tensor is the quantized result with the input's parameters, exactly: they move or
# select elements (max / min by a monotone order), never combine them
TRANSPARENT = frozenset({
    OP.OH_NN_OPS_RESHAPE, OP.OH_NN_OPS_TRANSPOSE, OP.OH_NN_OPS_SQUEEZE, OP.OH_NN_OPS_UNSQUEEZE,
    OP.OH_NN_OPS_EXPAND_DIMS, OP.OH_NN_OPS_FLATTEN, OP.OH_NN_OPS_SLICE, OP.OH_NN_OPS_STRIDED_SLICE,
    OP.OH_NN_OPS_GATHER, OP.OH_NN_OPS_GATHER_ND, OP.OH_NN_OPS_SPLIT, OP.OH_NN_OPS_TILE, OP.OH_NN_OPS_BROADCAST_TO,
    OP.OH_NN_OPS_DEPTH_TO_SPACE, OP.OH_NN_OPS_SPACE_TO_DEPTH, OP.OH_NN_OPS_BATCH_TO_SPACE_ND,
    OP.OH_NN_OPS_SPACE_TO_BATCH_ND, OP.OH_NN_OPS_MAX_POOL, OP.OH_NN_OPS_REDUCE_MAX, OP.OH_NN_OPS_REDUCE_MIN,
    OP.OH_NN_OPS_CONCAT,
})
# ops that read a quantized tensor only through the order of its values and write no quantized result: per tensor
# (one positive scale) the integers give what the real values give, so they read the integers (no raw view, no DQ)
ORDER_READERS = frozenset({OP.OH_NN_OPS_ARG_MAX})
# the transparent ops that move elements without comparing them (constant folding carries integers through these)
MOVES = TRANSPARENT - {OP.OH_NN_OPS_MAX_POOL, OP.OH_NN_OPS_REDUCE_MAX, OP.OH_NN_OPS_REDUCE_MIN, OP.OH_NN_OPS_CONCAT}


def same_quant(a: QuantParam | None, b: QuantParam | None, rtol: float = 0.0) -> bool:
    """Equal parameters (scales within ``rtol``; per-channel ones along the same axis)."""
    if a is None or b is None:
        return a is b
    if a.count != b.count or list(a.zero_points) != list(b.zero_points) or list(a.num_bits) != list(b.num_bits):
        return False
    if a.count > 1 and a.axis != b.axis:
        return False
    return bool(np.allclose(a.scales, b.scales, rtol=rtol, atol=0.0))


def per_tensor(quant: QuantParam | None) -> bool:
    return quant is not None and quant.count == 1


def _index_array(shape: tuple[int, ...], axis: int, count: int) -> np.ndarray:
    line = [1] * len(shape)
    line[axis] = count
    return np.ascontiguousarray(np.broadcast_to(np.arange(count, dtype=np.int64).reshape(line), shape))


def carry(integer: IntegerForm, transform: Callable[[np.ndarray], np.ndarray]) -> IntegerForm | None:
    """The integer form after ``transform`` (a pure data movement applied to the data and to an index array alike);
    None when per-channel parameters no longer run along one axis."""
    data = np.ascontiguousarray(np.asarray(transform(integer.data)))
    quant = integer.quant
    if quant.count == 1:
        return IntegerForm(data, QuantParam(quant.scales, quant.zero_points, quant.num_bits), integer.restored)
    axis = quant.axis if quant.axis is not None else 0
    index = np.asarray(transform(_index_array(integer.data.shape, axis % integer.data.ndim, quant.count)))
    if index.shape != data.shape:
        return None
    if index.size and np.all(index == index.reshape(-1)[0]):
        i = int(index.reshape(-1)[0])
        return IntegerForm(data, QuantParam([quant.scales[i]], [quant.zero_points[i]], [quant.num_bits[i]]),
                           integer.restored)
    for new_axis in range(index.ndim):
        line = index[tuple(slice(None) if a == new_axis else slice(0, 1) for a in range(index.ndim))]
        if np.array_equal(index, np.broadcast_to(line, index.shape)):
            picks = [int(i) for i in line.reshape(-1)]
            return IntegerForm(data, QuantParam([quant.scales[i] for i in picks], [quant.zero_points[i] for i in picks],
                                                [quant.num_bits[i] for i in picks], new_axis), integer.restored)
    return None


def derive(graph: Graph, source: str, transform: Callable[[np.ndarray], np.ndarray], hint: str) -> str:
    """A new constant ``transform(source)`` (a data movement: transpose, reshape, slicing); when ``source`` is a
    dequantized constant, the new one keeps its integers, moved alike (:func:`carry`)."""
    value = graph.values[source]
    name = graph.constant(np.ascontiguousarray(transform(value.data)), hint)
    drop_pages(value.data)  # (read from the model file: its pages need not stay in memory)
    if value.integer is not None:
        graph.values[name].integer = carry(value.integer, transform)
    if value.quant is not None:  # a quantized integer constant keeps its params, moved alike
        moved = carry(IntegerForm(value.data, value.quant), transform)
        graph.values[name].quant = None if moved is None else moved.quant
    return name


def carry_through(node: Node, inputs: list[Value], outputs: list[Value], run: Callable[[list[np.ndarray]],
                  list[np.ndarray]]) -> None:
    """Constant folding of a data movement (``node``, evaluated by ``run(arrays) -> results``) whose first input is a
    dequantized constant: the outputs keep the moved integers."""
    if node.op not in MOVES or not inputs or inputs[0].integer is None or len(outputs) != 1:
        return
    others = [v.data for v in inputs[1:]]
    outputs[0].integer = carry(inputs[0].integer, lambda array: run([array, *others])[0])


def propagate(graph: Graph, node: Node) -> None:
    """A transparent op reading a quantized tensor writes a quantized tensor of the same dtype with the same
    (per-tensor) parameters, and one the ONNX graph reads as raw integers when its input was."""
    if node.op not in TRANSPARENT or not node.inputs:
        return
    data_inputs = node.inputs if node.op == OP.OH_NN_OPS_CONCAT else node.inputs[:1]
    values = [graph.values.get(n) for n in data_inputs]
    if any(v is None or v.data is not None or not per_tensor(v.quant) for v in values):
        return
    first = values[0]
    if any(not same_quant(v.quant, first.quant) or v.dtype != first.dtype for v in values[1:]):
        return
    raw = any(n in graph.quantization.raw for n in data_inputs)
    for name in node.outputs:
        out = graph.values.get(name)
        if out is None or out.data is not None or out.quant is not None:
            continue
        out.dtype = first.dtype  # (a move keeps the dtype; ONNX inference knows none after a contrib op)
        out.quant = QuantParam(first.quant.scales, first.quant.zero_points, first.quant.num_bits)
        if raw:
            graph.quantization.raw.add(name)


def _emit(graph: Graph, op: OP, inputs: list[str], dtype, shape, hint: str, params=None, origin: str = "") -> tuple[Node, str]:
    name = graph.fresh_name(hint)
    graph.add_value(Value(name, np.dtype(dtype), shape))
    return Node(op, inputs, [name], params or {}, origin), name


def quant_param_constant(graph: Graph, quant, values, rank: int, dtype, name: str) -> str:
    """A constant of a tensor's scales or zero points shaped to broadcast against it: a scalar per tensor, a
    [1, ..., count, ..., 1] line along the quantization axis per channel."""
    array = np.asarray(values, np.float64).astype(dtype)
    if quant.count > 1:
        line = [1] * rank
        line[(quant.axis or 0) % rank] = quant.count
        array = array.reshape(line)
    else:
        array = array.reshape(())
    return graph.constant(array, name)


def raw_view(graph: Graph, name: str, origin: str = "") -> tuple[list[Node], str]:
    """The integers of the quantized tensor ``name`` as a plain tensor (no quant params): QUANT_DTYPE_CAST to
    float32 (exact: (q - z) * s), DIV s, ADD z, ROUND, CAST back (exact: q within float32 rounding). The nodes to
    insert and the plain tensor."""
    from ..dtypes import from_numpy
    from ..optable import param_array

    value = graph.values[name]
    quant = value.quant
    shape = value.shape
    rank = len(shape or ())
    f32 = np.dtype(np.float32)

    def parameter(values, hint):
        return quant_param_constant(graph, quant, values, rank, f32, f"{name}.{hint}")

    from ..enums import OH_NN_TensorType as TT

    params = {TT.OH_NN_QUANT_DTYPE_CAST_SRC_T: param_array(TT.OH_NN_QUANT_DTYPE_CAST_SRC_T, int(from_numpy(value.dtype))),
              TT.OH_NN_QUANT_DTYPE_CAST_DST_T: param_array(TT.OH_NN_QUANT_DTYPE_CAST_DST_T, int(from_numpy(f32)))}
    if quant.count > 1:
        params[TT.OH_NN_QUANT_DTYPE_CAST_AXIS] = param_array(TT.OH_NN_QUANT_DTYPE_CAST_AXIS, (quant.axis or 0) % rank)
    nodes = []
    node, real = _emit(graph, OP.OH_NN_OPS_QUANT_DTYPE_CAST, [name], f32, shape, f"{name}.real", params, origin)
    nodes.append(node)
    node, scaled = _emit(graph, OP.OH_NN_OPS_DIV, [real, parameter(quant.scales, "scale")], f32, shape,
                         f"{name}.over_scale", origin=origin)
    nodes.append(node)
    node, shifted = _emit(graph, OP.OH_NN_OPS_ADD, [scaled, parameter(quant.zero_points, "zero_point")], f32, shape,
                          f"{name}.plus_zero_point", origin=origin)
    nodes.append(node)
    node, rounded = _emit(graph, OP.OH_NN_OPS_ROUND, [shifted], f32, shape, f"{name}.integers", origin=origin)
    nodes.append(node)
    code = graph.constant(np.asarray(int(from_numpy(value.dtype)), np.int32), f"{name}.to")
    node, plain = _emit(graph, OP.OH_NN_OPS_CAST, [rounded, code], value.dtype, shape, f"{name}.raw", origin=origin)
    nodes.append(node)
    return nodes, plain


def guard_raw_reads(graph: Graph, nodes: list[Node]) -> None:
    """The nodes one ONNX node became may read a tensor the ONNX graph sees as raw integers (a QuantizeLinear or
    QOperator output, which carries quant params here): the native engine would dequantize it for any op but
    QUANT_DTYPE_CAST and the transparent ones (which keep it quantized). Such a node reads :func:`raw_view` of it."""
    raw = graph.quantization.raw
    views: dict[str, str] = {}
    for node in nodes:
        if node.op == OP.OH_NN_OPS_QUANT_DTYPE_CAST or node not in graph.nodes:
            continue
        if node.op in TRANSPARENT and all(graph.values[o].quant is not None for o in node.outputs):
            continue
        if node.op in ORDER_READERS and per_tensor(graph.values[node.inputs[0]].quant):
            continue
        for position, name in enumerate(node.inputs):
            value = graph.values.get(name)
            if name not in raw or value is None or value.quant is None:
                continue
            if name not in views:
                inserted, views[name] = raw_view(graph, name, node.origin)
                at = graph.nodes.index(node)
                graph.nodes[at:at] = inserted
            node.inputs[position] = views[name]


__all__ = ["MOVES", "ORDER_READERS", "TRANSPARENT", "carry", "carry_through", "derive", "guard_raw_reads", "per_tensor",
           "propagate",
           "raw_view", "same_quant"]
