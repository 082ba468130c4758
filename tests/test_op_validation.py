"""AddOperation validation for every op, derived from the op table, with the codes the real runtime gives.

For every op: a valid parameter set is accepted; each parameter with a wrong dtype, a wrong element count
(where enforced), a value out of range (where checked), without data, and a foreign parameter type is
rejected with OH_NN_INVALID_PARAMETER; so are wrong input/output counts and too many parameters.
The table itself is cross-checked against ../shared/reference/nnrt_ops_spec.json.
"""
from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from support import shared_file

from nnrt_onnx import Model, NNRtError, TensorDesc
from nnrt_onnx.dtypes import to_numpy
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as TT
from nnrt_onnx.optable import op_table

TABLE = op_table()
OPS = list(TABLE.values())


def _op_id(entry) -> str:
    return entry.name


def _valid_value(entry, variant):
    """A value the builder accepts for this variant: the table default when it fits, else zeros/ones."""
    default = entry.defaults.get(variant.to)
    count = variant.count
    if variant.scalar:
        value = default if isinstance(default, (int, float, bool)) and not isinstance(default, list) else 1
        if variant.to == "use_axis":
            value = True  # useAxis=false next to an AXIS tensor is rejected (see test_full_connection_axis...)
        if variant.value_range is not None and not variant.value_range[0] <= value <= variant.value_range[1]:
            value = variant.value_range[0]
        return np.asarray(value, dtype=to_numpy(variant.dtype))
    values = default if isinstance(default, list) and default and (count is None or len(default) == count) else None
    if values is None:
        values = [1] * (count or 2)
    array = np.asarray(values, dtype=to_numpy(variant.dtype))
    if variant.rank == 2:
        array = array.reshape(2, -1)
    return array


def _param_shape(variant, array: np.ndarray):
    if variant.rank == 0:
        return ()
    return array.shape if array.ndim else (1,)


def _base_model(entry, n_inputs=None, n_outputs=None):
    """A model with valid operands for ``entry``; returns (model, inputs, outputs)."""
    model = Model()
    n_inputs = entry.inputs[0] if n_inputs is None else n_inputs
    n_outputs = entry.outputs[0] if n_outputs is None else n_outputs
    inputs = []
    for position in range(n_inputs):
        dims = [1, 2, 2, 2]
        if entry.op == OP.OH_NN_OPS_LAYER_NORM:
            dims = [2, 3, 4] if position == 0 else [3, 4]
        if entry.op == OP.OH_NN_OPS_CAST and position == 1:
            inputs.append(model.add_constant(np.asarray(DT.OH_NN_FLOAT32, np.int32)))
            continue
        inputs.append(model.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, dims)))
    outputs = [model.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 2, 2, 2])) for _ in range(n_outputs)]
    return model, inputs, outputs


def _add_param(model, tensor_type, array, dims=None, with_data=True):
    dims = array.shape if dims is None else dims
    index = model.add_tensor_legacy(int(_dtype_of(array)), dims, tensor_type=tensor_type)
    if with_data:
        model.set_tensor_data(index, np.ascontiguousarray(array))
    return index


def _dtype_of(array):
    from nnrt_onnx.dtypes import from_numpy

    return from_numpy(array.dtype)


def _valid_params(model, entry, skip=None):
    indices = []
    for spec in entry.own_params:
        if spec.tensor_type == skip:
            continue
        variant = spec.variants[0]
        array = _valid_value(entry, variant)
        indices.append(_add_param(model, spec.tensor_type, array, _param_shape(variant, array)))
    return indices


def _expect_invalid(model, entry, params, inputs, outputs):
    with pytest.raises(NNRtError) as info:
        model.add_operation(entry.op, params, inputs, outputs)
    assert info.value.code == RC.OH_NN_INVALID_PARAMETER, info.value
    return info.value


@pytest.mark.parametrize("entry", OPS, ids=_op_id)
def test_valid_parameter_set_is_accepted(entry):
    model, inputs, outputs = _base_model(entry)
    params = _valid_params(model, entry)
    model.add_operation(entry.op, params, inputs, outputs)
    assert len(model.operations) == 1
    given = model.operations[0].values
    assert set(given) <= set(entry.keywords)


