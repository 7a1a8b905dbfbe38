"""Session 16: host stages of one checked auto call at n = 16384 float64 (perf_counter
wrappers), to see what runs before the first kernel. Development data."""
import time, statistics, torch
import cusolver_trace as ct
import cusolver_trace.routines.inverse as inv
from cusolver_trace.backends import cuda_plans as cp_, cuda as cu
pc = time.perf_counter_ns
T = []
def timed(mod, name):
    fn = getattr(mod, name)
    def w(*a, **k):
        t = pc(); r = fn(*a, **k); T.append((name, t, pc())); return r
    setattr(mod, name, w)
for name in ("_plan_buffers", "plan_runner", "inverse_plan", "_hermitian", "copy_triangle", "on_device"):
    timed(cp_, name)
timed(inv, "factor_operand")
timed(cu, "inverse_check")
tab = inv.CHOLESKY_INVERSE
real_resolve = tab.resolve
def rs(*a, **k):
    t = pc(); r = real_resolve(*a, **k); T.append(("resolve", t, pc())); return r
object.__setattr__(tab, "resolve", rs)
n = 16384
g = torch.Generator(device="cuda").manual_seed(n)
G = torch.randn(n, n, device="cuda", dtype=torch.float64, generator=g)
A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64); del G
L = torch.linalg.cholesky(A)
for k in range(4):
    T.clear(); torch.cuda.synchronize(); t0 = pc()
    ct.cholesky_inverse(L, method="auto"); t1 = pc()
    print(f"call {k}: {(t1 - t0)/1e6:.2f} ms | " + " ".join(f"{nm}@{(s - t0)/1e3:.0f}+{(e - s)/1e3:.0f}us" for nm, s, e in sorted(T, key=lambda x: x[1])), flush=True)
