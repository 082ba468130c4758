"""The classical machine-learning operators (``ai.onnx.ml``) against onnxruntime, on models built here the way
skl2onnx and onnxmltools write them (scikit-learn random forests and linear models, LightGBM boosted trees,
pipelines ending in ZipMap): random trees of several depths and node modes, missing values, every aggregation and
post transform NNRt can express, the binary cases onnxruntime treats specially. Labels must match exactly, scores
within float32 rounding of onnxruntime's (the sums run in another order)."""
from __future__ import annotations

import zlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import ort_session

from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.workflows.inference import run_model

ML = "ai.onnx.ml"
ROWS, FEATURES = 64, 6


def _model(nodes, inputs, outputs, initializers=(), ml_opset=3) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "ml", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, ml_opset)])
    model.ir_version = 8
    return model


def _maps(name: str):
    """ZipMap's output type: a sequence of int64 -> float maps."""
    return helper.make_value_info(name, helper.make_sequence_type_proto(helper.make_map_type_proto(
        TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, []))))


def _x(seed: int, nan: bool = False, shape=(ROWS, FEATURES)) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x[::7, 1] = np.round(x[::7, 1], 1)  # (values equal to thresholds rounded alike: EQ / NEQ / LEQ ties)
    if nan:
        x[::5, 2] = np.nan
    return x


def _onnxruntime(model, feeds) -> list:
    """onnxruntime's outputs; a ZipMap's sequence of maps as the [N, classes] array of its values (class order)."""
    outputs = ort_session(model).run(None, feeds)
    result = []
    for value in outputs:
        if isinstance(value, list) and value and isinstance(value[0], dict):
            keys = list(value[0])
            value = np.asarray([[row[k] for k in keys] for row in value], np.float32)
        result.append(np.asarray(value))
    return result


def _ours(model, feeds) -> list:
    converted = from_onnx(model).model
    return [np.asarray(o) for o in run_model(converted, list(feeds.values())).outputs]


def _compare(model, feeds, score_atol=1e-5):
    theirs, ours = _onnxruntime(model, feeds), _ours(model, feeds)
    assert len(theirs) == len(ours)
    for t, o in zip(theirs, ours):
        assert t.shape == o.shape, (t.shape, o.shape)
        if t.dtype.kind == "f":
            np.testing.assert_allclose(o, t, rtol=1e-5, atol=score_atol)
        else:
            np.testing.assert_array_equal(o, t)


# -- random trees, as the exporters write them ------------------------------------------------------------------------

def _trees(seed: int, count: int, depth: int, modes=("BRANCH_LEQ",), missing: bool = False, ragged: bool = True):
    """``count`` random binary trees (leaves at depth <= ``depth``; ``ragged``: some branches stop early), node ids
    numbered breadth first per tree as skl2onnx does. Returns the nodes_* attributes and the leaves [(tree, node)]."""
    rng = np.random.default_rng(seed)
    attrs = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
                             "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true")}
    leaves = []
    for tree in range(count):
        queue, next_id = [(0, 0)], 1
        while queue:
            node, level = queue.pop(0)
            leaf = level == depth or (ragged and level >= 1 and rng.random() < 0.25)
            attrs["nodes_treeids"].append(tree)
            attrs["nodes_nodeids"].append(node)
            attrs["nodes_featureids"].append(0 if leaf else int(rng.integers(FEATURES)))
            attrs["nodes_values"].append(0.0 if leaf else float(np.round(rng.standard_normal(), 1)))
            attrs["nodes_modes"].append("LEAF" if leaf else str(rng.choice(modes)))
            attrs["nodes_missing_value_tracks_true"].append(int(missing and not leaf and rng.random() < 0.5))
            if leaf:
                attrs["nodes_truenodeids"].append(0)
                attrs["nodes_falsenodeids"].append(0)
                leaves.append((tree, node))
                continue
            attrs["nodes_truenodeids"].append(next_id)
            attrs["nodes_falsenodeids"].append(next_id + 1)
            queue += [(next_id, level + 1), (next_id + 1, level + 1)]
            next_id += 2
    if not missing:
        del attrs["nodes_missing_value_tracks_true"]
    return attrs, leaves


