"""Converters of the control family: If, Loop and Scan. NNRt has no control flow, so each is specialised away:

* **If** whose condition folds to a constant (once the user's inputs are pinned or bound) is replaced by the taken
  branch, converted inline through the normal machinery (nested subgraphs, outer-scope names); the branch's outputs
  become the If's outputs. A condition computed from the model's data (or dynamic dims) converts both branches and
  picks each output with WHERE, when both are free of side effects and agree in dtype and shape.
* **Loop** with a constant trip count (or a constant initial condition) and an exit condition that folds to a
  constant in every iteration is unrolled: the body is converted once per iteration with the iteration number, the
  condition and the loop-carried values bound; scan outputs are stacked along a new first axis.
* **Scan** is unrolled over the static length of its scan inputs (each sliced with UNSTACK, reversed when its
  direction says so); scan outputs are stacked along their output axes. Opset 8's batch axis is unrolled too.

Unrolling stops at :data:`MAX_ITERATIONS` iterations and :data:`MAX_UNROLLED_NODES` body nodes in all: a longer
loop is reported, with its length.
"""
from __future__ import annotations

import numpy as np
import onnx

from ...enums import OH_NN_OperationType as OP
from ...ir.issues import (
    DYNAMIC_SHAPE,
    INVALID_MODEL,
    NEEDS_CONSTANT,
    UNSUPPORTED_ATTRIBUTE,
    UNSUPPORTED_OP,
    ConversionIssue,
)
from ..context import NodeContext
from ..diagnosis import input_dependencies
from ..subgraph import SEPARATOR, defined_names, subgraphs
from . import converts

MAX_ITERATIONS = 64
MAX_UNROLLED_NODES = 8192


def _node_count(graph: onnx.GraphProto) -> int:
    return sum(1 + sum(_node_count(g) for g in subgraphs(node)) for node in graph.node)


def _check_budget(ctx: NodeContext, body: onnx.GraphProto, iterations: int, what: str) -> None:
    if iterations > MAX_ITERATIONS:
        raise ConversionIssue(UNSUPPORTED_OP, f"{what} runs {iterations} iterations: NNRt has no loops, and unrolling "
                                              f"stops at {MAX_ITERATIONS}")
    nodes = _node_count(body) * iterations
    if nodes > MAX_UNROLLED_NODES:
        raise ConversionIssue(UNSUPPORTED_OP, f"{what} unrolled would be {nodes} nodes ({iterations} iterations of "
                                              f"{_node_count(body)}): more than the {MAX_UNROLLED_NODES} unrolling allows")


def _constant_scalar(ctx: NodeContext, position: int, what: str) -> np.generic:
    """The one value of a constant input, or NEEDS_CONSTANT naming the ONNX tensor (the importer adds what the user
    can bind or pin)."""
    name = ctx.node.input[position]
    value = ctx.input_value(position)
    if value.data is None:
        raise ConversionIssue(NEEDS_CONSTANT, f"{what} ({name!r}) must fold to a constant: NNRt has no control flow",
                              tensor=name)
    if value.data.size != 1:
        raise ConversionIssue(INVALID_MODEL, f"{what} ({name!r}) must hold one value, got shape "
                                             f"{list(value.data.shape)}")
    return value.data.reshape(-1)[0]


def _bind_outputs(ctx: NodeContext, outputs, sources) -> None:
    """The node's outputs mean ``sources`` (None: not converted, the inner problem is reported already); they keep
    their ONNX names in the model."""
    for output, source in zip(outputs, sources):
        if output and source is not None:
            ctx.adopt(source, output)


def _stack(ctx: NodeContext, pieces: list[str], axis: int, output: str) -> None:
    """``output`` = the pieces stacked along ``axis`` (a new dim)."""
    pieces = [ctx.graph.resolve(p) for p in pieces]  # (a piece may have been renamed to an output meanwhile)
    first = ctx.value(pieces[0])
    rank = None if first.shape is None else len(first.shape) + 1
    if rank is not None and not -rank <= axis < rank:
        raise ConversionIssue(INVALID_MODEL, f"output axis {axis} is out of range for rank {rank}")
    ctx.settle(output, None, first.dtype)
    axis = axis if axis >= 0 else axis + rank
    if len(pieces) == 1:  # (STACK takes two inputs or more)
        ctx.emit(OP.OH_NN_OPS_UNSQUEEZE, pieces, [output], {"OH_NN_UNSQUEEZE_AXIS": axis})
    else:
        ctx.emit(OP.OH_NN_OPS_STACK, pieces, [output], {"OH_NN_STACK_AXIS": axis})


