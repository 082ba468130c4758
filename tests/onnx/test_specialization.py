"""Specialising a model to its inputs: shapes from the kernels' own rules, folding to a fixed point within a size
budget, dynamic dims kept where the ops allow them, and problems that name their node and what to pin or bind.

Oracle: onnxruntime running the original model; the folding is checked on what is left of the converted model
(no shape-computing operation survives once the inputs are pinned).
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper
from support import ort_run

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx

V = helper.make_tensor_value_info
node = helper.make_node
F = np.float32


def _const(name, value, dtype=np.int64):
    array = np.asarray(value, dtype)
    return helper.make_tensor(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape,
                              array.reshape(-1).tolist())


def _model(nodes, inputs, outputs, inits=(), opset=17):
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits)),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _run(result, feeds):
    compilation = Compilation(result.model)
    compilation.build()
    arrays = [feeds[result.model.tensors[i].name] for i in result.model.inputs]
    return Executor(compilation).run_arrays(arrays)


def _same_as_onnxruntime(model, feeds, **options):
    result = from_onnx(model, **options)
    for got, want in zip(_run(result, feeds), ort_run(model, feeds)):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return result


def _ops(result) -> set[str]:
    return {op.op.name[len("OH_NN_OPS_"):] for op in result.model.operations}


# -- every shape-computing op folds once its inputs are constants ------------------------------------------------------

X = V("x", TP.FLOAT, ["N", 3, "H", "W"])
SHAPE = node("Shape", ["x"], ["s"])
PINNED = {"x": [2, 3, 4, 6]}
COMMON = [_const("zero", [0]), _const("one", [1]), _const("two", [2]), _const("four", [4]), _const("minus1", [-1]),
          _const("zero_s", 0), _const("one_s", 1), _const("three_s", 3)]

# (id, nodes computing tensor 'y' from x and constants, the payload op that stays)
FOLDING_CASES = [
    ("Shape", [SHAPE, node("Reshape", ["x", "s"], ["y"])], "RESHAPE"),
    ("Size", [node("Size", ["x"], ["n"]), node("Unsqueeze", ["n", "zero"], ["t"]), node("Reshape", ["x", "t"], ["y"])],
     "RESHAPE"),
    ("Gather-Concat", [SHAPE, node("Gather", ["s", "zero"], ["b"], axis=0),
                       node("Concat", ["b", "minus1"], ["t"], axis=0), node("Reshape", ["x", "t"], ["y"])],
     "RESHAPE"),
    ("Slice", [SHAPE, node("Slice", ["s", "zero", "two"], ["head"]), node("Concat", ["head", "minus1"], ["t"], axis=0),
               node("Reshape", ["x", "t"], ["y"])], "RESHAPE"),
    ("Squeeze-Unsqueeze", [SHAPE, node("Gather", ["s", "zero_s"], ["b"], axis=0),
                           node("Unsqueeze", ["b", "zero"], ["b1"]), node("Squeeze", ["b1", "zero"], ["b0"]),
                           node("Unsqueeze", ["b0", "zero"], ["b2"]), node("Concat", ["b2", "minus1"], ["t"], axis=0),
                           node("Reshape", ["x", "t"], ["y"])], "RESHAPE"),
    ("Cast", [SHAPE, node("Cast", ["s"], ["sf"], to=TP.FLOAT), node("Cast", ["sf"], ["t"], to=TP.INT64),
              node("Reshape", ["x", "t"], ["y"])], "RESHAPE"),
    ("integer arithmetic", [SHAPE, node("Gather", ["s", "two"], ["h"], axis=0),
                            node("Gather", ["s", "three_s"], ["w"], axis=0), node("Unsqueeze", ["w", "zero"], ["w1"]),
                            node("Mul", ["h", "w1"], ["hw"]), node("Div", ["hw", "two"], ["half"]),
                            node("Sub", ["hw", "half"], ["rest"]), node("Add", ["rest", "zero"], ["r"]),
                            node("Concat", ["minus1", "r"], ["t"], axis=0), node("Reshape", ["x", "t"], ["y"])],
     "RESHAPE"),
    ("Equal-Where-Not", [SHAPE, node("Equal", ["s", "one"], ["is1"]), node("Not", ["is1"], ["not1"]),
                         node("Where", ["not1", "s", "one"], ["t"]), node("Reshape", ["x", "t"], ["y"])], "RESHAPE"),
    ("Range", [SHAPE, node("Gather", ["s", "three_s"], ["w"], axis=0), node("Range", ["zero_s", "w", "one_s"], ["r"]),
               node("Cast", ["r"], ["rf"], to=TP.FLOAT), node("Add", ["x", "rf"], ["y"])], "ADD"),
    ("ConstantOfShape", [SHAPE, node("ConstantOfShape", ["s"], ["c"], value=helper.make_tensor("v", TP.FLOAT, [1], [2])),
                         node("Mul", ["x", "c"], ["y"])], "MUL"),
    ("Reshape-0-and--1", [node("Reshape", ["x", "zero_minus1"], ["y"])], "RESHAPE"),
    ("Expand", [SHAPE, node("Expand", ["bias", "s"], ["big"]), node("Add", ["x", "big"], ["y"])], "ADD"),
    ("Resize-sizes", [SHAPE, node("Slice", ["s", "zero", "two"], ["nc"]), node("Slice", ["s", "two", "four"], ["hw"]),
                      node("Mul", ["hw", "two"], ["hw2"]), node("Concat", ["nc", "hw2"], ["sizes"], axis=0),
                      node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest")], "GATHER"),
    ("Resize-scales", [SHAPE, node("Cast", ["s"], ["sf"], to=TP.FLOAT), node("Div", ["sf", "sf"], ["ones"]),
                       node("Mul", ["ones", "scale"], ["scales"]),
                       node("Resize", ["x", "", "scales"], ["y"], mode="nearest")], "GATHER"),
]
SHAPE_COMPUTING = {"SHAPE", "SIZE", "GATHER", "CONCAT", "SLICE", "STRIDED_SLICE", "CAST", "EQUAL", "WHERE", "LOGICAL_NOT",
                   "RANGE", "CONSTANT_OF_SHAPE", "BROADCAST_TO", "DIV", "SUB", "SQUEEZE", "UNSQUEEZE", "EXPAND_DIMS"}
EXTRA = [_const("zero_minus1", [0, -1]), helper.make_tensor("bias", TP.FLOAT, [1, 3, 1, 1], [1, 2, 3]),
         helper.make_tensor("scale", TP.FLOAT, [4], [1, 1, 2, 2])]


@pytest.mark.parametrize("case", FOLDING_CASES, ids=[c[0] for c in FOLDING_CASES])
def test_shape_computations_fold_once_the_input_is_pinned(case):
    _, nodes, payload = case
    model = _model(nodes, [X], [V("y", TP.FLOAT, None)], COMMON + EXTRA)
    x = np.random.default_rng(0).standard_normal(PINNED["x"]).astype(F)
    result = _same_as_onnxruntime(model, {"x": x}, input_shapes=PINNED)
    ops = _ops(result)
    assert payload in ops and not (ops - {payload}) & SHAPE_COMPUTING, ops


def test_onnx_inference_giving_up_is_no_obstacle_once_inputs_are_pinned():
    """The target shape's length comes through a float division ONNX's data propagation does not follow: ONNX
    leaves the Reshape output's rank unknown (Softmax over axis -1 needs it); the kernels' rules fold it."""
    nodes = [node("Shape", ["x"], ["s"]), node("Size", ["s"], ["n"]), node("Cast", ["n"], ["f"], to=TP.FLOAT),
             node("Div", ["f", "three"], ["d"]), node("Cast", ["d"], ["k"], to=TP.INT64),
             node("Unsqueeze", ["k", "zero"], ["k1"]), node("Slice", ["s", "zero", "k1"], ["head"]),
             node("Concat", ["head", "minus1"], ["t"], axis=0), node("Reshape", ["x", "t"], ["y"], name="the_reshape"),
             node("Softmax", ["y"], ["z"], axis=-1, name="the_softmax")]
    model = _model(nodes, [V("x", TP.FLOAT, ["N", 4, 6])], [V("z", TP.FLOAT, None)],
                   [helper.make_tensor("three", TP.FLOAT, [], [3.0]), _const("zero", [0]), _const("minus1", [-1])])
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    assert not next(i for i in inferred.graph.value_info if i.name == "y").type.tensor_type.HasField("shape")
    x = np.random.default_rng(1).standard_normal((2, 4, 6)).astype(F)
    result = _same_as_onnxruntime(model, {"x": x}, input_shapes={"x": [2, 4, 6]})
    assert _ops(result) == {"RESHAPE", "SOFTMAX"}
    unpinned = from_onnx(model)  # the target reads [N, -1] against [N, 4, 6]: RESHAPE to [-1, 24]
    assert [list(t.dims) for t in unpinned.model.tensors if t.name == "y"] == [[-1, 24]]
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 4, 6)).astype(F)
        np.testing.assert_allclose(_run(unpinned, {"x": x})[0], ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_a_target_with_two_dynamic_dims_says_which_input_dims_to_pin():
    """Reshape to [N * 4, W]: the product of two dims is not a dim of the input; unpinned, the problem (and the one
    following from it) say what to pin."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["n"], axis=0),
             node("Gather", ["s", "two"], ["w"], axis=0), node("Mul", ["n", "four"], ["n4"]),
             node("Concat", ["n4", "w"], ["t"], axis=0), node("Reshape", ["x", "t"], ["y"], name="the_reshape"),
             node("Squeeze", ["y"], ["z"], name="the_squeeze")]
    model = _model(nodes, [V("x", TP.FLOAT, ["N", 4, "W"])], [V("z", TP.FLOAT, None)],
                   [_const("zero", [0]), _const("two", [2]), _const("four", [4])])
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    root, follower = info.value.issues
    assert (root.node, root.reason, follower.node, follower.depends_on) == ("the_reshape", "needs_constant_input",
                                                                              "the_squeeze", "the_reshape")
    assert "pin input 'x' dims 0 (N), 2 (W): --input-shape x=<N>,4,<W> or give --input x=FILE" in root.message
    x = np.random.default_rng(1).standard_normal((1, 4, 5)).astype(F)
    _same_as_onnxruntime(model, {"x": x}, input_shapes={"x": [1, 4, 5]})


