"""Does the NNRt conversion of an ONNX model compute what the ONNX model computes? -- ``nnrt-onnx check``.

:func:`check_model` converts an ONNX model as ``convert`` does (``converting.convert_as_convert``: dynamic dims stay
dynamic; specialised to the inputs' dims, with a note, only when that conversion is refused), runs it natively
(Compilation and Executor on the native CPU device, or on the ``device`` given) and runs the *original* ONNX model on onnxruntime (single-threaded) with the
same inputs, and compares every output with dtype-aware tolerances.
With ``per_layer=True`` it also captures every intermediate tensor on both sides (natively through
``Executor.run_arrays(..., capture=...)``, on a device that supports it), maps ONNX tensor names to NNRt
tensors with ``graph.locate`` (undoing layout permutations), compares them in topological order and names the
first ONNX node whose output parts ways; :meth:`ParityReport.extract_repro` then writes the smallest ONNX model
reproducing that divergence (that node, plus the nodes fused into it, fed with the actual values it saw).

Tolerances: an element is within when ``|native - reference| <= atol * scale + rtol * |reference|``, where
``scale`` is the largest finite magnitude of the reference tensor (so ``atol`` is relative to the tensor's scale).
Reported: max abs error, max relative error ``|native - reference| / max(|reference|, atol * scale / rtol)`` (near-
zero elements are measured against the absolute floor, so ``max_rel <= rtol`` implies within), the number of
elements outside tolerance, and the cosine similarity.
Defaults: float32 rtol 1e-4 / atol 1e-5, float16 1e-2 / 1e-2, float64 1e-7 / 1e-9; integers and bools are exact.

Output validation: every output's statistics (min/max/mean/std of the finite elements, NaN and Inf counts) on both
sides. A NaN on either side fails the output -- NaN on both sides is not agreement. A constant reference output
(``tensor_stats.is_constant``) is a warning: agreement on it says little.

A third opinion (``workflows/float64.py``, where the rule is defined): the model computed in float64 by
``onnx.reference``, with Monte Carlo runs that estimate each tensor's expected float32 error, gives every floating
output (and compared layer) a verdict: ill-conditioned, native is wrong, onnxruntime is wrong, neither matches
float64. An output passes when it is within tolerance, or when the verdict clears native (ill-conditioned,
onnxruntime is wrong, both within tolerance of float64) -- with a warning; ``strict=True`` fails on every warning.
Per layer, the *culprit* is the first layer where native is wrong by the float64 rule.

The referee costs three runs of ``onnx.reference`` in double (a minute on VGG-19), so it is asked only where its
verdict can change the result of the check -- ``report.float64["asked_because"]`` says why, and
``report.float64_not_asked`` why it was not:

- a floating output disagrees: the verdict decides between a failure (native is wrong, neither matches) and a pass
  with a warning. The truths of the layers are kept too: a disagreement the referee clears has every layer compared;
- under ``strict``, a floating output that is not constant agrees, but its max rel exceeds :data:`NEAR_TOLERANCE` (a
  tenth) of its rtol: an ill-conditioned output fails under strict, and ill-conditioning shows as sides that agree
  only just (the spread that makes an output ill-conditioned, beyond rtol, is the size of the differences two
  float32 implementations make). An agreement closer than that is taken as well-conditioned: a heuristic, since two
  sides may round alike by luck;
- per layer, a floating layer disagrees (and no output made the referee run): the culprit fails the check;
- ``float64_always=True`` (``check --float64``): always, on every floating output.

Not asked otherwise: on an agreement the referee can only say ill-conditioned (a warning) or that float64 disagrees
with both (a note), so an agreeing output passes whatever it finds; and a constant output is a warning either way
(a failure under strict either way). The referee runs node by node in bounded memory (``workflows/float64.py``).

Golden outputs (``expected``) are compared with native (and onnxruntime) by the same rule; native outside
tolerance of a golden output fails the check.
"""
from __future__ import annotations

import io
import json
import math
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import NNRtError, UserError, cannot
from . import float64 as f64
from .converting import convert_as_convert
from .files import check_model_file
from .inference import complete_inputs, input_names, safe_file_name
from .model_inputs import ModelInputs, override_static_dims
from .phases import Phases, no_phases, timed
from .tensor_stats import TensorStats, is_constant, tensor_stats

FLOAT_TOLERANCES: dict[str, tuple[float, float]] = {  # dtype -> (rtol, atol)
    "float16": (1e-2, 1e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-7, 1e-9),
}

# under strict, an agreeing output whose max rel exceeds this fraction of its rtol is judged by the float64 referee
NEAR_TOLERANCE = 0.1


# ----------------------------------------------------------------------------------------------------------------
# comparing two tensors


@dataclass
class Comparison:
    """How a native tensor compares to its onnxruntime reference."""

    name: str
    dtype: str
    shape: list[int]
    reference_shape: list[int]
    size: int
    max_abs: float
    max_rel: float
    mismatched: int
    cosine: float | None
    rtol: float
    atol: float  # the effective absolute tolerance (atol x the reference's scale)
    within: bool
    note: str = ""
    referee: str | None = None  # integer mismatch: whom onnx.reference agrees with (native, onnxruntime, neither)
    native_stats: TensorStats | None = None
    reference_stats: TensorStats | None = None
    constant: bool = False  # the reference is constant (tensor_stats.is_constant)
    float64: f64.Verdict | None = None  # the float64 referee's opinion, when it was asked
    steps: float | None = None  # a dequantized output: how many of its quantization steps native is off (quant_compare)

    @property
    def nan(self) -> int:
        """NaN elements, native and reference together."""
        return sum(s.nan for s in (self.native_stats, self.reference_stats) if s is not None)

    @property
    def warned(self) -> bool:
        """Passes only thanks to a referee (or is constant): a warning, and a failure under ``strict``."""
        accepted = self.float64 is not None and self.float64.accepted and self.float64.verdict != f64.SUSPECT
        return accepted or self.referee == "native" or self.constant

    def passed(self, strict: bool = False) -> bool:
        """Within tolerance (or cleared by a referee) and free of NaN; ``strict``: and without a warning."""
        if self.nan:
            return False
        if strict and self.warned:
            return False
        if self.float64 is not None and self.float64.verdict is not None:
            return self.float64.accepted
        return self.within

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k not in ("native_stats", "reference_stats", "float64")}
        data["native_stats"] = self.native_stats.to_dict() if self.native_stats else None
        data["reference_stats"] = self.reference_stats.to_dict() if self.reference_stats else None
        data["float64"] = self.float64.to_dict() if self.float64 else None
        data["passed"] = self.passed()
        return json_safe(data)


def json_safe(value):
    """``value`` with every non-finite float replaced by None (JSON has no NaN or Infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def tolerance_of(given, name: str | None = None) -> float | None:
    """A tolerance option's value for tensor ``name``: ``given`` is one value for every tensor (a number, or None for
    the dtype's default) or a mapping by tensor name whose None key is the value of every other tensor."""
    if isinstance(given, Mapping):
        return given.get(name, given.get(None)) if name is not None else given.get(None)
    return given


