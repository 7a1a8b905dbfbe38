#!/bin/bash
# GPU run 1 (session 11): first-call diagnosis, diagonal-block inversion options, the whole GPU suite.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
timeout 60 python3 devrun/s11/fc_diag.py 2>&1 | tee $OUT/fc_diag.txt | tail -60
timeout 60 python3 devrun/s11/fc_diag.py 0.0002 2>&1 > $OUT/fc_diag_switch.txt
timeout 90 python3 devrun/s11/trtri_diag.py 2>&1 | tee $OUT/trtri_diag.txt
export XDG_CACHE_HOME=/tmp/xdg; mkdir -p /tmp/xdg
OMP_NUM_THREADS=2 timeout 380 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 7 2>&1 | tail -40 > $OUT/gpu_suite.txt; tail -8 $OUT/gpu_suite.txt
