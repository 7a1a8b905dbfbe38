#!/bin/bash
# GPU run 1 (session 13): the whole GPU suite (full output kept), then test_gpu_plans.py three more times under -n 7.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt 2>&1
OMP_NUM_THREADS=2 timeout 430 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 -rf --tb=short > $OUT/gpu_suite.txt 2>&1; echo "suite rc $?" >> $OUT/gpu_suite.txt
tail -8 $OUT/gpu_suite.txt
for i in 1 2 3; do OMP_NUM_THREADS=2 timeout 50 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_plans.py -n 7 -rf --tb=short > $OUT/plans_$i.txt 2>&1; tail -2 $OUT/plans_$i.txt; done
