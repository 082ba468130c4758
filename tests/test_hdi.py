"""The driver's view (HDI v2.1, issue 31): the op table's [hdi] sections checked against the driver interface itself
(``../shared/spec/NodeAttrTypes.idl``, parsed here) and the reference read from the real runtime
(``../shared/reference/nnrt_ops_spec.json|md``), then :func:`nnrt_onnx.hdi.hdi_view` of built models against values
worked out by hand from the IDL, and the CLI (``inspect --hdi``, ``ops --hdi``, docs/hdi.md).
"""
from __future__ import annotations

import functools
import json
import os
import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import REPO, shared_file

from nnrt_onnx import Model, NNRtError, QuantParam, TensorDesc, from_onnx
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as TT
from nnrt_onnx.hdi import hdi_definitions, hdi_view, structure_rows
from nnrt_onnx.optable import OpTableError, load_entry, op_table
from nnrt_onnx.testing.opcases import op_cases
from nnrt_onnx.workflows.hdi_text import hdi_markdown

TABLE = op_table()
ENTRIES = list(TABLE.values())


# -- the IDL, parsed -------------------------------------------------------------------------------------------------

@functools.cache
def idl() -> dict[str, dict]:
    """NodeAttrTypes.idl: ``{struct: {"fields": [(type, name)], "node_type": the NodeType its doc comment names}}``."""
    text = shared_file("spec", "NodeAttrTypes.idl").read_text()
    structs = {}
    for doc, name, body in re.findall(r"(/\*\*(?:(?!\*/).)*\*/)\s*struct\s+(\w+)\s*\{(.*?)\};", text, re.S):
        node_type = re.search(r"The \{@link NodeType\} of this operator is <b>(\w+)</b>", doc)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        fields = [tuple(f.rsplit(None, 1)) for f in (" ".join(d.split()) for d in body.split(";")) if f]
        structs[name] = {"fields": fields, "node_type": node_type.group(1) if node_type else None}
    assert len(structs) == len(re.findall(r"^struct\s+\w+", text, re.M))  # every struct had its doc comment
    return structs


@functools.cache
def reference() -> dict[str, dict]:
    return {o["name"]: o for o in json.loads(shared_file("reference", "nnrt_ops_spec.json").read_text())}


@functools.cache
def reference_md() -> str:
    return shared_file("reference", "nnrt_ops_spec.md").read_text()


def _id(entry) -> str:
    return entry.name


# -- every structure, every field ----------------------------------------------------------------------------------

def test_every_idl_structure_is_an_ops_or_listed_unreachable():
    mapped = {e.hdi.struct for e in ENTRIES}
    unreachable = set(hdi_definitions()["unreachable"])
    assert not mapped & unreachable
    assert mapped | unreachable == set(idl()), (sorted(set(idl()) - mapped - unreachable), sorted(mapped - set(idl())))
    # what the table lists as unreachable the reference never names as an op's primitive
    assert not unreachable & {o["hdi_primitive"].split()[0] for o in reference().values()}


@pytest.mark.parametrize("entry", ENTRIES, ids=_id)
def test_every_field_of_the_structure_has_a_source_in_idl_order(entry):
    fields = idl()[entry.hdi.struct]["fields"]
    assert [f.name for f in entry.hdi.fields] == [name for _, name in fields]
    for (idl_type, name), field in zip(fields, entry.hdi.fields):
        enum = idl_type.split()[1] if idl_type.startswith("enum ") else None
        assert field.enum == enum, f"{name}: the IDL types it {idl_type!r}"
        assert field.kind in ("param", "const", "input")


def test_every_enum_the_idl_uses_is_declared():
    used = {t.split()[1] for s in idl().values() for t, _ in s["fields"] if t.startswith("enum ")}
    assert used <= set(hdi_definitions()["enums"]), sorted(used - set(hdi_definitions()["enums"]))


# Where the op's NodeType is not the one the IDL's doc comment gives its structure, and why.
NODE_TYPE_EXCEPTIONS = {
    # nnrt_ops_spec.md op 52: the runtime sends the V2 layout under NODE_TYPE_QUANT_DTYPE_CAST (113)
    "QuantDTypeCastV2": ("NODE_TYPE_QUANT_DTYPE_CAST_V2", "NODE_TYPE_QUANT_DTYPE_CAST"),
    # the IDL's doc comments of these two are swapped (each names the other's NodeType)
    "SquaredDifference": ("NODE_TYPE_SQUEEZE", "NODE_TYPE_SQUARED_DIFFERENCE"),
    "Squeeze": ("NODE_TYPE_SQUARED_DIFFERENCE", "NODE_TYPE_SQUEEZE"),
}


@pytest.mark.parametrize("entry", ENTRIES, ids=_id)
def test_node_type_is_the_idl_s_and_the_reference_s(entry):
    spec, ref = entry.hdi, reference()[entry.op.name]
    documented = idl()[spec.struct]["node_type"]
    if spec.struct in NODE_TYPE_EXCEPTIONS:
        assert (documented, spec.node_type) == NODE_TYPE_EXCEPTIONS[spec.struct]
    else:
        assert spec.node_type == documented
    assert spec.node_type == ref["hdi_node_type"]
    assert hdi_definitions()["enums"]["NodeType"][spec.node_type] == ref["hdi_node_type_value"]
    assert spec.struct == ref["hdi_primitive"].split()[0]
    assert spec.node_name == ref["lite_graph_node_name"]
    assert entry.quant_type_from_output0 == ref["node_quant_type_from_output0"]


