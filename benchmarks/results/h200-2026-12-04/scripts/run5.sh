#!/bin/bash
# GPU run 5 (session 13): the pieces of the first method="torch" call of a new shape (fc_diag8): plain, gc off, a clone's call first.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
for v in "" "gc-off" "other-first"; do for i in 1 2; do timeout 60 python3 devrun/s13/fc_diag8.py 1000 64 $v 2>&1 | grep -v Warn; done; done > $OUT/fc_diag8.txt 2>&1
timeout 60 python3 devrun/s13/fc_diag8.py 300 100 2>&1 | grep -v Warn >> $OUT/fc_diag8.txt
cat $OUT/fc_diag8.txt
