#!/bin/bash
# GPU run D (session 9): the whole GPU suite at the final code (torch 2.11.0+cu130).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:${LD_LIBRARY_PATH:-} XDG_CACHE_HOME=/tmp/xdg PYTHONUNBUFFERED=1
mkdir -p /tmp/xdg
git log --oneline -1 2>/dev/null
echo "=== whole GPU suite"
OMP_NUM_THREADS=2 timeout 550 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 --tb=line > $OUT/gpu_suite.txt 2>&1
echo rc=$?
grep -E "^(FAILED|ERROR)" $OUT/gpu_suite.txt | cut -c1-250 | head -40
tail -3 $OUT/gpu_suite.txt
