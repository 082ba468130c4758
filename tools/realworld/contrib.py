"""Models built with onnxruntime's own tools, whose graphs hold its contrib operators (com.microsoft).

* ``onnxruntime.quantization.quantize_dynamic`` of small torch models: an MLP and a CNN (DynamicQuantizeLinear,
  MatMulInteger, ConvInteger: default-domain ops) and a bidirectional LSTM classifier (DynamicQuantizeLSTM);
* the same quantized models after onnxruntime's own graph optimizer (a session with ORT_ENABLE_EXTENDED saving
  ``optimized_model_filepath``), which fuses the quantized products into DynamicQuantizeMatMul, and into
  MatMulIntegerToFloat where one quantized input feeds several products;
* ``onnxruntime.transformers.optimizer.optimize_model`` of a tiny BERT (model_type="bert": EmbedLayerNormalization
  with its mask, Attention with a mask index, SkipLayerNormalization, BiasGelu) and a tiny GPT-2
  (model_type="gpt2": EmbedLayerNormalization with position ids, unidirectional Attention, SkipLayerNormalization,
  FastGelu), GPT-2 as onnxruntime's GPT-2 tooling exports it (attention mask, past / present key-value states: one
  tiny GPT-2 per committed fusion keeps tests/data small), and a tiny T5 encoder
  (model_type="t5": SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization);
* and those fused BERT and GPT-2 quantized by quantize_dynamic, onnxruntime's documented flow for
  transformers (QAttention, QEmbedLayerNormalization).

The transformers models are built from configurations with tiny sizes (hidden 32, 2 layers, vocabulary 64) and
seeded random weights (every parameter perturbed, so no LayerNorm is the identity and no bias is zero). BERT is
transformers' BertModel (eager attention). GPT-2 is transformers' GPT2Model computed by the attention code of
transformers 2.x-4.x (the ``Conv1D`` addmm, the ``bias`` causal buffer and ``torch.where`` with -10000, the layer
past concatenated and stacked into the present), which is the graph onnxruntime.transformers' GPT-2 fusions match:
the module checks that it computes the same as GPT2Model before exporting.

A plugin of ``tools/make_realworld_models.py``: :func:`models` returns entries with a name, a function building the
ONNX model, example inputs (an npz-able dict) and constant inputs. Standalone (torch, transformers and onnxruntime
come from the generator virtualenv; never runtime or test dependencies)::

    /work/venv-gen/bin/python tools/realworld/contrib.py OUT_DIR [--only NAME,...]

writes ``OUT_DIR/<name>.onnx`` and ``OUT_DIR/<name>.npz`` (the inputs, for ``nnrt-onnx check MODEL --input NPZ``).
tests/data/realworld/contrib/ holds what it writes (tests/onnx/test_contrib_models.py checks each).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np

SEED = 0
VOCAB, HIDDEN, LAYERS, HEADS, POSITIONS = 64, 32, 2, 4, 32


if __package__:
    from . import CorpusModel as Entry  # the corpus script's plugin interface
else:  # run as a script: python tools/realworld/contrib.py OUT_DIR
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from realworld import CorpusModel as Entry


# -- helpers -------------------------------------------------------------------------------------------------------

def _torch():
    import torch

    torch.manual_seed(SEED)
    return torch


def _export(module, args, path: Path, input_names, output_names, dynamic_axes=None, opset: int = 13) -> None:
    import torch

    torch.onnx.export(module.eval(), tuple(args), str(path), input_names=list(input_names),
                      output_names=list(output_names), opset_version=opset, dynamo=False,
                      dynamic_axes=dynamic_axes or {})


def _quantized(module, example, directory: Path, per_channel: bool, weight_type: str, dynamic_axes=None) -> Path:
    """quantize_dynamic of the torch module exported to ONNX (input x, output y), with ``reduce_range`` (7-bit
    weights, onnxruntime's option for CPUs without VNNI): |w| <= 64 keeps every byte-pair sum of its u8s8 kernels
    (255 * 64 * 2 = 32640) within int16, so onnxruntime's results are exact on every CPU and the models can be
    checked against it anywhere. (quantize_dynamic makes LSTM weights int8 whatever ``weight_type`` says.)"""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    float_path, quant_path = directory / "float.onnx", directory / "quantized.onnx"
    _export(module, [example], float_path, ["x"], ["y"], dynamic_axes)
    quantize_dynamic(str(float_path), str(quant_path), per_channel=per_channel, reduce_range=True,
                     weight_type=QuantType.QInt8 if weight_type == "int8" else QuantType.QUInt8)
    return quant_path


def _ort_optimized(path: Path) -> Path:
    """The model as onnxruntime's graph optimizer leaves it (extended level: its contrib fusions, no layout change)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(path.with_name(path.stem + ".ortopt.onnx"))
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return Path(options.optimized_model_filepath)


def _load(path: Path):
    import onnx

    model = onnx.load(str(path))
    model.producer_name = f"{model.producer_name} / nnrt_onnx tools/realworld/contrib.py"
    return model


def _perturbed(model, scale: float = 0.05):
    torch = _torch()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * scale)
    return model


