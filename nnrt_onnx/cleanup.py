"""Temp files never outlive the process that writes them: a registry of the temp files being written, emptied by
SIGTERM / SIGHUP (and at exit), and a sweep of those a killed (-9) writer left behind.

``atomic_write`` (serialization.py) registers its temp file for the time it exists. The first registration in the
main thread installs handlers for SIGTERM and SIGHUP -- only where the process keeps the default action, so an
application's own handlers are never replaced -- that remove every registered file and then let the signal take
its default course (the process ends as killed by that signal). SIGINT needs no handler: Python turns it into
KeyboardInterrupt, and the writer's ``except BaseException`` removes its file.

Nothing survives ``kill -9``; the temp file names carry the writer's pid (``.<name>.<pid>.<random>.tmp``), and
:func:`sweep_stale` -- called by the next write into the same directory -- removes those of the same target whose
process no longer exists and that nobody touched for a minute.
"""
from __future__ import annotations

import atexit
import os
import re
import signal
import threading
import time
from typing import Iterable

__all__ = ["register", "unregister", "remove_pending", "temp_prefix", "sweep_stale"]

_pending: set[str] = set()
_lock = threading.Lock()
_installed = False
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
STALE_SECONDS = 60.0


def remove_pending() -> None:
    """Remove every registered temp file (signal handlers and exit)."""
    with _lock:
        paths = list(_pending)
        _pending.clear()
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


def _on_signal(signum, frame) -> None:
    remove_pending()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # the default action now: the process ends as killed by this signal


def _install() -> None:
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    atexit.register(remove_pending)
    for signum in _SIGNALS:
        try:
            if signal.getsignal(signum) == signal.SIG_DFL:
                signal.signal(signum, _on_signal)
        except (ValueError, OSError):  # not the main thread of the main interpreter, or an unsupported signal
            pass


def register(path: str) -> None:
    """Remember ``path`` as a temp file being written (removed on SIGTERM/SIGHUP/exit until unregistered)."""
    _install()
    with _lock:
        _pending.add(path)


def unregister(path: str) -> None:
    with _lock:
        _pending.discard(path)


def temp_prefix(target: str) -> str:
    """The prefix of the temp files written for ``target`` (a file name): hidden, with this process's pid."""
    return f".{target}.{os.getpid()}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's) or cannot tell: keep its files
    return True


def sweep_stale(directory: str, target: str, names: Iterable[str] | None = None) -> list[str]:
    """Remove the temp files of ``target`` in ``directory`` left by writers that no longer exist (killed -9) and
    untouched for STALE_SECONDS; the names removed."""
    pattern = re.compile(rf"\.{re.escape(target)}\.(\d+)\.[^/]*\.tmp")
    removed = []
    try:
        candidates = list(names) if names is not None else os.listdir(directory)
    except OSError:
        return removed
    now = time.time()
    for name in candidates:
        match = pattern.fullmatch(name)
        if not match or int(match.group(1)) == os.getpid() or _alive(int(match.group(1))):
            continue
        path = os.path.join(directory, name)
        try:
            if now - os.stat(path).st_mtime < STALE_SECONDS:
                continue
            os.unlink(path)
            removed.append(name)
        except OSError:
            pass
    return removed
