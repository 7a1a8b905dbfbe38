#!/bin/bash
# GPU run 6 (session 15) at 84e4dfb (the deferred ask): first call on a cold cache with the
# process warm-up of 670fb36, then with --cold-inputs, then the whole GPU suite.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
timeout 130 python3 benchmarks/first_call.py --no-warmup --repeat 5 --json $OUT/first_call.json > $OUT/first_call.txt 2>&1; echo "first_call rc $?" >> $OUT/first_call.txt
tail -12 $OUT/first_call.txt
timeout 110 python3 benchmarks/first_call.py --no-warmup --repeat 5 --cold-inputs --json $OUT/first_call_cold_inputs.json > $OUT/first_call_cold_inputs.txt 2>&1; echo "first_call rc $?" >> $OUT/first_call_cold_inputs.txt
tail -10 $OUT/first_call_cold_inputs.txt
OMP_NUM_THREADS=2 timeout 340 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 -rf --tb=short > $OUT/gpu_suite.txt 2>&1; echo "suite rc $?" >> $OUT/gpu_suite.txt
tail -3 $OUT/gpu_suite.txt
