"""(Moved) convolutions, pooling and LRN: spatial.py; dense, normalisation and structural ops: movement_reduce.py."""
from __future__ import annotations

# FULL_CONNECTION, MATMUL, BATCH_NORM, SOFTMAX, LOG_SOFTMAX, CONCAT, RESHAPE and GATHER: movement_reduce.py
