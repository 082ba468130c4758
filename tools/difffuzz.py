"""A differential fuzzer of *valid* ONNX models (issue 26): random graphs of the ops exporters emit, converted the
way ``nnrt-onnx convert`` converts them, run natively, and compared with onnxruntime and onnx.reference.

    python tools/difffuzz.py --minutes 30 --seed 1     # a campaign; wrong answers and crashes shrunk and saved
                                                       # under tests/data/difffuzz_regressions/
    python tools/difffuzz.py --count 300 --seed 7      # a fixed slice (what the CI test runs)
    python tools/difffuzz.py --replay FILE.onnx        # one model through the same checks, the outcome printed
    python tools/difffuzz.py --show 7:42               # model 42 of seed 7: its nodes, and where it is saved

Model ``i`` of seed ``s`` is a pure function of (s, i) (tools/difffuzz_graphs.py: 1-6 steps of Conv, pooling,
normalisations, Gemm/MatMul/Einsum, broadcasting arithmetic, activations, shape ops and exporters' Shape chains,
indexing, Resize, Pad, reductions, LSTM/GRU/RNN ...; dims static or dynamic). Each runs in a worker subprocess
(fuzz_workers: a memory and a time limit, restarted every --batch models):

1. ``onnx.checker.check_model(full_check=True)`` and onnxruntime must accept the model and run it at one binding
   of its dynamic dims at least; otherwise it is ``discarded`` (not counted as a model).
2. It is written to a file and converted from it by ``from_onnx`` with no shapes pinned (dynamic dims stay
   dynamic), compiled once (``Compilation.build``) and run by one Executor at every binding onnxruntime ran.
3. Every output at every binding is compared with onnxruntime's by ``parity.compare`` (dtype-aware tolerances
   relative to the output's scale); a disagreement is judged by the float64 referee of ``nnrt-onnx check``
   (``workflows/float64.py``: onnx.reference in double, with Monte Carlo estimates of the honest float32 error).

Outcomes:

    agree            every output within tolerance of onnxruntime at every binding
    ill_conditioned  they differ, but one-ulp noise moves the result that much (or both are as close to float64
                     as float32 can be; or the elements that differ are decided by a comparison, an ArgMax or
                     TopK's indices of values equal to within 1e-4 of their scale, or by a Cast, Floor, Ceil or
                     Round of a value within 1e-4 of where the result jumps, also seen through a Reshape, Flatten,
                     Squeeze or Unsqueeze; or they are a Reciprocal, a Div or a Pow with a negative exponent of an
                     input within 1e-4 of its scale from 0, and both sides are what the op gives there): nobody's
                     fault
    imprecise        native is farther from float64 than float32 noise explains, but within 1e-2 (max rel): a less
                     accurate computation (an accumulation order, a variance formula) rather than a wrong one
    wrong            native differs from onnxruntime and from float64 while those two agree (site: the op type of
                     the node that wrote the first wrong output, and "values" or "shape")
    ref_disagree     onnxruntime is the one far from float64 (or neither side matches it): not ours, counted apart
    unjudged         native differs from onnxruntime and onnx.reference cannot evaluate the model (the detail names
                     the documented readings of docs/deviations.md the conversion followed, if any)
    refused          a clean refusal: a ConversionError (by reason code and op type: each is a valid model we do not
                     take, a potential bug) or an NNRtError at build or run time
    crash            any other exception, or a ConversionError issue ``internal_error`` (site: file:line)
    memory, hang, died   out of memory, over the time limit (twice: the first run of a kernel may compile it),
                     the worker died

Each new ``wrong``/``crash`` site, each refusal that calls the valid model invalid (``invalid_model``, or an
NNRtError at build or run time: the conversion made a model the runtime refuses) and, with --shrink-refused,
every other refusal is shrunk -- nodes cut off or bypassed,
outputs dropped, intermediate tensors frozen into initializers, inputs made initializers, bindings dropped, dims
made smaller, attributes back to their defaults -- while it keeps the same outcome and site, and saved to
tests/data/difffuzz_regressions/ with an entry in index.json (tests/test_difffuzz.py replays them).

Exit status: 1 when any model was wrong, crashed, ran out of memory, hung or killed its worker; 0 otherwise.
"""
from __future__ import annotations

import argparse
import base64
import json
import math
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # (its siblings, also when loaded by path)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import difffuzz_graphs as graphs  # noqa: E402
import fuzz_workers  # noqa: E402
from fuzz_workers import DEFAULT_MEMORY_MB  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REGRESSIONS = ROOT / "tests" / "data" / "difffuzz_regressions"
BAD = ("wrong", "crash", "memory", "hang", "died")
OUTCOMES = ("agree", "ill_conditioned", "imprecise", "wrong", "crash", "refused", "ref_disagree", "unjudged",
            "memory", "hang", "died")
