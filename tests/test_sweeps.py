"""Sweeps that scale (docs/sweeps.md): models in isolated worker processes (a hang, a memory hog and a crash are
each their own row), results appended as JSON lines and resumed, the same rows from a Ray cluster.

The faults are injected by tests/sweep_faults.py, handed to the engines as the workers' initializer."""
from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sweep_faults import installer

from nnrt_onnx.errors import UserError
from nnrt_onnx.workflows.sweep import CheckOptions, check_one
from nnrt_onnx.workflows.sweep_pool import Limits, limited_row
from nnrt_onnx.workflows.sweep_results import ResultsFile, models_to_skip, read_rows
from nnrt_onnx.workflows.sweep_run import run_sweep

REPO = Path(__file__).resolve().parent.parent
TINY_MLP = REPO / "models" / "tiny_mlp.onnx"
SMALL_CNN = REPO / "models" / "small_cnn.onnx"
VARYING = ("seconds", "peak_rss", "peak_rss_this_model")  # time and memory differ between runs; nothing else may


def zoo(directory: Path, *names: str, model: Path = TINY_MLP) -> list[str]:
    """Copies of tiny_mlp.onnx (or ``model``) under these names (a name's prefix picks its fault, see
    sweep_faults.py)."""
    directory.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(model, directory / f"{name}.onnx")
    return [str(directory / f"{name}.onnx") for name in names]