# -- the folding budget --------------------------------------------------------------------------------------------

def _big_constant_model():
    """ConstantOfShape and Tile of constants, 4 x 1024 x 1024 float32 (16 MiB) each, added to the input."""
    nodes = [node("ConstantOfShape", ["dims"], ["c"], value=helper.make_tensor("v", TP.FLOAT, [1], [0.5])),
             node("Tile", ["row", "reps"], ["t"]), node("Add", ["c", "t"], ["ct"]), node("Add", ["x", "ct"], ["y"])]
    inits = [_const("dims", [4, 1024, 1024]), helper.make_tensor("row", TP.FLOAT, [1, 1, 1024], list(range(1024))),
             _const("reps", [4, 1024, 1])]
    return _model(nodes, [V("x", TP.FLOAT, [4, 1024, 1024])], [V("y", TP.FLOAT, None)], inits)


def test_folding_stays_within_the_byte_budget():
    model = _big_constant_model()
    x = np.ones((4, 1024, 1024), F)
    folded = from_onnx(model)  # 16 MiB per tensor: within the default 256 MiB
    assert _ops(folded) == {"ADD"}
    small = _same_as_onnxruntime(model, {"x": x}, max_constant_bytes=1 << 20)
    assert {"CONSTANT_OF_SHAPE", "TILE"} <= _ops(small)
    assert all(t.data is None or t.data.nbytes <= 1 << 20 for t in small.model.tensors if t.data is not None)