DEFAULT_TIMEOUT = 30.0  # seconds per model
FAR = 100.0  # "neither matches float64" counts as wrong when native is this many times farther than onnxruntime
IMPRECISE = 1e-2  # a wrong answer within this max rel of float64 is "imprecise" (an algorithm, not a wrong index)
TIE = 1e-4  # integers or booleans decided by floats this close (relative to their scale) are ill-conditioned


def suspicious(result: dict) -> bool:
    """A refusal that says the valid model is invalid (``invalid_model``), or an NNRtError at build or run time
    (the conversion made a model the runtime refuses): bugs rather than limits, shrunk and saved like crashes."""
    return any(reason == "invalid_model" or ":" in reason for reason, _ in result.get("reasons") or [])


# -- one model, in a worker ----------------------------------------------------------------------------------------

def ops_of(model) -> list[str]:
    return sorted({n.op_type for n in model.graph.node if n.op_type != "Constant"})


def classify(data: bytes, always_reference: bool = False) -> dict:
    """The outcome of one serialized model (see the module doc) as a dict: outcome, site, detail, ops, and per
    outcome: reasons ([reason, op type] of a refusal's root issues), bindings (the indices that show a wrong
    answer), output, max_abs."""
    import numpy as np
    import onnx

    model = onnx.ModelProto.FromString(data)
    base = {"ops": ops_of(model)}
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:  # noqa: BLE001 (ValidationError, InferenceError, ...)
        return {**base, "outcome": "discarded", "site": "checker", "detail": _first_line(exc)}
    expected = _onnxruntime(model)
    if isinstance(expected, dict):
        return {**base, **expected}
    from nnrt_onnx import Compilation, Executor, NNRtError
    from nnrt_onnx.onnx_import import ConversionError, from_onnx
    from nnrt_onnx.onnx_import.guard import site

    stage = "convert"
    try:
        path = fuzz_workers.scratch_file("model.onnx")
        path.write_bytes(data)
        converted = from_onnx(str(path))  # as `nnrt-onnx convert` does: no shape pinned
        stage = "build"
        compilation = Compilation(converted.model)
        compilation.build()
        executor = Executor(compilation)
        names = [converted.model.tensors[i].name for i in converted.model.inputs]
        outputs = [o.name for o in model.graph.output]
        perms = {}
        for name in outputs:
            located = converted.graph.locate(name)
            perms[name] = located[1] if located else None
        native = []
        for index, feed, _ in expected:
            stage = f"run (binding {index})"
            arrays = executor.run_arrays([feed[n] for n in names])
            native.append([np.transpose(a, perms[n]) if perms[n] is not None else np.asarray(a)
                           for n, a in zip(outputs, arrays)])
    except ConversionError as error:
        return {**base, **_refusal(error)}
    except NNRtError as exc:
        where = stage.split(" ")[0]
        op = _nnrt_op(str(exc))
        return {**base, "outcome": "refused", "site": f"{where}: {exc.code.name} {op}",
                "reasons": [[f"{where}:{exc.code.name}", op]], "detail": _first_line(exc)}
    except MemoryError as exc:
        return {**base, "outcome": "memory", "site": site(exc), "detail": f"MemoryError in {stage}"}
    except Exception as exc:  # noqa: BLE001 (the finding)
        return {**base, "outcome": "crash", "site": site(exc),
                "detail": f"{stage}: {type(exc).__name__}: {_first_line(exc)}"}
    return {**base, **_judge(model, outputs, expected, native, always_reference, converted.deviations)}


def _nnrt_op(message: str) -> str:
    """The NNRt op an NNRtError's message names ("... operation #2 OH_NN_OPS_GATHER: ..." -> "GATHER"), or "-"."""
    start = message.find("OH_NN_OPS_")
    if start < 0:
        return "-"
    return message[start + len("OH_NN_OPS_"):].split(":")[0].split()[0]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _onnxruntime(model):
    """[(binding index, feed, onnxruntime's outputs)] for every binding onnxruntime runs (to outputs that are not
    empty), or the ``discarded`` result when it runs none."""
    import numpy as np

    from nnrt_onnx.workflows import parity

    try:
        session = parity._session(model, "the model")  # (the oracle session of `nnrt-onnx check`)
    except Exception as exc:  # noqa: BLE001
        return {"outcome": "discarded", "site": "onnxruntime load", "detail": _first_line(exc)}
    runs, failure = [], ""
    for index, binding in enumerate(graphs.bindings(model)):
        feed = graphs.feeds(model, index, binding)
        try:
            outputs = session.run(None, feed)
        except Exception as exc:  # noqa: BLE001 (the model is not valid at these sizes)
            failure = _first_line(exc)
            continue
        if any(0 in np.shape(o) for o in outputs):  # (a window larger than its image: degenerate, not valid)
            failure = "an output is empty"
            continue
        runs.append((index, feed, outputs))
    if not runs:
        return {"outcome": "discarded", "site": "onnxruntime run", "detail": failure}
    return runs


