#!/bin/bash
# GPU run A (session 9): the eigensolvers' GPU tests and the Jacobi kernel.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH || exit 9
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=$PWD/.cache-xdg
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
git log --oneline -1 2>/dev/null
timeout 120 python3 - <<'PY' 2>&1 | tee $OUT/smoke.log
import time, torch, cusolver_trace as ct
from cusolver_trace import checks
from cusolver_trace.matrices import structured
for n, b, dt in ((3, 100000, "float64"), (8, 10000, "float64"), (3, 1000, "complex128"), (5, 7, "float32")):
    A = structured("hermitian", n, batch=(b,), cond=100.0, dtype=dt, device="cuda", seed=0)
    for m in ("jacobi", "XsyevBatched", "syevjBatched", "torch"):
        try:
            w, V = ct.eigh(A, method=m); torch.cuda.synchronize()
            ts = []
            for _ in range(7):
                t = time.perf_counter(); ct.eigh(A, method=m); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
            ts.sort()
            print(f"{b}x{n} {dt} {m}: {ts[3]*1e3:.3f} ms ratio {float(checks.eig_check(A, w, V)):.3g}", flush=True)
        except Exception as e:
            print(f"{b}x{n} {dt} {m}: {type(e).__name__}: {str(e)[:300]}", flush=True)
PY
timeout 150 python3 -m pytest -q -p no:cacheprovider --maxfail=20 tests/test_gpu_jacobi_small.py 2>&1 | tee $OUT/jacobi.log | tail -25
timeout 330 python3 -m pytest -q -p no:cacheprovider --maxfail=40 tests/test_gpu_eigh.py 2>&1 | tee $OUT/eigh.log | tail -40
