"""Run a finished NNRt model on onnxruntime: an equivalent ONNX model is built from it op by op.

This is the small exporter the ``onnxruntime.cpu`` device needs (the full NNRt -> ONNX exporter is a separate
piece of work). Every exported op is one plain function below, registered with ``@exports``; ``exportable(op)``
answers for the device's ``supports``. Layout: NNRt's NHWC ops are wrapped in Transposes to ONNX's NCHW and back
(onnxruntime's transpose optimizer removes most of them); weights ``[outC, kH, kW, inC/group]`` become
``[outC, inC/group, kH, kW]`` initializers. Semantics follow the native kernels exactly (pad lists
``[top, bottom, left, right]``, SAME padding with the odd unit at the end, TF-style LRN alpha, average pooling
that does not count padding, FULL_CONNECTION's row flattening).

Not exported: quantized tensors and ops without an exporter (the device's ``supports`` says which), and
operands an ONNX attribute needs that are not constants (a TRANSPOSE permutation computed at run time) -- those
fail at build time with OH_NN_FAILED naming the operation.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..devices import PreparedModel
from ..enums import OH_NN_OperationType as OP
from ..enums import OH_NN_ReturnCode
from ..errors import NNRtError

OPSET = 17
IR_VERSION = 8  # what onnxruntime >= 1.17 (the project's floor) loads
NHWC_TO_NCHW = (0, 3, 1, 2)
NCHW_TO_NHWC = (0, 2, 3, 1)

_EXPORTERS: dict[OP, Callable[..., None]] = {}


def exports(*ops: OP):
    def register(fn):
        for op in ops:
            _EXPORTERS[op] = fn
        return fn

    return register


def exportable(op) -> bool:
    """Whether operations of this type can be exported (for Device.supports)."""
    try:
        return OP(int(op)) in _EXPORTERS
    except ValueError:
        return False


def _failed(message: str) -> NNRtError:
    return NNRtError(OH_NN_ReturnCode.OH_NN_FAILED, message)


class _CannotExport(Exception):
    """One operation cannot be expressed in ONNX; becomes OH_NN_FAILED naming the operation."""


def _ints(value) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1).tolist()]


def _int(value, default: int | None = None) -> int:
    values = _ints(value) if value is not None else []
    if not values:
        if default is None:
            raise _CannotExport("a required scalar parameter is empty")
        return default
    return values[0]


def _pair(values) -> list[int]:
    vals = _ints(values)
    return vals * 2 if len(vals) == 1 else vals


class _Exporter:
    """Builds the ONNX graph: one unique ONNX name per NNRt tensor, initializers on first use."""

    def __init__(self, model):
        from onnx import helper

        self.helper = helper
        self.model = model
        self.nodes: list = []
        self.initializers: list = []
        self._names: dict[int, str] = {}
        self._taken: set[str] = set()
        self._emitted: set[int] = set()
        counts: dict[str, int] = {}
        for tensor in model.tensors:
            counts[tensor.name] = counts.get(tensor.name, 0) + 1
        for index, tensor in enumerate(model.tensors):
            name = tensor.name if tensor.name and counts[tensor.name] == 1 else f"{tensor.name or 'tensor'}#{index}"
            self._names[index] = name
            self._taken.add(name)
        self._counter = 0

    # -- names and constants -----------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        while True:
            self._counter += 1
            name = f"{hint}__{self._counter}"
            if name not in self._taken:
                self._taken.add(name)
                return name

    def tensor(self, index: int) -> str:
        """The ONNX name of an NNRt operand (a constant becomes an initializer on first use)."""
        t = self.model.tensors[index]
        if t.quant is not None:
            raise _CannotExport(f"tensor {index} ({t.name}) is quantized; the onnxruntime device runs float models")
        if t.data is not None and index not in self._emitted:
            self._emitted.add(index)
            self.initializers.append(self._initializer(self._names[index], np.asarray(t.data)))
        return self._names[index]

    def _initializer(self, name: str, array: np.ndarray):
        from onnx import numpy_helper

        return numpy_helper.from_array(np.ascontiguousarray(array), name)

    def const(self, array, hint: str = "const") -> str:
        name = self.fresh(hint)
        self.initializers.append(self._initializer(name, np.asarray(array)))
        return name

    def data(self, index: int) -> np.ndarray | None:
        return self.model.tensors[index].data

    def dims(self, index: int) -> tuple[int, ...]:
        return tuple(self.model.tensors[index].dims)

    def dtype(self, index: int) -> np.dtype:
        return self.model.tensors[index].np_dtype

    # -- nodes -------------------------------------------------------------------------------------------------
    def node(self, op_type: str, inputs: Sequence[str], output: str | None = None, hint: str | None = None,
             **attrs) -> str:
        out = output or self.fresh(hint or op_type.lower())
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], name=self.fresh(op_type), **attrs))
        return out

    def transpose(self, name: str, perm: Sequence[int], output: str | None = None) -> str:
        return self.node("Transpose", [name], output, hint=f"{name}.T", perm=list(perm))

    def permuted_constant_or_node(self, index: int, perm: Sequence[int]) -> str:
        """A weight operand in another layout: a permuted initializer when constant, else a Transpose node."""
        data = self.data(index)
        if data is not None and self.model.tensors[index].quant is None:
            return self.const(np.transpose(data, perm), f"{self._names[index]}.T")
        return self.transpose(self.tensor(index), perm)

    def activation(self, name: str, fuse: int, output: str, dtype: np.dtype) -> None:
        """``output = act(name)`` for an OH_NN_FuseType (0: a plain Identity)."""
        if fuse == 0:
            self.node("Identity", [name], output)
        elif fuse == 1:
            self.node("Relu", [name], output)
        elif fuse == 2:
            self.node("Clip", [name, self.const(np.asarray(0, dtype), "zero"), self.const(np.asarray(6, dtype), "six")],
                      output)
        else:
            raise _CannotExport(f"fused activation {fuse} is not an OH_NN_FuseType")

    # -- the whole model ---------------------------------------------------------------------------------------
    def value_info(self, index: int):
        from onnx import helper

        t = self.model.tensors[index]
        dims = [d if d >= 0 else None for d in t.dims]
        return helper.make_tensor_value_info(self._names[index], helper.np_dtype_to_tensor_dtype(t.np_dtype), dims)

    def build(self, name: str = "nnrt_model"):
        from onnx import helper

        from .graph import execution_order

        model = self.model
        for number in execution_order(model):
            operation = model.operations[number]
            label = f"operation #{number} {operation.op.name}"
            exporter = _EXPORTERS.get(operation.op)
            if exporter is None:
                raise _failed(f"onnxruntime.cpu cannot run {label}: no ONNX export for {operation.op.name}")
            arguments = operation.kernel_arguments()
            spec = operation.spec
            fuse = int(arguments.pop(spec.fuse, 0) or 0) if spec.fuse else 0
            try:
                exporter(self, operation, arguments, fuse)
            except _CannotExport as exc:
                raise _failed(f"onnxruntime.cpu cannot run {label}: {exc}") from None
        inputs = [self.value_info(i) for i in model.inputs]
        outputs = []
        for position, index in enumerate(model.outputs):
            if index in model.inputs or model.tensors[index].data is not None:  # an output that is not an op result
                raise _failed(f"onnxruntime.cpu: model output #{position} is not written by any operation")
            outputs.append(self.value_info(index))
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                       producer_name="nnrt_onnx.ort_device")
        onnx_model.ir_version = IR_VERSION
        return onnx_model


# ----------------------------------------------------------------------------------------------------------------
# the exporters: fn(exporter, operation, kernel arguments without the fused activation, fused activation)


def _emit_with_activation(b: _Exporter, operation, fuse: int, emit: Callable[[str], None]) -> None:
    """Emit an op producing the operation's output, with its fused activation applied after it."""
    out_index = operation.outputs[0]
    final = b.tensor(out_index)
    if fuse == 0:
        emit(final)
        return
    raw = b.fresh(f"{final}.pre_activation")
    emit(raw)
    b.activation(raw, fuse, final, b.dtype(out_index))