# -- the builder's behaviour, field by field (nnrt_ops_spec.json) -----------------------------------------------------

def _sent(field, value):
    """A table value as sent: an enum member's number, a float as float32."""
    if field.enum is not None and isinstance(value, str):
        return hdi_definitions()["enums"][field.enum][value]
    return float(np.float32(value)) if isinstance(value, float) else value


def _reference_default(text: str):
    """The value the reference says the driver gets for an omitted parameter: ``("public", n)`` for an OH_NN_ name
    (converted by the builder), else ``("hdi", value)``; None when the parameter is required."""
    text = text.strip()
    if text.startswith("none"):
        return None
    named = re.match(r"(?:padList )?([A-Z][A-Z0-9_]*) \((-?\d+)\)", text)
    if named:
        return ("public" if named.group(1).startswith("OH_NN_") else "hdi", int(named.group(2)))
    if text.startswith("padList"):
        text = text[len("padList"):].strip()
    first = text.split(" (")[0].strip()
    if first in ("false", "true"):
        return "hdi", first == "true"
    return "hdi", json.loads(first)


def _param_fields():
    for entry in ENTRIES:
        for field in entry.hdi.fields:
            if field.kind == "param":
                yield entry, field


PARAM_FIELDS = list(_param_fields())


def _reference_params(entry, keyword):
    """The reference rows of the parameters that feed ``keyword`` (a pad mode/list: the one named after it)."""
    types = [s.tensor_type.name for s in entry.own_params if keyword in s.keywords]
    if keyword in ("pad_mode", "pad_list"):
        suffix = "_PAD_MODE" if keyword == "pad_mode" else "_PAD"
        types = [t for t in types if t.endswith(suffix)]
    return [p for p in reference()[entry.op.name]["params"] if p["tensor_type"] in types]


@pytest.mark.parametrize("case", PARAM_FIELDS, ids=[f"{e.name}-{f.name}" for e, f in PARAM_FIELDS])
def test_an_omitted_parameter_sends_the_builder_s_default(case):
    """The value a driver gets when the model omits the parameter is the reference's "default" (the value sent to
    the HDI primitive), converted by the field's conversion where the reference names the public value."""
    from nnrt_onnx.hdi import _convert

    entry, field = case
    (ref,) = _reference_params(entry, field.param)
    default = _reference_default(ref["default"])
    if default is None:
        assert ref["required"] and field.absent is None
        return
    side, value = default
    expected = _convert(field, value) if side == "public" else _sent(field, value)
    assert _sent(field, field.absent) == expected, (ref["default"], field.absent)


def _attribute_text(entry) -> str:
    return reference()[entry.op.name]["hdi_attributes"]


def _stated(text: str, name: str):
    """``name=VALUE`` in the reference's attribute text: NAME(n) -> n, numbers, booleans, []."""
    found = re.search(rf"\b{name}=(\w+)\((-?\d+)\)|\b{name}=(\[\]|true|false|-?[\d.]+)", text)
    if not found:
        return None
    if found.group(2) is not None:
        return int(found.group(2))
    return {"[]": [], "true": True, "false": False}.get(found.group(3), None) if found.group(3) in (
        "[]", "true", "false") else json.loads(found.group(3))


CONST_FIELDS = [(e, f) for e in ENTRIES for f in e.hdi.fields if f.kind == "const"]
# Constants the reference does not spell as name=value, with the words it uses instead.
UNSTATED_CONSTANTS = {("max_pool", "roundMode"): "roundMode = whatever the MindIR primitive defaults to"}


@pytest.mark.parametrize("case", CONST_FIELDS, ids=[f"{e.name}-{f.name}" for e, f in CONST_FIELDS])
def test_a_constant_field_is_the_builder_s_constant(case):
    entry, field = case
    text = _attribute_text(entry)
    if (entry.name, field.name) in UNSTATED_CONSTANTS:
        assert UNSTATED_CONSTANTS[entry.name, field.name] in text
        assert _sent(field, field.const) == 0  # the flatbuffer default of an unset enum field: its zero member
        return
    stated = _stated(text, field.name)
    assert stated is not None, f"the reference states no {field.name}=...: {text}"
    assert _sent(field, field.const) == stated


INPUT_FIELDS = [(e, f) for e in ENTRIES for f in e.hdi.fields if f.kind == "input"]


@pytest.mark.parametrize("case", INPUT_FIELDS, ids=[f"{e.name}-{f.name}" for e, f in INPUT_FIELDS])
def test_a_shape_field_reads_the_input_the_builder_reads(case):
    """``kernelSize=[weight.dims[1], weight.dims[2]]``, ``group=input.dims[3]``: weight is input #1, input #0."""
    entry, field = case
    found = re.search(rf"\b{field.name}=(\[(?:\w+\.dims\[\d+\](?:, )?)+\]|\w+\.dims\[\d+\])", _attribute_text(entry))
    assert found, _attribute_text(entry)
    reads = re.findall(r"(weight|input)\.dims\[(\d+)\]", found.group(1))
    assert {"input": 0, "weight": 1}[reads[0][0]] == field.input and len({r[0] for r in reads}) == 1
    assert [int(d) for _, d in reads] == list(field.dims)
    assert field.single_dim == (not found.group(1).startswith("["))


