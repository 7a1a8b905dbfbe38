#!/bin/bash
# GPU run 2 (session 11): batched diagonal inversion grid; first call with the queue-only ready; GPU plan + fused tests.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
timeout 60 python3 devrun/s11/fc_diag.py > $OUT/fc_diag.txt 2>&1; grep -A3 "^[0-9]*x" $OUT/fc_diag.txt
timeout 150 python3 benchmarks/first_call.py --no-warmup --json $OUT/first_call.json --timeout 100 2>&1 | tail -8 | tee $OUT/first_call.txt
timeout 200 python3 devrun/s11/tune3.py $OUT/tune3.json 4096,8192,16384 2>&1 | tee $OUT/tune3.log
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
OMP_NUM_THREADS=2 timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_plans.py -n 7 2>&1 | tail -4 | tee $OUT/pytest_plans.txt
