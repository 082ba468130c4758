"""Expected outputs of every op case of the table (``[[cases]]`` of mappings/ops/*.toml), written here from the
specification, not from the library: the header's meaning of each op (neural_network_runtime_type.h), the builder's
defaults (nnrt_ops_spec.json, "default"), and the decisions of docs/deviations.md where the header is silent.
numpy for the arithmetic (float64 where the op computes in float), ``onnx.reference`` where an ONNX operator has
exactly the op's meaning (its attributes set here from the NNRt parameters), and the oracles of the kernel tests
for LSTM (``reference_lstm``) and DETECTION_POST_PROCESS (the centre-size decoding and onnxruntime's
NonMaxSuppression). Nothing here imports the kernels, the exporter or the op table.

``expected(case)`` -> the outputs of ``case`` (an ``nnrt_onnx.testing.opcases.OpCase``: its op, seeded input arrays,
parameter values by OH_NN_TensorType name, declared outputs); ``assert_matches_spec(case, outputs, want, who)``
compares (floats within the case's tolerance, integers exactly, quantized outputs within one step). Quantized operands: inputs are dequantized
(r = (q - z) * s) and outputs quantized (q = clamp(round_half_even(r / s + z))) by the header's formulas, written
here; the comparison then allows one quantization step.

Every default below is the builder's (nnrt_ops_spec.json) unless a comment names a docs/deviations.md row.
"""
from __future__ import annotations

import math

import numpy as np
from onnx import helper
from onnx.reference import ReferenceEvaluator

F64 = np.float64
FUSE = {0: lambda y: y, 1: lambda y: np.maximum(y, 0), 2: lambda y: np.clip(y, 0, 6)}  # OH_NN_FuseType
DATA_TYPES = {1: np.bool_, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.uint8, 7: np.uint16,
              8: np.uint32, 9: np.uint64, 10: np.float16, 11: np.float32, 12: np.float64}  # OH_NN_DataType


def _as_stored(value):
    """A parameter value as the model stores it: every float parameter of NNRt is FLOAT32 (nnrt_ops_spec.json)."""
    if isinstance(value, float):
        return float(np.float32(value))
    if isinstance(value, list):
        return [_as_stored(v) for v in value]
    return value


class Params:
    """The case's parameter values by short name (OH_NN_<OP>_<NAME> -> NAME), with defaults."""

    def __init__(self, op: str, params: dict):
        prefix = f"OH_NN_{op}_"
        self.values = {k[len(prefix):] if k.startswith(prefix) else k: _as_stored(v) for k, v in params.items()}

    def __call__(self, name, default=None):
        return self.values.get(name, default)


def _act(y, params: Params, name="ACTIVATION_TYPE"):
    return FUSE[int(params(name, 0))](y)


def _float(x):
    return np.asarray(x).astype(F64)


def _same_dtype(value, like):
    return np.asarray(value).astype(np.asarray(like).dtype)


def onnx_ref(op_type: str, inputs: list, attrs: dict | None = None, n_outputs: int = 1, opset: int = 21):
    """One ONNX node evaluated by onnx.reference."""
    names = [f"x{i}" for i in range(len(inputs))]
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, **(attrs or {}))
    graph = helper.make_graph([node], "oracle",
                              [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype),
                                                             np.shape(a)) for n, a in zip(names, inputs)],
                              [helper.make_tensor_value_info(o, 0, None) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, [np.asarray(a) for a in inputs])))


# -- windows: NNAPI SAME padding, explicit pads [top, bottom, left, right], ceil mode --------------------------------

