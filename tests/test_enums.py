"""Every enum name and value of nnrt_onnx.enums equals the header's, and the header's enums are all there."""
from __future__ import annotations

import importlib.util

import pytest
from support import REPO, shared_file

from nnrt_onnx import enums

EXPECTED_SIZES = {
    "OH_NN_PerformanceMode": 5, "OH_NN_Priority": 4, "OH_NN_ReturnCode": 15, "OH_NN_FuseType": 3, "OH_NN_Format": 4,
    "OH_NN_DeviceType": 4, "OH_NN_DataType": 13, "OH_NN_OperationType": 108, "OH_NN_TensorType": 163,
}


def _header_enums():
    spec = importlib.util.spec_from_file_location("gen_enums", REPO / "tools" / "gen_enums.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parse_header_enums(shared_file("spec", "neural_network_runtime_type.h").read_text())


def test_header_has_exactly_our_enums():
    assert sorted(_header_enums()) == sorted(EXPECTED_SIZES)


@pytest.mark.parametrize("enum_name", sorted(EXPECTED_SIZES))
def test_enum_matches_header(enum_name):
    header = _header_enums()[enum_name]
    ours = getattr(enums, enum_name)
    assert [(m.name, m.value) for m in ours] == header
    assert len(ours) == EXPECTED_SIZES[enum_name]


def test_value_ranges_of_the_contract():
    assert [m.value for m in enums.OH_NN_ReturnCode] == list(range(15))
    assert [m.value for m in enums.OH_NN_DataType] == list(range(13))
    assert [m.value for m in enums.OH_NN_OperationType] == list(range(1, 109))
    assert sorted(m.value for m in enums.OH_NN_TensorType) == list(range(163))
    assert enums.OH_NN_OperationType.OH_NN_OPS_GATHER_ND == 108
    assert enums.OH_NN_TensorType.OH_NN_REDUCE_L2_COEFF == 162
