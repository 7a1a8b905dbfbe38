"""Session 13: pieces of the first auto call of 1000x64 in a fresh process (perf_counter_ns wrappers), after the deferred ask."""
import os, sys, time, tempfile, statistics
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
import torch
import cusolver_trace as ct
from cusolver_trace import routines
from cusolver_trace.routines import _table, inverse as inv
from cusolver_trace.backends import cuda as cb, _fused_launch as fl, _fused_build as fb, fused as F
pc = time.perf_counter_ns
SEG = {}
def timed(f, tag):
    def g(*a, **k):
        t = pc()
        try: return f(*a, **k)
        finally: SEG[tag] = SEG.get(tag, 0) + pc() - t
    return g
def wrap(obj, name, tag, setter=setattr):
    setter(obj, name, timed(getattr(obj, name), tag))
wrap(_table.Table, "resolve", "resolve")
wrap(_table.Table, "_auto", " _auto")
wrap(_table.Table, "_ready", " _ready")
wrap(_table.Table, "_fitting", " _fitting")
wrap(F, "ready", "  F.ready")
wrap(fl, "_arrangement", "   _arrangement")
wrap(fl._build, "ready", "   build.ready")
wrap(fl._build, "ask", "   ask")
wrap(inv.INVERSE_METHODS["torch"], "cuda", "torch op", setter=object.__setattr__)
wrap(cb, "inverse_check", "check")
wrap(cb, "_status", " _status")
wrap(cb, "finish_check", " finish_check")
wrap(inv, "factor_operand", "factor_operand")
def wall(fn):
    torch.cuda.synchronize(); SEG.clear(); t = pc(); fn(); t1 = pc(); torch.cuda.synchronize(); t2 = pc()
    d = dict(SEG); d["call"] = t1 - t; d["call+sync"] = t2 - t; return d
routines.resolve_method("auto", 64, 1000, "float64", "cuda")   # as first_call.py: the extra imported
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3): wall(lambda: ct.cholesky_inverse(small, method="auto"))
batch, n = int(sys.argv[1]), int(sys.argv[2])
g = torch.Generator(device="cuda").manual_seed(n)
G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
L = torch.linalg.cholesky(A)
for _ in range(3): wall(lambda: torch.cholesky_inverse(L))
tt = []
for _ in range(20):
    torch.cuda.synchronize(); t = pc(); torch.cholesky_inverse(L); torch.cuda.synchronize(); tt.append(pc() - t)
first = wall(lambda: ct.cholesky_inverse(L, method="auto"))
nxt = [wall(lambda: ct.cholesky_inverse(L, method="auto")) for _ in range(5)]
row = [wall(lambda: ct.cholesky_inverse(L, method="torch")) for _ in range(5)]
keys = sorted(set(first) | set(nxt[0]), key=lambda k: -first.get(k, 0))
print(f"{batch}x{n}: torch {statistics.median(tt)/1e3:.1f} us; first/torch {first['call+sync']/statistics.median(tt):.2f}")
for k in keys:
    print(f"  {k:22s} first {first.get(k,0)/1e3:7.1f}   next {statistics.median(d.get(k,0) for d in nxt)/1e3:7.1f}   torch-row {statistics.median(d.get(k,0) for d in row)/1e3:7.1f}")
