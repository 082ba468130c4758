"""Converters of the linear family: MatMul (1:1), Gemm (FULL_CONNECTION or MATMUL and MUL/ADD) and Einsum (pairwise
MATMULs of the operands summed over their private labels).
"""
from __future__ import annotations

import re
from math import prod

import numpy as np

from ...enums import OH_NN_OperationType as OP
from ...ir.issues import DYNAMIC_SHAPE, INVALID_MODEL, UNSUPPORTED_ATTRIBUTE, ConversionIssue
from ...ir.quantized import derive
from ..context import NodeContext
from ..generic import emit_row
from . import converts
from ._common import _matmul_shape, _reduce, _transpose
from ._dims import dims_tensor, iota, reshape_to

# -- MatMul, Gemm ------------------------------------------------------------------------------------------------------

def _factor(value, dtype, name: str) -> np.ndarray:
    """Gemm's alpha or beta as a scalar of the operands' dtype (an invalid model when it does not fit one)."""
    try:
        with np.errstate(over="raise", invalid="raise"):
            factor = np.asarray(value).astype(dtype)
    except (OverflowError, FloatingPointError, ValueError):
        raise ConversionIssue(INVALID_MODEL, f"{name}={value} does not fit the {np.dtype(dtype)} operands") from None
    if np.dtype(dtype).kind in "iu" and factor != value:
        raise ConversionIssue(INVALID_MODEL, f"{name}={value} is not a {np.dtype(dtype)} value")
    return factor


@converts("MatMul")
def matmul(ctx: NodeContext) -> None:
    """MATMUL 1:1 (numpy matmul semantics on both sides); the output shape is ONNX shape inference's, completed
    from the operands' shapes where inference left it unknown (after an operator it has no schema for, such as
    onnxruntime's contrib ones)."""
    a, b = ctx.value(ctx.input(0)).shape, ctx.value(ctx.input(1)).shape
    if a is not None and b is not None and len(a) >= 1 and len(b) >= 1:
        ctx.settle(ctx.output(0), _matmul_shape(a, b))
    emit_row(ctx)


@converts("Gemm")
def gemm(ctx: NodeContext) -> None:
    """Y = alpha * A' B' + beta * C: FULL_CONNECTION when B and C are constants, else MATMUL (+ MUL/ADD)."""
    a, b = ctx.input(0), ctx.input(1)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    trans_a, trans_b = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    if ctx.rank(a) != 2:
        raise ConversionIssue(DYNAMIC_SHAPE, "Gemm needs a 2-D A")
    out = ctx.output(0)
    a_shape, b_shape = ctx.value(a).shape, ctx.value(b).shape
    if a_shape is not None and b_shape is not None and len(b_shape) == 2:  # (ONNX inference stops at contrib ops)
        ctx.settle(out, (a_shape[1 if trans_a else 0], b_shape[0 if trans_b else 1]))
    out_value = ctx.value(out)
    if trans_a:
        a = ctx.transpose(a, (1, 0))
    b_value = ctx.value(b)
    if b_value.shape is not None and len(b_value.shape) == 2:  # [M, N], whatever the model states about Y
        ctx.settle(out, (ctx.value(a).shape[0], b_value.shape[0 if trans_b else 1]))
    c = ctx.input(2) if ctx.has_input(2) else None
    c_value = ctx.value(c) if c else None
    if ctx.opset < 7 and not int(ctx.attr("broadcast", 0)) and c is not None:  # legacy: C must be [M, N] then
        c_shape, out_shape = c_value.shape, out_value.shape
        if c_shape is not None and out_shape is not None and (len(c_shape) != len(out_shape) or any(
                x >= 0 and y >= 0 and x != y for x, y in zip(c_shape, out_shape))):
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"Gemm (opset {ctx.opset}) without broadcast=1 needs C of "
                                                         f"the output shape {list(out_shape)}, got {list(c_shape)}")
    if b_value.data is not None and (c is None or (c_value.data is not None and c_value.data.ndim <= 1)):
        if alpha != 1:
            weight = b_value.data if trans_b else b_value.data.T
            weight_name = ctx.constant(np.ascontiguousarray(weight * _factor(alpha, weight.dtype, 'alpha')), f"{b}.weight")
        else:  # (a dequantized weight keeps its integers: ir.quantized.derive)
            weight_name = derive(ctx.graph, b, lambda w: w if trans_b else w.T, f"{b}.weight")
        inputs = [a, weight_name]
        outputs = ctx.value(weight_name).shape[0]
        if c is not None and c_value.data.size not in (1, outputs):
            raise ConversionIssue(INVALID_MODEL, f"Gemm's C has shape {list(c_value.data.shape)}: it does not "
                                                 f"broadcast to the {outputs} output columns")
        if c is not None and beta == 1 and c_value.shape == (outputs,):
            inputs.append(c)  # as it is (a dequantized bias keeps its integers)
        elif c is not None:
            bias = np.broadcast_to(c_value.data * _factor(beta, c_value.data.dtype, 'beta'), (outputs,))
            inputs.append(ctx.constant(np.ascontiguousarray(bias), f"{ctx.name}.bias"))
        ctx.emit(OP.OH_NN_OPS_FULL_CONNECTION, inputs, [out],
                 {"OH_NN_FULL_CONNECTION_HAS_BIAS": c is not None})
        return
    product = ctx.new_value(out_value.dtype, out_value.shape, f"{out}.matmul") if (alpha != 1 or c) else out
    ctx.emit(OP.OH_NN_OPS_MATMUL, [a, b], [product], {"OH_NN_MATMUL_TRANSPOSE_B": bool(trans_b)})
    if alpha != 1:
        scaled = ctx.new_value(out_value.dtype, out_value.shape, f"{out}.alpha") if c else out
        ctx.emit(OP.OH_NN_OPS_MUL, [product, ctx.constant(_factor(alpha, out_value.dtype, 'alpha'))], [scaled])
        product = scaled
    if c:
        if beta != 1:
            scaled_c = ctx.new_value(c_value.dtype, c_value.shape, f"{c}.beta")
            ctx.emit(OP.OH_NN_OPS_MUL, [c, ctx.constant(_factor(beta, c_value.dtype, 'beta'))], [scaled_c])
            c = scaled_c
        ctx.emit(OP.OH_NN_OPS_ADD, [product, c], [out])


