"""nnrt_onnx.capi: the 75 C functions, used only through the C-style facade.

A small CNN is built, compiled and run with the new (NN_TensorDesc / NN_Tensor / RunSync) and the legacy
(OH_NN_Tensor / SetInput / Run) calls and compared with a numpy reference written out here; then every
function is misused (NULL handles, wrong indices, wrong order, destroyed handles, bad lengths, bad enums,
garbage) and must answer with a code or None, never an exception.
"""
from __future__ import annotations

import inspect
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nnrt_onnx.capi as C
from nnrt_onnx.capi import (
    OH_NN_BOOL,
    OH_NN_FLOAT32,
    OH_NN_INT8,
    OH_NN_INT32,
    OH_NN_INT64,
    OH_NN_INVALID_PARAMETER,
    OH_NN_OPERATION_FORBIDDEN,
    OH_NN_SUCCESS,
    OH_NN_Memory,
    OH_NN_QuantParam,
    OH_NN_ReturnCode,
    OH_NN_Tensor,
    OH_NN_UInt32Array,
)

SUCCESS, INVALID, FORBIDDEN = OH_NN_SUCCESS, OH_NN_INVALID_PARAMETER, OH_NN_OPERATION_FORBIDDEN

# The 75 functions of neural_network_runtime.h + neural_network_core.h (shared/reference/nnrt_c_api.md).
C_FUNCTIONS = """
OH_NNQuantParam_Create OH_NNQuantParam_SetScales OH_NNQuantParam_SetZeroPoints OH_NNQuantParam_SetNumBits
OH_NNQuantParam_Destroy OH_NNModel_Construct OH_NNModel_AddTensorToModel OH_NNModel_SetTensorData
OH_NNModel_SetTensorQuantParams OH_NNModel_SetTensorType OH_NNModel_AddOperation OH_NNModel_SpecifyInputsAndOutputs
OH_NNModel_Finish OH_NNModel_Destroy OH_NNModel_GetAvailableOperations OH_NNModel_AddTensor OH_NNExecutor_SetInput
OH_NNExecutor_SetOutput OH_NNExecutor_Run OH_NNExecutor_AllocateInputMemory OH_NNExecutor_AllocateOutputMemory
OH_NNExecutor_DestroyInputMemory OH_NNExecutor_DestroyOutputMemory OH_NNExecutor_SetInputWithMemory
OH_NNExecutor_SetOutputWithMemory OH_NNCompilation_Construct OH_NNCompilation_ConstructWithOfflineModelFile
OH_NNCompilation_ConstructWithOfflineModelBuffer OH_NNCompilation_ConstructForCache OH_NNCompilation_ExportCacheToBuffer
OH_NNCompilation_ImportCacheFromBuffer OH_NNCompilation_AddExtensionConfig OH_NNCompilation_SetDevice
OH_NNCompilation_SetCache OH_NNCompilation_SetPerformanceMode OH_NNCompilation_SetPriority
OH_NNCompilation_EnableFloat16 OH_NNCompilation_Build OH_NNCompilation_Destroy OH_NNTensorDesc_Create
OH_NNTensorDesc_Destroy OH_NNTensorDesc_SetName OH_NNTensorDesc_GetName OH_NNTensorDesc_SetDataType
OH_NNTensorDesc_GetDataType OH_NNTensorDesc_SetShape OH_NNTensorDesc_GetShape OH_NNTensorDesc_SetFormat
OH_NNTensorDesc_GetFormat OH_NNTensorDesc_GetElementCount OH_NNTensorDesc_GetByteSize OH_NNTensor_Create
OH_NNTensor_CreateWithSize OH_NNTensor_CreateWithFd OH_NNTensor_Destroy OH_NNTensor_GetTensorDesc
OH_NNTensor_GetDataBuffer OH_NNTensor_GetFd OH_NNTensor_GetSize OH_NNTensor_GetOffset OH_NNExecutor_Construct
OH_NNExecutor_GetOutputShape OH_NNExecutor_Destroy OH_NNExecutor_GetInputCount OH_NNExecutor_GetOutputCount
OH_NNExecutor_CreateInputTensorDesc OH_NNExecutor_CreateOutputTensorDesc OH_NNExecutor_GetInputDimRange
OH_NNExecutor_SetOnRunDone OH_NNExecutor_SetOnServiceDied OH_NNExecutor_RunSync OH_NNExecutor_RunAsync
OH_NNDevice_GetAllDevicesID OH_NNDevice_GetName OH_NNDevice_GetType
""".split()

# How each function answers (C return type): a handle/pointer, nothing (void), or a code with N out values.
POINTER = {"OH_NNQuantParam_Create", "OH_NNModel_Construct", "OH_NNExecutor_AllocateInputMemory",
           "OH_NNExecutor_AllocateOutputMemory", "OH_NNCompilation_Construct",
           "OH_NNCompilation_ConstructWithOfflineModelFile", "OH_NNCompilation_ConstructWithOfflineModelBuffer",
           "OH_NNCompilation_ConstructForCache", "OH_NNTensorDesc_Create", "OH_NNTensor_Create",
           "OH_NNTensor_CreateWithSize", "OH_NNTensor_CreateWithFd", "OH_NNTensor_GetTensorDesc",
           "OH_NNTensor_GetDataBuffer", "OH_NNExecutor_Construct", "OH_NNExecutor_CreateInputTensorDesc",
           "OH_NNExecutor_CreateOutputTensorDesc"}
VOID = {"OH_NNModel_Destroy", "OH_NNExecutor_DestroyInputMemory", "OH_NNExecutor_DestroyOutputMemory",
        "OH_NNCompilation_Destroy", "OH_NNExecutor_Destroy"}
OUTS = {"OH_NNModel_GetAvailableOperations": 1, "OH_NNCompilation_ExportCacheToBuffer": 1,
        "OH_NNTensorDesc_GetName": 1, "OH_NNTensorDesc_GetDataType": 1, "OH_NNTensorDesc_GetShape": 1,
        "OH_NNTensorDesc_GetFormat": 1, "OH_NNTensorDesc_GetElementCount": 1, "OH_NNTensorDesc_GetByteSize": 1,
        "OH_NNTensor_GetFd": 1, "OH_NNTensor_GetSize": 1, "OH_NNTensor_GetOffset": 1,
        "OH_NNExecutor_GetOutputShape": 1, "OH_NNExecutor_GetInputCount": 1, "OH_NNExecutor_GetOutputCount": 1,
        "OH_NNExecutor_GetInputDimRange": 2, "OH_NNDevice_GetAllDevicesID": 1, "OH_NNDevice_GetName": 1,
        "OH_NNDevice_GetType": 1}


def arity(name: str) -> int:
    return len(inspect.signature(getattr(C, name)).parameters)


def check_c_result(name: str, result) -> None:
    """The result has the shape the C return type dictates."""
    if name in VOID:
        assert result is None, name
    elif name in POINTER:
        assert result is None or not isinstance(result, (OH_NN_ReturnCode, tuple)), (name, result)
    elif name in OUTS:
        assert isinstance(result, tuple) and len(result) == 1 + OUTS[name], (name, result)
        assert type(result[0]) is OH_NN_ReturnCode, (name, result)
        if result[0] not in (SUCCESS, C.OH_NN_DYNAMIC_SHAPE):
            assert all(out is None for out in result[1:]), (name, result)
    else:
        assert type(result) is OH_NN_ReturnCode, (name, result)


# ---------------------------------------------------------------------------------------------------------------
# Building through the facade only

