"""ONNX -> NNRt -> ONNX gives numerically equal outputs: every node-suite case the importer passes, exported back
and run by onnxruntime against the case's expected outputs; and the light_* architectures (seeded random weights)
against onnxruntime on the original model, with no transpose inside the exported network."""
from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import numpy as np
import onnx
import onnx.inliner
import pytest
from support import ort_session
from test_light_models import INTRINSIC_TRANSPOSES, LIGHT, MODELS, randomized

from nnrt_onnx.onnx_export import to_onnx
from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.testing.conformance import compare_outputs, feed_for, import_case, is_claimed, node_cases

KNOWN = json.loads((Path(__file__).resolve().parent.parent / "data" / "conformance_known_failures.json").read_text())
PASSING = sorted(n for n, c in node_cases().items() if is_claimed(c) and n not in KNOWN)


def _session(model: onnx.ModelProto):
    return ort_session(model)


@pytest.mark.parametrize("name", PASSING)
def test_node_case_round_trips(name):
    case = node_cases()[name]
    result, model_inputs, data_sets = import_case(case)
    exported = to_onnx(result.model)
    session = _session(exported)
    names = [i.name for i in exported.graph.input]
    for inputs, expected in data_sets:
        arrays = feed_for(result.model, model_inputs, inputs)
        outputs = session.run(None, dict(zip(names, arrays)))
        problem = compare_outputs(outputs, expected, case.rtol, case.atol)
        assert not problem, problem


@pytest.mark.parametrize("name", MODELS)
def test_light_model_round_trips(name):
    model = randomized(onnx.load(os.path.join(LIGHT, name + ".onnx")), zlib.crc32(name.encode()))
    exported = to_onnx(from_onnx(model).model)
    onnx.checker.check_model(exported, full_check=True)
    transposes = sum(node.op_type == "Transpose" for node in exported.graph.node)
    assert transposes <= 1 + INTRINSIC_TRANSPOSES.get(name, 0)  # the NCHW input meeting the first NHWC op
    initializers = {i.name for i in model.graph.initializer}
    input_info = next(i for i in model.graph.input if i.name not in initializers)
    x = np.random.default_rng(3).standard_normal([d.dim_value for d in input_info.type.tensor_type.shape.dim])
    x = x.astype(np.float32)
    want = _session(model).run(None, {input_info.name: x})
    got = _session(exported).run(None, {exported.graph.input[0].name: x})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4 * float(np.abs(b).max() or 1.0))


# -- the shipped models at every target opset ---------------------------------------------------------------------

SHIPPED = Path(__file__).resolve().parent.parent.parent / "models"


@pytest.mark.parametrize("opset", range(13, 24))
def test_small_cnn_round_trips_at_every_opset(opset):
    """models/small_cnn.onnx -> NNRt -> ONNX at each opset: standard nodes only (its global average pool a
    GlobalAveragePool, no NNRt-domain function), onnxruntime on the export agrees with onnxruntime on the original,
    and re-importing the export gives the same operations."""
    original = onnx.load(str(SHIPPED / "small_cnn.onnx"))
    converted = from_onnx(original).model
    exported = to_onnx(converted, opset=opset, check=True)
    assert exported.opset_import[0].version == opset
    assert not exported.functions and all(n.domain in ("", "ai.onnx") for n in exported.graph.node)
    assert "GlobalAveragePool" in [n.op_type for n in exported.graph.node]
    x = np.random.default_rng(opset).standard_normal([d.dim_value for d in
                                                      original.graph.input[0].type.tensor_type.shape.dim])
    x = x.astype(np.float32)
    want = _session(original).run(None, {original.graph.input[0].name: x})
    got = _session(exported).run(None, {exported.graph.input[0].name: x})
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert [o.op for o in from_onnx(exported).model.operations] == [o.op for o in converted.operations]


@pytest.mark.parametrize("opset", range(13, 24))
def test_tiny_cnn_nnrt_exports_standard_global_pool_at_every_opset(opset):
    """models/tiny_cnn.nnrt: its AVG_POOL (global) exports as GlobalAveragePool at every opset (it was an
    NNRt-domain function, and at 13..17 an export the checker rejected); native and onnxruntime agree."""
    from nnrt_onnx import Compilation, Executor
    from nnrt_onnx.serialization import load_model

    model = load_model(SHIPPED / "tiny_cnn.nnrt")
    exported = to_onnx(model, opset=opset, check=True)
    assert not exported.functions
    assert [n.op_type for n in exported.graph.node].count("GlobalAveragePool") == 1
    x = np.random.default_rng(7).standard_normal(model.tensors[model.inputs[0]].dims).astype(np.float32)
    compilation = Compilation(model)
    compilation.build()
    (native,) = Executor(compilation).run_arrays([x])
    (got,) = _session(exported).run(None, {exported.graph.input[0].name: x})
    np.testing.assert_allclose(got, native, rtol=1e-4, atol=1e-6)
    back = from_onnx(exported).model
    assert [o.op for o in back.operations] == [o.op for o in model.operations]


# -- exports whose metadata a tool stripped (onnxslim, polygraphy surgeon sanitize) or whose functions it inlined --

def _stripped(model: onnx.ModelProto) -> onnx.ModelProto:
    """What metadata-dropping tools leave: no node metadata (the exact NNRt op and parameters), no doc strings,
    nodes renamed."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for position, node in enumerate(model.graph.node):
        del node.metadata_props[:]
        node.doc_string = ""
        node.name = f"node{position}"
    model.doc_string = ""
    del model.metadata_props[:]
    return model


@pytest.mark.parametrize("how", ["stripped", "stripped-and-inlined"])
def test_exports_stay_convertible_without_their_metadata(how):
    """Every op case whose export uses an NNRt-domain function: with the metadata stripped (the function calls then
    name no NNRt op: "cannot restore the NNRt op 'OH_NN_OPS_AVG_POOL_6a0f2e1e4e'" before), or also inlined by
    ``onnx.inliner``, the model still converts, and runs to the specification's values (``op_oracles``). The only
    cases allowed to fail are those whose function body reads a run-time input as axes, shape or pads, which the
    importer needs as a constant in any ONNX model (their reason says so)."""
    import sys

    from nnrt_onnx.onnx_import import ConversionError
    from nnrt_onnx.testing.opcases import op_cases
    from nnrt_onnx.workflows.inference import run_model

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from op_oracles import assert_matches_spec, expected

    converted, failures = 0, []
    for case in op_cases():
        model, inputs = case.model()
        exported = to_onnx(model)
        if not exported.functions:
            continue
        variant = _stripped(exported)
        if how == "stripped-and-inlined":
            variant = onnx.inliner.inline_local_functions(variant)
        assert not any(p.key.startswith("nnrt.") for n in variant.graph.node for p in n.metadata_props)
        try:
            result = from_onnx(variant)
        except ConversionError as exc:
            if not all(issue.reason == "needs_constant_input" for issue in exc.issues):
                failures.append(f"{case.name}: {exc}")
            continue
        try:
            assert_matches_spec(case, run_model(result.model, inputs).outputs, expected(case), how)
            converted += 1
        except AssertionError as exc:
            failures.append(f"{case.name}: {str(exc).splitlines()[0]}")
    assert not failures, "\n".join(failures)
    assert converted >= 280, converted