def same_pads(size: int, stride: int, extent: int) -> tuple[int, int]:
    """NNAPI PADDING_SAME: out = ceil(size / stride), the odd padding unit at the end (docs/deviations.md)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


def window_axis(mode: int, size, k, s, d, p0, p1, ceil=False):
    """(out, begin pad) of one axis: mode 0 SAME, 1/2 VALID, -1 explicit pads; ceil mode drops a last window
    that would start in the end padding (ONNX, docs/deviations.md "Pooling round mode")."""
    extent = (k - 1) * d + 1
    if mode == 0:
        p0, p1 = same_pads(size, s, extent)
        return -(-size // s), p0
    if mode in (1, 2):
        p0 = p1 = 0
    span = size + p0 + p1 - extent
    if not ceil:
        return span // s + 1, p0
    out = -(-span // s) + 1
    if (out - 1) * s >= size + p0:
        out -= 1
    return out, p0


def _conv_geometry(p: Params, x_shape, kh, kw):
    strides = p("STRIDES", [1, 1])  # docs/deviations.md: omitted strides / dilation are [1, 1]
    dilation = p("DILATION", [1, 1])
    mode = int(p("PAD_MODE", -1)) if "PAD_MODE" in p.values else -1
    pads = p("PAD", [0, 0, 0, 0])
    if not isinstance(pads, list) or len(pads) == 1:  # a 1-element PAD tensor is a pad mode
        mode, pads = int(np.ravel(pads)[0]), [0, 0, 0, 0]
    if isinstance(p("PAD_MODE"), list) and len(p("PAD_MODE")) == 4:  # a 4-element PAD_MODE tensor is a pad list
        mode, pads = -1, p("PAD_MODE")
    oh, top = window_axis(mode, x_shape[1], kh, strides[0], dilation[0], pads[0], pads[1])
    ow, left = window_axis(mode, x_shape[2], kw, strides[1], dilation[1], pads[2], pads[3])
    return strides, dilation, (oh, ow), (top, left)


def conv_nhwc(x, w, b, strides, dilation, out_size, begin, group):
    """Grouped 2-D convolution, NHWC input, weight [O, kH, kW, C / group], zero padding, in float64: one
    multiply-add per kernel tap."""
    x, w = _float(x), _float(w)
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    oh, ow = out_size
    top, left = begin
    og = o // group
    out = np.zeros((n, oh, ow, o))
    for i in range(kh):
        for j in range(kw):
            rows = np.arange(oh) * strides[0] + i * dilation[0] - top
            cols = np.arange(ow) * strides[1] + j * dilation[1] - left
            valid_r, valid_c = (rows >= 0) & (rows < h), (cols >= 0) & (cols < wd)
            patch = np.zeros((n, oh, ow, c))
            patch[:, valid_r[:, None] & valid_c[None, :]] = \
                x[:, rows[valid_r]][:, :, cols[valid_c]].reshape(n, -1, c)
            for g in range(group):
                out[..., g * og:(g + 1) * og] += patch[..., g * cg:(g + 1) * cg] @ w[g * og:(g + 1) * og, i, j].T
    return out + (0 if b is None else _float(b))


def conv2d(case, x, w, b, p: Params):
    strides, dilation, out_size, begin = _conv_geometry(p, x.shape, w.shape[1], w.shape[2])
    group = int(p("GROUP", 1))
    return [_act(conv_nhwc(x, w, b, strides, dilation, out_size, begin, group), p)]


def depthwise(case, x, w, b, p: Params):
    """Weight [C * multiplier, kH, kW, 1]: output channel k reads input channel k // multiplier (as ONNX Conv with
    group = C)."""
    strides, dilation, out_size, begin = _conv_geometry(p, x.shape, w.shape[1], w.shape[2])
    return [_act(conv_nhwc(x, w, b, strides, dilation, out_size, begin, x.shape[3]), p)]


def conv2d_transpose(case, x, w, b, p: Params):
    """Weight [O, kH, kW, C / group] (NNAPI TRANSPOSE_CONV_2D); each input cell scatters its weighted window into
    the full output F = (in - 1) * stride + (k - 1) * dilation + 1, which is then cropped: explicit pads crop
    [top, bottom, left, right], VALID keeps F, SAME keeps in * stride cropping (F - in * stride) // 2 at the
    start (docs/deviations.md "CONV2D_TRANSPOSE"); output paddings add rows / columns at the end."""
    x, w = _float(x), _float(w)
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    group = int(p("GROUP", 1))
    sh, sw = p("STRIDES", [1, 1])
    dh, dw = p("DILATION", [1, 1])
    mode = int(p("PAD_MODE", -1))
    pads = p("PAD", [0, 0, 0, 0])
    oph, opw = p("OUTPUT_PADDINGS", [0, 0])
    fh, fw = (h - 1) * sh + (kh - 1) * dh + 1, (wd - 1) * sw + (kw - 1) * dw + 1
    full = np.zeros((n, fh + oph, fw + opw, o))
    og = o // group
    for i in range(h):
        for j in range(wd):
            for g in range(group):
                # [n, og, kh, kw]: this input cell times the group's weights
                contrib = np.tensordot(x[:, i, j, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og], axes=([1], [3]))
                for ki in range(kh):
                    for kj in range(kw):
                        full[:, i * sh + ki * dh, j * sw + kj * dw, g * og:(g + 1) * og] += contrib[:, :, ki, kj]
    if mode == 0:
        out_h, out_w = h * sh, wd * sw
        top, left = max(fh - out_h, 0) // 2, max(fw - out_w, 0) // 2
    elif mode in (1, 2):
        out_h, out_w, top, left = fh, fw, 0, 0
    else:
        out_h, out_w, top, left = fh - pads[0] - pads[1], fw - pads[2] - pads[3], pads[0], pads[2]
    padded = np.zeros((n, max(top + out_h, fh) + oph, max(left + out_w, fw) + opw, o))
    padded[:, :fh + oph, :fw + opw] = full
    y = padded[:, top:top + out_h + oph, left:left + out_w + opw]
    return [_act(y + _float(b), p)]


def _pool(case, x, p: Params, kind: str):
    x = np.asarray(x)
    work = _float(x)
    if p("GLOBAL", False):
        y = work.mean(axis=(1, 2), keepdims=True) if kind == "avg" else work.max(axis=(1, 2), keepdims=True)
        return [_act(y, p).astype(x.dtype)]
    kh, kw = p("KERNEL_SIZE")
    sh, sw = p("STRIDE", [1, 1])  # docs/deviations.md: omitted strides are [1, 1]
    mode = int(p("PAD_MODE", -1))
    pads = p("PAD", [0, 0, 0, 0])
    ceil = int(p("ROUND_MODE", 0)) == 1  # 0 floor, 1 ceil (header)
    n, h, w, c = x.shape
    oh, top = window_axis(mode, h, kh, sh, 1, pads[0], pads[1], ceil)
    ow, left = window_axis(mode, w, kw, sw, 1, pads[2], pads[3], ceil)
    y = np.zeros((n, oh, ow, c))
    for i in range(oh):
        r0, r1 = max(i * sh - top, 0), min(i * sh - top + kh, h)
        for j in range(ow):
            c0, c1 = max(j * sw - left, 0), min(j * sw - left + kw, w)
            window = work[:, r0:r1, c0:c1]  # the real cells only: padding is never counted
            y[:, i, j] = window.mean(axis=(1, 2)) if kind == "avg" else window.max(axis=(1, 2))
    y = _act(y, p)
    if x.dtype.kind in "iu":
        return [y.astype(x.dtype)]
    return [y.astype(x.dtype)]


def resize_bilinear(case, x, p: Params):
    """NHWC bilinear resize with TF/NNAPI coordinate rules: 0 asymmetric (src = dst * in / out), 1 align corners
    (src = dst * (in - 1) / (out - 1)), 2 half pixel (src = (dst + .5) * in / out - .5), edge samples clamped;
    preserve_aspect_ratio scales both dims by the smaller ratio, the size rounded half to even
    (docs/deviations.md "RESIZE_BILINEAR")."""
    x64 = _float(x)
    n, h, w, c = x.shape
    nh, nw = int(p("NEW_HEIGHT")), int(p("NEW_WIDTH"))
    if p("PRESERVE_ASPECT_RATIO", False):
        ratio = min(nh / h, nw / w)
        nh, nw = int(np.rint(ratio * h)), int(np.rint(ratio * w))
    mode = int(p("COORDINATE_TRANSFORM_MODE", 0))

    def taps(size, out):
        o = np.arange(out, dtype=F64)
        if mode == 0:
            src = o * size / out
        elif mode == 1:
            src = o * (size - 1) / (out - 1) if out > 1 else np.zeros(out)
        else:
            src = (o + 0.5) * size / out - 0.5
        src = np.clip(src, 0, size - 1)
        lo = np.floor(src).astype(int)
        return lo, np.minimum(lo + 1, size - 1), src - lo

    lo, hi, f = taps(h, nh)
    rows = x64[:, lo] * (1 - f)[None, :, None, None] + x64[:, hi] * f[None, :, None, None]
    lo, hi, f = taps(w, nw)
    y = rows[:, :, lo] * (1 - f)[None, None, :, None] + rows[:, :, hi] * f[None, None, :, None]
    return [y]


# -- linear ---------------------------------------------------------------------------------------------------------

def full_connection(case, x, w, *rest):
    """y = x' @ w.T (+ bias), weight [out, in]; x' is x flattened to rows of w's input size from ``axis`` on when
    use_axis (default axis 1 per rows of the trailing dims; docs/deviations.md "FULL_CONNECTION")."""
    *bias, p = rest
    x64, w64 = _float(x), _float(w)
    if p("USE_AXIS", False) or "AXIS" in p.values:
        axis = int(p("AXIS", 0))
        rows = x64.reshape(int(np.prod(x.shape[:axis])), -1)
        out_shape = tuple(x.shape[:axis]) + (w.shape[0],)
    else:
        rows = x64.reshape(-1, w.shape[1])
        out_shape = (rows.shape[0], w.shape[0])
    y = rows @ w64.T
    if bias:
        y = y + _float(bias[0])
    y = _act(y.reshape(out_shape), p, "ACTIVATIONTYPE")
    return [y.astype(x.dtype) if x.dtype.kind in "iu" else y]


def matmul(case, a, b, p: Params):
    a64, b64 = (a, b) if a.dtype.kind in "iu" else (_float(a), _float(b))
    if p("TRANSPOSE_A", False):
        a64 = np.swapaxes(a64, -1, -2)
    if p("TRANSPOSE_B", False):
        b64 = np.swapaxes(b64, -1, -2)
    return [_act(np.matmul(a64, b64), p)]


# -- element-wise -----------------------------------------------------------------------------------------------------

def _promote(a, b):
    """Mixed input types compute in the wider one (header: "converts the low-precision tensor to a high-precision
    one")."""
    dtype = np.result_type(np.asarray(a).dtype, np.asarray(b).dtype)
    return np.asarray(a).astype(dtype), np.asarray(b).astype(dtype), dtype


def _binary(fn, fuse_name=None):
    def oracle(case, a, b, p: Params):
        a, b, dtype = _promote(a, b)
        with np.errstate(all="ignore"):
            if dtype.kind == "f":
                y = fn(_float(a), _float(b))
            else:
                y = fn(a, b)  # integer arithmetic wraps in the type, as C's
        y = np.asarray(y)
        if fuse_name:
            y = FUSE[int(p(fuse_name, 0))](y)
        return [y.astype(dtype)]
    return oracle


def _trunc_div(a, b):
    if a.dtype.kind == "f":
        return a / b
    q = np.abs(a.astype(np.int64) if a.dtype.kind == "i" else a) // np.abs(b.astype(np.int64) if b.dtype.kind == "i" else b)
    if a.dtype.kind == "i":
        q = np.where((a < 0) != (b < 0), -q, q)
    return q.astype(a.dtype)  # C division: truncation toward zero (docs/deviations.md "DIV (integers)")


def _compare(fn):
    def oracle(case, a, b, p):
        a, b, _ = _promote(a, b)
        return [fn(a, b)]
    return oracle


def _unary_float(fn):
    def oracle(case, x, p):
        return [fn(_float(x)).astype(np.asarray(x).dtype)]
    return oracle


def exp(case, x, p: Params):
    """base^(shift + scale * x), base -1 = e (docs/deviations.md "EXP"); defaults base -1, scale 1, shift 0."""
    base, scale, shift = p("BASE", -1.0), p("SCALE", 1.0), p("SHIFT", 0.0)
    z = shift + scale * _float(x)
    return [(np.exp(z) if base == -1 else np.power(base, z)).astype(x.dtype)]


def pow_(case, x, y, p: Params):
    """(scale * x + shift) ^ y (docs/deviations.md "POW"); defaults scale 1, shift 0; integers wrap."""
    scale, shift = p("SCALE", 1.0), p("SHIFT", 0.0)
    if x.dtype.kind in "iu":
        base = x.astype(np.int64) * int(scale) + int(shift) if (scale, shift) != (1.0, 0.0) else x
        out = np.ones(x.shape, np.uint64)
        b64, e = np.asarray(base).astype(np.int64).astype(np.uint64), np.asarray(y).astype(np.int64)
        for _ in range(int(e.max(initial=0))):  # repeated multiplication modulo 2^64, then the type's width
            out = np.where(e > 0, out * b64, out)
            e = e - 1
        return [out.astype(x.dtype)]
    return [np.power(scale * _float(x) + shift, _float(y)).astype(x.dtype)]


def gelu(case, x, p: Params):
    """approximate=false: x * (1 + erf(x / sqrt 2)) / 2; true: the tanh form (docs/deviations.md "GELU")."""
    v = _float(x)
    if p("APPROXIMATE", False):
        y = 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    else:
        y = 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))
    return [y.astype(x.dtype)]