@pytest.mark.parametrize("entry", ENTRIES, ids=_id)
def test_kept_and_dropped_parameters_are_the_reference_s(entry):
    ref = reference()[entry.op.name]
    unmarked = {p["tensor_type"] for p in ref["params"]
                if re.search(r"not marked as (an )?operator parameter", f"{p['meaning']} {p['notes']}", re.I)}
    assert {t.name for t in entry.hdi.kept_params} == unmarked
    dropped_by_builder = {t for note in ref["notes"] if "DROPPED" in note for t in re.findall(r"OH_NN_\w+", note)}
    dropped = {s.tensor_type.name for s in entry.own_params if set(s.keywords) & set(entry.hdi.dropped)}
    assert dropped == dropped_by_builder


def test_an_entry_that_leaves_a_parameter_unread_is_refused(tmp_path):
    """Never silently: a parameter no field reads must be listed as dropped, or the table does not load."""
    text = (REPO / "mappings" / "ops" / "conv2d.toml").read_text()
    path = tmp_path / "conv2d.toml"
    path.write_text(re.sub(r"^group = \{ param.*\n", "", text, flags=re.M))
    with pytest.raises(OpTableError, match=r"no field reads the parameter keyword\(s\) \['group'\]"):
        load_entry(path)
    path.write_text(text.replace('dims = [1, 2], note', 'dims = [1, 2], absent = [], note'))
    with pytest.raises(OpTableError, match="unknown keys"):
        load_entry(path)


# -- enum values -------------------------------------------------------------------------------------------------

# Values the reference does not state, transcribed here from drivers_interface nnrt/v2_1/NnrtTypes.idl
# (`enum QuantType: byte { QUANT_TYPE_NONE, QUANT_TYPE_ALL, };`, `DATA_TYPE_UNKNOWN = 0,`).
IDL_VALUES_NOT_IN_THE_REFERENCE = {"QUANT_TYPE_NONE": 0, "QUANT_TYPE_ALL": 1, "DATA_TYPE_UNKNOWN": 0}


@functools.cache
def stated_enum_values() -> dict[str, int]:
    """Every HDI enum value the reference states: ``NAME(n)``, ``NAME (n)``, `` `NAME`(n) ``, ``NAME=n``, the value
    lists of enum parameters (``0=PROD, 1=SUM`` after a default ``ELTWISE_MODE_PROD (0)``), node types, the MindIR data
    type codes (``BOOL=30, INT8=32``)."""
    enums = hdi_definitions()["enums"]
    prefix_of = {}  # member -> its enum's common prefix (PAD_MODE_, COORDINATE_TRANSFORM_MODE_, ...)
    for members in enums.values():
        common = os.path.commonprefix(list(members))
        prefix_of.update(dict.fromkeys(members, common[:common.rindex("_") + 1]))
    prefixes = tuple(set(prefix_of.values()))
    text = reference_md() + json.dumps(list(reference().values()))
    stated: dict[str, set[int]] = {}
    for name, value in re.findall(r"\b([A-Z][A-Z0-9_]+)`?\s?(?:\(|=)\s?(-?\d+)\)?", text):
        if name.startswith(prefixes) and not name.startswith("OH_NN_"):
            stated.setdefault(name, set()).add(int(value))
    for o in reference().values():
        stated.setdefault(o["hdi_node_type"], set()).add(o["hdi_node_type_value"])
        for p in o["params"]:
            default = re.match(r"([A-Z][A-Z_]+) \((\d+)\)", p["default"])
            if default is None or default.group(1).startswith("OH_NN"):
                continue
            prefix = prefix_of.get(default.group(1))
            if prefix is None:
                continue
            listed = {prefix + word.upper(): int(value)
                      for value, word in re.findall(r"(\d+)=([A-Za-z_]+)", f"{p['meaning']} {p['notes']}")}
            if listed.get(default.group(1)) == int(default.group(2)):  # a list of the HDI values, not public ones
                for name, value in listed.items():
                    stated.setdefault(name, set()).add(value)
    codes = re.search(r"MindIR codes ([^)]*)\)", reference_md()).group(1)
    for word, value in re.findall(r"([A-Z0-9]+)=(\d+)", codes):
        stated.setdefault(f"DATA_TYPE_{word}", set()).add(int(value))
    assert all(len(v) == 1 for v in stated.values()), {k: v for k, v in stated.items() if len(v) > 1}
    return {k: v.pop() for k, v in stated.items()}


def test_enum_values_agree_with_every_value_the_reference_states():
    enums = hdi_definitions()["enums"]
    ours = {name: value for members in enums.values() for name, value in members.items()}
    stated = {k: v for k, v in stated_enum_values().items() if k in ours or not k.startswith("NODE_TYPE")}
    unknown = sorted(k for k in stated if k not in ours)
    assert not unknown, f"the reference names HDI enum members the table lacks: {unknown}"
    assert {k: ours[k] for k in stated} == stated
    for enum in ("PadMode", "RoundMode", "ActivationType", "ReduceMode", "EltwiseMode", "Format", "DataType",
                 "NodeType", "CoordinateTransformMode", "PaddingMode", "ResizeMethod", "NearestMode"):
        assert any(k in enums[enum] for k in stated), f"the reference states no {enum} value: nothing checked"


