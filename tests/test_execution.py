"""Compilation options, executors (legacy buffers, shared memory, NN_Tensors, async), float16, dynamic shapes, devices."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from support import code_of

from nnrt_onnx import (
    Compilation,
    Device,
    Executor,
    Model,
    NNRtError,
    PreparedModel,
    Tensor,
    TensorDesc,
    all_device_ids,
    get_device,
    register_device,
)
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_DeviceType
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_PerformanceMode as PM
from nnrt_onnx.enums import OH_NN_Priority as PR
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as TT


def add_model(dims=(2, 3), out_dims=None, activation=None):
    """y = x + c with c = 1e-4 (a constant), optionally with a fused activation."""
    model = Model()
    x = model.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, dims))
    c = model.add_constant(np.full([d if d > 0 else 1 for d in dims][-1:], 1e-4, np.float32))
    y = model.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, out_dims or dims))
    params = [] if activation is None else [model.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, activation)]
    model.add_operation(OP.OH_NN_OPS_ADD, params, [x, c], [y])
    model.specify_inputs_and_outputs([x], [y])
    model.finish()
    return model


def built(model, **options):
    compilation = Compilation(model)
    if options.get("float16"):
        compilation.enable_float16(True)
    compilation.build()
    return compilation


def test_float16_really_computes_in_float16():
    x = np.ones((2, 3), np.float32)
    (exact,) = Executor(built(add_model())).run_arrays([x])
    (half,) = Executor(built(add_model(), float16=True)).run_arrays([x])
    assert exact.dtype == half.dtype == np.float32
    np.testing.assert_allclose(exact, 1.0001, rtol=1e-7)
    # float16 has a spacing of ~9.8e-4 at 1.0: 1 + 1e-4 rounds back to 1
    np.testing.assert_array_equal(half, np.ones((2, 3), np.float32))


def test_fused_activation_is_applied():
    x = np.array([[-1, 0.5, 7]], np.float32)
    (relu6,) = Executor(built(add_model((1, 3), activation=2))).run_arrays([x])
    np.testing.assert_allclose(relu6, [[0, 0.5001, 6]], rtol=1e-6)


def test_dynamic_input_dims_take_concrete_shapes_at_run_time(rng):
    executor = Executor(built(add_model((-1, 3))))
    for rows in (1, 4):
        x = rng.standard_normal((rows, 3)).astype(np.float32)
        (y,) = executor.run_arrays([x])
        np.testing.assert_allclose(y, x + np.float32(1e-4), rtol=1e-6)
        assert executor.output_shape(0) == [rows, 3]
    assert executor.input_dim_range(0) == ([1, 3], [0x7FFFFFFF, 3])
    assert code_of(executor.run_arrays, [np.zeros((2, 4), np.float32)]) == RC.OH_NN_INVALID_PARAMETER


def test_declared_output_shape_is_checked():
    executor = Executor(built(add_model((2, 3), out_dims=(3, 2))))
    with pytest.raises(NNRtError) as info:
        executor.run_arrays([np.zeros((2, 3), np.float32)])
    assert info.value.code == RC.OH_NN_INVALID_PARAMETER and "declares [3, 2]" in info.value.message


def test_legacy_buffers_and_shared_memory():
    executor = Executor(built(add_model()))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = bytearray(24)
    assert code_of(executor.run) == RC.OH_NN_INVALID_PARAMETER  # nothing set yet
    assert code_of(executor.set_input, 0, x.tobytes(), DT.OH_NN_INT32, (2, 3)) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(executor.set_input, 0, x.tobytes(), DT.OH_NN_FLOAT32, (2, -1)) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(executor.set_input, 0, x.tobytes()[:20], DT.OH_NN_FLOAT32, (2, 3)) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(executor.set_input, 1, x.tobytes(), DT.OH_NN_FLOAT32, (2, 3)) == RC.OH_NN_INVALID_PARAMETER
    executor.set_input(0, x.tobytes(), DT.OH_NN_FLOAT32, (2, 3))
    executor.set_output(0, out)
    executor.run()
    np.testing.assert_allclose(np.frombuffer(out, np.float32).reshape(2, 3), x + np.float32(1e-4))
    assert executor.output_shape(0) == [2, 3]

    small = executor.allocate_output_memory(0, 8)
    executor.set_output_with_memory(0, small)
    assert code_of(executor.run) == RC.OH_NN_INVALID_PARAMETER  # 24 bytes do not fit 8
    memory_in = executor.allocate_input_memory(0, 24)
    memory_in.data[:] = x.tobytes()
    memory_out = executor.allocate_output_memory(0, 24)
    executor.set_input_with_memory(0, DT.OH_NN_FLOAT32, (2, 3), memory_in)
    executor.set_output_with_memory(0, memory_out)
    executor.run()
    np.testing.assert_allclose(np.frombuffer(memory_out.data, np.float32), (x + np.float32(1e-4)).ravel())
    executor.destroy_memory("input", 0, memory_in)
    assert code_of(executor.set_input_with_memory, 0, DT.OH_NN_FLOAT32, (2, 3), memory_in) == RC.OH_NN_INVALID_PARAMETER


def test_output_shape_before_run_is_forbidden():
    executor = Executor(built(add_model()))
    assert code_of(executor.output_shape, 0) == RC.OH_NN_OPERATION_FORBIDDEN
    assert code_of(executor.output_shape, 1) == RC.OH_NN_INVALID_PARAMETER


def test_run_sync_with_tensors_writes_dynamic_output_shapes():
    executor = Executor(built(add_model((-1, 3))))
    x = Tensor(1, TensorDesc(DT.OH_NN_FLOAT32, [4, 3]))
    x.as_array()[:] = 2.0
    y = Tensor(1, TensorDesc(DT.OH_NN_FLOAT32, [-1, 3]), size=64)
    executor.run_sync([x], [y])
    assert y.desc.shape == (4, 3)
    np.testing.assert_allclose(y.as_array(), 2.0001, rtol=1e-6)
    assert code_of(executor.run_sync, [x, x], [y]) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(executor.run_sync, [None], [y]) == RC.OH_NN_INVALID_PARAMETER
    tiny = Tensor(1, TensorDesc(DT.OH_NN_FLOAT32, [-1]), size=4)
    assert code_of(executor.run_sync, [x], [tiny]) == RC.OH_NN_INVALID_PARAMETER


def test_run_async_calls_back_with_results():
    executor = Executor(built(add_model()))
    x = Tensor(1, TensorDesc(DT.OH_NN_FLOAT32, [2, 3]))
    x.as_array()[:] = 1.0
    y = Tensor(1, TensorDesc(DT.OH_NN_FLOAT32, [2, 3]))
    done, seen = threading.Event(), {}

    def on_done(user_data, code, outputs, count):
        seen.update(user_data=user_data, code=code, count=count, value=outputs[0].as_array().copy())
        done.set()

    assert code_of(executor.run_async, [x], [y], 1000, "tag") == RC.OH_NN_INVALID_PARAMETER  # no callback yet
    executor.on_run_done = on_done
    executor.run_async([x], [y], 5000, "tag")
    assert done.wait(10)
    assert seen["user_data"] == "tag" and seen["code"] == RC.OH_NN_SUCCESS and seen["count"] == 1
    np.testing.assert_allclose(seen["value"], 1.0001, rtol=1e-6)


SLOW_RELEASE = threading.Event()
SLOW_RELEASE.set()


class SlowDevice(Device):
    """A second backend registered through the public device interface (delegates to the CPU after a pause)."""

    id = 4242
    name = "test.slow"
    device_type = OH_NN_DeviceType.OH_NN_OTHERS
    supports_float16 = False
    performance_modes = frozenset({PM.OH_NN_PERFORMANCE_NONE})

    def supports(self, op):
        return op in (OP.OH_NN_OPS_ADD,)

    def prepare(self, model, options):
        inner = get_device(1).prepare(model, options)

        class Slow(PreparedModel):
            def __init__(self):
                self.model = model

            def run(self, inputs):
                SLOW_RELEASE.wait(60)  # blocks until the test has seen the timeout: no race, whatever the load
                return inner.run(inputs)

        return Slow()


def test_another_device_registers_and_its_limits_are_enforced():
    register_device(SlowDevice())
    assert 4242 in all_device_ids()
    compilation = Compilation(add_model())
    compilation.set_device(4242)
    compilation.enable_float16(True)
    assert code_of(compilation.build) == RC.OH_NN_OPERATION_FORBIDDEN
    compilation = Compilation(add_model())
    compilation.set_device(4242)
    compilation.set_performance_mode(PM.OH_NN_PERFORMANCE_HIGH)
    assert code_of(compilation.build) == RC.OH_NN_OPERATION_FORBIDDEN
    relu = Model()
    a, b = relu.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1])), relu.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1]))
    relu.add_operation(OP.OH_NN_OPS_RELU, [], [a], [b])
    relu.specify_inputs_and_outputs([a], [b])
    relu.finish()
    assert relu.get_available_operations(4242) == [False]
    compilation = Compilation(relu)
    compilation.set_device(4242)
    assert code_of(compilation.build) == RC.OH_NN_FAILED  # an unsupported op fails the build, as in NNRt

    compilation = Compilation(add_model())
    compilation.set_device(4242)
    compilation.build()
    executor = Executor(compilation)
    x = Tensor(4242, TensorDesc(DT.OH_NN_FLOAT32, [2, 3]))
    y = Tensor(4242, TensorDesc(DT.OH_NN_FLOAT32, [2, 3]))
    done, seen = threading.Event(), {}
    executor.on_run_done = lambda user, code, outs, n: (seen.update(code=code), done.set())
    SLOW_RELEASE.clear()
    try:
        executor.run_async([x], [y], 50, None)  # the run cannot end before the 50 ms timeout: it waits for us
        assert done.wait(30) and seen["code"] == RC.OH_NN_TIMEOUT
    finally:
        SLOW_RELEASE.set()


def test_compilation_options_and_order():
    compilation = Compilation(add_model())
    assert code_of(compilation.set_device, 999) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(compilation.set_performance_mode, 5) == RC.OH_NN_INVALID_PARAMETER
    assert code_of(compilation.set_priority, 4) == RC.OH_NN_INVALID_PARAMETER
    compilation.set_performance_mode(PM.OH_NN_PERFORMANCE_EXTREME)
    compilation.set_priority(PR.OH_NN_PRIORITY_HIGH)
    compilation.build()
    for call in (lambda: compilation.set_device(1), lambda: compilation.enable_float16(True),
                 lambda: compilation.set_priority(0), lambda: compilation.set_performance_mode(0),
                 lambda: compilation.set_cache("/tmp", 1)):
        assert code_of(call) == RC.OH_NN_OPERATION_FORBIDDEN
    assert code_of(compilation.build) == RC.OH_NN_INVALID_PARAMETER  # building twice, as the real runtime answers
    unfinished = Model()
    assert code_of(Compilation(unfinished).build) == RC.OH_NN_OPERATION_FORBIDDEN
    assert code_of(Executor, Compilation(add_model())) == RC.OH_NN_OPERATION_FORBIDDEN
