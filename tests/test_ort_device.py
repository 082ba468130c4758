"""The onnxruntime device (id 2): the same compiled NNRt model, exported op by op to ONNX, run by onnxruntime.

Each exported op is run on both devices through Compilation/Executor and must agree with the native kernels,
across the parameter forms that change the export (pad modes, strides, groups, fused activations, ...).
"""
from __future__ import annotations

import numpy as np
import pytest

from nnrt_onnx import Compilation, Executor, NNRtError, all_device_ids, get_device
from nnrt_onnx.enums import OH_NN_DeviceType
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.ort_device import exportable, to_onnx
from nnrt_onnx.testing.single_op import run_op, single_op_model

ORT = 2


def on_both(op, inputs, params=None, constant_inputs=(), rtol=1e-5, atol=1e-5):
    """Run one op natively and on the onnxruntime device; assert they agree; return the ORT outputs."""
    inputs = [np.asarray(a) for a in inputs]
    native = run_op(op, inputs, params or {}, constant_inputs=constant_inputs)
    model = single_op_model(op, inputs, params or {}, [(a.dtype, a.shape) for a in native], {}, {}, constant_inputs)
    compilation = Compilation(model)
    compilation.set_device(ORT)
    compilation.build()
    runtime = [a for i, a in enumerate(inputs) if i not in constant_inputs] or inputs[:1]
    ort_out = Executor(compilation).run_arrays(runtime)
    assert len(ort_out) == len(native)
    for a, b in zip(ort_out, native):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return ort_out


def data(rng, *shape, positive=False):
    x = rng.standard_normal(shape).astype(np.float32)
    return np.abs(x) + 0.1 if positive else x


def test_registered_as_device_2(rng):
    assert 2 in all_device_ids()
    device = get_device(2)
    assert device.name == "onnxruntime.cpu" and device.device_type == OH_NN_DeviceType.OH_NN_CPU
    assert Compilation(None).device_id == 1  # the native device stays the default
    assert device.supports(OP.OH_NN_OPS_CONV2D) and device.supports(OP.OH_NN_OPS_LSTM)


@pytest.mark.parametrize("params", [
    {"OH_NN_CONV2D_PAD_MODE": 0},
    {"OH_NN_CONV2D_PAD_MODE": 1, "OH_NN_CONV2D_STRIDES": [2, 2]},
    {"OH_NN_CONV2D_PAD": [1, 0, 2, 1], "OH_NN_CONV2D_STRIDES": [2, 1], "OH_NN_CONV2D_ACTIVATION_TYPE": 1},
    {"OH_NN_CONV2D_PAD_MODE": 0, "OH_NN_CONV2D_STRIDES": [2, 2], "OH_NN_CONV2D_ACTIVATION_TYPE": 2},
    {"OH_NN_CONV2D_PAD": [2, 2, 2, 2], "OH_NN_CONV2D_DILATION": [2, 2]},
])
def test_conv2d(rng, params):
    on_both(OP.OH_NN_OPS_CONV2D, [data(rng, 1, 9, 8, 4), data(rng, 6, 3, 3, 4), data(rng, 6)], params, (1, 2))


def test_grouped_conv_and_runtime_weights(rng):
    on_both(OP.OH_NN_OPS_CONV2D, [data(rng, 2, 6, 6, 4), data(rng, 6, 3, 3, 2), data(rng, 6)],
            {"OH_NN_CONV2D_GROUP": 2, "OH_NN_CONV2D_PAD_MODE": 0})  # weight and bias fed at run time


def test_depthwise_with_channel_multiplier(rng):
    on_both(OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE, [data(rng, 1, 7, 7, 3), data(rng, 6, 3, 3, 1), data(rng, 6)],
            {"OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD_MODE": 0, "OH_NN_DEPTHWISE_CONV2D_NATIVE_STRIDES": [2, 2],
             "OH_NN_DEPTHWISE_CONV2D_NATIVE_ACTIVATION_TYPE": 2}, (1, 2))


@pytest.mark.parametrize("op", [OP.OH_NN_OPS_MAX_POOL, OP.OH_NN_OPS_AVG_POOL])
@pytest.mark.parametrize("params", [
    {"KERNEL_SIZE": [2, 2], "STRIDE": [2, 2]},
    {"KERNEL_SIZE": [3, 3], "STRIDE": [2, 2], "PAD_MODE": 0},
    {"KERNEL_SIZE": [3, 3], "STRIDE": [1, 1], "PAD": [1, 1, 1, 1]},
    {"KERNEL_SIZE": [3, 3], "STRIDE": [2, 2], "PAD": [0, 1, 0, 1], "ROUND_MODE": 1},
    {"GLOBAL": True},
])
def test_pooling(rng, op, params):
    prefix = "OH_NN_MAX_POOL_" if op == OP.OH_NN_OPS_MAX_POOL else "OH_NN_AVG_POOL_"
    on_both(op, [data(rng, 1, 7, 8, 3)], {prefix + k: v for k, v in params.items()})


