"""The README's Python snippets run as written (from the checkout root, where models/ is), and print what their
comments say."""
from __future__ import annotations

import contextlib
import io
import os
import re

from support import REPO


def _snippets(title: str) -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index(title):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _run(code: str) -> str:
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - our own README
    finally:
        os.chdir(cwd)
    return out.getvalue()


def test_the_python_api_snippet_converts_compiles_and_runs():
    printed = _run(_snippets("## The Python API in one screen")).splitlines()
    assert printed[0] == "OH_NN_OPERATION_FORBIDDEN"
    shape, total = printed[1].rsplit(" ", 1)
    assert shape == "(1, 10)" and abs(float(total) - 1) < 1e-5  # a softmax's row sums to 1


def test_the_c_style_snippet_runs_a_model():
    printed = _run(_snippets("## The C-style API in one screen"))
    assert printed.strip() == "[0. 0. 1. 2.]"  # RELU of [-2, -1, 1, 2], by hand
