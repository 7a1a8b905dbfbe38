#!/bin/bash
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
for i in 1 2 3; do timeout 60 python3 devrun/s12/fc_diag5.py 2>&1 | grep -v Warn; done | tee $OUT/fc_diag5.txt
