"""Session 15: where the first auto call's time goes at 1000 x 64 (process warmed as
first_call.py). argv: variant [torch|auto|autodefer|prof]. Stage timers (perf_counter_ns
wrappers), GC events during the call, us."""
import gc, os, sys, time, tempfile, statistics
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
import torch
import cusolver_trace as ct
from cusolver_trace import routines
import cusolver_trace.routines.inverse as inv
from cusolver_trace.backends import _fused_build as fb
pc = time.perf_counter_ns
T = []
def timed(name, fn):
    def w(*a, **k):
        t = pc(); r = fn(*a, **k); T.append((name, t, pc())); return r
    return w
GCE = []
def gccb(phase, info):
    GCE.append((phase, info.get("generation"), pc()))
gc.callbacks.append(gccb)
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
# instrument
inv.factor_operand = timed("operand", inv.factor_operand)
tab = inv.CHOLESKY_INVERSE
object.__setattr__(tab, "resolve", timed("resolve", tab.resolve))
row = tab.rows["torch"]
object.__setattr__(row, "cuda", timed("torch_op", row.cuda))
cb = inv.cuda()
cb._status = timed("check_launch", cb._status)
cb.finish_check = timed("sync", cb.finish_check)
inv.wrap = timed("wrap", inv.wrap)
deferred = []
if variant == "autodefer":
    real_ask = fb.ask
    fb.ask = lambda *a: deferred.append(a)
    import cusolver_trace.backends._fused_launch as fl
    fl._build.ask = fb.ask
else:
    fb.ask = timed("ask", fb.ask)
method = "torch" if variant == "torch" else "auto"
def call():
    return ct.cholesky_inverse(L, method=method)
def one(label):
    T.clear(); GCE.clear()
    torch.cuda.synchronize(); t0 = pc(); call(); torch.cuda.synchronize(); t1 = pc()
    if deferred:
        for a in deferred: real_ask(*a)
        deferred.clear()
    parts = " ".join(f"{nm}@{(s - t0)/1e3:.0f}+{(e - s)/1e3:.0f}" for nm, s, e in sorted(T, key=lambda x: x[1]))
    g = " ".join(f"gc{ph[0]}{gen}@{(t - t0)/1e3:.0f}" for ph, gen, t in GCE if t0 <= t <= t1)
    print(f"  {label}: {(t1 - t0)/1e3:.0f} us ({(t1 - t0)/1e3/tt:.2f}x) | {parts} | {g}", flush=True)
print(f"{variant}: torch {tt:.0f} us; gc thresholds {gc.get_threshold()} counts {gc.get_count()} py {sys.version.split()[0]}")
if variant == "prof":
    import cProfile, pstats, io
    for label in ("first", "second"):
        pr = cProfile.Profile(); pr.enable(); call(); torch.cuda.synchronize(); pr.disable()
        s = io.StringIO(); st = pstats.Stats(pr, stream=s); st.sort_stats("tottime").print_stats(18)
        print(f"--- {label}, calls {st.total_calls}"); print("\n".join(s.getvalue().splitlines()[6:30]))
else:
    one("first"); one("second"); one("third")
