"""GPU: the LU backend (:mod:`cusolver_trace.backends.cuda_lu`) against torch's own
``linalg.lu_factor_ex`` / ``linalg.lu_solve``, bit for bit, on every path where torch calls the
routine the backend calls (written for torch 2.11 on the H200).

torch's choice of routine is steered with ``torch.backends.cuda.preferred_linalg_library``
and the shapes; :func:`lu_factor_path` / :func:`lu_solve_path` restate torch 2.11's rules
(``cuda/linalg/BatchLinearAlgebra.cpp``: ``lu_factor``, ``lu_solve_kernel``; see
../shared/reference/torch-dispatch-lu-eigh.md §1, §3, §4) so that each case runs the backend
entry point torch runs. Shapes where torch 2.11 would run MAGMA are not used (batched LU with
batch > 16 and n > 16 under the default preference; n <= 8 with 256 <= k <= 1024 in
lu_solve). Pivots must be exactly equal, info equal, LU and X bitwise equal.

Run (H200, torch 2.11, CuPy 14, nvmath-python 1.0):
``python3 -m pytest -q -p no:cacheprovider tests/test_gpu_lu_backend.py``; the open questions
about torch's behaviour are answered by ``python3 tests/gpu_probe_lu.py``.
"""
from __future__ import annotations

import contextlib

import pytest
import torch

from cusolver_trace import checks
from cusolver_trace.backends import cuda_lu

pytestmark = pytest.mark.gpu

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


@contextlib.contextmanager
def preferred(lib: str):
    old = torch.backends.cuda.preferred_linalg_library()
    torch.backends.cuda.preferred_linalg_library(lib)
    try:
        yield
    finally:
        torch.backends.cuda.preferred_linalg_library(old)


def lu_factor_path(m: int, n: int, batch: int, pref: str) -> str:
    """torch 2.11's routine for ``lu_factor``: ``"legacy"`` (loop of cusolverDn<t>getrf),
    ``"batched"`` (cublas<t>getrfBatched) or ``"magma"``."""
    if pref == "default" and not (m == n and (batch == 1 or m <= 16 or (m <= 128 and batch <= 16))):
        return "magma"
    if pref == "magma":
        return "magma"
    return "legacy" if (m != n or batch == 1 or m >= 512) else "batched"


def lu_solve_path(n: int, k: int, b: int, trans_n: bool, pref: str) -> str:
    """torch 2.11's routine for ``lu_solve`` (after ``left=False`` became an adjoint solve):
    ``"legacy"`` (loop of cusolverDn<t>getrs), ``"batched"`` (cublas<t>getrsBatched),
    ``"triangular"`` (2 trsm) or ``"magma"``."""
    if pref == "cusolver":
        return "legacy" if (b <= 2 and n >= 64) else "batched"
    if pref == "magma":
        return "magma"
    if n == k:
        return "batched" if n <= 16 else "triangular"
    if n <= 8:
        return "magma" if (trans_n and 256 <= k <= 1024) else "batched"
    if n <= 64:
        if b <= 2 and (k <= 64 or not trans_n or n <= 32):
            return "legacy"
        return "batched" if k <= 8 else "triangular"
    if n <= 128:
        if b <= 2 and k <= 2:
            return "legacy"
        return "batched" if k <= 2 else "triangular"
    return "triangular"


def _general(shape, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    real = torch.float64 if dtype in (torch.float64, torch.complex128) else torch.float32
    A = torch.randn(*shape, device="cuda", dtype=real, generator=g)
    if dtype.is_complex:
        A = torch.complex(A, torch.randn(*shape, device="cuda", dtype=real, generator=g))
    return A


def _matrix(n, batch, dtype, seed=0, m=None):
    m = n if m is None else m
    A = _general((*batch, m, n), dtype, seed)
    return A + max(m, n) * torch.eye(m, n, device="cuda", dtype=dtype)


def _assert_bitwise(got, want, what):
    assert checks.bitwise_equal(got, want), (what, checks.max_ulp_distance(got, want))


FACTOR_CASES = [  # (m, n, batch shape, preference)
    (1, 1, (), "default"), (2, 2, (), "default"), (33, 33, (), "default"),
    (256, 256, (), "default"), (1024, 1024, (), "default"),
    (2, 2, (4,), "default"), (16, 16, (64,), "default"), (33, 33, (4,), "default"),
    (128, 128, (2, 3), "default"), (256, 256, (4,), "cusolver"), (33, 33, (64,), "cusolver"),
    (600, 600, (3,), "cusolver"), (1024, 1024, (2,), "cusolver"),
    (5, 3, (), "cusolver"), (3, 5, (2,), "cusolver"), (40, 70, (), "cusolver"),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m,n,batch,pref", FACTOR_CASES)
@pytest.mark.parametrize("pivot", [True, False])
def test_getrf_bitwise_equal_torch(dtype, m, n, batch, pref, pivot):
    count = 1
    for d in batch:
        count *= d
    api = lu_factor_path(m, n, count, pref)
    assert api != "magma"
    A = _matrix(n, batch, dtype, seed=m * 7 + n, m=m)
    before = A.clone()
    with preferred(pref):
        want = torch.linalg.lu_factor_ex(A, pivot=pivot)
        LU, piv, info = cuda_lu.getrf(A, pivot, api)
    assert torch.equal(A, before)
    assert LU.stride() == want.LU.stride()
    _assert_bitwise(LU, want.LU, f"LU {api}")
    assert torch.equal(piv, want.pivots), api
    assert torch.equal(info, want.info.reshape(-1)), api


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n,batch,pref", [(33, (), "default"), (1024, (), "default"),
                                          (33, (4,), "default"), (600, (2,), "cusolver")])