# -- quantize_dynamic: MLP, CNN, LSTM ------------------------------------------------------------------------------

def _mlp():
    torch = _torch()

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = torch.nn.Linear(16, 32)
            self.out = torch.nn.Linear(32, 10)

        def forward(self, x):
            return self.out(torch.relu(self.hidden(x)))

    return MLP()


def _two_heads():
    torch = _torch()

    class TwoHeads(torch.nn.Module):
        """One input quantized once, feeding two products: onnxruntime fuses each into MatMulIntegerToFloat."""

        def __init__(self):
            super().__init__()
            self.value = torch.nn.Linear(16, 12)
            self.gate = torch.nn.Linear(16, 12, bias=False)

        def forward(self, x):
            return self.value(x) * torch.sigmoid(self.gate(x))

    return TwoHeads()


def _cnn():
    torch = _torch()

    class CNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.conv2 = torch.nn.Conv2d(8, 8, 3, stride=2)
            self.fc = torch.nn.Linear(8 * 3 * 3, 5)

        def forward(self, x):
            x = torch.relu(self.conv1(x))
            x = torch.relu(self.conv2(x))
            return self.fc(torch.flatten(x, 1))

    return CNN()


def _lstm():
    torch = _torch()

    class LSTMClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 16, batch_first=True, bidirectional=True)
            self.fc = torch.nn.Linear(32, 4)

        def forward(self, x):
            y, _ = self.lstm(x)
            return self.fc(y[:, -1])

    return LSTMClassifier()


def _inputs(name: str, shape) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return {"x": rng.standard_normal(shape).astype(np.float32)}


def _quantized_entry(name: str, factory, shape, per_channel: bool, weight_type: str, fused: bool, notes: str) -> Entry:
    inputs = _inputs(name, shape)

    def build():
        torch = _torch()
        with tempfile.TemporaryDirectory() as tmp:
            path = _quantized(factory(), torch.from_numpy(inputs["x"]), Path(tmp), per_channel, weight_type)
            return _load(_ort_optimized(path) if fused else path)

    return Entry(name, build, inputs, note=notes)


# -- transformers: BERT, GPT-2 -------------------------------------------------------------------------------------

