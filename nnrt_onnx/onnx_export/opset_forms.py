"""The older forms of ONNX nodes, for exports to an opset before the form the export functions write.

The export functions write each node in its newest form (opset 18: reduction axes as an input, Split's
``num_outputs``, ScatterND's ``reduction``). ``lower`` rewrites one NNRt op's nodes -- of the main graph or of
its function body -- into the forms of the target opset, with the same results:

* Reduce{Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare} before 18: constant axes become the ``axes``
  attribute. Run-time axes: ReduceMean, ReduceL2, ReduceSumSquare and ReduceL1 as ReduceSum (which takes its axes
  as an input since 13) and plain arithmetic; ReduceMax/Min/Prod dim by dim, each dim named in the axes reduced
  through a rank-3 view ``[before, dim, after]`` (a Loop over the dims, an If per dim), the reduced dims squeezed
  after unless ``keepdims``.
* ScatterND with a ``reduction`` before 16 (max/min before 18): a Loop applying the index rows one at a time, as
  onnxruntime applies them (each row reads what the rows before it wrote).
* LayerNormalization (17) has no older form: its export function decomposes it (mean, variance) before 17.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper

from .context import ExportIssue

_AXES_INPUT_SINCE_18 = frozenset({"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                                  "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
_SCATTER_COMBINE = {"add": "Add", "mul": "Mul", "max": "Max", "min": "Min"}
_INT64_MAX = np.iinfo(np.int64).max


class _Writer:
    """Nodes written in order, with fresh names from the export's naming (``fresh(hint)``)."""

    def __init__(self, fresh: Callable[[str], str]):
        self.fresh = fresh
        self.nodes: list[NodeProto] = []

    def one(self, op_type: str, inputs, output: str | None = None, **attrs) -> str:
        output = output or self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], **attrs))
        return output

    def const(self, array) -> str:
        return self.one("Constant", [], value=numpy_helper.from_array(np.asarray(array)))

    def i64(self, values) -> str:
        return self.const(np.asarray(values, np.int64))


def lower(nodes: list[NodeProto], opset: int, constant: Callable[[str], np.ndarray | None],
          fresh: Callable[[str], str]) -> list[NodeProto]:
    """``nodes`` in the forms of ``opset`` (the same names in and out; new inner names from ``fresh``).
    ``constant(name)`` is the value of a constant tensor (an initializer or a Constant node), else None."""
    if opset >= 18:
        return nodes
    known = dict(_constants_of(nodes))
    lookup = lambda name: known[name] if name in known else constant(name)  # noqa: E731
    out: list[NodeProto] = []
    for node in nodes:
        _lower_subgraphs(node, opset, lookup, fresh)
        if node.op_type in _AXES_INPUT_SINCE_18 and node.domain in ("", "ai.onnx") and len(node.input) > 1:
            out.extend(_reduce_before_18(node, lookup, fresh))
        elif node.op_type == "ScatterND" and node.domain in ("", "ai.onnx") and _reduction(node) != "none" \
                and opset < (16 if _reduction(node) in ("add", "mul") else 18):
            out.extend(_scatter_nd_one_row_at_a_time(node, fresh))
        elif node.op_type == "Split" and any(a.name == "num_outputs" for a in node.attribute):
            raise ExportIssue(f"Split with num_outputs needs opset 18 (the export asked for {opset})")
        else:
            out.append(node)
    return out


def _lower_subgraphs(node: NodeProto, opset: int, constant, fresh) -> None:
    """The bodies of If / Loop / Scan in the same forms (they see the constants of the scopes around them)."""
    for a in node.attribute:
        graphs = [a.g] if a.HasField("g") else list(a.graphs)
        for graph in graphs:
            lowered = lower(list(graph.node), opset, constant, fresh)
            del graph.node[:]
            graph.node.extend(lowered)


def _constants_of(nodes):
    for node in nodes:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            yield node.output[0], numpy_helper.to_array(node.attribute[0].t)


def _attr(node: NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _reduction(node: NodeProto) -> str:
    value = _attr(node, "reduction", b"none")
    return value.decode() if isinstance(value, bytes) else str(value)


def _copy_attrs(node: NodeProto, *, drop=()):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name not in drop}


# -- reductions ---------------------------------------------------------------------------------------------------

