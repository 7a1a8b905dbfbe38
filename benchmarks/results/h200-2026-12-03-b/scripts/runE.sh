#!/bin/bash
# GPU run E (session 9): the eigh table at the final code, and the README's compare runs.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH || exit 9
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/xdg
mkdir -p /tmp/xdg
timeout 240 python3 benchmarks/eigh_table.py $OUT/eigh_table.json --deadline 200 2>&1 | tee $OUT/eigh_table.log | tail -14
timeout 120 python3 -m cusolver_trace compare --op eigh --n 33 --batch 4 --dtype float64,complex64 --uplo L,U --trace --summary-only 2>&1 | tee $OUT/compare_eigh.txt | tail -4
timeout 120 python3 -m cusolver_trace compare --op eigh --n 3 --batch 65536 --dtype float64 2>&1 | tee $OUT/compare_eigh_65536.txt | tail -25
