"""The real architectures shipped inside the onnx package (onnx/backend/test/data/light) convert, run natively,
and agree with onnxruntime — with seeded random weights, since the shipped weights are all the constant 0.02.

Each ConstantOfShape weight generator is replaced by a seeded random initializer (He-scaled; positive for
BatchNormalization variances); the pre-softmax logits are compared too, because a random-weight softmax saturates.
"""
from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from support import ort_session

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.onnx_import import from_onnx

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MODELS = sorted(f[:-5] for f in os.listdir(LIGHT) if f.endswith(".onnx")) if os.path.isdir(LIGHT) else []
# ShuffleNet's channel shuffle is a transpose of the network itself (Reshape-Transpose-Reshape in the ONNX graph)
INTRINSIC_TRANSPOSES = {"light_shufflenet": 16}


def randomized(model: onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """The model with each ConstantOfShape weight replaced by a seeded random initializer, and the logits exposed."""
    rng = np.random.default_rng(seed)
    graph = model.graph
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    bn_role = {}
    for node in graph.node:
        if node.op_type == "BatchNormalization":
            for position, name in enumerate(node.input[1:], start=1):
                bn_role[name] = position
    kept, new_inits = [], []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in constants:
            shape = [int(d) for d in constants[node.input[0]]]
            role = bn_role.get(node.output[0])
            if role == 4:  # variance
                data = rng.uniform(0.5, 1.5, shape)
            elif role == 1:  # scale
                data = rng.uniform(0.5, 1.5, shape)
            elif role in (2, 3):  # bias, mean
                data = rng.normal(0.0, 0.1, shape)
            else:
                fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
                data = rng.normal(0.0, np.sqrt(2.0 / max(fan_in, 1)), shape) if len(shape) > 1 else rng.normal(0, 0.1, shape)
            new_inits.append(numpy_helper.from_array(data.astype(np.float32), node.output[0]))
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(new_inits)
    softmax = [n for n in graph.node if n.op_type == "Softmax"]
    if softmax:
        logits = softmax[-1].input[0]
        graph.output.append(helper.make_tensor_value_info(logits, onnx.TensorProto.FLOAT, None))
    return model


@pytest.fixture(scope="module", params=MODELS)
def light_case(request):
    name = request.param
    model = randomized(onnx.load(os.path.join(LIGHT, name + ".onnx")), zlib.crc32(name.encode()))
    return name, model


def test_light_models_exist():
    assert len(MODELS) == 9, f"expected the 9 light models of the onnx package in {LIGHT}"


def test_converts_and_matches_onnxruntime(light_case):
    name, model = light_case
    result = from_onnx(model)
    nnrt = result.model
    transposes = sum(op.op == OP.OH_NN_OPS_TRANSPOSE for op in nnrt.operations)
    assert transposes <= 1 + INTRINSIC_TRANSPOSES.get(name, 0), f"{transposes} transposes inside {name}"

    rng = np.random.default_rng(7)
    initializers = {i.name for i in model.graph.initializer}
    input_info = next(i for i in model.graph.input if i.name not in initializers)
    shape = [d.dim_value for d in input_info.type.tensor_type.shape.dim]
    x = rng.standard_normal(shape).astype(np.float32)
    session = ort_session(model, optimize=False)
    expected = session.run(None, {input_info.name: x})

    compilation = Compilation(nnrt)
    compilation.build()
    outputs = Executor(compilation).run_arrays([x])
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        scale = float(np.abs(want).max()) or 1.0
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * scale)
    # the logits are not saturated: the comparison above means something
    assert float(np.std(expected[-1])) > 1e-3


@pytest.mark.parametrize("name", ["light_resnet50", "light_squeezenet"])  # two models keep the suite fast
def test_nhwc_io_removes_the_boundary_transpose(name):
    model = randomized(onnx.load(os.path.join(LIGHT, name + ".onnx")), zlib.crc32(name.encode()))
    result = from_onnx(model, nhwc_io=True)
    transposes = sum(op.op == OP.OH_NN_OPS_TRANSPOSE for op in result.model.operations)
    assert transposes == 0
    dims = result.model.tensors[result.model.inputs[0]].dims
    assert dims[-1] == 3  # channels last


def with_dynamic_batch(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model as exporters write it: dim 0 of every runtime input and output named ``N``, no stale value_info."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    initializers = {i.name for i in model.graph.initializer}
    for value in [*model.graph.input, *model.graph.output]:
        dims = value.type.tensor_type.shape.dim
        if value.name not in initializers and len(dims):
            dims[0].dim_param = "N"
    del model.graph.value_info[:]
    constants = {t.name: t for t in model.graph.initializer}
    constants.update({n.output[0]: n.attribute[0].t for n in model.graph.node if n.op_type == "Constant"})
    for node in model.graph.node:  # a Reshape to batch 1 (old exporters) keeps the batch instead: 0 copies the dim
        shape = constants.get(node.input[1]) if node.op_type == "Reshape" else None
        if shape is not None and numpy_helper.to_array(shape)[:1].tolist() == [1]:
            generic = numpy_helper.to_array(shape).copy()
            generic[0] = 0
            shape.CopyFrom(numpy_helper.from_array(generic, shape.name))
    return model


def dynamic_batch_runs_like_onnxruntime(model: onnx.ModelProto, make_input, rtol=1e-3, atol_scale=1e-4):
    """Convert as ``convert`` does (the batch left dynamic), then run batch 1, 2 and 3 against onnxruntime (the same
    model: batch-generic, which a Reshape to a fixed batch is not -- onnxruntime refuses those sizes, and so do we)."""
    model = with_dynamic_batch(model)
    nnrt = from_onnx(model).model
    assert nnrt.tensors[nnrt.inputs[0]].dims[0] == -1
    compilation = Compilation(nnrt)
    compilation.build()
    executor = Executor(compilation)
    session = ort_session(model, optimize=False)
    name = session.get_inputs()[0].name
    for batch in (1, 2, 3):
        x = make_input(batch)
        expected = session.run(None, {name: x})
        outputs = executor.run_arrays([x])
        for got, want in zip(outputs, expected):
            assert got.shape == want.shape
            scale = float(np.abs(want).max()) or 1.0
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol_scale * scale, err_msg=f"batch {batch}")


def test_zoo_nets_with_a_dynamic_batch_run_like_onnxruntime_at_batch_1_2_3(light_case):
    name, model = light_case
    initializers = {i.name for i in model.graph.initializer}
    input_info = next(i for i in model.graph.input if i.name not in initializers)
    shape = [d.dim_value for d in input_info.type.tensor_type.shape.dim]
    rng = np.random.default_rng(11)
    dynamic_batch_runs_like_onnxruntime(model, lambda n: rng.standard_normal([n, *shape[1:]]).astype(np.float32))


SHIPPED = sorted((Path(__file__).resolve().parents[2] / "models").glob("*.onnx"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_models_with_a_dynamic_batch_run_like_onnxruntime_at_batch_1_2_3(path):
    model = onnx.load(str(path))
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(5)
    dynamic_batch_runs_like_onnxruntime(model, lambda n: rng.standard_normal([n, *shape[1:]]).astype(np.float32),
                                        rtol=1e-4, atol_scale=1e-5)
