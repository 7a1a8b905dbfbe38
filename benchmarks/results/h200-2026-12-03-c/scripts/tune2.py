"""Issue 27 large n: combined gemm_lauum parameters (CUDA-event medians, backend directly, no check)."""
import json, statistics, sys, itertools
import torch
from cusolver_trace.backends import cuda_plans
out = sys.argv[1]; ns = [int(x) for x in sys.argv[2].split(",")]
def spd(n):
    g = torch.Generator(device="cuda").manual_seed(0)
    X = torch.randn(n, n, device="cuda", dtype=torch.float64, generator=g)
    return X @ X.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
def timeit(fn, reps=7):
    fn(); torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    return statistics.median(ts)
res = []
for n in ns:
    A = spd(n); L = torch.linalg.cholesky(A); torch.cuda.synchronize()
    t_torch = timeit(lambda: torch.cholesky_inverse(L), 5)
    rows = []
    for tb, st, lb, ld, tk in itertools.product([256, 512, 1024], [2, 4, 6], [256, 512], ["gemm", "trmm"], ["trmm", "gemm"]):
        kw = dict(trtri_base=tb, streams=st, lauum_block=lb, lauum_diag=ld, trmm_kernel=tk)
        t = timeit(lambda: cuda_plans.gemm_lauum(L, False, **kw), 5 if n > 8192 else 7)
        rows.append((t, kw)); res.append(dict(n=n, ms=t, ratio=t / t_torch, **kw))
    rows.sort(key=lambda r: r[0])
    print(f"n={n} torch {t_torch:.3f}; default {timeit(lambda: cuda_plans.gemm_lauum(L, False)):.3f}")
    for t, kw in rows[:8]:
        print(f"   {t:8.3f} ms ({t/t_torch:.3f}) {kw}", flush=True)
    del A, L; torch.cuda.empty_cache()
json.dump(res, open(out, "w"), indent=1)
