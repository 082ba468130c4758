"""Dynamic quantization (``onnxruntime.quantization.quantize_dynamic``) in the compact form: float arithmetic with
the weights dequantized once, at conversion.

A dynamically quantized model quantizes each activation at run time (DynamicQuantizeLinear: scale and zero point
from that tensor's own min / max) and multiplies it by int8 weights in integers (ConvInteger, MatMulInteger, or
onnxruntime's MatMulIntegerToFloat), then scales the int32 result back to float (Cast, Mul by x_scale * w_scale)
and adds the bias. NNRt has no operation that quantizes with parameters computed at run time, so reproducing it
exactly costs about fifteen operations per quantized activation (``dynamic_quantization="exact"``: the converters of
handlers/quantization.py, exact integer arithmetic). The default form (``"float"``) instead computes what the
quantization approximates: the float Conv / MatMul of the activation with the weights dequantized here,
``(w - w_zero_point) * w_scale`` (per tensor or per output channel), the bias folded into the convolution. The
result differs from the ONNX model by the rounding of each activation to 1/255 of its range (about what that model
differs from its float original by); the operation count is the float model's.

:func:`float_form` rewrites the ONNX graph before conversion: each DynamicQuantizeLinear whose three outputs feed only
such products (DynamicQuantizeLinear -> ConvInteger / MatMulInteger -> Cast -> Mul by the product of x_scale and a
constant w_scale, or -> MatMulIntegerToFloat) becomes those products in float. Anything else is left as it is (and
converted exactly).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .weights import to_array

MS = "com.microsoft"


class _Graph:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.graph = model.graph
        self.producers = {o: n for n in self.graph.node for o in n.output if o}
        self.consumers: dict[str, list[Any]] = {}
        for node in self.graph.node:
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(node)
        self.constants = {}
        tensors = [(t.name, t) for t in self.graph.initializer]
        tensors += [(node.output[0], node.attribute[0].t) for node in self.graph.node
                    if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.attribute
                    and node.attribute[0].name == "value" and node.output]
        for name, tensor in tensors:
            try:
                self.constants[name] = to_array(tensor)
            except Exception:  # (an unreadable tensor: its own node's conversion reports it)
                continue
        self.outputs = {o.name for o in self.graph.output}

    def constant(self, name: str) -> np.ndarray | None:
        """A constant: an initializer, a Constant node, or a Reshape / Identity of one."""
        if name in self.constants:
            return self.constants[name]
        node = self.producers.get(name)
        if node is None or node.domain not in ("", "ai.onnx"):
            return None
        if node.op_type == "Identity":
            return self.constant(node.input[0])
        if node.op_type == "Reshape" and len(node.input) == 2:
            data, shape = self.constant(node.input[0]), self.constant(node.input[1])
            if data is None or shape is None:
                return None
            dims = [int(d) for d in shape.reshape(-1)]
            dims = [data.shape[i] if d == 0 and i < data.ndim else d for i, d in enumerate(dims)]
            try:
                return data.reshape(dims)
            except ValueError:
                return None
        return None

    def only(self, name: str):
        users = self.consumers.get(name, [])
        return users[0] if len(users) == 1 and name not in self.outputs else None


def _attr(node, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _dequantized_weight(w: np.ndarray, zero: np.ndarray | None, scale: np.ndarray, axis: int) -> np.ndarray | None:
    """(w - zero) * scale in float32, per tensor or along ``axis`` (None when the parameters do not fit)."""
    scale = np.asarray(scale, np.float64).reshape(-1)
    zero = np.zeros(1, np.float64) if zero is None else np.asarray(zero, np.float64).reshape(-1)
    line = [1] * w.ndim
    if scale.size > 1 or zero.size > 1:
        count = max(scale.size, zero.size)
        if w.shape[axis] != count or scale.size not in (1, count) or zero.size not in (1, count):
            return None
        line[axis] = count
    return ((w.astype(np.float64) - zero.reshape(line if zero.size > 1 else [1] * w.ndim))
            * scale.reshape(line if scale.size > 1 else [1] * w.ndim)).astype(np.float32)


def _product(g: _Graph, node, q: str, s: str, z: str):
    """For one consumer of the quantized activation: (nodes replaced, the float node, new initializers) or None."""
    if node.domain == MS and node.op_type == "MatMulIntegerToFloat":
        inputs = list(node.input) + [""] * (7 - len(node.input))
        if inputs[0] != q or inputs[2] != s or inputs[4] not in ("", z):
            return None
        w, w_scale = g.constant(inputs[1]), g.constant(inputs[3])
        w_zero = g.constant(inputs[5]) if inputs[5] else None
        if w is None or w_scale is None or (inputs[5] and w_zero is None) or w.ndim != 2:
            return None
        weight = _dequantized_weight(w, w_zero, w_scale, 1)
        if weight is None:
            return None
        name = f"{inputs[1]}.dequantized"
        outputs = list(node.output)
        if not inputs[6]:
            return [node], [helper.make_node("MatMul", ["{x}", name], outputs, name=node.name)], {name: weight}
        product = f"{outputs[0]}.matmul"
        return [node], [helper.make_node("MatMul", ["{x}", name], [product], name=node.name),
                        helper.make_node("Add", [product, inputs[6]], outputs, name=f"{node.name}.bias")], \
            {name: weight}
    if node.domain not in ("", "ai.onnx") or node.op_type not in ("ConvInteger", "MatMulInteger"):
        return None
    inputs = list(node.input) + [""] * (4 - len(node.input))
    if inputs[0] != q or inputs[2] not in ("", z):
        return None
    w = g.constant(inputs[1])
    w_zero = g.constant(inputs[3]) if inputs[3] else None
    if w is None or (inputs[3] and w_zero is None):
        return None
    cast = g.only(node.output[0])
    if cast is None or cast.op_type != "Cast" or _attr(cast, "to") != onnx.TensorProto.FLOAT:
        return None
    mul = g.only(cast.output[0])
    if mul is None or mul.op_type != "Mul" or len(mul.input) != 2:
        return None
    scale_name = mul.input[1] if mul.input[0] == cast.output[0] else mul.input[0]
    scaled = [g.producers.get(scale_name)]
    if scaled[0] is not None and scaled[0].op_type == "Reshape" and g.constant(scaled[0].input[1]) is not None:
        scaled.insert(0, g.producers.get(scaled[0].input[0]))
    times = scaled[0]
    if times is None or times.op_type != "Mul" or s not in times.input or len(times.input) != 2:
        return None
    w_scale = g.constant(times.input[1] if times.input[0] == s else times.input[0])
    if w_scale is None or any(len(g.consumers.get(n.output[0], [])) != 1 for n in scaled):
        return None
    conv = node.op_type == "ConvInteger"
    if not conv and w.ndim != 2:
        return None
    weight = _dequantized_weight(w, w_zero, w_scale, 0 if conv else 1)
    if weight is None:
        return None
    name = f"{inputs[1]}.dequantized"
    replaced = [node, cast, mul, *scaled]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    new_inputs = ["{x}", name]
    output = mul.output[0]
    initializers = {name: weight}
    add = g.only(output)
    if conv and add is not None and add.op_type == "Add" and len(add.input) == 2:  # the bias, into the Conv
        other = add.input[1] if add.input[0] == output else add.input[0]
        bias = g.constant(other)
        if bias is not None and bias.size == weight.shape[0] and bias.dtype == np.float32 and (
                bias.ndim <= 1 or (bias.ndim >= 2 and bias.shape[-(bias.ndim - 1)] == bias.size)):
            new_inputs.append(f"{other}.conv_bias")
            initializers[new_inputs[-1]] = np.ascontiguousarray(bias.reshape(-1))
            replaced.append(add)
            output = add.output[0]
    new = helper.make_node("Conv" if conv else "MatMul", new_inputs, [output], name=node.name, **attrs)
    return replaced, [new], initializers


def float_form(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """The model with its dynamic quantization in float (module doc), and what was done: ``{"form": "float",
    "dynamic_quantize_linear": rewritten, "kept": left for the exact conversion, "activations": the tensors whose
    quantization was dropped}``; the model itself when there is nothing to rewrite."""
    quantizers = [n for n in model.graph.node if n.op_type == "DynamicQuantizeLinear" and n.domain in ("", "ai.onnx")]
    if not quantizers:
        return model, {}
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    g = _Graph(copy)
    removed: set[int] = set()
    new_nodes: dict[int, list[Any]] = {}  # position of the DynamicQuantizeLinear -> the float nodes replacing it
    initializers: dict[str, np.ndarray] = {}
    done = kept = 0
    activations: list[str] = []
    positions = {id(n): i for i, n in enumerate(copy.graph.node)}
    for node in copy.graph.node:
        if node.op_type != "DynamicQuantizeLinear" or node.domain not in ("", "ai.onnx"):
            continue
        q, s, z = (list(node.output) + ["", "", ""])[:3]
        if any(o in g.outputs for o in (q, s, z) if o):
            kept += 1
            continue
        plans = [_product(g, user, q, s, z) for user in g.consumers.get(q, [])]
        replaced = [n for plan in plans if plan for n in plan[0]]
        handled = {id(n) for n in replaced} | {id(node)}
        others = [u for o in (s, z) if o for u in g.consumers.get(o, []) if id(u) not in handled]
        if not plans or any(plan is None for plan in plans) or others:
            kept += 1
            continue
        removed |= handled
        x = node.input[0]
        new_nodes[positions[id(node)]] = [_with_input(n, x) for plan in plans for n in plan[1]]
        for plan in plans:
            initializers.update(plan[2])
        done += 1
        activations.append(x)
    if not done:
        return model, {"form": "exact", "dynamic_quantize_linear": 0, "kept": kept}
    nodes = []
    for position, node in enumerate(copy.graph.node):
        if position in new_nodes:
            nodes.extend(new_nodes[position])
        if id(node) not in removed:
            nodes.append(node)
    del copy.graph.node[:]
    copy.graph.node.extend(nodes)
    copy.graph.initializer.extend(numpy_helper.from_array(a, n) for n, a in initializers.items())
    used = {i for n in copy.graph.node for i in n.input} | {o.name for o in copy.graph.output}
    keep = [t for t in copy.graph.initializer if t.name in used]
    del copy.graph.initializer[:]
    copy.graph.initializer.extend(keep)
    names = {t.name for t in keep}
    inputs = [i for i in copy.graph.input if i.name in used or i.name not in {t.name for t in model.graph.initializer}
              or i.name in names]
    del copy.graph.input[:]
    copy.graph.input.extend(inputs)
    del copy.graph.value_info[:]
    return copy, {"form": "float", "dynamic_quantize_linear": done, "kept": kept, "activations": activations}


def _with_input(node, x: str):
    node.input[:] = [x if i == "{x}" else i for i in node.input]
    return node


__all__ = ["float_form"]
