"""Session 12: the first auto call of 1000x64 in a fresh process, as first_call.py makes it; argv[1] == "prof": with a
sys.setprofile timer of every Python / C function of that call (inclusive µs, top 30)."""
import os, sys, time, tempfile, statistics
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
import torch
import cusolver_trace as ct
from cusolver_trace import routines
pc = time.perf_counter_ns
def wall(fn):
    torch.cuda.synchronize(); t = pc(); fn(); torch.cuda.synchronize(); return (pc() - t) / 1e3
routines.resolve_method("auto", 64, 1000, "float64", "cuda")
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3):
    wall(lambda: ct.cholesky_inverse(small, method="auto"))
batch, n = 1000, 64
g = torch.Generator(device="cuda").manual_seed(n)
G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
L = torch.linalg.cholesky(A)
for _ in range(3): wall(lambda: torch.cholesky_inverse(L))
tt = statistics.median(wall(lambda: torch.cholesky_inverse(L)) for _ in range(20))
prof = len(sys.argv) > 1 and sys.argv[1] == "prof"
acc, stack = {}, []
def hook(frame, event, arg):
    if event in ("call", "c_call"):
        name = (f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}" if event == "call"
                else f"C {getattr(arg, '__qualname__', getattr(arg, '__name__', '?'))}")
        stack.append((name, pc()))
    elif event in ("return", "c_return", "c_exception") and stack:
        name, t = stack.pop()
        a = acc.setdefault(name, [0, 0]); a[0] += pc() - t; a[1] += 1
torch.cuda.synchronize()
if prof: sys.setprofile(hook)
t = pc(); ct.cholesky_inverse(L, method="auto"); t1 = pc()
sys.setprofile(None)
torch.cuda.synchronize(); t2 = pc()
nxt = [wall(lambda: ct.cholesky_inverse(L, method="auto")) for _ in range(5)]
print(f"{'PROF ' if prof else ''}torch {tt:.1f} us, first auto call {(t1-t)/1e3:.1f} us, +sync {(t2-t)/1e3:.1f} us ({(t2-t)/1e3/tt:.2f}x), next {' '.join(f'{x:.0f}' for x in nxt)}")
if prof:
    for name, (ns, k) in sorted(acc.items(), key=lambda kv: -kv[1][0])[:40]:
        print(f"   {ns/1e3:8.1f} us  x{k:<3d} {name}")