def test_the_budget_is_checked_before_anything_is_computed(monkeypatch):
    """Above the budget, no kernel and no reference evaluator runs for the folded node."""
    import nnrt_onnx.ir.fold as fold

    def no_evaluation(*args, **kwargs):
        raise AssertionError("evaluated a node above the budget")

    monkeypatch.setattr(fold, "call", no_evaluation)
    monkeypatch.setattr("onnx.reference.ReferenceEvaluator.run", no_evaluation)
    result = from_onnx(_big_constant_model(), max_constant_bytes=1 << 20)
    assert {"CONSTANT_OF_SHAPE", "TILE"} <= _ops(result)


# -- the rules check the model's shapes ------------------------------------------------------------------------------

def test_a_shape_the_model_states_wrongly_is_an_invalid_model_problem_of_its_node():
    model = _model([node("MatMul", ["x", "w"], ["m"], name="the_matmul"), node("Relu", ["m"], ["y"])],
                   [V("x", TP.FLOAT, [2, 3])], [V("y", TP.FLOAT, [2, 4])],
                   [helper.make_tensor("w", TP.FLOAT, [3, 4], [0.0] * 12)])
    model.graph.value_info.append(V("m", TP.FLOAT, [2, 5]))
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    (issue,) = info.value.issues
    assert (issue.node, issue.op_type, issue.reason) == ("the_matmul", "MatMul", "invalid_model")
    assert "'m' has shape [2, 5]" in issue.message and "[2, 4]" in issue.message


