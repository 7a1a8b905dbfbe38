#!/bin/bash
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
timeout 60 python3 devrun/s11/rowprof.py 2>&1 | tee $OUT/rowprof.txt | head -60
timeout 60 python3 devrun/s11/fc_diag.py > $OUT/fc_diag.txt 2>&1; grep -A4 "^[0-9]*x" $OUT/fc_diag.txt
timeout 100 python3 benchmarks/first_call.py --no-warmup --cases 1000x64 --json $OUT/first_call.json --timeout 60 2>&1 | tail -6 | tee $OUT/first_call.txt
