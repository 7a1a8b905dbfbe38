#!/bin/bash
# GPU run B (session 9): the reruns after fixes, the Jacobi kernel's time split, the eigh table.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH || exit 9
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/xdg
timeout 90 python3 - <<'PY' 2>&1 | tee $OUT/split.log
import time, torch, cusolver_trace as ct
from cusolver_trace.backends.jacobi_small import syevj_small
from cusolver_trace.matrices import structured
for n, b in ((3, 100000), (8, 10000), (3, 1000000)):
    A = structured("hermitian", n, batch=(b,), cond=100.0, dtype="float64", device="cuda", seed=0)
    for what, fn in (("kernel (syevj_small)", lambda: syevj_small(A)),
                     ("ct.eigh jacobi check=False", lambda: ct.eigh(A, method="jacobi", check=False)),
                     ("ct.eigh jacobi check=True", lambda: ct.eigh(A, method="jacobi")),
                     ("ct.eigvalsh jacobi", lambda: ct.eigvalsh(A, method="jacobi"))):
        fn(); torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ev, wall = [], []
        for _ in range(9):
            t = time.perf_counter(); e0.record(); fn(); e1.record(); torch.cuda.synchronize()
            wall.append((time.perf_counter() - t) * 1e3); ev.append(e0.elapsed_time(e1))
        ev.sort(); wall.sort()
        print(f"{b}x{n} {what}: events {ev[4]:.3f} ms, synced wall {wall[4]:.3f} ms", flush=True)
PY
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_jacobi_small.py tests/test_gpu_eigh.py -k "jacobi or call_sequences or torch_cannot or million or every_row" 2>&1 | tee $OUT/rerun.log | tail -12
timeout 300 python3 benchmarks/eigh_table.py $OUT/eigh_table.json --deadline 250 2>&1 | tee $OUT/eigh_table.log | tail -16
