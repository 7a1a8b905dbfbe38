"""The fused (cuSOLVERDx) backend without a GPU: layout and index arithmetic, shared-memory
sizing, cache keys, the disk cache, the kernel source, and the missing-extra error.

The kernel's copy loops are checked through :func:`emulate`, a line-by-line Python
transcription of the C++ loops in ``fused._KERNEL`` (same index formulas), with LAPACK
standing in for cuSOLVERDx's potrf / potrs working on shared memory as cuSOLVERDx
documents it (``arrangement`` + leading dimension n, only the ``fill_mode`` triangle read).
The C++ itself is checked on the GPU (``tests/test_gpu_fused.py``).
"""
from __future__ import annotations

import builtins
import os
import sys

import numpy as np
import pytest
import scipy.linalg
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cusolver_trace.backends import _fused_toolchain
from cusolver_trace.backends import fused as F

SM = (9, 0)


def key(op="inverse", n=8, nrhs=None, dtype="float64", upper=False, arr_a="row_major",
        arr_b="row_major", bpb=4, block=(32, 1, 1), kc=None, conj=False, pad=0):
    nrhs = (n if nrhs is None else nrhs) if op != "potrf" else 0
    kc = (nrhs if kc is None else kc) if op != "potrf" else 0
    return F.FusedKey(op, n, nrhs, kc, dtype, upper, arr_a, arr_b, bpb, block, SM, conj, pad)


# --------------------------------------------------------------------------- arrangements
def test_arrangement_of_torch_layouts():
    x = torch.randn(5, 4, 4)
    assert F.arrangement_of(x.shape, x.stride()) == "row_major"
    c = x.mT.contiguous().mT                      # column by column, like linalg.cholesky's L
    assert F.arrangement_of(c.shape, c.stride()) == "col_major"
    L = torch.linalg.cholesky(x @ x.mT + 4 * torch.eye(4))
    assert F.arrangement_of(L.shape, L.stride()) == "col_major"
    assert F.arrangement_of(x[:, :, :2].shape, x[:, :, :2].stride()) is None      # a slice
    e = torch.randn(4, 4).expand(3, 4, 4)
    assert F.arrangement_of(e.shape, e.stride()) is None                           # stride 0
    assert F.arrangement_of(x[::2].shape, x[::2].stride()) is None                 # gaps
    one = torch.randn(1, 4, 4)
    assert F.arrangement_of(one.shape, one.stride()) == "row_major"
    with pytest.raises(ValueError):
        F.arrangement_of((4,), (1,))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=5), st.data())
