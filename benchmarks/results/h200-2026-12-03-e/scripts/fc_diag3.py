"""Session 12: per-segment host time of the first auto call of a new shape, later auto calls and torch-row calls."""
import os, sys, time, tempfile, statistics
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
import torch
import cusolver_trace as ct
from cusolver_trace import routines
from cusolver_trace.routines import _table, inverse as inv
from cusolver_trace.backends import cuda as cb
pc = time.perf_counter_ns
SEG = {}
def wrap_attr(obj, name, tag, setter=setattr):
    f = getattr(obj, name)
    def g(*a, **k):
        t = pc()
        try: return f(*a, **k)
        finally: SEG[tag] = SEG.get(tag, 0) + pc() - t
    setter(obj, name, g)
wrap_attr(_table.Table, "resolve", "resolve")
wrap_attr(_table.Table, "_auto", "  _auto")
wrap_attr(_table.Table, "_ready", "  _ready")
wrap_attr(_table.Table, "_fitting", "  _fitting")
wrap_attr(cb, "inverse_check", "check")
wrap_attr(cb, "_status", "  _status")
wrap_attr(cb, "finish_check", "  finish_check(sync)")
wrap_attr(inv.INVERSE_METHODS["torch"], "cuda", "torch op", setter=object.__setattr__)

def wall(fn):
    torch.cuda.synchronize(); SEG.clear(); t = pc(); fn(); t1 = pc(); torch.cuda.synchronize(); t2 = pc()
    d = dict(SEG); d["call"] = t1 - t; d["call+sync"] = t2 - t
    return d

print(routines.resolve_method("auto", 64, 1000, "float64", "cuda"))
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3):
    wall(lambda: ct.cholesky_inverse(small, method="auto"))

def make(batch, n):
    g = torch.Generator(device="cuda").manual_seed(n)
    G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
    A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
    return torch.linalg.cholesky(A)

def show(tag, ds):
    keys = ["call+sync", "call", "resolve", "  _auto", "  _ready", "  _fitting", "torch op", "check", "  _status", "  finish_check(sync)"]
    med = {k: statistics.median(d.get(k, 0) for d in ds) / 1e3 for k in keys}
    print(f"  {tag:22s} " + "  ".join(f"{k.strip()} {med[k]:7.1f}" for k in keys))

for batch, n in ((1000, 64), (1000, 60), (1000, 56), (300, 100), (1000, 64)):
    L = make(batch, n)
    for _ in range(3): torch.cuda.synchronize(); torch.cholesky_inverse(L); torch.cuda.synchronize()
    tt = []
    for _ in range(20):
        torch.cuda.synchronize(); t = pc(); torch.cholesky_inverse(L); torch.cuda.synchronize(); tt.append(pc() - t)
    for _ in range(3): wall(lambda: ct.cholesky_inverse(L, method="torch"))
    row = [wall(lambda: ct.cholesky_inverse(L, method="torch")) for _ in range(20)]
    first = wall(lambda: ct.cholesky_inverse(L, method="auto"))
    nxt = [wall(lambda: ct.cholesky_inverse(L, method="auto")) for _ in range(10)]
    row2 = [wall(lambda: ct.cholesky_inverse(L, method="torch")) for _ in range(10)]
    print(f"{batch}x{n}: torch {statistics.median(tt)/1e3:.1f} us; method now {ct.inverse_method(L, 'auto')}")
    show("torch row (20, before)", row); show("first auto", [first]); show("next auto (10)", nxt); show("torch row (10, after)", row2)
    time.sleep(0.3)
