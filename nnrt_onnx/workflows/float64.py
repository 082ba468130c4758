"""A third opinion for ``nnrt-onnx check``: the ONNX model computed in float64, and how far an honest float32
result may be from it. ``check`` asks it where its verdict can change the result (``workflows/parity.py`` says when:
an output that disagrees, under ``--strict`` one that agrees only just, a layer that disagrees).

**The float64 truth.** The ONNX model with every floating tensor retyped to double (initializers, Constant and
ConstantOfShape values, Cast targets, declared types, subgraphs, functions) and evaluated by ``onnx.reference``,
the ONNX project's Python implementation of the spec -- independent of both sides. (Our kernels retyped to float64
would be faster, but a bug in one of them would then be in the truth too, and the referee could never find native
wrong.) ``onnx.reference`` is not bug-free; this module replaces what was found wrong: Softmax, LogSoftmax and
Hardmax (it implements only opset 13's form; older opsets coerce to 2D), LRN (it sums over the batch, not the
channels), BatchNormalization (its opset-9 form mixes the batch's statistics into the running ones) and MaxPool with
unit strides (it reads asymmetric pads in the wrong order; its strided path, right, takes those windows too -- by
numpy slices here, not its Python loop over every output element: most of a CNN's referee time); and valid models
it refuses or gets wrong (a differential fuzzer's finds): GatherElements with indices narrower than the data off the
axis, Pad with negative pads, Mean of operands that broadcast, Squeeze of negative axes before opset 13 and
GlobalMaxPool of other than 4-D inputs. When
native and onnxruntime agree but both are far from the float64 result, the referee is the suspect (verdict
"float64 disagrees with both", a note, never a failure).

**The expected float32 error** (Monte Carlo arithmetic, Parker 1997; Verificarlo): the double model is run
:data:`TRIALS` more times with the floating output of every node that rounds multiplied by ``1 + d``, ``d``
uniform in ``[-ulp, ulp]`` of the tensor's original dtype (float32: ``2**-23``, float16: ``2**-10``): the rounding
a float32 implementation makes at each node, with random signs. A node that sums many products (Conv,
ConvTranspose, MatMul, Gemm, Einsum: :data:`ACCUMULATING_OPS`) also gets ``d'`` times its output's largest magnitude
(``d'`` drawn likewise): its rounding error is of the order of an ulp of the partial sums, which an element that
cancels to near 0 does not show (a Conv output 1e-5 of its scale from 0, then a Pow(-1) or the variance of a nearly
constant LayerNormalization row, made "native is wrong" of a difference within float32's reach). Likewise a node
that sums or averages its input's elements (ReduceSum, ReduceMean, GlobalAveragePool, AveragePool, CumSum:
:data:`SUMMING_OPS`) gets ``d'`` times its *input's* largest magnitude, and one that returns the log of a sum
(ReduceLogSumExp, ReduceLogSum, LogSoftmax: :data:`LOG_OF_SUM_OPS`) ``d'`` itself: log(s (1 + d)) = log(s) + d.
A node that subtracts a row's mean (LayerNormalization, InstanceNormalization, GroupNormalization,
MeanVarianceNormalization: :data:`CENTERING_OPS`) also shifts each row of its output by ``d''`` times
``|mean| / sqrt(variance + epsilon)`` times the row's scale: a float32 implementation subtracts the mean rounded to
float32, and the rows of a nearly constant input no longer sum to 0 (a GlobalAveragePool of them is all rounding).
Nodes that only move or select values (Reshape, Concat, MaxPool, Relu ...) round nothing and are not perturbed.
A tensor's *spread* ``s`` is the largest error of the perturbed runs against the truth.

Errors are measured like ``max rel``: ``err(x) = max_i |x_i - t_i| / max(|t_i|, atol * scale / rtol)``, ``t`` the
truth, ``scale`` its largest finite magnitude, ``rtol``/``atol`` the tensor's tolerances.
The *expected float32 error* is ``E = max(K * s, rtol)`` with ``K = 4``: a result within ``E`` of the truth is as
good as float32 can be on this input.

**The verdict** on a tensor, with ``e_native = err(native)`` and ``e_ort = err(onnxruntime)``:

- the sides agree within tolerance: **ill-conditioned** when ``s > rtol`` (a one-ulp perturbation moves the
  tensor beyond tolerance: the agreement is the luck of the rounding order, another CPU may disagree); but
  **float64 disagrees with both** when both are beyond ``E`` (two independent implementations agreeing against
  the float64 run points at the referee: a note, never a failure); otherwise nothing to say.
- the sides disagree:
  - both within ``E`` of the truth: **ill-conditioned** when ``K * s > rtol``, else **both within tolerance of
    float64** (the disagreement is the sum of two admissible errors);
  - only native beyond ``E``: **native is wrong**; only onnxruntime beyond ``E``: **onnxruntime is wrong**;
  - both beyond ``E``: **neither matches float64** (the closer side named).

``check`` passes an output whose verdict is ill-conditioned, onnxruntime is wrong, or both within tolerance, with a
warning; ``--strict`` fails it. The node named for an ill-conditioned output is its *amplifier*: the first node
(in graph order, among the output's ancestors) whose output spread exceeds its tolerance while every floating
input's spread is within it -- where ulp-level noise turns into visible differences.

**How it runs** (:func:`float64_reference`): in bounded memory. The truth and the trials advance together, node by
node, through one evaluator's node implementations; a tensor's spread is measured as soon as the runs have computed
it, and every tensor is dropped after its last reader (only the truths asked for are kept). The weights are read
from the model one at a time, made double when a node first needs them, and dropped after their last reader -- the
double model itself holds none. Where a node's inputs in a trial are the truth's own (nothing upstream rounds:
weights, shapes, the graph's inputs), the trial shares the truth's result (times its noise, where the node rounds)
instead of computing it again: the numbers are those of separate whole runs (``tests/test_float64.py`` compares
them), at a fraction of the time and memory.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

K = 4.0
TRIALS = 2
ILL_CONDITIONED = "ill-conditioned"
NATIVE_WRONG = "native is wrong"
ORT_WRONG = "onnxruntime is wrong"
NEITHER = "neither matches float64"
BOTH_CLOSE = "both within tolerance of float64"
SUSPECT = "float64 disagrees with both"  # the sides agree, the float64 result does not: the referee is suspect
ACCEPTED = frozenset({ILL_CONDITIONED, ORT_WRONG, BOTH_CLOSE, SUSPECT})  # pass (a warning but for SUSPECT)

# nodes that move, select or compare values: they round nothing, so the Monte Carlo runs leave their outputs alone
EXACT_OPS = frozenset({
    "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "Slice", "Gather",
    "GatherElements", "GatherND", "ScatterND", "ScatterElements", "Scatter", "Expand", "Tile", "Pad", "Dropout",
    "MaxPool", "GlobalMaxPool", "MaxRoiPool", "Relu", "ReduceMax", "ReduceMin", "Max", "Min", "Abs", "Neg", "Sign",
    "Floor", "Ceil", "Round", "Constant", "ConstantOfShape", "Shape", "Size", "SpaceToDepth", "DepthToSpace",
    "Where", "Clip", "ArgMax", "ArgMin", "TopK", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not",
    "And", "Or", "Xor", "NonZero", "Compress", "ReverseSequence", "OneHot", "Trilu", "EyeLike", "CenterCropPad",
})
# nodes whose every output element sums many products: a float32 implementation's rounding error there is of the
# order of an ulp of the partial sums, not of the (possibly cancelled, near-zero) result
ACCUMULATING_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum", "ConvInteger", "MatMulInteger"})
# nodes that sum (or average) their input's elements: the partial sums are of the order of the input's largest
# magnitude, which a sum that cancels does not show (fuzzer seed 9973: the ReduceSum of a LayerNormalization row)
SUMMING_OPS = frozenset({"ReduceSum", "ReduceMean", "GlobalAveragePool", "AveragePool", "CumSum"})
# nodes that return the log of a sum they compute: the sum's relative rounding is an absolute error of the log
# (log(s (1 + d)) = log(s) + d), which a result near 0 does not show (seed 9973: the ReduceLogSumExp of a
# LogSoftmax, log(1) in exact arithmetic)
LOG_OF_SUM_OPS = frozenset({"ReduceLogSumExp", "ReduceLogSum", "LogSoftmax"})
_ULP = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}

Tolerance = Callable[[np.dtype], "tuple[float, float] | None"]  # dtype -> (rtol, atol), None for exact dtypes


# ----------------------------------------------------------------------------------------------------------------
# the error measure and the verdict


def relative_error(x, truth, rtol: float, atol: float) -> float:
    """``max_i |x_i - t_i| / max(|t_i|, atol * scale / rtol)`` (see the module doc); inf when a NaN/Inf differs
    or the sizes differ; NaN never."""
    x = np.asarray(x).astype(np.float64, copy=False).reshape(-1)
    t = np.asarray(truth).astype(np.float64, copy=False).reshape(-1)
    if x.size != t.size:
        return math.inf
    if not x.size:
        return 0.0
    if np.isfinite(t).all() and np.isfinite(x).all():  # the usual case, in fewer passes over the data: the same value
        scale = float(np.abs(t).max())
        floor = atol * scale / rtol if rtol > 0 else atol * scale
        floor = max(floor, np.finfo(np.float64).tiny)
        difference = np.subtract(x, t)
        np.abs(difference, out=difference)
        denominator = np.abs(t)
        np.maximum(denominator, floor, out=denominator)
        with np.errstate(over="ignore"):
            np.divide(difference, denominator, out=difference)
        value = float(difference.max())
        return value if not math.isnan(value) else math.inf
    finite_t = np.isfinite(t)
    both = finite_t & np.isfinite(x)
    same_special = (np.isnan(x) & np.isnan(t)) | ((x == t) & ~both)
    if np.any(~both & ~same_special):
        return math.inf
    if not both.any():
        return 0.0
    scale = float(np.abs(t[finite_t]).max())
    floor = atol * scale / rtol if rtol > 0 else atol * scale
    floor = max(floor, np.finfo(np.float64).tiny)
    with np.errstate(over="ignore"):
        ratio = np.abs(x[both] - t[both]) / np.maximum(np.abs(t[both]), floor)
    value = float(ratio.max())
    return value if not math.isnan(value) else math.inf


@dataclass
class Verdict:
    """The float64 referee's opinion on one tensor (errors in the ``max rel`` measure against the float64 truth)."""

    verdict: str | None  # one of the verdict strings above, None: nothing to say
    native_error: float
    onnxruntime_error: float
    spread: float  # the Monte Carlo spread s
    expected_error: float  # E = max(K * s, rtol)
    rtol: float
    amplifier: dict[str, Any] | None = None  # {"index", "node", "op_type", "input_spread", "output_spread"}

    @property
    def accepted(self) -> bool:
        return self.verdict in ACCEPTED

    @property
    def closer(self) -> str:
        if self.native_error == self.onnxruntime_error:
            return "equal"
        return "native" if self.native_error < self.onnxruntime_error else "onnxruntime"

    @property
    def ratio(self) -> float:
        """How many times farther from float64 the farther side is (inf when the closer one is exact)."""
        near, far = sorted((self.native_error, self.onnxruntime_error))
        if far == near:
            return 1.0
        return far / near if near > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "native_error": self.native_error,
                "onnxruntime_error": self.onnxruntime_error, "spread": self.spread,
                "expected_error": self.expected_error, "closer": self.closer, "ratio": self.ratio,
                "amplifier": self.amplifier}

    def text(self) -> str:
        """One line: the verdict and the numbers behind it (errors as max rel against float64)."""
        errors = (f"max rel vs float64: native {_g(self.native_error)}, onnxruntime {_g(self.onnxruntime_error)}, "
                  f"expected float32 error {_g(self.expected_error)}")
        closer = "" if self.closer == "equal" else f"; {self.closer} is {_times(self.ratio)} closer"
        if self.verdict == ILL_CONDITIONED:
            where = ""
            if self.amplifier is not None:
                a = self.amplifier
                where = (f", amplified at ONNX node #{a['index']} {a['node']!r} ({a['op_type']}: "
                         f"{_g(a['input_spread'])} in, {_g(a['output_spread'])} out)")
            return (f"ill-conditioned: one-ulp rounding noise moves it by up to max rel {_g(self.spread)} "
                    f"(tolerance {_g(self.rtol)}){where}; {errors}")
        if self.verdict is None:
            return f"float64 agrees ({errors})"
        return f"{self.verdict} ({errors}{closer})"