def _bert_entry() -> Entry:
    rng = np.random.default_rng(SEED + 1)
    batch, seq = 2, 8
    input_ids = rng.integers(0, VOCAB, (batch, seq)).astype(np.int64)
    attention_mask = np.ones((batch, seq), np.int64)
    attention_mask[1, 5:] = 0  # the second sentence is right-padded
    token_type_ids = np.zeros((batch, seq), np.int64)
    token_type_ids[:, 4:] = 1
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}

    def build():
        torch = _torch()
        import transformers
        from onnxruntime.transformers.optimizer import optimize_model

        config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                                         num_attention_heads=HEADS, intermediate_size=2 * HIDDEN,
                                         max_position_embeddings=POSITIONS, type_vocab_size=2)
        config._attn_implementation = "eager"  # the attention graph onnxruntime.transformers fuses
        bert = _perturbed(transformers.BertModel(config)).eval()

        class Bert(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask, token_type_ids):
                out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
                return out.last_hidden_state, out.pooler_output

        names = list(inputs)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bert.onnx"
            _export(Bert(), [torch.from_numpy(inputs[n]) for n in names], path, names,
                    ["last_hidden_state", "pooler_output"], {n: {0: "batch", 1: "sequence"} for n in names}, opset=17)
            optimized = optimize_model(str(path), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN)
            optimized.save_model_to_file(str(Path(tmp) / "bert.fused.onnx"))
            return _load(Path(tmp) / "bert.fused.onnx")

    return Entry("bert_fused", build, inputs, note="tiny BERT, onnxruntime.transformers optimize_model(bert)")


def _gpt2_module():
    """transformers' GPT2Model (tiny, perturbed weights) computed with transformers 2.x-4.x's attention code."""
    torch = _torch()
    import transformers

    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS,
                                     n_positions=POSITIONS, n_inner=2 * HIDDEN, use_cache=False, bos_token_id=0,
                                     eos_token_id=0)
    config._attn_implementation = "eager"
    hf = _perturbed(transformers.GPT2Model(config)).eval()
    head = HIDDEN // HEADS

    class Conv1D(torch.nn.Module):
        def __init__(self, conv):
            super().__init__()
            self.weight, self.bias = conv.weight, conv.bias

        def forward(self, x):
            size_out = x.size()[:-1] + (self.weight.size(-1),)
            return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)

    class Attention(torch.nn.Module):
        def __init__(self, attention):
            super().__init__()
            self.c_attn, self.c_proj = Conv1D(attention.c_attn), Conv1D(attention.c_proj)
            self.register_buffer("bias", torch.tril(torch.ones(POSITIONS, POSITIONS, dtype=torch.bool))
                                 .view(1, 1, POSITIONS, POSITIONS))
            self.register_buffer("masked_bias", torch.tensor(-1e4))

        def split(self, x):
            return x.view(*x.size()[:-1], HEADS, head).permute(0, 2, 1, 3)

        def forward(self, x, past=None, mask=None):
            q, k, v = (self.split(t) for t in self.c_attn(x).split(HIDDEN, dim=2))
            present = None
            if past is not None:
                k, v = torch.cat((past[0], k), dim=-2), torch.cat((past[1], v), dim=-2)
                present = torch.stack((k, v))
            w = torch.matmul(q, k.transpose(-1, -2)) / (float(v.size(-1)) ** 0.5)
            nd, ns = w.size(-2), w.size(-1)  # the causal window sized from the scores, as the fusions expect
            w = torch.where(self.bias[:, :, ns - nd:ns, :ns], w, self.masked_bias.to(w.dtype))
            if mask is not None:
                w = w + mask
            a = torch.matmul(torch.nn.Softmax(dim=-1)(w), v).permute(0, 2, 1, 3).contiguous()
            return self.c_proj(a.view(*a.size()[:-2], HIDDEN)), present

    class GPT2(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.hf = hf
            self.attn = torch.nn.ModuleList([Attention(block.attn) for block in hf.h])
            self.fc = torch.nn.ModuleList([Conv1D(block.mlp.c_fc) for block in hf.h])
            self.proj = torch.nn.ModuleList([Conv1D(block.mlp.c_proj) for block in hf.h])

        def forward(self, input_ids, position_ids=None, attention_mask=None, *past):
            if position_ids is None:
                position_ids = torch.arange(0, input_ids.size(-1), dtype=torch.long).unsqueeze(0)
            h = self.hf.wte(input_ids) + self.hf.wpe(position_ids)
            mask = None
            if attention_mask is not None:
                mask = (1.0 - attention_mask.view(input_ids.size(0), -1)[:, None, None, :].to(h.dtype)) * -10000.0
            presents = []
            for i, block in enumerate(self.hf.h):
                a, present = self.attn[i](block.ln_1(h), past[i] if past else None, mask)
                h = h + a
                presents.append(present)
                m = self.fc[i](block.ln_2(h))
                m = 0.5 * m * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (m + 0.044715 * torch.pow(m, 3.0))))
                h = h + self.proj[i](m)
            return (self.hf.ln_f(h), *presents) if past else self.hf.ln_f(h)

    module = GPT2().eval()
    ids = torch.randint(0, VOCAB, (2, 5))
    with torch.no_grad():  # the same model as transformers' GPT2Model
        difference = (module(ids) - hf(input_ids=ids).last_hidden_state).abs().max().item()
    if difference > 1e-5:
        raise RuntimeError(f"the GPT-2 re-implementation differs from transformers' GPT2Model by {difference}")
    return module


