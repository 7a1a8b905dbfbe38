#!/bin/bash
# GPU run 3b (session 11): the whole GPU suite at the final code; the first auto call on a cold cache.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
timeout 130 python3 benchmarks/first_call.py --no-warmup --json $OUT/first_call.json --timeout 80 2>&1 | tail -12 | tee $OUT/first_call.txt
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
OMP_NUM_THREADS=2 timeout 400 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 2>&1 | tail -40 > $OUT/gpu_suite.txt; tail -6 $OUT/gpu_suite.txt