def tolerances_for(dtype, rtol: float | None = None, atol: float | None = None) -> tuple[float, float] | None:
    """(rtol, atol) for a dtype, overrides applied to float types; None: compared exactly."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        return None
    default_rtol, default_atol = FLOAT_TOLERANCES.get(dtype.name, FLOAT_TOLERANCES["float32"])
    return (default_rtol if rtol is None else rtol), (default_atol if atol is None else atol)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 1.0 if na == nb else 0.0
    return float(np.clip(np.dot(a, b) / (na * nb), -1.0, 1.0))


def compare(actual: np.ndarray, reference: np.ndarray, name: str = "", rtol: float | None = None,
            atol: float | None = None, strict_shape: bool = True) -> Comparison:
    """Compare ``actual`` (native) with ``reference`` (onnxruntime); see the module doc for the tolerance rule.

    ``strict_shape=False`` compares tensors of equal size but different shape element by element (noted). The
    result carries both tensors' statistics.
    """
    actual, reference = np.asarray(actual), np.asarray(reference)
    result = _compare(actual, reference, name, rtol, atol, strict_shape)
    result.native_stats, result.reference_stats = tensor_stats(actual), tensor_stats(reference)
    return result


def _compare(actual: np.ndarray, reference: np.ndarray, name: str, rtol: float | None, atol: float | None,
             strict_shape: bool) -> Comparison:
    tol = tolerances_for(reference.dtype, rtol, atol)
    r_tol, a_tol = tol if tol is not None else (0.0, 0.0)
    notes = []
    if actual.dtype != reference.dtype:
        notes.append(f"dtype {actual.dtype} vs reference {reference.dtype}")
    base = dict(name=name, dtype=str(actual.dtype), shape=list(actual.shape), reference_shape=list(reference.shape),
                size=int(reference.size), rtol=r_tol)
    if actual.shape != reference.shape:
        if strict_shape or actual.size != reference.size:
            notes.append(f"shape {list(actual.shape)} vs reference {list(reference.shape)}")
            return Comparison(**base, max_abs=math.inf, max_rel=math.inf, mismatched=int(reference.size),
                              cosine=None, atol=a_tol, within=False, note="; ".join(notes))
        notes.append(f"shape {list(actual.shape)} vs reference {list(reference.shape)} (same elements)")
    a = actual.reshape(-1)
    b = reference.reshape(-1)
    if tol is None or actual.dtype.kind not in "fiub":  # exact
        exact_equal = a.astype(reference.dtype, copy=False) == b if actual.dtype.kind in "fiub" else a == b
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        diff = np.abs(a64 - b64)
        mismatched = int(np.count_nonzero(~exact_equal))
        max_abs = float(diff.max()) if diff.size else 0.0
        max_rel = float((diff / np.maximum(np.abs(b64), 1.0)).max()) if diff.size else 0.0
        return Comparison(**base, max_abs=max_abs, max_rel=max_rel, mismatched=mismatched,
                          cosine=_cosine(a64, b64) if a.size else 1.0, atol=0.0, within=mismatched == 0,
                          note="; ".join(notes))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    finite_ref = np.abs(b64[np.isfinite(b64)])
    scale = float(finite_ref.max()) if finite_ref.size else 0.0
    a_eff = a_tol * scale if scale > 0 else a_tol
    both_finite = np.isfinite(a64) & np.isfinite(b64)
    same_special = (np.isnan(a64) & np.isnan(b64)) | ((a64 == b64) & ~both_finite)  # equal infs, both NaN
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(both_finite, np.abs(a64 - b64), 0.0)
        ok = np.where(both_finite, diff <= a_eff + r_tol * np.abs(b64), same_special)
    mismatched = int(np.count_nonzero(~ok))
    special_mismatch = int(np.count_nonzero(~both_finite & ~same_special))
    max_abs = float(diff.max()) if diff.size else 0.0
    if special_mismatch:
        max_abs = math.inf
        notes.append(f"{special_mismatch} NaN/inf element(s) differ")
    # relative error, near-zero elements measured against the absolute floor: max_rel <= rtol implies within
    floor = a_eff / r_tol if r_tol > 0 else a_eff
    denominator = np.maximum(np.where(both_finite, np.abs(b64), 1.0), floor if floor > 0 else np.finfo(np.float64).tiny)
    max_rel = float((diff / denominator).max()) if diff.size else 0.0
    if special_mismatch:
        max_rel = math.inf
    cosine = _cosine(a64[both_finite], b64[both_finite]) if both_finite.any() else None
    return Comparison(**base, max_abs=max_abs, max_rel=max_rel, mismatched=mismatched, cosine=cosine, atol=a_eff,
                      within=mismatched == 0, note="; ".join(notes))


# ----------------------------------------------------------------------------------------------------------------
# the report


@dataclass
class LayerResult:
    """One ONNX node in the per-layer comparison."""

    index: int  # position in the ONNX graph
    node: str
    op_type: str
    status: str  # "within", "diverged", or "not compared" (see ``reason``)
    outputs: list[Comparison] = field(default_factory=list)
    fused_with: list[str] = field(default_factory=list)  # upstream nodes (not compared) the divergence may be in
    nnrt_ops: list[str] = field(default_factory=list)  # what wrote the compared tensors: NNRt ops, "(constant)"
    reason: str | None = None  # not compared: "constant-folded" (its outputs are constants) or "fused away"
    # a fused step of the native plan wrote the compared tensors, or hides them (then the value compared is its
    # reference steps': the fused step itself is judged by the tensors it does write); what says which, else None
    inside_fused_step: str | None = None

    @property
    def verdict(self) -> str | None:
        """The float64 referee's verdict on this layer (the worst of its outputs'), when it was asked."""
        order = [f64.NATIVE_WRONG, f64.NEITHER, f64.ORT_WRONG, f64.ILL_CONDITIONED, f64.BOTH_CLOSE, f64.SUSPECT]
        found = [c.float64.verdict for c in self.outputs if c.float64 is not None and c.float64.verdict]
        return min(found, key=order.index) if found else None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "node": self.node, "op_type": self.op_type, "status": self.status,
                "reason": self.reason, "nnrt_ops": self.nnrt_ops, "verdict": self.verdict,
                "outputs": [c.to_dict() for c in self.outputs], "fused_with": self.fused_with,
                "inside_fused_step": self.inside_fused_step}


@dataclass
class _Repro:
    """What extract_repro needs: the nodes, their external inputs (values) and the model header."""

    nodes: list[Any]
    initializers: list[Any]
    runtime_inputs: dict[str, np.ndarray]
    constant_inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]  # reference values (for dtype/shape)
    opset_imports: list[Any]
    ir_version: int
    functions: list[Any]
    positions: list[int] = field(default_factory=list)  # the nodes' indices in the source model


@dataclass
class _Source:
    """What growing a repro needs: the source model, the values onnxruntime saw, the options of the check."""

    model: Any
    feed: dict[str, np.ndarray]
    reference: dict[str, np.ndarray]
    rtol: float | None
    atol: float | None
    device: int | None
    target: int  # index of the node the repro reproduces


@dataclass
class ParityReport:
    model: str
    seed: int | None
    inputs: dict[str, dict[str, Any]]  # name -> {"dtype", "shape", "source"}
    onnx_nodes: int
    nnrt_operations: int
    outputs: list[Comparison]
    layers: list[LayerResult] | None = None
    first_divergence: LayerResult | None = None
    strict: bool = False
    culprit: LayerResult | None = None  # the first layer where native is wrong by the float64 rule
    expected: list[Comparison] = field(default_factory=list)  # native vs golden outputs
    expected_reference: list[Comparison] = field(default_factory=list)  # onnxruntime vs golden outputs
    float64: dict[str, Any] | None = None  # {"asked_because", "seconds", "trials", "error"} when it was asked
    float64_not_asked: str | None = None  # why the float64 referee was not asked (None: it was, or nothing floats)
    notes: list[str] = field(default_factory=list)
    # the nodes converted by a reading of the ONNX spec onnx.reference or onnxruntime do not share (ir.deviations)
    deviations: list[dict[str, Any]] = field(default_factory=list)
    repro: dict[str, Any] | None = None  # set by extract_repro: {"path", "reproduces", "nodes", "command", ...}
    input_arrays: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # the runtime inputs fed
    # each output's (native, onnxruntime) values as compared (native in the ONNX layout): the report's pictures
    output_values: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    seconds: float = 0.0
    phases: list[tuple[str, float]] = field(default_factory=list)  # (phase, seconds) in the order they ran
    _repro: _Repro | None = field(default=None, repr=False)
    _source: _Source | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """Every output passes (within tolerance or cleared by a referee, no NaN), golden outputs too, and the float64
        referee blames native at no layer; under ``strict`` also no warning."""
        if not all(c.passed(self.strict) for c in self.outputs) or self.culprit is not None:
            return False
        return all(c.within and not c.nan for c in self.expected)

    @property
    def warnings(self) -> list[str]:
        """What passes but should be known: ill-conditioned or constant outputs, a side a referee overruled."""
        found = []
        for c in self.outputs:
            if c.nan:
                continue
            if c.float64 is not None and c.float64.accepted and c.float64.verdict != f64.SUSPECT:
                found.append(f"output {c.name!r}: {c.float64.text()}")
            if c.referee == "native":
                found.append(f"output {c.name!r}: onnx.reference sides with native, onnxruntime differs")
            if c.constant:
                stats = c.reference_stats
                found.append(f"output {c.name!r} is constant ({stats.min:.6g} to {stats.max:.6g} over {stats.size} "
                             f"elements): agreement on it says little about the conversion")
        return found

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "model": self.model, "ok": self.ok, "strict": self.strict, "seed": self.seed, "inputs": self.inputs,
            "onnx_nodes": self.onnx_nodes, "nnrt_operations": self.nnrt_operations, "seconds": self.seconds,
            "phases": [{"phase": label, "seconds": seconds} for label, seconds in self.phases],
            "outputs": [c.to_dict() for c in self.outputs], "warnings": self.warnings, "notes": self.notes,
            "float64": self.float64, "float64_not_asked": self.float64_not_asked, "deviations": self.deviations,
        }
        if self.expected:
            data["expected"] = {"native": [c.to_dict() for c in self.expected],
                                "onnxruntime": [c.to_dict() for c in self.expected_reference]}
        if self.layers is not None:
            not_compared = [layer for layer in self.layers if layer.status == "not compared"]
            data["per_layer"] = {
                "compared": len(self.layers) - len(not_compared),
                "not_compared": len(not_compared),
                "fused_away": sum(layer.reason == "fused away" for layer in not_compared),
                "constant_folded": sum(layer.reason == "constant-folded" for layer in not_compared),
                "first_divergence": self.first_divergence.to_dict() if self.first_divergence else None,
                "culprit": self.culprit.to_dict() if self.culprit else None,
                "layers": [layer.to_dict() for layer in self.layers],
            }
        if self.repro is not None:
            data["repro"] = self.repro
        return json_safe(data)

    def extract_repro(self, directory: str | os.PathLike) -> Path:
        """Write the smallest ONNX model reproducing the first divergence, plus its inputs; see :func:`extract_repro`."""
        return extract_repro(self, directory)


# ----------------------------------------------------------------------------------------------------------------
# running both sides


def load_checked(onnx_path) -> tuple[Any, str]:
    """(ModelProto, label) of an .onnx path (UserError when missing or not .onnx; ConversionError when corrupt)."""
    import onnx

    from ..onnx_import import load_onnx

    if isinstance(onnx_path, onnx.ModelProto):
        return onnx_path, onnx_path.graph.name or "<model>"
    path = Path(onnx_path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    if path.suffix.lower() != ".onnx":
        raise UserError(f"{path}: check takes an .onnx model (it compares the conversion with onnxruntime)")
    check_model_file(path, "onnx")
    return load_onnx(path), str(path)


def _session(model, what: str):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    # DequantizeLinear -> op -> QuantizeLinear stays as written (float op between exact Q/DQ): onnxruntime would
    # otherwise fuse it into its u8s8 integer kernels, whose int16 sums saturate on AVX2 CPUs without VNNI
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    try:
        return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's errors have no stable public types
        raise UserError(f"onnxruntime cannot load {what}: {str(exc).splitlines()[0]}") from None


def _with_all_outputs(model, names: Sequence[str]):
    """A copy of the model with every tensor in ``names`` also a graph output (onnxruntime infers types)."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    present = {o.name for o in copy.graph.output}
    for name in names:
        if name and name not in present:
            info = onnx.ValueInfoProto()
            info.name = name
            copy.graph.output.append(info)
            present.add(name)
    return copy


