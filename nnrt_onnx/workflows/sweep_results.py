"""A sweep's results file (``check DIR --results FILE``): one JSON row a line, appended as each model finishes.

Each line is written whole, flushed and fsynced before the next model's row, so a sweep killed at any moment
leaves every finished model's row on disk and at most one torn last line (a crash mid-write), which reading
ignores and appending cuts off. A resumed sweep (``--resume``) skips the models the file already has a row for;
``--rerun-failures`` runs again those whose row is not OK. The last row of a model wins.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable

from ..errors import UserError


def read_rows(path: str) -> list[dict[str, Any]]:
    """The rows of a results file, in file order ([] when it does not exist); a torn last line is ignored."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UserError(f"--results {path}: cannot read ({exc.strerror or exc})") from None
    lines = data.split(b"\n")
    complete = lines[:-1]  # what follows the last newline was cut off mid-write (or is empty)
    rows = []
    for number, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict) or not isinstance(row.get("model"), str):
            raise UserError(f"--results {path}: line {number} is not a sweep row (a JSON object naming its model); "
                            f"is it another file?")
        rows.append(row)
    return rows


def latest_rows(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each model's last row."""
    return {row["model"]: row for row in rows}


def models_to_skip(rows: Iterable[dict[str, Any]], rerun_failures: bool) -> set[str]:
    """The models a resumed sweep does not run again: every one with a row, or (``rerun_failures``) an OK row."""
    return {model for model, row in latest_rows(rows).items() if row.get("ok") or not rerun_failures}


class ResultsFile:
    """Appends rows to a results file, each line durable before :meth:`append` returns."""

    def __init__(self, path: str):
        self.path = path
        try:
            self._stream = open(path, "ab")
            self._cut_torn_tail()
        except OSError as exc:
            raise UserError(f"--results {path}: cannot write ({exc.strerror or exc})") from None

    def _cut_torn_tail(self) -> None:
        """Drop what follows the last newline (a row torn by a crash), so the next row starts its own line."""
        size = self._stream.seek(0, os.SEEK_END)
        if size == 0:
            return
        with open(self.path, "rb") as reader:
            start = max(0, size - (1 << 20))
            reader.seek(start)
            tail = reader.read()
        if tail.endswith(b"\n"):
            return
        cut = tail.rfind(b"\n")
        self._stream.truncate(start + cut + 1 if cut >= 0 else (0 if start == 0 else size))
        self._stream.seek(0, os.SEEK_END)

    def append(self, row: dict[str, Any]) -> None:
        line = json.dumps(row).encode() + b"\n"
        try:
            self._stream.write(line)
            self._stream.flush()
            os.fsync(self._stream.fileno())
        except OSError as exc:  # a full disk: the rows written so far stay, and a resumed sweep goes on from them
            raise UserError(f"--results {self.path}: cannot write ({exc.strerror or exc})") from None

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> "ResultsFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["ResultsFile", "latest_rows", "models_to_skip", "read_rows"]
