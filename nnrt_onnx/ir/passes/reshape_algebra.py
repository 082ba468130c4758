"""Reshape <-> transpose algebra: aligning two shapes into blocks of dims that move together (``_blocks``), swapping a
transpose and a reshape (``reshape_then_transpose``, ``transpose_then_reshape``), making one such move in a graph
(``_through_reshapes``), merging consecutive reshapes and dropping no-op ones (``_merge_reshapes``), and recognising a
transpose that only moves size-1 dims (``only_moves_unit_dims``), which is a reshape."""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ..graph import Graph, Value
from .permutations import _insert_after, _new_transpose, transposes_and_users


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
    for node, perm, users in transposes_and_users(graph, consumers):
        source, out = node.inputs[0], node.outputs[0]
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
        target_shape = graph.values[node.inputs[1]].data if len(node.inputs) > 1 else None
        # a 0 in RESHAPE's target copies its input's dim: against the producer's input it would copy another one
        copies = target_shape is None or bool(np.any(np.asarray(target_shape) == 0))
        if (producer is not None and producer.op == OP.OH_NN_OPS_RESHAPE and len(consumers[producer.outputs[0]]) == 1
                and producer.outputs[0] not in graph.outputs and not copies):
            node.inputs[0] = producer.inputs[0]
            graph.nodes.remove(producer)
            return True
        source = graph.values[node.inputs[0]]
        target = graph.values[node.outputs[0]]
        if source.shape is None or source.shape != target.shape or any(d < 0 for d in source.shape):
            continue
        out, name = node.outputs[0], node.inputs[0]
        if out not in graph.outputs:
            graph.provenance[out] = (name, tuple(range(len(source.shape))))
            graph.rename_uses(out, name)
            graph.nodes.remove(node)
            return True
        if (producer is not None and len(consumers[name]) == 1 and name not in graph.inputs
                and name not in graph.outputs):  # a no-op onto a graph output: its producer writes the output
            producer.outputs = [out if o == name else o for o in producer.outputs]
            graph.rename_uses(name, out)
            graph.nodes.remove(node)
            graph.provenance[name] = (out, tuple(range(len(source.shape))))
            return True
    return False
