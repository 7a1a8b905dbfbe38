"""The LU family's faster CUDA paths (:mod:`cusolver_trace.backends.cuda_lu_fast`) on the CPU,
through an emulated raw layer.

As in tests/test_cuda_lu_calls.py (whose recorder this extends), each raw cuSOLVER / cuBLAS
function is replaced by one that records its arguments and runs the same operation with
LAPACK (scipy) on the memory the pointers address (CPU tensors have real host addresses);
the prologue kernel (:func:`~cusolver_trace.backends.cuda_copy.column_major`) runs through its
host emulation. So every path runs end to end without a GPU: the calls and their arguments
are pinned (sizes, leading dimensions, side / uplo / trans / diag, batch counts, which buffer
each pointer addresses), and the results are judged by LAPACK's ratios. The bits on the GPU
are settled by tests/test_gpu_lu_routines.py (``gpu`` marked).
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
import scipy.linalg
import scipy.linalg.lapack as lapack
import torch
from test_cuda_lu_calls import NP, FakeRaw, _mat, _mem, _ptrs, _set_int

from cusolver_trace import checks, plans
from cusolver_trace.backends import _context, cuda, cuda_copy, cuda_lu_fast
from cusolver_trace.raw import cublas as rcb
from cusolver_trace.raw import cusolver as rcs

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
_CUBLAS = ("getrfBatched", "getrsBatched", "getriBatched", "matinvBatched", "trsm_v2",
           "trsmBatched", "trmm_v2", "gemm_v2")


class FastRaw(FakeRaw):
    """:class:`FakeRaw` with the inverse routines, right-side / unit trsm, trmm and gemm."""

    CUPY = FakeRaw.CUPY | {"getriBatched", "gemm_v2"}

    def rec(self, t, base, **args):
        super().rec(t, base, **args)
        if base in _CUBLAS:
            fn, kw = self.calls[-1]
            self.calls[-1] = (fn.replace("cusolverDn", "cublas"), kw)

    def install(self, mp):
        super().install(mp)
        for name in ("Xtrtri_bufferSize", "Xtrtri"):
            mp.setattr(rcs, name, getattr(self, name))
        for name in ("getriBatched", "matinvBatched", "trmm", "gemm"):
            mp.setattr(rcb, name, getattr(self, name))

    @staticmethod
    def _inverse(dtype, n, A, lda, piv, C, ldc, info):
        """C = A⁻¹ from the LU factors at A and the int32 pivots at ``piv``."""
        lu = _mat(A, n, n, lda, dtype).copy()
        p = _mem(piv, n, np.int32).astype(np.int32) - 1
        inv, inf = lapack.get_lapack_funcs("getri", dtype=dtype)(lu, p)
        _mat(C, n, n, ldc, dtype)[...] = inv
        _set_int(info, inf)

    def getriBatched(self, t, handle, n, Aarray, lda, P, Carray, ldc, INFO, batch):
        self.rec(t, "getriBatched", n=n, Aarray=Aarray, lda=lda, P=P, Carray=Carray, ldc=ldc,
                 INFO=INFO, batchSize=batch, pointers=(_ptrs(Aarray, batch), _ptrs(Carray, batch)))
        assert P, "getriBatched after a pivoting getrfBatched gets the pivots"
        for i, (a, c) in enumerate(zip(_ptrs(Aarray, batch), _ptrs(Carray, batch))):
            self._inverse(NP[t], n, a, lda, P + 4 * n * i, c, ldc, INFO + 4 * i)

    def matinvBatched(self, t, handle, n, A, lda, Ainv, lda_inv, info, batch):
        self.rec(t, "matinvBatched", n=n, A=A, lda=lda, Ainv=Ainv, lda_inv=lda_inv, info=info,
                 batchSize=batch, pointers=(_ptrs(A, batch), _ptrs(Ainv, batch)))
        for i, (a, c) in enumerate(zip(_ptrs(A, batch), _ptrs(Ainv, batch))):
            M = _mat(a, n, n, lda, NP[t])
            before = M.copy()
            lu, piv, inf = lapack.get_lapack_funcs("getrf", dtype=NP[t])(M.copy())
            inv, _ = lapack.get_lapack_funcs("getri", dtype=NP[t])(lu, piv)
            _mat(c, n, n, lda_inv, NP[t])[...] = inv
            _set_int(info + 4 * i, inf)
            assert np.array_equal(M, before, equal_nan=True)   # A is const

    def Xtrtri_bufferSize(self, handle, uplo, diag, n, cdt, A, lda):
        self.rec("", "Xtrtri_bufferSize", uplo=uplo, diag=diag, n=n, lda=lda)
        return 16 * n, 0

    def Xtrtri(self, handle, uplo, diag, n, cdt, A, lda, dwork, dbytes, hwork, hbytes, info):
        self.rec("", "Xtrtri", uplo=uplo, diag=diag, n=n, lda=lda, A=A, info=info)
        M = _mat(A, n, n, lda, NP[cdt])
        other = (np.tril(M, -1) if uplo == rcb.UPPER else np.triu(M, 1)).copy()
        inv, inf = lapack.get_lapack_funcs("trtri", dtype=NP[cdt])(
            M.copy(), lower=uplo == rcb.LOWER, unitdiag=diag == rcb.UNIT)
        M[...] = np.triu(inv) + other if uplo == rcb.UPPER else np.tril(inv) + other
        _set_int(info, inf)

    def _trsm(self, t, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb):
        a = _mem(alpha, 1, NP[t])[0]
        k = m if side == rcb.LEFT else n
        T = _mat(A, k, k, lda, NP[t])
        T = (np.tril(T) if uplo == rcb.LOWER else np.triu(T)).copy()
        if diag == rcb.UNIT:
            np.fill_diagonal(T, 1)
        X = _mat(B, m, n, ldb, NP[t])
        op = {rcb.OP_N: T, rcb.OP_T: T.T, rcb.OP_C: T.conj().T}[trans]
        if side == rcb.LEFT:
            X[...] = np.linalg.solve(op, a * X)
        else:
            X[...] = np.linalg.solve(op.T, (a * X).T).T

    def trmm(self, t, handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, C, ldc):
        self.rec(t, "trmm_v2", side=side, uplo=uplo, trans=trans, diag=diag, m=m, n=n, lda=lda,
                 ldb=ldb, ldc=ldc)
        a = _mem(alpha, 1, NP[t])[0]
        k = m if side == rcb.LEFT else n
        T = _mat(A, k, k, lda, NP[t])
        T = np.tril(T) if uplo == rcb.LOWER else np.triu(T)
        op = {rcb.OP_N: T, rcb.OP_T: T.T, rcb.OP_C: T.conj().T}[trans]
        Bm = _mat(B, m, n, ldb, NP[t]).copy()
        _mat(C, m, n, ldc, NP[t])[...] = a * (op @ Bm if side == rcb.LEFT else Bm @ op)

    def gemm(self, t, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        self.rec(t, "gemm_v2", transa=transa, transb=transb, m=m, n=n, k=k, lda=lda, ldb=ldb,
                 ldc=ldc)
        dt = NP[t]
        a, b = _mem(alpha, 1, dt)[0], _mem(beta, 1, dt)[0]

        def op(M, trans):
            return {rcb.OP_N: M, rcb.OP_T: M.T, rcb.OP_C: M.conj().T}[trans]

        Am = op(_mat(A, *((m, k) if transa == rcb.OP_N else (k, m)), lda, dt), transa)
        Bm = op(_mat(B, *((k, n) if transb == rcb.OP_N else (n, k)), ldb, dt), transb)
        Cm = _mat(C, m, n, ldc, dt)
        Cm[...] = a * (Am @ Bm) + (b * Cm if b != 0 else 0)


class _Stream:
    cuda_stream = 0


@pytest.fixture
def raw(monkeypatch):
    fake = FastRaw()
    fake.install(monkeypatch)
    stream = {"ptr": 0}
    monkeypatch.setattr(_context, "current_stream_ptr", lambda idx: stream["ptr"])
    monkeypatch.setattr(torch.cuda, "current_device", lambda: -1)  # CPU tensors: get_device() == -1
    monkeypatch.setattr(cuda, "_current_device", lambda: -1)
    monkeypatch.setattr(cuda_copy, "current_device", lambda: -1)
    monkeypatch.setattr(cuda_copy, "_launch", lambda prep, values, params:
                        cuda_copy.run_on_host(values, prep.grid, prep.block, prep.itemsize))
    monkeypatch.setattr(_context, "device_bytes",
                        lambda idx, nbytes: torch.empty(max(int(nbytes), 1), dtype=torch.uint8))
    # the plan executor's stream 0 (torch's current stream) without CUDA
    monkeypatch.setattr(torch.cuda, "current_stream", lambda idx=None: _Stream())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())

    @contextlib.contextmanager
    def cupy_stream(self):
        assert fake.bound.get(self.blas) == self.stream == stream["ptr"]
        fake.in_cupy_stream = True
        try:
            yield
        finally:
            fake.in_cupy_stream = False

    monkeypatch.setattr(_context.GpuContext, "cupy_stream", cupy_stream)
    monkeypatch.setattr(_context._local, "ctxs", {}, raising=False)
    return fake


def _general(n, batch=(), dtype=torch.float64, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    real = torch.float64 if dtype in (torch.float64, torch.complex128) else torch.float32
    G = torch.randn(*batch, n, n, generator=g, dtype=real)
    if dtype.is_complex:
        G = torch.complex(G, torch.randn(*batch, n, n, generator=g, dtype=real))
    return (G * scale).to(dtype)


def names(raw):
    return [fn for fn, _ in raw.calls if not fn.endswith("SetStream")]


def args_of(raw, fn):
    return [kw for f, kw in raw.calls if f == fn]


# --------------------------------------------------------------------------- batches
@pytest.mark.parametrize("dtype", DTYPES)
def test_matinv_batched(raw, dtype):
    A = _general(7, (2, 3), dtype)
    A0 = A.clone()
    X, info = cuda_lu_fast.matinv_batched(A)
    t = {torch.float32: "S", torch.float64: "D", torch.complex64: "C", torch.complex128: "Z"}[dtype]
    assert names(raw) == [f"cublas{t}matinvBatched"]
    (kw,) = args_of(raw, f"cublas{t}matinvBatched")
    assert (kw["n"], kw["lda"], kw["lda_inv"], kw["batchSize"]) == (7, 7, 7, 6)
    a_ptrs, x_ptrs = kw["pointers"]
    isz = A.element_size()
    assert np.diff(a_ptrs).tolist() == [49 * isz] * 5 and x_ptrs[0] == X.data_ptr()
    assert X.shape == A.shape and X.mT.is_contiguous() and info.tolist() == [0] * 6
    assert checks.get03(A, X) < 30 and torch.equal(A, A0)


def test_matinv_batched_refuses_n_over_32(raw):
    with pytest.raises(ValueError, match="order <= 32, got n = 33"):
        cuda_lu_fast.matinv_batched(_general(33, (2,)))
    assert names(raw) == []


@pytest.mark.parametrize("dtype", DTYPES)
def test_getri_batched(raw, dtype):
    A = _general(9, (4,), dtype, seed=1)
    A0 = A.clone()
    X, info = cuda_lu_fast.getri_batched(A)
    t = names(raw)[0][6]
    assert names(raw) == [f"cublas{t}getrfBatched", f"cublas{t}getriBatched"]
    rf, ri = raw.calls[-2][1], raw.calls[-1][1]
    assert rf["P"] == ri["P"] != 0 and rf["Aarray"] == ri["Aarray"]
    assert (ri["n"], ri["lda"], ri["ldc"], ri["batchSize"]) == (9, 9, 9, 4)
    assert ri["INFO"] != rf["INFO"]            # getri's info goes to scratch
    assert ri["pointers"][1][0] == X.data_ptr() and ri["pointers"][0][0] != A.data_ptr()
    assert checks.get03(A, X) < 30 and torch.equal(A, A0) and info.tolist() == [0] * 4


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("adjoint", [False, True])
def test_gesv_batched(raw, dtype, adjoint):
    A = _general(6, (3,), dtype, seed=2)
    B = _general(6, (3,), dtype, seed=3)[..., :4]
    A0, B0 = A.clone(), B.clone()
    X, info = cuda_lu_fast.gesv_batched(A, B, adjoint)
    t = names(raw)[0][6]
    assert names(raw) == [f"cublas{t}getrfBatched", f"cublas{t}getrsBatched"]
    rs = raw.calls[-1][1]
    trans = "N" if not adjoint else ("C" if dtype.is_complex else "T")
    assert (rs["trans"], rs["n"], rs["nrhs"], rs["lda"], rs["ldb"], rs["batchSize"]) == (
        trans, 6, 4, 6, 6, 3)
    assert rs["pointers"][1][0] == X.data_ptr()
    assert checks.get02(A, X, B, adjoint) < 30
    assert torch.equal(A, A0) and torch.equal(B, B0) and info.tolist() == [0] * 3


def test_gesv_batched_identity_is_the_inverse(raw):
    A = _general(5, (2,), torch.float64, seed=4)
    X, info = cuda_lu_fast.gesv_batched(A, None)
    assert raw.calls[-1][1]["nrhs"] == 5
    assert checks.get03(A, X) < 30


def test_a_singular_matrix_reports_getrfs_column(raw):
    A = _general(6, (3,), torch.float64, seed=5)
    A[1, :, 2] = 0   # column 3 of batch element 1 is zero: U(3, 3) = 0
    for fn in (cuda_lu_fast.matinv_batched, cuda_lu_fast.getri_batched,
               lambda a: cuda_lu_fast.gesv_batched(a, None), cuda_lu_fast.getri):
        _, info = fn(A)
        assert info.tolist() == [0, 3, 0]


# --------------------------------------------------------------------------- one large matrix
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("getrf_api", ["legacy", "X"])
def test_getri_calls_and_result(raw, dtype, getrf_api):
    n = 12
    A = _general(n, (), dtype, seed=6)
    A0 = A.clone()
    X, info = cuda_lu_fast.getri(A, getrf_api=getrf_api)
    got = names(raw)
    t = {torch.float32: "S", torch.float64: "D", torch.complex64: "C", torch.complex128: "Z"}[dtype]
    factor = ([f"cusolverDn{t}getrf_bufferSize", f"cusolverDn{t}getrf"] if getrf_api == "legacy"
              else ["cusolverDnXgetrf_bufferSize", "cusolverDnXgetrf"])
    assert got == factor + ["cusolverDnXtrtri_bufferSize", "cusolverDnXtrtri", f"cublas{t}trsm_v2"]
    (tr,) = args_of(raw, "cusolverDnXtrtri")
    assert (tr["uplo"], tr["diag"], tr["n"], tr["lda"]) == ("UPPER", "NON_UNIT", n, n)
    (sm,) = args_of(raw, f"cublas{t}trsm_v2")
    assert (sm["side"], sm["uplo"], sm["trans"], sm["diag"], sm["m"], sm["n"], sm["lda"],
            sm["ldb"]) == ("RIGHT", "LOWER", "N", "UNIT", n, n, n, n)
    assert sm["B"] == tr["A"] != sm["A"]     # X (U⁻¹) solved in place against LU's L
    assert checks.get03(A, X) < 30 and torch.equal(A, A0) and info.tolist() == [0]
    assert torch.allclose(X, torch.linalg.inv(A), rtol=0,
                          atol=float(1e3 * n * torch.finfo(A.real.dtype).eps
                                     * torch.linalg.inv(A).abs().max()))


def test_getri_batched_loop(raw):
    A = _general(10, (2, 2), torch.complex128, seed=7)
    X, info = cuda_lu_fast.getri(A)
    assert names(raw).count("cublasZtrsm_v2") == 4 and names(raw).count("cusolverDnXtrtri") == 4
    offs = [kw["A"] for kw in args_of(raw, "cusolverDnXtrtri")]
    assert np.diff(offs).tolist() == [100 * 16] * 3
    assert checks.get03(A, X) < 30 and info.shape == (4,)


def test_getri_recursive_trtri_plan(raw, monkeypatch):
    """The recursive trtri plan (small blocks so that it recurses, trmm split further)."""
    monkeypatch.setitem(plans.BLOCKING, "trtri_base", 4)
    monkeypatch.setitem(plans.BLOCKING, "block", 2)
    monkeypatch.setitem(plans.BLOCKING, "trmm_base", 4)
    n = 19
    A = _general(n, (2,), torch.float64, seed=8)
    X, info = cuda_lu_fast.getri(A, trtri="rec")
    got = names(raw)
    assert "cusolverDnXtrtri" not in got
    assert {"cublasDtrmm_v2", "cublasDtrsm_v2"} <= set(got)
    # the plan's diagonal blocks are inverted by left trsm on an identity; the last two trsm
    # (one per matrix) are getri's X·L = U⁻¹
    sides = [kw["side"] for f, kw in raw.calls if f == "cublasDtrsm_v2"]
    assert sides[-2:] == ["RIGHT", "RIGHT"] and set(sides[:-2]) == {"LEFT"}
    assert checks.get03(A, X) < 30 and info.tolist() == [0, 0]


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64])
def test_getri_blocked_solve(raw, monkeypatch, dtype):
    """?getri's blocked loop: for column blocks of 4 from the right (19 = 4·4 + 3), one GEMM
    with the columns already final (none for the last block) and one trsm with L's diagonal
    block, at the right offsets."""
    monkeypatch.setattr(cuda_lu_fast, "GETRI_BLOCK", 4)
    n = 19
    A = _general(n, (), dtype, seed=11)
    X, info = cuda_lu_fast.getri(A, solve="blocked")
    t = "D" if dtype == torch.float64 else "C"
    got = [f for f in names(raw) if f.startswith("cublas")]
    assert got == [f"cublas{t}trsm_v2"] + [f"cublas{t}gemm_v2", f"cublas{t}trsm_v2"] * 4
    gemms = args_of(raw, f"cublas{t}gemm_v2")
    assert [(g["m"], g["n"], g["k"]) for g in gemms] == [(19, 4, 3), (19, 4, 7), (19, 4, 11),
                                                         (19, 4, 15)]
    trsms = args_of(raw, f"cublas{t}trsm_v2")
    assert [(s["side"], s["m"], s["n"]) for s in trsms] == [("RIGHT", 19, 3)] + [
        ("RIGHT", 19, 4)] * 4
    isz = A.element_size()
    starts = [s["B"] for s in trsms]
    assert np.diff(starts).tolist() == [-4 * n * isz] * 4   # columns 16, 12, 8, 4, 0
    assert checks.get03(A, X) < 30 and info.tolist() == [0]


def test_getri_refuses_an_unknown_trtri_or_solve(raw):
    with pytest.raises(ValueError, match="trtri must be one of"):
        cuda_lu_fast.getri(_general(4), trtri="lapack")
    with pytest.raises(ValueError, match="solve must be one of"):
        cuda_lu_fast.getri(_general(4), solve="gemm")


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_permute_columns_is_getris_interchanges(batch):
    """X·Pᵀ equals LAPACK's order of column swaps (j = n-1 … 1, columns j and pivots[j]),
    for random pivots with repeats and fixed points."""
    g = torch.Generator().manual_seed(9)
    n = 8
    X = torch.randn(*batch, n, n, generator=g, dtype=torch.float64)
    piv = torch.cat([torch.randint(j + 1, n + 1, (1,), generator=g) for j in range(n)])
    piv = piv.to(torch.int32).expand(*batch, n).contiguous()
    out = cuda_lu_fast.permute_columns(X, piv)
    ref = X.clone().reshape(-1, n, n)
    for b in range(ref.shape[0]):
        for j in range(n - 2, -1, -1):
            jp = int(piv.reshape(-1, n)[b, j]) - 1
            if jp != j:
                ref[b, :, [j, jp]] = ref[b, :, [jp, j]]
    assert torch.equal(out, ref.reshape(X.shape)) and out.mT.is_contiguous()


def test_getris_algorithm_on_the_cpu():
    """The algorithm with torch ops (U⁻¹, X·L = U⁻¹, X·Pᵀ) gives A⁻¹, for every dtype."""
    for dtype in DTYPES:
        A = _general(16, (2,), dtype, seed=10)
        LU, piv = torch.linalg.lu_factor(A)
        U = LU.triu()
        L = LU.tril(-1) + torch.eye(16, dtype=dtype)
        Uinv = torch.linalg.solve_triangular(U, torch.eye(16, dtype=dtype), upper=True)
        Xm = torch.linalg.solve_triangular(L, Uinv, upper=False, left=False, unitriangular=True)
        X = cuda_lu_fast.permute_columns(Xm, piv)
        assert checks.get03(A, X) < 30, dtype
        assert scipy.linalg.norm((A @ X - torch.eye(16, dtype=dtype)).numpy()) < 1e-3