def _used_members():
    """Every (enum, member) the driver's view can send: field constants, defaults and conversion tables, each node's
    type and quant type, each tensor's data type and format."""
    definitions = hdi_definitions()
    used = {("QuantType", m) for m in definitions["enums"]["QuantType"]}
    used |= {("DataType", "DATA_TYPE_" + dt.name[6:]) for dt in DT}
    used |= {("Format", m) for m in definitions["tables"]["tensor_format"].values()}
    for entry in ENTRIES:
        used.add(("NodeType", entry.hdi.node_type))
        for f in entry.hdi.fields:
            if f.enum is None:
                continue
            names = [v for v in (f.const, f.absent, *f.when_given.values()) if isinstance(v, str)]
            names += list(definitions["tables"][f.map].values()) if f.map in definitions["tables"] else []
            used |= {(f.enum, n) for n in names}
            if f.map is None and f.kind == "param":  # a parameter passed through names its enum's members
                spec = next(s for s in entry.own_params if f.param in s.keywords)
                lo, hi = next(v.value_range for v in spec.variants if v.to == f.param) or (0, -1)
                used |= {(f.enum, n) for n, v in definitions["enums"][f.enum].items() if lo <= v <= hi}
    return used


def test_every_enum_value_the_view_sends_is_confirmed():
    """By the reference's statements, or (for the few it does not state) the IDL transcription above."""
    enums = hdi_definitions()["enums"]
    confirmed = {**stated_enum_values(), **IDL_VALUES_NOT_IN_THE_REFERENCE}
    unconfirmed = sorted(f"{e}.{m}" for e, m in _used_members() if m not in confirmed)
    assert not unconfirmed
    assert all(enums[e][m] == confirmed[m] for e, m in _used_members())


