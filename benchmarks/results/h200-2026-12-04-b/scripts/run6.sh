#!/bin/bash
# GPU run 6 (session 14): why the first checked call of a new input is slow (fc_diag10.py), 3 processes per variant, interleaved.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
for i in 1 2 3; do for v in plain before prewarm clone auto; do timeout 30 python3 devrun/s14/fc_diag10.py $v; done; done > $OUT/fc_diag10.txt 2>&1
sort -s -k1,1 $OUT/fc_diag10.txt
