"""The generated op-support doc is fresh, the CLI prints the same matrix, and every op is declared and implemented."""
from __future__ import annotations

import json

from click.testing import CliRunner
from support import REPO

from nnrt_onnx.enums import OH_NN_OperationType
from nnrt_onnx.kernels import kernels
from nnrt_onnx.optable import op_table
from nnrt_onnx.workflows.opdocs import ops_markdown


def test_docs_ops_md_is_fresh():
    path = REPO / "docs" / "ops.md"
    assert path.read_text() == ops_markdown(), "docs/ops.md is stale: run `nnrt-onnx ops --markdown > docs/ops.md`"


def test_every_op_is_declared_and_has_a_native_kernel():
    assert set(op_table()) == set(OH_NN_OperationType)
    assert set(kernels()) == set(OH_NN_OperationType)


def test_every_entry_declares_its_dtypes():
    for entry in op_table().values():
        assert entry.raw.get("dtypes"), f"{entry.file.name} has no dtypes"


def test_cli_ops_json_and_markdown(cli_main):
    runner = CliRunner()
    result = runner.invoke(cli_main, ["ops", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["op"] for r in rows] == [op.name for op in OH_NN_OperationType] and rows[7]["op"] == "OH_NN_OPS_CONV2D"
    conv_params = {p["type"] for p in rows[7]["params"]}
    assert "OH_NN_CONV2D_PAD_MODE" in conv_params
    result = runner.invoke(cli_main, ["ops", "--markdown"])
    assert result.output == ops_markdown()
