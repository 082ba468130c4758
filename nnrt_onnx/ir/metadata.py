"""How an exported ONNX model carries what ONNX cannot say about NNRt: the NNRt-domain name and the node
metadata keys the exporter writes and the importer reads back (exact round trips)."""
from __future__ import annotations

import json

NNRT_DOMAIN = "org.openharmony.nnrt"
METADATA_PARAMS = "nnrt.params"  # exact NNRt parameters, JSON, on the node an op became
METADATA_FUSED = "nnrt.fused_activation"  # marks the Relu/Clip a fused activation became
METADATA_OP = "nnrt.op"  # the NNRt op an NNRt-domain node stands for
METADATA_QUANT = "nnrt.quant"  # a Quantize/DequantizeLinear that stands for a quantized NNRt tensor


def quant_metadata(quant) -> str:
    """Exact (double) quant params, kept next to the float32 scales ONNX stores."""
    return json.dumps({"scales": quant.scales, "zero_points": quant.zero_points, "num_bits": quant.num_bits,
                       "axis": quant.axis})
