"""Errors: NNRtError, the one exception type of the NNRt Python API (it carries the return code), and
UserError, a problem with what a user of the tools asked for."""
from __future__ import annotations

from .enums import OH_NN_ReturnCode


class NNRtError(Exception):
    """An NNRt API call failed; ``code`` is the ``OH_NN_ReturnCode`` the C API would return."""

    def __init__(self, code: OH_NN_ReturnCode | int, message: str):
        self.code = OH_NN_ReturnCode(code)
        self.message = message
        super().__init__(f"{self.code.name}: {message}")


def invalid(message: str) -> NNRtError:
    return NNRtError(OH_NN_ReturnCode.OH_NN_INVALID_PARAMETER, message)


def forbidden(message: str) -> NNRtError:
    return NNRtError(OH_NN_ReturnCode.OH_NN_OPERATION_FORBIDDEN, message)


def unsupported(message: str) -> NNRtError:
    return NNRtError(OH_NN_ReturnCode.OH_NN_UNSUPPORTED, message)


class UserError(Exception):
    """A problem with what the user asked for (bad path, bad input spec): one clear line, no traceback."""


class CommandLineError(UserError):
    """A malformed or inconsistent command line (a spec that does not parse, a file it names that does not exist,
    flags that conflict): the CLI exits 2 for it, as for its own usage errors."""


def os_reason(error: OSError) -> str:
    """An OSError's reason in words ("no space left on device"): its strerror, never "[Errno 28]" or a file name."""
    reason = error.strerror or str(error) or type(error).__name__
    return reason[:1].lower() + reason[1:]


def cannot(verb: str, path, error: OSError) -> str:
    """``cannot write PATH: no space left on device``."""
    return f"cannot {verb} {path}: {os_reason(error)}"