def runtime_input_names(model) -> list[str]:
    """The inputs of an ONNX model that are fed at run time (not initializers)."""
    initializers = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


def _dynamic_tensors(model) -> set[str]:
    """Tensors that depend on a runtime input (the rest are constants, whatever computes them)."""
    dynamic = set(runtime_input_names(model))
    for node in model.graph.node:
        if any(name in dynamic for name in node.input):
            dynamic.update(o for o in node.output if o)
    return dynamic


def _run_native(model, arrays: Sequence[np.ndarray], capture: dict[int, Any] | None,
                device: int | None = None, hidden: dict[int, str] | None = None) -> list[np.ndarray]:
    """The NNRt model run on ``device`` (an id; None: the native CPU device) through Compilation and Executor --
    the plan users run, fusions and runners included -- capturing the tensors of ``capture`` (a device that cannot
    raises NNRtError OH_NN_UNSUPPORTED). ``hidden`` (optional) receives, for each captured tensor that a fused step
    of the plan hides (recomputed for the capture by that step's reference steps), the fused step's label."""
    from ..compilation import Compilation
    from ..executor import Executor
    from ..runtime.cpu import CpuDevice

    compilation = Compilation(model)
    compilation.set_device(CpuDevice.id if device is None else device)
    compilation.build()
    executor = Executor(compilation)
    outputs = executor.run_arrays(list(arrays), capture=capture)
    prepared = executor.prepared
    if hidden is not None and capture is not None and hasattr(prepared, "hidden_by"):
        hidden.update({i: f"computed for the capture by the reference steps of {label}" for i in capture
                       if (label := prepared.hidden_by(i)) is not None})
        hidden.update({i: f"written by {label}" for i in capture
                       if i not in hidden and (label := prepared.written_by_fused(i)) is not None})
    return outputs


def _as_onnx(value: np.ndarray, perm) -> np.ndarray:
    return np.transpose(value, perm) if perm is not None else value


