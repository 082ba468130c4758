"""The differential contract of the fast paths: every model runs on the production plan (fusions, runners,
accelerated kernels) and on the reference plan (the extension config ``nnrt_onnx.reference_plan``: every operation
its own step, run by its plain numpy kernel), and the two agree within ``nnrt_onnx.accel.contract`` -- exactly
where it says EXACT. Also every tensor captured from the production plan (``run_arrays(capture=...)``: fused
steps' intermediates re-computed) against the reference plan's.

Models: (a) every op case of the op table; (b) shapes drawn at random (seeded by the test id) per runner kind and
per fusion -- a dynamic batch bound to 1, 2 and 3 (the accelerated kernels picking their path per call) and the
same shapes static (the runners bound to them), odd sizes, one channel, strides, dilations, pads, activations,
NaN/inf/-0.0 where the contract is EXACT (finite values where it is a tolerance: Winograd's transforms spread a
NaN over its 2x2 output tile), and the aliasing of the plan's fusions: an input read by several operations, a
model output that another operation reads, a residual that is a model input, a residual read by a third
operation. Skipped with ``NNRT_ONNX_NUMBA=0`` (the production plan is the reference plan then)."""
from __future__ import annotations

import numpy as np
import pytest
from accel_support import reference_executor, requires_fast_paths

from nnrt_onnx import Compilation, Executor, Model, NNRtError, TensorDesc
from nnrt_onnx.accel.contract import CONTRACT, EXACT, disagreement, tolerance
from nnrt_onnx.enums import OH_NN_DataType as DT
from nnrt_onnx.enums import OH_NN_OperationType as OP
from nnrt_onnx.enums import OH_NN_TensorType as TT
from nnrt_onnx.testing.opcases import op_cases

pytestmark = requires_fast_paths
F32 = np.float32
CASES = op_cases()


def fast_executor(model):
    compilation = Compilation(model)
    compilation.build()
    return Executor(compilation)


def loosest(model) -> str:
    """The op of ``model`` with the loosest contract (a model's tensors answer to it)."""
    ops = [o.op.name[len("OH_NN_OPS_"):] for o in model.operations]
    return max(ops, key=lambda name: tolerance(name))


def assert_contract(model, feeds_list, *, capture=True):
    """The production plan keeps the contract against the reference plan on every feed: outputs, and every
    operation's output captured; the feeds are left as they were."""
    fast, reference = fast_executor(model), reference_executor(model)
    assert fast.prepared.fast_paths and not reference.prepared.fast_paths
    op = loosest(model)
    produced = [t for o in model.operations for t in o.outputs]
    for feeds in feeds_list:
        kept = [f.copy() for f in feeds]
        try:
            want = reference.run_arrays(feeds)
        except NNRtError as error:
            with pytest.raises(NNRtError) as raised:
                fast.run_arrays(feeds)
            assert raised.value.code == error.code
            continue
        got_capture, want_capture = ({t: None for t in produced} for _ in range(2))
        got = fast.run_arrays(feeds, capture=got_capture if capture else None)
        for g, w in zip(got, want):
            problem = disagreement(op, g, w)
            assert problem is None, f"output: {problem} (shapes {[f.shape for f in feeds]})"
        for f, k in zip(feeds, kept):
            np.testing.assert_array_equal(f, k)  # no step wrote into the caller's arrays
        if capture:
            reference.run_arrays(feeds, capture=want_capture)
            for t in produced:
                problem = disagreement(op, got_capture[t], want_capture[t])
                hidden = fast.prepared.hidden_by(t)
                assert problem is None, f"captured tensor {t} (hidden by: {hidden}): {problem}"
    return fast


# -- (a) every op case of the op table -----------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_op_case_keeps_the_contract(case):
    model, inputs = case.model()
    assert_contract(model, [inputs])


# -- (b) random shapes per runner kind and fusion ------------------------------------------------------------------