def _g(value: float) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return "0" if value == 0 else f"{value:.2g}"


def _times(ratio: float) -> str:
    return "infinitely" if math.isinf(ratio) else f"{ratio:.3g}x"


def judge(native_error: float, onnxruntime_error: float, spread: float, rtol: float, agree: bool) -> Verdict:
    """The verdict of the module doc, from the two sides' errors, the Monte Carlo spread and the tolerance."""
    expected = max(K * spread, rtol)
    if agree:
        if native_error > expected and onnxruntime_error > expected:
            verdict = SUSPECT
        else:
            verdict = ILL_CONDITIONED if spread > rtol else None
    else:
        native_ok, ort_ok = native_error <= expected, onnxruntime_error <= expected
        if native_ok and ort_ok:
            verdict = ILL_CONDITIONED if K * spread > rtol else BOTH_CLOSE
        elif ort_ok:
            verdict = NATIVE_WRONG
        elif native_ok:
            verdict = ORT_WRONG
        else:
            verdict = NEITHER
    return Verdict(verdict, native_error, onnxruntime_error, spread, expected, rtol)


# ----------------------------------------------------------------------------------------------------------------
# the model in double


def _float_types() -> set[int]:
    from onnx import TensorProto

    return {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def double_model(model):
    """A copy of the ONNX model computing in float64 (see the module doc)."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    _double_graph(copy.graph)
    for function in copy.functions:
        for node in function.node:
            _double_node(node)
    return copy


def _double_tensor(tensor) -> None:
    from onnx import numpy_helper

    if tensor.data_type in _float_types():
        name = tensor.name
        array = numpy_helper.to_array(tensor).astype(np.float64)
        tensor.CopyFrom(numpy_helper.from_array(array, name))


def _double_graph(graph) -> None:
    from onnx import TensorProto

    for info in list(graph.input) + list(graph.output) + list(graph.value_info):
        if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type in _float_types():
            info.type.tensor_type.elem_type = TensorProto.DOUBLE
    for tensor in graph.initializer:
        _double_tensor(tensor)
    for node in graph.node:
        _double_node(node)


def _double_node(node) -> None:
    import onnx
    from onnx import TensorProto, helper

    kept = []
    for attribute in node.attribute:
        if node.op_type == "Constant" and attribute.name in ("value_float", "value_floats"):
            values = [attribute.f] if attribute.name == "value_float" else list(attribute.floats)
            array = np.asarray(values[0] if attribute.name == "value_float" else values, np.float64)
            kept.append(helper.make_attribute("value", onnx.numpy_helper.from_array(array)))
            continue
        if attribute.type == onnx.AttributeProto.TENSOR:
            _double_tensor(attribute.t)
        elif attribute.type == onnx.AttributeProto.GRAPH:
            _double_graph(attribute.g)
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            for graph in attribute.graphs:
                _double_graph(graph)
        elif attribute.name in ("to", "dtype") and attribute.type == onnx.AttributeProto.INT \
                and attribute.i in _float_types():
            attribute.i = TensorProto.DOUBLE
        kept.append(attribute)
    del node.attribute[:]
    node.attribute.extend(kept)


def corrected_reference_ops(opset: int) -> list:
    """What onnx.reference gets wrong, corrected (module doc): Softmax, LogSoftmax and Hardmax with the semantics of
    the model's opset (onnx.reference has only 13's), LRN, inference BatchNormalization, MaxPool (unit strides'
    asymmetric pads; its loops made slices) and :func:`_spec_gap_classes`. (Also the quantized comparison's referee:
    ``quant_compare.reference_evaluator``.)"""
    from onnx.reference.op_run import OpRun

    def compute(kind: str, x: np.ndarray, axis: int | None) -> np.ndarray:
        if x.size == 0:
            return x
        shape = x.shape
        if opset < 13:  # coerce to 2D at ``axis`` (default 1), operate on the second dim
            axis = (1 if axis is None else axis) % max(x.ndim, 1)
            x = x.reshape(int(np.prod(shape[:axis], dtype=np.int64)), -1)
            axis = 1
        else:
            axis = -1 if axis is None else axis
        if kind == "Hardmax":
            y = np.zeros_like(x)
            np.put_along_axis(y, np.expand_dims(np.argmax(x, axis=axis), axis), 1, axis=axis)
        else:
            shifted = x - x.max(axis=axis, keepdims=True)
            if kind == "LogSoftmax":
                y = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
            else:
                y = np.exp(shifted)
                y /= y.sum(axis=axis, keepdims=True)
        return y.reshape(shape).astype(x.dtype, copy=False)

    classes = []
    for kind in ("Softmax", "LogSoftmax", "Hardmax"):
        def run(self, x, axis=None, _kind=kind):
            given = [a.i for a in self.onnx_node.attribute if a.name == "axis"]
            return (compute(_kind, np.asarray(x), given[0] if given else None),)

        classes.append(type(kind, (OpRun,), {"op_domain": "", "_run": run}))

    def lrn(self, x, alpha=None, beta=None, bias=None, size=None):
        # the spec's square_sum over channels [c - floor((size-1)/2), c + ceil((size-1)/2)]; onnx.reference 1.2x
        # loops over the batch instead and leaves every channel but the first unnormalized
        x = np.asarray(x)
        attributes = {a.name: helper_value(a) for a in self.onnx_node.attribute}
        alpha, beta = attributes.get("alpha", 1e-4), attributes.get("beta", 0.75)
        bias, size = attributes.get("bias", 1.0), attributes["size"]
        below, above = (size - 1) // 2, -(-(size - 1) // 2)
        squares = x.astype(x.dtype) ** 2
        square_sum = np.zeros_like(x)
        channels = x.shape[1]
        for c in range(channels):
            square_sum[:, c] = squares[:, max(0, c - below):min(channels, c + above + 1)].sum(axis=1)
        return ((x / (bias + (alpha / size) * square_sum) ** beta).astype(x.dtype),)

    classes.append(type("LRN", (OpRun,), {"op_domain": "", "_run": lrn}))

    def batch_norm(self, x, scale, bias, mean, var, **ignored):
        # inference form (one output): the running statistics; onnx.reference's opset-9 form blends in the batch's
        # own statistics whenever momentum is set -- and the schema always sets it
        attributes = {a.name: helper_value(a) for a in self.onnx_node.attribute}
        if len([o for o in self.onnx_node.output if o]) > 1 or attributes.get("training_mode", 0):
            raise NotImplementedError("training-mode BatchNormalization has no float64 reference here")
        x = np.asarray(x)
        shape = (-1,) + (1,) * (x.ndim - 2)
        epsilon = attributes.get("epsilon", 1e-5)
        y = np.reshape(scale, shape) * (x - np.reshape(mean, shape)) / np.sqrt(np.reshape(var, shape) + epsilon)
        return ((y + np.reshape(bias, shape)).astype(x.dtype),)

    classes.append(type("BatchNormalization", (OpRun,), {"op_domain": "", "_run": batch_norm}))
    classes.append(_max_pool_class())
    return classes + _spec_gap_classes(opset)


def _spec_gap_classes(opset: int) -> list:
    """Valid models onnx.reference cannot evaluate, or evaluates wrongly, found by the differential fuzzer (module
    doc): GatherElements whose indices are narrower than the data off the axis, Pad with negative pads (a crop, then
    the padding: onnxruntime's order), Mean of operands that broadcast, Squeeze before opset 13 with negative axes,
    GlobalMaxPool of other than 4-D inputs (it reduces axes 1-2 of a 3-D one)."""
    from onnx.reference.op_run import OpRun
    from onnx.reference.ops import load_op

    def attribute(node, name, default=None):
        return next((helper_value(a) for a in node.attribute if a.name == name), default)

    def gather_elements(self, data, indices, axis=None):
        # out[i][j][k] = data[indices[i][j][k]][j][k] (axis 0): the indices' extent off the axis may be smaller
        axis = attribute(self.onnx_node, "axis", 0) % data.ndim
        window = tuple(slice(None) if a == axis else slice(0, n) for a, n in enumerate(indices.shape))
        positions = np.where(indices < 0, indices + data.shape[axis], indices)
        return (np.take_along_axis(data[window], positions, axis),)

    def mean(self, *operands):
        total = operands[0]
        for operand in operands[1:]:
            total = total + operand
        return ((total / len(operands)).astype(operands[0].dtype, copy=False),)

    def global_max_pool(self, x):
        return (x.max(axis=tuple(range(2, x.ndim)), keepdims=True),)

    classes = [type("GatherElements", (OpRun,), {"op_domain": "", "_run": gather_elements}),
               type("Mean", (OpRun,), {"op_domain": "", "_run": mean}),
               type("GlobalMaxPool", (OpRun,), {"op_domain": "", "_run": global_max_pool})]
    if opset >= 11:  # pads an input (opset 2's attribute form is left to onnx.reference)
        pad = load_op("", "Pad", opset)

        def cropped_pad(self, data, pads, *rest, **attributes):
            pads = np.asarray(pads, np.int64).reshape(-1)
            axes = rest[1] if len(rest) > 1 and rest[1] is not None else range(data.ndim)
            axes = [int(a) % data.ndim for a in np.asarray(axes).reshape(-1)]
            window = [slice(None)] * data.ndim
            for i, axis in enumerate(axes):
                begin, end = int(pads[i]), int(pads[len(axes) + i])
                window[axis] = slice(max(0, -begin), data.shape[axis] - max(0, -end))
            return pad._run(self, data[tuple(window)], np.maximum(pads, 0), *rest, **attributes)

        classes.append(type("Pad", (pad,), {"op_domain": "", "_run": cropped_pad}))
    if opset < 13:  # axes an attribute: onnx.reference squeezes them one by one, reading a negative axis too late
        def squeeze(self, data, axes=None):
            given = attribute(self.onnx_node, "axes")
            return (np.squeeze(data, axis=None if not given else tuple(int(a) % data.ndim for a in given)),)

        classes.append(type("Squeeze", (OpRun,), {"op_domain": "", "_run": squeeze}))
    return classes


def _max_pool_class():
    """onnx.reference's MaxPool with its 2-D strided or dilated windows taken by numpy slices instead of a Python
    loop over every output element (half of VGG-19's referee time): the same windows (onnx.reference computes them,
    this only takes their maxima), the same values -- a maximum rounds nothing. Unit strides go the same way where
    onnx.reference's other loop (CommonPool) takes the same windows, or reads asymmetric pads wrongly. Its own loops
    still run for the Indices output, NaN inputs (they skip NaNs differently), ceil_mode, SAME padding, padding as
    large as the kernel, and other dtypes."""
    from onnx.reference.ops.op_max_pool import MaxPool

    def max_pool_2d(self, x, auto_pad, ceil_mode, dilations, kernel_shape, new_pads, storage_order, strides,
                    output_spatial_shape):
        if len(self.output) != 1 or x.ndim != 4 or x.dtype.kind != "f" or np.isnan(x).any():
            return MaxPool._max_pool_2d(self, x, auto_pad, ceil_mode, dilations, kernel_shape, new_pads,
                                        storage_order, strides, output_spatial_shape)
        size = x.shape[2:]
        out = [int(n) for n in output_spatial_shape]
        starts = [-int(new_pads[axis][0]) for axis in range(2)]  # window i of an axis: start + i * stride
        before = [max(0, -start) for start in starts]
        after = [max(0, start + (n - 1) * stride + (k - 1) * d + 1 - length)
                 for start, n, stride, k, d, length in zip(starts, out, strides, kernel_shape, dilations, size)]
        padded = np.full(x.shape[:2] + tuple(length + b + a for length, b, a in zip(size, before, after)), -np.inf,
                         x.dtype)
        padded[:, :, before[0]:before[0] + size[0], before[1]:before[1] + size[1]] = x
        y = np.full(x.shape[:2] + tuple(out), -np.inf, x.dtype)
        for i in range(kernel_shape[0]):
            row = starts[0] + before[0] + i * dilations[0]
            for j in range(kernel_shape[1]):
                column = starts[1] + before[1] + j * dilations[1]
                np.maximum(y, padded[:, :, row:row + (out[0] - 1) * strides[0] + 1:strides[0],
                                     column:column + (out[1] - 1) * strides[1] + 1:strides[1]], out=y)
        empty = [np.array([not any(0 <= starts[axis] + n * strides[axis] + i * dilations[axis] < size[axis]
                                   for i in range(kernel_shape[axis])) for n in range(out[axis])], bool)
                 for axis in range(2)]
        y[:, :, empty[0], :] = 0  # a window wholly in the padding is 0, as onnx.reference leaves it
        y[:, :, :, empty[1]] = 0
        return (y,)

    def run(self, x, auto_pad=None, ceil_mode=None, dilations=None, kernel_shape=None, pads=None,
            storage_order=None, strides=None):
        attributes = dict(auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations, kernel_shape=kernel_shape,
                          pads=pads, storage_order=storage_order, strides=strides)
        ones = all(v is None or all(d == 1 for d in v) for v in (strides, dilations))
        if (ones and len(self.output) == 1 and x.ndim == 4 and x.dtype.kind == "f" and not ceil_mode
                and auto_pad in (None, "", "NOTSET", "VALID") and not np.isnan(x).any()
                and all(p < k for p, k in zip(pads or [], list(kernel_shape) * 2))):
            # onnx.reference pools unit strides by another loop, over every output element (most of GoogLeNet's
            # referee time), which reads asymmetric pads as [top, bottom, left, right]; here (no NaN, padding under
            # the kernel's size, no ceil_mode or SAME) its strided path takes the same windows, read right, by slices
            return self._max_pool(x, **attributes)
        return MaxPool._run(self, x, **attributes)

    return type("MaxPool", (MaxPool,), {"op_domain": "", "_max_pool_2d": max_pool_2d, "_run": run})


def helper_value(attribute):
    from onnx import helper

    return helper.get_attribute_value(attribute)


def _default_opset(model) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 21)


def _original_dtypes(model, initializers: Iterable[Any] = ()) -> dict[str, str]:
    """Tensor name -> numpy dtype name of the floating tensors of the original model (where known); ``initializers``:
    the main graph's, when ``model`` is the copy without them (:func:`_without_initializers`)."""
    import onnx
    from onnx import helper

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - shape inference is a convenience here: default to float32 below
        inferred = model
    graph = inferred.graph
    found = {}
    for info in list(graph.input) + list(graph.output) + list(graph.value_info):
        elem = info.type.tensor_type.elem_type if info.type.HasField("tensor_type") else 0
        if elem in _float_types() or elem == onnx.TensorProto.DOUBLE:
            try:
                found[info.name] = np.dtype(helper.tensor_dtype_to_np_dtype(elem)).name
            except (KeyError, TypeError):
                found[info.name] = "bfloat16"
    for tensor in list(graph.initializer) + list(initializers):
        if tensor.data_type in _float_types() or tensor.data_type == onnx.TensorProto.DOUBLE:
            found[tensor.name] = "float16" if tensor.data_type == onnx.TensorProto.FLOAT16 else (
                "float64" if tensor.data_type == onnx.TensorProto.DOUBLE else "float32")
    return found


def _without_initializers(model) -> tuple[Any, dict[str, Any]]:
    """(a copy of ``model`` whose main graph declares its initializers as inputs instead of holding them, the
    initializers by name -- the model's own TensorProtos, not copies): the weights are then read one at a time, when
    a node needs them, instead of all at once in double."""
    import onnx
    from onnx import helper

    def copy_fields(source, target, skip=()) -> None:
        for descriptor, value in source.ListFields():
            if descriptor.name in skip:
                continue
            if hasattr(value, "extend"):  # a repeated field
                getattr(target, descriptor.name).extend(value)
            elif descriptor.message_type is not None:
                getattr(target, descriptor.name).CopyFrom(value)
            else:
                setattr(target, descriptor.name, value)

    light = onnx.ModelProto()
    copy_fields(model, light, skip=("graph",))
    copy_fields(model.graph, light.graph, skip=("initializer",))
    initializers = {t.name: t for t in model.graph.initializer}
    declared = {i.name for i in light.graph.input}
    light.graph.input.extend(helper.make_tensor_value_info(name, t.data_type, list(t.dims))
                             for name, t in initializers.items() if name not in declared)
    return light, initializers


def _as_double(tensor) -> np.ndarray:
    """An initializer's value as the double model holds it (floating types in float64)."""
    from onnx import numpy_helper

    value = numpy_helper.to_array(tensor)
    return value.astype(np.float64) if tensor.data_type in _float_types() else value


# ----------------------------------------------------------------------------------------------------------------
# the runs


@dataclass
class Float64Reference:
    """The float64 truth of every tensor of the main graph, and each floating tensor's Monte Carlo spread."""

    truth: dict[str, np.ndarray]
    spread: dict[str, float]
    tolerance: dict[str, tuple[float, float]]  # name -> (rtol, atol) the spread was measured with
    trials: int
    seconds: float
    nodes: list[Any] = field(default_factory=list)  # the ONNX nodes (for the amplifier)

    def verdict(self, name: str, native, onnxruntime, agree: bool, rtol: float | None = None,
                atol: float | None = None) -> Verdict | None:
        """The verdict on tensor ``name`` (None when it has no float64 truth or is not floating)."""
        truth = self.truth.get(name)
        if truth is None or name not in self.spread:
            return None
        default_rtol, default_atol = self.tolerance[name]
        r = default_rtol if rtol is None else rtol
        a = default_atol if atol is None else atol
        result = judge(relative_error(native, truth, r, a), relative_error(onnxruntime, truth, r, a),
                       self.spread[name], r, agree)
        if result.verdict == ILL_CONDITIONED:
            result.amplifier = self.amplifier(name)
        return result

    def amplifier(self, name: str) -> dict[str, Any] | None:
        """The first ancestor node of ``name`` whose output spread exceeds its tolerance while its floating inputs'
        spreads are within theirs (see the module doc)."""
        producers = {o: i for i, node in enumerate(self.nodes) for o in node.output if o}
        ancestors, stack = set(), [name]
        while stack:
            index = producers.get(stack.pop())
            if index is not None and index not in ancestors:
                ancestors.add(index)
                stack.extend(i for i in self.nodes[index].input if i)
        for index in sorted(ancestors):
            node = self.nodes[index]
            outs = [o for o in node.output if o in self.spread]
            ins = [i for i in node.input if i in self.spread]
            if not outs:
                continue
            loud = [o for o in outs if self.spread[o] > self.tolerance[o][0]]
            if loud and all(self.spread[i] <= self.tolerance[i][0] for i in ins):
                return {"index": index, "node": node.name or outs[0], "op_type": node.op_type,
                        "input_spread": max((self.spread[i] for i in ins), default=0.0),
                        "output_spread": max(self.spread[o] for o in loud)}
        return None


def float64_reference(model, feed: Mapping[str, np.ndarray], tolerance: Tolerance, trials: int = TRIALS,
                      seed: int = 0, names: Iterable[str] | None = None,
                      on_node: Callable[[int, int], None] | None = None) -> Float64Reference:
    """Run the double model (truth) and ``trials`` Monte Carlo runs on ``feed`` (see the module doc).

    ``tolerance(dtype)`` gives a floating dtype's (rtol, atol). ``names`` limits the truth kept to those tensors
    (spreads are kept for every floating tensor: the amplifier needs them). ``on_node(done, total)`` is called after
    each node. Raises whatever onnx.reference raises for a model it cannot evaluate.

    In bounded memory: the truth and the trials advance together, node by node (``onnx.reference``'s node
    implementations, one evaluator for all the runs); a tensor's spread is measured as soon as it is computed, and
    every tensor is dropped after its last reader (the truths of ``names`` excepted); an initializer is turned into
    double only when a node reads it. A trial whose inputs to a node are the truth's own (nothing upstream of it
    rounds: weights, shapes, the graph's inputs) shares the truth's result instead of computing it again.
    """
    import time

    from onnx.reference import ReferenceEvaluator

    started = time.perf_counter()
    light, initializers = _without_initializers(model)
    original = _original_dtypes(light, initializers.values())
    evaluator = ReferenceEvaluator(double_model(light), new_ops=corrected_reference_ops(_default_opset(model)))
    nodes = list(evaluator.rt_nodes_)
    protos = list(model.graph.node)
    if len(nodes) != len(protos):
        raise RuntimeError(f"onnx.reference made {len(nodes)} nodes of the graph's {len(protos)}")
    reads = [[i for i in proto.input] + sorted(_outer_names(proto)) for proto in protos]
    last_reader = {name: index for index, names_read in enumerate(reads) for name in names_read}
    inputs = {i.name for i in model.graph.input}
    start: dict[str, Any] = {"": None}
    start.update(evaluator.rt_inits_)  # what the double model still holds (sparse initializers)
    start.update({n: (np.asarray(v).astype(np.float64) if np.asarray(v).dtype.kind == "f" else np.asarray(v))
                  for n, v in feed.items() if n in inputs})
    runs = [dict(start) for _ in range(1 + trials)]  # runs[0]: the truth; then the Monte Carlo trials
    generators = [np.random.default_rng([seed, trial]) for trial in range(trials)]
    produced = [o for proto in protos for o in proto.output if o]
    wanted = set(names) if names is not None else set(produced)
    kept: dict[str, np.ndarray] = {}
    spread: dict[str, float] = {}
    tolerances: dict[str, tuple[float, float]] = {}

    for index, (node, proto) in enumerate(zip(nodes, protos)):
        for name in reads[index]:  # a weight turns double when first read (it stays while its readers need it)
            if name not in runs[0] and name in initializers:
                value = _as_double(initializers[name])
                for run in runs:
                    run[name] = value
        truth = _run_node(node, runs[0])
        results = [truth]
        for trial, run in enumerate(runs[1:]):
            same = node.op_type not in RANDOM_OPS and all(run.get(n) is runs[0].get(n) for n in reads[index])
            values = truth if same else _run_node(node, run)
            if node.op_type not in EXACT_OPS:
                values = _rounded(values, proto.output, original, generators[trial],
                                  _sum_scale(node.op_type, run.get(proto.input[0]) if proto.input else None))
            if node.op_type in CENTERING_OPS:
                values = _mean_rounded(proto, [run.get(n) for n in proto.input], values, original,
                                       generators[trial])
            results.append(values)
        for position, name in enumerate(proto.output):
            if not name or position >= len(truth):
                continue
            for run, values in zip(runs, results):
                run[name] = values[position]
            value = truth[position]
            if not (isinstance(value, np.ndarray) and value.dtype == np.float64):
                continue
            found = tolerance(np.dtype(original.get(name, "float32")))
            tolerances[name] = rtol_atol = found if found is not None else tolerance(np.dtype(np.float32))
            trial_values = [r[position] for r in results[1:] if isinstance(r[position], np.ndarray)]
            spread[name] = max((0.0 if v is value else relative_error(v, value, *rtol_atol) for v in trial_values),
                               default=0.0)
        for name in set(reads[index]) | set(proto.output):  # drop what no later node reads
            if last_reader.get(name, -1) <= index and name:
                if name in wanted and name in runs[0]:
                    kept[name] = runs[0][name]
                for run in runs:
                    run.pop(name, None)
        if on_node is not None:
            on_node(index + 1, len(nodes))
    for name in wanted - set(kept):  # the graph's inputs and initializers, when asked for
        if name in runs[0]:
            kept[name] = runs[0][name]
        elif name in initializers:
            kept[name] = _as_double(initializers[name])
    truth_kept = {n: np.asarray(v) for n, v in kept.items() if isinstance(v, (np.ndarray, np.generic))}
    return Float64Reference(truth_kept, spread, tolerances, trials, time.perf_counter() - started, protos)


# ops whose result is drawn at random: never shared between the runs
RANDOM_OPS = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial",
                        "Bernoulli", "Dropout"})


