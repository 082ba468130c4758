"""LLVM IR building blocks of the AVX-512 kernels written as numba intrinsics (:mod:`._tile_kernels`,
:mod:`._depthwise_vectors`): the ``<16 x float>`` vector types, splats, element pointers and the masked load,
masked store and FMA intrinsics. Importing it needs llvmlite and numba."""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils

from ._tile_layout import LANES

f32 = ir.FloatType()
i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
i8p = ir.IntType(8).as_pointer()
vec = ir.VectorType(f32, LANES)
ivec = ir.VectorType(i32, LANES)
mask_type = ir.VectorType(i1, LANES)
ZERO = ir.Constant(vec, [0.0] * LANES)
SIX = ir.Constant(vec, [6.0] * LANES)
ALL_LANES = ir.Constant(mask_type, [1] * LANES)


def pointer_suffix(ptr_type) -> str:  # intrinsic name mangling: opaque pointers (LLVM >= 17) or float*
    return "p0" if getattr(ptr_type, "is_opaque", False) else "p0f32"


def splat(builder, scalar, vector_type):
    one = builder.insert_element(ir.Constant(vector_type, ir.Undefined), scalar, ir.Constant(i32, 0))
    return builder.shuffle_vector(one, ir.Constant(vector_type, ir.Undefined),
                                  ir.Constant(ir.VectorType(i32, vector_type.count), [0] * vector_type.count))


def element(builder, base, row, stride, column):
    """float* to element (row, column) of a 2-D array given its byte base pointer and row stride."""
    row_start = builder.bitcast(builder.gep(base, [builder.mul(row, stride)]), f32.as_pointer())
    return builder.gep(row_start, [column])


def argument_array(context, builder, sig, args, position):
    """Argument ``position`` of an intrinsic as numba's array structure."""
    return context.make_array(sig.args[position])(context, builder, args[position])


def lane_mask(builder, lanes):
    """The first ``lanes`` (an i64) of the 16 lanes."""
    lanes = splat(builder, builder.trunc(lanes, i32), ivec)
    return builder.icmp_signed("<", ir.Constant(ivec, list(range(LANES))), lanes)


def vector_intrinsics(builder):
    """(masked load, masked store, fma) declared in the builder's module: ``load(pointer, 4, mask, passthru)``,
    ``store(vector, pointer, 4, mask)``, ``fma(a, b, c)`` -- a float* pointer."""
    pointer = f32.as_pointer()
    suffix = pointer_suffix(pointer)
    load = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [pointer, i32, mask_type, vec]),
                                          "llvm.masked.load.v16f32." + suffix)
    store = cgutils.get_or_insert_function(builder.module,
                                           ir.FunctionType(ir.VoidType(), [vec, pointer, i32, mask_type]),
                                           "llvm.masked.store.v16f32." + suffix)
    fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec, vec, vec]), "llvm.fma.v16f32")
    return load, store, fma


def activated(builder, x, relu, relu6):
    """The fused activation of ``x`` by splatted i1 flags, as ``_accel``'s clamp: ReLU x <= 0 -> +0 (NaN stays);
    ReLU6 x < 0 -> +0, x > 6 -> 6 (NaN and -0.0 stay)."""
    x = builder.select(builder.and_(relu, builder.fcmp_ordered("<=", x, ZERO)), ZERO, x)
    x = builder.select(builder.and_(relu6, builder.fcmp_ordered("<", x, ZERO)), ZERO, x)
    return builder.select(builder.and_(relu6, builder.fcmp_ordered(">", x, SIX)), SIX, x)
