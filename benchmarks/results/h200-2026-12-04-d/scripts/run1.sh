#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > $OUT/machine.txt
for s in 1 2 3 4; do for v in direct nocheck torch auto; do timeout 60 python3 devrun/s16/diag4.py $v $s 2>&1 | grep -v Warning; done; done > $OUT/diag4.txt
cat $OUT/diag4.txt
