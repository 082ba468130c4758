"""Graph passes over the importer's IR: transposes moved out to the layout boundaries and cancelled,
batch norms folded into convolutions, activations fused into the op before them."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...optable import op_spec
from ..graph import Graph, Node, Value

NHWC_TO_NCHW = (0, 3, 1, 2)
NCHW_TO_NHWC = (0, 2, 3, 1)


def optimize(graph: Graph, options) -> dict[str, int]:
    counts = {"folded_batchnorms": 0, "fused_activations": 0}
    graph.remove_unused()
    if options.nhwc_io:
        nhwc_boundaries(graph)
    if options.optimize_layout:
        sink_transposes(graph)
    graph.remove_unused()
    if options.fold_batchnorm:
        counts["folded_batchnorms"] = fold_batchnorms(graph)
    if options.fuse_activations:
        counts["fused_activations"] = fuse_activations(graph)
    graph.remove_unused()
    return counts


# -- helpers --------------------------------------------------------------------------------------------------

def perm_of(graph: Graph, node: Node) -> tuple[int, ...] | None:
    if node.op != OP.OH_NN_OPS_TRANSPOSE:
        return None
    perm = graph.values[node.inputs[1]].data
    return None if perm is None else tuple(int(p) for p in perm.reshape(-1))


def inverse(perm: Sequence[int]) -> tuple[int, ...]:
    result = [0] * len(perm)
    for i, p in enumerate(perm):
        result[p] = i
    return tuple(result)


def _permuted_shape(shape, perm):
    return None if shape is None else tuple(shape[p] for p in perm)


def _new_transpose(graph: Graph, source: str, perm: Sequence[int], output: str, origin: str) -> Node:
    perm_name = graph.constant(np.asarray(perm, np.int64), f"{output}.perm")
    return Node(OP.OH_NN_OPS_TRANSPOSE, [source, perm_name], [output], {}, origin)


def _insert_after(graph: Graph, anchor: Node, new: Node) -> None:
    graph.nodes.insert(graph.nodes.index(anchor) + 1, new)


# -- transpose sinking ------------------------------------------------------------------------------------------

def _operand_for(graph: Graph, producers, name: str, perm, target: str) -> str | None:
    """``name`` rewritten so that op(rewritten) == T_perm^-1 view; None if it cannot be."""
    if name == target:
        return None
    value = graph.values[name]
    producer = producers.get(name)
    if producer is not None and perm_of(graph, producer) == tuple(perm):
        return producer.inputs[0]
    if value.data is not None and value.shape is not None and len(value.shape) <= len(perm):
        rank = len(perm)
        data = value.data.reshape((1,) * (rank - value.data.ndim) + value.data.shape)
        return graph.constant(np.transpose(data, inverse(perm)), f"{name}.permuted")
    return None


def _can_sink(graph: Graph, producers, user: Node, name: str, perm) -> bool:
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
        if producer is not None and perm_of(graph, producer) == tuple(perm):
            continue
        if value.data is not None and value.shape is not None and len(value.shape) <= len(perm):
            if role == "concat" and len(value.shape) != len(perm):
                return False
            continue
        return False
    return True


def _sink_into(graph: Graph, producers, user: Node, name: str, source: str, perm) -> None:
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
            for other in graph.nodes:
                other.inputs = [out if i == source else i for i in other.inputs]
            graph.nodes.remove(user)
            graph.provenance[source] = (out, composed)
        else:  # (an identity transpose onto a graph output stays, to keep the output's name)
            user.inputs = [source, graph.constant(np.asarray(composed, np.int64), f"{user.outputs[0]}.perm")]
        return
    role = op_spec(user.op).layout_role
    if role in ("axis", "reduce"):
        _sink_into_axis_op(graph, user, source, perm)
        return
    if role in ("slice", "gather", "split"):
        _sink_into_indexing_op(graph, user, source, perm, role)
        return
    if role == "pad":  # pad(T_p(x), P) == T_p(pad(x, P')) with P'[p[i]] = P[i]
        pads = graph.values[user.inputs[1]].data.reshape(len(perm), 2)
        moved_pads = np.empty_like(pads)
        moved_pads[list(perm)] = pads
        user.inputs = [source, graph.constant(moved_pads, f"{user.inputs[1]}.permuted")] + user.inputs[2:]
        out = user.outputs[0]
        value = graph.values[out]
        moved = graph.fresh_name(f"{out}.moved")
        graph.add_value(Value(moved, value.dtype, _permuted_shape(value.shape, inverse(perm)), None, value.quant))
        user.outputs = [moved]
        _insert_after(graph, user, _new_transpose(graph, moved, perm, out, user.origin))
        return
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
    graph.add_value(Value(moved, value.dtype, _permuted_shape(value.shape, inverse(perm)), None, value.quant))
    user.outputs = [moved]
    _insert_after(graph, user, _new_transpose(graph, moved, perm, out, user.origin))


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
    graph.add_value(Value(moved, value.dtype, _permuted_shape(value.shape, inverse(out_perm)), None, value.quant))
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
        graph.add_value(Value(moved, value.dtype, _permuted_shape(value.shape, inverse(perm)), None, value.quant))
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
        changed = False
        producers = graph.producers()
        consumers = graph.consumers()
        for node in list(graph.nodes):
            perm = perm_of(graph, node)
            if perm is None:
                continue
            out, source = node.outputs[0], node.inputs[0]
            if only_moves_unit_dims(graph.values[source].shape, perm):
                node.op = OP.OH_NN_OPS_RESHAPE
                node.inputs = [source, graph.constant(np.asarray(graph.values[out].shape, np.int64), f"{out}.shape")]
                changed = True
                break
            if out in graph.outputs:
                continue
            users = consumers.get(out, [])
            if not users:
                continue
            if all(_can_sink(graph, producers, u, out, perm) for u in users):
                for user in list(dict.fromkeys(users)):
                    _sink_into(graph, producers, user, out, source, perm)
                graph.nodes.remove(node)
                graph.provenance[out] = (source, perm)
                changed = True
                break
            if _absorb_into_dense(graph, node, users, consumers):
                changed = True
                break
        if not changed:
            changed = _merge_reshapes(graph)
        if not changed and allow_reshape_moves and _transpose_count(graph) and _through_reshapes_improves(graph):
            changed = True


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
    # column j of the new flatten order (source order) is column order[j] of the old (transposed) order
    old_index = np.arange(flat.shape[1]).reshape(t_shape[1:])
    order = old_index.transpose(np.argsort(perm[1:])).reshape(-1)
    # the flattened tensor now holds its columns in another order: it is no longer the ONNX tensor of that name
    reordered = graph.fresh_name(f"{reshape.outputs[0]}.nhwc")
    graph.add_value(Value(reordered, flat.dtype, flat.shape, None, flat.quant))
    for user, weight in zip(dense, weights):
        user.inputs[1] = graph.constant(np.ascontiguousarray(weight[:, order]), f"{user.inputs[1]}.nhwc")
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


def _blocks(src, dst):
    """Align two static shapes of equal size into blocks of consecutive dims with equal products.

    Returns [(src dims, dst dims)] or None when no clean alignment exists.
    """
    if src is None or dst is None or any(d < 0 for d in (*src, *dst)) or int(np.prod(src)) != int(np.prod(dst)):
        return None
    blocks, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        if i == len(src) or j == len(dst):
            return None
        a, b = [i], [j]
        pa, pb = src[i], dst[j]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                if i == len(src):
                    return None
                pa *= src[i]
                a.append(i)
                i += 1
            else:
                if j == len(dst):
                    return None
                pb *= dst[j]
                b.append(j)
                j += 1
        blocks.append((a, b))
    return blocks


def reshape_then_transpose(src_shape, dst_shape, perm):
    """For TRANSPOSE(perm) after RESHAPE(src -> dst): an equivalent (perm', shape') with the transpose first,
    i.e. RESHAPE(TRANSPOSE(x, perm'), shape'), or None. Needs every block of the reshape to move as a whole."""
    blocks = _blocks(src_shape, dst_shape)
    if blocks is None:
        return None
    owner = {d: k for k, (_, b) in enumerate(blocks) for d in b}
    order = []
    position = 0
    while position < len(perm):
        k = owner[perm[position]]
        dst_dims = blocks[k][1]
        if list(perm[position:position + len(dst_dims)]) != dst_dims:
            return None
        order.append(k)
        position += len(dst_dims)
    new_perm = [d for k in order for d in blocks[k][0]]
    new_shape = [dst_shape[p] for p in perm]
    return tuple(new_perm), tuple(new_shape)


def transpose_then_reshape(src_shape, perm, dst_shape):
    """For RESHAPE(-> dst) after TRANSPOSE(perm) of src: an equivalent (shape', perm') with the reshape first,
    i.e. TRANSPOSE(RESHAPE(x, shape'), perm'), or None."""
    t_shape = [src_shape[p] for p in perm]
    blocks = _blocks(t_shape, dst_shape)
    if blocks is None:
        return None
    # each block's source dims (in src order) must be consecutive and increasing in src
    groups = []
    for a, b in blocks:
        src_dims = [perm[i] for i in a]
        if src_dims != list(range(src_dims[0], src_dims[0] + len(src_dims))):
            return None
        groups.append((src_dims[0], [dst_shape[j] for j in b]))
    by_src = sorted(range(len(groups)), key=lambda k: groups[k][0])
    new_shape, start = [], {}
    for k in by_src:
        start[k] = len(new_shape)
        new_shape.extend(groups[k][1])
    new_perm = [start[k] + n for k in range(len(groups)) for n in range(len(groups[k][1]))]
    return tuple(new_shape), tuple(new_perm)


def _through_reshapes(graph: Graph, choice: int) -> bool:
    """Make the ``choice``-th possible move of a transpose across a neighbouring reshape (one that only splits or
    merges dims moving together). Returns False when there are not that many possible moves."""
    producers = graph.producers()
    consumers = graph.consumers()
    seen = -1
    for node in list(graph.nodes):
        perm = perm_of(graph, node)
        if perm is None:
            continue
        source, out = node.inputs[0], node.outputs[0]
        users = consumers.get(out, [])
        # down: TRANSPOSE -> RESHAPE (the transpose's only consumer)
        if len(users) == 1 and users[0].op == OP.OH_NN_OPS_RESHAPE and out not in graph.outputs:
            reshape = users[0]
            found = transpose_then_reshape(graph.values[source].shape, perm, graph.values[reshape.outputs[0]].shape)
            if found is not None:
                seen += 1
            if found is not None and seen == choice:
                new_shape, new_perm = found
                value = graph.values[reshape.outputs[0]]
                mid = graph.fresh_name(f"{reshape.outputs[0]}.early")
                graph.add_value(Value(mid, value.dtype, new_shape, None, value.quant))
                final = reshape.outputs[0]
                reshape.inputs = [source, graph.constant(np.asarray(new_shape, np.int64), f"{mid}.shape")]
                reshape.outputs = [mid]
                graph.nodes.remove(node)
                _insert_after(graph, reshape, _new_transpose(graph, mid, new_perm, final, reshape.origin))
                return True
        # up: RESHAPE (only feeding this transpose) -> TRANSPOSE
        reshape = producers.get(source)
        if (reshape is not None and reshape.op == OP.OH_NN_OPS_RESHAPE and len(consumers.get(source, [])) == 1
                and source not in graph.outputs):
            x = reshape.inputs[0]
            found = reshape_then_transpose(graph.values[x].shape, graph.values[source].shape, perm)
            if found is not None:
                seen += 1
            if found is not None and seen == choice:
                new_perm, new_shape = found
                x_value = graph.values[x]
                moved = graph.fresh_name(f"{x}.T")
                graph.add_value(Value(moved, x_value.dtype, tuple(x_value.shape[p] for p in new_perm), None,
                                      x_value.quant))
                transpose = _new_transpose(graph, x, new_perm, moved, node.origin)
                graph.nodes.insert(graph.nodes.index(reshape), transpose)
                reshape.inputs = [moved, graph.constant(np.asarray(new_shape, np.int64), f"{out}.shape")]
                reshape.outputs = [out]
                graph.nodes.remove(node)
                graph.values.pop(source, None)
                return True
    return False


def only_moves_unit_dims(shape, perm) -> bool:
    """A transpose that keeps the non-1 dims in order is a reshape."""
    if shape is None or any(d < 0 for d in shape):
        return False
    kept = [p for p in perm if shape[p] != 1]
    return kept == sorted(kept)


def _merge_reshapes(graph: Graph) -> bool:
    producers = graph.producers()
    consumers = graph.consumers()
    for node in graph.nodes:
        if node.op != OP.OH_NN_OPS_RESHAPE:
            continue
        producer = producers.get(node.inputs[0])
        if (producer is not None and producer.op == OP.OH_NN_OPS_RESHAPE and len(consumers[producer.outputs[0]]) == 1
                and producer.outputs[0] not in graph.outputs):
            node.inputs[0] = producer.inputs[0]
            graph.nodes.remove(producer)
            return True
        source = graph.values[node.inputs[0]]
        target = graph.values[node.outputs[0]]
        if (source.shape is not None and source.shape == target.shape and all(d >= 0 for d in source.shape)
                and node.outputs[0] not in graph.outputs):
            graph.provenance[node.outputs[0]] = (node.inputs[0], tuple(range(len(source.shape))))
            graph.rename_uses(node.outputs[0], node.inputs[0])
            graph.nodes.remove(node)
            return True
    return False


def nhwc_boundaries(graph: Graph) -> None:
    """Make 4-D model inputs and outputs NHWC by absorbing the boundary transposes."""
    consumers = graph.consumers()
    for position, name in enumerate(list(graph.inputs)):
        value = graph.values[name]
        if value.shape is None or len(value.shape) != 4:
            continue
        users = consumers.get(name, [])
        transposes = [u for u in users if perm_of(graph, u) == NCHW_TO_NHWC]
        # the NHWC input replaces the NCHW one; remaining NCHW users read a transpose of it
        nhwc = graph.fresh_name(f"{name}.nhwc")
        graph.add_value(Value(nhwc, value.dtype, _permuted_shape(value.shape, NCHW_TO_NHWC)))
        for t in transposes:
            graph.rename_uses(t.outputs[0], nhwc)
            graph.nodes.remove(t)
        others = [u for u in users if u not in transposes]
        if others:
            back = _new_transpose(graph, nhwc, NHWC_TO_NCHW, graph.fresh_name(f"{name}.nchw"), "input")
            graph.add_value(Value(back.outputs[0], value.dtype, value.shape))
            graph.nodes.insert(0, back)
            for u in others:
                u.inputs = [back.outputs[0] if n == name else n for n in u.inputs]
        # keep the ONNX name on the model input
        graph.values[name] = Value(name, value.dtype, graph.values[nhwc].shape)
        for node in graph.nodes:
            node.inputs = [name if n == nhwc else n for n in node.inputs]
        graph.inputs[position] = name
    producers = graph.producers()
    for position, name in enumerate(list(graph.outputs)):
        value = graph.values[name]
        producer = producers.get(name)
        if value.shape is None or len(value.shape) != 4 or producer is None:
            continue
        if perm_of(graph, producer) == NHWC_TO_NCHW:
            source = producer.inputs[0]
            graph.nodes.remove(producer)
            graph.values[name] = Value(name, value.dtype, graph.values[source].shape)
            producers2 = graph.producers()
            inner = producers2.get(source)
            if inner is not None:
                inner.outputs = [name if o == source else o for o in inner.outputs]
                graph.rename_uses(source, name)
        else:
            out = graph.fresh_name(f"{name}.nhwc")
            graph.add_value(Value(out, value.dtype, _permuted_shape(value.shape, NCHW_TO_NHWC)))
            graph.nodes.append(_new_transpose(graph, name, NCHW_TO_NHWC, out, "output"))
            graph.outputs[position] = out


# -- batch norm folding and activation fusion --------------------------------------------------------------------

_CONVS = {OP.OH_NN_OPS_CONV2D, OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE}


def fold_batchnorms(graph: Graph) -> int:
    """CONV -> BATCH_NORM (constant statistics) becomes one CONV with scaled weights and shifted bias."""
    folded = 0
    producers = graph.producers()
    consumers = graph.consumers()
    for bn in list(graph.nodes):
        if bn.op != OP.OH_NN_OPS_BATCH_NORM:
            continue
        conv = producers.get(bn.inputs[0])
        if conv is None or conv.op not in _CONVS or len(consumers.get(conv.outputs[0], [])) != 1:
            continue
        if conv.outputs[0] in graph.outputs or conv.values().get("activation_type", 0):
            continue
        stats = [graph.values[n].data for n in bn.inputs[1:]]
        weight, bias = graph.values[conv.inputs[1]].data, graph.values[conv.inputs[2]].data
        if any(s is None for s in stats) or weight is None or bias is None or weight.dtype.kind != "f":
            continue
        scale, offset, mean, variance = (s.astype(np.float64) for s in stats)
        eps = bn.kernel_arguments()["epsilon"]
        factor = scale / np.sqrt(variance + eps)
        new_weight = (weight.astype(np.float64) * factor.reshape(-1, 1, 1, 1)).astype(weight.dtype)
        new_bias = ((bias.astype(np.float64) - mean) * factor + offset).astype(bias.dtype)
        conv.inputs[1] = graph.constant(new_weight, f"{conv.inputs[1]}.bnfolded")
        conv.inputs[2] = graph.constant(new_bias, f"{conv.inputs[2]}.bnfolded")
        conv.outputs = [bn.outputs[0]]
        graph.nodes.remove(bn)
        folded += 1
        producers = graph.producers()
        consumers = graph.consumers()
    return folded


def _activation_of(graph: Graph, node: Node) -> int | None:
    """The OH_NN_FuseType an activation node computes, or None."""
    if node.op == OP.OH_NN_OPS_RELU:
        return 1
    if node.op == OP.OH_NN_OPS_RELU6:
        return 2
    if node.op == OP.OH_NN_OPS_CLIP:
        args = node.kernel_arguments()
        if args["min"] == 0 and args["max"] == 6:
            return 2
        if args["min"] == 0 and args["max"] == float("inf"):
            return 1
    return None


def fuse_activations(graph: Graph) -> int:
    fused = 0
    changed = True
    while changed:
        changed = False
        producers = graph.producers()
        consumers = graph.consumers()
        for act in graph.nodes:
            kind = _activation_of(graph, act)
            if kind is None:
                continue
            producer = producers.get(act.inputs[0])
            if producer is None or len(consumers.get(act.inputs[0], [])) != 1 or act.inputs[0] in graph.outputs:
                continue
            spec = op_spec(producer.op)
            if spec.fuse is None or producer.values().get(spec.fuse, 0):
                continue
            if graph.values[producer.outputs[0]].quant is not None:
                continue
            tensor_type = next(p.tensor_type for p in spec.own_params if spec.fuse in p.keywords)
            from ...optable import param_array

            producer.params[tensor_type] = param_array(tensor_type, kind)
            producer.outputs = [act.outputs[0]]
            graph.nodes.remove(act)
            fused += 1
            changed = True
            break
    return fused