def _classifier(seed, classes, trees, depth, per_leaf="all", post="NONE", modes=("BRANCH_LEQ",), missing=False,
                base=None, zipmap=True, labels=None, weights="probabilities"):
    """A TreeEnsembleClassifier: ``per_leaf`` "all" (each leaf weighs every class: scikit-learn forests), "tree"
    (tree t scores class t % classes: LightGBM), or a class id (binary models scoring one class)."""
    rng = np.random.default_rng(seed + 1)
    attrs, leaves = _trees(seed, trees, depth, modes, missing)
    cls = {k: [] for k in ("class_treeids", "class_nodeids", "class_ids", "class_weights")}
    for tree, node in leaves:
        if per_leaf == "all":
            targets = list(range(classes))
            values = rng.dirichlet(np.ones(classes)) / trees
        else:
            targets = [tree % classes] if per_leaf == "tree" else [per_leaf]
            values = rng.uniform(0, 1, 1) / trees if weights == "probabilities" else rng.standard_normal(1)
        for k, v in zip(targets, values):
            cls["class_treeids"].append(tree)
            cls["class_nodeids"].append(node)
            cls["class_ids"].append(k)
            cls["class_weights"].append(float(v))
    labels = list(range(classes)) if labels is None else labels
    extra = {"base_values": base} if base is not None else {}
    node = helper.make_node("TreeEnsembleClassifier", ["x"], ["label", "probabilities"], domain=ML,
                            classlabels_int64s=labels, post_transform=post, **attrs, **cls, **extra)
    nodes = [node]
    outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [ROWS])]
    if zipmap:
        nodes.append(helper.make_node("ZipMap", ["probabilities"], ["output_probability"], domain=ML,
                                      classlabels_int64s=labels))
        outputs.append(_maps("output_probability"))
    else:
        outputs.append(helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [ROWS, len(labels)]))
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, FEATURES])], outputs)


CLASSIFIERS = {
    # scikit-learn RandomForestClassifier through skl2onnx: probabilities per leaf for every class, averaged
    "forest-3-classes-zipmap": dict(classes=3, trees=5, depth=4),
    "forest-4-classes-labels": dict(classes=4, trees=3, depth=3, labels=[10, 20, 30, 40], zipmap=False),
    # LightGBM multiclass through onnxmltools: a tree per class per round, softmax, missing values tracked
    "lightgbm-3-classes-softmax-nan": dict(classes=3, trees=9, depth=3, per_leaf="tree", post="SOFTMAX",
                                           missing=True, weights="raw"),
    "boosted-3-classes-base-values": dict(classes=3, trees=6, depth=2, per_leaf="tree", post="SOFTMAX",
                                          base=[0.1, -0.2, 0.3], weights="raw"),
    "softmax-zero": dict(classes=3, trees=3, depth=2, per_leaf="tree", post="SOFTMAX_ZERO", weights="raw"),
    "logistic-multiclass": dict(classes=3, trees=4, depth=3, per_leaf="all", post="LOGISTIC"),
    # LightGBM binary: one class id, raw margins, logistic
    "lightgbm-binary-logistic": dict(classes=2, trees=6, depth=3, per_leaf=0, post="LOGISTIC", weights="raw"),
    "binary-one-id-raw": dict(classes=2, trees=4, depth=3, per_leaf=0, weights="raw"),
    # scikit-learn binary forest: the positive class's probability as the one class id
    "forest-binary-probability": dict(classes=2, trees=5, depth=3, per_leaf=0),
    "binary-class-1-only": dict(classes=2, trees=3, depth=3, per_leaf=1),
    "binary-both-ids": dict(classes=2, trees=3, depth=3, per_leaf="all", zipmap=False),
    "every-node-mode": dict(classes=3, trees=6, depth=4, modes=tuple(
        ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"))),
    "stumps-and-single-leaf-depth": dict(classes=3, trees=4, depth=1),
}


@pytest.mark.parametrize("case", CLASSIFIERS)
def test_tree_ensemble_classifier(case):
    spec = CLASSIFIERS[case]
    seed = zlib.crc32(case.encode()) % 1000
    model = _classifier(seed, **spec)
    _compare(model, {"x": _x(seed, nan=spec.get("missing", False))})


def _regressor(seed, targets, trees, depth, aggregate="SUM", base=None, modes=("BRANCH_LEQ",), missing=False,
               post="NONE"):
    rng = np.random.default_rng(seed + 2)
    attrs, leaves = _trees(seed, trees, depth, modes, missing)
    tgt = {k: [] for k in ("target_treeids", "target_nodeids", "target_ids", "target_weights")}
    for tree, node in leaves:
        for k in range(targets):
            if targets > 1 and rng.random() < 0.2:
                continue  # (a leaf need not weigh every target)
            tgt["target_treeids"].append(tree)
            tgt["target_nodeids"].append(node)
            tgt["target_ids"].append(k)
            tgt["target_weights"].append(float(rng.standard_normal()))
    extra = {"base_values": base} if base is not None else {}
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["variable"], domain=ML, n_targets=targets,
                            aggregate_function=aggregate, post_transform=post, **attrs, **tgt, **extra)
    return _model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, FEATURES])],
                  [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [ROWS, targets])])


