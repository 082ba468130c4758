"""The compiled part of :mod:`._tiles`: register-tile intrinsics (LLVM IR of ``<16 x float>`` vectors and
``llvm.fma``) and the driver that walks a product's chunks, K blocks, column panels and tiles. Importing it needs
numba and llvmlite; :mod:`._tiles` imports it only on an AVX-512 host. The cached driver is a module-level
function (cached, a closure over the intrinsics would be a new cache key in every process); the products it calls,
made per tile variant by :func:`make_product`, are compiled into it.
"""
from __future__ import annotations

import numba
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .numba_cache import jit
from .tile_layout import (
    CHUNK_MULTIPLE,
    FINISH_ACTIVATION_MASK,
    FINISH_ACTIVATION_SHIFT,
    FINISH_ADD,
    FINISH_ADDEND_SHIFT,
    FINISH_BIAS,
    FINISH_MULTIPLY,
    FINISH_VECTOR_SHIFT,
    LANES,
    PANEL_VECTORS,
    TAIL_ROWS,
    TILE_ROWS,
)
from .vector_ir import (
    ALL_LANES,
    ZERO,
    activated,
    argument_array,
    element,
    f32,
    i8p,
    i32,
    i64,
    lane_mask,
    mask_type,
    splat,
    vec,
    vector_intrinsics,
)