@pytest.mark.parametrize("params,shape", [
    ({"OH_NN_FULL_CONNECTION_HAS_BIAS": True, "OH_NN_FULL_CONNECTION_ACTIVATIONTYPE": 1}, (4, 6)),
    ({"OH_NN_FULL_CONNECTION_HAS_BIAS": True}, (2, 2, 3)),  # rows of 6 from a 3-D input
    ({"OH_NN_FULL_CONNECTION_HAS_BIAS": True, "OH_NN_FULL_CONNECTION_USE_AXIS": True,
      "OH_NN_FULL_CONNECTION_AXIS": 2}, (2, 3, 2, 3)),
])
def test_full_connection(rng, params, shape):
    on_both(OP.OH_NN_OPS_FULL_CONNECTION, [data(rng, *shape), data(rng, 5, 6), data(rng, 5)], params, (1, 2))


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul(rng, ta, tb):
    a = data(rng, 2, 4, 3) if ta else data(rng, 2, 3, 4)
    b = data(rng, 5, 4) if tb else data(rng, 4, 5)
    on_both(OP.OH_NN_OPS_MATMUL, [a, b], {"OH_NN_MATMUL_TRANSPOSE_A": ta, "OH_NN_MATMUL_TRANSPOSE_B": tb,
                                          "OH_NN_MATMUL_ACTIVATION_TYPE": 1})


@pytest.mark.parametrize("op,fuse", [(OP.OH_NN_OPS_ADD, "OH_NN_ADD_ACTIVATIONTYPE"),
                                     (OP.OH_NN_OPS_SUB, "OH_NN_SUB_ACTIVATIONTYPE"),
                                     (OP.OH_NN_OPS_MUL, "OH_NN_MUL_ACTIVATION_TYPE"),
                                     (OP.OH_NN_OPS_DIV, "OH_NN_DIV_ACTIVATIONTYPE")])
@pytest.mark.parametrize("activation", [0, 1, 2])
def test_binary_with_fused_activation(rng, op, fuse, activation):
    on_both(op, [data(rng, 2, 3, 4) * 4, data(rng, 4, positive=True)], {fuse: activation})


@pytest.mark.parametrize("op", [OP.OH_NN_OPS_RELU, OP.OH_NN_OPS_RELU6, OP.OH_NN_OPS_SIGMOID, OP.OH_NN_OPS_TANH,
                                OP.OH_NN_OPS_ABS, OP.OH_NN_OPS_NEG, OP.OH_NN_OPS_HSWISH, OP.OH_NN_OPS_HARD_SIGMOID,
                                OP.OH_NN_OPS_FLOOR, OP.OH_NN_OPS_CEIL, OP.OH_NN_OPS_ERF])
def test_unary(rng, op):
    on_both(op, [data(rng, 3, 5) * 5])


def test_unary_with_parameters(rng):
    x = data(rng, 3, 4)
    on_both(OP.OH_NN_OPS_LEAKY_RELU, [x], {"OH_NN_LEAKY_RELU_NEGATIVE_SLOPE": 0.2})
    on_both(OP.OH_NN_OPS_CLIP, [x], {"OH_NN_CLIP_MIN": -0.5, "OH_NN_CLIP_MAX": 0.7})
    on_both(OP.OH_NN_OPS_EXP, [x], {"OH_NN_EXP_BASE": 2.0, "OH_NN_EXP_SCALE": 0.5, "OH_NN_EXP_SHIFT": 1.0})
    on_both(OP.OH_NN_OPS_EXP, [x])
    on_both(OP.OH_NN_OPS_SQRT, [np.abs(x)])
    on_both(OP.OH_NN_OPS_LOG, [np.abs(x) + 0.1])


def test_softmax_and_concat(rng):
    on_both(OP.OH_NN_OPS_SOFTMAX, [data(rng, 2, 3, 4)], {"OH_NN_SOFTMAX_AXIS": 1})
    on_both(OP.OH_NN_OPS_SOFTMAX, [data(rng, 2, 3, 4)])
    on_both(OP.OH_NN_OPS_CONCAT, [data(rng, 2, 3), data(rng, 2, 5)], {"OH_NN_CONCAT_AXIS": 1})