@pytest.mark.parametrize("k", [1, 3, 33])
def test_singular_column_k_gives_info_k_like_torch(dtype, n, batch, pref, k):
    count = 1
    for d in batch:
        count *= d
    api = lu_factor_path(n, n, count, pref)
    A = _matrix(n, batch, dtype, seed=k)
    A[..., :, k - 1] = 0
    with preferred(pref):
        want = torch.linalg.lu_factor_ex(A)
        LU, piv, info = cuda_lu.getrf(A, True, api)
    assert (want.info.reshape(-1) == k).all()
    assert torch.equal(info, want.info.reshape(-1))
    assert torch.equal(piv, want.pivots)
    _assert_bitwise(LU, want.LU, api)


def _solve_cases():
    cases = []
    for n, batch in ((1, ()), (2, (4,)), (8, (4,)), (16, (64,)), (33, ()), (33, (2,)),
                     (33, (4,)), (64, ()), (100, (2,)), (256, ()), (256, (4,)), (256, (16,)),
                     (1024, ())):
        for k in sorted({1, 3, 12, n}):
            for pref in ("default", "cusolver"):
                cases.append((n, batch, k, pref))
    return cases


def _run_solve(path, LU, piv, B, adjoint, left):
    if path == "triangular":
        return cuda_lu.lu_solve_triangular(LU, piv, B, adjoint, left=left)
    return cuda_lu.getrs(LU, piv, B, adjoint, path, left=left)[0]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n,batch,k,pref", _solve_cases())
@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False),
                                          (False, True)])
def test_lu_solve_bitwise_equal_torch(dtype, n, batch, k, pref, left, adjoint):
    count = 1
    for d in batch:
        count *= d
    A = _matrix(n, batch, dtype, seed=n + k)
    LU, piv = torch.linalg.lu_factor(A)
    B = _general((*batch, n, k) if left else (*batch, k, n), dtype, seed=k)
    trans_n = adjoint != (not left)   # left=False flips adjoint
    path = lu_solve_path(n, k, count, trans_n, pref)
    if path == "magma":
        pytest.skip("torch 2.11 runs MAGMA here")
    inputs = [t.clone() for t in (LU, piv, B)]
    with preferred(pref):
        want = torch.linalg.lu_solve(LU, piv, B, left=left, adjoint=adjoint)
        X = _run_solve(path, LU, piv, B, adjoint, left)
    assert all(torch.equal(a, b) for a, b in zip((LU, piv, B), inputs))
    assert X.shape == want.shape and X.stride() == want.stride()
    assert X.is_conj() == want.is_conj()
    _assert_bitwise(X, want, path)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64], ids=str)
@pytest.mark.parametrize("lu_batch,b_batch", [((), (4,)), ((1,), (3,)), ((2, 1), (1, 3)),
                                              ((3,), (1, 3)), ((1,), (2,)), ((2,), ())])
@pytest.mark.parametrize("n,k,pref", [(4, 2, "default"), (33, 3, "default"), (33, 12, "default"),
                                      (256, 3, "default"), (64, 3, "cusolver"),
                                      (33, 3, "cusolver")])
def test_lu_broadcasts_over_b_bitwise_like_torch(dtype, lu_batch, b_batch, n, k, pref):
    A = _matrix(n, lu_batch, dtype, seed=n)
    LU, piv = torch.linalg.lu_factor(A)
    B = _general((*b_batch, n, k), dtype, seed=k)
    count = 1
    for d in torch.broadcast_shapes(lu_batch, b_batch):
        count *= d
    path = lu_solve_path(n, k, count, True, pref)
    with preferred(pref):
        want = torch.linalg.lu_solve(LU, piv, B)
        X = _run_solve(path, LU, piv, B, False, True)
    _assert_bitwise(X, want, path)


def test_the_backend_never_synchronizes():
    A = _matrix(64, (3,), torch.float64)
    LU, piv = torch.linalg.lu_factor(A)
    B = _general((3, 64, 3), torch.float64)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:   # cuBLAS getrsBatched's info is a host int written at the call: no sync either
        for api in cuda_lu.APIS:
            cuda_lu.getrf(A, True, api)
            cuda_lu.getrf(A, False, api)
            cuda_lu.getrs(LU, piv, B, False, api)
        cuda_lu.lu_solve_triangular(LU, piv, B, True)
        cuda_lu.lu_solve_triangular(LU, piv, B.mT, False, left=False)
    finally:
        torch.cuda.set_sync_debug_mode("default")