def test_a_stale_model_output_shape_is_not_trusted():
    """Exporters write stale output shapes (ddddocr's '387' says [1, ?], it is [20, 1, 8210]); onnxruntime runs
    such models (with a warning), and so does the conversion: the rules give the output's shape."""
    model = _model([node("Reshape", ["x", "t"], ["y"])], [V("x", TP.FLOAT, [2, 6])], [V("y", TP.FLOAT, [1, "n"])],
                   [_const("t", [2, 1, 6])])
    x = np.arange(12, dtype=F).reshape(2, 6)
    result = from_onnx(model)
    assert list(result.model.tensors[result.model.outputs[0]].dims) == [2, 1, 6]
    np.testing.assert_array_equal(_run(result, {"x": x})[0], x.reshape(2, 1, 6))


# -- dynamic dims ----------------------------------------------------------------------------------------------------

def test_a_dynamic_batch_stays_dynamic_where_every_op_supports_it():
    """Conv -> Relu -> x.view(x.size(0), -1) -> Gemm with the batch unpinned: one NNRt model runs batches 1 and 3."""
    rng = np.random.default_rng(2)
    nodes = [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"]),
             node("Shape", ["r"], ["s"]), node("Gather", ["s", "zero_s"], ["n"], axis=0),
             node("Unsqueeze", ["n", "zero"], ["n1"]), node("Concat", ["n1", "minus1"], ["t"], axis=0),
             node("Reshape", ["r", "t"], ["flat"]), node("Gemm", ["flat", "fc", "fb"], ["y"], transB=1)]
    inits = [helper.make_tensor("w", TP.FLOAT, [4, 2, 3, 3], rng.standard_normal(72).tolist()),
             helper.make_tensor("b", TP.FLOAT, [4], [0.1, 0.2, 0.3, 0.4]),
             helper.make_tensor("fc", TP.FLOAT, [5, 64], rng.standard_normal(320).tolist()),
             helper.make_tensor("fb", TP.FLOAT, [5], [0.0] * 5), _const("zero", [0]), _const("zero_s", 0),
             _const("minus1", [-1])]
    model = _model(nodes, [V("x", TP.FLOAT, ["batch", 2, 4, 4])], [V("y", TP.FLOAT, ["batch", 5])], inits)
    result = from_onnx(model)
    assert result.model.tensors[result.model.inputs[0]].dims[0] == -1
    for batch in (1, 3):
        x = rng.standard_normal((batch, 2, 4, 4)).astype(F)
        (got,) = _run(result, {"x": x})
        np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


# -- problems name real nodes ----------------------------------------------------------------------------------------

def test_a_tensor_of_unknown_rank_is_blamed_on_the_node_that_writes_it():
    """ConstantOfShape of a shape given at run time (of unknown length): its output's rank is unknown."""
    nodes = [node("ConstantOfShape", ["dims"], ["c"], name="make_zeros",
                  value=helper.make_tensor("v", TP.FLOAT, [1], [0.0])),
             node("Relu", ["c"], ["y"], name="relu")]
    model = _model(nodes, [V("dims", TP.INT64, ["rank"])], [V("y", TP.FLOAT, None)])
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    assert all(i.op_type not in ("-", "") and i.opset == 17 for i in info.value.issues), info.value.text()
    first = info.value.issues[0]
    assert (first.node, first.op_type, first.reason) == ("make_zeros", "ConstantOfShape", "dynamic_shape")
    assert "pin input 'dims' dim 0 (rank)" in first.message
    assert "(-, opset 0)" not in info.value.text()


