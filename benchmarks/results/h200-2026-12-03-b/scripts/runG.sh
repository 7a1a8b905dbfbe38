#!/bin/bash
# GPU run G (session 9): the eigensolvers through pytest benchmarks/, sweep, devices and trace.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH || exit 9
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/xdg
mkdir -p /tmp/xdg
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu benchmarks/test_bench_eigh.py --benchmark-disable 2>&1 | tee $OUT/bench_eigh.txt | tail -4
timeout 60 python3 -m cusolver_trace sweep --op eigh --n 3,8,32 --batch 1000 --dtype float64 --out $OUT/sweep_eigh.json 2>&1 | tee $OUT/sweep_eigh.txt | tail -14
timeout 60 python3 -m cusolver_trace devices --op eigvalsh --n 64 --batch 4 --uplo U 2>&1 | tee $OUT/devices_eigh.txt | tail -5
cat > /tmp/prog.py <<'PY'
import torch
A = torch.randn(64, 16, 16, dtype=torch.float64, device="cuda"); A = A + A.mT
for _ in range(3):
    w, V = torch.linalg.eigh(A)
w = torch.linalg.eigvalsh(A[0])
torch.cuda.synchronize()
PY
timeout 90 python3 -m cusolver_trace trace -- python3 /tmp/prog.py 2>&1 | tee $OUT/trace_eigh.txt | tail -12
