"""The pass manager (nnrt_onnx.ir.passes.manager): each pass reports its name, whether it modified the graph, the node
count before and after and its own counts; the importer's stats carry one summary per pass."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.ir.graph import Graph, Node, Value
from nnrt_onnx.ir.passes import (
    Pass,
    PassResult,
    fold_batchnorms,
    fuse_activations,
    import_passes,
    run_passes,
    sink_transposes,
)
from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.onnx_import.importer import ImportOptions

F = np.float32


def add_relu_graph() -> Graph:
    """x + 1 -> RELU -> y, with an unused constant."""
    graph = Graph()
    graph.add_value(Value("x", np.dtype(F), (2, 3)))
    one = graph.constant(np.ones((2, 3), F), "one")
    graph.constant(np.zeros(4, F), "unused")
    graph.add_value(Value("s", np.dtype(F), (2, 3)))
    graph.add_value(Value("y", np.dtype(F), (2, 3)))
    graph.nodes = [Node(OP.OH_NN_OPS_ADD, ["x", one], ["s"]), Node(OP.OH_NN_OPS_RELU, ["s"], ["y"])]
    graph.inputs, graph.outputs = ["x"], ["y"]
    return graph


def test_a_pass_that_changes_nothing_reports_unchanged():
    graph = add_relu_graph()
    (result,) = run_passes(graph, [Pass("fold_batchnorms", fold_batchnorms, count="folded_batchnorms")])
    assert result == PassResult("fold_batchnorms", False, 2, 2, {"folded_batchnorms": 0})
    (result,) = run_passes(graph, [Pass("sink_transposes", sink_transposes)])  # no transposes: nothing to move
    assert not result.modified and result.counts == {}


def test_passes_run_in_order_and_report_modified_and_counts():
    graph = add_relu_graph()
    remove_unused = Pass("remove_unused", Graph.remove_unused)
    results = run_passes(graph, [remove_unused, Pass("fuse", fuse_activations, count="fused_activations"),
                                 remove_unused, remove_unused])
    assert [r.name for r in results] == ["remove_unused", "fuse", "remove_unused", "remove_unused"]
    assert results[0].modified and (results[0].nodes_before, results[0].nodes_after) == (2, 2)  # the unused constant
    assert results[1] == PassResult("fuse", True, 2, 1, {"fused_activations": 1})
    assert results[2].modified  # the fused-away intermediate "s"
    assert not results[3].modified
    assert [n.op for n in graph.nodes] == [OP.OH_NN_OPS_ADD]
    assert results[1].summary() == {"name": "fuse", "modified": True, "nodes_before": 2, "nodes_after": 1,
                                    "fused_activations": 1}


def test_a_parameter_rewritten_in_place_counts_as_modified():
    graph = add_relu_graph()
    fused = run_passes(graph, [Pass("fuse", fuse_activations)])[0]
    assert fused.modified and fused.counts == {}  # no count named: the returned number is not reported
    node = graph.nodes[0]

    def same_value_new_array(g):
        for tensor_type, array in list(node.params.items()):
            node.params[tensor_type] = array.copy()

    assert run_passes(graph, [Pass("rewrite", same_value_new_array)])[0].modified


def test_import_passes_follow_the_options():
    names = [p.name for p in import_passes(ImportOptions())]
    assert names == ["remove_unused", "absorb_restored", "sink_transposes", "remove_unused", "fold_batchnorms",
                     "fuse_activations", "fold_qdq", "exact_quantize", "remove_unused"]
    names = [p.name for p in import_passes(ImportOptions(nhwc_io=True, fold_batchnorm=False, fuse_activations=False,
                                                         optimize_layout=False, fold_qdq=False))]
    assert names == ["remove_unused", "absorb_restored", "nhwc_boundaries", "remove_unused", "exact_quantize",
                     "remove_unused"]


def test_import_stats_keep_their_counts_and_gain_a_summary_per_pass():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(F), "w")
    stats = [numpy_helper.from_array(v.astype(F), n) for n, v in
             (("s", rng.uniform(0.5, 1.5, 4)), ("b", rng.normal(0, 0.1, 4)), ("m", rng.normal(0, 0.1, 4)),
              ("v", rng.uniform(0.5, 1.5, 4)))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w, *stats])
    result = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert result.stats["folded_batchnorms"] == 1 and result.stats["fused_activations"] == 1
    summary = {p["name"]: p for p in result.stats["passes"]}
    assert [p["name"] for p in result.stats["passes"]] == [p.name for p in import_passes(ImportOptions())]
    assert summary["fold_batchnorms"]["folded_batchnorms"] == 1 and summary["fold_batchnorms"]["modified"]
    assert summary["fuse_activations"]["nodes_before"] - summary["fuse_activations"]["nodes_after"] == 1
    assert summary["sink_transposes"]["nodes_after"] < summary["sink_transposes"]["nodes_before"]  # transposes cancel
    kept = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), fold_batchnorm=False,
                     fuse_activations=False)
    assert kept.stats["folded_batchnorms"] == 0 and kept.stats["fused_activations"] == 0
    assert "fold_batchnorms" not in {p["name"] for p in kept.stats["passes"]}
