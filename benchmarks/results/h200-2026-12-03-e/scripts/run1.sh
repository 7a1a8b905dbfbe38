#!/bin/bash
# GPU run 1 (session 12): diagnosis of the first auto call and of the trace overhead.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
timeout 90 python3 devrun/s12/fc_diag2.py > $OUT/fc_diag2.txt 2>&1; head -8 $OUT/fc_diag2.txt
timeout 300 python3 devrun/s12/trace_diag.py > $OUT/trace_diag.txt 2>&1; grep -v "^ " $OUT/trace_diag.txt | head -30
