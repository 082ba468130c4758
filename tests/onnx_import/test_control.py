"""Import of the control family: If with a condition that folds (the taken branch inline), Loop and Scan unrolled.

Oracle: onnxruntime running the original model (with the bound inputs fed). Each rejection is checked for the
reason code and for what it tells the user to do.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.onnx_import.handlers.control import MAX_ITERATIONS

from .import_support import (
    I64,
    F,
    check_graph,
    const_tensor,
    dynamic_model,
    graph_model,
    ops_of,
    rejects_graph,
    runs_like_onnxruntime,
)

V = helper.make_tensor_value_info
node = helper.make_node


def _branch(name, nodes, outputs, inits=()):
    return helper.make_graph(nodes, name, [], outputs, initializer=list(inits))


# -- If ----------------------------------------------------------------------------------------------------------------

def _rate_model(x_shape=(2, 8)):
    """y = x * 2 + 1 when sr == 16000, else y = x - w (w an initializer of the else branch); the then branch also
    holds a nested If on the rank of x (Shape -> Size == 2), which folds once the rank is known."""
    nested = node("If", ["rank_is_2"], ["scaled"], name="inner_if",
                  then_branch=_branch("nested_then", [node("Mul", ["x", "two"], ["twice"])],
                                      [V("twice", TP.FLOAT, None)]),
                  else_branch=_branch("nested_else", [node("Identity", ["x"], ["same"])],
                                      [V("same", TP.FLOAT, None)]))
    then_branch = _branch("then", [
        node("Shape", ["x"], ["x_shape"]), node("Size", ["x_shape"], ["rank"]),
        node("Equal", ["rank", "two_i"], ["rank_is_2"]), nested,
        node("Add", ["scaled", "one"], ["then_y"])], [V("then_y", TP.FLOAT, None)],
        [const_tensor("one", np.float32(1)), const_tensor("two_i", np.int64(2))])
    else_branch = _branch("else", [node("Sub", ["x", "w"], ["else_y"])], [V("else_y", TP.FLOAT, None)],
                          [const_tensor("w", np.arange(8, dtype=np.float32))])
    nodes = [node("Equal", ["sr", "rate"], ["is_16k"]),
             node("If", ["is_16k"], ["y"], name="rate_if", then_branch=then_branch, else_branch=else_branch)]
    return graph_model(nodes, [V("x", TP.FLOAT, list(x_shape)), V("sr", TP.INT64, [])], [V("y", TP.FLOAT, None)],
                       17, [const_tensor("rate", np.int64(16000)), const_tensor("two", np.float32(2))])


@pytest.mark.parametrize("rate", [16000, 8000])
def test_if_with_a_bound_condition_becomes_its_taken_branch(rate):
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(F)
    model = _rate_model()
    check_graph(model, {"x": x}, constant_inputs={"sr": np.asarray(rate, I64)})
    result = from_onnx(model, constant_inputs={"sr": np.asarray(rate, I64)})
    names = {op.op.name for op in result.model.operations}
    assert names == ({"OH_NN_OPS_MUL", "OH_NN_OPS_ADD"} if rate == 16000 else {"OH_NN_OPS_SUB"})


def test_if_on_an_unbound_input_says_which_input_to_bind():
    with pytest.raises(ConversionError) as info:
        from_onnx(_rate_model())
    (issue,) = info.value.issues
    assert (issue.node, issue.op_type, issue.reason, issue.tensor) == ("rate_if", "If", "needs_constant_input",
                                                                         "is_16k")
    assert "bind input 'sr' with --constant-input sr=" in issue.message


def test_if_on_a_dynamic_dim_folds_once_the_dim_is_pinned_and_selects_when_not():
    """cond = (dim 1 of x == 4): the then branch when x is [1, 4], the else branch for [1, 3]; unpinned, both branches
    run and WHERE picks the one the width asks for, at every width."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "one"], ["d1"], axis=0),
             node("Equal", ["d1", "four"], ["c"]),
             node("If", ["c"], ["y"], name="width_if",
                  then_branch=_branch("t", [node("Relu", ["x"], ["ty"])], [V("ty", TP.FLOAT, None)]),
                  else_branch=_branch("e", [node("Neg", ["x"], ["ey"])], [V("ey", TP.FLOAT, None)]))]
    model = graph_model(nodes, [V("x", TP.FLOAT, [1, "width"])], [V("y", TP.FLOAT, None)], 17,
                        [const_tensor("one", np.int64(1)), const_tensor("four", np.int64(4))])
    feeds = [{"x": np.linspace(-1, 1, width, dtype=F).reshape(1, width)} for width in (4, 3, 5)]
    for feed in feeds:
        check_graph(model, feed, input_shapes={"x": list(feed["x"].shape)})
    assert "OH_NN_OPS_WHERE" in {op.op.name for op in runs_like_onnxruntime(model, feeds).operations}