def _pads_attrs(pad_mode: int, pad_list) -> dict[str, Any]:
    """ONNX padding attributes of a NNRt pad mode / pad list ([top, bottom, left, right])."""
    mode = int(pad_mode)
    if mode == 0:
        return {"auto_pad": "SAME_UPPER"}  # output ceil(in/stride), odd unit at the end: the native SAME
    if mode in (1, 2):
        return {"auto_pad": "VALID"}
    top, bottom, left, right = (_ints(pad_list) or [0, 0, 0, 0])
    return {"pads": [top, left, bottom, right]}


def _check_float_bias(b: _Exporter, index: int) -> None:
    if b.dtype(index).kind != "f":
        raise _CannotExport(f"an integer ({b.dtype(index)}) bias belongs to a quantized layer")


@exports(OP.OH_NN_OPS_CONV2D, OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE)
def _conv(b: _Exporter, operation, args, fuse):
    x, w, bias = operation.inputs
    _check_float_bias(b, bias)
    w_dims = b.dims(w)
    if len(w_dims) != 4 or len(b.dims(x)) != 4:
        raise _CannotExport("input and weight must be 4-D")
    if operation.op == OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE:
        group = b.dims(x)[3]
        if group < 0:
            raise _CannotExport("the channel count of a depthwise convolution's input must be static")
    else:
        group = int(args["group"])
    kernel = [w_dims[1], w_dims[2]]
    attrs = {"kernel_shape": kernel, "strides": _pair(args["strides"]), "dilations": _pair(args["dilation"]),
             "group": group, **_pads_attrs(args["pad_mode"], args["pad_list"])}
    x_nchw = b.transpose(b.tensor(x), NHWC_TO_NCHW)
    weight = b.permuted_constant_or_node(w, (0, 3, 1, 2))

    def emit(out):
        y = b.node("Conv", [x_nchw, weight, b.tensor(bias)], hint=f"{out}.nchw", **attrs)
        b.transpose(y, NCHW_TO_NHWC, out)

    _emit_with_activation(b, operation, fuse, emit)


