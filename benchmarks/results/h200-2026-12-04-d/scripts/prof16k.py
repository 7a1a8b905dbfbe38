"""Session 16: where one checked auto call (and one spd_inverse) spends its GPU time at
n = 8192 and 16384 float64: kernels by kind (torch.profiler, CUDA activity), busy union, idle
gaps inside the call's span. Development data."""
import json, os, sys, statistics, collections
import torch
import cusolver_trace as ct
out = os.environ.get("OUT", ".")
def spd(n):
    g = torch.Generator(device="cuda").manual_seed(n)
    G = torch.randn(n, n, device="cuda", dtype=torch.float64, generator=g)
    A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
    del G
    return A
def ev_ms(fn, k=5):
    ts = []
    for _ in range(k):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(); a.record(); fn(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    return statistics.median(ts)
def kind(name):
    s = name.lower()
    for k, keys in (("check", ("status", "check")), ("mirror", ("mirror", "hermitian", "fill")),
                    ("copy", ("column_major", "copy", "transpose")), ("potrf", ("potrf",)),
                    ("trsm", ("trsm",)), ("trmm", ("trmm",)), ("syrk", ("syrk", "herk")),
                    ("gemm", ("gemm", "sm90", "cutlass", "xmma", "nvjet")), ("eye/zero", ("eye", "zero", "memset", "fill"))):
        if any(x in s for x in keys):
            return k
    return "other"
def profile(label, fn):
    fn(); torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA, torch.profiler.ProfilerActivity.CPU]) as p:
        fn(); torch.cuda.synchronize()
    path = f"{out}/trace_{label}.json"
    p.export_chrome_trace(path)
    ev = json.load(open(path))["traceEvents"]
    ks = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")]
    ks.sort(key=lambda e: e["ts"])
    t0, t1 = ks[0]["ts"], max(e["ts"] + e["dur"] for e in ks)
    busy, cur_s, cur_e = 0.0, None, None
    for e in ks:
        s, f = e["ts"], e["ts"] + e["dur"]
        if cur_e is None or s > cur_e:
            if cur_e is not None: busy += cur_e - cur_s
            cur_s, cur_e = s, f
        else:
            cur_e = max(cur_e, f)
    busy += cur_e - cur_s
    by = collections.defaultdict(lambda: [0, 0.0])
    names = collections.defaultdict(float)
    for e in ks:
        k = kind(e["name"]); by[k][0] += 1; by[k][1] += e["dur"]; names[e["name"][:70]] += e["dur"]
    print(f"{label}: span {(t1 - t0)/1e3:.2f} ms, busy union {busy/1e3:.2f} ms, idle {(t1 - t0 - busy)/1e3:.2f} ms, kernels {len(ks)}, sum of durations {sum(e['dur'] for e in ks)/1e3:.2f} ms")
    for k, (c, d) in sorted(by.items(), key=lambda x: -x[1][1]):
        print(f"   {k:9s} {c:5d} launches {d/1e3:8.2f} ms")
    for nm, d in sorted(names.items(), key=lambda x: -x[1])[:8]:
        print(f"      {d/1e3:8.2f} ms  {nm}")
    os.remove(path)
for n in (8192, 16384):
    A = spd(n); L = torch.linalg.cholesky(A)
    a = torch.empty(n, n, device="cuda", dtype=torch.float64)
    gemm = ev_ms(lambda: torch.mm(A, A, out=a))
    print(f"n={n}: torch {ev_ms(lambda: torch.cholesky_inverse(L)):.2f} ms, auto {ev_ms(lambda: ct.cholesky_inverse(L, method='auto')):.2f} ms, "
          f"auto unchecked {ev_ms(lambda: ct.cholesky_inverse(L, method='auto', check=False)):.2f} ms, potrf {ev_ms(lambda: torch.linalg.cholesky(A)):.2f} ms, "
          f"spd_inverse {ev_ms(lambda: ct.spd_inverse(A)):.2f} ms, dgemm {gemm:.2f} ms ({2*n**3/gemm/1e9:.1f} TFLOP/s)", flush=True)
    del a
    profile(f"auto_{n}", lambda: ct.cholesky_inverse(L, method="auto"))
    profile(f"spd_inverse_{n}", lambda: ct.spd_inverse(A))
    del A, L; torch.cuda.empty_cache()
