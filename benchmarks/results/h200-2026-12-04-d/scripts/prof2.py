"""Session 16: the host time before the first kernel of one checked auto call at n = 8192 /
16384 float64 (torch.profiler with CPU and CUDA activity; the call inside record_function):
call start -> first kernel start, last kernel end -> call end, and the CPU-side runtime calls
(cuda*) in the lead-in with their durations. Development data."""
import json, os, statistics, collections, time
import torch
import cusolver_trace as ct
out = os.environ.get("OUT", ".")
def spd(n):
    g = torch.Generator(device="cuda").manual_seed(n)
    G = torch.randn(n, n, device="cuda", dtype=torch.float64, generator=g)
    A = G @ G.mT / n + torch.eye(n, device="cuda", dtype=torch.float64)
    del G
    return A
def host_ms(fn, k=5):
    ts = []
    for _ in range(k):
        torch.cuda.synchronize(); t = time.perf_counter(); fn(); ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)
for n in (8192, 16384):
    A = spd(n); L = torch.linalg.cholesky(A)
    f = lambda: ct.cholesky_inverse(L, method="auto")
    print(f"n={n}: host wall of the call (returns after the check's sync) {host_ms(f):.2f} ms", flush=True)
    f(); torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA, torch.profiler.ProfilerActivity.CPU]) as p:
        with torch.profiler.record_function("CALL"):
            f()
        torch.cuda.synchronize()
    path = f"{out}/trace_auto_{n}.json"
    p.export_chrome_trace(path)
    ev = json.load(open(path))["traceEvents"]
    call = [e for e in ev if e.get("name") == "CALL" and e.get("ph") == "X"][0]
    c0, c1 = call["ts"], call["ts"] + call["dur"]
    ks = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")), key=lambda e: e["ts"])
    k0, k1 = ks[0]["ts"], max(e["ts"] + e["dur"] for e in ks)
    print(f"   CALL {call['dur']/1e3:.2f} ms; first kernel at +{(k0 - c0)/1e3:.2f} ms ({ks[0]['name'][:60]}), last kernel end at +{(k1 - c0)/1e3:.2f} ms")
    rt = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and c0 <= e["ts"] <= c1]
    lead = [e for e in rt if e["ts"] < k0]
    agg = collections.defaultdict(lambda: [0, 0.0])
    for e in lead: agg[e["name"]][0] += 1; agg[e["name"]][1] += e["dur"]
    print(f"   runtime calls before the first kernel: {len(lead)}; " + ", ".join(f"{k} x{c} {d/1e3:.3f} ms" for k, (c, d) in sorted(agg.items(), key=lambda x: -x[1][1])[:8]))
    agg = collections.defaultdict(lambda: [0, 0.0])
    for e in rt: agg[e["name"]][0] += 1; agg[e["name"]][1] += e["dur"]
    print(f"   runtime calls in the call: {len(rt)}; " + ", ".join(f"{k} x{c} {d/1e3:.3f} ms" for k, (c, d) in sorted(agg.items(), key=lambda x: -x[1][1])[:8]))
    cpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cpu_op" and c0 <= e["ts"] < k0]
    agg = collections.defaultdict(lambda: [0, 0.0])
    for e in cpu: agg[e["name"]][0] += 1; agg[e["name"]][1] += e["dur"]
    print(f"   torch ops before the first kernel: " + ", ".join(f"{k} x{c} {d/1e3:.3f} ms" for k, (c, d) in sorted(agg.items(), key=lambda x: -x[1][1])[:8]))
    # gaps: GPU idle inside [k0, k1] longer than 50 us, with what ran before / after
    busy_end, gaps = ks[0]["ts"] + ks[0]["dur"], []
    for a in ks[1:]:
        if a["ts"] > busy_end + 50: gaps.append((a["ts"] - busy_end, busy_end - c0, a["name"][:50]))
        busy_end = max(busy_end, a["ts"] + a["dur"])
    print(f"   idle gaps > 50 us inside the kernels' span: {len(gaps)}, {sum(g for g, _, _ in gaps)/1e3:.2f} ms: " + "; ".join(f"{g/1e3:.2f} ms at +{t/1e3:.2f} before {nm}" for g, t, nm in sorted(gaps, reverse=True)[:6]))
    del A, L; torch.cuda.empty_cache()
