"""The register tiles' layout and finish codes, shared by :mod:`._tiles` (pure Python) and :mod:`._tile_kernels`
(numba: imported only where the tiles run)."""
from __future__ import annotations

LANES = 16  # float32 lanes of an AVX-512 vector
TILE_ROWS = {1: 14, 2: 12, 3: 8, 4: 6}  # rows of a full tile by vectors per row (accumulators <= 28 of 32 registers)
TAIL_ROWS = 4  # the last rows of a panel: tiles of 4 rows (4 V >= 8 independent sums hide FMA latency), then 1
PANEL_VECTORS = 4  # columns per panel: 64
CHUNK_MULTIPLE = 168  # chunks are whole tiles for every tile height (lcm of 14, 12, 8, 6)

# the finish code of a product (applied by the tiles as they store; _accel.finish_rows' operations in its order):
FINISH_BIAS = 1  # bit 0: add the bias (the vector table's row 0)
FINISH_ACTIVATION_SHIFT, FINISH_ACTIVATION_MASK = 1, 3  # bits 1-2: 1 ReLU, 2 ReLU6
FINISH_VECTOR_SHIFT = (3, 5)  # bits 3-4, 5-6: the table's rows 1 and 2, each FINISH_MULTIPLY or FINISH_ADD
FINISH_MULTIPLY, FINISH_ADD = 1, 2
FINISH_ADDEND_SHIFT = 7  # bit 7: add the addend's matching element (a residual), after the vectors
