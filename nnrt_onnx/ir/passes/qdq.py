"""QDQ folding: DequantizeLinear -> op -> QuantizeLinear groups become one NNRt operation on quantized tensors.

The importer converts an ONNX QuantizeLinear of a float tensor to a QUANT_DTYPE_CAST writing an int8/uint8 tensor
that carries the quant params (a "Q"), a DequantizeLinear of such a tensor to a QUANT_DTYPE_CAST back to float (a
"DQ"), and a DequantizeLinear of a constant to a float constant that keeps its integers (``Value.integer``); the
QOperator ops (QLinearConv, QGemm, QLinearAdd ...) become the same DQ -> float op -> Q. This pass (``fold_qdq``)
then, in order:

1. moves each DQ after the transparent ops that read it (transposes, reshapes, max pooling ...: ``ir.quantized``),
   so they move quantized integers (exactly) and the DQ reaches the op that computes;
2. folds every op whose float inputs all come from DQs or dequantized constants and whose outputs all go to one Q
   each: the op reads the quantized tensors (activations per tensor; weights per tensor or per channel along NNRt's
   output-channel axis), a convolution's or dense layer's bias becomes INT32 with scale input scale x weight scale
   (the header's rule), and the op writes the Q's tensors. A RELU / RELU6 / CLIP between the op and its Q becomes the
   op's fused activation when, quantized with the Q's parameters, the two give the same integers (and goes away,
   on any op, when the Q's own saturation already clamps the same);
   the ops folded are those whose builder marks them quantized (``quant_type_from_output0`` in the op table: the
   header's list) and the transparent ones; a CLIP(0, 6) / CLIP(0, inf) between a DQ and a Q is first renamed RELU6
   / RELU (NNRt quantizes those, not CLIP), and a quantized RELU / RELU6 with the same params in and out becomes
   the fused activation of the quantized op writing its input (torch's QDQ export: Conv -> Q -> DQ -> Clip -> Q);
3. lets an ARG_MAX reading a DQ read the integers (their order is the real values'); turns a DQ -> Q pair into
   nothing (same parameters) or one QUANT_DTYPE_CAST requantizing integer to integer;
4. counts the float fallbacks: ops left computing in float between DQs and Qs, by op type.

``exact_quantize`` (always run, also with folding off) lowers the Qs of ONNX QuantizeLinear nodes with odd zero
points that no quantized op reads: ONNX rounds x / s before adding z, QUANT_DTYPE_CAST rounds x / s + z (they
differ at exact ties), so those become DIV, ROUND, ADD, CLIP, CAST and their DQs CAST, SUB, MUL (exact).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ...dtypes import from_numpy
from ...enums import OH_NN_OperationType as OP
from ...enums import OH_NN_TensorType
from ...optable import op_spec, param_array
from ...tensor import QuantParam
from ..graph import Graph, IntegerForm, Node, Value
from ..quantized import ORDER_READERS, TRANSPARENT, per_tensor, quant_param_constant, same_quant
from .batchnorm import fold_quantized_batchnorms
from .reshape_algebra import _merge_reshapes

QDC = OP.OH_NN_OPS_QUANT_DTYPE_CAST
QUANT_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8))
WEIGHTED = {OP.OH_NN_OPS_CONV2D, OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE, OP.OH_NN_OPS_CONV2D_TRANSPOSE,
            OP.OH_NN_OPS_FULL_CONNECTION}  # input 1: weights (per channel along axis 0), input 2: the bias
ACTIVATIONS = {OP.OH_NN_OPS_RELU, OP.OH_NN_OPS_RELU6, OP.OH_NN_OPS_CLIP}
# float constant operands a quantized op keeps as floats: LAYER_NORM's gamma and beta (MindSpore Lite's int8 layer
# norm reads them as floats, dequantizing quantized ones)
# BATCH_NORM's statistics, read as floats too (its builder marks it quantized: dequantize, normalise, quantize)
FLOAT_OPERANDS = {OP.OH_NN_OPS_LAYER_NORM: (1, 2), OP.OH_NN_OPS_BATCH_NORM: (1, 2, 3, 4)}
INT32_LIMIT = 2 ** 31 - 1


# -- recognising Q and DQ ----------------------------------------------------------------------------------------------

def is_dq(graph: Graph, node: Node) -> bool:
    """A QUANT_DTYPE_CAST from a quantized int8/uint8 tensor to float."""
    if node.op != QDC:
        return False
    src, dst = graph.values[node.inputs[0]], graph.values[node.outputs[0]]
    return src.quant is not None and src.dtype in QUANT_DTYPES and dst.dtype.kind == "f" and src.data is None


def is_q(graph: Graph, node: Node) -> bool:
    """A QUANT_DTYPE_CAST from float to a quantized int8/uint8 tensor (per tensor)."""
    if node.op != QDC:
        return False
    src, dst = graph.values[node.inputs[0]], graph.values[node.outputs[0]]
    return src.dtype.kind == "f" and dst.dtype in QUANT_DTYPES and per_tensor(dst.quant)


def _fuse_of(node: Node) -> int:
    spec = op_spec(node.op)
    return int(node.values().get(spec.fuse, 0)) if spec.fuse else 0


# -- 1. DQs after the transparent ops ----------------------------------------------------------------------------------

def _sink_dequantize(graph: Graph, only: set[str] | None = None) -> int:
    moved = 0
    changed = True
    while changed:
        changed = False
        producers = graph.producers()
        for node in list(graph.nodes):
            if node.op not in TRANSPARENT or _fuse_of(node):
                continue
            data = node.inputs if node.op == OP.OH_NN_OPS_CONCAT else node.inputs[:1]
            sources = [producers.get(name) for name in data]
            if not data or any(d is None or not is_dq(graph, d) for d in sources):
                continue
            if only is not None and any(d.outputs[0] not in only for d in sources):
                continue
            quantized = [graph.values[d.inputs[0]] for d in sources]
            first = quantized[0]
            if not per_tensor(first.quant) or any(q.dtype != first.dtype or not same_quant(q.quant, first.quant)
                                                  for q in quantized[1:]):
                continue
            if any(graph.values[name].dtype.kind == "f" for name in node.inputs[len(data):]):
                continue
            outputs = [graph.values[o] for o in node.outputs]
            if any(o.dtype.kind != "f" or o.data is not None for o in outputs):
                continue
            node.inputs = [d.inputs[0] for d in sources] + node.inputs[len(data):]
            anchor = node
            new_outputs = []
            for out in outputs:
                name = graph.fresh_name(f"{out.name}.q")
                graph.add_value(Value(name, first.dtype, out.shape, None,
                                      QuantParam(first.quant.scales, first.quant.zero_points, first.quant.num_bits)))
                new_outputs.append(name)
                dq = Node(QDC, [name], [out.name], {
                    OH_NN_TensorType.OH_NN_QUANT_DTYPE_CAST_SRC_T: param_array(
                        OH_NN_TensorType.OH_NN_QUANT_DTYPE_CAST_SRC_T, int(from_numpy(first.dtype))),
                    OH_NN_TensorType.OH_NN_QUANT_DTYPE_CAST_DST_T: param_array(
                        OH_NN_TensorType.OH_NN_QUANT_DTYPE_CAST_DST_T, int(from_numpy(out.dtype)))}, node.origin)
                graph.nodes.insert(graph.nodes.index(anchor) + 1, dq)
                anchor = dq
                if any(d.outputs[0] in graph.quantization.restored for d in sources):
                    graph.quantization.restored.add(out.name)
            node.outputs = new_outputs
            moved += 1
            changed = True
            break
    return moved


def _hoist_quantize(graph: Graph, only: set[str] | None = None) -> int:
    """float -> transparent op -> Q becomes Q -> the op on the quantized tensor (the op writing the Q's tensor), so the
    op computing the float reaches its Q."""
    moved = 0
    changed = True
    while changed:
        changed = False
        producers, consumers = graph.producers(), graph.consumers()
        for q in list(graph.nodes):
            if not is_q(graph, q) or (only is not None and q.outputs[0] not in only):
                continue
            node = producers.get(q.inputs[0])
            if node is None or node.op not in TRANSPARENT or node.op == OP.OH_NN_OPS_CONCAT or _fuse_of(node):
                continue
            if len(node.outputs) != 1 or node.outputs[0] in graph.outputs or consumers.get(node.outputs[0]) != [q]:
                continue
            source = graph.values[node.inputs[0]]
            if source.dtype.kind != "f" or source.data is not None or source.name in graph.outputs:
                continue
            if any(graph.values[name].dtype.kind == "f" for name in node.inputs[1:]):
                continue
            target = graph.values[q.outputs[0]]
            name = graph.fresh_name(f"{source.name}.q")
            graph.add_value(Value(name, target.dtype, source.shape, None,
                                  QuantParam(target.quant.scales, target.quant.zero_points, target.quant.num_bits)))
            q.inputs, q.outputs = [source.name], [name]
            node.inputs[0], node.outputs = name, [target.name]
            graph.nodes.remove(q)
            graph.nodes.insert(graph.nodes.index(node), q)
            if target.name in graph.quantization.onnx_rounding:
                graph.quantization.onnx_rounding.add(name)
            if target.name in graph.quantization.restored:
                graph.quantization.restored.add(name)
            moved += 1
            changed = True
            break
    return moved


# -- 2. folding --------------------------------------------------------------------------------------------------------

def _foldable(graph: Graph, node: Node) -> bool:
    return node.op != QDC and (op_spec(node.op).quant_type_from_output0 or node.op in TRANSPARENT)


def _activation_range(graph: Graph, node: Node) -> tuple[float, float] | None:
    if node.op == OP.OH_NN_OPS_RELU:
        return 0.0, float("inf")
    if node.op == OP.OH_NN_OPS_RELU6:
        return 0.0, 6.0
    if node.op == OP.OH_NN_OPS_CLIP and len(node.inputs) == 1:
        args = node.kernel_arguments()
        return float(args["min"]), float(args["max"])
    return None


def _quantized_bound(value: float, quant: QuantParam, dtype: np.dtype) -> float:
    """Where the quantization of ``value`` lands, clamped: +-inf stay beyond the range."""
    info = np.iinfo(dtype)
    if np.isinf(value):
        return float(info.max) if value > 0 else float(info.min)
    q = np.rint(value / quant.scales[0] + quant.zero_points[0])
    return float(np.clip(q, info.min, info.max))


def _fuse_type_for(bounds: tuple[float, float], quant: QuantParam, dtype: np.dtype) -> int | None:
    """The fused activation (0 none, 1 RELU, 2 RELU6) giving, once quantized with ``quant``, the same integers as
    clipping to ``bounds``: quantization is monotone, so equal clamped images of the bounds suffice."""
    lo, hi = (_quantized_bound(b, quant, dtype) for b in bounds)
    for fuse, (flo, fhi) in ((0, (-np.inf, np.inf)), (1, (0.0, np.inf)), (2, (0.0, 6.0))):
        if (lo, hi) == (_quantized_bound(flo, quant, dtype), _quantized_bound(fhi, quant, dtype)):
            return fuse
    return None


def _integer_constant(graph: Graph, integer: IntegerForm, hint: str) -> str:
    name = graph.constant(integer.data, hint)
    q = integer.quant
    graph.values[name].quant = QuantParam(q.scales, q.zero_points, [8] * q.count, q.axis if q.count > 1 else None)
    return name


def _int32_bias(graph: Graph, bias: Value, in_scale: float, w_quant: QuantParam, channels: int) -> str | None:
    """The bias as INT32 with scale input scale x weight scale (per channel): its integers when it was dequantized
    with (about) that scale, else its real values divided by it and rounded."""
    w_scales = np.asarray(w_quant.scales, np.float64)
    scales = in_scale * (w_scales if w_scales.size > 1 else np.full(channels, w_scales[0]))
    if bias.shape is None or int(np.prod(bias.shape)) != channels:
        return None
    integer = bias.integer
    if (integer is not None and integer.data.dtype == np.int32 and all(z == 0 for z in integer.quant.zero_points)
            and np.allclose(np.broadcast_to(np.asarray(integer.quant.scales, np.float64), scales.shape), scales,
                            rtol=1e-6, atol=0)):
        data = integer.data.reshape(channels)
    else:
        q = np.rint(bias.data.astype(np.float64).reshape(channels) / scales)
        if np.any(np.abs(q) > INT32_LIMIT):
            return None
        data = q.astype(np.int32)
    return graph.constant(np.ascontiguousarray(data.astype(np.int32)), f"{bias.name}.int32")


def _operand(graph: Graph, producers, node: Node, position: int) -> tuple[str, str | None] | None:
    """(the quantized tensor to read instead, why not) for a float input: a DQ's source or a dequantized constant."""
    name = node.inputs[position]
    value = graph.values[name]
    producer = producers.get(name)
    if producer is not None and is_dq(graph, producer):
        source = graph.values[producer.inputs[0]]
        if source.quant.count > 1 and not (position == 1 and node.op == OP.OH_NN_OPS_MATMUL):
            return None
        return producer.inputs[0], None
    if value.data is not None and value.integer is not None and value.integer.data.dtype in QUANT_DTYPES:
        return _integer_constant(graph, value.integer, f"{name}.q"), None
    return None


def _weight_axis_ok(graph: Graph, node: Node, position: int, name: str) -> bool:
    quant = graph.values[name].quant
    if quant.count == 1:
        return True
    rank = len(graph.values[name].shape or ())
    axis = (quant.axis or 0) % max(rank, 1)
    if node.op in WEIGHTED and position == 1:
        return axis == 0
    if node.op == OP.OH_NN_OPS_MATMUL and position == 1:
        transpose_b = bool(node.values().get("transpose_b", False))
        return axis == (rank - 2 if transpose_b else rank - 1)
    return False


def _fold(graph: Graph, node: Node, producers, consumers) -> bool:
    if not _foldable(graph, node):
        return False
    # the outputs: each read by exactly one Q (through an activation that can become the fused one)
    targets: list[tuple[Node, Node | None]] = []
    for out in node.outputs:
        if out in graph.outputs or graph.values[out].dtype.kind != "f":
            return False
        users = consumers.get(out, [])
        if len(users) != 1:
            return False
        user, activation = users[0], None
        if _activation_range(graph, user) is not None and not _fuse_of(node) \
                and len(node.outputs) == 1 and user.outputs[0] not in graph.outputs:
            after = consumers.get(user.outputs[0], [])
            if len(after) == 1 and is_q(graph, after[0]):
                user, activation = after[0], users[0]
        if not is_q(graph, user):
            return False
        targets.append((user, activation))
    fuse = None
    if targets[0][1] is not None:
        q_out = graph.values[targets[0][0].outputs[0]]
        fuse = _fuse_type_for(_activation_range(graph, targets[0][1]), q_out.quant, q_out.dtype)
        if fuse is None or (fuse and not op_spec(node.op).fuse):  # (an op without a fused activation: only a
            return False  # clamp the Q's own saturation already makes, as onnxruntime's QOperator Clip after BN)
        if not op_spec(node.op).fuse:
            fuse = None
    # the inputs
    new_inputs = list(node.inputs)
    bias_position = 2 if node.op in WEIGHTED and len(node.inputs) > 2 else None
    for position, name in enumerate(node.inputs):
        value = graph.values[name]
        if position == bias_position or value.dtype.kind != "f":
            if value.quant is not None:
                return False
            continue
        if position in FLOAT_OPERANDS.get(node.op, ()) and value.data is not None:
            continue
        found = _operand(graph, producers, node, position)
        if found is None:
            return False
        new_inputs[position] = found[0]
        if graph.values[found[0]].quant.count > 1 and not _weight_axis_ok(graph, node, position, found[0]):
            return False
    if node.op in WEIGHTED:
        data_q, weight_q = graph.values[new_inputs[0]], graph.values[new_inputs[1]]
        if not per_tensor(data_q.quant):
            return False
        if bias_position is not None:
            bias = graph.values[node.inputs[bias_position]]
            if bias.data is None:
                return False
            channels = graph.values[new_inputs[1]].shape[0]
            int32 = _int32_bias(graph, bias, data_q.quant.scales[0], weight_q.quant, channels)
            if int32 is None:
                return False
            new_inputs[bias_position] = int32
    if node.op in TRANSPARENT and not op_spec(node.op).quant_type_from_output0:
        # quantType NONE (the builder does not mark it quantized): only exact moves, the same params in and out
        first = graph.values[new_inputs[0]].quant
        if any(not same_quant(graph.values[q.outputs[0]].quant, first) for q, _ in targets):
            return False
    # rewrite
    node.inputs = new_inputs
    node.outputs = [q.outputs[0] for q, _ in targets]
    if fuse is not None:
        spec = op_spec(node.op)
        tensor_type = next(p.tensor_type for p in spec.own_params if spec.fuse in p.keywords)
        node.params[tensor_type] = param_array(tensor_type, fuse)
    for q, activation in targets:
        graph.nodes.remove(q)
        if activation is not None:
            graph.nodes.remove(activation)
    return True


def _order_readers_read_integers(graph: Graph) -> int:
    """An ARG_MAX (``ORDER_READERS``) reading a DQ of a per-tensor quantized tensor reads the tensor itself: the
    order of the integers is the order of the real values."""
    producers = graph.producers()
    done = 0
    for node in graph.nodes:
        source = producers.get(node.inputs[0]) if node.op in ORDER_READERS and node.inputs else None
        if source is not None and is_dq(graph, source) and per_tensor(graph.values[source.inputs[0]].quant):
            node.inputs[0] = source.inputs[0]
            done += 1
    return done


def _clips_as_activations(graph: Graph) -> int:
    """A CLIP(0, 6) / CLIP(0, inf) between a DQ and a Q becomes RELU6 / RELU (the same function): NNRt's builders
    quantize those, not CLIP (torch's QDQ export writes ReLU6 as a Clip with its own Q / DQ)."""
    producers, consumers = graph.producers(), graph.consumers()
    changed = 0
    for node in graph.nodes:
        bounds = _activation_range(graph, node) if node.op == OP.OH_NN_OPS_CLIP else None
        if bounds not in ((0.0, 6.0), (0.0, float("inf"))):
            continue
        source, users = producers.get(node.inputs[0]), consumers.get(node.outputs[0], [])
        if source is None or not is_dq(graph, source) or len(users) != 1 or not is_q(graph, users[0]):
            continue
        node.op = OP.OH_NN_OPS_RELU6 if bounds[1] == 6.0 else OP.OH_NN_OPS_RELU
        node.params = {}
        changed += 1
    return changed


def _fuse_quantized_activations(graph: Graph) -> int:
    """A quantized RELU / RELU6 whose input and output have the same params, reading the only output of a quantized
    op that can fuse it, becomes that op's fused activation: quantization commutes with a clamp whose bounds
    quantize to the same integers (``_fuse_type_for``), so the integers are the same."""
    fused = 0
    changed = True
    while changed:
        changed = False
        producers, consumers = graph.producers(), graph.consumers()
        for node in graph.nodes:
            bounds = _activation_range(graph, node)
            if node.op not in (OP.OH_NN_OPS_RELU, OP.OH_NN_OPS_RELU6) or bounds is None:
                continue
            source, target = graph.values[node.inputs[0]], graph.values[node.outputs[0]]
            writer = producers.get(source.name)
            if (writer is None or source.quant is None or target.quant is None or source.dtype != target.dtype
                    or not same_quant(source.quant, target.quant) or not per_tensor(source.quant)
                    or source.name in graph.outputs or len(consumers.get(source.name, [])) != 1
                    or len(writer.outputs) != 1 or not op_spec(writer.op).fuse or _fuse_of(writer)):
                continue
            fuse = _fuse_type_for(bounds, target.quant, target.dtype)
            if fuse is None:
                continue
            spec = op_spec(writer.op)
            tensor_type = next(p.tensor_type for p in spec.own_params if spec.fuse in p.keywords)
            writer.params[tensor_type] = param_array(tensor_type, fuse)
            writer.outputs = list(node.outputs)
            graph.nodes.remove(node)
            fused += 1
            changed = True
            break
    return fused


# -- 3. DQ -> Q pairs ------------------------------------------------------------------------------------------------

def _requantize_pairs(graph: Graph) -> int:
    removed = 0
    producers = graph.producers()
    for node in list(graph.nodes):
        if not is_q(graph, node):
            continue
        dq = producers.get(node.inputs[0])
        if dq is None or not is_dq(graph, dq):
            continue
        source, target = dq.inputs[0], node.outputs[0]
        src, dst = graph.values[source], graph.values[target]
        if src.dtype == dst.dtype and same_quant(src.quant, dst.quant) and target not in graph.outputs:
            graph.rename_uses(target, source)
            graph.aliases[target] = source
            graph.nodes.remove(node)
            graph.quantization.onnx_rounding.discard(target)
            removed += 1
        elif per_tensor(src.quant):
            node.inputs = [source]
            node.params[OH_NN_TensorType.OH_NN_QUANT_DTYPE_CAST_SRC_T] = param_array(
                OH_NN_TensorType.OH_NN_QUANT_DTYPE_CAST_SRC_T, int(from_numpy(src.dtype)))
            node.params.pop(OH_NN_TensorType.OH_NN_QUANT_DTYPE_CAST_AXIS, None)
            removed += 1
    return removed


# -- 4. what is left in float --------------------------------------------------------------------------------------

def _count_fallbacks(graph: Graph) -> Counter:
    producers, consumers = graph.producers(), graph.consumers()
    fallbacks: Counter = Counter()
    for node in graph.nodes:
        if node.op == QDC or node.op in TRANSPARENT:
            continue
        reads = any(producers.get(n) is not None and is_dq(graph, producers[n]) for n in node.inputs)
        writes = any(is_q(graph, u) for o in node.outputs for u in consumers.get(o, []))
        if reads or writes:
            fallbacks[node.op.name[len("OH_NN_OPS_"):]] += 1
    return fallbacks


def fold_qdq(graph: Graph) -> int:
    """Fold the DQ -> op -> Q groups (module doc); returns the number of ops now computing on quantized tensors."""
    _sink_dequantize(graph)
    _hoist_quantize(graph)
    _clips_as_activations(graph)
    folded = 0
    changed = True
    while changed:
        changed = False
        producers, consumers = graph.producers(), graph.consumers()
        for node in list(graph.nodes):
            if node in graph.nodes and _fold(graph, node, producers, consumers):
                folded += 1
                changed = True
                producers, consumers = graph.producers(), graph.consumers()
        if changed:
            _sink_dequantize(graph)
            _hoist_quantize(graph)
    folded += _order_readers_read_integers(graph)
    _requantize_pairs(graph)
    graph.remove_unused()
    folded_norms, kept_norms = fold_quantized_batchnorms(graph)
    if folded_norms or kept_norms:
        graph.quantization.notes["batchnorm"] = {"folded": folded_norms, "kept": len(kept_norms),
                                                 "why_kept": kept_norms[:5]}
    _fuse_quantized_activations(graph)  # (after remove_unused: a folded op's old readers are gone)
    while _merge_reshapes(graph):  # (a hoisted Q can leave two reshapes in a row)
        pass
    graph.remove_unused()
    graph.quantization.fallbacks = _count_fallbacks(graph)
    return folded


# -- an exported NNRt model's quantized tensors ---------------------------------------------------------------------

def absorb_restored(graph: Graph) -> int:
    """The Q / DQ that stand for an exported NNRt model's quantized tensors (``restored``, from the exporter's
    ``nnrt.quant`` metadata) go away: the ops read and write the quantized tensors, and its quantized constants are
    integer constants again (INT32 biases without params), exactly as in the exported model."""
    restored = graph.quantization.restored
    if not restored and not any(v.integer is not None and v.integer.restored for v in graph.values.values()):
        return 0
    _sink_dequantize(graph, only=restored)  # (the converters put transposes and reshapes after the DQs ...
    _hoist_quantize(graph, only=restored)  # ... and before the Qs: they move the quantized tensors again)
    producers, consumers = graph.producers(), graph.consumers()
    done = 0
    for node in list(graph.nodes):
        if node.op != QDC or node.outputs[0] not in restored:
            continue
        out = node.outputs[0]
        if graph.values[out].dtype.kind == "f":  # a DQ: its readers read the quantized tensor
            if out in graph.outputs:
                continue
            for user in consumers.get(out, []):
                user.inputs = [node.inputs[0] if i == out else i for i in user.inputs]
            graph.nodes.remove(node)
            done += 1
            continue
        producer = producers.get(node.inputs[0])  # a Q: the op computing it writes the quantized tensor
        if producer is None or len(consumers.get(node.inputs[0], [])) != 1 or node.inputs[0] in graph.outputs:
            continue
        producer.outputs = [out if o == node.inputs[0] else o for o in producer.outputs]
        graph.nodes.remove(node)
        done += 1
    integers: dict[str, str] = {}
    for node in graph.nodes:
        for position, name in enumerate(node.inputs):
            value = graph.values[name]
            if value.data is None or value.integer is None or not value.integer.restored:
                continue
            if name not in integers:
                integer = value.integer
                if integer.restored == "bias":
                    integers[name] = graph.constant(integer.data, f"{name}.int")
                else:
                    integers[name] = _integer_constant(graph, integer, f"{name}.int")
                    graph.values[integers[name]].quant.num_bits = list(integer.quant.num_bits)
            node.inputs[position] = integers[name]
            done += 1
    restored.clear()
    return done


# -- exact ONNX rounding for the Qs no quantized op reads ------------------------------------------------------------

def _params_tensor(graph: Graph, quant: QuantParam, which: str, rank: int, dtype, hint: str) -> str:
    return quant_param_constant(graph, quant, quant.scales if which == "scale" else quant.zero_points, rank, dtype,
                                hint)


def exact_quantize(graph: Graph) -> int:
    """Lower the ONNX-rounding Qs (odd zero points) that only DQs (or the model's outputs) read; see the module doc."""
    lowered = 0
    consumers = graph.consumers()
    for node in list(graph.nodes):
        if node.op != QDC or node.outputs[0] not in graph.quantization.onnx_rounding:
            continue
        out = graph.values[node.outputs[0]]
        users = consumers.get(out.name, [])
        if out.quant is None or not all(is_dq(graph, u) for u in users):
            continue
        x = graph.values[node.inputs[0]]
        rank = len(out.shape or ())
        info = np.iinfo(out.dtype)
        quant, origin = out.quant, node.origin
        f = x.dtype

        def emit(op, inputs, dtype, params=None, output=None, anchor=None, hint="q"):
            target = output or graph.fresh_name(f"{out.name}.{hint}")
            if output is None:
                graph.add_value(Value(target, np.dtype(dtype), out.shape))
            new = Node(op, inputs, [target], params or {}, origin)
            graph.nodes.insert(graph.nodes.index(anchor) + 1 if anchor is not None else graph.nodes.index(node), new)
            return new

        scale = _params_tensor(graph, quant, "scale", rank, f, f"{out.name}.scale")
        zero = _params_tensor(graph, quant, "zero", rank, f, f"{out.name}.zero_point")
        steps = [emit(OP.OH_NN_OPS_DIV, [x.name, scale], f, hint="scaled")]
        steps.append(emit(OP.OH_NN_OPS_ROUND, [steps[-1].outputs[0]], f, hint="rounded", anchor=steps[-1]))
        steps.append(emit(OP.OH_NN_OPS_ADD, [steps[-1].outputs[0], zero], f, hint="shifted", anchor=steps[-1]))
        steps.append(emit(OP.OH_NN_OPS_CLIP, [steps[-1].outputs[0]], f, anchor=steps[-1], hint="clipped", params={
            OH_NN_TensorType.OH_NN_CLIP_MIN: param_array(OH_NN_TensorType.OH_NN_CLIP_MIN, float(info.min)),
            OH_NN_TensorType.OH_NN_CLIP_MAX: param_array(OH_NN_TensorType.OH_NN_CLIP_MAX, float(info.max))}))
        code = graph.constant(np.asarray(int(from_numpy(out.dtype)), np.int32), f"{out.name}.to")
        graph.nodes[graph.nodes.index(node)] = Node(OP.OH_NN_OPS_CAST, [steps[-1].outputs[0], code], [out.name], {},
                                                    origin)
        out.quant = None
        graph.quantization.onnx_rounding.discard(out.name)
        for user in users:  # each DQ: CAST, SUB zero point, MUL scale
            real = graph.values[user.outputs[0]]
            g = real.dtype
            code = graph.constant(np.asarray(int(from_numpy(g)), np.int32), f"{real.name}.to")
            cast = Node(OP.OH_NN_OPS_CAST, [out.name, code], [graph.fresh_name(f"{real.name}.cast")], {}, user.origin)
            graph.add_value(Value(cast.outputs[0], g, real.shape))
            shifted = Node(OP.OH_NN_OPS_SUB, [cast.outputs[0], _params_tensor(graph, quant, "zero", rank, g,
                                                                             f"{real.name}.zero_point")],
                           [graph.fresh_name(f"{real.name}.shifted")], {}, user.origin)
            graph.add_value(Value(shifted.outputs[0], g, real.shape))
            scaled = Node(OP.OH_NN_OPS_MUL, [shifted.outputs[0], _params_tensor(graph, quant, "scale", rank, g,
                                                                               f"{real.name}.scale")],
                          [real.name], {}, user.origin)
            at = graph.nodes.index(user)
            graph.nodes[at:at + 1] = [cast, shifted, scaled]
        lowered += 1
    return lowered


# -- the summary of ImportResult.stats ------------------------------------------------------------------------------

def quantization_summary(graph: Graph) -> dict[str, Any]:
    """How quantized the final graph is: compute ops (not QUANT_DTYPE_CAST nor transparent moves) that read a
    quantized tensor, those that compute in float, the float fallbacks by op type, and the remaining Q / DQ."""
    compute = [n for n in graph.nodes if n.op != QDC and n.op not in TRANSPARENT and n.op != OP.OH_NN_OPS_CAST]
    quantized = [n for n in compute if any(graph.values[i].quant is not None for i in n.inputs)]
    casts = [n for n in graph.nodes if n.op == QDC]
    summary: dict[str, Any] = {
        "compute_ops": len(compute),
        "quantized_ops": len(quantized),
        "quantize": sum(is_q(graph, n) for n in casts),
        "dequantize": sum(is_dq(graph, n) for n in casts),
        "float_fallbacks": dict(sorted(graph.quantization.fallbacks.items())),
    }
    summary.update(graph.quantization.notes)
    return summary


__all__ = ["absorb_restored", "exact_quantize", "fold_qdq", "is_dq", "is_q", "quantization_summary"]
