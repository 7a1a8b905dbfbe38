"""The LU family's CUDA backend (:mod:`cusolver_trace.backends.cuda_lu`) on the CPU, through an
emulated raw layer, against torch 2.11's real API logs from the H200.

As in tests/test_cuda_backend_calls.py, the raw cuSOLVER / cuBLAS functions are replaced by a
recorder that runs the same operation with LAPACK (scipy) on the memory the pointers address
(CPU tensors have real host addresses), and torch's CUDA-only calls by stand-ins. So every
backend routine runs end to end without a GPU, and what reaches the library is pinned:

* against the log: for each section of ``tests/data/h200-torch2.11-cu130/lu-eigh/
  trace-lu-sections.log.gz`` (copied from ``../shared/fixtures/h200-torch2.11-cu130/lu-eigh/``,
  sections listed in ``sections.txt`` there), the backend is called on inputs of the section's
  shape and dtype with the entry point torch used there, and the recorded calls must equal the
  logged ones: the same routines in the same order (torch's cuSOLVER-internal ``cusolverDnX*``
  records and setup calls left out), every non-pointer argument equal (sizes, ``lda`` /
  ``ldb``, ``trans`` / ``uplo`` / ``side`` / ``diag``, batch counts), the same NULL pointers
  (``IPIV`` / ``P`` for ``pivot=False``), and the same offsets between the pointers of one
  buffer across the calls of a section (one matrix, one pivot row, one info entry per call);
* the results, against scipy / torch on the CPU.

The bits on the GPU are settled by tests/test_gpu_lu_backend.py (``gpu`` marked).
"""
from __future__ import annotations

import contextlib
import ctypes
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.linalg.lapack as lapack
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cuda_backend_calls import fake_handles

from cusolver_trace.backends import _context, cuda, cuda_lu
from cusolver_trace.raw import cublas as rcb
from cusolver_trace.raw import cusolver as rcs
from cusolver_trace.tracing.logparse import Pointer, load_log, render_enum

LOG = Path(__file__).parent / "data" / "h200-torch2.11-cu130" / "lu-eigh" / "trace-lu-sections.log.gz"
NP = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128,
      0: np.float32, 1: np.float64, 4: np.complex64, 5: np.complex128}
DT = {"float32": torch.float32, "float64": torch.float64, "complex64": torch.complex64,
      "complex128": torch.complex128}


def _mem(ptr, count, dtype):
    dtype = np.dtype(dtype)
    return np.frombuffer((ctypes.c_char * (count * dtype.itemsize)).from_address(ptr), dtype=dtype)


def _mat(ptr, rows, cols, ld, dtype):
    """The column-major rows x cols matrix at ``ptr`` with leading dimension ``ld`` (a view)."""
    return _mem(ptr, ld * cols, dtype).reshape(cols, ld).T[:rows, :]


def _ptrs(ptr, batch):
    return [int(p) for p in _mem(ptr, batch, np.int64)]


def _set_int(ptr, value):
    _mem(ptr, 1, np.int32)[0] = value


def getrf_nopiv(a):
    """Unpivoted right-looking LU (what getrf with ipiv = NULL computes): a zero pivot gives
    info = its 1-based index and inf / NaN below it, as cuSOLVER's."""
    a = a.copy()
    m, n = a.shape
    info = 0
    with np.errstate(all="ignore"):
        for j in range(min(m, n)):
            if a[j, j] == 0 and info == 0:
                info = j + 1
            a[j + 1:, j] /= a[j, j]
            a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, info


