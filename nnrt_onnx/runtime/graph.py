"""Checks NNRt leaves undone at build time (and would crash or misbehave on), and a topological order."""
from __future__ import annotations

import heapq

from ..enums import OH_NN_ReturnCode
from ..errors import NNRtError


def _fail(message: str) -> NNRtError:
    return NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER, message)


def execution_order(model) -> list[int]:
    """Operation indices in an order where every input is ready before use.

    Rejects: a tensor used both as a parameter and as an operand or model IO, a tensor written by two
    operations, a model input or constant overwritten by an operation, a tensor consumed but never
    produced, a model output nothing produces, and cycles.
    """
    operations = model.operations
    params = {t: i for i, operation in enumerate(operations) for t in operation.params}
    operand_use = [(t, f"operation #{i} {operation.op.name}") for i, operation in enumerate(operations)
                   for t in operation.inputs + operation.outputs]
    operand_use += [(t, "model input") for t in model.inputs] + [(t, "model output") for t in model.outputs]
    for tensor, user in operand_use:
        if tensor in params:
            raise _fail(f"tensor {tensor} is a parameter of operation #{params[tensor]} and also an operand of {user}")

    producer: dict[int, int] = {}
    for i, operation in enumerate(operations):
        for t in operation.outputs:
            if t in producer:
                raise _fail(f"tensor {t} is written by operation #{producer[t]} and operation #{i}")
            if t in model.inputs:
                raise _fail(f"model input tensor {t} is overwritten by operation #{i} {operation.op.name}")
            if model.tensors[t].data is not None:
                raise _fail(f"constant tensor {t} is overwritten by operation #{i} {operation.op.name}")
            producer[t] = i

    available = set(model.inputs) | {i for i, t in enumerate(model.tensors) if t.data is not None}
    for i, operation in enumerate(operations):
        for t in operation.inputs:
            if t not in available and t not in producer:
                raise _fail(f"operation #{i} {operation.op.name} reads tensor {t}, which is neither a model input, "
                            f"a constant, nor produced by any operation")
    for t in model.outputs:
        if t not in available and t not in producer:
            raise _fail(f"model output tensor {t} is not produced by any operation")

    waiting = {i: {t for t in operation.inputs if t not in available} for i, operation in enumerate(operations)}
    consumers: dict[int, list[int]] = {}
    for i, needs in waiting.items():
        for t in needs:
            consumers.setdefault(t, []).append(i)
    ready = [i for i, needs in waiting.items() if not needs]  # a heap: insertion order among ready ops
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for t in operations[i].outputs:
            for consumer in consumers.get(t, ()):
                waiting[consumer].discard(t)
                if not waiting[consumer]:
                    heapq.heappush(ready, consumer)
    if len(order) != len(operations):
        stuck = sorted(set(range(len(operations))) - set(order))
        names = ", ".join(f"#{i} {operations[i].op.name}" for i in stuck[:5])
        raise _fail(f"the operations form a cycle: {names} wait on each other's outputs")
    return order