def _refusal(error) -> dict:
    from fuzz_workers import site_of_issue

    roots = [i for i in error.issues if i.is_root] or list(error.issues)
    for issue in error.issues:
        if issue.reason == "internal_error":
            return {"outcome": "crash", "site": site_of_issue(issue.message),
                    "detail": f"{issue.op_type}: {issue.message[:300]}"}
        if issue.reason == "out_of_memory":
            return {"outcome": "memory", "site": site_of_issue(issue.message), "detail": issue.message[:300]}
    reasons = sorted({(i.reason, i.op_type) for i in roots})
    first = next((i for i in roots if i.reason == "invalid_model"), roots[0])  # (the suspicious one names it)
    return {"outcome": "refused", "site": f"{first.reason} {first.op_type}", "reasons": [list(r) for r in reasons],
            "detail": f"{first.op_type}: {first.message[:300]}"}


def _judge(model, outputs: list[str], expected: list, native: list, always_reference: bool,
           deviations=()) -> dict:
    """The three-way verdict over every output and binding (see the module doc). ``deviations``: the conversion's
    (``ImportResult.deviations``), named in an unjudged finding's detail -- the documented readings the
    disagreement may come from (docs/deviations.md)."""
    from nnrt_onnx.workflows import float64 as f64
    from nnrt_onnx.workflows.parity import compare, tolerances_for

    producer = {o: n.op_type for n in model.graph.node for o in n.output if o}
    worst = None  # the most serious finding: (rank, result)
    order = {"wrong": 0, "unjudged": 1, "imprecise": 2, "ref_disagree": 3, "ill_conditioned": 4}
    for (index, feed, theirs), ours in zip(expected, native):
        mismatched = []
        for name, got, want in zip(outputs, ours, theirs):
            comparison = compare(got, want, name)
            if not comparison.within:
                mismatched.append((name, got, want, comparison))
        if not mismatched and not always_reference:
            continue
        try:
            truth = f64.float64_reference(model, feed, tolerances_for)
        except Exception as exc:  # noqa: BLE001 (onnx.reference cannot evaluate it)
            truth, why = None, _first_line(exc)
        for name, got, want, comparison in mismatched:
            kind = "shape" if got.shape != want.shape else "values"
            finding = {"site": f"{producer.get(name, 'input')} {kind}", "output": name, "bindings": [index],
                       "max_abs": comparison.max_abs if math.isfinite(comparison.max_abs) else None,
                       "detail": (f"{name} at binding {index}: native {list(got.shape)} {got.dtype} vs "
                                  f"onnxruntime {list(want.shape)}: max abs {comparison.max_abs:.3g}, "
                                  f"{comparison.mismatched} of {comparison.size} elements off")}
            if truth is None:
                outcome = "unjudged"
                finding["detail"] += f"; onnx.reference: {why}" + _readings(deviations)
            else:
                outcome, note, error = _referee(truth, model, feed, name, got, want)
                finding["detail"] += f"; {note}"
                if outcome == "wrong" and kind == "values" and error < IMPRECISE:
                    outcome = "imprecise"
            if worst is None or order[outcome] < order[worst[0]]:
                worst = (outcome, finding)
            elif outcome == worst[0] and index not in worst[1]["bindings"]:
                worst[1]["bindings"].append(index)
        if truth is not None and always_reference:
            for name, got, want in zip(outputs, ours, theirs):
                verdict = truth.verdict(name, got, want, True)
                if verdict is not None and verdict.verdict == f64.SUSPECT and worst is None:
                    worst = ("ref_disagree", {"site": "float64 disagrees with both", "output": name,
                                              "bindings": [index], "detail": verdict.text()})
    if worst is None:
        return {"outcome": "agree", "bindings": [i for i, _, _ in expected]}
    return {"outcome": worst[0], **worst[1]}


def _readings(deviations) -> str:
    """The documented readings a conversion followed (rule and node), as a note: "" when none."""
    named = sorted({f"{d.rule} ({d.node})" for d in deviations})
    return f"; the conversion follows documented readings: {', '.join(named)}" if named else ""


