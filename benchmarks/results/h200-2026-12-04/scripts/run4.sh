#!/bin/bash
# GPU run 4 (session 13): is the first call's excess new-shape work or cold host code (fc_diag7, 5 processes per case)?
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
for c in "1000 64" "300 100"; do for i in 1 2 3 4 5; do timeout 60 python3 devrun/s13/fc_diag7.py $c 2>&1 | grep -v Warn; done; done > $OUT/fc_diag7.txt 2>&1
cat $OUT/fc_diag7.txt