class Builder:
    """Adds tensors to an OH_NNModel with OH_NNTensorDesc_* + AddTensorToModel + SetTensorType/SetTensorData."""

    def __init__(self):
        self.model = C.OH_NNModel_Construct()
        assert self.model is not None
        self.count = 0

    def tensor(self, dtype, shape=None, data=None, tensor_type=None) -> int:
        desc = C.OH_NNTensorDesc_Create()
        assert C.OH_NNTensorDesc_SetDataType(desc, dtype) == SUCCESS
        if shape is not None:  # no SetShape at all: a rank-0 scalar
            assert C.OH_NNTensorDesc_SetShape(desc, list(shape), len(shape)) == SUCCESS
        assert C.OH_NNModel_AddTensorToModel(self.model, desc) == SUCCESS
        assert C.OH_NNTensorDesc_Destroy([desc]) == SUCCESS
        index, self.count = self.count, self.count + 1
        if tensor_type is not None:
            assert C.OH_NNModel_SetTensorType(self.model, index, tensor_type) == SUCCESS
        if data is not None:
            data = np.ascontiguousarray(data)
            assert C.OH_NNModel_SetTensorData(self.model, index, data, data.nbytes) == SUCCESS
        return index

    def param(self, tensor_type, dtype, value, np_dtype) -> int:
        array = np.asarray(value, np_dtype)
        return self.tensor(dtype, None if array.ndim == 0 else array.shape, array, tensor_type)

    def op(self, op, params, inputs, outputs) -> None:
        code = C.OH_NNModel_AddOperation(self.model, op, OH_NN_UInt32Array(params, len(params)),
                                         OH_NN_UInt32Array(inputs, len(inputs)), OH_NN_UInt32Array(outputs, len(outputs)))
        assert code == SUCCESS, code


def cnn_weights(rng):
    return (rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.5, rng.standard_normal(4).astype(np.float32),
            rng.standard_normal((10, 64)).astype(np.float32) * 0.2, rng.standard_normal(10).astype(np.float32))


def build_cnn(weights):
    """x[1,8,8,3] -> CONV2D 3x3 SAME stride 1 +RELU -> MAX_POOL 2x2/2 -> RESHAPE [1,64] -> FULL_CONNECTION -> SOFTMAX."""
    w, b, wfc, bfc = weights
    g = Builder()
    x = g.tensor(OH_NN_FLOAT32, [1, 8, 8, 3])
    conv = g.tensor(OH_NN_FLOAT32, [1, 8, 8, 4])
    g.op(C.OH_NN_OPS_CONV2D,
         [g.param(C.OH_NN_CONV2D_STRIDES, OH_NN_INT64, [1, 1], np.int64),
          g.param(C.OH_NN_CONV2D_DILATION, OH_NN_INT64, [1, 1], np.int64),
          g.param(C.OH_NN_CONV2D_PAD_MODE, OH_NN_INT8, 0, np.int8),  # 0 = SAME
          g.param(C.OH_NN_CONV2D_GROUP, OH_NN_INT64, 1, np.int64),
          g.param(C.OH_NN_CONV2D_ACTIVATION_TYPE, OH_NN_INT8, C.OH_NN_FUSED_RELU, np.int8)],
         [x, g.tensor(OH_NN_FLOAT32, w.shape, w), g.tensor(OH_NN_FLOAT32, b.shape, b)], [conv])
    pooled = g.tensor(OH_NN_FLOAT32, [1, 4, 4, 4])
    g.op(C.OH_NN_OPS_MAX_POOL,
         [g.param(C.OH_NN_MAX_POOL_KERNEL_SIZE, OH_NN_INT64, [2, 2], np.int64),
          g.param(C.OH_NN_MAX_POOL_STRIDE, OH_NN_INT64, [2, 2], np.int64),
          g.param(C.OH_NN_MAX_POOL_PAD_MODE, OH_NN_INT8, 1, np.int8)],  # 1 = VALID
         [conv], [pooled])
    flat = g.tensor(OH_NN_FLOAT32, [1, 64])
    g.op(C.OH_NN_OPS_RESHAPE, [], [pooled, g.tensor(OH_NN_INT64, [2], np.array([1, 64], np.int64))], [flat])
    logits = g.tensor(OH_NN_FLOAT32, [1, 10])
    g.op(C.OH_NN_OPS_FULL_CONNECTION, [g.param(C.OH_NN_FULL_CONNECTION_HAS_BIAS, OH_NN_BOOL, True, np.bool_)],
         [flat, g.tensor(OH_NN_FLOAT32, wfc.shape, wfc), g.tensor(OH_NN_FLOAT32, bfc.shape, bfc)], [logits])
    probs = g.tensor(OH_NN_FLOAT32, [1, 10])
    g.op(C.OH_NN_OPS_SOFTMAX, [g.param(C.OH_NN_SOFTMAX_AXIS, OH_NN_INT64, 1, np.int64)], [logits], [probs])
    assert C.OH_NNModel_SpecifyInputsAndOutputs(g.model, [x], [probs]) == SUCCESS
    assert C.OH_NNModel_Finish(g.model) == SUCCESS
    return g.model


def cnn_reference(x, weights):
    """The same network in float64 numpy, the 3x3 window written out with einsum."""
    w, b, wfc, bfc = (a.astype(np.float64) for a in weights)
    x = x.astype(np.float64)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))  # SAME for a 3x3 kernel, stride 1
    conv = np.zeros((1, 8, 8, 4))
    for dy in range(3):
        for dx in range(3):
            conv += np.einsum("nhwc,oc->nhwo", padded[:, dy:dy + 8, dx:dx + 8, :], w[:, dy, dx, :])
    conv = np.maximum(conv + b, 0.0)
    pooled = conv.reshape(1, 4, 2, 4, 2, 4).max(axis=(2, 4))
    logits = pooled.reshape(1, 64) @ wfc.T + bfc
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def compile_and_construct(model):
    compilation = C.OH_NNCompilation_Construct(model)
    assert compilation is not None
    code, ids = C.OH_NNDevice_GetAllDevicesID()
    assert code == SUCCESS
    assert C.OH_NNCompilation_SetDevice(compilation, ids[0]) == SUCCESS
    assert C.OH_NNCompilation_SetPerformanceMode(compilation, C.OH_NN_PERFORMANCE_HIGH) == SUCCESS
    assert C.OH_NNCompilation_SetPriority(compilation, C.OH_NN_PRIORITY_MEDIUM) == SUCCESS
    assert C.OH_NNCompilation_EnableFloat16(compilation, False) == SUCCESS
    assert C.OH_NNCompilation_Build(compilation) == SUCCESS
    executor = C.OH_NNExecutor_Construct(compilation)
    assert executor is not None
    return compilation, executor


def make_tensor(desc, array=None):
    tensor = C.OH_NNTensor_Create(0, desc)  # device 0 = the first device
    assert tensor is not None
    if array is not None:
        np.frombuffer(C.OH_NNTensor_GetDataBuffer(tensor), dtype=array.dtype)[:] = array.reshape(-1)
    return tensor


def test_small_cnn_new_api_matches_numpy(rng):
    weights = cnn_weights(rng)
    x = rng.standard_normal((1, 8, 8, 3)).astype(np.float32)
    model = build_cnn(weights)
    code, flags = C.OH_NNModel_GetAvailableOperations(model, 1)
    assert code == SUCCESS and flags == [True] * 5
    compilation, executor = compile_and_construct(model)
    C.OH_NNModel_Destroy([model])  # the compilation no longer needs the model handle

    assert C.OH_NNExecutor_GetInputCount(executor) == (SUCCESS, 1)
    assert C.OH_NNExecutor_GetOutputCount(executor) == (SUCCESS, 1)
    in_desc = C.OH_NNExecutor_CreateInputTensorDesc(executor, 0)
    out_desc = C.OH_NNExecutor_CreateOutputTensorDesc(executor, 0)
    assert C.OH_NNTensorDesc_GetShape(in_desc) == (SUCCESS, [1, 8, 8, 3])
    assert C.OH_NNTensorDesc_GetDataType(in_desc) == (SUCCESS, OH_NN_FLOAT32)
    assert C.OH_NNTensorDesc_GetByteSize(out_desc) == (SUCCESS, 40)
    assert C.OH_NNExecutor_GetInputDimRange(executor, 0) == (SUCCESS, [1, 8, 8, 3], [1, 8, 8, 3])

    x_tensor = make_tensor(in_desc, x)
    y_tensor = make_tensor(out_desc)
    assert C.OH_NNExecutor_RunSync(executor, [x_tensor], 1, [y_tensor], 1) == SUCCESS
    probs = np.frombuffer(C.OH_NNTensor_GetDataBuffer(y_tensor), np.float32).reshape(1, 10)
    np.testing.assert_allclose(probs, cnn_reference(x, weights), rtol=1e-5, atol=1e-6)
    assert C.OH_NNExecutor_GetOutputShape(executor, 0) == (SUCCESS, [1, 10])
    assert C.OH_NNTensorDesc_GetShape(C.OH_NNTensor_GetTensorDesc(y_tensor)) == (SUCCESS, [1, 10])

    for handle in (x_tensor, y_tensor):
        assert C.OH_NNTensor_Destroy([handle]) == SUCCESS
    for desc in (in_desc, out_desc):
        assert C.OH_NNTensorDesc_Destroy(desc) == SUCCESS
    C.OH_NNExecutor_Destroy([executor])
    C.OH_NNCompilation_Destroy([compilation])


