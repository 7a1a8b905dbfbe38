"""Issue 14 on the GPU: pot03 of every inverse plan, float64 timing vs torch, A -> A⁻¹ (the README's gemm_lauum figures).

Every timed figure goes through the public entry points with checks on
(ct.cholesky_inverse / ct.spd_inverse), torch interleaved in the same run (CUDA events,
cusolver_trace.timing.time_calls), % of DGEMM from cusolver_trace.ceiling measured here.
Plan variants are set through cusolver_trace.plans.BLOCKING (the documented tuning table).
Sections stop when the deadline (argv[1] seconds from start, default 135) is near.
Usage on a GPU machine: OUT=results python3 benchmarks/plans_table.py 140
(PLANS_DRY=1 runs the logic on the CPU at small sizes.)
"""
import json
import os
import sys
import time
import traceback

import torch

T0 = time.time()
DEADLINE = 135.0   # seconds from T0; the command line's first argument (main)
OUT = os.environ.get("OUT", "/tmp/out")

import cusolver_trace as ct  # noqa: E402
from cusolver_trace import checks, plans  # noqa: E402
from cusolver_trace.ceiling import ceiling  # noqa: E402
from cusolver_trace.timing import time_calls  # noqa: E402

DRY = os.environ.get("PLANS_DRY") == "1"  # CPU dry run of the script's logic, small sizes
DEV = "cpu" if DRY else "cuda:0"
SZ = {1000: 100, 4096: 300, 8192: 512, 16384: 640, 6144: 384, 512: 64, 1024: 96,
      2048: 160} if DRY else {}


def sz(n):
    return SZ.get(n, n)

RESULTS = {"pot03": [], "timing": [], "spd": [], "dtypes": [], "phases": [], "errors": []}
BASE = {k: (dict(v) if isinstance(v, dict) else v) for k, v in plans.BLOCKING.items()}
GL = {k: dict(v) for k, v in BASE["gemm_lauum"].items()}


def left():
    return DEADLINE - (time.time() - T0)


def say(*a):
    print(*a, flush=True)


def reset():
    plans.BLOCKING.clear()
    plans.BLOCKING.update({k: (dict(v) if isinstance(v, dict) else v) for k, v in BASE.items()})
    plans.BLOCKING["gemm_lauum"] = {k: dict(v) for k, v in GL.items()}


# variant name -> (method, BLOCKING changes); gemm_lauum params are per dtype
def V(method, top=None, **gl):
    return (method, top or {}, gl)


VARIANTS = {
    "rec_trtri_lauum": V("rec_trtri_lauum"),
    "rec_trtri_lauum:s2": V("rec_trtri_lauum", {"streams": 2}),
    "rec_trtri_lauum:s2,syrk=gemm": V("rec_trtri_lauum", {"streams": 2, "syrk_kernel": "gemm",
                                                          "lauum_base": {"float32": 512,
                                                                         "float64": 1024,
                                                                         "complex64": 1024,
                                                                         "complex128": 1024}}),
    "gemm_lauum": V("gemm_lauum"),
    "gemm_lauum:s1": V("gemm_lauum", streams=1),
    "gemm_lauum:s3": V("gemm_lauum", streams=3),
    "gemm_lauum:trmm=gemm": V("gemm_lauum", trmm_kernel="gemm"),
    "gemm_lauum:diag=trmm": V("gemm_lauum", lauum_diag="trmm"),
    "gemm_lauum:lb256": V("gemm_lauum", lauum_block=256),
    "gemm_lauum:lb1024": V("gemm_lauum", lauum_block=1024),
    "gemm_lauum:tb512": V("gemm_lauum", trtri_base=512),
    "gemm_lauum:tb1024": V("gemm_lauum", trtri_base=1024),
    "gemm_lauum:tb2048": V("gemm_lauum", trtri_base=2048),
    "gemm_lauum:tb1024,mb2048": V("gemm_lauum", trtri_base=1024, trmm_base=2048),
    "gemm_lauum:tb1024,s3": V("gemm_lauum", trtri_base=1024, streams=3),
    "gemm_lauum:tb1024,lb256": V("gemm_lauum", trtri_base=1024, lauum_block=256),
    "gemm_lauum:tb1024,fill=kernel": V("gemm_lauum", trtri_base=1024, fill="kernel"),
    "gemm_lauum:scratch": V("gemm_lauum", trtri_scratch=True),
    "gemm_lauum:scratch,trmm=gemm": V("gemm_lauum", trtri_scratch=True, trmm_kernel="gemm"),
    "gemm_lauum:scratch,s3": V("gemm_lauum", trtri_scratch=True, streams=3),
    "gemm_lauum:mb512": V("gemm_lauum", trmm_base=512),
    "gemm_lauum:mb2048": V("gemm_lauum", trmm_base=2048),
    "gemm_lauum_emu": V("gemm_lauum_emu"),
    "gemm_lauum:fill=kernel": V("gemm_lauum", fill="kernel"),
    "gemm_lauum:fill=kernel,trmm=gemm": V("gemm_lauum", fill="kernel", trmm_kernel="gemm"),
}


