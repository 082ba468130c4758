"""The execution plan's fusion passes, one module each, run in this order by the pass manager
(:mod:`nnrt_onnx.passes`) on a compiled model's plan (``runtime.cpu``) when the fast paths are on:

0. :mod:`.gru_cells` -- an unrolled GRU time step (about thirteen steps) into one compiled cell;
1. :mod:`.conv_post_ops` -- MUL/ADD by per-channel constants, residual ADDs and a linear layer's bias into the
   convolution, BATCH_NORM or MATMUL before them;
2. :mod:`.erf_gelu` -- the exported exact GELU's five steps into one;
3. :mod:`.input_transpose` -- an NCHW image's TRANSPOSE into the first convolution;
4. :mod:`.activations` -- any elementwise activation into the step before it (applied in place to its output);
5. :mod:`.concat_assembly` -- convolutions writing straight into their slice of a concatenation.

Each pass edits ``plan.steps`` (``nnrt_onnx.plan.Step``\\ s) and returns how many things it did."""
from __future__ import annotations

from ...passes import Pass
from ...plan import plan_structure
from .activations import fuse_activations
from .concat_assembly import assemble_concats
from .conv_post_ops import fuse_conv_post_ops
from .erf_gelu import fuse_erf_gelu
from .gru_cells import fuse_gru_cells
from .input_transpose import fuse_input_transpose

PASSES = (
    Pass("fuse_gru_cells", fuse_gru_cells, "fused_gru_steps", plan_structure),
    Pass("fuse_conv_post_ops", fuse_conv_post_ops, "fused_steps", plan_structure),
    Pass("fuse_erf_gelu", fuse_erf_gelu, "fused_gelus", plan_structure),
    Pass("fuse_input_transpose", fuse_input_transpose, "folded_transposes", plan_structure),
    Pass("fuse_activations", fuse_activations, "fused_activations", plan_structure),
    Pass("assemble_concats", assemble_concats, "assembled_concats", plan_structure),
)

__all__ = ["PASSES"]
