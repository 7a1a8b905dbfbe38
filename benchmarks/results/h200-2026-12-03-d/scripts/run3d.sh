#!/bin/bash
# GPU run 3d (session 11): the large-n table (issue 27) at the final code.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/xdg
mkdir -p /tmp/xdg
timeout 200 python3 benchmarks/large_n_table.py $OUT/large_n.json --n 4096,8192,16384 2>&1 | tee $OUT/large_n.md
