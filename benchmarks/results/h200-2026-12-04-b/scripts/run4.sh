#!/bin/bash
# GPU run 4 (session 14): at the final code: the whole GPU suite, the check kernel A/B,
# first call on a cold cache (5 processes), the large-n table.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
OMP_NUM_THREADS=2 timeout 330 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 -rf --tb=short > $OUT/gpu_suite.txt 2>&1; echo "suite rc $?" >> $OUT/gpu_suite.txt
tail -3 $OUT/gpu_suite.txt
timeout 50 python3 devrun/s14/ck_ab.py > $OUT/ck_ab.txt 2>&1; echo "ck_ab rc $?" >> $OUT/ck_ab.txt
cat $OUT/ck_ab.txt
timeout 110 python3 benchmarks/first_call.py --no-warmup --repeat 5 --json $OUT/first_call.json > $OUT/first_call.txt 2>&1; echo "first_call rc $?" >> $OUT/first_call.txt
tail -12 $OUT/first_call.txt
timeout 100 python3 benchmarks/large_n_table.py $OUT/large_n.json --n 4096,8192,16384 > $OUT/large_n.md 2>&1; echo "large_n rc $?" >> $OUT/large_n.md
cat $OUT/large_n.md