def _reduce_before_18(node: NodeProto, constant, fresh) -> list[NodeProto]:
    x, axes_name = node.input[0], node.input[1]
    attrs = _copy_attrs(node)
    noop = bool(attrs.pop("noop_with_empty_axes", 0))
    if not axes_name:  # no axes: every dim, the same before 18
        return [helper.make_node(node.op_type, [x], list(node.output), name=node.name, **attrs)]
    axes = constant(axes_name)
    if axes is not None:
        axes = [int(a) for a in np.asarray(axes).reshape(-1)]
        if not axes and noop:
            return [helper.make_node("Identity", [x], list(node.output), name=node.name)]
        lowered = helper.make_node(node.op_type, [x], list(node.output), name=node.name,
                                   **({"axes": axes} if axes else {}), **attrs)
        lowered.metadata_props.extend(node.metadata_props)
        return [lowered]
    if noop:
        raise ExportIssue(f"{node.op_type} with run-time axes and noop_with_empty_axes needs opset 18")
    w = _Writer(fresh)
    keep = int(attrs.get("keepdims", 1))
    y = node.output[0]
    if node.op_type in ("ReduceMean", "ReduceL2", "ReduceL1", "ReduceSumSquare"):
        _reduce_through_sum(w, node.op_type, x, axes_name, keep, y)
    elif node.op_type in ("ReduceMax", "ReduceMin", "ReduceProd"):
        _reduce_dim_by_dim(w, node.op_type, x, axes_name, keep, y)
    else:
        raise ExportIssue(f"{node.op_type} with run-time axes needs opset 18")
    return w.nodes


def _reduce_through_sum(w: _Writer, op_type: str, x: str, axes: str, keep: int, y: str) -> None:
    """Mean = sum / count (the count: the input's size over the result's); L2 = sqrt(sum(x^2)), L1 = sum(|x|),
    SumSquare = sum(x^2)."""
    if op_type == "ReduceMean":  # (the count in x's type: a sum of x^0, which is 1 for every x, NaN and inf too)
        ones = w.one("Pow", [x, w.i64(0)])
        w.one("Div", [w.one("ReduceSum", [x, axes], keepdims=keep), w.one("ReduceSum", [ones, axes], keepdims=keep)],
              y)
        return
    term = w.one("Abs", [x]) if op_type == "ReduceL1" else w.one("Mul", [x, x])
    if op_type == "ReduceL2":
        w.one("Sqrt", [w.one("ReduceSum", [term, axes], keepdims=keep)], y)
    else:
        w.one("ReduceSum", [term, axes], y, keepdims=keep)


