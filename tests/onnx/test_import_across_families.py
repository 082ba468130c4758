"""Import tests that span op families: sweeps over the element-wise and activation ops (every dtype, every schema
version, the float-only rejections), constant-only ops folding together, scalar round trips through shape and
indexing ops, the clear rejections of the spatial ops, and the ONNX pytorch-converted / pytorch-operator models whose
ops are all claimed (each against its stored outputs). The tests of one family are in tests/onnx_import.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx_import.import_support import (
    F16,
    F32,
    F64,
    FLOAT,
    F,
    V,
    check,
    check_graph_ort,
    check_model,
    const_tensor,
    graph_model,
    onnx_node,
    rand_normal,
    randn,
    rejects,
    x_of,
)
from support import onnx_model

from nnrt_onnx import Compilation, Executor
from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.ir.rows import find_row
from nnrt_onnx.onnx_import import from_onnx
from nnrt_onnx.onnx_import.importer import opset_of

# -- unary math and activations, several float dtypes ------------------------------------------------------------------

SPECIAL = np.array([-np.inf, -30.0, -2.5, -1.0, -1e-6, -0.0, 0.0, 1e-6, 0.5, 1.0, 2.5, 30.0, np.inf, np.nan], F32)


UNARY = [("Abs", 13, {}), ("Neg", 13, {}), ("Exp", 13, {}), ("Log", 13, {}), ("Sqrt", 13, {}), ("Reciprocal", 13, {}),
         ("Sin", 7, {}), ("Cos", 7, {}), ("Tan", 7, {}), ("Sinh", 9, {}), ("Cosh", 9, {}), ("Ceil", 13, {}),
         ("Floor", 13, {}), ("Round", 11, {}), ("Sign", 13, {}), ("Sigmoid", 13, {}), ("Tanh", 13, {}),
         ("Relu", 14, {}), ("LeakyRelu", 16, {"alpha": 0.3}), ("HardSigmoid", 6, {}),
         ("HardSigmoid", 6, {"alpha": 1 / 6, "beta": 0.5}), ("HardSwish", 14, {}), ("Elu", 6, {"alpha": 0.7}),
         ("Selu", 6, {}), ("Celu", 12, {"alpha": 2.0}), ("Softplus", 1, {}), ("Softsign", 1, {}), ("Mish", 18, {}),
         ("ThresholdedRelu", 10, {"alpha": 0.5}), ("Shrink", 9, {"lambd": 1.0, "bias": 0.5}),
         ("Gelu", 20, {}), ("Gelu", 20, {"approximate": "tanh"}), ("IsNaN", 13, {}), ("IsInf", 10, {}),
         ("IsInf", 10, {"detect_negative": 0}), ("IsInf", 10, {"detect_positive": 0}),
         ("IsInf", 10, {"detect_positive": 0, "detect_negative": 0}), ("Erf", 13, {})]


def _unary_id(case):
    op, _, attrs = case
    return op + "".join(f"-{k}={v:.3g}" if isinstance(v, float) else f"-{k}={v}" for k, v in attrs.items())


@pytest.mark.parametrize("dtype", [F32, F16, F64], ids=["float32", "float16", "float64"])
@pytest.mark.parametrize("case", UNARY, ids=[_unary_id(c) for c in UNARY])
def test_unary(rng, case, dtype):
    op, opset, attrs = case
    if op == "Erf" and dtype == F64:
        rejects(op, {"x": randn(rng, (2, 3), dtype)}, "unsupported_dtype", opset, attrs, match="float64")
        return
    if dtype == F16 and op in ("Round", "IsNaN", "IsInf", "Sign", "Shrink", "HardSigmoid", "Celu", "Selu", "Tan",
                               "Sinh", "Cosh", "Mish", "Softsign", "ThresholdedRelu", "Elu", "Softplus"):
        opset = max(opset, 13)
    if dtype != F32 and op in ("Celu", "IsInf"):
        opset = {"Celu": 28, "IsInf": 20}[op]  # the versions that take float16/float64
    x = np.concatenate([randn(rng, (30,)), SPECIAL]).astype(dtype).reshape(4, 11)
    if op in ("Log", "Sqrt"):
        x = np.abs(x)
    if op == "Sign" and dtype == F16:
        x = np.nan_to_num(x)  # onnxruntime's float16 Sign(NaN) is 0 (its float32 one and numpy's are NaN)
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype == F16 else {"rtol": 2e-5, "atol": 1e-6}
    check(op, {"x": x}, opset, attrs, **tol)


@pytest.mark.parametrize("op", ["Exp", "Log", "Sin", "Sigmoid", "Tanh", "Softplus", "Elu", "HardSigmoid", "Erf",
                                "LeakyRelu", "IsNaN", "Sinh"])
def test_float_only_ops_reject_integers_at_import(op):
    rejects(op, {"x": np.arange(6, dtype=np.int32).reshape(2, 3)}, "unsupported_dtype", 13, match="int32")


# Neg and Relu take signed types only (ONNX schemas): no unsigned case for them
_INTEGER_UNARY = [(op, dtype) for op in ["Abs", "Sign", "Neg", "Relu"] for dtype in [np.int8, np.int32, np.int64, np.uint8]
                  if not (np.dtype(dtype).kind == "u" and op in ("Neg", "Relu"))]


@pytest.mark.parametrize("op,dtype", _INTEGER_UNARY, ids=[f"{op}-{np.dtype(d).name}" for op, d in _INTEGER_UNARY])
def test_integer_unary(rng, op, dtype):
    x = rng.integers(-50 if np.dtype(dtype).kind == "i" else 0, 50, (3, 5)).astype(dtype)
    check(op, {"x": x}, 14)


# -- every schema version from opset 7 on ------------------------------------------------------------------------------

_SWEEP_OPS = {  # op: (inputs, attrs); inputs by role: "f" float32, "p" positive float32, "i" int32, "b" bool
    "Abs": ("f", {}), "Neg": ("f", {}), "Exp": ("f", {}), "Log": ("p", {}), "Sqrt": ("p", {}), "Reciprocal": ("p", {}),
    "Sin": ("f", {}), "Cos": ("f", {}), "Tan": ("f", {}), "Sinh": ("f", {}), "Cosh": ("f", {}), "Erf": ("f", {}),
    "Ceil": ("f", {}), "Floor": ("f", {}), "Round": ("f", {}), "Sign": ("f", {}), "Relu": ("f", {}),
    "Sigmoid": ("f", {}), "Tanh": ("f", {}), "LeakyRelu": ("f", {}), "PRelu": ("ff", {}), "HardSigmoid": ("f", {}),
    "HardSwish": ("f", {}), "Elu": ("f", {}), "Selu": ("f", {}), "Celu": ("f", {}), "Softplus": ("f", {}),
    "Softsign": ("f", {}), "Mish": ("f", {}), "Gelu": ("f", {}), "ThresholdedRelu": ("f", {}), "Shrink": ("f", {}),
    "Clip": ("f", {}), "Pow": ("pf", {}), "Max": ("fff", {}), "Min": ("ff", {}), "Mean": ("fff", {}),
    "Sum": ("ff", {}), "Mod": ("ff", {"fmod": 1}), "Equal": ("ii", {}), "Greater": ("ff", {}),
    "GreaterOrEqual": ("ff", {}), "Less": ("ff", {}), "LessOrEqual": ("ff", {}), "Not": ("b", {}),
    "And": ("bb", {}), "Or": ("bb", {}), "Xor": ("bb", {}), "Where": ("bff", {}), "Cast": ("f", {"to": 6}),
    "CastLike": ("ff", {}), "IsNaN": ("f", {}), "IsInf": ("f", {}), "Add": ("ff", {}), "Sub": ("ff", {}),
    "Mul": ("ff", {}), "Div": ("fp", {}), "Swish": ("f", {}),
}


def _sweep_cases():
    from onnx import defs

    cases = []
    for op in _SWEEP_OPS:
        versions = sorted({s.since_version for s in defs.get_all_schemas_with_history()
                           if s.name == op and s.domain == ""})
        for since in versions:
            opset = max(since, 7)
            if since < 7 and any(v <= 7 for v in versions if v > since):
                continue  # superseded before opset 7
            cases.append((op, opset))
    return cases


@pytest.mark.parametrize("op,opset", _sweep_cases(), ids=[f"{op}-{v}" for op, v in _sweep_cases()])
def test_every_version(rng, op, opset):
    roles, attrs = _SWEEP_OPS[op]
    make = {"f": lambda: randn(rng, (2, 3)), "p": lambda: np.abs(randn(rng, (2, 3))) + 0.5,
            "b": lambda: rng.random((2, 3)) > 0.5, "i": lambda: rng.integers(-2, 3, (2, 3)).astype(np.int32)}
    inputs = {f"i{k}": make[r]() for k, r in enumerate(roles)}
    check(op, inputs, opset, attrs)


# -- constant-only ops, scalars ----------------------------------------------------------------------------------------

def test_nonzero_constant_and_range_from_shape(rng):
    """Constant-only ops fold: NonZero of an initializer, Range up to a static Size."""
    x = x_of(rng, 2, 2)
    nodes = [helper.make_node("NonZero", ["m"], ["nz"]),
             helper.make_node("Cast", ["nz"], ["nzf"], to=FLOAT),
             helper.make_node("Size", ["x"], ["n"]),
             helper.make_node("Range", ["zero", "n", "one"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=FLOAT),
             helper.make_node("Reshape", ["rf", "shape"], ["rs"]),
             helper.make_node("Add", ["x", "rs"], ["y"]),
             helper.make_node("Add", ["y", "nzf"], ["z"])]
    inits = [const_tensor("m", np.array([[0, 3], [1, 0]], np.int32)), const_tensor("zero", np.int64(0)),
             const_tensor("one", np.int64(1)), const_tensor("shape", np.int64([2, 2]))]
    check_graph_ort(graph_model(nodes, [V("x", FLOAT, [2, 2])], [V("z", FLOAT, None)], 13, inits), {"x": x})


def test_scalar_round_trip(rng):
    x = x_of(rng, 1, 1)
    nodes = [helper.make_node("Squeeze", ["x"], ["s"]),
             helper.make_node("Unsqueeze", ["s"], ["u"], axes=[0]),
             helper.make_node("Reshape", ["u", "empty"], ["r"]),
             helper.make_node("Gather", ["g", "idx"], ["y"], axis=0),
             helper.make_node("Add", ["r", "y"], ["z"])]
    inits = [const_tensor("empty", np.zeros(0, np.int64)), const_tensor("g", np.float32([1.0, 2.0, 3.0])),
             const_tensor("idx", np.int64(-1))]
    check_graph_ort(graph_model(nodes, [V("x", FLOAT, [1, 1])], [V("z", FLOAT, None)], 11, inits), {"x": x})


# -- clear rejections --------------------------------------------------------------------------------------------------

REJECTIONS = {
    "conv_3d": (onnx_node("Conv", ["x", "w"]), {"x": rand_normal(1, 1, 1, 3, 3, 3)}, {"w": rand_normal(2, 1, 1, 2, 2, 2)},
                "3-D convolution"),
    "maxpool_indices": (onnx_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2]), {"x": rand_normal(1, 1, 1, 4, 4)}, {},
                        None),
    "lstm_clip": (onnx_node("LSTM", ["x", "w", "r"], hidden_size=2, clip=1.0), {"x": rand_normal(1, 2, 1, 3)},
                  {"w": rand_normal(2, 1, 8, 3), "r": rand_normal(3, 1, 8, 2)}, None),
    "lstm_sequence_lens": (onnx_node("LSTM", ["x", "w", "r", "", "sl"], hidden_size=2), {"x": rand_normal(1, 2, 2, 3)},
                           {"w": rand_normal(2, 1, 8, 3), "r": rand_normal(3, 1, 8, 2), "sl": np.asarray([2, 1], np.int32)},
                           None),
    "maxpool_window_only_in_padding": (onnx_node("MaxPool", ["x"], kernel_shape=[2, 2], pads=[2, 0, 0, 0]),
                                       {"x": rand_normal(1, 1, 1, 4, 4)}, {}, "entirely in the padding"),
    "quantize_blocked_to_uint8_per_tensor_param": (onnx_node("QuantizeLinear", ["x", "s"], axis=1, block_size=2),
                                                   {"x": rand_normal(1, 2, 4)}, {"s": np.ones((2, 2), F)}, None),
}


@pytest.mark.parametrize("case", sorted(REJECTIONS))
def test_rejected_with_reason(case):
    node, inputs, inits, words = REJECTIONS[case]
    model = onnx_model(node, inputs, inits, opset=21, outputs=list(node.output))
    if words is None:  # supported after all: must then be right
        check_model(model, inputs)
        return
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    assert words in str(info.value)


# -- ONNX's pytorch-converted / pytorch-operator models ----------------------------------------------------------------

_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"


_TORCH_MODELS = sorted(p.parent for kind in ("pytorch-converted", "pytorch-operator")
                       for p in (_DATA / kind).glob("*/model.onnx"))


def _unclaimed(model) -> list[str]:
    opset = opset_of(model)
    return sorted({n.op_type for n in model.graph.node
                   if n.domain not in ("", "ai.onnx") or find_row(n.op_type, opset) is None})


# Models that do not convert, with the exact reason (regenerate by hand: the reason the test prints).
_TORCH_KNOWN_FILE = Path(__file__).resolve().parent.parent / "data" / "pytorch_models_known_failures.json"
_TORCH_KNOWN: dict[str, str] = json.loads(_TORCH_KNOWN_FILE.read_text())


def _torch_id(folder: Path) -> str:
    return f"{folder.parent.name}/{folder.name}"


def _conversion_failure(model) -> tuple[str | None, object]:
    """(why the model does not convert, or None; the ImportResult)."""
    missing = _unclaimed(model)
    if missing:
        return f"ops without a mapping row at opset {opset_of(model)}: {missing}", None
    try:
        return None, from_onnx(model)
    except ConversionError as exc:
        return f"cannot convert: {exc.issues[0]}", None


def test_known_pytorch_failures_are_models_of_the_suite():
    stale = sorted(set(_TORCH_KNOWN) - {_torch_id(f) for f in _TORCH_MODELS})
    assert not stale, f"{_TORCH_KNOWN_FILE.name} lists models the installed onnx no longer ships: {stale}"


@pytest.mark.parametrize("folder", _TORCH_MODELS, ids=_torch_id)
def test_pytorch_model(folder):
    """Every model converts and matches its stored outputs, or is listed in pytorch_models_known_failures.json and
    fails to convert for exactly the listed reason (a model that newly fails, or fails differently, fails here)."""
    model = onnx.load(str(folder / "model.onnx"))
    failure, result = _conversion_failure(model)
    known = _TORCH_KNOWN.get(_torch_id(folder))
    if known is not None:
        assert failure is not None, f"{_torch_id(folder)} converts now: remove it from {_TORCH_KNOWN_FILE.name}"
        assert failure == known, f"{_torch_id(folder)} fails for another reason now: {failure}"
        pytest.xfail(known)
    assert failure is None, failure
    compilation = Compilation(result.model)
    compilation.build()
    executor = Executor(compilation)
    initializers = {t.name for t in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    for data_set in sorted(folder.glob("test_data_set_*")):
        feeds = {}
        for position, name in enumerate(input_names):
            tensor = onnx.TensorProto()
            tensor.ParseFromString((data_set / f"input_{position}.pb").read_bytes())
            feeds[name] = numpy_helper.to_array(tensor)
        arrays = [feeds[result.model.tensors[i].name] for i in result.model.inputs]
        outputs = executor.run_arrays(arrays)
        assert len(outputs) == len(output_names)
        for position, actual in enumerate(outputs):
            tensor = onnx.TensorProto()
            tensor.ParseFromString((data_set / f"output_{position}.pb").read_bytes())
            np.testing.assert_allclose(np.asarray(actual), numpy_helper.to_array(tensor), rtol=1e-3, atol=1e-4)