class FakeRaw:
    """Records raw calls, with the argument names of the API log, and runs them with LAPACK."""

    CUPY = {"getrf_bufferSize", "getrf", "getrs", "getrfBatched", "getrsBatched", "trsm_v2",
            "trsmBatched"}

    def __init__(self):
        self.calls = []
        self.in_cupy_stream = False
        self.bound = {}

    def rec(self, t, base, **args):
        lib = "cublas" if base in ("getrfBatched", "getrsBatched", "trsm_v2", "trsmBatched") \
            else "cusolverDn"
        if base in self.CUPY:
            assert self.in_cupy_stream, f"{base} is CuPy-bound: it must run inside ctx.cupy_stream()"
        for k in ("trans", "uplo", "side", "diag"):
            if k in args:
                args[k] = render_enum(k, args[k])
        self.calls.append((f"{lib}{t.upper()}{base}", args))

    def names(self):
        return [c[0] for c in self.calls if not c[0].endswith("SetStream")]

    def install(self, mp):
        fake_handles(mp, self.calls, self.bound)
        for name in ("getrf_bufferSize", "getrf", "getrs", "Xgetrf_bufferSize", "Xgetrf",
                     "Xgetrs"):
            mp.setattr(rcs, name, getattr(self, name))
        for name in ("getrfBatched", "getrsBatched", "trsm", "trsmBatched"):
            mp.setattr(rcb, name, getattr(self, name))

    # -- the operations, on host memory
    @staticmethod
    def _getrf(dtype, m, n, A, lda, ipiv, ipiv_dtype, info):
        M = _mat(A, m, n, lda, dtype)
        k = min(m, n)
        if ipiv:
            lu, piv, inf = lapack.get_lapack_funcs("getrf", dtype=dtype)(M.copy())
            _mem(ipiv, k, ipiv_dtype)[:] = piv + 1
        else:
            lu, inf = getrf_nopiv(M)
        M[...] = lu
        _set_int(info, inf)

    @staticmethod
    def _getrs(dtype, trans, n, k, A, lda, ipiv, ipiv_dtype, B, ldb):
        LU = _mat(A, n, n, lda, dtype).copy()
        X = _mat(B, n, k, ldb, dtype)
        piv = _mem(ipiv, n, ipiv_dtype).astype(np.int32) - 1
        x, inf = lapack.get_lapack_funcs("getrs", dtype=dtype)(LU, piv, X.copy(), trans=trans)
        assert inf == 0
        X[...] = x

    # -- cuSOLVER
    def getrf_bufferSize(self, t, handle, m, n, A, lda):
        self.rec(t, "getrf_bufferSize", M=m, N=n, A=A, LDA=lda)
        return 7 * n + 3

    def getrf(self, t, handle, m, n, A, lda, work, ipiv, info):
        self.rec(t, "getrf", M=m, N=n, A=A, LDA=lda, d_work=work, IPIV=ipiv, d_info=info)
        self._getrf(NP[t], m, n, A, lda, ipiv, np.int32, info)

    def getrs(self, t, handle, trans, n, k, A, lda, ipiv, B, ldb, info):
        self.rec(t, "getrs", trans=trans, n=n, nrhs=k, A=A, lda=lda, devIpiv=ipiv, B=B, ldb=ldb,
                 info=info)
        self._getrs(NP[t], trans, n, k, A, lda, ipiv, np.int32, B, ldb)
        _set_int(info, 0)

    def Xgetrf_bufferSize(self, handle, params, m, n, cdt, A, lda, compute):
        self.rec("", "Xgetrf_bufferSize", m=m, n=n, A=A, lda=lda, dataTypeA=cdt,
                 computeType=compute)
        return 64 * n, 0

    def Xgetrf(self, handle, params, m, n, cdt, A, lda, ipiv, compute, dwork, dbytes, hwork,
               hbytes, info):
        self.rec("", "Xgetrf", m=m, n=n, A=A, lda=lda, ipiv=ipiv, info=info, params=params,
                 workspaceInBytesOnDevice=dbytes, bufferOnHost=hwork, workspaceInBytesOnHost=hbytes)
        assert cdt == compute
        self._getrf(NP[cdt], m, n, A, lda, ipiv, np.int64, info)

    def Xgetrs(self, handle, params, trans, n, k, cdtA, A, lda, ipiv, cdtB, B, ldb, info):
        self.rec("", "Xgetrs", trans=trans, n=n, nrhs=k, A=A, lda=lda, ipiv=ipiv, B=B, ldb=ldb,
                 info=info)
        assert cdtA == cdtB
        self._getrs(NP[cdtA], trans, n, k, A, lda, ipiv, np.int64, B, ldb)
        _set_int(info, 0)

    # -- cuBLAS
    def getrfBatched(self, t, handle, n, Aarray, lda, P, INFO, batch):
        self.rec(t, "getrfBatched", n=n, Aarray=Aarray, lda=lda, P=P, INFO=INFO, batchSize=batch)
        for i, a in enumerate(_ptrs(Aarray, batch)):
            self._getrf(NP[t], n, n, a, lda, P + 4 * n * i if P else 0, np.int32, INFO + 4 * i)

    def getrsBatched(self, t, handle, trans, n, k, Aarray, lda, ipiv, Barray, ldb, info, batch):
        self.rec(t, "getrsBatched", trans=trans, n=n, nrhs=k, Aarray=Aarray, lda=lda,
                 devIpiv=ipiv, Barray=Barray, ldb=ldb, info=info, batchSize=batch,
                 pointers=(_ptrs(Aarray, batch), _ptrs(Barray, batch)))
        for i, (a, b) in enumerate(zip(_ptrs(Aarray, batch), _ptrs(Barray, batch))):
            self._getrs(NP[t], trans, n, k, a, lda, ipiv + 4 * n * i, np.int32, b, ldb)
        _set_int(info, 0)   # a host int

    def _trsm(self, t, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb):
        assert side == rcb.LEFT
        a = _mem(alpha, 1, NP[t])[0]
        T = _mat(A, m, m, lda, NP[t])
        X = _mat(B, m, n, ldb, NP[t])
        X[...] = scipy.linalg.solve_triangular(T, a * X, lower=uplo == rcb.LOWER, trans=trans,
                                               unit_diagonal=diag == rcb.UNIT)

    def trsm(self, t, handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb):
        self.rec(t, "trsm_v2", side=side, uplo=uplo, trans=trans, diag=diag, m=m, n=n,
                 alpha=alpha, A=A, lda=lda, B=B, ldb=ldb)
        self._trsm(t, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb)

    def trsmBatched(self, t, handle, side, uplo, trans, diag, m, n, alpha, Aarray, lda, Barray,
                    ldb, batch):
        self.rec(t, "trsmBatched", side=side, uplo=uplo, trans=trans, diag=diag, m=m, n=n,
                 alpha=alpha, A=Aarray, lda=lda, B=Barray, ldb=ldb, batchCount=batch,
                 pointers=(_ptrs(Aarray, batch), _ptrs(Barray, batch)))
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
    monkeypatch.setattr(_context, "device_bytes",
                        lambda idx, nbytes: torch.empty(max(int(nbytes), 1), dtype=torch.uint8))

    @contextlib.contextmanager
    def cupy_stream(self):
        assert fake.bound.get(self.solver) == self.stream == stream["ptr"]
        assert fake.bound.get(self.blas) == stream["ptr"]
        fake.in_cupy_stream = True
        try:
            yield
        finally:
            fake.in_cupy_stream = False

    monkeypatch.setattr(_context.GpuContext, "cupy_stream", cupy_stream)
    monkeypatch.setattr(_context._local, "ctxs", {}, raising=False)
    fake.stream = stream
    return fake


