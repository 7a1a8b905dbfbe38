#!/bin/bash
# GPU run 8 (session 16): the first call again on a fresh machine (the first-call path is as at
# 2025247), 7 processes, no warm-up timing.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
timeout 280 python3 benchmarks/first_call.py --repeat 7 --no-warmup --json $OUT/first_call.json > $OUT/first_call.txt 2>&1; echo "first_call rc $?" >> $OUT/first_call.txt
cat $OUT/first_call.txt
