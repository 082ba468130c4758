"""Max and average pooling with 2x2 and 3x3 windows in AVX-512 vectors: the compiled part of ``_accel.pool`` on
AVX-512 hosts, for float32.

numba's loop (``_accel``'s ``pool_loop``) vectorises its channel loops 8 lanes wide and sets up every window
cell's row view. Here one intrinsic per (kind, window) writes the loop over an output row's pixels for one block of
16 channels in LLVM IR, the window's cells unrolled. The results are ``pool_loop``'s bit for bit:

* max (the rule of ``kernels.pool``), one loop per rule, the cells in row-major order and a cell in the padding
  loading NaN. With both strides 1 each cell takes the place of the running maximum where it is greater or that
  maximum is NaN (``v if v > a or a != a else a``), starting from NaN, which the first cell always replaces: the
  loop's fold from its first cell, NaN for NaN cells only (and for a window with no cell inside, the loop's
  fill). With a stride above 1 the maximum ignoring NaN (``v if v > a else a`` from -inf: one vmaxps per cell),
  then the window's first cell inside the input where that is NaN (NaN where none is: the fill) -- the loop's
  ``v if v > a else a`` from its first cell;
* average: the valid cells added in row-major order to -0.0 (``-0.0 + v`` is ``v`` for every v: the loop's "start
  from the first cell") or, where the loop starts from 0 (``start_at_zero``), to +0.0; cells in the padding are
  skipped (a select, not an added +0.0, which would turn a -0.0 sum into +0.0); then divided by the number of
  cells inside (none: 0 / 0, NaN, the loop's fill).

No load reads outside the input: a row or column in the padding is read at a clamped address, its lanes masked off
(a masked-off load from an address outside the array cost an assist per load: 2.3x the time of a 3x3/2 pooling
of 1x112x112x64 whose last row of windows reaches the bottom padding).

Importing it needs numba and llvmlite and compiles the driver (or loads it from numba's cache).
"""
from __future__ import annotations

import numba
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .numba_cache import jit
from .tile_layout import LANES
from .vector_ir import ZERO, RowBlock, counted_loop, f32, i32, i64, inside, mask_type, splat, vec, vector_intrinsics

NAN = ir.Constant(vec, [float("nan")] * LANES)
MINUS_INF = ir.Constant(vec, [float("-inf")] * LANES)
MINUS_ZERO = ir.Constant(vec, [-0.0] * LANES)
WINDOWS = ((2, 2), (3, 3))


def _pointer(builder, base, offset):
    return builder.bitcast(builder.gep(base, [offset]), f32.as_pointer())


def make_row(is_max: bool, k_h: int, k_w: int, bounded: bool, unit: bool = False):
    """An intrinsic ``row(x, out, b, r, q0, q1, ch, lanes, geometry, start_at_zero)``: output pixels q0..q1-1 of
    row r of image b, channels ch..ch+lanes-1 (lanes <= 16), of a k_h x k_w max (``is_max``; ``unit``: the rule of
    both strides 1) or average pooling; ``geometry`` (s_h, s_w, pt, pl). ``bounded``: every cell's column checked
    against the input (pixels at the left and right edges); else only the rows are."""

    @intrinsic
    def row(typingctx, x, out, b, r, q0, q1, ch, lanes, geometry, start_at_zero):
        signature = types.none(x, out, b, r, q0, q1, ch, lanes, geometry, start_at_zero)

        def codegen(context, builder, sig, args):
            b_, r_, q0_, q1_, ch_, lanes_, geometry_, start_at_zero_ = args[2:]
            s_h, s_w, pt, pl = cgutils.unpack_tuple(builder, geometry_)
            block = RowBlock(context, builder, sig, args, 0, 1, b_, r_, ch_, lanes_)
            x_strides, mask, width = block.x_strides, block.mask, block.x_shape[2]
            load, store, _ = vector_intrinsics(builder)
            four32, zero64 = ir.Constant(i32, 4), ir.Constant(i64, 0)
            top = builder.sub(builder.mul(r_, s_h), pt)
            indices = [builder.add(top, ir.Constant(i64, i)) for i in range(k_h)]
            row_ok = [inside(builder, index, block.x_shape[1]) for index in indices]
            last = builder.sub(block.x_shape[1], ir.Constant(i64, 1))
            rows, _ = block.input_rows([builder.select(ok, index, builder.select(  # (a row outside: clamped)
                builder.icmp_signed("<", index, zero64), zero64, last)) for ok, index in zip(row_ok, indices)])
            valid_rows = zero64
            for ok in row_ok:
                valid_rows = builder.add(valid_rows, builder.zext(ok, i64))
            from_zero = builder.icmp_signed("!=", start_at_zero_, ir.Constant(start_at_zero_.type, 0))
            initial = NAN if is_max else builder.select(splat(builder, from_zero, mask_type), ZERO, MINUS_ZERO)

            def pixel(q, _):  # one output pixel of the row's block of channels
                column = builder.sub(builder.mul(q, s_w), pl)
                first = builder.mul(column, x_strides[2])
                column_ok, valid_columns = [], ir.Constant(i64, k_w)
                if bounded:
                    valid_columns = zero64
                    for j in range(k_w):
                        ok = inside(builder, builder.add(column, ir.Constant(i64, j)), width)
                        column_ok.append(ok)
                        valid_columns = builder.add(valid_columns, builder.zext(ok, i64))
                acc = initial if unit or not is_max else MINUS_INF
                cells = []  # (inside, value) of the cells that may be the window's first inside, row-major
                for i in range(k_h):  # row-major cells: the loop's order
                    for j in range(k_w):
                        ok = builder.and_(row_ok[i], column_ok[j]) if bounded else row_ok[i]
                        ok_lanes = splat(builder, ok, mask_type)
                        offset = builder.add(first, builder.mul(ir.Constant(i64, j), x_strides[2]))
                        if bounded:  # (a column outside: clamped)
                            offset = builder.select(column_ok[j], offset, zero64)
                        value = builder.call(load, [_pointer(builder, rows[i], offset), four32,
                                                    builder.and_(mask, ok_lanes), NAN if is_max else ZERO])
                        if bounded or j == 0:
                            cells.append((ok, value))
                        if is_max:  # v if v > a [or a != a] else a (a padded cell: NaN, never greater)
                            wins = builder.fcmp_ordered(">", value, acc)
                            if unit:
                                wins = builder.or_(wins, builder.fcmp_unordered("uno", acc, acc))
                            acc = builder.select(wins, value, acc)
                        else:
                            acc = builder.select(ok_lanes, builder.fadd(acc, value), acc)
                if not is_max:
                    count = builder.sitofp(builder.mul(valid_rows, valid_columns), f32)
                    acc = builder.fdiv(acc, splat(builder, count, vec))
                elif not unit:  # the first cell inside where it is NaN
                    cell = cells[-1][1]
                    for ok, value in reversed(cells[:-1]):
                        cell = builder.select(ok, value, cell)
                    acc = builder.select(builder.fcmp_unordered("uno", cell, cell), cell, acc)
                builder.call(store, [acc, block.output_pixel(q), four32, mask])

            counted_loop(builder, q0_, q1_, "pool", pixel)
            return context.get_dummy_value()

        return signature, codegen

    return row