def clip(case, x, p: Params):
    """Omitted bounds: no bound (docs/deviations.md "CLIP bounds omitted"); min > max: every value is max."""
    lo, hi = p("MIN", -math.inf), p("MAX", math.inf)
    v = _float(x)
    y = np.minimum(np.maximum(v, lo), hi)
    if x.dtype.kind in "iu":  # integer data: the bounds compare as reals, the result stays an integer of x
        y = np.where(v < lo, math.ceil(lo) if lo > -math.inf else v, v)
        y = np.where(y > hi, math.floor(hi) if hi < math.inf else y, y)
        if lo > hi:
            y = np.full_like(v, math.floor(hi))
    return [y.astype(x.dtype)]


def prelu(case, x, slope, p):
    """x if x >= 0 else slope * x, the slope per channel = last axis (NHWC, docs/deviations.md "PRELU")."""
    v = _float(x)
    return [np.where(v >= 0, v, v * _float(slope)).astype(x.dtype)]


def bias_add(case, x, b, p):
    return [(x + b).astype(x.dtype) if x.dtype.kind in "iu" else (_float(x) + _float(b)).astype(x.dtype)]


def scale_op(case, x, s, b, p: Params):
    """x * scale + bias, scale and bias covering input dims [axis, axis + scale.ndim) (docs/deviations.md)."""
    axis = int(p("AXIS")) % x.ndim
    shape = s.shape + (1,) * (x.ndim - axis - s.ndim)
    return [_act(_float(x) * _float(s).reshape(shape) + _float(b).reshape(shape), p, "ACTIVATIONTYPE")]


def eltwise(case, a, b, p: Params):
    mode = int(p("MODE", 0))  # 0 PROD (the builder's default), 1 SUM, 2 MAXIMUM
    fn = {0: np.multiply, 1: np.add, 2: np.maximum}[mode]
    return _binary(fn)(case, a, b, p)


def select(case, cond, a, b, p):
    """Elements of input1 where the condition holds, else input2; a rank-1 condition picks rows (header)."""
    cond = np.asarray(cond).astype(bool)
    if cond.ndim == 1 and np.ndim(a) > 1:
        cond = cond.reshape((-1,) + (1,) * (np.ndim(a) - 1))
    return [np.where(cond, a, b)]


