"""Capturing intermediate tensors through the public Executor (``run_arrays(..., capture=...)``): the device interface's
optional capability (``PreparedModel.supports_capture``), which the per-layer parity check uses. The native CPU device
captures; onnxruntime says clearly that it cannot."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from support import code_of

from nnrt_onnx import Compilation, Executor, Model, NNRtError, TensorDesc, from_onnx
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as TT
from nnrt_onnx.workflows.parity import check_model

MODELS = Path(__file__).resolve().parent.parent / "models"
CPU, ORT = 1, 2


def conv_add_model(outputs: str) -> tuple[Model, dict[str, int]]:
    """x (NHWC 1x5x5x2) -> CONV2D 3x3 SAME, fused RELU -> c -> ADD k -> y; ``outputs``: "y" or "cy"."""
    rng = np.random.default_rng(3)
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 5, 5, 2]))
    w = m.add_constant(rng.standard_normal((3, 3, 3, 2)).astype(np.float32))
    b = m.add_constant(rng.standard_normal(3).astype(np.float32))
    k = m.add_constant(rng.standard_normal((1, 1, 1, 3)).astype(np.float32))
    c = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 5, 5, 3]))
    y = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 5, 5, 3]))
    m.add_operation(OP.OH_NN_OPS_CONV2D, [m.add_param(TT.OH_NN_CONV2D_PAD_MODE, 0),
                                          m.add_param(TT.OH_NN_CONV2D_ACTIVATION_TYPE, 1)], [x, w, b], [c])
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 0)], [c, k], [y])
    m.specify_inputs_and_outputs([x], [c, y] if outputs == "cy" else [y])
    m.finish()
    return m, {"x": x, "w": w, "c": c, "y": y}


def executor(model, device=CPU, float16=False) -> Executor:
    compilation = Compilation(model)
    compilation.set_device(device)
    compilation.enable_float16(float16)
    compilation.build()
    return Executor(compilation)


@pytest.mark.parametrize("float16", [False, True], ids=["float32", "float16"])
def test_a_captured_intermediate_equals_the_output_of_a_model_that_outputs_it(float16):
    model, t = conv_add_model("y")
    exposing, _ = conv_add_model("cy")
    x = np.random.default_rng(4).standard_normal((1, 5, 5, 2)).astype(np.float32)
    wanted = {t["c"]: None, t["x"]: None, t["w"]: None}
    (y,) = executor(model, float16=float16).run_arrays([x], capture=wanted)
    c_out, y_out = executor(exposing, float16=float16).run_arrays([x])
    assert wanted[t["c"]].dtype == np.float32  # the declared dtype, also when computing in float16
    np.testing.assert_array_equal(wanted[t["c"]], c_out)
    np.testing.assert_array_equal(y, y_out)
    seen = x.astype(np.float16).astype(np.float32) if float16 else x  # the input as the device computes with it
    np.testing.assert_array_equal(wanted[t["x"]], seen)  # inputs and constants are captured too
    assert wanted[t["w"]].shape == (3, 3, 3, 2)
    assert executor(model, float16=float16).run_arrays([x])[0].tobytes() == y.tobytes()  # capturing changes nothing


def test_a_captured_layer_of_an_imported_model_equals_the_onnx_model_that_outputs_it():
    source = onnx.load(str(MODELS / "small_cnn.onnx"))
    result = from_onnx(source)
    located, perm = result.graph.locate("conv2.relu")
    index = [t.name for t in result.model.tensors].index(located)
    x = np.random.default_rng(5).standard_normal(result.model.tensors[result.model.inputs[0]].dims).astype(np.float32)
    wanted = {index: None}
    executor(result.model).run_arrays([x], capture=wanted)
    exposed = onnx.ModelProto()
    exposed.CopyFrom(source)
    exposed.graph.output.append(onnx.ValueInfoProto(name="conv2.relu"))
    other = from_onnx(exposed).model
    outputs = executor(other).run_arrays([x])
    position = [other.tensors[i].name for i in other.outputs].index("conv2.relu")
    captured = np.transpose(wanted[index], perm) if perm is not None else wanted[index]
    np.testing.assert_array_equal(captured, outputs[position])


def test_capture_indices_must_be_tensors_of_the_model():
    model, t = conv_add_model("y")
    x = np.zeros((1, 5, 5, 2), np.float32)
    run = executor(model).run_arrays
    assert code_of(run, [x], capture={len(model.tensors): None}) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(run, [x], capture={"c": None}) == RC.OH_NN_INVALID_PARAMETER


def test_the_onnxruntime_device_says_it_cannot_capture():
    model, t = conv_add_model("y")
    x = np.random.default_rng(6).standard_normal((1, 5, 5, 2)).astype(np.float32)
    ort = executor(model, ORT)
    assert not ort.prepared.supports_capture and executor(model).prepared.supports_capture
    with pytest.raises(NNRtError) as caught:
        ort.run_arrays([x], capture={t["c"]: None})
    assert caught.value.code == RC.OH_NN_UNSUPPORTED
    assert "onnxruntime.cpu cannot capture intermediate tensors" in caught.value.message
    with pytest.raises(NNRtError) as caught:  # the prepared model itself refuses too, whoever calls it
        ort.prepared.run([x], {t["c"]: None})
    assert caught.value.code == RC.OH_NN_UNSUPPORTED
    np.testing.assert_allclose(ort.run_arrays([x])[0], executor(model).run_arrays([x])[0], rtol=1e-5, atol=1e-6)


def test_parity_runs_the_conversion_on_the_device_given():
    path = MODELS / "tiny_mlp.onnx"
    assert check_model(path, device=ORT).ok
    assert check_model(path, device=CPU, per_layer=True).first_divergence is None
    with pytest.raises(NNRtError) as caught:
        check_model(path, device=ORT, per_layer=True)
    assert caught.value.code == RC.OH_NN_UNSUPPORTED