# -- Einsum ------------------------------------------------------------------------------------------------------------

def _einsum_terms(ctx: NodeContext, equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """Input and output label lists, "..." expanded into one label per broadcast dim (right-aligned)."""
    equation = equation.replace(" ", "")
    if not re.fullmatch(r"[A-Za-z.,]*(->[A-Za-z.]*)?", equation):
        raise ConversionIssue(INVALID_MODEL, f"equation {equation!r} is not a valid einsum equation")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ConversionIssue(INVALID_MODEL, f"equation {equation!r} names {len(terms)} operands, the node has "
                                             f"{len(ranks)}")
    ellipsis_rank = 0
    labels: list[list[str]] = []
    for term, rank in zip(terms, ranks):
        if term.count("...") > 1 or term.replace("...", "").count("."):
            raise ConversionIssue(INVALID_MODEL, f"term {term!r} of {equation!r} is malformed")
        letters = term.replace("...", "")
        if "..." in term:
            e = rank - len(letters)
            if e < 0:
                raise ConversionIssue(INVALID_MODEL, f"term {term!r} has more labels than its operand's rank {rank}")
            ellipsis_rank = max(ellipsis_rank, e)
            before, _, after = term.partition("...")
            labels.append(list(before) + [f"...{i}" for i in range(e - 1, -1, -1)] + list(after))
        else:
            if len(letters) != rank:
                raise ConversionIssue(INVALID_MODEL, f"term {term!r} does not match its operand's rank {rank}")
            labels.append(list(term))
    ellipsis = [f"...{i}" for i in range(ellipsis_rank - 1, -1, -1)]
    if arrow:
        if rhs.count("...") > 1 or rhs.replace("...", "").count("."):
            raise ConversionIssue(INVALID_MODEL, f"output term {rhs!r} is malformed")
        before, dots, after = rhs.partition("...")
        output = list(before) + (ellipsis if dots else []) + list(after)
    else:
        counts: dict[str, int] = {}
        for term in labels:
            for label in term:
                if not label.startswith("..."):
                    counts[label] = counts.get(label, 0) + 1
        output = ellipsis + sorted(label for label, n in counts.items() if n == 1)
    if len(set(output)) != len(output):
        raise ConversionIssue(INVALID_MODEL, f"output of {equation!r} repeats a label")
    every = {label for term in labels for label in term}
    missing = [label for label in output if label not in every]
    if missing:
        raise ConversionIssue(INVALID_MODEL, f"output labels {missing} of {equation!r} appear in no input")
    return labels, output


class _Sizes:
    """The size of every Einsum label: known, or read at run time from an operand dim carrying it."""

    def __init__(self, ctx: NodeContext):
        self.ctx = ctx
        self.known: dict[str, int] = {}
        self.source: dict[str, tuple[str, int]] = {}  # label -> (operand, axis) of a dynamic size

    def add(self, label: str, size: int, operand: str, axis: int, equation: str) -> None:
        if size < 0:
            self.source.setdefault(label, (operand, axis))
            return
        if self.known.setdefault(label, size) != size:
            raise ConversionIssue(UNSUPPORTED_ATTRIBUTE, f"equation {equation!r}: label {label!r} has sizes "
                                                         f"{self.known[label]} and {size} (broadcasting a size-1 "
                                                         "dim is not supported)")

    def __getitem__(self, label: str) -> int:
        return self.known.get(label, -1)

    def part(self, labels, hint: str):
        """The product of the labels' sizes: an int when known, else a [1] int64 tensor computed at run time."""
        labels = list(labels)
        static = int(prod(self.known[label] for label in labels if label in self.known))
        dynamic = [self.source[label] for label in labels if label not in self.known]
        if not dynamic:
            return static
        ctx = self.ctx
        operand, axis = dynamic[0]
        total = dims_tensor(ctx, operand, [axis])
        for operand, axis in dynamic[1:]:
            total = ctx.emit_to(OP.OH_NN_OPS_MUL, [total, dims_tensor(ctx, operand, [axis])], np.int64, (1,),
                                f"{hint}.size")
        if static != 1:
            total = ctx.emit_to(OP.OH_NN_OPS_MUL, [total, ctx.constant(np.asarray([static], np.int64))], np.int64,
                                (1,), f"{hint}.size")
        return total


def _take_diagonals(ctx: NodeContext, name: str, labels: list[str], sizes: _Sizes,
                    hint: str) -> tuple[str, list[str]]:
    """A label repeated within one term selects a diagonal: move its axes to the front and GATHER_ND the
    (i, i, ...) coordinates (exact for every value, unlike a multiplication by an identity mask)."""
    while len(set(labels)) != len(labels):
        label = next(label for label in labels if labels.count(label) > 1)
        positions = [i for i, other in enumerate(labels) if other == label]
        rest = [i for i in range(len(labels)) if i not in positions]
        moved = name if positions + rest == list(range(len(labels))) else ctx.transpose(name, positions + rest)
        n = sizes[label]
        if n >= 0:
            coordinates = ctx.constant(np.repeat(np.arange(n, dtype=np.int32)[:, None], len(positions), axis=1),
                                       f"{hint}.diagonal")
        else:  # (i, i, ...) for i in 0..n-1 of a run-time n
            column = ctx.reshape(iota(ctx, sizes.part([label], hint), np.int32, "diagonal"), [-1, 1])
            coordinates = ctx.emit_to(OP.OH_NN_OPS_CONCAT, [column] * len(positions), np.int32,
                                      (-1, len(positions)), f"{hint}.diagonal", {"OH_NN_CONCAT_AXIS": 1})
        rest_labels = [labels[i] for i in rest]
        name = ctx.emit_to(OP.OH_NN_OPS_GATHER_ND, [moved, coordinates], ctx.value(name).dtype,
                           [n, *(sizes[other] for other in rest_labels)], f"{hint}.diagonal")
        labels = [label, *rest_labels]
    return name, labels


def _transpose_to(ctx: NodeContext, name: str, labels: list[str], order: list[str]) -> str:
    perm = [labels.index(label) for label in order]
    return name if perm == list(range(len(perm))) else ctx.transpose(name, perm)


def _sum_out(ctx: NodeContext, name: str, labels: list[str], keep: set[str], hint: str) -> tuple[str, list[str]]:
    axes = [i for i, label in enumerate(labels) if label not in keep]
    if not axes:
        return name, labels
    reduced = _reduce(ctx, "SUM", name, axes, False, hint)
    return reduced, [label for label in labels if label in keep]


def _contract(ctx: NodeContext, a: tuple[str, list[str]], b: tuple[str, list[str]], keep: set[str],
              sizes: _Sizes, order: list[str], hint: str) -> tuple[str, list[str]]:
    """One MATMUL: [batch, a-free, contracted] x [batch, contracted, b-free] (reshaped to shapes read at run time
    where a label's size is dynamic)."""
    (a_name, a_labels), (b_name, b_labels) = a, b
    a_name, a_labels = _sum_out(ctx, a_name, a_labels, keep | set(b_labels), f"{hint}.a_summed")
    b_name, b_labels = _sum_out(ctx, b_name, b_labels, keep | set(a_labels), f"{hint}.b_summed")
    rank_of = {label: i for i, label in enumerate(order)}
    shared = [label for label in a_labels if label in b_labels]
    batch = sorted((label for label in shared if label in keep), key=rank_of.get)
    contracted = [label for label in shared if label not in keep]
    a_free = sorted((label for label in a_labels if label not in b_labels), key=rank_of.get)
    b_free = sorted((label for label in b_labels if label not in a_labels), key=rank_of.get)
    m, k, n = (sizes.part(group, hint) for group in (a_free, contracted, b_free))
    lead = [sizes.part(batch, hint)] if batch else []
    a_mat = reshape_to(ctx, _transpose_to(ctx, a_name, a_labels, batch + a_free + contracted), lead + [m, k],
                       f"{hint}.a")
    b_mat = reshape_to(ctx, _transpose_to(ctx, b_name, b_labels, batch + contracted + b_free), lead + [k, n],
                       f"{hint}.b")
    dtype = ctx.value(a_name).dtype
    if ctx.value(b_name).dtype != dtype:
        raise ConversionIssue(INVALID_MODEL, f"Einsum operands differ in dtype ({dtype}, {ctx.value(b_name).dtype})")
    product = ctx.emit_to(OP.OH_NN_OPS_MATMUL, [a_mat, b_mat], dtype, _matmul_shape(ctx.value(a_mat).shape,
                                                                                     ctx.value(b_mat).shape),
                          f"{hint}.matmul")
    labels = batch + a_free + b_free
    return reshape_to(ctx, product, [sizes.part([label], hint) for label in labels], f"{hint}.product"), labels


@converts("Einsum")
def einsum(ctx: NodeContext) -> None:
    """Einsum: operands' diagonals taken, summed over private labels, multiplied pairwise with MATMUL (batch labels
    first), then summed and transposed to the output order. A dynamic label's size is read at run time."""
    operands = [ctx.input(i) for i in range(len(ctx.node.input))]
    out = ctx.output(0)
    equation = ctx.attr("equation")
    if equation is None:
        raise ConversionIssue(INVALID_MODEL, "Einsum needs an equation")
    shapes = []
    for operand in operands:
        if ctx.value(operand).shape is None:
            raise ConversionIssue(DYNAMIC_SHAPE, f"the rank of Einsum operand {operand!r} is unknown", tensor=operand)
        shapes.append(tuple(ctx.value(operand).shape))
    labels, output = _einsum_terms(ctx, equation, [len(s) for s in shapes])
    sizes = _Sizes(ctx)
    for name, term, shape in zip(operands, labels, shapes):
        for axis, (label, size) in enumerate(zip(term, shape)):
            sizes.add(label, size, name, axis, equation)
    terms = [_take_diagonals(ctx, name, term, sizes, f"{out}.{position}")
             for position, (name, term) in enumerate(zip(operands, labels))]
    current = terms[0]
    for position in range(1, len(operands)):
        later = {label for term in labels[position + 1:] for label in term}
        current = _contract(ctx, current, terms[position], set(output) | later, sizes,
                            output, f"{out}.{position}")
    name, term = _sum_out(ctx, *current, set(output), f"{out}.summed")
    perm = [term.index(label) for label in output]
    if perm != list(range(len(perm))):
        _transpose(ctx, name, perm, output=out)
    elif name in operands or ctx.value(name).data is not None:
        ctx.alias(name, out)
    else:
        reshape_to(ctx, name, [sizes.part([label], f"{out}.out") for label in output], f"{out}.out", output=out)
