"""The layout pass's algebra: moving a transpose across a reshape gives the same tensor (checked with numpy)."""
from __future__ import annotations

import numpy as np
import pytest

from nnrt_onnx.ir.passes import reshape_then_transpose, transpose_then_reshape

CASES = [
    # (input shape, perm, reshape target): ShuffleNet's channel shuffle seen from NHWC, flatten heads, plain splits;
    # each has an equivalent reshape-then-transpose form (the reshape splits or merges dims that stay adjacent)
    ((1, 7, 7, 8), (0, 3, 1, 2), (1, 2, 4, 7, 7)),
    ((2, 3, 4, 6), (0, 3, 1, 2), (2, 6, 12)),
    ((2, 3, 4, 5), (0, 2, 3, 1), (2, 4, 5, 3)),
    ((6, 10), (1, 0), (2, 5, 6)),
]
# ... and pairs with none: the reshape merges dims the transpose swapped (the pass then leaves the transpose)
NO_EQUIVALENT = [
    ((2, 3, 4), (1, 0, 2), (6, 4)),
    ((2, 3, 4, 5), (0, 2, 1, 3), (2, 12, 5)),
]


@pytest.mark.parametrize("shape, perm, target", CASES)
def test_transpose_then_reshape_equivalence(rng, shape, perm, target):
    x = rng.standard_normal(shape)
    expected = np.transpose(x, perm).reshape(target)
    found = transpose_then_reshape(shape, perm, target)
    assert found is not None, "an equivalent form exists for this pair"
    new_shape, new_perm = found
    np.testing.assert_array_equal(np.transpose(x.reshape(new_shape), new_perm), expected)


@pytest.mark.parametrize("shape, perm, target", NO_EQUIVALENT)
def test_transpose_then_reshape_without_equivalent(shape, perm, target):
    assert transpose_then_reshape(shape, perm, target) is None


@pytest.mark.parametrize("shape, target, perm", [((1, 8, 7, 7), (1, 2, 4, 7, 7), (0, 3, 4, 1, 2)),
                                                 ((1, 4, 2, 7, 7), (1, 8, 7, 7), (0, 2, 3, 1)),
                                                 ((6, 4), (2, 3, 4), (2, 0, 1))])
def test_reshape_then_transpose_equivalence(rng, shape, target, perm):
    x = rng.standard_normal(shape)
    expected = np.transpose(x.reshape(target), perm)
    found = reshape_then_transpose(shape, target, perm)
    assert found is not None
    new_perm, new_shape = found
    np.testing.assert_array_equal(np.transpose(x, new_perm).reshape(new_shape), expected)


def test_a_split_dim_that_would_be_torn_apart_is_refused():
    # reshape (6,) -> (2,3) then a transpose that separates the two halves of the split dim from each other
    assert reshape_then_transpose((6, 5), (2, 3, 5), (1, 2, 0)) is None