def test_enums_are_the_nnrt_types_idl_s_when_it_is_in_the_spec_folder():
    """With drivers_interface's NnrtTypes.idl next to NodeAttrTypes.idl, every enum is compared member by member."""
    path = shared_file("spec", "NodeAttrTypes.idl").with_name("NnrtTypes.idl")
    if not path.exists():
        pytest.skip("../shared/spec has no NnrtTypes.idl (drivers_interface nnrt/v2_1): the enums are checked "
                    "against every value nnrt_ops_spec states instead")
    text = path.read_text()
    for enum, members in hdi_definitions()["enums"].items():
        body = re.search(rf"enum {enum}\s*:\s*[\w ]+\{{(.*?)\}};", text, re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        values, next_value = {}, 0
        for item in (i.strip() for i in body.split(",") if i.strip()):
            name, _, value = (s.strip() for s in item.partition("="))
            next_value = int(value) if value else next_value
            values[name] = next_value
            next_value += 1
        assert values == members, enum


def test_conversion_tables_are_the_reference_s():
    tables, enums = hdi_definitions()["tables"], hdi_definitions()["enums"]
    add = reference()["OH_NN_OPS_ADD"]["hdi_attributes"]
    fuse = re.findall(r"OH_NN_FUSED_\w+\((\d+)\)->(ACTIVATION_TYPE_\w+)\((\d+)\)", add)
    assert len(fuse) == 3
    assert {int(u): name for u, name, _ in fuse} == tables["fuse_type"]
    assert all(enums["ActivationType"][name] == int(v) for _, name, v in fuse)
    rule = re.search(r"Pad-mode values: accepted range 0\.\.2; 0 → HDI `(\w+)`\((\d)\), 1 or 2 → `(\w+)`",
                     reference_md())
    assert tables["pad_mode"] == {0: rule.group(1), 1: rule.group(3), 2: rule.group(3)}
    mode = reference()["OH_NN_OPS_DEPTH_TO_SPACE"]["params"][1]
    assert {int(k): v for k, v in re.findall(r'(\d) -> "(\w+)"', mode["notes"] + mode["meaning"])} == \
        tables["depth_to_space_mode"]
    region = next(p for p in reference()["OH_NN_OPS_LRN"]["params"] if p["tensor_type"] == "OH_NN_LRN_NORM_REGION")
    assert "Any value other than 0" in region["notes"]
    assert tables["lrn_norm_region"] == {0: json.loads(region["default"])}
    formats = re.search(r"at conversion NCHW→NCHW, NHWC→NHWC and NONE/ND→NHWC", reference_md())
    assert formats and tables["tensor_format"] == {0: "FORMAT_NHWC", 1: "FORMAT_NCHW", 2: "FORMAT_NHWC",
                                                   3: "FORMAT_NHWC"}


# -- a model's view, against values worked out from the IDL ----------------------------------------------------------
# NnrtTypes.idl: PAD_MODE_PAD 0, SAME 1, VALID 2; ACTIVATION_TYPE_RELU6 3; QUANT_TYPE_ALL 1; FORMAT_NHWC 1;
# DATA_TYPE_INT8 32, INT32 34, FLOAT32 43; NODE_TYPE_CONV2D_FUSION 35.

def _conv(pad_mode=None, weight=(4, 3, 3, 3), channels=3, group=None, activation=None, extra=(), order="params-first",
          quant=False):
    """x -> CONV2D -> y, returning the finished model; parameter tensors added before or between the operands."""
    m = Model()
    params = []

    def add_params():
        if pad_mode is not None:
            params.append(m.add_param(TT.OH_NN_CONV2D_PAD_MODE, pad_mode))
        if group is not None:
            params.append(m.add_param(TT.OH_NN_CONV2D_GROUP, group))
        if activation is not None:
            params.append(m.add_param(TT.OH_NN_CONV2D_ACTIVATION_TYPE, activation))
        for tensor_type, value in extra:
            params.append(m.add_param(tensor_type, value))

    dtype = DT.OH_NN_INT8 if quant else DT.OH_NN_FLOAT32
    q = QuantParam.per_tensor(0.5, 1) if quant else None
    if order == "params-first":
        add_params()
    x = m.add_tensor_legacy(dtype, [1, 6, 6, channels], q)
    if order == "params-between":
        add_params()
    w = m.add_constant(np.ones(weight, np.int8 if quant else np.float32), quant=QuantParam.per_tensor(0.25) if quant
                       else None)
    b = m.add_constant(np.zeros(weight[0], np.int32 if quant else np.float32))
    y = m.add_tensor_legacy(dtype, [1, 6, 6, weight[0]], QuantParam.per_tensor(0.125, -3) if quant else None)
    m.add_operation(OP.OH_NN_OPS_CONV2D, params, [x, w, b], [y])
    m.specify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def _attributes(model, node=0):
    return {k: a["value"] for k, a in hdi_view(model)["nodes"][node]["attributes"].items()}


@pytest.mark.parametrize("pad_mode,expected", [(0, 1), (1, 2), (2, 2)])
def test_a_conv_pad_mode_becomes_the_idl_pad_mode(pad_mode, expected):
    """Public 0 (same) -> PAD_MODE_SAME = 1; 1 (valid) and 2 -> PAD_MODE_VALID = 2."""
    view = hdi_view(_conv(pad_mode=pad_mode))
    node = view["nodes"][0]
    assert node["attributes"]["padMode"]["value"] == expected
    assert node["attributes"]["padMode"]["name"] == {1: "PAD_MODE_SAME", 2: "PAD_MODE_VALID"}[expected]
    assert node["nodeType"] == {"value": 35, "name": "NODE_TYPE_CONV2D_FUSION"} and node["struct"] == "Conv2DFusion"


def test_conv_channels_and_kernel_come_from_the_weight():
    """Weight [outC, kH, kW, inC/group] = [4, 3, 2, 3] on a 6-channel input in 2 groups: inChannel is the weight's 3."""
    got = _attributes(_conv(weight=(4, 3, 2, 3), channels=6, group=2))
    assert (got["kernelSize"], got["inChannel"], got["outChannel"], got["group"]) == ([3, 2], 3, 4, 2)


def test_omitted_conv_parameters_send_the_builder_s_defaults():
    got = _attributes(_conv())
    assert got == {"kernelSize": [3, 3], "stride": [], "dilation": [], "padMode": 0, "padList": [], "group": 1,
                   "inChannel": 3, "outChannel": 4, "activationType": 0}


def test_given_conv_parameters_are_sent_converted():
    got = _attributes(_conv(activation=2, extra=[(TT.OH_NN_CONV2D_STRIDES, [2, 1]), (TT.OH_NN_CONV2D_PAD, [1, 0, 2, 1]),
                                                 (TT.OH_NN_CONV2D_DILATION, [1, 2])]))
    assert got["activationType"] == 3  # OH_NN_FUSED_RELU6 (2) -> ACTIVATION_TYPE_RELU6 (3)
    assert (got["stride"], got["padList"], got["dilation"], got["padMode"]) == ([2, 1], [1, 0, 2, 1], [1, 2], 0)


def test_parameter_tensors_leave_the_tensor_list_and_indices_are_renumbered():
    # model tensors: x 0, pad mode 1, activation 2, weight 3, bias 4, y 5 -> the driver's 0 (x), 1, 2, 3 (y)
    view = hdi_view(_conv(pad_mode=0, activation=1, order="params-between"))
    assert view["removedParameters"] == [1, 2]
    assert [t["model_index"] for t in view["allTensors"]] == [0, 3, 4, 5]
    assert [t["index"] for t in view["allTensors"]] == [0, 1, 2, 3]
    node = view["nodes"][0]
    assert (node["inputIndex"], node["outputIndex"], view["inputIndex"], view["outputIndex"]) == ([0, 1, 2], [3], [0],
                                                                                                  [3])
    assert node["name"] == "Conv2D:0"
    assert view["subGraph"] == [{"name": "NNRt_SubGraph", "inputIndices": [0], "outputIndices": [3],
                                 "nodeIndices": [0]}]
    weight = view["allTensors"][1]
    assert weight["dataType"] == {"value": 43, "name": "DATA_TYPE_FLOAT32"} and weight["dims"] == [4, 3, 3, 3]
    assert weight["format"] == {"value": 1, "name": "FORMAT_NHWC"} and weight["dataBytes"] == 4 * 27 * 4


def test_a_quantized_conv_is_quant_type_all_with_its_tensors_quant_params():
    view = hdi_view(_conv(pad_mode=0, quant=True))
    node = view["nodes"][0]
    assert node["quantType"] == {"value": 1, "name": "QUANT_TYPE_ALL"}
    x, w, b, y = view["allTensors"]
    assert x["dataType"]["value"] == 32 and b["dataType"]["value"] == 34
    assert x["quantParams"] == [{"numBits": 8, "zeroPoint": 1, "scale": 0.5}]
    assert w["quantParams"] == [{"numBits": 8, "zeroPoint": 0, "scale": 0.25}]
    assert y["quantParams"] == [{"numBits": 8, "zeroPoint": -3, "scale": 0.125}] and b["quantParams"] == []


def _single(op, inputs, outputs, params=(), quant_out=None):
    """A finished one-op model: ``inputs``/``outputs`` are dims (float32), ``params`` (tensor type, value) pairs."""
    m = Model()
    ins = [m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, dims)) for dims in inputs]
    ps = [m.add_param(t, v) for t, v in params]
    outs = [m.add_tensor_legacy(DT.OH_NN_FLOAT32 if quant_out is None else DT.OH_NN_INT8, dims, quant_out)
            for dims in outputs]
    m.add_operation(op, ps, ins, outs)
    m.specify_inputs_and_outputs(ins, outs)
    m.finish()
    return m