def apply(variant, dtype):
    method, top, gl = VARIANTS[variant]
    reset()
    plans.BLOCKING.update(top)
    plans.BLOCKING["gemm_lauum"][dtype].update(gl)
    return method


def caller(variant, L, upper, dtype, check=True):
    def fn():
        m = apply(variant, dtype)
        return ct.cholesky_inverse(L, upper, method=m, check=check)
    return fn


def gpu_spd(n, dtype, cond=1e3, seed=0):
    """Q·diag(σ)·Qᴴ, Haar-ish Q from a QR on the GPU (matrices.spd does its QR on the CPU)."""
    wide = torch.complex128 if "complex" in dtype else torch.float64
    g = torch.Generator(device=DEV).manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(n, n, dtype=wide, device=DEV, generator=g))
    sigma = torch.logspace(0, -torch.log10(torch.tensor(cond)).item(), n, dtype=torch.float64,
                           device=DEV).to(wide)
    A = (Q * sigma) @ Q.mH
    A = (A + A.mH) / 2
    return A.to(getattr(torch, dtype))


def fast_factor(n, dtype, upper):
    """A well-conditioned SPD matrix without a Haar Q (timing only)."""
    g = torch.Generator(device=DEV).manual_seed(n)
    X = torch.randn(n, n, dtype=getattr(torch, dtype), device=DEV, generator=g) / n ** 0.5
    A = X @ X.mH + torch.eye(n, dtype=X.dtype, device=DEV)
    return A, torch.linalg.cholesky(A, upper=upper)


def section(name, budget):
    say(f"\n== {name} (t = {time.time() - T0:.0f} s, {left():.0f} s left)")
    return left() > budget


# ----------------------------------------------------------------------------- 1. pot03
def _pot03_row(label, run, A, n, dtype, upper):
    """Run one inverse, record and print its pot03 (or the error) in RESULTS["pot03"]."""
    rec = {"variant": label, "n": n, "dtype": dtype, "upper": upper}
    try:
        r = float(checks.pot03(A, run(), upper))
        rec["pot03"] = r
        say(f"  {'PASS' if r < 30 else 'FAIL'} pot03={r:9.3g}  {label:30s} n={n} "
            f"{dtype:10s} {'upper' if upper else 'lower'}")
    except Exception as exc:
        rec["error"] = f"{type(exc).__name__}: {exc}"
        say(f"  FAIL {label} n={n} {dtype} upper={upper}: {rec['error'][:300]}")
    RESULTS["pot03"].append(rec)


def pot03_all():
    new = ["gemm_lauum", "gemm_lauum:fill=kernel", "gemm_lauum:trmm=gemm", "gemm_lauum:diag=trmm",
           "gemm_lauum:s3", "gemm_lauum:tb512", "gemm_lauum:tb2048", "gemm_lauum:scratch",
           "gemm_lauum:scratch,trmm=gemm", "rec_trtri_lauum:s2",
           "rec_trtri_lauum:s2,syrk=gemm", "gemm_lauum_emu"]
    spd_methods = ["gemm_lauum", "potrf_gemm_lauum", "auto", "potrf_trsm_batched"]
    for n in (sz(1000), sz(4096)):
        for dtype in ("float64", "float32", "complex128", "complex64"):
            if left() < 60:
                say("  pot03: stopping early (time)")
                return
            A = gpu_spd(n, dtype)
            for upper in (False, True):
                L = torch.linalg.cholesky(A, upper=upper)
                for v in new:
                    if v == "gemm_lauum_emu" and dtype not in ("float64", "complex128"):
                        continue
                    _pot03_row(v, lambda: caller(v, L, upper, dtype)(), A, n, dtype, upper)
                reset()
                for m in spd_methods:
                    if m == "potrf_trsm_batched" and (n > sz(1000) or DRY):
                        continue
                    _pot03_row(f"spd_inverse:{m}", lambda: ct.spd_inverse(A, upper, method=m), A,
                               n, dtype, upper)
                del L
            del A
    # the check path of spd_inverse: a matrix that is not positive definite
    A = gpu_spd(sz(512), "float64")
    A[10, 10] = -1.0
    for m in ("gemm_lauum", "potrf_gemm_lauum", "auto"):
        try:
            ct.spd_inverse(A, method=m)
            say(f"  FAIL spd_inverse:{m} accepted an indefinite matrix")
        except ct.NotPositiveDefiniteError as exc:
            say(f"  PASS spd_inverse:{m} raised NotPositiveDefiniteError: {str(exc)[:120]}")


