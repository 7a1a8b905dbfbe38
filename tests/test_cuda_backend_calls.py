"""The CUDA backend's issue path on the CPU, through an emulated raw layer.

The raw cuSOLVER / cuBLAS functions are replaced by a recorder that runs the same
operation with LAPACK (scipy) on the memory the pointers address (CPU tensors have real
host addresses); torch's CUDA-only calls are replaced by stand-ins, and the backend's own
prologue kernel by its thread-by-thread emulation (:func:`~cusolver_trace.backends.cuda_copy.run_on_host`). So these tests run
every backend routine end to end without a GPU and pin what reaches the library: the
routine, its sizes, leading dimensions, the workspace size the bufferSize answer gave,
one pointer per matrix of the batch, the stream bound only when it changes, bufferSize
asked once per key, and every CuPy-bound routine issued with the bound stream current
in CuPy. (The GPU itself is exercised by ``devrun/fastpath`` and the gpu-marked tests.)
"""
from __future__ import annotations

import contextlib
import ctypes

import numpy as np
import pytest
import scipy.linalg
import scipy.linalg.lapack as lapack
import torch

from cusolver_trace import routines
from cusolver_trace.backends import _context
from cusolver_trace.backends import cuda
from cusolver_trace.backends import cuda_copy
from cusolver_trace.raw import cublas as rcb
from cusolver_trace.raw import cusolver as rcs