def check_model(onnx_path, inputs: Mapping[str, np.ndarray] | None = None, seed: int = 0, per_layer: bool = False, *,
                rtol: float | Mapping[str | None, float] | None = None,
                atol: float | Mapping[str | None, float] | None = None,
                input_shapes: Mapping[str, Sequence[int]] | None = None,
                constant_inputs: Mapping[str, Any] | None = None, phases: Phases | None = None,
                label: str | None = None, device: int | None = None, strict: bool = False,
                expected: Mapping[str, np.ndarray] | None = None,
                value_ranges: Mapping[str | None, tuple[float, float]] | None = None, float64_opinion: bool = True,
                float64_always: bool = False, steps: float | None = None, override_static: bool = False,
                **import_options) -> ParityReport:
    """Convert ``onnx_path`` (a path or ModelProto), run it natively and the original on onnxruntime, compare.

    ``inputs``: arrays by ONNX input name (others are seeded random data fitting their dtype and shape, the same
    as ``nnrt-onnx run`` makes for that seed; ``value_ranges`` maps input names -- or None for all -- to the
    (low, high) of their random values); the data given pins the input's dynamic dims. ``rtol``/``atol``
    override the float tolerances: one value, or a mapping by tensor name (None: every other tensor).
    ``input_shapes`` pins dynamic input dims; ``constant_inputs`` binds inputs to values (arrays, or literals as
    ``"16000"``); ``override_static``: ``input_shapes`` may replace static dims too (both sides then run the model
    declared with them); other keywords go to ``from_onnx``. ``phases`` (``workflows.phases``)
    is told each phase (converting, each side's run, the float64 referee, the per-layer comparison);
    ``label`` names the model in the report (default: the path). ``device`` is the id of the device that runs the
    conversion (default: the native CPU device); ``per_layer`` needs one that captures intermediate tensors.
    ``expected``: golden outputs by ONNX output name. The float64 referee is asked where it can change the result
    (the module doc); ``float64_always=True`` asks it on every check, ``float64_opinion=False`` never;
    ``strict``: a warning fails the check. ``steps``: how many quantization steps a dequantized output of a quantized
    model may be off (default ``quant_compare.DEFAULT_STEPS``, one); onnx.reference judges a disagreement there.
    Raises UserError for bad inputs, ConversionError when the model cannot be converted, NNRtError (OH_NN_UNSUPPORTED)
    for ``per_layer`` on a device that cannot capture.

    A pure function of the model and the options (it writes nothing): a sweep may run it anywhere.
    """
    import time

    started = time.perf_counter()
    phase_times: list[tuple[str, float]] = []
    phase = timed(phases or no_phases, phase_times)
    model, default_label = load_checked(onnx_path)
    label = label or default_label
    given = dict(inputs or {})
    if override_static and input_shapes:  # both sides run the model as if declared with those dims
        model = override_static_dims(model, {name: list(dims) for name, dims in input_shapes.items()})
    with phase("converting"):
        conversion = convert_as_convert(model, ModelInputs(given, dict(input_shapes or {}),
                                                           dict(constant_inputs or {})), **import_options)
    result, pinned = conversion.result, conversion.options
    nnrt, graph = result.model, result.graph
    names = input_names(nnrt)
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise UserError(f"unknown input name(s) {unknown}; the model's inputs are {names}")
    output_names = [o.name for o in model.graph.output]
    golden = dict(expected or {})
    unknown = sorted(set(golden) - set(output_names))
    if unknown:
        raise UserError(f"--expected: unknown output name(s) {unknown}; the model's outputs are {output_names}")
    arrays = complete_inputs(nnrt, given, seed, value_ranges,
                             max_bytes=import_options.get("max_constant_bytes"))
    feed = dict(zip(names, arrays))
    feed.update(pinned["constant_inputs"])  # onnxruntime runs the original model: bound inputs are fed
    missing = [n for n in runtime_input_names(model) if n not in feed]
    if missing:
        raise UserError(f"ONNX input(s) {missing} have no NNRt counterpart (converted away); give them with --input")
    input_info = {n: {"dtype": str(a.dtype), "shape": list(a.shape),
                      "source": "given" if n in given else "constant" if n in pinned["constant_inputs"] else "random"}
                  for n, a in feed.items()}
    for n, info in input_info.items():
        span = (value_ranges or {}).get(n, (value_ranges or {}).get(None))
        if info["source"] == "random" and span is not None and n in names:
            info["range"] = [float(span[0]), float(span[1])]
        if n in pinned["constant_inputs"]:
            info["source"] = "constant"

    index_of = {t.name: i for i, t in enumerate(nnrt.tensors)}
    # what wrote each NNRt tensor: an operation, or nothing (a constant -- folded -- or a model input)
    writer = {i: "(input)" for i in nnrt.inputs}
    writer.update({i: op.op.name.replace("OH_NN_OPS_", "") for op in nnrt.operations for i in op.outputs})
    wanted: dict[str, tuple[int, Any]] = {}  # ONNX tensor -> (NNRt tensor index, permutation)
    for node in model.graph.node:
        for name in node.output:
            located = graph.locate(name) if name else None
            if located is not None and located[0] in index_of:
                wanted[name] = (index_of[located[0]], located[1])

    native_outputs, capture, reference = _run_both(model, nnrt, arrays, feed, wanted if per_layer else None, device,
                                                   label, phase)
    comparisons, native_outputs_onnx = [], []
    for position, name in enumerate(output_names):
        located = graph.locate(name)
        perm = located[1] if located else None
        native_outputs_onnx.append(_as_onnx(native_outputs[position], perm))
        comparisons.append(compare(native_outputs_onnx[-1], reference[name], name, tolerance_of(rtol, name),
                                   tolerance_of(atol, name)))
        comparisons[-1].constant = is_constant(reference[name])
    _compare_in_steps(model, comparisons, native_outputs_onnx, reference, feed, steps)
    _judge_dropped_dynamic_quantization(model, result, comparisons, native_outputs_onnx, reference, feed, label)
    if any(_integer_mismatch(c) for c in comparisons):
        producers = {o: node for node in model.graph.node for o in node.output if o}
        needed = [i for c in comparisons if _integer_mismatch(c) and c.name in producers
                  for i in producers[c.name].input if i and i not in reference]
        values = dict(reference)
        if needed:
            extra = _session(_with_all_outputs(model, needed), label)
            names_needed = [o.name for o in extra.get_outputs()]
            values.update(zip(names_needed, extra.run(names_needed, feed)))
        for position, c in enumerate(comparisons):
            if _integer_mismatch(c) and c.name in producers:
                referee(c, model, producers[c.name], feed, values, native_outputs_onnx[position])
    report = ParityReport(label, seed, input_info, len(model.graph.node), len(nnrt.operations), comparisons,
                          strict=strict, input_arrays={n: a for n, a in zip(names, arrays)},
                          output_values={n: (native_outputs_onnx[i], reference[n]) for i, n in enumerate(output_names)},
                          phases=phase_times)
    if conversion.note():
        report.notes.append(conversion.note())
    for name, value in golden.items():
        position = output_names.index(name)
        value = np.asarray(value)
        ours = native_outputs_onnx[position]
        if value.dtype != ours.dtype and value.dtype.kind == "f" and ours.dtype.kind == "f":
            value = value.astype(ours.dtype)  # compared with the tolerances of the output's dtype
        tolerance = tolerance_of(rtol, name), tolerance_of(atol, name)
        report.expected.append(compare(ours, value, name, *tolerance))
        report.expected_reference.append(compare(reference[name], value, name, *tolerance))

    truth = None
    why, why_not = _float64_wanted(comparisons, strict, float64_always) if float64_opinion else ([], "turned off")
    if why:
        # a disagreement the referee clears has every layer compared too: their truths are kept for that
        layers_too = per_layer or any(_floating(c) and not c.within for c in comparisons)
        kept = [c.name for c in comparisons if _floating(c)] + (list(wanted) if layers_too else [])
        truth = _float64(report, model, feed, rtol, atol, why, kept, phase)
        for position, c in enumerate(comparisons):
            if truth is not None and _floating(c):
                c.float64 = truth.verdict(c.name, native_outputs_onnx[position], reference[c.name], c.within)
    else:
        report.float64_not_asked = why_not
    for c in comparisons:
        if c.float64 is not None and c.float64.verdict == f64.SUSPECT:
            report.notes.append(f"native and onnxruntime agree on {c.name!r} but onnx.reference's float64 result "
                                f"does not ({c.float64.text()}): a problem of the referee, not of the conversion")
    cleared = [c.name for c in comparisons if not c.within and c.float64 is not None and c.float64.accepted]
    if cleared and not per_layer:
        # the referee cleared a disagreement: compare every layer too, so that no bug hides behind ill-conditioning
        try:
            _, capture, reference = _run_both(model, nnrt, arrays, feed, wanted, device, label, phase)
        except NNRtError as exc:
            report.notes.append(f"the layers were not compared ({exc.message})")
        else:
            per_layer = True
            report.notes.append(f"the float64 referee cleared {', '.join(repr(n) for n in cleared)}: every layer was "
                                f"compared too, to rule out a bug hidden by the ill-conditioning")

    if per_layer:
        layers, native_values = _compare_layers(model, wanted, writer, capture, reference, feed, rtol, atol, phase)
        report.layers = layers
        if float64_opinion:
            if report.float64 is None:  # not asked yet
                layer_results = [c for layer in layers for c in layer.outputs]
                if any(_floating(c) and not c.within for c in layer_results):  # a culprit fails the check
                    report.float64_not_asked = None
                    kept = [c.name for c in comparisons if _floating(c)] + list(wanted)
                    truth = _float64(report, model, feed, rtol, atol, ["a layer disagrees"], kept, phase)
                elif report.float64_not_asked is not None:
                    report.float64_not_asked += "; every compared layer agrees too"
            for layer in layers if truth is not None else []:
                for c in layer.outputs:
                    if _floating(c) and c.name in native_values:
                        c.float64 = truth.verdict(c.name, native_values[c.name], reference[c.name], c.within)
        compared = [layer for layer in layers if layer.status != "not compared"]
        suspect = next((layer for layer in compared if layer.verdict == f64.SUSPECT), None)
        if suspect is not None:
            report.notes.append(f"native and onnxruntime agree from ONNX node #{suspect.index} {suspect.node!r} "
                                f"({suspect.op_type}) on, but onnx.reference's float64 result does not: its "
                                f"{suspect.op_type} may be wrong, and the float64 verdicts after it are unreliable")
        report.first_divergence = next((layer for layer in compared if layer.status == "diverged"), None)
        named = [report.first_divergence] + ([report.culprit] if report.culprit is not report.first_divergence else [])
        for layer in filter(None, named):
            if layer.inside_fused_step:
                report.notes.append(f"layer {layer.node!r} ({layer.op_type}): {layer.inside_fused_step}")
        trusted = [layer for layer in compared if suspect is None or layer.index < suspect.index]
        report.culprit = next((layer for layer in trusted if _native_blamed(layer)), None)
        not_compared = {o: layer.index for layer in layers if layer.status == "not compared"
                        for o in model.graph.node[layer.index].output if o}
        chains = {}
        for layer in filter(None, (report.first_divergence, report.culprit)):
            chains[layer.index] = _upstream_not_compared(list(model.graph.node), layer.index, not_compared)
            layer.fused_with = [layers[i].node for i in chains[layer.index]]
        target = report.culprit or report.first_divergence
        if target is not None:
            report._repro = _repro_plan(model, sorted(chains[target.index] + [target.index]), feed, reference)
            report._source = _Source(model, feed, reference, rtol, atol, device, target.index)
    report.deviations = [d.as_dict() for d in result.deviations]
    report.notes.extend(_deviation_notes(report))
    report.seconds = time.perf_counter() - started
    return report