# --------------------------------------------------------------------------- the log
# pointer arguments: the buffer each one addresses ("role"); offsets are compared within a role
# across the calls of a section. Not compared: handles, workspaces (allocator-dependent),
# host output pointers (lwork), alpha, and the pointer arrays of the batched routines (one
# buffer made per call: only NULL-ness is compared there).
_ROLE = {"A": "LU", "B": "B", "IPIV": "piv", "devIpiv": "piv", "d_info": "info_f", "info": "info_s"}
_BATCHED = ("getrfBatched", "getrsBatched", "trsmBatched")
_IGNORED = {"handle", "d_work", "lwork", "alpha", "pointers", "deterministicMode"}  # the last: logged, no argument


def normalize(calls):
    """``[(function, values, nulls, offsets)]`` of a section's calls (recorded or logged)."""
    first: dict = {}
    out = []
    for fn, args in calls:
        values, nulls, offsets = {}, {}, {}
        batched = fn.endswith(_BATCHED)
        for k, v in args.items():
            if k in _IGNORED:
                continue
            if isinstance(v, Pointer) or (k in ("A", "B", "IPIV", "devIpiv", "d_info", "info",
                                                "Aarray", "Barray", "P", "INFO")):
                p = int(v, 16) if isinstance(v, str) else int(v)
                nulls[k] = p == 0
                role = None if batched else _ROLE.get(k)
                if role is not None and p:
                    offsets[k] = p - first.setdefault(role, p)
            else:
                values[k] = v
        out.append((fn, values, nulls, offsets))
    return out


@pytest.fixture(scope="module")
def log():
    return load_log(LOG)


def logged(log, label):
    """The section's calls as torch issued them: setup calls and cuSOLVER's own calls of its
    64-bit API (``cusolverDnDgetrf`` logs a nested ``cusolverDnXgetrf``) left out."""
    return [(c.function, dict(c.args)) for c in log.section(label).calls
            if c.kind != "setup" and not c.function.startswith("cusolverDnX")]


def recorded(raw):
    return [c for c in raw.calls if not c[0].endswith("SetStream")]


_LABEL = re.compile(r"^(?P<op>\S+) (?:(?P<flags>.*?) )?dtype=(?P<dtype>\w+) n=(?P<n>\d+) "
                    r"batch=(?P<batch>\d+) nrhs=(?P<nrhs>\d+) preferred=(?P<pref>\w+)$")


def parse_label(label):
    m = _LABEL.match(label)
    flags = dict(f.split("=") for f in (m["flags"] or "").split())
    return (m["op"], {k: v == "True" for k, v in flags.items()}, DT[m["dtype"]], int(m["n"]),
            int(m["batch"]), int(m["nrhs"]))