def _gpt2_past_entry() -> Entry:
    rng = np.random.default_rng(SEED + 3)
    batch, seq, past_len = 2, 3, 4
    attention_mask = np.ones((batch, past_len + seq), np.int64)
    attention_mask[1, :2] = 0  # the second sequence is left-padded
    inputs = {"input_ids": rng.integers(0, VOCAB, (batch, seq)).astype(np.int64),
              "position_ids": np.tile(np.arange(past_len, past_len + seq, dtype=np.int64), (batch, 1)),
              "attention_mask": attention_mask,
              **{f"past_{i}": (rng.standard_normal((2, batch, HEADS, past_len, HIDDEN // HEADS)) * 0.5)
                 .astype(np.float32) for i in range(LAYERS)}}

    def build():
        torch = _torch()
        from onnxruntime.transformers.optimizer import optimize_model

        module = _gpt2_module()
        names = list(inputs)
        dynamic = {"input_ids": {0: "batch", 1: "sequence"}, "position_ids": {0: "batch", 1: "sequence"},
                   "attention_mask": {0: "batch", 1: "total"},
                   **{f"past_{i}": {1: "batch", 3: "past"} for i in range(LAYERS)}}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "gpt2_past.onnx"
            _export(module, [torch.from_numpy(inputs[n]) for n in names], path, names,
                    ["last_hidden_state", *[f"present_{i}" for i in range(LAYERS)]], dynamic, opset=17)
            optimized = optimize_model(str(path), model_type="gpt2", num_heads=HEADS, hidden_size=HIDDEN)
            optimized.save_model_to_file(str(Path(tmp) / "gpt2_past.fused.onnx"))
            return _load(Path(tmp) / "gpt2_past.fused.onnx")

    return Entry("gpt2_past_fused", build, inputs,
                 note="tiny GPT-2 with attention mask and past / present, optimize_model(gpt2)")


def _t5_entry() -> Entry:
    rng = np.random.default_rng(SEED + 4)
    inputs = {"input_ids": rng.integers(0, VOCAB, (2, 6)).astype(np.int64)}

    def build():
        torch = _torch()
        import transformers
        from onnxruntime.transformers.optimizer import optimize_model

        config = transformers.T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=2 * HIDDEN,
                                       num_layers=LAYERS, num_heads=HEADS, feed_forward_proj="relu")
        config._attn_implementation = "eager"
        encoder = _perturbed(transformers.T5EncoderModel(config)).eval()

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = encoder

            def forward(self, input_ids):
                return self.encoder(input_ids=input_ids).last_hidden_state

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "t5.onnx"
            _export(Encoder(), [torch.from_numpy(inputs["input_ids"])], path, ["input_ids"], ["last_hidden_state"],
                    {"input_ids": {0: "batch", 1: "sequence"}}, opset=17)
            optimized = optimize_model(str(path), model_type="t5", num_heads=HEADS, hidden_size=HIDDEN)
            optimized.save_model_to_file(str(Path(tmp) / "t5.fused.onnx"))
            return _load(Path(tmp) / "t5.fused.onnx")

    return Entry("t5_encoder_fused", build, inputs,
                 note="tiny T5 encoder, optimize_model(t5): SimplifiedLayerNormalization, "
                       "SkipSimplifiedLayerNormalization")


def _quantized_fused_entry(fused: Entry) -> Entry:
    """quantize_dynamic of an optimizer-fused transformer (onnxruntime's documented BERT / GPT-2 flow: optimize, then
    quantize): QAttention, QEmbedLayerNormalization, DynamicQuantizeLinear + MatMulInteger."""

    def build():
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with tempfile.TemporaryDirectory() as tmp:
            source, target = Path(tmp) / "fused.onnx", Path(tmp) / "quantized.onnx"
            onnx.save(fused.build(), str(source))
            # the onnx package has no com.microsoft schemas: tensors after a contrib node have no inferred type
            quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, reduce_range=True,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
            return _load(target)

    return Entry(f"{fused.name}_qdyn", build, fused.inputs, fused.constants,
                 note=f"{fused.note}, then quantize_dynamic (int8, reduce_range)")


# -- the plugin interface ------------------------------------------------------------------------------------------

def models() -> list[Entry]:
    return [
        _quantized_entry("mlp_qdyn", _mlp, (4, 16), False, "int8", False,
                         "quantize_dynamic (int8 per tensor): DynamicQuantizeLinear, MatMulInteger"),
        _quantized_entry("mlp_qdyn_fused", _mlp, (4, 16), False, "int8", True,
                         "quantize_dynamic + onnxruntime's optimizer: DynamicQuantizeMatMul"),
        _quantized_entry("two_heads_qdyn_fused", _two_heads, (3, 16), True, "uint8", True,
                         "quantize_dynamic (uint8 per channel) + optimizer: DynamicQuantizeLinear, "
                         "MatMulIntegerToFloat"),
        _quantized_entry("cnn_qdyn", _cnn, (2, 3, 8, 8), True, "int8", False,
                         "quantize_dynamic (int8 per channel): ConvInteger, MatMulInteger"),
        _quantized_entry("lstm_qdyn", _lstm, (2, 6, 8), False, "int8", False,
                         "quantize_dynamic: DynamicQuantizeLSTM (bidirectional), MatMulInteger"),
        _quantized_entry("lstm_qdyn_fused", _lstm, (2, 6, 8), True, "uint8", True,
                         "quantize_dynamic (uint8 per channel) + optimizer: DynamicQuantizeLSTM, "
                         "DynamicQuantizeMatMul"),
        _bert_entry(),
        _gpt2_past_entry(),
        _t5_entry(),
        _quantized_fused_entry(_bert_entry()),
        _quantized_fused_entry(_gpt2_past_entry()),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory for <name>.onnx and <name>.npz")
    parser.add_argument("--only", default="", help="comma-separated entry names")
    args = parser.parse_args(argv)
    import onnx

    args.out.mkdir(parents=True, exist_ok=True)
    wanted = {n for n in args.only.split(",") if n}
    for entry in models():
        if wanted and entry.name not in wanted:
            continue
        model = entry.build()
        onnx.save(model, str(args.out / f"{entry.name}.onnx"))
        np.savez(args.out / f"{entry.name}.npz", **entry.inputs, **entry.constants)
        ops = sorted({f"{n.domain + '.' if n.domain else ''}{n.op_type}" for n in model.graph.node})
        size = (args.out / f"{entry.name}.onnx").stat().st_size
        print(f"{entry.name}: {size / 1024:.1f} KiB, {len(model.graph.node)} nodes: {', '.join(ops)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
