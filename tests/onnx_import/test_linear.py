"""Import of the linear family (MatMul, Gemm of every opset, Einsum): small one-node models compared with
onnxruntime (numpy for Gemm's opset 1-6 broadcast), and the rejections.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from support import onnx_model, run_imported

from nnrt_onnx.ir.issues import ConversionError
from nnrt_onnx.onnx_import import from_onnx
from onnx_import.import_support import (
    F32,
    F,
    check_n,
    compare,
    dynamic_model,
    rand_uniform,
    randint,
    randn,
    rejects_n,
    rng_for,
    runs_like_onnxruntime,
)

# -- MatMul, Gemm ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", [((3,), (3, 4)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2))],
                         ids=["1d-2d", "3d-1d", "broadcast-batch"])
@pytest.mark.parametrize("dtype", [F32, np.int32])
def test_matmul(shapes, dtype):
    rng = rng_for(f"matmul-{shapes}-{dtype}")
    a, b = (randint(rng, s, dtype) if np.dtype(dtype).kind == "i" else randn(rng, s) for s in shapes)
    check_n("MatMul", {"a": a, "b": b}, 13)


GEMM = [
    ("opset7-input-c-2d", 7, {"alpha": 0.5, "beta": 2.0}, (3, 4), (4, 5), (3, 5), ()),
    ("opset9-const-b-2d-c", 9, {"transB": 1}, (3, 4), (5, 4), (1, 5), ("b", "c")),
    ("opset11-no-c-transA", 11, {"transA": 1, "alpha": 2.0}, (4, 3), (4, 5), None, ("b",)),
    ("opset13-const-b-scalar-c", 13, {"beta": 0.5}, (2, 3), (3, 4), (), ("b", "c")),
    ("opset13-input-b-column-c", 13, {"transA": 1, "transB": 1}, (3, 2), (4, 3), (2, 1), ()),
]


@pytest.mark.parametrize("case,opset,attrs,sa,sb,sc,constants", GEMM, ids=[g[0] for g in GEMM])
def test_gemm(case, opset, attrs, sa, sb, sc, constants):
    rng = rng_for(case)
    inputs = {"a": randn(rng, sa), "b": randn(rng, sb)}
    if sc is not None:
        inputs["c"] = randn(rng, sc)
    check_n("Gemm", inputs, opset, attrs, constants=constants)


# -- Gemm's broadcast (opset < 7) --------------------------------------------------------------------------------------

# Opsets 1-6: neither onnxruntime (no kernels before opset 7) nor onnx.reference (numpy broadcasting only)
# implements the axis-aligned broadcast, so the oracle is numpy on B reshaped by hand to the aligned shape each case
# states; the suffix-aligned cases are also checked against onnx.reference.


# C shape, C constant?, attrs
GEMM_CASES = {
    "gemm_broadcast_bias_const": ((4,), True, dict(broadcast=1, transB=1)),
    "gemm_broadcast_one_element_beta0": ((1,), True, dict(broadcast=1, beta=0.0, transB=1)),
    "gemm_broadcast_runtime_c": ((4,), False, dict(broadcast=1, alpha=0.5, beta=2.0, transB=1)),
    "gemm_no_broadcast_full_c": ((2, 4), False, dict(transB=1)),
    "gemm_no_broadcast_full_c_const": ((2, 4), True, dict(broadcast=0, beta=0.5, transB=1)),
}


@pytest.mark.parametrize("case", sorted(GEMM_CASES))
def test_legacy_gemm(case):
    """numpy oracle: onnx.reference's broadcast=0 path adds C without beta."""
    c_shape, constant, attrs = GEMM_CASES[case]
    a, w, c = rand_uniform(9, (2, 3)), rand_uniform(10, (4, 3)), rand_uniform(11, c_shape)
    inputs, inits = ({"a": a}, {"w": w, "c": c}) if constant else ({"a": a, "c": c}, {"w": w})
    model = onnx_model(helper.make_node("Gemm", ["a", "w", "c"], ["y"], **attrs), inputs, inits, opset=6)
    (actual,), _ = run_imported(model, inputs)
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    compare(actual, (alpha * (a @ w.T) + beta * c).astype(F))