def descendants(root: int) -> set[int]:
    """The processes under ``root`` (children, theirs, ...), from /proc."""
    children = collections.defaultdict(set)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    children[int(stat.read().rsplit(")", 1)[1].split()[1])].add(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    found, todo = set(), [root]
    while todo:
        for child in children[todo.pop()] - found:
            found.add(child)
            todo.append(child)
    return found


def comparable(row: dict) -> dict:
    """The row as JSON (what the engines return), without the fields that vary from run to run."""
    row = {k: v for k, v in json.loads(json.dumps(row)).items() if k not in VARYING}
    if row.get("report"):
        row["report"] = {k: v for k, v in row["report"].items() if k not in ("seconds", "phases")}  # times
    return row


def test_a_hang_a_memory_hog_and_a_crash_are_each_their_row_while_the_others_finish(tmp_path):
    models = zoo(tmp_path, "hang_a", "hog_b", "crash_c", "exit_d", "ok_e", "ok_f")
    # (a 30 s limit: a clean model's first check in a fresh worker loads the kernels, well over 15 s on a busy host)
    finished = []
    rows, resumed = run_sweep(models, CheckOptions(), jobs=2, limits=Limits(timeout=30, max_memory=1 << 30),
                              initializer=installer(), on_row=lambda row, done, total: finished.append(done))
    verdicts = {Path(row["model"]).stem: row["verdict"] for row in rows}
    assert verdicts == {"hang_a": "timeout", "hog_b": "out of memory", "crash_c": "crashed", "exit_d": "crashed",
                        "ok_e": "OK", "ok_f": "OK"}
    assert [row["model"] for row in rows] == models and resumed == 0 and finished == [1, 2, 3, 4, 5, 6]
    by_name = {Path(row["model"]).stem: row for row in rows}
    assert "killed by SIGKILL" in by_name["crash_c"]["error"] and "status 3" in by_name["exit_d"]["error"]
    assert "after 30 s" in by_name["hang_a"]["error"] and 30 <= by_name["hang_a"]["seconds"] < 90
    assert by_name["hog_b"]["peak_rss"] > 1 << 30 and "1024 MiB" in by_name["hog_b"]["error"]
    for name in ("ok_e", "ok_f"):  # checked in this process: the oracle of a clean run
        assert comparable(by_name[name]) == comparable(check_one(by_name[name]["model"], CheckOptions()))
        assert 0 < by_name[name]["peak_rss"] < 1 << 30
    for row in rows:  # a killed model's row has the fields of any other
        assert set(row) == set(limited_row("m", "crashed", "", None, None))
    assert set(limited_row("m", "crashed", "", None, None)) >= set(check_one(str(tmp_path / "none.onnx"),
                                                                             CheckOptions()))


def test_the_workers_split_the_cores_between_their_blas_libraries(tmp_path, monkeypatch):
    import nnrt_onnx.workflows.sweep_pool as sweep_pool

    monkeypatch.setattr(sweep_pool, "available_cores", lambda: 7)  # 7 cores, 2 workers: 3 BLAS threads each
    # four models on two workers: one worker has a second model, which must start from the split too (the native
    # device holds its own count after a run)
    rows, _ = run_sweep(zoo(tmp_path, "threads_a", "threads_b", "threads_c", "threads_d"), CheckOptions(), jobs=2,
                        initializer=installer())
    for row in rows:
        assert row["environment"] == {"OPENBLAS_NUM_THREADS": "3", "OMP_NUM_THREADS": "3"}
        assert row["blas"] and set(row["blas"]) == {3}


def test_an_interrupted_sweep_resumes_without_redoing_finished_models(tmp_path):
    models = zoo(tmp_path / "zoo", "m0", "m1", "hang_m2", "m3", "m4")  # killed during the hang
    results, first_log, second_log = tmp_path / "rows.jsonl", tmp_path / "first.log", tmp_path / "second.log"
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests")}
    parent = subprocess.Popen([sys.executable, str(REPO / "tests" / "sweep_faults.py"), str(results),
                               str(first_log), "1.0", *models], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while len(read_rows(str(results))) < 2 or len(_lines(first_log)) < 3:  # kill it in the hang, two rows done
        assert parent.poll() is None, parent.stderr.read().decode()
        assert time.monotonic() < deadline, "the sweep wrote no two rows in 240 s"
        time.sleep(0.05)
    started = descendants(parent.pid)  # the fork server and the worker
    parent.send_signal(signal.SIGKILL)
    parent.wait(30)
    parent.stderr.close()
    workers = {int(line.split("\t")[1]) for line in _lines(first_log)}
    assert workers <= started and len(started) >= 2
    for pid in started:  # the hanging worker dies with the fork server, it with its parent (PR_SET_PDEATHSIG)
        _wait_gone(pid)
    done = [row["model"] for row in read_rows(str(results))]
    assert done == models[:2]
    with open(results, "ab") as stream:  # as if the kill had come in the middle of a row
        stream.write(b'{"model": "' + models[-1].encode()[:10])
    rows, resumed = run_sweep(models, CheckOptions(), jobs=2, results=str(results), resume=True,
                              limits=Limits(timeout=10), initializer=installer(str(second_log)))
    checked_again = [line.split("\t")[0] for line in _lines(second_log)]
    assert sorted(checked_again) == sorted(models[2:]) and resumed == 2
    assert [row["model"] for row in rows] == models
    assert [row["verdict"] for row in rows] == ["OK", "OK", "timeout", "OK", "OK"]
    lines = results.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])  # the torn row was cut off
    assert collections.Counter(row["model"] for row in read_rows(str(results))) == {m: 1 for m in models}


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(")")[-1].split()[0] == "Z":  # a zombie: dead, waiting for its reaper
                    return
        except OSError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    pytest.fail(f"process {pid} outlived its killed sweep")


