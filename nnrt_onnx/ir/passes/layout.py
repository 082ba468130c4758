"""Transpose sinking and cancelling: every transpose moves towards the outputs through layout-neutral ops (as each
op's ``layout_role`` in the op table allows), composing with and cancelling against the transposes it meets; a
transpose before a flattening reshape folds into the dense layer's weights; transposes move across reshapes when that
lets more of them cancel. Also the NCHW <-> NHWC permutations the converters use."""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...geometry import NCHW_TO_NHWC, NHWC_TO_NCHW, permute  # noqa: F401 (the constants: the passes' API)
from ...optable import op_spec
from ..graph import Graph, Node, Value
from ..quantized import derive
from .permutations import _insert_after, _new_transpose, inverse, perm_of, transposes_and_users
from .reshape_algebra import _merge_reshapes, _through_reshapes, only_moves_unit_dims


def _operand_for(graph: Graph, producers, name: str, perm, target: str) -> str | None:
    """``name`` rewritten so that op(rewritten) == T_perm^-1 view; None if it cannot be."""
    if name == target:
        return None
    value = graph.values[name]
    producer = producers.get(name)
    if producer is not None and perm_of(graph, producer) == tuple(perm) and producer.inputs[0] != target:
        return producer.inputs[0]
    if value.data is not None and value.shape is not None and len(value.shape) <= len(perm):
        rank = len(perm)
        moved = derive(graph, name, lambda a: np.transpose(a.reshape((1,) * (rank - a.ndim) + a.shape), inverse(perm)),
                       f"{name}.permuted")
        graph.values[moved].quant = value.quant  # (per tensor: _can_sink keeps per-channel ones in place)
        return moved
    return None


def _per_channel(graph: Graph, names) -> bool:
    """A tensor quantized per channel: its parameters run along one axis, so no transpose moves across it."""
    return any(graph.values[n].quant is not None and graph.values[n].quant.count > 1 for n in names)


def _can_sink(graph: Graph, producers, user: Node, name: str, perm) -> bool:
    if _per_channel(graph, list(user.inputs) + list(user.outputs)):
        return False
    if user.op == OP.OH_NN_OPS_TRANSPOSE:
        return user.inputs[0] == name
    role = op_spec(user.op).layout_role
    if role == "split":
        return user.inputs[0] == name
    if role == "gather":
        indices, axis = (graph.values[n] for n in user.inputs[1:3])
        return (user.inputs[0] == name and name not in user.inputs[1:] and axis.data is not None
                and indices.shape is not None and len(indices.shape) == 1)
    if role == "slice":
        return user.inputs[0] == name and name not in user.inputs[1:] and graph.values[user.inputs[1]].shape is not None
    if role is None or len(user.outputs) != 1:
        return False
    if role in ("axis", "reduce"):
        return user.inputs[0] == name and name not in user.inputs[1:] and _axes_after(graph, user, perm) is not None
    if role == "pad":
        pads = graph.values[user.inputs[1]].data
        return user.inputs[0] == name and pads is not None and pads.size == 2 * len(perm)
    data_inputs = user.inputs if role != "unary" else user.inputs[:1]
    if role == "unary" and any(n == name for n in user.inputs[1:]):
        return False
    for other in data_inputs:
        if other == name:
            continue
        value = graph.values[other]
        producer = producers.get(other)
        # another transpose by perm can move away too -- unless it transposes this very tensor: op(T(x), T(T(x)))
        # would need T^-1(x) (moving both, the first cancelling, left the op reading x where it needed T^-1(x))
        if producer is not None and perm_of(graph, producer) == tuple(perm) and producer.inputs[0] != name:
            continue
        if value.data is not None and value.shape is not None and len(value.shape) <= len(perm):
            if role == "concat" and len(value.shape) != len(perm):
                return False
            continue
        return False
    return True


