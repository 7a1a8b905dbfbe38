"""Issue 27 large n: gemm_lauum parameter variants (CUDA-event medians, the backend directly, no
check) beside torch and the public auto (checks on), then the profiler breakdown of auto."""
import json, statistics, sys, itertools
import torch
import cusolver_trace as ct
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
for n in ns:
    A = spd(n); L = torch.linalg.cholesky(A); torch.cuda.synchronize()
    t_torch = timeit(lambda: torch.cholesky_inverse(L))
    t_auto = timeit(lambda: ct.cholesky_inverse(L, method="auto"))
    t_auto_nc = timeit(lambda: ct.cholesky_inverse(L, method="auto", check=False))
    t_spd = timeit(lambda: ct.spd_inverse(A)); t_spd_torch = timeit(lambda: torch.cholesky_inverse(torch.linalg.cholesky(A)))
    t_potrf = timeit(lambda: torch.linalg.cholesky(A))
    print(f"n={n} torch {t_torch:.3f} auto {t_auto:.3f} ({t_auto/t_torch:.3f}) auto nocheck {t_auto_nc:.3f} ({t_auto_nc/t_torch:.3f}) spd {t_spd:.3f} vs torch2 {t_spd_torch:.3f} ({t_spd/t_spd_torch:.3f}) torch potrf {t_potrf:.3f}", flush=True)
    res.append(dict(n=n, torch=t_torch, auto=t_auto, auto_nocheck=t_auto_nc, spd=t_spd, spd_torch=t_spd_torch, potrf=t_potrf))
    grid = dict(trtri_base=[512, 1024, 2048], lauum_block=[256, 512, 1024], streams=[2, 3, 4], trmm_kernel=["trmm", "gemm"], lauum_diag=["gemm", "trmm"], block=[128, 256, 512])
    base = {}
    for k, vals in grid.items():
        for v in vals:
            kw = {k: v}
            try:
                t = timeit(lambda: cuda_plans.gemm_lauum(L, False, **kw))
            except Exception as e:
                print(n, kw, "FAILED", e); continue
            print(f"   n={n} {k}={v}: {t:.3f} ms ({t/t_torch:.3f})", flush=True)
            res.append(dict(n=n, param=k, value=v, ms=t, ratio=t / t_torch))
    del A, L; torch.cuda.empty_cache()
from torch.profiler import profile, ProfilerActivity
for n in ns:
    A = spd(n); L = torch.linalg.cholesky(A); torch.cuda.synchronize()
    ct.cholesky_inverse(L, method="auto"); torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        ct.cholesky_inverse(L, method="auto"); torch.cuda.synchronize()
    groups, spans = {}, []
    for e in prof.profiler.kineto_results.events():
        if "CUDA" not in str(e.device_type()): continue
        try:
            if e.is_user_annotation(): continue
        except Exception: pass
        nm = e.name(); low = nm.lower()
        key = ("trsm" if "trsm" in low else "trmm" if "trmm" in low else "gemm" if ("gemm" in low or "xmma" in low or "cutlass" in low) else
               "mirror" if "mirror" in low else nm[:70])
        g = groups.setdefault(key, [0, 0.0]); g[0] += 1; g[1] += e.duration_ns() / 1e6
        spans.append((e.start_ns(), e.start_ns() + e.duration_ns()))
    spans.sort(); busy = 0; cs = ce = None
    for s, e_ in spans:
        if ce is None or s > ce:
            if ce is not None: busy += ce - cs
            cs, ce = s, e_
        else: ce = max(ce, e_)
    busy += (ce - cs) if ce else 0
    span = (max(e for _, e in spans) - spans[0][0]) / 1e6
    print(f"\n== n={n} auto: GPU span {span:.3f} ms, busy {busy/1e6:.3f} ms, idle {span - busy/1e6:.3f} ms")
    for k, v in sorted(groups.items(), key=lambda kv: -kv[1][1])[:14]:
        print(f"   {k:70s} {v[0]:5d} {v[1]:9.3f} ms")
    res.append(dict(n=n, profile=dict(span=span, busy=busy / 1e6, groups=groups)))
    del A, L; torch.cuda.empty_cache()
json.dump(res, open(out, "w"), indent=1)