def _referee(truth, model, feed: dict, name: str, got, want) -> tuple[str, str, float]:
    """(outcome, note, native's max rel error against float64) for one output native and onnxruntime disagree on,
    from the float64 truth."""
    import numpy as np

    from nnrt_onnx.workflows import float64 as f64

    reference = truth.truth.get(name)
    if reference is None:
        return "unjudged", "no float64 value", math.inf
    if got.shape != want.shape or name not in truth.spread:  # shapes, integers and booleans: exact
        same = lambda a: a.shape == reference.shape and np.array_equal(  # noqa: E731
            np.asarray(a, np.float64), np.asarray(reference, np.float64), equal_nan=True)
        if got.shape != want.shape:
            same = lambda a: a.shape == reference.shape  # noqa: E731
        if same(want) and not same(got):
            if got.shape == want.shape and _near_tie(model, truth, feed, name, got, want):
                return "ill_conditioned", f"the elements that differ decide between values within {TIE:g} of " \
                                          f"their scale (in float64)", math.inf
            return "wrong", "onnxruntime matches float64, native does not", math.inf
        if same(got):
            return "ref_disagree", "native matches float64, onnxruntime does not", 0.0
        return "ref_disagree", "neither matches float64", math.inf
    verdict = truth.verdict(name, got, want, False)
    if verdict.verdict == f64.NATIVE_WRONG or (verdict.verdict == f64.NEITHER and verdict.closer == "onnxruntime"
                                               and verdict.ratio >= FAR):
        if _near_tie(model, truth, feed, name, got, want):  # (Floor, Ceil, Round at a jump; 1/x near 0)
            return "ill_conditioned", f"{verdict.text()}; the elements that differ come from values within " \
                                      f"{TIE:g} of where the result jumps or is singular", verdict.native_error
        return "wrong", verdict.text(), verdict.native_error
    if verdict.verdict in (f64.ORT_WRONG, f64.NEITHER):
        return "ref_disagree", verdict.text(), verdict.native_error
    return "ill_conditioned", verdict.text(), verdict.native_error


_ORDER_KEEPING = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _near_tie(model, truth, feed: dict, name: str, got, want) -> bool:
    """Do the elements of an output that native and onnxruntime disagree on come from a comparison, an
    ArgMax/ArgMin or TopK's indices of values equal to within TIE of their scale in float64, or from a Cast to
    integers, Floor, Ceil or Round of values within TIE of where the result jumps (through Not, Identity, Casts of
    booleans and the reshapes of _ORDER_KEEPING)? Then float32 rounding decides them, not a bug."""
    import numpy as np

    writers = {o: n for n in model.graph.node for o in n.output if o}
    from onnx import numpy_helper

    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    values.update({k: np.asarray(v) for k, v in {**feed, **truth.truth}.items()})
    flipped = np.asarray(got) != np.asarray(want)
    node = writers.get(name)
    # (ops that keep each element's value and row-major order: the flipped mask reshapes to their input)
    while node is not None and (node.op_type in ("Not", "Identity") + _ORDER_KEEPING or (
            node.op_type == "Cast" and values.get(node.input[0], np.zeros(0)).dtype == np.bool_)):
        source = values.get(node.input[0])
        if node.op_type in _ORDER_KEEPING:
            if source is None or source.size != flipped.size:
                return False
            flipped = flipped.reshape(source.shape)
        node = writers.get(node.input[0])
    if node is None or any(i not in values for i in node.input[:2] if i):
        return False
    inputs = [values[i].astype(np.float64) for i in node.input[:2] if i]
    if node.op_type in ("Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Equal"):
        a, b = np.broadcast_arrays(*inputs)
        if a.shape != flipped.shape:
            return False
        scale = max(float(np.nanmax(np.abs(a), initial=0)), float(np.nanmax(np.abs(b), initial=0)), 1e-30)
        return bool(np.all(np.abs(a - b)[flipped] <= TIE * scale))
    if node.op_type in ("ArgMax", "ArgMin"):
        attributes = {a.name: a.i for a in node.attribute}
        axis = attributes.get("axis", 0) % inputs[0].ndim
        chosen = [np.asarray(v, np.int64) if attributes.get("keepdims", 1) else
                  np.expand_dims(np.asarray(v, np.int64), axis) for v in (got, want)]
        return _picks_nearly_equal(inputs[0], chosen, axis)
    if node.op_type == "TopK" and len(node.output) > 1 and name == node.output[1]:  # indices of (nearly) tied values
        chosen = [np.asarray(v, np.int64) for v in (got, want)]
        if chosen[0].shape != chosen[1].shape or chosen[0].ndim != inputs[0].ndim:
            return False
        return _picks_nearly_equal(inputs[0], chosen, {a.name: a.i for a in node.attribute}.get("axis", -1)
                                   % inputs[0].ndim)
    if node.op_type in _SINGULAR_AT_ZERO:
        return _near_singularity(node, values, got, want)
    if node.op_type in ("Cast", "Floor", "Ceil", "Round") and inputs[0].shape == flipped.shape:
        x = inputs[0][flipped]
        step = {"Floor": np.floor, "Ceil": np.ceil, "Round": np.round}.get(node.op_type, np.trunc)
        if node.op_type == "Cast" and not np.issubdtype(np.asarray(got).dtype, np.integer):
            boundary = np.round(x)  # (a Cast to a float or bool type: only a crude check)
            return bool(np.all(np.abs(x - boundary) <= TIE * np.maximum(1.0, np.abs(x))))
        # both results must be what the step gives somewhere within TIE of the value
        wobble = TIE * np.maximum(1.0, np.abs(x))
        reachable = (step(x - wobble), step(x + wobble))
        return all(bool(np.all((r == reachable[0]) | (r == reachable[1])))
                   for r in (np.asarray(got, np.float64).reshape(flipped.shape)[flipped],
                             np.asarray(want, np.float64).reshape(flipped.shape)[flipped]))
    return False