def make_pooling(is_max: bool, k_h: int, k_w: int, unit: bool = False):
    """Every output row of one (kind, window[, max rule]), in blocks of 16 channels: the pixels whose window has a
    column outside the input bounded, the others not."""
    bounded, inner = make_row(is_max, k_h, k_w, True, unit), make_row(is_max, k_h, k_w, False, unit)

    @numba.njit(nogil=True, boundscheck=False)
    def pooling(x, out, s_h, s_w, pt, pl, start_at_zero):  # pragma: no cover (compiled)
        n, oh, ow, c = out.shape
        w = x.shape[2]
        q_lo = min(ow, (pl + s_w - 1) // s_w)  # the first pixel whose first column is >= 0
        q_hi = ow  # ... and after the last one whose last column is < w
        while q_hi > q_lo and (q_hi - 1) * s_w - pl + k_w > w:
            q_hi -= 1
        geometry = (s_h, s_w, pt, pl)
        for b in range(n):
            for r in range(oh):
                for ch in range(0, c, LANES):
                    lanes = min(LANES, c - ch)
                    bounded(x, out, b, r, 0, q_lo, ch, lanes, geometry, start_at_zero)
                    inner(x, out, b, r, q_lo, q_hi, ch, lanes, geometry, start_at_zero)
                    bounded(x, out, b, r, q_hi, ow, ch, lanes, geometry, start_at_zero)

    return pooling


max_2x2, max_3x3 = (make_pooling(True, k_h, k_w) for k_h, k_w in WINDOWS)  # a stride above 1
max_2x2_unit, max_3x3_unit = (make_pooling(True, k_h, k_w, unit=True) for k_h, k_w in WINDOWS)
average_2x2, average_3x3 = (make_pooling(False, k_h, k_w) for k_h, k_w in WINDOWS)
_IMAGE = types.Array(types.float32, 4, "A", readonly=True)
_OUT = numba.float32[:, :, :, :]
_INT = numba.int64


@jit(numba.boolean(_IMAGE, _OUT, numba.boolean, _INT, _INT, _INT, _INT, _INT, _INT, numba.boolean), nogil=True,
     boundscheck=False)
def pool(x, out, is_max, k_h, k_w, s_h, s_w, pt, pl, start_at_zero):  # pragma: no cover (compiled)
    # False: a window this module has no loop for
    unit = s_h == 1 and s_w == 1  # (max pooling's NaN rule)
    if k_h == 2 and k_w == 2:
        if is_max and unit:
            max_2x2_unit(x, out, s_h, s_w, pt, pl, start_at_zero)
        elif is_max:
            max_2x2(x, out, s_h, s_w, pt, pl, start_at_zero)
        else:
            average_2x2(x, out, s_h, s_w, pt, pl, start_at_zero)
        return True
    if k_h == 3 and k_w == 3:
        if is_max and unit:
            max_3x3_unit(x, out, s_h, s_w, pt, pl, start_at_zero)
        elif is_max:
            max_3x3(x, out, s_h, s_w, pt, pl, start_at_zero)
        else:
            average_3x3(x, out, s_h, s_w, pt, pl, start_at_zero)
        return True
    return False


__all__ = ["WINDOWS", "pool"]
