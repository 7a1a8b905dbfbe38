#!/bin/bash
# GPU run D2 (session 10): first call on a cold cache + warmup (issue 27), the tracing goals (issue 26).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
timeout 240 python3 benchmarks/first_call.py --json $OUT/first_call.json --timeout 120 2>&1 | tail -60 | tee $OUT/first_call.txt
timeout 330 python3 benchmarks/trace_overhead.py /tmp/ovh --runs 3 --timeout 100 2>&1 | tail -22 | tee $OUT/trace_overhead.txt
cp /tmp/ovh/summary.json $OUT/trace_overhead_summary.json
ls -la /tmp/ovh/*.json | tee -a $OUT/trace_overhead.txt