def _general(n, batch, dtype, seed=0):
    """A well-conditioned general matrix, the capture's kind: randn + n I."""
    g = torch.Generator().manual_seed(seed)
    real = torch.float64 if dtype in (torch.float64, torch.complex128) else torch.float32
    shape = (n, n) if batch == 1 else (batch, n, n)
    G = torch.randn(*shape, generator=g, dtype=real)
    if dtype.is_complex:
        G = torch.complex(G, torch.randn(*shape, generator=g, dtype=real))
    return G + n * torch.eye(n, dtype=dtype)


def _rhs(shape, dtype, seed=1):
    g = torch.Generator().manual_seed(seed)
    real = torch.float64 if dtype in (torch.float64, torch.complex128) else torch.float32
    B = torch.randn(*shape, generator=g, dtype=real)
    return torch.complex(B, torch.randn(*shape, generator=g, dtype=real)) if dtype.is_complex else B


def scipy_lu(A):
    """scipy's ``lu_factor`` of each matrix of A (..., m, n) (the LAPACK the fake runs):
    ``(LU, 1-based int32 pivots)`` as torch tensors."""
    a = A.resolve_conj().resolve_neg().numpy()
    lus, pivs = [], []
    for M in a.reshape(-1, *a.shape[-2:]):
        lu, p = scipy.linalg.lu_factor(M)
        lus.append(lu)
        pivs.append(p + 1)
    shape = a.shape
    return (torch.from_numpy(np.stack(lus).reshape(shape)),
            torch.from_numpy(np.stack(pivs).astype(np.int32).reshape(*shape[:-2], -1)))


def _tol(dtype):
    return 1e-9 if dtype in (torch.float64, torch.complex128) else 2e-3


def _solve_api(calls):
    names = {fn for fn, _ in calls}
    if any(f.startswith("cusolverDn") and f.endswith("getrs") for f in names):
        return "legacy"
    if any(f.endswith("getrsBatched") for f in names):
        return "batched"
    return "triangular"


def _factor_api(calls):
    return "batched" if any(fn.endswith("getrfBatched") for fn, _ in calls) else "legacy"


def _lu_solve(api, LU, piv, B, adjoint, left):
    if api == "triangular":
        return cuda_lu.lu_solve_triangular(LU, piv, B, adjoint, left=left)
    return cuda_lu.getrs(LU, piv, B, adjoint, api, left=left)[0]


def _sections(log_path=LOG):
    return [s for s in load_log(log_path).sections]


SECTIONS = _sections()


def test_the_copied_sections_are_the_listed_ones():
    listed = [s.strip() for s in (LOG.parent / "sections.txt").read_text().splitlines() if s.strip()]
    assert sorted(listed) == sorted(SECTIONS) and len(SECTIONS) == 41


@pytest.mark.parametrize("label", SECTIONS)
def test_calls_equal_torchs_logged_calls(raw, log, label):
    """Each section: the backend, called as torch called the library there, makes the same
    library calls with the same arguments, and computes the right thing."""
    op, flags, dtype, n, batch, nrhs = parse_label(label)
    expected = logged(log, label)
    A = _general(n, batch, dtype)
    if op == "linalg.lu_factor":
        pivot = flags["pivot"]
        LU, piv, info = cuda_lu.getrf(A, pivot, _factor_api(expected))
        assert info.tolist() == [0] * batch
        if pivot:
            ref_lu, ref_piv = scipy_lu(A)
            assert torch.equal(LU, ref_lu) and torch.equal(piv, ref_piv)
        else:
            assert torch.equal(piv, torch.arange(1, n + 1, dtype=torch.int32).expand(piv.shape))
            L, U = LU.tril(-1) + torch.eye(n, dtype=dtype), LU.triu()
            assert torch.allclose(L @ U, A, atol=_tol(dtype) * n * n)
    elif op == "linalg.lu_solve":
        LU, piv = torch.linalg.lu_factor(A)
        B = _rhs((*A.shape[:-1], nrhs), dtype)
        left = flags["left"]
        adjoint = flags.get("adjoint", False)
        X = _lu_solve(_solve_api(expected), LU, piv, B if left else B.mT, adjoint, left)
        ref = torch.linalg.lu_solve(LU, piv, B if left else B.mT, left=left, adjoint=adjoint)
        assert torch.allclose(X, ref, atol=_tol(dtype) * n)
    elif op in ("linalg.inv", "linalg.solve"):
        fcalls = [c for c in expected if "getrf" in c[0]]
        LU, piv, info = cuda_lu.getrf(A, True, _factor_api(fcalls))
        B = (torch.eye(n, dtype=dtype).expand(A.shape).contiguous() if op == "linalg.inv"
             else _rhs((*A.shape[:-1], nrhs), dtype))
        X = _lu_solve(_solve_api(expected), LU, piv, B, False, True)
        ref = torch.linalg.inv(A) if op == "linalg.inv" else torch.linalg.solve(A, B)
        assert torch.allclose(X, ref, atol=_tol(dtype) * n)
    got = normalize(recorded(raw))
    want = normalize(expected)
    assert [g[0] for g in got] == [w[0] for w in want]
    for i, (g, w) in enumerate(zip(got, want)):
        assert g[1] == w[1], (i, g[0], "values", g[1], w[1])
        assert g[2] == w[2], (i, g[0], "NULL pointers", g[2], w[2])
        assert g[3] == w[3], (i, g[0], "pointer offsets", g[3], w[3])


