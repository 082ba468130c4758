"""What ``check`` allows when the conversion computed a dynamically quantized model's products in float.

The default conversion of ``quantize_dynamic`` models (``dynamic_quantization="float"``, ``onnx_import/dynamic.py``)
multiplies each activation by the dequantized weights instead of rounding the activation to the uint8 grid
DynamicQuantizeLinear computes at run time (step ``s = (max(0, max x) - min(0, min x)) / 255``). The converted model
then differs from onnxruntime by what that rounding does to the outputs -- a property of the model and its input,
often far beyond float32's tolerance. ``check`` judges such an output against that difference instead:

* the model rewritten in the float form (:func:`onnx_import.dynamic.float_form`: the same rewrite the conversion made)
  runs on onnxruntime as it is, and :data:`TRIALS` more times with each rewritten activation moved by a uniform
  error in ``[-s/2, s/2]`` (seeded: the same spreads on every run) -- the rounding the dropped quantization
  makes, with ``s`` computed from the tensor at run time as DynamicQuantizeLinear does;
* an output's *spread* is the largest change those runs make to it; native passes when it is within
  :data:`FACTOR` spreads (plus the float tolerance) of onnxruntime on the quantized model.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

TRIALS = 8
FACTOR = 2.0
SEED = 28


def _perturbed(model, activations):
    """The float-form model with each activation read by a rewritten product moved by its step times the input
    ``dropped_quantization.<i>.uniform`` (fed U(-1/2, 1/2) noise of the activation's shape)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    zero, steps = "dropped_quantization.zero", "dropped_quantization.steps"
    graph.initializer.extend([numpy_helper.from_array(np.asarray(0, np.float32), zero),
                              numpy_helper.from_array(np.asarray(255, np.float32), steps)])
    perturbation: dict[str, list] = {}
    for position, x in enumerate(activations):
        def name(hint, _p=position):
            return f"dropped_quantization.{_p}.{hint}"
        perturbation[x] = [
            helper.make_node("ReduceMax", [x], [name("max")], keepdims=0),
            helper.make_node("ReduceMin", [x], [name("min")], keepdims=0),
            helper.make_node("Max", [name("max"), zero], [name("high")]),
            helper.make_node("Min", [name("min"), zero], [name("low")]),
            helper.make_node("Sub", [name("high"), name("low")], [name("range")]),
            helper.make_node("Div", [name("range"), steps], [name("step")]),
            helper.make_node("Mul", [name("uniform"), name("step")], [name("error")]),
            helper.make_node("Add", [x, name("error")], [name("rounded")]),
        ]
        for node in graph.node:
            if node.op_type in ("MatMul", "Conv") and node.domain in ("", "ai.onnx") and node.input[0] == x:
                node.input[0] = name("rounded")
    graph.input.extend(helper.make_tensor_value_info(f"dropped_quantization.{p}.uniform", TensorProto.FLOAT, None)
                       for p in range(len(activations)))
    nodes = list(graph.node)
    written = {o for n in nodes for o in n.output}
    ordered = [n for x in activations if x not in written for n in perturbation[x]]  # (graph inputs: first)
    for node in nodes:
        ordered.append(node)
        ordered += [n for o in node.output if o in perturbation for n in perturbation[o]]
    del graph.node[:]
    graph.node.extend(ordered)
    return copy


def output_spreads(model, feed: Mapping[str, np.ndarray], session) -> tuple[dict[str, float], int] | None:
    """(output name -> the largest change the dropped rounding makes to it, the number of activations whose
    quantization was dropped), or None when the model has no dynamic quantization the float form rewrites.
    ``session(model, what)`` opens an onnxruntime session as ``check`` does."""
    import onnx
    from onnx import helper

    from ..onnx_import.dynamic import float_form

    rewritten, info = float_form(model)
    activations = info.get("activations", [])
    if info.get("form") != "float" or not activations:
        return None
    names = [o.name for o in rewritten.graph.output]
    inputs = {i.name for i in rewritten.graph.input}
    wanted = {k: v for k, v in feed.items() if k in inputs}
    probe = onnx.ModelProto()
    probe.CopyFrom(rewritten)
    probe.graph.output.extend(helper.make_empty_tensor_value_info(x) for x in activations if x not in names)
    fetched = [o.name for o in probe.graph.output]
    base = dict(zip(fetched, session(probe, "the float form of the model").run(fetched, wanted)))
    noisy = session(_perturbed(rewritten, activations), "the float form with the dropped rounding")
    rng = np.random.default_rng(SEED)  # (the same spreads on every run: check is a function of its inputs)
    spread = {n: 0.0 for n in names}
    for _ in range(TRIALS):
        noise = {f"dropped_quantization.{p}.uniform": rng.uniform(-0.5, 0.5, np.shape(base[x])).astype(np.float32)
                 for p, x in enumerate(activations)}
        for n, value in zip(names, noisy.run(names, {**wanted, **noise})):
            if np.asarray(value).dtype.kind == "f" and np.size(value):
                change = np.abs(np.asarray(value, np.float64) - np.asarray(base[n], np.float64))
                spread[n] = max(spread[n], float(np.nanmax(change)))
    return spread, len(activations)


__all__ = ["FACTOR", "SEED", "TRIALS", "output_spreads"]