def make_tile(rows: int, vectors: int, gathered: bool):
    """An intrinsic ``tile(a, b, c, i, j, k0, kn, lanes, add, table, finish, columns, addend)``: c[i:i+rows,
    j:j+16 vectors] = (c's values if add else 0) + a[i:i+rows, columns[k0:k0+kn]] @ b[k0:k0+kn, j:j+16 vectors]
    (``columns``: A's column of each k, a window's offsets for a convolution read straight from its input; read
    only by the ``gathered`` variant -- the plain one reads a[i:i+rows, k0:k0+kn], one pointer walking each row,
    1.5x faster at small K), the sums in registers (one accumulator vector per row and vector, starting from c's
    values or zero), the last vector's loads and stores masked to its first ``lanes`` lanes; then, before the
    store, the ``finish`` (its code: _tile_layout's FINISH_* bits): the bias (``table[0, j:]``), up to two
    per-column vectors (``table[1]``, ``table[2]``, each multiplied or added), the ``addend``'s matching element,
    the activation -- the float operations of ``_accel.finish_rows`` in its order, so bit-identical to a finish
    pass after the product. The gathered rows' addresses are a chain of stride steps from k's pointer: with each
    row's offset a loop invariant, LLVM issued all twelve broadcasts of the 12 x 2 tile ahead of its FMAs, ran out
    of vector registers and spilled the accumulators (1.3x slower than the plain tile; now 0.86-1.0x)."""

    @intrinsic
    def tile(typingctx, a, b, c, i, j, k0, kn, lanes, add, table, finish, columns, addend):
        signature = types.none(a, b, c, i, j, k0, kn, lanes, add, table, finish, columns, addend)

        def codegen(context, builder, sig, args):
            arrays = [context.make_array(t)(context, builder, v) for t, v in zip(sig.args[:3], args[:3])]
            i_, j_, k0_, kn_, lanes_, add_, _, finish_, _, _ = args[3:]
            columns = builder.gep(context.make_array(sig.args[11])(context, builder, args[11]).data, [k0_])
            a_stride, b_stride, c_stride = (cgutils.unpack_tuple(builder, x.strides)[0] for x in arrays)
            a_base, b_base, c_base = (builder.bitcast(x.data, i8p) for x in arrays)
            a_first = builder.gep(a_base, [builder.mul(i_, a_stride)])  # row i's start (bytes)
            a_rows = [element(builder, a_base, builder.add(i_, ir.Constant(i64, r)), a_stride, k0_)
                      for r in range(rows)]
            c_rows = [element(builder, c_base, builder.add(i_, ir.Constant(i64, r)), c_stride, j_)
                      for r in range(rows)]
            targets = [[builder.gep(c_rows[r], [ir.Constant(i64, LANES * v)]) for v in range(vectors)]
                       for r in range(rows)]
            masks = [ir.Constant(mask_type, [1] * LANES)] * (vectors - 1) + [lane_mask(builder, lanes_)]  # N's lanes
            load, store, fma = vector_intrinsics(builder)
            zero = ZERO
            entry = builder.block
            earlier = builder.append_basic_block("tile.earlier")
            start = builder.append_basic_block("tile.start")
            loop = builder.append_basic_block("tile.loop")
            done = builder.append_basic_block("tile.done")
            builder.cbranch(builder.icmp_signed("!=", add_, ir.Constant(add_.type, 0)), earlier, start)

            builder.position_at_end(earlier)  # add != 0: the sums start from the earlier K blocks' sums in c
            loaded = [[builder.call(load, [targets[r][v], ir.Constant(i32, 4), masks[v], zero])
                       for v in range(vectors)] for r in range(rows)]
            builder.branch(start)

            builder.position_at_end(start)
            initial = [[builder.phi(vec) for _ in range(vectors)] for _ in range(rows)]
            for r in range(rows):
                for v in range(vectors):
                    initial[r][v].add_incoming(zero, entry)
                    initial[r][v].add_incoming(loaded[r][v], earlier)
            builder.cbranch(builder.icmp_signed(">", kn_, ir.Constant(i64, 0)), loop, done)

            builder.position_at_end(loop)  # one k: V loads of b's row, per row a broadcast and V FMAs
            k = builder.phi(i64)
            sums = [[builder.phi(vec) for _ in range(vectors)] for _ in range(rows)]
            k.add_incoming(ir.Constant(i64, 0), start)
            b_row = element(builder, b_base, builder.add(k0_, k), b_stride, j_)
            b_vectors = [builder.load(builder.bitcast(builder.gep(b_row, [ir.Constant(i64, LANES * v)]),
                                                      vec.as_pointer()), align=4) for v in range(vectors)]
            if gathered:
                column = builder.load(builder.gep(columns, [k]), align=8)
                a_column = builder.gep(a_first, [builder.shl(column, ir.Constant(i64, 2))])  # row i, k's column
            updated = []
            for r in range(rows):
                if gathered:  # one pointer per k, each row a stride on from the last (the doc says why)
                    if r:
                        a_column = builder.gep(a_column, [a_stride])
                    a_value = builder.load(builder.bitcast(a_column, f32.as_pointer()), align=4)
                else:
                    a_value = builder.load(builder.gep(a_rows[r], [k]), align=4)
                a_value = splat(builder, a_value, vec)
                updated.append([builder.call(fma, [a_value, b_vectors[v], sums[r][v]]) for v in range(vectors)])
            k_next = builder.add(k, ir.Constant(i64, 1))
            k.add_incoming(k_next, loop)
            for r in range(rows):
                for v in range(vectors):
                    sums[r][v].add_incoming(initial[r][v], start)
                    sums[r][v].add_incoming(updated[r][v], loop)
            builder.cbranch(builder.icmp_signed("<", k_next, kn_), loop, done)

            builder.position_at_end(done)  # the stores, the last vector masked; first the finish where asked
            results = [[builder.phi(vec) for _ in range(vectors)] for _ in range(rows)]
            for r in range(rows):
                for v in range(vectors):
                    results[r][v].add_incoming(initial[r][v], start)
                    results[r][v].add_incoming(updated[r][v], loop)
            plain = builder.append_basic_block("tile.plain")
            finishing = builder.append_basic_block("tile.finishing")
            stored = builder.append_basic_block("tile.stored")
            finish_code = builder.trunc(finish_, i32)
            builder.cbranch(builder.icmp_signed("!=", finish_code, ir.Constant(i32, 0)), finishing, plain)

            builder.position_at_end(plain)
            for r in range(rows):
                for v in range(vectors):
                    builder.call(store, [results[r][v], targets[r][v], ir.Constant(i32, 4), masks[v]])
            builder.branch(stored)

            builder.position_at_end(finishing)
            table = argument_array(context, builder, sig, args, 9)
            table_stride = cgutils.unpack_tuple(builder, table.strides)[0]
            table_base = builder.bitcast(table.data, i8p)

            def row_vectors(row, wanted):  # the table row's values for the tile's columns (no read where unwanted)
                start = element(builder, table_base, ir.Constant(i64, row), table_stride, j_)
                return [builder.call(load, [builder.gep(start, [ir.Constant(i64, LANES * v)]), ir.Constant(i32, 4),
                                            builder.and_(masks[v], wanted), zero]) for v in range(vectors)]

            # the common finishes -- bias alone or with ReLU/ReLU6 -- each its own straight code: the general select
            # chain below costs ~20 vector operations per accumulator, as much as the products of a K = 27 stem
            generic = builder.append_basic_block("tile.generic")
            cases = builder.switch(finish_code, generic)
            for activation in (0, 1, 2):
                case = builder.append_basic_block(f"tile.bias.{activation}")
                cases.add_case(ir.Constant(i32, FINISH_BIAS | activation << FINISH_ACTIVATION_SHIFT), case)
                builder.position_at_end(case)
                biases = row_vectors(0, ALL_LANES)
                relu, relu6 = (ir.Constant(mask_type, [int(activation == a)] * LANES) for a in (1, 2))
                for r in range(rows):
                    for v in range(vectors):
                        x = activated(builder, builder.fadd(results[r][v], biases[v]), relu, relu6)
                        builder.call(store, [x, targets[r][v], ir.Constant(i32, 4), masks[v]])
                builder.branch(stored)

            builder.position_at_end(generic)  # branch-free selects on the finish's flags

            def flag(shift, mask, value):  # splat(((finish_code >> shift) & mask) == value)
                bits = builder.and_(builder.lshr(finish_code, ir.Constant(i32, shift)), ir.Constant(i32, mask))
                return splat(builder, builder.icmp_signed("==", bits, ir.Constant(i32, value)), mask_type)

            has_bias = flag(0, 1, 1)
            relu = flag(FINISH_ACTIVATION_SHIFT, FINISH_ACTIVATION_MASK, 1)
            relu6 = flag(FINISH_ACTIVATION_SHIFT, FINISH_ACTIVATION_MASK, 2)
            multiplies = [flag(shift, 3, FINISH_MULTIPLY) for shift in FINISH_VECTOR_SHIFT]
            adds = [flag(shift, 3, FINISH_ADD) for shift in FINISH_VECTOR_SHIFT]
            has_addend = flag(FINISH_ADDEND_SHIFT, 1, 1)
            biases = row_vectors(0, has_bias)
            operands = [row_vectors(1 + slot, builder.or_(multiplies[slot], adds[slot])) for slot in range(2)]
            addend_array = argument_array(context, builder, sig, args, 12)
            addend_stride = cgutils.unpack_tuple(builder, addend_array.strides)[0]
            addend_base = builder.bitcast(addend_array.data, i8p)
            for r in range(rows):
                addend_row = element(builder, addend_base, builder.add(i_, ir.Constant(i64, r)), addend_stride, j_)
                for v in range(vectors):
                    x = results[r][v]
                    x = builder.select(has_bias, builder.fadd(x, biases[v]), x)
                    for slot in range(2):
                        x = builder.select(multiplies[slot], builder.fmul(x, operands[slot][v]), x)
                        x = builder.select(adds[slot], builder.fadd(x, operands[slot][v]), x)
                    residual = builder.call(load, [builder.gep(addend_row, [ir.Constant(i64, LANES * v)]),
                                                   ir.Constant(i32, 4), builder.and_(masks[v], has_addend), zero])
                    x = builder.select(has_addend, builder.fadd(x, residual), x)
                    x = activated(builder, x, relu, relu6)
                    builder.call(store, [x, targets[r][v], ir.Constant(i32, 4), masks[v]])
            builder.branch(stored)
            builder.position_at_end(stored)
            return context.get_dummy_value()

        return signature, codegen

    return tile