def _unstack(ctx: NodeContext, name: str, axis: int, hint: str) -> list[str]:
    """The slices of ``name`` along ``axis`` (its static length), in order."""
    value = ctx.value(name)
    shape = value.shape
    if shape is None:
        raise ConversionIssue(INVALID_MODEL, f"the rank of scan input {name!r} is unknown")
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis < len(shape):
        raise ConversionIssue(INVALID_MODEL, f"scan axis {axis} is out of range for {name!r} of rank {len(shape)}")
    length = shape[axis]
    piece = tuple(d for i, d in enumerate(shape) if i != axis)
    outputs = [ctx.new_value(value.dtype, piece, f"{hint}.{t}") for t in range(length)]
    if length == 1:
        ctx.emit(OP.OH_NN_OPS_SQUEEZE, [name], outputs, {"OH_NN_SQUEEZE_AXIS": [axis]})
    else:
        ctx.emit(OP.OH_NN_OPS_UNSTACK, [name], outputs, {"OH_NN_UNSTACK_AXIS": axis})
    return outputs


# -- If ----------------------------------------------------------------------------------------------------------------

@converts("If")
def if_(ctx: NodeContext) -> None:
    """The taken branch when the condition folds. Else, when it depends on the model's data (or on dynamic dims),
    both branches are converted and WHERE picks each output: both must be free of side effects and give outputs of
    the same dtype and shape. A condition read from a scalar model input (a switch such as a sample rate) is a
    choice the user makes once: bind it."""
    then_branch, else_branch = ctx.subgraph("then_branch"), ctx.subgraph("else_branch")
    for branch, which in ((then_branch, "then"), (else_branch, "else")):
        if len(branch.output) != len(ctx.node.output):
            raise ConversionIssue(INVALID_MODEL, f"the {which} branch has {len(branch.output)} outputs, the If "
                                                 f"{len(ctx.node.output)}")
    if ctx.input_value(0).data is not None or _switches_only(ctx):
        taken = bool(_constant_scalar(ctx, 0, "the If condition"))  # (NEEDS_CONSTANT with the bind hint when not)
        branch = then_branch if taken else else_branch
        sources = ctx.inline(branch, {}, "then_branch" if taken else "else_branch")
        _bind_outputs(ctx, ctx.node.output, sources)
        return
    _select_branches(ctx, then_branch, else_branch)


# random sampling: evaluating the branch that is not taken would draw numbers the model does not draw
_NOT_SIDE_EFFECT_FREE = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli",
                         "Multinomial"}


def _condition_inputs(ctx: NodeContext) -> tuple[list[str], list[str]]:
    """(scalar model inputs whose values reach the condition: switches, the other model inputs it depends on)."""
    conversion = ctx.conversion
    if conversion is None:
        return [], []
    by_value, by_shape = input_dependencies([ctx.node.input[0]], conversion.producers, conversion.inputs)
    switches = [n for n in by_value if conversion.inputs[n].dims is not None
                and all(d >= 0 for d in conversion.inputs[n].dims) and int(np.prod(conversion.inputs[n].dims)) <= 1]
    return switches, [n for n in by_value + by_shape if n not in switches]


def _switches_only(ctx: NodeContext) -> bool:
    switches, others = _condition_inputs(ctx)
    return bool(switches) and not others


def _switch_advice(ctx: NodeContext) -> str:
    switches, _ = _condition_inputs(ctx)
    return "".join(f"; or bind input {n!r} with --constant-input {n}=VALUE (or FILE) to keep one branch"
                   for n in switches)


def _side_effects(graph: onnx.GraphProto) -> list[str]:
    found = [f"{n.name or n.output[0] if n.output else n.op_type} ({n.op_type})" for n in graph.node
             if n.op_type in _NOT_SIDE_EFFECT_FREE]
    for n in graph.node:
        for nested in subgraphs(n):
            found += _side_effects(nested)
    return found