# ----------------------------------------------------------------------------- 2. float64 timing
def timing_f64(ceil):
    small = ["rec_trtri_lauum", "gemm_lauum", "gemm_lauum:tb512", "gemm_lauum:lb256",
             "gemm_lauum:fill=kernel", "gemm_lauum:s1"]
    sizes = {1024: (15, small), 2048: (12, small),
             4096: (10, list(VARIANTS)), 8192: (6, list(VARIANTS)),
             16384: (3, ["rec_trtri_lauum", "gemm_lauum", "gemm_lauum:tb512", "gemm_lauum:s3",
                         "gemm_lauum:tb2048", "gemm_lauum:tb1024,mb2048",
                         "gemm_lauum:fill=kernel", "gemm_lauum:scratch",
                         "gemm_lauum:scratch,trmm=gemm", "gemm_lauum_emu"])}
    rate = ceil.gemm_gflops
    for n0, (rep, variants) in sizes.items():
        need = {1024: 3, 2048: 4, 4096: 8, 8192: 15, 16384: 30}[n0]
        n = sz(n0)
        if left() < need:
            say(f"  n={n}: skipped (time)")
            continue
        A, L = fast_factor(n, "float64", False)
        fns = {"torch": lambda: torch.cholesky_inverse(L)}
        for v in variants:
            fns[v] = caller(v, L, False, "float64")
        bad = []
        for v in variants:  # warm-up + failure screen (a failing variant is left out)
            try:
                fns[v]()
            except Exception as exc:
                say(f"  n={n} {v}: {type(exc).__name__}: {str(exc)[:200]}")
                bad.append(v)
        for v in bad:
            fns.pop(v)
        t = time_calls(fns, device=DEV, warmup=0, repeat=rep)
        reset()
        tt = t["torch"].median_ms
        say(f"  n={n}  (DGEMM {rate / 1e3:.1f} TFLOP/s; potri count 2n³/3)")
        say(f"  {'method':32s} {'ms':>9s} {'iqr':>7s} {'/torch':>7s} {'%DGEMM':>7s}")
        for name, tm in sorted(t.items(), key=lambda kv: kv[1].median_ms):
            gf = 2 * n ** 3 / 3 / (tm.median_ms * 1e-3) / 1e9
            say(f"  {name:32s} {tm.median_ms:9.3f} {tm.iqr_ms:7.3f} {tm.median_ms / tt:7.3f} "
                f"{100 * gf / rate:6.1f}%")
            RESULTS["timing"].append({"n": n, "method": name, "ms": tm.median_ms,
                                      "iqr_ms": tm.iqr_ms, "ratio": tm.median_ms / tt,
                                      "pct_dgemm": 100 * gf / rate})
        if n0 == 4096 and not DRY:
            breakdown(L, n)
        if n0 == 8192 and not DRY:
            phases(L, n)
            breakdown(L, n)
            breakdown(L, n, trtri_scratch=True)
            breakdown(L, n, trtri_base=512, trmm_base=512)
        A = L = fns = None
        torch.cuda.empty_cache()