def test_if_outputs_take_constants_outer_tensors_and_several_values():
    """A branch may return a constant of its own, an outer-scope tensor unchanged, and a computed value."""
    then_branch = _branch("t", [node("Constant", [], ["k"], value=helper.make_tensor("v", TP.FLOAT, [2], [3, 4])),
                                node("Add", ["x", "k"], ["sum"]), node("Identity", ["x"], ["x_t"])],
                          [V("k", TP.FLOAT, None), V("x_t", TP.FLOAT, None), V("sum", TP.FLOAT, None)])
    else_branch = _branch("e", [node("Constant", [], ["k0"], value=helper.make_tensor("v", TP.FLOAT, [2], [0, 0])),
                                node("Sub", ["x", "k0"], ["diff"]), node("Identity", ["x"], ["x_e"])],
                          [V("k0", TP.FLOAT, None), V("diff", TP.FLOAT, None), V("x_e", TP.FLOAT, None)])
    nodes = [node("If", ["flag"], ["a", "b", "c"], then_branch=then_branch, else_branch=else_branch),
             node("Mul", ["a", "b"], ["ab"]), node("Add", ["ab", "c"], ["y"])]
    model = graph_model(nodes, [V("x", TP.FLOAT, [2]), V("flag", TP.BOOL, [])], [V("y", TP.FLOAT, None)], 17)
    x = np.asarray([1.5, -2.0], F)
    for flag in (True, False):
        check_graph(model, {"x": x}, constant_inputs={"flag": np.asarray(flag)})


def test_if_output_can_be_a_model_output_and_keeps_its_name():
    model = _rate_model()
    result = from_onnx(model, constant_inputs={"sr": np.asarray(16000, I64)})
    assert [result.model.tensors[i].name for i in result.model.outputs] == ["y"]


def test_a_problem_inside_a_branch_names_the_inner_node_and_the_branch():
    then_branch = _branch("t", [node("NonZero", ["x"], ["nz"], name="inner_nonzero")], [V("nz", TP.INT64, None)])
    else_branch = _branch("e", [node("Shape", ["x"], ["s"])], [V("s", TP.INT64, None)])
    nodes = [node("If", ["flag"], ["idx"], name="outer_if", then_branch=then_branch, else_branch=else_branch),
             node("Unsqueeze", ["idx", "axes"], ["y"], name="after_if")]
    model = graph_model(nodes, [V("x", TP.FLOAT, [3]), V("flag", TP.BOOL, [])], [V("y", TP.INT64, None)], 17,
                        [const_tensor("axes", np.asarray([0], I64))])
    with pytest.raises(ConversionError) as info:
        from_onnx(model, constant_inputs={"flag": np.asarray(True)})
    first, *rest = info.value.issues
    assert (first.node, first.op_type, first.reason) == ("inner_nonzero", "NonZero", "needs_constant_input")
    assert "inside outer_if.then_branch" in first.message and first.is_root
    assert [(i.node, i.depends_on) for i in rest] == [("after_if", "inner_nonzero")]


# -- If on the model's data: both branches and a WHERE (issue 26) ------------------------------------------------------

