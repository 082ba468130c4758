"""Random *valid* ONNX graphs of the ops exporters emit, for the differential fuzzer (tools/difffuzz.py).

``generate(seed, index)`` is a pure function of its arguments: a ModelProto of 1-6 steps (a step is one op, or an
exporter's idiom of several nodes such as Shape -> Gather -> Unsqueeze -> Concat -> Reshape), 1-3 model inputs,
weights as initializers, Constant nodes or (sometimes) runtime inputs, dims static or dynamic (named, e.g. "N").

The builder tracks every tensor's concrete shape at each *binding* of the dynamic dims (the sizes the model is run
at: ``BINDINGS`` per model), and draws attributes that are valid at all of them: a kernel fits the smallest image,
an index is within the smallest dim, a Reshape's target divides every size. The model carries what its runs need
in ``metadata_props["difffuzz"]`` (JSON): the values of each dynamic dim per binding, and the value range of each
runtime input (``normal``, ``positive``, ``nonzero``, ``int:LOW:HIGH``, ``bool``); :func:`feeds` makes the inputs
of one binding from it. The generator's shape model is tested against onnxruntime (tests/test_difffuzz.py): a
disagreement only costs discarded models, but the test keeps the discard rate honest.
"""
from __future__ import annotations

import json
import math
import random
import zlib
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, F16, D, I64, I32, BOOL = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT64,
                             TensorProto.INT32, TensorProto.BOOL)
BINDINGS = 3  # sizes of the dynamic dims each model is run at
MAX_ELEMENTS = 6000  # per tensor and binding: bigger outputs make an op draw again
BIG_ELEMENTS = 1 << 16  # the same in a "big" model (wide channels: the kernels' vector and tile paths)
BIG_SHARE = 0.15  # of the models
MAX_RUNTIME_INPUTS = 3
META_KEY = "difffuzz"
INT_MAX = (1 << 63) - 1
OPSETS = [(11, 1), (12, 1), (13, 2), (14, 1), (15, 1), (16, 1), (17, 8), (18, 3), (19, 2), (20, 2), (21, 2)]


class Skip(Exception):
    """The step cannot be drawn on this graph (no operand fits, a tensor would be too large): draw another."""


@dataclass
class Tensor:
    name: str
    dtype: int
    shapes: list  # one tuple of ints per binding
    value: np.ndarray | None = None  # known constant value (initializers, Constant nodes)
    free: tuple = ()  # axes whose size depends on the data (NonZero): not tracked

    @property
    def rank(self) -> int | None:
        ranks = {len(s) for s in self.shapes}
        return ranks.pop() if len(ranks) == 1 else None

    def dim(self, axis: int) -> tuple:
        return tuple(s[axis] for s in self.shapes)

    def static(self, axis: int) -> bool:
        return len(set(self.dim(axis))) == 1

    def low(self, axis: int) -> int:
        return min(self.dim(axis))

    @property
    def is_static(self) -> bool:
        return self.rank is not None and all(self.static(a) for a in range(self.rank))

    @property
    def floating(self) -> bool:
        return self.dtype in (F, F16, D)


@dataclass
class Builder:
    seed: int
    index: int
    rng: random.Random = field(init=False)
    np_rng: np.random.Generator = field(init=False)
    opset: int = field(init=False)
    dims: dict = field(default_factory=dict)  # dynamic dim name -> values per binding
    dim_kinds: dict = field(default_factory=dict)
    nodes: list = field(default_factory=list)
    inputs: list = field(default_factory=list)  # ValueInfoProto
    initializers: list = field(default_factory=list)
    tensors: list = field(default_factory=list)  # operands later steps may read
    specs: dict = field(default_factory=dict)  # runtime input -> value range
    activations: int = 0  # runtime inputs that are not weights
    counter: int = 0
    made: dict = field(default_factory=dict)  # every tensor a node made, by name

    def __post_init__(self):
        self.rng = random.Random(self.seed * 1_000_003 + self.index)
        self.np_rng = np.random.default_rng(self.rng.getrandbits(63))
        versions, weights = zip(*OPSETS)
        self.opset = self.rng.choices(versions, weights)[0]
        self.big = self.rng.random() < BIG_SHARE
        self.limit = BIG_ELEMENTS if self.big else MAX_ELEMENTS

    # -- bookkeeping -----------------------------------------------------------------------------------------------

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def snapshot(self):
        return (len(self.nodes), len(self.inputs), len(self.initializers), len(self.tensors), dict(self.specs),
                self.activations, dict(self.dims), dict(self.dim_kinds))

    def restore(self, state) -> None:
        n, i, w, t, specs, activations, dims, kinds = state
        del self.nodes[n:], self.inputs[i:], self.initializers[w:], self.tensors[t:]
        self.specs, self.activations, self.dims, self.dim_kinds = specs, activations, dims, kinds

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def choice(self, items):
        return items[self.rng.randrange(len(items))]

    # -- dims ------------------------------------------------------------------------------------------------------

    def dynamic(self, kind: str) -> str:
        """A dynamic dim of ``kind`` (batch, seq, spatial, channel): one the model has already (often), or new."""
        same = [n for n, k in self.dim_kinds.items() if k == kind]
        if same and self.chance(0.7):
            return self.choice(same)
        low = {"batch": 1, "seq": 1, "spatial": 3, "channel": 1}[kind]
        high = {"batch": 4, "seq": 9, "spatial": 12, "channel": 6}[kind]
        values = self.rng.sample(range(low, high + 1), BINDINGS)
        if kind in ("batch", "seq") and 1 not in values and self.chance(0.5):
            values[self.rng.randrange(BINDINGS)] = 1
        name = {"batch": "N", "seq": "L", "spatial": "S", "channel": "C"}[kind]
        name = name if name not in self.dims else f"{name}{len(self.dims)}"
        self.dims[name], self.dim_kinds[name] = tuple(values), kind
        return name

    def named(self, values: tuple) -> int | str:
        """The declared dim for per-binding ``values``: an int when static, else a dim name with those values."""
        if len(set(values)) == 1:
            return values[0]
        for name, known in self.dims.items():
            if known == tuple(values):
                return name
        name = f"D{len(self.dims)}"
        self.dims[name], self.dim_kinds[name] = tuple(values), "derived"
        return name

    def shapes_of(self, declared: list) -> list:
        return [tuple(d if isinstance(d, int) else self.dims[d][b] for d in declared) for b in range(BINDINGS)]

    def declare(self, shapes: list) -> list:
        return [self.named(tuple(s[a] for s in shapes)) for a in range(len(shapes[0]))]

    # -- tensors ---------------------------------------------------------------------------------------------------

    def add_input(self, dtype: int, declared: list, spec: str = "normal", weight: bool = False) -> Tensor:
        name = self.name("w" if weight else "x")
        self.inputs.append(helper.make_tensor_value_info(name, dtype, declared))
        self.specs[name] = spec
        tensor = Tensor(name, dtype, self.shapes_of(declared))
        if not weight:
            self.activations += 1
            self.tensors.append(tensor)
        return tensor

    def can_add_input(self) -> bool:
        return self.activations < MAX_RUNTIME_INPUTS

    def constant(self, array: np.ndarray, node_p: float = 0.25) -> Tensor:
        """A constant operand: an initializer, or a Constant node (as torch writes shapes and axes)."""
        array = np.asarray(array)
        name = self.name("c")
        if self.chance(node_p):
            self.nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array, name)))
        else:
            self.initializers.append(numpy_helper.from_array(array, name))
        dtype = helper.np_dtype_to_tensor_dtype(array.dtype)
        return Tensor(name, dtype, [tuple(array.shape)] * BINDINGS, array)

    def ints(self, values, node_p: float = 0.25) -> Tensor:
        return self.constant(np.asarray(values, np.int64), node_p)

    def weight(self, shape, spec: str = "normal", runtime_p: float = 0.12, dtype=np.float32) -> Tensor:
        """A weight: an initializer (mostly), a Constant node, or a runtime input ("weights given as inputs")."""
        shape = tuple(int(s) for s in shape)
        if self.chance(runtime_p):
            return self.add_input(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape), spec, weight=True)
        return self.constant(values(self.np_rng, spec, shape, np.dtype(dtype)), node_p=0.05)

    def node(self, op: str, inputs: list, outputs: list, domain: str = "", reusable: bool = True,
             **attributes) -> list:
        """Add a node; ``inputs`` are Tensors or None (an omitted optional input), ``outputs`` (dtype, shapes) or
        None (an omitted optional output). Too large an output raises Skip."""
        made = []
        names = []
        for spec in outputs:
            if spec is None:
                names.append("")
                continue
            dtype, shapes = spec
            if any(math.prod(s) > self.limit or min(s, default=1) < 0 for s in shapes):
                raise Skip("too large")
            tensor = Tensor(self.name("t"), dtype, [tuple(s) for s in shapes])
            self.made[tensor.name] = tensor
            made.append(tensor)
            names.append(tensor.name)
        attrs = {k: v for k, v in attributes.items() if v is not None}
        self.nodes.append(helper.make_node(op, [t.name if t is not None else "" for t in inputs], names,
                                           name=self.name(f"{op}_"), domain=domain, **attrs))
        if reusable:
            self.tensors.extend(made)
        return made

    def pick(self, ok, make=None, fresh: float = 0.12) -> Tensor:
        """An operand: an existing tensor that ``ok`` accepts (recent ones likelier: chains, but DAGs too), or a
        new model input ``make()`` makes; Skip when neither."""
        found = [t for t in self.tensors if t.rank is not None and ok(t)]
        if found and (make is None or not self.can_add_input() or not self.chance(fresh)):
            weights = [(i + 1) ** 2 for i in range(len(found))]
            return self.rng.choices(found, weights)[0]
        if make is not None and self.can_add_input():
            made = make()
            if made.rank is not None and ok(made):
                return made
        raise Skip("no operand")

    # -- fresh inputs ----------------------------------------------------------------------------------------------

    def batch(self) -> int | str:
        return self.dynamic("batch") if self.chance(0.55) else self.choice([1, 1, 2, 3])

    def spatial(self, low: int = 3) -> int | str:
        if self.chance(0.25) and low <= 3:
            return self.dynamic("spatial")
        return self.rng.randint(max(low, 6), 20) if self.big else self.rng.randint(low, 12)

    def width(self) -> int:
        """A channel or feature count: small, or (in a big model) wide, around the vector widths."""
        return self.choice([16, 17, 24, 32, 33, 48, 64]) if self.big else self.choice([1, 2, 3, 4, 5, 6, 8])

    def image(self, rank: int = 4, channels: int | None = None) -> Tensor:
        c = channels if channels is not None else (self.width() if self.big else self.choice([1, 1, 2, 3, 4, 5, 6]))
        return self.add_input(F, [self.batch(), c] + [self.spatial() for _ in range(rank - 2)])

    def sequence(self, features: int | None = None) -> Tensor:
        d = features if features is not None else self.width()
        seq = self.dynamic("seq") if self.chance(0.4) else self.rng.randint(1, 7)
        return self.add_input(F, [self.batch(), seq, d])

    def fresh(self, dtype: int = F, rank: int | None = None) -> Tensor:
        rank = rank if rank is not None else self.choice([1, 2, 2, 3, 3, 4, 4, 4])
        declared = []
        for axis in range(rank):
            if axis == 0 and rank > 1:
                declared.append(self.batch())
            elif self.chance(0.15):
                declared.append(self.dynamic(self.choice(["seq", "spatial", "channel"])))
            else:
                declared.append(self.choice([1, 2, 3, 4, 5, 6, 7, 8]))
        spec = {F: "normal", I64: "int:-5:5", I32: "int:-5:5", BOOL: "bool"}[dtype]
        return self.add_input(dtype, declared, spec)


