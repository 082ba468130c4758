"""Quantized models in ``nnrt-onnx check``: the CPU-independent reference (onnx.reference, with what it lacks for
quantized models) and comparisons in quantization steps.

* **The reference.** ``onnx.reference`` (exact, CPU-independent) runs the ONNX model; :func:`reference_evaluator`
  gives it the quantization operators it lacks: DequantizeLinear below opset 19 (the onnx package only registers
  19 and later; the int8/uint8 semantics are unchanged) and onnxruntime's contrib QOperator ops that
  ``quantize_static`` writes (QLinearAdd, QLinearMul, QLinearConcat, QGemm, QLinearGlobalAveragePool,
  QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearWhere), each as its documented
  formula: the ONNX float op of the dequantized inputs (DequantizeLinear in float32), quantized as QuantizeLinear
  does (round half to even, then the zero point, saturated). onnxruntime's kernels compute the same up to their
  lookup tables and fixed-point steps, and its u8s8 integer kernels are CPU-dependent (docs/testing.md).
* **Steps.** A quantized output is compared in units of its quantization step: integers directly, and a float
  output written by a DequantizeLinear as (native - reference) / scale (:func:`quantized_outputs`,
  :func:`steps_off`). ``check`` allows one step by default (``--steps``).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

MS = "com.microsoft"
DEFAULT_STEPS = 1  # quantization steps a quantized output may be off by default


# -- onnx.reference and what it lacks ---------------------------------------------------------------------------------

def _quantize(real: np.ndarray, scale: np.ndarray, zero: np.ndarray | None, dtype) -> np.ndarray:
    """QuantizeLinear: saturate(round_half_even(real / scale) + zero) (per tensor)."""
    info = np.iinfo(dtype)
    q = np.rint(np.asarray(real, np.float32) / np.float32(np.asarray(scale).reshape(-1)[0]))
    if zero is not None:
        q = q + np.asarray(zero).reshape(-1)[0].astype(np.float32)
    return np.clip(q, info.min, info.max).astype(dtype)


def _dequantize(q: np.ndarray, scale, zero, axis: int | None = None) -> np.ndarray:
    """DequantizeLinear in float32 (per tensor, or per ``axis``)."""
    scale = np.asarray(scale, np.float32)
    zero = np.zeros_like(scale) if zero is None else np.asarray(zero).astype(np.float32)
    if scale.size > 1:
        shape = [1] * q.ndim
        shape[axis % q.ndim] = scale.size
        scale, zero = scale.reshape(shape), zero.reshape(shape)
    else:
        scale, zero = scale.reshape(()), zero.reshape(())
    return (q.astype(np.float32) - zero) * scale


def _float_op(op_type: str, inputs: list[np.ndarray], attrs: Mapping[str, Any], opset: int = 19) -> np.ndarray:
    """The ONNX float ``op_type`` of ``inputs`` in onnx.reference."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"i{k}" for k in range(len(inputs))]
    node = helper.make_node(op_type, names, ["y"], **attrs)
    graph = helper.make_graph([node], op_type, [helper.make_tensor_value_info(
        n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)) for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return np.asarray(ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0])