def _sink_into(graph: Graph, producers, user: Node, name: str, source: str, perm) -> str:
    """Move the transpose ``source`` -> ``name`` past ``user``; returns the name ``source`` has afterwards (a graph
    output's name, when its producer now writes that output directly)."""
    if user.op == OP.OH_NN_OPS_TRANSPOSE:
        composed = tuple(perm[q] for q in perm_of(graph, user))
        out = user.outputs[0]
        identity = composed == tuple(range(len(composed)))
        producer = producers.get(source)
        if identity and out not in graph.outputs:
            graph.provenance[out] = (source, composed)
            graph.rename_uses(out, source)
            graph.nodes.remove(user)
        elif identity and producer is not None and source not in graph.inputs and source not in graph.outputs:
            # the graph output keeps its name: the op that made ``source`` writes it directly
            producer.outputs = [out if o == source else o for o in producer.outputs]
            graph.rename_uses(source, out)
            graph.nodes.remove(user)
            graph.provenance[source] = (out, composed)
            return out
        else:  # (an identity transpose onto a graph output stays, to keep the output's name)
            user.inputs = [source, graph.constant(np.asarray(composed, np.int64), f"{user.outputs[0]}.perm")]
        return source
    role = op_spec(user.op).layout_role
    if role in ("axis", "reduce"):
        _sink_into_axis_op(graph, user, source, perm)
        return source
    if role in ("slice", "gather", "split"):
        _sink_into_indexing_op(graph, user, source, perm, role)
        return source
    if role == "pad":  # pad(T_p(x), P) == T_p(pad(x, P')) with P'[p[i]] = P[i]
        pads = graph.values[user.inputs[1]].data.reshape(len(perm), 2)
        moved_pads = np.empty_like(pads)
        moved_pads[list(perm)] = pads
        user.inputs = [source, graph.constant(moved_pads, f"{user.inputs[1]}.permuted")] + user.inputs[2:]
        out = user.outputs[0]
        value = graph.values[out]
        moved = graph.fresh_name(f"{out}.moved")
        graph.add_value(Value(moved, value.dtype, permute(value.shape, inverse(perm)), None, value.quant))
        user.outputs = [moved]
        _insert_after(graph, user, _new_transpose(graph, moved, perm, out, user.origin))
        return source
    new_inputs = []
    for position, other in enumerate(user.inputs):
        if other == name:
            new_inputs.append(source)
        elif role == "unary" and position > 0:
            new_inputs.append(other)
        else:
            new_inputs.append(_operand_for(graph, producers, other, perm, name))
    user.inputs = new_inputs
    if role == "concat":
        from ...enums import OH_NN_TensorType
        from ...optable import param_array

        axis = user.kernel_arguments()["axis"] % len(perm)
        user.params[OH_NN_TensorType.OH_NN_CONCAT_AXIS] = param_array(OH_NN_TensorType.OH_NN_CONCAT_AXIS, perm[axis])
    out = user.outputs[0]
    value = graph.values[out]
    moved = graph.fresh_name(f"{out}.moved")
    graph.add_value(Value(moved, value.dtype, permute(value.shape, inverse(perm)), None, value.quant))
    user.outputs = [moved]
    _insert_after(graph, user, _new_transpose(graph, moved, perm, out, user.origin))
    return source


def _axes_after(graph: Graph, node: Node, perm) -> list[int] | None:
    """The axes an axis/reduce op reads, rewritten for the untransposed input; None when it cannot move."""
    rank = len(perm)
    if op_spec(node.op).layout_role == "axis":
        return [perm[int(node.kernel_arguments()["axis"]) % rank]]
    axes = graph.values[node.inputs[1]].data if len(node.inputs) > 1 else None
    arguments = node.kernel_arguments()
    if axes is None or arguments.get("reduce_to_end") or axes.size == 0:
        return None
    return [perm[int(a) % rank] for a in axes.reshape(-1)]


def _sink_into_axis_op(graph: Graph, user: Node, source: str, perm) -> None:
    """op(T_perm(x)) == T'(op'(x)) for a softmax-like or reducing op: axes rewritten, the transpose moved after."""
    from ...optable import param_array

    rank = len(perm)
    spec = op_spec(user.op)
    new_axes = _axes_after(graph, user, perm)
    out = user.outputs[0]
    value = graph.values[out]
    if spec.layout_role == "axis":
        tensor_type = next(p.tensor_type for p in spec.own_params if "axis" in p.keywords)
        user.params[tensor_type] = param_array(tensor_type, new_axes[0])
        out_perm = tuple(perm)
    else:
        axes_value = graph.values[user.inputs[1]]
        user.inputs[1] = graph.constant(np.asarray(new_axes, axes_value.dtype), f"{user.inputs[1]}.permuted")
        old_axes = {perm.index(a) for a in new_axes}  # the reduced dims in the transposed order
        if user.kernel_arguments().get("keep_dims"):
            out_perm = tuple(perm)
        else:
            kept = [perm[i] for i in range(rank) if i not in old_axes]  # source dims of the kept outputs
            order = sorted(kept)
            out_perm = tuple(order.index(s) for s in kept)
    user.inputs[0] = source
    if out_perm == tuple(range(len(out_perm))):
        return  # the op now writes its output directly, in the right order
    moved = graph.fresh_name(f"{out}.moved")
    graph.add_value(Value(moved, value.dtype, permute(value.shape, inverse(out_perm)), None, value.quant))
    user.outputs = [moved]
    _insert_after(graph, user, _new_transpose(graph, moved, out_perm, out, user.origin))