def _outer_names(node) -> set[str]:
    """The names the subgraphs of ``node`` (If, Loop, Scan ...) may read from the enclosing graph: every name they
    read (an over-approximation: it keeps those tensors alive until the node has run)."""
    import onnx

    found: set[str] = set()
    for attribute in node.attribute:
        graphs = [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else (
            list(attribute.graphs) if attribute.type == onnx.AttributeProto.GRAPHS else [])
        for graph in graphs:
            for inner in graph.node:
                found.update(i for i in inner.input if i)
                found |= _outer_names(inner)
    return found


def _run_node(node, values: Mapping[str, Any]) -> tuple:
    """One node of an onnx.reference evaluator on ``values`` (what ``ReferenceEvaluator.run`` does for it)."""
    arguments = []
    for name in node.input:
        if name not in values:
            raise RuntimeError(f"onnx.reference: input {name!r} of {node.op_type} {node.onnx_node.name!r} is unknown")
        arguments.append(values[name])
    if node.need_context():  # a subgraph reads the enclosing graph's tensors
        return tuple(node.run(*arguments, context=values))
    return tuple(node.run(*arguments))


def _largest_finite(value) -> float:
    finite = np.abs(value[np.isfinite(value)])
    return float(finite.max()) if finite.size else 0.0


def _sum_scale(op_type: str, first_input) -> str | float | None:
    """What a node's sums round at, beyond its output's own ulp (see the module doc): ``"output"`` for
    :data:`ACCUMULATING_OPS` (an ulp of the output's largest magnitude), the first input's largest magnitude for
    :data:`SUMMING_OPS`, 1 for :data:`LOG_OF_SUM_OPS`, else None."""
    if op_type in ACCUMULATING_OPS:
        return "output"
    if op_type in SUMMING_OPS:
        usable = isinstance(first_input, np.ndarray) and first_input.dtype == np.float64 and first_input.size
        return _largest_finite(first_input) if usable else None
    return 1.0 if op_type in LOG_OF_SUM_OPS else None


def _rounded(values: tuple, names: Sequence[str], dtypes: Mapping[str, str], rng: np.random.Generator,
             sum_scale: str | float | None = None) -> tuple:
    """A rounding node's floating outputs times ``1 + U(-ulp, ulp)`` of their original dtype, plus, for a node that
    sums (``sum_scale``: :func:`_sum_scale`), ``U(-ulp, ulp)`` times that scale (see the module doc)."""
    results = list(values)
    for i, (name, value) in enumerate(zip(names, results)):
        if isinstance(value, np.ndarray) and value.dtype == np.float64 and value.size:
            ulp = _ULP.get(dtypes.get(name, "float32"), _ULP["float32"])
            # an array even for a 0-d tensor (the product of two 0-d arrays is a numpy scalar: its spread was 0)
            noisy = np.asarray(value * (1.0 + rng.uniform(-ulp, ulp, value.shape)))
            if sum_scale is not None:
                scale = _largest_finite(value) if sum_scale == "output" else sum_scale
                noisy = np.asarray(noisy + rng.uniform(-ulp, ulp, value.shape) * scale)  # (0-d: an array still)
            results[i] = noisy
    return tuple(results)


# ops that subtract a row's mean: a float32 implementation subtracts the mean rounded to float32, which shifts every
# normalized element of the row alike by up to an ulp of the mean over the row's deviation (a nearly constant row
# amplifies it: its normalized values no longer sum to 0 -- fuzzer seed 8191, LayerNormalization then
# GlobalAveragePool). Perturbing inputs or outputs elementwise cannot show it: the exact mean recentres every row.
CENTERING_OPS = frozenset({"LayerNormalization", "InstanceNormalization", "GroupNormalization",
                           "MeanVarianceNormalization"})


def _mean_rounded(proto, inputs: list, values: tuple, dtypes: Mapping[str, str], rng: np.random.Generator) -> tuple:
    """``values`` (a :data:`CENTERING_OPS` node's results) with the first output shifted, row by row, by
    ``U(-ulp, ulp) * |mean| / sqrt(variance + epsilon)`` times the row's scale: the rounding of the mean it
    subtracts."""
    x, y = inputs[0] if inputs else None, values[0] if values else None
    if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype == np.float64
            and x.size and x.shape == y.shape and x.ndim >= 1):
        return values
    attributes = {a.name: helper_value(a) for a in proto.attribute}
    epsilon = float(attributes.get("epsilon", 1e-5 if proto.op_type != "MeanVarianceNormalization" else 1e-9))
    rank = x.ndim
    rows, scale = x, inputs[1] if len(inputs) > 1 and isinstance(inputs[1], np.ndarray) else None
    if proto.op_type == "LayerNormalization":
        axis = int(attributes.get("axis", -1)) % rank
        axes = tuple(range(axis, rank))
    elif proto.op_type == "MeanVarianceNormalization":
        axes, scale = tuple(int(a) % rank for a in attributes.get("axes", [0, 2, 3])), None
        if any(a >= rank for a in attributes.get("axes", [0, 2, 3])):
            return values
    elif rank < 2:
        return values
    elif proto.op_type == "InstanceNormalization":
        axes = tuple(range(2, rank))
        scale = None if scale is None else scale.reshape([1, -1] + [1] * (rank - 2))
    else:  # GroupNormalization: rows are groups of channels; scale per group (opset 18) or per channel (21)
        groups = int(attributes.get("num_groups", 1))
        if groups < 1 or x.shape[1] % groups:
            return values
        rows = x.reshape(x.shape[0], groups, -1)
        axes = (2,)
        if scale is not None:
            scale = np.repeat(scale, x.shape[1] // groups) if scale.size == groups else scale
            scale = scale.reshape([1, -1] + [1] * (rank - 2))
    ulp = _ULP.get(dtypes.get(proto.output[0], "float32"), _ULP["float32"])
    with np.errstate(all="ignore"):
        mean = rows.mean(axis=axes, keepdims=True)
        shift = rng.uniform(-ulp, ulp, mean.shape) * np.abs(mean) / np.sqrt(rows.var(axis=axes, keepdims=True)
                                                                              + epsilon)
        if rows is not x:  # a group's shift to each of its channels
            shift = np.repeat(shift.reshape(x.shape[0], -1), x.shape[1] // shift.shape[1], axis=1)
            shift = shift.reshape(x.shape[:2] + (1,) * (rank - 2))
        if scale is not None:
            shift = shift * scale
        shifted = y + shift
    if not np.isfinite(shifted[np.isfinite(y)]).all():
        return values
    return (shifted,) + tuple(values[1:])


__all__ = ["ACCEPTED", "ACCUMULATING_OPS", "BOTH_CLOSE", "CENTERING_OPS", "EXACT_OPS", "Float64Reference",
           "ILL_CONDITIONED", "K", "LOG_OF_SUM_OPS", "NATIVE_WRONG", "NEITHER", "ORT_WRONG", "RANDOM_OPS",
           "SUMMING_OPS", "SUSPECT", "TRIALS", "Verdict", "double_model", "float64_reference", "judge",
           "relative_error"]