def _wake_word_model(else_source="score", else_nodes=None, switch=False):
    """A first small network scores x ([N, 16] -> [N, 1]); when its highest score is >= 0.5 a second network scores
    x again, else the first score is the result. ``switch``: the condition also needs a scalar input 'enabled'."""
    rng = np.random.default_rng(26)
    w1, w2 = rng.standard_normal((16, 1)).astype(F), rng.standard_normal((16, 1)).astype(F)
    then_branch = _branch("second_network", [node("MatMul", ["x", "w2"], ["logit2"]),
                                             node("Sigmoid", ["logit2"], ["score2"])],
                          [V("score2", TP.FLOAT, ["N", 1])], [const_tensor("w2", w2)])
    else_nodes = [node("Identity", [else_source], ["first"])] if else_nodes is None else else_nodes
    else_branch = _branch("first_score", else_nodes, [V("first", TP.FLOAT, None)])
    nodes = [node("MatMul", ["x", "w1"], ["logit"]), node("Sigmoid", ["logit"], ["score"]),
             node("ReduceMax", ["score"], ["best"], keepdims=0), node("GreaterOrEqual", ["best", "half"], ["wake"])]
    inputs = [("x", TP.FLOAT, ["N", 16])]
    if switch:
        nodes.append(node("And", ["wake", "enabled"], ["go"]))
        inputs.append(("enabled", TP.BOOL, []))
    nodes.append(node("If", ["go" if switch else "wake"], ["y"], name="wake_if", then_branch=then_branch,
                      else_branch=else_branch))
    return dynamic_model(nodes, inputs, [("y", TP.FLOAT, ["N", 1])],
                         [("w1", w1), ("half", np.float32(0.5))]), w1


def test_if_on_the_models_data_runs_both_branches_and_selects():
    # the wake-word pattern: a condition from the model's own data (a ReduceMax of its first network's scores) was
    # refused with advice to bind x, the only data input; now WHERE picks the branch at run time
    model, w1 = _wake_word_model()
    direction = np.sign(w1.T).astype(F)  # x along w1 scores high, against it low
    feeds = []
    for n in (1, 2, 3):
        for sign in (1, -1):
            x = np.random.default_rng(n).uniform(0.5, 1.0, (n, 16)).astype(F) * direction * sign
            feeds.append({"x": x})
    from support import ort_run

    outcomes = {bool((1 / (1 + np.exp(-(f["x"] @ w1)))).max() >= 0.5) for f in feeds}
    assert outcomes == {True, False}  # (the feeds take each branch)
    converted = runs_like_onnxruntime(model, feeds)
    assert "OH_NN_OPS_WHERE" in {op.op.name for op in converted.operations}
    assert converted.tensors[converted.inputs[0]].dims[0] == -1
    assert ort_run(model, feeds[0])  # (onnxruntime accepts the model)


def test_if_on_data_with_branches_of_different_shapes_is_refused_without_advice_to_bind_the_data():
    model, _ = _wake_word_model(else_source="best")  # the else branch returns the scalar best score
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    (issue,) = info.value.issues
    assert (issue.node, issue.reason) == ("wake_if", "unsupported_op")
    assert "depends on data" in issue.message and "output #0 differ" in issue.message
    assert "--constant-input" not in issue.message


def test_if_on_data_and_a_scalar_switch_suggests_binding_the_switch_only():
    model, _ = _wake_word_model(else_source="best", switch=True)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    (issue,) = info.value.issues
    assert "bind input 'enabled' with --constant-input enabled=" in issue.message
    assert "input 'x' with" not in issue.message


def test_if_on_data_with_a_branch_drawing_random_numbers_is_refused():
    model, _ = _wake_word_model(else_nodes=[node("RandomUniformLike", ["score"], ["first"])])
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    issue = next(i for i in info.value.issues if i.node == "wake_if")
    assert issue.reason == "unsupported_op" and "not free of side effects" in issue.message


# -- Loop --------------------------------------------------------------------------------------------------------------

