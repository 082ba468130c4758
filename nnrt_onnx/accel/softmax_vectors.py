"""The two row loops around softmax's ``exp`` in AVX-512 vectors: the compiled part of ``_accel.softmax_last_axis``
on AVX-512 hosts, for float32 rows.

``_accel``'s numba loops keep their 16 running maxima and 16 float64 partial sums in small arrays, which numba
cannot prove apart from the row, so every step goes through memory (3 cycles an element: 125 of BERT-tiny's 165
us per softmax). Here the same 16 lanes are one ``<16 x float>`` register (the maxima) and two ``<8 x double>``
registers (the sums), written as numba intrinsics in LLVM IR; the results are ``_accel``'s bit for bit:

* shift: each lane's running maximum takes an element where it is greater or NaN (``v if v > a or v != v else
  a``), starting from lane j's first element; then the 16 lanes in order, then the elements after the last whole
  vector, one by one, the same way; then ``x - max``;
* normalise: lane j sums elements j, j + 16, j + 32, ... in float64; the row's total is the tail's elements added
  to 0.0, then the 16 lane sums in order; each element divided by the total rounded to float32.

Importing it needs numba and llvmlite and compiles the driver (or loads it from numba's cache).
"""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .numba_cache import jit
from .tile_layout import LANES
from .vector_ir import ALL_LANES, argument_array, counted_loop, f32, i8p, i32, i64, vec, vector_intrinsics

f64 = ir.DoubleType()
half_double = ir.VectorType(f64, LANES // 2)


def _pointer(builder, base, offset):
    return builder.bitcast(builder.gep(base, [offset]), f32.as_pointer())


def _row_start(builder, context, sig, args, position, row):
    """i8* to row ``row`` of the 2-D argument ``position``."""
    array = argument_array(context, builder, sig, args, position)
    stride = cgutils.unpack_tuple(builder, array.strides)[0]
    return builder.gep(builder.bitcast(array.data, i8p), [builder.mul(row, stride)])


@intrinsic
def lane_maxima(typingctx, x, row, blocks, maxima):
    """maxima[0:16] = the running maximum of each lane over the first ``blocks`` whole vectors of x[row] (blocks
    >= 1), each lane starting from its first element."""
    signature = types.none(x, row, blocks, maxima)

    def codegen(context, builder, sig, args):
        load, store, _ = vector_intrinsics(builder)
        four = ir.Constant(i32, 4)
        start = _row_start(builder, context, sig, args, 0, args[1])
        target = builder.bitcast(argument_array(context, builder, sig, args, 3).data, i8p)
        first = builder.call(load, [_pointer(builder, start, ir.Constant(i64, 0)), four, ALL_LANES,
                                    ir.Constant(vec, [0.0] * LANES)])

        def block(k, values):  # one more whole vector: each lane keeps the greater (or NaN) of the two
            (acc,) = values
            value = builder.call(load, [_pointer(builder, start, builder.mul(k, ir.Constant(i64, 4 * LANES))), four,
                                        ALL_LANES, ir.Constant(vec, [0.0] * LANES)])
            wins = builder.or_(builder.fcmp_ordered(">", value, acc), builder.fcmp_unordered("uno", value, value))
            return [builder.select(wins, value, acc)]

        (result,) = counted_loop(builder, ir.Constant(i64, 1), args[2], "max", block, [first])
        builder.call(store, [result, _pointer(builder, target, ir.Constant(i64, 0)), four, ALL_LANES])
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def lane_sums(typingctx, e, row, blocks, sums):
    """sums[0:16] (float64) = each lane's sum, in float64 and in order, over the first ``blocks`` whole vectors of
    e[row]: lane j adds elements j, j + 16, ... to 0.0."""
    signature = types.none(e, row, blocks, sums)

    def codegen(context, builder, sig, args):
        load, _, _ = vector_intrinsics(builder)
        four = ir.Constant(i32, 4)
        start = _row_start(builder, context, sig, args, 0, args[1])
        target = builder.bitcast(argument_array(context, builder, sig, args, 3).data, half_double.as_pointer())
        zero = ir.Constant(half_double, [0.0] * (LANES // 2))
        low_lanes = ir.Constant(ir.VectorType(i32, LANES // 2), list(range(LANES // 2)))
        high_lanes = ir.Constant(ir.VectorType(i32, LANES // 2), list(range(LANES // 2, LANES)))
        undefined = ir.Constant(vec, ir.Undefined)

        def block(k, values):  # one more whole vector, widened to float64 and added lane by lane
            low, high = values
            value = builder.call(load, [_pointer(builder, start, builder.mul(k, ir.Constant(i64, 4 * LANES))), four,
                                        ALL_LANES, ir.Constant(vec, [0.0] * LANES)])
            return [builder.fadd(part, builder.fpext(builder.shuffle_vector(value, undefined, lanes), half_double))
                    for part, lanes in ((low, low_lanes), (high, high_lanes))]

        low_out, high_out = counted_loop(builder, ir.Constant(i64, 0), args[2], "sum", block, [zero, zero])
        builder.store(low_out, target, align=8)
        builder.store(high_out, builder.gep(target, [ir.Constant(i64, 1)]), align=8)
        return context.get_dummy_value()

    return signature, codegen


_ROWS = types.Array(types.float32, 2, "C", readonly=True)
_OUT = numba.float32[:, ::1]


@jit(numba.void(_ROWS, _OUT), nogil=True, boundscheck=False, error_model="numpy")
def shift_rows(x, out):  # pragma: no cover (compiled): out = x - max(x) per row, as _accel's shift_rows
    rows, n = x.shape
    maxima = np.empty(LANES, np.float32)
    blocks = n // LANES
    for r in range(rows):
        xr = x[r]
        if blocks:
            lane_maxima(x, r, blocks, maxima)
            m = maxima[0]
            for j in range(1, LANES):
                v = maxima[j]
                m = v if (v > m or v != v) else m
            k = blocks * LANES
        else:
            m, k = xr[0], 1
        while k < n:
            v = xr[k]
            m = v if (v > m or v != v) else m
            k += 1
        o = out[r]
        for k in range(n):
            o[k] = xr[k] - m


@jit(numba.void(_OUT), nogil=True, boundscheck=False, error_model="numpy")
def normalise_rows(e):  # pragma: no cover (compiled): e /= sum(e) per row, as _accel's normalise_rows
    rows, n = e.shape
    sums = np.empty(LANES, np.float64)
    blocks = n // LANES
    for r in range(rows):
        er = e[r]
        lane_sums(e, r, blocks, sums)
        total = 0.0
        for k in range(blocks * LANES, n):
            total += er[k]
        for j in range(LANES):
            total += sums[j]
        inv = np.float32(total)
        for k in range(n):
            er[k] = er[k] / inv


__all__ = ["normalise_rows", "shift_rows"]