def _dims(ctx: NodeContext, branch: onnx.GraphProto, output: onnx.ValueInfoProto, where: str, source: str):
    """The dims of a branch output: known sizes, else the name of the dynamic dim (its dim_param)."""
    name = f"{ctx.name}.{where}{SEPARATOR}{output.name}" if output.name in defined_names(branch) else output.name
    reader = ctx.shape_values()
    if ctx.value(source).shape is None or reader is None:
        return None
    dims = []
    for axis, d in enumerate(ctx.value(source).shape):
        symbol = d if d >= 0 else reader.dim(name, axis)
        dims.append(symbol if d >= 0 or "#" not in str(symbol) else None)  # (None: an unnamed dynamic dim)
    return dims


def _select_branches(ctx: NodeContext, then_branch: onnx.GraphProto, else_branch: onnx.GraphProto) -> None:
    cond_name = ctx.node.input[0]
    for branch, which in ((then_branch, "then"), (else_branch, "else")):
        effects = _side_effects(branch)
        if effects:
            raise ConversionIssue(UNSUPPORTED_OP, f"the If condition ({cond_name!r}) depends on data and the {which} "
                                                  f"branch is not free of side effects ({', '.join(effects[:3])}): "
                                                  f"NNRt has no control flow, and evaluating both branches would draw "
                                                  f"what the model does not" + _switch_advice(ctx), tensor=cond_name)
    then_sources = ctx.inline(then_branch, {}, "then_branch")
    else_sources = ctx.inline(else_branch, {}, "else_branch")
    if any(s is None for s in then_sources + else_sources):
        return  # a branch node could not be converted: reported inside
    cond = ctx.input(0)
    cond_value = ctx.value(cond)
    if cond_value.dtype != np.bool_ or (cond_value.shape is not None and int(np.prod(cond_value.shape)) != 1):
        raise ConversionIssue(INVALID_MODEL, f"the If condition {cond_name!r} must be one bool, got "
                                             f"{cond_value.dtype} of shape {cond_value.shape}", tensor=cond_name)
    for position, (output, a, b) in enumerate(zip(ctx.node.output, then_sources, else_sources)):
        va, vb = ctx.value(a), ctx.value(b)
        da = _dims(ctx, then_branch, then_branch.output[position], "then_branch", a)
        db = _dims(ctx, else_branch, else_branch.output[position], "else_branch", b)
        if va.dtype != vb.dtype or da is None or da != db or None in da:
            shown = [["?" if d is None else d for d in dims] if dims is not None else "unknown rank"
                     for dims in (da, db)]
            raise ConversionIssue(UNSUPPORTED_OP, f"the If condition ({cond_name!r}) depends on data and the branches' "
                                                  f"output #{position} differ (then {va.dtype} {shown[0]}, else "
                                                  f"{vb.dtype} {shown[1]}): NNRt has no control flow, and a WHERE of "
                                                  f"both branches needs outputs of one dtype and shape"
                                  + _switch_advice(ctx), tensor=cond_name)
    rank_cond: dict[int, str] = {}
    for output, a, b in zip(ctx.node.output, then_sources, else_sources):
        if not output:
            continue
        a, b = ctx.graph.resolve(a), ctx.graph.resolve(b)
        if a == b:
            ctx.adopt(a, output)
            continue
        rank = len(ctx.value(a).shape)
        if rank not in rank_cond:  # the one-value condition with the output's rank (numpy broadcasting)
            rank_cond[rank] = ctx.reshape(cond, [1] * rank) if rank else _scalar_of(ctx, cond)
        ctx.settle(output, ctx.value(a).shape, ctx.value(a).dtype)
        ctx.emit(OP.OH_NN_OPS_WHERE, [rank_cond[rank], a, b], [output])


def _scalar_of(ctx: NodeContext, name: str) -> str:
    if ctx.value(name).shape == ():
        return name
    return ctx.emit_to(OP.OH_NN_OPS_SQUEEZE, [name], ctx.value(name).dtype, (), f"{name}.scalar")


# -- Loop --------------------------------------------------------------------------------------------------------------

