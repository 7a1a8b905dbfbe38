#!/bin/bash
# GPU run 2 (session 14): the new check kernel: A/B against bff0f7d's, its property test,
# first call on a cold cache, the large-n table.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/ck_ab.txt
timeout 150 python3 devrun/s14/ck_ab.py >> $OUT/ck_ab.txt 2>&1; echo "ck_ab rc $?" >> $OUT/ck_ab.txt
tail -20 $OUT/ck_ab.txt
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_check_kernel.py -rf --tb=short > $OUT/check_kernel_tests.txt 2>&1; echo "tests rc $?" >> $OUT/check_kernel_tests.txt
tail -3 $OUT/check_kernel_tests.txt
timeout 240 python3 benchmarks/first_call.py --no-warmup --repeat 5 --json $OUT/first_call.json > $OUT/first_call.txt 2>&1; echo "first_call rc $?" >> $OUT/first_call.txt
tail -12 $OUT/first_call.txt
timeout 170 python3 benchmarks/large_n_table.py $OUT/large_n.json --n 4096,8192,16384 > $OUT/large_n.md 2>&1; echo "large_n rc $?" >> $OUT/large_n.md
cat $OUT/large_n.md
