#!/usr/bin/env python3
"""Generate the torch-exported benchmark models of bench/bench_models.py into a cache directory.

Needs torch and transformers (never a project dependency): run it with a separate environment, e.g.

    /path/to/venv-with-torch/bin/python bench/gen_models.py [--out ~/.cache/nnrt_onnx_bench]

Every model is built from code in this file (no downloads), its weights seeded (torch.manual_seed(0)), exported
with torch.onnx.export (TorchScript exporter, opset 17), in eval mode (BatchNorm running statistics randomised so
folding is exercised). The models:

  mobilenet_v2   MobileNetV2 (width 1.0, 224x224), the torchvision architecture rewritten here
  resnet18_half  ResNet-18 with half the channels (32..256), 224x224
  unet_small     U-Net, 4 levels, 16..128 channels, 128x128, transposed-conv upsampling
  bert_tiny      BERT encoder, 2 layers, hidden 64, 4 heads, intermediate 256, seq 128 (transformers' BertModel)
  bert_tiny_seq16  the same encoder at sequence length 16 (the start-up benchmark's, bench/bench_startup.py)
  lstm_classifier  embedding 64 -> LSTM(64 -> 128), 1 layer, seq 64, batch 8 -> linear 10
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch
from torch import nn

DEFAULT_OUT = Path(os.environ.get("NNRT_BENCH_CACHE", Path.home() / ".cache" / "nnrt_onnx_bench"))


def _randomise_bn(model: nn.Module) -> None:
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)


# --------------------------------------------------------------------------------------------------------------
# MobileNetV2


def _conv_bn(i, o, k, s, groups=1, act=True):
    layers = [nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(o)]
    if act:
        layers.append(nn.ReLU6(inplace=True))
    return layers


class _InvertedResidual(nn.Module):
    def __init__(self, i, o, s, expand):
        super().__init__()
        hidden = i * expand
        layers = [] if expand == 1 else _conv_bn(i, hidden, 1, 1)
        layers += _conv_bn(hidden, hidden, 3, s, groups=hidden) + _conv_bn(hidden, o, 1, 1, act=False)
        self.conv = nn.Sequential(*layers)
        self.residual = s == 1 and i == o

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                    (6, 320, 1, 1)]
        layers = _conv_bn(3, 32, 3, 2)
        c = 32
        for t, o, n, s in settings:
            for k in range(n):
                layers.append(_InvertedResidual(c, o, s if k == 0 else 1, t))
                c = o
        layers += _conv_bn(c, 1280, 1, 1)
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, classes)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


# --------------------------------------------------------------------------------------------------------------
# ResNet-18 (half width)


class _Basic(nn.Module):
    def __init__(self, i, o, s):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o)
        self.c2, self.b2 = nn.Conv2d(o, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o)
        self.down = None if s == 1 and i == o else nn.Sequential(nn.Conv2d(i, o, 1, s, bias=False), nn.BatchNorm2d(o))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, width=32, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, c = [], width
        for k, o in enumerate((width, width * 2, width * 4, width * 8)):
            blocks += [_Basic(c, o, 1 if k == 0 else 2), _Basic(o, o, 1)]
            c = o
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


# --------------------------------------------------------------------------------------------------------------
# U-Net (small)


def _double(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(),
                         nn.Conv2d(o, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, base=16, levels=4, classes=2):
        super().__init__()
        chans = [base * 2 ** k for k in range(levels)]
        self.down = nn.ModuleList()
        c = 3
        for o in chans:
            self.down.append(_double(c, o))
            c = o
        self.mid = _double(c, c * 2)
        c *= 2
        self.up, self.dec = nn.ModuleList(), nn.ModuleList()
        for o in reversed(chans):
            self.up.append(nn.ConvTranspose2d(c, o, 2, 2))
            self.dec.append(_double(o * 2, o))
            c = o
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = nn.functional.max_pool2d(x, 2)
        x = self.mid(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
            x = dec(torch.cat([up(x), skip], 1))
        return self.head(x)


# --------------------------------------------------------------------------------------------------------------
# LSTM classifier


class LSTMClassifier(nn.Module):
    def __init__(self, vocab=1000, emb=64, hidden=128, classes=10):
        super().__init__()
        self.lstm = nn.LSTM(emb, hidden, batch_first=False)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):  # x: [T, B, emb] (embedded tokens)
        y, _ = self.lstm(x)
        return self.fc(y[-1])


def _export(model, args, path, input_names, output_names):
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, args, str(path), input_names=input_names, output_names=output_names,
                          opset_version=17, dynamo=False)


def _bert(path, seq=128):
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=256, max_position_embeddings=128, hidden_act="gelu")
    config._attn_implementation = "eager"
    model = BertModel(config, add_pooling_layer=False)

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = model

        def forward(self, ids):
            return self.bert(input_ids=ids).last_hidden_state

    ids = torch.randint(0, 1000, (1, seq), generator=torch.Generator().manual_seed(2))
    _export(Wrapped(), (ids,), path, ["input_ids"], ["hidden"])


MODELS = {
    "mobilenet_v2": lambda p: _export(MobileNetV2(), (torch.randn(1, 3, 224, 224),), p, ["x"], ["y"]),
    "resnet18_half": lambda p: _export(ResNet18(), (torch.randn(1, 3, 224, 224),), p, ["x"], ["y"]),
    "unet_small": lambda p: _export(UNet(), (torch.randn(1, 3, 128, 128),), p, ["x"], ["y"]),
    "bert_tiny": _bert,
    "bert_tiny_seq16": lambda p: _bert(p, seq=16),
    "lstm_classifier": lambda p: _export(LSTMClassifier(), (torch.randn(64, 8, 64),), p, ["x"], ["y"]),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"cache directory (default {DEFAULT_OUT})")
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--force", action="store_true", help="regenerate models already in the cache")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    for name in names:
        path = args.out / f"{name}.onnx"
        if path.exists() and not args.force:
            print(f"{path}: cached")
            continue
        torch.manual_seed(0)
        module_fn = MODELS[name]
        if name in ("mobilenet_v2", "resnet18_half", "unet_small"):
            # build once to randomise BatchNorm, then export that instance
            model = {"mobilenet_v2": MobileNetV2, "resnet18_half": ResNet18, "unet_small": UNet}[name]()
            _randomise_bn(model)
            size = 128 if name == "unet_small" else 224
            _export(model, (torch.randn(1, 3, size, size),), path, ["x"], ["y"])
        else:
            module_fn(path)
        print(f"{path}: {path.stat().st_size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