def _picks_nearly_equal(x, chosen: list, axis: int) -> bool:
    """Where two index arrays (ArgMax's, TopK's) differ, do the values of ``x`` they pick along ``axis`` agree to
    within TIE of its scale?"""
    import numpy as np

    picked = [np.take_along_axis(x, np.clip(c, 0, x.shape[axis] - 1), axis) for c in chosen]
    scale = max(float(np.nanmax(np.abs(x), initial=0)), 1e-30)
    return bool(np.all(np.abs(picked[0] - picked[1])[chosen[0] != chosen[1]] <= TIE * scale))


# ops whose result goes to infinity as one input goes to 0: (which input, the op on it with the others fixed)
_SINGULAR_AT_ZERO = {
    "Reciprocal": (0, lambda v, others: 1.0 / v),
    "Div": (1, lambda v, others: others[0] / v),
    "Pow": (0, lambda v, others: v ** others[1]),
}


def _near_singularity(node, values: dict, got, want) -> bool:
    """Are the elements native and onnxruntime disagree on (beyond the output's tolerance) what the op gives for its
    input (the divisor, the base) anywhere within TIE of that input's scale of its float64 value -- an input near 0,
    where 1/x or x**-p turns float32 noise into any difference (fuzzer seed 6007: Conv -> BatchNormalization ->
    Pow(-1) of a value 1.4e-5 of its scale from 0)? Pow only with an exponent below 0."""
    import numpy as np

    from nnrt_onnx.workflows.parity import tolerances_for

    position, step = _SINGULAR_AT_ZERO[node.op_type]
    if any(i not in values for i in node.input[:2] if i):
        return False
    operands = [np.asarray(values[i], np.float64) for i in node.input[:2] if i]
    if node.op_type == "Pow" and not np.all(operands[1] < 0):
        return False
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    try:
        operands = list(np.broadcast_arrays(*operands, want64))[:-1]
    except ValueError:
        return False
    if operands[position].shape != want64.shape:
        return False
    rtol, atol = tolerances_for(np.asarray(want).dtype) or (1e-4, 1e-5)
    finite = np.abs(want64[np.isfinite(want64)])
    floor = atol * (float(finite.max()) if finite.size else 1.0)
    with np.errstate(all="ignore"):
        off = ~(np.abs(got64 - want64) <= floor + rtol * np.abs(want64))
        x = operands[position][off]
        others = [o[off] for o in operands]
        wobble = TIE * max(float(np.nanmax(np.abs(operands[position]), initial=0)), 1e-30)
        ends = [step(x - wobble, others), step(x + wobble, others)]
    crosses = (x - wobble <= 0) & (x + wobble >= 0)  # the interval holds the singularity: any value
    low, high = np.minimum(*ends), np.maximum(*ends)
    slack = 1e-6 * np.maximum(np.abs(low), np.abs(high))
    inside = [(v[off] >= low - slack) & (v[off] <= high + slack) for v in (got64, want64)]
    return bool(off.any() and np.all(crosses | (inside[0] & inside[1])))


def _worker(memory_mb: int, timeout: float) -> None:
    """The worker loop (fuzz_workers.serve), the library imported and warmed up first."""
    import os
    import warnings

    warnings.simplefilter("ignore")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import onnxruntime  # noqa: F401  (imports and first compilations before the limits: they are not findings)

    import nnrt_onnx.onnx_import  # noqa: F401
    from nnrt_onnx.kernels import kernels
    from nnrt_onnx.onnx_import.handlers import registered

    kernels()
    registered()
    for index in range(6):
        try:
            classify(graphs.generate(0, index).SerializeToString())
        except Exception:  # noqa: BLE001 (a warm-up only)
            pass

    def load(task: dict) -> tuple[tuple[bytes, bool], dict]:
        if "model" in task:
            data = base64.b64decode(task["model"])
        else:
            data = graphs.generate(task["seed"], task["index"]).SerializeToString()
        return (data, bool(task.get("always_reference"))), {}

    fuzz_workers.serve(memory_mb, timeout, load, lambda subject: classify(*subject))