@converts("Loop")
def loop(ctx: NodeContext) -> None:
    body = ctx.subgraph("body")
    carried = [ctx.input(2 + i) for i in range(len(ctx.node.input) - 2)]
    n = len(carried)
    if len(body.input) != n + 2 or len(body.output) < n + 1:
        raise ConversionIssue(INVALID_MODEL, f"the body has {len(body.input)} inputs and {len(body.output)} outputs "
                                             f"for {n} loop-carried values")
    scans = [[] for _ in range(len(body.output) - 1 - n)]
    trip = int(_constant_scalar(ctx, 0, "the trip count")) if ctx.has_input(0) else None
    cond = bool(_constant_scalar(ctx, 1, "the initial loop condition")) if ctx.has_input(1) else True
    if trip is not None:
        _check_budget(ctx, body, max(trip, 0) if cond else 0, "the Loop")
    iteration = 0
    while cond and (trip is None or iteration < trip):
        if iteration >= MAX_ITERATIONS:
            raise ConversionIssue(UNSUPPORTED_OP, f"the Loop has no trip count and its condition still holds after "
                                                  f"{MAX_ITERATIONS} iterations: unrolling stops there")
        bindings = {body.input[0].name: ctx.constant(np.asarray(iteration, np.int64), f"{ctx.name}.i"),
                    body.input[1].name: ctx.constant(np.asarray(cond), f"{ctx.name}.cond")}
        bindings.update({formal.name: actual for formal, actual in zip(body.input[2:], carried)})
        outputs = ctx.inline(body, bindings, f"iteration{iteration}", use_shapes=False)
        if any(o is None for o in outputs):
            return  # a body node could not be converted: reported inside
        cond_value = ctx.value(outputs[0])
        if cond_value.data is None:
            raise ConversionIssue(NEEDS_CONSTANT, f"the loop condition computed by the body ({body.output[0].name!r}) "
                                                  f"depends on data (iteration {iteration}): NNRt has no loops, a "
                                                  f"Loop unrolls only when its exit is known", tensor=outputs[0])
        cond = bool(cond_value.data.reshape(-1)[0])
        carried = outputs[1:1 + n]
        for k, piece in enumerate(outputs[1 + n:]):
            scans[k].append(piece)
        iteration += 1
    _bind_outputs(ctx, ctx.node.output[:n], carried)
    for output, pieces in zip(ctx.node.output[n:], scans):
        if not output:
            continue
        if not pieces:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"the Loop runs 0 iterations: its scan output {output!r} "
                                                         f"would be empty (NNRt tensors cannot be)")
        _stack(ctx, pieces, 0, output)


# -- Scan --------------------------------------------------------------------------------------------------------------

def _ints_attribute(ctx: NodeContext, name: str, count: int, default: int = 0) -> list[int]:
    values = ctx.attr(name)
    if values is None:
        return [default] * count
    values = [int(v) for v in values]
    if len(values) != count:
        raise ConversionIssue(INVALID_MODEL, f"{name}={values} needs {count} values")
    return values


def _scan_steps(ctx: NodeContext, body, states: list[str], scan_inputs: list[str], axes: list[int],
                directions: list[int], where: str) -> tuple[list[str], list[list[str]]] | None:
    """Run the body over the scan inputs' steps: (final states, per scan output its value at every step, in step
    order); None when a body node could not be converted (reported inside)."""
    n = len(states)
    lengths = set()
    for name, axis in zip(scan_inputs, axes):
        shape = ctx.value(name).shape
        if shape is None or not -len(shape) <= axis < len(shape) or shape[axis] < 0:
            raise ConversionIssue(DYNAMIC_SHAPE, f"the length of scan input {name!r} along axis {axis} is unknown "
                                                 f"(shape {shape}): unrolling needs it static", tensor=name)
        lengths.add(shape[axis])
    if len(lengths) != 1:
        raise ConversionIssue(INVALID_MODEL, f"scan inputs of different lengths {sorted(lengths)}")
    length = lengths.pop()
    _check_budget(ctx, body, length, "the Scan")
    slices = []
    for position, (name, axis, direction) in enumerate(zip(scan_inputs, axes, directions)):
        pieces = _unstack(ctx, name, axis, f"{ctx.name}.{where}.in{position}")
        slices.append(pieces[::-1] if direction else pieces)
    per_step: list[list[str]] = [[] for _ in range(len(body.output) - n)]
    for step in range(length):
        bindings = {formal.name: actual for formal, actual in zip(body.input, states + [s[step] for s in slices])}
        outputs = ctx.inline(body, bindings, f"{where}step{step}", use_shapes=False)
        if any(o is None for o in outputs):
            return None
        states = outputs[:n]
        for k, piece in enumerate(outputs[n:]):
            per_step[k].append(piece)
    return states, per_step


