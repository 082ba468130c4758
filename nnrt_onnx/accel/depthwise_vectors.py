"""Depthwise 3x3 convolution in AVX-512 vectors: the compiled part of ``_accel.depthwise_3x3`` on AVX-512 hosts.

numba's loop (``_accel``) vectorises the channel loop only 8 lanes wide (LLVM prefers 256-bit vectors on these
CPUs) and pays a per-pixel setup of nine row views. Here an intrinsic writes the loop over one output row's pixels
for one block of 16 channels in LLVM IR: the nine taps' weights and the bias stay in registers, each pixel is nine
``<16 x float>`` loads, a multiply and an add per tap, the bias, the activation and one store -- the float
operations of ``_accel``'s loop in its order (the first tap's product, then each tap's product added, then the
bias, then the clamp; no FMA contraction), so bit-identical to it. A tap in the padding reads +0.0 (a masked-off
load), as the loop's zero vector. Pixels whose taps all lie inside the input run without the per-tap bounds masks.
Importing it needs numba and llvmlite and compiles the driver (or loads it from numba's cache).
"""
from __future__ import annotations

import numba
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .numba_cache import jit
from .tile_layout import LANES
from .vector_ir import (
    ZERO,
    RowBlock,
    activated,
    argument_array,
    counted_loop,
    i8p,
    i32,
    i64,
    inside,
    mask_type,
    splat,
    vector_intrinsics,
)


def _pointer(builder, base, offset):
    """float* at a byte offset from an i8* base."""
    return builder.bitcast(builder.gep(base, [offset]), ir.FloatType().as_pointer())


def make_row(bounded: bool):
    """An intrinsic ``row(x, wt, bias, out, b, r, q0, q1, ch, lanes, geometry, activation, has_bias)``: output
    pixels q0..q1-1 of row r of image b, channels ch..ch+lanes-1 (lanes <= 16), the block's nine tap weights and
    bias held in registers; ``geometry`` (s_h, s_w, d_h, d_w, pt, pl) as a tuple. ``bounded``: every tap's column
    checked against the input (the pixels at the left and right edges); else only the rows are."""

    @intrinsic
    def row(typingctx, x, wt, bias, out, b, r, q0, q1, ch, lanes, geometry, activation, has_bias):
        signature = types.none(x, wt, bias, out, b, r, q0, q1, ch, lanes, geometry, activation, has_bias)

        def codegen(context, builder, sig, args):
            b_, r_, q0_, q1_, ch_, lanes_, geometry_, activation_, has_bias_ = args[4:]
            s_h, s_w, d_h, d_w, pt, pl = cgutils.unpack_tuple(builder, geometry_)
            block = RowBlock(context, builder, sig, args, 0, 3, b_, r_, ch_, lanes_)
            x_strides, mask, channel_bytes = block.x_strides, block.mask, block.channel_bytes
            wt_arr, bias_arr = (argument_array(context, builder, sig, args, i) for i in (1, 2))
            wt_strides = cgutils.unpack_tuple(builder, wt_arr.strides)
            load, store, _ = vector_intrinsics(builder)
            four32 = ir.Constant(i32, 4)
            wt_base, bias_base = builder.bitcast(wt_arr.data, i8p), builder.bitcast(bias_arr.data, i8p)
            width = block.x_shape[2]

            weights = [[builder.call(load, [_pointer(builder, wt_base, builder.add(builder.add(
                builder.mul(ir.Constant(i64, i), wt_strides[0]), builder.mul(ir.Constant(i64, j), wt_strides[1])),
                channel_bytes)), four32, mask, ZERO]) for j in range(3)] for i in range(3)]
            bias_flag = splat(builder, builder.icmp_signed("!=", has_bias_, ir.Constant(has_bias_.type, 0)),
                              mask_type)
            bias = builder.call(load, [_pointer(builder, bias_base, channel_bytes), four32,
                                       builder.and_(mask, bias_flag), ZERO])
            code = builder.trunc(activation_, i32)
            relu = splat(builder, builder.icmp_signed("==", code, ir.Constant(i32, 1)), mask_type)
            relu6 = splat(builder, builder.icmp_signed("==", code, ir.Constant(i32, 2)), mask_type)
            top = builder.sub(builder.mul(r_, s_h), pt)
            rows, row_ok = block.input_rows([builder.add(top, builder.mul(ir.Constant(i64, i), d_h)) for i in range(3)])
            row_masks = [builder.and_(mask, splat(builder, ok, mask_type)) for ok in row_ok]  # (padding: masked off)
            tap_step = builder.mul(d_w, x_strides[2])

            def pixel(q, _):  # one output pixel of the row's block of channels
                column = builder.sub(builder.mul(q, s_w), pl)
                first = builder.mul(column, x_strides[2])
                values = [[None] * 3 for _ in range(3)]
                for j in range(3):
                    offset = builder.add(first, builder.mul(ir.Constant(i64, j), tap_step))
                    if bounded:
                        tap_column = builder.add(column, builder.mul(ir.Constant(i64, j), d_w))
                        column_ok = splat(builder, inside(builder, tap_column, width), mask_type)
                    for i in range(3):
                        tap_mask = builder.and_(row_masks[i], column_ok) if bounded else row_masks[i]
                        values[i][j] = builder.call(load, [_pointer(builder, rows[i], offset), four32, tap_mask, ZERO])
                v = None
                for i in range(3):  # row-major taps: _accel's order of the sums (the first product, then each added)
                    for j in range(3):
                        product = builder.fmul(values[i][j], weights[i][j])
                        v = product if v is None else builder.fadd(v, product)
                v = builder.select(bias_flag, builder.fadd(v, bias), v)
                v = activated(builder, v, relu, relu6)
                builder.call(store, [v, block.output_pixel(q), four32, mask])

            counted_loop(builder, q0_, q1_, "dw", pixel)
            return context.get_dummy_value()

        return signature, codegen

    return row


