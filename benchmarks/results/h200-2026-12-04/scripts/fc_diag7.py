"""Session 13: is the first call's excess new-shape work, or our host code gone cold behind torch's loop?
For a new shape: (a) the first method="torch" call (checked) after 20 torch calls; (b) the next one, at once;
(c) the same call after 20 more torch calls; (d) the first auto call (a new kernel asked for) after 20 torch calls;
(e) the next auto call at once; (f) an auto call after 20 torch calls. Wall times, synchronized, us."""
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
for _ in range(3): wall(lambda: ct.cholesky_inverse(small, method="auto"))
batch, n = int(sys.argv[1]), int(sys.argv[2])
g = torch.Generator(device="cuda").manual_seed(n)
G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
L = torch.linalg.cholesky(A)
def loop():
    return statistics.median(wall(lambda: torch.cholesky_inverse(L)) for _ in range(20))
t0 = loop()
a = wall(lambda: ct.cholesky_inverse(L, method="torch"))
b = wall(lambda: ct.cholesky_inverse(L, method="torch"))
t1 = loop()
c = wall(lambda: ct.cholesky_inverse(L, method="torch"))
t2 = loop()
d = wall(lambda: ct.cholesky_inverse(L, method="auto"))
e = wall(lambda: ct.cholesky_inverse(L, method="auto"))
t3 = loop()
f = wall(lambda: ct.cholesky_inverse(L, method="auto"))
tt = statistics.median([t0, t1, t2, t3])
print(f"{batch}x{n}: torch {tt:.0f} us | torch row: first {a:.0f} ({a/tt:.2f}x), at once {b:.0f} ({b/tt:.2f}x), behind torch's loop {c:.0f} ({c/tt:.2f}x)"
      f" | auto: first {d:.0f} ({d/tt:.2f}x), at once {e:.0f} ({e/tt:.2f}x), behind torch's loop {f:.0f} ({f/tt:.2f}x)")