@pytest.mark.parametrize("entry", OPS, ids=_op_id)
def test_wrong_io_counts_and_too_many_params_are_rejected(entry):
    lo, hi = entry.inputs
    if lo > 1:
        model, inputs, outputs = _base_model(entry, n_inputs=lo - 1)
        _expect_invalid(model, entry, [], inputs, outputs)
    if hi < 200:
        model, inputs, outputs = _base_model(entry, n_inputs=hi + 1)
        _expect_invalid(model, entry, [], inputs, outputs)
    model, inputs, outputs = _base_model(entry)
    _expect_invalid(model, entry, [], inputs, [])
    if entry.outputs[1] < 200:
        model, inputs, outputs = _base_model(entry, n_outputs=entry.outputs[1] + 1)
        _expect_invalid(model, entry, [], inputs, outputs)
    model, inputs, outputs = _base_model(entry)
    extra = [_add_param(model, TT.OH_NN_TENSOR, np.zeros(1, np.float32)) for _ in range(entry.param_max + 1)]
    if entry.own_params:
        spec = entry.own_params[0]
        array = _valid_value(entry, spec.variants[0])
        extra = [_add_param(model, spec.tensor_type, array, _param_shape(spec.variants[0], array))
                 for _ in range(entry.param_max + 1)]
    _expect_invalid(model, entry, extra, inputs, outputs)


@pytest.mark.parametrize("entry", OPS, ids=_op_id)
def test_foreign_parameter_types_are_rejected(entry):
    foreign = next(t for t in TT if t != TT.OH_NN_TENSOR and t not in entry.params)
    for tensor_type in (foreign, TT.OH_NN_TENSOR):
        model, inputs, outputs = _base_model(entry)
        params = [_add_param(model, tensor_type, np.zeros((), np.int8))]
        error = _expect_invalid(model, entry, params, inputs, outputs)
        if entry.param_max:  # ops without parameters reject on the count first
            assert tensor_type.name in error.message


PARAM_CASES = [(entry, spec) for entry in OPS for spec in entry.own_params]


def _param_id(case) -> str:
    entry, spec = case
    return f"{entry.name}-{spec.tensor_type.name[6:].lower()}"


@pytest.mark.parametrize("case", PARAM_CASES, ids=[_param_id(c) for c in PARAM_CASES])
def test_each_parameter_is_validated(case):
    entry, spec = case
    for variant in spec.variants:
        good = _valid_value(entry, variant)
        shape = _param_shape(variant, good)

        # accepted alone
        model, inputs, outputs = _base_model(entry)
        model.add_operation(entry.op, [_add_param(model, spec.tensor_type, good, shape)], inputs, outputs)

        # wrong dtype
        wrong_dtype = np.int32 if variant.dtype != DT.OH_NN_INT32 else np.int64
        model, inputs, outputs = _base_model(entry)
        _expect_invalid(model, entry, [_add_param(model, spec.tensor_type, good.astype(wrong_dtype), shape)], inputs, outputs)

        # missing data
        model, inputs, outputs = _base_model(entry)
        _expect_invalid(model, entry, [_add_param(model, spec.tensor_type, good, shape, with_data=False)], inputs, outputs)

        # wrong element count, where the runtime enforces one
        if variant.count is not None:
            wrong = np.resize(good.reshape(-1), variant.count + 2)
            model, inputs, outputs = _base_model(entry)
            _expect_invalid(model, entry, [_add_param(model, spec.tensor_type, wrong)], inputs, outputs)

        # the ends of the range the real runtime checks are accepted, one step outside is not: the values come
        # from the reference (nnrt_ops_spec.json, .md) and the header, never from the table under test
        accepted = _spec_range(entry, spec, variant)
        if accepted is not None:
            info = np.iinfo(good.dtype)
            for value in accepted:
                model, inputs, outputs = _base_model(entry)
                param = _add_param(model, spec.tensor_type, np.full_like(good, value), shape)
                model.add_operation(entry.op, [param], inputs, outputs)
            for value in (accepted[0] - 1, accepted[1] + 1):
                if info.min <= value <= info.max:
                    model, inputs, outputs = _base_model(entry)
                    bad = _add_param(model, spec.tensor_type, np.full_like(good, value), shape)
                    _expect_invalid(model, entry, [bad], inputs, outputs)


