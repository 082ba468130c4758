"""Small PyTorch models exported with dynamic axes through both exporters: the TorchScript one
(``torch.onnx.export(..., dynamo=False)``, Shape/Gather/Concat chains for every dynamic size) and the dynamo one
(``dynamo=True``: torch.export + onnxscript, symbolic dims). Seeded weights; needs torch and onnxscript.

Models: a CNN (conv/BN/ReLU, depthwise hardswish, max pool, global pool, x.view(x.size(0), -1), linear, softmax),
a U-Net (two levels, nearest upsampling by 2, skip concat, sigmoid mask), an LSTM tagger (linear, 1-layer LSTM with
zero initial states built from the batch size, linear on every step) and a transformer encoder (positional
embedding from arange(seq_len), one post-norm encoder layer, mean over the sequence).
"""
from __future__ import annotations

import io

import numpy as np
import onnx

from . import CorpusModel

OPSET = 17


def _torch():
    import torch  # noqa: F401  (ModuleNotFoundError here: the group is skipped)

    return torch


def _modules():
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.depthwise = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
            self.pointwise = nn.Conv2d(8, 12, 1)
            self.fc = nn.Linear(12, 5)

        def forward(self, image):
            x = F.relu(self.bn(self.conv(image)))
            x = F.max_pool2d(F.hardswish(self.depthwise(x)), 2, ceil_mode=True)
            x = F.adaptive_avg_pool2d(self.pointwise(x), 1)
            return torch.softmax(self.fc(x.view(x.size(0), -1)), dim=-1)

    class TinyUNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
            self.bottom = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
            self.up = nn.Sequential(nn.Conv2d(24, 8, 3, padding=1), nn.ReLU())
            self.head = nn.Conv2d(8, 2, 1)

        def forward(self, image):
            skip = self.down(image)
            x = self.bottom(F.max_pool2d(skip, 2))
            x = F.interpolate(x, scale_factor=2.0, mode="nearest")
            x = self.up(torch.cat([x, skip], dim=1))
            return torch.sigmoid(self.head(x))

    class LSTMTagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(10, 16)
            self.lstm = nn.LSTM(16, 24, batch_first=True)
            self.out = nn.Linear(24, 6)

        def forward(self, features):
            x = torch.tanh(self.embed(features))
            h0 = torch.zeros(1, x.size(0), 24)
            c0 = torch.zeros(1, x.size(0), 24)
            y, _ = self.lstm(x, (h0, c0))
            return self.out(y)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.positions = nn.Embedding(32, 16)
            self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
            self.norm = nn.LayerNorm(16)

        def forward(self, tokens):
            steps = torch.arange(tokens.size(1))
            x = tokens + self.positions(steps).unsqueeze(0)
            return self.norm(self.layer(x)).mean(dim=1)

    return {"cnn": SmallCNN, "unet": TinyUNet, "lstm": LSTMTagger, "transformer": Encoder}


# (name, module, example input name -> shape, dynamic axes of each input)
ARCHITECTURES = [
    ("cnn", "image", (2, 3, 16, 20), {0: "batch", 2: "height", 3: "width"}),
    ("unet", "image", (2, 3, 16, 24), {0: "batch", 2: "height", 3: "width"}),
    ("lstm", "features", (2, 7, 10), {0: "batch", 1: "steps"}),
    ("transformer", "tokens", (2, 6, 16), {0: "batch", 1: "steps"}),
]


def _export(architecture: str, dynamo: bool) -> onnx.ModelProto:
    torch = _torch()
    name, input_name, shape, axes = next(a for a in ARCHITECTURES if a[0] == architecture)
    torch.manual_seed(7)
    module = _modules()[name]().eval()
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        for m in module.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    example = (torch.from_numpy(_example(name, shape)),)
    buffer = io.BytesIO()
    if dynamo:
        dims = {axis: torch.export.Dim.AUTO for axis in axes}
        program = torch.onnx.export(module, example, dynamo=True, input_names=[input_name], output_names=["output"],
                                    dynamic_shapes={input_name: dims}, opset_version=18, verbose=False)
        model = program.model_proto
    else:
        torch.onnx.export(module, example, buffer, dynamo=False, input_names=[input_name], output_names=["output"],
                          dynamic_axes={input_name: axes, "output": {0: "batch"}}, opset_version=OPSET)
        model = onnx.load_from_string(buffer.getvalue())
    model.producer_name = f"{model.producer_name} ({'dynamo' if dynamo else 'torchscript'} exporter)"
    for node in model.graph.node:  # the dynamo exporter's debug info (stack traces, FX nodes): most of the file
        kept = [p for p in node.metadata_props if not p.key.startswith(("pkg.torch", "namespace"))]
        del node.metadata_props[:]
        node.metadata_props.extend(kept)
    return model


def _example(name: str, shape) -> np.ndarray:
    rng = np.random.default_rng(sum(map(ord, name)))
    array = rng.standard_normal(shape).astype(np.float32)
    return np.clip(array * 0.5 + 0.5, 0, 1).astype(np.float32) if name in ("cnn", "unet") else array


def models() -> list[CorpusModel]:
    _torch()
    entries = []
    for name, input_name, shape, axes in ARCHITECTURES:
        for dynamo in (False, True):
            exporter = "dynamo" if dynamo else "torchscript"
            entries.append(CorpusModel(
                name=f"torch_{name}_{exporter}",
                build=lambda name=name, dynamo=dynamo: _export(name, dynamo),
                inputs={input_name: _example(name, shape)},
                note=f"{name}, torch {exporter} exporter, dynamic {', '.join(axes.values())}"))
    return entries
