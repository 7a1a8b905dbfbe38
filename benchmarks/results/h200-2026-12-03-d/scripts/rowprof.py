"""Host time of the torch row through the entry point (session 11)."""
import cProfile, pstats, time, statistics, io
import torch
import cusolver_trace as ct
n, batch = 64, 1000
G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64)
A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
L = torch.linalg.cholesky(A)
def wall(fn, k=200):
    ts = []
    for _ in range(k):
        torch.cuda.synchronize(); t = time.perf_counter(); fn(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3
for name, fn in [("torch", lambda: torch.cholesky_inverse(L)),
                 ("ct torch checked", lambda: ct.cholesky_inverse(L, method="torch")),
                 ("ct torch unchecked", lambda: ct.cholesky_inverse(L, method="torch", check=False)),
                 ("torch + isfinite.all", lambda: bool(torch.isfinite(torch.cholesky_inverse(L)).all()))]:
    wall(fn, 20)
    print(f"{name}: {wall(fn):.3f} ms")
# host time only (no sync between): 
def host(fn, k=300):
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(k): fn()
    t1 = time.perf_counter(); torch.cuda.synchronize(); return (t1 - t) / k * 1e3
print(f"host torch {host(lambda: torch.cholesky_inverse(L)):.3f} ms/call, ct unchecked {host(lambda: ct.cholesky_inverse(L, method='torch', check=False)):.3f}, ct checked {host(lambda: ct.cholesky_inverse(L, method='torch')):.3f}")
pr = cProfile.Profile(); pr.enable()
for _ in range(300): ct.cholesky_inverse(L, method="torch")
pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25); print(s.getvalue()[:6000])