REGRESSORS = {
    "gradient-boosting-sum-base": dict(targets=1, trees=10, depth=3, base=[0.75]),
    "forest-average": dict(targets=1, trees=6, depth=4, aggregate="AVERAGE"),
    "two-targets-average-base": dict(targets=2, trees=4, depth=3, aggregate="AVERAGE", base=[0.5, -1.0]),
    "min": dict(targets=1, trees=5, depth=3, aggregate="MIN"),
    "max-two-targets": dict(targets=2, trees=5, depth=3, aggregate="MAX"),
    "lightgbm-missing-values": dict(targets=1, trees=8, depth=3, missing=True, modes=("BRANCH_LT",)),
    "three-targets-softmax": dict(targets=3, trees=4, depth=2, post="SOFTMAX"),
    "mixed-modes": dict(targets=1, trees=6, depth=4, modes=("BRANCH_LEQ", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")),
}


@pytest.mark.parametrize("case", REGRESSORS)
def test_tree_ensemble_regressor(case):
    spec = REGRESSORS[case]
    seed = zlib.crc32(case.encode()) % 1000
    _compare(_regressor(seed, **spec), {"x": _x(seed, nan=spec.get("missing", False))})


def test_tree_ensemble_double_input_and_tensor_attributes():
    """ai.onnx.ml 3's *_as_tensor attributes (double thresholds and weights) on a float64 X."""
    attrs, leaves = _trees(5, 4, 3)
    values = np.asarray(attrs.pop("nodes_values"), np.float64)
    weights = np.random.default_rng(3).standard_normal(len(leaves))
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain=ML, n_targets=1,
                            nodes_values_as_tensor=numpy_helper.from_array(values),
                            target_weights_as_tensor=numpy_helper.from_array(weights),
                            target_treeids=[t for t, _ in leaves], target_nodeids=[n for _, n in leaves],
                            target_ids=[0] * len(leaves), **attrs)
    model = _model([node], [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [ROWS, FEATURES])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, 1])])
    _compare(model, {"x": _x(5).astype(np.float64)})


# -- linear models, scaler, normalizer, label encoder ----------------------------------------------------------

def _linear_classifier(seed, classes, post, rows_of_coefficients=None, labels=None):
    rng = np.random.default_rng(seed)
    count = classes if rows_of_coefficients is None else rows_of_coefficients
    node = helper.make_node("LinearClassifier", ["x"], ["label", "probabilities"], domain=ML,
                            coefficients=rng.standard_normal(count * FEATURES).astype(np.float32).tolist(),
                            intercepts=rng.standard_normal(count).astype(np.float32).tolist(),
                            classlabels_ints=labels or list(range(classes)), post_transform=post, multi_class=0)
    width = 2 if count == 1 else classes
    return _model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, FEATURES])],
                  [helper.make_tensor_value_info("label", TensorProto.INT64, [ROWS]),
                   helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [ROWS, width])])


@pytest.mark.parametrize("classes,post,rows_of_coefficients", [
    (3, "NONE", None), (3, "SOFTMAX", None), (4, "LOGISTIC", None), (3, "SOFTMAX_ZERO", None),
    (2, "LOGISTIC", 1),  # scikit-learn's binary LogisticRegression: one row of coefficients, two labels
    (2, "NONE", 1), (2, "SOFTMAX", None),
])
def test_linear_classifier(classes, post, rows_of_coefficients):
    model = _linear_classifier(classes * 7 + len(post), classes, post, rows_of_coefficients,
                               labels=[5, 9, 11, 13][:classes])
    _compare(model, {"x": _x(classes)})


def test_linear_regressor_two_targets():
    rng = np.random.default_rng(4)
    node = helper.make_node("LinearRegressor", ["x"], ["y"], domain=ML, targets=2,
                            coefficients=rng.standard_normal(2 * FEATURES).tolist(), intercepts=[0.5, -0.25])
    model = _model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, FEATURES])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, 2])])
    _compare(model, {"x": _x(4)})


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
def test_scaler_then_normalizer(norm):
    """A scikit-learn StandardScaler then Normalizer pipeline, on int64 input (cast to float like onnxruntime)."""
    nodes = [helper.make_node("Scaler", ["x"], ["scaled"], domain=ML, offset=[0.5, -1.0, 2.0, 0.0, 1.5, -0.5],
                              scale=[2.0, 0.5, 1.0, 3.0, 0.25, 1.5]),
             helper.make_node("Normalizer", ["scaled"], ["y"], domain=ML, norm=norm)]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.INT64, [ROWS, FEATURES])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, FEATURES])])
    x = np.random.default_rng(6).integers(-5, 9, (ROWS, FEATURES)).astype(np.int64)
    _compare(model, {"x": x})


