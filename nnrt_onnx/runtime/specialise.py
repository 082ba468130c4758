"""Plan steps bound to runners: once the plan is final (fusions, assembled concatenations, arena slots), each
plain step whose kernel has a specialiser (``kernels.specialiser``) is offered what the plan knows before any run
-- its inputs' static shapes, compute dtypes and constant values, its keywords -- and runs through the runner it
returns instead of the general kernel: the compiled call alone, without re-deriving the kernel's path, checks and
tables in every run (docs/performance.md, eighth round). The specialisers see the plan's BLAS thread count, as
the kernels do in its runs."""
from __future__ import annotations

import functools

from ..kernels import Planned, get_specialiser
from .threads import blas_threads


def specialise_steps(prepared, steps) -> None:
    """Give each plain step of ``steps`` (of the plan ``prepared``) its kernel's runner where there is one."""
    with blas_threads(prepared.threads):
        for step in steps:
            if not step.plain or step.ufunc is not None or not step.accepts_out:
                continue
            specialise = get_specialiser(step.op)
            if specialise is None:
                continue
            inputs = [Planned(prepared.static[i], prepared.compute_dtype[i], prepared.constants.get(i))
                      for i in step.inputs]
            runner = specialise(step.op.name[len("OH_NN_OPS_"):], functools.partial(step.fn, **step.kwargs),
                                inputs, step.kwargs, step.addends)
            if runner is not None:
                step.fn, step.kwargs = runner, {}


__all__ = ["specialise_steps"]
