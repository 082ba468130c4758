"""Fusion pass: a GRU time step as the importer unrolls it (``onnx_import.handlers.recurrent``: NNRt has no GRU) --
about thirteen steps per time step (three recurrent MATMULs, their ADDs, two SIGMOIDs, TANH, MUL, SUB, ...) --
becomes one step running the whole cell in one compiled call (``accel.recurrent.gru_cell``,
``loops.recurrence.gru_step``). Recognised by its dataflow, not by names: from the new state
``H = ADD(c, MUL(z, SUB(h, c)))`` back through ``c = TANH(ADD(xh, n))`` with ``n`` either
``MUL(r, ADD(MATMUL(h, Rh), bh))`` / ``MUL(r, MATMUL(h, Rh))`` (linear_before_reset) or
``MATMUL(MUL(r, h), Rh)``, and ``z``, ``r`` each ``SIGMOID(ADD(x, MATMUL(h, R)))``; every R a constant [H, H]
matrix, bh a constant [H] vector, everything float32 of one static [B, H] shape, every intermediate read only
inside the cell and no model output. (A first step without a previous state, and RNN's one-gate step, are left as
they are.) Within float32 rounding of the unfused steps: the cell sums its products in another order and uses a
rational tanh (``accel.contract``, the recurrences' tolerance).

Then the time steps of one recurrence -- fused cells with the same weights, each one's new state the next one's
previous state -- become one step over the whole chain (``accel.recurrent.gru_chain``: one compiled loop over
time, no Python per time step), placed at its last cell, where nothing between its first and last cell reads its
states; where the steps' gate inputs are consecutive rows that one UNSTACK splits from each input projection (the
importer's form), the step reads the projections themselves (``gru_chain_rows``: nothing stacked per run)."""
from __future__ import annotations

import numpy as np

from ...enums import OH_NN_OperationType
from ...plan import merged, readers_and_producers
from ..recurrent import gru_chain, gru_chain_rows, gru_cell, recurrence_loops

_OP = OH_NN_OperationType
FLOAT32 = np.dtype(np.float32)


class _Cell:
    """What a match found: the steps it takes (positions), the four inputs, the constants."""

    def __init__(self):
        self.positions: set[int] = set()


def fuse_gru_cells(plan) -> int:
    """The pass (module doc) on ``plan.steps``; returns how many time steps it fused."""
    if recurrence_loops() is None:
        return 0
    steps, outputs = plan.steps, set(plan.outputs)
    readers, produced_at = readers_and_producers(steps)
    fused: dict[int, object] = {}
    taken: set[int] = set()
    for position, step in enumerate(steps):
        if step.op != _OP.OH_NN_OPS_ADD:
            continue
        cell = _match(plan, steps, produced_at, readers, outputs, position)
        if cell is None or cell.positions & taken:
            continue
        group = [steps[i] for i in sorted(cell.positions)]
        kwargs = {"rz": cell.rz, "rr": cell.rr, "rh": cell.rh, "bh": cell.bh,
                  "linear_before_reset": cell.linear_before_reset}
        one = merged(group[0], gru_cell, kwargs, 0, (cell.xz, cell.xr, cell.xh, cell.h), group, 0,
                     tuple(t for s in group for t in s.release), last=step)
        one.op = _OP.OH_NN_OPS_MATMUL  # (its contract: a recurrence's products; the label says what it is)
        one.label = f"{group[0].label} (+ {len(group) - 1} steps: a GRU time step)"
        one.accepts_out = False
        fused[position] = one  # (at the new state's ADD: every input of the cell exists there)
        taken |= cell.positions
    if fused:
        plan.steps[:] = [fused.get(position, step) for position, step in enumerate(steps)
                         if position not in taken or position in fused]
        _chain_cells(plan)
    return len(fused)


