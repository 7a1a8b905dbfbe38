#!/bin/bash
# GPU run D1 (session 10): the whole GPU suite at the final code, then the large-n table (issue 27).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/xdg
mkdir -p /tmp/xdg
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
OMP_NUM_THREADS=2 timeout 430 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 2>&1 | tail -40 > $OUT/gpu_suite.txt; tail -5 $OUT/gpu_suite.txt
timeout 140 python3 benchmarks/large_n_table.py $OUT/large_n.json --n 4096,8192,16384 2>&1 | tee $OUT/large_n.md