def test_small_cnn_legacy_api_matches_numpy(rng):
    weights = cnn_weights(rng)
    x = rng.standard_normal((1, 8, 8, 3)).astype(np.float32)
    _, executor = compile_and_construct(build_cnn(weights))
    tensor = OH_NN_Tensor(OH_NN_FLOAT32, 4, [1, 8, 8, 3], None, C.OH_NN_TENSOR)
    assert C.OH_NNExecutor_SetInput(executor, 0, tensor, x, x.nbytes) == SUCCESS
    out = np.zeros((1, 10), np.float32)
    assert C.OH_NNExecutor_SetOutput(executor, 0, out, out.nbytes) == SUCCESS
    assert C.OH_NNExecutor_Run(executor) == SUCCESS
    np.testing.assert_allclose(out, cnn_reference(x, weights), rtol=1e-5, atol=1e-6)
    assert C.OH_NNExecutor_GetOutputShape(executor, 0) == (SUCCESS, [1, 10])

    # and once more through shared memory
    memory_in = C.OH_NNExecutor_AllocateInputMemory(executor, 0, x.nbytes)
    memory_out = C.OH_NNExecutor_AllocateOutputMemory(executor, 0, 40)
    assert memory_in.length == x.nbytes and memory_out.length == 40
    memory_in.data[:] = x.tobytes()
    assert C.OH_NNExecutor_SetInputWithMemory(executor, 0, tensor, memory_in) == SUCCESS
    assert C.OH_NNExecutor_SetOutputWithMemory(executor, 0, memory_out) == SUCCESS
    assert C.OH_NNExecutor_Run(executor) == SUCCESS
    np.testing.assert_allclose(np.frombuffer(memory_out.data, np.float32).reshape(1, 10), out, rtol=1e-6)
    holder = [memory_in]
    C.OH_NNExecutor_DestroyInputMemory(executor, 0, holder)
    assert holder == [None]
    C.OH_NNExecutor_DestroyOutputMemory(executor, 0, memory_out)
    assert C.OH_NNExecutor_SetOutputWithMemory(executor, 0, memory_out) == INVALID  # released


# ---------------------------------------------------------------------------------------------------------------
# A tiny ADD model (always runnable) for the runtime and misuse tests

def build_add(dims=(2, 3)):
    g = Builder()
    a = g.tensor(OH_NN_FLOAT32, dims)
    b = g.tensor(OH_NN_FLOAT32, dims)
    out = g.tensor(OH_NN_FLOAT32, dims)
    g.op(C.OH_NN_OPS_ADD, [], [a, b], [out])
    assert C.OH_NNModel_SpecifyInputsAndOutputs(g.model, [a, b], [out]) == SUCCESS
    assert C.OH_NNModel_Finish(g.model) == SUCCESS
    return g.model


class AddEnv:
    """Live handles of every kind around a built ADD model."""

    def __init__(self):
        self.model = build_add()
        self.compilation, self.executor = compile_and_construct(self.model)
        self.desc = C.OH_NNExecutor_CreateInputTensorDesc(self.executor, 0)
        self.a = make_tensor(self.desc, np.arange(6, dtype=np.float32))
        self.b = make_tensor(self.desc, np.full(6, 10, np.float32))
        self.out = make_tensor(self.desc)
        self.quant = C.OH_NNQuantParam_Create()
        self.memory = C.OH_NNExecutor_AllocateInputMemory(self.executor, 0, 24)
        self.unbuilt = C.OH_NNCompilation_ConstructForCache()


@pytest.fixture
def env():
    return AddEnv()


def out_array(tensor):
    return np.frombuffer(C.OH_NNTensor_GetDataBuffer(tensor), np.float32).reshape(2, 3)


def test_run_sync_add(env):
    assert C.OH_NNExecutor_RunSync(env.executor, [env.a, env.b], 2, [env.out], 1) == SUCCESS
    np.testing.assert_array_equal(out_array(env.out), np.arange(6).reshape(2, 3) + 10)


def test_run_async_calls_back_with_handles_and_user_data(env):
    done = threading.Event()
    seen = {}

    def on_run_done(user_data, err_code, output_tensor, output_count):
        seen.update(user_data=user_data, code=err_code, outputs=output_tensor, count=output_count)
        done.set()

    assert C.OH_NNExecutor_RunAsync(env.executor, [env.a, env.b], 2, [env.out], 1, 1000, "token") == INVALID  # no callback
    assert C.OH_NNExecutor_SetOnRunDone(env.executor, on_run_done) == SUCCESS
    assert C.OH_NNExecutor_RunAsync(env.executor, [env.a, env.b], 2, [env.out], 1, 1000, None) == INVALID  # userData NULL
    assert C.OH_NNExecutor_RunAsync(env.executor, [env.a, env.b], 2, [env.out], 1, 0, "token") == INVALID
    assert C.OH_NNExecutor_RunAsync(env.executor, [env.a, env.b], 2, [env.out], 1, 1000, "token") == SUCCESS
    assert done.wait(10)
    assert seen["user_data"] == "token" and seen["code"] == SUCCESS and seen["count"] == 1
    assert seen["outputs"][0] is env.out  # the NN_Tensor handle that was passed
    np.testing.assert_array_equal(out_array(env.out), np.arange(6).reshape(2, 3) + 10)


def test_run_async_timeout(env):
    prepared = env.executor._obj.prepared
    original = prepared.run
    release = threading.Event()

    def blocked_run(arrays):  # finishes only after the test has seen the callback: no race with the 50 ms timeout
        release.wait(60)
        return original(arrays)

    prepared.run = blocked_run
    done = threading.Event()
    seen = {}

    def on_run_done(user_data, err_code, output_tensor, output_count):
        seen["code"] = err_code
        done.set()

    try:
        assert C.OH_NNExecutor_SetOnRunDone(env.executor, on_run_done) == SUCCESS
        assert C.OH_NNExecutor_RunAsync(env.executor, [env.a, env.b], 2, [env.out], 1, 50, 1) == SUCCESS
        assert done.wait(30)
        assert seen["code"] == C.OH_NN_TIMEOUT
    finally:
        release.set()


def test_service_died_callback_is_stored(env):
    assert C.OH_NNExecutor_SetOnServiceDied(env.executor, lambda user_data: None) == SUCCESS
    assert C.OH_NNExecutor_SetOnServiceDied(env.executor, None) == INVALID
    assert C.OH_NNExecutor_SetOnServiceDied(env.executor, 42) == INVALID
    assert C.OH_NNExecutor_SetOnRunDone(env.executor, None) == INVALID
    assert C.OH_NNExecutor_SetOnRunDone(env.executor, "not callable") == INVALID


def test_devices():
    code, ids = C.OH_NNDevice_GetAllDevicesID()
    assert code == SUCCESS and 1 in ids
    assert C.OH_NNDevice_GetName(1) == (SUCCESS, "nnrt_onnx.cpu")
    assert C.OH_NNDevice_GetType(1) == (SUCCESS, C.OH_NN_CPU)
    assert C.OH_NNDevice_GetName(0) == C.OH_NNDevice_GetName(ids[0])  # 0 = first device
    assert C.OH_NNDevice_GetName(999) == (C.OH_NN_FAILED, None)  # as the runtime's BackendManager
    assert C.OH_NNDevice_GetType(999) == (INVALID, None)
    assert C.OH_NNDevice_GetType(-1) == (INVALID, None)