def _chain_cells(plan) -> None:
    """Consecutive fused cells of one recurrence as one step (module doc)."""
    steps = plan.steps
    cells = [i for i, s in enumerate(steps) if s.fn is gru_cell]
    by_state = {steps[i].inputs[3]: i for i in cells}  # a cell by the previous state it reads
    heads = [i for i in cells if not any(steps[i].inputs[3] in steps[j].outputs for j in cells)]
    replaced: dict[int, object] = {}
    gone: set[int] = set()
    for head in heads:
        chain = [head]
        while True:
            nxt = by_state.get(steps[chain[-1]].outputs[0])
            if nxt is None or not _same_weights(steps[chain[-1]], steps[nxt]) or nxt <= chain[-1]:
                break
            chain.append(nxt)
        if len(chain) < 2:
            continue
        states = {steps[i].outputs[0] for i in chain}
        members = set(chain)
        if any(t in states for i in range(chain[0], chain[-1]) if i not in members for t in steps[i].inputs):
            continue  # (a state read before the chain's last cell: the chain cannot run as one step there)
        first = steps[chain[0]]
        group = [steps[i] for i in chain]
        rows = _projection_rows(plan, steps, [steps[i].inputs[:3] for i in chain])
        if rows is not None:  # the gate inputs are rows of three projections: read in place
            projections, start, stride = rows
            one = merged(first, gru_chain_rows, dict(first.kwargs, start=start, stride=stride, count=len(chain)), 0,
                         (first.inputs[3],) + projections, group, 0, tuple(t for s in group for t in s.release))
        else:
            inputs = (first.inputs[3],) + tuple(t for i in chain for t in steps[i].inputs[:3])
            one = merged(first, gru_chain, dict(first.kwargs), 0, inputs, group, 0,
                         tuple(t for s in group for t in s.release))
        one.outputs = tuple(steps[i].outputs[0] for i in chain)
        one.checks = tuple(c for s in group for c in s.checks)
        one.op = first.op
        one.label = f"{first.label.split(' (+')[0]} (+ {len(one.group) - 1} steps: {len(chain)} GRU time steps)"
        one.accepts_out = False
        replaced[chain[-1]] = one
        gone.update(chain[:-1])
    if replaced:
        plan.steps[:] = [replaced.get(i, s) for i, s in enumerate(steps) if i not in gone]


def _projection_rows(plan, steps, gate_inputs):
    """((pz, pr, ph), start, stride) when each gate's inputs along the chain are consecutive outputs (one index
    apart, either way) of one UNSTACK along axis 0 of a static float32 projection -- the importer's form -- else
    None."""
    producer = {t: (s, k) for s in steps if s.op == _OP.OH_NN_OPS_UNSTACK for k, t in enumerate(s.outputs)}
    projections, starts, strides = [], set(), set()
    for g in range(3):
        found = [producer.get(inputs[g]) for inputs in gate_inputs]
        if any(f is None for f in found) or len({id(s) for s, _ in found}) != 1:
            return None
        unstack = found[0][0]
        axis = unstack.kwargs.get("axis")
        source = unstack.inputs[0]
        if not isinstance(axis, (int, np.integer)) or int(axis) != 0 or plan.static[source] is None \
                or plan.compute_dtype[source] != FLOAT32:
            return None
        indices = [k for _, k in found]
        stride = indices[1] - indices[0] if len(indices) > 1 else 1
        if stride not in (1, -1) or any(b - a != stride for a, b in zip(indices, indices[1:])):
            return None
        projections.append(source)
        starts.add(indices[0])
        strides.add(stride)
    if len(starts) != 1 or len(strides) != 1:
        return None
    return tuple(projections), starts.pop(), strides.pop()


def _same_weights(a, b) -> bool:
    same = all(a.kwargs[k] is b.kwargs[k] or np.array_equal(a.kwargs[k], b.kwargs[k]) for k in ("rz", "rr", "rh", "bh"))
    return same and a.kwargs["linear_before_reset"] == b.kwargs["linear_before_reset"]