def test_quant_type_follows_output_0_only_for_the_builders_that_do():
    q = QuantParam.per_tensor(0.1, 0)
    add = hdi_view(_single(OP.OH_NN_OPS_ADD, [[2], [2]], [[2]], quant_out=q))["nodes"][0]
    maximum = hdi_view(_single(OP.OH_NN_OPS_MAXIMUM, [[2], [2]], [[2]], quant_out=q))["nodes"][0]
    plain = hdi_view(_single(OP.OH_NN_OPS_ADD, [[2], [2]], [[2]]))["nodes"][0]
    assert (add["quantType"]["value"], maximum["quantType"]["value"], plain["quantType"]["value"]) == (1, 0, 0)


def test_depthwise_group_and_in_channel_are_the_input_s_channels():
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 4, 4, 5]))
    w = m.add_constant(np.ones((10, 3, 3, 1), np.float32))
    b = m.add_constant(np.zeros(10, np.float32))
    y = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 2, 2, 10]))
    m.add_operation(OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE, [m.add_param(TT.OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD_MODE, 1)],
                    [x, w, b], [y])
    m.specify_inputs_and_outputs([x], [y])
    m.finish()
    got = _attributes(m)
    assert (got["group"], got["inChannel"], got["outChannel"], got["padMode"]) == (5, 5, 10, 2)
    assert hdi_view(m)["nodes"][0]["name"] == "DepthwiseConv2DNative:0"


def test_pooling_keeps_its_global_tensor_and_reduce_its_coeff_tensor():
    pool = _single(OP.OH_NN_OPS_AVG_POOL, [[1, 4, 4, 2]], [[1, 1, 1, 2]],
                   [(TT.OH_NN_AVG_POOL_KERNEL_SIZE, [4, 4]), (TT.OH_NN_AVG_POOL_GLOBAL, True),
                    (TT.OH_NN_AVG_POOL_ROUND_MODE, 1)])
    view = hdi_view(pool)
    assert view["removedParameters"] == [1, 3]  # kernel size and round mode; the GLOBAL tensor (#2) stays
    kept = view["allTensors"][1]
    assert (kept["model_index"], kept["role"], kept["dataType"]["value"]) == (2, "kept parameter OH_NN_AVG_POOL_GLOBAL",
                                                                             30)
    got = _attributes(pool)
    assert (got["kernelSize"], got["global"], got["roundMode"], got["format"], got["pad"]) == ([4, 4], True, 1, 0, [])
    reduce = _single(OP.OH_NN_OPS_REDUCE_MEAN, [[2, 3], [1]], [[2]], [(TT.OH_NN_REDUCE_MEAN_COEFF, 2.0)])
    view = hdi_view(reduce)
    assert view["removedParameters"] == [] and len(view["allTensors"]) == 4
    got = _attributes(reduce)
    assert (got["coeff"], got["mode"], got["keepDims"]) == (2.0, 0, False)


def test_max_pool_drops_its_round_mode():
    pool = _single(OP.OH_NN_OPS_MAX_POOL, [[1, 4, 4, 2]], [[1, 2, 2, 2]],
                   [(TT.OH_NN_MAX_POOL_KERNEL_SIZE, [3, 3]), (TT.OH_NN_MAX_POOL_ROUND_MODE, 1)])
    assert _attributes(pool)["roundMode"] == 0