def test_root_causes_come_first_in_the_report():
    nodes = [node("Relu", ["x"], ["a"], name="first_relu"),
             node("NonZero", ["a"], ["idx"], name="data_dependent"),
             node("Cast", ["idx"], ["f"], to=TP.FLOAT, name="after"),
             node("Squeeze", ["f"], ["y"], name="later"),
             node("Det", ["m"], ["z"], name="independent")]
    model = _model(nodes, [V("x", TP.FLOAT, [3]), V("m", TP.FLOAT, [2, 2])],
                   [V("y", TP.FLOAT, None), V("z", TP.FLOAT, None)],
                   [_const("zero", [0])])
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    lines = info.value.text().splitlines()
    roots = [i for i in info.value.issues if i.is_root]
    assert {i.node for i in roots} == {"data_dependent", "independent"}
    assert [i.node for i in info.value.issues if not i.is_root] == ["later"]
    assert lines[-2].strip() == "and 1 that follow from those:"
    assert lines[-1].strip().startswith("later (Squeeze, opset 17): [dynamic_shape] depends on 'data_dependent'")


# -- run-time targets read symbolically (hand-computed cases) ----------------------------------------------------------

@pytest.mark.parametrize("input_dims,requested,allowzero,expected", [
    (["N", 4, 4, 4], ["N", -1], False, [-1, 64]),  # x.view(x.size(0), -1)
    (["N", 4, 4, 4], [0, -1], False, [-1, 64]),  # 0 copies the batch
    (["N", "T", 8], ["N", "T", 2, 4], False, None),  # two dims stay unknown
    (["N", "T", 8], ["N", -1, 4], False, None),  # the -1 is 2T: T does not cancel
    (["N", 6], [-1, 3], False, [-1, 3]),  # the -1 absorbs the batch: still one unknown
    (["N", 5, 6], ["N", 0, 3, 2], False, [-1, 5, 3, 2]),  # 0 copies dim 1
    ([2, 6], [3, -1], False, [3, 4]),
    (["N", 6], ["M", -1], False, None),  # another input's dim: nothing cancels
])
def test_reshape_target_of_a_symbolic_shape(input_dims, requested, allowzero, expected):
    from nnrt_onnx.onnx_import.symbolic import reshape_target

    assert reshape_target(input_dims, requested, allowzero) == expected


def test_the_pin_hint_names_just_the_dims_the_blocked_value_reads():
    """repeats = [1, x.size(1), 1] (Tile's repeats must be constants): only the sequence dim blocks, not the batch."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "one_v"], ["steps"], axis=0),
             node("Concat", ["one_v", "steps", "one_v"], ["repeats"], axis=0),
             node("Tile", ["x", "repeats"], ["y"], name="tile")]
    model = _model(nodes, [V("x", TP.FLOAT, ["batch", "steps", 1])], [V("y", TP.FLOAT, None)],
                   [_const("one_v", [1])])
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    issue = info.value.issues[0]
    assert issue.node == "tile" and "pin input 'x' dim 1 (steps): --input-shape x=<batch>,<steps>,1" in issue.message


def test_arange_of_a_dynamic_dim_converts():
    """positions = arange(x.size(1)) (a transformer's): computed at run time (issue 26; it was refused, asking to pin
    the sequence dim)."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "one_s"], ["steps"], axis=0),
             node("Range", ["zero_s", "steps", "one_s"], ["positions"], name="arange"),
             node("Cast", ["positions"], ["p"], to=TP.FLOAT), node("Unsqueeze", ["p", "axes"], ["p2"]),
             node("Add", ["x", "p2"], ["y"])]
    model = _model(nodes, [V("x", TP.FLOAT, ["batch", "steps", 1])], [V("y", TP.FLOAT, None)],
                   [_const("zero_s", 0), _const("one_s", 1), _const("axes", [0, 2])])
    compilation = Compilation(from_onnx(model).model)
    compilation.build()
    executor = Executor(compilation)
    for batch, steps in ((1, 3), (2, 5)):
        x = np.random.default_rng(steps).standard_normal((batch, steps, 1)).astype(np.float32)
        np.testing.assert_allclose(executor.run_arrays([x])[0], ort_run(model, {"x": x})[0], rtol=1e-6)


def test_an_empty_output_is_blamed_on_the_named_node_that_computes_it():
    model = _model([node("Slice", ["x", "five", "six"], ["y"], name="empty_slice")], [V("x", TP.FLOAT, [3])],
                   [V("y", TP.FLOAT, None)], [_const("five", [5]), _const("six", [6])])
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    assert {(i.node, i.op_type, i.opset) for i in info.value.issues} == {("empty_slice", "Slice", 17)}
    assert "is empty" in info.value.issues[0].message