def test_the_comparison_can_fail(raw, log):
    """A replay with another trans, a missing per-matrix bufferSize or a non-NULL IPIV differs."""
    label = "linalg.lu_solve left=True adjoint=True dtype=float64 n=33 batch=1 nrhs=3 preferred=default"
    A = _general(33, 1, torch.float64)
    LU, piv = torch.linalg.lu_factor(A)
    cuda_lu.getrs(LU, piv, _rhs((33, 3), torch.float64), False, "legacy")   # adjoint dropped
    assert normalize(recorded(raw)) != normalize(logged(log, label))
    raw.calls.clear()
    label = "linalg.lu_factor pivot=False dtype=float64 n=33 batch=1 nrhs=3 preferred=default"
    cuda_lu.getrf(A, True, "legacy")                                         # pivoting
    got, want = normalize(recorded(raw)), normalize(logged(log, label))
    assert [g[0] for g in got] == [w[0] for w in want] and got != want
    raw.calls.clear()
    label = "linalg.lu_factor pivot=True dtype=float64 n=1024 batch=4 nrhs=3 preferred=cusolver"
    cuda_lu.getrf(_general(64, 4, torch.float64), True, "legacy")            # another n
    assert normalize(recorded(raw)) != normalize(logged(log, label))


# --------------------------------------------------------------------------- getrf details
DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("api", cuda_lu.APIS)
def test_getrf_every_api(raw, dtype, api):
    A = _general(6, 3, dtype, seed=3)
    before = A.clone()
    LU, piv, info = cuda_lu.getrf(A, True, api)
    assert torch.equal(A, before)
    assert LU.shape == A.shape and LU.stride() == (36, 1, 6)             # torch's layout
    assert piv.dtype == torch.int32 and piv.shape == (3, 6) and piv.is_contiguous()
    assert info.dtype == torch.int32 and info.tolist() == [0, 0, 0]
    for b in range(3):
        lu, p = scipy.linalg.lu_factor(A[b].numpy())
        assert np.array_equal(LU[b].numpy(), lu) and np.array_equal(piv[b].numpy(), p + 1)
    name = {"legacy": "getrf", "batched": "getrfBatched", "X": "Xgetrf"}[api]
    assert sum(c.endswith(name) for c in raw.names()) == (1 if api == "batched" else 3)
    if api == "X":   # our method: int64 pivots, its bufferSize asked once per (dtype, m, n)
        assert raw.names().count("cusolverDnXgetrf_bufferSize") == 1
        cuda_lu.getrf(A, True, api)
        assert raw.names().count("cusolverDnXgetrf_bufferSize") == 1


def test_getrf_legacy_asks_bufferSize_for_every_matrix_like_torch_211(raw):
    A = _general(5, 4, torch.float64)
    cuda_lu.getrf(A, True, "legacy")
    cuda_lu.getrf(A, True, "legacy")
    assert raw.names() == ["cusolverDnDgetrf_bufferSize", "cusolverDnDgetrf"] * 8
    bs = [kw for c, kw in raw.calls if c.endswith("getrf_bufferSize")]
    gf = [kw for c, kw in raw.calls if c.endswith("Dgetrf")]
    assert [b["A"] for b in bs] == [g["A"] for g in gf]                 # the matrix it asks for


@pytest.mark.parametrize("m,n", [(7, 4), (4, 7)])
@pytest.mark.parametrize("api", ["legacy", "X"])
def test_getrf_rectangular(raw, m, n, api):
    A = _rhs((2, m, n), torch.complex128, seed=m)
    LU, piv, info = cuda_lu.getrf(A, True, api)
    ref_lu, ref_piv = scipy_lu(A)
    assert LU.stride() == (m * n, 1, m) and piv.shape == (2, min(m, n))
    assert torch.equal(LU, ref_lu) and torch.equal(piv, ref_piv)
    assert all(kw.get("LDA", kw.get("lda")) == m for c, kw in raw.calls if "getrf" in c)


