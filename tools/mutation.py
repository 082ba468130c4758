"""Mutation testing: does the suite notice a small bug? One named mutant at a time, on a scratch copy of the tree.

    python tools/mutation.py                      # every mutant, each against its own test files
    python tools/mutation.py --list               # the mutants and their test files
    python tools/mutation.py -k quantize -k pool  # only mutants whose name contains one of these
    python tools/mutation.py --json out.json      # also write the results
    python tools/mutation.py --check              # only check that every mutant's original text is still there
    python tools/mutation.py --root OLD_CHECKOUT  # the same mutants against another checkout (an older commit):
                                                  # test files it lacks are dropped from the selections, said so

A mutant is (name, file, exact original text, replacement, test files that should kill it). The checkout is copied
once (without .git) to a scratch directory next to a link to ../shared (the spec folder the tests read); each mutant
is applied there alone, pytest runs the mutant's test files (``-x``, one process, PYTHONPATH = the scratch copy),
and the file is restored. Killed: pytest failed (the first failing test is reported); survived: pytest passed.
Before the mutants, the union of their test files runs on the unmutated copy and must pass (``--no-baseline``
skips that). The original text must occur exactly once in its file, so a mutant cannot silently stop applying
when the code moves: ``--check`` (and every run) fails naming it. Nothing here touches the checkout itself.

Run it alone (one pytest at a time on a shared machine); the full run takes about half an hour. docs/testing.md
("Mutation testing") has the latest score and explains every surviving mutant.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    original: str
    replacement: str
    tests: tuple[str, ...]
    why: str = ""  # what bug it stands for


# test files, by area
QUANT_KERNELS = ("tests/kernels/test_quantization.py", "tests/kernels/test_conv.py", "tests/kernels/test_linear.py",
                 "tests/kernels/test_pool.py")
CONV = ("tests/kernels/test_conv.py", "tests/test_geometry.py")
POOL = ("tests/kernels/test_pool.py", "tests/test_geometry.py")
EXPORT = ("tests/test_export.py",)
ROUNDTRIP = ("tests/onnx/test_roundtrip.py",)
IMPORT_CONV = ("tests/onnx_import/test_conv.py",)
IMPORT_POOL = ("tests/onnx_import/test_pool.py",)
VALIDATION = ("tests/test_op_validation.py",)
PARITY = ("tests/test_parity.py",)
SERIAL = ("tests/test_serialization.py",)
CONTRACT = ("tests/accel/test_contract.py",)  # the fast paths against the reference plan
TRANSFORMS = ("tests/test_transforms.py",)
REPORT = ("tests/test_html_report.py",)
BROWSER = ("tests/test_html_browser.py",)  # skips without chromium: its mutants then survive


def M(name, file, original, replacement, tests, why=""):
    return Mutant(name, file, original, replacement, tuple(tests), why)


MUTANTS: list[Mutant] = [
    # -- the six of issue 16 ----------------------------------------------------------------------------------------
    M("quantize-half-up", "nnrt_onnx/dtypes.py",
      "q = np.rint(np.asarray(real, dtype=np.float64) / scale + zero)",
      "q = np.floor(np.asarray(real, dtype=np.float64) / scale + zero + 0.5)", QUANT_KERNELS,
      "output quantization rounds ties up instead of to even"),
    M("quantize-floor", "nnrt_onnx/dtypes.py",
      "q = np.rint(np.asarray(real, dtype=np.float64) / scale + zero)",
      "q = np.floor(np.asarray(real, dtype=np.float64) / scale + zero)", QUANT_KERNELS,
      "output quantization truncates"),
    M("avg-pool-pad-mode-range-3", "mappings/ops/avg_pool.toml",
      'type = "OH_NN_AVG_POOL_PAD_MODE"\nmeaning = "pad mode 0=same, 1=valid (2 accepted as valid); a 4-element INT64 '
      'tensor here is taken as a pad list"\n[[param.variant]]\nto = "pad_mode"\ndtype = "INT8"\ncount = 1\n'
      'range = [0, 2]',
      'type = "OH_NN_AVG_POOL_PAD_MODE"\nmeaning = "pad mode 0=same, 1=valid (2 accepted as valid); a 4-element INT64 '
      'tensor here is taken as a pad list"\n[[param.variant]]\nto = "pad_mode"\ndtype = "INT8"\ncount = 1\n'
      'range = [0, 3]', VALIDATION, "AddOperation accepts pad mode 3"),
    M("batch-norm-default-epsilon", "mappings/ops/batch_norm.toml", "[defaults]\nepsilon = 0.0001",
      "[defaults]\nepsilon = 0.001", VALIDATION + EXPORT, "a wrong default, read by the kernel and the exporter alike"),
    M("export-conv-dilations-1", "nnrt_onnx/onnx_export/handlers/conv.py",
      '"dilations": _pair(ctx.args["dilation"], "dilation"),', '"dilations": [1, 1],', EXPORT + ROUNDTRIP,
      "the exporter drops the dilation"),
    M("parity-float32-rtol-10x", "nnrt_onnx/workflows/parity.py", '"float32": (1e-4, 1e-5),',
      '"float32": (1e-3, 1e-5),', PARITY, "check passes outputs 10x further apart"),

    # -- kernels ----------------------------------------------------------------------------------------------------
    M("dequantize-adds-zero-point", "nnrt_onnx/dtypes.py",
      "return ((np.asarray(q, dtype=np.float64) - zero) * scale).astype(out_dtype)",
      "return ((np.asarray(q, dtype=np.float64) + zero) * scale).astype(out_dtype)", QUANT_KERNELS),
    M("quantize-no-clamp-low", "nnrt_onnx/dtypes.py", "return np.clip(q, qmin, qmax).astype(np_dtype)",
      "return np.clip(q, qmin + 1, qmax).astype(np_dtype)", QUANT_KERNELS, "saturation one short at the bottom"),
    M("quant-dtype-cast-half-up", "nnrt_onnx/kernels/quantization.py",
      "q = np.rint(np.asarray(real, dtype=np.float64) / scale + zero)",
      "q = np.floor(np.asarray(real, dtype=np.float64) / scale + zero + 0.5)", ("tests/kernels/test_quantization.py",)),
    M("avg-pool-counts-padding", "nnrt_onnx/kernels/pool.py",
      "if pt + pb + pl + pr:  # padded cells", "if False:  # padded cells", POOL,
      "average pooling divides by the whole window (count_include_pad)"),
    M("ceil-mode-keeps-window-in-padding", "nnrt_onnx/geometry.py",
      "    if (out - 1) * stride >= size + pad_begin:\n        out -= 1\n    return out",
      "    return out", POOL, "ceil mode keeps a last window that starts in the end padding"),
    M("same-padding-odd-unit-first", "nnrt_onnx/geometry.py", "return (big, small) if lower else (small, big)",
      "return (small, big) if lower else (big, small)", CONV + POOL, "SAME puts the odd pad at the top/left"),
    M("same-output-floor", "nnrt_onnx/geometry.py", "return UNKNOWN if size < 0 else -(-size // stride)",
      "return UNKNOWN if size < 0 else size // stride + (size % stride > 1)", CONV + POOL,
      "SAME output size off by one when size % stride == 1"),
    M("dilated-extent", "nnrt_onnx/geometry.py", "return UNKNOWN if kernel < 0 else (kernel - 1) * dilation + 1",
      "return UNKNOWN if kernel < 0 else kernel + dilation - 1", CONV, "dilated window extent wrong for k > 2"),
    M("tap-range-off-by-one", "nnrt_onnx/kernels/_common.py", "    r0 = max(0, -(offset // stride))",
      "    r0 = max(0, -(offset // stride) + (offset < 0 and offset % stride == 0))", CONV + POOL,
      "a padded tap skips its first in-range output"),
    M("depthwise-multiplier-order", "nnrt_onnx/kernels/conv.py", "x = np.repeat(x, o // x.shape[3], axis=3)",
      "x = np.tile(x, (1, 1, 1, o // x.shape[3]))", CONV, "channel multiplier reads channel k % C, not k // mult"),
    M("softmax-default-axis-0", "nnrt_onnx/kernels/normalization.py",
      "    if a is None:  # the builder's \"omitted\" value is an empty list: the last axis (ONNX/NNAPI/TFLite default)\n"
      "        a = -1",
      "    if a is None:  # the builder's \"omitted\" value is an empty list: the last axis (ONNX/NNAPI/TFLite default)\n"
      "        a = 0", ("tests/kernels/test_normalization.py",),
      "expected equivalent: the kernel always receives the table default -1 (an empty AXIS tensor is rejected)"),
    M("batch-norm-epsilon-outside-sqrt", "nnrt_onnx/kernels/normalization.py",
      "inv = s / np.sqrt(v + work.type(epsilon))", "inv = s / (np.sqrt(v) + work.type(epsilon))",
      ("tests/kernels/test_normalization.py",)),
    M("round-half-away", "nnrt_onnx/kernels/elementwise.py", 'return _unary_float("ROUND", input, np.rint)',
      'return _unary_float("ROUND", input, lambda v: np.trunc(v + np.copysign(0.5, v)))',
      ("tests/kernels/test_elementwise.py",)),
    M("int-div-floors", "nnrt_onnx/kernels/elementwise.py",
      "            q = q + ((r != 0) & ((a < 0) != (b < 0))).astype(a.dtype)", "            q = q",
      ("tests/kernels/test_elementwise.py",), "integer DIV floors instead of truncating"),
    M("mod-floor", "nnrt_onnx/kernels/elementwise.py", "return _out(np.fmod(a, b), dt)",
      "return _out(np.mod(a, b), dt)", ("tests/kernels/test_elementwise.py",)),
    M("resize-half-pixel-shift", "nnrt_onnx/kernels/spatial.py", "src = (o + 0.5) * (in_size / out_size) - 0.5",
      "src = (o + 0.5) * (in_size / out_size) - 0.25", ("tests/kernels/test_spatial.py",)),
    M("norm-axis-negative", "nnrt_onnx/kernels/_common.py", "return axis + rank if axis < 0 else axis",
      "return axis + rank - 1 if axis < -1 else (rank - 1 if axis == -1 else axis)",
      ("tests/kernels/test_indexing.py", "tests/kernels/test_shape.py"), "axis -2 and below off by one"),
    M("lrn-alpha-per-window", "nnrt_onnx/kernels/normalization.py",
      "cdtype.type(alpha) * sqr_sum", "cdtype.type(alpha) / (2 * depth_radius + 1) * sqr_sum",
      ("tests/kernels/test_normalization.py",), "LRN divides alpha by the window (the ONNX convention)"),

    # -- import / export transforms -----------------------------------------------------------------------------------
    M("pads-onnx-to-tblr-order", "nnrt_onnx/ir/transforms.py",
      "    top, left, bottom, right = (int(v) for v in pads)\n    return [top, bottom, left, right]",
      "    top, left, bottom, right = (int(v) for v in pads)\n    return [top, left, bottom, right]",
      TRANSFORMS + IMPORT_CONV + IMPORT_POOL, "a registered transform no mapping row uses yet"),
    M("pads-tblr-to-onnx-order", "nnrt_onnx/ir/transforms.py",
      "    top, bottom, left, right = (int(v) for v in pads)\n    return [top, left, bottom, right]",
      "    top, bottom, left, right = (int(v) for v in pads)\n    return [top, bottom, left, right]",
      TRANSFORMS + EXPORT, "a registered transform no mapping row uses yet"),
    M("import-tblr-order", "nnrt_onnx/onnx_import/handlers/conv.py",
      'params[f"{prefix}_PAD"] = geometry.axes_to_pad_list(pads)',
      'params[f"{prefix}_PAD"] = geometry.axes_to_onnx_pads(pads)', IMPORT_CONV,
      "ONNX pads written into the pad list in ONNX order"),
    M("import-onnx-pads-as-pairs", "nnrt_onnx/onnx_import/handlers/_common.py",
      "return geometry.onnx_pads_to_axes(pads)", "return list(zip(pads[0::2], pads[1::2]))",
      IMPORT_CONV + IMPORT_POOL, "ONNX pads read as (begin, end) pairs"),
    M("import-same-lower-as-upper", "nnrt_onnx/onnx_import/handlers/_common.py",
      "return [geometry.auto_pad_padding(auto_pad, size,",
      'return [geometry.auto_pad_padding("SAME_UPPER" if auto_pad == "SAME_LOWER" else auto_pad, size,',
      IMPORT_CONV + IMPORT_POOL, "auto_pad SAME_LOWER puts the odd unit at the end"),
    M("export-same-odd-unit-first", "nnrt_onnx/onnx_export/handlers/conv.py",
      "    return geometry.axes_to_onnx_pads(axes)",
      "    return geometry.axes_to_onnx_pads([(e, b) for b, e in axes])", EXPORT),
    M("export-transposed-same-crop-ceil", "nnrt_onnx/onnx_export/handlers/conv.py",
      "            p1 = full - p0 - out", "            p0 += max(full - out, 0) % 2\n            p1 = full - p0 - out",
      EXPORT,
      "SAME transposed convolution crops the odd unit at the start"),
    M("export-lrn-alpha-not-scaled", "nnrt_onnx/onnx_export/handlers/normalization.py",
      '"alpha": alpha * size,', '"alpha": alpha,', EXPORT, "ONNX LRN divides alpha by the window"),
    M("export-batch-norm-onnx-default-epsilon", "nnrt_onnx/onnx_export/handlers/normalization.py",
      '        _channel_first(ctx, "BatchNormalization", list(ctx.node.inputs[1:]), epsilon=eps)',
      '        _channel_first(ctx, "BatchNormalization", list(ctx.node.inputs[1:]))', EXPORT,
      "the exported node falls back to ONNX's default epsilon 1e-5"),
    M("export-conv-pads-order", "nnrt_onnx/onnx_export/handlers/conv.py",
      "    return geometry.axes_to_onnx_pads(axes)", "    return geometry.axes_to_pad_list(axes)", EXPORT),
    M("export-pool-ignores-ceil", "nnrt_onnx/onnx_export/handlers/pool.py",
      'ceil = int(args.get("round_mode", 0)) == 1 and mode != 0', "ceil = False", EXPORT),
    M("export-avgpool-counts-pad", "nnrt_onnx/onnx_export/handlers/pool.py", 'attrs["count_include_pad"] = 0',
      'attrs["count_include_pad"] = 1', EXPORT),
    M("import-pool-ignores-ceil-mode", "nnrt_onnx/onnx_import/handlers/pool.py",
      'ceil_mode = int(ctx.attr("ceil_mode", 0))', "ceil_mode = 0", IMPORT_POOL),
    M("import-leaky-relu-default-alpha", "mappings/ops/leaky_relu.toml",
      'attrs.alpha = { param = "OH_NN_LEAKY_RELU_NEGATIVE_SLOPE", default = 0.01 }',
      'attrs.alpha = { param = "OH_NN_LEAKY_RELU_NEGATIVE_SLOPE", default = 0.02 }',
      ("tests/onnx_import/test_activation.py", "tests/onnx/test_import_across_families.py"),
      "the ONNX default of an omitted attribute"),
    M("softmax-default-axis-table", "mappings/ops/softmax.toml", "[defaults]\naxis = -1", "[defaults]\naxis = 0",
      VALIDATION + EXPORT, "a table default the header/ONNX fix (SOFTMAX without AXIS = last axis)"),
    M("top-k-default-axis-table", "mappings/ops/top_k.toml", "sorted = true\naxis = -1", "sorted = true\naxis = 0",
      VALIDATION + EXPORT, "TOP_K default axis: the header's -1"),

    # -- validation ---------------------------------------------------------------------------------------------------
    M("range-check-off-by-one", "nnrt_onnx/validation/operation.py", "if not lo <= v <= hi:",
      "if not lo <= v <= hi + 1:", VALIDATION),
    M("count-check-dropped", "nnrt_onnx/validation/operation.py",
      "if variant.count is not None and count != variant.count:", "if False:", VALIDATION),
    M("conv-activation-range-3", "mappings/ops/conv2d.toml",
      'to = "activation_type"\ndtype = "INT8"\ncount = 1\nvalue = "scalar"\nrange = [0, 2]',
      'to = "activation_type"\ndtype = "INT8"\ncount = 1\nvalue = "scalar"\nrange = [0, 3]', VALIDATION),
    M("round-mode-range-2", "mappings/ops/max_pool.toml",
      'meaning = "0=floor, 1=ceil (other values -> INVALID_PARAMETER)"\nto = "round_mode"\ndtype = "INT32"\n'
      'count = 1\nvalue = "scalar"\nrange = [0, 1]',
      'meaning = "0=floor, 1=ceil (other values -> INVALID_PARAMETER)"\nto = "round_mode"\ndtype = "INT32"\n'
      'count = 1\nvalue = "scalar"\nrange = [0, 2]', VALIDATION),
    M("pad-padding-mode-range-dropped", "mappings/ops/pad.toml", "range = [0, 3]\n", "", VALIDATION,
      "a range check the runtime has, missing from the table"),
    M("input-count-widened", "mappings/ops/add.toml", "[inputs]\ncount = [2, 2]", "[inputs]\ncount = [2, 3]",
      VALIDATION),
    M("rank-check-dropped", "nnrt_onnx/validation/operation.py",
      "if variant.rank is not None and len(tensor.dims) != variant.rank:", "if False:", VALIDATION,
      "LayerNorm's beginNormAxis accepted with rank 1"),
    M("param-max-off-by-one", "nnrt_onnx/validation/operation.py", "if len(params) > entry.param_max:",
      "if len(params) > entry.param_max + 1:", VALIDATION),
    M("gather-axis-ignored", "nnrt_onnx/kernels/indexing.py", "    ax = _gather_axis(op, x.ndim, axis)\n    idx",
      "    ax = 0 if x.ndim else _gather_axis(op, x.ndim, axis)\n    idx", ("tests/kernels/test_indexing.py",)),
    M("reduce-int-mean-floors", "nnrt_onnx/kernels/reduce.py",
      'out = (np.sign(acc) * (np.abs(acc) // n)) if kind == "i" else acc // n', "out = acc // n",
      ("tests/kernels/test_reduce.py",), "integer REDUCE_MEAN floors instead of truncating"),

    # -- parity -------------------------------------------------------------------------------------------------------
    M("parity-float16-atol-10x", "nnrt_onnx/workflows/parity.py", '"float16": (1e-2, 1e-2),',
      '"float16": (1e-2, 1e-1),', PARITY),
    M("parity-atol-not-scaled", "nnrt_onnx/workflows/parity.py",
      "a_eff = a_tol * scale if scale > 0 else a_tol", "a_eff = a_tol", PARITY,
      "atol absolute instead of relative to the tensor's scale"),
    M("parity-rtol-10x-in-compare", "nnrt_onnx/workflows/parity.py",
      "r_tol, a_tol = tol if tol is not None else (0.0, 0.0)",
      "r_tol, a_tol = (tol[0] * 10, tol[1]) if tol is not None else (0.0, 0.0)", PARITY,
      "compare applies 10x the rtol it reports"),
    M("parity-integers-off-by-one", "nnrt_onnx/workflows/parity.py",
      '    if dtype.kind != "f":\n        return None', '    if dtype.kind != "f":\n        return (0.0, 1.0)',
      PARITY, "integers compared with atol 1 instead of exactly"),
    M("parity-rtol-on-actual", "nnrt_onnx/workflows/parity.py",
      "ok = np.where(both_finite, diff <= a_eff + r_tol * np.abs(b64), same_special)",
      "ok = np.where(both_finite, diff <= a_eff + r_tol * np.maximum(np.abs(a64), np.abs(b64)), same_special)",
      PARITY, "rtol relative to the larger of the two values"),

    # -- the HTML report of check --report (issue 29) and the sweep's report (issue 32) -------------------------------
    M("report-warnings-shown-as-pass", "nnrt_onnx/workflows/html_report.py", "    if warned:\n        return \"warn\"",
      "    if False:\n        return \"warn\"", REPORT, "a pass with warnings painted as a clean pass"),
    M("report-chart-width-for-every-node", "nnrt_onnx/workflows/layer_chart.py", "    count = max(len(points), 1)",
      "    count = max(len(report.layers), 1)", REPORT, "the chart keeps room for the nodes it does not draw"),
    M("report-zero-as-a-small-number", "nnrt_onnx/workflows/layer_chart.py",
      "        if value == 0:\n            return zero_band + BAND / 2",
      "        if value == 0:\n            return log_bottom", REPORT, "exact agreement drawn as a fake point on the axis"),
    M("report-diverged-rows-folded", "nnrt_onnx/workflows/html_report.py", "        if layer.index in keep:",
      "        if False:", REPORT, "the diverging layers hidden in the folded runs of the node table"),
    M("report-histogram-zeros-in-bins", "nnrt_onnx/workflows/difference_plots.py", "    zero = diff == 0\n",
      "    zero = diff < 0\n", REPORT, "exact zeros counted in the log bins"),
    M("report-histogram-ignores-rtol", "nnrt_onnx/workflows/difference_plots.py",
      "        outside = diff > atol + rtol * np.abs(b[finite])", "        outside = diff > atol", REPORT,
      "the histogram's outside-tolerance split is not the check's rule"),
    M("report-scatter-loses-the-worst", "nnrt_onnx/workflows/difference_plots.py",
      "        chosen = np.union1d(spaced, largest)", "        chosen = spaced", REPORT,
      "the sampled scatter can drop the outliers"),
    M("sweep-report-lost-rows-as-error", "nnrt_onnx/workflows/sweep_report.py",
      "    label = verdict if verdict in NOT_CHECKED else \"ERROR\"", "    label = \"ERROR\"", REPORT,
      "a timeout, out of memory or crash reported as a plain error"),
    M("sweep-report-page-left-in-row", "nnrt_onnx/workflows/sweep_report.py", "    text = row.pop(\"page\", None)",
      "    text = row.get(\"page\")", REPORT, "each model's page also dumped into the sweep's JSON"),
    M("report-numbers-wrap", "nnrt_onnx/workflows/html_page.py",
      ".num {{ text-align: right; white-space: nowrap; font-variant-numeric",
      ".num {{ text-align: right; white-space: normal; font-variant-numeric", BROWSER,
      "numbers break over two lines in a narrow window"),
    M("report-legend-uncoloured", "nnrt_onnx/workflows/html_page.py",
      "        rules.append(f\".s-{name} {{ fill: {colour}; stroke: {colour}; color: {colour}; }}\")",
      "        rules.append(f\"svg.chart .s-{name} {{ fill: {colour}; stroke: {colour}; color: {colour}; }}\")", BROWSER,
      "the legend's symbols drawn black"),

    # -- the fast paths (nnrt_onnx/accel) against the reference plan -------------------------------------------------
    M("runner-drops-activation", "nnrt_onnx/accel/runners.py",
      "loop(x, taps, values, out, s_h, s_w, d_h, d_w, pt, pl, activation, has_bias)",
      "loop(x, taps, values, out, s_h, s_w, d_h, d_w, pt, pl, 0, has_bias)", CONTRACT,
      "the depthwise 3x3 runner forgets its fused activation"),
    M("depthwise-runner-wrong-pad", "nnrt_onnx/accel/conv.py", "(*strides, *dilation, pads[0], pads[2]), activation)",
      "(*strides, *dilation, pads[0], pads[0]), activation)", CONTRACT,
      "the depthwise 3x3 runner takes the top pad for the left one"),
    M("residual-written-into-input", "nnrt_onnx/accel/fusions/conv_post_ops.py",
      "        return fn(*inputs, post=post, **kwargs)",
      "        result = fn(*inputs, post=post, **kwargs)\n        np.copyto(addends[0], result)\n        return result",
      CONTRACT, "a residual fusion writes its result into the residual's buffer (a model input)"),
    M("finish-drops-fused-mul", "nnrt_onnx/accel/finish.py",
      "        self.bias, self.post, self.activation = bias, tuple(post), activation",
      "        self.bias, self.post, self.activation = bias, tuple(p for p in post if p[0] != \"mul\"), activation",
      CONTRACT, "the finish of fused convolutions forgets the MUL by a per-channel constant"),
    M("gelu-fusion-wrong-addend", "nnrt_onnx/accel/fusions/erf_gelu.py",
      '{"divisor": divisor, "addend": scalars[0], "factor": scalars[1]}',
      '{"divisor": divisor, "addend": scalars[1], "factor": scalars[1]}', CONTRACT,
      "the GELU fusion takes the factor for the addend"),
    M("fused-step-keeps-absorbed-releases", "nnrt_onnx/runtime/cpu.py",
      "            self.steps = _with_releases(self.steps, keep)", "            pass", CONTRACT,
      "a fused step releases what its absorbed steps released later: an operation in between reads a freed tensor"),
    M("capture-runs-the-reference-steps", "nnrt_onnx/runtime/cpu.py", "                for step in self.steps:\n",
      "                for step in (self.steps if capture is None else self._plain_steps):\n",
      ("tests/accel/test_plan.py",), "a run with capture runs the unfused reference steps, not the production plan"),
    M("hidden-capture-skipped", "nnrt_onnx/runtime/cpu.py",
      "                    if capture is not None and id(step) in hiding:",
      "                    if False:", CONTRACT + ("tests/test_capture.py",),
      "capture leaves the tensors a fused step hides uncomputed"),

    # -- serialization ------------------------------------------------------------------------------------------------
    M("serialize-drops-quant-axis", "nnrt_onnx/serialization.py", '"num_bits": list(q.num_bits), "axis": q.axis}',
      '"num_bits": list(q.num_bits), "axis": None}', SERIAL),
    M("serialize-num-bits-8", "nnrt_onnx/serialization.py", '"num_bits": list(q.num_bits), "axis": q.axis}',
      '"num_bits": [8] * len(q.num_bits), "axis": q.axis}', SERIAL,
      "expected equivalent: QuantParam accepts numBits 8 only (nnrt_ops_spec.md 1.1)"),
    M("load-skips-alignment-check", "nnrt_onnx/serialization.py", "            if offset % ALIGNMENT:\n",
      "            if False:\n", SERIAL),
    M("serialize-unaligned", "nnrt_onnx/serialization.py", "    return -(-n // ALIGNMENT) * ALIGNMENT",
      "    return n", SERIAL, "weights written at unaligned offsets"),
    M("load-accepts-bool-bytes", "nnrt_onnx/serialization.py", "np.any(array.view(np.uint8) > 1)",
      "np.any(array.view(np.uint8) > 2)", SERIAL),
]


def _copy_tree(root: Path, scratch: Path) -> Path:
    tree = scratch / "tree"
    ignore = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".venv", "*.egg-info", ".pytest_cache",
                                    ".hypothesis", ".ruff_cache")
    shutil.copytree(root, tree, ignore=ignore, symlinks=True)
    for shared in (root.parent / "shared", ROOT.parent / "shared"):
        if shared.exists():
            os.symlink(shared.resolve(), scratch / "shared")
            break
    return tree


def _without_missing_tests(mutants: list[Mutant], root: Path) -> list[Mutant]:
    """The mutants with only the test files ``root`` has (to score an older checkout with today's mutants)."""
    kept = []
    for m in mutants:
        present = tuple(t for t in m.tests if (root / t).exists())
        if present != m.tests:
            print(f"{m.name}: {root} lacks {', '.join(sorted(set(m.tests) - set(present)))}")
        kept.append(Mutant(m.name, m.file, m.original, m.replacement, present or m.tests, m.why))
    return kept


def _check(mutants: list[Mutant], root: Path) -> list[str]:
    problems = []
    names = [m.name for m in mutants]
    for name in {n for n in names if names.count(n) > 1}:
        problems.append(f"{name}: the name is used twice")
    for m in mutants:
        path = root / m.file
        if not path.exists():
            problems.append(f"{m.name}: {m.file} does not exist")
            continue
        found = path.read_text().count(m.original)
        if found != 1:
            problems.append(f"{m.name}: the original text occurs {found} times in {m.file} (must be once)")
        if m.original == m.replacement:
            problems.append(f"{m.name}: the replacement is the original")
        for test in m.tests:
            if not (root / test).exists():
                problems.append(f"{m.name}: test file {test} does not exist")
    return problems


def _pytest(tree: Path, tests, timeout: float) -> tuple[str, str, float]:
    """(outcome, first failing test or last output line, seconds): outcome passed / failed / error / timeout."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=-rf",
               *tests]
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", "", time.monotonic() - start
    seconds = time.monotonic() - start
    output = done.stdout + done.stderr
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.MULTILINE)
    last = next((line for line in reversed(output.strip().splitlines()) if line.strip()), "")
    if done.returncode == 0:
        return "passed", last, seconds
    if done.returncode == 1:
        return "failed", failed[0] if failed else last, seconds
    return "error", failed[0] if failed else last, seconds  # collection error, internal error, no tests ...


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", action="append", default=[], help="only mutants whose name contains this (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--check", action="store_true", help="check that every mutant still applies, and exit")
    parser.add_argument("--json", type=Path, help="write the results to this file")
    parser.add_argument("--no-baseline", action="store_true", help="do not run the tests on the unmutated copy")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per pytest run (default 1800)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to mutate (default: this one)")
    args = parser.parse_args()
    root = args.root.resolve()
    mutants = [m for m in MUTANTS if not args.k or any(k in m.name for k in args.k)]
    if root != ROOT:
        mutants = _without_missing_tests(mutants, root)
    if args.list:
        for m in mutants:
            print(f"{m.name:40} {m.file:45} {' '.join(m.tests)}")
        return 0
    problems = _check(mutants, root)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if args.check:
        print(f"{len(mutants)} mutants apply")
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="nnrt-mutation-"))
    results = []
    try:
        tree = _copy_tree(root, scratch)
        if not args.no_baseline:
            union = sorted({t for m in mutants for t in m.tests})
            outcome, detail, seconds = _pytest(tree, union, args.timeout)
            print(f"baseline ({len(union)} test files): {outcome} in {seconds:.0f}s {detail}", flush=True)
            if outcome != "passed":
                print("the tests fail without any mutant: fix that first", file=sys.stderr)
                return 2
        for number, m in enumerate(mutants, start=1):
            path = tree / m.file
            original = path.read_text()
            path.write_text(original.replace(m.original, m.replacement, 1))
            try:
                outcome, detail, seconds = _pytest(tree, m.tests, args.timeout)
            finally:
                path.write_text(original)
            status = {"passed": "SURVIVED", "failed": "killed", "error": "killed (error)",
                      "timeout": "TIMEOUT"}[outcome]
            results.append({"name": m.name, "file": m.file, "status": status, "by": detail if outcome != "passed"
                            else "", "seconds": round(seconds, 1), "tests": list(m.tests), "why": m.why})
            print(f"[{number}/{len(mutants)}] {m.name:40} {status:15} {seconds:6.0f}s  "
                  f"{detail if outcome != 'passed' else ''}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"scratch copy kept in {scratch}")
    killed = sum(r["status"].startswith("killed") for r in results)
    print(f"\nmutation score: {killed}/{len(results)} killed"
          + (f" ({100 * killed / len(results):.0f}%)" if results else ""))
    for r in results:
        if not r["status"].startswith("killed"):
            print(f"  {r['status']}: {r['name']} ({r['file']}) {r['why']}")
    if args.json:
        args.json.write_text(json.dumps({"killed": killed, "total": len(results), "mutants": results}, indent=1)
                             + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
