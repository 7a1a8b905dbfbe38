"""Session 15: line timers of the first checked cholesky_inverse call at 1000 x 64 (process
warmed as first_call.py). argv: torch|auto."""
import os, sys, time, tempfile, statistics
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
sys.path.insert(0, os.path.dirname(__file__))
import torch
import cusolver_trace as ct
from cusolver_trace import routines
import cusolver_trace.routines.inverse as inv
import cusolver_trace.routines.cholesky as chol
from cusolver_trace.routines import _table
from cusolver_trace.backends import cuda as cb, fused as fz
import linetimer as lt
pc = time.perf_counter_ns
def wall(fn):
    torch.cuda.synchronize(); t = pc(); fn(); torch.cuda.synchronize(); return (pc() - t) / 1e3
variant = sys.argv[1]
batch, n = 1000, 64
routines.resolve_method("auto", 64, 1000, "float64", "cuda")
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3): wall(lambda: ct.cholesky_inverse(small, method="auto"))
g = torch.Generator(device="cuda").manual_seed(1)
G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
del G
L = torch.linalg.cholesky(A)
for _ in range(3): wall(lambda: torch.cholesky_inverse(L))
tt = statistics.median(wall(lambda: torch.cholesky_inverse(L)) for _ in range(20))
f = lt.instrument(inv, "cholesky_inverse", "ci")
lt.instrument(chol, "operand", "op")
lt.instrument(_table.Table, "resolve", "res")
lt.instrument(_table.Table, "_ready", "rdy")
lt.instrument(_table.Table, "_fitting", "fit")
lt.instrument(fz, "ready", "fready")
lt.instrument(cb, "_status", "st")
lt.instrument(cb, "finish_check", "fin")
method = "torch" if variant == "torch" else "auto"
print(f"{variant}: torch {tt:.0f} us")
for label in ("first", "second", "third", "fourth"):
    lt.REC.clear()
    torch.cuda.synchronize(); t0 = pc(); f(L, method=method); torch.cuda.synchronize(); t1 = pc()
    print(f"  {label}: {(t1 - t0)/1e3:.0f} us ({(t1 - t0)/1e3/tt:.2f}x) | {lt.report(t0, t1)}", flush=True)
