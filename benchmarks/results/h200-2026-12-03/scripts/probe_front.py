"""Which front end torch 2.11 runs: factor A or Aᵀ (use_A_T) in solve / inv / det / slogdet."""
import torch
from cusolver_trace import checks
from cusolver_trace.backends import cuda_lu
from cusolver_trace.ops import det as D, slogdet as S
from cusolver_trace.matrices import general

def eq(a, b):
    if isinstance(a, tuple):
        return all(eq(x, y) for x, y in zip(a, b))
    if not (a.is_floating_point() or a.is_complex()):
        return bool(torch.equal(a, b))
    return bool(checks.bitwise_equal(a, b))

for dt in ("float64", "float32", "complex128"):
    for n, b in ((33, 1), (64, 1), (256, 1), (33, 4), (8, 4)):
        A = general(n, batch=() if b == 1 else (b,), dtype=dt, device="cuda", seed=5)
        B = torch.randn(*A.shape[:-1], 3, dtype=A.dtype, device="cuda")
        api = "legacy" if b == 1 else "batched"
        out = []
        for name, M in (("A", A), ("AT", A.mT)):
            LU, piv, info = cuda_lu.getrf(M, True, api)
            # det as torch computes it from this factorization
            det = D.from_lu(LU, piv)
            out.append(f"det[{name}]={eq(det, torch.linalg.det(A))}")
            sl = S.from_lu(LU, piv)
            ts, tl = torch.linalg.slogdet(A)
            out.append(f"slogdet[{name}]={eq(sl, (tl, ts))}")
            for adj in (False, True):
                try:
                    if n == 33 and b == 1:
                        X, _ = cuda_lu.getrs(LU, piv, B, adj, "legacy")
                    elif b > 1 and n <= 8:
                        X, _ = cuda_lu.getrs(LU, piv, B, adj, "batched")
                    else:
                        X = cuda_lu.lu_solve_triangular(LU, piv, B, adj) if n > 64 else cuda_lu.getrs(LU, piv, B, adj, "legacy")[0]
                    out.append(f"solve[{name},adj={int(adj)}]={eq(X, torch.linalg.solve(A, B))}")
                except Exception as e:
                    out.append(f"solve[{name},adj={int(adj)}]=ERR {type(e).__name__}")
        print(f"{dt:10s} n={n:4d} b={b}: " + " ".join(out), flush=True)