@pytest.mark.parametrize("entry", [e for e in OPS if any(p.required for p in e.params.values())], ids=_op_id)
def test_missing_required_parameter_fails_at_finish(entry):
    required = next(p for p in entry.params.values() if p.required)
    model, inputs, outputs = _base_model(entry)
    model.add_operation(entry.op, _valid_params(model, entry, skip=required.tensor_type), inputs, outputs)
    model.specify_inputs_and_outputs(inputs[:1], outputs)
    with pytest.raises(NNRtError) as info:
        model.finish()
    assert info.value.code == RC.OH_NN_FAILED
    assert required.tensor_type.name in info.value.message


def test_pad_parameter_routes_by_element_count():
    entry = TABLE[OP.OH_NN_OPS_CONV2D]
    model, inputs, outputs = _base_model(entry)
    mode = _add_param(model, TT.OH_NN_CONV2D_PAD, np.asarray([1], np.int8))  # a 1-element "pad" is a pad mode
    pads = _add_param(model, TT.OH_NN_CONV2D_PAD_MODE, np.asarray([1, 2, 3, 4], np.int64))  # and 4 elements a pad list
    model.add_operation(entry.op, [mode, pads], inputs, outputs)
    assert model.operations[0].values == {"pad_mode": 1, "pad_list": [1, 2, 3, 4]}
    model, inputs, outputs = _base_model(entry)
    _expect_invalid(model, entry, [_add_param(model, TT.OH_NN_CONV2D_PAD, np.zeros(3, np.int64))], inputs, outputs)


def test_conv_weight_and_depthwise_input_ranks_are_checked():
    for op, position in ((OP.OH_NN_OPS_CONV2D, 1), (OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE, 0),
                         (OP.OH_NN_OPS_CONV2D_TRANSPOSE, 1)):
        entry = TABLE[op]
        model, inputs, outputs = _base_model(entry)
        inputs[position] = model.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 3, 1]))
        _expect_invalid(model, entry, [], inputs, outputs)


def test_layer_norm_axis_and_gamma_shape_are_checked():
    entry = TABLE[OP.OH_NN_OPS_LAYER_NORM]
    model, inputs, outputs = _base_model(entry)
    axis = _add_param(model, TT.OH_NN_LAYER_NORM_BEGIN_NORM_AXIS, np.asarray(2, np.int64), ())
    _expect_invalid(model, entry, [axis], inputs, outputs)  # gamma [3,4] != input[2:] = [4]
    model, inputs, outputs = _base_model(entry)
    axis = _add_param(model, TT.OH_NN_LAYER_NORM_BEGIN_NORM_AXIS, np.asarray(1, np.int64), (1,))
    _expect_invalid(model, entry, [axis], inputs, outputs)  # rank-0 required
    model, inputs, outputs = _base_model(entry)
    axis = _add_param(model, TT.OH_NN_LAYER_NORM_BEGIN_NORM_AXIS, np.asarray(3, np.int64), ())
    _expect_invalid(model, entry, [axis], inputs, outputs)  # axis must be < rank


def test_full_connection_axis_conflicts_with_use_axis_false():
    entry = TABLE[OP.OH_NN_OPS_FULL_CONNECTION]
    for order in ((0, 1), (1, 0)):
        model, inputs, outputs = _base_model(entry)
        made = [_add_param(model, TT.OH_NN_FULL_CONNECTION_AXIS, np.asarray(1, np.int64), ()),
                _add_param(model, TT.OH_NN_FULL_CONNECTION_USE_AXIS, np.asarray(False), ())]
        _expect_invalid(model, entry, [made[i] for i in order], inputs, outputs)
    model, inputs, outputs = _base_model(entry)
    params = [_add_param(model, TT.OH_NN_FULL_CONNECTION_AXIS, np.asarray(1, np.int64), ())]
    model.add_operation(entry.op, params, inputs, outputs)
    assert model.operations[0].values["use_axis"] is True