@converts("Scan")
def scan(ctx: NodeContext) -> None:
    body = ctx.subgraph("body")
    m = int(ctx.attr("num_scan_inputs"))
    if ctx.opset < 9:
        _scan_with_batch(ctx, body, m)
        return
    inputs = [ctx.input(i) for i in range(len(ctx.node.input))]
    n = len(inputs) - m
    k = len(ctx.node.output) - n
    if n < 0 or len(body.input) != n + m or len(body.output) != n + k:
        raise ConversionIssue(INVALID_MODEL, f"the body's {len(body.input)} inputs / {len(body.output)} outputs do not "
                                             f"match {n} states and {m} scan inputs")
    in_axes = _ints_attribute(ctx, "scan_input_axes", m)
    in_directions = _ints_attribute(ctx, "scan_input_directions", m)
    out_axes = _ints_attribute(ctx, "scan_output_axes", k)
    out_directions = _ints_attribute(ctx, "scan_output_directions", k)
    done = _scan_steps(ctx, body, inputs[:n], inputs[n:], in_axes, in_directions, "")
    if done is None:
        return
    states, per_step = done
    _bind_outputs(ctx, ctx.node.output[:n], states)
    for output, pieces, axis, direction in zip(ctx.node.output[n:], per_step, out_axes, out_directions):
        if output:
            _stack(ctx, pieces[::-1] if direction else pieces, axis, output)


def _scan_with_batch(ctx: NodeContext, body, m: int) -> None:
    """Scan-8: a batch axis 0 on every state and scan input (time is axis 1), an optional sequence_lens first."""
    inputs = [ctx.input(i) if ctx.has_input(i) else None for i in range(len(ctx.node.input))]
    n = len(inputs) - 1 - m
    k = len(ctx.node.output) - n
    if n < 0 or len(body.input) != n + m or len(body.output) != n + k:
        raise ConversionIssue(INVALID_MODEL, f"the body's {len(body.input)} inputs / {len(body.output)} outputs do not "
                                             f"match {n} states and {m} scan inputs")
    directions = _ints_attribute(ctx, "directions", m)
    states, scan_inputs = inputs[1:1 + n], inputs[1 + n:]
    batch = ctx.value(scan_inputs[0]).shape[0] if ctx.value(scan_inputs[0]).shape else -1
    if batch < 0:
        raise ConversionIssue(DYNAMIC_SHAPE, "the batch size of the scan inputs is unknown: unrolling needs it static",
                              tensor=scan_inputs[0])
    for name in [*states, *scan_inputs]:  # every state and scan input carries the batch on axis 0
        shape = ctx.value(name).shape if name is not None else None
        if shape and shape[0] < 0:
            raise ConversionIssue(DYNAMIC_SHAPE, f"the batch dim of {name!r} is unknown: unrolling needs it static",
                                  tensor=name)
        if not shape or shape[0] != batch:
            raise ConversionIssue(INVALID_MODEL, f"{name!r} of shape {list(shape or [])} does not have the batch "
                                                 f"size {batch} on axis 0", tensor=name)
    if inputs[0] is not None:
        lens = ctx.constant_input(0, "sequence_lens").reshape(-1)
        full = ctx.value(scan_inputs[0]).shape[1]
        if any(int(v) != full for v in lens):
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"sequence_lens {lens.tolist()} shorter than the scan length "
                                                         f"{full} are not supported")
    per_batch_states = [_unstack(ctx, s, 0, f"{ctx.name}.state{i}") for i, s in enumerate(states)]
    per_batch_inputs = [_unstack(ctx, s, 0, f"{ctx.name}.input{i}") for i, s in enumerate(scan_inputs)]
    final: list[list[str]] = [[] for _ in range(n)]
    stacked: list[list[str]] = [[] for _ in range(k)]
    for b in range(batch):
        done = _scan_steps(ctx, body, [s[b] for s in per_batch_states], [s[b] for s in per_batch_inputs],
                           [0] * m, directions, f"batch{b}")
        if done is None:
            return
        for i, state in enumerate(done[0]):
            final[i].append(state)
        for j, pieces in enumerate(done[1]):
            stacked[j].append(ctx.new_value(ctx.value(pieces[0]).dtype, None, f"{ctx.name}.out{j}.batch{b}"))
            _stack(ctx, pieces, 0, stacked[j][-1])
    for output, pieces in zip(ctx.node.output, final + stacked):
        if output:
            _stack(ctx, pieces, 0, output)
