#!/bin/bash
# GPU run 3 (session 12): the first auto call in fresh processes (plain and with a setprofile timer).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
for i in 1 2 3 4; do timeout 60 python3 devrun/s12/fc_diag4.py; done 2>&1 | grep -v Warning | tee $OUT/fc_diag4.txt
for i in 1 2; do timeout 60 python3 devrun/s12/fc_diag4.py prof; done 2>&1 | grep -v Warning | tee -a $OUT/fc_diag4.txt
