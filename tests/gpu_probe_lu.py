"""GPU probe: what only the GPU can settle about torch's LU family and our LU backend.

Run on the H200 (torch 2.11, CuPy 14, nvmath-python 1.0):

    python3 tests/gpu_probe_lu.py            # prints one table; exit 0

Questions (one row each, answer in the last column):

Q1  Is our 64-bit path (``api="X"``: cusolverDnXgetrf / Xgetrs) bitwise equal to torch's
    legacy ``<t>getrf`` / ``<t>getrs`` (LU, pivots, info, X), per dtype and n, a singular
    matrix included?
Q2  Does torch 2.11's ``lu_solve`` honour the conjugate bit of a conjugate-view LU on each of
    its paths (getrs loop, getrsBatched, triangular)? (torch borrows an F-contiguous LU
    without resolving the bit; the library reads the memory. The backend resolves it.)
Q3  Which routine does torch 2.11 run for the triangular path at batch > 8 and n > 512
    (cuBLAS trsmBatched or MAGMA)? Kernel names from torch.profiler, and whether our
    trsmBatched replay is bitwise equal.
Q4  An LU with a size-1 batch dimension of odd stride (``LU.unsqueeze(1)``: shape
    (2, 1, n, n), stride(-3) = n) on the getrs loop: torch indexes matrices by
    ``LU.stride(-3)``; is torch's answer still right? (The backend indexes by n * n.)
Q5  ``pivot=False`` with an exact zero pivot (the unpivoted LU divides by zero): our LU
    (NaN fix-up after cuSOLVER; none after cuBLAS) bitwise equal to torch's, info equal?
Q6  Does the backend's answer depend on the workspace (a fresh one per matrix, as torch
    allocates, against our grow-only scratch)?
"""
from __future__ import annotations

import sys

import torch

from cusolver_trace import checks
from cusolver_trace.backends import cuda_lu

ROWS = []


def row(q, case, answer):
    ROWS.append((q, case, str(answer)))
    print(f"{q:<4} {case:<58} {answer}", flush=True)


def pref(lib):
    torch.backends.cuda.preferred_linalg_library(lib)