def test_shape_ops(rng):
    x = data(rng, 2, 1, 3, 4)
    on_both(OP.OH_NN_OPS_RESHAPE, [x, np.array([0, -1, 4], np.int64)], constant_inputs=(1,))
    on_both(OP.OH_NN_OPS_RESHAPE, [x, np.array([6, 4], np.int32)], constant_inputs=(1,))
    on_both(OP.OH_NN_OPS_TRANSPOSE, [x, np.array([0, 3, 1, 2], np.int32)], constant_inputs=(1,))
    on_both(OP.OH_NN_OPS_SQUEEZE, [x])
    on_both(OP.OH_NN_OPS_SQUEEZE, [x], {"OH_NN_SQUEEZE_AXIS": [1, 2]})
    on_both(OP.OH_NN_OPS_UNSQUEEZE, [x], {"OH_NN_UNSQUEEZE_AXIS": [-1]})
    on_both(OP.OH_NN_OPS_FLATTEN, [x], {"OH_NN_FLATTEN_AXIS": 2})


@pytest.mark.parametrize("shape", [(2, 5, 4, 3), (4, 3)])
def test_batch_norm_channel_last(rng, shape):
    c = shape[-1]
    on_both(OP.OH_NN_OPS_BATCH_NORM, [data(rng, *shape), data(rng, c, positive=True), data(rng, c), data(rng, c),
                                      data(rng, c, positive=True)], {"OH_NN_BATCH_NORM_EPSILON": 1e-3}, (1, 2, 3, 4))


def test_lrn_alpha_is_not_divided_by_the_window(rng):
    on_both(OP.OH_NN_OPS_LRN, [data(rng, 1, 4, 4, 7) * 3],
            {"OH_NN_LRN_DEPTH_RADIUS": 2, "OH_NN_LRN_ALPHA": 0.1, "OH_NN_LRN_BETA": 0.75, "OH_NN_LRN_BIAS": 1.0})


def _first_case_of_each_op():
    from nnrt_onnx.testing.opcases import op_cases

    first = {}
    for case in op_cases():
        first.setdefault(case.op, case)
    return [first[op] for op in OP if op in first]


FIRST_CASES = _first_case_of_each_op()


def test_every_op_type_is_claimed_by_the_onnxruntime_device():
    assert all(exportable(op) for op in OP)
    device = get_device(ORT)
    assert all(device.supports(op) for op in OP)
    assert {case.op for case in FIRST_CASES} == set(OP)  # and each runs below


@pytest.mark.parametrize("case", FIRST_CASES, ids=[c.name for c in FIRST_CASES])
def test_every_op_type_runs_on_the_onnxruntime_device(case):
    """The first op case of every op type, compiled for device 2 and run through Executor, against the values the
    specification gives (tests/op_oracles.py)."""
    from op_oracles import assert_matches_spec, expected

    model, inputs = case.model()
    compilation = Compilation(model)
    compilation.set_device(ORT)
    compilation.build()
    outputs = Executor(compilation).run_arrays(inputs)
    assert_matches_spec(case, outputs, expected(case), "the onnxruntime device")


def test_runtime_permutation_cannot_be_exported(rng):
    model = single_op_model(OP.OH_NN_OPS_TRANSPOSE, [data(rng, 2, 3), np.array([1, 0], np.int32)], {},
                            [(np.dtype(np.float32), (3, 2))], {}, {})
    compilation = Compilation(model)
    compilation.set_device(ORT)
    with pytest.raises(NNRtError) as info:
        compilation.build()
    assert info.value.code == RC.OH_NN_FAILED and "runtime permutation" in info.value.message


def test_float16_is_refused(rng):
    model = single_op_model(OP.OH_NN_OPS_RELU, [data(rng, 2)], {}, [(np.dtype(np.float32), (2,))], {}, {})
    compilation = Compilation(model)
    compilation.set_device(ORT)
    compilation.enable_float16(True)
    with pytest.raises(NNRtError) as info:
        compilation.build()
    assert info.value.code == RC.OH_NN_OPERATION_FORBIDDEN


def test_exported_model_is_valid_onnx(rng):
    import onnx

    model = single_op_model(OP.OH_NN_OPS_CONV2D, [data(rng, 1, 5, 5, 2), data(rng, 3, 3, 3, 2), data(rng, 3)],
                            {"OH_NN_CONV2D_PAD_MODE": 0, "OH_NN_CONV2D_ACTIVATION_TYPE": 2},
                            [(np.dtype(np.float32), (1, 5, 5, 3))], {}, {}, (1, 2))
    exported = to_onnx(model)
    onnx.checker.check_model(exported, full_check=True)
    assert [n.op_type for n in exported.graph.node] == ["Transpose", "Conv", "Clip", "Transpose"]