_PANEL = PANEL_VECTORS * LANES
# any strides (unit column strides are checked by _tiles.matmul); the operands read-only (a writeable array passes)
_STACK = numba.float32[:, :, :]
_READ_STACK = types.Array(types.float32, 3, "A", readonly=True)
_READ_COLUMNS = types.Array(types.int64, 1, "C", readonly=True)


def make_panel(rows: int, vectors: int, gathered: bool):
    """The rows i0..i1 of one column panel of ``vectors`` vectors: full tiles of ``rows`` rows, then tiles of
    TAIL_ROWS rows, then single rows (a chunk is whole full tiles, so the thinner ones run only at a panel's end)."""
    full, tail, single = (make_tile(height, vectors, gathered) for height in (rows, TAIL_ROWS, 1))

    @numba.njit(nogil=True, boundscheck=False)
    def panel(a, b, c, i0, i1, j, k0, kn, lanes, add, table, finish, columns, addend):  # pragma: no cover
        i = i0
        while i + rows <= i1:
            full(a, b, c, i, j, k0, kn, lanes, add, table, finish, columns, addend)
            i += rows
        while i + TAIL_ROWS <= i1:
            tail(a, b, c, i, j, k0, kn, lanes, add, table, finish, columns, addend)
            i += TAIL_ROWS
        while i < i1:
            single(a, b, c, i, j, k0, kn, lanes, add, table, finish, columns, addend)
            i += 1

    return panel


