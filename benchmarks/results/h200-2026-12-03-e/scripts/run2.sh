#!/bin/bash
# GPU run 2 (session 12): per-segment first-call times; trace overhead with the faster kineto_events/correlate.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/site/nvidia/cu13/lib:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1
timeout 90 python3 devrun/s12/fc_diag3.py 2>&1 | tee $OUT/fc_diag3.txt
PY=python3; C=examples/trace_botorch.py; TIMEFORMAT=%R
for i in 1 2; do echo -n "untraced "; { time $PY $C > /dev/null 2>&1; } 2>&1; done | tee $OUT/trace2.txt
for i in 1 2; do echo -n "traced "; { time $PY -m cusolver_trace trace --json /tmp/t$i.json -- $PY $C > /dev/null 2>&1; } 2>&1; python3 -c "import json;d=json.load(open('/tmp/t$i.json'));print(d['wall_s'], d['tracing_s'], d['summary'].get('unattributed_library_kernels'))"; done | tee -a $OUT/trace2.txt
