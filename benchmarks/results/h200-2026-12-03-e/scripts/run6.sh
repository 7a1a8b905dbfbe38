#!/bin/bash
# GPU run 6 (session 12): the whole GPU suite at the session's code; trace(fn) at n = 4096 in parts.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
timeout 60 python3 devrun/s12/tinv.py 2>&1 | grep -v Warn | tee $OUT/tinv.txt
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
OMP_NUM_THREADS=2 timeout 420 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 2>&1 | tail -40 > $OUT/gpu_suite.txt; tail -6 $OUT/gpu_suite.txt