def test_getrf_batched_is_square_only(raw):
    with pytest.raises(ValueError, match="square"):
        cuda_lu.getrf(torch.ones(2, 3, 4, dtype=torch.float64), True, "batched")
    with pytest.raises(ValueError, match="api"):
        cuda_lu.getrf(torch.ones(3, 3, dtype=torch.float64), True, "magma")
    assert raw.calls == []


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("api", cuda_lu.APIS)
def test_singular_info_names_the_column_as_torch(raw, dtype, api):
    A = _general(5, 3, dtype, seed=4)
    A[1, :, 2] = 0                  # column 3 of matrix 1 is zero: U(3, 3) = 0 exactly
    LU, piv, info = cuda_lu.getrf(A, True, api)
    assert info.tolist() == [0, 3, 0]
    assert torch.linalg.lu_factor_ex(A).info.tolist() == [0, 3, 0]


@pytest.mark.parametrize("api", ["legacy", "X", "batched"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64])
def test_unpivoted_getrf_nan_fixup_and_arange_pivots(raw, api, dtype):
    A = _general(4, 2, dtype)
    A[0, 0, 0] = 0                  # a zero first pivot: the unpivoted LU divides by zero
    LU, piv, info = cuda_lu.getrf(A, False, api)
    assert info.tolist() == [1, 0]
    assert torch.equal(piv, torch.tensor([[1, 2, 3, 4]] * 2, dtype=torch.int32))
    raw_lu = torch.from_numpy(getrf_nopiv(A[0].numpy())[0])
    assert raw_lu.isnan().any()     # what the library leaves
    if api == "batched":            # torch: no fix-up after cuBLAS
        assert torch.equal(LU[0].isnan(), raw_lu.isnan())
    else:                           # torch's nan_to_num_ / where(x == x, x, 0)
        assert not LU.isnan().any()
        fixed = raw_lu.nan_to_num(0.0, float("inf"), float("-inf")) if not dtype.is_complex else \
            torch.where(raw_lu.eq(raw_lu), raw_lu, torch.zeros((), dtype=dtype))
        assert torch.equal(LU[0], fixed)
    assert all(kw.get("IPIV", kw.get("P", kw.get("ipiv"))) == 0 for c, kw in raw.calls
               if c.endswith(("getrf", "getrfBatched", "Xgetrf")))


def test_nan_fixup_ops_are_torchs():
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 1.5])
    assert torch.equal(cuda_lu.nan_fixup_(x.clone()), torch.tensor([0.0, float("inf"), -float("inf"),
                                                                    -0.0, 1.5]))
    z = torch.tensor([complex(float("nan"), 1), complex(1, float("nan")), complex(2, -3)])
    assert torch.equal(cuda_lu.nan_fixup_(z.clone()), torch.tensor([0j, 0j, complex(2, -3)]))


def test_getrf_views_are_read_not_written(raw):
    A = _general(5, 2, torch.complex128, seed=5)
    wide = A.repeat_interleave(2, dim=-1)
    for view in (A.conj(), A.mT, wide[..., ::2], A._neg_view(), A.conj()._neg_view().mT):
        before = A.clone()
        LU, piv, _ = cuda_lu.getrf(view, True, "legacy")
        assert torch.equal(A, before)
        ref_lu, ref_piv = scipy_lu(view)
        assert torch.equal(LU, ref_lu) and torch.equal(piv, ref_piv)


def test_getrf_does_not_record_autograd(raw):
    A = _general(4, 1, torch.float64).requires_grad_()
    LU, piv, info = cuda_lu.getrf(A, True, "legacy")
    assert not LU.requires_grad and A.grad is None


# --------------------------------------------------------------------------- getrs details
def _factor(n, batch_shape, dtype, seed=0):
    A = _general(n, 1, dtype, seed).expand(*batch_shape, n, n).clone() if batch_shape else \
        _general(n, 1, dtype, seed)
    if batch_shape:
        A = A + 0.1 * _rhs((*batch_shape, n, n), dtype, seed + 1)
    LU, piv = torch.linalg.lu_factor(A)
    return A, LU, piv


