#!/bin/bash
# GPU run 6 (session 13): the check launch of the first torch-row call, line by line (fc_diag9, 3 processes).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
for i in 1 2 3; do timeout 40 python3 devrun/s13/fc_diag9.py 1000 64 2>&1 | grep -v Warn; done > $OUT/fc_diag9.txt 2>&1
cat $OUT/fc_diag9.txt