def _deviation_notes(report: ParityReport) -> list[str]:
    """Where the sides part and the conversion followed a documented reading of the spec (docs/deviations.md, "ONNX
    readings") that onnxruntime or onnx.reference do not share: name the rule, the node and what it changes -- the
    likely cause. Nothing when the sides agree."""
    parted = [c for c in report.outputs if not c.within] + [c for c in report.expected if not c.within]
    first = report.culprit or report.first_divergence
    if not report.deviations or not (parted or first is not None):
        return []
    notes = []
    for d in report.deviations:
        where = " (the first diverging layer)" if first is not None and first.node == d["node"] else ""
        notes.append(f"node {d['node']!r} ({d['op_type']}){where} is converted by the rule '{d['rule']}' of "
                     f"docs/deviations.md, which onnxruntime or onnx.reference read otherwise: {d['detail']} -- "
                     f"{d['text']}")
    return notes


def _run_both(model, nnrt, arrays, feed, wanted, device, label, phase: Phases = no_phases):
    """(native outputs, captured tensors or None, onnxruntime's values by name): both sides on the same inputs;
    with ``wanted`` (ONNX name -> (NNRt index, perm)) every intermediate tensor too."""
    capture: dict[int, Any] | None = {i: None for i, _ in wanted.values()} if wanted is not None else None
    hidden: dict[int, str] = {}
    with phase("running natively"):
        native_outputs = _run_native(nnrt, arrays, capture, device, hidden)
    if capture is not None:
        capture = _Captured(capture, hidden)
    intermediate = [o for node in model.graph.node for o in node.output if o] if wanted is not None else []
    with phase("running onnxruntime"):
        session = _session(_with_all_outputs(model, intermediate) if wanted is not None else model, label)
        fetch = [o.name for o in session.get_outputs()]
        values = {n: _tensor_of(v) for n, v in zip(fetch, session.run(fetch, feed))}
    return native_outputs, capture, values


def _tensor_of(value):
    """onnxruntime's value of an output as the tensor the conversion returns: a sequence of maps (ZipMap: class ->
    probability per row) as the [rows, keys] array of their values, in key order (docs/onnx_import.md)."""
    if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
        keys = list(value[0])
        return np.asarray([[row[k] for k in keys] for row in value], np.float32)
    return value


class _Captured(dict):
    """Captured native tensors by NNRt index, and ``hidden``: those a fused step of the plan hides or writes."""

    def __init__(self, values: dict, hidden: dict[int, str]):
        super().__init__(values)
        self.hidden = hidden


def _compare_layers(model, wanted, writer, capture, reference, feed, rtol, atol, phase: Phases = no_phases):
    """(the LayerResults in graph order, native values of the compared tensors in the ONNX layout)."""
    dynamic = _dynamic_tensors(model)
    layers: list[LayerResult] = []
    native_values: dict[str, np.ndarray] = {}
    nodes = list(model.graph.node)
    with phase("comparing layers", len(nodes), "nodes") as update:
        for position, node in enumerate(nodes):
            update(position + 1)
            name = node.name or next((o for o in node.output if o), node.op_type)
            outs = [o for o in node.output if o]
            found = [o for o in outs if o in wanted and capture.get(wanted[o][0]) is not None and o in reference]
            if not found:
                reason = "fused away" if any(o in dynamic for o in outs) else "constant-folded"
                layers.append(LayerResult(position, name, node.op_type, "not compared", reason=reason))
                continue
            results = []
            for o in found:
                index, perm = wanted[o]
                native_values[o] = _as_onnx(capture[index], perm)
                results.append(compare(native_values[o], reference[o], o, tolerance_of(rtol, o), tolerance_of(atol, o),
                                       strict_shape=False))
                if _integer_mismatch(results[-1]):
                    referee(results[-1], model, node, feed, reference, native_values[o])
            diverged = not all(c.within for c in results)
            ops = sorted({writer.get(wanted[o][0], "(constant)") for o in found})
            inside = sorted({capture.hidden[wanted[o][0]] for o in found if wanted[o][0] in capture.hidden})
            layers.append(LayerResult(position, name, node.op_type, "diverged" if diverged else "within", results,
                                      nnrt_ops=ops, inside_fused_step=inside[0] if inside else None))
    return layers, native_values


