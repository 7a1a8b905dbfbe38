"""Issue 27 diagnostics: where a cold fused compile spends its time (stages timed by wrapping)."""
import json, sys, time, functools
import torch
import cusolver_trace as ct
from cusolver_trace.backends import _fused_toolchain as tc, _fused_launch as fl

times = {}
def wrap(mod, name, label):
    f = getattr(mod, name)
    @functools.wraps(f)
    def g(*a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            times.setdefault(label, []).append(time.perf_counter() - t0)
    setattr(mod, name, g)

t = tc._tools()
for k, lab in (("compile", "libmathdx compile_solver_execute"),):
    f = t[k]
    def g(*a, _f=f, _l=lab, **kw):
        t0 = time.perf_counter()
        try: return _f(*a, **kw)
        finally: times.setdefault(_l, []).append(time.perf_counter() - t0)
    t[k] = g
nv = t["nvrtc"]
class NV:
    def __getattr__(self, a):
        f = getattr(nv, a)
        def g(*x, **y):
            t0 = time.perf_counter()
            try: return f(*x, **y)
            finally: times.setdefault("nvrtc." + a, []).append(time.perf_counter() - t0)
        return g
t["nvrtc"] = NV()
wrap(tc, "_link", "nvJitLink _link (incl. fatbin)")
wrap(tc, "_universal_fatbin", "universal fatbin fetch")
wrap(tc, "_ask_suggested", "libmathdx suggested")
wrap(tc, "compile_kernel", "compile_kernel total")
wrap(fl, "_load_function", "_load_function total")
res = {}
for batch, n in ((1000, 64), (300, 100)):
    A = torch.randn(batch, n, n, device="cuda", dtype=torch.float64)
    A = A @ A.mT + n * torch.eye(n, device="cuda", dtype=torch.float64)
    L = torch.linalg.cholesky(A)
    times.clear()
    t0 = time.perf_counter()
    ct.cholesky_inverse(L, method="fused"); torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    res[f"{batch}x{n}"] = dict(wall_s=wall, stages={k: [round(x, 3) for x in v] for k, v in times.items()})
    print(batch, n, f"first fused call {wall:.2f} s", json.dumps(res[f"{batch}x{n}"]["stages"]), flush=True)
    t0 = time.perf_counter(); torch.cholesky_inverse(L); torch.cuda.synchronize(); print("torch call", time.perf_counter() - t0)
json.dump(res, open(sys.argv[1], "w"), indent=1)
