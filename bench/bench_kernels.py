#!/usr/bin/env python3
"""Time the native numpy kernels of nnrt_onnx against onnxruntime, one op at a time, at realistic sizes.

Each case builds its one-operation NNRt model ONCE (Model -> Compilation -> Executor, weights as constants) and
its single-node ONNX model ONCE; only ``Executor.run_arrays`` and ``InferenceSession.run`` are timed, so compile
cost is excluded. Conv/pool run NHWC natively and NCHW in onnxruntime: the input is transposed to NCHW *before*
timing and the output back *after* it, so the onnxruntime time is the op alone, with no transposes.

Before a case is timed, both outputs are compared (np.allclose); a mismatch is reported and the case is not
timed, so the benchmark never times a wrong answer. Timings: warm-up, then ``--repeat`` runs (fewer when an op
is slow, see ``--budget``), native and onnxruntime interleaved (one side after the other with --threads > 1);
the median per run is reported.

Threads: by default numpy's BLAS and onnxruntime both run single-threaded (OPENBLAS/OMP/MKL_NUM_THREADS=1 are set
before numpy is imported; onnxruntime gets intra_op_num_threads=1, inter_op_num_threads=1). ``--threads N`` sets N
for both.

    python bench/bench_kernels.py [--repeat 20] [--threads N] [--only CONV2D,LSTM] [--json FILE]
"""
from __future__ import annotations