def test_tensor_desc_defaults_and_limits():
    desc = C.OH_NNTensorDesc_Create()
    assert C.OH_NNTensorDesc_GetDataType(desc) == (SUCCESS, C.OH_NN_UNKNOWN)
    assert C.OH_NNTensorDesc_GetFormat(desc) == (SUCCESS, C.OH_NN_FORMAT_NONE)
    assert C.OH_NNTensorDesc_GetShape(desc) == (SUCCESS, [])
    assert C.OH_NNTensorDesc_GetName(desc) == (SUCCESS, "")
    assert C.OH_NNTensorDesc_GetElementCount(desc) == (INVALID, None)  # no shape yet
    assert C.OH_NNTensorDesc_SetShape(desc, [], 0) == INVALID
    assert C.OH_NNTensorDesc_SetShape(desc, [1] * 11, 11) == INVALID
    assert C.OH_NNTensorDesc_SetShape(desc, [1, 2], 3) == INVALID  # shapeLength beyond the array
    assert C.OH_NNTensorDesc_SetShape(desc, [2, 0], 2) == INVALID
    assert C.OH_NNTensorDesc_SetShape(desc, [1] * 10, 10) == SUCCESS
    assert C.OH_NNTensorDesc_GetByteSize(desc) == (INVALID, None)  # OH_NN_UNKNOWN has no size
    assert C.OH_NNTensorDesc_SetDataType(desc, 11) == SUCCESS  # a plain int
    assert C.OH_NNTensorDesc_SetShape(desc, np.array([2, 3, 4], np.int32), 2) == SUCCESS  # first shapeLength dims
    assert C.OH_NNTensorDesc_GetElementCount(desc) == (SUCCESS, 6)
    assert C.OH_NNTensorDesc_GetByteSize(desc) == (SUCCESS, 24)
    assert C.OH_NNTensorDesc_SetShape(desc, [-1, 3], 2) == SUCCESS
    assert C.OH_NNTensorDesc_GetElementCount(desc) == (C.OH_NN_DYNAMIC_SHAPE, 0)
    assert C.OH_NNTensorDesc_GetByteSize(desc) == (SUCCESS, 0)
    assert C.OH_NNTensorDesc_SetName(desc, "input") == SUCCESS
    assert C.OH_NNTensorDesc_SetName(desc, None) == INVALID
    assert C.OH_NNTensorDesc_GetName(desc) == (SUCCESS, "input")
    assert C.OH_NNTensorDesc_SetFormat(desc, C.OH_NN_FORMAT_NCHW) == SUCCESS
    assert C.OH_NNTensorDesc_GetFormat(desc) == (SUCCESS, C.OH_NN_FORMAT_NCHW)


def test_out_of_range_enums(env):
    desc = C.OH_NNTensorDesc_Create()
    for bad in (13, -1, 1 << 40):
        assert C.OH_NNTensorDesc_SetDataType(desc, bad) == INVALID
    assert C.OH_NNTensorDesc_SetDataType(desc, 1.0) == INVALID  # not an integer
    assert C.OH_NNTensorDesc_SetFormat(desc, 4) == INVALID
    assert C.OH_NNTensorDesc_SetFormat(desc, C.OH_NN_FORMAT_ND) == SUCCESS
    g = Builder()
    index = g.tensor(OH_NN_FLOAT32, [2])
    assert C.OH_NNModel_SetTensorType(g.model, index, 163) == INVALID
    assert C.OH_NNModel_SetTensorType(g.model, index, 162) == SUCCESS
    for op in (0, 109, -3):
        assert C.OH_NNModel_AddOperation(g.model, op, [], [0], [0]) == INVALID
    compilation = C.OH_NNCompilation_Construct(g.model)
    assert C.OH_NNCompilation_SetPerformanceMode(compilation, 5) == INVALID
    assert C.OH_NNCompilation_SetPriority(compilation, 4) == INVALID
    assert C.OH_NNCompilation_SetPriority(compilation, C.OH_NN_PRIORITY_LOW) == SUCCESS
    assert C.OH_NNCompilation_EnableFloat16(compilation, "yes") == INVALID
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(99, 1, [2])) == INVALID
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(OH_NN_FLOAT32, 1, [2], None, 500)) == INVALID


def test_add_tensor_to_model_copies_only_dtype_and_shape():
    g = Builder()
    desc = C.OH_NNTensorDesc_Create()
    C.OH_NNTensorDesc_SetDataType(desc, C.OH_NN_INT32)
    C.OH_NNTensorDesc_SetShape(desc, [2, 2], 2)
    C.OH_NNTensorDesc_SetFormat(desc, C.OH_NN_FORMAT_NCHW)
    assert C.OH_NNModel_AddTensorToModel(g.model, desc) == SUCCESS
    tensor = g.model._obj.tensors[0]
    assert tensor.dtype == OH_NN_INT32 and tensor.dims == (2, 2)
    assert tensor.format == C.OH_NN_FORMAT_NHWC and tensor.tensor_type == C.OH_NN_TENSOR and tensor.quant is None
    scalar = C.OH_NNTensorDesc_Create()  # shape never set: rank 0
    C.OH_NNTensorDesc_SetDataType(scalar, C.OH_NN_INT8)
    assert C.OH_NNModel_AddTensorToModel(g.model, scalar) == SUCCESS
    assert g.model._obj.tensors[1].dims == ()
    assert C.OH_NNModel_SetTensorData(g.model, 1, np.array(3, np.int8), 1) == SUCCESS


def test_quant_params():
    g = Builder()
    index = g.tensor(C.OH_NN_INT8, [4])
    quant = C.OH_NNQuantParam_Create()
    assert C.OH_NNQuantParam_SetScales(quant, None, 1) == INVALID
    assert C.OH_NNQuantParam_SetScales(quant, [0.5], 0) == INVALID
    assert C.OH_NNQuantParam_SetScales(quant, [0.5], 2) == INVALID  # fewer values than quantCount
    assert C.OH_NNQuantParam_SetZeroPoints(quant, [1 << 40], 1) == INVALID  # not an int32
    assert C.OH_NNQuantParam_SetScales(quant, [0.5, 0.25], 2) == SUCCESS
    assert C.OH_NNQuantParam_SetZeroPoints(quant, [0], 1) == SUCCESS
    assert C.OH_NNQuantParam_SetNumBits(quant, [8], 1) == SUCCESS
    assert C.OH_NNModel_SetTensorQuantParams(g.model, index, quant) == INVALID  # unequal lengths
    assert g.model._obj.tensors[index].quant is None  # cleared on failure
    assert C.OH_NNQuantParam_SetScales(quant, np.array([0.5]), 1) == SUCCESS
    assert C.OH_NNQuantParam_SetNumBits(quant, [4], 1) == SUCCESS
    assert C.OH_NNModel_SetTensorQuantParams(g.model, index, quant) == INVALID  # numBits must be 8
    assert C.OH_NNQuantParam_SetNumBits(quant, [8], 1) == SUCCESS
    assert C.OH_NNModel_SetTensorQuantParams(g.model, 7, quant) == INVALID  # index
    assert C.OH_NNModel_SetTensorQuantParams(g.model, index, None) == INVALID
    assert C.OH_NNModel_SetTensorQuantParams(g.model, index, quant) == SUCCESS
    assert g.model._obj.tensors[index].quant.scales == [0.5]
    assert C.OH_NNQuantParam_SetScales(quant, [2.0], 1) == SUCCESS  # the model keeps its own copy
    assert g.model._obj.tensors[index].quant.scales == [0.5]
    holder = [quant]
    assert C.OH_NNQuantParam_Destroy(holder) == SUCCESS and holder == [None]
    assert C.OH_NNQuantParam_Destroy(holder) == INVALID
    assert C.OH_NNQuantParam_Destroy(quant) == INVALID
    assert C.OH_NNQuantParam_SetScales(quant, [1.0], 1) == INVALID


def test_legacy_add_tensor():
    g = Builder()
    quant = OH_NN_QuantParam(1, [8], [0.1], [3])
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(C.OH_NN_INT8, 2, [2, 2], quant, C.OH_NN_TENSOR)) == SUCCESS
    assert g.model._obj.tensors[0].quant.zero_points == [3]
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(OH_NN_FLOAT32, 0, None)) == SUCCESS  # scalar
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(OH_NN_FLOAT32, 2, None)) == INVALID  # NULL dims, count 2
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(OH_NN_FLOAT32, 3, [1, 2])) == INVALID
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(OH_NN_FLOAT32, 1, [0])) == INVALID
    bad_bits = OH_NN_QuantParam(1, [4], [0.1], [0])
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(C.OH_NN_INT8, 1, [2], bad_bits)) == INVALID
    null_scale = OH_NN_QuantParam(1, [8], None, [0])
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(C.OH_NN_INT8, 1, [2], null_scale)) == INVALID
    assert C.OH_NNModel_AddTensor(g.model, "tensor") == INVALID
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(OH_NN_FLOAT32, None, [2, 3])) == SUCCESS  # count defaults