def where(case, cond, a, b, p):
    return [np.where(np.asarray(cond).astype(bool), a, b)]


def logical(fn):
    def oracle(case, *xs):
        return [fn(*[np.asarray(x).astype(bool) for x in xs[:-1]])]
    return oracle


def cast(case, x, target, p):
    """C conversion to the OH_NN_DataType of input #1: float -> integer truncates toward zero, anything -> bool is
    != 0 (docs/deviations.md "CAST")."""
    dtype = np.dtype(DATA_TYPES[int(np.ravel(target)[0])])
    if x.dtype.kind == "f" and dtype.kind in "iu":
        return [np.trunc(x).astype(dtype)]
    if dtype == np.bool_:
        return [x != 0]
    return [x.astype(dtype)]


def squared_difference(case, a, b, p):
    a, b, dtype = _promote(a, b)
    if dtype == np.bool_:
        return [a != b]  # (a - b)^2 of 0/1 values
    return _binary(lambda u, v: (u - v) * (u - v))(case, a, b, p)


# -- activations ------------------------------------------------------------------------------------------------------

def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def relu6(v):
    return np.clip(v, 0, 6)


def _int_or_float(fn):
    def oracle(case, x, p):
        if x.dtype.kind in "iu":
            return [fn(x.astype(np.int64)).astype(x.dtype)]
        return [fn(_float(x)).astype(x.dtype)]
    return oracle


def leaky_relu(case, x, p: Params):
    slope = p("NEGATIVE_SLOPE", 0.0)
    v = _float(x)
    return [np.where(v > 0, v, slope * v).astype(x.dtype)]


# -- normalization --------------------------------------------------------------------------------------------------

def batch_norm(case, x, scale, offset, mean, var, p: Params):
    """(x - mean) / sqrt(variance + epsilon) * scale + offset on the last axis; epsilon default 0.0001."""
    eps = p("EPSILON", 0.0001)
    y = (_float(x) - _float(mean)) / np.sqrt(_float(var) + eps) * _float(scale) + _float(offset)
    return [y]


def layer_norm(case, x, gamma, beta, p: Params):
    """Normalized over dims [beginNormAxis, rank); gamma and beta cover input dims [beginParamsAxis, rank)
    (defaults 1 and 1; epsilon 1e-7)."""
    axis = int(p("BEGIN_NORM_AXIS", 1)) % x.ndim
    eps = p("EPSILON", 1e-7)
    v = _float(x)
    axes = tuple(range(axis, x.ndim))
    mean = v.mean(axis=axes, keepdims=True)
    var = ((v - mean) ** 2).mean(axis=axes, keepdims=True)
    return [(v - mean) / np.sqrt(var + eps) * _float(gamma) + _float(beta)]


def instance_norm(case, x, scale, bias, p: Params):
    """Channel last: each (batch, channel) normalized over the dims between; epsilon default 0.0."""
    eps = p("EPSILON", 0.0)
    v = _float(x)
    axes = tuple(range(1, x.ndim - 1))
    mean = v.mean(axis=axes, keepdims=True)
    var = ((v - mean) ** 2).mean(axis=axes, keepdims=True)
    return [(v - mean) / np.sqrt(var + eps) * _float(scale) + _float(bias)]


def l2_normalize(case, x, p: Params):
    """x / sqrt(max(sum(x^2 over axis), epsilon)); axis default [0] (docs/deviations.md), epsilon 1e-6."""
    axes = tuple(int(a) % x.ndim for a in p("AXIS", [0]))
    eps = p("EPSILON", 1e-6)
    v = _float(x)
    return [_act(v / np.sqrt(np.maximum((v * v).sum(axis=axes, keepdims=True), eps)), p)]


def lrn(case, x, p: Params):
    """Across the last axis (NHWC): x / (bias + alpha * sum(x[c - r .. c + r]^2)) ^ beta, alpha not divided by the
    window (docs/deviations.md "LRN"); defaults 0 (the builder's)."""
    r, bias, alpha, beta = int(p("DEPTH_RADIUS", 0)), p("BIAS", 0.0), p("ALPHA", 0.0), p("BETA", 0.0)
    v = _float(x)
    c = v.shape[-1]
    sq = v * v
    window = np.stack([sq[..., max(0, k - r):k + r + 1].sum(axis=-1) for k in range(c)], axis=-1)
    return [v / (bias + alpha * window) ** beta]


def softmax(case, x, p: Params):
    """axis default -1 (docs/deviations.md "SOFTMAX axis omitted")."""
    axis = int(np.ravel(p("AXIS", -1))[0])
    v = _float(x)
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return [e / e.sum(axis=axis, keepdims=True)]


def log_softmax(case, x, p: Params):
    """axis default 0 (the builder's)."""
    axis = int(np.ravel(p("AXIS", 0))[0])
    v = _float(x)
    m = v.max(axis=axis, keepdims=True)
    return [v - m - np.log(np.exp(v - m).sum(axis=axis, keepdims=True))]


# -- reductions -----------------------------------------------------------------------------------------------------

def _reduce(fn):
    """Over the axes of input #1 (reduce_to_end: from that axis to the last), keep_dims default false, coeff default
    1.0 multiplying the result (docs/deviations.md "Reduce coeff default"); integers stay integers (a mean
    truncates toward zero), the result has the input's type (header)."""
    def oracle(case, x, axis, p: Params):
        x = np.asarray(x)
        axes = [int(a) % x.ndim for a in np.ravel(axis)]
        if p("REDUCE_TO_END", False):
            axes = list(range(axes[0], x.ndim))
        keep = bool(p("KEEP_DIMS", False))
        coeff = p("COEFF", 1.0)
        y = fn(x, tuple(sorted(set(axes))), keep)
        if coeff != 1.0:
            y = np.asarray(y).astype(F64) * coeff
        if x.dtype.kind in "iu" and np.asarray(y).dtype.kind == "f":
            y = np.trunc(y)
        return [np.asarray(y).astype(x.dtype)]
    return oracle


def _mean(x, axes, keep):
    if x.dtype.kind in "iu":
        total = np.sum(x.astype(np.int64), axis=axes, keepdims=keep)
        n = int(np.prod([x.shape[a] for a in axes]))
        return np.sign(total) * (np.abs(total) // n)
    return _float(x).mean(axis=axes, keepdims=keep)


def _sum(x, axes, keep):
    return np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype) if x.dtype.kind in "iu" else \
        _float(x).sum(axis=axes, keepdims=keep)