def test_cast_reads_the_target_type_from_its_second_input():
    entry = TABLE[OP.OH_NN_OPS_CAST]
    model, inputs, outputs = _base_model(entry)
    inputs[1] = model.add_constant(np.asarray(13, np.int32))
    _expect_invalid(model, entry, [], inputs, outputs)
    model, inputs, outputs = _base_model(entry)
    inputs[1] = model.add_tensor(TensorDesc(DT.OH_NN_INT32, [1]))
    _expect_invalid(model, entry, [], inputs, outputs)


def test_repeated_append_parameters_concatenate():
    entry = TABLE[OP.OH_NN_OPS_SPLIT]
    model, inputs, outputs = _base_model(entry, n_outputs=3)
    a = _add_param(model, TT.OH_NN_SPLIT_SIZE_SPLITS, np.asarray([1], np.int64))
    b = _add_param(model, TT.OH_NN_SPLIT_SIZE_SPLITS, np.asarray([2, 3], np.int64))
    model.add_operation(entry.op, [a, b], inputs, outputs)
    assert model.operations[0].values["size_splits"] == [1, 2, 3]
    model, inputs, outputs = _base_model(TABLE[OP.OH_NN_OPS_CONCAT])
    a = _add_param(model, TT.OH_NN_CONCAT_AXIS, np.asarray(0, np.int64), ())
    b = _add_param(model, TT.OH_NN_CONCAT_AXIS, np.asarray(0, np.int64), ())
    _expect_invalid(model, TABLE[OP.OH_NN_OPS_CONCAT], [a, b], inputs, outputs)  # max 1 parameter


# -- the table is faithful to the reference read from the real runtime ----------------------------------------

@functools.cache
def _reference():
    return {o["name"]: o for o in json.loads(shared_file("reference", "nnrt_ops_spec.json").read_text())}


@functools.cache
def _reference_rules() -> dict[str, tuple[int, int]]:
    """Value ranges the reference states once for every op: fused activations hold an OH_NN_FuseType (its values read
    from the header), pad modes are 0..2 (nnrt_ops_spec.md, "Pad-mode values: accepted range 0..2")."""
    header = shared_file("spec", "neural_network_runtime_type.h").read_text()
    body = re.search(r"typedef enum[^{]*\{([^}]*)\}\s*OH_NN_FuseType;", header).group(1)
    fuse = [int(v) for v in re.findall(r"=\s*(\d+)", body)]
    md = shared_file("reference", "nnrt_ops_spec.md").read_text()
    pad = re.search(r"Pad-mode values: accepted range (\d+)\.\.(\d+)", md)
    return {"activation": (min(fuse), max(fuse)), "pad_mode": (int(pad.group(1)), int(pad.group(2)))}


def _reference_param(entry, spec) -> dict:
    return next(p for p in _reference()[entry.op.name]["params"] if p["tensor_type"] == spec.tensor_type.name)


def _spec_range(entry, spec, variant) -> tuple[int, int] | None:
    """The values the real runtime's builder accepts for this parameter form, read from the reference (never from
    the table): None when it checks no range. A 1-element pad tensor is a pad mode whatever its type (both types
    share one setter), so its range is the pad modes'; a 4-element one is a pad list (no range)."""
    ref = _reference_param(entry, spec)
    if re.search(r"ACTIVATION_?TYPE$", spec.tensor_type.name):
        return _reference_rules()["activation"]
    if variant.to == "pad_mode":
        return _reference_rules()["pad_mode"]
    if variant.to == "pad_list":
        return None
    text = f"{ref['meaning']} {ref['notes']}"
    if "NOT range-checked" in text:
        return None
    span = re.search(r"(?<![\w.])(-?\d+)\.\.(-?\d+)", text)  # "0..3"
    if span:
        return int(span.group(1)), int(span.group(2))
    listed = sorted({int(v) for v in re.findall(r"(?<![\w.<>=-])(\d+)\s*(?:=|->)(?!=)", text)})  # "0=floor, 1=ceil"
    if listed:
        assert listed == list(range(listed[0], listed[-1] + 1)), f"{spec.tensor_type.name}: values {listed}"
        return listed[0], listed[-1]
    return None