class Runner(fuzz_workers.Runner):
    """Workers that classify models (generated by seed and index, or given as bytes): see fuzz_workers.Runner."""

    script = Path(__file__).resolve()

    def model(self, slot: int, model, always_reference: bool = False) -> dict:
        data = model if isinstance(model, bytes) else model.SerializeToString()
        return self.evaluate(slot, {"model": base64.b64encode(data).decode(), "always_reference": always_reference})


# -- shrinking --------------------------------------------------------------------------------------------------------

def same_failure(found: dict, result: dict) -> bool:
    """Does ``result`` show the failure ``found`` showed: the same outcome and site (a wrong answer at the same op
    type, values or shape; a crash at the same file:line; a refusal for the same reason at the same op type, with a
    message of the same words)?"""
    if result.get("outcome") != found["outcome"] or result.get("site") != found.get("site"):
        return False
    return found["outcome"] != "refused" or gist(result.get("detail", "")) == gist(found.get("detail", ""))


def gist(message: str) -> str:
    """A message without its numbers and quoted names: what kind of message it is."""
    import re

    return re.sub(r"-?\d+", "#", re.sub(r"'[^']*'", "''", message))[:60]


def shrink(runner: Runner, slot: int, model, found: dict, budget: int = 250, always_reference: bool = False):
    """The smallest model the greedy search finds that still shows ``found`` (see :func:`same_failure`)."""
    import difffuzz_shrink

    def keeps(candidate) -> bool:
        return same_failure(found, runner.model(slot, candidate, always_reference))

    return fuzz_workers.shrink_greedily(model, lambda m: difffuzz_shrink.candidates(m, found), keeps, budget)


def save(model, found: dict, directory: Path = REGRESSIONS, origin: dict | None = None) -> Path:
    """Write a (shrunk) model and its entry in ``directory``/index.json; returns the file's path."""
    from nnrt_onnx.serialization import atomic_write

    key = f"{found['outcome']} {found.get('site', '?')} [{' '.join(ops_of(model))}]"
    where = f"{(origin or {}).get('seed')}:{(origin or {}).get('index')}"  # (two models of one signature differ)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{fuzz_workers.slug(f'{key} {where}')}.onnx"
    atomic_write(path, [model.SerializeToString()])
    index_path = directory / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    bindings = graphs.bindings(model)
    index[path.name] = {"outcome": found["outcome"], "site": found.get("site", "?"), "ops": ops_of(model),
                        "detail": found.get("detail", ""), **(origin or {}),
                        "bindings": [bindings[i] for i in found.get("bindings", []) if i < len(bindings)],
                        "found": time.strftime("%Y-%m-%d"), "fixed": False}
    atomic_write(index_path, [json.dumps(index, indent=1, sort_keys=True).encode() + b"\n"])
    return path


def shrink_and_save(runner: Runner, slot: int, seed: int, index: int, found: dict, directory: Path, known: set,
                    always_reference: bool = False) -> dict:
    """Shrink model ``index`` of ``seed`` (which showed ``found``), save it unless a model of the same outcome, site
    and ops is in ``known`` (updated); what was done, for the report."""
    model = graphs.generate(seed, index)
    small = shrink(runner, slot, model, found, always_reference=always_reference)
    final = runner.model(slot, small, always_reference)
    if not same_failure(found, final):  # (flaky: keep the original)
        small, final = model, found
    signature = f"{final['outcome']} {final.get('site', '?')} [{' '.join(ops_of(small))}]"
    done = {"index": index, "signature": signature, "nodes": len(small.graph.node), "detail": final.get("detail")}
    if signature not in known:
        known.add(signature)
        done["saved"] = str(save(small, final, directory, {"seed": seed, "index": index}))
    return done


def saved_keys(directory: Path = REGRESSIONS) -> set[str]:
    index_path = directory / "index.json"
    if not index_path.exists():
        return set()
    return {f"{e['outcome']} {e['site']} [{' '.join(e['ops'])}]" for e in json.loads(index_path.read_text()).values()}


# -- the campaign -----------------------------------------------------------------------------------------------------