def phases(L, n):
    """trtri and lauum halves of gemm_lauum (one stream, then its streams) timed apart."""
    from cusolver_trace._dtypes import dtype_info
    from cusolver_trace.backends import cuda_plans
    from cusolver_trace.backends._context import on_device

    reset()
    dt = dtype_info(L.dtype)
    for streams in (1, 2):
        p = plans.inverse_plan(n, False, dtype="float64", streams=1)
        cut = next(i for i, c in enumerate(p.calls) if c.c == (0, 0)
                   and c.routine in ("gemm", "trmm_out"))
        tri = plans.schedule(list(p.calls[:cut]), streams)
        lau = plans.schedule(list(p.calls[cut:]), streams)
        buf = torch.zeros((1, 2, n, n), dtype=L.dtype, device=L.device)
        buf[:, 0].copy_(L.mT)
        buf[:, 1].diagonal(dim1=-2, dim2=-1).fill_(1)
        out = {}
        with on_device(L.device) as ctx:
            for name, calls in (("trtri", tri), ("lauum", lau)):
                run = cuda_plans.plan_runner(ctx, dt, (calls,), buf)
                ms = []
                for _ in range(4):
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record()
                    run(calls, buf.data_ptr(), 0)
                    e.record()
                    e.synchronize()
                    ms.append(s.elapsed_time(e))
                out[name] = sorted(ms)[len(ms) // 2]
        say(f"  phases n={n} streams={streams}: trtri {out['trtri']:.3f} ms, lauum "
            f"{out['lauum']:.3f} ms (lauum flops n³/3 -> {n ** 3 / 3 / out['lauum'] / 1e9:.1f} "
            "TFLOP/s)")
        RESULTS["phases"].append({"n": n, "streams": streams, **out})


def breakdown(L, n, **params):
    """Per-routine GPU time of gemm_lauum's calls (one stream, an event pair per call)."""
    from cusolver_trace._dtypes import dtype_info
    from cusolver_trace.backends import cuda_plans
    from cusolver_trace.backends._context import on_device

    reset()
    dt = dtype_info(L.dtype)
    p = plans.inverse_plan(n, False, dtype="float64", **{**params, "streams": 1})
    cut = next(i for i, c in enumerate(p.calls) if c.c == (0, 0)
               and c.routine in ("gemm", "trmm_out"))
    mats = cuda_plans._plan_buffers(L.reshape(1, n, n), p)
    with on_device(L.device) as ctx:
        run = cuda_plans.plan_runner(ctx, dt, (p.calls,), mats[0], extra=mats[1:])
        bases = [m.data_ptr() for m in mats]
        run(p.calls, 0, 0, bases)  # warm
        evs = []
        for c in p.calls:
            s_, e_ = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s_.record()
            run([c], 0, 0, bases)
            e_.record()
            evs.append((c, s_, e_))
        torch.cuda.synchronize()
    agg = {}
    for i, (c, s_, e_) in enumerate(evs):
        key = ("trtri" if i < cut else "lauum", c.routine)
        ms, fl, cnt = agg.get(key, (0.0, 0.0, 0))
        agg[key] = (ms + s_.elapsed_time(e_), fl + plans.call_flops(c), cnt + 1)
    tot = sum(v[0] for v in agg.values())
    say(f"  breakdown n={n} {params or ''} (one stream, per call; total {tot:.3f} ms)")
    for (ph, r), (ms, fl, cnt) in sorted(agg.items()):
        say(f"    {ph:6s} {r:9s} x{cnt:3d} {ms:8.3f} ms  {fl / ms / 1e9:6.1f} TFLOP/s (real flops done)")
        RESULTS["phases"].append({"n": n, "phase": ph, "routine": r, "calls": cnt, "ms": ms,
                                  "flops": fl})


# ----------------------------------------------------------------------------- 3. A -> A⁻¹
def spd_8192():
    n = sz(8192)
    A, _ = fast_factor(n, "float64", False)
    fns = {"torch: cholesky_inverse(cholesky(A))":
           lambda: torch.cholesky_inverse(torch.linalg.cholesky(A)),
           "(torch.linalg.cholesky alone)": lambda: torch.linalg.cholesky(A)}
    for m in ("auto", "rec_trtri_lauum", "gemm_lauum", "potrf_gemm_lauum"):
        fns[f"spd_inverse:{m}"] = (lambda m=m: ct.spd_inverse(A, method=m))
    for pb in (512, 2048, 4096):
        def fused(pb=pb):
            reset()
            plans.BLOCKING["gemm_lauum"]["float64"]["potrf_base"] = pb
            return ct.spd_inverse(A, method="potrf_gemm_lauum")
        fns[f"spd_inverse:potrf_gemm_lauum:pb{pb}"] = fused
    def fused_kernel():
        reset()
        plans.BLOCKING["gemm_lauum"]["float64"]["fill"] = "kernel"
        return ct.spd_inverse(A, method="potrf_gemm_lauum")
    fns["spd_inverse:potrf_gemm_lauum:fill=kernel"] = fused_kernel

    def fused_syrk():
        reset()
        plans.BLOCKING["gemm_lauum"]["float64"]["syrk_kernel"] = "syrk"
        return ct.spd_inverse(A, method="potrf_gemm_lauum")
    fns["spd_inverse:potrf_gemm_lauum:syrk"] = fused_syrk
    for f in fns.values():
        f()
    t = time_calls(fns, device=DEV, warmup=0, repeat=6)
    reset()
    tt = t["torch: cholesky_inverse(cholesky(A))"].median_ms
    for name, tm in t.items():
        say(f"  {name:40s} {tm.median_ms:9.3f} ms  /torch {tm.median_ms / tt:6.3f}")
        RESULTS["spd"].append({"n": n, "method": name, "ms": tm.median_ms,
                               "ratio": tm.median_ms / tt})
    for m in ("gemm_lauum", "potrf_gemm_lauum"):
        X = ct.spd_inverse(A, method=m)
        say(f"  spd_inverse:{m} pot03 = {float(checks.pot03(A, X)):.3g}")


# ----------------------------------------------------------------------------- 4. other dtypes
def dtypes_8192():
    cases = [(d, n) for d in ("float32", "complex128", "complex64")
             for n in ((2048, 4096, 8192) if d == "float32" else (2048, 4096, 6144))]
    for dtype, n in cases:
        if left() < 8:
            say(f"  {dtype} n={n}: skipped (time)")
            continue
        n = sz(n)
        A, L = fast_factor(n, dtype, False)
        fns = {"torch": lambda: torch.cholesky_inverse(L)}
        for v in ("rec_trtri_lauum", "gemm_lauum", "gemm_lauum:tb1024", "gemm_lauum:lb1024",
                  "gemm_lauum:tb1024,fill=kernel"):
            fns[v] = caller(v, L, False, dtype)
        for f in fns.values():
            f()
        t = time_calls(fns, device=DEV, warmup=0, repeat=5)
        reset()
        tt = t["torch"].median_ms
        ceil = ceiling(DEV, dtype)
        mult = 4 if "complex" in dtype else 1
        for name, tm in t.items():
            gf = mult * 2 * n ** 3 / 3 / (tm.median_ms * 1e-3) / 1e9
            say(f"  {dtype:10s} n={n} {name:28s} {tm.median_ms:9.3f} ms  /torch "
                f"{tm.median_ms / tt:6.3f}  {100 * gf / ceil.gemm_gflops:5.1f}% of GEMM")
            RESULTS["dtypes"].append({"dtype": dtype, "n": n, "method": name,
                                      "ms": tm.median_ms, "ratio": tm.median_ms / tt})
        A = L = fns = None
        torch.cuda.empty_cache()


def main(argv=None):
    global DEADLINE
    from cusolver_trace._argparse import Parser
    from cusolver_trace.cli._common import number

    p = Parser(prog="plans_table.py", description=__doc__.splitlines()[0])
    p.add_argument("deadline", nargs="?", type=number(0, exclusive=True), default=DEADLINE,
                   help="seconds from the start after which no new section starts")
    DEADLINE = p.parse_args(argv).deadline
    if not DRY and not torch.cuda.is_available():
        print("plans_table.py: no CUDA GPU visible to torch; PLANS_DRY=1 runs the script's "
              "logic on the CPU with small sizes", file=sys.stderr)
        raise SystemExit(2)
    os.makedirs(OUT, exist_ok=True)
    say(f"torch {torch.__version__}, {'CPU dry run' if DRY else torch.cuda.get_device_name(0)}; cusolver_trace from "
        f"{os.path.dirname(ct.__file__)}")
    if not DRY:
        from cusolver_trace.raw import cublas_modes
        say(f"FP64 emulation in the binding: {cublas_modes.emulation_available() or 'yes'}")
    steps = [("pot03 of every new plan (n = 1000, 4096; 4 dtypes; lower/upper)", 60, pot03_all),
             ("float64 timing (checks on, torch interleaved)", 20, None),
             ("A -> A^-1, n = 8192, float64", 12, spd_8192),
             ("other dtypes", 12, dtypes_8192)]
    for name, budget, fn in steps:
        if not section(name, budget):
            say("  skipped (time)")
            continue
        try:
            if fn is None:
                ceil = ceiling(DEV, "float64")
                say(f"  DGEMM ceiling {ceil.gemm_gflops / 1e3:.2f} TFLOP/s ({ceil.how})")
                timing_f64(ceil)
            else:
                fn()
        except Exception:
            tb = traceback.format_exc()
            RESULTS["errors"].append({"section": name, "traceback": tb})
            say("  ERROR\n" + tb[-3000:])
        torch.cuda.empty_cache()
    with open(os.path.join(OUT, "plans.json"), "w") as f:
        json.dump(RESULTS, f, indent=1)
    say(f"\n== done in {time.time() - T0:.0f} s; {OUT}/plans.json")


if __name__ == "__main__":
    main()
