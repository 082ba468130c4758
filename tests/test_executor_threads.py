"""One Executor shared by threads (issue 12): before, 8 threads through set_input/run got 524 wrong results of 800 and
no error. Now the legacy sequence belongs to one thread at a time (OH_NN_OPERATION_FORBIDDEN for the others) and
the array calls are safe to share: never a wrong result. The oracle is numpy: y = relu(x * 2 + 1) per thread."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from nnrt_onnx import Compilation, Executor, Model, NNRtError, TensorDesc
from nnrt_onnx import capi as C
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_ReturnCode as RC
from nnrt_onnx.enums import OH_NN_TensorType as TT

THREADS, ROUNDS, SIZE = 8, 100, 64


def executor() -> Executor:
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, SIZE]))
    two = m.add_constant(np.full((1, SIZE), 2.0, np.float32))
    one = m.add_constant(np.ones((1, SIZE), np.float32))
    scaled = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, SIZE]))
    y = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, SIZE]))
    m.add_operation(OP.OH_NN_OPS_MUL, [m.add_param(TT.OH_NN_MUL_ACTIVATION_TYPE, 0)], [x, two], [scaled])
    m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 1)], [scaled, one], [y])
    m.specify_inputs_and_outputs([x], [y])
    m.finish()
    compilation = Compilation(m)
    compilation.build()
    return Executor(compilation)


def expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x * np.float32(2) + np.float32(1), 0)


def hammer(work) -> tuple[int, int, int, list]:
    """Run ``work(thread, round) -> 'ok' | 'wrong' | 'refused'`` from THREADS threads released together."""
    counts = {"ok": 0, "wrong": 0, "refused": 0}
    errors = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def body(thread: int) -> None:
        start.wait()
        for r in range(ROUNDS):
            try:
                outcome = work(thread, r)
            except Exception as exc:  # anything but the documented refusal is a failure of the test
                errors.append(exc)
                return
            with lock:
                counts[outcome] += 1

    threads = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return counts["ok"], counts["wrong"], counts["refused"], errors


def data(thread: int, r: int) -> np.ndarray:
    return np.random.default_rng(thread * 1000 + r).standard_normal((1, SIZE)).astype(np.float32)


def test_legacy_sequence_shared_by_8_threads_is_refused_never_wrong():
    shared = executor()

    def work(thread: int, r: int) -> str:
        x = data(thread, r)
        out = bytearray(SIZE * 4)
        try:  # (a thread does other work between the calls: the sleeps let the others interleave)
            shared.set_input(0, x)
            time.sleep(0.0005)
            shared.set_output(0, out)
            time.sleep(0.0005)
            shared.run()
        except NNRtError as exc:
            assert exc.code == RC.OH_NN_OPERATION_FORBIDDEN, exc
            return "refused"
        got = np.frombuffer(bytes(out), np.float32).reshape(1, SIZE)
        return "ok" if np.array_equal(got, expected(x)) else "wrong"

    ok, wrong, refused, errors = hammer(work)
    assert not errors, errors[:3]
    assert wrong == 0
    # every round either ran or was refused; the first claim always completes (how many more do depends on the
    # scheduler: a loaded machine lets fewer through)
    assert ok + refused == THREADS * ROUNDS and ok >= 1


def test_the_c_facade_returns_operation_forbidden():
    shared = C.OH_NNExecutor_Construct(_compilation_handle())
    x = np.ones((1, SIZE), np.float32)
    assert C.OH_NNExecutor_SetInput(shared, 0, _tensor_for(x), x.tobytes(), x.nbytes) == C.OH_NN_SUCCESS
    codes = []
    thread = threading.Thread(target=lambda: codes.append(
        C.OH_NNExecutor_SetInput(shared, 0, _tensor_for(x), x.tobytes(), x.nbytes)))
    thread.start()
    thread.join()
    assert codes == [C.OH_NN_OPERATION_FORBIDDEN]
    out = bytearray(x.nbytes)
    assert C.OH_NNExecutor_SetOutput(shared, 0, out, len(out)) == C.OH_NN_SUCCESS
    assert C.OH_NNExecutor_Run(shared) == C.OH_NN_SUCCESS
    np.testing.assert_array_equal(np.frombuffer(bytes(out), np.float32).reshape(1, SIZE), np.maximum(x, 0))
    thread = threading.Thread(target=lambda: codes.append(  # after run, another thread may start its sequence
        C.OH_NNExecutor_SetInput(shared, 0, _tensor_for(x), x.tobytes(), x.nbytes)))
    thread.start()
    thread.join()
    assert codes == [C.OH_NN_OPERATION_FORBIDDEN, C.OH_NN_SUCCESS]


def test_a_refused_first_call_does_not_lock_the_others_out():
    shared = executor()
    with pytest.raises(NNRtError) as info:
        shared.set_input(0, np.ones((2, 2), np.float32))  # wrong shape: INVALID_PARAMETER
    assert info.value.code == RC.OH_NN_INVALID_PARAMETER
    results = []
    thread = threading.Thread(target=lambda: results.append(shared.run_arrays([np.ones((1, SIZE), np.float32)])))
    thread.start()
    thread.join()
    other = []

    def sequence():
        x = np.ones((1, SIZE), np.float32)
        out = bytearray(x.nbytes)
        shared.set_input(0, x)
        shared.set_output(0, out)
        shared.run()
        other.append(np.frombuffer(bytes(out), np.float32))

    thread = threading.Thread(target=sequence)
    thread.start()
    thread.join()
    assert len(other) == 1 and np.array_equal(other[0], expected(np.ones(SIZE, np.float32)))


def test_run_arrays_shared_by_8_threads_is_always_right():
    shared = executor()

    def work(thread: int, r: int) -> str:
        x = data(thread, r)
        (got,) = shared.run_arrays([x])
        return "ok" if np.array_equal(got, expected(x)) else "wrong"

    ok, wrong, refused, errors = hammer(work)
    assert not errors and wrong == 0 and refused == 0 and ok == THREADS * ROUNDS


# -- C facade helpers --------------------------------------------------------------------------------------------------

def _compilation_handle():
    model = C.OH_NNModel_Construct()
    desc = C.OH_NNTensorDesc_Create()
    C.OH_NNTensorDesc_SetDataType(desc, C.OH_NN_FLOAT32)
    assert C.OH_NNTensorDesc_SetShape(desc, [1, SIZE], 2) == C.OH_NN_SUCCESS
    C.OH_NNModel_AddTensorToModel(model, desc)
    C.OH_NNModel_AddTensorToModel(model, desc)
    C.OH_NNModel_AddOperation(model, C.OH_NN_OPS_RELU, [], [0], [1])
    C.OH_NNModel_SpecifyInputsAndOutputs(model, [0], [1])
    assert C.OH_NNModel_Finish(model) == C.OH_NN_SUCCESS
    compilation = C.OH_NNCompilation_Construct(model)
    assert C.OH_NNCompilation_Build(compilation) == C.OH_NN_SUCCESS
    return compilation


def _tensor_for(x: np.ndarray):
    return C.OH_NN_Tensor(dataType=C.OH_NN_FLOAT32, dimensions=list(x.shape))