@pytest.mark.parametrize("keys,values,default,ml_opset", [
    ({"keys_int64s": [3, 7, 11, 42]}, {"values_int64s": [0, 1, 2, 3]}, {"default_int64": -1}, 2),
    ({"keys_int64s": [3, 7, 11]}, {"values_floats": [0.5, 1.5, -2.0]}, {"default_float": 9.0}, 2),
    ({"keys_floats": [0.5, 1.5, 2.5]}, {"values_int64s": [10, 20, 30]}, {}, 2),
    ({"keys_tensor": numpy_helper.from_array(np.asarray([3, 7, 11], np.int64))},
     {"values_tensor": numpy_helper.from_array(np.asarray([1.0, 2.0, 3.0], np.float32))},
     {"default_tensor": numpy_helper.from_array(np.asarray([-5.0], np.float32))}, 4),
])
def test_label_encoder(keys, values, default, ml_opset):
    key_type = TensorProto.FLOAT if "keys_floats" in keys else TensorProto.INT64
    out_value = next(iter(values.values()))
    out_type = TensorProto.FLOAT if "floats" in next(iter(values)) or (
        hasattr(out_value, "data_type") and out_value.data_type == TensorProto.FLOAT) else TensorProto.INT64
    node = helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML, **keys, **values, **default)
    model = _model([node], [helper.make_tensor_value_info("x", key_type, [ROWS, 3])],
                   [helper.make_tensor_value_info("y", out_type, [ROWS, 3])], ml_opset=ml_opset)
    rng = np.random.default_rng(ml_opset)
    if key_type == TensorProto.FLOAT:
        x = rng.choice([0.5, 1.5, 2.5, 3.5], (ROWS, 3)).astype(np.float32)
    else:
        x = rng.choice([3, 7, 11, 42, 5], (ROWS, 3)).astype(np.int64)
    _compare(model, {"x": x})


def test_a_pipeline_scaler_linear_classifier_zipmap():
    """What skl2onnx writes for StandardScaler + LogisticRegression: Scaler, LinearClassifier, Normalizer of the
    probabilities (L1), ZipMap."""
    rng = np.random.default_rng(8)
    nodes = [helper.make_node("Scaler", ["x"], ["scaled"], domain=ML, offset=rng.standard_normal(FEATURES).tolist(),
                              scale=rng.uniform(0.5, 2, FEATURES).tolist()),
             helper.make_node("LinearClassifier", ["scaled"], ["label", "raw"], domain=ML,
                              coefficients=rng.standard_normal(3 * FEATURES).tolist(),
                              intercepts=rng.standard_normal(3).tolist(), classlabels_ints=[0, 1, 2],
                              post_transform="LOGISTIC", multi_class=1),
             helper.make_node("Normalizer", ["raw"], ["probabilities"], domain=ML, norm="L1"),
             helper.make_node("ZipMap", ["probabilities"], ["output_probability"], domain=ML,
                              classlabels_int64s=[0, 1, 2])]
    outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [ROWS]), _maps("output_probability")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, FEATURES])], outputs)
    _compare(model, {"x": _x(8)})


# -- what cannot be converted, and why -----------------------------------------------------------------------------

def test_string_labels_are_refused_with_the_reason():
    model = _linear_classifier(1, 3, "NONE")
    node = model.graph.node[0]
    del node.attribute[[a.name for a in node.attribute].index("classlabels_ints")]
    node.attribute.append(helper.make_attribute("classlabels_strings", ["a", "b", "c"]))
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.STRING
    with pytest.raises(ConversionError) as caught:
        from_onnx(model)
    assert "NNRt has no string tensors" in str(caught.value)


def test_probit_is_refused_with_the_reason():
    model = _regressor(3, 1, 2, 2, post="PROBIT")
    with pytest.raises(ConversionError) as caught:
        from_onnx(model)
    assert "PROBIT" in str(caught.value) and "inverse error function" in str(caught.value)


def test_a_zipmap_that_is_not_the_last_step_is_refused():
    model = _classifier(4, 3, 2, 2)
    model.graph.node.append(helper.make_node("Identity", ["output_probability"], ["copy"]))
    model.graph.output[1].name = "copy"
    with pytest.raises(ConversionError) as caught:
        from_onnx(model)
    assert "only as a model's last step" in str(caught.value)


def test_check_compares_a_zipmap_output_as_the_values_of_its_maps():
    """``check``: onnxruntime returns the ZipMap output as a list of maps; it is compared as the [rows, classes]
    array the conversion returns (it was 'dtype float32 vs reference object')."""
    from nnrt_onnx.workflows.parity import check_model

    report = check_model(_classifier(3, 3, 4, 3), seed=2)
    assert report.ok
    probabilities = next(c for c in report.outputs if c.name == "output_probability")
    assert probabilities.reference_shape == [ROWS, 3] and probabilities.mismatched == 0
