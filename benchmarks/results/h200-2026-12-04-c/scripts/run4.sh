#!/bin/bash
# GPU run 4 (session 15), on a fresh machine, before anything is compiled on it: first call on
# a cold cache with the new warm-up (and the warm-up's time), then with --cold-inputs, then the
# large-n table.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine.txt
timeout 200 python3 benchmarks/first_call.py --repeat 5 --json $OUT/first_call.json > $OUT/first_call.txt 2>&1; echo "first_call rc $?" >> $OUT/first_call.txt
cat $OUT/first_call.txt | grep -v "^| \(potrf_inverse\|inverse\) "
timeout 130 python3 benchmarks/first_call.py --no-warmup --repeat 5 --cold-inputs --json $OUT/first_call_cold_inputs.json > $OUT/first_call_cold_inputs.txt 2>&1; echo "first_call rc $?" >> $OUT/first_call_cold_inputs.txt
tail -12 $OUT/first_call_cold_inputs.txt
timeout 100 python3 benchmarks/large_n_table.py $OUT/large_n.json --n 4096,8192,16384 > $OUT/large_n.md 2>&1; echo "large_n rc $?" >> $OUT/large_n.md
cat $OUT/large_n.md
