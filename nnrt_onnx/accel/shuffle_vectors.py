"""A channel shuffle's transpose in AVX-512 vectors: the compiled part of ``_accel.swap_last_axes`` on AVX-512 hosts,
for float32 ``[R, G, N] -> [R, N, G]`` with G in 2, 4, 8 (ShuffleNet's groups).

numba's loop writes the output one value at a time, G values apart (1 ns a value: ShuffleNet's 17 shuffles, 14% of
its time). Here an intrinsic takes, per step, the next 16 / G values of each of the G input rows, interleaves them
in registers (``shufflevector``) and writes 16 consecutive output values: a copy, so the same values.
Importing it needs numba and llvmlite and compiles the driver (or loads it from numba's cache).
"""
from __future__ import annotations

import numba
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .numba_cache import jit
from .tile_layout import LANES
from .vector_ir import argument_array, f32, i8p, i32, i64, lane_mask, pointer_suffix, splat, vec, vector_intrinsics

GROUPS = (2, 4, 8)


def _concatenated(builder, parts):
    """One vector of ``parts`` (vectors of one type, a power of two of them) end to end."""
    while len(parts) > 1:
        width = parts[0].type.count
        indices = ir.Constant(ir.VectorType(i32, 2 * width), list(range(2 * width)))
        parts = [builder.shuffle_vector(parts[p], parts[p + 1], indices) for p in range(0, len(parts), 2)]
    return parts[0]


def make_interleave(groups: int):
    """An intrinsic ``interleave(x, out, r, k0, count)``: out[r, k, j] = x[r, j, k] for k in k0..k0+count-1
    (count <= 16 / groups) and every j < groups."""
    width = LANES // groups
    part = ir.VectorType(f32, width)
    part_mask = ir.VectorType(ir.IntType(1), width)
    # output value t * groups + j is input row j's value t, which the concatenation put at j * width + t
    order = ir.Constant(ir.VectorType(i32, LANES), [j * width + t for t in range(width) for j in range(groups)])

    @intrinsic
    def interleave(typingctx, x, out, r, k0, count):
        signature = types.none(x, out, r, k0, count)

        def codegen(context, builder, sig, args):
            x_arr, out_arr = (argument_array(context, builder, sig, args, p) for p in range(2))
            r_, k0_, count_ = args[2:]
            x_strides = cgutils.unpack_tuple(builder, x_arr.strides)
            out_strides = cgutils.unpack_tuple(builder, out_arr.strides)
            pointer = f32.as_pointer()
            load_part = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(part, [pointer, i32, part_mask, part]),
                f"llvm.masked.load.v{width}f32." + pointer_suffix(pointer))
            _, store, _ = vector_intrinsics(builder)
            four = ir.Constant(i64, 4)
            within = builder.icmp_signed("<", ir.Constant(ir.VectorType(i32, width), list(range(width))),
                                         splat(builder, builder.trunc(count_, i32), ir.VectorType(i32, width)))
            x_row = builder.gep(builder.bitcast(x_arr.data, i8p), [builder.add(builder.mul(r_, x_strides[0]),
                                                                                 builder.mul(k0_, four))])
            parts = []
            for j in range(groups):
                start = builder.bitcast(builder.gep(x_row, [builder.mul(ir.Constant(i64, j), x_strides[1])]), pointer)
                parts.append(builder.call(load_part, [start, ir.Constant(i32, 4), within,
                                                      ir.Constant(part, [0.0] * width)]))
            values = builder.shuffle_vector(_concatenated(builder, parts), ir.Constant(vec, ir.Undefined), order)
            target = builder.gep(builder.bitcast(out_arr.data, i8p), [builder.add(
                builder.mul(r_, out_strides[0]), builder.mul(k0_, out_strides[1]))])
            mask = lane_mask(builder, builder.mul(count_, ir.Constant(i64, groups)))
            builder.call(store, [values, builder.bitcast(target, pointer), ir.Constant(i32, 4), mask])
            return context.get_dummy_value()

        return signature, codegen

    return interleave


def make_swap(groups: int):
    interleave = make_interleave(groups)
    step = LANES // groups

    @numba.njit(nogil=True, boundscheck=False)
    def swap(x, out):  # pragma: no cover (compiled)
        rows, _, n = x.shape
        for r in range(rows):
            for k0 in range(0, n, step):
                interleave(x, out, r, k0, min(step, n - k0))

    return swap


swap_2, swap_4, swap_8 = (make_swap(groups) for groups in GROUPS)
_IN = types.Array(types.float32, 3, "C", readonly=True)
_OUT = numba.float32[:, :, ::1]


@jit(numba.boolean(_IN, _OUT), nogil=True, boundscheck=False)
def swap_last_axes(x, out):  # pragma: no cover (compiled): out[r, k, j] = x[r, j, k]; False: another G
    groups = x.shape[1]
    if groups == 2:
        swap_2(x, out)
    elif groups == 4:
        swap_4(x, out)
    elif groups == 8:
        swap_8(x, out)
    else:
        return False
    return True


__all__ = ["GROUPS", "swap_last_axes"]