def test_builder_quirks_reach_the_driver():
    """SpaceToBatchND's paddings keep their first row twice; LSTM's projSize is its INT64's low 4 bytes as a float32;
    Clip without bounds sends 0.0 (the native kernel: +-inf); a Softmax axis is a one-element list, or empty."""
    s2b = _single(OP.OH_NN_OPS_SPACE_TO_BATCH_ND, [[1, 4, 4, 1]], [[4, 3, 3, 1]],
                  [(TT.OH_NN_SPACE_TO_BATCH_ND_BLOCK_SHAPE, [2, 2]),
                   (TT.OH_NN_SPACE_TO_BATCH_ND_PADDINGS, np.array([[1, 2], [3, 4]]))])
    assert _attributes(s2b)["paddings"] == [[1, 2], [1, 2]]
    lstm_io = ([[2, 1, 3], [1, 8, 3], [1, 8, 2], [1, 16], [1, 1, 2], [1, 1, 2]], [[2, 1, 2], [1, 1, 2], [1, 1, 2]])
    one_as_float_bits = 0x3F800000  # float32 1.0
    for proj, expected in ((one_as_float_bits, 1), (2, 0), (0x40400000, 3)):
        lstm = _single(OP.OH_NN_OPS_LSTM, *lstm_io, [(TT.OH_NN_LSTM_PROJ_SIZE, proj)])
        assert _attributes(lstm)["projSize"] == expected
    clip = hdi_view(_single(OP.OH_NN_OPS_CLIP, [[3]], [[3]]))["nodes"][0]["attributes"]
    assert (clip["max"]["value"], clip["min"]["value"]) == (0.0, 0.0)
    assert "the native kernel uses inf" in clip["max"]["source"]
    assert _attributes(_single(OP.OH_NN_OPS_SOFTMAX, [[2, 3]], [[2, 3]], [(TT.OH_NN_SOFTMAX_AXIS, 1)]))["axis"] == [1]
    assert _attributes(_single(OP.OH_NN_OPS_SOFTMAX, [[2, 3]], [[2, 3]]))["axis"] == []


def test_full_connection_use_axis_follows_an_axis_and_has_bias_never_the_inputs():
    fc = _single(OP.OH_NN_OPS_FULL_CONNECTION, [[2, 3], [4, 3], [4]], [[2, 4]], [(TT.OH_NN_FULL_CONNECTION_AXIS, 1)])
    assert _attributes(fc) == {"hasBias": False, "useAxis": True, "axis": 1, "activationType": 0}
    assert "OH_NN_FULL_CONNECTION_AXIS given" in hdi_view(fc)["nodes"][0]["attributes"]["useAxis"]["source"]


def test_activation_ops_are_one_structure_with_their_type():
    """Sigmoid (ACTIVATION_TYPE_SIGMOID 2), LeakyRelu (5, alpha = its slope), HSwish (12) all become Activation."""
    got = {op: hdi_view(_single(op, [[3]], [[3]], params))["nodes"][0] for op, params in (
        (OP.OH_NN_OPS_SIGMOID, []), (OP.OH_NN_OPS_LEAKY_RELU, [(TT.OH_NN_LEAKY_RELU_NEGATIVE_SLOPE, 0.25)]),
        (OP.OH_NN_OPS_HSWISH, []))}
    assert {n["nodeType"]["value"] for n in got.values()} == {2}
    assert [(n["attributes"]["activationType"]["value"], n["attributes"]["alpha"]["value"]) for n in got.values()] == \
        [(2, 0.0), (5, 0.25), (12, 0.0)]


def test_float_fields_hold_the_32_bit_value_the_driver_reads():
    """IDL ``float`` is 32-bit: BatchNorm's default epsilon 1e-4 arrives as the float32 0x38D1B717,
    9.99999974737875163555145263671875e-05."""
    epsilon = _attributes(_single(OP.OH_NN_OPS_BATCH_NORM, [[1, 2], [2], [2], [2], [2]], [[1, 2]]))["epsilon"]
    assert epsilon == 9.99999974737875163555145263671875e-05 and epsilon != 1e-4


def test_an_unfinished_model_has_no_driver_view():
    m = Model()
    m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1]))
    with pytest.raises(NNRtError) as info:
        hdi_view(m)
    assert info.value.code == RC.OH_NN_OPERATION_FORBIDDEN


FIRST_CASES = list({case.op: case for case in reversed(op_cases())}.values())


@pytest.mark.parametrize("case", FIRST_CASES, ids=[c.name for c in FIRST_CASES])
def test_every_op_shows_its_whole_structure(case):
    """Every op (its first op case): one node of its NodeType with every IDL field of its structure filled."""
    model, _ = case.model()
    (node,) = hdi_view(model)["nodes"]
    entry = TABLE[case.op]
    assert node["struct"] == entry.hdi.struct and node["nodeType"]["name"] == entry.hdi.node_type
    assert list(node["attributes"]) == [name for _, name in idl()[entry.hdi.struct]["fields"]]
    assert all(a["value"] is not None and a["source"] for a in node["attributes"].values()), node["attributes"]
    for (idl_type, name), attribute in zip(idl()[entry.hdi.struct]["fields"], node["attributes"].values()):
        _check_idl_type(idl_type, attribute["value"], f"{case.name} {name}")


def _check_idl_type(idl_type: str, value, where: str) -> None:
    base, depth = idl_type.rstrip("[]"), idl_type.count("[]")
    for _ in range(depth):
        assert isinstance(value, list), where
        if not value:
            return
        value = value[0]
    if value is None:
        return
    expected = {"long": int, "float": float, "boolean": bool, "String": str}.get(base, int)  # enums: int
    assert type(value) is expected, f"{where}: {idl_type} holds {value!r}"


# -- the CLI and the generated doc ---------------------------------------------------------------------------------

def test_docs_hdi_md_is_fresh():
    assert (REPO / "docs" / "hdi.md").read_text() == hdi_markdown(), \
        "docs/hdi.md is stale: run `nnrt-onnx ops --hdi --markdown > docs/hdi.md`"


