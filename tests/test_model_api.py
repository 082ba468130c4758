"""The model-building rules of nnrt_ops_spec.md section 1, through the Python API."""
from __future__ import annotations

import numpy as np
import pytest
from support import code_of

from nnrt_onnx import Compilation, Model, NNRtError, QuantParam, TensorDesc
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as TT


def f32(model, dims):
    return model.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, dims))


def relu_model():
    model = Model()
    x, y = f32(model, [2, 3]), f32(model, [2, 3])
    model.add_operation(OP.OH_NN_OPS_RELU, [], [x], [y])
    model.specify_inputs_and_outputs([x], [y])
    return model, x, y


@pytest.mark.parametrize("dims, ok", [([1, 2], True), ([-1, 3], True), ([], True), ([0, 2], False),
                                      ([-2, 2], False), ([2] * 201, False), ([65536, 65536], False)])
def test_dims_must_be_minus_one_or_positive(dims, ok):
    model = Model()
    code = code_of(model.add_tensor_legacy, DT.OH_NN_FLOAT32, dims)
    assert code == (RC.OH_NN_SUCCESS if ok else RC.OH_NN_INVALID_PARAMETER)


def test_tensor_desc_shape_limits():
    desc = TensorDesc(DT.OH_NN_FLOAT32)
    assert desc.shape == () and desc.element_count == 1  # never-set shape: a scalar
    assert code_of(desc.set_shape, []) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(desc.set_shape, [1] * 11) == RC.OH_NN_INVALID_PARAMETER
    desc.set_shape([2, -1])
    assert desc.is_dynamic and desc.element_count == 0 and desc.byte_size == 0


def test_data_type_and_tensor_type_ranges():
    model = Model()
    assert code_of(model.add_tensor_legacy, 13, [1]) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.add_tensor_legacy, DT.OH_NN_UNKNOWN, [1]) == RC.OH_NN_SUCCESS  # passes, can never hold data
    assert code_of(model.add_tensor_legacy, DT.OH_NN_FLOAT32, [1], None, 163) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.set_tensor_type, 0, 163) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.set_tensor_type, 5, TT.OH_NN_TENSOR) == RC.OH_NN_INVALID_PARAMETER  # index out of range


def test_set_tensor_data_rules():
    model = Model()
    t = model.add_tensor_legacy(DT.OH_NN_INT32, [2, 2])
    assert code_of(model.set_tensor_data, t, None) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.set_tensor_data, t, b"") == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.set_tensor_data, t, b"\0" * 15) == RC.OH_NN_INVALID_PARAMETER  # exact length
    assert code_of(model.set_tensor_data, t, b"\0" * 17) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.set_tensor_data, 9, b"\0" * 16) == RC.OH_NN_INVALID_PARAMETER
    buffer = bytearray(np.arange(4, dtype=np.int32).tobytes())
    model.set_tensor_data(t, buffer)
    buffer[0] = 99  # the bytes were copied
    assert model.tensors[t].data.tolist() == [[0, 1], [2, 3]]
    assert code_of(model.set_tensor_data, t, buffer) == RC.OH_NN_INVALID_PARAMETER  # only once
    dynamic = model.add_tensor_legacy(DT.OH_NN_INT32, [-1, 2])
    assert code_of(model.set_tensor_data, dynamic, b"\0" * 8) == RC.OH_NN_OPERATION_FORBIDDEN
    scalar = model.add_tensor_legacy(DT.OH_NN_FLOAT64, [])
    model.set_tensor_data(scalar, np.float64(2.5).tobytes())
    assert model.tensors[scalar].data.item() == 2.5


def test_quant_params_rules():
    model = Model()
    t = model.add_tensor_legacy(DT.OH_NN_INT8, [4])
    assert code_of(model.set_tensor_quant_params, t, QuantParam([0.1, 0.2], [0], [8, 8])) == RC.OH_NN_INVALID_PARAMETER
    assert model.tensors[t].quant is None  # cleared on failure
    assert code_of(model.set_tensor_quant_params, t, QuantParam([0.1], [0], [4])) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.set_tensor_quant_params, t, None) == RC.OH_NN_INVALID_PARAMETER
    model.set_tensor_quant_params(t, QuantParam([0.1, 0.2], [0, 1], [8, 8]))
    assert model.tensors[t].quant.count == 2
    assert code_of(model.add_tensor_legacy, DT.OH_NN_INT8, [4], QuantParam([0.1], [0], [16])) == RC.OH_NN_INVALID_PARAMETER


def test_operation_operands_must_be_plain_disjoint_tensors():
    model = Model()
    x, y = f32(model, [2]), f32(model, [2])
    p = model.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 0)
    assert code_of(model.add_operation, OP.OH_NN_OPS_RELU, [], [p], [y]) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.add_operation, OP.OH_NN_OPS_RELU, [], [x], [x]) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.add_operation, OP.OH_NN_OPS_RELU, [], [x], [7]) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.add_operation, OP.OH_NN_OPS_RELU, None, [x], [y]) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.add_operation, 0, [], [x], [y]) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.add_operation, 109, [], [x], [y]) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(model.add_operation, OP.OH_NN_OPS_RELU, [], [x] * 201, [y]) == RC.OH_NN_INVALID_PARAMETER
    assert not model.operations