SOLVERS = ["legacy", "batched", "X", "triangular"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("left", [True, False])
def test_lu_solve_every_path(raw, dtype, solver, adjoint, left):
    A, LU, piv = _factor(9, (3,), dtype)
    B = _rhs((3, 9, 2) if left else (3, 2, 9), dtype)
    LU0, piv0, B0 = LU.clone(), piv.clone(), B.clone()
    X = _lu_solve(solver, LU, piv, B, adjoint, left)
    assert torch.equal(LU, LU0) and torch.equal(piv, piv0) and torch.equal(B, B0)
    ref = torch.linalg.lu_solve(LU, piv, B, left=left, adjoint=adjoint)
    assert X.shape == ref.shape and torch.allclose(X, ref, atol=_tol(dtype) * 10)
    if left:
        assert X.stride() == (18, 1, 9)                      # column-major, as torch's
    else:
        assert X.stride() == (18, 9, 1) and X.is_conj() == dtype.is_complex   # torch's result
    trans = {c: kw["trans"] for c, kw in raw.calls if "trans" in kw}
    op = "N" if adjoint == (not left) else ("C" if dtype.is_complex else "T")
    if solver != "triangular":
        assert set(trans.values()) == {op}


def test_triangular_flags_and_loop_rule(raw):
    for batch, n, looped in ((1, 64, True), (8, 64, True), (9, 64, False), (2, 63, False)):
        A, LU, piv = _factor(n, (batch,), torch.complex64)
        B = _rhs((batch, n, 2), torch.complex64)
        for adjoint in (False, True):
            raw.calls.clear()
            cuda_lu.lu_solve_triangular(LU, piv, B, adjoint)
            calls = recorded(raw)
            name = "cublasCtrsm_v2" if looped else "cublasCtrsmBatched"
            assert {c for c, _ in calls} == {name}
            assert len(calls) == (2 * batch if looped else 2)
            flags = [(kw["uplo"], kw["trans"], kw["diag"]) for _, kw in calls]
            first, second = ((("LOWER", "N", "UNIT"), ("UPPER", "N", "NON_UNIT")) if not adjoint
                             else (("UPPER", "C", "NON_UNIT"), ("LOWER", "C", "UNIT")))
            half = len(flags) // 2
            assert flags[:half] == [first] * half and flags[half:] == [second] * half
            if looped:   # one solve over the whole batch, then the other
                As = [kw["A"] for _, kw in calls[:half]]
                assert [a - As[0] for a in As] == [i * n * n * 8 for i in range(batch)]
            else:
                pa, pb = calls[0][1]["pointers"]
                assert [p - pa[0] for p in pa] == [i * n * n * 8 for i in range(batch)]
                assert [p - pb[0] for p in pb] == [i * n * 2 * 8 for i in range(batch)]


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("lu_batch,b_batch", [((), (3,)), ((3,), ()), ((2, 1), (1, 3)),
                                              ((1,), (2, 2)), ((3,), (1, 3))])
def test_lu_broadcasts_over_b_as_torch(raw, solver, lu_batch, b_batch):
    A, LU, piv = _factor(10, lu_batch, torch.float64)
    B = _rhs((*b_batch, 10, 2), torch.float64)
    X = _lu_solve(solver, LU, piv, B, False, True)
    ref = torch.linalg.lu_solve(LU, piv, B)
    assert X.shape == ref.shape and torch.allclose(X, ref, atol=1e-10)
    nb = int(np.prod(torch.broadcast_shapes(lu_batch, b_batch)))
    if solver == "legacy":   # one getrs per matrix of the result; LU / pivots not expanded
        calls = [kw for c, kw in raw.calls if c.endswith("getrs")]
        assert len(calls) == nb
        lu_idx = torch.arange(int(np.prod(lu_batch))).view(lu_batch).broadcast_to(
            torch.broadcast_shapes(lu_batch, b_batch)).reshape(-1).tolist()
        base = calls[0]["A"] - lu_idx[0] * 800
        assert [kw["A"] - base for kw in calls] == [j * 800 for j in lu_idx]
        assert len({kw["info"] for kw in calls}) == 1                   # one shared info
    if solver == "batched":
        (kw,) = [kw for c, kw in raw.calls if c.endswith("getrsBatched")]
        assert kw["batchSize"] == nb
        pa, pb = kw["pointers"]
        assert [p - pa[0] for p in pa] == [i * 800 for i in range(nb)]   # LU expanded (cloned)
        assert [p - pb[0] for p in pb] == [i * 160 for i in range(nb)]


def test_getrs_batched_info_is_a_host_int(raw):
    A, LU, piv = _factor(4, (2,), torch.float64)
    X, info = cuda_lu.getrs(LU, piv, _rhs((2, 4, 1), torch.float64), False, "batched")
    assert info.device.type == "cpu" and info.dtype == torch.int32 and info.tolist() == [0]
    (kw,) = [kw for c, kw in raw.calls if c.endswith("getrsBatched")]
    assert kw["info"] == info.data_ptr()


def test_conjugate_views_are_solved_as_their_values(raw):
    A, LU, piv = _factor(9, (2,), torch.complex128)
    B = _rhs((2, 9, 3), torch.complex128)
    for solver in SOLVERS:
        X = _lu_solve(solver, LU.conj(), piv, B.conj(), True, True)
        ref = torch.linalg.lu_solve(LU.conj().resolve_conj(), piv, B.conj().resolve_conj(),
                                    adjoint=True)
        assert torch.allclose(X, ref, atol=1e-10), solver


def test_unpack_pivots_is_torchs_permutation():
    A = _rhs((3, 7, 7), torch.float64, seed=9)
    LU, piv = torch.linalg.lu_factor(A)
    P, L, U = torch.linalg.lu(A)
    perm = cuda_lu.unpack_pivots(piv, 7)
    assert perm.dtype == torch.int64
    assert torch.equal(A.gather(-2, perm.unsqueeze(-1).expand_as(A)), P.mT @ A)   # (Pᵀ A)[i] = A[perm[i]]


# --------------------------------------------------------------------------- properties
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@st.composite
def lu_problems(draw):
    n = draw(st.integers(1, 6))
    dtype = draw(st.sampled_from(DTYPES))
    lu_batch = draw(st.sampled_from([(), (1,), (2,), (2, 1), (1, 2)]))
    b_batch = draw(st.sampled_from([(), (1,), (2,), (2, 2)]))
    k = draw(st.integers(1, 3))
    view = draw(st.sampled_from(["plain", "rowmajor_lu", "conj", "strided_b"]))
    left = draw(st.booleans())
    adjoint = draw(st.booleans())
    seed = draw(st.integers(0, 5))
    return n, dtype, lu_batch, b_batch, k, view, left, adjoint, seed


@SETTINGS
@given(lu_problems(), st.sampled_from(SOLVERS))
def test_property_lu_solve_matches_torch(raw, problem, solver):
    n, dtype, lu_batch, b_batch, k, view, left, adjoint, seed = problem
    try:
        torch.broadcast_shapes(lu_batch, b_batch)
    except RuntimeError:
        return
    A = _general(n, 1, dtype, seed) + 0.1 * _rhs((*lu_batch, n, n), dtype, seed)
    LU, piv = torch.linalg.lu_factor(A)
    B = _rhs((*b_batch, n, k) if left else (*b_batch, k, n), dtype, seed + 1)
    if view == "rowmajor_lu":
        LU = LU.contiguous()
    elif view == "conj" and dtype.is_complex:
        LU, B = LU.conj(), B.conj()
    elif view == "strided_b":
        B = B.repeat_interleave(2, dim=-1)[..., ::2]       # the values of B, column stride 2
    inputs = [t.clone() for t in (LU, piv, B)]
    X = _lu_solve(solver, LU, piv, B, adjoint, left)
    ref = torch.linalg.lu_solve(LU.resolve_conj(), piv, B.resolve_conj(), left=left, adjoint=adjoint)
    assert X.shape == ref.shape
    assert torch.allclose(X, ref, atol=_tol(dtype) * 10, rtol=_tol(dtype))
    assert all(torch.equal(a, b) for a, b in zip((LU, piv, B), inputs))


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from([(), (1,), (3,), (2, 2)]),
       st.sampled_from(DTYPES), st.sampled_from(cuda_lu.APIS), st.booleans(), st.integers(0, 5))
def test_property_getrf_matches_torch(raw, m, n, batch, dtype, api, pivot, seed):
    if api == "batched" and m != n:
        return
    A = _rhs((*batch, m, n), dtype, seed)
    if not pivot:   # diagonally dominant: the unpivoted LU is stable
        A = A + 4 * max(m, n) * torch.eye(m, n, dtype=dtype)
    LU, piv, info = cuda_lu.getrf(A, pivot, api)
    k = min(m, n)
    assert LU.shape == A.shape and piv.shape == (*batch, k) and info.shape == (int(np.prod(batch)),)
    if pivot:
        ref_lu, ref_piv = scipy_lu(A)
        assert torch.equal(LU, ref_lu) and torch.equal(piv, ref_piv)
        assert torch.equal(info, torch.linalg.lu_factor_ex(A).info.reshape(-1))
    else:
        L = LU.tril(-1)[..., :, :k] + torch.eye(m, k, dtype=dtype)
        U = LU.triu()[..., :k, :]
        assert torch.allclose(L @ U, A, atol=_tol(dtype) * 100)
