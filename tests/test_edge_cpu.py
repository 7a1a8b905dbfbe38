"""Edge cases without a GPU (issue 6): singular factors in compare, NaN, bad input classes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from cusolver_trace import routines
from cusolver_trace.compare import compare


def test_compare_zero_factor_on_cpu_is_failed_alike():
    for dtype in (torch.float64, torch.complex128):
        c = compare("cholesky_inverse", factor=torch.zeros(2, 3, 3, dtype=dtype), timing=False,
                    provenance=False)
        assert c.verdict == "failed-alike"
        assert c.torch.error and "diagonal element 1 is zero" in c.torch.error
        assert c.replay.info == [1, 1]


def test_compare_negative_definite_classic():
    A = -torch.tensor([[4.0, 12, -16], [12, 37, -43], [-16, -43, 98]], dtype=torch.float64)
    c = compare("cholesky", A, timing=False, provenance=False)
    assert c.verdict == "failed-alike" and c.torch.info == [1] == c.replay.info
    assert any("unspecified" in n for n in c.notes)


def test_nan_2x2_every_kind():
    for x in (np.full((2, 2), np.nan), torch.full((2, 2), float("nan"))):
        _, info = routines.potrf(x, check=False)
        assert int(info) == 1


def test_integer_and_bool_inputs_rejected_with_supported_list():
    for x in (np.eye(3, dtype=np.int32), np.eye(3, dtype=bool), torch.eye(3, dtype=torch.int64)):
        with pytest.raises(TypeError, match="float32, float64, complex64, complex128"):
            routines.cholesky_inverse(x)


def test_potrs_batch_broadcast_matches_loop():
    L = np.linalg.cholesky(np.array([[4.0, 2], [2, 3]]))
    B = np.arange(12.0).reshape(3, 2, 2)
    X = routines.potrs(L, B)
    for i in range(3):
        np.testing.assert_allclose(X[i], np.linalg.solve(L @ L.T, B[i]), rtol=1e-14)


def test_compare_factor_requires_solve_or_inverse():
    with pytest.raises(TypeError, match="unexpected keyword 'factor'"):
        compare("cholesky", factor=torch.eye(2))
    with pytest.raises(ValueError, match="needs? A"):  # new wording (ops.prepare_inputs): "need A"
        compare("cholesky_inverse")