def _loop_model(trip_count_input=False, body_cond=None, opset=17):
    """acc_{i+1} = acc_i * 0.5 + x[i] (a row of x per iteration), and the scan output acc_{i+1} + i.

    ``body_cond``: 'iteration' (cond = i < 1: stops after 2 iterations), 'data' (cond = sum(acc) > 0) or None
    (passes the condition through)."""
    body_nodes = [node("Unsqueeze", ["i", "zero"], ["i1"]), node("Add", ["i1", "one"], ["i_end"]),
                  node("Slice", ["x", "i1", "i_end", "zero"], ["row"]), node("Squeeze", ["row", "zero"], ["row0"]),
                  node("Mul", ["acc", "half"], ["decayed"]), node("Add", ["decayed", "row0"], ["acc_out"]),
                  node("Cast", ["i"], ["i_f"], to=TP.FLOAT), node("Add", ["acc_out", "i_f"], ["scan_out"])]
    if body_cond == "iteration":
        body_nodes.append(node("Less", ["i", "one_scalar"], ["cond_out"]))
    elif body_cond == "data":
        body_nodes += [node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
                       node("Greater", ["total", "zero_f"], ["cond_out"])]
    else:
        body_nodes.append(node("Identity", ["cond_in"], ["cond_out"]))
    body = helper.make_graph(
        body_nodes, "body", [V("i", TP.INT64, []), V("cond_in", TP.BOOL, []), V("acc", TP.FLOAT, [4])],
        [V("cond_out", TP.BOOL, []), V("acc_out", TP.FLOAT, [4]), V("scan_out", TP.FLOAT, [4])],
        initializer=[const_tensor("zero", np.asarray([0], I64)), const_tensor("one", np.asarray([1], I64)),
                     const_tensor("one_scalar", np.int64(1)), const_tensor("half", np.float32(0.5)),
                     const_tensor("zero_f", np.float32(0))])
    inits = [const_tensor("true", np.asarray(True))]
    inputs = [V("x", TP.FLOAT, [3, 4]), V("acc0", TP.FLOAT, [4])]
    if trip_count_input:
        inputs.append(V("M", TP.INT64, []))
    else:
        inits.append(const_tensor("M", np.int64(3)))
    nodes = [node("Loop", ["M", "true", "acc0"], ["acc_final", "per_iteration"], name="the_loop", body=body)]
    return graph_model(nodes, inputs, [V("acc_final", TP.FLOAT, None), V("per_iteration", TP.FLOAT, None)], opset,
                       inits)


def _loop_feeds():
    rng = np.random.default_rng(1)
    return {"x": rng.standard_normal((3, 4)).astype(F), "acc0": rng.standard_normal(4).astype(F)}


def test_loop_with_a_constant_trip_count_unrolls():
    model = _loop_model()
    check_graph(model, _loop_feeds())
    assert "OH_NN_OPS_STACK" in {op.name for op in ops_of(from_onnx(model))}


def test_loop_with_a_bound_trip_count_unrolls():
    check_graph(_loop_model(trip_count_input=True), _loop_feeds(), constant_inputs={"M": np.asarray(2, I64)})


def test_loop_exit_computed_from_the_iteration_number_stops_early():
    check_graph(_loop_model(body_cond="iteration"), _loop_feeds())


def test_loop_with_a_data_dependent_exit_is_rejected():
    rejects_graph(_loop_model(body_cond="data"), "needs_constant_input", "depends on data")


def test_loop_with_an_unbound_trip_count_says_which_input_to_bind():
    rejects_graph(_loop_model(trip_count_input=True), "needs_constant_input", "bind input 'M' with --constant-input M=")


def test_loop_longer_than_the_unroll_limit_is_rejected_with_its_length():
    model = _loop_model(trip_count_input=True)
    rejects_graph(model, "unsupported_op", f"runs {MAX_ITERATIONS + 1} iterations",
                  constant_inputs={"M": np.asarray(MAX_ITERATIONS + 1, I64)})


def test_loop_without_iterations_passes_its_initial_values_through():
    body = helper.make_graph([node("Identity", ["c"], ["c_out"]), node("Add", ["v", "v"], ["v_out"])], "body",
                             [V("i", TP.INT64, []), V("c", TP.BOOL, []), V("v", TP.FLOAT, [2])],
                             [V("c_out", TP.BOOL, []), V("v_out", TP.FLOAT, [2])])
    model = graph_model([node("Loop", ["M", "", "v0"], ["v_final"], body=body), node("Neg", ["v_final"], ["y"])],
                        [V("v0", TP.FLOAT, [2])], [V("y", TP.FLOAT, None)], 17, [const_tensor("M", np.int64(0))])
    check_graph(model, {"v0": np.asarray([1, 2], F)})