def _sink_into_indexing_op(graph: Graph, user: Node, source: str, perm, role: str) -> None:
    """slice / gather (1-D indices) / split of T_p(x) == T_p of the same op on x along the permuted axes; every
    output keeps its rank, so each gets the transpose after it."""
    from ...enums import OH_NN_TensorType
    from ...optable import param_array

    rank = len(perm)
    arguments = user.kernel_arguments()
    if role == "slice":
        count = int(np.prod(graph.values[user.inputs[1]].shape))
        axes = [int(a) % rank for a in (arguments.get("axes") or range(count))]
        user.params[OH_NN_TensorType.OH_NN_SLICE_AXES] = param_array(OH_NN_TensorType.OH_NN_SLICE_AXES,
                                                                     [perm[a] for a in axes])
    elif role == "gather":
        axis_value = graph.values[user.inputs[2]]
        axis = int(axis_value.data.reshape(-1)[0]) % rank
        user.inputs[2] = graph.constant(np.asarray([perm[axis]], axis_value.dtype).reshape(axis_value.data.shape),
                                        f"{user.inputs[2]}.permuted")
    else:
        axis = int(arguments["axis"]) % rank
        user.params[OH_NN_TensorType.OH_NN_SPLIT_AXIS] = param_array(OH_NN_TensorType.OH_NN_SPLIT_AXIS, perm[axis])
    user.inputs[0] = source
    outputs = []
    anchor = user
    for out in user.outputs:
        value = graph.values[out]
        moved = graph.fresh_name(f"{out}.moved")
        graph.add_value(Value(moved, value.dtype, permute(value.shape, inverse(perm)), None, value.quant))
        outputs.append(moved)
        transpose = _new_transpose(graph, moved, perm, out, user.origin)
        _insert_after(graph, anchor, transpose)
        anchor = transpose
    user.outputs = outputs


def sink_transposes(graph: Graph) -> None:
    sink_transposes_basic(graph, allow_reshape_moves=True)


def sink_transposes_basic(graph: Graph, allow_reshape_moves: bool = False) -> None:
    """Move every transpose towards the outputs through layout-neutral ops, composing and cancelling them.

    A transpose moves only when *all* consumers of its output let it through, so no work is duplicated;
    a transpose whose output is a graph output stays (a true boundary).
    """
    changed = True
    while changed:
        changed = _sink_scan(graph)
        if not changed:
            changed = _merge_reshapes(graph)
        if not changed and allow_reshape_moves and _transpose_count(graph) and _through_reshapes_improves(graph):
            changed = True


def _names(nodes) -> set[str]:
    return {name for node in nodes for name in (*node.inputs, *node.outputs)}