def test_set_tensor_data_checks():
    g = Builder()
    t = g.tensor(OH_NN_FLOAT32, [2, 2])
    dyn = g.tensor(OH_NN_FLOAT32, [-1, 2])
    data = np.ones(4, np.float32)
    assert C.OH_NNModel_SetTensorData(g.model, t, None, 16) == INVALID
    assert C.OH_NNModel_SetTensorData(g.model, t, data, 0) == INVALID
    assert C.OH_NNModel_SetTensorData(g.model, t, data, 12) == INVALID  # not the exact byte size
    assert C.OH_NNModel_SetTensorData(g.model, t, data, 20) == INVALID  # longer than the buffer
    assert C.OH_NNModel_SetTensorData(g.model, 9, data, 16) == INVALID
    assert C.OH_NNModel_SetTensorData(g.model, -1, data, 16) == INVALID
    assert C.OH_NNModel_SetTensorData(g.model, dyn, data, 16) == FORBIDDEN
    assert C.OH_NNModel_SetTensorData(g.model, t, bytearray(data.tobytes()), 16) == SUCCESS
    assert C.OH_NNModel_SetTensorData(g.model, t, data, 16) == INVALID  # twice
    assert C.OH_NNModel_SetTensorType(g.model, 9, C.OH_NN_TENSOR) == INVALID


def test_model_calls_in_the_wrong_order():
    empty = C.OH_NNModel_Construct()
    assert C.OH_NNModel_Finish(empty) == FORBIDDEN  # nothing in it
    code, flags = C.OH_NNModel_GetAvailableOperations(empty, 1)
    assert code != SUCCESS and flags is None
    g = Builder()
    a, b = g.tensor(OH_NN_FLOAT32, [2]), g.tensor(OH_NN_FLOAT32, [2])
    assert C.OH_NNCompilation_Build(C.OH_NNCompilation_Construct(g.model)) != SUCCESS  # model not finished
    assert C.OH_NNModel_AddOperation(g.model, C.OH_NN_OPS_RELU, None, [a], [b]) == INVALID
    assert C.OH_NNModel_AddOperation(g.model, C.OH_NN_OPS_RELU, OH_NN_UInt32Array(None, 1), [a], [b]) == INVALID
    assert C.OH_NNModel_AddOperation(g.model, C.OH_NN_OPS_RELU, [], [a], [9]) == INVALID
    assert C.OH_NNModel_AddOperation(g.model, C.OH_NN_OPS_RELU, [], [a], [a]) == INVALID
    assert C.OH_NNModel_AddOperation(g.model, C.OH_NN_OPS_RELU, OH_NN_UInt32Array(), [a], [b]) == SUCCESS
    assert C.OH_NNModel_SpecifyInputsAndOutputs(g.model, [a], None) == INVALID
    assert C.OH_NNModel_SpecifyInputsAndOutputs(g.model, [a], [b]) == SUCCESS
    assert C.OH_NNModel_SpecifyInputsAndOutputs(g.model, [a], [b]) == FORBIDDEN  # twice
    assert C.OH_NNModel_Finish(g.model) == SUCCESS
    assert C.OH_NNModel_Finish(g.model) == FORBIDDEN
    assert C.OH_NNModel_AddOperation(g.model, C.OH_NN_OPS_RELU, [], [a], [b]) == FORBIDDEN
    assert C.OH_NNModel_SetTensorData(g.model, a, np.ones(2, np.float32), 8) == FORBIDDEN
    assert C.OH_NNModel_SetTensorType(g.model, a, C.OH_NN_TENSOR) == FORBIDDEN
    desc = C.OH_NNTensorDesc_Create()
    assert C.OH_NNModel_AddTensorToModel(g.model, desc) == FORBIDDEN
    assert C.OH_NNModel_AddTensor(g.model, OH_NN_Tensor(OH_NN_FLOAT32, 1, [2])) == FORBIDDEN
    assert C.OH_NNModel_GetAvailableOperations(g.model, 1) == (SUCCESS, [True])


def test_compilation_calls_in_the_wrong_order(env, tmp_path):
    compilation = env.compilation  # built
    assert C.OH_NNCompilation_Build(compilation) in (FORBIDDEN, INVALID)  # twice (the C runtime: INVALID)
    assert C.OH_NNCompilation_SetDevice(compilation, 1) == FORBIDDEN
    assert C.OH_NNCompilation_SetCache(compilation, str(tmp_path), 1) == FORBIDDEN
    assert C.OH_NNCompilation_SetPerformanceMode(compilation, C.OH_NN_PERFORMANCE_LOW) == FORBIDDEN
    assert C.OH_NNCompilation_SetPriority(compilation, C.OH_NN_PRIORITY_LOW) == FORBIDDEN
    assert C.OH_NNCompilation_EnableFloat16(compilation, True) == FORBIDDEN
    assert C.OH_NNCompilation_AddExtensionConfig(compilation, "k", b"v", 1) == FORBIDDEN
    assert C.OH_NNCompilation_ImportCacheFromBuffer(compilation, b"abc", 3) == FORBIDDEN
    assert C.OH_NNExecutor_Construct(env.unbuilt) is None  # not built
    assert C.OH_NNCompilation_Build(env.unbuilt) == INVALID  # nothing to build
    assert C.OH_NNCompilation_SetDevice(env.unbuilt, 999) == INVALID
    assert C.OH_NNCompilation_SetCache(env.unbuilt, None, 1) == INVALID
    assert C.OH_NNCompilation_SetCache(env.unbuilt, str(tmp_path), -1) == INVALID
    assert C.OH_NNCompilation_SetCache(env.unbuilt, tmp_path, 1) == SUCCESS  # os.PathLike is fine


def test_extension_configs(env):
    compilation = C.OH_NNCompilation_Construct(build_add())
    assert C.OH_NNCompilation_AddExtensionConfig(compilation, None, b"1", 1) == INVALID
    assert C.OH_NNCompilation_AddExtensionConfig(compilation, "", b"1", 1) == INVALID
    assert C.OH_NNCompilation_AddExtensionConfig(compilation, "isProfiling", None, 1) == INVALID
    assert C.OH_NNCompilation_AddExtensionConfig(compilation, "isProfiling", b"1", 0) == INVALID
    assert C.OH_NNCompilation_AddExtensionConfig(compilation, "isProfiling", b"1", 2) == INVALID  # > buffer
    assert C.OH_NNCompilation_AddExtensionConfig(compilation, "isProfiling", b"1", 1) == SUCCESS
    assert C.OH_NNCompilation_AddExtensionConfig(compilation, "isProfiling", b"0", 1) == C.OH_NN_FAILED  # again
    assert C.OH_NNCompilation_Build(compilation) == SUCCESS


