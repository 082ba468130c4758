"""The quantized corpus of issue 15: torch nets quantized by onnxruntime's own tools.

Four torch nets (seeded random weights, batch norms with perturbed statistics):

* ``resnet``: a ResNet-18 style classifier (3x3 convolutions, batch norms, ReLU, basic blocks with residual adds, a
  strided 1x1 downsample, max pool, global average pool, flatten, a dense head);
* ``mobilenet``: a MobileNetV2 style net (ReLU6, inverted residual blocks with depthwise convolutions, linear
  bottlenecks with residual adds, global average pool, a dense head);
* ``unet``: a small U-Net (two levels, max pool, a transposed convolution and a nearest 2x upsample (Resize),
  skip concatenations, a sigmoid head);
* ``transformer``: a small transformer encoder (linear projections, multi-head attention with softmax, layer norm,
  GELU, a residual MLP, mean pooling, a dense head);
* ``unetbilinear``: the U-Net with a bilinear 2x upsample (Resize linear, half_pixel: what onnxruntime's QOperator
  quantizer leaves on the integers) instead of the nearest one (issue 28);
* ``mobilenetbn``: the MobileNetV2 net exported with its BatchNormalization kept (no constant folding) and
  quantized without onnxruntime's graph optimization (which would fold them), so each batch norm sits between two
  quantized convolutions (issue 28);

each exported with torch.onnx (opset 17) and then:

* ``onnxruntime.quantization.quantize_static`` (after ``quant_pre_process``) in the QDQ and the QOperator formats,
  per-tensor and per-channel weights, uint8 (``u8``) and int8 (``s8``) activations, int8 weights, calibrated on eight
  seeded random inputs; named ``<net>_<qdq|qop>_<pt|pc>_<u8|s8>``;
* ``onnxruntime.quantization.quantize_dynamic`` (int8 weights, per-tensor): ``<net>_dynamic``;
* the float model itself, ``<net>_float`` (the twin the quantized models are compared with);
* and, where torch's own quantization export works in this torch version, ``<net>_torchqdq``.

Standalone (torch and onnxruntime come from the generator virtualenv; never runtime or test dependencies)::

    /work/venv-gen/bin/python tools/quantized/make_corpus.py OUT_DIR [--only NAME,...]

writes ``OUT_DIR/<name>.onnx`` and ``OUT_DIR/<name>.npz`` (an input, for ``nnrt-onnx check MODEL --input NPZ``).
``tools/quantized/report.py OUT_DIR`` (project virtualenv) then converts and checks each model and prints
the corpus table of docs/quantization.md.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

SEED = 0
CALIBRATION = 8
IMAGE = (1, 3, 32, 32)
TOKENS = (1, 16, 32)


@dataclass(frozen=True)
class Net:
    name: str
    factory: Callable[[], object]
    shape: tuple[int, ...]
    keep_batchnorm: bool = False  # exported and quantized with the batch norms left unfolded


def _torch():
    import torch

    torch.manual_seed(SEED)
    return torch


def _randomized(module):
    """Seeded weights, and batch-norm statistics that are not the identity (so folding them matters)."""
    torch = _torch()
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, torch.nn.BatchNorm2d):
                sub.running_mean.copy_(torch.randn_like(sub.running_mean) * 0.1)
                sub.running_var.copy_(torch.rand_like(sub.running_var) * 0.5 + 0.75)
                sub.weight.copy_(torch.rand_like(sub.weight) * 0.5 + 0.75)
                sub.bias.copy_(torch.randn_like(sub.bias) * 0.1)
    return module.eval()


# -- the nets ---------------------------------------------------------------------------------------------------------

def _resnet():
    torch = _torch()
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            self.layers = nn.Sequential(Block(16, 16, 1), Block(16, 16, 1), Block(16, 32, 2), Block(32, 32, 1))
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))

    return _randomized(ResNet())


def _mobilenet():
    torch = _torch()
    nn = torch.nn

    def conv_bn(cin, cout, k, stride, groups=1, act=True):
        layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, nn.ReLU6()) if act else nn.Sequential(*layers)

    class Inverted(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            self.residual = stride == 1 and cin == cout
            self.body = nn.Sequential(conv_bn(cin, hidden, 1, 1), conv_bn(hidden, hidden, 3, stride, groups=hidden),
                                      conv_bn(hidden, cout, 1, 1, act=False))

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    class MobileNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(conv_bn(3, 16, 3, 2), Inverted(16, 16, 1, 1), Inverted(16, 24, 2, 4),
                                          Inverted(24, 24, 1, 4), Inverted(24, 32, 2, 4), Inverted(32, 32, 1, 4),
                                          conv_bn(32, 64, 1, 1))
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, 10))

        def forward(self, x):
            return self.classifier(torch.flatten(self.pool(self.features(x)), 1))

    return _randomized(MobileNet())


def _unet(upsample: str = "nearest"):
    torch = _torch()
    nn = torch.nn

    def double(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1, self.enc2, self.mid = double(3, 8), double(8, 16), double(16, 32)
            self.pool = nn.MaxPool2d(2)
            self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
            self.dec2 = double(32, 16)
            self.up1 = nn.Upsample(scale_factor=2, mode=upsample, **({} if upsample == "nearest" else
                                                                      {"align_corners": False}))
            self.dec1 = double(16 + 8, 8)
            self.head = nn.Conv2d(8, 2, 1)

        def forward(self, x):
            e1 = self.enc1(x)
            e2 = self.enc2(self.pool(e1))
            m = self.mid(self.pool(e2))
            d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
            d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
            return torch.sigmoid(self.head(d1))

    return _randomized(UNet())


def _transformer():
    torch = _torch()
    nn = torch.nn
    heads, width = 4, TOKENS[2]

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.norm1(x)).reshape(b, t, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
            attention = torch.softmax(q @ k.transpose(-1, -2) * (c // heads) ** -0.5, dim=-1)
            x = x + self.proj((attention @ v).transpose(1, 2).reshape(b, t, c))
            return x + self.mlp(self.norm2(x))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(Layer(), Layer())
            self.head = nn.Linear(width, 10)

        def forward(self, x):
            return self.head(self.layers(x).mean(1))

    return _randomized(Encoder())


NETS = [Net("resnet", _resnet, IMAGE), Net("mobilenet", _mobilenet, IMAGE), Net("unet", _unet, IMAGE),
        Net("transformer", _transformer, TOKENS), Net("unetbilinear", lambda: _unet("bilinear"), IMAGE),
        Net("mobilenetbn", _mobilenet, IMAGE, keep_batchnorm=True)]


# -- quantization -----------------------------------------------------------------------------------------------------

def _data(name: str, shape, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def _export(net: Net, path: Path) -> None:
    torch = _torch()
    example = torch.from_numpy(_data(net.name, net.shape, 1)[0])
    torch.onnx.export(net.factory(), (example,), str(path), input_names=["x"], output_names=["y"], opset_version=17,
                      dynamo=False, do_constant_folding=not net.keep_batchnorm)


class _Reader:
    def __init__(self, arrays):
        self.items = iter([{"x": a} for a in arrays])

    def get_next(self):
        return next(self.items, None)


def _static(net: Net, float_path: Path, out: Path, fmt: str, per_channel: bool, activations: str) -> None:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = float_path.with_name(float_path.stem + ".pre.onnx")
    if not prepared.exists():
        quant_pre_process(str(float_path), str(prepared), skip_optimization=net.keep_batchnorm)
    quantize_static(str(prepared), str(out), _Reader(_data(net.name + ".calibration", net.shape, CALIBRATION)),
                    quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator, per_channel=per_channel,
                    activation_type=QuantType.QUInt8 if activations == "u8" else QuantType.QInt8,
                    weight_type=QuantType.QInt8)


def _dynamic(float_path: Path, out: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(float_path), str(out), weight_type=QuantType.QInt8)


def _torch_qdq(net: Net, out: Path) -> bool:
    """torch's own post-training quantization (FX graph mode, fbgemm) exported to ONNX; False where this torch
    cannot export it."""
    torch = _torch()
    try:
        from torch.ao.quantization import get_default_qconfig_mapping
        from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

        model = net.factory()
        example = torch.from_numpy(_data(net.name, net.shape, 1)[0])
        prepared = prepare_fx(model, get_default_qconfig_mapping("fbgemm"), (example,))
        with torch.no_grad():
            for array in _data(net.name + ".calibration", net.shape, CALIBRATION):
                prepared(torch.from_numpy(array))
        quantized = convert_fx(prepared)
        torch.onnx.export(quantized, (example,), str(out), input_names=["x"], output_names=["y"], opset_version=17,
                          dynamo=False)
        return True
    except Exception as exc:  # noqa: BLE001 - report and go on: "if available"
        print(f"{net.name}_torchqdq: torch cannot export its quantized model: {str(exc).splitlines()[0][:160]}",
              file=sys.stderr)
        return False


def variants():
    """(suffix, builder(net, float_path, out_path) -> bool) of every model made from one net."""
    result = [("float", None)]
    for fmt in ("qdq", "qop"):
        for per_channel in (False, True):
            for activations in ("u8", "s8"):
                suffix = f"{fmt}_{'pc' if per_channel else 'pt'}_{activations}"
                result.append((suffix, (fmt, per_channel, activations)))
    result += [("dynamic", "dynamic"), ("torchqdq", "torch")]
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory for <name>.onnx and <name>.npz")
    parser.add_argument("--only", default="", help="comma-separated model names (or net names)")
    args = parser.parse_args(argv)
    import onnx

    args.out.mkdir(parents=True, exist_ok=True)
    wanted = {n for n in args.only.split(",") if n}
    for net in NETS:
        with tempfile.TemporaryDirectory() as tmp:
            float_path = Path(tmp) / "float.onnx"
            _export(net, float_path)
            for suffix, how in variants():
                name = f"{net.name}_{suffix}"
                if wanted and name not in wanted and net.name not in wanted:
                    continue
                out = args.out / f"{name}.onnx"
                if how is None:
                    onnx.save(onnx.load(str(float_path)), str(out))
                elif how == "dynamic":
                    _dynamic(float_path, out)
                elif how == "torch":
                    if not _torch_qdq(net, out):
                        continue
                else:
                    _static(net, float_path, out, *how)
                model = onnx.load(str(out))
                np.savez(args.out / f"{name}.npz", x=_data(net.name, net.shape, 1)[0])
                ops = sorted({f"{n.domain + '.' if n.domain else ''}{n.op_type}" for n in model.graph.node})
                print(f"{name}: {out.stat().st_size / 1024:.1f} KiB, {len(model.graph.node)} nodes: {', '.join(ops)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