@exports(OP.OH_NN_OPS_MAX_POOL, OP.OH_NN_OPS_AVG_POOL)
def _pool(b: _Exporter, operation, args, fuse):
    (x,), kind = operation.inputs, ("Max" if operation.op == OP.OH_NN_OPS_MAX_POOL else "Average")
    if len(b.dims(x)) != 4:
        raise _CannotExport("the input must be 4-D NHWC")
    x_nchw = b.transpose(b.tensor(x), NHWC_TO_NCHW)
    if bool(args["global_pool"]):
        op_type, attrs = f"Global{kind}Pool", {}
    else:
        kernel = _pair(args["kernel_size"])
        if len(kernel) != 2:
            raise _CannotExport("kernel size is required (or global pooling)")
        op_type = f"{kind}Pool"
        attrs = {"kernel_shape": kernel, "strides": _pair(args["stride"]), "ceil_mode": int(args["round_mode"]),
                 **_pads_attrs(args["pad_mode"], args["pad_list"])}
        if kind == "Average":
            attrs["count_include_pad"] = 0  # the native kernel does not count padded cells (NNAPI)

    def emit(out):
        y = b.node(op_type, [x_nchw], hint=f"{out}.nchw", **attrs)
        b.transpose(y, NCHW_TO_NHWC, out)

    _emit_with_activation(b, operation, fuse, emit)


@exports(OP.OH_NN_OPS_FULL_CONNECTION)
def _full_connection(b: _Exporter, operation, args, fuse):
    x, w, *rest = operation.inputs
    if bool(args["has_bias"]) != bool(rest):
        raise _CannotExport("has_bias does not match the number of inputs")
    w_dims = b.dims(w)
    if len(w_dims) != 2 or w_dims[1] < 0:
        raise _CannotExport("the weight must be 2-D [out, in] with static dims")
    if rest and b.dtype(x).kind == "f":
        _check_float_bias(b, rest[0])
    k = w_dims[1]
    x_name, rank = b.tensor(x), len(b.dims(x))
    weight_t = b.permuted_constant_or_node(w, (1, 0))
    if bool(args["use_axis"]):
        axis = int(args["axis"])
        axis = axis + rank if axis < 0 else axis
        rows = b.node("Flatten", [x_name], axis=axis)
        lead = b.node("Shape", [x_name], end=axis) if axis > 0 else b.const(np.zeros(0, np.int64), "no_dims")
        out_shape = b.node("Concat", [lead, b.const(np.asarray([w_dims[0]], np.int64), "n_out")], axis=0)
    else:
        rows = b.node("Reshape", [x_name, b.const(np.asarray([-1, k], np.int64), "rows")])
        out_shape = None

    def emit(out):
        y = b.node("MatMul", [rows, weight_t], output=None if (rest or out_shape is not None) else out)
        if rest:
            y = b.node("Add", [y, b.tensor(rest[0])], output=None if out_shape is not None else out)
        if out_shape is not None:
            b.node("Reshape", [y, out_shape], out)

    _emit_with_activation(b, operation, fuse, emit)


