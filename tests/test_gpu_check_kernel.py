"""The check kernel (``backends.cuda.inverse_status`` / ``inverse_check``) against its NumPy
statement (``backends.cpu.inverse_status``) on the GPU: every memory order it may meet (row-
and column-major, transposed and sliced views, expanded batches), orders on both sides of the
one-block-per-matrix limit, every dtype, both triangles, with exact zeros on the diagonal and
NaN / Inf planted in and outside the triangle that is read."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cusolver_trace.backends import cpu as cpu_backend
from cusolver_trace.backends import cuda as cuda_backend

pytestmark = pytest.mark.gpu

DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)


def _layout(t: torch.Tensor, how: str) -> torch.Tensor:
    """``t`` (batch, n, n) with the same values in another memory order."""
    if how == "row":
        return t.contiguous()
    if how == "col":
        return t.mT.contiguous().mT
    if how == "sliced":   # neither stride is 1 in the matrix's row: a strided view
        b, n, _ = t.shape
        big = torch.zeros(b, 2 * n, 3 * n, dtype=t.dtype, device=t.device)
        big[:, ::2, ::3] = t
        return big[:, ::2, ::3]
    if how == "batch_inner":   # the batch index runs fastest
        return t.permute(1, 2, 0).contiguous().permute(2, 0, 1)
    raise AssertionError(how)


@st.composite
def cases(draw):
    n = draw(st.sampled_from([1, 2, 7, 31, 64, 65, 100, 129, 200]))
    batch = draw(st.sampled_from([1, 2, 5]))
    dtype = draw(st.sampled_from(DTYPES))
    upper = draw(st.booleans())
    lay_l = draw(st.sampled_from(["row", "col", "sliced", "batch_inner"]))
    lay_x = draw(st.sampled_from(["row", "col", "sliced", "batch_inner"]))
    # (matrix, what, row, column): what in {zero (diagonal), nan, inf} for L; nan / inf for X
    spots_l = draw(st.lists(st.tuples(st.integers(0, batch - 1), st.sampled_from(
        ["zero", "nan", "inf", "-inf"]), st.integers(0, n - 1), st.integers(0, n - 1)),
        max_size=3))
    spots_x = draw(st.lists(st.tuples(st.integers(0, batch - 1), st.sampled_from(
        ["nan", "inf"]), st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2))
    with_info = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    return n, batch, dtype, upper, lay_l, lay_x, spots_l, spots_x, with_info, seed


def _planted(n, batch, dtype, spots, seed, diagonal_ones):
    g = torch.Generator().manual_seed(seed)
    real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
    t = torch.rand(batch, n, n, generator=g, dtype=real) + 0.5
    if dtype.is_complex:
        t = torch.complex(t, torch.rand(batch, n, n, generator=g, dtype=real))
    if diagonal_ones:
        t.diagonal(dim1=-2, dim2=-1).fill_(1)
    for b, what, i, j in spots:
        if what == "zero":
            t[b, i, i] = 0
        else:
            t[b, i, j] = {"nan": float("nan"), "inf": float("inf"), "-inf": -float("inf")}[what]
    return t


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_check_kernel_matches_numpy_in_every_memory_order(case):
    n, batch, dtype, upper, lay_l, lay_x, spots_l, spots_x, with_info, seed = case
    L = _planted(n, batch, dtype, spots_l, seed, True)
    X = _planted(n, batch, dtype, spots_x, seed + 1, False)
    info = (torch.arange(batch, dtype=torch.int32) % 3) if with_info else None
    want = cpu_backend.inverse_status(L.numpy(), X.numpy(), upper,
                                      None if info is None else info.numpy())
    Lg, Xg = _layout(L.cuda(), lay_l), _layout(X.cuda(), lay_x)
    assert torch.equal(Lg.cpu(), L) or torch.isnan(L).any()   # same values, other order
    info_g = None if info is None else info.cuda()
    got = cuda_backend.inverse_status(Lg, Xg, upper, info_g).cpu().numpy()
    assert np.array_equal(got, want), (got, want)
    # the checked entry point: None exactly when the record is all zeros
    summary = cuda_backend.inverse_check(Lg, Xg, upper, info_g)
    if want.any():
        assert np.array_equal(summary, want)
    else:
        assert summary is None


@pytest.mark.parametrize("how", ["row", "col"])
def test_check_kernel_several_blocks_per_matrix(how):
    """n = 2000: several blocks per matrix (atomics on the record); a zero pivot and a NaN
    in the last column and a non-finite X entry in the first row are all found."""
    n = 2000
    L = torch.eye(n, dtype=torch.float64, device="cuda").tril()
    L = _layout(L[None], how)
    X = _layout(torch.ones(1, n, n, dtype=torch.float64, device="cuda"), how)
    assert cuda_backend.inverse_check(L, X, False, None) is None
    L[0, n - 3, n - 3] = 0
    L[0, n - 1, n - 2] = float("nan")
    X[0, 0, n - 1] = float("inf")
    got = cuda_backend.inverse_status(L, X, False, None).cpu().numpy()
    assert got.tolist() == [[3, 3, 0]]
    L[0, 5, 5] = 0
    assert cuda_backend.inverse_status(L, X, False, None).cpu().numpy().tolist() == [[n - 5, 3, 0]]