def test_executor_misuse(env):
    ex = env.executor
    code, shape = C.OH_NNExecutor_GetOutputShape(ex, 0)
    assert code != SUCCESS and shape is None  # no run yet
    assert C.OH_NNExecutor_Run(ex) == INVALID  # inputs not set
    tensor = OH_NN_Tensor(OH_NN_FLOAT32, 2, [2, 3])
    data = np.ones((2, 3), np.float32)
    assert C.OH_NNExecutor_SetInput(ex, 5, tensor, data, 24) == INVALID
    assert C.OH_NNExecutor_SetInput(ex, 0, tensor, data, 20) == INVALID  # shorter than the tensor
    assert C.OH_NNExecutor_SetInput(ex, 0, tensor, data, 28) == INVALID  # longer than the buffer
    assert C.OH_NNExecutor_SetInput(ex, 0, tensor, None, 24) == INVALID
    assert C.OH_NNExecutor_SetInput(ex, 0, OH_NN_Tensor(C.OH_NN_INT32, 2, [2, 3]), data, 24) == INVALID
    assert C.OH_NNExecutor_SetInput(ex, 0, OH_NN_Tensor(OH_NN_FLOAT32, 2, [3, 2]), data, 24) == INVALID
    assert C.OH_NNExecutor_SetInput(ex, 0, tensor, data, 24) == SUCCESS
    assert C.OH_NNExecutor_SetInput(ex, 1, tensor, data.tobytes(), 24) == SUCCESS
    assert C.OH_NNExecutor_Run(ex) == INVALID  # output not set
    out = np.zeros(6, np.float32)
    assert C.OH_NNExecutor_SetOutput(ex, 0, out, 0) == INVALID
    assert C.OH_NNExecutor_SetOutput(ex, 0, out, 28) == INVALID
    assert C.OH_NNExecutor_SetOutput(ex, 0, bytes(24), 24) == INVALID  # read-only
    assert C.OH_NNExecutor_SetOutput(ex, 3, out, 24) == INVALID
    assert C.OH_NNExecutor_SetOutput(ex, 0, out, 20) == SUCCESS
    assert C.OH_NNExecutor_Run(ex) == INVALID  # the output buffer is too small
    assert C.OH_NNExecutor_SetOutput(ex, 0, out, 24) == SUCCESS
    assert C.OH_NNExecutor_Run(ex) == SUCCESS
    np.testing.assert_array_equal(out, 2)
    assert C.OH_NNExecutor_GetOutputShape(ex, 0) == (SUCCESS, [2, 3])
    assert C.OH_NNExecutor_GetOutputShape(ex, 1) == (INVALID, None)
    assert C.OH_NNExecutor_CreateInputTensorDesc(ex, 2) is None
    assert C.OH_NNExecutor_CreateOutputTensorDesc(ex, 1) is None
    assert C.OH_NNExecutor_GetInputDimRange(ex, 2) == (INVALID, None, None)
    assert C.OH_NNExecutor_AllocateInputMemory(ex, 2, 24) is None
    assert C.OH_NNExecutor_AllocateOutputMemory(ex, 0, 0) is None
    # RunSync with bad tensor arrays
    a, b, o = env.a, env.b, env.out
    assert C.OH_NNExecutor_RunSync(ex, [a], 1, [o], 1) == INVALID  # the model has 2 inputs
    assert C.OH_NNExecutor_RunSync(ex, [a, b], 3, [o], 1) == INVALID  # count beyond the array
    assert C.OH_NNExecutor_RunSync(ex, [a, b], 0, [o], 1) == INVALID
    assert C.OH_NNExecutor_RunSync(ex, [a, None], 2, [o], 1) == INVALID
    assert C.OH_NNExecutor_RunSync(ex, [a, b], 2, None, 1) == INVALID
    assert C.OH_NNExecutor_RunSync(ex, [a, env.desc], 2, [o], 1) == INVALID  # not an NN_Tensor
    wrong_desc = C.OH_NNTensorDesc_Create()
    C.OH_NNTensorDesc_SetDataType(wrong_desc, OH_NN_FLOAT32)
    C.OH_NNTensorDesc_SetShape(wrong_desc, [3, 2], 2)
    assert C.OH_NNExecutor_RunSync(ex, [a, make_tensor(wrong_desc)], 2, [o], 1) == INVALID
    small_desc = C.OH_NNTensorDesc_Create()
    C.OH_NNTensorDesc_SetDataType(small_desc, OH_NN_FLOAT32)
    C.OH_NNTensorDesc_SetShape(small_desc, [2], 1)
    assert C.OH_NNExecutor_RunSync(ex, [a, b], 2, [make_tensor(small_desc)], 1) == INVALID  # output too small
    assert C.OH_NNExecutor_RunSync(ex, [a, b, o], 2, [o], 1) == SUCCESS  # only the first inputCount are read


def test_memory_functions(env):
    ex = env.executor
    tensor = OH_NN_Tensor(OH_NN_FLOAT32, 2, [2, 3])
    memory = env.memory
    assert isinstance(memory, OH_NN_Memory) and memory.length == 24
    np.frombuffer(memory.data, np.float32)[:] = 1.5
    assert C.OH_NNExecutor_SetInputWithMemory(ex, 0, tensor, memory) == SUCCESS
    user = OH_NN_Memory(np.full(6, 2.5, np.float32), 24)  # any buffer works as an OH_NN_Memory
    assert C.OH_NNExecutor_SetInputWithMemory(ex, 1, tensor, user) == SUCCESS
    assert C.OH_NNExecutor_SetInputWithMemory(ex, 1, tensor, OH_NN_Memory(bytearray(8), 24)) == INVALID
    assert C.OH_NNExecutor_SetOutputWithMemory(ex, 0, OH_NN_Memory(bytes(24), 24)) == INVALID  # read-only
    out = OH_NN_Memory(bytearray(24), 24)
    assert C.OH_NNExecutor_SetOutputWithMemory(ex, 0, out) == SUCCESS
    assert C.OH_NNExecutor_Run(ex) == SUCCESS
    np.testing.assert_array_equal(np.frombuffer(out.data, np.float32), 4.0)
    # destroy with the wrong index or a foreign struct: ignored (void), the memory stays usable
    assert C.OH_NNExecutor_DestroyInputMemory(ex, 1, memory) is None
    assert C.OH_NNExecutor_DestroyInputMemory(ex, 0, user) is None
    assert C.OH_NNExecutor_DestroyInputMemory(ex, 0, [None]) is None
    assert C.OH_NNExecutor_SetInputWithMemory(ex, 0, tensor, memory) == SUCCESS
    holder = [memory]
    assert C.OH_NNExecutor_DestroyInputMemory(ex, 0, holder) is None and holder == [None]
    assert C.OH_NNExecutor_SetInputWithMemory(ex, 0, tensor, memory) == INVALID  # released
    assert C.OH_NNExecutor_SetInputWithMemory(ex, 0, tensor, None) == INVALID


def test_tensor_functions(env):
    desc = env.desc
    assert C.OH_NNTensor_GetSize(env.a) == (SUCCESS, 24)
    assert C.OH_NNTensor_GetFd(env.a) == (SUCCESS, -1)  # host memory has no fd
    assert C.OH_NNTensor_GetOffset(env.a) == (SUCCESS, 0)
    assert C.OH_NNTensor_CreateWithFd(1, desc, 3, 24, 0) is None  # needs a hardware driver
    assert C.OH_NNTensor_CreateWithFd(1, desc, -1, 24, 0) is None
    big = C.OH_NNTensor_CreateWithSize(1, desc, 100)
    assert C.OH_NNTensor_GetSize(big) == (SUCCESS, 100)
    assert C.OH_NNTensor_CreateWithSize(1, desc, 8) is None  # smaller than the desc's byte size
    assert C.OH_NNTensor_Create(999, desc) is None  # unknown device
    assert C.OH_NNTensor_Create(1, C.OH_NNTensorDesc_Create()) is None  # no shape, OH_NN_UNKNOWN
    dynamic = C.OH_NNTensorDesc_Create()
    C.OH_NNTensorDesc_SetDataType(dynamic, OH_NN_FLOAT32)
    C.OH_NNTensorDesc_SetShape(dynamic, [-1, 3], 2)
    assert C.OH_NNTensor_Create(1, dynamic) is None  # dynamic needs CreateWithSize
    assert C.OH_NNTensor_CreateWithSize(1, dynamic, 48) is not None
    buffer = C.OH_NNTensor_GetDataBuffer(env.out)
    assert isinstance(buffer, memoryview) and not buffer.readonly and buffer.nbytes == 24
    np.frombuffer(buffer, np.float32)[:] = 7
    assert np.frombuffer(C.OH_NNTensor_GetDataBuffer(env.out), np.float32).tolist() == [7.0] * 6
    own = C.OH_NNTensor_GetTensorDesc(env.a)
    assert C.OH_NNTensorDesc_GetShape(own) == (SUCCESS, [2, 3])
    assert C.OH_NNTensorDesc_SetShape(desc, [6], 1) == SUCCESS  # the tensor copied the desc
    assert C.OH_NNTensorDesc_GetShape(own) == (SUCCESS, [2, 3])