@dataclass
class Report:
    seed: int
    models: int = 0  # valid models (discarded ones not counted)
    seconds: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    discarded: Counter = field(default_factory=Counter)  # "site: detail" (truncated)
    refused: Counter = field(default_factory=Counter)  # reason code
    refused_ops: Counter = field(default_factory=Counter)  # "reason op"
    by_op: dict = field(default_factory=dict)  # op type -> Counter of outcomes (a model counts for each of its ops)
    sites: dict = field(default_factory=dict)  # "outcome site" -> {"count", "indices", "example", "shrunk"...}
    bad_models: dict = field(default_factory=dict)  # index -> "outcome site" of every model with a BAD outcome
    flagged: dict = field(default_factory=dict)  # the same for BAD outcomes and suspicious refusals
    ms: float = 0.0

    @property
    def bad(self) -> int:
        return sum(self.outcomes[o] for o in BAD)

    def count(self, index: int, result: dict) -> str:
        """Count model ``index``'s result in the totals; its outcome."""
        outcome = result.get("outcome", "skipped")
        self.ms += result.get("ms") or 0.0
        if outcome in ("discarded", "skipped"):
            self.discarded[f"{result.get('site', outcome)}: {result.get('detail', '')[:90]}"] += 1
            return outcome
        self.models += 1
        self.outcomes[outcome] += 1
        for op in result.get("ops") or ["?"]:
            self.by_op.setdefault(op, Counter())[outcome] += 1
        for reason, op in (result.get("reasons") or []) if outcome == "refused" else []:
            self.refused[reason] += 1
            self.refused_ops[f"{reason} {op}"] += 1
        key = f"{outcome} {result.get('site', '?')}"
        if outcome in BAD:
            self.bad_models[index] = key
        if outcome in BAD or (outcome == "refused" and suspicious(result)):
            self.flagged[index] = key
        return outcome

    def note(self, index: int, result: dict) -> dict:
        """Model ``index`` under its site (outcome and site): the site's entry."""
        entry = self.sites.setdefault(f"{result['outcome']} {result.get('site', '?')}",
                                      {"count": 0, "indices": [], "ops": Counter()})
        entry["count"] += 1
        if len(entry["indices"]) < 20:
            entry["indices"].append(index)
        entry["ops"].update(result.get("ops") or [])
        entry.setdefault("example", {"index": index, "detail": result.get("detail", ""), "ops": result.get("ops")})
        return entry

    def to_dict(self) -> dict:
        return {"seed": self.seed, "models": self.models, "seconds": round(self.seconds, 1),
                "outcomes": dict(self.outcomes), "discarded": dict(self.discarded.most_common(60)),
                "refused": dict(self.refused), "refused_ops": dict(self.refused_ops.most_common()),
                "by_op": {op: dict(c) for op, c in sorted(self.by_op.items())}, "sites": self.sites,
                "bad_models": self.bad_models, "flagged": self.flagged}


def campaign(seed: int = 0, count: int | None = None, minutes: float | None = None, workers: int = 1,
             batch: int = 400, memory_mb: int = DEFAULT_MEMORY_MB, timeout: float = DEFAULT_TIMEOUT,
             save_to: Path | None = None, shrink_refused: bool = False, shrink_per_site: int = 1,
             indices=None, package: str | None = None, always_reference: bool = False, progress=None) -> Report:
    """Models ``indices`` (default 0, 1, 2 ...) of ``seed`` until ``count`` are tried or ``minutes`` pass. With
    ``save_to``, the first ``shrink_per_site`` models of each new bad site (and refusal, with ``shrink_refused``)
    are shrunk and saved there unless a model of the same outcome, site and ops is saved already."""
    report = Report(seed)
    runner = Runner(workers, batch, memory_mb, timeout, package)
    started = time.monotonic()
    deadline = started + minutes * 60 if minutes else math.inf
    known = saved_keys(save_to) if save_to is not None else set()
    chosen = indices if indices is not None else range(count if count is not None else sys.maxsize)
    tasks = ((index, {"seed": seed, "index": index, "always_reference": always_reference}) for index in chosen)

    def record(index: int, result: dict, slot: int) -> None:
        if result.get("outcome") == "hang":  # once more in the new worker: the first run of a kernel may compile it
            again = runner.evaluate(slot, {"seed": seed, "index": index, "always_reference": always_reference})
            if again.get("outcome") != "hang":
                result = {**again, "detail": f"{again.get('detail', '')} (over the time limit at the first try)"}
        outcome = report.count(index, result)
        if progress is not None:
            progress(report)
        if outcome in ("discarded", "skipped", "agree", "ill_conditioned"):
            return
        entry = report.note(index, result)
        wants = outcome in ("wrong", "crash") or (outcome == "refused" and (shrink_refused or suspicious(result)))
        if save_to is not None and wants and len(entry.get("shrunk", [])) < shrink_per_site:
            entry.setdefault("shrunk", []).append(
                shrink_and_save(runner, slot, seed, index, result, save_to, known, always_reference))

    try:
        fuzz_workers.run_tasks(runner, tasks, record, deadline)
    finally:
        report.seconds = time.monotonic() - started
        for entry in report.sites.values():
            entry["ops"] = dict(entry["ops"].most_common(8))
    return report


