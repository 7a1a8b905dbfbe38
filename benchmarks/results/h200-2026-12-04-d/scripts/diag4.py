"""Session 16: is torch's own call slower inside our first call than warm, on the GPU or on the
host? Process warmed as first_call.py (1000 x 64 float64). argv: variant seed.
Variants: direct (the torch call through the same wrapper, no ct), nocheck (ct method=torch,
check=False), torch (ct method=torch), auto (ct method=auto). Per call: wall us, the torch
call's host us, its GPU us (events right before / after it), cudaMalloc count in it."""
import os, sys, time, tempfile, statistics, gc
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
import torch
import cusolver_trace as ct
from cusolver_trace import routines
import cusolver_trace.routines.inverse as inv
pc = time.perf_counter_ns
def wall(fn):
    torch.cuda.synchronize(); t = pc(); fn(); torch.cuda.synchronize(); return (pc() - t) / 1e3
variant = sys.argv[1]
batch, n = 1000, 64
routines.resolve_method("auto", 64, 1000, "float64", "cuda")
g0 = torch.Generator(device="cuda").manual_seed(8)
G0 = torch.randn(10, 8, 8, device="cuda", dtype=torch.float64, generator=g0)
torch.linalg.cholesky(G0 @ G0.mT / 8 + torch.eye(8, device="cuda", dtype=torch.float64))
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3): wall(lambda: ct.cholesky_inverse(small, method="auto"))
g = torch.Generator(device="cuda").manual_seed(n)
G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
del G
L = torch.linalg.cholesky(A)
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
REC = []
real = inv.INVERSE_METHODS["torch"].cuda
def wrapped(c, upper):
    s = torch.cuda.memory_stats().get("num_device_alloc", 0)
    e0.record(); t = pc()
    out = real(c, upper)
    h = pc() - t; e1.record(); e1.synchronize()
    REC.append((h / 1e3, e0.elapsed_time(e1) * 1e3, torch.cuda.memory_stats().get("num_device_alloc", 0) - s))
    return out
object.__setattr__(inv.INVERSE_METHODS["torch"], "cuda", wrapped)
for _ in range(3): wall(lambda: torch.cholesky_inverse(L))
tt = statistics.median(wall(lambda: torch.cholesky_inverse(L)) for _ in range(20))
REC.clear()
for _ in range(5): wall(lambda: wrapped(L, False))   # the wrapper's own warm figures
warm_rec = list(REC); REC.clear()
calls = {"direct": lambda: wrapped(L, False),
         "nocheck": lambda: ct.cholesky_inverse(L, method="torch", check=False),
         "torch": lambda: ct.cholesky_inverse(L, method="torch"),
         "auto": lambda: ct.cholesky_inverse(L, method="auto")}
fn = calls[variant]
# the same torch warm loop right before, as first_call.py does
for _ in range(3): wall(lambda: torch.cholesky_inverse(L))
tt2 = statistics.median(wall(lambda: torch.cholesky_inverse(L)) for _ in range(20))
out = []
for i in range(4):
    w = wall(fn)
    out.append((w, REC[-1] if REC else None))
after = statistics.median(wall(lambda: torch.cholesky_inverse(L)) for _ in range(5))
wr = " ".join(f"{h:.0f}/{gpu:.0f}" for h, gpu, _ in warm_rec)
print(f"{variant:8s} torch warm {tt:.0f}/{tt2:.0f} us, after {after:.0f}; wrapper warm host/gpu {wr}")
for i, (w, r) in enumerate(out):
    print(f"   call {i+1}: wall {w:.0f} us ({w/tt2:.2f}x)" + ("" if r is None else
          f" | torch call host {r[0]:.0f} gpu {r[1]:.0f} mallocs {r[2]}"), flush=True)