def test_ctrl_c_ends_the_sweep_and_every_process_it_started(tmp_path):
    """Ctrl-C as a terminal sends it (SIGINT to the whole process group) in the middle of `check -j 2`: the command
    says it was interrupted (exit 130, no traceback), and the fork server and the workers are gone with it."""
    models = zoo(tmp_path, *(f"m{i:02d}" for i in range(40)), model=SMALL_CNN)
    sweep = subprocess.Popen([sys.executable, str(REPO / "cli.py"), "check", *models, "-j", "2"],
                             start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # (as at a terminal)
    started: set[int] = set()
    deadline = time.monotonic() + 240
    while len(started) < 3:  # the fork server and both workers
        assert sweep.poll() is None, f"the sweep ended before it was interrupted: {sweep.communicate()}"
        assert time.monotonic() < deadline, "no fork server and two workers in 240 s"
        started |= descendants(sweep.pid)
        time.sleep(0.02)
    os.killpg(sweep.pid, signal.SIGINT)
    out, err = sweep.communicate(timeout=120)
    assert sweep.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    for pid in started:
        _wait_gone(pid)


def test_workers_are_forked_from_a_server_that_loaded_what_a_check_loads(tmp_path):
    """The workers come from the fork server (not spawned by this process), and a worker's first check imports no
    module of nnrt_onnx and loads no compiled kernel: the server had them (sweep_forkserver.preload), frozen out of
    the garbage collector's reach."""
    check_one(str(SMALL_CNN), CheckOptions())  # its kernels are in the disk cache now (compiled here if not)
    models = zoo(tmp_path, "probe_a", "probe_b", model=SMALL_CNN)
    rows, _ = run_sweep(models, CheckOptions(), jobs=2, initializer=installer())
    for row in rows:
        assert row["verdict"] == "OK" and row["parent"] != os.getpid()
        assert row["new_modules"] == [] and row["kernel_loads"] == 0
        assert row["frozen"] > 10_000  # the server's objects, out of the workers' collections (gc.freeze)


def test_the_sweeps_own_process_parses_no_model(tmp_path):
    """With a fork server, the models' costs are estimated there (onnx's shape inference): the sweep's process does
    not even import onnx, so no model can crash or hang it before its own check does, in a worker."""
    models = zoo(tmp_path, "a", "b", "c", model=SMALL_CNN)
    code = ("import json, sys\n"
            "from nnrt_onnx.workflows.sweep import CheckOptions\n"
            "from nnrt_onnx.workflows.sweep_run import run_sweep\n"
            f"rows, _ = run_sweep({models!r}, CheckOptions(), jobs=2)\n"
            "print(json.dumps({'onnx': 'onnx' in sys.modules, 'verdicts': [row['verdict'] for row in rows]}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"onnx": False, "verdicts": ["OK", "OK", "OK"]}


def test_estimates_made_elsewhere_order_the_models(tmp_path):
    """most_expensive_first with the fork server's estimates: estimated models by their estimate, the others after
    them by file size (what a failed estimate leaves)."""
    from nnrt_onnx.workflows.sweep_order import most_expensive_first

    paths = []
    for name, size in (("small", 10), ("large", 1000), ("mid", 500)):
        (tmp_path / name).write_bytes(b"x" * size)
        paths.append(str(tmp_path / name))
    tasks = list(enumerate(paths))
    assert [key for key, _ in most_expensive_first(tasks, [None, None, None])] == [1, 2, 0]
    assert [key for key, _ in most_expensive_first(tasks, [7, None, 9])] == [2, 0, 1]


def test_a_fork_that_fails_mid_sweep_leaves_the_forked_workers_running(tmp_path, monkeypatch):
    """The server forks the first worker, then fails to fork the second (simulated): the second is spawned, and the
    first -- busy on its model -- finishes it (the server is not stopped under it) and the rest of its share."""
    import nnrt_onnx.workflows.sweep_forkserver as sweep_forkserver

    real, calls = sweep_forkserver.ForkServer.fork, []

    def first_only(self, conn, timeout):
        calls.append(conn)
        if len(calls) > 1:
            self.unusable = "simulated"
            return None
        return real(self, conn, timeout)

    monkeypatch.setattr(sweep_forkserver.ForkServer, "fork", first_only)
    models = zoo(tmp_path, *(f"probe_{i}" for i in range(4)))
    rows, _ = run_sweep(models, CheckOptions(), jobs=2, limits=Limits(timeout=60), initializer=installer(None, 1.0))
    assert [row["verdict"] for row in rows] == ["OK"] * 4 and len(calls) == 2
    assert {row["parent"] == os.getpid() for row in rows} == {True, False}  # one forked worker, one spawned


def test_a_pool_whose_fork_server_cannot_fork_spawns_its_workers(tmp_path, monkeypatch):
    """A fork server that cannot fork (more than one thread, a broken line: simulated) is stopped, and the pool
    spawns its workers: the same rows, a crash still its own row, and no process left."""
    import nnrt_onnx.workflows.sweep_forkserver as sweep_forkserver

    def unusable(self, conn, timeout):
        self.unusable = "simulated"
        return None

    monkeypatch.setattr(sweep_forkserver.ForkServer, "fork", unusable)
    models = zoo(tmp_path, "probe_a", "crash_b", "probe_c")
    rows, _ = run_sweep(models, CheckOptions(), jobs=2, limits=Limits(timeout=60), initializer=installer())
    assert [row["verdict"] for row in rows] == ["OK", "crashed", "OK"]
    assert {row.get("parent") for row in rows} == {os.getpid(), None}  # spawned by this process
    probed = ("parent", "new_modules", "kernel_loads", "frozen")
    assert comparable({k: v for k, v in rows[0].items() if k not in probed}) == \
        comparable(check_one(models[0], CheckOptions()))
    left = {pid: _command(pid) for pid in descendants(os.getpid())}
    assert [c for c in left.values() if "resource_tracker" not in c] == [], left  # (multiprocessing's: it stays)


def test_a_fork_server_killed_mid_sweep_costs_only_the_models_its_workers_had(tmp_path):
    """The fork server killed (the OOM killer's choice, say) while its two workers are busy: they die with it, their
    models are crashed rows saying so, and the pool spawns workers for the rest of the sweep."""
    import threading

    log = tmp_path / "started.log"

    def kill_the_server():  # once a third model has started (so one is done), while it sleeps its 0.7 s
        deadline = time.monotonic() + 240
        while len(_lines(log)) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        for pid in descendants(os.getpid()):
            if "spawn_main" in _command(pid) and descendants(pid):  # the server (its workers below it)
                os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_the_server, daemon=True)
    killer.start()
    models = zoo(tmp_path, *(f"probe_{i}" for i in range(6)))
    rows, _ = run_sweep(models, CheckOptions(), jobs=2, limits=Limits(timeout=60),
                        initializer=installer(str(log), 0.7))
    killer.join(1)
    crashed = [row for row in rows if row["verdict"] == "crashed"]
    assert 1 <= len(crashed) <= 2 and all("fork server is gone" in row["error"] for row in crashed), rows
    checked = [row for row in rows if row["verdict"] != "crashed"]
    assert all(row["verdict"] == "OK" for row in checked) and len(checked) == 6 - len(crashed)
    assert {row["parent"] == os.getpid() for row in checked} == {True, False}  # forked before, spawned after
    left = {pid: _command(pid) for pid in descendants(os.getpid())}
    assert [c for c in left.values() if "resource_tracker" not in c] == [], left


def test_a_results_file_tolerates_a_torn_last_line_and_reruns_failures_on_request(tmp_path):
    path = tmp_path / "rows.jsonl"
    ok, failed = {"model": "a.onnx", "ok": True}, {"model": "b.onnx", "ok": False, "verdict": "timeout"}
    path.write_text(json.dumps(ok) + "\n" + json.dumps(failed) + "\n" + '{"model": "c.on')
    assert read_rows(str(path)) == [ok, failed]
    assert models_to_skip(read_rows(str(path)), rerun_failures=False) == {"a.onnx", "b.onnx"}
    assert models_to_skip(read_rows(str(path)), rerun_failures=True) == {"a.onnx"}
    again = {"model": "b.onnx", "ok": True}
    with ResultsFile(str(path)) as results:
        results.append(again)
    assert path.read_text() == "".join(json.dumps(r) + "\n" for r in (ok, failed, again))
    assert models_to_skip(read_rows(str(path)), rerun_failures=True) == {"a.onnx", "b.onnx"}  # the last row wins
    path.write_text(json.dumps(ok) + "\nnot json\n" + json.dumps(failed) + "\n")
    with pytest.raises(UserError, match="line 2 is not a sweep row"):
        read_rows(str(path))
    assert read_rows(str(tmp_path / "absent.jsonl")) == []


def test_the_cli_sweeps_in_workers_and_resumes(invoke, tmp_path):
    models = zoo(tmp_path / "zoo", "a", "b", "c")
    results = tmp_path / "rows.jsonl"
    first = invoke("check", tmp_path / "zoo", "-j", 2, "--results", results, "--json")
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert [row["model"] for row in data["models"]] == models and all(r["verdict"] == "OK" for r in data["models"])
    assert [row["model"] for row in read_rows(str(results))] != [] and len(read_rows(str(results))) == 3
    refused = invoke("check", tmp_path / "zoo", "--results", results)
    assert refused.exit_code == 1 and "already has 3 row(s): add --resume" in refused.stderr
    again = invoke("check", tmp_path / "zoo", "--results", results, "--resume", "--json")
    assert again.exit_code == 0 and "3 of 3 model(s) from" in again.stderr
    assert json.loads(again.stdout)["models"] == data["models"] and len(read_rows(str(results))) == 3
    lost = invoke("check", tmp_path / "zoo", "--resume")
    assert lost.exit_code == 1 and "--results FILE" in lost.stderr
    one = invoke("check", models[0], "--timeout", 120, "--json")  # a sweep option makes one model a sweep of one
    assert one.exit_code == 0 and [row["verdict"] for row in json.loads(one.stdout)["models"]] == ["OK"]
    wrong = invoke("check", tmp_path / "zoo", "--address", "10.0.0.1:6379")
    assert wrong.exit_code == 1 and "--engine ray" in wrong.stderr


def test_the_summary_shows_a_killed_model_by_its_reason(invoke, tmp_path, monkeypatch):
    import nnrt_onnx.workflows.sweep_run as sweep_run

    def killed(models, options, **kwargs):
        return [limited_row(models[0], "crashed", "crashed: the worker was killed by SIGSEGV", None, None),
                limited_row(models[1], "timeout", "timeout: still running after 600 s (killed)", 600.2, None)], 0

    monkeypatch.setattr(sweep_run, "run_sweep", killed)
    result = invoke("check", *zoo(tmp_path, "a", "b"))
    assert result.exit_code == 1
    lines = [line.split() for line in result.stdout.splitlines()]
    # model, ops, worst output, seconds, peak memory, verdict
    assert any(line[0].endswith("a.onnx") and line[1:5] == ["-"] * 4 and line[5] == "crashed:" for line in lines)
    assert any(line[0].endswith("b.onnx") and line[3:5] == ["600.2", "-"] and line[5] == "timeout:" for line in lines)
    assert "timeout: timeout:" not in result.stdout  # the verdict said once
    assert "2 model(s): 0 OK, 0 FAIL, 2 error(s)" in result.stdout


def test_the_ray_engine_says_so_when_ray_is_missing(invoke, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    result = invoke("check", *zoo(tmp_path, "a", "b"), "--engine", "ray")
    assert result.exit_code == 1 and 'pip install "nnrt-onnx[ray]"' in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_the_ray_engine_gives_the_rows_of_the_local_engine(tmp_path, monkeypatch):
    pytest.importorskip("ray", reason='Ray is an optional extra: pip install "nnrt-onnx[ray]"')
    models = zoo(tmp_path, "ok_a", "crash_b", "hog_c", "ok_d") + [str(tmp_path / "missing.onnx")]
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    models.append(str(tmp_path / "bad.onnx"))
    # the local Ray's workers import the fault module from here (they inherit the environment of ray.init)
    monkeypatch.setenv("PYTHONPATH", str(REPO / "tests"))
    limits, options = Limits(timeout=60, max_memory=1 << 30), CheckOptions(seed=3)
    local, _ = run_sweep(models, options, jobs=2, limits=limits, initializer=installer())
    remote, _ = run_sweep(models, options, jobs=2, limits=limits, initializer=installer(), engine="ray")
    import ray

    assert not ray.is_initialized()  # the instance the sweep started is stopped
    assert [r["verdict"] for r in remote] == ["OK", "crashed", "out of memory", "OK", "ERROR", "ERROR"]
    assert json.dumps([comparable(r) for r in remote]) == json.dumps([comparable(r) for r in local])


def test_the_most_expensive_models_go_first(tmp_path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from nnrt_onnx.workflows.sweep_order import most_expensive_first, multiply_accumulates

    def save(name, node, inputs, weight, output):
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, inputs)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                  [numpy_helper.from_array(np.zeros(weight, np.float32), "w")])
        onnx.save(helper.make_model(graph), tmp_path / f"{name}.onnx")
        return str(tmp_path / f"{name}.onnx")

    # 1x3x8x8 * 4x3x3x3, SAME: 4*8*8 outputs of 3*3*3 products each; Gemm 2x5 by (3x5)^T: 2*3 outputs of 5
    conv = save("conv", helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]), [1, 3, 8, 8], (4, 3, 3, 3),
                None)
    gemm = save("gemm", helper.make_node("Gemm", ["x", "w"], ["y"], transB=1), [2, 5], (3, 5), None)
    (tmp_path / "bad.onnx").write_bytes(b"not a model" * 1000)
    assert multiply_accumulates(conv) == 4 * 8 * 8 * 27 and multiply_accumulates(gemm) == 2 * 3 * 5
    assert multiply_accumulates(str(tmp_path / "bad.onnx")) is None
    tasks = [(0, str(tmp_path / "bad.onnx")), (1, gemm), (2, str(tmp_path / "missing.onnx")), (3, conv)]
    assert [key for key, _ in most_expensive_first(tasks)] == [3, 1, 0, 2]