class Net:
    """A small model under construction: float32 tensors, constant weights, one operation per call."""

    def __init__(self, rng):
        self.m, self.rng, self.inputs = Model(), rng, []

    def input(self, dims):
        t = self.m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, list(dims)))
        self.inputs.append(t)
        return t

    def const(self, array):
        return self.m.add_constant(np.ascontiguousarray(array))

    def weight(self, *shape, scale=None):
        fan = int(np.prod(shape[1:])) or 1
        return self.const((self.rng.standard_normal(shape) / np.sqrt(fan) if scale is None else
                           self.rng.standard_normal(shape) * scale).astype(F32))

    def op(self, op, inputs, dims, dtype=DT.OH_NN_FLOAT32, **params):
        out = self.m.add_tensor(TensorDesc(dtype, list(dims)))
        self.m.add_operation(op, [self.m.add_param(TT[name], value) for name, value in params.items()],
                             list(inputs), [out])
        return out

    def finish(self, outputs):
        self.m.specify_inputs_and_outputs(self.inputs, list(outputs))
        self.m.finish()
        return self.m


def conv_dims(h, w, k, stride, dilation, pads):
    ek = (k - 1) * dilation + 1
    return (h + pads[0] + pads[1] - ek) // stride + 1, (w + pads[2] + pads[3] - ek) // stride + 1


