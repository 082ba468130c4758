"""AddOperation validation as the real runtime's ops builders do it, driven by the op table."""
from .operation import check_io_indices, decode_param, validate_operation

__all__ = ["check_io_indices", "decode_param", "validate_operation"]