def test_offline_model_constructors(tmp_path):
    for compilation in (C.OH_NNCompilation_ConstructWithOfflineModelFile(str(tmp_path / "model.om")),
                        C.OH_NNCompilation_ConstructWithOfflineModelFile(tmp_path / "model.om"),
                        C.OH_NNCompilation_ConstructWithOfflineModelBuffer(b"\x00" * 16, 16)):
        assert compilation is not None
        assert C.OH_NNCompilation_Build(compilation) == C.OH_NN_UNSUPPORTED
    assert C.OH_NNCompilation_ConstructWithOfflineModelFile(None) is None
    assert C.OH_NNCompilation_ConstructWithOfflineModelFile(42) is None
    assert C.OH_NNCompilation_ConstructWithOfflineModelBuffer(None, 16) is None
    assert C.OH_NNCompilation_ConstructWithOfflineModelBuffer(b"\x00" * 16, 0) is None
    assert C.OH_NNCompilation_ConstructWithOfflineModelBuffer(b"\x00" * 16, 17) is None


def test_cache_buffer_round_trip(env):
    code, size = C.OH_NNCompilation_ExportCacheToBuffer(env.unbuilt, bytearray(16), 16)
    assert code != SUCCESS and size is None  # not built
    assert C.OH_NNCompilation_ExportCacheToBuffer(env.compilation, bytearray(4), 4) == (INVALID, None)  # too small
    assert C.OH_NNCompilation_ExportCacheToBuffer(env.compilation, bytes(1 << 16), 1 << 16) == (INVALID, None)
    assert C.OH_NNCompilation_ExportCacheToBuffer(env.compilation, bytearray(8), 0) == (INVALID, None)
    buffer = bytearray(1 << 16)
    code, size = C.OH_NNCompilation_ExportCacheToBuffer(env.compilation, buffer, len(buffer))
    assert code == SUCCESS and 0 < size <= len(buffer)
    restored = C.OH_NNCompilation_ConstructForCache()
    assert C.OH_NNCompilation_ImportCacheFromBuffer(restored, buffer, 0) == INVALID
    assert C.OH_NNCompilation_ImportCacheFromBuffer(restored, None, size) == INVALID
    assert C.OH_NNCompilation_ImportCacheFromBuffer(restored, buffer, len(buffer) + 1) == INVALID
    assert C.OH_NNCompilation_ImportCacheFromBuffer(restored, buffer, size) == SUCCESS
    assert C.OH_NNCompilation_Build(restored) == SUCCESS
    executor = C.OH_NNExecutor_Construct(restored)
    assert C.OH_NNExecutor_RunSync(executor, [env.a, env.b], 2, [env.out], 1) == SUCCESS
    np.testing.assert_array_equal(out_array(env.out), np.arange(6).reshape(2, 3) + 10)


def test_dynamic_input_dim_range_and_output_shape():
    model = build_add((-1, 3))
    _, executor = compile_and_construct(model)
    assert C.OH_NNExecutor_GetInputDimRange(executor, 0) == (SUCCESS, [1, 3], [0x7FFFFFFF, 3])
    desc = C.OH_NNTensorDesc_Create()
    C.OH_NNTensorDesc_SetDataType(desc, OH_NN_FLOAT32)
    C.OH_NNTensorDesc_SetShape(desc, [4, 3], 2)
    a, b = make_tensor(desc, np.ones(12, np.float32)), make_tensor(desc, np.ones(12, np.float32))
    out_desc = C.OH_NNExecutor_CreateOutputTensorDesc(executor, 0)
    assert C.OH_NNTensorDesc_GetShape(out_desc) == (SUCCESS, [-1, 3])
    out = C.OH_NNTensor_CreateWithSize(1, out_desc, 64)
    assert C.OH_NNExecutor_RunSync(executor, [a, b], 2, [out], 1) == SUCCESS
    assert C.OH_NNExecutor_GetOutputShape(executor, 0) == (SUCCESS, [4, 3])
    assert C.OH_NNTensorDesc_GetShape(C.OH_NNTensor_GetTensorDesc(out)) == (SUCCESS, [4, 3])


# ---------------------------------------------------------------------------------------------------------------
# Destroyed handles

def test_destroyed_handles_are_rejected(env):
    destroyers = {
        "model": (env.model, C.OH_NNModel_Destroy),
        "compilation": (env.compilation, C.OH_NNCompilation_Destroy),
        "executor": (env.executor, C.OH_NNExecutor_Destroy),
        "desc": (env.desc, C.OH_NNTensorDesc_Destroy),
        "tensor": (env.a, C.OH_NNTensor_Destroy),
        "quant": (env.quant, C.OH_NNQuantParam_Destroy),
    }
    for name, (handle, destroy) in destroyers.items():
        holder = [handle]
        result = destroy(holder)
        assert holder == [None], name
        assert result in (None, SUCCESS), name
        assert destroy(holder) in (None, INVALID), name  # *ptr is NULL now
        assert destroy(handle) in (None, INVALID), name  # destroyed twice
        assert destroy(None) in (None, INVALID), name
        assert destroy([handle, handle]) in (None, INVALID), name
    assert C.OH_NNModel_Finish(env.model) == INVALID
    assert C.OH_NNModel_AddTensorToModel(env.model, C.OH_NNTensorDesc_Create()) == INVALID
    assert C.OH_NNCompilation_Construct(env.model) is None
    assert C.OH_NNCompilation_Build(env.compilation) == INVALID
    assert C.OH_NNExecutor_Construct(env.compilation) is None
    assert C.OH_NNExecutor_GetInputCount(env.executor) == (INVALID, None)
    assert C.OH_NNExecutor_RunSync(env.executor, [env.b, env.b], 2, [env.out], 1) == INVALID
    assert C.OH_NNTensorDesc_GetShape(env.desc) == (INVALID, None)
    assert C.OH_NNTensor_Create(1, env.desc) is None
    assert C.OH_NNTensor_GetDataBuffer(env.a) is None
    assert C.OH_NNTensor_GetSize(env.a) == (INVALID, None)
    assert C.OH_NNQuantParam_SetNumBits(env.quant, [8], 1) == INVALID


def test_destroy_one_handle_type_with_another():
    desc = C.OH_NNTensorDesc_Create()
    C.OH_NNModel_Destroy(desc)
    assert C.OH_NNTensorDesc_GetShape(desc) == (SUCCESS, [])  # untouched
    assert C.OH_NNTensor_Destroy(desc) == INVALID


# ---------------------------------------------------------------------------------------------------------------
# Every function, fed NULLs and garbage, answers without raising

def test_module_defines_exactly_the_75_functions():
    assert len(C_FUNCTIONS) == len(set(C_FUNCTIONS)) == 75
    defined = {name for name, obj in vars(C).items()
               if inspect.isfunction(obj) and obj.__module__ == C.__name__ and not name.startswith("_")}
    assert defined == set(C_FUNCTIONS)
    assert set(C.FUNCTIONS) == set(C_FUNCTIONS)
    assert set(POINTER) | set(VOID) | set(OUTS) <= set(C_FUNCTIONS)


def test_reference_lists_the_same_functions():
    import re

    from support import shared_file

    text = shared_file("reference", "nnrt_c_api.md").read_text()
    listed = set(re.findall(r"^\| `(OH_NN\w+)\(", text, re.MULTILINE))
    assert listed == set(C_FUNCTIONS)


def test_enums_are_importable_under_their_c_names():
    from nnrt_onnx import enums

    for enum_name in enums.__all__:
        enum = getattr(enums, enum_name)
        assert getattr(C, enum_name) is enum
        for member in enum:
            assert getattr(C, member.name) is member
            assert member.name in C.__all__
    from nnrt_onnx.capi import OH_NN_FUSED_RELU6, OH_NN_OPS_CONV2D  # noqa: F401


GARBAGE = {
    "none": None, "str": "garbage", "negative": -1, "huge": 1 << 70, "float": 1.5, "bytes": b"\x00\x01",
    "object": object(), "list": [None], "zero": 0,
}


NO_ARGUMENTS = sorted(name for name in C_FUNCTIONS if arity(name) == 0)
WITH_ARGUMENTS = sorted(set(C_FUNCTIONS) - set(NO_ARGUMENTS))
DEVICE_QUERIES = {"OH_NNDevice_GetName", "OH_NNDevice_GetType"}


