"""The plugin interface of tools/make_realworld_models.py: each module here is one group of corpus models.

A module ``tools/realworld/<group>.py`` (names starting with ``_`` are skipped) defines::

    def models() -> list[CorpusModel]

and nothing else is required. ``CorpusModel`` is below; a module may also return plain dicts with the same keys.
A module that needs a package which is not installed raises ModuleNotFoundError from ``models()`` (or at import):
the script reports the group as skipped and goes on.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx


@dataclass
class CorpusModel:
    name: str  # unique across the corpus; the file is <name>.onnx
    build: Callable[[], onnx.ModelProto]  # makes the model (called once, by the script)
    inputs: dict[str, np.ndarray]  # example runtime inputs: `nnrt-onnx check --input NAME=FILE` (they pin dims)
    constants: dict[str, np.ndarray] = field(default_factory=dict)  # inputs to bind: `--constant-input NAME=FILE`
    note: str = ""  # what the model shows (one line, for the manifest)


def as_corpus_model(entry) -> CorpusModel:
    return entry if isinstance(entry, CorpusModel) else CorpusModel(**entry)
