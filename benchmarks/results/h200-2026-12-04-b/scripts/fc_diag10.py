"""Session 14: why the first checked call of a new input is slow (method="torch", 1000 x 64, as
first_call.py warms a process). argv: variant
  plain   - L made after the warm-up (as first_call.py)
  before  - L made before the warm-up (no new torch ops between our warm-up and the call)
  prewarm - as plain, and a checked call on the warm-up's small input right before the call
  clone   - as plain; then the first call on a clone of L made before the torch loop
  auto    - as plain, method="auto" (the first call asks for a kernel)
Wall times, synchronized, us."""
import os, sys, time, tempfile, statistics
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
import torch
import cusolver_trace as ct
from cusolver_trace import routines
pc = time.perf_counter_ns
def wall(fn):
    torch.cuda.synchronize(); t = pc(); fn(); torch.cuda.synchronize(); return (pc() - t) / 1e3
variant = sys.argv[1]
batch, n = 1000, 64
def make(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
    A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
    return torch.linalg.cholesky(A)
routines.resolve_method("auto", 64, 1000, "float64", "cuda")
if variant == "before":
    L = make(1)
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3): wall(lambda: ct.cholesky_inverse(small, method="auto"))
if variant != "before":
    L = make(1)
L2 = L.clone() if variant == "clone" else None
method = "auto" if variant == "auto" else "torch"
for _ in range(3): wall(lambda: torch.cholesky_inverse(L))
tt = statistics.median(wall(lambda: torch.cholesky_inverse(L)) for _ in range(20))
if variant == "prewarm":
    torch.cuda.synchronize(); ct.cholesky_inverse(small, method="torch")
a = wall(lambda: ct.cholesky_inverse(L, method=method))
b = wall(lambda: ct.cholesky_inverse(L, method=method))
extra = ""
if variant == "clone":
    statistics.median(wall(lambda: torch.cholesky_inverse(L2)) for _ in range(20))
    c = wall(lambda: ct.cholesky_inverse(L2, method=method))
    extra = f" | clone's first {c:.0f} ({c/tt:.2f}x)"
print(f"{variant:8s} torch {tt:.0f} us | first {a:.0f} ({a/tt:.2f}x) | at once {b:.0f} ({b/tt:.2f}x){extra}")
