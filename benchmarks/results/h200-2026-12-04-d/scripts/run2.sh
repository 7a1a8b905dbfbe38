#!/bin/bash
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
for s in 1 2 3; do for m in none event stats; do for v in direct torch auto; do timeout 60 python3 devrun/s16/diag5.py $v $s $m 2>&1 | grep -v Warning; done; done; done > $OUT/diag5.txt
cat $OUT/diag5.txt
