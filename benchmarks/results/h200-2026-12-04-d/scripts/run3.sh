#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
timeout 200 python3 devrun/s16/prof16k.py > $OUT/prof16k.txt 2>&1; echo "rc $?" >> $OUT/prof16k.txt
cat $OUT/prof16k.txt
