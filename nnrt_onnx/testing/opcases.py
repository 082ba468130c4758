"""Op test cases declared in the op table (``[[cases]]`` of an entry): one-op models with seeded inputs.

    [[cases]]
    id = "padlist-relu6"                                   # test id: <op>-<id>
    inputs = [{shape = [1, 5, 5, 3]},                       # float32 random normal unless dtype/low/high/values
              {shape = [4, 3, 3, 3], constant = true},      # baked into the model as a constant
              {values = [1, 2], dtype = "int64", constant = true}]
    params = { OH_NN_CONV2D_PAD = [1, 1, 1, 1], OH_NN_CONV2D_ACTIVATION_TYPE = 2 }
    outputs = [{dtype = "int32"}]                          # optional: declared output dtypes (default: inferred)
    # quantized operands: {shape = [2, 3], dtype = "int8", quant = {scales = [0.05], zero_points = [3]}} on an input,
    # {dtype = "int8", quant = {...}} on an output (per-channel: several scales and an "axis")
    rtol = 1e-5                                            # optional tolerances (defaults per dtype below)
    atol = 1e-6

The export tests run every case natively and on onnxruntime after export, and round-trip it through ONNX.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..enums import OH_NN_OperationType
from ..optable import OpTableError, op_table

DEFAULT_TOLERANCE = {"float16": (1e-2, 1e-2), "float32": (1e-4, 1e-5), "float64": (1e-9, 1e-10)}


@dataclass
class OpCase:
    op: OH_NN_OperationType
    id: str
    inputs: list[dict[str, Any]]
    params: dict[str, Any]
    outputs: list[dict[str, Any]] = field(default_factory=list)
    rtol: float | None = None
    atol: float | None = None

    @property
    def name(self) -> str:
        return f"{self.op.name[10:].lower()}-{self.id}"

    def arrays(self) -> list[np.ndarray]:
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        arrays = []
        for spec in self.inputs:
            dtype = np.dtype(spec.get("dtype", "float32"))
            if "values" in spec:
                arrays.append(np.asarray(spec["values"], dtype).reshape(spec.get("shape", np.shape(spec["values"]))))
                continue
            shape = spec["shape"]
            low, high = spec.get("low"), spec.get("high")
            if dtype == np.bool_:
                arrays.append(rng.random(shape) < 0.5)
            elif np.issubdtype(dtype, np.integer):
                arrays.append(rng.integers(low if low is not None else -5, (high if high is not None else 5) + 1,
                                           size=shape).astype(dtype))
            elif low is not None or high is not None:
                arrays.append(rng.uniform(low if low is not None else -1, high if high is not None else 1, shape).astype(dtype))
            else:
                arrays.append(rng.standard_normal(shape).astype(dtype))
        return arrays

    @property
    def constant_positions(self) -> list[int]:
        return [i for i, spec in enumerate(self.inputs) if spec.get("constant")]

    def tolerance(self, dtype: np.dtype) -> tuple[float, float]:
        rtol, atol = DEFAULT_TOLERANCE.get(np.dtype(dtype).name, (0.0, 0.0))
        return (self.rtol if self.rtol is not None else rtol, self.atol if self.atol is not None else atol)

    @staticmethod
    def _quant(spec):
        from ..tensor import QuantParam

        q = spec.get("quant")
        if q is None:
            return None
        return QuantParam(q["scales"], q["zero_points"], [8] * len(q["scales"]), axis=q.get("axis"))

    def model(self):
        """A finished one-op model of this case, and the arrays its (non-constant) inputs take."""
        from .single_op import _dequantized, _infer_outputs, single_op_model

        arrays = self.arrays()
        input_quant = {i: q for i, spec in enumerate(self.inputs) if (q := self._quant(spec)) is not None}
        output_quant = {i: q for i, spec in enumerate(self.outputs) if (q := self._quant(spec)) is not None}
        dtypes = [np.dtype(o["dtype"]) for o in self.outputs] if self.outputs else None
        from ..optable import op_spec

        native = op_spec(self.op).quant == "native"  # the kernel reads the integers and their quant params itself
        probe = arrays if native else [_dequantized(a, input_quant.get(i)) for i, a in enumerate(arrays)]
        specs = _infer_outputs(self.op, probe, self.params, dtypes, input_quant, output_quant)
        model = single_op_model(self.op, arrays, self.params, specs, input_quant, output_quant, self.constant_positions)
        runtime = [a for i, a in enumerate(arrays) if i not in self.constant_positions] or arrays[:1]
        return model, runtime


def op_cases() -> list[OpCase]:
    cases = []
    for entry in op_table().values():
        seen = set()
        for table in entry.raw.get("cases", []):
            unknown = set(table) - {"id", "inputs", "params", "outputs", "rtol", "atol"}
            if unknown or "id" not in table or table["id"] in seen:
                raise OpTableError(f"{entry.file.name}: bad [[cases]] entry {table.get('id')!r} ({sorted(unknown)})")
            seen.add(table["id"])
            cases.append(OpCase(entry.op, table["id"], list(table.get("inputs", [])), dict(table.get("params", {})),
                                list(table.get("outputs", [])), table.get("rtol"), table.get("atol")))
    return cases
