"""LLVM IR building blocks of the AVX-512 kernels written as numba intrinsics (:mod:`._tile_kernels`,
:mod:`._depthwise_vectors`): the ``<16 x float>`` vector types, splats, element pointers and the masked load,
masked store and FMA intrinsics. Importing it needs llvmlite and numba."""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils

from .tile_layout import LANES

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


def counted_loop(builder, start, stop, name: str, body, carried=()):
    """The IR of ``for q in range(start, stop)`` (i64 bounds): ``body(q, values)`` emits one iteration and returns
    the next values of the loop-carried ``carried`` (their initial values); returns their values after the loop
    (the initial ones where it does not run)."""
    entry = builder.block
    loop = builder.append_basic_block(f"{name}.loop")
    done = builder.append_basic_block(f"{name}.done")
    builder.cbranch(builder.icmp_signed("<", start, stop), loop, done)
    builder.position_at_end(loop)
    q = builder.phi(i64)
    q.add_incoming(start, entry)
    values = [builder.phi(value.type) for value in carried]
    for phi, value in zip(values, carried):
        phi.add_incoming(value, entry)
    updated = list(body(q, values) or ())
    q_next = builder.add(q, ir.Constant(i64, 1))
    last = builder.block
    q.add_incoming(q_next, last)
    for phi, value in zip(values, updated):
        phi.add_incoming(value, last)
    builder.cbranch(builder.icmp_signed("<", q_next, stop), loop, done)
    builder.position_at_end(done)
    results = []
    for initial, value in zip(carried, updated):
        result = builder.phi(initial.type)
        result.add_incoming(initial, entry)
        result.add_incoming(value, last)
        results.append(result)
    return results


def inside(builder, index, size):
    """0 <= index < size, as an i1 (i64 operands)."""
    return builder.and_(builder.icmp_signed(">=", index, ir.Constant(i64, 0)), builder.icmp_signed("<", index, size))


class RowBlock:
    """What a row intrinsic over NHWC images sets up first: output row ``r`` of image ``b``, the block of channels
    from ``ch`` (``lanes`` of them, at most 16): the input's byte base, strides and shape, the lane mask, the
    block's byte offset, and the output row's start (i8*)."""

    def __init__(self, context, builder, sig, args, x_position: int, out_position: int, b, r, ch, lanes):
        x, out = (argument_array(context, builder, sig, args, p) for p in (x_position, out_position))
        self.builder = builder
        self.x_base = builder.bitcast(x.data, i8p)
        self.x_strides = cgutils.unpack_tuple(builder, x.strides)
        self.x_shape = cgutils.unpack_tuple(builder, x.shape)
        self.out_strides = cgutils.unpack_tuple(builder, out.strides)
        self.mask = lane_mask(builder, lanes)
        self.channel_bytes = builder.mul(ch, ir.Constant(i64, 4))
        self.b = b
        self.out_row = builder.gep(builder.bitcast(out.data, i8p), [builder.add(builder.add(
            builder.mul(b, self.out_strides[0]), builder.mul(r, self.out_strides[1])), self.channel_bytes)])

    def input_rows(self, indices):
        """For each input row index (i64): a pointer to its block of channels in image b, and whether the row lies
        inside the input (a row in the padding: its loads must be masked off)."""
        builder = self.builder
        image = builder.add(builder.mul(self.b, self.x_strides[0]), self.channel_bytes)
        return ([builder.gep(self.x_base, [builder.add(image, builder.mul(index, self.x_strides[1]))])
                 for index in indices], [inside(builder, index, self.x_shape[1]) for index in indices])

    def output_pixel(self, q):
        """float* to output pixel q's block of channels."""
        builder = self.builder
        return builder.bitcast(builder.gep(self.out_row, [builder.mul(q, self.out_strides[2])]), f32.as_pointer())