def _sink_scan(graph: Graph) -> bool:
    """One scan of the graph moving every transpose that can move; whether any did.

    The producer/consumer maps are built once per scan. A move changes only the nodes around the transpose, so the
    scan goes on after it, skipping each transpose whose neighbourhood (its own, its consumers' and their
    consumers' tensors) an earlier move of the scan touched: that one is looked at again, with fresh maps, in the
    next scan. (Rebuilding the maps and restarting after every move was quadratic: DenseNet-121 moves 600 times.)
    """
    producers = graph.producers()
    consumers = graph.consumers()
    touched: set[str] = set()
    moved = False
    for node, perm, users in transposes_and_users(graph, consumers):
        out, source = node.outputs[0], node.inputs[0]
        around = [node, *users, *(c for u in users for o in u.outputs for c in consumers.get(o, []))]
        before = _names(around)
        if touched and (touched & before or any(n not in graph.nodes for n in around)):
            continue
        if only_moves_unit_dims(graph.values[source].shape, perm):
            node.op = OP.OH_NN_OPS_RESHAPE
            node.inputs = [source, graph.constant(np.asarray(graph.values[out].shape, np.int64), f"{out}.shape")]
        elif out in graph.outputs or not users:
            continue
        elif all(_can_sink(graph, producers, u, out, perm) for u in users):
            for user in list(dict.fromkeys(users)):  # (a user may rename source: the next ones read the new name)
                source = _sink_into(graph, producers, user, out, source, perm)
            graph.nodes.remove(node)
            graph.provenance[out] = (source, perm)
        elif not _absorb_into_dense(graph, node, users, consumers):
            continue
        # what the move changed: the tensors of the nodes around it, before and after (the transposes it inserted
        # read and write tensors of the users it moved across)
        touched |= before | _names(around)
        moved = True
    return moved


def _absorb_into_dense(graph: Graph, transpose: Node, users, consumers) -> bool:
    """TRANSPOSE -> flattening RESHAPE -> FULL_CONNECTIONs with constant weights: permute the weights' columns
    instead, so the flatten reads the untransposed tensor (the classic NHWC classifier head)."""
    perm = perm_of(graph, transpose)
    source = graph.values[transpose.inputs[0]]
    if perm[0] != 0 or source.shape is None or any(d < 0 for d in source.shape) or len(users) != 1:
        return False
    reshape = users[0]
    if reshape.op != OP.OH_NN_OPS_RESHAPE or reshape.outputs[0] in graph.outputs:
        return False
    flat = graph.values[reshape.outputs[0]]
    t_shape = graph.values[transpose.outputs[0]].shape
    if flat.shape is None or len(flat.shape) != 2 or flat.shape[0] != t_shape[0]:
        return False
    dense = consumers.get(reshape.outputs[0], [])
    weights = []
    for user in dense:
        if user.op != OP.OH_NN_OPS_FULL_CONNECTION or user.inputs[0] != reshape.outputs[0] or user.values().get("use_axis"):
            return False
        weight = graph.values[user.inputs[1]].data
        if weight is None or weight.ndim != 2 or weight.shape[1] != flat.shape[1]:
            return False
        weights.append(weight)
    if not dense:
        return False
    # column j of the new flatten order (source order) is column order[j] of the old (transposed) order, i.e.
    # weight[:, order] == weight viewed [O, *t_shape[1:]] with its feature axes permuted back: a strided copy,
    # about 10x faster than the fancy-indexed column gather on VGG's 4096 x 25088 weight
    back = tuple(int(a) + 1 for a in np.argsort(perm[1:]))
    # the flattened tensor now holds its columns in another order: it is no longer the ONNX tensor of that name
    reordered = graph.fresh_name(f"{reshape.outputs[0]}.nhwc")
    graph.add_value(Value(reordered, flat.dtype, flat.shape, None, flat.quant))
    for user, weight in zip(dense, weights):
        user.inputs[1] = derive(graph, user.inputs[1], lambda a: np.ascontiguousarray(
            a.reshape((a.shape[0],) + tuple(t_shape[1:])).transpose((0,) + back)).reshape(a.shape),
            f"{user.inputs[1]}.nhwc")
        user.inputs[0] = reordered
    reshape.outputs[0] = reordered
    reshape.inputs[0] = transpose.inputs[0]
    graph.nodes.remove(transpose)
    graph.provenance[transpose.outputs[0]] = (transpose.inputs[0], perm)
    return True


def _transpose_count(graph: Graph) -> int:
    return sum(n.op == OP.OH_NN_OPS_TRANSPOSE for n in graph.nodes)


def _through_reshapes_improves(graph: Graph) -> bool:
    """Try each single move of a transpose across a reshape; keep the first after which sinking removes transposes."""
    before = _transpose_count(graph)
    candidates = sum(1 for n in graph.nodes if n.op == OP.OH_NN_OPS_TRANSPOSE) * 2
    for choice in range(candidates):
        trial = graph.clone()
        if not _through_reshapes(trial, choice):
            break
        sink_transposes_basic(trial)
        if _transpose_count(trial) < before:
            graph.__dict__.update(trial.__dict__)
            return True
    return False
