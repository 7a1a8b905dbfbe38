"""Session 16: which cholesky_inverse methods read a complex factor's non-real diagonal as
given (inv(L·Lᴴ)) and which as LAPACK's potri does, on the GPU (checked calls). Development
data for a note, not a fix."""
import numpy as np, torch, cusolver_trace as ct
for n in (6, 300):
    rng = np.random.default_rng(n)
    L = np.tril(rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))) / np.sqrt(n) + 3 * np.eye(n)
    L[np.diag_indices(n)] *= np.exp(1j * rng.uniform(0, 2 * np.pi, n))
    ref = np.linalg.inv(L @ L.conj().T)
    Lg = torch.from_numpy(L).cuda()
    for m in ["potrs", "potri", "trsm", "trsm_batched", "trtri_lauum", "rec_trtri_lauum", "gemm_lauum", "fused", "torch"]:
        try:
            X = ct.cholesky_inverse(Lg, method=m).cpu().numpy()
            print(f"n={n} {m:16s} rel diff from inv(L·Lᴴ) {np.abs(X - ref).max() / np.abs(ref).max():.1e}", flush=True)
        except Exception as e:
            print(f"n={n} {m:16s} {type(e).__name__}: {str(e)[:100]}", flush=True)