# -- command line -----------------------------------------------------------------------------------------------------

def print_report(report: Report) -> None:
    total = report.models + sum(report.discarded.values())
    print(f"difffuzz seed {report.seed}: {report.models} valid models ({sum(report.discarded.values())} of {total} "
          f"generated discarded) in {report.seconds:.0f} s ({report.ms / max(total, 1):.0f} ms per model in a worker)")
    for outcome in OUTCOMES:
        print(f"  {outcome:<16} {report.outcomes.get(outcome, 0):>7}")
    print(f"  {'discarded':<16} {sum(report.discarded.values()):>7}")
    if report.refused:
        print("  refused by reason: " + ", ".join(f"{r} {n}" for r, n in report.refused.most_common()))
        print("  refused by reason and op:")
        for text, n in report.refused_ops.most_common(25):
            print(f"    {n:>6}  {text}")
    if report.discarded:
        print("  most common discards:")
        for text, n in report.discarded.most_common(8):
            print(f"    {n:>6}  {text}")
    columns = [o for o in OUTCOMES if any(c.get(o) for c in report.by_op.values())]
    print(f"  {'op':<24} {'models':>7} " + " ".join(f"{c[:12]:>12}" for c in columns))
    for op, counts in sorted(report.by_op.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"  {op:<24} {sum(counts.values()):>7} " + " ".join(f"{counts.get(c, 0):>12}" for c in columns))
    interesting = {k: v for k, v in report.sites.items() if not k.startswith("refused")}
    if interesting:
        print(f"  {len(interesting)} distinct site(s) beyond refusals:")
        for key, entry in sorted(interesting.items(), key=lambda kv: -kv[1]["count"]):
            example = entry["example"]
            print(f"    {entry['count']:>5}  {key}   e.g. model {example['index']} "
                  f"[{' '.join(example['ops'] or [])}]: {example['detail'][:200]}")
            for shrunk in entry.get("shrunk", []):
                print(f"           shrunk to {shrunk['nodes']} node(s): {shrunk['signature']}"
                      + (f" -> {shrunk['saved']}" if "saved" in shrunk else " (saved before)"))


def main(argv=None) -> int:
    parser = fuzz_workers.campaign_parser(__doc__, "model", DEFAULT_TIMEOUT)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--batch", type=int, default=400, help="models per worker process before it is restarted")
    parser.add_argument("--save", action=argparse.BooleanOptionalAction, default=None,
                        help="shrink and save new bad sites (default: with --minutes)")
    parser.add_argument("--shrink-refused", action="store_true", help="shrink and save refusals of valid models too")
    parser.add_argument("--shrink-per-site", type=int, default=1, help="models shrunk per site (distinct results "
                                                                       "are saved)")
    parser.add_argument("--always-reference", action="store_true",
                        help="run onnx.reference on every model, not only on disagreements")
    parser.add_argument("--show", metavar="SEED:INDEX", help="print generated model INDEX of SEED and exit")
    parser.add_argument("--write", metavar="FILE.onnx", help="with --show: also write the model there")
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    args = fuzz_workers.parse_args(parser, argv, _worker)
    if args is None:
        return 0
    if args.show:
        import onnx.printer

        seed, index = (int(v) for v in args.show.split(":"))
        model = graphs.generate(seed, index)
        print(onnx.printer.to_text(model.graph))
        print(json.dumps(graphs.get_meta(model)))
        if args.write:
            Path(args.write).write_bytes(model.SerializeToString())
        return 0
    if args.replay:
        task = {"model": base64.b64encode(Path(args.replay).read_bytes()).decode(),
                "always_reference": args.always_reference}
        return fuzz_workers.replay(Runner(1, 1, args.memory_mb, args.timeout), task, BAD)
    if args.minutes is None and args.count is None:
        args.count = 300
    save_to = REGRESSIONS if (args.save if args.save is not None else args.minutes is not None) else None
    show = sys.stderr.isatty()

    def progress(report: Report) -> None:
        if show and report.models % 25 == 0:
            print(f"\r{report.models} models, {report.bad} bad, {report.outcomes['refused']} refused", end="",
                  file=sys.stderr, flush=True)

    report = campaign(args.seed, args.count, args.minutes, args.jobs, args.batch, args.memory_mb, args.timeout,
                      save_to, args.shrink_refused, args.shrink_per_site, always_reference=args.always_reference,
                      progress=progress)
    if show:
        print(file=sys.stderr)
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=1, default=str))
    return 1 if report.bad else 0


if __name__ == "__main__":
    sys.exit(main())