def add_conv(net, x, n, h, w, c, o, k, *, stride=1, dilation=1, pads=(0, 0, 0, 0), group=1, activation=0,
             depthwise=False, multiplier=1):
    oh, ow = conv_dims(h, w, k, stride, dilation, pads)
    if depthwise:
        o = c * multiplier
        wt, b = net.weight(o, k, k, 1), net.weight(o, scale=0.5)
        out = net.op(OP.OH_NN_OPS_DEPTHWISE_CONV2D_NATIVE, [x, wt, b], (n, oh, ow, o),
                     OH_NN_DEPTHWISE_CONV2D_NATIVE_STRIDES=[stride, stride],
                     OH_NN_DEPTHWISE_CONV2D_NATIVE_PAD=list(pads),
                     OH_NN_DEPTHWISE_CONV2D_NATIVE_DILATION=[dilation, dilation],
                     OH_NN_DEPTHWISE_CONV2D_NATIVE_ACTIVATION_TYPE=activation)
    else:
        wt, b = net.weight(o, k, k, c // group), net.weight(o, scale=0.5)
        out = net.op(OP.OH_NN_OPS_CONV2D, [x, wt, b], (n, oh, ow, o), OH_NN_CONV2D_STRIDES=[stride, stride],
                     OH_NN_CONV2D_PAD=list(pads), OH_NN_CONV2D_DILATION=[dilation, dilation],
                     OH_NN_CONV2D_GROUP=group, OH_NN_CONV2D_ACTIVATION_TYPE=activation)
    return out, (oh, ow, o)


# runner kinds of a convolution: a drawing of its parameters that makes the rules pick that path
def draw_conv(kind, rng):
    r = lambda lo, hi: int(rng.integers(lo, hi + 1))  # noqa: E731
    pads = tuple(r(0, 2) for _ in range(4))
    if kind == "1x1-tiles":
        return dict(h=r(3, 15), w=r(3, 15), c=r(1, 48), o=r(1, 40), k=1, stride=r(1, 2), group=1)
    if kind == "1x1-grouped":
        g = int(rng.choice([2, 4]))
        return dict(h=r(3, 12), w=r(3, 12), c=g * r(1, 12), o=g * r(1, 10), k=1, stride=r(1, 2), group=g)
    if kind == "1x1-blas":
        return dict(h=r(4, 10), w=r(4, 10), c=r(300, 400), o=r(200, 260), k=1)
    if kind == "direct":
        return dict(h=r(14, 24), w=r(14, 30), c=r(3, 24), o=r(16, 48), k=3, stride=r(1, 2), pads=pads)
    if kind == "winograd":
        return dict(h=r(6, 14), w=r(6, 14), c=r(64, 80), o=r(64, 96), k=3, pads=pads)
    if kind == "kn2row":
        return dict(h=r(8, 16), w=r(8, 16), c=r(96, 130), o=r(8, 32), k=int(rng.choice([3, 5])),
                    pads=tuple(min(p, 1) for p in pads))
    if kind == "im2col":
        return dict(h=r(7, 15), w=r(7, 15), c=r(1, 12), o=r(1, 20), k=int(rng.choice([2, 3, 5])), stride=r(1, 3),
                    dilation=r(1, 2), pads=pads)
    if kind == "grouped":
        g = int(rng.choice([2, 3]))
        return dict(h=r(5, 12), w=r(5, 12), c=g * r(1, 6), o=g * r(1, 6), k=3, stride=r(1, 2), group=g, pads=pads)
    if kind == "depthwise-3x3":
        return dict(h=r(3, 16), w=r(3, 16), c=r(1, 40), o=0, k=3, stride=r(1, 2), dilation=r(1, 2), pads=pads,
                    depthwise=True)
    if kind == "depthwise":
        return dict(h=r(5, 14), w=r(5, 14), c=r(1, 20), o=0, k=int(rng.choice([2, 5])), stride=r(1, 2),
                    dilation=r(1, 2), pads=pads, depthwise=True, multiplier=int(rng.choice([1, 2])))
    raise KeyError(kind)


CONV_KINDS = ["1x1-tiles", "1x1-grouped", "1x1-blas", "direct", "winograd", "kn2row", "im2col", "grouped",
              "depthwise-3x3", "depthwise"]


def _special_values(x, rng):
    """NaN, +-inf and -0.0 at random places of ``x`` (in place)."""
    flat = x.reshape(-1)
    places = rng.choice(flat.size, size=min(flat.size, 4), replace=False)
    flat[places] = np.array([np.nan, np.inf, -np.inf, -0.0], F32)[: len(places)]
    flat[rng.random(flat.size) < 0.05] = -0.0


def conv_feeds(dims, rng, op, batches):
    feeds = []
    for n in batches:
        x = rng.standard_normal((n,) + tuple(dims[1:])).astype(F32)
        if tolerance(op) == EXACT:
            _special_values(x, rng)
        feeds.append([x])
    return feeds


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic-batch"])
@pytest.mark.parametrize("kind", CONV_KINDS)
def test_convolution_runners_keep_the_contract(kind, dynamic, rng):
    for _ in range(3):
        p = draw_conv(kind, rng)
        p.setdefault("stride", 1)
        p.setdefault("dilation", 1)
        p.setdefault("pads", (0, 0, 0, 0))
        ek = (p["k"] - 1) * p["dilation"] + 1
        if min(p["h"] + p["pads"][0] + p["pads"][1], p["w"] + p["pads"][2] + p["pads"][3]) < ek:
            continue
        net = Net(rng)
        n = -1 if dynamic else 1
        x = net.input((n, p["h"], p["w"], p["c"]))
        out, _ = add_conv(net, x, n, p["h"], p["w"], p["c"], p["o"], p["k"], stride=p["stride"],
                          dilation=p["dilation"], pads=p["pads"], group=p.get("group", 1),
                          activation=int(rng.integers(0, 3)), depthwise=p.get("depthwise", False),
                          multiplier=p.get("multiplier", 1))
        model = net.finish([out])
        op = loosest(model)
        assert_contract(model, conv_feeds((n, p["h"], p["w"], p["c"]), rng, op, (1, 2, 3) if dynamic else (1,)))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic-batch"])
@pytest.mark.parametrize("pool", ["MAX_POOL", "AVG_POOL"])
def test_pooling_keeps_the_contract(pool, dynamic, rng):
    for _ in range(6):
        k, s = int(rng.choice([2, 3, 4])), int(rng.integers(1, 4))
        h, w, c = int(rng.integers(k, 14)), int(rng.integers(k, 14)), int(rng.integers(1, 40))
        pads = [int(rng.integers(0, k)) for _ in range(4)]
        round_mode = int(rng.integers(0, 2))
        oh = -(-(h + pads[0] + pads[1] - k) // s) + 1 if round_mode else (h + pads[0] + pads[1] - k) // s + 1
        ow = -(-(w + pads[2] + pads[3] - k) // s) + 1 if round_mode else (w + pads[2] + pads[3] - k) // s + 1
        net = Net(rng)
        n = -1 if dynamic else 2
        x = net.input((n, h, w, c))
        out = net.op(getattr(OP, f"OH_NN_OPS_{pool}"), [x], (n, oh, ow, c),
                     **{f"OH_NN_{pool}_KERNEL_SIZE": [k, k], f"OH_NN_{pool}_STRIDE": [s, s],
                        f"OH_NN_{pool}_PAD": pads, f"OH_NN_{pool}_ROUND_MODE": round_mode})
        try:
            model = net.finish([out])
        except NNRtError:
            continue  # a geometry the op's validation refuses (ceil mode past the pads)
        feeds = conv_feeds((n, h, w, c), rng, pool, (1, 2, 3) if dynamic else (2,))
        if pool == "MAX_POOL":
            for (x,) in feeds:
                _nan_windows(x, k, rng)
        assert_contract(model, feeds)


def _nan_windows(x, k, rng):
    """NaN in a sixth of ``x``'s cells, in its first cell (every window's first cell in the first row and column
    of windows, padded or not) and in a k x k block (a window of NaN only): max pooling's NaN rule
    (``kernels.pool``) at work in windows of every kind (in place)."""
    x[rng.random(x.shape) < 1 / 6] = np.nan
    x[:, 0, 0] = np.nan
    top, left = int(rng.integers(0, x.shape[1] - k + 1)), int(rng.integers(0, x.shape[2] - k + 1))
    x[:, top:top + k, left:left + k] = np.nan


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic-batch"])
def test_softmax_and_layer_norm_rows_keep_the_contract(dynamic, rng):
    for length in (1, 7, 16, 33, 129, 256, 300):
        net = Net(rng)
        n = -1 if dynamic else 3
        x = net.input((n, 5, length))
        soft = net.op(OP.OH_NN_OPS_SOFTMAX, [x], (n, 5, length), OH_NN_SOFTMAX_AXIS=[-1])
        normed = net.op(OP.OH_NN_OPS_LAYER_NORM, [x, net.weight(length, scale=1), net.weight(length, scale=1)],
                        (n, 5, length), OH_NN_LAYER_NORM_BEGIN_NORM_AXIS=2, OH_NN_LAYER_NORM_BEGIN_PARAM_AXIS=2,
                        OH_NN_LAYER_NORM_EPSILON=1e-5)
        model = net.finish([soft, normed])
        feeds = [[(rng.standard_normal((b, 5, length)) * 3).astype(F32)] for b in ((1, 2, 3) if dynamic else (3,))]
        feeds[0][0][0, 1, 0] = np.nan
        assert_contract(model, feeds)


def test_erf_gelu_fusion_keeps_the_contract(rng):
    # DIV, ERF, ADD, MUL (by x), MUL: fused into one step; exact, NaN, inf and -0.0 included
    for dynamic in (False, True):
        net = Net(rng)
        dims = (-1 if dynamic else 2, 7, 33)
        x = net.input(dims)
        d = net.op(OP.OH_NN_OPS_DIV, [x, net.const(np.array([1.4142135], F32))], dims)
        e = net.op(OP.OH_NN_OPS_ERF, [d], dims)
        a = net.op(OP.OH_NN_OPS_ADD, [e, net.const(np.array([1.0], F32))], dims)
        m = net.op(OP.OH_NN_OPS_MUL, [x, a], dims)
        y = net.op(OP.OH_NN_OPS_MUL, [m, net.const(np.array([0.5], F32))], dims)
        model = net.finish([y])
        feeds = [[(rng.standard_normal((b, 7, 33)) * 3).astype(F32)] for b in ((1, 2, 3) if dynamic else (2,))]
        for f in feeds:
            _special_values(f[0], rng)
        fast = assert_contract(model, feeds)
        if not dynamic:
            assert len(fast.prepared.steps) == 1
            assert fast.prepared.hidden_by(e) is not None and fast.prepared.hidden_by(y) is None


def test_lstm_step_loop_keeps_the_contract(rng):
    for directions, layers in ((1, 1), (2, 1), (1, 2), (2, 2)):
        steps, batch, features, hidden = 5, 3, 7, 9
        features = directions * hidden if layers > 1 else features
        net = Net(rng)
        x = net.input((steps, batch, features))
        stack = directions * layers
        w_ih, w_hh = net.weight(stack, 4 * hidden, features), net.weight(stack, 4 * hidden, hidden)
        bias, hx, cx = net.weight(stack, 8 * hidden, scale=0.3), net.input((stack, batch, hidden)), \
            net.input((stack, batch, hidden))
        outs = [net.m.add_tensor(TensorDesc(DT.OH_NN_FLOAT32, dims)) for dims in
                ([steps, batch, directions * hidden], [stack, batch, hidden], [stack, batch, hidden])]
        params = {"OH_NN_LSTM_BIDIRECTIONAL": directions == 2, "OH_NN_LSTM_HAS_BIAS": True,
                  "OH_NN_LSTM_INPUT_SIZE": features, "OH_NN_LSTM_HIDDEN_SIZE": hidden,
                  "OH_NN_LSTM_NUM_LAYERS": layers}
        net.m.add_operation(OP.OH_NN_OPS_LSTM, [net.m.add_param(TT[k], v) for k, v in params.items()],
                            [x, w_ih, w_hh, bias, hx, cx], outs)
        model = net.finish(outs)
        feeds = [[rng.standard_normal(s).astype(F32) for s in
                  ((steps, batch, features), (stack, batch, hidden), (stack, batch, hidden))]]
        assert_contract(model, feeds)


def test_channel_shuffle_transpose_keeps_the_contract(rng):
    for groups, dtype in ((2, DT.OH_NN_FLOAT32), (4, DT.OH_NN_FLOAT32), (3, DT.OH_NN_FLOAT32), (4, DT.OH_NN_INT32)):
        c = groups * int(rng.integers(1, 9))
        net = Net(rng)
        x = net.m.add_tensor(TensorDesc(dtype, [-1, 5, groups, c // groups]))
        net.inputs.append(x)
        y = net.op(OP.OH_NN_OPS_TRANSPOSE, [x, net.const(np.array([0, 1, 3, 2], np.int32))],
                   (-1, 5, c // groups, groups), dtype=dtype)
        model = net.finish([y])
        np_dtype = np.float32 if dtype == DT.OH_NN_FLOAT32 else np.int32
        assert_contract(model, [[(rng.standard_normal((b, 5, groups, c // groups)) * 9).astype(np_dtype)]
                                for b in (1, 2, 3)])


# -- fusions, with the aliasing they must respect -------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["im2col", "1x1-tiles", "1x1-blas", "winograd", "kn2row", "direct", "depthwise-3x3"])
def test_post_op_and_residual_fusions_keep_the_contract(kind, rng):
    """conv -> MUL by a per-channel constant -> ADD of a residual (RELU6) -> y, where the residual is (1) a model
    input that a third operation also reads, (2) the convolution's own input, (3) a tensor made before the
    convolution that another operation reads after it, (4) one read by an operation between the convolution and
    the ADD (the fused step runs where the convolution was); and y is also read by another operation."""
    p = draw_conv(kind, rng)
    p.setdefault("pads", (0, 0, 0, 0))
    k = p["k"]
    pads = (k // 2, k // 2, k // 2, k // 2) if k % 2 else (0, k - 1, 0, k - 1)  # "same" size: residual shapes agree
    h, w, c = p["h"], p["w"], p["c"]
    o = c if p.get("depthwise") else p["o"]
    for variant in ("input-read-twice", "own-input", "made-before", "read-in-between"):
        net = Net(rng)
        x = net.input((1, h, w, c))
        source = x
        if variant == "made-before":
            source = net.op(OP.OH_NN_OPS_MUL, [x, net.const(np.array([0.5], F32))], (1, h, w, c))
        if variant == "read-in-between":
            residual = net.op(OP.OH_NN_OPS_MUL, [x, net.const(np.array([0.25], F32))], (1, h, w, c)) if o == c \
                else net.input((1, h, w, o))
            conv, _ = add_conv(net, x, 1, h, w, c, o, k, pads=pads, depthwise=p.get("depthwise", False))
            between = net.op(OP.OH_NN_OPS_RELU, [residual], (1, h, w, o))  # after the conv, before its ADD
        else:
            conv, _ = add_conv(net, source, 1, h, w, c, o, k, pads=pads, depthwise=p.get("depthwise", False))
        scaled = net.op(OP.OH_NN_OPS_MUL, [conv, net.weight(o, scale=1)], (1, h, w, o))
        if variant == "own-input" and o == c:
            residual = source
        elif variant != "read-in-between":
            residual = net.input((1, h, w, o)) if variant == "input-read-twice" else \
                net.op(OP.OH_NN_OPS_MUL, [source, net.weight(c, scale=1)], (1, h, w, c)) if o == c else \
                net.input((1, h, w, o))
        y = net.op(OP.OH_NN_OPS_ADD, [scaled, residual], (1, h, w, o), OH_NN_ADD_ACTIVATIONTYPE=2)
        if variant == "read-in-between":
            model = net.finish([y, between])
        else:
            other = net.op(OP.OH_NN_OPS_ADD, [y, residual], (1, h, w, o))  # y (an output), the residual read again
            model = net.finish([y, other])
        feeds = [[rng.standard_normal(net.m.tensors[t].dims).astype(F32) for t in net.inputs]]
        fast = assert_contract(model, feeds)
        fused = [s for s in fast.prepared.steps if len(s.group) > 1]
        assert fused, f"{kind}/{variant}: nothing fused"
        assert fast.prepared.hidden_by(conv) is not None


def test_batch_norm_fusion_keeps_the_contract(rng):
    c = int(rng.integers(3, 40))
    net = Net(rng)
    x = net.input((-1, 6, 7, c))
    bn = net.op(OP.OH_NN_OPS_BATCH_NORM, [x, net.weight(c, scale=1), net.weight(c, scale=1), net.weight(c, scale=1),
                                          net.const(rng.uniform(0.5, 2, c).astype(F32))], (-1, 6, 7, c),
                OH_NN_BATCH_NORM_EPSILON=np.float32(1e-3))
    y = net.op(OP.OH_NN_OPS_ADD, [net.op(OP.OH_NN_OPS_MUL, [bn, net.weight(c, scale=1)], (-1, 6, 7, c)),
                                  net.weight(c, scale=1)], (-1, 6, 7, c), OH_NN_ADD_ACTIVATIONTYPE=1)
    model = net.finish([y])
    feeds = [[rng.standard_normal((b, 6, 7, c)).astype(F32)] for b in (1, 2, 3)]
    for f in feeds:
        _special_values(f[0], rng)
    assert_contract(model, feeds)


def test_linear_layer_fusion_keeps_the_contract(rng):
    """MATMUL by a constant matrix -> ADD bias -> MUL by per-column scale -> ADD of a residual (RELU), rows both
    under and over the register tiles' bound; the residual a model input also read by another operation."""
    for rows, k, n in ((8, 16, 32), (64, 40, 24), (300, 64, 48), (7, 3, 5)):
        net = Net(rng)
        x, r = net.input((1, rows, k)), net.input((1, rows, n))
        product = net.op(OP.OH_NN_OPS_MATMUL, [x, net.weight(k, n)], (1, rows, n))
        biased = net.op(OP.OH_NN_OPS_ADD, [product, net.weight(n, scale=1)], (1, rows, n))
        scaled = net.op(OP.OH_NN_OPS_MUL, [biased, net.weight(n, scale=1)], (1, rows, n))
        y = net.op(OP.OH_NN_OPS_ADD, [scaled, r], (1, rows, n), OH_NN_ADD_ACTIVATIONTYPE=1)
        other = net.op(OP.OH_NN_OPS_MUL, [r, r], (1, rows, n))
        model = net.finish([y, other])
        feeds = [[rng.standard_normal((1, rows, k)).astype(F32), rng.standard_normal((1, rows, n)).astype(F32)]]
        fast = assert_contract(model, feeds)
        assert fast.prepared.hidden_by(product) is not None


def test_input_transpose_fusion_keeps_the_contract(rng):
    for k, c, o, size in ((3, 3, 16, 20), (3, 1, 8, 17), (1, 4, 8, 9), (3, 16, 32, 14)):
        net = Net(rng)
        x = net.input((1, c, size, size))
        nhwc = net.op(OP.OH_NN_OPS_TRANSPOSE, [x, net.const(np.array([0, 2, 3, 1], np.int32))], (1, size, size, c))
        out, _ = add_conv(net, nhwc, 1, size, size, c, o, k, pads=(k // 2,) * 4, activation=1)
        model = net.finish([out])
        fast = assert_contract(model, [[rng.standard_normal((1, c, size, size)).astype(F32)]])
        assert fast.prepared.hidden_by(nhwc) is not None


def test_concatenation_assembly_keeps_the_contract(rng):
    for _ in range(3):
        h, w, c = int(rng.integers(5, 12)), int(rng.integers(5, 12)), int(rng.integers(4, 64))
        net = Net(rng)
        x = net.input((1, h, w, c))
        branches = [add_conv(net, x, 1, h, w, c, int(rng.integers(8, 64)), k, pads=(k // 2,) * 4)
                    for k in (1, 3)]
        branches.append(add_conv(net, x, 1, h, w, c, 0, 3, pads=(1, 1, 1, 1), depthwise=True))
        total = sum(shape[2] for _, shape in branches) + c
        y = net.op(OP.OH_NN_OPS_CONCAT, [t for t, _ in branches] + [x], (1, h, w, total), OH_NN_CONCAT_AXIS=3)
        model = net.finish([net.op(OP.OH_NN_OPS_RELU, [y], (1, h, w, total))])
        fast = assert_contract(model, [[rng.standard_normal((1, h, w, c)).astype(F32)]])
        assert sum(s.out_view is not None for s in fast.prepared.steps) >= 2


def test_the_contract_table_names_ops_that_exist():
    assert all(hasattr(OP, f"OH_NN_OPS_{name}") for name in CONTRACT)


def test_disagreement_catches_what_the_contract_forbids():
    # the check itself can fail: one ulp on an EXACT op, NaN moved, a value past a tolerance
    a = np.array([1.0, 2.0, np.nan, np.inf, -0.0], F32)
    assert disagreement("MAX_POOL", a, a.copy()) is None
    assert disagreement("MAX_POOL", a, np.where(np.isnan(a), a, a)) is None
    b = a.copy()
    b[0] = np.nextafter(F32(1), F32(2))
    assert disagreement("MAX_POOL", b, a) is not None
    assert disagreement("CONV2D", b, a) is None  # within Winograd's tolerance
    c = a.copy()
    c[2] = 0.0
    assert disagreement("CONV2D", c, a) is not None
    d = a.copy()
    d[0] = 1.01
    assert disagreement("CONV2D", d, a) is not None
