"""The native device's execution plan (nnrt_onnx/runtime/cpu.py, memory.py, threads.py): arena memory planning
never overwrites a value someone still holds (outputs, captures, views), reshape-like steps are views that never
alias the caller's arrays, constants come back as copies, the thread policy's counts, the per-step profile.

Oracle: plain numpy (float64) formulas of the same small networks, written here."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from nnrt_onnx import Compilation, Executor, Model, NNRtError, TensorDesc
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_PerformanceMode as PM
from nnrt_onnx.enums import OH_NN_TensorType as TT
from nnrt_onnx.enums import OH_NN_ReturnCode
from nnrt_onnx.runtime.memory import slot_is_free
from nnrt_onnx.runtime.threads import THREADS_ENV, THREADS_EXTENSION, available_cores, blas_threads, thread_count

C = 8


def pointwise_chain(depth=4, seed=0):
    """x [1, 5, 5, C] -> depth x (1x1 CONV2D + bias, fused RELU) with a residual ADD every two convs -> y.
    Every conv output has the same shape, so the arena reuses slots. Returns the model, the weights and the indices
    of the intermediate tensors."""
    rng = np.random.default_rng(seed)
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 5, 5, C]))
    current, weights, inner = x, [], []
    skip = x
    for k in range(depth):
        w = (rng.standard_normal((C, 1, 1, C)) / np.sqrt(C)).astype(np.float32)
        b = (rng.standard_normal(C) * 0.1).astype(np.float32)
        weights.append((w, b))
        out = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 5, 5, C]))
        m.add_operation(OP.OH_NN_OPS_CONV2D, [m.add_param(TT.OH_NN_CONV2D_ACTIVATION_TYPE, 1)],
                        [current, m.add_constant(w), m.add_constant(b)], [out])
        inner.append(out)
        current = out
        if k % 2 == 1:
            summed = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [1, 5, 5, C]))
            m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 0)], [current, skip],
                            [summed])
            inner.append(summed)
            current = skip = summed
    m.specify_inputs_and_outputs([x], [current])
    m.finish()
    return m, weights, inner


def oracle(x, weights):
    """The chain in float64: relu(x @ w^T + b), residual every two convs; also every intermediate in order."""
    current = skip = x.astype(np.float64)
    inner = []
    for k, (w, b) in enumerate(weights):
        current = np.maximum(current @ w.reshape(C, C).T.astype(np.float64) + b, 0)
        inner.append(current)
        if k % 2 == 1:
            current = skip = current + skip
            inner.append(current)
    return current, inner


def executor(model, **extensions):
    compilation = Compilation(model)
    for name, value in extensions.items():
        compilation.add_extension_config(name, value)
    compilation.build()
    return Executor(compilation)


def test_arena_reuses_slots_and_the_results_match_the_oracle():
    model, weights, _ = pointwise_chain(depth=6)
    ex = executor(model)
    convs = sum(op.op == OP.OH_NN_OPS_CONV2D for op in model.operations)
    assert 0 < len(ex.prepared._arena_sizes) < convs  # lifetimes let later convs reuse earlier slots
    x = np.random.default_rng(1).standard_normal((1, 5, 5, C)).astype(np.float32)
    (y,) = ex.run_arrays([x])
    np.testing.assert_allclose(y, oracle(x, weights)[0], rtol=1e-5, atol=1e-5)


def test_outputs_held_by_the_caller_are_never_overwritten_by_later_runs():
    model, weights, _ = pointwise_chain(depth=4)
    ex = executor(model)
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((1, 5, 5, C)).astype(np.float32) for _ in range(4)]
    kept = [ex.run_arrays([x])[0] for x in xs]
    for x, y in zip(xs, kept):
        np.testing.assert_allclose(y, oracle(x, weights)[0], rtol=1e-5, atol=1e-5)


def test_captured_intermediates_keep_their_values():
    model, weights, inner = pointwise_chain(depth=4)
    ex = executor(model)
    x = np.random.default_rng(3).standard_normal((1, 5, 5, C)).astype(np.float32)
    capture = {i: None for i in inner}
    ex.run_arrays([x], capture=capture)
    arena = ex.prepared._arenas[0]
    assert not any(np.may_share_memory(capture[i], slot) for i in inner for slot in arena)  # copies
    ex.run_arrays([x * 2])  # a second run must not write into what the first captured
    _, expected = oracle(x, weights)
    for index, want in zip(inner, expected):
        np.testing.assert_allclose(capture[index], want, rtol=1e-5, atol=1e-5)


def test_concurrent_runs_of_one_compilation_use_separate_arenas():
    model, weights, _ = pointwise_chain(depth=6)
    compilation = Compilation(model)
    compilation.build()
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((1, 5, 5, C)).astype(np.float32) for _ in range(4)]
    failures = []

    def work(x):
        ex = Executor(compilation)
        for _ in range(30):
            (y,) = ex.run_arrays([x])
            if not np.allclose(y, oracle(x, weights)[0], rtol=1e-5, atol=1e-5):
                failures.append("mismatch")

    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_slot_is_free_sees_views_and_other_holders():
    arena = [np.empty(6, np.float32)]

    def free():
        buffer = arena[0]
        return slot_is_free(buffer)

    assert free()
    view = arena[0].reshape(2, 3)
    assert not free()
    del view
    held = arena[0]
    assert not free()
    del held
    assert free()


def reshape_model(source_is_constant=False):
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2, 6]))
    shape = m.add_constant(np.array([3, 4], np.int64))
    y = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [3, 4]))
    if source_is_constant:
        k = m.add_constant(np.arange(12, dtype=np.float32).reshape(2, 6))
        m.add_operation(OP.OH_NN_OPS_RESHAPE, [], [k, shape], [y])
        z = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2, 6]))
        m.add_operation(OP.OH_NN_OPS_ADD, [m.add_param(TT.OH_NN_ADD_ACTIVATIONTYPE, 0)], [x, k], [z])
        m.specify_inputs_and_outputs([x], [y, z])
    else:
        m.add_operation(OP.OH_NN_OPS_RESHAPE, [], [x, shape], [y])
        m.specify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def test_reshape_is_a_view_inside_but_never_aliases_the_callers_input():
    ex = executor(reshape_model())
    assert any(step.view_shape == (3, 4) for step in ex.prepared.steps)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    (y,) = ex.run_arrays([x])
    np.testing.assert_array_equal(y, np.arange(12, dtype=np.float32).reshape(3, 4))
    y[0, 0] = 99
    assert x[0, 0] == 0


def test_constants_come_back_as_writeable_copies():
    model = reshape_model(source_is_constant=True)
    ex = executor(model)
    y, _ = ex.run_arrays([np.zeros((2, 6), np.float32)])
    assert y.flags.writeable
    y[...] = -1
    y2, _ = ex.run_arrays([np.zeros((2, 6), np.float32)])
    np.testing.assert_array_equal(y2, np.arange(12, dtype=np.float32).reshape(3, 4))


def test_profile_times_every_step():
    model, _, _ = pointwise_chain(depth=4)
    ex = executor(model)
    records = []
    ex.prepared.run([np.zeros((1, 5, 5, C), np.float32)], profile=records)
    assert [r[0] for r in records] == [s.number for s in ex.prepared.steps]
    assert {r[1] for r in records} == {"OH_NN_OPS_CONV2D", "OH_NN_OPS_ADD"}
    assert all(r[2] >= 0 for r in records)


# ---------------------------------------------------------------------------------------------------------------
# thread policy


def test_thread_count_policy(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    cores = available_cores()
    assert thread_count() == 1
    assert thread_count(PM.OH_NN_PERFORMANCE_LOW) == 1
    assert thread_count(PM.OH_NN_PERFORMANCE_MEDIUM) == max(1, cores // 2)
    assert thread_count(PM.OH_NN_PERFORMANCE_HIGH) == cores
    assert thread_count(PM.OH_NN_PERFORMANCE_EXTREME) == cores
    monkeypatch.setenv(THREADS_ENV, "3")
    assert thread_count(PM.OH_NN_PERFORMANCE_HIGH) == 3
    assert thread_count(PM.OH_NN_PERFORMANCE_HIGH, {THREADS_EXTENSION: b"2"}) == 2  # the extension wins
    monkeypatch.setenv(THREADS_ENV, "many")
    from nnrt_onnx import NNRtError

    with pytest.raises(NNRtError):
        thread_count()
    with pytest.raises(NNRtError):
        thread_count(extensions={THREADS_EXTENSION: b"-1"})


def test_compilation_options_reach_the_plan(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    model, _, _ = pointwise_chain(depth=2)
    assert executor(model).prepared.threads == 1
    assert executor(model, **{THREADS_EXTENSION: b"2"}).prepared.threads == 2
    compilation = Compilation(model)
    compilation.set_performance_mode(PM.OH_NN_PERFORMANCE_EXTREME)
    compilation.build()
    assert compilation.prepared.threads == available_cores()


def test_blas_threads_sets_and_restores_the_count():
    threadpoolctl = pytest.importorskip("threadpoolctl")  # a dependency; the policy is a no-op without it
    controller = threadpoolctl.ThreadpoolController().select(user_api="blas")
    if not controller.lib_controllers:
        pytest.skip("numpy's BLAS is not one threadpoolctl controls")
    before = [c.num_threads for c in controller.lib_controllers]
    target = 1 if before[0] != 1 else 2
    with blas_threads(target):
        assert [c.num_threads for c in controller.lib_controllers] == [target] * len(before)
        with blas_threads(target + 1):  # concurrent runs: the largest count wins while both run
            assert controller.lib_controllers[0].num_threads == target + 1
        assert controller.lib_controllers[0].num_threads == target
    assert [c.num_threads for c in controller.lib_controllers] == before
    with blas_threads(0):  # 0: leave BLAS alone
        assert [c.num_threads for c in controller.lib_controllers] == before


# ---------------------------------------------------------------------------------------------------------------
# the fast paths' switch (runtime/specialise.py): off, the package is never imported


def test_with_the_fast_paths_off_nothing_of_them_is_imported():
    # a fresh process: NNRT_ONNX_NUMBA=0 compiles and runs a model (convolutions, pooling, a residual ADD) on the
    # reference plan without importing nnrt_onnx.accel, numba or llvmlite
    import os
    import subprocess
    import sys

    script = (
        "import sys, numpy as np\n"
        "from test_execution_plan import pointwise_chain, executor, oracle\n"
        "model, weights, _ = pointwise_chain(depth=4)\n"
        "ex = executor(model)\n"
        "x = np.random.default_rng(1).standard_normal((1, 5, 5, 8)).astype(np.float32)\n"
        "(y,) = ex.run_arrays([x])\n"
        "np.testing.assert_allclose(y, oracle(x, weights)[0], rtol=1e-5, atol=1e-5)\n"
        "assert not ex.prepared.fast_paths and len(ex.prepared.steps) == len(model.operations)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite') or "
        "m.startswith('nnrt_onnx.accel')))\n")
    tests = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, NNRT_ONNX_NUMBA="0", PYTHONPATH=os.pathsep.join([tests] + sys.path))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_reference_plan_extension_gives_one_compilation_the_reference_plan():
    from nnrt_onnx import NNRtError
    from nnrt_onnx.runtime.specialise import REFERENCE_PLAN_EXTENSION, fast_paths_on

    model, weights, _ = pointwise_chain(depth=4)
    reference = executor(model, **{REFERENCE_PLAN_EXTENSION: b"1"})
    assert not reference.prepared.fast_paths and len(reference.prepared.steps) == len(model.operations)
    assert all(s.fn is s.group[0].fn for s in reference.prepared.steps)  # every step its reference kernel
    x = np.random.default_rng(2).standard_normal((1, 5, 5, C)).astype(np.float32)
    np.testing.assert_allclose(reference.run_arrays([x])[0], oracle(x, weights)[0], rtol=1e-5, atol=1e-5)
    assert fast_paths_on({REFERENCE_PLAN_EXTENSION: b"0"}) == fast_paths_on({})
    with pytest.raises(NNRtError, match="reference_plan"):
        fast_paths_on({REFERENCE_PLAN_EXTENSION: b"yes"})


# ---------------------------------------------------------------------------------------------------------------
# per-run cost (issue 27): input checks once per signature, BLAS threads held, outputs handed out safely


def _dynamic_add():
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [-1, 3]))
    same = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [-1, 3]))
    y = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [-1, 3]))
    m.add_operation(OP.OH_NN_OPS_RESHAPE, [], [x, m.add_constant(np.array([-1, 3], np.int64))], [same])
    m.add_operation(OP.OH_NN_OPS_ADD, [], [x, x], [y])
    m.specify_inputs_and_outputs([x], [same, y])  # (the input's own data as an output: it must come back a copy)
    m.finish()
    return m


@pytest.mark.parametrize("entry", ["executor", "prepared"])
def test_inputs_are_checked_for_every_new_dtype_and_shape_after_one_passed(entry):
    ex = executor(_dynamic_add())
    run = ex.run_arrays if entry == "executor" else ex.prepared.run
    good = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(2):  # the second run takes the remembered signature
        x_out, y = run([good])
        np.testing.assert_array_equal(y, good + good)
        assert x_out is not good and not np.shares_memory(x_out, good)  # never the caller's array itself
    for bad in (good.astype(np.float64), good.reshape(3, 2), good.reshape(1, 2, 3), good.astype(np.int32)):
        for _ in range(2):
            with pytest.raises(NNRtError) as raised:
                run([bad])
            assert raised.value.code == OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER
    np.testing.assert_array_equal(run([good[:1]])[1], good[:1] * 2)  # another batch: checked, then run


def test_runs_hold_the_blas_thread_count_until_it_is_released():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from nnrt_onnx.runtime.threads import _blas_controllers, release_blas_threads

    lib = threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers
    if not lib or not _blas_controllers():
        pytest.skip("numpy's BLAS is not one threadpoolctl controls")
    before = lib[0].num_threads
    target = 2 if before == 1 else 1
    model, _, _ = pointwise_chain(depth=2)
    ex = executor(model, **{THREADS_EXTENSION: str(target).encode()})
    calls = []
    real = type(_blas_controllers()[0]).set_num_threads
    try:
        type(_blas_controllers()[0]).set_num_threads = lambda self, n: (calls.append(n), real(self, n))[1]
        for _ in range(3):
            ex.run_arrays([np.ones((1, 5, 5, C), np.float32)])
            assert lib[0].num_threads == target  # left as the runs set it
        assert calls == [target] * len(_blas_controllers())  # set once, not per run (and never restored per run)
        release_blas_threads()
        assert lib[0].num_threads == before  # the caller's count back
        other = executor(model, **{THREADS_EXTENSION: str(before).encode()})
        ex.run_arrays([np.ones((1, 5, 5, C), np.float32)])
        other.run_arrays([np.ones((1, 5, 5, C), np.float32)])  # another count: set again, the caller's kept
        assert lib[0].num_threads == before
        ex.run_arrays([np.ones((1, 5, 5, C), np.float32)])
        other.run_arrays([np.ones((1, 5, 5, C), np.float32)])
        release_blas_threads()
        assert lib[0].num_threads == before
    finally:
        type(_blas_controllers()[0]).set_num_threads = real
        release_blas_threads()


def test_an_output_that_views_the_callers_input_comes_back_as_a_copy():
    m = Model()
    x = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [2, 3]))
    view = m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, [3, 2]))
    m.add_operation(OP.OH_NN_OPS_RESHAPE, [], [x, m.add_constant(np.array([3, 2], np.int64))], [view])
    m.specify_inputs_and_outputs([x], [view])
    m.finish()
    ex = executor(m)
    assert ex.prepared.steps[0].view_shape == (3, 2)  # (a view step: its output is the input's data)
    good = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(2):
        (out,) = ex.run_arrays([good])
        np.testing.assert_array_equal(out, good.reshape(3, 2))
        assert not np.shares_memory(out, good)
