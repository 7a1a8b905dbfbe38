#!/bin/bash
# GPU run 5 (session 16): the mirror kernel (32 x 8 threads) and the triangle-only copy of
# gemm_lauum's factor: the plan / mirror / routine GPU tests, the kernel breakdown at 8192 /
# 16384, the host stages of one call, the large-n table.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine.txt
OMP_NUM_THREADS=2 timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_plans.py -n 4 -rf --tb=short > $OUT/gpu_plans.txt 2>&1; echo "rc $?" >> $OUT/gpu_plans.txt
tail -8 $OUT/gpu_plans.txt
timeout 100 python3 devrun/s16/prof16k.py > $OUT/prof16k.txt 2>&1; echo "rc $?" >> $OUT/prof16k.txt
grep -v "^      \|Warning\|warn_once" $OUT/prof16k.txt
timeout 60 python3 devrun/s16/leadin.py > $OUT/leadin.txt 2>&1; echo "rc $?" >> $OUT/leadin.txt
cat $OUT/leadin.txt
timeout 120 python3 benchmarks/large_n_table.py $OUT/large_n.json --n 4096,8192,16384 > $OUT/large_n.md 2>&1; echo "large_n rc $?" >> $OUT/large_n.md
cat $OUT/large_n.md
