"""Issue 27 diagnostics: peak extra memory (n², torch allocator) and time (ms, CUDA events,
median, checks on) of cholesky_inverse / spd_inverse rows at large n, through the public entry
points, torch side by side; then a kernel-time breakdown of auto under torch.profiler."""
import json, statistics, sys, time
import torch
import cusolver_trace as ct
from cusolver_trace.sweep.measure import peak_extra

out = sys.argv[1]
ns = [int(x) for x in sys.argv[2].split(",")]
res = []
dev = "cuda"


def spd(n, seed=0):
    g = torch.Generator(device=dev).manual_seed(seed)
    X = torch.randn(n, n, device=dev, dtype=torch.float64, generator=g)
    A = X @ X.mT / n + torch.eye(n, device=dev, dtype=torch.float64)
    return A


def timeit(fn, reps):
    fn(); torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


for n in ns:
    A = spd(n)
    L = torch.linalg.cholesky(A)
    torch.cuda.synchronize()
    reps = 7 if n <= 8192 else 5
    ref = torch.cholesky_inverse(L)
    rows = [("cholesky_inverse", "torch.cholesky_inverse", lambda: torch.cholesky_inverse(L))]
    for m in ("potrs", "potri", "rec_trtri_lauum", "gemm_lauum", "auto"):
        rows.append(("cholesky_inverse", m, (lambda m=m: ct.cholesky_inverse(L, method=m))))
    from cusolver_trace.backends import cuda_plans
    rows.append(("cholesky_inverse", "gemm_lauum[old: scratch buffer, where]",
                 lambda: cuda_plans.gemm_lauum(L, False, trtri_scratch=True, fill="where")[0]))
    rows.append(("spd_inverse", "torch two calls", lambda: torch.cholesky_inverse(torch.linalg.cholesky(A))))
    for m in ("auto", "potrf_gemm_lauum", "torch"):
        rows.append(("spd_inverse", m, (lambda m=m: ct.spd_inverse(A, method=m))))
    base = {}
    for op, name, fn in rows:
        try:
            x = fn(); torch.cuda.synchronize()
            err = float((x - ref).abs().max() / ref.abs().max())
            contiguous = bool(x.is_contiguous())
            del x
            mem = peak_extra(fn, dev, batch=1, n=n, itemsize=8)
            ms = timeit(fn, reps)
        except Exception as e:
            print(n, op, name, "FAILED", type(e).__name__, e, flush=True)
            res.append(dict(n=n, op=op, name=name, error=f"{type(e).__name__}: {e}"))
            continue
        if name.startswith("torch"):
            base[op] = ms
        r = dict(n=n, op=op, name=name, ms=ms, peak_n2=mem, rel_err=err, contiguous=contiguous,
                 ratio=ms / base[op] if op in base else None)
        res.append(r)
        print(f"n={n:6d} {op:17s} {name:40s} {ms:9.3f} ms  ratio {r['ratio'] if r['ratio'] is None else round(r['ratio'],3)}  peak {mem:.3f} n²  err {err:.1e} contig {contiguous}", flush=True)
    del A, L, ref
    torch.cuda.empty_cache()

# where the time goes: auto at each n under the profiler, kernels grouped
from torch.profiler import profile, ProfilerActivity
brk = {}
for n in ns:
    A = spd(n); L = torch.linalg.cholesky(A); torch.cuda.synchronize()
    ct.cholesky_inverse(L, method="auto"); torch.cuda.synchronize()
    for label, fn in (("auto", lambda: ct.cholesky_inverse(L, method="auto")),
                      ("auto_nocheck", lambda: ct.cholesky_inverse(L, method="auto", check=False)),
                      ("torch", lambda: torch.cholesky_inverse(L))):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            fn(); torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) * 1e3
        groups = {}
        spans = []
        for e in prof.profiler.kineto_results.events():
            if "CUDA" not in str(e.device_type()):
                continue
            nm = e.name()
            try:
                if e.is_user_annotation():
                    continue
            except Exception:
                pass
            low = nm.lower()
            key = ("trsm" if "trsm" in low else "trmm" if "trmm" in low else
                   "gemm" if "gemm" in low or "xmma" in low or "cutlass" in low else
                   "mirror" if "mirror" in low else "check" if "check" in low or "status" in low else
                   "copy/elementwise" if "elementwise" in low or "copy" in low or "memcpy" in low or "memset" in low else
                   nm[:60])
            g = groups.setdefault(key, [0, 0.0]); g[0] += 1; g[1] += e.duration_ns() / 1e6
            spans.append((e.start_ns(), e.start_ns() + e.duration_ns()))
        spans.sort()
        busy, cur_s, cur_e = 0, None, None
        for s, e_ in spans:
            if cur_e is None or s > cur_e:
                if cur_e is not None: busy += cur_e - cur_s
                cur_s, cur_e = s, e_
            else:
                cur_e = max(cur_e, e_)
        if cur_e is not None: busy += cur_e - cur_s
        first = spans[0][0] if spans else 0; last = max(e for _, e in spans) if spans else 0
        brk[f"{n}/{label}"] = dict(wall_ms=wall, gpu_span_ms=(last - first) / 1e6, gpu_busy_ms=busy / 1e6,
                                   kernels={k: dict(count=v[0], ms=round(v[1], 3)) for k, v in sorted(groups.items(), key=lambda kv: -kv[1][1])})
        print(f"\n== n={n} {label}: wall {wall:.2f} ms, GPU span {(last-first)/1e6:.2f} ms, busy (union) {busy/1e6:.2f} ms", flush=True)
        for k, v in sorted(groups.items(), key=lambda kv: -kv[1][1])[:12]:
            print(f"   {k:60s} {v[0]:5d} {v[1]:9.3f} ms")
    del A, L; torch.cuda.empty_cache()
json.dump(dict(rows=res, breakdown=brk), open(out, "w"), indent=1)
