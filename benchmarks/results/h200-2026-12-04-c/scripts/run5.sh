#!/bin/bash
# GPU run 5 (session 15): the whole GPU suite at the final code.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
OMP_NUM_THREADS=2 timeout 400 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 -rf --tb=short > $OUT/gpu_suite.txt 2>&1; echo "suite rc $?" >> $OUT/gpu_suite.txt
tail -5 $OUT/gpu_suite.txt