def _floating(c: Comparison) -> bool:
    """A float comparison the float64 referee can judge (not a dequantized output: those are judged in steps)."""
    return np.dtype(c.dtype).kind == "f" and c.shape == c.reference_shape and c.steps is None


def _compare_in_steps(model, comparisons: list[Comparison], native: Sequence[np.ndarray],
                      reference: Mapping[str, np.ndarray], feed: Mapping[str, np.ndarray],
                      tolerance: float | None) -> None:
    """Outputs of a quantized model written by a DequantizeLinear are compared in units of their quantization step:
    float tolerances would flag a one-step rounding difference (a tie rounded the other way) as a large error. When
    native is more than ``tolerance`` steps off onnxruntime, onnx.reference (CPU-independent, unlike onnxruntime's
    u8s8 kernels) runs the model and decides: within tolerance of it, the output passes with a warning."""
    from .quant_compare import DEFAULT_STEPS, quantized_outputs, reference_evaluator, steps_off

    step_of = quantized_outputs(model)
    tolerance = DEFAULT_STEPS if tolerance is None else tolerance
    judged = [(c, a) for c, a in zip(comparisons, native) if c.name in step_of and c.shape == c.reference_shape]
    truth: dict[str, np.ndarray] | None = None
    for c, actual in judged:
        step = step_of[c.name]
        c.steps = steps_off(actual, reference[c.name], step)
        c.within = c.nan == 0 and c.steps <= tolerance
        c.note = "; ".join(filter(None, [c.note, f"{c.steps:g} quantization step(s) off onnxruntime "
                                                  f"(step {step:g}, tolerance {tolerance:g})"]))
        if c.within:
            continue
        if truth is None:
            try:
                names = [o.name for o in model.graph.output]
                wanted = {i.name: feed[i.name] for i in model.graph.input if i.name in feed}
                truth = dict(zip(names, reference_evaluator(model).run(None, wanted)))
            except Exception as exc:  # noqa: BLE001 - onnx.reference raises many types; the check goes on
                c.note += f"; onnx.reference cannot run the model: {str(exc).splitlines()[0][:120]}"
                truth = {}
        if c.name not in truth:
            continue
        ours, theirs = steps_off(actual, truth[c.name], step), steps_off(reference[c.name], truth[c.name], step)
        if ours <= tolerance:
            c.referee, c.within = "native", True
            verdict = f"onnx.reference agrees with native ({ours:g} steps; onnxruntime is {theirs:g} off)"
        elif theirs <= tolerance:
            c.referee, verdict = "onnxruntime", f"onnx.reference agrees with onnxruntime: native is {ours:g} steps off"
        else:
            c.referee = "neither"
            verdict = f"onnx.reference agrees with neither (native {ours:g} steps off, onnxruntime {theirs:g})"
        c.note = f"{c.note}; {verdict}"


def _judge_dropped_dynamic_quantization(model, result, comparisons: list[Comparison], native: Sequence[np.ndarray],
                                        reference: Mapping[str, np.ndarray], feed: Mapping[str, np.ndarray],
                                        label: str) -> None:
    """A dynamically quantized model converted in the float form does not round its activations to the grid
    DynamicQuantizeLinear computes at run time: its float outputs are judged against what that rounding does to them
    (``dropped_quantization``: FACTOR x the spread of onnxruntime runs of the float form with the rounding's error
    injected), and the note says so."""
    from . import dropped_quantization

    dynamic = (result.stats.get("quantization") or {}).get("dynamic") or {}
    outside = [(c, a) for c, a in zip(comparisons, native) if not c.within and c.steps is None and _floating(c)
               and c.nan == 0 and c.shape == c.reference_shape]
    if dynamic.get("form") != "float" or not dynamic.get("dynamic_quantize_linear") or not outside:
        return
    found = dropped_quantization.output_spreads(model, feed, lambda m, what: _session(m, f"{label}: {what}"))
    if found is None:
        return
    spreads, count = found
    for c, actual in outside:
        spread = spreads.get(c.name)
        if spread is None:
            continue
        allowed = dropped_quantization.FACTOR * spread + c.atol
        off = float(np.max(np.abs(np.asarray(actual, np.float64) - np.asarray(reference[c.name], np.float64))))
        c.within = off <= allowed
        verdict = "within" if c.within else "beyond"
        c.note = "; ".join(filter(None, [c.note, (
            f"the conversion computes the dynamically quantized products in float (dynamic_quantization='float': "
            f"{count} activation(s) not rounded to the uint8 grid onnxruntime computes at run time; 'exact' "
            f"reproduces it); that rounding moves this output by up to {spread:.3g} (onnxruntime, "
            f"{dropped_quantization.TRIALS} runs with it injected): native is {off:.3g} off, {verdict} "
            f"{dropped_quantization.FACTOR:g} x that")]))


def _float64_wanted(outputs: Sequence[Comparison], strict: bool, always: bool) -> tuple[list[str], str | None]:
    """(why the float64 referee should be asked about these outputs -- empty: it need not be --, else why it is not:
    what it would be asked about cannot change the result; None when there is no floating output). The rule is the
    module doc's."""
    floating = [c for c in outputs if _floating(c)]
    near = [c for c in floating if c.within and not c.constant and c.max_rel > NEAR_TOLERANCE * c.rtol]
    why = []
    if any(not c.within for c in floating):
        why.append("an output disagrees")
    if strict and near:
        why.append(f"an output agrees only just (max rel beyond {NEAR_TOLERANCE:g} x rtol) under --strict")
    if always and floating:
        why.append("it was asked for")
    if why or not floating:
        return why, None
    closest = max(floating, key=lambda c: c.max_rel / c.rtol if c.rtol > 0 else 0.0)
    ratio = closest.max_rel / closest.rtol if closest.rtol > 0 else 0.0
    why_not = (f"every floating output agrees within tolerance (the closest to it: {closest.name!r}, max rel "
               f"{ratio:.2g} x rtol)")
    if strict:
        constant_near = any(c.constant and c.max_rel > NEAR_TOLERANCE * c.rtol for c in floating)
        why_not += f", none beyond {NEAR_TOLERANCE:g} x rtol{' but constant ones' if constant_near else ''}"
    else:
        why_not += ": an agreement passes whatever the referee finds"
    constant = [c.name for c in floating if c.constant]
    if constant:
        why_not += f"; {', '.join(repr(n) for n in constant)} constant: a warning either way"
    return why, why_not


def _native_blamed(layer: LayerResult) -> bool:
    """The float64 referee finds native wrong at this layer (or farther from float64 when neither matches)."""
    for c in layer.outputs:
        v = c.float64
        if v is None:
            continue
        if v.verdict == f64.NATIVE_WRONG or (v.verdict == f64.NEITHER and v.closer == "onnxruntime"):
            return True
    return False


