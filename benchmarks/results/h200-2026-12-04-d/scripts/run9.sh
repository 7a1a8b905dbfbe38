#!/bin/bash
# GPU run 9 (session 16): a complex factor with a non-real diagonal, every method (note only).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
timeout 150 python3 devrun/s16/nonreal.py > $OUT/nonreal.txt 2>&1; echo "rc $?" >> $OUT/nonreal.txt
grep -v Warning $OUT/nonreal.txt