def general(shape, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    real = torch.float64 if dtype in (torch.float64, torch.complex128) else torch.float32
    A = torch.randn(*shape, device="cuda", dtype=real, generator=g)
    if dtype.is_complex:
        A = torch.complex(A, torch.randn(*shape, device="cuda", dtype=real, generator=g))
    return A


def matrix(n, batch, dtype, seed=0):
    return general((*batch, n, n), dtype, seed) + n * torch.eye(n, device="cuda", dtype=dtype)


def same(a, b):
    if checks.bitwise_equal(a, b):
        return "bitwise"
    return f"DIFFER (max {checks.max_ulp_distance(a, b)} ulp)"


def q1():
    for dtype in (torch.float32, torch.float64, torch.complex64, torch.complex128):
        for n in (2, 33, 256, 1024):
            A = matrix(n, (), dtype, seed=n)
            pref("cusolver")
            want = torch.linalg.lu_factor_ex(A)
            LU, piv, info = cuda_lu.getrf(A, True, "X")
            ok = same(LU, want.LU)
            ok += "" if torch.equal(piv, want.pivots) else ", PIVOTS DIFFER"
            ok += "" if torch.equal(info, want.info.reshape(-1)) else ", INFO DIFFERS"
            row("Q1", f"Xgetrf vs torch getrf {str(dtype)[6:]} n={n}", ok)
            B = general((n, 3), dtype, seed=1)
            X_leg, _ = cuda_lu.getrs(want.LU, want.pivots, B, True, "legacy")
            X_x, _ = cuda_lu.getrs(want.LU, want.pivots, B, True, "X")
            row("Q1", f"Xgetrs vs getrs (adjoint) {str(dtype)[6:]} n={n}", same(X_x, X_leg))
        S = matrix(33, (), dtype)
        S[:, 4] = 0
        want = torch.linalg.lu_factor_ex(S)
        LU, piv, info = cuda_lu.getrf(S, True, "X")
        row("Q1", f"Xgetrf singular col 5 {str(dtype)[6:]}: info X / torch",
            f"{int(info)} / {int(want.info)}; LU {same(LU, want.LU)}")
    pref("default")


def q2():
    dtype = torch.complex128
    for name, n, batch, p in (("getrs loop", 33, (), "default"), ("getrsBatched", 8, (4,), "default"),
                              ("triangular", 256, (), "default"), ("getrs loop", 64, (), "cusolver")):
        pref(p)
        A = matrix(n, batch, dtype, seed=2)
        LU, piv = torch.linalg.lu_factor(A)
        B = general((*batch, n, 3), dtype, seed=3)
        got = torch.linalg.lu_solve(LU.conj(), piv, B)
        right = torch.linalg.lu_solve(LU.conj().resolve_conj(), piv, B)
        wrong = torch.linalg.lu_solve(LU, piv, B)
        verdict = ("honours the bit" if checks.bitwise_equal(got, right) else
                   "IGNORES the bit (= unconjugated LU)" if checks.bitwise_equal(got, wrong) else
                   "neither")
        row("Q2", f"torch lu_solve(LU.conj()) {name} n={n} pref={p}", verdict)
    pref("default")


def q3():
    from torch.profiler import ProfilerActivity, profile

    for n, batch in ((600, 16), (1024, 9), (512, 16)):
        A = matrix(n, (batch,), torch.float64, seed=4)
        LU, piv = torch.linalg.lu_factor(A)
        B = general((batch, n, 3), torch.float64, seed=5)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            want = torch.linalg.lu_solve(LU, piv, B)
            torch.cuda.synchronize()
        names = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
        kinds = ("MAGMA" if any("magma" in k.lower() for k in names) else "") + \
                (" trsm:" + ",".join(k[:40] for k in names if "trsm" in k.lower())[:120])
        X = cuda_lu.lu_solve_triangular(LU, piv, B, False)
        row("Q3", f"lu_solve n={n} batch={batch} kernels", kinds)
        row("Q3", f"lu_solve n={n} batch={batch} ours (trsmBatched) vs torch", same(X, want))


def q4():
    pref("cusolver")
    n = 64
    A = matrix(n, (2,), torch.float64, seed=6)
    LU, piv = torch.linalg.lu_factor(A)
    LU1, piv1 = LU.unsqueeze(1), piv.unsqueeze(1)
    B = general((2, 1, n, 3), torch.float64, seed=7)
    want = torch.linalg.lu_solve(LU1, piv1, B)
    right = torch.linalg.lu_solve(LU1.contiguous(), piv1.contiguous(), B)
    ours, _ = cuda_lu.getrs(LU1, piv1, B, False, "legacy")
    row("Q4", f"LU.unsqueeze(1) strides {tuple(LU1.stride())}: torch right?",
        "yes" if torch.allclose(want, right) else "NO (torch indexes by stride(-3))")
    row("Q4", "  ours vs torch on a contiguous copy", same(ours, right))
    pref("default")


def q5():
    for dtype in (torch.float64, torch.complex64):
        for n, batch, p, api in ((33, (), "default", "legacy"), (33, (4,), "default", "batched"),
                                 (600, (2,), "cusolver", "legacy")):
            pref(p)
            A = matrix(n, batch, dtype, seed=8)
            A[..., 0, 0] = 0
            want = torch.linalg.lu_factor_ex(A, pivot=False)
            LU, piv, info = cuda_lu.getrf(A, False, api)
            nan = bool(want.LU.isnan().any())
            row("Q5", f"pivot=False zero pivot {str(dtype)[6:]} n={n} {api}",
                f"{same(LU, want.LU)}; info {info.tolist()} / {want.info.reshape(-1).tolist()}; "
                f"torch LU has NaN: {nan}")
    pref("default")


def q6():
    from cusolver_trace.backends import _context

    A = matrix(256, (3,), torch.float64, seed=9)
    LU1, _, _ = cuda_lu.getrf(A, True, "legacy")
    ctx = _context.context(A.get_device())
    ctx.scratch.clear()
    big = torch.full((1 << 24,), float("nan"), device="cuda", dtype=torch.float64)  # dirty memory
    del big
    LU2, _, _ = cuda_lu.getrf(A, True, "legacy")
    row("Q6", "getrf legacy, fresh dirty workspace vs scratch", same(LU1, LU2))


def main():
    import cupy
    try:
        import nvmath
        nv = nvmath.__version__
    except Exception as exc:  # reported, not fatal
        nv = f"unavailable ({exc})"
    print(f"torch {torch.__version__} cuda {torch.version.cuda} cupy {cupy.__version__} "
          f"nvmath {nv} device {torch.cuda.get_device_name()}")
    for q in (q1, q2, q3, q4, q5, q6):
        try:
            q()
        except Exception as exc:  # one failing probe must not hide the others
            row(q.__name__.upper(), "probe failed", f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
