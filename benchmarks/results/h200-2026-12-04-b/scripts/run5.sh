#!/bin/bash
# GPU run 5 (session 14): v3 of the check kernel again (3a58e0c reverted): A/B, its tests, first call.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
timeout 50 python3 devrun/s14/ck_ab.py > $OUT/ck_ab.txt 2>&1; echo "ck_ab rc $?" >> $OUT/ck_ab.txt
cat $OUT/ck_ab.txt
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_check_kernel.py tests/test_gpu_routines.py tests/test_gpu_edge.py -n 4 -rf --tb=short > $OUT/check_kernel_tests.txt 2>&1; echo "tests rc $?" >> $OUT/check_kernel_tests.txt
tail -2 $OUT/check_kernel_tests.txt
timeout 110 python3 benchmarks/first_call.py --no-warmup --repeat 5 --json $OUT/first_call.json > $OUT/first_call.txt 2>&1; echo "first_call rc $?" >> $OUT/first_call.txt
tail -9 $OUT/first_call.txt
