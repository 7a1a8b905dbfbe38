"""Session 14: the check kernel before (bff0f7d) and after (this session's memory-order,
division-free loops): equal records, and GPU time per launch (CUDA events around 200
launches of the same prepared struct), then the checked torch-row call end to end
(wall, synchronized, medians of 41, old and new kernels alternated in blocks)."""
import re, statistics, sys, time
import numpy as np
import torch
from cusolver_trace.backends import cuda as cb, cpu as cpub
from cusolver_trace.backends._context import current_stream_ptr
import cusolver_trace as ct

# devrun/s14/cuda_old.py: `git show bff0f7d:cusolver_trace/backends/cuda.py` (the kernel before)
old_text = open("devrun/s14/cuda_old.py").read()
ns = {}
m = re.search(r'_STATUS_SRC = \(.*?\) \+ r"""(.*?)"""', old_text, re.S)
OLD = ("struct StatusArgs { long long " + ", ".join(cb._STATUS_FIELDS) + "; };\n") + m.group(1)
NEW = cb._STATUS_SRC
assert OLD != NEW

def use(src):
    cb._STATUS_SRC = src
    cb._STATUS_MOD.clear(); cb._STATUS_FN.clear()

def kernel_us(L, X, upper=False, reps=200):
    acc, state, stream, batch = cb._status(L, X, upper, None, summary=False)
    n = L.shape[-1]; grid = cb.status_grid(batch, n)
    ctx = cb.context(L.get_device()); args = ctx.status_args
    prefix = cb._dtype(L.dtype).prefix
    for _ in range(5): cb._launch_status(0, prefix, grid, args, stream)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(); a.record()
    for _ in range(reps): cb._launch_status(0, prefix, grid, args, stream)
    b.record(); b.synchronize()
    return a.elapsed_time(b) * 1e3 / reps

def spd_factor(batch, n, dtype=torch.float64, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    G = torch.randn(batch, n, n, device="cuda", dtype=dtype, generator=g)
    A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=dtype)
    return torch.linalg.cholesky(A)

cases = [(1000, 64), (10000, 8), (100000, 16), (1000, 32), (100, 128), (300, 100), (8, 512),
         (1, 4096), (1, 8192), (1, 16384)]
print("case | L strides | X strides | old us | new us | new/old | records equal")
for batch, n in cases:
    L = spd_factor(batch, n)
    X = torch.cholesky_inverse(L) if n <= 4096 or batch > 1 else torch.randn(1, n, n, device="cuda", dtype=torch.float64)
    L3, X3 = L.reshape(-1, n, n), X.reshape(-1, n, n)
    recs, t = {}, {}
    for name, src in (("old", OLD), ("new", NEW)):
        use(src)
        recs[name] = cb.inverse_status(L3, X3, False, None).cpu().numpy()
        t[name] = statistics.median(kernel_us(L3, X3) for _ in range(3))
    # planted: zero pivot + NaN in X
    Lb, Xb = L3.clone(), X3.clone(); Lb[-1, n // 2, n // 2] = 0; Xb[0, -1, 0] = float("nan")
    for name, src in (("old", OLD), ("new", NEW)):
        use(src); recs[name + "_bad"] = cb.inverse_status(Lb, Xb, False, None).cpu().numpy()
    want = cpub.inverse_status(Lb.cpu().numpy(), Xb.cpu().numpy(), False, None)
    eq = all(np.array_equal(recs[k], recs[k.replace("old", "new")]) for k in ("old", "old_bad")) and np.array_equal(recs["new_bad"], want)
    # row-major X too (as gemm_lauum returns)
    Xr = X3.contiguous(); tr = {}
    for name, src in (("old", OLD), ("new", NEW)):
        use(src); tr[name] = statistics.median(kernel_us(L3, Xr) for _ in range(3))
    print(f"{batch}x{n} | {tuple(L3.stride())} | {tuple(X3.stride())} | {t['old']:.1f} | {t['new']:.1f} | {t['new']/t['old']:.2f} | {eq}"
          f" || row-major X {tuple(Xr.stride())}: old {tr['old']:.1f} new {tr['new']:.1f} ({tr['new']/tr['old']:.2f})")
    del L, X, L3, X3, Lb, Xb, Xr
    torch.cuda.empty_cache()

# end to end, checked torch row and auto at 1000 x 64, and auto at 8192 (wall, synchronized)
def wall(fn):
    torch.cuda.synchronize(); t0 = time.perf_counter(); fn(); torch.cuda.synchronize(); return (time.perf_counter() - t0) * 1e6
for batch, n, method in ((1000, 64, "torch"), (100000, 16, "torch"), (1, 8192, "gemm_lauum")):
    L = spd_factor(batch, n)
    if batch == 1: L = L[0]
    res = {"torch": [], "old": [], "new": []}
    for blk in range(6):
        for name, src in (("old", OLD), ("new", NEW)):
            use(src); ct.cholesky_inverse(L, method=method)
            res[name] += [wall(lambda: ct.cholesky_inverse(L, method=method)) for _ in range(7)]
        res["torch"] += [wall(lambda: torch.cholesky_inverse(L)) for _ in range(7)]
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"end to end {batch}x{n} method={method} (checked): torch {med['torch']:.0f} us, old kernel {med['old']:.0f} us ({med['old']/med['torch']:.3f}x), new kernel {med['new']:.0f} us ({med['new']/med['torch']:.3f}x)")
    del L; torch.cuda.empty_cache()
use(NEW)