@pytest.mark.parametrize("case", PARAM_CASES, ids=[_param_id(c) for c in PARAM_CASES])
def test_table_ranges_are_the_reference_ranges(case):
    """Both ways: a parameter the runtime range-checks has exactly that range in the table, and the table checks no
    range the runtime does not (a widened, narrowed, invented or forgotten range fails here)."""
    entry, spec = case
    for variant in spec.variants:
        assert variant.value_range == _spec_range(entry, spec, variant), (spec.tensor_type.name, variant.to)


# [defaults] values that differ from the builder's default on purpose (docs/deviations.md), or are the same default
# written as the kernel reads it. Keyed by (op, kernel keyword): the reference's default text and the table's value.
DEFAULT_DEVIATIONS = {
    # no pad mode: the builder keeps PAD_MODE_PAD (0) and uses the pad list; the kernels spell that mode -1
    **{(op, "pad_mode"): (0, -1) for op in ("AVG_POOL", "MAX_POOL", "CONV2D", "CONV2D_TRANSPOSE",
                                                             "DEPTHWISE_CONV2D_NATIVE")},
    # an empty pad list / crops / paddings / output paddings is no padding: zeros, as the kernels read them
    **{(op, "pad_list"): ("[]", [0, 0, 0, 0]) for op in ("AVG_POOL", "MAX_POOL", "CONV2D", "CONV2D_TRANSPOSE",
                                                         "DEPTHWISE_CONV2D_NATIVE")},
    ("BATCH_TO_SPACE_ND", "crops"): ("[]", [0, 0, 0, 0]),
    ("SPACE_TO_BATCH_ND", "paddings"): ("[]", [0, 0, 0, 0]),
    ("CONV2D_TRANSPOSE", "output_paddings"): ("[]", [0, 0]),
    # deviations.md "Conv/pool strides, dilation omitted": [1, 1], not empty lists
    **{(op, "strides"): ("[]", [1, 1]) for op in ("CONV2D", "CONV2D_TRANSPOSE", "DEPTHWISE_CONV2D_NATIVE")},
    **{(op, "stride"): ("[]", [1, 1]) for op in ("AVG_POOL", "MAX_POOL")},
    **{(op, "dilation"): ("[]", [1, 1]) for op in ("CONV2D", "CONV2D_TRANSPOSE", "DEPTHWISE_CONV2D_NATIVE")},
    # deviations.md "Reduce coeff default": 1.0
    **{(op, "coeff"): (0.0, 1.0) for op in ("REDUCE_MEAN", "REDUCE_PROD", "REDUCE_ALL", "REDUCE_MAX", "REDUCE_MIN",
                                            "REDUCE_SUM", "REDUCE_L2")},
    ("SOFTMAX", "axis"): ("[]", -1),  # deviations.md "SOFTMAX axis omitted"
    ("TOP_K", "axis"): (0, -1),  # deviations.md "TOP_K axis omitted"
    ("L2_NORMALIZE", "axis"): ("[]", [0]),  # deviations.md "L2_NORMALIZE axis omitted"
    ("CLIP", "max"): (0.0, math.inf),  # deviations.md "CLIP bounds omitted"
    ("CLIP", "min"): (0.0, -math.inf),
    ("DEPTH_TO_SPACE", "mode"): ('""', 0),  # deviations.md "DEPTH_TO_SPACE mode omitted": DCR (0)
    ("LRN", "norm_region"): ('"ACROSS_CHANNELS"', 0),  # the only region; its parameter value is 0 (the reference)
}


def _parse_default(text: str):
    """The builder's default from the reference's text: a number, false/true, a list, "NAME (n)" -> n, a quoted
    string; None when there is none ("none -- REQUIRED")."""
    text = text.strip()
    if text.startswith("none"):
        return None
    named = re.fullmatch(r"[A-Z_]+ \((-?\d+)\)(?: = .*)?", text)
    if named:
        return int(named.group(1))
    padlist = re.fullmatch(r"padList \[\]", text)
    if padlist:
        return "[]"
    first = text.split(" (")[0].strip()
    if first in ("false", "true"):
        return first == "true"
    if first.startswith('"'):
        return first
    if first.startswith("["):
        return "[]" if first == "[]" else json.loads(first)
    return json.loads(first)