import argparse
import os
import sys

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def _parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=20, help="timed runs per side (default 20; slow ops get fewer)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs per side after the correctness check")
    p.add_argument("--budget", type=float, default=4.0,
                   help="max seconds of timed runs per side and case; caps --repeat for slow ops (min 3 runs)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for numpy's BLAS and onnxruntime (default 1 for both)")
    p.add_argument("--only", default="", help="comma-separated case names or op names to run (default all)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    return p.parse_args(argv)


ARGS = _parse_args() if __name__ == "__main__" else _parse_args([])
THREADS = ARGS.threads if ARGS.threads is not None else 1
# Must happen before numpy (and its BLAS) is loaded.
for _var in _THREAD_VARS:
    os.environ[_var] = str(THREADS)

import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from nnrt_onnx.compilation import Compilation  # noqa: E402
from nnrt_onnx.enums import OH_NN_OperationType  # noqa: E402
from nnrt_onnx.executor import Executor  # noqa: E402
from nnrt_onnx.testing.single_op import single_op_model  # noqa: E402

F32 = np.float32
OPSET = 17
NHWC_TO_NCHW = (0, 3, 1, 2)
NCHW_TO_NHWC = (0, 2, 3, 1)


# ----------------------------------------------------------------------------------------------------------------
# case description
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class Case:
    name: str  # row label
    op: str  # NNRt op name without the OH_NN_OPS_ prefix
    shape: str  # human-readable size
    runtime: list  # native runtime inputs (constant inputs are baked into the model)
    constants: dict  # position -> array, native constant inputs
    params: dict  # OH_NN_TensorType name -> value
    outputs: list  # native output (dtype, shape)
    onnx_nodes: list
    onnx_inits: list
    onnx_inputs: dict  # name -> array fed to onnxruntime (already NCHW for conv/pool)
    onnx_outputs: list  # output names
    to_native: Callable = None  # onnxruntime outputs -> arrays comparable to the native outputs (untimed)
    rtol: float = 1e-4
    atol: float = 1e-4
    note: str = ""
    extra: dict = field(default_factory=dict)


def _rng():
    return np.random.default_rng(20240601)


def _r(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(F32)


def _vi(name, array):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(array.shape))


def _init(name, array):
    return numpy_helper.from_array(np.ascontiguousarray(array), name)


def _nhwc_back(outs):
    return [np.transpose(outs[0], NCHW_TO_NHWC)]


def case_conv2d(rng):
    n, h, w, c, o, k = 1, 56, 56, 64, 64, 3
    x = _r(rng, n, h, w, c)
    wt = _r(rng, o, k, k, c, scale=1 / np.sqrt(k * k * c))
    b = _r(rng, o, scale=0.1)
    node = helper.make_node("Conv", ["X", "W", "B"], ["Y"], kernel_shape=[k, k], pads=[1, 1, 1, 1], strides=[1, 1])
    return Case("CONV2D", "CONV2D", "1x56x56x64, 3x3, 64 out, SAME", [x], {1: wt, 2: b},
                {"OH_NN_CONV2D_STRIDES": [1, 1], "OH_NN_CONV2D_PAD_MODE": 0, "OH_NN_CONV2D_DILATION": [1, 1],
                 "OH_NN_CONV2D_GROUP": 1},
                [(F32, (n, h, w, o))], [node], [_init("W", wt.transpose(0, 3, 1, 2)), _init("B", b)],
                {"X": np.ascontiguousarray(x.transpose(NHWC_TO_NCHW))}, ["Y"], _nhwc_back)


def case_depthwise(rng):
    n, h, w, c, k = 1, 112, 112, 32, 3
    x = _r(rng, n, h, w, c)
    wt = _r(rng, c, k, k, 1, scale=1 / k)
    b = _r(rng, c, scale=0.1)
    node = helper.make_node("Conv", ["X", "W", "B"], ["Y"], kernel_shape=[k, k], pads=[1, 1, 1, 1], group=c)
    return Case("DEPTHWISE_CONV2D_NATIVE", "DEPTHWISE_CONV2D_NATIVE", "1x112x112x32, 3x3, SAME", [x], {1: wt, 2: b},
                {"OH_NN_DEPTHWISE_CONV2D_NATIVE_STRIDES": [1, 1], "OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD_MODE": 0,
                 "OH_NN_DEPTHWISE_CONV2D_NATIVE_DILATION": [1, 1]},
                [(F32, (n, h, w, c))], [node], [_init("W", wt.transpose(0, 3, 1, 2)), _init("B", b)],
                {"X": np.ascontiguousarray(x.transpose(NHWC_TO_NCHW))}, ["Y"], _nhwc_back)


def case_matmul(rng):
    a = _r(rng, 128, 768)
    bm = _r(rng, 768, 768, scale=1 / np.sqrt(768))
    node = helper.make_node("MatMul", ["A", "B"], ["Y"])
    return Case("MATMUL", "MATMUL", "128x768 @ 768x768 (both runtime inputs)", [a, bm], {}, {},
                [(F32, (128, 768))], [node], [], {"A": a, "B": bm}, ["Y"], extra={"onnx_runtime_inputs": ["A", "B"]})


def case_full_connection(rng):
    x = _r(rng, 128, 768)
    wt = _r(rng, 768, 768, scale=1 / np.sqrt(768))
    b = _r(rng, 768, scale=0.1)
    node = helper.make_node("Gemm", ["X", "W", "B"], ["Y"], transB=1)
    return Case("FULL_CONNECTION", "FULL_CONNECTION", "batch 128, 768 -> 768, bias (weights constant)", [x],
                {1: wt, 2: b}, {"OH_NN_FULL_CONNECTION_HAS_BIAS": True},
                [(F32, (128, 768))], [node], [_init("W", wt), _init("B", b)], {"X": x}, ["Y"])


def _pool_case(rng, kind):
    n, h, w, c = 1, 112, 112, 64
    x = _r(rng, n, h, w, c)
    op = "AVG_POOL" if kind == "avg" else "MAX_POOL"
    attrs = dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
    if kind == "avg":
        node = helper.make_node("AveragePool", ["X"], ["Y"], count_include_pad=0, **attrs)
    else:
        node = helper.make_node("MaxPool", ["X"], ["Y"], **attrs)
    return Case(op, op, "1x112x112x64, 3x3 stride 2, SAME", [x], {},
                {f"OH_NN_{op}_KERNEL_SIZE": [3, 3], f"OH_NN_{op}_STRIDE": [2, 2], f"OH_NN_{op}_PAD_MODE": 0},
                [(F32, (n, 56, 56, c))], [node], [], {"X": np.ascontiguousarray(x.transpose(NHWC_TO_NCHW))}, ["Y"],
                _nhwc_back)


def _softmax_case(rng, shape):
    x = _r(rng, *shape, scale=2.0)
    node = helper.make_node("Softmax", ["X"], ["Y"], axis=-1)
    label = "x".join(map(str, shape))
    return Case(f"SOFTMAX {label}", "SOFTMAX", f"{label}, last axis", [x], {}, {"OH_NN_SOFTMAX_AXIS": -1},
                [(F32, tuple(shape))], [node], [], {"X": x}, ["Y"], rtol=1e-4, atol=1e-6)


def case_layer_norm(rng):
    x = _r(rng, 128, 768, scale=3.0) + 1.0
    g = _r(rng, 768) + 1.0
    b = _r(rng, 768, scale=0.1)
    eps = 1e-5
    node = helper.make_node("LayerNormalization", ["X", "G", "B"], ["Y"], axis=-1, epsilon=eps)
    return Case("LAYER_NORM", "LAYER_NORM", "128x768 over the last axis", [x], {1: g, 2: b},
                {"OH_NN_LAYER_NORM_BEGIN_NORM_AXIS": np.array(1, np.int64),
                 "OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS": np.array(1, np.int64),
                 "OH_NN_LAYER_NORM_EPSILON": np.array(eps, F32)},
                [(F32, (128, 768))], [node], [_init("G", g), _init("B", b)], {"X": x}, ["Y"])


def case_lstm(rng):
    t, bsz, i, hdim = 50, 16, 128, 256
    x = _r(rng, t, bsz, i)
    s = 1 / np.sqrt(hdim)
    w_ih, w_hh = _r(rng, 1, 4 * hdim, i, scale=s), _r(rng, 1, 4 * hdim, hdim, scale=s)
    bias = _r(rng, 1, 8 * hdim, scale=s)
    h0, c0 = _r(rng, 1, bsz, hdim, scale=0.5), _r(rng, 1, bsz, hdim, scale=0.5)
    # The kernel's gate order (i, o, f, g) and bias layout [input bias | hidden bias] are ONNX's (iofc, [Wb | Rb]).
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "", "H0", "C0"], ["Y", "YH", "YC"], hidden_size=hdim,
                            direction="forward")
    return Case("LSTM", "LSTM", "seq 50, batch 16, in 128, hidden 256, 1 layer, fwd", [x],
                {1: w_ih, 2: w_hh, 3: bias, 4: h0, 5: c0},
                {"OH_NN_LSTM_BIDIRECTIONAL": False, "OH_NN_LSTM_HAS_BIAS": True, "OH_NN_LSTM_INPUT_SIZE": i,
                 "OH_NN_LSTM_HIDDEN_SIZE": hdim, "OH_NN_LSTM_NUM_LAYERS": 1, "OH_NN_LSTM_NUM_DIRECTIONS": 1},
                [(F32, (t, bsz, hdim)), (F32, (1, bsz, hdim)), (F32, (1, bsz, hdim))], [node],
                [_init("W", w_ih), _init("R", w_hh), _init("B", bias), _init("H0", h0), _init("C0", c0)],
                {"X": x}, ["Y", "YH", "YC"],
                lambda outs: [outs[0].reshape(t, bsz, hdim), outs[1], outs[2]])  # Y [T, 1, B, H]: free reshape


