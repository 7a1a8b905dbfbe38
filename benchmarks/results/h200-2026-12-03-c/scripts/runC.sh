#!/bin/bash
# GPU run C (session 10): combined gemm_lauum parameters at 4096 / 8192 / 16384 (issue 27).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/xdg
timeout 280 python3 devrun/s10/tune2.py $OUT/tune2.json 4096,8192,16384 2>&1 | tee $OUT/tune2.log
