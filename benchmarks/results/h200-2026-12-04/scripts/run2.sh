#!/bin/bash
# GPU run 2 (session 13): the first call (median of 5 processes) after the deferred ask; the pieces of it (3 processes per case).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
git log --oneline -1 > $OUT/head.txt 2>&1
for c in "1000 64" "300 100"; do for i in 1 2 3; do timeout 60 python3 devrun/s13/fc_diag6.py $c 2>&1 | grep -v Warn; done; done > $OUT/fc_diag6.txt 2>&1
grep first/torch $OUT/fc_diag6.txt
timeout 300 python3 benchmarks/first_call.py --no-warmup --repeat 5 --json $OUT/first_call.json --timeout 80 > $OUT/first_call.txt 2>&1; echo "first_call rc $?" >> $OUT/first_call.txt
grep -v Warn $OUT/first_call.txt | tail -16