def _float64(report: ParityReport, model, feed, rtol, atol, why: list[str], names: Sequence[str],
             phase: Phases = no_phases) -> f64.Float64Reference | None:
    """The float64 reference (the truths of ``names``), or None with a note when onnx.reference cannot evaluate the
    model."""
    try:
        with phase("float64 referee", len(model.graph.node), "nodes") as update:
            truth = f64.float64_reference(model, feed,
                                          lambda dtype: tolerances_for(dtype, tolerance_of(rtol), tolerance_of(atol)),
                                          names=names,
                                          on_node=lambda done, total: update(done))
    except Exception as exc:  # noqa: BLE001 - onnx.reference raises many types; the check goes on without it
        message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        report.float64 = {"asked_because": why, "error": message}
        report.notes.append(f"no float64 opinion: onnx.reference cannot evaluate the model ({message})")
        return None
    report.float64 = {"asked_because": why, "error": None, "trials": truth.trials, "seconds": truth.seconds,
                      "method": "onnx.reference on the model cast to double; Monte Carlo runs with one-ulp noise"}
    return truth


def _integer_mismatch(c: Comparison) -> bool:
    return not c.within and np.dtype(c.dtype).kind in "iu" and c.shape == c.reference_shape


# onnxruntime's u8s8/s8s8 integer GEMM and convolution (QLinearConv, ConvInteger, MatMulInteger, QLinearMatMul ...)
# sum byte products in pairs into int16 on AVX2 CPUs without VNNI, which saturates: its integer results depend on
# the CPU. Where native and onnxruntime disagree on an integer tensor, the node is re-run in onnx.reference (exact
# int32 arithmetic, CPU-independent) fed with onnxruntime's inputs, and the report says whom it agrees with.
ORT_INTEGER_HINT = ("onnxruntime's integer kernels are CPU-dependent: its u8s8 path saturates int16 sums on CPUs "
                    "without VNNI")


def referee(c: Comparison, model, node, feed: Mapping[str, np.ndarray], values: Mapping[str, np.ndarray],
            native: np.ndarray) -> None:
    """Judge an integer mismatch of ``c`` (an output of ``node``) by running the node alone in onnx.reference;
    updates ``c``: ``referee``, the note, and ``within`` when onnx.reference sides with native (within one step)."""
    try:
        expected = _reference_node_output(model, node, feed, values, c.name)
    except Exception as exc:  # noqa: BLE001 - the reference evaluator raises many types; the check goes on
        c.note = "; ".join(filter(None, [c.note, f"onnx.reference cannot re-run {node.op_type} "
                                                  f"{node.name or c.name!r}: {str(exc).splitlines()[0][:120]}"]))
        return
    ours = np.asarray(native).astype(np.int64).reshape(expected.shape)
    theirs = np.asarray(values[c.name]).astype(np.int64).reshape(expected.shape)
    truth = expected.astype(np.int64)
    step = 1 if np.dtype(c.dtype).itemsize <= 2 else 0  # quantized 8/16-bit values: one rounding step
    native_off, ort_off = int(np.abs(ours - truth).max(initial=0)), int(np.abs(theirs - truth).max(initial=0))
    if native_off <= step < ort_off or (native_off <= step and ort_off <= step and native_off <= ort_off):
        c.referee, c.within = "native", True
        verdict = (f"onnx.reference agrees with native ({'exactly' if native_off == 0 else 'within one step'}); "
                   f"onnxruntime is {ort_off} off ({ORT_INTEGER_HINT})")
    elif ort_off <= step:
        c.referee = "onnxruntime"
        verdict = f"onnx.reference agrees with onnxruntime: native is wrong by up to {native_off}"
    else:
        c.referee = "neither"
        verdict = f"onnx.reference agrees with neither (native {native_off} off, onnxruntime {ort_off} off)"
    c.note = "; ".join(filter(None, [c.note, verdict]))


def _reference_node_output(model, node, feed, values, output: str) -> np.ndarray:
    """``output`` of ``node`` run alone in onnx.reference, its inputs taken from ``values``/``feed``/initializers."""
    import onnx
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    initializers = {t.name: t for t in model.graph.initializer}
    feeds, inits = {}, []
    for name in node.input:
        if not name or name in feeds:
            continue
        if name in values or name in feed:
            feeds[name] = np.asarray(values[name] if name in values else feed[name])
        elif name in initializers:
            inits.append(initializers[name])
        else:
            raise ValueError(f"input {name!r} of the node is not available")
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
              for n, a in feeds.items()]
    outputs = [onnx.ValueInfoProto(name=o) for o in node.output if o]
    graph = helper.make_graph([node], "referee", inputs, outputs, inits)
    single = helper.make_model(graph, opset_imports=list(model.opset_import))
    single.ir_version = model.ir_version
    single.functions.extend(model.functions)
    results = ReferenceEvaluator(single).run(None, feeds)
    named = dict(zip([o for o in node.output if o], results))
    return np.asarray(named[output])


def _upstream_not_compared(nodes, position: int, producer_of: dict[str, int]) -> list[int]:
    """Indices of the nodes feeding ``position`` through tensors that were not compared (fused away)."""
    chain: set[int] = set()
    stack = [position]
    while stack:
        for name in nodes[stack.pop()].input:
            upstream = producer_of.get(name)
            if upstream is not None and upstream not in chain:
                chain.add(upstream)
                stack.append(upstream)
    return sorted(chain)


def _repro_plan(model, positions: list[int], feed: Mapping[str, np.ndarray],
                reference: Mapping[str, np.ndarray]) -> _Repro:
    import onnx

    nodes = [model.graph.node[i] for i in positions]
    produced = {o for n in nodes for o in n.output if o}
    initializers = {t.name: t for t in model.graph.initializer}
    dynamic = _dynamic_tensors(model)
    runtime, constants, kept = {}, {}, []
    for node in nodes:
        for name in node.input:
            if not name or name in produced or name in runtime or name in constants or name in kept:
                continue
            if name in initializers:
                kept.append(name)
            elif name in dynamic:
                runtime[name] = np.asarray(feed[name] if name in feed else reference[name])
            else:
                constants[name] = np.asarray(reference[name] if name in reference else feed[name])
    if not runtime:  # NNRt needs a runtime input: feed the first operand of the diverging node at run time
        first = next(n for n in nodes[-1].input if n and n not in produced)
        value = constants.pop(first, None)
        if value is None:
            kept.remove(first)
            from onnx import numpy_helper

            value = numpy_helper.to_array(initializers[first])
        runtime[first] = np.asarray(value)
    copies = []
    for node in nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copies.append(copy)
    outputs = {o: np.asarray(reference[o]) for o in nodes[-1].output if o and o in reference}
    return _Repro(copies, [initializers[n] for n in kept], runtime, constants, outputs, list(model.opset_import),
                  model.ir_version, list(model.functions), list(positions))


# ----------------------------------------------------------------------------------------------------------------
# the reproducer


def _target(report: ParityReport) -> LayerResult:
    return report.culprit or report.first_divergence


def repro_model(report: ParityReport, plan: _Repro | None = None):
    """The repro as an ONNX ModelProto (see :func:`extract_repro`); ``plan``: another set of nodes than the
    report's."""
    import onnx
    from onnx import helper, numpy_helper

    plan = plan or report._repro
    if plan is None:
        raise UserError("there is no divergence to reproduce (run the per-layer check first; every layer agreed)"
                        if report.layers is not None else "extracting a repro needs the per-layer check")

    def info(name, array):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))

    initializers = list(plan.initializers) + [numpy_helper.from_array(v, n) for n, v in plan.constant_inputs.items()]
    divergence = _target(report)
    graph = helper.make_graph(plan.nodes, f"repro_{safe_file_name(divergence.node)}",
                              [info(n, v) for n, v in plan.runtime_inputs.items()],
                              [info(n, v) for n, v in plan.outputs.items()], initializers)
    model = helper.make_model(graph, opset_imports=plan.opset_imports, producer_name="nnrt-onnx check",
                              doc_string=f"reproduces the divergence at ONNX node {divergence.node!r} "
                                         f"({divergence.op_type}) of {report.model}")
    # constants the source computed (ConstantOfShape ...) become initializers, which IR < 4 would also want as inputs
    model.ir_version = max(plan.ir_version, 4)
    model.functions.extend(plan.functions)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise UserError(f"cannot build the repro of {divergence.node!r}: {str(exc).splitlines()[0]}") from None
    return model