bounded_row = make_row(True)
inner_row = make_row(False)
_IMAGE = types.Array(types.float32, 4, "A", readonly=True)
_TAPS = types.Array(types.float32, 3, "A", readonly=True)
_VECTOR = types.Array(types.float32, 1, "A", readonly=True)
_OUT = numba.float32[:, :, :, :]
_INT = numba.int64


@jit(numba.void(_IMAGE, _TAPS, _VECTOR, _OUT, _INT, _INT, _INT, _INT, _INT, _INT, _INT, numba.boolean), nogil=True,
     boundscheck=False)
def depthwise_3x3(x, wt, bias, out, s_h, s_w, d_h, d_w, pt, pl, activation, has_bias):  # pragma: no cover
    # every output row in blocks of 16 channels: the pixels with a tap column outside the input (left and right
    # edges) bounded, the others not
    n, oh, ow, c = out.shape
    w = x.shape[2]
    q_lo = min(ow, (pl + s_w - 1) // s_w)  # the first pixel whose first tap column is >= 0
    q_hi = ow  # ... and after the last one whose last tap column is < w
    while q_hi > q_lo and (q_hi - 1) * s_w - pl + 2 * d_w >= w:
        q_hi -= 1
    geometry = (s_h, s_w, d_h, d_w, pt, pl)
    for b in range(n):
        for r in range(oh):
            for ch in range(0, c, LANES):
                lanes = min(LANES, c - ch)
                bounded_row(x, wt, bias, out, b, r, 0, q_lo, ch, lanes, geometry, activation, has_bias)
                inner_row(x, wt, bias, out, b, r, q_lo, q_hi, ch, lanes, geometry, activation, has_bias)
                bounded_row(x, wt, bias, out, b, r, q_hi, ow, ch, lanes, geometry, activation, has_bias)


__all__ = ["depthwise_3x3"]
