"""OH_NNCompilation: device, cache, performance mode, priority, float16; Build prepares the model on a device."""
from __future__ import annotations

from pathlib import Path

from .enums import OH_NN_PerformanceMode, OH_NN_Priority, OH_NN_ReturnCode
from .errors import NNRtError, forbidden, invalid
from .runtime.device import CompileOptions, all_device_ids, get_device


class Compilation:
    """Build options for one model, then ``build()``. Setters are forbidden once built."""

    def __init__(self, model=None):
        self.model = model
        self.device_id: int = all_device_ids()[0]
        self.cache_dir: str | None = None
        self.cache_version: int = 0
        self.options = CompileOptions()
        self.prepared = None
        self.offline_source: str | None = None  # set by the offline-model constructors
        self.cache_buffer: bytes | None = None  # set by import_cache_from_buffer

    # -- alternative constructors (C: ConstructWithOfflineModel*/ConstructForCache) --------------------------
    @classmethod
    def for_offline_model(cls, description: str) -> Compilation:
        compilation = cls()
        compilation.offline_source = description
        return compilation

    @classmethod
    def for_cache(cls) -> Compilation:
        return cls()

    # -- options ---------------------------------------------------------------------------------------------
    def _check_open(self, what: str) -> None:
        if self.prepared is not None:
            raise forbidden(f"{what} is not allowed after build()")

    def set_device(self, device_id: int) -> None:
        self._check_open("set_device")
        self.device_id = get_device(device_id).id

    def set_cache(self, cache_path: str, version: int) -> None:
        self._check_open("set_cache")
        if cache_path is None:
            raise invalid("cache path is NULL")
        if not isinstance(version, int) or not 0 <= version <= 0xFFFFFFFF:
            raise invalid(f"cache version {version!r} is not a uint32")
        self.cache_dir, self.cache_version = str(cache_path), version

    def set_performance_mode(self, mode: int) -> None:
        self._check_open("set_performance_mode")
        try:
            self.options.performance_mode = OH_NN_PerformanceMode(int(mode))
        except (ValueError, TypeError):
            raise invalid(f"performance mode {mode!r} is not an OH_NN_PerformanceMode (0..4)") from None

    def set_priority(self, priority: int) -> None:
        self._check_open("set_priority")
        try:
            self.options.priority = OH_NN_Priority(int(priority))
        except (ValueError, TypeError):
            raise invalid(f"priority {priority!r} is not an OH_NN_Priority (0..3)") from None

    def enable_float16(self, enable: bool) -> None:
        self._check_open("enable_float16")
        self.options.float16 = bool(enable)

    def add_extension_config(self, name: str, value: bytes) -> None:
        self._check_open("add_extension_config")
        if not name or value is None or len(value) == 0:
            raise invalid("extension config needs a name and a non-empty value")
        if str(name) in self.options.extensions:
            raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED, f"extension config {name!r} is already set")
        self.options.extensions[str(name)] = bytes(value)

    def import_cache_from_buffer(self, buffer) -> None:
        self._check_open("import_cache_from_buffer")
        if buffer is None or len(buffer) == 0:
            raise invalid("cache buffer is NULL or empty")
        self.cache_buffer = bytes(buffer)

    def export_cache_to_buffer(self) -> bytes:
        """The compiled model as bytes (the .nnrt format), for import_cache_from_buffer later."""
        from .serialization import model_to_bytes

        if self.prepared is None:
            raise invalid("export_cache_to_buffer needs a built compilation")
        return model_to_bytes(self.prepared.model)

    # -- build -----------------------------------------------------------------------------------------------
    @property
    def built(self) -> bool:
        return self.prepared is not None

    def build(self) -> None:
        if self.prepared is not None:  # the real runtime answers INVALID_PARAMETER here, not FORBIDDEN
            raise invalid("the compilation is already built")
        device = get_device(self.device_id)
        if self.offline_source is not None:
            raise NNRtError(OH_NN_ReturnCode.OH_NN_UNSUPPORTED,
                            f"{device.name} cannot run offline models ({self.offline_source}): they are binaries "
                            f"for a vendor's hardware driver")
        if self.options.float16 and not device.supports_float16:
            raise forbidden(f"{device.name} does not support float16")
        if self.options.performance_mode not in device.performance_modes:
            raise forbidden(f"{device.name} does not support {self.options.performance_mode.name}")
        if self.options.priority not in device.priorities:
            raise forbidden(f"{device.name} does not support {self.options.priority.name}")

        model, cache = self._source_model(device)
        if model is None:
            raise invalid("nothing to build: no model, no cache buffer and no cache directory with a cached model")
        if not model.finished:
            raise forbidden("the model is not finished (call finish() before building)")
        check_data_types(model)
        unsupported = sorted({op.op.name for op in model.operations if not device.supports(op.op)})
        if unsupported:
            raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED, f"{device.name} does not support {', '.join(unsupported)}")
        prepared = device.prepare(model, self.options)
        if cache is not None:
            cache.store(self.cache_version, model)
        self.prepared = prepared

    def _source_model(self, device):
        """The model to prepare and, when the cache must be (re)written, the cache to write it to."""
        if self.cache_buffer is not None:
            from .serialization import model_from_bytes

            return model_from_bytes(self.cache_buffer), None
        if self.cache_dir is None:
            return self.model, None
        from .cache import CompilationCache

        if not Path(self.cache_dir).is_dir():
            raise NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PATH, f"cache directory {self.cache_dir} does not exist")
        cache = CompilationCache(self.cache_dir, device.name)
        cached = cache.lookup(self.cache_version)
        if cached is not None:
            return cached, None
        return self.model, cache


def check_data_types(model) -> None:
    """A tensor with data type OH_NN_UNKNOWN may exist in a model (AddTensor takes it) but nothing can compute it:
    as a model input or output or an operation's operand it fails the build (OH_NN_FAILED), not the first run."""
    from .enums import OH_NN_DataType

    unknown = OH_NN_DataType.OH_NN_UNKNOWN
    roles = [(i, f"model input {n}") for n, i in enumerate(model.inputs)]
    roles += [(i, f"model output {n}") for n, i in enumerate(model.outputs)]
    for number, operation in enumerate(model.operations):
        roles += [(i, f"an operand of operation #{number} {operation.op.name}") for i in (*operation.inputs,
                                                                                         *operation.outputs)]
    for index, role in roles:
        tensor = model.tensors[index]
        if tensor.dtype == unknown:
            raise NNRtError(OH_NN_ReturnCode.OH_NN_FAILED, f"tensor {index} ({tensor.name or 'unnamed'}, {role}) has "
                                                           f"data type OH_NN_UNKNOWN: it cannot be computed")