def expected_for_garbage(name: str, garbage: str):
    """What C gives when every argument is ``garbage`` (nnrt_c_api.md, "Python conventions", and docs/capi.md):
    a void function nothing, a handle-returning one NULL, a code-returning one OH_NN_INVALID_PARAMETER (with None
    out values). Two exceptions are valid calls after all: a str or bytes path makes an offline-model compilation
    (C only checks the path is not NULL; its Build is OH_NN_UNSUPPORTED here), and device id 0 is the first device
    (docs/capi.md, "Device id 0")."""
    if name in VOID:
        return None
    if name == "OH_NNCompilation_ConstructWithOfflineModelFile" and garbage in ("str", "bytes"):
        return C.OH_NNCompilation
    if name in POINTER:
        return None
    if name in DEVICE_QUERIES and garbage == "zero":
        return SUCCESS
    return INVALID


@pytest.mark.parametrize("name", WITH_ARGUMENTS)
@pytest.mark.parametrize("garbage", list(GARBAGE), ids=list(GARBAGE))
def test_every_function_answers_garbage_with_its_code(name, garbage):
    result = getattr(C, name)(*[GARBAGE[garbage]] * arity(name))
    check_c_result(name, result)
    expected = expected_for_garbage(name, garbage)
    if isinstance(expected, type):
        assert isinstance(result, expected), result
        assert C.OH_NNCompilation_Build(result) == C.OH_NN_UNSUPPORTED
    elif name in OUTS:
        assert result[0] == expected, result
    else:
        assert result is expected if expected is None else result == expected, result


def test_device_zero_is_the_first_device():
    code, ids = C.OH_NNDevice_GetAllDevicesID()
    assert code == SUCCESS and ids[0] == 1
    assert C.OH_NNDevice_GetName(0) == C.OH_NNDevice_GetName(ids[0]) == (SUCCESS, "nnrt_onnx.cpu")
    assert C.OH_NNDevice_GetType(0) == C.OH_NNDevice_GetType(ids[0]) == (SUCCESS, C.OH_NN_CPU)


@pytest.mark.parametrize("name", NO_ARGUMENTS)
def test_functions_without_arguments_answer(name):
    """The five functions without parameters: a fresh handle each call, or (for GetAllDevicesID) the device list."""
    first, second = getattr(C, name)(), getattr(C, name)()
    if name == "OH_NNDevice_GetAllDevicesID":
        assert first == second == (SUCCESS, [1, 2])
    else:
        assert first is not None and second is not None and first is not second


@pytest.mark.parametrize("name", C_FUNCTIONS)
def test_every_function_answers_a_wrong_argument_count(name):
    """Too many, unknown keyword, or (for functions with parameters) no arguments: C's NULL / INVALID_PARAMETER."""
    fn = getattr(C, name)
    n = arity(name)
    calls = [fn(*[None] * (n + 1)), fn(bogus=1)] + ([fn()] if n else [])
    for result in calls:
        check_c_result(name, result)
        if name in VOID or name in POINTER:
            assert result is None, result
        elif name in OUTS:
            assert result[0] == INVALID, result
        else:
            assert result == INVALID, result


@pytest.mark.parametrize("name", sorted(set(C_FUNCTIONS) - {"OH_NNQuantParam_Create", "OH_NNModel_Construct",
                                                            "OH_NNCompilation_ConstructForCache",
                                                            "OH_NNTensorDesc_Create", "OH_NNDevice_GetAllDevicesID"}))
def test_every_function_rejects_null(name):
    result = getattr(C, name)(*[None] * arity(name))
    if name in VOID:
        assert result is None
    elif name in POINTER:
        assert result is None
    elif name in OUTS:
        assert result[0] == INVALID and all(v is None for v in result[1:])
    else:
        assert result == INVALID


def _pool(env: AddEnv) -> list:
    """Arguments of every kind: live, destroyed and foreign handles, structs, buffers, ints and junk."""
    dead = C.OH_NNTensorDesc_Create()
    C.OH_NNTensorDesc_Destroy(dead)
    return [None, 0, 1, 2, 6, 24, -1, 1 << 70, 2.5, "garbage", "", b"\x00\x01\x02\x03", bytearray(24),
            np.zeros(6, np.float32), [0, 1], [2], [None], [env.a, env.b], [env.out], OH_NN_UInt32Array([0, 1]),
            OH_NN_UInt32Array(None, 3), OH_NN_Tensor(OH_NN_FLOAT32, 2, [2, 3]), OH_NN_Tensor("x", 9, 3),
            OH_NN_Memory(bytearray(24), 24), OH_NN_Memory(None, 5), OH_NN_QuantParam(1, [8], [0.5], [0]),
            object(), lambda *args: None, env.model, env.compilation, env.unbuilt, env.executor, env.desc, env.a,
            env.out, env.quant, env.memory, dead, [env.model], OH_NN_FLOAT32, C.OH_NN_OPS_ADD, 1000]


def _typed(env: AddEnv) -> dict[str, list]:
    """Mostly valid values for each C parameter name, so that calls get past the first checks."""
    open_model = Builder()
    open_model.tensor(OH_NN_FLOAT32, [2, 3])
    open_model.tensor(OH_NN_FLOAT32, [2, 3])
    buffers = [bytearray(24), np.ones(6, np.float32), bytearray(4096)]
    sizes = [0, 1, 2, 6, 24, 4096]
    return {
        "buffer": buffers, "dataBuffer": buffers, "modelBuffer": buffers, "configValue": buffers,
        "cachePath": ["no_such_cache_dir"], "modelPath": ["model.om"], "name": ["t"], "configName": ["k"],
        "compilation": [env.compilation, env.unbuilt, C.OH_NNCompilation_Construct(env.model)],
        "configValueSize": sizes, "length": sizes, "size": sizes, "modelSize": sizes, "quantCount": sizes,
        "shapeLength": sizes, "inputCount": sizes, "outputCount": sizes,
        "dataType": [OH_NN_FLOAT32, 4], "deviceID": [0, 1], "enableFloat16": [True, False],
        "executor": [env.executor], "fd": [-1, 3], "offset": [0, 8], "format": [1, 2],
        "index": [0, 1, 2], "inputIndex": [0, 1, 2], "outputIndex": [0, 1],
        "inputIndices": [[0], [0, 1]], "outputIndices": [[1], [2]], "paramIndices": [[], [2]],
        "inputTensor": [[env.a, env.b]], "outputTensor": [[env.out]],
        "memory": [env.memory, [env.memory], OH_NN_Memory(bytearray(24), 24)],
        "model": [env.model, open_model.model],
        "numBits": [[8], [8, 8]], "scales": [[0.5]], "zeroPoints": [[0], [1, 2]],
        "onRunDone": [lambda *args: None], "onServiceDied": [lambda *args: None],
        "op": [C.OH_NN_OPS_ADD, C.OH_NN_OPS_RELU], "performanceMode": [0, 4], "priority": [0, 3],
        "quantParam": [env.quant], "quantParams": [env.quant, [env.quant]],
        "shape": [[2, 3], [-1, 3], [4]],
        "tensor": [OH_NN_Tensor(OH_NN_FLOAT32, 2, [2, 3]), env.a, env.out, [env.a]],
        "tensorDesc": [env.desc, [env.desc], C.OH_NNTensorDesc_Create()],
        "tensorType": [0, C.OH_NN_ADD_ACTIVATIONTYPE], "timeout": [100], "userData": ["user"], "version": [1],
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_call_sequences(data):
    """Sequences of calls on shared handles, each argument mostly valid or drawn from the junk pool."""
    env = AddEnv()
    assert C.OH_NNExecutor_SetOnRunDone(env.executor, lambda *args: None) == SUCCESS
    pool, typed = _pool(env), _typed(env)
    for step in range(data.draw(st.integers(1, 8), label="calls")):
        name = data.draw(st.sampled_from(C_FUNCTIONS), label=f"function{step}")
        args = []
        for param in inspect.signature(getattr(C, name)).parameters:
            choices = st.sampled_from(typed[param])
            if data.draw(st.integers(0, 4), label="junk?") == 0:
                choices = st.sampled_from(pool)
            args.append(data.draw(choices, label=param))
        check_c_result(name, getattr(C, name)(*args))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_every_function_with_mixed_arguments(data):
    env = AddEnv()
    pool = _pool(env)
    name = data.draw(st.sampled_from(C_FUNCTIONS), label="function")
    args = [data.draw(st.sampled_from(pool), label=f"arg{i}") for i in range(arity(name))]
    check_c_result(name, getattr(C, name)(*args))