NP = {0: np.float32, 1: np.float64, 4: np.complex64, 5: np.complex128,
      "s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}
CUPY_BOUND = {"potrf", "potrs", "potrfBatched", "potrsBatched", "potrf_bufferSize", "trsm",
              "trsmBatched"}


def _mem(ptr, count, dtype):
    dtype = np.dtype(dtype)
    return np.frombuffer((ctypes.c_char * (count * dtype.itemsize)).from_address(ptr), dtype=dtype)


def _mat(ptr, rows, cols, ld, dtype):
    """The column-major rows x cols matrix at ``ptr`` with leading dimension ``ld`` (a view)."""
    return _mem(ptr, ld * cols, dtype).reshape(cols, ld).T[:rows, :]


def _ptrs(ptr, batch):
    return [int(p) for p in _mem(ptr, batch, np.int64)]


def _set_info(ptr, value):
    _mem(ptr, 1, np.int32)[0] = value


def fake_handles(mp, calls: list, bound: dict) -> None:
    """Stand-ins for the raw layer's handle, params and stream calls: numbered handles, and
    each SetStream recorded in ``calls`` and in ``bound`` (handle -> stream)."""
    counter = iter(range(100, 10_000))
    mp.setattr(rcs, "create", lambda: next(counter))
    mp.setattr(rcs, "createParams", lambda: next(counter))
    mp.setattr(rcb, "create", lambda: next(counter))
    mp.setattr(rcs, "destroy", lambda h: None)
    mp.setattr(rcs, "destroyParams", lambda h: None)
    mp.setattr(rcb, "destroy", lambda h: None)

    def set_stream(kind):
        def run(handle, stream):
            calls.append((f"{kind}SetStream", {"stream": stream}))
            bound[handle] = stream
        return run

    mp.setattr(rcs, "setStream", set_stream("cusolverDn"))
    mp.setattr(rcb, "setStream", set_stream("cublas"))


class FakeRaw:
    """Records raw calls and runs them with LAPACK on the addressed memory."""

    def __init__(self):
        self.calls = []
        self.in_cupy_stream = False
        self.bound = {}   # handle -> stream

    def rec(self, name, **kw):
        if name in CUPY_BOUND:
            assert self.in_cupy_stream, f"{name} is CuPy-bound: it must run inside ctx.cupy_stream()"
        self.calls.append((name, kw))

    def names(self):
        return [c[0] for c in self.calls]

    # -- handles
    def install(self, mp):
        fake_handles(mp, self.calls, self.bound)
        for name in ("Xpotrf_bufferSize", "Xpotrf", "potrf_bufferSize", "potrf", "potrfBatched",
                     "Xpotrs", "potrs", "potrsBatched", "potri_bufferSize", "potri",
                     "Xtrtri_bufferSize", "Xtrtri"):
            mp.setattr(rcs, name, getattr(self, name))
        for name in ("trsm", "trsmBatched"):
            mp.setattr(rcb, name, getattr(self, name))

    # -- cuSOLVER
    def _potrf(self, t, uplo, n, A, lda, info):
        M = _mat(A, n, n, lda, NP[t])
        c, inf = lapack.get_lapack_funcs("potrf", dtype=NP[t])(M.copy(), lower=uplo == 0, clean=0)
        M[...] = c
        _set_info(info, inf)

    def Xpotrf_bufferSize(self, handle, params, uplo, n, cdt, A, lda, compute):
        self.rec("Xpotrf_bufferSize", uplo=uplo, n=n, lda=lda, A=A)
        return 8 * n + 24, 0

    def Xpotrf(self, handle, params, uplo, n, cdt, A, lda, compute, dwork, dbytes, hwork, hbytes,
               info):
        self.rec("Xpotrf", uplo=uplo, n=n, lda=lda, A=A, dbytes=dbytes, hwork=hwork,
                 hbytes=hbytes, handle=handle)
        assert cdt == compute
        self._potrf(cdt, uplo, n, A, lda, info)

    def potrf_bufferSize(self, t, handle, uplo, n, A, lda):
        self.rec("potrf_bufferSize", uplo=uplo, n=n, lda=lda)
        return 3 * n

    def potrf(self, t, handle, uplo, n, A, lda, work, lwork, info):
        self.rec("potrf", uplo=uplo, n=n, lda=lda, A=A, lwork=lwork)
        self._potrf(t, uplo, n, A, lda, info)

    def potrfBatched(self, t, handle, uplo, n, Aarray, lda, info, batch):
        self.rec("potrfBatched", uplo=uplo, n=n, lda=lda, batch=batch, A=_ptrs(Aarray, batch))
        for b, p in enumerate(_ptrs(Aarray, batch)):
            self._potrf(t, uplo, n, p, lda, info + 4 * b)
            # as on the H200 (cuSOLVER 12.0): potrfBatched with uplo = upper leaves the
            # mirror of the factor in the other triangle; the backend must zero it after
            if uplo == 1:
                M = _mat(p, n, n, lda, NP[t])
                M[...] = np.triu(M) + np.triu(M, 1).conj().T

    def _potrs(self, t, uplo, n, k, A, lda, B, ldb):
        C = _mat(A, n, n, lda, NP[t]).copy()
        X = _mat(B, n, k, ldb, NP[t])
        x, inf = lapack.get_lapack_funcs("potrs", dtype=NP[t])(C, X.copy(), lower=uplo == 0)
        assert inf == 0
        X[...] = x

    def Xpotrs(self, handle, params, uplo, n, k, cdtA, A, lda, cdtB, B, ldb, info):
        self.rec("Xpotrs", uplo=uplo, n=n, nrhs=k, lda=lda, ldb=ldb, A=A, B=B, info=info)
        assert cdtA == cdtB
        self._potrs(cdtA, uplo, n, k, A, lda, B, ldb)
        _set_info(info, 0)

    def potrs(self, t, handle, uplo, n, k, A, lda, B, ldb, info):
        self.rec("potrs", uplo=uplo, n=n, nrhs=k, lda=lda, ldb=ldb, A=A, B=B)
        self._potrs(t, uplo, n, k, A, lda, B, ldb)
        _set_info(info, 0)

    def potrsBatched(self, t, handle, uplo, n, k, Aarray, lda, Barray, ldb, info, batch):
        self.rec("potrsBatched", uplo=uplo, n=n, nrhs=k, lda=lda, ldb=ldb, batch=batch)
        for a, b in zip(_ptrs(Aarray, batch), _ptrs(Barray, batch)):
            self._potrs(t, uplo, n, k, a, lda, b, ldb)
        _set_info(info, 0)

    def potri_bufferSize(self, t, handle, uplo, n, A, lda):
        self.rec("potri_bufferSize", uplo=uplo, n=n, lda=lda)
        return 5 * n

    def potri(self, t, handle, uplo, n, A, lda, work, lwork, info):
        self.rec("potri", uplo=uplo, n=n, lda=lda, A=A, lwork=lwork)
        M = _mat(A, n, n, lda, NP[t])
        inv, inf = lapack.get_lapack_funcs("potri", dtype=NP[t])(M.copy(), lower=uplo == 0)
        M[...] = inv
        _set_info(info, inf)

    def Xtrtri_bufferSize(self, handle, uplo, diag, n, cdt, A, lda):
        self.rec("Xtrtri_bufferSize", uplo=uplo, diag=diag, n=n, lda=lda)
        return 16 * n, 0

    def Xtrtri(self, handle, uplo, diag, n, cdt, A, lda, dwork, dbytes, hwork, hbytes, info):
        self.rec("Xtrtri", uplo=uplo, diag=diag, n=n, lda=lda, A=A, dbytes=dbytes)
        M = _mat(A, n, n, lda, NP[cdt])
        inv, inf = lapack.get_lapack_funcs("trtri", dtype=NP[cdt])(
            M.copy(), lower=uplo == 0, unitdiag=diag == 1)
        M[...] = inv
        _set_info(info, inf)

    # -- cuBLAS
    def _trsm(self, t, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb):
        assert side == rcb.LEFT and diag == rcb.NON_UNIT
        a = _mem(alpha, 1, NP[t])[0]
        T = _mat(A, m, m, lda, NP[t])
        X = _mat(B, m, n, ldb, NP[t])
        X[...] = scipy.linalg.solve_triangular(T, a * X, lower=uplo == rcb.LOWER, trans=trans)

    def trsm(self, t, handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb):
        self.rec("trsm", uplo=uplo, trans=trans, m=m, n=n, lda=lda, ldb=ldb, A=A, B=B)
        self._trsm(t, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb)

    def trsmBatched(self, t, handle, side, uplo, trans, diag, m, n, alpha, Aarray, lda, Barray,
                    ldb, batch):
        self.rec("trsmBatched", uplo=uplo, trans=trans, m=m, n=n, lda=lda, ldb=ldb, batch=batch)
        for a, b in zip(_ptrs(Aarray, batch), _ptrs(Barray, batch)):
            self._trsm(t, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)


@pytest.fixture
def raw(monkeypatch):
    fake = FakeRaw()
    fake.install(monkeypatch)
    stream = {"ptr": 0}
    monkeypatch.setattr(_context, "current_stream_ptr", lambda idx: stream["ptr"])
    monkeypatch.setattr(torch.cuda, "current_device", lambda: -1)  # CPU tensors: get_device() == -1
    monkeypatch.setattr(cuda, "_current_device", lambda: -1)
    # the prologue kernel (copies, identity, info zeroed) carried out on host memory
    monkeypatch.setattr(cuda_copy, "current_device", lambda: -1)
    monkeypatch.setattr(cuda_copy, "_launch", lambda prep, values, params:
                        cuda_copy.run_on_host(values, prep.grid, prep.block, prep.itemsize))
    monkeypatch.setattr(_context, "device_bytes",
                        lambda idx, nbytes: torch.empty(max(int(nbytes), 1), dtype=torch.uint8))

    @contextlib.contextmanager
    def cupy_stream(self):
        assert fake.bound.get(self.solver) == self.stream == stream["ptr"]
        fake.in_cupy_stream = True
        try:
            yield
        finally:
            fake.in_cupy_stream = False

    monkeypatch.setattr(_context.GpuContext, "cupy_stream", cupy_stream)
    monkeypatch.setattr(_context._local, "ctxs", {}, raising=False)

    def mirror_triangle(w, upper, dt=None):   # the CuPy-launched kernel, on host memory
        assert fake.in_cupy_stream, "mirror_triangle launches on CuPy's current stream"
        fake.calls.append(("mirror_triangle", {"upper": upper}))
        x = w.mT   # the matrices the column-major storage holds
        tri = x.triu() if upper else x.tril()
        full = tri + (x.triu(1) if upper else x.tril(-1)).mH
        if full.is_complex():
            full.diagonal(dim1=-2, dim2=-1).imag.zero_()
        x.copy_(full)

    from cusolver_trace.backends import _mirror

    monkeypatch.setattr(_mirror, "mirror_triangle", mirror_triangle)
    fake.stream = stream
    return fake


def _spd(n, batch=(), dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    real = torch.float64 if dtype in (torch.float64, torch.complex128) else torch.float32
    G = torch.randn(*batch, n, n, generator=g, dtype=real)
    if dtype.is_complex:
        G = torch.complex(G, torch.randn(*batch, n, n, generator=g, dtype=real))
    return G @ G.mH / n + torch.eye(n, dtype=dtype)


DTYPES = [torch.float64, torch.complex64]


def _tol(dtype):
    return 1e-10 if dtype in (torch.float64, torch.complex128) else 2e-4


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("api", ["X", "legacy", "batched"])
def test_potrf_every_api(raw, dtype, upper, api):
    A = _spd(7, batch=(3,), dtype=dtype)
    before = A.clone()
    L, info = cuda.potrf(A, upper, api)
    assert torch.equal(A, before) and info.tolist() == [0, 0, 0] and info.dtype == torch.int32
    assert L.shape == A.shape and L.stride()[-2:] == (1, 7)   # column-major, as torch's
    assert torch.allclose(L, torch.linalg.cholesky(A, upper=upper), atol=_tol(dtype))
    name = {"X": "Xpotrf", "legacy": "potrf", "batched": "potrfBatched"}[api]
    calls = [kw for c, kw in raw.calls if c == name]
    assert len(calls) == (1 if api == "batched" else 3)
    assert all(kw["uplo"] == int(upper) and kw["n"] == 7 and kw["lda"] == 7 for kw in calls)
    step = 7 * 7 * L.element_size()
    ptrs = calls[0]["A"] if api == "batched" else [kw["A"] for kw in calls]
    assert [p - ptrs[0] for p in ptrs] == [0, step, 2 * step]        # one pointer per matrix
    if api == "X":
        assert all(kw["dbytes"] == 8 * 7 + 24 and kw["hwork"] == 0 and kw["hbytes"] == 0
                   for kw in calls)                                   # NULL host buffer, as torch
    if api == "legacy":
        assert all(kw["lwork"] == 21 for kw in calls)


def test_torchs_bufferSize_query_is_issued_every_call_like_torch(raw):
    A = _spd(6)
    for _ in range(3):
        cuda.potrf(A, False, "X")
    # torch's linalg.cholesky (batch 1) logs bufferSize + Xpotrf on every call; so does the replay
    assert raw.names() == ["cusolverDnSetStream", "cublasSetStream"] + \
        ["Xpotrf_bufferSize", "Xpotrf"] * 3
    assert all(kw["A"] == 0 for c, kw in raw.calls if c == "Xpotrf_bufferSize")  # A = NULL


def test_other_bufferSize_answers_asked_once_per_key(raw):
    A, A2 = _spd(6), _spd(9)
    for _ in range(3):
        cuda.potrf(A, False, "legacy")
    assert raw.names() == ["cusolverDnSetStream", "cublasSetStream", "potrf_bufferSize"] + \
        ["potrf"] * 3
    raw.calls.clear()
    cuda.potrf(A, True, "legacy")      # another uplo: asked again
    cuda.potrf(A2, False, "legacy")    # another n: asked again
    cuda.potrf(A, False, "legacy")     # known: not asked
    assert raw.names() == ["potrf_bufferSize", "potrf", "potrf_bufferSize", "potrf", "potrf"]
    raw.calls.clear()
    L = torch.linalg.cholesky(A)
    for _ in range(2):
        cuda.potri(L, False)
        cuda.trtri(L, False, False)
        cuda.trtri(L, False, True)    # another diag: its own answer
    assert raw.names() == ["potri_bufferSize", "potri", "mirror_triangle", "Xtrtri_bufferSize",
                           "Xtrtri", "Xtrtri_bufferSize", "Xtrtri", "potri", "mirror_triangle",
                           "Xtrtri", "Xtrtri"]


def test_stream_set_only_when_torchs_stream_changes(raw):
    A = _spd(6)
    cuda.potrf(A, False, "X")
    raw.calls.clear()
    cuda.potrf(A, False, "X")
    assert "cusolverDnSetStream" not in raw.names()
    raw.stream["ptr"] = 0xBEEF    # torch's current stream changed
    cuda.potrf(A, False, "X")
    cuda.potrf(A, False, "X")
    sets = [(c, kw["stream"]) for c, kw in raw.calls if c.endswith("SetStream")]
    assert sets == [("cusolverDnSetStream", 0xBEEF), ("cublasSetStream", 0xBEEF)]
    raw.calls.clear()
    raw.stream["ptr"] = 0          # and back
    cuda.potrs_identity(torch.linalg.cholesky(A), False, "X")
    assert raw.names()[:2] == ["cusolverDnSetStream", "cublasSetStream"]


def test_workspace_reused_per_stream_and_grown(raw):
    ctx = _context.bound(-1)
    cuda.potrf(_spd(6), False, "X")
    buf = ctx.scratch.buf
    cuda.potrf(_spd(6), False, "X")
    assert ctx.scratch.buf is buf                  # same stream, big enough: reused
    cuda.potrf(_spd(40), False, "X")
    assert ctx.scratch.buf is not buf and ctx.scratch.nbytes == 8 * 40 + 24   # grown
    big = ctx.scratch.buf
    raw.stream["ptr"] = 77
    cuda.potrf(_spd(6), False, "X")
    assert ctx.scratch.buf is not big and ctx.scratch.stream == 77   # another stream: its own


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("api", ["X", "legacy", "batched"])
def test_potrs_every_api(raw, dtype, upper, api):
    A = _spd(5, batch=(2,), dtype=dtype, seed=1)
    L = torch.linalg.cholesky(A, upper=upper)
    k = 1 if api == "batched" else 3
    B = torch.randn(2, 5, k, dtype=torch.float64).to(dtype)
    X, info = cuda.potrs(L, B, upper, api)
    assert X.shape == B.shape and info.tolist() == [0, 0]
    assert torch.allclose(X, torch.cholesky_solve(B, L, upper=upper), atol=_tol(dtype))
    name = {"X": "Xpotrs", "legacy": "potrs", "batched": "potrsBatched"}[api]
    calls = [kw for c, kw in raw.calls if c == name]
    assert all(kw["n"] == 5 and kw["nrhs"] == k and kw["lda"] == 5 and kw["ldb"] == 5 for kw in calls)
    if api != "batched":
        isz = L.element_size()
        assert [kw["A"] - calls[0]["A"] for kw in calls] == [0, 25 * isz]
        assert [kw["B"] - calls[0]["B"] for kw in calls] == [0, 5 * k * isz]


def test_potrs_batched_needs_one_rhs(raw):
    L = torch.linalg.cholesky(_spd(4, batch=(2,)))
    with pytest.raises(ValueError, match="nrhs = 1 only"):
        cuda.potrs(L, torch.ones(2, 4, 2, dtype=L.dtype), False, "batched")
    assert raw.calls == []


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_potrs_identity_is_torchs_cholesky_inverse(raw, upper, batch):
    A = _spd(6, batch=batch, dtype=torch.complex128, seed=2)
    L = torch.linalg.cholesky(A, upper=upper)
    X, info = cuda.potrs_identity(L, upper, "X")
    assert X.shape == A.shape
    assert torch.allclose(X, torch.cholesky_inverse(L, upper=upper), atol=1e-10)
    xs = [kw for c, kw in raw.calls if c == "Xpotrs"]
    assert len(xs) == max(1, int(np.prod(batch))) and all(kw["nrhs"] == 6 for kw in xs)
    # routines' public entry point, unchecked (the check kernel needs a GPU)
    assert torch.allclose(routines.cholesky_inverse(L, upper, check=False),
                          torch.cholesky_inverse(L, upper=upper), atol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_potri_and_trtri(raw, dtype, upper):
    A = _spd(6, batch=(2,), dtype=dtype, seed=3)
    L = torch.linalg.cholesky(A, upper=upper)
    Ainv, info = cuda.potri(L, upper)
    assert info.tolist() == [0, 0]
    assert torch.allclose(Ainv, torch.linalg.inv(A), atol=10 * _tol(dtype))
    assert [kw["lwork"] for c, kw in raw.calls if c == "potri"] == [30, 30]
    for unit in (False, True):
        T, info = cuda.trtri(L, upper, unit)
        F = (L.triu() if upper else L.tril()).clone()
        if unit:
            F.diagonal(dim1=-2, dim2=-1).fill_(1)
        assert torch.allclose(T @ F, torch.eye(6, dtype=dtype).expand(2, 6, 6), atol=10 * _tol(dtype))
    assert [kw["diag"] for c, kw in raw.calls if c == "Xtrtri_bufferSize"] == [0, 1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("batched", [False, True])
def test_trsm_paths(raw, dtype, upper, batched):
    A = _spd(5, batch=(3,), dtype=dtype, seed=4)
    L = torch.linalg.cholesky(A, upper=upper)
    X, info = cuda.trsm_identity_inverse(L, upper, batched)
    assert info.tolist() == [0, 0, 0]
    assert torch.allclose(X, torch.linalg.inv(A), atol=10 * _tol(dtype))
    B = torch.randn(3, 5, 2, dtype=torch.float64).to(dtype)
    X, _ = cuda.trsm_solve(L, B, upper, batched)
    assert torch.allclose(X, torch.cholesky_solve(B, L, upper=upper), atol=10 * _tol(dtype))
    name = "trsmBatched" if batched else "trsm"
    ops = [kw["trans"] for c, kw in raw.calls if c == name]
    c_op = rcb.OP_C if dtype.is_complex else rcb.OP_T
    first = (c_op, rcb.OP_N) if upper else (rcb.OP_N, c_op)
    assert ops[:2] == list(first)


def test_inputs_never_written_and_views_materialized(raw):
    A = _spd(5, batch=(2,), dtype=torch.complex128, seed=5)
    L = torch.linalg.cholesky(A)
    Lc = L.conj()            # a lazily conjugated view
    before = L.clone()
    X, _ = cuda.potrs_identity(Lc, False, "X")
    assert torch.equal(L, before)
    assert torch.allclose(X, torch.cholesky_inverse(Lc.resolve_conj()), atol=1e-10)
    Lf, _ = cuda.potrf(A.mT, False, "X")   # a transposed (column-major) input
    assert torch.allclose(Lf, torch.linalg.cholesky(A.mT), atol=1e-10)


# --------------------------------------------------------------------------- the check path
class FakeCheckState:
    made = 0

    def __init__(self, device):
        FakeCheckState.made += 1
        self.counter = torch.zeros(1, dtype=torch.int64)
        self.counter_ptr = self.counter.data_ptr()
        self.acc = _context.Scratch(lambda nbytes: torch.empty(nbytes, dtype=torch.uint8))
        self.word = ctypes.c_int32(0)   # as CheckState's: an int32 read through .value
        self.word_ptr = ctypes.addressof(self.word)

    def close(self):
        pass


def _fake_kernel(launches):
    """The check kernel's addressing, in NumPy: strides in real elements, as the kernel reads."""
    def fn(grid, block, args, stream=None):
        (param,) = args  # one struct by value: a size-1 NumPy view of 14 int64, as CuPy passes
        assert isinstance(param, np.ndarray) and param.size == 1 and param.nbytes == 14 * 8
        fields = dict(zip(cuda._STATUS_FIELDS, param.view(np.int64).tolist()))
        (Lp, lb, lr, lc, Xp, xb, xr, xc, n, upper, info, acc, counter, summary) = (
            fields[k] for k in ("L", "lb", "lr", "lc", "X", "xb", "xr", "xc", "n", "upper",
                                "info", "acc", "counter", "summary"))
        launches.append({"grid": grid, "stream": stream.ptr, "summary": summary,
                         "counter": counter})
        n, upper = int(n), bool(upper)
        batch = grid[0]
        real = fn.real
        nc = 2 if fn.complex else 1

        def read(p, b, i, j, sb, sr, sc):
            off = b * sb + i * sr + j * sc
            v = _mem(p + off * real().itemsize, nc, real)
            return complex(v[0], v[1]) if nc == 2 else float(v[0])

        rec = _mem(acc, 3 * batch, np.int32).reshape(batch, 3)
        for b in range(batch):
            zero, flags = 0, 0
            for j in range(n):
                for i in range(n):
                    if (i <= j) if upper else (i >= j):
                        v = read(Lp, b, i, j, lb, lr, lc)
                        if not np.isfinite(v):
                            flags |= 1
                        elif i == j and v == 0:
                            zero = max(zero, n - i)
                    if not np.isfinite(read(Xp, b, i, j, xb, xr, xc)):
                        flags |= 2
            rec[b] = (zero, flags, _mem(info + 4 * b, 1, np.int32)[0] if info else 0)
        if summary:
            _mem(summary, 1, np.int32)[0] = int(rec.any())
    return fn


@pytest.fixture
def kernel(raw, monkeypatch):
    from cusolver_trace.raw import _load

    launches, syncs = [], []
    fn = _fake_kernel(launches)

    def get(idx, prefix):
        fn.real = {"s": np.float32, "d": np.float64, "c": np.float32, "z": np.float64}[prefix]
        fn.complex = prefix in "cz"
        return fn

    class Runtime:
        @staticmethod
        def streamSynchronize(ptr):
            syncs.append(ptr)
            if getattr(Runtime, "fail", False):
                raise KeyboardInterrupt

    class FakeCupy:
        class cuda:
            runtime = Runtime

    monkeypatch.setattr(cuda, "_status_function", get)
    # the driver launch of the check kernel, as the fake kernel above: the struct by value
    def launch(idx, prefix, grid, args, stream):
        import ctypes

        # the kernelParams array of the driver launch points at the struct filled
        assert ctypes.c_void_p.from_address(args.params_ptr).value == args.values.ctypes.data
        get(idx, prefix)(grid, (cuda._THREADS,), (args.param,), stream=_context.StreamRef(stream))

    monkeypatch.setattr(cuda, "_launch_status", launch)
    monkeypatch.setattr(cuda, "CheckState", FakeCheckState)
    monkeypatch.setattr(cuda, "current_stream_ptr", lambda idx: raw.stream["ptr"])
    monkeypatch.setattr(_load, "cupy", lambda: FakeCupy)
    return launches, syncs, Runtime


def _bad_case(dtype, upper, batch=3, n=6):
    from cusolver_trace.backends import cpu as cpub

    L = torch.linalg.cholesky(_spd(n, batch=(batch,), dtype=dtype), upper=upper)
    X = torch.cholesky_inverse(L, upper=upper)
    Lbad, Xbad = L.clone(), X.clone()
    Lbad[1].diagonal()[2] = 0
    Lbad[batch - 1, (n - 1) if not upper else 0, 0 if not upper else (n - 1)] = float("nan")
    Xbad[0, 1, 2] = float("inf")
    info = torch.zeros(batch, dtype=torch.int32)
    info[-1] = -3
    ref = cpub.inverse_status(Lbad.numpy(), Xbad.numpy(), upper, info.numpy())
    return L, X, Lbad, Xbad, info, ref


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128, torch.float32])
@pytest.mark.parametrize("upper", [False, True])
def test_check_record_matches_the_reference(kernel, dtype, upper):
    launches, syncs, _ = kernel
    L, X, Lbad, Xbad, info, ref = _bad_case(dtype, upper)
    rec = cuda.inverse_status(Lbad, Xbad, upper, info)
    assert np.array_equal(rec.numpy(), ref)
    assert launches[-1]["summary"] == 0 and syncs == []          # no sync, no summary word
    # strided factor, two batch dimensions
    got = cuda.inverse_status(Lbad.mT.contiguous().mT.reshape(3, 1, 6, 6), Xbad, upper, info)
    assert np.array_equal(got.numpy(), ref)


def test_inverse_check_one_sync_and_details_only_on_failure(kernel):
    launches, syncs, _ = kernel
    L, X, Lbad, Xbad, info, ref = _bad_case(torch.float64, False)
    FakeCheckState.made = 0
    assert cuda.inverse_check(L, X, False, None) is None
    assert syncs == [0] and launches[-1]["summary"] != 0 and launches[-1]["counter"] != 0
    got = cuda.inverse_check(Lbad, Xbad, False, info)
    assert np.array_equal(got, ref)
    assert cuda.inverse_check(L, X, False, None) is None          # clean again right after
    assert len(syncs) == 3 and FakeCheckState.made == 1          # the state is made once
    only_info = torch.tensor([0, 4, 0], dtype=torch.int32)
    got = cuda.inverse_check(L, X, False, only_info)
    assert got is not None and got[:, 2].tolist() == [0, 4, 0] and not got[:, :2].any()


def test_the_checks_wait_runs_deferred_host_work_after_the_launch_before_the_sync(kernel):
    """Host work deferred to the next wait (a kernel's ask) runs in the checked call after its
    check kernel is launched and before the synchronization, once; with or without the
    host-mapped word."""
    from cusolver_trace.backends import _waiting

    launches, syncs, _ = kernel
    L, X, *_ = _bad_case(torch.float64, False)
    seen = []
    for _ in range(2):
        _waiting.defer(lambda: seen.append((len(launches), len(syncs))))
        assert cuda.inverse_check(L, X, False, None) is None
        _context.context(-1).check_state.word = None     # the second call: no mapped word
    assert seen == [(1, 0), (2, 1)] and len(syncs) == 1 and not _waiting.PENDING


def test_inverse_check_syncs_torchs_current_stream(kernel, raw):
    launches, syncs, _ = kernel
    L, X, *_ = _bad_case(torch.float64, True)
    raw.stream["ptr"] = 0xC0FFEE
    assert cuda.inverse_check(L, X, True, None) is None
    assert syncs == [0xC0FFEE] and launches[-1]["stream"] == 0xC0FFEE


def test_inverse_check_without_a_mapped_word_copies_the_record(kernel):
    launches, syncs, _ = kernel
    L, X, Lbad, Xbad, info, ref = _bad_case(torch.complex128, False)
    cuda.inverse_check(L, X, False, None)
    _context.context(-1).check_state.word = None                 # the driver gave no mapping
    assert cuda.inverse_check(L, X, False, None) is None
    assert np.array_equal(cuda.inverse_check(Lbad, Xbad, False, info), ref)
    assert launches[-1]["summary"] == 0 and launches[-1]["counter"] == 0
    assert len(syncs) == 1                                       # only the first call's


def test_an_interrupted_check_never_reuses_its_counter(kernel):
    launches, syncs, runtime = kernel
    L, X, *_ = _bad_case(torch.float64, False)
    cuda.inverse_check(L, X, False, None)
    first = _context.context(-1).check_state
    runtime.fail = True
    with pytest.raises(KeyboardInterrupt):
        cuda.inverse_check(L, X, False, None)
    runtime.fail = False
    assert _context.context(-1).check_state is None
    assert cuda.inverse_check(L, X, False, None) is None
    assert _context.context(-1).check_state is not first


def test_a_context_is_freed_without_the_cycle_collector(raw):
    """No reference cycle through a context: an ended thread's workspace and check state are
    returned to the allocator when its contexts go, not at some later garbage collection."""
    import gc
    import weakref

    gc.disable()
    try:
        ctx = _context.GpuContext(-1)
        ctx.bind(5)
        ctx.scratch.get(64, stream=5)
        ref = weakref.ref(ctx)
        buf = weakref.ref(ctx.scratch.buf) if hasattr(ctx.scratch.buf, "__weakref__") else None
        del ctx
        assert ref() is None
        assert buf is None or buf() is None
    finally:
        gc.enable()


def test_the_kernel_struct_is_made_from_the_field_list():
    src = cuda._STATUS_SRC
    assert src.startswith("struct StatusArgs { long long " + ", ".join(cuda._STATUS_FIELDS) + "; };")
    for f in cuda._STATUS_FIELDS:
        assert f"a.{f}" in src  # every field reaches the kernel
    assert len(cuda._STATUS_FIELDS) == len(set(cuda._STATUS_FIELDS)) == 14


def test_inverse_check_reuses_its_record_buffer_per_stream(kernel, raw):
    launches, syncs, _ = kernel
    L, X, Lbad, Xbad, info, ref = _bad_case(torch.float64, False)
    cuda.inverse_check(L, X, False, None)
    state = _context.context(-1).check_state
    buf = state.acc.buf
    assert cuda.inverse_check(L, X, False, None) is None and state.acc.buf is buf
    assert np.array_equal(cuda.inverse_check(Lbad, Xbad, False, info), ref)   # read from it
    raw.stream["ptr"] = 99
    cuda.inverse_check(L, X, False, None)
    assert state.acc.buf is not buf and state.acc.stream == 99


# --------------------------------------------------------------------------- the triangle copy
def test_gemm_lauum_takes_the_triangle_copy_only_for_one_large_column_major_matrix():
    from cusolver_trace.backends import cuda_plans

    n = cuda_plans.TRIANGLE_COPY_MIN_N
    col = torch.empty(n, n).mT                                     # c.mT contiguous
    assert cuda_plans._triangle_copy(col)
    assert cuda_plans._triangle_copy(torch.empty(1, n, n).mT)
    assert not cuda_plans._triangle_copy(torch.empty(n, n))         # row-major
    assert not cuda_plans._triangle_copy(torch.empty(2, n, n).mT)   # a batch
    assert not cuda_plans._triangle_copy(torch.empty(n - 1, n - 1).mT)
    assert not cuda_plans._triangle_copy(torch.empty(n, n, dtype=torch.complex64).mT.conj())