def test_ops_hdi_prints_the_op_to_structure_table(invoke):
    result = invoke("ops", "--hdi", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert rows == json.loads(json.dumps(structure_rows())) and len(rows) == len(TABLE)
    conv = next(r for r in rows if r["op"] == "OH_NN_OPS_CONV2D")
    assert conv["struct"] == "Conv2DFusion" and conv["nodeType"] == {"value": 35, "name": "NODE_TYPE_CONV2D_FUSION"}
    assert invoke("ops", "--hdi", "--markdown").output == hdi_markdown()
    text = invoke("ops", "--hdi").output
    assert "-> Conv2DFusion (NODE_TYPE_CONV2D_FUSION = 35)" in text
    assert "padMode ← CONV2D_PAD / CONV2D_PAD_MODE of 1 element via pad_mode; absent: PAD_MODE_PAD (0)" in text


def _check_view_is_complete(view, model) -> None:
    """Every node's attributes are the IDL fields of its structure; every index is a tensor of the list."""
    tensors = view["allTensors"]
    assert [t["index"] for t in tensors] == list(range(len(tensors)))
    assert len(tensors) + len(view["removedParameters"]) == len(model.tensors)
    for node in view["nodes"]:
        assert list(node["attributes"]) == [name for _, name in idl()[node["struct"]]["fields"]]
        assert all(0 <= i < len(tensors) for i in node["inputIndex"] + node["outputIndex"])
        assert node["quantType"]["name"] in ("QUANT_TYPE_NONE", "QUANT_TYPE_ALL")


SHIPPED = sorted(p for p in (REPO / "models").iterdir() if p.suffix in (".onnx", ".nnrt"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_inspect_hdi_on_the_shipped_models(invoke, path):
    from nnrt_onnx.workflows.inference import load_any

    result = invoke("inspect", path, "--hdi", "--json")
    assert result.exit_code == 0, result.output
    view = json.loads(result.output)["hdi"]
    model = load_any(str(path))
    _check_view_is_complete(view, model)
    assert [n["op"] for n in view["nodes"]] == [o.op.name for o in model.operations]
    text = invoke("inspect", path, "--hdi")
    assert text.exit_code == 0, text.output
    assert f"{len(view['nodes'])} nodes" in text.output
    for node in view["nodes"]:
        assert f"{node['name']}  {node['nodeType']['name']} ({node['nodeType']['value']})  {node['struct']}" in \
            text.output


def _qdq_conv_onnx():
    """x -> Q -> DQ -> Conv (int8 weight and int32 bias through DQ) -> Q -> DQ -> y."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in [
        ("sx", np.float32(0.02)), ("zx", np.uint8(128)), ("w", rng.integers(-50, 50, (4, 3, 3, 3)).astype(np.int8)),
        ("sw", np.float32(0.01)), ("zw", np.int8(0)), ("b", rng.integers(-90, 90, 4).astype(np.int32)),
        ("sb", np.float32(0.02 * 0.01)), ("zb", np.int32(0)), ("sy", np.float32(0.05)), ("zy", np.uint8(120))]]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wf"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bf"]),
             helper.make_node("Conv", ["xf", "wf", "bf"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "sy", "zy"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_inspect_hdi_on_a_quantized_model(invoke, tmp_path):
    import onnx

    path = tmp_path / "qdq_conv.onnx"
    onnx.save(_qdq_conv_onnx(), path)
    model = from_onnx(str(path)).model
    result = invoke("inspect", path, "--hdi", "--json")
    assert result.exit_code == 0, result.output
    view = json.loads(result.output)["hdi"]
    _check_view_is_complete(view, model)
    (conv,) = [n for n in view["nodes"] if n["struct"] == "Conv2DFusion"]
    assert conv["quantType"] == {"value": 1, "name": "QUANT_TYPE_ALL"}
    x, w, b = (view["allTensors"][i] for i in conv["inputIndex"])
    y = view["allTensors"][conv["outputIndex"][0]]
    assert (x["dataType"]["name"], w["dataType"]["name"], b["dataType"]["name"], y["dataType"]["name"]) == (
        "DATA_TYPE_UINT8", "DATA_TYPE_INT8", "DATA_TYPE_INT32", "DATA_TYPE_UINT8")
    assert x["quantParams"] == [{"numBits": 8, "zeroPoint": 128, "scale": pytest.approx(0.02)}]
    assert w["quantParams"] == [{"numBits": 8, "zeroPoint": 0, "scale": pytest.approx(0.01)}]
    assert y["quantParams"] == [{"numBits": 8, "zeroPoint": 120, "scale": pytest.approx(0.05)}]
    assert (conv["attributes"]["inChannel"]["value"], conv["attributes"]["outChannel"]["value"]) == (3, 4)
    text = invoke("inspect", path, "--hdi")
    assert text.exit_code == 0 and "QUANT_TYPE_ALL (1)" in text.output
    assert "quant scale 0.05 zeroPoint 120 numBits 8" in text.output


def test_inspect_hdi_of_a_model_that_cannot_convert_is_the_usual_error(invoke, tmp_path):
    import onnx

    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["selected"], name="nms")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 4, 4]),
                                           helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 4])],
                              [helper.make_tensor_value_info("selected", TensorProto.INT64, None)])
    path = tmp_path / "nms.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    result = invoke("inspect", path, "--hdi", "--json")
    assert result.exit_code == 1 and json.loads(result.stdout)["hdi"] is None
    result = invoke("inspect", path, "--hdi")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.strip().splitlines() == [f"error: {path.name} cannot be converted: 1 problem(s), listed above"]