def test_specify_io_once_and_finish_requirements():
    model = Model()
    assert code_of(model.finish) == RC.OH_NN_OPERATION_FORBIDDEN  # no tensor
    x, y = f32(model, [2]), f32(model, [2])
    assert code_of(model.finish) == RC.OH_NN_OPERATION_FORBIDDEN  # no operation
    model.add_operation(OP.OH_NN_OPS_RELU, [], [x], [y])
    assert code_of(model.finish) == RC.OH_NN_OPERATION_FORBIDDEN  # no IO
    assert code_of(model.specify_inputs_and_outputs, [x], [x]) == RC.OH_NN_INVALID_PARAMETER
    model.specify_inputs_and_outputs([x], [y])
    assert code_of(model.specify_inputs_and_outputs, [x], [y]) == RC.OH_NN_OPERATION_FORBIDDEN
    model.finish()
    assert code_of(model.finish) == RC.OH_NN_OPERATION_FORBIDDEN


def test_nothing_changes_after_finish():
    model, x, y = relu_model()
    model.finish()
    for call in (lambda: model.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1])),
                 lambda: model.add_tensor_legacy(DT.OH_NN_FLOAT32, [1]),
                 lambda: model.set_tensor_data(x, np.zeros(6, np.float32)),
                 lambda: model.set_tensor_type(x, TT.OH_NN_TENSOR),
                 lambda: model.set_tensor_quant_params(x, QuantParam.per_tensor(1.0)),
                 lambda: model.add_operation(OP.OH_NN_OPS_RELU, [], [x], [y])):
        assert code_of(call) == RC.OH_NN_OPERATION_FORBIDDEN


def test_available_operations_per_device():
    model, x, y = relu_model()
    assert code_of(model.get_available_operations, 1) == RC.OH_NN_OPERATION_FORBIDDEN
    model.finish()
    flags = model.get_available_operations(1)
    assert len(flags) == 1
    assert code_of(model.get_available_operations, 12345) == RC.OH_NN_INVALID_PARAMETER


# -- build-time graph checks NNRt leaves undone ---------------------------------------------------------------

def _build_code(model):
    model.finish()
    return code_of(Compilation(model).build)


def test_cycle_is_rejected_at_build():
    model = Model()
    x, a, b, y = (f32(model, [2]) for _ in range(4))
    model.add_operation(OP.OH_NN_OPS_ADD, [], [x, b], [a])
    model.add_operation(OP.OH_NN_OPS_ADD, [], [x, a], [b])
    model.add_operation(OP.OH_NN_OPS_RELU, [], [b], [y])
    model.specify_inputs_and_outputs([x], [y])
    assert _build_code(model) == RC.OH_NN_INVALID_PARAMETER


def test_tensor_consumed_but_never_produced_is_rejected():
    model = Model()
    x, ghost, y = f32(model, [2]), f32(model, [2]), f32(model, [2])
    model.add_operation(OP.OH_NN_OPS_ADD, [], [x, ghost], [y])
    model.specify_inputs_and_outputs([x], [y])
    assert _build_code(model) == RC.OH_NN_INVALID_PARAMETER


def test_parameter_reused_as_operand_is_rejected():
    model = Model()
    x, y, z = f32(model, [1]), f32(model, [1]), f32(model, [1])
    param = model.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 0)
    model.add_operation(OP.OH_NN_OPS_ADD, [param], [x, x], [y])
    model.set_tensor_type(param, TT.OH_NN_TENSOR)  # re-typing is allowed by the runtime ...
    model.add_operation(OP.OH_NN_OPS_ADD, [], [y, param], [z])  # ... so it can sneak in as an operand
    model.specify_inputs_and_outputs([x], [z])
    model.finish()
    with pytest.raises(NNRtError) as info:
        Compilation(model).build()
    assert info.value.code == RC.OH_NN_INVALID_PARAMETER and "parameter" in info.value.message


def test_operations_run_in_dependency_order_even_if_added_out_of_order(rng):
    model = Model()
    x, a, y = f32(model, [3]), f32(model, [3]), f32(model, [3])
    model.add_operation(OP.OH_NN_OPS_ADD, [], [a, x], [y])  # uses a before the op producing it is added
    model.add_operation(OP.OH_NN_OPS_MUL, [], [x, x], [a])
    model.specify_inputs_and_outputs([x], [y])
    model.finish()
    compilation = Compilation(model)
    compilation.build()
    from nnrt_onnx import Executor

    data = rng.standard_normal(3).astype(np.float32)
    (out,) = Executor(compilation).run_arrays([data])
    np.testing.assert_allclose(out, data * data + data, rtol=1e-6)
