"""Converters of the classical machine-learning operators (``ai.onnx.ml``: what skl2onnx and onnxmltools write for
scikit-learn, LightGBM, XGBoost pipelines), each to NNRt tensor ops, with onnxruntime's semantics.

Decisions (also stated where they are made):

* **Tree ensembles** (TreeEnsembleRegressor / TreeEnsembleClassifier) in the GEMM form of tree inference: the
  feature each branch node reads is GATHERed from X ([N, trees x nodes]); the branch conditions (one comparison per
  node mode present, selected by constant masks; NaN goes where ``nodes_missing_value_tracks_true`` sends it) are
  0/1; per tree, ``conditions @ C == E`` (C[i, l] = +1 when leaf l lies under node i's true branch, -1 under its
  false branch; E[l] = the true branches on leaf l's path) marks the one leaf each tree reaches (batched over the
  trees, padded to the largest); ``reached @ weights`` sums the leaves' weights per target or class. Every product
  is of 0/1 and small integers: exact. SUM, AVERAGE (/ trees), MIN and MAX aggregation; base values; post
  transforms NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO (PROBIT needs an inverse erf NNRt does not have: refused).
* **The classifier's labels** follow onnxruntime: the raw scores decide (before the post transform); several classes:
  the first largest score among the classes some reached leaf (or a base value) scores; two classes scored by one
  class id (LightGBM, skl2onnx's binary trees): that score s is the positive class's, the label is positive when
  s > 0.5 (all weights >= 0) or s > 0 (mixed signs); scored as class 0 the scores are [1 - s, s] (weights >= 0, or
  LOGISTIC: 1 - logistic(s)) or [-s, s], scored as class 1 they are [0, s] transformed; two class ids: the
  positive label when class 1's score (class 0's when class 1 has none) is > 0.
  Integer labels only (NNRt has no string tensors).
* **Linear models**: LinearRegressor ``X @ coefficients^T + intercepts``; LinearClassifier the same scores, labels
  by the raw scores (one score and two labels: positive when > 0, scores [1 - t, t] of the transformed score t).
* **Scaler** ``(X - offset) * scale``, **Normalizer** per row by the max, the sum of |x| or the L2 norm (not by 0),
  **LabelEncoder** of numeric keys and values (each key compared: the matching value, else the default).
* **ZipMap** (class -> probability maps) and **CastMap** are containers NNRt has no tensors for: as the last step of a
  model they return the scores tensor itself (the map's values in class order); anywhere else they are refused.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...ir.issues import INVALID_MODEL, UNSUPPORTED_DTYPE, ConversionIssue
from ..context import NodeContext
from . import converts
from ._common import (
    _arg_max,
    _binary,
    _cast,
    _compare,
    _const,
    _matmul,
    _reduce,
    _reshape,
    _transpose,
    _unary,
    _unsupported,
    _where,
)

_F32 = np.dtype(np.float32)
_NUMERIC_INPUTS = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.int32))
_COMPARISONS = {"BRANCH_LEQ": OP.OH_NN_OPS_LESS_EQUAL, "BRANCH_LT": OP.OH_NN_OPS_LESS,
                "BRANCH_GTE": OP.OH_NN_OPS_GREATER_EQUAL, "BRANCH_GT": OP.OH_NN_OPS_GREATER,
                "BRANCH_EQ": OP.OH_NN_OPS_EQUAL, "BRANCH_NEQ": OP.OH_NN_OPS_NOT_EQUAL}
_TRANSFORMS = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO")


# -- shared ------------------------------------------------------------------------------------------------------------

def _features(ctx: NodeContext, position: int = 0, work=None) -> tuple[str, int, int]:
    """Input ``position`` as a [N, C] matrix of ``work`` (float32 unless the input is float64): (name, N, C). A 1-D
    input is one row (onnxruntime)."""
    x = ctx.input(position)
    value = ctx.value(x)
    if value.dtype not in _NUMERIC_INPUTS:
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"input {x!r} has dtype {value.dtype} (float32, float64, int64, "
                                                 "int32)", tensor=x)
    shape = ctx.static_shape(x, "X")
    if len(shape) not in (1, 2):
        raise ConversionIssue(INVALID_MODEL, f"X must be [N, C] (or [C]), got {list(shape)}")
    rows, columns = (1, shape[0]) if len(shape) == 1 else shape
    work = np.dtype(work or (np.float64 if value.dtype == np.float64 else np.float32))
    x = _cast(ctx, x, work, f"{ctx.name}.x")
    return _reshape(ctx, x, (rows, columns)), rows, columns


def _floats(ctx: NodeContext, name: str, default=None) -> np.ndarray | None:
    """A float list attribute, or its ``<name>_as_tensor`` form (ai.onnx.ml 3)."""
    tensor = ctx.attr(f"{name}_as_tensor")
    value = ctx.attr(name, default)
    if tensor is not None:
        from onnx import numpy_helper

        return numpy_helper.to_array(tensor).astype(np.float64).reshape(-1)
    return None if value is None else np.asarray(value, np.float64).reshape(-1)


def _post_transform(ctx: NodeContext, scores: str, how: str, output: str | None = None) -> str:
    """NONE / LOGISTIC / SOFTMAX / SOFTMAX_ZERO of [N, K] scores along K (onnxruntime's formulas)."""
    if how == "PROBIT":
        raise _unsupported("post_transform='PROBIT' needs an inverse error function, which NNRt does not have")
    if how not in _TRANSFORMS:
        raise ConversionIssue(INVALID_MODEL, f"post_transform={how!r} is not one of {list(_TRANSFORMS)} or PROBIT")
    value = ctx.value(scores)
    if how == "NONE":
        result = scores
    elif how == "LOGISTIC":
        result = _unary(ctx, OP.OH_NN_OPS_SIGMOID, scores, f"{ctx.name}.logistic")
    elif how == "SOFTMAX":
        result = ctx.emit_to(OP.OH_NN_OPS_SOFTMAX, [scores], value.dtype, value.shape, f"{ctx.name}.softmax",
                             {"OH_NN_SOFTMAX_AXIS": [-1]})
    else:  # SOFTMAX_ZERO: entries within 1e-7 of 0 stay (nearly) zero: x * exp(-max) instead of exp(x - max)
        top = _reduce(ctx, "MAX", scores, [1], True, f"{ctx.name}.max")
        nonzero = _compare(ctx, OP.OH_NN_OPS_GREATER, _unary(ctx, OP.OH_NN_OPS_ABS, scores, f"{ctx.name}.abs"),
                           _const(ctx, 1e-7, value.dtype, "tiny"), f"{ctx.name}.nonzero")
        exps = _unary(ctx, OP.OH_NN_OPS_EXP, _binary(ctx, OP.OH_NN_OPS_SUB, scores, top, f"{ctx.name}.shifted"),
                      f"{ctx.name}.exp")
        scaled = _binary(ctx, OP.OH_NN_OPS_MUL, scores, _unary(ctx, OP.OH_NN_OPS_EXP, _unary(
            ctx, OP.OH_NN_OPS_NEG, top, f"{ctx.name}.neg_max"), f"{ctx.name}.exp_neg_max"), f"{ctx.name}.scaled")
        terms = _where(ctx, nonzero, exps, scaled, f"{ctx.name}.terms")
        total = _reduce(ctx, "SUM", _where(ctx, nonzero, exps, _const(ctx, 0, value.dtype, "zero"),
                                           f"{ctx.name}.counted"), [1], True, f"{ctx.name}.sum")
        result = _binary(ctx, OP.OH_NN_OPS_DIV, terms, total, f"{ctx.name}.softmax_zero")
    return _cast(ctx, result, _F32, f"{ctx.name}.scores", output=output) if output else result


def _labels(ctx: NodeContext, index: str, labels: Sequence[int], output: str) -> None:
    """``labels[index]`` as int64 into ``output``."""
    table = _const(ctx, np.asarray(labels, np.int64), np.int64, "labels")
    axis = _const(ctx, [0], np.int64, "label_axis")
    ctx.emit_to(OP.OH_NN_OPS_GATHER, [table, index, axis], np.int64, ctx.value(index).shape, f"{ctx.name}.labels",
                output=output)


def _int_labels(ctx: NodeContext, ints_attr: str) -> list[int]:
    strings = ctx.attr("classlabels_strings")
    ints = ctx.attr(ints_attr)
    if strings:
        raise ConversionIssue(UNSUPPORTED_DTYPE, "string class labels (classlabels_strings): NNRt has no string "
                                                 "tensors; export the model with integer labels")
    if not ints:
        raise ConversionIssue(INVALID_MODEL, f"{ints_attr} is missing")
    return [int(v) for v in ints]


def _positive(ctx: NodeContext, score: str, threshold: float) -> str:
    """1 where ``score`` > threshold, else 0 (int32 indices into the two labels)."""
    above = _compare(ctx, OP.OH_NN_OPS_GREATER, score, _const(ctx, threshold, ctx.value(score).dtype, "threshold"),
                     f"{ctx.name}.positive")
    return _cast(ctx, above, np.int32, f"{ctx.name}.label_index")


# -- linear models, scaler, normalizer ---------------------------------------------------------------------------

def _linear_scores(ctx: NodeContext, targets: int | None) -> tuple[str, int]:
    x, rows, columns = _features(ctx, work=np.float32)
    coefficients = np.asarray(ctx.attr("coefficients", []), np.float32)
    intercepts = np.asarray(ctx.attr("intercepts", []), np.float32)
    count = targets if targets is not None else intercepts.size
    if count <= 0 or coefficients.size != count * columns:
        raise ConversionIssue(INVALID_MODEL, f"{coefficients.size} coefficients for {count} target(s) of "
                                             f"{columns} features")
    if intercepts.size not in (0, count):
        raise ConversionIssue(INVALID_MODEL, f"{intercepts.size} intercepts for {count} target(s)")
    weight = ctx.constant(np.ascontiguousarray(coefficients.reshape(count, columns).T), f"{ctx.name}.coefficients")
    scores = _matmul(ctx, x, weight, f"{ctx.name}.product")
    if intercepts.size:
        scores = _binary(ctx, OP.OH_NN_OPS_ADD, scores, ctx.constant(intercepts, f"{ctx.name}.intercepts"),
                         f"{ctx.name}.scores")
    return scores, count


@converts("ai.onnx.ml.LinearRegressor")
def linear_regressor(ctx: NodeContext) -> None:
    """Y = X @ coefficients^T + intercepts ([N, targets], float32); post_transform NONE (PROBIT: refused)."""
    scores, _ = _linear_scores(ctx, int(ctx.attr("targets", 1)))
    _post_transform(ctx, scores, ctx.attr("post_transform", "NONE"), output=ctx.output(0))


@converts("ai.onnx.ml.LinearClassifier")
def linear_classifier(ctx: NodeContext) -> None:
    """Scores X @ coefficients^T + intercepts; labels from the raw scores (onnxruntime: the first largest; one score
    with two labels: the second when > 0), then the post transform; one score with two labels: [1 - t, t], t the
    score after NONE or LOGISTIC."""
    labels = _int_labels(ctx, "classlabels_ints")
    ctx.attr("multi_class")  # (onnxruntime reads it and ignores it: the scores are the same)
    how = ctx.attr("post_transform", "NONE")
    scores, count = _linear_scores(ctx, None)
    rows = ctx.value(scores).shape[0]
    if count == 1 and len(labels) == 2:
        if how == "PROBIT":
            raise _unsupported("post_transform='PROBIT' needs an inverse error function, which NNRt does not have")
        _labels(ctx, _reshape(ctx, _positive(ctx, scores, 0.0), (rows,)), labels, ctx.output(0))
        if len(ctx.node.output) > 1 and ctx.output(1):
            if how == "LOGISTIC":
                scores = _post_transform(ctx, scores, how)
            elif how != "NONE":
                raise _unsupported(f"post_transform={how!r} of one score with two labels")
            complement = _binary(ctx, OP.OH_NN_OPS_SUB, _const(ctx, 1.0, np.float32, "one"), scores,
                                 f"{ctx.name}.negative")
            ctx.emit_to(OP.OH_NN_OPS_CONCAT, [complement, scores], _F32, (rows, 2), f"{ctx.name}.z",
                        {"OH_NN_CONCAT_AXIS": 1}, output=ctx.output(1))
        return
    if count != len(labels):
        raise ConversionIssue(INVALID_MODEL, f"{count} scores for {len(labels)} class labels")
    _labels(ctx, _arg_max(ctx, scores, 1, False, np.int32, f"{ctx.name}.best"), labels, ctx.output(0))
    if len(ctx.node.output) > 1 and ctx.output(1):
        _post_transform(ctx, scores, how, output=ctx.output(1))


@converts("ai.onnx.ml.Scaler")
def scaler(ctx: NodeContext) -> None:
    """Y = (X - offset) * scale (one value, or one per column), float32."""
    x, rows, columns = _features(ctx, work=np.float32)
    out = x
    for attr, op in (("offset", OP.OH_NN_OPS_SUB), ("scale", OP.OH_NN_OPS_MUL)):
        values = np.asarray(ctx.attr(attr, []), np.float32).reshape(-1)
        if values.size not in (0, 1, columns):
            raise ConversionIssue(INVALID_MODEL, f"{attr} has {values.size} values for {columns} columns")
        if values.size:
            out = _binary(ctx, op, out, ctx.constant(values, f"{ctx.name}.{attr}"), f"{ctx.name}.{attr}ed")
    shape = ctx.value(ctx.input(0)).shape
    _reshape(ctx, out, shape if len(shape) == 2 else (columns,), output=ctx.output(0))


@converts("ai.onnx.ml.Normalizer")
def normalizer(ctx: NodeContext) -> None:
    """Each row divided by its max (MAX: the largest value, not magnitude, as onnxruntime), the sum of |x| (L1) or
    sqrt(sum x^2) (L2); a row whose norm is 0 stays as it is (onnxruntime); float32."""
    x, rows, columns = _features(ctx, work=np.float32)
    norm = ctx.attr("norm", "MAX")
    if norm == "MAX":
        divisor = _reduce(ctx, "MAX", x, [1], True, f"{ctx.name}.max")
    elif norm == "L1":
        divisor = _reduce(ctx, "SUM", _unary(ctx, OP.OH_NN_OPS_ABS, x, f"{ctx.name}.abs"), [1], True,
                          f"{ctx.name}.l1")
    elif norm == "L2":
        divisor = _unary(ctx, OP.OH_NN_OPS_SQRT, _reduce(ctx, "SUM", _binary(ctx, OP.OH_NN_OPS_MUL, x, x,
                                                                               f"{ctx.name}.square"),
                                                          [1], True, f"{ctx.name}.sum_squares"), f"{ctx.name}.l2")
    else:
        raise ConversionIssue(INVALID_MODEL, f"norm={norm!r} is not MAX, L1 or L2")
    zero = _compare(ctx, OP.OH_NN_OPS_EQUAL, divisor, _const(ctx, 0.0, np.float32, "zero"), f"{ctx.name}.zero")
    divisor = _where(ctx, zero, _const(ctx, 1.0, np.float32, "one"), divisor, f"{ctx.name}.divisor")
    out = _binary(ctx, OP.OH_NN_OPS_DIV, x, divisor, f"{ctx.name}.normalized")
    shape = ctx.value(ctx.input(0)).shape
    _reshape(ctx, out, shape if len(shape) == 2 else (columns,), output=ctx.output(0))


@converts("ai.onnx.ml.LabelEncoder")
def label_encoder(ctx: NodeContext) -> None:
    """Numeric keys to numeric values (int64 / float, as lists or tensors): each element compared with every key;
    the matching key's value, else the default. String keys or values: refused (NNRt has no string tensors)."""
    from onnx import numpy_helper

    def read(kind: str):
        tensor = ctx.attr(f"{kind}_tensor")
        if tensor is not None:
            return numpy_helper.to_array(tensor).reshape(-1)
        if ctx.attr(f"{kind}_strings"):
            raise ConversionIssue(UNSUPPORTED_DTYPE, f"string {kind} ({kind}_strings): NNRt has no string tensors")
        for suffix, dtype in (("int64s", np.int64), ("floats", np.float32)):
            found = ctx.attr(f"{kind}_{suffix}")
            if found is not None:
                return np.asarray(found, dtype)
        raise ConversionIssue(INVALID_MODEL, f"LabelEncoder has no {kind}")

    keys, values = read("keys"), read("values")
    if keys.size != values.size or keys.size == 0:
        raise ConversionIssue(INVALID_MODEL, f"{keys.size} keys for {values.size} values")
    default_tensor = ctx.attr("default_tensor")
    if ctx.attr("default_string") not in (None, "_Unused") and values.dtype.kind not in "iuf":
        raise ConversionIssue(UNSUPPORTED_DTYPE, "string default: NNRt has no string tensors")
    if default_tensor is not None:
        default = numpy_helper.to_array(default_tensor).reshape(-1)[0]
    elif values.dtype.kind == "f":
        default = ctx.attr("default_float", -0.0)
    else:
        default = ctx.attr("default_int64", -1)
    x = ctx.input(0)
    value = ctx.value(x)
    if value.dtype.kind not in "iuf" or keys.dtype.kind not in "iuf":
        raise ConversionIssue(UNSUPPORTED_DTYPE, f"LabelEncoder of {value.dtype} keys (numeric only)", tensor=x)
    shape = ctx.static_shape(x, "X")
    rank = len(shape)
    column = _reshape(ctx, x, (*shape, 1))
    key_row = ctx.constant(keys.astype(value.dtype).reshape((1,) * rank + (-1,)), f"{ctx.name}.keys")
    hits = _compare(ctx, OP.OH_NN_OPS_EQUAL, column, key_row, f"{ctx.name}.hits")
    out_dtype = values.dtype if values.dtype.kind == "f" else np.dtype(np.int64)
    chosen = _binary(ctx, OP.OH_NN_OPS_MUL, _cast(ctx, hits, out_dtype, f"{ctx.name}.one_hot"),
                     ctx.constant(values.astype(out_dtype).reshape((1,) * rank + (-1,)), f"{ctx.name}.values"),
                     f"{ctx.name}.chosen")
    found = _reduce(ctx, "SUM", chosen, [rank], False, f"{ctx.name}.found")
    any_hit = _reduce(ctx, "MAX", _cast(ctx, hits, np.int32, f"{ctx.name}.hit_int"), [rank], False,
                      f"{ctx.name}.any")
    matched = _cast(ctx, any_hit, np.bool_, f"{ctx.name}.matched")
    _where(ctx, matched, found, _const(ctx, default, out_dtype, "default"), f"{ctx.name}.encoded",
           output=ctx.output(0))


# -- ZipMap, CastMap: containers at the end -------------------------------------------------------------------------

def _last_step(ctx: NodeContext) -> None:
    if ctx.conversion is not None and ctx.output(0) not in ctx.conversion.model_outputs:
        raise _unsupported(f"{ctx.node.op_type} builds maps, which NNRt has no tensors for: only as a model's last "
                           "step (its output is then the tensor of the maps' values)")


@converts("ai.onnx.ml.ZipMap")
def zip_map(ctx: NodeContext) -> None:
    """The model's output is the [N, classes] scores themselves (the maps' values, in class order); class labels
    (classlabels_int64s / strings) only name the keys."""
    _last_step(ctx)
    ctx.attr("classlabels_int64s")
    ctx.attr("classlabels_strings")
    ctx.alias(ctx.input(0), ctx.output(0))


@converts("ai.onnx.ml.CastMap")
def cast_map(ctx: NodeContext) -> None:
    """A map read as a tensor: the values tensor of the ZipMap that built it (map_form DENSE), cast to
    ``cast_to``."""
    _last_step(ctx)
    if ctx.attr("map_form", "DENSE") != "DENSE":
        raise _unsupported("map_form='SPARSE' is not supported")
    ctx.attr("max_map")
    target = {"TO_FLOAT": np.float32, "TO_INT64": np.int64}.get(ctx.attr("cast_to", "TO_FLOAT"))
    if target is None:
        raise ConversionIssue(UNSUPPORTED_DTYPE, "cast_to='TO_STRING': NNRt has no string tensors")
    source = ctx.input(0)
    if ctx.value(source).dtype.kind not in "iuf":
        raise _unsupported("CastMap of a map NNRt cannot hold")
    _cast(ctx, source, target, f"{ctx.name}.cast", output=ctx.output(0))


# -- tree ensembles ---------------------------------------------------------------------------------------------------

class _Trees:
    """The ensemble's branch nodes and leaves per tree, laid out for the GEMM form (module doc)."""

    def __init__(self, ctx: NodeContext, columns: int):
        def ints(name):
            return [int(v) for v in ctx.attr(name, [])]

        tree_ids, node_ids = ints("nodes_treeids"), ints("nodes_nodeids")
        features, modes = ints("nodes_featureids"), list(ctx.attr("nodes_modes", []))
        true_ids, false_ids = ints("nodes_truenodeids"), ints("nodes_falsenodeids")
        thresholds = _floats(ctx, "nodes_values")
        thresholds = np.zeros(len(node_ids)) if thresholds is None else thresholds
        missing = ints("nodes_missing_value_tracks_true") or [0] * len(node_ids)
        _floats(ctx, "nodes_hitrates")  # (statistics of training: no effect on inference)
        count = len(node_ids)
        if not count or any(len(a) != count for a in (tree_ids, features, modes, true_ids, false_ids, missing)) \
                or thresholds.size != count:
            raise ConversionIssue(INVALID_MODEL, "the nodes_* attributes have different lengths (or none)")
        unknown = sorted(set(modes) - set(_COMPARISONS) - {"LEAF"})
        if unknown:
            raise ConversionIssue(INVALID_MODEL, f"node modes {unknown} are not ONNX's")
        self.node = {(t, n): i for i, (t, n) in enumerate(zip(tree_ids, node_ids))}
        if len(self.node) != count:
            raise ConversionIssue(INVALID_MODEL, "a (tree, node) id is given twice")
        bad = [f for f, m in zip(features, modes) if m != "LEAF" and not 0 <= f < columns]
        if bad:
            raise ConversionIssue(INVALID_MODEL, f"feature ids {sorted(set(bad))[:5]} are outside X's {columns} "
                                                 "columns")
        self.trees = sorted(set(tree_ids))
        self.branches: list[list[int]] = []  # per tree: branch node positions
        self.leaves: list[list[int]] = []  # per tree: leaf positions
        self.paths: list[list[list[tuple[int, bool]]]] = []  # per tree, per leaf: (branch slot, took the true side)
        for tree in self.trees:
            root = self._root(tree, tree_ids, node_ids, true_ids, false_ids, modes)
            branches, leaves, paths = [], [], []
            slot: dict[int, int] = {}
            stack = [(root, [])]
            seen = set()
            while stack:
                position, path = stack.pop()
                if position in seen:
                    raise ConversionIssue(INVALID_MODEL, f"tree {tree} is not a tree (node {node_ids[position]} is "
                                                         "reached twice)")
                seen.add(position)
                if modes[position] == "LEAF":
                    leaves.append(position)
                    paths.append(path)
                    continue
                slot[position] = len(branches)
                branches.append(position)
                for side, target in ((False, false_ids[position]), (True, true_ids[position])):
                    child = self.node.get((tree, target))
                    if child is None:
                        raise ConversionIssue(INVALID_MODEL, f"tree {tree}: node {node_ids[position]} points to "
                                                             f"node {target}, which does not exist")
                    stack.append((child, path + [(slot[position], side)]))
            self.branches.append(branches)
            self.leaves.append(leaves)
            self.paths.append(paths)
        self.features, self.modes, self.thresholds, self.missing = features, modes, thresholds, missing
        self.width = max(1, max(len(b) for b in self.branches))  # branch slots per tree
        self.depth = max(len(leaves) for leaves in self.leaves)  # leaf slots per tree
        self.leaf_slot = {p: (t, j) for t, leaves in enumerate(self.leaves) for j, p in enumerate(leaves)}

    @staticmethod
    def _root(tree, tree_ids, node_ids, true_ids, false_ids, modes) -> int:
        members = [i for i, t in enumerate(tree_ids) if t == tree]
        children = {c for i in members if modes[i] != "LEAF" for c in (true_ids[i], false_ids[i])}
        roots = [i for i in members if node_ids[i] not in children]
        if len(roots) != 1:
            raise ConversionIssue(INVALID_MODEL, f"tree {tree} has {len(roots)} roots")
        return roots[0]

    def leaf_weights(self, ctx: NodeContext, prefix: str, targets: int) -> tuple[np.ndarray, np.ndarray]:
        """(weights [trees, leaf slots, targets] summed per leaf, 1 where a leaf scores a target) from the
        ``<prefix>_treeids / _nodeids / _ids / _weights`` attributes."""
        tree_ids = [int(v) for v in ctx.attr(f"{prefix}_treeids", [])]
        node_ids = [int(v) for v in ctx.attr(f"{prefix}_nodeids", [])]
        ids = [int(v) for v in ctx.attr(f"{prefix}_ids", [])]
        weights = _floats(ctx, f"{prefix}_weights")
        weights = np.zeros(0) if weights is None else weights
        if not (len(tree_ids) == len(node_ids) == len(ids) == weights.size):
            raise ConversionIssue(INVALID_MODEL, f"the {prefix}_* attributes have different lengths")
        values = np.zeros((len(self.trees), self.depth, targets))
        scored = np.zeros((len(self.trees), self.depth, targets))
        for t, n, k, w in zip(tree_ids, node_ids, ids, weights):
            position = self.node.get((t, n))
            if position is None or position not in self.leaf_slot:
                raise ConversionIssue(INVALID_MODEL, f"{prefix} weight for tree {t} node {n}, which is not a leaf")
            if not 0 <= k < targets:
                raise ConversionIssue(INVALID_MODEL, f"{prefix} id {k} is outside the {targets} targets")
            tree, slot = self.leaf_slot[position]
            values[tree, slot, k] += w
            scored[tree, slot, k] = 1
        return values, scored


def _reached(ctx: NodeContext, trees: _Trees, x: str, rows: int, work: np.dtype) -> str:
    """[trees, N, leaf slots] in ``work``: 1 at the leaf each tree reaches for each row, else 0."""
    count, width, depth = len(trees.trees), trees.width, trees.depth
    feature = np.zeros((count, width), np.int32)
    threshold = np.zeros((count, width), work)
    masks = {mode: np.zeros((count, width), work) for mode in _COMPARISONS}
    missing = np.zeros((count, width), work)
    steer = np.zeros((count, width, depth), work)  # C
    needed = np.full((count, depth), -1.0, work)  # E (-1: a padding leaf, never reached)
    for t in range(count):
        for slot, position in enumerate(trees.branches[t]):
            feature[t, slot] = trees.features[position]
            threshold[t, slot] = trees.thresholds[position]
            masks[trees.modes[position]][t, slot] = 1
            missing[t, slot] = trees.missing[position]
        for leaf, path in enumerate(trees.paths[t]):
            needed[t, leaf] = sum(side for _, side in path)
            for slot, side in path:
                steer[t, slot, leaf] = 1 if side else -1
    picked = ctx.emit_to(OP.OH_NN_OPS_GATHER, [x, ctx.constant(feature.reshape(-1), f"{ctx.name}.features"),
                                               _const(ctx, [1], np.int64, "feature_axis")],
                         work, (rows, count * width), f"{ctx.name}.picked")
    bound = ctx.constant(threshold.reshape(-1), f"{ctx.name}.thresholds")
    used = [m for m in _COMPARISONS if masks[m].any()] or ["BRANCH_LEQ"]
    condition = None
    for mode in used:
        met = _cast(ctx, _compare(ctx, _COMPARISONS[mode], picked, bound, f"{ctx.name}.{mode.lower()}"), work,
                    f"{ctx.name}.{mode.lower()}.f")
        if len(used) > 1:
            met = _binary(ctx, OP.OH_NN_OPS_MUL, met, ctx.constant(masks[mode].reshape(-1), f"{ctx.name}.{mode}"),
                          f"{ctx.name}.{mode.lower()}.masked")
        condition = met if condition is None else _binary(ctx, OP.OH_NN_OPS_ADD, condition, met,
                                                          f"{ctx.name}.conditions")
    if missing.any():  # NaN: the comparisons are false; nodes tracking missing values to the true side take it
        nan = _cast(ctx, _compare(ctx, OP.OH_NN_OPS_NOT_EQUAL, picked, picked, f"{ctx.name}.nan"), work,
                    f"{ctx.name}.nan.f")
        tracked = _binary(ctx, OP.OH_NN_OPS_MUL, nan, ctx.constant(missing.reshape(-1), f"{ctx.name}.missing"),
                          f"{ctx.name}.tracked")
        condition = _binary(ctx, OP.OH_NN_OPS_MAXIMUM, condition, tracked, f"{ctx.name}.with_missing")
    per_tree = _transpose(ctx, _reshape(ctx, condition, (rows, count, width)), (1, 0, 2))
    votes = _matmul(ctx, per_tree, ctx.constant(steer, f"{ctx.name}.steer"), f"{ctx.name}.votes")
    hit = _compare(ctx, OP.OH_NN_OPS_EQUAL, votes, ctx.constant(needed.reshape(count, 1, depth),
                                                                f"{ctx.name}.needed"), f"{ctx.name}.hit")
    return _cast(ctx, hit, work, f"{ctx.name}.reached")


def _aggregate(ctx: NodeContext, reached: str, values: np.ndarray, scored: np.ndarray, how: str, rows: int,
               work: np.dtype) -> tuple[str, str]:
    """(scores [N, targets], 1 where some reached leaf scored the target) aggregated over the trees."""
    count, _, targets = values.shape
    has = _reduce(ctx, "SUM", _matmul(ctx, reached, ctx.constant(scored.astype(work), f"{ctx.name}.scored"),
                                      f"{ctx.name}.scored_by"), [0], False, f"{ctx.name}.has")
    has = _compare(ctx, OP.OH_NN_OPS_GREATER, has, _const(ctx, 0, work, "none"), f"{ctx.name}.has_score")
    if how in ("SUM", "AVERAGE"):
        total = _reduce(ctx, "SUM", _matmul(ctx, reached, ctx.constant(values.astype(work), f"{ctx.name}.weights"),
                                            f"{ctx.name}.leaf_values"), [0], False, f"{ctx.name}.sum")
        if how == "AVERAGE":
            total = _binary(ctx, OP.OH_NN_OPS_DIV, total, _const(ctx, count, work, "trees"), f"{ctx.name}.average")
        return total, has
    if how not in ("MIN", "MAX"):
        raise ConversionIssue(INVALID_MODEL, f"aggregate_function={how!r} is not SUM, AVERAGE, MIN or MAX")
    # each target: the leaves' values where reached and scoring it, +-inf elsewhere; the extreme over trees and leaves
    far = np.inf if how == "MIN" else -np.inf
    per_target = []
    for k in range(targets):
        candidates = np.where(scored[:, :, k] > 0, values[:, :, k], far).astype(work)
        shaped = ctx.constant(candidates.reshape(count, 1, -1), f"{ctx.name}.leaf_values{k}")
        live = _compare(ctx, OP.OH_NN_OPS_GREATER, reached, _const(ctx, 0, work, "zero"), f"{ctx.name}.live{k}")
        picked = _where(ctx, live, _binary(ctx, OP.OH_NN_OPS_ADD, shaped, _binary(
            ctx, OP.OH_NN_OPS_MUL, reached, _const(ctx, 0, work, "zero"), f"{ctx.name}.zeros{k}"),
            f"{ctx.name}.broadcast{k}"), _const(ctx, far, work, "far"), f"{ctx.name}.candidates{k}")
        extreme = _reduce(ctx, how, picked, [0, 2], False, f"{ctx.name}.{how.lower()}{k}")  # [N]
        per_target.append(_reshape(ctx, extreme, (rows, 1)))
    total = per_target[0] if targets == 1 else ctx.emit_to(
        OP.OH_NN_OPS_CONCAT, per_target, work, (rows, targets), f"{ctx.name}.extremes", {"OH_NN_CONCAT_AXIS": 1})
    total = _where(ctx, has, total, _const(ctx, 0, work, "zero"), f"{ctx.name}.scored_extremes")
    return total, has


def _tree_scores(ctx: NodeContext, prefix: str, targets: int, how: str):
    x, rows, columns = _features(ctx)
    work = ctx.value(x).dtype
    trees = _Trees(ctx, columns)
    values, scored = trees.leaf_weights(ctx, prefix, targets)
    reached = _reached(ctx, trees, x, rows, work)
    scores, has = _aggregate(ctx, reached, values, scored, how, rows, work)
    return scores, has, rows, work, values


@converts("ai.onnx.ml.TreeEnsembleRegressor")
def tree_ensemble_regressor(ctx: NodeContext) -> None:
    """[N, n_targets] float32: the aggregated leaf weights (SUM, AVERAGE, MIN, MAX) plus the base values (one per
    target; one value with one target), then the post transform (with one target onnxruntime applies only PROBIT,
    which is refused; others transform the targets together)."""
    targets = int(ctx.attr("n_targets", 1))
    how = ctx.attr("aggregate_function", "SUM")
    scores, _, rows, work, _ = _tree_scores(ctx, "target", targets, how)
    base = _floats(ctx, "base_values")
    if base is not None and base.size and (base.size == targets or (targets == 1 and base.size == 1)):
        scores = _binary(ctx, OP.OH_NN_OPS_ADD, scores, ctx.constant(base.astype(work), f"{ctx.name}.base"),
                         f"{ctx.name}.based")
    elif base is not None and base.size:
        raise ConversionIssue(INVALID_MODEL, f"{base.size} base values for {targets} targets")
    transform = ctx.attr("post_transform", "NONE")
    if targets == 1 and transform != "PROBIT":
        transform = "NONE"  # (onnxruntime: a single target takes no other transform)
    _post_transform(ctx, scores, transform, output=ctx.output(0))


@converts("ai.onnx.ml.TreeEnsembleClassifier")
def tree_ensemble_classifier(ctx: NodeContext) -> None:
    """Labels [N] (int64) and scores [N, classes] (float32): the summed leaf weights per class, with onnxruntime's
    rules for the labels and for two classes (module doc)."""
    labels = _int_labels(ctx, "classlabels_int64s")
    classes = len(labels)
    how = ctx.attr("post_transform", "NONE")
    if how == "PROBIT":
        raise _unsupported("post_transform='PROBIT' needs an inverse error function, which NNRt does not have")
    scores, has, rows, work, values = _tree_scores(ctx, "class", classes, "SUM")
    base = _floats(ctx, "base_values")
    class_ids = sorted({int(v) for v in ctx.attr("class_ids", [])})
    wants_scores = len(ctx.node.output) > 1 and bool(ctx.output(1))
    if classes > 2 or (classes == 2 and len(class_ids) == 2):
        if classes == 2 and base is not None and base.size:
            raise _unsupported("two classes with base_values: onnxruntime's handling is not reproduced")
        if base is not None and base.size:
            if base.size != classes:
                raise ConversionIssue(INVALID_MODEL, f"{base.size} base values for {classes} classes")
            scores = _binary(ctx, OP.OH_NN_OPS_ADD, scores, ctx.constant(base.astype(work), f"{ctx.name}.base"),
                             f"{ctx.name}.based")
            has = None  # (every class has a score)
        if classes == 2:  # positive when class 1 scores > 0 (class 0's score when class 1 has none)
            columns = [_reshape(ctx, _slice_column(ctx, t, k, rows), (rows,)) for t in (scores, has)
                       for k in (0, 1)]
            s0, s1, _, h1 = columns
            decisive = _where(ctx, h1, s1, s0, f"{ctx.name}.decisive")
            index = _positive(ctx, decisive, 0.0)
        else:
            ranked = scores if has is None else _where(ctx, has, scores, _const(ctx, -np.inf, work, "unscored"),
                                                        f"{ctx.name}.ranked")
            index = _arg_max(ctx, ranked, 1, False, np.int32, f"{ctx.name}.best")
        _labels(ctx, index, labels, ctx.output(0))
        if wants_scores:
            _post_transform(ctx, scores, how, output=ctx.output(1))
        return
    if classes != 2 or len(class_ids) != 1:
        raise ConversionIssue(INVALID_MODEL, f"{classes} class label(s) with class ids {class_ids}")
    if base is not None and base.size:
        raise _unsupported("two classes scored by one class id with base_values: onnxruntime's handling is not "
                           "reproduced")
    positive_weights = bool((values >= 0).all())
    (only,) = class_ids
    s = _reshape(ctx, _slice_column(ctx, scores, only, rows), (rows, 1))
    _labels(ctx, _reshape(ctx, _positive(ctx, s, 0.5 if positive_weights else 0.0), (rows,)), labels,
            ctx.output(0))
    if not wants_scores:
        return
    if only == 1:  # the positive class's own column; class 0 scores nothing (0), both transformed as they are
        _post_transform(ctx, scores, how, output=ctx.output(1))
        return
    if how not in ("NONE", "LOGISTIC"):
        raise _unsupported(f"post_transform={how!r} of two classes scored by one class id")
    if how == "LOGISTIC":
        s = _post_transform(ctx, s, how)
    other = _binary(ctx, OP.OH_NN_OPS_SUB, _const(ctx, 1.0, work, "one"), s, f"{ctx.name}.negative") \
        if positive_weights or how == "LOGISTIC" else _unary(ctx, OP.OH_NN_OPS_NEG, s, f"{ctx.name}.negative")
    pair = ctx.emit_to(OP.OH_NN_OPS_CONCAT, [other, s], work, (rows, 2), f"{ctx.name}.pair",
                       {"OH_NN_CONCAT_AXIS": 1})
    _cast(ctx, pair, _F32, f"{ctx.name}.z", output=ctx.output(1))


def _slice_column(ctx: NodeContext, matrix: str, column: int, rows: int) -> str:
    value = ctx.value(matrix)
    return ctx.emit_to(OP.OH_NN_OPS_GATHER, [matrix, _const(ctx, [column], np.int32, f"column{column}"),
                                             _const(ctx, [1], np.int64, "column_axis")],
                       value.dtype, (rows, 1), f"{ctx.name}.column{column}")