def test_loop_body_with_an_if_on_the_iteration_number():
    """Iteration 0 takes the then branch (v * 10), the others the else branch (v + 1)."""
    inner = node("If", ["first"], ["v_out"],
                 then_branch=_branch("t", [node("Mul", ["v", "ten"], ["m"])], [V("m", TP.FLOAT, None)]),
                 else_branch=_branch("e", [node("Add", ["v", "one_f"], ["a"])], [V("a", TP.FLOAT, None)]))
    body = helper.make_graph([node("Equal", ["i", "zero_i"], ["first"]), inner, node("Identity", ["c"], ["c_out"])],
                             "body", [V("i", TP.INT64, []), V("c", TP.BOOL, []), V("v", TP.FLOAT, [2])],
                             [V("c_out", TP.BOOL, []), V("v_out", TP.FLOAT, [2])],
                             initializer=[const_tensor("zero_i", np.int64(0))])
    model = graph_model([node("Loop", ["M", "", "v0"], ["y"], body=body)], [V("v0", TP.FLOAT, [2])],
                        [V("y", TP.FLOAT, None)], 17,
                        [const_tensor("M", np.int64(3)), const_tensor("ten", np.float32(10)),
                         const_tensor("one_f", np.float32(1))])
    check_graph(model, {"v0": np.asarray([1, -2], F)})


# -- Scan --------------------------------------------------------------------------------------------------------------

def _scan_body():
    """state' = state + x_t * w_t; scan outputs: state' and x_t - w_t."""
    return helper.make_graph([node("Mul", ["x_t", "w_t"], ["p"]), node("Add", ["s", "p"], ["s_out"]),
                              node("Sub", ["x_t", "w_t"], ["d"])], "body",
                             [V("s", TP.FLOAT, [3]), V("x_t", TP.FLOAT, [3]), V("w_t", TP.FLOAT, [3])],
                             [V("s_out", TP.FLOAT, [3]), V("s_seq", TP.FLOAT, [3]), V("d", TP.FLOAT, [3])])


@pytest.mark.parametrize("opset", [11, 16])
def test_scan_unrolls_with_axes_and_directions(opset):
    body = _scan_body()
    body.node.append(node("Identity", ["s_out"], ["s_seq"]))
    scan = node("Scan", ["s0", "x", "w"], ["s_final", "states", "diffs"], body=body, num_scan_inputs=2,
                scan_input_axes=[0, 1], scan_input_directions=[0, 1], scan_output_axes=[0, 1],
                scan_output_directions=[1, 0])
    model = graph_model([scan], [V("s0", TP.FLOAT, [3]), V("x", TP.FLOAT, [4, 3]), V("w", TP.FLOAT, [3, 4])],
                        [V("s_final", TP.FLOAT, None), V("states", TP.FLOAT, None), V("diffs", TP.FLOAT, None)], opset)
    rng = np.random.default_rng(2)
    check_graph(model, {"s0": rng.standard_normal(3).astype(F), "x": rng.standard_normal((4, 3)).astype(F),
                        "w": rng.standard_normal((3, 4)).astype(F)})


def test_scan_opset_8_unrolls_its_batch_axis_too():
    body = _scan_body()
    body.node.append(node("Identity", ["s_out"], ["s_seq"]))
    scan = node("Scan", ["", "s0", "x", "w"], ["s_final", "states", "diffs"], body=body, num_scan_inputs=2,
                directions=[0, 1])
    model = graph_model([scan], [V("s0", TP.FLOAT, [2, 3]), V("x", TP.FLOAT, [2, 4, 3]), V("w", TP.FLOAT, [2, 4, 3])],
                        [V("s_final", TP.FLOAT, None), V("states", TP.FLOAT, None), V("diffs", TP.FLOAT, None)], 8)
    rng = np.random.default_rng(3)
    check_graph(model, {"s0": rng.standard_normal((2, 3)).astype(F), "x": rng.standard_normal((2, 4, 3)).astype(F),
                        "w": rng.standard_normal((2, 4, 3)).astype(F)})


def test_scan_over_a_dynamic_length_says_what_to_pin():
    body = _scan_body()
    body.node.append(node("Identity", ["s_out"], ["s_seq"]))
    scan = node("Scan", ["s0", "x", "w"], ["s_final", "states", "diffs"], body=body, num_scan_inputs=2)
    model = graph_model([scan], [V("s0", TP.FLOAT, [3]), V("x", TP.FLOAT, ["T", 3]), V("w", TP.FLOAT, ["T", 3])],
                        [V("s_final", TP.FLOAT, None), V("states", TP.FLOAT, None), V("diffs", TP.FLOAT, None)], 16)
    rejects_graph(model, "dynamic_shape", "unrolling needs it static; pin input 'x' dim 0 (T): --input-shape x=<T>,3")
    x = np.ones((2, 3), F)
    check_graph(model, {"s0": x[0], "x": x, "w": x * 2}, input_shapes={"x": [2, 3], "w": [2, 3]})
