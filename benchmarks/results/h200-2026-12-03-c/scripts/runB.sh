#!/bin/bash
# GPU run B (session 10): gemm_lauum tuning grid and a kernel breakdown at large n (issue 27).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/xdg
timeout 280 python3 devrun/s10/tune.py $OUT/tune.json 4096,8192 2>&1 | tee $OUT/tune.log
