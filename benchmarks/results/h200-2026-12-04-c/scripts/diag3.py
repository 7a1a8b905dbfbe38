"""Session 15: is torch's cholesky_inverse slower right after other host work? After a warm
loop of torch calls, one action, then one timed torch call (and the call after it), us.
Actions cycle in random order, 4 rounds, in one process warmed as first_call.py."""
import os, sys, time, tempfile, statistics, random
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="fcd-")
os.environ.pop("CUSOLVER_TRACE_CACHE", None)
import torch
import cusolver_trace as ct
from cusolver_trace import routines
import cusolver_trace.routines.inverse as inv
pc = time.perf_counter_ns
def wall(fn):
    torch.cuda.synchronize(); t = pc(); fn(); torch.cuda.synchronize(); return (pc() - t) / 1e3
batch, n = 1000, 64
routines.resolve_method("auto", 64, 1000, "float64", "cuda")
small = torch.linalg.cholesky(torch.eye(8, dtype=torch.float64, device="cuda").expand(10, 8, 8) * 2)
for _ in range(3): wall(lambda: ct.cholesky_inverse(small, method="auto"))
g = torch.Generator(device="cuda").manual_seed(1)
G = torch.randn(batch, n, n, device="cuda", dtype=torch.float64, generator=g)
A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
del G
L = torch.linalg.cholesky(A)
Ls = [L.clone() for _ in range(12)]   # fresh tensors for the 'ours' actions (new memo each? same shape)
def spin(us):
    t = pc() + us * 1000
    while pc() < t: pass
def ours():
    c, nn, b = inv.factor_operand(L)
    inv.CHOLESKY_INVERSE.resolve("torch", nn, b, "float64", "cuda", call=(c.data, False, True))
def ours_auto():
    c, nn, b = inv.factor_operand(L)
    inv.CHOLESKY_INVERSE.resolve("auto", nn, b, "float64", "cuda", call=(c.data, False, True))
def checked_small():
    ct.cholesky_inverse(small, method="torch")
acts = {"none": lambda: None, "spin50": lambda: spin(50), "spin150": lambda: spin(150),
        "sleep100": lambda: time.sleep(1e-4), "ours_torch": ours, "ours_auto": ours_auto,
        "checked_small": checked_small}
res = {k: [] for k in acts}
rng = random.Random(int(sys.argv[1]))
for rnd in range(4):
    order = list(acts); rng.shuffle(order)
    for k in order:
        for _ in range(23): wall(lambda: torch.cholesky_inverse(L))
        warm = statistics.median(wall(lambda: torch.cholesky_inverse(L)) for _ in range(5))
        torch.cuda.synchronize()
        acts[k]()
        t = pc(); torch.cholesky_inverse(L, upper=False); torch.cuda.synchronize(); a = (pc() - t) / 1e3
        b = wall(lambda: torch.cholesky_inverse(L))
        res[k].append((a / warm, b / warm))
for k, v in res.items():
    print(f"{k:14s} torch op after it / warm: " + " ".join(f"{a:.2f}" for a, _ in v) +
          " | next: " + " ".join(f"{b:.2f}" for _, b in v), flush=True)
