#!/bin/bash
# GPU run 10 (session 16): the trtri_lauum plans read a complex factor's non-real diagonal as
# given (_real_diagonal): every method again, the plan tests, the methods' trtri_lauum tests.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
timeout 60 python3 devrun/s16/nonreal.py > $OUT/nonreal.txt 2>&1; echo "rc $?" >> $OUT/nonreal.txt
grep -v "Warning\|X = ct" $OUT/nonreal.txt
OMP_NUM_THREADS=2 timeout 170 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_plans.py tests/test_gpu_methods.py tests/test_gpu_routines.py tests/test_gpu_edge.py -k "not fused" -n 7 -rf --tb=short > $OUT/gpu_tests.txt 2>&1; echo "rc $?" >> $OUT/gpu_tests.txt
tail -6 $OUT/gpu_tests.txt