def _reproduces(report: ParityReport, plan: _Repro) -> bool:
    """Whether the repro of ``plan``, checked on its own, still disagrees beyond tolerance."""
    from ..errors import NNRtError
    from ..onnx_import import ConversionError

    source = report._source
    try:
        again = check_model(repro_model(report, plan), plan.runtime_inputs, rtol=source.rtol, atol=source.atol,
                            device=source.device, float64_opinion=False, label="repro")
    except (UserError, ConversionError, NNRtError):
        return False
    except Exception:  # noqa: BLE001 - a candidate that cannot be built or run does not reproduce; others are tried
        return False
    return not all(c.within for c in again.outputs)


def _grown(model, positions: Sequence[int], levels: int) -> list[int]:
    """``positions`` with the nodes up to ``levels`` steps upstream of them (through run-time tensors)."""
    nodes = model.graph.node
    producer = {o: i for i, node in enumerate(nodes) for o in node.output if o}
    dynamic = _dynamic_tensors(model)
    current, frontier = set(positions), set(positions)
    for _ in range(levels):
        frontier = {producer[name] for p in frontier for name in nodes[p].input
                    if name in dynamic and name in producer} - current
        if not frontier:
            break
        current |= frontier
    return sorted(current)


def reproducing_plan(report: ParityReport) -> tuple[_Repro, bool, list[int]]:
    """(plan, reproduces, sizes tried): the report's repro if it fails on its own; otherwise grown upstream --
    1, 2, 4 ... levels of producers, then bisected to the fewest levels that fail -- until it does. When even
    everything upstream does not, the original plan with ``reproduces`` False."""
    plan, source = report._repro, report._source
    if plan is None or source is None:
        return plan, False, []
    tried = [len(plan.nodes)]
    if _reproduces(report, plan):
        return plan, True, tried
    model, base = source.model, plan.positions

    def plan_at(level: int) -> _Repro:
        return _repro_plan(model, _grown(model, base, level), source.feed, source.reference)

    failing, level, previous = 0, 1, list(base)
    while True:
        positions = _grown(model, base, level)
        if positions == previous:  # nothing more upstream
            return plan, False, tried
        candidate = _repro_plan(model, positions, source.feed, source.reference)
        tried.append(len(positions))
        if _reproduces(report, candidate):
            best, low, high = candidate, failing, level
            while high - low > 1:  # the fewest levels that still fail
                middle = (low + high) // 2
                smaller = plan_at(middle)
                if smaller.positions == best.positions:  # the same nodes: it fails, nothing to run
                    high = middle
                    continue
                tried.append(len(smaller.nodes))
                if _reproduces(report, smaller):
                    best, high = smaller, middle
                else:
                    low = middle
            return best, True, tried
        failing, previous, level = level, positions, level * 2


def extract_repro(report: ParityReport, directory: str | os.PathLike) -> Path:
    """Write ``repro.onnx`` (the diverging node -- with the nodes fused into it -- fed with the values it saw:
    constants as initializers, run-time tensors as inputs), each input as ``<name>.npy`` and all of them as
    ``inputs.npz``, and ``repro.json`` (what it is, how to run it, whether it reproduces). Returns the directory.

    The node is the culprit of the float64 referee when there is one, else the first divergence. The repro is run
    before it is written: when it does not fail on its own, it grows upstream until it does
    (:func:`reproducing_plan`); ``repro.json`` records ``"reproduces"`` and ``report.repro`` says the same.

    Atomic: everything is written to a temporary directory next to ``directory`` first; a new directory is then
    renamed into place, and an existing one receives each file by ``os.replace`` with ``repro.json`` last.
    """
    repro_model(report)  # a clear error when there is nothing to reproduce
    plan, reproduces, tried = reproducing_plan(report)
    report._repro = plan
    model = repro_model(report, plan)
    target = Path(directory)
    parent = target.parent if str(target.parent) else Path(".")
    if target.exists() and not target.is_dir():
        raise UserError(f"{target}: exists and is not a directory")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)  # mkdtemp makes 0700; the repro gets the usual permissions
    except OSError as exc:
        raise UserError(cannot("create", target, exc)) from None
    try:
        files: dict[str, str] = {}
        taken = {"repro.onnx", "repro.json", "inputs.npz"}
        for name, value in plan.runtime_inputs.items():
            file = f"{safe_file_name(name)}.npy"
            stem, n = file[:-4], 1
            while file in taken:
                n += 1
                file = f"{stem}_{n}.npy"
            taken.add(file)
            files[name] = file
            _write_bytes(staging / file, _npy(value))
        buffer = io.BytesIO()
        np.savez(buffer, **plan.runtime_inputs)
        _write_bytes(staging / "inputs.npz", buffer.getvalue())
        _write_bytes(staging / "repro.onnx", model.SerializeToString())
        divergence = _target(report)
        shown = target.as_posix()
        command = f"nnrt-onnx check {shown}/repro.onnx --input {shown}/inputs.npz"
        if report._source is not None:
            outputs = {o.name for o in model.graph.output}
            for option, given in (("--rtol", report._source.rtol), ("--atol", report._source.atol)):
                for name, value in (given.items() if isinstance(given, Mapping) else [(None, given)]):
                    if value is not None and (name is None or name in outputs):
                        command += f" {option} {'' if name is None else name + '='}{value:g}"
        if divergence.verdict in f64.ACCEPTED:
            command += " --strict"  # the referee clears this disagreement: only --strict makes it fail
        manifest = {
            "source_model": report.model,
            "node": divergence.node, "op_type": divergence.op_type, "fused_with": divergence.fused_with,
            "verdict": divergence.verdict,
            "nodes": [n.name or n.output[0] for n in plan.nodes],
            "reproduces": reproduces, "sizes_tried": tried,
            "model": "repro.onnx", "inputs": files, "inputs_npz": "inputs.npz",
            "reference_outputs": {n: {"dtype": str(v.dtype), "shape": list(v.shape)} for n, v in plan.outputs.items()},
            "divergence": [c.to_dict() for c in divergence.outputs],
            "command": command,
        }
        _write_bytes(staging / "repro.json", (json.dumps(json_safe(manifest), indent=1) + "\n").encode())
        report.repro = {"path": str(target), "reproduces": reproduces, "nodes": len(plan.nodes),
                        "sizes_tried": tried, "command": command, "node": divergence.node}
        if not target.exists():
            os.rename(staging, target)
            return target
        for file in sorted(os.listdir(staging), key=lambda f: f == "repro.json"):  # repro.json last
            os.replace(staging / file, target / file)
        return target
    except OSError as exc:
        raise UserError(f"{cannot('write', target, exc)} (the repro)") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _write_bytes(path: Path, data: bytes) -> None:
    with open(path, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())


__all__ = ["Comparison", "FLOAT_TOLERANCES", "LayerResult", "ParityReport", "check_model", "compare",
           "extract_repro", "json_safe", "load_checked", "repro_model", "reproducing_plan", "runtime_input_names",
           "tolerances_for"]