def _prod(x, axes, keep):
    return np.prod(x, axis=axes, keepdims=keep, dtype=x.dtype) if x.dtype.kind in "iu" else \
        _float(x).prod(axis=axes, keepdims=keep)


def all_op(case, x, axis, p: Params):
    """Logical and (non-zero) over the axes; keep_dims default 0; bool output."""
    axes = tuple(sorted({int(a) % np.ndim(x) for a in np.ravel(axis)}))
    return [np.all(np.asarray(x) != 0, axis=axes, keepdims=bool(p("KEEP_DIMS", 0)))]


def arg_max(case, x, p: Params):
    """Index (out_max_value: value) of the maximum along axis (default -1), first on ties; top_k > 1 keeps the
    top_k largest, descending, in an axis of that size; with top_k 1 the axis goes unless keep_dims
    (docs/deviations.md "ARG_MAX")."""
    axis = int(p("AXIS", -1)) % x.ndim
    k = int(p("TOP_K", 1))
    order = np.argsort(-_float(x), axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    if p("OUT_MAX_VALUE", False):
        out = np.take_along_axis(x, idx, axis=axis)
    else:
        dtype = case.outputs[0]["dtype"] if case.outputs else "int32"
        out = idx.astype(dtype)
    if k == 1 and not p("KEEPDIMS", False):
        out = np.squeeze(out, axis=axis)
    return [out]


def top_k(case, x, k, p: Params):
    """The k largest along axis (default -1, the header's; docs/deviations.md), descending (sorted) or the same
    k in ascending order (docs/deviations.md "TOP_K sorted=false"); ties: lower index first."""
    axis = int(p("AXIS", -1)) % x.ndim
    k = int(np.ravel(k)[0])
    order = np.take(np.argsort(-_float(x), axis=axis, kind="stable"), np.arange(k), axis=axis)
    if not p("SORTED", True):  # the same k, by ascending value (ties: still the lower index first)
        chosen = np.take_along_axis(_float(x), order, axis=axis)
        order = np.take_along_axis(order, np.argsort(chosen, axis=axis, kind="stable"), axis=axis)
    values = np.take_along_axis(x, order, axis=axis)
    index_dtype = case.outputs[1]["dtype"] if case.outputs else "int32"
    return [values, order.astype(index_dtype)]


# -- shape and data movement ----------------------------------------------------------------------------------------

def reshape(case, x, shape, p):
    """0 copies the input dim (docs/deviations.md "RESHAPE"), -1 is inferred."""
    dims = [int(d) if d != 0 else x.shape[i] for i, d in enumerate(np.ravel(shape))]
    return [x.reshape(dims)]


def squeeze(case, x, p: Params):
    """Axes listed (default: every 1); a listed dim that is not 1 stays (docs/deviations.md "SQUEEZE")."""
    axes = p("AXIS", [])
    axes = [a % x.ndim for a in axes] if axes else [i for i, d in enumerate(x.shape) if d == 1]
    return [x.reshape([d for i, d in enumerate(x.shape) if not (i in axes and d == 1)])]


def unsqueeze(case, x, p: Params):
    y = x
    for a in sorted(int(a) % (x.ndim + 1) for a in np.ravel(p("AXIS", []))):
        y = np.expand_dims(y, a)
    return [y]


def flatten(case, x, p: Params):
    axis = int(p("AXIS", 1))
    axis = axis + x.ndim if axis < 0 else axis
    return [x.reshape(int(np.prod(x.shape[:axis])), -1)]


def tile(case, x, multiples, p):
    reps = [int(r) for r in np.ravel(multiples)]
    return [np.tile(x.reshape((1,) * (len(reps) - x.ndim) + x.shape), reps)]


def broadcast_to(case, x, p: Params):
    shape = [x.shape[i - (len(p("SHAPE")) - x.ndim)] if d == -1 else d for i, d in enumerate(p("SHAPE"))]
    return [np.broadcast_to(x, shape).copy()]


def concat(case, *xs):
    p = xs[-1]
    return [np.concatenate(xs[:-1], axis=int(p("AXIS", 0)))]


def stack(case, *xs):
    p = xs[-1]
    return [np.stack(xs[:-1], axis=int(p("AXIS", 0)))]


def unstack(case, x, p: Params):
    axis = int(p("AXIS", 0)) % x.ndim
    return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


def split(case, x, p: Params):
    axis = int(p("AXIS", 0)) % x.ndim
    sizes = list(p("SIZE_SPLITS", []))
    if sizes:
        if -1 in sizes:
            sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    else:
        n = int(p("OUTPUT_NUM", 0)) or len(case.outputs) or 1
        sizes = [x.shape[axis] // n] * n
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def shape_op(case, x, p):
    return [np.array(x.shape, case.outputs[0]["dtype"])]


def rank_op(case, x, p):
    return [np.array(x.ndim, case.outputs[0]["dtype"])]


def range_op(case, x, p: Params):
    """[start, limit) by delta (defaults 0, 0, 1) in the declared output dtype."""
    start, limit, delta = p("START", 0), p("LIMIT", 0), p("DELTA", 1)
    return [np.arange(start, limit, delta).astype(case.outputs[0]["dtype"])]


def fill(case, value, shape, p):
    return [np.full([int(d) for d in np.ravel(shape)], np.ravel(value)[0], dtype=np.asarray(value).dtype)]


def constant_of_shape(case, shape, p: Params):
    """dataType 0 (the default): the declared output type; value default [] = 0."""
    dtype = DATA_TYPES.get(int(p("DATA_TYPE", 0))) or case.outputs[0]["dtype"]
    value = (p("VALUE") or [0.0])[0]
    return [np.full([int(d) for d in np.ravel(shape)], value).astype(dtype)]


def pad(case, x, paddings, p: Params):
    """paddings [[before, after] per dim]; mode 0 constant (value default 0), 1 reflect, 2 symmetric (TF)."""
    rows = np.asarray(paddings).reshape(-1, 2).tolist()
    mode = {0: "constant", 1: "reflect", 2: "symmetric"}[int(p("PADDING_MODE", 0))]
    if mode == "constant":
        value = p("CONSTANT_VALUE", 0.0)
        return [np.pad(x, rows, constant_values=np.asarray(value).astype(x.dtype))]
    return [np.pad(x, rows, mode=mode)]


def crop(case, x, sizes, p: Params):
    """Dims from axis on keep input #1's values (window sizes, docs/deviations.md "CROP") starting at the offsets
    (one offset for all, or one per dim; default 0)."""
    axis = int(p("AXIS", 0)) % x.ndim
    sizes = [int(s) for s in np.ravel(sizes)]
    offsets = list(p("OFFSET", [])) or [0]
    if len(offsets) == 1:
        offsets = offsets * (x.ndim - axis)
    index = [slice(None)] * axis + [slice(o, o + s) for o, s in zip(offsets, sizes)]
    return [x[tuple(index)]]


def slice_op(case, x, begin, size, p: Params):
    """begin / size on the listed axes (default dims 0..); size -1: to the end."""
    begin, size = np.ravel(begin).tolist(), np.ravel(size).tolist()
    axes = [int(a) % x.ndim for a in p("AXES", [])] or list(range(len(begin)))
    index = [slice(None)] * x.ndim
    for a, b, s in zip(axes, begin, size):
        index[a] = slice(b, None if s == -1 else b + s)
    return [x[tuple(index)]]


def strided_slice(case, x, begin, end, strides, p: Params):
    """TensorFlow's strided slice with its five masks (docs/deviations.md "STRIDED_SLICE"), written as the Python
    index it means: begin/end mask bit i drops the bound, ellipsis bit i is ``...``, new-axis bit i ``None``,
    shrink bit i the integer ``begin[i]``."""
    bits = {name: int(p(f"{name}_MASK", 0)) for name in ("BEGIN", "END", "ELLIPSIS", "NEW_AXIS", "SHRINK_AXIS")}
    index = []
    for i, (b, e, s) in enumerate(zip(np.ravel(begin).tolist(), np.ravel(end).tolist(), np.ravel(strides).tolist())):
        if bits["ELLIPSIS"] >> i & 1:
            index.append(Ellipsis)
        elif bits["NEW_AXIS"] >> i & 1:
            index.append(None)
        elif bits["SHRINK_AXIS"] >> i & 1:
            index.append(b)
        else:
            index.append(slice(None if bits["BEGIN"] >> i & 1 else b, None if bits["END"] >> i & 1 else e, s))
    return [np.asarray(x[tuple(index)])]


def gather(case, x, indices, axis, p):
    return [np.take(x, indices, axis=int(np.ravel(axis)[0]))]


def gather_nd(case, x, indices, p):
    idx = np.asarray(indices)
    k = idx.shape[-1]
    return [x[tuple(idx[..., i] for i in range(k))]]


def scatter_nd(case, indices, updates, shape, p):
    """Zeros of ``shape`` with updates added at the indices, duplicates summed (docs/deviations.md; for bool,
    a sum of flags is their or)."""
    out = np.zeros([int(d) for d in np.ravel(shape)], updates.dtype)
    idx = np.asarray(indices)
    for position in np.ndindex(idx.shape[:-1]):
        target = tuple(idx[position])
        out[target] = (out[target] | updates[position]) if updates.dtype == np.bool_ else out[target] + updates[position]
    return [out]


def sparse_to_dense(case, indices, values, shape, p):
    dims = [int(d) for d in np.ravel(shape)]
    out = np.zeros(dims, np.asarray(values).dtype)
    idx = np.asarray(indices).reshape(-1, len(dims))
    vals = np.broadcast_to(np.ravel(values), (idx.shape[0],))
    for row, v in zip(idx, vals):
        out[tuple(row)] = v
    return [out]


def one_hot(case, indices, depth, on, off, p: Params):
    """on where the index equals the position along the new axis (default -1), off elsewhere: an index outside
    [0, depth) gives an all-off vector (docs/deviations.md "ONE_HOT"); the output type is declared."""
    axis = int(p("AXIS", -1))
    depth = int(np.ravel(depth)[0])
    dtype = case.outputs[0]["dtype"]
    hot = np.asarray(indices)[..., None] == np.arange(depth)
    hot = np.moveaxis(hot, -1, axis)
    return [np.where(hot, np.ravel(on)[0], np.ravel(off)[0]).astype(dtype)]


def expand_dims(case, x, axis, p):
    return [np.expand_dims(x, int(np.ravel(axis)[0]))]


def transpose(case, x, perm, p):
    return [np.transpose(x, [int(v) for v in np.ravel(perm)])]


def depth_to_space(case, x, p: Params):
    """NHWC; mode 0 DCR (the default, docs/deviations.md), 1 CRD, as ONNX DepthToSpace on NCHW."""
    b = int(p("BLOCK_SIZE"))
    mode = "DCR" if int(p("MODE", 0)) == 0 else "CRD"
    (y,) = onnx_ref("DepthToSpace", [np.ascontiguousarray(x.transpose(0, 3, 1, 2))], {"blocksize": b, "mode": mode})
    return [np.ascontiguousarray(y.transpose(0, 2, 3, 1))]


def space_to_depth(case, x, p: Params):
    b = int(p("BLOCK_SIZE"))
    (y,) = onnx_ref("SpaceToDepth", [np.ascontiguousarray(x.transpose(0, 3, 1, 2))], {"blocksize": b})
    return [np.ascontiguousarray(y.transpose(0, 2, 3, 1))]


def space_to_batch_nd(case, x, p: Params):
    """TF SpaceToBatchND on H and W of NHWC with paddings [[top, bottom], [left, right]] (both rows, docs/
    deviations.md): batch index = (bh_offset * bW + bw_offset) * N + n."""
    bh, bw = p("BLOCK_SHAPE")
    (t, bo), (le, r) = p("PADDINGS", [[0, 0], [0, 0]])
    y = np.pad(x, [(0, 0), (t, bo), (le, r), (0, 0)])
    n, h, w, c = y.shape
    y = y.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
    return [y.reshape(bh * bw * n, h // bh, w // bw, c)]


def batch_to_space_nd(case, x, p: Params):
    """The inverse: the batch split into [bH, bW, N], laid out over H and W, then crops [top, bottom, left,
    right] removed."""
    bh, bw = p("BLOCKSIZE")
    crops = p("CROPS", [0, 0, 0, 0])
    nb, h, w, c = x.shape
    n = nb // (bh * bw)
    y = x.reshape(bh, bw, n, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(n, h * bh, w * bw, c)
    return [y[:, crops[0]:h * bh - crops[1], crops[2]:w * bw - crops[3]]]


def assert_op(case, cond, data, p):
    """The output is the condition (docs/deviations.md "ASSERT"), in the declared type."""
    dtype = case.outputs[0]["dtype"] if case.outputs else np.asarray(cond).dtype
    return [np.asarray(cond).astype(dtype)]


def quant_dtype_cast(case, x, p: Params):
    """int -> float r = (q - z) * s; float -> int q = clamp(round(r / s + z)) in double precision, ties to even
    (docs/deviations.md "QUANT_DTYPE_CAST"); int -> int requantizes; per channel along axis."""
    axis = int(p("AXIS", 0))
    real = _float(x)
    in_q = case.inputs[0].get("quant")
    if in_q:
        real = (real - _per(in_q["zero_points"], x.ndim, axis)) * _per(in_q["scales"], x.ndim, axis)
    out = case.outputs[0]
    dtype = np.dtype(out["dtype"])
    if dtype.kind == "f":
        return [real.astype(dtype)]
    q = out["quant"]
    info = np.iinfo(dtype)
    return [np.clip(np.rint(real / _per(q["scales"], x.ndim, axis) + _per(q["zero_points"], x.ndim, axis)),
                    info.min, info.max).astype(dtype)]


def _per(values, ndim, axis):
    v = np.asarray(values, F64)
    if v.size == 1:
        return v.reshape(())
    shape = [1] * ndim
    shape[axis] = v.size
    return v.reshape(shape)


# -- recurrent and detection: the kernel tests' oracles ------------------------------------------------------------

def lstm(case, x, w_ih, w_hh, bias, hx, cx, p: Params):
    """Gate order i, o, f, g, bias [input 4H; hidden 4H], output [seq, batch, dirs * hidden]
    (docs/deviations.md "LSTM"); dropout is the identity at inference, zoneout mixes by expectation."""
    from kernels.test_recurrent import reference_lstm

    d = 2 if p("BIDIRECTIONAL", False) else 1
    layers = w_ih.shape[0] // d
    y, hy, cy = reference_lstm(_float(x), _float(w_ih), _float(w_hh), _float(bias), _float(hx), _float(cx), D=d,
                               L=layers, has_bias=bool(p("HAS_BIAS", False)),
                               zoneout_cell=p("ZONEOUT_CELL", 0.0), zoneout_hidden=p("ZONEOUT_HIDDEN", 0.0))
    return [y, hy, cy]


def detection_post_process(case, deltas, scores, anchors, p: Params):
    """TFLite/MindSpore DetectionPostProcess: boxes decoded by the centre-size formula with scales [h, w, x, y]
    (docs/deviations.md), column 0 of the scores is background when there are num_classes + 1 columns;
    regular NMS per class (onnxruntime's NonMaxSuppression), then the best max_detections; fast NMS on each
    anchor's best score, then its max_classes_per_detection best classes. Rows: max_detections x
    max_classes_per_detection, zero-filled; outputs boxes, classes, scores, count."""
    from kernels.test_detection import decode_reference, ort_nms

    scale = p("SCALE")
    iou, score = p("NMS_IOU_THRESHOLD", 0.0), p("NMS_SCORE_THRESHOLD", 0.0)
    max_det, per_class = int(p("MAX_DETECTIONS", 0)), int(p("DETECTIONS_PER_CLASS", 0))
    per_det, classes = int(p("MAX_CLASSES_PER_DETECTION", 0)), int(p("NUM_CLASSES", 0))
    regular = bool(p("USE_REGULAR_NMS", False))
    anchors = _float(anchors).reshape(-1, 4)
    batch = deltas.shape[0]
    rows = max_det * per_det
    first = scores.shape[2] - classes
    dtypes = [o["dtype"] for o in case.outputs] if case.outputs else ["float32"] * 4
    boxes_out = np.zeros((batch, rows, 4))
    classes_out = np.zeros((batch, rows))
    scores_out = np.zeros((batch, rows))
    counts = np.zeros(batch)
    for n in range(batch):
        decoded = decode_reference(_float(deltas[n, :, :4]), anchors, *scale)
        cls_scores = _float(scores[n, :, first:])
        if regular:
            picked = ort_nms(decoded, cls_scores.T, per_class, iou, score)
            picked.sort(key=lambda cb: (-cls_scores[cb[1], cb[0]], cb[0], cb[1]))
            want = [(b, c, cls_scores[b, c]) for c, b in picked[:max_det]]
        else:
            kept = [b for _, b in ort_nms(decoded, cls_scores.max(axis=1)[None], max_det, iou, score)]
            want = [(b, int(c), cls_scores[b, c]) for b in kept
                    for c in np.argsort(-cls_scores[b], kind="stable")[:min(per_det, classes)]]
        for row, (b, c, s) in enumerate(want):
            boxes_out[n, row], classes_out[n, row], scores_out[n, row] = decoded[b], c, s
        counts[n] = len(want)
    return [boxes_out.astype(dtypes[0]), classes_out.astype(dtypes[1]), scores_out.astype(dtypes[2]),
            counts.astype(dtypes[3])]


ORACLES = {
    "ADD": _binary(np.add, "ACTIVATIONTYPE"), "SUB": _binary(np.subtract, "ACTIVATIONTYPE"),
    "MUL": _binary(np.multiply, "ACTIVATION_TYPE"), "DIV": _binary(_trunc_div, "ACTIVATIONTYPE"),
    "MAXIMUM": _binary(np.maximum), "MINIMUM": _binary(np.minimum),
    "MOD": _binary(np.fmod),  # fmod: the sign of the dividend (docs/deviations.md "MOD")
    "SQUARED_DIFFERENCE": squared_difference, "ELTWISE": eltwise, "BIAS_ADD": bias_add, "PRELU": prelu,
    "SCALE": scale_op, "POW": pow_,
    "EQUAL": _compare(np.equal), "NOT_EQUAL": _compare(np.not_equal), "LESS": _compare(np.less),
    "LESS_EQUAL": _compare(np.less_equal), "GREATER": _compare(np.greater),
    "GREATER_EQUAL": _compare(np.greater_equal),
    "LOGICAL_AND": logical(np.logical_and), "LOGICAL_OR": logical(np.logical_or),
    "LOGICAL_NOT": logical(np.logical_not), "SELECT": select, "WHERE": where, "CAST": cast,
    "ABS": _int_or_float(np.abs), "NEG": _int_or_float(np.negative), "CEIL": _unary_float(np.ceil),
    "FLOOR": _unary_float(np.floor), "ROUND": _unary_float(np.rint), "COS": _unary_float(np.cos),
    "SIN": _unary_float(np.sin), "LOG": _unary_float(np.log), "SQRT": _unary_float(np.sqrt),
    "SQUARE": lambda case, x, p: _binary(np.multiply)(case, x, x, p),  # integers wrap
    "RSQRT": _unary_float(lambda v: 1 / np.sqrt(v)), "RECIPROCAL": _unary_float(lambda v: 1 / v),
    "ERF": _unary_float(np.vectorize(math.erf)), "EXP": exp, "GELU": gelu, "CLIP": clip,
    "RELU": _int_or_float(lambda v: np.maximum(v, 0)), "RELU6": _int_or_float(relu6),
    "SIGMOID": _unary_float(_sigmoid), "TANH": _unary_float(np.tanh),
    "HSWISH": _unary_float(lambda v: v * relu6(v + 3) / 6),  # docs/deviations.md "HARD_SIGMOID, HSWISH, SWISH"
    "HARD_SIGMOID": _unary_float(lambda v: relu6(v + 3) / 6), "SWISH": _unary_float(lambda v: v * _sigmoid(v)),
    "LEAKY_RELU": leaky_relu,
    "CONV2D": conv2d, "DEPTHWISE_CONV2D_NATIVE": depthwise, "CONV2D_TRANSPOSE": conv2d_transpose,
    "AVG_POOL": lambda case, x, p: _pool(case, x, p, "avg"), "MAX_POOL": lambda case, x, p: _pool(case, x, p, "max"),
    "RESIZE_BILINEAR": resize_bilinear, "FULL_CONNECTION": full_connection, "MATMUL": matmul,
    "BATCH_NORM": batch_norm, "LAYER_NORM": layer_norm, "INSTANCE_NORM": instance_norm,
    "L2_NORMALIZE": l2_normalize, "LRN": lrn, "SOFTMAX": softmax, "LOG_SOFTMAX": log_softmax,
    "REDUCE_MEAN": _reduce(_mean), "REDUCE_SUM": _reduce(_sum), "REDUCE_PROD": _reduce(_prod),
    "REDUCE_MAX": _reduce(lambda x, a, k: np.max(x, axis=a, keepdims=k)),
    "REDUCE_MIN": _reduce(lambda x, a, k: np.min(x, axis=a, keepdims=k)),
    "REDUCE_L2": _reduce(lambda x, a, k: np.sqrt((_float(x) ** 2).sum(axis=a, keepdims=k))),
    "REDUCE_ALL": _reduce(lambda x, a, k: np.all(x != 0, axis=a, keepdims=k)),
    "ALL": all_op, "ARG_MAX": arg_max, "TOP_K": top_k,
    "RESHAPE": reshape, "SQUEEZE": squeeze, "UNSQUEEZE": unsqueeze, "FLATTEN": flatten, "TILE": tile,
    "BROADCAST_TO": broadcast_to, "CONCAT": concat, "STACK": stack, "UNSTACK": unstack, "SPLIT": split,
    "SHAPE": shape_op, "RANK": rank_op, "RANGE": range_op, "FILL": fill, "CONSTANT_OF_SHAPE": constant_of_shape,
    "PAD": pad, "CROP": crop, "SLICE": slice_op, "STRIDED_SLICE": strided_slice, "GATHER": gather,
    "GATHER_ND": gather_nd, "SCATTER_ND": scatter_nd, "SPARSE_TO_DENSE": sparse_to_dense, "ONE_HOT": one_hot,
    "EXPAND_DIMS": expand_dims, "TRANSPOSE": transpose, "DEPTH_TO_SPACE": depth_to_space,
    "SPACE_TO_DEPTH": space_to_depth, "SPACE_TO_BATCH_ND": space_to_batch_nd,
    "BATCH_TO_SPACE_ND": batch_to_space_nd, "ASSERT": assert_op, "QUANT_DTYPE_CAST": quant_dtype_cast,
    "LSTM": lstm, "DETECTION_POST_PROCESS": detection_post_process,
}


BIASED = ("CONV2D", "DEPTHWISE_CONV2D_NATIVE", "CONV2D_TRANSPOSE", "FULL_CONNECTION")


def _dequantized(array, spec):
    q = spec.get("quant")
    if q is None:
        return array
    axis = q.get("axis") or 0
    return ((array.astype(F64) - _per(q["zero_points"], array.ndim, axis)) * _per(q["scales"], array.ndim, axis)) \
        .astype(np.float32)


def _quantized(real, spec):
    q = spec.get("quant")
    dtype = np.dtype(spec["dtype"])
    if q is None:
        return real
    axis = q.get("axis") or 0
    info = np.iinfo(dtype)
    v = np.asarray(real, F64)
    return np.clip(np.rint(v / _per(q["scales"], v.ndim, axis) + _per(q["zero_points"], v.ndim, axis)),
                   info.min, info.max).astype(dtype)


def expected(case) -> list[np.ndarray]:
    """The outputs the op case must produce, by the specification (see the module doc)."""
    op = case.op.name[len("OH_NN_OPS_"):]
    arrays = case.arrays()
    params = Params(op, case.params)
    if op != "QUANT_DTYPE_CAST":
        if op in BIASED and len(arrays) > 2 and arrays[2].dtype.kind in "iu" and "quant" in case.inputs[1]:
            # an INT32 bias is quantized with scale = input scale x weight scale (docs/deviations.md)
            x_q, w_q = case.inputs[0]["quant"], case.inputs[1]["quant"]
            arrays[2] = arrays[2].astype(F64) * x_q["scales"][0] * np.asarray(w_q["scales"], F64)
        arrays = [_dequantized(a, spec) for a, spec in zip(arrays, case.inputs)]
    outputs = ORACLES[op](case, *arrays, params)
    if op != "QUANT_DTYPE_CAST":
        outputs = [_quantized(o, spec) if i < len(case.outputs) else o for i, (o, spec) in
                   enumerate(zip(outputs, case.outputs + [{}] * len(outputs)))]
    return [np.asarray(o) for o in outputs]


def assert_matches_spec(case, outputs, want, who: str) -> None:
    """``outputs`` (of onnxruntime or the native kernel) against the specification's values: floats within the
    case's tolerance, integers and bools exactly, quantized outputs within one quantization step."""
    assert len(outputs) == len(want), f"{who}: {len(outputs)} outputs, the op has {len(want)}"
    for position, (got, exp) in enumerate(zip(outputs, want)):
        got = np.asarray(got)
        where = f"{who}, output #{position}"
        assert got.shape == exp.shape, f"{where}: shape {got.shape}, expected {exp.shape}"
        quantized = position < len(case.outputs) and "quant" in case.outputs[position]
        if got.dtype.kind == "f":
            rtol, atol = case.tolerance(got.dtype)
            np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol,
                                       err_msg=where)
        else:
            assert exp.dtype.kind in "biu", f"{where}: a {got.dtype} output where the op gives {exp.dtype} values"
            difference = np.abs(got.astype(np.float64) - exp.astype(np.float64))
            assert difference.max(initial=0) <= (1 if quantized else 0), f"{where}: {got} != {exp}"
