"""OH_NNExecutor: set inputs/outputs (legacy buffers, shared memory, or NN_Tensors), run, read output shapes."""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from math import prod
from typing import Any, Callable, Mapping, MutableMapping, Sequence

import numpy as np

from .dtypes import element_size, to_numpy
from .enums import OH_NN_DataType, OH_NN_ReturnCode, OH_NN_TensorType
from .errors import NNRtError, forbidden, invalid
from .runtime.device import cannot_capture, get_device
from .tensor import Tensor, TensorDesc


@dataclass
class Memory:
    """OH_NN_Memory: a buffer shared with the device (host memory here)."""

    data: bytearray
    length: int
    released: bool = False


class Executor:
    """Runs a built :class:`~nnrt_onnx.compilation.Compilation`. Methods raise NNRtError.

    Threads: ``run_arrays``, ``run_sync`` and ``run_async`` take their inputs as arguments and may be called from
    any number of threads at once (runs are serialized; each gets its own results). The legacy sequence --
    ``set_input``/``set_output`` (or the shared-memory variants) then ``run`` -- keeps its buffers in the executor,
    so it belongs to one thread from its first call to the end of ``run``: a call from another thread meanwhile
    raises OH_NN_OPERATION_FORBIDDEN (it would otherwise overwrite that thread's inputs and return wrong results).
    """

    def __init__(self, compilation):
        if compilation is None or not compilation.built:
            raise forbidden("an executor needs a built compilation")
        self.compilation = compilation
        self.prepared = compilation.prepared
        self.model = self.prepared.model
        self._inputs: dict[int, np.ndarray] = {}
        self._output_buffers: dict[int, Any] = {}
        self._output_shapes: dict[int, tuple[int, ...]] = {}
        self._checked_inputs: set = set()  # input signatures (dtype and shape per input) that passed run_arrays' checks
        self._memories: dict[tuple[str, int], Memory] = {}
        self.on_run_done: Callable | None = None
        self.on_service_died: Callable | None = None
        self._lock = threading.Lock()
        self._owner: threading.Thread | None = None  # the thread between its first set_* and the end of its run()
        self._owner_lock = threading.Lock()

    # -- the legacy sequence belongs to one thread at a time -------------------------------------------------------
    def _claim(self, what: str) -> bool:
        """Make this thread the owner of the legacy sequence; whether it just became it."""
        me = threading.current_thread()
        with self._owner_lock:
            owner = self._owner
            if owner is me:
                return False
            if owner is not None and owner.is_alive():
                raise forbidden(f"{what}: thread {owner.name!r} is between set_input/set_output and run on this "
                                f"executor; the legacy calls are one thread's sequence at a time (give each thread "
                                f"its own executor, or use run_arrays/run_sync)")
            self._owner = me
            return True

    @contextlib.contextmanager
    def _step(self, what: str):
        """One call of the legacy sequence: claimed for this thread, and given back if the sequence's first call
        fails (a refused set_input does not lock the others out)."""
        new = self._claim(what)
        try:
            yield
        except BaseException:
            if new:
                self._release()
            raise

    def _release(self) -> None:
        with self._owner_lock:
            if self._owner is threading.current_thread():
                self._owner = None

    # -- description -----------------------------------------------------------------------------------------
    @property
    def input_count(self) -> int:
        return len(self.model.inputs)

    @property
    def output_count(self) -> int:
        return len(self.model.outputs)

    def _io(self, kind: str, index: int):
        indices = self.model.inputs if kind == "input" else self.model.outputs
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(indices):
            raise invalid(f"{kind} index {index} is out of range (the model has {len(indices)} {kind}s)")
        return self.model.tensors[indices[index]]

    def create_input_tensor_desc(self, index: int) -> TensorDesc:
        tensor = self._io("input", index)
        return TensorDesc(tensor.dtype, tensor.dims, tensor.format, tensor.name)

    def create_output_tensor_desc(self, index: int) -> TensorDesc:
        tensor = self._io("output", index)
        dims = self._output_shapes.get(index, tensor.dims)
        return TensorDesc(tensor.dtype, dims, tensor.format, tensor.name)

    def input_dim_range(self, index: int) -> tuple[list[int], list[int]]:
        self._io("input", index)
        return self.prepared.input_dim_ranges(index)

    def output_shape(self, index: int) -> list[int]:
        self._io("output", index)
        if index not in self._output_shapes:
            raise forbidden(f"output {index} has no shape yet: run the executor first")
        return list(self._output_shapes[index])

    # -- legacy (API 9) inputs and outputs -------------------------------------------------------------------
    def _check_input(self, index: int, data_type: int, dims: Sequence[int],
                     tensor_type: int = OH_NN_TensorType.OH_NN_TENSOR) -> tuple[OH_NN_DataType, tuple[int, ...]]:
        tensor = self._io("input", index)
        dims = tuple(int(d) for d in dims)
        if any(d < 0 for d in dims):
            raise invalid(f"input {index}: dims {list(dims)} must be concrete (no -1) at run time")
        if int(data_type) != tensor.dtype:
            raise invalid(f"input {index}: data type {data_type} does not match the model's {tensor.dtype.name}")
        if int(tensor_type) != OH_NN_TensorType.OH_NN_TENSOR:
            raise invalid(f"input {index}: tensor type must be OH_NN_TENSOR")
        if len(dims) != len(tensor.dims) or any(m not in (-1, d) for m, d in zip(tensor.dims, dims)):
            raise invalid(f"input {index}: dims {list(dims)} do not match the model's {list(tensor.dims)}")
        mins, maxs = self.prepared.input_dim_ranges(index)
        if any(not lo <= d <= hi for d, lo, hi in zip(dims, mins, maxs)):
            raise invalid(f"input {index}: dims {list(dims)} are outside the device's range {mins}..{maxs}")
        return tensor.dtype, dims

    def set_input(self, index: int, data, data_type: int | None = None, dims: Sequence[int] | None = None,
                  tensor_type: int = OH_NN_TensorType.OH_NN_TENSOR, length: int | None = None) -> None:
        """OH_NNExecutor_SetInput. ``data``: a numpy array (dtype/dims taken from it) or a bytes-like buffer."""
        with self._step(f"set_input({index})"):
            self._set_input(index, data, data_type, dims, tensor_type, length)

    def _set_input(self, index, data, data_type, dims, tensor_type, length) -> None:
        if data is None:
            raise invalid(f"input {index}: data buffer is NULL")
        if isinstance(data, np.ndarray):
            data_type = data_type if data_type is not None else self._io("input", index).dtype
            dims = dims if dims is not None else data.shape
            if data.dtype != to_numpy(data_type):
                raise invalid(f"input {index}: array dtype {data.dtype} does not match the model's "
                              f"{OH_NN_DataType(data_type).name}")
        if data_type is None or dims is None:
            raise invalid(f"input {index}: a raw buffer needs its data type and dims")
        dtype, dims = self._check_input(index, data_type, dims, tensor_type)
        raw = memoryview(np.ascontiguousarray(data) if isinstance(data, np.ndarray) else data).cast("B")
        length = raw.nbytes if length is None else int(length)
        needed = prod(dims) * element_size(dtype)
        if length < needed or raw.nbytes < needed:
            raise invalid(f"input {index}: {min(length, raw.nbytes)} bytes given, {needed} needed")
        self._inputs[index] = np.frombuffer(bytes(raw[:needed]), dtype=to_numpy(dtype)).reshape(dims)

    def set_output(self, index: int, buffer, length: int | None = None) -> None:
        """OH_NNExecutor_SetOutput: a writable buffer that run() fills."""
        with self._step(f"set_output({index})"):
            self._set_output(index, buffer, length)

    def _set_output(self, index: int, buffer, length: int | None) -> None:
        self._io("output", index)
        if buffer is None:
            raise invalid(f"output {index}: buffer is NULL")
        view = memoryview(buffer)
        if view.readonly:
            raise invalid(f"output {index}: buffer is read-only")
        length = view.nbytes if length is None else int(length)
        if length == 0 or length > view.nbytes:
            raise invalid(f"output {index}: length {length} does not describe the {view.nbytes}-byte buffer")
        self._output_buffers[index] = (view.cast("B"), length)

    def allocate_input_memory(self, index: int, length: int) -> Memory:
        return self._allocate("input", index, length)

    def allocate_output_memory(self, index: int, length: int) -> Memory:
        return self._allocate("output", index, length)

    def _allocate(self, kind: str, index: int, length: int) -> Memory:
        with self._step(f"allocate_{kind}_memory({index})"):
            return self._new_memory(kind, index, length)

    def _new_memory(self, kind: str, index: int, length: int) -> Memory:
        self._io(kind, index)
        if not isinstance(length, (int, np.integer)) or length <= 0:
            raise invalid(f"memory length {length!r} must be a positive byte count")
        memory = Memory(bytearray(int(length)), int(length))
        self._memories[(kind, index)] = memory
        return memory

    def destroy_memory(self, kind: str, index: int, memory: Memory) -> None:
        self._io(kind, index)
        if memory is None or self._memories.get((kind, index)) is not memory:
            raise invalid(f"this memory was not allocated for {kind} {index}")
        memory.released = True
        del self._memories[(kind, index)]

    def set_input_with_memory(self, index: int, data_type: int, dims: Sequence[int], memory: Memory,
                              tensor_type: int = OH_NN_TensorType.OH_NN_TENSOR) -> None:
        if memory is None or memory.released:
            raise invalid(f"input {index}: memory is NULL or released")
        self.set_input(index, memory.data, data_type, dims, tensor_type, memory.length)

    def set_output_with_memory(self, index: int, memory: Memory) -> None:
        if memory is None or memory.released:
            raise invalid(f"output {index}: memory is NULL or released")
        self.set_output(index, memory.data, memory.length)

    def run(self) -> None:
        """OH_NNExecutor_Run: every input and output must be set (by this thread's sequence, see the class)."""
        self._claim("run")
        try:
            self._run_legacy()
        finally:
            self._release()

    def _run_legacy(self) -> None:
        missing = [f"input {i}" for i in range(self.input_count) if i not in self._inputs]
        missing += [f"output {i}" for i in range(self.output_count) if i not in self._output_buffers]
        if missing:
            raise invalid(f"run needs {', '.join(missing)} to be set first")
        outputs = self._execute([self._inputs[i] for i in range(self.input_count)])
        for index, value in enumerate(outputs):
            view, length = self._output_buffers[index]
            data = np.ascontiguousarray(value).tobytes()
            if len(data) > length:
                raise invalid(f"output {index} needs {len(data)} bytes, its buffer has {length}")
            view[: len(data)] = data

    def _execute(self, arrays: Sequence[np.ndarray],
                 capture: MutableMapping[int, np.ndarray | None] | None = None) -> list[np.ndarray]:
        with self._lock:
            outputs = self.prepared.run(arrays) if capture is None else self.prepared.run(arrays, capture)
            self._output_shapes = {i: tuple(v.shape) for i, v in enumerate(outputs)}
        return outputs

    # -- API 11: NN_Tensor based -----------------------------------------------------------------------------
    def run_sync(self, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> None:
        arrays = self._tensor_inputs(inputs, outputs)
        self._write_outputs(self._execute(arrays), outputs)

    def _tensor_inputs(self, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> list[np.ndarray]:
        if inputs is None or outputs is None:
            raise invalid("input and output tensor arrays must not be NULL")
        if len(inputs) != self.input_count or len(outputs) != self.output_count:
            raise invalid(f"the model has {self.input_count} inputs and {self.output_count} outputs, "
                          f"got {len(inputs)} and {len(outputs)} tensors")
        if any(t is None for t in list(inputs) + list(outputs)):
            raise invalid("a tensor in the input or output array is NULL")
        arrays = []
        for index, tensor in enumerate(inputs):
            dtype, dims = self._check_input(index, tensor.desc.data_type, tensor.desc.shape)
            arrays.append(tensor.as_array(dims).copy())
        return arrays

    def _write_outputs(self, values: Sequence[np.ndarray], outputs: Sequence[Tensor]) -> None:
        for index, (value, tensor) in enumerate(zip(values, outputs)):
            if value.nbytes > tensor.size:
                raise invalid(f"output {index} needs {value.nbytes} bytes, its tensor has {tensor.size}")
            tensor.desc.shape = tuple(value.shape)
            tensor.write(value)

    def run_async(self, inputs: Sequence[Tensor], outputs: Sequence[Tensor], timeout_ms: int, user_data: Any) -> None:
        """Validate, start the run in the background and return; ``on_run_done`` gets the result."""
        if self.on_run_done is None:
            raise invalid("set an on_run_done callback before run_async")
        if timeout_ms is None or int(timeout_ms) <= 0:
            raise invalid(f"timeout {timeout_ms!r} must be a positive number of milliseconds")
        arrays = self._tensor_inputs(inputs, outputs)
        callback = self.on_run_done
        result: dict[str, Any] = {}

        def work():
            try:
                values = self._execute(arrays)
                result["values"] = values
            except NNRtError as exc:
                result["code"] = exc.code
            except Exception:  # a kernel bug must still reach the callback, not kill a thread silently
                result["code"] = OH_NN_ReturnCode.OH_NN_FAILED

        def wait():
            worker = threading.Thread(target=work, daemon=True)
            worker.start()
            worker.join(int(timeout_ms) / 1000.0)
            if worker.is_alive():
                code = OH_NN_ReturnCode.OH_NN_TIMEOUT
            elif "values" in result:
                try:
                    self._write_outputs(result["values"], outputs)
                    code = OH_NN_ReturnCode.OH_NN_SUCCESS
                except NNRtError as exc:
                    code = exc.code
            else:
                code = result["code"]
            callback(user_data, code, list(outputs), len(outputs))

        threading.Thread(target=wait, daemon=True).start()

    # -- Pythonic --------------------------------------------------------------------------------------------
    def run_arrays(self, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray],
                   capture: MutableMapping[int, np.ndarray | None] | None = None) -> list[np.ndarray]:
        """Run with numpy arrays (in model input order, or by tensor name); returns the outputs.

        ``capture`` (optional) maps the indices of model tensors to keep to None; the run sets each entry to that
        tensor's value (its declared dtype), intermediates included. Raises OH_NN_UNSUPPORTED on a device that
        cannot capture (``PreparedModel.supports_capture``), OH_NN_INVALID_PARAMETER for an index that is no tensor.
        """
        if capture is not None:
            self._check_capture(capture)
        if isinstance(inputs, Mapping):
            names = [self.model.tensors[i].name for i in self.model.inputs]
            unknown = set(inputs) - set(names)
            if unknown:
                raise invalid(f"unknown input name(s) {sorted(unknown)}; the model's inputs are {names}")
            missing = [n for n in names if n not in inputs]
            if missing:
                raise invalid(f"missing input(s) {missing}")
            inputs = [inputs[n] for n in names]
        if len(inputs) != self.input_count:
            raise invalid(f"the model has {self.input_count} inputs, got {len(inputs)}")
        signature = tuple([(a.dtype, a.shape) if type(a) is np.ndarray else None for a in inputs])
        if signature in self._checked_inputs:  # (checked below before: the checks are of dtypes and shapes only)
            return self._execute(inputs, capture)
        arrays = []
        for index, array in enumerate(inputs):
            array = np.asarray(array)
            dtype, dims = self._check_input(index, _dtype_code(array, self._io("input", index).dtype), array.shape)
            arrays.append(array)
        if None not in signature:
            if len(self._checked_inputs) >= 64:
                self._checked_inputs.clear()
            self._checked_inputs.add(signature)
        return self._execute(arrays, capture)

    def _check_capture(self, capture: MutableMapping[int, np.ndarray | None]) -> None:
        if not self.prepared.supports_capture:
            raise cannot_capture(get_device(self.compilation.device_id).name)
        count = len(self.model.tensors)
        wrong = [i for i in capture if not isinstance(i, (int, np.integer)) or not 0 <= i < count]
        if wrong:
            raise invalid(f"cannot capture {wrong[:5]}: the model's tensors are 0..{count - 1}")


def _dtype_code(array: np.ndarray, expected: OH_NN_DataType) -> int:
    from .dtypes import from_numpy

    try:
        return from_numpy(array.dtype)
    except ValueError:
        raise invalid(f"array dtype {array.dtype} has no OH_NN_DataType (expected {expected.name})") from None