def values(rng: np.random.Generator, spec: str, shape, dtype: np.dtype) -> np.ndarray:
    """Random values of a value range (see the module doc)."""
    shape = tuple(shape)
    if spec == "bool" or dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if spec.startswith("int:"):
        low, high = (int(v) for v in spec.split(":")[1:])
        return np.asarray(rng.integers(low, high + 1, shape)).astype(dtype)
    if spec == "positive":
        array = rng.uniform(0.5, 2.0, shape)
    elif spec == "nonzero":
        array = rng.uniform(0.5, 2.0, shape) * np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    elif spec == "unit":
        array = rng.uniform(-1.0, 1.0, shape)
    else:
        array = rng.standard_normal(shape)
    if dtype.kind in "iu":
        return np.asarray(np.round(array * 3)).astype(dtype)
    return np.asarray(array).astype(dtype)


# ---------------------------------------------------------------------------------------------------------------------
# steps: each adds one op (or one exporter idiom) or raises Skip

def _float(t: Tensor) -> bool:
    return t.dtype == F


def _rank(*ranks):
    return lambda t: t.dtype == F and t.rank in ranks


def _image_like(t: Tensor, ranks=(3, 4)) -> bool:
    return t.dtype == F and t.rank in ranks and t.static(1)


def _window(b: Builder, size: tuple, kernel: int, stride: int, dilation: int, pads: tuple, ceil: bool = False,
            auto: str = "NOTSET") -> tuple:
    """Output size of a convolution/pooling window along one axis, per binding (ORT's rule for ceil_mode: a last
    window that would start in the right padding is dropped). Skip when it is not positive."""
    effective = (kernel - 1) * dilation + 1
    out = []
    for d in size:
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-d // stride)
        elif auto == "VALID":
            o = (d - effective) // stride + 1
        else:
            span = d + pads[0] + pads[1] - effective
            if span < 0:
                raise Skip("window")
            o = (-(-span // stride) if ceil else span // stride) + 1
            if ceil and (o - 1) * stride >= d + pads[0]:
                o -= 1
        if o < 1:
            raise Skip("window")
        out.append(o)
    return tuple(out)


def _auto_pad(b: Builder, p_same: float = 0.25) -> str:
    if not b.chance(p_same):
        return "NOTSET"
    return b.choice(["SAME_UPPER", "SAME_UPPER", "SAME_LOWER", "VALID"])


def _spatial_attrs(b: Builder, x: Tensor, max_kernel: int = 5, dilated: bool = True, pad_below_kernel=False):
    """kernel, strides, dilations, pads, auto_pad for x's spatial axes, valid at every binding."""
    axes = range(2, x.rank)
    kernel = [min(b.rng.randint(1, max_kernel), max(1, x.low(a))) if b.chance(0.8) else b.rng.randint(1, 3)
              for a in axes]
    strides = [b.choice([1, 1, 1, 2, 2, 3]) for _ in axes]
    auto = _auto_pad(b)
    dilations = [b.choice([1, 1, 1, 1, 2]) if dilated and auto == "NOTSET" else 1 for _ in axes]
    pads = []
    for k in kernel:
        top = (k - 1) if pad_below_kernel else 2
        pads.append((b.rng.randint(0, max(0, top)), b.rng.randint(0, max(0, top))) if b.chance(0.6) else (0, 0))
    return kernel, strides, dilations, pads, auto


def _pads_attr(pads, auto):
    if auto != "NOTSET" or not any(p for pair in pads for p in pair):
        return None
    return [p[0] for p in pads] + [p[1] for p in pads]


def step_conv(b: Builder) -> None:
    rank = 3 if b.chance(0.15) else 4
    x = b.pick(lambda t: _image_like(t, (rank,)), lambda: b.image(rank))
    c = x.dim(1)[0]
    form = b.rng.random()
    if form < 0.25 and c > 1:
        group, m = c, c * b.choice([1, 1, 2])  # depthwise
    elif form < 0.35:
        divisors = [g for g in range(2, c + 1) if c % g == 0]
        group = b.choice(divisors) if divisors else 1
        m = group * b.choice([1, 2])
    else:
        group, m = 1, b.width()
    kernel, strides, dilations, pads, auto = _spatial_attrs(b, x)
    spatial = [_window(b, x.dim(a), kernel[i], strides[i], dilations[i], pads[i], auto=auto)
               for i, a in enumerate(range(2, rank))]
    w = b.weight([m, c // group] + kernel, runtime_p=0.12)
    bias = b.weight([m], runtime_p=0.1) if b.chance(0.6) else None
    shapes = [(x.shapes[k][0], m) + tuple(s[k] for s in spatial) for k in range(BINDINGS)]
    b.node("Conv", [x, w] + ([bias] if bias else []), [(F, shapes)],
           kernel_shape=kernel if b.chance(0.7) else None,
           strides=strides if strides != [1] * len(strides) or b.chance(0.3) else None,
           dilations=dilations if dilations != [1] * len(dilations) or b.chance(0.2) else None,
           pads=_pads_attr(pads, auto), auto_pad=auto if auto != "NOTSET" else None,
           group=group if group != 1 or b.chance(0.2) else None)


def step_conv_transpose(b: Builder) -> None:
    x = b.pick(lambda t: _image_like(t, (4,)) and t.dim(1)[0] <= 8, lambda: b.image(4))
    c = x.dim(1)[0]
    group = c if c > 1 and b.chance(0.15) else 1
    m = group * b.choice([1, 2, 3])
    kernel = [b.rng.randint(1, 4) for _ in range(2)]
    strides = [b.choice([1, 2, 2, 3]) for _ in range(2)]
    dilations = [b.choice([1, 1, 1, 2]) for _ in range(2)]
    auto = b.choice(["NOTSET"] * 6 + ["SAME_UPPER", "SAME_LOWER", "VALID"])
    output_padding = [b.rng.randint(0, s - 1) if b.chance(0.2) else 0 for s in strides]
    pads = [(b.rng.randint(0, 2), b.rng.randint(0, 2)) if b.chance(0.5) else (0, 0) for _ in range(2)]
    spatial = []
    for i in range(2):
        eff = (kernel[i] - 1) * dilations[i] + 1
        size = []
        for d in x.dim(2 + i):
            if auto in ("SAME_UPPER", "SAME_LOWER"):
                # the spec says d * stride; onnxruntime (and ONNX's shape inference) clamp the total padding at 0
                o = d * strides[i] - max(0, strides[i] - eff - output_padding[i])
            else:
                o = strides[i] * (d - 1) + output_padding[i] + eff - (sum(pads[i]) if auto == "NOTSET" else 0)
            if o < 1:
                raise Skip("window")
            size.append(o)
        spatial.append(size)
    w = b.weight([c, m // group] + kernel, runtime_p=0.08)
    bias = b.weight([m], runtime_p=0.05) if b.chance(0.5) else None
    shapes = [(x.shapes[k][0], m, spatial[0][k], spatial[1][k]) for k in range(BINDINGS)]
    b.node("ConvTranspose", [x, w] + ([bias] if bias else []), [(F, shapes)],
           kernel_shape=kernel if b.chance(0.6) else None, strides=strides,
           dilations=dilations if dilations != [1, 1] else None,
           output_padding=output_padding if any(output_padding) else None,
           pads=_pads_attr(pads, auto), auto_pad=auto if auto != "NOTSET" else None,
           group=group if group != 1 else None)


def step_pool(b: Builder) -> None:
    op = b.choice(["MaxPool", "AveragePool"])
    rank = 3 if b.chance(0.15) else 4
    x = b.pick(lambda t: _image_like(t, (rank,)), lambda: b.image(rank))
    kernel, strides, dilations, pads, auto = _spatial_attrs(
        b, x, max_kernel=4, dilated=op == "MaxPool" or b.opset >= 19, pad_below_kernel=True)
    if auto in ("SAME_UPPER", "SAME_LOWER") and any(s > k for s, k in zip(strides, kernel)):
        auto = "NOTSET"  # (onnxruntime computes negative pads and refuses)
    ceil = auto == "NOTSET" and b.chance(0.3)  # (with auto_pad, onnxruntime's ceil_mode is not the spec's)
    spatial = [_window(b, x.dim(a), kernel[i], strides[i], dilations[i], pads[i], ceil, auto)
               for i, a in enumerate(range(2, rank))]
    shapes = [x.shapes[k][:2] + tuple(s[k] for s in spatial) for k in range(BINDINGS)]
    attrs = dict(kernel_shape=kernel, strides=strides if strides != [1] * len(strides) else None,
                 pads=_pads_attr(pads, auto), auto_pad=auto if auto != "NOTSET" else None,
                 ceil_mode=1 if ceil else None,
                 dilations=dilations if any(d != 1 for d in dilations) else None)
    outputs = [(F, shapes)]
    if op == "AveragePool":
        attrs["count_include_pad"] = 1 if b.chance(0.3) else None
    elif b.chance(0.1):
        outputs.append((I64, shapes))
    b.node(op, [x], outputs, **attrs)


def step_global_pool(b: Builder) -> None:
    x = b.pick(lambda t: _image_like(t, (3, 4)), lambda: b.image(4))
    shapes = [s[:2] + (1,) * (len(s) - 2) for s in x.shapes]
    b.node(b.choice(["GlobalAveragePool", "GlobalAveragePool", "GlobalMaxPool"]), [x], [(F, shapes)])


def step_batch_norm(b: Builder) -> None:
    x = b.pick(lambda t: _image_like(t, (2, 3, 4)), lambda: b.image(4))
    c = x.dim(1)[0]
    params = [b.weight([c], runtime_p=0.05), b.weight([c], runtime_p=0.05), b.weight([c], runtime_p=0.05),
              b.weight([c], "positive", runtime_p=0.05)]
    b.node("BatchNormalization", [x] + params, [(F, x.shapes)], epsilon=b.choice([None, 1e-3, 1e-5, 0.1]))


def step_instance_norm(b: Builder) -> None:
    x = b.pick(lambda t: _image_like(t, (3, 4)), lambda: b.image(4))
    c = x.dim(1)[0]
    b.node("InstanceNormalization", [x, b.weight([c]), b.weight([c])], [(F, x.shapes)],
           epsilon=b.choice([None, 1e-3, 1e-5]))


def step_group_norm(b: Builder) -> None:
    if b.opset < 21:
        raise Skip("opset")
    x = b.pick(lambda t: _image_like(t, (3, 4)) and t.dim(1)[0] > 1, lambda: b.image(4, b.choice([2, 4, 6])))
    c = x.dim(1)[0]
    groups = b.choice([g for g in range(1, c + 1) if c % g == 0])
    b.node("GroupNormalization", [x, b.weight([c]), b.weight([c])], [(F, x.shapes)], num_groups=groups,
           epsilon=b.choice([None, 1e-3]))


def step_layer_norm(b: Builder) -> None:
    if b.opset < 17:
        raise Skip("opset")
    x = b.pick(_rank(2, 3, 4), lambda: b.sequence())
    axis = b.rng.randint(-x.rank, x.rank - 1) if b.chance(0.4) else -1
    first = axis % x.rank
    normalized = [x.dim(a) for a in range(first, x.rank)]
    # Scale: the normalised shape, or a shape that broadcasts to it (1s), as a weight or a runtime input
    runtime = b.can_add_input() and b.chance(0.2)
    scale_dims = []
    for k, d in enumerate(normalized):
        if len(set(d)) > 1:
            scale_dims.append(b.named(d) if runtime else 1)
        else:
            scale_dims.append(d[0] if b.chance(0.8) else 1)
    if b.chance(0.15) and len(scale_dims) > 1:
        scale_dims = scale_dims[b.rng.randint(1, len(scale_dims) - 1):]  # fewer dims, broadcast from the left
    if runtime:
        scale = b.add_input(F, scale_dims, "normal", weight=True)
    else:
        scale = b.weight([d if isinstance(d, int) else 1 for d in scale_dims], runtime_p=0.0)
    bias = None
    if b.chance(0.6):
        bias = b.weight([d if isinstance(d, int) else 1 for d in scale_dims], runtime_p=0.1)
    b.node("LayerNormalization", [x, scale] + ([bias] if bias else []), [(F, x.shapes)],
           axis=axis if axis != -1 or b.chance(0.3) else None, epsilon=b.choice([None, 1e-5, 1e-3]))


def step_gemm(b: Builder) -> None:
    trans_a = b.chance(0.2)
    a = b.pick(_rank(2), lambda: b.add_input(F, [b.batch(), b.choice([1, 2, 3, 4, 8])]))
    if trans_a and not a.static(0):
        trans_a = False
    k = a.dim(0) if trans_a else a.dim(1)
    if len(set(k)) > 1:
        raise Skip("dynamic K")
    k, m = k[0], (a.dim(1) if trans_a else a.dim(0))
    n = b.width()
    trans_b = b.chance(0.5)
    w = b.weight([n, k] if trans_b else [k, n], runtime_p=0.12)
    form = b.choice(["none", "n", "n", "n", "1n", "mn", "m1", "1", "scalar", "11"])
    c = None
    if form != "none":
        dims = {"n": [n], "1n": [1, n], "mn": [m, n], "m1": [m, 1], "1": [1], "scalar": [], "11": [1, 1]}[form]
        if any(len(set(d)) > 1 for d in dims if isinstance(d, tuple)):
            if b.can_add_input() and b.chance(0.5):
                c = b.add_input(F, [b.named(d) if isinstance(d, tuple) else d for d in dims], weight=True)
            else:
                dims = [n] if form == "mn" else [1]
        if c is None:
            c = b.weight([d[0] if isinstance(d, tuple) else d for d in dims], runtime_p=0.05)
    shapes = [(mm, n) for mm in m]
    b.node("Gemm", [a, w] + ([c] if c is not None else []), [(F, shapes)],
           transA=1 if trans_a else None, transB=1 if trans_b else None,
           alpha=b.choice([None] * 4 + [0.5, 2.0, -1.0]), beta=b.choice([None] * 4 + [0.5, 2.0]) if c else None)


def step_flatten(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1, lambda: b.fresh())
    axis = b.rng.randint(-x.rank, x.rank)
    cut = axis + x.rank if axis < 0 else axis
    shapes = [(math.prod(s[:cut]), math.prod(s[cut:])) for s in x.shapes]
    b.node("Flatten", [x], [(x.dtype, shapes)], axis=axis if axis != 1 or b.chance(0.3) else None)


def step_matmul(b: Builder) -> None:
    a = b.pick(_rank(1, 2, 3, 4), lambda: b.fresh(F, b.choice([2, 3, 3, 4])))
    if a.rank == 1:
        k = a.dim(0)
        if len(set(k)) > 1:
            raise Skip("dynamic K")
        n = b.choice([1, 3, 4, 5])
        batch = [b.choice([1, 2]) for _ in range(b.rng.randint(0, 2))]
        w = b.weight(batch + [k[0], n])
        shapes = [tuple(batch) + (n,)] * BINDINGS
        b.node("MatMul", [a, w], [(F, shapes)])
        return
    k = a.dim(a.rank - 1)
    residual = [t for t in b.tensors if t is not a and t.dtype == F and t.rank is not None and t.rank >= 2
                and t.dim(t.rank - 2) == k]
    if residual and b.chance(0.25):  # two activations (attention's Q K^T style)
        w = b.choice(residual)
        batch_a, batch_w = [s[:-2] for s in a.shapes], [s[:-2] for s in w.shapes]
        try:
            batch = [np.broadcast_shapes(x, y) for x, y in zip(batch_a, batch_w)]
        except ValueError:
            raise Skip("batch dims") from None
        shapes = [tuple(bt) + (a.shapes[i][-2], w.shapes[i][-1]) for i, bt in enumerate(batch)]
        b.node("MatMul", [a, w], [(F, shapes)])
        return
    if len(set(k)) > 1:
        if not b.can_add_input():
            raise Skip("dynamic K")
        n = b.choice([2, 3, 4])
        w = b.add_input(F, [b.named(k), n], weight=True)
        b.node("MatMul", [a, w], [(F, [s[:-1] + (n,) for s in a.shapes])])
        return
    k = k[0]
    if b.chance(0.15):  # a vector: the last dim goes away
        w = b.weight([k])
        b.node("MatMul", [a, w], [(F, [s[:-1] for s in a.shapes])])
        return
    n = b.choice([b.width(), b.width(), k])
    extra = a.rank - 2
    batch = []
    for axis in range(b.rng.randint(0, extra + 1) if b.chance(0.3) else 0):
        source = a.dim(a.rank - 3 - axis) if axis < extra else (1,)
        batch.insert(0, source[0] if len(set(source)) == 1 and b.chance(0.5) else 1)
    if b.chance(0.1):
        batch = [b.choice([1, 2])] + batch
    w = b.weight(batch + [k, n])
    try:
        shapes = [tuple(np.broadcast_shapes(s[:-2], tuple(batch))) + (s[-2], n) for s in a.shapes]
    except ValueError:
        raise Skip("batch dims") from None
    b.node("MatMul", [a, w], [(F, shapes)])


def _partner(b: Builder, a: Tensor, dtype: int, spec: str = "normal", same_only: bool = False) -> Tensor:
    """A second operand for a broadcasting op with ``a``: an existing tensor (a residual: same shape, likely), a
    runtime input or a constant of a shape that broadcasts with a's (mixed ranks, 1s, extra leading dims)."""
    existing = [t for t in b.tensors if t is not a and t.dtype == dtype and t.rank is not None
                and _broadcasts(t, a) and (not same_only or t.shapes == a.shapes)]
    same = [t for t in existing if t.shapes == a.shapes]
    if same and b.chance(0.35) and spec == "normal":
        return b.choice(same)
    if existing and b.chance(0.2) and spec == "normal":
        return b.choice(existing)
    rank = a.rank if same_only else b.choice([a.rank] * 4 + [max(a.rank - 1, 0), max(a.rank - 2, 0), a.rank + 1])
    rank = min(rank, 5)
    declared = []
    for j in range(rank):  # from the right
        if j < a.rank:
            d = a.dim(a.rank - 1 - j)
            if len(set(d)) == 1:
                v = d[0]
                declared.insert(0, v if same_only or b.chance(0.7) else (1 if v != 1 else b.choice([1, 2, 3])))
            else:
                declared.insert(0, d if same_only or b.chance(0.6) else 1)
        else:
            declared.insert(0, b.choice([1, 1, 2]))
    runtime = b.can_add_input() and b.chance(0.25)
    if runtime:
        return b.add_input(dtype, [b.named(d) if isinstance(d, tuple) else d for d in declared], spec,
                           weight=b.chance(0.5))
    if any(isinstance(d, tuple) for d in declared):
        if same_only:
            raise Skip("dynamic partner")
        declared = [1 if isinstance(d, tuple) else d for d in declared]
    if rank == 0 and b.chance(0.5):
        return b.constant(values(b.np_rng, spec, (), np.dtype(helper.tensor_dtype_to_np_dtype(dtype))), 0.3)
    return b.weight(declared, spec, runtime_p=0.0, dtype=helper.tensor_dtype_to_np_dtype(dtype))


def _broadcasts(x: Tensor, y: Tensor) -> bool:
    try:
        for sx, sy in zip(x.shapes, y.shapes):
            np.broadcast_shapes(sx, sy)
    except ValueError:
        return False
    return True


def _broadcast(*tensors: Tensor) -> list:
    try:
        return [tuple(np.broadcast_shapes(*[t.shapes[k] for t in tensors])) for k in range(BINDINGS)]
    except ValueError:
        raise Skip("broadcast") from None


def step_binary(b: Builder) -> None:
    op = b.choice(["Add", "Add", "Add", "Sub", "Mul", "Mul", "Div", "Pow", "Max", "Min", "PRelu"])
    integer = op in ("Add", "Sub", "Mul", "Div") + (("Max", "Min") if b.opset >= 12 else ()) and b.chance(0.12)
    dtype = b.choice([I64, I64, I32]) if integer else F
    a = b.pick(lambda t: t.dtype == dtype and t.rank is not None, lambda: b.fresh(dtype))
    if op == "Pow":
        if b.chance(0.5):
            a = b.node("Abs", [a], [(F, a.shapes)])[0]
            exponent = b.constant(np.asarray(b.choice([0.5, 1.5, 2.0, 3.0, -1.0]), np.float32), 0.3)
        else:
            exponent = b.constant(np.asarray(b.choice([2.0, 3.0, 1.0]), np.float32), 0.3)
        b.node("Pow", [a, exponent], [(F, a.shapes)])
        return
    if op == "PRelu":
        if a.rank < 1:
            raise Skip("rank")
        if a.rank >= 3 and a.static(1) and b.chance(0.6):
            slope = b.weight([a.dim(1)[0]] + [1] * (a.rank - 2), runtime_p=0.05)
        else:
            slope = _partner(b, a, F)
            if not all(len(sb) <= len(sa) and tuple(np.broadcast_shapes(sa, sb)) == sa
                       for sa, sb in zip(a.shapes, slope.shapes)):
                raise Skip("slope broadcasts to x only")
        b.node("PRelu", [a, slope], [(F, a.shapes)])
        return
    spec = "normal" if dtype == F else "int:-6:6"
    if op == "Div":
        spec = "nonzero" if dtype == F else "int:1:5"
    other = _partner(b, a, dtype, spec)
    if op == "Div" and other.value is None and other.name not in b.specs and dtype != F:
        raise Skip("integer division by a computed tensor")
    first, second = (a, other) if op == "Div" or b.chance(0.8) else (other, a)
    b.node(op, [first, second], [(dtype, _broadcast(a, other))])


def step_variadic(b: Builder) -> None:
    op = b.choice(["Sum", "Mean", "Max", "Min"])
    a = b.pick(lambda t: t.dtype == F and t.rank is not None, lambda: b.fresh(F))
    operands = [a] + [_partner(b, a, F) for _ in range(b.choice([0, 1, 1, 2, 2, 3]))]
    b.rng.shuffle(operands)
    b.node(op, operands, [(F, _broadcast(*operands))])


def step_compare_where(b: Builder) -> None:
    a = b.pick(lambda t: t.dtype in (F, I64) and t.rank is not None, lambda: b.fresh(F))
    op = b.choice(["Greater", "Less", "GreaterOrEqual", "LessOrEqual"] + (["Equal"] if a.dtype == I64 else []))
    other = _partner(b, a, a.dtype, "normal" if a.dtype == F else "int:-3:3")
    cond = b.node(op, [a, other], [(BOOL, _broadcast(a, other))])[0]
    if b.chance(0.2):
        other2 = b.pick(lambda t: t.dtype == BOOL and t is not cond and _broadcasts(t, cond), None) \
            if any(t.dtype == BOOL and t is not cond for t in b.tensors) and b.chance(0.5) else None
        if other2 is not None:
            cond = b.node(b.choice(["And", "Or", "Xor"]), [cond, other2], [(BOOL, _broadcast(cond, other2))])[0]
        else:
            cond = b.node("Not", [cond], [(BOOL, cond.shapes)])[0]
    if b.chance(0.75):
        x = b.pick(lambda t: t.dtype == F and _broadcasts(t, cond), None) if b.chance(0.7) else None
        x = x if x is not None else _partner(b, cond, F) if b.chance(0.5) else b.constant(np.float32(b.choice(
            [0.0, -1e4, 1.0])), 0.4)
        y = _partner(b, cond, F) if b.chance(0.5) else b.constant(np.float32(b.choice([0.0, -1.0, 3.0])), 0.4)
        if b.chance(0.5):
            x, y = y, x
        b.node("Where", [cond, x, y], [(F, _broadcast(cond, x, y))])


UNARY = ["Relu", "Relu", "Relu", "LeakyRelu", "Sigmoid", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Gelu",
         "Erf", "Clip", "Clip", "Softmax", "Softmax", "LogSoftmax", "Elu", "Selu", "Softplus", "Softsign", "Abs",
         "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Identity",
         "Celu", "Mish", "ThresholdedRelu", "Hardmax", "Dropout", "Not", "IsNaN", "Shrink"]


def step_unary(b: Builder) -> None:
    op = b.choice(UNARY)
    if b.opset < {"Mish": 18, "Gelu": 20, "HardSwish": 14, "Celu": 12}.get(op, 0):
        raise Skip("opset")
    if op == "Not":
        x = b.pick(lambda t: t.dtype == BOOL, lambda: b.fresh(BOOL))
        b.node("Not", [x], [(BOOL, x.shapes)])
        return
    integer_ok = op in ("Abs", "Neg", "Sign", "Identity", "Clip")  # (onnxruntime has no integer Relu)
    x = b.pick(lambda t: t.rank is not None and (t.dtype == F or (integer_ok and t.dtype in (I64, I32))),
               lambda: b.fresh(F))
    attrs, extra = {}, []
    if op in ("Log", "Sqrt") and b.chance(0.8):
        x = b.node("Abs", [x], [(x.dtype, x.shapes)])[0]
    if op == "LeakyRelu":
        attrs["alpha"] = b.choice([None, 0.1, 0.2, 0.01])
    elif op in ("Elu", "Celu"):
        attrs["alpha"] = b.choice([None, 0.5, 2.0])
    elif op == "ThresholdedRelu":
        attrs["alpha"] = b.choice([None, 0.5, 0.0])
    elif op == "HardSigmoid":
        attrs.update(alpha=b.choice([None, 1 / 6, 0.25]), beta=b.choice([None, 0.5, 0.4]))
    elif op == "Gelu":
        attrs["approximate"] = b.choice([None, "tanh", "none"])
    elif op == "Shrink":
        attrs.update(lambd=b.choice([None, 0.3, 1.0]), bias=b.choice([None, 0.2]))
    elif op in ("Softmax", "LogSoftmax", "Hardmax"):
        if x.rank == 0:
            raise Skip("rank")
        attrs["axis"] = b.rng.randint(-x.rank, x.rank - 1) if b.chance(0.4) else None
    elif op == "Clip":
        dtype = helper.tensor_dtype_to_np_dtype(x.dtype)
        low, high = sorted(b.rng.sample([-6, -1, 0, 1, 2, 6], 2))
        bounds = b.choice([(low, high), (low, None), (None, high), (0, 6)])
        extra = [b.constant(np.asarray(v, dtype), 0.3) if v is not None else None for v in bounds]
        while extra and extra[-1] is None:
            extra.pop()
    outputs = [(x.dtype if op != "IsNaN" else BOOL, x.shapes)]
    if op == "Dropout" and b.chance(0.2):
        outputs.append((BOOL, x.shapes))
    b.node(op, [x] + extra, outputs, **attrs)


def _reshape_target(b: Builder, x: Tensor) -> list:
    """A Reshape target valid at every binding: dims merged or split, 0 (copy) and -1 (the rest)."""
    r = x.rank
    groups, axis = [], 0
    while axis < r:  # consecutive groups of input dims, each one output dim (or two, split)
        size = b.choice([1, 1, 1, 2, 3]) if axis < r - 1 else 1
        groups.append(list(range(axis, min(r, axis + size))))
        axis += size
    target, minus = [], False
    for group in groups:
        dims = [x.dim(a) for a in group]
        static = all(len(set(d)) == 1 for d in dims)
        if static:
            total = math.prod(d[0] for d in dims)
            splits = [f for f in range(2, total) if total % f == 0]
            if splits and len(group) == 1 and b.chance(0.3):
                f = b.choice(splits)
                target += [f, total // f]
            elif len(group) == 1 and len(target) == group[0] and b.chance(0.3):
                target.append(0)
            else:
                target.append(total)
        elif len(group) == 1 and len(target) == group[0] and b.chance(0.8):
            target.append(0)
        elif not minus:
            target.append(-1)
            minus = True
        else:
            raise Skip("two dynamic groups")
    if not minus and b.chance(0.3):
        target[b.rng.randrange(len(target))] = -1
    if b.chance(0.1):
        where = b.rng.randint(0, len(target))
        if 0 in target[where:]:
            raise Skip("a 0 would move")
        target.insert(where, 1)
    return target


def _reshaped(x: Tensor, target: list) -> list:
    shapes = []
    for s in x.shapes:
        out = [s[i] if v == 0 else v for i, v in enumerate(target)]
        known = math.prod(v for v in out if v != -1)
        total = math.prod(s)
        if -1 in out:
            if known == 0 or total % known:
                raise Skip("reshape")
            out[out.index(-1)] = total // known
        if math.prod(out) != total:
            raise Skip("reshape")
        shapes.append(tuple(out))
    return shapes


def step_reshape(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1, lambda: b.fresh())
    target = _reshape_target(b, x)
    shapes = _reshaped(x, target)
    b.node("Reshape", [x, b.ints(target)], [(x.dtype, shapes)])


def step_shape_chain(b: Builder) -> None:
    """The exporters' shape arithmetic: Shape -> Gather -> Unsqueeze -> Concat -> Reshape (torch's x.view(x.size(0),
    -1)), Shape with start/end (opset 15), Expand to another tensor's shape, ConstantOfShape of a shape, and
    torch's multi-head split (x.view(B, L, heads, D // heads))."""
    form = b.choice(["flatten", "flatten", "slice", "expand", "constant_of_shape", "heads", "size_div"])
    if form == "heads":
        x = b.pick(lambda t: t.dtype == F and t.rank == 3 and t.static(2) and t.dim(2)[0] % 2 == 0,
                   lambda: b.sequence(b.choice([4, 6, 8])))
        d = x.dim(2)[0]
        heads = b.choice([h for h in (2, d // 2, d) if d % h == 0 and h > 0])
        shape = b.node("Shape", [x], [(I64, [(3,)] * BINDINGS)], reusable=False)[0]
        parts = []
        for axis in (0, 1):
            g = b.node("Gather", [shape, b.ints(axis)], [(I64, [()] * BINDINGS)], reusable=False)[0]
            parts.append(b.node("Unsqueeze", [g, b.ints([0])], [(I64, [(1,)] * BINDINGS)], reusable=False)[0])
        target = b.node("Concat", parts + [b.ints([heads, d // heads])], [(I64, [(4,)] * BINDINGS)], axis=0,
                        reusable=False)[0]
        y = b.node("Reshape", [x, target], [(F, [s[:2] + (heads, d // heads) for s in x.shapes])])[0]
        if b.chance(0.7):
            b.node("Transpose", [y], [(F, [(s[0], s[2], s[1], s[3]) for s in y.shapes])], perm=[0, 2, 1, 3])
        return
    x = b.pick(lambda t: t.rank is not None and t.rank >= 2, lambda: b.fresh(F, b.choice([2, 3, 4])))
    r = x.rank
    if form == "flatten":
        shape = b.node("Shape", [x], [(I64, [(r,)] * BINDINGS)], reusable=False)[0]
        g = b.node("Gather", [shape, b.ints(0)], [(I64, [()] * BINDINGS)], reusable=False)[0]
        u = b.node("Unsqueeze", [g, b.ints([0])], [(I64, [(1,)] * BINDINGS)], reusable=False)[0]
        target = b.node("Concat", [u, b.ints([-1])], [(I64, [(2,)] * BINDINGS)], axis=0, reusable=False)[0]
        b.node("Reshape", [x, target], [(x.dtype, [(s[0], math.prod(s[1:])) for s in x.shapes])])
    elif form == "slice":
        if r < 3:
            raise Skip("rank")
        if b.opset >= 15 and b.chance(0.6):
            head = b.node("Shape", [x], [(I64, [(2,)] * BINDINGS)], reusable=False, start=0, end=2)[0]
        else:
            shape = b.node("Shape", [x], [(I64, [(r,)] * BINDINGS)], reusable=False)[0]
            head = b.node("Slice", [shape, b.ints([0]), b.ints([2])], [(I64, [(2,)] * BINDINGS)],
                          reusable=False)[0]
        target = b.node("Concat", [head, b.ints([-1])], [(I64, [(3,)] * BINDINGS)], axis=0, reusable=False)[0]
        b.node("Reshape", [x, target], [(x.dtype, [s[:2] + (math.prod(s[2:]),) for s in x.shapes])])
    elif form == "expand":
        y = _partner(b, x, x.dtype)
        if not all(tuple(np.broadcast_shapes(sx, sy)) == sx for sx, sy in zip(x.shapes, y.shapes)):
            raise Skip("expand")
        shape = b.node("Shape", [x], [(I64, [(r,)] * BINDINGS)], reusable=False)[0]
        b.node("Expand", [y, shape], [(x.dtype, x.shapes)])
    elif form == "constant_of_shape":
        shape = b.node("Shape", [x], [(I64, [(r,)] * BINDINGS)], reusable=False)[0]
        fill = np.asarray([b.choice([0.0, 1.0, 0.5])], np.float32)
        ones = b.node("ConstantOfShape", [shape], [(F, x.shapes)], reusable=False,
                      value=numpy_helper.from_array(fill))[0]
        if x.dtype == F:
            b.node(b.choice(["Add", "Mul"]), [x, ones], [(F, x.shapes)])
        else:
            b.tensors.append(ones)
    else:  # size_div: reshape to (d0, d1 // 2, -1)-like with arithmetic on the shape
        if not (x.static(1) and x.dim(1)[0] % 2 == 0):
            raise Skip("odd")
        shape = b.node("Shape", [x], [(I64, [(r,)] * BINDINGS)], reusable=False)[0]
        g = b.node("Gather", [shape, b.ints([1])], [(I64, [(1,)] * BINDINGS)], reusable=False)[0]
        half = b.node("Div", [g, b.ints([2])], [(I64, [(1,)] * BINDINGS)], reusable=False)[0]
        head = b.node("Gather", [shape, b.ints([0])], [(I64, [(1,)] * BINDINGS)], reusable=False)[0]
        target = b.node("Concat", [head, half, b.ints([-1])], [(I64, [(3,)] * BINDINGS)], axis=0,
                        reusable=False)[0]
        b.node("Reshape", [x, target], [(x.dtype, [(s[0], s[1] // 2, 2 * math.prod(s[2:])) for s in x.shapes])])


def step_transpose(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 2, lambda: b.fresh())
    perm = list(range(x.rank))
    while perm == list(range(x.rank)):
        b.rng.shuffle(perm)
    if b.chance(0.1):
        perm = list(reversed(range(x.rank)))
        b.node("Transpose", [x], [(x.dtype, [tuple(s[p] for p in perm) for s in x.shapes])])
        return
    b.node("Transpose", [x], [(x.dtype, [tuple(s[p] for p in perm) for s in x.shapes])], perm=perm)


def _axes_operand(b: Builder, axes, op: str):
    """Axes as the input (opset >= 13) or the attribute, as the op's version takes them."""
    return ([b.ints(axes)], {}) if b.opset >= 13 else ([], {"axes": axes})


def step_squeeze_unsqueeze(b: Builder) -> None:
    if b.chance(0.5):
        x = b.pick(lambda t: t.rank is not None and t.rank <= 4, lambda: b.fresh())
        count = b.choice([1, 1, 2])
        out_rank = x.rank + count
        axes = sorted(b.rng.sample(range(out_rank), count))
        shapes = []
        for s in x.shapes:
            out, it = [], iter(s)
            for a in range(out_rank):
                out.append(1 if a in axes else next(it))
            shapes.append(tuple(out))
        axes = [a - out_rank if b.chance(0.3) else a for a in axes]
        inputs, attrs = _axes_operand(b, axes, "Unsqueeze")
        b.node("Unsqueeze", [x] + inputs, [(x.dtype, shapes)], **attrs)
        return
    x = b.pick(lambda t: t.rank is not None and any(d == 1 for s in t.shapes for d in s), None)
    ones = [a for a in range(x.rank) if x.dim(a) == (1,) * BINDINGS]
    if ones and b.chance(0.7):
        axes = sorted(b.rng.sample(ones, b.rng.randint(1, len(ones))))
        shapes = [tuple(d for a, d in enumerate(s) if a not in axes) for s in x.shapes]
        axes = [a - x.rank if b.chance(0.3) else a for a in axes]
        inputs, attrs = _axes_operand(b, axes, "Squeeze")
        b.node("Squeeze", [x] + inputs, [(x.dtype, shapes)], **attrs)
    else:  # no axes: every dim that is 1 at run time goes (the rank may differ between bindings)
        b.node("Squeeze", [x], [(x.dtype, [tuple(d for d in s if d != 1) for s in x.shapes])])


def step_concat(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1 and t.dtype in (F, I64), lambda: b.fresh())
    axis = b.rng.randrange(x.rank)
    operands = [x]
    for _ in range(b.choice([1, 1, 2])):
        same = [t for t in b.tensors if t not in operands and t.dtype == x.dtype and t.rank == x.rank and all(
            t.dim(a) == x.dim(a) for a in range(x.rank) if a != axis)]
        if same and b.chance(0.4):
            operands.append(b.choice(same))
            continue
        declared = [x.dim(a) if a != axis else b.choice([1, 2, 3]) for a in range(x.rank)]
        if any(isinstance(d, tuple) and len(set(d)) > 1 for d in declared) or b.chance(0.2):
            if not b.can_add_input():
                raise Skip("dynamic")
            operands.append(b.add_input(x.dtype, [b.named(d) if isinstance(d, tuple) else d for d in declared],
                                        "normal" if x.dtype == F else "int:-4:4"))
        else:
            dims = [d[0] if isinstance(d, tuple) else d for d in declared]
            operands.append(b.weight(dims, "normal" if x.dtype == F else "int:-4:4", runtime_p=0.0,
                                     dtype=helper.tensor_dtype_to_np_dtype(x.dtype)))
    b.rng.shuffle(operands)
    shapes = [tuple(sum(t.shapes[k][a] for t in operands) if a == axis else operands[0].shapes[k][a]
                    for a in range(x.rank)) for k in range(BINDINGS)]
    b.node("Concat", operands, [(x.dtype, shapes)], axis=axis - x.rank if b.chance(0.3) else axis)


def step_split(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1 and any(t.low(a) >= 2 for a in range(t.rank)),
               lambda: b.fresh())
    axis = b.choice([a for a in range(x.rank) if x.low(a) >= 2])
    d = x.dim(axis)
    attrs, inputs = {}, [x]
    form = b.rng.random()
    if b.opset >= 18 and form < 0.4:  # num_outputs, uneven allowed
        n = b.rng.randint(2, min(4, min(d)))
        sizes = []
        for v in d:
            chunk = -(-v // n)
            per = [chunk] * (n - 1) + [v - chunk * (n - 1)]
            if per[-1] < 1 and b.chance(0.8):
                raise Skip("empty chunk")
            sizes.append(per)
        attrs["num_outputs"] = n
    elif len(set(d)) == 1 and form < 0.8:  # explicit sizes
        v = d[0]
        n = b.rng.randint(2, min(4, v))
        cuts = sorted(b.rng.sample(range(1, v), n - 1))
        per = [e - s for s, e in zip([0] + cuts, cuts + [v])]
        sizes = [per] * BINDINGS
        if b.opset >= 13:
            inputs.append(b.ints(per, node_p=0.3))
        else:
            attrs["split"] = per
    else:  # equal parts without sizes
        if b.opset >= 18:
            raise Skip("opset 18 needs num_outputs or split")
        n = b.choice([k for k in (2, 3) if all(v % k == 0 for v in d)] or [0])
        if not n:
            raise Skip("indivisible")
        sizes = [[v // n] * n for v in d]
    n = len(sizes[0])
    outputs = [(x.dtype, [tuple(sizes[k][i] if a == axis else s[a] for a, _ in enumerate(s))
                          for k, s in enumerate(x.shapes)]) for i in range(n)]
    b.node("Split", inputs, outputs, axis=axis if axis != 0 or b.chance(0.5) else None, **attrs)


def _slice_bound(b: Builder, d: tuple, step: int) -> tuple:
    static = len(set(d)) == 1
    low = min(d)
    if step > 0:
        start = b.choice([0, 0, 1, -1, -2] + ([b.rng.randint(0, low - 1)] if static else []))
        end = b.choice([INT_MAX, INT_MAX, -1, low] + ([b.rng.randint(1, low)] if static else []))
    else:
        start = b.choice([-1, INT_MAX, low - 1])
        end = b.choice([-INT_MAX, -INT_MAX, 0] + ([b.rng.randint(-low - 1, low - 2)] if static else []))
    return start, end


def step_slice(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1, lambda: b.fresh())
    count = b.choice([1, 1, 2]) if x.rank > 1 else 1
    axes = sorted(b.rng.sample(range(x.rank), count))
    starts, ends, steps = [], [], []
    for a in axes:
        step = b.choice([1, 1, 1, 2, -1, -2])
        s, e = _slice_bound(b, x.dim(a), step)
        starts.append(s), ends.append(e), steps.append(step)
    shapes = []
    for shape in x.shapes:
        out = list(shape)
        for a, s, e, st in zip(axes, starts, ends, steps):
            out[a] = len(range(*slice(s, e, st).indices(shape[a])))
            if out[a] == 0:
                raise Skip("empty")
        shapes.append(tuple(out))
    inputs = [x, b.ints(starts), b.ints(ends)]
    omit_axes = axes == list(range(count)) and b.chance(0.4) and all(st == 1 for st in steps)
    if not omit_axes:
        inputs.append(b.ints([a - x.rank if b.chance(0.25) else a for a in axes]))
        if any(st != 1 for st in steps) or b.chance(0.5):
            inputs.append(b.ints(steps))
    b.node("Slice", inputs, [(x.dtype, shapes)])


def step_gather(b: Builder) -> None:
    if b.chance(0.2) and b.can_add_input():  # an embedding: a weight table read by runtime token ids
        vocab, width = b.choice([5, 10, 17]), b.choice([2, 4, 8])
        table = b.weight([vocab, width], runtime_p=0.0)
        ids = b.add_input(b.choice([I64, I64, I32]), [b.batch(), b.dynamic("seq") if b.chance(0.5) else 3],
                          f"int:{-vocab if b.chance(0.3) else 0}:{vocab - 1}")
        b.node("Gather", [table, ids], [(F, [s + (width,) for s in ids.shapes])])
        return
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1, lambda: b.fresh())
    axis = b.rng.randrange(x.rank)
    low = x.low(axis)
    shape = b.choice([(), (), (1,), (2,), (3,), (2, 2)])
    runtime = b.can_add_input() and b.chance(0.15)
    if runtime:
        indices = b.add_input(I64, list(shape), f"int:{-low}:{low - 1}")
    else:
        indices = b.constant(b.np_rng.integers(-low if b.chance(0.3) else 0, low, shape).astype(
            b.choice([np.int64, np.int64, np.int32])), 0.3)
    shapes = [s[:axis] + shape + s[axis + 1:] for s in x.shapes]
    b.node("Gather", [x, indices], [(x.dtype, shapes)], axis=axis - x.rank if b.chance(0.2) else (axis or None))


def step_gather_elements(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1, lambda: b.fresh())
    axis = b.rng.randrange(x.rank)
    low = x.low(axis)
    declared = []
    for a in range(x.rank):
        d = x.dim(a)
        if a == axis and b.chance(0.5):
            declared.append(b.rng.randint(1, 4))
        elif len(set(d)) == 1:
            declared.append(d[0] if b.chance(0.8) else b.rng.randint(1, d[0]))
        else:
            declared.append(b.named(d))
    spec = f"int:{-low if b.chance(0.5) else 0}:{low - 1}"
    if all(isinstance(d, int) for d in declared) and b.chance(0.6):
        indices = b.constant(values(b.np_rng, spec, declared, np.dtype(np.int64)), 0.2)
    elif b.can_add_input():
        indices = b.add_input(I64, declared, spec, weight=True)
    else:
        raise Skip("inputs")
    b.node("GatherElements", [x, indices], [(x.dtype, indices.shapes)],
           axis=axis if axis or b.chance(0.3) else None)


def step_gather_nd(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 2, lambda: b.fresh(F, b.choice([2, 3])))
    depth = b.rng.randint(1, min(2, x.rank))
    count = b.choice([1, 2, 3])
    table = np.stack([b.np_rng.integers(0, x.low(a), count)  # (onnxruntime refuses negative ones)
                      for a in range(depth)], -1).astype(np.int64)
    indices = b.constant(table, 0.2)
    b.node("GatherND", [x, indices], [(x.dtype, [(count,) + s[depth:] for s in x.shapes])])


def step_expand_tile(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1, lambda: b.fresh())
    if b.chance(0.5):
        target = []
        for a in range(x.rank):
            d = x.dim(a)
            target.append(b.choice([1, 2, 3]) if d == (1,) * BINDINGS else (d[0] if len(set(d)) == 1 and
                                                                           b.chance(0.5) else 1))
        target = [b.choice([1, 2])] * (1 if b.chance(0.2) else 0) + target
        shapes = [tuple(np.broadcast_shapes(s, tuple(target))) for s in x.shapes]
        b.node("Expand", [x, b.ints(target)], [(x.dtype, shapes)])
    else:
        repeats = [b.choice([1, 1, 2, 3]) for _ in range(x.rank)]
        shapes = [tuple(d * r for d, r in zip(s, repeats)) for s in x.shapes]
        b.node("Tile", [x, b.ints(repeats)], [(x.dtype, shapes)])


def step_pad(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1 and t.dtype in (F, I64), lambda: b.image(4))
    mode = b.choice(["constant", "constant", "reflect", "edge"] + (["wrap"] if b.opset >= 19 else []))
    chosen = list(range(x.rank))
    if x.rank >= 3 and b.chance(0.7):
        chosen = list(range(2, x.rank))  # the spatial dims, as exporters pad
    if b.opset >= 18 and b.chance(0.3):
        chosen = sorted(b.rng.sample(range(x.rank), b.rng.randint(1, x.rank)))
    begins, ends = [], []
    for a in chosen:
        low = x.low(a)
        top = low - 1 if mode == "reflect" else (low if mode == "wrap" else 2)
        pair = [b.rng.randint(0, max(0, min(2, top))) for _ in range(2)]
        if mode == "constant" and b.chance(0.1) and low > 2:
            pair[b.rng.randrange(2)] = -1  # cropping
        begins.append(pair[0]), ends.append(pair[1])
    shapes = []
    for s in x.shapes:
        out = list(s)
        for a, p, q in zip(chosen, begins, ends):
            out[a] = s[a] + p + q
        shapes.append(tuple(out))
    explicit_axes = chosen != list(range(x.rank))
    if explicit_axes and b.opset < 18:
        full_b, full_e = [0] * x.rank, [0] * x.rank
        for a, p, q in zip(chosen, begins, ends):
            full_b[a], full_e[a] = p, q
        begins, ends, explicit_axes = full_b, full_e, False
    inputs = [x, b.ints(begins + ends)]
    if mode == "constant" and b.chance(0.4):
        inputs.append(b.constant(np.asarray(b.choice([0.0, 1.5, -2.0]),
                                            helper.tensor_dtype_to_np_dtype(x.dtype)), 0.2))
    elif explicit_axes:
        inputs.append(None)
    if explicit_axes:
        inputs.append(b.ints([a - x.rank if b.chance(0.3) else a for a in chosen]))
    b.node("Pad", inputs, [(x.dtype, shapes)], mode=mode if mode != "constant" or b.chance(0.3) else None)


def step_resize(b: Builder) -> None:
    if b.opset < 13:
        raise Skip("opset (roi and scales are required before 13)")
    x = b.pick(lambda t: _image_like(t, (3, 4)), lambda: b.image(4))
    r = x.rank
    mode = b.choice(["nearest", "nearest", "linear", "linear", "cubic"]) if r == 4 else "nearest"
    coordinate = b.choice(["half_pixel", "half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                           "tf_crop_and_resize"] + (["half_pixel_symmetric"] if b.opset >= 19 else []))
    attrs = dict(mode=mode, coordinate_transformation_mode=coordinate)
    if mode == "nearest":
        attrs["nearest_mode"] = b.choice([None, "floor", "ceil", "round_prefer_ceil", "round_prefer_floor"])
    if mode == "cubic":
        attrs["cubic_coeff_a"] = b.choice([None, -0.5, -0.75])
        attrs["exclude_outside"] = b.choice([None, 1])
    use_axes = b.opset >= 18 and b.chance(0.3)
    resized = list(range(2, r))
    roi = None
    if coordinate == "tf_crop_and_resize":
        box = []
        for _ in range(len(resized) if use_axes else r):
            box.append(b.choice([(0.0, 1.0), (0.1, 0.9), (0.25, 0.75), (-0.2, 1.2)]))
        roi = b.constant(np.asarray([p[0] for p in box] + [p[1] for p in box], np.float32), 0.2)
        attrs["extrapolation_value"] = b.choice([None, 0.5])
    if b.chance(0.6):  # scales
        factors = [b.choice([2.0, 2.0, 0.5, 1.5, 3.0, 0.75, 1.0]) for _ in resized]
        scales = factors if use_axes else [1.0, 1.0] + factors
        shapes = [s[:2] + tuple(int(math.floor(s[a] * f)) for a, f in zip(resized, factors)) for s in x.shapes]
        extra = [roi, b.constant(np.asarray(scales, np.float32), 0.3)]
        if b.opset >= 18 and mode != "nearest" and b.chance(0.15):
            attrs["antialias"] = 1
    else:  # sizes
        axes = resized if use_axes else list(range(r))
        if not use_axes and not x.static(0):
            raise Skip("sizes of a dynamic batch need axes")
        sizes = [b.rng.randint(1, 12) if a >= 2 else x.dim(a)[0] for a in axes]
        policy = b.choice([None] * 4 + ["not_larger", "not_smaller"]) if use_axes and len(resized) > 1 \
            and coordinate != "tf_crop_and_resize" else None
        shapes = []
        for s in x.shapes:
            out = list(s)
            if policy is None:
                for a, z in zip(axes, sizes):
                    out[a] = z
            else:  # one scale for every axis given, the sizes' smallest (not_larger) or largest ratio
                ratios = [z / s[a] for z, a in zip(sizes, axes)]
                scale = min(ratios) if policy == "not_larger" else max(ratios)
                for a in axes:
                    out[a] = int(math.floor(s[a] * scale + 0.5))
            shapes.append(tuple(out))
        attrs["keep_aspect_ratio_policy"] = policy
        extra = [roi, None, b.ints(sizes)]
    if use_axes:
        attrs["axes"] = resized  # (negative axes: onnxruntime and onnx.reference both get them wrong)
    if any(min(s) < 1 for s in shapes):
        raise Skip("empty")
    b.node("Resize", [x] + extra, [(F, shapes)], **attrs)


REDUCE = ["ReduceSum", "ReduceSum", "ReduceMean", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
          "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare", "ReduceLogSum"]


def step_reduce(b: Builder) -> None:
    op = b.choice(REDUCE)
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1 and t.dtype == F, lambda: b.fresh())
    if op == "ReduceLogSum":
        x = b.node("Abs", [x], [(F, x.shapes)])[0]
    keep = b.chance(0.5)
    if b.chance(0.15):
        axes = None
    else:
        axes = sorted(b.rng.sample(range(x.rank), b.rng.randint(1, min(2, x.rank))))
    reduced = set(range(x.rank)) if axes is None else set(axes)
    shapes = [tuple(1 if a in reduced else d for a, d in enumerate(s) if keep or a not in reduced)
              for s in x.shapes]
    inputs, attrs = [x], {"keepdims": None if keep else 0}
    if axes is not None:
        axes = [a - x.rank if b.chance(0.3) else a for a in axes]
        if b.opset >= 18 or (op == "ReduceSum" and b.opset >= 13):
            inputs.append(b.ints(axes))
        else:
            attrs["axes"] = axes
    b.node(op, inputs, [(F, shapes)], **attrs)


def step_argmax(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1 and t.dtype in (F, I64), lambda: b.fresh())
    axis = b.rng.randrange(x.rank)
    keep = b.chance(0.5)
    shapes = [tuple(1 if a == axis else d for a, d in enumerate(s) if keep or a != axis) for s in x.shapes]
    b.node(b.choice(["ArgMax", "ArgMin"]), [x], [(I64, shapes)], axis=axis - x.rank if b.chance(0.3) else axis,
           keepdims=None if keep else 0, select_last_index=b.choice([None, None, 1]) if b.opset >= 12 else None)


def step_topk(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1 and t.dtype == F, lambda: b.fresh())
    axis = b.rng.randrange(x.rank)
    k = b.rng.randint(1, x.low(axis))
    shapes = [tuple(k if a == axis else d for a, d in enumerate(s)) for s in x.shapes]
    b.node("TopK", [x, b.ints([k])], [(F, shapes), (I64, shapes)], axis=axis if axis != x.rank - 1 else None,
           largest=b.choice([None, 0]), sorted=None)


def step_cumsum(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1 and t.dtype in (F, I64, I32), lambda: b.fresh())
    axis = b.rng.randint(-x.rank, x.rank - 1)
    axis_tensor = b.constant(np.asarray(axis, b.choice([np.int64, np.int32])), 0.3)
    b.node("CumSum", [x, axis_tensor], [(x.dtype, x.shapes)], exclusive=b.choice([None, 1]),
           reverse=b.choice([None, 1]))


def step_cast(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.dtype in (F, I64, I32, BOOL), lambda: b.fresh())
    targets = {F: [I64, I32, BOOL, F16, F], I64: [F, I32], I32: [F, I64], BOOL: [F, I64]}[x.dtype]
    to = b.choice(targets)
    y = b.node("Cast", [x], [(to, x.shapes)], to=to)[0]
    if to == F16 and b.chance(0.8):
        b.node("Cast", [y], [(F, x.shapes)], to=F)


EINSUM = ["ij,jk->ik", "bij,bjk->bik", "bij,jk->bik", "bhid,bhjd->bhij", "bhij,bhjd->bhid", "ij->ji", "bij->bji",
          "i,i->", "ij,ij->ij", "ij->i", "ij->", "bi,bi->b", "bn,nk->bk", "...ij,...jk->...ik", "bchw,ck->bkhw",
          "i,j->ij", "ii->i", "bij,bkj->bik"]


def step_einsum(b: Builder) -> None:
    if b.opset < 12:
        raise Skip("opset")
    equation = b.choice(EINSUM)
    lhs, rhs = equation.split("->")
    terms = lhs.split(",")
    first = terms[0]
    rank = len(first.replace("...", "")) + (1 if "..." in first else 0)
    if first == "ii":
        x = b.pick(lambda t: t.dtype == F and t.rank == 2 and t.dim(0) == t.dim(1),
                   lambda: b.add_input(F, [n := b.choice([2, 3, 4]), n]))
    else:
        x = b.pick(lambda t: t.dtype == F and t.rank == rank, lambda: b.fresh(F, rank))
    sizes = {}
    letters = ["@"] + list(first.replace("...", "")) if "..." in first else list(first)
    for letter, axis in zip(letters, range(rank)):
        if sizes.get(letter, x.dim(axis)) != x.dim(axis):
            raise Skip("letters")
        sizes[letter] = x.dim(axis)
    operands = [x]
    for term in terms[1:]:
        term_letters = (["@"] if "..." in term else []) + list(term.replace("...", ""))
        declared = []
        for letter in term_letters:
            if letter not in sizes:
                sizes[letter] = (b.choice([2, 3, 4]),) * BINDINGS
            declared.append(sizes[letter])
        if any(len(set(d)) > 1 for d in declared):
            if not b.can_add_input():
                raise Skip("dynamic")
            operands.append(b.add_input(F, [b.named(d) for d in declared], weight=True))
        else:
            operands.append(b.weight([d[0] for d in declared], runtime_p=0.1))
    out_letters = (["@"] if "..." in rhs else []) + list(rhs.replace("...", ""))
    shapes = [tuple(sizes[letter][k] for letter in out_letters) for k in range(BINDINGS)]
    b.node("Einsum", operands, [(F, shapes)], equation=equation)


def step_recurrent(b: Builder) -> None:
    op = b.choice(["LSTM", "LSTM", "GRU", "RNN"])
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    layout = 0  # (onnxruntime refuses layout 1)
    x = b.pick(lambda t: t.dtype == F and t.rank == 3 and t.static(2) and t.dim(2)[0] <= 8,
               lambda: b.sequence(b.choice([1, 2, 3, 4])))
    seq_axis, batch_axis = (1, 0) if layout else (0, 1)
    size = x.dim(2)[0]
    hidden = b.choice([1, 2, 3, 4, 5])
    direction = b.choice(["forward", "forward", "reverse", "bidirectional"])
    dirs = 2 if direction == "bidirectional" else 1
    inputs = [x, b.weight([dirs, gates * hidden, size], "unit", runtime_p=0.05),
              b.weight([dirs, gates * hidden, hidden], "unit", runtime_p=0.05)]
    inputs.append(b.weight([dirs, 2 * gates * hidden], "unit", runtime_p=0.0) if b.chance(0.7) else None)
    n = x.dim(batch_axis)
    lengths = None
    if b.chance(0.15):
        low = x.low(seq_axis)
        if len(set(n)) == 1:
            lengths = b.constant(b.np_rng.integers(1, low + 1, n[0]).astype(np.int32), 0.1)
        elif b.can_add_input():
            lengths = b.add_input(I32, [b.named(n)], f"int:{low}:{low}", weight=True)
    inputs.append(lengths)
    state_dims = [dirs, n, hidden] if not layout else [n, dirs, hidden]
    for _ in range(2 if op == "LSTM" else 1):
        if b.chance(0.25):
            if len(set(n)) == 1:
                inputs.append(b.weight([d if isinstance(d, int) else d[0] for d in state_dims], runtime_p=0.2))
            elif b.can_add_input():
                inputs.append(b.add_input(F, [b.named(d) if isinstance(d, tuple) else d for d in state_dims],
                                          weight=True))
            else:
                inputs.append(None)
        else:
            inputs.append(None)
    if op == "LSTM" and b.chance(0.1):
        inputs.append(b.weight([dirs, 3 * hidden], "unit", runtime_p=0.0))
    while inputs and inputs[-1] is None:
        inputs.pop()
    attrs = dict(hidden_size=hidden, direction=direction if direction != "forward" or b.chance(0.3) else None,
                 layout=layout or None)
    if op == "GRU":
        attrs["linear_before_reset"] = b.choice([None, 1])
    if b.chance(0.1):
        acts = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}[op]
        acts = [b.choice(["Sigmoid", "Tanh", "Relu", "HardSigmoid"]) if b.chance(0.3) else a for a in acts]
        attrs["activations"] = acts * dirs
    if b.chance(0.05):
        attrs["clip"] = 2.0
    y_shapes = [(s[seq_axis], dirs, s[batch_axis], hidden) if not layout else (s[0], s[1], dirs, hidden)
                for s in x.shapes]
    h_shapes = [(dirs, s[batch_axis], hidden) if not layout else (s[0], dirs, hidden) for s in x.shapes]
    outputs = [(F, y_shapes) if b.chance(0.8) else None, (F, h_shapes) if b.chance(0.6) else None]
    if op == "LSTM":
        outputs.append((F, h_shapes) if b.chance(0.3) else None)
    if all(o is None for o in outputs):
        outputs[0] = (F, y_shapes)
    while outputs[-1] is None:
        outputs.pop()
    b.node(op, inputs, outputs, **attrs)


def step_space_depth(b: Builder) -> None:
    if b.chance(0.5):
        x = b.pick(lambda t: _image_like(t, (4,)) and t.dim(1)[0] % 4 == 0, lambda: b.image(4, b.choice([4, 8])))
        c = x.dim(1)[0]
        b.node("DepthToSpace", [x], [(F, [(s[0], c // 4, s[2] * 2, s[3] * 2) for s in x.shapes])], blocksize=2,
               mode=b.choice([None, "CRD"]))
    else:
        x = b.pick(lambda t: _image_like(t, (4,)) and all(v % 2 == 0 for a in (2, 3) for v in t.dim(a)),
                   lambda: b.add_input(F, [b.batch(), b.choice([1, 2, 3]), b.choice([4, 6, 8]), 2 * b.choice(
                       [1, 2, 3])]))
        b.node("SpaceToDepth", [x], [(F, [(s[0], s[1] * 4, s[2] // 2, s[3] // 2) for s in x.shapes])], blocksize=2)


def step_lrn(b: Builder) -> None:
    x = b.pick(lambda t: _image_like(t, (4,)), lambda: b.image(4))
    b.node("LRN", [x], [(F, x.shapes)], size=b.choice([1, 3, 5]), alpha=b.choice([None, 1e-3]),
           beta=b.choice([None, 0.5]), bias=b.choice([None, 2.0]))


def step_trilu(b: Builder) -> None:
    if b.opset < 14:
        raise Skip("opset")
    x = b.pick(lambda t: t.rank is not None and t.rank >= 2 and t.dtype in (F, I64), lambda: b.fresh(F, 3))
    k = [b.ints(b.choice([0, 1, -1, 2]), node_p=0.2)] if b.chance(0.5) else []
    b.node("Trilu", [x] + k, [(x.dtype, x.shapes)], upper=b.choice([None, 0]))


def step_nonzero(b: Builder) -> None:
    x = b.pick(lambda t: t.rank is not None and t.rank >= 1 and t.dtype in (F, I64, BOOL), lambda: b.fresh())
    b.node("NonZero", [x], [(I64, [(x.rank, 0)] * BINDINGS)], reusable=False)[0].free = (1,)


def _conv(b: Builder, x: Tensor, m: int, k: int = 3, stride: int = 1, group: int = 1, bias: bool = True) -> Tensor:
    """A 'same' convolution as exporters write it (pads k // 2), stride ``stride``."""
    pad = k // 2
    spatial = [_window(b, x.dim(a), k, stride, 1, (pad, pad)) for a in range(2, x.rank)]
    inputs = [x, b.weight([m, x.dim(1)[0] // group] + [k] * (x.rank - 2), runtime_p=0.03)]
    if bias:
        inputs.append(b.weight([m], runtime_p=0.0))
    shapes = [(x.shapes[i][0], m) + tuple(s[i] for s in spatial) for i in range(BINDINGS)]
    return b.node("Conv", inputs, [(F, shapes)], kernel_shape=[k] * (x.rank - 2), pads=[pad] * (2 * x.rank - 4),
                  strides=[stride] * (x.rank - 2) if stride != 1 else None, group=group if group != 1 else None)[0]


def _bn(b: Builder, x: Tensor) -> Tensor:
    c = x.dim(1)[0]
    params = [b.weight([c], runtime_p=0.0), b.weight([c], runtime_p=0.0), b.weight([c], runtime_p=0.0),
              b.weight([c], "positive", runtime_p=0.0)]
    return b.node("BatchNormalization", [x] + params, [(F, x.shapes)])[0]


def _act(b: Builder, x: Tensor, kind: str | None = None) -> Tensor:
    kind = kind or b.choice(["Relu", "Relu", "Relu6", "HardSwish", "SiLU", "Sigmoid", "LeakyRelu", "GeluErf"])
    if kind == "Relu6":
        return b.node("Clip", [x, b.constant(np.float32(0.0), 0.3), b.constant(np.float32(6.0), 0.3)],
                      [(F, x.shapes)])[0]
    if kind == "HardSwish" and b.opset < 14:
        kind = "Relu"
    if kind == "SiLU":
        sig = b.node("Sigmoid", [x], [(F, x.shapes)])[0]
        return b.node("Mul", [x, sig], [(F, x.shapes)])[0]
    if kind == "GeluErf":  # torch's exact Gelu before opset 20: x * 0.5 * (1 + erf(x / sqrt(2)))
        scaled = b.node("Div", [x, b.constant(np.float32(math.sqrt(2.0)), 0.5)], [(F, x.shapes)])[0]
        erf = b.node("Erf", [scaled], [(F, x.shapes)])[0]
        one = b.node("Add", [erf, b.constant(np.float32(1.0), 0.5)], [(F, x.shapes)])[0]
        half = b.node("Mul", [x, one], [(F, x.shapes)])[0]
        return b.node("Mul", [half, b.constant(np.float32(0.5), 0.5)], [(F, x.shapes)])[0]
    return b.node(kind, [x], [(F, x.shapes)])[0]


def step_block(b: Builder) -> None:
    """An exporter's building block: conv-bn-act, a ResNet basic block, a depthwise-separable block, squeeze-excite,
    an MLP with a residual, attention (Q K^T softmax V, a residual and LayerNorm), a U-Net upsample-concat -- what
    the converter's fusions (batch norm folding, activations, bias and residual adds into the products) see."""
    form = b.choice(["conv_bn_act", "resnet", "separable", "squeeze_excite", "mlp", "attention", "upsample"])
    if form in ("conv_bn_act", "resnet", "separable", "squeeze_excite", "upsample"):
        x = b.pick(lambda t: _image_like(t, (4,)) and t.low(2) >= 2 and t.low(3) >= 2, lambda: b.image(4))
        c = x.dim(1)[0]
        if form == "conv_bn_act":
            y = _bn(b, _conv(b, x, b.width(), b.choice([1, 3, 3]), b.choice([1, 1, 2]), bias=b.chance(0.3)))
            _act(b, y)
        elif form == "resnet":
            y = _act(b, _bn(b, _conv(b, x, c, 3, bias=False)), "Relu")
            y = _bn(b, _conv(b, y, c, 3, bias=False))
            y = b.node("Add", [y, x] if b.chance(0.5) else [x, y], [(F, x.shapes)])[0]
            _act(b, y, "Relu")
        elif form == "separable":
            y = _act(b, _bn(b, _conv(b, x, c, 3, b.choice([1, 2]), group=c, bias=False)), "Relu6")
            y = _bn(b, _conv(b, y, b.width(), 1, bias=False))
            if y.shapes == x.shapes and b.chance(0.5):
                b.node("Add", [x, y], [(F, x.shapes)])
        elif form == "squeeze_excite":
            pooled = b.node("GlobalAveragePool", [x], [(F, [s[:2] + (1, 1) for s in x.shapes])])[0]
            hidden = max(1, c // 4)
            squeeze = _act(b, _conv(b, pooled, hidden, 1), "Relu")
            gate = b.node(b.choice(["Sigmoid", "HardSigmoid"]), [_conv(b, squeeze, c, 1)], [(F, pooled.shapes)])[0]
            b.node("Mul", [x, gate], [(F, x.shapes)])
        else:  # upsample and concatenate with a skip tensor of the upsampled size
            if b.opset < 13:
                raise Skip("opset")
            scales = b.constant(np.asarray([1, 1, 2, 2], np.float32), 0.3)
            up = b.node("Resize", [x, None, scales], [(F, [s[:2] + (2 * s[2], 2 * s[3]) for s in x.shapes])],
                        mode=b.choice(["nearest", "linear"]))[0]
            skip = b.add_input(F, [b.named(up.dim(0)), b.width(), b.named(up.dim(2)), b.named(up.dim(3))]) \
                if b.can_add_input() else None
            if skip is None:
                raise Skip("inputs")
            shapes = [u[:1] + (u[1] + k[1],) + u[2:] for u, k in zip(up.shapes, skip.shapes)]
            b.node("Concat", [up, skip], [(F, shapes)], axis=1)
        return
    x = b.pick(lambda t: t.dtype == F and t.rank == 3 and t.static(2), lambda: b.sequence())
    d = x.dim(2)[0]
    if form == "mlp":
        hidden = b.width()
        h = b.node("MatMul", [x, b.weight([d, hidden])], [(F, [s[:2] + (hidden,) for s in x.shapes])])[0]
        h = b.node("Add", [h, b.weight([hidden], runtime_p=0.0)], [(F, h.shapes)])[0]
        h = _act(b, h, b.choice(["Relu", "GeluErf", "SiLU"]))
        y = b.node("MatMul", [h, b.weight([hidden, d])], [(F, x.shapes)])[0]
        y = b.node("Add", [b.weight([d], runtime_p=0.0), y], [(F, x.shapes)])[0]
        b.node("Add", [x, y], [(F, x.shapes)])
        return
    q, k, v = (b.node("MatMul", [x, b.weight([d, d])], [(F, x.shapes)])[0] for _ in range(3))
    kt = b.node("Transpose", [k], [(F, [(s[0], s[2], s[1]) for s in k.shapes])], perm=[0, 2, 1])[0]
    scores = b.node("MatMul", [q, kt], [(F, [(s[0], s[1], s[1]) for s in x.shapes])])[0]
    scores = b.node("Mul", [scores, b.constant(np.float32(1 / math.sqrt(d)), 0.5)], [(F, scores.shapes)])[0]
    weights = b.node("Softmax", [scores], [(F, scores.shapes)], axis=-1 if b.opset >= 13 else 2)[0]
    context = b.node("MatMul", [weights, v], [(F, x.shapes)])[0]
    out = b.node("MatMul", [context, b.weight([d, d])], [(F, x.shapes)])[0]
    out = b.node("Add", [out, x], [(F, x.shapes)])[0]
    if b.opset >= 17:
        b.node("LayerNormalization", [out, b.weight([d], runtime_p=0.0), b.weight([d], runtime_p=0.0)],
               [(F, x.shapes)], axis=-1)


STEPS = [(step_conv, 10), (step_conv_transpose, 3), (step_pool, 5), (step_global_pool, 2), (step_batch_norm, 3),
         (step_instance_norm, 1.5), (step_group_norm, 0.5), (step_layer_norm, 4), (step_gemm, 4), (step_flatten, 2),
         (step_matmul, 5), (step_binary, 10), (step_variadic, 2.5), (step_compare_where, 2.5), (step_unary, 9),
         (step_reshape, 4), (step_shape_chain, 4), (step_transpose, 4), (step_squeeze_unsqueeze, 3),
         (step_concat, 3), (step_split, 3), (step_slice, 3), (step_gather, 3), (step_gather_elements, 2),
         (step_gather_nd, 1), (step_expand_tile, 2.5), (step_pad, 3), (step_resize, 4), (step_reduce, 4),
         (step_argmax, 2), (step_topk, 1), (step_cumsum, 2), (step_cast, 2), (step_einsum, 3),
         (step_recurrent, 3), (step_space_depth, 1), (step_lrn, 0.5), (step_trilu, 0.7), (step_nonzero, 0.3),
         (step_block, 6)]


def generate(seed: int, index: int) -> onnx.ModelProto:
    """Model ``index`` of campaign ``seed`` (a pure function of the two)."""
    return build(seed, index)[0]


def build(seed: int, index: int) -> tuple[onnx.ModelProto, Builder]:
    """The model and the builder that made it (its tensors' shapes at each binding: ``builder.made``)."""
    b = Builder(seed, index)
    functions, weights = zip(*STEPS)
    wanted = b.rng.choice([1, 1, 2, 2, 3, 3, 4, 4, 5, 6])
    done = attempts = 0
    states = [b.snapshot()]  # after each step
    while done < wanted and attempts < 40:
        attempts += 1
        step = b.rng.choices(functions, weights)[0]
        try:
            step(b)
            done += 1
            states.append(b.snapshot())
        except Skip:
            b.restore(states[-1])
    while True:  # a model ONNX's checker refuses loses its last step (ONNX's shape inference and onnxruntime
        # disagree on a few sizes, e.g. a ceil_mode window that starts in the padding: a constant of onnxruntime's
        # size downstream fails ONNX's inference)
        if len(states) == 1:
            x = b.fresh()
            b.node("Relu" if x.dtype == F else "Identity", [x], [(x.dtype, x.shapes)])
        model = _finish(b)
        try:
            onnx.checker.check_model(model, full_check=True)
            return model, b
        except Exception:  # noqa: BLE001 (ValidationError, InferenceError)
            if len(states) == 1:
                return model, b
            states.pop()
            b.restore(states[-1])


def _finish(b: Builder) -> onnx.ModelProto:
    consumed = {i for n in b.nodes for i in n.input}
    produced = [(o, n) for n in b.nodes if n.op_type != "Constant" for o in n.output if o]
    outputs = [o for o, _ in produced if o not in consumed]
    for o, _ in produced:  # intermediate tensors exposed too
        if o in consumed and o not in outputs and b.chance(0.12):
            outputs.append(o)
    if not outputs:
        outputs = [produced[-1][0]]
    model = helper.make_model(helper.make_graph(b.nodes, f"difffuzz_{b.seed}_{b.index}", b.inputs, [],
                                                b.initializers),
                              opset_imports=[helper.make_opsetid("", b.opset)])
    model.ir_version = helper.find_min_ir_version_for([helper.make_opsetid("", b.opset)])
    known = {**b.made, **{t.name: t for t in b.tensors}}
    for name in outputs:  # declared as an exporter declares them: static sizes, dim names, or fresh names
        tensor = known[name]
        if tensor.rank is None:  # (Squeeze without axes on a dim that is 1 at some binding): a rank for the checker
            flat = b.node("Flatten", [tensor], [(tensor.dtype, [(1, math.prod(s)) for s in tensor.shapes])],
                          axis=0)[0]
            model.graph.node.append(b.nodes[-1])
            tensor = flat
        dims = [None if a in tensor.free else b.named(tensor.dim(a)) for a in range(tensor.rank)]
        model.graph.output.append(helper.make_tensor_value_info(tensor.name, tensor.dtype, dims))
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as error:  # noqa: BLE001 (ValidationError, InferenceError: the campaign discards the model)
        if "existing shape" in str(error):  # ONNX's shape inference disagrees with onnxruntime: sizes undeclared
            for info in model.graph.output:
                for d in info.type.tensor_type.shape.dim:
                    d.Clear()
    set_meta(model, {"seed": b.seed, "index": b.index, "dims": {k: list(v) for k, v in b.dims.items()},
                     "inputs": dict(b.specs)})
    return model


# ---------------------------------------------------------------------------------------------------------------------
# what a model's runs need

def set_meta(model: onnx.ModelProto, meta: dict) -> None:
    for entry in list(model.metadata_props):
        if entry.key == META_KEY:
            model.metadata_props.remove(entry)
    helper.set_model_props(model, {**{e.key: e.value for e in model.metadata_props}, META_KEY: json.dumps(meta)})


def get_meta(model: onnx.ModelProto) -> dict:
    for entry in model.metadata_props:
        if entry.key == META_KEY:
            return json.loads(entry.value)
    return {}


def runtime_inputs(model: onnx.ModelProto) -> list:
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def bindings(model: onnx.ModelProto) -> list[dict]:
    """The values of the dynamic dims at each binding (dims the metadata does not know: 1, 2, 3). A model without
    dynamic dims runs once."""
    meta = get_meta(model)
    dims = {k: list(v) for k, v in meta.get("dims", {}).items()}
    for info in runtime_inputs(model):
        for d in info.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param not in dims:
                dims[d.dim_param] = [1, 2, 3][:len(next(iter(dims.values()), [1, 2, 3]))]
    used = {d.dim_param for info in runtime_inputs(model) for d in info.type.tensor_type.shape.dim
            if d.HasField("dim_param")}
    count = min((len(v) for v in dims.values()), default=1) if used else 1
    return [{k: v[i] for k, v in dims.items()} for i in range(count)]


def input_shape(info, binding: dict) -> tuple:
    dims = []
    for d in info.type.tensor_type.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") else binding.get(d.dim_param, 1))
    return tuple(dims)


def feeds(model: onnx.ModelProto, binding_index: int, binding: dict) -> dict:
    """The runtime inputs of one binding: each input's values from its value range, seeded by the model's (seed,
    index), the binding and the input's name."""
    meta = get_meta(model)
    specs = meta.get("inputs", {})
    out = {}
    for info in runtime_inputs(model):
        elem = info.type.tensor_type.elem_type
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
        default = "bool" if dtype == np.bool_ else ("int:0:2" if dtype.kind in "iu" else "normal")
        ids = meta.get("binding_ids") or []
        rng = np.random.default_rng([meta.get("seed", 0), meta.get("index", 0),
                                     ids[binding_index] if binding_index < len(ids) else binding_index,
                                     zlib.crc32(info.name.encode())])
        out[info.name] = values(rng, specs.get(info.name, default), input_shape(info, binding), dtype)
    return out
