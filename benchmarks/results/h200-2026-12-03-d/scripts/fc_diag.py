"""Where the first auto call of a new shape spends its time (session 11 diagnosis)."""
import os, sys, time, tempfile, statistics, threading, json
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
import torch
import cusolver_trace as ct
from cusolver_trace import routines
from cusolver_trace.backends import _fused_build as fb, _fused_launch as fl

LOG = []
def stamp(what, t0, t1):
    LOG.append((what, threading.current_thread().name, t0, t1))

def wrap(mod, name):
    f = getattr(mod, name)
    def g(*a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            stamp(f"{mod.__name__.split('.')[-1]}.{name}", t0, time.perf_counter())
    setattr(mod, name, g)

for m, n in ((fb, "make_key"), (fb, "cached"), (fb, "start_worker"), (fb, "ready"), (fl, "ready")):
    wrap(m, n)
ci = fb.Child.__init__
def cinit(self):
    t0 = time.perf_counter(); ci(self); stamp("Child.__init__", t0, time.perf_counter())
fb.Child.__init__ = cinit

def wall(fn):
    torch.cuda.synchronize(); t = time.perf_counter(); out = fn(); torch.cuda.synchronize()
    return time.perf_counter() - t, t

print(routines.resolve_method("auto", 64, 1000, "float64", "cuda"))
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3):
    wall(lambda: ct.cholesky_inverse(small, method="auto"))
switch = float(sys.argv[1]) if len(sys.argv) > 1 else None
if switch:
    sys.setswitchinterval(switch)
for batch, n in ((1000, 64), (300, 100), (500, 48)):
    g = torch.Generator(device="cuda").manual_seed(n)
    G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
    A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
    L = torch.linalg.cholesky(A)
    for _ in range(3):
        wall(lambda: torch.cholesky_inverse(L))
    tt = statistics.median(wall(lambda: torch.cholesky_inverse(L))[0] for _ in range(20))
    # unchecked / checked torch row through our entry point, warm
    for _ in range(3):
        wall(lambda: ct.cholesky_inverse(L, method="torch"))
    ct_torch = statistics.median(wall(lambda: ct.cholesky_inverse(L, method="torch"))[0] for _ in range(20))
    LOG.clear()
    first, t0 = wall(lambda: ct.cholesky_inverse(L, method="auto"))
    nxt = [wall(lambda: ct.cholesky_inverse(L, method="auto"))[0] for _ in range(8)]
    time.sleep(0.2)
    print(f"\n{batch}x{n}: torch {tt*1e3:.3f} ms, ct torch-row {ct_torch*1e3:.3f} ms, first auto {first*1e3:.3f} ms "
          f"({first/tt:.2f}x), next {' '.join(f'{x*1e3:.3f}' for x in nxt)}; method now {ct.inverse_method(L, 'auto')}")
    for what, th, a, b in LOG:
        print(f"  {what:28s} {th[:22]:22s} start {1e3*(a-t0):8.3f} ms  dur {1e3*(b-a):8.3f} ms")
