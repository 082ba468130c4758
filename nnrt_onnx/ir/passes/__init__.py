"""Graph passes over the importer's IR: transposes moved out to the layout boundaries and cancelled,
batch norms folded into convolutions, activations fused into the op before them.

One pass per module: layout (transpose sinking and cancelling, the NCHW/NHWC permutations), reshape_algebra
(moving transposes across reshapes, merging reshapes), nhwc_io (NHWC model inputs and outputs), batchnorm
(batch norm folding), activation_fusion (activation fusion), qdq (DequantizeLinear -> op -> QuantizeLinear groups
folded into quantized NNRt ops, and ONNX's rounding kept where no quantized op reads a QuantizeLinear); permutations holds the helpers they share and manager
runs a list of passes (:class:`Pass`, :class:`PassResult`, :func:`run_passes`). :func:`optimize` is the importer's
list, built from its options.
"""
from __future__ import annotations

from typing import Any

from ..graph import Graph
from .activation_fusion import fuse_activations
from .batchnorm import fold_batchnorms
from .layout import NCHW_TO_NHWC, NHWC_TO_NCHW, sink_transposes, sink_transposes_basic
from .manager import Pass, PassResult, run_passes
from .nhwc_io import nhwc_boundaries
from .permutations import inverse, perm_of
from .qdq import absorb_restored, exact_quantize, fold_qdq, quantization_summary
from .reshape_algebra import only_moves_unit_dims, reshape_then_transpose, transpose_then_reshape

REMOVE_UNUSED = Pass("remove_unused", Graph.remove_unused)


def import_passes(options) -> list[Pass]:
    """The importer's passes for these ImportOptions, in order."""
    passes = [REMOVE_UNUSED, Pass("absorb_restored", absorb_restored, count="restored_quantized")]
    if options.nhwc_io:
        passes.append(Pass("nhwc_boundaries", nhwc_boundaries))
    if options.optimize_layout:
        passes.append(Pass("sink_transposes", sink_transposes))
    passes.append(REMOVE_UNUSED)
    if options.fold_batchnorm:
        passes.append(Pass("fold_batchnorms", fold_batchnorms, count="folded_batchnorms"))
    if options.fuse_activations:
        passes.append(Pass("fuse_activations", fuse_activations, count="fused_activations"))
    if getattr(options, "fold_qdq", True):
        passes.append(Pass("fold_qdq", fold_qdq, count="quantized_ops"))
    passes.append(Pass("exact_quantize", exact_quantize, count="exact_quantize"))
    passes.append(REMOVE_UNUSED)
    return passes


def optimize(graph: Graph, options) -> dict[str, Any]:
    """Run the importer's passes; the counts of ImportResult.stats ("folded_batchnorms", "fused_activations") and
    "passes", each pass's :meth:`PassResult.summary` in order."""
    results = run_passes(graph, import_passes(options))
    counts: dict[str, Any] = {"folded_batchnorms": 0, "fused_activations": 0}
    for result in results:
        counts.update({k: v for k, v in result.counts.items()
                       if k not in ("quantized_ops", "exact_quantize", "restored_quantized")})
    counts["passes"] = [result.summary() for result in results]
    return counts


__all__ = ["NCHW_TO_NHWC", "NHWC_TO_NCHW", "Pass", "PassResult", "absorb_restored", "exact_quantize", "fold_batchnorms", "fold_qdq",
           "fuse_activations", "import_passes", "quantization_summary", "inverse", "nhwc_boundaries", "only_moves_unit_dims", "optimize", "perm_of",
           "reshape_then_transpose", "run_passes", "sink_transposes", "sink_transposes_basic",
           "transpose_then_reshape"]