@exports(OP.OH_NN_OPS_MATMUL)
def _matmul(b: _Exporter, operation, args, fuse):
    a, c = operation.inputs

    def operand(index, flag):
        rank = len(b.dims(index))
        if not flag or rank < 2:
            return b.tensor(index)
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        return b.permuted_constant_or_node(index, perm)

    left, right = operand(a, bool(args["transpose_a"])), operand(c, bool(args["transpose_b"]))
    _emit_with_activation(b, operation, fuse, lambda out: b.node("MatMul", [left, right], out))


_BINARY = {OP.OH_NN_OPS_ADD: "Add", OP.OH_NN_OPS_SUB: "Sub", OP.OH_NN_OPS_MUL: "Mul", OP.OH_NN_OPS_DIV: "Div",
           OP.OH_NN_OPS_MAXIMUM: "Max", OP.OH_NN_OPS_MINIMUM: "Min"}


@exports(*_BINARY)
def _binary(b: _Exporter, operation, args, fuse):
    a, c = (b.tensor(i) for i in operation.inputs)
    _emit_with_activation(b, operation, fuse, lambda out: b.node(_BINARY[operation.op], [a, c], out))


_UNARY = {OP.OH_NN_OPS_RELU: "Relu", OP.OH_NN_OPS_SIGMOID: "Sigmoid", OP.OH_NN_OPS_TANH: "Tanh",
          OP.OH_NN_OPS_ABS: "Abs", OP.OH_NN_OPS_NEG: "Neg", OP.OH_NN_OPS_SQRT: "Sqrt", OP.OH_NN_OPS_LOG: "Log",
          OP.OH_NN_OPS_FLOOR: "Floor", OP.OH_NN_OPS_CEIL: "Ceil", OP.OH_NN_OPS_HSWISH: "HardSwish",
          OP.OH_NN_OPS_ERF: "Erf", OP.OH_NN_OPS_SIN: "Sin", OP.OH_NN_OPS_COS: "Cos"}


@exports(*_UNARY)
def _unary(b: _Exporter, operation, args, fuse):
    b.node(_UNARY[operation.op], [b.tensor(operation.inputs[0])], b.tensor(operation.outputs[0]))


@exports(OP.OH_NN_OPS_RELU6)
def _relu6(b: _Exporter, operation, args, fuse):
    b.activation(b.tensor(operation.inputs[0]), 2, b.tensor(operation.outputs[0]), b.dtype(operation.inputs[0]))


@exports(OP.OH_NN_OPS_HARD_SIGMOID)
def _hard_sigmoid(b: _Exporter, operation, args, fuse):  # relu6(x + 3) / 6
    b.node("HardSigmoid", [b.tensor(operation.inputs[0])], b.tensor(operation.outputs[0]), alpha=1 / 6, beta=0.5)


@exports(OP.OH_NN_OPS_LEAKY_RELU)
def _leaky_relu(b: _Exporter, operation, args, fuse):
    b.node("LeakyRelu", [b.tensor(operation.inputs[0])], b.tensor(operation.outputs[0]),
           alpha=float(args["negative_slope"]))


@exports(OP.OH_NN_OPS_CLIP)
def _clip(b: _Exporter, operation, args, fuse):
    x = operation.inputs[0]
    dtype = b.dtype(x)
    if dtype.kind != "f":
        raise _CannotExport("integer CLIP is not exported")
    lo, hi = (b.const(np.asarray(float(args[k]), dtype), k) for k in ("min", "max"))
    b.node("Clip", [b.tensor(x), lo, hi], b.tensor(operation.outputs[0]))