def make_product(gathered: bool):
    """The loops of one product over its tiles (chunks, K blocks, panels), with plain or gathered tiles
    (:func:`make_tile`)."""
    # one panel function per vector count: numba picks an intrinsic at compile time, never by a runtime value
    panel_4, panel_3, panel_2, panel_1 = (make_panel(TILE_ROWS[v], v, gathered) for v in (4, 3, 2, 1))

    @numba.njit(nogil=True, boundscheck=False)
    def product(a, b, c, table, finish, columns, addend, k_block, chunk_bytes):  # pragma: no cover (compiled)
        # c = a @ b: row chunks (A's block in L2), K blocks (later ones add), 64-column panels, then the panel's tiles
        m, n = c.shape
        k = columns.shape[0]
        blocks = (k + k_block - 1) // k_block
        kc = (k + blocks - 1) // blocks
        chunk = max(CHUNK_MULTIPLE, chunk_bytes // (4 * kc) // CHUNK_MULTIPLE * CHUNK_MULTIPLE)
        for i0 in range(0, m, chunk):
            i1 = min(m, i0 + chunk)
            for k0 in range(0, k, kc):
                kn = min(kc, k - k0)
                add = k0 > 0
                finish_now = finish if k0 + kn == k else 0  # the finish with the last K block
                for j in range(0, n, _PANEL):
                    vectors = min(4, (n - j + 15) // 16)
                    lanes = min(16, n - j - 16 * (vectors - 1))
                    if vectors == 4:
                        panel_4(a, b, c, i0, i1, j, k0, kn, lanes, add, table, finish_now, columns, addend)
                    elif vectors == 3:
                        panel_3(a, b, c, i0, i1, j, k0, kn, lanes, add, table, finish_now, columns, addend)
                    elif vectors == 2:
                        panel_2(a, b, c, i0, i1, j, k0, kn, lanes, add, table, finish_now, columns, addend)
                    else:
                        panel_1(a, b, c, i0, i1, j, k0, kn, lanes, add, table, finish_now, columns, addend)

    return product


product = make_product(False)
gathered_product = make_product(True)


@jit(numba.void(_READ_STACK, _READ_STACK, _STACK, _READ_STACK, numba.int64, _READ_COLUMNS, _READ_STACK, numba.boolean,
                numba.int64, numba.int64), nogil=True, boundscheck=False)
def driver(a3, b3, c3, tables, finish, columns, addends, gathered, k_block,
           chunk_bytes):  # pragma: no cover (compiled)
    # b3, tables (the finish's [3, N] vectors), addends: one per matrix, or one for all; gathered: A's columns by
    # ``columns``, else 0, 1, 2, ...
    b_step = 1 if b3.shape[0] > 1 else 0
    table_step = 1 if tables.shape[0] > 1 else 0
    addend_step = 1 if addends.shape[0] > 1 else 0
    for p in range(a3.shape[0]):
        b, table, addend = b3[p * b_step], tables[p * table_step], addends[p * addend_step]
        if gathered:
            gathered_product(a3[p], b, c3[p], table, finish, columns, addend, k_block, chunk_bytes)
        else:
            product(a3[p], b, c3[p], table, finish, columns, addend, k_block, chunk_bytes)
