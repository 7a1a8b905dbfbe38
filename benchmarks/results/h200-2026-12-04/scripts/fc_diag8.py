"""Session 13: where the first method="torch" call of a new shape spends its extra time (perf_counter_ns wrappers).
argv: batch n [gc-off] [other-first]. other-first: a checked torch-row call on a clone of L (same shape) comes first."""
import os, sys, time, tempfile, statistics, gc
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
import torch
import cusolver_trace as ct
from cusolver_trace import routines, _arrays
from cusolver_trace.routines import _table, inverse as inv, cholesky as chol
from cusolver_trace.backends import cuda as cb, _context as cx
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
wrap(inv.INVERSE_METHODS["torch"], "cuda", "torch op", setter=object.__setattr__)
wrap(cb, "inverse_check", "check")
wrap(cb, "_status", " _status")
wrap(cb, "status_grid", "  status_grid")
wrap(cb, "_launch_status", "  _launch_status")
wrap(cb, "current_stream_ptr", "  current_stream_ptr")
wrap(cb, "context", "  context")
wrap(cx.Scratch, "get", "  acc.get")
wrap(cb, "_strided", "  _strided")
wrap(cb, "finish_check", " finish_check")
wrap(inv, "factor_operand", "factor_operand")
wrap(chol, "operand", " operand")
wrap(inv, "wrap", "wrap")
def wall(fn):
    torch.cuda.synchronize(); SEG.clear(); t = pc(); fn(); t1 = pc(); torch.cuda.synchronize(); t2 = pc()
    d = dict(SEG); d["call"] = t1 - t; d["call+sync"] = t2 - t; return d
routines.resolve_method("auto", 64, 1000, "float64", "cuda")
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3): wall(lambda: ct.cholesky_inverse(small, method="auto"))
batch, n = int(sys.argv[1]), int(sys.argv[2])
if "gc-off" in sys.argv: gc.collect(); gc.disable()
g = torch.Generator(device="cuda").manual_seed(n)
G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
L = torch.linalg.cholesky(A)
L2 = L.clone(memory_format=torch.preserve_format)
def loop():
    tt = []
    for _ in range(20):
        torch.cuda.synchronize(); t = pc(); torch.cholesky_inverse(L); torch.cuda.synchronize(); tt.append(pc() - t)
    return statistics.median(tt)
if "other-first" in sys.argv:
    loop(); o = wall(lambda: ct.cholesky_inverse(L2, method="torch"))
tt = loop()
a = wall(lambda: ct.cholesky_inverse(L, method="torch"))
b = wall(lambda: ct.cholesky_inverse(L, method="torch"))
loop()
c = wall(lambda: ct.cholesky_inverse(L, method="torch"))
tag = " ".join(sys.argv[3:]) or "plain"
print(f"{batch}x{n} [{tag}]: torch {tt/1e3:.0f} us" + (f"; the clone's first call {o['call+sync']/1e3:.0f}" if "other-first" in sys.argv else ""))
for k in sorted(set(a) | set(b), key=lambda k: -a.get(k, 0)):
    print(f"  {k:22s} first {a.get(k,0)/1e3:7.1f}   at once {b.get(k,0)/1e3:7.1f}   behind loop {c.get(k,0)/1e3:7.1f}")