def contrib_reference_ops() -> list[type]:
    """OpRun classes for ``ReferenceEvaluator(new_ops=...)``: DequantizeLinear of every opset and the contrib
    QOperator ops (module doc)."""
    from onnx.reference.op_run import OpRun
    from onnx.reference.ops.op_dequantize_linear import DequantizeLinear_25

    class DequantizeLinear(DequantizeLinear_25):
        op_domain = ""

    class _Q(OpRun):
        op_domain = MS

    class QLinearAdd(_Q):
        def _run(self, a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp=None):
            real = _dequantize(a, a_scale, a_zp) + _dequantize(b, b_scale, b_zp)
            return (_quantize(real, c_scale, c_zp, a.dtype),)

    class QLinearMul(_Q):
        def _run(self, a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp=None):
            real = _dequantize(a, a_scale, a_zp) * _dequantize(b, b_scale, b_zp)
            return (_quantize(real, c_scale, c_zp, a.dtype),)

    class QLinearConcat(_Q):
        def _run(self, y_scale, y_zp, *triples, axis=None):
            reals = [_dequantize(triples[i], triples[i + 1], triples[i + 2]) for i in range(0, len(triples), 3)]
            return (_quantize(np.concatenate(reals, axis=axis), y_scale, y_zp, triples[0].dtype),)

    def pool(op_type, x, x_scale, x_zp, y_scale, y_zp, channels_last, attrs):
        real = _dequantize(x, x_scale, x_zp)
        if channels_last:
            real = np.moveaxis(real, -1, 1)
        out = _float_op(op_type, [real], attrs)
        if channels_last:
            out = np.moveaxis(out, 1, -1)
        return (_quantize(out, y_scale, y_zp, x.dtype),)

    class QLinearGlobalAveragePool(_Q):
        def _run(self, x, x_scale, x_zp, y_scale, y_zp, channels_last=0):
            return pool("GlobalAveragePool", x, x_scale, x_zp, y_scale, y_zp, channels_last, {})

    class QLinearAveragePool(_Q):
        def _run(self, x, x_scale, x_zp, y_scale, y_zp, auto_pad="NOTSET", ceil_mode=0, channels_last=0,
                 count_include_pad=0, kernel_shape=None, pads=None, strides=None):
            attrs = {k: v for k, v in dict(auto_pad=auto_pad, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                                           kernel_shape=kernel_shape, pads=pads, strides=strides).items()
                     if v is not None}
            return pool("AveragePool", x, x_scale, x_zp, y_scale, y_zp, channels_last, attrs)

    class QLinearSigmoid(_Q):
        def _run(self, x, x_scale, x_zp, y_scale, y_zp=None):
            real = _dequantize(x, x_scale, x_zp)
            return (_quantize(1.0 / (1.0 + np.exp(-real)), y_scale, y_zp, x.dtype),)

    class QLinearLeakyRelu(_Q):
        def _run(self, x, x_scale, x_zp, y_scale, y_zp=None, alpha=0.01):
            real = _dequantize(x, x_scale, x_zp)
            return (_quantize(np.where(real >= 0, real, real * np.float32(alpha)), y_scale, y_zp, x.dtype),)

    class QLinearSoftmax(_Q):
        def _run(self, x, x_scale, x_zp, y_scale, y_zp, axis=None, opset=None):
            opset = int(opset or 13)
            axis = (-1 if opset >= 13 else 1) if axis is None else int(axis)
            out = _float_op("Softmax", [_dequantize(x, x_scale, x_zp)], {"axis": axis}, opset=opset)
            return (_quantize(out, y_scale, y_zp, x.dtype),)

    class QLinearWhere(_Q):
        def _run(self, condition, x, x_scale, x_zp, y, y_scale, y_zp, z_scale, z_zp):
            real = np.where(condition, _dequantize(x, x_scale, x_zp), _dequantize(y, y_scale, y_zp))
            return (_quantize(real, z_scale, z_zp, x.dtype),)

    class QGemm(_Q):
        def _run(self, a, a_scale, a_zp, b, b_scale, b_zp, c=None, y_scale=None, y_zp=None, alpha=1.0, transA=0,
                 transB=0):
            a64 = (a.T if transA else a).astype(np.int64) - np.asarray(a_zp).astype(np.int64).reshape(())
            b_zp = np.asarray(b_zp).astype(np.int64)
            b64 = (b.T if transB else b).astype(np.int64) - (b_zp.reshape(1, -1) if b_zp.size > 1 else b_zp.reshape(()))
            acc = a64 @ b64
            if c is not None:
                acc = acc + c.astype(np.int64)
            b_scale = np.asarray(b_scale, np.float32)
            scale = np.float32(alpha) * np.asarray(a_scale, np.float32).reshape(()) * (
                b_scale.reshape(1, -1) if b_scale.size > 1 else b_scale.reshape(()))
            real = acc.astype(np.float32) * scale
            if y_scale is None:
                return (real.astype(np.float32),)
            return (_quantize(real, y_scale, y_zp, np.asarray(y_zp).dtype),)

    return [DequantizeLinear, QLinearAdd, QLinearMul, QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool,
            QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearWhere, QGemm]


def reference_evaluator(model):
    """``onnx.reference.ReferenceEvaluator`` for ``model``, with :func:`contrib_reference_ops` and the corrections of
    the float64 referee (``float64.corrected_reference_ops``: its inference BatchNormalization before opset 15
    blends in the batch's statistics, which put a quantized model's batch norms steps off)."""
    from onnx.reference import ReferenceEvaluator

    from .float64 import corrected_reference_ops

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 21)
    return ReferenceEvaluator(model, new_ops=contrib_reference_ops() + corrected_reference_ops(opset))


# -- steps ------------------------------------------------------------------------------------------------------------

def _constant_values(model) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def quantized_outputs(model) -> dict[str, float]:
    """Model output -> its quantization step: outputs written by a per-tensor DequantizeLinear with a constant
    scale (the step of the integers it dequantizes)."""
    constants = _constant_values(model)
    producers = {o: n for n in model.graph.node for o in n.output if o}
    steps = {}
    for output in model.graph.output:
        node = producers.get(output.name)
        if node is None or node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx"):
            continue
        scale = constants.get(node.input[1])
        if scale is not None and np.asarray(scale).size == 1:
            steps[output.name] = float(np.asarray(scale).reshape(-1)[0])
    return steps


def steps_off(actual: np.ndarray, reference: np.ndarray, step: float) -> float:
    """The largest difference in quantization steps (0 for an empty tensor), rounded to 1e-4 step: two dequantized
    float32 values differ by a whole number of steps only up to float32 rounding (one step reads 1.0000002)."""
    a, b = np.asarray(actual, np.float64), np.asarray(reference, np.float64)
    if a.size == 0:
        return 0.0
    return round(float(np.abs(a - b).max() / step), 4)


__all__ = ["DEFAULT_STEPS", "contrib_reference_ops", "quantized_outputs", "reference_evaluator", "steps_off"]