def test_arrangement_of_is_torch_contiguity(shape, data):
    """On any torch view (permuted, sliced, expanded, size-1 dimensions), ``arrangement_of``
    agrees with torch: row_major exactly when the tensor is contiguous, else col_major
    exactly when its ``.mT`` is, else None."""
    x = torch.zeros(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    x = x.permute(*perm)
    if data.draw(st.booleans()):   # a strided slice of one dimension
        d = data.draw(st.integers(0, x.dim() - 1))
        x = x.narrow(d, 0, max(1, x.shape[d] - data.draw(st.integers(0, 1))))[
            (slice(None),) * d + (slice(None, None, data.draw(st.integers(1, 2))),)]
    if data.draw(st.booleans()):   # a broadcast batch dimension (stride 0)
        x = x.unsqueeze(0).expand(data.draw(st.integers(1, 3)), *x.shape)
    want = ("row_major" if x.is_contiguous() else "col_major" if x.mT.is_contiguous()
            else None)
    assert F.arrangement_of(x.shape, x.stride()) == want


def test_col_major_buffer_is_each_matrix_transposed():
    # What the kernel relies on: a col_major tensor's buffer holds matrix m at m*n*n, element
    # (r, c) at c*n + r; a row_major one at r*n + c.
    x = torch.arange(2 * 3 * 3, dtype=torch.float64).reshape(2, 3, 3)
    c = x.mT.contiguous().mT
    flat = c.as_strided((c.numel(),), (1,))
    for m in range(2):
        for r in range(3):
            for k in range(3):
                assert flat[m * 9 + k * 3 + r] == x[m, r, k]
                assert x.reshape(-1)[m * 9 + r * 3 + k] == x[m, r, k]


# --------------------------------------------------------------------------- grid, tail, smem
@pytest.mark.parametrize("batch,bpb,grid,last", [(1, 1, 1, 1), (10, 4, 3, 2), (8, 4, 2, 4),
                                                 (37, 32, 2, 5), (100000, 8, 12500, 8)])
def test_grid_and_tail(batch, bpb, grid, last):
    assert F.grid_size(batch, bpb) == grid
    assert F.tail(batch, bpb) == last
    assert (grid - 1) * bpb + last == batch


def test_grid_rejects_bad_values():
    with pytest.raises(ValueError):
        F.grid_size(10, 0)
    with pytest.raises(ValueError):
        F.grid_size(-1, 4)


def test_shared_bytes_and_chunks():
    assert F.shared_bytes("potrf", 8, 0, "float64", 4) == 4 * 64 * 8 + 4 * 16  # 4 int32 per matrix
    assert F.shared_bytes("inverse", 8, 8, "complex128", 2) == 2 * 64 * 16 * 2 + 2 * 16
    assert F.rhs_chunk("inverse", 64, 64, "float64", 1) == 64
    # 128 x 128 float64: A is 128 KiB, room for 98 columns of B (98 KiB): chunks of 64 (a
    # power of two: 95-column chunks were 70x slower than torch on the H200)
    kc = F.rhs_chunk("inverse", 128, 128, "float64", 1)
    assert kc == 64 and F.shared_bytes("inverse", 128, kc, "float64", 1) <= F.SMEM_LIMIT
    assert F.shared_bytes("inverse", 128, 2 * kc, "float64", 1) > F.SMEM_LIMIT
    assert F.rhs_chunk("potrf", 128, 0, "complex64", 1) == 0
    with pytest.raises(ValueError, match="shared memory"):
        F.rhs_chunk("inverse", 128, 128, "complex128", 1)
    with pytest.raises(ValueError, match="shared memory"):
        F.rhs_chunk("potrf", 128, 0, "complex128", 1)
    assert F.fits("inverse", 128, "float64") and not F.fits("inverse", 128, "complex128")
    assert F.fits("potrf", 64, "complex128")
    # padding: A's rows (or columns) n + pad long, B's kc + pad (row-major) or n + pad
    assert F.shared_bytes("inverse", 8, 8, "float64", 2, pad=1) == 2 * 8 * 9 * 8 * 2 + 2 * 16
    assert F.shared_bytes("solve", 8, 3, "float64", 1, pad=1, arr_b="col_major") == \
        _r16(8 * 9 * 8) + _r16(3 * 9 * 8) + 16
    k = key(op="solve", n=8, nrhs=3, arr_b="col_major", bpb=1, pad=1)
    assert (k.lda, k.ldb) == (9, 9) and key(op="solve", n=8, nrhs=3, pad=1).ldb == 4
    with pytest.raises(ValueError):
        key(pad=9)


def _r16(x):
    return -(-x // 16) * 16


def test_fused_key_validation():
    k = key(op="solve", n=16, nrhs=40, kc=16, bpb=2, block=(64, 1, 1))
    assert k.chunks == 3 and k.threads == 64 and k.kernel_name == "fused_solve"
    assert k.shared_bytes == F.shared_bytes("solve", 16, 16, "float64", 2)
    for bad in (dict(op="getrf"), dict(dtype="float16"), dict(arr_a="C"), dict(bpb=0),
                dict(kc=9), dict(kc=0), dict(bpb=33, block=(32, 1, 1)), dict(conj=True),
                dict(op="solve", nrhs=3, conj=True)):       # conj: complex solve only
        with pytest.raises(ValueError):
            key(**bad)
    with pytest.raises(ValueError):
        F.FusedKey("potrf", 8, 8, 8, "float64", False, "row_major", "row_major", 1, (32, 1, 1), SM)


def test_make_key_lowers_batches_per_block_to_fit():
    # explicit choices need no libmathdx; 32 pairs of 64 x 64 doubles (64 KiB a pair) cannot
    # share a block: halved down to 2 (128 KiB)
    k = F.make_key("inverse", 64, 64, "float64", False, "row_major", "row_major", SM,
                   batches_per_block=32, block=(128,))
    assert k.batches_per_block == 2 and k.kc == 64 and k.block == (128, 1, 1)
    k = F.make_key("inverse", 8, 8, "float64", True, "col_major", "col_major", SM,
                   batches_per_block=16, block=(64, 1))
    assert k.batches_per_block == 16 and k.block == (64, 1, 1) and k.upper
    k = F.make_key("potrf", 128, 0, "float32", False, "row_major", "row_major", SM,
                   batches_per_block=4, block=(256,))
    assert k.batches_per_block == 2 and k.kc == 0          # 4 x 64 KiB do not fit, 2 do
    with pytest.raises(ValueError):
        F.make_key("inverse", 128, 128, "complex128", False, "row_major", "row_major", SM,
                   batches_per_block=1, block=(256,))
    # cuSOLVERDx's own 1 KiB of static shared memory stays free (97 columns would fit at
    # n = 128, not 98), and the chunk is the power of two below: 64
    k = F.make_key("inverse", 128, 128, "float64", False, "col_major", "col_major", SM,
                   batches_per_block=1, block=(256,))
    assert k.kc == 64 and k.chunks == 2
    assert k.shared_bytes + F.CUSOLVERDX_STATIC_SMEM <= F.SMEM_LIMIT


# --------------------------------------------------------------------------- the kernel source
def test_kernel_source_defines():
    k = key(op="potrf_inverse", n=16, dtype="complex64", upper=True, arr_a="col_major",
            arr_b="row_major", bpb=2, block=(64, 2, 1))
    src = F.kernel_source(k, {"potrf": "sym_f", "potrs": "sym_s"})
    for line in ("#define N 16", "#define BPB 2", "#define NT 128", "#define OP 2", "#define CONJ 0",
                 "#define UPPER 1", "#define A_ROW 0", "#define B_ROW 1", "#define IS_COMPLEX 1",
                 "typedef float R;", 'extern "C" __device__ void sym_f(V* a, int* info);',
                 'extern "C" __device__ void sym_s(V* a, V* b);', "sym_f(sA, sInfo);",
                 "sym_s(sA, sB);", "fused_potrf_inverse("):
        assert line in src, line
    with pytest.raises(ValueError, match="potrf"):
        F.kernel_source(k, {"potrs": "sym_s"})
    real = F.kernel_source(key(op="potrf", dtype="float64"), {"potrf": "p"})
    assert "typedef double V;" not in real and "typedef R V;" in real and "#define OP 0" in real


# --------------------------------------------------------------------------- emulation
def _cells(i, n, kc, row):
    """The kernel's index formulas for the right-hand-side loops."""
    j, e = i // (n * kc), i % (n * kc)
    r = np.where(row, e // kc, e % n)
    cc = np.where(row, e % kc, e // n)
    return j, r, cc


def emulate(k: F.FusedKey, A: np.ndarray, B: np.ndarray | None, batch: int):
    """Run the kernel's loops in Python on flat global buffers; returns (X flat, info).
    Shared memory padding (leading dimensions > n) holds NaN: reading it poisons results."""
    n, bpb, nn, lda, ldb = k.n, k.batches_per_block, k.n * k.n, k.lda, k.ldb
    a_row, b_row = k.arr_a == "row_major", k.arr_b == "row_major"
    kc, nrhs = max(k.kc, 1), max(k.nrhs, 1)
    sb_one = n * ldb if b_row else kc * ldb
    dt = A.dtype
    X = np.full(batch * (nn if k.op == "potrf" else n * nrhs), np.nan, dt)
    info = np.full(batch, -99, np.int32)

    def view_a(sm, j):  # matrix j of sA as cuSOLVERDx reads it (arrangement, lda)
        blk = sm[j * n * lda:(j + 1) * n * lda].reshape(n, lda)[:, :n]
        return blk if a_row else blk.T

    def view_b(sm, j):
        blk = sm[j * sb_one:(j + 1) * sb_one]
        return blk.reshape(n, ldb)[:, :kc] if b_row else blk.reshape(kc, ldb)[:, :n].T

    for blk in range(F.grid_size(batch, bpb)):
        m0 = blk * bpb
        here = min(bpb, batch - m0)
        i = np.arange(bpb * nn)
        j, e = i // nn, i % nn
        sidx = j * (n * lda) + (e // n) * lda + e % n          # the kernel's formula
        sA = np.full(bpb * n * lda, np.nan, dt)
        sA[sidx] = np.where(j < here, A[np.minimum(m0 * nn + i, A.size - 1)],
                            np.where(e // n == e % n, 1, 0))
        factors = []
        for jj in range(bpb):
            M = view_a(sA, jj)   # a view: writes go to sA
            if k.op in ("potrf", "potrf_inverse"):
                full = np.triu(M) + np.triu(M, 1).conj().T if k.upper else np.tril(M) + np.tril(M, -1).conj().T
                try:
                    f = scipy.linalg.cholesky(full, lower=not k.upper)
                    code = 0
                except np.linalg.LinAlgError:
                    f, code = np.eye(n, dtype=dt), 1
                tri = np.triu if k.upper else np.tril
                M[...] = np.where(tri(np.ones((n, n), bool)), f, M)
                if jj < here:
                    info[m0 + jj] = code
            factors.append((M.copy(), k.upper))
        if k.op == "potrf":
            r = np.where(a_row, e // n, e % n)
            c = np.where(a_row, e % n, e // n)
            keep = (r <= c) if k.upper else (r >= c)
            live = i < here * nn
            X[m0 * nn + i[live]] = np.where(keep, sA[sidx], 0)[live]
            continue
        for ch in range(k.chunks):
            c0 = ch * kc
            i = np.arange(bpb * n * kc)
            j, r, cc = _cells(i, n, kc, b_row)
            col = c0 + cc
            gidx = (m0 + j) * n * nrhs + np.where(b_row, r * nrhs + col, col * n + r)
            bidx = j * sb_one + np.where(b_row, r * ldb + cc, cc * ldb + r)
            sB = np.full(bpb * sb_one, np.nan, dt)
            if k.op == "solve":
                ok = (j < here) & (col < nrhs)
                v = np.where(ok, B[np.where(ok, gidx, 0)], 0).astype(dt)
                sB[bidx] = np.conj(v) if k.conj else v
            else:
                sB[bidx] = np.where(r == col, 1, 0)
            for jj in range(bpb):
                M, up = factors[jj]
                Bj = view_b(sB, jj)
                Bj[...] = scipy.linalg.cho_solve((M, not up), Bj.copy())
            live = (i < here * n * kc) & (col < nrhs)
            out = sB[bidx]
            X[gidx[live]] = (np.conj(out) if k.conj else out)[live]
    return X, info


def _spd(batch, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((batch, n, n))
    if np.dtype(dtype).kind == "c":
        G = G + 1j * rng.standard_normal((batch, n, n))
    return (G @ np.conj(np.swapaxes(G, -1, -2)) / n + np.eye(n)).astype(dtype)


def _buffer(x: np.ndarray, arr: str) -> np.ndarray:
    return (x if arr == "row_major" else np.swapaxes(x, -1, -2)).reshape(-1).copy()


def _matrices(flat, batch, r, c, arr):
    return flat.reshape(batch, r, c) if arr == "row_major" else np.swapaxes(flat.reshape(batch, c, r), -1, -2)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("arr", ["row_major", "col_major"])
@pytest.mark.parametrize("pad", [0, 1])
def test_emulated_kernel_inverse_and_potrf(dtype, upper, arr, pad):
    n, batch = 5, 7                               # 7 = 2 blocks of 3 + a tail of 1
    A = _spd(batch, n, dtype)
    A[2, 1, 1] = -5                               # not positive definite: info != 0
    Ainv = np.linalg.inv(A)
    # potrf: the factor, other triangle zero, info per matrix, tail written, nothing else
    X, info = emulate(key("potrf", n, dtype=dtype, upper=upper, arr_a=arr, bpb=3, pad=pad),
                      _buffer(A, arr), None, batch)
    L = _matrices(X, batch, n, n, arr)
    assert list(info) == [0, 0, 1, 0, 0, 0, 0]
    for m in (0, 1, 3, 6):
        ref = scipy.linalg.cholesky(A[m], lower=not upper)
        np.testing.assert_allclose(L[m], ref, atol=1e-12)
    # inverse from the factor, the unused triangle holding garbage it must not read
    good = [0, 1, 3, 4, 5, 6]
    Lref = np.stack([scipy.linalg.cholesky(A[m] if m != 2 else np.eye(n), lower=not upper)
                     for m in range(batch)])
    junk = np.where(np.triu(np.ones((n, n), bool)) if upper else np.tril(np.ones((n, n), bool)),
                    Lref, 7.0).astype(dtype)
    X, _ = emulate(key("inverse", n, dtype=dtype, upper=upper, arr_a=arr, arr_b=arr, bpb=3, pad=pad),
                   _buffer(junk, arr), None, batch)
    np.testing.assert_allclose(_matrices(X, batch, n, n, arr)[good], Ainv[good], atol=1e-10)
    # A -> A^-1 in one go
    X, info = emulate(key("potrf_inverse", n, dtype=dtype, upper=upper, arr_a=arr, arr_b=arr, bpb=3,
                          pad=pad),
                      _buffer(A, arr), None, batch)
    assert list(info) == [0, 0, 1, 0, 0, 0, 0]
    np.testing.assert_allclose(_matrices(X, batch, n, n, arr)[good], Ainv[good], atol=1e-10)


@pytest.mark.parametrize("arr_a,arr_b", [("col_major", "row_major"), ("row_major", "col_major")])
@pytest.mark.parametrize("nrhs,kc", [(1, 1), (3, 3), (7, 3), (6, 4)])
@pytest.mark.parametrize("pad", [0, 2])
def test_emulated_kernel_solve_in_chunks(arr_a, arr_b, nrhs, kc, pad):
    n, batch = 6, 5
    A = _spd(batch, n, "float64", seed=1)
    B = np.random.default_rng(2).standard_normal((batch, n, nrhs))
    L = np.stack([np.linalg.cholesky(a) for a in A])
    k = key("solve", n, nrhs=nrhs, kc=kc, arr_a=arr_a, arr_b=arr_b, bpb=2, pad=pad)
    X, _ = emulate(k, _buffer(L, arr_a), _buffer(B, arr_b), batch)
    np.testing.assert_allclose(_matrices(X, batch, n, nrhs, arr_b), np.linalg.solve(A, B), atol=1e-10)


# --------------------------------------------------------------------------- caching
def test_cache_key_depends_on_everything():
    base = key()
    versions = {"nvmath": "1.0.0", "libmathdx": "0.4.2", "nvrtc": "13.0", "nvjitlink": "13.0"}
    d0 = F.cache_key(base, versions)
    assert len(d0) == 32 and d0 == F.cache_key(key(), dict(reversed(versions.items())))
    others = [key(n=16), key(dtype="float32"), key(upper=True), key(arr_a="col_major"),
              key(arr_b="col_major"), key(bpb=2), key(block=(64, 1, 1)), key(op="potrf_inverse"),
              key(op="solve", nrhs=3)]
    digests = {F.cache_key(k, versions) for k in others}
    assert d0 not in digests and len(digests) == len(others)
    assert F.cache_key(base, {**versions, "libmathdx": "0.4.3"}) != d0
    import dataclasses

    assert F.cache_key(dataclasses.replace(base, sm=(10, 0)), versions) != d0
    c = key(op="solve", nrhs=3, dtype="complex64")
    assert F.cache_key(c, versions) != F.cache_key(dataclasses.replace(c, conj=True), versions)


def test_disk_cache_round_trip(tmp_path):
    c = F.DiskCache(tmp_path / "sub")
    d = F.cache_key(key(), {"v": "1"})
    assert c.load(d) is None
    blob = bytes(range(256)) * 10                 # a stand-in for a cubin (the mechanism only)
    c.store(d, blob, {"kernel": "fused_inverse", "shared_bytes": 1040})
    assert c.load(d) == (blob, {"kernel": "fused_inverse", "shared_bytes": 1040})
    assert F.DiskCache(tmp_path / "sub").load(d)[0] == blob        # another process
    assert not [p for p in os.listdir(tmp_path / "sub") if p.startswith(".tmp-")]
    # a truncated blob or a damaged index is a miss, never a wrong kernel
    (tmp_path / "sub" / f"{d}.cubin").write_bytes(blob[:-1])
    assert c.load(d) is None
    c.store(d, blob, {})
    (tmp_path / "sub" / f"{d}.json").write_text("{not json")
    assert c.load(d) is None
    with pytest.raises(ValueError):
        c.load("../../etc/passwd")


def test_disk_cache_location(monkeypatch, tmp_path):
    monkeypatch.delenv("CUSOLVER_TRACE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert F.default_cache_dir() == tmp_path / "cusolver_trace" / "fused"
    monkeypatch.setenv("CUSOLVER_TRACE_CACHE", str(tmp_path / "x"))
    assert F.DiskCache().root == tmp_path / "x"


def test_disk_cache_unwritable_is_not_an_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    c = F.DiskCache(f / "below")                  # cannot mkdir below a file
    c.store("0" * 32, b"x", {})
    assert c.load("0" * 32) is None


# --------------------------------------------------------------------------- the missing extra
def test_missing_extra_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_nvmath(name, *a, **kw):
        if name.startswith("nvmath") or name.startswith("cuda.bindings"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *a, **kw)

    monkeypatch.setattr(_fused_toolchain, "_TOOLS", None)   # the state _tools() keeps
    monkeypatch.setattr(_fused_toolchain, "_TOOLS_ERROR", None)
    monkeypatch.setattr(_fused_toolchain, "_AVAILABLE", False)
    monkeypatch.setattr(builtins, "__import__", no_nvmath)
    with pytest.raises(F.FusedUnavailableError, match=r"cusolver-trace\[cuda13-fused\]") as exc:
        F._tools()
    from cusolver_trace.errors import GPUUnavailableError

    assert isinstance(exc.value, GPUUnavailableError)
    assert "cusolver-trace[cuda13-fused]" in F.available()
    with pytest.raises(F.FusedUnavailableError):
        F.potrf(torch.eye(3), False)
    monkeypatch.setattr(builtins, "__import__", real_import)
    with pytest.raises(F.FusedUnavailableError):   # the failure is remembered, not retried
        F._tools()


def test_import_needs_no_gpu_stack():
    # the module imports with neither numba nor nvmath importable (CI), and loads nothing
    code = ("import sys; sys.modules['numba'] = None; sys.modules['nvmath'] = None; "
            "import cusolver_trace.backends.fused as f; assert 'cupy' not in sys.modules; print('ok')")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_pyproject_declares_the_extra():
    tomllib = pytest.importorskip("tomllib")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    name = F.EXTRA.split("[")[1].rstrip("]")
    deps = " ".join(extras[name])
    for pkg in ("numba-cuda", "nvidia-libmathdx-cu13", "nvmath-python[cu13]"):
        assert pkg in deps, pkg


# --------------------------------------------------------------------------- layout plans
def test_plan_call_table():
    P = F.plan_call
    # row-major inputs: read as they are, whatever the layout policy
    for layout in F.LAYOUTS:
        assert P("inverse", "float64", False, "row_major", layout=layout) == dict(
            upper=False, arr_a="row_major", arr_b="row_major", conj=False, out="row_major")
    # column-major inputs, native: the buffer's own order, the caller's fill mode
    assert P("potrf", "complex64", True, "col_major", layout="native") == dict(
        upper=True, arr_a="col_major", arr_b="col_major", conj=False, out="col_major")
    # column-major inputs, row_major policy: the transpose's buffer, fill mode flipped
    assert P("potrf", "complex64", True, "col_major", layout="row_major") == dict(
        upper=False, arr_a="row_major", arr_b="row_major", conj=False, out="col_major")
    assert P("solve", "float32", False, "col_major", "col_major", layout="row_major") == dict(
        upper=True, arr_a="row_major", arr_b="col_major", conj=False, out="col_major")
    assert P("solve", "complex128", False, "col_major", "row_major", layout="row_major")["conj"]
    assert not P("solve", "complex128", False, "row_major", "row_major", layout="row_major")["conj"]
    assert P("inverse", "float64", False, "col_major") == P("inverse", "float64", False, "col_major",
                                                           layout=F.LAYOUT)
    with pytest.raises(ValueError):
        P("inverse", "float64", False, "col_major", layout="C")
    with pytest.raises(ValueError):
        P("solve", "float64", False, "row_major")


def _via_plan(op, A_or_L, B, upper, in_a, in_b, layout, bpb=3):
    """Run op through plan_call and the emulated kernel on buffers in the given memory
    orders; returns the result as matrices read in the plan's output order."""
    batch, n = A_or_L.shape[0], A_or_L.shape[-1]
    dtype = str(A_or_L.dtype)
    p = F.plan_call(op, dtype, upper, in_a, in_b, layout)
    nrhs = B.shape[-1] if op == "solve" else (0 if op == "potrf" else n)
    k = key(op, n, nrhs=nrhs, dtype=dtype, upper=p["upper"], arr_a=p["arr_a"], arr_b=p["arr_b"],
            bpb=bpb, conj=p["conj"])
    X, info = emulate(k, _buffer(A_or_L, in_a), None if B is None else _buffer(B, in_b), batch)
    return _matrices(X, batch, n, nrhs if op == "solve" else n, p["out"]), info


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("layout", F.LAYOUTS)
def test_column_major_inputs_under_each_layout(dtype, upper, layout):
    # what the flip relies on: a column-major L is a row-major L^T (for complex: the
    # conjugate of the factor cuSOLVERDx expects); results must not depend on the policy
    n, batch = 5, 7
    A = _spd(batch, n, dtype, seed=3)
    Ainv = np.linalg.inv(A)
    L, info = _via_plan("potrf", A, None, upper, "col_major", None, layout)
    assert list(info) == [0] * batch
    ref = np.stack([scipy.linalg.cholesky(a, lower=not upper) for a in A])
    np.testing.assert_allclose(L, ref, atol=1e-12)
    X, _ = _via_plan("inverse", ref, None, upper, "col_major", None, layout)
    np.testing.assert_allclose(X, Ainv, atol=1e-10)
    X, info = _via_plan("potrf_inverse", A, None, upper, "col_major", None, layout)
    np.testing.assert_allclose(X, Ainv, atol=1e-10)
    B = np.random.default_rng(4).standard_normal((batch, n, 3)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        B = B + 1j * np.random.default_rng(5).standard_normal((batch, n, 3))
    for in_b in ("row_major", "col_major"):
        X, _ = _via_plan("solve", ref, B, upper, "col_major", in_b, layout)
        np.testing.assert_allclose(X, np.linalg.solve(A, B), atol=1e-10)


# --------------------------------------------------------------------------- auto and the extra
def test_auto_passes_over_a_fused_rule_that_cannot_run(monkeypatch):
    from cusolver_trace import routines

    table = {"small batches": routines.AutoRule("fused", device="cuda", batch_min=2, n_max=64),
             **routines.CHOLESKY_INVERSE.auto}
    monkeypatch.setattr(routines.CHOLESKY_INVERSE, "auto", table)
    # here the extra is missing (no nvmath / GPU): auto must not pick fused, nor fail
    assert F.available() is not None
    assert routines.resolve_method("auto", 32, 1000, "float64", "cuda") != "fused"
    # where it can run, the rule wins; n beyond shared memory falls through again
    monkeypatch.setattr(F, "available", lambda: None)
    assert routines.resolve_method("auto", 32, 1000, "float64", "cuda") == "fused"
    table["small batches"] = routines.AutoRule("fused", device="cuda", batch_min=2)
    assert routines.resolve_method("auto", 512, 8, "complex128", "cuda") != "fused"
    assert routines.resolve_method("fused", 32, 1000, "float64", "cuda") == "fused"
    with pytest.raises(ValueError, match="CUDA"):
        routines.resolve_method("fused", 32, 1000, "float64", "cpu")


def test_the_shipped_auto_table_picks_fused_only_where_it_was_measured(monkeypatch):
    """The shipped rules (CHOLESKY_INVERSE.auto): fused for batches >= 100 of real matrices
    with n <= 128 (the measured cases), never for complex, small batches or larger n; torch
    where the extra is missing."""
    from cusolver_trace import routines

    assert F.available() is not None                      # no extra here: torch's own choice
    assert routines.resolve_method("auto", 8, 10000, "float64", "cuda") == "torch"
    monkeypatch.setattr(F, "available", lambda: None)
    for batch, n, dtype in ((100000, 4, "float64"), (10000, 8, "float32"), (100, 128, "float64"),
                            (1000, 32, "float32")):
        assert routines.resolve_method("auto", n, batch, dtype, "cuda") == "fused", (batch, n, dtype)
    for batch, n, dtype in ((99, 8, "float64"), (1000, 129, "float32"), (1000, 8, "complex64"),
                            (1, 16, "float64")):
        assert routines.resolve_method("auto", n, batch, dtype, "cuda") != "fused", (batch, n, dtype)
    assert routines.resolve_method("auto", 8, 10000, "float64", "cpu") == "potri"


def test_the_in_kernel_check_is_a_separate_compiled_kernel():
    """check=True compiles the check in (CHECK 1); the default kernel has none of its code
    (CHECK 0: the record pointer is a constant null), so the unchecked kernels keep their
    speed; the two never share a cache entry; only the inverses have the check."""
    k0 = F.make_key("inverse", 8, 8, "float64", False, "row_major", "row_major", SM,
                    batches_per_block=4, block=(32,))
    k1 = F.make_key("inverse", 8, 8, "float64", False, "row_major", "row_major", SM,
                    batches_per_block=4, block=(32,), check=True)
    assert (k0.check, k1.check) == (False, True)
    s0, s1 = (F.kernel_source(k, {"potrs": "p"}) for k in (k0, k1))
    assert "#define CHECK 0" in s0 and "#define CHECK 1" in s1
    assert "CHECK ? args.rec : nullptr" in s0
    assert F.cache_key(k0, {"v": "1"}) != F.cache_key(k1, {"v": "1"})
    with pytest.raises(ValueError, match="inverses"):
        F.make_key("potrf", 8, 0, "float64", False, "row_major", "row_major", SM,
                   batches_per_block=4, block=(32,), check=True)


def test_auto_remembers_its_choice_per_shape_but_sees_a_new_table(monkeypatch):
    """``auto`` walks CHOLESKY_INVERSE.auto once per shape; replacing the rules (or the fused
    method's availability) is seen on the next call; the shipped rules cannot be changed in
    place."""
    from cusolver_trace import routines

    with pytest.raises(TypeError):
        routines.CHOLESKY_INVERSE.auto["mine"] = routines.AutoRule("potri")
    before = routines.resolve_method("auto", 8, 10000, "float64", "cuda")
    assert routines.resolve_method("auto", 8, 10000, "float64", "cuda") == before  # remembered
    monkeypatch.setattr(routines.CHOLESKY_INVERSE, "auto", {"all": routines.AutoRule("potri")})
    assert routines.resolve_method("auto", 8, 10000, "float64", "cuda") == "potri"
    monkeypatch.setattr(routines.CHOLESKY_INVERSE, "auto", {
        "fused": routines.AutoRule("fused", device="cuda"), "else": routines.AutoRule("trsm")})
    assert routines.resolve_method("auto", 8, 10000, "float64", "cuda") == "trsm"  # no extra here
    monkeypatch.setattr(F, "available", lambda: None)
    assert routines.resolve_method("auto", 8, 10000, "float64", "cuda") == "fused"
    with pytest.raises(LookupError):
        monkeypatch.setattr(routines.CHOLESKY_INVERSE, "auto", {})
        routines.resolve_method("auto", 8, 10000, "float64", "cuda")


def test_auto_table_rules_are_validated_and_in_place_edits_are_seen(monkeypatch):
    """AutoRule rejects what can never match (fresh-user report: a bad method failed later
    with a bare KeyError, a device 'cpu:0' or dtypes=torch.float64 silently never matched);
    a replaced table edited in place is seen by auto's memo."""
    from cusolver_trace import routines

    for bad in (dict(method=""), dict(method="auto"), dict(method="potri", device="gpu"),
                dict(method="potri", n_min=-1), dict(method="potri", batch_max=2.5)):
        with pytest.raises(ValueError):
            routines.AutoRule(**bad)
    monkeypatch.setattr(routines.CHOLESKY_INVERSE, "auto", {"x": routines.AutoRule("nonsense")})
    with pytest.raises(ValueError, match="'nonsense', which is not one of its methods"):
        routines.resolve_method("auto", 8, 1, "float64", "cpu")
    with pytest.raises(TypeError):
        routines.AutoRule("potri", dtypes="float64")
    assert routines.AutoRule("potri", dtypes=(torch.float64, "float32")).dtypes == ("float64",
                                                                                    "float32")
    table = {"c": routines.AutoRule("rec_trtri_lauum", device="cpu")}
    monkeypatch.setattr(routines.CHOLESKY_INVERSE, "auto", table)
    assert routines.resolve_method("auto", 8, 1, "float64", "cpu") == "rec_trtri_lauum"
    table["c"] = routines.AutoRule("potrs", device="cpu")
    assert routines.resolve_method("auto", 8, 1, "float64", "cpu") == "potrs"
    monkeypatch.setattr(routines.CHOLESKY_INVERSE, "auto", [routines.AutoRule("potri")])
    with pytest.raises(TypeError, match="mapping"):
        routines.resolve_method("auto", 8, 1, "float64", "cpu")
    monkeypatch.setattr(routines.CHOLESKY_INVERSE, "auto", {"x": ("potri",)})
    with pytest.raises(TypeError, match="AutoRule"):
        routines.resolve_method("auto", 8, 1, "float64", "cpu")
