"""Issue 27 large n, session 11: gemm_lauum with the diagonal blocks inverted by one batched
trsm (trtri_batched) against today's default (CUDA-event medians, the backend directly, no check;
development data), torch beside it."""
import json, statistics, sys
import torch
from cusolver_trace.backends import cuda_plans
out = sys.argv[1]
ns = [int(x) for x in sys.argv[2].split(",")]
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
configs = [dict()] + [dict(trtri_batched=True, trtri_base=b, streams=s, lauum_block=lb)
                      for b in (128, 256, 512) for s in (4, 6) for lb in (256, 512)]
for n in ns:
    A = spd(n); L = torch.linalg.cholesky(A); torch.cuda.synchronize()
    ref = torch.cholesky_inverse(L)
    t_torch = timeit(lambda: torch.cholesky_inverse(L))
    t_spd_torch = timeit(lambda: torch.cholesky_inverse(torch.linalg.cholesky(A)))
    print(f"n={n} torch {t_torch:.3f} ms, torch two calls {t_spd_torch:.3f}", flush=True)
    best = None
    for kw in configs:
        X = cuda_plans.gemm_lauum(L, False, **kw)[0]
        err = ((X - ref).abs().max() / ref.abs().max()).item()
        t = timeit(lambda: cuda_plans.gemm_lauum(L, False, **kw))
        print(f"   n={n} {kw}: {t:.3f} ms ({t/t_torch:.3f}) rel diff {err:.1e}", flush=True)
        res.append(dict(n=n, kw=kw, ms=t, ratio=t / t_torch, err=err))
        if kw and (best is None or t < best[0]): best = (t, kw)
    for kw in (dict(), best[1]):
        t = timeit(lambda: cuda_plans.potrf_gemm_lauum(A, False, **kw))
        print(f"   n={n} spd potrf_gemm_lauum {kw}: {t:.3f} ms ({t/t_spd_torch:.3f})", flush=True)
        res.append(dict(n=n, spd_kw=kw, ms=t, ratio=t / t_spd_torch))
    del A, L, ref, X; torch.cuda.empty_cache()
json.dump(res, open(out, "w"), indent=1)
