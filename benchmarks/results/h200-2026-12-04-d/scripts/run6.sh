#!/bin/bash
# GPU run 6 (session 16): the triangle copy as one tiled kernel; the large-n table with each
# row timed alternately with torch; the kernel breakdown; the whole GPU suite.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine.txt
git log --oneline | head -1 >> $OUT/machine.txt
timeout 150 python3 benchmarks/large_n_table.py $OUT/large_n.json --n 4096,8192,16384 > $OUT/large_n.md 2>&1; echo "large_n rc $?" >> $OUT/large_n.md
cat $OUT/large_n.md
timeout 100 python3 devrun/s16/prof16k.py > $OUT/prof16k.txt 2>&1; echo "rc $?" >> $OUT/prof16k.txt
grep -v "Warning\|warn_once" $OUT/prof16k.txt | grep -B1 -A12 "auto_16384"
OMP_NUM_THREADS=2 timeout 340 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 -rf --tb=short > $OUT/gpu_suite.txt 2>&1; echo "rc $?" >> $OUT/gpu_suite.txt
tail -15 $OUT/gpu_suite.txt