def _reduce_dim_by_dim(w: _Writer, op_type: str, x: str, axes: str, keep: int, y: str) -> None:
    """ReduceMax/Min/Prod over run-time axes: a Loop over the dims d = 0..rank-1 carrying the tensor; where d is
    one of the axes (or the axes are empty: every dim), an If reduces it through the rank-3 view [before, d, after]
    (keepdims), else passes the tensor on. Then the reduced dims are squeezed unless keepdims."""
    shape = w.one("Shape", [x])
    rank = w.one("Size", [shape])
    normalized = w.one("Mod", [w.one("Add", [w.one("Cast", [axes], to=TensorProto.INT64), rank]), rank])
    empty = w.one("Equal", [w.one("Size", [normalized]), w.i64(0)])

    d, cond_in, carried = w.fresh("dim"), w.fresh("cond_in"), w.fresh("carried")
    body = _Writer(w.fresh)
    # d is named in the axes (or the axes are empty: every dim is)
    hits = body.one("Cast", [body.one("Equal", [normalized, d])], to=TensorProto.INT32)
    hit_count = body.one("ReduceSum", [hits, body.i64([0])], keepdims=0)
    named = body.one("Or", [body.one("Greater", [hit_count, body.const(np.asarray(0, np.int32))]), empty])
    # then: [before, dim, after] view, reduced over its middle, and back with dim 1
    then = _Writer(w.fresh)
    now = then.one("Shape", [carried])
    d1 = then.one("Unsqueeze", [d, then.i64([0])])
    before = then.one("ReduceProd", [then.one("Slice", [now, then.i64([0]), d1])], keepdims=1)
    dim = then.one("Slice", [now, d1, then.one("Add", [d1, then.i64([1])])])
    after = then.one("ReduceProd", [then.one("Slice", [now, then.one("Add", [d1, then.i64([1])]),
                                                       then.i64([_INT64_MAX])])], keepdims=1)
    # (ReduceProd of an empty slice is 1: a dim at either end has an empty before/after)
    view = then.one("Reshape", [carried, then.one("Concat", [before, dim, after], axis=0)])
    reduced = then.one(op_type, [view], axes=[1], keepdims=1)
    one = then.i64([1])
    new_shape = then.one("ScatterElements", [now, d1, one], axis=0)
    then_out = then.one("Reshape", [reduced, new_shape])
    otherwise = _Writer(w.fresh)
    else_out = otherwise.one("Identity", [carried])
    step = body.one("If", [named],
                    then_branch=helper.make_graph(then.nodes, "reduce_dim", [], [_any(then_out)]),
                    else_branch=helper.make_graph(otherwise.nodes, "keep_dim", [], [_any(else_out)]))
    cond_out = body.one("Identity", [cond_in])
    out_name = body.one("Identity", [step])
    loop_body = helper.make_graph(
        body.nodes, "reduce_dims",
        [helper.make_tensor_value_info(d, TensorProto.INT64, []), helper.make_tensor_value_info(cond_in,
                                                                                                TensorProto.BOOL, []),
         _any(carried)],
        [helper.make_tensor_value_info(cond_out, TensorProto.BOOL, []), _any(out_name)])
    if keep:
        w.one("Loop", [rank, "", x], y, body=loop_body)
        return
    reduced_all = w.one("Loop", [rank, "", x], body=loop_body)
    every = _Writer(w.fresh)
    every_out = every.one("Range", [every.i64(0), rank, every.i64(1)])
    given = _Writer(w.fresh)
    given_out = given.one("Identity", [normalized])
    squeeze_axes = w.one("If", [empty], then_branch=helper.make_graph(every.nodes, "every_dim", [], [_any(every_out)]),
                         else_branch=helper.make_graph(given.nodes, "given_dims", [], [_any(given_out)]))
    w.one("Squeeze", [reduced_all, squeeze_axes], y)


def _any(name: str):
    """A value info of unknown type and shape (subgraph outputs: onnxruntime infers them)."""
    info = helper.make_value_info(name, helper.make_tensor_type_proto(TensorProto.UNDEFINED, None))
    info.type.ClearField("tensor_type")
    return info


# -- ScatterND with a reduction --------------------------------------------------------------------------------

def _scatter_nd_one_row_at_a_time(node: NodeProto, fresh) -> list[NodeProto]:
    data, indices, updates = node.input[:3]
    combine = _SCATTER_COMBINE[_reduction(node)]
    w = _Writer(fresh)
    k = w.one("Slice", [w.one("Shape", [indices]), w.i64([-1]), w.i64([_INT64_MAX])])
    rows = w.one("Reshape", [indices, w.one("Concat", [w.i64([-1]), k], axis=0)])
    slice_shape = w.one("Slice", [w.one("Shape", [data]), k, w.i64([_INT64_MAX])])
    values = w.one("Reshape", [updates, w.one("Concat", [w.i64([-1]), slice_shape], axis=0)])
    count = w.one("Squeeze", [w.one("Slice", [w.one("Shape", [rows]), w.i64([0]), w.i64([1])]), w.i64([0])])
    i, cond_in, acc = fresh("row"), fresh("cond_in"), fresh("acc")
    body = _Writer(fresh)
    at = body.one("Unsqueeze", [i, body.i64([0])])
    row = body.one("Gather", [rows, at], axis=0)
    value = body.one("Gather", [values, at], axis=0)
    combined = body.one(combine, [body.one("GatherND", [acc, row]), value])
    written = body.one("ScatterND", [acc, row, combined])
    cond_out = body.one("Identity", [cond_in])
    graph = helper.make_graph(body.nodes, "scatter_rows",
                              [helper.make_tensor_value_info(i, TensorProto.INT64, []),
                               helper.make_tensor_value_info(cond_in, TensorProto.BOOL, []), _any(acc)],
                              [helper.make_tensor_value_info(cond_out, TensorProto.BOOL, []), _any(written)])
    w.nodes.append(helper.make_node("Loop", [count, "", data], list(node.output[:1]), name=node.name, body=graph))
    return w.nodes
