"""The reference kernels: one plain numpy/BLAS function per NNRt operation, registered with ``@kernel`` -- what the
op computes, on every valid shape (dynamic dims, size-1 dims, any strides). Nothing here is compiled and nothing
is only for speed: the fast paths are ``nnrt_onnx.accel``, which this package never imports.

A kernel takes the op's input arrays positionally (in the header's order) and its parameters as
keyword-only arguments named exactly like the ``to`` keywords of the op's entry in ``mappings/ops/``;
the executor fills every keyword from the entry's ``[defaults]`` when the model omits the parameter.
The fused activation keyword (``params.fuse`` in the entry) is *not* passed: the executor applies it, unless the
kernel declares a keyword ``activation`` (see :func:`applies_activation`).
A kernel that declares a keyword-only ``ctx`` also receives an :class:`OpContext`; one that declares ``out``
(default None) may be handed a preallocated array for its first output (see :func:`accepts_out`).
It returns one array, or a tuple of arrays for multi-output ops.

An op may also have a *specialiser* (``@specialiser``, registered by the fast paths, ``nnrt_onnx.accel``): given
what an execution plan knows of one step before any run (its inputs' static shapes, dtypes and constant values,
its keywords), it returns a runner called like the kernel that gives what the kernel gives (within
``accel.contract``), or None (see :func:`specialiser`). This package holds the registry, the seam between the two.

Next to each kernel, a *shape rule* registered with ``@shape_rule`` gives the kernel's output shapes from shapes
alone (see :func:`infer_output_shapes`): it is called as ``rule(op, input_shapes, input_values, **arguments)`` with the
kernel's keywords (minus ``ctx``), and returns one shape per output. Where a kernel computes an output size itself
(window geometry, slicing, reshaping, broadcasting), kernel and rule call the same helper, so they cannot drift
apart. A rule shared by several ops (all same-shape unary ops, all broadcasting binary ops) is registered for
each of them at once.

Each kernel lives in the module of its op's family (``<family>.py``, see ``optable.FAMILIES``); private helpers
shared by several families are in ``_common.py``. :func:`kernels` imports every module of this package.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np

from ..enums import OH_NN_OperationType
from ..errors import unsupported
from ..optable import op_spec
from ._common import (
    Shape,  # one int per dim, -1 where the dim is not known (None where even the rank is not)
    _packed,
    _register_constant,
)

_REGISTRY: dict[OH_NN_OperationType, Callable[..., Any]] = {}
_SHAPE_RULES: dict[OH_NN_OperationType, Callable[..., Any]] = {}
_SPECIALISERS: dict[OH_NN_OperationType, Callable[..., Any]] = {}


def kernel(op_name: str, *, shape: Callable[..., Any] | None = None):
    """Register the decorated function as the kernel of ``op_name`` (e.g. ``"OH_NN_OPS_CONV2D"``); ``shape``, a
    shape rule shared by many ops (the input's shape, the broadcast of two inputs), registers it for this op too --
    so such an op is declared once, at its kernel. An op with its own geometry gets its own ``@shape_rule``."""
    op = OH_NN_OperationType[op_name]

    def register(fn):
        if op in _REGISTRY and _REGISTRY[op] is not fn:
            raise RuntimeError(f"{op_name} already has kernel {_REGISTRY[op].__module__}.{_REGISTRY[op].__name__}")
        _REGISTRY[op] = fn
        if shape is not None:
            shape_rule(op_name)(shape)
        return fn

    return register


class Planned(NamedTuple):
    """What an execution plan knows of a step's input before any run."""

    shape: tuple[int, ...] | None  # static dims (None where any is unknown)
    dtype: np.dtype | None  # the dtype the kernel receives (the compute dtype; a dequantized input: float)
    value: np.ndarray | None  # a constant's (read-only, registered) array, else None


def specialiser(*op_names: str):
    """Register the decorated function as the specialiser of every op in ``op_names``: called once per plan step
    as ``fn(op, general, inputs, arguments, addends)`` -- the op's short name, the step's kernel with its keywords
    bound (``general(*inputs, out=...)``: the reference kernel, or a fused step's accelerated kernel), a
    :class:`Planned` per input, the step's keywords (a fused step's too: its ``post`` entries ("addend", k) name
    the k-th of the ``addends`` trailing inputs, residuals of fused ADDs), under the plan's BLAS thread count --
    it returns a runner called like ``general`` (``general`` itself, or None: the step keeps its kernel). A runner
    must give what ``general`` gives within ``accel.contract``."""
    ops = [OH_NN_OperationType[name] for name in op_names]

    def register(fn):
        for op in ops:
            _SPECIALISERS[op] = fn
        return fn

    return register


def get_specialiser(op: OH_NN_OperationType) -> Callable[..., Any] | None:
    """The specialiser of ``op``'s kernel, or None -- also where the kernel table now holds another kernel for
    ``op`` than the one registered with ``@kernel`` (a test's patched kernel runs as itself)."""
    op = OH_NN_OperationType(op)
    if kernels().get(op) is not _REGISTRY.get(op):
        return None
    return _SPECIALISERS.get(op)


def registered_kernel(op: OH_NN_OperationType) -> Callable[..., Any] | None:
    """The kernel registered for ``op`` with ``@kernel`` (whatever the kernel table holds now): a plan's fusions
    replace only this kernel by their fused one (a test's patched kernel runs as itself)."""
    kernels()
    return _REGISTRY.get(OH_NN_OperationType(op))


@dataclass(frozen=True)
class OpContext:
    """What a kernel may need beyond its inputs: the declared operands of its node."""

    op: OH_NN_OperationType
    input_dtypes: tuple[np.dtype, ...]  # declared (storage) dtypes of the inputs
    output_dtypes: tuple[np.dtype, ...]  # declared dtypes of the outputs (float16 under EnableFloat16)
    output_shapes: tuple[tuple[int, ...], ...]  # declared dims, -1 where dynamic
    input_quant: tuple[Any, ...]  # QuantParam or None per input
    output_quant: tuple[Any, ...]  # QuantParam or None per output


@cache
def kernels() -> dict[OH_NN_OperationType, Callable[..., Any]]:
    """Import every module of this package once and return the registry."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return dict(_REGISTRY)


def get_kernel(op: OH_NN_OperationType) -> Callable[..., Any] | None:
    return kernels().get(OH_NN_OperationType(op))


def shape_rule(*op_names: str):
    """Register the decorated function as the shape rule of every op in ``op_names``.

    A rule is called as ``rule(op, input_shapes, input_values, **arguments)``: the op's short name (``"ADD"``, for
    the messages a rule shared by several ops raises), a tuple with one shape per input (-1 for an unknown dim,
    None for an unknown rank), a tuple with the value (ndarray) of each input known before run time or None, and
    the kernel's keyword arguments without ``ctx`` (the fused activation keyword included: rules take ``**_`` for
    the keywords they do not read). A rule of an op whose output count is not fixed by its
    inputs may declare a keyword ``output_count`` (the node's number of outputs, or None). It returns a sequence
    with one shape (or None) per output and raises the kernel's NNRtError for inconsistent shapes it can see.
    """
    ops = [OH_NN_OperationType[name] for name in op_names]

    def register(fn):
        for op in ops:
            if op in _SHAPE_RULES and _SHAPE_RULES[op] is not fn:
                raise RuntimeError(f"{op.name} already has shape rule {_SHAPE_RULES[op].__module__}."
                                   f"{_SHAPE_RULES[op].__name__}")
            _SHAPE_RULES[op] = fn
        return fn

    return register


@cache
def shape_rules() -> dict[OH_NN_OperationType, Callable[..., Any]]:
    """Every registered shape rule by op (importing every kernel module first, once)."""
    kernels()
    return dict(_SHAPE_RULES)


@cache
def _takes_output_count(rule: Callable[..., Any]) -> bool:
    return "output_count" in inspect.signature(rule).parameters


def _shape_of(shape: Sequence[int] | None, value: Any) -> Shape | None:
    if value is not None:
        return tuple(int(d) for d in np.shape(value))
    return None if shape is None else tuple(int(d) for d in shape)


def infer_output_shapes(op: OH_NN_OperationType | int, input_shapes: Sequence[Sequence[int] | None],
                        input_values: Sequence[Any] | None = None, arguments: Mapping[str, Any] | None = None, *,
                        output_count: int | None = None) -> tuple[Shape | None, ...]:
    """The output shapes the kernel of ``op`` produces for inputs of ``input_shapes``.

    ``input_values``: per input, its value when known before run time (a constant), else None; a given value also
    fixes that input's shape. ``arguments``: the kernel's keywords (the op table defaults are filled in for any
    that is missing; ``ctx`` is ignored). ``output_count``: the node's number of outputs, which SPLIT needs when
    neither outputNum nor sizeSplits is given. Each output's shape has -1 where it depends on something unknown,
    or is None when even its rank does. Inconsistent shapes raise the kernel's NNRtError.
    """
    op = OH_NN_OperationType(op)
    rule = shape_rules().get(op)
    if rule is None:
        raise unsupported(f"{op.name} has no shape rule")
    values = list(input_values) if input_values is not None else []
    values += [None] * (len(input_shapes) - len(values))
    shapes = tuple(_shape_of(s, v) for s, v in zip(input_shapes, values))
    keywords = {**op_spec(op).defaults, **(arguments or {})}
    keywords.pop("ctx", None)
    if _takes_output_count(rule):
        keywords["output_count"] = output_count
    result = rule(op.name[len("OH_NN_OPS_"):], shapes, tuple(values), **keywords)
    return tuple(None if s is None else tuple(int(d) for d in s) for s in result)


@cache
def wants_context(fn: Callable[..., Any]) -> bool:
    return "ctx" in inspect.signature(fn).parameters


def register_constant(array: np.ndarray) -> None:
    """Declare a read-only array a constant of a compiled model: kernels may then cache pre-packed forms of it
    (a transposed contiguous weight matrix, a cast) for as long as it lives, instead of re-laying it out on every
    call. The native engine registers every constant of the models it compiles."""
    _register_constant(array)


def packed(array: np.ndarray, key: Any, make: Callable[[np.ndarray], Any]) -> Any:
    """``make(array)`` -- a re-laid-out form of a weight: transposed, cast, padded -- made once per constant
    registered with :func:`register_constant` and ``key``, and cached while the constant lives; computed afresh for
    any other array."""
    return _packed(array, key, make)


@cache
def applies_activation(fn: Callable[..., Any]) -> bool:
    """The kernel takes a keyword ``activation`` (an OH_NN_FuseType: 0 none, 1 RELU, 2 RELU6) and applies the
    op's fused activation itself; the engine passes it the op's fuse parameter instead of applying it after."""
    return "activation" in inspect.signature(fn).parameters


@cache
def accepts_out(fn: Callable[..., Any]) -> bool:
    """The kernel takes a keyword ``out``: None, or an array of its first output's shape and compute dtype that it
    fills and returns (the native engine's memory planning passes one; every other caller leaves it None)."""
    return "out" in inspect.signature(fn).parameters
