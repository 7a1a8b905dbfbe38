"""Session 12: where the first auto call of a new shape spends its time (after first_call.py's warm-up)."""
import os, sys, time, tempfile, statistics, threading, cProfile, pstats, io
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
import torch
import cusolver_trace as ct
from cusolver_trace import routines

def wall(fn):
    torch.cuda.synchronize(); t = time.perf_counter(); out = fn(); torch.cuda.synchronize()
    return time.perf_counter() - t

print(routines.resolve_method("auto", 64, 1000, "float64", "cuda"))
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3):
    wall(lambda: ct.cholesky_inverse(small, method="auto"))

def make(batch, n):
    g = torch.Generator(device="cuda").manual_seed(n)
    G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
    A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
    return torch.linalg.cholesky(A)

def base(L):
    for _ in range(3): wall(lambda: torch.cholesky_inverse(L))
    tt = statistics.median(wall(lambda: torch.cholesky_inverse(L)) for _ in range(20))
    for _ in range(3): wall(lambda: ct.cholesky_inverse(L, method="torch"))
    ck = statistics.median(wall(lambda: ct.cholesky_inverse(L, method="torch")) for _ in range(20))
    uk = statistics.median(wall(lambda: ct.cholesky_inverse(L, method="torch", check=False)) for _ in range(20))
    return tt, ck, uk

# plain first calls of 4 cold shapes (the first like the benchmark)
for batch, n in ((1000, 64), (1000, 60), (1000, 56), (300, 100)):
    L = make(batch, n)
    tt, ck, uk = base(L)
    first = wall(lambda: ct.cholesky_inverse(L, method="auto"))
    nxt = [wall(lambda: ct.cholesky_inverse(L, method="auto")) for _ in range(6)]
    time.sleep(0.1)
    nx2 = [wall(lambda: ct.cholesky_inverse(L, method="auto")) for _ in range(6)]
    print(f"{batch}x{n}: torch {tt*1e3:.3f}  ct-torch checked {ck*1e3:.3f} unchecked {uk*1e3:.3f}  first auto {first*1e3:.3f} "
          f"({first/tt:.2f}x)  next {' '.join(f'{x*1e3:.3f}' for x in nxt)}  after 0.1 s {' '.join(f'{x*1e3:.3f}' for x in nx2)}")

# cProfile of a first call (cold shape), and of a warm torch-row call
for batch, n in ((1000, 52), (1000, 44)):
    L = make(batch, n)
    base(L)
    torch.cuda.synchronize()
    pr = cProfile.Profile(); pr.enable(); ct.cholesky_inverse(L, method="auto"); torch.cuda.synchronize(); pr.disable()
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30); print(f"--- cProfile first auto {batch}x{n}\n" + s.getvalue()[:6000])
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(30); print(s.getvalue()[:6000])
L = make(1000, 40); base(L)
pr = cProfile.Profile(); pr.enable()
for _ in range(50): ct.cholesky_inverse(L, method="torch"); torch.cuda.synchronize()
pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25); print("--- cProfile 50 warm torch-row calls\n" + s.getvalue()[:5000])
