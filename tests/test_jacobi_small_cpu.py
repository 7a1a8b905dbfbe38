"""The one-thread-per-matrix Jacobi eigensolver (cusolver_trace.backends.jacobi_small) on the
CPU: the very CUDA C++ source the GPU compiles, built here with the host C++ compiler (its
device-only kernel compiled out) behind a small ``extern "C"`` driver, and checked against
LAPACK (numpy.linalg.eigvalsh) with LAPACK's ``?syt21`` ratios, for every dtype, n = 1 .. 8,
both triangles, clustered / repeated eigenvalues, diagonal and zero matrices, huge and tiny
scales, non-finite input, and the triangle not read."""
from __future__ import annotations

import ctypes
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

from cusolver_trace.backends import _jacobi_source as src

DRIVER = r"""
template<typename R, int NC, int N, bool V>
static void host_run(const R* a, long long batch, long long sb, long long sr, long long sc,
                     int upper, int ms, R* w, R* v, int* info)
{
    for (long long b = 0; b < batch; ++b)
        info[b] = jacobi_one<R, NC, N, V>(a + b * sb * NC, sr, sc, upper, ms, w + b * N,
                                          V ? v + b * N * N * NC : v, 1, N);
}
#define CASE(N) case N: (vec ? host_run<R, NC, N, true> : host_run<R, NC, N, false>)( \
    a, batch, sb, sr, sc, upper, ms, w, v, info); return 0;
template<typename R, int NC>
static int dispatch(int n, int vec, const R* a, long long batch, long long sb, long long sr,
                    long long sc, int upper, int ms, R* w, R* v, int* info)
{
    switch (n) { CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7) CASE(8) }
    return 1;
}
#define ENTRY(NAME, R, NC) extern "C" int NAME(int n, int vec, const R* a, long long batch, \
    long long sb, long long sr, long long sc, int upper, int ms, R* w, R* v, int* info)     \
    { return dispatch<R, NC>(n, vec, a, batch, sb, sr, sc, upper, ms, w, v, info); }
ENTRY(jacobi_host_s, float, 1)
ENTRY(jacobi_host_d, double, 1)
ENTRY(jacobi_host_c, float, 2)
ENTRY(jacobi_host_z, double, 2)
"""

PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
REAL = {np.float32: np.float32, np.float64: np.float64, np.complex64: np.float32,
        np.complex128: np.float64}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cxx = next((c for c in ("g++", "c++", "clang++") if shutil.which(c)), None)
    if cxx is None:
        pytest.skip("no C++ compiler (g++ / c++ / clang++) on PATH to build the kernel's source")
    d = tmp_path_factory.mktemp("jacobi")
    cpp = d / "jacobi.cpp"
    cpp.write_text(src.SOURCE + DRIVER)
    so = d / "libjacobi.so"
    res = subprocess.run([cxx, "-std=c++17", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC",
                          "-o", str(so), str(cpp)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-4000:]
    assert "warning" not in res.stderr, res.stderr[-4000:]
    return ctypes.CDLL(str(so))


def solve(lib, a, upper=False, vectors=True, max_sweeps=None, layout="C"):
    """The host build on ``a`` (batch, n, n): ``(w, V, info)`` with V as the (batch, n, n)
    matrices (read back from the column-major buffer). ``layout``: "C" (row-major per matrix),
    "F" (column-major per matrix) or "strided" (every other matrix of a larger buffer, rows
    and columns spread)."""
    dtype = a.dtype.type
    batch, n, _ = a.shape
    if layout == "C":
        buf = np.ascontiguousarray(a)
        sb, sr, sc = n * n, n, 1
    elif layout == "F":
        buf = np.ascontiguousarray(a.transpose(0, 2, 1))
        sb, sr, sc = n * n, 1, n
    else:
        big = np.full((2 * batch, 2 * n, 3 * n), np.nan, dtype)
        big[::2, ::2, ::3] = a
        buf = big
        sb, sr, sc = 2 * (2 * n) * (3 * n), 2 * 3 * n, 3
    before = buf.copy()
    w = np.full((batch, n), -7.0, REAL[dtype])
    v = np.full((batch, n, n), -7.0, dtype)
    info = np.full(batch, -7, np.int32)
    if max_sweeps is None:
        max_sweeps = 20 if np.iscomplexobj(a) else 15
    fn = getattr(lib, f"jacobi_host_{PREFIX[dtype]}")
    rc = fn(ctypes.c_int(n), ctypes.c_int(int(vectors)), ctypes.c_void_p(buf.ctypes.data),
            ctypes.c_longlong(batch), ctypes.c_longlong(sb), ctypes.c_longlong(sr),
            ctypes.c_longlong(sc), ctypes.c_int(int(upper)), ctypes.c_int(max_sweeps),
            ctypes.c_void_p(w.ctypes.data), ctypes.c_void_p(v.ctypes.data),
            ctypes.c_void_p(info.ctypes.data))
    assert rc == 0
    np.testing.assert_array_equal(buf, before)          # the input is never written
    if not vectors:
        assert (v == -7.0).all()                        # and no V without vectors
        return w, None, info
    return w, v.transpose(0, 2, 1), info                # buffer[b][c][r] = V(r, c)


def hermitian(rng, batch, n, dtype, eigs=None):
    """Random Hermitian matrices (float64 / complex128 math, then rounded to ``dtype``), with
    eigenvalues ``eigs`` (batch, n) when given."""
    cplx = np.issubdtype(dtype, np.complexfloating)
    g = rng.standard_normal((batch, n, n))
    if cplx:
        g = g + 1j * rng.standard_normal((batch, n, n))
    if eigs is None:
        a = g + np.conj(g.transpose(0, 2, 1))
    else:
        q, _ = np.linalg.qr(g)
        a = (q * eigs[:, None, :]) @ np.conj(q.transpose(0, 2, 1))
        a = (a + np.conj(a.transpose(0, 2, 1))) / 2
    return a.astype(dtype)


def full(a, upper):
    """The Hermitian matrix that the ``upper`` / lower triangle of ``a`` stands for (float64 /
    complex128)."""
    wide = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    t = np.triu(wide, 1) if upper else np.tril(wide, -1)
    diag = np.real(np.diagonal(wide, axis1=1, axis2=2))
    return t + np.conj(t.transpose(0, 2, 1)) + diag[:, :, None] * np.eye(a.shape[-1])


def ratios(a, upper, w, v):
    """LAPACK ?syt21's ratios per matrix: ``|A V - V W|_1 / (n |A|_1 ulp)`` and
    ``|V^H V - I|_1 / (n ulp)`` (ulp = the input's machine epsilon), and the eigenvalue error
    ``max |w - w_LAPACK| / (|A|_2 ulp)``."""
    n = a.shape[-1]
    ulp = np.finfo(a.dtype).eps
    A = full(a, upper)
    wref = np.linalg.eigvalsh(A)
    norm1 = np.abs(A).sum(axis=1).max(axis=-1)
    norm2 = np.abs(wref).max(axis=-1)
    safe = np.where(norm1 > 0, norm1, 1.0)
    err_w = np.abs(w.astype(np.float64) - wref).max(axis=-1) / (np.where(norm2 > 0, norm2, 1.0)
                                                                 * ulp)
    if v is None:
        return None, None, err_w
    V = v.astype(A.dtype)
    res = A @ V - V * w.astype(np.float64)[:, None, :]
    r1 = np.abs(res).sum(axis=1).max(axis=-1) / (n * safe * ulp)
    orth = np.conj(V.transpose(0, 2, 1)) @ V - np.eye(n)
    r2 = np.abs(orth).sum(axis=1).max(axis=-1) / (n * ulp)
    return r1, r2, err_w


def check(lib, a, upper, vectors=True, layout="C", w_ulps=None):
    n = a.shape[-1]
    w, v, info = solve(lib, a, upper, vectors, layout=layout)
    assert (info == 0).all(), info
    assert (np.diff(w, axis=-1) >= 0).all()                     # ascending
    r1, r2, err_w = ratios(a, upper, w, v)
    assert err_w.max() <= (w_ulps or 4 * n), err_w.max()
    if vectors:
        assert r1.max() < 30, r1.max()
        assert r2.max() < 30, r2.max()
        # the eigenvalues do not depend on whether vectors are computed
        w2, _, _ = solve(lib, a, upper, False, layout=layout)
        np.testing.assert_array_equal(w, w2)
    return w, v, info


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("upper", [False, True], ids=["L", "U"])
def test_random_hermitian(lib, dtype, n, upper):
    rng = np.random.default_rng(n * 10 + upper)
    check(lib, hermitian(rng, 300, n, dtype), upper)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("layout", ["F", "strided"])
def test_strides(lib, dtype, layout):
    rng = np.random.default_rng(1)
    for n in (1, 3, 8):
        a = hermitian(rng, 50, n, dtype)
        w, v, _ = check(lib, a, True, layout=layout)
        wc, vc, _ = solve(lib, a, True)
        np.testing.assert_array_equal(w, wc)
        np.testing.assert_array_equal(v, vc)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_repeated_and_clustered_eigenvalues(lib, dtype, n):
    rng = np.random.default_rng(2)
    batch = 100
    cases = [np.ones((batch, n)),                                       # a multiple of I
             np.tile(np.r_[np.ones(n // 2), 2 * np.ones(n - n // 2)], (batch, 1)),
             np.tile(1 + 1e-10 * np.arange(n), (batch, 1)),             # one tight cluster
             np.tile(np.r_[0.0, 0.0, np.ones(n - 2)], (batch, 1)),       # rank deficient
             np.tile(np.r_[np.zeros(n - 1), 1.0], (batch, 1)),           # rank one
             np.tile(np.r_[-1.0, np.ones(n - 1)], (batch, 1))]
    for eigs in cases:
        check(lib, hermitian(rng, batch, n, dtype, eigs), False)


def test_rank_one_covariances(lib):
    # the target workload: 3 x 3 covariances, among them degenerate ones (collinear points)
    rng = np.random.default_rng(3)
    pts = rng.standard_normal((2000, 10, 3))
    pts[:500] = pts[:500, :, :1] * rng.standard_normal(3)            # collinear: rank one
    pts[500:1000, :, 2] = 0.3 * pts[500:1000, :, 0]                  # coplanar: rank two
    c = pts - pts.mean(axis=1, keepdims=True)
    cov = c.transpose(0, 2, 1) @ c / 9
    for dtype in (np.float32, np.float64):
        for upper in (False, True):
            check(lib, cov.astype(dtype), upper)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("n", [1, 3, 8])
def test_diagonal_and_zero_matrices(lib, dtype, n):
    rng = np.random.default_rng(4)
    diag = rng.standard_normal((20, n)).astype(REAL[dtype])
    a = np.zeros((20, n, n), dtype)
    a[:, np.arange(n), np.arange(n)] = diag
    w, v, info = solve(lib, a)
    assert (info == 0).all()
    np.testing.assert_array_equal(w, np.sort(diag, axis=-1))   # exact: nothing to rotate
    perm = np.argsort(diag, axis=-1, kind="stable")
    np.testing.assert_array_equal(v, np.eye(n, dtype=dtype)[perm].transpose(0, 2, 1))
    w, v, info = solve(lib, np.zeros((5, n, n), dtype))
    assert (info == 0).all() and (w == 0).all()
    np.testing.assert_array_equal(v, np.broadcast_to(np.eye(n, dtype=dtype), (5, n, n)))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: d.__name__)
@pytest.mark.parametrize("scale", [1e150, 1e-150, 1e300, 1e-300])
def test_huge_and_tiny_scales(lib, dtype, scale):
    rng = np.random.default_rng(5)
    for n in (2, 3, 8):
        a = hermitian(rng, 50, n, dtype)
        w1, v1, _ = solve(lib, a)
        ws, vs, info = solve(lib, (a * scale).astype(dtype))
        assert (info == 0).all()
        assert np.isfinite(ws).all() and np.isfinite(vs).all()
        r1, r2, err = ratios((a * scale).astype(dtype), False, ws, vs)
        assert r1.max() < 30 and r2.max() < 30, (r1.max(), r2.max())
        assert err.max() <= 4 * n
    # a power of two scales the result exactly (the kernel's own scaling is by one)
    a = hermitian(rng, 50, 4, dtype)
    w1, v1, _ = solve(lib, a)
    w2, v2, _ = solve(lib, a * 2.0 ** 700)
    np.testing.assert_array_equal(w2, w1 * 2.0 ** 700)
    np.testing.assert_array_equal(v2, v1)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64], ids=lambda d: d.__name__)
def test_single_precision_extremes(lib, dtype):
    rng = np.random.default_rng(6)
    for scale in (1e30, 1e-30):
        a = (hermitian(rng, 50, 5, np.complex128 if dtype == np.complex64 else np.float64)
             * scale).astype(dtype)
        w, v, info = solve(lib, a)
        assert (info == 0).all() and np.isfinite(w).all()
        r1, r2, _ = ratios(a, False, w, v)
        assert r1.max() < 30 and r2.max() < 30


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input(lib, dtype, bad):
    rng = np.random.default_rng(7)
    n = 4
    a = hermitian(rng, 6, n, dtype)
    a[1, 2, 1] = bad                     # lower triangle: read with upper=False
    a[3, 0, 0] = bad                     # diagonal
    a[4, 1, 2] = bad                     # upper triangle: not read with upper=False
    w, v, info = solve(lib, a, upper=False)
    assert list(info) == [0, n + 1, 0, n + 1, 0, 0]
    assert np.isnan(w[[1, 3]]).all() and np.isnan(v[[1, 3]]).all()
    assert np.isfinite(w[[0, 2, 4, 5]]).all() and np.isfinite(v[[0, 2, 4, 5]]).all()
    w, v, info = solve(lib, a, upper=True, vectors=False)
    assert list(info) == [0, 0, 0, n + 1, n + 1, 0]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("upper", [False, True], ids=["L", "U"])
def test_only_the_triangle_is_read(lib, dtype, upper):
    rng = np.random.default_rng(8)
    for n in (1, 2, 3, 6, 8):
        a = hermitian(rng, 40, n, dtype)
        junk = a.copy()
        other = np.triu(np.ones((n, n), bool), 1) if not upper else np.tril(np.ones((n, n), bool), -1)
        junk[:, other] = np.nan                                    # the triangle not read
        if np.iscomplexobj(a):
            idx = np.arange(n)
            junk[:, idx, idx] += 1e30j                   # the diagonal's imaginary part
        w, v, info = solve(lib, a, upper)
        wj, vj, infoj = solve(lib, junk, upper)
        np.testing.assert_array_equal(info, infoj)
        np.testing.assert_array_equal(w, wj)
        np.testing.assert_array_equal(v, vj)


def test_the_sweep_cap_sets_info(lib):
    rng = np.random.default_rng(9)
    a = hermitian(rng, 20, 8, np.float64)
    w, v, info = solve(lib, a, max_sweeps=1)
    assert (info == 9).all()                                       # n + 1, like syevj
    assert np.isfinite(w).all() and (np.diff(w, axis=-1) >= 0).all()
    r1, r2, _ = ratios(a, False, w, v)
    assert r2.max() < 30                                           # V is still unitary
    w, v, info = solve(lib, a, max_sweeps=15)
    assert (info == 0).all()


def test_source_is_the_gpu_source():
    # what the GPU compiles is SOURCE plus one extern "C" wrapper of the kernel template
    text = src.kernel_source("d", 3, True)
    assert text.startswith(src.SOURCE)
    assert 'extern "C" __global__ void __launch_bounds__(256) jacobi_d3v(' in text
    assert "jacobi_kernel<double, 1, 3, true>" in text
    assert "jacobi_kernel<float, 2, 8, false>" in src.kernel_source("c", 8, False)


def test_entry_point_validation_and_the_table_row():
    import torch

    from cusolver_trace import routines
    from cusolver_trace.backends import jacobi_small as js

    assert js.JACOBI_MAX_N == 8
    with pytest.raises(ValueError, match="n <= 8, got n = 9"):
        js._validate(torch.zeros(2, 9, 9), False, True, None)
    with pytest.raises(TypeError, match="float32, float64, complex64 or complex128"):
        js._validate(torch.zeros(2, 3, 3, dtype=torch.float16), False, True, None)
    with pytest.raises(ValueError, match="max_sweeps"):
        js._validate(torch.zeros(2, 3, 3), False, True, 0)
    with pytest.raises(ValueError, match=r"\(\.\.\., n, n\)"):
        js._validate(torch.zeros(2, 3, 4), False, True, None)
    with pytest.raises(ValueError, match="CUDA tensors"):
        js._validate(torch.zeros(2, 3, 3), False, True, None)
    row = routines.SYEV.row("jacobi")
    assert row.gpu_only and row.cpu is None and row.flops == "syevd"
    assert row.mirrors == "cyclic Jacobi (cusolver-trace kernel)"
    with pytest.raises(ValueError, match="GPU"):
        routines.eigh(np.eye(3), method="jacobi")