def test_the_elements_a_model_stores_or_computes_count_in_its_cost(tmp_path):
    """A model of few products but large tensors (weights computed in the graph, as in the onnx package's light nets)
    goes before one of more products on small tensors: each element stored or computed costs ELEMENT_COST."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from nnrt_onnx.workflows.sweep_order import ELEMENT_COST, estimated_cost, most_expensive_first

    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    # a 1000x1000 tensor computed (ConstantOfShape of a stored [2] shape), then its Relu: no product at all
    wide = helper.make_graph([helper.make_node("ConstantOfShape", ["shape"], ["c"]),
                              helper.make_node("Relu", ["c"], ["y"])], "wide", [], [y],
                             [numpy_helper.from_array(np.array([1000, 1000], np.int64), "shape")])
    # [1, 1000] x [1000, 100]: 100 outputs of 1000 products each, a stored 1000x100 weight
    deep = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "deep",
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1000])], [y],
                             [numpy_helper.from_array(np.zeros((1000, 100), np.float32), "w")])
    paths = []
    for graph in (deep, wide):
        paths.append(str(tmp_path / f"{graph.name}.onnx"))
        onnx.save(helper.make_model(graph), paths[-1])
    assert estimated_cost(paths[0]) == 100 * 1000 + ELEMENT_COST * (1000 * 100 + 100)
    assert estimated_cost(paths[1]) == ELEMENT_COST * (2 + 1000 * 1000 + 1000 * 1000)
    assert [key for key, _ in most_expensive_first([(0, paths[0]), (1, paths[1])])] == [1, 0]