DEFAULT_CASES = [(entry, spec) for entry, spec in PARAM_CASES if not spec.alias]


@pytest.mark.parametrize("case", DEFAULT_CASES, ids=[_param_id(c) for c in DEFAULT_CASES])
def test_table_defaults_are_the_reference_defaults(case):
    """Every default the kernel gets when the model omits a parameter is the builder's default (nnrt_ops_spec.json),
    or a listed deviation: an equal value written as the kernel reads it, or a documented decision."""
    entry, spec = case
    for to in sorted({v.to for v in spec.variants}):
        key = (entry.op.name[10:], to)
        ref = _reference_param(entry, spec)
        if to in ("pad_mode", "pad_list"):  # a pad tensor of either type may be either form: each form's default
            suffix = "_PAD_MODE" if to == "pad_mode" else "_PAD"  # is the one of the parameter named after it
            ref = next(p for p in _reference()[entry.op.name]["params"]
                       if p["tensor_type"].endswith(suffix) and not p["alias_from_other_op"])
        ref_default = _parse_default(ref["default"])
        ours = entry.defaults.get(to)
        if key in DEFAULT_DEVIATIONS:
            theirs, value = DEFAULT_DEVIATIONS[key]
            assert ref_default == theirs, f"{key}: the reference's default is now {ref_default!r}: update the list"
            assert ours == value, f"{key}: the table's default {ours!r} is not the listed {value!r}"
            continue
        if ref_default is None:  # required: no default in the table either
            assert to not in entry.defaults, key
            continue
        if ref_default == "[]":
            ref_default = []
        assert type(ours) is type(ref_default) or {type(ours), type(ref_default)} == {int, float}, (key, ours)
        assert ours == ref_default, f"{key}: table default {ours!r}, the builder's {ref_default!r}"


def test_default_deviations_are_documented():
    """Each decided deviation of a default is a row of docs/deviations.md (the representation-only ones aside)."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "deviations.md").read_text()
    for row in ("Conv/pool strides, dilation omitted", "Reduce coeff default", "SOFTMAX axis omitted",
                "TOP_K axis omitted", "L2_NORMALIZE axis omitted", "CLIP bounds omitted", "DEPTH_TO_SPACE mode omitted"):
        assert f"| {row} |" in text, row


@pytest.mark.parametrize("entry", OPS, ids=_op_id)
def test_table_matches_reference(entry):
    ref = _reference()[entry.op.name]
    assert entry.inputs == (ref["inputs_min"], ref["inputs_max"])
    assert entry.outputs == (ref["outputs_min"], ref["outputs_max"])
    assert entry.param_max == ref["param_max"]
    assert {p["tensor_type"] for p in ref["params"]} == {t.name for t in entry.params}
    for p in ref["params"]:
        spec = entry.params[TT[p["tensor_type"]]]
        assert spec.alias == p["alias_from_other_op"]
        assert spec.required == p["required"]
        assert sorted(v.dtype.name for v in spec.variants) == sorted(p["dtype"])
        ref_counts = p["count"] if isinstance(p["count"], list) else [p["count"]]
        ours = sorted((v.count for v in spec.variants), key=str)
        # BatchToSpaceND crops: the builder reads 4 values without checking; we require 4 (see docs/deviations.md)
        if p["tensor_type"] != "OH_NN_BATCH_TO_SPACE_ND_CROPS":
            assert ours == sorted(ref_counts, key=str)
        if p["rank0_required"]:
            assert all(v.rank == 0 for v in spec.variants)


def test_every_op_and_every_parameter_type_is_declared():
    assert set(TABLE) == set(OP)
    declared = {t for e in OPS for t in e.params}
    # every parameter type but LayerNorm's ELEMENTWISE_AFFINE, which no builder accepts
    assert declared == set(TT) - {TT.OH_NN_TENSOR, TT.OH_NN_LAYER_NORM_ELEMENTWISE_AFFINE}
