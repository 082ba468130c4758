"""Whole models built with onnxruntime's own tools (tools/realworld/contrib.py wrote tests/data/realworld/contrib/:
quantize_dynamic of a torch MLP, CNN and LSTM classifier, those after onnxruntime's graph optimizer, and
onnxruntime.transformers' optimize_model of a tiny BERT and GPT-2, and those quantized): each holds the operators the tool emits, converts,
and passes ``nnrt-onnx check MODEL --input MODEL.npz`` (native against onnxruntime).

Float models are checked at the default tolerances. The dynamically quantized ones were made with quantize_dynamic's
``reduce_range`` (7-bit weights, |w| <= 64: checked below), so onnxruntime's u8s8 kernels cannot saturate their int16
byte-pair sums on AVX2 CPUs without VNNI (255 * 64 * 2 = 32640) and stay exact on every CPU; they get ``--atol 1e-2``
(of each output's largest magnitude) all the same, because any last-bit float difference before a dynamic
quantization (a Sigmoid, a sum in another order) can flip a rounding tie of the uint8 activations: one step is 1/255
of their range and moves an output by about that fraction. Our integer arithmetic is exact
(tests/onnx_import/contrib/test_quantization.py and test_recurrent.py prove it against exact formulas); a wrong scale,
zero point or gate is far outside 1%."""
from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import numpy_helper
from support import REPO

from nnrt_onnx.onnx_import import from_onnx

DATA = REPO / "tests" / "data" / "realworld" / "contrib"
MS = "com.microsoft"

# model -> the operators its tool emitted that the conversion must handle, and whether it is dynamically quantized
MODELS = {
    "mlp_qdyn": ({("", "DynamicQuantizeLinear"): 2, ("", "MatMulInteger"): 2}, True),
    "mlp_qdyn_fused": ({(MS, "DynamicQuantizeMatMul"): 2}, True),
    "two_heads_qdyn_fused": ({("", "DynamicQuantizeLinear"): 1, (MS, "MatMulIntegerToFloat"): 2}, True),
    "cnn_qdyn": ({("", "ConvInteger"): 2, ("", "MatMulInteger"): 1, ("", "DynamicQuantizeLinear"): 3}, True),
    "lstm_qdyn": ({(MS, "DynamicQuantizeLSTM"): 1, ("", "MatMulInteger"): 1}, True),
    "lstm_qdyn_fused": ({(MS, "DynamicQuantizeLSTM"): 1, (MS, "DynamicQuantizeMatMul"): 1}, True),
    "bert_fused": ({(MS, "EmbedLayerNormalization"): 1, (MS, "Attention"): 2, (MS, "SkipLayerNormalization"): 4,
                    (MS, "BiasGelu"): 2}, False),
    "gpt2_past_fused": ({(MS, "EmbedLayerNormalization"): 1, (MS, "Attention"): 2,
                         (MS, "SkipLayerNormalization"): 4, (MS, "FastGelu"): 2}, False),
    "t5_encoder_fused": ({("", "SimplifiedLayerNormalization"): 1, (MS, "SkipSimplifiedLayerNormalization"): 4},
                         False),
    "bert_fused_qdyn": ({(MS, "QEmbedLayerNormalization"): 1, (MS, "QAttention"): 2, ("", "MatMulInteger"): 7,
                         (MS, "SkipLayerNormalization"): 4, (MS, "BiasGelu"): 2}, True),
    "gpt2_past_fused_qdyn": ({(MS, "EmbedLayerNormalization"): 1, (MS, "QAttention"): 2, ("", "MatMulInteger"): 6,
                              (MS, "SkipLayerNormalization"): 4, (MS, "FastGelu"): 2}, True),
}


def _inputs(name: str) -> dict[str, np.ndarray]:
    with np.load(DATA / f"{name}.npz", allow_pickle=False) as archive:
        return {k: archive[k] for k in archive.files}


def test_quantized_weights_are_7_bit_so_onnxruntime_is_exact_on_every_cpu():
    for name, (_, quantized) in MODELS.items():
        weights = [numpy_helper.to_array(t) for t in onnx.load(str(DATA / f"{name}.onnx")).graph.initializer]
        int8 = [w for w in weights if w.dtype == np.int8 and w.size > 1]
        assert all(np.abs(w.astype(np.int32)).max() <= 64 for w in int8), name
        assert bool(int8) or not quantized or name == "two_heads_qdyn_fused"  # uint8 weights: exact anyway


def test_every_model_of_the_folder_is_checked():
    assert sorted(p.stem for p in DATA.glob("*.onnx")) == sorted(MODELS)
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 500_000  # committed binaries stay small


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_model_holds_what_its_tool_emits_and_converts(name):
    model = onnx.load(str(DATA / f"{name}.onnx"))
    census = Counter((n.domain, n.op_type) for n in model.graph.node)
    expected, _ = MODELS[name]
    assert {op: census[op] for op in expected} == expected
    inputs = _inputs(name)
    result = from_onnx(model, input_shapes={k: list(v.shape) for k, v in inputs.items()})
    assert result.model.operations


@pytest.mark.parametrize("name", sorted(MODELS))
def test_nnrt_onnx_check_passes(cli_main, name):
    _, quantized = MODELS[name]
    args = ["check", str(DATA / f"{name}.onnx"), "--input", str(DATA / f"{name}.npz")]
    if quantized:
        args += ["--atol", "1e-2"]  # a flipped rounding tie of the dynamic quantization: see the module docstring
    result = CliRunner().invoke(cli_main, args)
    assert result.exit_code == 0, result.output
    assert "OK: all" in result.output and "OUTSIDE" not in result.output
