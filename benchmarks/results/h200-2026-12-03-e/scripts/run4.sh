#!/bin/bash
# GPU run 4 (session 12): the first call (median of 5 processes) and the trace overhead (median of 3), at the session's code.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/first_call.py --no-warmup --repeat 5 --json $OUT/first_call.json --timeout 80 2>&1 | grep -v Warn | tail -14 | tee $OUT/first_call.txt
timeout 330 python3 benchmarks/trace_overhead.py /tmp/ovh --runs 3 --timeout 100 2>&1 | tail -22 | tee $OUT/trace_overhead.txt
cp /tmp/ovh/summary.json $OUT/trace_overhead_summary.json 2>/dev/null