def _match(plan, steps, produced_at, readers, outputs, position):
    """The GRU cell whose new state the ADD at ``position`` writes, or None."""
    cell = _Cell()
    shape = plan.static[steps[position].outputs[0]]
    if shape is None or len(shape) != 2:
        return None

    def producer(tensor, op, arity, inner=True):
        """The step writing ``tensor`` when it is a plain float32 ``op`` of ``arity`` inputs (read only inside the
        cell when ``inner``); its position is taken into the cell."""
        at = produced_at.get(tensor)
        if at is None:
            return None
        s = steps[at]
        if (s.op != op or len(s.inputs) != arity or len(s.outputs) != 1 or not s.plain_candidate() or s.then
                or s.out_view is not None or plan.compute_dtype[s.outputs[0]] != FLOAT32):
            return None
        if op in (_OP.OH_NN_OPS_ADD, _OP.OH_NN_OPS_SUB, _OP.OH_NN_OPS_MUL, _OP.OH_NN_OPS_MATMUL) \
                and s.ufunc is None:
            return None
        if inner and (tensor in outputs or readers.get(tensor) != 1):
            return None
        cell.positions.add(at)
        return s

    def state(tensor) -> bool:
        return plan.static[tensor] == shape and plan.compute_dtype[tensor] == FLOAT32 and tensor not in plan.constants

    def matrix(tensor):
        value = plan.constants.get(tensor)
        if value is None or value.dtype != FLOAT32 or value.shape != (shape[1], shape[1]):
            return None
        return np.ascontiguousarray(value)

    def gate(tensor, h):
        """``SIGMOID(ADD(x, MATMUL(h, R)))``: (x, R) or None."""
        sig = producer(tensor, _OP.OH_NN_OPS_SIGMOID, 1)
        add = sig and producer(sig.inputs[0], _OP.OH_NN_OPS_ADD, 2)
        if not add:
            return None
        for x, product in (add.inputs, add.inputs[::-1]):
            if not state(x) or x == h:
                continue
            mm = producer(product, _OP.OH_NN_OPS_MATMUL, 2) if produced_at.get(product) is not None else None
            if mm and mm.inputs[0] == h and matrix(mm.inputs[1]) is not None and not _transposed(mm):
                return x, matrix(mm.inputs[1])
            cell.positions.discard(produced_at.get(product))
        return None

    new = producer(steps[position].outputs[0], _OP.OH_NN_OPS_ADD, 2, inner=False)
    if new is None or steps[position].fuse:
        return None
    for c_t, zd_t in (new.inputs, new.inputs[::-1]):
        zd = producer(zd_t, _OP.OH_NN_OPS_MUL, 2)
        if zd is None:
            continue
        for z_t, delta_t in (zd.inputs, zd.inputs[::-1]):
            delta = producer(delta_t, _OP.OH_NN_OPS_SUB, 2)
            if delta is None or delta.inputs[1] != c_t:
                cell.positions.discard(produced_at.get(delta_t))
                continue
            h = delta.inputs[0]
            tanh = producer(c_t, _OP.OH_NN_OPS_TANH, 1, inner=False)  # (c is read by SUB and ADD: twice)
            if (tanh is None or readers.get(c_t) != 2 or c_t in outputs or not state(h) or h == c_t
                    or readers.get(tanh.inputs[0]) != 1):
                return None
            found = _candidate(plan, tanh.inputs[0], h, producer, state, matrix, cell)
            z = gate(z_t, h)
            if found is None or z is None:
                return None
            (cell.xh, cell.rh, cell.bh, cell.linear_before_reset, r_t) = found
            r = gate(r_t, h)
            if r is None:
                return None
            cell.xz, cell.rz = z
            cell.xr, cell.rr = r
            cell.h = h
            return cell
    return None


def _candidate(plan, tensor, h, producer, state, matrix, cell):
    """``ADD(xh, n)`` with ``n`` one of the module doc's forms: (xh, Rh, bh, linear_before_reset, r tensor)."""
    add = producer(tensor, _OP.OH_NN_OPS_ADD, 2)
    if add is None:
        return None
    hidden = plan.static[h][1]
    for xh, n_t in (add.inputs, add.inputs[::-1]):
        if not state(xh) or xh == h:
            continue
        mul = producer(n_t, _OP.OH_NN_OPS_MUL, 2)
        if mul is not None:  # linear_before_reset: r * (h Rh [+ bh])
            for r_t, inner_t in (mul.inputs, mul.inputs[::-1]):
                bias = np.zeros(hidden, FLOAT32)
                product_t = inner_t
                badd = producer(inner_t, _OP.OH_NN_OPS_ADD, 2) if _is_op(plan, inner_t, _OP.OH_NN_OPS_ADD) else None
                if badd is not None:
                    constants = [t for t in badd.inputs if t in plan.constants]
                    others = [t for t in badd.inputs if t not in plan.constants]
                    value = plan.constants.get(constants[0]) if len(constants) == 1 else None
                    if value is None or value.dtype != FLOAT32 or value.size != hidden or len(others) != 1:
                        return None
                    bias = np.ascontiguousarray(value.reshape(-1))
                    product_t = others[0]
                mm = producer(product_t, _OP.OH_NN_OPS_MATMUL, 2) if _is_op(plan, product_t,
                                                                              _OP.OH_NN_OPS_MATMUL) else None
                if mm is not None and mm.inputs[0] == h and matrix(mm.inputs[1]) is not None and not _transposed(mm):
                    return xh, matrix(mm.inputs[1]), bias, True, r_t
            return None
        mm = producer(n_t, _OP.OH_NN_OPS_MATMUL, 2)
        if mm is not None and matrix(mm.inputs[1]) is not None and not _transposed(mm):  # (r * h) Rh
            rh = producer(mm.inputs[0], _OP.OH_NN_OPS_MUL, 2)
            if rh is not None and h in rh.inputs:
                r_t = rh.inputs[1] if rh.inputs[0] == h else rh.inputs[0]
                return xh, matrix(mm.inputs[1]), np.zeros(hidden, FLOAT32), False, r_t
        return None
    return None


def _is_op(plan, tensor, op) -> bool:
    return any(tensor in s.outputs and s.op == op for s in plan.steps)


def _transposed(step) -> bool:
    return bool(step.kwargs.get("transpose_a") or step.kwargs.get("transpose_b"))


__all__ = ["fuse_gru_cells"]