@pytest.mark.parametrize("opset, attrs, words", [
    (6, dict(transB=1), "without broadcast=1 needs C of the output shape [2, 4], got [4]"),
    (11, dict(transB=1, broadcast=1), "['broadcast']"),
], ids=["gemm_c_needs_broadcast", "gemm_broadcast_at_opset11"])
def test_gemm_rejected(opset, attrs, words):
    a, w, c = rand_uniform(12, (2, 3)), rand_uniform(13, (4, 3)), rand_uniform(14, (4,))
    model = onnx_model(helper.make_node("Gemm", ["a", "w", "c"], ["y"], **attrs), {"a": a}, {"w": w, "c": c}, opset=opset)
    with pytest.raises(ConversionError) as info:
        from_onnx(model)
    assert words in str(info.value)


# -- Einsum ------------------------------------------------------------------------------------------------------------

EINSUM = [
    ("matmul", "ij,jk->ik", [(2, 3), (3, 4)]),
    ("implicit", "ij,jk", [(2, 3), (3, 4)]),
    ("transposed-b", "bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
    ("attention", "bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ellipsis", "...ij,...jk->...ik", [(2, 2, 3), (2, 3, 4)]),
    ("outer", "i,j->ij", [(3,), (4,)]),
    ("three", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("sum-private", "ij,jk->k", [(2, 3), (3, 4)]),
    ("trace", "ii", [(4, 4)]),
    ("diag-batch", "bii->bi", [(2, 3, 3)]),
    ("permute", "abc->cab", [(2, 3, 4)]),
    ("batch-out-of-order", "bij,bjk->kbi", [(2, 3, 4), (2, 4, 5)]),
]


@pytest.mark.parametrize("name,equation,shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum(name, equation, shapes):
    rng = rng_for(f"einsum-{name}")
    inputs = {f"x{i}": randn(rng, s) for i, s in enumerate(shapes)}
    check_n("Einsum", inputs, 12, {"equation": equation})


def test_einsum_int32():
    rng = rng_for("einsum-int")
    check_n("Einsum", {"a": randint(rng, (2, 3), np.int32), "b": randint(rng, (3, 2), np.int32)}, 12,
          {"equation": "ij,jk->ik"})


def test_einsum_rejects_size_one_broadcast():
    rejects_n("Einsum", {"a": np.ones((1, 2, 3), F32), "b": np.ones((4, 3, 2), F32)}, "unsupported_attribute", 12,
            {"equation": "bij,bjk->bik"}, match="broadcasting")


# -- Einsum over dynamic dims (issue 26): a label's size read at run time ---------------------------------------------

EINSUM_DYNAMIC = {
    # equation: (operand shapes with dim names, output shape, sizes of the named dims per run)
    "bij,jk->bik": ([["N", 3, 4], [4, 5]], ["N", 3, 5]),
    "bij,bjk->bik": ([["N", 3, "K"], ["N", "K", 5]], ["N", 3, 5]),
    "bii->b": ([["N", 3, 3]], ["N"]),
    "bij->j": ([["N", 3, 4]], [4]),
    "nii,nj->nij": ([["N", "K", "K"], ["N", 2]], ["N", "K", 2]),
    "bi,bij,j->b": ([["N", 3], ["N", 3, "K"], ["K"]], ["N"]),
    "...ij,...jk->...ik": ([["N", "K", 2, 3], ["N", "K", 3, 4]], ["N", "K", 2, 4]),
    "i,i->": ([["N"], ["N"]], []),
}


@pytest.mark.parametrize("equation", sorted(EINSUM_DYNAMIC))
def test_einsum_over_dynamic_dims(equation):
    shapes, out_shape = EINSUM_DYNAMIC[equation]
    names = [f"x{i}" for i in range(len(shapes))]
    model = dynamic_model([helper.make_node("Einsum", names, ["y"], equation=equation)],
                          [(n, 1, s) for n, s in zip(names, shapes)], [("y", 1, out_shape)], opset=12)
    rng = rng_for(equation)
    feeds = [{n: randn(rng, [{"N": size, "K": size + 1}.get(d, d) for d in s]) for n, s in zip(names, shapes)}
             for size in (1, 2, 3)]
    runs_like_onnxruntime(model, feeds, rtol=1e-4, atol=1e-4)