def all_cases():
    rng = _rng()
    return [case_conv2d(rng), case_depthwise(rng), case_matmul(rng), case_full_connection(rng),
            _pool_case(rng, "avg"), _pool_case(rng, "max"), _softmax_case(rng, (128, 1000)),
            _softmax_case(rng, (8, 12, 128, 128)), case_layer_norm(rng), case_lstm(rng)]


# ----------------------------------------------------------------------------------------------------------------
# building the two runners
# ----------------------------------------------------------------------------------------------------------------
def native_runner(case: Case):
    """Compile the one-op NNRt model once; return a zero-argument callable running Executor.run_arrays."""
    op = OH_NN_OperationType[f"OH_NN_OPS_{case.op}"]
    count = len(case.runtime) + len(case.constants)
    inputs, runtime = [], iter(case.runtime)
    for position in range(count):
        inputs.append(case.constants[position] if position in case.constants else next(runtime))
    model = single_op_model(op, inputs, case.params, case.outputs, {}, {}, constant_inputs=tuple(case.constants))
    compilation = Compilation(model)
    compilation.build()
    executor = Executor(compilation)
    arrays = list(case.runtime)
    return lambda: executor.run_arrays(arrays)


def ort_runner(case: Case, threads: int):
    graph_inputs = [_vi(name, array) for name, array in case.onnx_inputs.items()]
    graph_outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in case.onnx_outputs]
    graph = helper.make_graph(case.onnx_nodes, case.name.replace(" ", "_"), graph_inputs, graph_outputs,
                              case.onnx_inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if threads > 1:  # idle pool threads must not spin and steal the cores numpy's BLAS needs next
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feed = dict(case.onnx_inputs)
    return lambda: session.run(None, feed)


def check(case: Case, native_outs, ort_outs):
    """(ok, worst normalised error) of native vs onnxruntime over every output."""
    expected = case.to_native(ort_outs) if case.to_native else ort_outs
    ok, worst = True, 0.0
    if len(native_outs) != len(expected):
        return False, float("inf")
    for got, want in zip(native_outs, expected):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            return False, float("inf")
        if not np.allclose(got, want, rtol=case.rtol, atol=case.atol):
            ok = False
        err = np.abs(got.astype(np.float64) - want) / (case.atol + case.rtol * np.abs(want))
        worst = max(worst, float(err.max()) if err.size else 0.0)
    return ok, worst


def time_pair(native, ort_run, repeat: int, warmup: int, budget: float, interleave: bool):
    for _ in range(warmup):
        native()
        ort_run()
    # estimate, to cap the number of runs of slow ops
    t0 = time.perf_counter()
    native()
    t1 = time.perf_counter()
    ort_run()
    t2 = time.perf_counter()
    per_run = max(t1 - t0, t2 - t1, 1e-9)
    n = max(3, min(repeat, int(budget / per_run)))
    tn, to = [], []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        if interleave:  # so that drift (frequency, other load) hits both sides alike
            for _ in range(n):
                s = time.perf_counter()
                native()
                m = time.perf_counter()
                ort_run()
                e = time.perf_counter()
                tn.append(m - s)
                to.append(e - m)
        else:  # one side at a time: with several threads, the other side's spinning pool would steal the cores
            for fn, times in ((native, tn), (ort_run, to)):
                fn()
                for _ in range(n):
                    s = time.perf_counter()
                    fn()
                    times.append(time.perf_counter() - s)
    finally:
        if gc_was:
            gc.enable()
    return n, tn, to


# ----------------------------------------------------------------------------------------------------------------
# machine notes
# ----------------------------------------------------------------------------------------------------------------
def machine_notes() -> dict:
    notes = {"python": platform.python_version(), "platform": platform.platform(), "nproc": os.cpu_count(),
             "numpy": np.__version__, "onnxruntime": ort.__version__, "onnx": onnx.__version__}
    try:
        notes["nproc"] = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    notes["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        notes["blas"] = f"{blas.get('name')} {blas.get('version')}"
        if blas.get("openblas configuration"):
            notes["blas_config"] = blas["openblas configuration"]
    except Exception:  # numpy < 2 or an unusual build: not worth failing the benchmark over
        notes["blas"] = "unknown (numpy.show_config(mode='dicts') unavailable)"
    try:
        import threadpoolctl

        notes["blas_threads"] = [f"{p['internal_api']}: {p['num_threads']}"
                                 for p in threadpoolctl.threadpool_info()]
    except ImportError:
        notes["blas_threads"] = "threadpoolctl not installed; env: " + ", ".join(
            f"{v}={os.environ.get(v, '(unset)')}" for v in _THREAD_VARS[:3])
    notes["ort_threads"] = f"intra_op_num_threads={THREADS}, inter_op_num_threads=1, CPUExecutionProvider"
    return notes


def _selected(case: Case, only: str) -> bool:
    if not only:
        return True
    wanted = {w.strip().upper() for w in only.split(",") if w.strip()}
    return case.op.upper() in wanted or case.name.upper() in wanted


def main() -> int:
    notes = machine_notes()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in notes.items()))
    print("conv/pool: native NHWC, onnxruntime NCHW; transposes done outside the timed region (op time only).")
    print(f"median of N timed runs after {ARGS.warmup} warm-up runs; N = --repeat {ARGS.repeat}, "
          f"capped at {ARGS.budget:.0f} s per side (min 3)\n")
    header = f"{'case':<26} {'size':<50} {'N':>3} {'native ms':>10} {'ort ms':>9} {'native/ort':>10}  check"
    print(header)
    print("-" * len(header))
    rows, failures = [], 0
    started = time.perf_counter()
    for case in all_cases():
        if not _selected(case, ARGS.only):
            continue
        row = {"case": case.name, "op": case.op, "size": case.shape}
        try:
            native = native_runner(case)
            ort_run = ort_runner(case, THREADS)
            ok, worst = check(case, native(), ort_run())
        except Exception as exc:  # a build/run failure is a result too: report it and go on
            row.update(status="error", error=f"{type(exc).__name__}: {exc}")
            rows.append(row)
            failures += 1
            print(f"{case.name:<26} {case.shape:<50} ERROR {row['error']}")
            continue
        row["max_err_over_tol"] = worst
        if not ok:
            row["status"] = "mismatch"
            rows.append(row)
            failures += 1
            print(f"{case.name:<26} {case.shape:<50} MISMATCH (max |err|/tol = {worst:.3g}) -- not timed")
            continue
        n, tn, to = time_pair(native, ort_run, ARGS.repeat, ARGS.warmup, ARGS.budget, THREADS == 1)
        mn, mo = statistics.median(tn) * 1e3, statistics.median(to) * 1e3
        row.update(status="ok", runs=n, native_ms=mn, ort_ms=mo, ratio=mn / mo,
                   native_ms_min=min(tn) * 1e3, ort_ms_min=min(to) * 1e3)
        rows.append(row)
        print(f"{case.name:<26} {case.shape:<50} {n:>3} {mn:>10.3f} {mo:>9.3f} {mn / mo:>10.2f}  "
              f"ok (err/tol {worst:.2f})", flush=True)
    total = time.perf_counter() - started
    print(f"\ntotal {total:.1f} s")
    if ARGS.json:
        with open(ARGS.json, "w") as fh:
            json.dump({"machine": notes, "threads": THREADS, "repeat": ARGS.repeat, "warmup": ARGS.warmup,
                       "budget_s": ARGS.budget, "total_s": total, "results": rows}, fh, indent=2)
        print(f"wrote {ARGS.json}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