@exports(OP.OH_NN_OPS_EXP)
def _exp(b: _Exporter, operation, args, fuse):
    base, scale, shift = float(args["base"]), float(args["scale"]), float(args["shift"])
    x = operation.inputs[0]
    dtype = b.dtype(x)
    t = b.tensor(x)
    if scale != 1.0 or shift != 0.0:
        t = b.node("Add", [b.node("Mul", [t, b.const(np.asarray(scale, dtype), "scale")]),
                           b.const(np.asarray(shift, dtype), "shift")])
    out = b.tensor(operation.outputs[0])
    if base == -1.0:
        b.node("Exp", [t], out)
    else:
        b.node("Pow", [b.const(np.asarray(base, dtype), "base"), t], out)


@exports(OP.OH_NN_OPS_SOFTMAX, OP.OH_NN_OPS_LOG_SOFTMAX)
def _softmax(b: _Exporter, operation, args, fuse):
    op_type = "Softmax" if operation.op == OP.OH_NN_OPS_SOFTMAX else "LogSoftmax"
    b.node(op_type, [b.tensor(operation.inputs[0])], b.tensor(operation.outputs[0]), axis=_int(args["axis"], -1))


@exports(OP.OH_NN_OPS_CONCAT)
def _concat(b: _Exporter, operation, args, fuse):
    b.node("Concat", [b.tensor(i) for i in operation.inputs], b.tensor(operation.outputs[0]), axis=_int(args["axis"]))


@exports(OP.OH_NN_OPS_RESHAPE)
def _reshape(b: _Exporter, operation, args, fuse):
    x, shape = operation.inputs
    data = b.data(shape)
    if data is not None:
        target = b.const(np.asarray(data, np.int64).reshape(-1), "shape")
    elif b.dtype(shape) != np.int64:
        target = b.node("Cast", [b.tensor(shape)], to=7)  # INT64
    else:
        target = b.tensor(shape)
    b.node("Reshape", [b.tensor(x), target], b.tensor(operation.outputs[0]))


@exports(OP.OH_NN_OPS_TRANSPOSE)
def _transpose(b: _Exporter, operation, args, fuse):
    x, perm = operation.inputs
    data = b.data(perm)
    if data is None:
        raise _CannotExport("the permutation must be a constant (ONNX Transpose takes it as an attribute)")
    rank = len(b.dims(x))
    b.transpose(b.tensor(x), [p + rank if p < 0 else p for p in _ints(data)], b.tensor(operation.outputs[0]))


@exports(OP.OH_NN_OPS_FLATTEN)
def _flatten(b: _Exporter, operation, args, fuse):
    b.node("Flatten", [b.tensor(operation.inputs[0])], b.tensor(operation.outputs[0]), axis=int(args["axis"]))


@exports(OP.OH_NN_OPS_SQUEEZE)
def _squeeze(b: _Exporter, operation, args, fuse):
    x = operation.inputs[0]
    dims = b.dims(x)
    listed = _ints(args["axis"])
    if any(d < 0 for d in dims):
        raise _CannotExport("SQUEEZE needs static input dims (which axes have length 1 decides the result)")
    axes = [i for i, d in enumerate(dims) if d == 1] if not listed else \
        sorted({a + len(dims) if a < 0 else a for a in listed if dims[a] == 1})
    out = b.tensor(operation.outputs[0])
    if axes:
        b.node("Squeeze", [b.tensor(x), b.const(np.asarray(axes, np.int64), "axes")], out)
    else:
        b.node("Identity", [b.tensor(x)], out)


@exports(OP.OH_NN_OPS_UNSQUEEZE)
def _unsqueeze(b: _Exporter, operation, args, fuse):
    axes = _ints(args["axis"])
    x, out = b.tensor(operation.inputs[0]), b.tensor(operation.outputs[0])
    if axes:
        b.node("Unsqueeze", [x, b.const(np.asarray(axes, np.int64), "axes")], out)
    else:
        b.node("Identity", [x], out)


def _channels_first(rank: int) -> tuple[list[int], list[int]]:
    """Permutations moving the last (NNRt channel) axis to position 1 and back."""
    to_first = [0, rank - 1] + list(range(1, rank - 1))
    back = [0] + list(range(2, rank)) + [1]
    return to_first, back


@exports(OP.OH_NN_OPS_BATCH_NORM)
def _batch_norm(b: _Exporter, operation, args, fuse):
    x, scale, offset, mean, variance = operation.inputs
    rank = len(b.dims(x))
    if rank < 2:
        raise _CannotExport("BATCH_NORM needs an input of rank >= 2 ([N, ..., C])")
    stats = []
    for index in (scale, offset, mean, variance):
        if len(b.dims(index)) != 1:
            stats.append(b.node("Reshape", [b.tensor(index), b.const(np.asarray([-1], np.int64), "flat")]))
        else:
            stats.append(b.tensor(index))
    to_first, back = _channels_first(rank)
    xt = b.transpose(b.tensor(x), to_first) if rank > 2 else b.tensor(x)
    out = b.tensor(operation.outputs[0])
    y = b.node("BatchNormalization", [xt, *stats], output=None if rank > 2 else out,
               epsilon=float(args["epsilon"]))
    if rank > 2:
        b.transpose(y, back, out)


@exports(OP.OH_NN_OPS_LRN)
def _lrn(b: _Exporter, operation, args, fuse):
    x = operation.inputs[0]
    rank = len(b.dims(x))
    if rank != 4:
        raise _CannotExport("LRN is exported for 4-D NHWC inputs")
    if int(args["norm_region"]) != 0:
        raise _CannotExport("only norm region 0 (ACROSS_CHANNELS) exists in ONNX")
    radius = int(args["depth_radius"])
    size = 2 * radius + 1
    # NNRt (TF) scales the square sum by alpha; ONNX by alpha / size.
    y = b.node("LRN", [b.transpose(b.tensor(x), NHWC_TO_NCHW)], size=size, alpha=float(args["alpha"]) * size,
               beta=float(args["beta"]), bias=float(args["bias"]))
    b.transpose(y, NCHW_TO_NHWC, b.tensor(operation.outputs[0]))


# ----------------------------------------------------------------------------------------------------------------
# the prepared model


def to_onnx(model, name: str = "nnrt_model"):
    """An ONNX ModelProto computing the same as the finished NNRt ``model`` (raises NNRtError OH_NN_FAILED)."""
    return _Exporter(model).build(name)


class OrtPreparedModel(PreparedModel):
    """A model compiled for onnxruntime: the exported ONNX model in an InferenceSession."""

    def __init__(self, model, options, threads: int = 0):
        try:
            import onnxruntime as ort
        except ImportError:  # pragma: no cover - onnxruntime is a dependency
            raise NNRtError(OH_NN_ReturnCode.OH_NN_UNAVAILABLE_DEVICE, "onnxruntime is not installed") from None
        self.model = model
        self.onnx_model = to_onnx(model)
        session_options = ort.SessionOptions()
        session_options.log_severity_level = 3
        if threads:
            session_options.intra_op_num_threads = threads
            session_options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(self.onnx_model.SerializeToString(), session_options,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's errors have no stable public types
            raise _failed(f"onnxruntime.cpu cannot compile the model: {str(exc).splitlines()[0]}") from None
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.output_names = [o.name for o in self.session.get_outputs()]

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        model = self.model
        if len(inputs) != len(model.inputs):
            raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER,
                            f"the model has {len(model.inputs)} inputs, got {len(inputs)}")
        feed = {name: np.ascontiguousarray(array) for name, array in zip(self.input_names, inputs)}
        try:
            results = self.session.run(self.output_names, feed)
        except Exception as exc:
            raise _failed(f"onnxruntime.cpu run failed: {str(exc).splitlines()[0]}") from None
        outputs = []
        for index, value in zip(model.outputs, results):
            declared = model.tensors[index].np_dtype
            value = np.asarray(value)
            outputs.append(value.astype(declared) if value.dtype != declared else value)
        return outputs


__all__ = ["OrtPreparedModel", "exportable", "exports", "to_onnx"]
